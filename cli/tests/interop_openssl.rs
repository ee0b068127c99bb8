//! Interop with real OpenSSL processes on 127.0.0.1 (issue 4, item 3).
//!
//! Peers: OpenSSL 3.5.5 (post-quantum groups), built once from the openssl-src crate's source by
//! scripts/build-openssl.sh into ~/.cache/tls13lab (or `TLS13LAB_OPENSSL=/path/to/openssl`), and
//! the system `openssl` 3.0 for the classical groups (`TLS13LAB_OPENSSL30` overrides it).
//!
//! Our side is driven by a small blocking loop over `std::net::TcpStream` and the sans-IO API.
//! Every `openssl` child is killed by PID when its guard drops (also on panic), every wait is
//! bounded, and only loopback is used. Each cell asserts both sides: what OpenSSL prints and what
//! our events and ledger report. The results table is the generated part of docs/interop.md.

#[path = "../../tests/interop_support/mod.rs"]
mod interop_support;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use interop_support::*;
use tls13lab::config::ClientAuth;
use tls13lab::events::{Direction, EarlyDataStatus, Event, Negotiated};
use tls13lab::ledger::Ledger;
use tls13lab::messages::enums::{CipherSuite, HandshakeType, NamedGroup, SignatureScheme};
use tls13lab::session::TicketStore;
use tls13lab::{
    Client, ClientConfig, ClientSide, Connection, Role, Server, ServerConfig, ServerSide,
    ServerVerification,
};

/// Longest wait for any one step (OpenSSL start, a handshake, a line of output).
const STEP: Duration = Duration::from_secs(15);
const EXPORTER_LABEL: &str = "EXPORTER-tls13lab-interop";
const EXPORTER_LEN: usize = 32;

// ---------------------------------------------------------------------------------- peers

/// One OpenSSL installation.
#[derive(Clone, Debug)]
struct Peer {
    /// "4.0", "3.5" or "3.0": the column label (major.minor only, so the docs do not churn).
    version: String,
    bin: PathBuf,
}

impl Peer {
    fn pq(&self) -> bool {
        self.version != "3.0"
    }
}

/// OpenSSL 3.5: `TLS13LAB_OPENSSL`, else what scripts/build-openssl.sh builds (once per process;
/// a cache hit returns at once).
fn openssl35() -> Peer {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built_peer(&BIN, "TLS13LAB_OPENSSL", "300.5.5", "3.5")
}

/// OpenSSL 4.0.3 (ECH, certificate compression with zlib, brotli and zstd; ML-DSA as in 3.5):
/// `TLS13LAB_OPENSSL40`, else scripts/build-openssl.sh with openssl-src 400.0.2.
fn openssl40() -> Peer {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built_peer(&BIN, "TLS13LAB_OPENSSL40", "400.0.2", "4.0")
}

fn built_peer(
    cell: &'static OnceLock<Result<PathBuf, String>>,
    env: &str,
    crate_version: &str,
    want: &str,
) -> Peer {
    let bin = cell.get_or_init(|| {
        if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
            return Ok(PathBuf::from(p));
        }
        let script =
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("scripts/build-openssl.sh");
        let mut child = Command::new("bash")
            .arg(&script)
            .env("OPENSSL_SRC_VERSION", crate_version)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{}: {e}", script.display()))?;
        let mut guard = ChildGuard(Some(child.id()));
        // The one-time build takes a few minutes on two cores; never wait forever.
        let deadline = Instant::now() + Duration::from_secs(1800);
        let status = loop {
            if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
                break s;
            }
            if Instant::now() > deadline {
                return Err("build-openssl.sh took more than 30 minutes".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        guard.0 = None; // exited by itself
        let mut out = String::new();
        child.stdout.take().map(|mut s| s.read_to_string(&mut out));
        let path = out.lines().last().unwrap_or("").trim().to_string();
        if !status.success() || path.is_empty() {
            return Err(format!("build-openssl.sh failed ({status}): {out}"));
        }
        Ok(PathBuf::from(path))
    });
    let bin = bin
        .clone()
        .unwrap_or_else(|e| panic!("OpenSSL {want}: {e}"));
    let v = version_of(&bin);
    assert!(
        v.starts_with(want),
        "{} is OpenSSL {v}, not {want}",
        bin.display()
    );
    Peer {
        version: want.into(),
        bin,
    }
}

/// The system OpenSSL (Debian 12: 3.0).
fn openssl30() -> Peer {
    let bin = std::env::var_os("TLS13LAB_OPENSSL30")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("openssl"));
    let v = version_of(&bin);
    assert!(
        v.starts_with("3."),
        "system openssl is {v:?}; install it (apt-get install -y openssl) or set TLS13LAB_OPENSSL30"
    );
    Peer {
        version: v.split('.').take(2).collect::<Vec<_>>().join("."),
        bin,
    }
}

/// "3.5.5" from `openssl version` ("OpenSSL 3.5.5 27 Jan 2026").
fn version_of(bin: &Path) -> String {
    let out = Command::new(bin)
        .arg("version")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string()
}

/// Kills a process by PID on drop (for the build script, whose Child we still need to read).
struct ChildGuard(Option<u32>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

/// OpenSSL's name for a group in `-groups`.
fn ossl_group(g: NamedGroup) -> &'static str {
    match g {
        NamedGroup::X25519 => "X25519",
        NamedGroup::secp256r1 => "P-256",
        NamedGroup::secp384r1 => "P-384",
        NamedGroup::secp521r1 => "P-521",
        NamedGroup::X448 => "X448",
        NamedGroup::ffdhe2048 => "ffdhe2048",
        NamedGroup::ffdhe3072 => "ffdhe3072",
        NamedGroup::ffdhe4096 => "ffdhe4096",
        NamedGroup::ffdhe6144 => "ffdhe6144",
        NamedGroup::ffdhe8192 => "ffdhe8192",
        NamedGroup::X25519MLKEM768 => "X25519MLKEM768",
        NamedGroup::SecP256r1MLKEM768 => "SecP256r1MLKEM768",
        NamedGroup::SecP384r1MLKEM1024 => "SecP384r1MLKEM1024",
        NamedGroup::MLKEM512 => "MLKEM512",
        NamedGroup::MLKEM768 => "MLKEM768",
        NamedGroup::MLKEM1024 => "MLKEM1024",
        other => panic!("no OpenSSL name for {other}"),
    }
}

/// What s_client prints about the negotiated group: for a Diffie-Hellman group the peer's
/// ephemeral key (3.0 "Server Temp Key: …", 3.5 "Peer Temp Key: …"), for a KEM group (3.5) the
/// group name ("Negotiated TLS1.3 group: X25519MLKEM768").
fn ossl_group_line(peer: &Peer, g: NamedGroup) -> String {
    let temp = if peer.version == "3.0" {
        "Server Temp Key"
    } else {
        "Peer Temp Key"
    };
    match g {
        NamedGroup::X25519 => format!("{temp}: X25519, 253 bits"),
        NamedGroup::secp256r1 => format!("{temp}: ECDH, prime256v1, 256 bits"),
        NamedGroup::secp384r1 => format!("{temp}: ECDH, secp384r1, 384 bits"),
        NamedGroup::secp521r1 => format!("{temp}: ECDH, secp521r1, 521 bits"),
        NamedGroup::X448 => format!("{temp}: X448, 448 bits"),
        g if tls13lab::crypto::ffdhe::Group::of(g).is_some() => {
            let bytes = tls13lab::crypto::ffdhe::Group::of(g).unwrap().p_len();
            format!("{temp}: DH, {} bits", 8 * bytes)
        }
        other => format!("Negotiated TLS1.3 group: {}", ossl_group(other)),
    }
}

// ------------------------------------------------------------------------ openssl processes

/// A running `openssl` command: stdin kept open (s_server drops its client on EOF), stdout and
/// stderr collected into two buffers, killed by PID on drop. Two, not one: OpenSSL writes the two
/// streams unsynchronised, and a shared buffer once had s_client's stderr `depth=0 …` land inside
/// its stdout `Keying material: …` line.
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    /// stdout, stderr.
    out: [Arc<Mutex<String>>; 2],
    cmdline: String,
    /// How many "Keying material" lines were consumed (one per connection of an s_server).
    exporters_seen: usize,
    /// The threads copying stdout and stderr into `out`; they end at EOF, once the child exited.
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Proc {
    fn spawn(peer: &Peer, dir: &Path, args: &[&str]) -> Proc {
        Proc::spawn_program(&peer.bin, &format!("openssl-{}", peer.version), dir, args)
    }

    /// Any program (the `tls13lab` binary too), named `label` in failure messages. The caller's
    /// SSLKEYLOGFILE is not passed on: a test run must not write into someone's key log.
    fn spawn_program(program: &Path, label: &str, dir: &Path, args: &[&str]) -> Proc {
        let mut child = Command::new(program)
            .args(args)
            .current_dir(dir)
            .env_remove("SSLKEYLOGFILE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
        let out = [
            Arc::new(Mutex::new(String::new())),
            Arc::new(Mutex::new(String::new())),
        ];
        let mut readers = Vec::new();
        for (pipe, out) in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .zip(out.iter().cloned())
        .filter_map(|(pipe, out)| Some((pipe?, out)))
        {
            readers.push(std::thread::spawn(move || {
                let mut pipe = pipe;
                let mut buf = [0u8; 8192];
                // Ends when the child exits or is killed (EOF on the pipe).
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    out.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }));
        }
        Proc {
            stdin: child.stdin.take(),
            child,
            out,
            cmdline: format!("{label} {}", args.join(" ")),
            exporters_seen: 0,
            readers,
        }
    }

    /// All of stdout, then all of stderr: each stream's lines stay whole.
    fn output(&self) -> String {
        let mut all = self.out[0].lock().unwrap().clone();
        if !all.is_empty() && !all.ends_with('\n') {
            all.push('\n');
        }
        all.push_str(&self.out[1].lock().unwrap());
        all
    }

    /// Each stream up to its last newline, then the two joined as `output()` joins them: what
    /// has been printed in whole lines. C stdio flushes a pipe every 4 KiB, so the buffers can
    /// end inside a line (a `Keying material:` hex cut short).
    fn whole_lines(&self) -> String {
        let mut all = String::new();
        for o in &self.out {
            let o = o.lock().unwrap();
            all.push_str(&o[..o.rfind('\n').map_or(0, |e| e + 1)]);
        }
        all
    }

    fn has(&self, needle: &str) -> bool {
        self.out.iter().any(|o| o.lock().unwrap().contains(needle))
    }

    fn context(&self) -> String {
        format!("--- {}\n{}", self.cmdline, self.output())
    }

    /// Wait (bounded) until the output contains `needle`.
    fn wait_for(&self, needle: &str) {
        if !wait_until(STEP, || self.has(needle)) {
            panic!(
                "timed out waiting for {needle:?} from OpenSSL\n{}",
                self.context()
            );
        }
    }

    /// Wait (bounded) until the output contains `needle`, failing at once (with both outputs)
    /// if `other`, the process that should make it appear, exits first.
    fn wait_for_from(&self, needle: &str, other: &mut Proc) {
        let done = wait_until(STEP, || {
            self.has(needle) || matches!(other.child.try_wait(), Ok(Some(_)))
        });
        if !(done && wait_until(Duration::from_millis(500), || self.has(needle))) {
            panic!(
                "no {needle:?} from {}\n{}\n{}",
                self.cmdline,
                self.context(),
                other.context()
            );
        }
    }

    /// Wait (bounded) for a whole output line starting with `prefix`, and return it.
    fn line_starting(&self, prefix: &str) -> String {
        let find = || {
            let out = self.whole_lines();
            let at = out.find(prefix)?;
            let len = out[at..].find('\n')?;
            Some(out[at..at + len].to_string())
        };
        if !wait_until(STEP, || find().is_some()) {
            panic!("no line {prefix:?}…\n{}", self.context());
        }
        find().unwrap_or_default()
    }

    /// Wait (bounded) until `needle` has been printed exactly `n` times (more is a failure).
    fn wait_count(&self, needle: &str, n: usize) {
        let count = || self.output().matches(needle).count();
        wait_until(STEP, || count() >= n);
        assert_eq!(count(), n, "{needle:?} printed\n{}", self.context());
    }

    /// Like `wait_for` with a short bound: for lines that should already be there, but may sit on
    /// the other pipe (stderr vs stdout) and so arrive out of order.
    fn assert_has(&self, needle: &str) {
        assert!(
            wait_until(Duration::from_secs(2), || self.has(needle)),
            "OpenSSL did not print {needle:?}\n{}",
            self.context()
        );
    }

    /// Type a line on its stdin, in one write: s_server takes `K\n` as a command only when one
    /// read() returns both bytes.
    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Wait (bounded) for the process to exit by itself. Its whole output has been collected
    /// when this returns: an exited child's last bytes can still sit in the pipes, and a check
    /// that read `output()` before the readers drained them once saw only the first line.
    fn wait_exit(&mut self) {
        let child = &mut self.child;
        let exited = wait_until(STEP, || matches!(child.try_wait(), Ok(Some(_))));
        if !exited {
            panic!("OpenSSL did not exit\n{}", self.context());
        }
        // Unbounded, but the pipes close with the child: the programs run here (openssl,
        // tls13lab) start no processes that would inherit them.
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }

    /// Wait (bounded) for the process to exit by itself; its exit code (`None`: killed by a
    /// signal).
    fn exit_code(&mut self) -> Option<i32> {
        self.wait_exit();
        self.child.try_wait().ok().flatten().and_then(|s| s.code())
    }

    /// `s_server -accept 127.0.0.1:0` prints `ACCEPT 127.0.0.1:PORT` once it listens.
    fn accept_port(&self) -> u16 {
        self.wait_for("ACCEPT 127.0.0.1:");
        let out = self.output();
        out.lines()
            .find_map(|l| l.strip_prefix("ACCEPT 127.0.0.1:"))
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no port in the ACCEPT line\n{}", self.context()))
    }

    /// The hex of the next "Keying material: …" line (s_server/s_client -keymatexport print one
    /// per connection).
    fn keying_material(&mut self) -> String {
        let n = self.exporters_seen;
        let nth = |out: &str| {
            out.lines()
                .filter_map(|l| l.trim().strip_prefix("Keying material: "))
                .nth(n)
                .map(|h| h.trim().to_ascii_lowercase())
        };
        if !wait_until(STEP, || nth(&self.whole_lines()).is_some()) {
            panic!("no exporter line #{n} from OpenSSL\n{}", self.context());
        }
        self.exporters_seen += 1;
        nth(&self.whole_lines()).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // By PID (Child::kill sends SIGKILL to exactly this process), then reap it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------- our side over a TCP socket

/// The blocking driver: write what the endpoint queued, read with a short timeout, feed it.
struct Tcp<R: Role> {
    tls: Connection<R>,
    sock: TcpStream,
    events: Vec<Event>,
    /// 0-RTT data (our server) and application data our side read.
    early: Vec<u8>,
    data: Vec<u8>,
    eof: bool,
    error: Option<String>,
}

impl<R: Role> Tcp<R> {
    fn new(tls: Connection<R>, sock: TcpStream) -> Self {
        sock.set_read_timeout(Some(Duration::from_millis(10)))
            .unwrap();
        sock.set_write_timeout(Some(STEP)).unwrap();
        sock.set_nodelay(true).unwrap();
        Tcp {
            tls,
            sock,
            events: Vec::new(),
            early: Vec::new(),
            data: Vec::new(),
            eof: false,
            error: None,
        }
    }

    fn flush(&mut self) {
        let out = self.tls.take_output();
        if !out.is_empty() && self.sock.write_all(&out).is_err() {
            self.eof = true;
        }
        self.events.extend(self.tls.events());
    }

    fn pump(&mut self) {
        self.flush();
        if self.eof || self.error.is_some() {
            std::thread::sleep(Duration::from_millis(5));
            return;
        }
        let mut buf = vec![0u8; 64 * 1024];
        match self.sock.read(&mut buf) {
            Ok(0) => self.eof = true,
            Ok(n) => {
                let r = lab::demo::deliver(
                    &mut self.tls,
                    &buf[..n],
                    now_ms(),
                    &mut self.early,
                    &mut self.data,
                );
                if let Err(e) = r {
                    self.error = Some(format!("{e} ({e:?})"));
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => self.eof = true,
        }
        self.flush();
    }

    /// Drive the connection until `cond` holds; panics (with OpenSSL's output) on our error or
    /// after [`STEP`].
    fn until(&mut self, p: &Proc, what: &str, cond: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + STEP;
        loop {
            if cond(self) {
                return;
            }
            if let Some(e) = &self.error {
                panic!("waiting for {what}: our side failed: {e}\n{}", p.context());
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what} (eof={})\n{}",
                    self.eof,
                    p.context()
                );
            }
            self.pump();
        }
    }

    /// Drive until our side fails (its alert is flushed to the peer); returns the error text.
    fn until_error(&mut self, p: &Proc) -> String {
        let deadline = Instant::now() + STEP;
        while self.error.is_none() {
            if Instant::now() > deadline {
                panic!("timed out waiting for our side to fail\n{}", p.context());
            }
            if self.eof {
                panic!("the peer closed first\n{}", p.context());
            }
            self.pump();
        }
        self.flush();
        self.error.clone().unwrap_or_default()
    }

    fn alerts(&self, dir: Direction) -> Vec<tls13lab::messages::enums::AlertDescription> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Alert {
                    direction,
                    description,
                    ..
                } if *direction == dir => Some(*description),
                _ => None,
            })
            .collect()
    }

    fn app_data(&self) -> Vec<u8> {
        [self.early.as_slice(), &self.data].concat()
    }

    fn got(&self, needle: &[u8]) -> bool {
        self.app_data().windows(needle.len()).any(|w| w == needle)
    }

    fn connected(&self) -> bool {
        self.events.iter().any(|e| matches!(e, Event::Connected(_)))
    }

    fn closed(&self) -> bool {
        self.eof || self.events.iter().any(|e| matches!(e, Event::Closed))
    }

    fn negotiated(&self) -> Negotiated {
        self.events
            .iter()
            .find_map(|e| match e {
                Event::Connected(n) => Some(n.clone()),
                _ => None,
            })
            .expect("connected")
    }

    fn key_updates(&self) -> Vec<(Direction, bool)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::KeyUpdate {
                    direction,
                    requested,
                } => Some((*direction, *requested)),
                _ => None,
            })
            .collect()
    }

    #[allow(dead_code)]
    fn ledger(&self) -> Ledger {
        Ledger::from_events(&self.events)
    }

    /// close_notify, then half-close the socket.
    fn close(&mut self) {
        self.tls.close();
        self.flush();
        let _ = self.sock.shutdown(Shutdown::Write);
    }
}

fn connect(port: u16) -> TcpStream {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, STEP).expect("connect to 127.0.0.1")
}

/// A listener on a free loopback port.
fn listen() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// Accept one connection, bounded.
fn accept(l: &TcpListener, p: &Proc) -> TcpStream {
    l.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + STEP;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).unwrap();
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    panic!("OpenSSL never connected\n{}", p.context());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

fn hex(b: &[u8]) -> String {
    tls13lab::events::hex(b)
}

// -------------------------------------------------------------------------- the fixture

/// Keys, certificates and their files for one cell.
struct Fixture {
    dir: PathBuf,
    server_id: Identity,
    client_id: Identity,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
}

fn fixture(cell: &str) -> Fixture {
    let dir = scratch_dir("openssl", cell);
    let server_id = Identity::new("localhost", 11);
    let client_id = Identity::new("client.tls13lab.test", 12);
    let (sc, sk) = server_id.write(&dir, "server");
    let (cc, ck) = client_id.write(&dir, "client");
    let s = |p: PathBuf| p.to_string_lossy().into_owned();
    Fixture {
        dir,
        server_id,
        client_id,
        server_cert: s(sc),
        server_key: s(sk),
        client_cert: s(cc),
        client_key: s(ck),
    }
}

impl Fixture {
    fn client_config(
        &self,
        groups: &[NamedGroup],
        shares: &[NamedGroup],
        suites: &[CipherSuite],
    ) -> ClientConfig {
        let mut c = ClientConfig::new(vec![self.server_id.cert_der.clone()]);
        c.server_name = Some("localhost".into());
        c.groups = groups.to_vec();
        c.key_shares = shares.to_vec();
        c.cipher_suites = suites.to_vec();
        // The cells read share sizes from the KeyShare event: they ask for secrets.
        c.observe = tls13lab::Observe::ALL_WITH_SECRETS;
        c
    }

    fn server_config(&self, groups: &[NamedGroup], suites: &[CipherSuite]) -> ServerConfig {
        let mut c = ServerConfig::new(self.server_id.certified_key());
        c.observe = tls13lab::Observe::ALL_WITH_SECRETS;
        c.groups = groups.to_vec();
        c.cipher_suites = suites.to_vec();
        c
    }

    fn client(&self, config: ClientConfig, seed: u64, tickets: TicketStore) -> Client {
        Client::new(
            Arc::new(config),
            Box::new(tls13lab::crypto::random::SeededRandom::from_seed(seed)),
        )
        .unwrap()
        .with_tickets(tickets)
    }

    /// s_server on a free port, with the common flags and `extra`.
    fn s_server(&self, peer: &Peer, naccept: u32, extra: &[&str]) -> (Proc, u16) {
        let cert = ["-cert", &self.server_cert, "-key", &self.server_key];
        self.spawn_s_server(peer, naccept, &[&cert, extra].concat())
    }

    /// s_server with `-nocert` (it authenticates with `-psk` only), the common flags and `extra`.
    fn s_server_nocert(&self, peer: &Peer, naccept: u32, extra: &[&str]) -> (Proc, u16) {
        self.spawn_s_server(peer, naccept, &[&["-nocert"], extra].concat())
    }

    fn spawn_s_server(&self, peer: &Peer, naccept: u32, extra: &[&str]) -> (Proc, u16) {
        let n = naccept.to_string();
        let mut args = vec![
            "s_server",
            "-accept",
            "127.0.0.1:0",
            "-tls1_3",
            "-naccept",
            &n,
            "-keymatexport",
            EXPORTER_LABEL,
            "-keymatexportlen",
            "32",
        ];
        args.extend_from_slice(extra);
        let p = Proc::spawn(peer, &self.dir, &args);
        let port = p.accept_port();
        (p, port)
    }

    /// s_client to `port`, verifying our certificate, with the common flags and `extra`.
    fn s_client(&self, peer: &Peer, port: u16, extra: &[&str]) -> Proc {
        let connect = format!("127.0.0.1:{port}");
        let mut args = vec![
            "s_client",
            "-connect",
            &connect,
            "-servername",
            "localhost",
            "-tls1_3",
            "-CAfile",
            &self.server_cert,
            "-verify_return_error",
            "-verify_hostname",
            "localhost",
            "-keymatexport",
            EXPORTER_LABEL,
            "-keymatexportlen",
            "32",
        ];
        args.extend_from_slice(extra);
        Proc::spawn(peer, &self.dir, &args)
    }
}

impl Fixture {
    /// Replace the server's identity with a key from `peer`'s `openssl genpkey GENPKEY…` and a
    /// self-signed certificate for localhost from `openssl req -x509 … REQ…` (rcgen's extensions),
    /// read back as OpenSSL wrote them: our server loads the PEM files, OpenSSL uses them too.
    fn openssl_server_identity(&mut self, peer: &Peer, genpkey: &[&str], req: &[&str]) {
        let (id, cert, key) = self.openssl_identity(peer, "ossl", "localhost", genpkey, req);
        self.server_id = id;
        self.server_cert = cert;
        self.server_key = key;
    }

    /// A key from `peer`'s `openssl genpkey GENPKEY…` and a self-signed certificate for `name`
    /// (CN and DNS subjectAltName) from `openssl req -x509 … REQ…`, written as `STEM.key` and
    /// `STEM.crt`: the identity as our types read them back, and the two paths.
    fn openssl_identity(
        &self,
        peer: &Peer,
        stem: &str,
        name: &str,
        genpkey: &[&str],
        req: &[&str],
    ) -> (Identity, String, String) {
        let run = |args: &[&str]| {
            let mut p = Proc::spawn(peer, &self.dir, args);
            assert_eq!(p.exit_code(), Some(0), "{}", p.context());
        };
        let (key_file, cert_file) = (format!("{stem}.key"), format!("{stem}.crt"));
        let (subj, san) = (format!("/CN={name}"), format!("subjectAltName=DNS:{name}"));
        run(&[&["genpkey", "-out", key_file.as_str()], genpkey].concat());
        run(&[
            &[
                "req",
                "-x509",
                "-config",
                "/dev/null",
                "-key",
                key_file.as_str(),
                "-out",
                cert_file.as_str(),
                "-subj",
                subj.as_str(),
                "-days",
                "30",
                "-addext",
                san.as_str(),
                "-addext",
                "keyUsage=critical,digitalSignature",
                "-addext",
                "extendedKeyUsage=serverAuth,clientAuth",
            ][..],
            req,
        ]
        .concat());
        let read = |f: &str| std::fs::read_to_string(self.dir.join(f)).unwrap();
        let key = tls13lab::crypto::sign::SigningKey::from_pem(&read(&key_file))
            .unwrap_or_else(|e| panic!("OpenSSL {} key: {e}", peer.version));
        let mut certs = tls13lab::crypto::cert::certs_from_pem(&read(&cert_file)).unwrap();
        let key_der = key.to_pkcs8_der().unwrap();
        let path = |f: &str| self.dir.join(f).to_string_lossy().into_owned();
        let id = Identity {
            key,
            cert_der: certs.remove(0),
            key_der,
        };
        (id, path(&cert_file), path(&key_file))
    }
}

fn our_export<R: Role>(t: &mut Tcp<R>, f: impl FnOnce(&mut Connection<R>) -> Vec<u8>) -> String {
    hex(&f(&mut t.tls))
}

// ------------------------------------------------------------------------------ connections

/// Our client ↔ s_server: handshake, data both ways, exporter equal on both sides, close.
/// Returns the driver (closed) for further assertions.
fn client_session(
    p: &mut Proc,
    port: u16,
    client: Client,
    early: Option<&[u8]>,
) -> Tcp<ClientSide> {
    let mut t = Tcp::new(client, connect(port));
    t.tls.start(now_ms()).unwrap();
    if let Some(data) = early {
        t.tls.send(data).expect("0-RTT data accepted for sending");
    }
    t.until(p, "handshake", |t| t.connected());
    ping_pong_client(p, &mut t, "1");
    let ours = our_export(&mut t, |c| {
        c.export(EXPORTER_LABEL.as_bytes(), b"", EXPORTER_LEN)
            .unwrap()
    });
    assert_eq!(
        p.keying_material(),
        ours,
        "exporter differs\n{}",
        p.context()
    );
    t
}

fn ping_pong_client(p: &mut Proc, t: &mut Tcp<ClientSide>, tag: &str) {
    let ping = format!("ping{tag}-from-tls13lab\n");
    t.tls.send(ping.as_bytes()).unwrap();
    t.flush();
    p.wait_for(ping.trim_end());
    let pong = format!("pong{tag}-from-openssl");
    p.send_line(&pong);
    t.until(p, "pong", |t| t.got(pong.as_bytes()));
}

fn finish_client(p: &mut Proc, mut t: Tcp<ClientSide>) -> Tcp<ClientSide> {
    t.close();
    // OpenSSL answers close_notify with its own and closes the socket.
    t.until(p, "close", |t| t.closed());
    t
}

/// s_client ↔ our server: accept, handshake, data both ways, exporter equal.
fn server_session(p: &mut Proc, l: &TcpListener, server: Server) -> Tcp<ServerSide> {
    let sock = accept(l, p);
    let mut t = Tcp::new(server, sock);
    t.until(p, "handshake", |t| t.connected());
    // s_client prints its summary (and the exporter) once its handshake is done.
    let theirs = p.keying_material();
    let ours = our_export(&mut t, |s| {
        s.export(EXPORTER_LABEL.as_bytes(), b"", EXPORTER_LEN)
            .unwrap()
    });
    assert_eq!(theirs, ours, "exporter differs\n{}", p.context());
    ping_pong_server(p, &mut t, "1");
    t
}

fn ping_pong_server(p: &mut Proc, t: &mut Tcp<ServerSide>, tag: &str) {
    let ping = format!("ping{tag}-from-openssl");
    p.send_line(&ping);
    t.until(p, "ping", |t| t.got(ping.as_bytes()));
    let pong = format!("pong{tag}-from-tls13lab\n");
    t.tls.send(pong.as_bytes()).unwrap();
    t.flush();
    p.wait_for(pong.trim_end());
}

/// `Q` makes s_client send close_notify and exit; we answer with ours (§6.1).
fn finish_server(p: &mut Proc, mut t: Tcp<ServerSide>) -> Tcp<ServerSide> {
    p.send_line("Q");
    t.until(p, "close_notify", |t| t.closed());
    t.close();
    p.wait_exit();
    t
}

fn new_server(config: &Arc<ServerConfig>, seed: u64) -> Server {
    Server::new(
        config.clone(),
        Box::new(tls13lab::crypto::random::SeededRandom::from_seed(seed)),
    )
    .unwrap()
}

fn suite_name(s: CipherSuite) -> String {
    s.to_string()
}

/// OpenSSL 3.5 (not 3.0) lists TLS_AES_128_CCM_8_SHA256 only at security level 0 (its 8-byte
/// tag: `openssl ciphers -s -ciphersuites TLS_AES_128_CCM_8_SHA256` is empty without
/// `@SECLEVEL=0`), so cells with CCM_8 lower it on both s_server and s_client.
const SECLEVEL_0: [&str; 2] = ["-cipher", "DEFAULT:@SECLEVEL=0"];

/// `-groups G -ciphersuites S`, and [`SECLEVEL_0`] for CCM_8.
fn group_suite_args(g: NamedGroup, s: CipherSuite) -> Vec<String> {
    let mut v = vec!["-groups", ossl_group(g), "-ciphersuites"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    v.push(suite_name(s));
    if s == CipherSuite::TLS_AES_128_CCM_8_SHA256 {
        v.extend(SECLEVEL_0.map(String::from));
    }
    v
}

fn skip_unsupported(peer: &Peer, groups: &[NamedGroup]) -> Result<(), Skip> {
    for g in groups {
        if !we_support(*g) {
            return Err(Skip::Pending(format!(
                "{g} not implemented in tls13lab yet"
            )));
        }
        // OpenSSL 3.0 has every RFC 8446 group but the post-quantum ones (and the RFC 8734
        // brainpool groups, which arrived in 3.2).
        let classical = matches!(
            g,
            NamedGroup::X25519
                | NamedGroup::secp256r1
                | NamedGroup::secp384r1
                | NamedGroup::secp521r1
                | NamedGroup::X448
                | NamedGroup::ffdhe2048
                | NamedGroup::ffdhe3072
                | NamedGroup::ffdhe4096
                | NamedGroup::ffdhe6144
                | NamedGroup::ffdhe8192
        );
        if !peer.pq() && !classical {
            return Err(Skip::NotApplicable(format!(
                "OpenSSL {} has no {g}",
                peer.version
            )));
        }
    }
    Ok(())
}

// -------------------------------------------------------------------------- matrix cells

fn our_client_to_s_server(peer: &Peer, g: NamedGroup, s: CipherSuite) -> CellResult {
    skip_unsupported(peer, &[g])?;
    let f = fixture(&format!("{}-c-{g}-{s}", peer.version));
    let args = group_suite_args(g, s);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (mut p, port) = f.s_server(peer, 1, &args);
    let client = f.client(f.client_config(&[g], &[g], &[s]), 1, TicketStore::default());
    let t = client_session(&mut p, port, client, None);
    let n = t.negotiated();
    assert_eq!((n.suite, n.group), (s, Some(g)));
    assert_eq!(
        n.signature_scheme,
        Some(SignatureScheme::ecdsa_secp256r1_sha256)
    );
    p.assert_has(&format!("CIPHER is {s}"));
    let t = finish_client(&mut p, t);
    p.wait_exit();
    key_share_sizes(&t.events, g)
}

fn s_client_to_our_server(peer: &Peer, g: NamedGroup, s: CipherSuite) -> CellResult {
    skip_unsupported(peer, &[g])?;
    let f = fixture(&format!("{}-s-{g}-{s}", peer.version));
    let config = Arc::new(f.server_config(&[g], &[s]));
    let (l, port) = listen();
    let args = group_suite_args(g, s);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut p = f.s_client(peer, port, &args);
    let t = server_session(&mut p, &l, new_server(&config, 2));
    let n = t.negotiated();
    assert_eq!((n.suite, n.group), (s, Some(g)));
    p.assert_has(&format!("New, TLSv1.3, Cipher is {s}"));
    p.assert_has(&ossl_group_line(peer, g));
    p.assert_has("Verify return code: 0 (ok)");
    let t = finish_server(&mut p, t);
    key_share_sizes(&t.events, g)
}

/// The schemes of issue 18 the matrix runs, with the key `openssl genpkey` makes for each and
/// the `req` flags that sign its certificate (webpki wants PSS salt = hash length).
const SIG_SCHEMES: &[(SignatureScheme, &[&str], &[&str])] = &[
    (
        SignatureScheme::ecdsa_secp521r1_sha512,
        &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521"],
        &["-sha512"],
    ),
    (
        SignatureScheme::rsa_pss_pss_sha256,
        &["-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048"],
        &["-sha256", "-sigopt", "rsa_pss_saltlen:digest"],
    ),
    (
        SignatureScheme::rsa_pss_pss_sha384,
        &["-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048"],
        &["-sha256", "-sigopt", "rsa_pss_saltlen:digest"],
    ),
    (
        SignatureScheme::rsa_pss_pss_sha512,
        &["-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048"],
        &["-sha256", "-sigopt", "rsa_pss_saltlen:digest"],
    ),
    // RFC 8410 id-Ed448: PureEdDSA signs the certificate itself, so no digest flag.
    (SignatureScheme::ed448, &["-algorithm", "ed448"], &[]),
    // draft-ietf-tls-mldsa; OpenSSL writes the key as seed and expanded key ("both").
    (SignatureScheme::mldsa44, &["-algorithm", "mldsa44"], &[]),
    (SignatureScheme::mldsa65, &["-algorithm", "mldsa65"], &[]),
    (SignatureScheme::mldsa87, &["-algorithm", "mldsa87"], &[]),
];

/// OpenSSL 3.0 has no ML-DSA (3.5 added it).
fn skip_unsupported_scheme(peer: &Peer, scheme: SignatureScheme) -> Result<(), Skip> {
    let mldsa = matches!(
        scheme,
        SignatureScheme::mldsa44 | SignatureScheme::mldsa65 | SignatureScheme::mldsa87
    );
    if mldsa && !peer.pq() {
        return Err(Skip::NotApplicable(format!(
            "OpenSSL {} has no {scheme}",
            peer.version
        )));
    }
    Ok(())
}

/// Our client, offering only `scheme`, ↔ s_server with an OpenSSL key and certificate of its
/// kind: OpenSSL signs CertificateVerify with it, we verify chain and signature.
fn sig_our_client(peer: &Peer, i: usize) -> CellResult {
    let (scheme, genpkey, req) = SIG_SCHEMES[i];
    skip_unsupported_scheme(peer, scheme)?;
    let mut f = fixture(&format!("{}-sig-c-{scheme}", peer.version));
    f.openssl_server_identity(peer, genpkey, req);
    let (mut p, port) = f.s_server(peer, 1, &[]);
    let mut config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    config.signature_schemes = vec![scheme];
    let t = client_session(
        &mut p,
        port,
        f.client(config, 3, TicketStore::default()),
        None,
    );
    assert_eq!(t.negotiated().signature_scheme, Some(scheme));
    // The signature OpenSSL made is the one our client checked.
    assert_eq!(
        handshake_msgs(
            &t.events,
            Direction::ServerToClient,
            HandshakeType::CertificateVerify
        )
        .len(),
        1
    );
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

/// s_client `-sigalgs scheme` ↔ our server with an OpenSSL key and certificate of its kind:
/// we sign, OpenSSL verifies and names the scheme.
fn sig_s_client(peer: &Peer, i: usize) -> CellResult {
    let (scheme, genpkey, req) = SIG_SCHEMES[i];
    skip_unsupported_scheme(peer, scheme)?;
    let mut f = fixture(&format!("{}-sig-s-{scheme}", peer.version));
    f.openssl_server_identity(peer, genpkey, req);
    let config = Arc::new(f.server_config(&[NamedGroup::X25519], SUITES));
    let (l, port) = listen();
    let name = scheme.to_string();
    let mut p = f.s_client(peer, port, &["-sigalgs", &name]);
    let t = server_session(&mut p, &l, new_server(&config, 4));
    assert_eq!(t.negotiated().signature_scheme, Some(scheme));
    p.assert_has("Verify return code: 0 (ok)");
    // 3.5 names the TLS scheme; 3.0 prints the key type and digest. ML-DSA and Ed448 have no
    // digest line: they sign the message itself.
    let printed = p.line_starting("Peer signature type:");
    let fixed_len = match tls13lab::crypto::sign::MlDsaLevel::of_scheme(scheme) {
        Some(level) => {
            p.assert_has(&format!("Peer signature type: {scheme}\n"));
            Some(level.signature_len())
        }
        None if scheme == SignatureScheme::ed448 => Some(114), // RFC 8032 §5.2.6
        None => None,
    };
    if let Some(sig_len) = fixed_len {
        p.assert_has("Verification: OK");
        // Its CertificateVerify carries the scheme's one signature length.
        let cv = handshake_msgs(
            &t.events,
            Direction::ServerToClient,
            HandshakeType::CertificateVerify,
        );
        assert_eq!(cv[0].bytes.len(), 8 + sig_len);
        finish_server(&mut p, t);
        return Ok(format!("`{}`", printed.trim()));
    }
    let digest = p.line_starting("Peer signing digest:");
    finish_server(&mut p, t);
    // (ECDSA signature lengths vary from run to run, so no sizes: the docs must not churn.)
    Ok(format!("`{}`, `{}`", printed.trim(), digest.trim()))
}

fn sig_name(peer: &Peer, dir: &str, scheme: SignatureScheme) -> String {
    format!("openssl-{} sig {dir} {scheme}", peer.version)
}

/// ML-DSA client authentication (draft-ietf-tls-mldsa applies to both roles; issue 16).
const CLIENT_AUTH_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::mldsa44,
    SignatureScheme::mldsa65,
    SignatureScheme::mldsa87,
];

/// The name the client certificates carry (CN and DNS subjectAltName).
const CLIENT_NAME: &str = "client.tls13lab.test";

/// Our client, with a `tls13lab cert` root → leaf chain of `scheme`'s parameter set (seeded),
/// ↔ `s_server -Verify 1 -CAfile ROOT -verify_return_error` over X25519MLKEM768: OpenSSL
/// validates our chain and our CertificateVerify, and prints the scheme we signed with.
fn mldsa_auth_our_client(peer: &Peer, scheme: SignatureScheme) -> CellResult {
    use lab::certgen::{chain, ChainSpec, KeyAlg};
    skip_unsupported_scheme(peer, scheme)?;
    let f = fixture(&format!("{}-mldsa-auth-c-{scheme}", peer.version));
    let level = tls13lab::crypto::sign::MlDsaLevel::of_scheme(scheme).unwrap();
    let alg = KeyAlg::from_name(&scheme.to_string()).unwrap();
    let spec = ChainSpec {
        sans: vec![CLIENT_NAME.into()],
        ..ChainSpec::new(vec![alg, alg])
    };
    let made = chain(&spec, 16).unwrap();
    let root = f.dir.join("client-root.crt");
    std::fs::write(&root, made.root_pem()).unwrap();
    let root = root.to_string_lossy().into_owned();
    let (mut p, port) = f.s_server(
        peer,
        1,
        &["-Verify", "1", "-CAfile", &root, "-verify_return_error"],
    );
    let pq = [NamedGroup::X25519MLKEM768];
    let mut config = f.client_config(&pq, &pq, SUITES);
    config.client_cert = Some(tls13lab::config::CertifiedKey {
        chain: made.certs_der.clone(),
        key: Arc::new(
            tls13lab::crypto::sign::SigningKey::from_pkcs8_der(&made.key_pkcs8_der).unwrap(),
        ),
    });
    let t = client_session(
        &mut p,
        port,
        f.client(config, 16, TicketStore::default()),
        None,
    );
    let n = t.negotiated();
    assert_eq!(n.client_signature_scheme, Some(scheme));
    assert_eq!(n.group, Some(NamedGroup::X25519MLKEM768));
    let cv = handshake_msgs(
        &t.events,
        Direction::ClientToServer,
        HandshakeType::CertificateVerify,
    );
    assert_eq!(cv.len(), 1);
    assert_eq!(cv[0].bytes.len(), 8 + level.signature_len());
    finish_client(&mut p, t);
    p.wait_exit();
    // s_server verified the leaf up to our root (its verify callback), then printed the leaf
    // and the scheme of our CertificateVerify.
    p.assert_has("depth=1 O=tls13lab, CN=tls13lab root");
    p.assert_has(&format!("subject=O=tls13lab, CN={CLIENT_NAME}"));
    p.assert_has(&format!("Peer signature type: {scheme}\n"));
    Ok(format!(
        "`{}`",
        p.line_starting("Peer signature type:").trim()
    ))
}

/// `s_client -cert -key` with an OpenSSL-made ML-DSA key and self-signed certificate ↔ our
/// server with ClientAuth::Required(that certificate) over X25519MLKEM768: we validate
/// OpenSSL's certificate and CertificateVerify, and report the scheme it signed with.
fn mldsa_auth_s_client(peer: &Peer, scheme: SignatureScheme) -> CellResult {
    skip_unsupported_scheme(peer, scheme)?;
    let f = fixture(&format!("{}-mldsa-auth-s-{scheme}", peer.version));
    let level = tls13lab::crypto::sign::MlDsaLevel::of_scheme(scheme).unwrap();
    let genpkey = SIG_SCHEMES.iter().find(|e| e.0 == scheme).unwrap().1;
    let (id, cert, key) = f.openssl_identity(peer, "ossl-client", CLIENT_NAME, genpkey, &[]);
    let mut c = f.server_config(&[NamedGroup::X25519MLKEM768], SUITES);
    c.client_auth = ClientAuth::Required(vec![id.cert_der.clone()]);
    let config = Arc::new(c);
    let (l, port) = listen();
    let mut p = f.s_client(peer, port, &["-cert", &cert, "-key", &key]);
    let t = server_session(&mut p, &l, new_server(&config, 17));
    let n = t.negotiated();
    assert_eq!(n.client_signature_scheme, Some(scheme));
    assert_eq!(n.group, Some(NamedGroup::X25519MLKEM768));
    // The certificate OpenSSL sent is the one it made; its CertificateVerify has the level's
    // one signature length.
    let certs = handshake_msgs(
        &t.events,
        Direction::ClientToServer,
        HandshakeType::Certificate,
    );
    assert_eq!(certs.len(), 1);
    let cv = handshake_msgs(
        &t.events,
        Direction::ClientToServer,
        HandshakeType::CertificateVerify,
    );
    assert_eq!(cv.len(), 1);
    let cv_len = cv[0].bytes.len();
    assert_eq!(cv_len, 8 + level.signature_len());
    p.assert_has("Verify return code: 0 (ok)");
    finish_server(&mut p, t);
    Ok(format!(
        "ours: client {scheme}, CertificateVerify {cv_len} B"
    ))
}

fn mldsa_auth_name(peer: &Peer, dir: &str, scheme: SignatureScheme) -> String {
    format!("openssl-{} client auth {dir} {scheme}", peer.version)
}

/// "client share B / server share B" from our KeyShare event: the sizes OpenSSL must have sent.
fn key_share_sizes(events: &[Event], g: NamedGroup) -> CellResult {
    let ks = events
        .iter()
        .find_map(|e| match e {
            Event::KeyShare(k) => Some(k),
            _ => None,
        })
        .expect("a KeyShare event");
    assert_eq!(ks.group, g);
    let c: usize = ks.components.iter().map(|c| c.client_share.len()).sum();
    let s: usize = ks.components.iter().map(|c| c.server_share.len()).sum();
    Ok(format!("{c}/{s}"))
}

// ------------------------------------------------------------------------- feature cells

/// The CCM suites (RFC 8446 §B.4), which neither OpenSSL nor we offer by default:
/// `-ciphersuites` names them on both s_server and s_client.
const CCM_SUITES: &[CipherSuite] = &[
    CipherSuite::TLS_AES_128_CCM_SHA256,
    CipherSuite::TLS_AES_128_CCM_8_SHA256,
];
const OSSL_CCM: &str = "TLS_AES_128_CCM_SHA256:TLS_AES_128_CCM_8_SHA256";

/// Every protected record of ours carries the suite's tag: 16 bytes, 8 under CCM-8 (§5.2).
fn assert_tags(events: &[Event], suite: CipherSuite) {
    let tag = tls13lab::crypto::aead::suite_params(suite)
        .expect("a suite we implement")
        .aead
        .tag_len();
    let mut n = 0;
    for e in events {
        if let Event::Record(r) = e {
            if r.seq.is_some() {
                assert_eq!(r.tag_len, tag, "{suite}: {r:?}");
                assert_eq!(r.payload_len, r.plaintext_len + 1 + r.padding_len + tag);
                n += 1;
            }
        }
    }
    assert!(n > 0, "{suite}: no protected record");
}

/// For each CCM suite: a full handshake from s_client, then a resumption with its ticket and
/// 0-RTT, accepted by our server configured for that suite alone.
fn ccm_tickets_early_s_client(peer: &Peer) -> CellResult {
    for (i, &suite) in CCM_SUITES.iter().enumerate() {
        let f = fixture(&format!("{}-ccm-early-s-{i}", peer.version));
        let config = Arc::new(f.server_config(&[NamedGroup::X25519], &[suite]));
        let (l, port) = listen();
        let sess = f.dir.join("sess.pem").to_string_lossy().into_owned();
        let early = f.dir.join("early.txt");
        std::fs::write(&early, b"ccm-early-data-from-openssl\n").unwrap();
        let early = early.to_string_lossy().into_owned();
        let ccm = ["-ciphersuites", OSSL_CCM, SECLEVEL_0[0], SECLEVEL_0[1]];
        let mut p = f.s_client(peer, port, &[&ccm[..], &["-sess_out", &sess]].concat());
        let t = server_session(&mut p, &l, new_server(&config, 30 + i as u64));
        assert_eq!(t.negotiated().suite, suite);
        p.assert_has(&format!("New, TLSv1.3, Cipher is {suite}"));
        let t = finish_server(&mut p, t);
        assert_tags(&t.events, suite);
        let resume = [&ccm[..], &["-sess_in", &sess, "-early_data", &early]].concat();
        let mut p = f.s_client(peer, port, &resume);
        let t = server_session(&mut p, &l, new_server(&config, 40 + i as u64));
        let n = t.negotiated();
        assert!(n.resumed && n.suite == suite, "{n:?}");
        assert_eq!(n.early_data, EarlyDataStatus::Accepted);
        assert_eq!(t.early, b"ccm-early-data-from-openssl\n");
        p.assert_has(&format!("Reused, TLSv1.3, Cipher is {suite}"));
        p.assert_has("Early data was accepted");
        let t = finish_server(&mut p, t);
        assert_tags(&t.events, suite);
    }
    Ok(String::new())
}

/// For each CCM suite: our client, offering that suite alone, gets tickets from s_server, then
/// resumes with 0-RTT that s_server accepts and prints.
fn ccm_tickets_early_our_client(peer: &Peer) -> CellResult {
    for (i, &suite) in CCM_SUITES.iter().enumerate() {
        let f = fixture(&format!("{}-ccm-early-c-{i}", peer.version));
        let ccm = ["-early_data", "-ciphersuites", OSSL_CCM];
        let (mut p, port) = f.s_server(peer, 2, &[&ccm[..], &SECLEVEL_0[..]].concat());
        let config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], &[suite]);
        let mut t = client_session(
            &mut p,
            port,
            f.client(config.clone(), 50 + i as u64, TicketStore::default()),
            None,
        );
        assert_eq!(t.negotiated().suite, suite);
        t.until(&p, "tickets", |t| t.tls.tickets().len() >= 2);
        let tickets = t.tls.tickets().clone();
        assert!(tickets.tickets.iter().all(|t| t.suite == suite));
        let t = finish_client(&mut p, t);
        assert_tags(&t.events, suite);
        let early = b"ccm-early-data-from-tls13lab\n";
        let t = client_session(
            &mut p,
            port,
            f.client(config, 60 + i as u64, tickets),
            Some(early),
        );
        let n = t.negotiated();
        assert!(n.resumed && n.suite == suite, "{n:?}");
        assert_eq!(n.early_data, EarlyDataStatus::Accepted);
        p.wait_for("Early data received:");
        p.wait_for("End of early data");
        p.assert_has("ccm-early-data-from-tls13lab");
        p.assert_has(&format!("CIPHER is {suite}"));
        let t = finish_client(&mut p, t);
        assert_tags(&t.events, suite);
        p.wait_exit();
    }
    Ok(String::new())
}

fn resumption_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-resume-s", peer.version));
    let config = Arc::new(f.server_config(&[NamedGroup::X25519], &SUITES[..1]));
    let (l, port) = listen();
    let sess = f.dir.join("sess.pem").to_string_lossy().into_owned();
    let mut p = f.s_client(peer, port, &["-sess_out", &sess]);
    let t = server_session(&mut p, &l, new_server(&config, 3));
    assert!(!t.negotiated().resumed);
    finish_server(&mut p, t);
    let mut p = f.s_client(peer, port, &["-sess_in", &sess]);
    let t = server_session(&mut p, &l, new_server(&config, 4));
    let n = t.negotiated();
    assert!(n.resumed && n.psk_identity == Some(0), "{n:?}");
    assert_eq!(n.signature_scheme, None);
    p.assert_has("Reused, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256");
    assert!(!from_server(&t.events).contains(&HandshakeType::Certificate));
    finish_server(&mut p, t);
    Ok(String::new())
}

fn resumption_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-resume-c", peer.version));
    let (mut p, port) = f.s_server(peer, 2, &[]);
    let config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    let t = client_session(
        &mut p,
        port,
        f.client(config.clone(), 5, TicketStore::default()),
        None,
    );
    assert!(!t.negotiated().resumed);
    let mut t = t;
    t.until(&p, "tickets", |t| t.tls.tickets().len() >= 2);
    let tickets = t.tls.tickets().clone();
    finish_client(&mut p, t);
    let t = client_session(&mut p, port, f.client(config, 6, tickets), None);
    let n = t.negotiated();
    assert!(n.resumed, "{n:?}");
    assert_eq!(n.signature_scheme, None);
    assert!(!from_server(&t.events).contains(&HandshakeType::Certificate));
    p.wait_for("Reused session-id");
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

fn early_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-early-s", peer.version));
    let config = Arc::new(f.server_config(&[NamedGroup::X25519], SUITES));
    let (l, port) = listen();
    let sess = f.dir.join("sess.pem").to_string_lossy().into_owned();
    let early = f.dir.join("early.txt");
    std::fs::write(&early, b"early-data-from-openssl\n").unwrap();
    let early = early.to_string_lossy().into_owned();
    let mut p = f.s_client(peer, port, &["-sess_out", &sess]);
    let t = server_session(&mut p, &l, new_server(&config, 7));
    finish_server(&mut p, t);
    let mut p = f.s_client(peer, port, &["-sess_in", &sess, "-early_data", &early]);
    let t = server_session(&mut p, &l, new_server(&config, 8));
    let n = t.negotiated();
    assert!(n.resumed);
    assert_eq!(n.early_data, EarlyDataStatus::Accepted);
    assert_eq!(t.early, b"early-data-from-openssl\n");
    p.assert_has("Reused, TLSv1.3");
    p.assert_has("Early data was accepted");
    finish_server(&mut p, t);
    Ok(String::new())
}

fn early_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-early-c", peer.version));
    let (mut p, port) = f.s_server(peer, 2, &["-early_data"]);
    let config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    let mut t = client_session(
        &mut p,
        port,
        f.client(config.clone(), 9, TicketStore::default()),
        None,
    );
    t.until(&p, "tickets", |t| t.tls.tickets().len() >= 2);
    let tickets = t.tls.tickets().clone();
    assert!(
        tickets.tickets.iter().all(|t| t.max_early_data > 0),
        "{tickets:?}"
    );
    finish_client(&mut p, t);
    let early = b"early-data-from-tls13lab\n";
    let t = client_session(&mut p, port, f.client(config, 10, tickets), Some(early));
    let n = t.negotiated();
    assert!(n.resumed);
    assert_eq!(n.early_data, EarlyDataStatus::Accepted);
    p.wait_for("Early data received:");
    p.wait_for("End of early data");
    p.assert_has("early-data-from-tls13lab");
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

fn hrr_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-hrr-c", peer.version));
    let (mut p, port) = f.s_server(peer, 1, &["-groups", "P-256", "-msg"]);
    let config = f.client_config(
        &[NamedGroup::X25519, NamedGroup::secp256r1],
        &[NamedGroup::X25519],
        SUITES,
    );
    let t = client_session(
        &mut p,
        port,
        f.client(config, 11, TicketStore::default()),
        None,
    );
    let n = t.negotiated();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::secp256r1));
    assert_eq!(
        handshake_msgs(
            &t.events,
            Direction::ClientToServer,
            HandshakeType::ClientHello
        )
        .len(),
        2
    );
    // s_server -msg: "<<< TLS 1.3, Handshake [length …], ClientHello" once per ClientHello.
    let hellos = p
        .output()
        .lines()
        .filter(|l| l.starts_with("<<<") && l.ends_with("ClientHello"))
        .count();
    assert_eq!(hellos, 2, "{}", p.context());
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

fn hrr_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-hrr-s", peer.version));
    let mut c = f.server_config(&[NamedGroup::secp256r1, NamedGroup::X25519], SUITES);
    c.strict_group_preference = true;
    let config = Arc::new(c);
    let (l, port) = listen();
    // OpenSSL sends a key share for the first group only.
    let mut p = f.s_client(peer, port, &["-groups", "X25519:P-256", "-msg"]);
    let t = server_session(&mut p, &l, new_server(&config, 12));
    let n = t.negotiated();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::secp256r1));
    p.assert_has(&ossl_group_line(peer, NamedGroup::secp256r1));
    let hellos = p
        .output()
        .lines()
        .filter(|l| l.starts_with(">>>") && l.ends_with("ClientHello"))
        .count();
    assert_eq!(hellos, 2, "{}", p.context());
    finish_server(&mut p, t);
    Ok(String::new())
}

fn client_auth_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-auth-s", peer.version));
    let mut c = f.server_config(&[NamedGroup::X25519], SUITES);
    c.client_auth = ClientAuth::Required(vec![f.client_id.cert_der.clone()]);
    let config = Arc::new(c);
    let (l, port) = listen();
    let mut p = f.s_client(
        peer,
        port,
        &["-cert", &f.client_cert, "-key", &f.client_key],
    );
    let t = server_session(&mut p, &l, new_server(&config, 13));
    let n = t.negotiated();
    assert_eq!(
        n.client_signature_scheme,
        Some(SignatureScheme::ecdsa_secp256r1_sha256)
    );
    let certs = handshake_msgs(
        &t.events,
        Direction::ClientToServer,
        HandshakeType::Certificate,
    );
    assert_eq!(certs.len(), 1);
    p.assert_has("Requested Signature Algorithms:");
    finish_server(&mut p, t);
    Ok(String::new())
}

fn client_auth_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-auth-c", peer.version));
    let (mut p, port) = f.s_server(
        peer,
        1,
        &[
            "-Verify",
            "1",
            "-CAfile",
            &f.client_cert,
            "-verify_return_error",
        ],
    );
    let mut config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    config.client_cert = Some(f.client_id.certified_key());
    let t = client_session(
        &mut p,
        port,
        f.client(config, 14, TicketStore::default()),
        None,
    );
    let n = t.negotiated();
    assert_eq!(
        n.client_signature_scheme,
        Some(SignatureScheme::ecdsa_secp256r1_sha256)
    );
    assert_eq!(
        handshake_msgs(
            &t.events,
            Direction::ServerToClient,
            HandshakeType::CertificateRequest
        )
        .len(),
        1
    );
    p.assert_has("Client certificate");
    p.assert_has("client.tls13lab.test");
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

/// The PostHandshakeAuth events: (context, certificates, scheme).
fn pha_answers(events: &[Event]) -> Vec<(Vec<u8>, usize, Option<SignatureScheme>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::PostHandshakeAuth {
                context,
                certificates,
                scheme,
                ..
            } => Some((context.clone(), *certificates, *scheme)),
            _ => None,
        })
        .collect()
}

/// Post-handshake authentication (RFC 8446 §4.6.2), twice on one connection: our server asks
/// s_client -enable_pha, which answers each request with its certificate; data flows between.
fn pha_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-pha-s", peer.version));
    let mut c = f.server_config(&[NamedGroup::X25519], SUITES);
    c.post_handshake_auth = ClientAuth::Required(vec![f.client_id.cert_der.clone()]);
    let config = Arc::new(c);
    let (l, port) = listen();
    let mut p = f.s_client(
        peer,
        port,
        &[
            "-enable_pha",
            "-cert",
            &f.client_cert,
            "-key",
            &f.client_key,
        ],
    );
    let mut t = server_session(&mut p, &l, new_server(&config, 23));
    // Nothing was asked in the handshake.
    assert_eq!(t.negotiated().client_signature_scheme, None);
    let first = t.tls.request_client_certificate(Some(b"first")).unwrap();
    t.flush();
    t.until(&p, "the first answer", |t| {
        pha_answers(&t.events).len() == 1
    });
    ping_pong_server(&mut p, &mut t, "2");
    let second = t.tls.request_client_certificate(None).unwrap();
    t.flush();
    t.until(&p, "the second answer", |t| {
        pha_answers(&t.events).len() == 2
    });
    ping_pong_server(&mut p, &mut t, "3");
    let scheme = Some(SignatureScheme::ecdsa_secp256r1_sha256);
    assert_eq!(
        pha_answers(&t.events),
        vec![(first, 1, scheme), (second, 1, scheme)]
    );
    finish_server(&mut p, t);
    Ok(String::new())
}

/// s_server's `c` command asks for our certificate after the handshake (it offers
/// post_handshake_auth because it has one); twice, with data between. s_server verifies our
/// certificate against its -CAfile with -verify_return_error, so a bad answer would end the
/// connection before the next ping.
fn pha_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-pha-c", peer.version));
    // OpenSSL 4.0's s_server asks for a certificate in the handshake itself when given
    // -verify_return_error (3.5's does not): leave it out there, so `c` is the first request.
    let args: &[&str] = if peer.version == "4.0" {
        &["-CAfile", &f.client_cert]
    } else {
        &["-CAfile", &f.client_cert, "-verify_return_error"]
    };
    let (mut p, port) = f.s_server(peer, 1, args);
    let mut config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    config.client_cert = Some(f.client_id.certified_key());
    let mut t = client_session(
        &mut p,
        port,
        f.client(config, 24, TicketStore::default()),
        None,
    );
    assert_eq!(t.negotiated().client_signature_scheme, None);
    for (n, tag) in [(1, "2"), (2, "3")] {
        p.send_line("c");
        t.until(&p, "a post-handshake CertificateRequest answered", |t| {
            pha_answers(&t.events).len() == n
        });
        ping_pong_client(&mut p, &mut t, tag);
    }
    let answers = pha_answers(&t.events);
    assert_ne!(answers[0].0, answers[1].0, "each request has its context");
    for (ctx, certs, scheme) in &answers {
        assert!(!ctx.is_empty());
        assert_eq!(
            (*certs, *scheme),
            (1, Some(SignatureScheme::ecdsa_secp256r1_sha256))
        );
    }
    finish_client(&mut p, t);
    p.wait_exit();
    // Its verify callback printed our certificate each time; `c` reports with printf.
    p.assert_has("client.tls13lab.test");
    p.assert_has("SSL_do_handshake -> 1");
    Ok(String::new())
}

fn key_update_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-ku-c", peer.version));
    let (mut p, port) = f.s_server(peer, 1, &[]);
    let config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    let mut t = client_session(
        &mut p,
        port,
        f.client(config, 15, TicketStore::default()),
        None,
    );
    // s_server `K`: KeyUpdate(update_requested); we must answer with our own.
    p.send_line("K");
    t.until(&p, "KeyUpdate from s_server", |t| {
        t.key_updates().contains(&(Direction::ServerToClient, true))
    });
    assert!(t
        .key_updates()
        .contains(&(Direction::ClientToServer, false)));
    ping_pong_client(&mut p, &mut t, "2");
    // Ours, requesting: OpenSSL answers before its next write.
    t.tls.key_update(true).unwrap();
    t.flush();
    ping_pong_client(&mut p, &mut t, "3");
    assert_eq!(
        t.key_updates(),
        vec![
            (Direction::ServerToClient, true),
            (Direction::ClientToServer, false),
            (Direction::ClientToServer, true),
            (Direction::ServerToClient, false),
        ]
    );
    finish_client(&mut p, t);
    p.wait_exit();
    // s_server reports its `K` with printf, flushed when it exits.
    p.assert_has("SSL_do_handshake -> 1");
    Ok(String::new())
}

fn key_update_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-ku-s", peer.version));
    let config = Arc::new(f.server_config(&[NamedGroup::X25519], SUITES));
    let (l, port) = listen();
    let mut p = f.s_client(peer, port, &[]);
    let mut t = server_session(&mut p, &l, new_server(&config, 16));
    p.send_line("K");
    t.until(&p, "KeyUpdate from s_client", |t| {
        t.key_updates().contains(&(Direction::ClientToServer, true))
    });
    p.assert_has("KEYUPDATE");
    ping_pong_server(&mut p, &mut t, "2");
    t.tls.key_update(true).unwrap();
    t.flush();
    ping_pong_server(&mut p, &mut t, "3");
    assert_eq!(
        t.key_updates(),
        vec![
            (Direction::ClientToServer, true),
            (Direction::ServerToClient, false),
            (Direction::ServerToClient, true),
            (Direction::ClientToServer, false),
        ]
    );
    finish_server(&mut p, t);
    Ok(String::new())
}

fn hrr_pq_our_client(peer: &Peer) -> CellResult {
    skip_unsupported(peer, &[NamedGroup::X25519MLKEM768])?;
    let f = fixture(&format!("{}-hrr-pq-c", peer.version));
    let (mut p, port) = f.s_server(peer, 1, &["-groups", "X25519MLKEM768", "-msg"]);
    let config = f.client_config(
        &[NamedGroup::X25519, NamedGroup::X25519MLKEM768],
        &[NamedGroup::X25519],
        SUITES,
    );
    let t = client_session(
        &mut p,
        port,
        f.client(config, 19, TicketStore::default()),
        None,
    );
    let n = t.negotiated();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::X25519MLKEM768));
    let hellos = handshake_msgs(
        &t.events,
        Direction::ClientToServer,
        HandshakeType::ClientHello,
    );
    assert_eq!(hellos.len(), 2);
    assert_eq!(
        client_share_groups(&hellos[1].bytes),
        [NamedGroup::X25519MLKEM768]
    );
    let received = p
        .output()
        .lines()
        .filter(|l| l.starts_with("<<<") && l.ends_with("ClientHello"))
        .count();
    assert_eq!(received, 2, "{}", p.context());
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

fn hrr_pq_s_client(peer: &Peer) -> CellResult {
    let pq = [NamedGroup::X25519MLKEM768, NamedGroup::SecP256r1MLKEM768];
    skip_unsupported(peer, &pq)?;
    let f = fixture(&format!("{}-hrr-pq-s", peer.version));
    let mut c = f.server_config(&[pq[1], pq[0]], SUITES);
    c.strict_group_preference = true;
    let config = Arc::new(c);
    let (l, port) = listen();
    let mut p = f.s_client(
        peer,
        port,
        &["-groups", "X25519MLKEM768:SecP256r1MLKEM768", "-msg"],
    );
    let t = server_session(&mut p, &l, new_server(&config, 20));
    let n = t.negotiated();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::SecP256r1MLKEM768));
    let hellos = handshake_msgs(
        &t.events,
        Direction::ClientToServer,
        HandshakeType::ClientHello,
    );
    assert_eq!(client_share_groups(&hellos[0].bytes), [pq[0]]);
    assert_eq!(client_share_groups(&hellos[1].bytes), [pq[1]]);
    p.assert_has(&ossl_group_line(peer, NamedGroup::SecP256r1MLKEM768));
    let sent = p
        .output()
        .lines()
        .filter(|l| l.starts_with(">>>") && l.ends_with("ClientHello"))
        .count();
    assert_eq!(sent, 2, "{}", p.context());
    finish_server(&mut p, t);
    Ok(String::new())
}

/// 100 KB of text with none of s_client's or s_server's command letters at any position.
fn bulk_payload(tag: &str) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < 100_000 {
        s.push_str(&format!("{tag}-{i:06}-{}\n", "x".repeat(48)));
        i += 1;
    }
    s
}

/// Write `data` to the child's stdin on a thread (a pipe holds 64 KiB) while `drive` runs.
fn type_bulk(p: &mut Proc, data: &str, drive: impl FnOnce(&Proc)) {
    let mut stdin = p.stdin.take().expect("stdin open");
    std::thread::scope(|s| {
        let w = s.spawn(|| {
            stdin.write_all(data.as_bytes()).unwrap();
            stdin.flush().unwrap();
        });
        drive(p);
        w.join().unwrap();
    });
    p.stdin = Some(stdin);
}

fn bulk_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-bulk-c", peer.version));
    let (mut p, port) = f.s_server(peer, 1, &[]);
    let config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    let mut t = client_session(
        &mut p,
        port,
        f.client(config, 21, TicketStore::default()),
        None,
    );
    let up = bulk_payload("up");
    t.tls.send(up.as_bytes()).unwrap();
    t.flush();
    p.wait_for(up.lines().last().unwrap());
    assert!(p.has(&up), "s_server printed something else");
    let down = bulk_payload("down");
    let before = t.app_data().len();
    type_bulk(&mut p, &down, |p| {
        t.until(p, "100 KB from s_server", |t| {
            t.app_data().len() >= before + down.len()
        })
    });
    assert_eq!(&t.app_data()[before..], down.as_bytes());
    let records = t
        .events
        .iter()
        .filter(|e| matches!(e, Event::Record(r) if r.direction == Direction::ClientToServer && r.inner_type == tls13lab::messages::enums::ContentType::ApplicationData))
        .count();
    assert!(
        records >= 7,
        "100 KB must take at least 7 records, saw {records}"
    );
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

fn bulk_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-bulk-s", peer.version));
    let config = Arc::new(f.server_config(&[NamedGroup::X25519], SUITES));
    let (l, port) = listen();
    let mut p = f.s_client(peer, port, &[]);
    let mut t = server_session(&mut p, &l, new_server(&config, 22));
    let up = bulk_payload("up");
    let before = t.app_data().len();
    type_bulk(&mut p, &up, |p| {
        t.until(p, "100 KB from s_client", |t| {
            t.app_data().len() >= before + up.len()
        })
    });
    assert_eq!(&t.app_data()[before..], up.as_bytes());
    let down = bulk_payload("down");
    t.tls.send(down.as_bytes()).unwrap();
    t.flush();
    p.wait_for(down.lines().last().unwrap());
    assert!(p.has(&down), "s_client printed something else");
    finish_server(&mut p, t);
    Ok(String::new())
}

fn early_rejected_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-early-rej-c", peer.version));
    let config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    let tickets = {
        let (mut p, port) = f.s_server(peer, 1, &["-early_data"]);
        let mut t = client_session(
            &mut p,
            port,
            f.client(config.clone(), 23, TicketStore::default()),
            None,
        );
        t.until(&p, "tickets", |t| t.tls.tickets().len() >= 2);
        let tickets = t.tls.tickets().clone();
        finish_client(&mut p, t);
        p.wait_exit();
        tickets
    };
    // A new s_server process has new ticket keys: the ticket is unknown, 0-RTT is skipped.
    let (mut p, port) = f.s_server(peer, 1, &["-early_data"]);
    let early = b"early-data-nobody-will-read\n";
    let t = client_session(&mut p, port, f.client(config, 24, tickets), Some(early));
    let n = t.negotiated();
    assert!(!n.resumed);
    assert_eq!(n.early_data, EarlyDataStatus::Rejected);
    let back: Vec<u8> = t
        .events
        .iter()
        .filter_map(|e| match e {
            Event::EarlyDataRejected { data } => Some(data.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        back, early,
        "the rejected bytes come back to the application"
    );
    assert!(!p.has("early-data-nobody"), "{}", p.context());
    assert!(!p.has("Early data received"), "{}", p.context());
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

fn early_rejected_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-early-rej-s", peer.version));
    let issuing = Arc::new(f.server_config(&[NamedGroup::X25519], SUITES));
    // Same resumption state, but this one refuses 0-RTT.
    let mut refusing = (*issuing).clone();
    refusing.max_early_data = 0;
    let refusing = Arc::new(refusing);
    let (l, port) = listen();
    let sess = f.dir.join("sess.pem").to_string_lossy().into_owned();
    let early = f.dir.join("early.txt");
    std::fs::write(&early, b"early-data-we-refuse\n").unwrap();
    let early = early.to_string_lossy().into_owned();
    let mut p = f.s_client(peer, port, &["-sess_out", &sess]);
    let t = server_session(&mut p, &l, new_server(&issuing, 25));
    finish_server(&mut p, t);
    let mut p = f.s_client(peer, port, &["-sess_in", &sess, "-early_data", &early]);
    let t = server_session(&mut p, &l, new_server(&refusing, 26));
    let n = t.negotiated();
    assert!(n.resumed);
    assert_eq!(n.early_data, EarlyDataStatus::Rejected);
    assert!(t.early.is_empty());
    p.assert_has("Reused, TLSv1.3");
    p.assert_has("Early data was rejected");
    finish_server(&mut p, t);
    Ok(String::new())
}

/// The largest number of records one message of type `typ` that went `dir` was spread over.
fn max_records_per_message(events: &[Event], dir: Direction, typ: HandshakeType) -> usize {
    let ledger = Ledger::from_events(events);
    let parts: Vec<_> = ledger
        .records
        .iter()
        .filter(|r| r.record.direction == dir)
        .flat_map(|r| r.messages.iter())
        .filter(|m| m.typ == typ)
        .collect();
    let whole = parts.iter().filter(|m| m.bytes_here == m.len).count();
    let pieces = parts.len() - whole;
    if pieces == 0 {
        1
    } else {
        pieces
    }
}

fn fragments_our_client(peer: &Peer) -> CellResult {
    let g = if peer.pq() {
        NamedGroup::X25519MLKEM768
    } else {
        NamedGroup::X25519
    };
    let f = fixture(&format!("{}-frag-c", peer.version));
    let (mut p, port) = f.s_server(
        peer,
        1,
        &["-max_send_frag", "512", "-groups", ossl_group(g)],
    );
    let t = client_session(
        &mut p,
        port,
        f.client(
            f.client_config(&[g], &[g], SUITES),
            27,
            TicketStore::default(),
        ),
        None,
    );
    assert_eq!(t.negotiated().group, Some(g));
    // Certificate (~400 B) + CertificateVerify + Finished, and for X25519MLKEM768 the 1.2 KB
    // ServerHello, arrive in 512-byte records.
    let biggest = t
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Record(r) if r.direction == Direction::ServerToClient => Some(r.plaintext_len),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    assert!(biggest <= 512, "a {biggest}-byte record");
    if peer.pq() {
        let n = max_records_per_message(
            &t.events,
            Direction::ServerToClient,
            HandshakeType::ServerHello,
        );
        assert!(n >= 3, "ServerHello in {n} records");
    }
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

fn fragments_s_client(peer: &Peer) -> CellResult {
    let g = if peer.pq() {
        NamedGroup::X25519MLKEM768
    } else {
        NamedGroup::X25519
    };
    let f = fixture(&format!("{}-frag-s", peer.version));
    let config = Arc::new(f.server_config(&[g], SUITES));
    let (l, port) = listen();
    let mut p = f.s_client(
        peer,
        port,
        &["-max_send_frag", "512", "-groups", ossl_group(g)],
    );
    let t = server_session(&mut p, &l, new_server(&config, 28));
    assert_eq!(t.negotiated().group, Some(g));
    if peer.pq() {
        // The 1.4 KB ClientHello arrives in three plaintext records.
        let n = max_records_per_message(
            &t.events,
            Direction::ClientToServer,
            HandshakeType::ClientHello,
        );
        assert!(n >= 3, "ClientHello in {n} records");
    }
    finish_server(&mut p, t);
    Ok(String::new())
}

fn padding_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-pad-c", peer.version));
    let (mut p, port) = f.s_server(peer, 1, &["-record_padding", "256"]);
    let config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    let t = client_session(
        &mut p,
        port,
        f.client(config, 29, TicketStore::default()),
        None,
    );
    let padded: Vec<usize> = t
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Record(r) if r.direction == Direction::ServerToClient && r.seq.is_some() => {
                Some(r.plaintext_len + 1 + r.padding_len)
            }
            _ => None,
        })
        .collect();
    assert!(!padded.is_empty());
    assert!(
        padded.iter().all(|n| n % 256 == 0),
        "inner plaintexts (content + type + padding) not multiples of 256: {padded:?}"
    );
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

fn padding_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-pad-s", peer.version));
    let config = Arc::new(f.server_config(&[NamedGroup::X25519], SUITES));
    let (l, port) = listen();
    let mut p = f.s_client(peer, port, &["-record_padding", "256"]);
    let t = server_session(&mut p, &l, new_server(&config, 30));
    let padded: Vec<usize> = t
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Record(r) if r.direction == Direction::ClientToServer && r.seq.is_some() => {
                Some(r.plaintext_len + 1 + r.padding_len)
            }
            _ => None,
        })
        .collect();
    assert!(!padded.is_empty());
    assert!(padded.iter().all(|n| n % 256 == 0), "{padded:?}");
    finish_server(&mut p, t);
    Ok(String::new())
}

fn psk_ke_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-pskke-s", peer.version));
    let mut c = f.server_config(&[NamedGroup::X25519], SUITES);
    c.psk_modes = vec![tls13lab::messages::enums::PskKeyExchangeMode::PskKe];
    let config = Arc::new(c);
    let (l, port) = listen();
    let sess = f.dir.join("sess.pem").to_string_lossy().into_owned();
    let mut p = f.s_client(peer, port, &["-sess_out", &sess, "-allow_no_dhe_kex"]);
    let t = server_session(&mut p, &l, new_server(&config, 31));
    finish_server(&mut p, t);
    let mut p = f.s_client(peer, port, &["-sess_in", &sess, "-allow_no_dhe_kex"]);
    let t = server_session(&mut p, &l, new_server(&config, 32));
    let n = t.negotiated();
    assert!(n.resumed);
    assert_eq!(n.group, None, "psk_ke: no key exchange");
    assert!(!t.events.iter().any(|e| matches!(e, Event::KeyShare(_))));
    p.assert_has("Reused, TLSv1.3");
    // No ephemeral key from us. (3.5 still prints "Negotiated TLS1.3 group: x25519", the group it
    // offered a share for: with psk_ke the ServerHello has no key_share to contradict it.)
    assert!(!p.has("Temp Key"), "{}", p.context());
    finish_server(&mut p, t);
    Ok(String::new())
}

fn psk_ke_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-pskke-c", peer.version));
    let (mut p, port) = f.s_server(peer, 2, &["-allow_no_dhe_kex"]);
    let mut config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    config.psk_modes = vec![tls13lab::messages::enums::PskKeyExchangeMode::PskKe];
    let mut t = client_session(
        &mut p,
        port,
        f.client(config.clone(), 33, TicketStore::default()),
        None,
    );
    t.until(&p, "tickets", |t| t.tls.tickets().len() >= 2);
    let tickets = t.tls.tickets().clone();
    finish_client(&mut p, t);
    let t = client_session(&mut p, port, f.client(config, 34, tickets), None);
    let n = t.negotiated();
    assert!(n.resumed);
    assert_eq!(n.group, None);
    p.wait_for("Reused session-id");
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(String::new())
}

fn alert_s_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-alert-s", peer.version));
    let config = Arc::new(f.server_config(&[NamedGroup::X25519], SUITES));
    let (l, port) = listen();
    // s_client trusts another certificate: it must refuse ours with a fatal alert.
    let connect = format!("127.0.0.1:{port}");
    let mut p = Proc::spawn(
        peer,
        &f.dir,
        &[
            "s_client",
            "-connect",
            &connect,
            "-tls1_3",
            "-CAfile",
            &f.client_cert,
            "-verify_return_error",
        ],
    );
    let sock = accept(&l, &p);
    let mut t = Tcp::new(new_server(&config, 35), sock);
    let err = t.until_error(&p);
    let got = t.alerts(Direction::ClientToServer);
    assert_eq!(got.len(), 1, "{got:?} ({err})");
    drop(t); // close the socket: s_client then exits at once
    p.wait_exit();
    p.assert_has("verify error");
    Ok(String::new())
}

fn alert_our_client(peer: &Peer) -> CellResult {
    let f = fixture(&format!("{}-alert-c", peer.version));
    let (p, port) = f.s_server(peer, 1, &[]);
    // We trust another certificate: we must refuse s_server's with a fatal alert.
    let mut config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    config.verification = ServerVerification::Roots(vec![f.client_id.cert_der.clone()]);
    let mut t = Tcp::new(f.client(config, 36, TicketStore::default()), connect(port));
    t.tls.start(now_ms()).unwrap();
    let err = t.until_error(&p);
    let sent = t.alerts(Direction::ClientToServer);
    assert_eq!(sent.len(), 1, "{sent:?} ({err})");
    let code = sent[0].to_repr();
    p.wait_for(&format!("SSL alert number {code}"));
    Ok(String::new())
}

/// Handshake message types the server sent (whichever side observed them).
fn from_server(events: &[Event]) -> Vec<HandshakeType> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Handshake(h) if h.direction == Direction::ServerToClient => Some(h.typ),
            _ => None,
        })
        .collect()
}

// ------------------------------------------------------- ClientHello/ServerHello vs -trace

/// A handshake message as `-trace` prints it: body length and (type, data length) per extension.
#[derive(Debug, PartialEq, Eq)]
struct Traced {
    body_len: usize,
    extensions: Vec<ExtSize>,
}

/// The first `name` message in `-trace` output after a line starting with `record` ("Sent TLS
/// Record" / "Received TLS Record").
fn traced(out: &str, record: &str, name: &str) -> Option<Traced> {
    let mut in_record = false;
    let mut found: Option<Traced> = None;
    let prefix = format!("{name}, Length=");
    for line in out.lines() {
        let l = line.trim();
        if let Some(t) = found.as_mut() {
            // The next message header ends this one.
            if l.contains(", Length=")
                && l.split(',')
                    .next()
                    .is_some_and(|w| w.chars().all(|c| c.is_ascii_alphabetic()))
            {
                break;
            }
            if line.starts_with("Sent ") || line.starts_with("Received ") {
                break;
            }
            if let Some(rest) = l.strip_prefix("extension_type=") {
                let (left, len) = rest.rsplit_once("), length=")?;
                let code = left.rsplit_once('(')?.1.parse().ok()?;
                t.extensions.push((code, len.trim().parse().ok()?));
            }
            continue;
        }
        if line.starts_with("Sent ") || line.starts_with("Received ") {
            in_record = line.starts_with(record);
            continue;
        }
        if in_record {
            if let Some(n) = l.strip_prefix(&prefix) {
                found = Some(Traced {
                    body_len: n.trim().parse().ok()?,
                    extensions: Vec::new(),
                });
            }
        }
    }
    found
}

fn ext_list(exts: &[ExtSize]) -> String {
    exts.iter()
        .map(|(t, l)| format!("{} {l}", tls13lab::messages::enums::ExtensionType::from(*t)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The ledger's account of the first `typ` message that went `dir`: its length with header.
fn ledger_len(ledger: &Ledger, dir: Direction, typ: HandshakeType) -> usize {
    ledger
        .records
        .iter()
        .filter(|r| r.record.direction == dir)
        .flat_map(|r| r.messages.iter())
        .find(|m| m.typ == typ)
        .map(|m| m.len)
        .unwrap_or_else(|| panic!("no {typ} in the ledger"))
}

/// Compare one message: OpenSSL's trace against our event and ledger. Returns a docs line.
fn compare_hello(
    p: &Proc,
    events: &[Event],
    dir: Direction,
    typ: HandshakeType,
    trace_record: &str,
) -> String {
    let out = p.output();
    let name = if typ == HandshakeType::ClientHello {
        "ClientHello"
    } else {
        "ServerHello"
    };
    let theirs = traced(&out, trace_record, name)
        .unwrap_or_else(|| panic!("no {name} in -trace output\n{}", p.context()));
    let ev = handshake_msg(events, dir, typ);
    let ours = Traced {
        body_len: ev.bytes.len() - 4,
        extensions: extension_sizes(ev),
    };
    assert_eq!(
        theirs,
        ours,
        "{name}: OpenSSL -trace vs our event\n{}",
        p.context()
    );
    assert_eq!(
        ledger_len(&Ledger::from_events(events), dir, typ),
        ev.bytes.len()
    );
    format!(
        "{name} {} B ({} + 4-byte header): {}",
        ev.bytes.len(),
        theirs.body_len,
        ext_list(&ours.extensions)
    )
}

/// `shares` as a scratch directory name: `X25519MLKEM768_x25519`.
fn group_names(shares: &[NamedGroup]) -> String {
    let names: Vec<String> = shares.iter().map(|g| g.to_string()).collect();
    names.join("_")
}

/// s_client -trace (its own key shares) → our server.
fn bytes_s_client(peer: &Peer, shares: &[NamedGroup], groups_arg: Option<&str>) -> CellResult {
    skip_unsupported(peer, shares)?;
    // Named by the groups themselves: two cells with as many shares may run at once.
    let f = fixture(&format!("{}-bytes-s-{}", peer.version, group_names(shares)));
    let mut groups = shares.to_vec();
    groups.push(NamedGroup::secp256r1);
    groups.dedup();
    let config = Arc::new(f.server_config(&groups, SUITES));
    let (l, port) = listen();
    let mut extra = vec!["-trace"];
    if let Some(g) = groups_arg {
        extra.extend_from_slice(&["-groups", g]);
    }
    let mut p = f.s_client(peer, port, &extra);
    let t = server_session(&mut p, &l, new_server(&config, 17));
    // The shares OpenSSL offered, as we parsed them.
    let ch = handshake_msg(
        &t.events,
        Direction::ClientToServer,
        HandshakeType::ClientHello,
    );
    let offered = client_share_groups(&ch.bytes);
    assert_eq!(offered, shares, "OpenSSL's key shares");
    assert_eq!(t.negotiated().group, Some(shares[0]));
    let a = compare_hello(
        &p,
        &t.events,
        Direction::ClientToServer,
        HandshakeType::ClientHello,
        "Sent",
    );
    let b = compare_hello(
        &p,
        &t.events,
        Direction::ServerToClient,
        HandshakeType::ServerHello,
        "Received",
    );
    finish_server(&mut p, t);
    Ok(format!("{a}<br>{b}"))
}

/// Our client (the key shares `shares`) → s_server -trace.
fn bytes_our_client(peer: &Peer, shares: &[NamedGroup]) -> CellResult {
    skip_unsupported(peer, shares)?;
    // Named by the groups themselves: two cells with as many shares may run at once.
    let f = fixture(&format!("{}-bytes-c-{}", peer.version, group_names(shares)));
    let names: Vec<&str> = shares.iter().map(|g| ossl_group(*g)).collect();
    let (mut p, port) = f.s_server(peer, 1, &["-trace", "-groups", &names.join(":")]);
    let config = f.client_config(shares, shares, SUITES);
    let t = client_session(
        &mut p,
        port,
        f.client(config, 18, TicketStore::default()),
        None,
    );
    assert_eq!(t.negotiated().group, Some(shares[0]));
    let a = compare_hello(
        &p,
        &t.events,
        Direction::ClientToServer,
        HandshakeType::ClientHello,
        "Received",
    );
    let b = compare_hello(
        &p,
        &t.events,
        Direction::ServerToClient,
        HandshakeType::ServerHello,
        "Sent",
    );
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(format!("{a}<br>{b}"))
}

/// The groups of a ClientHello's key_share extension, parsed from its bytes.
fn client_share_groups(ch: &[u8]) -> Vec<NamedGroup> {
    let mut i = 4 + 2 + 32;
    i += 1 + ch[i] as usize; // session id
    i += 2 + u16::from_be_bytes([ch[i], ch[i + 1]]) as usize; // suites
    i += 1 + ch[i] as usize; // compression
    let end = i + 2 + u16::from_be_bytes([ch[i], ch[i + 1]]) as usize;
    i += 2;
    while i < end {
        let typ = u16::from_be_bytes([ch[i], ch[i + 1]]);
        let len = u16::from_be_bytes([ch[i + 2], ch[i + 3]]) as usize;
        if typ == 51 {
            let mut j = i + 6;
            let mut v = Vec::new();
            while j < i + 4 + len {
                v.push(NamedGroup::from(u16::from_be_bytes([ch[j], ch[j + 1]])));
                j += 4 + u16::from_be_bytes([ch[j + 2], ch[j + 3]]) as usize;
            }
            return v;
        }
        i += 4 + len;
    }
    Vec::new()
}

// ------------------------------------------------------------------------------- the test

/// A feature row: name, direction, what is checked, and the cell body.
type FeatureFn = fn(&Peer) -> CellResult;

const FEATURES: &[(&str, &str, &str, FeatureFn)] = &[
    (
        "resumption",
        "s_client -sess_out/-sess_in → ours",
        "`Reused, TLSv1.3`; ours: resumed, PSK identity 0, no Certificate sent",
        resumption_s_client,
    ),
    (
        "resumption",
        "ours (TicketStore) → s_server",
        "`Reused session-id`; ours: resumed, no Certificate received",
        resumption_our_client,
    ),
    (
        "0-RTT",
        "s_client -early_data → ours",
        "`Early data was accepted`; ours: EarlyData event = the file, early_data accepted",
        early_s_client,
    ),
    (
        "0-RTT",
        "ours → s_server -early_data",
        "`Early data received:` … our bytes … `End of early data`; ours: accepted",
        early_our_client,
    ),
    (
        "HRR (group preference)",
        "ours (share X25519) → s_server -groups P-256",
        "s_server -msg saw 2 ClientHellos; ours: hello_retry, secp256r1",
        hrr_our_client,
    ),
    (
        "HRR (group preference)",
        "s_client -groups X25519:P-256 → ours (strict preference P-256)",
        "s_client -msg sent 2 ClientHellos and shows a P-256 peer key; ours: hello_retry, secp256r1",
        hrr_s_client,
    ),
    (
        "client authentication",
        "s_client -cert → ours (required)",
        "`Requested Signature Algorithms`; ours: client cert verified, ecdsa_secp256r1_sha256",
        client_auth_s_client,
    ),
    (
        "client authentication",
        "ours (client cert) → s_server -Verify 1",
        "s_server prints the client certificate; ours: CertificateRequest answered",
        client_auth_our_client,
    ),
    (
        "post-handshake auth",
        "s_client -enable_pha -cert → ours, requested twice",
        "ours: both answers verified (contexts as sent, ecdsa_secp256r1_sha256), data between",
        pha_s_client,
    ),
    (
        "post-handshake auth",
        "ours (client cert) → s_server, `c` twice",
        "s_server verifies our certificate after the handshake; ours: two contexts answered",
        pha_our_client,
    ),
    (
        "HRR to a post-quantum group",
        "ours (share X25519) → s_server -groups X25519MLKEM768",
        "s_server -msg saw 2 ClientHellos; ours: hello_retry, ClientHello 2 carries one X25519MLKEM768 share",
        hrr_pq_our_client,
    ),
    (
        "HRR to a post-quantum group",
        "s_client -groups X25519MLKEM768:SecP256r1MLKEM768 → ours (strict preference SecP256r1MLKEM768)",
        "`Negotiated TLS1.3 group: SecP256r1MLKEM768`, s_client -msg sent 2 ClientHellos; ours: hello_retry, shares as asked",
        hrr_pq_s_client,
    ),
    (
        "bulk data",
        "ours ↔ s_server, 100 KB each way",
        "s_server printed our 100 KB exactly; ours: its 100 KB exactly, ≥ 7 records",
        bulk_our_client,
    ),
    (
        "bulk data",
        "s_client ↔ ours, 100 KB each way",
        "s_client printed our 100 KB exactly; ours: its 100 KB exactly",
        bulk_s_client,
    ),
    (
        "0-RTT rejected",
        "ours → a restarted s_server -early_data (ticket unknown)",
        "no early data printed; ours: full handshake, early_data rejected, bytes handed back",
        early_rejected_our_client,
    ),
    (
        "0-RTT rejected",
        "s_client -early_data → ours (resumes, refuses 0-RTT)",
        "`Early data was rejected`, `Reused`; ours: resumed, no EarlyData event",
        early_rejected_s_client,
    ),
    (
        "psk_ke resumption (no key exchange)",
        "s_client -allow_no_dhe_kex → ours (psk_ke only)",
        "`Reused`, no temp key; ours: resumed, no group, no KeyShare event",
        psk_ke_s_client,
    ),
    (
        "psk_ke resumption (no key exchange)",
        "ours (psk_ke only) → s_server -allow_no_dhe_kex",
        "`Reused session-id`; ours: resumed, no group",
        psk_ke_our_client,
    ),
    (
        "small records (handshake split across records)",
        "ours ← s_server -max_send_frag 512",
        "ours: no record over 512 B; with X25519MLKEM768 (3.5) the ServerHello spans ≥ 3 records",
        fragments_our_client,
    ),
    (
        "small records (handshake split across records)",
        "s_client -max_send_frag 512 → ours",
        "ours: with X25519MLKEM768 (3.5) the ClientHello arrives in ≥ 3 records",
        fragments_s_client,
    ),
    (
        "record padding",
        "ours ← s_server -record_padding 256",
        "ours: every protected record's inner plaintext is a multiple of 256",
        padding_our_client,
    ),
    (
        "record padding",
        "s_client -record_padding 256 → ours",
        "ours: every protected record's inner plaintext is a multiple of 256",
        padding_s_client,
    ),
    (
        "fatal alert",
        "s_client (trusts another CA) → ours",
        "s_client: `verify error`; ours: one fatal alert received, handshake stopped",
        alert_s_client,
    ),
    (
        "fatal alert",
        "ours (trusts another CA) → s_server",
        "s_server: `SSL alert number N` = the alert we sent",
        alert_our_client,
    ),
    (
        "KeyUpdate",
        "s_client `K` ↔ ours, then ours requesting",
        "`KEYUPDATE`; ours: 4 KeyUpdates in order, data flows after each",
        key_update_s_client,
    ),
    (
        "KeyUpdate",
        "s_server `K` ↔ ours, then ours requesting",
        "`SSL_do_handshake -> 1` after `K`; ours: 4 KeyUpdates in order, data flows after each",
        key_update_our_client,
    ),
    (
        "CCM suites: tickets and 0-RTT",
        "s_client -ciphersuites CCM:CCM_8 -sess_out, then -sess_in -early_data → ours (one CCM suite)",
        "`Cipher is` the suite, `Reused`, `Early data was accepted`; ours: resumed, the file as 0-RTT data, every record's tag 16 B (CCM) or 8 B (CCM_8)",
        ccm_tickets_early_s_client,
    ),
    (
        "CCM suites: tickets and 0-RTT",
        "ours (one CCM suite) → s_server -ciphersuites CCM:CCM_8 -early_data, twice",
        "`CIPHER is` the suite, `Early data received:` … our bytes; ours: tickets of the suite, resumed, accepted, tags 16 B / 8 B",
        ccm_tickets_early_our_client,
    ),
];

/// The other groups RFC 8446 §4.2.7 lists (issue 18): secp521r1, x448 and RFC 7919's FFDHE.
const MORE_GROUPS: &[NamedGroup] = &[
    NamedGroup::secp521r1,
    NamedGroup::X448,
    NamedGroup::ffdhe2048,
    NamedGroup::ffdhe3072,
    NamedGroup::ffdhe4096,
    NamedGroup::ffdhe6144,
    NamedGroup::ffdhe8192,
];

/// The (group, suite) rows of the matrix: every suite for [`GROUPS`], one for [`MORE_GROUPS`]
/// (the key exchange does not depend on the suite, and the rows above already cross the suites
/// with every kind of group).
fn matrix_rows() -> Vec<(NamedGroup, CipherSuite)> {
    let all = GROUPS
        .iter()
        .flat_map(|g| SUITES.iter().map(move |s| (*g, *s)));
    let more = MORE_GROUPS.iter().map(|g| (*g, SUITES[0]));
    // The CCM suites with one classical and one hybrid group (their record layer is the new
    // part; the key exchange is the same as above).
    let ccm = [NamedGroup::X25519, NamedGroup::X25519MLKEM768]
        .into_iter()
        .flat_map(|g| CCM_SUITES.iter().map(move |s| (g, *s)));
    all.chain(more).chain(ccm).collect()
}

#[test]
fn openssl_interop_matrix() {
    let peers = [openssl35(), openssl40(), openssl30()];
    let mut cells = Vec::new();
    for peer in &peers {
        for (g, s) in matrix_rows() {
            {
                let p = peer.clone();
                cells.push(Cell::new(
                    matrix_name(peer, "ours→s_server", g, s),
                    move || our_client_to_s_server(&p, g, s),
                ));
                let p = peer.clone();
                cells.push(Cell::new(
                    matrix_name(peer, "s_client→ours", g, s),
                    move || s_client_to_our_server(&p, g, s),
                ));
            }
        }
        for (i, (_, _, _, body)) in FEATURES.iter().enumerate() {
            let p = peer.clone();
            let body = *body;
            cells.push(Cell::new(feature_name(peer, i), move || body(&p)));
        }
        for (i, (scheme, _, _)) in SIG_SCHEMES.iter().enumerate() {
            let p = peer.clone();
            cells.push(Cell::new(
                sig_name(peer, "ours→s_server", *scheme),
                move || sig_our_client(&p, i),
            ));
            let p = peer.clone();
            cells.push(Cell::new(
                sig_name(peer, "s_client→ours", *scheme),
                move || sig_s_client(&p, i),
            ));
        }
        for scheme in CLIENT_AUTH_SCHEMES {
            let (p, scheme) = (peer.clone(), *scheme);
            cells.push(Cell::new(
                mldsa_auth_name(peer, "ours→s_server", scheme),
                move || mldsa_auth_our_client(&p, scheme),
            ));
            let p = peer.clone();
            cells.push(Cell::new(
                mldsa_auth_name(peer, "s_client→ours", scheme),
                move || mldsa_auth_s_client(&p, scheme),
            ));
        }
    }
    let p35 = peers[0].clone();
    let p = p35.clone();
    cells.push(Cell::new(BYTES[0].0, move || {
        bytes_s_client(&p, &[NamedGroup::X25519MLKEM768, NamedGroup::X25519], None)
    }));
    let p = p35.clone();
    cells.push(Cell::new(BYTES[1].0, move || {
        bytes_our_client(&p, &[NamedGroup::X25519MLKEM768, NamedGroup::X25519])
    }));
    let p = p35.clone();
    cells.push(Cell::new(BYTES[2].0, move || {
        bytes_s_client(
            &p,
            &[NamedGroup::X25519, NamedGroup::secp256r1],
            Some("*X25519:*P-256"),
        )
    }));
    let p = p35.clone();
    cells.push(Cell::new(BYTES[3].0, move || {
        bytes_our_client(&p, &[NamedGroup::X25519, NamedGroup::secp256r1])
    }));
    let p = p35.clone();
    cells.push(Cell::new(BYTES[4].0, move || {
        bytes_s_client(&p, &[NamedGroup::ffdhe8192], Some("ffdhe8192"))
    }));
    let p = p35.clone();
    cells.push(Cell::new(BYTES[5].0, move || {
        bytes_our_client(&p, &[NamedGroup::ffdhe8192])
    }));

    let results = run_cells(cells, 2);
    let docs = render(&peers, &results);
    let stale = sync_docs_section("openssl", &docs);
    assert_all_passed(&results);
    if let Err(e) = stale {
        panic!("{e}");
    }
}

const BYTES: &[(&str, &str)] = &[
    (
        "bytes: s_client 3.5 -trace (default groups) → ours",
        "s_client 3.5 (default groups: X25519MLKEM768 + X25519 shares) → ours",
    ),
    (
        "bytes: ours (X25519MLKEM768 + X25519 shares) → s_server 3.5 -trace",
        "ours (X25519MLKEM768 + X25519 shares) → s_server 3.5",
    ),
    (
        "bytes: s_client 3.5 -trace (X25519 + P-256 shares) → ours",
        "s_client 3.5 (`-groups *X25519:*P-256`) → ours",
    ),
    (
        "bytes: ours (X25519 + P-256 shares) → s_server 3.5 -trace",
        "ours (X25519 + secp256r1 shares) → s_server 3.5",
    ),
    (
        "bytes: s_client 3.5 -trace (ffdhe8192 share) → ours",
        "s_client 3.5 (`-groups ffdhe8192`) → ours",
    ),
    (
        "bytes: ours (ffdhe8192 share) → s_server 3.5 -trace",
        "ours (ffdhe8192 share) → s_server 3.5",
    ),
];

fn matrix_name(peer: &Peer, dir: &str, g: NamedGroup, s: CipherSuite) -> String {
    format!("openssl-{} {dir} {g} {s}", peer.version)
}

fn feature_name(peer: &Peer, i: usize) -> String {
    format!(
        "openssl-{} {}: {}",
        peer.version, FEATURES[i].0, FEATURES[i].1
    )
}

fn render(peers: &[Peer], results: &[(String, Outcome)]) -> String {
    use std::fmt::Write as _;
    // One pair of columns per peer, in the order of `peers`.
    let dirs = |f: &dyn Fn(&Peer) -> [String; 2]| -> String {
        peers.iter().flat_map(f).collect::<Vec<_>>().join(" | ")
    };
    let both_heads = dirs(&|p| {
        [
            format!("ours → s_server {}", p.version),
            format!("s_client {} → ours", p.version),
        ]
    });
    let rule = |n: usize| vec!["---"; n].join(" | ");
    let mut s = String::new();
    let _ = writeln!(s, "### Key exchange × cipher suite\n");
    let _ = writeln!(
        s,
        "Each cell: a full handshake, data both ways, the RFC 8446 §7.5 exporter equal on both \
         sides, close_notify. OpenSSL must print the suite (and, as s_client, the group and \
         `Verify return code: 0 (ok)`); our events must report the same suite and group. \
         `pass` cells show the key_share sizes (client/server bytes) our KeyShare event saw. \
         secp521r1, x448 and the FFDHE groups run with one suite: their key exchange does not \
         depend on it. The CCM suites, in neither side's default list, are named with \
         `-ciphersuites` and configured on ours; they run with X25519 and X25519MLKEM768. \
         OpenSSL 3.5 offers TLS_AES_128_CCM_8_SHA256 (8-byte tag) only at security level 0: \
         its cells add `-cipher DEFAULT:@SECLEVEL=0` on both sides.\n"
    );
    let _ = writeln!(s, "| group | suite | {both_heads} |");
    let _ = writeln!(s, "| {} |", rule(2 + 2 * peers.len()));
    for (g, su) in matrix_rows() {
        {
            let cell = |peer: &Peer, dir: &str| {
                let o = outcome(results, &matrix_name(peer, dir, g, su));
                match o {
                    Outcome::Pass(sizes) => format!("pass ({sizes})"),
                    other => other.word().to_string(),
                }
            };
            let row = dirs(&|p| [cell(p, "ours→s_server"), cell(p, "s_client→ours")]);
            let _ = writeln!(s, "| {g} | {su} | {row} |");
        }
    }
    let _ = writeln!(s, "\n### Signature schemes\n");
    let _ = writeln!(
        s,
        "Each cell: OpenSSL makes the key (`genpkey`) and a self-signed certificate (`req -x509`); \
         both sides load the same PEM files. A full handshake with that scheme alone (our client \
         offers only it; s_client gets `-sigalgs`), data both ways, the exporter equal, \
         close_notify. s_client cells show what s_client printed about our signature. \
         Not here: the brainpool schemes (not implemented; see above), and the \
         legacy rsa_pkcs1_* / SHA-1 schemes, which TLS 1.3 never uses in CertificateVerify.\n"
    );
    let _ = writeln!(s, "| scheme | {both_heads} |");
    let _ = writeln!(s, "| {} |", rule(1 + 2 * peers.len()));
    for (scheme, _, _) in SIG_SCHEMES {
        let cell = |peer: &Peer, dir: &str| match outcome(results, &sig_name(peer, dir, *scheme)) {
            Outcome::Pass(t) if !t.is_empty() => format!("pass ({t})"),
            other => other.word().to_string(),
        };
        let row = dirs(&|p| [cell(p, "ours→s_server"), cell(p, "s_client→ours")]);
        let _ = writeln!(s, "| {scheme} | {row} |");
    }
    let _ = writeln!(s, "\n### ML-DSA client authentication\n");
    let _ = writeln!(
        s,
        "Each cell: a full X25519MLKEM768 handshake in which the server requires a client \
         certificate, data both ways, the exporter equal, close_notify. ours → s_server: our \
         client holds a `tls13lab cert` root → leaf chain of that ML-DSA level (seeded), \
         s_server runs `-Verify 1 -CAfile ROOT -verify_return_error` and prints the scheme of \
         our CertificateVerify. s_client → ours: s_client has `-cert -key` with an OpenSSL-made \
         self-signed ML-DSA certificate, our server requires it (ClientAuth::Required) and our \
         events report the client's scheme and its CertificateVerify size (4 + 4 + the FIPS 204 \
         signature length).\n"
    );
    let _ = writeln!(s, "| client key | {both_heads} |");
    let _ = writeln!(s, "| {} |", rule(1 + 2 * peers.len()));
    for scheme in CLIENT_AUTH_SCHEMES {
        let cell =
            |peer: &Peer, dir: &str| match outcome(results, &mldsa_auth_name(peer, dir, *scheme)) {
                Outcome::Pass(t) if !t.is_empty() => format!("pass ({t})"),
                other => other.word().to_string(),
            };
        let row = dirs(&|p| [cell(p, "ours→s_server"), cell(p, "s_client→ours")]);
        let _ = writeln!(s, "| {scheme} | {row} |");
    }
    let _ = writeln!(s, "\n### Features\n");
    let heads: Vec<String> = peers
        .iter()
        .map(|p| format!("OpenSSL {}", p.version))
        .collect();
    let _ = writeln!(
        s,
        "| feature | connection | {} | both sides assert |",
        heads.join(" | ")
    );
    let _ = writeln!(s, "| {} |", rule(3 + peers.len()));
    for (i, (feature, dir, checked, _)) in FEATURES.iter().enumerate() {
        let words: Vec<&str> = peers
            .iter()
            .map(|p| outcome(results, &feature_name(p, i)).word())
            .collect();
        let _ = writeln!(
            s,
            "| {feature} | {dir} | {} | {checked} |",
            words.join(" | ")
        );
    }
    let _ = writeln!(
        s,
        "\n### ClientHello and ServerHello bytes: OpenSSL `-trace` = our events = our ledger\n"
    );
    let _ = writeln!(
        s,
        "Message length and every extension's data length, in order, as OpenSSL's `-trace` \
         printed them and as our HandshakeEvent layout and ledger report them.\n"
    );
    let _ = writeln!(s, "| connection | result | sizes |");
    let _ = writeln!(s, "| --- | --- | --- |");
    for (name, label) in BYTES {
        let o = outcome(results, name);
        let text = match o {
            Outcome::Pass(t) => t.as_str(),
            _ => "",
        };
        let _ = writeln!(s, "| {label} | {} | {text} |", o.word());
    }
    let pending: Vec<&str> = results
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Pending(why) => Some(why.as_str()),
            _ => None,
        })
        .collect();
    if !pending.is_empty() {
        let mut why = pending.clone();
        why.sort();
        why.dedup();
        let _ = writeln!(s, "\n`pending`: {}.", why.join("; "));
    }
    s
}

// ------------------------------------------ the tls13lab binary against OpenSSL 3.5 (issue 5)

/// The `tls13lab` binary cargo built for this test run.
const TLS13LAB: &str = env!("CARGO_BIN_EXE_tls13lab");

/// The hybrid post-quantum group the command-line connections use, as our CLI spells it.
const CLI_GROUP: &str = "x25519mlkem768";

/// `tls13lab ARGS` in `dir`, killed by PID if still running when dropped.
fn tls13lab(dir: &Path, args: &[&str]) -> Proc {
    Proc::spawn_program(Path::new(TLS13LAB), "tls13lab", dir, args)
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// The JSON ledger's verdict in one stable line: group, resumed, early data.
fn ledger_verdict(v: &serde_json::Value) -> String {
    format!(
        "group {}, resumed {}, early data {}",
        v["negotiated"]["group"].as_str().unwrap_or("?"),
        v["resumed"],
        v["early_data"].as_str().unwrap_or("?")
    )
}

/// Bytes of the ledger's `event` events (`app_data`, `early_data`).
fn ledger_data_len(v: &serde_json::Value, event: &str) -> u64 {
    v["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["event"] == event)
        .filter_map(|e| e["len"].as_u64())
        .sum()
}

/// Whether the ledger lists a handshake message of type `typ` (either direction).
fn ledger_has_message(v: &serde_json::Value, typ: &str) -> bool {
    v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["type"] == typ)
}

/// A `tls13lab client` run that must exit 0, with its output and the `--json` ledger.
fn client_done(c: &mut Proc, json: &Path) -> (String, serde_json::Value) {
    let code = c.exit_code();
    assert_eq!(code, Some(0), "tls13lab client failed\n{}", c.context());
    let v = read_json(json);
    assert_eq!(v["side"], "client", "{v}");
    assert!(v["error"].is_null(), "{}", v["error"]);
    (c.output(), v)
}

/// `tls13lab client` → `openssl s_server -groups X25519MLKEM768 -early_data`: a full handshake
/// saving the tickets (`--sess-out`), a resumption in a new process (`--sess-in`), and a resumption
/// with the request as 0-RTT data (`--early-data FILE`). s_server without `-www` (which cannot be
/// combined with `-early_data`) prints what it receives; the test types its responses on its stdin.
fn cli_client_to_s_server(peer: &Peer) -> CellResult {
    let f = fixture("3.5-cli-client");
    let (mut s, port) = f.s_server(peer, 3, &["-groups", "X25519MLKEM768", "-early_data"]);
    let target = format!("127.0.0.1:{port}");
    let client = |extra: &[&str]| {
        let mut args = vec![
            "client",
            &target,
            "--groups",
            CLI_GROUP,
            "--cafile",
            &f.server_cert,
            "--sni",
            "localhost",
            "--linger",
            "300",
        ];
        args.extend_from_slice(extra);
        tls13lab(&f.dir, &args)
    };
    // What our client must print for a response s_server sent as one line.
    let printed = |line: &str| format!("--- response ({} bytes)\n{line}\n", line.len() + 1);
    let mut rows = Vec::new();

    // 1. Full handshake.
    let mut c = client(&[
        "--request",
        r"GET /full HTTP/1.0\r\n\r\n",
        "--json",
        "full.json",
        "--sess-out",
        "sess.json",
    ]);
    s.wait_for_from("GET /full HTTP/1.0", &mut c);
    let response = "HTTP/1.0 200 OK from-openssl-full";
    s.send_line(response);
    let (out, v) = client_done(&mut c, &f.dir.join("full.json"));
    assert!(out.contains(&printed(response)), "{out}");
    assert_eq!(ledger_data_len(&v, "app_data"), response.len() as u64 + 1);
    assert_eq!(v["negotiated"]["group"], "X25519MLKEM768", "{v}");
    assert_eq!(v["resumed"], false);
    assert_eq!(v["early_data"], "not_sent");
    assert_eq!(
        v["negotiated"]["signature_scheme"],
        "ecdsa_secp256r1_sha256"
    );
    assert!(ledger_has_message(&v, "certificate"), "{v}");
    let saved = TicketStore::from_json(&std::fs::read_to_string(f.dir.join("sess.json")).unwrap())
        .expect("--sess-out wrote a session file");
    assert!(
        !saved.tickets.is_empty() && saved.tickets.iter().all(|t| t.max_early_data > 0),
        "{saved:?}"
    );
    assert!(
        out.contains(&format!(
            "session            {} saved to sess.json",
            saved.len()
        )),
        "{out}"
    );
    rows.push(format!(
        "{}; {} tickets saved; s_server printed our request, we printed its response",
        ledger_verdict(&v),
        saved.len()
    ));

    // 2. Resumed, in a new process, from the saved tickets.
    let mut c = client(&[
        "--request",
        r"GET /resumed HTTP/1.0\r\n\r\n",
        "--json",
        "resumed.json",
        "--sess-in",
        "sess.json",
        "--sess-out",
        "sess2.json",
    ]);
    s.wait_for_from("GET /resumed HTTP/1.0", &mut c);
    let response = "HTTP/1.0 200 OK from-openssl-resumed";
    s.send_line(response);
    let (out, v) = client_done(&mut c, &f.dir.join("resumed.json"));
    assert!(out.contains(&printed(response)), "{out}");
    assert_eq!(v["negotiated"]["group"], "X25519MLKEM768", "{v}");
    assert_eq!(v["resumed"], true, "{v}");
    assert_eq!(v["early_data"], "not_sent");
    assert!(v["negotiated"]["signature_scheme"].is_null(), "{v}");
    assert!(
        !ledger_has_message(&v, "certificate"),
        "no certificate when resuming: {v}"
    );
    s.wait_count("Reused session-id", 1);
    rows.push(format!(
        "{}; `Reused session-id`; no certificate",
        ledger_verdict(&v)
    ));

    // 3. Resumed, the request sent as 0-RTT data.
    let early = "GET /early-from-tls13lab HTTP/1.0\r\n\r\n";
    std::fs::write(f.dir.join("early.txt"), early).unwrap();
    let mut c = client(&[
        "--early-data",
        "early.txt",
        "--json",
        "early.json",
        "--sess-in",
        "sess2.json",
    ]);
    s.wait_for_from("End of early data", &mut c);
    s.assert_has("Early data received:");
    s.assert_has("GET /early-from-tls13lab HTTP/1.0");
    let response = "HTTP/1.0 200 OK from-openssl-early";
    s.send_line(response);
    let (out, v) = client_done(&mut c, &f.dir.join("early.json"));
    assert!(out.contains(&printed(response)), "{out}");
    assert_eq!(v["negotiated"]["group"], "X25519MLKEM768", "{v}");
    assert_eq!(v["resumed"], true, "{v}");
    assert_eq!(v["early_data"], "accepted", "{v}");
    assert!(out.contains("early data         accepted"), "{out}");
    s.wait_count("Reused session-id", 2);
    s.wait_exit(); // -naccept 3
    rows.push(format!(
        "{}; s_server printed `Early data received:`, our {}-byte request, `End of early data`",
        ledger_verdict(&v),
        early.len()
    ));
    Ok(rows.join("\n"))
}

/// The `tls13lab server --listen 127.0.0.1:0` in `srv`: the port of its `listening on` line.
fn cli_server_port(srv: &Proc) -> u16 {
    srv.line_starting("listening on 127.0.0.1:")
        .trim_start_matches("listening on 127.0.0.1:")
        .parse()
        .unwrap_or_else(|e| panic!("no port ({e})\n{}", srv.context()))
}

/// An s_client connection `n` to `tls13lab server --json-dir ledgers` (in `dir`) that must
/// succeed: s_client exits once our server has answered and sent close_notify; the server then
/// logs the connection and writes its ledger. s_client's output, the log line, the ledger.
fn cli_server_done(
    c: &mut Proc,
    srv: &Proc,
    dir: &Path,
    n: usize,
) -> (String, String, serde_json::Value) {
    assert_eq!(c.exit_code(), Some(0), "s_client failed\n{}", c.context());
    let line = srv.line_starting(&format!("conn #{n} from "));
    assert!(line.ends_with("; ok"), "{line}\n{}", srv.context());
    let v = read_json(&dir.join(format!("ledgers/conn-{n:06}.json")));
    assert_eq!(v["side"], "server", "{v}");
    assert!(v["error"].is_null(), "{}", v["error"]);
    (c.output(), line, v)
}

/// `openssl s_client -groups X25519MLKEM768` → `tls13lab server`: a full handshake saving the
/// session (`-sess_out`), a resumption (`-sess_in`), and a resumption with `-early_data FILE`.
/// The server answers each request with a page describing the connection and writes a JSON
/// ledger per connection (`--json-dir`).
fn s_client_to_cli_server(peer: &Peer) -> CellResult {
    let f = fixture("3.5-cli-server");
    let mut srv = tls13lab(
        &f.dir,
        &[
            "server",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &f.server_cert,
            "--key",
            &f.server_key,
            "--early-data",
            "16384",
            "--tickets",
            "2",
            "--json-dir",
            "ledgers",
            "--naccept",
            "3",
        ],
    );
    let port = cli_server_port(&srv);
    let group = ossl_group_line(peer, NamedGroup::X25519MLKEM768);
    let finished = |c: &mut Proc, srv: &Proc, n: usize| -> (String, String, serde_json::Value) {
        let (out, line, v) = cli_server_done(c, srv, &f.dir, n);
        assert_eq!(v["negotiated"]["group"], "X25519MLKEM768", "{v}");
        (out, line, v)
    };
    let mut rows = Vec::new();

    // 4. Full handshake.
    let mut c = f.s_client(
        peer,
        port,
        &["-groups", "X25519MLKEM768", "-sess_out", "sess.pem"],
    );
    let request = "GET /full HTTP/1.0\n\n"; // s_client sends what it reads, LF line ends
    c.send_line(&request[..request.len() - 1]); // send_line adds the last LF
    let (out, line, v) = finished(&mut c, &srv, 1);
    for needle in [
        "New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256",
        "HTTP/1.0 200 OK\r\n",
        group.as_str(),
        "Verify return code: 0 (ok)",
        "group          X25519MLKEM768\nresumed        no\n",
    ] {
        assert!(out.contains(needle), "no {needle:?}\n{}", c.context());
    }
    assert!(line.contains("X25519MLKEM768, full handshake"), "{line}");
    assert_eq!(
        (v["resumed"].clone(), v["early_data"].clone()),
        (false.into(), "not_sent".into())
    );
    assert_eq!(ledger_data_len(&v, "app_data"), request.len() as u64);
    rows.push(format!(
        "`New, TLSv1.3`, `{group}`, `Verify return code: 0 (ok)`, our page; ledger: {}",
        ledger_verdict(&v)
    ));

    // 5. Resumed.
    let mut c = f.s_client(
        peer,
        port,
        &[
            "-groups",
            "X25519MLKEM768",
            "-sess_in",
            "sess.pem",
            "-sess_out",
            "sess2.pem",
        ],
    );
    c.send_line("GET /resumed HTTP/1.0\n");
    let (out, line, v) = finished(&mut c, &srv, 2);
    for needle in [
        "Reused, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256",
        "HTTP/1.0 200 OK\r\n",
        "resumed        yes\n",
    ] {
        assert!(out.contains(needle), "no {needle:?}\n{}", c.context());
    }
    assert!(line.contains("X25519MLKEM768, resumed"), "{line}");
    assert_eq!(v["resumed"], true, "{v}");
    assert_eq!(v["negotiated"]["psk_identity"], 0, "{v}");
    assert!(v["negotiated"]["signature_scheme"].is_null(), "{v}");
    assert!(!ledger_has_message(&v, "certificate"), "{v}");
    rows.push(format!("`Reused, TLSv1.3`; ledger: {}", ledger_verdict(&v)));

    // 6. Resumed with 0-RTT data.
    let early = "GET /early-from-openssl HTTP/1.0\r\n\r\n";
    std::fs::write(f.dir.join("early.txt"), early).unwrap();
    let mut c = f.s_client(
        peer,
        port,
        &[
            "-groups",
            "X25519MLKEM768",
            "-sess_in",
            "sess2.pem",
            "-early_data",
            "early.txt",
        ],
    );
    let (out, line, v) = finished(&mut c, &srv, 3);
    let escaped = early.escape_default().to_string();
    for needle in [
        "Reused, TLSv1.3",
        "Early data was accepted",
        "HTTP/1.0 200 OK\r\n",
        &format!(
            "early data     accepted, {} bytes: \"{escaped}\"",
            early.len()
        ),
    ] {
        assert!(out.contains(needle), "no {needle:?}\n{}", c.context());
    }
    assert!(line.contains("resumed, early data accepted"), "{line}");
    assert_eq!(
        (v["resumed"].clone(), v["early_data"].clone()),
        (true.into(), "accepted".into())
    );
    assert_eq!(ledger_data_len(&v, "early_data"), early.len() as u64);
    assert_eq!(
        ledger_data_len(&v, "app_data"),
        0,
        "the request came as 0-RTT only"
    );
    assert_eq!(srv.exit_code(), Some(0), "--naccept 3\n{}", srv.context());
    rows.push(format!(
        "`Early data was accepted`, our page quotes the {} bytes; ledger: {}, {} bytes of early_data",
        early.len(),
        ledger_verdict(&v),
        ledger_data_len(&v, "early_data")
    ));
    Ok(rows.join("\n"))
}

/// The external PSK of the command-line PSK cells (`-psk` / `--psk`) and its identity.
const CLI_PSK: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const CLI_PSK_ID: &str = "tls13lab-interop";

/// The same key with another first byte: the binder computed with it cannot verify.
fn wrong_psk() -> String {
    format!("ff{}", &CLI_PSK[2..])
}

/// The ledger's `psk` object in one stable line.
fn ledger_psk(v: &serde_json::Value) -> String {
    let p = &v["psk"];
    format!(
        "psk external {}, identity {}, mode {}",
        p["external"], p["identity"], p["mode"]
    )
}

/// Whether the ledger's events include a fatal alert `description` going `direction`.
fn ledger_has_alert(v: &serde_json::Value, direction: &str, description: &str) -> bool {
    v["events"].as_array().into_iter().flatten().any(|e| {
        e["event"] == "alert"
            && e["level"] == "fatal"
            && e["direction"] == direction
            && e["description"] == description
    })
}

/// `openssl s_client -psk HEX -psk_identity ID` → `tls13lab server --psk HEX --psk-identity ID
/// --psk-modes ke,dhe` (issue 14): psk_dhe_ke (s_client offers only that), psk_ke (with
/// `-allow_no_dhe_kex` it offers both, and the server prefers psk_ke), and a wrong key, whose
/// binder fails: decrypt_error (RFC 8446 §4.2.11.2, §6.2).
fn s_client_psk_to_cli_server(peer: &Peer) -> CellResult {
    let f = fixture("3.5-cli-psk-server");
    let mut srv = tls13lab(
        &f.dir,
        &[
            "server",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &f.server_cert,
            "--key",
            &f.server_key,
            "--psk",
            CLI_PSK,
            "--psk-identity",
            CLI_PSK_ID,
            "--psk-modes",
            "ke,dhe",
            "--json-dir",
            "ledgers",
            "--naccept",
            "3",
        ],
    );
    let port = cli_server_port(&srv);
    let psk = ["-psk", CLI_PSK, "-psk_identity", CLI_PSK_ID];
    let mut rows = Vec::new();
    for (n, extra, mode) in [
        (1, &[][..], "psk_dhe_ke"),
        (2, &["-allow_no_dhe_kex"][..], "psk_ke"),
    ] {
        let mut c = f.s_client(peer, port, &[&psk[..], extra].concat());
        c.send_line(&format!("GET /{mode} HTTP/1.0\n"));
        let (out, line, v) = cli_server_done(&mut c, &srv, &f.dir, n);
        let described = format!("external PSK \"{CLI_PSK_ID}\", {mode}");
        // s_client: a PSK handshake ("Reused"), no certificate; the group, or none for psk_ke.
        let group = if mode == "psk_ke" {
            "Negotiated TLS1.3 group: <NULL>".to_string()
        } else {
            ossl_group_line(peer, NamedGroup::X25519MLKEM768)
        };
        for needle in [
            "Reused, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256",
            "no peer certificate available",
            group.as_str(),
            "HTTP/1.0 200 OK\r\n",
            &format!("psk            {described}\n"),
        ] {
            assert!(out.contains(needle), "no {needle:?}\n{}", c.context());
        }
        assert!(line.contains(&described), "{line}");
        assert_eq!(v["resumed"], true, "{v}");
        assert_eq!(v["psk"]["external"], true, "{}", v["psk"]);
        assert_eq!(v["psk"]["identity"], CLI_PSK_ID);
        assert_eq!(v["psk"]["mode"], mode);
        assert!(!ledger_has_message(&v, "certificate"), "{v}");
        if mode == "psk_ke" {
            assert!(v["negotiated"]["group"].is_null(), "{v}");
            assert_eq!(v["key_shares"], serde_json::json!([]), "no key exchange");
        } else {
            assert_eq!(v["negotiated"]["group"], "X25519MLKEM768", "{v}");
        }
        rows.push(format!(
            "`Reused, TLSv1.3`, `no peer certificate available`, `{group}`, our page; ledger: {}",
            ledger_psk(&v)
        ));
    }

    // A wrong key: our server checks the binder and refuses with decrypt_error (alert 51).
    let wrong = wrong_psk();
    let mut c = f.s_client(peer, port, &["-psk", &wrong, "-psk_identity", CLI_PSK_ID]);
    assert_ne!(c.exit_code(), Some(0), "{}", c.context());
    c.assert_has("SSL alert number 51");
    let line = srv.line_starting("conn #3 from ");
    assert!(line.contains("sent alert decrypt_error"), "{line}");
    let v = read_json(&f.dir.join("ledgers/conn-000003.json"));
    assert!(v["negotiated"].is_null(), "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("decrypt_error")),
        "{v}"
    );
    assert!(
        ledger_has_alert(&v, "server_to_client", "decrypt_error"),
        "{v}"
    );
    assert_eq!(srv.exit_code(), Some(0), "--naccept 3\n{}", srv.context());
    rows.push(
        "s_client: `SSL alert number 51`; ours: sent alert decrypt_error (bad binder), no handshake"
            .into(),
    );
    Ok(rows.join("\n"))
}

/// `tls13lab client --psk HEX --psk-identity ID` (no --cafile, no --insecure) → `openssl s_server
/// -psk HEX -psk_identity ID -nocert -allow_no_dhe_kex -groups X25519MLKEM768:x25519` (issue 14):
/// psk_dhe_ke, psk_ke (`--psk-modes ke`), and a wrong key (decrypt_error). With psk_dhe_ke over
/// x25519 (`--groups x25519`: our default would share X25519MLKEM768), not its first group, s_server lists its groups in EncryptedExtensions (RFC 8446
/// §4.2.7), and our client reports exactly that list.
fn cli_client_psk_to_s_server(peer: &Peer) -> CellResult {
    let f = fixture("3.5-cli-psk-client");
    let (mut s, port) = f.s_server_nocert(
        peer,
        3,
        &[
            "-psk",
            CLI_PSK,
            "-psk_identity",
            CLI_PSK_ID,
            "-allow_no_dhe_kex",
            "-groups",
            "X25519MLKEM768:x25519",
        ],
    );
    let target = format!("127.0.0.1:{port}");
    let client = |key: &str, extra: &[&str]| {
        let mut args = vec![
            "client",
            &target,
            "--psk",
            key,
            "--psk-identity",
            CLI_PSK_ID,
            "--linger",
            "300",
        ];
        args.extend_from_slice(extra);
        tls13lab(&f.dir, &args)
    };
    let mut rows = Vec::new();
    for (n, modes, mode) in [(1, "dhe", "psk_dhe_ke"), (2, "ke", "psk_ke")] {
        let json = format!("{mode}.json");
        let request = format!(r"GET /{mode} HTTP/1.0\r\n\r\n");
        let mut c = client(
            CLI_PSK,
            &[
                "--psk-modes",
                modes,
                "--groups",
                "x25519",
                "--json",
                &json,
                "--request",
                &request,
            ],
        );
        s.wait_for_from(&format!("GET /{mode} HTTP/1.0"), &mut c);
        s.send_line(&format!("HTTP/1.0 200 OK from-openssl-{mode}"));
        let (out, v) = client_done(&mut c, &f.dir.join(&json));
        s.wait_count("Reused session-id", n);
        let described = format!("external PSK \"{CLI_PSK_ID}\", {mode}");
        assert!(
            out.contains(&format!("psk                {described}\n")),
            "{out}"
        );
        assert!(out.contains("from-openssl-"), "{out}");
        assert_eq!(v["resumed"], true, "{v}");
        assert_eq!(v["psk"]["external"], true, "{}", v["psk"]);
        assert_eq!(v["psk"]["identity"], CLI_PSK_ID);
        assert_eq!(v["psk"]["mode"], mode);
        assert!(!ledger_has_message(&v, "certificate"), "{v}");
        if mode == "psk_ke" {
            assert!(v["negotiated"]["group"].is_null(), "{v}");
            // No key exchange, so no group was negotiated, and s_server lists none.
            assert!(v["server_groups"].is_null(), "{v}");
            rows.push(format!(
                "`Reused session-id`; ours: {}, group null",
                ledger_psk(&v)
            ));
        } else {
            assert_eq!(v["negotiated"]["group"], "x25519", "{v}");
            assert_eq!(
                v["server_groups"],
                serde_json::json!(["X25519MLKEM768", "x25519"]),
                "s_server's -groups, in its order: {v}"
            );
            assert!(
                out.contains("server groups      X25519MLKEM768, x25519\n"),
                "{out}"
            );
            rows.push(format!(
                "`Reused session-id`; ours: {}, group x25519, server_groups [X25519MLKEM768, x25519] = s_server's -groups",
                ledger_psk(&v)
            ));
        }
    }

    // A wrong key: s_server's binder check fails and it sends decrypt_error.
    let mut c = client(&wrong_psk(), &["--json", "wrong.json"]);
    assert_eq!(c.exit_code(), Some(5), "{}", c.context());
    c.assert_has("tls13lab: handshake failed: received alert decrypt_error");
    s.wait_for("binder does not verify");
    let v = read_json(&f.dir.join("wrong.json"));
    assert!(v["negotiated"].is_null(), "{v}");
    assert!(
        ledger_has_alert(&v, "server_to_client", "decrypt_error"),
        "{v}"
    );
    s.wait_exit(); // -naccept 3
    rows.push(
        "s_server: `binder does not verify`; ours: received alert decrypt_error, exit 5".into(),
    );
    Ok(rows.join("\n"))
}

/// Issue 5: the `tls13lab` binary, not the library, against OpenSSL 3.5 with X25519MLKEM768 —
/// full, resumed and 0-RTT connections in both roles. Its table is a generated section of
/// docs/interop.md.
#[test]
fn cli_binary_against_openssl() {
    const CELLS: &[(&str, FeatureFn, [&str; 3])] = &[
        (
            "openssl-3.5 cli: ML-DSA both ways, and a server with two chains",
            cli_mldsa,
            [
                "`tls13lab client --cafile mldsa65.crt --sigalgs mldsa65 --json F` → `s_server -cert mldsa65.crt` (`openssl req -x509 -newkey mldsa65`)",
                "`s_client -sigalgs mldsa65` → `tls13lab server --cert ecdsa.crt --key ecdsa.key --cert mldsa65.crt --key mldsa65.key`",
                "`s_client -sigalgs ecdsa_secp256r1_sha256` → the same server",
            ],
        ),
        (
            "openssl-3.5 cli: tls13lab client → s_server",
            cli_client_to_s_server,
            [
                "`tls13lab client --groups x25519mlkem768 --sess-out sess.json` → `s_server -groups X25519MLKEM768 -early_data`",
                "`tls13lab client … --sess-in sess.json` (a new process) → the same s_server",
                "`tls13lab client … --sess-in sess2.json --early-data FILE` → the same s_server",
            ],
        ),
        (
            "openssl-3.5 cli: s_client → tls13lab server",
            s_client_to_cli_server,
            [
                "`s_client -groups X25519MLKEM768 -sess_out` → `tls13lab server --json-dir`",
                "`s_client … -sess_in` → the same server",
                "`s_client … -sess_in -early_data FILE` → the same server (`--early-data 16384`)",
            ],
        ),
        (
            "openssl-3.5 cli: s_client -psk → tls13lab server --psk",
            s_client_psk_to_cli_server,
            [
                "`s_client -psk HEX -psk_identity ID` → `tls13lab server --psk HEX --psk-identity ID --psk-modes ke,dhe --json-dir`",
                "`s_client … -allow_no_dhe_kex` → the same server",
                "`s_client -psk WRONG …` → the same server",
            ],
        ),
        (
            "openssl-3.5 cli: tls13lab client --psk → s_server -psk -nocert",
            cli_client_psk_to_s_server,
            [
                "`tls13lab client --psk HEX --psk-identity ID` (no `--cafile`) → `s_server -psk HEX -psk_identity ID -nocert -allow_no_dhe_kex -groups X25519MLKEM768:x25519`",
                "`tls13lab client … --psk-modes ke` → the same s_server",
                "`tls13lab client --psk WRONG …` → the same s_server",
            ],
        ),
    ];
    run_cell_table(&openssl35(), CELLS, "openssl-cli");
}

/// Runs `cells` against `peer`, two at a time, and writes the docs/interop.md section `section`:
/// one table row per described connection, with the evidence line the cell returned for it.
fn run_cell_table<R: AsRef<[&'static str]> + Sync>(
    peer: &Peer,
    cells: &'static [(&'static str, FeatureFn, R)],
    section: &str,
) {
    let runs = cells
        .iter()
        .map(|(name, body, _)| {
            let (p, body) = (peer.clone(), *body);
            Cell::new(*name, move || body(&p))
        })
        .collect();
    let results = run_cells(runs, 2);
    let mut s = String::new();
    s.push_str("| connection | result | what both sides showed |\n| --- | --- | --- |\n");
    for (name, _, rows) in cells {
        let o = outcome(&results, name);
        let evidence: Vec<&str> = match o {
            Outcome::Pass(t) => t.lines().collect(),
            _ => Vec::new(),
        };
        for (i, row) in rows.as_ref().iter().enumerate() {
            let e = evidence.get(i).copied().unwrap_or("");
            s.push_str(&format!("| {row} | {} | {e} |\n", o.word()));
        }
    }
    let stale = sync_docs_section(section, &s);
    assert_all_passed(&results);
    if let Err(e) = stale {
        panic!("{e}");
    }
}

/// Issue 16's acceptance, with OpenSSL-made ML-DSA-65 key and certificate: `tls13lab client
/// --sigalgs mldsa65` against s_server (the JSON ledger names the scheme), and `tls13lab server`
/// holding an ECDSA and an ML-DSA chain, which s_client gets by its `-sigalgs`.
fn cli_mldsa(peer: &Peer) -> CellResult {
    let mut f = fixture("3.5-cli-mldsa");
    let (ecdsa_cert, ecdsa_key) = (f.server_cert.clone(), f.server_key.clone());
    f.openssl_server_identity(peer, &["-algorithm", "mldsa65"], &[]);
    let (mldsa_cert, mldsa_key) = (f.server_cert.clone(), f.server_key.clone());
    let mut rows = Vec::new();

    // 1. Our CLI client → s_server with the ML-DSA-65 certificate.
    let (mut s, port) = f.s_server(peer, 1, &[]);
    let target = format!("127.0.0.1:{port}");
    let mut c = tls13lab(
        &f.dir,
        &[
            "client",
            &target,
            "--cafile",
            &mldsa_cert,
            "--sni",
            "localhost",
            "--sigalgs",
            "mldsa65",
            "--json",
            "mldsa.json",
            "--request",
            r"GET / HTTP/1.0\r\n\r\n",
            "--linger",
            "300",
        ],
    );
    s.wait_for_from("GET / HTTP/1.0", &mut c);
    s.send_line("HTTP/1.0 200 OK from-openssl-mldsa");
    let (_, v) = client_done(&mut c, &f.dir.join("mldsa.json"));
    assert_eq!(v["negotiated"]["signature_scheme"], "mldsa65", "{v}");
    s.wait_exit();
    rows.push("ledger: `negotiated.signature_scheme` = `mldsa65`".to_string());

    // 2, 3. s_client → our CLI server with both chains; it trusts both certificates.
    let both = f.dir.join("both.crt");
    let text = |p: &str| std::fs::read_to_string(p).unwrap();
    std::fs::write(&both, text(&ecdsa_cert) + &text(&mldsa_cert)).unwrap();
    f.server_cert = both.to_string_lossy().into_owned();
    let srv = tls13lab(
        &f.dir,
        &[
            "server",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &ecdsa_cert,
            "--key",
            &ecdsa_key,
            "--cert",
            &mldsa_cert,
            "--key",
            &mldsa_key,
            "--json-dir",
            "ledgers",
            "--naccept",
            "2",
        ],
    );
    let port = cli_server_port(&srv);
    for (n, sigalgs, printed) in [
        (1, "mldsa65", "Peer signature type: mldsa65"),
        (
            2,
            "ecdsa_secp256r1_sha256",
            "Peer signature type: ecdsa_secp256r1_sha256",
        ),
    ] {
        let mut c = f.s_client(peer, port, &["-sigalgs", sigalgs]);
        c.send_line("GET / HTTP/1.0\n");
        let (out, _, v) = cli_server_done(&mut c, &srv, &f.dir, n);
        for needle in [printed, "Verification: OK", "Verify return code: 0 (ok)"] {
            assert!(out.contains(needle), "no {needle:?}\n{}", c.context());
        }
        assert_eq!(v["negotiated"]["signature_scheme"], sigalgs, "{v}");
        rows.push(format!(
            "`{printed}`, `Verification: OK`; ledger: `{sigalgs}`"
        ));
    }
    Ok(rows.join("\n"))
}

/// `s_client` asks `tls13lab server` for a KeyUpdate the way test clients ask `s_server -www`:
/// `GET /keyupd`. Our server sends KeyUpdate(update_requested) before the page; OpenSSL 3.5's
/// trace shows it arrive, and the page decrypts under the server's next keys. (OpenSSL sends its
/// own KeyUpdate only before its next write, and s_client writes nothing more: no answer to check
/// here — tests/cli.rs checks ours.)
#[test]
fn s_client_gets_a_key_update_from_the_cli_server() {
    let peer = openssl35();
    let f = fixture("3.5-cli-keyupd");
    let srv = tls13lab(
        &f.dir,
        &[
            "server",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &f.server_cert,
            "--key",
            &f.server_key,
            "--json-dir",
            "ledgers",
            "--naccept",
            "1",
        ],
    );
    let port = cli_server_port(&srv);
    let mut c = f.s_client(&peer, port, &["-trace"]);
    c.send_line("GET /keyupd HTTP/1.0\n"); // s_client sends what it reads, LF line ends
    assert_eq!(c.exit_code(), Some(0), "s_client failed\n{}", c.context());
    let out = c.output();
    for needle in [
        "KeyUpdate, Length=1\n      update_requested (1)",
        "HTTP/1.0 200 OK\r\n",
        "key update     sent KeyUpdate(update_requested) before this page",
        "Verify return code: 0 (ok)",
    ] {
        assert!(out.contains(needle), "no {needle:?}\n{}", c.context());
    }
    let line = srv.line_starting("conn #1 from ");
    assert!(line.ends_with("; ok"), "{line}\n{}", srv.context());
    let v = read_json(&f.dir.join("ledgers/conn-000001.json"));
    let sent: Vec<_> = v["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["event"] == "key_update")
        .map(|e| (e["direction"].clone(), e["requested"].clone()))
        .collect();
    assert_eq!(
        sent.first(),
        Some(&("server_to_client".into(), true.into())),
        "{v}"
    );
}

/// `s_client -enable_pha` asks `tls13lab server --post-handshake-auth` for `GET /renegcert`:
/// our server sends a CertificateRequest before the page (RFC 8446 §4.6.2), s_client answers
/// with its certificate, and the page says it verified against --client-ca.
#[test]
fn s_client_answers_post_handshake_auth_from_the_cli_server() {
    let peer = openssl35();
    let f = fixture("3.5-cli-renegcert");
    let srv = tls13lab(
        &f.dir,
        &[
            "server",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &f.server_cert,
            "--key",
            &f.server_key,
            "--post-handshake-auth",
            "--client-ca",
            &f.client_cert,
            "--json-dir",
            "ledgers",
            "--naccept",
            "1",
        ],
    );
    let port = cli_server_port(&srv);
    let mut c = f.s_client(
        &peer,
        port,
        &[
            "-enable_pha",
            "-cert",
            &f.client_cert,
            "-key",
            &f.client_key,
            "-trace",
        ],
    );
    c.send_line("GET /renegcert HTTP/1.0\n"); // s_client sends what it reads, LF line ends
    assert_eq!(c.exit_code(), Some(0), "s_client failed\n{}", c.context());
    let out = c.output();
    for needle in [
        "CertificateRequest",
        "HTTP/1.0 200 OK\r\n",
        "client cert    requested after the handshake: 1 certificate(s), CertificateVerify \
         ecdsa_secp256r1_sha256 verified, its chain validated against --client-ca",
    ] {
        assert!(out.contains(needle), "no {needle:?}\n{}", c.context());
    }
    let line = srv.line_starting("conn #1 from ");
    assert!(line.ends_with("; ok"), "{line}\n{}", srv.context());
    let v = read_json(&f.dir.join("ledgers/conn-000001.json"));
    let answers: Vec<_> = v["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["event"] == "post_handshake_auth")
        .map(|e| (e["certificates"].clone(), e["scheme"].clone()))
        .collect();
    assert_eq!(
        answers,
        vec![(1.into(), "ecdsa_secp256r1_sha256".into())],
        "{v}"
    );
}

// ------------------------------------------------------------------------- ECH key files

/// ECH key files both ways with OpenSSL 4.0.3 (RFC 9849 §4): we read the file `openssl ech`
/// writes (and write it back byte for byte), and OpenSSL serves ECH with a file `tls13lab ech
/// keygen` wrote — `s_server -ech_key OURS.pem`, and an `s_client -ech_config_list` given the
/// base64 we printed gets `ECH: success` with the inner and outer names. OpenSSL on both ends of
/// the connection: the check is of our file's format (keys and ECHConfigList), not of our ECH.
#[test]
fn ech_key_files_work_with_openssl40() {
    use tls13lab::crypto::ech::EchKeyPair;
    let peer = openssl40();
    let f = fixture("4.0-ech-keys");
    // OpenSSL's file, read by the library.
    let mut g = Proc::spawn(
        &peer,
        &f.dir,
        &[
            "ech",
            "-public_name",
            "public.example",
            "-out",
            "ossl-ech.pem",
        ],
    );
    assert_eq!(g.exit_code(), Some(0), "{}", g.context());
    let text = std::fs::read_to_string(f.dir.join("ossl-ech.pem")).unwrap();
    let k = EchKeyPair::from_pem(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let c = k.config.contents().unwrap();
    assert_eq!(c.public_name, b"public.example");
    assert_eq!(k.to_pem(), text, "OpenSSL's layout, byte for byte");
    // Ours, served by OpenSSL: X25519 with OpenSSL's default suite, P-256 with two suites.
    for (stem, extra) in [
        ("ours-x25519", &[][..]),
        (
            "ours-p256",
            &[
                "--suite",
                "0x10,1,3",
                "--suite",
                "0x10,1,2",
                "--config-id",
                "77",
            ][..],
        ),
    ] {
        let file = format!("{stem}.pem");
        let mut kg = tls13lab(
            &f.dir,
            &[
                &[
                    "ech",
                    "keygen",
                    "--public-name",
                    "public.example",
                    "--seed",
                    "5",
                    "--out",
                    &file,
                ][..],
                extra,
            ]
            .concat(),
        );
        assert_eq!(kg.exit_code(), Some(0), "{}", kg.context());
        let b64 = kg
            .output()
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let ours =
            EchKeyPair::from_pem(&std::fs::read_to_string(f.dir.join(&file)).unwrap()).unwrap();
        assert_eq!(
            tls13lab::crypto::cert::base64_decode(&b64).unwrap(),
            ours.list.encode(),
            "stdout is the file's ECHConfigList"
        );
        let (srv, port) = f.s_server(&peer, 1, &["-ech_key", &file]);
        srv.assert_has("Loaded 1 ECH key pairs in total");
        let mut c = f.s_client(&peer, port, &["-ech_config_list", &b64]);
        c.wait_for("ECH: success");
        c.send_line("Q");
        assert_eq!(c.exit_code(), Some(0), "{}", c.context());
        for needle in [
            "ECH: success: 1",
            "ECH: inner: localhost",
            "ECH: outer: public.example",
        ] {
            assert!(
                c.output().contains(needle),
                "{stem}: no {needle:?}\n{}\n{}",
                c.context(),
                srv.context()
            );
        }
    }
}

/// `tls13lab cert` chains, every algorithm and two mixed ones, as OpenSSL 3.5 reads them:
/// `openssl verify -CAfile root.pem -untrusted intermediates.pem leaf.pem` accepts each chain,
/// `openssl pkey` reads each key (ML-DSA in RFC 9881's seed form) and its public key is the
/// certificate's. Then a full handshake over the ML-DSA-87 → 65 → 44 chain: `s_server` serves
/// it, `s_client -CAfile root.pem` verifies it.
#[test]
fn tls13lab_cert_chains_verify_in_openssl() {
    let peer = openssl35();
    let f = fixture("3.5-cert");
    let run_ok = |p: &mut Proc| {
        assert_eq!(p.exit_code(), Some(0), "{}", p.context());
        p.output()
    };
    // RSA-3072/4096 prime searches take seconds of CPU each (tens on a loaded machine): one
    // such key, the root that signs a P-256 leaf; three levels of every other algorithm.
    let mut chains: Vec<String> = lab::certgen::KeyAlg::ALL
        .iter()
        .map(|a| match a.name() {
            "rsa-3072" | "rsa-4096" => format!("{a},ecdsa-p256"),
            _ => format!("{a},{a},{a}"),
        })
        .collect();
    chains.push("mldsa87,mldsa65,mldsa44".into());
    chains.push("rsa-4096,ecdsa-p384,ed25519".into());
    for chain in &chains {
        let dir = chain.replace(',', "_");
        let mut gen = tls13lab(
            &f.dir,
            &[
                "cert", "--chain", chain, "--scts", "2", "--out", &dir, "--seed", "3",
            ],
        );
        wait_until(Duration::from_secs(300), || {
            matches!(gen.child.try_wait(), Ok(Some(_)))
        });
        run_ok(&mut gen);
        let d = |file: &str| format!("{dir}/{file}");
        let (root, inter, leaf) = (d("root.pem"), d("intermediates.pem"), d("leaf.pem"));
        let levels: &[&str] = if chain.matches(',').count() == 2 {
            &["root", "intermediate-1", "leaf"]
        } else {
            &["root", "leaf"]
        };
        let mut verify = vec!["verify", "-CAfile", &root];
        if levels.len() == 3 {
            verify.extend(["-untrusted", &inter]);
        }
        verify.push(&leaf);
        let out = run_ok(&mut Proc::spawn(&peer, &f.dir, &verify));
        assert!(out.contains(&format!("{leaf}: OK")), "{chain}: {out}");
        for level in levels {
            let (key, cert) = (d(&format!("{level}.key")), d(&format!("{level}.pem")));
            let from_key = run_ok(&mut Proc::spawn(
                &peer,
                &f.dir,
                &["pkey", "-in", &key, "-pubout"],
            ));
            let from_cert = run_ok(&mut Proc::spawn(
                &peer,
                &f.dir,
                &["x509", "-in", &cert, "-pubkey", "-noout"],
            ));
            assert!(from_key.contains("BEGIN PUBLIC KEY"), "{key}: {from_key}");
            assert_eq!(from_key, from_cert, "{key} is not {cert}'s key");
        }
    }
    let dir = "mldsa87_mldsa65_mldsa44";
    let d = |file: &str| format!("{dir}/{file}");
    let (leaf, key, inter, root) = (
        d("leaf.pem"),
        d("leaf.key"),
        d("intermediates.pem"),
        d("root.pem"),
    );
    let (mut srv, port) = f.spawn_s_server(
        &peer,
        1,
        &["-cert", &leaf, "-key", &key, "-cert_chain", &inter, "-www"],
    );
    let connect = format!("127.0.0.1:{port}");
    let mut c = Proc::spawn(
        &peer,
        &f.dir,
        &[
            "s_client",
            "-connect",
            &connect,
            "-servername",
            "localhost",
            "-tls1_3",
            "-CAfile",
            &root,
            "-verify_return_error",
            "-verify_hostname",
            "localhost",
        ],
    );
    c.send_line("GET / HTTP/1.0\n");
    let out = run_ok(&mut c);
    for needle in [
        "Peer signature type: mldsa44",
        "Verification: OK",
        "Verify return code: 0 (ok)",
    ] {
        assert!(
            out.contains(needle),
            "no {needle:?}\n{}\n{}",
            c.context(),
            srv.context()
        );
    }
    srv.wait_exit();
}

// ------------------------------------------------------------ certificate compression (4.0)

/// The fixture with a server certificate that names localhost and a1.example … a60.example: a
/// compressible one, as OpenSSL sends CompressedCertificate only when it is smaller (RFC 8879).
fn compressible_fixture(cell: &str) -> Fixture {
    let mut f = fixture(cell);
    f.server_id = Identity::compressible(13);
    let (c, k) = f.server_id.write(&f.dir, "server-comp");
    f.server_cert = c.to_string_lossy().into_owned();
    f.server_key = k.to_string_lossy().into_owned();
    f
}

/// The one CompressedCertificate among `events` in direction `dir`, decoded.
fn compressed_certificate(
    events: &[Event],
    dir: Direction,
) -> tls13lab::messages::CompressedCertificate {
    let msgs = handshake_msgs(events, dir, HandshakeType::CompressedCertificate);
    assert_eq!(msgs.len(), 1, "one CompressedCertificate");
    assert!(handshake_msgs(events, dir, HandshakeType::Certificate).is_empty());
    match tls13lab::messages::HandshakeMessage::decode(&msgs[0].bytes, Default::default())
        .expect("decodes")
        .payload
    {
        tls13lab::messages::HandshakePayload::CompressedCertificate(cc) => cc,
        other => panic!("{other:?}"),
    }
}

const COMPRESSION: [tls13lab::messages::CertificateCompressionAlgorithm; 3] = [
    tls13lab::messages::CertificateCompressionAlgorithm::Zlib,
    tls13lab::messages::CertificateCompressionAlgorithm::Brotli,
    tls13lab::messages::CertificateCompressionAlgorithm::Zstd,
];

/// Our client, offering only `COMPRESSION[i]`, ← s_server 4.0 -cert_comp: the chain arrives
/// compressed in that algorithm, validates, and the ledger shows both sizes.
fn comp_our_client(peer: &Peer, i: usize) -> CellResult {
    let alg = COMPRESSION[i];
    let f = compressible_fixture(&format!("{}-comp-c-{alg}", peer.version));
    let (mut p, port) = f.s_server(peer, 1, &["-cert_comp"]);
    let mut config = f.client_config(&[NamedGroup::X25519], &[NamedGroup::X25519], SUITES);
    config.cert_compression = vec![alg];
    let t = client_session(
        &mut p,
        port,
        f.client(config, 31, TicketStore::default()),
        None,
    );
    let cc = compressed_certificate(&t.events, Direction::ServerToClient);
    assert_eq!(cc.algorithm, alg);
    let info = Ledger::from_events(&t.events)
        .records
        .iter()
        .flat_map(|r| &r.messages)
        .find_map(|m| m.compression)
        .expect("the ledger shows the compression");
    assert_eq!(info.algorithm, alg);
    assert_eq!(info.uncompressed_length, cc.uncompressed_length as usize);
    assert_eq!(
        info.compressed_length,
        cc.compressed_certificate_message.len()
    );
    assert!(info.compressed_length < info.uncompressed_length);
    finish_client(&mut p, t);
    p.wait_exit();
    Ok(format!(
        "{} → {} B",
        info.uncompressed_length, info.compressed_length
    ))
}

/// s_client 4.0 -trace (offers all three) → ours, compressing with `COMPRESSION[i]` only: its
/// trace shows our CompressedCertificate and the algorithm, and it verifies the chain inside.
fn comp_s_client(peer: &Peer, i: usize) -> CellResult {
    let alg = COMPRESSION[i];
    let f = compressible_fixture(&format!("{}-comp-s-{alg}", peer.version));
    let mut server = f.server_config(&[NamedGroup::X25519], SUITES);
    server.cert_compression = vec![alg];
    let config = Arc::new(server);
    let (l, port) = listen();
    let mut p = f.s_client(peer, port, &["-trace"]);
    let t = server_session(&mut p, &l, new_server(&config, 5));
    p.assert_has("CompressedCertificate");
    p.assert_has(&format!("Compression type={alg} (0x{:04x})", alg.to_repr()));
    p.assert_has("Verify return code: 0 (ok)");
    let t = finish_server(&mut p, t);
    let cc = compressed_certificate(&t.events, Direction::ServerToClient);
    assert_eq!(cc.algorithm, alg);
    Ok(format!(
        "{} → {} B",
        cc.uncompressed_length,
        cc.compressed_certificate_message.len()
    ))
}

/// `tls13lab client --cert-compression brotli --json F` → s_server 4.0 -cert_comp: F lists the
/// compressed_certificate message with its algorithm and both sizes (the issue's acceptance).
fn comp_cli_client(peer: &Peer) -> CellResult {
    let f = compressible_fixture(&format!("{}-comp-cli", peer.version));
    let (mut s, port) = f.s_server(peer, 1, &["-cert_comp"]);
    let target = format!("127.0.0.1:{port}");
    let mut c = tls13lab(
        &f.dir,
        &[
            "client",
            &target,
            "--cafile",
            &f.server_cert,
            "--sni",
            "localhost",
            "--cert-compression",
            "brotli",
            "--request",
            r"GET /comp HTTP/1.0\r\n\r\n",
            "--json",
            "comp.json",
            "--linger",
            "300",
        ],
    );
    s.wait_for_from("GET /comp HTTP/1.0", &mut c);
    s.send_line("HTTP/1.0 200 OK compressed");
    let (_, v) = client_done(&mut c, &f.dir.join("comp.json"));
    let m = v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["type"] == "compressed_certificate")
        .unwrap_or_else(|| panic!("no compressed_certificate in {v}"));
    assert_eq!(m["algorithm"], "brotli", "{m}");
    let (u, z) = (
        m["uncompressed_length"].as_u64().unwrap(),
        m["compressed_length"].as_u64().unwrap(),
    );
    assert!(z < u, "{m}");
    // The records' view carries the same sizes.
    let part = v["records"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["messages"].as_array().into_iter().flatten())
        .find(|p| p["typ"] == "compressed_certificate" && p["offset"] == 0)
        .unwrap_or_else(|| panic!("no record part in {v}"));
    assert_eq!(part["uncompressed_length"].as_u64(), Some(u), "{part}");
    assert_eq!(part["compressed_length"].as_u64(), Some(z), "{part}");
    drop(s);
    Ok(format!("brotli {u} → {z} B"))
}

/// RFC 8879 with OpenSSL 4.0.3 (built with zlib, brotli and zstd): each algorithm both ways, and
/// the CLI's JSON ledger. docs/interop.md's `openssl-compression` section is written from it.
#[test]
fn openssl40_certificate_compression() {
    let peer = openssl40();
    let mut cells = Vec::new();
    for (i, alg) in COMPRESSION.into_iter().enumerate() {
        let p = peer.clone();
        cells.push(Cell::new(
            format!("openssl-4.0 ours ← s_server -cert_comp, {alg}"),
            move || comp_our_client(&p, i),
        ));
        let p = peer.clone();
        cells.push(Cell::new(
            format!("openssl-4.0 s_client -trace → ours, {alg}"),
            move || comp_s_client(&p, i),
        ));
    }
    let p = peer.clone();
    cells.push(Cell::new(
        "openssl-4.0 tls13lab client --cert-compression brotli --json → s_server -cert_comp",
        move || comp_cli_client(&p),
    ));
    let results = run_cells(cells, 2);
    cell_results_section(
        "openssl-compression",
        "Server certificate: P-256, self-signed, `localhost` and 60 more subjectAltNames. Each \
         cell: a full handshake, data both ways, the exporter equal on both sides; the sizes are \
         the Certificate body and its compressed form, as the CompressedCertificate declares \
         them. Our client offers only the row's algorithm, so s_server must use it; s_client \
         offers all three, our server compresses with the row's alone, and `-trace` must show \
         `CompressedCertificate` and `Compression type=` that algorithm.",
        &results,
    );
}

// ------------------------------------------------------------- the server's default groups

/// `tls13lab server` with no `--groups` answers every group it implements, as `openssl
/// s_server` does (issue 29): `s_client -groups` x448, secp521r1 and ffdhe2048 (OpenSSL 3.5)
/// each complete a handshake on that group.
#[test]
fn cli_server_accepts_every_group_by_default() {
    let peer = openssl35();
    let f = fixture("3.5-server-groups");
    let groups = [
        ("x448", "X448", "x448"),
        ("secp521r1", "secp521r1", "secp521r1"),
        ("ffdhe2048", "ffdhe2048", "ffdhe2048"),
    ];
    let n = groups.len().to_string();
    let srv = tls13lab(
        &f.dir,
        &[
            "server",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &f.server_cert,
            "--key",
            &f.server_key,
            "--json-dir",
            "ledgers",
            "--naccept",
            &n,
        ],
    );
    let port = cli_server_port(&srv);
    for (i, (_, ossl, ours)) in groups.into_iter().enumerate() {
        let mut c = f.s_client(&peer, port, &["-groups", ossl]);
        c.send_line("GET /groups HTTP/1.0\n");
        let (out, line, v) = cli_server_done(&mut c, &srv, &f.dir, i + 1);
        assert_eq!(v["negotiated"]["group"], ours, "{v}");
        assert!(out.contains("HTTP/1.0 200 OK"), "{}", c.context());
        assert!(line.contains(&format!("{ours}, full handshake")), "{line}");
    }
}

/// `tls13lab client --cafile cert.pem` → `s_server -cert cert.pem`, where cert.pem is a
/// self-signed certificate made the usual way (`openssl req -x509`, basicConstraints cA:TRUE, as
/// the default openssl.cnf writes it): trusted directly as the leaf, as s_client and curl do
/// (issue 29).
#[test]
fn cli_client_trusts_a_self_signed_ca_certificate_as_the_leaf() {
    let peer = openssl35();
    let f = fixture("3.5-self-signed-ca-leaf");
    let mut req = Proc::spawn(
        &peer,
        &f.dir,
        &[
            "req",
            "-x509",
            "-config",
            "/dev/null",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ss.key",
            "-out",
            "ss.crt",
            "-subj",
            "/CN=localhost",
            "-days",
            "30",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
        ],
    );
    assert_eq!(req.exit_code(), Some(0), "{}", req.context());
    let mut x = Proc::spawn(
        &peer,
        &f.dir,
        &[
            "x509",
            "-in",
            "ss.crt",
            "-noout",
            "-ext",
            "basicConstraints",
        ],
    );
    assert_eq!(x.exit_code(), Some(0), "{}", x.context());
    assert!(x.output().contains("CA:TRUE"), "{}", x.context());
    let (mut s, port) = f.spawn_s_server(&peer, 1, &["-cert", "ss.crt", "-key", "ss.key"]);
    let target = format!("127.0.0.1:{port}");
    let mut c = tls13lab(
        &f.dir,
        &[
            "client",
            &target,
            "--cafile",
            "ss.crt",
            "--sni",
            "localhost",
            "--linger",
            "300",
            "--request",
            r"GET /self-signed HTTP/1.0\r\n\r\n",
            "--json",
            "ss.json",
        ],
    );
    s.wait_for_from("GET /self-signed HTTP/1.0", &mut c);
    s.send_line("HTTP/1.0 200 OK from-openssl-self-signed");
    let (out, v) = client_done(&mut c, &f.dir.join("ss.json"));
    assert!(out.contains("from-openssl-self-signed"), "{out}");
    assert!(v["error"].is_null(), "{v}");
    // The roots line and the JSON say how it was trusted.
    assert!(
        out.contains("; the server's certificate is one of them, trusted directly\n"),
        "{out}"
    );
    assert_eq!(v["roots"]["leaf_trusted_directly"], true, "{}", v["roots"]);
}

// ------------------------------------------------------------------ recorded ClientHellos

/// `tls13lab client --preset NAME` (issue 28): the ClientHello shapes recorded from Chromium,
/// Firefox, curl and OpenSSL itself (lab/src/hello/presets.rs) complete a handshake with
/// s_server of OpenSSL 3.5 and 4.0, data both ways; the JSON's ClientHello is the preset's shape
/// (its first cipher suite and key share groups), and the `preset` line is printed.
#[test]
fn client_presets_against_s_server() {
    for (peer, v) in [(openssl35(), "3.5"), (openssl40(), "4.0")] {
        let f = fixture(&format!("{v}-presets"));
        let presets = ["chromium", "firefox", "curl", "openssl-3.5", "openssl-4.0"];
        let (mut s, port) = f.s_server(&peer, presets.len() as u32, &[]);
        let target = format!("127.0.0.1:{port}");
        for name in presets {
            let json = format!("{name}.json");
            let request = format!(r"GET /{name} HTTP/1.0\r\n\r\n");
            let mut c = tls13lab(
                &f.dir,
                &[
                    "client",
                    &target,
                    "--preset",
                    name,
                    "--cafile",
                    &f.server_cert,
                    "--sni",
                    "localhost",
                    "--linger",
                    "300",
                    "--request",
                    &request,
                    "--json",
                    &json,
                ],
            );
            s.wait_for_from(&format!("GET /{name} HTTP/1.0"), &mut c);
            let response = format!("HTTP/1.0 200 OK from-openssl-{v}-{name}");
            s.send_line(&response);
            let (out, v_json) = client_done(&mut c, &f.dir.join(&json));
            assert!(out.contains(&response), "{name} against {v}: {out}");
            assert!(out.contains("preset "), "{name}: no preset line\n{out}");
            assert_eq!(
                v_json["negotiated"]["version"], "TLSv1.3",
                "{name}: {v_json}"
            );
            // The ClientHello on the wire is the preset's: the lab builds the same shape.
            let spec = lab::hello::preset(name).unwrap();
            let groups: Vec<String> = v_json["messages"][0]["layout"]
                .as_array()
                .and_then(|l| l.iter().find(|x| x["name"] == "extensions"))
                .and_then(|e| e["children"].as_array())
                .and_then(|c| c.iter().find(|x| x["name"] == "key_share (51)"))
                .and_then(|k| k["children"].as_array())
                .and_then(|c| c.iter().find(|x| x["name"] == "client_shares"))
                .and_then(|c| c["children"].as_array())
                .map(|c| {
                    c.iter()
                        .filter(|x| x["name"] != "length")
                        .map(|x| x["name"].as_str().unwrap_or_default().to_string())
                        .collect()
                })
                .unwrap_or_default();
            let want: Vec<String> = spec
                .config
                .key_shares
                .iter()
                .map(|g| g.to_string())
                .collect();
            assert!(
                want.iter().all(|g| groups.contains(g)),
                "{name}: key shares {groups:?}, preset {want:?}"
            );
        }
        assert_eq!(s.exit_code(), Some(0), "{}", s.context());
    }
}

// ------------------------------------------------------------------------- ECH server

/// `openssl s_client -ech_config_list B64` (OpenSSL 4.0.3) → `tls13lab server --ech-key K`
/// (RFC 9849 §7): accepted with a key made by `openssl ech` and one made by `tls13lab ech
/// keygen`, with the X25519MLKEM768 share, and through a HelloRetryRequest (a server that only
/// speaks P-256, a client whose share is X25519: §7.2.1's confirmation); a stale config is
/// rejected and s_client receives our retry_configs (and ends with ech_required); `-ech_grease`
/// completes without ECH. Each time the server's log line and page say what it decided, and
/// s_client's `ECH:` line agrees.
#[test]
fn s_client_ech_to_cli_server() {
    let peer = openssl40();
    let f = fixture("4.0-ech-server");
    let mut g = Proc::spawn(
        &peer,
        &f.dir,
        &["ech", "-public_name", "public.example", "-out", "ossl.pem"],
    );
    assert_eq!(g.exit_code(), Some(0), "{}", g.context());
    let mut stale = Proc::spawn(
        &peer,
        &f.dir,
        // Named for our certificate: a client whose ECH is rejected authenticates the outer
        // handshake for the config's public name (§6.1.6) before it takes the retry_configs.
        &["ech", "-public_name", "localhost", "-out", "stale.pem"],
    );
    assert_eq!(stale.exit_code(), Some(0), "{}", stale.context());
    let b64_of = |file: &str| -> String {
        let text = std::fs::read_to_string(f.dir.join(file)).unwrap();
        text.split("-----BEGIN ECHCONFIG-----")
            .nth(1)
            .and_then(|t| t.split("-----END ECHCONFIG-----").next())
            .unwrap_or_else(|| panic!("no ECHCONFIG in {file}\n{text}"))
            .split_whitespace()
            .collect()
    };
    let mut kg = tls13lab(
        &f.dir,
        &[
            "ech",
            "keygen",
            "--public-name",
            "public.example",
            "--seed",
            "9",
            "--config-id",
            "201",
            "--out",
            "ours.pem",
        ],
    );
    assert_eq!(kg.exit_code(), Some(0), "{}", kg.context());
    let (ossl, ours, stale) = (b64_of("ossl.pem"), b64_of("ours.pem"), b64_of("stale.pem"));
    assert_ne!(
        ossl[..20],
        stale[..20],
        "two openssl ech runs made the same config"
    );

    let server = |extra: &[&str], naccept: &str| {
        let args = [
            &[
                "server",
                "--listen",
                "127.0.0.1:0",
                "--cert",
                &f.server_cert,
                "--key",
                &f.server_key,
                "--ech-key",
                "ossl.pem",
                "--ech-key",
                "ours.pem",
                "--json-dir",
                "ledgers",
                "--naccept",
                naccept,
            ][..],
            extra,
        ]
        .concat();
        let srv = tls13lab(&f.dir, &args);
        let port = cli_server_port(&srv);
        (srv, port)
    };
    let (srv, port) = server(&[], "5");
    let accepted = "ech            accepted (config_id ";
    let mut n = 0;
    for (config, groups, name) in [
        (&ossl, None, "openssl ech key"),
        (&ours, None, "tls13lab ech keygen key"),
        (&ossl, Some("X25519MLKEM768"), "X25519MLKEM768 share"),
    ] {
        n += 1;
        let mut args = vec!["-ech_config_list", config.as_str()];
        if let Some(g) = groups {
            args.extend(["-groups", g]);
        }
        let mut c = f.s_client(&peer, port, &args);
        c.send_line("GET /ech HTTP/1.0\n");
        let (out, line, _) = cli_server_done(&mut c, &srv, &f.dir, n);
        for needle in [
            "ECH: success: 1",
            "ECH: inner: localhost",
            "ECH: outer: public.example",
            accepted,
            "inner SNI localhost, outer SNI public.example)",
        ] {
            assert!(
                out.contains(needle),
                "{name}: no {needle:?}\n{}",
                c.context()
            );
        }
        assert!(line.contains("ECH accepted"), "{name}: {line}");
        if let Some(g) = groups {
            assert!(line.contains(g), "{name}: {line}");
        }
    }
    assert!(
        srv.has("config_id 201,"),
        "our key's config_id\n{}",
        srv.context()
    );

    // A stale config: nothing opens it, the outer handshake completes with retry_configs, and
    // s_client (which required ECH) reports them and aborts with ech_required (RFC 9849 §6.1.6).
    let mut c = f.s_client(&peer, port, &["-ech_config_list", &stale]);
    c.send_line("GET /stale HTTP/1.0\n");
    c.wait_for("ECH: Got 2 retry-configs"); // both keys' configs
    c.wait_exit();
    let out = c.output();
    assert!(out.contains("ECH: failed+retry-configs"), "{}", c.context());
    let line = srv.line_starting("conn #4 from ");
    assert!(
        line.contains("ECH rejected") && line.contains("retry_configs sent"),
        "{line}"
    );
    assert!(line.contains("ech_required"), "{line}");

    // GREASE: an outer ECH extension nobody can open; the handshake completes without ECH.
    let mut c = f.s_client(&peer, port, &["-ech_grease"]);
    c.send_line("GET /grease HTTP/1.0\n");
    let (out, line, _) = cli_server_done(&mut c, &srv, &f.dir, 5);
    assert!(out.contains("ECH: GREASE"), "{}", c.context());
    assert!(
        out.contains("ech            rejected: no key for config_id "),
        "{}",
        c.context()
    );
    assert!(line.contains("ECH rejected"), "{line}");

    // Without -tls1_3, OpenSSL 4.0.3's s_client offers TLS 1.2 in ClientHelloInner's
    // supported_versions, which RFC 9849 §6.1 forbids; §7.1: the server aborts with
    // illegal_parameter (docs/interop.md gives the flag that works).
    let (srv12, port12) = server(&[], "1");
    let connect = format!("127.0.0.1:{port12}");
    let mut c = Proc::spawn(
        &peer,
        &f.dir,
        &[
            "s_client",
            "-connect",
            &connect,
            "-servername",
            "localhost",
            "-CAfile",
            &f.server_cert,
            "-ech_config_list",
            &ours,
        ],
    );
    c.wait_exit();
    let line = srv12.line_starting("conn #1 from ");
    assert!(
        line.contains("illegal_parameter"),
        "{line}\n{}",
        c.context()
    );
    assert_ne!(c.exit_code(), Some(0), "{}", c.context());

    // HelloRetryRequest: the server speaks P-256 only, the client sends an X25519 share.
    let (srv, port) = server(&["--groups", "P-256"], "3");
    let mut c = f.s_client(
        &peer,
        port,
        &["-ech_config_list", &ossl, "-groups", "X25519:P-256"],
    );
    c.send_line("GET /hrr HTTP/1.0\n");
    let (out, line, _) = cli_server_done(&mut c, &srv, &f.dir, 1);
    for needle in ["ECH: success: 1", "hello retry    yes\n", accepted] {
        assert!(out.contains(needle), "HRR: no {needle:?}\n{}", c.context());
    }
    assert!(
        line.contains("secp256r1") && line.contains("ECH accepted"),
        "{line}"
    );
    // A stale config and a HelloRetryRequest: rejected in the retry (no confirmation), the outer
    // handshake completes and s_client gets the retry_configs.
    let stale_hrr = [
        "-ech_config_list",
        stale.as_str(),
        "-groups",
        "X25519:P-256",
    ];
    let mut c = f.s_client(&peer, port, &stale_hrr);
    c.send_line("GET /stale-hrr HTTP/1.0\n");
    c.wait_for("ECH: Got 2 retry-configs");
    c.wait_exit();
    assert!(
        c.output().contains("ECH: failed+retry-configs"),
        "{}",
        c.context()
    );
    let line = srv.line_starting("conn #2 from ");
    assert!(
        line.contains("ECH rejected") && line.contains("retry_configs sent"),
        "{line}"
    );

    // --ech-hrr-disguise: the rejecting HelloRetryRequest carries eight random bytes of
    // encrypted_client_hello (RFC 9849 §7.1 MAY). OpenSSL 4.0.3's client remembers that the
    // extension was present, not whether it confirmed, and at ServerHello aborts with
    // illegal_parameter ("ech required") instead of reading retry_configs; a GREASE client
    // ignores the bytes (§6.2) and completes. If this starts failing, OpenSSL has changed.
    let (srv, port) = server(&["--groups", "P-256", "--ech-hrr-disguise"], "2");
    let mut c = f.s_client(&peer, port, &stale_hrr);
    c.wait_exit();
    let out = c.output();
    assert!(
        out.contains("tls_process_server_hello:ech required") && !out.contains("retry-configs"),
        "{}",
        c.context()
    );
    let mut c = f.s_client(&peer, port, &["-ech_grease", "-groups", "X25519:P-256"]);
    c.send_line("GET /grease-hrr HTTP/1.0\n");
    let (out, line, _) = cli_server_done(&mut c, &srv, &f.dir, 2);
    for needle in ["ECH: GREASE", "hello retry    yes\n"] {
        assert!(
            out.contains(needle),
            "GREASE HRR: no {needle:?}\n{}",
            c.context()
        );
    }
    assert!(line.contains("ECH rejected"), "{line}");
}

// ------------------------------------------------------------------------- ECH client

/// A fixture for the ECH cells: a server certificate valid for both `localhost` (the inner
/// name) and `public.example` (the outer one, which a rejected handshake authenticates,
/// RFC 9849 §6.1.7), and `openssl ech` keys: `k.pem`, which s_server loads, and `stale.pem`,
/// which it does not. Returns the fixture and the two base64 ECHConfigLists.
fn ech_fixture(peer: &Peer, cell: &str) -> (Fixture, String, String) {
    let mut f = fixture(cell);
    let key = tls13lab::crypto::sign::SigningKey::generate_p256(
        &mut tls13lab::crypto::random::SeededRandom::from_seed(21),
    );
    let now = now_ms() / 1000;
    let cert_der = lab::certgen::self_signed_p256(
        &["localhost", "public.example"],
        &key,
        now - 86_400,
        now + 30 * 86_400,
    )
    .unwrap();
    let key_der = key.to_pkcs8_der().unwrap();
    f.server_id = Identity {
        key,
        cert_der,
        key_der,
    };
    let (c, k) = f.server_id.write(&f.dir, "both");
    f.server_cert = c.to_string_lossy().into_owned();
    f.server_key = k.to_string_lossy().into_owned();
    let mut b64 = Vec::new();
    for file in ["k.pem", "stale.pem"] {
        let mut g = Proc::spawn(
            peer,
            &f.dir,
            &["ech", "-public_name", "public.example", "-out", file],
        );
        assert_eq!(g.exit_code(), Some(0), "{}", g.context());
        let text = std::fs::read_to_string(f.dir.join(file)).unwrap();
        let body = tls13lab::crypto::cert::pem_blocks(&text, "ECHCONFIG").unwrap();
        b64.push(tls13lab::crypto::cert::base64_encode(&body[0]));
    }
    let stale = b64.pop().unwrap();
    (f, b64.pop().unwrap(), stale)
}

/// `tls13lab client` to s_server's port with the common flags, the certificate of
/// [`ech_fixture`], and `extra`.
fn ech_client(f: &Fixture, port: u16, extra: &[&str]) -> Proc {
    let target = format!("127.0.0.1:{port}");
    let mut args = vec![
        "client",
        &target,
        "--cafile",
        &f.server_cert,
        "--sni",
        "localhost",
        "--linger",
        "300",
    ];
    args.extend_from_slice(extra);
    tls13lab(&f.dir, &args)
}

/// The JSON's ECH verdict, with s_server's page line (`-www` prints what it saw).
fn ech_verdict(v: &serde_json::Value, out: &str) -> String {
    // Our client's ledger line, of its last connection (the s_server page is checked
    // separately).
    let line = out
        .lines()
        .rfind(|l| l.starts_with("ECH ") && l.contains(": SNI inner "))
        .unwrap_or("(no ECH line)");
    format!(
        "ours: `\"ech\": {}`, inner {}, outer {}; our ledger: `{line}`",
        v["ech"], v["ech_inner_sni"], v["ech_outer_sni"]
    )
}

const ECH_SUCCESS: &str = "ECH success: outer sni: public.example, inner sni: localhost";

/// Accepted (RFC 9849 §6.1.4), with an X25519 share, then one X25519MLKEM768 share that the
/// outer ClientHello carries once (compressed out of the inner one, §5.1), then after a
/// HelloRetryRequest (`-groups P-256`, §6.1.5).
fn ech_accepted(peer: &Peer) -> CellResult {
    let (f, b64, _) = ech_fixture(peer, "4.0-ech-accepted");
    let mut rows = Vec::new();
    for (i, (server, extra)) in [
        (&["-groups", "x25519"][..], &[][..]),
        (
            &["-groups", "X25519MLKEM768"][..],
            &[
                "--groups",
                "x25519mlkem768,x25519",
                "--key-shares",
                "x25519mlkem768",
            ][..],
        ),
        (
            &["-groups", "P-256"][..],
            &["--groups", "x25519,P-256", "--key-shares", "x25519"][..],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let (mut s, port) = f.s_server(peer, 1, &[&["-ech_key", "k.pem", "-www"], server].concat());
        let json = format!("acc{i}.json");
        let mut c = ech_client(
            &f,
            port,
            &[&["--ech-config", &b64, "--json", &json][..], extra].concat(),
        );
        let (out, v) = client_done(&mut c, &f.dir.join(&json));
        s.wait_exit();
        assert!(out.contains(ECH_SUCCESS), "{out}\n{}", s.context());
        assert_eq!(v["ech"], "accepted", "{v}");
        assert_eq!(v["ech_inner_sni"], "localhost");
        assert_eq!(v["ech_outer_sni"], "public.example");
        let msgs = v["messages"].as_array().unwrap();
        let outer: Vec<u64> = msgs
            .iter()
            .filter(|m| m["type"] == "client_hello" && m["ech_inner"].is_null())
            .map(|m| m["len"].as_u64().unwrap())
            .collect();
        let inner = msgs
            .iter()
            .filter(|m| m["type"] == "client_hello" && m["ech_inner"] == true)
            .count();
        let mut row = ech_verdict(&v, &out);
        row.push_str(&format!(", group {}", v["negotiated"]["group"]));
        match i {
            1 => {
                assert_eq!(v["negotiated"]["group"], "X25519MLKEM768");
                // 1,216 bytes of share: once in the outer hello, referenced from the inner.
                assert!(outer[0] < 2 * 1216, "{outer:?}");
                row.push_str(&format!(
                    ", outer ClientHello {} B (one 1,216-B share)",
                    outer[0]
                ));
            }
            2 => {
                assert_eq!(v["hello_retry"], true);
                assert_eq!(v["negotiated"]["group"], "secp256r1");
                assert_eq!(
                    (outer.len(), inner),
                    (2, 2),
                    "two outer and two inner hellos"
                );
                row.push_str(", hello_retry, 2 outer + 2 inner ClientHellos");
            }
            _ => assert_eq!((outer.len(), inner), (1, 1)),
        }
        rows.push(row);
    }
    Ok(rows.join("\n"))
}

/// Rejected (§6.1.6): a config s_server does not have. The outer handshake completes for
/// public.example, we send ech_required and report retry_configs; `--ech-retry` connects again
/// with them and is accepted.
fn ech_rejected(peer: &Peer) -> CellResult {
    let (f, b64, stale) = ech_fixture(peer, "4.0-ech-rejected");
    let (mut s, port) = f.s_server(peer, 3, &["-ech_key", "k.pem", "-www"]);
    let mut rows = Vec::new();
    let mut c = ech_client(&f, port, &["--ech-config", &stale, "--json", "rej.json"]);
    assert_eq!(c.exit_code(), Some(5), "{}", c.context());
    c.assert_has("sent alert ech_required");
    let v = read_json(&f.dir.join("rej.json"));
    assert_eq!(v["ech"], "rejected", "{v}");
    assert!(v["negotiated"].is_null(), "never a connection: {v}");
    assert_eq!(
        v["ech_retry_configs"], b64,
        "retry_configs are s_server's config"
    );
    assert!(
        ledger_has_alert(&v, "client_to_server", "ech_required"),
        "{v}"
    );
    rows.push(format!(
        "{}; sent alert ech_required, exit 5, `ech_retry_configs` = s_server's k.pem config",
        ech_verdict(&v, &c.output())
    ));
    let mut c = ech_client(
        &f,
        port,
        &[
            "--ech-config",
            &stale,
            "--ech-retry",
            "--json",
            "retry.json",
        ],
    );
    let (out, v) = client_done(&mut c, &f.dir.join("retry.json"));
    assert!(
        out.contains("rejected with retry_configs: connecting again"),
        "{out}"
    );
    assert!(out.contains(ECH_SUCCESS), "{out}");
    assert_eq!(v["ech"], "accepted", "{v}");
    rows.push(format!("{} after one retry", ech_verdict(&v, &out)));
    s.wait_exit();
    Ok(rows.join("\n"))
}

/// GREASE (§6.2) to an ECH server, and real ECH with keys `tls13lab ech keygen` made, given as
/// the PEM file.
fn ech_grease_and_our_keys(peer: &Peer) -> CellResult {
    let (f, _, _) = ech_fixture(peer, "4.0-ech-grease");
    let mut rows = Vec::new();
    let (mut s, port) = f.s_server(peer, 1, &["-ech_key", "k.pem", "-www"]);
    let mut c = ech_client(&f, port, &["--ech-grease", "--json", "grease.json"]);
    let (out, v) = client_done(&mut c, &f.dir.join("grease.json"));
    s.wait_exit();
    assert_eq!(v["ech"], "grease", "{v}");
    assert_eq!(v["ech_outer_sni"], "localhost");
    assert!(!out.contains("ECH success"), "{out}");
    rows.push(format!("{}; handshake completed", ech_verdict(&v, &out)));

    let mut kg = tls13lab(
        &f.dir,
        &[
            "ech",
            "keygen",
            "--public-name",
            "public.example",
            "--seed",
            "9",
            "--out",
            "ours.pem",
        ],
    );
    assert_eq!(kg.exit_code(), Some(0), "{}", kg.context());
    let (mut s, port) = f.s_server(peer, 1, &["-ech_key", "ours.pem", "-www"]);
    let mut c = ech_client(
        &f,
        port,
        &["--ech-config", "ours.pem", "--json", "ours.json"],
    );
    let (out, v) = client_done(&mut c, &f.dir.join("ours.json"));
    s.wait_exit();
    assert!(out.contains(ECH_SUCCESS), "{out}");
    assert_eq!(v["ech"], "accepted", "{v}");
    rows.push(ech_verdict(&v, &out));
    Ok(rows.join("\n"))
}

/// Issue 17, the client: `tls13lab client --ech-config` against OpenSSL 4.0.3's s_server.
/// Its table is a generated section of docs/interop.md.
#[test]
fn ech_client_against_openssl40() {
    const CELLS: &[(&str, FeatureFn, &[&str])] = &[
        (
            "openssl-4.0 ech: accepted",
            ech_accepted,
            &[
                "`tls13lab client --ech-config B64 --json F` → `s_server -ech_key k.pem -www` (`openssl ech -public_name public.example`)",
                "`tls13lab client … --key-shares x25519mlkem768` → `s_server … -groups X25519MLKEM768`",
                "`tls13lab client … --groups x25519,P-256` → `s_server … -groups P-256` (HelloRetryRequest)",
            ],
        ),
        (
            "openssl-4.0 ech: rejected, retry",
            ech_rejected,
            &[
                "`tls13lab client --ech-config STALE` (a second `openssl ech` key) → `s_server -ech_key k.pem -www`",
                "`tls13lab client --ech-config STALE --ech-retry` → the same s_server",
            ],
        ),
        (
            "openssl-4.0 ech: GREASE, our keys",
            ech_grease_and_our_keys,
            &[
                "`tls13lab client --ech-grease` → `s_server -ech_key k.pem -www`",
                "`tls13lab client --ech-config ours.pem` → `s_server -ech_key ours.pem -www` (`tls13lab ech keygen`)",
            ],
        ),
    ];
    run_cell_table(&openssl40(), CELLS, "openssl-ech");
}

/// The issue's acceptance for chains `tls13lab cert` makes (draft-ietf-tls-mldsa): for each
/// ML-DSA level, `tls13lab server --cert chain.pem --key leaf.key` with a root → leaf chain of
/// that level, and `openssl s_client -sigalgs mldsaNN -CAfile root.pem` (OpenSSL 3.5 and 4.0)
/// prints `Peer signature type: mldsaNN` and `Verification: OK`; our ledger names the scheme.
/// Then `s_server` serves the same chain and `tls13lab client --cafile root.pem --sigalgs
/// mldsaNN` verifies it.
#[test]
fn s_client_verifies_tls13lab_made_mldsa_chains() {
    for peer in [openssl35(), openssl40()] {
        for (i, level) in ["mldsa44", "mldsa65", "mldsa87"].into_iter().enumerate() {
            let mut f = fixture(&format!("{}-cert-{level}-server", peer.version));
            let dir = format!("{level}-chain");
            let mut gen = tls13lab(
                &f.dir,
                &[
                    "cert",
                    "--chain",
                    &format!("{level},{level}"),
                    "--san",
                    "localhost",
                    "--out",
                    &dir,
                    "--seed",
                    &(40 + i).to_string(),
                ],
            );
            assert_eq!(gen.exit_code(), Some(0), "{}", gen.context());
            f.server_cert = f
                .dir
                .join(&dir)
                .join("root.pem")
                .to_string_lossy()
                .into_owned();
            let (chain, key) = (format!("{dir}/chain.pem"), format!("{dir}/leaf.key"));
            let srv = tls13lab(
                &f.dir,
                &[
                    "server",
                    "--listen",
                    "127.0.0.1:0",
                    "--cert",
                    &chain,
                    "--key",
                    &key,
                    "--json-dir",
                    "ledgers",
                    "--naccept",
                    "1",
                ],
            );
            let port = cli_server_port(&srv);
            let mut c = f.s_client(&peer, port, &["-sigalgs", level]);
            c.send_line("GET / HTTP/1.0\n");
            let (out, _, v) = cli_server_done(&mut c, &srv, &f.dir, 1);
            let printed = format!("Peer signature type: {level}");
            for needle in [
                printed.as_str(),
                "Verification: OK",
                "Verify return code: 0 (ok)",
            ] {
                assert!(
                    out.contains(needle),
                    "{}: no {needle:?}\n{}",
                    peer.version,
                    c.context()
                );
            }
            assert_eq!(v["negotiated"]["signature_scheme"], level, "{v}");

            // And the other way: s_server serves the same chain, our client verifies it.
            let root = f.server_cert.clone();
            f.server_cert = f.dir.join(&chain).to_string_lossy().into_owned();
            f.server_key = f.dir.join(&key).to_string_lossy().into_owned();
            let (mut s, port) = f.s_server(&peer, 1, &[]);
            let target = format!("127.0.0.1:{port}");
            let mut c = tls13lab(
                &f.dir,
                &[
                    "client",
                    &target,
                    "--cafile",
                    &root,
                    "--sni",
                    "localhost",
                    "--sigalgs",
                    level,
                    "--json",
                    "ours.json",
                    "--request",
                    r"GET / HTTP/1.0\r\n\r\n",
                    "--linger",
                    "300",
                ],
            );
            s.wait_for_from("GET / HTTP/1.0", &mut c);
            s.send_line("HTTP/1.0 200 OK from-openssl");
            let (_, v) = client_done(&mut c, &f.dir.join("ours.json"));
            assert_eq!(v["negotiated"]["signature_scheme"], level, "{v}");
            s.wait_exit();
        }
    }
}
