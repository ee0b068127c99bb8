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

/// Base64 (RFC 4648 §4, with padding), as PEM bodies and ECHConfigLists on the command line use it.
pub fn base64_encode(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Decodes base64 (RFC 4648 §4), ignoring ASCII whitespace (PEM wraps at 64 columns); `None` on
/// any other character, bad padding or a dangling final character.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits, mut pad) = (0u32, 0u32, 0usize);
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                pad += 1;
                continue;
            }
            _ => return None,
        };
        if pad > 0 {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    // Two characters of a last group leave 4 bits (and take "=="), three leave 2 ("="); 6
    // leftover bits are a lone character.
    let ok = match bits {
        0 => pad == 0,
        2 => pad == 1,
        4 => pad == 2,
        _ => false,
    };
    (ok && acc & ((1 << bits) - 1) == 0).then_some(out)
}

/// The body of every `-----BEGIN LABEL-----` … `-----END LABEL-----` block (RFC 7468 §2) whose
/// label is `label`, base64-decoded; `None` if one is unterminated or not base64.
pub fn pem_blocks(text: &str, label: &str) -> Option<Vec<Vec<u8>>> {
    let (begin, end) = (
        format!("-----BEGIN {label}-----"),
        format!("-----END {label}-----"),
    );
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(&begin) {
        let body = &rest[at + begin.len()..];
        let stop = body.find(&end)?;
        out.push(base64_decode(&body[..stop])?);
        rest = &body[stop + end.len()..];
    }
    Some(out)
}

/// One PEM block with a 64-column body (RFC 7468 §2).
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    let mut s = format!("-----BEGIN {label}-----\n");
    for line in base64_encode(der).as_bytes().chunks(64) {
        s.push_str(std::str::from_utf8(line).unwrap_or_default());
        s.push('\n');
    }
    s.push_str(&format!("-----END {label}-----\n"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_rejects_bad_input() {
        for n in 0..70u8 {
            let data: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(base64_decode(&base64_encode(&data)).unwrap(), data);
        }
        assert_eq!(base64_decode("Zm9v\nYmE=").unwrap(), b"fooba");
        for bad in ["Zm9", "Zg=", "Zh==", "Zg==Zg==", "Zm9v!", "Z==="] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
        let pem = pem_encode("ECHCONFIG", &[1; 100]);
        assert_eq!(pem_blocks(&pem, "ECHCONFIG").unwrap(), vec![vec![1; 100]]);
        assert_eq!(
            pem_blocks(&pem, "PRIVATE KEY").unwrap(),
            Vec::<Vec<u8>>::new()
        );
        assert_eq!(pem_blocks(&pem[..pem.len() - 10], "ECHCONFIG"), None);
    }
}
