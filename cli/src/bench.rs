//! `tls13lab bench`: handshakes per second and bulk throughput on this machine, in the spirit of
//! `openssl speed`. Client and server run in memory in one thread, so a handshake figure is the
//! CPU cost of both ends together; bulk figures are one direction through the connection API
//! (`send` + `take_output` to encrypt, `receive` to decrypt) with 16 KiB records.
//!
//! Setup as in benches/ (docs/performance.md): a self-signed ECDSA P-256 certificate (or, with
//! `--chain`, a chain `tls13lab cert` would make, e.g. ML-DSA), one group and one suite per row,
//! `Observe::NONE`, no tickets on full handshakes, stateful single-use tickets for resumption
//! and 0-RTT (minted outside the timing); `--ech` adds Encrypted ClientHello (RFC 9849) to
//! every handshake.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lab::certgen::{chain, self_signed_p256, ChainSpec, KeyAlg};
use serde::Serialize;
use tls13lab::crypto::kx;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::messages::enums::{CipherSuite, NamedGroup, SignatureScheme};
use tls13lab::record::MAX_RECORD_LEN;
use tls13lab::session::TicketStore;
use tls13lab::{Client, ClientConfig, Server, ServerConfig};

/// Options of `tls13lab bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Groups to measure handshakes with (comma-separated): x25519, secp256r1 (p256),
    /// X25519MLKEM768, ...
    #[arg(long, value_delimiter = ',', default_value = "x25519")]
    pub groups: Vec<String>,
    /// Cipher suites (comma-separated): aes128gcm, aes256gcm, chacha20poly1305, aes128ccm, aes128ccm8, or IANA names.
    /// Handshakes use the first; bulk uses each.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "aes128gcm,aes256gcm,chacha20poly1305"
    )]
    pub suites: Vec<String>,
    /// What to measure (comma-separated): full, resumed, 0rtt, bulk.
    #[arg(long, value_delimiter = ',', default_value = "full,resumed,0rtt,bulk")]
    pub only: Vec<String>,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// The server's chain instead of a self-signed ECDSA P-256 certificate, generated as
    /// `tls13lab cert --chain LIST` makes it (root first; ecdsa-p256, rsa-2048, ed25519,
    /// mldsa44, mldsa65, mldsa87 ...). The leaf's key must be one this build signs
    /// CertificateVerify with.
    #[arg(long, value_name = "LIST", value_parser = super::cert::alg_list)]
    pub chain: Option<super::cert::AlgList>,
    /// Encrypted ClientHello (RFC 9849) on every handshake: the server holds an ECH key
    /// (X25519, HKDF-SHA256, AES-128-GCM) and the client seals its ClientHello to it.
    #[arg(long)]
    pub ech: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// One handshake figure.
#[derive(Serialize, Debug)]
struct HandshakeRow {
    kind: &'static str,
    group: String,
    suite: String,
    handshakes: u64,
    seconds: f64,
    per_second: f64,
}

/// One bulk figure.
#[derive(Serialize, Debug)]
struct BulkRow {
    suite: String,
    direction: &'static str,
    record_bytes: usize,
    bytes: u64,
    seconds: f64,
    mb_per_second: f64,
}

#[derive(Serialize, Debug)]
struct Report {
    cpu: String,
    cores: usize,
    /// Which optional backends this binary was built with.
    backends: String,
    /// The server's chain, root first (`--chain`; one `ecdsa-p256` for the self-signed default).
    chain: Vec<String>,
    /// The server's CertificateVerify scheme.
    signature_scheme: String,
    /// Whether every handshake used Encrypted ClientHello (`--ech`).
    ech: bool,
    /// The table's name for the certificate.
    #[serde(skip)]
    certificate: String,
    seconds_per_measurement: f64,
    handshakes: Vec<HandshakeRow>,
    bulk: Vec<BulkRow>,
}

const RECORD: usize = 16 * 1024;
const EARLY_DATA: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

/// Runs the command.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err("--seconds must be a positive number".into());
    }
    let budget = Duration::from_secs_f64(args.seconds);
    let groups = args
        .groups
        .iter()
        .map(|g| parse_group(g))
        .collect::<Result<Vec<_>, _>>()?;
    let suites = args
        .suites
        .iter()
        .map(|s| parse_suite(s))
        .collect::<Result<Vec<_>, _>>()?;
    let first_suite = *suites.first().ok_or("no suite given")?;
    let mut kinds = Vec::new();
    for k in &args.only {
        let k = match k.to_ascii_lowercase().as_str() {
            "full" => Kind::Full,
            "resumed" => Kind::Resumed,
            "0rtt" | "0-rtt" | "early" => Kind::ZeroRtt,
            "bulk" => Kind::Bulk,
            other => {
                return Err(format!(
                    "unknown measurement {other:?} (full, resumed, 0rtt, bulk)"
                ))
            }
        };
        kinds.push(k);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_millis() as u64;
    let identity = match &args.chain {
        Some(levels) => Identity::chain(&levels.0, now)?,
        None => Identity::new(now)?,
    };
    let ech = if args.ech {
        Some(lab::ech::key(7, 1).map_err(|e| format!("ECH key: {e}"))?)
    } else {
        None
    };

    let mut report = Report {
        cpu: cpu_model(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        backends: backends(),
        chain: identity
            .levels
            .iter()
            .map(|l| l.name().to_string())
            .collect(),
        signature_scheme: identity.scheme.to_string(),
        ech: args.ech,
        certificate: identity.describe(),
        seconds_per_measurement: args.seconds,
        handshakes: Vec::new(),
        bulk: Vec::new(),
    };
    for &group in &groups {
        for &kind in kinds.iter().filter(|k| **k != Kind::Bulk) {
            let mut setup = Setup::new(&identity, group, first_suite, kind, now);
            if let Some(key) = &ech {
                setup.with_ech(key);
            }
            let (n, t) = setup.measure(budget)?;
            let row = HandshakeRow {
                kind: kind.name(),
                group: group.to_string(),
                suite: first_suite.to_string(),
                handshakes: n,
                seconds: t.as_secs_f64(),
                per_second: n as f64 / t.as_secs_f64(),
            };
            report.handshakes.push(row);
        }
    }
    if kinds.contains(&Kind::Bulk) {
        for &suite in &suites {
            for (direction, (bytes, t)) in bulk(&identity, suite, now, budget)? {
                let row = BulkRow {
                    suite: suite.to_string(),
                    direction,
                    record_bytes: RECORD,
                    bytes,
                    seconds: t.as_secs_f64(),
                    mb_per_second: bytes as f64 / 1e6 / t.as_secs_f64(),
                };
                report.bulk.push(row);
            }
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", table(&report, &groups, first_suite));
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Full,
    Resumed,
    ZeroRtt,
    Bulk,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Full => "full",
            Kind::Resumed => "resumed",
            Kind::ZeroRtt => "0-rtt",
            Kind::Bulk => "bulk",
        }
    }
}

/// A group the core implements, named as everywhere in the CLI.
fn parse_group(s: &str) -> Result<NamedGroup, String> {
    let g = super::common::group(s)?;
    if !kx::is_supported(g) {
        return Err(format!(
            "group {g} is not implemented (implemented: {})",
            super::common::implemented_groups()
        ));
    }
    Ok(g)
}

/// A suite the core implements.
fn parse_suite(s: &str) -> Result<CipherSuite, String> {
    let c = super::common::suite(s)?;
    if tls13lab::crypto::aead::suite_params(c).is_none() {
        return Err(format!("cipher suite {c} is not implemented"));
    }
    Ok(c)
}

/// The certificate every measurement uses.
struct Identity {
    /// The trust anchor: the root, or the self-signed certificate.
    root: Vec<u8>,
    /// What the server sends, leaf first.
    certs: Vec<Vec<u8>>,
    signer: Arc<dyn tls13lab::config::Signer>,
    /// The chain's algorithms, root first.
    levels: Vec<KeyAlg>,
    /// The leaf key's CertificateVerify scheme.
    scheme: SignatureScheme,
}

impl Identity {
    fn new(now_ms: u64) -> Result<Identity, String> {
        let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(42));
        let now_s = now_ms / 1000;
        let cert = self_signed_p256(&["localhost"], &key, now_s - 86_400, now_s + 86_400)
            .map_err(|e| e.to_string())?;
        let pkcs8 = key.to_pkcs8_der().map_err(|e| format!("{e:?}"))?;
        let signer = tls13lab::config::fastest_signer(key, &pkcs8).map_err(|e| e.to_string())?;
        Ok(Identity {
            root: cert.clone(),
            certs: vec![cert],
            signer,
            levels: vec![KeyAlg::EcdsaP256],
            scheme: SignatureScheme::ecdsa_secp256r1_sha256,
        })
    }

    /// A chain of `levels` (root first) for `localhost`, valid for a day around `now_ms`,
    /// from `tls13lab cert`'s generator (seed 1). The server signs CertificateVerify with the
    /// leaf key's first scheme (ECDSA P-256 on ring where the build has `ring-sign`).
    fn chain(levels: &[KeyAlg], now_ms: u64) -> Result<Identity, String> {
        let now_s = now_ms / 1000;
        let spec = ChainSpec {
            sans: vec!["localhost".into()],
            not_before: now_s - 86_400,
            not_after: now_s + 86_400,
            ..ChainSpec::new(levels.to_vec())
        };
        let made = chain(&spec, 1).map_err(|e| format!("--chain: {e}"))?;
        let key = SigningKey::from_pkcs8_der(&made.key_pkcs8_der).map_err(|e| {
            format!(
                "--chain: a {} leaf cannot sign CertificateVerify here: {e}",
                levels[levels.len() - 1]
            )
        })?;
        let scheme = *key
            .schemes()
            .first()
            .ok_or("--chain: the leaf key signs no scheme")?;
        let signer = tls13lab::config::fastest_signer(key, &made.key_pkcs8_der)
            .map_err(|e| e.to_string())?;
        Ok(Identity {
            root: made.root_der,
            certs: made.certs_der,
            signer,
            levels: levels.to_vec(),
            scheme,
        })
    }

    /// What the table calls the certificate.
    fn describe(&self) -> String {
        match &self.levels[..] {
            [KeyAlg::EcdsaP256] if self.certs.len() == 1 && self.certs[0] == self.root => {
                "ECDSA P-256 certificate".into()
            }
            levels => format!(
                "chain {} (CertificateVerify {})",
                levels
                    .iter()
                    .map(|l| l.name())
                    .collect::<Vec<_>>()
                    .join(","),
                self.scheme
            ),
        }
    }
}

/// Configurations for one row; `mint` issues the tickets resumption rows use.
struct Setup {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    mint: Arc<ServerConfig>,
    kind: Kind,
    now: u64,
    seed: u64,
    /// The leaf's CertificateVerify scheme, which every full handshake must show.
    scheme: SignatureScheme,
}

/// Tickets per minting handshake.
const MINTED: u32 = 8;

impl Setup {
    fn new(id: &Identity, group: NamedGroup, suite: CipherSuite, kind: Kind, now: u64) -> Setup {
        let (mut client, mut server) = lab::demo::bench_configs(
            id.root.clone(),
            id.signer.clone(),
            group,
            suite,
            kind == Kind::ZeroRtt,
        );
        // bench_configs is ECDSA P-256 only: a chain brings its leaf's scheme, and the client
        // accepts every scheme for the certificates' own signatures.
        server.cert.chain = id.certs.clone();
        server.signature_schemes = vec![id.scheme];
        if id.scheme != SignatureScheme::ecdsa_secp256r1_sha256 || id.certs.len() > 1 {
            client.signature_schemes = tls13lab::crypto::sign::supported_verify_schemes().to_vec();
        }
        let mut mint = server.clone(); // shares the session cache
        mint.tickets = MINTED;
        Setup {
            client: Arc::new(client),
            server: Arc::new(server),
            mint: Arc::new(mint),
            kind,
            now,
            seed: 1,
            scheme: id.scheme,
        }
    }

    /// Encrypted ClientHello with `key` on every handshake (RFC 9849): the server and the
    /// ticket minter hold the key, the client offers its ECHConfigList.
    fn with_ech(&mut self, key: &tls13lab::crypto::ech::EchKeyPair) {
        let mut client = (*self.client).clone();
        client.ech = tls13lab::config::EchMode::offer(key.list.clone());
        self.client = Arc::new(client);
        for s in [&mut self.server, &mut self.mint] {
            let mut c = (**s).clone();
            c.ech_keys = vec![key.clone()];
            *s = Arc::new(c);
        }
    }

    /// One handshake between a fresh client and server; returns them.
    fn handshake(
        &mut self,
        server: &Arc<ServerConfig>,
        tickets: TicketStore,
    ) -> Result<(Client, Server), String> {
        self.seed += 2;
        let e = |e: tls13lab::Error| e.to_string();
        let early = self.kind == Kind::ZeroRtt && !tickets.is_empty();
        let mut c = Client::new(
            self.client.clone(),
            Box::new(SeededRandom::from_seed(self.seed)),
        )
        .map_err(e)?
        .with_tickets(tickets);
        let mut s = Server::new(
            server.clone(),
            Box::new(SeededRandom::from_seed(self.seed + 1)),
        )
        .map_err(e)?;
        c.start(self.now).map_err(e)?;
        if early {
            c.send(EARLY_DATA).map_err(e)?;
        }
        loop {
            let out = c.take_output();
            if !out.is_empty() {
                s.receive(&out, self.now).map_err(e)?;
                s.events().for_each(drop);
            }
            let back = s.take_output();
            if !back.is_empty() {
                c.receive(&back, self.now).map_err(e)?;
                c.events().for_each(drop);
            }
            if out.is_empty() && back.is_empty() {
                break;
            }
        }
        if !(c.is_connected() && s.is_connected()) {
            return Err("handshake did not complete".into());
        }
        Ok((c, s))
    }

    /// Handshakes until `budget` of timed handshaking has passed: (count, time).
    fn measure(&mut self, budget: Duration) -> Result<(u64, Duration), String> {
        let mut n = 0;
        let mut total = Duration::ZERO;
        let mut tickets = TicketStore::default();
        let server = self.server.clone();
        while total < budget {
            let one = if self.kind == Kind::Full {
                TicketStore::default()
            } else {
                if tickets.is_empty() {
                    let mint = self.mint.clone();
                    let (c, _) = self.handshake(&mint, TicketStore::default())?;
                    tickets = c.tickets().clone();
                }
                let mut one = TicketStore::default();
                one.insert(tickets.tickets.pop_back().ok_or("no ticket issued")?);
                one
            };
            let t = Instant::now();
            let (c, _s) = self.handshake(&server, one)?;
            total += t.elapsed();
            n += 1;
            // Every timed handshake is what the row says, from the connection's state (no
            // recorder on the timed ones).
            let ech = matches!(self.client.ech, tls13lab::config::EchMode::Config { .. });
            check(&c, self.kind, ech, self.scheme)?;
        }
        Ok((n, total))
    }
}

/// A handshake of a row must be what the row says: signed with its chain when full, resumed or
/// not, 0-RTT accepted or not, ECH accepted when offered (from the connection's state).
fn check(c: &Client, kind: Kind, ech: bool, scheme: SignatureScheme) -> Result<(), String> {
    let n = c.negotiated().ok_or("not connected")?;
    // A full handshake is signed with the row's chain (a resumed one with none).
    let signed = (kind == Kind::Full).then_some(scheme);
    if n.signature_scheme != signed {
        return Err(format!(
            "{} handshake signed with {:?}, expected {signed:?}",
            kind.name(),
            n.signature_scheme
        ));
    }
    let accepted = c.ech_outcome() == Some(tls13lab::events::EchOutcome::Accepted);
    if accepted != ech {
        return Err(format!(
            "{} handshake: ECH accepted is {}, offered is {ech}",
            kind.name(),
            !ech
        ));
    }
    let early = n.early_data == tls13lab::events::EarlyDataStatus::Accepted;
    if n.resumed != (kind != Kind::Full) || early != (kind == Kind::ZeroRtt) {
        return Err(format!(
            "{} handshake came out resumed={} early data={:?}",
            kind.name(),
            n.resumed,
            n.early_data
        ));
    }
    Ok(())
}

/// Bytes moved and the time it took.
type Throughput = (u64, Duration);

/// 16 KiB records one way through connected pairs: encrypt, then decrypt, each through the
/// buffered calls (`send` + `take_output`, `receive`) and in a buffer the caller owns
/// (`seal_in_place`, `open_in_place`).
fn bulk(
    id: &Identity,
    suite: CipherSuite,
    now: u64,
    budget: Duration,
) -> Result<[(&'static str, Throughput); 4], String> {
    let mut setup = Setup::new(id, NamedGroup::X25519, suite, Kind::Full, now);
    let server = setup.server.clone();
    let e = |e: tls13lab::Error| e.to_string();
    let data = vec![0x61u8; RECORD];
    // Encrypt: each record is handed to the caller and dropped, as a writer to a socket would.
    let (mut c, _) = setup.handshake(&server, TicketStore::default())?;
    let enc = timed(budget, || {
        c.send(&data).map_err(e)?;
        std::hint::black_box(c.take_output());
        Ok(())
    })?;
    let mut buf = vec![0x61u8; MAX_RECORD_LEN];
    let enc_in_place = timed(budget, || {
        std::hint::black_box(c.seal_in_place(&mut buf, RECORD).map_err(e)?);
        Ok(())
    })?;
    // Decrypt: records made by a fresh pair's client outside the timing, 64 at a time.
    let (mut c, mut s) = setup.handshake(&server, TicketStore::default())?;
    let mut plain = vec![0u8; RECORD];
    let dec = timed_batches(
        budget,
        || {
            c.send(&data).map_err(e)?;
            Ok(c.take_output())
        },
        |rec| {
            // The plaintext is read into a buffer of ours, as an application would.
            if s.receive(rec, now).map_err(e)? != rec.len() {
                return Err("a record was not taken".to_string());
            }
            while s.read(&mut plain) > 0 {}
            s.events().for_each(drop);
            Ok(())
        },
    )?;
    let dec_in_place = timed_batches(
        budget,
        || {
            let mut rec = vec![0x61u8; MAX_RECORD_LEN];
            let n = c.seal_in_place(&mut rec, RECORD).map_err(e)?;
            rec.truncate(n);
            Ok(rec)
        },
        |rec| {
            let opened = s.open_in_place(rec, now).map_err(e)?;
            std::hint::black_box(opened.data);
            Ok(())
        },
    )?;
    Ok([
        ("encrypt", enc),
        ("decrypt", dec),
        ("encrypt-in-place", enc_in_place),
        ("decrypt-in-place", dec_in_place),
    ])
}

/// Runs `record` (one 16 KiB record) 64 times per round until `budget` is spent.
fn timed(
    budget: Duration,
    mut record: impl FnMut() -> Result<(), String>,
) -> Result<Throughput, String> {
    let (mut spent, mut bytes) = (Duration::ZERO, 0u64);
    while spent < budget {
        let t = Instant::now();
        for _ in 0..64 {
            record()?;
        }
        spent += t.elapsed();
        bytes += 64 * RECORD as u64;
    }
    Ok((bytes, spent))
}

/// Like [`timed`] for opening: 64 records are made by `make` outside the timing, then each is
/// opened by `open`.
fn timed_batches(
    budget: Duration,
    mut make: impl FnMut() -> Result<Vec<u8>, String>,
    mut open: impl FnMut(&mut [u8]) -> Result<(), String>,
) -> Result<Throughput, String> {
    let (mut spent, mut bytes) = (Duration::ZERO, 0u64);
    while spent < budget {
        let mut batch = (0..64).map(|_| make()).collect::<Result<Vec<_>, _>>()?;
        let t = Instant::now();
        for rec in &mut batch {
            open(rec)?;
        }
        spent += t.elapsed();
        bytes += 64 * RECORD as u64;
    }
    Ok((bytes, spent))
}

fn table(r: &Report, groups: &[NamedGroup], suite: CipherSuite) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "tls13lab bench: {} ({} cores), client and server in one thread, {} s per figure\ncrypto: {}",
        r.cpu, r.cores, r.seconds_per_measurement, r.backends
    );
    if !r.handshakes.is_empty() {
        let _ = writeln!(
            s,
            "\nhandshakes/s with {suite}, {}{}",
            r.certificate,
            if r.ech { ", Encrypted ClientHello" } else { "" }
        );
        let _ = writeln!(
            s,
            "{:<20} {:>10} {:>10} {:>10}",
            "group", "full", "resumed", "0-rtt"
        );
        for g in groups {
            let cell = |kind: &str| {
                r.handshakes
                    .iter()
                    .find(|h| h.kind == kind && h.group == g.to_string())
                    .map_or("-".to_string(), |h| format!("{:.1}", h.per_second))
            };
            let _ = writeln!(
                s,
                "{:<20} {:>10} {:>10} {:>10}",
                g.to_string(),
                cell("full"),
                cell("resumed"),
                cell("0-rtt")
            );
        }
    }
    if !r.bulk.is_empty() {
        let _ = writeln!(s, "\nbulk MB/s, {} byte records", RECORD);
        // "in place": seal_in_place / open_in_place, in a buffer the caller owns.
        let _ = writeln!(
            s,
            "{:<32} {:>10} {:>10} {:>18} {:>18}",
            "suite", "encrypt", "decrypt", "encrypt in place", "decrypt in place"
        );
        let suites: Vec<&String> = r
            .bulk
            .iter()
            .map(|b| &b.suite)
            .fold(Vec::new(), |mut v, x| {
                if !v.contains(&x) {
                    v.push(x);
                }
                v
            });
        for su in suites {
            let cell = |dir: &str| {
                r.bulk
                    .iter()
                    .find(|b| &b.suite == su && b.direction == dir)
                    .map_or("-".to_string(), |b| format!("{:.1}", b.mb_per_second))
            };
            let _ = writeln!(
                s,
                "{:<32} {:>10} {:>10} {:>18} {:>18}",
                su,
                cell("encrypt"),
                cell("decrypt"),
                cell("encrypt-in-place"),
                cell("decrypt-in-place")
            );
        }
    }
    s
}

/// Which backend each step uses in this build (the core's features).
fn backends() -> String {
    let b = tls13lab::crypto::BACKENDS;
    format!(
        "records {}, signature verification {}, signing {}, ML-DSA {}, key exchange {}, \
         hashing {}; certificate signatures remembered across connections",
        b.records, b.verify, b.sign, b.mldsa, b.kx, b.hash
    )
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}
