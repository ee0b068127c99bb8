//! Certificates (RFC 8446 §4.4.2): validating a peer's chain, checking CertificateVerify
//! against its leaf, and reading PEM. Making certificates (self-signed ones, seeded chains) is
//! the lab crate's (`lab::certgen`): the client, the server and validation never do it.
//!
//! - `verify.rs`: path validation (§4.4.2.4) via rustls-webpki on our verifiers, [`CertError`]
//!   with its one alert per reason, [`CertVerifier`] and the [`SignatureMemo`] of signatures
//!   that already passed; [`verify_with_leaf`] for CertificateVerify (§4.4.3).
//! - `pem.rs`: [`certs_from_pem`], DER certificates out of PEM text.
//! - `parts.rs`: [`cert_parts`], where a certificate's bytes go (key, signature, SCTs, other
//!   extensions), for the ledger.

pub mod mtc;
mod parts;
mod pem;
mod verify;

pub use parts::{cert_parts, tbs_range, CertParts, PartsError, SCT_LIST_OID};
pub use pem::{base64_decode, base64_encode, certs_from_pem, pem_blocks, pem_encode};
pub use verify::{
    chain_signed_with, leaf_is_a_root, verify_chain, verify_name, verify_with_leaf, CertError,
    CertVerifier, SignatureMemo, Usage,
};
