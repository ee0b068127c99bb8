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
//! - [`cert`]: certificate path validation (§4.4.2.4) via rustls-webpki on our verifiers, PEM
//!   loading, and self-signed certificate generation (rcgen) kept apart from validation.
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
pub mod kx;
pub mod random;
#[cfg(feature = "ring-sign")]
pub mod ring_signer;
pub mod sign;
pub mod x448;

/// Observes nothing: the sink of HPKE's steps ([`hpke::HpkeSink`]) and of the key schedule's
/// derivations ([`DerivationSink`](crate::keyschedule::DerivationSink)) when nobody watches.
/// Defined here, below both, so one value serves either (also as `keyschedule::NoSink`).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSink;
