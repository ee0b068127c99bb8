//! Certificate path validation and CertificateVerify against a leaf (RFC 8446 §4.4.2.4, §4.4.3).
//!
//! Path building and X.509 rules come from rustls-webpki; every signature it checks goes through
//! our RustCrypto [`VerifyAlg`]s, the same code that verifies
//! CertificateVerify, answered from a [`SignatureMemo`] when the same signature already passed.
//! Time is an input (unix seconds): the core has no clock.

use core::fmt;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use rustls_pki_types::{
    AlgorithmIdentifier, CertificateDer, InvalidSignature, ServerName,
    SignatureVerificationAlgorithm, UnixTime,
};
use webpki::{EndEntityCert, KeyUsage};

use crate::crypto::sign::{self, SigError, VerifyAlg, CERTIFICATE_ALGORITHMS};
use crate::messages::enums::{AlertDescription, SignatureScheme};

/// Whose certificate is being checked: decides the required extended key usage (RFC 5280
/// §4.2.1.12, when the extension is present) and what an empty chain means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Usage {
    /// A server's certificate, checked by a client (id-kp-serverAuth).
    Server,
    /// A client's certificate, checked by a server (id-kp-clientAuth).
    Client,
}

/// Why a certificate chain was rejected. Each maps to one alert via [`CertError::alert`]; the
/// `Display` text names the reason in one line, with what webpki knew: the times compared, the
/// names the leaf has, the issuer no root vouches for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertError {
    /// The peer sent no certificate (§4.4.2.4).
    Empty(Usage),
    /// A certificate in the path is past its notAfter.
    Expired {
        /// Its notAfter, unix seconds.
        not_after: u64,
        /// The validation time, unix seconds.
        now: u64,
    },
    /// A certificate in the path is before its notBefore.
    NotYetValid {
        /// Its notBefore, unix seconds.
        not_before: u64,
        /// The validation time, unix seconds.
        now: u64,
    },
    /// No path to a trust anchor.
    UnknownIssuer {
        /// The issuer named by the last certificate of the chain (`CN=…, O=…`), if readable.
        issuer: Option<String>,
    },
    /// A certificate's signature does not verify with its issuer's key.
    BadSignature,
    /// The leaf is not valid for the requested server name.
    NameMismatch {
        /// The name asked for.
        expected: String,
        /// The leaf's subjectAltName entries (DNS names, IP addresses...).
        presented: Vec<String>,
    },
    /// A certificate is not valid DER / X.509 v3 as webpki requires.
    BadEncoding,
    /// A certificate is signed with an algorithm we do not implement.
    UnsupportedSignature,
    /// The extended key usage does not allow this use.
    WrongUsage,
    /// One of *our* trust anchors (by index) could not be parsed: a local configuration error.
    BadTrustAnchor(usize),
    /// Anything else webpki rejects (constraints, unknown critical extensions...).
    Other(String),
}

impl CertError {
    /// The alert to send (RFC 8446 §4.4.2.4, §6.2).
    pub fn alert(&self) -> AlertDescription {
        match self {
            // §4.4.2.4: an empty server Certificate is a decode_error; an empty client one is
            // certificate_required if the server insists.
            CertError::Empty(Usage::Server) => AlertDescription::DecodeError,
            CertError::Empty(Usage::Client) => AlertDescription::CertificateRequired,
            // §6.2: "has expired or is not currently valid".
            CertError::Expired { .. } | CertError::NotYetValid { .. } => {
                AlertDescription::CertificateExpired
            }
            CertError::UnknownIssuer { .. } => AlertDescription::UnknownCa,
            CertError::WrongUsage => AlertDescription::UnsupportedCertificate,
            CertError::BadTrustAnchor(_) => AlertDescription::InternalError,
            CertError::BadSignature
            | CertError::NameMismatch { .. }
            | CertError::BadEncoding
            | CertError::UnsupportedSignature
            | CertError::Other(_) => AlertDescription::BadCertificate,
        }
    }
}

impl fmt::Display for CertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CertError::Empty(Usage::Server) => {
                f.write_str("empty certificate chain from the server")
            }
            CertError::Empty(Usage::Client) => {
                f.write_str("empty certificate chain from the client")
            }
            CertError::Expired { not_after, now } => write!(
                f,
                "certificate expired: valid until {}, now {}",
                Utc(*not_after),
                Utc(*now)
            ),
            CertError::NotYetValid { not_before, now } => write!(
                f,
                "certificate not yet valid: valid from {}, now {}",
                Utc(*not_before),
                Utc(*now)
            ),
            CertError::UnknownIssuer { issuer: Some(dn) } => {
                write!(f, "unknown issuer {dn:?}: no path to a trusted root")
            }
            CertError::UnknownIssuer { issuer: None } => {
                f.write_str("unknown issuer: no path to a trusted root")
            }
            CertError::BadSignature => {
                f.write_str("bad certificate signature: it does not verify with the issuer's key")
            }
            CertError::NameMismatch {
                expected,
                presented,
            } if presented.is_empty() => write!(
                f,
                "certificate name mismatch: {expected:?} asked for, and the certificate has no \
                 DNS or IP address name"
            ),
            CertError::NameMismatch {
                expected,
                presented,
            } => write!(
                f,
                "certificate name mismatch: {expected:?} is not among the certificate's names ({})",
                presented.join(", ")
            ),
            CertError::BadEncoding => f.write_str("certificate encoding invalid"),
            CertError::UnsupportedSignature => {
                f.write_str("certificate signed with an unsupported algorithm")
            }
            CertError::WrongUsage => {
                f.write_str("certificate not valid for this usage (extended key usage)")
            }
            CertError::BadTrustAnchor(i) => write!(f, "trust anchor {i} unparseable"),
            CertError::Other(s) => write!(f, "certificate rejected: {s}"),
        }
    }
}

impl std::error::Error for CertError {}

/// Unix seconds shown as `YYYY-MM-DD HH:MM:SS UTC` (proleptic Gregorian; no time crate needed).
struct Utc(u64);

impl fmt::Display for Utc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (days, secs) = (self.0 / 86_400, self.0 % 86_400);
        // Days to a civil date (H. Hinnant's algorithm), with the era counted from 0000-03-01.
        let z = days + 719_468;
        let era = z / 146_097;
        let doe = z % 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + u64::from(month <= 2);
        write!(
            f,
            "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

/// webpki prints subjectAltName entries as `DnsName("x")` / `IpAddress(1.2.3.4)`: keep the name
/// (an IPv6 address in its canonical form: webpki writes `0::1`).
fn bare_name(s: &str) -> String {
    if let Some(ip) = s
        .strip_prefix("IpAddress(")
        .and_then(|r| r.strip_suffix(')'))
    {
        return ip
            .parse::<std::net::IpAddr>()
            .map_or_else(|_| ip.to_string(), |ip| ip.to_string());
    }
    s.strip_prefix("DnsName(\"")
        .and_then(|r| r.strip_suffix("\")"))
        .unwrap_or(s)
        .to_string()
}

/// The attributes of an X.501 Name (the contents of its SEQUENCE, as webpki gives them) as
/// `CN=…, O=…`: the common ones by their short names, string values only. `None` if it does not
/// parse or holds none of them; it only ever labels an error message.
fn name_text(mut der: &[u8]) -> Option<String> {
    // One DER TLV with a definite length of at most 4 bytes: (tag, value, rest).
    fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let (&tag, b) = b.split_first()?;
        let (&first, mut b) = b.split_first()?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || b.len() < n {
                return None;
            }
            let len = b[..n]
                .iter()
                .fold(0usize, |a, &x| (a << 8) | usize::from(x));
            b = &b[n..];
            len
        };
        (b.len() >= len).then(|| (tag, &b[..len], &b[len..]))
    }
    let mut parts = Vec::new();
    while !der.is_empty() {
        let (0x31, mut set, rest) = tlv(der)? else {
            return None; // RelativeDistinguishedName ::= SET OF AttributeTypeAndValue
        };
        der = rest;
        while !set.is_empty() {
            let (0x30, atv, rest) = tlv(set)? else {
                return None;
            };
            set = rest;
            let (0x06, oid, value) = tlv(atv)? else {
                return None;
            };
            let (tag, value, _) = tlv(value)?;
            let short = match oid {
                [0x55, 0x04, 0x03] => "CN",
                [0x55, 0x04, 0x0a] => "O",
                [0x55, 0x04, 0x0b] => "OU",
                [0x55, 0x04, 0x06] => "C",
                _ => continue,
            };
            // UTF8String, PrintableString, T61String, IA5String.
            if matches!(tag, 0x0c | 0x13 | 0x14 | 0x16) {
                parts.push(format!("{short}={}", String::from_utf8_lossy(value)));
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

#[allow(deprecated)] // webpki keeps deprecated variants alongside their *Context replacements.
fn map_webpki(e: webpki::Error) -> CertError {
    use webpki::Error as E;
    match e {
        E::CertExpired { time, not_after } => CertError::Expired {
            not_after: not_after.as_secs(),
            now: time.as_secs(),
        },
        E::CertNotValidYet { time, not_before } => CertError::NotYetValid {
            not_before: not_before.as_secs(),
            now: time.as_secs(),
        },
        E::UnknownIssuer => CertError::UnknownIssuer { issuer: None },
        E::InvalidSignatureForPublicKey => CertError::BadSignature,
        E::CertNotValidForName(c) => CertError::NameMismatch {
            expected: match &c.expected {
                ServerName::DnsName(d) => d.as_ref().to_string(),
                ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
                other => format!("{other:?}"),
            },
            presented: c.presented.iter().map(|p| bare_name(p)).collect(),
        },
        E::BadDer
        | E::BadDerTime
        | E::TrailingData(_)
        | E::UnsupportedCertVersion
        | E::MalformedExtensions
        | E::ExtensionValueInvalid
        | E::InvalidSerialNumber
        | E::InvalidCertValidity => CertError::BadEncoding,
        E::UnsupportedSignatureAlgorithm | E::UnsupportedSignatureAlgorithmContext(_) => {
            CertError::UnsupportedSignature
        }
        // A certificate with the issuer's name was found (a root or an intermediate) but its key
        // is of another type than the signature: e.g. an RSA root named like an ECDSA leaf's issuer.
        E::UnsupportedSignatureAlgorithmForPublicKey
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext(_) => CertError::Other(
            "the certificate named as issuer has a key of another type than the signature".into(),
        ),
        E::RequiredEkuNotFound | E::RequiredEkuNotFoundContext(_) | E::EmptyEkuExtension => {
            CertError::WrongUsage
        }
        E::CaUsedAsEndEntity => CertError::Other("a CA certificate used as the leaf".into()),
        E::EndEntityUsedAsCa => CertError::Other("a leaf certificate used as a CA".into()),
        E::PathLenConstraintViolated => CertError::Other("path length constraint violated".into()),
        E::NameConstraintViolation => CertError::Other("name constraint violated".into()),
        E::UnsupportedCriticalExtension => {
            CertError::Other("unsupported critical extension".into())
        }
        other => CertError::Other(format!("{other:?}")),
    }
}

/// A set of trust anchors (DER certificates), checked once at construction.
#[derive(Clone, Debug, Default)]
pub struct CertVerifier {
    roots: Vec<Vec<u8>>,
}

impl CertVerifier {
    /// Fails with [`CertError::BadTrustAnchor`] if a root cannot be used as an anchor.
    pub fn new(roots: Vec<Vec<u8>>) -> Result<Self, CertError> {
        for (i, r) in roots.iter().enumerate() {
            let der = CertificateDer::from(r.as_slice());
            webpki::anchor_from_trusted_cert(&der).map_err(|_| CertError::BadTrustAnchor(i))?;
        }
        Ok(Self { roots })
    }

    /// The anchors, as given.
    pub fn roots(&self) -> &[Vec<u8>] {
        &self.roots
    }

    /// See [`verify_chain`].
    pub fn verify(
        &self,
        chain: &[Vec<u8>],
        server_name: Option<&str>,
        now_unix_secs: u64,
        usage: Usage,
    ) -> Result<(), CertError> {
        verify_chain(chain, &self.roots, server_name, now_unix_secs, usage, None)
    }
}

/// Certificate signatures that already verified, so that a client connecting to the same server
/// again (or a server seeing the same client certificate) skips the public-key operation.
///
/// A signature check is a pure function of (algorithm, issuer key, signed bytes, signature), so
/// remembering the triples that passed changes no result: webpki still builds the path and
/// checks validity times, name, key usage and constraints on every connection, and only asks the
/// memo instead of redoing the ECDSA/RSA arithmetic (for a P-256 certificate, about half of a
/// client's full-handshake CPU beside the key exchange; docs/performance.md). Only certificate
/// signatures are remembered, never CertificateVerify ones (those cover a fresh transcript).
/// Bounded: the oldest of `capacity` entries is forgotten first; a failed check is never stored.
pub struct SignatureMemo {
    capacity: usize,
    entries: Mutex<VecDeque<MemoEntry>>,
    hits: std::sync::atomic::AtomicU64,
}

struct MemoEntry {
    alg: &'static str,
    public_key: Box<[u8]>,
    message: Box<[u8]>,
    signature: Box<[u8]>,
}

impl SignatureMemo {
    /// Remembers up to `capacity` verified signatures (0 remembers none).
    pub fn new(capacity: usize) -> Self {
        SignatureMemo {
            capacity,
            entries: Mutex::new(VecDeque::new()),
            hits: Default::default(),
        }
    }

    /// How many checks the memo answered so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many signatures it holds.
    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn contains(
        &self,
        alg: &VerifyAlg,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> bool {
        let Ok(entries) = self.entries.lock() else {
            return false;
        };
        let found = entries.iter().any(|e| {
            e.alg == alg.name()
                && *e.signature == *signature
                && *e.public_key == *public_key
                && *e.message == *message
        });
        if found {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        found
    }

    fn insert(&self, alg: &VerifyAlg, public_key: &[u8], message: &[u8], signature: &[u8]) {
        if self.capacity == 0 {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= self.capacity {
            entries.pop_front();
        }
        entries.push_back(MemoEntry {
            alg: alg.name(),
            public_key: public_key.into(),
            message: message.into(),
            signature: signature.into(),
        });
    }
}

impl Default for SignatureMemo {
    /// 32 signatures: a few servers' chains.
    fn default() -> Self {
        SignatureMemo::new(32)
    }
}

impl fmt::Debug for SignatureMemo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SignatureMemo({}/{} held, {} hits)",
            self.len(),
            self.capacity,
            self.hits()
        )
    }
}

/// One of our algorithms, answering from a [`SignatureMemo`] when it can.
struct Memoized<'a> {
    alg: &'static VerifyAlg,
    memo: Option<&'a SignatureMemo>,
}

impl fmt::Debug for Memoized<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.alg.fmt(f)
    }
}

impl SignatureVerificationAlgorithm for Memoized<'_> {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        if let Some(memo) = self.memo {
            if memo.contains(self.alg, public_key, message, signature) {
                return Ok(());
            }
        }
        self.alg
            .verify(public_key, message, signature)
            .map_err(|_| InvalidSignature)?;
        if let Some(memo) = self.memo {
            memo.insert(self.alg, public_key, message, signature);
        }
        Ok(())
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        SignatureVerificationAlgorithm::public_key_alg_id(self.alg)
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        SignatureVerificationAlgorithm::signature_alg_id(self.alg)
    }
}

/// Validates `chain` (DER, leaf first, then intermediates in any order) up to one of `roots` at
/// time `now_unix_secs`, and, if given, that the leaf is valid for `server_name` (DNS name or IP
/// address, matched against subjectAltName only — never the CN). Certificate signatures already
/// in `memo` are not recomputed; new ones that verify are added.
pub fn verify_chain(
    chain: &[Vec<u8>],
    roots: &[Vec<u8>],
    server_name: Option<&str>,
    now_unix_secs: u64,
    usage: Usage,
    memo: Option<&SignatureMemo>,
) -> Result<(), CertError> {
    let (leaf, rest) = chain.split_first().ok_or(CertError::Empty(usage))?;
    let root_ders: Vec<CertificateDer<'_>> = roots
        .iter()
        .map(|r| CertificateDer::from(r.as_slice()))
        .collect();
    let anchors = root_ders
        .iter()
        .enumerate()
        .map(|(i, d)| webpki::anchor_from_trusted_cert(d).map_err(|_| CertError::BadTrustAnchor(i)))
        .collect::<Result<Vec<_>, _>>()?;
    let intermediates: Vec<CertificateDer<'_>> = rest
        .iter()
        .map(|c| CertificateDer::from(c.as_slice()))
        .collect();
    let leaf_der = CertificateDer::from(leaf.as_slice());
    let ee = EndEntityCert::try_from(&leaf_der).map_err(map_webpki)?;
    let eku = match usage {
        Usage::Server => KeyUsage::server_auth(),
        Usage::Client => KeyUsage::client_auth(),
    };
    let memoized = CERTIFICATE_ALGORITHMS.map(|alg| Memoized { alg, memo });
    let algs: [&dyn SignatureVerificationAlgorithm; CERTIFICATE_ALGORITHMS.len()] =
        core::array::from_fn(|i| &memoized[i] as &dyn SignatureVerificationAlgorithm);
    match ee.verify_for_usage(
        &algs,
        &anchors,
        &intermediates,
        UnixTime::since_unix_epoch(Duration::from_secs(now_unix_secs)),
        eku,
        None,
        None,
    ) {
        Ok(_) => Ok(()),
        // A certificate the caller trusts explicitly, served as the leaf, is trusted directly,
        // as OpenSSL and Go do (RFC 5280 §6.1: a path of one trusted certificate), even with
        // basicConstraints cA:TRUE, which `openssl req -x509` writes into a self-signed test
        // certificate. Only this error is excused, and only for a byte-identical root: webpki
        // checks the validity period before basic constraints, so the time was checked
        // (tests/handshake.rs pins that order with an expired one); the name is checked below.
        Err(webpki::Error::CaUsedAsEndEntity) if leaf_is_a_root(leaf, roots) => Ok(()),
        Err(e) => Err(e),
    }
    .map_err(|e| match map_webpki(e) {
        // Name the issuer the chain asked us to trust: that of its last certificate.
        CertError::UnknownIssuer { .. } => CertError::UnknownIssuer {
            issuer: chain.last().and_then(|top| {
                let der = CertificateDer::from(top.as_slice());
                let cert = EndEntityCert::try_from(&der).ok()?;
                name_text(cert.issuer())
            }),
        },
        other => other,
    })?;
    if let Some(name) = server_name {
        check_name(&ee, name)?;
    }
    Ok(())
}

fn check_name(ee: &EndEntityCert<'_>, name: &str) -> Result<(), CertError> {
    let name = ServerName::try_from(name)
        .map_err(|_| CertError::Other(format!("invalid server name {name:?}")))?;
    ee.verify_is_valid_for_subject_name(&name)
        .map_err(map_webpki)
}

/// Whether `leaf` is valid for `server_name` (subjectAltName only), without a path: for a
/// certificate authenticated another way (a Merkle Tree Certificate, [`super::mtc`]).
pub fn verify_name(leaf: &[u8], server_name: &str) -> Result<(), CertError> {
    let der = CertificateDer::from(leaf);
    let ee = EndEntityCert::try_from(&der).map_err(map_webpki)?;
    check_name(&ee, server_name)
}

/// Whether `leaf` is, byte for byte, one of the trust anchors `roots`: a certificate trusted
/// directly ([`verify_chain`]), which a client can say it did.
pub fn leaf_is_a_root(leaf: &[u8], roots: &[Vec<u8>]) -> bool {
    roots.iter().any(|r| r.as_slice() == leaf)
}

/// Whether every certificate of `chain` (DER, leaf first) is signed with a scheme in `accepted`
/// (§4.4.2.2, for choosing among several chains by signature_algorithms_cert). A self-signed
/// certificate (issuer = subject) is exempt: it starts a path, so its signature is not checked
/// (§4.2.3). An unparseable certificate, or an algorithm we cannot name, does not match.
pub fn chain_signed_with(chain: &[Vec<u8>], accepted: &[SignatureScheme]) -> bool {
    chain.iter().all(|der| {
        certificate_signature(der).is_some_and(|(alg, self_signed)| {
            self_signed
                || sign::schemes_for_certificate_signature(alg)
                    .iter()
                    .any(|s| accepted.contains(s))
        })
    })
}

/// Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue } (RFC 5280
/// §4.1): the signatureAlgorithm's contents, and whether the issuer Name equals the subject's.
fn certificate_signature(der: &[u8]) -> Option<(&[u8], bool)> {
    use sign::der_tlv;
    let (cert, []) = der_tlv(der, 0x30)? else {
        return None;
    };
    let (tbs, rest) = der_tlv(cert, 0x30)?;
    let (alg, _) = der_tlv(rest, 0x30)?;
    // tbsCertificate: [0] version (optional), serialNumber, signature, issuer, validity, subject.
    let tbs = der_tlv(tbs, 0xa0).map_or(tbs, |(_, rest)| rest);
    let (_, tbs) = der_tlv(tbs, 0x02)?;
    let (_, tbs) = der_tlv(tbs, 0x30)?;
    let (issuer, tbs) = der_tlv(tbs, 0x30)?;
    let (_, tbs) = der_tlv(tbs, 0x30)?;
    let (subject, _) = der_tlv(tbs, 0x30)?;
    Some((alg, issuer == subject))
}

/// CertificateVerify check (§4.4.3): `signature` by the key of `leaf_der` over `message`
/// (see [`sign::certificate_verify_message`]) with `scheme`.
pub fn verify_with_leaf(
    leaf_der: &[u8],
    scheme: SignatureScheme,
    message: &[u8],
    signature: &[u8],
) -> Result<(), SigError> {
    // Reject disallowed schemes before touching the certificate.
    sign::certificate_verify_algorithm(scheme).ok_or(SigError::UnsupportedScheme(scheme))?;
    let der = CertificateDer::from(leaf_der);
    let ee = EndEntityCert::try_from(&der)
        .map_err(|_| SigError::BadKey("leaf certificate unparseable"))?;
    let spki = ee.subject_public_key_info();
    sign::verify_signature(scheme, spki.as_ref(), message, signature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::cert::certs_from_pem;
    use crate::crypto::random::{ScriptedRandom, SeededRandom};
    use crate::crypto::sign::{certificate_verify_message, SigningKey};

    const RSA_CERT: &str = include_str!("../../../tests/vectors/pem/server_rsa_certificate.pem");
    const ECDSA_CERT: &str =
        include_str!("../../../tests/vectors/pem/server_ecdsa_certificate_client_auth.pem");
    const CLIENT_CERT: &str = include_str!("../../../tests/vectors/pem/client_rsa_certificate.pem");
    const RSA_KEY: &str = include_str!("../../../tests/vectors/pem/server_rsa_key.pem");

    const T_2015: u64 = 1_420_070_400; // 2015-01-01
    const T_2020: u64 = 1_577_836_800; // 2020-01-01
    const T_2026_12: u64 = 1_796_083_200; // 2026-12-01

    // RFC 8448 §3: server CertificateVerify (rsa_pss_rsae_sha256) and the content it signs
    // (transcript hash from rfc8448_computed_extras.json).
    const S3_CV_SIG: &str = "5a747c5d88fa9bd2e55ab085a61015b7211f824cd484145ab3ff52f1fda8477b0b7abc90db78e2d33a5c141a078653fa6bef780c5ea248eeaaa785c4f394cab6d30bbe8d4859ee511f602957b15411ac027671459e46445c9ea58c181e818e95b8c3fb0bf3278409d3be152a3da5043e063dda65cdf5aea20d53dfacd42f74f3";
    const S3_CV_HASH: &str = "764d6632b3c35c3f3205e3499ac3edbaabb88295fba751461d3678e2e5ea0687";
    // RFC 8448 §6: server (ecdsa_secp256r1_sha256) and client (rsa_pss_rsae_sha256) signatures.
    const S6_SERVER_CV_SIG: &str = "3045022100d7a4d34bd54f55fee1a89625678c3dd5e5f60dac73ec940c5c7b9304a02084a90220289f595ed488b9ac689a3d192b1a8bb38f34af7874c059c9806a1f38269353e8";
    const S6_SERVER_CV_HASH: &str =
        "859eaf14bd760766c74a398668367bc3a32687ce5a598b4383726ab82a911e26";
    const S6_CLIENT_CV_SIG: &str = "186b2223b503a759c35dba0e9721b4b579138d5f0f5e6ec7feaaf27f3ad7f386c2c7bd7cb2be52fbf5ed8393f406ee79369692ec7ac695651d858219e672a8eb7b2a677b640b46ab630edc5f3f2f8272b9c0d906f81f84ddc5b8c7bcf955c78a3cf99e5016f73e04eb7dfcb28833f13e8f75ec2ff3581e2f098ad4157fd6d6ad";
    const S6_CLIENT_CV_HASH: &str =
        "44026ef3331bc864da1c08ee32e196d93cc2c5d487e47e957d980e7c3d801b9a";

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    fn one_cert(pem: &str) -> Vec<u8> {
        let mut v = certs_from_pem(pem).unwrap();
        assert_eq!(v.len(), 1);
        v.remove(0)
    }

    #[test]
    fn rfc8448_s3_cert_is_its_own_root() {
        let c = one_cert(RSA_CERT);
        let chain = vec![c.clone()];
        verify_chain(&chain, &chain, None, T_2020, Usage::Server, None).unwrap();
        verify_chain(&chain, &chain, None, T_2020, Usage::Client, None).unwrap();
        let v = CertVerifier::new(chain.clone()).unwrap();
        v.verify(&chain, None, T_2020, Usage::Server).unwrap();

        // notBefore 2016-07-30 01:23:59, notAfter 2026-07-30 01:23:59 (UTC).
        let err = verify_chain(&chain, &chain, None, T_2026_12, Usage::Server, None).unwrap_err();
        assert_eq!(
            err,
            CertError::Expired {
                not_after: 1_785_374_639,
                now: T_2026_12
            }
        );
        assert_eq!(err.alert(), AlertDescription::CertificateExpired);
        assert_eq!(
            err.to_string(),
            "certificate expired: valid until 2026-07-30 01:23:59 UTC, now 2026-12-01 00:00:00 UTC"
        );
        let err = verify_chain(&chain, &chain, None, T_2015, Usage::Server, None).unwrap_err();
        assert_eq!(
            err,
            CertError::NotYetValid {
                not_before: 1_469_841_839,
                now: T_2015
            }
        );
        assert_eq!(err.alert(), AlertDescription::CertificateExpired);
        assert_eq!(
            err.to_string(),
            "certificate not yet valid: valid from 2016-07-30 01:23:59 UTC, now 2015-01-01 00:00:00 UTC"
        );
        // No subjectAltName: the CN "rsa" is not a DNS identity (RFC 6125).
        let err =
            verify_chain(&chain, &chain, Some("rsa"), T_2020, Usage::Server, None).unwrap_err();
        assert_eq!(
            err,
            CertError::NameMismatch {
                expected: "rsa".into(),
                presented: vec![]
            }
        );
        assert_eq!(err.alert(), AlertDescription::BadCertificate);
        assert_eq!(
            err.to_string(),
            "certificate name mismatch: \"rsa\" asked for, and the certificate has no DNS or IP \
             address name"
        );
    }

    #[test]
    fn error_texts_show_times_and_names() {
        assert_eq!(Utc(0).to_string(), "1970-01-01 00:00:00 UTC");
        assert_eq!(Utc(951_782_400).to_string(), "2000-02-29 00:00:00 UTC");
        assert_eq!(Utc(1_709_251_199).to_string(), "2024-02-29 23:59:59 UTC");
        assert_eq!(Utc(4_102_444_800).to_string(), "2100-01-01 00:00:00 UTC");
        assert_eq!(bare_name("DnsName(\"a.test\")"), "a.test");
        assert_eq!(bare_name("IpAddress(0::1)"), "::1");
        assert_eq!(bare_name("IpAddress(127.0.0.1)"), "127.0.0.1");
        assert_eq!(bare_name("DirectoryName"), "DirectoryName");
        // SET { SEQUENCE { OID 2.5.4.3, UTF8String "ca" } }, SET { O = PrintableString "x" }
        let dn = [
            0x31, 0x0b, 0x30, 0x09, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x02, b'c', b'a', 0x31,
            0x0a, 0x30, 0x08, 0x06, 0x03, 0x55, 0x04, 0x0a, 0x13, 0x01, b'x',
        ];
        assert_eq!(name_text(&dn).as_deref(), Some("CN=ca, O=x"));
        for cut in 0..dn.len() {
            let _ = name_text(&dn[..cut]); // never panics on a truncated name
        }
        assert_eq!(name_text(&[]), None);
        assert_eq!(name_text(&[0x31, 0x85, 1, 1, 1, 1, 1]), None);
    }

    #[test]
    fn rfc8448_s6_certs_are_their_own_roots() {
        for pem in [ECDSA_CERT, CLIENT_CERT] {
            let chain = vec![one_cert(pem)];
            verify_chain(&chain, &chain, None, T_2020, Usage::Client, None).unwrap();
        }
    }

    #[test]
    fn unknown_issuer_empty_and_garbage() {
        let rsa = vec![one_cert(RSA_CERT)];
        let ecdsa = vec![one_cert(ECDSA_CERT)];
        let err = verify_chain(&rsa, &ecdsa, None, T_2020, Usage::Server, None).unwrap_err();
        let rsa_issuer = CertError::UnknownIssuer {
            issuer: Some("CN=rsa".into()),
        };
        assert_eq!(err, rsa_issuer);
        assert_eq!(err.alert(), AlertDescription::UnknownCa);
        assert_eq!(
            err.to_string(),
            "unknown issuer \"CN=rsa\": no path to a trusted root"
        );
        assert_eq!(
            verify_chain(&rsa, &[], None, T_2020, Usage::Server, None),
            Err(rsa_issuer)
        );
        let err = verify_chain(&[], &rsa, None, T_2020, Usage::Server, None).unwrap_err();
        assert_eq!(err.alert(), AlertDescription::DecodeError);
        let err = verify_chain(&[], &rsa, None, T_2020, Usage::Client, None).unwrap_err();
        assert_eq!(err.alert(), AlertDescription::CertificateRequired);
        assert_eq!(
            CertVerifier::new(vec![vec![1, 2, 3]]).unwrap_err(),
            CertError::BadTrustAnchor(0)
        );
        assert_eq!(
            verify_chain(&rsa, &[vec![0x30]], None, T_2020, Usage::Server, None)
                .unwrap_err()
                .alert(),
            AlertDescription::InternalError
        );
        // Every truncation of the leaf is rejected, never a panic.
        for i in 0..rsa[0].len() {
            let cut = vec![rsa[0][..i].to_vec()];
            let err = verify_chain(&cut, &rsa, None, T_2020, Usage::Server, None).unwrap_err();
            assert_eq!(
                err.alert(),
                AlertDescription::BadCertificate,
                "{i}: {err:?}"
            );
        }
        // A corrupted signature no longer chains to the (intact) anchor.
        let mut bad = rsa[0].clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let err = verify_chain(&[bad], &rsa, None, T_2020, Usage::Server, None).unwrap_err();
        assert_eq!(err, CertError::BadSignature);
    }

    #[test]
    fn rfc8448_s3_certificate_verify() {
        let leaf = one_cert(RSA_CERT);
        let msg = certificate_verify_message(true, &h(S3_CV_HASH));
        let sig = h(S3_CV_SIG);
        let scheme = SignatureScheme::rsa_pss_rsae_sha256;
        verify_with_leaf(&leaf, scheme, &msg, &sig).unwrap();

        let err = verify_with_leaf(
            &leaf,
            scheme,
            &certificate_verify_message(false, &h(S3_CV_HASH)),
            &sig,
        )
        .unwrap_err();
        assert_eq!(err, SigError::BadSignature);
        assert_eq!(err.alert(), AlertDescription::DecryptError);
        // Salt length must equal the hash length: the same bytes are not a SHA-384 PSS signature.
        assert_eq!(
            verify_with_leaf(&leaf, SignatureScheme::rsa_pss_rsae_sha384, &msg, &sig),
            Err(SigError::BadSignature)
        );
        // §4.4.3: PKCS#1 v1.5 never in CertificateVerify, whatever the key.
        assert_eq!(
            verify_with_leaf(&leaf, SignatureScheme::rsa_pkcs1_sha256, &msg, &sig),
            Err(SigError::UnsupportedScheme(
                SignatureScheme::rsa_pkcs1_sha256
            ))
        );
        assert_eq!(
            verify_with_leaf(&leaf, SignatureScheme::ecdsa_secp256r1_sha256, &msg, &sig),
            Err(SigError::KeyMismatch(
                SignatureScheme::ecdsa_secp256r1_sha256
            ))
        );
        assert!(matches!(
            verify_with_leaf(&leaf[..100], scheme, &msg, &sig),
            Err(SigError::BadKey(_))
        ));
    }

    #[test]
    fn rfc8448_s6_certificate_verifies() {
        let server = one_cert(ECDSA_CERT);
        let msg = certificate_verify_message(true, &h(S6_SERVER_CV_HASH));
        let scheme = SignatureScheme::ecdsa_secp256r1_sha256;
        verify_with_leaf(&server, scheme, &msg, &h(S6_SERVER_CV_SIG)).unwrap();
        assert_eq!(
            verify_with_leaf(&server, scheme, &msg[1..], &h(S6_SERVER_CV_SIG)),
            Err(SigError::BadSignature)
        );

        let client = one_cert(CLIENT_CERT);
        let msg = certificate_verify_message(false, &h(S6_CLIENT_CV_HASH));
        verify_with_leaf(
            &client,
            SignatureScheme::rsa_pss_rsae_sha256,
            &msg,
            &h(S6_CLIENT_CV_SIG),
        )
        .unwrap();
    }

    /// MGF1 (RFC 8017 §B.2.1) with SHA-256, to read the salt back out of a PSS signature.
    fn mgf1_sha256(seed: &[u8], len: usize) -> Vec<u8> {
        use sha2::Digest;
        let mut out = Vec::new();
        let mut counter = 0u32;
        while out.len() < len {
            let mut d = sha2::Sha256::new();
            d.update(seed);
            d.update(counter.to_be_bytes());
            out.extend_from_slice(&d.finalize());
            counter += 1;
        }
        out.truncate(len);
        out
    }

    #[test]
    fn rfc8448_s3_signature_reproduced_from_injected_salt() {
        use rsa::traits::PublicKeyParts;
        let key = SigningKey::from_pem(RSA_KEY).unwrap();
        let SigningKey::Rsa(rk) = &key else {
            panic!("RSA key expected")
        };
        // Open the RFC's signature with the public key: EM = maskedDB || H || 0xbc.
        let sig = h(S3_CV_SIG);
        let em = rsa::BigUint::from_bytes_be(&sig)
            .modpow(rk.e(), rk.n())
            .to_bytes_be();
        assert_eq!(em.len(), 128);
        assert_eq!(em[127], 0xbc);
        let (masked_db, hh) = em[..127].split_at(95);
        let mut db: Vec<u8> = masked_db
            .iter()
            .zip(mgf1_sha256(hh, 95))
            .map(|(a, b)| a ^ b)
            .collect();
        db[0] &= 0x7f;
        assert_eq!(db[95 - 33], 0x01);
        let salt = db[95 - 32..].to_vec();

        // Signing with that salt as the one injected draw gives the RFC's bytes exactly.
        let msg = certificate_verify_message(true, &h(S3_CV_HASH));
        let mut rng = ScriptedRandom::new(vec![salt], 0);
        let ours = key
            .sign(SignatureScheme::rsa_pss_rsae_sha256, &msg, &mut rng)
            .unwrap();
        assert_eq!(ours, sig);
        assert!(rng.mismatches().is_empty());
        assert_eq!((rng.remaining(), rng.draws()), (0, 1));
    }

    #[test]
    fn rfc8448_key_matches_certificate() {
        let key = SigningKey::from_pem(RSA_KEY).unwrap();
        let leaf = one_cert(RSA_CERT);
        let msg = certificate_verify_message(true, &[9; 32]);
        let sig = key
            .sign(
                SignatureScheme::rsa_pss_rsae_sha384,
                &msg,
                &mut SeededRandom::from_seed(1),
            )
            .unwrap();
        verify_with_leaf(&leaf, SignatureScheme::rsa_pss_rsae_sha384, &msg, &sig).unwrap();
    }

    #[test]
    fn signature_memo_skips_only_repeated_good_signatures() {
        let chain = vec![one_cert(RSA_CERT)];
        let memo = SignatureMemo::new(2);
        verify_chain(&chain, &chain, None, T_2020, Usage::Server, Some(&memo)).unwrap();
        assert_eq!((memo.len(), memo.hits()), (1, 0));
        verify_chain(&chain, &chain, None, T_2020, Usage::Server, Some(&memo)).unwrap();
        assert_eq!((memo.len(), memo.hits()), (1, 1));
        // Time, name and signature are still checked around a remembered signature.
        let err = verify_chain(&chain, &chain, None, T_2026_12, Usage::Server, Some(&memo));
        assert!(matches!(err, Err(CertError::Expired { .. })), "{err:?}");
        let err = verify_chain(
            &chain,
            &chain,
            Some("rsa"),
            T_2020,
            Usage::Server,
            Some(&memo),
        );
        assert!(
            matches!(err, Err(CertError::NameMismatch { .. })),
            "{err:?}"
        );
        let mut bad = chain[0].clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let err = verify_chain(&[bad], &chain, None, T_2020, Usage::Server, Some(&memo));
        assert_eq!(err, Err(CertError::BadSignature));
        assert_eq!(
            CertError::BadSignature.to_string(),
            "bad certificate signature: it does not verify with the issuer's key"
        );
        assert_eq!(memo.len(), 1, "a failed signature is never remembered");
        // Bounded: the oldest entry goes first.
        for pem in [ECDSA_CERT, CLIENT_CERT] {
            let c = vec![one_cert(pem)];
            verify_chain(&c, &c, None, T_2020, Usage::Client, Some(&memo)).unwrap();
        }
        assert_eq!(memo.len(), 2);
        let hits = memo.hits();
        verify_chain(&chain, &chain, None, T_2020, Usage::Server, Some(&memo)).unwrap();
        assert_eq!(
            memo.hits(),
            hits,
            "the RSA signature was evicted and verified again"
        );
        let none = SignatureMemo::new(0);
        verify_chain(&chain, &chain, None, T_2020, Usage::Server, Some(&none)).unwrap();
        assert!(none.is_empty());
    }

    /// OpenSSL-made certificates (tests/vectors/pem/gen-sigs.sh) for the schemes webpki does
    /// not ship on RustCrypto: ecdsa-with-SHA512 on P-521, RSASSA-PSS with id-RSASSA-PSS keys
    /// (unrestricted, and restricted to SHA-384), each its own root, and CertificateVerify with
    /// its key.
    #[test]
    fn p521_rsa_pss_ed448_and_mldsa_key_certificates_verify() {
        const T_2024: u64 = 1_704_067_200;
        let cases = [
            (
                include_str!("../../../tests/vectors/pem/p521_certificate.pem"),
                include_str!("../../../tests/vectors/pem/p521_key.pem"),
                SignatureScheme::ecdsa_secp521r1_sha512,
            ),
            (
                include_str!("../../../tests/vectors/pem/rsa_pss_certificate.pem"),
                include_str!("../../../tests/vectors/pem/rsa_pss_key.pem"),
                SignatureScheme::rsa_pss_pss_sha512,
            ),
            (
                include_str!("../../../tests/vectors/pem/rsa_pss_sha384_certificate.pem"),
                include_str!("../../../tests/vectors/pem/rsa_pss_sha384_key.pem"),
                SignatureScheme::rsa_pss_pss_sha384,
            ),
            // id-Ed448 (RFC 8410), made by OpenSSL 3.5 (gen-sigs.sh): the certificate's
            // signature is PureEdDSA over the whole TBSCertificate.
            (
                include_str!("../../../tests/vectors/pem/ed448_certificate.pem"),
                include_str!("../../../tests/vectors/pem/ed448_key.pem"),
                SignatureScheme::ed448,
            ),
            // RFC 9881 keys and self-signatures, made by OpenSSL 3.5 (gen-mldsa.sh).
            (
                include_str!("../../../tests/vectors/pem/mldsa44_certificate.pem"),
                include_str!("../../../tests/vectors/pem/mldsa44_key.pem"),
                SignatureScheme::mldsa44,
            ),
            (
                include_str!("../../../tests/vectors/pem/mldsa65_certificate.pem"),
                include_str!("../../../tests/vectors/pem/mldsa65_key.pem"),
                SignatureScheme::mldsa65,
            ),
            (
                include_str!("../../../tests/vectors/pem/mldsa87_certificate.pem"),
                include_str!("../../../tests/vectors/pem/mldsa87_key.pem"),
                SignatureScheme::mldsa87,
            ),
        ];
        for (cert, key, scheme) in cases {
            let chain = vec![one_cert(cert)];
            verify_chain(
                &chain,
                &chain,
                Some("localhost"),
                T_2024,
                Usage::Server,
                None,
            )
            .unwrap_or_else(|e| panic!("{scheme}: {e}"));
            let key = SigningKey::from_pem(key).unwrap();
            let der = CertificateDer::from(chain[0].as_slice());
            let ee = EndEntityCert::try_from(&der).unwrap();
            assert_eq!(
                key.public_key_spki_der().unwrap(),
                ee.subject_public_key_info().as_ref(),
                "{scheme}: our SPKI is the certificate's"
            );
            let m = certificate_verify_message(true, &[3; 48]);
            let sig = key
                .sign(scheme, &m, &mut SeededRandom::from_seed(1))
                .unwrap();
            verify_with_leaf(&chain[0], scheme, &m, &sig).unwrap();
            assert_eq!(
                verify_with_leaf(&chain[0], scheme, b"other", &sig),
                Err(SigError::BadSignature)
            );
            // The certificate's own signature, one bit off, no longer verifies.
            let mut bad = chain[0].clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            let bad = vec![bad];
            assert_eq!(
                verify_chain(&bad, &chain, None, T_2024, Usage::Server, None),
                Err(CertError::BadSignature),
                "{scheme}"
            );
        }
    }

    /// An ML-DSA-87 root, ML-DSA-65 intermediate and ML-DSA-44 leaf made by OpenSSL: the path
    /// validates through our id-ML-DSA-* algorithms; one flipped signature byte anywhere below
    /// the root is bad_certificate.
    #[test]
    fn mldsa_chain_validates_and_a_flipped_signature_byte_does_not() {
        const T_2024: u64 = 1_704_067_200;
        let chain =
            certs_from_pem(include_str!("../../../tests/vectors/pem/mldsa_chain.pem")).unwrap();
        let roots = certs_from_pem(include_str!(
            "../../../tests/vectors/pem/mldsa_chain_root.pem"
        ))
        .unwrap();
        assert_eq!(chain.len(), 2);
        let memo = SignatureMemo::new(4);
        let check = |chain: &[Vec<u8>]| {
            verify_chain(
                chain,
                &roots,
                Some("localhost"),
                T_2024,
                Usage::Server,
                Some(&memo),
            )
        };
        check(&chain).unwrap();
        verify_chain(&chain, &roots, None, T_2024, Usage::Client, None).unwrap();
        // Without the intermediate the leaf has no path.
        assert!(matches!(
            check(&chain[..1]),
            Err(CertError::UnknownIssuer { .. })
        ));
        for i in 0..chain.len() {
            let mut bad = chain.clone();
            // The signature BIT STRING ends the certificate; its middle is well inside it.
            let at = bad[i].len() - 1000;
            bad[i][at] ^= 0x10;
            let err = check(&bad).unwrap_err();
            assert_eq!(err, CertError::BadSignature, "certificate {i}");
            assert_eq!(err.alert(), AlertDescription::BadCertificate);
        }
        // The leaf signs CertificateVerify with its ML-DSA-44 key.
        let key = SigningKey::from_pem(include_str!(
            "../../../tests/vectors/pem/mldsa_chain_leaf_key.pem"
        ))
        .unwrap();
        let m = certificate_verify_message(false, &[5; 32]);
        let scheme = SignatureScheme::mldsa44;
        let sig = key
            .sign(scheme, &m, &mut SeededRandom::from_seed(2))
            .unwrap();
        verify_with_leaf(&chain[0], scheme, &m, &sig).unwrap();
        assert_eq!(
            verify_with_leaf(&chain[0], SignatureScheme::mldsa65, &m, &sig),
            Err(SigError::KeyMismatch(SignatureScheme::mldsa65))
        );
    }
}
