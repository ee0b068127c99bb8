//! Signatures for CertificateVerify (RFC 8446 §4.4.3) and certificate chains.
//!
//! Signing: ECDSA P-256 and P-384 (RFC 6979 deterministic, DER-encoded), Ed25519 and Ed448
//! (RFC 8032, deterministic),
//! ECDSA P-521 (its nonce hedged from one draw of the injected [`RandomSource`]: p521 0.13 has no
//! RFC 6979), and RSASSA-PSS with rsaEncryption keys (`rsa_pss_rsae_*`) or id-RSASSA-PSS keys
//! (`rsa_pss_pss_*`), whose salt (hash length, §4.2.3) is drawn from the [`RandomSource`].
//! ML-DSA-44/65/87 (FIPS 204, draft-ietf-tls-mldsa): pure ML-DSA with the empty context, hedged
//! with 32 bytes drawn from the [`RandomSource`]; keys in RFC 9881's seed, expanded or both forms.
//! The brainpool schemes are not implemented (docs/interop.md says why).
//!
//! Verification: one set of [`VerifyAlg`]s implements rustls-pki-types'
//! `SignatureVerificationAlgorithm` on RustCrypto. webpki uses them for certificate chains
//! ([`CERTIFICATE_ALGORITHMS`]) and the CertificateVerify check uses the same objects
//! ([`certificate_verify_algorithm`]), so RFC 8448's 1024-bit RSA key works in both places.

use core::fmt;

use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey};
use ed448_goldilocks::elliptic_curve::pkcs8::DecodePrivateKey as Ed448DecodePrivateKey;
use p256::ecdsa::signature::hazmat::{PrehashVerifier, RandomizedPrehashSigner};
use p256::ecdsa::signature::{Signer, Verifier};
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, RngCore, SeedableRng};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey, EncodeRsaPublicKey};
use rsa::traits::{PrivateKeyParts, PublicKeyParts};
use rustls_pki_types::{
    alg_id, AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm,
};
use sha2::Digest;
use zeroize::Zeroizing;

use crate::crypto::random::RandomSource;
use crate::messages::enums::{AlertDescription, SignatureScheme};

/// An Ed448 private key (RFC 8032 §5.2.5): 57 bytes.
const ED448_SEED_LEN: usize = 57;

/// Smallest and largest RSA moduli we sign or verify with. 1024 only because RFC 8448 uses it.
pub const RSA_MIN_BITS: usize = 1024;
/// See [`RSA_MIN_BITS`].
pub const RSA_MAX_BITS: usize = 8192;

/// Schemes we accept in CertificateVerify, in preference order (for `signature_algorithms`).
pub fn supported_verify_schemes() -> &'static [SignatureScheme] {
    &[
        SignatureScheme::ecdsa_secp256r1_sha256,
        SignatureScheme::ecdsa_secp384r1_sha384,
        SignatureScheme::ecdsa_secp521r1_sha512,
        SignatureScheme::ed25519,
        SignatureScheme::ed448,
        SignatureScheme::rsa_pss_rsae_sha256,
        SignatureScheme::rsa_pss_rsae_sha384,
        SignatureScheme::rsa_pss_rsae_sha512,
        SignatureScheme::rsa_pss_pss_sha256,
        SignatureScheme::rsa_pss_pss_sha384,
        SignatureScheme::rsa_pss_pss_sha512,
        // Last, as OpenSSL 3.5 lists them: a client that offers them first would pull a
        // dual-certificate server onto its (much larger) ML-DSA chain.
        SignatureScheme::mldsa44,
        SignatureScheme::mldsa65,
        SignatureScheme::mldsa87,
    ]
}

/// Schemes we can verify in certificates (for `signature_algorithms_cert`, §4.2.3): the above
/// plus PKCS#1 v1.5, which §4.4.3 allows only in certificates. Not SHA-1: §4.2.3 permits
/// rsa_pkcs1_sha1 and ecdsa_sha1 in certificates "solely for backward compatibility" and
/// endpoints "SHOULD NOT negotiate" them; webpki has no SHA-1 either.
pub fn supported_cert_schemes() -> &'static [SignatureScheme] {
    &[
        SignatureScheme::ecdsa_secp256r1_sha256,
        SignatureScheme::ecdsa_secp384r1_sha384,
        SignatureScheme::ecdsa_secp521r1_sha512,
        SignatureScheme::ed25519,
        SignatureScheme::ed448,
        SignatureScheme::rsa_pss_rsae_sha256,
        SignatureScheme::rsa_pss_rsae_sha384,
        SignatureScheme::rsa_pss_rsae_sha512,
        SignatureScheme::rsa_pss_pss_sha256,
        SignatureScheme::rsa_pss_pss_sha384,
        SignatureScheme::rsa_pss_pss_sha512,
        SignatureScheme::rsa_pkcs1_sha256,
        SignatureScheme::rsa_pkcs1_sha384,
        SignatureScheme::rsa_pkcs1_sha512,
        SignatureScheme::mldsa44,
        SignatureScheme::mldsa65,
        SignatureScheme::mldsa87,
    ]
}

/// The content signed in CertificateVerify (§4.4.3): 64 spaces, the context string, a zero byte,
/// then Transcript-Hash(Handshake Context, Certificate).
pub fn certificate_verify_message(server: bool, transcript_hash: &[u8]) -> Vec<u8> {
    let context: &[u8] = if server {
        b"TLS 1.3, server CertificateVerify"
    } else {
        b"TLS 1.3, client CertificateVerify"
    };
    let mut m = Vec::with_capacity(64 + context.len() + 1 + transcript_hash.len());
    m.extend_from_slice(&[0x20; 64]);
    m.extend_from_slice(context);
    m.push(0);
    m.extend_from_slice(transcript_hash);
    m
}

// ---------------------------------------------------------------------------------------------
// Errors

/// Why a signature could not be checked or made. Each maps to one alert via [`SigError::alert`].
/// The first four are the peer's fault; the rest are failures of our own key (internal_error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SigError {
    /// A scheme not allowed here: unknown, SHA-1, or PKCS#1 v1.5 in CertificateVerify (§4.4.3).
    UnsupportedScheme(SignatureScheme),
    /// The scheme does not fit the certificate's key type or curve (§4.4.3 "compatible").
    KeyMismatch(SignatureScheme),
    /// The peer's public key could not be parsed or is out of range (e.g. RSA below 1024 bits).
    BadKey(&'static str),
    /// The signature does not verify (§4.4.3: decrypt_error).
    BadSignature,
    /// Our private key cannot make this scheme (wrong type, or RSA too small for the hash).
    CannotSign(SignatureScheme),
    /// Our private key could not be parsed, or is of a type/size we do not support.
    BadPrivateKey(&'static str),
    /// The signing backend or a key encoding failed.
    SigningFailed(&'static str),
}

impl SigError {
    /// The alert to send (RFC 8446 §4.4.3, §6.2).
    pub fn alert(&self) -> AlertDescription {
        match self {
            SigError::UnsupportedScheme(_) | SigError::KeyMismatch(_) => {
                AlertDescription::IllegalParameter
            }
            SigError::BadKey(_) => AlertDescription::BadCertificate,
            SigError::BadSignature => AlertDescription::DecryptError,
            SigError::CannotSign(_) | SigError::BadPrivateKey(_) | SigError::SigningFailed(_) => {
                AlertDescription::InternalError
            }
        }
    }
}

impl fmt::Display for SigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SigError::UnsupportedScheme(s) => write!(f, "signature scheme {s} not allowed"),
            SigError::KeyMismatch(s) => write!(f, "signature scheme {s} does not match the key"),
            SigError::BadKey(why) => write!(f, "bad public key: {why}"),
            SigError::BadSignature => f.write_str("signature verification failed"),
            SigError::CannotSign(s) => write!(f, "our key cannot sign with {s}"),
            SigError::BadPrivateKey(why) => write!(f, "bad private key: {why}"),
            SigError::SigningFailed(why) => write!(f, "signing failed: {why}"),
        }
    }
}

impl std::error::Error for SigError {}

// ---------------------------------------------------------------------------------------------
// Hashes

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sha {
    S256,
    S384,
    S512,
}

impl Sha {
    fn len(self) -> usize {
        match self {
            Sha::S256 => 32,
            Sha::S384 => 48,
            Sha::S512 => 64,
        }
    }

    fn digest(self, m: &[u8]) -> Vec<u8> {
        match self {
            Sha::S256 => sha2::Sha256::digest(m).to_vec(),
            Sha::S384 => sha2::Sha384::digest(m).to_vec(),
            Sha::S512 => sha2::Sha512::digest(m).to_vec(),
        }
    }

    fn pss(self) -> rsa::Pss {
        match self {
            Sha::S256 => rsa::Pss::new::<sha2::Sha256>(),
            Sha::S384 => rsa::Pss::new::<sha2::Sha384>(),
            Sha::S512 => rsa::Pss::new::<sha2::Sha512>(),
        }
    }

    /// RSASSA-PSS with this hash, MGF1 with it and salt = hLen (RFC 4055 §3.1 encoding).
    fn pss_alg_id(self) -> AlgorithmIdentifier {
        match self {
            Sha::S256 => alg_id::RSA_PSS_SHA256,
            Sha::S384 => alg_id::RSA_PSS_SHA384,
            Sha::S512 => alg_id::RSA_PSS_SHA512,
        }
    }

    fn pkcs1v15(self) -> rsa::Pkcs1v15Sign {
        match self {
            Sha::S256 => rsa::Pkcs1v15Sign::new::<sha2::Sha256>(),
            Sha::S384 => rsa::Pkcs1v15Sign::new::<sha2::Sha384>(),
            Sha::S512 => rsa::Pkcs1v15Sign::new::<sha2::Sha512>(),
        }
    }
}

/// The hash of an `rsa_pss_rsae_*` scheme.
fn pss_hash(scheme: SignatureScheme) -> Option<Sha> {
    match scheme {
        SignatureScheme::rsa_pss_rsae_sha256 => Some(Sha::S256),
        SignatureScheme::rsa_pss_rsae_sha384 => Some(Sha::S384),
        SignatureScheme::rsa_pss_rsae_sha512 => Some(Sha::S512),
        _ => None,
    }
}

/// The hash of an `rsa_pss_pss_*` scheme.
fn pss_pss_hash(scheme: SignatureScheme) -> Option<Sha> {
    match scheme {
        SignatureScheme::rsa_pss_pss_sha256 => Some(Sha::S256),
        SignatureScheme::rsa_pss_pss_sha384 => Some(Sha::S384),
        SignatureScheme::rsa_pss_pss_sha512 => Some(Sha::S512),
        _ => None,
    }
}

/// id-RSASSA-PSS (RFC 4055 §1.2, OID 1.2.840.113549.1.1.10) with no parameters: a PSS key that
/// may sign with any hash. OpenSSL's `genpkey -algorithm RSA-PSS` writes this by default.
const RSASSA_PSS: AlgorithmIdentifier = AlgorithmIdentifier::from_slice(&[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a,
]);

/// What an id-RSASSA-PSS AlgorithmIdentifier (its contents) allows: `Some(None)` any hash,
/// `Some(Some(h))` only `h` (parameters hash = MGF1 hash = h, saltLength = hLen, exactly as
/// alg_id::RSA_PSS_SHA* and OpenSSL's `rsa_pss_keygen_md`/`_mgf1_md`/`_saltlen` write them).
/// `None` for anything else: RFC 4055 defaults (SHA-1, MGF1-SHA-1, salt 20) and other
/// combinations are not a TLS 1.3 scheme (§4.2.3: MGF1 with the scheme's hash, salt = hLen).
fn rsassa_pss_restriction(alg: &[u8]) -> Option<Option<Sha>> {
    if alg == RSASSA_PSS.as_ref() {
        return Some(None);
    }
    [Sha::S256, Sha::S384, Sha::S512]
        .into_iter()
        .find(|h| alg == h.pss_alg_id().as_ref())
        .map(Some)
}

/// EMSA-PSS needs emLen >= hLen + sLen + 2 with sLen = hLen (RFC 8017 §9.1.1), so e.g. a
/// 1024-bit key cannot do rsa_pss_rsae_sha512.
fn rsa_can_pss(modulus_bits: usize, h: Sha) -> bool {
    modulus_bits.saturating_sub(1).div_ceil(8) >= 2 * h.len() + 2
}

// ---------------------------------------------------------------------------------------------
// Signing

/// A private key for CertificateVerify.
#[derive(Clone)]
pub enum SigningKey {
    /// secp256r1; signs `ecdsa_secp256r1_sha256`.
    EcdsaP256(p256::ecdsa::SigningKey),
    /// secp384r1; signs `ecdsa_secp384r1_sha384`.
    EcdsaP384(p384::ecdsa::SigningKey),
    /// secp521r1; signs `ecdsa_secp521r1_sha512`.
    EcdsaP521(p521::ecdsa::SigningKey),
    /// Signs `ed25519`.
    Ed25519(ed25519_dalek::SigningKey),
    /// Signs `ed448`. Boxed: the expanded key with its public point is ~400 bytes.
    Ed448(Box<ed448_goldilocks::SigningKey>),
    /// rsaEncryption key; signs `rsa_pss_rsae_*` (never PKCS#1 v1.5 in TLS 1.3, §4.4.3).
    Rsa(rsa::RsaPrivateKey),
    /// id-RSASSA-PSS key; signs `rsa_pss_pss_*` only.
    RsaPss(RsaPssKey),
    /// ML-DSA-44, -65 or -87 key; signs `mldsa44`, `mldsa65` or `mldsa87`.
    MlDsa(MlDsaKey),
}

/// An RSA key whose algorithm is id-RSASSA-PSS (RFC 4055 §1.2), as `openssl genpkey -algorithm
/// RSA-PSS` writes it: it may make RSASSA-PSS signatures only, so in TLS 1.3 only the
/// `rsa_pss_pss_*` schemes, never `rsa_pss_rsae_*` (§4.2.3: those need rsaEncryption), and when
/// its parameters name a hash, only the scheme with that hash.
#[derive(Clone)]
pub struct RsaPssKey {
    key: rsa::RsaPrivateKey,
    restricted: Option<Sha>,
}

impl RsaPssKey {
    /// The one scheme the key's parameters allow, or `None` when they allow any hash.
    pub fn restricted_to(&self) -> Option<SignatureScheme> {
        self.restricted.map(|h| match h {
            Sha::S256 => SignatureScheme::rsa_pss_pss_sha256,
            Sha::S384 => SignatureScheme::rsa_pss_pss_sha384,
            Sha::S512 => SignatureScheme::rsa_pss_pss_sha512,
        })
    }

    /// The AlgorithmIdentifier (contents) of the key, as in its PKCS#8 and its certificate.
    fn alg_id(&self) -> AlgorithmIdentifier {
        self.restricted.map_or(RSASSA_PSS, Sha::pss_alg_id)
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SigningKey::EcdsaP256(_) => f.write_str("SigningKey::EcdsaP256(..)"),
            SigningKey::EcdsaP384(_) => f.write_str("SigningKey::EcdsaP384(..)"),
            SigningKey::EcdsaP521(_) => f.write_str("SigningKey::EcdsaP521(..)"),
            SigningKey::Ed25519(_) => f.write_str("SigningKey::Ed25519(..)"),
            SigningKey::Ed448(_) => f.write_str("SigningKey::Ed448(..)"),
            SigningKey::Rsa(k) => write!(f, "SigningKey::Rsa({} bits, ..)", k.n().bits()),
            SigningKey::RsaPss(k) => match k.restricted_to() {
                Some(s) => write!(
                    f,
                    "SigningKey::RsaPss({} bits, {s} only, ..)",
                    k.key.n().bits()
                ),
                None => write!(f, "SigningKey::RsaPss({} bits, ..)", k.key.n().bits()),
            },
            SigningKey::MlDsa(k) => write!(
                f,
                "SigningKey::MlDsa({}, {}, ..)",
                k.level().scheme(),
                if k.has_seed() { "seed" } else { "expanded" }
            ),
        }
    }
}

impl SigningKey {
    /// Parses a PKCS#8 PrivateKeyInfo holding a P-256, P-384, P-521, Ed25519, Ed448, RSA
    /// (rsaEncryption), RSA-PSS (id-RSASSA-PSS) or ML-DSA (RFC 9881) key.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<Self, SigError> {
        if let Some(k) = MlDsaKey::from_pkcs8_der(der) {
            return k.map(SigningKey::MlDsa);
        }
        // The EC decoders check the namedCurve parameter, so a P-384 key is never read as P-256.
        if let Ok(k) = p256::ecdsa::SigningKey::from_pkcs8_der(der) {
            return Ok(SigningKey::EcdsaP256(k));
        }
        if let Ok(k) = p384::ecdsa::SigningKey::from_pkcs8_der(der) {
            return Ok(SigningKey::EcdsaP384(k));
        }
        if let Ok(sk) = p521::SecretKey::from_pkcs8_der(der) {
            return Self::p521(&sk);
        }
        if let Ok(k) = ed25519_dalek::SigningKey::from_pkcs8_der(der) {
            return Ok(SigningKey::Ed25519(k));
        }
        // id-Ed448 (RFC 8410 §7): the decoder checks the OID, and, in a v2 key carrying the
        // public key, that it belongs to the seed.
        if let Ok(k) = <ed448_goldilocks::SigningKey as Ed448DecodePrivateKey>::from_pkcs8_der(der)
        {
            return Ok(SigningKey::Ed448(Box::new(k)));
        }
        if let Ok(k) = rsa::RsaPrivateKey::from_pkcs8_der(der) {
            return Self::rsa(k);
        }
        if let Some(k) = Self::rsa_pss_pkcs8(der) {
            return k;
        }
        Err(SigError::BadPrivateKey(
            "not a PKCS#8 P-256, P-384, P-521, Ed25519, Ed448, RSA, RSA-PSS or ML-DSA private key",
        ))
    }

    /// An id-RSASSA-PSS PrivateKeyInfo (RFC 5208 §5): SEQUENCE { version 0, AlgorithmIdentifier,
    /// OCTET STRING RSAPrivateKey }. The rsa crate only takes rsaEncryption, so the wrapper is
    /// read here, every length bounded by its parent; `None` if this is not one at all.
    fn rsa_pss_pkcs8(der: &[u8]) -> Option<Result<Self, SigError>> {
        let (info, rest) = der_tlv(der, 0x30)?;
        let (version, body) = der_tlv(info, 0x02)?;
        let (alg, body) = der_tlv(body, 0x30)?;
        if !rest.is_empty() || version != [0] || !alg.starts_with(RSASSA_PSS.as_ref()) {
            return None;
        }
        let Some(restricted) = rsassa_pss_restriction(alg) else {
            return Some(Err(SigError::BadPrivateKey(
                "RSA-PSS key parameters other than SHA-256/384/512 with MGF1 of the same hash \
                 and salt = hash length (§4.2.3)",
            )));
        };
        // No attributes or public key after the key (OpenSSL writes none).
        let (private_key, []) = der_tlv(body, 0x04)? else {
            return None;
        };
        let key = match rsa::RsaPrivateKey::from_pkcs1_der(private_key) {
            Ok(k) => k,
            Err(_) => return Some(Err(SigError::BadPrivateKey("not a PKCS#1 RSA private key"))),
        };
        Some(Self::rsa(key).and_then(|k| match k {
            SigningKey::Rsa(key) => {
                if restricted.is_some_and(|h| !rsa_can_pss(key.n().bits(), h)) {
                    return Err(SigError::BadPrivateKey(
                        "RSA-PSS key restricted to a hash its modulus is too small for",
                    ));
                }
                Ok(SigningKey::RsaPss(RsaPssKey { key, restricted }))
            }
            other => Ok(other),
        }))
    }

    fn p521(sk: &p521::SecretKey) -> Result<Self, SigError> {
        let bytes = Zeroizing::new(sk.to_bytes());
        p521::ecdsa::SigningKey::from_bytes(&bytes)
            .map(SigningKey::EcdsaP521)
            .map_err(|_| SigError::BadPrivateKey("P-521 scalar out of range"))
    }

    /// Reads the first private key in a PEM text: "PRIVATE KEY" (PKCS#8), "EC PRIVATE KEY"
    /// (SEC1, P-256 or P-384) or "RSA PRIVATE KEY" (PKCS#1). Other PEM blocks (such as OpenSSL's
    /// "EC PARAMETERS") are skipped.
    pub fn from_pem(pem: &str) -> Result<Self, SigError> {
        use rustls_pki_types::pem::{Error as PemError, PemObject};
        use rustls_pki_types::PrivateKeyDer;
        match PrivateKeyDer::from_pem_slice(pem.as_bytes()) {
            Ok(PrivateKeyDer::Pkcs8(k)) => Self::from_pkcs8_der(k.secret_pkcs8_der()),
            Ok(PrivateKeyDer::Sec1(k)) => Self::from_sec1_der(k.secret_sec1_der()),
            Ok(PrivateKeyDer::Pkcs1(k)) => {
                let rk = rsa::RsaPrivateKey::from_pkcs1_der(k.secret_pkcs1_der())
                    .map_err(|_| SigError::BadPrivateKey("not a PKCS#1 RSA private key"))?;
                Self::rsa(rk)
            }
            Ok(_) => Err(SigError::BadPrivateKey("unsupported private key format")),
            Err(PemError::NoItemsFound) => Err(SigError::BadPrivateKey("no private key in PEM")),
            Err(_) => Err(SigError::BadPrivateKey("malformed PEM")),
        }
    }

    /// SEC1 ECPrivateKey (RFC 5915) on P-256, P-384 or P-521. A namedCurve parameter, when
    /// present, must match; without one the length of the private key (32, 48, 66 bytes) decides.
    pub fn from_sec1_der(der: &[u8]) -> Result<Self, SigError> {
        if let Ok(sk) = p256::SecretKey::from_sec1_der(der) {
            return Ok(SigningKey::EcdsaP256(sk.into()));
        }
        if let Ok(sk) = p384::SecretKey::from_sec1_der(der) {
            return Ok(SigningKey::EcdsaP384(sk.into()));
        }
        if let Ok(sk) = p521::SecretKey::from_sec1_der(der) {
            return Self::p521(&sk);
        }
        Err(SigError::BadPrivateKey(
            "not a SEC1 P-256, P-384 or P-521 private key",
        ))
    }

    fn rsa(k: rsa::RsaPrivateKey) -> Result<Self, SigError> {
        let bits = k.n().bits();
        if !(RSA_MIN_BITS..=RSA_MAX_BITS).contains(&bits) {
            return Err(SigError::BadPrivateKey(
                "RSA modulus outside 1024..=8192 bits",
            ));
        }
        Ok(SigningKey::Rsa(k))
    }

    /// A fresh P-256 key whose scalar is 32 bytes drawn from `rng` (redrawn if 0 or >= n; see
    /// [`crate::crypto::kx`] for how a source that never yields a valid scalar is handled).
    pub fn generate_p256(rng: &mut dyn RandomSource) -> Self {
        SigningKey::EcdsaP256(p256::ecdsa::SigningKey::from(
            crate::crypto::kx::draw_p256_scalar(rng),
        ))
    }

    /// A fresh P-384 key whose scalar is 48 bytes drawn from `rng` (redrawn if 0 or >= n).
    pub fn generate_p384(rng: &mut dyn RandomSource) -> Self {
        SigningKey::EcdsaP384(p384::ecdsa::SigningKey::from(
            crate::crypto::kx::draw_p384_scalar(rng),
        ))
    }

    /// A fresh P-521 key whose scalar is drawn from `rng` as a secp521r1 key share's is (66
    /// bytes, top 7 bits cleared, redrawn if 0 or >= n).
    pub fn generate_p521(rng: &mut dyn RandomSource) -> Self {
        let sk = p521::SecretKey::from(crate::crypto::kx::draw_p521_scalar(rng));
        // A NonZeroScalar is always a valid key.
        Self::p521(&sk).unwrap_or_else(|_| unreachable!("a nonzero scalar is in range"))
    }

    /// A fresh Ed25519 key: the 32 drawn bytes are the RFC 8032 seed.
    pub fn generate_ed25519(rng: &mut dyn RandomSource) -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill(&mut seed[..]);
        SigningKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed))
    }

    /// A fresh Ed448 key: the 57 drawn bytes are the RFC 8032 §5.2.5 private key.
    pub fn generate_ed448(rng: &mut dyn RandomSource) -> Self {
        let mut seed = Zeroizing::new([0u8; ED448_SEED_LEN]);
        rng.fill(&mut seed[..]);
        let k = ed448_goldilocks::SigningKey::try_from(&seed[..])
            .unwrap_or_else(|_| unreachable!("57 bytes are an Ed448 private key"));
        SigningKey::Ed448(Box::new(k))
    }

    /// A fresh ML-DSA key: the 32 drawn bytes are its seed ξ (FIPS 204 Algorithm 6).
    pub fn generate_mldsa(level: MlDsaLevel, rng: &mut dyn RandomSource) -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill(&mut seed[..]);
        SigningKey::MlDsa(MlDsaKey::from_seed(level, &seed))
    }

    /// The schemes this key can produce, in preference order. An RSA key lists only the PSS
    /// hashes its modulus is large enough for; an RSA-PSS key only `rsa_pss_pss_*`, and with
    /// restricting parameters only the one they name.
    pub fn schemes(&self) -> &'static [SignatureScheme] {
        match self {
            SigningKey::EcdsaP256(_) => &[SignatureScheme::ecdsa_secp256r1_sha256],
            SigningKey::EcdsaP384(_) => &[SignatureScheme::ecdsa_secp384r1_sha384],
            SigningKey::EcdsaP521(_) => &[SignatureScheme::ecdsa_secp521r1_sha512],
            SigningKey::Ed25519(_) => &[SignatureScheme::ed25519],
            SigningKey::Ed448(_) => &[SignatureScheme::ed448],
            SigningKey::Rsa(k) if rsa_can_pss(k.n().bits(), Sha::S512) => &[
                SignatureScheme::rsa_pss_rsae_sha256,
                SignatureScheme::rsa_pss_rsae_sha384,
                SignatureScheme::rsa_pss_rsae_sha512,
            ],
            SigningKey::Rsa(_) => &[
                SignatureScheme::rsa_pss_rsae_sha256,
                SignatureScheme::rsa_pss_rsae_sha384,
            ],
            SigningKey::RsaPss(k) => match k.restricted {
                Some(Sha::S256) => &[SignatureScheme::rsa_pss_pss_sha256],
                Some(Sha::S384) => &[SignatureScheme::rsa_pss_pss_sha384],
                // Loading checked that the modulus holds SHA-512.
                Some(Sha::S512) => &[SignatureScheme::rsa_pss_pss_sha512],
                None if rsa_can_pss(k.key.n().bits(), Sha::S512) => &[
                    SignatureScheme::rsa_pss_pss_sha256,
                    SignatureScheme::rsa_pss_pss_sha384,
                    SignatureScheme::rsa_pss_pss_sha512,
                ],
                None => &[
                    SignatureScheme::rsa_pss_pss_sha256,
                    SignatureScheme::rsa_pss_pss_sha384,
                ],
            },
            SigningKey::MlDsa(k) => match k.level() {
                MlDsaLevel::L44 => &[SignatureScheme::mldsa44],
                MlDsaLevel::L65 => &[SignatureScheme::mldsa65],
                MlDsaLevel::L87 => &[SignatureScheme::mldsa87],
            },
        }
    }

    /// Signs `message` (for CertificateVerify: [`certificate_verify_message`]). RSA-PSS draws
    /// exactly one `fill` of hash-length bytes from `rng`, the salt; P-521 one `fill` of 32
    /// bytes for its nonce; ML-DSA one `fill` of 32 bytes, FIPS 204's `rnd`; the other schemes
    /// draw nothing.
    pub fn sign(
        &self,
        scheme: SignatureScheme,
        message: &[u8],
        rng: &mut dyn RandomSource,
    ) -> Result<Vec<u8>, SigError> {
        if !self.schemes().contains(&scheme) {
            return Err(SigError::CannotSign(scheme));
        }
        match self {
            SigningKey::EcdsaP256(k) => {
                // RFC 6979 nonce: no randomness, reproducible signatures.
                let sig: p256::ecdsa::Signature = k.sign(message);
                Ok(sig.to_der().as_bytes().to_vec())
            }
            SigningKey::EcdsaP384(k) => {
                // RFC 6979 with SHA-384, the scheme's hash.
                let sig: p384::ecdsa::Signature = k.sign(message);
                Ok(sig.to_der().as_bytes().to_vec())
            }
            SigningKey::EcdsaP521(k) => {
                // p521 0.13 signs with a random nonce only (no RFC 6979). Hedge it as ring does
                // (crypto::ring_signer): k comes from a stream seeded by the secret scalar, the
                // digest and 32 drawn bytes, so a seed replays the signature, and a reused seed
                // still never gives two messages one nonce.
                let digest = sha2::Sha512::digest(message);
                let mut drawn = Zeroizing::new([0u8; 32]);
                rng.fill(&mut drawn[..]);
                let mut seed_hash = sha2::Sha256::new();
                seed_hash.update(b"tls13lab p521 nonce");
                seed_hash.update(Zeroizing::new(k.to_bytes()).as_slice());
                seed_hash.update(digest);
                seed_hash.update(&drawn[..]);
                let mut seed = Zeroizing::new([0u8; 32]);
                seed.copy_from_slice(&seed_hash.finalize());
                let mut nonces = ChaCha20Rng::from_seed(*seed);
                let sig: p521::ecdsa::Signature = k
                    .sign_prehash_with_rng(&mut nonces, &digest)
                    .map_err(|_| SigError::SigningFailed("P-521 ECDSA signing"))?;
                Ok(sig.to_der().as_bytes().to_vec())
            }
            SigningKey::Ed25519(k) => Ok(k.sign(message).to_bytes().to_vec()),
            // Pure Ed448 with the empty context (RFC 8446 §4.2.3 names PureEdDSA; RFC 8032 §5.2).
            SigningKey::Ed448(k) => Ok(k.sign_raw(message).to_bytes().to_vec()),
            SigningKey::Rsa(k) => {
                let h = pss_hash(scheme).ok_or(SigError::CannotSign(scheme))?;
                rsa_pss_sign(k, h, message, rng)
            }
            SigningKey::RsaPss(k) => {
                let h = pss_pss_hash(scheme).ok_or(SigError::CannotSign(scheme))?;
                rsa_pss_sign(&k.key, h, message, rng)
            }
            SigningKey::MlDsa(k) => {
                // Hedged signing (FIPS 204 §3.4): rnd from the connection's source, so a seeded
                // connection replays the signature byte for byte.
                let mut rnd = Zeroizing::new([0u8; 32]);
                rng.fill(&mut rnd[..]);
                k.sign(message, &rnd)
            }
        }
    }

    /// PKCS#8 DER of the private key (e.g. to write a PEM for a demo server).
    pub fn to_pkcs8_der(&self) -> Result<Vec<u8>, SigError> {
        let failed = || SigError::SigningFailed("PKCS#8 encoding");
        let doc = match self {
            SigningKey::EcdsaP256(k) => k.to_pkcs8_der(),
            SigningKey::EcdsaP384(k) => k.to_pkcs8_der(),
            SigningKey::EcdsaP521(k) => p521::SecretKey::from(k.as_nonzero_scalar()).to_pkcs8_der(),
            SigningKey::Ed25519(k) => k.to_pkcs8_der(),
            SigningKey::Ed448(k) => {
                // As OpenSSL writes it (RFC 8410 §7): version 0, id-Ed448, and the
                // CurvePrivateKey OCTET STRING inside the privateKey OCTET STRING; no public key.
                let seed = Zeroizing::new(k.to_bytes());
                let inner = Zeroizing::new(der_wrap(0x04, seed.as_slice()));
                let octets = Zeroizing::new(der_wrap(0x04, &inner));
                let body = Zeroizing::new(
                    [
                        &[0x02, 0x01, 0x00][..],
                        &der_wrap(0x30, alg_id::ED448.as_ref()),
                        &octets,
                    ]
                    .concat(),
                );
                return Ok(der_wrap(0x30, &body));
            }
            SigningKey::Rsa(k) => k.to_pkcs8_der(),
            SigningKey::RsaPss(k) => {
                // The PrivateKeyInfo rsa_pss_pkcs8 reads: version 0, the key's algorithm, the
                // PKCS#1 RSAPrivateKey.
                let inner = k.key.to_pkcs1_der().map_err(|_| failed())?;
                let octets = Zeroizing::new(der_wrap(0x04, inner.as_bytes()));
                let body = Zeroizing::new(
                    [
                        &[0x02, 0x01, 0x00][..],
                        &der_wrap(0x30, k.alg_id().as_ref()),
                        &octets,
                    ]
                    .concat(),
                );
                return Ok(der_wrap(0x30, &body));
            }
            SigningKey::MlDsa(k) => return Ok(k.to_pkcs8_der().to_vec()),
        };
        doc.map(|d| d.as_bytes().to_vec()).map_err(|_| failed())
    }

    /// SubjectPublicKeyInfo DER of the public key.
    pub fn public_key_spki_der(&self) -> Result<Vec<u8>, SigError> {
        let doc = match self {
            SigningKey::EcdsaP256(k) => k.verifying_key().to_public_key_der(),
            SigningKey::EcdsaP384(k) => k.verifying_key().to_public_key_der(),
            SigningKey::EcdsaP521(k) => p521::SecretKey::from(k.as_nonzero_scalar())
                .public_key()
                .to_public_key_der(),
            SigningKey::Ed25519(k) => k.verifying_key().to_public_key_der(),
            SigningKey::Ed448(k) => {
                // RFC 8410 §4: the 57-byte public key is the BIT STRING.
                let bits = [&[0u8][..], &k.verifying_key().to_bytes()].concat();
                let alg = der_wrap(0x30, alg_id::ED448.as_ref());
                return Ok(der_wrap(0x30, &[alg, der_wrap(0x03, &bits)].concat()));
            }
            SigningKey::Rsa(k) => k.to_public_key().to_public_key_der(),
            SigningKey::RsaPss(k) => {
                // The same RSAPublicKey under the key's id-RSASSA-PSS identifier (RFC 4055 §1.2).
                let pk = k
                    .key
                    .to_public_key()
                    .to_pkcs1_der()
                    .map_err(|_| SigError::SigningFailed("SPKI encoding"))?;
                let bits = [&[0u8][..], pk.as_bytes()].concat();
                let body = [der_wrap(0x30, k.alg_id().as_ref()), der_wrap(0x03, &bits)].concat();
                return Ok(der_wrap(0x30, &body));
            }
            SigningKey::MlDsa(k) => {
                // RFC 9881 §4: the encoded public key is the BIT STRING, no wrapping.
                let bits = [&[0u8][..], &k.public_key()].concat();
                let alg = der_wrap(0x30, k.level().alg_id().as_ref());
                return Ok(der_wrap(0x30, &[alg, der_wrap(0x03, &bits)].concat()));
            }
        };
        doc.map(|d| d.as_bytes().to_vec())
            .map_err(|_| SigError::SigningFailed("SPKI encoding"))
    }
}

/// RSASSA-PSS (RFC 8017 §8.1) with MGF1 of the same hash and a salt of hash length drawn in
/// one `fill` from `rng` (§4.2.3), for rsaEncryption and id-RSASSA-PSS keys alike.
fn rsa_pss_sign(
    k: &rsa::RsaPrivateKey,
    h: Sha,
    message: &[u8],
    rng: &mut dyn RandomSource,
) -> Result<Vec<u8>, SigError> {
    let hashed = h.digest(message);
    let mut salt = vec![0u8; h.len()];
    rng.fill(&mut salt);
    // The rsa crate also wants randomness for blinding. Taking that from `rng` too
    // would make the number of draws depend on bignum internals, so derive it from
    // the secret exponent, message and salt: secret, unpredictable, reproducible.
    let mut seed_hash = sha2::Sha256::new();
    seed_hash.update(b"tls13lab rsa blinding");
    seed_hash.update(Zeroizing::new(k.d().to_bytes_be()).as_slice());
    seed_hash.update(&hashed);
    seed_hash.update(&salt);
    let mut seed = Zeroizing::new([0u8; 32]);
    seed.copy_from_slice(&seed_hash.finalize());
    let mut rng = SaltThenBlinding {
        salt: Some(salt),
        blinding: ChaCha20Rng::from_seed(*seed),
    };
    k.sign_with_rng(&mut rng, h.pss(), &hashed)
        .map_err(|_| SigError::SigningFailed("RSA-PSS signing"))
}

/// RNG handed to the rsa crate: its first draw (the PSS salt, drawn before any blinding) is the
/// salt we took from the injected source; later draws come from the derived blinding stream.
struct SaltThenBlinding {
    salt: Option<Vec<u8>>,
    blinding: ChaCha20Rng,
}

impl RngCore for SaltThenBlinding {
    fn next_u32(&mut self) -> u32 {
        self.blinding.next_u32()
    }

    fn next_u64(&mut self) -> u64 {
        self.blinding.next_u64()
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        match self.salt.take() {
            Some(salt) if salt.len() == dest.len() => dest.copy_from_slice(&salt),
            other => {
                self.salt = other;
                self.blinding.fill_bytes(dest)
            }
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for SaltThenBlinding {}

// ---------------------------------------------------------------------------------------------
// ML-DSA (FIPS 204; draft-ietf-tls-mldsa; keys and certificates RFC 9881)

/// An ML-DSA parameter set (FIPS 204 §4, Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MlDsaLevel {
    /// ML-DSA-44 (`mldsa44`, id-ML-DSA-44).
    L44,
    /// ML-DSA-65 (`mldsa65`, id-ML-DSA-65).
    L65,
    /// ML-DSA-87 (`mldsa87`, id-ML-DSA-87).
    L87,
}

impl MlDsaLevel {
    /// All three, smallest first.
    pub const ALL: [MlDsaLevel; 3] = [MlDsaLevel::L44, MlDsaLevel::L65, MlDsaLevel::L87];

    /// The TLS 1.3 scheme (draft-ietf-tls-mldsa §3).
    pub fn scheme(self) -> SignatureScheme {
        match self {
            MlDsaLevel::L44 => SignatureScheme::mldsa44,
            MlDsaLevel::L65 => SignatureScheme::mldsa65,
            MlDsaLevel::L87 => SignatureScheme::mldsa87,
        }
    }

    /// The level of an ML-DSA scheme.
    pub fn of_scheme(scheme: SignatureScheme) -> Option<MlDsaLevel> {
        MlDsaLevel::ALL.into_iter().find(|l| l.scheme() == scheme)
    }

    /// id-ML-DSA-44/65/87 with absent parameters (RFC 9881 §2): the key's and the signature's.
    fn alg_id(self) -> AlgorithmIdentifier {
        match self {
            MlDsaLevel::L44 => alg_id::ML_DSA_44,
            MlDsaLevel::L65 => alg_id::ML_DSA_65,
            MlDsaLevel::L87 => alg_id::ML_DSA_87,
        }
    }

    /// Bytes of the encoded public key (FIPS 204 Table 2).
    pub fn public_key_len(self) -> usize {
        [1312, 1952, 2592][self as usize]
    }

    /// Bytes of a signature (FIPS 204 Table 2).
    pub fn signature_len(self) -> usize {
        [2420, 3309, 4627][self as usize]
    }

    /// Bytes of the expanded private key (skEncode, FIPS 204 Table 2).
    pub fn expanded_key_len(self) -> usize {
        [2560, 4032, 4896][self as usize]
    }
    /// Whether every s1 and s2 coefficient of an expanded key (ρ 32, K 32, tr 64, then s1 and
    /// s2 as BitPack(η, η): η − s in bitlen(2η) bits, little-endian, FIPS 204 Algorithm 24)
    /// encodes a value in [0, 2η]. The caller checked the length.
    fn s1_s2_in_range(self, expanded: &[u8]) -> bool {
        // (k + l, η, bits per coefficient)
        let (polys, eta, bits) = match self {
            MlDsaLevel::L44 => (8, 2, 3),
            MlDsaLevel::L65 => (11, 4, 4),
            MlDsaLevel::L87 => (15, 2, 3),
        };
        let Some(packed) = expanded.get(128..128 + polys * 32 * bits) else {
            return false;
        };
        let (mut acc, mut have) = (0u32, 0u32);
        let mut ok = true;
        for &byte in packed {
            acc |= u32::from(byte) << have;
            have += 8;
            while have >= bits as u32 {
                // Not short-circuited: the key's bytes are secret.
                ok &= acc & ((1 << bits) - 1) <= 2 * eta;
                acc >>= bits;
                have -= bits as u32;
            }
        }
        ok
    }
}

/// The RustCrypto `ml-dsa` backend: the all-RustCrypto build's signer and verifier, and in
/// the tests of a build with `aws-lc-mldsa` the reference aws-lc's bytes are compared with.
#[cfg(any(test, not(feature = "aws-lc-mldsa")))]
mod mldsa_rc {
    use core::fmt;

    use zeroize::Zeroizing;

    use super::{MlDsaLevel, SigError};

    /// The expanded key FIPS 204 signs with, one type per parameter set (boxed: up to ~60 KB
    /// with its precomputed NTT matrix).
    #[derive(Clone)]
    pub(super) enum Key {
        L44(Box<ml_dsa::ExpandedSigningKey<ml_dsa::MlDsa44>>),
        L65(Box<ml_dsa::ExpandedSigningKey<ml_dsa::MlDsa65>>),
        L87(Box<ml_dsa::ExpandedSigningKey<ml_dsa::MlDsa87>>),
    }

    /// Runs `$body` with `$k` bound to the expanded key of whichever parameter set `$e` holds.
    macro_rules! dispatch {
        ($e:expr, $k:ident => $body:expr) => {
            match $e {
                Key::L44($k) => $body,
                Key::L65($k) => $body,
                Key::L87($k) => $body,
            }
        };
    }

    impl Key {
        /// ML-DSA.KeyGen_internal(ξ) (FIPS 204 Algorithm 6).
        pub(super) fn from_seed(level: MlDsaLevel, seed: &[u8; 32]) -> Key {
            let xi = ml_dsa::B32::from(*seed);
            match level {
                MlDsaLevel::L44 => Key::L44(Box::new(ml_dsa::ExpandedSigningKey::from_seed(&xi))),
                MlDsaLevel::L65 => Key::L65(Box::new(ml_dsa::ExpandedSigningKey::from_seed(&xi))),
                MlDsaLevel::L87 => Key::L87(Box::new(ml_dsa::ExpandedSigningKey::from_seed(&xi))),
            }
        }

        /// skDecode of an expanded key whose length and s1/s2 ranges the caller checked (ml-dsa
        /// asserts on them); `None` unless it re-encodes to the same bytes.
        pub(super) fn from_expanded(level: MlDsaLevel, bytes: &[u8]) -> Option<Key> {
            #[allow(deprecated)] // the expandedKey form of RFC 9881 §6; checked by the caller
            fn decode<P: ml_dsa::MlDsaParams>(
                bytes: &[u8],
            ) -> Option<Box<ml_dsa::ExpandedSigningKey<P>>> {
                let enc = ml_dsa::ExpandedSigningKeyBytes::<P>::try_from(bytes).ok()?;
                let k = ml_dsa::ExpandedSigningKey::<P>::from_expanded(&enc);
                (k.to_expanded() == enc).then(|| Box::new(k))
            }
            Some(match level {
                MlDsaLevel::L44 => Key::L44(decode(bytes)?),
                MlDsaLevel::L65 => Key::L65(decode(bytes)?),
                MlDsaLevel::L87 => Key::L87(decode(bytes)?),
            })
        }

        pub(super) fn level(&self) -> MlDsaLevel {
            match self {
                Key::L44(_) => MlDsaLevel::L44,
                Key::L65(_) => MlDsaLevel::L65,
                Key::L87(_) => MlDsaLevel::L87,
            }
        }

        /// pkEncode (FIPS 204 Algorithm 22).
        pub(super) fn public_key(&self) -> Vec<u8> {
            dispatch!(self, k => k.verifying_key().encode().to_vec())
        }

        /// skEncode (FIPS 204 Algorithm 24).
        pub(super) fn expanded(&self) -> Zeroizing<Vec<u8>> {
            #[allow(deprecated)] // writes the expandedKey form; only for comparison and export
            let v = dispatch!(self, k => k.to_expanded().to_vec());
            Zeroizing::new(v)
        }

        /// Hedged ML-DSA.Sign (FIPS 204 Algorithm 2), empty context, `rnd` as its randomness.
        pub(super) fn sign(&self, message: &[u8], rnd: &[u8; 32]) -> Result<Vec<u8>, SigError> {
            let mut rng = OneDraw(Some(*rnd));
            dispatch!(self, k => k
                .sign_randomized(message, &[], &mut rng)
                .map(|s| s.encode().to_vec()))
            .map_err(|_| SigError::SigningFailed("ML-DSA signing"))
        }
    }

    /// ML-DSA.Verify (FIPS 204 Algorithm 3) with the empty context string.
    pub(super) fn verify(
        level: MlDsaLevel,
        public_key: &[u8],
        message: &[u8],
        sig: &[u8],
    ) -> Result<(), SigError> {
        fn verify<P: ml_dsa::MlDsaParams>(
            public_key: &[u8],
            message: &[u8],
            sig: &[u8],
        ) -> Result<(), SigError> {
            let enc = ml_dsa::EncodedVerifyingKey::<P>::try_from(public_key)
                .map_err(|_| SigError::BadKey("ML-DSA public key of the wrong length"))?;
            let vk = ml_dsa::VerifyingKey::<P>::decode(&enc);
            // A signature of the wrong length, or whose hint or z is malformed, simply does not
            // verify (§4.4.3: decrypt_error).
            let sig = ml_dsa::Signature::<P>::try_from(sig).map_err(|_| SigError::BadSignature)?;
            if vk.verify_with_context(message, &[], &sig) {
                Ok(())
            } else {
                Err(SigError::BadSignature)
            }
        }
        match level {
            MlDsaLevel::L44 => verify::<ml_dsa::MlDsa44>(public_key, message, sig),
            MlDsaLevel::L65 => verify::<ml_dsa::MlDsa65>(public_key, message, sig),
            MlDsaLevel::L87 => verify::<ml_dsa::MlDsa87>(public_key, message, sig),
        }
    }

    /// The RNG handed to ml-dsa's hedged signer: the 32 bytes we drew, once. Any further
    /// request fails, so the signer can never consume randomness the RandomSource did not give.
    struct OneDraw(Option<[u8; 32]>);

    /// What [`OneDraw`] answers to a second request.
    #[derive(Debug)]
    struct DrawnOnce;

    impl fmt::Display for DrawnOnce {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("ML-DSA asked for more than its 32 random bytes")
        }
    }

    impl std::error::Error for DrawnOnce {}

    impl ml_dsa::signature::rand_core::TryRng for OneDraw {
        type Error = DrawnOnce;

        fn try_next_u32(&mut self) -> Result<u32, DrawnOnce> {
            Err(DrawnOnce)
        }

        fn try_next_u64(&mut self) -> Result<u64, DrawnOnce> {
            Err(DrawnOnce)
        }

        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), DrawnOnce> {
            match self.0.take() {
                Some(rnd) if rnd.len() == dst.len() => {
                    dst.copy_from_slice(&rnd);
                    Ok(())
                }
                _ => Err(DrawnOnce),
            }
        }
    }

    impl ml_dsa::signature::rand_core::TryCryptoRng for OneDraw {}

    impl Drop for OneDraw {
        fn drop(&mut self) {
            if let Some(rnd) = &mut self.0 {
                zeroize::Zeroize::zeroize(rnd);
            }
        }
    }
}

/// aws-lc's ML-DSA key: the encoded expanded key it signs from (skEncode) and the public key.
#[cfg(feature = "aws-lc-mldsa")]
#[derive(Clone)]
struct AwsLcMlDsaKey {
    level: MlDsaLevel,
    expanded: Zeroizing<Vec<u8>>,
    public: Vec<u8>,
}

/// An ML-DSA private key. RFC 9881 §6 lets a key be stored as its 32-byte seed ξ, its expanded
/// key, or both; the seed is kept when it was given, so the key is written back the way it came
/// (seed-only when both were given, the form RFC 9881 recommends). Signs on aws-lc with
/// `aws-lc-mldsa` (the default), on RustCrypto's `ml-dsa` without: the same bytes.
#[derive(Clone)]
pub struct MlDsaKey {
    #[cfg(feature = "aws-lc-mldsa")]
    key: AwsLcMlDsaKey,
    #[cfg(not(feature = "aws-lc-mldsa"))]
    key: mldsa_rc::Key,
    seed: Option<Zeroizing<[u8; 32]>>,
}

impl MlDsaKey {
    /// The key of ML-DSA.KeyGen_internal(ξ) (FIPS 204 Algorithm 6).
    pub fn from_seed(level: MlDsaLevel, seed: &[u8; 32]) -> MlDsaKey {
        #[cfg(feature = "aws-lc-mldsa")]
        let key = {
            let (public, expanded) = super::awslc::mldsa_keypair(level, seed);
            AwsLcMlDsaKey {
                level,
                expanded,
                public,
            }
        };
        #[cfg(not(feature = "aws-lc-mldsa"))]
        let key = mldsa_rc::Key::from_seed(level, seed);
        MlDsaKey {
            key,
            seed: Some(Zeroizing::new(*seed)),
        }
    }

    /// A key from its expanded form (skEncode, FIPS 204 Algorithm 24) alone. skDecode takes
    /// any bytes, so the key is checked before any backend sees it: s1 and s2 within η, t0 the
    /// one s1 and s2 give, tr = H(pk) (on aws-lc, which recomputes the public key; on
    /// RustCrypto, by re-encoding and signing a test message its own public key verifies).
    pub fn from_expanded(level: MlDsaLevel, expanded: &[u8]) -> Result<MlDsaKey, SigError> {
        let bad = SigError::BadPrivateKey("not an ML-DSA expanded private key of this level");
        // ml-dsa's skDecode asserts (panics) on an s1 or s2 coefficient outside [-η, η]: check
        // those first on either backend (t0's 13-bit fields take every value).
        if expanded.len() != level.expanded_key_len() || !level.s1_s2_in_range(expanded) {
            return Err(bad);
        }
        #[cfg(feature = "aws-lc-mldsa")]
        {
            let public = super::awslc::mldsa_public_from_private(level, expanded).ok_or(bad)?;
            Ok(MlDsaKey {
                key: AwsLcMlDsaKey {
                    level,
                    expanded: Zeroizing::new(expanded.to_vec()),
                    public,
                },
                seed: None,
            })
        }
        #[cfg(not(feature = "aws-lc-mldsa"))]
        {
            let key = MlDsaKey {
                key: mldsa_rc::Key::from_expanded(level, expanded).ok_or(bad.clone())?,
                seed: None,
            };
            let probe = b"tls13lab ML-DSA expanded key check";
            let sig = key.sign(probe, &[0; 32]).map_err(|_| bad.clone())?;
            mldsa_verify(level, &key.public_key(), probe, &sig).map_err(|_| bad)?;
            Ok(key)
        }
    }

    /// The parameter set.
    pub fn level(&self) -> MlDsaLevel {
        #[cfg(feature = "aws-lc-mldsa")]
        return self.key.level;
        #[cfg(not(feature = "aws-lc-mldsa"))]
        return self.key.level();
    }

    /// Whether the seed ξ is known (the key was generated or read from a seed form).
    pub fn has_seed(&self) -> bool {
        self.seed.is_some()
    }

    /// The encoded public key (pkEncode, FIPS 204 Algorithm 22).
    pub fn public_key(&self) -> Vec<u8> {
        #[cfg(feature = "aws-lc-mldsa")]
        return self.key.public.clone();
        #[cfg(not(feature = "aws-lc-mldsa"))]
        return self.key.public_key();
    }

    /// The expanded private key (skEncode), as RFC 9881's expandedKey holds it.
    fn expanded(&self) -> Zeroizing<Vec<u8>> {
        #[cfg(feature = "aws-lc-mldsa")]
        return self.key.expanded.clone();
        #[cfg(not(feature = "aws-lc-mldsa"))]
        return self.key.expanded();
    }

    /// Hedged ML-DSA.Sign (FIPS 204 Algorithm 2) with the empty context string
    /// (draft-ietf-tls-mldsa §3.2), so M' = 0x00 || 0x00 || message, and `rnd` as its 32 random
    /// bytes. FIPS 204 already mixes the secret K, rnd and μ into the signing nonce, so a
    /// repeated `rnd` (a reused seed) over two messages still gives two nonces.
    fn sign(&self, message: &[u8], rnd: &[u8; 32]) -> Result<Vec<u8>, SigError> {
        #[cfg(feature = "aws-lc-mldsa")]
        {
            let level = self.key.level;
            let mut sig = Vec::with_capacity(level.signature_len());
            super::awslc::mldsa_sign(level, &self.key.expanded, message, rnd, &mut sig)
                .ok_or(SigError::SigningFailed("ML-DSA signing"))?;
            Ok(sig)
        }
        #[cfg(not(feature = "aws-lc-mldsa"))]
        self.key.sign(message, rnd)
    }

    /// The PKCS#8 PrivateKeyInfo (RFC 9881 §6): version 0, id-ML-DSA-*, and the private key
    /// CHOICE: `seed` [0] when it is known, else `expandedKey`.
    fn to_pkcs8_der(&self) -> Zeroizing<Vec<u8>> {
        let choice = match &self.seed {
            Some(seed) => Zeroizing::new(der_wrap(0x80, &seed[..])),
            None => Zeroizing::new(der_wrap(0x04, &self.expanded())),
        };
        let body = Zeroizing::new(
            [
                &[0x02, 0x01, 0x00][..],
                &der_wrap(0x30, self.level().alg_id().as_ref()),
                &der_wrap(0x04, &choice),
            ]
            .concat(),
        );
        Zeroizing::new(der_wrap(0x30, &body))
    }

    /// An ML-DSA PrivateKeyInfo (RFC 9881 §6, as OpenSSL 3.5/4.0 write it: version 0, no
    /// attributes, no public key); `None` if it is no ML-DSA key at all.
    fn from_pkcs8_der(der: &[u8]) -> Option<Result<MlDsaKey, SigError>> {
        let (info, rest) = der_tlv(der, 0x30)?;
        let (version, body) = der_tlv(info, 0x02)?;
        let (alg, body) = der_tlv(body, 0x30)?;
        let level = MlDsaLevel::ALL
            .into_iter()
            .find(|l| alg == l.alg_id().as_ref())?;
        let Some((private_key, [])) = der_tlv(body, 0x04) else {
            return Some(Err(SigError::BadPrivateKey(
                "ML-DSA PKCS#8 without exactly one private key OCTET STRING",
            )));
        };
        if !rest.is_empty() || version != [0] {
            return Some(Err(SigError::BadPrivateKey(
                "ML-DSA PKCS#8 other than version 0",
            )));
        }
        Some(Self::from_private_key_choice(level, private_key))
    }

    /// ML-DSA-*-PrivateKey ::= CHOICE { seed [0] OCTET STRING (SIZE (32)), expandedKey OCTET
    /// STRING, both SEQUENCE { seed, expandedKey } } (RFC 9881 §6). In `both`, the expanded key
    /// must be the one the seed expands to (§8: a mismatch is an invalid key).
    fn from_private_key_choice(level: MlDsaLevel, der: &[u8]) -> Result<MlDsaKey, SigError> {
        let seed32 = |s: &[u8]| -> Result<[u8; 32], SigError> {
            s.try_into()
                .map_err(|_| SigError::BadPrivateKey("ML-DSA seed is not 32 bytes"))
        };
        if let Some((seed, [])) = der_tlv(der, 0x80) {
            return Ok(Self::from_seed(level, &Zeroizing::new(seed32(seed)?)));
        }
        if let Some((expanded, [])) = der_tlv(der, 0x04) {
            if expanded.len() != level.expanded_key_len() {
                return Err(SigError::BadPrivateKey(
                    "ML-DSA expanded key of the wrong length",
                ));
            }
            return Self::from_expanded(level, expanded);
        }
        if let Some((both, [])) = der_tlv(der, 0x30) {
            let (seed, rest) =
                der_tlv(both, 0x04).ok_or(SigError::BadPrivateKey("ML-DSA both: no seed"))?;
            let Some((expanded, [])) = der_tlv(rest, 0x04) else {
                return Err(SigError::BadPrivateKey("ML-DSA both: no expanded key"));
            };
            let key = Self::from_seed(level, &Zeroizing::new(seed32(seed)?));
            if !bool::from(subtle::ConstantTimeEq::ct_eq(&key.expanded()[..], expanded)) {
                return Err(SigError::BadPrivateKey(
                    "ML-DSA seed and expanded key do not agree",
                ));
            }
            return Ok(key);
        }
        Err(SigError::BadPrivateKey(
            "ML-DSA private key is neither seed, expandedKey nor both",
        ))
    }
}

/// ML-DSA.Verify (FIPS 204 Algorithm 3) with the empty context string, `public_key` the
/// encoded key (the subjectPublicKey BIT STRING contents, RFC 9881 §4). A signature of the
/// wrong length, or whose hint or z is malformed, simply does not verify (§4.4.3:
/// decrypt_error).
fn mldsa_verify(
    level: MlDsaLevel,
    public_key: &[u8],
    message: &[u8],
    sig: &[u8],
) -> Result<(), SigError> {
    #[cfg(feature = "aws-lc-mldsa")]
    {
        if public_key.len() != level.public_key_len() {
            return Err(SigError::BadKey("ML-DSA public key of the wrong length"));
        }
        if super::awslc::mldsa_verify(level, public_key, message, sig) {
            Ok(())
        } else {
            Err(SigError::BadSignature)
        }
    }
    #[cfg(not(feature = "aws-lc-mldsa"))]
    mldsa_rc::verify(level, public_key, message, sig)
}

// ---------------------------------------------------------------------------------------------
// Verification

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AlgKind {
    /// DER ECDSA-Sig-Value over a P-256 key.
    EcdsaP256(Sha),
    /// DER ECDSA-Sig-Value over a P-384 key.
    EcdsaP384(Sha),
    /// DER ECDSA-Sig-Value over a P-521 key.
    EcdsaP521(Sha),
    Ed25519,
    Ed448,
    /// RSASSA-PKCS1-v1_5: certificates only.
    RsaPkcs1(Sha),
    /// RSASSA-PSS, MGF1 with the same hash, salt length = hash length (§4.2.3).
    RsaPss(Sha),
    /// Pure ML-DSA, empty context (draft-ietf-tls-mldsa §3.2, RFC 9881 §3).
    MlDsa(MlDsaLevel),
}

/// A signature verification algorithm on RustCrypto, usable by webpki and by CertificateVerify.
pub struct VerifyAlg {
    name: &'static str,
    kind: AlgKind,
    public_key_alg_id: AlgorithmIdentifier,
    signature_alg_id: AlgorithmIdentifier,
}

impl fmt::Debug for VerifyAlg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VerifyAlg({}, RustCrypto)", self.name)
    }
}

/// ECDSA P-256 with SHA-256.
pub static ECDSA_P256_SHA256: VerifyAlg = VerifyAlg {
    name: "ecdsa_secp256r1_sha256",
    kind: AlgKind::EcdsaP256(Sha::S256),
    public_key_alg_id: alg_id::ECDSA_P256,
    signature_alg_id: alg_id::ECDSA_SHA256,
};
/// ECDSA P-256 with SHA-384 (seen in certificates issued by P-256 CAs).
pub static ECDSA_P256_SHA384: VerifyAlg = VerifyAlg {
    name: "ecdsa_p256_sha384",
    kind: AlgKind::EcdsaP256(Sha::S384),
    public_key_alg_id: alg_id::ECDSA_P256,
    signature_alg_id: alg_id::ECDSA_SHA384,
};
/// ECDSA P-384 with SHA-384 (`ecdsa_secp384r1_sha384`; public CAs' P-384 intermediates).
pub static ECDSA_P384_SHA384: VerifyAlg = VerifyAlg {
    name: "ecdsa_secp384r1_sha384",
    kind: AlgKind::EcdsaP384(Sha::S384),
    public_key_alg_id: alg_id::ECDSA_P384,
    signature_alg_id: alg_id::ECDSA_SHA384,
};
/// ECDSA P-384 with SHA-256 (certificates only: a P-384 CA signing with SHA-256).
pub static ECDSA_P384_SHA256: VerifyAlg = VerifyAlg {
    name: "ecdsa_p384_sha256",
    kind: AlgKind::EcdsaP384(Sha::S256),
    public_key_alg_id: alg_id::ECDSA_P384,
    signature_alg_id: alg_id::ECDSA_SHA256,
};
/// ECDSA P-521 with SHA-512 (`ecdsa_secp521r1_sha512`).
pub static ECDSA_P521_SHA512: VerifyAlg = VerifyAlg {
    name: "ecdsa_secp521r1_sha512",
    kind: AlgKind::EcdsaP521(Sha::S512),
    public_key_alg_id: alg_id::ECDSA_P521,
    signature_alg_id: alg_id::ECDSA_SHA512,
};
/// ECDSA P-521 with SHA-384 (certificates only).
pub static ECDSA_P521_SHA384: VerifyAlg = VerifyAlg {
    name: "ecdsa_p521_sha384",
    kind: AlgKind::EcdsaP521(Sha::S384),
    public_key_alg_id: alg_id::ECDSA_P521,
    signature_alg_id: alg_id::ECDSA_SHA384,
};
/// ECDSA P-521 with SHA-256 (certificates only).
pub static ECDSA_P521_SHA256: VerifyAlg = VerifyAlg {
    name: "ecdsa_p521_sha256",
    kind: AlgKind::EcdsaP521(Sha::S256),
    public_key_alg_id: alg_id::ECDSA_P521,
    signature_alg_id: alg_id::ECDSA_SHA256,
};
/// Ed25519 (RFC 8410 identifiers).
pub static ED25519: VerifyAlg = VerifyAlg {
    name: "ed25519",
    kind: AlgKind::Ed25519,
    public_key_alg_id: alg_id::ED25519,
    signature_alg_id: alg_id::ED25519,
};
/// Ed448 (RFC 8410 identifiers).
pub static ED448: VerifyAlg = VerifyAlg {
    name: "ed448",
    kind: AlgKind::Ed448,
    public_key_alg_id: alg_id::ED448,
    signature_alg_id: alg_id::ED448,
};
/// RSA PKCS#1 v1.5 SHA-256 (certificates only).
pub static RSA_PKCS1_SHA256: VerifyAlg = VerifyAlg {
    name: "rsa_pkcs1_sha256",
    kind: AlgKind::RsaPkcs1(Sha::S256),
    public_key_alg_id: alg_id::RSA_ENCRYPTION,
    signature_alg_id: alg_id::RSA_PKCS1_SHA256,
};
/// RSA PKCS#1 v1.5 SHA-384 (certificates only).
pub static RSA_PKCS1_SHA384: VerifyAlg = VerifyAlg {
    name: "rsa_pkcs1_sha384",
    kind: AlgKind::RsaPkcs1(Sha::S384),
    public_key_alg_id: alg_id::RSA_ENCRYPTION,
    signature_alg_id: alg_id::RSA_PKCS1_SHA384,
};
/// RSA PKCS#1 v1.5 SHA-512 (certificates only).
pub static RSA_PKCS1_SHA512: VerifyAlg = VerifyAlg {
    name: "rsa_pkcs1_sha512",
    kind: AlgKind::RsaPkcs1(Sha::S512),
    public_key_alg_id: alg_id::RSA_ENCRYPTION,
    signature_alg_id: alg_id::RSA_PKCS1_SHA512,
};
/// RSA-PSS SHA-256 with an rsaEncryption key.
pub static RSA_PSS_RSAE_SHA256: VerifyAlg = VerifyAlg {
    name: "rsa_pss_rsae_sha256",
    kind: AlgKind::RsaPss(Sha::S256),
    public_key_alg_id: alg_id::RSA_ENCRYPTION,
    signature_alg_id: alg_id::RSA_PSS_SHA256,
};
/// RSA-PSS SHA-384 with an rsaEncryption key.
pub static RSA_PSS_RSAE_SHA384: VerifyAlg = VerifyAlg {
    name: "rsa_pss_rsae_sha384",
    kind: AlgKind::RsaPss(Sha::S384),
    public_key_alg_id: alg_id::RSA_ENCRYPTION,
    signature_alg_id: alg_id::RSA_PSS_SHA384,
};
/// RSA-PSS SHA-512 with an rsaEncryption key.
pub static RSA_PSS_RSAE_SHA512: VerifyAlg = VerifyAlg {
    name: "rsa_pss_rsae_sha512",
    kind: AlgKind::RsaPss(Sha::S512),
    public_key_alg_id: alg_id::RSA_ENCRYPTION,
    signature_alg_id: alg_id::RSA_PSS_SHA512,
};

/// RSA-PSS SHA-256 with an id-RSASSA-PSS key (`rsa_pss_pss_sha256`), unrestricted.
pub static RSA_PSS_PSS_SHA256: VerifyAlg = VerifyAlg {
    name: "rsa_pss_pss_sha256",
    kind: AlgKind::RsaPss(Sha::S256),
    public_key_alg_id: RSASSA_PSS,
    signature_alg_id: alg_id::RSA_PSS_SHA256,
};
/// RSA-PSS SHA-384 with an id-RSASSA-PSS key, unrestricted.
pub static RSA_PSS_PSS_SHA384: VerifyAlg = VerifyAlg {
    name: "rsa_pss_pss_sha384",
    kind: AlgKind::RsaPss(Sha::S384),
    public_key_alg_id: RSASSA_PSS,
    signature_alg_id: alg_id::RSA_PSS_SHA384,
};
/// RSA-PSS SHA-512 with an id-RSASSA-PSS key, unrestricted.
pub static RSA_PSS_PSS_SHA512: VerifyAlg = VerifyAlg {
    name: "rsa_pss_pss_sha512",
    kind: AlgKind::RsaPss(Sha::S512),
    public_key_alg_id: RSASSA_PSS,
    signature_alg_id: alg_id::RSA_PSS_SHA512,
};
// webpki matches a key's AlgorithmIdentifier byte for byte, so a PSS key whose parameters
// restrict it to one hash needs its own object; the identifier is then the signature's.
/// RSA-PSS SHA-256 with an id-RSASSA-PSS key restricted to SHA-256.
pub static RSA_PSS_PSS_SHA256_ONLY: VerifyAlg = VerifyAlg {
    name: "rsa_pss_pss_sha256",
    kind: AlgKind::RsaPss(Sha::S256),
    public_key_alg_id: alg_id::RSA_PSS_SHA256,
    signature_alg_id: alg_id::RSA_PSS_SHA256,
};
/// RSA-PSS SHA-384 with an id-RSASSA-PSS key restricted to SHA-384.
pub static RSA_PSS_PSS_SHA384_ONLY: VerifyAlg = VerifyAlg {
    name: "rsa_pss_pss_sha384",
    kind: AlgKind::RsaPss(Sha::S384),
    public_key_alg_id: alg_id::RSA_PSS_SHA384,
    signature_alg_id: alg_id::RSA_PSS_SHA384,
};
/// RSA-PSS SHA-512 with an id-RSASSA-PSS key restricted to SHA-512.
pub static RSA_PSS_PSS_SHA512_ONLY: VerifyAlg = VerifyAlg {
    name: "rsa_pss_pss_sha512",
    kind: AlgKind::RsaPss(Sha::S512),
    public_key_alg_id: alg_id::RSA_PSS_SHA512,
    signature_alg_id: alg_id::RSA_PSS_SHA512,
};

/// ML-DSA-44: id-ML-DSA-44 keys and signatures alike (RFC 9881 §2, §3).
pub static ML_DSA_44: VerifyAlg = VerifyAlg {
    name: "mldsa44",
    kind: AlgKind::MlDsa(MlDsaLevel::L44),
    public_key_alg_id: alg_id::ML_DSA_44,
    signature_alg_id: alg_id::ML_DSA_44,
};
/// ML-DSA-65.
pub static ML_DSA_65: VerifyAlg = VerifyAlg {
    name: "mldsa65",
    kind: AlgKind::MlDsa(MlDsaLevel::L65),
    public_key_alg_id: alg_id::ML_DSA_65,
    signature_alg_id: alg_id::ML_DSA_65,
};
/// ML-DSA-87.
pub static ML_DSA_87: VerifyAlg = VerifyAlg {
    name: "mldsa87",
    kind: AlgKind::MlDsa(MlDsaLevel::L87),
    public_key_alg_id: alg_id::ML_DSA_87,
    signature_alg_id: alg_id::ML_DSA_87,
};

/// Everything webpki may use to check certificate signatures (through
/// [`SignatureMemo`](crate::crypto::cert::SignatureMemo)'s wrapper, crypto::cert::verify_chain).
pub static CERTIFICATE_ALGORITHMS: [&VerifyAlg; 24] = [
    &ECDSA_P256_SHA256,
    &ECDSA_P256_SHA384,
    &ECDSA_P384_SHA384,
    &ECDSA_P384_SHA256,
    &ECDSA_P521_SHA512,
    &ECDSA_P521_SHA384,
    &ECDSA_P521_SHA256,
    &ED25519,
    &ED448,
    &RSA_PSS_RSAE_SHA256,
    &RSA_PSS_RSAE_SHA384,
    &RSA_PSS_RSAE_SHA512,
    &RSA_PSS_PSS_SHA256,
    &RSA_PSS_PSS_SHA384,
    &RSA_PSS_PSS_SHA512,
    &RSA_PSS_PSS_SHA256_ONLY,
    &RSA_PSS_PSS_SHA384_ONLY,
    &RSA_PSS_PSS_SHA512_ONLY,
    &RSA_PKCS1_SHA256,
    &RSA_PKCS1_SHA384,
    &RSA_PKCS1_SHA512,
    &ML_DSA_44,
    &ML_DSA_65,
    &ML_DSA_87,
];

/// The algorithms for a scheme allowed in CertificateVerify (§4.4.3: no PKCS#1 v1.5, no SHA-1;
/// §4.2.3: brainpool is not implemented): one per key identifier it may meet.
fn certificate_verify_algorithms(scheme: SignatureScheme) -> [Option<&'static VerifyAlg>; 2] {
    let one = |a: &'static VerifyAlg| [Some(a), None];
    match scheme {
        SignatureScheme::ecdsa_secp256r1_sha256 => one(&ECDSA_P256_SHA256),
        SignatureScheme::ecdsa_secp384r1_sha384 => one(&ECDSA_P384_SHA384),
        SignatureScheme::ecdsa_secp521r1_sha512 => one(&ECDSA_P521_SHA512),
        SignatureScheme::ed25519 => one(&ED25519),
        SignatureScheme::ed448 => one(&ED448),
        SignatureScheme::rsa_pss_rsae_sha256 => one(&RSA_PSS_RSAE_SHA256),
        SignatureScheme::rsa_pss_rsae_sha384 => one(&RSA_PSS_RSAE_SHA384),
        SignatureScheme::rsa_pss_rsae_sha512 => one(&RSA_PSS_RSAE_SHA512),
        SignatureScheme::rsa_pss_pss_sha256 => {
            [Some(&RSA_PSS_PSS_SHA256), Some(&RSA_PSS_PSS_SHA256_ONLY)]
        }
        SignatureScheme::rsa_pss_pss_sha384 => {
            [Some(&RSA_PSS_PSS_SHA384), Some(&RSA_PSS_PSS_SHA384_ONLY)]
        }
        SignatureScheme::rsa_pss_pss_sha512 => {
            [Some(&RSA_PSS_PSS_SHA512), Some(&RSA_PSS_PSS_SHA512_ONLY)]
        }
        SignatureScheme::mldsa44 => one(&ML_DSA_44),
        SignatureScheme::mldsa65 => one(&ML_DSA_65),
        SignatureScheme::mldsa87 => one(&ML_DSA_87),
        _ => [None, None],
    }
}

/// The schemes (§4.2.3) that name a certificate signature with this signatureAlgorithm
/// (AlgorithmIdentifier contents), for matching a chain against signature_algorithms_cert.
/// ECDSA by its hash (the curve is the issuer's, which the scheme names only for TLS 1.3
/// CertificateVerify); RSASSA-PSS under either key type. Empty for an algorithm we do not know.
pub fn schemes_for_certificate_signature(alg: &[u8]) -> &'static [SignatureScheme] {
    use SignatureScheme as S;
    let table: [(AlgorithmIdentifier, &'static [SignatureScheme]); 14] = [
        (alg_id::ECDSA_SHA256, &[S::ecdsa_secp256r1_sha256]),
        (alg_id::ECDSA_SHA384, &[S::ecdsa_secp384r1_sha384]),
        (alg_id::ECDSA_SHA512, &[S::ecdsa_secp521r1_sha512]),
        (alg_id::ED25519, &[S::ed25519]),
        (alg_id::ED448, &[S::ed448]),
        (alg_id::RSA_PKCS1_SHA256, &[S::rsa_pkcs1_sha256]),
        (alg_id::RSA_PKCS1_SHA384, &[S::rsa_pkcs1_sha384]),
        (alg_id::RSA_PKCS1_SHA512, &[S::rsa_pkcs1_sha512]),
        (
            alg_id::RSA_PSS_SHA256,
            &[S::rsa_pss_rsae_sha256, S::rsa_pss_pss_sha256],
        ),
        (
            alg_id::RSA_PSS_SHA384,
            &[S::rsa_pss_rsae_sha384, S::rsa_pss_pss_sha384],
        ),
        (
            alg_id::RSA_PSS_SHA512,
            &[S::rsa_pss_rsae_sha512, S::rsa_pss_pss_sha512],
        ),
        (alg_id::ML_DSA_44, &[S::mldsa44]),
        (alg_id::ML_DSA_65, &[S::mldsa65]),
        (alg_id::ML_DSA_87, &[S::mldsa87]),
    ];
    table
        .iter()
        .find(|(id, _)| id.as_ref() == alg)
        .map_or(&[], |(_, s)| *s)
}

/// The algorithm for a scheme allowed in CertificateVerify (§4.4.3: no PKCS#1 v1.5, no SHA-1),
/// or `None`. For `rsa_pss_pss_*`, the one for an unrestricted key.
pub fn certificate_verify_algorithm(scheme: SignatureScheme) -> Option<&'static VerifyAlg> {
    certificate_verify_algorithms(scheme)[0]
}

impl VerifyAlg {
    /// The TLS name of the scheme, e.g. `ecdsa_secp256r1_sha256`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Verifies with `public_key` = the subjectPublicKey BIT STRING contents of a key whose
    /// algorithm is [`SignatureVerificationAlgorithm::public_key_alg_id`].
    pub fn verify(&self, public_key: &[u8], message: &[u8], sig: &[u8]) -> Result<(), SigError> {
        match self.kind {
            AlgKind::EcdsaP256(h) => {
                // Only the uncompressed form appears in certificates (RFC 5480 §2.2).
                if public_key.len() != 65 || public_key[0] != 0x04 {
                    return Err(SigError::BadKey("P-256 key is not an uncompressed point"));
                }
                let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| SigError::BadKey("P-256 key is not on the curve"))?;
                let sig =
                    p256::ecdsa::Signature::from_der(sig).map_err(|_| SigError::BadSignature)?;
                // The checks above keep their distinct errors; ring does the expensive part
                // (about 5x faster, docs/performance.md). Verification draws no randomness.
                #[cfg(feature = "ring-verify")]
                {
                    let alg = match h {
                        Sha::S256 => Some(&ring::signature::ECDSA_P256_SHA256_ASN1),
                        Sha::S384 => Some(&ring::signature::ECDSA_P256_SHA384_ASN1),
                        Sha::S512 => None,
                    };
                    if let Some(alg) = alg {
                        return ring::signature::UnparsedPublicKey::new(alg, public_key)
                            .verify(message, sig.to_der().as_bytes())
                            .map_err(|_| SigError::BadSignature);
                    }
                }
                let ok = match h {
                    Sha::S256 => vk.verify(message, &sig),
                    other => vk.verify_prehash(&other.digest(message), &sig),
                };
                ok.map_err(|_| SigError::BadSignature)
            }
            AlgKind::EcdsaP384(h) => {
                if public_key.len() != 97 || public_key[0] != 0x04 {
                    return Err(SigError::BadKey("P-384 key is not an uncompressed point"));
                }
                let vk = p384::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| SigError::BadKey("P-384 key is not on the curve"))?;
                let sig =
                    p384::ecdsa::Signature::from_der(sig).map_err(|_| SigError::BadSignature)?;
                let ok = match h {
                    Sha::S384 => vk.verify(message, &sig),
                    other => vk.verify_prehash(&other.digest(message), &sig),
                };
                ok.map_err(|_| SigError::BadSignature)
            }
            AlgKind::EcdsaP521(h) => {
                if public_key.len() != 133 || public_key[0] != 0x04 {
                    return Err(SigError::BadKey("P-521 key is not an uncompressed point"));
                }
                let vk = p521::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| SigError::BadKey("P-521 key is not on the curve"))?;
                let sig =
                    p521::ecdsa::Signature::from_der(sig).map_err(|_| SigError::BadSignature)?;
                vk.verify_prehash(&h.digest(message), &sig)
                    .map_err(|_| SigError::BadSignature)
            }
            AlgKind::Ed25519 => {
                let pk: &[u8; 32] = public_key
                    .try_into()
                    .map_err(|_| SigError::BadKey("Ed25519 key must be 32 bytes"))?;
                let vk = ed25519_dalek::VerifyingKey::from_bytes(pk)
                    .map_err(|_| SigError::BadKey("Ed25519 key is not a valid point"))?;
                let sig = ed25519_dalek::Signature::from_slice(sig)
                    .map_err(|_| SigError::BadSignature)?;
                // Strict: rejects small-order keys and non-canonical encodings.
                vk.verify_strict(message, &sig)
                    .map_err(|_| SigError::BadSignature)
            }
            AlgKind::Ed448 => {
                let pk: &[u8; 57] = public_key
                    .try_into()
                    .map_err(|_| SigError::BadKey("Ed448 key must be 57 bytes"))?;
                let vk = ed448_goldilocks::VerifyingKey::from_bytes(pk)
                    .map_err(|_| SigError::BadKey("Ed448 key is not a valid point"))?;
                let sig = ed448_goldilocks::Signature::try_from(sig)
                    .map_err(|_| SigError::BadSignature)?;
                // RFC 8032 §5.2.7: S must be below L (canonical) and R must decode; the
                // crate also rejects the identity as key or R, as verify_strict does for Ed25519.
                vk.verify_raw(&sig, message)
                    .map_err(|_| SigError::BadSignature)
            }
            AlgKind::RsaPkcs1(h) => {
                let pk = rsa_public_key(public_key)?;
                pk.verify(h.pkcs1v15(), &h.digest(message), sig)
                    .map_err(|_| SigError::BadSignature)
            }
            AlgKind::RsaPss(h) => {
                let pk = rsa_public_key(public_key)?;
                // The rsa crate checks the salt length equals the hash length.
                pk.verify(h.pss(), &h.digest(message), sig)
                    .map_err(|_| SigError::BadSignature)
            }
            AlgKind::MlDsa(level) => mldsa_verify(level, public_key, message, sig),
        }
    }
}

impl SignatureVerificationAlgorithm for VerifyAlg {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        self.verify(public_key, message, signature)
            .map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        self.public_key_alg_id
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg_id
    }
}

/// PKCS#1 RSAPublicKey, bounded to [`RSA_MIN_BITS`]..=[`RSA_MAX_BITS`].
fn rsa_public_key(der: &[u8]) -> Result<rsa::RsaPublicKey, SigError> {
    use rsa::pkcs1::der::Decode;
    let k = rsa::pkcs1::RsaPublicKey::from_der(der)
        .map_err(|_| SigError::BadKey("malformed RSA public key"))?;
    let n = rsa::BigUint::from_bytes_be(k.modulus.as_bytes());
    let e = rsa::BigUint::from_bytes_be(k.public_exponent.as_bytes());
    if !(RSA_MIN_BITS..=RSA_MAX_BITS).contains(&n.bits()) {
        return Err(SigError::BadKey("RSA modulus outside 1024..=8192 bits"));
    }
    rsa::RsaPublicKey::new_with_max_size(n, e, RSA_MAX_BITS)
        .map_err(|_| SigError::BadKey("invalid RSA public key"))
}

/// Verifies a CertificateVerify-style signature made with `scheme` by the key in `spki_der`
/// (a DER SubjectPublicKeyInfo). For a certificate use [`crate::crypto::cert::verify_with_leaf`].
pub fn verify_signature(
    scheme: SignatureScheme,
    spki_der: &[u8],
    message: &[u8],
    signature: &[u8],
) -> Result<(), SigError> {
    let algs = certificate_verify_algorithms(scheme);
    if algs[0].is_none() {
        return Err(SigError::UnsupportedScheme(scheme));
    }
    let (alg, key) = parse_spki(spki_der).ok_or(SigError::BadKey("malformed SPKI"))?;
    // The key's algorithm decides (§4.2.3): rsaEncryption for rsa_pss_rsae_*, id-RSASSA-PSS
    // (unrestricted or restricted to this hash) for rsa_pss_pss_*, the curve for ECDSA.
    let alg = algs
        .into_iter()
        .flatten()
        .find(|a| a.public_key_alg_id.as_ref() == alg)
        .ok_or(SigError::KeyMismatch(scheme))?;
    alg.verify(key, message, signature)
}

/// One DER TLV with a definite, minimal length (the writer beside [`der_tlv`]).
fn der_wrap(tag: u8, contents: &[u8]) -> Vec<u8> {
    let n = contents.len();
    let mut out = Vec::with_capacity(n + 5);
    out.push(tag);
    match n {
        0..=0x7f => out.push(n as u8),
        0x80..=0xff => out.extend([0x81, n as u8]),
        0x100..=0xffff => out.extend([0x82, (n >> 8) as u8, n as u8]),
        _ => out.extend([0x83, (n >> 16) as u8, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(contents);
    out
}

/// Splits a DER SubjectPublicKeyInfo into (AlgorithmIdentifier contents, subjectPublicKey bits).
fn parse_spki(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let (spki, rest) = der_tlv(der, 0x30)?;
    if !rest.is_empty() {
        return None;
    }
    let (alg, rest) = der_tlv(spki, 0x30)?;
    let (bits, rest) = der_tlv(rest, 0x03)?;
    if !rest.is_empty() {
        return None;
    }
    // BIT STRING: first octet is the number of unused bits, which must be 0 for a key.
    match bits.split_first() {
        Some((0, key)) => Some((alg, key)),
        _ => None,
    }
}

/// Reads one DER TLV with the expected tag; returns (contents, remainder).
pub(crate) fn der_tlv(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&t, rest) = input.split_first()?;
    if t != tag {
        return None;
    }
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 3 {
            return None;
        }
        let (len_bytes, tail) = rest.split_at_checked(n)?;
        rest = tail;
        let len = len_bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        // Minimal encoding (DER).
        if len < 0x80 || len_bytes[0] == 0 {
            return None;
        }
        len
    };
    let (contents, tail) = rest.split_at_checked(len)?;
    Some((contents, tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::random::{ScriptedRandom, SeededRandom};

    pub(crate) const RFC8448_RSA_KEY_PKCS8: &str =
        include_str!("../../tests/vectors/pem/server_rsa_key.pem");
    pub(crate) const RFC8448_RSA_KEY_PKCS1: &str =
        include_str!("../../tests/vectors/pem/server_rsa_key_pkcs1.pem");
    // Written by OpenSSL 3.5 `genpkey` (tests/vectors/pem/gen-sigs.sh).
    const P521_KEY: &str = include_str!("../../tests/vectors/pem/p521_key.pem");
    const RSA_PSS_KEY: &str = include_str!("../../tests/vectors/pem/rsa_pss_key.pem");
    const RSA_PSS_SHA384_KEY: &str = include_str!("../../tests/vectors/pem/rsa_pss_sha384_key.pem");
    const ED448_KEY: &str = include_str!("../../tests/vectors/pem/ed448_key.pem");
    // One ML-DSA-65 key in RFC 9881's three forms, written by OpenSSL 3.5
    // (tests/vectors/pem/gen-mldsa.sh).
    const MLDSA65_SEED: &str = include_str!("../../tests/vectors/pem/mldsa65_seed_key.pem");
    const MLDSA65_EXPANDED: &str = include_str!("../../tests/vectors/pem/mldsa65_expanded_key.pem");
    const MLDSA65_BOTH: &str = include_str!("../../tests/vectors/pem/mldsa65_both_key.pem");

    fn pem_der(pem: &str) -> Vec<u8> {
        use rustls_pki_types::pem::PemObject;
        rustls_pki_types::PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes())
            .unwrap()
            .secret_pkcs8_der()
            .to_vec()
    }

    struct Counting<'a>(&'a mut dyn RandomSource, Vec<usize>);
    impl RandomSource for Counting<'_> {
        fn fill(&mut self, buf: &mut [u8]) {
            self.1.push(buf.len());
            self.0.fill(buf)
        }
    }

    fn keys() -> Vec<SigningKey> {
        let mut rng = SeededRandom::from_seed(11);
        vec![
            SigningKey::generate_p256(&mut rng),
            SigningKey::generate_p384(&mut rng),
            SigningKey::generate_ed25519(&mut rng),
            SigningKey::from_pem(RFC8448_RSA_KEY_PKCS8).unwrap(),
            SigningKey::generate_p521(&mut rng),
            SigningKey::from_pem(RSA_PSS_KEY).unwrap(),
            SigningKey::from_pem(RSA_PSS_SHA384_KEY).unwrap(),
            SigningKey::generate_ed448(&mut rng),
        ]
    }

    #[test]
    fn ed448_matches_rfc8032_and_rejects_what_it_must() {
        // RFC 8032 §7.4, "1 octet": pure Ed448, empty context.
        let seed = hex::decode(
            "c4eab05d357007c632f3dbb48489924d552b08fe0c353a0d4a1f00acda2c463a\
             fbea67c5e8d2877c5e3bc397a659949ef8021e954e0a12274e",
        )
        .unwrap();
        let public = hex::decode(
            "43ba28f430cdff456ae531545f7ecd0ac834a55d9358c0372bfa0c6c6798c086\
             6aea01eb00742802b8438ea4cb82169c235160627b4c3a9480",
        )
        .unwrap();
        let want = hex::decode(
            "26b8f91727bd62897af15e41eb43c377efb9c610d48f2335cb0bd0087810f435\
             2541b143c4b981b7e18f62de8ccdf633fc1bf037ab7cd779805e0dbcc0aae1cb\
             cee1afb2e027df36bc04dcecbf154336c19f0af7e0a6472905e799f1953d2a0f\
             f3348ab21aa4adafd1d234441cf807c03a00",
        )
        .unwrap();
        let mut rng = ScriptedRandom::new(vec![seed], 0);
        let key = SigningKey::generate_ed448(&mut rng);
        let sig = key
            .sign(
                SignatureScheme::ed448,
                &[0x03],
                &mut SeededRandom::from_seed(1),
            )
            .unwrap();
        assert_eq!(hex::encode(&sig), hex::encode(&want));
        let spki = key.public_key_spki_der().unwrap();
        assert_eq!(&spki[spki.len() - 57..], &public[..]);
        verify_signature(SignatureScheme::ed448, &spki, &[0x03], &sig).unwrap();
        // S >= L (here S + L, same residue): RFC 8032 §5.2.7 rejects a non-canonical S.
        let l = hex::decode(
            "f34458ab92c27823558fc58d72c26c219036d6ae49db4ec4e923ca7cffffffff\
             ffffffffffffffffffffffffffffffffffffffffffffff3f00",
        )
        .unwrap();
        let mut high = sig.clone();
        let mut carry = 0u16;
        for i in 0..57 {
            let v = u16::from(high[57 + i]) + u16::from(l[i]) + carry;
            high[57 + i] = v as u8;
            carry = v >> 8;
        }
        assert_eq!(
            verify_signature(SignatureScheme::ed448, &spki, &[0x03], &high),
            Err(SigError::BadSignature)
        );
        // Wrong lengths, of signature and key, never panic.
        for n in [0, 113, 115] {
            let mut v = sig.clone();
            v.resize(n, 0);
            assert_eq!(
                verify_signature(SignatureScheme::ed448, &spki, &[0x03], &v),
                Err(SigError::BadSignature)
            );
        }
        let mut short = spki.clone();
        short[1] -= 1;
        short[10] -= 1;
        short.pop();
        assert!(matches!(
            verify_signature(SignatureScheme::ed448, &short, &[0x03], &sig),
            Err(SigError::BadKey(_))
        ));
    }

    #[test]
    fn ed448_pkcs8_round_trips_in_openssls_form() {
        let key = SigningKey::from_pem(ED448_KEY).unwrap();
        assert_eq!(key.schemes(), &[SignatureScheme::ed448]);
        // OpenSSL's bytes, exactly: version 0, id-Ed448, no public key (RFC 8410 §7).
        let der = pem_der(ED448_KEY);
        assert_eq!(key.to_pkcs8_der().unwrap(), der);
        assert_eq!(
            &der[..16],
            &[
                0x30, 0x47, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x71, 0x04, 0x3b,
                0x04, 0x39
            ]
        );
        // Truncations are errors, not panics; another OID is not an Ed448 key.
        for i in 0..der.len() {
            assert!(SigningKey::from_pkcs8_der(&der[..i]).is_err());
        }
        let mut other = der.clone();
        other[11] = 0x70; // 1.3.101.112, id-Ed25519, with a 57-byte key: not a valid key.
        assert!(SigningKey::from_pkcs8_der(&other).is_err());
    }

    #[test]
    fn cv_message_matches_rfc8446_example() {
        // §4.4.3 example: transcript hash of 32 bytes of 01.
        let m = certificate_verify_message(true, &[1; 32]);
        let expected = [
            vec![0x20; 64],
            b"TLS 1.3, server CertificateVerify".to_vec(),
            vec![0],
            vec![1; 32],
        ]
        .concat();
        assert_eq!(m, expected);
        assert!(certificate_verify_message(false, &[]).starts_with(&[0x20; 64]));
        assert_eq!(
            &certificate_verify_message(false, &[])[64..97],
            b"TLS 1.3, client CertificateVerify"
        );
    }

    #[test]
    fn sign_verify_round_trips() {
        let msg = certificate_verify_message(true, &[7; 32]);
        for key in keys() {
            let spki = key.public_key_spki_der().unwrap();
            for &scheme in key.schemes() {
                let mut rng = SeededRandom::from_seed(1);
                let sig = key.sign(scheme, &msg, &mut rng).unwrap();
                verify_signature(scheme, &spki, &msg, &sig).unwrap();
                // Tampered message and signature fail with decrypt_error.
                let err = verify_signature(scheme, &spki, b"other", &sig).unwrap_err();
                assert_eq!(err, SigError::BadSignature);
                assert_eq!(err.alert(), AlertDescription::DecryptError);
                let mut bad = sig.clone();
                let last = bad.len() - 1;
                bad[last] ^= 1;
                assert!(verify_signature(scheme, &spki, &msg, &bad).is_err());
                assert!(verify_signature(scheme, &spki, &msg, &[]).is_err());
            }
            // A scheme of another key type is a mismatch, not a bad signature.
            let foreign = if matches!(key, SigningKey::Ed25519(_)) {
                SignatureScheme::ecdsa_secp256r1_sha256
            } else {
                SignatureScheme::ed25519
            };
            let err = verify_signature(foreign, &spki, &msg, &[0; 64]).unwrap_err();
            assert_eq!(err, SigError::KeyMismatch(foreign));
            assert_eq!(err.alert(), AlertDescription::IllegalParameter);
            assert_eq!(
                key.sign(foreign, &msg, &mut SeededRandom::from_seed(1)),
                Err(SigError::CannotSign(foreign))
            );
        }
    }

    #[test]
    fn deterministic_schemes_draw_nothing() {
        let msg = b"hello";
        for key in keys().into_iter().filter(|k| {
            matches!(
                k,
                SigningKey::EcdsaP256(_)
                    | SigningKey::EcdsaP384(_)
                    | SigningKey::Ed25519(_)
                    | SigningKey::Ed448(_)
            )
        }) {
            let scheme = key.schemes()[0];
            let mut inner = SeededRandom::from_seed(1);
            let mut c = Counting(&mut inner, vec![]);
            let a = key.sign(scheme, msg, &mut c).unwrap();
            let b = key
                .sign(scheme, msg, &mut SeededRandom::from_seed(2))
                .unwrap();
            assert_eq!(a, b);
            assert!(c.1.is_empty());
        }
    }

    #[test]
    fn rsa_pss_draws_exactly_the_salt() {
        let key = SigningKey::from_pem(RFC8448_RSA_KEY_PKCS1).unwrap();
        let msg = b"content";
        let mut inner = SeededRandom::from_seed(5);
        let mut c = Counting(&mut inner, vec![]);
        let a = key
            .sign(SignatureScheme::rsa_pss_rsae_sha384, msg, &mut c)
            .unwrap();
        assert_eq!(c.1, vec![48]);
        // Same seed, same signature; other seed, other salt, other signature.
        let b = key
            .sign(
                SignatureScheme::rsa_pss_rsae_sha384,
                msg,
                &mut SeededRandom::from_seed(5),
            )
            .unwrap();
        let d = key
            .sign(
                SignatureScheme::rsa_pss_rsae_sha384,
                msg,
                &mut SeededRandom::from_seed(6),
            )
            .unwrap();
        assert_eq!(a, b);
        assert_ne!(a, d);
    }

    #[test]
    fn rfc8448_key_loads_and_1024_bit_limits() {
        let a = SigningKey::from_pem(RFC8448_RSA_KEY_PKCS8).unwrap();
        let b = SigningKey::from_pem(RFC8448_RSA_KEY_PKCS1).unwrap();
        assert_eq!(a.public_key_spki_der(), b.public_key_spki_der());
        // A 1024-bit modulus cannot hold PSS with SHA-512 and a 64-byte salt.
        assert_eq!(
            a.schemes(),
            &[
                SignatureScheme::rsa_pss_rsae_sha256,
                SignatureScheme::rsa_pss_rsae_sha384
            ]
        );
        assert_eq!(
            a.sign(
                SignatureScheme::rsa_pss_rsae_sha512,
                b"x",
                &mut SeededRandom::from_seed(0)
            ),
            Err(SigError::CannotSign(SignatureScheme::rsa_pss_rsae_sha512))
        );
        // PKCS#1 v1.5 is never produced for TLS 1.3 (§4.4.3).
        assert!(a
            .sign(
                SignatureScheme::rsa_pkcs1_sha256,
                b"x",
                &mut SeededRandom::from_seed(0)
            )
            .is_err());
        // PKCS#8 round trip.
        let der = a.to_pkcs8_der().unwrap();
        let c = SigningKey::from_pkcs8_der(&der).unwrap();
        assert_eq!(c.public_key_spki_der(), a.public_key_spki_der());
    }

    #[test]
    fn key_encodings_round_trip() {
        for key in keys() {
            let der = key.to_pkcs8_der().unwrap();
            let back = SigningKey::from_pkcs8_der(&der).unwrap();
            assert_eq!(back.public_key_spki_der(), key.public_key_spki_der());
            assert_eq!(back.schemes(), key.schemes());
        }
        // SEC1 "EC PRIVATE KEY".
        let sk = p256::SecretKey::from_slice(&[3; 32]).unwrap();
        let pem = p256::pkcs8::der::pem::encode_string(
            "EC PRIVATE KEY",
            p256::pkcs8::der::pem::LineEnding::LF,
            &sk.to_sec1_der().unwrap(),
        )
        .unwrap();
        assert!(matches!(
            SigningKey::from_pem(&pem).unwrap(),
            SigningKey::EcdsaP256(_)
        ));
        // Garbage.
        assert!(SigningKey::from_pkcs8_der(&[0x30, 0x00]).is_err());
        assert!(SigningKey::from_pem("").is_err());
        assert!(SigningKey::from_pem(
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        )
        .is_err());
    }

    #[test]
    fn seeded_p256_keys_are_reproducible() {
        let a = SigningKey::generate_p256(&mut SeededRandom::from_seed(9));
        let b = SigningKey::generate_p256(&mut SeededRandom::from_seed(9));
        assert_eq!(a.to_pkcs8_der(), b.to_pkcs8_der());
        // Zero and n are redrawn; a valid scalar is taken verbatim.
        let n = hex::decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
            .unwrap();
        let mut rng = ScriptedRandom::new(vec![vec![0; 32], n, vec![1; 32]], 0);
        let k = SigningKey::generate_p256(&mut rng);
        let want = SigningKey::EcdsaP256(p256::ecdsa::SigningKey::from_slice(&[1; 32]).unwrap());
        assert_eq!(k.to_pkcs8_der(), want.to_pkcs8_der());
    }

    #[test]
    fn unsupported_schemes_and_bad_keys() {
        let key = &keys()[0];
        let spki = key.public_key_spki_der().unwrap();
        for s in [
            SignatureScheme::rsa_pkcs1_sha256,
            SignatureScheme::rsa_pkcs1_sha384,
            SignatureScheme::rsa_pkcs1_sha512,
            SignatureScheme::rsa_pkcs1_sha1,
            SignatureScheme::ecdsa_sha1,
            SignatureScheme::ecdsa_brainpoolP256r1tls13_sha256,
            SignatureScheme::Unknown(0xfefe),
        ] {
            let err = verify_signature(s, &spki, b"m", b"s").unwrap_err();
            assert_eq!(err, SigError::UnsupportedScheme(s));
            assert_eq!(err.alert(), AlertDescription::IllegalParameter);
        }
        // Truncations of an SPKI are never accepted and never panic.
        for i in 0..spki.len() {
            let r = verify_signature(
                SignatureScheme::ecdsa_secp256r1_sha256,
                &spki[..i],
                b"m",
                b"s",
            );
            assert!(matches!(
                r,
                Err(SigError::BadKey(_)) | Err(SigError::KeyMismatch(_))
            ));
        }
        assert_eq!(
            verify_signature(
                SignatureScheme::ed25519,
                &[0x30, 0x81, 0x05, 0, 0, 0, 0, 0],
                b"",
                b""
            ),
            Err(SigError::BadKey("malformed SPKI"))
        );
    }

    /// RFC 6979 §A.2.6: P-384, SHA-384, message "sample" (deterministic k, so the signature is
    /// fixed).
    #[test]
    fn p384_rfc6979_known_answer_and_curve_mismatch() {
        let x = hex::decode("6b9d3dad2e1b8c1c05b19875b6659f4de23c3b667bf297ba9aa47740787137d896d5724e4c70a825f872c9ea60d2edf5").unwrap();
        let key = SigningKey::EcdsaP384(p384::ecdsa::SigningKey::from_slice(&x).unwrap());
        let scheme = SignatureScheme::ecdsa_secp384r1_sha384;
        let der = key
            .sign(scheme, b"sample", &mut SeededRandom::from_seed(0))
            .unwrap();
        let sig = p384::ecdsa::Signature::from_der(&der).unwrap();
        assert_eq!(
            hex::encode(sig.to_bytes()),
            "94edbb92a5ecb8aad4736e56c691916b3f88140666ce9fa73d64c4ea95ad133c81a648152e44acf96e36dd1e80fabe46\
             99ef4aeb15f178cea1fe40db2603138f130e740a19624526203b6351d0a3a94fa329c145786e679e7b82c71a38628ac8"
        );
        let spki = key.public_key_spki_der().unwrap();
        verify_signature(scheme, &spki, b"sample", &der).unwrap();
        assert_eq!(
            verify_signature(scheme, &spki, b"samplE", &der),
            Err(SigError::BadSignature)
        );
        // Curves must match the scheme both ways (§4.2.3: the curve is part of the scheme).
        let p256 = keys()[0].public_key_spki_der().unwrap();
        assert_eq!(
            verify_signature(scheme, &p256, b"sample", &der),
            Err(SigError::KeyMismatch(scheme))
        );
        let p256_scheme = SignatureScheme::ecdsa_secp256r1_sha256;
        assert_eq!(
            verify_signature(p256_scheme, &spki, b"sample", &der),
            Err(SigError::KeyMismatch(p256_scheme))
        );
        assert_eq!(
            key.sign(p256_scheme, b"x", &mut SeededRandom::from_seed(0)),
            Err(SigError::CannotSign(p256_scheme))
        );
        // A P-384 point handed to the verifier directly must be 97 bytes, uncompressed.
        assert!(matches!(
            ECDSA_P384_SHA384.verify(&[4; 65], b"m", &der),
            Err(SigError::BadKey(_))
        ));
        // Certificates may pair a P-384 key with SHA-256.
        let vk = p384::ecdsa::VerifyingKey::from_sec1_bytes(&spki[spki.len() - 97..]).unwrap();
        let prehashed = sha2::Sha256::digest(b"cert");
        let SigningKey::EcdsaP384(sk) = &key else {
            unreachable!()
        };
        let sig256: p384::ecdsa::Signature =
            p384::ecdsa::signature::hazmat::PrehashSigner::sign_prehash(sk, &prehashed).unwrap();
        ECDSA_P384_SHA256
            .verify(
                vk.to_encoded_point(false).as_bytes(),
                b"cert",
                sig256.to_der().as_bytes(),
            )
            .unwrap();
        assert!(CERTIFICATE_ALGORITHMS.iter().any(|a| {
            SignatureVerificationAlgorithm::signature_alg_id(*a) == alg_id::ECDSA_SHA384
                && SignatureVerificationAlgorithm::public_key_alg_id(*a) == alg_id::ECDSA_P384
        }));
    }

    #[test]
    fn p384_keys_load_from_pkcs8_and_sec1() {
        let key = SigningKey::generate_p384(&mut SeededRandom::from_seed(12));
        assert_eq!(key.schemes(), &[SignatureScheme::ecdsa_secp384r1_sha384]);
        let der = key.to_pkcs8_der().unwrap();
        let pem = p256::pkcs8::der::pem::encode_string(
            "PRIVATE KEY",
            p256::pkcs8::der::pem::LineEnding::LF,
            &der,
        )
        .unwrap();
        let back = SigningKey::from_pem(&pem).unwrap();
        assert!(matches!(back, SigningKey::EcdsaP384(_)));
        assert_eq!(back.public_key_spki_der(), key.public_key_spki_der());
        // SEC1 "EC PRIVATE KEY" with the namedCurve parameter, after an "EC PARAMETERS" block
        // as OpenSSL writes it.
        let SigningKey::EcdsaP384(sk) = &key else {
            unreachable!()
        };
        let sec1 = p384::SecretKey::from(sk.as_nonzero_scalar())
            .to_sec1_der()
            .unwrap();
        let pem = format!(
            "-----BEGIN EC PARAMETERS-----\nBgUrgQQAIg==\n-----END EC PARAMETERS-----\n{}",
            p256::pkcs8::der::pem::encode_string(
                "EC PRIVATE KEY",
                p256::pkcs8::der::pem::LineEnding::LF,
                &sec1
            )
            .unwrap()
        );
        let back = SigningKey::from_pem(&pem).unwrap();
        assert_eq!(back.public_key_spki_der(), key.public_key_spki_der());
        assert!(matches!(
            SigningKey::from_sec1_der(&sec1[..sec1.len() - 1]),
            Err(SigError::BadPrivateKey(_))
        ));
        // Seeded generation is reproducible.
        let again = SigningKey::generate_p384(&mut SeededRandom::from_seed(12));
        assert_eq!(again.to_pkcs8_der(), key.to_pkcs8_der());
        assert!(format!("{key:?}").contains("EcdsaP384"));
    }

    #[test]
    fn p521_nonce_is_one_draw_hedged_with_key_and_message() {
        let key = SigningKey::generate_p521(&mut SeededRandom::from_seed(21));
        let scheme = SignatureScheme::ecdsa_secp521r1_sha512;
        assert_eq!(key.schemes(), &[scheme]);
        let sign = |seed: u64, msg: &[u8]| {
            let mut inner = SeededRandom::from_seed(seed);
            let mut c = Counting(&mut inner, vec![]);
            let sig = key.sign(scheme, msg, &mut c).unwrap();
            assert_eq!(c.1, vec![32], "one 32-byte draw per signature");
            sig
        };
        // Replays from the seed; another seed, another signature.
        assert_eq!(sign(3, b"m1"), sign(3, b"m1"));
        assert_ne!(sign(3, b"m1"), sign(4, b"m1"));
        // The same draws for two messages: two nonces (r differs), so a reused seed never
        // reveals the key.
        let r = |der: &[u8]| {
            let sig = p521::ecdsa::Signature::from_der(der).unwrap();
            sig.r().to_bytes().to_vec()
        };
        assert_ne!(r(&sign(3, b"m1")), r(&sign(3, b"m2")));
        let spki = key.public_key_spki_der().unwrap();
        verify_signature(scheme, &spki, b"m2", &sign(3, b"m2")).unwrap();
        // The curve is part of the scheme both ways.
        let p384 = keys()[1].public_key_spki_der().unwrap();
        assert_eq!(
            verify_signature(scheme, &p384, b"m", &sign(3, b"m")),
            Err(SigError::KeyMismatch(scheme))
        );
        assert!(matches!(
            ECDSA_P521_SHA512.verify(&[4; 97], b"m", &sign(3, b"m")),
            Err(SigError::BadKey(_))
        ));
        // Seeded generation is reproducible.
        let again = SigningKey::generate_p521(&mut SeededRandom::from_seed(21));
        assert_eq!(again.to_pkcs8_der(), key.to_pkcs8_der());
    }

    #[test]
    fn p521_keys_load_as_openssl_writes_them() {
        let key = SigningKey::from_pem(P521_KEY).unwrap();
        assert!(matches!(key, SigningKey::EcdsaP521(_)));
        assert!(format!("{key:?}").contains("EcdsaP521"));
        // PKCS#8 and SEC1 round trips.
        let der = key.to_pkcs8_der().unwrap();
        let back = SigningKey::from_pkcs8_der(&der).unwrap();
        assert_eq!(back.public_key_spki_der(), key.public_key_spki_der());
        let SigningKey::EcdsaP521(sk) = &key else {
            unreachable!()
        };
        let sec1 = p521::SecretKey::from(sk.as_nonzero_scalar())
            .to_sec1_der()
            .unwrap();
        let back = SigningKey::from_sec1_der(&sec1).unwrap();
        assert_eq!(back.public_key_spki_der(), key.public_key_spki_der());
        for cut in 0..sec1.len() {
            assert!(SigningKey::from_sec1_der(&sec1[..cut]).is_err());
        }
    }

    #[test]
    fn rsa_pss_keys_sign_only_rsa_pss_pss() {
        let msg = certificate_verify_message(true, &[9; 32]);
        let pss = SigningKey::from_pem(RSA_PSS_KEY).unwrap();
        let rsae = SigningKey::from_pem(RFC8448_RSA_KEY_PKCS8).unwrap();
        let SigningKey::RsaPss(k) = &pss else {
            panic!("{pss:?}")
        };
        assert_eq!(k.restricted_to(), None);
        assert_eq!(
            pss.schemes(),
            &[
                SignatureScheme::rsa_pss_pss_sha256,
                SignatureScheme::rsa_pss_pss_sha384,
                SignatureScheme::rsa_pss_pss_sha512
            ]
        );
        // §4.2.3: rsa_pss_rsae_* needs an rsaEncryption key, and rsa_pss_pss_* an
        // id-RSASSA-PSS one, in signing and in verification alike.
        let (pss_spki, rsae_spki) = (
            pss.public_key_spki_der().unwrap(),
            rsae.public_key_spki_der().unwrap(),
        );
        let mut rng = SeededRandom::from_seed(1);
        for (rsae_scheme, pss_scheme) in [
            (
                SignatureScheme::rsa_pss_rsae_sha256,
                SignatureScheme::rsa_pss_pss_sha256,
            ),
            (
                SignatureScheme::rsa_pss_rsae_sha384,
                SignatureScheme::rsa_pss_pss_sha384,
            ),
        ] {
            assert_eq!(
                pss.sign(rsae_scheme, &msg, &mut rng),
                Err(SigError::CannotSign(rsae_scheme))
            );
            assert_eq!(
                rsae.sign(pss_scheme, &msg, &mut rng),
                Err(SigError::CannotSign(pss_scheme))
            );
            let sig = pss.sign(pss_scheme, &msg, &mut rng).unwrap();
            verify_signature(pss_scheme, &pss_spki, &msg, &sig).unwrap();
            // The same PSS signature under the rsae code point, or with the other key type.
            assert_eq!(
                verify_signature(rsae_scheme, &pss_spki, &msg, &sig),
                Err(SigError::KeyMismatch(rsae_scheme))
            );
            let sig = rsae.sign(rsae_scheme, &msg, &mut rng).unwrap();
            assert_eq!(
                verify_signature(pss_scheme, &rsae_spki, &msg, &sig),
                Err(SigError::KeyMismatch(pss_scheme))
            );
        }
        // The salt is the one draw, as for rsaEncryption keys; replays from the seed.
        let scheme = SignatureScheme::rsa_pss_pss_sha512;
        let mut inner = SeededRandom::from_seed(5);
        let mut c = Counting(&mut inner, vec![]);
        let a = pss.sign(scheme, &msg, &mut c).unwrap();
        assert_eq!(c.1, vec![64]);
        assert_eq!(
            a,
            pss.sign(scheme, &msg, &mut SeededRandom::from_seed(5))
                .unwrap()
        );
        // Encodings: our PKCS#8 is OpenSSL's byte for byte.
        assert_eq!(pss.to_pkcs8_der().unwrap(), pem_der(RSA_PSS_KEY));
    }

    #[test]
    fn restricted_rsa_pss_key_signs_its_one_hash() {
        let key = SigningKey::from_pem(RSA_PSS_SHA384_KEY).unwrap();
        let only = SignatureScheme::rsa_pss_pss_sha384;
        assert_eq!(key.schemes(), &[only]);
        assert!(format!("{key:?}").contains("rsa_pss_pss_sha384 only"));
        let mut rng = SeededRandom::from_seed(2);
        for other in [
            SignatureScheme::rsa_pss_pss_sha256,
            SignatureScheme::rsa_pss_pss_sha512,
            SignatureScheme::rsa_pss_rsae_sha384,
        ] {
            assert_eq!(
                key.sign(other, b"m", &mut rng),
                Err(SigError::CannotSign(other))
            );
        }
        let spki = key.public_key_spki_der().unwrap();
        let sig = key.sign(only, b"m", &mut rng).unwrap();
        verify_signature(only, &spki, b"m", &sig).unwrap();
        // Its parameters restrict verification too: the SHA-256 scheme does not fit the key.
        let unrestricted = SigningKey::from_pem(RSA_PSS_KEY).unwrap();
        let sig256 = unrestricted
            .sign(SignatureScheme::rsa_pss_pss_sha256, b"m", &mut rng)
            .unwrap();
        assert_eq!(
            verify_signature(SignatureScheme::rsa_pss_pss_sha256, &spki, b"m", &sig256),
            Err(SigError::KeyMismatch(SignatureScheme::rsa_pss_pss_sha256))
        );
        let der = pem_der(RSA_PSS_SHA384_KEY);
        assert_eq!(key.to_pkcs8_der().unwrap(), der);
        // Parameters that are no TLS 1.3 scheme: SHA-384 with the default MGF1-SHA-1 (what
        // `genpkey -pkeyopt rsa_pss_keygen_md:sha384` alone writes).
        let (info, _) = der_tlv(&der, 0x30).unwrap();
        let (_, rest) = der_tlv(info, 0x02).unwrap();
        let (_, rest) = der_tlv(rest, 0x30).unwrap();
        let md_only_params = [
            0x30, 0x11, 0xa0, 0x0f, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03,
            0x04, 0x02, 0x02, 0x05, 0x00,
        ];
        let alg = [RSASSA_PSS.as_ref(), &md_only_params].concat();
        let odd = der_wrap(
            0x30,
            &[&[0x02, 0x01, 0x00][..], &der_wrap(0x30, &alg), rest].concat(),
        );
        assert!(matches!(
            SigningKey::from_pkcs8_der(&odd),
            Err(SigError::BadPrivateKey(why)) if why.starts_with("RSA-PSS key parameters")
        ));
        // Truncations of an OpenSSL PSS key never load and never panic.
        for cut in 0..der.len() {
            assert!(SigningKey::from_pkcs8_der(&der[..cut]).is_err(), "{cut}");
        }
    }

    #[test]
    fn der_tlv_edges() {
        assert_eq!(der_tlv(&[0x30, 0x00], 0x30), Some((&[][..], &[][..])));
        assert_eq!(der_tlv(&[0x30, 0x01], 0x30), None);
        assert_eq!(der_tlv(&[0x31, 0x00], 0x30), None);
        assert_eq!(der_tlv(&[0x30, 0x80], 0x30), None); // indefinite length
        assert_eq!(der_tlv(&[0x30, 0x81, 0x10], 0x30), None); // non-minimal
        assert_eq!(der_tlv(&[0x30, 0x84, 1, 0, 0, 0], 0x30), None);
        let mut long = vec![0x04, 0x81, 0x80];
        long.extend([0u8; 0x80]);
        assert_eq!(der_tlv(&long, 0x04).map(|(c, _)| c.len()), Some(0x80));
        // What der_wrap writes, der_tlv reads back, at every length form.
        for n in [0, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000] {
            let contents = vec![0xab; n];
            let w = der_wrap(0x04, &contents);
            assert_eq!(der_tlv(&w, 0x04), Some((&contents[..], &[][..])), "{n}");
        }
    }

    #[test]
    fn mldsa_keys_load_in_all_three_openssl_forms_and_sign() {
        let seed = SigningKey::from_pem(MLDSA65_SEED).unwrap();
        let expanded = SigningKey::from_pem(MLDSA65_EXPANDED).unwrap();
        let both = SigningKey::from_pem(MLDSA65_BOTH).unwrap();
        let spki = seed.public_key_spki_der().unwrap();
        assert_eq!(expanded.public_key_spki_der().unwrap(), spki);
        assert_eq!(both.public_key_spki_der().unwrap(), spki);
        assert!(format!("{seed:?}").contains("mldsa65, seed"));
        assert!(format!("{expanded:?}").contains("mldsa65, expanded"));
        let scheme = SignatureScheme::mldsa65;
        let msg = certificate_verify_message(true, &[7; 32]);
        for key in [&seed, &expanded, &both] {
            assert_eq!(key.schemes(), &[scheme]);
            let sig = key
                .sign(scheme, &msg, &mut SeededRandom::from_seed(1))
                .unwrap();
            assert_eq!(sig.len(), MlDsaLevel::L65.signature_len());
            verify_signature(scheme, &spki, &msg, &sig).unwrap();
            // The expanded key is the one the seed expands to: the same signature.
            assert_eq!(
                sig,
                seed.sign(scheme, &msg, &mut SeededRandom::from_seed(1))
                    .unwrap()
            );
            for other in [SignatureScheme::mldsa44, SignatureScheme::ed25519] {
                assert_eq!(
                    key.sign(other, &msg, &mut SeededRandom::from_seed(1)),
                    Err(SigError::CannotSign(other))
                );
            }
        }
        // Written back as OpenSSL wrote them: seed-only when the seed is known (also for
        // "both"), else expandedKey.
        assert_eq!(seed.to_pkcs8_der().unwrap(), pem_der(MLDSA65_SEED));
        assert_eq!(both.to_pkcs8_der().unwrap(), pem_der(MLDSA65_SEED));
        assert_eq!(expanded.to_pkcs8_der().unwrap(), pem_der(MLDSA65_EXPANDED));
    }

    #[test]
    fn mldsa_private_keys_that_disagree_or_are_cut_do_not_load() {
        let both = pem_der(MLDSA65_BOTH);
        // "both" whose expanded key is not the seed's: one byte of t0 changed.
        let mut bad = both.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(
            SigningKey::from_pkcs8_der(&bad).unwrap_err(),
            SigError::BadPrivateKey("ML-DSA seed and expanded key do not agree")
        );
        // An expanded key alone with that change: t0 no longer fits, so it cannot sign what
        // its public key verifies.
        let expanded = pem_der(MLDSA65_EXPANDED);
        let mut bad = expanded.clone();
        let i = bad.len() - 100;
        bad[i] ^= 0x40;
        assert!(matches!(
            SigningKey::from_pkcs8_der(&bad),
            Err(SigError::BadPrivateKey(_))
        ));
        // ρ or tr changed (bytes 0..32 and 64..128 of skEncode): tr is no longer H(pk).
        let key_at = expanded.len() - MlDsaLevel::L65.expanded_key_len();
        for at in [key_at + 5, key_at + 70] {
            let mut bad = expanded.clone();
            bad[at] ^= 1;
            assert!(matches!(
                SigningKey::from_pkcs8_der(&bad),
                Err(SigError::BadPrivateKey(_))
            ));
        }
        // s1 out of range (η = 4: a 4-bit coefficient of 0xf).
        let mut bad = expanded.clone();
        let s1 = bad.len() - MlDsaLevel::L65.expanded_key_len() + 128;
        bad[s1] = 0xff;
        assert!(matches!(
            SigningKey::from_pkcs8_der(&bad),
            Err(SigError::BadPrivateKey(_))
        ));
        // Every truncation fails without a panic.
        for der in [&both, &expanded, &pem_der(MLDSA65_SEED)] {
            for cut in (0..der.len()).step_by(97).chain(der.len() - 3..der.len()) {
                assert!(SigningKey::from_pkcs8_der(&der[..cut]).is_err(), "{cut}");
            }
        }
        // A seed of 31 bytes.
        let seed = pem_der(MLDSA65_SEED);
        let (info, _) = der_tlv(&seed, 0x30).unwrap();
        let (_, rest) = der_tlv(info, 0x02).unwrap();
        let (alg, _) = der_tlv(rest, 0x30).unwrap();
        let short = der_wrap(
            0x30,
            &[
                &[0x02, 0x01, 0x00][..],
                &der_wrap(0x30, alg),
                &der_wrap(0x04, &der_wrap(0x80, &[1; 31])),
            ]
            .concat(),
        );
        assert_eq!(
            SigningKey::from_pkcs8_der(&short).unwrap_err(),
            SigError::BadPrivateKey("ML-DSA seed is not 32 bytes")
        );
    }

    #[test]
    fn mldsa_signing_draws_its_rnd_once_and_replays() {
        for level in MlDsaLevel::ALL {
            let key = SigningKey::generate_mldsa(level, &mut SeededRandom::from_seed(9));
            let scheme = level.scheme();
            let spki = key.public_key_spki_der().unwrap();
            let sign = |seed: u64, msg: &[u8]| {
                let mut inner = SeededRandom::from_seed(seed);
                let mut c = Counting(&mut inner, vec![]);
                let sig = key.sign(scheme, msg, &mut c).unwrap();
                assert_eq!(c.1, vec![32], "one 32-byte draw: FIPS 204's rnd");
                sig
            };
            assert_eq!(sign(3, b"m"), sign(3, b"m"));
            assert_ne!(sign(3, b"m"), sign(4, b"m"), "hedged, not deterministic");
            let sig = sign(3, b"m");
            assert_eq!(sig.len(), level.signature_len());
            verify_signature(scheme, &spki, b"m", &sig).unwrap();
            // Another message, a flipped bit, a cut or padded signature: decrypt_error.
            assert_eq!(
                verify_signature(scheme, &spki, b"M", &sig),
                Err(SigError::BadSignature)
            );
            let mut flipped = sig.clone();
            flipped[10] ^= 1;
            assert_eq!(
                verify_signature(scheme, &spki, b"m", &flipped),
                Err(SigError::BadSignature)
            );
            for wrong in [
                &sig[..sig.len() - 1],
                &[sig.as_slice(), &[0]].concat()[..],
                &[],
            ] {
                let err = verify_signature(scheme, &spki, b"m", wrong).unwrap_err();
                assert_eq!(err, SigError::BadSignature);
                assert_eq!(err.alert(), AlertDescription::DecryptError);
            }
            // The key's parameter set is part of the scheme, both ways.
            for other in MlDsaLevel::ALL.into_iter().filter(|l| *l != level) {
                assert_eq!(
                    verify_signature(other.scheme(), &spki, b"m", &sig),
                    Err(SigError::KeyMismatch(other.scheme()))
                );
            }
            let p256 = keys()[0].public_key_spki_der().unwrap();
            assert_eq!(
                verify_signature(scheme, &p256, b"m", &sig),
                Err(SigError::KeyMismatch(scheme))
            );
            // A key of the wrong length under the right identifier.
            let alg = certificate_verify_algorithm(scheme).unwrap();
            assert_eq!(
                alg.verify(&[0; 100], b"m", &sig),
                Err(SigError::BadKey("ML-DSA public key of the wrong length"))
            );
            // Seeded generation is reproducible and round-trips through PKCS#8.
            let der = key.to_pkcs8_der().unwrap();
            assert_eq!(
                SigningKey::generate_mldsa(level, &mut SeededRandom::from_seed(9))
                    .to_pkcs8_der()
                    .unwrap(),
                der
            );
            let back = SigningKey::from_pkcs8_der(&der).unwrap();
            assert_eq!(back.public_key_spki_der().unwrap(), spki);
            assert!(CERTIFICATE_ALGORITHMS
                .iter()
                .any(|a| a.name() == scheme.name()));
        }
    }

    /// The default build signs and verifies ML-DSA on aws-lc: its keys and signatures must be
    /// RustCrypto's `ml-dsa` ones byte for byte (same ξ, same rnd, same message), so a seeded
    /// connection gives the same bytes on either build, and each verifies the other's.
    #[cfg(feature = "aws-lc-mldsa")]
    #[test]
    fn mldsa_aws_lc_and_rustcrypto_agree_byte_for_byte() {
        let mut rng = SeededRandom::from_seed(44);
        let cv = certificate_verify_message(true, &[7; 32]);
        let messages: [&[u8]; 3] = [b"", b"m", &cv];
        for level in MlDsaLevel::ALL {
            for _ in 0..3 {
                let mut seed = [0u8; 32];
                rng.fill(&mut seed);
                let ours = MlDsaKey::from_seed(level, &seed);
                let rc = mldsa_rc::Key::from_seed(level, &seed);
                assert_eq!(rc.level(), level);
                let public = rc.public_key();
                // aws-lc's expanded key decodes in ml-dsa to the same key.
                let rc_loaded = mldsa_rc::Key::from_expanded(level, &ours.expanded()).unwrap();
                assert_eq!(rc_loaded.public_key(), public);
                assert_eq!(ours.public_key(), public, "{level:?}");
                assert_eq!(ours.expanded()[..], rc.expanded()[..], "{level:?}");
                // The expanded form alone loads into the same key.
                let loaded = MlDsaKey::from_expanded(level, &rc.expanded()).unwrap();
                assert_eq!(loaded.public_key(), public);
                for msg in messages {
                    // The deterministic variant (rnd = 0, FIPS 204 §3.4) and hedged ones.
                    let mut rnd = [0u8; 32];
                    for _ in 0..2 {
                        let sig = ours.sign(msg, &rnd).unwrap();
                        assert_eq!(sig, rc.sign(msg, &rnd).unwrap(), "{level:?}");
                        assert_eq!(sig, loaded.sign(msg, &rnd).unwrap());
                        assert_eq!(sig, rc_loaded.sign(msg, &rnd).unwrap());
                        assert_eq!(sig.len(), level.signature_len());
                        mldsa_verify(level, &public, msg, &sig).unwrap();
                        mldsa_rc::verify(level, &public, msg, &sig).unwrap();
                        let mut flipped = sig.clone();
                        flipped[sig.len() / 2] ^= 4;
                        assert_eq!(
                            mldsa_verify(level, &public, msg, &flipped),
                            Err(SigError::BadSignature)
                        );
                        assert_eq!(
                            mldsa_rc::verify(level, &public, msg, &flipped),
                            Err(SigError::BadSignature)
                        );
                        rng.fill(&mut rnd);
                    }
                }
            }
        }
    }
}
