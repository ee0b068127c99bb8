//! In-memory connections: a client and a server wired back to back with a simulated clock.
//! The CLI demo, the tests and the benchmarks all drive connections through [`Pair`].

use std::sync::Arc;

use crate::certgen::self_signed_p256;
use tls13lab::client::Client;
use tls13lab::config::{CertifiedKey, ClientConfig, ServerConfig, ServerVerification};
use tls13lab::connection::{Connection, Role};
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::error::Error;
use tls13lab::events::{Event, Observe};
use tls13lab::ledger::Ledger;
use tls13lab::server::Server;
use tls13lab::session::TicketStore;

/// The demo's clock: 2026-01-01T00:00:00Z, fixed so every run prints the same bytes.
pub const NOW_MS: u64 = 1_767_225_600_000;

/// A server configuration with a fresh self-signed ECDSA P-256 certificate for `localhost`, made
/// deterministically from `seed` and valid for a year around `now_ms`. Returns it with the
/// certificate's DER (to use as the client's root).
pub fn server_config(seed: u64, now_ms: u64) -> Result<(ServerConfig, Vec<u8>), Error> {
    let mut rng = SeededRandom::from_seed(seed ^ 0x5eed_cafe);
    let key = SigningKey::generate_p256(&mut rng);
    let now_s = now_ms / 1000;
    let cert = self_signed_p256(&["localhost"], &key, now_s - 86_400, now_s + 365 * 86_400)
        .map_err(|e| Error::Config(e.to_string()))?;
    let ck = CertifiedKey {
        chain: vec![cert.clone()],
        key: Arc::new(key),
    };
    let mut config = ServerConfig::new(ck);
    // The demo's fixtures are the research tools': they observe everything, secrets included.
    config.observe = Observe::ALL_WITH_SECRETS;
    Ok((config, cert))
}

/// A client identity: a fresh self-signed ECDSA P-256 certificate for `client.tls13lab.test`,
/// made deterministically from `seed` like [`server_config`]'s. Returns it with the
/// certificate's DER (the root a server that asks for it trusts).
pub fn client_identity(seed: u64, now_ms: u64) -> Result<(CertifiedKey, Vec<u8>), Error> {
    let mut rng = SeededRandom::from_seed(seed ^ 0xc11e_0001);
    let key = SigningKey::generate_p256(&mut rng);
    let now_s = now_ms / 1000;
    let cert = self_signed_p256(
        &["client.tls13lab.test"],
        &key,
        now_s - 86_400,
        now_s + 365 * 86_400,
    )
    .map_err(|e| Error::Config(e.to_string()))?;
    let ck = CertifiedKey {
        chain: vec![cert.clone()],
        key: Arc::new(key),
    };
    Ok((ck, cert))
}

/// A client and a server connected in memory.
pub struct Pair {
    /// The client.
    pub client: Client,
    /// The server.
    pub server: Server,
    /// The simulated clock (Unix ms).
    pub now_ms: u64,
    /// Every event the client reported.
    pub client_events: Vec<Event>,
    /// Every event the server reported.
    pub server_events: Vec<Event>,
    /// Every byte of application data the client read.
    pub client_data: Vec<u8>,
    /// Every byte of 0-RTT data the server read.
    pub server_early: Vec<u8>,
    /// Every byte of application data the server read.
    pub server_data: Vec<u8>,
    client_has_resent: bool,
}

/// Feeds all of `bytes` to `conn`, reading what it receives into `early` (0-RTT data) and
/// `data` (application data) whenever its buffers fill: how an in-memory driver that keeps
/// everything takes the back-pressure of [`Connection::receive`]. Returns the first error.
pub fn deliver<R: Role>(
    conn: &mut Connection<R>,
    bytes: &[u8],
    now_ms: u64,
    early: &mut Vec<u8>,
    data: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut rest = bytes;
    loop {
        let r = conn.receive(rest, now_ms);
        early.extend_from_slice(&conn.read_all_early());
        data.extend_from_slice(&conn.read_all());
        let n = r?;
        rest = &rest[n..];
        if rest.is_empty() {
            return Ok(());
        }
    }
}

impl Pair {
    /// A pair whose randomness comes from `seed` (client and server draw from separate streams).
    pub fn new(
        client: Arc<ClientConfig>,
        server: Arc<ServerConfig>,
        seed: u64,
        now_ms: u64,
    ) -> Result<Pair, Error> {
        Pair::with_tickets(client, server, seed, now_ms, TicketStore::default())
    }

    /// Like [`Pair::new`], with tickets for the client to resume with.
    pub fn with_tickets(
        client: Arc<ClientConfig>,
        server: Arc<ServerConfig>,
        seed: u64,
        now_ms: u64,
        tickets: TicketStore,
    ) -> Result<Pair, Error> {
        let client = Client::new(
            client,
            Box::new(SeededRandom::from_seed(seed.wrapping_mul(2))),
        )?
        .with_tickets(tickets);
        let server = Server::new(
            server,
            Box::new(SeededRandom::from_seed(seed.wrapping_mul(2) + 1)),
        )?;
        Ok(Pair {
            client,
            server,
            now_ms,
            client_events: Vec::new(),
            server_events: Vec::new(),
            client_data: Vec::new(),
            server_early: Vec::new(),
            server_data: Vec::new(),
            client_has_resent: false,
        })
    }

    /// Deliver what the client has queued to the server; returns the bytes moved.
    pub fn client_to_server(&mut self) -> Result<usize, Error> {
        let c = self.client.take_output();
        if !c.is_empty() {
            let r = deliver(
                &mut self.server,
                &c,
                self.now_ms,
                &mut self.server_early,
                &mut self.server_data,
            );
            self.collect();
            r?;
        }
        Ok(c.len())
    }

    /// Deliver what the server has queued to the client; returns the bytes moved.
    pub fn server_to_client(&mut self) -> Result<usize, Error> {
        let s = self.server.take_output();
        if !s.is_empty() {
            let r = deliver(
                &mut self.client,
                &s,
                self.now_ms,
                &mut Vec::new(),
                &mut self.client_data,
            );
            self.collect();
            r?;
        }
        Ok(s.len())
    }

    /// Move pending bytes client→server then server→client once; returns the bytes moved.
    pub fn exchange(&mut self) -> Result<usize, Error> {
        let moved = self.client_to_server()? + self.server_to_client()?;
        self.collect();
        Ok(moved)
    }

    /// Start the client and exchange bytes until both sides are connected (or stuck).
    pub fn handshake(&mut self) -> Result<(), Error> {
        self.client.start(self.now_ms)?;
        for _ in 0..16 {
            if self.client.is_connected() && self.server.is_connected() {
                return Ok(());
            }
            if self.exchange()? == 0 {
                break;
            }
        }
        if self.client.is_connected() && self.server.is_connected() {
            Ok(())
        } else {
            Err(Error::InvalidState("handshake did not complete"))
        }
    }

    /// Exchange until no bytes move.
    pub fn settle(&mut self) -> Result<(), Error> {
        for _ in 0..64 {
            if self.exchange()? == 0 {
                return Ok(());
            }
        }
        Ok(())
    }

    fn collect(&mut self) {
        self.client_events.extend(self.client.events());
        self.server_events.extend(self.server.events());
    }

    /// 0-RTT and application data the server received so far, 0-RTT first.
    pub fn server_received(&self) -> Vec<u8> {
        [self.server_early.as_slice(), &self.server_data].concat()
    }

    /// Application data the client received so far.
    pub fn client_received(&self) -> Vec<u8> {
        self.client_data.clone()
    }

    /// The client's ledger (it sees every record of the connection).
    pub fn ledger(&self) -> Ledger {
        Ledger::from_events(&self.client_events)
    }
}

/// The seed of the demo's ML-DSA-44 chain: fixed, so its bytes do not move with `--seed`.
pub const PQ_CHAIN_SEED: u64 = 44;

/// A whole handshake post-quantum: a server holding a [`crate::certgen::chain`] ML-DSA-44
/// root → leaf chain for `localhost` (seeded with [`PQ_CHAIN_SEED`]) and a client trusting that
/// root, both with X25519MLKEM768 alone (draft-ietf-tls-ecdhe-mlkem for the key exchange,
/// draft-ietf-tls-mldsa for CertificateVerify); everything else is [`server_config`]'s and
/// [`client_config`]'s.
pub fn pq_configs() -> Result<(ClientConfig, ServerConfig), Error> {
    use crate::certgen::{chain, ChainSpec, KeyAlg};
    use tls13lab::messages::enums::NamedGroup;
    let spec = ChainSpec {
        sans: vec!["localhost".into()],
        ..ChainSpec::new(vec![KeyAlg::MlDsa44, KeyAlg::MlDsa44])
    };
    let made = chain(&spec, PQ_CHAIN_SEED).map_err(|e| Error::Config(e.to_string()))?;
    let key = SigningKey::from_pkcs8_der(&made.key_pkcs8_der)
        .map_err(|e| Error::Config(e.to_string()))?;
    let mut server = ServerConfig::new(CertifiedKey {
        chain: made.certs_der,
        key: Arc::new(key),
    });
    server.observe = Observe::ALL_WITH_SECRETS;
    server.groups = vec![NamedGroup::X25519MLKEM768];
    let mut client = client_config(made.root_der);
    client.groups = vec![NamedGroup::X25519MLKEM768];
    client.key_shares = vec![NamedGroup::X25519MLKEM768];
    Ok((client, server))
}

/// A client configuration that trusts `root`, names `localhost` and, like
/// [`server_config`], observes everything, secrets included.
pub fn client_config(root: Vec<u8>) -> ClientConfig {
    let mut config = ClientConfig::new(vec![root]);
    config.server_name = Some("localhost".into());
    config.observe = Observe::ALL_WITH_SECRETS;
    config
}

/// The benchmark setup (`benches/`, `tls13lab bench`, docs/performance.md): one group, one suite,
/// ECDSA P-256 only, nothing observed, no compatibility CCS, stateful single-use tickets, 0-RTT
/// allowed when `zero_rtt`. The server issues no tickets; a copy sharing its session cache can
/// mint them.
pub fn bench_configs(
    cert_der: Vec<u8>,
    key: Arc<dyn tls13lab::config::Signer>,
    group: tls13lab::messages::enums::NamedGroup,
    suite: tls13lab::messages::enums::CipherSuite,
    zero_rtt: bool,
) -> (ClientConfig, ServerConfig) {
    use tls13lab::messages::enums::SignatureScheme;
    let mut client = ClientConfig::default();
    client.cipher_suites = vec![suite];
    client.groups = vec![group];
    client.key_shares = vec![group];
    client.signature_schemes = vec![SignatureScheme::ecdsa_secp256r1_sha256];
    client.server_name = Some("localhost".into());
    client.verification = ServerVerification::Roots(vec![cert_der.clone()]);
    client.observe = tls13lab::events::Observe::NONE;
    client.enable_early_data = zero_rtt;
    let mut server = ServerConfig::new(CertifiedKey {
        chain: vec![cert_der],
        key,
    });
    server.cipher_suites = vec![suite];
    server.groups = vec![group];
    server.signature_schemes = vec![SignatureScheme::ecdsa_secp256r1_sha256];
    server.observe = tls13lab::events::Observe::NONE;
    server.compat_mode = false;
    server.ticket_mode = tls13lab::config::TicketMode::Stateful;
    server.max_early_data = if zero_rtt { 16384 } else { 0 };
    server.tickets = 0;
    (client, server)
}

/// Run one request/response connection in memory and return the pair after close.
///
/// Each side acts as early as the protocol allows, as a real application would: the client sends
/// its request as 0-RTT data when a ticket permits, otherwise right after its Finished; the server
/// answers as soon as the request has arrived. The ledger then shows the true number of flights.
pub fn request_response(
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    seed: u64,
    now_ms: u64,
    request: &[u8],
    response: &[u8],
    tickets: TicketStore,
) -> Result<Pair, Error> {
    let mut p = Pair::with_tickets(client, server, seed, now_ms, tickets)?;
    p.client.start(p.now_ms)?;
    let mut request_sent = p.client.send(request).is_ok();
    let mut responded = false;
    let mut rejected = false;
    for _ in 0..32 {
        let moved = p.client_to_server()?;
        if !responded && p.server_received().len() >= request.len() {
            p.server.send(response)?;
            responded = true;
        }
        let moved = moved + p.server_to_client()?;
        // Rejected 0-RTT data comes back to the application (on the data path, recorded or
        // not), which sends it again.
        rejected |= !p.client.take_rejected_early_data().is_empty();
        if p.client.is_connected() && (!request_sent || rejected) && !p.client_has_resent {
            p.client.send(request)?;
            p.client_has_resent = rejected;
            request_sent = true;
        }
        if p.client_received().len() >= response.len() {
            break;
        }
        if moved == 0 && !p.client.wants_write() {
            break;
        }
    }
    p.client.close();
    p.client_to_server()?;
    p.server.close();
    p.settle()?;
    Ok(p)
}

/// One row of the demo's comparison.
#[derive(Debug, Clone)]
pub struct DemoRun {
    /// What kind of connection.
    pub label: &'static str,
    /// Its ledger (client view).
    pub ledger: Ledger,
    /// Whether the server sent a Certificate.
    pub certificate_sent: bool,
    /// What the client received.
    pub response: Vec<u8>,
    /// Every event the client reported.
    pub events: Vec<Event>,
}

/// Full, resumed and resumed-with-0-RTT connections between the same client and server
/// configurations (the tickets of the first connection feed the others).
pub fn three_connections(
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    seed: u64,
    now_ms: u64,
    request: &[u8],
    response: &[u8],
) -> Result<Vec<DemoRun>, Error> {
    let mut runs = Vec::new();
    let mut no_early = (*client).clone();
    no_early.enable_early_data = false;
    let no_early = Arc::new(no_early);
    let first = request_response(
        client.clone(),
        server.clone(),
        seed,
        now_ms,
        request,
        response,
        TicketStore::default(),
    )?;
    let mut tickets = first.client.tickets().clone();
    runs.push(run_of("full", &first));
    let mut t1 = TicketStore::default();
    let mut t2 = TicketStore::default();
    // Tickets are single-use: give each later connection its own.
    if let Some(t) = tickets.tickets.pop_back() {
        t1.insert(t);
    }
    if let Some(t) = tickets.tickets.pop_back() {
        t2.insert(t);
    }
    let later = now_ms + 1000;
    let resumed = request_response(
        no_early,
        server.clone(),
        seed + 1,
        later,
        request,
        response,
        t1,
    )?;
    runs.push(run_of("resumed", &resumed));
    let zero_rtt = request_response(client, server, seed + 2, later, request, response, t2)?;
    runs.push(run_of("resumed+0-RTT", &zero_rtt));
    Ok(runs)
}

/// Summarise a finished connection for [`summary_table`].
pub fn run_of(label: &'static str, p: &Pair) -> DemoRun {
    let ledger = p.ledger();
    let certificate_sent = ledger.records.iter().any(|r| {
        r.messages
            .iter()
            .any(|m| m.typ == tls13lab::messages::enums::HandshakeType::Certificate)
    });
    DemoRun {
        label,
        ledger,
        certificate_sent,
        response: p.client_received(),
        events: p.client_events.clone(),
    }
}

/// The side-by-side summary table of [`three_connections`].
pub fn summary_table(runs: &[DemoRun]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<14} {:>9} {:>9} {:>9} {:>9} {:>5} {:>7} {:>10}  handshake messages per flight",
        "connection", "C→S B", "C→S rec", "S→C B", "S→C rec", "cert", "RTs*", "early data"
    );
    for r in runs {
        let t = &r.ledger.totals;
        let early = match r.ledger.early_data() {
            Some(tls13lab::events::EarlyDataStatus::Accepted) => "accepted",
            Some(tls13lab::events::EarlyDataStatus::Rejected) => "rejected",
            _ => "not sent",
        };
        let flights: Vec<String> = r
            .ledger
            .messages_per_flight()
            .into_iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(d, m)| {
                let names: Vec<String> = m.iter().map(|t| t.to_string()).collect();
                format!("{} {}", d.arrow(), names.join(","))
            })
            .collect();
        let _ = writeln!(
            s,
            "{:<14} {:>9} {:>9} {:>9} {:>9} {:>5} {:>7} {:>10}  {}",
            r.label,
            t.client_to_server.bytes,
            t.client_to_server.records,
            t.server_to_client.bytes,
            t.server_to_client.records,
            if r.certificate_sent { "yes" } else { "no" },
            r.ledger
                .round_trips_to_first_response()
                .map_or("-".into(), |n| n.to_string()),
            early,
            flights.join(" | ")
        );
    }
    s.push_str("* round trips from the first ClientHello until the first response byte (TCP's own not included)\n");
    s
}

/// Wire bytes per flight of two connections side by side (the demo's full handshake and its
/// post-quantum one), with the handshake messages of `b`'s flights and their sizes: where the
/// larger keys and signatures land. Flights are matched by number, so both connections should
/// have been driven the same way.
pub fn flight_table(a: &DemoRun, b: &DemoRun) -> String {
    use std::fmt::Write as _;
    type Flight = (usize, tls13lab::events::Direction, usize, Vec<String>);
    let flights = |l: &Ledger| -> Vec<Flight> {
        let mut out: Vec<Flight> = Vec::new();
        for r in &l.records {
            let msgs = r
                .messages
                .iter()
                .filter(|m| m.offset == 0)
                .map(|m| format!("{}({})", m.typ, m.len));
            match out.last_mut() {
                Some((f, _, bytes, v)) if *f == r.flight => {
                    *bytes += r.record.wire_len;
                    v.extend(msgs);
                }
                _ => out.push((
                    r.flight,
                    r.record.direction,
                    r.record.wire_len,
                    msgs.collect(),
                )),
            }
        }
        out
    };
    let (fa, fb) = (flights(&a.ledger), flights(&b.ledger));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<6} {:<4} {:>12} {:>12}  handshake messages ({}, bytes with header)",
        "flight", "dir", a.label, b.label, b.label
    );
    for i in 0..fa.len().max(fb.len()) {
        let bytes = |f: &[Flight]| f.get(i).map_or("-".into(), |f| f.2.to_string());
        let (dir, msgs) = match fb.get(i).or(fa.get(i)) {
            Some(f) => (
                f.1.arrow(),
                fb.get(i).map_or(String::new(), |f| f.3.join(" ")),
            ),
            None => continue,
        };
        let _ = writeln!(
            s,
            "{:<6} {:<4} {:>12} {:>12}  {}",
            i + 1,
            dir,
            bytes(&fa),
            bytes(&fb),
            msgs
        );
    }
    let total = |r: &DemoRun| {
        let t = &r.ledger.totals;
        t.client_to_server.bytes + t.server_to_client.bytes
    };
    let _ = writeln!(
        s,
        "{:<6} {:<4} {:>12} {:>12}",
        "total",
        "",
        total(a),
        total(b)
    );
    s
}
