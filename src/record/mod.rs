//! The record layer (RFC 8446 §5): framing, protection and handshake reassembly.
//!
//! ```text
//! bytes ─► Deframer ─► OpaqueRecord ─► RecordProtector::open ─► InnerPlaintext ─► HandshakeJoiner ─► messages
//!                        (plaintext records skip `open`)                      (type Handshake)
//! ```
//!
//! - [`deframer`]: splits a byte stream into records, checking each header before buffering.
//! - [`protect`]: AEAD seal/open with per-record nonces and inner-plaintext padding.
//! - [`joiner`]: joins handshake messages split across records, bounded in size, and says when a
//!   message ended exactly at a record's end (keys change only there, §5.1).

pub mod deframer;
pub mod joiner;
pub mod protect;

pub use deframer::{Deframer, OpaqueRecord};
pub use joiner::{HandshakeJoiner, MAX_CLIENT_HELLO};
pub use protect::{sealed_len, InnerPlaintext, RecordProtector};

use crate::messages::enums::{AlertDescription, ContentType, HandshakeType};

/// Largest TLSPlaintext.fragment and TLSInnerPlaintext.content (RFC 8446 §5.1).
pub const MAX_PLAINTEXT: usize = 1 << 14;
/// Largest TLSCiphertext.encrypted_record (RFC 8446 §5.2).
pub const MAX_CIPHERTEXT: usize = (1 << 14) + 256;
/// Record header: type, legacy_record_version, length (RFC 8446 §5.1).
pub const HEADER_LEN: usize = 5;
/// The longest record a peer may send: header and the largest TLSCiphertext (§5.2).
pub const MAX_RECORD_LEN: usize = HEADER_LEN + MAX_CIPHERTEXT;
/// How many bytes of protected records a server that rejected 0-RTT may skip while it looks
/// for the first record that opens under the handshake key (RFC 8446 §4.2.10): 16 records of
/// the largest size. Must cover the max_early_data_size our tickets advertise plus per-record
/// overhead; it bounds the decryption attempts a client can make us waste.
pub const MAX_EARLY_SKIP: usize = 16 * MAX_CIPHERTEXT;
/// legacy_record_version of every record we send except a first ClientHello (§5.1).
pub const LEGACY_RECORD_VERSION: u16 = 0x0303;

/// A record-layer failure, each mapped to exactly one alert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// A record longer than the RFC allows: TLSPlaintext over 2^14, TLSCiphertext over
    /// 2^14 + 256, or a decrypted TLSInnerPlaintext over 2^14 + 1 (§5.1, §5.2, §5.4).
    RecordOverflow,
    /// AEAD authentication failed (§5.2).
    BadRecordMac,
    /// The decrypted inner plaintext was all zeros: no content type (§5.4).
    NoContentType,
    /// A zero-length Handshake or Alert fragment (§5.1, §5.4).
    EmptyFragment(ContentType),
    /// A record type that is not one of TLS 1.3's four (§5), or a protected record whose outer
    /// type is not application_data (§5.2).
    UnexpectedContentType(ContentType),
    /// A handshake message declares a body longer than we accept (checked before buffering it).
    HandshakeTooLarge {
        /// Message type.
        typ: HandshakeType,
        /// Declared body length.
        len: usize,
        /// Our limit.
        max: usize,
    },
    /// Sending would need a sequence number past 2^64 - 1; the RFC requires rekeying or closing
    /// (§5.3).
    SeqExhausted,
    /// Asked to seal more than 2^14 bytes of content plus padding (§5.4): the caller must
    /// fragment.
    PlaintextTooLong,
    /// The record key has the wrong length for its AEAD.
    BadKey,
}

impl RecordError {
    /// The alert to send (RFC 8446 §5, §6.2).
    pub fn alert(&self) -> AlertDescription {
        match self {
            RecordError::RecordOverflow => AlertDescription::RecordOverflow,
            RecordError::BadRecordMac => AlertDescription::BadRecordMac,
            RecordError::NoContentType
            | RecordError::EmptyFragment(_)
            | RecordError::UnexpectedContentType(_) => AlertDescription::UnexpectedMessage,
            // A CompressedCertificate we will not decompress because it is too large to
            // buffer: RFC 8879 §4 answers every CompressedCertificate that "cannot be
            // decompressed" with bad_certificate, whatever the reason.
            RecordError::HandshakeTooLarge {
                typ: HandshakeType::CompressedCertificate,
                ..
            } => AlertDescription::BadCertificate,
            // Any other length field outside what we will buffer: decode_error ("the length of
            // the message was incorrect", §6.2), as the message cannot be decoded here.
            RecordError::HandshakeTooLarge { .. } => AlertDescription::DecodeError,
            RecordError::SeqExhausted | RecordError::PlaintextTooLong | RecordError::BadKey => {
                AlertDescription::InternalError
            }
        }
    }
}

impl core::fmt::Display for RecordError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RecordError::RecordOverflow => f.write_str("record too long"),
            RecordError::BadRecordMac => f.write_str("record authentication failed"),
            RecordError::NoContentType => f.write_str("inner plaintext has no content type"),
            RecordError::EmptyFragment(t) => write!(f, "zero-length {t} fragment"),
            RecordError::UnexpectedContentType(t) => write!(f, "unexpected record type {t}"),
            RecordError::HandshakeTooLarge { typ, len, max } => {
                write!(f, "{typ} declares {len} bytes, limit {max}")
            }
            RecordError::SeqExhausted => f.write_str("record sequence number exhausted"),
            RecordError::PlaintextTooLong => f.write_str("plaintext exceeds 2^14 bytes"),
            RecordError::BadKey => f.write_str("record key has the wrong length"),
        }
    }
}

impl std::error::Error for RecordError {}

/// A TLSPlaintext record on the wire (RFC 8446 §5.1): ClientHello, ServerHello, HRR, alerts
/// before keys, and the compatibility-mode ChangeCipherSpec. `payload` must be at most 2^14
/// bytes; the caller fragments.
pub fn plaintext_record(typ: ContentType, version: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN + payload.len());
    v.extend_from_slice(&plaintext_header(typ, version, payload.len()));
    v.extend_from_slice(payload);
    v
}

/// The 5-byte TLSPlaintext header (type, legacy_record_version, length) of a `len`-byte
/// fragment (RFC 8446 §5.1); the length saturates at 2^16 - 1.
pub fn plaintext_header(typ: ContentType, version: u16, len: usize) -> [u8; HEADER_LEN] {
    let v = version.to_be_bytes();
    let l = (len.min(usize::from(u16::MAX)) as u16).to_be_bytes();
    [typ.to_repr(), v[0], v[1], l[0], l[1]]
}

/// How much zero padding to add to protected records (RFC 8446 §5.4): padding hides content
/// lengths from an observer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum PaddingPolicy {
    /// No padding.
    #[default]
    None,
    /// This many zero bytes on every record.
    Fixed(usize),
    /// Pad the inner plaintext (content + type byte) to a multiple of this many bytes.
    ToMultiple(usize),
}

impl PaddingPolicy {
    /// Padding for `plaintext_len` bytes of content, clamped so content + padding stays within
    /// 2^14 (the TLSInnerPlaintext limit of 2^14 + 1 includes the type byte, §5.4).
    pub fn padding_for(&self, plaintext_len: usize) -> usize {
        let room = MAX_PLAINTEXT.saturating_sub(plaintext_len);
        let want = match *self {
            PaddingPolicy::None => 0,
            PaddingPolicy::Fixed(n) => n,
            PaddingPolicy::ToMultiple(0) => 0,
            PaddingPolicy::ToMultiple(m) => {
                let inner = plaintext_len + 1;
                (m - inner % m) % m
            }
        };
        want.min(room)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_policy() {
        assert_eq!(PaddingPolicy::None.padding_for(10), 0);
        assert_eq!(PaddingPolicy::Fixed(7).padding_for(10), 7);
        assert_eq!(PaddingPolicy::ToMultiple(16).padding_for(10), 5);
        assert_eq!(PaddingPolicy::ToMultiple(16).padding_for(15), 0);
        assert_eq!(PaddingPolicy::ToMultiple(0).padding_for(15), 0);
        assert_eq!(PaddingPolicy::Fixed(100).padding_for(MAX_PLAINTEXT - 3), 3);
        assert_eq!(
            PaddingPolicy::ToMultiple(4096).padding_for(MAX_PLAINTEXT),
            0
        );
    }

    #[test]
    fn plaintext_record_header() {
        assert_eq!(
            plaintext_record(ContentType::ChangeCipherSpec, 0x0303, &[1]),
            [20, 3, 3, 0, 1, 1]
        );
    }

    #[test]
    fn alerts() {
        assert_eq!(
            RecordError::NoContentType.alert(),
            AlertDescription::UnexpectedMessage
        );
        assert_eq!(
            RecordError::BadRecordMac.alert(),
            AlertDescription::BadRecordMac
        );
        assert_eq!(
            RecordError::RecordOverflow.alert(),
            AlertDescription::RecordOverflow
        );
    }
}
