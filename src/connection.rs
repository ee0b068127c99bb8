//! One connection type for both sides (RFC 8446 §2): [`Connection`] holds what a client and a
//! server share — records, keys, output, received data, the observation sink, the
//! post-handshake traffic secrets, the negotiated parameters — and a [`Role`], the side's
//! handshake state machine, plugged into it.
//! [`Client`](crate::Client) is `Connection<ClientSide>` and [`Server`](crate::Server) is
//! `Connection<ServerSide>`: the shared API below is written once, for every role; each side adds
//! its own constructor and the calls only it has (`start` and tickets on the client,
//! `send_ticket` on the server). Code that works with either side is generic over `R: Role`.
//!
//! The shape follows rustls' `ConnectionCommon<Side>`; docs/architecture.md says why.

use std::collections::VecDeque;

use crate::conn::{header_of, Conn, InPlace, Incoming};
use crate::error::{Error, PeerMisbehaved};
use crate::events::{Event, Negotiated, Observer, Side};
use crate::keyschedule::schedule::ExporterSecret;
use crate::messages::enums::{AlertDescription, AlertLevel};
use crate::record::deframer::check_header;
use crate::record::HEADER_LEN;
use crate::traffic::send_key_update;

/// A TLS 1.3 connection, sans-IO: feed it bytes with [`receive`](Self::receive), send what
/// [`take_output`](Self::take_output) returns, read the peer's data with [`read`](Self::read),
/// and see what happened in [`events`](Self::events) (or an [`Observer`] of your choice). `R` is
/// the side: [`Client`](crate::Client) or [`Server`](crate::Server).
pub struct Connection<R: Role> {
    pub(crate) conn: Conn,
    /// Application data received and not yet read.
    pub(crate) received: Received,
    /// 0-RTT data received (server) and not yet read (§4.2.10).
    pub(crate) received_early: Received,
    /// How much unread data `receive` lets accumulate before it stops taking input.
    buffer_limit: usize,
    pub(crate) negotiated: Option<Negotiated>,
    pub(crate) early_exporter: Option<ExporterSecret>,
    /// Early-data bytes a server that rejected 0-RTT may still skip (§4.2.10).
    pub(crate) early_skip: Option<usize>,
    /// The side's state machine.
    pub(crate) side: R,
}

/// Crate-visible, so each side seals itself in its own module (client.rs, server.rs) and this
/// one names neither: the sides are built on the connection, not the reverse.
pub(crate) mod sealed {
    use crate::traffic::Traffic;

    pub trait Sealed {
        /// The application traffic secrets, exporter and resumption secrets, once connected:
        /// the side's connected state owns them, so "connected" is stored once.
        fn connected(&self) -> Option<&Traffic>;
        /// The same, to update keys.
        fn connected_mut(&mut self) -> Option<&mut Traffic>;
    }
}

/// A side of a connection: [`ClientSide`](crate::client::ClientSide) or
/// [`ServerSide`](crate::server::ServerSide). Sealed: its methods are the hooks the shared
/// receive loop calls, not an API.
pub trait Role: sealed::Sealed + Sized {
    /// Which side this is.
    const SIDE: Side;

    /// One whole handshake message arrived.
    #[doc(hidden)]
    fn on_handshake(c: &mut Connection<Self>, bytes: Vec<u8>) -> Result<(), Error>;

    /// Application data arrived (0-RTT data on a server whose read epoch is `Early`).
    #[doc(hidden)]
    fn on_app_data(c: &mut Connection<Self>, data: Vec<u8>) -> Result<(), Error> {
        c.app_data_in_place()?;
        c.received.push(data);
        Ok(())
    }

    /// Send application data: what is allowed before the handshake completes differs (0-RTT
    /// on a client, 0.5-RTT on a server).
    #[doc(hidden)]
    fn send(c: &mut Connection<Self>, data: &[u8]) -> Result<(), Error>;
}

impl<R: Role> Connection<R> {
    /// A connection of side `R` around its record layer and state machine.
    pub(crate) fn with_side(conn: Conn, side: R) -> Self {
        Connection {
            conn,
            received: Received::default(),
            received_early: Received::default(),
            buffer_limit: DEFAULT_BUFFER_LIMIT,
            negotiated: None,
            early_exporter: None,
            early_skip: None,
            side,
        }
    }

    /// Which side this is.
    pub fn side(&self) -> Side {
        R::SIDE
    }

    /// Feed bytes received from the peer (`now_ms`: the caller's clock, Unix ms). Returns how
    /// many bytes from the start of `bytes` were taken: all of them, unless unread application
    /// data has reached the [buffer limit](Self::set_buffer_limit) — then [`read`](Self::read)
    /// and offer the rest again. This is the back-pressure that keeps a slow reader's memory
    /// bounded: nothing is dropped, and a connection never buffers more than the limit plus
    /// one record.
    ///
    /// On a protocol violation the right alert is queued (take it with `take_output`) and the
    /// error returned; the connection is then dead.
    #[must_use = "bytes after the returned count were not taken: offer them again after `read`"]
    pub fn receive(&mut self, bytes: &[u8], now_ms: u64) -> Result<usize, Error> {
        if self.conn.failed {
            return Err(Error::Closed);
        }
        self.conn.now_ms = now_ms;
        if self.conn.read_closed {
            // §6.1: "Any data received after a closure alert has been received MUST be
            // ignored."
            return Ok(bytes.len());
        }
        let mut input = bytes;
        loop {
            // Stop before a new record only: messages of one already taken are still handled.
            if self.buffers_full() && !self.conn.has_pending_message() {
                return Ok(bytes.len() - input.len());
            }
            let item = self.conn.next_incoming(&mut input, &mut self.early_skip);
            let result = match item {
                Ok(None) => return Ok(bytes.len() - input.len()),
                Ok(Some(item)) => self.dispatch(item),
                Err(e) => Err(e),
            };
            match result {
                Ok(true) => {}
                // close_notify: what follows it is ignored, so taken.
                Ok(false) => return Ok(bytes.len()),
                Err(e) => {
                    self.conn.fail(&e);
                    return Err(e);
                }
            }
        }
    }

    /// Whether unread data has reached the limit.
    fn buffers_full(&self) -> bool {
        self.received.len() >= self.buffer_limit || self.received_early.len() >= self.buffer_limit
    }

    /// Copies received application data into `buf`, in order, and returns how many bytes:
    /// 0 when none is waiting. What does not fit stays for the next call.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        self.received.read(buf)
    }

    /// All received application data not yet read, in order.
    pub fn read_all(&mut self) -> Vec<u8> {
        self.received.take_all()
    }

    /// Bytes of received application data waiting for [`read`](Self::read).
    pub fn readable(&self) -> usize {
        self.received.len()
    }

    /// Copies received 0-RTT data into `buf`, in order, and returns how many bytes (0: none
    /// waiting). Only a server receives 0-RTT data (§4.2.10); on a client this is always 0. Early data arrives before the handshake completes and is not
    /// replay-protected beyond what the server's anti-replay gives (§8): it is kept apart from
    /// [`read`](Self::read)'s data so the application can treat it differently.
    pub fn read_early(&mut self, buf: &mut [u8]) -> usize {
        self.received_early.read(buf)
    }

    /// All received 0-RTT data not yet read, in order.
    pub fn read_all_early(&mut self) -> Vec<u8> {
        self.received_early.take_all()
    }

    /// Bytes of 0-RTT data waiting for [`read_early`](Self::read_early).
    pub fn readable_early(&self) -> usize {
        self.received_early.len()
    }

    /// How much unread received data (application or 0-RTT data, each) `receive` lets
    /// accumulate before it stops taking input; at least one record's worth is always taken.
    /// Default: 64 KiB.
    pub fn set_buffer_limit(&mut self, bytes: usize) {
        self.buffer_limit = bytes;
    }

    /// Records what `what` asks for from now on (on top of what the configuration asked for),
    /// for [`events`](Self::events) or the observer: how an instrument installs its recorder
    /// on a connection made from someone else's configuration. Call it before the first
    /// `start` or `receive` to see the whole connection.
    pub fn record(&mut self, what: crate::events::Observe) {
        self.conn.ev.observe = self.conn.ev.observe.union(what);
    }

    /// [`record`](Self::record), by value: `Client::new(..)?.recording(Observe::PUBLIC)`.
    pub fn recording(mut self, what: crate::events::Observe) -> Self {
        self.record(what);
        self
    }

    /// Sends every event to `observer` instead of the queue [`events`](Self::events) drains;
    /// events still queued go to it first, so it sees them all, in order. What is reported is
    /// still chosen by the configuration's [`Observe`](crate::events::Observe) (and
    /// [`record`](Self::record)): under `Observe::NONE`, nothing.
    pub fn set_observer(&mut self, observer: Box<dyn Observer>) {
        self.conn.ev.set_sink(observer);
    }

    /// Hands one received item to the state machine. `Ok(false)`: stop reading (close_notify).
    fn dispatch(&mut self, item: Incoming) -> Result<bool, Error> {
        match item {
            Incoming::Handshake(m) => R::on_handshake(self, m).map(|_| true),
            Incoming::AppData(d) => R::on_app_data(self, d).map(|_| true),
            Incoming::Alert(level, desc) => self.conn.alert_received(level, desc),
        }
    }

    /// Application data was opened (in the caller's buffer or ours): only a connected endpoint
    /// takes it, and it ends a run of KeyUpdates.
    pub(crate) fn app_data_in_place(&mut self) -> Result<(), Error> {
        match self.side.connected_mut() {
            Some(t) => {
                t.key_updates_in_a_row = 0;
                Ok(())
            }
            None => Err(PeerMisbehaved::ApplicationDataBeforeHandshake.into()),
        }
    }

    /// Opens records in `buf`, a buffer the caller owns, decrypting application data where
    /// it lies: nothing is copied or buffered. Returns how many bytes from the start of
    /// `buf` were used and, after an application data record, where in `buf` its plaintext
    /// now is; the call stops there, so call again with `buf[consumed..]`. `consumed` stops
    /// short of a record not yet complete: keep those bytes and append to them (a buffer of
    /// [`MAX_RECORD_LEN`](crate::record::MAX_RECORD_LEN) holds any record).
    ///
    /// Records that cannot be opened in place — the handshake, 0-RTT data, a record that
    /// earlier `receive` calls left half-read — go the way `receive` takes them: their data is
    /// then for [`read`](Self::read) / `read_early`, and `consumed` stops short while those
    /// buffers are full. Handshake messages and alerts after the handshake (NewSessionTicket,
    /// KeyUpdate, close_notify) are handled as `receive` handles them. Errors are those of
    /// `receive`.
    pub fn open_in_place(&mut self, buf: &mut [u8], now_ms: u64) -> Result<Opened, Error> {
        let mut pos = 0;
        loop {
            let c = &mut self.conn;
            if c.failed {
                return Err(Error::Closed);
            }
            c.now_ms = now_ms;
            if c.read_closed {
                // §6.1: what follows close_notify is ignored.
                return Ok(Opened {
                    consumed: buf.len(),
                    data: None,
                });
            }
            let rest = &buf[pos..];
            let buffered = match c.partial_record_needs() {
                // Finish the record a `receive` call began, the buffered way.
                Some(need) => need.min(rest.len()),
                None if rest.len() < HEADER_LEN => 0,
                None => match check_header(&header_of(rest)) {
                    Err(e) => {
                        let e = Error::from(e);
                        c.fail(&e);
                        return Err(e);
                    }
                    Ok(len) if rest.len() < HEADER_LEN + len => 0,
                    Ok(len) if !c.opens_in_place(rest) => HEADER_LEN + len,
                    Ok(len) => {
                        let end = pos + HEADER_LEN + len;
                        let step = c.open_record_in_place(&mut buf[pos..end]).and_then(|r| {
                            Ok(match r {
                                InPlace::AppData(range) => {
                                    self.app_data_in_place()?;
                                    Some(pos + range.start..pos + range.end)
                                }
                                InPlace::Other(item) => {
                                    if let Some(item) = item {
                                        self.dispatch(item)?;
                                    }
                                    None
                                }
                            })
                        });
                        match step {
                            Ok(Some(data)) => {
                                return Ok(Opened {
                                    consumed: end,
                                    data: Some(data),
                                })
                            }
                            // Handshake messages the record completed (NewSessionTicket,
                            // KeyUpdate) go to the state machine.
                            Ok(None) => {
                                self.receive(&[], now_ms)?;
                            }
                            Err(e) => {
                                self.conn.fail(&e);
                                return Err(e);
                            }
                        }
                        pos = end;
                        continue;
                    }
                },
            };
            if buffered == 0 {
                return Ok(Opened {
                    consumed: pos,
                    data: None,
                });
            }
            let taken = self.receive(&buf[pos..pos + buffered], now_ms)?;
            pos += taken;
            if taken < buffered {
                // Back-pressure: unread data fills the buffers; the caller reads, then calls again.
                return Ok(Opened {
                    consumed: pos,
                    data: None,
                });
            }
        }
    }

    /// Send application data. A client may send before the handshake completes only as 0-RTT
    /// data, when the ticket it offered allows it; a server once its Finished is out (0.5-RTT
    /// data, §2).
    pub fn send(&mut self, data: &[u8]) -> Result<(), Error> {
        R::send(self, data)
    }

    /// Seals one application data record in `buf`, a buffer the caller owns: it holds
    /// `len` bytes of plaintext at `buf[HEADER_LEN..]` behind room for the header
    /// ([`HEADER_LEN`] bytes), and must have room for the whole
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

    /// Bytes to send to the peer.
    pub fn take_output(&mut self) -> Vec<u8> {
        self.conn.take_output()
    }

    /// Whether output is waiting.
    pub fn wants_write(&self) -> bool {
        self.conn.has_output()
    }

    /// Drain the events recorded so far, in order.
    pub fn events(&mut self) -> std::collections::vec_deque::Drain<'_, Event> {
        self.conn.ev.queue.drain(..)
    }

    /// Send close_notify (RFC 8446 §6.1).
    pub fn close(&mut self) {
        self.conn
            .send_alert(AlertLevel::Warning, AlertDescription::CloseNotify);
    }

    /// Update our sending keys, optionally asking the peer to update its own (RFC 8446
    /// §4.6.3).
    pub fn key_update(&mut self, request_peer: bool) -> Result<(), Error> {
        let Some(t) = self.side.connected_mut() else {
            return Err(Error::InvalidState("handshake not complete"));
        };
        send_key_update(&mut self.conn, t, request_peer)
    }

    /// RFC 8446 §7.5 exporter.
    pub fn export(&mut self, label: &[u8], context: &[u8], len: usize) -> Result<Vec<u8>, Error> {
        let Some(t) = self.side.connected() else {
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
        self.side.connected().is_some()
    }

    /// Whether the connection is closed or failed.
    pub fn is_closed(&self) -> bool {
        self.conn.failed || self.conn.read_closed
    }
}

/// What `open_in_place` did with the caller's buffer.
///
/// ```
/// use std::sync::Arc;
/// use lab::demo::{client_config, server_config, Pair};
/// use tls13lab::record::{HEADER_LEN, MAX_RECORD_LEN};
///
/// let now = 1_767_225_600_000;
/// let (server, root) = server_config(1, now).unwrap();
/// let mut p = Pair::new(Arc::new(client_config(root)), Arc::new(server), 7, now).unwrap();
/// p.handshake().unwrap();
/// p.settle().unwrap();
///
/// // The client seals a record where its plaintext lies...
/// let mut buf = vec![0u8; MAX_RECORD_LEN];
/// buf[HEADER_LEN..HEADER_LEN + 5].copy_from_slice(b"hello");
/// let n = p.client.seal_in_place(&mut buf, 5).unwrap();
///
/// // ...and the server opens it there: the plaintext is a range of the same buffer.
/// let opened = p.server.open_in_place(&mut buf[..n], now).unwrap();
/// assert_eq!(opened.consumed, n);
/// assert_eq!(&buf[opened.data.unwrap()], b"hello");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    /// Bytes of the buffer used up, from its start: the caller drops them before the next call.
    /// Bytes after them (at most a partial record, or records after an application data one)
    /// are untouched.
    pub consumed: usize,
    /// Where the buffer now holds the plaintext of one application data record, within
    /// `..consumed`; `None` when the bytes held no (non-empty) application data record.
    pub data: Option<core::ops::Range<usize>>,
}

/// Default for [`Connection::set_buffer_limit`].
pub const DEFAULT_BUFFER_LIMIT: usize = 64 * 1024;

/// Received plaintext waiting to be read: records' contents in arrival order, each kept as it
/// was opened (no copy until the caller reads).
#[derive(Default)]
pub(crate) struct Received {
    chunks: VecDeque<Vec<u8>>,
    /// Bytes of the front chunk already read.
    front_read: usize,
    len: usize,
}

impl Received {
    pub(crate) fn push(&mut self, data: Vec<u8>) {
        if !data.is_empty() {
            self.len += data.len();
            self.chunks.push_back(data);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn read(&mut self, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            let Some(front) = self.chunks.front() else {
                break;
            };
            let rest = &front[self.front_read..];
            let k = rest.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&rest[..k]);
            n += k;
            self.front_read += k;
            if self.front_read == front.len() {
                self.chunks.pop_front();
                self.front_read = 0;
            }
        }
        self.len -= n;
        n
    }

    fn take_all(&mut self) -> Vec<u8> {
        if self.front_read == 0 && self.chunks.len() == 1 {
            self.len = 0;
            return self.chunks.pop_front().unwrap_or_default();
        }
        let mut out = vec![0; self.len];
        let n = self.read(&mut out);
        debug_assert_eq!(n, out.len());
        out
    }
}
