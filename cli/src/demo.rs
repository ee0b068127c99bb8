//! `tls13lab demo` (the default): a client and a server wired back to back in memory, with a
//! fixed clock and seeded randomness, so every run prints the same bytes. It takes the client's
//! and the server's options, so anything measurable over TCP is measurable here.

use std::path::PathBuf;
use std::sync::Arc;

use lab::certgen::self_signed_p256;
use lab::demo::{self, Pair};
use tls13lab::config::{CertifiedKey, EchMode};
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::events::{Event, Side};
use tls13lab::messages::{CipherSuite, NamedGroup, SignatureScheme};
use tls13lab::Error;

use super::common::{
    bytes, emit, groups, ledger, printout, sigalgs, suites, Bytes, Failure, KeyLog, List, Offer,
    Output, Policy, Report,
};
use super::server::{http_ok, page};

/// 2026-01-01T00:00:00Z: a fixed clock keeps the demo replayable.
const NOW_MS: u64 = 1_767_225_600_000;

/// Options of `tls13lab demo`.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// Seed for all randomness (the run replays byte for byte).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub offer: Offer,
    /// Server group preference order [default: --groups, else the library's].
    #[arg(long, value_name = "LIST", value_parser = groups)]
    pub server_groups: Option<List<NamedGroup>>,
    /// Server suite preference order [default: --suites, else the library's].
    #[arg(long, value_name = "LIST", value_parser = suites)]
    pub server_suites: Option<List<CipherSuite>>,
    /// Signature schemes the server may use [default: --sigalgs, else the library's].
    #[arg(long, value_name = "LIST", value_parser = sigalgs)]
    pub server_sigalgs: Option<List<SignatureScheme>>,
    /// max_early_data_size in the server's tickets.
    #[arg(long, value_name = "MAX")]
    pub max_early_data: Option<u32>,
    #[command(flatten)]
    pub policy: Policy,
    /// The request; \r \n \t \\ \xHH are interpreted [default: GET / HTTP/1.0\r\n\r\n].
    #[arg(long, value_name = "STRING", value_parser = bytes)]
    pub request: Option<Bytes>,
    #[command(flatten)]
    pub out: Output,
    /// Only the full handshake (skip the resumed and 0-RTT connections and the comparison).
    #[arg(long)]
    pub once: bool,
    /// Encrypted ClientHello (RFC 9849): the server holds an ECH key made from the seed
    /// (config_id 1, public name public.example) and the client seals its ClientHello to it;
    /// the ledger shows ClientHelloOuter and ClientHelloInner.
    #[arg(long, conflicts_with = "ech_grease")]
    pub ech: bool,
    /// Send a GREASE encrypted_client_hello (RFC 9849 §6.2), which the server ignores.
    #[arg(long)]
    pub ech_grease: bool,
    /// Write the full connection as one self-contained HTML page into FILE: every byte of
    /// every record annotated, each protected record with its key, IV, nonce and additional
    /// data, the key schedule linked to the records it protects.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl Default for DemoArgs {
    fn default() -> Self {
        DemoArgs {
            seed: 1,
            offer: Offer::default(),
            server_groups: None,
            server_suites: None,
            server_sigalgs: None,
            max_early_data: None,
            policy: Policy::default(),
            request: None,
            out: Output::default(),
            once: false,
            ech: false,
            ech_grease: false,
            html: None,
        }
    }
}

/// Run the demo.
pub fn run(a: DemoArgs) -> Result<(), Failure> {
    let (mut server_cfg, root) =
        demo::server_config(a.seed, NOW_MS).map_err(|e| Failure::BadOption(e.to_string()))?;
    let mut client_cfg = demo::client_config(root);
    a.offer.apply(&mut client_cfg)?;
    a.offer.apply_to_server(&client_cfg, &mut server_cfg);
    // The server-only options override what the client's offer implied.
    if let Some(g) = &a.server_groups {
        server_cfg.groups = g.0.clone();
    }
    if let Some(s) = &a.server_suites {
        server_cfg.cipher_suites = s.0.clone();
    }
    if let Some(s) = &a.server_sigalgs {
        server_cfg.signature_schemes = s.0.clone();
    }
    if let Some(m) = a.max_early_data {
        server_cfg.max_early_data = m;
    }
    let mut client_roots = Vec::new();
    if a.policy.request_client_cert || a.policy.require_client_cert {
        let ck = client_identity(a.seed)?;
        client_roots = ck.chain.clone();
        client_cfg.client_cert = Some(ck);
    }
    a.policy.apply(&mut server_cfg, client_roots);
    if a.ech {
        let key = lab::ech::key(a.seed, 1).map_err(|e| Failure::BadOption(e.to_string()))?;
        client_cfg.ech = EchMode::offer(key.list.clone());
        server_cfg.ech_keys = vec![key];
    } else if a.ech_grease {
        client_cfg.ech = EchMode::Grease;
    }
    let request = a
        .request
        .as_ref()
        .map_or_else(|| b"GET / HTTP/1.0\r\n\r\n".to_vec(), |r| r.0.clone());

    let (client_cfg, server_cfg) = (Arc::new(client_cfg), Arc::new(server_cfg));
    let mut p = Pair::new(client_cfg.clone(), server_cfg.clone(), a.seed, NOW_MS)
        .map_err(|e| Failure::BadOption(e.to_string()))?;
    let result = converse(&mut p, &request);
    if result.is_err() {
        // Let the alert reach the other side so both ledgers show it (its error is the same).
        let _ = p.exchange();
        let _ = p.exchange();
    }
    let events = &p.client_events;
    KeyLog::open(a.out.keylog.as_deref())?.write_events(events);
    if let Some(path) = &a.out.svg {
        super::instruments::write_svg(path, &demo_connection(events, a.seed))?;
    }
    if let Some(path) = &a.out.pcap {
        super::instruments::write_pcap(path, &demo_connection(events, a.seed))?;
    }
    if let Some(path) = &a.html {
        super::instruments::write_html(path, &demo_connection(events, a.seed))?;
    }

    let l = ledger(events, NOW_MS);
    emit(&format!(
        "== in memory, seed {}: client ⇄ server, no sockets, clock fixed at {NOW_MS} ms\n{}",
        a.seed,
        printout(&l, events, &p.client_data, &[])
    ));
    let failure = result.err().map(|(e, during)| demo_failure(&p, &e, during));
    if let Some(path) = &a.out.json {
        Report {
            side: Side::Client,
            peer: None,
            started_ms: NOW_MS,
            events,
            show_secrets: a.out.show_secrets,
            error: failure.as_ref().map(|f| f.to_string()),
            external_psks: &[],
        }
        .write(path)?;
    }
    if let Some(f) = failure {
        return Err(f);
    }
    if !a.once {
        resumptions(&p, client_cfg, server_cfg, a.seed, &request)?;
    }
    Ok(())
}

/// The same client resumes twice with the first connection's tickets — once without and once
/// with 0-RTT — and a table compares the three connections (what a ticket saves, what 0-RTT buys).
fn resumptions(
    first: &Pair,
    client_cfg: Arc<tls13lab::ClientConfig>,
    server_cfg: Arc<tls13lab::ServerConfig>,
    seed: u64,
    request: &[u8],
) -> Result<(), Failure> {
    let mut runs = vec![demo::run_of("full", first)];
    let mut tickets = first.client.tickets().clone();
    if tickets.is_empty() {
        emit("(no tickets were issued: no resumed connections to compare)\n");
        return Ok(());
    }
    let response = http_ok("hello again from tls13lab\n");
    let later = NOW_MS + 1000;
    for (label, early) in [("resumed", false), ("resumed+0-RTT", true)] {
        let mut one = tls13lab::session::TicketStore::default();
        if let Some(t) = tickets.tickets.pop_back() {
            one.insert(t);
        }
        let mut cfg = (*client_cfg).clone();
        cfg.enable_early_data = early;
        let cfg = Arc::new(cfg);
        let seed = seed + runs.len() as u64;
        let p = demo::request_response(
            cfg,
            server_cfg.clone(),
            seed,
            later,
            request,
            &response,
            one,
        )
        .map_err(|e| Failure::tls(&e, label))?;
        let l = ledger(&p.client_events, later);
        emit(&format!(
            "\n== {label}, seed {seed}\n{}",
            printout(&l, &p.client_events, &p.client_data, &[])
        ));
        runs.push(demo::run_of(label, &p));
    }
    emit(&format!(
        "\n== full vs resumed vs 0-RTT\n{}",
        demo::summary_table(&runs)
    ));
    post_quantum(
        &runs[0],
        seed + runs.len() as u64,
        request,
        (&client_cfg.ech, &server_cfg.ech_keys),
    )
}

/// One more full handshake, post-quantum throughout (X25519MLKEM768 and an ML-DSA-44 chain,
/// `demo::pq_configs`), driven like the first, and its flights beside the first one's: what
/// post-quantum authentication adds to the server's flight. The options above do not apply.
/// `ech`: the first connection's ECH, so that both columns of the flight table have it or not.
fn post_quantum(
    full: &demo::DemoRun,
    seed: u64,
    request: &[u8],
    ech: (&EchMode, &[tls13lab::crypto::ech::EchKeyPair]),
) -> Result<(), Failure> {
    let label = "full PQ";
    let (mut client, mut server) = demo::pq_configs().map_err(|e| Failure::tls(&e, label))?;
    client.ech = ech.0.clone();
    server.ech_keys = ech.1.to_vec();
    let mut p = Pair::new(Arc::new(client), Arc::new(server), seed, NOW_MS)
        .map_err(|e| Failure::tls(&e, label))?;
    converse(&mut p, request).map_err(|(e, during)| demo_failure(&p, &e, during))?;
    let l = ledger(&p.client_events, NOW_MS);
    emit(&format!(
        "\n== {label}, seed {seed}: X25519MLKEM768, ML-DSA-44 root → leaf (tls13lab cert seed {}), \
         the defaults otherwise\n{}",
        demo::PQ_CHAIN_SEED,
        printout(&l, &p.client_events, &p.client_data, &[])
    ));
    let pq = demo::run_of(label, &p);
    let name = |r: &demo::DemoRun| {
        r.ledger.negotiated.as_ref().map_or("?".into(), |n| {
            let g = n.group.map_or("psk_ke".into(), |g| g.to_string());
            let s = n.signature_scheme.map_or("-".into(), |s| s.to_string());
            format!("{g}, {s}")
        })
    };
    emit(&format!(
        "\n== bytes per flight: full ({}) vs full PQ ({})\n{}",
        name(full),
        name(&pq),
        demo::flight_table(full, &pq)
    ));
    Ok(())
}

/// Both endpoints live here, so say which one sent the alert.
fn demo_failure(p: &Pair, e: &Error, during: &str) -> Failure {
    use tls13lab::events::Direction;
    use tls13lab::messages::{AlertDescription, AlertLevel};
    let sent = |events: &[Event], dir: Direction| {
        events.iter().find_map(|ev| match ev {
            Event::Alert {
                direction,
                level,
                description,
            } if *direction == dir
                && (*level == AlertLevel::Fatal
                    || *description != AlertDescription::CloseNotify) =>
            {
                Some(*description)
            }
            _ => None,
        })
    };
    let who = sent(&p.server_events, Direction::ServerToClient)
        .map(|a| ("server", a))
        .or_else(|| sent(&p.client_events, Direction::ClientToServer).map(|a| ("client", a)));
    match who {
        Some((who, alert)) => {
            Failure::Tls(format!("{during} failed: {who} sent alert {alert} ({e})"))
        }
        None => Failure::tls(e, during),
    }
}

/// Handshake, request, the server's page, close — like the TCP client and server, in memory.
fn converse(p: &mut Pair, request: &[u8]) -> Result<(), (Error, &'static str)> {
    let hs = |e| (e, "handshake");
    let conn = |e| (e, "connection");
    p.client.start(p.now_ms).map_err(hs)?;
    let early = p.client.send(request).is_ok();
    let mut sent = early;
    for _ in 0..16 {
        if p.client.is_connected() && p.server.is_connected() {
            break;
        }
        let moved = p.client_to_server().map_err(hs)? + p.server_to_client().map_err(hs)?;
        // Like a real client, send the request together with our Finished.
        if p.client.is_connected() && !sent {
            p.client.send(request).map_err(conn)?;
            sent = true;
        }
        if moved == 0 {
            break;
        }
    }
    if !(p.client.is_connected() && p.server.is_connected()) {
        return Err((
            Error::InvalidState("handshake did not complete"),
            "handshake",
        ));
    }
    let rejected = p
        .client_events
        .iter()
        .any(|e| matches!(e, Event::EarlyDataRejected { .. }));
    if !sent || rejected {
        p.client.send(request).map_err(conn)?;
    }
    p.exchange().map_err(conn)?;
    let body = page(
        "in-memory connection",
        &p.server_events,
        &p.server_early,
        &p.server_data,
        &[],
    );
    p.server.send(&http_ok(&body)).map_err(conn)?;
    p.server.close();
    p.exchange().map_err(conn)?;
    p.client.close();
    p.settle().map_err(conn)?;
    Ok(())
}

/// A client certificate for `--request-client-cert` / `--require-client-cert`.
fn client_identity(seed: u64) -> Result<CertifiedKey, Failure> {
    let mut rng = SeededRandom::from_seed(seed ^ 0xc11e_0001);
    let key = SigningKey::generate_p256(&mut rng);
    let now_s = NOW_MS / 1000;
    let cert = self_signed_p256(
        &["client.tls13lab.test"],
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

/// The demo's first connection, for `--svg`.
fn demo_connection(events: &[Event], seed: u64) -> super::instruments::Connection<'_> {
    super::instruments::Connection {
        side: Side::Client,
        events,
        started_ms: NOW_MS,
        title: format!("tls13lab demo (in memory, seed {seed})"),
        real_clock: false,
        addrs: None,
    }
}
