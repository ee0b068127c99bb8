//! A CertificateVerify signer on ring (feature `ring-sign`): ECDSA P-256 about ten times faster
//! than RustCrypto's p256 on the machine of docs/performance.md, and still replayable.
//!
//! ring takes the randomness of a signature from a `SecureRandom` it is handed, and hedges it:
//! the nonce is SHA-256(nonce key ‖ 32 random bytes ‖ message digest), the nonce key being
//! SHA-256(random ‖ private key) fixed when the key is loaded. Here the 32 bytes of every
//! signature are drawn from the connection's [`RandomSource`] and the nonce key's randomness is
//! fixed (zeros), so the nonce is a secret function of the private key, the message and the
//! connection's draws: a seeded connection replays byte for byte, and two messages never share a
//! nonce even when the draws repeat (a reused seed), as with RFC 6979. The bytes reach ring
//! through `ring::test::rand::FixedSliceRandom`, the one `SecureRandom` ring lets a caller fill
//! (its `SecureRandom` is sealed); that module is ring 0.17's deprecated test API, so a ring
//! upgrade must keep it or this file must move to another backend.
//!
//! [`RandomSource`]: crate::crypto::random::RandomSource

// ring marks its caller-filled SecureRandom deprecated (see the module docs).
#![allow(deprecated)]

use ring::test::rand::FixedSliceRandom;

use crate::crypto::random::RandomSource;
use crate::crypto::sign::SigError;
use crate::messages::enums::SignatureScheme;

/// The random bytes ring asks for per P-256 signature: a SHA-256 block minus its digest.
const NONCE_RANDOM: usize = 32;

/// An ECDSA P-256 key signing `ecdsa_secp256r1_sha256` with ring.
pub struct RingEcdsaSigner {
    key: ring::signature::EcdsaKeyPair,
}

impl RingEcdsaSigner {
    /// From a PKCS#8 P-256 private key (e.g. [`crate::crypto::sign::SigningKey::to_pkcs8_der`]).
    pub fn from_pkcs8(der: &[u8]) -> Result<RingEcdsaSigner, SigError> {
        // The nonce key's randomness: fixed, so the same key signs the same way in every process.
        let fixed = FixedSliceRandom { bytes: &[0; 32] };
        let key = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            der,
            &fixed,
        )
        .map_err(|_| SigError::BadPrivateKey("not a PKCS#8 P-256 private key"))?;
        Ok(RingEcdsaSigner { key })
    }
}

impl core::fmt::Debug for RingEcdsaSigner {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RingEcdsaSigner(P-256, ..)")
    }
}

// The `config::Signer` impl is in config.rs, as `SigningKey`'s is: crypto sits below the
// configuration and reports its own error type.
impl RingEcdsaSigner {
    /// The one scheme this key signs with.
    pub fn schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ecdsa_secp256r1_sha256]
    }

    /// Draws the signature's 32 random bytes from `rng` (see the module docs).
    pub fn sign(
        &self,
        scheme: SignatureScheme,
        message: &[u8],
        rng: &mut dyn RandomSource,
    ) -> Result<Vec<u8>, SigError> {
        if scheme != SignatureScheme::ecdsa_secp256r1_sha256 {
            return Err(SigError::CannotSign(scheme));
        }
        let mut drawn = zeroize::Zeroizing::new([0u8; NONCE_RANDOM]);
        rng.fill(drawn.as_mut());
        self.key
            .sign(&FixedSliceRandom { bytes: &drawn[..] }, message)
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| SigError::SigningFailed("ring ECDSA signing"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::random::SeededRandom;
    use crate::crypto::sign::{verify_signature, SigningKey};

    #[test]
    fn signatures_replay_from_the_seed_and_differ_per_message() {
        let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(1));
        let der = key.to_pkcs8_der().unwrap();
        let scheme = SignatureScheme::ecdsa_secp256r1_sha256;
        let sign = |seed: u64, msg: &[u8]| {
            // A fresh signer each time: nothing but the key and the draws may decide the bytes.
            let signer = RingEcdsaSigner::from_pkcs8(&der).unwrap();
            signer
                .sign(scheme, msg, &mut SeededRandom::from_seed(seed))
                .unwrap()
        };
        assert_eq!(sign(7, b"m1"), sign(7, b"m1"));
        assert_ne!(sign(7, b"m1"), sign(8, b"m1"));
        // The same draws for another message: another nonce (the r values differ).
        let (a, b) = (sign(7, b"m1"), sign(7, b"m2"));
        let r = |der: &[u8]| der[4..4 + usize::from(der[3])].to_vec();
        assert_ne!(r(&a), r(&b));
        let spki = key.public_key_spki_der().unwrap();
        verify_signature(scheme, &spki, b"m2", &b).unwrap();
    }

    #[test]
    fn signs_what_our_verifier_accepts() {
        let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(1));
        let signer = RingEcdsaSigner::from_pkcs8(&key.to_pkcs8_der().unwrap()).unwrap();
        let mut rng = SeededRandom::from_seed(2);
        let scheme = SignatureScheme::ecdsa_secp256r1_sha256;
        let sig = signer.sign(scheme, b"message", &mut rng).unwrap();
        let spki = key.public_key_spki_der().unwrap();
        verify_signature(scheme, &spki, b"message", &sig).unwrap();
        assert!(signer
            .sign(SignatureScheme::ed25519, b"message", &mut rng)
            .is_err());
    }
}
