//! The AEADs of TLS 1.3's cipher suites (RFC 8446 §5.2, §B.4) over RustCrypto, or over ring
//! with the `ring-aead` feature (several times faster on bulk data, docs/performance.md; the
//! bytes are the same, but ring does not erase its key schedule on drop).
//!
//! Records are sealed and opened in place: the record layer lays out header, plaintext, content
//! type and padding in one buffer and the AEAD works on the slice after the header, so a record
//! costs one allocation and no extra copies (see `record::protect`).

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;

use super::hash::HashAlg;
use crate::messages::enums::CipherSuite;

/// Nonce length of every TLS 1.3 AEAD (RFC 8446 §5.3: iv_length is max(8, N_MIN) = 12).
pub const NONCE_LEN: usize = 12;
/// Tag length of every supported AEAD (RFC 5116 §5.1, RFC 8439 §2.8).
pub const TAG_LEN: usize = 16;

/// AEAD algorithm of a cipher suite (RFC 8446 §B.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum AeadAlg {
    /// AEAD_AES_128_GCM (RFC 5116).
    Aes128Gcm,
    /// AEAD_AES_256_GCM (RFC 5116).
    Aes256Gcm,
    /// AEAD_CHACHA20_POLY1305 (RFC 8439).
    ChaCha20Poly1305,
}

impl AeadAlg {
    /// Key length in bytes (the `key_length` of RFC 8446 §7.3).
    pub const fn key_len(self) -> usize {
        match self {
            AeadAlg::Aes128Gcm => 16,
            AeadAlg::Aes256Gcm | AeadAlg::ChaCha20Poly1305 => 32,
        }
    }

    /// IV length in bytes (RFC 8446 §5.3): always 12.
    pub const fn iv_len(self) -> usize {
        NONCE_LEN
    }

    /// Tag length in bytes: always 16.
    pub const fn tag_len(self) -> usize {
        TAG_LEN
    }

    /// RFC name, e.g. `"AEAD_AES_128_GCM"`.
    pub const fn name(self) -> &'static str {
        match self {
            AeadAlg::Aes128Gcm => "AEAD_AES_128_GCM",
            AeadAlg::Aes256Gcm => "AEAD_AES_256_GCM",
            AeadAlg::ChaCha20Poly1305 => "AEAD_CHACHA20_POLY1305",
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

/// The three TLS 1.3 suites this crate implements; `None` for anything else (including the CCM
/// suites, which RFC 8446 §9.1 does not require).
pub fn suite_params(s: CipherSuite) -> Option<SuiteParams> {
    let (aead, hash) = match s {
        CipherSuite::TLS_AES_128_GCM_SHA256 => (AeadAlg::Aes128Gcm, HashAlg::Sha256),
        CipherSuite::TLS_AES_256_GCM_SHA384 => (AeadAlg::Aes256Gcm, HashAlg::Sha384),
        CipherSuite::TLS_CHACHA20_POLY1305_SHA256 => (AeadAlg::ChaCha20Poly1305, HashAlg::Sha256),
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

/// A keyed AEAD. The cipher's key material is erased on drop: chacha20poly1305 does so itself,
/// and the `zeroize` features of `aes` and `polyval` cover AES round keys and the GHASH key.
pub struct AeadKey {
    inner: Inner,
}

/// Boxed: the AES key schedules are ~1 KB, and a protector moves between connection states.
enum Inner {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
    #[cfg(feature = "ring-aead")]
    Ring(Box<ring::aead::LessSafeKey>, AeadAlg),
}

#[cfg(feature = "ring-aead")]
fn ring_key(alg: AeadAlg, key: &[u8]) -> Option<Inner> {
    let a = match alg {
        AeadAlg::Aes128Gcm => &ring::aead::AES_128_GCM,
        AeadAlg::Aes256Gcm => &ring::aead::AES_256_GCM,
        AeadAlg::ChaCha20Poly1305 => &ring::aead::CHACHA20_POLY1305,
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
        };
        Ok(AeadKey { inner })
    }

    /// The algorithm.
    pub fn alg(&self) -> AeadAlg {
        match self.inner {
            Inner::Aes128(_) => AeadAlg::Aes128Gcm,
            Inner::Aes256(_) => AeadAlg::Aes256Gcm,
            Inner::ChaCha(_) => AeadAlg::ChaCha20Poly1305,
            #[cfg(feature = "ring-aead")]
            Inner::Ring(_, alg) => alg,
        }
    }

    /// Encrypts `data` in place and returns the tag.
    pub fn seal_detached(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
    ) -> Result<[u8; TAG_LEN], AeadError> {
        let n = nonce.into();
        let tag = match &self.inner {
            Inner::Aes128(c) => c.encrypt_in_place_detached(n, aad, data),
            Inner::Aes256(c) => c.encrypt_in_place_detached(n, aad, data),
            Inner::ChaCha(c) => c.encrypt_in_place_detached(n, aad, data),
            #[cfg(feature = "ring-aead")]
            Inner::Ring(k, _) => {
                let nonce = ring::aead::Nonce::assume_unique_for_key(*nonce);
                let tag = k
                    .seal_in_place_separate_tag(nonce, ring::aead::Aad::from(aad), data)
                    .map_err(|_| AeadError::TooLong)?;
                let mut t = [0u8; TAG_LEN];
                t.copy_from_slice(tag.as_ref());
                return Ok(t);
            }
        }
        .map_err(|_| AeadError::TooLong)?;
        Ok(tag.into())
    }

    /// Checks `tag` and decrypts `data` in place. On failure `data` is left unspecified (the
    /// crates restore the ciphertext, but callers must not rely on it).
    pub fn open_detached(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), AeadError> {
        let n = nonce.into();
        let t = tag.into();
        match &self.inner {
            Inner::Aes128(c) => c.decrypt_in_place_detached(n, aad, data, t),
            Inner::Aes256(c) => c.decrypt_in_place_detached(n, aad, data, t),
            Inner::ChaCha(c) => c.decrypt_in_place_detached(n, aad, data, t),
            #[cfg(feature = "ring-aead")]
            Inner::Ring(k, _) => {
                let nonce = ring::aead::Nonce::assume_unique_for_key(*nonce);
                return k
                    .open_in_place_separate_tag(
                        nonce,
                        ring::aead::Aad::from(aad),
                        ring::aead::Tag::from(*tag),
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
        let Some(body_len) = buf.len().checked_sub(TAG_LEN) else {
            return Err(AeadError::Authentication);
        };
        let (body, tag) = buf.split_at_mut(body_len);
        let mut t = [0u8; TAG_LEN];
        t.copy_from_slice(tag);
        self.open_detached(nonce, aad, body, &t)?;
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

    #[test]
    fn suites() {
        let p = suite_params(CipherSuite::TLS_AES_256_GCM_SHA384).unwrap();
        assert_eq!((p.aead, p.hash), (AeadAlg::Aes256Gcm, HashAlg::Sha384));
        assert!(suite_params(CipherSuite::TLS_AES_128_CCM_SHA256).is_none());
        assert!(suite_params(CipherSuite::Unknown(0x1399)).is_none());
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
        for alg in [
            AeadAlg::Aes128Gcm,
            AeadAlg::Aes256Gcm,
            AeadAlg::ChaCha20Poly1305,
        ] {
            let k = AeadKey::new(alg, &vec![7; alg.key_len()]).unwrap();
            let mut buf = b"attack at dawn".to_vec();
            k.seal_in_place(&[1; 12], b"hdr", &mut buf).unwrap();
            let mut ok = buf.clone();
            k.open_in_place(&[1; 12], b"hdr", &mut ok).unwrap();
            assert_eq!(ok, b"attack at dawn");
            buf[3] ^= 1;
            assert_eq!(
                k.open_in_place(&[1; 12], b"hdr", &mut buf),
                Err(AeadError::Authentication)
            );
        }
    }
}
