//! HKDF-Expand (RFC 5869 §2.3) with `info` in pieces, the primitive under both of the crate's
//! labelled expansions: TLS 1.3's HKDF-Expand-Label (`keyschedule::hkdf`, which builds on this
//! with its own secrets' cached HMAC keys) and HPKE's LabeledExpand ([`super::hpke`]). Extract is
//! one HMAC ([`HashAlg::hmac`]). Here, below both, so HPKE needs nothing from the key schedule.

use super::hash::{HashAlg, Output};

/// The most pieces `info` may come in: HkdfLabel is fed as six, LabeledExpand as five.
pub(crate) const MAX_INFO_PARTS: usize = 6;

/// L > 255 × Hash.length (RFC 5869 §2.3), or `info` in more than [`MAX_INFO_PARTS`] pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutputTooLong;

/// HKDF-Expand(PRK, info, L) into `out` (L = its length), PRK as bytes.
pub(crate) fn expand(
    hash: HashAlg,
    prk: &[u8],
    info: &[&[u8]],
    out: &mut [u8],
) -> Result<(), OutputTooLong> {
    if out.len() > 255 * hash.output_len() || info.len() > MAX_INFO_PARTS {
        return Err(OutputTooLong);
    }
    expand_with(hash, |parts| hash.hmac_parts(prk, parts), info, out);
    Ok(())
}

/// HKDF-Expand with the PRF given: `prf(parts)` is HMAC(PRK, parts concatenated), so a caller
/// may key it from a cached HMAC state. T(i) = HMAC(PRK, T(i-1) | info | i). Callers check
/// that `out` is at most 255 × Hash.length bytes; info pieces past [`MAX_INFO_PARTS`] are
/// ignored.
pub(crate) fn expand_with(
    hash: HashAlg,
    prf: impl Fn(&[&[u8]]) -> Output,
    info: &[&[u8]],
    out: &mut [u8],
) {
    let hl = hash.output_len();
    // T(0) is empty: no part at all (and no empty `Output` to erase) for the first block.
    let mut prev: Option<Output> = None;
    for (i, chunk) in out.chunks_mut(hl).enumerate() {
        let counter = [(i + 1) as u8];
        // At most 1 (T(i-1)) + 6 (info pieces) + 1 (counter) parts.
        let mut parts: [&[u8]; MAX_INFO_PARTS + 2] = [&[]; MAX_INFO_PARTS + 2];
        let mut n = 0;
        if let Some(p) = &prev {
            parts[0] = p.as_slice();
            n = 1;
        }
        for p in info.iter().take(MAX_INFO_PARTS) {
            parts[n] = p;
            n += 1;
        }
        parts[n] = &counter;
        let t = prf(&parts[..n + 1]);
        chunk.copy_from_slice(&t[..chunk.len()]);
        // The previous T(i) is erased as it is dropped here.
        prev = Some(t);
    }
}
