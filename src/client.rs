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
//! Each state holds only what its successors need, and its `handle` consumes the state and
//! moves those parts into the next one, so what a state implies is in its type rather than
//! re-checked. A HelloRetryRequest is answered once: only `ExpectServerHello` can take one
//! (§4.1.4). From ServerHello to the server's Finished every state embeds a `Handshake`
//! (suite, transcript, handshake secrets, what ServerHello settled); after EncryptedExtensions
//! also `ServerExtensions`. `ExpectCertificateVerify` holds a `ServerCertificate`, the
//! end-entity certificate of a non-empty chain that passed verification, and `ExpectFinished` a
//! `ServerAuth`: the selected PSK (and whether 0-RTT was accepted), or the verified
//! CertificateVerify's scheme and the server's CertificateRequest, if any.
//!
//! This file holds the states and the dispatch (`handle`: decode a message with the state's
//! Hash.length, give it to the state's `handle`). Each state handles its own messages:
//! `ExpectX::handle(self: Box<Self>, cx, msg)` consumes the state and returns the next, with a
//! narrow context `Cx` (the record layer, the configuration, and the few facts that outlive
//! one state), never the whole connection. The states' `handle`s and the steps they share (the
//! `Cx` methods) are in files by concern, so "where is X handled?" has one answer:
//!
//! - `client/hello.rs`: the ClientHellos, the second answering a HelloRetryRequest; padding and
//!   the PSK binder;
//! - `client/handshake.rs`: ServerHello, EncryptedExtensions, CertificateRequest, Certificate,
//!   CertificateVerify and Finished, then our second flight;
//! - `client/ech.rs`: the ECH glue: the offer (or GREASE) sent and the server's confirmation
//!   read, around the protocol in `ech::client`;
//! - `client/tickets.rs`: the PSK offered, 0-RTT data, NewSessionTickets kept;
//! - `client/post_handshake.rs`: what `Connected` handles.

use std::sync::Arc;

use crate::config::ClientConfig;
use crate::conn::Conn;
use crate::connection::{Connection, Role};
use crate::crypto::aead::{suite_params, SuiteParams};
use crate::crypto::hpke::SenderContext;
use crate::crypto::kx::KeyShareSecret;
use crate::crypto::random::RandomSource;
use crate::ech::client::Chosen;
use crate::ech::inner::InnerLayout;
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EarlyDataStatus, EchOutcome, Negotiated, Side};
use crate::keyschedule::schedule::{EarlySecret, ExporterSecret, HandshakeSecret, TrafficSecret};
use crate::keyschedule::transcript::Transcript;
use crate::messages::enums::{
    CertificateCompressionAlgorithm, CipherSuite, ExtensionType, NamedGroup, SignatureScheme,
};
use crate::messages::extensions::{Extension, ExtensionContext};
use crate::messages::handshake::{CertificateRequest, DecodeContext, HandshakeMessage};
use crate::session::{StoredTicket, TicketStore};
use crate::traffic::Traffic;

mod ech;
mod handshake;
mod hello;
mod post_handshake;
mod tickets;

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

/// What a transition reaches besides its own state (rustls' `Context`): the record layer,
/// randomness, clock and observer (`Conn`), the configuration, and the facts of the side that
/// outlive one state (the ticket store, the 0-RTT data path, ECH's outcome, what was
/// negotiated, the early exporter). Not the received-data queues, the buffer limit, nor the
/// state enum: a state is given to its `handle` by value and the next one is returned.
struct Cx<'a> {
    conn: &'a mut Conn,
    config: &'a ClientConfig,
    tickets: &'a mut TicketStore,
    early_data: &'a mut EarlyDataState,
    ech: &'a mut Option<EchOutcome>,
    negotiated: &'a mut Option<Negotiated>,
    early_exporter: &'a mut Option<ExporterSecret>,
}

/// The PSK a ClientHello offers (§4.2.11): a resumption ticket or an external PSK, with its
/// suite resolved when it was chosen, so the binder and the early secrets cannot miss it.
struct OfferedPsk {
    ticket: StoredTicket,
    suite: SuiteParams,
}

/// What a ClientHello offered, which the server's answer is checked against.
struct Offer {
    random: [u8; 32],
    session_id: Vec<u8>,
    shares: Vec<KeyShareSecret>,
    transcript: Transcript,
    /// The PSK offered, until the ServerHello selects it or not.
    psk: Option<OfferedPsk>,
    /// The PSK's early secret, when one is offered.
    early_secret: Option<EarlySecret>,
    ccs_sent: bool,
    /// With a real ECH offer, `random`, `transcript`, `psk` and `early_secret` are ClientHelloInner's
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
    /// The request's trust_anchors (draft-ietf-tls-trust-anchor-ids §4.1), if any.
    trust_anchors: Option<Vec<Vec<u8>>>,
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
        // An external PSK is offered in its suite (§4.2.11): one without parameters here could
        // never be bound.
        if let Some(p) = config
            .external_psks
            .iter()
            .find(|p| suite_params(p.suite).is_none())
        {
            return Err(Error::Config(format!(
                "external PSK suite {} is not supported",
                p.suite
            )));
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
        let (mut cx, state) = self.cx();
        match ExpectServerHello::send_first_hello(&mut cx) {
            Ok(s) => {
                *state = State::ExpectServerHello(Box::new(s));
                Ok(())
            }
            Err(e) => {
                cx.conn.fail(&e);
                Err(e)
            }
        }
    }

    /// The narrow context a transition gets, and the state apart from it.
    fn cx(&mut self) -> (Cx<'_>, &mut State) {
        let Connection {
            conn,
            side,
            negotiated,
            early_exporter,
            ..
        } = self;
        let ClientSide {
            config,
            state,
            tickets,
            early_data,
            ech,
        } = side;
        let cx = Cx {
            conn,
            config,
            tickets,
            early_data,
            ech,
            negotiated,
            early_exporter,
        };
        (cx, state)
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

    fn handle(&mut self, bytes: Vec<u8>) -> Result<(), Error> {
        let hash_len = match &self.side.state {
            State::Connected(c) => c.traffic.suite.hash.output_len(),
            // Before ServerHello no suite is known: 0 takes any length, and the message is
            // unexpected here anyway (no Hash.length-sized field precedes the suite).
            state => state.handshake().map_or(0, |h| h.suite.hash.output_len()),
        };
        let msg = HandshakeMessage::decode_owned(bytes, DecodeContext { hash_len })?;
        self.conn.handshake_received(&msg);
        let (mut cx, state) = self.cx();
        let cx = &mut cx;
        *state = match core::mem::replace(state, State::Poisoned) {
            State::ExpectServerHello(s) => s.handle(cx, msg)?,
            State::ExpectServerHelloAfterRetry(s) => s.handle(cx, msg)?,
            State::ExpectEncryptedExtensions(s) => s.handle(cx, msg)?,
            State::ExpectCertificateOrRequest(s) => s.handle(cx, msg)?,
            State::ExpectCertificate(s) => s.handle(cx, msg)?,
            State::ExpectCertificateVerify(s) => s.handle(cx, msg)?,
            State::ExpectFinished(s) => s.handle(cx, msg)?,
            State::Connected(mut c) => {
                // A post-handshake message that fails closes the connection, but the connected
                // state keeps its secrets: is_connected() and export() still answer.
                let handled = c.handle(cx, msg);
                *state = State::Connected(c);
                return handled;
            }
            State::Start | State::Poisoned => {
                return Err(unexpected("nothing (handshake not started)", &msg))
            }
        };
        Ok(())
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

/// The RequestedTrustAnchorList of a CertificateRequest, at our code point; malformed is
/// decode_error.
fn requested_trust_anchors(
    config: &ClientConfig,
    cr: &CertificateRequest,
) -> Result<Option<Vec<Vec<u8>>>, Error> {
    let cp = config.trust_anchors_code_point();
    match cr.extensions.iter().find(|e| e.typ() == cp) {
        Some(Extension::Unknown { body, .. }) => {
            Ok(Some(crate::trust_anchors::decode_requested(body)?))
        }
        _ => Ok(None),
    }
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

    use super::{Client, OfferedPsk};
    use crate::config::ClientConfig;
    use crate::crypto::aead::suite_params;
    use crate::crypto::hash::HashAlg;
    use crate::crypto::random::SeededRandom;
    use crate::error::Error;
    use crate::keyschedule::transcript::Transcript;
    use crate::messages::enums::CipherSuite;
    use crate::session::StoredTicket;

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

    /// The one invariant left inside `receive` on the client: a PSK binder is computed over the
    /// transcript in the PSK's hash (RFC 8446 §4.2.11.2). The hellos keep the two in step (the
    /// first transcript hashes at once only in the one hash every suite and the PSK share; after
    /// a HelloRetryRequest a PSK in another hash is dropped before the second hello is bound),
    /// so only a bug of ours can break it; if one did, the peer would get internal_error.
    #[test]
    fn a_binder_over_a_transcript_in_another_hash_sends_internal_error() {
        let mut c = Client::new(
            Arc::new(ClientConfig::default()),
            Box::new(SeededRandom::from_seed(1)),
        )
        .unwrap();
        let (mut cx, _) = c.cx();
        let psk = OfferedPsk {
            ticket: StoredTicket {
                server_name: None,
                suite: CipherSuite::TLS_AES_128_GCM_SHA256,
                ticket: vec![7; 16],
                psk: vec![9; 32],
                age_add: 0,
                lifetime: 0,
                received_at_ms: 0,
                max_early_data: 0,
                alpn: None,
                external: true,
            },
            suite: suite_params(CipherSuite::TLS_AES_128_GCM_SHA256).unwrap(),
        };
        let cfg = cx.config;
        let mut hello = cx.build_hello(cfg, &[1; 32], &[], &[], Some(&psk), None, false, false);
        let sha384 = Transcript::with_hash(HashAlg::Sha384);
        let Err(e) = cx.bind_psk(&mut hello, &sha384, Some(&psk)) else {
            panic!("a binder was computed over a SHA-384 transcript for a SHA-256 PSK");
        };
        assert!(matches!(e, Error::InvalidState(_)), "{e:?}");
        cx.conn.fail(&e);
        assert_eq!(c.take_output(), [21, 3, 3, 0, 2, 2, 80]);
        // The same PSK over a transcript in its own hash binds.
        let (mut cx, _) = c.cx();
        let cfg = cx.config;
        let mut hello = cx.build_hello(cfg, &[1; 32], &[], &[], Some(&psk), None, false, false);
        let sha256 = Transcript::with_hash(HashAlg::Sha256);
        assert!(cx
            .bind_psk(&mut hello, &sha256, Some(&psk))
            .unwrap()
            .is_some());
    }
}
