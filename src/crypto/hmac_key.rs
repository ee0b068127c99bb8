//! HMAC (RFC 2104) with its key schedule done once, on the `sha2` crate's compression functions:
//! how a key-schedule secret keeps its HMAC key state between HKDF expansions, and erases it.
//!
//! ```text
//! HMAC(K, m) = H((K ^ opad) || H((K ^ ipad) || m))      K padded with zeros to one block
//! ```
//!
//! `K ^ ipad` and `K ^ opad` are exactly one block each, so the hash states after them (the
//! "midstates") depend on the key alone. An [`HmacKey`] holds the two; each HMAC then costs the
//! blocks of `m` plus one final block inside and one outside, instead of two more for the key.
//! A secret in the TLS 1.3 schedule is expanded 2–4 times (RFC 8446 §7.1, §7.3), so this halves
//! most of its HMAC work. The message is streamed into the block buffer part by part, and the
//! outer hash has fixed lengths throughout. Measured here (SHA-NI, `benches/bulk.rs`
//! `primitives/`): one HKDF-Expand-Label on a secret whose state is kept, 143–145 ns in either
//! build, 251–259 ns with the key state set up first; a one-shot HMAC-SHA256 of 32 bytes takes
//! 187 ns with the `hmac` crate and 294 ns with ring, neither of which can keep such a state and
//! erase it. One-shot HMACs (HKDF-Extract, Finished) stay on those crates, and tests check both
//! agree (docs/performance.md).

use sha2::digest::generic_array::GenericArray;
use zeroize::{Zeroize, ZeroizeOnDrop};

use super::hash::{HashAlg, Output, MAX_HASH_LEN};

/// SHA-256 initial hash value (FIPS 180-4 §5.3.3).
const IV_256: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];
/// SHA-384 initial hash value (FIPS 180-4 §5.3.4).
const IV_384: [u64; 8] = [
    0xcbbb9d5dc1059ed8,
    0x629a292a367cd507,
    0x9159015a3070dd17,
    0x152fecd8f70e5939,
    0x67332667ffc00b31,
    0x8eb44a8768581511,
    0xdb0c2e0d64f98fa7,
    0x47b5481dbefa4fa4,
];

/// Merkle–Damgård over one SHA-2 compression function: the state after one key block, and the
/// finish of a hash that has absorbed exactly one block (FIPS 180-4 §5.1 padding).
macro_rules! sha2_midstate {
    ($m:ident, $word:ty, $block:literal, $digest:literal, $len_bytes:literal, $compress:path, $iv:expr) => {
        mod $m {
            use super::*;

            pub(super) type State = [$word; 8];
            pub(super) const BLOCK: usize = $block;
            /// Digest length: SHA-384 keeps 6 of its 8 words (FIPS 180-4 §6.5).
            pub(super) const DIGEST: usize = $digest;

            fn compress(state: &mut State, block: &[u8]) {
                $compress(
                    state,
                    core::slice::from_ref(GenericArray::from_slice(block)),
                );
            }

            /// The state after absorbing `key` (at most one block) padded with zeros, XOR `pad`.
            pub(super) fn keyed(key: &[u8], pad: u8) -> State {
                let mut b = [pad; BLOCK];
                for (x, k) in b.iter_mut().zip(key) {
                    *x ^= k;
                }
                let mut s = $iv;
                compress(&mut s, &b);
                b[..].zeroize();
                s
            }

            /// The digest of state `s`: its first `DIGEST` bytes, big-endian (FIPS 180-4 §6).
            fn digest(s: &State) -> [u8; DIGEST] {
                const W: usize = core::mem::size_of::<$word>();
                let mut words = [0u8; 8 * W];
                for (d, w) in words.chunks_exact_mut(W).zip(s) {
                    d.copy_from_slice(&w.to_be_bytes());
                }
                let mut out = [0u8; DIGEST];
                out.copy_from_slice(&words[..DIGEST]);
                out
            }

            /// Finishes the hash whose state after its first block is `s` (a copy: the kept
            /// midstate is not advanced) over the concatenation of `parts`. The parts are
            /// streamed into one block buffer: no concatenated copy of the message, which is
            /// what an HMAC of HKDF's few short pieces mostly spent its time on.
            pub(super) fn finish(mut s: State, parts: &[&[u8]]) -> [u8; DIGEST] {
                let mut block = [0u8; BLOCK];
                let mut fill = 0;
                let mut total = BLOCK as u128;
                for part in parts {
                    total += part.len() as u128;
                    let mut p: &[u8] = part;
                    while !p.is_empty() {
                        let n = (BLOCK - fill).min(p.len());
                        block[fill..fill + n].copy_from_slice(&p[..n]);
                        fill += n;
                        p = &p[n..];
                        if fill == BLOCK {
                            compress(&mut s, &block);
                            fill = 0;
                        }
                    }
                }
                // 0x80, zeros, then the message length in bits, big-endian (FIPS 180-4 §5.1).
                block[fill] = 0x80;
                block[fill + 1..].fill(0);
                if fill >= BLOCK - $len_bytes {
                    compress(&mut s, &block);
                    block = [0u8; BLOCK];
                }
                let bits = (total * 8).to_be_bytes();
                block[BLOCK - $len_bytes..].copy_from_slice(&bits[16 - $len_bytes..]);
                compress(&mut s, &block);
                digest(&s)
            }

            /// HMAC's outer hash: the state after `K ^ opad`, finished over the inner digest.
            /// Every length is fixed (one block: digest, 0x80, zeros, length), so this is
            /// straight-line code with no copy of a variable length.
            pub(super) fn finish_outer(mut s: State, inner: &[u8; DIGEST]) -> [u8; DIGEST] {
                let mut block = [0u8; BLOCK];
                block[..DIGEST].copy_from_slice(inner);
                block[DIGEST] = 0x80;
                let bits = (((BLOCK + DIGEST) * 8) as u128).to_be_bytes();
                block[BLOCK - $len_bytes..].copy_from_slice(&bits[16 - $len_bytes..]);
                compress(&mut s, &block);
                digest(&s)
            }
        }
    };
}

sha2_midstate!(s256, u32, 64, 32, 8, sha2::compress256, IV_256);
sha2_midstate!(s384, u64, 128, 48, 16, sha2::compress512, IV_384);

/// An HMAC key with its inner and outer midstates computed; erased on drop.
#[derive(Clone)]
pub(crate) enum HmacKey {
    /// HMAC-SHA256.
    Sha256 {
        /// State after `K ^ ipad`.
        inner: s256::State,
        /// State after `K ^ opad`.
        outer: s256::State,
    },
    /// HMAC-SHA384.
    Sha384 {
        /// State after `K ^ ipad`.
        inner: s384::State,
        /// State after `K ^ opad`.
        outer: s384::State,
    },
}

/// The midstates erased as slices (one fill and a barrier), not word by word.
impl Zeroize for HmacKey {
    fn zeroize(&mut self) {
        match self {
            HmacKey::Sha256 { inner, outer } => {
                inner[..].zeroize();
                outer[..].zeroize();
            }
            HmacKey::Sha384 { inner, outer } => {
                inner[..].zeroize();
                outer[..].zeroize();
            }
        }
    }
}

impl Drop for HmacKey {
    fn drop(&mut self) {
        self.zeroize();
    }
}

impl ZeroizeOnDrop for HmacKey {}

impl HmacKey {
    /// Runs the key schedule for `key` (a key longer than one block is hashed first, RFC 2104
    /// §2).
    pub(crate) fn new(alg: HashAlg, key: &[u8]) -> HmacKey {
        let block = match alg {
            HashAlg::Sha256 => s256::BLOCK,
            HashAlg::Sha384 => s384::BLOCK,
        };
        let hashed;
        let key = if key.len() > block {
            hashed = alg.hash(key);
            hashed.as_slice()
        } else {
            key
        };
        match alg {
            HashAlg::Sha256 => HmacKey::Sha256 {
                inner: s256::keyed(key, 0x36),
                outer: s256::keyed(key, 0x5c),
            },
            HashAlg::Sha384 => HmacKey::Sha384 {
                inner: s384::keyed(key, 0x36),
                outer: s384::keyed(key, 0x5c),
            },
        }
    }

    /// The hash this key is for.
    pub(crate) fn alg(&self) -> HashAlg {
        match self {
            HmacKey::Sha256 { .. } => HashAlg::Sha256,
            HmacKey::Sha384 { .. } => HashAlg::Sha384,
        }
    }

    /// HMAC over the concatenation of `parts`. Like the `hmac` crate, the per-call temporaries
    /// on the stack (the message block, the inner digest) are not erased: only the kept state
    /// is.
    pub(crate) fn sign(&self, parts: &[&[u8]]) -> Output {
        let mut out = [0u8; MAX_HASH_LEN];
        match self {
            HmacKey::Sha256 { inner, outer } => {
                let t = s256::finish_outer(*outer, &s256::finish(*inner, parts));
                out[..s256::DIGEST].copy_from_slice(&t);
                Output::from_array(out, s256::DIGEST)
            }
            HmacKey::Sha384 { inner, outer } => {
                let t = s384::finish_outer(*outer, &s384::finish(*inner, parts));
                out[..s384::DIGEST].copy_from_slice(&t);
                Output::from_array(out, s384::DIGEST)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    /// RFC 4231 test cases 1, 2, 6 and 7 (key of 20 bytes, 4 bytes, 131 bytes: hashed first).
    #[test]
    fn rfc4231() {
        let cases: [(Vec<u8>, Vec<u8>, &str, &str); 4] = [
            (
                vec![0x0b; 20],
                b"Hi There".to_vec(),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
                "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c\
                 faea9ea9076ede7f4af152e8b2fa9cb6",
            ),
            (
                b"Jefe".to_vec(),
                b"what do ya want for nothing?".to_vec(),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
                "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e\
                 8e2240ca5e69e2c78b3239ecfab21649",
            ),
            (
                vec![0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First".to_vec(),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
                "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c6\
                 0c2ef6ab4030fe8296248df163f44952",
            ),
            (
                vec![0xaa; 131],
                b"This is a test using a larger than block-size key and a larger than \
                  block-size data. The key needs to be hashed before being used by the HMAC \
                  algorithm."
                    .to_vec(),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
                "6617178e941f020d351e2f254e8fd32c602420feb0b8fb9adccebb82461e99c5\
                 a678cc31e799176d3860e6110c46523e",
            ),
        ];
        for (key, msg, want256, want384) in cases {
            let k = HmacKey::new(HashAlg::Sha256, &key);
            assert_eq!(k.sign(&[&msg]).as_slice(), h(want256));
            let k = HmacKey::new(HashAlg::Sha384, &key);
            assert_eq!(k.sign(&[&msg]).as_slice(), h(want384));
        }
    }

    proptest! {
        /// Same as the one-shot HMAC for any key, any message cut into any parts, and a key
        /// used many times; around every padding boundary of both block sizes.
        #[test]
        fn agrees_with_the_one_shot_hmac(
            key in proptest::collection::vec(any::<u8>(), 0..200),
            msg in proptest::collection::vec(any::<u8>(), 0..300),
            cut in 0usize..300,
            cut2 in 0usize..300,
        ) {
            // Three parts (one empty) cut anywhere: the streaming into blocks must not care
            // where a part ends.
            let (a, b) = (cut.min(msg.len()), cut2.min(msg.len()));
            let (a, b) = (a.min(b), a.max(b));
            for alg in [HashAlg::Sha256, HashAlg::Sha384] {
                let k = HmacKey::new(alg, &key);
                prop_assert_eq!(k.alg(), alg);
                for _ in 0..2 {
                    prop_assert_eq!(
                        k.sign(&[&msg[..a], &[], &msg[a..b], &msg[b..]]),
                        alg.hmac(&key, &msg)
                    );
                }
            }
        }
    }

    #[test]
    fn zeroize_clears_both_midstates() {
        let mut k = HmacKey::new(HashAlg::Sha256, b"key");
        k.zeroize();
        assert!(
            matches!(k, HmacKey::Sha256 { inner, outer } if inner == [0; 8] && outer == [0; 8])
        );
        let mut k = HmacKey::new(HashAlg::Sha384, b"key");
        k.zeroize();
        assert!(
            matches!(k, HmacKey::Sha384 { inner, outer } if inner == [0; 8] && outer == [0; 8])
        );
    }

    #[test]
    fn every_length_around_the_padding_boundaries() {
        let key = [7u8; 48];
        for alg in [HashAlg::Sha256, HashAlg::Sha384] {
            let k = HmacKey::new(alg, &key);
            for len in 0..=260 {
                let msg = vec![len as u8; len];
                assert_eq!(k.sign(&[&msg]), alg.hmac(&key, &msg), "{alg} {len}");
            }
        }
    }
}
