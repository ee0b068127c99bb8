//! Interop with rustls 0.23 (aws-lc-rs provider), in process (issue 4, item 4).
//!
//! rustls' `ClientConnection`/`ServerConnection` and our `Client`/`Server` exchange bytes through
//! buffers: no sockets, no threads, every step deterministic on our side. The matrix is the
//! OpenSSL one wherever rustls has the feature: groups × suites in both roles, resumption
//! (stateless and stateful tickets on both sides), 0-RTT (rustls accepts it only with its stateful
//! tickets), HelloRetryRequest, client authentication and KeyUpdate. Each cell asserts what rustls
//! reports (handshake kind, group, suite, exporter, early data) and what our events report.
//! rustls' ECH client (RFC 9849; rustls has no ECH server) runs against our server: accepted for
//! each HPKE suite, with HRR and a post-quantum share, rejected and retried, and GREASE.

mod interop_support;

use std::io::{Read, Write};
use std::sync::Arc;

use interop_support::*;
use rustls::client::{EchConfig, EchGreaseConfig, EchStatus as RustlsEch};
use rustls::crypto::aws_lc_rs as aws;
use rustls::crypto::aws_lc_rs::hpke as rustls_hpke;
use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::pki_types::{
    CertificateDer, EchConfigListBytes, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName,
};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConnection, ConnectionCommon, HandshakeKind, RootCertStore, ServerConnection};
use tls13lab::config::{ClientAuth, TicketMode};
use tls13lab::crypto::ech::{EchKeyPair, EchKeyParams};
use tls13lab::crypto::hpke::Kem;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::events::{Direction, EarlyDataStatus, EchEvent, EchStatus, Event, Negotiated};
use tls13lab::messages::ech::HpkeSymmetricCipherSuite;
use tls13lab::messages::enums::{
    AlertDescription, CipherSuite, HandshakeType, HpkeAeadId, HpkeKdfId, NamedGroup,
    SignatureScheme,
};
use tls13lab::session::TicketStore;
use tls13lab::{
    Client, ClientConfig, ClientSide, Connection, Role, Server, ServerConfig, ServerSide,
    ServerVerification,
};

const LABEL: &[u8] = b"EXPORTER-tls13lab-rustls";
const CONTEXT: &[u8] = b"interop";

// ----------------------------------------------------------------------------- rustls side

fn rustls_group(g: NamedGroup) -> Option<&'static dyn SupportedKxGroup> {
    use aws::kx_group as k;
    Some(match g {
        NamedGroup::X25519 => k::X25519,
        NamedGroup::secp256r1 => k::SECP256R1,
        NamedGroup::secp384r1 => k::SECP384R1,
        NamedGroup::X25519MLKEM768 => k::X25519MLKEM768,
        NamedGroup::SecP256r1MLKEM768 => k::SECP256R1MLKEM768,
        NamedGroup::MLKEM768 => k::MLKEM768,
        NamedGroup::MLKEM1024 => k::MLKEM1024,
        _ => return None,
    })
}

fn rustls_suite(s: CipherSuite) -> rustls::SupportedCipherSuite {
    use aws::cipher_suite as c;
    match s {
        CipherSuite::TLS_AES_128_GCM_SHA256 => c::TLS13_AES_128_GCM_SHA256,
        CipherSuite::TLS_AES_256_GCM_SHA384 => c::TLS13_AES_256_GCM_SHA384,
        CipherSuite::TLS_CHACHA20_POLY1305_SHA256 => c::TLS13_CHACHA20_POLY1305_SHA256,
        other => panic!("rustls has no {other}"),
    }
}

fn provider(groups: &[NamedGroup], suites: &[CipherSuite]) -> Arc<CryptoProvider> {
    let mut p = aws::default_provider();
    p.kx_groups = groups.iter().map(|g| rustls_group(*g).unwrap()).collect();
    p.cipher_suites = suites.iter().map(|s| rustls_suite(*s)).collect();
    Arc::new(p)
}

/// Certificates and keys shared by every cell (deterministic).
struct Ids {
    server: Identity,
    client: Identity,
}

fn ids() -> &'static Ids {
    static IDS: std::sync::OnceLock<Ids> = std::sync::OnceLock::new();
    IDS.get_or_init(|| Ids {
        server: Identity::new("localhost", 21),
        client: Identity::new("client.tls13lab.test", 22),
    })
}

fn roots(der: &[u8]) -> RootCertStore {
    let mut r = RootCertStore::empty();
    r.add(CertificateDer::from(der.to_vec())).unwrap();
    r
}

fn key_of(id: &Identity) -> PrivateKeyDer<'static> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(id.key_der.clone()))
}

fn rustls_client_config(
    groups: &[NamedGroup],
    suites: &[CipherSuite],
    client_auth: bool,
) -> rustls::ClientConfig {
    let b = rustls::ClientConfig::builder_with_provider(provider(groups, suites))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots(&ids().server.cert_der));
    let mut c = if client_auth {
        b.with_client_auth_cert(
            vec![CertificateDer::from(ids().client.cert_der.clone())],
            key_of(&ids().client),
        )
        .unwrap()
    } else {
        b.with_no_client_auth()
    };
    c.enable_early_data = true;
    c
}

fn rustls_server_config(
    groups: &[NamedGroup],
    suites: &[CipherSuite],
    client_auth: bool,
) -> rustls::ServerConfig {
    let p = provider(groups, suites);
    let b = rustls::ServerConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap();
    let b = if client_auth {
        b.with_client_cert_verifier(
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots(&ids().client.cert_der)), p)
                .build()
                .unwrap(),
        )
    } else {
        b.with_no_client_auth()
    };
    b.with_single_cert(
        vec![CertificateDer::from(ids().server.cert_der.clone())],
        key_of(&ids().server),
    )
    .unwrap()
}

fn localhost() -> ServerName<'static> {
    ServerName::try_from("localhost").unwrap()
}

/// Everything rustls wants to send.
fn rustls_out<D>(c: &mut ConnectionCommon<D>) -> Vec<u8> {
    let mut v = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut v).unwrap();
    }
    v
}

/// Feed rustls all of `b`, processing as it goes; returns the plaintext it yielded (drained as
/// it arrives: rustls buffers at most 16 KiB of received plaintext).
fn rustls_in<D>(c: &mut ConnectionCommon<D>, mut b: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    while !b.is_empty() {
        c.read_tls(&mut b).unwrap();
        if let Err(e) = c.process_new_packets() {
            panic!("rustls rejected our bytes: {e}");
        }
        plain.extend(rustls_plaintext(c));
    }
    plain
}

/// Plaintext rustls has received so far.
fn rustls_plaintext<D>(c: &mut ConnectionCommon<D>) -> Vec<u8> {
    let mut v = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match c.reader().read(&mut buf) {
            Ok(0) | Err(_) => return v,
            Ok(n) => v.extend_from_slice(&buf[..n]),
        }
    }
}

fn rustls_export<D>(c: &ConnectionCommon<D>) -> Vec<u8> {
    c.export_keying_material(vec![0u8; 32], LABEL, Some(CONTEXT))
        .unwrap()
}

fn rustls_negotiated<D>(c: &ConnectionCommon<D>) -> (CipherSuite, NamedGroup) {
    (
        CipherSuite::from(u16::from(c.negotiated_cipher_suite().unwrap().suite())),
        NamedGroup::from(u16::from(c.negotiated_key_exchange_group().unwrap().name())),
    )
}

// ------------------------------------------------------------------------------ the pairs

/// A rustls connection of either side.
trait Rustls {
    type Data;
    fn common(&mut self) -> &mut ConnectionCommon<Self::Data>;
    fn common_ref(&self) -> &ConnectionCommon<Self::Data>;
    /// 0-RTT data received so far (server side).
    fn take_early(&mut self) -> Vec<u8> {
        Vec::new()
    }
}

impl Rustls for ServerConnection {
    type Data = rustls::server::ServerConnectionData;
    fn common(&mut self) -> &mut ConnectionCommon<Self::Data> {
        self
    }
    fn common_ref(&self) -> &ConnectionCommon<Self::Data> {
        self
    }
    fn take_early(&mut self) -> Vec<u8> {
        let mut v = Vec::new();
        if let Some(mut ed) = self.early_data() {
            ed.read_to_end(&mut v).unwrap();
        }
        v
    }
}

impl Rustls for ClientConnection {
    type Data = rustls::client::ClientConnectionData;
    fn common(&mut self) -> &mut ConnectionCommon<Self::Data> {
        self
    }
    fn common_ref(&self) -> &ConnectionCommon<Self::Data> {
        self
    }
}

/// Our endpoint and a rustls connection joined by buffers.
struct Pair<O: Role, R: Rustls> {
    ours: Connection<O>,
    theirs: R,
    events: Vec<Event>,
    /// Application data rustls received.
    theirs_got: Vec<u8>,
    /// 0-RTT data rustls received (server side).
    theirs_early: Vec<u8>,
    /// 0-RTT data (our server) and application data our side read.
    ours_early: Vec<u8>,
    ours_data: Vec<u8>,
}

impl<O: Role, R: Rustls> Pair<O, R> {
    fn new(ours: Connection<O>, theirs: R) -> Self {
        Pair {
            ours,
            theirs,
            events: Vec::new(),
            theirs_got: Vec::new(),
            theirs_early: Vec::new(),
            ours_early: Vec::new(),
            ours_data: Vec::new(),
        }
    }

    /// Move bytes both ways once; returns how many moved.
    fn step(&mut self) -> usize {
        let a = self.ours.take_output();
        self.events.extend(self.ours.events());
        if !a.is_empty() {
            let got = rustls_in(self.theirs.common(), &a);
            self.theirs_got.extend(got);
            let early = self.theirs.take_early();
            self.theirs_early.extend(early);
        }
        let b = rustls_out(self.theirs.common());
        if !b.is_empty() {
            let r = lab::demo::deliver(
                &mut self.ours,
                &b,
                now_ms(),
                &mut self.ours_early,
                &mut self.ours_data,
            );
            if let Err(e) = r {
                self.events.extend(self.ours.events());
                panic!("our side rejected rustls' bytes: {e} ({e:?})");
            }
        }
        self.events.extend(self.ours.events());
        a.len() + b.len()
    }

    /// Exchange until nothing moves.
    fn settle(&mut self) {
        for _ in 0..64 {
            if self.step() == 0 {
                return;
            }
        }
        panic!("the connection never went quiet");
    }

    fn connected(&self) -> bool {
        self.events.iter().any(|e| matches!(e, Event::Connected(_)))
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

    fn ours_got(&self) -> Vec<u8> {
        [self.ours_early.as_slice(), &self.ours_data].concat()
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

    fn server_sent(&self, typ: HandshakeType) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, Event::Handshake(h) if h.typ == typ && h.direction == Direction::ServerToClient))
            .count()
    }

    /// Data both ways; `send` sends on our side.
    fn ping_pong(&mut self, tag: &str, send: impl Fn(&mut Connection<O>, &[u8])) {
        let ping = format!("ping{tag}-from-tls13lab");
        send(&mut self.ours, ping.as_bytes());
        self.settle();
        assert!(
            contains(&self.theirs_got, ping.as_bytes()),
            "rustls did not get {ping}"
        );
        let pong = format!("pong{tag}-from-rustls");
        self.theirs
            .common()
            .writer()
            .write_all(pong.as_bytes())
            .unwrap();
        self.settle();
        assert!(
            contains(&self.ours_got(), pong.as_bytes()),
            "we did not get {pong}"
        );
    }

    /// `data` each way with our side sealing and opening records in its own buffers
    /// (`seal_in_place`, `open_in_place`); rustls' bytes reach us in 1000-byte reads, as from a
    /// socket. Returns what each side received.
    fn bulk_in_place(&mut self, data: &[u8]) -> (Vec<u8>, Vec<u8>) {
        use tls13lab::record::{HEADER_LEN, MAX_RECORD_LEN};
        let mut buf = vec![0u8; MAX_RECORD_LEN];
        let mut theirs = Vec::new();
        for piece in data.chunks(16 * 1024) {
            buf[HEADER_LEN..HEADER_LEN + piece.len()].copy_from_slice(piece);
            let n = self.ours.seal_in_place(&mut buf, piece.len()).unwrap();
            theirs.extend(rustls_in(self.theirs.common(), &buf[..n]));
        }
        let (mut pending, mut ours) = (Vec::new(), Vec::new());
        // rustls buffers at most 64 KiB of unsent plaintext: write in pieces.
        for piece in data.chunks(16 * 1024) {
            self.theirs.common().writer().write_all(piece).unwrap();
            for read in rustls_out(self.theirs.common()).chunks(1000) {
                let got = open_all_in_place(&mut self.ours, &mut pending, read, now_ms());
                ours.extend(got.expect("our side opens rustls' records in place"));
            }
        }
        assert!(pending.is_empty(), "a record was left unread");
        self.events.extend(self.ours.events());
        assert!(
            self.ours.readable() <= 100,
            "bulk data was handed over in place, not buffered for read"
        );
        (ours, theirs)
    }

    fn handshake(
        &mut self,
        send: impl Fn(&mut Connection<O>, &[u8]),
        export: impl Fn(&mut Connection<O>) -> Vec<u8>,
    ) {
        self.settle();
        assert!(self.connected(), "our side did not complete the handshake");
        assert!(
            !self.theirs.common_ref().is_handshaking(),
            "rustls did not complete the handshake"
        );
        self.ping_pong("1", send);
        let ours = export(&mut self.ours);
        assert_eq!(
            ours,
            rustls_export(self.theirs.common_ref()),
            "exporter differs"
        );
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

type ClientPair = Pair<ClientSide, ServerConnection>;
type ServerPair = Pair<ServerSide, ClientConnection>;

fn our_client_config(
    groups: &[NamedGroup],
    shares: &[NamedGroup],
    suites: &[CipherSuite],
) -> ClientConfig {
    let mut c = ClientConfig::new(vec![ids().server.cert_der.clone()]);
    c.server_name = Some("localhost".into());
    c.groups = groups.to_vec();
    c.key_shares = shares.to_vec();
    c.cipher_suites = suites.to_vec();
    // The cells read share sizes from the KeyShare event: they ask for secrets.
    c.observe = tls13lab::Observe::ALL_WITH_SECRETS;
    c
}

fn our_server_config(groups: &[NamedGroup], suites: &[CipherSuite]) -> ServerConfig {
    let mut c = ServerConfig::new(ids().server.certified_key());
    c.observe = tls13lab::Observe::ALL_WITH_SECRETS;
    c.groups = groups.to_vec();
    c.cipher_suites = suites.to_vec();
    c
}

/// Our client ↔ a rustls server: handshake, data both ways, exporter equal.
fn client_pair(
    config: &ClientConfig,
    seed: u64,
    tickets: TicketStore,
    server: &Arc<rustls::ServerConfig>,
    early: Option<&[u8]>,
) -> ClientPair {
    let mut client = Client::new(
        Arc::new(config.clone()),
        Box::new(SeededRandom::from_seed(seed)),
    )
    .unwrap()
    .with_tickets(tickets);
    client.start(now_ms()).unwrap();
    if let Some(d) = early {
        client.send(d).expect("0-RTT data accepted for sending");
    }
    let mut p = Pair::new(client, ServerConnection::new(server.clone()).unwrap());
    p.handshake(
        |c, d| c.send(d).unwrap(),
        |c| c.export(LABEL, CONTEXT, 32).unwrap(),
    );
    p
}

/// A rustls client ↔ our server.
fn server_pair(
    config: &Arc<ServerConfig>,
    seed: u64,
    client: &Arc<rustls::ClientConfig>,
    early: Option<&[u8]>,
) -> ServerPair {
    let server = Server::new(config.clone(), Box::new(SeededRandom::from_seed(seed))).unwrap();
    let mut conn = ClientConnection::new(client.clone(), localhost()).unwrap();
    if let Some(d) = early {
        conn.early_data()
            .expect("rustls offers 0-RTT with this ticket")
            .write_all(d)
            .unwrap();
    }
    let mut p = Pair::new(server, conn);
    p.handshake(
        |s, d| s.send(d).unwrap(),
        |s| s.export(LABEL, CONTEXT, 32).unwrap(),
    );
    p
}

fn skip_unsupported(groups: &[NamedGroup]) -> Result<(), Skip> {
    for g in groups {
        if rustls_group(*g).is_none() {
            return Err(Skip::NotApplicable(format!("rustls has no {g}")));
        }
        if !we_support(*g) {
            return Err(Skip::Pending(format!(
                "{g} not implemented in tls13lab yet"
            )));
        }
    }
    Ok(())
}

// -------------------------------------------------------------------------- matrix cells

fn our_client_cell(g: NamedGroup, s: CipherSuite) -> CellResult {
    skip_unsupported(&[g])?;
    let server = Arc::new(rustls_server_config(&[g], &[s], false));
    let p = client_pair(
        &our_client_config(&[g], &[g], &[s]),
        1,
        TicketStore::default(),
        &server,
        None,
    );
    let n = p.negotiated();
    assert_eq!((n.suite, n.group), (s, Some(g)));
    assert_eq!(rustls_negotiated(p.theirs.common_ref()), (s, g));
    assert_eq!(p.theirs.handshake_kind(), Some(HandshakeKind::Full));
    Ok(share_sizes(&p.events))
}

fn our_server_cell(g: NamedGroup, s: CipherSuite) -> CellResult {
    skip_unsupported(&[g])?;
    let config = Arc::new(our_server_config(&[g], &[s]));
    let client = Arc::new(rustls_client_config(&[g], &[s], false));
    let p = server_pair(&config, 2, &client, None);
    let n = p.negotiated();
    assert_eq!((n.suite, n.group), (s, Some(g)));
    assert_eq!(rustls_negotiated(p.theirs.common_ref()), (s, g));
    assert_eq!(p.theirs.handshake_kind(), Some(HandshakeKind::Full));
    Ok(share_sizes(&p.events))
}

fn share_sizes(events: &[Event]) -> String {
    let ks = events
        .iter()
        .find_map(|e| match e {
            Event::KeyShare(k) => Some(k),
            _ => None,
        })
        .expect("a KeyShare event");
    let c: usize = ks.components.iter().map(|c| c.client_share.len()).sum();
    let s: usize = ks.components.iter().map(|c| c.server_share.len()).sum();
    format!("{c}/{s}")
}

// ------------------------------------------------------------------------- feature cells

const X: &[NamedGroup] = &[NamedGroup::X25519];

fn resumption_rustls_client() -> CellResult {
    for mode in [TicketMode::Stateless, TicketMode::Stateful] {
        let mut c = our_server_config(X, SUITES);
        c.ticket_mode = mode;
        let config = Arc::new(c);
        let client = Arc::new(rustls_client_config(X, SUITES, false));
        let p = server_pair(&config, 3, &client, None);
        assert_eq!(p.theirs.handshake_kind(), Some(HandshakeKind::Full));
        assert_eq!(p.theirs.tls13_tickets_received(), config.tickets);
        let p = server_pair(&config, 4, &client, None);
        assert_eq!(
            p.theirs.handshake_kind(),
            Some(HandshakeKind::Resumed),
            "{mode:?}"
        );
        let n = p.negotiated();
        assert!(n.resumed && n.signature_scheme.is_none(), "{mode:?}: {n:?}");
        assert_eq!(p.server_sent(HandshakeType::Certificate), 0);
    }
    Ok(String::new())
}

fn resumption_our_client() -> CellResult {
    for stateless in [true, false] {
        let mut sc = rustls_server_config(X, SUITES, false);
        if stateless {
            sc.ticketer = aws::Ticketer::new().unwrap();
        }
        let server = Arc::new(sc);
        let config = our_client_config(X, X, SUITES);
        let p = client_pair(&config, 5, TicketStore::default(), &server, None);
        assert!(!p.negotiated().resumed);
        let tickets = p.ours.tickets().clone();
        assert!(!tickets.is_empty(), "rustls sent no ticket");
        let p = client_pair(&config, 6, tickets, &server, None);
        let n = p.negotiated();
        assert!(n.resumed, "stateless={stateless}: {n:?}");
        assert_eq!(p.theirs.handshake_kind(), Some(HandshakeKind::Resumed));
        assert_eq!(p.server_sent(HandshakeType::Certificate), 0);
    }
    Ok(String::new())
}

fn early_rustls_client() -> CellResult {
    let config = Arc::new(our_server_config(X, SUITES));
    let client = Arc::new(rustls_client_config(X, SUITES, false));
    server_pair(&config, 7, &client, None);
    let early = b"early-data-from-rustls";
    let p = server_pair(&config, 8, &client, Some(early));
    assert!(p.theirs.is_early_data_accepted());
    assert_eq!(p.theirs.handshake_kind(), Some(HandshakeKind::Resumed));
    let n = p.negotiated();
    assert_eq!(n.early_data, EarlyDataStatus::Accepted);
    assert_eq!(p.ours_early, early);
    Ok(String::new())
}

fn early_our_client() -> CellResult {
    // rustls accepts 0-RTT only with its stateful tickets (the default ticket storage).
    let mut sc = rustls_server_config(X, SUITES, false);
    sc.max_early_data_size = 16384;
    let server = Arc::new(sc);
    let config = our_client_config(X, X, SUITES);
    let p = client_pair(&config, 9, TicketStore::default(), &server, None);
    let tickets = p.ours.tickets().clone();
    assert!(
        tickets.tickets.iter().any(|t| t.max_early_data > 0),
        "{tickets:?}"
    );
    let early = b"early-data-from-tls13lab";
    let p = client_pair(&config, 10, tickets, &server, Some(early));
    let n = p.negotiated();
    assert!(n.resumed);
    assert_eq!(n.early_data, EarlyDataStatus::Accepted);
    assert_eq!(p.theirs_early, early);
    Ok(String::new())
}

fn hrr_our_client() -> CellResult {
    let server = Arc::new(rustls_server_config(
        &[NamedGroup::secp256r1],
        SUITES,
        false,
    ));
    let config = our_client_config(&[NamedGroup::X25519, NamedGroup::secp256r1], X, SUITES);
    let p = client_pair(&config, 11, TicketStore::default(), &server, None);
    let n = p.negotiated();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::secp256r1));
    assert_eq!(
        p.theirs.handshake_kind(),
        Some(HandshakeKind::FullWithHelloRetryRequest)
    );
    Ok(String::new())
}

fn hrr_rustls_client() -> CellResult {
    let mut c = our_server_config(&[NamedGroup::secp256r1, NamedGroup::X25519], SUITES);
    c.strict_group_preference = true;
    let config = Arc::new(c);
    // rustls sends a key share for its first group only.
    let client = Arc::new(rustls_client_config(
        &[NamedGroup::X25519, NamedGroup::secp256r1],
        SUITES,
        false,
    ));
    let p = server_pair(&config, 12, &client, None);
    let n = p.negotiated();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::secp256r1));
    assert_eq!(
        p.theirs.handshake_kind(),
        Some(HandshakeKind::FullWithHelloRetryRequest)
    );
    assert_eq!(
        rustls_negotiated(p.theirs.common_ref()).1,
        NamedGroup::secp256r1
    );
    Ok(String::new())
}

fn client_auth_rustls_client() -> CellResult {
    let mut c = our_server_config(X, SUITES);
    c.client_auth = ClientAuth::Required(vec![ids().client.cert_der.clone()]);
    let config = Arc::new(c);
    let client = Arc::new(rustls_client_config(X, SUITES, true));
    let p = server_pair(&config, 13, &client, None);
    assert_eq!(
        p.negotiated().client_signature_scheme,
        Some(SignatureScheme::ecdsa_secp256r1_sha256)
    );
    Ok(String::new())
}

fn client_auth_our_client() -> CellResult {
    let server = Arc::new(rustls_server_config(X, SUITES, true));
    let mut config = our_client_config(X, X, SUITES);
    config.client_cert = Some(ids().client.certified_key());
    let p = client_pair(&config, 14, TicketStore::default(), &server, None);
    assert_eq!(
        p.negotiated().client_signature_scheme,
        Some(SignatureScheme::ecdsa_secp256r1_sha256)
    );
    let peer = p
        .theirs
        .peer_certificates()
        .expect("rustls saw our certificate");
    assert_eq!(peer[0].as_ref(), ids().client.cert_der.as_slice());
    Ok(String::new())
}

fn hrr_pq_our_client() -> CellResult {
    skip_unsupported(&[NamedGroup::X25519MLKEM768])?;
    let server = Arc::new(rustls_server_config(
        &[NamedGroup::X25519MLKEM768],
        SUITES,
        false,
    ));
    let config = our_client_config(&[NamedGroup::X25519, NamedGroup::X25519MLKEM768], X, SUITES);
    let p = client_pair(&config, 17, TicketStore::default(), &server, None);
    let n = p.negotiated();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::X25519MLKEM768));
    assert_eq!(
        p.theirs.handshake_kind(),
        Some(HandshakeKind::FullWithHelloRetryRequest)
    );
    assert_eq!(
        rustls_negotiated(p.theirs.common_ref()).1,
        NamedGroup::X25519MLKEM768
    );
    Ok(String::new())
}

fn hrr_pq_rustls_client() -> CellResult {
    let pq = [NamedGroup::X25519MLKEM768, NamedGroup::SecP256r1MLKEM768];
    skip_unsupported(&pq)?;
    let mut c = our_server_config(&[pq[1], pq[0]], SUITES);
    c.strict_group_preference = true;
    let config = Arc::new(c);
    let client = Arc::new(rustls_client_config(&pq, SUITES, false));
    let p = server_pair(&config, 18, &client, None);
    let n = p.negotiated();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(pq[1]));
    assert_eq!(
        p.theirs.handshake_kind(),
        Some(HandshakeKind::FullWithHelloRetryRequest)
    );
    assert_eq!(rustls_negotiated(p.theirs.common_ref()).1, pq[1]);
    Ok(String::new())
}

fn bulk() -> Vec<u8> {
    (0..100_000u32).map(|i| (i % 251) as u8).collect()
}

fn bulk_our_client() -> CellResult {
    let server = Arc::new(rustls_server_config(X, SUITES, false));
    let mut p = client_pair(
        &our_client_config(X, X, SUITES),
        19,
        TicketStore::default(),
        &server,
        None,
    );
    let data = bulk();
    p.theirs_got.clear();
    p.ours.send(&data).unwrap();
    p.settle();
    assert_eq!(p.theirs_got, data);
    let before = p.ours_got().len();
    // rustls buffers at most 64 KiB of unsent plaintext: write in pieces.
    for piece in data.chunks(16 * 1024) {
        p.theirs.writer().write_all(piece).unwrap();
        p.settle();
    }
    assert_eq!(&p.ours_got()[before..], &data[..]);
    Ok(String::new())
}

fn bulk_rustls_client() -> CellResult {
    let config = Arc::new(our_server_config(X, SUITES));
    let client = Arc::new(rustls_client_config(X, SUITES, false));
    let mut p = server_pair(&config, 20, &client, None);
    let data = bulk();
    p.theirs_got.clear();
    p.ours.send(&data).unwrap();
    p.settle();
    assert_eq!(p.theirs_got, data);
    let before = p.ours_got().len();
    // rustls buffers at most 64 KiB of unsent plaintext: write in pieces.
    for piece in data.chunks(16 * 1024) {
        p.theirs.writer().write_all(piece).unwrap();
        p.settle();
    }
    assert_eq!(&p.ours_got()[before..], &data[..]);
    Ok(String::new())
}

fn bulk_in_place_our_client() -> CellResult {
    let server = Arc::new(rustls_server_config(X, SUITES, false));
    let config = our_client_config(X, X, SUITES);
    let mut p = client_pair(&config, 23, TicketStore::default(), &server, None);
    let data = bulk();
    assert_eq!(p.bulk_in_place(&data), (data.clone(), data));
    Ok(String::new())
}

fn bulk_in_place_rustls_client() -> CellResult {
    let config = Arc::new(our_server_config(X, SUITES));
    let client = Arc::new(rustls_client_config(X, SUITES, false));
    let mut p = server_pair(&config, 24, &client, None);
    let data = bulk();
    assert_eq!(p.bulk_in_place(&data), (data.clone(), data));
    Ok(String::new())
}

fn early_rejected_rustls_client() -> CellResult {
    let issuing = Arc::new(our_server_config(X, SUITES));
    // Same resumption state, but this one refuses 0-RTT.
    let mut refusing = (*issuing).clone();
    refusing.max_early_data = 0;
    let refusing = Arc::new(refusing);
    let client = Arc::new(rustls_client_config(X, SUITES, false));
    server_pair(&issuing, 37, &client, None);
    let p = server_pair(&refusing, 38, &client, Some(b"early-data-we-refuse"));
    assert!(!p.theirs.is_early_data_accepted());
    assert_eq!(p.theirs.handshake_kind(), Some(HandshakeKind::Resumed));
    let n = p.negotiated();
    assert!(n.resumed);
    assert_eq!(n.early_data, EarlyDataStatus::Rejected);
    assert!(p.ours_early.is_empty());
    Ok(String::new())
}

fn early_rejected_our_client() -> CellResult {
    let mut sc = rustls_server_config(X, SUITES, false);
    sc.max_early_data_size = 16384;
    let config = our_client_config(X, X, SUITES);
    let p = client_pair(
        &config,
        39,
        TicketStore::default(),
        &Arc::new(sc.clone()),
        None,
    );
    let tickets = p.ours.tickets().clone();
    // Another server (its own session cache) does not know the ticket: full handshake.
    sc.session_storage = rustls::server::ServerSessionMemoryCache::new(16);
    let early = b"early-data-nobody-will-read";
    let p = client_pair(&config, 40, tickets, &Arc::new(sc), Some(early));
    let n = p.negotiated();
    assert!(!n.resumed);
    assert_eq!(n.early_data, EarlyDataStatus::Rejected);
    assert_eq!(p.theirs.handshake_kind(), Some(HandshakeKind::Full));
    assert!(p.theirs_early.is_empty());
    let back: Vec<u8> = p
        .events
        .iter()
        .filter_map(|e| match e {
            Event::EarlyDataRejected { data } => Some(data.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(back, early);
    Ok(String::new())
}

/// How many records the first `typ` message that went `dir` took.
fn records_of(events: &[Event], dir: Direction, typ: HandshakeType) -> usize {
    let ledger = tls13lab::Ledger::from_events(events);
    ledger
        .records
        .iter()
        .filter(|r| r.record.direction == dir)
        .filter(|r| r.messages.iter().any(|m| m.typ == typ))
        .count()
}

fn fragments_our_client() -> CellResult {
    let g = NamedGroup::X25519MLKEM768;
    skip_unsupported(&[g])?;
    let mut sc = rustls_server_config(&[g], SUITES, false);
    sc.max_fragment_size = Some(512);
    let p = client_pair(
        &our_client_config(&[g], &[g], SUITES),
        41,
        TicketStore::default(),
        &Arc::new(sc),
        None,
    );
    let n = records_of(
        &p.events,
        Direction::ServerToClient,
        HandshakeType::ServerHello,
    );
    assert!(n >= 3, "ServerHello in {n} records");
    Ok(String::new())
}

fn fragments_rustls_client() -> CellResult {
    let g = NamedGroup::X25519MLKEM768;
    skip_unsupported(&[g])?;
    let config = Arc::new(our_server_config(&[g], SUITES));
    let mut cc = rustls_client_config(&[g], SUITES, false);
    cc.max_fragment_size = Some(512);
    let p = server_pair(&config, 42, &Arc::new(cc), None);
    let n = records_of(
        &p.events,
        Direction::ClientToServer,
        HandshakeType::ClientHello,
    );
    assert!(n >= 3, "ClientHello in {n} records");
    Ok(String::new())
}

fn alert_rustls_client() -> CellResult {
    let config = Arc::new(our_server_config(X, SUITES));
    // rustls trusts another certificate: it must refuse ours with a fatal alert.
    let cc = rustls::ClientConfig::builder_with_provider(provider(X, SUITES))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots(&ids().client.cert_der))
        .with_no_client_auth();
    let mut conn = ClientConnection::new(Arc::new(cc), localhost()).unwrap();
    let mut server = Server::new(config, Box::new(SeededRandom::from_seed(43))).unwrap();
    server.receive(&rustls_out(&mut conn), now_ms()).unwrap();
    let flight = server.take_output();
    let mut rd = &flight[..];
    let mut rustls_err = None;
    while !rd.is_empty() && rustls_err.is_none() {
        conn.read_tls(&mut rd).unwrap();
        rustls_err = conn.process_new_packets().err();
    }
    let rustls_err = rustls_err.expect("rustls refused the certificate");
    let ours = server.receive(&rustls_out(&mut conn), now_ms());
    let alerts: Vec<_> = server
        .events()
        .filter_map(|e| match e {
            Event::Alert {
                direction: Direction::ClientToServer,
                description,
                ..
            } => Some(description),
            _ => None,
        })
        .collect();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert!(
        matches!(ours, Err(tls13lab::Error::AlertReceived(a)) if a == alerts[0]),
        "{ours:?} after rustls: {rustls_err}"
    );
    Ok(String::new())
}

fn alert_our_client() -> CellResult {
    let server = Arc::new(rustls_server_config(X, SUITES, false));
    let mut config = our_client_config(X, X, SUITES);
    // We trust another certificate: we must refuse rustls' with a fatal alert.
    config.verification = ServerVerification::Roots(vec![ids().client.cert_der.clone()]);
    let mut client = Client::new(Arc::new(config), Box::new(SeededRandom::from_seed(44))).unwrap();
    client.start(now_ms()).unwrap();
    let mut conn = ServerConnection::new(server).unwrap();
    rustls_in(&mut conn, &client.take_output());
    let ours = client.receive(&rustls_out(&mut conn), now_ms());
    assert!(ours.is_err());
    let sent: Vec<_> = client
        .events()
        .filter_map(|e| match e {
            Event::Alert {
                direction: Direction::ClientToServer,
                description,
                ..
            } => Some(description),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1);
    let alert = client.take_output();
    let mut rd = &alert[..];
    conn.read_tls(&mut rd).unwrap();
    match conn.process_new_packets() {
        Err(rustls::Error::AlertReceived(a)) => assert_eq!(u8::from(a), sent[0].to_repr()),
        other => panic!("rustls: {other:?}"),
    }
    Ok(String::new())
}

fn key_update_our_client() -> CellResult {
    let server = Arc::new(rustls_server_config(X, SUITES, false));
    let mut p = client_pair(
        &our_client_config(X, X, SUITES),
        15,
        TicketStore::default(),
        &server,
        None,
    );
    p.theirs.refresh_traffic_keys().unwrap();
    p.settle();
    p.ping_pong("2", |c, d| c.send(d).unwrap());
    p.ours.key_update(true).unwrap();
    p.settle();
    p.ping_pong("3", |c, d| c.send(d).unwrap());
    assert_eq!(
        p.key_updates(),
        vec![
            (Direction::ServerToClient, true),
            (Direction::ClientToServer, false),
            (Direction::ClientToServer, true),
            (Direction::ServerToClient, false),
        ]
    );
    Ok(String::new())
}

fn key_update_rustls_client() -> CellResult {
    let config = Arc::new(our_server_config(X, SUITES));
    let client = Arc::new(rustls_client_config(X, SUITES, false));
    let mut p = server_pair(&config, 16, &client, None);
    p.theirs.refresh_traffic_keys().unwrap();
    p.settle();
    p.ping_pong("2", |s, d| s.send(d).unwrap());
    p.ours.key_update(true).unwrap();
    p.settle();
    p.ping_pong("3", |s, d| s.send(d).unwrap());
    assert_eq!(
        p.key_updates(),
        vec![
            (Direction::ClientToServer, true),
            (Direction::ServerToClient, false),
            (Direction::ServerToClient, true),
            (Direction::ClientToServer, false),
        ]
    );
    Ok(String::new())
}

// ------------------------------------------------------------------------------- the test

type FeatureFn = fn() -> CellResult;

const FEATURES: &[(&str, &str, &str, FeatureFn)] = &[
    (
        "resumption",
        "rustls (its session cache) → ours (stateless, then stateful tickets)",
        "rustls: `HandshakeKind::Resumed`, 2 tickets received; ours: resumed, no Certificate",
        resumption_rustls_client,
    ),
    (
        "resumption",
        "ours (TicketStore) → rustls (stateless Ticketer, then stateful cache)",
        "rustls: `Resumed`; ours: resumed, no Certificate received",
        resumption_our_client,
    ),
    (
        "0-RTT",
        "rustls `early_data()` → ours",
        "rustls: `is_early_data_accepted()`; ours: EarlyData event = the bytes, accepted",
        early_rustls_client,
    ),
    (
        "0-RTT",
        "ours → rustls (stateful tickets, max_early_data_size 16384)",
        "rustls: `early_data()` read our bytes; ours: accepted",
        early_our_client,
    ),
    (
        "HRR (group preference)",
        "ours (share X25519) → rustls (secp256r1 only)",
        "rustls: `FullWithHelloRetryRequest`; ours: hello_retry, secp256r1",
        hrr_our_client,
    ),
    (
        "HRR (group preference)",
        "rustls (X25519, secp256r1) → ours (strict preference secp256r1)",
        "rustls: `FullWithHelloRetryRequest`, group secp256r1; ours: hello_retry",
        hrr_rustls_client,
    ),
    (
        "client authentication",
        "rustls (client cert) → ours (required)",
        "ours: client certificate verified, ecdsa_secp256r1_sha256",
        client_auth_rustls_client,
    ),
    (
        "client authentication",
        "ours (client cert) → rustls (WebPkiClientVerifier)",
        "rustls: `peer_certificates()` is our certificate; ours: ecdsa_secp256r1_sha256",
        client_auth_our_client,
    ),
    (
        "HRR to a post-quantum group",
        "ours (share X25519) → rustls (X25519MLKEM768 only)",
        "rustls: `FullWithHelloRetryRequest`, X25519MLKEM768; ours: hello_retry",
        hrr_pq_our_client,
    ),
    (
        "HRR to a post-quantum group",
        "rustls (X25519MLKEM768, SecP256r1MLKEM768) → ours (strict preference SecP256r1MLKEM768)",
        "rustls: `FullWithHelloRetryRequest`, SecP256r1MLKEM768; ours: hello_retry",
        hrr_pq_rustls_client,
    ),
    (
        "bulk data",
        "ours ↔ rustls server, 100 KB each way",
        "both received exactly the other's 100 KB",
        bulk_our_client,
    ),
    (
        "bulk data",
        "rustls client ↔ ours, 100 KB each way",
        "both received exactly the other's 100 KB",
        bulk_rustls_client,
    ),
    (
        "bulk data in place",
        "ours (`seal_in_place` / `open_in_place`, 1000-byte reads) ↔ rustls server, 100 KB each way",
        "both received exactly the other's 100 KB; ours as ranges of its own buffer, not events",
        bulk_in_place_our_client,
    ),
    (
        "bulk data in place",
        "rustls client ↔ ours (`seal_in_place` / `open_in_place`, 1000-byte reads), 100 KB each way",
        "both received exactly the other's 100 KB; ours as ranges of its own buffer, not events",
        bulk_in_place_rustls_client,
    ),
    (
        "0-RTT rejected",
        "rustls `early_data()` → ours (resumes, refuses 0-RTT)",
        "rustls: `Resumed`, not `is_early_data_accepted()`; ours: resumed, no EarlyData event",
        early_rejected_rustls_client,
    ),
    (
        "0-RTT rejected",
        "ours → another rustls server (ticket unknown)",
        "rustls: `Full`, no early data read; ours: early_data rejected, bytes handed back",
        early_rejected_our_client,
    ),
    (
        "small records (handshake split across records)",
        "ours ← rustls server, max_fragment_size 512, X25519MLKEM768",
        "ours: the 1.2 KB ServerHello arrives in ≥ 3 records",
        fragments_our_client,
    ),
    (
        "small records (handshake split across records)",
        "rustls client, max_fragment_size 512, X25519MLKEM768 → ours",
        "ours: the 1.2 KB ClientHello arrives in ≥ 3 records",
        fragments_rustls_client,
    ),
    (
        "fatal alert",
        "rustls (trusts another CA) → ours",
        "rustls: certificate error; ours: exactly that alert received, `AlertReceived`",
        alert_rustls_client,
    ),
    (
        "fatal alert",
        "ours (trusts another CA) → rustls server",
        "rustls: `AlertReceived` = the alert we sent",
        alert_our_client,
    ),
    (
        "KeyUpdate",
        "rustls `refresh_traffic_keys()` ↔ ours, then ours requesting",
        "ours: 4 KeyUpdates in order; data flows both ways after each",
        key_update_rustls_client,
    ),
    (
        "KeyUpdate",
        "ours ↔ rustls server, both requesting in turn",
        "ours: 4 KeyUpdates in order; data flows both ways after each",
        key_update_our_client,
    ),
];

fn matrix_name(dir: &str, g: NamedGroup, s: CipherSuite) -> String {
    format!("rustls {dir} {g} {s}")
}

fn feature_name(i: usize) -> String {
    format!("rustls {}: {}", FEATURES[i].0, FEATURES[i].1)
}

#[test]
fn rustls_interop_matrix() {
    let mut cells = Vec::new();
    for &g in GROUPS {
        for &s in SUITES {
            cells.push(Cell::new(matrix_name("ours→rustls", g, s), move || {
                our_client_cell(g, s)
            }));
            cells.push(Cell::new(matrix_name("rustls→ours", g, s), move || {
                our_server_cell(g, s)
            }));
        }
    }
    for (i, (_, _, _, body)) in FEATURES.iter().enumerate() {
        let body = *body;
        cells.push(Cell::new(feature_name(i), body));
    }
    let results = run_cells(cells, 2);
    let docs = render(&results);
    let stale = sync_docs_section("rustls", &docs);
    assert_all_passed(&results);
    if let Err(e) = stale {
        panic!("{e}");
    }
}

fn render(results: &[(String, Outcome)]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "### Key exchange × cipher suite\n");
    let _ = writeln!(
        s,
        "Each cell: a full handshake through in-memory buffers, data both ways, the exporter \
         (with a context) equal on both sides. rustls must report the same suite and group and a \
         full handshake. `pass` cells show the key_share sizes (client/server bytes).\n"
    );
    let _ = writeln!(
        s,
        "| group | suite | ours → rustls server | rustls client → ours |"
    );
    let _ = writeln!(s, "| --- | --- | --- | --- |");
    for &g in GROUPS {
        for &su in SUITES {
            let cell = |dir: &str| match outcome(results, &matrix_name(dir, g, su)) {
                Outcome::Pass(sizes) => format!("pass ({sizes})"),
                other => other.word().to_string(),
            };
            let _ = writeln!(
                s,
                "| {g} | {su} | {} | {} |",
                cell("ours→rustls"),
                cell("rustls→ours")
            );
        }
    }
    let _ = writeln!(s, "\n### Features\n");
    let _ = writeln!(s, "| feature | connection | result | both sides assert |");
    let _ = writeln!(s, "| --- | --- | --- | --- |");
    for (i, (feature, dir, checked, _)) in FEATURES.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {feature} | {dir} | {} | {checked} |",
            outcome(results, &feature_name(i)).word()
        );
    }
    let mut pending: Vec<&str> = results
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Pending(why) => Some(why.as_str()),
            _ => None,
        })
        .collect();
    pending.sort();
    pending.dedup();
    if !pending.is_empty() {
        let _ = writeln!(s, "\n`pending`: {}.", pending.join("; "));
    }
    s
}

// ------------------------------------------------------------ certificate compression

/// The compressible server identity (localhost and 60 more names).
fn comp_id() -> &'static Identity {
    static ID: std::sync::OnceLock<Identity> = std::sync::OnceLock::new();
    ID.get_or_init(|| Identity::compressible(23))
}

/// rustls' two algorithms (its `zlib` and `brotli` features).
const RUSTLS_COMPRESSION: [tls13lab::messages::CertificateCompressionAlgorithm; 2] = [
    tls13lab::messages::CertificateCompressionAlgorithm::Zlib,
    tls13lab::messages::CertificateCompressionAlgorithm::Brotli,
];

fn rustls_compressor(i: usize) -> &'static dyn rustls::compress::CertCompressor {
    [
        rustls::compress::ZLIB_COMPRESSOR,
        rustls::compress::BROTLI_COMPRESSOR,
    ][i]
}

fn rustls_decompressor(i: usize) -> &'static dyn rustls::compress::CertDecompressor {
    [
        rustls::compress::ZLIB_DECOMPRESSOR,
        rustls::compress::BROTLI_DECOMPRESSOR,
    ][i]
}

/// The CompressedCertificate `dir` carried in `events` (exactly one, and no Certificate).
fn sent_compressed(events: &[Event], dir: Direction) -> tls13lab::messages::CompressedCertificate {
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

/// Our client (offering only rustls' algorithm `i`) ↔ a rustls server compressing with it.
fn comp_our_client(i: usize) -> CellResult {
    let alg = RUSTLS_COMPRESSION[i];
    let (g, s) = (NamedGroup::X25519, CipherSuite::TLS_AES_128_GCM_SHA256);
    let mut server = rustls::ServerConfig::builder_with_provider(provider(&[g], &[s]))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(comp_id().cert_der.clone())],
            key_of(comp_id()),
        )
        .unwrap();
    server.cert_compressors = vec![rustls_compressor(i)];
    let mut config = ClientConfig::new(vec![comp_id().cert_der.clone()]);
    config.server_name = Some("localhost".into());
    config.groups = vec![g];
    config.key_shares = vec![g];
    config.cipher_suites = vec![s];
    config.cert_compression = vec![alg];
    config.observe = tls13lab::Observe::PUBLIC;
    let p = client_pair(&config, 41, TicketStore::default(), &Arc::new(server), None);
    let cc = sent_compressed(&p.events, Direction::ServerToClient);
    assert_eq!(cc.algorithm, alg);
    Ok(format!(
        "{} → {} B",
        cc.uncompressed_length,
        cc.compressed_certificate_message.len()
    ))
}

/// A rustls client (decompressing only algorithm `i`) ↔ our server compressing with it.
fn comp_rustls_client(i: usize) -> CellResult {
    let alg = RUSTLS_COMPRESSION[i];
    let (g, s) = (NamedGroup::X25519, CipherSuite::TLS_AES_128_GCM_SHA256);
    let mut ours = ServerConfig::new(comp_id().certified_key());
    ours.groups = vec![g];
    ours.cipher_suites = vec![s];
    ours.cert_compression = vec![alg];
    ours.observe = tls13lab::Observe::PUBLIC;
    let mut client = rustls::ClientConfig::builder_with_provider(provider(&[g], &[s]))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots(&comp_id().cert_der))
        .with_no_client_auth();
    client.cert_decompressors = vec![rustls_decompressor(i)];
    let p = server_pair(&Arc::new(ours), 42, &Arc::new(client), None);
    assert_eq!(p.theirs.handshake_kind(), Some(HandshakeKind::Full));
    let cc = sent_compressed(&p.events, Direction::ServerToClient);
    assert_eq!(cc.algorithm, alg);
    Ok(format!(
        "{} → {} B",
        cc.uncompressed_length,
        cc.compressed_certificate_message.len()
    ))
}

/// RFC 8879 with rustls 0.23 (features `zlib` and `brotli`): each of its algorithms both ways.
/// docs/interop.md's `rustls-compression` section is written from it.
#[test]
fn rustls_certificate_compression() {
    let mut cells = Vec::new();
    for (i, alg) in RUSTLS_COMPRESSION.into_iter().enumerate() {
        cells.push(Cell::new(
            format!("ours ← rustls server, {alg}"),
            move || comp_our_client(i),
        ));
        cells.push(Cell::new(
            format!("rustls client → ours, {alg}"),
            move || comp_rustls_client(i),
        ));
    }
    let results = run_cells(cells, 2);
    cell_results_section(
        "rustls-compression",
        "Server certificate: P-256, self-signed, `localhost` and 60 more subjectAltNames. Each \
         cell: a full handshake, data both ways, the exporter equal on both sides; one side \
         offers (decompresses) only the row's algorithm and the other compresses with it alone; \
         the sizes are the Certificate body and its compressed form.",
        &results,
    );
}

// --------------------------------------------------------------- Encrypted ClientHello

/// ECHConfig.public_name: the outer SNI, and what a rejected handshake authenticates.
const PUBLIC_NAME: &str = "public.example";

/// The ECH server's identity: one certificate for `localhost` (inner) and the public name
/// (outer), since rustls verifies a rejected handshake against the public name (RFC 9849 §6.1.7).
fn ech_id() -> &'static Identity {
    static ID: std::sync::OnceLock<Identity> = std::sync::OnceLock::new();
    ID.get_or_init(|| Identity::for_names(&["localhost", PUBLIC_NAME], 24))
}

/// An ECH key from `seed`: one HPKE suite, so rustls' `EchConfig::new` must pick exactly it.
fn ech_key(seed: u64, config_id: u8, kem: Kem, aead: HpkeAeadId) -> EchKeyPair {
    let params = EchKeyParams {
        public_name: PUBLIC_NAME.into(),
        kem,
        suites: vec![HpkeSymmetricCipherSuite {
            kdf_id: HpkeKdfId::HkdfSha256,
            aead_id: aead,
        }],
        config_id: Some(config_id),
        maximum_name_length: 0,
    };
    EchKeyPair::generate(&params, &mut SeededRandom::from_seed(seed)).expect("ECH key")
}

fn x25519_key(seed: u64, config_id: u8) -> EchKeyPair {
    ech_key(
        seed,
        config_id,
        Kem::X25519HkdfSha256,
        HpkeAeadId::Aes128Gcm,
    )
}

fn ech_server(groups: &[NamedGroup], keys: Vec<EchKeyPair>) -> ServerConfig {
    let mut c = ServerConfig::new(ech_id().certified_key());
    c.observe = tls13lab::Observe::ALL_WITH_SECRETS;
    c.groups = groups.to_vec();
    c.ech_keys = keys;
    c
}

/// rustls' ECH client (`with_ech` implies TLS 1.3 only) offering key shares for `groups`.
fn rustls_ech_client(groups: &[NamedGroup], mode: rustls::client::EchMode) -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(provider(groups, SUITES))
        .with_ech(mode)
        .expect("rustls accepts the ECH mode")
        .with_root_certificates(roots(&ech_id().cert_der))
        .with_no_client_auth()
}

/// rustls' EchConfig from an ECHConfigList, choosing among all its HPKE suites.
fn rustls_ech_config(list: &[u8]) -> rustls::client::EchMode {
    EchConfig::new(
        EchConfigListBytes::from(list),
        rustls_hpke::ALL_SUPPORTED_SUITES,
    )
    .expect("rustls finds a usable config")
    .into()
}

/// Our server's one ECH event.
fn ech_event(events: &[Event]) -> &EchEvent {
    let all: Vec<&EchEvent> = events
        .iter()
        .filter_map(|e| match e {
            Event::Ech(x) => Some(x),
            _ => None,
        })
        .collect();
    assert_eq!(all.len(), 1, "one Ech event");
    all[0]
}

/// What our server said about an accepted offer; fails unless it decrypted ClientHelloInner
/// for `localhost` under `key`'s config and suite, and confirmed it (§7.2) `confirmations` times.
fn ours_accepted(p: &ServerPair, key: &EchKeyPair, confirmations: usize) -> String {
    let e = ech_event(&p.events);
    let kc = &key.config.contents().expect("a v0xfe0d config").key_config;
    assert_eq!(e.status, EchStatus::Accepted, "{e:?}");
    assert_eq!(e.config_id, Some(kc.config_id));
    let s = kc.cipher_suites[0];
    assert_eq!((e.kdf, e.aead), (Some(s.kdf_id), Some(s.aead_id)));
    assert_eq!(e.inner_sni.as_deref(), Some("localhost"));
    assert_eq!(e.outer_sni.as_deref(), Some(PUBLIC_NAME));
    assert!(!e.retry_configs_sent);
    let inner = p
        .events
        .iter()
        .filter(|e| matches!(e, Event::InnerClientHello(_)))
        .count();
    let confirmed = p
        .events
        .iter()
        .filter(|e| matches!(e, Event::EchConfirmation { .. }))
        .count();
    assert_eq!((inner, confirmed), (confirmations, confirmations));
    format!(
        "rustls: `EchStatus::Accepted`; ours: accepted, config_id {:#04x}, inner SNI localhost, outer {PUBLIC_NAME}",
        kc.config_id
    )
}

/// rustls offers ECH with `key`'s config (read by `EchConfig::new` from the ECHConfigList our
/// key file carries) to our server holding `key`; key shares for `groups`.
fn ech_accepted_cell(key: EchKeyPair, groups: &[NamedGroup], seed: u64) -> (ServerPair, String) {
    // The list as rustls' own PEM reader finds it in our file (OpenSSL's layout).
    use rustls::pki_types::pem::PemObject;
    let list = EchConfigListBytes::from_pem_slice(key.to_pem().as_bytes())
        .expect("rustls reads our ECHCONFIG block");
    assert_eq!(list.as_ref(), key.list.encode().as_slice());
    let config = Arc::new(ech_server(groups, vec![key.clone()]));
    let client = Arc::new(rustls_ech_client(groups, rustls_ech_config(&list)));
    let p = server_pair(&config, seed, &client, None);
    assert_eq!(p.theirs.ech_status(), RustlsEch::Accepted);
    // Every group here has a share in ClientHello1: one ClientHello, one confirmation.
    assert!(!p.negotiated().hello_retry);
    let said = ours_accepted(&p, &key, 1);
    (p, said)
}

/// Each HPKE suite both sides have: DHKEM(X25519) and DHKEM(P-256), HKDF-SHA256, each AEAD.
const ECH_SUITES: &[(Kem, HpkeAeadId)] = &[
    (Kem::X25519HkdfSha256, HpkeAeadId::Aes128Gcm),
    (Kem::X25519HkdfSha256, HpkeAeadId::Aes256Gcm),
    (Kem::X25519HkdfSha256, HpkeAeadId::ChaCha20Poly1305),
    (Kem::P256HkdfSha256, HpkeAeadId::Aes128Gcm),
    (Kem::P256HkdfSha256, HpkeAeadId::Aes256Gcm),
    (Kem::P256HkdfSha256, HpkeAeadId::ChaCha20Poly1305),
];

fn ech_suite_cell(i: usize) -> CellResult {
    let (kem, aead) = ECH_SUITES[i];
    let (p, said) = ech_accepted_cell(ech_key(60 + i as u64, 0x60 + i as u8, kem, aead), X, 50);
    assert_eq!(
        rustls_negotiated(p.theirs.common_ref()).1,
        NamedGroup::X25519
    );
    Ok(said)
}

fn ech_pq_cell() -> CellResult {
    let g = NamedGroup::X25519MLKEM768;
    skip_unsupported(&[g])?;
    let (p, said) = ech_accepted_cell(x25519_key(70, 0x70), &[g], 51);
    assert_eq!(p.negotiated().group, Some(g));
    assert_eq!(rustls_negotiated(p.theirs.common_ref()).1, g);
    Ok(format!("{said}; group {g}, no HelloRetryRequest"))
}

fn ech_hrr_cell() -> CellResult {
    // rustls shares X25519 only; ours insists on secp256r1: HRR, then ClientHello2 with ECH.
    let key = x25519_key(71, 0x71);
    let mut c = ech_server(
        &[NamedGroup::secp256r1, NamedGroup::X25519],
        vec![key.clone()],
    );
    c.strict_group_preference = true;
    let client = rustls_ech_client(
        &[NamedGroup::X25519, NamedGroup::secp256r1],
        rustls_ech_config(&key.list.encode()),
    );
    let p = server_pair(&Arc::new(c), 52, &Arc::new(client), None);
    assert_eq!(p.theirs.ech_status(), RustlsEch::Accepted);
    assert_eq!(
        p.theirs.handshake_kind(),
        Some(HandshakeKind::FullWithHelloRetryRequest)
    );
    let n = p.negotiated();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::secp256r1));
    let labels: Vec<&str> = p
        .events
        .iter()
        .filter_map(|e| match e {
            Event::EchConfirmation { label, .. } => Some(*label),
            _ => None,
        })
        .collect();
    assert_eq!(
        labels,
        ["hrr ech accept confirmation", "ech accept confirmation"]
    );
    let said = ours_accepted(&p, &key, 2);
    Ok(format!(
        "{said}; `FullWithHelloRetryRequest`, secp256r1, both confirmations (HRR and ServerHello)"
    ))
}

/// Drive rustls against our server until one of them fails; returns our events and both errors.
fn ech_until_error(
    config: Arc<ServerConfig>,
    client: Arc<rustls::ClientConfig>,
    seed: u64,
) -> (Vec<Event>, Option<tls13lab::Error>, Option<rustls::Error>) {
    let mut server = Server::new(config, Box::new(SeededRandom::from_seed(seed))).unwrap();
    let mut conn = ClientConnection::new(client, localhost()).unwrap();
    let (mut events, mut ours, mut theirs) = (Vec::new(), None, None);
    for _ in 0..16 {
        let a = server.take_output();
        let mut rd = &a[..];
        while !rd.is_empty() && theirs.is_none() {
            conn.read_tls(&mut rd).unwrap();
            theirs = conn.process_new_packets().err();
        }
        let b = rustls_out(&mut conn);
        if a.is_empty() && b.is_empty() {
            break;
        }
        let r = server.receive(&b, now_ms());
        events.extend(server.events());
        if let Err(e) = r {
            ours = Some(e);
            break;
        }
    }
    (events, ours, theirs)
}

/// rustls' end of a rejected ECH (§6.1.6): it fails with the server's retry configs after
/// sending ech_required, which our server received.
fn rejected_with_retry_configs(
    theirs: Option<rustls::Error>,
    ours: Option<tls13lab::Error>,
) -> Vec<rustls::internal::msgs::handshake::EchConfigPayload> {
    assert!(
        matches!(
            ours,
            Some(tls13lab::Error::AlertReceived(
                AlertDescription::EchRequired
            ))
        ),
        "ours: {ours:?}"
    );
    match theirs {
        Some(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::ServerRejectedEncryptedClientHello(Some(configs)),
        )) => configs,
        other => panic!("rustls: {other:?}"),
    }
}

/// A stale config (another key, same public_name): our server answers ClientHelloOuter with
/// retry_configs (§7.1); rustls authenticates the public name, sends ech_required and hands
/// back the retry configs in its error (§6.1.6); a second rustls connection with them is
/// accepted.
fn ech_rejected_cell() -> CellResult {
    let current = x25519_key(72, 0x72);
    let stale = x25519_key(73, 0x73);
    let config = Arc::new(ech_server(X, vec![current.clone()]));
    let client = Arc::new(rustls_ech_client(
        X,
        rustls_ech_config(&stale.list.encode()),
    ));
    let (events, ours, theirs) = ech_until_error(config.clone(), client, 53);
    let e = ech_event(&events);
    assert_eq!(e.status, EchStatus::Rejected, "{e:?}");
    assert_eq!(e.config_id, Some(0x73));
    assert_eq!(e.outer_sni.as_deref(), Some(PUBLIC_NAME));
    assert_eq!(e.inner_sni, None);
    assert!(e.retry_configs_sent);
    let retry = rejected_with_retry_configs(theirs, ours);
    // rustls keeps the configs parsed; re-encoded, they are our server's ECHConfigList.
    let mut list = Vec::new();
    rustls::internal::msgs::codec::Codec::encode(&retry, &mut list);
    assert_eq!(
        list,
        current.list.encode(),
        "retry_configs are the server's list"
    );
    let client = Arc::new(rustls_ech_client(X, rustls_ech_config(&list)));
    let p = server_pair(&config, 54, &client, None);
    assert_eq!(p.theirs.ech_status(), RustlsEch::Accepted);
    let said = ours_accepted(&p, &current, 1);
    Ok(format!(
        "ours: rejected config_id 0x73, retry_configs sent, alert ech_required received; \
         rustls: `ServerRejectedEncryptedClientHello` with {} retry config = ours; the retry: {said}",
        retry.len()
    ))
}

/// A stale config and a HelloRetryRequest from a server that disguises its rejection
/// (`ech_hrr_disguise`: eight random bytes of encrypted_client_hello, RFC 9849 §7.1): rustls
/// reads them as no confirmation (§6.1.4), completes the outer handshake and reports the
/// retry_configs, where OpenSSL 4.0.3's client aborts (docs/interop.md).
fn ech_rejected_hrr_disguised_cell() -> CellResult {
    let current = x25519_key(76, 0x76);
    let stale = x25519_key(77, 0x77);
    let mut c = ech_server(
        &[NamedGroup::secp256r1, NamedGroup::X25519],
        vec![current.clone()],
    );
    c.strict_group_preference = true;
    c.ech_hrr_disguise = true;
    let client = Arc::new(rustls_ech_client(
        &[NamedGroup::X25519, NamedGroup::secp256r1],
        rustls_ech_config(&stale.list.encode()),
    ));
    let (events, ours, theirs) = ech_until_error(Arc::new(c), client, 56);
    let hrr = events
        .iter()
        .find_map(|e| match e {
            Event::Handshake(h) if h.typ == HandshakeType::ServerHello => Some(h.bytes.clone()),
            _ => None,
        })
        .expect("our HelloRetryRequest");
    // The HelloRetryRequest's last extension: encrypted_client_hello (0xfe0d), 8 bytes.
    assert_eq!(
        hrr[hrr.len() - 12..hrr.len() - 8],
        [0xfe, 0x0d, 0, 8],
        "{hrr:02x?}"
    );
    let e = ech_event(&events);
    assert_eq!(e.status, EchStatus::Rejected, "{e:?}");
    assert!(e.retry_configs_sent);
    let n = rejected_with_retry_configs(theirs, ours).len();
    Ok(format!(
        "ours: HelloRetryRequest with 8 random bytes of encrypted_client_hello, rejected, retry_configs sent, \
         alert ech_required received; rustls: `ServerRejectedEncryptedClientHello` with {n} retry config"
    ))
}

/// rustls GREASE ECH (§6.2): our server opens nothing, answers ClientHelloOuter and completes.
fn ech_grease_cell() -> CellResult {
    let key = x25519_key(74, 0x74);
    // GREASE needs a real public key for its HPKE suite; a seeded one keeps it ours.
    let placeholder =
        rustls::crypto::hpke::HpkePublicKey(x25519_key(75, 0x75).key.public_key().to_vec());
    let grease = EchGreaseConfig::new(rustls_hpke::DH_KEM_X25519_HKDF_SHA256_AES_128, placeholder);
    let config = Arc::new(ech_server(X, vec![key]));
    let client = Arc::new(rustls_ech_client(X, grease.into()));
    let p = server_pair(&config, 55, &client, None);
    assert_eq!(p.theirs.ech_status(), RustlsEch::Grease);
    let e = ech_event(&p.events);
    assert_eq!(e.status, EchStatus::Rejected, "{e:?}");
    assert_eq!(e.inner_sni, None);
    assert_eq!(e.outer_sni.as_deref(), Some("localhost"));
    assert!(!p
        .events
        .iter()
        .any(|e| matches!(e, Event::InnerClientHello(_))));
    Ok(format!(
        "rustls: `EchStatus::Grease`; ours: not decrypted (rejected, retry_configs sent: {}), SNI localhost; handshake and data completed",
        e.retry_configs_sent
    ))
}

/// RFC 9849 with rustls 0.23's ECH client against our server. docs/interop.md's `rustls-ech`
/// section is written from it.
#[test]
fn rustls_ech_client_against_our_server() {
    let mut cells = Vec::new();
    for (i, (kem, aead)) in ECH_SUITES.iter().enumerate() {
        let kem = Kem::id(*kem);
        cells.push(Cell::new(
            format!("rustls ECH {kem} / HKDF-SHA256 / {aead} → ours"),
            move || ech_suite_cell(i),
        ));
    }
    cells.push(Cell::new(
        "rustls ECH, X25519MLKEM768 key share → ours",
        ech_pq_cell,
    ));
    cells.push(Cell::new(
        "rustls ECH (X25519, secp256r1) → ours (strict preference secp256r1: HelloRetryRequest)",
        ech_hrr_cell,
    ));
    cells.push(Cell::new(
        "rustls ECH, stale config (same public_name) → ours, then retry with its retry_configs",
        ech_rejected_cell,
    ));
    cells.push(Cell::new(
        "rustls ECH, stale config (X25519, secp256r1) → ours with --ech-hrr-disguise (HelloRetryRequest)",
        ech_rejected_hrr_disguised_cell,
    ));
    cells.push(Cell::new("rustls GREASE ECH → ours", ech_grease_cell));
    let results = run_cells(cells, 2);
    cell_results_section(
        "rustls-ech",
        "Our server (`ServerConfig.ech_keys`, keys made from a seed by `EchKeyPair::generate`, a \
         certificate for `localhost` and `public.example`) and rustls' ECH client \
         (`ClientConfig::builder_with_provider(..).with_ech(..)`, `EchConfig::new` over \
         `hpke::ALL_SUPPORTED_SUITES`), in memory. Accepted cells: rustls' `ech_status()` is \
         `Accepted`, our `Event::Ech` names the config, the suite and the inner SNI, one \
         ClientHelloInner and acceptance confirmation per ClientHello; then data both ways and \
         the exporter equal.",
        &results,
    );
}

// ---------------------------------------------------------------- rustls' default ClientHello

/// rustls' default client (what `ClientConfig::builder()` makes with the aws-lc-rs provider: no
/// ALPN, TLS 1.3 and 1.2) connecting
/// to example.com: its first flight is tests/vectors/clienthello/rustls-0.23.46.bin, which the
/// `rustls` preset reproduces (cli/tests/instruments.rs). With `TLS13LAB_RECORD_RUSTLS=FILE` the
/// flight is written to FILE (scripts/record-clienthellos.sh); otherwise it must still have the
/// capture's length and extensions (in any order), so a rustls update that changes its hello fails here until
/// the capture and the preset are recorded again.
#[test]
fn rustls_default_client_hello_is_the_recorded_one() {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(aws::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth();
    let name = ServerName::try_from("example.com").unwrap();
    let mut c = ClientConnection::new(Arc::new(config), name).unwrap();
    let flight = rustls_out(&mut c);
    if let Some(path) = std::env::var_os("TLS13LAB_RECORD_RUSTLS").filter(|p| !p.is_empty()) {
        std::fs::write(path, &flight).unwrap();
        return;
    }
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/clienthello/rustls-0.23.46.bin"
    );
    let captured = std::fs::read(file).unwrap();
    // Record header, handshake header, legacy_version, random, session id, suites, compression:
    // the extensions follow; their types and lengths are fixed for a given rustls.
    fn extensions(records: &[u8]) -> Vec<(u16, usize)> {
        let m = &records[5..];
        let mut at = 4 + 2 + 32;
        at += 1 + usize::from(m[at]);
        at += 2 + usize::from(u16::from_be_bytes([m[at], m[at + 1]]));
        at += 1 + usize::from(m[at]);
        let end = at + 2 + usize::from(u16::from_be_bytes([m[at], m[at + 1]]));
        at += 2;
        let mut out = Vec::new();
        while at + 4 <= end {
            let len = usize::from(u16::from_be_bytes([m[at + 2], m[at + 3]]));
            out.push((u16::from_be_bytes([m[at], m[at + 1]]), len));
            at += 4 + len;
        }
        out
    }
    assert_eq!(flight.len(), captured.len(), "rustls' first flight");
    // rustls shuffles its extensions on every connection (as BoringSSL does): compare the sets.
    let (mut got, mut want) = (extensions(&flight), extensions(&captured));
    got.sort();
    want.sort();
    assert_eq!(got, want);
}
