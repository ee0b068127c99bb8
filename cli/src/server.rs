//! `tls13lab server --listen ADDR`: accept connections, answer each request with a page
//! describing the connection (or echo), log one line per connection. One thread serves every
//! connection as its bytes arrive (crate::reactor); this module says what a connection means.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lab::certgen::self_signed_p256;
use tls13lab::config::CertifiedKey;
use tls13lab::config::EeSupportedGroups;
use tls13lab::crypto::random::{OsRandom, RandomSource, SeededRandom};
use tls13lab::crypto::sign::SigningKey;
use tls13lab::events::{Direction, EarlyDataStatus, Event, Side};
use tls13lab::messages::{
    CertificateCompressionAlgorithm, CipherSuite, HandshakeType, NamedGroup, PskKeyExchangeMode,
    SignatureScheme,
};
use tls13lab::transcript_reader::Negotiating;
use tls13lab::{ClientAuth, Server, ServerConfig, ServerSide};

use super::common::{
    alpn, cert_compression, ee_groups, groups, ledger, load_certified_key, load_certs, observe_for,
    padding, psk_modes, same_hash, server_ech_text, sigalgs, suites, write_file, Failure, KeyLog,
    List, Policy, PskArgs, PskUse, Report,
};
use crate::net::{self, NetError, Step};
use crate::reactor::{self, Pipe};

/// Options of `tls13lab server`.
#[derive(clap::Args, Debug)]
pub struct ServerArgs {
    /// Address to listen on; port 0 picks a free port. The first stdout line is `listening on IP:PORT`.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4433")]
    pub listen: String,
    /// Certificate chain, PEM, leaf first [default: a fresh self-signed ECDSA P-256 certificate for localhost]. Repeatable, paired with --key in order: the server sends the first chain whose key and signatures the client's signature_algorithms (and signature_algorithms_cert) accept, e.g. an ECDSA and an ML-DSA chain side by side. A file that starts with CERTIFICATE PROPERTIES (trust-anchor-ids §6.4, as `cert --mtc` writes) takes part in trust anchor negotiation: a ClientHello's trust_anchors picks the chain whose trust anchor ID or group it lists, EncryptedExtensions lists every chain's ID, and a chain marked negotiation-only is never sent unasked.
    #[arg(long, value_name = "FILE", requires = "key", action = clap::ArgAction::Append)]
    pub cert: Vec<PathBuf>,
    /// Private key of the leaf, PEM (PKCS#8, SEC1 or PKCS#1: RSA, RSA-PSS, ECDSA P-256/384/521, Ed25519, ML-DSA-44/65/87 as seed, expanded or both). One per --cert.
    #[arg(long, value_name = "FILE", requires = "cert", action = clap::ArgAction::Append)]
    pub key: Vec<PathBuf>,
    /// Write the server's certificate chain as PEM (e.g. the generated one, for a client's --cafile).
    #[arg(long, value_name = "FILE")]
    pub cert_out: Option<PathBuf>,
    /// Groups in server preference order [default: every group tls13lab implements: the
    /// library's order (post-quantum first), then secp521r1, x448 and the ffdhe groups].
    #[arg(long, value_name = "LIST", value_parser = groups)]
    pub groups: Option<List<NamedGroup>>,
    /// Cipher suites in server preference order.
    #[arg(long, value_name = "LIST", value_parser = suites)]
    pub suites: Option<List<CipherSuite>>,
    /// Signature schemes the server will use, in preference order.
    #[arg(long, value_name = "LIST", value_parser = sigalgs)]
    pub sigalgs: Option<List<SignatureScheme>>,
    /// ALPN protocols the server speaks, in preference order.
    #[arg(long, value_name = "LIST", value_parser = alpn)]
    pub alpn: Option<List<Vec<u8>>>,
    /// Certificate compression (RFC 8879) in preference order: our certificate goes compressed with the first the client offers (when smaller), and CertificateRequests offer them; zlib, brotli, zstd (or a number), none [default: none].
    #[arg(long, value_name = "LIST", value_parser = cert_compression)]
    pub cert_compression: Option<List<CertificateCompressionAlgorithm>>,
    /// List our groups in EncryptedExtensions (RFC 8446 §4.2.7), for the client to choose its key shares by next time; never to a client that sent no supported_groups (§4.2). auto: only when the handshake did not use our first group (it tells the client something new, as OpenSSL does); on: whenever the client sent supported_groups; off: never.
    #[arg(long, value_name = "auto|on|off", value_parser = ee_groups, default_value = "auto")]
    pub ee_groups: EeSupportedGroups,
    #[command(flatten)]
    pub psk: PskArgs,
    /// PSK key exchange modes accepted, for tickets and --psk, in preference order: dhe (psk_dhe_ke), ke (psk_ke) or both [default: dhe,ke].
    #[arg(long, value_name = "LIST", value_parser = psk_modes)]
    pub psk_modes: Option<List<PskKeyExchangeMode>>,
    /// max_early_data_size advertised in tickets; 0 refuses 0-RTT [default: 16384].
    #[arg(long, value_name = "MAX")]
    pub early_data: Option<u32>,
    #[command(flatten)]
    pub policy: Policy,
    /// CA certificates (PEM) that client certificates must chain to [default: accept any, still checking CertificateVerify].
    #[arg(long, value_name = "FILE")]
    pub client_ca: Option<PathBuf>,
    /// Put trust_anchors in our CertificateRequest (draft-ietf-tls-trust-anchor-ids §4.1): the
    /// client's trust anchor IDs we accept, ASCII form, comma-separated; a client certificate
    /// sent because it matched one is reported on the connection line.
    #[arg(long, value_name = "LIST", value_parser = super::client::trust_anchor_list)]
    pub client_trust_anchors: Option<super::client::TrustAnchorList>,
    /// Post-handshake client authentication (RFC 8446 §4.6.2): a request for `/renegcert` sends a CertificateRequest first and the page says what came back (as `openssl s_server -www -verify_post_handshake`); an empty Certificate is accepted.
    #[arg(long)]
    pub post_handshake_auth: bool,
    /// Pad every protected record's inner plaintext to a multiple of N bytes (0 = none).
    #[arg(long, value_name = "N")]
    pub padding: Option<usize>,
    /// Echo what the client sends instead of answering with a page.
    #[arg(long)]
    pub echo: bool,
    /// Exit after N connections have been accepted and finished [default: serve until stopped].
    #[arg(long, value_name = "N")]
    pub naccept: Option<u64>,
    /// Seconds a connection may take in all before it is dropped.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub timeout: u64,
    /// Connections held at once (within the process's descriptor limit). Each costs its socket
    /// and what it has sent, not a thread: one thread serves them all as bytes arrive. When all
    /// are held, a new connection evicts the oldest one still in its handshake.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_connections: usize,
    /// Print each connection's record-by-record ledger before its summary line.
    #[arg(long)]
    pub ledger: bool,
    /// Append NSS key log lines to FILE (SSLKEYLOGFILE is honoured too).
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<PathBuf>,
    /// Write one JSON ledger per connection into DIR (conn-000001.json, ...), before its summary line.
    #[arg(long, value_name = "DIR")]
    pub json_dir: Option<PathBuf>,
    /// Put secret values in the JSON ledgers.
    #[arg(long)]
    pub show_secrets: bool,
    /// Write a ladder diagram of each connection as SVG: FILE, then FILE-2.svg, FILE-3.svg...
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write each connection as pcapng with its key log embedded: FILE, then FILE-2.pcapng...
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Write each connection as one self-contained HTML page, every byte annotated and
    /// decrypted (docs/illustrated/): FILE, then FILE-2.html, FILE-3.html...
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Seed all randomness (certificate, connection N uses seed+N): replayable runs.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// ECH key file (RFC 9849): a PRIVATE KEY and an ECHCONFIG block, as `openssl ech` or `tls13lab ech keygen` writes it. Repeatable. A ClientHelloOuter sealed to one is opened and its inner ClientHello answered; a rejected ECH gets every key's config as retry_configs.
    #[arg(long, value_name = "FILE", action = clap::ArgAction::Append)]
    pub ech_key: Vec<PathBuf>,
    /// Try every ECH key when the client's config_id matches none (RFC 9849 §7.1, for clients that randomize it).
    #[arg(long, requires = "ech_key")]
    pub ech_trial_decrypt: bool,
    /// A HelloRetryRequest that rejects ECH carries eight random bytes of encrypted_client_hello (RFC 9849 §7.1), as an accepting one carries its confirmation. OpenSSL 4.0.3's client then aborts instead of taking the retry_configs.
    #[arg(long, requires = "ech_key")]
    pub ech_hrr_disguise: bool,
}

/// What every connection thread shares.
struct Shared {
    config: Arc<ServerConfig>,
    /// The identities of the external PSKs, to tell them from tickets in reports.
    external: Vec<Vec<u8>>,
    keylog: Mutex<KeyLog>,
    echo: bool,
    timeout: Duration,
    print_ledger: bool,
    json_dir: Option<PathBuf>,
    show_secrets: bool,
    seed: Option<u64>,
    svg: Option<PathBuf>,
    pcap: Option<PathBuf>,
    html: Option<PathBuf>,
}

/// Run the server.
pub fn run(a: ServerArgs) -> Result<(), Failure> {
    let mut config = build_config(&a)?;
    if let Some(dir) = &a.json_dir {
        std::fs::create_dir_all(dir).map_err(|e| Failure::file(dir, e))?;
    }
    let keylog = KeyLog::open(a.keylog.as_deref())?;
    // Secrets are observed only for what asks for them (as in the client).
    config.observe = observe_for(
        &keylog,
        a.show_secrets || a.pcap.is_some() || a.html.is_some(),
    );
    let addrs: Vec<SocketAddr> = a
        .listen
        .to_socket_addrs()
        .map_err(|e| Failure::BadOption(format!("--listen {}: {e}", a.listen)))?
        .collect();
    let listener = TcpListener::bind(&addrs[..])
        .map_err(|e| Failure::io(&format!("listen {}", a.listen), &e))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::io("listen", &e))?;
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {local}");
        let _ = out.flush();
    }
    let shared = Arc::new(Shared {
        external: config
            .external_psks
            .iter()
            .map(|p| p.identity.clone())
            .collect(),
        config: Arc::new(config),
        keylog: Mutex::new(keylog),
        echo: a.echo,
        timeout: Duration::from_secs(a.timeout.max(1)),
        print_ledger: a.ledger,
        json_dir: a.json_dir.clone(),
        show_secrets: a.show_secrets,
        seed: a.seed,
        svg: a.svg.clone(),
        pcap: a.pcap.clone(),
        html: a.html.clone(),
    });
    let limits = reactor::Limits {
        max_connections: max_connections(a.max_connections),
        naccept: a.naccept,
    };
    reactor::run(listener, &*shared, &limits).map_err(|e| Failure::io("server", &e))
}

/// The connection table's size: as asked, within the descriptors this process may open (whose
/// soft limit is first raised to the hard one), less some for files the instruments write.
fn max_connections(asked: usize) -> usize {
    // SAFETY: getrlimit/setrlimit with a valid pointer to an initialized rlimit.
    let limit = unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return asked.clamp(1, 1024 - 64);
        }
        if r.rlim_cur < r.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                r.rlim_cur = r.rlim_max;
            }
        }
        r.rlim_cur
    };
    let fit = usize::try_from(limit)
        .unwrap_or(usize::MAX)
        .saturating_sub(64);
    asked.clamp(1, fit.max(1))
}

fn build_config(a: &ServerArgs) -> Result<ServerConfig, Failure> {
    if a.cert.len() != a.key.len() {
        return Err(Failure::BadOption(format!(
            "{} --cert but {} --key: give one key per certificate chain, in the same order",
            a.cert.len(),
            a.key.len()
        )));
    }
    let mut creds = a
        .cert
        .iter()
        .zip(&a.key)
        .map(|(c, k)| load_certified_key(c, k))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter();
    let cert = match creds.next() {
        Some(first) => first,
        None => self_signed(a.seed)?,
    };
    if let Some(path) = &a.cert_out {
        write_file(path, super::common::certs_to_pem(&cert.chain).as_bytes())?;
    }
    let mut s = ServerConfig::new(cert);
    s.more_certs = creds.collect();
    s.certificate_properties = a
        .cert
        .iter()
        .map(|c| super::common::load_certificate_properties(c))
        .collect::<Result<_, _>>()?;
    if let Some(g) = &a.groups {
        s.groups = g.0.clone();
    } else {
        // A server that is probed and interop-tested answers every group it implements, as
        // `openssl s_server` does (issue 29); the library's default keeps its shorter list.
        for g in tls13lab::crypto::kx::supported_groups() {
            if !s.groups.contains(g) {
                s.groups.push(*g);
            }
        }
    }
    if let Some(x) = &a.suites {
        s.cipher_suites = x.0.clone();
    }
    if let Some(x) = &a.sigalgs {
        s.signature_schemes = x.0.clone();
    }
    if let Some(x) = &a.alpn {
        s.alpn = x.0.clone();
    }
    if let Some(m) = a.early_data {
        s.max_early_data = m;
    }
    if let Some(n) = a.padding {
        s.padding = padding(n);
    }
    s.send_supported_groups = a.ee_groups;
    if let Some(x) = &a.cert_compression {
        s.cert_compression = x.0.clone();
    }
    if let Some(m) = &a.psk_modes {
        s.psk_modes = m.0.clone();
    }
    if let Some(psk) = a.psk.external()? {
        if a.suites.is_none() {
            // The library chooses the suite before it looks at the PSKs, and a PSK needs a
            // suite of its hash (RFC 8446 §4.2.11): with that hash's suites first, a SHA-384 PSK
            // is not passed over for TLS_AES_128_GCM_SHA256. s_server -psk does the same
            // for its SHA-256 PSK.
            s.cipher_suites.sort_by_key(|c| !same_hash(*c, psk.suite));
        }
        s.external_psks = vec![psk];
    }
    let asks =
        a.policy.request_client_cert || a.policy.require_client_cert || a.post_handshake_auth;
    let roots = match &a.client_ca {
        Some(_) if !asks => {
            return Err(Failure::BadOption(
                "--client-ca needs --request-client-cert, --require-client-cert or --post-handshake-auth".into(),
            ))
        }
        Some(p) => load_certs(p)?,
        None => Vec::new(),
    };
    if a.post_handshake_auth {
        s.post_handshake_auth = super::common::client_auth(roots.clone(), false);
    }
    match (&a.client_trust_anchors, asks) {
        (Some(_), false) => {
            return Err(Failure::BadOption(
                "--client-trust-anchors needs --request-client-cert, --require-client-cert or --post-handshake-auth".into(),
            ))
        }
        (Some(ids), true) => s.client_trust_anchors = Some(ids.0.clone()),
        (None, _) => {}
    }
    a.policy.apply(&mut s, roots);
    for path in &a.ech_key {
        let text = std::fs::read_to_string(path).map_err(|e| Failure::file(path, e))?;
        let key = tls13lab::crypto::ech::EchKeyPair::from_pem(&text)
            .map_err(|e| Failure::BadOption(format!("--ech-key {}: {e}", path.display())))?;
        s.ech_keys.push(key);
    }
    s.ech_trial_decrypt = a.ech_trial_decrypt;
    s.ech_hrr_disguise = a.ech_hrr_disguise;
    Ok(s)
}

/// A fresh ECDSA P-256 certificate for localhost, 127.0.0.1 and ::1, valid from a day ago for a year.
fn self_signed(seed: Option<u64>) -> Result<CertifiedKey, Failure> {
    let mut rng: Box<dyn RandomSource> = match seed {
        Some(s) => Box::new(SeededRandom::from_seed(s ^ 0x5eed_cafe)),
        None => Box::new(OsRandom),
    };
    let key = SigningKey::generate_p256(&mut rng);
    let now_s = net::now_ms() / 1000;
    let cert = self_signed_p256(
        &["localhost", "127.0.0.1", "::1"],
        &key,
        now_s - 86_400,
        now_s + 365 * 86_400,
    )
    .map_err(|e| Failure::BadOption(e.to_string()))?;
    Ok(CertifiedKey {
        chain: vec![cert],
        key: Arc::new(key),
    })
}

/// Report one finished connection: the summary line, and the files asked for.
fn report(
    n: u64,
    sh: &Shared,
    (peer, local): (Option<SocketAddr>, Option<SocketAddr>),
    started: u64,
    events: &[Event],
    result: Result<(), Failure>,
) {
    let addrs = peer.zip(local);
    let l = ledger(events, started);
    let mut text = String::new();
    if sh.print_ledger {
        text.push_str(&l.table());
    }
    let peer_s = peer.map_or_else(|| "?".into(), |p| p.to_string());
    let t = &l.totals;
    let what = match &l.negotiated {
        Some(neg) => format!(
            "{} {} {}, {}, early data {}",
            neg.version,
            neg.suite,
            neg.group.map_or("psk_ke".into(), |g| g.to_string()),
            match PskUse::from_events(events, &sh.external) {
                Some(p) if p.external => p.describe(),
                _ if neg.resumed => "resumed".into(),
                _ => "full handshake".into(),
            },
            super::common::early_text(Some(neg.early_data)),
        ),
        None => "no handshake".into(),
    };
    let what = match server_ech_text(events) {
        Some(ech) => format!("{what}, ECH {ech}"),
        None => what,
    };
    // draft-ietf-tls-trust-anchor-ids §4.2: the path went out because the client asked for it.
    let what = if events
        .iter()
        .any(|e| matches!(e, Event::TrustAnchorMatched))
    {
        format!("{what}, trust anchor matched")
    } else {
        what
    };
    let status = match &result {
        Ok(()) => "ok".to_string(),
        Err(f) => f.to_string(),
    };
    let prints = fingerprints(events);
    let ja = prints
        .client
        .as_ref()
        .map_or(String::new(), |f| format!("; JA4 {}, JA3 {}", f.ja4, f.ja3));
    text.push_str(&format!(
        "conn #{n} from {peer_s}: {what}{ja}; C→S {} bytes/{} records, S→C {} bytes/{} records; {status}\n",
        t.client_to_server.bytes, t.client_to_server.records, t.server_to_client.bytes, t.server_to_client.records
    ));
    let c = super::instruments::Connection {
        side: Side::Server,
        events,
        started_ms: started,
        title: format!("tls13lab server: connection #{n} from {peer_s}"),
        real_clock: true,
        addrs,
    };
    if let Some(path) = &sh.svg {
        if let Err(f) = super::instruments::write_svg(&super::instruments::numbered(path, n), &c) {
            eprintln!("tls13lab: {f}");
        }
    }
    if let Some(path) = &sh.pcap {
        if let Err(f) = super::instruments::write_pcap(&super::instruments::numbered(path, n), &c) {
            eprintln!("tls13lab: {f}");
        }
    }
    if let Some(path) = &sh.html {
        if let Err(f) = super::instruments::write_html(&super::instruments::numbered(path, n), &c) {
            eprintln!("tls13lab: {f}");
        }
    }
    if let Some(dir) = &sh.json_dir {
        let report = Report {
            side: Side::Server,
            peer: peer.map(|p| p.to_string()),
            started_ms: started,
            events,
            show_secrets: sh.show_secrets,
            error: result.err().map(|f| f.to_string()),
            external_psks: &sh.external,
        };
        let mut json = report.to_json();
        if let Some(o) = json.as_object_mut() {
            o.insert(
                "fingerprints".into(),
                serde_json::to_value(&prints).unwrap_or_default(),
            );
        }
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
        if let Err(f) = write_file(&dir.join(format!("conn-{n:06}.json")), text.as_bytes()) {
            eprintln!("tls13lab: {f}");
        }
    }
    // Last: a script that waits for this line finds the connection's files complete.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// The fingerprints of a connection's hellos (lab::fingerprint), read from the handshake
/// events the server keeps anyway: the first ClientHello's JA3/JA4, our first ServerHello's
/// (or HelloRetryRequest's) JA4S.
#[derive(serde::Serialize)]
struct Fingerprints {
    client: Option<lab::fingerprint::ClientFingerprints>,
    server: Option<lab::fingerprint::ServerFingerprints>,
}

fn fingerprints(events: &[Event]) -> Fingerprints {
    let first = |d: Direction, t: HandshakeType| {
        events.iter().find_map(|e| match e {
            Event::Handshake(h) if h.direction == d && h.typ == t => Some(h.bytes.as_slice()),
            _ => None,
        })
    };
    Fingerprints {
        client: first(Direction::ClientToServer, HandshakeType::ClientHello)
            .and_then(|m| lab::fingerprint::client_hello(m).ok()),
        server: first(Direction::ServerToClient, HandshakeType::ServerHello)
            .and_then(|m| lab::fingerprint::server_hello(m).ok()),
    }
}

/// A request is answered at its blank line or at this size, whichever comes first.
const MAX_REQUEST: usize = 64 * 1024;
/// Application data one connection may send in all (echo mode); then it is closed.
const MAX_CONNECTION_DATA: usize = 1024 * 1024;
/// Events one connection may cause (records, messages, derivations...). Every event is kept for
/// the connection's ledger, and a peer sending empty or one-byte records stays far below the
/// data limits while causing an event per record: without this cap, memory grows with the
/// record count (issue 8, "Limits").
const MAX_CONNECTION_EVENTS: usize = 50_000;

/// One connection's state between its turns in the readiness loop (crate::reactor).
struct Session {
    peer_s: String,
    started_ms: u64,
    /// The connection's own deadline, from its accept (--timeout).
    deadline: Instant,
    events: Vec<Event>,
    received: Vec<u8>,
    early_in: Vec<u8>,
    app_in: Vec<u8>,
    total: usize,
    responded: bool,
    /// `GET /renegcert`: the page waits for the answer to our CertificateRequest (this context).
    awaiting_cert: Option<Vec<u8>>,
    /// close_notify waits for the handshake: a 0-RTT request is answered before the client's
    /// Finished, and the NewSessionTickets that Finished triggers must go out before the
    /// close_notify (nothing may follow it, RFC 8446 §6.1) and before the socket's write side
    /// is shut down. Once closed, the client's close_notify is awaited until this instant, so
    /// the ledger has it.
    closed: Option<Instant>,
    n: u64,
}

/// How long a closed connection waits for the client's close_notify after its last bytes.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

impl reactor::Service<ServerSide> for Shared {
    type Session = Session;

    fn open(&self, n: u64, peer: Option<SocketAddr>) -> Option<(Server, Session)> {
        let rng: Box<dyn RandomSource> = match self.seed {
            Some(s) => Box::new(SeededRandom::from_seed(s.wrapping_add(n))),
            None => Box::new(OsRandom),
        };
        let peer_s = peer.map_or_else(|| "?".into(), |p| p.to_string());
        let server = match Server::new(self.config.clone(), rng) {
            Ok(s) => s,
            Err(e) => {
                println!("conn #{n} from {peer_s}: no handshake; {e}");
                return None;
            }
        };
        let session = Session {
            peer_s,
            started_ms: net::now_ms(),
            deadline: Instant::now() + self.timeout,
            events: Vec::new(),
            received: Vec::new(),
            early_in: Vec::new(),
            app_in: Vec::new(),
            total: 0,
            responded: false,
            awaiting_cert: None,
            closed: None,
            n,
        };
        Some((server, session))
    }

    fn wake_at(&self, s: &Session) -> Instant {
        s.closed.map_or(s.deadline, |c| c.min(s.deadline))
    }

    fn timer(&self, s: &mut Session, _: &mut Pipe<ServerSide>) -> Option<Result<(), Failure>> {
        let now = Instant::now();
        if s.closed.is_some_and(|c| c <= now) {
            return Some(Ok(())); // no close_notify from the client: done all the same
        }
        if now < s.deadline {
            return None;
        }
        Some(if s.responded {
            Ok(())
        } else {
            Err(Failure::Network(format!("timed out: {}", s.peer_s)))
        })
    }

    fn step(
        &self,
        s: &mut Session,
        d: &mut Pipe<ServerSide>,
        step: Result<Step, NetError>,
    ) -> Option<Result<(), Failure>> {
        s.step(self, d, step)
    }

    fn finish(
        &self,
        n: u64,
        mut s: Session,
        d: &mut Pipe<ServerSide>,
        addrs: (Option<SocketAddr>, Option<SocketAddr>),
        result: Result<(), Failure>,
    ) {
        if s.responded && s.closed.is_none() {
            d.close(); // the client never finished its handshake
        }
        s.events.extend(d.drain_events());
        report(n, self, addrs, s.started_ms, &s.events, result);
    }
}

impl Session {
    /// Send the page (with `extra` lines at its end) as the response.
    fn answer(&mut self, sh: &Shared, d: &mut Pipe<ServerSide>, title: &str, extra: String) {
        let mut body = page(
            title,
            &self.events,
            &self.early_in,
            &self.app_in,
            &sh.external,
        );
        body.push_str(&extra);
        if d.ep.send(&http_ok(&body)).is_ok() {
            self.responded = true;
        }
    }

    /// What the bytes just fed to the endpoint (or the EOF, or the failure) mean for the
    /// connection: its page, echo or CertificateRequest. `Some` ends it.
    fn step(
        &mut self,
        sh: &Shared,
        d: &mut Pipe<ServerSide>,
        step: Result<Step, NetError>,
    ) -> Option<Result<(), Failure>> {
        let (n, peer_s) = (self.n, self.peer_s.clone());
        if self.closed.is_some() {
            self.closed = Some(Instant::now() + CLOSE_WAIT);
        }
        let new = d.drain_events();
        if let Ok(mut k) = sh.keylog.lock() {
            k.write_events(&new);
        }
        let peer_closed = new.iter().any(|e| matches!(e, Event::Closed));
        let answered = self.awaiting_cert.as_ref().and_then(|ctx| {
            new.iter().find_map(|e| match e {
                Event::PostHandshakeAuth {
                    context,
                    certificates,
                    scheme,
                    ..
                } if context == ctx => Some(client_cert_line(
                    *certificates,
                    *scheme,
                    &sh.config.post_handshake_auth,
                )),
                _ => None,
            })
        });
        // 0-RTT data first: it precedes any application data on the wire.
        let (early, app) = (d.take_early(), d.take_data());
        self.early_in.extend_from_slice(&early);
        self.app_in.extend_from_slice(&app);
        let chunks = [early, app];
        self.events.extend(new);
        if self.events.len() > MAX_CONNECTION_EVENTS {
            d.close();
            return Some(Err(Failure::Network(format!(
                "more than {MAX_CONNECTION_EVENTS} records and messages: closed {peer_s}"
            ))));
        }
        let eof = match step {
            Err(NetError::Tls(e)) => {
                let during = if d.ep.is_connected() {
                    "connection"
                } else {
                    "handshake"
                };
                return Some(Err(Failure::tls(&e, during)));
            }
            Err(NetError::Io(e)) => return Some(Err(Failure::io(&peer_s, &e))),
            Ok(Step::Idle) => return None,
            Ok(Step::Eof) => true,
            Ok(Step::Data) => false,
        };
        self.total += chunks.iter().map(Vec::len).sum::<usize>();
        if self.total > MAX_CONNECTION_DATA {
            // Every event is kept for the ledger: a bounded budget keeps memory bounded too.
            d.close();
            return Some(Err(Failure::Network(format!(
                "more than {MAX_CONNECTION_DATA} bytes of data: closed {peer_s}"
            ))));
        }
        let title = format!("connection #{n} from {peer_s}");
        if let (Some(line), false) = (answered, self.responded) {
            self.awaiting_cert = None;
            self.answer(sh, d, &title, format!("{:<14} {line}\n", "client cert"));
        }
        if !self.responded && self.awaiting_cert.is_none() {
            if sh.echo {
                for c in chunks.iter().filter(|c| !c.is_empty()) {
                    let _ = d.ep.send(c);
                }
            } else {
                self.received.extend(chunks.concat());
                let received = &self.received;
                let complete = request_complete(received)
                    || received.len() >= MAX_REQUEST
                    || ((peer_closed || eof) && !received.is_empty());
                let (renegcert, keyupd) = (
                    asks_path(received, b"/renegcert"),
                    asks_path(received, b"/keyupd"),
                );
                if complete && renegcert {
                    let configured = !matches!(sh.config.post_handshake_auth, ClientAuth::None);
                    match request_client_cert(&mut d.ep, configured) {
                        Ok(ctx) => self.awaiting_cert = Some(ctx),
                        Err(why) => {
                            self.answer(sh, d, &title, format!("{:<14} {why}\n", "client cert"))
                        }
                    }
                } else if complete {
                    let extra = if keyupd {
                        let done = key_update_first(&mut d.ep);
                        format!("{:<14} {done}\n", "key update")
                    } else {
                        String::new()
                    };
                    self.answer(sh, d, &title, extra);
                }
            }
        }
        if self.responded && self.closed.is_none() && d.ep.is_connected() {
            d.close(); // the response, the tickets, then close_notify
            self.closed = Some(Instant::now() + CLOSE_WAIT);
        }
        if let Err(e) = d.flush() {
            return Some(Err(match e {
                NetError::Io(e) => Failure::io(&peer_s, &e),
                NetError::Tls(e) => Failure::tls(&e, "connection"),
            }));
        }
        if eof || peer_closed {
            if self.closed.is_none() {
                d.close();
                self.closed = Some(Instant::now());
            }
            return Some(if d.ep.is_connected() || self.responded {
                Ok(())
            } else {
                Err(Failure::Network(format!(
                    "client hung up during the handshake: {peer_s}"
                )))
            });
        }
        None
    }
}

/// Whether the request's path starts with `prefix`. Any method; the path decides. What
/// `openssl s_server -www` answers specially: `GET /keyupd…` with KeyUpdate(update_requested),
/// `GET /renegcert…` with a post-handshake CertificateRequest (TLS 1.3's renegotiation).
fn asks_path(request: &[u8], prefix: &[u8]) -> bool {
    let line = request.split(|&b| b == b'\n').next().unwrap_or_default();
    line.split(|&b| b == b' ')
        .nth(1)
        .is_some_and(|path| path.starts_with(prefix))
}

/// Send a post-handshake CertificateRequest (RFC 8446 §4.6.2) before the page, which then
/// waits for the client's answer. Returns its context, or the page's line on why not.
fn request_client_cert(server: &mut Server, configured: bool) -> Result<Vec<u8>, String> {
    if !server.is_connected() {
        return Err("not requested: the handshake is not complete (a 0-RTT request)".into());
    }
    if !configured {
        return Err("not requested: the server was started without --post-handshake-auth".into());
    }
    server
        .request_client_certificate(None)
        .map_err(|e| match e {
            tls13lab::Error::InvalidState(why) => format!("not requested: {why}"),
            other => format!("not requested: {other}"),
        })
}

/// The page's line on the client's verified answer to our CertificateRequest.
fn client_cert_line(
    certificates: usize,
    scheme: Option<SignatureScheme>,
    auth: &ClientAuth,
) -> String {
    if certificates == 0 {
        return "requested after the handshake: the client sent an empty Certificate (no client authentication)".into();
    }
    let chain = match auth {
        ClientAuth::Optional(r) | ClientAuth::Required(r) if !r.is_empty() => {
            "its chain validated against --client-ca"
        }
        _ => "its chain not validated (no --client-ca)",
    };
    format!(
        "requested after the handshake: {certificates} certificate(s), CertificateVerify {} verified, {chain}",
        scheme.map_or("?".into(), |s| s.to_string())
    )
}

/// Send KeyUpdate(update_requested) ahead of the response (RFC 8446 §4.6.3), so the page goes
/// out under the next traffic keys and the client must answer with its own KeyUpdate. Returns
/// the page's line about it.
fn key_update_first(server: &mut Server) -> String {
    if !server.is_connected() {
        // A 0-RTT request is answered before the client's Finished: no traffic keys to update yet.
        return "not sent: the handshake is not complete (a 0-RTT request)".into();
    }
    match server.key_update(true) {
        Ok(()) => {
            "sent KeyUpdate(update_requested) before this page: it comes under the next keys".into()
        }
        Err(e) => format!("not sent: {e}"),
    }
}

/// A request is complete at its first blank line (HTTP) — CRLF or bare LF.
fn request_complete(data: &[u8]) -> bool {
    data.windows(4).any(|w| w == b"\r\n\r\n") || data.windows(2).any(|w| w == b"\n\n")
}

/// `HTTP/1.0 200 OK` around a text body.
pub fn http_ok(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.0 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The page describing a connection from the server's events so far. The server may answer a
/// 0-RTT request before the client's Finished, so it reads the ServerHello when the handshake
/// is not complete yet. `early` and `app` are the 0-RTT and application data read so far;
/// `external` names the configured external PSKs.
pub fn page(
    title: &str,
    events: &[Event],
    early: &[u8],
    app: &[u8],
    external: &[Vec<u8>],
) -> String {
    let l = ledger(events, 0);
    // Before the handshake completes, what the ServerHello said.
    let hello = Negotiating::from_events(events);
    let mut s = format!("tls13lab server: {title}\n");
    let mut line = |k: &str, v: String| s.push_str(&format!("{k:<14} {v}\n"));
    let (suite, group, resumed, hrr, early_status) = match &l.negotiated {
        Some(n) => (
            Some(n.suite),
            n.group,
            n.resumed,
            n.hello_retry,
            Some(n.early_data),
        ),
        None => (
            hello.suite(),
            hello.group(),
            hello.psk_index().is_some(),
            hello.hello_retry(),
            (!early.is_empty()).then_some(EarlyDataStatus::Accepted),
        ),
    };
    line("version", "TLSv1.3".into());
    line("cipher suite", suite.map_or("?".into(), |x| x.to_string()));
    line(
        "group",
        group.map_or("none (psk_ke)".into(), |g| g.to_string()),
    );
    line("resumed", if resumed { "yes" } else { "no" }.into());
    if let Some(p) = PskUse::from_events(events, external) {
        line("psk", p.describe());
    }
    line("hello retry", if hrr { "yes" } else { "no" }.into());
    if let Some(ech) = server_ech_text(events) {
        line("ech", ech);
    }
    let early_text = match early_status {
        Some(EarlyDataStatus::Accepted) => {
            format!("accepted, {} bytes: {}", early.len(), preview(early))
        }
        Some(EarlyDataStatus::Rejected) => "rejected".into(),
        Some(EarlyDataStatus::NotSent) | None => "not sent".into(),
    };
    line("early data", early_text);
    line(
        "request",
        format!(
            "{} bytes ({} as 0-RTT): {}",
            early.len() + app.len(),
            early.len(),
            preview(&[early, app].concat())
        ),
    );
    let t = &l.totals;
    line(
        "ledger so far",
        format!(
            "client → server {} bytes in {} records; server → client {} bytes in {} records",
            t.client_to_server.bytes,
            t.client_to_server.records,
            t.server_to_client.bytes,
            t.server_to_client.records
        ),
    );
    s
}

/// At most 60 bytes, escaped.
fn preview(data: &[u8]) -> String {
    let cut = &data[..data.len().min(60)];
    let mut s: String = cut.escape_ascii().to_string();
    if data.len() > cut.len() {
        s.push('…');
    }
    format!("\"{s}\"")
}
