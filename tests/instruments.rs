//! The research instruments (src/lab/, docs/hello.md, docs/simulate.md, docs/ladder.md,
//! docs/dissect.md): the ClientHello lab's byte accounting and presets, the ladder SVG, the
//! network simulator's round-trip claims, pcapng export and dissection (checked against tshark
//! when it is installed).

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tls13lab::config::HelloPadding;
use tls13lab::lab::hello::{
    self, describe, report, Framing, Grease, HelloReport, HelloSpec, ItemKind, PskOffer,
};
use tls13lab::lab::tcp::Link;
use tls13lab::messages::layout::check_tiling;
use tls13lab::messages::{
    CipherSuite, DecodeContext, Extension, HandshakeMessage, HandshakePayload, NamedGroup,
};

const BIN: &str = env!("CARGO_BIN_EXE_tls13lab");
const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/clienthello");

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
        NamedGroup::X448,
        NamedGroup::ffdhe2048,
        NamedGroup::secp521r1,
    ];
    s.config.key_shares = s.config.groups.clone();
    v.push(s);
    let mut s = HelloSpec::new("avoid 256..511");
    s.config.alpn = vec![b"h2".to_vec()];
    s.config.compat_mode = true;
    s.psk = Some(PskOffer {
        identity_len: 100,
        early_data: false,
        suite: CipherSuite::TLS_AES_128_GCM_SHA256,
    });
    s.padding = HelloPadding::Avoid256To511;
    v.push(s);
    v
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
fn hello_edits_do_what_they_say() {
    let specs = specs();
    let r = report(&specs[3], &Framing::default(), Link::default()).unwrap();
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

    // Synthetic shares have the sizes of their groups.
    let r = report(&specs[4], &Framing::default(), Link::default()).unwrap();
    let ks = r.items.iter().find(|i| i.code == Some(51)).unwrap();
    assert_eq!(ks.len, 4 + 2 + (4 + 56) + (4 + 256) + (4 + 133));
    // 256..511 is padded to 512.
    let r = report(&specs[5], &Framing::default(), Link::default()).unwrap();
    assert_eq!(r.message_len, 512);
    // Same seed, same bytes; another seed, other random bytes but the same sizes.
    let a = report(&specs[3], &Framing::default(), Link::default()).unwrap();
    assert_eq!(a.hex, r_hex(&specs[3]));
    let mut other = specs[3].clone();
    other.seed = 99;
    let b = report(&other, &Framing::default(), Link::default()).unwrap();
    assert_ne!(a.hex, b.hex);
    assert_eq!(a.message_len, b.message_len);
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

/// OpenSSL 3.5: `TLS13LAB_OPENSSL`, else what scripts/build-openssl.sh prints (a cache hit after
/// tests/interop_openssl.rs built it; the first run builds it, as the interop tests do).
fn openssl35() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TLS13LAB_OPENSSL").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-openssl.sh");
    let out = Command::new("bash")
        .arg(&script)
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
    let Some(bin) = openssl35() else {
        eprintln!(
            "NOTICE: skipping the live OpenSSL 3.5 capture: scripts/build-openssl.sh gave no binary (or set TLS13LAB_OPENSSL)"
        );
        return;
    };
    let version = openssl_version(&bin).unwrap_or_default();
    assert!(
        version.starts_with("OpenSSL 3.5"),
        "{}: {version}",
        bin.display()
    );
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
