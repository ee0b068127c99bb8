//! After the handshake: application traffic secrets, KeyUpdate (RFC 8446 §4.6.3) and exporters.
//! Shared by client and server.

use crate::conn::Conn;
use crate::crypto::aead::SuiteParams;
use crate::error::{Error, PeerMisbehaved};
use crate::events::{Epoch, Event, Side};
use crate::keyschedule::schedule::{ExporterSecret, ResumptionSecret, TrafficSecret};
use crate::messages::enums::KeyUpdateRequest;
use crate::messages::handshake::HandshakePayload;

/// Consecutive KeyUpdates we accept without application data in between (resource limit).
const MAX_KEY_UPDATES: u32 = 32;

/// After the handshake.
pub(crate) struct Traffic {
    pub(crate) suite: SuiteParams,
    pub(crate) client_app: TrafficSecret,
    pub(crate) server_app: TrafficSecret,
    pub(crate) exporter: ExporterSecret,
    pub(crate) resumption: ResumptionSecret,
    pub(crate) key_updates_in_a_row: u32,
}

/// §4.6.3: switch our sending keys after telling the peer.
pub(crate) fn send_key_update(
    conn: &mut Conn,
    t: &mut Traffic,
    request_peer: bool,
) -> Result<(), Error> {
    let req = if request_peer {
        KeyUpdateRequest::UpdateRequested
    } else {
        KeyUpdateRequest::UpdateNotRequested
    };
    conn.send_handshake(&HandshakePayload::KeyUpdate(req));
    let next = own_app_secret(conn, t).next(&mut conn.ev);
    let epoch = next_epoch(conn.write_epoch);
    conn.set_write_keys(epoch, &t.suite, &next)?;
    conn.ev.push(Event::KeyUpdate {
        direction: conn.side.sending(),
        requested: request_peer,
    });
    *own_app_secret_mut(conn.side, t) = next;
    Ok(())
}

/// §4.6.3: the peer updated its keys; answer if it asked.
pub(crate) fn receive_key_update(
    conn: &mut Conn,
    t: &mut Traffic,
    req: KeyUpdateRequest,
) -> Result<(), Error> {
    let requested = match req {
        KeyUpdateRequest::UpdateRequested => true,
        KeyUpdateRequest::UpdateNotRequested => false,
        KeyUpdateRequest::Unknown(_) => {
            return Err(PeerMisbehaved::IllegalExtension("KeyUpdate request_update").into())
        }
    };
    t.key_updates_in_a_row += 1;
    if t.key_updates_in_a_row > MAX_KEY_UPDATES {
        return Err(PeerMisbehaved::TooManyKeyUpdates.into());
    }
    let peer = peer_app_secret_mut(conn.side, t);
    let next = peer.next(&mut conn.ev);
    let epoch = next_epoch(conn.read_epoch);
    conn.set_read_keys(epoch, &t.suite, &next)?;
    *peer_app_secret_mut(conn.side, t) = next;
    conn.ev.push(Event::KeyUpdate {
        direction: conn.side.receiving(),
        requested,
    });
    if requested && !conn.write_closed {
        send_key_update(conn, t, false)?;
    }
    Ok(())
}

fn next_epoch(e: Epoch) -> Epoch {
    match e {
        Epoch::Application(n) => Epoch::Application(n + 1),
        other => other,
    }
}

fn own_app_secret<'a>(conn: &Conn, t: &'a Traffic) -> &'a TrafficSecret {
    match conn.side {
        Side::Client => &t.client_app,
        Side::Server => &t.server_app,
    }
}

fn own_app_secret_mut(side: Side, t: &mut Traffic) -> &mut TrafficSecret {
    match side {
        Side::Client => &mut t.client_app,
        Side::Server => &mut t.server_app,
    }
}

fn peer_app_secret_mut(side: Side, t: &mut Traffic) -> &mut TrafficSecret {
    match side {
        Side::Client => &mut t.server_app,
        Side::Server => &mut t.client_app,
    }
}

/// The public methods [`crate::Client`] and [`crate::Server`] share, written once. Expects the
/// fields `conn`, `state` (with a `State::Connected(Box<Traffic>)` variant), `negotiated` and
/// `early_exporter`.
macro_rules! connection_api {
    ($peer:literal) => {
        #[doc = concat!("Feed bytes received from the ", $peer, " (`now_ms`: the caller's clock, Unix ms). ")]
        /// On a protocol violation the right alert is queued (take it with `take_output`) and
        /// the error returned; the connection is then dead.
        pub fn receive(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), Error> {
            crate::conn::receive(self, bytes, now_ms)
        }

        /// Opens records in `buf`, a buffer the caller owns, decrypting application data where
        /// it lies: nothing is copied or buffered. Returns how many bytes from the start of
        /// `buf` were used and, after an application data record, where in `buf` its plaintext
        /// now is; the call stops there, so call again with `buf[consumed..]`. `consumed` stops
        /// short of a record not yet complete: keep those bytes and append to them (a buffer of
        /// [`MAX_RECORD_LEN`](crate::record::MAX_RECORD_LEN) holds any record).
        ///
        /// Records that cannot be opened in place — the handshake, 0-RTT data, a record that
        /// earlier `receive` calls left half-read — go the way `receive` takes them, and what
        /// they carry arrives as events; so do handshake messages and alerts after the handshake
        /// (NewSessionTicket, KeyUpdate, close_notify). Errors are those of `receive`.
        pub fn open_in_place(
            &mut self,
            buf: &mut [u8],
            now_ms: u64,
        ) -> Result<crate::Opened, Error> {
            crate::conn::open_in_place(self, buf, now_ms)
        }

        /// Seals one application data record in `buf`, a buffer the caller owns: it holds
        /// `len` bytes of plaintext at `buf[HEADER_LEN..]` behind room for the header
        /// ([`HEADER_LEN`](crate::record::HEADER_LEN) bytes), and must have room for the whole
        /// record ([`sealed_len`](Self::sealed_len)). Encrypts in place and returns the
        /// record's length: send `buf[..n]`. No copy, no allocation. Needs the application
        /// traffic keys and no output waiting (take it first: records go out in order); `len`
        /// at most [`max_record_plaintext`](Self::max_record_plaintext).
        pub fn seal_in_place(&mut self, buf: &mut [u8], len: usize) -> Result<usize, Error> {
            self.conn.seal_app_in_place(buf, len)
        }

        /// The length of the record [`seal_in_place`](Self::seal_in_place) makes of `len` bytes
        /// (header, type byte, the padding policy's padding, tag).
        pub fn sealed_len(&self, len: usize) -> usize {
            self.conn.sealed_len(len)
        }

        /// Most plaintext one record may carry: 2^14, or less if the peer's record_size_limit
        /// says so (RFC 8449).
        pub fn max_record_plaintext(&self) -> usize {
            self.conn.max_fragment
        }

        #[doc = concat!("Bytes to send to the ", $peer, ".")]
        pub fn take_output(&mut self) -> Vec<u8> {
            self.conn.take_output()
        }

        /// Whether output is waiting.
        pub fn wants_write(&self) -> bool {
            self.conn.has_output()
        }

        /// Drain the events recorded so far, in order.
        pub fn events(&mut self) -> impl Iterator<Item = Event> + '_ {
            self.conn.ev.queue.drain(..)
        }

        /// Send close_notify (RFC 8446 §6.1).
        pub fn close(&mut self) {
            self.conn.send_alert(
                crate::messages::enums::AlertLevel::Warning,
                crate::messages::enums::AlertDescription::CloseNotify,
            );
        }

        #[doc = concat!("Update our sending keys, optionally asking the ", $peer, " to update its own (RFC 8446 §4.6.3).")]
        pub fn key_update(&mut self, request_peer: bool) -> Result<(), Error> {
            let State::Connected(t) = &mut self.state else {
                return Err(Error::InvalidState("handshake not complete"));
            };
            crate::traffic::send_key_update(&mut self.conn, t, request_peer)
        }

        /// RFC 8446 §7.5 exporter.
        pub fn export(
            &mut self,
            label: &[u8],
            context: &[u8],
            len: usize,
        ) -> Result<Vec<u8>, Error> {
            let State::Connected(t) = &self.state else {
                return Err(Error::InvalidState("handshake not complete"));
            };
            t.exporter
                .export(label, context, len, &mut self.conn.ev)
                .map_err(|_| Error::InvalidState("exporter label or length too long"))
        }

        /// RFC 8446 §7.5 early exporter (early_exporter_master_secret): the client has it once it
        /// offered 0-RTT, the server once it accepted 0-RTT.
        pub fn export_early(
            &mut self,
            label: &[u8],
            context: &[u8],
            len: usize,
        ) -> Result<Vec<u8>, Error> {
            let e = self
                .early_exporter
                .as_ref()
                .ok_or(Error::InvalidState("no 0-RTT on this connection"))?;
            e.export(label, context, len, &mut self.conn.ev)
                .map_err(|_| Error::InvalidState("exporter label or length too long"))
        }

        /// What was negotiated, once connected.
        pub fn negotiated(&self) -> Option<&Negotiated> {
            self.negotiated.as_ref()
        }

        /// Whether the handshake is complete.
        pub fn is_connected(&self) -> bool {
            matches!(self.state, State::Connected(_))
        }

        /// Whether the connection is closed or failed.
        pub fn is_closed(&self) -> bool {
            self.conn.failed || self.conn.read_closed
        }
    };
}
pub(crate) use connection_api;
