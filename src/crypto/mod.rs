//! Cryptographic backends for the sans-IO core (all RustCrypto, all randomness injected).
//!
//! - [`hash`], [`aead`]: transcript hashes, HMAC and record protection (RFC 8446 §5, §7);
//!   `hkdf`: HKDF-Expand, under the key schedule's Expand-Label and HPKE's LabeledExpand.
//! - [`ech`]: ECH key files (a PKCS#8 key and an ECHConfigList, as OpenSSL writes them).
//! - [`hpke`]: HPKE (RFC 9180) base mode for Encrypted ClientHello, every step observable.
//! - [`random`]: the [`random::RandomSource`] every random value is drawn from.
//! - [`kx`]: key_share groups: (EC)DHE, ML-KEM and the hybrids (§4.2.8, §7.4), with
//!   [`x448`] (RFC 7748) and [`ffdhe`] (RFC 7919) written out on crypto-bigint.
//! - [`sign`]: CertificateVerify signing and verification (§4.4.3).
//! - [`cert`]: certificate path validation (§4.4.2.4) via rustls-webpki on our verifiers and
//!   PEM loading (generation is the lab crate's).
//!
//! Faster backends, on by default (docs/performance.md; `--no-default-features` is all
//! RustCrypto): `ring-aead` (records), `ring-verify` (ECDSA P-256 verification), `ring-sign`
//! (`ring_signer`, whose signatures draw their randomness from the connection's source), and
//! `aws-lc-kx` (X25519 and ML-KEM on aws-lc) and `aws-lc-mldsa` (ML-DSA on aws-lc), the only
//! `unsafe` in the crate (`awslc`), with the same injected seeds. Every one of them keeps
//! connections replayable.

pub mod aead;
#[cfg(any(feature = "aws-lc-kx", feature = "aws-lc-mldsa"))]
mod awslc;
pub mod cert;
pub mod ech;
pub mod ffdhe;
pub mod hash;
pub(crate) mod hkdf;
pub(crate) mod hmac_key;
pub mod hpke;
mod hpke_pq;
pub mod kx;
pub mod random;
#[cfg(feature = "ring-sign")]
pub mod ring_signer;
pub mod sign;
pub mod x448;

/// Which backend each primitive runs on in this build (the features above), for reports such as
/// `tls13lab bench`'s: every one of them gives the same bytes from the same injected randomness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backends {
    /// Record protection (AES-GCM, ChaCha20-Poly1305); CCM is RustCrypto's in every build.
    pub records: &'static str,
    /// ECDSA P-256 signature verification (certificates, CertificateVerify).
    pub verify: &'static str,
    /// ECDSA P-256 CertificateVerify signing (through [`config::fastest_signer`](crate::config::fastest_signer)).
    pub sign: &'static str,
    /// ML-DSA-44/65/87 signing and verification.
    pub mldsa: &'static str,
    /// X25519 and ML-KEM (alone and inside the hybrids).
    pub kx: &'static str,
    /// Transcript hashes and HMAC (so HKDF).
    pub hash: &'static str,
}

const fn pick(on: bool, fast: &'static str) -> &'static str {
    if on {
        fast
    } else {
        "RustCrypto"
    }
}

/// The backends of this build.
pub const BACKENDS: Backends = Backends {
    records: pick(cfg!(feature = "ring-aead"), "ring (CCM: RustCrypto)"),
    verify: pick(cfg!(feature = "ring-verify"), "ring"),
    sign: pick(cfg!(feature = "ring-sign"), "ring"),
    mldsa: pick(cfg!(feature = "aws-lc-mldsa"), "aws-lc"),
    kx: pick(cfg!(feature = "aws-lc-kx"), "aws-lc (X25519, ML-KEM)"),
    hash: pick(cfg!(feature = "ring-hash"), "ring"),
};

/// Observes nothing: the sink of HPKE's steps ([`hpke::HpkeSink`]) and of the key schedule's
/// derivations ([`DerivationSink`](crate::keyschedule::DerivationSink)) when nobody watches.
/// Defined here, below both, so one value serves either (also as `keyschedule::NoSink`).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSink;
