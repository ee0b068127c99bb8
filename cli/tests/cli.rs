//! End-to-end tests of the `tls13lab` binary: our client ↔ our server over TCP on 127.0.0.1,
//! the documented one-line errors and exit codes, the key log and the JSON ledger.
//!
//! Every server runs on port 0 and is killed by PID when its guard drops, even when a test fails.

use std::io::{BufRead, BufReader, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tls13lab");
const PEM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..", "/tests/vectors/pem");

/// A running `tls13lab server`, killed (by PID) and reaped on drop.
struct ServerGuard {
    child: Child,
    port: u16,
    lines: Receiver<String>,
}

impl ServerGuard {
    /// Start `tls13lab server --listen 127.0.0.1:0 ARGS` and read its `listening on` line.
    fn start(args: &[&str]) -> ServerGuard {
        ServerGuard::start_env(args, &[])
    }

    /// Like [`ServerGuard::start`], with environment variables.
    fn start_env(args: &[&str], env: &[(&str, &str)]) -> ServerGuard {
        let mut cmd = Command::new(BIN);
        cmd.args(["server", "--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("SSLKEYLOGFILE")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn server");
        let stdout = child.stdout.take().expect("server stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Build the guard first so the child is killed even if the first line never comes.
        let mut guard = ServerGuard {
            child,
            port: 0,
            lines,
        };
        let first = guard
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("server printed no first line");
        let addr = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first line is {first:?}"));
        guard.port = addr
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {first:?}"));
        guard
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The next stdout line containing `needle`.
    fn line_with(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(_) => panic!("server printed no line with {needle:?}"),
            }
        }
    }

    /// Wait for the server to exit by itself (e.g. after --naccept).
    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = self.child.kill(); // this child's PID only
        let _ = self.child.wait();
    }
}

/// A scratch directory for one test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("tls13lab-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }

    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }

    fn s(&self, f: &str) -> String {
        self.path(f).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&str]) -> Output {
    run_env(args, &[])
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    // The client's system trust store is whatever a test puts in SSL_CERT_FILE / SSL_CERT_DIR.
    c.args(args)
        .env_remove("SSLKEYLOGFILE")
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run tls13lab")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// Exit code `code` and exactly one stderr line starting with `prefix` — never a backtrace.
#[track_caller]
fn assert_fails(o: &Output, code: i32, prefix: &str) -> String {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{err}",
        stdout(o)
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected, got:\n{err}");
    assert!(
        lines[0].starts_with(prefix),
        "expected {prefix:?}, got {:?}",
        lines[0]
    );
    assert!(!err.contains("panicked") && !err.contains("backtrace"));
    lines[0].to_string()
}

/// The value after `key` in the summary (`key   value`).
fn summary_value(out: &str, key: &str) -> String {
    let summary = out
        .split("--- summary\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no summary in:\n{out}"));
    summary
        .lines()
        .find_map(|l| {
            l.strip_prefix(key)
                .filter(|rest| rest.starts_with(' '))
                .map(|rest| rest.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no {key:?} in summary:\n{summary}"))
}

fn keylog_lines(path: &Path) -> Vec<(String, String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 3, "key log line {l:?}");
            (f[0].to_string(), f[1].to_string(), f[2].to_string())
        })
        .collect()
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A port on 127.0.0.1 that refuses connections for as long as the returned socket lives: bound
/// but not listening, so no other process can take the number meanwhile (a port merely freed
/// could be).
fn refusing_port() -> (std::os::fd::OwnedFd, u16) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns (OwnedFd closes it on every
    // path); the pointers point to live locals of the sizes given.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let owned = std::os::fd::OwnedFd::from_raw_fd(fd);
        let mut sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let rc = libc::bind(fd, (&sin as *const libc::sockaddr_in).cast(), len);
        assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
        let rc = libc::getsockname(fd, (&mut sin as *mut libc::sockaddr_in).cast(), &mut len);
        assert_eq!(rc, 0, "getsockname: {}", std::io::Error::last_os_error());
        (owned, u16::from_be(sin.sin_port))
    }
}

// ------------------------------------------------------------------------------- handshakes

#[test]
fn full_handshake_over_tcp_with_verified_certificate_key_log_and_json() {
    let t = TempDir::new("full");
    let server_keys = t.s("server.keys");
    // The server takes SSLKEYLOGFILE from its environment.
    let mut server = ServerGuard::start_env(
        &[
            "--naccept",
            "1",
            "--cert-out",
            &t.s("cert.pem"),
            "--json-dir",
            &t.s("jd"),
        ],
        &[("SSLKEYLOGFILE", &server_keys)],
    );
    let o = run(&[
        "client",
        &format!("localhost:{}", server.port),
        "--cafile",
        &t.s("cert.pem"),
        "--keylog",
        &t.s("client.keys"),
        "--json",
        &t.s("client.json"),
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    assert!(out.contains("client_hello("), "{out}");
    assert!(out.contains("finished(36)"), "{out}");
    assert!(out.contains("HTTP/1.0 200 OK"), "{out}");
    assert!(out.contains("alert warning close_notify"), "{out}");
    assert_eq!(summary_value(&out, "version"), "TLSv1.3");
    assert_eq!(
        summary_value(&out, "cipher suite"),
        "TLS_AES_128_GCM_SHA256"
    );
    assert_eq!(summary_value(&out, "group"), "X25519MLKEM768");
    assert_eq!(
        summary_value(&out, "signature scheme"),
        "ecdsa_secp256r1_sha256"
    );
    assert_eq!(summary_value(&out, "resumed"), "no");
    assert_eq!(summary_value(&out, "early data"), "not sent");
    assert_eq!(
        summary_value(&out, "round trips"),
        "2 until the first response byte"
    );

    // The server reports the connection and exits after --naccept 1.
    let line = server.line_with("conn #1");
    assert!(
        line.contains("full handshake") && line.ends_with("; ok"),
        "{line}"
    );
    assert!(server.wait_exit().success());

    // Key log: NSS labels, one client random, 32-byte secrets; the server logged the same lines.
    let client_keys = keylog_lines(&t.path("client.keys"));
    let labels: Vec<&str> = client_keys.iter().map(|l| l.0.as_str()).collect();
    for want in [
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        "CLIENT_TRAFFIC_SECRET_0",
        "SERVER_TRAFFIC_SECRET_0",
        "EXPORTER_SECRET",
    ] {
        assert!(labels.contains(&want), "{want} missing from {labels:?}");
    }
    assert!(!labels.contains(&"CLIENT_EARLY_TRAFFIC_SECRET"));
    for (_, random, secret) in &client_keys {
        assert!(is_hex(random, 64) && is_hex(secret, 64));
        assert_eq!(
            random, &client_keys[0].1,
            "one connection, one client random"
        );
    }
    // The server logged the same traffic secrets for the same client random.
    let server_lines = keylog_lines(Path::new(&server_keys));
    assert!(server_lines.len() >= 4, "{server_lines:?}");
    for l in &server_lines {
        assert!(
            client_keys.contains(l),
            "server line {l:?} not in the client's key log"
        );
    }

    // JSON: the documented fields, labels without values, totals matching the ledger.
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("client.json")).unwrap()).unwrap();
    assert_eq!(j["schema"], "tls13lab.connection.v1");
    assert_eq!(j["side"], "client");
    assert_eq!(j["negotiated"]["version"], "TLSv1.3");
    assert_eq!(j["negotiated"]["suite"], "TLS_AES_128_GCM_SHA256");
    assert_eq!(j["negotiated"]["group"], "X25519MLKEM768");
    assert_eq!(
        j["negotiated"]["signature_scheme"],
        "ecdsa_secp256r1_sha256"
    );
    assert_eq!(j["resumed"], false);
    assert_eq!(j["early_data"], "not_sent");
    assert_eq!(j["round_trips_to_first_response"], 2);
    assert!(j["error"].is_null());
    let records = j["records"].as_array().unwrap();
    assert_eq!(records[0]["messages"][0]["typ"], "client_hello");
    let c2s: u64 = records
        .iter()
        .filter(|r| r["direction"] == "client_to_server")
        .map(|r| r["wire_len"].as_u64().unwrap())
        .sum();
    assert_eq!(j["totals"]["client_to_server"]["bytes"], c2s);
    assert!(j["totals"]["server_to_client"]["records"].as_u64().unwrap() >= 4);
    let messages = j["messages"].as_array().unwrap();
    assert_eq!(messages[0]["type"], "client_hello");
    assert!(messages.iter().any(|m| m["type"] == "certificate_verify"));
    let secrets = j["secrets"].as_array().unwrap();
    assert!(secrets
        .iter()
        .any(|s| s["label"] == "CLIENT_HANDSHAKE_TRAFFIC_SECRET"));
    assert!(
        secrets.iter().all(|s| s.get("secret").is_none()),
        "values only with --show-secrets"
    );
    // The server wrote its own ledger for the connection.
    let sj: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("jd/conn-000001.json")).unwrap())
            .unwrap();
    assert_eq!(sj["side"], "server");
    assert_eq!(sj["totals"], j["totals"], "both ends saw the same records");
}

#[test]
fn hello_retry_request_when_the_server_prefers_another_group() {
    let server = ServerGuard::start(&["--groups", "P-256", "--hrr-cookie"]);
    let o = run(&["client", &server.addr(), "--insecure"]);
    assert_ok(&o);
    let out = stdout(&o);
    assert_eq!(summary_value(&out, "group"), "secp256r1");
    assert_eq!(summary_value(&out, "hello retry"), "yes");
    assert_eq!(
        summary_value(&out, "round trips"),
        "3 until the first response byte"
    );
}

#[test]
fn each_implemented_group_and_suite() {
    let server = ServerGuard::start(&[]);
    for (group, suite, want_group, want_suite) in [
        ("x25519", "aes128gcm", "x25519", "TLS_AES_128_GCM_SHA256"),
        (
            "prime256v1",
            "TLS_AES_256_GCM_SHA384",
            "secp256r1",
            "TLS_AES_256_GCM_SHA384",
        ),
        (
            "secp256r1",
            "chacha20",
            "secp256r1",
            "TLS_CHACHA20_POLY1305_SHA256",
        ),
    ] {
        let o = run(&[
            "client",
            &server.addr(),
            "--insecure",
            "--groups",
            group,
            "--suites",
            suite,
        ]);
        assert_ok(&o);
        let out = stdout(&o);
        assert_eq!(summary_value(&out, "group"), want_group);
        assert_eq!(summary_value(&out, "cipher suite"), want_suite);
        assert_eq!(summary_value(&out, "hello retry"), "no");
    }
}

/// The CCM suites by their CLI names, over TCP, and in the demo's ledger: every protected
/// record's `hdr+plain+type+pad+tag` ends in the suite's tag, 16 (CCM) or 8 (CCM_8).
#[test]
fn ccm_suites_by_name_over_tcp_and_in_the_ledger() {
    let (ccm, ccm8) = ("TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256");
    let server = ServerGuard::start(&["--suites", "aes128ccm8,TLS_AES_128_CCM_SHA256"]);
    for (suite, want) in [("aes128ccm", ccm), (ccm8, ccm8), ("0x1305", ccm8)] {
        let o = run(&["client", &server.addr(), "--insecure", "--suites", suite]);
        assert_ok(&o);
        assert_eq!(summary_value(&stdout(&o), "cipher suite"), want, "{suite}");
    }
    for (suite, tag) in [("aes128ccm", "16"), ("aes128ccm8", "8")] {
        let o = run(&["demo", "--suites", suite, "--server-suites", suite]);
        assert_ok(&o);
        let out = stdout(&o);
        // The three connections the options shape; the demo's closing post-quantum connection
        // runs on the defaults (its heading says so).
        let out = out.split("== full PQ").next().unwrap_or_default();
        let tags: Vec<&str> = out
            .split_whitespace()
            .filter(|w| w.starts_with("5+") && w.split('+').count() == 5)
            .map(|w| w.rsplit('+').next().unwrap())
            .collect();
        assert!(tags.len() >= 6, "{out}");
        assert!(tags.iter().all(|t| *t == tag), "{suite}: {tags:?}\n{out}");
    }
}

#[test]
fn hybrid_post_quantum_group() {
    let server = ServerGuard::start(&["--groups", "X25519MLKEM768,x25519"]);
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--groups",
        "x25519mlkem768,x25519",
    ]);
    assert_ok(&o);
    assert_eq!(summary_value(&stdout(&o), "group"), "X25519MLKEM768");
}

#[test]
fn client_certificate_required_and_given() {
    let cert = format!("{PEM}/server_rsa_certificate.pem");
    let key = format!("{PEM}/server_rsa_key.pem");
    // The server also loads an RSA certificate and key from PEM.
    let server = ServerGuard::start(&["--cert", &cert, "--key", &key, "--require-client-cert"]);
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--cert",
        &cert,
        "--key",
        &key,
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    assert_eq!(
        summary_value(&out, "signature scheme"),
        "rsa_pss_rsae_sha256"
    );
    assert_eq!(
        summary_value(&out, "client signature"),
        "rsa_pss_rsae_sha256"
    );
    assert!(out.contains("certificate_request("), "{out}");

    let o = run(&["client", &server.addr(), "--insecure"]);
    let line = assert_fails(&o, 5, "tls13lab: handshake failed: received alert");
    assert!(line.contains("certificate_required"), "{line}");
}

/// The system `openssl` (or `TLS13LAB_OPENSSL30`), or `None` with a NOTICE; under CI=true its
/// absence fails the test instead.
fn system_openssl(what: &str) -> Option<PathBuf> {
    let bin = std::env::var_os("TLS13LAB_OPENSSL30")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("openssl"), PathBuf::from);
    let ok = Command::new(&bin)
        .arg("version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(bin);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{}: not runnable under CI (apt-get install -y openssl)",
        bin.display()
    );
    eprintln!("NOTICE: skipping {what}: {} is not runnable", bin.display());
    None
}

/// `openssl genpkey GENPKEY…` and a self-signed certificate for localhost (`req -x509 REQ…`),
/// written as `<stem>.key` / `<stem>.pem` in `t`, exactly as OpenSSL writes them.
fn openssl_key_and_cert(openssl: &Path, t: &TempDir, stem: &str, genpkey: &[&str], req: &[&str]) {
    let (key, cert) = (t.s(&format!("{stem}.key")), t.s(&format!("{stem}.pem")));
    let run_openssl = |args: Vec<&str>| {
        let o = Command::new(openssl)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("run openssl");
        assert!(o.status.success(), "openssl {args:?}: {}", stderr(&o));
    };
    run_openssl([&["genpkey", "-out", &key], genpkey].concat());
    let base = [
        "req",
        "-x509",
        "-config",
        "/dev/null",
        "-key",
        &key,
        "-out",
        &cert,
        "-subj",
        "/CN=localhost",
        "-days",
        "30",
        "-addext",
        "subjectAltName=DNS:localhost",
    ];
    run_openssl([&base[..], req].concat());
}

/// `server --cert/--key` loads a P-521 key and id-RSASSA-PSS keys (unrestricted, and restricted
/// to SHA-384 by their parameters) as OpenSSL writes them; `client --sigalgs` takes the scheme
/// names, and the summary reports the scheme the server signed with (RFC 8446 §4.2.3).
#[test]
fn server_loads_p521_and_rsa_pss_keys_from_openssl() {
    let Some(openssl) = system_openssl("the P-521 / RSA-PSS key loading test") else {
        return;
    };
    let t = TempDir::new("sigs");
    let pss = ["-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048"];
    let pss_sign = ["-sigopt", "rsa_pss_saltlen:digest"];
    openssl_key_and_cert(
        &openssl,
        &t,
        "p521",
        &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521"],
        &["-sha512"],
    );
    openssl_key_and_cert(
        &openssl,
        &t,
        "pss",
        &pss,
        &[&["-sha256"][..], &pss_sign].concat(),
    );
    openssl_key_and_cert(
        &openssl,
        &t,
        "pss384",
        &[
            &pss[..],
            &[
                "-pkeyopt",
                "rsa_pss_keygen_md:sha384",
                "-pkeyopt",
                "rsa_pss_keygen_mgf1_md:sha384",
                "-pkeyopt",
                "rsa_pss_keygen_saltlen:48",
            ],
        ]
        .concat(),
        &[&["-sha384"][..], &pss_sign].concat(),
    );
    for (stem, sigalgs, want) in [
        ("p521", None, "ecdsa_secp521r1_sha512"),
        (
            "p521",
            Some("ecdsa_secp521r1_sha512"),
            "ecdsa_secp521r1_sha512",
        ),
        ("pss", None, "rsa_pss_pss_sha256"),
        ("pss", Some("rsa_pss_pss_sha512"), "rsa_pss_pss_sha512"),
        (
            "pss",
            Some("rsa_pss_rsae_sha256,rsa_pss_pss_sha384"),
            "rsa_pss_pss_sha384",
        ),
        ("pss384", None, "rsa_pss_pss_sha384"),
    ] {
        let (cert, key) = (t.s(&format!("{stem}.pem")), t.s(&format!("{stem}.key")));
        let server = ServerGuard::start(&["--cert", &cert, "--key", &key]);
        let mut args = vec![
            "client".to_string(),
            format!("localhost:{}", server.port),
            "--cafile".into(),
            cert.clone(),
        ];
        if let Some(s) = sigalgs {
            args.extend(["--sigalgs".to_string(), s.to_string()]);
        }
        let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_ok(&o);
        assert_eq!(
            summary_value(&stdout(&o), "signature scheme"),
            want,
            "{stem} {sigalgs:?}"
        );
    }
    // A PSS key never signs rsa_pss_rsae_*, and one restricted to SHA-384 not SHA-256: nothing
    // in common, handshake_failure.
    for (stem, sigalgs) in [
        ("pss", "rsa_pss_rsae_sha256"),
        ("pss384", "rsa_pss_pss_sha256"),
    ] {
        let (cert, key) = (t.s(&format!("{stem}.pem")), t.s(&format!("{stem}.key")));
        let server = ServerGuard::start(&["--cert", &cert, "--key", &key]);
        let target = format!("localhost:{}", server.port);
        let o = run(&["client", &target, "--cafile", &cert, "--sigalgs", sigalgs]);
        let line = assert_fails(&o, 5, "tls13lab: handshake failed: received alert");
        assert!(line.contains("handshake_failure"), "{stem}: {line}");
    }
}

#[test]
fn echo_server_and_sslkeylogfile_beside_keylog() {
    let t = TempDir::new("echo");
    let server = ServerGuard::start(&["--echo"]);
    let env_keys = t.s("env.keys");
    let o = run_env(
        &[
            "client",
            &server.addr(),
            "--insecure",
            "--request",
            r"ping\x21\n",
            "--linger",
            "200",
            "--keylog",
            &t.s("flag.keys"),
        ],
        &[("SSLKEYLOGFILE", &env_keys)],
    );
    assert_ok(&o);
    assert!(
        stdout(&o).contains("--- response (6 bytes)\nping!\n"),
        "{}",
        stdout(&o)
    );
    let env = keylog_lines(Path::new(&env_keys));
    assert_eq!(env.len(), 5, "{env:?}");
    assert_eq!(env, keylog_lines(&t.path("flag.keys")));
}

// ------------------------------------------------------------------------------- resumption

/// Full handshake saving tickets, then a resumed one loading them.
#[test]
fn resumption_across_processes() {
    let t = TempDir::new("resume");
    let server = ServerGuard::start(&["--tickets", "2"]);
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--sess-out",
        &t.s("sess.json"),
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    assert_eq!(summary_value(&out, "tickets"), "2 received");
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--sess-in",
        &t.s("sess.json"),
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    assert!(summary_value(&out, "resumed").starts_with("yes"), "{out}");
    assert_eq!(summary_value(&out, "signature scheme"), "none (resumed)");
    // The tickets allow 0-RTT, but without --early-data none is offered.
    assert_eq!(summary_value(&out, "early data"), "not sent", "{out}");
    assert!(!out.contains("end_of_early_data"), "{out}");
    assert!(
        !out.contains("certificate("),
        "no certificate when resuming:\n{out}"
    );
}

/// Resumed with the request sent as 0-RTT: the response arrives after one round trip.
#[test]
fn zero_rtt_request() {
    let t = TempDir::new("0rtt");
    std::fs::write(t.path("early.txt"), "GET /early HTTP/1.0\r\n\r\n").unwrap();
    let server = ServerGuard::start(&["--early-data", "16384", "--tickets", "2"]);
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--sess-out",
        &t.s("sess.json"),
    ]);
    assert_ok(&o);
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--sess-in",
        &t.s("sess.json"),
        "--early-data",
        &t.s("early.txt"),
        "--keylog",
        &t.s("keys"),
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    assert_eq!(summary_value(&out, "early data"), "accepted");
    assert_eq!(
        summary_value(&out, "round trips"),
        "1 until the first response byte"
    );
    assert!(out.contains("early data     accepted, 23 bytes"), "{out}");
    // The server answers the 0-RTT request before the client's Finished; the tickets that
    // Finished triggers still arrive, and the connection ends cleanly (close_notify after them).
    assert_eq!(summary_value(&out, "tickets"), "2 received", "{out}");
    let line = server.line_with("early data accepted");
    assert!(line.ends_with("; ok"), "{line}");
    let labels: Vec<String> = keylog_lines(&t.path("keys"))
        .into_iter()
        .map(|l| l.0)
        .collect();
    assert!(labels.contains(&"CLIENT_EARLY_TRAFFIC_SECRET".to_string()));
    assert!(labels.contains(&"EARLY_EXPORTER_SECRET".to_string()));
}

// --------------------------------------------------------------------------- external PSKs

const PSK: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `--psk HEX --psk-identity ID` on both sides, without certificates on the client: psk_dhe_ke
/// and psk_ke as `--psk-modes` asks, the identity on the server's page, log line and ledger.
#[test]
fn external_psk_psk_dhe_ke_and_psk_ke() {
    let t = TempDir::new("psk");
    // The server prefers psk_ke when the client offers both.
    let server = ServerGuard::start(&[
        "--psk",
        PSK,
        "--psk-identity",
        "client1",
        "--psk-modes",
        "ke,dhe",
        "--json-dir",
        &t.s("jd"),
    ]);
    let addr = server.addr();
    let psk = ["--psk", PSK, "--psk-identity", "client1"];
    for (n, modes, mode, group) in [
        (1, "dhe", "psk_dhe_ke", "X25519MLKEM768"),
        (2, "ke", "psk_ke", "none (psk_ke)"),
        (3, "dhe,ke", "psk_ke", "none (psk_ke)"),
    ] {
        let out_json = t.s(&format!("c{n}.json"));
        let mut args = vec!["client", &addr, "--psk-modes", modes];
        args.extend_from_slice(&psk);
        args.extend_from_slice(&["--json", &out_json]);
        let o = run(&args);
        assert_ok(&o);
        let out = stdout(&o);
        let described = format!("external PSK \"client1\", {mode}");
        assert_eq!(summary_value(&out, "psk"), described, "{out}");
        assert_eq!(summary_value(&out, "group"), group, "{out}");
        assert_eq!(summary_value(&out, "signature scheme"), "none (resumed)");
        assert!(!out.contains("certificate("), "no certificate:\n{out}");
        // The server's page names the identity it took.
        assert!(
            out.contains(&format!("psk            {described}\n")),
            "{out}"
        );
        let line = server.line_with(&format!("conn #{n} "));
        assert!(
            line.contains(&described) && line.ends_with("; ok"),
            "{line}"
        );
        for (j, side) in [
            (json(&t.path(&format!("c{n}.json"))), "client"),
            (json(&t.path(&format!("jd/conn-{n:06}.json"))), "server"),
        ] {
            assert_eq!(j["side"], side);
            assert_eq!(j["resumed"], true, "{j}");
            assert_eq!(j["negotiated"]["psk_identity"], 0);
            assert_eq!(j["psk"]["external"], true, "{side}: {}", j["psk"]);
            assert_eq!(j["psk"]["identity"], "client1");
            assert_eq!(j["psk"]["identity_hex"], "636c69656e7431");
            assert_eq!(j["psk"]["mode"], mode);
            assert_eq!(j["negotiated"]["group"].is_null(), mode == "psk_ke");
        }
    }
}

/// A resumption ticket is reported as such, also by a client that has an external PSK: the
/// ticket is offered first, and the report tells the two apart.
#[test]
fn ticket_resumption_is_not_reported_as_external() {
    let t = TempDir::new("psk-ticket");
    let server = ServerGuard::start(&["--psk", PSK, "--psk-identity", "client1"]);
    let addr = server.addr();
    let psk = ["--psk", PSK, "--psk-identity", "client1"];
    let (sess, report) = (t.s("s.json"), t.s("c.json"));
    let mut args = vec!["client", &addr, "--sess-out", &sess];
    args.extend_from_slice(&psk);
    let o = run(&args);
    assert_ok(&o);
    let mut args = vec!["client", &addr, "--sess-in", &sess, "--json", &report];
    args.extend_from_slice(&psk);
    let o = run(&args);
    assert_ok(&o);
    let out = stdout(&o);
    assert_eq!(summary_value(&out, "psk"), "resumption ticket, psk_dhe_ke");
    assert!(
        out.contains("psk            resumption ticket, psk_dhe_ke\n"),
        "{out}"
    );
    let j = json(&t.path("c.json"));
    assert_eq!(j["psk"]["external"], false, "{}", j["psk"]);
    assert!(j["psk"]["identity_hex"].as_str().unwrap().len() > 64);
    let line = server.line_with("conn #2 ");
    assert!(line.contains(", resumed, "), "{line}");
}

/// `--psk-hash sha384` binds the PSK to TLS_AES_256_GCM_SHA384 (RFC 8446 §4.2.11); the server
/// prefers its suite. With the same identity bound to SHA-256 the binder cannot verify. An
/// identity the server does not know makes it fall back to its certificate, which a client
/// without --cafile refuses rather than accepts.
#[test]
fn external_psk_sha384_and_no_silent_certificate_fallback() {
    let t = TempDir::new("psk384");
    let server = ServerGuard::start(&[
        "--psk",
        PSK,
        "--psk-identity",
        "client1",
        "--psk-hash",
        "sha384",
        "--cert-out",
        &t.s("cert.pem"),
    ]);
    let addr = server.addr();
    // The client's system store: one CA that has nothing to do with the server.
    TestCa::new("unrelated test CA").write(&t.path("system.pem"));
    let system = t.s("system.pem");
    let client = |extra: &[&str]| {
        let mut args = vec!["client", &addr, "--psk", PSK, "--psk-identity"];
        args.extend_from_slice(extra);
        run_env(&args, &[("SSL_CERT_FILE", &system)])
    };
    let o = client(&["client1", "--psk-hash", "sha384"]);
    assert_ok(&o);
    let out = stdout(&o);
    assert_eq!(
        summary_value(&out, "cipher suite"),
        "TLS_AES_256_GCM_SHA384"
    );
    assert_eq!(
        summary_value(&out, "psk"),
        "external PSK \"client1\", psk_dhe_ke"
    );
    // The same identity bound to SHA-256: a 32-byte binder where the server computes 48.
    let o = client(&["client1"]);
    assert_fails(
        &o,
        5,
        "tls13lab: handshake failed: received alert decrypt_error",
    );
    // Another identity: no PSK the server can use, so it authenticates with its certificate,
    // and with no trust anchors that cannot succeed.
    let o = client(&["client2", "--psk-hash", "sha384"]);
    let line = assert_fails(&o, 5, "tls13lab: handshake failed: sent alert unknown_ca");
    assert!(stdout(&o).contains("certificate("), "{line}");
    // With the certificate trusted, the same fallback is an ordinary full handshake.
    let o = client(&[
        "client2",
        "--cafile",
        &t.s("cert.pem"),
        "--sni",
        "localhost",
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    assert_eq!(summary_value(&out, "resumed"), "no");
    assert!(!out.contains("\npsk "), "{out}");
    assert!(out.contains("certificate_verify("), "{out}");
}

/// A wrong key: the binder does not verify, and RFC 8446 §4.2.11.2 makes that a decrypt_error
/// ("If any binder does not validate, the server MUST abort the handshake").
#[test]
fn external_psk_wrong_key_is_decrypt_error() {
    let server = ServerGuard::start(&["--psk", PSK, "--psk-identity", "client1"]);
    let wrong = format!("ff{}", &PSK[2..]);
    let o = run(&[
        "client",
        &server.addr(),
        "--psk",
        &wrong,
        "--psk-identity",
        "client1",
    ]);
    assert_fails(
        &o,
        5,
        "tls13lab: handshake failed: received alert decrypt_error",
    );
    let line = server.line_with("conn #1 ");
    assert!(line.contains("sent alert decrypt_error"), "{line}");
}

#[test]
fn bad_psk_options_give_one_line_and_exit_2() {
    for (args, want) in [
        (
            &["--psk", "0g", "--psk-identity", "a"][..],
            "tls13lab: bad option: --psk: not hex",
        ),
        (
            &["--psk", "012", "--psk-identity", "a"],
            "tls13lab: bad option: --psk: not hex",
        ),
        (
            &["--psk", "", "--psk-identity", "a"],
            "tls13lab: bad option: --psk: empty key",
        ),
        (
            &["--psk", "00", "--psk-identity", ""],
            "tls13lab: bad option: invalid value '' for '--psk-identity <ID>': empty",
        ),
        (
            &["--psk", "00"],
            "tls13lab: bad option: the following required arguments were not provided: --psk-identity",
        ),
        (
            &["--psk-identity", "a"],
            "tls13lab: bad option: the following required arguments were not provided: --psk <HEX>",
        ),
        (
            &["--psk", "00", "--psk-identity", "a", "--psk-hash", "md5"],
            "tls13lab: bad option: invalid value 'md5' for '--psk-hash <HASH>'",
        ),
    ] {
        for cmd in [&["client", "127.0.0.1:1"][..], &["server"]] {
            let mut a = cmd.to_vec();
            a.extend_from_slice(args);
            let line = assert_fails(&run(&a), 2, want);
            // The key is a secret: errors never repeat it.
            assert!(!line.contains("0g") && !line.contains("012"), "{line}");
        }
    }
}

// --------------------------------------------------------------- supported_groups in EE

/// RFC 8446 §4.2.7: our server lists its groups in EncryptedExtensions (`--ee-groups auto`, the
/// default, when the client's group was not our first; `on`, whenever the client sent
/// supported_groups); our client reports them after the handshake, in the server's order, and
/// does not act on them (its key share stays its own).
#[test]
fn server_groups_from_encrypted_extensions() {
    let t = TempDir::new("eegroups");
    let server = ServerGuard::start(&["--groups", "P-256,x25519,X25519MLKEM768"]);
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--json",
        &t.s("c.json"),
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    assert_eq!(
        summary_value(&out, "server groups"),
        "secp256r1, x25519, X25519MLKEM768"
    );
    assert_eq!(summary_value(&out, "group"), "x25519");
    assert_eq!(summary_value(&out, "hello retry"), "no");
    let j = json(&t.path("c.json"));
    assert_eq!(
        j["server_groups"],
        serde_json::json!(["secp256r1", "x25519", "X25519MLKEM768"])
    );
    let events: Vec<&str> = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event"].as_str())
        .collect();
    let at = |name: &str| events.iter().position(|e| *e == name);
    assert!(
        at("server_groups") > at("connected"),
        "reported after: {events:?}"
    );

    // `auto`: a client whose share was for our first group learns nothing new, so no list;
    // `on` sends it anyway.
    for (mode, listed) in [("auto", false), ("on", true)] {
        let server = ServerGuard::start(&["--groups", "x25519,P-256", "--ee-groups", mode]);
        let o = run(&["client", &server.addr(), "--insecure"]);
        assert_ok(&o);
        assert_eq!(summary_value(&stdout(&o), "group"), "x25519");
        assert_eq!(
            stdout(&o).contains("server groups"),
            listed,
            "{mode}: {}",
            stdout(&o)
        );
    }

    let server = ServerGuard::start(&["--groups", "P-256,x25519", "--ee-groups", "off"]);
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--json",
        &t.s("off.json"),
    ]);
    assert_ok(&o);
    assert!(!stdout(&o).contains("server groups"), "{}", stdout(&o));
    assert!(json(&t.path("off.json"))["server_groups"].is_null());
}

// ------------------------------------------------------------------------------- trust

/// A test CA (ECDSA P-256, through rcgen) that signs server certificates.
struct TestCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    cert: rcgen::Certificate,
}

impl TestCa {
    fn new(cn: &str) -> TestCa {
        let key = rcgen::KeyPair::generate().expect("CA key");
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name.push(rcgen::DnType::CommonName, cn);
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let cert = p.self_signed(&key).expect("CA certificate");
        TestCa {
            issuer: rcgen::Issuer::new(p, key),
            cert,
        }
    }

    /// Write the CA certificate to `path`.
    fn write(&self, path: &Path) {
        std::fs::write(path, self.cert.pem()).expect("write CA");
    }

    /// A server certificate for localhost and 127.0.0.1, valid from `not_before` to
    /// `not_after` (year, month, day), written to `cert` and its key to `key`.
    fn issue(&self, cert: &Path, key: &Path, not_before: (i32, u8, u8), not_after: (i32, u8, u8)) {
        let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
        let mut p = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("leaf params");
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "localhost");
        p.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        p.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let leaf = p
            .signed_by(&leaf_key, &self.issuer)
            .expect("leaf certificate");
        std::fs::write(cert, leaf.pem()).expect("write leaf");
        std::fs::write(key, leaf_key.serialize_pem()).expect("write key");
    }
}

/// Without --cafile or --insecure the client trusts the system's roots, and SSL_CERT_FILE /
/// SSL_CERT_DIR replace them; the summary and the JSON say which. A failed verification names
/// its reason in one line: unknown issuer, name mismatch, expiry; no roots at all is a bad file.
#[test]
fn system_trust_store_and_verification_failures() {
    let t = TempDir::new("trust");
    let ca = TestCa::new("tls13lab test CA");
    ca.write(&t.path("ca.pem"));
    TestCa::new("another CA").write(&t.path("other-ca.pem"));
    ca.issue(
        &t.path("leaf.pem"),
        &t.path("leaf.key"),
        (2020, 1, 1),
        (2999, 1, 1),
    );
    ca.issue(
        &t.path("old.pem"),
        &t.path("old.key"),
        (2019, 1, 1),
        (2020, 1, 1),
    );
    std::fs::create_dir(t.path("certs")).unwrap();
    ca.write(&t.path("certs/ca.pem"));
    let server = ServerGuard::start(&["--cert", &t.s("leaf.pem"), "--key", &t.s("leaf.key")]);
    let target = format!("localhost:{}", server.port);
    let ca_file = format!("SSL_CERT_FILE={}", t.s("ca.pem"));

    let o = run_env(
        &["client", &target, "--json", &t.s("c.json")],
        &[("SSL_CERT_FILE", &t.s("ca.pem"))],
    );
    assert_ok(&o);
    let out = stdout(&o);
    assert!(out.contains("HTTP/1.0 200 OK"), "{out}");
    assert!(
        out.contains(&format!(
            "\nroots              system: 1 certificate ({ca_file})\n"
        )),
        "{out}"
    );
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("c.json")).unwrap()).unwrap();
    assert_eq!(j["roots"]["source"], "system", "{}", j["roots"]);
    assert_eq!(j["roots"]["certificates"], 1);
    assert_eq!(j["roots"]["from"], ca_file.as_str());
    // The server's leaf was issued by that root, not the root itself.
    assert_eq!(j["roots"]["leaf_trusted_directly"], false, "{}", j["roots"]);
    assert!(j["error"].is_null());
    // A directory of PEM files works the same way.
    let o = run_env(&["client", &target], &[("SSL_CERT_DIR", &t.s("certs"))]);
    assert_ok(&o);
    assert!(
        stdout(&o).contains(&format!(
            "roots              system: 1 certificate (SSL_CERT_DIR={})",
            t.s("certs")
        )),
        "{}",
        stdout(&o)
    );
    // --cafile and --insecure say so too.
    let o = run(&["client", &target, "--cafile", &t.s("ca.pem")]);
    assert_ok(&o);
    assert!(stdout(&o).contains(&format!(
        "roots              cafile: 1 certificate ({})",
        t.s("ca.pem")
    )));
    let o = run(&["client", &target, "--insecure"]);
    assert!(stdout(&o).contains("roots              none: --insecure, any certificate accepted"));

    // Another CA: unknown issuer, named, and the roots line still printed with the ledger.
    let o = run_env(
        &["client", &target, "--json", &t.s("bad.json")],
        &[("SSL_CERT_FILE", &t.s("other-ca.pem"))],
    );
    let line = assert_fails(
        &o,
        5,
        "tls13lab: handshake failed: sent alert unknown_ca (unknown issuer",
    );
    assert!(
        line.ends_with("(unknown issuer \"CN=tls13lab test CA\": no path to a trusted root)"),
        "{line}"
    );
    assert!(stdout(&o).contains("roots              system: 1 certificate"));
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("bad.json")).unwrap()).unwrap();
    assert_eq!(j["error"], line.trim_start_matches("tls13lab: "));

    // The right CA, another name: both the name asked for and the certificate's names.
    let o = run_env(
        &["client", &target, "--sni", "other.test"],
        &[("SSL_CERT_FILE", &t.s("ca.pem"))],
    );
    let line = assert_fails(
        &o,
        5,
        "tls13lab: handshake failed: sent alert bad_certificate",
    );
    assert!(
        line.ends_with(
            "(certificate name mismatch: \"other.test\" is not among the certificate's names \
             (localhost, 127.0.0.1))"
        ),
        "{line}"
    );

    // No root at all.
    let line = assert_fails(
        &run_env(
            &["client", &target],
            &[("SSL_CERT_FILE", &t.s("missing.pem"))],
        ),
        3,
        "tls13lab: bad file: no trust anchors in the system store (SSL_CERT_FILE=",
    );
    assert!(
        line.contains("missing.pem") && line.ends_with("give --cafile FILE (PEM) or --insecure"),
        "{line}"
    );
    drop(server);

    // Expired (notAfter 2020-01-01).
    let server = ServerGuard::start(&["--cert", &t.s("old.pem"), "--key", &t.s("old.key")]);
    let o = run_env(
        &["client", &format!("localhost:{}", server.port)],
        &[("SSL_CERT_FILE", &t.s("ca.pem"))],
    );
    let line = assert_fails(
        &o,
        5,
        "tls13lab: handshake failed: sent alert certificate_expired (certificate expired: valid \
         until 2020-01-01 00:00:00 UTC, now 20",
    );
    assert!(line.ends_with(" UTC)"), "{line}");
}

// ------------------------------------------------------------------------------ the server

#[test]
fn one_bad_connection_never_stops_the_server() {
    // The timeout bounds every connection, the good client's too: 3 s leaves a loaded machine
    // room for its handshake and page.
    let server = ServerGuard::start(&["--suites", "chacha20", "--timeout", "3"]);
    // No cipher suite in common: the server answers with handshake_failure.
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--suites",
        "aes128gcm",
    ]);
    let line = assert_fails(&o, 5, "tls13lab: handshake failed: received alert");
    assert!(line.contains("handshake_failure"), "{line}");
    // Garbage, then a silent client that times out.
    let mut s = TcpStream::connect(server.addr()).unwrap();
    let _ = s.write_all(b"\x16\x03\x01\x00\x05hello, not TLS\r\n");
    let _silent = TcpStream::connect(server.addr()).unwrap();
    // A good client is still served.
    let o = run(&["client", &server.addr(), "--insecure"]);
    assert_ok(&o);
    assert_eq!(
        summary_value(&stdout(&o), "cipher suite"),
        "TLS_CHACHA20_POLY1305_SHA256"
    );
    assert!(server.line_with("timed out").contains("no handshake"));
}

/// The `(direction, requested)` of every KeyUpdate in a JSON ledger, in order.
fn key_updates(j: &Value) -> Vec<(String, bool)> {
    j["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "key_update")
        .map(|e| {
            (
                e["direction"].as_str().unwrap_or("?").to_string(),
                e["requested"].as_bool().expect("requested"),
            )
        })
        .collect()
}

/// `GET /keyupd…` makes the page handler send KeyUpdate(update_requested) before the page, as
/// `openssl s_server -www` does: our client answers with KeyUpdate(update_not_requested), and
/// the page arrives whole under the server's next keys. Other paths get no KeyUpdate.
#[test]
fn get_keyupd_makes_the_server_update_its_keys() {
    let t = TempDir::new("keyupd");
    let mut server = ServerGuard::start(&["--naccept", "2", "--json-dir", &t.s("jd")]);
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--request",
        r"GET /keyupd HTTP/1.0\r\n\r\n",
        "--json",
        &t.s("c.json"),
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("c.json")).unwrap()).unwrap();
    let want = vec![
        ("server_to_client".to_string(), true),
        ("client_to_server".to_string(), false),
    ];
    assert_eq!(key_updates(&j), want, "{}", j["events"]);
    // The KeyUpdate rides in the server's generation-0 records, the page in generation 1.
    let records = j["records"].as_array().unwrap();
    let from_server = |inner: &str| -> Vec<&Value> {
        records
            .iter()
            .filter(|r| r["direction"] == "server_to_client" && r["inner_type"] == inner)
            .collect()
    };
    let ku = from_server("handshake")
        .into_iter()
        .find(|r| r["messages"].to_string().contains("key_update"))
        .expect("a record with the server's key_update");
    assert_eq!(ku["epoch"]["application"], 0, "{ku}");
    let data = from_server("application_data");
    assert!(!data.is_empty());
    for r in &data {
        assert_eq!(r["epoch"]["application"], 1, "{r}");
    }
    // The page is whole: its content-length is what arrived after the header.
    let response = out
        .split_once("--- response (")
        .and_then(|(_, r)| r.split_once(" bytes)\n"))
        .map(|(_, r)| r.split("--- summary\n").next().unwrap_or(""))
        .expect("response");
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP header");
    assert!(head.starts_with("HTTP/1.0 200 OK"), "{head}");
    assert!(
        head.contains(&format!("content-length: {}", body.len())),
        "{head}\n{body:?}"
    );
    assert!(
        body.contains(
            "key update     sent KeyUpdate(update_requested) before this page: it comes under \
             the next keys\n"
        ),
        "{body}"
    );
    // The server's ledger saw the same two, the other way round.
    server.line_with("conn #1");
    let sj: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("jd/conn-000001.json")).unwrap())
            .unwrap();
    assert_eq!(key_updates(&sj), want, "{}", sj["events"]);

    // Another path: no KeyUpdate, and the page does not mention one.
    let o = run(&[
        "client",
        &server.addr(),
        "--insecure",
        "--request",
        r"GET /x/keyupd HTTP/1.0\r\n\r\n",
        "--json",
        &t.s("c2.json"),
    ]);
    assert_ok(&o);
    assert!(!stdout(&o).contains("key update"), "{}", stdout(&o));
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("c2.json")).unwrap()).unwrap();
    assert_eq!(key_updates(&j), vec![]);
    assert!(server.wait_exit().success());
}

/// `GET /renegcert` on a server started with `--post-handshake-auth` sends a CertificateRequest
/// before the page (RFC 8446 §4.6.2, as `openssl s_server -www -verify_post_handshake`): a client
/// with `--cert/--key` offered post_handshake_auth and answers, and the page says what came
/// back. A client without a certificate did not offer it; a server without the flag does not ask.
#[test]
fn get_renegcert_makes_the_server_ask_for_a_client_certificate() {
    let cert = format!("{PEM}/server_rsa_certificate.pem");
    let key = format!("{PEM}/server_rsa_key.pem");
    let request = r"GET /renegcert HTTP/1.0\r\n\r\n";
    let with_cert = |addr: &str| {
        run(&[
            "client",
            addr,
            "--insecure",
            "--cert",
            &cert,
            "--key",
            &key,
            "--request",
            request,
        ])
    };
    let mut server = ServerGuard::start(&["--naccept", "2", "--post-handshake-auth"]);
    let o = with_cert(&server.addr());
    assert_ok(&o);
    let out = stdout(&o);
    assert!(
        out.contains(
            "client cert    requested after the handshake: 1 certificate(s), CertificateVerify \
             rsa_pss_rsae_sha256 verified, its chain not validated (no --client-ca)\n"
        ),
        "{out}"
    );
    assert_eq!(
        summary_value(&out, "post-hs auth"),
        "1 CertificateRequest(s) answered: 1 certificate(s), rsa_pss_rsae_sha256"
    );
    // In the handshake itself nothing was asked.
    assert!(!out.contains("client signature"), "{out}");

    let o = run(&["client", &server.addr(), "--insecure", "--request", request]);
    assert_ok(&o);
    let out = stdout(&o);
    assert!(
        out.contains(
            "client cert    not requested: the client did not offer post_handshake_auth\n"
        ),
        "{out}"
    );
    assert!(!out.contains("post-hs auth"), "{out}");
    assert!(server.wait_exit().success());

    let mut server = ServerGuard::start(&["--naccept", "1"]);
    let o = with_cert(&server.addr());
    assert_ok(&o);
    let out = stdout(&o);
    assert!(
        out.contains(
            "client cert    not requested: the server was started without --post-handshake-auth\n"
        ),
        "{out}"
    );
    assert!(server.wait_exit().success());
}

// ------------------------------------------------------------------------ errors and exit codes

#[test]
fn bad_options_give_one_line_and_exit_2() {
    assert_fails(
        &run(&["client", "127.0.0.1:1", "--bogus"]),
        2,
        "tls13lab: bad option: unexpected argument '--bogus'",
    );
    let line = assert_fails(
        &run(&[
            "client",
            "127.0.0.1:1",
            "--insecure",
            "--groups",
            "x25519,nope",
        ]),
        2,
        "tls13lab: bad option:",
    );
    assert!(line.contains("unknown group 'nope'"), "{line}");
    assert_fails(
        &run(&["client", "127.0.0.1:1", "--insecure", "--suites", "rc4"]),
        2,
        "tls13lab: bad option:",
    );
    assert_fails(&run(&["client"]), 2, "tls13lab: bad option:");
    assert_fails(
        &run(&["client", "no-port", "--insecure"]),
        2,
        "tls13lab: bad option: 'no-port' is not HOST:PORT",
    );
    assert_fails(
        &run(&["client", "127.0.0.1:1", "--insecure", "--compat", "maybe"]),
        2,
        "tls13lab: bad option:",
    );
    assert_fails(
        &run(&["server", "--anti-replay", "sometimes"]),
        2,
        "tls13lab: bad option:",
    );
    assert_fails(
        &run(&["server", "--client-ca", "x.pem"]),
        2,
        "tls13lab: bad option: --client-ca needs",
    );
    assert_fails(
        &run(&["demo", "--key-shares", "brainpoolP256r1tls13"]),
        2,
        "tls13lab: bad option: cannot make a key share for brainpoolP256r1tls13",
    );
}

#[test]
fn unreachable_port_is_connection_refused_exit_4() {
    let (_bound, port) = refusing_port();
    let line = assert_fails(
        &run(&["client", &format!("127.0.0.1:{port}"), "--insecure"]),
        4,
        "tls13lab: connection refused",
    );
    assert!(line.ends_with(&format!("127.0.0.1:{port}")), "{line}");
}

#[test]
fn bad_files_exit_3() {
    let t = TempDir::new("badfiles");
    std::fs::write(t.path("junk"), "not json, not PEM").unwrap();
    let (_bound, port) = refusing_port();
    let target = format!("127.0.0.1:{port}");
    let line = assert_fails(
        &run(&["client", &target, "--cafile", &t.s("missing.pem")]),
        3,
        "tls13lab: bad file:",
    );
    assert!(line.contains("missing.pem"), "{line}");
    assert_fails(
        &run(&["client", &target, "--cafile", &t.s("junk")]),
        3,
        "tls13lab: bad file:",
    );
    assert_fails(
        &run(&["client", &target, "--insecure", "--sess-in", &t.s("junk")]),
        3,
        "tls13lab: bad file:",
    );
    assert_fails(
        &run(&["server", "--cert", &t.s("junk"), "--key", &t.s("junk")]),
        3,
        "tls13lab: bad file:",
    );
}

// ------------------------------------------------------------------------------------- demo

#[test]
fn demo_is_the_default_and_replays() {
    let a = run(&[]);
    assert_ok(&a);
    let out = stdout(&a);
    assert!(
        out.contains("client_hello(") && out.contains("HTTP/1.0 200 OK"),
        "{out}"
    );
    assert_eq!(stdout(&run(&["demo"])), out, "same seed, same bytes");
    assert_ne!(stdout(&run(&["demo", "--seed", "2"])), out);
}

/// The demo's last section: a full handshake with X25519MLKEM768 and an ML-DSA-44 chain, its
/// flights beside the ECDSA one's (`--once` leaves it out with the resumptions).
#[test]
fn demo_ends_with_a_post_quantum_connection() {
    let out = stdout(&run(&["demo"]));
    let pq = out
        .split_once("\n== full PQ, seed 4:")
        .unwrap_or_else(|| panic!("no post-quantum section:\n{out}"))
        .1;
    assert_eq!(summary_value(pq, "group"), "X25519MLKEM768");
    assert_eq!(summary_value(pq, "signature scheme"), "mldsa44");
    let table = pq
        .split_once("== bytes per flight: full (X25519MLKEM768, ecdsa_secp256r1_sha256) vs full PQ (X25519MLKEM768, mldsa44)\n")
        .unwrap_or_else(|| panic!("no flight table:\n{pq}"))
        .1;
    // Flight 2 is the server's: ML-DSA-44's 2,420-byte signature (4 + 2 + 2 + 2420) and its
    // 1,312-byte key in the certificate add at least their sizes to the ECDSA flight (both
    // carry the same hybrid ServerHello).
    let row = table
        .lines()
        .find(|l| l.starts_with("2 "))
        .expect("flight 2");
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[1], "S→C", "{row}");
    let (ecdsa, mldsa): (usize, usize) = (cols[2].parse().unwrap(), cols[3].parse().unwrap());
    assert!(mldsa > ecdsa + 2420 + 1312, "{row}");
    assert!(row.contains("certificate_verify(2428)"), "{row}");
    let once = stdout(&run(&["demo", "--once"]));
    assert!(!once.contains("full PQ"), "{once}");
}

/// `demo --ech`: every connection (full, resumed, 0-RTT, post-quantum) seals its ClientHello to
/// the seeded ECH key and is accepted, 0-RTT data too; both columns of the flight table carry
/// ECH. `--ech-grease` sends GREASE, which the server ignores.
#[test]
fn demo_with_ech() {
    let plain = stdout(&run(&["demo"]));
    let o = run(&["demo", "--ech"]);
    assert_ok(&o);
    let out = stdout(&o);
    let accepted = "ECH accepted: SNI inner localhost, outer public.example";
    assert_eq!(out.matches(accepted).count(), 4, "{out}");
    let zero_rtt = out
        .split_once("\n== resumed+0-RTT")
        .and_then(|(_, r)| r.split_once("\n== full vs"))
        .expect("0-RTT section")
        .0;
    assert_eq!(summary_value(zero_rtt, "early data"), "accepted");
    let flight1 = |out: &str| -> (usize, usize) {
        let row = out
            .split_once("== bytes per flight")
            .and_then(|(_, t)| t.lines().find(|l| l.starts_with("1 ")))
            .expect("flight 1")
            .to_string();
        let cols: Vec<&str> = row.split_whitespace().collect();
        (cols[2].parse().unwrap(), cols[3].parse().unwrap())
    };
    let (with, without) = (flight1(&out), flight1(&plain));
    assert!(
        with.0 > without.0 && with.1 > without.1,
        "{with:?} {without:?}"
    );
    let grease = stdout(&run(&["demo", "--once", "--ech-grease"]));
    assert!(
        grease.contains("ECH grease: SNI inner -, outer localhost"),
        "{grease}"
    );
    assert!(!run(&["demo", "--ech", "--ech-grease"]).status.success());
}

/// The server's line and JSON say why it did not use an ECH offer: without ECH keys, GREASE
/// and a config it never held look the same; with keys, none of them opened it and it sent
/// retry_configs (RFC 9849 §6.2, §7.1).
#[test]
fn server_says_why_ech_was_not_used() {
    let t = TempDir::new("echwhy");
    let server = ServerGuard::start(&["--json-dir", &t.s("jd")]);
    let o = run(&["client", &server.addr(), "--insecure", "--ech-grease"]);
    assert_ok(&o);
    let line = server.line_with("conn #1");
    let why =
        "ECH rejected: this server has no ECH keys (GREASE or a config it never held; config_id ";
    assert!(line.contains(why), "{line}");
    let json = std::fs::read_dir(t.path("jd"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .next()
        .expect("the server's JSON");
    let v: Value = serde_json::from_str(&json).unwrap();
    let said = v["ech"].as_str().unwrap_or_default();
    assert!(
        said.starts_with(
            "rejected: this server has no ECH keys (GREASE or a config it never held; config_id "
        ),
        "{said}"
    );
    let key = t.s("ech.pem");
    assert_ok(&run(&[
        "ech",
        "keygen",
        "--public-name",
        "public.example",
        "--out",
        &key,
    ]));
    let server = ServerGuard::start(&["--ech-key", &key]);
    let o = run(&["client", &server.addr(), "--insecure", "--ech-grease"]);
    assert_ok(&o);
    let line = server.line_with("conn #1");
    assert!(
        line.contains("ECH rejected: no key for config_id ")
            && line.contains(" opened it, retry_configs sent (outer SNI "),
        "{line}"
    );
}

#[test]
fn demo_takes_client_and_server_options() {
    let t = TempDir::new("demo");
    let o = run(&[
        "demo",
        "--groups",
        "x25519,P-256",
        "--server-groups",
        "secp256r1",
        "--suites",
        "TLS_CHACHA20_POLY1305_SHA256",
        "--request-client-cert",
        "--json",
        &t.s("d.json"),
        "--show-secrets",
        "--keylog",
        &t.s("keys"),
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    assert_eq!(summary_value(&out, "hello retry"), "yes");
    assert_eq!(summary_value(&out, "group"), "secp256r1");
    assert_eq!(
        summary_value(&out, "client signature"),
        "ecdsa_secp256r1_sha256"
    );
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("d.json")).unwrap()).unwrap();
    let secrets = j["secrets"].as_array().unwrap();
    assert!(!secrets.is_empty());
    assert!(secrets
        .iter()
        .all(|s| s["secret"].as_str().is_some_and(|x| is_hex(x, 64))));
    assert!(!j["derivations"].as_array().unwrap().is_empty());
    assert_eq!(keylog_lines(&t.path("keys")).len(), secrets.len());

    let o = run(&[
        "demo",
        "--suites",
        "aes256gcm",
        "--server-suites",
        "chacha20",
    ]);
    let line = assert_fails(
        &o,
        5,
        "tls13lab: handshake failed: server sent alert handshake_failure",
    );
    assert!(line.contains("NoCommonCipherSuite"), "{line}");
}

#[test]
fn help_exits_0() {
    for args in [
        &["--help"][..],
        &["client", "--help"],
        &["server", "--help"],
        &["demo", "--help"],
    ] {
        let o = run(args);
        assert_ok(&o);
        assert!(stdout(&o).contains("Usage:"));
    }
}

/// `tls13lab bench --json`: the figures it promises are there and positive — handshakes/s for
/// each case and group asked for (each run checked inside to be the case it claims), and bulk
/// MB/s each way, through the buffered and the in-place calls.
#[test]
fn bench_reports_every_figure_as_json() {
    let o = run(&[
        "bench",
        "--groups",
        "x25519,X25519MLKEM768",
        "--suites",
        "aes128gcm,chacha20",
        "--only",
        "full,resumed,0rtt,bulk",
        "--seconds",
        "0.02",
        "--json",
    ]);
    assert_ok(&o);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let hs = v["handshakes"].as_array().expect("handshakes");
    for group in ["x25519", "X25519MLKEM768"] {
        for kind in ["full", "resumed", "0-rtt"] {
            let row = hs
                .iter()
                .find(|h| h["group"] == group && h["kind"] == kind)
                .unwrap_or_else(|| panic!("{group} {kind} in {hs:?}"));
            assert!(row["per_second"].as_f64().unwrap() > 0.0, "{row}");
        }
    }
    let bulk = v["bulk"].as_array().expect("bulk");
    assert_eq!(bulk.len(), 2 * 4, "{bulk:?}");
    for suite in ["TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"] {
        for dir in ["encrypt", "decrypt", "encrypt-in-place", "decrypt-in-place"] {
            let row = bulk
                .iter()
                .find(|b| b["suite"] == suite && b["direction"] == dir)
                .unwrap_or_else(|| panic!("{suite} {dir} in {bulk:?}"));
            assert!(row["mb_per_second"].as_f64().unwrap() > 0.0, "{row}");
            assert_eq!(row["record_bytes"], 16384);
        }
    }
}

/// `tls13lab bench --chain LIST --ech`: handshakes/s with a post-quantum chain and with
/// Encrypted ClientHello (every timed handshake is checked to be ML-DSA-signed and ECH
/// accepted inside), and the JSON says which chain, scheme and ECH the figures are of.
#[test]
fn bench_takes_a_chain_and_ech() {
    let json = |extra: &[&str]| -> Value {
        let o = run(&[
            &[
                "bench",
                "--groups",
                "x25519mlkem768",
                "--seconds",
                "0.02",
                "--json",
            ][..],
            extra,
        ]
        .concat());
        assert_ok(&o);
        serde_json::from_str(&stdout(&o)).expect("JSON")
    };
    let v = json(&["--chain", "mldsa44", "--only", "full"]);
    assert_eq!(v["chain"], serde_json::json!(["mldsa44"]));
    assert_eq!(v["signature_scheme"], "mldsa44");
    assert_eq!(v["ech"], false);
    let hs = v["handshakes"].as_array().expect("handshakes");
    assert_eq!(hs.len(), 1, "{hs:?}");
    assert_eq!(hs[0]["group"], "X25519MLKEM768");
    assert!(hs[0]["per_second"].as_f64().unwrap() > 0.0, "{v}");
    let v = json(&[
        "--chain",
        "mldsa87,mldsa65",
        "--ech",
        "--only",
        "full,resumed",
    ]);
    assert_eq!(v["chain"], serde_json::json!(["mldsa87", "mldsa65"]));
    assert_eq!(v["signature_scheme"], "mldsa65");
    assert_eq!(v["ech"], true);
    assert_eq!(v["handshakes"].as_array().unwrap().len(), 2, "{v}");
    // The default is the self-signed ECDSA P-256 certificate.
    let v = json(&["--only", "full"]);
    assert_eq!(v["chain"], serde_json::json!(["ecdsa-p256"]));
    assert_eq!(v["signature_scheme"], "ecdsa_secp256r1_sha256");
    // The table names the chain; a leaf that cannot sign CertificateVerify is an error.
    let o = run(&[
        "bench",
        "--chain",
        "rsa-2048,ed25519",
        "--only",
        "full",
        "--seconds",
        "0.02",
    ]);
    assert_ok(&o);
    assert!(
        stdout(&o).contains("chain rsa-2048,ed25519 (CertificateVerify ed25519)"),
        "{}",
        stdout(&o)
    );
    let o = run(&["bench", "--chain", "nosuch", "--only", "full"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
}

/// `tls13lab ech keygen`: the file reads back as an ECH key whose config is what the options
/// asked for, stdout is its ECHConfigList in base64, a seed gives the same file, and bad suites
/// are exit 2. (OpenSSL reading these files: tests/interop_openssl.rs.)
#[test]
fn client_predicts_its_key_share_from_the_dns_groups() {
    // draft-ietf-tls-key-share-prediction: a classical server (x25519, P-256). Without a hint
    // the client's default hybrid + x25519 shares cost 1,400 bytes; told the server's
    // tls-supported-groups (29,23) it sends one x25519 share, and told a stale list whose only
    // group the server lacks (24, secp384r1) it pays a HelloRetryRequest (§3.4); a list with
    // nothing we support leaves the usual shares.
    let server = ServerGuard::start(&["--groups", "x25519,secp256r1"]);
    let run_with = |dns: &str| {
        let o = run(&["client", &server.addr(), "--insecure", "--dns-groups", dns]);
        assert_ok(&o);
        stdout(&o)
    };
    let dns_line = |out: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix("dns groups"))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("no dns groups line: {out}"))
    };
    let out = run_with("29,23");
    assert_eq!(dns_line(&out), "predicted x25519: one key share for it");
    assert_eq!(summary_value(&out, "group"), "x25519");
    assert_eq!(summary_value(&out, "hello retry"), "no");
    let out = run_with("24");
    assert_eq!(dns_line(&out), "predicted secp384r1: one key share for it");
    assert_eq!(summary_value(&out, "hello retry"), "yes");
    assert_eq!(summary_value(&out, "group"), "x25519");
    let out = run_with("X448");
    assert_eq!(dns_line(&out), "no group in common: the usual key shares");
    let o = run(&["client", &server.addr(), "--dns-groups", "29,29"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("listed twice"), "{}", stderr(&o));
}

#[test]
fn simulate_takes_merkle_tree_certificates() {
    // draft-ietf-plants-merkle-tree-certs: a landmark-relative MTC carries an inclusion proof
    // and no signature, a standalone one three cosignatures: both verify (the hybrid full
    // handshake gets its response) and the landmark's server flight is the smaller by those
    // signatures (2,420 + 64 + 2,420 bytes) less its longer inclusion proof (480 B against
    // the standalone subtree's 32 B here).
    let flight = |chain: &str| -> usize {
        let o = run(&[
            "simulate",
            "--chain",
            chain,
            "--kx",
            "hybrid",
            "--bandwidth",
            "0",
        ]);
        assert_ok(&o);
        let out = stdout(&o);
        let line = out
            .lines()
            .find(|l| l.starts_with("hybrid full"))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains("yes"), "the certificate was sent: {line}");
        line.split_whitespace().nth(7).unwrap().parse().unwrap()
    };
    let (standalone, landmark) = (flight("mtc-standalone"), flight("mtc-landmark"));
    assert!(
        (4_300..4_600).contains(&(standalone - landmark)),
        "standalone {standalone}, landmark {landmark}"
    );
}

#[test]
fn post_quantum_ech_over_tcp() {
    // draft-ietf-hpke-pq: an ECH key with X-Wing (and ML-KEM-768, ML-KEM-1024) from `ech keygen`,
    // our server holding it, our client offering its config over TCP: accepted, and both sides
    // say so; the config's public key is the KEM's.
    use tls13lab::crypto::ech::EchKeyPair;
    use tls13lab::messages::enums::HpkeKemId;
    let t = TempDir::new("ech-pq");
    for (suite, kem, pk_len) in [
        ("0x647a,1,3", HpkeKemId::MlKem768X25519, 1216),
        ("0x41,1,1", HpkeKemId::MlKem768, 1184),
        ("0x42,1,2", HpkeKemId::MlKem1024, 1568),
    ] {
        let key = t.s(&format!("{suite}.pem"));
        let o = run(&[
            "ech",
            "keygen",
            "--public-name",
            "public.example",
            "--suite",
            suite,
            "--out",
            &key,
        ]);
        assert_ok(&o);
        let config = stdout(&o).trim().to_string();
        let k = EchKeyPair::from_pem(
            &std::fs::read_to_string(t.path(&format!("{suite}.pem"))).unwrap(),
        )
        .unwrap();
        let c = k.config.contents().unwrap();
        assert_eq!(
            (c.key_config.kem_id, c.key_config.public_key.len()),
            (kem, pk_len)
        );
        let server = ServerGuard::start(&["--ech-key", &key]);
        let o = run(&[
            "client",
            &server.addr(),
            "--insecure",
            "--sni",
            "localhost",
            "--ech-config",
            &config,
        ]);
        assert_ok(&o);
        let out = stdout(&o);
        assert!(
            out.contains("ECH accepted: SNI inner localhost, outer public.example"),
            "{suite}: {out}"
        );
        let line = server.line_with("conn #1");
        assert!(line.contains("ECH accepted"), "{suite}: {line}");
    }
}

#[test]
fn ech_keygen_writes_a_key_file_and_prints_the_config_list() {
    use tls13lab::crypto::cert::base64_decode;
    use tls13lab::crypto::ech::EchKeyPair;
    use tls13lab::messages::enums::{HpkeAeadId, HpkeKemId};
    let t = TempDir::new("ech-keygen");
    let keygen = |out: &str, extra: &[&str]| {
        let o = run(&[
            &[
                "ech",
                "keygen",
                "--public-name",
                "public.example",
                "--out",
                &t.s(out),
            ][..],
            extra,
        ]
        .concat());
        assert_ok(&o);
        let text = std::fs::read_to_string(t.path(out)).unwrap();
        (stdout(&o), text)
    };
    let (b64, text) = keygen("a.pem", &["--seed", "3"]);
    let k = EchKeyPair::from_pem(&text).unwrap();
    assert_eq!(base64_decode(b64.trim()).unwrap(), k.list.encode());
    let c = k.config.contents().unwrap();
    assert_eq!(c.key_config.kem_id, HpkeKemId::DhkemX25519HkdfSha256);
    assert_eq!(c.key_config.cipher_suites.len(), 1);
    assert_eq!(c.key_config.cipher_suites[0].aead_id, HpkeAeadId::Aes128Gcm);
    assert_eq!(
        (c.public_name_str(), c.maximum_name_length),
        (Some("public.example"), 0)
    );
    assert_eq!(
        keygen("b.pem", &["--seed", "3"]),
        (b64.clone(), text.clone())
    );
    assert_ne!(
        keygen("c.pem", &[]).1,
        text,
        "without --seed the OS draws the key"
    );
    let (_, p) = keygen(
        "p.pem",
        &[
            "--suite",
            "0x10,1,3",
            "--suite",
            "16,1,2",
            "--config-id",
            "200",
            "--max-name-len",
            "64",
        ],
    );
    let p = EchKeyPair::from_pem(&p).unwrap();
    let c = p.config.contents().unwrap();
    assert_eq!(c.key_config.kem_id, HpkeKemId::DhkemP256HkdfSha256);
    assert_eq!(c.key_config.public_key.len(), 65);
    assert_eq!(
        c.key_config
            .cipher_suites
            .iter()
            .map(|s| s.aead_id)
            .collect::<Vec<_>>(),
        [HpkeAeadId::ChaCha20Poly1305, HpkeAeadId::Aes256Gcm]
    );
    assert_eq!((c.key_config.config_id, c.maximum_name_length), (200, 64));
    for (bad, why) in [
        (&["--suite", "0x21,1,1"][..], "unsupported HPKE KEM"),
        (&["--suite", "0x20,1,0xffff"][..], "unsupported HPKE AEAD"),
        (&["--suite", "0x20,1"][..], "expected KEM,KDF,AEAD"),
        (
            &["--suite", "0x20,1,1", "--suite", "0x10,1,1"][..],
            "same KEM",
        ),
    ] {
        let o = run(&[
            &[
                "ech",
                "keygen",
                "--public-name",
                "p",
                "--out",
                &t.s("x.pem"),
            ][..],
            bad,
        ]
        .concat());
        let msg = assert_fails(&o, 2, "tls13lab: bad option: ");
        assert!(msg.contains(why), "{bad:?}: {msg}");
    }
    assert!(!t.path("x.pem").exists());
}

// ------------------------------------------------------------------------------- cert

/// Every file `tls13lab cert` wrote into `dir`, by name.
fn cert_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("cert dir")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).expect("read"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn cert_replays_from_its_seed() {
    let t = TempDir::new("certseed");
    let make = |dir: &str, seed: &str| {
        let o = run(&[
            "cert",
            "--chain",
            "mldsa65,ecdsa-p384,ed25519",
            "--scts",
            "2",
            "--sct-alg",
            "mldsa44",
            "--aia",
            "http://ca.test/i.der",
            "--crl",
            "http://ca.test/i.crl",
            "--san",
            "example.test",
            "--out",
            &t.s(dir),
            "--seed",
            seed,
        ]);
        assert_ok(&o);
        stdout(&o)
    };
    let out = make("a", "7");
    assert_eq!(make("b", "7"), out.replace("/a", "/b"));
    make("c", "8");
    let (a, b, c) = (
        cert_files(&t.path("a")),
        cert_files(&t.path("b")),
        cert_files(&t.path("c")),
    );
    let names: Vec<&str> = a.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "chain.pem",
            "intermediate-1.key",
            "intermediate-1.pem",
            "intermediates.pem",
            "leaf.key",
            "leaf.pem",
            "root.key",
            "root.pem"
        ]
    );
    assert_eq!(a, b, "same seed, same bytes");
    for ((name, x), (_, y)) in a.iter().zip(&c) {
        assert_ne!(x, y, "{name} does not depend on the seed");
    }
    // The summary: the leaf carries the two ML-DSA-44 SCTs.
    let leaf = out
        .lines()
        .find(|l| l.starts_with("leaf "))
        .expect("leaf line");
    assert!(leaf.contains("ed25519") && leaf.contains("(2)"), "{out}");
    let o = run(&["cert", "--chain", "mldsa44,dsa", "--out", &t.s("d")]);
    let line = assert_fails(&o, 2, "tls13lab: bad option:");
    assert!(line.contains("unknown algorithm 'dsa'"), "{line}");
}

/// A 3-level ECDSA chain with 2 SCTs from `tls13lab cert`, served by `tls13lab server` and
/// verified by `tls13lab client --cafile root.pem`; the JSON ledger breaks the Certificate down.
#[test]
fn handshake_over_a_generated_chain_with_scts() {
    let t = TempDir::new("certchain");
    for (dir, seed) in [("ca", "3"), ("other", "4")] {
        assert_ok(&run(&[
            "cert",
            "--chain",
            "ecdsa-p256,ecdsa-p256,ecdsa-p256",
            "--scts",
            "2",
            "--out",
            &t.s(dir),
            "--seed",
            seed,
        ]));
    }
    let server =
        ServerGuard::start(&["--cert", &t.s("ca/chain.pem"), "--key", &t.s("ca/leaf.key")]);
    let o = run(&[
        "client",
        &server.addr(),
        "--cafile",
        &t.s("ca/root.pem"),
        "--json",
        &t.s("c.json"),
    ]);
    assert_ok(&o);
    let out = stdout(&o);
    assert!(out.contains("certificate S→C"), "{out}");
    let j = json(&t.path("c.json"));
    let certs = j["certificates"].as_array().expect("certificates");
    assert_eq!(certs.len(), 1, "{certs:?}");
    let entries = certs[0]["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2);
    let leaf = &entries[0]["parts"];
    assert_eq!(leaf["scts"], 2);
    assert_eq!(leaf["spki"], 91);
    assert!(leaf["sct_list"].as_u64().unwrap_or(0) > 200, "{leaf}");
    assert_eq!(entries[1]["parts"]["scts"], 0);
    let sent: u64 = entries
        .iter()
        .map(|e| 3 + e["der"].as_u64().unwrap_or(0) + e["extensions"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(certs[0]["len"].as_u64(), Some(4 + 1 + 3 + sent));
    // Another seed's root does not anchor this chain.
    let o = run(&["client", &server.addr(), "--cafile", &t.s("other/root.pem")]);
    let line = assert_fails(&o, 5, "tls13lab:");
    assert!(
        line.contains("unknown_ca") || line.contains("issuer"),
        "{line}"
    );
}

// ------------------------------------------------------------------------ presets (issue 28)

/// `client --preset chromium` and `--preset firefox` complete a handshake with our server in
/// those browsers' shapes, recorded on this machine (lab/src/hello/presets.rs): GREASE, a GREASE
/// ECH extension, the hybrid share first, the extensions tls13lab does not implement sent as
/// opaque bytes. The `preset` line says what the client could not honour.
#[test]
fn client_presets_complete_handshakes_with_our_server() {
    let t = TempDir::new("presets");
    let server = ServerGuard::start(&["--cert-out", &t.s("cert.pem")]);
    /// (preset, what its `preset` line says, hex its hello carries, its key share groups)
    type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);
    let cases: [Case; 2] = [
        (
            "chromium",
            &[
                "ALPS",
                "trust_anchors",
                "no GREASE key share",
                "supported_versions is TLS 1.3 alone (the preset offers a GREASE version, TLS 1.3, TLS 1.2)",
            ],
            // ALPS for h2; compress_certificate brotli; renegotiation_info.
            &["44cd00050003026832", "001b0003020002", "ff01000100"],
            &["X25519MLKEM768", "x25519"],
        ),
        (
            "firefox",
            &[
                "delegated_credential",
                "supported_versions is TLS 1.3 alone (the preset offers TLS 1.3, TLS 1.2)",
            ],
            // delegated_credential, record_size_limit 2^14+1, three compression algorithms.
            &["0022000a00080403050306030203", "001c00024001", "001b000706000100020003"],
            &["X25519MLKEM768", "x25519", "secp256r1"],
        ),
    ];
    for (preset, says, sends, groups) in cases {
        let report = t.s(&format!("{preset}.json"));
        let o = run(&[
            "client",
            &format!("localhost:{}", server.port),
            "--cafile",
            &t.s("cert.pem"),
            "--preset",
            preset,
            "--json",
            &report,
        ]);
        assert_ok(&o);
        let out = stdout(&o);
        assert_eq!(summary_value(&out, "version"), "TLSv1.3", "{preset}");
        assert_eq!(summary_value(&out, "group"), "X25519MLKEM768", "{preset}");
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("preset "))
            .unwrap_or_else(|| panic!("no preset line in {out}"));
        for s in says {
            assert!(line.contains(s), "{preset}: {line}");
        }
        let v = json(Path::new(&report));
        let hello = v["messages"][0]["bytes"].as_str().unwrap();
        assert_eq!(v["messages"][0]["type"], "client_hello");
        for s in sends {
            assert!(hello.contains(s), "{preset}: {s} not in {hello}");
        }
        // A GREASE encrypted_client_hello (RFC 9849 §6.2) of the browser's size, not the
        // size of an inner hello with the hybrid share: the whole hello stays under 2,100 bytes.
        let ech = v["messages"][0]["layout"]
            .as_array()
            .and_then(|l| l.iter().find(|x| x["name"] == "extensions"))
            .and_then(|e| e["children"].as_array())
            .and_then(|c| {
                c.iter().find(|x| {
                    x["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("encrypted_client_hello"))
                })
            });
        assert!(
            ech.is_some(),
            "{preset}: no encrypted_client_hello in {hello}"
        );
        assert!(
            hello.len() / 2 < 2100,
            "{preset}: {} bytes",
            hello.len() / 2
        );
        // The key shares sent: the preset's, but for the GREASE one (see the preset line).
        use tls13lab::messages::{DecodeContext, Extension, HandshakeMessage, HandshakePayload};
        let m = HandshakeMessage::decode(&hex::decode(hello).unwrap(), DecodeContext::default())
            .unwrap();
        let HandshakePayload::ClientHello(ch) = m.payload else {
            panic!("{preset}: not a ClientHello")
        };
        let shares: Vec<String> = ch
            .extensions
            .iter()
            .find_map(|e| match e {
                Extension::KeyShareClient(k) => {
                    Some(k.iter().map(|s| s.group.to_string()).collect())
                }
                _ => None,
            })
            .unwrap_or_default();
        assert_eq!(shares, groups, "{preset}");
    }
}

#[test]
fn merkle_tree_certificates_over_tcp_negotiated_by_trust_anchors() {
    // draft-ietf-plants-merkle-tree-certs and draft-ietf-tls-trust-anchor-ids over TCP: `cert
    // --mtc` issues a key's standalone and landmark-relative certificates with their
    // properties; the server holds an X.509 chain (its fallback) and both; the client, trusting
    // only the relying-party file, gets the path it asks for, retries after the fallback, and
    // refuses a landmark it does not hold with unknown_ca.
    let t = TempDir::new("mtc-tcp");
    let o = run(&[
        "cert",
        "--mtc",
        "--chain",
        "mldsa44",
        "--mtc-log-size",
        "1000",
        "--out",
        &t.s("mtc"),
    ]);
    assert_ok(&o);
    let issued = stdout(&o);
    assert!(
        issued.contains("sends trust_anchors 32473.1.2.1.2"),
        "{issued}"
    );
    let size = |name: &str| {
        let pem = std::fs::read_to_string(t.path(&format!("mtc/{name}"))).unwrap();
        let props = tls13lab::trust_anchors::properties_from_pem(&pem)
            .unwrap()
            .expect("CERTIFICATE PROPERTIES");
        let certs = tls13lab::crypto::cert::certs_from_pem(&pem).unwrap();
        assert_eq!(certs.len(), 1);
        (certs[0].len(), props)
    };
    let (landmark_len, landmark_props) = size("mtc-landmark.pem");
    let (standalone_len, standalone_props) = size("mtc-standalone.pem");
    assert!(landmark_props.negotiation_only && !standalone_props.negotiation_only);
    assert!(
        landmark_len + 2000 < standalone_len,
        "{landmark_len} {standalone_len}"
    );
    assert_ok(&run(&["cert", "--out", &t.s("x509")]));
    let server = ServerGuard::start(&[
        "--cert",
        &t.s("x509/chain.pem"),
        "--key",
        &t.s("x509/leaf.key"),
        "--cert",
        &t.s("mtc/mtc-landmark.pem"),
        "--key",
        &t.s("mtc/leaf.key"),
        "--cert",
        &t.s("mtc/mtc-standalone.pem"),
        "--key",
        &t.s("mtc/leaf.key"),
    ]);
    let rp = t.s("mtc/relying-party.txt");
    let client = |extra: &[&str]| {
        run(&[
            &["client", &server.addr(), "--sni", "localhost", "--mtc", &rp][..],
            extra,
        ]
        .concat())
    };
    // The Certificate message's size in the ledger of the last connection in `out`
    // (`certificate(N)`).
    let flight = |out: &str| -> usize {
        let at = out
            .rfind("certificate(")
            .expect("a Certificate in the ledger")
            + 12;
        let digits: String = out[at..].chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap()
    };
    let available = "the server has 32473.1.1.1.2, 32473.1";
    // 1. The relying party's landmark group: the landmark-relative certificate.
    let o = client(&[]);
    assert_ok(&o);
    let landmark_out = stdout(&o);
    assert_eq!(
        summary_value(&landmark_out, "trust anchors"),
        format!("the certificate path asked for; {available}")
    );
    assert!(server.line_with("conn #1").contains("trust anchor matched"));
    // 2. The CA's ID: the standalone certificate, its cosignatures included.
    let o = client(&["--trust-anchors", "32473.1"]);
    assert_ok(&o);
    let standalone_out = stdout(&o);
    assert!(summary_value(&standalone_out, "trust anchors")
        .starts_with("the certificate path asked for"));
    assert_eq!(
        flight(&standalone_out) - flight(&landmark_out),
        standalone_len - landmark_len,
        "the Certificate messages differ by the certificates"
    );
    // 3. An empty list: the X.509 fallback, which this client cannot verify; the server listed
    // its MTC anchors, and the client asks again for the first one it holds: the landmark.
    let o = client(&["--trust-anchors", ""]);
    assert_ok(&o);
    let out = stdout(&o);
    assert!(
        out.contains("the server has paths for 32473.1.1.1.2, 32473.1: connecting again asking for 32473.1.1.1.2"),
        "{out}"
    );
    assert_eq!(out.matches("--- summary").count(), 2);
    assert_eq!(flight(&out), flight(&landmark_out));
    // 4. The same without the retry: the fallback's failure is the result.
    let o = client(&["--trust-anchors", "", "--no-trust-anchor-retry"]);
    assert_fails(&o, 5, "tls13lab: handshake failed: sent alert unknown_ca");
    // 5. A relying party that has not fetched the landmark, asking for it anyway: unknown_ca.
    let text = std::fs::read_to_string(&rp).unwrap();
    let stale: String = text
        .lines()
        .filter(|l| !l.starts_with("subtree "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(t.path("stale.txt"), stale).unwrap();
    let o = run(&[
        "client",
        &server.addr(),
        "--sni",
        "localhost",
        "--mtc",
        &t.s("stale.txt"),
        "--trust-anchors",
        "32473.1.1.1.2",
        "--no-trust-anchor-retry",
    ]);
    let line = assert_fails(&o, 5, "tls13lab: handshake failed: sent alert unknown_ca");
    assert!(line.contains("not trusted (unknown landmark)"), "{line}");
}

#[test]
fn client_certificate_picked_by_the_certificate_requests_trust_anchors() {
    // trust-anchor-ids §4.1-§4.2 for the client: the server's CertificateRequest lists
    // 32473.5; the client's chain-with-properties file has that ID: its Certificate says it
    // matched, and the server's connection line reports it. A negotiation-only certificate
    // that does not match is withheld: certificate_required from this server.
    use tls13lab::crypto::cert::pem_encode;
    use tls13lab::trust_anchors::{from_ascii, CertificateProperties, PROPERTIES_PEM_LABEL};
    let t = TempDir::new("client-trust-anchors");
    assert_ok(&run(&["cert", "--out", &t.s("c"), "--seed", "7"]));
    let chain = std::fs::read_to_string(t.path("c/chain.pem")).unwrap();
    let with = |name: &str, props: &CertificateProperties| {
        let pem = pem_encode(PROPERTIES_PEM_LABEL, &props.encode()) + &chain;
        std::fs::write(t.path(name), pem).unwrap();
        t.s(name)
    };
    let mut props = CertificateProperties::with_id(from_ascii("32473.5").unwrap());
    let matching = with("matching.pem", &props);
    props.trust_anchor_id = Some(from_ascii("32473.8").unwrap());
    props.negotiation_only = true;
    let other = with("other.pem", &props);
    let server = ServerGuard::start(&[
        "--require-client-cert",
        "--client-ca",
        &t.s("c/root.pem"),
        "--client-trust-anchors",
        "32473.5",
    ]);
    let client = |cert: &str| {
        run(&[
            "client",
            &server.addr(),
            "--insecure",
            "--cert",
            cert,
            "--key",
            &t.s("c/leaf.key"),
        ])
    };
    assert_ok(&client(&matching));
    let line = server.line_with("conn #1");
    assert!(
        line.contains("trust anchor matched") && line.ends_with("ok"),
        "{line}"
    );
    let o = client(&other);
    assert!(!o.status.success());
    let line = server.line_with("conn #2");
    assert!(line.contains("certificate_required"), "{line}");
}
