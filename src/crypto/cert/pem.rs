//! Certificates from PEM text: the DER of each "CERTIFICATE" block (RFC 7468), for trust
//! anchors and chains read from files.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use super::CertError;

/// Reads every "CERTIFICATE" block of a PEM text, in order; other blocks are skipped.
pub fn certs_from_pem(pem: &str) -> Result<Vec<Vec<u8>>, CertError> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|c| c.map(|c| c.to_vec()).map_err(|_| CertError::BadEncoding))
        .collect()
}
