//! The wire format: handshake messages, extensions, alerts (RFC 8446 §4, §6).
//!
//! - [`codec`]: bounded [`Reader`] and length-back-filling [`Writer`] (§3).
//! - [`enums`]: open code-point enums.
//! - [`ech`]: ECHConfig and ECHConfigList (RFC 9849 §4).
//! - [`extensions`]: [`Extension`], decoded per message context (§4.2).
//! - [`handshake`]: [`HandshakeMessage`] = parse + exact wire bytes (§4).
//! - [`layout`]: the [`Span`] tree naming every byte of an encoded message.
//!
//! Decoding never panics on peer input; every length prefix is a bounded sub-reader that must be
//! consumed, and every decoded value re-encodes to the bytes it came from.
//!
//! Decoding produces owned values. Sending needs no owned value: [`OutgoingMessage`],
//! [`ClientHelloOut`] and [`OutgoingExtension`] borrow what the sender holds (its configuration,
//! key shares, certificate chain, verify_data) and are written by the same encoders, so they
//! produce the same bytes and layouts without copying that data first.

pub mod codec;
pub mod ech;
pub mod enums;
pub mod extensions;
pub mod handshake;
pub mod layout;

pub use codec::{DecodeError, Reader, Writer};
pub use enums::{
    AlertDescription, AlertLevel, CertificateCompressionAlgorithm, CertificateStatusType,
    CipherSuite, ContentType, ExtensionType, HandshakeType, KeyUpdateRequest, NamedGroup,
    ProtocolVersion, PskKeyExchangeMode, ServerNameType, SignatureScheme,
};
pub use extensions::{
    decode_extensions, encode_extensions, encode_outgoing_extensions, Extension, ExtensionContext,
    KeyShareEntry, OfferedPsks, OutgoingExtension, PskIdentity, ServerName,
};
pub use handshake::{
    handshake_header, CertificateEntry, CertificatePayload, CertificateRequest, CertificateVerify,
    ClientHello, ClientHelloOut, CompressedCertificate, DecodeContext, HandshakeMessage,
    HandshakePayload, NewSessionTicket, OutgoingMessage, ServerHello, DOWNGRADE_TLS11,
    DOWNGRADE_TLS12, HRR_RANDOM,
};
pub use layout::Span;

/// ```text
/// struct {
///     AlertLevel level;
///     AlertDescription description;
/// } Alert;
/// ```
/// §6. In TLS 1.3 the severity is implied by the description and "the \"level\" field can
/// safely be ignored"; it is kept for display and byte-exact echo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alert {
    /// warning or fatal.
    pub level: AlertLevel,
    /// What happened.
    pub description: AlertDescription,
}

impl Alert {
    /// The two payload bytes.
    pub fn encode(&self) -> [u8; 2] {
        [self.level.into(), self.description.into()]
    }

    /// Decodes an alert record's content, which must be exactly two bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let alert = Alert {
            level: r.u8("alert level")?.into(),
            description: r.u8("alert description")?.into(),
        };
        r.finish("alert")?;
        Ok(alert)
    }
}

/// The compatibility-mode ChangeCipherSpec record content: "the single byte value 0x01"
/// (§5, §D.4). Anything else must be answered with unexpected_message (the caller maps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangeCipherSpec;

impl ChangeCipherSpec {
    /// The record content.
    pub const PAYLOAD: [u8; 1] = [0x01];

    /// `[0x01]`.
    pub fn encode(&self) -> [u8; 1] {
        Self::PAYLOAD
    }

    /// Accepts exactly `[0x01]`.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        match bytes {
            [0x01] => Ok(ChangeCipherSpec),
            [] => Err(DecodeError::Truncated {
                what: "change_cipher_spec",
            }),
            [0x01, ..] => Err(DecodeError::Trailing {
                what: "change_cipher_spec",
            }),
            _ => Err(DecodeError::Invalid {
                what: "change_cipher_spec",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alert_round_trips_and_rejects_bad_lengths() {
        let a = Alert {
            level: AlertLevel::Warning,
            description: AlertDescription::CloseNotify,
        };
        assert_eq!(a.encode(), [1, 0]);
        assert_eq!(Alert::decode(&[1, 0]), Ok(a));
        let odd = Alert::decode(&[9, 200]).unwrap();
        assert_eq!(odd.encode(), [9, 200], "unknown values round-trip");
        assert!(Alert::decode(&[2]).is_err());
        assert!(Alert::decode(&[2, 50, 0]).is_err());
    }

    #[test]
    fn change_cipher_spec_is_exactly_one() {
        assert_eq!(ChangeCipherSpec::decode(&[1]), Ok(ChangeCipherSpec));
        assert_eq!(ChangeCipherSpec.encode(), [1]);
        assert!(ChangeCipherSpec::decode(&[]).is_err());
        assert!(ChangeCipherSpec::decode(&[2]).is_err());
        assert!(ChangeCipherSpec::decode(&[1, 1]).is_err());
    }
}
