//! Everything a connection reports to its observer.
//!
//! The state machines push [`Event`]s in the order things happen, into the connection's queue
//! (drained with `events()`) or into an [`Observer`] the caller plugs in with `set_observer`;
//! with neither asked for ([`Observe::NONE`], the default) nothing is built or kept. The
//! ledger ([`crate::ledger`]), the NSS key log, the JSON output and the teaching CLI are all
//! projections of this one stream, so they can never disagree.
//!
//! Observation is not the data path: received application data and 0-RTT data are read with
//! `read` / `read_early` (or opened in place), never carried here. Secret values appear only
//! when [`Observe`] asks for them, and no `Debug` output prints one.

use std::collections::VecDeque;

use serde::{Serialize, Serializer};

use crate::crypto::kx::KxComponent;
use crate::keyschedule::schedule::{Derivation, DerivationSink, SecretName};
use crate::messages::enums::{
    AlertDescription, AlertLevel, CipherSuite, ContentType, HandshakeType, NamedGroup,
    PskKeyExchangeMode, SignatureScheme,
};
use crate::messages::layout::Span;

/// Which endpoint a connection object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The TLS client.
    Client,
    /// The TLS server.
    Server,
}

impl Side {
    /// The direction of bytes this side sends.
    pub fn sending(self) -> Direction {
        match self {
            Side::Client => Direction::ClientToServer,
            Side::Server => Direction::ServerToClient,
        }
    }

    /// The direction of bytes this side receives.
    pub fn receiving(self) -> Direction {
        match self {
            Side::Client => Direction::ServerToClient,
            Side::Server => Direction::ClientToServer,
        }
    }
}

/// Which way bytes travel, independent of who observes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client → server.
    ClientToServer,
    /// Server → client.
    ServerToClient,
}

impl Direction {
    /// An arrow for tables: `C→S` or `S→C`.
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::ClientToServer => "C→S",
            Direction::ServerToClient => "S→C",
        }
    }
}

/// The keys a record is protected under (RFC 8446 §7.3 traffic secrets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Epoch {
    /// TLSPlaintext: ClientHello, ServerHello, HelloRetryRequest, ChangeCipherSpec, early alerts.
    Plaintext,
    /// client_early_traffic_secret (0-RTT).
    Early,
    /// \[sender\]_handshake_traffic_secret.
    Handshake,
    /// \[sender\]_application_traffic_secret_N; N counts KeyUpdates.
    Application(u64),
}

impl core::fmt::Display for Epoch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Epoch::Plaintext => f.write_str("plaintext"),
            Epoch::Early => f.write_str("early"),
            Epoch::Handshake => f.write_str("handshake"),
            Epoch::Application(0) => f.write_str("application"),
            Epoch::Application(n) => write!(f, "application#{n}"),
        }
    }
}

/// One record as it crossed the wire, with its exact byte accounting.
///
/// `wire_len = 5 + payload_len`; for protected records
/// `payload_len = plaintext_len + 1 (inner type) + padding_len + tag_len` (RFC 8446 §5.2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecordEvent {
    /// Which way it went.
    pub direction: Direction,
    /// Which keys protect it.
    pub epoch: Epoch,
    /// The caller's clock (ms) when the record was sent or received.
    pub time_ms: u64,
    /// The 5-byte record header as on the wire.
    #[serde(serialize_with = "ser_hex")]
    pub header: Vec<u8>,
    /// TLSPlaintext.type / TLSCiphertext.opaque_type.
    pub wire_type: ContentType,
    /// The real content type (TLSInnerPlaintext.type for protected records).
    pub inner_type: ContentType,
    /// Header + payload.
    pub wire_len: usize,
    /// Bytes after the header.
    pub payload_len: usize,
    /// Content bytes (without inner type, padding and tag).
    pub plaintext_len: usize,
    /// Zero bytes of TLSInnerPlaintext padding.
    pub padding_len: usize,
    /// AEAD tag bytes (16; 8 under TLS_AES_128_CCM_8_SHA256) or 0.
    pub tag_len: usize,
    /// AEAD sequence number, for protected records.
    pub seq: Option<u64>,
    /// The content (plaintext), so observers can split it into messages.
    #[serde(skip)]
    pub content: Vec<u8>,
}

impl RecordEvent {
    /// The record as an [`Observer`]'s [`record`](Observer::record) hook sees it.
    pub fn view(&self) -> RecordView<'_> {
        RecordView {
            direction: self.direction,
            epoch: self.epoch,
            time_ms: self.time_ms,
            header: &self.header,
            wire_type: self.wire_type,
            inner_type: self.inner_type,
            payload_len: self.payload_len,
            plaintext: &self.content,
            padding_len: self.padding_len,
            tag_len: self.tag_len,
            seq: self.seq,
        }
    }
}

/// A record as it passes, borrowed from the connection: what [`Observer::record`] is given.
/// An observer that only looks (counts, checks, writes a capture) copies nothing;
/// [`to_event`](Self::to_event) makes the owned [`RecordEvent`] a recorder keeps.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    /// Which way it went.
    pub direction: Direction,
    /// Which keys protect it.
    pub epoch: Epoch,
    /// The caller's clock (ms) when the record was sent or received.
    pub time_ms: u64,
    /// The 5-byte record header as on the wire.
    pub header: &'a [u8],
    /// TLSPlaintext.type / TLSCiphertext.opaque_type.
    pub wire_type: ContentType,
    /// The real content type (TLSInnerPlaintext.type for protected records).
    pub inner_type: ContentType,
    /// Bytes after the header (ciphertext and tag for a protected record).
    pub payload_len: usize,
    /// The content (without inner type, padding and tag), decrypted.
    pub plaintext: &'a [u8],
    /// Zero bytes of TLSInnerPlaintext padding.
    pub padding_len: usize,
    /// AEAD tag bytes, or 0.
    pub tag_len: usize,
    /// AEAD sequence number, for protected records.
    pub seq: Option<u64>,
}

impl RecordView<'_> {
    /// The owned event (copies the header and the plaintext).
    pub fn to_event(&self) -> RecordEvent {
        RecordEvent {
            direction: self.direction,
            epoch: self.epoch,
            time_ms: self.time_ms,
            header: self.header.to_vec(),
            wire_type: self.wire_type,
            inner_type: self.inner_type,
            wire_len: self.header.len() + self.payload_len,
            payload_len: self.payload_len,
            plaintext_len: self.plaintext.len(),
            padding_len: self.padding_len,
            tag_len: self.tag_len,
            seq: self.seq,
            content: self.plaintext.to_vec(),
        }
    }
}

/// A handshake message as it passes, its bytes borrowed: what [`Observer::handshake`] is given.
#[derive(Clone, Debug)]
pub struct MessageView<'a> {
    /// Which way it went.
    pub direction: Direction,
    /// Which keys protected it.
    pub epoch: Epoch,
    /// HandshakeType.
    pub typ: HandshakeType,
    /// The whole message including its 4-byte header.
    pub bytes: &'a [u8],
    /// Byte spans of every field and extension (present when layouts are observed).
    pub layout: Option<Vec<Span>>,
}

impl MessageView<'_> {
    /// The owned event (copies the bytes).
    pub fn into_event(self) -> HandshakeEvent {
        HandshakeEvent {
            direction: self.direction,
            epoch: self.epoch,
            typ: self.typ,
            bytes: self.bytes.to_vec(),
            layout: self.layout,
        }
    }
}

/// A named secret, borrowed: what [`Observer::secret`] is given (only under an [`Observe`]
/// that asks for secrets by name).
#[derive(Clone, Copy)]
pub struct SecretView<'a> {
    /// Which secret.
    pub name: SecretName,
    /// The NSS SSLKEYLOGFILE label.
    pub nss_label: &'static str,
    /// ClientHello.random, the key of every key-log line.
    pub client_random: &'a [u8],
    /// The secret.
    pub secret: &'a [u8],
}

/// As for [`SecretEvent`]: the value is never printed by `Debug`.
impl core::fmt::Debug for SecretView<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SecretView")
            .field("name", &self.name)
            .field("secret", &format_args!("<{} bytes>", self.secret.len()))
            .finish()
    }
}

impl SecretView<'_> {
    /// The owned event (copies the secret).
    pub fn to_event(&self) -> SecretEvent {
        SecretEvent {
            name: self.name,
            nss_label: self.nss_label,
            client_random: self.client_random.to_vec(),
            secret: self.secret.to_vec(),
        }
    }
}

/// One handshake message, sent or received, with its exact bytes and field layout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HandshakeEvent {
    /// Which way it went.
    pub direction: Direction,
    /// Which keys protected it.
    pub epoch: Epoch,
    /// HandshakeType.
    pub typ: HandshakeType,
    /// The whole message including its 4-byte header.
    #[serde(serialize_with = "ser_hex")]
    pub bytes: Vec<u8>,
    /// Byte spans of every field and extension (present when layouts are observed).
    pub layout: Option<Vec<Span>>,
}

/// The outcome of a key exchange, component by component (a hybrid group has two).
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct KeyShareEvent {
    /// The negotiated group.
    pub group: NamedGroup,
    /// Each component's shares and secret.
    pub components: Vec<KxComponent>,
    /// The combined (EC)DHE/KEM shared secret fed into the handshake secret.
    #[serde(serialize_with = "ser_hex")]
    pub shared_secret: Vec<u8>,
}

/// A named traffic or exporter secret, in the shape of an NSS key log line.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct SecretEvent {
    /// Which secret.
    pub name: SecretName,
    /// The NSS SSLKEYLOGFILE label, e.g. `CLIENT_HANDSHAKE_TRAFFIC_SECRET`.
    pub nss_label: &'static str,
    /// ClientHello.random, the key of every key-log line.
    #[serde(serialize_with = "ser_hex")]
    pub client_random: Vec<u8>,
    /// The secret.
    #[serde(serialize_with = "ser_hex")]
    pub secret: Vec<u8>,
}

/// Secret values are asked for by name (the key log line, the serialized ledger), never printed
/// by `Debug`: a debug log of events must not leak keys.
impl core::fmt::Debug for SecretEvent {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SecretEvent")
            .field("name", &self.name)
            .field("nss_label", &self.nss_label)
            .field("client_random", &hex(&self.client_random))
            .field("secret", &format_args!("<{} bytes>", self.secret.len()))
            .finish()
    }
}

impl core::fmt::Debug for KeyShareEvent {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KeyShareEvent")
            .field("group", &self.group)
            .field("components", &self.components)
            .field(
                "shared_secret",
                &format_args!("<{} bytes>", self.shared_secret.len()),
            )
            .finish()
    }
}

impl SecretEvent {
    /// One line of an NSS key log file.
    pub fn keylog_line(&self) -> String {
        format!(
            "{} {} {}",
            self.nss_label,
            hex(&self.client_random),
            hex(&self.secret)
        )
    }
}

/// What was negotiated, reported once when the handshake completes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Negotiated {
    /// Always TLS 1.3.
    pub version: &'static str,
    /// The cipher suite.
    pub suite: CipherSuite,
    /// The key-exchange group, `None` for psk_ke.
    pub group: Option<NamedGroup>,
    /// The server's CertificateVerify scheme, `None` when resumed.
    pub signature_scheme: Option<SignatureScheme>,
    /// The client's CertificateVerify scheme if it authenticated.
    pub client_signature_scheme: Option<SignatureScheme>,
    /// Whether a PSK was used.
    pub resumed: bool,
    /// Index of the PSK identity the server selected.
    pub psk_identity: Option<u16>,
    /// Early data outcome.
    pub early_data: EarlyDataStatus,
    /// Negotiated ALPN protocol.
    pub alpn: Option<String>,
    /// Whether a HelloRetryRequest happened.
    pub hello_retry: bool,
}

impl Negotiated {
    /// The PSK key exchange mode (RFC 8446 §4.2.9) when a PSK was used: psk_dhe_ke when a group
    /// was negotiated beside it, psk_ke when the ServerHello carried no key_share.
    pub fn psk_mode(&self) -> Option<PskKeyExchangeMode> {
        self.resumed.then_some(match self.group {
            Some(_) => PskKeyExchangeMode::PskDheKe,
            None => PskKeyExchangeMode::PskKe,
        })
    }
}

/// What happened to 0-RTT data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EarlyDataStatus {
    /// The client offered none.
    NotSent,
    /// The server accepted it.
    Accepted,
    /// The server rejected it; the client gets it back from `take_rejected_early_data` (and
    /// a recorder in [`Event::EarlyDataRejected`]).
    Rejected,
}

/// Everything a connection reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A record crossed the wire.
    Record(RecordEvent),
    /// A handshake message was sent or received.
    Handshake(HandshakeEvent),
    /// A key-schedule step (HKDF-Extract, Derive-Secret, HKDF-Expand-Label).
    Derivation(Derivation),
    /// A named traffic/exporter secret (key-log shaped).
    Secret(SecretEvent),
    /// A key exchange completed.
    KeyShare(KeyShareEvent),
    /// The handshake completed.
    Connected(Negotiated),
    /// The server's supported_groups from its EncryptedExtensions, in its order (client only).
    /// RFC 8446 §4.2.7 forbids acting on them before the handshake completes, so they are
    /// reported only then, right after [`Event::Connected`]: something to choose the key shares
    /// of a later connection by, never this one's.
    ServerGroups {
        /// The groups as the server listed them (unknown code points kept).
        groups: Vec<NamedGroup>,
    },
    /// The server's `trust_anchors` in EncryptedExtensions (draft-ietf-tls-trust-anchor-ids
    /// §4.3, client only): the trust anchors it has certification paths for, in its order.
    /// Reported as soon as it arrives, so a client whose certificate check then fails can
    /// connect again asking for one of them.
    TrustAnchorsAvailable {
        /// Trust anchor IDs, binary form (hex when serialized).
        #[serde(serialize_with = "ser_hex_list")]
        ids: Vec<Vec<u8>>,
    },
    /// The certificate path was chosen for a trust anchor we asked for: the first
    /// CertificateEntry carried an empty `trust_anchors` (§4.2). Either side.
    TrustAnchorMatched,
    /// The server rejected our 0-RTT data: these bytes were NOT delivered; resend them if needed.
    EarlyDataRejected {
        /// The bytes that were sent as early data.
        #[serde(serialize_with = "ser_hex")]
        data: Vec<u8>,
    },
    /// A NewSessionTicket was issued (server) or received and stored (client).
    Ticket {
        /// Which way it went.
        direction: Direction,
        /// Its lifetime in seconds.
        lifetime: u32,
        /// max_early_data_size, if it allows 0-RTT.
        max_early_data: Option<u32>,
    },
    /// Traffic keys were updated (RFC 8446 §4.6.3).
    KeyUpdate {
        /// Whose sending keys changed.
        direction: Direction,
        /// Whether the sender asked the peer to update too.
        requested: bool,
    },
    /// Post-handshake client authentication (RFC 8446 §4.6.2) completed: the client answered
    /// a CertificateRequest with Certificate, CertificateVerify (if it had a certificate) and
    /// Finished. The client reports it when its answer is queued; the server once the answer
    /// verified (a failed one is an alert and an error instead).
    PostHandshakeAuth {
        /// Always client to server: the answer's direction.
        direction: Direction,
        /// The certificate_request_context this answer echoes (§4.3.2).
        #[serde(serialize_with = "ser_hex")]
        context: Vec<u8>,
        /// Certificates in the client's Certificate; 0 for an empty one (no client
        /// authentication, which the server accepted).
        certificates: usize,
        /// The CertificateVerify's scheme, when a certificate was sent.
        scheme: Option<SignatureScheme>,
    },
    /// An alert was sent or received.
    Alert {
        /// Which way it went.
        direction: Direction,
        /// warning or fatal.
        level: AlertLevel,
        /// Which alert.
        description: AlertDescription,
    },
    /// The connection is closed for reading (close_notify or fatal alert).
    Closed,
    /// What became of ECH (RFC 9849): reported once the first ClientHello is decided (the
    /// server) — accepted, rejected or not offered — so outer and inner can be told apart.
    Ech(EchEvent),
    /// The ClientHelloInner a server decrypted (RFC 9849 §7.1) or a client sealed: the message
    /// the handshake really answers, beside the ClientHelloOuter of the Handshake event before
    /// it. Never on the wire as such; bytes are the reconstructed message with its header.
    InnerClientHello(HandshakeEvent),
    /// One HPKE step (RFC 9180) of opening or sealing ClientHelloInner, with secret values:
    /// reported only when derivations are observed.
    Hpke(crate::crypto::hpke::HpkeStep),
    /// The ECH acceptance confirmation (RFC 9849 §7.2, §7.2.1):
    /// `HKDF-Expand-Label(HKDF-Extract(0, ClientHelloInner.random), label, transcript_hash, 8)`.
    /// Reported when derivations are observed.
    EchConfirmation {
        /// `"ech accept confirmation"` or `"hrr ech accept confirmation"`.
        label: &'static str,
        /// ClientHelloInner.random.
        #[serde(serialize_with = "ser_hex")]
        inner_random: Vec<u8>,
        /// The inner transcript through the ServerHello or HelloRetryRequest whose
        /// confirmation bytes are zero.
        #[serde(serialize_with = "ser_hex")]
        transcript_hash: Vec<u8>,
        /// The eight bytes.
        #[serde(serialize_with = "ser_hex")]
        confirmation: Vec<u8>,
    },
    /// What became of our Encrypted ClientHello offer (RFC 9849), client only: reported when the
    /// server's first answer settles it (a GREASE or unusable offer: when the ClientHello goes
    /// out).
    EchOffer(EchOfferEvent),
    /// The parts of one ClientHelloOuter's `encrypted_client_hello` (RFC 9849 §5), reported by
    /// both sides right after that ClientHello's [`Event::Handshake`]: the client's from what
    /// it sealed, the server's from what it received and opened. Every outer-type extension
    /// gets one, so after a HelloRetryRequest there are two.
    EchParts(EchParts),
}

/// One `encrypted_client_hello` of outer type, part by part (RFC 9849 §5):
/// `type 2 + length 2 + ECHClientHelloType 1 + cipher_suite 4 + config_id 1 + enc (2 + n) +
/// payload (2 + n)`, the payload being EncodedClientHelloInner sealed, plus the AEAD's tag.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EchParts {
    /// ECHClientHello.config_id.
    pub config_id: u8,
    /// The HPKE KDF of cipher_suite.
    pub kdf: crate::messages::enums::HpkeKdfId,
    /// The HPKE AEAD of cipher_suite.
    pub aead: crate::messages::enums::HpkeAeadId,
    /// enc: the HPKE encapsulated key (empty in a second ClientHelloOuter, §6.1.5).
    pub enc_len: usize,
    /// payload: the sealed EncodedClientHelloInner and its tag.
    pub payload_len: usize,
    /// The AEAD's tag length Nt (RFC 9180 §7.3; 0 for an AEAD we do not know).
    pub tag_len: usize,
    /// What was sealed, when this side knows it: the client that sealed a real offer, the
    /// server that opened it. `None` for GREASE and for a payload the server did not open.
    pub inner: Option<EchInnerParts>,
}

impl EchParts {
    /// The parts of an outer extension with `suite`, config_id, enc and payload of these
    /// lengths, and what was sealed if known; the tag length follows from the AEAD.
    pub fn new(
        suite: crate::messages::ech::HpkeSymmetricCipherSuite,
        config_id: u8,
        enc_len: usize,
        payload_len: usize,
        inner: Option<EchInnerParts>,
    ) -> Self {
        EchParts {
            config_id,
            kdf: suite.kdf_id,
            aead: suite.aead_id,
            enc_len,
            payload_len,
            tag_len: crate::crypto::hpke::Aead::from_id(suite.aead_id).map_or(0, |a| a.tag_len()),
            inner,
        }
    }

    /// The whole extension on the wire, its 4-byte header included.
    pub fn extension_len(&self) -> usize {
        4 + 1 + 4 + 1 + 2 + self.enc_len + 2 + self.payload_len
    }
}

/// What one ECH payload held (RFC 9849 §5.1): `payload = encoded_inner_len + tag`, and
/// `inner_len = 4 + (encoded_inner_len − padding) + session_id + saved`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EchInnerParts {
    /// EncodedClientHelloInner: what the AEAD sealed, padding included.
    pub encoded_inner_len: usize,
    /// Its trailing zeros (§6.1.3: name padding plus the round-up to 32).
    pub padding: usize,
    /// ClientHelloInner as reconstructed, with its 4-byte handshake header.
    pub inner_len: usize,
    /// legacy_session_id, emptied in the encoding and copied back from the outer hello.
    pub session_id: usize,
    /// Bytes `ech_outer_extensions` saved: the referenced outer extensions minus the
    /// reference itself.
    pub saved: usize,
    /// The outer extensions it referenced, in order.
    pub outer_extensions: Vec<crate::messages::enums::ExtensionType>,
}

/// Whether ECH was used (RFC 9849 §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EchStatus {
    /// The ClientHelloInner was decrypted and answered.
    Accepted,
    /// An outer ECH extension that no key opened (a stale config, or GREASE), or any ECH
    /// extension at a server without ECH keys: the handshake answered ClientHelloOuter, with
    /// retry_configs when the server has keys ([`EchEvent::retry_configs_sent`]).
    Rejected,
    /// No `encrypted_client_hello` in the ClientHello.
    NotOffered,
}

/// The ECH outcome of a connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EchEvent {
    /// Accepted, rejected or not offered.
    pub status: EchStatus,
    /// The client's ECHClientHello.config_id, when it offered ECH.
    pub config_id: Option<u8>,
    /// The client's HPKE KDF and AEAD, when it offered ECH.
    pub kdf: Option<crate::messages::enums::HpkeKdfId>,
    /// See `kdf`.
    pub aead: Option<crate::messages::enums::HpkeAeadId>,
    /// server_name of ClientHelloOuter (the public name, usually).
    pub outer_sni: Option<String>,
    /// server_name of ClientHelloInner, when it was decrypted.
    pub inner_sni: Option<String>,
    /// Whether retry_configs went out in EncryptedExtensions (RFC 9849 §7.1).
    pub retry_configs_sent: bool,
}

/// The outcome of an ECH offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EchOutcome {
    /// The server confirmed it used ClientHelloInner (§6.1.4).
    #[serde(rename = "accepted")]
    Accepted,
    /// The server used ClientHelloOuter (§6.1.6).
    #[serde(rename = "rejected")]
    Rejected,
    /// A GREASE extension was sent (§6.2).
    #[serde(rename = "grease")]
    Grease,
    /// ECH was asked for, but no config was usable (and no GREASE fallback).
    #[serde(rename = "not offered")]
    NotOffered,
}

impl EchOutcome {
    /// `"accepted"`, `"rejected"`, `"grease"` or `"not offered"`.
    pub fn as_str(self) -> &'static str {
        match self {
            EchOutcome::Accepted => "accepted",
            EchOutcome::Rejected => "rejected",
            EchOutcome::Grease => "grease",
            EchOutcome::NotOffered => "not offered",
        }
    }
}

/// [`Event::EchOffer`]: the outcome and what was offered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EchOfferEvent {
    /// Accepted, rejected, GREASE or not offered.
    pub outcome: EchOutcome,
    /// The extension's config_id (random for GREASE).
    pub config_id: Option<u8>,
    /// HPKE KDF and AEAD, by name (e.g. `"HKDF-SHA256/AES-128-GCM"`).
    pub suite: Option<String>,
    /// The server_name of ClientHelloInner (the real one).
    pub inner_sni: Option<String>,
    /// The server_name of ClientHelloOuter (the config's public_name, or the real one with
    /// GREASE).
    pub outer_sni: Option<String>,
    /// EncodedClientHelloInner's length: what the HPKE AEAD sealed (padding included).
    pub encoded_inner_len: usize,
    /// Padding in it (§6.1.3: name padding plus the round-up to 32).
    pub padding: usize,
    /// Bytes `ech_outer_extensions` saved (§5.1).
    pub saved: usize,
    /// Whether a HelloRetryRequest confirmed ECH first (§6.1.5).
    pub hello_retry: bool,
}

/// What a connection records, kind by kind. [`Observe::NONE`], the default, records nothing:
/// no event is built or queued, no record or message is copied, and the connection holds only
/// its buffers however long it runs and whether or not anyone calls `events()`. Any other value
/// installs a recorder: the events of the kinds switched on, plus the outcome (connected,
/// alerts, tickets, key updates, ECH, close), are queued for `events()` or handed to the
/// observer set with `set_observer`.
///
/// Built from a preset and switched kind by kind:
/// `Observe::PUBLIC.with_records(false)`, `Observe::NONE.with_secrets(true)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Observe {
    /// [`Event::Record`].
    pub records: bool,
    /// [`Event::Handshake`] (with layouts if `layouts`).
    pub handshake: bool,
    /// Field/extension layouts inside handshake events.
    pub layouts: bool,
    /// [`Event::Derivation`] — every key-schedule step, with its secret value.
    pub derivations: bool,
    /// [`Event::Secret`] and [`Event::KeyShare`] (secret values).
    pub secrets: bool,
    /// The outcome events, which every preset but [`Observe::NONE`] records: connected, alerts,
    /// tickets, key updates, ECH's outcome, close.
    pub outcome: bool,
}

impl Observe {
    /// Everything that holds no secret: records (their ciphertext and plaintext), handshake
    /// messages and their layouts. The default.
    pub const PUBLIC: Observe = Observe {
        records: true,
        handshake: true,
        layouts: true,
        derivations: false,
        secrets: false,
        outcome: true,
    };
    /// Everything, secrets included: every key-schedule derivation with its value, the traffic
    /// and exporter secrets (the NSS key log), the key-exchange secrets. What the teaching and
    /// research tools ask for by name; never the default.
    pub const ALL_WITH_SECRETS: Observe = Observe {
        records: true,
        handshake: true,
        layouts: true,
        derivations: true,
        secrets: true,
        outcome: true,
    };
    /// Nothing: no recorder, no event (the default). What an application needs of the outcome
    /// it reads from the connection (`negotiated`, `is_connected`, the client's tickets) and
    /// from the errors `receive` returns.
    pub const NONE: Observe = Observe {
        records: false,
        handshake: false,
        layouts: false,
        derivations: false,
        secrets: false,
        outcome: false,
    };
    /// Only the outcome events (connected, alerts, tickets, key updates, ECH, close): a few
    /// small events per connection, for an application that reads them from `events()`.
    pub const OUTCOME: Observe = Observe {
        outcome: true,
        ..Observe::NONE
    };

    /// With [`Event::Record`] on or off.
    pub const fn with_records(mut self, on: bool) -> Self {
        self.records = on;
        self
    }

    /// With [`Event::Handshake`] on or off.
    pub const fn with_handshake(mut self, on: bool) -> Self {
        self.handshake = on;
        self
    }

    /// With field layouts in handshake events on or off.
    pub const fn with_layouts(mut self, on: bool) -> Self {
        self.layouts = on;
        self
    }

    /// With [`Event::Derivation`] (every key-schedule step, secret values included) on or off.
    pub const fn with_derivations(mut self, on: bool) -> Self {
        self.derivations = on;
        self
    }

    /// With [`Event::Secret`] and [`Event::KeyShare`] (secret values) on or off.
    pub const fn with_secrets(mut self, on: bool) -> Self {
        self.secrets = on;
        self
    }

    /// With the outcome events on or off. They are recorded whenever any kind is, so this
    /// matters only on its own: `Observe::NONE.with_outcome(true)` is [`Observe::OUTCOME`].
    pub const fn with_outcome(mut self, on: bool) -> Self {
        self.outcome = on;
        self
    }

    /// Whether any secret value can reach the events (derivations or secrets).
    pub fn reports_secrets(&self) -> bool {
        self.derivations || self.secrets
    }

    /// Every kind either records: what an instrument asks for on top of a configuration's.
    pub const fn union(self, other: Observe) -> Observe {
        Observe {
            records: self.records || other.records,
            handshake: self.handshake || other.handshake,
            layouts: self.layouts || other.layouts,
            derivations: self.derivations || other.derivations,
            secrets: self.secrets || other.secrets,
            outcome: self.outcome || other.outcome,
        }
    }

    /// Whether a recorder is installed: anything at all is recorded.
    pub fn records_anything(&self) -> bool {
        *self != Observe::NONE
    }
}

impl Default for Observe {
    /// [`Observe::NONE`]: a connection pays nothing for observation unless asked to, and
    /// secrets are reported only when asked for by name.
    fn default() -> Self {
        Observe::NONE
    }
}

/// Where a connection's events go when the caller does not drain them from its queue: the
/// ledger, a key-log writer, a test's collector. Set with `Connection::set_observer`; each event
/// arrives once, in order, as it happens, and only what the configuration's [`Observe`] asks
/// for.
///
/// Records, handshake messages and secrets arrive through typed hooks that borrow from the
/// connection ([`record`](Self::record), [`handshake`](Self::handshake),
/// [`secret`](Self::secret)): their default builds the owned event and hands it to
/// [`observe`](Self::observe) (a recorder), and an observer that overrides them sees the bytes
/// as they pass without copying them. A received record is borrowed where it was opened; a sent
/// record is reported when the caller takes the bytes (`take_output`), from the copy of its
/// plaintext made before sealing overwrote it.
///
/// `Send`, like the connection that holds it: a sink the caller reads while the connection runs
/// is shared through `Arc<Mutex<_>>`.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tls13lab::events::{Event, Observer};
///
/// // An observer the caller keeps a handle on: a shared Vec of events.
/// let seen: Arc<Mutex<Vec<Event>>> = Arc::default();
/// let mut sink: Box<dyn Observer> = Box::new(seen.clone());
/// sink.observe(Event::Closed);
/// assert_eq!(seen.lock().unwrap().len(), 1);
/// ```
pub trait Observer: Send {
    /// One event, in the order things happened.
    fn observe(&mut self, event: Event);

    /// A record as it passes (under `Observe::records`). Default: the owned
    /// [`Event::Record`], to [`observe`](Self::observe).
    fn record(&mut self, record: RecordView<'_>) {
        self.observe(Event::Record(record.to_event()));
    }

    /// A handshake message as it passes (under `Observe::handshake`). Default: the owned
    /// [`Event::Handshake`], to [`observe`](Self::observe).
    fn handshake(&mut self, message: MessageView<'_>) {
        self.observe(Event::Handshake(message.into_event()));
    }

    /// A named secret (under `Observe::secrets` only). Default: the owned [`Event::Secret`],
    /// to [`observe`](Self::observe).
    fn secret(&mut self, secret: SecretView<'_>) {
        self.observe(Event::Secret(secret.to_event()));
    }
}

impl Observer for Vec<Event> {
    fn observe(&mut self, event: Event) {
        self.push(event);
    }
}

impl Observer for VecDeque<Event> {
    fn observe(&mut self, event: Event) {
        self.push_back(event);
    }
}

/// The observer behind a shared sink, poisoned or not: observation must not fail the
/// connection.
fn shared<O>(sink: &std::sync::Mutex<O>) -> std::sync::MutexGuard<'_, O> {
    sink.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A sink the caller shares with the connection (and reads while it runs). Every hook is
/// passed on, so the shared observer's own overrides apply.
impl<O: Observer> Observer for std::sync::Arc<std::sync::Mutex<O>> {
    fn observe(&mut self, event: Event) {
        shared(self).observe(event);
    }

    fn record(&mut self, record: RecordView<'_>) {
        shared(self).record(record);
    }

    fn handshake(&mut self, message: MessageView<'_>) {
        shared(self).handshake(message);
    }

    fn secret(&mut self, secret: SecretView<'_>) {
        shared(self).secret(secret);
    }
}

/// Where a connection pushes events: its own queue, or the caller's [`Observer`].
pub(crate) struct EventQueue {
    pub(crate) observe: Observe,
    pub(crate) queue: VecDeque<Event>,
    sink: Option<Box<dyn Observer>>,
}

impl core::fmt::Debug for EventQueue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EventQueue")
            .field("observe", &self.observe)
            .field("queued", &self.queue.len())
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

impl EventQueue {
    pub(crate) fn new(observe: Observe) -> Self {
        EventQueue {
            observe,
            queue: VecDeque::new(),
            sink: None,
        }
    }

    /// From now on events go to `sink`; those still queued go there first, so it sees every
    /// event in order.
    pub(crate) fn set_sink(&mut self, mut sink: Box<dyn Observer>) {
        for e in self.queue.drain(..) {
            sink.observe(e);
        }
        self.queue = VecDeque::new();
        self.sink = Some(sink);
    }

    /// Whether anything is reported: without it an event is not even built where building it
    /// costs anything.
    pub(crate) fn active(&self) -> bool {
        self.observe.records_anything()
    }

    /// A record as it passes, to the observer's hook or, as an owned event, to the queue.
    /// Called only under `Observe::records`.
    pub(crate) fn record(&mut self, r: RecordView<'_>) {
        match self.sink.as_mut() {
            Some(sink) => sink.record(r),
            None => self.queue.push_back(Event::Record(r.to_event())),
        }
    }

    /// A sent record kept until the caller took its bytes: its owned event goes to the queue as
    /// it is; an observer's hook borrows it.
    pub(crate) fn record_owned(&mut self, r: RecordEvent) {
        match self.sink.as_mut() {
            Some(sink) => sink.record(r.view()),
            None => self.queue.push_back(Event::Record(r)),
        }
    }

    /// A handshake message as it passes. Called only under `Observe::handshake`.
    pub(crate) fn handshake(&mut self, m: MessageView<'_>) {
        match self.sink.as_mut() {
            Some(sink) => sink.handshake(m),
            None => self.queue.push_back(Event::Handshake(m.into_event())),
        }
    }

    /// A named secret. Called only under `Observe::secrets`.
    pub(crate) fn secret(&mut self, s: SecretView<'_>) {
        match self.sink.as_mut() {
            Some(sink) => sink.secret(s),
            None => self.queue.push_back(Event::Secret(s.to_event())),
        }
    }

    pub(crate) fn push(&mut self, e: Event) {
        if !self.observe.records_anything() {
            // Observe::NONE: nothing is reported, to a queue or to an observer.
            return;
        }
        if let Some(sink) = self.sink.as_mut() {
            return sink.observe(e);
        }
        // An outcome-only recorder queues a few events between drains, and the queue keeps its
        // capacity for the connection's life: start it at one slot, not the default four.
        if self.queue.capacity() == 0 && self.observe == Observe::OUTCOME {
            self.queue.reserve_exact(1);
        }
        self.queue.push_back(e);
    }
}

impl DerivationSink for EventQueue {
    fn enabled(&self) -> bool {
        self.observe.derivations
    }

    fn record(&mut self, d: Derivation) {
        self.push(Event::Derivation(d));
    }
}

/// Whether one endpoint's `events` say ECH was accepted: the client's [`Event::EchOffer`] or the
/// server's [`Event::Ech`] (RFC 9849 §6.1.4, §7.1).
pub fn ech_accepted(events: &[Event]) -> bool {
    events.iter().any(|e| match e {
        Event::EchOffer(o) => o.outcome == EchOutcome::Accepted,
        Event::Ech(x) => x.status == EchStatus::Accepted,
        _ => false,
    })
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Serialize bytes as lowercase hex (serde helper; also `ledger::ser_hex`).
pub fn ser_hex<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex(v))
}

fn ser_hex_list<S: serde::Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for b in v {
        seq.serialize_element(&crate::crypto::hash::to_hex(b))?;
    }
    seq.end()
}
