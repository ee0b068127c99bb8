//! RFC 8448 traces replayed byte for byte, in both roles, for all five sections.
//!
//! The replay machinery (configurations, injected randomness, the replay signer, the record walk)
//! lives in `lab::rfc8448`, shared with `tls13lab keys --rfc8448`; here every record our
//! endpoint sends must equal the RFC's record, and every value of the section's key schedule must
//! appear among the derivations our endpoint reports.

use std::collections::HashSet;

use lab::rfc8448::{Section, NOW_MS, RESUME_MS};
use tls13lab::events::{Event, Side};
use tls13lab::messages::enums::{AlertDescription, SignatureScheme};
use tls13lab::session::TicketStore;
use tls13lab::{Client, Server};

fn section(n: u8) -> Section {
    Section::new(n).unwrap()
}

/// Every derivation output, key-share secret and Finished value an endpoint reported.
fn derived(events: &[Event]) -> HashSet<Vec<u8>> {
    let mut set = HashSet::new();
    for e in events {
        match e {
            Event::Derivation(d) => {
                set.insert(d.output.clone());
            }
            Event::KeyShare(k) => {
                set.insert(k.shared_secret.clone());
            }
            _ => {}
        }
    }
    set
}

fn assert_secrets(sec: &Section, side: Side, events: &[Event]) {
    let have = derived(events);
    let mut checked = 0;
    for (name, value) in sec.summary_values() {
        if name == "psk" {
            // §4's PSK is the ticket's, derived and checked in the §3 run.
            continue;
        }
        assert!(
            have.contains(&value),
            "§{} {side:?}: {name} not derived",
            sec.number()
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} values checked");
}

fn run_client(n: u8, tickets: TicketStore, now: u64) -> (Client, Vec<Event>) {
    let (c, events) = lab::rfc8448::run_client(n, tickets, now).unwrap_or_else(|e| panic!("{e}"));
    assert_secrets(&section(n), Side::Client, &events);
    (c, events)
}

fn run_server(n: u8, cfg: tls13lab::ServerConfig, now: u64) -> (Server, Vec<Event>) {
    let (s, events) = lab::rfc8448::run_server(n, cfg, now).unwrap_or_else(|e| panic!("{e}"));
    assert_secrets(&section(n), Side::Server, &events);
    (s, events)
}

#[test]
fn section3_simple_1rtt_client() {
    let (mut c, _) = run_client(3, TicketStore::default(), NOW_MS);
    assert_eq!(c.tickets().len(), 1);
    assert_eq!(
        Some(c.tickets().tickets[0].psk.clone()),
        section(3).summary("resumption_psk")
    );
    assert!(!c.read_all().is_empty());
}

#[test]
fn section3_simple_1rtt_server() {
    let (mut s, _) = run_server(3, section(3).server_config(), NOW_MS);
    assert!(!s.read_all().is_empty());
}

#[test]
fn section4_resumed_0rtt_client() {
    // §4 resumes from the ticket and resumption secret that §3 produced.
    let (c, _) = run_client(3, TicketStore::default(), NOW_MS);
    let (_, events) = run_client(4, c.tickets().clone(), RESUME_MS);
    let n = events.iter().find_map(|e| match e {
        Event::Connected(n) => Some(n.clone()),
        _ => None,
    });
    let n = n.unwrap();
    assert!(n.resumed);
    assert_eq!(n.early_data, tls13lab::events::EarlyDataStatus::Accepted);
}

#[test]
fn section4_resumed_0rtt_server() {
    let cfg = section(3).server_config();
    let sessions = cfg.sessions.clone();
    run_server(3, cfg, NOW_MS);
    assert_eq!(sessions.cached(), 1);
    let mut cfg4 = section(4).server_config();
    cfg4.sessions = sessions.clone();
    let (mut s, _) = run_server(4, cfg4, RESUME_MS);
    let early = s.read_all_early();
    assert_eq!(
        early,
        section(4).records()[1].payload,
        "0-RTT data delivered"
    );
    // Stateful tickets are single-use.
    assert_eq!(sessions.cached(), 0);
}

#[test]
fn section5_hello_retry_request_client() {
    run_client(5, TicketStore::default(), NOW_MS);
}

#[test]
fn section5_hello_retry_request_server() {
    run_server(5, section(5).server_config(), NOW_MS);
}

#[test]
fn section6_client_authentication_client() {
    run_client(6, TicketStore::default(), NOW_MS);
}

#[test]
fn section6_client_authentication_server() {
    let (s, _) = run_server(6, section(6).server_config(), NOW_MS);
    assert_eq!(
        s.negotiated().unwrap().client_signature_scheme,
        Some(SignatureScheme::rsa_pss_rsae_sha256)
    );
}

#[test]
fn section7_compatibility_mode_client() {
    run_client(7, TicketStore::default(), NOW_MS);
}

#[test]
fn section7_compatibility_mode_server() {
    run_server(7, section(7).server_config(), NOW_MS);
}

#[test]
fn events_helper_chains_section4_after_section3() {
    for side in [Side::Client, Side::Server] {
        let events = lab::rfc8448::replay_section(4, side, None).unwrap();
        assert_secrets(&section(4), side, &events);
    }
}

#[test]
fn section3_flipped_bit_is_bad_record_mac() {
    let sec = section(3);
    let recs = sec.records();
    for pos in [5usize, 100, recs[2].wire.len() - 1] {
        let mut c = sec.client(TicketStore::default()).unwrap();
        c.start(NOW_MS).unwrap();
        let _ = c.take_output();
        c.receive(&recs[1].wire, NOW_MS).unwrap();
        let mut bad = recs[2].wire.clone();
        bad[pos] ^= 0x01;
        let err = c.receive(&bad, NOW_MS).unwrap_err();
        assert_eq!(
            err.alert(),
            Some(AlertDescription::BadRecordMac),
            "bit {pos}: {err}"
        );
        // The alert goes out (under the handshake keys) and the connection is dead.
        assert!(!c.take_output().is_empty());
        assert!(c.is_closed());
    }
}

#[test]
fn section3_certificate_expired_with_real_clock() {
    // The same trace validated on 2026-12-01: the certificate expired on 2026-07-30.
    let sec = section(3);
    let mut cfg = sec.client_config();
    cfg.fixed_validation_time_ms = Some(1_796_083_200_000);
    let rng = tls13lab::crypto::random::ScriptedRandom::new(sec.draws(Side::Client), 0);
    let mut c = Client::new(std::sync::Arc::new(cfg), Box::new(rng)).unwrap();
    c.start(NOW_MS).unwrap();
    let recs = sec.records();
    c.receive(&recs[1].wire, NOW_MS).unwrap();
    let err = c.receive(&recs[2].wire, NOW_MS).unwrap_err();
    assert_eq!(err.alert(), Some(AlertDescription::CertificateExpired));
}
