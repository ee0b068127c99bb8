//! The two hash functions TLS 1.3's cipher suites use (RFC 8446 §B.4), HMAC over them, and an
//! incremental state for the transcript hash (RFC 8446 §4.4.1).
//!
//! Everything here is fixed-size and allocation-free: an [`Output`] is at most 48 bytes on the stack.

#[cfg(not(feature = "ring-hash"))]
use hmac::{Hmac, Mac};
#[cfg(not(feature = "ring-hash"))]
use sha2::{Digest, Sha256, Sha384};
use subtle::ConstantTimeEq;

#[cfg(not(feature = "ring-hash"))]
use super::hmac_key::HmacKey;

/// Largest output of any supported hash (SHA-384).
pub const MAX_HASH_LEN: usize = 48;

/// Hash function of a cipher suite (RFC 8446 §B.4): the transcript hash and HKDF both use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum HashAlg {
    /// SHA-256 (TLS_AES_128_GCM_SHA256, TLS_CHACHA20_POLY1305_SHA256).
    Sha256,
    /// SHA-384 (TLS_AES_256_GCM_SHA384).
    Sha384,
}

/// HMAC under the key of zeros for `alg`, whose key schedule is done on first use.
fn zero_key_sign(alg: HashAlg, parts: &[&[u8]]) -> Output {
    use std::sync::OnceLock;
    static SHA256: OnceLock<PreparedHmac> = OnceLock::new();
    static SHA384: OnceLock<PreparedHmac> = OnceLock::new();
    let cell = match alg {
        HashAlg::Sha256 => &SHA256,
        HashAlg::Sha384 => &SHA384,
    };
    cell.get_or_init(|| alg.hmac_prepared(&[])).sign(parts)
}

/// An HMAC key with its key schedule done once, for a key that signs more than once (the key
/// of zeros; HPKE's `secret`, expanded into key and base_nonce, RFC 9180 §5.1): on ring with
/// `ring-hash`, else on [`HmacKey`](super::hmac_key::HmacKey)'s midstates.
pub(crate) struct PreparedHmac {
    #[cfg(feature = "ring-hash")]
    key: ring::hmac::Key,
    #[cfg(not(feature = "ring-hash"))]
    key: HmacKey,
}

impl PreparedHmac {
    /// HMAC over the concatenation of `parts`.
    pub(crate) fn sign(&self, parts: &[&[u8]]) -> Output {
        #[cfg(feature = "ring-hash")]
        {
            let mut ctx = ring::hmac::Context::with_key(&self.key);
            for p in parts {
                ctx.update(p);
            }
            Output::from_generic(ctx.sign().as_ref())
        }
        #[cfg(not(feature = "ring-hash"))]
        self.key.sign(parts)
    }
}

impl HashAlg {
    /// Hash.length in RFC 8446 §7.1.
    pub const fn output_len(self) -> usize {
        match self {
            HashAlg::Sha256 => 32,
            HashAlg::Sha384 => 48,
        }
    }

    /// Display name, e.g. `"SHA-256"`.
    pub const fn name(self) -> &'static str {
        match self {
            HashAlg::Sha256 => "SHA-256",
            HashAlg::Sha384 => "SHA-384",
        }
    }

    /// Hash("") (SHA-256 or SHA-384 of no bytes): the context of every Derive-Secret over no
    /// messages (RFC 8446 §7.1: "derived", the binder keys, the exporter's per-label secret). A
    /// constant, so deriving those secrets hashes nothing (`empty_hashes` checks it against the
    /// function).
    pub const fn empty_hash(self) -> &'static [u8] {
        const SHA256_EMPTY: [u8; 32] = [
            0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f,
            0xb9, 0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b,
            0x78, 0x52, 0xb8, 0x55,
        ];
        const SHA384_EMPTY: [u8; 48] = [
            0x38, 0xb0, 0x60, 0xa7, 0x51, 0xac, 0x96, 0x38, 0x4c, 0xd9, 0x32, 0x7e, 0xb1, 0xb1,
            0xe3, 0x6a, 0x21, 0xfd, 0xb7, 0x11, 0x14, 0xbe, 0x07, 0x43, 0x4c, 0x0c, 0xc7, 0xbf,
            0x63, 0xf6, 0xe1, 0xda, 0x27, 0x4e, 0xde, 0xbf, 0xe7, 0x6f, 0x65, 0xfb, 0xd5, 0x1a,
            0xd2, 0xf1, 0x48, 0x98, 0xb9, 0x5b,
        ];
        match self {
            HashAlg::Sha256 => &SHA256_EMPTY,
            HashAlg::Sha384 => &SHA384_EMPTY,
        }
    }

    /// One-shot hash of `data`.
    pub fn hash(self, data: &[u8]) -> Output {
        let mut st = HashState::new(self);
        st.update(data);
        st.finish()
    }

    /// HMAC(key, data) (RFC 2104), used for Finished and PSK binders (RFC 8446 §4.4.4, §4.2.11.2).
    pub fn hmac(self, key: &[u8], data: &[u8]) -> Output {
        self.hmac_parts(key, &[data])
    }

    /// HMAC over the concatenation of `parts`, so callers never build the message in a buffer
    /// (HKDF's `T(n-1) | info | n` is fed this way).
    pub fn hmac_parts(self, key: &[u8], parts: &[&[u8]]) -> Output {
        // A key of zeros is the same HMAC key at any length up to a block (RFC 2104 pads it
        // with zeros): HKDF-Extract's default salt (RFC 5869 §2.2), the "0" of the TLS 1.3 key
        // schedule (RFC 8446 §7.1), HPKE's empty salts (RFC 9180 §4) and ECH's confirmation
        // (RFC 9849 §7.2). Its key schedule is done once per process.
        // Compared in constant time (the key may be a secret); only whether it is all zeros,
        // a public constant, shows.
        if key.len() <= 64 && bool::from(key.ct_eq(&[0u8; 64][..key.len()])) {
            return zero_key_sign(self, parts);
        }
        #[cfg(feature = "ring-hash")]
        {
            self.hmac_prepared(key).sign(parts)
        }
        #[cfg(not(feature = "ring-hash"))]
        match self {
            HashAlg::Sha256 => hmac_sha256(key, parts),
            HashAlg::Sha384 => hmac_sha384(key, parts),
        }
    }

    /// `key` prepared for several HMACs.
    pub(crate) fn hmac_prepared(self, key: &[u8]) -> PreparedHmac {
        #[cfg(feature = "ring-hash")]
        let key = ring::hmac::Key::new(
            match self {
                HashAlg::Sha256 => ring::hmac::HMAC_SHA256,
                HashAlg::Sha384 => ring::hmac::HMAC_SHA384,
            },
            key,
        );
        #[cfg(not(feature = "ring-hash"))]
        let key = HmacKey::new(self, key);
        PreparedHmac { key }
    }

    /// A string of Hash.length zero bytes: the "0" of the key schedule diagram (RFC 8446 §7.1).
    pub fn zeros(self) -> Output {
        Output {
            bytes: [0; MAX_HASH_LEN],
            len: self.output_len() as u8,
        }
    }

    /// A fresh incremental state.
    pub fn start(self) -> HashState {
        HashState::new(self)
    }
}

impl core::fmt::Display for HashAlg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(not(feature = "ring-hash"))]
macro_rules! hmac_fn {
    ($name:ident, $d:ty) => {
        fn $name(key: &[u8], parts: &[&[u8]]) -> Output {
            // HMAC takes keys of any length (longer ones are hashed, RFC 2104 §2), so the error
            // arm cannot happen; an empty output keeps this panic-free anyway.
            let Ok(mut mac) = <Hmac<$d> as Mac>::new_from_slice(key) else {
                return Output::empty();
            };
            for p in parts {
                mac.update(p);
            }
            Output::from_generic(&mac.finalize().into_bytes())
        }
    };
}
#[cfg(not(feature = "ring-hash"))]
hmac_fn!(hmac_sha256, Sha256);
#[cfg(not(feature = "ring-hash"))]
hmac_fn!(hmac_sha384, Sha384);

/// A hash or HMAC value (≤ 48 bytes) held inline.
///
/// Equality is constant-time, since Finished values and binders may be compared as `Output`s.
/// Erased on drop: HMAC outputs are sometimes key material (HKDF's PRK and T(i)).
#[derive(Clone)]
pub struct Output {
    bytes: [u8; MAX_HASH_LEN],
    len: u8,
}

/// Erased as a slice, not as an array: `zeroize` clears a `[u8]` with one fill and an
/// optimisation barrier, but a `[u8; N]` one volatile byte store at a time — a few per cent of
/// a psk_ke handshake, which drops dozens of these.
impl zeroize::Zeroize for Output {
    fn zeroize(&mut self) {
        self.bytes[..].zeroize();
        self.len.zeroize();
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(self);
    }
}

impl zeroize::ZeroizeOnDrop for Output {}

impl Output {
    /// Copies `bytes`; `None` if longer than 48 bytes.
    pub fn new(bytes: &[u8]) -> Option<Output> {
        if bytes.len() > MAX_HASH_LEN {
            return None;
        }
        let mut out = Output::empty();
        out.bytes[..bytes.len()].copy_from_slice(bytes);
        out.len = bytes.len() as u8;
        Some(out)
    }

    /// The first `len` bytes of `bytes` (`len` ≤ 48, clamped), without a copy through a slice.
    pub(crate) fn from_array(bytes: [u8; MAX_HASH_LEN], len: usize) -> Output {
        Output {
            bytes,
            len: len.min(MAX_HASH_LEN) as u8,
        }
    }

    /// The zero-length output: what a transcript reports before its hash is chosen.
    pub const fn empty() -> Output {
        Output {
            bytes: [0; MAX_HASH_LEN],
            len: 0,
        }
    }

    fn from_generic(b: &[u8]) -> Output {
        // Digest outputs are 32 or 48 bytes here, always within capacity.
        Output::new(b).unwrap_or_else(Output::empty)
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True for the zero-length output.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies into a `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slice().to_vec()
    }
}

impl AsRef<[u8]> for Output {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl core::ops::Deref for Output {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for Output {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice().ct_eq(other.as_slice()).into()
    }
}

impl Eq for Output {}

impl ConstantTimeEq for Output {
    fn ct_eq(&self, other: &Self) -> subtle::Choice {
        self.as_slice().ct_eq(other.as_slice())
    }
}

impl core::fmt::Debug for Output {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Output(")?;
        write_hex(f, self.as_slice())?;
        f.write_str(")")
    }
}

/// Incremental hash: the running transcript hash (RFC 8446 §4.4.1).
///
/// Reading the current value clones the state (cheap: ~100-200 bytes, no heap), so the running
/// hash keeps going.
/// The backend is private: enabling `ring-hash` changes the implementation, not the type (cargo
/// features stay additive).
#[derive(Clone)]
pub struct HashState(Inner);

#[derive(Clone)]
enum Inner {
    /// SHA-256 state.
    #[cfg(not(feature = "ring-hash"))]
    Sha256(Sha256),
    /// SHA-384 state.
    #[cfg(not(feature = "ring-hash"))]
    Sha384(Sha384),
    /// Either, on ring (feature `ring-hash`).
    #[cfg(feature = "ring-hash")]
    Ring(ring::digest::Context),
}

impl HashState {
    /// Empty state for `alg`.
    pub fn new(alg: HashAlg) -> HashState {
        #[cfg(feature = "ring-hash")]
        {
            HashState(Inner::Ring(ring::digest::Context::new(match alg {
                HashAlg::Sha256 => &ring::digest::SHA256,
                HashAlg::Sha384 => &ring::digest::SHA384,
            })))
        }
        #[cfg(not(feature = "ring-hash"))]
        match alg {
            HashAlg::Sha256 => HashState(Inner::Sha256(Sha256::new())),
            HashAlg::Sha384 => HashState(Inner::Sha384(Sha384::new())),
        }
    }

    /// Which function this is.
    pub fn alg(&self) -> HashAlg {
        match &self.0 {
            #[cfg(not(feature = "ring-hash"))]
            Inner::Sha256(_) => HashAlg::Sha256,
            #[cfg(not(feature = "ring-hash"))]
            Inner::Sha384(_) => HashAlg::Sha384,
            #[cfg(feature = "ring-hash")]
            Inner::Ring(c) => {
                if c.algorithm() == &ring::digest::SHA384 {
                    HashAlg::Sha384
                } else {
                    HashAlg::Sha256
                }
            }
        }
    }

    /// Absorbs `data`.
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.0 {
            #[cfg(not(feature = "ring-hash"))]
            Inner::Sha256(h) => h.update(data),
            #[cfg(not(feature = "ring-hash"))]
            Inner::Sha384(h) => h.update(data),
            #[cfg(feature = "ring-hash")]
            Inner::Ring(c) => c.update(data),
        }
    }

    /// The hash of everything so far; the state continues (the transcript hash at one point).
    pub fn current(&self) -> Output {
        self.clone().finish()
    }

    /// The hash of everything absorbed.
    pub fn finish(self) -> Output {
        match self.0 {
            #[cfg(not(feature = "ring-hash"))]
            Inner::Sha256(h) => Output::from_generic(&h.finalize()),
            #[cfg(not(feature = "ring-hash"))]
            Inner::Sha384(h) => Output::from_generic(&h.finalize()),
            #[cfg(feature = "ring-hash")]
            Inner::Ring(c) => Output::from_generic(c.finish().as_ref()),
        }
    }
}

impl core::fmt::Debug for HashState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "HashState({})", self.alg().name())
    }
}

/// Lowercase hex without separators, for `Debug` impls and serialized derivations.
pub(crate) fn write_hex(w: &mut impl core::fmt::Write, bytes: &[u8]) -> core::fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        w.write_char(DIGITS[(b >> 4) as usize] as char)?;
        w.write_char(DIGITS[(b & 0xf) as usize] as char)?;
    }
    Ok(())
}

/// `bytes` as a lowercase hex `String`.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    // Writing to a String cannot fail.
    let _ = write_hex(&mut s, bytes);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_zeroize_clears_every_byte() {
        let mut o = Output::new(&[0xa5; MAX_HASH_LEN]).unwrap();
        zeroize::Zeroize::zeroize(&mut o);
        assert_eq!((o.bytes, o.len), ([0; MAX_HASH_LEN], 0));
    }

    #[test]
    fn empty_hashes() {
        // Transcript-Hash("") as printed in RFC 8448 §3 ("derive secret for handshake").
        assert_eq!(
            to_hex(&HashAlg::Sha256.hash(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(HashAlg::Sha384.hash(b"").len(), 48);
        for alg in [HashAlg::Sha256, HashAlg::Sha384] {
            assert_eq!(alg.empty_hash(), alg.hash(b"").as_slice(), "{alg}");
        }
        assert_eq!(HashAlg::Sha384.zeros().as_slice(), &[0u8; 48][..]);
    }

    #[test]
    fn incremental_matches_one_shot() {
        let mut st = HashAlg::Sha384.start();
        st.update(b"hello ");
        let mid = st.current();
        st.update(b"world");
        assert_eq!(mid, HashAlg::Sha384.hash(b"hello "));
        assert_eq!(st.finish(), HashAlg::Sha384.hash(b"hello world"));
    }

    #[test]
    fn hmac_rfc4231_case2() {
        let out = HashAlg::Sha256.hmac_parts(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            to_hex(&out),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// RFC 5869 A.3: HKDF-Extract with no salt, i.e. HMAC under a key of zeros (the kept key
    /// schedule), whatever length of zeros up to a block is given; a key that is not all zeros
    /// is not taken for one.
    #[test]
    fn hmac_under_a_key_of_zeros_is_rfc5869_a3() {
        let prk = "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04";
        for len in [0, 1, 32, 64] {
            for _ in 0..2 {
                let out = HashAlg::Sha256.hmac_parts(&vec![0; len], &[&[0x0b; 11], &[0x0b; 11]]);
                assert_eq!(to_hex(&out), prk, "{len} zeros");
            }
        }
        let mut almost = [0u8; 32];
        almost[31] = 1;
        assert_ne!(to_hex(&HashAlg::Sha256.hmac(&almost, &[0x0b; 22])), prk);
        // A longer key is hashed first (RFC 2104 §2): 65 zeros are not the key of zeros.
        assert_ne!(to_hex(&HashAlg::Sha256.hmac(&[0; 65], &[0x0b; 22])), prk);
        // SHA-384 under zeros against the `hmac` crate, whichever backend runs the cache.
        use hmac::Mac;
        let mut want = <hmac::Hmac<sha2::Sha384> as Mac>::new_from_slice(&[]).unwrap();
        want.update(b"x");
        let want = want.finalize().into_bytes();
        for key in [&[][..], &[0; 48][..], &[0; 64][..]] {
            assert_eq!(HashAlg::Sha384.hmac(key, b"x").as_slice(), &want[..]);
        }
    }

    #[test]
    fn output_eq_and_debug() {
        let a = Output::new(&[1, 2, 3]).unwrap();
        assert_eq!(a, Output::new(&[1, 2, 3]).unwrap());
        assert_ne!(a, Output::new(&[1, 2]).unwrap());
        assert_eq!(format!("{a:?}"), "Output(010203)");
        assert!(Output::new(&[0; 49]).is_none());
    }
}
