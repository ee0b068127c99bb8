//! The TLS 1.3 client: one struct per handshake state (RFC 8446 §A.1).
//!
//! ```text
//!  Start ──ClientHello──▶ ExpectServerHello ──HRR──▶ ClientHello 2 ──▶ ExpectServerHelloAfterRetry
//!                               │ ServerHello                                   │ ServerHello
//!                               ▼                                               │
//!                   ExpectEncryptedExtensions ◀─────────────────────────────────┘
//!                     │ (PSK)   │ (certificate)
//!                     │         ▼
//!                     │  ExpectCertificateOrRequest ──CertificateRequest──▶ ExpectCertificate
//!                     │         │ Certificate                                   │ Certificate
//!                     │         ▼                                               │
//!                     │  ExpectCertificateVerify ◀──────────────────────────────┘
//!                     ▼         │ CertificateVerify
//!               ExpectFinished ◀┘
//!                     │ Finished (send ours)
//!                     ▼
//!                 Connected (NewSessionTicket, KeyUpdate, data; CertificateRequest when we
//!                            offered post_handshake_auth, answered at once, §4.6.2)
//! ```
//!
//! Each state holds only what its successors need, and a transition (`on_*`) consumes its state
//! and moves those parts into the next one, so what a state implies is in its type rather than
//! re-checked. A HelloRetryRequest is answered once: only `ExpectServerHello` can take one
//! (§4.1.4). From ServerHello to the server's Finished every state embeds a `Handshake`
//! (suite, transcript, handshake secrets, what ServerHello settled); after EncryptedExtensions
//! also `ServerExtensions`. `ExpectCertificateVerify` holds a `ServerCertificate`, the
//! end-entity certificate of a non-empty chain that passed verification, and `ExpectFinished` a
//! `ServerAuth`: the selected PSK (and whether 0-RTT was accepted), or the verified
//! CertificateVerify's scheme and the server's CertificateRequest, if any.

use std::borrow::Cow;
use std::sync::Arc;

use crate::config::{
    apply_extension_order, ClientConfig, EchMode, HelloPadding, ServerVerification,
};
use crate::conn::Conn;
use crate::connection::check_verify_data;
use crate::connection::{Connection, Role};
use crate::crypto::aead::{suite_params, SuiteParams};
use crate::crypto::cert::{self, Usage};
use crate::crypto::hpke::{self, HpkeSink, HpkeStep, SenderContext};
use crate::crypto::kx::KeyShareSecret;
use crate::crypto::random::RandomSource;
use crate::crypto::sign::{certificate_verify_message, SigError};
use crate::ech::client::{choose, compressible_run, Chosen};
use crate::ech::confirm::{self, ACCEPT_LABEL, HRR_ACCEPT_LABEL};
use crate::ech::inner::InnerLayout;
use crate::ech::wire::{decode_hrr_confirmation, decode_retry_configs, EchClientHello};
use crate::error::{Error, PeerMisbehaved};
use crate::events::{
    EarlyDataStatus, EchInnerParts, EchOfferEvent, EchOutcome, EchParts, Epoch, Event,
    HandshakeEvent, KeyShareEvent, Negotiated, Side,
};
use crate::keyschedule::schedule::{EarlySecret, HandshakeSecret, TrafficSecret};
use crate::keyschedule::transcript::Transcript;
use crate::keyschedule::NoSink;
use crate::messages::ech::EchConfigList;
use crate::messages::enums::{
    CertificateCompressionAlgorithm, CipherSuite, ExtensionType, HandshakeType, NamedGroup,
    ProtocolVersion, SignatureScheme,
};
use crate::messages::extensions::{Extension, ExtensionContext, OutgoingExtension};
use crate::messages::handshake::{
    CertificateRequest, CertificateVerify, ClientHelloOut, DecodeContext, HandshakeMessage,
    HandshakePayload, OutgoingMessage, ServerHello, DOWNGRADE_TLS11, DOWNGRADE_TLS12,
};
use crate::session::{StoredTicket, TicketStore};
use crate::traffic::{receive_key_update, Traffic};

/// A TLS 1.3 client connection, sans-IO: feed it bytes with [`Client::receive`], send what
/// [`Client::take_output`] returns, read the outcome from its state ([`Client::negotiated`])
/// and, when a recorder was asked for ([`crate::Observe`]), what happened from
/// [`Client::events`]. The calls both sides share are those of [`Connection`]; the client adds
/// [`Client::new`], [`Client::start`], [`Client::with_tickets`], [`Client::tickets`],
/// [`Client::ech_outcome`] and [`Client::take_rejected_early_data`].
pub type Client = Connection<ClientSide>;

/// The client's side of a [`Connection`]: its configuration, handshake state and tickets.
pub struct ClientSide {
    config: Arc<ClientConfig>,
    state: State,
    tickets: TicketStore,
    offered_ticket: Option<StoredTicket>,
    early_data: EarlyDataState,
    /// ECH's outcome (RFC 9849 §6.1), once the ServerHello settled it.
    ech: Option<EchOutcome>,
}

/// 0-RTT bookkeeping on the client (§4.2.10).
#[derive(Default)]
struct EarlyDataState {
    /// The bytes sent as early data (kept until the server accepts or rejects).
    sent: Vec<u8>,
    /// The ticket's max_early_data_size minus what was sent.
    budget: usize,
    /// Early data may be written now.
    open: bool,
    status: Option<EarlyDataStatus>,
    /// What the server rejected, until the application takes it to send again
    /// ([`Client::take_rejected_early_data`]): the data path, observed or not.
    rejected: Vec<u8>,
}

enum State {
    Start,
    ExpectServerHello(Box<ExpectServerHello>),
    ExpectServerHelloAfterRetry(Box<ExpectServerHelloAfterRetry>),
    ExpectEncryptedExtensions(Box<ExpectEncryptedExtensions>),
    ExpectCertificateOrRequest(Box<ExpectCertificateOrRequest>),
    ExpectCertificate(Box<ExpectCertificate>),
    ExpectCertificateVerify(Box<ExpectCertificateVerify>),
    ExpectFinished(Box<ExpectFinished>),
    /// The handshake is complete; the state owns the traffic secrets, so "connected" is
    /// stored once.
    Connected(Box<Connected>),
    /// Transient while a state is being replaced, and after failure.
    Poisoned,
}

/// After the handshake (§4.6).
struct Connected {
    /// The application traffic, exporter and resumption secrets.
    traffic: Traffic,
    /// When we offered post_handshake_auth, the transcript through our Finished: every
    /// post-handshake CertificateRequest's Handshake Context starts from it (§4.4.1). Kept only
    /// then, so an idle connection that cannot be asked holds no hash state.
    pha: Option<Box<Transcript>>,
}

impl State {
    /// What the states between ServerHello and the server's Finished share.
    fn handshake(&self) -> Option<&Handshake> {
        match self {
            State::ExpectEncryptedExtensions(s) => Some(&s.hs),
            State::ExpectCertificateOrRequest(s) => Some(&s.hs),
            State::ExpectCertificate(s) => Some(&s.hs),
            State::ExpectCertificateVerify(s) => Some(&s.hs),
            State::ExpectFinished(s) => Some(&s.hs),
            _ => None,
        }
    }
}

/// What a ClientHello offered, which the server's answer is checked against.
struct Offer {
    random: [u8; 32],
    session_id: Vec<u8>,
    shares: Vec<KeyShareSecret>,
    transcript: Transcript,
    /// The PSK's early secret, when a ticket is offered.
    early_secret: Option<EarlySecret>,
    ccs_sent: bool,
    /// With a real ECH offer, `random`, `transcript` and `early_secret` are ClientHelloInner's
    /// (§6.1.4: what an accepting server answers); the outer ones are kept here.
    ech: OfferEch,
}

/// The ECH part of an offer (RFC 9849 §6), until the server's first answer settles it.
enum OfferEch {
    /// No `encrypted_client_hello` sent.
    None,
    /// A GREASE extension (its extension_data), which a second ClientHello repeats (§6.2).
    Grease(Vec<u8>),
    /// A sealed ClientHelloInner.
    Real(Box<EchOffer>),
}

/// A real ECH offer (§6.1).
struct EchOffer {
    chosen: Chosen,
    /// The HPKE context that sealed the first inner hello; it seals the second one too, with
    /// the next nonce (§6.1.5).
    context: SenderContext,
    /// ClientHelloOuter.random (a second outer hello repeats it, RFC 8446 §4.1.2).
    outer_random: [u8; 32],
    /// The transcript of the outer hellos: the one a rejecting server hashes.
    outer_transcript: Transcript,
    /// The outer hello's GREASE pre_shared_key (§6.1.2), when the inner one offers a PSK.
    grease_psk: Option<Extension>,
    /// `Some(accepted)` once a HelloRetryRequest said whether it used the inner hello.
    hrr_accepted: Option<bool>,
    /// How the last EncodedClientHelloInner was padded, for the event.
    layout: InnerLayout,
}

/// What ECH settled for the rest of the handshake.
enum EchStatus {
    /// Not offered: an `encrypted_client_hello` in EncryptedExtensions was not asked for
    /// (unsupported_extension, RFC 8446 §4.2).
    NotOffered,
    /// Accepted: the handshake is ClientHelloInner's, whose extension is the `inner` variant;
    /// retry_configs in EncryptedExtensions are unsupported_extension (RFC 9849 §5).
    Accepted,
    /// GREASE: the server's extension is checked for syntax and ignored (§6.2).
    Grease,
    /// Rejected (§6.1.6): the certificate must be valid for `public_name`, and the handshake
    /// ends with ech_required.
    Rejected {
        public_name: String,
        retry_configs: Option<Vec<u8>>,
    },
}

/// After the first ClientHello: a ServerHello, or one HelloRetryRequest (§4.1.4).
struct ExpectServerHello {
    offer: Offer,
    /// Whether this ClientHello carries the early_data extension.
    early_data_offered: bool,
}

/// After the second ClientHello: a ServerHello only (a second HelloRetryRequest is an error,
/// §4.1.4), with the suite the HelloRetryRequest named. Never offers early data (§4.2.10).
struct ExpectServerHelloAfterRetry {
    offer: Offer,
    retry_suite: CipherSuite,
}

/// What every state from ServerHello to the server's Finished carries: the suite, the
/// transcript and the handshake secrets (§7.1), and what the ServerHello settled, reported in
/// `Negotiated` once connected.
struct Handshake {
    suite: SuiteParams,
    transcript: Transcript,
    secret: HandshakeSecret,
    client_hs: TrafficSecret,
    server_hs: TrafficSecret,
    /// The key exchange's group; `None` for psk_ke (§4.2.9).
    group: Option<NamedGroup>,
    hello_retry: bool,
    /// Our compatibility-mode CCS (§D.4) went out already: before 0-RTT or after a
    /// HelloRetryRequest.
    ccs_sent: bool,
    ech: EchStatus,
}

/// After ServerHello.
struct ExpectEncryptedExtensions {
    hs: Handshake,
    /// The PSK identity the server selected (§4.2.11): it authenticates the server, so no
    /// Certificate follows.
    psk_identity: Option<u16>,
    /// Our ClientHello offered 0-RTT, which EncryptedExtensions accepts or not (§4.2.10).
    early_offered: bool,
}

/// What EncryptedExtensions settled (§4.3.1), reported once connected.
#[derive(Default)]
struct ServerExtensions {
    alpn: Option<Vec<u8>>,
    /// supported_groups (§4.2.7): held, unused, until the handshake completes, then reported.
    groups: Option<Vec<NamedGroup>>,
}

/// After EncryptedExtensions in a certificate-authenticated handshake.
struct ExpectCertificateOrRequest {
    hs: Handshake,
    ee: ServerExtensions,
}

/// A CertificateRequest (§4.3.2): the signature schemes the server accepts for ours, and the
/// compression algorithms it can decompress it with (RFC 8879 §3). Its context is empty during
/// the handshake (checked on arrival), so it is not kept.
struct CertificateRequested {
    schemes: Vec<SignatureScheme>,
    compression: Vec<CertificateCompressionAlgorithm>,
}

/// After CertificateRequest.
struct ExpectCertificate {
    hs: Handshake,
    ee: ServerExtensions,
    request: CertificateRequested,
}

/// The server's end-entity certificate, from a non-empty Certificate whose chain the configured
/// `ServerVerification` accepted (§4.4.2.4); its key must sign CertificateVerify. Made only by
/// `Client::accept_server_certificate`.
struct ServerCertificate {
    leaf: Vec<u8>,
}

/// After the server's Certificate.
struct ExpectCertificateVerify {
    hs: Handshake,
    ee: ServerExtensions,
    request: Option<CertificateRequested>,
    cert: ServerCertificate,
}

/// How the server was authenticated before its Finished.
enum ServerAuth {
    /// By the PSK it selected (§2.2); only then may 0-RTT have been accepted, and then our
    /// EndOfEarlyData is due (§4.5).
    Psk {
        identity: u16,
        early_data_accepted: bool,
    },
    /// By its certificate and a CertificateVerify in `scheme` that verified (§4.4.3); it may
    /// have asked for ours.
    Certificate {
        scheme: SignatureScheme,
        request: Option<CertificateRequested>,
    },
}

/// Before the server's Finished.
struct ExpectFinished {
    hs: Handshake,
    ee: ServerExtensions,
    auth: ServerAuth,
}

impl Client {
    /// A client for `config`, drawing every random value (randoms, key shares, signatures) from `rng`.
    pub fn new(config: Arc<ClientConfig>, rng: Box<dyn RandomSource>) -> Result<Client, Error> {
        if config
            .cipher_suites
            .iter()
            .all(|s| suite_params(*s).is_none())
        {
            return Err(Error::Config("no supported cipher suite configured".into()));
        }
        for g in &config.key_shares {
            if !config.groups.contains(g) {
                return Err(Error::Config(format!(
                    "key share group {g} is not in the offered groups"
                )));
            }
        }
        // RFC 8879 §3: algorithms<2..2^8-2>, two bytes each.
        if config.cert_compression.len() > 127 {
            return Err(Error::Config(
                "at most 127 certificate compression algorithms fit compress_certificate".into(),
            ));
        }
        let conn = Conn::new(
            Side::Client,
            config.observe,
            rng,
            config.padding,
            config.max_handshake_message,
        );
        Ok(Connection::with_side(
            conn,
            ClientSide {
                config,
                state: State::Start,
                tickets: TicketStore::default(),
                offered_ticket: None,
                early_data: EarlyDataState::default(),
                ech: None,
            },
        ))
    }

    /// Use these tickets for resumption (the first usable one is offered).
    pub fn with_tickets(mut self, tickets: TicketStore) -> Self {
        self.side.tickets = tickets;
        self
    }

    /// Queue the ClientHello. `now_ms` is the caller's clock (Unix ms): it dates the ticket age.
    pub fn start(&mut self, now_ms: u64) -> Result<(), Error> {
        if !matches!(self.side.state, State::Start) {
            return Err(Error::InvalidState("start() called twice"));
        }
        self.conn.now_ms = now_ms;
        match self.send_first_hello() {
            Ok(s) => {
                self.side.state = State::ExpectServerHello(Box::new(s));
                Ok(())
            }
            Err(e) => {
                self.conn.fail(&e);
                Err(e)
            }
        }
    }

    /// [`Connection::send`] for a client: before the handshake completes this is 0-RTT data
    /// when a ticket allowing it was offered; otherwise it is an error.
    fn send_data(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.conn.failed || self.conn.write_closed {
            return Err(Error::Closed);
        }
        if self.is_connected() {
            self.conn.send_app_data(data)?;
            return Ok(());
        }
        if !self.side.early_data.open {
            return Err(Error::InvalidState("handshake not complete"));
        }
        if data.len() > self.side.early_data.budget {
            return Err(Error::InvalidState(
                "early data exceeds the ticket's max_early_data_size",
            ));
        }
        self.side.early_data.budget -= data.len();
        self.side.early_data.sent.extend_from_slice(data);
        self.conn.send_app_data(data)?;
        Ok(())
    }

    /// Tickets received so far (and those given at construction that were not used).
    pub fn tickets(&self) -> &TicketStore {
        &self.side.tickets
    }

    /// ECH's outcome (RFC 9849 §6.1): accepted, rejected, GREASE sent, or asked for but not
    /// offered; `None` when not configured, or before the ServerHello.
    pub fn ech_outcome(&self) -> Option<EchOutcome> {
        self.side.ech
    }

    /// The 0-RTT data the server rejected (RFC 8446 §4.2.10): it was not delivered, and is
    /// the application's to send again now that the handshake is done. Empty when 0-RTT was
    /// accepted, not offered, or this was already taken.
    pub fn take_rejected_early_data(&mut self) -> Vec<u8> {
        core::mem::take(&mut self.side.early_data.rejected)
    }

    // ------------------------------------------------------------ ClientHello

    fn send_first_hello(&mut self) -> Result<ExpectServerHello, Error> {
        let random: [u8; 32] = self.conn.random();
        self.conn.client_random = random;
        // §D.4: a non-empty legacy_session_id puts the server in compatibility mode.
        let session_id = if self.side.config.compat_mode {
            self.conn.random::<32>().to_vec()
        } else {
            Vec::new()
        };
        let shares = KeyShareSecret::generate_many(
            &self.side.config.key_shares,
            self.conn.rng.as_mut(),
            self.side.config.reuse_x25519,
        )?;
        let now = self.conn.now_ms;
        // A resumption ticket if we have one, else the first configured external PSK (§4.2.11).
        self.side.offered_ticket = self
            .side
            .tickets
            .take_usable(
                self.side.config.server_name.as_deref(),
                &self.side.config.cipher_suites,
                now,
            )
            .or_else(|| {
                self.side
                    .config
                    .external_psks
                    .first()
                    .map(|p| StoredTicket {
                        server_name: self.side.config.server_name.clone(),
                        suite: p.suite,
                        ticket: p.identity.clone(),
                        psk: p.key.clone(),
                        age_add: 0,
                        lifetime: 0,
                        received_at_ms: now,
                        max_early_data: 0,
                        alpn: None,
                        external: true,
                    })
            });
        let cfg = Arc::clone(&self.side.config);
        let share_list = share_list(&shares);
        let chosen = match &cfg.ech {
            EchMode::Off | EchMode::Grease => None,
            EchMode::Config {
                list,
                grease_fallback,
            } => {
                let c = choose(list);
                if c.is_none() && !grease_fallback {
                    self.ech_event(EchOutcome::NotOffered, None, None, 0);
                }
                c
            }
        };
        let grease = chosen.is_none()
            && matches!(
                cfg.ech,
                EchMode::Grease
                    | EchMode::Config {
                        grease_fallback: true,
                        ..
                    }
            );
        let mut hello = self.build_hello(
            &cfg,
            &random,
            &session_id,
            &share_list,
            None,
            false,
            chosen.is_some(),
        );
        // §5.1: the first ClientHello may use record version 0x0301 for compatibility.
        self.conn.plaintext_version = 0x0301;
        let first = self.first_transcript()?;
        let (transcript, early_secret, early_data_offered, ech) = if let Some(chosen) = chosen {
            let outer_random: [u8; 32] = self.conn.random();
            // RFC 9850 §4: the traffic secrets stay keyed by ClientHelloInner.random, which the
            // handshake uses if ECH is accepted (settle_ech switches to the outer one if not);
            // the ECH lines are keyed by the outer random (§5).
            let mut steps: Vec<HpkeStep> = Vec::new();
            let sink: &mut dyn HpkeSink = if self.conn.observes_hpke() {
                &mut steps
            } else {
                &mut NoSink
            };
            let (enc, context) = hpke::setup_base_s(
                chosen.suite,
                &chosen.public_key,
                &chosen.info(),
                self.conn.rng.as_mut(),
                sink,
            )
            .map_err(|e| Error::Config(format!("ECH config: {e}")))?;
            self.conn.ech_hpke(steps, &outer_random, &chosen.config.raw);
            let grease_psk = self.grease_psk();
            let mut offer = Box::new(EchOffer {
                chosen,
                context,
                outer_random,
                outer_transcript: first.clone(),
                grease_psk,
                hrr_accepted: None,
                layout: InnerLayout::default(),
            });
            let (t, e, d) = self.send_ech_hello(hello, first, &mut offer, &enc)?;
            (t, e, d, OfferEch::Real(offer))
        } else if grease {
            let ext = self.grease_ech(&hello)?;
            insert_before_psk(&mut hello, ech_extension(ext.clone()));
            let (t, e, d) = self.finish_hello(hello, first)?;
            self.grease_parts(&ext);
            (t, e, d, OfferEch::Grease(ext))
        } else {
            let (t, e, d) = self.finish_hello(hello, first)?;
            (t, e, d, OfferEch::None)
        };
        self.conn.flush()?;
        self.conn.plaintext_version = 0x0303;
        self.conn.ccs_allowed = true;
        let mut ccs_sent = false;
        if let (Some(early), true) = (&early_secret, early_data_offered) {
            // §4.2.10: 0-RTT data goes right after the ClientHello under the early traffic key.
            if self.side.config.compat_mode {
                self.conn.send_ccs()?;
                ccs_sent = true;
            }
            let suite = self.ticket_suite()?;
            let secret = early.client_early_traffic_secret(&transcript, &mut self.conn.ev);
            let exporter = early.early_exporter_master_secret(&transcript, &mut self.conn.ev);
            self.conn.log_secret(exporter.name(), exporter.as_bytes());
            self.early_exporter = Some(exporter);
            self.conn.set_write_keys(Epoch::Early, &suite, &secret)?;
            self.side.early_data.open = true;
        }
        Ok(ExpectServerHello {
            offer: Offer {
                random,
                session_id,
                shares,
                transcript,
                early_secret,
                ccs_sent,
                ech,
            },
            early_data_offered,
        })
    }

    /// The transcript the first ClientHello starts. Its hash is chosen by the server's suite
    /// (RFC 8446 §4.4.1), so the transcript buffers the ClientHello until the ServerHello says
    /// which; but when every suite we offer, and the PSK we offer, use the same hash, that hash
    /// is the only possible answer and hashing can start right away, without the buffer.
    fn first_transcript(&self) -> Result<Transcript, Error> {
        let mut transcript = Transcript::new();
        let mut hashes = self
            .side
            .config
            .cipher_suites
            .iter()
            .filter_map(|s| suite_params(*s))
            .map(|s| s.hash)
            .chain(
                self.side
                    .offered_ticket
                    .as_ref()
                    .and_then(|t| t.suite_hash()),
            );
        if let Some(first) = hashes.next() {
            if hashes.all(|h| h == first) {
                transcript
                    .start_hash(first)
                    .map_err(|_| Error::InvalidState("transcript hash already chosen"))?;
            }
        }
        Ok(transcript)
    }

    fn ticket_suite(&self) -> Result<SuiteParams, Error> {
        self.side
            .offered_ticket
            .as_ref()
            .and_then(|t| suite_params(t.suite))
            .ok_or(Error::InvalidState("no ticket"))
    }

    /// The ClientHello, its extensions in the configured order (pre_shared_key last, §4.2.11).
    /// It borrows what it carries from `cfg` and the key `shares` (see [`OutgoingExtension`]):
    /// building it copies none of the configuration or the (for ML-KEM, kilobyte-sized) keys.
    // Each argument is one of the ClientHello's independent inputs; a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    fn build_hello<'a>(
        &self,
        cfg: &'a ClientConfig,
        random: &[u8; 32],
        session_id: &'a [u8],
        shares: &'a [(NamedGroup, &'a [u8])],
        cookie: Option<Vec<u8>>,
        retry: bool,
        ech_inner: bool,
    ) -> ClientHelloOut<'a> {
        // Room for every extension this function may add, so the list is allocated once.
        let mut exts = Vec::with_capacity(14 + cfg.extra_extensions.len());
        if let Some(name) = &cfg.server_name {
            exts.push(OutgoingExtension::HostName(name.as_bytes()));
        }
        exts.extend(
            cfg.extra_extensions
                .iter()
                .map(|e| OutgoingExtension::Ext(Cow::Borrowed(e))),
        );
        exts.push(OutgoingExtension::SupportedGroups(&cfg.groups));
        exts.push(OutgoingExtension::KeyShareClient(shares));
        if self.side.offered_ticket.is_some() && cfg.enable_early_data && !retry {
            if let Some(t) = &self.side.offered_ticket {
                if t.max_early_data > 0 {
                    exts.push(Extension::EarlyDataEmpty.into());
                }
            }
        }
        exts.push(OutgoingExtension::SupportedVersionsClient(&[
            ProtocolVersion::TLSv1_3,
        ]));
        exts.push(OutgoingExtension::SignatureAlgorithms(
            &cfg.signature_schemes,
        ));
        if let Some(c) = cookie {
            exts.push(Extension::Cookie(c).into());
        }
        if !cfg.psk_modes.is_empty() {
            exts.push(OutgoingExtension::PskKeyExchangeModes(&cfg.psk_modes));
        }
        if !cfg.alpn.is_empty() {
            exts.push(OutgoingExtension::Alpn(&cfg.alpn));
        }
        // RFC 8879 §3: the server's Certificate may come compressed with one of these. Offered
        // as configured, so an experiment can offer an algorithm this build lacks (a
        // CompressedCertificate in it is then bad_certificate: it cannot be decompressed, §4).
        if !cfg.cert_compression.is_empty() {
            exts.push(OutgoingExtension::CompressCertificate(
                &cfg.cert_compression,
            ));
        }
        if let Some(limit) = cfg.record_size_limit {
            exts.push(Extension::RecordSizeLimit(limit).into());
        }
        if offers_post_handshake_auth(cfg) {
            exts.push(Extension::PostHandshakeAuth.into());
        }
        apply_extension_order(&mut exts, &cfg.extension_order, OutgoingExtension::typ);
        if ech_inner {
            // RFC 9849 §6.1: ClientHelloInner carries the `inner` variant, outside the run of
            // extensions the outer hello shares.
            exts.push(ech_extension(EchClientHello::Inner.encode()));
        }
        if let Some(t) = &self.side.offered_ticket {
            // Placeholder binder of the right length; filled in by `finish_hello`.
            let hash_len = suite_params(t.suite).map_or(32, |s| s.hash.output_len());
            // §4.2.11.1: ticket age in ms plus age_add; 0 for external PSKs.
            let age = (self.conn.now_ms.saturating_sub(t.received_at_ms)) as u32;
            let obfuscated = if t.external {
                0
            } else {
                age.wrapping_add(t.age_add)
            };
            exts.push(
                Extension::PreSharedKeyClient(crate::messages::extensions::OfferedPsks {
                    identities: vec![crate::messages::extensions::PskIdentity {
                        identity: t.ticket.clone(),
                        obfuscated_ticket_age: obfuscated,
                    }],
                    binders: vec![vec![0u8; hash_len]],
                })
                .into(),
            );
        }
        let mut hello = ClientHelloOut {
            legacy_version: 0x0303,
            random: *random,
            legacy_session_id: session_id,
            cipher_suites: &cfg.cipher_suites,
            legacy_compression_methods: &[0],
            extensions: exts,
        };
        // An inner hello is padded by ECH's own scheme (RFC 9849 §6.1.3) instead.
        if cfg.hello_padding != HelloPadding::None && !ech_inner {
            // RFC 7685: a padding extension (4-byte header + zeros) brings the message to
            // `target`; it sits before pre_shared_key, which must stay last (§4.2.11).
            let len = hello.message_len();
            let target = match cfg.hello_padding {
                HelloPadding::ToSize(n) => n,
                HelloPadding::Avoid256To511 if (256..512).contains(&len) => 512,
                _ => 0,
            };
            if len + 4 <= target {
                let pad = Extension::Padding(vec![0; target - len - 4]).into();
                let at = hello
                    .extensions
                    .iter()
                    .position(|e| e.typ() == ExtensionType::PreSharedKey)
                    .unwrap_or(hello.extensions.len());
                hello.extensions.insert(at, pad);
            }
        }
        hello
    }

    /// Compute the PSK binder (§4.2.11.2) if a ticket is offered, then send the ClientHello.
    /// Returns the transcript with the ClientHello, the PSK's early secret, and whether the
    /// hello offers early data.
    fn finish_hello(
        &mut self,
        mut hello: ClientHelloOut<'_>,
        mut transcript: Transcript,
    ) -> Result<(Transcript, Option<EarlySecret>, bool), Error> {
        let early_data_offered = hello.offers(ExtensionType::EarlyData);
        let early = self.bind_psk(&mut hello, &transcript)?;
        transcript.add(
            HandshakeType::ClientHello,
            self.conn
                .send_handshake(OutgoingMessage::ClientHello(&hello)),
        );
        self.early_data_budget(early_data_offered);
        Ok((transcript, early, early_data_offered))
    }

    fn early_data_budget(&mut self, early_data_offered: bool) {
        if let (Some(t), true) = (&self.side.offered_ticket, early_data_offered) {
            self.side.early_data.budget = t.max_early_data as usize;
            self.side.early_data.status = Some(EarlyDataStatus::Rejected);
        }
    }

    /// §4.2.11.2: the binder of the offered PSK, written into `hello`; its early secret.
    fn bind_psk(
        &mut self,
        hello: &mut ClientHelloOut<'_>,
        transcript: &Transcript,
    ) -> Result<Option<EarlySecret>, Error> {
        let mut early = None;
        if let Some(t) = &self.side.offered_ticket {
            let suite = suite_params(t.suite).ok_or(Error::InvalidState("ticket suite"))?;
            let es = EarlySecret::new(suite.hash, Some(t.psk.as_ref()), &mut self.conn.ev);
            // §4.2.11.2: the binder covers the transcript so far and the ClientHello up to the
            // binders list, so encode once with a placeholder binder of the right length.
            let mut encoded = Vec::with_capacity(hello.message_len());
            OutgoingMessage::ClientHello(hello).encode_into(&mut encoded);
            let partial_len = encoded.len() - hello.binders_len();
            let binder = es
                .binder_key(!t.external, &mut self.conn.ev)
                .binder_for(transcript, &encoded[..partial_len], &mut self.conn.ev)
                .ok_or(Error::InvalidState(
                    "transcript hash differs from the ticket's",
                ))?;
            if let Some(OutgoingExtension::Ext(psk)) = hello.extensions.last_mut() {
                if let Extension::PreSharedKeyClient(offer) = psk.to_mut() {
                    offer.binders = vec![binder];
                }
            }
            early = Some(es);
        }
        Ok(early)
    }

    /// RFC 9849 §6.1, §6.1.1: send ClientHelloOuter with `inner` sealed into it, `enc` the
    /// encapsulated key (empty in a second outer hello, §6.1.5). Returns what `finish_hello`
    /// does, for the inner hello; the outer one is added to `ech.outer_transcript`.
    fn send_ech_hello(
        &mut self,
        mut inner: ClientHelloOut<'_>,
        mut transcript: Transcript,
        ech: &mut EchOffer,
        enc: &[u8],
    ) -> Result<(Transcript, Option<EarlySecret>, bool), Error> {
        let early_data_offered = inner.offers(ExtensionType::EarlyData);
        let early = self.bind_psk(&mut inner, &transcript)?;
        let mut inner_msg = Vec::with_capacity(inner.message_len());
        OutgoingMessage::ClientHello(&inner).encode_into(&mut inner_msg);
        transcript.add(HandshakeType::ClientHello, &inner_msg);
        let observe = self.conn.observe();
        let types: Vec<ExtensionType> = inner.extensions.iter().map(|e| e.typ()).collect();
        let run = compressible_run(&types);
        let compress: Vec<u16> = run.iter().map(|t| t.to_repr()).collect();
        let (encoded, layout) =
            crate::ech::inner::encode(&inner_msg[4..], &compress, ech.chosen.maximum_name_length)
                .map_err(|e| Error::Config(e.to_string()))?;
        ech.layout = layout;
        let inner_sizes = EchInnerParts {
            encoded_inner_len: layout.total(),
            padding: layout.name_padding + layout.round_padding,
            inner_len: inner_msg.len(),
            session_id: inner.legacy_session_id.len(),
            saved: layout.saved,
            outer_extensions: run,
        };
        if observe.handshake {
            let layout = observe
                .layouts
                .then(|| OutgoingMessage::ClientHello(&inner).layout());
            self.conn.ev.push(Event::InnerClientHello(HandshakeEvent {
                direction: self.conn.side.sending(),
                epoch: self.conn.write_epoch,
                typ: HandshakeType::ClientHello,
                bytes: inner_msg,
                layout,
            }));
        }
        // The outer hello: the public name, what it must share with the inner one (every
        // compressed extension, in the same order, §5.1; and key_share, supported_versions,
        // a cookie and psk_key_exchange_modes as a server that rejects ECH needs them,
        // §6.1), early_data when the inner has it (§6.1), the ECH extension, and the
        // GREASE pre_shared_key last (§6.1.2, RFC 8446 §4.2.11). ALPN and the rest stay inside.
        let public_name = ech.chosen.public_name.clone();
        let mut exts: Vec<OutgoingExtension<'_>> = Vec::with_capacity(10);
        exts.push(OutgoingExtension::HostName(public_name.as_bytes()));
        exts.extend(
            inner
                .extensions
                .iter()
                .filter(|e| OUTER_COPIES.contains(&e.typ()))
                .cloned(),
        );
        let payload_len = encoded.len() + ech.chosen.suite.aead.tag_len();
        let outer_ext = |payload: Vec<u8>| EchClientHello::Outer {
            suite: ech.chosen.symmetric,
            config_id: ech.chosen.config_id,
            enc: enc.to_vec(),
            payload,
        };
        exts.push(ech_extension(outer_ext(vec![0; payload_len]).encode()));
        let ech_at = exts.len() - 1;
        if let Some(psk) = &ech.grease_psk {
            exts.push(OutgoingExtension::Ext(Cow::Borrowed(psk)));
        }
        let mut outer = ClientHelloOut {
            legacy_version: 0x0303,
            random: ech.outer_random,
            legacy_session_id: inner.legacy_session_id,
            cipher_suites: inner.cipher_suites,
            legacy_compression_methods: &[0],
            extensions: exts,
        };
        // With the payload all zeros, the serialized outer hello is ClientHelloOuterAAD (§5.2).
        let mut aad = Vec::with_capacity(outer.message_len());
        OutgoingMessage::ClientHello(&outer).encode_into(&mut aad);
        let sealed = ech
            .context
            .seal(&aad[4..], &encoded)
            .map_err(|e| Error::Config(format!("ECH seal: {e}")))?;
        // Same length, so no length prefix changes (§6.1.1).
        outer.extensions[ech_at] = ech_extension(outer_ext(sealed).encode());
        let sent = self
            .conn
            .send_handshake(OutgoingMessage::ClientHello(&outer));
        ech.outer_transcript.add(HandshakeType::ClientHello, sent);
        if observe.handshake {
            self.conn.ev.push(Event::EchParts(EchParts::new(
                ech.chosen.symmetric,
                ech.chosen.config_id,
                enc.len(),
                payload_len,
                Some(inner_sizes),
            )));
        }
        self.early_data_budget(early_data_offered);
        Ok((transcript, early, early_data_offered))
    }

    /// §6.1.2: a pre_shared_key for the outer hello shaped like the inner one's, all random:
    /// identity of the same length, a random obfuscated_ticket_age, a binder of the same length.
    fn grease_psk(&mut self) -> Option<Extension> {
        let t = self.side.offered_ticket.as_ref()?;
        let mut identity = vec![0u8; t.ticket.len()];
        let mut binder = vec![0u8; suite_params(t.suite).map_or(32, |s| s.hash.output_len())];
        self.conn.rng.fill(&mut identity);
        let age = u32::from_be_bytes(self.conn.random());
        self.conn.rng.fill(&mut binder);
        Some(Extension::PreSharedKeyClient(
            crate::messages::extensions::OfferedPsks {
                identities: vec![crate::messages::extensions::PskIdentity {
                    identity,
                    obfuscated_ticket_age: age,
                }],
                binders: vec![binder],
            },
        ))
    }

    /// §6.2: a GREASE `encrypted_client_hello` for `hello`, its payload as long as a real
    /// offer's would be: `hello` as the inner one (plus the 5-byte inner extension), compressed
    /// alike, padded with maximum_name_length 0 (§6.1.3), plus the tag. Reported as the event.
    fn grease_ech(&mut self, hello: &ClientHelloOut<'_>) -> Result<Vec<u8>, Error> {
        let mut msg = Vec::with_capacity(hello.message_len());
        OutgoingMessage::ClientHello(hello).encode_into(&mut msg);
        let types: Vec<ExtensionType> = hello.extensions.iter().map(|e| e.typ()).collect();
        let compress: Vec<u16> = compressible_run(&types)
            .iter()
            .map(|t| t.to_repr())
            .collect();
        let (_, layout) = crate::ech::inner::encode(&msg[4..], &compress, 0)
            .map_err(|e| Error::Config(e.to_string()))?;
        let len = layout.client_hello + 5 + layout.name_padding;
        let len = len + 31 - ((len - 1) % 32);
        let g = crate::ech::client::grease(self.conn.rng.as_mut(), len)
            .map_err(|e| Error::Config(format!("ECH GREASE: {e}")))?;
        if let EchClientHello::Outer {
            config_id, suite, ..
        } = &g
        {
            let (id, suite) = (*config_id, *suite);
            self.ech_event(EchOutcome::Grease, Some(id), Some(suite_name(suite)), len);
        }
        Ok(g.encode())
    }

    /// Reports [`Event::EchParts`] for a GREASE extension just sent: its outer parts only, the
    /// payload being random (§6.2).
    fn grease_parts(&mut self, ext: &[u8]) {
        if !self.conn.observe().handshake {
            return;
        }
        if let Ok(EchClientHello::Outer {
            suite,
            config_id,
            enc,
            payload,
        }) = EchClientHello::decode(ext)
        {
            self.conn.ev.push(Event::EchParts(EchParts::new(
                suite,
                config_id,
                enc.len(),
                payload.len(),
                None,
            )));
        }
    }

    /// Reports [`Event::EchOffer`] for an offer without a config (GREASE, not offered).
    fn ech_event(
        &mut self,
        outcome: EchOutcome,
        config_id: Option<u8>,
        suite: Option<String>,
        encoded_inner_len: usize,
    ) {
        self.side.ech = Some(outcome);
        let name = self.side.config.server_name.clone();
        self.conn.ev.push(Event::EchOffer(EchOfferEvent {
            outcome,
            config_id,
            suite,
            inner_sni: None,
            outer_sni: name,
            encoded_inner_len,
            padding: 0,
            saved: 0,
            hello_retry: false,
        }));
    }

    // ---------------------------------------------------------------- dispatch

    fn handle(&mut self, bytes: Vec<u8>) -> Result<(), Error> {
        let hash_len = match &self.side.state {
            State::Connected(c) => c.traffic.suite.hash.output_len(),
            // Before ServerHello no suite is known: 0 takes any length, and the message is
            // unexpected here anyway (no Hash.length-sized field precedes the suite).
            state => state.handshake().map_or(0, |h| h.suite.hash.output_len()),
        };
        let msg = HandshakeMessage::decode_owned(bytes, DecodeContext { hash_len })?;
        self.conn.handshake_received(&msg);
        let state = core::mem::replace(&mut self.side.state, State::Poisoned);
        self.side.state = match state {
            State::ExpectServerHello(s) => self.on_server_hello_or_retry(s, msg)?,
            State::ExpectServerHelloAfterRetry(s) => {
                State::ExpectEncryptedExtensions(self.on_server_hello_after_retry(s, msg)?)
            }
            State::ExpectEncryptedExtensions(s) => self.on_encrypted_extensions(s, msg)?,
            State::ExpectCertificateOrRequest(s) => self.on_certificate_or_request(s, msg)?,
            State::ExpectCertificate(s) => {
                State::ExpectCertificateVerify(self.on_certificate(s, msg)?)
            }
            State::ExpectCertificateVerify(s) => {
                State::ExpectFinished(self.on_certificate_verify(s, msg)?)
            }
            State::ExpectFinished(s) => self.on_finished(s, msg)?,
            State::Connected(c) => State::Connected(self.on_post_handshake(c, msg)?),
            State::Start | State::Poisoned => {
                return Err(unexpected("nothing (handshake not started)", &msg))
            }
        };
        Ok(())
    }

    /// The answer to the first ClientHello: a ServerHello, or a HelloRetryRequest.
    fn on_server_hello_or_retry(
        &mut self,
        s: Box<ExpectServerHello>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::ServerHello(sh) = &msg.payload else {
            return Err(unexpected("ServerHello", &msg));
        };
        let ExpectServerHello {
            mut offer,
            early_data_offered,
        } = *s;
        let suite = self.check_server_hello(sh, &offer)?;
        if sh.is_hello_retry_request() {
            let next = self.on_hello_retry(offer, sh, &msg.encoded, suite)?;
            return Ok(State::ExpectServerHelloAfterRetry(next));
        }
        let ech = self.settle_ech(&mut offer, sh, &msg.encoded, &suite)?;
        let next = self.on_server_hello(
            offer,
            early_data_offered,
            false,
            sh,
            &msg.encoded,
            suite,
            ech,
        )?;
        Ok(State::ExpectEncryptedExtensions(next))
    }

    /// The answer to the second ClientHello: a ServerHello in the suite the retry named.
    fn on_server_hello_after_retry(
        &mut self,
        s: Box<ExpectServerHelloAfterRetry>,
        msg: HandshakeMessage,
    ) -> Result<Box<ExpectEncryptedExtensions>, Error> {
        let HandshakePayload::ServerHello(sh) = &msg.payload else {
            return Err(unexpected("ServerHello", &msg));
        };
        let suite = self.check_server_hello(sh, &s.offer)?;
        if suite.suite != s.retry_suite {
            return Err(PeerMisbehaved::HelloRetryMismatch("cipher suite").into());
        }
        if sh.is_hello_retry_request() {
            return Err(PeerMisbehaved::SecondHelloRetry.into());
        }
        let mut offer = s.offer;
        let ech = self.settle_ech(&mut offer, sh, &msg.encoded, &suite)?;
        self.on_server_hello(offer, false, true, sh, &msg.encoded, suite, ech)
    }

    /// RFC 9849 §6.1.4: whether the server used ClientHelloInner, from the last 8 bytes of
    /// ServerHello.random. Accepted: the handshake goes on with the inner transcript and
    /// preferences. Rejected: with the outer transcript, and without the PSK, which only the
    /// inner hello offered (§6.1.2).
    fn settle_ech(
        &mut self,
        offer: &mut Offer,
        sh: &ServerHello,
        encoded: &[u8],
        suite: &SuiteParams,
    ) -> Result<EchStatus, Error> {
        let e = match core::mem::replace(&mut offer.ech, OfferEch::None) {
            OfferEch::None => return Ok(EchStatus::NotOffered),
            OfferEch::Grease(_) => return Ok(EchStatus::Grease),
            OfferEch::Real(e) => e,
        };
        let accepted = e.hrr_accepted != Some(false) && {
            let mut t = offer.transcript.clone();
            t.start_hash(suite.hash)
                .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
            // A decoded ServerHello is longer than 38 bytes.
            let zeroed = confirm::zero_server_hello(encoded)
                .ok_or(Error::InvalidState("short ServerHello"))?;
            t.add(HandshakeType::ServerHello, &zeroed);
            let want = self.conn.ech_confirmation(
                suite.hash,
                &offer.random,
                ACCEPT_LABEL,
                t.current_hash().as_ref(),
            );
            sh.random[24..] == want
        };
        // §6.1.5: after a HelloRetryRequest that confirmed, the ServerHello must too.
        if e.hrr_accepted == Some(true) && !accepted {
            return Err(PeerMisbehaved::EchAcceptanceWithdrawn.into());
        }
        let outcome = if accepted {
            EchOutcome::Accepted
        } else {
            EchOutcome::Rejected
        };
        self.side.ech = Some(outcome);
        let l = e.layout;
        self.conn.ev.push(Event::EchOffer(EchOfferEvent {
            outcome,
            config_id: Some(e.chosen.config_id),
            suite: Some(suite_name(e.chosen.symmetric)),
            inner_sni: self.side.config.server_name.clone(),
            outer_sni: Some(e.chosen.public_name.clone()),
            encoded_inner_len: l.total(),
            padding: l.name_padding + l.round_padding,
            saved: l.saved,
            hello_retry: e.hrr_accepted.is_some(),
        }));
        if accepted {
            return Ok(EchStatus::Accepted);
        }
        // §6.1.2: the outer hello's PSK is GREASE; a server that selects it misbehaves.
        if sh.find(ExtensionType::PreSharedKey).is_some() {
            return Err(PeerMisbehaved::EchRejectedButResumed.into());
        }
        let EchOffer {
            chosen,
            outer_random,
            outer_transcript,
            ..
        } = *e;
        offer.random = outer_random;
        // RFC 9850 §4: without ECH the connection's secrets go by the outer random.
        self.conn.client_random = outer_random;
        offer.transcript = outer_transcript;
        offer.early_secret = None;
        self.side.offered_ticket = None;
        Ok(EchStatus::Rejected {
            public_name: chosen.public_name,
            retry_configs: None,
        })
    }

    /// Checks shared by ServerHello and HelloRetryRequest; the suite they select.
    fn check_server_hello(&self, sh: &ServerHello, offer: &Offer) -> Result<SuiteParams, Error> {
        check_server_hello_common(sh, offer)?;
        let offered = self.side.config.cipher_suites.contains(&sh.cipher_suite);
        offered
            .then(|| suite_params(sh.cipher_suite))
            .flatten()
            .ok_or_else(|| PeerMisbehaved::SelectedUnoffered("cipher suite").into())
    }

    // What the ServerHello settled (the offer, 0-RTT, the retry, ECH) arrives from two states.
    #[allow(clippy::too_many_arguments)]
    fn on_server_hello(
        &mut self,
        mut offer: Offer,
        early_offered: bool,
        hello_retry: bool,
        sh: &ServerHello,
        encoded: &[u8],
        suite: SuiteParams,
        ech: EchStatus,
    ) -> Result<Box<ExpectEncryptedExtensions>, Error> {
        // §4.1.3 / §4.2: only these extensions may appear in a ServerHello.
        for e in &sh.extensions {
            match e.typ() {
                ExtensionType::KeyShare
                | ExtensionType::PreSharedKey
                | ExtensionType::SupportedVersions => {}
                other => return Err(out_of_place(ExtensionContext::ServerHello, other)),
            }
        }
        // PSK: the server either selected our only identity or ignored it.
        let mut psk_identity = None;
        let mut early = offer.early_secret.take();
        if let Some(Extension::PreSharedKeyServer(idx)) = sh.find(ExtensionType::PreSharedKey) {
            let Some(t) = &self.side.offered_ticket else {
                return Err(
                    PeerMisbehaved::UnsolicitedExtension(ExtensionType::PreSharedKey).into(),
                );
            };
            if *idx != 0 {
                return Err(PeerMisbehaved::SelectedUnoffered("PSK identity").into());
            }
            if t.suite_hash() != Some(suite.hash) {
                return Err(
                    PeerMisbehaved::SelectedUnoffered("suite with another PSK hash").into(),
                );
            }
            psk_identity = Some(0);
        } else {
            early = None;
        }
        // Key exchange (§4.2.8): the share must be for a group we sent a share for.
        let mut group = None;
        let mut shared = None;
        match sh.find(ExtensionType::KeyShare) {
            Some(Extension::KeyShareServer(entry)) => {
                let pos = offer
                    .shares
                    .iter()
                    .position(|k| k.group() == entry.group)
                    .ok_or(PeerMisbehaved::SelectedUnoffered("key share group"))?;
                let share = offer.shares.swap_remove(pos);
                // The per-component shares and secrets are copied only for an observer of
                // secrets (the KeyShare event); otherwise the key exchange yields just the secret.
                let observed = self.conn.observe().secrets;
                let mut result = if observed {
                    share.complete(&entry.key_exchange)?
                } else {
                    share.complete_secret_only(&entry.key_exchange)?
                };
                if observed {
                    self.conn.ev.push(Event::KeyShare(KeyShareEvent {
                        group: entry.group,
                        components: core::mem::take(&mut result.components),
                        shared_secret: result.shared_secret.to_vec(),
                    }));
                }
                group = Some(entry.group);
                // Kept as the KxResult, which erases the secret when it drops.
                shared = Some(result);
            }
            Some(_) => return Err(PeerMisbehaved::IllegalExtension("key_share").into()),
            None if psk_identity.is_some() => {
                // psk_ke: allowed only if we offered it (§4.2.9).
                if !self
                    .side
                    .config
                    .psk_modes
                    .contains(&crate::messages::enums::PskKeyExchangeMode::PskKe)
                {
                    return Err(PeerMisbehaved::MissingExtension(ExtensionType::KeyShare).into());
                }
            }
            None => return Err(PeerMisbehaved::MissingExtension(ExtensionType::KeyShare).into()),
        }
        let mut transcript = offer.transcript;
        transcript
            .start_hash(suite.hash)
            .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
        transcript.add(HandshakeType::ServerHello, encoded);
        let es = match early {
            Some(es) => es,
            None => EarlySecret::new(suite.hash, None, &mut self.conn.ev),
        };
        let secret = es.into_handshake(
            shared.as_ref().map(|k| k.shared_secret.as_slice()),
            &mut self.conn.ev,
        );
        let client_hs = secret.client_handshake_traffic_secret(&transcript, &mut self.conn.ev);
        let server_hs = secret.server_handshake_traffic_secret(&transcript, &mut self.conn.ev);
        self.conn
            .set_read_keys(Epoch::Handshake, &suite, &server_hs)?;
        if !early_offered {
            // From here on our alerts go out under the handshake keys (§6), even before our
            // Finished. With 0-RTT in flight the early keys stay until EndOfEarlyData.
            self.conn
                .set_write_keys(Epoch::Handshake, &suite, &client_hs)?;
        }
        if psk_identity.is_none() {
            self.side.offered_ticket = None;
        }
        Ok(Box::new(ExpectEncryptedExtensions {
            hs: Handshake {
                suite,
                transcript,
                secret,
                client_hs,
                server_hs,
                group,
                hello_retry,
                ccs_sent: offer.ccs_sent,
                ech,
            },
            psk_identity,
            early_offered,
        }))
    }

    /// §4.1.4: answer a HelloRetryRequest (the first; a second one never reaches here) with a
    /// share for the group it names.
    fn on_hello_retry(
        &mut self,
        mut offer: Offer,
        hrr: &ServerHello,
        encoded: &[u8],
        suite: SuiteParams,
    ) -> Result<Box<ExpectServerHelloAfterRetry>, Error> {
        let mut new_group = None;
        let mut cookie = None;
        let mut ech_confirmation = None;
        for e in &hrr.extensions {
            match e {
                Extension::KeyShareHrr(g) => new_group = Some(*g),
                Extension::Cookie(c) => cookie = Some(c.clone()),
                Extension::SupportedVersionsServer(_) => {}
                // RFC 9849 §6.1.4, §6.2: 8 bytes or decode_error, real offer or GREASE.
                Extension::Unknown {
                    typ: ExtensionType::EncryptedClientHello,
                    body,
                } if !matches!(offer.ech, OfferEch::None) => {
                    ech_confirmation = Some(decode_hrr_confirmation(body)?);
                }
                other => {
                    return Err(out_of_place(
                        ExtensionContext::HelloRetryRequest,
                        other.typ(),
                    ))
                }
            }
        }
        if let Some(g) = new_group {
            // The group must be offered and must not be one we already sent a share for.
            if !self.side.config.groups.contains(&g) || offer.shares.iter().any(|k| k.group() == g)
            {
                return Err(PeerMisbehaved::IllegalExtension("HelloRetryRequest key_share").into());
            }
        } else if cookie.is_none() {
            return Err(PeerMisbehaved::HelloRetryChangesNothing.into());
        }
        // A ticket whose hash does not match the suite cannot be offered again.
        if let Some(t) = &self.side.offered_ticket {
            if t.suite_hash() != Some(suite.hash) {
                self.side.offered_ticket = None;
            }
        }
        // 0-RTT is abandoned after HRR (§4.2.10); report the data as rejected now.
        self.reject_early_data();
        offer
            .transcript
            .start_hash(suite.hash)
            .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
        offer
            .transcript
            .replace_with_message_hash()
            .map_err(|_| PeerMisbehaved::SecondHelloRetry)?;
        if let OfferEch::Real(e) = &mut offer.ech {
            // §7.2.1: the confirmation over the inner transcript, with its own 8 bytes zeroed.
            let accepted = match (ech_confirmation, confirm::zero_hrr(encoded)) {
                (Some(got), Some(zeroed)) => {
                    let mut t = offer.transcript.clone();
                    t.add(HandshakeType::ServerHello, &zeroed);
                    let want = self.conn.ech_confirmation(
                        suite.hash,
                        &offer.random,
                        HRR_ACCEPT_LABEL,
                        t.current_hash().as_ref(),
                    );
                    got == want
                }
                _ => false,
            };
            e.hrr_accepted = Some(accepted);
            e.outer_transcript
                .start_hash(suite.hash)
                .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
            e.outer_transcript
                .replace_with_message_hash()
                .map_err(|_| PeerMisbehaved::SecondHelloRetry)?;
            e.outer_transcript.add(HandshakeType::ServerHello, encoded);
        }
        offer.transcript.add(HandshakeType::ServerHello, encoded);
        if self.side.config.compat_mode && !offer.ccs_sent {
            self.conn.send_ccs()?;
            offer.ccs_sent = true;
        }
        // Early keys (if any) are gone: the second ClientHello is plaintext again.
        self.conn.reset_write_to_plaintext()?;
        let shares = match new_group {
            Some(g) => vec![KeyShareSecret::generate(g, self.conn.rng.as_mut())?],
            None => core::mem::take(&mut offer.shares),
        };
        let cfg = Arc::clone(&self.side.config);
        let share_list = share_list(&shares);
        let mut hello = self.build_hello(
            &cfg,
            &offer.random,
            &offer.session_id,
            &share_list,
            cookie,
            true,
            matches!(offer.ech, OfferEch::Real(_)),
        );
        let mut ech = core::mem::replace(&mut offer.ech, OfferEch::None);
        let (transcript, early_secret, _) = match &mut ech {
            // §6.1.5: the second inner hello sealed with the same context and an empty enc.
            // After a rejecting HelloRetryRequest it is sent all the same, so the second
            // outer hello still differs from the first only as RFC 8446 §4.1.2 allows; the
            // outer transcript goes on.
            OfferEch::Real(e) => self.send_ech_hello(hello, offer.transcript, e, &[])?,
            // §6.2: "copies the entire encrypted_client_hello extension".
            OfferEch::Grease(ext) => {
                insert_before_psk(&mut hello, ech_extension(ext.clone()));
                let done = self.finish_hello(hello, offer.transcript)?;
                self.grease_parts(ext);
                done
            }
            OfferEch::None => self.finish_hello(hello, offer.transcript)?,
        };
        Ok(Box::new(ExpectServerHelloAfterRetry {
            offer: Offer {
                random: offer.random,
                session_id: offer.session_id,
                shares,
                transcript,
                early_secret,
                ccs_sent: offer.ccs_sent,
                ech,
            },
            retry_suite: hrr.cipher_suite,
        }))
    }

    fn on_encrypted_extensions(
        &mut self,
        s: Box<ExpectEncryptedExtensions>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::EncryptedExtensions(exts) = &msg.payload else {
            return Err(unexpected("EncryptedExtensions", &msg));
        };
        let ExpectEncryptedExtensions {
            mut hs,
            psk_identity,
            early_offered,
        } = *s;
        let mut ee = ServerExtensions::default();
        let mut early_accepted = false;
        // Each arm asks about the extension it matched, so "offered" is a question about our
        // configuration alone.
        let config = &*self.side.config;
        let offered = |t: ExtensionType| offered_extension(config, t);
        for e in exts {
            match e {
                Extension::ServerNameAck if offered(ExtensionType::ServerName) => {}
                // §4.2.7: informational. Nothing here may act on it before the handshake
                // completes; it is only kept, and reported after our Finished.
                Extension::SupportedGroups(groups) => ee.groups = Some(groups.clone()),
                Extension::Alpn(protos)
                    if offered(ExtensionType::ApplicationLayerProtocolNegotiation) =>
                {
                    // RFC 7301 §3.1: exactly one protocol, one we offered.
                    match protos.as_slice() {
                        [p] if self.side.config.alpn.contains(p) => ee.alpn = Some(p.clone()),
                        _ => return Err(PeerMisbehaved::UnofferedAlpn.into()),
                    }
                }
                Extension::RecordSizeLimit(limit) if offered(ExtensionType::RecordSizeLimit) => {
                    if *limit < 64 {
                        return Err(PeerMisbehaved::BadRecordSizeLimit.into());
                    }
                    // RFC 8449 §4: the limit counts the inner content type byte in TLS 1.3.
                    self.conn.max_fragment =
                        (*limit as usize - 1).min(crate::record::MAX_PLAINTEXT);
                    // The server acknowledged the extension: ours is now in force.
                    self.conn.recv_limit = self.side.config.record_size_limit.map(usize::from);
                }
                Extension::EarlyDataEmpty if early_offered && psk_identity.is_some() => {
                    early_accepted = true;
                }
                // RFC 9849 §5: "The response is valid only when the server used the
                // ClientHelloOuter ... MUST abort with an "unsupported_extension" alert."
                Extension::Unknown {
                    typ: ExtensionType::EncryptedClientHello,
                    ..
                } if matches!(hs.ech, EchStatus::Accepted) => {
                    return Err(PeerMisbehaved::UnsolicitedExtension(
                        ExtensionType::EncryptedClientHello,
                    )
                    .into());
                }
                // RFC 9849 §6.1.6, §6.2: retry_configs after a rejection or GREASE, checked
                // for syntax (decode_error) and kept only after a rejection. Unasked, the
                // extension falls through to unsupported_extension.
                Extension::Unknown {
                    typ: ExtensionType::EncryptedClientHello,
                    body,
                } if matches!(hs.ech, EchStatus::Grease | EchStatus::Rejected { .. }) => {
                    let list = decode_retry_configs(body)?;
                    EchConfigList::decode(&list)?;
                    if let EchStatus::Rejected { retry_configs, .. } = &mut hs.ech {
                        *retry_configs = Some(list);
                    }
                }
                Extension::Unknown { typ, .. } => {
                    let ctx = ExtensionContext::EncryptedExtensions;
                    if ctx.allows(*typ) == Some(false) || !offered(*typ) {
                        return Err(out_of_place(ctx, *typ));
                    }
                }
                other => {
                    // §4.2: a known extension not allowed here, or not offered.
                    let t = other.typ();
                    return Err(if offered(t) {
                        PeerMisbehaved::IllegalExtension("EncryptedExtensions").into()
                    } else {
                        PeerMisbehaved::UnsolicitedExtension(t).into()
                    });
                }
            }
        }
        hs.transcript
            .add(HandshakeType::EncryptedExtensions, &msg.encoded);
        if early_offered {
            if early_accepted {
                self.side.early_data.status = Some(EarlyDataStatus::Accepted);
                // Delivered: the copy kept for a rejection is not needed any more.
                self.side.early_data.sent = Vec::new();
            } else {
                self.reject_early_data();
                self.conn
                    .set_write_keys(Epoch::Handshake, &hs.suite, &hs.client_hs)?;
            }
        }
        Ok(match psk_identity {
            // §2.2: the PSK authenticates the server; no Certificate follows.
            Some(identity) => State::ExpectFinished(Box::new(ExpectFinished {
                hs,
                ee,
                auth: ServerAuth::Psk {
                    identity,
                    early_data_accepted: early_accepted,
                },
            })),
            None => {
                State::ExpectCertificateOrRequest(Box::new(ExpectCertificateOrRequest { hs, ee }))
            }
        })
    }

    fn on_certificate_or_request(
        &mut self,
        s: Box<ExpectCertificateOrRequest>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let ExpectCertificateOrRequest { mut hs, ee } = *s;
        match &msg.payload {
            HandshakePayload::CertificateRequest(cr) => {
                // §4.3.2: signature_algorithms is mandatory; context empty during the handshake.
                let schemes = requested_schemes(cr)?;
                if !cr.context.is_empty() {
                    return Err(PeerMisbehaved::IllegalExtension(
                        "certificate_request_context during handshake",
                    )
                    .into());
                }
                hs.transcript
                    .add(HandshakeType::CertificateRequest, &msg.encoded);
                Ok(State::ExpectCertificate(Box::new(ExpectCertificate {
                    hs,
                    ee,
                    request: CertificateRequested {
                        schemes,
                        compression: requested_compression(cr),
                    },
                })))
            }
            HandshakePayload::Certificate(_) | HandshakePayload::CompressedCertificate(_) => {
                let cert = self.accept_server_certificate(&mut hs, msg)?;
                Ok(State::ExpectCertificateVerify(Box::new(
                    ExpectCertificateVerify {
                        hs,
                        ee,
                        request: None,
                        cert,
                    },
                )))
            }
            _ => Err(unexpected("Certificate or CertificateRequest", &msg)),
        }
    }

    fn on_certificate(
        &mut self,
        s: Box<ExpectCertificate>,
        msg: HandshakeMessage,
    ) -> Result<Box<ExpectCertificateVerify>, Error> {
        let ExpectCertificate {
            mut hs,
            ee,
            request,
        } = *s;
        let cert = self.accept_server_certificate(&mut hs, msg)?;
        Ok(Box::new(ExpectCertificateVerify {
            hs,
            ee,
            request: Some(request),
            cert,
        }))
    }

    /// The server's Certificate (§4.4.2), or its CompressedCertificate (RFC 8879 §4) in an
    /// algorithm we offered: its chain checked as configured (§4.4.2.4), and the message as
    /// received added to the transcript.
    fn accept_server_certificate(
        &self,
        hs: &mut Handshake,
        msg: HandshakeMessage,
    ) -> Result<ServerCertificate, Error> {
        // RFC 9849 §6.1.7: after a rejected ECH the certificate must be valid for the
        // config's public_name, which is all this handshake can authenticate.
        let name = match &hs.ech {
            EchStatus::Rejected { public_name, .. } => Some(public_name.as_str()),
            _ => self.side.config.server_name.as_deref(),
        };
        let transcript = &mut hs.transcript;
        let typ = msg.typ();
        let c = match msg.payload {
            HandshakePayload::Certificate(c) => c,
            HandshakePayload::CompressedCertificate(ref cc) => crate::certcomp::certificate_from(
                cc,
                &self.side.config.cert_compression,
                self.side.config.max_handshake_message,
                "Certificate",
            )?,
            _ => return Err(unexpected("Certificate", &msg)),
        };
        if !c.context.is_empty() {
            return Err(PeerMisbehaved::IllegalExtension("certificate_request_context").into());
        }
        // The certificates move out of the decoded message.
        let mut chain: Vec<Vec<u8>> = c.entries.into_iter().map(|e| e.cert_data).collect();
        if chain.is_empty() {
            return Err(PeerMisbehaved::NoServerCertificate.into());
        }
        let now = self
            .side
            .config
            .fixed_validation_time_ms
            .unwrap_or(self.conn.now_ms);
        match &self.side.config.verification {
            ServerVerification::Roots(roots) => cert::verify_chain(
                &chain,
                roots,
                name,
                now / 1000,
                Usage::Server,
                self.side.config.signature_memo.as_deref(),
            )?,
            ServerVerification::RootsNoName(roots) => cert::verify_chain(
                &chain,
                roots,
                None,
                now / 1000,
                Usage::Server,
                self.side.config.signature_memo.as_deref(),
            )?,
            ServerVerification::InsecureAcceptAny => {}
        }
        transcript.add(typ, &msg.encoded);
        // Only the end-entity certificate is needed from here on; `chain` is not empty (above).
        Ok(ServerCertificate {
            leaf: chain.swap_remove(0),
        })
    }

    fn on_certificate_verify(
        &mut self,
        s: Box<ExpectCertificateVerify>,
        msg: HandshakeMessage,
    ) -> Result<Box<ExpectFinished>, Error> {
        let HandshakePayload::CertificateVerify(cv) = &msg.payload else {
            return Err(unexpected("CertificateVerify", &msg));
        };
        if !self.side.config.signature_schemes.contains(&cv.scheme) {
            return Err(PeerMisbehaved::UnofferedSignatureScheme.into());
        }
        let ExpectCertificateVerify {
            mut hs,
            ee,
            request,
            cert,
        } = *s;
        let hash = hs.transcript.current_hash();
        let content = certificate_verify_message(true, hash.as_ref());
        cert::verify_with_leaf(&cert.leaf, cv.scheme, &content, &cv.signature).map_err(
            |e| match e {
                SigError::BadSignature => Error::Peer(PeerMisbehaved::BadCertificateVerify),
                other => Error::Signature(other),
            },
        )?;
        hs.transcript
            .add(HandshakeType::CertificateVerify, &msg.encoded);
        Ok(Box::new(ExpectFinished {
            hs,
            ee,
            auth: ServerAuth::Certificate {
                scheme: cv.scheme,
                request,
            },
        }))
    }

    fn on_finished(
        &mut self,
        s: Box<ExpectFinished>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::Finished(verify_data) = &msg.payload else {
            return Err(unexpected("Finished", &msg));
        };
        let ExpectFinished { mut hs, ee, auth } = *s;
        let ev = &mut self.conn.ev;
        // verify_data is computed inline (an `Output`); compared as bytes, in constant time.
        let expected: &[u8] = &hs
            .server_hs
            .verify_data(hs.transcript.current_hash().as_ref(), ev);
        check_verify_data(expected, verify_data)?;
        // RFC 9849 §6.1.6: a rejected ECH handshake that completed ends here with ech_required
        // (the error's alert), before our Finished: never a connection, no tickets.
        if let EchStatus::Rejected { retry_configs, .. } = &mut hs.ech {
            return Err(Error::EchRejected {
                retry_configs: retry_configs.take(),
            });
        }
        hs.transcript.add(HandshakeType::Finished, &msg.encoded);
        let master = hs.secret.into_master(ev);
        let client_app = master.client_application_traffic_secret(&hs.transcript, ev);
        let server_app = master.server_application_traffic_secret(&hs.transcript, ev);
        let exporter = master.exporter_master_secret(&hs.transcript, ev);
        self.conn
            .set_read_keys(Epoch::Application(0), &hs.suite, &server_app)?;
        self.conn.ccs_allowed = false;

        // Our second flight (§4.4): [CCS] [EndOfEarlyData] [Certificate CertificateVerify] Finished.
        if self.side.config.compat_mode && !hs.ccs_sent {
            self.conn.send_ccs()?;
        }
        if let ServerAuth::Psk {
            early_data_accepted: true,
            ..
        } = auth
        {
            let eoed = HandshakePayload::EndOfEarlyData;
            hs.transcript.add(
                HandshakeType::EndOfEarlyData,
                self.conn.send_handshake(&eoed),
            );
        }
        self.side.early_data.open = false;
        if self.conn.write_epoch != Epoch::Handshake {
            self.conn
                .set_write_keys(Epoch::Handshake, &hs.suite, &hs.client_hs)?;
        }
        let mut client_scheme = None;
        if let ServerAuth::Certificate {
            request: Some(request),
            ..
        } = &auth
        {
            client_scheme = self.send_client_certificate(&mut hs.transcript, &[], request)?;
        }
        let fin = hs
            .client_hs
            .verify_data(hs.transcript.current_hash().as_ref(), &mut self.conn.ev);
        hs.transcript.add(
            HandshakeType::Finished,
            self.conn.send_handshake(OutgoingMessage::Finished(&fin)),
        );
        let resumption = master.resumption_master_secret(&hs.transcript, &mut self.conn.ev);
        self.conn
            .set_write_keys(Epoch::Application(0), &hs.suite, &client_app)?;
        self.conn.log_secret(exporter.name(), exporter.as_bytes());
        let (signature_scheme, psk_identity) = match auth {
            ServerAuth::Certificate { scheme, .. } => (Some(scheme), None),
            ServerAuth::Psk { identity, .. } => (None, Some(identity)),
        };
        let negotiated = Negotiated {
            version: "TLSv1.3",
            suite: hs.suite.suite,
            group: hs.group,
            signature_scheme,
            client_signature_scheme: client_scheme,
            resumed: psk_identity.is_some(),
            psk_identity,
            early_data: self
                .side
                .early_data
                .status
                .unwrap_or(EarlyDataStatus::NotSent),
            alpn: ee
                .alpn
                .as_ref()
                .map(|a| String::from_utf8_lossy(a).into_owned()),
            hello_retry: hs.hello_retry,
        };
        self.negotiated = Some(negotiated.clone());
        self.conn.ev.push(Event::Connected(negotiated));
        if let Some(groups) = ee.groups {
            self.conn.ev.push(Event::ServerGroups { groups });
        }
        let traffic = Traffic {
            suite: hs.suite,
            client_app,
            server_app,
            exporter,
            resumption,
            key_updates_in_a_row: 0,
        };
        // §4.6.2: only a client that offered post_handshake_auth may be asked later.
        let pha = offers_post_handshake_auth(&self.side.config).then(|| Box::new(hs.transcript));
        Ok(State::Connected(Box::new(Connected { traffic, pha })))
    }

    /// §4.4.2, §4.4.3: our Certificate (empty if we have none) and CertificateVerify, echoing
    /// the request's certificate_request_context: empty during the handshake (§4.3.2), the
    /// server's chosen value after it (§4.6.2). A certificate goes out compressed (RFC 8879
    /// §4) when the request offered an algorithm we use and that makes it smaller.
    fn send_client_certificate(
        &mut self,
        transcript: &mut Transcript,
        context: &[u8],
        request: &CertificateRequested,
    ) -> Result<Option<SignatureScheme>, Error> {
        let schemes = &request.schemes;
        // The certificate is sent from the configuration as it is (no copy of the chain).
        let config = Arc::clone(&self.side.config);
        let Some(ck) = &config.client_cert else {
            let m = OutgoingMessage::Certificate {
                context,
                chain: &[],
            };
            transcript.add(HandshakeType::Certificate, self.conn.send_handshake(m));
            return Ok(None);
        };
        let scheme = ck
            .key
            .schemes()
            .into_iter()
            .find(|s| schemes.contains(s))
            .ok_or(PeerMisbehaved::NoCommonSignatureScheme)?;
        let m = OutgoingMessage::Certificate {
            context,
            chain: &ck.chain,
        };
        let compressed = if request.compression.is_empty() {
            None
        } else {
            let body = m.body_bytes();
            crate::certcomp::compress_for_peer(
                &config.cert_compression,
                &request.compression,
                config.compressed_certificates.as_deref(),
                &body,
            )
            .map(|(algorithm, bytes)| (algorithm, body.len() as u32, bytes))
        };
        let (typ, sent) = match &compressed {
            // The transcript holds the CompressedCertificate as sent (RFC 8879 §4).
            Some((algorithm, uncompressed_length, bytes)) => (
                HandshakeType::CompressedCertificate,
                self.conn
                    .send_handshake(OutgoingMessage::CompressedCertificate {
                        algorithm: *algorithm,
                        uncompressed_length: *uncompressed_length,
                        compressed: bytes,
                    }),
            ),
            None => (HandshakeType::Certificate, self.conn.send_handshake(m)),
        };
        transcript.add(typ, sent);
        let content = certificate_verify_message(false, transcript.current_hash().as_ref());
        let signature = ck.key.sign(scheme, &content, self.conn.rng.as_mut())?;
        let m = HandshakePayload::CertificateVerify(CertificateVerify { scheme, signature });
        transcript.add(
            HandshakeType::CertificateVerify,
            self.conn.send_handshake(&m),
        );
        Ok(Some(scheme))
    }

    fn on_post_handshake(
        &mut self,
        mut c: Box<Connected>,
        msg: HandshakeMessage,
    ) -> Result<Box<Connected>, Error> {
        if let HandshakePayload::CertificateRequest(cr) = &msg.payload {
            // §4.2.6: a CertificateRequest to a client that did not offer post_handshake_auth
            // is "a fatal "unexpected_message" alert".
            let Some(handshake) = &c.pha else {
                return Err(unexpected("NewSessionTicket or KeyUpdate", &msg));
            };
            self.answer_certificate_request(handshake, &c.traffic, cr, &msg.encoded)?;
            return Ok(c);
        }
        let t = &mut c.traffic;
        match &msg.payload {
            HandshakePayload::NewSessionTicket(nst) => {
                // §4.6.1: lifetime at most 7 days.
                if nst.lifetime > 604_800 {
                    return Err(PeerMisbehaved::TicketLifetimeTooLong.into());
                }
                let max_early = nst.extensions.iter().find_map(|e| match e {
                    Extension::EarlyDataMax(n) => Some(*n),
                    _ => None,
                });
                let psk = t.resumption.psk(&nst.nonce, &mut self.conn.ev);
                self.side.tickets.insert(StoredTicket {
                    server_name: self.side.config.server_name.clone(),
                    suite: t.suite.suite,
                    ticket: nst.ticket.clone(),
                    psk: psk.as_ref().to_vec(),
                    age_add: nst.age_add,
                    lifetime: nst.lifetime,
                    received_at_ms: self.conn.now_ms,
                    max_early_data: max_early.unwrap_or(0),
                    alpn: self.negotiated.as_ref().and_then(|n| n.alpn.clone()),
                    external: false,
                });
                self.conn.ev.push(Event::Ticket {
                    direction: self.conn.side.receiving(),
                    lifetime: nst.lifetime,
                    max_early_data: max_early,
                });
                Ok(c)
            }
            HandshakePayload::KeyUpdate(req) => {
                receive_key_update(&mut self.conn, t, *req)?;
                Ok(c)
            }
            _ => Err(unexpected(
                "NewSessionTicket, KeyUpdate or CertificateRequest",
                &msg,
            )),
        }
    }

    /// §4.6.2: answer a post-handshake CertificateRequest with Certificate, CertificateVerify
    /// (when we have a certificate) and Finished, under the current application traffic keys.
    /// Each request's Handshake Context is the handshake's transcript (through our Finished)
    /// followed by this request and our answer alone (§4.4.1), so `handshake` is cloned, never
    /// extended: several requests, outstanding at once or one after another, are independent.
    fn answer_certificate_request(
        &mut self,
        handshake: &Transcript,
        t: &Traffic,
        cr: &CertificateRequest,
        encoded: &[u8],
    ) -> Result<(), Error> {
        let request = CertificateRequested {
            schemes: requested_schemes(cr)?,
            compression: requested_compression(cr),
        };
        if self.conn.write_closed {
            // After our close_notify nothing may be sent (§6.1): the request goes unanswered.
            return Ok(());
        }
        let mut transcript = handshake.clone();
        transcript.add(HandshakeType::CertificateRequest, encoded);
        let scheme = self.send_client_certificate(&mut transcript, &cr.context, &request)?;
        // §4.4.4: after the handshake the Finished key comes from
        // client_application_traffic_secret_N, the one we send under now.
        let fin = t.client_app.verify_data_for(&transcript, &mut self.conn.ev);
        self.conn.send_handshake(OutgoingMessage::Finished(&fin));
        let certificates = match (&self.side.config.client_cert, scheme) {
            (Some(ck), Some(_)) => ck.chain.len(),
            _ => 0,
        };
        self.conn.ev.push(Event::PostHandshakeAuth {
            direction: self.conn.side.sending(),
            context: cr.context.clone(),
            certificates,
            scheme,
        });
        Ok(())
    }

    fn reject_early_data(&mut self) {
        if self.side.early_data.status.is_some() {
            self.side.early_data.status = Some(EarlyDataStatus::Rejected);
            self.side.early_data.open = false;
            let data = core::mem::take(&mut self.side.early_data.sent);
            // Never lose application bytes silently: hand them back, on the data path (an
            // observer is told too).
            if self.conn.ev.active() {
                self.conn
                    .ev
                    .push(Event::EarlyDataRejected { data: data.clone() });
            }
            self.side.early_data.rejected = data;
        }
    }
}

/// Whether our ClientHello offers post_handshake_auth (§4.2.6): as configured, by default when
/// we have a certificate to answer with.
fn offers_post_handshake_auth(config: &ClientConfig) -> bool {
    config
        .post_handshake_auth
        .unwrap_or(config.client_cert.is_some())
}

/// §4.3.2: a CertificateRequest's signature_algorithms, which it must carry.
fn requested_schemes(cr: &CertificateRequest) -> Result<Vec<SignatureScheme>, Error> {
    cr.extensions
        .iter()
        .find_map(|e| match e {
            Extension::SignatureAlgorithms(s) => Some(s.clone()),
            _ => None,
        })
        .ok_or_else(|| PeerMisbehaved::MissingExtension(ExtensionType::SignatureAlgorithms).into())
}

/// RFC 8879 §3: the algorithms a CertificateRequest's compress_certificate offers for our
/// certificate (none without the extension).
fn requested_compression(cr: &CertificateRequest) -> Vec<CertificateCompressionAlgorithm> {
    cr.extensions
        .iter()
        .find_map(|e| match e {
            Extension::CompressCertificate(a) => Some(a.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Group and key_exchange of each share, as the ClientHello's key_share lists them (§4.2.8).
fn share_list(shares: &[KeyShareSecret]) -> Vec<(NamedGroup, &[u8])> {
    shares.iter().map(|s| (s.group(), s.public())).collect()
}

/// Whether our ClientHello carried an extension of type `t` that the server may answer in
/// EncryptedExtensions.
fn offered_extension(config: &ClientConfig, t: ExtensionType) -> bool {
    match t {
        ExtensionType::ServerName => config.server_name.is_some(),
        ExtensionType::ApplicationLayerProtocolNegotiation => !config.alpn.is_empty(),
        ExtensionType::RecordSizeLimit => config.record_size_limit.is_some(),
        _ => config.extra_extensions.iter().any(|e| e.typ() == t),
    }
}

/// Checks shared by ServerHello and HelloRetryRequest (§4.1.3, §4.2.1).
fn check_server_hello_common(sh: &ServerHello, s: &Offer) -> Result<(), Error> {
    match sh.find(ExtensionType::SupportedVersions) {
        Some(Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3)) => {}
        Some(Extension::SupportedVersionsServer(_)) => {
            return Err(PeerMisbehaved::SelectedUnoffered("version").into())
        }
        Some(_) => return Err(PeerMisbehaved::IllegalExtension("supported_versions").into()),
        None => {
            // A TLS 1.2 server: we only speak 1.3. Check the downgrade sentinel first (§4.1.3).
            let tail = &sh.random[24..];
            if tail == DOWNGRADE_TLS12 || tail == DOWNGRADE_TLS11 {
                return Err(PeerMisbehaved::DowngradeSentinel.into());
            }
            return Err(PeerMisbehaved::UnsupportedVersion.into());
        }
    }
    if sh.legacy_version != 0x0303 {
        return Err(PeerMisbehaved::BadLegacyField("legacy_version").into());
    }
    if sh.legacy_compression_method != 0 {
        return Err(PeerMisbehaved::BadLegacyField("legacy_compression_method").into());
    }
    if sh.legacy_session_id_echo != s.session_id {
        return Err(PeerMisbehaved::SessionIdMismatch.into());
    }
    Ok(())
}

/// §4.2: an extension "which it recognizes and which is not specified for the message in which
/// it appears" is illegal_parameter; any other extension the client did not ask for is
/// unsupported_extension.
fn out_of_place(ctx: ExtensionContext, t: ExtensionType) -> Error {
    if ctx.allows(t) == Some(false) {
        PeerMisbehaved::IllegalExtension(match ctx {
            ExtensionContext::ServerHello => "not allowed in ServerHello",
            ExtensionContext::HelloRetryRequest => "not allowed in HelloRetryRequest",
            _ => "not allowed in EncryptedExtensions",
        })
        .into()
    } else {
        PeerMisbehaved::UnsolicitedExtension(t).into()
    }
}

fn unexpected(expected: &'static str, msg: &HandshakeMessage) -> Error {
    PeerMisbehaved::UnexpectedMessage {
        expected,
        got: msg.typ(),
    }
    .into()
}

/// The extensions a ClientHelloOuter copies from ClientHelloInner (RFC 9849 §6.1): those a
/// server that rejects ECH needs to answer, none naming the real server.
const OUTER_COPIES: [ExtensionType; 7] = [
    ExtensionType::SupportedGroups,
    ExtensionType::KeyShare,
    ExtensionType::EarlyData,
    ExtensionType::SupportedVersions,
    ExtensionType::SignatureAlgorithms,
    ExtensionType::Cookie,
    ExtensionType::PskKeyExchangeModes,
];

/// An `encrypted_client_hello` extension with this extension_data.
fn ech_extension(body: Vec<u8>) -> OutgoingExtension<'static> {
    Extension::Unknown {
        typ: ExtensionType::EncryptedClientHello,
        body,
    }
    .into()
}

/// Adds `ext` as the last extension, before pre_shared_key (which stays last, §4.2.11).
fn insert_before_psk<'a>(hello: &mut ClientHelloOut<'a>, ext: OutgoingExtension<'a>) {
    let at = hello
        .extensions
        .iter()
        .position(|e| e.typ() == ExtensionType::PreSharedKey)
        .unwrap_or(hello.extensions.len());
    hello.extensions.insert(at, ext);
}

/// `"HKDF-SHA256/AES-128-GCM"`.
fn suite_name(s: crate::ech::wire::HpkeSymmetricCipherSuite) -> String {
    format!("{}/{}", s.kdf_id, s.aead_id)
}

impl crate::connection::sealed::Sealed for ClientSide {
    fn connected(&self) -> Option<&Traffic> {
        match &self.state {
            State::Connected(c) => Some(&c.traffic),
            _ => None,
        }
    }

    fn connected_mut(&mut self) -> Option<&mut Traffic> {
        match &mut self.state {
            State::Connected(c) => Some(&mut c.traffic),
            _ => None,
        }
    }
}

impl Role for ClientSide {
    const SIDE: Side = Side::Client;

    fn on_handshake(c: &mut Client, bytes: Vec<u8>) -> Result<(), Error> {
        c.handle(bytes)
    }

    fn send(c: &mut Client, data: &[u8]) -> Result<(), Error> {
        c.send_data(data)
    }
}

/// The handshake's progress and outcome; never a key, a secret or a ticket's PSK.
impl core::fmt::Debug for Client {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Client")
            .field("connected", &self.is_connected())
            .field("closed", &self.is_closed())
            .field("negotiated", &self.negotiated)
            .field("tickets", &self.side.tickets.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Client;
    use crate::config::ClientConfig;
    use crate::crypto::random::SeededRandom;
    use crate::error::Error;

    /// A failure with no alert of its own inside a call taking input (an invariant of ours not
    /// holding, `Error::InvalidState`) still tells the peer why: a fatal internal_error (RFC
    /// 8446 §6.2), under the keys of the moment (here none: a plaintext alert record). The
    /// states that own their secrets left no such failure reachable from `receive` on a
    /// connected endpoint; this pins the answer for the invariants that remain.
    #[test]
    fn an_invariant_failure_sends_internal_error() {
        let mut c = Client::new(
            Arc::new(ClientConfig::default()),
            Box::new(SeededRandom::from_seed(1)),
        )
        .unwrap();
        c.start(0).unwrap();
        let _hello = c.take_output();
        c.conn.fail(&Error::InvalidState("an invariant"));
        // alert(21), legacy version 0x0303, length 2, fatal(2), internal_error(80)
        assert_eq!(c.take_output(), [21, 3, 3, 0, 2, 2, 80]);
        assert!(c.is_closed());
        // A received alert is never answered, and nothing follows the first failure.
        c.conn.fail(&Error::InvalidState("again"));
        assert!(c.take_output().is_empty());
    }
}
