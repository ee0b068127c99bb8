//! What was negotiated, read from the handshake messages as they pass: the one place that turns
//! ClientHello, ServerHello, EncryptedExtensions, CertificateRequest, CertificateVerify and
//! Finished into "suite, group, PSK, ALPN, early data, signatures" for whoever did not run the
//! handshake — the transcript reader (and through it the lab's dissector) and the CLI's reports,
//! which read an endpoint's own events.
//!
//! [`Negotiating`] gathers the facts message by message, keeping a few fields rather than the
//! messages; [`Negotiating::negotiation`] sums them up as a [`Negotiation`], whose fields that
//! only encrypted messages carry are [`Seen::Unknown`] when those messages were not read.

use serde::Serialize;

use crate::crypto::aead::suite_params;
use crate::events::{Direction, EarlyDataStatus, Epoch, Event, Negotiated};
use crate::messages::enums::{
    CipherSuite, ExtensionType, NamedGroup, ProtocolVersion, PskKeyExchangeMode, SignatureScheme,
};
use crate::messages::extensions::Extension;
use crate::messages::handshake::{
    ClientHello, DecodeContext, HandshakeMessage, HandshakePayload, ServerHello,
};

/// One field of a [`Negotiation`]: read from the messages, or not readable because the
/// messages that carry it stayed encrypted (or never made it into the capture).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen<T> {
    /// What the messages say.
    Known(T),
    /// Why it cannot be told: e.g. `SERVER_HANDSHAKE_TRAFFIC_SECRET not in the key log`.
    Unknown(String),
}

impl<T> Seen<T> {
    /// The value, if known.
    pub fn known(&self) -> Option<&T> {
        match self {
            Seen::Known(v) => Some(v),
            Seen::Unknown(_) => None,
        }
    }

    /// Why it is not known, if it is not.
    pub fn why(&self) -> Option<&str> {
        match self {
            Seen::Known(_) => None,
            Seen::Unknown(w) => Some(w),
        }
    }
}

/// What was negotiated, as far as the messages tell: the fields of [`Negotiated`] (what an
/// endpoint reports), each one that only encrypted messages carry being [`Seen::Unknown`] when
/// they were not read, plus what the plaintext adds (the PSK exchange mode, the name the client
/// asked for).
///
/// The ServerHello is plaintext (RFC 8446 §4.1.3): version, suite, group, PSK and the
/// HelloRetryRequest are always known. The server's signature scheme, ALPN and the early-data
/// answer are in its encrypted flight (§4.3.1, §4.4.3); the client's signature in its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Negotiation {
    /// supported_versions of the ServerHello (its legacy_version without one).
    pub version: ProtocolVersion,
    /// The ServerHello's cipher suite.
    pub suite: CipherSuite,
    /// The ServerHello's key_share group; `None` for psk_ke.
    pub group: Option<NamedGroup>,
    /// The server's CertificateVerify scheme; `Known(None)`: its flight had none (resumed).
    pub signature_scheme: Seen<Option<SignatureScheme>>,
    /// The client's CertificateVerify scheme; `Known(None)`: it did not authenticate.
    pub client_signature_scheme: Seen<Option<SignatureScheme>>,
    /// The ServerHello selected a PSK.
    pub resumed: bool,
    /// The PSK identity it selected.
    pub psk_identity: Option<u16>,
    /// With a PSK: psk_dhe_ke if the ServerHello has a key_share, else psk_ke (§4.2.9).
    pub psk_mode: Option<PskKeyExchangeMode>,
    /// What became of 0-RTT.
    pub early_data: Seen<EarlyDataStatus>,
    /// The protocol EncryptedExtensions selected; `Known(None)`: none.
    pub alpn: Seen<Option<String>>,
    /// A HelloRetryRequest came first.
    pub hello_retry: bool,
    /// The host_name of the first ClientHello's server_name (RFC 6066 §3).
    pub server_name: Option<String>,
}

impl From<&Negotiated> for Negotiation {
    /// An endpoint's own report: everything known. The PSK mode follows from the group, as it
    /// does on the wire (psk_ke carries no key_share, §4.2.9).
    fn from(n: &Negotiated) -> Self {
        Negotiation {
            version: ProtocolVersion::KNOWN
                .iter()
                .copied()
                .find(|v| v.name() == n.version)
                .unwrap_or(ProtocolVersion::TLSv1_3),
            suite: n.suite,
            group: n.group,
            signature_scheme: Seen::Known(n.signature_scheme),
            client_signature_scheme: Seen::Known(n.client_signature_scheme),
            resumed: n.resumed,
            psk_identity: n.psk_identity,
            psk_mode: n.psk_mode(),
            early_data: Seen::Known(n.early_data),
            alpn: Seen::Known(n.alpn.clone()),
            hello_retry: n.hello_retry,
            server_name: None,
        }
    }
}

impl Negotiation {
    /// The endpoint-shaped report, when every field is known.
    pub fn to_negotiated(&self) -> Option<Negotiated> {
        Some(Negotiated {
            version: self.version.name(),
            suite: self.suite,
            group: self.group,
            signature_scheme: *self.signature_scheme.known()?,
            client_signature_scheme: *self.client_signature_scheme.known()?,
            resumed: self.resumed,
            psk_identity: self.psk_identity,
            early_data: *self.early_data.known()?,
            alpn: self.alpn.known()?.clone(),
            hello_retry: self.hello_retry,
        })
    }

    /// The fields that are not known, with why.
    pub fn unknown(&self) -> Vec<(&'static str, &str)> {
        [
            ("signature_scheme", self.signature_scheme.why()),
            (
                "client_signature_scheme",
                self.client_signature_scheme.why(),
            ),
            ("early_data", self.early_data.why()),
            ("alpn", self.alpn.why()),
        ]
        .into_iter()
        .filter_map(|(k, w)| w.map(|w| (k, w)))
        .collect()
    }
}

/// The same keys as the `negotiated` object of an endpoint's `--json` report (a serialized
/// [`Negotiated`]), plus `psk_mode` and `server_name`. A field that is not known is left out
/// (`null` means "none" there) and named in `unknown`, with why.
impl Serialize for Negotiation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("version", &self.version)?;
        m.serialize_entry("suite", &self.suite)?;
        m.serialize_entry("group", &self.group)?;
        if let Seen::Known(v) = &self.signature_scheme {
            m.serialize_entry("signature_scheme", v)?;
        }
        if let Seen::Known(v) = &self.client_signature_scheme {
            m.serialize_entry("client_signature_scheme", v)?;
        }
        m.serialize_entry("resumed", &self.resumed)?;
        m.serialize_entry("psk_identity", &self.psk_identity)?;
        m.serialize_entry("psk_mode", &self.psk_mode)?;
        if let Seen::Known(v) = &self.early_data {
            m.serialize_entry("early_data", v)?;
        }
        if let Seen::Known(v) = &self.alpn {
            m.serialize_entry("alpn", v)?;
        }
        m.serialize_entry("hello_retry", &self.hello_retry)?;
        m.serialize_entry("server_name", &self.server_name)?;
        let unknown: std::collections::BTreeMap<&str, &str> = self.unknown().into_iter().collect();
        m.serialize_entry("unknown", &unknown)?;
        m.end()
    }
}

/// What one ClientHello offers that the negotiation needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct HelloFacts {
    server_name: Option<String>,
    early_data: bool,
    alpn: bool,
    /// The identities of its pre_shared_key, if it offers one (§4.2.11).
    psk_identities: Option<Vec<Vec<u8>>>,
}

impl HelloFacts {
    fn of(ch: &ClientHello) -> HelloFacts {
        HelloFacts {
            server_name: ch.host_name(),
            early_data: ch.find(ExtensionType::EarlyData).is_some(),
            alpn: ch
                .find(ExtensionType::ApplicationLayerProtocolNegotiation)
                .is_some(),
            psk_identities: match ch.find(ExtensionType::PreSharedKey) {
                Some(Extension::PreSharedKeyClient(offer)) => Some(
                    offer
                        .identities
                        .iter()
                        .map(|i| i.identity.clone())
                        .collect(),
                ),
                _ => None,
            },
        }
    }
}

/// What the ServerHello (not a HelloRetryRequest) selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ServerHelloFacts {
    version: ProtocolVersion,
    suite: CipherSuite,
    group: Option<NamedGroup>,
    psk_index: Option<u16>,
}

impl ServerHelloFacts {
    fn of(sh: &ServerHello) -> ServerHelloFacts {
        let mut f = ServerHelloFacts {
            version: ProtocolVersion::from(sh.legacy_version),
            suite: sh.cipher_suite,
            group: None,
            psk_index: None,
        };
        for e in &sh.extensions {
            match e {
                Extension::SupportedVersionsServer(v) => f.version = *v,
                Extension::KeyShareServer(k) => f.group = Some(k.group),
                Extension::PreSharedKeyServer(i) => f.psk_index = Some(*i),
                _ => {}
            }
        }
        f
    }
}

/// One side's encrypted handshake flight (§4.3-§4.4), as far as read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct FlightFacts {
    /// The first CertificateVerify's scheme.
    signature: Option<SignatureScheme>,
    finished: bool,
    certificate_request: bool,
}

/// What EncryptedExtensions answered (§4.3.1).
#[derive(Clone, Debug, PartialEq, Eq)]
struct ExtensionsFacts {
    early_data: bool,
    alpn: Option<String>,
}

/// The parameters of a handshake, gathered message by message: what the ClientHellos offered,
/// what the ServerHello selected, what the encrypted flights said. It keeps a few fields, not
/// the messages.
///
/// Fed by the [`TranscriptReader`](super::TranscriptReader) as it reads a connection from the
/// outside, or by [`from_events`](Self::from_events) from an endpoint's own
/// [`Event::Handshake`] reports (the CLI's reports read the PSK an endpoint used this way,
/// before its handshake completes too).
///
/// Only messages that decode count (Finished with the suite's Hash.length, once the
/// ServerHello named it). ClientHellos are read under plaintext only, the flights under the
/// handshake keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Negotiating {
    client_hellos: usize,
    first_hello: Option<HelloFacts>,
    last_hello: Option<HelloFacts>,
    /// The identities of the last ClientHello that offered PSKs.
    psk_offer: Option<Vec<Vec<u8>>>,
    hello_retry: bool,
    server_hello: Option<ServerHelloFacts>,
    server: FlightFacts,
    client: FlightFacts,
    extensions: Option<ExtensionsFacts>,
}

impl Negotiating {
    /// Nothing read yet.
    pub fn new() -> Negotiating {
        Negotiating::default()
    }

    /// From an endpoint's events: its [`Event::Handshake`] reports, sent and received.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Negotiating {
        let mut n = Negotiating::new();
        for e in events {
            if let Event::Handshake(h) = e {
                n.message(h.direction, h.epoch, &h.bytes);
            }
        }
        n
    }

    /// Hash.length of the ServerHello's suite; 0 before it (any Finished length decodes).
    fn hash_len(&self) -> usize {
        self.server_hello
            .and_then(|s| suite_params(s.suite))
            .map_or(0, |p| p.hash.output_len())
    }

    /// One handshake message (4-byte header included), sent `direction` under `epoch`.
    /// Messages that do not decode are ignored.
    pub fn message(&mut self, direction: Direction, epoch: Epoch, bytes: &[u8]) {
        let ctx = DecodeContext {
            hash_len: self.hash_len(),
        };
        let Ok(m) = HandshakeMessage::decode(bytes, ctx) else {
            return;
        };
        match (direction, m.payload) {
            (Direction::ClientToServer, HandshakePayload::ClientHello(ch)) => {
                let facts = HelloFacts::of(&ch);
                self.client_hellos += 1;
                if facts.psk_identities.is_some() {
                    self.psk_offer.clone_from(&facts.psk_identities);
                }
                if self.first_hello.is_none() {
                    self.first_hello = Some(facts.clone());
                }
                self.last_hello = Some(facts);
            }
            (Direction::ServerToClient, HandshakePayload::ServerHello(sh)) => {
                if sh.is_hello_retry_request() {
                    self.hello_retry = true;
                } else if self.server_hello.is_none() {
                    self.server_hello = Some(ServerHelloFacts::of(&sh));
                }
            }
            (direction, payload) if epoch == Epoch::Handshake => {
                let flight = match direction {
                    Direction::ServerToClient => &mut self.server,
                    Direction::ClientToServer => &mut self.client,
                };
                match payload {
                    HandshakePayload::CertificateVerify(cv) => {
                        flight.signature.get_or_insert(cv.scheme);
                    }
                    HandshakePayload::Finished(_) => flight.finished = true,
                    HandshakePayload::CertificateRequest(_) => flight.certificate_request = true,
                    HandshakePayload::EncryptedExtensions(x)
                        if direction == Direction::ServerToClient && self.extensions.is_none() =>
                    {
                        self.extensions = Some(ExtensionsFacts {
                            early_data: x.iter().any(|e| matches!(e, Extension::EarlyDataEmpty)),
                            alpn: x.iter().find_map(|e| match e {
                                Extension::Alpn(p) => {
                                    p.first().map(|x| String::from_utf8_lossy(x).into_owned())
                                }
                                _ => None,
                            }),
                        });
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// ECH was accepted (RFC 9849 §7.2): the handshake's ClientHellos are these
    /// ClientHelloInner messages, in order, in place of the outer ones read so far (the
    /// first outer one by the first inner one, and so on).
    pub fn use_client_hellos(&mut self, inner: &[Vec<u8>]) {
        let facts = |m: &Vec<u8>| match HandshakeMessage::decode(m, DecodeContext::default()) {
            Ok(HandshakeMessage {
                payload: HandshakePayload::ClientHello(ch),
                ..
            }) => Some(HelloFacts::of(&ch)),
            _ => None,
        };
        if self.client_hellos == 0 {
            return;
        }
        if let Some(f) = inner.first().and_then(facts) {
            self.first_hello = Some(f);
        }
        if let Some(f) = inner.get(self.client_hellos - 1).and_then(facts) {
            if f.psk_identities.is_some() {
                self.psk_offer.clone_from(&f.psk_identities);
            }
            self.last_hello = Some(f);
        }
    }

    /// The ServerHello's cipher suite, once read.
    pub fn suite(&self) -> Option<CipherSuite> {
        self.server_hello.map(|s| s.suite)
    }

    /// The ServerHello's key_share group, if it has one.
    pub fn group(&self) -> Option<NamedGroup> {
        self.server_hello.and_then(|s| s.group)
    }

    /// Which of the offered PSK identities the ServerHello selected (§4.2.11).
    pub fn psk_index(&self) -> Option<u16> {
        self.server_hello.and_then(|s| s.psk_index)
    }

    /// The selected PSK identity, as the last ClientHello that offered PSKs offered it.
    pub fn psk_identity(&self) -> Option<&[u8]> {
        let offer = self.psk_offer.as_ref()?;
        offer.get(usize::from(self.psk_index()?)).map(Vec::as_slice)
    }

    /// With a PSK: psk_dhe_ke if the ServerHello has a key_share, else psk_ke (§4.2.9).
    pub fn psk_mode(&self) -> Option<PskKeyExchangeMode> {
        self.psk_index().map(|_| match self.group() {
            Some(_) => PskKeyExchangeMode::PskDheKe,
            None => PskKeyExchangeMode::PskKe,
        })
    }

    /// Whether a HelloRetryRequest was read.
    pub fn hello_retry(&self) -> bool {
        self.hello_retry
    }

    /// Whether the first ClientHello offered 0-RTT (§4.2.10).
    pub fn early_data_offered(&self) -> bool {
        self.first_hello.as_ref().is_some_and(|h| h.early_data)
    }

    /// The host_name of the first ClientHello's server_name.
    pub fn server_name(&self) -> Option<&str> {
        self.first_hello.as_ref()?.server_name.as_deref()
    }

    /// What was negotiated; `None` before the ServerHello. A field only an encrypted flight
    /// carries, when that flight was not read, is [`Seen::Unknown`] with the reason
    /// `unread(whose flight)` gives.
    pub fn negotiation(&self, unread: impl Fn(Direction) -> String) -> Option<Negotiation> {
        let sh = self.server_hello?;
        let server_closed = || unread(Direction::ServerToClient);
        let client_closed = || unread(Direction::ClientToServer);
        let (server, client) = (self.server, self.client);
        let resumed = sh.psk_index.is_some();
        let signature_scheme = match server.signature {
            Some(s) => Seen::Known(Some(s)),
            // Its Finished came without a CertificateVerify: it did not sign (a PSK handshake).
            None if server.finished => Seen::Known(None),
            None => Seen::Unknown(server_closed()),
        };
        let cert_request = server.certificate_request;
        let client_signature_scheme = match client.signature {
            Some(s) => Seen::Known(Some(s)),
            // The client authenticates in the handshake only when asked (§4.3.2); asked, it may
            // send an empty Certificate and no CertificateVerify (§4.4.2.4).
            None if server.finished && !cert_request => Seen::Known(None),
            None if cert_request && client.finished => Seen::Known(None),
            None if !server.finished => Seen::Unknown(server_closed()),
            None => Seen::Unknown(client_closed()),
        };
        // §4.2.10: only the first ClientHello may offer 0-RTT; a HelloRetryRequest, or a PSK other
        // than the first one offered (or none), refuses it whatever EncryptedExtensions says.
        let ee = self.extensions.as_ref();
        let early_data = match ee {
            _ if !self.early_data_offered() => Seen::Known(EarlyDataStatus::NotSent),
            _ if self.hello_retry || sh.psk_index != Some(0) => {
                Seen::Known(EarlyDataStatus::Rejected)
            }
            Some(x) if x.early_data => Seen::Known(EarlyDataStatus::Accepted),
            Some(_) => Seen::Known(EarlyDataStatus::Rejected),
            None => Seen::Unknown(server_closed()),
        };
        let alpn_offered = self.last_hello.as_ref().is_some_and(|h| h.alpn);
        let alpn = match ee {
            Some(x) => Seen::Known(x.alpn.clone()),
            // The server may only answer an offer (RFC 7301 §3.1).
            None if !alpn_offered => Seen::Known(None),
            None => Seen::Unknown(server_closed()),
        };
        Some(Negotiation {
            version: sh.version,
            suite: sh.suite,
            group: sh.group,
            signature_scheme,
            client_signature_scheme,
            resumed,
            psk_identity: sh.psk_index,
            psk_mode: self.psk_mode(),
            early_data,
            alpn,
            hello_retry: self.hello_retry,
            server_name: self.server_name().map(str::to_string),
        })
    }
}
