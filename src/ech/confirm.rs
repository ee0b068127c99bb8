//! How the server says "I used your inner ClientHello" (RFC 9849 §7.2, §7.2.1): eight bytes
//! derived from ClientHelloInner.random and the inner transcript, put in the last eight bytes of
//! ServerHello.random, or in the HelloRetryRequest's `encrypted_client_hello` extension.

use core::ops::Range;

use super::wire::ENCRYPTED_CLIENT_HELLO;
use crate::crypto::hash::HashAlg;
use crate::keyschedule::hkdf;
use crate::messages::codec::Reader;

/// The label of the ServerHello confirmation (§7.2), without HKDF-Expand-Label's "tls13 ".
pub const ACCEPT_LABEL: &str = "ech accept confirmation";
/// The label of the HelloRetryRequest confirmation (§7.2.1).
pub const HRR_ACCEPT_LABEL: &str = "hrr ech accept confirmation";

/// `HKDF-Expand-Label(HKDF-Extract(0, inner_random), label, transcript_hash, 8)`, where
/// `transcript_hash` covers ClientHelloInner up to the ServerHello (or HelloRetryRequest) whose
/// confirmation bytes are zero ([`zero_server_hello`], [`zero_hrr`]).
pub fn confirmation(
    hash: HashAlg,
    inner_random: &[u8; 32],
    label: &str,
    transcript_hash: &[u8],
) -> [u8; 8] {
    let prk = hkdf::extract(hash, &[], inner_random);
    let mut out = [0u8; 8];
    // Both labels and an 8-byte output always fit HkdfLabel.
    let _ = hkdf::expand_label_into(
        hash,
        prk.as_ref(),
        label.as_bytes(),
        transcript_hash,
        &mut out,
    );
    out
}

/// Where the confirmation lies in a ServerHello message (with its 4-byte header): the last
/// eight bytes of its random.
pub fn server_hello_range() -> Range<usize> {
    // header(4) legacy_version(2) random(32)
    4 + 2 + 24..4 + 2 + 32
}

/// `server_hello` (a whole message) with the confirmation bytes zeroed, as the transcript for
/// the confirmation hashes it.
pub fn zero_server_hello(server_hello: &[u8]) -> Option<Vec<u8>> {
    let r = server_hello_range();
    let mut m = server_hello.to_vec();
    m.get_mut(r)?.fill(0);
    Some(m)
}

/// Where the `encrypted_client_hello` extension's 8 bytes lie in a HelloRetryRequest message
/// (with its header), if it has one of that length.
pub fn hrr_range(hrr: &[u8]) -> Option<Range<usize>> {
    let mut r = Reader::new(hrr.get(4..)?);
    r.bytes(2 + 32, "legacy_version, random").ok()?;
    r.sub_u8("legacy_session_id_echo").ok()?;
    r.bytes(3, "cipher_suite, compression").ok()?;
    let mut exts = r.sub_u16("extensions").ok()?;
    while !exts.is_empty() {
        let typ = exts.u16("extension_type").ok()?;
        let data = exts.sub_u16("extension_data").ok()?;
        if typ == ENCRYPTED_CLIENT_HELLO && data.remaining() == 8 {
            let start = 4 + data.offset();
            return Some(start..start + 8);
        }
    }
    None
}

/// `hrr` with its confirmation zeroed (§7.2.1).
pub fn zero_hrr(hrr: &[u8]) -> Option<Vec<u8>> {
    let r = hrr_range(hrr)?;
    let mut m = hrr.to_vec();
    m[r].fill(0);
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmation_is_hkdf_of_the_inner_random_and_transcript() {
        let random = [7u8; 32];
        let th = HashAlg::Sha256.hash(b"transcript");
        let c = confirmation(HashAlg::Sha256, &random, ACCEPT_LABEL, th.as_ref());
        // By hand: Extract with a zero salt, then Expand-Label "tls13 ech accept confirmation".
        let prk = HashAlg::Sha256.hmac(&[0u8; 32], &random);
        let want = hkdf::expand_label(HashAlg::Sha256, prk.as_ref(), ACCEPT_LABEL, th.as_ref(), 8)
            .unwrap();
        assert_eq!(c.as_slice(), want.as_slice());
        assert_ne!(
            c,
            confirmation(HashAlg::Sha256, &random, HRR_ACCEPT_LABEL, th.as_ref())
        );
        assert_ne!(
            c,
            confirmation(HashAlg::Sha384, &random, ACCEPT_LABEL, th.as_ref())
        );
    }

    #[test]
    fn zeroing_touches_only_the_confirmation() {
        let mut sh = vec![2, 0, 0, 40, 3, 3];
        sh.extend_from_slice(&[0xab; 32]);
        sh.extend_from_slice(&[0, 0x13, 0x01, 0]);
        let z = zero_server_hello(&sh).unwrap();
        assert_eq!(&z[..30], &sh[..30]);
        assert!(z[30..38].iter().all(|b| *b == 0));
        assert_eq!(&z[38..], &sh[38..]);

        // A HelloRetryRequest with supported_versions then encrypted_client_hello(8 bytes).
        let mut hrr = vec![2, 0, 0, 0, 3, 3];
        hrr.extend_from_slice(&[0xcf; 32]);
        hrr.extend_from_slice(&[0, 0x13, 0x01, 0]);
        hrr.extend_from_slice(&[0, 18, 0, 43, 0, 2, 3, 4, 0xfe, 0x0d, 0, 8]);
        hrr.extend_from_slice(&[0x99; 8]);
        let r = hrr_range(&hrr).unwrap();
        assert_eq!(r, hrr.len() - 8..hrr.len());
        let z = zero_hrr(&hrr).unwrap();
        assert!(z[r.clone()].iter().all(|b| *b == 0));
        assert_eq!(&z[..r.start], &hrr[..r.start]);
        assert!(hrr_range(&hrr[..hrr.len() - 1]).is_none());
    }
}
