//! An optional CertificateVerify signer on ring (feature `ring-sign`): ECDSA P-256 about ten
//! times faster than RustCrypto's p256 on the machine of docs/performance.md.
//!
//! It is the one piece that breaks replay: ring draws the ECDSA nonce from the operating system,
//! not from the connection's [`RandomSource`], so the server's CertificateVerify differs from run
//! to run (everything else still replays from the seed). Plug it in as a [`CertifiedKey`]'s key
//! where speed matters more than byte-exact replay; the RFC 8448 tests never use it.
//!
//! [`CertifiedKey`]: crate::config::CertifiedKey

use crate::config::Signer;
use crate::crypto::random::RandomSource;
use crate::crypto::sign::SigError;
use crate::error::Error;
use crate::messages::enums::SignatureScheme;

/// An ECDSA P-256 key signing `ecdsa_secp256r1_sha256` with ring.
pub struct RingEcdsaSigner {
    key: ring::signature::EcdsaKeyPair,
    rng: ring::rand::SystemRandom,
}

impl RingEcdsaSigner {
    /// From a PKCS#8 P-256 private key (e.g. [`crate::crypto::sign::SigningKey::to_pkcs8_der`]).
    pub fn from_pkcs8(der: &[u8]) -> Result<RingEcdsaSigner, SigError> {
        let rng = ring::rand::SystemRandom::new();
        let key = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            der,
            &rng,
        )
        .map_err(|_| SigError::BadPrivateKey("not a PKCS#8 P-256 private key"))?;
        Ok(RingEcdsaSigner { key, rng })
    }
}

impl core::fmt::Debug for RingEcdsaSigner {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RingEcdsaSigner(P-256, ..)")
    }
}

impl Signer for RingEcdsaSigner {
    fn schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ecdsa_secp256r1_sha256]
    }

    /// Ignores `rng` (see the module docs).
    fn sign(
        &self,
        scheme: SignatureScheme,
        message: &[u8],
        _rng: &mut dyn RandomSource,
    ) -> Result<Vec<u8>, Error> {
        if scheme != SignatureScheme::ecdsa_secp256r1_sha256 {
            return Err(Error::Signature(SigError::CannotSign(scheme)));
        }
        self.key
            .sign(&self.rng, message)
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| Error::Signature(SigError::SigningFailed("ring ECDSA signing")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::random::SeededRandom;
    use crate::crypto::sign::{verify_signature, SigningKey};

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
