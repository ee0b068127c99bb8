//! The passive transcript reader (src/transcript_reader/) against what the endpoints reported:
//! a connection's wire bytes, rebuilt from the client's events and secrets
//! (`lab::pcap::wire_records`), read back from the outside give the same records (epoch,
//! sequence number, inner type, content, padding, tag), the same handshake messages and the
//! same negotiated parameters — through a full handshake with KeyUpdates, a HelloRetryRequest,
//! 0-RTT accepted and rejected, and with secrets missing from the key log. Garbage, truncation
//! and byte-at-a-time input neither panic nor grow what the reader holds.

use std::sync::Arc;

use lab::demo::{self, request_response, Pair};
use tls13lab::events::{Direction, EarlyDataStatus, Epoch, Event, RecordEvent};
use tls13lab::keylog::KeyLog;
use tls13lab::messages::enums::{ContentType, HandshakeType, NamedGroup};
use tls13lab::record::MAX_RECORD_LEN;
use tls13lab::session::TicketStore;
use tls13lab::transcript_reader::{ReadRecord, Seen, TranscriptReader};
use tls13lab::{ClientConfig, ServerConfig};

const NOW: u64 = 1_767_225_600_000;
const REQ: &[u8] = b"GET / HTTP/1.0\r\n\r\n";
const RESP: &[u8] = b"HTTP/1.0 200 OK\r\n\r\nok";

fn configs() -> (ClientConfig, ServerConfig) {
    let (s, root) = demo::server_config(9, NOW).unwrap();
    (demo::client_config(root), s)
}

/// The two streams of a connection, as its client's events say they were on the wire.
fn streams(events: &[Event]) -> [Vec<u8>; 2] {
    let mut out = [Vec::new(), Vec::new()];
    for r in lab::pcap::wire_records(events).unwrap() {
        out[usize::from(r.direction == Direction::ServerToClient)].extend(r.bytes);
    }
    out
}

fn read(events: &[Event], log: KeyLog) -> (TranscriptReader, Vec<ReadRecord>) {
    let [c2s, s2c] = streams(events);
    let mut reader = TranscriptReader::new(log);
    let mut records = Vec::new();
    reader.read_streams(&c2s, &s2c, |_, r| records.push(r));
    assert_eq!(reader.error(Direction::ClientToServer), None);
    assert_eq!(reader.error(Direction::ServerToClient), None);
    (reader, records)
}

fn record_events(events: &[Event], d: Direction) -> Vec<&RecordEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Record(r) if r.direction == d => Some(r),
            _ => None,
        })
        .collect()
}

/// Everything the client saw, read back from the outside with every secret it reported.
fn read_like_the_client(p: &Pair) -> TranscriptReader {
    let events = &p.client_events;
    let (reader, records) = read(events, KeyLog::from_events(events));
    for d in [Direction::ClientToServer, Direction::ServerToClient] {
        let want = record_events(events, d);
        let got: Vec<RecordEvent> = records
            .iter()
            .filter(|r| r.direction == d)
            .zip(&want)
            .map(|(r, w)| r.to_event(w.time_ms))
            .collect();
        assert_eq!(got.len(), want.len(), "{} records", d.arrow());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, *w, "{} record", d.arrow());
        }
        let messages: Vec<(HandshakeType, Vec<u8>)> = records
            .iter()
            .flat_map(|r| &r.messages)
            .filter(|m| m.direction == d)
            .map(|m| (m.typ, m.bytes.clone()))
            .collect();
        let reported: Vec<(HandshakeType, Vec<u8>)> = events
            .iter()
            .filter_map(|e| match e {
                Event::Handshake(h) if h.direction == d => Some((h.typ, h.bytes.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(messages, reported, "{} messages", d.arrow());
    }
    let connected = events.iter().find_map(|e| match e {
        Event::Connected(n) => Some(n.clone()),
        _ => None,
    });
    let n = reader.negotiation().expect("a ServerHello");
    assert_eq!(n.to_negotiated(), connected, "{n:?}");
    assert_eq!(n.server_name.as_deref(), Some("localhost"));
    reader
}

fn first_tickets(c: &Arc<ClientConfig>, s: &Arc<ServerConfig>) -> TicketStore {
    let p = request_response(
        c.clone(),
        s.clone(),
        1,
        NOW,
        REQ,
        RESP,
        TicketStore::default(),
    )
    .unwrap();
    p.client.tickets().clone()
}

#[test]
fn a_full_handshake_with_key_updates_reads_as_the_client_saw_it() {
    let (c, s) = configs();
    let mut p = Pair::new(Arc::new(c), Arc::new(s), 5, NOW).unwrap();
    p.handshake().unwrap();
    // More KeyUpdates than the dissector used to follow (64): each generation derives from the
    // one before it.
    for round in 0..140 {
        // Each side updates in turn; the first asks the peer to update too (§4.6.3).
        if round % 2 == 0 {
            p.client.key_update(round == 0).unwrap();
        } else {
            p.server.key_update(false).unwrap();
        }
        p.client.send(REQ).unwrap();
        p.server.send(RESP).unwrap();
        p.settle().unwrap();
    }
    p.client.close();
    p.settle().unwrap();
    let reader = read_like_the_client(&p);
    assert!(!reader.hello_retry());
    assert_eq!(reader.ech_accepted(), None);
    let records = record_events(&p.client_events, Direction::ClientToServer);
    assert!(
        records
            .iter()
            .any(|r| matches!(r.epoch, Epoch::Application(n) if n >= 70)),
        "the client went through 70 KeyUpdates"
    );
}

#[test]
fn a_hello_retry_request_reads_as_the_client_saw_it() {
    let (mut c, mut s) = configs();
    c.groups = vec![NamedGroup::secp256r1, NamedGroup::X25519];
    c.key_shares = vec![NamedGroup::secp256r1];
    s.groups = vec![NamedGroup::X25519];
    let p = request_response(
        Arc::new(c),
        Arc::new(s),
        6,
        NOW,
        REQ,
        RESP,
        TicketStore::default(),
    )
    .unwrap();
    let reader = read_like_the_client(&p);
    assert!(reader.hello_retry());
    assert!(reader.negotiation().unwrap().hello_retry);
}

#[test]
fn zero_rtt_accepted_and_rejected_read_as_the_client_saw_them() {
    // Accepted: early records until EndOfEarlyData.
    let (c, s) = configs();
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first_tickets(&c, &s);
    let p = request_response(c, s, 3, NOW + 1000, REQ, RESP, tickets).unwrap();
    let reader = read_like_the_client(&p);
    assert!(reader.early_data_offered());
    let n = reader.negotiation().unwrap();
    assert_eq!(n.early_data, Seen::Known(EarlyDataStatus::Accepted));
    assert_eq!(reader.negotiating().psk_index(), Some(0));
    assert!(reader.negotiating().psk_identity().is_some());

    // Rejected: the client's early records, then its handshake records without EndOfEarlyData
    // (the trial a rejecting server makes, RFC 8446 §4.2.10).
    let (c, mut s) = configs();
    s.max_early_data = 0;
    let (_, mut s_offering) = configs();
    s_offering.sessions = s.sessions.clone();
    s_offering.cert = s.cert.clone();
    let c = Arc::new(c);
    let tickets = first_tickets(&c, &Arc::new(s_offering));
    let p = request_response(c, Arc::new(s), 4, NOW + 1000, REQ, RESP, tickets).unwrap();
    let reader = read_like_the_client(&p);
    assert_eq!(
        reader.negotiation().unwrap().early_data,
        Seen::Known(EarlyDataStatus::Rejected)
    );
    let epochs: Vec<Epoch> = record_events(&p.client_events, Direction::ClientToServer)
        .iter()
        .map(|r| r.epoch)
        .collect();
    assert!(epochs.contains(&Epoch::Early) && epochs.contains(&Epoch::Handshake));
}

#[test]
fn records_under_a_missing_secret_stay_closed_and_the_next_epoch_opens() {
    let (c, s) = configs();
    let p = request_response(
        Arc::new(c),
        Arc::new(s),
        7,
        NOW,
        REQ,
        RESP,
        TicketStore::default(),
    )
    .unwrap();
    let mut log = KeyLog::from_events(&p.client_events);
    log.lines
        .retain(|l| l.label != "CLIENT_HANDSHAKE_TRAFFIC_SECRET");
    let (reader, records) = read(&p.client_events, log);
    let client: Vec<&ReadRecord> = records
        .iter()
        .filter(|r| r.direction == Direction::ClientToServer)
        .collect();
    let closed: Vec<&&ReadRecord> = client.iter().filter(|r| !r.is_open()).collect();
    assert!(!closed.is_empty());
    for r in &closed {
        assert_eq!(r.epoch, Epoch::Handshake);
        assert_eq!(r.missing_secret, Some("CLIENT_HANDSHAKE_TRAFFIC_SECRET"));
        assert_eq!(r.to_event(0).plaintext_len, r.payload_len);
    }
    // The request, under application keys, opened all the same.
    let data: Vec<u8> = client
        .iter()
        .filter_map(|r| r.inner.as_ref())
        .filter(|i| i.typ == ContentType::ApplicationData)
        .flat_map(|i| i.content.clone())
        .collect();
    assert_eq!(data, REQ);
    // The server's flight was read: only the client's signature cannot be told.
    let n = reader.negotiation().unwrap();
    assert_eq!(n.signature_scheme.known().map(Option::is_some), Some(true));
    assert_eq!(n.client_signature_scheme, Seen::Known(None), "not asked");
    assert_eq!(n.early_data, Seen::Known(EarlyDataStatus::NotSent));

    // Without the server's handshake secret its flight stays closed, and says why.
    let mut log = KeyLog::from_events(&p.client_events);
    log.lines
        .retain(|l| l.label != "SERVER_HANDSHAKE_TRAFFIC_SECRET");
    let (reader, _) = read(&p.client_events, log);
    let n = reader.negotiation().unwrap();
    assert_eq!(
        n.signature_scheme.why(),
        Some("SERVER_HANDSHAKE_TRAFFIC_SECRET not in the key log")
    );
    assert!(n.to_negotiated().is_none());
}

#[test]
fn messages_split_at_their_lengths_across_records() {
    // A ServerHello-less stream: plaintext handshake records are joined all the same.
    let mut reader = TranscriptReader::new(KeyLog::default());
    let mut input: &[u8] = &[22, 3, 3, 0, 8, 20, 0, 0, 1, 9, 2, 0, 0];
    let r = reader.read(Direction::ServerToClient, &mut input).unwrap();
    assert!(input.is_empty());
    let m: Vec<(&[u8], bool)> = r
        .messages
        .iter()
        .map(|m| (&m.bytes[..], m.ends_record))
        .collect();
    assert_eq!(m, vec![(&[20, 0, 0, 1, 9][..], false)]);
    let mut input: &[u8] = &[22, 3, 3, 0, 1, 0];
    let r = reader.read(Direction::ServerToClient, &mut input).unwrap();
    assert_eq!(r.messages.len(), 1);
    assert_eq!(r.messages[0].bytes, [2, 0, 0, 0]);
    assert!(r.messages[0].ends_record);
}

/// xorshift64*: garbage that replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Reads two streams to the end, checking the bounds on the way; returns the records.
fn read_checked(log: &KeyLog, c2s: &[u8], s2c: &[u8]) -> Vec<ReadRecord> {
    let mut reader = TranscriptReader::new(log.clone());
    let mut records = Vec::new();
    reader.read_streams(c2s, s2c, |reader, r| {
        for d in [Direction::ClientToServer, Direction::ServerToClient] {
            assert!(reader.partial_len(d) < MAX_RECORD_LEN);
        }
        assert!(r.payload_len + 5 <= MAX_RECORD_LEN);
        records.push(r);
    });
    for d in [Direction::ClientToServer, Direction::ServerToClient] {
        assert!(reader.partial_len(d) < MAX_RECORD_LEN);
        assert!(!reader.is_waiting(d), "both ended: nothing waits");
    }
    let _ = reader.negotiation();
    records
}

#[test]
fn garbage_truncation_and_single_bytes_neither_panic_nor_grow() {
    let (c, s) = configs();
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first_tickets(&c, &s);
    let p = request_response(c, s, 8, NOW + 1000, REQ, RESP, tickets).unwrap();
    let log = KeyLog::from_events(&p.client_events);
    let [c2s, s2c] = streams(&p.client_events);
    let whole = read_checked(&log, &c2s, &s2c);
    assert!(whole.iter().all(ReadRecord::is_open));

    // Every truncation of either stream: a prefix of the same records, and the cut is held.
    for cut in 0..=c2s.len() {
        let got = read_checked(&log, &c2s[..cut], &s2c);
        let client: Vec<&ReadRecord> = got
            .iter()
            .filter(|r| r.direction == Direction::ClientToServer)
            .collect();
        let want: Vec<&ReadRecord> = whole
            .iter()
            .filter(|r| r.direction == Direction::ClientToServer)
            .take(client.len())
            .collect();
        assert_eq!(client, want, "client stream cut at {cut}");
    }
    for cut in (0..=s2c.len()).step_by(7) {
        read_checked(&log, &c2s, &s2c[..cut]);
    }

    // Byte at a time, alternating directions: the same records.
    let mut reader = TranscriptReader::new(log.clone());
    let mut got = Vec::new();
    let mut inputs = [&c2s[..], &s2c[..]];
    let mut ended = [false; 2];
    while ended != [true; 2] {
        for (i, d) in [Direction::ClientToServer, Direction::ServerToClient]
            .into_iter()
            .enumerate()
        {
            if !inputs[i].is_empty() {
                let mut one = &inputs[i][..1];
                while let Some(r) = reader.read(d, &mut one) {
                    got.push(r);
                }
                // A record held for the other direction takes no more bytes until it can go on.
                if one.is_empty() {
                    inputs[i] = &inputs[i][1..];
                }
            } else if !ended[i] {
                reader.end(d);
                ended[i] = true;
            }
            while let Some(r) = reader.read(d, &mut &[][..]) {
                got.push(r);
            }
        }
    }
    for d in [Direction::ClientToServer, Direction::ServerToClient] {
        while let Some(r) = reader.read(d, &mut &[][..]) {
            got.push(r);
        }
        assert!(!reader.is_waiting(d));
    }
    let by = |v: &[ReadRecord], d| -> Vec<ReadRecord> {
        v.iter().filter(|r| r.direction == d).cloned().collect()
    };
    for d in [Direction::ClientToServer, Direction::ServerToClient] {
        assert_eq!(by(&got, d), by(&whole, d), "{} byte at a time", d.arrow());
    }

    // Flipped bytes, spliced streams and noise.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..300 {
        let (mut a, mut b) = (c2s.clone(), s2c.clone());
        for _ in 0..1 + rng.below(4) {
            let v = if rng.below(2) == 0 { &mut a } else { &mut b };
            if !v.is_empty() {
                let at = rng.below(v.len());
                v[at] ^= 1 << rng.below(8);
            }
        }
        if round % 10 == 0 {
            let at = rng.below(a.len());
            a.splice(at..at, s2c.iter().copied().take(rng.below(400)));
        }
        if round % 25 == 0 {
            let n = rng.below(3000);
            a = (0..n).map(|_| rng.next() as u8).collect();
            b = (0..n).map(|_| rng.next() as u8).collect();
        }
        read_checked(&log, &a, &b);
    }
    // Headers that declare the largest lengths, and a handshake message over the limit.
    let mut huge = vec![22, 3, 3, 0x40, 0x00];
    huge.extend([11, 0xff, 0xff, 0xff]);
    huge.extend(vec![0; 0x4000 - 4]);
    let mut reader = TranscriptReader::new(KeyLog::default());
    let mut input = &huge[..];
    let r = reader.read(Direction::ServerToClient, &mut input).unwrap();
    assert!(r.messages.is_empty());
    assert!(reader.error(Direction::ServerToClient).is_some());
    let mut input: &[u8] = &[23, 3, 3, 0xff, 0xff, 0];
    assert!(reader.read(Direction::ClientToServer, &mut input).is_none());
    assert!(reader.error(Direction::ClientToServer).is_some());
    assert_eq!(reader.partial_len(Direction::ClientToServer), 0);
}
