//! Self-signed certificates made with rcgen around our own signing keys, for the in-memory demo
//! (`crate::demo`), the simulator, the CLI and the tests. The sans-IO core never calls this:
//! validation (`verify.rs`) stands alone.

use core::fmt;
use std::time::Duration;

use p256::ecdsa::signature::Signer;

use crate::crypto::sign::SigningKey;

/// Failure to build a certificate locally.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertGenError(pub String);

impl fmt::Display for CertGenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "certificate generation failed: {}", self.0)
    }
}

impl std::error::Error for CertGenError {}

/// A self-signed end-entity certificate for `names` (DNS names or IP addresses; the first is
/// also the CN) with validity `[not_before, not_after]` (unix seconds), signed by our P-256
/// `key` through rcgen's remote-key hook. ECDSA here is RFC 6979 and rcgen derives the serial
/// from the public key, so the same key and inputs give byte-identical DER (seeded demos).
/// Returns the certificate DER.
pub fn self_signed_p256(
    names: &[&str],
    key: &SigningKey,
    not_before_unix: u64,
    not_after_unix: u64,
) -> Result<Vec<u8>, CertGenError> {
    if !matches!(key, SigningKey::EcdsaP256(_)) {
        return Err(CertGenError(format!("{key:?} is not a P-256 key")));
    }
    self_signed_ecdsa(names, key, not_before_unix, not_after_unix)
}

/// Like [`self_signed_p256`] for a P-256 or P-384 `key` (ecdsa-with-SHA256 or -SHA384).
pub fn self_signed_ecdsa(
    names: &[&str],
    key: &SigningKey,
    not_before_unix: u64,
    not_after_unix: u64,
) -> Result<Vec<u8>, CertGenError> {
    if !matches!(key, SigningKey::EcdsaP256(_) | SigningKey::EcdsaP384(_)) {
        return Err(CertGenError(format!("{key:?} is not an ECDSA key")));
    }
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .map_err(|e| CertGenError(e.to_string()))?;
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(
        rcgen::DnType::CommonName,
        names.first().copied().unwrap_or("tls13lab"),
    );
    params.distinguished_name = dn;
    set_validity(&mut params, not_before_unix, not_after_unix)?;
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let kp = rcgen_key(key)?;
    let cert = params
        .self_signed(&kp)
        .map_err(|e| CertGenError(e.to_string()))?;
    Ok(cert.der().to_vec())
}

/// rcgen wants `time::OffsetDateTime`; reach it from the epoch so we need no `time` dependency.
fn set_validity(
    params: &mut rcgen::CertificateParams,
    not_before: u64,
    not_after: u64,
) -> Result<(), CertGenError> {
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    let range = |secs: u64| CertGenError(format!("time {secs} out of range"));
    params.not_before = epoch
        .checked_add(
            Duration::from_secs(not_before)
                .try_into()
                .map_err(|_| range(not_before))?,
        )
        .ok_or_else(|| range(not_before))?;
    params.not_after = epoch
        .checked_add(
            Duration::from_secs(not_after)
                .try_into()
                .map_err(|_| range(not_after))?,
        )
        .ok_or_else(|| range(not_after))?;
    Ok(())
}

/// Wraps our key as an rcgen key pair; rcgen only serializes, the signature is ours.
fn rcgen_key(key: &SigningKey) -> Result<rcgen::KeyPair, CertGenError> {
    let remote = match key {
        SigningKey::EcdsaP256(k) => RemoteKey {
            public: k
                .verifying_key()
                .to_encoded_point(false)
                .as_bytes()
                .to_vec(),
            key: key.clone(),
            alg: &rcgen::PKCS_ECDSA_P256_SHA256,
        },
        SigningKey::EcdsaP384(k) => RemoteKey {
            public: k
                .verifying_key()
                .to_encoded_point(false)
                .as_bytes()
                .to_vec(),
            key: key.clone(),
            alg: &rcgen::PKCS_ECDSA_P384_SHA384,
        },
        SigningKey::Ed25519(k) => RemoteKey {
            public: k.verifying_key().as_bytes().to_vec(),
            key: key.clone(),
            alg: &rcgen::PKCS_ED25519,
        },
        SigningKey::Rsa(_) | SigningKey::RsaPss(_) => {
            return Err(CertGenError("RSA certificates are not generated".into()));
        }
        // rcgen has P-521 only on aws-lc-rs; tests take P-521 certificates from OpenSSL.
        SigningKey::EcdsaP521(_) => {
            return Err(CertGenError("P-521 certificates are not generated".into()));
        }
        // rcgen 0.13 has no ML-DSA; tests take ML-DSA certificates from OpenSSL.
        SigningKey::MlDsa(_) => {
            return Err(CertGenError("ML-DSA certificates are not generated".into()));
        }
    };
    rcgen::KeyPair::from_remote(Box::new(remote)).map_err(|e| CertGenError(e.to_string()))
}

struct RemoteKey {
    key: SigningKey,
    public: Vec<u8>,
    alg: &'static rcgen::SignatureAlgorithm,
}

impl rcgen::RemoteKeyPair for RemoteKey {
    fn public_key(&self) -> &[u8] {
        &self.public
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        match &self.key {
            SigningKey::EcdsaP256(k) => {
                let sig: p256::ecdsa::Signature = k.sign(msg);
                Ok(sig.to_der().as_bytes().to_vec())
            }
            SigningKey::EcdsaP384(k) => {
                let sig: p384::ecdsa::Signature = k.sign(msg);
                Ok(sig.to_der().as_bytes().to_vec())
            }
            SigningKey::Ed25519(k) => Ok(k.sign(msg).to_bytes().to_vec()),
            SigningKey::EcdsaP521(_)
            | SigningKey::Rsa(_)
            | SigningKey::RsaPss(_)
            | SigningKey::MlDsa(_) => Err(rcgen::Error::RemoteKeyError),
        }
    }

    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        self.alg
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::cert::{verify_chain, verify_with_leaf, CertError, Usage};
    use crate::crypto::random::SeededRandom;
    use crate::crypto::sign::{certificate_verify_message, SigError};
    use crate::messages::enums::{AlertDescription, SignatureScheme};

    const RSA_KEY: &str = include_str!("../../../tests/vectors/pem/server_rsa_key.pem");

    const T_2020: u64 = 1_577_836_800; // 2020-01-01
    const NB: u64 = T_2020;
    const NA: u64 = T_2020 + 365 * 86_400;

    #[test]
    fn self_signed_p256_is_deterministic_and_validates() {
        let names = ["localhost", "127.0.0.1"];
        let k1 = SigningKey::generate_p256(&mut SeededRandom::from_seed(42));
        let k2 = SigningKey::generate_p256(&mut SeededRandom::from_seed(42));
        let c1 = self_signed_p256(&names, &k1, NB, NA).unwrap();
        let c2 = self_signed_p256(&names, &k2, NB, NA).unwrap();
        assert_eq!(c1, c2);
        let k3 = SigningKey::generate_p256(&mut SeededRandom::from_seed(43));
        assert_ne!(self_signed_p256(&names, &k3, NB, NA).unwrap(), c1);

        let chain = vec![c1.clone()];
        for name in [None, Some("localhost"), Some("127.0.0.1")] {
            for usage in [Usage::Server, Usage::Client] {
                verify_chain(&chain, &chain, name, NB + 10, usage, None).unwrap();
            }
        }
        assert_eq!(
            verify_chain(
                &chain,
                &chain,
                Some("example.com"),
                NB + 10,
                Usage::Server,
                None
            ),
            Err(CertError::NameMismatch {
                expected: "example.com".into(),
                presented: vec!["localhost".into(), "127.0.0.1".into()]
            })
        );
        let err = verify_chain(&chain, &chain, Some("example.com"), NB, Usage::Server, None);
        assert_eq!(
            err.unwrap_err().to_string(),
            "certificate name mismatch: \"example.com\" is not among the certificate's names \
             (localhost, 127.0.0.1)"
        );
        assert_eq!(
            verify_chain(&chain, &chain, None, NA + 1, Usage::Server, None),
            Err(CertError::Expired {
                not_after: NA,
                now: NA + 1
            })
        );

        // CertificateVerify round trip: the key signs, the certificate verifies.
        let msg = certificate_verify_message(true, &[3; 32]);
        let scheme = SignatureScheme::ecdsa_secp256r1_sha256;
        let sig = k1
            .sign(scheme, &msg, &mut SeededRandom::from_seed(0))
            .unwrap();
        verify_with_leaf(&c1, scheme, &msg, &sig).unwrap();
        assert_eq!(
            verify_with_leaf(&c1, SignatureScheme::ed25519, &msg, &sig),
            Err(SigError::KeyMismatch(SignatureScheme::ed25519))
        );

        assert!(self_signed_p256(&names, &k1, NB, u64::MAX).is_err());
        let rsa = SigningKey::from_pem(RSA_KEY).unwrap();
        assert!(self_signed_p256(&names, &rsa, NB, NA).is_err());
        let ed = SigningKey::generate_ed25519(&mut SeededRandom::from_seed(1));
        assert!(self_signed_p256(&names, &ed, NB, NA).is_err());
    }

    #[test]
    fn p384_root_signs_p256_leaf_and_p384_leaf_self_signed() {
        use rcgen::ExtendedKeyUsagePurpose as Eku;
        let mut rng = SeededRandom::from_seed(8);
        // A P-384 CA (ecdsa-with-SHA384) over a P-256 leaf, as public CAs do.
        let root_sk = SigningKey::generate_p384(&mut rng);
        let root_key = rcgen_key(&root_sk).unwrap();
        let leaf_sk = SigningKey::generate_p256(&mut rng);
        let leaf_key = rcgen_key(&leaf_sk).unwrap();
        let root = params("root384.test", true, vec![])
            .self_signed(&root_key)
            .unwrap();
        let leaf = params("leaf.test", false, vec![Eku::ServerAuth])
            .signed_by(&leaf_key, &root, &root_key)
            .unwrap();
        let chain = vec![leaf.der().to_vec()];
        let roots = vec![root.der().to_vec()];
        verify_chain(
            &chain,
            &roots,
            Some("leaf.test"),
            NB + 1,
            Usage::Server,
            None,
        )
        .unwrap();
        // Tampering with the P-384 signature breaks the chain.
        let mut bad = leaf.der().to_vec();
        let n = bad.len();
        bad[n - 2] ^= 1;
        assert!(verify_chain(&[bad], &roots, None, NB + 1, Usage::Server, None).is_err());

        // A self-signed P-384 leaf, and CertificateVerify with ecdsa_secp384r1_sha384.
        let names = ["localhost"];
        let c = self_signed_ecdsa(&names, &root_sk, NB, NA).unwrap();
        assert_eq!(c, self_signed_ecdsa(&names, &root_sk, NB, NA).unwrap());
        assert!(self_signed_p256(&names, &root_sk, NB, NA).is_err());
        let chain = vec![c.clone()];
        verify_chain(
            &chain,
            &chain,
            Some("localhost"),
            NB + 1,
            Usage::Server,
            None,
        )
        .unwrap();
        let msg = certificate_verify_message(true, &[5; 48]);
        let scheme = SignatureScheme::ecdsa_secp384r1_sha384;
        let sig = root_sk.sign(scheme, &msg, &mut rng).unwrap();
        verify_with_leaf(&c, scheme, &msg, &sig).unwrap();
        assert_eq!(
            verify_with_leaf(&c, SignatureScheme::ecdsa_secp256r1_sha256, &msg, &sig),
            Err(SigError::KeyMismatch(
                SignatureScheme::ecdsa_secp256r1_sha256
            ))
        );
        let ed = SigningKey::generate_ed25519(&mut rng);
        assert!(self_signed_ecdsa(&names, &ed, NB, NA).is_err());
    }

    fn params(
        name: &str,
        ca: bool,
        eku: Vec<rcgen::ExtendedKeyUsagePurpose>,
    ) -> rcgen::CertificateParams {
        let mut p = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CommonName, name);
        p.distinguished_name = dn;
        set_validity(&mut p, NB, NA).unwrap();
        if ca {
            p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        p.extended_key_usages = eku;
        p
    }

    #[test]
    fn chain_through_intermediate() {
        use rcgen::ExtendedKeyUsagePurpose as Eku;
        let mut rng = SeededRandom::from_seed(7);
        let root_key = rcgen_key(&SigningKey::generate_ed25519(&mut rng)).unwrap();
        let inter_key = rcgen_key(&SigningKey::generate_p256(&mut rng)).unwrap();
        let leaf_sk = SigningKey::generate_p256(&mut rng);
        let leaf_key = rcgen_key(&leaf_sk).unwrap();

        let root = params("root.test", true, vec![])
            .self_signed(&root_key)
            .unwrap();
        let inter = params("inter.test", true, vec![])
            .signed_by(&inter_key, &root, &root_key)
            .unwrap();
        let leaf = params("leaf.test", false, vec![Eku::ServerAuth])
            .signed_by(&leaf_key, &inter, &inter_key)
            .unwrap();
        let chain = vec![leaf.der().to_vec(), inter.der().to_vec()];
        let roots = vec![root.der().to_vec()];

        verify_chain(
            &chain,
            &roots,
            Some("leaf.test"),
            NB + 1,
            Usage::Server,
            None,
        )
        .unwrap();
        // The issuer named is that of the chain's last certificate.
        assert_eq!(
            verify_chain(&chain[..1], &roots, None, NB + 1, Usage::Server, None),
            Err(CertError::UnknownIssuer {
                issuer: Some("CN=inter.test".into())
            })
        );
        assert_eq!(
            verify_chain(&chain, &[], None, NB + 1, Usage::Server, None),
            Err(CertError::UnknownIssuer {
                issuer: Some("CN=root.test".into())
            })
        );
        let err = verify_chain(&chain, &roots, None, NB + 1, Usage::Client, None).unwrap_err();
        assert_eq!(err, CertError::WrongUsage);
        assert_eq!(err.alert(), AlertDescription::UnsupportedCertificate);
        // The leaf's key signs CertificateVerify that checks out against the leaf certificate.
        let msg = certificate_verify_message(false, &[1; 48]);
        let sig = leaf_sk
            .sign(SignatureScheme::ecdsa_secp256r1_sha256, &msg, &mut rng)
            .unwrap();
        verify_with_leaf(
            &chain[0],
            SignatureScheme::ecdsa_secp256r1_sha256,
            &msg,
            &sig,
        )
        .unwrap();
    }
}
