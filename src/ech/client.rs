//! The client's ECH choices (RFC 9849 §6): which ECHConfig and suite to offer, which
//! extensions the outer ClientHello shares with the inner one, and what a GREASE extension
//! looks like. The state machine (`crate::client`) seals and sends.

use super::wire::{EchClientHello, HpkeSymmetricCipherSuite};
use crate::crypto::hpke::{self, Aead, Suite};
use crate::crypto::random::RandomSource;
use crate::keyschedule::NoSink;
use crate::messages::ech::{EchConfig, EchConfigList, ECH_VERSION};
use crate::messages::enums::{ExtensionType, HpkeAeadId, HpkeKdfId, HpkeKemId};

/// An ECHConfig the client can use, and the suite it picked from it (§6.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    /// The ECHConfig as published: HPKE's `info` is built from these bytes.
    pub config: EchConfig,
    /// HpkeKeyConfig.config_id.
    pub config_id: u8,
    /// The server's HPKE public key.
    pub public_key: Vec<u8>,
    /// ECHConfigContents.public_name, checked by [`valid_public_name`].
    pub public_name: String,
    /// ECHConfigContents.maximum_name_length, for the §6.1.3 padding.
    pub maximum_name_length: u8,
    /// KEM, KDF and AEAD.
    pub suite: Suite,
    /// The KDF/AEAD pair as the extension names it.
    pub symmetric: HpkeSymmetricCipherSuite,
}

impl Chosen {
    /// HPKE's info: `"tls ech" || 0x00 || ECHConfig` (§6.1).
    pub fn info(&self) -> Vec<u8> {
        super::hpke_info(&self.config.raw)
    }
}

/// The first usable config of `list`, in its order of preference (§4, §6.1): version 0xfe0d,
/// a KEM we implement, a KDF/AEAD pair we implement (Export-only cannot seal), a public_name
/// that is a valid host name (§6.1.7), and no mandatory extension we do not know (§4.2: we
/// know none, so any mandatory one disqualifies the config).
pub fn choose(list: &EchConfigList) -> Option<Chosen> {
    list.configs.iter().find_map(|config| {
        if config.version != ECH_VERSION {
            return None;
        }
        let c = config.contents()?;
        if c.extensions.iter().any(|e| e.is_mandatory()) || !valid_public_name(&c.public_name) {
            return None;
        }
        let kem = hpke::Kem::from_id(c.key_config.kem_id)?;
        let (suite, symmetric) = c.key_config.cipher_suites.iter().find_map(|s| {
            let suite = Suite {
                kem,
                kdf: hpke::Kdf::from_id(s.kdf_id)?,
                aead: Aead::from_id(s.aead_id)?,
            };
            (suite.aead != Aead::ExportOnly).then_some((suite, *s))
        })?;
        Some(Chosen {
            config: config.clone(),
            config_id: c.key_config.config_id,
            public_key: c.key_config.public_key.clone(),
            public_name: c.public_name_str()?.to_owned(),
            maximum_name_length: c.maximum_name_length,
            suite,
            symmetric,
        })
    })
}

/// §6.1.7: a dot-separated sequence of LDH labels of at most 63 octets, not starting or
/// ending with a dot, whose last label is neither all digits nor `0x` + hex digits (those
/// could be read as IPv4 literals).
pub fn valid_public_name(name: &[u8]) -> bool {
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    let labels: Vec<&[u8]> = name.split(|b| *b == b'.').collect();
    let ldh = |l: &&[u8]| {
        (1..=63).contains(&l.len())
            && l.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && l[0] != b'-'
            && l[l.len() - 1] != b'-'
    };
    if !labels.iter().all(ldh) {
        return false;
    }
    let last = labels[labels.len() - 1];
    let numeric = last.iter().all(u8::is_ascii_digit);
    let hex = (last.starts_with(b"0x") || last.starts_with(b"0X"))
        && last[2..].iter().all(u8::is_ascii_hexdigit);
    !(numeric || hex)
}

/// The extensions the outer ClientHello may share with the inner one when their bytes are
/// equal: nothing here names the real server or reveals a choice the outer one lacks.
const COMPRESSIBLE: [ExtensionType; 4] = [
    ExtensionType::SupportedGroups,
    ExtensionType::KeyShare,
    ExtensionType::SupportedVersions,
    ExtensionType::SignatureAlgorithms,
];

/// The extensions of the inner ClientHello (types in order) to replace by one
/// `ech_outer_extensions` (§5.1): the longest run of consecutive compressible ones, which the
/// outer ClientHello then carries in the same order. Empty if none is compressible.
pub fn compressible_run(types: &[ExtensionType]) -> Vec<ExtensionType> {
    let mut best: &[ExtensionType] = &[];
    let mut i = 0;
    while i < types.len() {
        let run = types[i..]
            .iter()
            .take_while(|t| COMPRESSIBLE.contains(t))
            .count();
        if run > best.len() {
            best = &types[i..i + run];
        }
        i += run.max(1);
    }
    best.to_vec()
}

/// The suite a GREASE extension names (§6.2): one we implement, as a real offer would use.
pub const GREASE_SUITE: HpkeSymmetricCipherSuite = HpkeSymmetricCipherSuite {
    kdf_id: HpkeKdfId::HkdfSha256,
    aead_id: HpkeAeadId::Aes128Gcm,
};

/// A GREASE `encrypted_client_hello` (§6.2): a random config_id, [`GREASE_SUITE`], a valid
/// X25519 public key as `enc`, and `encoded_len` + 16 (AES-128-GCM's tag) random bytes as the
/// payload, where `encoded_len` is what the EncodedClientHelloInner would be. All drawn from
/// `rng`, in that order.
pub fn grease(
    rng: &mut dyn RandomSource,
    encoded_len: usize,
) -> Result<EchClientHello, hpke::HpkeError> {
    let mut id = [0u8; 1];
    rng.fill(&mut id);
    let kem = hpke::Kem::from_id(HpkeKemId::DhkemX25519HkdfSha256).ok_or(
        hpke::HpkeError::Unsupported {
            kem: HpkeKemId::DhkemX25519HkdfSha256,
            kdf: GREASE_SUITE.kdf_id,
            aead: GREASE_SUITE.aead_id,
        },
    )?;
    let enc = kem
        .generate_key_pair(rng, &mut NoSink)?
        .public_key()
        .to_vec();
    let mut payload = vec![0u8; encoded_len + Aead::Aes128Gcm.tag_len()];
    rng.fill(&mut payload);
    Ok(EchClientHello::Outer {
        suite: GREASE_SUITE,
        config_id: id[0],
        enc,
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::ech::{EchKeyPair, EchKeyParams};
    use crate::crypto::random::SeededRandom;
    use crate::messages::ech::{EchConfigBody, EchConfigExtension};

    fn pair(name: &str) -> EchKeyPair {
        let params = EchKeyParams {
            public_name: name.into(),
            kem: hpke::Kem::X25519HkdfSha256,
            suites: vec![GREASE_SUITE],
            config_id: Some(1),
            maximum_name_length: 0,
        };
        EchKeyPair::generate(&params, &mut SeededRandom::from_seed(3)).unwrap()
    }

    #[test]
    fn public_names_are_ldh_host_names_and_not_ipv4() {
        for ok in [
            "public.example",
            "a",
            "x-1.example",
            "example.com1",
            "a.0x1g",
        ] {
            assert!(valid_public_name(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "",
            ".a",
            "a.",
            "a..b",
            "-a.b",
            "a-.b",
            "a_b.c",
            "1.2.3.4",
            "example.123",
            "a.0x1f",
            "a.0X",
            "ü.example",
        ] {
            assert!(!valid_public_name(bad.as_bytes()), "{bad}");
        }
        assert!(!valid_public_name(&[b'a'; 64]));
        assert!(valid_public_name(&[b'a'; 63]));
    }

    #[test]
    fn choose_skips_unusable_configs() {
        let good = pair("public.example").config;
        let mut other_version = good.clone();
        other_version.version = 0xfe0c;
        other_version.body = EchConfigBody::Unknown(vec![1, 2, 3]);
        let with = |f: &dyn Fn(&mut crate::messages::ech::EchConfigContents)| {
            let mut c = good.contents().unwrap().clone();
            f(&mut c);
            EchConfig::new(c)
        };
        let unknown_kem = with(&|c| c.key_config.kem_id = HpkeKemId::DhkemX448HkdfSha512);
        let export_only = with(&|c| {
            c.key_config.cipher_suites = vec![HpkeSymmetricCipherSuite {
                kdf_id: HpkeKdfId::HkdfSha256,
                aead_id: HpkeAeadId::ExportOnly,
            }]
        });
        let mandatory = with(&|c| {
            c.extensions.push(EchConfigExtension {
                typ: 0x8001,
                data: vec![],
            })
        });
        let ipv4_name = with(&|c| c.public_name = b"10.0.0.1".to_vec());
        let bad = [
            other_version,
            unknown_kem,
            export_only,
            mandatory,
            ipv4_name,
        ];
        for b in &bad {
            let list = EchConfigList {
                configs: vec![b.clone()],
            };
            assert_eq!(choose(&list), None, "{b:?}");
        }
        let mut configs = bad.to_vec();
        configs.push(good.clone());
        let c = choose(&EchConfigList { configs }).unwrap();
        assert_eq!(c.config, good);
        assert_eq!(c.public_name, "public.example");
        assert!(c.info().starts_with(b"tls ech\0"));
        assert_eq!(&c.info()[8..], good.raw.as_slice());
    }

    #[test]
    fn the_longest_compressible_run_is_chosen() {
        use ExtensionType as T;
        let types = [
            T::ServerName,
            T::SupportedGroups,
            T::EarlyData,
            T::KeyShare,
            T::SupportedVersions,
            T::SignatureAlgorithms,
            T::ApplicationLayerProtocolNegotiation,
        ];
        assert_eq!(
            compressible_run(&types),
            [T::KeyShare, T::SupportedVersions, T::SignatureAlgorithms]
        );
        assert!(compressible_run(&[T::ServerName]).is_empty());
    }

    #[test]
    fn grease_has_the_shape_of_a_real_offer() {
        let g = grease(&mut SeededRandom::from_seed(1), 224).unwrap();
        let EchClientHello::Outer {
            suite,
            enc,
            payload,
            ..
        } = &g
        else {
            panic!("outer");
        };
        assert_eq!(*suite, GREASE_SUITE);
        assert_eq!(enc.len(), 32);
        assert_eq!(payload.len(), 240);
        assert_eq!(EchClientHello::decode(&g.encode()).unwrap(), g);
        // From a seed, byte for byte.
        assert_eq!(grease(&mut SeededRandom::from_seed(1), 224).unwrap(), g);
        assert_ne!(grease(&mut SeededRandom::from_seed(2), 224).unwrap(), g);
    }
}
