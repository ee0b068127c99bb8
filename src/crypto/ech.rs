//! ECH keys: an HPKE private key with its ECHConfig (RFC 9849 §4), in the PEM file OpenSSL's
//! `openssl ech` writes and `s_server -ech_key` reads:
//!
//! ```text
//! -----BEGIN PRIVATE KEY-----      PKCS#8 (RFC 5208): X25519 (RFC 8410), P-256 (RFC 5915), or
//!                                  the seed of ML-KEM-768/1024 or X-Wing (draft-ietf-hpke-pq)
//! -----BEGIN ECHCONFIG-----        base64 of an ECHConfigList
//! ```
//!
//! Keys are generated from the injected [`RandomSource`] (DeriveKeyPair of a drawn ikm, RFC 9180
//! §7.1.3), so `tls13lab ech keygen --seed N` writes the same file every time.

use core::fmt;

use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};

use super::cert::{pem_blocks, pem_encode};
use super::hpke::{HpkeError, Kem, KeyPair};
use super::random::RandomSource;
use super::NoSink;
use crate::messages::codec::DecodeError;
use crate::messages::ech::{
    EchConfig, EchConfigContents, EchConfigList, HpkeKeyConfig, HpkeSymmetricCipherSuite,
};

/// PKCS#8 PrivateKeyInfo of an X25519 key (RFC 8410 §7), less the 32 key bytes: version 0,
/// AlgorithmIdentifier id-X25519 (1.3.101.110), and the CurvePrivateKey OCTET STRING in the
/// privateKey OCTET STRING. OpenSSL writes exactly this (48 bytes in all).
const X25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20,
];

/// An ECH key: the HPKE key pair and the ECHConfig that publishes its public half.
#[derive(Clone)]
pub struct EchKeyPair {
    /// The HPKE key pair (private half hidden from `Debug`).
    pub key: KeyPair,
    /// The config whose public_key is `key`'s, as its bytes were read or generated.
    pub config: EchConfig,
    /// The whole ECHConfigList of the file (`config` is one of its entries).
    pub list: EchConfigList,
}

/// What `ech keygen` puts in a new config (RFC 9849 §4; OpenSSL's defaults in parentheses).
#[derive(Clone, Debug)]
pub struct EchKeyParams {
    /// The outer SNI.
    pub public_name: String,
    /// The KEM (X25519).
    pub kem: Kem,
    /// KDF/AEAD pairs, in preference order (HKDF-SHA256, AES-128-GCM).
    pub suites: Vec<HpkeSymmetricCipherSuite>,
    /// config_id (random).
    pub config_id: Option<u8>,
    /// maximum_name_length (0).
    pub maximum_name_length: u8,
}

/// Why an ECH key file could not be read or a key made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EchKeyError {
    /// No (or more than one) `PRIVATE KEY` block, or one that is not PKCS#8 of a KEM we have.
    PrivateKey(&'static str),
    /// No `ECHCONFIG` block, or bad base64 in one.
    Pem(&'static str),
    /// The ECHConfigList does not decode.
    Config(DecodeError),
    /// No version 0xfe0d config in the list carries this private key's public key.
    NoMatchingConfig,
    /// An HPKE failure (a public name longer than 255 bytes, a bad key).
    Hpke(HpkeError),
    /// The public name is empty or longer than 255 bytes (`opaque public_name<1..255>`).
    PublicName,
    /// No cipher suite given (`cipher_suites<4..2^16-4>`).
    NoSuites,
}

impl fmt::Display for EchKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EchKeyError::PrivateKey(why) => write!(f, "ECH private key: {why}"),
            EchKeyError::Pem(why) => write!(f, "ECH key file: {why}"),
            EchKeyError::Config(e) => write!(f, "ECHConfigList: {e}"),
            EchKeyError::NoMatchingConfig => {
                f.write_str("no ECHConfig in the file carries the private key's public key")
            }
            EchKeyError::Hpke(e) => write!(f, "{e}"),
            EchKeyError::PublicName => f.write_str("public_name must be 1 to 255 bytes"),
            EchKeyError::NoSuites => f.write_str("an ECHConfig needs at least one cipher suite"),
        }
    }
}

impl std::error::Error for EchKeyError {}

impl EchKeyPair {
    /// A new key pair (DeriveKeyPair over Nsk drawn bytes) and its config. An unset
    /// config_id is one more draw (one byte), as OpenSSL picks one at random.
    pub fn generate(
        params: &EchKeyParams,
        rng: &mut dyn RandomSource,
    ) -> Result<EchKeyPair, EchKeyError> {
        if params.public_name.is_empty() || params.public_name.len() > 255 {
            return Err(EchKeyError::PublicName);
        }
        if params.suites.is_empty() || params.suites.len() > (0xffff - 3) / 4 {
            return Err(EchKeyError::NoSuites);
        }
        let key = params
            .kem
            .generate_key_pair(rng, &mut NoSink)
            .map_err(EchKeyError::Hpke)?;
        let config_id = params.config_id.unwrap_or_else(|| {
            let mut b = [0u8];
            rng.fill(&mut b);
            b[0]
        });
        let config = EchConfig::new(EchConfigContents {
            key_config: HpkeKeyConfig {
                config_id,
                kem_id: params.kem.id(),
                public_key: key.public_key().to_vec(),
                cipher_suites: params.suites.clone(),
            },
            maximum_name_length: params.maximum_name_length,
            public_name: params.public_name.as_bytes().to_vec(),
            extensions: Vec::new(),
        });
        let list = EchConfigList {
            configs: vec![config.clone()],
        };
        Ok(EchKeyPair { key, config, list })
    }

    /// Reads OpenSSL's file layout (and ours): one PKCS#8 `PRIVATE KEY` block and an `ECHCONFIG`
    /// block; the config is the list's first 0xfe0d entry whose public key matches.
    pub fn from_pem(text: &str) -> Result<EchKeyPair, EchKeyError> {
        let keys = pem_blocks(text, "PRIVATE KEY").ok_or(EchKeyError::Pem("bad PEM armour"))?;
        let [der] = keys.as_slice() else {
            return Err(EchKeyError::PrivateKey(
                "expected exactly one PRIVATE KEY block",
            ));
        };
        let key = private_key_from_pkcs8(der)?;
        let configs = pem_blocks(text, "ECHCONFIG").ok_or(EchKeyError::Pem("bad PEM armour"))?;
        let [body] = configs.as_slice() else {
            return Err(EchKeyError::Pem("expected exactly one ECHCONFIG block"));
        };
        let list = EchConfigList::decode(body).map_err(EchKeyError::Config)?;
        let config = list
            .configs
            .iter()
            .find(|c| {
                c.contents().is_some_and(|c| {
                    c.key_config.kem_id == key.kem().id()
                        && c.key_config.public_key == key.public_key()
                })
            })
            .cloned()
            .ok_or(EchKeyError::NoMatchingConfig)?;
        Ok(EchKeyPair { key, config, list })
    }

    /// The file: `PRIVATE KEY` then `ECHCONFIG`, 64-column base64, as OpenSSL writes it.
    pub fn to_pem(&self) -> String {
        let mut s = pem_encode("PRIVATE KEY", &private_key_to_pkcs8(&self.key));
        s.push_str(&pem_encode("ECHCONFIG", &self.list.encode()));
        s
    }
}

impl fmt::Debug for EchKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EchKeyPair")
            .field("key", &self.key)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// PKCS#8 for an ML-KEM-768 key in seed form (draft-ietf-lamps-kyber-certificates:
/// id-alg-ml-kem-768, 2.16.840.1.101.3.4.4.2, and `seed [0]` of 64 bytes).
const MLKEM768_PKCS8_PREFIX: [u8; 22] = [
    0x30, 0x54, 0x02, 0x01, 0x00, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
    0x04, 0x02, 0x04, 0x42, 0x80, 0x40,
];
/// PKCS#8 for an ML-KEM-1024 key in seed form: the same with id-alg-ml-kem-1024,
/// 2.16.840.1.101.3.4.4.3.
const MLKEM1024_PKCS8_PREFIX: [u8; 22] = [
    0x30, 0x54, 0x02, 0x01, 0x00, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
    0x04, 0x03, 0x04, 0x42, 0x80, 0x40,
];
/// PKCS#8 for an X-Wing key: its OID (1.3.6.1.4.1.62253.25722, draft-connolly-cfrg-xwing-kem)
/// and the 32-byte seed as an OCTET STRING inside the privateKey OCTET STRING, as RFC 8410
/// does for X25519.
const XWING_PKCS8_PREFIX: [u8; 24] = [
    0x30, 0x36, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x0b, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xe6,
    0x2d, 0x81, 0xc8, 0x7a, 0x04, 0x22, 0x04, 0x20,
];

/// PKCS#8 DER of the key: RFC 8410's 48 bytes for X25519, RFC 5915's ECPrivateKey (with its
/// public key) for P-256, the seed forms above for the post-quantum KEMs.
fn private_key_to_pkcs8(key: &KeyPair) -> Vec<u8> {
    match key.kem() {
        Kem::X25519HkdfSha256 => [&X25519_PKCS8_PREFIX[..], key.private_key()].concat(),
        Kem::MlKem768 => [&MLKEM768_PKCS8_PREFIX[..], key.private_key()].concat(),
        Kem::MlKem1024 => [&MLKEM1024_PKCS8_PREFIX[..], key.private_key()].concat(),
        Kem::XWing => [&XWING_PKCS8_PREFIX[..], key.private_key()].concat(),
        Kem::P256HkdfSha256 => p256::SecretKey::from_slice(key.private_key())
            .ok()
            .and_then(|k| k.to_pkcs8_der().ok())
            .map(|d| d.as_bytes().to_vec())
            // A KeyPair's P-256 scalar is in [1, n) by construction.
            .unwrap_or_default(),
    }
}

fn private_key_from_pkcs8(der: &[u8]) -> Result<KeyPair, EchKeyError> {
    for (prefix, kem) in [
        (&X25519_PKCS8_PREFIX[..], Kem::X25519HkdfSha256),
        (&MLKEM768_PKCS8_PREFIX[..], Kem::MlKem768),
        (&MLKEM1024_PKCS8_PREFIX[..], Kem::MlKem1024),
        (&XWING_PKCS8_PREFIX[..], Kem::XWing),
    ] {
        if let Some(sk) = der.strip_prefix(prefix) {
            if sk.len() == kem.sk_len() {
                return KeyPair::from_private(kem, sk).map_err(EchKeyError::Hpke);
            }
        }
    }
    let sk = p256::SecretKey::from_pkcs8_der(der).map_err(|_| {
        EchKeyError::PrivateKey("not a PKCS#8 X25519, P-256, ML-KEM-768, ML-KEM-1024 or X-Wing key")
    })?;
    KeyPair::from_private(Kem::P256HkdfSha256, &sk.to_bytes()).map_err(EchKeyError::Hpke)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::hpke::{self, Aead, Kdf, Suite};
    use crate::crypto::random::SeededRandom;
    use crate::messages::enums::{HpkeAeadId, HpkeKdfId};

    const OPENSSL_X25519: &str = include_str!("../../tests/vectors/ech/openssl-x25519.pem");
    const OPENSSL_P256: &str = include_str!("../../tests/vectors/ech/openssl-p256.pem");

    /// HPKE to the config's public key opens with the file's private key.
    fn usable(k: &EchKeyPair, aead: Aead) {
        let c = k.config.contents().unwrap();
        let suite = Suite {
            kem: k.key.kem(),
            kdf: Kdf::HkdfSha256,
            aead,
        };
        let mut rng = SeededRandom::from_seed(4);
        let (enc, mut tx) =
            hpke::setup_base_s(suite, &c.key_config.public_key, b"i", &mut rng, &mut NoSink)
                .unwrap();
        let mut rx = hpke::setup_base_r(suite, &enc, &k.key, b"i", &mut NoSink).unwrap();
        assert_eq!(
            rx.open(b"a", &tx.seal(b"a", b"hi").unwrap()).unwrap(),
            b"hi"
        );
    }

    #[test]
    fn reads_openssl_files_and_writes_them_back_byte_for_byte() {
        let x = EchKeyPair::from_pem(OPENSSL_X25519).unwrap();
        assert_eq!(x.key.kem(), Kem::X25519HkdfSha256);
        assert_eq!(x.config.contents().unwrap().public_name, b"public.example");
        usable(&x, Aead::Aes128Gcm);
        assert_eq!(x.to_pem(), OPENSSL_X25519);
        let p = EchKeyPair::from_pem(OPENSSL_P256).unwrap();
        assert_eq!(p.key.kem(), Kem::P256HkdfSha256);
        let c = p.config.contents().unwrap();
        assert_eq!(
            (c.maximum_name_length, c.key_config.cipher_suites[0].aead_id),
            (42, HpkeAeadId::Aes256Gcm)
        );
        usable(&p, Aead::Aes256Gcm);
        assert_eq!(p.to_pem(), OPENSSL_P256);
    }

    #[test]
    fn generated_keys_replay_from_a_seed_and_read_back() {
        let params = EchKeyParams {
            public_name: "public.example".into(),
            kem: Kem::X25519HkdfSha256,
            suites: vec![HpkeSymmetricCipherSuite {
                kdf_id: HpkeKdfId::HkdfSha256,
                aead_id: HpkeAeadId::ChaCha20Poly1305,
            }],
            config_id: None,
            maximum_name_length: 0,
        };
        let a = EchKeyPair::generate(&params, &mut SeededRandom::from_seed(1)).unwrap();
        let b = EchKeyPair::generate(&params, &mut SeededRandom::from_seed(1)).unwrap();
        let c = EchKeyPair::generate(&params, &mut SeededRandom::from_seed(2)).unwrap();
        assert_eq!(a.to_pem(), b.to_pem());
        assert_ne!(a.to_pem(), c.to_pem());
        let back = EchKeyPair::from_pem(&a.to_pem()).unwrap();
        assert_eq!(back.config, a.config);
        assert_eq!(back.key.private_key(), a.key.private_key());
        usable(&back, Aead::ChaCha20Poly1305);
        let p = EchKeyParams {
            kem: Kem::P256HkdfSha256,
            config_id: Some(9),
            ..params.clone()
        };
        let p = EchKeyPair::generate(&p, &mut SeededRandom::from_seed(1)).unwrap();
        assert_eq!(p.config.contents().unwrap().key_config.config_id, 9);
        assert_eq!(EchKeyPair::from_pem(&p.to_pem()).unwrap().config, p.config);
        let bad = EchKeyParams {
            public_name: String::new(),
            ..params
        };
        assert_eq!(
            EchKeyPair::generate(&bad, &mut SeededRandom::from_seed(1)).unwrap_err(),
            EchKeyError::PublicName
        );
    }

    /// The post-quantum KEMs' keys (draft-ietf-hpke-pq) in their PKCS#8 seed forms: the file
    /// reads back to the same key and config, and the key opens what is sealed to its config.
    #[test]
    fn post_quantum_keys_round_trip_through_pkcs8() {
        for (kem, oid_tail, pk_len) in [
            (Kem::MlKem768, &[0x04, 0x02][..], 1184),
            (Kem::MlKem1024, &[0x04, 0x03][..], 1568),
            (Kem::XWing, &[0xc8, 0x7a][..], 1216),
        ] {
            let params = EchKeyParams {
                public_name: "public.example".into(),
                kem,
                suites: vec![HpkeSymmetricCipherSuite {
                    kdf_id: HpkeKdfId::HkdfSha256,
                    aead_id: HpkeAeadId::Aes256Gcm,
                }],
                config_id: Some(7),
                maximum_name_length: 0,
            };
            let k = EchKeyPair::generate(&params, &mut SeededRandom::from_seed(3)).unwrap();
            let c = k.config.contents().unwrap();
            assert_eq!(
                (c.key_config.kem_id, c.key_config.public_key.len()),
                (kem.id(), pk_len)
            );
            let der = private_key_to_pkcs8(&k.key);
            assert!(der.ends_with(k.key.private_key()), "{kem:?}");
            let oid_end = der.len() - kem.sk_len() - 4;
            assert_eq!(&der[oid_end - 2..oid_end], oid_tail, "{kem:?}");
            let back = EchKeyPair::from_pem(&k.to_pem()).unwrap();
            assert_eq!(back.key.kem(), kem);
            assert_eq!(back.key.private_key(), k.key.private_key());
            assert_eq!(back.config, k.config);
            assert_eq!(back.to_pem(), k.to_pem());
            usable(&back, Aead::Aes256Gcm);
        }
    }

    #[test]
    fn a_key_without_its_config_is_refused() {
        let x_key = OPENSSL_X25519.split("-----BEGIN ECHCONFIG").next().unwrap();
        let p_cfg = &OPENSSL_P256[OPENSSL_P256.find("-----BEGIN ECHCONFIG").unwrap()..];
        assert_eq!(
            EchKeyPair::from_pem(&format!("{x_key}{p_cfg}")).unwrap_err(),
            EchKeyError::NoMatchingConfig
        );
        assert!(matches!(
            EchKeyPair::from_pem(x_key),
            Err(EchKeyError::Pem(_))
        ));
        assert!(matches!(
            EchKeyPair::from_pem(p_cfg),
            Err(EchKeyError::PrivateKey(_))
        ));
    }
}
