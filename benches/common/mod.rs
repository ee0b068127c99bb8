//! What the benchmarks share: one certificate for both libraries, tls13lab and rustls set up
//! alike, a handshake driver that can time one side only, and the crypto floor of a handshake.
//!
//! Both libraries get the same ECDSA P-256 certificate, TLS_AES_128_GCM_SHA256 only, the same
//! single group, TLS 1.3 only, no tickets unless the case is about resumption, and stateful
//! (single-use) tickets when it is (rustls' default, and the only kind it accepts 0-RTT with).
//! tls13lab runs with `Observe::NONE`.
//!
//! One side is timed by running a real handshake between the two and timing only that side's
//! calls (`Timer`): neither library's flights have to be replayed, so rustls, whose randomness
//! cannot be seeded, is measured the same way as we are.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lab::certgen::self_signed_p256;
use tls13lab::crypto::aead::{AeadAlg, AeadKey};
use tls13lab::crypto::hash::HashAlg;
use tls13lab::crypto::kx;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::{verify_signature, SigningKey};
use tls13lab::events::{Direction, Event, Observe};
use tls13lab::keyschedule::schedule::DerivationOp;
use tls13lab::messages::enums::{
    CipherSuite, HandshakeType, NamedGroup, PskKeyExchangeMode, SignatureScheme,
};
use tls13lab::session::TicketStore;
use tls13lab::{Client, ClientConfig, Server, ServerConfig};

/// Early data sent in the 0-RTT cases.
pub const EARLY_DATA: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

/// Wall clock in Unix ms (rustls validates certificates against it, so we use it too).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The groups benchmarked: X25519, and X25519MLKEM768 once tls13lab implements it.
pub fn groups() -> Vec<NamedGroup> {
    [NamedGroup::X25519, NamedGroup::X25519MLKEM768]
        .into_iter()
        .filter(|g| kx::is_supported(*g))
        .collect()
}

/// Short lowercase name for benchmark ids.
pub fn group_name(g: NamedGroup) -> &'static str {
    match g {
        NamedGroup::X25519 => "x25519",
        NamedGroup::X25519MLKEM768 => "x25519mlkem768",
        NamedGroup::secp256r1 => "p256",
        _ => "other",
    }
}

/// The handshake cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// Certificate-authenticated (EC)DHE.
    Full,
    /// Ticket resumption with (EC)DHE (psk_dhe_ke).
    Resumed,
    /// Ticket resumption without key exchange (psk_ke): tls13lab only.
    ResumedPskKe,
    /// psk_dhe_ke resumption with 0-RTT data accepted.
    ZeroRtt,
}

impl Case {
    pub fn name(self) -> &'static str {
        match self {
            Case::Full => "full",
            Case::Resumed => "resumed",
            Case::ResumedPskKe => "resumed_psk_ke",
            Case::ZeroRtt => "0rtt",
        }
    }

    pub fn resumes(self) -> bool {
        self != Case::Full
    }
}

/// Which side's calls a handshake run times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    Both,
    Client,
    Server,
}

impl Who {
    pub fn name(self) -> &'static str {
        match self {
            Who::Both => "client+server",
            Who::Client => "client",
            Who::Server => "server",
        }
    }
}

/// Accumulates the time spent in one side's calls, and the allocations made in them when the
/// counting allocator ([`Counting`]) is installed.
pub struct Timer {
    pub who: Who,
    pub total: Duration,
    /// Allocations made in the client's calls and in the server's (whoever is timed).
    pub allocs: [u64; 2],
    /// The same for every `malloc` (C included), when benches/memory.rs counts them.
    pub mallocs: [u64; 2],
}

impl Timer {
    pub fn new(who: Who) -> Timer {
        Timer {
            who,
            total: Duration::ZERO,
            allocs: [0; 2],
            mallocs: [0; 2],
        }
    }

    fn time<R>(&mut self, on: bool, side: usize, f: impl FnOnce() -> R) -> R {
        let a = Counting::allocations();
        let m = MALLOCS.load(std::sync::atomic::Ordering::Relaxed);
        let r = if on {
            let t = Instant::now();
            let r = f();
            self.total += t.elapsed();
            r
        } else {
            f()
        };
        self.allocs[side] += Counting::allocations() - a;
        self.mallocs[side] += MALLOCS.load(std::sync::atomic::Ordering::Relaxed) - m;
        r
    }

    pub fn client<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let on = self.who != Who::Server;
        self.time(on, 0, f)
    }

    pub fn server<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let on = self.who != Who::Client;
        self.time(on, 1, f)
    }
}

/// A global allocator that counts allocations and live bytes (installed by benches/memory.rs;
/// elsewhere the counters stay at zero).
pub struct Counting;

/// Calls to C `malloc`/`calloc`/`realloc`, counted by benches/memory.rs's interposer.
pub static MALLOCS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static LIVE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

impl Counting {
    pub fn allocations() -> u64 {
        ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes requested and not yet freed (Rust allocations only).
    pub fn live() -> i64 {
        LIVE.load(std::sync::atomic::Ordering::Relaxed)
    }
}

// SAFETY: every call forwards to the system allocator unchanged; only counters are added.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        ALLOCATIONS.fetch_add(1, Relaxed);
        LIVE.fetch_add(l.size() as i64, Relaxed);
        std::alloc::System.alloc(l)
    }

    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        LIVE.fetch_sub(l.size() as i64, std::sync::atomic::Ordering::Relaxed);
        std::alloc::System.dealloc(p, l)
    }

    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        ALLOCATIONS.fetch_add(1, Relaxed);
        LIVE.fetch_add(l.size() as i64, Relaxed);
        std::alloc::System.alloc_zeroed(l)
    }

    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        ALLOCATIONS.fetch_add(1, Relaxed);
        LIVE.fetch_add(new as i64 - l.size() as i64, Relaxed);
        std::alloc::System.realloc(p, l, new)
    }
}

/// The server credential both libraries use: ECDSA P-256, self-signed for `localhost`
/// ([`Identity::new`]), or an ML-DSA root → leaf chain ([`Identity::mldsa`]).
pub struct Identity {
    /// The trust anchor (for P-256, the certificate itself).
    pub cert_der: Vec<u8>,
    /// What the server sends, leaf first.
    pub chain: Vec<Vec<u8>>,
    pub key_pkcs8: Vec<u8>,
    pub key: SigningKey,
    /// The server's CertificateVerify scheme.
    pub scheme: SignatureScheme,
}

impl Identity {
    pub fn new() -> Identity {
        let now_s = now_ms() / 1000;
        let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(42));
        let cert_der = self_signed_p256(&["localhost"], &key, now_s - 86_400, now_s + 86_400)
            .expect("certificate");
        let key_pkcs8 = key.to_pkcs8_der().expect("pkcs8");
        Identity {
            chain: vec![cert_der.clone()],
            cert_der,
            key_pkcs8,
            key,
            scheme: SignatureScheme::ecdsa_secp256r1_sha256,
        }
    }

    /// A `tls13lab cert` chain (crypto::cert::chain, seeded): an ML-DSA root of `alg`'s level
    /// signing an ML-DSA leaf of the same level for `localhost`; the server sends the leaf.
    pub fn mldsa(alg: lab::certgen::KeyAlg) -> Identity {
        use lab::certgen::{chain, ChainSpec};
        let scheme = match alg.name() {
            "mldsa44" => SignatureScheme::mldsa44,
            "mldsa65" => SignatureScheme::mldsa65,
            "mldsa87" => SignatureScheme::mldsa87,
            other => panic!("{other} is not ML-DSA"),
        };
        let spec = ChainSpec {
            sans: vec!["localhost".into()],
            ..ChainSpec::new(vec![alg, alg])
        };
        let made = chain(&spec, 42).expect("chain");
        let key = SigningKey::from_pkcs8_der(&made.key_pkcs8_der).expect("ML-DSA key");
        Identity {
            cert_der: made.root_der,
            chain: made.certs_der,
            key_pkcs8: made.key_pkcs8_der,
            key,
            scheme,
        }
    }
}

impl Identity {
    /// The server's CertificateVerify signer: the build's fastest for the key (ring's ECDSA
    /// P-256 with the `ring-sign` feature).
    pub fn signer(&self) -> Arc<dyn tls13lab::config::Signer> {
        tls13lab::config::fastest_signer(self.key.clone(), &self.key_pkcs8).unwrap()
    }
}

impl Default for Identity {
    fn default() -> Self {
        Identity::new()
    }
}

// ------------------------------------------------------------------------------------ tls13lab

/// tls13lab's configurations for one case: `mint` issues the tickets the case resumes with.
pub struct Ours {
    pub client: Arc<ClientConfig>,
    pub server: Arc<ServerConfig>,
    pub mint: Arc<ServerConfig>,
    pub case: Case,
    seed: u64,
}

/// Tickets a minting handshake issues (rustls keeps at most 8 per server).
pub const MINTED: u32 = 8;

impl Ours {
    pub fn new(id: &Identity, group: NamedGroup, suite: CipherSuite, case: Case) -> Ours {
        let (mut client, server) = lab::demo::bench_configs(
            id.cert_der.clone(),
            id.signer(),
            group,
            suite,
            case == Case::ZeroRtt,
        );
        // bench_configs is ECDSA P-256 only: the ML-DSA identities replace chain and scheme.
        client.signature_schemes = vec![id.scheme];
        let mut server = server;
        server.signature_schemes = vec![id.scheme];
        server.cert.chain = id.chain.clone();
        if case == Case::ResumedPskKe {
            // A psk_ke-only client has no use for a key share (RFC 8446 §4.2.9).
            client.psk_modes = vec![PskKeyExchangeMode::PskKe];
            client.key_shares = Vec::new();
        }
        let mut mint = server.clone(); // shares the session cache
        mint.tickets = if case.resumes() { MINTED } else { 0 };
        Ours {
            client: Arc::new(client),
            server: Arc::new(server),
            mint: Arc::new(mint),
            case,
            seed: 1,
        }
    }

    /// The same setup with `client` applied to the client's configuration and `server` to the
    /// server's and the ticket minter's.
    fn altered(
        &self,
        client: impl Fn(&mut ClientConfig),
        server: impl Fn(&mut ServerConfig),
    ) -> Ours {
        let mut c = (*self.client).clone();
        client(&mut c);
        let (mut s, mut m) = ((*self.server).clone(), (*self.mint).clone());
        server(&mut s);
        server(&mut m);
        Ours {
            client: Arc::new(c),
            server: Arc::new(s),
            mint: Arc::new(m),
            case: self.case,
            seed: self.seed,
        }
    }

    /// The same setup with every event observed (for the crypto floor and the checks).
    pub fn observed(&self) -> Ours {
        self.altered(
            |c| c.observe = Observe::ALL_WITH_SECRETS,
            |s| s.observe = Observe::ALL_WITH_SECRETS,
        )
    }

    /// The same setup without the certificate-signature memo on either side
    /// (`signature_memo: None`): every handshake verifies the certificate's signature again,
    /// as rustls does.
    pub fn without_memo(&self) -> Ours {
        self.altered(|c| c.signature_memo = None, |s| s.signature_memo = None)
    }

    /// The same setup with Encrypted ClientHello (RFC 9849): the server (and the ticket
    /// minter) hold an ECH key (X25519, HKDF-SHA256, AES-128-GCM) and the client seals its
    /// ClientHello to it, so each handshake adds HPKE's Encap, Seal, Decap and Open, the inner
    /// hello's encoding and the acceptance confirmation.
    pub fn with_ech(&self) -> Ours {
        let key = lab::ech::key(7, 1).expect("ECH key");
        self.altered(
            |c| c.ech = tls13lab::config::EchMode::offer(key.list.clone()),
            |s| s.ech_keys = vec![key.clone()],
        )
    }

    /// One handshake (0-RTT data sent when the case says so), timing `t.who`'s calls.
    pub fn handshake(
        &mut self,
        t: &mut Timer,
        server: &Arc<ServerConfig>,
        tickets: TicketStore,
    ) -> (Client, Server) {
        self.seed = self.seed.wrapping_add(2);
        let seed = self.seed;
        let now = now_ms();
        let early = self.case == Case::ZeroRtt && !tickets.is_empty();
        let mut c = t.client(|| {
            let mut c = Client::new(self.client.clone(), Box::new(SeededRandom::from_seed(seed)))
                .unwrap()
                .with_tickets(tickets);
            c.start(now).unwrap();
            if early {
                c.send(EARLY_DATA).unwrap();
            }
            c
        });
        let mut s = t.server(|| {
            Server::new(server.clone(), Box::new(SeededRandom::from_seed(seed + 1))).unwrap()
        });
        loop {
            let out = t.client(|| c.take_output());
            if !out.is_empty() {
                t.server(|| {
                    s.receive(&out, now).unwrap();
                    s.events().for_each(drop);
                });
            }
            let back = t.server(|| s.take_output());
            if !back.is_empty() {
                t.client(|| {
                    c.receive(&back, now).unwrap();
                    c.events().for_each(drop);
                });
            }
            if out.is_empty() && back.is_empty() {
                break;
            }
        }
        (c, s)
    }

    /// A full handshake with the minting server: the tickets for `MINTED` resumptions.
    pub fn mint_tickets(&mut self) -> TicketStore {
        let mint = self.mint.clone();
        let (c, _) = self.handshake(&mut Timer::new(Who::Both), &mint, TicketStore::default());
        c.tickets().clone()
    }

    /// Runs `iters` handshakes of this case, returning the time `who` spent in them.
    pub fn run(&mut self, who: Who, iters: u64) -> Duration {
        let mut t = Timer::new(who);
        let mut tickets = TicketStore::default();
        let server = self.server.clone();
        for _ in 0..iters {
            let mine = if self.case.resumes() {
                if tickets.is_empty() {
                    tickets = self.mint_tickets();
                }
                let mut one = TicketStore::default();
                one.insert(tickets.tickets.pop_back().expect("a ticket"));
                one
            } else {
                TicketStore::default()
            };
            let (c, s) = self.handshake(&mut t, &server, mine);
            debug_assert!(c.is_connected() && s.is_connected());
        }
        t.total
    }

    /// Checks that the case does what it says (resumed, mode, 0-RTT accepted).
    pub fn check(&mut self) {
        let mut o = self.observed();
        let tickets = if self.case.resumes() {
            o.mint_tickets()
        } else {
            TicketStore::default()
        };
        assert!(!self.case.resumes() || tickets.len() == MINTED as usize);
        let mut one = TicketStore::default();
        if let Some(t) = tickets.tickets.back() {
            one.insert(t.clone());
        }
        let server = o.server.clone();
        let (c, s) = o.handshake_observed(&server, one);
        let n = c.negotiated().expect("connected").clone();
        assert!(s.is_connected());
        // With ECH configured, it was accepted (the figures are of ECH handshakes).
        let ech = c.ech_outcome() == Some(tls13lab::events::EchOutcome::Accepted);
        assert_eq!(
            ech,
            matches!(self.client.ech, tls13lab::config::EchMode::Config { .. }),
        );
        assert_eq!(n.resumed, self.case.resumes(), "{:?}", self.case);
        if !self.case.resumes() {
            // The identity's scheme (the one offered): ECDSA P-256 or the chain's ML-DSA level.
            assert_eq!(
                n.signature_scheme,
                self.client.signature_schemes.first().copied()
            );
        }
        assert_eq!(n.group.is_none(), self.case == Case::ResumedPskKe);
        assert_eq!(
            n.early_data == tls13lab::events::EarlyDataStatus::Accepted,
            self.case == Case::ZeroRtt
        );
    }
}

// -------------------------------------------------------------------------------------- rustls

/// rustls' configurations for one case, on its default aws-lc-rs provider.
pub struct Rustls {
    pub client: Arc<rustls::ClientConfig>,
    pub server: Arc<rustls::ServerConfig>,
    pub mint: Arc<rustls::ServerConfig>,
    pub case: Case,
}

pub fn rustls_provider(group: NamedGroup, suite: CipherSuite) -> rustls::crypto::CryptoProvider {
    use rustls::crypto::aws_lc_rs as p;
    let mut provider = p::default_provider();
    provider.kx_groups = vec![match group {
        NamedGroup::X25519 => p::kx_group::X25519,
        NamedGroup::X25519MLKEM768 => p::kx_group::X25519MLKEM768,
        NamedGroup::secp256r1 => p::kx_group::SECP256R1,
        other => panic!("no rustls group for {other}"),
    }];
    provider.cipher_suites = vec![match suite {
        CipherSuite::TLS_AES_128_GCM_SHA256 => p::cipher_suite::TLS13_AES_128_GCM_SHA256,
        CipherSuite::TLS_AES_256_GCM_SHA384 => p::cipher_suite::TLS13_AES_256_GCM_SHA384,
        CipherSuite::TLS_CHACHA20_POLY1305_SHA256 => {
            p::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256
        }
        other => panic!("no rustls suite for {other}"),
    }];
    provider
}

impl Rustls {
    pub fn new(id: &Identity, group: NamedGroup, suite: CipherSuite, case: Case) -> Rustls {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        assert!(
            case != Case::ResumedPskKe,
            "rustls does not implement psk_ke"
        );
        let provider = Arc::new(rustls_provider(group, suite));
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(id.cert_der.clone()))
            .unwrap();
        let mut client = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.enable_early_data = case == Case::ZeroRtt;
        let mut server = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                id.chain.iter().cloned().map(CertificateDer::from).collect(),
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(id.key_pkcs8.clone())),
            )
            .unwrap();
        server.max_early_data_size = if case == Case::ZeroRtt { 16384 } else { 0 };
        server.send_tls13_tickets = 0;
        let mut mint = server.clone(); // shares the session cache
        mint.send_tls13_tickets = if case.resumes() { MINTED as usize } else { 0 };
        Rustls {
            client: Arc::new(client),
            server: Arc::new(server),
            mint: Arc::new(mint),
            case,
        }
    }

    pub fn handshake(
        &self,
        t: &mut Timer,
        server: &Arc<rustls::ServerConfig>,
    ) -> (rustls::ClientConnection, rustls::ServerConnection) {
        let early = self.case == Case::ZeroRtt;
        let mut c = t.client(|| {
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let mut c = rustls::ClientConnection::new(self.client.clone(), name).unwrap();
            if early {
                if let Some(mut e) = c.early_data() {
                    e.write_all(EARLY_DATA).unwrap();
                }
            }
            c
        });
        let mut s = t.server(|| rustls::ServerConnection::new(server.clone()).unwrap());
        let mut buf = Vec::with_capacity(16 * 1024);
        let mut sink = [0u8; 1024];
        loop {
            buf.clear();
            t.client(|| {
                while c.wants_write() {
                    c.write_tls(&mut buf).unwrap();
                }
            });
            let out = !buf.is_empty();
            if out {
                t.server(|| {
                    let mut rd = &buf[..];
                    while !rd.is_empty() {
                        s.read_tls(&mut rd).unwrap();
                        s.process_new_packets().unwrap();
                    }
                    if let Some(mut e) = s.early_data() {
                        while e.read(&mut sink).unwrap_or(0) > 0 {}
                    }
                });
            }
            buf.clear();
            t.server(|| {
                while s.wants_write() {
                    s.write_tls(&mut buf).unwrap();
                }
            });
            let back = !buf.is_empty();
            if back {
                t.client(|| {
                    let mut rd = &buf[..];
                    while !rd.is_empty() {
                        c.read_tls(&mut rd).unwrap();
                        c.process_new_packets().unwrap();
                    }
                });
            }
            if !out && !back {
                break;
            }
        }
        (c, s)
    }

    /// A full handshake with the minting server: the client keeps the tickets in its config.
    pub fn mint_tickets(&self) {
        let mint = self.mint.clone();
        self.handshake(&mut Timer::new(Who::Both), &mint);
    }

    pub fn run(&self, who: Who, iters: u64) -> Duration {
        let mut t = Timer::new(who);
        let server = self.server.clone();
        let mut left = 0;
        for _ in 0..iters {
            if self.case.resumes() {
                if left == 0 {
                    self.mint_tickets();
                    left = MINTED;
                }
                left -= 1;
            }
            let (c, s) = self.handshake(&mut t, &server);
            debug_assert!(!c.is_handshaking() && !s.is_handshaking());
        }
        t.total
    }

    pub fn check(&self) {
        if self.case.resumes() {
            self.mint_tickets();
        }
        let (c, s) = self.handshake(&mut Timer::new(Who::Both), &self.server.clone());
        assert!(!c.is_handshaking() && !s.is_handshaking());
        assert_eq!(
            c.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            self.case.resumes()
        );
        assert_eq!(c.is_early_data_accepted(), self.case == Case::ZeroRtt);
    }
}

// -------------------------------------------------------------------------------- crypto floor

/// Every primitive operation one side of a handshake performs, read from a run with every event
/// observed: key exchange, signatures, each HKDF step, the transcript bytes hashed and each
/// record sealed or opened.
#[derive(Clone, Debug, Default)]
pub struct FloorOps {
    pub group: Option<NamedGroup>,
    /// Server: one CertificateVerify signature.
    pub signs: usize,
    /// Client: the certificate's signature and the CertificateVerify.
    pub verifies: usize,
    /// (op, hash, key/secret, data or (label, context), output length).
    pub hkdf: Vec<Hkdf>,
    /// Handshake messages in transcript order (their lengths are hashed).
    pub transcript: Vec<usize>,
    /// Protected records: (sealed by this side, AEAD input length).
    pub records: Vec<(bool, usize)>,
    /// AEAD keys set up (one per traffic secret).
    pub key_setups: usize,
}

#[derive(Clone, Debug)]
pub enum Hkdf {
    Extract {
        salt: Vec<u8>,
        ikm: Vec<u8>,
    },
    Expand {
        secret: Vec<u8>,
        label: Vec<u8>,
        context: Vec<u8>,
        len: usize,
    },
    Hmac {
        key: Vec<u8>,
        data: Vec<u8>,
    },
}

fn input<'a>(inputs: &'a [(&'static str, Vec<u8>)], name: &str) -> &'a [u8] {
    inputs
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[][..], |(_, v)| v)
}

impl FloorOps {
    fn from_events(events: &[Event], side_sends: Direction) -> FloorOps {
        let mut f = FloorOps::default();
        for e in events {
            match e {
                Event::Derivation(d) => {
                    let label = d.label.strip_prefix("tls13 ").unwrap_or(d.label);
                    f.hkdf.push(match d.op {
                        DerivationOp::Extract => Hkdf::Extract {
                            salt: input(&d.inputs, "salt").to_vec(),
                            ikm: input(&d.inputs, "ikm").to_vec(),
                        },
                        DerivationOp::DeriveSecret | DerivationOp::ExpandLabel => {
                            if label == "key" {
                                f.key_setups += 1;
                            }
                            Hkdf::Expand {
                                secret: input(&d.inputs, "secret").to_vec(),
                                label: label.as_bytes().to_vec(),
                                context: input(&d.inputs, "context").to_vec(),
                                len: d.output.len(),
                            }
                        }
                        DerivationOp::Hmac => Hkdf::Hmac {
                            key: input(&d.inputs, "key").to_vec(),
                            data: input(&d.inputs, "hash").to_vec(),
                        },
                    });
                }
                Event::Handshake(h) => {
                    if h.typ != HandshakeType::NewSessionTicket {
                        f.transcript.push(h.bytes.len());
                    }
                    if h.typ == HandshakeType::CertificateVerify {
                        if h.direction == side_sends {
                            f.signs += 1;
                        } else {
                            f.verifies += 2; // the certificate's signature and this one
                        }
                    }
                }
                Event::Record(r) if r.seq.is_some() => {
                    f.records
                        .push((r.direction == side_sends, r.payload_len - r.tag_len));
                }
                Event::Connected(n) => f.group = n.group,
                _ => {}
            }
        }
        f
    }

    /// The floor of both sides of `ours`' case, read from one observed handshake.
    pub fn of(ours: &Ours) -> (FloorOps, FloorOps) {
        let mut o = ours.observed();
        let mut tickets = if ours.case.resumes() {
            o.mint_tickets()
        } else {
            TicketStore::default()
        };
        let mut one = TicketStore::default();
        if let Some(t) = tickets.tickets.pop_back() {
            one.insert(t);
        }
        let server = o.server.clone();
        let (mut c, mut s) = o.handshake_observed(&server, one);
        let ce: Vec<Event> = c.events().collect();
        let se: Vec<Event> = s.events().collect();
        (
            FloorOps::from_events(&ce, Direction::ClientToServer),
            FloorOps::from_events(&se, Direction::ServerToClient),
        )
    }
}

impl Ours {
    /// Like `handshake` but keeps the events.
    fn handshake_observed(
        &mut self,
        server: &Arc<ServerConfig>,
        tickets: TicketStore,
    ) -> (Client, Server) {
        let now = now_ms();
        let early = self.case == Case::ZeroRtt && !tickets.is_empty();
        let mut c = Client::new(self.client.clone(), Box::new(SeededRandom::from_seed(9)))
            .unwrap()
            .with_tickets(tickets);
        c.start(now).unwrap();
        if early {
            c.send(EARLY_DATA).unwrap();
        }
        let mut s = Server::new(server.clone(), Box::new(SeededRandom::from_seed(10))).unwrap();
        loop {
            let out = c.take_output();
            if !out.is_empty() {
                s.receive(&out, now).unwrap();
            }
            let back = s.take_output();
            if !back.is_empty() {
                c.receive(&back, now).unwrap();
            }
            if out.is_empty() && back.is_empty() {
                break;
            }
        }
        (c, s)
    }
}

/// Primitive operations of one crypto library, enough for a TLS 1.3 handshake's floor.
pub trait Primitives {
    /// Client: key generation and the shared secret (DH, or ML-KEM decapsulation).
    fn kx_client(&self, group: NamedGroup);
    /// Server: DH key generation and shared secret, or ML-KEM encapsulation.
    fn kx_server(&self, group: NamedGroup);
    fn sign(&self);
    fn verify(&self);
    fn hmac(&self, key: &[u8], data: &[&[u8]]) -> [u8; 32];
    fn hash_transcript(&self, lens: &[usize]);
    fn aead(&self, seal: bool, len: usize, buf: &mut Vec<u8>);
    fn key_setup(&self);
}

fn expand_info(label: &[u8], context: &[u8], len: usize) -> Vec<u8> {
    let mut info = Vec::with_capacity(10 + label.len() + context.len());
    info.extend_from_slice(&(len as u16).to_be_bytes());
    info.push((6 + label.len()) as u8);
    info.extend_from_slice(b"tls13 ");
    info.extend_from_slice(label);
    info.push(context.len() as u8);
    info.extend_from_slice(context);
    info
}

/// Performs every operation of `ops` with `p` (SHA-256 suites).
pub fn run_floor(p: &dyn Primitives, ops: &FloorOps, client: bool, buf: &mut Vec<u8>) {
    if let Some(g) = ops.group {
        if client {
            p.kx_client(g)
        } else {
            p.kx_server(g)
        }
    }
    for _ in 0..ops.signs {
        p.sign();
    }
    for _ in 0..ops.verifies {
        p.verify();
    }
    for h in &ops.hkdf {
        match h {
            Hkdf::Extract { salt, ikm } => {
                let salt = if salt.is_empty() {
                    &[0u8; 32][..]
                } else {
                    salt
                };
                std::hint::black_box(p.hmac(salt, &[ikm]));
            }
            Hkdf::Expand {
                secret,
                label,
                context,
                len,
            } => {
                // HKDF-Expand: ceil(len / 32) HMACs over T(i-1) | info | i.
                let info = expand_info(label, context, *len);
                let mut prev: Option<[u8; 32]> = None;
                for i in 1..=len.div_ceil(32) {
                    let t = match &prev {
                        None => p.hmac(secret, &[&info, &[i as u8]]),
                        Some(pr) => p.hmac(secret, &[pr, &info, &[i as u8]]),
                    };
                    prev = Some(t);
                }
                std::hint::black_box(prev);
            }
            Hkdf::Hmac { key, data } => {
                std::hint::black_box(p.hmac(key, &[data]));
            }
        }
    }
    p.hash_transcript(&ops.transcript);
    for _ in 0..ops.key_setups {
        p.key_setup();
    }
    for (seal, len) in &ops.records {
        p.aead(*seal, *len, buf);
    }
}

/// tls13lab's own crypto through its crypto module (RustCrypto crates, or ring where a
/// `ring-*` feature says so).
pub struct OurPrimitives {
    /// ECDSA P-256, or the identity's ML-DSA level (its sign and verify cost the floor too).
    scheme: SignatureScheme,
    key: Arc<dyn tls13lab::config::Signer>,
    spki: Vec<u8>,
    message: Vec<u8>,
    signature: Vec<u8>,
    aead: AeadKey,
    sealed: Vec<u8>,
    /// The seed of the next signature's RandomSource: ML-DSA signing is a rejection loop whose
    /// iterations depend on `rnd`, so each call draws another, as successive handshakes do.
    sign_seed: std::cell::Cell<u64>,
}

impl OurPrimitives {
    pub fn new(id: &Identity) -> OurPrimitives {
        let message = vec![0x20; 130];
        let mut rng = SeededRandom::from_seed(3);
        let signature = id.key.sign(id.scheme, &message, &mut rng).unwrap();
        OurPrimitives {
            scheme: id.scheme,
            spki: id.key.public_key_spki_der().unwrap(),
            key: id.signer(),
            message,
            signature,
            aead: AeadKey::new(AeadAlg::Aes128Gcm, &[7; 16]).unwrap(),
            sealed: Vec::new(),
            sign_seed: std::cell::Cell::new(3),
        }
    }
}

impl Primitives for OurPrimitives {
    fn kx_client(&self, group: NamedGroup) {
        let mut rng = SeededRandom::from_seed(5);
        let k = kx::KeyShareSecret::generate(group, &mut rng).unwrap();
        // The server's share is not part of the client's floor: made once per call, outside.
        let peer = peer_share(group);
        std::hint::black_box(k.complete(&peer).unwrap());
    }

    fn kx_server(&self, group: NamedGroup) {
        let client = client_share(group);
        let mut rng = SeededRandom::from_seed(6);
        std::hint::black_box(kx::server_respond(group, &client, &mut rng).unwrap());
    }

    fn sign(&self) {
        let seed = self.sign_seed.get();
        self.sign_seed.set(seed.wrapping_add(1));
        let mut rng = SeededRandom::from_seed(seed);
        std::hint::black_box(self.key.sign(self.scheme, &self.message, &mut rng).unwrap());
    }

    fn verify(&self) {
        verify_signature(self.scheme, &self.spki, &self.message, &self.signature).unwrap();
    }

    fn hmac(&self, key: &[u8], data: &[&[u8]]) -> [u8; 32] {
        HashAlg::Sha256
            .hmac_parts(key, data)
            .as_slice()
            .try_into()
            .unwrap()
    }

    fn hash_transcript(&self, lens: &[usize]) {
        let mut st = HashAlg::Sha256.start();
        let zeros = [0u8; 4096];
        for &n in lens {
            let mut left = n;
            while left > 0 {
                let k = left.min(zeros.len());
                st.update(&zeros[..k]);
                left -= k;
            }
            std::hint::black_box(st.current());
        }
    }

    fn aead(&self, seal: bool, len: usize, buf: &mut Vec<u8>) {
        let nonce = [1u8; 12];
        let aad = [23, 3, 3, 0, 0];
        buf.clear();
        buf.resize(len, 0);
        if seal {
            std::hint::black_box(self.aead.seal_detached(&nonce, &aad, buf).unwrap());
        } else {
            // Open a real ciphertext of this length (made outside the timing, cached by size).
            let tag = SEALED.with(|m| {
                let mut m = m.borrow_mut();
                let (ct, tag) = m.entry(len).or_insert_with(|| {
                    let mut b = vec![0u8; len];
                    let tag = self.aead.seal_detached(&nonce, &aad, &mut b).unwrap();
                    (b, tag)
                });
                buf.copy_from_slice(ct);
                *tag
            });
            self.aead.open_detached(&nonce, &aad, buf, &tag).unwrap();
        }
    }

    fn key_setup(&self) {
        std::hint::black_box(AeadKey::new(AeadAlg::Aes128Gcm, &[7; 16]).unwrap());
    }
}

/// Ciphertext and tag by length.
type SealedCache = std::collections::HashMap<usize, (Vec<u8>, tls13lab::crypto::aead::Tag)>;

thread_local! {
    static SEALED: std::cell::RefCell<SealedCache> = Default::default();
    static SHARES: std::cell::RefCell<std::collections::HashMap<(NamedGroup, bool), Vec<u8>>> =
        Default::default();
}

/// A client share for `group` (the server's input), made once.
pub fn client_share(group: NamedGroup) -> Vec<u8> {
    SHARES.with(|m| {
        m.borrow_mut()
            .entry((group, true))
            .or_insert_with(|| {
                kx::KeyShareSecret::generate(group, &mut SeededRandom::from_seed(11))
                    .unwrap()
                    .public()
                    .to_vec()
            })
            .clone()
    })
}

/// A server share answering [`client_share`]... for a client key drawn from seed 5, as in
/// `kx_client` (ML-KEM ciphertexts are bound to the encapsulation key).
pub fn peer_share(group: NamedGroup) -> Vec<u8> {
    SHARES.with(|m| {
        m.borrow_mut()
            .entry((group, false))
            .or_insert_with(|| {
                let k =
                    kx::KeyShareSecret::generate(group, &mut SeededRandom::from_seed(5)).unwrap();
                kx::server_respond(group, k.public(), &mut SeededRandom::from_seed(12))
                    .unwrap()
                    .0
            })
            .clone()
    })
}

/// The server's key on aws-lc-rs: ECDSA P-256, or ML-DSA (`PqdsaKeyPair`, which draws its own
/// `rnd`: a floor, not a signer tls13lab could use).
enum AwsLcKey {
    Ecdsa(aws_lc_rs::signature::EcdsaKeyPair),
    MlDsa(aws_lc_rs::signature::PqdsaKeyPair),
}

/// The same operations on aws-lc-rs (what rustls' default provider calls).
pub struct AwsLcPrimitives {
    key: AwsLcKey,
    verify_alg: &'static dyn aws_lc_rs::signature::VerificationAlgorithm,
    public: Vec<u8>,
    message: Vec<u8>,
    signature: Vec<u8>,
    aead: aws_lc_rs::aead::LessSafeKey,
    rng: aws_lc_rs::rand::SystemRandom,
}

impl AwsLcPrimitives {
    pub fn new(id: &Identity) -> AwsLcPrimitives {
        use aws_lc_rs::signature::{self as sig, EcdsaKeyPair, KeyPair, PqdsaKeyPair};
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let message = vec![0x20; 130];
        let mldsa = |signing: &'static sig::PqdsaSigningAlgorithm| {
            AwsLcKey::MlDsa(PqdsaKeyPair::from_pkcs8(signing, &id.key_pkcs8).unwrap())
        };
        let (key, verify_alg): (_, &'static dyn sig::VerificationAlgorithm) = match id.scheme {
            SignatureScheme::ecdsa_secp256r1_sha256 => (
                AwsLcKey::Ecdsa(
                    EcdsaKeyPair::from_pkcs8(&sig::ECDSA_P256_SHA256_ASN1_SIGNING, &id.key_pkcs8)
                        .unwrap(),
                ),
                &sig::ECDSA_P256_SHA256_ASN1,
            ),
            SignatureScheme::mldsa44 => (mldsa(&sig::ML_DSA_44_SIGNING), &sig::ML_DSA_44),
            SignatureScheme::mldsa65 => (mldsa(&sig::ML_DSA_65_SIGNING), &sig::ML_DSA_65),
            SignatureScheme::mldsa87 => (mldsa(&sig::ML_DSA_87_SIGNING), &sig::ML_DSA_87),
            other => panic!("no aws-lc floor for {other}"),
        };
        let (signature, public) = match &key {
            AwsLcKey::Ecdsa(k) => (
                k.sign(&rng, &message).unwrap().as_ref().to_vec(),
                k.public_key().as_ref().to_vec(),
            ),
            AwsLcKey::MlDsa(k) => {
                let mut s = vec![0; 4627];
                let n = k.sign(&message, &mut s).unwrap();
                s.truncate(n);
                (s, k.public_key().as_ref().to_vec())
            }
        };
        let aead = aws_lc_rs::aead::LessSafeKey::new(
            aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_128_GCM, &[7; 16]).unwrap(),
        );
        AwsLcPrimitives {
            key,
            verify_alg,
            public,
            message,
            signature,
            aead,
            rng,
        }
    }

    fn x25519_pair(&self) -> (aws_lc_rs::agreement::EphemeralPrivateKey, Vec<u8>) {
        use aws_lc_rs::agreement::{EphemeralPrivateKey, X25519};
        let k = EphemeralPrivateKey::generate(&X25519, &self.rng).unwrap();
        let p = k.compute_public_key().unwrap().as_ref().to_vec();
        (k, p)
    }

    fn x25519_agree(&self, k: aws_lc_rs::agreement::EphemeralPrivateKey, peer: &[u8]) {
        use aws_lc_rs::agreement::{agree_ephemeral, UnparsedPublicKey, X25519};
        agree_ephemeral(k, UnparsedPublicKey::new(&X25519, peer), (), |s| {
            std::hint::black_box(s.len());
            Ok(())
        })
        .unwrap();
    }
}

/// Peer inputs for the aws-lc floor, made once: an X25519 public key, an ML-KEM-768
/// encapsulation key, and a decapsulation key (bytes) with a ciphertext for it.
struct AwsPeer {
    x25519: Vec<u8>,
    /// A long-lived X25519 key (an ECH server's).
    static_key: aws_lc_rs::agreement::PrivateKey,
    ek: Vec<u8>,
    dk: aws_lc_rs::kem::DecapsulationKey,
    ct: Vec<u8>,
}

thread_local! {
    static AWS_PEER: AwsPeer = {
        use aws_lc_rs::kem::{DecapsulationKey, ML_KEM_768};
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let k = aws_lc_rs::agreement::EphemeralPrivateKey::generate(&aws_lc_rs::agreement::X25519, &rng).unwrap();
        let dk = DecapsulationKey::generate(&ML_KEM_768).unwrap();
        let ek = dk.encapsulation_key().unwrap();
        let (ct, _) = ek.encapsulate().unwrap();
        AwsPeer {
            x25519: k.compute_public_key().unwrap().as_ref().to_vec(),
            static_key: aws_lc_rs::agreement::PrivateKey::generate(&aws_lc_rs::agreement::X25519)
                .unwrap(),
            ek: ek.key_bytes().unwrap().as_ref().to_vec(),
            dk,
            ct: ct.as_ref().to_vec(),
        }
    };
    static AWS_SEALED: std::cell::RefCell<std::collections::HashMap<usize, Vec<u8>>> =
        Default::default();
}

impl Primitives for AwsLcPrimitives {
    fn kx_client(&self, group: NamedGroup) {
        use aws_lc_rs::kem::{DecapsulationKey, ML_KEM_768};
        AWS_PEER.with(|peer| {
            let (k, _) = self.x25519_pair();
            self.x25519_agree(k, &peer.x25519);
            if group == NamedGroup::X25519MLKEM768 {
                // Key generation, then decapsulation (of a ciphertext made once for a stored
                // key: aws-lc keys cannot be made from a seed, and the cost is the same).
                let dk = DecapsulationKey::generate(&ML_KEM_768).unwrap();
                std::hint::black_box(dk.encapsulation_key().unwrap().key_bytes().unwrap());
                std::hint::black_box(peer.dk.decapsulate(peer.ct.as_slice().into()).unwrap());
            }
        })
    }

    fn kx_server(&self, group: NamedGroup) {
        use aws_lc_rs::kem::{EncapsulationKey, ML_KEM_768};
        AWS_PEER.with(|peer| {
            let (k, _) = self.x25519_pair();
            self.x25519_agree(k, &peer.x25519);
            if group == NamedGroup::X25519MLKEM768 {
                let ek = EncapsulationKey::new(&ML_KEM_768, &peer.ek).unwrap();
                std::hint::black_box(ek.encapsulate().unwrap());
            }
        })
    }

    fn sign(&self) {
        match &self.key {
            AwsLcKey::Ecdsa(k) => {
                std::hint::black_box(k.sign(&self.rng, &self.message).unwrap());
            }
            AwsLcKey::MlDsa(k) => {
                // A fresh rnd each call (aws-lc draws it), so the rejection loop's iterations
                // average out over a run as a handshake's do.
                let mut s = [0u8; 4627];
                std::hint::black_box(k.sign(&self.message, &mut s).unwrap());
            }
        }
    }

    fn verify(&self) {
        aws_lc_rs::signature::UnparsedPublicKey::new(self.verify_alg, &self.public)
            .verify(&self.message, &self.signature)
            .unwrap();
    }

    fn hmac(&self, key: &[u8], data: &[&[u8]]) -> [u8; 32] {
        use aws_lc_rs::hmac;
        let k = hmac::Key::new(hmac::HMAC_SHA256, key);
        let mut ctx = hmac::Context::with_key(&k);
        for d in data {
            ctx.update(d);
        }
        ctx.sign().as_ref().try_into().unwrap()
    }

    fn hash_transcript(&self, lens: &[usize]) {
        use aws_lc_rs::digest::{Context, SHA256};
        let mut st = Context::new(&SHA256);
        let zeros = [0u8; 4096];
        for &n in lens {
            let mut left = n;
            while left > 0 {
                let k = left.min(zeros.len());
                st.update(&zeros[..k]);
                left -= k;
            }
            std::hint::black_box(st.clone().finish());
        }
    }

    fn aead(&self, seal: bool, len: usize, buf: &mut Vec<u8>) {
        use aws_lc_rs::aead::{Aad, Nonce};
        let aad = [23, 3, 3, 0, 0];
        let nonce = || Nonce::assume_unique_for_key([1; 12]);
        buf.clear();
        if seal {
            buf.resize(len, 0);
            let tag = self
                .aead
                .seal_in_place_separate_tag(nonce(), Aad::from(aad), buf)
                .unwrap();
            std::hint::black_box(tag.as_ref());
        } else {
            // A real ciphertext of this length, made once outside the timing.
            AWS_SEALED.with(|m| {
                let mut m = m.borrow_mut();
                let ct = m.entry(len).or_insert_with(|| {
                    let mut b = vec![0u8; len];
                    let tag = self
                        .aead
                        .seal_in_place_separate_tag(nonce(), Aad::from(aad), &mut b)
                        .unwrap();
                    b.extend_from_slice(tag.as_ref());
                    b
                });
                buf.extend_from_slice(ct);
            });
            std::hint::black_box(
                self.aead
                    .open_in_place(nonce(), Aad::from(aad), buf)
                    .unwrap(),
            );
        }
    }

    fn key_setup(&self) {
        std::hint::black_box(aws_lc_rs::aead::LessSafeKey::new(
            aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_128_GCM, &[7; 16]).unwrap(),
        ));
    }
}

// ---------------------------------------------------------------------------- ECH's own floor

/// What Encrypted ClientHello adds to a handshake at the least (RFC 9849 §6.1, §7.1 over RFC
/// 9180's base mode with DHKEM(X25519, HKDF-SHA256), HKDF-SHA256 and AES-128-GCM), read from
/// an observed ECH handshake of `ours`: the sizes the AEAD and the key schedule work on.
pub struct EchFloorOps {
    /// EncodedClientHelloInner, padding included: what the client seals and the server opens.
    pub inner_len: usize,
    /// ClientHelloOuterAAD: the outer hello with the payload zeroed (§5.2), the AEAD's AAD.
    pub aad_len: usize,
    /// HPKE's `info`: "tls ech" || 0x00 || ECHConfig (§6.1).
    pub info_len: usize,
    /// The ServerHello (4-byte header included): §7.2's acceptance confirmation hashes it, with
    /// the last 8 bytes of its random zeroed, after ClientHelloInner.
    pub server_hello_len: usize,
}

impl EchFloorOps {
    /// The sizes of `ours`' handshake, of its case (a resumption offers a ticket, and a psk_ke
    /// ServerHello has no key share), which must offer ECH (`Ours::with_ech`).
    pub fn of(ours: &Ours) -> EchFloorOps {
        let mut o = ours.observed();
        let server = o.server.clone();
        let tickets = if o.case.resumes() {
            o.mint_tickets()
        } else {
            TicketStore::default()
        };
        let (mut c, _s) = o.handshake_observed(&server, tickets);
        let events: Vec<Event> = c.events().collect();
        let inner_len = events
            .iter()
            .find_map(|e| match e {
                Event::EchOffer(x) => Some(x.encoded_inner_len),
                _ => None,
            })
            .expect("an ECH offer");
        // The first ClientHello the client sent is the outer one (4-byte header excluded).
        let outer_len = events
            .iter()
            .find_map(|e| match e {
                Event::Handshake(h)
                    if h.direction == Direction::ClientToServer
                        && h.typ == HandshakeType::ClientHello =>
                {
                    Some(h.bytes.len() - 4)
                }
                _ => None,
            })
            .expect("a ClientHello");
        let server_hello_len = events
            .iter()
            .find_map(|e| match e {
                Event::Handshake(h)
                    if h.direction == Direction::ServerToClient
                        && h.typ == HandshakeType::ServerHello =>
                {
                    Some(h.bytes.len())
                }
                _ => None,
            })
            .expect("a ServerHello");
        let config_len = match &ours.client.ech {
            tls13lab::config::EchMode::Config { list, .. } => list.encode().len() - 2,
            _ => panic!("ECH is not offered"),
        };
        EchFloorOps {
            inner_len,
            aad_len: outer_len,
            info_len: 8 + config_len,
            server_hello_len,
        }
    }
}

/// One side's share of [`EchFloorOps`] on the fastest backends measured here: X25519 on
/// aws-lc (aws-lc-rs: the client generates a key and computes one shared secret, the server
/// one shared secret with its static key), the HPKE key schedule's seven HMAC-SHA256 (each
/// labeled step is one HMAC: LabeledExtract eae_prk, LabeledExpand shared_secret, then
/// KeySchedule's psk_id_hash, info_hash, secret, key and base_nonce; RFC 9180 §4.1, §5.1) and
/// one AES-128-GCM key setup and Seal or Open of the inner hello under the outer hello as
/// AAD, on our crypto module (ring with the default features); and §7.2's acceptance
/// confirmation, which each side computes: the ServerHello hashed a second time (its random's
/// last 8 bytes zeroed; the transcript through ClientHelloInner is shared with the handshake's,
/// and SHA-256's state diverges at those bytes, so everything after them is hashed twice), one
/// HKDF-Extract over ClientHelloInner.random and one HKDF-Expand-Label.
pub fn run_ech_floor(
    aws: &AwsLcPrimitives,
    ours: &OurPrimitives,
    ops: &EchFloorOps,
    client: bool,
    buf: &mut Vec<u8>,
) {
    AWS_PEER.with(|peer| {
        if client {
            let (k, _) = aws.x25519_pair();
            aws.x25519_agree(k, &peer.x25519);
        } else {
            // The server's key is its ECH key, made once: one shared secret, no key generation.
            use aws_lc_rs::agreement::{agree, UnparsedPublicKey, X25519};
            agree(
                &peer.static_key,
                UnparsedPublicKey::new(&X25519, &peer.x25519),
                (),
                |s| {
                    std::hint::black_box(s.len());
                    Ok(())
                },
            )
            .unwrap();
        }
    });
    // "HPKE-v1" || suite_id || label || ikm, and I2OSP(L, 2) || "HPKE-v1" || suite_id ||
    // label || info: the HMAC inputs' lengths (suite_id: 5 bytes for the KEM, 10 for HPKE).
    let extract = |suite: usize, label: usize, ikm: usize| 7 + suite + label + ikm;
    let expand = |suite: usize, label: usize, info: usize| 2 + 7 + suite + label + info + 1;
    let zeros = [0u8; 2048];
    let ks_context = 1 + 32 + 32;
    let steps = [
        extract(5, 7, 32),            // eae_prk over the DH output
        expand(5, 13, 2 * 32),        // shared_secret over enc || pkR
        extract(10, 11, 0),           // psk_id_hash
        extract(10, 9, ops.info_len), // info_hash
        extract(10, 6, 0),            // secret (psk empty)
        expand(10, 3, ks_context),    // key
        expand(10, 10, ks_context),   // base_nonce
    ];
    for len in steps {
        std::hint::black_box(ours.hmac(&[7; 32], &[&zeros[..len]]));
    }
    let key = AeadKey::new(AeadAlg::Aes128Gcm, &[7; 16]).unwrap();
    let nonce = [1u8; 12];
    let aad = vec![0u8; ops.aad_len];
    buf.clear();
    buf.resize(ops.inner_len, 0);
    if client {
        std::hint::black_box(key.seal_detached(&nonce, &aad, buf).unwrap());
    } else {
        // Open a real ciphertext (made once, outside the timing).
        let tag = ECH_SEALED.with(|m| {
            let mut m = m.borrow_mut();
            let (ct, tag) = m.entry((ops.inner_len, ops.aad_len)).or_insert_with(|| {
                let mut b = vec![0u8; ops.inner_len];
                let tag = key.seal_detached(&nonce, &aad, &mut b).unwrap();
                (b, tag)
            });
            buf.copy_from_slice(ct);
            *tag
        });
        key.open_detached(&nonce, &aad, buf, &tag).unwrap();
    }
    // §7.2: accept_confirmation = HKDF-Expand-Label(HKDF-Extract(0, ClientHelloInner.random),
    // "ech accept confirmation", transcript_ech_conf, 8).
    ours.hash_transcript(&[ops.server_hello_len]);
    let prk = ours.hmac(&[0; 32], &[&[7; 32]]);
    let info_len = 2 + 1 + 6 + 23 + 1 + 32;
    std::hint::black_box(ours.hmac(&prk, &[&zeros[..info_len], &[1]]));
}

/// Ciphertext and tag by (plaintext, AAD) length.
type EchSealedCache =
    std::collections::HashMap<(usize, usize), (Vec<u8>, tls13lab::crypto::aead::Tag)>;

thread_local! {
    static ECH_SEALED: std::cell::RefCell<EchSealedCache> = Default::default();
}
