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

/// After the handshake. Nominally `pub` (the module is not) because the sealed `Role`'s hooks
/// name it.
pub struct Traffic {
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
