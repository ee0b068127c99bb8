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
//!
//! Each state handles its own messages: `ExpectX::handle(self: Box<Self>, cx, msg)` consumes
//! the state and returns the next (rustls' `State::handle`; `ExpectClientHello` is zero-sized,
//! so it is taken unboxed), and `Connected::handle` takes `&mut self`, since a failed
//! post-handshake message leaves the connected state in place. A transition gets a `Cx`, not
//! the whole [`Server`]: the record layer, the configuration and the few facts of the side that
//! outlive one state. This file holds the states, the `Cx` and the dispatch (`Server::handle`:
//! decode a message with the state's Hash.length, give it to the state's `handle`); the
//! `handle`s and their helpers (methods of `Cx`, or of the state whose facts they use) live in
//! files by concern, so "where is X handled?" has one answer:
//!
//! - `server/hello.rs`: the ClientHellos, what we choose from them, the HelloRetryRequest;
//! - `server/handshake.rs`: our flight (ServerHello to Finished), then the client's
//!   EndOfEarlyData, Certificate, CertificateVerify and Finished;
//! - `server/ech.rs`: the ECH glue: the offer opened, its confirmations and retry_configs,
//!   around the protocol in `ech::server`;
//! - `server/tickets.rs`: PSKs offered to us, 0-RTT acceptance, NewSessionTickets issued;
//! - `server/post_handshake.rs`: what `Connected` handles, with post-handshake authentication.

use std::sync::Arc;

use crate::config::ServerConfig;
use crate::conn::Conn;
use crate::connection::{Connection, Role};
use crate::crypto::aead::SuiteParams;
use crate::crypto::hpke::ReceiverContext;
use crate::crypto::random::RandomSource;
use crate::ech::wire::HpkeSymmetricCipherSuite;
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EchStatus, Epoch, Negotiated, Side};
use crate::keyschedule::schedule::{ExporterSecret, MasterSecret, TrafficSecret};
use crate::keyschedule::transcript::Transcript;
use crate::messages::enums::{CipherSuite, NamedGroup, SignatureScheme};
use crate::messages::handshake::{ClientHello, DecodeContext, HandshakeMessage};
use crate::traffic::Traffic;

mod ech;
mod handshake;
mod hello;
mod post_handshake;
mod tickets;

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
/// waits (`ExpectClientHello` holds nothing, so nothing to box); a transition consumes its
/// state's struct and moves what the next one needs into it.
enum State {
    ExpectClientHello(ExpectClientHello),
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

impl State {
    /// The Hash.length that sizes a message's fields in this state (Finished's verify_data,
    /// §4.4.4).
    fn hash_len(&self) -> usize {
        match self {
            State::ExpectEndOfEarlyData(s) => s.hs.suite.hash.output_len(),
            State::ExpectCertificate(s) => s.hs.suite.hash.output_len(),
            State::ExpectCertificateVerify(s) => s.hs.suite.hash.output_len(),
            State::ExpectFinished(s) => s.hs.suite.hash.output_len(),
            State::Connected(c) => c.traffic.suite.hash.output_len(),
            // No suite yet (a ClientHello is expected): 0 takes any length, and a message
            // with a Hash.length-sized field is unexpected here anyway.
            _ => 0,
        }
    }
}

/// What a transition may touch: the record layer (with randomness, clock and observer) through
/// `Conn`, the configuration, and the facts of the side that outlive one state. Narrow on
/// purpose: not the received-data queues, the buffer limit or the state enum itself, so a
/// transition returns the next state rather than writing one, and what else it may change is
/// listed here.
struct Cx<'a> {
    conn: &'a mut Conn,
    config: &'a ServerConfig,
    /// Numbers each NewSessionTicket's nonce (§4.6.1), across the connection.
    tickets_sent: &'a mut u16,
    /// What the first ClientHello decided about ECH, for [`Server::ech_status`].
    ech: &'a mut Option<EchStatus>,
    /// Set by the client's Finished; the tickets we issue record its ALPN.
    negotiated: &'a mut Option<Negotiated>,
    /// Set when 0-RTT is accepted (§7.5).
    early_exporter: &'a mut Option<ExporterSecret>,
    /// How much rejected 0-RTT the record layer may still skip (§4.2.10).
    early_skip: &'a mut Option<usize>,
}

/// Before the first ClientHello: nothing known yet.
struct ExpectClientHello;

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
/// `Cx::check_client_certificate_verify` makes one.
struct ClientVerified {
    scheme: SignatureScheme,
}

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
                state: State::ExpectClientHello(ExpectClientHello),
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
        let hash_len = self.side.state.hash_len();
        let expects_hello = matches!(
            self.side.state,
            State::ExpectClientHello(_) | State::ExpectSecondClientHello(_)
        );
        let msg = match HandshakeMessage::decode_owned_or_return(bytes, DecodeContext { hash_len })
        {
            Ok(m) => m,
            Err((e, bytes)) if expects_hello => return Err(hello::tls12_hello_or(e, &bytes)),
            Err((e, _)) => return Err(e.into()),
        };
        self.conn.handshake_received(&msg);
        let (mut cx, state) = self.cx();
        let taken = core::mem::replace(state, State::Poisoned);
        *state = match taken {
            State::ExpectClientHello(s) => s.handle(&mut cx, msg)?,
            State::ExpectSecondClientHello(s) => s.handle(&mut cx, msg)?,
            State::ExpectEndOfEarlyData(s) => s.handle(&mut cx, msg)?,
            State::ExpectCertificate(s) => s.handle(&mut cx, msg)?,
            State::ExpectCertificateVerify(s) => s.handle(&mut cx, msg)?,
            State::ExpectFinished(s) => s.handle(&mut cx, msg)?,
            State::Connected(mut c) => {
                // A post-handshake message that fails closes the connection, but the connected
                // state keeps its secrets: is_connected() and export() still answer.
                let handled = c.handle(&mut cx, msg);
                *state = State::Connected(c);
                return handled;
            }
            State::Poisoned => return Err(Error::Closed),
        };
        Ok(())
    }

    /// A transition's context and the state, lent together: the borrows of `self` split so
    /// that neither reaches the other.
    fn cx(&mut self) -> (Cx<'_>, &mut State) {
        let Connection {
            conn,
            negotiated,
            early_exporter,
            early_skip,
            side,
            ..
        } = self;
        let ServerSide {
            config,
            state,
            tickets_sent,
            ech,
        } = side;
        let cx = Cx {
            conn,
            config,
            tickets_sent,
            ech,
            negotiated,
            early_exporter,
            early_skip,
        };
        (cx, state)
    }
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
