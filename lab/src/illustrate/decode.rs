//! What a field's bytes mean, in words, and where the RFC or draft defines it.
//!
//! The layouts name every field (and name list entries by their code point already, e.g.
//! `x25519`); this adds the value of the scalar fields (code points by name, lengths and
//! integers in decimal, names as text) and a link per message, extension and record part.

use tls13lab::crypto::cert::mtc::TrustAnchorId;
use tls13lab::messages::enums::{
    AlertDescription, AlertLevel, CipherSuite, ContentType, HandshakeType, HpkeAeadId, HpkeKdfId,
    NamedGroup, SignatureScheme,
};
use tls13lab::messages::handshake::HRR_RANDOM;

/// The span of one ID in a `trust_anchors` list (draft-ietf-tls-trust-anchor-ids §4.1).
pub const TRUST_ANCHOR_ID: &str = "TrustAnchorID";

/// A link to a section of an RFC or draft: its label and address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cite {
    /// e.g. "RFC 8446 §4.1.2".
    pub label: String,
    /// e.g. `https://www.rfc-editor.org/rfc/rfc8446#section-4.1.2`.
    pub href: String,
}

/// RFC `n` section `sec`.
pub fn rfc(n: u16, sec: &str) -> Cite {
    Cite {
        label: format!("RFC {n} §{sec}"),
        href: format!("https://www.rfc-editor.org/rfc/rfc{n}#section-{sec}"),
    }
}

/// An Internet-Draft by name (its latest version at the datatracker).
pub fn draft(name: &str) -> Cite {
    Cite {
        label: name.to_string(),
        href: format!("https://datatracker.ietf.org/doc/html/{name}"),
    }
}

/// Section `sec` of an Internet-Draft.
pub fn draft_section(name: &str, sec: &str) -> Cite {
    Cite {
        label: format!("{name} §{sec}"),
        href: format!("https://datatracker.ietf.org/doc/html/{name}#section-{sec}"),
    }
}

/// Where a handshake message is defined (`hrr`: a ServerHello carrying the HelloRetryRequest
/// random).
pub fn message_cite(t: HandshakeType, hrr: bool) -> Option<Cite> {
    Some(match t {
        HandshakeType::ClientHello => rfc(8446, "4.1.2"),
        HandshakeType::ServerHello if hrr => rfc(8446, "4.1.4"),
        HandshakeType::ServerHello => rfc(8446, "4.1.3"),
        HandshakeType::NewSessionTicket => rfc(8446, "4.6.1"),
        HandshakeType::EndOfEarlyData => rfc(8446, "4.5"),
        HandshakeType::EncryptedExtensions => rfc(8446, "4.3.1"),
        HandshakeType::Certificate => rfc(8446, "4.4.2"),
        HandshakeType::CertificateRequest => rfc(8446, "4.3.2"),
        HandshakeType::CertificateVerify => rfc(8446, "4.4.3"),
        HandshakeType::Finished => rfc(8446, "4.4.4"),
        HandshakeType::KeyUpdate => rfc(8446, "4.6.3"),
        HandshakeType::CompressedCertificate => rfc(8879, "4"),
        _ => return None,
    })
}

/// Where an extension is defined, by the name the layout gives it (`key_share (51)`).
pub fn extension_cite(span_name: &str) -> Option<Cite> {
    let name = span_name.split(" (").next().unwrap_or(span_name);
    Some(match name {
        "server_name" => rfc(6066, "3"),
        "supported_groups" => rfc(8446, "4.2.7"),
        "signature_algorithms" | "signature_algorithms_cert" => rfc(8446, "4.2.3"),
        "application_layer_protocol_negotiation" => rfc(7301, "3.1"),
        "padding" => rfc(7685, "3"),
        "record_size_limit" => rfc(8449, "4"),
        "compress_certificate" => rfc(8879, "3"),
        "pre_shared_key" => rfc(8446, "4.2.11"),
        "early_data" => rfc(8446, "4.2.10"),
        "supported_versions" => rfc(8446, "4.2.1"),
        "cookie" => rfc(8446, "4.2.2"),
        "psk_key_exchange_modes" => rfc(8446, "4.2.9"),
        "certificate_authorities" => rfc(8446, "4.2.4"),
        "oid_filters" => rfc(8446, "4.2.5"),
        "post_handshake_auth" => rfc(8446, "4.2.6"),
        "key_share" => rfc(8446, "4.2.8"),
        "encrypted_client_hello" => rfc(9849, "5"),
        "ech_outer_extensions" => rfc(9849, "5.1"),
        "renegotiation_info" => rfc(5746, "3.2"),
        "session_ticket" => rfc(5077, "3.2"),
        "status_request" => rfc(6066, "8"),
        "signed_certificate_timestamp" => rfc(6962, "3.3.1"),
        "trust_anchors" => draft_section("draft-ietf-tls-trust-anchor-ids", "4.1"),
        _ => return None,
    })
}

/// Where a field with no extension or message of its own is defined: hybrid groups and their
/// shares, ML-DSA schemes.
pub fn field_cite(name: &str) -> Option<Cite> {
    let lower = name.to_ascii_lowercase();
    if lower.contains("mlkem") || lower.contains("ml-kem") {
        Some(draft("draft-ietf-tls-ecdhe-mlkem"))
    } else if lower.starts_with("mldsa") {
        Some(draft("draft-ietf-tls-mldsa"))
    } else {
        None
    }
}

/// Where a part of an X.509 certificate is defined (RFC 5280 §4.1), by its span's name and its
/// parent's; a Merkle Tree Certificate's MTCProof by draft-ietf-plants-merkle-tree-certs.
pub fn x509_cite(name: &str, parent: &str) -> Option<Cite> {
    if let Some(sec) = super::der::mtc_section(name, parent) {
        return Some(draft_section("draft-ietf-plants-merkle-tree-certs", sec));
    }
    let sec = match name {
        super::der::CERTIFICATE => "4.1",
        "tbsCertificate" => "4.1.1.1",
        "signatureAlgorithm" => "4.1.1.2",
        "signatureValue" => "4.1.1.3",
        "version" => "4.1.2.1",
        "serialNumber" => "4.1.2.2",
        "signature" => "4.1.2.3",
        "issuer" => "4.1.2.4",
        "validity" => "4.1.2.5",
        "subject" => "4.1.2.6",
        "subjectPublicKeyInfo" => "4.1.2.7",
        "extensions" => "4.1.2.9",
        _ => return None,
    };
    Some(rfc(5280, sec))
}

fn u(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b))
}

fn version(v: u64) -> String {
    let name = match v {
        0x0304 => "TLS 1.3",
        0x0303 => "TLS 1.2",
        0x0302 => "TLS 1.1",
        0x0301 => "TLS 1.0",
        _ => "unknown",
    };
    format!("{v:#06x} ({name})")
}

/// Text, if `bytes` is printable ASCII.
pub fn ascii(bytes: &[u8]) -> Option<String> {
    (!bytes.is_empty() && bytes.iter().all(|b| (0x20..0x7f).contains(b)))
        .then(|| String::from_utf8_lossy(bytes).into_owned())
}

/// The value of a leaf named `name` whose parent is `parent`, in a message of type `msg`
/// (`None` in a record header or a record's content), in words; `None` when the bytes say it
/// all (random values, keys, signatures).
pub fn value(name: &str, parent: &str, msg: Option<HandshakeType>, bytes: &[u8]) -> Option<String> {
    let n = u(bytes);
    let small = bytes.len() <= 4;
    Some(match name {
        "msg_type" => format!("{} ({n})", HandshakeType::from(n as u8)),
        "length" if small => format!("{n}"),
        "legacy_version" | "legacy_record_version" | "selected_version" if bytes.len() == 2 => {
            version(n)
        }
        "content_type" | "type (inner)" if bytes.len() == 1 => {
            format!("{} ({n})", ContentType::from(n as u8))
        }
        "type" if bytes.len() == 2 => format!("{n}"),
        "cipher_suite" if bytes.len() == 2 => CipherSuite::from(n as u16).to_string(),
        "algorithm" if bytes.len() == 2 && msg == Some(HandshakeType::CertificateVerify) => {
            SignatureScheme::from(n as u16).to_string()
        }
        "group" | "selected_group" if bytes.len() == 2 => NamedGroup::from(n as u16).to_string(),
        "legacy_compression_method" => format!("{n} (null)"),
        "ECHClientHelloType" => match n {
            0 => "outer (0)".to_string(),
            1 => "inner (1)".to_string(),
            _ => format!("{n}"),
        },
        "kdf_id" if bytes.len() == 2 => HpkeKdfId::from(n as u16).to_string(),
        "aead_id" if bytes.len() == 2 => HpkeAeadId::from(n as u16).to_string(),
        "config_id" if bytes.len() == 1 => format!("{n}"),
        "name_type" if n == 0 => "host_name (0)".to_string(),
        "random" if bytes == HRR_RANDOM => {
            "SHA-256(\"HelloRetryRequest\"): this ServerHello is a HelloRetryRequest".to_string()
        }
        "ticket_lifetime" if small => format!("{n} s"),
        "ticket_age_add" | "obfuscated_ticket_age" if small => format!("{n}"),
        "max_early_data_size"
        | "record_size_limit"
        | "uncompressed_length"
        | "selected_identity"
            if small =>
        {
            format!("{n}")
        }
        "request_update" => match n {
            0 => "update_not_requested (0)".to_string(),
            1 => "update_requested (1)".to_string(),
            _ => format!("{n}"),
        },
        "level" => format!("{} ({n})", AlertLevel::from(n as u8)),
        "description" => format!("{} ({n})", AlertDescription::from(n as u8)),
        "data" if matches!(parent, "name" | "protocol_name" | "host_name") => {
            format!("\"{}\"", ascii(bytes)?)
        }
        // draft-ietf-tls-trust-anchor-ids §3: shown in its ASCII form.
        "id" if parent == TRUST_ANCHOR_ID => TrustAnchorId::from_binary(bytes)?.to_ascii(),
        "length" if parent == TRUST_ANCHOR_ID || parent.ends_with("TrustAnchorList") => {
            format!("{n}")
        }
        _ if bytes.len() == 2 && (parent.ends_with("versions")) => version(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_words() {
        assert_eq!(
            value("cipher_suite", "", None, &[0x13, 0x01]).as_deref(),
            Some("TLS_AES_128_GCM_SHA256")
        );
        assert_eq!(
            value("msg_type", "", None, &[2]).as_deref(),
            Some("server_hello (2)")
        );
        assert_eq!(
            value("legacy_version", "", None, &[3, 3]).as_deref(),
            Some("0x0303 (TLS 1.2)")
        );
        assert_eq!(
            value("data", "name", None, b"a<b").as_deref(),
            Some("\"a<b\"")
        );
        assert_eq!(value("random", "", None, &[0; 32]), None);
        assert_eq!(
            extension_cite("key_share (51)").unwrap().href,
            "https://www.rfc-editor.org/rfc/rfc8446#section-4.2.8"
        );
        assert!(field_cite("X25519MLKEM768 encapsulation key").is_some());
    }
}
