//! Where the bytes of one X.509 certificate go (RFC 5280 §4.1): the SubjectPublicKeyInfo, the
//! signature, the embedded SCT list (RFC 6962 §3.3) and the other extensions, so the ledger can
//! say what a Certificate message (RFC 8446 §4.4.2) spends its bytes on. No I/O, no crypto:
//! a bounded DER walk that fails, never panics, on malformed input (it reads peer certificates).
//!
//! ```text
//! Certificate  ::=  SEQUENCE  {                      header
//!      tbsCertificate       TBSCertificate,          tbs = spki + sct_list + other_extensions + tbs_other
//!      signatureAlgorithm   AlgorithmIdentifier,     signature_algorithm
//!      signatureValue       BIT STRING  }            signature
//! ```

use core::fmt;
use core::ops::Range;

use serde::Serialize;

/// id-ce-embeddedSCTList / SignedCertificateTimestampList, 1.3.6.1.4.1.11129.2.4.2 (RFC 6962
/// §3.3), as DER OID content bytes.
pub const SCT_LIST_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x02];

/// The sizes of a certificate's parts, in bytes. Every size counts whole DER elements (tag and
/// length included), and they tile the certificate:
/// `der = header + tbs + signature_algorithm + signature` and
/// `tbs = spki + sct_list + other_extensions + tbs_other`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CertParts {
    /// The whole certificate.
    pub der: usize,
    /// The outer SEQUENCE's tag and length.
    pub header: usize,
    /// TBSCertificate.
    pub tbs: usize,
    /// SubjectPublicKeyInfo (algorithm and key).
    pub spki: usize,
    /// The subjectPublicKey bits alone (the key as its algorithm encodes it).
    pub public_key: usize,
    /// The embedded SCT list extension, 0 if absent.
    pub sct_list: usize,
    /// SCTs in that list.
    pub scts: usize,
    /// Every other extension.
    pub other_extensions: usize,
    /// How many other extensions.
    pub other_extension_count: usize,
    /// The rest of the TBS: version, serial, algorithm, issuer, validity, subject, the
    /// extensions' wrappers.
    pub tbs_other: usize,
    /// The outer signatureAlgorithm.
    pub signature_algorithm: usize,
    /// signatureValue (BIT STRING).
    pub signature: usize,
    /// The signature bytes alone.
    pub signature_value: usize,
}

/// A certificate that is not the DER shape RFC 5280 §4.1 gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartsError(pub &'static str);

impl fmt::Display for PartsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed certificate: {}", self.0)
    }
}

impl std::error::Error for PartsError {}

/// One DER element at the front of `input[pos..end]`: its tag, the range of its contents and
/// where it ends. Definite lengths only (DER), at most 4 length bytes.
fn tlv(
    input: &[u8],
    pos: usize,
    end: usize,
    what: &'static str,
) -> Result<(u8, Range<usize>, usize), PartsError> {
    let err = || PartsError(what);
    let tag = *input.get(pos).filter(|_| pos < end).ok_or_else(err)?;
    let first = *input
        .get(pos + 1)
        .filter(|_| pos + 1 < end)
        .ok_or_else(err)?;
    let (len, hdr) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return Err(err());
        }
        let bytes = input.get(pos + 2..pos + 2 + n).ok_or_else(err)?;
        (
            bytes.iter().fold(0usize, |a, b| (a << 8) | usize::from(*b)),
            2 + n,
        )
    };
    let start = pos + hdr;
    let stop = start
        .checked_add(len)
        .filter(|s| *s <= end)
        .ok_or_else(err)?;
    Ok((tag, start..stop, stop))
}

/// The byte range of the TBSCertificate element (tag and length included) in `der`.
pub fn tbs_range(der: &[u8]) -> Result<Range<usize>, PartsError> {
    let (tag, body, end) = tlv(der, 0, der.len(), "Certificate")?;
    if tag != 0x30 || end != der.len() {
        return Err(PartsError("Certificate is not one SEQUENCE"));
    }
    let (tag, _, tbs_end) = tlv(der, body.start, body.end, "TBSCertificate")?;
    if tag != 0x30 {
        return Err(PartsError("TBSCertificate is not a SEQUENCE"));
    }
    Ok(body.start..tbs_end)
}

/// The sizes of `der`'s parts.
pub fn cert_parts(der: &[u8]) -> Result<CertParts, PartsError> {
    let (_, body, _) = tlv(der, 0, der.len(), "Certificate")?;
    let tbs = tbs_range(der)?;
    let (tag, _, alg_end) = tlv(der, tbs.end, body.end, "signatureAlgorithm")?;
    if tag != 0x30 {
        return Err(PartsError("signatureAlgorithm is not a SEQUENCE"));
    }
    let (tag, sig, sig_end) = tlv(der, alg_end, body.end, "signatureValue")?;
    if tag != 0x03 || sig.is_empty() || sig_end != body.end {
        return Err(PartsError(
            "signatureValue is not the last element, a BIT STRING",
        ));
    }
    let mut p = CertParts {
        der: der.len(),
        header: body.start,
        tbs: tbs.len(),
        signature_algorithm: alg_end - tbs.end,
        signature: sig_end - alg_end,
        signature_value: sig.len() - 1,
        ..CertParts::default()
    };

    // TBSCertificate (§4.1): [0] version, serial, signature, issuer, validity, subject, SPKI,
    // then [1] issuerUniqueID, [2] subjectUniqueID, [3] extensions, each optional.
    let (_, tbs_body, _) = tlv(der, tbs.start, tbs.end, "TBSCertificate")?;
    let mut pos = tbs_body.start;
    let (tag, _, next) = tlv(der, pos, tbs_body.end, "version")?;
    if tag == 0xa0 {
        pos = next;
    }
    for what in ["serialNumber", "signature", "issuer", "validity", "subject"] {
        pos = tlv(der, pos, tbs_body.end, what)?.2;
    }
    let (tag, spki_body, spki_end) = tlv(der, pos, tbs_body.end, "subjectPublicKeyInfo")?;
    if tag != 0x30 {
        return Err(PartsError("subjectPublicKeyInfo is not a SEQUENCE"));
    }
    p.spki = spki_end - pos;
    let (_, _, alg_end) = tlv(der, spki_body.start, spki_body.end, "SPKI algorithm")?;
    let (tag, key, key_end) = tlv(der, alg_end, spki_body.end, "subjectPublicKey")?;
    if tag != 0x03 || key.is_empty() || key_end != spki_body.end {
        return Err(PartsError("subjectPublicKey is not a BIT STRING"));
    }
    p.public_key = key.len() - 1;
    pos = spki_end;
    while pos < tbs_body.end {
        let (tag, field, next) = tlv(der, pos, tbs_body.end, "TBSCertificate field")?;
        if tag == 0xa3 {
            let (tag, exts, exts_end) = tlv(der, field.start, field.end, "Extensions")?;
            if tag != 0x30 || exts_end != field.end {
                return Err(PartsError("Extensions is not a SEQUENCE"));
            }
            let mut e = exts.start;
            while e < exts.end {
                let (tag, ext, ext_end) = tlv(der, e, exts.end, "Extension")?;
                let (oid_tag, oid, oid_end) = tlv(der, ext.start, ext.end, "extnID")?;
                if tag != 0x30 || oid_tag != 0x06 {
                    return Err(PartsError("Extension is not SEQUENCE { OID, ... }"));
                }
                if &der[oid] == SCT_LIST_OID {
                    p.sct_list += ext_end - e;
                    p.scts += sct_count(der, oid_end, ext.end)?;
                } else {
                    p.other_extensions += ext_end - e;
                    p.other_extension_count += 1;
                }
                e = ext_end;
            }
        }
        pos = next;
    }
    p.tbs_other = p.tbs - p.spki - p.sct_list - p.other_extensions;
    Ok(p)
}

/// SCTs in the extension value after the extnID: [critical BOOLEAN,] OCTET STRING holding the
/// DER OCTET STRING of the TLS-encoded `SignedCertificateTimestampList` (RFC 6962 §3.3):
/// `SerializedSCT sct_list<1..2^16-1>`, each `opaque SerializedSCT<1..2^16-1>`.
fn sct_count(der: &[u8], mut pos: usize, end: usize) -> Result<usize, PartsError> {
    let (mut tag, mut value, mut next) = tlv(der, pos, end, "SCT extension")?;
    if tag == 0x01 {
        pos = next;
        (tag, value, next) = tlv(der, pos, end, "SCT extnValue")?;
    }
    if tag != 0x04 || next != end {
        return Err(PartsError("SCT extnValue is not an OCTET STRING"));
    }
    let (tag, list, list_end) = tlv(der, value.start, value.end, "SCT list")?;
    if tag != 0x04 || list_end != value.end {
        return Err(PartsError("SCT list is not an OCTET STRING"));
    }
    let bytes = &der[list];
    let u16_at = |i: usize| -> Result<usize, PartsError> {
        match bytes.get(i..i + 2) {
            Some([a, b]) => Ok(usize::from(*a) << 8 | usize::from(*b)),
            _ => Err(PartsError("SCT list truncated")),
        }
    };
    if u16_at(0)? + 2 != bytes.len() {
        return Err(PartsError("SCT list length"));
    }
    let (mut i, mut n) = (2, 0);
    while i < bytes.len() {
        let len = u16_at(i)?;
        if len == 0 || i + 2 + len > bytes.len() {
            return Err(PartsError("SerializedSCT length"));
        }
        i += 2 + len;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RSA_CERT: &str = include_str!("../../../tests/vectors/pem/server_rsa_certificate.pem");

    #[test]
    fn parts_of_a_known_certificate_add_up() {
        let der = crate::crypto::cert::certs_from_pem(RSA_CERT)
            .unwrap()
            .remove(0);
        let p = cert_parts(&der).unwrap();
        assert_eq!(
            p.header + p.tbs + p.signature_algorithm + p.signature,
            der.len()
        );
        assert_eq!(
            p.spki + p.sct_list + p.other_extensions + p.tbs_other,
            p.tbs
        );
        // RFC 8448's RSA-1024: a 140-byte RSAPublicKey in a 162-byte SPKI, a 128-byte
        // signature in a 132-byte BIT STRING, in 432 bytes.
        assert_eq!(der.len(), 432);
        assert_eq!((p.spki, p.public_key), (162, 140));
        assert_eq!((p.signature, p.signature_value), (132, 128));
        assert_eq!((p.sct_list, p.scts), (0, 0));
        assert_eq!(&der[tbs_range(&der).unwrap()][..1], &[0x30]);
    }

    #[test]
    fn truncated_or_padded_certificates_are_errors() {
        let der = crate::crypto::cert::certs_from_pem(RSA_CERT)
            .unwrap()
            .remove(0);
        for n in 0..der.len() {
            assert!(cert_parts(&der[..n]).is_err(), "{n}");
        }
        let mut long = der.clone();
        long.push(0);
        assert!(cert_parts(&long).is_err());
    }
}
