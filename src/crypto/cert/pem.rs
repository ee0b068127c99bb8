//! Certificates from PEM text: the DER of each "CERTIFICATE" block (RFC 7468), for trust
//! anchors and chains read from files.

use super::CertError;

/// Reads every "CERTIFICATE" block of a PEM text, in order.
pub fn certs_from_pem(pem: &str) -> Result<Vec<Vec<u8>>, CertError> {
    let mut out = Vec::new();
    let mut rest = pem.as_bytes();
    loop {
        match rustls_pemfile::read_one_from_slice(rest) {
            Ok(Some((item, tail))) => {
                rest = tail;
                if let rustls_pemfile::Item::X509Certificate(c) = item {
                    out.push(c.to_vec());
                }
            }
            Ok(None) => return Ok(out),
            Err(_) => return Err(CertError::BadEncoding),
        }
    }
}
