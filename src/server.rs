//! The TLS 1.3 server: one struct per handshake state (RFC 8446 §A.2).
//!
//! ```text
//!  ExpectClientHello ──(no usable share: HelloRetryRequest)──▶ ExpectSecondClientHello
//!        │                                                            │
//!        ├◀───────────────────────────────────────────────────────────┘
//!        │ ClientHello: send ServerHello, [CCS], EncryptedExtensions, [CertificateRequest],
//!        │              [Certificate, CertificateVerify], Finished
//!        ├──(0-RTT accepted)─────▶ ExpectEndOfEarlyData ─────────────────────┐
//!        ├──(CertificateRequest)─▶ ExpectCertificate ──(empty)───────────────┤
//!        │                              │ (certificates)                     │
//!        │                              ▼                                    │
//!        │                         ExpectCertificateVerify ──────────────────┤
//!        └─────────────────────────────────────────────────────────▶ ExpectFinished
//!                                                                            ▼
//!                                           Connected (NewSessionTicket, KeyUpdate, data;
//!                                             post-handshake CertificateRequests and their
//!                                             answers, §4.6.2)
//! ```
//!
//! Each state's struct holds what its transitions need, and a transition consumes it and moves
//! what the next needs into the next struct. What a state implies is in its type, not checked
//! again: `ExpectSecondClientHello` holds what our HelloRetryRequest asked for, and only the first
//! ClientHello's transition can send one; `ExpectEndOfEarlyData` alone counts the 0-RTT bytes left and leads only to
//! `ExpectFinished` (a PSK, so no CertificateRequest); `ExpectCertificateVerify` holds the
//! client's end-entity certificate (the Certificate was not empty); `ExpectFinished` holds the
//! client's `ClientVerified` scheme when its CertificateVerify checked out. The states from our
//! Finished to the client's share a `Handshake`: suite, transcript, secrets, negotiated
//! parameters. After the handshake `Connected` owns the traffic secrets, and keeps a
//! `PostHandshakeAuth` (the transcript through the client's Finished, our
//! outstanding CertificateRequests, the answer being received) only when the client offered
//! post_handshake_auth and the configuration lets us ask (§4.6.2).

use std::sync::Arc;

use subtle::ConstantTimeEq;

use crate::config::{apply_extension_order, AntiReplay, ClientAuth, ServerConfig, TicketMode};
use crate::conn::Conn;
use crate::connection::check_verify_data;
use crate::connection::{Connection, Role};
use crate::crypto::aead::{suite_params, SuiteParams};
use crate::crypto::cert::{self, Usage};
use crate::crypto::hpke::{self, HpkeStep, ReceiverContext};
use crate::crypto::kx;
use crate::crypto::random::RandomSource;
use crate::crypto::sign::{certificate_verify_message, SigError};
use crate::ech::confirm::{ACCEPT_LABEL, HRR_ACCEPT_LABEL};
use crate::ech::wire::{EchClientHello, HpkeSymmetricCipherSuite};
use crate::ech::{inner, EchError};
use crate::error::{Error, PeerMisbehaved};
use crate::events::{
    EarlyDataStatus, EchEvent, EchInnerParts, EchParts, EchStatus, Epoch, Event, HandshakeEvent,
    KeyShareEvent, Negotiated, Side,
};
use crate::keyschedule::schedule::{
    EarlySecret, ExporterSecret, HandshakeSecret, MasterSecret, TrafficSecret,
};
use crate::keyschedule::transcript::Transcript;
use crate::keyschedule::NoSink;
use crate::messages::codec::DecodeError;
use crate::messages::ech::EchConfigList;
use crate::messages::enums::{
    CertificateCompressionAlgorithm, CipherSuite, ExtensionType, HandshakeType, NamedGroup,
    ProtocolVersion, PskKeyExchangeMode, SignatureScheme,
};
use crate::messages::extensions::{Extension, KeyShareEntry};
use crate::messages::handshake::{
    CertificatePayload, CertificateRequest, CertificateVerify, ClientHello, DecodeContext,
    HandshakeMessage, HandshakePayload, NewSessionTicket, OutgoingMessage, ServerHello, HRR_RANDOM,
};
use crate::session::ResumptionState;
use crate::traffic::{receive_key_update, Traffic};

/// A TLS 1.3 server connection, sans-IO: feed it bytes with [`Server::receive`], send what
/// [`Server::take_output`] returns, and read what happened from [`Server::events`]. The calls
/// both sides share are those of [`Connection`]; the server adds [`Server::new`] and
/// [`Server::send_ticket`].
pub type Server = Connection<ServerSide>;

/// The server's side of a [`Connection`]: its configuration and handshake state.
pub struct ServerSide {
    config: Arc<ServerConfig>,
    state: State,
    tickets_sent: u16,
    /// What the first ClientHello decided about ECH (RFC 9849 §7.1), once it did.
    ech: Option<EchStatus>,
}

/// After the handshake (§4.6).
struct Connected {
    /// The application traffic, exporter and resumption secrets.
    traffic: Traffic,
    /// Post-handshake client authentication, kept only when the client offered it and we may
    /// ask (§4.6.2), so an idle connection that cannot be asked holds no hash state.
    pha: Option<Box<PostHandshakeAuth>>,
}

/// One variant per state of §A.2, each boxed so that a connection carries one pointer while it
/// waits; a transition consumes its state's struct and moves what the next one needs into it.
enum State {
    ExpectClientHello,
    /// After our HelloRetryRequest; there is no second one (§4.1.4).
    ExpectSecondClientHello(Box<ExpectSecondClientHello>),
    ExpectEndOfEarlyData(Box<ExpectEndOfEarlyData>),
    ExpectCertificate(Box<ExpectCertificate>),
    ExpectCertificateVerify(Box<ExpectCertificateVerify>),
    ExpectFinished(Box<ExpectFinished>),
    /// The handshake is complete; the state owns the traffic secrets, so "connected" is
    /// stored once.
    Connected(Box<Connected>),
    /// Transient while a state is being replaced, and after failure.
    Poisoned,
}

/// What a HelloRetryRequest asked for (§4.1.4): the second ClientHello must comply.
struct ExpectSecondClientHello {
    suite: CipherSuite,
    group: NamedGroup,
    cookie: Option<Vec<u8>>,
    /// message_hash(ClientHello1) + HelloRetryRequest (§4.4.1).
    transcript: Transcript,
    /// The first ClientHello, which the second must repeat (§4.1.2): ClientHelloInner when
    /// ECH was accepted.
    first: ClientHello,
    ccs_sent: bool,
    /// ECH as the first ClientHello decided it: the second is not decided again (RFC 9849
    /// §7.1.1).
    ech: EchState,
}

/// What the first ClientHello decided about ECH (RFC 9849 §7.1).
enum EchState {
    /// No `encrypted_client_hello`.
    NotOffered,
    /// Offered, and no key opened it (a stale config, or GREASE): the handshake answers
    /// ClientHelloOuter, and EncryptedExtensions carries retry_configs.
    Rejected,
    /// Opened: the handshake answers ClientHelloInner.
    Accepted(Box<EchAccepted>),
}

/// An accepted ECH: what confirms it and what opens the second ClientHelloOuter.
struct EchAccepted {
    /// The context that opened the first payload opens the second, as its second message
    /// (§7.1.1).
    ctx: ReceiverContext,
    suite: HpkeSymmetricCipherSuite,
    config_id: u8,
    /// ClientHelloInner.random: the confirmation's key (§7.2).
    inner_random: [u8; 32],
}

/// What every state between our Finished and the client's carries: the suite, the transcript,
/// and the secrets our flight settled.
struct Handshake {
    suite: SuiteParams,
    transcript: Transcript,
    master: MasterSecret,
    /// Opens the client's flight, and its Finished is checked with it (§4.4.4).
    client_hs: TrafficSecret,
    client_app: TrafficSecret,
    server_app: TrafficSecret,
    /// Derived with the application secrets: its transcript ends at our Finished (§7.1).
    exporter: ExporterSecret,
    negotiated: Negotiated,
    /// The ClientHello offered post_handshake_auth (§4.2.6).
    pha_offered: bool,
}

/// Post-handshake client authentication (§4.6.2) on a connection whose client offered it.
struct PostHandshakeAuth {
    /// The transcript through the client's Finished: each request's Handshake Context starts
    /// from it, followed by that request and its answer alone (§4.4.1).
    handshake: Transcript,
    /// CertificateRequests sent and not yet answered, oldest first. The client answers each in
    /// turn; its Certificate names the one it answers by context.
    pending: Vec<PendingRequest>,
    /// The answer being received, between its Certificate and its Finished.
    answer: Option<PhaAnswer>,
}

/// A CertificateRequest we sent after the handshake.
struct PendingRequest {
    context: Vec<u8>,
    /// `handshake` + this CertificateRequest.
    transcript: Transcript,
}

/// Where a client's answer to one request stands: its transcript so far, the context it
/// echoed, and how many certificates its Certificate carried.
struct PhaAnswer {
    context: Vec<u8>,
    transcript: Transcript,
    certificates: usize,
    step: PhaStep,
}

enum PhaStep {
    /// A non-empty Certificate whose chain validated: its CertificateVerify is next.
    ExpectCertificateVerify(ClientCertificate),
    /// Its Finished is next; the CertificateVerify's scheme if one checked out.
    ExpectFinished(Option<ClientVerified>),
}

/// 0-RTT accepted (§4.2.10). A PSK authenticated us, so no CertificateRequest went out: the
/// client's Finished follows its EndOfEarlyData.
struct ExpectEndOfEarlyData {
    hs: Handshake,
    /// 0-RTT bytes the client may still send: the ticket's max_early_data_size.
    early_remaining: usize,
}

/// Our CertificateRequest went out (§4.3.2).
struct ExpectCertificate {
    hs: Handshake,
}

/// The client sent a certificate, validated against the roots when there are any.
struct ExpectCertificateVerify {
    hs: Handshake,
    leaf: ClientCertificate,
}

/// The client's Finished ends its flight (§4.4.4).
struct ExpectFinished {
    hs: Handshake,
    /// Present when the client authenticated with a certificate.
    client_verified: Option<ClientVerified>,
}

/// The client's end-entity certificate (§4.4.2), which its CertificateVerify must be signed
/// with; the rest of its chain is done with once validated.
struct ClientCertificate(Vec<u8>);

/// The client's CertificateVerify checked out under its certificate's key (§4.4.3); only
/// `on_certificate_verify` makes one.
struct ClientVerified {
    scheme: SignatureScheme,
}

/// The key share decision (§4.2.8).
enum ShareChoice<'a> {
    /// Use the client's share (borrowed from its ClientHello).
    Use(&'a KeyShareEntry),
    /// Ask for this group in a HelloRetryRequest.
    Retry(NamedGroup),
    /// No group in common.
    NoCommon,
    /// The client sent no key_share (possible with psk_ke).
    Missing,
}

/// What the client offered for the key exchange (§4.2.8, §4.2.9).
enum KeyExchange<'a> {
    Ready(Offer<'a>),
    /// Ask for this group in a HelloRetryRequest.
    Retry(NamedGroup),
}

/// A PSK we can use (binder not yet checked) and the client's share (borrowed from its
/// ClientHello), unless psk_ke makes it unnecessary.
struct Offer<'a> {
    psk: Option<(PskCandidate, PskKeyExchangeMode)>,
    share: Option<&'a KeyShareEntry>,
}

/// Where the handshake stood when the ClientHello we answer arrived.
struct Prior {
    /// Empty, or message_hash(ClientHello1) + HelloRetryRequest.
    transcript: Transcript,
    hello_retry: bool,
    /// Whether our HelloRetryRequest was followed by a CCS (§D.4: only one is sent).
    ccs_sent: bool,
    ech: EchState,
}

/// An offered PSK we can use, before its binder is checked.
struct PskCandidate {
    index: u16,
    psk: Vec<u8>,
    binder: Vec<u8>,
    external: bool,
    state: Option<ResumptionState>,
    ticket: Vec<u8>,
    client_age_ms: u64,
    max_early_data: u32,
}

impl Drop for PskCandidate {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.psk);
    }
}

/// How far the client's and our view of a ticket's age may differ for 0-RTT (§8.3).
const DEFAULT_AGE_WINDOW_MS: u64 = 10_000;

impl Server {
    /// A server for `config`, drawing every random value from `rng`.
    pub fn new(config: Arc<ServerConfig>, rng: Box<dyn RandomSource>) -> Result<Server, Error> {
        if config.credentials().any(|c| c.chain.is_empty()) {
            return Err(Error::Config("the server needs a certificate".into()));
        }
        let mut conn = Conn::new(
            Side::Server,
            config.observe,
            rng,
            config.padding,
            config.max_handshake_message,
        );
        conn.ccs_allowed = false;
        Ok(Connection::with_side(
            conn,
            ServerSide {
                config,
                state: State::ExpectClientHello,
                tickets_sent: 0,
                ech: None,
            },
        ))
    }

    /// What the first ClientHello decided about ECH (RFC 9849 §7.1): accepted, rejected
    /// (ClientHelloOuter answered) or not offered; `None` before a ClientHello arrived.
    pub fn ech_status(&self) -> Option<EchStatus> {
        self.side.ech
    }

    /// [`Connection::send`] for a server: allowed once our Finished is out (0.5-RTT data, §2).
    fn send_data(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.conn.failed || self.conn.write_closed {
            return Err(Error::Closed);
        }
        if !matches!(self.conn.write_epoch, Epoch::Application(_)) {
            return Err(Error::InvalidState("handshake not far enough"));
        }
        self.conn.send_app_data(data)?;
        Ok(())
    }

    fn handle(&mut self, bytes: Vec<u8>) -> Result<(), Error> {
        let hash_len = match &self.side.state {
            State::ExpectEndOfEarlyData(s) => s.hs.suite.hash.output_len(),
            State::ExpectCertificate(s) => s.hs.suite.hash.output_len(),
            State::ExpectCertificateVerify(s) => s.hs.suite.hash.output_len(),
            State::ExpectFinished(s) => s.hs.suite.hash.output_len(),
            State::Connected(c) => c.traffic.suite.hash.output_len(),
            // No suite yet (a ClientHello is expected): 0 takes any length, and a message
            // with a Hash.length-sized field is unexpected here anyway.
            _ => 0,
        };
        let expects_hello = matches!(
            self.side.state,
            State::ExpectClientHello | State::ExpectSecondClientHello(_)
        );
        let msg = match HandshakeMessage::decode_owned_or_return(bytes, DecodeContext { hash_len })
        {
            Ok(m) => m,
            Err((e, bytes)) if expects_hello => return Err(tls12_hello_or(e, &bytes)),
            Err((e, _)) => return Err(e.into()),
        };
        self.conn.handshake_received(&msg);
        let state = core::mem::replace(&mut self.side.state, State::Poisoned);
        self.side.state = match state {
            State::ExpectClientHello => self.on_client_hello(msg)?,
            State::ExpectSecondClientHello(s) => self.on_second_client_hello(s, msg)?,
            State::ExpectEndOfEarlyData(s) => self.on_end_of_early_data(s, msg)?,
            State::ExpectCertificate(s) => self.on_certificate(s, msg)?,
            State::ExpectCertificateVerify(s) => self.on_certificate_verify(s, msg)?,
            State::ExpectFinished(s) => self.on_finished(s, msg)?,
            State::Connected(c) => State::Connected(self.on_post_handshake(c, msg)?),
            State::Poisoned => return Err(Error::Closed),
        };
        Ok(())
    }

    /// The first ClientHello: answered with our flight, or with a HelloRetryRequest when it
    /// carries no share we can use (§4.1.1).
    fn on_client_hello(&mut self, msg: HandshakeMessage) -> Result<State, Error> {
        // Owned: a HelloRetryRequest keeps this ClientHello for the second to repeat.
        let HandshakeMessage {
            payload: HandshakePayload::ClientHello(outer),
            encoded,
        } = msg
        else {
            return Err(unexpected("ClientHello", &msg));
        };
        // Once the first ClientHello is in, a dummy CCS may follow (§5).
        self.conn.ccs_allowed = true;
        // RFC 9849 §7.1: ECH is decided before anything else is negotiated; from here on `ch`
        // is ClientHelloInner when it was accepted.
        let (ch, encoded, ech) = self.open_ech(outer, encoded)?;
        check_client_hello(&ch)?;
        self.conn.client_random = ch.random;
        let suite = self.choose_suite(&ch)?;
        let mut transcript = Transcript::new();
        transcript
            .start_hash(suite.hash)
            .map_err(|_| Error::InvalidState("transcript hash already chosen"))?;
        let offer = match self.key_exchange(&ch, &suite, None)? {
            KeyExchange::Ready(offer) => offer,
            KeyExchange::Retry(group) => {
                if ch.find(ExtensionType::EarlyData).is_some() {
                    // 0-RTT records may follow ClientHello1; skip them (§4.2.10).
                    self.early_skip = Some(self.early_skip_budget());
                }
                return self.send_hello_retry(ch, &encoded, suite, group, ech);
            }
        };
        let prior = Prior {
            transcript,
            hello_retry: false,
            ccs_sent: false,
            ech,
        };
        self.answer_hello(&encoded, &ch, suite, prior, offer)
    }

    /// The ClientHello after our HelloRetryRequest: it must do as asked (§4.1.4) and otherwise
    /// repeat the first (§4.1.2). Nothing leads from here to a second HelloRetryRequest.
    fn on_second_client_hello(
        &mut self,
        st: Box<ExpectSecondClientHello>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakeMessage {
            payload: HandshakePayload::ClientHello(ch),
            encoded,
        } = msg
        else {
            return Err(unexpected("ClientHello", &msg));
        };
        // §4.2.10: after a HelloRetryRequest only the 0-RTT records sent before the second
        // ClientHello may be skipped; nothing after it is early data.
        self.early_skip = None;
        let mut st = st;
        let ech = core::mem::replace(&mut st.ech, EchState::NotOffered);
        let (ch, encoded, ech) = match ech {
            EchState::Accepted(acc) => self.open_second_ech(acc, ch, encoded)?,
            // Rejected or not offered: the second ClientHelloOuter is answered as it is, and
            // its payload, if any, is not opened (§7.1.1). Only a server with ECH keys checks
            // the extension (see `open_ech`).
            other => {
                if let Some(e) = ch.find(ExtensionType::EncryptedClientHello) {
                    let offer = match ech_offer(e) {
                        Err(e) if !self.side.config.ech_keys.is_empty() => return Err(e),
                        r => r.ok(),
                    };
                    if let Some((suite, config_id, enc, payload)) = offer {
                        self.ech_parts(&ch, suite, config_id, &enc, &payload, None);
                    }
                }
                (ch, encoded, other)
            }
        };
        let ch = &ch;
        check_client_hello(ch)?;
        let suite = self.choose_suite(ch)?;
        if suite.suite != st.suite {
            return Err(PeerMisbehaved::HelloRetryMismatch("cipher suite").into());
        }
        check_second_hello(ch, &st)?;
        let offer = match self.key_exchange(ch, &suite, Some(st.group))? {
            KeyExchange::Ready(offer) => offer,
            // The second ClientHello must carry the share we asked for (§4.1.4).
            KeyExchange::Retry(_) => {
                return Err(PeerMisbehaved::SecondClientHelloMismatch("key_share").into())
            }
        };
        let ExpectSecondClientHello {
            transcript,
            ccs_sent,
            ..
        } = *st;
        let prior = Prior {
            transcript,
            hello_retry: true,
            ccs_sent,
            ech,
        };
        self.answer_hello(&encoded, ch, suite, prior, offer)
    }

    /// PSK (§4.2.11) first: it decides whether we need a key share (§4.2.9). `asked`: the group
    /// our HelloRetryRequest asked for.
    fn key_exchange<'a>(
        &mut self,
        ch: &'a ClientHello,
        suite: &SuiteParams,
        asked: Option<NamedGroup>,
    ) -> Result<KeyExchange<'a>, Error> {
        let psk_offer = self.psk_candidate(ch, suite)?;
        let share = self.choose_share(ch, asked)?;
        let mode = match &psk_offer {
            Some(_) => self.psk_mode(ch, &share),
            None => None,
        };
        let psk = match (psk_offer, mode) {
            (Some(p), Some(m)) => Some((p, m)),
            _ => None,
        };
        let use_dhe = psk
            .as_ref()
            .is_none_or(|(_, m)| *m == PskKeyExchangeMode::PskDheKe);
        if !use_dhe {
            return Ok(KeyExchange::Ready(Offer { psk, share: None }));
        }
        match share {
            ShareChoice::Use(entry) => Ok(KeyExchange::Ready(Offer {
                psk,
                share: Some(entry),
            })),
            ShareChoice::Retry(group) => Ok(KeyExchange::Retry(group)),
            ShareChoice::NoCommon => Err(PeerMisbehaved::NoCommonGroup.into()),
            ShareChoice::Missing => {
                Err(PeerMisbehaved::MissingExtension(ExtensionType::KeyShare).into())
            }
        }
    }

    /// A ClientHello we can answer: our ServerHello, a CCS in compatibility mode,
    /// EncryptedExtensions, CertificateRequest if we ask, Certificate and CertificateVerify
    /// unless a PSK authenticates us, and Finished (§2).
    fn answer_hello(
        &mut self,
        encoded: &[u8],
        ch: &ClientHello,
        suite: SuiteParams,
        prior: Prior,
        offer: Offer<'_>,
    ) -> Result<State, Error> {
        let Prior {
            mut transcript,
            hello_retry,
            ccs_sent,
            ech,
        } = prior;
        let Offer { psk, share } = offer;
        let offers_early = ch.find(ExtensionType::EarlyData).is_some();
        // Certificate authentication needs a credential and a common signature scheme (§4.2.3).
        let credential = if psk.is_none() {
            Some(self.choose_credential(ch)?)
        } else {
            None
        };
        let scheme = credential.map(|(_, scheme)| scheme);

        // The binder proves the client holds the PSK and binds it to this ClientHello
        // (§4.2.11.2): verify it over the transcript so far plus the truncated ClientHello.
        let early_secret = match &psk {
            Some((p, _)) => {
                let es = EarlySecret::new(suite.hash, Some(&p.psk), &mut self.conn.ev);
                let partial = &encoded[..encoded.len() - ch.binders_len()];
                let expected = es
                    .binder_key(!p.external, &mut self.conn.ev)
                    .binder_for(&transcript, partial, &mut self.conn.ev)
                    .ok_or(PeerMisbehaved::BadBinder)?;
                if !bool::from(expected.ct_eq(&p.binder)) {
                    return Err(PeerMisbehaved::BadBinder.into());
                }
                es
            }
            None => EarlySecret::new(suite.hash, None, &mut self.conn.ev),
        };
        transcript.add(HandshakeType::ClientHello, encoded);

        // 0-RTT (§4.2.10): only with the first identity, a fresh ticket allowing it, the same suite
        // and ALPN, no HelloRetryRequest, and the anti-replay policy's consent.
        let alpn = self.choose_alpn(ch)?;
        let early_accepted = match &psk {
            Some((p, _)) if offers_early && !hello_retry => {
                self.accept_early(p, &suite, alpn.as_deref())
            }
            _ => false,
        };
        let early_budget = psk.as_ref().map_or(0, |(p, _)| p.max_early_data);

        // ServerHello (§4.1.3): random first, then our share, from the injected source.
        let random: [u8; 32] = self.conn.random();
        let mut sh_exts = Vec::new();
        if let Some((p, _)) = &psk {
            sh_exts.push(Extension::PreSharedKeyServer(p.index));
        }
        let mut shared = None;
        if let Some(entry) = &share {
            // The per-component shares and secrets are copied only for an observer of secrets
            // (the KeyShare event); otherwise the key exchange yields just the secret.
            let observed = self.conn.observe().secrets;
            let respond = if observed {
                kx::server_respond
            } else {
                kx::server_respond_secret_only
            };
            let (server_share, mut kx) =
                respond(entry.group, &entry.key_exchange, self.conn.rng.as_mut())?;
            if observed {
                self.conn.ev.push(Event::KeyShare(KeyShareEvent {
                    group: entry.group,
                    components: core::mem::take(&mut kx.components),
                    shared_secret: kx.shared_secret.to_vec(),
                }));
            }
            // Kept as the KxResult, which erases the secret when it drops.
            shared = Some(kx);
            sh_exts.push(Extension::KeyShareServer(KeyShareEntry {
                group: entry.group,
                key_exchange: server_share,
            }));
        }
        sh_exts.push(Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3));
        let mut sh = ServerHello {
            legacy_version: 0x0303,
            random,
            legacy_session_id_echo: ch.legacy_session_id.clone(),
            cipher_suite: suite.suite,
            legacy_compression_method: 0,
            extensions: sh_exts,
        };
        if let EchState::Accepted(acc) = &ech {
            // RFC 9849 §7.2: the last 8 bytes of random confirm ECH, computed over the inner
            // transcript through this ServerHello with those bytes zero.
            sh.random[24..].fill(0);
            let zeroed = HandshakeMessage::new(HandshakePayload::ServerHello(sh.clone())).encoded;
            let th = transcript.hash_of_prefix_with(&zeroed);
            let c = self
                .conn
                .ech_confirmation(suite.hash, &acc.inner_random, ACCEPT_LABEL, &th);
            sh.random[24..].copy_from_slice(&c);
        }
        let sh = HandshakePayload::ServerHello(sh);
        // The early traffic secret covers ClientHello only (§7.1).
        let early_traffic = early_accepted
            .then(|| early_secret.client_early_traffic_secret(&transcript, &mut self.conn.ev));
        if early_accepted {
            let ees = early_secret.early_exporter_master_secret(&transcript, &mut self.conn.ev);
            self.conn.log_secret(ees.name(), ees.as_bytes());
            self.early_exporter = Some(ees);
        }
        transcript.add(HandshakeType::ServerHello, self.conn.send_handshake(&sh));
        // §D.4: in compatibility mode the CCS follows our first handshake message.
        if self.side.config.compat_mode && !ch.legacy_session_id.is_empty() && !ccs_sent {
            self.conn.send_ccs()?;
        }

        let ev = &mut self.conn.ev;
        let hs: HandshakeSecret =
            early_secret.into_handshake(shared.as_ref().map(|k| k.shared_secret.as_slice()), ev);
        let client_hs = hs.client_handshake_traffic_secret(&transcript, ev);
        let server_hs = hs.server_handshake_traffic_secret(&transcript, ev);
        self.conn
            .set_write_keys(Epoch::Handshake, &suite, &server_hs)?;
        match &early_traffic {
            Some(secret) => self.conn.set_read_keys(Epoch::Early, &suite, secret)?,
            None => self
                .conn
                .set_read_keys(Epoch::Handshake, &suite, &client_hs)?,
        }
        if offers_early && !early_accepted {
            // We did not accept 0-RTT: skip what the client sends under early keys (§4.2.10).
            self.early_skip = Some(self.early_skip_budget());
        }

        // EncryptedExtensions (§4.3.1).
        let used_group = share.as_ref().map(|s| s.group);
        let mut ee = self.encrypted_extensions(ch, alpn.as_deref(), used_group)?;
        if early_accepted {
            ee.push(Extension::EarlyDataEmpty);
        }
        // RFC 9849 §7.1: a rejected ECH is answered with our current configs.
        let retry = matches!(ech, EchState::Rejected) && !self.side.config.ech_keys.is_empty();
        if retry {
            ee.push(Extension::Unknown {
                typ: ExtensionType::EncryptedClientHello,
                body: retry_configs(&self.side.config).encode(),
            });
        }
        if early_accepted || retry {
            apply_extension_order(&mut ee, &self.side.config.extension_order, Extension::typ);
        }
        let ee = HandshakePayload::EncryptedExtensions(ee);
        transcript.add(
            HandshakeType::EncryptedExtensions,
            self.conn.send_handshake(&ee),
        );

        // Certificate-based authentication (§4.4.2, §4.4.3) unless a PSK authenticates us.
        let asked_client =
            scheme.is_some() && !matches!(self.side.config.client_auth, ClientAuth::None);
        if let Some((credential, scheme)) = credential {
            if asked_client {
                let cr = HandshakePayload::CertificateRequest(CertificateRequest {
                    context: Vec::new(),
                    extensions: Self::certificate_request_extensions(&self.side.config),
                });
                transcript.add(
                    HandshakeType::CertificateRequest,
                    self.conn.send_handshake(&cr),
                );
            }
            let compression = match ch.find(ExtensionType::CompressCertificate) {
                Some(Extension::CompressCertificate(algorithms)) => algorithms.as_slice(),
                _ => &[],
            };
            self.send_certificate(&mut transcript, credential, scheme, compression)?;
        }

        // Finished (§4.4.4), then the application keys for our side.
        let ev = &mut self.conn.ev;
        let fin = server_hs.verify_data(transcript.current_hash().as_ref(), ev);
        transcript.add(
            HandshakeType::Finished,
            self.conn.send_handshake(OutgoingMessage::Finished(&fin)),
        );
        let ev = &mut self.conn.ev;
        let master = hs.into_master(ev);
        let client_app = master.client_application_traffic_secret(&transcript, ev);
        let server_app = master.server_application_traffic_secret(&transcript, ev);
        // The exporter covers ClientHello..server Finished, like the traffic secrets (§7.1).
        let exporter = master.exporter_master_secret(&transcript, ev);
        self.conn
            .set_write_keys(Epoch::Application(0), &suite, &server_app)?;

        let negotiated = Negotiated {
            version: "TLSv1.3",
            suite: suite.suite,
            group: share.as_ref().map(|s| s.group),
            signature_scheme: scheme,
            client_signature_scheme: None,
            resumed: psk.is_some(),
            psk_identity: psk.as_ref().map(|(p, _)| p.index),
            early_data: if early_accepted {
                EarlyDataStatus::Accepted
            } else if offers_early {
                EarlyDataStatus::Rejected
            } else {
                EarlyDataStatus::NotSent
            },
            alpn: alpn.map(|a| String::from_utf8_lossy(&a).into_owned()),
            hello_retry,
        };
        let hs = Handshake {
            suite,
            transcript,
            master,
            client_hs,
            client_app,
            server_app,
            exporter,
            negotiated,
            pha_offered: ch.find(ExtensionType::PostHandshakeAuth).is_some(),
        };
        Ok(if early_accepted {
            let early_remaining = early_budget as usize;
            State::ExpectEndOfEarlyData(Box::new(ExpectEndOfEarlyData {
                hs,
                early_remaining,
            }))
        } else if asked_client {
            State::ExpectCertificate(Box::new(ExpectCertificate { hs }))
        } else {
            State::ExpectFinished(Box::new(ExpectFinished {
                hs,
                client_verified: None,
            }))
        })
    }

    /// Certificate and CertificateVerify (§4.4.2, §4.4.3) with credential number `credential`
    /// of [`ServerConfig::credentials`]. The Certificate goes out as a CompressedCertificate
    /// (RFC 8879 §4) in the first algorithm of our preference list that the client's
    /// compress_certificate (`client_compression`) lists, when that is smaller.
    fn send_certificate(
        &mut self,
        transcript: &mut Transcript,
        credential: usize,
        scheme: SignatureScheme,
        client_compression: &[CertificateCompressionAlgorithm],
    ) -> Result<(), Error> {
        let config = Arc::clone(&self.side.config);
        let ck = config
            .credentials()
            .nth(credential)
            .ok_or_else(|| Error::Config("credential chosen out of range".into()))?;
        // Sent from the configured chain as it is, without copying it into a message value.
        let cert = OutgoingMessage::Certificate {
            context: &[],
            chain: &ck.chain,
        };
        let compressed = if client_compression.is_empty() || config.cert_compression.is_empty() {
            None
        } else {
            // Compressed once per chain and algorithm (the cache), not per handshake.
            let body = cert.body_bytes();
            crate::certcomp::compress_for_peer(
                &config.cert_compression,
                client_compression,
                config.compressed_certificates.as_deref(),
                &body,
            )
            .map(|(algorithm, bytes)| (algorithm, body.len() as u32, bytes))
        };
        match &compressed {
            // The transcript holds the CompressedCertificate as sent (RFC 8879 §4).
            Some((algorithm, uncompressed_length, bytes)) => {
                let m = OutgoingMessage::CompressedCertificate {
                    algorithm: *algorithm,
                    uncompressed_length: *uncompressed_length,
                    compressed: bytes,
                };
                transcript.add(
                    HandshakeType::CompressedCertificate,
                    self.conn.send_handshake(m),
                );
            }
            None => transcript.add(HandshakeType::Certificate, self.conn.send_handshake(cert)),
        }
        let content = certificate_verify_message(true, transcript.current_hash().as_ref());
        let signature = ck.key.sign(scheme, &content, self.conn.rng.as_mut())?;
        let cv = HandshakePayload::CertificateVerify(CertificateVerify { scheme, signature });
        transcript.add(
            HandshakeType::CertificateVerify,
            self.conn.send_handshake(&cv),
        );
        Ok(())
    }

    /// Our CertificateRequest's extensions (§4.3.2): signature_algorithms, and
    /// compress_certificate when we decompress (RFC 8879 §3).
    fn certificate_request_extensions(config: &ServerConfig) -> Vec<Extension> {
        let mut exts = vec![Extension::SignatureAlgorithms(
            config.signature_schemes.clone(),
        )];
        if !config.cert_compression.is_empty() {
            exts.push(Extension::CompressCertificate(
                config.cert_compression.clone(),
            ));
        }
        exts
    }

    /// The client's Certificate, or its CompressedCertificate in an algorithm our
    /// CertificateRequest offered (RFC 8879 §4), with the type to add it to the transcript as.
    fn client_certificate(
        &self,
        msg: HandshakeMessage,
        expected: &'static str,
    ) -> Result<(CertificatePayload, HandshakeType, Vec<u8>), Error> {
        let typ = msg.typ();
        let c = match msg.payload {
            HandshakePayload::Certificate(c) => c,
            HandshakePayload::CompressedCertificate(ref cc) => crate::certcomp::certificate_from(
                cc,
                &self.side.config.cert_compression,
                self.side.config.max_handshake_message,
                expected,
            )?,
            _ => return Err(unexpected(expected, &msg)),
        };
        Ok((c, typ, msg.encoded))
    }

    fn early_skip_budget(&self) -> usize {
        (self.side.config.max_early_data as usize).max(crate::record::MAX_EARLY_SKIP)
    }

    /// Suite in server preference order (§4.1.1).
    fn choose_suite(&self, ch: &ClientHello) -> Result<SuiteParams, Error> {
        self.side
            .config
            .cipher_suites
            .iter()
            .filter(|s| ch.cipher_suites.contains(s))
            .find_map(|s| suite_params(*s))
            .ok_or(PeerMisbehaved::NoCommonCipherSuite.into())
    }

    /// The credential (its index in [`ServerConfig::credentials`]) and the scheme of its key to
    /// sign with: the first whose key signs a scheme we allow and the client offers (§4.2.3),
    /// preferring one whose chain is signed only with schemes the client accepts for
    /// certificates (signature_algorithms_cert, else signature_algorithms: §4.2.3); when no chain
    /// is, the first whose key fits anyway (§4.4.2.2 "SHOULD continue the handshake").
    fn choose_credential(&self, ch: &ClientHello) -> Result<(usize, SignatureScheme), Error> {
        let client_schemes = match ch.find(ExtensionType::SignatureAlgorithms) {
            Some(Extension::SignatureAlgorithms(s)) => s,
            _ => {
                return Err(
                    PeerMisbehaved::MissingExtension(ExtensionType::SignatureAlgorithms).into(),
                )
            }
        };
        let cert_schemes = match ch.find(ExtensionType::SignatureAlgorithmsCert) {
            Some(Extension::SignatureAlgorithmsCert(s)) => s,
            _ => client_schemes,
        };
        let config = &self.side.config;
        let mut fallback = None;
        for (i, ck) in config.credentials().enumerate() {
            let Some(scheme) = ck
                .key
                .schemes()
                .into_iter()
                .filter(|s| config.signature_schemes.contains(s))
                .find(|s| client_schemes.contains(s))
            else {
                continue;
            };
            if config.more_certs.is_empty() || cert::chain_signed_with(&ck.chain, cert_schemes) {
                return Ok((i, scheme));
            }
            fallback.get_or_insert((i, scheme));
        }
        fallback.ok_or(PeerMisbehaved::NoCommonSignatureScheme.into())
    }

    /// Pick the group (§4.2.7, §4.2.8) in server preference order, preferring one the client
    /// already sent a share for (that saves a round trip). `asked`: the group our
    /// HelloRetryRequest asked for.
    fn choose_share<'a>(
        &self,
        ch: &'a ClientHello,
        asked: Option<NamedGroup>,
    ) -> Result<ShareChoice<'a>, Error> {
        let shares = match ch.find(ExtensionType::KeyShare) {
            Some(Extension::KeyShareClient(s)) => s,
            Some(_) => return Err(PeerMisbehaved::IllegalExtension("key_share").into()),
            None => return Ok(ShareChoice::Missing),
        };
        // §9.2: key_share requires supported_groups.
        let client_groups = match ch.find(ExtensionType::SupportedGroups) {
            Some(Extension::SupportedGroups(g)) => g,
            _ => {
                return Err(PeerMisbehaved::MissingExtension(ExtensionType::SupportedGroups).into())
            }
        };
        // §4.2.8: each share's group must be offered, and appear once.
        for (i, s) in shares.iter().enumerate() {
            if !client_groups.contains(&s.group) {
                return Err(PeerMisbehaved::IllegalExtension("key_share group not offered").into());
            }
            if shares[..i].iter().any(|o| o.group == s.group) {
                return Err(PeerMisbehaved::IllegalExtension("duplicate key_share group").into());
            }
        }
        if let Some(group) = asked {
            // §4.1.4: exactly one share, for the group we asked for.
            return match shares.as_slice() {
                [s] if s.group == group => Ok(ShareChoice::Use(s)),
                _ => Err(PeerMisbehaved::SecondClientHelloMismatch("key_share").into()),
            };
        }
        let mutual = self
            .side
            .config
            .groups
            .iter()
            .copied()
            .filter(|g| client_groups.contains(g) && kx::is_supported(*g));
        let mut first = None;
        for g in mutual {
            if let Some(s) = shares.iter().find(|s| s.group == g) {
                if first.is_none() || !self.side.config.strict_group_preference {
                    return Ok(ShareChoice::Use(s));
                }
            }
            first.get_or_insert(g);
        }
        Ok(first.map_or(ShareChoice::NoCommon, ShareChoice::Retry))
    }

    /// The first offered PSK identity we can use (§4.2.11), without checking its binder yet.
    fn psk_candidate(
        &mut self,
        ch: &ClientHello,
        suite: &SuiteParams,
    ) -> Result<Option<PskCandidate>, Error> {
        let Some(Extension::PreSharedKeyClient(offer)) = ch.find(ExtensionType::PreSharedKey)
        else {
            return Ok(None);
        };
        // §4.2.9: a PSK offer without psk_key_exchange_modes is an error.
        if ch.find(ExtensionType::PskKeyExchangeModes).is_none() {
            return Err(
                PeerMisbehaved::MissingExtension(ExtensionType::PskKeyExchangeModes).into(),
            );
        }
        if offer.identities.len() != offer.binders.len() {
            return Err(PeerMisbehaved::IllegalExtension("pre_shared_key binders").into());
        }
        let now = self.conn.now_ms;
        for (i, (id, binder)) in offer.identities.iter().zip(&offer.binders).enumerate() {
            let Ok(index) = u16::try_from(i) else { break };
            if let Some(ext) = self
                .side
                .config
                .external_psks
                .iter()
                .find(|p| p.identity == id.identity)
            {
                if suite_params(ext.suite).map(|s| s.hash) == Some(suite.hash) {
                    return Ok(Some(PskCandidate {
                        index,
                        psk: ext.key.clone(),
                        binder: binder.clone(),
                        external: true,
                        state: None,
                        ticket: id.identity.clone(),
                        client_age_ms: 0,
                        max_early_data: 0,
                    }));
                }
                continue;
            }
            let sessions = &self.side.config.sessions;
            let state = match self.side.config.ticket_mode {
                TicketMode::Stateless => sessions.open(&id.identity),
                // Stateful tickets are single-use: taking one removes it (§8.1).
                TicketMode::Stateful => sessions.take(&id.identity),
            };
            let Some(state) = state else { continue };
            if !state.is_fresh(now) || suite_params(state.suite).map(|s| s.hash) != Some(suite.hash)
            {
                continue;
            }
            let client_age_ms = u64::from(id.obfuscated_ticket_age.wrapping_sub(state.age_add));
            return Ok(Some(PskCandidate {
                index,
                psk: state.psk.clone(),
                binder: binder.clone(),
                external: false,
                max_early_data: state.max_early_data,
                state: Some(state),
                ticket: id.identity.clone(),
                client_age_ms,
            }));
        }
        Ok(None)
    }

    /// psk_dhe_ke when both sides allow it and a key exchange is possible, else psk_ke (§4.2.9).
    fn psk_mode(&self, ch: &ClientHello, share: &ShareChoice) -> Option<PskKeyExchangeMode> {
        let offered = match ch.find(ExtensionType::PskKeyExchangeModes) {
            Some(Extension::PskKeyExchangeModes(m)) => m.clone(),
            _ => return None,
        };
        self.side.config.psk_modes.iter().copied().find(|m| {
            offered.contains(m)
                && match m {
                    PskKeyExchangeMode::PskDheKe => {
                        matches!(share, ShareChoice::Use(_) | ShareChoice::Retry(_))
                    }
                    _ => true,
                }
        })
    }

    /// Whether to accept 0-RTT with this PSK (§4.2.10, §8).
    fn accept_early(&self, p: &PskCandidate, suite: &SuiteParams, alpn: Option<&[u8]>) -> bool {
        let Some(state) = &p.state else { return false };
        if p.index != 0
            || self.side.config.max_early_data == 0
            || state.max_early_data == 0
            || state.suite != suite.suite
            || state.alpn.as_deref() != alpn
        {
            return false;
        }
        let now = self.conn.now_ms;
        let server_age = now.saturating_sub(state.issued_ms);
        let skew = server_age.abs_diff(p.client_age_ms);
        let sessions = &self.side.config.sessions;
        let expires = state.issued_ms + u64::from(state.lifetime) * 1000;
        match self.side.config.anti_replay {
            AntiReplay::Off => true,
            // A stateful ticket was removed from the cache when it was looked up, so it cannot
            // be used twice; only stateless tickets need remembering (§8.1).
            AntiReplay::SingleUse => {
                skew <= DEFAULT_AGE_WINDOW_MS
                    && (self.side.config.ticket_mode == TicketMode::Stateful
                        || sessions.first_use(&p.ticket, now, expires))
            }
            AntiReplay::Window { window_ms } => {
                skew <= window_ms && sessions.first_hello(&p.binder, now, window_ms)
            }
        }
    }

    /// ALPN (RFC 7301 §3.2): our first protocol the client offers.
    fn choose_alpn(&self, ch: &ClientHello) -> Result<Option<Vec<u8>>, Error> {
        if let Some(Extension::Alpn(offered)) =
            ch.find(ExtensionType::ApplicationLayerProtocolNegotiation)
        {
            if !self.side.config.alpn.is_empty() {
                return self
                    .side
                    .config
                    .alpn
                    .iter()
                    .find(|p| offered.contains(p))
                    .cloned()
                    .map(Some)
                    .ok_or(PeerMisbehaved::NoApplicationProtocol.into());
            }
        }
        Ok(None)
    }

    /// §4.1.4: ask for a share of `group`.
    fn send_hello_retry(
        &mut self,
        ch: ClientHello,
        encoded: &[u8],
        suite: SuiteParams,
        group: NamedGroup,
        ech: EchState,
    ) -> Result<State, Error> {
        let mut exts = vec![Extension::KeyShareHrr(group)];
        let cookie = self.side.config.hrr_cookie.map(|len| {
            let mut c = vec![0u8; len];
            self.conn.rng.fill(&mut c);
            c
        });
        if let Some(c) = &cookie {
            exts.push(Extension::Cookie(c.clone()));
        }
        exts.push(Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3));
        let accepted = matches!(ech, EchState::Accepted(_));
        // Asked to, a server with ECH keys that opened nothing sends eight random bytes (RFC 9849
        // §7.1), so the retry does not tell an observer that ECH was rejected (§10.10.4).
        let disguise = matches!(ech, EchState::Rejected)
            && self.side.config.ech_hrr_disguise
            && !self.side.config.ech_keys.is_empty();
        if accepted || disguise {
            // §7.2.1: eight bytes, zero while the confirmation is computed.
            let mut body = vec![0; 8];
            if disguise {
                self.conn.rng.fill(&mut body);
            }
            exts.push(Extension::Unknown {
                typ: ExtensionType::EncryptedClientHello,
                body,
            });
        }
        let mut hrr = ServerHello {
            legacy_version: 0x0303,
            random: HRR_RANDOM,
            legacy_session_id_echo: ch.legacy_session_id.clone(),
            cipher_suite: suite.suite,
            legacy_compression_method: 0,
            extensions: exts,
        };
        let mut transcript = Transcript::new();
        transcript
            .start_hash(suite.hash)
            .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
        transcript.add(HandshakeType::ClientHello, encoded);
        transcript
            .replace_with_message_hash()
            .map_err(|_| PeerMisbehaved::SecondHelloRetry)?;
        if let EchState::Accepted(acc) = &ech {
            // hrr_accept_confirmation over message_hash(ClientHelloInner1) and this HRR with
            // the extension's bytes zero (§7.2.1).
            let zeroed = HandshakeMessage::new(HandshakePayload::ServerHello(hrr.clone())).encoded;
            let th = transcript.hash_of_prefix_with(&zeroed);
            let c =
                self.conn
                    .ech_confirmation(suite.hash, &acc.inner_random, HRR_ACCEPT_LABEL, &th);
            if let Some(Extension::Unknown { body, .. }) = hrr.extensions.last_mut() {
                body.copy_from_slice(&c);
            }
        }
        let hrr = HandshakePayload::ServerHello(hrr);
        transcript.add(HandshakeType::ServerHello, self.conn.send_handshake(&hrr));
        let mut ccs_sent = false;
        if self.side.config.compat_mode && !ch.legacy_session_id.is_empty() {
            self.conn.send_ccs()?;
            ccs_sent = true;
        }
        Ok(State::ExpectSecondClientHello(Box::new(
            ExpectSecondClientHello {
                suite: suite.suite,
                group,
                cookie,
                transcript,
                first: ch,
                ccs_sent,
                ech,
            },
        )))
    }

    /// RFC 9849 §7.1 on the first ClientHello: find the candidate keys by config_id (all of
    /// them with trial decryption when none matches), skip those whose config does not offer
    /// the client's suite, and open the payload with the first that works. A payload no key
    /// opens is a rejection, not an error (it may be GREASE); once one opens, every later
    /// check is fatal. Returns the ClientHello to answer (ClientHelloInner when accepted).
    /// Without keys we are a server that does not implement ECH: the extension, whatever it
    /// holds, is ignored (RFC 8446 §4.2) and ClientHelloOuter answered — RFC 9849 §7's
    /// "rejecting ECH" with no retry_configs, which §7.1 asks only of a server with configs.
    fn open_ech(
        &mut self,
        outer: ClientHello,
        encoded: Vec<u8>,
    ) -> Result<(ClientHello, Vec<u8>, EchState), Error> {
        // What is reported (the outer server_name, a keyless server's view of the offer) is
        // worked out only for a recorder.
        let observed = self.conn.ev.active();
        let outer_sni = if observed { outer.host_name() } else { None };
        let Some(e) = outer.find(ExtensionType::EncryptedClientHello) else {
            self.ech_event(EchStatus::NotOffered, None, outer_sni, None);
            return Ok((outer, encoded, EchState::NotOffered));
        };
        if self.side.config.ech_keys.is_empty() {
            // Reported as what it was, when it parses as an outer ECHClientHello.
            let offer = if observed { ech_offer(e).ok() } else { None };
            if let Some((suite, config_id, enc, payload)) = &offer {
                self.ech_parts(&outer, *suite, *config_id, enc, payload, None);
            }
            let ids = offer.map(|(suite, config_id, ..)| (suite, config_id));
            self.ech_event(EchStatus::Rejected, ids, outer_sni, None);
            return Ok((outer, encoded, EchState::Rejected));
        }
        let (suite, config_id, enc, payload) = ech_offer(e)?;
        let config = Arc::clone(&self.side.config);
        let body = encoded.get(4..).unwrap_or_default();
        let aad = inner::aad(body).map_err(ech_error)?;
        let id_of = |k: &&crate::crypto::ech::EchKeyPair| {
            k.config.contents().map(|c| c.key_config.config_id)
        };
        let mut candidates: Vec<_> = config
            .ech_keys
            .iter()
            .filter(|k| id_of(k) == Some(config_id))
            .collect();
        if candidates.is_empty() && config.ech_trial_decrypt {
            candidates = config.ech_keys.iter().collect();
        }
        let watch = self.conn.observes_hpke();
        for key in candidates {
            // §7.1: a config of another version, or without the client's suite, is skipped.
            let Some(c) = key.config.contents() else {
                continue;
            };
            if !c.key_config.cipher_suites.contains(&suite) {
                continue;
            }
            let Ok(hsuite) =
                hpke::Suite::from_ids(c.key_config.kem_id, suite.kdf_id, suite.aead_id)
            else {
                continue;
            };
            let info = crate::ech::hpke_info(&key.config.raw);
            let mut steps: Vec<HpkeStep> = Vec::new();
            let mut none = NoSink;
            let sink: &mut dyn hpke::HpkeSink = if watch { &mut steps } else { &mut none };
            let Ok(mut ctx) = hpke::setup_base_r(hsuite, &enc, &key.key, &info, sink) else {
                continue;
            };
            let Ok(encoded_inner) = ctx.open(&aad, &payload) else {
                continue;
            };
            let (inner, inner_bytes) = self.inner_hello(&encoded_inner, body)?;
            let opened = (encoded_inner.as_slice(), inner_bytes.as_slice());
            self.ech_parts(&outer, suite, config_id, &enc, &payload, Some(opened));
            self.conn.ech_hpke(steps, &outer.random, &key.config.raw);
            let inner_sni = inner.host_name();
            self.ech_event(
                EchStatus::Accepted,
                Some((suite, config_id)),
                outer_sni,
                inner_sni,
            );
            let acc = EchAccepted {
                ctx,
                suite,
                config_id,
                inner_random: inner.random,
            };
            return Ok((inner, inner_bytes, EchState::Accepted(Box::new(acc))));
        }
        self.ech_parts(&outer, suite, config_id, &enc, &payload, None);
        self.ech_event(
            EchStatus::Rejected,
            Some((suite, config_id)),
            outer_sni,
            None,
        );
        Ok((outer, encoded, EchState::Rejected))
    }

    /// RFC 9849 §7.1.1: after a HelloRetryRequest that accepted ECH, the second
    /// ClientHelloOuter must carry ECH (missing_extension) with the same suite and config_id
    /// and an empty enc (illegal_parameter), and its payload must open with the first
    /// context (decrypt_error).
    fn open_second_ech(
        &mut self,
        mut acc: Box<EchAccepted>,
        outer: ClientHello,
        encoded: Vec<u8>,
    ) -> Result<(ClientHello, Vec<u8>, EchState), Error> {
        let Some(e) = outer.find(ExtensionType::EncryptedClientHello) else {
            return Err(ech_error(EchError::MissingAfterRetry));
        };
        let (suite, config_id, enc, payload) = ech_offer(e)?;
        if suite != acc.suite || config_id != acc.config_id {
            return Err(ech_error(EchError::Illegal(
                "the second ClientHelloOuter changed the ECH cipher suite or config_id",
            )));
        }
        if !enc.is_empty() {
            return Err(ech_error(EchError::Illegal(
                "the second ClientHelloOuter's ECH enc is not empty",
            )));
        }
        let body = encoded.get(4..).unwrap_or_default();
        let aad = inner::aad(body).map_err(ech_error)?;
        let encoded_inner = acc
            .ctx
            .open(&aad, &payload)
            .map_err(|_| ech_error(EchError::DecryptFailed))?;
        let (inner, inner_bytes) = self.inner_hello(&encoded_inner, body)?;
        let opened = (encoded_inner.as_slice(), inner_bytes.as_slice());
        self.ech_parts(&outer, suite, config_id, &enc, &payload, Some(opened));
        acc.inner_random = inner.random;
        Ok((inner, inner_bytes, EchState::Accepted(acc)))
    }

    /// ClientHelloInner from an opened EncodedClientHelloInner (§5.1), as a whole message,
    /// with the §7.1 checks: a well-formed inner-type `encrypted_client_hello` (its type byte
    /// and nothing else), and TLS 1.3 only. `ech_outer_extensions`, which "MUST NOT appear
    /// in ... ClientHelloInner" (§5.1), cannot be left in it: `inner::decode` replaces the
    /// one it expands and refuses a second and a reference to one in ClientHelloOuter.
    fn inner_hello(
        &mut self,
        encoded_inner: &[u8],
        outer_body: &[u8],
    ) -> Result<(ClientHello, Vec<u8>), Error> {
        let bytes = inner::decode_message(encoded_inner, outer_body).map_err(ech_error)?;
        let msg = HandshakeMessage::decode(&bytes, DecodeContext { hash_len: 32 })?;
        if self.conn.observe().handshake {
            let layout = self.conn.observe().layouts.then(|| msg.layout());
            self.conn.ev.push(Event::InnerClientHello(HandshakeEvent {
                direction: self.conn.side.receiving(),
                epoch: Epoch::Plaintext,
                typ: HandshakeType::ClientHello,
                bytes: bytes.clone(),
                layout,
            }));
        }
        let HandshakePayload::ClientHello(ch) = msg.payload else {
            return Err(ech_error(EchError::Illegal(
                "ClientHelloInner is not a ClientHello",
            )));
        };
        match ch.find(ExtensionType::EncryptedClientHello) {
            Some(Extension::Unknown { body, .. }) if body.as_slice() == [1] => {}
            _ => {
                return Err(ech_error(EchError::Illegal(
                    "ClientHelloInner lacks a well-formed inner-type encrypted_client_hello",
                )))
            }
        }
        let tls13_only = match ch.find(ExtensionType::SupportedVersions) {
            Some(Extension::SupportedVersionsClient(v)) => v.iter().all(|v| v.to_repr() > 0x0303),
            _ => false,
        };
        if !tls13_only {
            return Err(ech_error(EchError::Illegal(
                "ClientHelloInner offers TLS 1.2 or below",
            )));
        }
        Ok((ch, bytes))
    }

    /// Reports [`Event::EchParts`] for the extension of ClientHelloOuter `outer`: its outer
    /// parts as received, and, when a key opened it, the EncodedClientHelloInner and the
    /// ClientHelloInner message rebuilt from it. `saved` is what the rebuilt hello has beyond
    /// the encoded one's ClientHello and the legacy_session_id copied back in (§5.1).
    fn ech_parts(
        &mut self,
        outer: &ClientHello,
        suite: HpkeSymmetricCipherSuite,
        config_id: u8,
        enc: &[u8],
        payload: &[u8],
        opened: Option<(&[u8], &[u8])>,
    ) {
        if !self.conn.observe().handshake {
            return;
        }
        let session_id = outer.legacy_session_id.len();
        let inner = opened.and_then(|(encoded, inner)| {
            // decode() accepted it already, so this parse succeeds; if not, say nothing.
            let (end, refs) = inner::encoded_parts(encoded).ok()?;
            Some(EchInnerParts {
                encoded_inner_len: encoded.len(),
                padding: encoded.len() - end,
                inner_len: inner.len(),
                session_id,
                saved: inner.len().saturating_sub(4 + end + session_id),
                outer_extensions: refs.into_iter().map(ExtensionType::from).collect(),
            })
        });
        self.conn.ev.push(Event::EchParts(EchParts::new(
            suite,
            config_id,
            enc.len(),
            payload.len(),
            inner,
        )));
    }

    /// The ECH outcome (RFC 9849 §7.1), once the first ClientHello decided it.
    fn ech_event(
        &mut self,
        status: EchStatus,
        offer: Option<(HpkeSymmetricCipherSuite, u8)>,
        outer_sni: Option<String>,
        inner_sni: Option<String>,
    ) {
        self.side.ech = Some(status);
        if !self.conn.ev.active() {
            return;
        }
        let retry_configs_sent =
            status == EchStatus::Rejected && !self.side.config.ech_keys.is_empty();
        self.conn.ev.push(Event::Ech(EchEvent {
            status,
            config_id: offer.map(|(_, id)| id),
            kdf: offer.map(|(s, _)| s.kdf_id),
            aead: offer.map(|(s, _)| s.aead_id),
            outer_sni,
            inner_sni,
            retry_configs_sent,
        }));
    }

    /// Our EncryptedExtensions (§4.3.1), for a handshake that used `used_group` (none: psk_ke).
    fn encrypted_extensions(
        &mut self,
        ch: &ClientHello,
        alpn: Option<&[u8]>,
        used_group: Option<NamedGroup>,
    ) -> Result<Vec<Extension>, Error> {
        let cfg = &self.side.config;
        let mut exts = Vec::new();
        if cfg.ack_server_name && ch.find(ExtensionType::ServerName).is_some() {
            exts.push(Extension::ServerNameAck);
        }
        if let Some(p) = alpn {
            exts.push(Extension::Alpn(vec![p.to_vec()]));
        }
        let requested = ch.find(ExtensionType::SupportedGroups).is_some();
        if cfg
            .send_supported_groups
            .sends(requested, used_group, cfg.groups.first().copied())
        {
            exts.push(Extension::SupportedGroups(cfg.groups.clone()));
        }
        if let (Some(Extension::RecordSizeLimit(theirs)), Some(ours)) = (
            ch.find(ExtensionType::RecordSizeLimit),
            cfg.record_size_limit,
        ) {
            if *theirs < 64 {
                return Err(PeerMisbehaved::BadRecordSizeLimit.into());
            }
            self.conn.max_fragment = (*theirs as usize - 1).min(crate::record::MAX_PLAINTEXT);
            self.conn.recv_limit = Some(usize::from(ours));
            exts.push(Extension::RecordSizeLimit(ours));
        }
        apply_extension_order(&mut exts, &cfg.extension_order, Extension::typ);
        Ok(exts)
    }

    fn on_certificate(
        &mut self,
        st: Box<ExpectCertificate>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        // Owned: the client's certificates move out of the message, not copied.
        let (c, typ, encoded) = self.client_certificate(msg, "Certificate")?;
        if !c.context.is_empty() {
            return Err(PeerMisbehaved::IllegalExtension("certificate_request_context").into());
        }
        let ExpectCertificate { mut hs } = *st;
        hs.transcript.add(typ, &encoded);
        let mut chain: Vec<Vec<u8>> = c.entries.into_iter().map(|e| e.cert_data).collect();
        if chain.is_empty() {
            // §4.4.2.4: no certificate — fatal only if we require one.
            if self.side.config.client_auth.requires_certificate() {
                return Err(PeerMisbehaved::NoClientCertificate.into());
            }
            return Ok(State::ExpectFinished(Box::new(ExpectFinished {
                hs,
                client_verified: None,
            })));
        }
        let Some(roots) = self.side.config.client_auth.roots() else {
            // Not reached: this state follows our CertificateRequest, which the (immutable)
            // configuration asked for.
            return Err(PeerMisbehaved::UnexpectedMessage {
                expected: "Finished",
                got: HandshakeType::Certificate,
            }
            .into());
        };
        self.verify_client_chain(&chain, roots)?;
        // The chain is not empty (above). Its end-entity certificate is all CertificateVerify
        // needs (§4.4.3); the rest has served.
        let leaf = ClientCertificate(chain.swap_remove(0));
        Ok(State::ExpectCertificateVerify(Box::new(
            ExpectCertificateVerify { hs, leaf },
        )))
    }

    fn on_certificate_verify(
        &mut self,
        st: Box<ExpectCertificateVerify>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::CertificateVerify(cv) = &msg.payload else {
            return Err(unexpected("CertificateVerify", &msg));
        };
        let ExpectCertificateVerify { mut hs, leaf } = *st;
        let verified = self.check_client_certificate_verify(&hs.transcript, &leaf, cv)?;
        hs.transcript
            .add(HandshakeType::CertificateVerify, &msg.encoded);
        Ok(State::ExpectFinished(Box::new(ExpectFinished {
            hs,
            client_verified: Some(verified),
        })))
    }

    /// The client's chain against `roots` (§4.4.2.4), in the handshake or after it. `None`:
    /// the configuration asked by name to accept any chain (`ClientAuth::InsecureAcceptAny`;
    /// its CertificateVerify is still checked). An empty list of roots validates nothing.
    fn verify_client_chain(
        &self,
        chain: &[Vec<u8>],
        roots: Option<&[Vec<u8>]>,
    ) -> Result<(), Error> {
        let Some(roots) = roots else {
            return Ok(());
        };
        let now = self
            .side
            .config
            .fixed_validation_time_ms
            .unwrap_or(self.conn.now_ms);
        cert::verify_chain(
            chain,
            roots,
            None,
            now / 1000,
            Usage::Client,
            self.side.config.signature_memo.as_deref(),
        )?;
        Ok(())
    }

    /// §4.4.3: the client's CertificateVerify, in a scheme we offered, signed by its end-entity
    /// certificate's key over the transcript so far with the client's context string.
    fn check_client_certificate_verify(
        &self,
        transcript: &Transcript,
        leaf: &ClientCertificate,
        cv: &CertificateVerify,
    ) -> Result<ClientVerified, Error> {
        if !self.side.config.signature_schemes.contains(&cv.scheme) {
            return Err(PeerMisbehaved::UnofferedSignatureScheme.into());
        }
        let content = certificate_verify_message(false, transcript.current_hash().as_ref());
        cert::verify_with_leaf(&leaf.0, cv.scheme, &content, &cv.signature).map_err(
            |e| match e {
                SigError::BadSignature => Error::Peer(PeerMisbehaved::BadCertificateVerify),
                other => Error::Signature(other),
            },
        )?;
        Ok(ClientVerified { scheme: cv.scheme })
    }

    fn on_finished(
        &mut self,
        st: Box<ExpectFinished>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::Finished(verify_data) = &msg.payload else {
            return Err(unexpected("Finished", &msg));
        };
        let ExpectFinished {
            mut hs,
            client_verified,
        } = *st;
        let ev = &mut self.conn.ev;
        // verify_data is computed inline (an `Output`); compared as bytes, in constant time.
        let expected: &[u8] = &hs
            .client_hs
            .verify_data(hs.transcript.current_hash().as_ref(), ev);
        check_verify_data(expected, verify_data)?;
        hs.transcript.add(HandshakeType::Finished, &msg.encoded);
        self.early_skip = None;
        self.conn
            .set_read_keys(Epoch::Application(0), &hs.suite, &hs.client_app)?;
        self.conn.ccs_allowed = false;
        let ev = &mut self.conn.ev;
        let exporter = hs.exporter;
        let resumption = hs.master.resumption_master_secret(&hs.transcript, ev);
        self.conn.log_secret(exporter.name(), exporter.as_bytes());
        hs.negotiated.client_signature_scheme = client_verified.map(|v| v.scheme);
        self.negotiated = Some(hs.negotiated.clone());
        self.conn.ev.push(Event::Connected(hs.negotiated));
        let traffic = Traffic {
            suite: hs.suite,
            client_app: hs.client_app,
            server_app: hs.server_app,
            exporter,
            resumption,
            key_updates_in_a_row: 0,
        };
        // §4.6.1: tickets go out once the client's Finished is verified — unless the
        // application already sent close_notify (possible when it answered 0-RTT data before
        // the Finished): nothing may follow that alert (§6.1).
        let tickets = if self.conn.write_closed {
            0
        } else {
            self.side.config.tickets
        };
        for _ in 0..tickets {
            self.issue_ticket(&traffic)?;
        }
        let may_ask = !matches!(self.side.config.post_handshake_auth, ClientAuth::None);
        let pha = (hs.pha_offered && may_ask).then(|| {
            Box::new(PostHandshakeAuth {
                handshake: hs.transcript,
                pending: Vec::new(),
                answer: None,
            })
        });
        Ok(State::Connected(Box::new(Connected { traffic, pha })))
    }

    /// §4.2.10: EndOfEarlyData ends 0-RTT; the client's handshake keys take over, on a record
    /// boundary.
    fn on_end_of_early_data(
        &mut self,
        st: Box<ExpectEndOfEarlyData>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::EndOfEarlyData = &msg.payload else {
            return Err(unexpected("EndOfEarlyData", &msg));
        };
        let ExpectEndOfEarlyData { mut hs, .. } = *st;
        hs.transcript
            .add(HandshakeType::EndOfEarlyData, &msg.encoded);
        self.conn
            .set_read_keys(Epoch::Handshake, &hs.suite, &hs.client_hs)?;
        Ok(State::ExpectFinished(Box::new(ExpectFinished {
            hs,
            client_verified: None,
        })))
    }

    /// Send one NewSessionTicket (§4.6.1). Draws age_add, then the ticket (stateful: random
    /// identifier; stateless: sealing nonce) from the injected source.
    fn issue_ticket(&mut self, t: &Traffic) -> Result<(), Error> {
        let cfg = self.side.config.clone();
        let age_add = u32::from_be_bytes(self.conn.random::<4>());
        // A per-connection counter keeps nonces unique (§4.6.1); RFC 8448 uses two bytes.
        let nonce = self.side.tickets_sent.to_be_bytes().to_vec();
        self.side.tickets_sent = self.side.tickets_sent.wrapping_add(1);
        let psk = t.resumption.psk(&nonce, &mut self.conn.ev);
        let now = self.conn.now_ms;
        let state = ResumptionState {
            suite: t.suite.suite,
            psk: psk.as_ref().to_vec(),
            age_add,
            issued_ms: now,
            lifetime: cfg.ticket_lifetime.min(604_800),
            max_early_data: cfg.max_early_data,
            alpn: self
                .negotiated
                .as_ref()
                .and_then(|n| n.alpn.as_ref().map(|a| a.as_bytes().to_vec())),
        };
        let ticket = match cfg.ticket_mode {
            TicketMode::Stateless => cfg.sessions.seal(&state, self.conn.rng.as_mut(), now),
            TicketMode::Stateful => {
                let mut id = vec![0u8; cfg.stateful_ticket_len.max(1)];
                self.conn.rng.fill(&mut id);
                cfg.sessions.store(id.clone(), state, now);
                id
            }
        };
        let mut extensions = Vec::new();
        if cfg.max_early_data > 0 {
            extensions.push(Extension::EarlyDataMax(cfg.max_early_data));
        }
        self.conn
            .send_handshake(&HandshakePayload::NewSessionTicket(NewSessionTicket {
                lifetime: cfg.ticket_lifetime.min(604_800),
                age_add,
                nonce,
                ticket,
                extensions,
            }));
        self.conn.ev.push(Event::Ticket {
            direction: self.conn.side.sending(),
            lifetime: cfg.ticket_lifetime,
            max_early_data: (cfg.max_early_data > 0).then_some(cfg.max_early_data),
        });
        Ok(())
    }

    /// Send another NewSessionTicket now (§4.6.1: "at any time after" the client's Finished).
    pub fn send_ticket(&mut self) -> Result<(), Error> {
        // The connected state lends its secrets; it is put back whatever happens.
        let state = core::mem::replace(&mut self.side.state, State::Poisoned);
        let sent = match &state {
            State::Connected(c) => self.issue_ticket(&c.traffic),
            _ => Err(Error::InvalidState("handshake not complete")),
        };
        self.side.state = state;
        sent
    }

    /// Ask for the client's certificate now (post-handshake authentication, RFC 8446 §4.6.2):
    /// queues a CertificateRequest with our signature_algorithms and `context` as its
    /// certificate_request_context, or 16 bytes from the injected random source when `None`.
    /// Returns the context, which the [`Event::PostHandshakeAuth`] reporting the verified
    /// answer carries. Several requests may be outstanding; each context must be unique, and
    /// non-empty (§4.3.2: the empty context is the handshake's).
    ///
    /// Needs a connected server configured to ask
    /// ([`ServerConfig::post_handshake_auth`](crate::ServerConfig::post_handshake_auth)) and a
    /// client that offered post_handshake_auth (§4.2.6: "Servers MUST NOT send a
    /// post-handshake CertificateRequest to clients which do not offer this extension").
    pub fn request_client_certificate(&mut self, context: Option<&[u8]>) -> Result<Vec<u8>, Error> {
        if self.conn.failed || self.conn.write_closed {
            return Err(Error::Closed);
        }
        if !self.is_connected() {
            return Err(Error::InvalidState("handshake not complete"));
        }
        if matches!(self.side.config.post_handshake_auth, ClientAuth::None) {
            return Err(Error::InvalidState(
                "post-handshake authentication is not configured (ServerConfig::post_handshake_auth)",
            ));
        }
        let pha = match &mut self.side.state {
            State::Connected(c) => c.pha.as_deref_mut(),
            _ => None,
        };
        let Some(pha) = pha else {
            return Err(Error::InvalidState(
                "the client did not offer post_handshake_auth",
            ));
        };
        let context = match context {
            Some(c) => c.to_vec(),
            None => self.conn.random::<16>().to_vec(),
        };
        if context.is_empty() || context.len() > 255 {
            return Err(Error::InvalidState(
                "certificate_request_context must be 1 to 255 bytes after the handshake",
            ));
        }
        if pha.pending.iter().any(|p| p.context == context)
            || pha.answer.as_ref().is_some_and(|a| a.context == context)
        {
            return Err(Error::InvalidState(
                "certificate_request_context already used by an outstanding request",
            ));
        }
        let cr = HandshakePayload::CertificateRequest(CertificateRequest {
            context: context.clone(),
            extensions: Self::certificate_request_extensions(&self.side.config),
        });
        let mut transcript = pha.handshake.clone();
        transcript.add(
            HandshakeType::CertificateRequest,
            self.conn.send_handshake(&cr),
        );
        pha.pending.push(PendingRequest {
            context: context.clone(),
            transcript,
        });
        Ok(context)
    }

    fn on_post_handshake(
        &mut self,
        mut c: Box<Connected>,
        msg: HandshakeMessage,
    ) -> Result<Box<Connected>, Error> {
        let Connected { traffic, pha } = &mut *c;
        match pha.as_deref_mut() {
            // Nothing can be asked: Certificate, CertificateVerify or Finished is unsolicited.
            None => match &msg.payload {
                HandshakePayload::KeyUpdate(req) => {
                    receive_key_update(&mut self.conn, traffic, *req)?;
                }
                _ => return Err(unexpected("KeyUpdate", &msg)),
            },
            Some(pha) => match pha.answer.take() {
                None => self.on_post_handshake_idle(pha, traffic, msg)?,
                Some(answer) => {
                    pha.answer = self.on_post_handshake_answer(answer, traffic, msg)?;
                }
            },
        }
        Ok(c)
    }

    /// Between answers: a KeyUpdate, or the Certificate that starts the answer to one of our
    /// outstanding requests.
    fn on_post_handshake_idle(
        &mut self,
        pha: &mut PostHandshakeAuth,
        traffic: &mut Traffic,
        msg: HandshakeMessage,
    ) -> Result<(), Error> {
        if !matches!(
            msg.payload,
            HandshakePayload::Certificate(_) | HandshakePayload::CompressedCertificate(_)
        ) {
            if let HandshakePayload::KeyUpdate(req) = &msg.payload {
                return receive_key_update(&mut self.conn, traffic, *req);
            }
            let expected = if pha.pending.is_empty() {
                "KeyUpdate"
            } else {
                "KeyUpdate or Certificate"
            };
            return Err(unexpected(expected, &msg));
        }
        if pha.pending.is_empty() {
            return Err(PeerMisbehaved::UnexpectedMessage {
                expected: "KeyUpdate",
                got: msg.typ(),
            }
            .into());
        }
        let (c, typ, encoded) = self.client_certificate(msg, "KeyUpdate or Certificate")?;
        // §4.4.2: the context echoes the request answered; one we never sent, or one already
        // answered, is not a request of ours.
        let Some(i) = pha.pending.iter().position(|p| p.context == c.context) else {
            return Err(PeerMisbehaved::IllegalExtension("certificate_request_context").into());
        };
        let PendingRequest {
            context,
            mut transcript,
        } = pha.pending.remove(i);
        transcript.add(typ, &encoded);
        let mut chain: Vec<Vec<u8>> = c.entries.into_iter().map(|e| e.cert_data).collect();
        let certificates = chain.len();
        let step = if chain.is_empty() {
            // §4.4.2.4: no certificate — fatal only if we require one.
            if self.side.config.post_handshake_auth.requires_certificate() {
                return Err(PeerMisbehaved::NoClientCertificate.into());
            }
            PhaStep::ExpectFinished(None)
        } else {
            let Some(roots) = self.side.config.post_handshake_auth.roots() else {
                return Err(Error::InvalidState("post-handshake authentication off"));
            };
            self.verify_client_chain(&chain, roots)?;
            PhaStep::ExpectCertificateVerify(ClientCertificate(chain.swap_remove(0)))
        };
        pha.answer = Some(PhaAnswer {
            context,
            transcript,
            certificates,
            step,
        });
        Ok(())
    }

    /// The rest of one answer: CertificateVerify (after a non-empty Certificate), then
    /// Finished, keyed from client_application_traffic_secret_N (§4.4.4). `None`: the answer
    /// is complete and reported.
    fn on_post_handshake_answer(
        &mut self,
        mut answer: PhaAnswer,
        t: &Traffic,
        msg: HandshakeMessage,
    ) -> Result<Option<PhaAnswer>, Error> {
        match answer.step {
            PhaStep::ExpectCertificateVerify(leaf) => {
                let HandshakePayload::CertificateVerify(cv) = &msg.payload else {
                    return Err(unexpected("CertificateVerify", &msg));
                };
                let scheme = self.check_client_certificate_verify(&answer.transcript, &leaf, cv)?;
                answer
                    .transcript
                    .add(HandshakeType::CertificateVerify, &msg.encoded);
                answer.step = PhaStep::ExpectFinished(Some(scheme));
                Ok(Some(answer))
            }
            PhaStep::ExpectFinished(verified) => {
                let HandshakePayload::Finished(verify_data) = &msg.payload else {
                    return Err(unexpected("Finished", &msg));
                };
                let expected = t
                    .client_app
                    .verify_data_for(&answer.transcript, &mut self.conn.ev);
                check_verify_data(&expected, verify_data)?;
                self.conn.ev.push(Event::PostHandshakeAuth {
                    direction: self.conn.side.receiving(),
                    context: answer.context,
                    certificates: answer.certificates,
                    scheme: verified.map(|v| v.scheme),
                });
                Ok(None)
            }
        }
    }
}

/// The outer `encrypted_client_hello` of a ClientHello (RFC 9849 §5): suite, config_id, enc,
/// payload. An inner-type one from the network and an unknown ECHClientHelloType are
/// illegal_parameter (§7); one that does not parse is decode_error. Fatal only to a server
/// with ECH keys: one without reports what parsed and ignores the rest (`open_ech`).
fn ech_offer(e: &Extension) -> Result<(HpkeSymmetricCipherSuite, u8, Vec<u8>, Vec<u8>), Error> {
    let Extension::Unknown { body, .. } = e else {
        return Err(DecodeError::Invalid {
            what: "encrypted_client_hello",
        }
        .into());
    };
    match body.first() {
        Some(0) => {}
        Some(1) => {
            return Err(ech_error(EchError::Illegal(
                "an inner-type encrypted_client_hello from the network",
            )))
        }
        Some(_) => return Err(ech_error(EchError::Illegal("unknown ECHClientHelloType"))),
        None => {
            return Err(DecodeError::Invalid {
                what: "encrypted_client_hello",
            }
            .into())
        }
    }
    match EchClientHello::decode(body)? {
        EchClientHello::Outer {
            suite,
            config_id,
            enc,
            payload,
        } => Ok((suite, config_id, enc, payload)),
        EchClientHello::Inner => Err(ech_error(EchError::Illegal(
            "an inner-type encrypted_client_hello from the network",
        ))),
    }
}

/// The ECHConfigList of every key: our retry_configs (RFC 9849 §7.1).
fn retry_configs(config: &ServerConfig) -> EchConfigList {
    EchConfigList {
        configs: config.ech_keys.iter().map(|k| k.config.clone()).collect(),
    }
}

fn ech_error(e: EchError) -> Error {
    Error::Peer(PeerMisbehaved::Ech(e))
}

/// §4.1.2: the second ClientHello repeats the first "without modification, except": the
/// key_share replaced by one share of the group asked for (checked by `choose_share`),
/// early_data removed, the cookie added, pre_shared_key updated (new ages and binders, PSKs of
/// another hash dropped), and the padding extension added, removed or resized. Everything else
/// — every other field, every other extension byte for byte, and their order — must match.
fn check_second_hello(ch: &ClientHello, r: &ExpectSecondClientHello) -> Result<(), Error> {
    let first = &r.first;
    let mismatch = |what| Err(PeerMisbehaved::SecondClientHelloMismatch(what).into());
    if first.random != ch.random {
        return mismatch("random");
    }
    if first.legacy_session_id != ch.legacy_session_id {
        return mismatch("legacy_session_id");
    }
    if first.legacy_version != ch.legacy_version {
        return mismatch("legacy_version");
    }
    if first.cipher_suites != ch.cipher_suites {
        return mismatch("cipher_suites");
    }
    if first.legacy_compression_methods != ch.legacy_compression_methods {
        return mismatch("legacy_compression_methods");
    }
    let cookie = ch.extensions.iter().find_map(|e| match e {
        Extension::Cookie(c) => Some(c),
        _ => None,
    });
    if r.cookie.as_ref() != cookie {
        return mismatch("cookie");
    }
    if ch.find(ExtensionType::EarlyData).is_some() {
        return mismatch("early_data");
    }
    // The rest of the block, with what may come and go set aside on both sides.
    let comparable = |e: &&Extension| {
        !matches!(
            e.typ(),
            ExtensionType::Padding | ExtensionType::EarlyData | ExtensionType::Cookie
        )
    };
    let psk_dropped = first.find(ExtensionType::PreSharedKey).is_some()
        && ch.find(ExtensionType::PreSharedKey).is_none();
    let mut before = first
        .extensions
        .iter()
        .filter(comparable)
        .filter(|e| !(psk_dropped && e.typ() == ExtensionType::PreSharedKey));
    let mut after = ch.extensions.iter().filter(comparable);
    loop {
        match (before.next(), after.next()) {
            (None, None) => return Ok(()),
            (Some(a), Some(b)) if a.typ() == b.typ() => {
                // ECH: the second ClientHelloOuter carries a new payload and an empty enc
                // (RFC 9849 §6.1.5); §7.1.1 checks what must stay.
                let may_change = matches!(
                    a.typ(),
                    ExtensionType::KeyShare
                        | ExtensionType::PreSharedKey
                        | ExtensionType::EncryptedClientHello
                );
                if !may_change && a != b {
                    return mismatch(a.typ().name());
                }
            }
            // One added, removed or moved.
            _ => return mismatch("extensions"),
        }
    }
}

/// §4.1.2 checks every ClientHello must pass before we look at its offers.
fn check_client_hello(ch: &ClientHello) -> Result<(), Error> {
    let versions = match ch.find(ExtensionType::SupportedVersions) {
        Some(Extension::SupportedVersionsClient(v)) if v.contains(&ProtocolVersion::TLSv1_3) => v,
        Some(Extension::SupportedVersionsClient(_)) | None => {
            return Err(PeerMisbehaved::UnsupportedVersion.into())
        }
        Some(_) => return Err(PeerMisbehaved::IllegalExtension("supported_versions").into()),
    };
    // §D.5: "Any endpoint receiving a Hello message with ClientHello.legacy_version ... set to
    // 0x0300 MUST abort the handshake with a "protocol_version" alert"; a TLS 1.3 client sets
    // 0x0303 (§4.1.2), and a value below it is an older version's hello: protocol_version too.
    if ch.legacy_version < 0x0303 {
        return Err(PeerMisbehaved::LegacyVersionTooLow(ch.legacy_version).into());
    }
    if ch.legacy_version != 0x0303 {
        return Err(PeerMisbehaved::BadLegacyField("legacy_version").into());
    }
    if ch.legacy_compression_methods != [0] {
        return Err(PeerMisbehaved::BadLegacyField("legacy_compression_methods").into());
    }
    // §4.2.7: obsolete groups "MUST NOT be offered ... by TLS 1.3 implementations". A client
    // that also offers TLS 1.2 may list them for TLS 1.2; one offering only TLS 1.3 (GREASE
    // and draft versions aside) must not.
    let offers_older = versions
        .iter()
        .any(|v| (0x0300..0x0304).contains(&v.to_repr()));
    if !offers_older {
        let groups = match ch.find(ExtensionType::SupportedGroups) {
            Some(Extension::SupportedGroups(g)) => g.as_slice(),
            _ => &[],
        };
        let shares = match ch.find(ExtensionType::KeyShare) {
            Some(Extension::KeyShareClient(s)) => s.as_slice(),
            _ => &[],
        };
        let offered = groups.iter().copied().chain(shares.iter().map(|s| s.group));
        if let Some(g) = offered.into_iter().find(|g| g.is_obsolete()) {
            return Err(PeerMisbehaved::ObsoleteGroup(g).into());
        }
    }
    // §4.2.11: pre_shared_key must be the last extension.
    if let Some(pos) = ch
        .extensions
        .iter()
        .position(|e| e.typ() == ExtensionType::PreSharedKey)
    {
        if pos + 1 != ch.extensions.len() {
            return Err(PeerMisbehaved::PskNotLast.into());
        }
    }
    Ok(())
}

/// A message that is not a ClientHello by RFC 8446's grammar, where one is expected: a
/// well-formed TLS 1.2 ClientHello (no extension block, or one under 8 bytes, RFC 5246 §7.4.1.2)
/// that does not offer TLS 1.3 is an older client, answered with protocol_version (§4.2.1, §D.2);
/// anything else keeps its decode error.
fn tls12_hello_or(e: DecodeError, bytes: &[u8]) -> Error {
    if bytes.first() == Some(&HandshakeType::ClientHello.to_repr()) {
        if let Ok(ch) = ClientHello::decode_tls12(&bytes[4..]) {
            let offers_tls13 = matches!(
                ch.find(ExtensionType::SupportedVersions),
                Some(Extension::SupportedVersionsClient(v)) if v.contains(&ProtocolVersion::TLSv1_3)
            );
            if !offers_tls13 {
                return PeerMisbehaved::UnsupportedVersion.into();
            }
        }
    }
    e.into()
}

fn unexpected(expected: &'static str, msg: &HandshakeMessage) -> Error {
    PeerMisbehaved::UnexpectedMessage {
        expected,
        got: msg.typ(),
    }
    .into()
}

impl crate::connection::sealed::Sealed for ServerSide {
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

impl Role for ServerSide {
    const SIDE: Side = Side::Server;

    fn on_handshake(c: &mut Server, bytes: Vec<u8>) -> Result<(), Error> {
        c.handle(bytes)
    }

    fn on_app_data(c: &mut Server, data: Vec<u8>) -> Result<(), Error> {
        // 0-RTT data, within the ticket's max_early_data_size (§4.2.10).
        if let State::ExpectEndOfEarlyData(st) = &mut c.side.state {
            if c.conn.read_epoch == Epoch::Early {
                if data.len() > st.early_remaining {
                    return Err(PeerMisbehaved::TooMuchEarlyData.into());
                }
                st.early_remaining -= data.len();
                c.received_early.push(data);
                return Ok(());
            }
        }
        c.app_data_in_place()?;
        c.received.push(data);
        Ok(())
    }

    fn send(c: &mut Server, data: &[u8]) -> Result<(), Error> {
        c.send_data(data)
    }
}

/// The handshake's progress and outcome; never a key or a secret.
impl core::fmt::Debug for Server {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Server")
            .field("connected", &self.is_connected())
            .field("closed", &self.is_closed())
            .field("negotiated", &self.negotiated)
            .finish_non_exhaustive()
    }
}
