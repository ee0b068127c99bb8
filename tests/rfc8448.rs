//! RFC 8448 traces replayed byte for byte, in both roles, for all five sections.
//!
//! Inputs (randoms, ephemeral private keys, the ticket's age_add and identity) are injected through
//! `ScriptedRandom`; every record our endpoint sends must equal the RFC's record, and every value of
//! the section's key schedule must appear among the derivations our endpoint reports.
//! RSA-PSS (and the unpublished ECDSA/RSA keys of §6) make CertificateVerify signatures
//! non-reproducible, so a `ReplaySigner` returns the published signature — after checking that
//! it is asked to sign exactly the content the RFC signed, which proves the transcript identical.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;
use tls13lab::config::{CertifiedKey, HelloPadding, Signer, TicketMode};
use tls13lab::crypto::random::{RandomSource, ScriptedRandom};
use tls13lab::events::Event;
use tls13lab::messages::enums::{
    AlertDescription, CipherSuite, ExtensionType, NamedGroup, PskKeyExchangeMode, SignatureScheme,
};
use tls13lab::messages::extensions::Extension;
use tls13lab::messages::handshake::{HandshakeMessage, HandshakePayload};
use tls13lab::session::TicketStore;
use tls13lab::{Client, ClientAuth, ClientConfig, Error, Server, ServerConfig, ServerVerification};

/// 2020-01-01: inside the RFC certificates' validity (they expired 2026-07-30).
const NOW_MS: u64 = 1_577_836_800_000;
/// §4's ClientHello reports a ticket age of 6 ms (obfuscated 0xfad6aacb - age_add 0xfad6aac5).
const RESUME_MS: u64 = NOW_MS + 6;

fn load(name: &str) -> Value {
    let path = format!("{}/tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("vectors")).expect("json")
}

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).expect("hex")
}

fn pem_cert(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/vectors/pem/{name}", env!("CARGO_MANIFEST_DIR"));
    let pem = std::fs::read_to_string(path).unwrap();
    tls13lab::crypto::cert::certs_from_pem(&pem)
        .unwrap()
        .remove(0)
}

struct Section {
    n: &'static str,
    v: Value,
    extras: Value,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Client,
    Server,
}

struct Rec {
    from_client: bool,
    inner: String,
    payload: Vec<u8>,
    wire: Vec<u8>,
}

impl Section {
    fn new(n: &'static str) -> Section {
        Section {
            n,
            v: load("rfc8448.json")["sections"][n].clone(),
            extras: load("rfc8448_computed_extras.json")["sections"][n].clone(),
        }
    }

    fn records(&self) -> Vec<Rec> {
        self.v["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| Rec {
                from_client: r["direction"] == "client_to_server",
                inner: r["inner_content_type"].as_str().unwrap().to_string(),
                payload: h(r["payload"].as_str().unwrap()),
                wire: h(r["complete_record"].as_str().unwrap()),
            })
            .collect()
    }

    fn key(&self, name: &str) -> Vec<u8> {
        h(self.v["key_pairs"][name]["private_key"].as_str().unwrap())
    }

    fn parsed(&self, msg: &str, field: &str) -> Vec<u8> {
        h(self.v["parsed"][msg][field].as_str().unwrap())
    }

    fn summary(&self, name: &str) -> Vec<u8> {
        h(self.v["summary"][name].as_str().unwrap())
    }

    /// Every value of the RFC's summary (secrets, keys, IVs, Finished values).
    fn summary_values(&self) -> Vec<(String, Vec<u8>)> {
        self.v["summary"]
            .as_object()
            .unwrap()
            .iter()
            // Transcript hashes and nonces are inputs to derivations, not derivations.
            .filter(|(k, _)| {
                !matches!(k.as_str(), "source" | "ticket_nonce") && !k.ends_with("hash")
            })
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), h(s))))
            .collect()
    }

    fn message(&self, from: &str, name: &str) -> Vec<u8> {
        let m = self.v["handshake_messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["from"] == from && m["rfc_name"] == name)
            .unwrap_or_else(|| panic!("§{}: no {from} {name}", self.n));
        h(m["hex"].as_str().unwrap())
    }

    /// A signer that returns the RFC's published CertificateVerify signature of `from`.
    fn replay_signer(&self, from: &str) -> Arc<dyn Signer> {
        let cv =
            HandshakeMessage::decode(&self.message(from, "CertificateVerify"), Default::default())
                .unwrap();
        let HandshakePayload::CertificateVerify(cv) = cv.payload else {
            panic!("not a CertificateVerify")
        };
        let content = self.extras["certificate_verify_signed_content"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["from"] == from)
            .map(|c| h(c["signed_content"].as_str().unwrap()))
            .unwrap();
        Arc::new(ReplaySigner {
            scheme: cv.scheme,
            expected_content: content,
            signature: cv.signature,
        })
    }
}

struct ReplaySigner {
    scheme: SignatureScheme,
    expected_content: Vec<u8>,
    signature: Vec<u8>,
}

impl Signer for ReplaySigner {
    fn schemes(&self) -> Vec<SignatureScheme> {
        vec![self.scheme]
    }

    fn sign(
        &self,
        _: SignatureScheme,
        message: &[u8],
        _: &mut dyn RandomSource,
    ) -> Result<Vec<u8>, Error> {
        assert_eq!(
            message,
            &self.expected_content[..],
            "CertificateVerify content"
        );
        Ok(self.signature.clone())
    }
}

/// The ClientHello the RFC 8448 client sends, as configuration.
fn client_config(sec: &Section) -> ClientConfig {
    let ext_types = sec.v["parsed"]["client_hello_1"]["extension_types"]
        .as_array()
        .unwrap()
        .clone();
    let mut extra = vec![Extension::RenegotiationInfo(vec![0])];
    if ext_types.iter().any(|t| t == "0023") {
        extra.push(Extension::Unknown {
            typ: ExtensionType::SessionTicket,
            body: vec![],
        });
    }
    let server_cert = if sec.n == "6" {
        pem_cert("server_ecdsa_certificate_client_auth.pem")
    } else {
        pem_cert("server_rsa_certificate.pem")
    };
    // The client's offers, read from its first ClientHello (its policy, not a result).
    let ch1 = HandshakeMessage::decode(&sec.records()[0].payload, Default::default()).unwrap();
    let HandshakePayload::ClientHello(ch1) = ch1.payload else {
        panic!()
    };
    let mut groups = Vec::new();
    let mut schemes = Vec::new();
    for e in &ch1.extensions {
        match e {
            Extension::SupportedGroups(g) => groups = g.clone(),
            Extension::SignatureAlgorithms(s) => schemes = s.clone(),
            _ => {}
        }
    }
    ClientConfig {
        cipher_suites: vec![
            CipherSuite::TLS_AES_128_GCM_SHA256,
            CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
            CipherSuite::TLS_AES_256_GCM_SHA384,
        ],
        groups,
        key_shares: vec![NamedGroup::X25519],
        signature_schemes: schemes,
        server_name: Some("server".into()),
        // The RFC certificates have no subjectAltName: validate the chain, not the name.
        verification: ServerVerification::RootsNoName(vec![server_cert]),
        record_size_limit: Some(0x4001),
        psk_modes: vec![PskKeyExchangeMode::PskDheKe],
        extra_extensions: extra,
        extension_order: [
            0x0000, 0xff01, 0x000a, 0x0023, 0x0033, 0x002a, 0x002b, 0x000d, 0x002c, 0x002d, 0x001c,
            0x0015,
        ]
        .into_iter()
        .map(ExtensionType::from)
        .collect(),
        // §4's ClientHello and §5's second one are padded from 256..511 to 512 bytes (RFC 7685).
        hello_padding: HelloPadding::Avoid256To511,
        compat_mode: sec.n == "7",
        client_cert: (sec.n == "6").then(|| CertifiedKey {
            chain: vec![pem_cert("client_rsa_certificate.pem")],
            key: sec.replay_signer("client"),
        }),
        fixed_validation_time_ms: Some(NOW_MS),
        ..ClientConfig::default()
    }
}

/// The RFC 8448 server's policy, as configuration.
fn server_config(sec: &Section) -> ServerConfig {
    let (cert, signer) = if sec.n == "4" {
        // §4 resumes: no certificate is sent, any key will do.
        (
            pem_cert("server_rsa_certificate.pem"),
            Section::new("3").replay_signer("server"),
        )
    } else if sec.n == "6" {
        (
            pem_cert("server_ecdsa_certificate_client_auth.pem"),
            sec.replay_signer("server"),
        )
    } else {
        (
            pem_cert("server_rsa_certificate.pem"),
            sec.replay_signer("server"),
        )
    };
    let mut cfg = ServerConfig::new(CertifiedKey {
        chain: vec![cert],
        key: signer,
    });
    cfg.cipher_suites = vec![CipherSuite::TLS_AES_128_GCM_SHA256];
    // The groups the server lists in EncryptedExtensions, in its preference order.
    let ee = HandshakeMessage::decode(
        &sec.message("server", "EncryptedExtensions"),
        Default::default(),
    )
    .unwrap();
    let HandshakePayload::EncryptedExtensions(exts) = ee.payload else {
        panic!()
    };
    for e in exts {
        if let Extension::SupportedGroups(g) = e {
            cfg.groups = g;
        }
    }
    cfg.send_supported_groups = true;
    cfg.strict_group_preference = true;
    cfg.record_size_limit = Some(0x4001);
    cfg.compat_mode = true;
    cfg.extension_order = vec![
        ExtensionType::SupportedGroups,
        ExtensionType::RecordSizeLimit,
        ExtensionType::ServerName,
    ];
    if sec.n == "5" {
        cfg.hrr_cookie = Some(sec.parsed("hello_retry_request", "cookie").len());
    }
    if sec.n == "6" {
        // The CertificateRequest lists these schemes (and we accept the client's with them).
        let cr = HandshakeMessage::decode(
            &sec.message("server", "CertificateRequest"),
            Default::default(),
        )
        .unwrap();
        let HandshakePayload::CertificateRequest(cr) = cr.payload else {
            panic!()
        };
        for e in cr.extensions {
            if let Extension::SignatureAlgorithms(s) = e {
                cfg.signature_schemes = s;
            }
        }
        cfg.client_auth = ClientAuth::Required(vec![pem_cert("client_rsa_certificate.pem")]);
        cfg.fixed_validation_time_ms = Some(NOW_MS);
    }
    // §3 issues one stateful ticket (its identity is injected) allowing 1024 bytes of 0-RTT.
    cfg.tickets = u32::from(sec.n == "3");
    cfg.ticket_lifetime = 30;
    cfg.max_early_data = 1024;
    cfg.ticket_mode = TicketMode::Stateful;
    cfg.stateful_ticket_len = Section::new("3")
        .parsed("new_session_ticket", "ticket")
        .len();
    cfg
}

/// What the injected randomness must return, in the order each side draws it.
fn draws(sec: &Section, role: Role) -> Vec<Vec<u8>> {
    let mut d = Vec::new();
    match role {
        Role::Client => {
            d.push(sec.parsed("client_hello_1", "random"));
            if sec.n == "7" {
                d.push(sec.parsed("client_hello_1", "legacy_session_id"));
            }
            d.push(sec.key("client_x25519"));
            if sec.n == "5" {
                d.push(sec.key("client_secp256r1"));
            }
        }
        Role::Server => {
            if sec.n == "5" {
                d.push(sec.parsed("hello_retry_request", "cookie"));
            }
            d.push(sec.parsed("server_hello", "random"));
            d.push(if sec.n == "5" {
                sec.key("server_secp256r1")
            } else {
                sec.key("server_x25519")
            });
            if sec.n == "3" {
                d.push(sec.parsed("new_session_ticket", "ticket_age_add"));
                d.push(sec.parsed("new_session_ticket", "ticket"));
            }
        }
    }
    d
}

enum Endpoint {
    Client(Box<Client>),
    Server(Box<Server>),
}

impl Endpoint {
    fn receive(&mut self, b: &[u8], now: u64) -> Result<(), Error> {
        match self {
            Endpoint::Client(c) => c.receive(b, now),
            Endpoint::Server(s) => s.receive(b, now),
        }
    }
    fn take_output(&mut self) -> Vec<u8> {
        match self {
            Endpoint::Client(c) => c.take_output(),
            Endpoint::Server(s) => s.take_output(),
        }
    }
    fn send(&mut self, d: &[u8]) -> Result<(), Error> {
        match self {
            Endpoint::Client(c) => c.send(d),
            Endpoint::Server(s) => s.send(d),
        }
    }
    fn close(&mut self) {
        match self {
            Endpoint::Client(c) => c.close(),
            Endpoint::Server(s) => s.close(),
        }
    }
    fn events(&mut self) -> Vec<Event> {
        match self {
            Endpoint::Client(c) => c.events().collect(),
            Endpoint::Server(s) => s.events().collect(),
        }
    }
}

/// Walk the section's records: feed the peer's, and require ours to come out byte-exact.
fn replay(sec: &Section, mut ep: Endpoint, role: Role, now: u64) -> (Endpoint, Vec<Event>) {
    let mut pending: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    for (i, r) in sec.records().iter().enumerate() {
        let ours = r.from_client == (role == Role::Client);
        if !ours {
            ep.receive(&r.wire, now)
                .unwrap_or_else(|e| panic!("§{} record {i}: {e}", sec.n));
            events.extend(ep.events());
            continue;
        }
        // Application actions that produce our records.
        match r.inner.as_str() {
            "application_data" if pending.len() < r.wire.len() => ep.send(&r.payload).unwrap(),
            "alert" if pending.len() < r.wire.len() => {
                assert_eq!(r.payload, [1, 0], "only close_notify is scripted");
                ep.close();
            }
            _ => {}
        }
        pending.extend(ep.take_output());
        events.extend(ep.events());
        assert!(
            pending.starts_with(&r.wire),
            "§{} {role:?} record {i} ({}) differs:\n ours: {}\n rfc:  {}",
            sec.n,
            r.inner,
            hex::encode(&pending[..pending.len().min(r.wire.len())]),
            hex::encode(&r.wire)
        );
        pending.drain(..r.wire.len());
    }
    pending.extend(ep.take_output());
    assert!(
        pending.is_empty(),
        "§{} {role:?}: extra bytes {}",
        sec.n,
        hex::encode(&pending)
    );
    events.extend(ep.events());
    (ep, events)
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

fn assert_secrets(sec: &Section, role: Role, events: &[Event]) {
    let have = derived(events);
    let mut checked = 0;
    for (name, value) in sec.summary_values() {
        if name == "psk" {
            // §4's PSK is the ticket's, derived and checked in the §3 run.
            continue;
        }
        assert!(
            have.contains(&value),
            "§{} {role:?}: {name} not derived",
            sec.n
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} values checked");
}

fn client(sec: &Section, tickets: TicketStore) -> Endpoint {
    let rng = ScriptedRandom::new(draws(sec, Role::Client), 0);
    let c = Client::new(Arc::new(client_config(sec)), Box::new(rng))
        .unwrap()
        .with_tickets(tickets);
    Endpoint::Client(Box::new(c))
}

fn server(sec: &Section, cfg: ServerConfig) -> Endpoint {
    let rng = ScriptedRandom::new(draws(sec, Role::Server), 0);
    Endpoint::Server(Box::new(Server::new(Arc::new(cfg), Box::new(rng)).unwrap()))
}

fn run_client(n: &'static str, tickets: TicketStore, now: u64) -> (Endpoint, Vec<Event>) {
    let sec = Section::new(n);
    let mut ep = client(&sec, tickets);
    if let Endpoint::Client(c) = &mut ep {
        c.start(now).unwrap();
    }
    let (ep, events) = replay(&sec, ep, Role::Client, now);
    assert_secrets(&sec, Role::Client, &events);
    (ep, events)
}

fn run_server(n: &'static str, cfg: ServerConfig, now: u64) -> (Endpoint, Vec<Event>) {
    let sec = Section::new(n);
    let (ep, events) = replay(&sec, server(&sec, cfg), Role::Server, now);
    assert_secrets(&sec, Role::Server, &events);
    (ep, events)
}

fn app_data(events: &[Event]) -> Vec<u8> {
    tls13lab::demo::app_data(events)
}

#[test]
fn section3_simple_1rtt_client() {
    let (ep, events) = run_client("3", TicketStore::default(), NOW_MS);
    let Endpoint::Client(c) = ep else {
        unreachable!()
    };
    assert_eq!(c.tickets().len(), 1);
    assert_eq!(
        c.tickets().tickets[0].psk,
        Section::new("3").summary("resumption_psk")
    );
    assert!(!app_data(&events).is_empty());
}

#[test]
fn section3_simple_1rtt_server() {
    let sec = Section::new("3");
    let (_, events) = run_server("3", server_config(&sec), NOW_MS);
    assert!(!app_data(&events).is_empty());
}

#[test]
fn section4_resumed_0rtt_client() {
    // §4 resumes from the ticket and resumption secret that §3 produced.
    let (ep, _) = run_client("3", TicketStore::default(), NOW_MS);
    let Endpoint::Client(c) = ep else {
        unreachable!()
    };
    let (_, events) = run_client("4", c.tickets().clone(), RESUME_MS);
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
    let sec3 = Section::new("3");
    let cfg = server_config(&sec3);
    let sessions = cfg.sessions.clone();
    run_server("3", cfg, NOW_MS);
    assert_eq!(sessions.cached(), 1);
    let mut cfg4 = server_config(&Section::new("4"));
    cfg4.sessions = sessions.clone();
    let (_, events) = run_server("4", cfg4, RESUME_MS);
    let early: Vec<u8> = events
        .iter()
        .filter_map(|e| match e {
            Event::EarlyData { data } => Some(data.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        early,
        Section::new("4").records()[1].payload,
        "0-RTT data delivered"
    );
    // Stateful tickets are single-use.
    assert_eq!(sessions.cached(), 0);
}

#[test]
fn section5_hello_retry_request_client() {
    run_client("5", TicketStore::default(), NOW_MS);
}

#[test]
fn section5_hello_retry_request_server() {
    let sec = Section::new("5");
    run_server("5", server_config(&sec), NOW_MS);
}

#[test]
fn section6_client_authentication_client() {
    run_client("6", TicketStore::default(), NOW_MS);
}

#[test]
fn section6_client_authentication_server() {
    let sec = Section::new("6");
    let (ep, _) = run_server("6", server_config(&sec), NOW_MS);
    let Endpoint::Server(s) = ep else {
        unreachable!()
    };
    assert_eq!(
        s.negotiated().unwrap().client_signature_scheme,
        Some(SignatureScheme::rsa_pss_rsae_sha256)
    );
}

#[test]
fn section7_compatibility_mode_client() {
    run_client("7", TicketStore::default(), NOW_MS);
}

#[test]
fn section7_compatibility_mode_server() {
    let sec = Section::new("7");
    run_server("7", server_config(&sec), NOW_MS);
}

#[test]
fn section3_flipped_bit_is_bad_record_mac() {
    let sec = Section::new("3");
    let recs = sec.records();
    for pos in [5usize, 100, recs[2].wire.len() - 1] {
        let Endpoint::Client(mut c) = client(&sec, TicketStore::default()) else {
            unreachable!()
        };
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
    let sec = Section::new("3");
    let mut cfg = client_config(&sec);
    cfg.fixed_validation_time_ms = Some(1_796_083_200_000);
    let rng = ScriptedRandom::new(draws(&sec, Role::Client), 0);
    let mut c = Client::new(Arc::new(cfg), Box::new(rng)).unwrap();
    c.start(NOW_MS).unwrap();
    let recs = sec.records();
    c.receive(&recs[1].wire, NOW_MS).unwrap();
    let err = c.receive(&recs[2].wire, NOW_MS).unwrap_err();
    assert_eq!(err.alert(), Some(AlertDescription::CertificateExpired));
}
