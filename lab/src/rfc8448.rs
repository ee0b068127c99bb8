//! RFC 8448's example traces (sections 3-7) replayed through our real client and server.
//!
//! The RFC publishes every input of its handshakes: randoms, ephemeral private keys, the ticket's
//! age_add and identity. [`Section::draws`] feeds them to an endpoint through [`ScriptedRandom`],
//! [`Section::replay`] feeds it the peer's records and requires every record it sends to equal
//! the RFC's, byte for byte. The
//! endpoint's [`Event`]s then carry the section's whole key schedule, which `tests/rfc8448.rs`
//! checks value by value and `tls13lab keys --rfc8448 N` prints.
//!
//! RSA-PSS (and the unpublished ECDSA/RSA keys of §6) make CertificateVerify signatures
//! non-reproducible, so a replay signer returns the published signature — after checking that it
//! is asked to sign exactly the content the RFC signed, which proves the transcript identical.
//!
//! ```
//! use lab::rfc8448::{run_client, Section, NOW_MS};
//! use tls13lab::events::Event;
//!
//! // Our client against the RFC's server records of §3: every record it sends is the RFC's.
//! let (client, events) = run_client(3, Default::default(), NOW_MS).unwrap();
//! assert!(client.is_connected());
//! let master = Section::new(3).unwrap().summary("master_secret").unwrap();
//! assert!(events.iter().any(|e| matches!(e, Event::Derivation(d) if d.output == master)));
//! ```
//!
//! The traces are embedded (`tests/vectors/rfc8448.json`, with values computed from them in
//! `rfc8448_computed_extras.json`). They are constant data: accessors panic with a message if
//! the embedded files lack an entry, which the tests would show at once.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use tls13lab::client::Client;
use tls13lab::config::{
    CertifiedKey, ClientAuth, ClientConfig, HelloPadding, ServerConfig, ServerVerification, Signer,
    TicketMode,
};
use tls13lab::connection::{Connection, Role};
use tls13lab::crypto::random::{RandomSource, ScriptedRandom};
use tls13lab::error::Error;
use tls13lab::events::{Event, Observe, Side};
use tls13lab::ledger::unhex;
use tls13lab::messages::enums::{
    CipherSuite, ExtensionType, NamedGroup, PskKeyExchangeMode, SignatureScheme,
};
use tls13lab::messages::extensions::Extension;
use tls13lab::messages::handshake::{HandshakeMessage, HandshakePayload};
use tls13lab::server::Server;
use tls13lab::session::TicketStore;

/// 2020-01-01: inside the RFC certificates' validity (they expired 2026-07-30).
pub const NOW_MS: u64 = 1_577_836_800_000;
/// §4's ClientHello reports a ticket age of 6 ms (obfuscated 0xfad6aacb - age_add 0xfad6aac5).
pub const RESUME_MS: u64 = NOW_MS + 6;
/// The sections that hold a handshake trace.
pub const SECTIONS: [u8; 5] = [3, 4, 5, 6, 7];

const VECTORS: &str = include_str!("../../tests/vectors/rfc8448.json");
const EXTRAS: &str = include_str!("../../tests/vectors/rfc8448_computed_extras.json");
const SERVER_RSA_CERT: &str = include_str!("../../tests/vectors/pem/server_rsa_certificate.pem");
const SERVER_ECDSA_CERT: &str =
    include_str!("../../tests/vectors/pem/server_ecdsa_certificate_client_auth.pem");
const CLIENT_RSA_CERT: &str = include_str!("../../tests/vectors/pem/client_rsa_certificate.pem");

fn parsed(text: &'static str, cell: &'static OnceLock<Value>) -> &'static Value {
    cell.get_or_init(|| serde_json::from_str(text).expect("embedded RFC 8448 vectors are JSON"))
}

fn vectors() -> &'static Value {
    static V: OnceLock<Value> = OnceLock::new();
    parsed(VECTORS, &V)
}

fn extras() -> &'static Value {
    static V: OnceLock<Value> = OnceLock::new();
    parsed(EXTRAS, &V)
}

fn h(v: &Value) -> Vec<u8> {
    v.as_str()
        .and_then(unhex)
        .unwrap_or_else(|| panic!("RFC 8448 vectors: {v} is not hex"))
}

fn pem_cert(pem: &str) -> Vec<u8> {
    tls13lab::crypto::cert::certs_from_pem(pem)
        .ok()
        .and_then(|mut c| (!c.is_empty()).then(|| c.remove(0)))
        .expect("embedded RFC 8448 certificate")
}

/// A replay that did not go as the RFC printed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayError(pub String);

impl core::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReplayError {}

/// One record of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Sent by the client.
    pub from_client: bool,
    /// Its real content type, e.g. `"handshake"`, `"application_data"`, `"alert"`.
    pub inner: String,
    /// The plaintext content.
    pub payload: Vec<u8>,
    /// The record as on the wire.
    pub wire: Vec<u8>,
}

impl TraceRecord {
    /// TLSInnerPlaintext of a protected record (opaque_type application_data, RFC 8446 §5.2):
    /// the content, then its real type; the RFC's records have no padding. `None` in the
    /// clear.
    pub fn inner_plaintext(&self) -> Option<Vec<u8>> {
        (self.wire.first() == Some(&23)).then(|| {
            let typ = match self.inner.as_str() {
                "handshake" => 22,
                "alert" => 21,
                _ => 23,
            };
            [self.payload.as_slice(), &[typ]].concat()
        })
    }
}

/// One section of RFC 8448.
#[derive(Clone, Copy, Debug)]
pub struct Section {
    n: u8,
    v: &'static Value,
    extras: &'static Value,
}

impl Section {
    /// Section `n` (3 to 7).
    pub fn new(n: u8) -> Result<Section, ReplayError> {
        if !SECTIONS.contains(&n) {
            return Err(ReplayError(format!(
                "RFC 8448 has handshake traces in sections 3 to 7, not {n}"
            )));
        }
        let key = n.to_string();
        Ok(Section {
            n,
            v: &vectors()["sections"][&key],
            extras: &extras()["sections"][&key],
        })
    }

    /// The section number.
    pub fn number(&self) -> u8 {
        self.n
    }

    /// The section's title, e.g. "Simple 1-RTT Handshake".
    pub fn title(&self) -> &'static str {
        self.v["title"].as_str().unwrap_or("")
    }

    /// The records in the order they cross the wire.
    pub fn records(&self) -> Vec<TraceRecord> {
        self.v["records"]
            .as_array()
            .expect("RFC 8448 records")
            .iter()
            .map(|r| TraceRecord {
                from_client: r["direction"] == "client_to_server",
                inner: r["inner_content_type"].as_str().unwrap_or("").to_string(),
                payload: h(&r["payload"]),
                wire: h(&r["complete_record"]),
            })
            .collect()
    }

    /// A private key from the section's key pairs, e.g. `client_x25519`.
    pub fn key(&self, name: &str) -> Vec<u8> {
        h(&self.v["key_pairs"][name]["private_key"])
    }

    /// A field of a parsed message, e.g. `("server_hello", "random")`.
    pub fn parsed(&self, msg: &str, field: &str) -> Vec<u8> {
        h(&self.v["parsed"][msg][field])
    }

    /// One value of the RFC's summary of the section, e.g. `"handshake_secret"`.
    pub fn summary(&self, name: &str) -> Option<Vec<u8>> {
        self.v["summary"][name].as_str().and_then(unhex)
    }

    /// Every derived value of the section's summary (secrets, keys, IVs, Finished values, the
    /// (EC)DHE shared secret), by the RFC's names. Transcript hashes and the ticket nonce are
    /// left out: they are inputs of derivations, not derivations.
    pub fn summary_values(&self) -> Vec<(String, Vec<u8>)> {
        self.v["summary"]
            .as_object()
            .expect("RFC 8448 summary")
            .iter()
            .filter(|(k, _)| {
                !matches!(k.as_str(), "source" | "ticket_nonce") && !k.ends_with("hash")
            })
            .filter_map(|(k, v)| v.as_str().and_then(unhex).map(|b| (k.clone(), b)))
            .collect()
    }

    /// The handshake message `name` (e.g. "CertificateVerify") sent by `from` ("client" or
    /// "server"), with its header.
    pub fn message(&self, from: &str, name: &str) -> Vec<u8> {
        let m = self.v["handshake_messages"]
            .as_array()
            .expect("RFC 8448 handshake messages")
            .iter()
            .find(|m| m["from"] == from && m["rfc_name"] == name)
            .unwrap_or_else(|| panic!("RFC 8448 §{}: no {from} {name}", self.n));
        h(&m["hex"])
    }

    fn decoded(&self, from: &str, name: &str) -> HandshakePayload {
        HandshakeMessage::decode(&self.message(from, name), Default::default())
            .unwrap_or_else(|e| panic!("RFC 8448 §{} {from} {name}: {e:?}", self.n))
            .payload
    }

    /// A signer that returns the RFC's published CertificateVerify signature of `from`, and
    /// refuses to sign anything but the content the RFC signed.
    pub fn replay_signer(&self, from: &str) -> Arc<dyn Signer> {
        let HandshakePayload::CertificateVerify(cv) = self.decoded(from, "CertificateVerify")
        else {
            panic!("RFC 8448 §{}: not a CertificateVerify", self.n)
        };
        let content = self.extras["certificate_verify_signed_content"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["from"] == from))
            .map(|c| h(&c["signed_content"]))
            .expect("RFC 8448 signed content");
        Arc::new(ReplaySigner {
            scheme: cv.scheme,
            expected_content: content,
            signature: cv.signature,
        })
    }

    /// The ClientHello the RFC's client sends, as configuration.
    pub fn client_config(&self) -> ClientConfig {
        let ext_types = self.v["parsed"]["client_hello_1"]["extension_types"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut extra = vec![Extension::RenegotiationInfo(vec![0])];
        if ext_types.iter().any(|t| t == "0023") {
            extra.push(Extension::Unknown {
                typ: ExtensionType::SessionTicket,
                body: vec![],
            });
        }
        let server_cert = if self.n == 6 {
            pem_cert(SERVER_ECDSA_CERT)
        } else {
            pem_cert(SERVER_RSA_CERT)
        };
        // The client's offers, read from its first ClientHello (its policy, not a result).
        let first = &self.records()[0].payload;
        let mut groups = Vec::new();
        let mut schemes = Vec::new();
        if let Ok(HandshakeMessage {
            payload: HandshakePayload::ClientHello(ch1),
            ..
        }) = HandshakeMessage::decode(first, Default::default())
        {
            for e in &ch1.extensions {
                match e {
                    Extension::SupportedGroups(g) => groups = g.clone(),
                    Extension::SignatureAlgorithms(s) => schemes = s.clone(),
                    _ => {}
                }
            }
        }
        let mut config = ClientConfig::default();
        config.cipher_suites = vec![
            CipherSuite::TLS_AES_128_GCM_SHA256,
            CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
            CipherSuite::TLS_AES_256_GCM_SHA384,
        ];
        config.groups = groups;
        config.key_shares = vec![NamedGroup::X25519];
        config.signature_schemes = schemes;
        config.server_name = Some("server".into());
        // The RFC certificates have no subjectAltName: validate the chain, not the name.
        config.verification = ServerVerification::RootsNoName(vec![server_cert]);
        config.record_size_limit = Some(0x4001);
        config.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
        config.extra_extensions = extra;
        config.extension_order = [
            0x0000, 0xff01, 0x000a, 0x0023, 0x0033, 0x002a, 0x002b, 0x000d, 0x002c, 0x002d, 0x001c,
            0x0015,
        ]
        .into_iter()
        .map(ExtensionType::from)
        .collect();
        // §4's ClientHello and §5's second one are padded from 256..511 to 512 bytes
        // (RFC 7685).
        config.hello_padding = HelloPadding::Avoid256To511;
        config.compat_mode = self.n == 7;
        config.client_cert = (self.n == 6).then(|| CertifiedKey {
            chain: vec![pem_cert(CLIENT_RSA_CERT)],
            key: self.replay_signer("client"),
        });
        // The RFC's ClientHellos do not offer post_handshake_auth (§4.2.6), certificate or not.
        config.post_handshake_auth = Some(false);
        // Nor compress_certificate (RFC 8879 came later).
        config.cert_compression = Vec::new();
        config.fixed_validation_time_ms = Some(NOW_MS);
        // The replay checks every secret against the RFC's: it asks for them.
        config.observe = Observe::ALL_WITH_SECRETS;
        config
    }

    /// The RFC's server policy, as configuration. §4 needs the session state §3's server kept
    /// (set `sessions` from it) to accept the ticket.
    pub fn server_config(&self) -> ServerConfig {
        let three = || Section::new(3).expect("section 3");
        let (cert, signer) = match self.n {
            // §4 resumes: no certificate is sent, any key will do.
            4 => (pem_cert(SERVER_RSA_CERT), three().replay_signer("server")),
            6 => (pem_cert(SERVER_ECDSA_CERT), self.replay_signer("server")),
            _ => (pem_cert(SERVER_RSA_CERT), self.replay_signer("server")),
        };
        let mut cfg = ServerConfig::new(CertifiedKey {
            chain: vec![cert],
            key: signer,
        });
        cfg.cipher_suites = vec![CipherSuite::TLS_AES_128_GCM_SHA256];
        cfg.observe = Observe::ALL_WITH_SECRETS;
        // The groups the server lists in EncryptedExtensions, in its preference order.
        if let HandshakePayload::EncryptedExtensions(exts) =
            self.decoded("server", "EncryptedExtensions")
        {
            for e in exts {
                if let Extension::SupportedGroups(g) = e {
                    cfg.groups = g;
                }
            }
        }
        cfg.send_supported_groups = tls13lab::config::EeSupportedGroups::Always;
        // The RFC's server sends a plain Certificate (and its CertificateRequest in §6 offers
        // no compression).
        cfg.cert_compression = Vec::new();
        cfg.strict_group_preference = true;
        cfg.record_size_limit = Some(0x4001);
        cfg.compat_mode = true;
        cfg.extension_order = vec![
            ExtensionType::SupportedGroups,
            ExtensionType::RecordSizeLimit,
            ExtensionType::ServerName,
        ];
        if self.n == 5 {
            cfg.hrr_cookie = Some(self.parsed("hello_retry_request", "cookie").len());
        }
        if self.n == 6 {
            // The CertificateRequest lists these schemes (and we accept the client's with them).
            if let HandshakePayload::CertificateRequest(cr) =
                self.decoded("server", "CertificateRequest")
            {
                for e in cr.extensions {
                    if let Extension::SignatureAlgorithms(s) = e {
                        cfg.signature_schemes = s;
                    }
                }
            }
            cfg.client_auth = ClientAuth::Required(vec![pem_cert(CLIENT_RSA_CERT)]);
            cfg.fixed_validation_time_ms = Some(NOW_MS);
        }
        // §3 issues one stateful ticket (its identity is injected) allowing 1024 bytes of 0-RTT.
        cfg.tickets = u32::from(self.n == 3);
        cfg.ticket_lifetime = 30;
        cfg.max_early_data = 1024;
        cfg.ticket_mode = TicketMode::Stateful;
        cfg.stateful_ticket_len = three().parsed("new_session_ticket", "ticket").len();
        cfg
    }

    /// What the injected randomness must return, in the order `side` draws it.
    pub fn draws(&self, side: Side) -> Vec<Vec<u8>> {
        let mut d = Vec::new();
        match side {
            Side::Client => {
                d.push(self.parsed("client_hello_1", "random"));
                if self.n == 7 {
                    d.push(self.parsed("client_hello_1", "legacy_session_id"));
                }
                d.push(self.key("client_x25519"));
                if self.n == 5 {
                    d.push(self.key("client_secp256r1"));
                }
            }
            Side::Server => {
                if self.n == 5 {
                    d.push(self.parsed("hello_retry_request", "cookie"));
                }
                d.push(self.parsed("server_hello", "random"));
                d.push(if self.n == 5 {
                    self.key("server_secp256r1")
                } else {
                    self.key("server_x25519")
                });
                if self.n == 3 {
                    d.push(self.parsed("new_session_ticket", "ticket_age_add"));
                    d.push(self.parsed("new_session_ticket", "ticket"));
                }
            }
        }
        d
    }

    /// The RFC's client, with `tickets` to resume from (§4 needs §3's), not yet started.
    pub fn client(&self, tickets: TicketStore) -> Result<Client, Error> {
        let rng = ScriptedRandom::new(self.draws(Side::Client), 0);
        Ok(Client::new(Arc::new(self.client_config()), Box::new(rng))?.with_tickets(tickets))
    }

    /// The RFC's server with configuration `cfg` (usually [`server_config`](Self::server_config)).
    pub fn server(&self, cfg: ServerConfig) -> Result<Server, Error> {
        let rng = ScriptedRandom::new(self.draws(Side::Server), 0);
        Server::new(Arc::new(cfg), Box::new(rng))
    }

    /// Walk the section's records: feed `ep` the peer's, and require the ones `ep` sends to come
    /// out byte-exact (sending the scripted application data and close_notify when the trace
    /// shows them). Returns `ep`, whose received data waits to be read, and every event it
    /// reported.
    pub fn replay<R: Role>(
        &self,
        mut ep: Connection<R>,
        now: u64,
    ) -> Result<(Connection<R>, Vec<Event>), ReplayError> {
        let side = ep.side();
        let fail = |i: usize, what: String| {
            ReplayError(format!("§{} {side:?} record {i}: {what}", self.n))
        };
        let mut pending: Vec<u8> = Vec::new();
        let mut events = Vec::new();
        for (i, r) in self.records().iter().enumerate() {
            let ours = r.from_client == (side == Side::Client);
            if !ours {
                let got = ep.receive(&r.wire, now);
                events.extend(ep.events());
                let taken = got.map_err(|e| fail(i, e.to_string()))?;
                if taken != r.wire.len() {
                    return Err(fail(i, format!("took {taken} of {} bytes", r.wire.len())));
                }
                continue;
            }
            // Application actions that produce our records.
            match r.inner.as_str() {
                "application_data" if pending.len() < r.wire.len() => {
                    ep.send(&r.payload).map_err(|e| fail(i, e.to_string()))?
                }
                "alert" if pending.len() < r.wire.len() => {
                    if r.payload != [1, 0] {
                        return Err(fail(i, "only close_notify is scripted".into()));
                    }
                    ep.close();
                }
                _ => {}
            }
            pending.extend(ep.take_output());
            events.extend(ep.events());
            if !pending.starts_with(&r.wire) {
                return Err(fail(
                    i,
                    format!(
                        "({}) differs:\n ours: {}\n rfc:  {}",
                        r.inner,
                        tls13lab::events::hex(&pending[..pending.len().min(r.wire.len())]),
                        tls13lab::events::hex(&r.wire)
                    ),
                ));
            }
            pending.drain(..r.wire.len());
        }
        pending.extend(ep.take_output());
        events.extend(ep.events());
        if !pending.is_empty() {
            return Err(ReplayError(format!(
                "§{} {side:?}: extra bytes {}",
                self.n,
                tls13lab::events::hex(&pending)
            )));
        }
        Ok((ep, events))
    }
}

struct ReplaySigner {
    scheme: SignatureScheme,
    expected_content: Vec<u8>,
    signature: Vec<u8>,
}

impl Signer for ReplaySigner {
    fn schemes(&self) -> Vec<SignatureScheme> {
        vec![self.scheme]
    }

    fn sign(
        &self,
        _: SignatureScheme,
        message: &[u8],
        _: &mut dyn RandomSource,
    ) -> Result<Vec<u8>, Error> {
        if message != self.expected_content {
            return Err(Error::Config(
                "RFC 8448 replay: asked to sign other CertificateVerify content than the RFC's"
                    .into(),
            ));
        }
        Ok(self.signature.clone())
    }
}

/// Replay section `n` with our client against the RFC's server records, starting at `now`.
pub fn run_client(
    n: u8,
    tickets: TicketStore,
    now: u64,
) -> Result<(Client, Vec<Event>), ReplayError> {
    let sec = Section::new(n)?;
    let mut c = sec
        .client(tickets)
        .map_err(|e| ReplayError(format!("§{n} client: {e}")))?;
    c.start(now)
        .map_err(|e| ReplayError(format!("§{n} client start: {e}")))?;
    sec.replay(c, now)
}

/// Replay section `n` with our server (configured by `cfg`) against the RFC's client records.
pub fn run_server(n: u8, cfg: ServerConfig, now: u64) -> Result<(Server, Vec<Event>), ReplayError> {
    let sec = Section::new(n)?;
    let s = sec
        .server(cfg)
        .map_err(|e| ReplayError(format!("§{n} server: {e}")))?;
    sec.replay(s, now)
}

/// Replay section `n` with our `side` on its own — §4 after §3, whose ticket (client) or
/// session state (server) it resumes — and return the events of section `n`; with `export`,
/// then compute a 32-byte TLS-Exporter value under that label (its derivation events follow).
pub fn replay_section(n: u8, side: Side, export: Option<&[u8]>) -> Result<Vec<Event>, ReplayError> {
    fn finish<R: Role>(
        mut ep: Connection<R>,
        mut events: Vec<Event>,
        export: Option<&[u8]>,
    ) -> Result<Vec<Event>, ReplayError> {
        if let Some(label) = export {
            ep.export(label, b"", 32)
                .map_err(|e| ReplayError(format!("exporter: {e}")))?;
            events.extend(ep.events());
        }
        Ok(events)
    }
    match (side, n) {
        (Side::Client, 4) => {
            let (c, _) = run_client(3, TicketStore::default(), NOW_MS)?;
            let (c, events) = run_client(4, c.tickets().clone(), RESUME_MS)?;
            finish(c, events, export)
        }
        (Side::Client, _) => {
            let (c, events) = run_client(n, TicketStore::default(), NOW_MS)?;
            finish(c, events, export)
        }
        (Side::Server, 4) => {
            let cfg = Section::new(3)?.server_config();
            let sessions = cfg.sessions.clone();
            run_server(3, cfg, NOW_MS)?;
            let mut cfg4 = Section::new(4)?.server_config();
            cfg4.sessions = sessions;
            let (s, events) = run_server(4, cfg4, RESUME_MS)?;
            finish(s, events, export)
        }
        (Side::Server, _) => {
            let (s, events) = run_server(n, Section::new(n)?.server_config(), NOW_MS)?;
            finish(s, events, export)
        }
    }
}
