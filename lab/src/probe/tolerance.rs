//! Tolerance: ClientHellos a server must take whatever their size and however they are cut.
//!
//! RFC 8446 §5.1: handshake messages may be fragmented across records and records coalesced,
//! and TCP gives no boundaries at all; a server that needs its ClientHello in one record, or
//! its first record in one segment, breaks with large (post-quantum) hellos (tldr.fail). Each
//! case is a real handshake: the client's own ClientHello, re-framed and cut by the probe, so
//! that a server that reads it correctly completes.

use serde::Serialize;
use tls13lab::config::HelloPadding;
use tls13lab::messages::enums::{
    CipherSuite, ExtensionType, NamedGroup, PskKeyExchangeMode, SignatureScheme,
};
use tls13lab::messages::extensions::Extension;
use tls13lab::ClientConfig;

use super::session::{self, drive, first_record_len, Plan};
use super::Target;

/// One tolerance case and what the server did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToleranceCase {
    /// The case's name.
    pub name: String,
    /// What was sent.
    pub what: String,
    /// The ClientHello's size (message with its header).
    pub hello_bytes: usize,
    /// Records and TCP segments it went out in.
    pub records: usize,
    /// See `records`.
    pub segments: usize,
    /// What happened.
    pub answer: String,
    /// Whether the handshake completed.
    pub ok: bool,
}

/// The largest plaintext record (RFC 8446 §5.1).
const MAX_FRAGMENT: usize = 1 << 14;

/// How the first flight is cut.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// Records of 2^14, all in one segment.
    Whole,
    /// The first record split after its 5-byte header.
    AfterHeader,
    /// The first record split in its middle.
    MidRecord,
    /// Records of 512 bytes, all in one segment.
    SmallRecords,
}

impl Cut {
    fn label(self) -> &'static str {
        match self {
            Cut::Whole => "one segment",
            Cut::AfterHeader => "record header alone in the first segment",
            Cut::MidRecord => "first record split in its middle",
            Cut::SmallRecords => "512-byte records, one segment",
        }
    }
    fn tag(self) -> &'static str {
        match self {
            Cut::Whole => "whole",
            Cut::AfterHeader => "split-5",
            Cut::MidRecord => "split-mid",
            Cut::SmallRecords => "records-512",
        }
    }
    fn apply(self, flight: &[u8]) -> Vec<Vec<u8>> {
        let record = if matches!(self, Cut::SmallRecords) {
            512
        } else {
            MAX_FRAGMENT
        };
        let framed = session::reshape(flight, record, &[]);
        let bytes = framed.concat();
        let cut = match self {
            Cut::Whole | Cut::SmallRecords => return framed,
            Cut::AfterHeader => 5,
            Cut::MidRecord => first_record_len(&bytes) / 2,
        };
        session::reshape(flight, record, &[cut])
    }
}

/// ClientHello sizes: 1.5, 4, 16 and 64 KB (the last just under the 2^16 limit of the
/// extensions block, RFC 8446 §4.1.2).
const SIZES: [(usize, &str); 4] = [
    (1536, "1.5KB"),
    (4096, "4KB"),
    (16384, "16KB"),
    (65000, "64KB"),
];

/// Runs the tolerance battery.
pub fn run(target: &Target) -> Vec<ToleranceCase> {
    let mut out = Vec::new();
    for (size, label) in SIZES {
        for cut in [
            Cut::Whole,
            Cut::AfterHeader,
            Cut::MidRecord,
            Cut::SmallRecords,
        ] {
            let mut c = target.config();
            // RFC 7685 padding brings the hello to the size.
            c.hello_padding = HelloPadding::ToSize(size);
            out.push(case(
                target,
                format!("{label} {}", cut.tag()),
                format!("{label} ClientHello (padding), {}", cut.label()),
                c,
                cut,
            ));
        }
    }
    let mut c = target.config();
    c.groups = tls13lab::crypto::kx::supported_groups().to_vec();
    c.key_shares = c.groups.clone();
    c.reuse_x25519 = false;
    out.push(case(
        target,
        "many key shares".into(),
        format!("a key share for each of our {} groups", c.groups.len()),
        c,
        Cut::Whole,
    ));
    out.push(case(
        target,
        "GREASE".into(),
        "GREASE (RFC 8701) suites, groups, signature schemes, PSK modes, ALPN and extensions"
            .into(),
        grease(target.config()),
        Cut::Whole,
    ));
    let mut c = target.config();
    for (typ, len) in [(0x4e4e_u16, 0usize), (0x6b6b, 7), (0xfe77, 300)] {
        c.extra_extensions.push(Extension::Unknown {
            typ: ExtensionType::from(typ),
            body: vec![0x5a; len],
        });
    }
    out.push(case(
        target,
        "unknown extensions".into(),
        "three unassigned extension types (empty, 7 and 300 bytes)".into(),
        c,
        Cut::Whole,
    ));
    let mut c = target.config();
    for g in [0x01fe_u16, 0x3f3f, 0x7777] {
        c.groups.insert(0, NamedGroup::from(g));
    }
    c.cipher_suites.insert(0, CipherSuite::from(0x13fe));
    c.signature_schemes.insert(0, SignatureScheme::from(0x0ff0));
    out.push(case(
        target,
        "unknown code points".into(),
        "unassigned groups, a suite and a signature scheme first in their lists".into(),
        c,
        Cut::Whole,
    ));
    out
}

/// GREASE everywhere a client config can put it (RFC 8701 §3).
fn grease(mut c: ClientConfig) -> ClientConfig {
    let g = lab_grease();
    c.cipher_suites.insert(0, CipherSuite::from(g[0]));
    c.groups.insert(0, NamedGroup::from(g[1]));
    c.signature_schemes.insert(0, SignatureScheme::from(g[2]));
    c.psk_modes.insert(
        0,
        PskKeyExchangeMode::from(crate::hello::GREASE_PSK_MODES[1]),
    );
    c.alpn = vec![vec![0x2a, 0x2a], b"http/1.1".to_vec()];
    c.extra_extensions.insert(
        0,
        Extension::Unknown {
            typ: ExtensionType::from(g[3]),
            body: Vec::new(),
        },
    );
    c.extra_extensions.push(Extension::Unknown {
        typ: ExtensionType::from(g[4]),
        body: vec![0],
    });
    c
}

/// Five distinct GREASE values (fixed, so runs compare).
fn lab_grease() -> [u16; 5] {
    let v = crate::hello::GREASE_VALUES;
    [v[0], v[5], v[10], v[3], v[12]]
}

fn case(target: &Target, name: String, what: String, c: ClientConfig, cut: Cut) -> ToleranceCase {
    let mut plan = Plan::new(c);
    plan.shape = Box::new(move |f: &[u8]| cut.apply(f));
    let r = drive(target, plan);
    let segs = cut.apply(&r.first_flight);
    let bytes = segs.concat();
    let hs = session::handshake_stream(&bytes).unwrap_or_default();
    let mut records = 0;
    let mut rest = &bytes[..];
    while rest.len() >= 5 {
        records += 1;
        let l = first_record_len(rest).min(rest.len());
        rest = &rest[l..];
    }
    ToleranceCase {
        name,
        what,
        hello_bytes: hs.len(),
        records,
        segments: segs.len(),
        ok: r.outcome == session::Outcome::Completed,
        answer: r.outcome.text(),
    }
}
