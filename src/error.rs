//! Errors. Every way a peer can misbehave has its own name and exactly one alert (RFC 8446 §6.2).

use core::fmt;

use crate::crypto::cert::CertError;
use crate::crypto::kx::KxError;
use crate::crypto::sign::SigError;
use crate::messages::codec::DecodeError;
use crate::messages::enums::{AlertDescription, ContentType, ExtensionType, HandshakeType};
use crate::record::RecordError;

/// A specific protocol violation by the peer. [`PeerMisbehaved::alert`] names the alert we send.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerMisbehaved {
    /// A handshake message that is not allowed in the current state (§4: unexpected_message).
    UnexpectedMessage {
        /// What the state machine waits for.
        expected: &'static str,
        /// What arrived.
        got: HandshakeType,
    },
    /// A record of a content type not allowed now (§5).
    UnexpectedContentType(ContentType),
    /// Application data before the keys for it exist (§5.1).
    ApplicationDataBeforeHandshake,
    /// Handshake bytes left in a record after a message that changes keys (§5.1).
    KeyChangeNotOnRecordBoundary,
    /// ChangeCipherSpec outside the handshake or with a payload other than 0x01 (§5).
    BadChangeCipherSpec,
    /// A zero-length Handshake or Alert record (§5.1, §5.4).
    EmptyRecord,
    /// Too many consecutive empty records or padding-only records (resource limit).
    TooManyEmptyRecords,
    /// Too many KeyUpdates without application data in between (resource limit).
    TooManyKeyUpdates,
    /// legacy_version / legacy_compression_method wrong (§4.1.2, §4.1.3).
    BadLegacyField(&'static str),
    /// The peer does not offer or select TLS 1.3 (§4.2.1: protocol_version).
    UnsupportedVersion,
    /// A ClientHello offering TLS 1.3 whose legacy_version is below 0x0303 (§D.5:
    /// protocol_version).
    LegacyVersionTooLow(u16),
    /// A TLS 1.3-only ClientHello offering an obsolete group (§4.2.7, §B.3.1.4).
    ObsoleteGroup(crate::messages::enums::NamedGroup),
    /// A second ChangeCipherSpec: compatibility mode sends exactly one (§D.4), and §5's
    /// "drop it" covers that one.
    SecondChangeCipherSpec,
    /// ServerHello.random ends with a downgrade sentinel (§4.1.3).
    DowngradeSentinel,
    /// legacy_session_id_echo does not echo ours (§4.1.3).
    SessionIdMismatch,
    /// No cipher suite in common (§4.1.1).
    NoCommonCipherSuite,
    /// No group in common or no usable key share (§4.1.1).
    NoCommonGroup,
    /// No signature scheme in common (§4.4.2.2).
    NoCommonSignatureScheme,
    /// The client's `trust_anchors` matched none of our paths and every usable one may be sent
    /// only when asked for (draft-ietf-tls-trust-anchor-ids §4.2, §6.3: handshake_failure).
    NoRequestedTrustAnchor,
    /// The server picked something we did not offer (§4.1.3, §4.2.8).
    SelectedUnoffered(&'static str),
    /// A required extension is missing (§9.2).
    MissingExtension(ExtensionType),
    /// An extension in a message that must not carry it, or unsolicited in a response (§4.2).
    UnsolicitedExtension(ExtensionType),
    /// An extension that is malformed in context (e.g. duplicate groups in key_share, §4.2.8).
    IllegalExtension(&'static str),
    /// pre_shared_key was not the last ClientHello extension (§4.2.11).
    PskNotLast,
    /// A second HelloRetryRequest (§4.1.4).
    SecondHelloRetry,
    /// A ServerHello that does not confirm ECH after a HelloRetryRequest that did (RFC 9849
    /// §6.1.5).
    EchAcceptanceWithdrawn,
    /// A server that rejected ECH selected a PSK: the outer ClientHello offers only a GREASE
    /// one (RFC 9849 §6.1.2).
    EchRejectedButResumed,
    /// A HelloRetryRequest that would not change the ClientHello (§4.1.4).
    HelloRetryChangesNothing,
    /// Cipher suite or other parameter differs from the HelloRetryRequest (§4.1.4).
    HelloRetryMismatch(&'static str),
    /// ClientHello after a HelloRetryRequest that does not follow it (§4.1.2).
    SecondClientHelloMismatch(&'static str),
    /// A Finished whose verify_data is wrong (§4.4.4).
    BadFinished,
    /// A PSK binder that does not verify (§4.2.11.2).
    BadBinder,
    /// A CertificateVerify signature that does not verify (§4.4.3).
    BadCertificateVerify,
    /// The server sent an empty Certificate (§4.4.2.4).
    NoServerCertificate,
    /// The server requires a client certificate and got none (§4.4.2.4).
    NoClientCertificate,
    /// A signature scheme we did not offer (§4.4.3).
    UnofferedSignatureScheme,
    /// Early data beyond max_early_data_size (§4.2.10).
    TooMuchEarlyData,
    /// A ticket lifetime over 7 days (§4.6.1).
    TicketLifetimeTooLong,
    /// The ALPN protocol the server picked was not offered (RFC 7301 §3.2).
    UnofferedAlpn,
    /// We offered ALPN and share no protocol with the peer (RFC 7301 §3.2).
    NoApplicationProtocol,
    /// A record_size_limit below 64 (RFC 8449 §4).
    BadRecordSizeLimit,
    /// A CompressedCertificate in an algorithm our compress_certificate did not list (RFC 8879
    /// §4: "MUST be one of the algorithms listed in the peer's compress_certificate extension").
    UnofferedCompressionAlgorithm(crate::messages::enums::CertificateCompressionAlgorithm),
    /// A CompressedCertificate whose uncompressed_length is over our limit for a Certificate
    /// (RFC 8879 §5: the same limit as without compression), refused before decompressing.
    CompressedCertificateTooLarge,
    /// A CompressedCertificate that does not decompress to exactly uncompressed_length bytes
    /// (RFC 8879 §4: bad_certificate).
    BadCompressedCertificate(&'static str),
    /// An Encrypted ClientHello violation (RFC 9849 §5, §7); the error names its alert.
    Ech(crate::ech::EchError),
}

impl PeerMisbehaved {
    /// The one alert this violation is answered with.
    pub fn alert(&self) -> AlertDescription {
        use AlertDescription as A;
        use PeerMisbehaved as P;
        match self {
            P::UnexpectedMessage { .. }
            | P::UnexpectedContentType(_)
            | P::ApplicationDataBeforeHandshake
            | P::KeyChangeNotOnRecordBoundary
            | P::BadChangeCipherSpec
            | P::SecondChangeCipherSpec
            | P::EmptyRecord
            | P::TooManyEmptyRecords
            | P::TooManyKeyUpdates => A::UnexpectedMessage,
            P::BadLegacyField(_)
            | P::DowngradeSentinel
            | P::SessionIdMismatch
            | P::SelectedUnoffered(_)
            | P::IllegalExtension(_)
            | P::PskNotLast
            | P::HelloRetryChangesNothing
            | P::HelloRetryMismatch(_)
            | P::SecondClientHelloMismatch(_)
            | P::UnofferedSignatureScheme
            | P::TicketLifetimeTooLong
            | P::BadRecordSizeLimit
            | P::ObsoleteGroup(_)
            | P::EchAcceptanceWithdrawn
            | P::EchRejectedButResumed => A::IllegalParameter,
            P::SecondHelloRetry => A::UnexpectedMessage,
            P::UnsupportedVersion | P::LegacyVersionTooLow(_) => A::ProtocolVersion,
            P::NoCommonCipherSuite
            | P::NoCommonGroup
            | P::NoCommonSignatureScheme
            | P::NoRequestedTrustAnchor => A::HandshakeFailure,
            P::MissingExtension(_) => A::MissingExtension,
            P::UnsolicitedExtension(_) => A::UnsupportedExtension,
            P::BadFinished | P::BadBinder | P::BadCertificateVerify => A::DecryptError,
            P::NoServerCertificate => A::DecodeError,
            P::NoClientCertificate => A::CertificateRequired,
            P::TooMuchEarlyData => A::UnexpectedMessage,
            P::UnofferedAlpn => A::IllegalParameter,
            P::NoApplicationProtocol => A::NoApplicationProtocol,
            P::UnofferedCompressionAlgorithm(_) => A::IllegalParameter,
            P::CompressedCertificateTooLarge | P::BadCompressedCertificate(_) => A::BadCertificate,
            P::Ech(e) => e.alert(),
        }
    }
}

impl fmt::Display for PeerMisbehaved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerMisbehaved::UnexpectedMessage { expected, got } => {
                write!(f, "unexpected {got} (expected {expected})")
            }
            PeerMisbehaved::Ech(e) => write!(f, "{e}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// Everything that can go wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The peer sent bytes that do not parse.
    Decode(DecodeError),
    /// The record layer rejected a record.
    Record(RecordError),
    /// The peer broke a protocol rule.
    Peer(PeerMisbehaved),
    /// The peer's key share is unusable.
    KeyExchange(KxError),
    /// The peer's certificate chain does not validate.
    Certificate(CertError),
    /// The peer's Merkle Tree Certificate does not verify (draft-ietf-plants-merkle-tree-certs).
    Mtc(crate::crypto::cert::mtc::MtcError),
    /// A signature could not be produced or checked.
    Signature(SigError),
    /// The peer sent a fatal alert (or a warning other than close_notify/user_canceled).
    AlertReceived(crate::messages::enums::AlertDescription),
    /// A configuration that cannot work.
    Config(String),
    /// The caller used the API in a state where that is not possible. Inside a call taking
    /// input it is an invariant that did not hold: the connection fails and the peer gets
    /// internal_error (`alert()` is `None`: the caller's own misuse sends nothing).
    InvalidState(&'static str),
    /// The connection already failed or was closed.
    Closed,
    /// The server rejected our Encrypted ClientHello and completed the handshake with the outer
    /// one, authenticated for the config's public_name only (RFC 9849 §6.1.6, §6.1.7): we sent
    /// ech_required instead of our Finished. Never a connection; its tickets are ignored.
    /// `retry_configs` is the ECHConfigList the server sent to retry with, if any.
    EchRejected {
        /// ECHEncryptedExtensions.retry_configs (the ECHConfigList with its length).
        retry_configs: Option<Vec<u8>>,
    },
}

impl Error {
    /// The alert we send (or sent) for this error, if any.
    pub fn alert(&self) -> Option<AlertDescription> {
        match self {
            Error::Decode(e) => Some(e.alert()),
            Error::Record(e) => Some(e.alert()),
            Error::Peer(p) => Some(p.alert()),
            Error::KeyExchange(e) => Some(e.alert()),
            Error::Certificate(e) => Some(e.alert()),
            Error::Mtc(e) => Some(e.alert()),
            Error::Signature(e) => Some(e.alert()),
            Error::AlertReceived(_) | Error::Closed | Error::InvalidState(_) => None,
            Error::Config(_) => Some(AlertDescription::InternalError),
            Error::EchRejected { .. } => Some(AlertDescription::EchRequired),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Decode(e) => write!(f, "decode error: {e:?}"),
            Error::Record(e) => write!(f, "record layer: {e:?}"),
            Error::Peer(p) => write!(f, "peer misbehaved: {p}"),
            Error::KeyExchange(e) => write!(f, "key exchange: {e:?}"),
            // CertError names the certificate and the reason itself, in one line.
            Error::Certificate(e) => write!(f, "{e}"),
            Error::Mtc(e) => write!(f, "Merkle Tree Certificate: {e}"),
            Error::Signature(e) => write!(f, "signature: {e:?}"),
            Error::AlertReceived(a) => write!(f, "received fatal alert {a}"),
            Error::Config(s) => write!(f, "configuration: {s}"),
            Error::InvalidState(s) => write!(f, "invalid state: {s}"),
            Error::Closed => f.write_str("connection closed"),
            Error::EchRejected { retry_configs } => write!(
                f,
                "the server rejected ECH ({})",
                if retry_configs.is_some() {
                    "it sent retry_configs"
                } else {
                    "no retry_configs"
                }
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Decode(e)
    }
}
impl From<RecordError> for Error {
    fn from(e: RecordError) -> Self {
        Error::Record(e)
    }
}
impl From<PeerMisbehaved> for Error {
    fn from(e: PeerMisbehaved) -> Self {
        Error::Peer(e)
    }
}
impl From<KxError> for Error {
    fn from(e: KxError) -> Self {
        Error::KeyExchange(e)
    }
}
impl From<CertError> for Error {
    fn from(e: CertError) -> Self {
        Error::Certificate(e)
    }
}
impl From<SigError> for Error {
    fn from(e: SigError) -> Self {
        Error::Signature(e)
    }
}
