//! Resumption, 0-RTT and anti-replay in memory (RFC 8446 §2.2, §2.3, §4.2.10, §4.6.1, §8).

use std::sync::Arc;

use lab::demo::{self, request_response, Pair};
use tls13lab::config::{AntiReplay, ExternalPsk, TicketMode};
use tls13lab::events::{EarlyDataStatus, Event};
use tls13lab::messages::enums::{CipherSuite, NamedGroup, PskKeyExchangeMode};
use tls13lab::session::TicketStore;
use tls13lab::{ClientConfig, ServerConfig};

const NOW: u64 = 1_767_225_600_000;
const REQ: &[u8] = b"GET / HTTP/1.0\r\n\r\n";
const RESP: &[u8] = b"HTTP/1.0 200 OK\r\n\r\nok";

fn configs() -> (ClientConfig, ServerConfig) {
    let (s, root) = demo::server_config(9, NOW).unwrap();
    (demo::client_config(root), s)
}

/// A full handshake; returns its tickets.
fn first(c: &Arc<ClientConfig>, s: &Arc<ServerConfig>) -> TicketStore {
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
    assert!(!p.client.negotiated().unwrap().resumed);
    assert_eq!(p.client.tickets().len(), s.tickets as usize);
    p.client.tickets().clone()
}

fn negotiated(p: &Pair) -> tls13lab::events::Negotiated {
    p.client.negotiated().unwrap().clone()
}

#[test]
fn psk_dhe_ke_resumption_stateless_and_stateful() {
    for mode in [TicketMode::Stateless, TicketMode::Stateful] {
        let (c, mut s) = configs();
        s.ticket_mode = mode;
        let (c, s) = (Arc::new(c), Arc::new(s));
        let tickets = first(&c, &s);
        let mut no_early = (*c).clone();
        no_early.enable_early_data = false;
        let no_early = Arc::new(no_early);
        let p = request_response(no_early, s.clone(), 2, NOW + 5000, REQ, RESP, tickets).unwrap();
        let n = negotiated(&p);
        assert!(n.resumed, "{mode:?}");
        assert_eq!(
            n.group,
            Some(NamedGroup::X25519MLKEM768),
            "psk_dhe_ke still does (EC)DHE, with the client's first share"
        );
        assert_eq!(n.signature_scheme, None, "no certificate when resuming");
        assert_eq!(p.server.negotiated().unwrap().psk_identity, Some(0));
        assert_eq!(p.client_received(), RESP);
        // No Certificate crossed the wire.
        assert!(!p.ledger().records.iter().any(|r| r
            .messages
            .iter()
            .any(|m| m.typ == tls13lab::messages::enums::HandshakeType::Certificate)));
    }
}

#[test]
fn psk_ke_resumption_has_no_key_exchange() {
    let (mut c, mut s) = configs();
    c.psk_modes = vec![PskKeyExchangeMode::PskKe];
    s.psk_modes = vec![PskKeyExchangeMode::PskKe];
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first(&c, &s);
    let p = request_response(c, s, 2, NOW + 1000, REQ, RESP, tickets).unwrap();
    let n = negotiated(&p);
    assert!(n.resumed);
    assert_eq!(n.group, None);
    assert!(!p
        .client_events
        .iter()
        .any(|e| matches!(e, Event::KeyShare(_))));
}

#[test]
fn zero_rtt_accepted_delivers_early_data_in_one_round_trip() {
    let (c, s) = configs();
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first(&c, &s);
    let p = request_response(c, s, 3, NOW + 1000, REQ, RESP, tickets).unwrap();
    assert_eq!(negotiated(&p).early_data, EarlyDataStatus::Accepted);
    assert_eq!(p.server_early, REQ);
    assert_eq!(p.ledger().round_trips_to_first_response(), Some(1));
    assert_eq!(p.client_received(), RESP);
    // Both sides agree on the early exporter (§7.5) and on the regular one, and they differ.
    let mut p = p;
    let ce = p
        .client
        .export_early(b"EXPERIMENTAL lab", b"ctx", 32)
        .unwrap();
    let se = p
        .server
        .export_early(b"EXPERIMENTAL lab", b"ctx", 32)
        .unwrap();
    assert_eq!(ce, se);
    let c = p.client.export(b"EXPERIMENTAL lab", b"ctx", 32).unwrap();
    assert_eq!(c, p.server.export(b"EXPERIMENTAL lab", b"ctx", 32).unwrap());
    assert_ne!(c, ce);
}

#[test]
fn zero_rtt_rejected_is_reported_and_resent() {
    let (c, mut s) = configs();
    s.max_early_data = 0; // the server refuses 0-RTT by policy…
    let (c, s) = (Arc::new(c), Arc::new(s));
    let (c0, mut s_offering) = configs();
    let _ = c0;
    s_offering.sessions = s.sessions.clone();
    s_offering.cert = s.cert.clone();
    // …but the ticket came from a configuration that allowed it.
    let tickets = first(&c, &Arc::new(s_offering));
    let p = request_response(c, s, 4, NOW + 1000, REQ, RESP, tickets).unwrap();
    let n = negotiated(&p);
    assert!(n.resumed);
    assert_eq!(n.early_data, EarlyDataStatus::Rejected);
    let rejected: Vec<u8> = p
        .client_events
        .iter()
        .filter_map(|e| match e {
            Event::EarlyDataRejected { data } => Some(data.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        rejected, REQ,
        "the application gets its rejected bytes back"
    );
    assert!(p.server_early.is_empty());
    // The application sent them again after the handshake.
    assert_eq!(p.server_received(), REQ);
    assert_eq!(p.client_received(), RESP);
}

/// Run only the client's first flight (ClientHello + 0-RTT data) into a fresh server.
fn first_flight_into(s: &Arc<ServerConfig>, flight: &[u8], seed: u64) -> Pair {
    let (c, _) = configs();
    let mut p = Pair::new(Arc::new(c), s.clone(), seed, NOW + 1000).unwrap();
    let n = p.server.receive(flight, p.now_ms).unwrap();
    assert_eq!(n, flight.len());
    p.server_events.extend(p.server.events());
    p
}

fn early_data_received(p: &mut Pair) -> Vec<u8> {
    p.server.read_all_early()
}

/// RFC 8446 §8: a captured 0-RTT first flight replayed to the server must not deliver the early
/// data a second time.
#[test]
fn replayed_zero_rtt_flight_is_refused() {
    for (policy, mode) in [
        (AntiReplay::SingleUse, TicketMode::Stateless),
        (AntiReplay::SingleUse, TicketMode::Stateful),
        (
            AntiReplay::Window { window_ms: 10_000 },
            TicketMode::Stateless,
        ),
    ] {
        let (c, mut s) = configs();
        s.anti_replay = policy;
        s.ticket_mode = mode;
        let (c, s) = (Arc::new(c), Arc::new(s));
        let tickets = first(&c, &s);
        // Capture the client's first flight.
        let mut p = Pair::with_tickets(c, s.clone(), 5, NOW + 1000, tickets).unwrap();
        p.client.start(p.now_ms).unwrap();
        p.client.send(REQ).unwrap();
        let flight = p.client.take_output();
        let mut a = first_flight_into(&s, &flight, 6);
        assert_eq!(
            early_data_received(&mut a),
            REQ,
            "{policy:?} {mode:?}: first time accepted"
        );
        let mut b = first_flight_into(&s, &flight, 7);
        assert!(
            early_data_received(&mut b).is_empty(),
            "{policy:?} {mode:?}: the replay must not deliver 0-RTT data"
        );
    }
}

#[test]
fn replay_accepted_when_anti_replay_is_off() {
    let (c, mut s) = configs();
    s.anti_replay = AntiReplay::Off;
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first(&c, &s);
    let mut p = Pair::with_tickets(c, s.clone(), 5, NOW + 1000, tickets).unwrap();
    p.client.start(p.now_ms).unwrap();
    p.client.send(REQ).unwrap();
    let flight = p.client.take_output();
    assert_eq!(
        early_data_received(&mut first_flight_into(&s, &flight, 6)),
        REQ
    );
    assert_eq!(
        early_data_received(&mut first_flight_into(&s, &flight, 7)),
        REQ
    );
}

#[test]
fn expired_ticket_falls_back_to_full_handshake() {
    let (c, mut s) = configs();
    s.ticket_lifetime = 10;
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first(&c, &s);
    // The client drops it itself…
    let p = request_response(
        c.clone(),
        s.clone(),
        8,
        NOW + 11_000,
        REQ,
        RESP,
        tickets.clone(),
    )
    .unwrap();
    assert!(!negotiated(&p).resumed);
    // …and a client that offers it anyway (wrong clock) gets a full handshake too.
    let mut stale = tickets.clone();
    for t in stale.tickets.iter_mut() {
        t.received_at_ms = NOW + 11_000;
    }
    let p = request_response(c, s, 9, NOW + 11_000, REQ, RESP, stale).unwrap();
    assert!(!negotiated(&p).resumed);
}

#[test]
fn ticket_store_round_trips_through_json() {
    let (c, s) = configs();
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first(&c, &s);
    let json = tickets.to_json();
    let back = TicketStore::from_json(&json).unwrap();
    assert_eq!(back, tickets);
    let p = request_response(c, s, 10, NOW + 1000, REQ, RESP, back).unwrap();
    assert!(negotiated(&p).resumed);
}

#[test]
fn resumption_after_hello_retry_request() {
    // The ticket's PSK binder must cover message_hash(ClientHello1) + HelloRetryRequest (§4.2.11.2).
    let (mut c, mut s) = configs();
    c.enable_early_data = false;
    c.key_shares = vec![NamedGroup::X25519];
    s.groups = vec![NamedGroup::secp256r1, NamedGroup::X25519];
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first(&c, &s);
    let mut strict = (*s).clone();
    strict.strict_group_preference = true;
    strict.hrr_cookie = Some(16);
    let strict = Arc::new(strict);
    let p = request_response(c, strict, 11, NOW + 1000, REQ, RESP, tickets).unwrap();
    let n = negotiated(&p);
    assert!(n.resumed && n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::secp256r1));
}

#[test]
fn resumption_with_another_suite_hash_is_a_full_handshake() {
    let (c, s) = configs();
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first(&c, &s); // AES-128-GCM/SHA-256
    let mut s384 = (*s).clone();
    s384.cipher_suites = vec![CipherSuite::TLS_AES_256_GCM_SHA384];
    let s384 = Arc::new(s384);
    let p = request_response(c, s384, 12, NOW + 1000, REQ, RESP, tickets).unwrap();
    let n = negotiated(&p);
    assert!(!n.resumed);
    assert_eq!(n.suite, CipherSuite::TLS_AES_256_GCM_SHA384);
}

/// §4.2.11: an external PSK is used in its suite, so one in a suite this build has no
/// parameters for could never be bound: refused when the client is made, not when it starts.
#[test]
fn an_external_psk_in_an_unsupported_suite_is_a_configuration_error() {
    let (mut c, _) = configs();
    c.external_psks = vec![ExternalPsk {
        identity: b"lab-psk".to_vec(),
        key: vec![7u8; 32],
        suite: CipherSuite::Unknown(0x13ff),
    }];
    let made = tls13lab::Client::new(
        Arc::new(c),
        Box::new(tls13lab::crypto::random::SeededRandom::from_seed(1)),
    );
    let Err(tls13lab::Error::Config(why)) = made else {
        panic!("a client with an external PSK in an unknown suite was made");
    };
    assert!(why.contains("external PSK suite"), "{why}");
}

#[test]
fn external_psk_on_both_sides() {
    let (mut c, mut s) = configs();
    let psk = ExternalPsk {
        identity: b"lab-psk".to_vec(),
        key: vec![7u8; 32],
        suite: CipherSuite::TLS_AES_128_GCM_SHA256,
    };
    c.external_psks = vec![psk.clone()];
    s.external_psks = vec![psk];
    let p = request_response(
        Arc::new(c),
        Arc::new(s),
        13,
        NOW,
        REQ,
        RESP,
        TicketStore::default(),
    )
    .unwrap();
    let n = negotiated(&p);
    assert!(n.resumed);
    assert_eq!(n.signature_scheme, None);
    assert_eq!(p.client_received(), RESP);
    // A server with another key for that identity rejects the binder (decrypt_error, §4.2.11.2).
    let (mut c, mut s) = configs();
    c.external_psks = vec![ExternalPsk {
        identity: b"lab-psk".to_vec(),
        key: vec![7u8; 32],
        suite: CipherSuite::TLS_AES_128_GCM_SHA256,
    }];
    s.external_psks = vec![ExternalPsk {
        identity: b"lab-psk".to_vec(),
        key: vec![8u8; 32],
        suite: CipherSuite::TLS_AES_128_GCM_SHA256,
    }];
    let err = request_response(
        Arc::new(c),
        Arc::new(s),
        14,
        NOW,
        REQ,
        RESP,
        TicketStore::default(),
    )
    .err()
    .unwrap();
    assert_eq!(
        err.alert(),
        Some(tls13lab::messages::enums::AlertDescription::DecryptError)
    );
}

/// 0-RTT data waits for `read_early`, apart from application data, and back-pressure bounds it
/// like application data: a small limit holds the first flight back until it is read.
#[test]
fn early_data_is_read_apart_and_under_back_pressure() {
    let (c, s) = configs();
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first(&c, &s);
    let mut p = Pair::with_tickets(c, s, 8, NOW + 1000, tickets).unwrap();
    p.client.start(p.now_ms).unwrap();
    let early: Vec<u8> = (0..6_000u32).map(|i| (i % 251) as u8).collect();
    for piece in early.chunks(1_000) {
        p.client.send(piece).unwrap();
    }
    let flight = p.client.take_output();
    p.server.set_buffer_limit(1_500);
    let (mut rest, mut got) = (&flight[..], Vec::new());
    let mut calls = 0;
    while !rest.is_empty() {
        let n = p.server.receive(rest, p.now_ms).unwrap();
        assert!(p.server.readable_early() < 1_500 + 1_000);
        assert_eq!(p.server.readable(), 0, "0-RTT data is not application data");
        rest = &rest[n..];
        got.extend(p.server.read_all_early());
        calls += 1;
    }
    assert!(calls >= 3, "{calls} calls: the limit held input back");
    assert_eq!(got, early);
}

/// The CCM suites (RFC 8446 §B.4), configured on both sides: a full handshake, then a
/// resumption with a ticket and 0-RTT accepted, each under the suite, its records carrying the
/// suite's tag (16 bytes, 8 for AES-128-CCM-8; §5.2), the early data's included.
#[test]
fn ccm_suites_resume_with_tickets_and_zero_rtt() {
    for (suite, tag) in [
        (CipherSuite::TLS_AES_128_CCM_SHA256, 16),
        (CipherSuite::TLS_AES_128_CCM_8_SHA256, 8),
    ] {
        for mode in [TicketMode::Stateless, TicketMode::Stateful] {
            let (mut c, mut s) = configs();
            c.cipher_suites = vec![suite];
            s.cipher_suites = vec![suite];
            s.ticket_mode = mode;
            let (c, s) = (Arc::new(c), Arc::new(s));
            let tickets = first(&c, &s);
            assert!(
                tickets.tickets.iter().all(|t| t.suite == suite),
                "{suite} {mode:?}"
            );
            let p = request_response(c, s, 3, NOW + 1000, REQ, RESP, tickets).unwrap();
            let n = negotiated(&p);
            let what = format!("{suite} {mode:?}");
            assert_eq!(n.suite, suite, "{what}");
            assert!(n.resumed, "{what}");
            assert_eq!(n.early_data, EarlyDataStatus::Accepted, "{what}");
            assert_eq!(p.server_early, REQ, "{what}");
            assert_eq!(p.client_received(), RESP, "{what}");
            assert_eq!(p.ledger().round_trips_to_first_response(), Some(1));
            let l = p.ledger();
            let protected: Vec<_> = l
                .records
                .iter()
                .filter(|r| r.record.seq.is_some())
                .collect();
            assert!(protected
                .iter()
                .any(|r| r.record.epoch == tls13lab::events::Epoch::Early));
            let count = protected.len();
            for r in protected {
                let rec = &r.record;
                assert_eq!(rec.tag_len, tag, "{what}: {rec:?}");
                assert_eq!(
                    rec.payload_len,
                    rec.plaintext_len + 1 + rec.padding_len + tag,
                    "{what}"
                );
            }
            let tags: usize = [l.totals.client_to_server, l.totals.server_to_client]
                .iter()
                .map(|t| t.tag_bytes)
                .sum();
            assert_eq!(tags, count * tag, "{what}: the ledger's tag bytes");
        }
    }
}

/// A CCM-8 ticket offered to a server that prefers AES-128-GCM (same hash): the PSK may be
/// resumed under the other suite (§4.2.11), but 0-RTT needs the ticket's suite (§4.2.10), so
/// the early data is rejected and sent again under the new keys.
#[test]
fn ccm8_ticket_under_another_suite_rejects_zero_rtt() {
    let (mut c, mut s) = configs();
    c.cipher_suites = vec![
        CipherSuite::TLS_AES_128_CCM_8_SHA256,
        CipherSuite::TLS_AES_128_GCM_SHA256,
    ];
    s.cipher_suites = vec![CipherSuite::TLS_AES_128_CCM_8_SHA256];
    let (c, s) = (Arc::new(c), Arc::new(s));
    let tickets = first(&c, &s);
    let mut gcm = (*s).clone();
    gcm.cipher_suites = vec![
        CipherSuite::TLS_AES_128_GCM_SHA256,
        CipherSuite::TLS_AES_128_CCM_8_SHA256,
    ];
    let p = request_response(c, Arc::new(gcm), 4, NOW + 1000, REQ, RESP, tickets).unwrap();
    let n = negotiated(&p);
    assert_eq!(n.suite, CipherSuite::TLS_AES_128_GCM_SHA256);
    assert!(n.resumed);
    assert_eq!(n.early_data, EarlyDataStatus::Rejected);
    assert!(p.server_early.is_empty());
    assert_eq!(p.client_received(), RESP);
}
