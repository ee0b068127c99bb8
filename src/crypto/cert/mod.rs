//! Certificates (RFC 8446 §4.4.2): validating a peer's chain, checking CertificateVerify
//! against its leaf, reading PEM, and making self-signed certificates.
//!
//! - `verify.rs`: path validation (§4.4.2.4) via rustls-webpki on our verifiers, [`CertError`]
//!   with its one alert per reason, [`CertVerifier`] and the [`SignatureMemo`] of signatures
//!   that already passed; [`verify_with_leaf`] for CertificateVerify (§4.4.3).
//! - `pem.rs`: [`certs_from_pem`], DER certificates out of PEM text.
//! - `generate.rs`: [`self_signed_p256`] and [`self_signed_ecdsa`] (rcgen around our signing
//!   keys) for the demo, the simulator, the CLI and the tests; the client, the server and
//!   validation never call it.

#[cfg(feature = "certgen")]
mod generate;
mod pem;
mod verify;

#[cfg(feature = "certgen")]
pub use generate::{self_signed_ecdsa, self_signed_p256, CertGenError};
pub use pem::{base64_decode, base64_encode, certs_from_pem, pem_blocks, pem_encode};
pub use verify::{
    chain_signed_with, verify_chain, verify_with_leaf, CertError, CertVerifier, SignatureMemo,
    Usage,
};
