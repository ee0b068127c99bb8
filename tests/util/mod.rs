//! Helpers shared by `tests/handshake.rs` and `tests/bad_input.rs` (not a test binary itself).
//!
//! - server keys of every kind we sign with, with self-signed certificates for `localhost`;
//! - [`check_ledger`]: the byte accounting every ledger must satisfy;
//! - [`check_mirror`]: what one side sent is exactly what the other received.

#![allow(dead_code)] // each binary uses a different subset

use std::sync::{Arc, OnceLock};

use lab::certgen::self_signed_p256;
use tls13lab::config::CertifiedKey;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::events::{Direction, Epoch, Event, RecordEvent};
use tls13lab::messages::enums::{ContentType, HandshakeType};
use tls13lab::{ClientConfig, Ledger, ServerConfig};

/// The simulated clock of every test: 2023-11-14, inside every certificate's validity.
pub const NOW: u64 = 1_700_000_000_000;

/// The kinds of server key we test with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// ECDSA P-256 (certificate from `self_signed_p256`).
    P256,
    /// Ed25519 (certificate from rcgen).
    Ed25519,
    /// RSA-2048 (certificate from rcgen).
    Rsa2048,
    /// ECDSA P-521 (key and certificate from OpenSSL: tests/vectors/pem/gen-sigs.sh).
    P521,
    /// RSA-2048 id-RSASSA-PSS key, any hash (from OpenSSL, as P521).
    RsaPss,
    /// RSA-2048 id-RSASSA-PSS key restricted to SHA-384 (from OpenSSL, as P521).
    RsaPssSha384,
    /// ML-DSA-44 (key and self-signed certificate from OpenSSL: tests/vectors/pem/gen-mldsa.sh).
    MlDsa44,
    /// ML-DSA-65 (from OpenSSL, as MlDsa44).
    MlDsa65,
    /// ML-DSA-87 (from OpenSSL, as MlDsa44).
    MlDsa87,
    /// Ed448 (key and self-signed certificate from OpenSSL, as P521).
    Ed448,
}

/// A key of `kind` with a self-signed certificate for `localhost` (and its DER, to trust as a
/// root). Made once per kind and process: RSA key generation is slow.
pub fn certified(kind: KeyKind) -> (CertifiedKey, Vec<u8>) {
    static CELLS: [OnceLock<(CertifiedKey, Vec<u8>)>; 10] = [const { OnceLock::new() }; 10];
    let i = kind as usize;
    CELLS[i]
        .get_or_init(|| make_certified(kind, 0x5e12_0000 + i as u64))
        .clone()
}

/// A second, unrelated P-256 identity: the client's certificate in client-auth tests.
pub fn client_identity() -> (CertifiedKey, Vec<u8>) {
    static CELL: OnceLock<(CertifiedKey, Vec<u8>)> = OnceLock::new();
    CELL.get_or_init(|| make_certified(KeyKind::P256, 0xc11e_0001))
        .clone()
}

/// A P-256 identity whose certificate names `localhost` and 60 more hosts: compressible, as a
/// real certificate with many subjectAltNames is (RFC 8879 tests). `seed` picks the key.
pub fn compressible_identity(seed: u64) -> (CertifiedKey, Vec<u8>) {
    let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(seed));
    let now_s = NOW / 1000;
    let names: Vec<String> = std::iter::once("localhost".to_string())
        .chain((1..=60).map(|i| format!("a{i}.example")))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let cert =
        self_signed_p256(&names, &key, now_s - 86_400, now_s + 86_400 * 365).expect("certificate");
    let ck = CertifiedKey {
        chain: vec![cert.clone()],
        key: Arc::new(key),
    };
    (ck, cert)
}

/// A self-signed P-256 certificate for another name: a trust anchor that issued nothing we use.
pub fn unrelated_root() -> Vec<u8> {
    let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(0xbad_c0de));
    let now_s = NOW / 1000;
    self_signed_p256(&["unrelated.example"], &key, now_s - 86_400, now_s + 86_400)
        .expect("certificate")
}

fn make_certified(kind: KeyKind, seed: u64) -> (CertifiedKey, Vec<u8>) {
    let mut rng = SeededRandom::from_seed(seed);
    let now_s = NOW / 1000;
    let (key, cert) = match kind {
        KeyKind::P256 => {
            let key = SigningKey::generate_p256(&mut rng);
            let cert = self_signed_p256(&["localhost"], &key, now_s - 86_400, now_s + 86_400 * 365)
                .expect("P-256 certificate");
            (key, cert)
        }
        KeyKind::Ed25519 => {
            let key = SigningKey::generate_ed25519(&mut rng);
            let cert = rcgen_self_signed(&key, &rcgen::PKCS_ED25519);
            (key, cert)
        }
        KeyKind::Rsa2048 => {
            use rand_core::SeedableRng;
            use rsa::pkcs8::EncodePrivateKey;
            let mut chacha = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
            let rsa = rsa::RsaPrivateKey::new(&mut chacha, 2048).expect("RSA-2048 key");
            let der = rsa.to_pkcs8_der().expect("PKCS#8");
            let key = SigningKey::from_pkcs8_der(der.as_bytes()).expect("RSA signing key");
            let cert = rcgen_self_signed(&key, &rcgen::PKCS_RSA_SHA256);
            (key, cert)
        }
        // rcgen makes neither (P-521 needs its aws-lc backend, PSS keys ring lacks): OpenSSL's
        // own files, valid 2023-01-01..2033-01-01, around NOW.
        KeyKind::P521 => openssl_made(
            include_str!("../vectors/pem/p521_key.pem"),
            include_str!("../vectors/pem/p521_certificate.pem"),
        ),
        KeyKind::RsaPss => openssl_made(
            include_str!("../vectors/pem/rsa_pss_key.pem"),
            include_str!("../vectors/pem/rsa_pss_certificate.pem"),
        ),
        KeyKind::RsaPssSha384 => openssl_made(
            include_str!("../vectors/pem/rsa_pss_sha384_key.pem"),
            include_str!("../vectors/pem/rsa_pss_sha384_certificate.pem"),
        ),
        // rcgen 0.13 has no ML-DSA.
        KeyKind::MlDsa44 => openssl_made(
            include_str!("../vectors/pem/mldsa44_key.pem"),
            include_str!("../vectors/pem/mldsa44_certificate.pem"),
        ),
        KeyKind::MlDsa65 => openssl_made(
            include_str!("../vectors/pem/mldsa65_key.pem"),
            include_str!("../vectors/pem/mldsa65_certificate.pem"),
        ),
        KeyKind::MlDsa87 => openssl_made(
            include_str!("../vectors/pem/mldsa87_key.pem"),
            include_str!("../vectors/pem/mldsa87_certificate.pem"),
        ),
        // rcgen has no Ed448.
        KeyKind::Ed448 => openssl_made(
            include_str!("../vectors/pem/ed448_key.pem"),
            include_str!("../vectors/pem/ed448_certificate.pem"),
        ),
    };
    let ck = CertifiedKey {
        chain: vec![cert.clone()],
        key: Arc::new(key),
    };
    (ck, cert)
}

/// A key and its one self-signed certificate, from PEM.
fn openssl_made(key: &str, cert: &str) -> (SigningKey, Vec<u8>) {
    let key = SigningKey::from_pem(key).expect("OpenSSL key");
    let mut certs = tls13lab::crypto::cert::certs_from_pem(cert).expect("OpenSSL certificate");
    assert_eq!(certs.len(), 1);
    (key, certs.remove(0))
}

/// rcgen signs the certificate with its own copy of the key (PKCS#8 through aws-lc-rs).
fn rcgen_self_signed(key: &SigningKey, alg: &'static rcgen::SignatureAlgorithm) -> Vec<u8> {
    let pkcs8 = key.to_pkcs8_der().expect("PKCS#8 of our key");
    let der = rustls_pki_types::PrivatePkcs8KeyDer::from(pkcs8.as_slice());
    let kp = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&der, alg).expect("rcgen key pair");
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, "localhost");
    params.distinguished_name = dn;
    params.not_before = rcgen::date_time_ymd(2023, 1, 1);
    params.not_after = rcgen::date_time_ymd(2026, 1, 1);
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.self_signed(&kp).expect("self-signed").der().to_vec()
}

/// A server configuration around a key of `kind`, with the root a client must trust. It
/// records what the tests check (`Observe::PUBLIC`: records, messages, layouts, no secrets);
/// a configuration's default records nothing.
pub fn server_config(kind: KeyKind) -> (ServerConfig, Vec<u8>) {
    let (ck, root) = certified(kind);
    let mut s = ServerConfig::new(ck);
    s.observe = tls13lab::Observe::PUBLIC;
    (s, root)
}

/// A client configuration that validates the chain against `root` for `localhost`.
pub fn client_config(root: Vec<u8>) -> ClientConfig {
    lab::demo::client_config(root)
}

/// The records of `events`.
pub fn records(events: &[Event]) -> Vec<&RecordEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Record(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// Checks the ledger's byte accounting (RFC 8446 §5.1, §5.2):
/// - every record: `wire_len = 5 + payload_len`, the header says the same type and length;
/// - protected: `payload = plaintext + 1 + padding + tag`, outer type application_data, the tag
///   the negotiated suite's (16 bytes, 8 under AES-128-CCM-8; 0-RTT records: the ticket's suite);
/// - plaintext: `payload = plaintext`, no padding, no tag, epoch plaintext;
/// - the totals are the sums of the records, and the bytes add up from their parts;
/// - the handshake parts of each record add up to its plaintext, and the parts of every message
///   add up to its length.
pub fn check_ledger(l: &Ledger) {
    let mut want = tls13lab::ledger::Totals::default();
    let mut other_plain = [0usize; 2];
    // Per direction: (type, length, bytes still expected) of the message being split.
    let mut open: [Option<(HandshakeType, usize, usize)>; 2] = [None, None];
    for (i, r) in l.records.iter().enumerate() {
        let rec = &r.record;
        let at = format!("record #{} {:?}", r.index, rec);
        assert_eq!(r.index, i + 1, "{at}");
        assert_eq!(rec.wire_len, 5 + rec.payload_len, "{at}");
        assert_eq!(rec.header.len(), 5, "{at}");
        assert_eq!(
            usize::from(u16::from_be_bytes([rec.header[3], rec.header[4]])),
            rec.payload_len,
            "{at}"
        );
        assert_eq!(ContentType::from(rec.header[0]), rec.wire_type, "{at}");
        assert_eq!(rec.content.len(), rec.plaintext_len, "{at}");
        if rec.seq.is_some() {
            assert_eq!(rec.wire_type, ContentType::ApplicationData, "{at}");
            let suite_tag = l
                .negotiated
                .as_ref()
                .and_then(|n| tls13lab::crypto::aead::suite_params(n.suite))
                .map(|p| p.aead.tag_len());
            match suite_tag {
                Some(tag) if rec.epoch != Epoch::Early => assert_eq!(rec.tag_len, tag, "{at}"),
                _ => assert!(matches!(rec.tag_len, 8 | 16), "{at}"),
            }
            assert_eq!(
                rec.payload_len,
                rec.plaintext_len + 1 + rec.padding_len + rec.tag_len,
                "{at}"
            );
            assert_ne!(rec.epoch, Epoch::Plaintext, "{at}");
        } else {
            assert_eq!(rec.payload_len, rec.plaintext_len, "{at}");
            assert_eq!((rec.padding_len, rec.tag_len), (0, 0), "{at}");
            assert_eq!(rec.wire_type, rec.inner_type, "{at}");
            assert_eq!(rec.epoch, Epoch::Plaintext, "{at}");
        }
        let d = dir_index(rec.direction);
        let t = match rec.direction {
            Direction::ClientToServer => &mut want.client_to_server,
            Direction::ServerToClient => &mut want.server_to_client,
        };
        t.bytes += rec.wire_len;
        t.records += 1;
        t.header_bytes += 5;
        t.tag_bytes += rec.tag_len;
        t.padding_bytes += rec.padding_len;
        t.inner_type_bytes += usize::from(rec.seq.is_some());
        match rec.inner_type {
            ContentType::Handshake => t.handshake_bytes += rec.plaintext_len,
            ContentType::ApplicationData => t.app_bytes += rec.plaintext_len,
            _ => other_plain[d] += rec.plaintext_len,
        }
        if rec.inner_type == ContentType::Handshake {
            let here: usize = r.messages.iter().map(|m| m.bytes_here).sum();
            assert_eq!(
                here, rec.plaintext_len,
                "message parts of {at}: {:?}",
                r.messages
            );
            for m in &r.messages {
                let (typ, len, left) = open[d].unwrap_or((m.typ, m.len, m.len));
                assert_eq!((m.typ, m.len), (typ, len), "{at}: {:?}", r.messages);
                assert_eq!(m.offset, len - left, "{at}: {:?}", r.messages);
                assert!(
                    m.bytes_here <= left && m.bytes_here > 0,
                    "{at}: {:?}",
                    r.messages
                );
                open[d] = (left > m.bytes_here).then(|| (typ, len, left - m.bytes_here));
            }
        } else {
            assert!(r.messages.is_empty(), "{at}");
        }
    }
    assert_eq!(l.totals, want, "totals are the sums of the records");
    for (d, t) in [l.totals.client_to_server, l.totals.server_to_client]
        .iter()
        .enumerate()
    {
        assert_eq!(
            t.bytes,
            t.header_bytes
                + t.handshake_bytes
                + t.app_bytes
                + other_plain[d]
                + t.inner_type_bytes
                + t.padding_bytes
                + t.tag_bytes,
            "the bytes of direction {d} add up from their parts"
        );
    }
}

/// The handshake messages of `events` in `dir`, in order: (type, bytes).
pub fn handshake_messages(events: &[Event], dir: Direction) -> Vec<(HandshakeType, Vec<u8>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Handshake(h) if h.direction == dir => Some((h.typ, h.bytes.clone())),
            _ => None,
        })
        .collect()
}

/// The ledger splits each direction's records into exactly the handshake messages the events
/// report, and the record stream of one side mirrors the other's (everything sent was received,
/// byte for byte, under the same keys and sequence numbers).
pub fn check_mirror(client_events: &[Event], server_events: &[Event]) {
    for (dir, sender, receiver) in [
        (Direction::ClientToServer, client_events, server_events),
        (Direction::ServerToClient, server_events, client_events),
    ] {
        let strip = |evs: &[Event]| -> Vec<RecordEvent> {
            records(evs)
                .into_iter()
                .filter(|r| r.direction == dir)
                .map(|r| RecordEvent {
                    time_ms: 0,
                    ..r.clone()
                })
                .collect()
        };
        assert_eq!(strip(sender), strip(receiver), "records {dir:?}");
        assert_eq!(
            handshake_messages(sender, dir),
            handshake_messages(receiver, dir),
            "handshake messages {dir:?}"
        );
        // The ledger's message parts name the same messages, in order.
        for evs in [sender, receiver] {
            let ledger = Ledger::from_events(evs);
            let mut from_ledger = Vec::new();
            for r in ledger.records.iter().filter(|r| r.record.direction == dir) {
                for m in &r.messages {
                    match from_ledger.last_mut() {
                        Some((t, len, got)) if *got < *len => {
                            assert_eq!(*t, m.typ);
                            *got += m.bytes_here;
                        }
                        _ => from_ledger.push((m.typ, m.len, m.bytes_here)),
                    }
                }
            }
            let want: Vec<_> = handshake_messages(evs, dir)
                .into_iter()
                .map(|(t, b)| (t, b.len(), b.len()))
                .collect();
            assert_eq!(from_ledger, want, "ledger messages {dir:?}");
        }
    }
}

fn dir_index(d: Direction) -> usize {
    match d {
        Direction::ClientToServer => 0,
        Direction::ServerToClient => 1,
    }
}
