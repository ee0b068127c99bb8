//! One probe connection driven by a real [`Client`]: the first flight re-framed and cut into
//! chosen TCP segments, the server's answer fed back, and what happened reported as an
//! [`Outcome`] with the connection's events.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tls13lab::crypto::random::{OsRandom, RandomSource, SeededRandom};
use tls13lab::events::{EchOutcome, Event, Negotiated};
use tls13lab::keyschedule::hkdf::expand_label;
use tls13lab::messages::enums::{AlertDescription, ContentType};
use tls13lab::record::RecordProtector;
use tls13lab::session::TicketStore;
use tls13lab::{Client, ClientConfig, Error, Observe};

use super::wire::{now_ms, ReadEnd, Wire};
use super::Target;

/// What became of one connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Outcome {
    /// The handshake completed.
    Completed,
    /// The server sent this fatal alert.
    Alert(String),
    /// The server closed the connection (FIN) without an alert.
    Closed,
    /// The server reset the connection.
    Reset,
    /// Nothing decisive before the connection's deadline.
    Timeout,
    /// The server rejected our Encrypted ClientHello (RFC 9849 §6.1.6).
    EchRejected,
    /// Our client refused what the server sent (the probe's own verdict on the server).
    Refused(String),
    /// The connection could not be made, or the socket failed.
    Network(String),
}

impl Outcome {
    /// One short phrase: `completed`, `alert handshake_failure`, `closed`...
    pub fn text(&self) -> String {
        match self {
            Outcome::Completed => "completed".into(),
            Outcome::Alert(a) => format!("alert {a}"),
            Outcome::Closed => "closed".into(),
            Outcome::Reset => "reset".into(),
            Outcome::Timeout => "timeout".into(),
            Outcome::EchRejected => "ECH rejected".into(),
            Outcome::Refused(w) => format!("refused by the probe: {w}"),
            Outcome::Network(w) => format!("network: {w}"),
        }
    }

    pub(crate) fn from_read_end(e: ReadEnd) -> Outcome {
        match e {
            ReadEnd::Eof => Outcome::Closed,
            ReadEnd::Reset => Outcome::Reset,
            ReadEnd::Timeout => Outcome::Timeout,
            ReadEnd::Io(w) => Outcome::Network(w),
        }
    }
}

/// What to do once the handshake completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Close at once.
    Stop,
    /// Send `GET / HTTP/1.0` and read until the server closes or goes quiet: NewSessionTickets
    /// arrive after the handshake (RFC 8446 §4.6.1), often with the response.
    Request,
    /// Keep reading for an alert (after a tampered flight).
    AwaitAlert,
}

/// How the client's bytes are changed on their way out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tamper {
    /// Not at all.
    None,
    /// Flip one bit in the last byte of the client's second flight (its Finished record's tag).
    FinishedRecord,
    /// Replace the client's Finished with one of zero verify_data, sealed under the client's
    /// handshake traffic keys (RFC 8446 §4.4.4, §7.3): a record that decrypts, a MAC that
    /// does not verify.
    WrongFinished,
}

/// The request sent after the handshake.
pub const REQUEST: &[u8] = b"GET / HTTP/1.0\r\n\r\n";

/// The first flight (the client's records) as the TCP segments to write.
pub type Shape = Box<dyn Fn(&[u8]) -> Vec<Vec<u8>> + Send + Sync>;

/// One connection to run.
pub struct Plan {
    /// The client's configuration (observation is set by the probe).
    pub config: ClientConfig,
    /// Tickets to offer.
    pub tickets: Option<TicketStore>,
    /// Seed the client's randomness: the same seed, tickets and clock give the same
    /// ClientHello byte for byte (the 0-RTT replay).
    pub seed: Option<u64>,
    /// The clock at ClientHello time; `None`: now.
    pub now_ms: Option<u64>,
    /// 0-RTT data sent right after the ClientHello when a ticket allows it.
    pub early_data: Option<Vec<u8>>,
    /// After the handshake.
    pub after: After,
    /// Tampering.
    pub tamper: Tamper,
    /// The first flight (the client's records) as the TCP segments to write.
    pub shape: Shape,
}

impl Plan {
    /// A plan for `config`: the first flight as the client framed it, in one write.
    pub fn new(config: ClientConfig) -> Plan {
        Plan {
            config,
            tickets: None,
            seed: None,
            now_ms: None,
            early_data: None,
            after: After::Stop,
            tamper: Tamper::None,
            shape: Box::new(|f: &[u8]| vec![f.to_vec()]),
        }
    }
}

/// What one connection gave.
pub struct Run {
    /// How it ended.
    pub outcome: Outcome,
    /// The client's events, in order.
    pub events: Vec<Event>,
    /// The tickets the client holds afterwards.
    pub tickets: TicketStore,
    /// What was negotiated, if the handshake completed.
    pub negotiated: Option<Negotiated>,
    /// ECH's outcome for the client.
    pub ech: Option<EchOutcome>,
    /// retry_configs of a rejected ECH offer (the ECHConfigList with its length).
    pub retry_configs: Option<Vec<u8>>,
    /// The first flight as the client made it.
    pub first_flight: Vec<u8>,
    /// Bytes of application data received.
    pub data_len: usize,
}

impl Run {
    fn ended(outcome: Outcome) -> Run {
        Run {
            outcome,
            events: Vec::new(),
            tickets: TicketStore::default(),
            negotiated: None,
            ech: None,
            retry_configs: None,
            first_flight: Vec::new(),
            data_len: 0,
        }
    }
}

/// How long the server may stay quiet after the response before we stop reading.
const QUIET: Duration = Duration::from_millis(600);

/// Runs `plan` against `target`.
pub fn drive(target: &Target, plan: Plan) -> Run {
    let rng: Box<dyn RandomSource> = match plan.seed {
        Some(s) => Box::new(SeededRandom::from_seed(s)),
        None => Box::new(OsRandom),
    };
    let mut config = plan.config;
    // Secrets only for the wrong Finished, which needs the client's handshake keys; nothing
    // of them leaves this module.
    config.observe = Observe::PUBLIC
        .with_records(false)
        .with_layouts(false)
        .with_secrets(plan.tamper == Tamper::WrongFinished);
    let mut client = match Client::new(Arc::new(config), rng) {
        Ok(c) => c,
        Err(e) => return Run::ended(Outcome::Refused(format!("configuration: {e}"))),
    };
    if let Some(t) = plan.tickets {
        client = client.with_tickets(t);
    }
    let t0 = plan.now_ms.unwrap_or_else(now_ms);
    if let Err(e) = client.start(t0) {
        return Run::ended(Outcome::Refused(format!("start: {e}")));
    }
    if let Some(d) = &plan.early_data {
        // Only when a ticket opened 0-RTT; otherwise the data is simply not sent.
        let _ = client.send(d);
    }
    let flight = client.take_output();
    let segments = (plan.shape)(&flight);
    target.pace();
    let mut wire = match Wire::connect(target.addr, target.timeout) {
        Ok(w) => w,
        Err(e) => return Run::ended(Outcome::Network(e.to_string())),
    };
    let mut run = Run::ended(Outcome::Timeout);
    run.first_flight = flight;
    let mut events = Vec::new();
    let outcome = exchange(
        &mut wire,
        &mut client,
        &segments,
        (plan.after, plan.tamper),
        &mut events,
        &mut run,
    );
    if client.is_connected() {
        // close_notify (§6.1): some servers (OpenSSL) forget a session whose connection ended
        // without one, and its tickets with it.
        client.close();
        let _ = wire.write_segments(&[client.take_output()]);
    }
    wire.close();
    events.extend(client.events());
    run.outcome = outcome;
    run.events = events;
    run.tickets = client.tickets().clone();
    run.negotiated = client.negotiated().cloned();
    run.ech = client.ech_outcome();
    run
}

fn exchange(
    wire: &mut Wire,
    client: &mut Client,
    segments: &[Vec<u8>],
    (after, tamper): (After, Tamper),
    events: &mut Vec<Event>,
    run: &mut Run,
) -> Outcome {
    if let Err(e) = wire.write_segments(segments) {
        return Outcome::Network(e.to_string());
    }
    let mut buf = vec![0u8; 16 * 1024];
    let mut requested = false;
    let mut tampered = false;
    loop {
        let connected = client.is_connected();
        let quiet = (connected && after != After::Stop).then_some(QUIET);
        let n = match wire.read_some(&mut buf, quiet) {
            // Quiet after the handshake: done, unless an alert was awaited.
            Ok(0) if after == After::AwaitAlert => return Outcome::Timeout,
            Ok(0) => return Outcome::Completed,
            Ok(n) => n,
            Err(e) if connected && after == After::Request => {
                let _ = e;
                return Outcome::Completed;
            }
            Err(e) => return Outcome::from_read_end(e),
        };
        let mut input = &buf[..n];
        while !input.is_empty() {
            match client.receive(input, now_ms()) {
                Ok(taken) => {
                    input = &input[taken..];
                    run.data_len += client.read_all().len();
                }
                Err(e) => {
                    events.extend(client.events());
                    // Our alert (if any) tells the server why; best effort.
                    let _ = wire.write_segments(&[client.take_output()]);
                    return outcome_of(e, run);
                }
            }
        }
        events.extend(client.events());
        let mut out = client.take_output();
        if client.is_connected() && !tampered {
            match tamper {
                Tamper::None => {}
                Tamper::FinishedRecord => {
                    if let Some(last) = out.last_mut() {
                        *last ^= 1; // the AEAD tag of the Finished record (RFC 8446 §5.2)
                        tampered = true;
                    }
                }
                Tamper::WrongFinished => {
                    if let Some(new) = wrong_finished(client, events, &out) {
                        out = new;
                        tampered = true;
                    }
                }
            }
        }
        if client.is_connected() && !requested {
            requested = true;
            match after {
                After::Stop => {
                    let _ = wire.write_segments(&[out]);
                    return Outcome::Completed;
                }
                After::Request => {
                    if client.send(REQUEST).is_ok() {
                        out.extend(client.take_output());
                    }
                }
                After::AwaitAlert => {}
            }
        }
        if !out.is_empty() {
            if let Err(e) = wire.write_segments(&[out]) {
                return if client.is_connected() && after == After::Request {
                    Outcome::Completed
                } else {
                    Outcome::Network(e.to_string())
                };
            }
        }
    }
}

/// `out` (the client's second flight, its Finished record last) with that record replaced by a
/// Finished of zero verify_data sealed at sequence number 0 of the client's handshake keys.
fn wrong_finished(client: &Client, events: &[Event], out: &[u8]) -> Option<Vec<u8>> {
    let suite = client.negotiated()?.suite;
    let params = tls13lab::crypto::aead::suite_params(suite)?;
    let secret = events.iter().find_map(|e| match e {
        Event::Secret(s) if s.nss_label == "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => {
            Some(s.secret.clone())
        }
        _ => None,
    })?;
    let hash = params.hash;
    let key = expand_label(hash, &secret, "key", &[], params.aead.key_len()).ok()?;
    let iv: [u8; 12] = expand_label(hash, &secret, "iv", &[], 12)
        .ok()?
        .try_into()
        .ok()?;
    let mut msg = vec![20, 0, 0, hash.output_len() as u8];
    msg.resize(4 + hash.output_len(), 0);
    let mut p = RecordProtector::new(params.aead, &key, iv).ok()?;
    let sealed = p.seal(ContentType::Handshake, &msg, 0).ok()?;
    // The last record of `out` is the Finished.
    let mut pos = 0;
    let mut last = None;
    while pos + 5 <= out.len() {
        last = Some(pos);
        pos = pos.checked_add(first_record_len(&out[pos..]))?;
    }
    let last = last?;
    let mut new = out[..last].to_vec();
    new.extend_from_slice(&sealed);
    Some(new)
}

fn outcome_of(e: Error, run: &mut Run) -> Outcome {
    match e {
        Error::AlertReceived(a) => Outcome::Alert(alert_name(a)),
        Error::EchRejected { retry_configs } => {
            run.retry_configs = retry_configs;
            Outcome::EchRejected
        }
        other => Outcome::Refused(other.to_string()),
    }
}

/// An alert's RFC 8446 §6 name, or its number.
pub fn alert_name(a: AlertDescription) -> String {
    match a.name() {
        "unknown" => format!("alert({})", u8::from(a)),
        n => n.to_string(),
    }
}

/// The TCP segments for `flight` after re-framing its handshake records into records of at
/// most `record` bytes, cut at `cuts` (offsets into the re-framed bytes, ascending). A flight
/// holding other records than handshake ones is kept as it is.
pub fn reshape(flight: &[u8], record: usize, cuts: &[usize]) -> Vec<Vec<u8>> {
    let bytes = match handshake_stream(flight) {
        Some(hs) => frame(&hs, record),
        None => flight.to_vec(),
    };
    let mut segs = Vec::new();
    let mut start = 0;
    for &c in cuts {
        if c > start && c < bytes.len() {
            segs.push(bytes[start..c].to_vec());
            start = c;
        }
    }
    segs.push(bytes[start..].to_vec());
    segs
}

/// The handshake bytes carried by `flight` if it is only plaintext handshake records.
pub fn handshake_stream(flight: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = flight;
    while !rest.is_empty() {
        let hdr = rest.get(..5)?;
        let len = usize::from(u16::from_be_bytes([hdr[3], hdr[4]]));
        if hdr[0] != 22 {
            return None;
        }
        out.extend_from_slice(rest.get(5..5 + len)?);
        rest = &rest[5 + len..];
    }
    Some(out)
}

/// `hs` as plaintext handshake records of at most `record` bytes each (RFC 8446 §5.1:
/// legacy_record_version 0x0301 for the first ClientHello).
pub fn frame(hs: &[u8], record: usize) -> Vec<u8> {
    frame_typed(22, hs, record)
}

/// `data` as records of type `typ`, at most `record` bytes each.
pub fn frame_typed(typ: u8, data: &[u8], record: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 5 * (data.len() / record.max(1) + 1));
    for chunk in data.chunks(record.max(1)) {
        out.push(typ);
        out.extend_from_slice(&[3, 1]);
        out.extend_from_slice(&(chunk.len() as u16).to_be_bytes());
        out.extend_from_slice(chunk);
    }
    out
}

/// Where the first record of `bytes` ends.
pub fn first_record_len(bytes: &[u8]) -> usize {
    bytes.get(3..5).map_or(bytes.len(), |l| {
        5 + usize::from(u16::from_be_bytes([l[0], l[1]]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshape_moves_record_and_segment_boundaries_independently() {
        let hs: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let flight = frame(&hs, 1 << 14);
        assert_eq!(flight.len(), 1005);
        // 300-byte records: 4 records, 4 headers; one segment.
        let segs = reshape(&flight, 300, &[]);
        assert_eq!(segs.len(), 1);
        assert_eq!(segs[0].len(), 1000 + 4 * 5);
        assert_eq!(handshake_stream(&segs[0]).unwrap(), hs);
        // The first record's header alone, then the rest.
        let segs = reshape(&flight, 1 << 14, &[5]);
        assert_eq!(segs.iter().map(Vec::len).collect::<Vec<_>>(), [5, 1000]);
        // Cuts out of range or out of order are skipped, never a panic.
        let segs = reshape(&flight, 1 << 14, &[0, 2000, 7, 3]);
        assert_eq!(segs.iter().map(Vec::len).collect::<Vec<_>>(), [7, 998]);
        assert_eq!(first_record_len(&[22, 3]), 2);
        assert_eq!(handshake_stream(&[22, 3, 1, 0, 9, 1]), None);
    }
}
