//! The AEADs of TLS 1.3's cipher suites (RFC 8446 §5.2, §B.4) over RustCrypto, or over ring
//! with the `ring-aead` feature (several times faster on bulk data, docs/performance.md; the
//! bytes are the same, but ring does not erase its key schedule on drop). ring has no CCM, so
//! AES-CCM and AES-CCM-8 are RustCrypto's `ccm` in every build.
//!
//! Records are sealed and opened in place: the record layer lays out header, plaintext, content
//! type and padding in one buffer and the AEAD works on the slice after the header, so a record
//! costs one allocation and no extra copies (see `record::protect`).

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use ccm::consts::{U12, U16, U8};
use ccm::Ccm;
use chacha20poly1305::ChaCha20Poly1305;

use super::hash::HashAlg;
use crate::messages::enums::CipherSuite;

/// Nonce length of every TLS 1.3 AEAD (RFC 8446 §5.3: iv_length is max(8, N_MIN) = 12).
pub const NONCE_LEN: usize = 12;
/// The longest tag of any supported AEAD: 16 (RFC 5116 §5.1, RFC 8439 §2.8, RFC 6655 §3);
/// AEAD_AES_128_CCM_8's is 8 (RFC 6655 §4). Room to reserve before a record's tag is known.
pub const MAX_TAG_LEN: usize = 16;

/// AEAD_AES_128_CCM (RFC 5116 §5.3): 16-byte tag, 12-byte nonce.
type Aes128Ccm = Ccm<aes::Aes128, U16, U12>;
/// AEAD_AES_128_CCM_8 (RFC 6655 §3.4 with the 12-byte nonce of RFC 8446 §5.3): 8-byte tag.
type Aes128Ccm8 = Ccm<aes::Aes128, U8, U12>;

/// AEAD algorithm of a cipher suite (RFC 8446 §B.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum AeadAlg {
    /// AEAD_AES_128_GCM (RFC 5116).
    Aes128Gcm,
    /// AEAD_AES_256_GCM (RFC 5116).
    Aes256Gcm,
    /// AEAD_CHACHA20_POLY1305 (RFC 8439).
    ChaCha20Poly1305,
    /// AEAD_AES_128_CCM (RFC 5116 §5.3).
    Aes128Ccm,
    /// AEAD_AES_128_CCM_8 (RFC 6655): an 8-byte tag, so forgeries succeed with probability
    /// 2^-64 per try (RFC 8446 §B.4 lists it, §9.1 does not require it).
    Aes128Ccm8,
}

impl AeadAlg {
    /// Key length in bytes (the `key_length` of RFC 8446 §7.3).
    pub const fn key_len(self) -> usize {
        match self {
            AeadAlg::Aes128Gcm | AeadAlg::Aes128Ccm | AeadAlg::Aes128Ccm8 => 16,
            AeadAlg::Aes256Gcm | AeadAlg::ChaCha20Poly1305 => 32,
        }
    }

    /// IV length in bytes (RFC 8446 §5.3): always 12.
    pub const fn iv_len(self) -> usize {
        NONCE_LEN
    }

    /// Tag length in bytes: 16, or 8 for AES-128-CCM-8. Every record carries one (§5.2).
    pub const fn tag_len(self) -> usize {
        match self {
            AeadAlg::Aes128Ccm8 => 8,
            _ => MAX_TAG_LEN,
        }
    }

    /// RFC name, e.g. `"AEAD_AES_128_GCM"`.
    pub const fn name(self) -> &'static str {
        match self {
            AeadAlg::Aes128Gcm => "AEAD_AES_128_GCM",
            AeadAlg::Aes256Gcm => "AEAD_AES_256_GCM",
            AeadAlg::ChaCha20Poly1305 => "AEAD_CHACHA20_POLY1305",
            AeadAlg::Aes128Ccm => "AEAD_AES_128_CCM",
            AeadAlg::Aes128Ccm8 => "AEAD_AES_128_CCM_8",
        }
    }
}

/// What a cipher suite means for the symmetric side (RFC 8446 §B.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SuiteParams {
    /// The suite itself.
    pub suite: CipherSuite,
    /// Record protection algorithm.
    pub aead: AeadAlg,
    /// Transcript and HKDF hash.
    pub hash: HashAlg,
}

/// The five TLS 1.3 suites of RFC 8446 §B.4; `None` for anything else. The CCM suites are
/// implemented but offered only when configured (§9.1 does not require them).
pub fn suite_params(s: CipherSuite) -> Option<SuiteParams> {
    let (aead, hash) = match s {
        CipherSuite::TLS_AES_128_GCM_SHA256 => (AeadAlg::Aes128Gcm, HashAlg::Sha256),
        CipherSuite::TLS_AES_256_GCM_SHA384 => (AeadAlg::Aes256Gcm, HashAlg::Sha384),
        CipherSuite::TLS_CHACHA20_POLY1305_SHA256 => (AeadAlg::ChaCha20Poly1305, HashAlg::Sha256),
        CipherSuite::TLS_AES_128_CCM_SHA256 => (AeadAlg::Aes128Ccm, HashAlg::Sha256),
        CipherSuite::TLS_AES_128_CCM_8_SHA256 => (AeadAlg::Aes128Ccm8, HashAlg::Sha256),
        _ => return None,
    };
    Some(SuiteParams {
        suite: s,
        aead,
        hash,
    })
}

/// Why an AEAD operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AeadError {
    /// The key does not have `key_len()` bytes.
    KeyLength {
        /// Required length.
        expected: usize,
        /// Given length.
        got: usize,
    },
    /// Authentication failed, or the input was shorter than a tag (RFC 5116 §2.2: "FAIL").
    Authentication,
    /// The plaintext is beyond what the algorithm can encrypt under one nonce.
    TooLong,
}

impl core::fmt::Display for AeadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AeadError::KeyLength { expected, got } => {
                write!(f, "AEAD key is {got} bytes, expected {expected}")
            }
            AeadError::Authentication => f.write_str("AEAD authentication failed"),
            AeadError::TooLong => f.write_str("AEAD input too long"),
        }
    }
}

impl std::error::Error for AeadError {}

/// A tag as sealing made it: [`AeadAlg::tag_len`] bytes (use it as a `&[u8]`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    bytes: [u8; MAX_TAG_LEN],
    len: usize,
}

impl Tag {
    fn new(t: &[u8]) -> Tag {
        let mut bytes = [0u8; MAX_TAG_LEN];
        bytes[..t.len()].copy_from_slice(t);
        Tag {
            bytes,
            len: t.len(),
        }
    }
}

impl core::ops::Deref for Tag {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl AsRef<[u8]> for Tag {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl core::fmt::Debug for Tag {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Tag({} bytes)", self.len)
    }
}

/// A keyed AEAD. The cipher's key material is erased on drop: chacha20poly1305 does so itself,
/// and the `zeroize` features of `aes` and `polyval` cover AES round keys (GCM's and CCM's)
/// and the GHASH key.
pub struct AeadKey {
    inner: Inner,
}

/// Boxed: the AES key schedules are ~1 KB, and a protector moves between connection states.
enum Inner {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
    Ccm(Box<Aes128Ccm>),
    Ccm8(Box<Aes128Ccm8>),
    #[cfg(feature = "ring-aead")]
    Ring(Box<ring::aead::LessSafeKey>, AeadAlg),
}

#[cfg(feature = "ring-aead")]
fn ring_key(alg: AeadAlg, key: &[u8]) -> Option<Inner> {
    let a = match alg {
        AeadAlg::Aes128Gcm => &ring::aead::AES_128_GCM,
        AeadAlg::Aes256Gcm => &ring::aead::AES_256_GCM,
        AeadAlg::ChaCha20Poly1305 => &ring::aead::CHACHA20_POLY1305,
        AeadAlg::Aes128Ccm | AeadAlg::Aes128Ccm8 => return None,
    };
    let k = ring::aead::UnboundKey::new(a, key).ok()?;
    Some(Inner::Ring(Box::new(ring::aead::LessSafeKey::new(k)), alg))
}

impl AeadKey {
    /// Keys `alg` with `key`, which must be exactly `alg.key_len()` bytes.
    pub fn new(alg: AeadAlg, key: &[u8]) -> Result<AeadKey, AeadError> {
        let bad = AeadError::KeyLength {
            expected: alg.key_len(),
            got: key.len(),
        };
        #[cfg(feature = "ring-aead")]
        if key.len() == alg.key_len() {
            if let Some(inner) = ring_key(alg, key) {
                return Ok(AeadKey { inner });
            }
        }
        let inner = match alg {
            AeadAlg::Aes128Gcm => {
                Inner::Aes128(Box::new(Aes128Gcm::new_from_slice(key).map_err(|_| bad)?))
            }
            AeadAlg::Aes256Gcm => {
                Inner::Aes256(Box::new(Aes256Gcm::new_from_slice(key).map_err(|_| bad)?))
            }
            AeadAlg::ChaCha20Poly1305 => Inner::ChaCha(Box::new(
                ChaCha20Poly1305::new_from_slice(key).map_err(|_| bad)?,
            )),
            AeadAlg::Aes128Ccm => {
                Inner::Ccm(Box::new(Aes128Ccm::new_from_slice(key).map_err(|_| bad)?))
            }
            AeadAlg::Aes128Ccm8 => {
                Inner::Ccm8(Box::new(Aes128Ccm8::new_from_slice(key).map_err(|_| bad)?))
            }
        };
        Ok(AeadKey { inner })
    }

    /// The algorithm.
    pub fn alg(&self) -> AeadAlg {
        match self.inner {
            Inner::Aes128(_) => AeadAlg::Aes128Gcm,
            Inner::Aes256(_) => AeadAlg::Aes256Gcm,
            Inner::ChaCha(_) => AeadAlg::ChaCha20Poly1305,
            Inner::Ccm(_) => AeadAlg::Aes128Ccm,
            Inner::Ccm8(_) => AeadAlg::Aes128Ccm8,
            #[cfg(feature = "ring-aead")]
            Inner::Ring(_, alg) => alg,
        }
    }

    /// Tag length of this key's algorithm.
    pub fn tag_len(&self) -> usize {
        self.alg().tag_len()
    }

    /// Encrypts `data` in place and returns the tag ([`tag_len`](Self::tag_len) bytes).
    pub fn seal_detached(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
    ) -> Result<Tag, AeadError> {
        let n = nonce.into();
        let long = |_| AeadError::TooLong;
        let tag = match &self.inner {
            Inner::Aes128(c) => Tag::new(&c.encrypt_in_place_detached(n, aad, data).map_err(long)?),
            Inner::Aes256(c) => Tag::new(&c.encrypt_in_place_detached(n, aad, data).map_err(long)?),
            Inner::ChaCha(c) => Tag::new(&c.encrypt_in_place_detached(n, aad, data).map_err(long)?),
            Inner::Ccm(c) => Tag::new(&c.encrypt_in_place_detached(n, aad, data).map_err(long)?),
            Inner::Ccm8(c) => Tag::new(&c.encrypt_in_place_detached(n, aad, data).map_err(long)?),
            #[cfg(feature = "ring-aead")]
            Inner::Ring(k, _) => {
                let nonce = ring::aead::Nonce::assume_unique_for_key(*nonce);
                let tag = k
                    .seal_in_place_separate_tag(nonce, ring::aead::Aad::from(aad), data)
                    .map_err(|_| AeadError::TooLong)?;
                Tag::new(tag.as_ref())
            }
        };
        Ok(tag)
    }

    /// Checks `tag` and decrypts `data` in place. A tag of any length but
    /// [`tag_len`](Self::tag_len) fails authentication. On failure `data` is left unspecified
    /// (the crates restore the ciphertext, but callers must not rely on it).
    pub fn open_detached(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8],
    ) -> Result<(), AeadError> {
        if tag.len() != self.tag_len() {
            return Err(AeadError::Authentication);
        }
        let n = nonce.into();
        // The length is checked above, so `from_slice` cannot panic.
        use aes_gcm::aead::generic_array::GenericArray as T;
        match &self.inner {
            Inner::Aes128(c) => c.decrypt_in_place_detached(n, aad, data, T::from_slice(tag)),
            Inner::Aes256(c) => c.decrypt_in_place_detached(n, aad, data, T::from_slice(tag)),
            Inner::ChaCha(c) => c.decrypt_in_place_detached(n, aad, data, T::from_slice(tag)),
            Inner::Ccm(c) => c.decrypt_in_place_detached(n, aad, data, T::from_slice(tag)),
            Inner::Ccm8(c) => c.decrypt_in_place_detached(n, aad, data, T::from_slice(tag)),
            #[cfg(feature = "ring-aead")]
            Inner::Ring(k, _) => {
                let nonce = ring::aead::Nonce::assume_unique_for_key(*nonce);
                let tag: [u8; MAX_TAG_LEN] =
                    tag.try_into().map_err(|_| AeadError::Authentication)?;
                return k
                    .open_in_place_separate_tag(
                        nonce,
                        ring::aead::Aad::from(aad),
                        ring::aead::Tag::from(tag),
                        data,
                        0..,
                    )
                    .map(|_| ())
                    .map_err(|_| AeadError::Authentication);
            }
        }
        .map_err(|_| AeadError::Authentication)
    }

    /// Encrypts `buf` in place and appends the tag.
    pub fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<(), AeadError> {
        let tag = self.seal_detached(nonce, aad, buf)?;
        buf.extend_from_slice(&tag);
        Ok(())
    }

    /// Verifies and strips the trailing tag of `buf`, decrypting the rest in place.
    pub fn open_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<(), AeadError> {
        let Some(body_len) = buf.len().checked_sub(self.tag_len()) else {
            return Err(AeadError::Authentication);
        };
        let (body, tag) = buf.split_at_mut(body_len);
        self.open_detached(nonce, aad, body, tag)?;
        buf.truncate(body_len);
        Ok(())
    }
}

impl core::fmt::Debug for AeadKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AeadKey({}, ..)", self.alg().name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    const ALL: [AeadAlg; 5] = [
        AeadAlg::Aes128Gcm,
        AeadAlg::Aes256Gcm,
        AeadAlg::ChaCha20Poly1305,
        AeadAlg::Aes128Ccm,
        AeadAlg::Aes128Ccm8,
    ];

    #[test]
    fn suites() {
        let p = suite_params(CipherSuite::TLS_AES_256_GCM_SHA384).unwrap();
        assert_eq!((p.aead, p.hash), (AeadAlg::Aes256Gcm, HashAlg::Sha384));
        // RFC 8446 §B.4: both CCM suites are AES-128 with SHA-256; only the tag differs.
        let p = suite_params(CipherSuite::TLS_AES_128_CCM_SHA256).unwrap();
        assert_eq!((p.aead, p.hash), (AeadAlg::Aes128Ccm, HashAlg::Sha256));
        let p = suite_params(CipherSuite::TLS_AES_128_CCM_8_SHA256).unwrap();
        assert_eq!((p.aead, p.hash), (AeadAlg::Aes128Ccm8, HashAlg::Sha256));
        assert_eq!(
            (p.aead.key_len(), p.aead.iv_len(), p.aead.tag_len()),
            (16, 12, 8)
        );
        assert_eq!(AeadAlg::Aes128Ccm.tag_len(), 16);
        assert!(suite_params(CipherSuite::Unknown(0x1399)).is_none());
    }

    /// Seals `pt` and checks ciphertext || tag against `ct`, then opens it back, detached and
    /// in place.
    fn known_answer(alg: AeadAlg, key: &str, nonce: &str, aad: &str, pt: &str, ct: &str) {
        let k = AeadKey::new(alg, &h(key)).unwrap();
        let nonce: [u8; 12] = h(nonce).try_into().unwrap();
        let (aad, pt, ct) = (h(aad), h(pt), h(ct));
        let mut buf = pt.clone();
        let tag = k.seal_detached(&nonce, &aad, &mut buf).unwrap();
        assert_eq!(tag.len(), alg.tag_len());
        buf.extend_from_slice(&tag);
        assert_eq!(hex::encode(&buf), hex::encode(&ct), "{}", alg.name());
        k.open_in_place(&nonce, &aad, &mut buf).unwrap();
        assert_eq!(buf, pt);
    }

    #[test]
    fn ccm_known_answers() {
        // AEAD_AES_128_CCM_8 parameters (12-byte nonce, 8-byte tag): NIST SP 800-38C
        // Appendix C, Example 3.
        known_answer(
            AeadAlg::Aes128Ccm8,
            "404142434445464748494a4b4c4d4e4f",
            "101112131415161718191a1b",
            "000102030405060708090a0b0c0d0e0f10111213",
            "202122232425262728292a2b2c2d2e2f3031323334353637",
            "e3b201a9f5b71a7a9b1ceaeccd97e70b6176aad9a4428aa5484392fbc1b09951",
        );
        // AEAD_AES_128_CCM (12-byte nonce, 16-byte tag): NIST CAVP DVPT128, Nlen 12, Tlen 16,
        // the first vector (as the ccm crate's tests/data/cavp_ccm_aes128_16_12.blb holds it).
        known_answer(
            AeadAlg::Aes128Ccm,
            "005e8f4d8e0cbf4e1ceeb5d87a275848",
            "0ec3ac452b547b9062aac8fa",
            "2f1821aa57e5278ffd33c17d46615b77363149dbc98470413f6543a6b749f2ca",
            "b6f345204526439daf84998f380dcfb4b4167c959c04ff65",
            "9575e16f35da3c88a19c26a7b762044f4d7bbbafeff05d754829e2a7752fa3a14890972884b511d8",
        );
    }

    #[test]
    fn ccm8_tag_of_the_wrong_length_fails() {
        let k = AeadKey::new(AeadAlg::Aes128Ccm8, &[7; 16]).unwrap();
        let mut buf = b"attack at dawn".to_vec();
        let tag = k.seal_detached(&[1; 12], b"hdr", &mut buf).unwrap();
        assert_eq!(tag.len(), 8);
        // A 16-byte tag holding the 8 right bytes is still not this AEAD's tag.
        let mut long = [0u8; 16];
        long[..8].copy_from_slice(&tag);
        let mut b = buf.clone();
        assert_eq!(
            k.open_detached(&[1; 12], b"hdr", &mut b, &long),
            Err(AeadError::Authentication)
        );
        k.open_detached(&[1; 12], b"hdr", &mut buf, &tag).unwrap();
        assert_eq!(buf, b"attack at dawn");
        // Shorter than a tag: 7 bytes.
        assert_eq!(
            k.open_in_place(&[1; 12], b"", &mut vec![0; 7]),
            Err(AeadError::Authentication)
        );
    }

    #[test]
    fn chacha_rfc8439_aead_vector() {
        // RFC 8439 §2.8.2.
        let key = h("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
        let nonce: [u8; 12] = h("070000004041424344454647").try_into().unwrap();
        let aad = h("50515253c0c1c2c3c4c5c6c7");
        let pt = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
        let k = AeadKey::new(AeadAlg::ChaCha20Poly1305, &key).unwrap();
        let mut buf = pt.to_vec();
        k.seal_in_place(&nonce, &aad, &mut buf).unwrap();
        assert_eq!(
            hex::encode(&buf[buf.len() - 16..]),
            "1ae10b594f09e26a7e902ecbd0600691"
        );
        k.open_in_place(&nonce, &aad, &mut buf).unwrap();
        assert_eq!(&buf[..], &pt[..]);
    }

    #[test]
    fn rejects_bad_key_and_short_input() {
        assert_eq!(
            AeadKey::new(AeadAlg::Aes256Gcm, &[0; 16]).unwrap_err(),
            AeadError::KeyLength {
                expected: 32,
                got: 16
            }
        );
        let k = AeadKey::new(AeadAlg::Aes128Gcm, &[0; 16]).unwrap();
        let mut short = vec![0u8; 15];
        assert_eq!(
            k.open_in_place(&[0; 12], b"", &mut short),
            Err(AeadError::Authentication)
        );
    }

    #[test]
    fn tamper_detected_all_algs() {
        for alg in ALL {
            let k = AeadKey::new(alg, &vec![7; alg.key_len()]).unwrap();
            let mut buf = b"attack at dawn".to_vec();
            k.seal_in_place(&[1; 12], b"hdr", &mut buf).unwrap();
            assert_eq!(buf.len(), 14 + alg.tag_len());
            let mut ok = buf.clone();
            k.open_in_place(&[1; 12], b"hdr", &mut ok).unwrap();
            assert_eq!(ok, b"attack at dawn");
            // A flipped bit in the ciphertext, in the tag's last byte, or in the AAD.
            for at in [3, buf.len() - 1] {
                let mut bad = buf.clone();
                bad[at] ^= 1;
                assert_eq!(
                    k.open_in_place(&[1; 12], b"hdr", &mut bad),
                    Err(AeadError::Authentication),
                    "{} byte {at}",
                    alg.name()
                );
            }
            assert_eq!(
                k.open_in_place(&[1; 12], b"hdR", &mut buf),
                Err(AeadError::Authentication)
            );
        }
    }
}
