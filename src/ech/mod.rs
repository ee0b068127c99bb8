//! Encrypted ClientHello (RFC 9849): the protocol, both halves. What the RFC says to compute
//! and check lives here, as functions of explicit inputs; the state machines call them with a
//! state's data and keep only the glue (`client/ech.rs`, `server/ech.rs`: randoms drawn from
//! the connection, results moved into states, events, [`EchError`] mapped to the connection's
//! error).
//!
//! - [`wire`]: the extension's forms (§5) and a ClientHello split without re-encoding;
//! - [`inner`]: EncodedClientHelloInner (§5.1) and ClientHelloOuterAAD (§5.2);
//! - [`confirm`]: the acceptance confirmation (§7.2, §7.2.1);
//! - [`client`]: the client half (§6): config choice, ClientHelloOuter sealed around the inner
//!   hello, GREASE, and the server's confirmation checked;
//! - `server.rs`: the server half (§7): the offer parsed and opened with our keys,
//!   ClientHelloInner and the second ClientHelloOuter checked, retry_configs, and the
//!   confirmations written. Crate-private: only the server state machine uses it.
//!
//! Sealing and opening is HPKE's (RFC 9180, `crypto::hpke`); the derivation of a confirmation
//! is passed in, so the connection can report it.

pub mod client;
pub mod confirm;
pub mod inner;
pub(crate) mod server;
pub mod wire;

/// HPKE's info for ECH begins with this (RFC 9849 §6.1): `"tls ech" || 0x00`.
pub const INFO_PREFIX: &[u8] = b"tls ech\0";

/// HPKE's info for ECH: `"tls ech" || 0x00 || ECHConfig`, the config as serialized (§6.1).
pub fn hpke_info(config: &[u8]) -> Vec<u8> {
    [INFO_PREFIX, config].concat()
}

use core::fmt;

use crate::messages::codec::DecodeError;
use crate::messages::enums::AlertDescription;

/// What went wrong with an ECH structure; [`EchError::alert`] names the alert (RFC 9849 §7).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EchError {
    /// A structure did not decode (decode_error, or what the decode error maps to).
    Decode(DecodeError),
    /// EncodedClientHelloInner padding with a non-zero byte (§5.1: illegal_parameter).
    NonZeroPadding,
    /// EncodedClientHelloInner with a non-empty legacy_session_id: the client must empty it
    /// (§5.1), and the server copies the outer one in (illegal_parameter).
    InnerSessionId,
    /// An `ech_outer_extensions` violation (§5.1: illegal_parameter).
    OuterExtensions(&'static str),
    /// A server-side §7 check failed: an inner-type extension from the network, an unknown
    /// ECHClientHelloType, a ClientHelloInner without its inner-type extension or offering
    /// TLS 1.2, a second ClientHelloOuter with another suite or config_id or a non-empty enc
    /// (illegal_parameter).
    Illegal(&'static str),
    /// The ClientHello after a HelloRetryRequest that accepted ECH carries none (§7.1.1:
    /// missing_extension).
    MissingAfterRetry,
    /// The second ClientHelloOuter's payload does not open with the first one's HPKE context
    /// (§7.1.1: decrypt_error).
    DecryptFailed,
    /// Our own inputs were inconsistent (a caller's bug, never a peer's).
    Local(&'static str),
}

impl EchError {
    /// The alert for this error.
    pub fn alert(&self) -> AlertDescription {
        match self {
            EchError::Decode(e) => e.alert(),
            EchError::NonZeroPadding
            | EchError::InnerSessionId
            | EchError::OuterExtensions(_)
            | EchError::Illegal(_) => AlertDescription::IllegalParameter,
            EchError::MissingAfterRetry => AlertDescription::MissingExtension,
            EchError::DecryptFailed => AlertDescription::DecryptError,
            EchError::Local(_) => AlertDescription::InternalError,
        }
    }
}

impl fmt::Display for EchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EchError::Decode(e) => write!(f, "ECH: {e}"),
            EchError::NonZeroPadding => f.write_str("EncodedClientHelloInner padding is not zero"),
            EchError::InnerSessionId => {
                f.write_str("EncodedClientHelloInner carries a legacy_session_id")
            }
            EchError::OuterExtensions(why) => write!(f, "ech_outer_extensions: {why}"),
            EchError::Illegal(why) => write!(f, "ECH: {why}"),
            EchError::MissingAfterRetry => f.write_str(
                "the ClientHello after an ECH-accepting HelloRetryRequest has no encrypted_client_hello",
            ),
            EchError::DecryptFailed => {
                f.write_str("the second ClientHelloOuter's ECH payload does not decrypt")
            }
            EchError::Local(why) => write!(f, "ECH: {why}"),
        }
    }
}

impl std::error::Error for EchError {}
