//! The research instruments (lab/src/, docs/hello.md, docs/simulate.md, docs/ladder.md,
//! docs/dissect.md): the ClientHello lab's byte accounting and presets, the ladder SVG, the
//! network simulator's round-trip claims, pcapng export and dissection (checked against tshark
//! when it is installed).

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lab::hello::{
    self, describe, report, Framing, Grease, HelloReport, HelloSpec, ItemKind, PskOffer,
};
use lab::simulate::{self, Kx, Network, Outcome, Plan};
use lab::tcp::Link;
use tls13lab::config::HelloPadding;
use tls13lab::events::EarlyDataStatus;
use tls13lab::messages::layout::check_tiling;
use tls13lab::messages::{
    CipherSuite, DecodeContext, Extension, HandshakeMessage, HandshakePayload, NamedGroup,
};

const BIN: &str = env!("CARGO_BIN_EXE_tls13lab");
const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/..",
    "/tests/vectors/clienthello"
);

fn tls13lab(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("SSLKEYLOGFILE")
        .output()
        .expect("run tls13lab");
    assert!(
        out.status.success(),
        "tls13lab {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

// ------------------------------------------------------------------------------ hello: sizes

/// Every way the lab accounts for bytes must add up exactly.
fn assert_adds_up(r: &HelloReport) {
    let label = &r.label;
    // The layout tiles the message; the items tile it too.
    check_tiling(&r.layout, r.message_len).unwrap_or_else(|e| panic!("{label}: {e}"));
    let mut at = 0;
    for it in &r.items {
        assert_eq!(
            it.offset, at,
            "{label}: {} starts where the previous ended",
            it.name
        );
        at += it.len;
        if it.kind == ItemKind::Extension {
            let parts: usize = it.parts.iter().map(|p| p.len).sum();
            assert_eq!(parts, it.len, "{label}: parts of {} add up", it.name);
            let body = u16::from_be_bytes([r.bytes[it.offset + 2], r.bytes[it.offset + 3]]);
            assert_eq!(
                usize::from(body) + 4,
                it.len,
                "{label}: {} length field",
                it.name
            );
        }
    }
    assert_eq!(at, r.message_len, "{label}: items cover the message");
    let ext_items: usize = r
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Extension || i.name == "extensions length")
        .map(|i| i.len)
        .sum();
    assert_eq!(ext_items, r.extensions_len, "{label}: extension block");
    // The header's length is the body's.
    let body =
        (usize::from(r.bytes[1]) << 16) | (usize::from(r.bytes[2]) << 8) | usize::from(r.bytes[3]);
    assert_eq!(body + 4, r.message_len, "{label}: handshake length");
    // Records carry the message once, in order, each 5 + fragment.
    let frags: usize = r.records.iter().map(|x| x.fragment_len).sum();
    assert_eq!(frags, r.message_len, "{label}: fragments");
    assert_eq!(
        r.record_bytes,
        r.message_len + 5 * r.records.len(),
        "{label}: record bytes"
    );
    assert_eq!(
        r.records_hex.len(),
        2 * r.record_bytes,
        "{label}: record hex"
    );
    let mut stream = 0;
    let mut msg = 0;
    for rec in &r.records {
        assert_eq!(rec.stream_offset, stream);
        assert_eq!(rec.msg_offset, msg);
        assert_eq!(rec.wire_len, 5 + rec.fragment_len);
        assert!(rec.fragment_len <= 16_384);
        stream += rec.wire_len;
        msg += rec.fragment_len;
    }
    // Segments carry the records once, each at most one MSS.
    let seg: usize = r.segments.iter().map(|s| s.payload_len).sum();
    assert_eq!(seg, r.record_bytes, "{label}: segments");
    assert!(r.segments.iter().all(|s| s.payload_len <= r.link.mss));
    assert_eq!(
        r.segments.len(),
        r.record_bytes.div_ceil(r.link.mss),
        "{label}: segment count"
    );
    assert_eq!(
        r.packet_bytes,
        r.record_bytes + r.segments.len() * (r.link.ip_header + r.link.tcp_header),
        "{label}: packet bytes"
    );
    assert_eq!(r.fits_one_segment, r.segments.len() == 1);
    // The bytes decode, and re-encode to themselves.
    let m = HandshakeMessage::decode(&r.bytes, DecodeContext::default())
        .unwrap_or_else(|e| panic!("{label}: the built ClientHello does not decode: {e:?}"));
    assert_eq!(HandshakeMessage::new(m.payload).encoded, r.bytes);
}

fn specs() -> Vec<HelloSpec> {
    let mut v = Vec::new();
    for (name, _) in hello::PRESETS {
        v.push(hello::preset(name).unwrap());
    }
    let mut s = HelloSpec::new("everything");
    s.grease = Grease::ALL;
    s.config.key_shares = vec![
        NamedGroup::X25519MLKEM768,
        NamedGroup::X25519,
        NamedGroup::X25519,
    ];
    s.config.groups = vec![
        NamedGroup::X25519MLKEM768,
        NamedGroup::X25519,
        NamedGroup::X448,
    ];
    s.config.alpn = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    s.config.compat_mode = true;
    s.psk = Some(PskOffer {
        identity_len: 200,
        early_data: true,
        suite: CipherSuite::TLS_AES_256_GCM_SHA384,
    });
    s.padding = HelloPadding::ToSize(2000);
    v.push(s);
    let mut s = HelloSpec::new("synthetic shares");
    s.config.groups = vec![
        NamedGroup::brainpoolP256r1tls13,
        NamedGroup::brainpoolP384r1tls13,
        NamedGroup::brainpoolP512r1tls13,
    ];
    s.config.key_shares = s.config.groups.clone();
    v.push(s);
    let mut s = HelloSpec::new("avoid 256..511");
    // The pre-2026 default's single X25519 share: a hello that lands in 256..511 unpadded.
    s.config.groups = vec![NamedGroup::X25519];
    s.config.key_shares = vec![NamedGroup::X25519];
    s.config.alpn = vec![b"h2".to_vec()];
    s.config.compat_mode = true;
    s.psk = Some(PskOffer {
        identity_len: 100,
        early_data: false,
        suite: CipherSuite::TLS_AES_128_GCM_SHA256,
    });
    s.padding = HelloPadding::Avoid256To511;
    v.push(s);
    let mut s = HelloSpec::new("x448, secp521r1 and ffdhe8192 shares");
    s.config.groups = vec![
        NamedGroup::X448,
        NamedGroup::secp521r1,
        NamedGroup::ffdhe8192,
    ];
    s.config.key_shares = s.config.groups.clone();
    v.push(s);
    v
}

/// Issue 28: `tls13lab hello` with no option is the 2026 default: an X25519MLKEM768 share first,
/// an X25519 share beside it with the same X25519 key, and the old shape as a preset.
#[test]
fn hello_with_no_option_shows_a_hybrid_share() {
    let out = tls13lab(&["hello"]);
    let ks = out
        .lines()
        .find(|l| l.trim_start().starts_with("key_share (0x0033)"))
        .unwrap_or_else(|| panic!("no key_share line:\n{out}"));
    assert!(ks.ends_with("X25519MLKEM768 1216, x25519 32"), "{ks}");
    let built = hello::build(&hello::preset("tls13lab").unwrap()).unwrap();
    let shares = built
        .hello
        .extensions
        .iter()
        .find_map(|e| match e {
            Extension::KeyShareClient(l) => Some(l.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(shares[0].group, NamedGroup::X25519MLKEM768);
    assert_eq!(shares[1].group, NamedGroup::X25519);
    assert_eq!(shares[0].key_exchange[1184..], shares[1].key_exchange[..]);
    let old = tls13lab(&["hello", "--preset", "tls13lab-2023"]);
    assert!(old.contains("x25519 32\n"), "{old}");
    assert!(!old.contains("X25519MLKEM768 1216"), "{old}");
}

#[test]
fn hello_sizes_add_up_for_every_span() {
    for link in [Link::default(), Link::ipv6(1280, 12).unwrap()] {
        for spec in specs() {
            let r = report(&spec, &Framing::default(), link).unwrap();
            assert_adds_up(&r);
            // Split across records at a few offsets, and into small fragments.
            let built = hello::build(&spec).unwrap();
            let len = built.message.encoded.len();
            for framing in [
                Framing {
                    split_at: vec![1, 5, len / 2, len - 1],
                    ..Framing::default()
                },
                Framing {
                    max_fragment: 100,
                    ..Framing::default()
                },
            ] {
                let r = describe(&built, &framing, link).unwrap();
                assert_adds_up(&r);
            }
        }
    }
}

#[test]
fn hello_sizes_real_x448_secp521r1_and_ffdhe8192_shares() {
    // The lab's client makes these shares for real now (RFC 7748, §4.2.8.2, RFC 7919); only the
    // brainpool groups still get random bytes of the right size.
    let specs = specs();
    let spec = specs
        .iter()
        .find(|s| s.label == "x448, secp521r1 and ffdhe8192 shares")
        .unwrap();
    let built = hello::build(spec).unwrap();
    assert!(
        built.notes.iter().all(|n| !n.contains("random bytes")),
        "{:?}",
        built.notes
    );
    let shares = match built
        .hello
        .find(tls13lab::messages::ExtensionType::KeyShare)
    {
        Some(Extension::KeyShareClient(v)) => v.clone(),
        other => panic!("{other:?}"),
    };
    let sizes: Vec<(NamedGroup, usize)> = shares
        .iter()
        .map(|s| (s.group, s.key_exchange.len()))
        .collect();
    assert_eq!(
        sizes,
        [
            (NamedGroup::X448, 56),
            (NamedGroup::secp521r1, 133),
            (NamedGroup::ffdhe8192, 1024),
        ]
    );
    // Real shares: a server accepts each (a random 133-byte string is not a P-521 point).
    for s in &shares {
        tls13lab::crypto::kx::server_respond(
            s.group,
            &s.key_exchange,
            &mut tls13lab::crypto::random::SeededRandom::from_seed(1),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", s.group));
    }
    // key_share = 2-byte vector length + (2 + 2 + share) per entry.
    let r = report(spec, &Framing::default(), Link::default()).unwrap();
    let ks = r.items.iter().find(|i| i.code == Some(51)).unwrap();
    assert_eq!(
        ks.len,
        4 + 2 + (4 + 56) + (4 + 133) + (4 + 1024),
        "{}",
        ks.name
    );

    let brainpool = specs
        .iter()
        .find(|s| s.label == "synthetic shares")
        .unwrap();
    let built = hello::build(brainpool).unwrap();
    assert_eq!(
        built
            .notes
            .iter()
            .filter(|n| n.contains("random bytes"))
            .count(),
        3,
        "{:?}",
        built.notes
    );
}

#[test]
fn hello_edits_do_what_they_say() {
    let specs = specs();
    // The specs after the presets: everything, synthetic shares, avoid 256..511.
    let after = hello::PRESETS.len();
    let r = report(&specs[after], &Framing::default(), Link::default()).unwrap();
    assert_eq!(r.label, "everything");
    assert_eq!(r.message_len, 2000, "padded to the target");
    let m = HandshakeMessage::decode(&r.bytes, DecodeContext::default()).unwrap();
    let HandshakePayload::ClientHello(ch) = m.payload else {
        panic!()
    };
    assert!(hello::is_grease(ch.cipher_suites[0].to_repr()));
    assert!(
        hello::is_grease(ch.extensions[0].typ().to_repr()),
        "GREASE extension first"
    );
    let n = ch.extensions.len();
    assert!(
        matches!(ch.extensions[n - 1], Extension::PreSharedKeyClient(_)),
        "PSK last"
    );
    assert!(
        matches!(ch.extensions[n - 2], Extension::Padding(_)),
        "padding before the PSK"
    );
    assert!(
        hello::is_grease(ch.extensions[n - 3].typ().to_repr()),
        "second GREASE extension"
    );
    let shares = ch
        .extensions
        .iter()
        .find_map(|e| match e {
            Extension::KeyShareClient(v) => Some(v.clone()),
            _ => None,
        })
        .unwrap();
    let groups: Vec<u16> = shares.iter().map(|s| s.group.to_repr()).collect();
    assert!(hello::is_grease(groups[0]));
    assert_eq!(
        &groups[1..],
        [0x11ec, 0x001d, 0x001d],
        "hybrid, x25519 and its duplicate"
    );
    assert_eq!(shares[0].key_exchange.len(), 1);
    assert_eq!(shares[2], shares[3], "the duplicate is a copy");
    assert!(
        r.warnings.iter().any(|w| w.contains("§4.2.8")),
        "{:?}",
        r.warnings
    );
    // The binder matches the edited bytes: a 48-byte SHA-384 binder.
    let Extension::PreSharedKeyClient(psk) = &ch.extensions[n - 1] else {
        panic!()
    };
    assert_eq!(psk.identities[0].identity.len(), 200);
    assert_eq!(psk.binders[0].len(), 48);

    // Synthetic (brainpool) shares have the sizes of their groups' uncompressed points.
    let r = report(&specs[after + 1], &Framing::default(), Link::default()).unwrap();
    let ks = r.items.iter().find(|i| i.code == Some(51)).unwrap();
    assert_eq!(ks.len, 4 + 2 + (4 + 65) + (4 + 97) + (4 + 129));
    // 256..511 is padded to 512.
    let r = report(&specs[after + 2], &Framing::default(), Link::default()).unwrap();
    assert_eq!(r.message_len, 512);
    // Same seed, same bytes; another seed, other random bytes but the same sizes.
    let a = report(&specs[after], &Framing::default(), Link::default()).unwrap();
    assert_eq!(a.hex, r_hex(&specs[after]));
    let mut other = specs[after].clone();
    other.seed = 99;
    let b = report(&other, &Framing::default(), Link::default()).unwrap();
    assert_ne!(a.hex, b.hex);
    assert_eq!(a.message_len, b.message_len);
}

/// The hello lab counts the CCM suites as TLS 1.3 suites (RFC 8446 §B.4; only the unknown
/// 0x1399 is "not TLS 1.3"), and a ticket bound to the first of them, CCM_8, has a SHA-256
/// binder.
#[test]
fn hello_lab_knows_the_ccm_suites() {
    let out = tls13lab(&[
        "hello",
        "--suites",
        "aes128ccm8,aes128ccm,0x1399,aes128gcm",
        "--psk-ticket",
        "40",
        "--early-data",
    ]);
    for want in [
        "2 + 4 suites × 2, 1 not TLS 1.3",
        "bound to TLS_AES_128_CCM_8_SHA256 (binder 32 bytes), 0-RTT offered",
        "1 identity of 40 bytes, binder of 32 bytes",
    ] {
        assert!(out.contains(want), "{want:?} in\n{out}");
    }
}

fn r_hex(spec: &HelloSpec) -> String {
    report(spec, &Framing::default(), Link::default())
        .unwrap()
        .hex
}

#[test]
fn hello_framing_counts_segments() {
    let mut spec = HelloSpec::new("hybrid");
    spec.config.key_shares = vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519];
    let built = hello::build(&spec).unwrap();
    let len = built.message.encoded.len();
    let r = describe(&built, &Framing::default(), Link::default()).unwrap();
    assert!(r.fits_one_segment, "{len}-byte hybrid hello fits 1460");
    // The same bytes over a 1280-byte IPv6 path do not.
    let r = describe(&built, &Framing::default(), Link::ipv6(1280, 0).unwrap()).unwrap();
    assert!(!r.fits_one_segment);
    assert_eq!(r.segments.len(), 2);
    let ks = r.items.iter().find(|i| i.code == Some(51)).unwrap();
    assert_eq!(ks.segments, (1, 2), "the key share straddles the boundary");
    assert!(r.segments[1].carries.iter().any(|c| c == "key_share…"));
    // Two records: 10 more bytes; out-of-range splits are refused.
    let r = describe(
        &built,
        &Framing {
            split_at: vec![100],
            ..Framing::default()
        },
        Link::default(),
    )
    .unwrap();
    assert_eq!(r.records.len(), 2);
    assert_eq!(r.record_bytes, len + 10);
    assert_eq!(&r.records_hex[..10], "1603010064");
    for bad in [0, len] {
        let f = Framing {
            split_at: vec![bad],
            ..Framing::default()
        };
        assert!(
            describe(&built, &f, Link::default()).is_err(),
            "split at {bad}"
        );
    }
}

#[test]
fn hello_compare_shows_the_hybrid_delta_per_extension() {
    let out = tls13lab(&[
        "hello",
        "--compare",
        "x25519",
        "x25519mlkem768,x25519",
        "mlkem1024",
    ]);
    let line = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{out}"))
            .to_string()
    };
    let ks = line("key_share (51)");
    assert!(
        ks.contains("42") && ks.contains("1262 (+1220)") && ks.contains("1578 (+1536)"),
        "{ks}"
    );
    let sv = line("supported_versions");
    assert!(
        !sv[36..].contains('('),
        "unchanged rows show no delta: {sv}"
    );
    assert!(line("handshake message").contains("(+1220)"));
    assert!(line("fits one segment").contains("yes") && line("fits one segment").ends_with("no"));
    // The same in JSON.
    let json = tls13lab(&[
        "hello",
        "--json",
        "--compare",
        "x25519",
        "x25519mlkem768,x25519",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let ks = |i: usize| {
        v[i]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["code"] == 51)
            .unwrap()["len"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(ks(1) - ks(0), 1220);
    assert_eq!(
        v[1]["message_len"].as_u64().unwrap() - v[0]["message_len"].as_u64().unwrap(),
        1220
    );
}

#[test]
fn hello_cli_single_report_hex_and_errors() {
    let out = tls13lab(&[
        "hello",
        "--key-shares",
        "x25519mlkem768,x25519",
        "--grease",
        "all",
        "--split-at",
        "200",
        "--mtu",
        "1280",
        "--ipv6",
        "--hex",
        "--tree",
    ]);
    for want in [
        "GREASE",
        "records            ",
        "2 records (5+200, ",
        "MSS 1220 = MTU 1280 − IPv6 40 − TCP 20",
        "crosses a segment boundary",
        "(record 2 header)",
        "layout (offset, bytes, name)",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    let err = Command::new(BIN)
        .args(["hello", "--grease", "sideways"])
        .output()
        .unwrap();
    assert_eq!(err.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&err.stderr).contains("unknown GREASE place"));
    let err = Command::new(BIN)
        .args(["hello", "--split-at", "99999"])
        .output()
        .unwrap();
    assert_eq!(err.status.code(), Some(2));
    let list = tls13lab(&["hello", "--preset", "list"]);
    assert!(list.contains("openssl-3.5") && list.contains("openssl-3.0"));
}

// ---------------------------------------------------------------------------- hello: presets

/// The shape of a ClientHello, without random-dependent bytes: what a preset must reproduce.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    message_len: usize,
    session_id_len: usize,
    suites: Vec<u16>,
    /// (type, whole extension length) in wire order.
    extensions: Vec<(u16, usize)>,
    groups: Vec<u16>,
    sigalgs: Vec<u16>,
    versions: Vec<u16>,
    shares: Vec<(u16, usize)>,
    sni: Vec<String>,
}

fn shape(msg: &[u8]) -> Shape {
    let m = HandshakeMessage::decode(msg, DecodeContext::default()).expect("a ClientHello");
    let HandshakePayload::ClientHello(ch) = m.payload.clone() else {
        panic!("not a ClientHello")
    };
    let mut s = Shape {
        message_len: msg.len(),
        session_id_len: ch.legacy_session_id.len(),
        suites: ch.cipher_suites.iter().map(|c| c.to_repr()).collect(),
        extensions: Vec::new(),
        groups: Vec::new(),
        sigalgs: Vec::new(),
        versions: Vec::new(),
        shares: Vec::new(),
        sni: Vec::new(),
    };
    for e in &ch.extensions {
        let mut w = tls13lab::messages::Writer::new();
        e.encode(&mut w);
        s.extensions.push((e.typ().to_repr(), w.into_bytes().len()));
        match e {
            Extension::SupportedGroups(g) => s.groups = g.iter().map(|x| x.to_repr()).collect(),
            Extension::SignatureAlgorithms(g) => {
                s.sigalgs = g.iter().map(|x| x.to_repr()).collect()
            }
            Extension::SupportedVersionsClient(g) => {
                s.versions = g.iter().map(|x| x.to_repr()).collect()
            }
            Extension::KeyShareClient(k) => {
                s.shares = k
                    .iter()
                    .map(|x| (x.group.to_repr(), x.key_exchange.len()))
                    .collect()
            }
            Extension::ServerName(n) => {
                s.sni = n
                    .iter()
                    .map(|x| String::from_utf8_lossy(&x.name).into())
                    .collect()
            }
            _ => {}
        }
    }
    s
}

/// The handshake message inside a captured record stream.
fn message_of(records: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    let mut at = 0;
    while at + 5 <= records.len() {
        assert_eq!(records[at], 22, "a handshake record");
        let len = usize::from(u16::from_be_bytes([records[at + 3], records[at + 4]]));
        data.extend_from_slice(&records[at + 5..at + 5 + len]);
        at += 5 + len;
    }
    data
}

fn preset_shape(name: &str, without_dsa: bool) -> Shape {
    let mut spec = hello::preset(name).unwrap();
    if without_dsa {
        spec.config
            .signature_schemes
            .retain(|s| !hello::DSA_SCHEMES.contains(&s.to_repr()));
    }
    shape(&hello::build(&spec).unwrap().message.encoded)
}

#[test]
fn presets_match_the_captured_openssl_client_hellos() {
    let cap30 = std::fs::read(format!("{VECTORS}/openssl-3.0.19.bin")).unwrap();
    let got = shape(&message_of(&cap30));
    assert_eq!(
        preset_shape("openssl-3.0", false),
        got,
        "OpenSSL 3.0 preset vs capture"
    );
    assert_eq!(got.message_len, 312);

    let cap35 = std::fs::read(format!("{VECTORS}/openssl-3.5.5-no-dsa.bin")).unwrap();
    let got = shape(&message_of(&cap35));
    assert_eq!(
        preset_shape("openssl-3.5", true),
        got,
        "OpenSSL 3.5 preset (no DSA) vs capture"
    );
    assert_eq!(got.shares, [(0x11ec, 1216), (0x001d, 32)]);
    // The default (DSA-enabled) build sends the four DSA schemes too: 8 more bytes.
    assert_eq!(
        preset_shape("openssl-3.5", false).message_len,
        got.message_len + 8
    );
}

/// Every preset recorded from a real program reproduces its capture in
/// tests/vectors/clienthello/ byte for byte, once both are normalized the same way: random,
/// session id and key share bytes zeroed (their lengths kept), every GREASE value (RFC 8701)
/// made 0x0a0a, the GREASE ECH extension (RFC 9849 §6.2) cut to its type, KDF and enc length
/// (AEAD, config_id, enc and a payload of random length are random), and for Chromium and
/// rustls, which permute their extensions, the extensions sorted. Every preset but tls13lab's own must have a
/// capture here.
#[test]
fn every_recorded_preset_reproduces_its_capture() {
    use tls13lab::messages::enums::{ExtensionType, ProtocolVersion, SignatureScheme};
    use tls13lab::messages::extensions::KeyShareEntry;
    /// (preset, capture, extensions permuted by the program)
    const RECORDED: &[(&str, &str, bool)] = &[
        ("openssl-3.0", "openssl-3.0.19.bin", false),
        ("openssl-3.5", "openssl-3.5.5-no-dsa.bin", false),
        ("openssl-4.0", "openssl-4.0.3-no-dsa.bin", false),
        ("chromium", "chromium-156.0.8078.114.bin", true),
        ("firefox", "firefox-esr-153.8.0.bin", false),
        ("curl", "curl-7.88.1.bin", false),
        ("rustls", "rustls-0.23.46.bin", true),
        ("go", "go-1.19.8.bin", false),
    ];
    const G: u16 = 0x0a0a;
    fn grease(v: u16) -> u16 {
        if hello::is_grease(v) {
            G
        } else {
            v
        }
    }
    /// Whether the X25519 share equals the X25519MLKEM768 share's X25519 part (its last 32
    /// bytes, after ML-KEM-768's 1,184-byte key); `None` without both shares.
    fn x25519_reused(msg: &[u8]) -> Option<bool> {
        let m = HandshakeMessage::decode(msg, DecodeContext::default()).expect("a ClientHello");
        let HandshakePayload::ClientHello(ch) = m.payload else {
            panic!("not a ClientHello")
        };
        let shares = ch.extensions.iter().find_map(|e| match e {
            Extension::KeyShareClient(l) => Some(l),
            _ => None,
        })?;
        let key = |g: NamedGroup| {
            shares
                .iter()
                .find(|e| e.group == g)
                .map(|e| e.key_exchange.as_slice())
        };
        let (h, x) = (key(NamedGroup::X25519MLKEM768)?, key(NamedGroup::X25519)?);
        Some(h.get(1184..) == Some(x))
    }

    /// The normalized message and, when it has one, the GREASE ECH payload's length.
    fn normalized(msg: &[u8], permuted: bool) -> (Vec<u8>, Option<usize>) {
        let m = HandshakeMessage::decode(msg, DecodeContext::default()).expect("a ClientHello");
        let HandshakePayload::ClientHello(mut ch) = m.payload else {
            panic!("not a ClientHello")
        };
        ch.random = [0; 32];
        ch.legacy_session_id.fill(0);
        for s in &mut ch.cipher_suites {
            *s = CipherSuite::from(grease(s.to_repr()));
        }
        let mut ech_payload = None;
        for e in &mut ch.extensions {
            match e {
                Extension::SupportedGroups(l) => {
                    l.iter_mut()
                        .for_each(|g| *g = NamedGroup::from(grease(g.to_repr())));
                }
                Extension::KeyShareClient(l) => {
                    for KeyShareEntry {
                        group,
                        key_exchange,
                    } in l.iter_mut()
                    {
                        *group = NamedGroup::from(grease(group.to_repr()));
                        key_exchange.fill(0);
                    }
                }
                Extension::SignatureAlgorithms(l) => {
                    l.iter_mut()
                        .for_each(|x| *x = SignatureScheme::from(grease(x.to_repr())));
                }
                Extension::SupportedVersionsClient(l) => {
                    l.iter_mut()
                        .for_each(|x| *x = ProtocolVersion::from(grease(x.to_repr())));
                }
                Extension::Unknown { typ, body } if *typ == ExtensionType::EncryptedClientHello => {
                    // outer(0), kdf(2), aead(2), config_id(1), enc<2>, payload<2> (§5).
                    assert_eq!(body.first(), Some(&0), "an outer ECH extension");
                    let enc = usize::from(u16::from_be_bytes([body[6], body[7]]));
                    let at = 8 + enc;
                    let payload = usize::from(u16::from_be_bytes([body[at], body[at + 1]]));
                    assert_eq!(body.len(), at + 2 + payload, "ECH extension length");
                    ech_payload = Some(payload);
                    // The KDF stays; NSS picks the GREASE AEAD at random (AES-128-GCM or
                    // ChaCha20-Poly1305 in two runs), so it goes with config_id.
                    assert!((1..=3).contains(&u16::from_be_bytes([body[3], body[4]])));
                    body.truncate(8);
                    body[3..6].fill(0);
                }
                Extension::Unknown { typ, .. } => *typ = ExtensionType::from(grease(typ.to_repr())),
                _ => {}
            }
        }
        if permuted {
            let enc = |e: &Extension| {
                let mut w = tls13lab::messages::Writer::new();
                e.encode(&mut w);
                w.into_bytes()
            };
            ch.extensions.sort_by_key(enc);
        }
        let m = HandshakeMessage::new(HandshakePayload::ClientHello(ch));
        (m.encoded, ech_payload)
    }
    fn extension_list(msg: &[u8]) -> Vec<String> {
        let m = HandshakeMessage::decode(msg, DecodeContext::default()).unwrap();
        let HandshakePayload::ClientHello(ch) = m.payload else {
            unreachable!()
        };
        ch.extensions
            .iter()
            .map(|e| {
                let mut w = tls13lab::messages::Writer::new();
                e.encode(&mut w);
                format!("{:#06x}/{}", e.typ().to_repr(), w.into_bytes().len())
            })
            .collect()
    }

    // tls13lab's own shapes are not recorded: they are the library's configurations.
    for (name, _) in hello::PRESETS
        .iter()
        .filter(|(n, _)| !n.starts_with("tls13lab"))
    {
        assert!(
            RECORDED.iter().any(|(p, _, _)| p == name),
            "preset {name} has no capture in tests/vectors/clienthello/"
        );
    }
    for &(name, file, permuted) in RECORDED {
        let records = std::fs::read(format!("{VECTORS}/{file}")).unwrap();
        let captured = message_of(&records);
        let mut spec = hello::preset(name).unwrap();
        if file.contains("no-dsa") {
            spec.config
                .signature_schemes
                .retain(|s| !hello::DSA_SCHEMES.contains(&s.to_repr()));
        }
        let built = hello::build(&spec).unwrap().message.encoded;
        let (want, want_ech) = normalized(&captured, permuted);
        let (got, got_ech) = normalized(&built, permuted);
        // Key bytes are blanked above; whether one X25519 scalar serves both the hybrid and the
        // X25519 share is part of the shape (a server can see it).
        assert_eq!(
            x25519_reused(&built),
            x25519_reused(&captured),
            "{name}: one X25519 scalar for both shares, in the preset and in {file}"
        );
        assert_eq!(
            got_ech.is_some(),
            want_ech.is_some(),
            "{name}: GREASE ECH in the preset and in {file}"
        );
        // Both payloads seal at least an AEAD tag; the payload size the preset records for
        // `client --preset` is the capture's.
        assert!(got_ech.unwrap_or(16) >= 16 && want_ech.unwrap_or(16) >= 16);
        if let Some((_, len)) = spec.grease_ech_size {
            assert_eq!(Some(len), want_ech, "{name}: GREASE ECH payload of {file}");
        }
        if got != want {
            panic!(
                "{name} vs {file}:\n preset  {:?}\n capture {:?}\n preset  {}\n capture {}",
                extension_list(&built),
                extension_list(&captured),
                hex::encode(&got),
                hex::encode(&want)
            );
        }
    }
}

/// OpenSSL 3.5: `TLS13LAB_OPENSSL`, else what scripts/build-openssl.sh prints (a cache hit after
/// tests/interop_openssl.rs built it; the first run builds it, as the interop tests do).
fn openssl35() -> Option<PathBuf> {
    built_openssl("TLS13LAB_OPENSSL", "300.5.5")
}

/// OpenSSL 4.0.3 (ECH): `TLS13LAB_OPENSSL40`, else scripts/build-openssl.sh with openssl-src
/// 400.0.2.
fn openssl40() -> Option<PathBuf> {
    built_openssl("TLS13LAB_OPENSSL40", "400.0.2")
}

/// The binary's `openssl version`, which begins with `want` (the build script built what we
/// asked).
fn assert_openssl_version(bin: &Path, want: &str) -> String {
    let version = openssl_version(bin).unwrap_or_default();
    assert!(version.starts_with(want), "{}: {version}", bin.display());
    version
}

/// `found`, or a NOTICE that `what` is skipped (outside CI; in CI a missing OpenSSL fails).
fn or_skip(found: Option<PathBuf>, what: &str, env: &str) -> Option<PathBuf> {
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI must run {what}"
        );
        eprintln!(
            "NOTICE: skipping {what}: scripts/build-openssl.sh gave no binary (or set {env})"
        );
    }
    found
}

/// The binary `env` names, else the one scripts/build-openssl.sh builds from openssl-src
/// `crate_version`.
fn built_openssl(env: &str, crate_version: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let script =
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("scripts/build-openssl.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env("OPENSSL_SRC_VERSION", crate_version)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let path = text.lines().last()?.trim();
    (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

fn openssl_version(bin: &Path) -> Option<String> {
    let out = Command::new(bin).arg("version").output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run `openssl s_client -servername example.com` against a listener and return the records it
/// sent before our side hung up.
fn capture_client_hello(openssl: &Path) -> Vec<u8> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut child = Command::new(openssl)
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{port}"),
            "-servername",
            "example.com",
        ])
        .stdin(Stdio::piped()) // kept open: s_client must not see EOF before it sends
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("s_client did not connect: {e}");
            }
        }
    };
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let m = message_of_partial(&buf);
        if m.len() >= 4 {
            let need =
                4 + ((usize::from(m[1]) << 16) | (usize::from(m[2]) << 8) | usize::from(m[3]));
            if m.len() >= need {
                break;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    drop(stream);
    let _ = child.kill();
    let _ = child.wait();
    buf
}

fn message_of_partial(records: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    let mut at = 0;
    while at + 5 <= records.len() {
        let len = usize::from(u16::from_be_bytes([records[at + 3], records[at + 4]]));
        if at + 5 + len > records.len() {
            break;
        }
        data.extend_from_slice(&records[at + 5..at + 5 + len]);
        at += 5 + len;
    }
    data
}

#[test]
fn presets_match_a_live_openssl_35_capture() {
    let Some(bin) = or_skip(
        openssl35(),
        "the live OpenSSL 3.5 capture",
        "TLS13LAB_OPENSSL",
    ) else {
        return;
    };
    let version = assert_openssl_version(&bin, "OpenSSL 3.5");
    let disabled = Command::new(&bin)
        .args(["list", "-disabled"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let no_dsa = disabled.lines().any(|l| l.trim() == "DSA");
    let got = shape(&message_of(&capture_client_hello(&bin)));
    assert_eq!(preset_shape("openssl-3.5", no_dsa), got, "{version}");
}

#[test]
fn presets_match_a_live_openssl_30_capture() {
    let bin = std::env::var_os("TLS13LAB_OPENSSL30")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("openssl"), PathBuf::from);
    match openssl_version(&bin) {
        Some(v) if v.starts_with("OpenSSL 3.0") => {
            let got = shape(&message_of(&capture_client_hello(&bin)));
            assert_eq!(preset_shape("openssl-3.0", false), got, "{v}");
        }
        other => eprintln!("NOTICE: skipping the live OpenSSL 3.0 capture: openssl is {other:?}"),
    }
}

// --------------------------------------------------------------------------------- simulate

fn outcome<'a>(o: &'a [Outcome], label: &str) -> &'a Outcome {
    o.iter()
        .find(|x| x.label == label)
        .unwrap_or_else(|| panic!("no {label} row"))
}

fn rts(o: &[Outcome], label: &str) -> f64 {
    outcome(o, label).round_trips.expect("a response arrived")
}

/// `simulate --ech` (RFC 9849): each key exchange's three connections again with ECH, accepted;
/// the rows without ECH are those of a run without it (same seeds), ECH costs ClientHello bytes
/// and no round trip, and the hybrid ClientHelloOuter no longer fits one segment.
#[test]
fn simulate_with_ech() {
    let net = Network {
        bandwidth_bps: 0,
        ..Network::default()
    };
    let plain = simulate::compare(&Plan {
        net,
        ..Plan::default()
    })
    .unwrap();
    let o = simulate::compare(&Plan {
        net,
        ech: true,
        ..Plan::default()
    })
    .unwrap();
    assert_eq!(o.len(), 1 + 2 * 6);
    for p in &plain {
        let same = outcome(&o, &p.label);
        assert_eq!(
            (same.bytes_c2s, same.bytes_s2c, same.first_response_us),
            (p.bytes_c2s, p.bytes_s2c, p.first_response_us),
            "{}",
            p.label
        );
    }
    let accepted = |x: &Outcome| tls13lab::events::ech_accepted(&x.client_events);
    for kx in ["classical", "hybrid"] {
        for (kind, rts) in [("full", 3.0), ("resumed", 3.0), ("0-RTT", 2.0)] {
            let without = outcome(&o, &format!("{kx} {kind}"));
            let with = outcome(&o, &format!("{kx} {kind} ECH"));
            assert!(accepted(with) && !accepted(without), "{}", with.label);
            assert_eq!(with.round_trips, Some(rts), "{}", with.label);
            assert!(with.bytes_c2s > without.bytes_c2s + 150, "{}", with.label);
            assert_eq!(with.resumed, kind != "full", "{}", with.label);
        }
        let zero = outcome(&o, &format!("{kx} 0-RTT ECH"));
        assert_eq!(zero.early_data, Some(EarlyDataStatus::Accepted));
    }
    // X25519MLKEM768's 1,216-byte share plus ECH: the ClientHelloOuter takes two segments.
    let (h, he) = (outcome(&o, "hybrid full"), outcome(&o, "hybrid full ECH"));
    assert!(
        he.packets_c2s > h.packets_c2s,
        "{} vs {}",
        he.packets_c2s,
        h.packets_c2s
    );
    let text = simulate::render(&net, &o);
    assert!(
        text.contains("hybrid: ECH (RFC 9849) adds ")
            && text.contains(" RTT to the full handshake"),
        "{text}"
    );
}

#[test]
fn simulate_shows_what_real_networks_show() {
    // Unlimited bandwidth: times are exact multiples of the RTT.
    let net = Network {
        bandwidth_bps: 0,
        ..Network::default()
    };
    let o = simulate::compare(&Plan {
        net,
        ..Plan::default()
    })
    .unwrap();
    assert_eq!(
        rts(&o, "plain TCP (no TLS)"),
        2.0,
        "TCP handshake + request/response"
    );
    for kx in ["classical", "hybrid"] {
        let full = outcome(&o, &format!("{kx} full"));
        let resumed = outcome(&o, &format!("{kx} resumed"));
        let zero = outcome(&o, &format!("{kx} 0-RTT"));
        // A full TLS 1.3 handshake costs one round trip after TCP's.
        assert_eq!(full.round_trips, Some(3.0), "{kx} full");
        assert!(full.certificate && full.signatures == 1 && !full.resumed);
        // Resumption saves bytes and signatures, not round trips.
        assert_eq!(resumed.round_trips, Some(3.0), "{kx} resumed");
        assert!(resumed.resumed && !resumed.certificate && resumed.signatures == 0);
        assert!(resumed.bytes_s2c < full.bytes_s2c && resumed.server_flight < full.server_flight);
        // 0-RTT delivers the request one round trip earlier.
        assert_eq!(zero.round_trips, Some(2.0), "{kx} 0-RTT");
        assert_eq!(zero.early_data, Some(EarlyDataStatus::Accepted));
        for x in [full, resumed, zero] {
            assert_eq!(x.cwnd_stalls, 0, "{}: fits the initial window", x.label);
            let tls_rts = if x.label.ends_with("0-RTT") { 1 } else { 2 };
            // Counted on the records in sending order (the client's own view can split the
            // server's flight when its segments straddle the client's reply).
            assert_eq!(
                x.wire_ledger.round_trips_to_first_response(),
                Some(tls_rts),
                "{}",
                x.label
            );
        }
    }
    // Hybrid key shares cost bytes, not round trips, while they fit the window.
    let (c, h) = (outcome(&o, "classical full"), outcome(&o, "hybrid full"));
    assert!(h.bytes_c2s > c.bytes_c2s + 1100 && h.server_flight > c.server_flight + 1000);
    // The same with serialization delay: a little more than whole round trips.
    let slow = simulate::compare(&Plan {
        net: Network {
            bandwidth_bps: 1_000_000,
            ..net
        },
        kx: vec![Kx::Hybrid],
        ..Plan::default()
    })
    .unwrap();
    for x in &slow[1..] {
        let r = x.round_trips.unwrap();
        let whole = if x.label.ends_with("0-RTT") { 2.0 } else { 3.0 };
        assert!(r > whole && r < whole + 0.5, "{}: {r}", x.label);
    }
}

#[test]
fn a_certificate_chain_beyond_the_initial_window_costs_a_round_trip() {
    let net = Network {
        bandwidth_bps: 0,
        ..Network::default()
    };
    let window = net.initcwnd * net.link.mss;
    let big = Plan {
        net,
        kx: vec![Kx::Classical],
        cert_bytes: window + 1000,
        ..Plan::default()
    };
    let o = simulate::compare(&big).unwrap();
    let full = outcome(&o, "classical full");
    assert!(
        full.server_flight > window,
        "{} > {window}",
        full.server_flight
    );
    assert_eq!(
        full.round_trips,
        Some(4.0),
        "one more round trip waiting for ACKs"
    );
    assert_eq!(full.cwnd_stalls, 1);
    // Resumption sends no certificate: back to one round trip after TCP's.
    assert_eq!(rts(&o, "classical resumed"), 3.0);
    assert_eq!(rts(&o, "classical 0-RTT"), 2.0);
    // A larger initial window takes the round trip away again.
    let o = simulate::compare(&Plan {
        net: Network {
            initcwnd: 2 * net.initcwnd,
            ..net
        },
        ..big.clone()
    })
    .unwrap();
    assert_eq!(rts(&o, "classical full"), 3.0);
    // And a small window makes even a normal chain stall.
    let o = simulate::compare(&Plan {
        net: Network { initcwnd: 1, ..net },
        kx: vec![Kx::Hybrid],
        ..Plan::default()
    })
    .unwrap();
    assert_eq!(
        rts(&o, "hybrid full"),
        4.0,
        "1717-byte hybrid flight over a 1-segment window"
    );
}

#[test]
fn simulate_cli_states_the_claims() {
    let out = tls13lab(&["simulate", "--bandwidth", "0"]);
    for want in [
        "plain TCP (no TLS)",
        "classical: full TLS 1.3 costs +1.00 RTT over plain TCP",
        "1 signature(s) and 0.00 RTT; 0-RTT gets the response 1.00 RTT earlier than full",
        "hybrid: full TLS 1.3 costs +1.00 RTT",
        "initcwnd 10 segments (14600 bytes)",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    let out = tls13lab(&[
        "simulate",
        "--bandwidth",
        "0",
        "--kx",
        "classical",
        "--cert-bytes",
        "20000",
        "--timeline",
    ]);
    assert!(
        out.contains("exceeds initcwnd × MSS = 14600 bytes"),
        "{out}"
    );
    assert!(
        out.contains("Certificate"),
        "the timeline names records: {out}"
    );
    let json = tls13lab(&["simulate", "--json", "--kx", "hybrid", "--rtt", "50"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["connections"].as_array().unwrap().len(), 4);
    assert_eq!(v["network"]["rtt_us"], 50_000);
}

// ----------------------------------------------------------------------------------- ladder

/// A small XML well-formedness check: balanced tags, quoted attributes, known entities.
fn check_xml(doc: &str) -> Result<usize, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut elements = 0;
    let mut rest = doc;
    while let Some(lt) = rest.find('<') {
        check_text(&rest[..lt])?;
        let gt = rest[lt..].find('>').ok_or("unclosed tag")? + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack
                .pop()
                .ok_or_else(|| format!("</{name}> without an opening tag"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{name}>"));
            }
            continue;
        }
        elements += 1;
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name: String = body.chars().take_while(|c| !c.is_whitespace()).collect();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':')
        {
            return Err(format!("bad element name in <{tag}>"));
        }
        // Attributes: name="value" pairs.
        let mut attrs = body[name.len()..].trim();
        while !attrs.is_empty() {
            let eq = attrs
                .find('=')
                .ok_or_else(|| format!("attribute without value in <{tag}>"))?;
            let q = attrs[eq + 1..].chars().next().ok_or("missing quote")?;
            if q != '"' && q != '\'' {
                return Err(format!("unquoted attribute in <{tag}>"));
            }
            let end = attrs[eq + 2..].find(q).ok_or("unterminated attribute")? + eq + 2;
            check_text(&attrs[eq + 2..end])?;
            attrs = attrs[end + 1..].trim_start();
        }
        if !self_closing {
            stack.push(name);
        }
    }
    check_text(rest)?;
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    Ok(elements)
}

fn check_text(t: &str) -> Result<(), String> {
    if t.contains('<') {
        return Err(format!("'<' in text: {t:?}"));
    }
    let mut rest = t;
    while let Some(amp) = rest.find('&') {
        let semi = rest[amp..].find(';').ok_or("unterminated entity")? + amp;
        let ent = &rest[amp + 1..semi];
        if !matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos") && !ent.starts_with('#') {
            return Err(format!("unknown entity &{ent};"));
        }
        rest = &rest[semi + 1..];
    }
    Ok(())
}

/// Render with rsvg-convert when it is installed (it rejects malformed SVG).
fn rsvg_renders(svg: &Path) -> Option<bool> {
    let png = svg.with_extension("png");
    let out = Command::new("rsvg-convert")
        .arg("-o")
        .arg(&png)
        .arg(svg)
        .output()
        .ok()?;
    Some(
        out.status.success()
            && std::fs::metadata(&png)
                .map(|m| m.len() > 1000)
                .unwrap_or(false),
    )
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tls13lab-instruments-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn ladders_are_well_formed_svg() {
    let net = Network::default();
    let o = simulate::compare(&Plan::default()).unwrap();
    let dir = temp_dir("ladder");
    for x in o.iter().filter(|x| !x.ledger.records.is_empty()) {
        let doc = simulate::ladder(x, &net);
        let n = check_xml(&doc).unwrap_or_else(|e| panic!("{}: {e}", x.label));
        // One arrow per record, plus TCP's three.
        assert_eq!(
            doc.matches("<line x1=").count() - 2 - 4,
            x.ledger.records.len() + 3,
            "{}",
            x.label
        );
        assert!(n > 20);
        assert!(doc.contains("first response byte"));
        assert!(doc.contains("RT 2") || x.label.ends_with("0-RTT"));
        if x.label.ends_with("0-RTT") {
            assert!(doc.contains("0-RTT application data"), "{}", x.label);
            assert!(doc.contains("EndOfEarlyData"), "{}", x.label);
        }
        if x.label.starts_with("hybrid") {
            assert!(doc.contains("X25519MLKEM768"));
        }
        let path = dir.join(format!("{}.svg", x.label.replace(' ', "-")));
        std::fs::write(&path, &doc).unwrap();
        match rsvg_renders(&path) {
            Some(ok) => assert!(ok, "rsvg-convert failed on {}", path.display()),
            None => eprintln!("NOTICE: rsvg-convert is not installed: SVG not rendered"),
        }
    }
    // Special characters are escaped.
    let doc = lab::ladder::svg(&o[1].ledger, "a <b> & \"c\"", None);
    check_xml(&doc).unwrap();
    assert!(doc.contains("a &lt;b&gt; &amp; &quot;c&quot;"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Start `tls13lab server --listen 127.0.0.1:0 ARGS` and return it with its port.
fn start_server(args: &[&str]) -> (std::process::Child, u16) {
    use std::io::BufRead as _;
    let mut child = Command::new(BIN)
        .args(["server", "--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("SSLKEYLOGFILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            let _ = child.kill();
            panic!("no 'listening on' line: {line:?}")
        });
    (child, port)
}

fn wait_exit(child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the server did not exit");
}

#[test]
fn demo_client_and_server_write_ladders() {
    let dir = temp_dir("svg-cli");
    let demo = dir.join("demo.svg");
    tls13lab(&["demo", "--once", "--svg", demo.to_str().unwrap()]);
    let doc = std::fs::read_to_string(&demo).unwrap();
    check_xml(&doc).unwrap();
    assert!(doc.contains("ClientHello") && doc.contains("RT 2"));

    let (mut server, port) = start_server(&[
        "--naccept",
        "1",
        "--svg",
        dir.join("s.svg").to_str().unwrap(),
    ]);
    let c = dir.join("c.svg");
    tls13lab(&[
        "client",
        &format!("127.0.0.1:{port}"),
        "--insecure",
        "--svg",
        c.to_str().unwrap(),
    ]);
    wait_exit(&mut server);
    for f in [c, dir.join("s.svg")] {
        let doc = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        check_xml(&doc).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(
            doc.contains("ServerHello") && doc.contains("first response byte"),
            "{}",
            f.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------------ pcap and dissect

use std::sync::Arc;

use lab::demo::{self, Pair};
use lab::dissect::{self, Negotiation, Seen};
use lab::keylog::KeyLog;
use lab::pcap::{self, Endpoints};
use tls13lab::events::{Direction, Event, Negotiated};
use tls13lab::ledger::Ledger;
use tls13lab::messages::PskKeyExchangeMode;
use tls13lab::session::TicketStore;

/// A named connection's client events.
struct Conn {
    name: &'static str,
    events: Vec<Event>,
}

/// Connections covering every epoch and shape: full (classical, hybrid), resumed, 0-RTT,
/// HelloRetryRequest, client authentication, record padding, KeyUpdate, compatibility mode,
/// and the CCM suites (CCM_8's 8-byte tags).
fn corpus() -> Vec<Conn> {
    let mut out = Vec::new();
    let req = b"GET / HTTP/1.0\r\n\r\n";
    let resp = b"HTTP/1.0 200 OK\r\n\r\nhello";
    for (name, group, suite) in [
        ("classical", NamedGroup::X25519, None),
        ("hybrid", NamedGroup::X25519MLKEM768, None),
        (
            "ccm",
            NamedGroup::X25519,
            Some(CipherSuite::TLS_AES_128_CCM_SHA256),
        ),
        (
            "ccm8",
            NamedGroup::X25519,
            Some(CipherSuite::TLS_AES_128_CCM_8_SHA256),
        ),
    ] {
        let (mut server, root) = demo::server_config(1, demo::NOW_MS).unwrap();
        let mut client = demo::client_config(root);
        client.key_shares = vec![group];
        if let Some(suite) = suite {
            client.cipher_suites = vec![suite];
            server.cipher_suites = vec![suite];
        }
        let runs = demo::three_connections(
            Arc::new(client),
            Arc::new(server),
            3,
            demo::NOW_MS,
            req,
            resp,
        )
        .unwrap();
        let names: [&'static str; 3] = match name {
            "classical" => ["classical full", "classical resumed", "classical 0-RTT"],
            "hybrid" => ["hybrid full", "hybrid resumed", "hybrid 0-RTT"],
            "ccm" => ["CCM full", "CCM resumed", "CCM 0-RTT"],
            _ => ["CCM_8 full", "CCM_8 resumed", "CCM_8 0-RTT"],
        };
        for (r, n) in runs.into_iter().zip(names) {
            out.push(Conn {
                name: n,
                events: r.events,
            });
        }
    }
    // HelloRetryRequest (the client offers only a P-256 share... and the server insists on
    // X25519), client authentication, padding, compatibility mode, KeyUpdate.
    let (mut server, root) = demo::server_config(2, demo::NOW_MS).unwrap();
    server.groups = vec![NamedGroup::X25519];
    server.strict_group_preference = true;
    server.padding = tls13lab::record::PaddingPolicy::ToMultiple(64);
    server.client_auth = tls13lab::ClientAuth::InsecureAcceptAny { required: false };
    let mut client = demo::client_config(root);
    client.groups = vec![NamedGroup::secp256r1, NamedGroup::X25519];
    client.key_shares = vec![NamedGroup::secp256r1];
    client.compat_mode = true;
    let mut p = Pair::new(Arc::new(client), Arc::new(server), 5, demo::NOW_MS).unwrap();
    p.handshake().unwrap();
    p.client.send(b"before the update").unwrap();
    p.client.key_update(true).unwrap();
    p.client.send(b"after the update").unwrap();
    p.settle().unwrap();
    p.server
        .send(b"answer under the server's next keys")
        .unwrap();
    p.settle().unwrap();
    p.client.close();
    p.settle().unwrap();
    out.push(Conn {
        name: "hrr+auth+padding+keyupdate",
        events: p.client_events.clone(),
    });
    // Resumption without a key exchange (psk_ke, RFC 8446 §4.2.9), with ALPN, offering 0-RTT
    // that the server refuses: the ticket allowed it, the server that sees it no longer does.
    let (mut server, root) = demo::server_config(3, demo::NOW_MS).unwrap();
    server.alpn = vec![b"h2".to_vec()];
    let mut client = demo::client_config(root);
    client.alpn = vec![b"h2".to_vec()];
    client.psk_modes = vec![PskKeyExchangeMode::PskKe];
    let (client, server) = (Arc::new(client), Arc::new(server));
    let first = demo::request_response(
        client.clone(),
        server.clone(),
        7,
        demo::NOW_MS,
        req,
        resp,
        TicketStore::default(),
    )
    .unwrap();
    let mut refusing = (*server).clone();
    refusing.max_early_data = 0;
    let refusing = Arc::new(refusing);
    let p = demo::request_response(
        client,
        refusing,
        8,
        demo::NOW_MS + 1000,
        req,
        resp,
        first.client.tickets().clone(),
    )
    .unwrap();
    out.push(Conn {
        name: "psk_ke+alpn+0-RTT rejected",
        events: p.client_events,
    });
    out
}

/// What both ledgers must agree on, record by record.
fn ledger_view(l: &Ledger) -> Vec<String> {
    l.records
        .iter()
        .map(|r| {
            let x = &r.record;
            let msgs: Vec<String> = r
                .messages
                .iter()
                .map(|m| format!("{}:{}:{}/{}", m.typ, m.offset, m.bytes_here, m.len))
                .collect();
            format!(
                "{} {} {} {} wire={} plain={} pad={} tag={} seq={:?} flight={} [{}]",
                x.direction.arrow(),
                x.epoch,
                x.wire_type,
                x.inner_type,
                x.wire_len,
                x.plaintext_len,
                x.padding_len,
                x.tag_len,
                x.seq,
                r.flight,
                msgs.join(" ")
            )
        })
        .collect()
}

#[test]
fn pcap_then_dissect_gives_back_the_ledger() {
    for c in corpus() {
        let w = pcap::pcapng(&c.events, Endpoints::default(), 1460)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let cap = pcap::read_capture(&w.bytes).unwrap();
        assert_eq!(cap.connections.len(), 1, "{}", c.name);
        assert_eq!(cap.packets, w.packets);
        let conn = &cap.connections[0];
        assert_eq!(
            (conn.client, conn.server),
            (Endpoints::default().client, Endpoints::default().server)
        );
        // The streams are exactly the records as sent.
        let wire = pcap::wire_records(&c.events).unwrap();
        let c2s: Vec<u8> = wire
            .iter()
            .filter(|r| r.direction == Direction::ClientToServer)
            .flat_map(|r| r.bytes.clone())
            .collect();
        assert_eq!(conn.c2s.bytes, c2s, "{}", c.name);
        let d = dissect::dissect(&conn.c2s, &conn.s2c, &cap.keylog, true);
        assert_eq!(
            ledger_view(&d.ledger),
            ledger_view(&Ledger::from_events(&c.events)),
            "{}",
            c.name
        );
        assert_eq!(d.undecrypted, 0, "{}", c.name);
        assert!(
            d.missing_secrets.is_empty(),
            "{}: {:?}",
            c.name,
            d.missing_secrets
        );
        assert_eq!(d.finished.len(), 2, "{}", c.name);
        assert!(
            d.finished.iter().all(|f| f.verified == Some(true)),
            "{}: {:?}",
            c.name,
            d.finished
        );
        assert!(d.messages.iter().all(|m| m.valid), "{}", c.name);
        let mine = Ledger::from_events(&c.events).negotiated.unwrap();
        let theirs = d.ledger.negotiated.clone().unwrap();
        assert_eq!(
            (
                mine.suite,
                mine.group,
                mine.resumed,
                mine.early_data,
                mine.hello_retry,
                mine.signature_scheme
            ),
            (
                theirs.suite,
                theirs.group,
                theirs.resumed,
                theirs.early_data,
                theirs.hello_retry,
                theirs.signature_scheme
            ),
            "{}",
            c.name
        );
        // Application data comes back too.
        let sent: Vec<u8> = d
            .app_data
            .iter()
            .filter(|a| a.direction == Direction::ClientToServer)
            .flat_map(|a| a.data.clone())
            .collect();
        assert!(!sent.is_empty(), "{}", c.name);
    }
}

#[test]
fn dissect_names_the_missing_secrets() {
    let c = &corpus()[0];
    let w = pcap::pcapng(&c.events, Endpoints::default(), 1460).unwrap();
    let cap = pcap::read_capture(&w.bytes).unwrap();
    let conn = &cap.connections[0];
    // No key log: plaintext only.
    let d = dissect::dissect(&conn.c2s, &conn.s2c, &KeyLog::default(), true);
    assert!(d.undecrypted > 0);
    for label in [
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    ] {
        assert!(
            d.missing_secrets.iter().any(|m| m == label),
            "{:?}",
            d.missing_secrets
        );
    }
    assert!(d.finished.iter().all(|f| f.verified.is_none()));
    assert_eq!(
        d.ledger.records.len(),
        Ledger::from_events(&c.events).records.len()
    );
    // Handshake secrets only: the handshake opens, the application data does not.
    let mut partial = cap.keylog.clone();
    partial.lines.retain(|l| l.label.contains("HANDSHAKE"));
    let d = dissect::dissect(&conn.c2s, &conn.s2c, &partial, true);
    assert!(d.finished.iter().all(|f| f.verified == Some(true)));
    assert_eq!(
        d.missing_secrets,
        ["CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"]
    );
    // A wrong secret makes the Finished check fail, not pass.
    let mut wrong = cap.keylog.clone();
    for l in &mut wrong.lines {
        if l.label == "SERVER_HANDSHAKE_TRAFFIC_SECRET" {
            l.secret[0] ^= 1;
        }
    }
    let d = dissect::dissect(&conn.c2s, &conn.s2c, &wrong, true);
    assert!(d
        .finished
        .iter()
        .any(|f| f.direction == Direction::ServerToClient && f.verified.is_none()));
}

#[test]
fn dissect_raw_streams_in_handshake_order() {
    for c in corpus().iter().filter(|c| !c.name.contains("0-RTT")) {
        let wire = pcap::wire_records(&c.events).unwrap();
        let stream = |d: Direction| lab::pcap::Stream {
            bytes: wire
                .iter()
                .filter(|r| r.direction == d)
                .flat_map(|r| r.bytes.clone())
                .collect(),
            ..Default::default()
        };
        let log = KeyLog::from_events(&c.events);
        let d = dissect::dissect(
            &stream(Direction::ClientToServer),
            &stream(Direction::ServerToClient),
            &log,
            false,
        );
        assert!(
            d.finished.iter().all(|f| f.verified == Some(true)),
            "{}",
            c.name
        );
        // Per direction, the same records as the endpoint saw.
        let want = ledger_view(&Ledger::from_events(&c.events));
        let got = ledger_view(&d.ledger);
        for dir in ["C→S", "S→C"] {
            let strip = |v: &[String]| -> Vec<String> {
                v.iter()
                    .filter(|l| l.starts_with(dir))
                    .map(|l| l.split(" flight=").next().unwrap().to_string())
                    .collect()
            };
            assert_eq!(strip(&got), strip(&want), "{} {dir}", c.name);
        }
    }
}

/// The live connection's own report.
fn live_negotiated(c: &Conn) -> Negotiated {
    Ledger::from_events(&c.events)
        .negotiated
        .unwrap_or_else(|| panic!("{}: not connected", c.name))
}

/// The summary lines of a printout: those after the line `header`, up to an empty line or the
/// client's totals (`client → server …`).
fn summary_block<'a>(out: &'a str, header: &str) -> Vec<&'a str> {
    out.lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| !l.is_empty() && !l.starts_with("client → server"))
        .collect()
}

/// `tls13lab dissect --c2s --s2c --keylog` (and `extra` options) on two raw streams written
/// into `dir`: its output.
fn dissect_raw(
    dir: &std::path::Path,
    c2s: &[u8],
    s2c: &[u8],
    keylog: &std::path::Path,
    extra: &[&str],
) -> String {
    let (a, b) = (dir.join("c2s.bin"), dir.join("s2c.bin"));
    std::fs::write(&a, c2s).unwrap();
    std::fs::write(&b, s2c).unwrap();
    let args = [
        "dissect",
        "--c2s",
        a.to_str().unwrap(),
        "--s2c",
        b.to_str().unwrap(),
        "--keylog",
        keylog.to_str().unwrap(),
    ];
    tls13lab(&[&args[..], extra].concat())
}

/// The value of the summary line `label` (`label   value`).
fn summary_value<'a>(lines: &[&'a str], label: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| {
        l.strip_prefix(label)
            .filter(|rest| rest.starts_with(' '))
            .map(str::trim)
    })
}

#[test]
fn dissect_names_what_was_negotiated() {
    const SERVER_SECRET: &str = "SERVER_HANDSHAKE_TRAFFIC_SECRET not in the key log";
    const CLIENT_SECRET: &str = "CLIENT_HANDSHAKE_TRAFFIC_SECRET not in the key log";
    let sni = demo::client_config(Vec::new()).server_name;
    let mut seen = std::collections::BTreeSet::new();
    for c in corpus() {
        let live = live_negotiated(&c);
        let w = pcap::pcapng(&c.events, Endpoints::default(), 1460).unwrap();
        let cap = pcap::read_capture(&w.bytes).unwrap();
        let conn = &cap.connections[0];
        // The corpus' psk_ke client offers only psk_ke; the others offer only psk_dhe_ke.
        let mode = live.resumed.then_some(if c.name.starts_with("psk_ke") {
            PskKeyExchangeMode::PskKe
        } else {
            PskKeyExchangeMode::PskDheKe
        });
        let asked_for_cert = c.events.iter().any(|e| {
            matches!(e, Event::Handshake(h) if h.typ == tls13lab::messages::HandshakeType::CertificateRequest)
        });
        seen.extend([
            live.hello_retry.then_some("hello retry"),
            (mode == Some(PskKeyExchangeMode::PskKe)).then_some("psk_ke"),
            (mode == Some(PskKeyExchangeMode::PskDheKe)).then_some("psk_dhe_ke"),
            (live.early_data == EarlyDataStatus::Accepted).then_some("0-RTT accepted"),
            (live.early_data == EarlyDataStatus::Rejected).then_some("0-RTT rejected"),
            live.alpn.is_some().then_some("alpn"),
            asked_for_cert.then_some("certificate request"),
        ]);

        // With the key log: everything, as the client reported it.
        let d = dissect::dissect(&conn.c2s, &conn.s2c, &cap.keylog, true);
        let n = d
            .negotiated
            .clone()
            .unwrap_or_else(|| panic!("{}: no summary", c.name));
        assert_eq!(n.to_negotiated().as_ref(), Some(&live), "{}", c.name);
        assert_eq!(d.ledger.negotiated.as_ref(), Some(&live), "{}", c.name);
        assert_eq!((&n.server_name, n.psk_mode), (&sni, mode), "{}", c.name);
        assert!(n.unknown().is_empty(), "{}: {:?}", c.name, n.unknown());
        // Printed as the client prints its own report, then the name it asked for.
        let text = dissect::render(&d);
        let mut want = dissect::summary_lines(&Negotiation::from(&live));
        want.push_str(&dissect::summary_line("server name", "localhost"));
        assert_eq!(
            summary_block(&text, "negotiated"),
            want.lines().collect::<Vec<_>>(),
            "{}",
            c.name
        );
        // JSON: the keys of the client's `negotiated`, with its values.
        let json = serde_json::to_value(&d).unwrap()["negotiated"].clone();
        let theirs = serde_json::to_value(&live).unwrap();
        for (k, v) in theirs.as_object().unwrap() {
            assert_eq!(&json[k], v, "{}: {k}", c.name);
        }
        assert_eq!(json["server_name"], serde_json::json!(sni), "{}", c.name);
        assert_eq!(
            json["psk_mode"],
            serde_json::json!(mode.map(|m| m.to_string())),
            "{}",
            c.name
        );
        assert_eq!(json["unknown"], serde_json::json!({}), "{}", c.name);

        // No key log: the ServerHello's fields and the ClientHello's; the rest is unknown, not
        // guessed, and the ledger gets no report.
        let d = dissect::dissect(&conn.c2s, &conn.s2c, &KeyLog::default(), true);
        let n = d.negotiated.clone().unwrap();
        assert_eq!(
            (
                n.version.name(),
                n.suite,
                n.group,
                n.resumed,
                n.psk_identity,
                n.psk_mode,
                n.hello_retry,
                &n.server_name
            ),
            (
                live.version,
                live.suite,
                live.group,
                live.resumed,
                live.psk_identity,
                mode,
                live.hello_retry,
                &sni
            ),
            "{}",
            c.name
        );
        fn unknown<T>() -> Seen<T> {
            Seen::Unknown(SERVER_SECRET.to_string())
        }
        assert_eq!(n.signature_scheme, unknown(), "{}", c.name);
        assert_eq!(n.client_signature_scheme, unknown(), "{}", c.name);
        // Without an offer the server cannot select a protocol (RFC 7301 §3.1): only the
        // psk_ke client offers one.
        let alpn = if c.name.starts_with("psk_ke") {
            unknown()
        } else {
            Seen::Known(live.alpn.clone())
        };
        assert_eq!(n.alpn, alpn, "{}", c.name);
        let early = match live.early_data {
            EarlyDataStatus::NotSent => Seen::Known(EarlyDataStatus::NotSent),
            // Offered, and a PSK selected: only EncryptedExtensions tells.
            _ => unknown(),
        };
        assert_eq!(n.early_data, early, "{}", c.name);
        assert!(d.ledger.negotiated.is_none(), "{}", c.name);
        let text = dissect::render(&d);
        let lines = summary_block(&text, "negotiated");
        let said = format!("unknown ({SERVER_SECRET})");
        assert_eq!(
            summary_value(&lines, "signature scheme"),
            Some(said.as_str())
        );
        assert_eq!(
            summary_value(&lines, "cipher suite"),
            Some(live.suite.to_string().as_str())
        );
        let json = serde_json::to_value(&d).unwrap()["negotiated"].clone();
        for (k, v) in theirs.as_object().unwrap() {
            match n.unknown().iter().find(|(u, _)| u == k) {
                Some((_, why)) => {
                    assert!(json.get(k).is_none(), "{}: {k} is unknown", c.name);
                    assert_eq!(json["unknown"][k], *why, "{}: {k}", c.name);
                }
                None => assert_eq!(&json[k], v, "{}: {k}", c.name),
            }
        }
        assert!(json.get("signature_scheme").is_none(), "{}", c.name);

        // The server's handshake secret alone: its flight opens, the client's does not. Its
        // signature is known only if it was not asked for one.
        let mut server_only = cap.keylog.clone();
        server_only
            .lines
            .retain(|l| l.label == "SERVER_HANDSHAKE_TRAFFIC_SECRET");
        let d = dissect::dissect(&conn.c2s, &conn.s2c, &server_only, true);
        let n = d.negotiated.clone().unwrap();
        assert_eq!(
            (&n.signature_scheme, &n.early_data, &n.alpn),
            (
                &Seen::Known(live.signature_scheme),
                &Seen::Known(live.early_data),
                &Seen::Known(live.alpn.clone())
            ),
            "{}",
            c.name
        );
        let client = if asked_for_cert {
            Seen::Unknown(CLIENT_SECRET.to_string())
        } else {
            Seen::Known(live.client_signature_scheme)
        };
        assert_eq!(n.client_signature_scheme, client, "{}", c.name);
    }
    assert_eq!(
        seen.into_iter().flatten().collect::<Vec<_>>(),
        [
            "0-RTT accepted",
            "0-RTT rejected",
            "alpn",
            "certificate request",
            "hello retry",
            "psk_dhe_ke",
            "psk_ke"
        ],
        "the corpus covers every kind of answer"
    );
}

/// `tls13lab dissect CAPTURE` prints the summary lines the client printed for the same
/// connection (then the name it asked for), and its JSON carries the client's `negotiated`
/// values; without the key log, what only encrypted messages carry is said to be unknown.
fn dissect_agrees_with_the_client(capture: &Path, client_out: &str, client_json: &Path, sni: &str) {
    let theirs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(client_json).unwrap()).unwrap();
    let theirs = theirs["negotiated"].as_object().unwrap().clone();
    let client_lines = summary_block(client_out, "--- summary");
    assert!(client_lines.len() >= 8, "{client_out}");
    let path = capture.to_str().unwrap();
    for keys in [true, false] {
        let args: &[&str] = if keys {
            &["dissect", path]
        } else {
            &["dissect", path, "--no-embedded-keys"]
        };
        let out = tls13lab(args);
        let lines = summary_block(&out, "negotiated");
        assert_eq!(summary_value(&lines, "server name"), Some(sni), "{out}");
        let ours: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| !l.starts_with("server name "))
            .collect();
        let mut json_args = args.to_vec();
        json_args.push("--json");
        let v: serde_json::Value = serde_json::from_str(&tls13lab(&json_args)).unwrap();
        let n = &v["connections"][0]["negotiated"];
        if keys {
            assert_eq!(ours, client_lines, "{out}");
            for (k, want) in &theirs {
                assert_eq!(&n[k], want, "negotiated.{k}");
            }
            assert_eq!(n["unknown"], serde_json::json!({}));
            continue;
        }
        // Line by line: the client's, or "unknown (why)" for what the ServerHello does not
        // say; whether the client authenticated is unknown too, even if it did not.
        let label = |l: &str| l.split("  ").next().unwrap().to_string();
        let labels = |v: &[&str]| v.iter().map(|l| label(l)).collect::<Vec<_>>();
        let mut want = labels(&client_lines);
        if !want.iter().any(|l| l == "client signature") {
            want.insert(4, "client signature".into());
        }
        assert_eq!(labels(&ours), want, "{out}");
        for o in &ours {
            let c = client_lines.iter().find(|c| label(c) == label(o));
            assert!(
                c == Some(o) || o.contains(" unknown ("),
                "{o:?} vs the client's {c:?}"
            );
        }
        assert!(ours.iter().any(|l| l.contains("unknown (")), "{out}");
        for (k, want) in &theirs {
            match n.get(k) {
                Some(got) => assert_eq!(got, want, "negotiated.{k}"),
                None => assert!(n["unknown"][k].is_string(), "{k} neither known nor unknown"),
            }
        }
    }
}

#[test]
fn dissect_prints_what_the_client_printed() {
    let dir = temp_dir("dissect-summary");
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    // In memory: a HelloRetryRequest (the server wants P-256, the client's share is X25519),
    // ALPN and client authentication.
    let out = tls13lab(&[
        "demo",
        "--once",
        "--groups",
        "x25519,P-256",
        "--server-groups",
        "secp256r1",
        "--alpn",
        "h2",
        "--request-client-cert",
        "--pcap",
        &p("hrr.pcapng"),
        "--json",
        &p("hrr.json"),
    ]);
    let lines = summary_block(&out, "--- summary");
    assert_eq!(summary_value(&lines, "hello retry"), Some("yes"), "{out}");
    assert!(summary_value(&lines, "client signature").is_some(), "{out}");
    // The demo's client names localhost (lab::demo::client_config).
    dissect_agrees_with_the_client(
        &dir.join("hrr.pcapng"),
        &out,
        &dir.join("hrr.json"),
        "localhost",
    );

    // Over TCP: resumed with psk_ke, ALPN and accepted 0-RTT.
    let (server, port) = start_server(&["--naccept", "2", "--alpn", "h2", "--tickets", "1"]);
    let mut server = Killed(server);
    let addr = format!("127.0.0.1:{port}");
    // Tickets are kept per server name.
    let client = [
        "client",
        &addr,
        "--insecure",
        "--alpn",
        "h2",
        "--sni",
        "tls13lab.test",
    ];
    tls13lab(&[&client[..], &["--sess-out", &p("sess.json")]].concat());
    std::fs::write(dir.join("early.txt"), "GET /early HTTP/1.0\r\n\r\n").unwrap();
    let out = tls13lab(
        &[
            &client[..],
            &[
                "--psk-modes",
                "ke",
                "--sess-in",
                &p("sess.json"),
                "--early-data",
                &p("early.txt"),
                "--pcap",
                &p("resumed.pcapng"),
                "--json",
                &p("resumed.json"),
            ],
        ]
        .concat(),
    );
    wait_exit(&mut server.0);
    let lines = summary_block(&out, "--- summary");
    assert_eq!(
        summary_value(&lines, "early data"),
        Some("accepted"),
        "{out}"
    );
    assert_eq!(
        summary_value(&lines, "group"),
        Some("none (psk_ke)"),
        "{out}"
    );
    dissect_agrees_with_the_client(
        &dir.join("resumed.pcapng"),
        &out,
        &dir.join("resumed.json"),
        "tls13lab.test",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------- tshark

fn tshark() -> Option<PathBuf> {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if ok {
        Some(PathBuf::from("tshark"))
    } else {
        eprintln!("NOTICE: tshark is not installed (apt-get install -y tshark): skipping the tshark checks");
        None
    }
}

/// tshark's view of a capture: every record's (content type, length) and every handshake
/// message's (type, body length), in capture order, decrypted with the embedded secrets.
/// Records as (content type, length) and handshake messages as (type, body length).
type TlsView = (Vec<(u8, usize)>, Vec<(u8, usize)>);

fn tshark_view(file: &Path, extra: &[&str]) -> TlsView {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(extra)
        .args([
            "-Y",
            "tls",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=,",
        ])
        .args(["-e", "tls.record.content_type", "-e", "tls.record.length"])
        .args(["-e", "tls.handshake.type", "-e", "tls.handshake.length"])
        .stderr(Stdio::null())
        .output()
        .expect("run tshark");
    assert!(out.status.success(), "tshark failed on {}", file.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let nums = |s: &str| -> Vec<usize> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(|x| x.trim().parse().unwrap())
            .collect()
    };
    let (mut records, mut messages) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (t, l) = (nums(f[0]), nums(f.get(1).copied().unwrap_or("")));
        records.extend(t.iter().zip(&l).map(|(t, l)| (*t as u8, *l)));
        let (t, l) = (
            nums(f.get(2).copied().unwrap_or("")),
            nums(f.get(3).copied().unwrap_or("")),
        );
        messages.extend(t.iter().zip(&l).map(|(t, l)| (*t as u8, *l)));
    }
    (records, messages)
}

/// The same from our ledger.
fn ledger_tshark_view(l: &Ledger) -> TlsView {
    let records = l
        .records
        .iter()
        .map(|r| (r.record.inner_type.to_repr(), r.record.payload_len))
        .collect();
    let messages = l
        .records
        .iter()
        .flat_map(|r| {
            r.messages
                .iter()
                .filter(|m| m.offset + m.bytes_here == m.len)
        })
        .map(|m| (m.typ.to_repr(), m.len - 4))
        .collect();
    (records, messages)
}

#[test]
fn tshark_decrypts_our_pcapng_to_our_ledger() {
    if tshark().is_none() {
        return;
    }
    let dir = temp_dir("tshark");
    for c in corpus() {
        let w = pcap::pcapng(&c.events, Endpoints::default(), 1460).unwrap();
        let path = dir.join(format!("{}.pcapng", c.name.replace(['+', ' '], "-")));
        std::fs::write(&path, &w.bytes).unwrap();
        let got = tshark_view(&path, &[]);
        let want = ledger_tshark_view(&Ledger::from_events(&c.events));
        assert_eq!(got.0, want.0, "{}: records (content type, length)", c.name);
        assert_eq!(
            got.1, want.1,
            "{}: handshake messages (type, length)",
            c.name
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn client_and_server_write_pcaps_over_tcp() {
    let dir = temp_dir("pcap-tcp");
    let spcap = dir.join("s.pcapng");
    let (mut server, port) = start_server(&["--naccept", "1", "--pcap", spcap.to_str().unwrap()]);
    let cpcap = dir.join("c.pcapng");
    tls13lab(&[
        "client",
        &format!("127.0.0.1:{port}"),
        "--insecure",
        "--pcap",
        cpcap.to_str().unwrap(),
    ]);
    wait_exit(&mut server);
    for f in [&cpcap, &spcap] {
        let cap = pcap::read_capture(&std::fs::read(f).unwrap()).unwrap();
        let conn = &cap.connections[0];
        assert_eq!(conn.server.port(), port, "the real 4-tuple");
        let d = dissect::dissect(&conn.c2s, &conn.s2c, &cap.keylog, true);
        assert!(
            d.finished.iter().all(|x| x.verified == Some(true)),
            "{}",
            f.display()
        );
        assert!(
            d.app_data.iter().any(|a| a.data.starts_with(b"GET /")),
            "{}",
            f.display()
        );
        let out = tls13lab(&["dissect", f.to_str().unwrap()]);
        assert!(
            out.contains("server Finished: verified") && out.contains("missing secrets: none"),
            "{out}"
        );
        if or_skip_tool(
            tshark(),
            "tshark's view of the client's capture",
            "tshark is absent",
        )
        .is_some()
        {
            let decode = format!("tcp.port=={port},tls");
            let got = tshark_view(f, &["-d", &decode]);
            assert_eq!(got, ledger_tshark_view(&d.ledger), "{}", f.display());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dissect_cli_modes() {
    let dir = temp_dir("dissect-cli");
    let f = dir.join("d.pcapng");
    tls13lab(&["demo", "--once", "--pcap", f.to_str().unwrap()]);
    let out = tls13lab(&["dissect", f.to_str().unwrap()]);
    for want in [
        "pcapng, 13 packets, 1 TCP connection",
        "client Finished: verified",
        "\"GET / HTTP/1.0\\r\\n\\r\\n\"",
        "missing secrets: none",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    let out = tls13lab(&["dissect", f.to_str().unwrap(), "--no-embedded-keys"]);
    assert!(
        out.contains(
            "missing secrets: CLIENT_HANDSHAKE_TRAFFIC_SECRET, SERVER_HANDSHAKE_TRAFFIC_SECRET \
             (7 record(s) not decrypted)"
        ),
        "{out}"
    );
    // The key log on the side gives it back.
    let cap = pcap::read_capture(&std::fs::read(&f).unwrap()).unwrap();
    let k = dir.join("keys.log");
    std::fs::write(&k, cap.keylog.to_text()).unwrap();
    let out = tls13lab(&[
        "dissect",
        f.to_str().unwrap(),
        "--no-embedded-keys",
        "--keylog",
        k.to_str().unwrap(),
    ]);
    assert!(out.contains("missing secrets: none"), "{out}");
    // Raw streams.
    let c = &cap.connections[0];
    let out = dissect_raw(&dir, &c.c2s.bytes, &c.s2c.bytes, &k, &[]);
    assert!(
        out.contains("server Finished: verified") && out.contains("raw streams carry no timing"),
        "{out}"
    );
    let json = tls13lab(&["dissect", f.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["connections"][0]["finished"][0]["verified"], true);
    let err = Command::new(BIN)
        .args(["dissect", dir.join("c2s.bin").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(err.status.code(), Some(3), "a raw stream is not a capture");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A child process killed (by its PID) when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running tshark, stopped with SIGINT when dropped (even when a test fails): tshark then
/// stops its dumpcap child and completes the file; SIGKILL would orphan dumpcap.
struct Tshark(std::process::Child);

impl Drop for Tshark {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Read `from` line by line on a thread; the receiver gets every line.
fn lines_of(from: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead as _;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_line(rx: &std::sync::mpsc::Receiver<String>, needle: &str, secs: u64) -> bool {
    wait_lines(rx, needle, secs).is_some()
}

/// Like [`wait_line`], keeping the lines up to and including the one with `needle`.
fn wait_lines(
    rx: &std::sync::mpsc::Receiver<String>,
    needle: &str,
    secs: u64,
) -> Option<Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let l = rx.recv_timeout(left).ok()?;
        let done = l.contains(needle);
        seen.push(l);
        if done {
            return Some(seen);
        }
    }
    None
}

/// A self-signed P-256 certificate for localhost, as cert.pem and key.pem in `dir` (the RSA
/// test certificates are too small for OpenSSL 3.5's default security level).
fn p256_cert(dir: &Path) -> (PathBuf, PathBuf) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

/// `openssl s_server -www -tls1_3` on 127.0.0.1:`port` for one connection, with `extra`
/// options; returned once it is accepting. Its stdin stays open: on EOF it drops its client.
fn s_server(openssl: &Path, dir: &Path, extra: &[&str]) -> (Killed, u16) {
    let (cert, key) = p256_cert(dir);
    let mut s = Command::new(openssl)
        .args([
            "s_server",
            "-accept",
            // Its own port: a number picked here and freed could be taken before it binds.
            "127.0.0.1:0",
            "-naccept",
            "1",
            "-www",
            "-tls1_3",
        ])
        .arg("-cert")
        .arg(&cert)
        .arg("-key")
        .arg(&key)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let s_out = lines_of(s.stdout.take().unwrap());
    let server = Killed(s);
    let port = wait_lines(&s_out, "ACCEPT", 20)
        .and_then(|l| {
            l.last()?
                .strip_prefix("ACCEPT 127.0.0.1:")?
                .trim()
                .parse()
                .ok()
        })
        .expect("s_server did not start (no ACCEPT 127.0.0.1:PORT line)");
    (server, port)
}

/// `openssl s_client -tls1_3` to 127.0.0.1:`port` with `extra` options and its key log in
/// `keys`: sends `GET /`, waits for s_server's answer, then closes its stdin (s_client ends the
/// connection) and gives it a moment to exit. Returns what it printed up to the answer.
fn s_client_get(openssl: &Path, port: u16, keys: &Path, extra: &[&str]) -> Vec<String> {
    use std::io::Write as _;
    let mut c = Command::new(openssl)
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{port}"),
            "-tls1_3",
        ])
        .args(extra)
        .arg("-keylogfile")
        .arg(keys)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let c_out = lines_of(c.stdout.take().unwrap());
    let mut client = Killed(c);
    stdin.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let printed = wait_lines(&c_out, "HTTP/1.0 200", 20).expect("no answer from s_server");
    std::thread::sleep(Duration::from_millis(300));
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && matches!(client.0.try_wait(), Ok(None)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    printed
}

/// A dissected s_server `-www` connection: both Finished verified, the request and the
/// response read back, no record left undecrypted.
fn assert_http_exchange_opened(d: &lab::dissect::Dissection) {
    use lab::dissect;
    assert!(
        d.finished.len() == 2 && d.finished.iter().all(|f| f.verified == Some(true)),
        "{}",
        dissect::render(d)
    );
    let sent = |dir: Direction, lead: &[u8]| {
        d.app_data
            .iter()
            .any(|a| a.direction == dir && a.data.starts_with(lead))
    };
    assert!(
        sent(Direction::ClientToServer, b"GET /"),
        "{}",
        dissect::render(d)
    );
    assert!(
        sent(Direction::ServerToClient, b"HTTP/1.0 200"),
        "{}",
        dissect::render(d)
    );
    assert_eq!(d.undecrypted, 0);
}

/// Capture one OpenSSL s_client ↔ s_server connection on lo with tshark; returns the capture,
/// the client's key log and the server port, or `None` when tshark cannot capture here.
/// `Err` when this attempt missed the connection's start (dumpcap can say "Capturing on" a
/// moment before packets flow): the caller tries again.
fn openssl_capture(openssl: &Path, dir: &Path) -> Option<Result<(PathBuf, PathBuf, u16), String>> {
    // The server first, so that tshark can filter on the port it took.
    let (server, port) = s_server(openssl, dir, &[]);
    let cap = dir.join(format!("openssl-{port}.pcapng"));
    let mut t = Command::new("tshark")
        .args(["-i", "lo", "-f", &format!("tcp port {port}"), "-w"])
        .arg(&cap)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t_err = lines_of(t.stderr.take().unwrap());
    let tshark_proc = Tshark(t);
    if !wait_line(&t_err, "Capturing on", 20) {
        eprintln!(
            "NOTICE: tshark cannot capture on lo here (not root?): skipping the OpenSSL capture"
        );
        return None;
    }
    std::thread::sleep(Duration::from_millis(500));
    let keys = dir.join(format!("client-{port}.keys"));
    s_client_get(openssl, port, &keys, &["-quiet"]);
    std::thread::sleep(Duration::from_millis(500));
    drop(server);
    drop(tshark_proc); // stops it cleanly: the file is complete
    let file = pcap::read_capture(&std::fs::read(&cap).unwrap()).unwrap();
    let complete = file.connections.iter().any(|c| {
        c.server.port() == port && c.c2s.bytes.first() == Some(&22) && !c.c2s.gap && !c.s2c.gap
    });
    if complete {
        Some(Ok((cap, keys, port)))
    } else {
        Some(Err(format!(
            "the capture missed the start of the connection: {} packets, connections {:?}",
            file.packets,
            file.connections
                .iter()
                .map(|c| (c.client, c.server))
                .collect::<Vec<_>>()
        )))
    }
}

#[test]
fn dissect_an_openssl_connection_captured_by_tshark() {
    if tshark().is_none() {
        return;
    }
    let openssl = openssl35().unwrap_or_else(|| PathBuf::from("openssl"));
    let dir = temp_dir("openssl-capture");
    let mut tries = Vec::new();
    let (cap, keys, port) = loop {
        match openssl_capture(&openssl, &dir) {
            None => return,
            Some(Ok(x)) => break x,
            Some(Err(e)) if tries.len() < 3 => tries.push(e),
            Some(Err(e)) => panic!("{e} (earlier tries: {tries:?})"),
        }
    };
    let file = pcap::read_capture(&std::fs::read(&cap).unwrap()).unwrap();
    let conn = file
        .connections
        .iter()
        .find(|c| c.server.port() == port)
        .unwrap();
    let log = KeyLog::parse(&std::fs::read_to_string(&keys).unwrap());
    let d = dissect::dissect(&conn.c2s, &conn.s2c, &log, true);
    assert_http_exchange_opened(&d);
    // tshark's own decryption of the same capture agrees with ours.
    let decode = format!("tcp.port=={port},tls");
    let keylog_opt = format!("tls.keylog_file:{}", keys.display());
    let got = tshark_view(&cap, &["-d", &decode, "-o", &keylog_opt]);
    assert_eq!(got, ledger_tshark_view(&d.ledger));
    // And the CLI says so.
    let out = tls13lab(&[
        "dissect",
        cap.to_str().unwrap(),
        "--keylog",
        keys.to_str().unwrap(),
    ]);
    assert!(out.contains("client Finished: verified"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A relay on 127.0.0.1 for one TCP connection to `upstream`: its port, and a thread that
/// gives the two byte streams (client → server, server → client) once both sides have closed.
type Streams = std::thread::JoinHandle<Result<(Vec<u8>, Vec<u8>), String>>;

fn relay(upstream: u16) -> (u16, Streams) {
    use std::io::Write as _;
    use std::net::{Shutdown, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let streams = std::thread::spawn(move || {
        let e = |e: std::io::Error| e.to_string();
        listener.set_nonblocking(true).map_err(e)?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            match listener.accept() {
                Ok((c, _)) => break c,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(x) => return Err(format!("nobody connected to the relay: {x}")),
            }
        };
        client.set_nonblocking(false).map_err(e)?;
        let server = TcpStream::connect(("127.0.0.1", upstream)).map_err(e)?;
        for s in [&client, &server] {
            s.set_read_timeout(Some(Duration::from_secs(20)))
                .map_err(e)?;
        }
        // Each way: keep what passes, pass it on, and pass the end on too.
        let pump = |mut from: TcpStream, mut to: TcpStream| {
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                let mut buf = [0u8; 16384];
                while let Ok(n @ 1..) = from.read(&mut buf) {
                    kept.extend_from_slice(&buf[..n]);
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = to.shutdown(Shutdown::Write);
                kept
            })
        };
        let up = pump(
            client.try_clone().map_err(e)?,
            server.try_clone().map_err(e)?,
        );
        let down = pump(server, client);
        Ok((up.join().unwrap(), down.join().unwrap()))
    });
    (port, streams)
}

/// The group s_client reports, in our spelling: 3.5 names a KEM group ("Negotiated TLS1.3
/// group: X25519MLKEM768") and describes a Diffie-Hellman one by its key ("Peer Temp Key: ECDH,
/// prime256v1, 256 bits").
fn s_client_group(printed: &[String]) -> Option<String> {
    printed.iter().find_map(|l| {
        if let Some(g) = l.strip_prefix("Negotiated TLS1.3 group: ") {
            return Some(g.trim().to_string());
        }
        let key: Vec<&str> = l.strip_prefix("Peer Temp Key: ")?.split(", ").collect();
        Some(match key[..] {
            ["X25519", ..] => "x25519".to_string(),
            ["ECDH", "prime256v1", ..] => "secp256r1".to_string(),
            ["ECDH", curve, ..] => curve.to_string(),
            _ => key.join(", "),
        })
    })
}

/// OpenSSL ↔ OpenSSL through a relay that keeps the two streams: the dissector, given
/// s_client's key log, names the suite, group, signature scheme and ALPN s_client reports, the
/// name s_client was told to send, and whether the server asked for another ClientHello.
#[test]
fn dissect_names_what_openssl_negotiated() {
    let Some(openssl) = or_skip(openssl35(), "the OpenSSL dissection", "TLS13LAB_OPENSSL") else {
        return;
    };
    let dir = temp_dir("openssl-relay");
    // s_server's options, s_client's, and whether a HelloRetryRequest must happen: the second
    // client's one key share is X25519 and the server takes P-256 only.
    let cases: [(&[&str], &[&str], bool); 2] = [
        (&["-alpn", "h2,http/1.1"], &["-alpn", "h2"], false),
        (
            &["-groups", "P-256"],
            &["-groups", "X25519:P-256", "-msg"],
            true,
        ),
    ];
    for (i, (server_opts, client_opts, hrr)) in cases.into_iter().enumerate() {
        let (server, port) = s_server(&openssl, &dir, server_opts);
        let (relay_port, streams) = relay(port);
        let keys = dir.join(format!("client-{i}.keys"));
        let client_opts = [client_opts, &["-servername", "localhost"]].concat();
        let printed = s_client_get(&openssl, relay_port, &keys, &client_opts);
        let (c2s, s2c) = streams.join().unwrap().unwrap();
        drop(server);
        let context = printed.join("\n");
        let said = |prefix: &str| -> &str {
            printed
                .iter()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("s_client printed no {prefix:?}:\n{context}"))
                .trim()
        };
        let (version, suite) = said("New, ").split_once(", Cipher is ").unwrap();
        let signature = said("Peer signature type: ");
        let group = s_client_group(&printed).expect("s_client names no group");
        let alpn = printed
            .iter()
            .find_map(|l| l.strip_prefix("ALPN protocol: "))
            .map(|a| a.trim().to_string());
        assert!(
            alpn.is_some() || printed.iter().any(|l| l == "No ALPN negotiated"),
            "{context}"
        );
        let hellos = printed
            .iter()
            .filter(|l| l.starts_with(">>> ") && l.ends_with(", ClientHello"))
            .count();

        let log = KeyLog::parse(&std::fs::read_to_string(&keys).unwrap());
        let stream = |bytes: Vec<u8>| lab::pcap::Stream {
            bytes,
            ..Default::default()
        };
        let (c2s, s2c) = (stream(c2s), stream(s2c));
        let d = dissect::dissect(&c2s, &s2c, &log, false);
        assert!(
            d.finished.len() == 2 && d.finished.iter().all(|f| f.verified == Some(true)),
            "{}",
            dissect::render(&d)
        );
        let n = d.negotiated.clone().expect("a ServerHello");
        assert!(n.unknown().is_empty(), "{:?}", n.unknown());
        let scheme = n.signature_scheme.known().copied().flatten();
        assert_eq!(
            (
                n.version.to_string(),
                n.suite.to_string(),
                n.group.map(|g| g.to_string()),
                scheme.map(|s| s.to_string()),
                n.alpn.clone(),
                n.server_name.as_deref(),
            ),
            (
                version.to_string(),
                suite.to_string(),
                Some(group.clone()),
                Some(signature.to_string()),
                Seen::Known(alpn.clone()),
                Some("localhost"),
            ),
            "{context}"
        );
        assert_eq!(n.hello_retry, hrr);
        if client_opts.contains(&"-msg") {
            assert_eq!(hellos, if hrr { 2 } else { 1 }, "{context}");
        }
        assert_eq!(
            (
                n.resumed,
                n.early_data.clone(),
                n.client_signature_scheme.clone()
            ),
            (
                false,
                Seen::Known(EarlyDataStatus::NotSent),
                Seen::Known(None)
            )
        );

        // The command says the same, from the raw streams.
        let out = dissect_raw(&dir, &c2s.bytes, &s2c.bytes, &keys, &[]);
        let lines = summary_block(&out, "negotiated");
        for (label, want) in [
            ("cipher suite", suite),
            ("group", &group),
            ("signature scheme", signature),
            ("alpn", alpn.as_deref().unwrap_or("none")),
            ("hello retry", if hrr { "yes" } else { "no" }),
            ("server name", "localhost"),
        ] {
            assert_eq!(summary_value(&lines, label), Some(want), "{label}\n{out}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------------------------ docs

/// The pages of the instruments (docs/hello.md, simulate.md, ladder.md, dissect.md) hold blocks
/// `<!-- BEGIN GENERATED instruments-… -->` … `<!-- END GENERATED -->` with what the tool prints,
/// and docs/img/*.svg drawings; this test regenerates them and fails when the committed docs
/// differ. `TLS13LAB_WRITE_DOCS=1 cargo test --release --test instruments docs` rewrites them.
/// (tests/docs.rs leaves blocks with other names alone, and so does this one.)
const DOC_PREFIX: &str = "instruments-";

/// `$ shown` and what `tls13lab args` prints (stdout, then stderr), run in `dir`.
fn shown(dir: &Path, shown: &str, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("SSLKEYLOGFILE")
        .output()
        .expect("run tls13lab");
    let mut s = format!("```text\n$ {shown}\n");
    s.push_str(&String::from_utf8_lossy(&out.stdout));
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        s.push_str(&format!("[exit {}]\n", out.status.code().unwrap_or(-1)));
    }
    s.push_str("```\n");
    s
}

/// Run `tls13lab` for one generated block; the block name is the command line.
fn doc_block(dir: &Path, name: &str) -> String {
    let cmd = |line: &str| -> String {
        let args: Vec<&str> = line.split_whitespace().collect();
        shown(dir, &format!("tls13lab {line}"), &args)
    };
    match name {
        "instruments-hello-default" => cmd("hello"),
        "instruments-hello-compare" => cmd("hello --compare x25519 x25519mlkem768,x25519 mlkem1024"),
        "instruments-hello-openssl" => cmd("hello --compare openssl-3.0 openssl-3.5 tls13lab"),
        "instruments-hello-preset" => cmd("hello --preset openssl-3.5"),
        "instruments-hello-shaping" => {
            cmd("hello --grease all --psk-ticket 192 --early-data --pad-to 512 --compat on")
        }
        "instruments-hello-segments" => {
            cmd("hello --key-shares x25519mlkem768,x25519 --split-at 300 --mtu 1280 --ipv6 --tcp-options 12")
        }
        "instruments-hello-variants" => shown(
            dir,
            "tls13lab hello --alpn h2,http/1.1 --compare x25519 \"--key-shares x25519 --grease all\" \"--key-shares x25519 --pad-to 512\"",
            &[
                "hello", "--alpn", "h2,http/1.1", "--compare", "x25519",
                "--key-shares x25519 --grease all", "--key-shares x25519 --pad-to 512",
            ],
        ),
        "instruments-hello-ech" | "instruments-hello-ech-compare" => {
            // The ECHConfig of docs/ech.md's connections, made from a seed.
            tls13lab_in(dir, &ECH_KEYGEN);
            let mut s = format!("```text\n$ tls13lab {} > /dev/null\n```\n", ECH_KEYGEN.join(" "));
            s.push_str(&if name == "instruments-hello-ech" {
                cmd("hello --sni localhost --key-shares x25519mlkem768 --ech-config ech.pem")
            } else {
                cmd("hello --sni localhost --key-shares x25519mlkem768 --compare --no-ech --ech-config=ech.pem --ech-grease")
            });
            s
        }
        "instruments-hello-hex" => cmd("hello --no-sni --hex"),
        "instruments-hello-from" | "instruments-hello-from-compare" => {
            // A captured hello, copied beside the command so the command line is short.
            let file = "openssl-3.5.5-no-dsa.bin";
            std::fs::copy(format!("{VECTORS}/{file}"), dir.join(file)).unwrap();
            if name == "instruments-hello-from" {
                cmd(&format!("hello --from {file}"))
            } else {
                cmd(&format!("hello --compare {file} openssl-3.5 tls13lab"))
            }
        }
        "instruments-hello-help" => cmd("hello --help"),
        "instruments-simulate-default" => cmd("simulate"),
        "instruments-simulate-exact" => cmd("simulate --bandwidth 0"),
        "instruments-simulate-bigcert" => cmd("simulate --kx classical --bandwidth 0 --cert-bytes 20000"),
        "instruments-simulate-timeline" => cmd("simulate --kx hybrid --bandwidth 0 --timeline"),
        "instruments-simulate-ech" => cmd("simulate --ech --bandwidth 0"),
        "instruments-simulate-prediction" => cmd("simulate --key-share-prediction --bandwidth 0"),
        "instruments-simulate-help" => cmd("simulate --help"),
        "instruments-ladder-commands" => {
            let mut s = String::from("```text\n");
            for (_, line) in ladder_images() {
                s.push_str(&format!("$ tls13lab {line}\n"));
            }
            s.push_str("```\n");
            s
        }
        "instruments-dissect-demo" => {
            tls13lab_in(dir, &["demo", "--once", "--pcap", "demo.pcapng"]);
            format!(
                "```text\n$ tls13lab demo --once --pcap demo.pcapng > /dev/null\n```\n{}",
                cmd("dissect demo.pcapng")
            )
        }
        "instruments-dissect-nokeys" => {
            tls13lab_in(dir, &["demo", "--once", "--pcap", "demo.pcapng"]);
            cmd("dissect demo.pcapng --no-embedded-keys")
        }
        "instruments-dissect-zero-rtt" => {
            tls13lab_in(dir, &["demo", "--once", "--pcap", "demo.pcapng"]);
            let c = &corpus()[2];
            assert_eq!(c.name, "classical 0-RTT");
            let w = pcap::pcapng(&c.events, Endpoints::default(), 1460).unwrap();
            std::fs::write(dir.join("zero-rtt.pcapng"), &w.bytes).unwrap();
            cmd("dissect zero-rtt.pcapng")
        }
        "instruments-dissect-json" => {
            tls13lab_in(dir, &["demo", "--once", "--alpn", "h2", "--pcap", "alpn.pcapng"]);
            let args = ["dissect", "alpn.pcapng", "--no-embedded-keys", "--json"];
            let out = Command::new(BIN)
                .args(args)
                .current_dir(dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{args:?}");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            format!(
                "```text\n$ tls13lab demo --once --alpn h2 --pcap alpn.pcapng > /dev/null\n\
                 $ tls13lab {}   # .connections[0].negotiated\n```\n```json\n{}\n```\n",
                args.join(" "),
                serde_json::to_string_pretty(&v["connections"][0]["negotiated"]).unwrap()
            )
        }
        "instruments-dissect-help" => cmd("dissect --help"),
        other => panic!("unknown generated block {other}"),
    }
}

/// `tls13lab ech keygen` for docs/hello.md's ECH blocks: lab::ech's settings.
const ECH_KEYGEN: [&str; 12] = [
    "ech",
    "keygen",
    "--public-name",
    "public.example",
    "--config-id",
    "1",
    "--max-name-len",
    "32",
    "--seed",
    "1",
    "--out",
    "ech.pem",
];

fn tls13lab_in(dir: &Path, args: &[&str]) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("SSLKEYLOGFILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
}

/// The drawings: file name and the command that writes it (`--svg FILE` last).
fn ladder_images() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "ladder-demo-hybrid.svg",
            "demo --once --key-shares x25519mlkem768 --svg ladder-demo-hybrid.svg",
        ),
        (
            "ladder-demo-hrr.svg",
            "demo --once --groups x25519,P-256 --server-groups secp256r1 --svg ladder-demo-hrr.svg",
        ),
        (
            "simulate-hybrid-full.svg",
            "simulate --kx hybrid --svg simulate-hybrid.svg",
        ),
        (
            "simulate-hybrid-resumed.svg",
            "simulate --kx hybrid --svg simulate-hybrid.svg",
        ),
        (
            "simulate-hybrid-0rtt.svg",
            "simulate --kx hybrid --svg simulate-hybrid.svg",
        ),
        (
            "simulate-classical-bigcert.svg",
            "simulate --kx classical --cert-bytes 20000 --svg simulate-bigcert.svg",
        ),
    ]
}

/// The drawings' contents, made by the CLI.
fn doc_images(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (file, line) in ladder_images() {
        let args: Vec<&str> = line.split_whitespace().collect();
        tls13lab_in(dir, &args);
        let written = args.last().unwrap();
        // simulate --svg F writes F (first TLS connection), F-2.svg, F-3.svg, ...
        let pick = match file {
            "simulate-hybrid-resumed.svg" => "simulate-hybrid-2.svg".to_string(),
            "simulate-hybrid-0rtt.svg" => "simulate-hybrid-3.svg".to_string(),
            _ => written.to_string(),
        };
        out.push((
            format!("img/{file}"),
            std::fs::read_to_string(dir.join(pick)).unwrap(),
        ));
    }
    out
}

fn regenerate_doc(dir: &Path, file: &str, text: &str) -> (String, Vec<String>) {
    const BEGIN: &str = "<!-- BEGIN GENERATED ";
    const END: &str = "<!-- END GENERATED";
    let mut out = String::new();
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let marker_end = rest[start..]
            .find("-->")
            .unwrap_or_else(|| panic!("{file}: bad marker"))
            + start
            + 3;
        let name = rest[start + BEGIN.len()..marker_end]
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        let end = rest[marker_end..]
            .find(END)
            .unwrap_or_else(|| panic!("{file}: {name} has no END"))
            + marker_end;
        let end_marker_end = rest[end..].find("-->").unwrap() + end + 3;
        if !name.starts_with(DOC_PREFIX) {
            out.push_str(&rest[..end_marker_end]);
        } else {
            out.push_str(&rest[..marker_end]);
            out.push('\n');
            for line in doc_block(dir, &name).lines() {
                out.push_str(line.trim_end());
                out.push('\n');
            }
            out.push_str(&rest[end..end_marker_end]);
            names.push(name);
        }
        rest = &rest[end_marker_end..];
    }
    out.push_str(rest);
    (out, names)
}

#[test]
fn docs_pages_match_what_the_instruments_print() {
    let write = std::env::var_os("TLS13LAB_WRITE_DOCS").is_some();
    let docs = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("docs");
    let dir = temp_dir("docs");
    let mut stale = Vec::new();
    let mut used = 0;
    for page in ["hello.md", "simulate.md", "ladder.md", "dissect.md"] {
        let path = docs.join(page);
        let old = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("docs/{page}: {e}"));
        let (new, names) = regenerate_doc(&dir, page, &old);
        assert!(!names.is_empty(), "docs/{page} has no generated block");
        used += names.len();
        if new != old {
            if write {
                std::fs::write(&path, new).unwrap();
            }
            stale.push(page.to_string());
        }
    }
    for (file, content) in doc_images(&dir) {
        check_xml(&content).unwrap_or_else(|e| panic!("{file}: {e}"));
        let path = docs.join(&file);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(content.as_str()) {
            if write {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &content).unwrap();
            }
            stale.push(file);
        }
    }
    assert!(used >= 15);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        write || stale.is_empty(),
        "docs/ no longer matches what the instruments print: {stale:?}\n\
         regenerate with: TLS13LAB_WRITE_DOCS=1 cargo test --release --test instruments docs"
    );
}

/// docs/illustrated/: the pages `tls13lab keys --html` writes for RFC 8448 §3, a hybrid full
/// handshake with HelloRetryRequest, a resumption with 0-RTT, an accepted ECH and an ML-DSA-44
/// chain. Regenerated and compared like the other docs
/// (`TLS13LAB_WRITE_DOCS=1` rewrites them), and read back: every byte of every record in exactly
/// one leaf showing that byte, and nothing the page would fetch.
#[test]
fn illustrated_pages_match_and_annotate_every_byte() {
    use lab::explain::InMemory;
    use lab::illustrate::{check, record_bytes};
    use tls13lab::events::Side;
    let write = std::env::var_os("TLS13LAB_WRITE_DOCS").is_some();
    let docs = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("docs/illustrated");
    let dir = temp_dir("illustrated");
    let hybrid_run = InMemory {
        hello_retry: true,
        ..InMemory::demo(1)
            .unwrap()
            .with_groups(&[NamedGroup::X25519MLKEM768])
    };
    let zero_rtt_run = InMemory {
        connection: lab::explain::Connection::ZeroRtt,
        ..InMemory::demo(1).unwrap()
    };
    let ech_run = InMemory {
        ech: true,
        ..InMemory::demo(1).unwrap()
    };
    let mldsa_run = InMemory::demo(1)
        .unwrap()
        .with_chain(&[lab::certgen::KeyAlg::MlDsa44, lab::certgen::KeyAlg::MlDsa44])
        .unwrap();
    let pages: [(&str, &str, Vec<tls13lab::events::Event>); 5] = [
        (
            "rfc8448-3.html",
            "keys --rfc8448 3 --no-export --html",
            lab::rfc8448::replay_section(3, Side::Client, None).unwrap(),
        ),
        (
            "hybrid-hrr.html",
            "keys --groups X25519MLKEM768 --hrr --no-export --html",
            lab::explain::in_memory(&hybrid_run, None).unwrap().0,
        ),
        (
            "resumed-0rtt.html",
            "keys --connection 0rtt --no-export --html",
            lab::explain::in_memory(&zero_rtt_run, None).unwrap().0,
        ),
        (
            "ech.html",
            "keys --ech --no-export --html",
            lab::explain::in_memory(&ech_run, None).unwrap().0,
        ),
        (
            "mldsa44.html",
            "keys --chain mldsa44,mldsa44 --no-export --html",
            lab::explain::in_memory(&mldsa_run, None).unwrap().0,
        ),
    ];
    let mut stale = Vec::new();
    for (file, args, events) in pages {
        let out = dir.join(file);
        let mut argv: Vec<&str> = args.split_whitespace().collect();
        let out_s = out.to_str().unwrap();
        argv.push(out_s);
        tls13lab(&argv);
        let page = std::fs::read_to_string(&out).unwrap();
        let leaves = check::check_coverage(&page, &record_bytes(&events).unwrap())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(leaves > 100, "{file}: {leaves} leaves");
        assert_eq!(check::fetches(&page), Vec::<String>::new(), "{file}");
        assert!(
            !page.contains("<script src") && !page.contains("<link"),
            "{file}"
        );
        let path = docs.join(file);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(page.as_str()) {
            if write {
                std::fs::create_dir_all(&docs).unwrap();
                std::fs::write(&path, &page).unwrap();
            }
            stale.push(file);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        write || stale.is_empty(),
        "docs/illustrated/ no longer matches what tls13lab keys --html writes: {stale:?}\n\
         regenerate with: TLS13LAB_WRITE_DOCS=1 cargo test --release --test instruments illustrated"
    );
}

/// `tls13lab demo --html` writes the demo's full connection as a page covering every byte.
#[test]
fn demo_writes_an_illustrated_page() {
    let dir = temp_dir("demo-html");
    let out = dir.join("demo.html");
    tls13lab(&["demo", "--once", "--html", out.to_str().unwrap()]);
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("tls13lab demo (in memory, seed 1)"));
    let leaves = lab::illustrate::check::leaves(&page).unwrap();
    // The demo's request and response are in it, decrypted.
    assert!(page.contains("GET / HTTP/1.0"));
    assert!(leaves.iter().any(|l| l.space == "inner"));
    assert!(lab::illustrate::check::fetches(&page).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each record of an illustrated page as its leaves show it: (wire bytes, inner bytes), the
/// leaves of each space required to tile it from offset 0.
fn page_records(page: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut leaves = lab::illustrate::check::leaves(page).unwrap();
    leaves.sort_by_key(|l| (l.record, l.space.clone(), l.off));
    let n = leaves.iter().map(|l| l.record).max().unwrap_or(0);
    let mut out = vec![(Vec::new(), Vec::new()); n];
    for l in leaves {
        let r = &mut out[l.record - 1];
        let v = if l.space == "wire" {
            &mut r.0
        } else {
            &mut r.1
        };
        assert_eq!(
            v.len(),
            l.off,
            "record {} {}: a gap or an overlap",
            l.record,
            l.space
        );
        v.extend_from_slice(&l.bytes);
    }
    out
}

/// `--html` on `client`, `server` (one page per connection: FILE, FILE-2.html) and `dissect`:
/// the page of the client's capture shows the records of the client's own page, decrypted
/// the same.
#[test]
fn client_server_and_dissect_write_illustrated_pages() {
    let dir = temp_dir("html-cli");
    let s = dir.join("s.html");
    let (mut server, port) = start_server(&["--naccept", "2", "--html", s.to_str().unwrap()]);
    let (c, cpcap) = (dir.join("c.html"), dir.join("c.pcapng"));
    for _ in 0..2 {
        tls13lab(&[
            "client",
            &format!("127.0.0.1:{port}"),
            "--insecure",
            "--html",
            c.to_str().unwrap(),
            "--pcap",
            cpcap.to_str().unwrap(),
        ]);
    }
    wait_exit(&mut server);
    let d = dir.join("d.html");
    tls13lab(&[
        "dissect",
        cpcap.to_str().unwrap(),
        "--html",
        d.to_str().unwrap(),
    ]);
    let mut pages = Vec::new();
    for f in [&c, &s, &dir.join("s-2.html"), &d] {
        let page = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(page.contains("GET / HTTP/1.0"), "{}", f.display());
        assert!(lab::illustrate::check::fetches(&page).is_empty());
        let records = page_records(&page);
        assert!(
            records.iter().filter(|r| !r.1.is_empty()).count() >= 4,
            "{}",
            f.display()
        );
        pages.push(records);
    }
    assert!(std::fs::read_to_string(&d)
        .unwrap()
        .contains("dissected: 127.0.0.1:"));
    let mut client = pages[0].clone();
    let mut dissected = pages[3].clone();
    client.sort();
    dissected.sort();
    assert_eq!(client, dissected);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hello_order_extra_and_x25519_reuse() {
    use tls13lab::messages::ExtensionType;
    let mut spec = HelloSpec::new("order");
    spec.config.extension_order = vec![ExtensionType::KeyShare, ExtensionType::SupportedVersions];
    spec.config.extra_extensions = vec![Extension::Unknown {
        typ: ExtensionType::EcPointFormats,
        body: vec![1, 0],
    }];
    spec.config.key_shares = vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519];
    spec.config.reuse_x25519 = true;
    let built = hello::build(&spec).unwrap();
    let types: Vec<ExtensionType> = built.hello.extensions.iter().map(|e| e.typ()).collect();
    assert_eq!(
        &types[..2],
        [ExtensionType::KeyShare, ExtensionType::SupportedVersions]
    );
    assert!(types.contains(&ExtensionType::EcPointFormats));
    let Some(Extension::KeyShareClient(shares)) = built.hello.find(ExtensionType::KeyShare) else {
        panic!("no key share")
    };
    // X25519MLKEM768 = ML-KEM-768 ek (1184) || X25519 (32): the same X25519 key twice.
    assert_eq!(shares[0].key_exchange[1184..], shares[1].key_exchange[..]);
    let r = describe(&built, &Framing::default(), Link::default()).unwrap();
    assert_adds_up(&r);
    // The CLI spelling.
    let out = tls13lab(&[
        "hello",
        "--order",
        "key_share,supported_versions",
        "--extra",
        "ec_point_formats=0100",
    ]);
    let first = out.lines().find(|l| l.starts_with("  ")).unwrap();
    assert!(first.contains("key_share"), "{first}");
    assert!(out.contains("ec_point_formats (0x000b)"), "{out}");
}

/// `simulate --cert-compression brotli` with a real chain: the server's flight shrinks by what
/// brotli saves on the Certificate message, and the row still counts the certificate as sent.
#[test]
fn simulate_compresses_a_real_chain_when_asked() {
    use lab::certgen::KeyAlg;
    use tls13lab::messages::enums::CertificateCompressionAlgorithm;
    let chain = simulate::ServerChain::generated(&[KeyAlg::EcdsaP256, KeyAlg::EcdsaP256], 2)
        .expect("chain");
    let plan = |cert_compression| Plan {
        net: Network {
            bandwidth_bps: 0,
            ..Network::default()
        },
        kx: vec![Kx::Hybrid],
        chain: Some(chain.clone()),
        cert_compression,
        ..Plan::default()
    };
    let full = |o: &[Outcome]| o.iter().find(|x| x.label == "hybrid full").unwrap().clone();
    let plain = full(&simulate::compare(&plan(Vec::new())).unwrap());
    let brotli =
        full(&simulate::compare(&plan(vec![CertificateCompressionAlgorithm::Brotli])).unwrap());
    assert!(plain.certificate && brotli.certificate);
    assert!(
        brotli.server_flight < plain.server_flight,
        "{} vs {}",
        brotli.server_flight,
        plain.server_flight
    );
    let compressed = brotli
        .client_events
        .iter()
        .any(|e| matches!(e, tls13lab::events::Event::Handshake(h) if h.typ == tls13lab::messages::enums::HandshakeType::CompressedCertificate));
    assert!(compressed);
}

// ------------------------------------------------------------------------------ hello: ECH

/// The ECH view of a report adds up, byte by byte, against the message's own bytes: the
/// extension's parts (RFC 9849 §5), the inner hello's extensions against its length, and
/// EncodedClientHelloInner (§5.1, §6.1.3) against the sealed payload.
fn assert_ech_adds_up(r: &HelloReport) {
    let label = &r.label;
    let e = r
        .ech
        .as_ref()
        .unwrap_or_else(|| panic!("{label}: no ECH view"));
    let items: Vec<_> = r.items.iter().filter(|i| i.code == Some(0xfe0d)).collect();
    assert_eq!(items.len(), 1, "{label}: one encrypted_client_hello");
    let it = items[0];
    assert_eq!(it.len, e.extension_len, "{label}: extension length");
    let parts: usize = it.parts.iter().map(|p| p.len).sum();
    assert_eq!(parts, it.len, "{label}: ECH parts add up to the extension");
    let lens: Vec<usize> = it.parts.iter().map(|p| p.len).collect();
    assert_eq!(
        lens,
        [
            4,
            1,
            4,
            1,
            2,
            e.enc_len,
            2,
            e.payload_len - e.tag_len,
            e.tag_len
        ],
        "{label}: parts"
    );
    // The same from the bytes: type 0 (outer), config_id, enc<0..2^16-1>, payload<1..2^16-1>.
    let b = &r.bytes[it.offset..it.offset + it.len];
    assert_eq!(b[4], 0, "{label}: ECHClientHelloType outer");
    assert_eq!(b[9], e.config_id, "{label}: config_id");
    let enc = usize::from(u16::from_be_bytes([b[10], b[11]]));
    assert_eq!((enc, e.enc_len), (32, 32), "{label}: X25519 enc");
    let at = 12 + enc;
    let payload = usize::from(u16::from_be_bytes([b[at], b[at + 1]]));
    assert_eq!(payload, e.payload_len, "{label}: payload length");
    assert_eq!(
        at + 2 + payload,
        it.len,
        "{label}: nothing after the payload"
    );
    assert_eq!(e.tag_len, 16, "{label}: AES-128-GCM tag");
    // The key share is sent once, in the outer hello.
    let shares = r.items.iter().filter(|i| i.code == Some(51)).count();
    assert_eq!(shares, 1, "{label}: one key_share");
    let Some(inner) = &e.inner else {
        // GREASE (§6.2): as long as a real offer's EncodedClientHelloInner, plus the tag.
        let g = e.grease_encoded_len.expect("GREASE sizes its payload");
        assert_eq!(g + e.tag_len, e.payload_len, "{label}: GREASE payload");
        assert_eq!(g % 32, 0, "{label}: GREASE payload rounded like §6.1.3");
        return;
    };
    // The inner hello has the outer one's fixed fields (the session id is copied, §6.1), so its
    // extensions fill the rest.
    let fixed: usize = r
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Field)
        .map(|i| i.len)
        .sum();
    let exts: usize = inner.extensions.iter().map(|x| x.len).sum();
    assert_eq!(fixed + exts, inner.message_len, "{label}: inner extensions");
    let compressed: Vec<_> = inner.extensions.iter().filter(|x| x.compressed).collect();
    assert_eq!(
        inner.outer_extensions_len,
        4 + 1 + 2 * compressed.len(),
        "{label}: ech_outer_extensions"
    );
    let sum: usize = compressed.iter().map(|x| x.len).sum();
    assert_eq!(
        inner.saved + inner.outer_extensions_len,
        sum,
        "{label}: saved"
    );
    for x in &compressed {
        let outer = r.items.iter().find(|i| i.code == Some(x.code));
        assert_eq!(
            outer.map(|i| i.len),
            Some(x.len),
            "{label}: {} outside",
            x.name
        );
    }
    assert_eq!(
        inner.encoded_len,
        inner.message_len - 4 - inner.session_id_len - inner.saved,
        "{label}: EncodedClientHelloInner before padding"
    );
    assert_eq!(
        inner.encoded_len + inner.name_padding + inner.round_padding,
        inner.sealed_len,
        "{label}: padding"
    );
    assert_eq!(inner.sealed_len % 32, 0, "{label}: §6.1.3 rounds to 32");
    assert!(inner.round_padding < 32);
    assert_eq!(
        inner.sealed_len + e.tag_len,
        e.payload_len,
        "{label}: the payload seals EncodedClientHelloInner"
    );
}

/// docs/ech.md's settings (lab::ech): ECHConfig seed 1, config_id 1, inner name localhost,
/// X25519MLKEM768 only.
fn ech_spec(label: &str, ech: tls13lab::config::EchMode) -> HelloSpec {
    let mut s = HelloSpec::new(label);
    s.config.server_name = Some(lab::ech::INNER_NAME.into());
    s.config.key_shares = vec![NamedGroup::X25519MLKEM768];
    s.config.ech = ech;
    s
}

fn ech_config() -> tls13lab::config::EchMode {
    tls13lab::config::EchMode::Config {
        list: lab::ech::key(1, 1).unwrap().list,
        grease_fallback: false,
    }
}

#[test]
fn hello_ech_outer_adds_up_and_agrees_with_docs_ech() {
    use tls13lab::config::EchMode;
    let spec = ech_spec("ech", ech_config());
    let r = report(&spec, &Framing::default(), Link::default()).unwrap();
    assert_adds_up(&r);
    assert_ech_adds_up(&r);
    let e = r.ech.as_ref().unwrap();
    assert_eq!(e.outer_sni.as_deref(), Some(lab::ech::PUBLIC_NAME));
    assert_eq!(e.inner_sni.as_deref(), Some("localhost"));
    assert_eq!(e.config_id, 1);
    let inner = e.inner.as_ref().unwrap();
    let names: Vec<&str> = inner
        .extensions
        .iter()
        .filter(|x| x.compressed)
        .map(|x| x.name.as_str())
        .collect();
    assert!(names.contains(&"key_share"), "{names:?}");
    // The hybrid share makes the outer hello 1551-ish bytes, with the share once.
    assert!((1500..1600).contains(&r.message_len), "{}", r.message_len);
    // The lab's numbers are those of docs/ech.md's connections (lab::ech), from the same
    // settings: the outer hello, the inner one, and the sealed bytes, padding and saving.
    let runs = lab::ech::runs().unwrap();
    let run = |l: &str| runs.iter().find(|x| x.label == l).unwrap();
    let accepted = run("ECH accepted");
    assert_eq!(r.message_len, accepted.client_hello_len);
    assert_eq!(accepted.ledger.ech_inner_hellos, vec![inner.message_len]);
    let offer = accepted.ledger.ech.as_ref().unwrap();
    assert_eq!(offer.encoded_inner_len, inner.sealed_len);
    assert_eq!(offer.padding, inner.name_padding + inner.round_padding);
    assert_eq!(offer.saved, inner.saved);
    let plain = report(
        &ech_spec("no", EchMode::Off),
        &Framing::default(),
        Link::default(),
    )
    .unwrap();
    assert!(plain.ech.is_none());
    assert_eq!(plain.message_len, run("no ECH").client_hello_len);
    let grease = report(
        &ech_spec("grease", EchMode::Grease),
        &Framing::default(),
        Link::default(),
    )
    .unwrap();
    assert_eq!(grease.message_len, run("GREASE ECH").client_hello_len);
    // Replay: the same seed gives the same bytes (the HPKE ephemeral key included), another
    // seed other bytes of the same sizes.
    let again = report(&spec, &Framing::default(), Link::default()).unwrap();
    assert_eq!(again.bytes, r.bytes);
    let mut other = spec.clone();
    other.seed = 2;
    let other = report(&other, &Framing::default(), Link::default()).unwrap();
    assert_ne!(other.bytes, r.bytes);
    assert_eq!(other.message_len, r.message_len);
    // A wrong byte in the accounting fails the check.
    for bump in [
        |r: &mut HelloReport| r.ech.as_mut().unwrap().payload_len += 1,
        |r: &mut HelloReport| r.ech.as_mut().unwrap().inner.as_mut().unwrap().saved -= 1,
        |r: &mut HelloReport| {
            r.ech
                .as_mut()
                .unwrap()
                .inner
                .as_mut()
                .unwrap()
                .round_padding += 1
        },
        |r: &mut HelloReport| {
            r.ech.as_mut().unwrap().inner.as_mut().unwrap().extensions[0].len += 1
        },
    ] {
        let mut bad = r.clone();
        bump(&mut bad);
        assert!(std::panic::catch_unwind(|| assert_ech_adds_up(&bad)).is_err());
    }
}

#[test]
fn hello_ech_grease_and_edits() {
    use tls13lab::config::EchMode;
    let spec = ech_spec("grease", EchMode::Grease);
    let r = report(&spec, &Framing::default(), Link::default()).unwrap();
    assert_adds_up(&r);
    assert_ech_adds_up(&r);
    let e = r.ech.as_ref().unwrap();
    assert_eq!(e.kind, hello::EchKind::Grease);
    assert_eq!(
        e.outer_sni.as_deref(),
        Some("localhost"),
        "GREASE keeps the real name"
    );
    assert!(e.inner.is_none() && e.inner_sni.is_none());
    let mut other = spec.clone();
    other.seed = 9;
    let other = report(&other, &Framing::default(), Link::default()).unwrap();
    assert_ne!(other.bytes, r.bytes);
    assert_eq!(
        report(&spec, &Framing::default(), Link::default())
            .unwrap()
            .bytes,
        r.bytes
    );
    // GREASE ECH with RFC 8701 GREASE and padding, as browsers send it, still adds up.
    let mut chrome = spec.clone();
    chrome.grease = Grease::ALL;
    chrome.padding = HelloPadding::ToSize(2000);
    let r = report(&chrome, &Framing::default(), Link::default()).unwrap();
    assert_adds_up(&r);
    assert_ech_adds_up(&r);
    assert_eq!(r.message_len, 2000);
    // A real offer's outer hello is the AAD of the sealed one (§5.2): no edits after sealing.
    let mut edited = ech_spec("edited", ech_config());
    edited.grease = Grease::ALL;
    let err = report(&edited, &Framing::default(), Link::default()).unwrap_err();
    assert!(err.contains("§5.2"), "{err}");
    // A PSK goes inside; the outer hello carries a GREASE one of the same shape (§6.1.2).
    let mut psk = ech_spec("psk", ech_config());
    psk.psk = Some(PskOffer {
        identity_len: 100,
        early_data: false,
        suite: CipherSuite::TLS_AES_128_GCM_SHA256,
    });
    let r = report(&psk, &Framing::default(), Link::default()).unwrap();
    assert_adds_up(&r);
    assert_ech_adds_up(&r);
    let inner = r.ech.as_ref().unwrap().inner.as_ref().unwrap();
    let inner_psk = inner.extensions.iter().find(|x| x.code == 41).unwrap();
    let outer_psk = r.items.iter().find(|i| i.code == Some(41)).unwrap();
    assert_eq!(inner_psk.len, outer_psk.len);
    assert_eq!(
        r.items.last().unwrap().code,
        Some(41),
        "pre_shared_key last"
    );
}

#[test]
fn hello_cli_ech_compare_json_and_errors() {
    let dir = temp_dir("hello-ech");
    let out = Command::new(BIN)
        .args([
            "ech",
            "keygen",
            "--public-name",
            "public.example",
            "--config-id",
            "1",
            "--max-name-len",
            "32",
            "--seed",
            "1",
            "--out",
        ])
        .arg(dir.join("ech.pem"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let b64 = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let pem = dir.join("ech.pem");
    let pem = pem.to_str().unwrap();
    let with = format!("--ech-config {b64}");
    let out = tls13lab(&[
        "hello",
        "--sni",
        "localhost",
        "--key-shares",
        "x25519mlkem768",
        "--compare",
        "--no-ech",
        &with,
        "--ech-grease",
    ]);
    let line = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{out}"))
            .to_string()
    };
    let ech = line("encrypted_client_hello (65037)");
    let cells: Vec<&str> = ech.split_whitespace().skip(2).collect();
    assert_eq!(cells, ["-", "190", "(+190)", "190", "(+190)"], "{ech}");
    let sni = line("server_name (0)");
    assert!(
        sni.contains("23 (+5)"),
        "public.example is 5 longer than localhost: {sni}"
    );
    assert!(line("handshake message").contains("1551 (+184)"), "{out}");
    assert!(
        out.contains("outer SNI public.example, inner SNI localhost"),
        "{out}"
    );
    assert!(out.contains("--no-ech: no ECH: server_name host_name \"localhost\" in the clear"));
    assert!(out.contains("--ech-grease: GREASE ECH"), "{out}");
    // The file and the base64 are the same config: the same bytes.
    let file = tls13lab(&["hello", "--sni", "localhost", "--ech-config", pem, "--hex"]);
    let b64_out = tls13lab(&["hello", "--sni", "localhost", "--ech-config", &b64, "--hex"]);
    assert_eq!(file, b64_out);
    for want in [
        "Encrypted ClientHello (RFC 9849)",
        "inner SNI               localhost (sealed)",
        "payload: AEAD tag",
        "→ ech_outer_extensions",
    ] {
        assert!(file.contains(want), "missing {want:?} in\n{file}");
    }
    // JSON carries the ECH view.
    let json = tls13lab(&["hello", "--sni", "localhost", "--ech-config", pem, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["ech"]["kind"], "config");
    assert_eq!(v["ech"]["outer_sni"], "public.example");
    assert_eq!(v["ech"]["inner_sni"], "localhost");
    assert_eq!(
        v["ech"]["inner"]["sealed_len"].as_u64().unwrap() + 16,
        v["ech"]["payload_len"].as_u64().unwrap()
    );
    let plain = tls13lab(&["hello", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&plain).unwrap();
    assert!(v["ech"].is_null());
    // Bad configs and forbidden edits are clear errors.
    let garbage = dir.join("garbage.pem");
    std::fs::write(&garbage, "not pem").unwrap();
    // Exit 2 for a bad option, 3 for a bad file (as everywhere in the CLI).
    for (args, code, want) in [
        (
            vec!["--ech-config", "!!not base64!!"],
            2,
            "neither a file nor base64",
        ),
        (vec!["--ech-config", "AAAA"], 2, "not an ECHConfigList"),
        (
            vec!["--ech-config", garbage.to_str().unwrap()],
            3,
            "ECHCONFIG",
        ),
        (
            vec!["--ech-config", pem, "--grease", "all"],
            2,
            "RFC 9849 §5.2",
        ),
        (vec!["--compare", "--ech-config nope!"], 2, "--ech-config"),
    ] {
        let out = Command::new(BIN).arg("hello").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `encrypted_client_hello` of each ClientHello the client sent, parsed here from the
/// plaintext records' bytes without the library's decoders: (whole extension with its 4-byte
/// header, enc, payload), and each ClientHello's length.
fn ech_extensions_on_the_wire(l: &tls13lab::ledger::Ledger) -> Vec<(usize, (usize, usize, usize))> {
    use tls13lab::events::{Direction, Epoch};
    use tls13lab::messages::enums::ContentType;
    let stream: Vec<u8> = l
        .records
        .iter()
        .map(|r| &r.record)
        .filter(|r| {
            r.direction == Direction::ClientToServer
                && r.epoch == Epoch::Plaintext
                && r.inner_type == ContentType::Handshake
        })
        .flat_map(|r| r.content.iter().copied())
        .collect();
    let be = |b: &[u8]| b.iter().fold(0usize, |a, x| (a << 8) | usize::from(*x));
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= stream.len() {
        let len = be(&stream[at + 1..at + 4]);
        let msg = &stream[at..at + 4 + len];
        at += 4 + len;
        assert_eq!(msg[0], 1, "only ClientHellos go out in plaintext here");
        // legacy_version, random, then session id, cipher suites, compression methods.
        let mut i = 4 + 2 + 32;
        i += 1 + usize::from(msg[i]);
        i += 2 + be(&msg[i..i + 2]);
        i += 1 + usize::from(msg[i]);
        let end = i + 2 + be(&msg[i..i + 2]);
        i += 2;
        while i < end {
            let (typ, n) = (be(&msg[i..i + 2]), be(&msg[i + 2..i + 4]));
            if typ == 0xfe0d {
                let d = &msg[i + 4..i + 4 + n];
                assert_eq!(d[0], 0, "outer type");
                let enc = be(&d[6..8]);
                let payload = be(&d[8 + enc..10 + enc]);
                assert_eq!(10 + enc + payload, n, "nothing after the payload");
                out.push((msg.len(), (4 + n, enc, payload)));
            }
            i += 4 + n;
        }
    }
    out
}

/// Checks one ledger's ECH hellos against the wire: the parts add up to the extension's
/// length, and, where the inner hello is known, payload = encoded inner + tag and
/// inner = 4 + encoded ClientHello + session id + saved.
fn assert_ech_parts_add_up(l: &tls13lab::ledger::Ledger, wire: &[(usize, (usize, usize, usize))]) {
    assert_eq!(
        l.ech_hellos.len(),
        wire.len(),
        "one entry per ClientHelloOuter"
    );
    let table = l.table();
    for (h, (outer_len, (ext, enc, payload))) in l.ech_hellos.iter().zip(wire) {
        let p = &h.parts;
        assert_eq!(h.outer_len, *outer_len);
        assert_eq!((p.enc_len, p.payload_len), (*enc, *payload));
        assert_eq!(4 + 1 + 4 + 1 + 2 + p.enc_len + 2 + p.payload_len, *ext);
        assert_eq!(p.extension_len(), *ext);
        assert!(
            table.contains(&format!(
                "encrypted_client_hello {ext} = header 4 + type 1 + "
            )),
            "{table}"
        );
        if let Some(i) = &p.inner {
            assert_eq!(p.tag_len, 16);
            assert_eq!(p.payload_len, i.encoded_inner_len + p.tag_len);
            assert_eq!(i.encoded_inner_len % 32, 0, "§6.1.3 rounds up to 32");
            assert_eq!(
                i.inner_len,
                4 + (i.encoded_inner_len - i.padding) + i.session_id + i.saved
            );
            assert!(!i.outer_extensions.is_empty() && i.saved > 0);
            assert!(table.contains(&format!("inner {} = header 4 + ClientHello", i.inner_len)));
        }
    }
}

#[test]
fn ech_ledgers_of_both_sides_agree_on_the_extension_parts() {
    use tls13lab::events::{EchOutcome, EchStatus};
    let runs = lab::ech::runs().expect("ECH runs");
    let run = |label: &str| runs.iter().find(|r| r.label == label).expect(label);
    for label in ["ECH accepted", "retry with retry_configs"] {
        let r = run(label);
        let wire = ech_extensions_on_the_wire(&r.ledger);
        assert_eq!(wire.len(), 1, "{label}");
        assert_ech_parts_add_up(&r.ledger, &wire);
        assert_ech_parts_add_up(&r.server_ledger, &wire);
        // The server's view, rebuilt from what it received and opened, is the client's.
        assert_eq!(r.ledger.ech_hellos, r.server_ledger.ech_hellos, "{label}");
        let inner = r.ledger.ech_hellos[0].parts.inner.as_ref().expect("inner");
        assert_eq!(r.ledger.ech_inner_hellos, vec![inner.inner_len]);
        assert_eq!(r.server_ledger.ech_inner_hellos, vec![inner.inner_len]);
        assert_eq!(r.ledger.ech.as_ref().unwrap().outcome, EchOutcome::Accepted);
        let s = r.server_ledger.ech_server.as_ref().expect("server ECH");
        assert_eq!(s.status, EchStatus::Accepted);
        let line = format!(
            "ECH accepted: SNI inner {}, outer {}",
            lab::ech::INNER_NAME,
            lab::ech::PUBLIC_NAME
        );
        assert!(r.ledger.table().contains(&line), "{}", r.ledger.table());
        assert!(r.server_ledger.table().contains(&line));
    }
    // Without ECH neither ledger has an ECH block.
    let plain = run("no ECH");
    assert!(plain.ledger.ech_hellos.is_empty() && plain.server_ledger.ech_hellos.is_empty());
    assert!(plain.server_ledger.ech_server.is_none());
    assert!(!plain.server_ledger.table().contains("ECH"));
}

#[test]
fn ech_ledgers_show_only_the_outer_parts_of_grease_and_of_a_rejected_offer() {
    use tls13lab::events::EchStatus;
    let runs = lab::ech::runs().expect("ECH runs");
    for label in ["GREASE ECH", "stale config: rejected"] {
        let r = runs.iter().find(|r| r.label == label).expect(label);
        let wire = ech_extensions_on_the_wire(&r.ledger);
        assert_eq!(wire.len(), 1, "{label}");
        assert_ech_parts_add_up(&r.ledger, &wire);
        assert_ech_parts_add_up(&r.server_ledger, &wire);
        // No key of the server's opens it: the outer parts only, and no inner hello.
        let s = &r.server_ledger;
        assert_eq!(s.ech_server.as_ref().unwrap().status, EchStatus::Rejected);
        assert!(s.ech_hellos[0].parts.inner.is_none(), "{label}");
        assert!(s.ech_inner_hellos.is_empty());
        let t = s.table();
        assert!(
            t.contains("ECH rejected, retry_configs sent: SNI inner -, outer "),
            "{t}"
        );
        assert!(t.contains(": not opened here"), "{t}");
        // The client agrees on every outer part.
        let (c, sv) = (&r.ledger.ech_hellos[0], &s.ech_hellos[0]);
        assert_eq!(c.outer_len, sv.outer_len);
        assert_eq!(
            (
                c.parts.config_id,
                c.parts.kdf,
                c.parts.aead,
                c.parts.enc_len,
                c.parts.payload_len
            ),
            (
                sv.parts.config_id,
                sv.parts.kdf,
                sv.parts.aead,
                sv.parts.enc_len,
                sv.parts.payload_len
            )
        );
    }
    // GREASE has no inner hello on the client either; a rejected real offer keeps what the
    // client sealed (it did seal it, for nothing).
    let grease = runs.iter().find(|r| r.label == "GREASE ECH").unwrap();
    assert!(grease.ledger.ech_hellos[0].parts.inner.is_none());
    assert!(grease.ledger.table().contains("(GREASE, §6.2)"));
    let rejected = runs
        .iter()
        .find(|r| r.label == "stale config: rejected")
        .unwrap();
    assert!(rejected.ledger.ech_hellos[0].parts.inner.is_some());
}

#[test]
fn ech_ledgers_after_a_hello_retry_show_both_client_hellos() {
    use lab::ech;
    use std::sync::Arc;
    use tls13lab::config::EchMode;
    use tls13lab::messages::enums::NamedGroup;
    let key = ech::key(1, 1).expect("key");
    let list = key.list.clone();
    let (mut s, root) = ech::server(vec![key]).expect("server");
    // The client's one share is X25519MLKEM768; the server takes X25519 only: a retry.
    s.groups = vec![NamedGroup::X25519];
    let mut c = ech::client(
        root,
        EchMode::Config {
            list,
            grease_fallback: false,
        },
    );
    c.groups = vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519];
    let (r, err) = ech::run("hrr", c, &Arc::new(s), 1).expect("run");
    assert!(err.is_none(), "{:?}", err);
    assert_eq!(r.end, "connected");
    assert!(r.ledger.negotiated.as_ref().unwrap().hello_retry);
    let wire = ech_extensions_on_the_wire(&r.ledger);
    assert_eq!(wire.len(), 2);
    assert_ech_parts_add_up(&r.ledger, &wire);
    assert_ech_parts_add_up(&r.server_ledger, &wire);
    assert_eq!(r.ledger.ech_hellos, r.server_ledger.ech_hellos);
    let enc: Vec<usize> = r
        .ledger
        .ech_hellos
        .iter()
        .map(|h| h.parts.enc_len)
        .collect();
    assert_eq!(enc, vec![32, 0], "§6.1.5: the second enc is empty");
    for l in [&r.ledger, &r.server_ledger] {
        assert!(l.ech_hellos.iter().all(|h| h.parts.inner.is_some()));
        let t = l.table();
        assert!(t.contains("  ClientHello 2: outer "), "{t}");
        assert!(t.contains(" enc 2+0 + payload 2+"), "{t}");
    }
}

// ------------------------------------------------------------------------- dissect and ECH

/// An ECH connection between our client and server over TCP (with a HelloRetryRequest when
/// the server takes only secp256r1), captured by both: dissect opens ClientHelloInner with the
/// key log's ECH_SECRET and ECH_CONFIG (keyed by the outer random, RFC 9850 §5) or with
/// `--ech-key`, and reads the rest of the handshake with the secrets keyed by the inner random
/// (§4); without either it says what would open it; a wrong key or secret does not open it.
#[test]
fn dissect_opens_the_inner_client_hello_of_ech_captures() {
    let dir = temp_dir("dissect-ech");
    let key = dir.join("k.pem");
    let config = tls13lab(&[
        "ech",
        "keygen",
        "--public-name",
        "public.example",
        "--config-id",
        "7",
        "--out",
        key.to_str().unwrap(),
    ]);
    let config = config.trim();
    let other = dir.join("other.pem");
    tls13lab(&[
        "ech",
        "keygen",
        "--public-name",
        "public.example",
        "--config-id",
        "7",
        "--out",
        other.to_str().unwrap(),
    ]);
    for (case, extra) in [("plain", &[][..]), ("hrr", &["--groups", "secp256r1"][..])] {
        let spcap = dir.join(format!("{case}-s.pcapng"));
        let cpcap = dir.join(format!("{case}-c.pcapng"));
        let cjson = dir.join(format!("{case}-c.json"));
        let sjson = dir.join(format!("{case}-s"));
        let mut args = vec![
            "--naccept",
            "1",
            "--ech-key",
            key.to_str().unwrap(),
            "--pcap",
            spcap.to_str().unwrap(),
            "--json-dir",
            sjson.to_str().unwrap(),
            "--show-secrets",
        ];
        args.extend_from_slice(extra);
        let (mut server, port) = start_server(&args);
        tls13lab(&[
            "client",
            &format!("127.0.0.1:{port}"),
            "--insecure",
            "--sni",
            "secret.example",
            "--ech-config",
            config,
            "--pcap",
            cpcap.to_str().unwrap(),
            "--json",
            cjson.to_str().unwrap(),
            "--show-secrets",
        ]);
        wait_exit(&mut server);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&cjson).unwrap()).unwrap();
        assert_eq!(v["ech"], "accepted", "{case}: {v}");
        // `keys --ledger` explains both sides' reports: HPKE's steps, every Seal opened, and the
        // TLS transcript the inner one (so each Finished names the messages it covers).
        let sjson = sjson.join("conn-000001.json");
        for (side, report) in [("client", &cjson), ("server", &sjson)] {
            let out = tls13lab(&["keys", "--ledger", report.to_str().unwrap()]);
            let covers = if case == "hrr" {
                "verify_data = HMAC(finished_key, Transcript-Hash(message_hash..server Finished))"
            } else {
                "verify_data = HMAC(finished_key, Transcript-Hash(ClientHello..server Finished))"
            };
            for want in [
                "Encrypted ClientHello (RFC 9849)",
                "opens    with key, nonce and aad",
                ": ECH accepted",
                covers,
            ] {
                assert!(out.contains(want), "{case} {side}: no {want:?} in\n{out}");
            }
            assert!(!out.contains("does not open"), "{case} {side}\n{out}");
        }
        // Both sides' key logs are RFC 9850's: the client's as well as the server's.
        for f in [&spcap, &cpcap] {
            let what = format!("{case} {}", f.display());
            let cap = pcap::read_capture(&std::fs::read(f).unwrap()).unwrap();
            let conn = &cap.connections[0];
            let d = dissect::dissect(&conn.c2s, &conn.s2c, &cap.keylog, true);
            let ech = d.ech.as_ref().expect("an ECH view");
            assert_eq!(ech.accepted, Some(true), "{what}: {ech:?}");
            assert_eq!(
                ech.hellos.len(),
                if case == "hrr" { 2 } else { 1 },
                "{what}"
            );
            let first = &ech.hellos[0];
            assert_eq!(first.outer_server_name.as_deref(), Some("public.example"));
            assert_eq!(first.config_id, 7);
            assert_eq!(first.enc.len(), 32);
            let inner = first.inner.as_ref().expect("ClientHelloInner");
            assert_eq!(inner.server_name.as_deref(), Some("secret.example"));
            assert!(inner.from_outer.iter().any(|e| e == "key_share"), "{what}");
            assert_eq!(inner.encoded_len % 32, 0, "§6.1.3 rounds to 32");
            // The traffic secrets go by the inner random, ECH's lines by the outer one.
            assert_eq!(d.client_random.as_deref(), Some(inner.random.as_str()));
            assert_ne!(first.outer_random, inner.random);
            assert!(cap.keylog.lines.iter().any(|l| l.label == "ECH_SECRET"
                && tls13lab::events::hex(&l.client_random) == first.outer_random));
            if case == "hrr" {
                let second = &ech.hellos[1];
                assert!(second.enc.is_empty(), "§6.1.5: no enc the second time");
                assert_eq!(second.sequence, Some(1), "the same HPKE context");
                assert!(second.inner.is_some(), "{what}");
                assert!(d.negotiated.as_ref().is_some_and(|n| n.hello_retry));
            }
            assert!(
                d.finished.len() == 2 && d.finished.iter().all(|x| x.verified == Some(true)),
                "{what}: {:?}",
                d.finished
            );
            assert!(d.app_data.iter().any(|a| a.data.starts_with(b"GET /")));
            assert_eq!(d.undecrypted, 0, "{what}");
            assert_eq!(
                d.negotiated.as_ref().and_then(|n| n.server_name.as_deref()),
                Some("secret.example")
            );
        }
        let s = spcap.to_str().unwrap();
        let out = tls13lab(&["dissect", s]);
        for want in [
            "ClientHelloOuter 1: server name public.example, HKDF-SHA256, AES-128-GCM, config_id 7, enc 32 bytes",
            "server name secret.example, random",
            "opened with ECH_SECRET and ECH_CONFIG from the key log",
            "accepted: ServerHello.random carries the confirmation",
            "server Finished: verified",
            "client Finished: verified",
            "missing secrets: none",
        ] {
            assert!(out.contains(want), "{case}: missing {want:?} in\n{out}");
        }
        if case == "hrr" {
            assert!(out.contains("(HPKE sequence 1)"), "{out}");
        }
        // The key log without its ECH lines, and the server's key instead.
        let cap = pcap::read_capture(&std::fs::read(&spcap).unwrap()).unwrap();
        let no_ech = KeyLog {
            lines: cap
                .keylog
                .lines
                .iter()
                .filter(|l| !l.label.starts_with("ECH_"))
                .cloned()
                .collect(),
            bad_lines: 0,
        };
        let k = dir.join(format!("{case}-no-ech.keys"));
        std::fs::write(&k, no_ech.to_text()).unwrap();
        let base = [
            "dissect",
            s,
            "--no-embedded-keys",
            "--keylog",
            k.to_str().unwrap(),
        ];
        let with = |more: &[&str]| tls13lab(&[&base[..], more].concat());
        let out = with(&["--ech-key", key.to_str().unwrap()]);
        for want in [
            "opened with the --ech-key of config_id 7 (public_name public.example)",
            "server name secret.example, random",
            "client Finished: verified",
            "missing secrets: none",
        ] {
            assert!(out.contains(want), "{case}: missing {want:?} in\n{out}");
        }
        // Neither: the inner hello stays sealed, and so does the handshake, whose secrets
        // go by a random only the inner hello shows.
        let out = with(&[]);
        for want in [
            "ClientHelloInner: encrypted",
            "to open it: ECH_SECRET and ECH_CONFIG for ClientHelloOuter.random",
            "or --ech-key with the private key of config_id 7",
            "acceptance unknown",
            "server Finished: not checked",
        ] {
            assert!(out.contains(want), "{case}: missing {want:?} in\n{out}");
        }
        assert!(!out.contains("secret.example"), "{out}");
        // A key with the right config_id but another private key.
        let out = with(&["--ech-key", other.to_str().unwrap()]);
        assert!(
            out.contains("problem: the --ech-key of config_id 7 did not open the payload")
                && out.contains("ClientHelloInner: encrypted"),
            "{out}"
        );
        // A wrong ECH_SECRET.
        let mut wrong = cap.keylog.clone();
        for l in wrong.lines.iter_mut().filter(|l| l.label == "ECH_SECRET") {
            l.secret[0] ^= 1;
        }
        let w = dir.join(format!("{case}-wrong.keys"));
        std::fs::write(&w, wrong.to_text()).unwrap();
        let out = tls13lab(&[
            "dissect",
            s,
            "--no-embedded-keys",
            "--keylog",
            w.to_str().unwrap(),
        ]);
        assert!(
            out.contains(
                "problem: the key log's ECH_SECRET and ECH_CONFIG for this random do not open the payload"
            ) && out.contains("ClientHelloInner: encrypted"),
            "{out}"
        );
        // ... which the right key still overrides.
        let out = tls13lab(&[
            "dissect",
            s,
            "--no-embedded-keys",
            "--keylog",
            w.to_str().unwrap(),
            "--ech-key",
            key.to_str().unwrap(),
        ]);
        assert!(out.contains("client Finished: verified"), "{out}");
        let json = tls13lab(&["dissect", s, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let e = &v["connections"][0]["ech"];
        assert_eq!(e["accepted"], true, "{e}");
        assert_eq!(e["hellos"][0]["inner"]["server_name"], "secret.example");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `openssl ech -public_name public.example` into `dir/name`: the file, and its ECHConfigList
/// as s_client's `-ech_config_list` takes it (the ECHCONFIG block's base64 on one line).
fn openssl_ech_key(openssl: &Path, dir: &Path, name: &str) -> (PathBuf, String) {
    let file = dir.join(name);
    let out = Command::new(openssl)
        .args(["ech", "-public_name", "public.example", "-out"])
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "openssl ech: {out:?}");
    let pem = std::fs::read_to_string(&file).unwrap();
    let list: String = pem
        .lines()
        .skip_while(|l| *l != "-----BEGIN ECHCONFIG-----")
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    assert!(!list.is_empty(), "no ECHCONFIG block in\n{pem}");
    (file, list)
}

/// OpenSSL 4.0.3 on both ends of an ECH connection, through the relay: `--ech-key` with
/// `openssl ech`'s file opens ClientHelloInner (OpenSSL writes no ECH_SECRET lines), and
/// s_client's key log reads the rest of the handshake, its secrets keyed by
/// ClientHelloInner.random as RFC 9850 §4 says; a stale key file does not open it.
#[test]
fn dissect_opens_an_openssl_40_ech_connection() {
    use tls13lab::crypto::ech::EchKeyPair;
    let Some(openssl) = or_skip(
        openssl40(),
        "the OpenSSL 4.0 ECH dissection",
        "TLS13LAB_OPENSSL40",
    ) else {
        return;
    };
    assert_openssl_version(&openssl, "OpenSSL 4.0");
    let dir = temp_dir("openssl-ech");
    let (key, config) = openssl_ech_key(&openssl, &dir, "k.pem");
    // The key the server had before it rotated: a config it no longer serves.
    let (stale, _) = openssl_ech_key(&openssl, &dir, "stale.pem");
    let pair = EchKeyPair::from_pem(&std::fs::read_to_string(&key).unwrap()).unwrap();
    let config_id = pair.config.contents().unwrap().key_config.config_id;

    let server_keys = dir.join("server.keys");
    let (server, port) = s_server(
        &openssl,
        &dir,
        &[
            "-ech_key",
            key.to_str().unwrap(),
            "-keylogfile",
            server_keys.to_str().unwrap(),
        ],
    );
    let (relay_port, streams) = relay(port);
    let keys = dir.join("client.keys");
    // s_server wrote cert.pem into `dir`: trusting it makes s_client report plain ECH success
    // (an unverified name is "ECH: BAD NAME").
    let cert = dir.join("cert.pem");
    let printed = s_client_get(
        &openssl,
        relay_port,
        &keys,
        &[
            "-ech_config_list",
            &config,
            "-servername",
            "localhost",
            "-CAfile",
            cert.to_str().unwrap(),
        ],
    );
    let (c2s, s2c) = streams.join().unwrap().unwrap();
    drop(server);
    let context = printed.join("\n");
    for want in [
        "ECH: success: 1",
        "ECH: inner: localhost",
        "ECH: outer: public.example",
    ] {
        assert!(printed.iter().any(|l| l == want), "{want:?}:\n{context}");
    }

    // OpenSSL 4.0.3 logs no ECH_SECRET or ECH_CONFIG (ssl_log_secret: traffic secrets only),
    // so only the private key can open the inner hello.
    let log_text = std::fs::read_to_string(&keys).unwrap();
    let log = KeyLog::parse(&log_text);
    assert!(!log.lines.is_empty(), "empty key log");
    assert!(
        !log.lines.iter().any(|l| l.label.starts_with("ECH_")),
        "OpenSSL 4.0 now writes ECH lines: test ECH_SECRET too\n{log_text}"
    );
    let stream = |bytes: Vec<u8>| lab::pcap::Stream {
        bytes,
        ..Default::default()
    };
    let (c2s, s2c) = (stream(c2s), stream(s2c));
    let opts = dissect::DissectOptions {
        ech_keys: std::slice::from_ref(&pair),
    };
    let d = dissect::dissect_with(&c2s, &s2c, &log, false, opts);
    let ech = d.ech.as_ref().expect("an ECH view");
    assert_eq!(ech.accepted, Some(true), "{}", dissect::render(&d));
    assert_eq!(ech.hellos.len(), 1);
    let outer = &ech.hellos[0];
    assert_eq!(outer.outer_server_name.as_deref(), Some("public.example"));
    assert_eq!(outer.config_id, config_id);
    let inner = outer.inner.as_ref().expect("ClientHelloInner");
    assert_eq!(inner.server_name.as_deref(), Some("localhost"));
    assert_ne!(outer.outer_random, inner.random);
    // Which random OpenSSL keys its secrets by: every line of s_client's log (and s_server's)
    // goes by ClientHelloInner.random, none by the outer one, as RFC 9850 §4 says.
    for (who, text) in [
        ("s_client", log_text.clone()),
        ("s_server", std::fs::read_to_string(&server_keys).unwrap()),
    ] {
        let randoms: std::collections::BTreeSet<String> = KeyLog::parse(&text)
            .lines
            .iter()
            .map(|l| tls13lab::events::hex(&l.client_random))
            .collect();
        assert!(
            randoms.len() == 1 && randoms.contains(&inner.random),
            "{who}'s key log keys {randoms:?} (inner random {}, outer {})",
            inner.random,
            outer.outer_random
        );
    }
    assert_eq!(d.client_random.as_deref(), Some(inner.random.as_str()));
    assert_http_exchange_opened(&d);
    assert_eq!(
        d.negotiated.as_ref().and_then(|n| n.server_name.as_deref()),
        Some("localhost")
    );

    // The command says the same, from the raw streams.
    let out = dissect_raw(
        &dir,
        &c2s.bytes,
        &s2c.bytes,
        &keys,
        &["--ech-key", key.to_str().unwrap()],
    );
    for want in [
        format!(
            "ClientHelloInner.random {} (keys the traffic secrets)",
            inner.random
        ),
        format!(
            "ClientHelloOuter.random {} (keys ECH_SECRET, ECH_CONFIG)",
            outer.outer_random
        ),
        "server name public.example".into(),
        format!("config_id {config_id}"),
        format!("opened with the --ech-key of config_id {config_id} (public_name public.example)"),
        "server name localhost, random".into(),
        "accepted: ServerHello.random carries the confirmation".into(),
        "server Finished: verified".into(),
        "client Finished: verified".into(),
        "missing secrets: none".into(),
    ] {
        assert!(out.contains(&want), "missing {want:?} in\n{out}");
    }

    // The stale key: whether or not its config_id is the one the hello names (OpenSSL picks
    // them), its private key is not the server's, so the inner hello stays sealed; the key
    // log's secrets, under the inner random, then fit no random the capture shows.
    let out = dissect_raw(
        &dir,
        &c2s.bytes,
        &s2c.bytes,
        &keys,
        &["--ech-key", stale.to_str().unwrap()],
    );
    for want in [
        "did not open the payload",
        "ClientHelloInner: encrypted",
        "acceptance unknown",
        "key log: no secrets for this connection",
        "note: ECH was offered: if the server accepted it, the traffic secrets are keyed by \
         ClientHelloInner.random",
        "server Finished: not checked",
    ] {
        assert!(out.contains(want), "stale key: missing {want:?} in\n{out}");
    }
    assert!(!out.contains("server name localhost"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------ captured hellos, fingerprints

/// Every file of tests/vectors/clienthello/ that holds ClientHellos (captures, raw records).
fn captured_hello_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(VECTORS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("bin" | "pcap" | "pcapng" | "hex")
            )
        })
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no captures in {VECTORS}");
    v
}

/// `found`, or (outside CI) a NOTICE that `what` is skipped; with CI=true a missing tool fails.
fn or_skip_tool<T>(found: Option<T>, what: &str, why: &str) -> Option<T> {
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI must run {what}: {why}"
        );
        eprintln!("NOTICE: skipping {what}: {why}");
    }
    found
}

/// A classic pcap (raw IPv4) of one TCP connection 127.0.0.1:49152 → 127.0.0.2:443 whose
/// client sends `c2s` in segments of at most `mss` bytes: what tshark reads for a raw file.
fn pcap_of_client_stream(c2s: &[u8], mss: usize) -> Vec<u8> {
    fn packet(seq: u32, ack: u32, flags: u8, from_client: bool, payload: &[u8]) -> Vec<u8> {
        let (src, dst, sp, dp): ([u8; 4], [u8; 4], u16, u16) = if from_client {
            ([127, 0, 0, 1], [127, 0, 0, 2], 49_152, 443)
        } else {
            ([127, 0, 0, 2], [127, 0, 0, 1], 443, 49_152)
        };
        let mut p = vec![0x45, 0];
        p.extend(((40 + payload.len()) as u16).to_be_bytes());
        p.extend([0, 1, 0x40, 0, 64, 6, 0, 0]);
        p.extend(src);
        p.extend(dst);
        p.extend(sp.to_be_bytes());
        p.extend(dp.to_be_bytes());
        p.extend(seq.to_be_bytes());
        p.extend(ack.to_be_bytes());
        p.extend([5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
        p.extend(payload);
        p
    }
    let mut out = Vec::new();
    out.extend(0xa1b2_c3d4u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend([0; 8]);
    out.extend(65_535u32.to_le_bytes());
    out.extend(101u32.to_le_bytes()); // LINKTYPE_RAW
    let mut t = 0u32;
    let mut put = |p: Vec<u8>| {
        t += 1;
        out.extend(t.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend((p.len() as u32).to_le_bytes());
        out.extend((p.len() as u32).to_le_bytes());
        out.extend(p);
    };
    const SYN: u8 = 0x02;
    const ACK: u8 = 0x10;
    const PSH: u8 = 0x08;
    put(packet(999, 0, SYN, true, &[]));
    put(packet(4999, 1000, SYN | ACK, false, &[]));
    put(packet(1000, 5000, ACK, true, &[]));
    let mut seq = 1000u32;
    for chunk in c2s.chunks(mss) {
        put(packet(seq, 5000, ACK | PSH, true, chunk));
        seq += chunk.len() as u32;
    }
    put(packet(5000, seq, ACK, false, &[]));
    out
}

/// tshark's JA3 and JA3 string of every ClientHello in a capture, sorted. `ports`: TCP ports
/// to read as TLS.
fn tshark_ja3(file: &Path, ports: &[u16]) -> Vec<(String, String)> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file);
    for p in ports {
        cmd.args(["-d", &format!("tcp.port=={p},tls")]);
    }
    let out = cmd
        .args(["-Y", "tls.handshake.type == 1", "-T", "fields"])
        .args(["-E", "occurrence=a", "-E", "aggregator=|"])
        .args(["-e", "tls.handshake.ja3", "-e", "tls.handshake.ja3_full"])
        .stderr(Stdio::null())
        .output()
        .expect("run tshark");
    assert!(out.status.success(), "tshark failed on {}", file.display());
    let mut v = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (h, f) = line.split_once('\t').unwrap_or((line, ""));
        for (h, f) in h.split('|').zip(f.split('|')) {
            v.push((h.to_string(), f.to_string()));
        }
    }
    v.sort();
    v
}

/// The independent JA4: the `ja4plus` package from PyPI (pinned), installed once into
/// ~/.cache/tls13lab/ja4plus-VERSION by pip. Its ClientHello parser and JA4 functions read
/// each hello (one record around it); returns JA4, JA4_r, JA4_o, JA4_ro per hello.
const JA4PLUS: &str = "1.4.0";

fn ja4plus_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let dir = PathBuf::from(home).join(format!(".cache/tls13lab/ja4plus-{JA4PLUS}"));
    let works = |d: &Path| {
        Command::new("python3")
            .args(["-c", "import ja4plus.fingerprinters.ja4"])
            .env("PYTHONPATH", d)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if works(&dir) {
        return Some(dir);
    }
    let ok = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--root-user-action=ignore",
        ])
        .arg("--target")
        .arg(&dir)
        .arg(format!("ja4plus=={JA4PLUS}"))
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (ok && works(&dir)).then_some(dir)
}

fn ja4plus(dir: &Path, hellos: &[Vec<u8>]) -> Vec<[String; 4]> {
    const SCRIPT: &str = r#"
import sys
from ja4plus.utils.tls_utils import parse_tls_handshake
from ja4plus.fingerprinters.ja4 import generate_ja4, get_raw_fingerprint
for line in sys.stdin:
    msg = bytes.fromhex(line.strip())
    info = parse_tls_handshake(bytes([22, 3, 1]) + len(msg).to_bytes(2, "big") + msg)
    print("\t".join([generate_ja4(info), get_raw_fingerprint(info), generate_ja4(info, True),
                     get_raw_fingerprint(info, True)]))
"#;
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .env("PYTHONPATH", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    let input: String = hellos
        .iter()
        .map(|h| format!("{}\n", hex::encode(h)))
        .collect();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "ja4plus failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<String> = l.split('\t').map(String::from).collect();
            [f[0].clone(), f[1].clone(), f[2].clone(), f[3].clone()]
        })
        .collect()
}

#[test]
fn captured_hellos_add_up_and_fingerprint_as_tshark_and_ja4plus_do() {
    let tshark = or_skip_tool(
        tshark(),
        "the JA3 check against tshark",
        "tshark is not installed",
    );
    let ja4 = or_skip_tool(
        ja4plus_dir(),
        "the JA4 check against ja4plus",
        "python3 -m pip could not install ja4plus from PyPI",
    );
    let dir = temp_dir("captured-hellos");
    for file in captured_hello_files() {
        let data = std::fs::read(&file).unwrap();
        let name = file.display().to_string();
        let hellos = hello::client_hellos(&data).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!hellos.is_empty(), "{name}: no ClientHello");
        let mut ours = Vec::new();
        for (i, h) in hellos.iter().enumerate() {
            // (1) Every byte accounted for, at two links.
            for link in [Link::default(), Link::ipv6(1280, 12).unwrap()] {
                let r =
                    hello::report_from(h, &name, link).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_adds_up(&r);
                assert_eq!(
                    r.bytes, h.message,
                    "{name}: the report is of the captured bytes"
                );
                let starts: Vec<usize> = r.records.iter().skip(1).map(|x| x.msg_offset).collect();
                assert_eq!(starts, h.record_starts, "{name}: records as captured");
            }
            let fp = lab::fingerprint::client_hello(&h.message).unwrap();
            // The command shows the same, text and JSON.
            let index = (i + 1).to_string();
            let text = tls13lab(&["hello", "--from", &name, "--index", &index]);
            assert!(
                text.contains(&fp.ja4) && text.contains(&fp.ja3_full),
                "{name}:\n{text}"
            );
            let json: serde_json::Value = serde_json::from_str(&tls13lab(&[
                "hello", "--from", &name, "--index", &index, "--json",
            ]))
            .unwrap();
            assert_eq!(json["fingerprints"]["ja4"], fp.ja4.as_str(), "{name}");
            assert_eq!(json["message_len"], h.message.len(), "{name}");
            eprintln!("{name} #{}: JA3 {} JA4 {}", i + 1, fp.ja3, fp.ja4);
            ours.push(fp);
        }
        // (2) JA3 and its string as tshark computes them.
        if tshark.is_some() {
            let (capture, ports) = if data.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a])
                || data.starts_with(&[0xd4, 0xc3, 0xb2, 0xa1])
            {
                let cap = pcap::read_capture(&data).unwrap();
                let ports = cap.connections.iter().map(|c| c.server.port()).collect();
                (file.clone(), ports)
            } else {
                // Raw records (or a message, framed as one record): a capture of our own,
                // in segments of 1000 bytes so that tshark reassembles them.
                let stream = match hellos[0].record_version {
                    Some(_) => data.clone(),
                    None => {
                        let m = &hellos[0].message;
                        [&[22, 3, 1][..], &(m.len() as u16).to_be_bytes(), m].concat()
                    }
                };
                let p = dir.join(format!(
                    "{}.pcap",
                    file.file_name().unwrap().to_string_lossy()
                ));
                std::fs::write(&p, pcap_of_client_stream(&stream, 1000)).unwrap();
                (p, vec![443])
            };
            let mut want: Vec<(String, String)> = ours
                .iter()
                .map(|f| (f.ja3.clone(), f.ja3_full.clone()))
                .collect();
            want.sort();
            assert_eq!(tshark_ja3(&capture, &ports), want, "{name}: JA3 as tshark");
        }
        // (3) JA4 (and its raw and wire-order forms) as ja4plus computes them.
        if let Some(d) = &ja4 {
            let messages: Vec<Vec<u8>> = hellos.iter().map(|h| h.message.clone()).collect();
            let theirs = ja4plus(d, &messages);
            assert_eq!(theirs.len(), ours.len(), "{name}");
            for (o, t) in ours.iter().zip(&theirs) {
                assert_eq!(
                    [&o.ja4, &o.ja4_r, &o.ja4_o, &o.ja4_ro].map(String::as_str),
                    t.each_ref().map(String::as_str),
                    "{name}: JA4, JA4_r, JA4_o, JA4_ro as ja4plus"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hello_from_errors_and_compare() {
    let files = captured_hello_files();
    let first = files[0].display().to_string();
    // --compare takes a captured hello beside a preset.
    let out = tls13lab(&["hello", "--compare", &first, "openssl-3.5"]);
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(out.lines().next().unwrap().contains(&name), "{out}");
    assert!(out.contains(&format!("{name}: JA3 ")), "{out}");
    // A wrong index, a truncated file and a file that holds no hello are clear errors.
    let dir = temp_dir("hello-from-errors");
    let data = std::fs::read(&files[0]).unwrap();
    let cut = dir.join("cut.bin");
    std::fs::write(&cut, &data[..data.len() / 2]).unwrap();
    let junk = dir.join("junk.txt");
    std::fs::write(&junk, "GET / HTTP/1.1\r\n").unwrap();
    for (args, want) in [
        (vec!["--from", &first, "--index", "99"], "--index 99"),
        (
            vec!["--from", cut.to_str().unwrap()],
            "no complete ClientHello",
        ),
        (vec!["--from", junk.to_str().unwrap()], "not a pcap"),
        (
            vec!["--from", &first, "--grease", "all"],
            "--grease does not apply",
        ),
    ] {
        let out = Command::new(BIN).arg("hello").args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pcapng of a connection with a HelloRetryRequest, cut into 300-byte segments: both
/// ClientHellos come back from `hello --from` (records joined across segments), `dissect` shows
/// the same fingerprints under each hello (JA4S under each ServerHello), and tshark agrees on JA3.
#[test]
fn hellos_and_fingerprints_from_a_segmented_capture_with_a_hello_retry() {
    let conn = corpus()
        .into_iter()
        .find(|c| c.name == "hrr+auth+padding+keyupdate")
        .unwrap();
    let sent = |d: Direction, t: u8| -> Vec<Vec<u8>> {
        conn.events
            .iter()
            .filter_map(|e| match e {
                Event::Handshake(h) if h.direction == d && h.bytes.first() == Some(&t) => {
                    Some(h.bytes.clone())
                }
                _ => None,
            })
            .collect()
    };
    let (client_hellos, server_hellos) = (
        sent(Direction::ClientToServer, 1),
        sent(Direction::ServerToClient, 2),
    );
    assert_eq!((client_hellos.len(), server_hellos.len()), (2, 2));
    let dir = temp_dir("hrr-hellos");
    let file = dir.join("hrr.pcapng");
    let written = pcap::pcapng(&conn.events, Endpoints::default(), 300).unwrap();
    std::fs::write(&file, &written.bytes).unwrap();

    let found = hello::client_hellos(&written.bytes).unwrap();
    let messages: Vec<Vec<u8>> = found.iter().map(|h| h.message.clone()).collect();
    assert_eq!(messages, client_hellos);
    for h in &found {
        // One record each here; its 5 + len bytes came in 300-byte segments.
        let carried: usize = h.segments.iter().sum();
        assert_eq!(carried, 5 + h.message.len(), "{}", h.origin);
        assert!(h.segments.iter().all(|s| *s <= 300));
        assert_adds_up(&hello::report_from(h, "hrr", Link::default()).unwrap());
    }
    let f = file.to_str().unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&tls13lab(&["hello", "--from", f, "--index", "2", "--json"])).unwrap();
    let want = lab::fingerprint::client_hello(&client_hellos[1]).unwrap();
    assert_eq!(json["fingerprints"]["ja3"], want.ja3.as_str());
    assert_eq!(
        json["capture"]["tcp_segments"].as_array().unwrap().len(),
        found[1].segments.len()
    );

    // dissect: the fingerprints under each hello.
    let cap = pcap::read_capture(&written.bytes).unwrap();
    let c = &cap.connections[0];
    let d = dissect::dissect(&c.c2s, &c.s2c, &cap.keylog, true);
    let shown: Vec<_> = d
        .messages
        .iter()
        .filter_map(|m| m.client_fingerprints.clone())
        .collect();
    let want: Vec<_> = client_hellos
        .iter()
        .map(|m| lab::fingerprint::client_hello(m).unwrap())
        .collect();
    assert_eq!(shown, want);
    let shown: Vec<_> = d
        .messages
        .iter()
        .filter_map(|m| m.server_fingerprints.clone())
        .collect();
    let want_s: Vec<_> = server_hellos
        .iter()
        .map(|m| lab::fingerprint::server_hello(m).unwrap())
        .collect();
    assert_eq!(shown, want_s);
    assert!(d.unread_hellos.is_empty());
    let text = dissect::render(&d);
    for w in &want {
        assert!(
            text.contains(&format!("JA3 {}  JA4 {}", w.ja3, w.ja4)),
            "{text}"
        );
    }
    // The client's side alone: no ServerHello, so no message is read, but the hello's
    // fingerprints are still shown.
    let alone = dissect::dissect(&c.c2s, &pcap::Stream::default(), &cap.keylog, true);
    assert!(alone.messages.is_empty());
    assert_eq!(
        alone
            .unread_hellos
            .first()
            .and_then(|m| m.client_fingerprints.as_ref()),
        Some(&want[0])
    );
    let alone_text = dissect::render(&alone);
    assert!(
        alone_text.contains(&format!("JA3 {}  JA4 {}", want[0].ja3, want[0].ja4)),
        "{alone_text}"
    );
    for w in &want_s {
        assert!(text.contains(&format!("JA4S {}", w.ja4s)), "{text}");
    }
    if or_skip_tool(
        tshark(),
        "tshark's JA3 of the HelloRetryRequest capture",
        "tshark is absent",
    )
    .is_some()
    {
        let mut pairs: Vec<_> = want
            .iter()
            .map(|w| (w.ja3.clone(), w.ja3_full.clone()))
            .collect();
        pairs.sort();
        assert_eq!(tshark_ja3(&file, &[443]), pairs);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The server's per-connection line and JSON carry the client's JA3/JA4 and our JA4S, computed
/// from the hellos it recorded.
#[test]
fn the_server_line_and_json_carry_the_fingerprints() {
    let dir = temp_dir("server-fingerprints");
    // Killed on drop: a failing step below leaves no server listening.
    let mut server = Killed(
        Command::new(BIN)
            .args([
                "server",
                "--listen",
                "127.0.0.1:0",
                "--naccept",
                "1",
                "--json-dir",
            ])
            .arg(&dir)
            .env_remove("SSLKEYLOGFILE")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut out = std::io::BufReader::new(server.0.stdout.take().unwrap());
    let mut first = String::new();
    use std::io::BufRead as _;
    out.read_line(&mut first).unwrap();
    let port = first.trim().rsplit(':').next().unwrap().to_string();
    tls13lab(&[
        "client",
        &format!("127.0.0.1:{port}"),
        "--insecure",
        "--alpn",
        "h2,http/1.1",
    ]);
    wait_exit(&mut server.0);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("conn-000001.json")).unwrap())
            .unwrap();
    let hello_of = |t: &str| -> Vec<u8> {
        let m = json["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["bytes"].as_str().unwrap().starts_with(t))
            .unwrap();
        hex::decode(m["bytes"].as_str().unwrap()).unwrap()
    };
    let c = lab::fingerprint::client_hello(&hello_of("01")).unwrap();
    let s = lab::fingerprint::server_hello(&hello_of("02")).unwrap();
    assert_eq!(json["fingerprints"]["client"]["ja4"], c.ja4.as_str());
    assert_eq!(
        json["fingerprints"]["client"]["ja3_full"],
        c.ja3_full.as_str()
    );
    assert_eq!(json["fingerprints"]["server"]["ja4s"], s.ja4s.as_str());
    // TLS 1.3, no SNI (the client connects to an IP address), ALPN h2 first.
    assert!(
        c.ja4.starts_with("t13i") && c.ja4[8..10] == *"h2",
        "{}",
        c.ja4
    );
    let line = rest.lines().find(|l| l.starts_with("conn #1 ")).unwrap();
    assert!(
        line.contains(&format!("; JA4 {}, JA3 {};", c.ja4, c.ja3)) && line.ends_with("; ok"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// docs/clienthellos.md is what `lab::hello::captures_page` prints for every capture in
/// tests/vectors/clienthello/ (issue 28 item 7); `TLS13LAB_WRITE_DOCS=1` rewrites it.
#[test]
fn clienthellos_page_matches_the_captures() {
    let mut captures: Vec<(String, Vec<u8>)> = std::fs::read_dir(VECTORS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("bin" | "pcapng" | "pcap")
            )
        })
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    captures.sort();
    assert!(captures.len() >= 8, "{} captures", captures.len());
    // Our own default beside them: the hello `tls13lab client` sends (a bare message).
    let ours = hello::build(&hello::preset("tls13lab").unwrap()).unwrap();
    captures.push((
        "tls13lab (default, built)".into(),
        ours.message.encoded.clone(),
    ));
    let page = hello::captures_page(&captures).unwrap();
    // Every capture has its row, and the page shows what the captures hold: Chromium draws two
    // X25519 scalars, Firefox one.
    for (name, _) in &captures {
        assert!(page.contains(&format!("| `{name}` |")), "{name}");
    }
    let row = |p: &str| {
        page.lines()
            .find(|l| l.starts_with(&format!("| `{p}")))
            .unwrap()
            .to_string()
    };
    assert!(row("chromium").contains("| no |"), "{}", row("chromium"));
    assert!(row("firefox").contains("| yes |"), "{}", row("firefox"));
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/clienthellos.md"
    ));
    if std::env::var_os("TLS13LAB_WRITE_DOCS").is_some() {
        std::fs::write(path, &page).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(path).unwrap_or_default(),
        page,
        "docs/clienthellos.md is stale: TLS13LAB_WRITE_DOCS=1 cargo test --release --workspace --test instruments clienthellos"
    );
}

/// A post-quantum ECH config (draft-ietf-hpke-pq) through the CLI: `keys --ech --ech-kem`
/// explains the KEM's Encap with its enc, and `hello --ech-config` names the config's KEM
/// with what its enc adds over DHKEM(X25519)'s.
#[test]
fn keys_and_hello_show_a_post_quantum_ech_kem() {
    use tls13lab::crypto::hpke::Kem;
    let dir = temp_dir("pq-ech");
    for (arg, suite, kem) in [
        ("mlkem768", "0x41,1,1", Kem::MlKem768),
        ("xwing", "0x647a,1,1", Kem::XWing),
    ] {
        let name = kem.id().to_string();
        let out = tls13lab(&["keys", "--ech", "--ech-kem", arg, "--no-export"]);
        for want in [
            format!("Encap / Decap: {name}, a KEM"),
            format!("    enc      {} bytes\n", kem.enc_len()),
            format!("enc, {} bytes\n", kem.enc_len()),
            "ECH accepted".to_string(),
        ] {
            assert!(out.contains(&want), "{arg}: missing {want:?} in\n{out}");
        }
        let pem = dir.join(format!("{arg}.pem"));
        let pem = pem.to_str().unwrap();
        tls13lab(&[
            "ech",
            "keygen",
            "--public-name",
            "public.example",
            "--suite",
            suite,
            "--seed",
            "1",
            "--out",
            pem,
        ]);
        let out = tls13lab(&["hello", "--ech-config", pem]);
        let base = Kem::X25519HkdfSha256.enc_len();
        let want = format!(
            "KEM                     {name}: enc {} bytes, {} more than DHKEM(X25519)'s {base}",
            kem.enc_len(),
            kem.enc_len() - base
        );
        assert!(out.contains(&want), "missing {want:?} in\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
