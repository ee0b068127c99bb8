//! Conformance: ClientHellos and records a client can send that RFC 8446 forbids, each with
//! the alert the RFC prescribes, and what the server did.
//!
//! The ClientHello is a real client's first flight, decoded with the core's codec, broken in
//! one place and re-encoded; the server's first answer is read from the plaintext records
//! ([`super::raw`]). Cases that follow a valid ClientHello (a bad ChangeCipherSpec, a tampered
//! Finished record) run a real handshake, so the alert can be read under the keys the server
//! sends it with.

use std::sync::Arc;

use serde::Serialize;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::messages::enums::{CipherSuite, ExtensionType, NamedGroup, PskKeyExchangeMode};
use tls13lab::messages::extensions::{Extension, KeyShareEntry, OfferedPsks, PskIdentity};
use tls13lab::messages::handshake::{
    ClientHello, DecodeContext, HandshakeMessage, HandshakePayload,
};
use tls13lab::Client;

use super::raw::{first_answer, Answer};
use super::session::{self, drive, frame, frame_typed, After, Outcome, Plan, Tamper};
use super::Target;

/// One conformance case and the server's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConformanceCase {
    /// The case's name.
    pub name: String,
    /// The RFC 8446 section that prescribes the answer.
    pub section: String,
    /// The alert(s) the RFC prescribes.
    pub expected: String,
    /// What the server sent.
    pub received: String,
    /// `ok`, `other alert`, `no alert` (closed or reset without one), `accepted`, `timeout`.
    pub verdict: String,
}

/// The ClientHello every raw case starts from: X25519 and P-256 offered, an X25519 share,
/// our suites and signature schemes, the target's server_name. Seeded: the same bytes on
/// every run.
pub fn base_hello(target: &Target) -> ClientHello {
    let mut c = target.config();
    c.groups = vec![NamedGroup::X25519, NamedGroup::secp256r1];
    c.key_shares = vec![NamedGroup::X25519];
    c.psk_modes = Vec::new();
    c.cert_compression = Vec::new();
    let client = Client::new(Arc::new(c), Box::new(SeededRandom::from_seed(29)));
    let msg = client.ok().and_then(|mut cl| {
        cl.start(0).ok()?;
        session::handshake_stream(&cl.take_output())
    });
    match msg.and_then(|m| HandshakeMessage::decode(&m, DecodeContext::default()).ok()) {
        Some(HandshakeMessage {
            payload: HandshakePayload::ClientHello(ch),
            ..
        }) => ch,
        // Our own client's hello always decodes; an empty one would be refused everywhere.
        _ => ClientHello {
            legacy_version: 0x0303,
            random: [0; 32],
            legacy_session_id: Vec::new(),
            cipher_suites: vec![CipherSuite::TLS_AES_128_GCM_SHA256],
            legacy_compression_methods: vec![0],
            extensions: Vec::new(),
        },
    }
}

/// `ch` as a handshake message with its header.
pub fn encode(ch: ClientHello) -> Vec<u8> {
    HandshakeMessage::new(HandshakePayload::ClientHello(ch)).encoded
}

/// A ClientHello offering only TLS 1.2 (no supported_versions, TLS 1.2 ECDHE suites first,
/// ec_point_formats), in one record.
pub fn tls12_only_hello(target: &Target) -> Vec<u8> {
    let mut ch = base_hello(target);
    ch.extensions.retain(|e| {
        !matches!(
            e.typ(),
            ExtensionType::SupportedVersions | ExtensionType::KeyShare
        )
    });
    // ECDHE-ECDSA/RSA with AES-GCM and ChaCha20 (RFC 5289, RFC 7905).
    let tls12 = [0xc02b_u16, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8];
    ch.cipher_suites = tls12.iter().map(|s| CipherSuite::from(*s)).collect();
    ch.extensions.push(Extension::Unknown {
        typ: ExtensionType::from(11), // ec_point_formats: uncompressed (RFC 8422 §5.1.2)
        body: vec![1, 0],
    });
    frame(&encode(ch), 1 << 14)
}

fn record(msg: &[u8]) -> Vec<u8> {
    frame(msg, 1 << 14)
}

/// The header's length field set to `len`.
fn with_length(mut msg: Vec<u8>, len: usize) -> Vec<u8> {
    let l = (len as u32).to_be_bytes();
    msg[1..4].copy_from_slice(&l[1..]);
    msg
}

/// In an expected list: the RFC forbids sending this but prescribes no alert, so a server
/// that ignores it conforms too.
const IGNORED: &str = "ignored";

fn verdict_raw(expected: &[&str], a: &Answer) -> String {
    match a {
        Answer::Alert(x) if expected.contains(&x.as_str()) => "ok".into(),
        Answer::Alert(_) => "other alert".into(),
        Answer::ServerHello | Answer::HelloRetryRequest if expected.contains(&IGNORED) => {
            "ok".into()
        }
        Answer::ServerHello | Answer::HelloRetryRequest | Answer::OlderServerHello(_) => {
            "accepted".into()
        }
        Answer::Ended(Outcome::Timeout) => "timeout".into(),
        Answer::Ended(Outcome::Closed | Outcome::Reset) => "no alert".into(),
        Answer::Ended(o) => o.text(),
        Answer::Other(_) => "other answer".into(),
    }
}

fn verdict_run(expected: &[&str], o: &Outcome) -> String {
    match o {
        Outcome::Alert(x) if expected.contains(&x.as_str()) => "ok".into(),
        Outcome::Alert(_) => "other alert".into(),
        Outcome::Completed => "accepted".into(),
        Outcome::Timeout => "timeout".into(),
        Outcome::Closed | Outcome::Reset => "no alert".into(),
        other => other.text(),
    }
}

/// Runs the conformance battery.
pub fn run(target: &Target) -> Vec<ConformanceCase> {
    let mut out = Vec::new();
    let base = base_hello(target);
    let msg = encode(base.clone());
    let mut raw = |name: &str, section: &str, expected: &[&str], segments: Vec<Vec<u8>>| {
        let a = first_answer(target, &segments);
        out.push(ConformanceCase {
            name: name.into(),
            section: section.into(),
            expected: expected.join(" or "),
            received: a.text(),
            verdict: verdict_raw(expected, &a),
        });
    };
    let mutate = |f: &dyn Fn(&mut ClientHello)| {
        let mut ch = base.clone();
        f(&mut ch);
        vec![record(&encode(ch))]
    };

    // §6 (decode_error: "a message could not be decoded because some field was out of the
    // specified range or the length of the message was incorrect").
    let n = msg.len();
    raw(
        "truncated ClientHello (10 bytes cut, length adjusted)",
        "§4.1.2, §6",
        &["decode_error"],
        vec![record(&with_length(msg[..n - 10].to_vec(), n - 14))],
    );
    let mut ext = msg.clone();
    ext.extend_from_slice(&[0, 0]);
    raw(
        "trailing bytes after the extensions",
        "§4.1.2, §6",
        &["decode_error"],
        vec![record(&with_length(ext, n - 4 + 2))],
    );
    raw(
        "handshake length 3 short of the body",
        "§4, §6",
        &["decode_error"],
        vec![record(&with_length(msg.clone(), n - 4 - 3))],
    );
    raw(
        "duplicate extension (supported_groups twice)",
        "§4.2",
        &["illegal_parameter"],
        mutate(&|ch| {
            if let Some(i) = ch
                .extensions
                .iter()
                .position(|e| e.typ() == ExtensionType::SupportedGroups)
            {
                let e = ch.extensions[i].clone();
                ch.extensions.insert(i + 1, e);
            }
        }),
    );
    raw(
        "pre_shared_key not the last extension",
        "§4.2.11",
        &["illegal_parameter"],
        mutate(&|ch| {
            ch.extensions.push(Extension::PskKeyExchangeModes(vec![
                PskKeyExchangeMode::PskDheKe,
            ]));
            let at = ch.extensions.len() - 1;
            ch.extensions.insert(
                at,
                Extension::PreSharedKeyClient(OfferedPsks {
                    identities: vec![PskIdentity {
                        identity: vec![0x42; 32],
                        obfuscated_ticket_age: 0,
                    }],
                    binders: vec![vec![0; 32]],
                }),
            );
        }),
    );
    // §4.2.8: "servers MAY check for violations of these rules and abort the handshake with
    // an illegal_parameter alert": a server that does not check conforms too.
    raw(
        "key share for a group not in supported_groups",
        "§4.2.8",
        &["illegal_parameter", IGNORED],
        mutate(&|ch| {
            for e in &mut ch.extensions {
                if let Extension::SupportedGroups(g) = e {
                    *g = vec![NamedGroup::secp256r1];
                }
            }
        }),
    );
    raw(
        "X25519 key share of 31 bytes",
        "§4.2.8.2, §7.4.2",
        &["illegal_parameter", "decode_error"],
        mutate(&|ch| {
            for e in &mut ch.extensions {
                if let Extension::KeyShareClient(s) = e {
                    for k in s.iter_mut() {
                        k.key_exchange.truncate(31);
                    }
                }
            }
        }),
    );
    raw(
        "P-256 key share not on the curve",
        "§4.2.8.2",
        &["illegal_parameter"],
        mutate(&|ch| {
            // P-256 alone in supported_groups: a server that takes the handshake must read
            // this share (none can ask for another group instead).
            for e in &mut ch.extensions {
                match e {
                    Extension::KeyShareClient(s) => {
                        let mut point = vec![4];
                        point.extend_from_slice(&[1; 64]);
                        *s = vec![KeyShareEntry {
                            group: NamedGroup::secp256r1,
                            key_exchange: point,
                        }];
                    }
                    Extension::SupportedGroups(g) => *g = vec![NamedGroup::secp256r1],
                    _ => {}
                }
            }
        }),
    );
    raw(
        "legacy_version 0x0300",
        "§D.5",
        &["protocol_version"],
        mutate(&|ch| ch.legacy_version = 0x0300),
    );
    raw(
        "legacy_compression_methods [1]",
        "§4.1.2",
        &["illegal_parameter"],
        mutate(&|ch| ch.legacy_compression_methods = vec![1]),
    );
    raw(
        "no supported_versions, only TLS 1.3 suites",
        "§4.2.1",
        &["protocol_version", "handshake_failure"],
        mutate(&|ch| {
            ch.extensions
                .retain(|e| e.typ() != ExtensionType::SupportedVersions)
        }),
    );
    let ccs = frame_typed(20, &[1], 16);
    raw(
        "ChangeCipherSpec before the ClientHello",
        "§5",
        &["unexpected_message"],
        vec![[ccs.clone(), record(&msg)].concat()],
    );
    let half = msg.len() / 2;
    raw(
        "ChangeCipherSpec between two fragments of the ClientHello",
        "§5.1",
        &["unexpected_message"],
        vec![[
            frame(&msg[..half], 1 << 14),
            ccs,
            frame(&msg[half..], 1 << 14),
        ]
        .concat()],
    );
    raw(
        "empty handshake record before the ClientHello",
        "§5.1",
        // §5.1 forbids sending one and names no alert: refusing it as malformed
        // (decode_error, §6) or as out of place (unexpected_message) or ignoring it conform.
        &["unexpected_message", "decode_error", IGNORED],
        vec![[vec![22, 3, 1, 0, 0], record(&msg)].concat()],
    );
    let mut big = base.clone();
    big.extensions.push(Extension::Padding(vec![0; 16500]));
    let big = encode(big);
    raw(
        "plaintext record over 2^14 bytes",
        "§5.1",
        &["record_overflow"],
        vec![frame_typed(22, &big, big.len())],
    );

    // After a valid ClientHello: real handshakes.
    let mut plan = Plan::new(target.config());
    plan.shape = Box::new(|f: &[u8]| vec![[f.to_vec(), frame_typed(20, &[2], 16)].concat()]);
    plan.after = After::AwaitAlert;
    let r = drive(target, plan);
    let expected = ["unexpected_message"];
    out.push(ConformanceCase {
        name: "ChangeCipherSpec of one byte 0x02 after the ClientHello".into(),
        section: "§5".into(),
        expected: expected.join(" or "),
        received: r.outcome.text(),
        verdict: verdict_run(&expected, &r.outcome),
    });
    let mut plan = Plan::new(target.config());
    plan.tamper = Tamper::FinishedRecord;
    plan.after = After::AwaitAlert;
    let r = drive(target, plan);
    let expected = ["bad_record_mac"];
    out.push(ConformanceCase {
        name: "client Finished record with a corrupted AEAD tag".into(),
        section: "§5.2".into(),
        expected: expected.join(" or "),
        received: r.outcome.text(),
        verdict: verdict_run(&expected, &r.outcome),
    });
    let mut plan = Plan::new(target.config());
    plan.tamper = Tamper::WrongFinished;
    plan.after = After::AwaitAlert;
    let r = drive(target, plan);
    let expected = ["decrypt_error"];
    out.push(ConformanceCase {
        name: "client Finished with wrong verify_data".into(),
        section: "§4.4.4".into(),
        expected: expected.join(" or "),
        received: r.outcome.text(),
        verdict: verdict_run(&expected, &r.outcome),
    });
    out
}
