//! `tls13lab probe` against real servers on 127.0.0.1: `tls13lab server` and OpenSSL 3.0,
//! 3.5 and 4.0 `s_server`, each started (by PID, killed on drop) with a configuration the
//! probe's capability findings must equal. The default-configuration runs also write the
//! conformance and tolerance table of docs/probe.md: regenerated here and compared, rewritten
//! with `TLS13LAB_WRITE_DOCS=1 cargo test --release -p tls13lab-cli --test probe`.
//!
//! A missing OpenSSL is a NOTICE and a skip outside CI (env CI unset), a failure in CI.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tls13lab");

/// A child process killed (by its PID) and reaped on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A scratch directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("tls13lab-probe-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `tls13lab server --listen 127.0.0.1:0 ARGS`: the process and its port.
fn ours(args: &[&str], dir: &Path) -> (Proc, u16) {
    let mut child = Command::new(BIN)
        .args(["server", "--listen", "127.0.0.1:0"])
        .args(args)
        .current_dir(dir)
        .env_remove("SSLKEYLOGFILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tls13lab server");
    let stdout = child.stdout.take().unwrap();
    let proc = Proc(child);
    let (tx, rx) = std::sync::mpsc::channel();
    // Drain stdout for the server's life: one summary line per connection.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("no listening line");
    let port = first
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("first line {first:?}"));
    (proc, port)
}

/// A port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `openssl s_server -accept 127.0.0.1:PORT ARGS`, once it accepts connections. Its stdin
/// stays open (s_server reads commands from it).
fn s_server(bin: &Path, args: &[&str], dir: &Path) -> (Proc, u16) {
    for _ in 0..5 {
        let port = free_port();
        let child = Command::new(bin)
            .arg("s_server")
            .args(["-accept", &format!("127.0.0.1:{port}")])
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn s_server");
        let mut proc = Proc(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return (proc, port);
            }
            if proc.0.try_wait().ok().flatten().is_some() {
                break; // the port was taken meanwhile: try another
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    panic!("s_server {args:?} did not start");
}

/// `tls13lab probe 127.0.0.1:PORT --sni localhost --json ARGS`, parsed.
fn probe(port: u16, args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .args(["probe", &format!("127.0.0.1:{port}"), "--sni", "localhost"])
        .args(["--json", "--timeout", "5"])
        .args(args)
        .output()
        .expect("run probe");
    assert!(
        out.status.success(),
        "probe {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("probe JSON")
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// Names of the offers accepted in `list` (groups, suites, schemes).
fn accepted(caps: &Value, list: &str) -> BTreeSet<String> {
    caps[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list}"))
        .iter()
        .filter(|o| o["accepted"] == Value::Bool(true))
        .map(|o| s(&o["name"]))
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn order(caps: &Value, pref: &str) -> Vec<String> {
    caps[pref]["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(s)
        .collect()
}

fn tickets(caps: &Value) -> Vec<Value> {
    caps["tickets"].as_array().unwrap().clone()
}

/// An OpenSSL binary, or None (with a NOTICE) when it is absent outside CI.
fn openssl(version: &str) -> Option<PathBuf> {
    let found = match version {
        "3.0" => Some(PathBuf::from(
            std::env::var_os("TLS13LAB_OPENSSL30").unwrap_or_else(|| "openssl".into()),
        )),
        _ => {
            let (env, crate_version) = match version {
                "3.5" => ("TLS13LAB_OPENSSL", "300.5.5"),
                _ => ("TLS13LAB_OPENSSL40", "400.0.2"),
            };
            std::env::var_os(env)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    // scripts/build-openssl.sh: a cache hit prints the path at once; a miss
                    // builds (once) as the interop tests do.
                    let script = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
                        .join("scripts/build-openssl.sh");
                    let out = Command::new("bash")
                        .arg(script)
                        .env("OPENSSL_SRC_VERSION", crate_version)
                        .stdin(Stdio::null())
                        .stderr(Stdio::inherit())
                        .output()
                        .ok()?;
                    let p = String::from_utf8_lossy(&out.stdout)
                        .lines()
                        .last()?
                        .trim()
                        .to_string();
                    (out.status.success() && !p.is_empty()).then(|| PathBuf::from(p))
                })
        }
    };
    let ok = found.as_ref().is_some_and(|b| {
        Command::new(b)
            .arg("version")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&format!(" {version}.")))
    });
    if ok {
        return found;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "OpenSSL {version} is missing (CI is set)"
    );
    eprintln!("NOTICE: OpenSSL {version} not found: its probe runs are skipped");
    None
}

/// A self-signed P-256 certificate for localhost, as `openssl req -x509` makes it.
fn certificate(openssl: &Path, dir: &Path) {
    let st = Command::new(openssl)
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args([
            "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "30",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
        ])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "openssl req");
}

/// One implementation's default-configuration run, for docs/probe.md.
struct Column {
    name: String,
    report: Value,
}

#[test]
fn probe_findings_match_each_server_configuration() {
    let dir = TempDir::new("main");
    let d = dir.0.as_path();
    let mut columns = Vec::new();

    // tls13lab server, default configuration: every case must be answered as RFC 8446 says.
    let (_p, port) = ours(&["--cert-out", "ours.pem"], d);
    let r = probe(port, &["--cafile", d.join("ours.pem").to_str().unwrap()]);
    let caps = &r["capabilities"];
    assert_eq!(s(&caps["tls13"]), "completed");
    assert_eq!(s(&caps["tls12_only"]), "alert protocol_version");
    assert_eq!(
        accepted(caps, "groups").len(),
        caps["groups"].as_array().unwrap().len(),
        "the CLI server accepts every group it implements: {caps}"
    );
    assert_eq!(
        s(&caps["certificate"]["verification"]).split(' ').next(),
        Some("verifies")
    );
    for c in r["conformance"].as_array().unwrap() {
        assert_eq!(s(&c["verdict"]), "ok", "tls13lab server: {c}");
    }
    for c in r["tolerance"].as_array().unwrap() {
        assert_eq!(s(&c["answer"]), "completed", "tls13lab server: {c}");
    }
    columns.push(Column {
        name: "tls13lab server".into(),
        report: r,
    });
    drop(_p);

    // tls13lab server, restricted: groups, suites, ALPN, tickets, 0-RTT, compression, ECH.
    let ech = Command::new(BIN)
        .args([
            "ech",
            "keygen",
            "--public-name",
            "public.example",
            "--out",
            "ech.pem",
        ])
        .args(["--seed", "7"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(ech.status.success());
    let ech_b64 = String::from_utf8_lossy(&ech.stdout)
        .lines()
        .last()
        .unwrap()
        .trim()
        .to_string();
    let (_p, port) = ours(
        &[
            "--groups",
            "secp256r1,x25519",
            "--suites",
            "aes256gcm,chacha20",
            "--alpn",
            "h2",
            "--tickets",
            "3",
            "--early-data",
            "1024",
            "--cert-compression",
            "zlib",
            "--ee-groups",
            "on",
            "--ech-key",
            "ech.pem",
            "--ticket-lifetime",
            "600",
        ],
        d,
    );
    let r = probe(port, &["--only", "capabilities"]);
    let caps = &r["capabilities"];
    assert_eq!(
        accepted(caps, "groups"),
        set(&["secp256r1", "x25519"]),
        "{caps}"
    );
    assert_eq!(order(caps, "group_preference"), ["secp256r1", "x25519"]);
    assert_eq!(s(&caps["hrr_without_share"]), "secp256r1");
    assert_eq!(s(&caps["hrr_for_least_preferred_share"]), "no HRR");
    assert_eq!(
        caps["ee_supported_groups"],
        serde_json::json!(["secp256r1", "x25519"])
    );
    assert_eq!(
        accepted(caps, "suites"),
        set(&["TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"])
    );
    assert_eq!(
        order(caps, "suite_preference"),
        ["TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]
    );
    assert_eq!(s(&caps["alpn"]), "h2");
    let t = tickets(caps);
    assert_eq!(t.len(), 3, "{caps}");
    for t in &t {
        assert_eq!(t["lifetime"], 600);
        assert_eq!(t["max_early_data"], 1024);
    }
    assert_eq!(s(&caps["certificate"]["compression"]), "zlib");
    assert_eq!(s(&caps["resumption_psk_dhe_ke"]), "resumed");
    assert_eq!(s(&caps["resumption_psk_ke"]), "resumed");
    assert_eq!(s(&caps["early_data"]), "accepted");
    assert_eq!(s(&caps["early_data_replay"]), "rejected");
    assert_eq!(s(&caps["ech"]["grease"]), "completed");
    assert_eq!(
        caps["ech"]["retry_configs"],
        serde_json::json!(["public.example"])
    );
    assert_eq!(s(&caps["ech"]["config_source"]), "retry_configs");
    assert_eq!(s(&caps["ech"]["offer"]), "accepted");
    assert_eq!(s(&caps["ech"]["retry_configs_base64"]), ech_b64);
    let r = probe(
        port,
        &["--only", "capabilities", "--ech-config-list", &ech_b64],
    );
    assert_eq!(s(&r["capabilities"]["ech"]["config_source"]), "given");
    assert_eq!(s(&r["capabilities"]["ech"]["offer"]), "accepted");
    drop(_p);

    // Two chains side by side, ECDSA P-256 and ML-DSA-65 (seeded, made by `tls13lab cert`):
    // each signature scheme offered alone gets the chain that can answer it.
    for (dir, chain) in [
        ("ec", "ecdsa-p256,ecdsa-p256"),
        ("mldsa", "mldsa65,mldsa65"),
    ] {
        let st = Command::new(BIN)
            .args(["cert", "--chain", chain, "--out", dir])
            .current_dir(d)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
    let (_p, port) = ours(
        &[
            "--cert",
            "ec/chain.pem",
            "--key",
            "ec/leaf.key",
            "--cert",
            "mldsa/chain.pem",
            "--key",
            "mldsa/leaf.key",
        ],
        d,
    );
    let r = probe(
        port,
        &[
            "--only",
            "capabilities",
            "--cafile",
            d.join("ec/root.pem").to_str().unwrap(),
        ],
    );
    let caps = &r["capabilities"];
    assert_eq!(
        accepted(caps, "signature_schemes"),
        set(&["ecdsa_secp256r1_sha256", "mldsa65"]),
        "{caps}"
    );
    let chain = &caps["certificate"];
    assert_eq!(s(&chain["signature_scheme"]), "ecdsa_secp256r1_sha256");
    let pem = std::fs::read_to_string(d.join("ec/chain.pem")).unwrap();
    assert_eq!(
        chain["certificates"].as_array().unwrap().len(),
        pem.matches("BEGIN CERTIFICATE").count()
    );
    assert!(s(&chain["verification"]).starts_with("verifies"), "{chain}");
    assert_eq!(
        s(&chain["certificates"][0]["signed_with"]),
        "ecdsa-with-SHA256"
    );
    drop(_p);

    // --targets: JSON lines in the file's order, comments and blank lines skipped.
    let (_p1, port1) = ours(&["--groups", "x25519"], d);
    let (_p2, port2) = ours(&["--groups", "secp256r1"], d);
    std::fs::write(
        d.join("targets.txt"),
        format!("# two servers\n127.0.0.1:{port1}\n\n127.0.0.1:{port2}  # the second\n"),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args([
            "probe",
            "--targets",
            d.join("targets.txt").to_str().unwrap(),
        ])
        .args([
            "--json",
            "--only",
            "capabilities",
            "--concurrency",
            "2",
            "--rate",
            "200",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(s(&lines[0]["target"]), format!("127.0.0.1:{port1}"));
    assert_eq!(s(&lines[1]["target"]), format!("127.0.0.1:{port2}"));
    assert_eq!(
        accepted(&lines[0]["capabilities"], "groups"),
        set(&["x25519"])
    );
    assert_eq!(
        accepted(&lines[1]["capabilities"], "groups"),
        set(&["secp256r1"])
    );
    drop((_p1, _p2));

    // tls13lab server forcing a HelloRetryRequest, psk_dhe_ke only, no 0-RTT, one ticket.
    let (_p, port) = ours(
        &[
            "--groups",
            "secp384r1",
            "--psk-modes",
            "dhe",
            "--early-data",
            "0",
            "--tickets",
            "1",
        ],
        d,
    );
    let r = probe(port, &["--only", "capabilities"]);
    let caps = &r["capabilities"];
    assert_eq!(caps["hello_retry"], true, "{caps}");
    assert_eq!(s(&caps["group"]), "secp384r1");
    assert_eq!(accepted(caps, "groups"), set(&["secp384r1"]));
    assert_eq!(tickets(caps).len(), 1);
    assert_eq!(tickets(caps)[0]["max_early_data"], Value::Null);
    assert_eq!(s(&caps["resumption_psk_dhe_ke"]), "resumed");
    assert_eq!(s(&caps["resumption_psk_ke"]), "full handshake");
    assert_eq!(s(&caps["early_data"]), "not allowed by the tickets");
    drop(_p);

    for version in ["3.0", "3.5", "4.0"] {
        let Some(bin) = openssl(version) else {
            continue;
        };
        certificate(&bin, d);
        let base = ["-cert", "cert.pem", "-key", "key.pem"];
        let with = |extra: &[&str]| -> Vec<String> {
            base.iter().chain(extra).map(|s| s.to_string()).collect()
        };
        let run = |extra: &[&str], probe_args: &[&str]| -> Value {
            let args = with(extra);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (_p, port) = s_server(&bin, &args, d);
            probe(port, probe_args)
        };

        // Default configuration, -www: the docs column, and what any TLS 1.3 server shows.
        let r = run(
            &["-www"],
            &["--cafile", d.join("cert.pem").to_str().unwrap()],
        );
        let caps = &r["capabilities"];
        assert_eq!(s(&caps["tls13"]), "completed", "openssl {version}: {caps}");
        assert_eq!(s(&caps["tls12_only"]), "ServerHello TLS 1.2");
        assert!(s(&caps["certificate"]["verification"]).starts_with("verifies"));
        // OpenSSL's default: the client's suite order (no -serverpref).
        assert_eq!(s(&caps["suite_preference"]["follows"]), "client");
        assert_eq!(
            accepted(caps, "suites"),
            set(&[
                "TLS_AES_128_GCM_SHA256",
                "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256"
            ])
        );
        let hybrid = accepted(caps, "groups").contains("X25519MLKEM768");
        assert_eq!(
            hybrid,
            version != "3.0",
            "openssl {version}: X25519MLKEM768"
        );
        // s_server sends two tickets by default; -www closes after the page.
        assert_eq!(tickets(caps).len(), 2, "openssl {version}: {caps}");
        let caps_default_ech = caps["ech"].clone();
        columns.push(Column {
            name: format!("OpenSSL {version}"),
            report: r,
        });

        // Restricted groups and suites, no tickets (-no_ticket would not do: in TLS 1.3 it
        // makes OpenSSL's tickets stateful, it still sends them).
        let r = run(
            &[
                "-www",
                "-groups",
                "P-256:X25519",
                "-ciphersuites",
                "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256",
                "-num_tickets",
                "0",
            ],
            &["--only", "capabilities"],
        );
        let caps = &r["capabilities"];
        assert_eq!(
            accepted(caps, "groups"),
            set(&["secp256r1", "x25519"]),
            "{caps}"
        );
        assert_eq!(
            accepted(caps, "suites"),
            set(&["TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"])
        );
        assert_eq!(tickets(caps).len(), 0);
        assert!(s(&caps["resumption_psk_dhe_ke"]).starts_with("no ticket"));

        // -no_ticket: in TLS 1.3 OpenSSL still sends tickets, stateful ones (a 32-byte session
        // ID instead of the sealed state); -allow_no_dhe_kex: psk_ke resumption.
        let r = run(
            &["-www", "-no_ticket", "-allow_no_dhe_kex"],
            &["--only", "capabilities"],
        );
        let caps = &r["capabilities"];
        let t = tickets(caps);
        assert_eq!(t.len(), 2, "openssl {version}: {caps}");
        assert!(t.iter().all(|t| t["ticket_bytes"] == 32), "{caps}");
        assert_eq!(
            s(&caps["resumption_psk_ke"]),
            "resumed",
            "openssl {version}"
        );

        // A group list that forces a HelloRetryRequest; three tickets.
        let r = run(
            &["-www", "-groups", "P-384", "-num_tickets", "3"],
            &["--only", "capabilities"],
        );
        let caps = &r["capabilities"];
        assert_eq!(caps["hello_retry"], true, "openssl {version}: {caps}");
        assert_eq!(s(&caps["group"]), "secp384r1");
        assert_eq!(accepted(caps, "groups"), set(&["secp384r1"]));
        assert_eq!(tickets(caps).len(), 3, "openssl {version}: {caps}");
        assert_eq!(
            s(&caps["resumption_psk_dhe_ke"]),
            "resumed",
            "openssl {version}"
        );
        // OpenSSL resumes with psk_ke only with SSL_OP_ALLOW_NO_DHE_KEX (-allow_no_dhe_kex).
        assert_eq!(s(&caps["resumption_psk_ke"]), "full handshake");
        assert_eq!(s(&caps["early_data"]), "not allowed by the tickets");

        // ECH: 4.0 implements it (-ech_key takes `tls13lab ech keygen`'s file); 3.0 and 3.5
        // ignore the GREASE extension, as RFC 8446 §4.2 asks of unknown extensions.
        let ech = &caps_default_ech;
        if version == "4.0" {
            let r = run(
                &["-www", "-ech_key", "ech.pem"],
                &["--only", "capabilities"],
            );
            let e = &r["capabilities"]["ech"];
            assert_eq!(s(&e["grease"]), "completed", "{e}");
            assert_eq!(e["retry_configs"], serde_json::json!(["public.example"]));
            assert_eq!(s(&e["offer"]), "accepted", "{e}");
            let r = run(
                &["-www", "-ech_key", "ech.pem"],
                &["--only", "capabilities", "--ech-config-list", &ech_b64],
            );
            let e = &r["capabilities"]["ech"];
            assert_eq!(s(&e["config_source"]), "given");
            assert_eq!(s(&e["offer"]), "accepted", "{e}");
        } else {
            assert_eq!(s(&ech["grease"]), "completed", "{ech}");
            assert_eq!(ech["retry_configs"], serde_json::json!([]));
            assert_eq!(s(&ech["offer"]), "not tried");
        }

        // 0-RTT (s_server refuses -www with -early_data: it echoes instead).
        let r = run(&["-early_data"], &["--only", "capabilities"]);
        let caps = &r["capabilities"];
        assert_eq!(
            s(&caps["resumption_psk_dhe_ke"]),
            "resumed",
            "openssl {version}"
        );
        assert_eq!(
            s(&caps["early_data"]),
            "accepted",
            "openssl {version}: {caps}"
        );
        assert_eq!(s(&caps["early_data_replay"]), "rejected");
    }

    // rustls 0.23 in this process (a thread per connection on 127.0.0.1, stopped with the
    // test): its default provider's groups and suites, then a restricted configuration.
    let server = RustlsServer::start(rustls_config(None, None, 2, &[]));
    let r = probe(server.port, &[]);
    let caps = &r["capabilities"];
    assert_eq!(s(&caps["tls13"]), "completed");
    assert_eq!(s(&caps["tls12_only"]), "alert protocol_version", "{caps}");
    let defaults = rustls::crypto::aws_lc_rs::default_provider();
    let names = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
    assert_eq!(
        accepted(caps, "groups"),
        names(
            defaults
                .kx_groups
                .iter()
                .map(|g| rustls_name(g.name()))
                .collect()
        ),
        "{caps}"
    );
    assert_eq!(tickets(caps).len(), 2, "rustls: {caps}");
    assert_eq!(s(&caps["resumption_psk_dhe_ke"]), "resumed", "{caps}");
    columns.push(Column {
        name: "rustls 0.23".into(),
        report: r,
    });
    drop(server);
    let server = RustlsServer::start(rustls_config(
        Some(&[
            rustls::crypto::aws_lc_rs::kx_group::SECP384R1,
            rustls::crypto::aws_lc_rs::kx_group::X25519,
        ]),
        Some(&[rustls::crypto::aws_lc_rs::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256]),
        4,
        &[b"h2", b"http/1.1"],
    ));
    let r = probe(server.port, &["--only", "capabilities"]);
    let caps = &r["capabilities"];
    assert_eq!(
        accepted(caps, "groups"),
        set(&["secp384r1", "x25519"]),
        "{caps}"
    );
    // rustls picks the client's most preferred group among its own (it keeps no order of its
    // own): the probe must see that, not our configured order.
    assert_eq!(s(&caps["group_preference"]["follows"]), "client", "{caps}");
    assert_eq!(
        accepted(caps, "suites"),
        set(&["TLS_CHACHA20_POLY1305_SHA256"])
    );
    assert_eq!(s(&caps["alpn"]), "h2");
    assert_eq!(tickets(caps).len(), 4, "rustls: {caps}");
    drop(server);

    docs(&columns);
}

/// rustls' group names as ours (`X25519MLKEM768`, `secp256r1`...).
fn rustls_name(g: rustls::NamedGroup) -> String {
    let code = u16::from(g);
    tls13lab::messages::NamedGroup::from(code).to_string()
}

/// A rustls server configuration: an rcgen P-256 certificate for localhost, TLS 1.3 only,
/// `tickets` tickets per handshake (sealed by rustls' ticketer), the given groups and suites
/// (the default provider's when `None`), ALPN.
fn rustls_config(
    groups: Option<&[&'static dyn rustls::crypto::SupportedKxGroup]>,
    suites: Option<&[rustls::SupportedCipherSuite]>,
    tickets: usize,
    alpn: &[&[u8]],
) -> rustls::ServerConfig {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    if let Some(g) = groups {
        provider.kx_groups = g.to_vec();
    }
    if let Some(s) = suites {
        provider.cipher_suites = s.to_vec();
    }
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("certificate");
    let mut c = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("certificate and key");
    c.send_tls13_tickets = tickets;
    c.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new().expect("ticketer");
    c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    c
}

/// A rustls server on 127.0.0.1: each connection answers one request with a short page, then
/// close_notify. Stopped (and its listener closed) when dropped.
struct RustlsServer {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl RustlsServer {
    fn start(config: rustls::ServerConfig) -> RustlsServer {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let config = std::sync::Arc::new(config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let accept = std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                let Ok((tcp, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let config = config.clone();
                std::thread::spawn(move || {
                    let _ = tcp.set_nonblocking(false);
                    let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
                    let _ = tcp.set_nodelay(true);
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let mut tls = rustls::StreamOwned::new(conn, tcp);
                    let mut request = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf) {
                            Ok(0) => return,
                            Err(_) => {
                                // rustls queued its alert: send it before closing, as a
                                // real server loop does.
                                let _ = tls.conn.write_tls(&mut tls.sock);
                                return;
                            }
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let body = "rustls 0.23\n";
                    let _ = write!(
                        tls,
                        "HTTP/1.0 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                });
            }
        });
        RustlsServer {
            port,
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for RustlsServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A cell: the answer, marked when it is not what RFC 8446 prescribes.
fn cell(answer: &str, verdict: &str) -> String {
    let a = answer.strip_prefix("alert ").unwrap_or(answer);
    if verdict == "ok" {
        format!("{a} ✓")
    } else {
        format!("**{a}** ✗")
    }
}

/// docs/probe.md's generated block from the default-configuration runs.
fn docs(columns: &[Column]) {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/probe.md"));
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    if names.len() < 5 {
        eprintln!("NOTICE: docs/probe.md not checked: runs only for {names:?}");
        return;
    }
    let mut t = String::new();
    t.push_str(&format!(
        "| conformance case | RFC 8446 | prescribed | {} |\n|---|---|---|{}\n",
        names.join(" | "),
        "---|".repeat(names.len())
    ));
    let first = &columns[0].report;
    for (i, case) in first["conformance"].as_array().unwrap().iter().enumerate() {
        t.push_str(&format!(
            "| {} | {} | {} |",
            s(&case["name"]),
            s(&case["section"]),
            s(&case["expected"])
        ));
        for c in columns {
            let x = &c.report["conformance"][i];
            assert_eq!(x["name"], case["name"]);
            t.push_str(&format!(
                " {} |",
                cell(&s(&x["received"]), &s(&x["verdict"]))
            ));
        }
        t.push('\n');
    }
    t.push_str(&format!(
        "\n| tolerance case | ClientHello bytes | records | segments | {} |\n|---|--:|--:|--:|{}\n",
        names.join(" | "),
        "---|".repeat(names.len())
    ));
    for (i, case) in first["tolerance"].as_array().unwrap().iter().enumerate() {
        t.push_str(&format!(
            "| {} | {} | {} | {} |",
            s(&case["what"]),
            case["hello_bytes"],
            case["records"],
            case["segments"]
        ));
        for c in columns {
            let x = &c.report["tolerance"][i];
            assert_eq!(x["name"], case["name"]);
            let a = s(&x["answer"]);
            t.push_str(&format!(
                " {} |",
                if a == "completed" {
                    "completed ✓".to_string()
                } else {
                    format!("**{a}** ✗")
                }
            ));
        }
        t.push('\n');
    }
    let begin = "<!-- BEGIN GENERATED probe-results -->\n";
    let end = "<!-- END GENERATED -->";
    let old = std::fs::read_to_string(path).expect("docs/probe.md");
    let (Some(b), Some(e)) = (old.find(begin), old.find(end)) else {
        panic!("docs/probe.md has no probe-results block");
    };
    let new = format!("{}{begin}{t}{}", &old[..b], &old[e..]);
    if new != old {
        if std::env::var_os("TLS13LAB_WRITE_DOCS").is_some() {
            std::fs::write(path, &new).unwrap();
        } else {
            panic!(
                "docs/probe.md is stale; regenerate with: TLS13LAB_WRITE_DOCS=1 cargo test \
                 --release -p tls13lab-cli --test probe"
            );
        }
    }
}
