//! The client half of ECH (RFC 9849 §6): which ECHConfig and suite to offer (§6.1), which
//! extensions the outer ClientHello shares with the inner one (§5.1), ClientHelloOuter built
//! around the sealed inner hello (§6.1, §6.1.1, §6.1.2), what a GREASE extension looks like
//! (§6.2), and whether the server's HelloRetryRequest or ServerHello confirms that it used the
//! inner hello (§6.1.4, §6.1.5). Functions of explicit inputs: the state machine
//! (`client/ech.rs`) draws the randoms, sends, keeps the offer and reports.

use std::borrow::Cow;

use super::confirm::{self, ACCEPT_LABEL, HRR_ACCEPT_LABEL};
use super::inner::{self, InnerLayout};
use super::wire::{EchClientHello, HpkeSymmetricCipherSuite};
use super::EchError;
use crate::crypto::hash::HashAlg;
use crate::crypto::hpke::{self, Aead, HpkeError, HpkeSink, SenderContext, Suite};
use crate::crypto::random::RandomSource;
use crate::keyschedule::transcript::Transcript;
use crate::keyschedule::NoSink;
use crate::messages::codec::DecodeError;
use crate::messages::ech::{EchConfig, EchConfigList, ECH_VERSION};
use crate::messages::enums::{ExtensionType, HandshakeType, HpkeAeadId, HpkeKdfId, HpkeKemId};
use crate::messages::extensions::{Extension, OfferedPsks, OutgoingExtension, PskIdentity};
use crate::messages::handshake::{ClientHelloOut, OutgoingMessage};

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

    /// SetupBaseS to this config's key (§6.1): `enc` and the context that seals every
    /// ClientHelloInner of the connection (§6.1.5). The ephemeral key is drawn from `rng`;
    /// `sink` sees the steps.
    pub(crate) fn setup(
        &self,
        rng: &mut dyn RandomSource,
        sink: &mut dyn HpkeSink,
    ) -> Result<(Vec<u8>, SenderContext), HpkeError> {
        hpke::setup_base_s(self.suite, &self.public_key, &self.info(), rng, sink)
    }

    /// The payload's length for an EncodedClientHelloInner of `encoded_len` bytes: the AEAD
    /// adds its tag (§6.1.1).
    pub(crate) fn payload_len(&self, encoded_len: usize) -> usize {
        encoded_len + self.suite.aead.tag_len()
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

/// The extensions a ClientHelloOuter copies from ClientHelloInner (§6.1): those a server that
/// rejects ECH needs to answer, none naming the real server.
const OUTER_COPIES: [ExtensionType; 7] = [
    ExtensionType::SupportedGroups,
    ExtensionType::KeyShare,
    ExtensionType::EarlyData,
    ExtensionType::SupportedVersions,
    ExtensionType::SignatureAlgorithms,
    ExtensionType::Cookie,
    ExtensionType::PskKeyExchangeModes,
];

/// A ClientHelloInner encoded for sealing (§5.1).
pub(crate) struct EncodedInner {
    /// EncodedClientHelloInner: what the HPKE context seals.
    pub(crate) bytes: Vec<u8>,
    /// How it was compressed and padded.
    pub(crate) layout: InnerLayout,
    /// The extensions `ech_outer_extensions` replaced, in order ([`compressible_run`]).
    pub(crate) outer_extensions: Vec<ExtensionType>,
}

/// EncodedClientHelloInner for the ClientHelloInner `inner`, whose whole message (header
/// included) is `inner_msg`: the longest compressible run replaced by `ech_outer_extensions`
/// (§5.1), padded for `maximum_name_length` (§6.1.3).
pub(crate) fn encode_inner(
    inner: &ClientHelloOut<'_>,
    inner_msg: &[u8],
    maximum_name_length: u8,
) -> Result<EncodedInner, EchError> {
    let types: Vec<ExtensionType> = inner.extensions.iter().map(|e| e.typ()).collect();
    let run = compressible_run(&types);
    let compress: Vec<u16> = run.iter().map(|t| t.to_repr()).collect();
    let (bytes, layout) = inner::encode(&inner_msg[4..], &compress, maximum_name_length)?;
    Ok(EncodedInner {
        bytes,
        layout,
        outer_extensions: run,
    })
}

/// ClientHelloOuter for `inner` with `encoded` (its EncodedClientHelloInner) sealed by
/// `context` (§6.1, §6.1.1): `random`, and `enc` the encapsulated key (empty in a second outer
/// hello, §6.1.5). It carries the public name, what it must share with the inner one (every
/// compressed extension, in the same order, §5.1; and key_share, supported_versions, a cookie
/// and psk_key_exchange_modes as a server that rejects ECH needs them, §6.1), early_data when
/// the inner has it (§6.1), the ECH extension, and `grease_psk` last (§6.1.2, RFC 8446
/// §4.2.11). ALPN and the rest stay inside.
pub(crate) fn seal_outer<'a>(
    chosen: &'a Chosen,
    context: &mut SenderContext,
    random: [u8; 32],
    enc: &[u8],
    inner: &ClientHelloOut<'a>,
    encoded: &[u8],
    grease_psk: Option<&'a Extension>,
) -> Result<ClientHelloOut<'a>, HpkeError> {
    let mut exts: Vec<OutgoingExtension<'a>> = Vec::with_capacity(10);
    exts.push(OutgoingExtension::HostName(chosen.public_name.as_bytes()));
    exts.extend(
        inner
            .extensions
            .iter()
            .filter(|e| OUTER_COPIES.contains(&e.typ()))
            .cloned(),
    );
    let payload_len = chosen.payload_len(encoded.len());
    let outer_ext = |payload: Vec<u8>| EchClientHello::Outer {
        suite: chosen.symmetric,
        config_id: chosen.config_id,
        enc: enc.to_vec(),
        payload,
    };
    exts.push(ech_extension(outer_ext(vec![0; payload_len]).encode()));
    let ech_at = exts.len() - 1;
    if let Some(psk) = grease_psk {
        exts.push(OutgoingExtension::Ext(Cow::Borrowed(psk)));
    }
    let mut outer = ClientHelloOut {
        legacy_version: 0x0303,
        random,
        legacy_session_id: inner.legacy_session_id,
        cipher_suites: inner.cipher_suites,
        legacy_compression_methods: &[0],
        extensions: exts,
    };
    // With the payload all zeros, the serialized outer hello is ClientHelloOuterAAD (§5.2).
    let mut aad = Vec::with_capacity(outer.message_len());
    OutgoingMessage::ClientHello(&outer).encode_into(&mut aad);
    let sealed = context.seal(&aad[4..], encoded)?;
    // Same length, so no length prefix changes (§6.1.1).
    outer.extensions[ech_at] = ech_extension(outer_ext(sealed).encode());
    Ok(outer)
}

/// An `encrypted_client_hello` extension with this extension_data.
pub(crate) fn ech_extension(body: Vec<u8>) -> OutgoingExtension<'static> {
    Extension::Unknown {
        typ: ExtensionType::EncryptedClientHello,
        body,
    }
    .into()
}

/// Adds `ext` as the last extension, before pre_shared_key (which stays last, RFC 8446
/// §4.2.11).
pub(crate) fn insert_before_psk<'a>(hello: &mut ClientHelloOut<'a>, ext: OutgoingExtension<'a>) {
    let at = hello
        .extensions
        .iter()
        .position(|e| e.typ() == ExtensionType::PreSharedKey)
        .unwrap_or(hello.extensions.len());
    hello.extensions.insert(at, ext);
}

/// §6.1.2: a pre_shared_key for the outer hello shaped like the inner one's, all random:
/// an identity of `identity_len` bytes, a random obfuscated_ticket_age, a binder of
/// `binder_len` bytes, drawn from `rng` in that order.
pub(crate) fn grease_psk(
    rng: &mut dyn RandomSource,
    identity_len: usize,
    binder_len: usize,
) -> Extension {
    let mut identity = vec![0u8; identity_len];
    let mut binder = vec![0u8; binder_len];
    rng.fill(&mut identity);
    let mut age = [0u8; 4];
    rng.fill(&mut age);
    rng.fill(&mut binder);
    Extension::PreSharedKeyClient(OfferedPsks {
        identities: vec![PskIdentity {
            identity,
            obfuscated_ticket_age: u32::from_be_bytes(age),
        }],
        binders: vec![binder],
    })
}

/// The EncodedClientHelloInner length a GREASE extension for `hello` pretends (§6.2), so its
/// payload is as long as a real offer's would be: `hello` as the inner one (plus the 5-byte
/// inner-type extension), compressed alike, padded with maximum_name_length 0 (§6.1.3).
pub(crate) fn grease_encoded_len(hello: &ClientHelloOut<'_>) -> Result<usize, EchError> {
    let mut msg = Vec::with_capacity(hello.message_len());
    OutgoingMessage::ClientHello(hello).encode_into(&mut msg);
    let layout = encode_inner(hello, &msg, 0)?.layout;
    let len = layout.client_hello + 5 + layout.name_padding;
    Ok(len + 31 - ((len - 1) % 32))
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

/// §6.1.5, §7.2.1: whether the HelloRetryRequest `hrr` (the message as received) accepts ECH:
/// its `encrypted_client_hello` carried `confirmation`, which is hrr_accept_confirmation over
/// `inner` (ClientHelloInner's transcript through message_hash, RFC 8446 §4.4.1) and `hrr`
/// with those eight bytes zero. No confirmation is a rejection. `derive` computes it
/// ([`confirm::confirmation`], or a connection's, which also reports it).
pub(crate) fn hrr_accepts(
    inner: &Transcript,
    inner_random: &[u8; 32],
    hrr: &[u8],
    confirmation: Option<[u8; 8]>,
    hash: HashAlg,
    derive: impl FnOnce(HashAlg, &[u8; 32], &'static str, &[u8]) -> [u8; 8],
) -> bool {
    match (confirmation, confirm::zero_hrr(hrr)) {
        (Some(got), Some(zeroed)) => {
            let mut t = inner.clone();
            t.add(HandshakeType::ServerHello, &zeroed);
            got == derive(
                hash,
                inner_random,
                HRR_ACCEPT_LABEL,
                t.current_hash().as_ref(),
            )
        }
        _ => false,
    }
}

/// §6.1.4, §7.2: whether the ServerHello `server_hello` (the message as received) accepts
/// ECH: the last 8 bytes of its random are accept_confirmation over `inner` (ClientHelloInner's
/// transcript, hashing with the suite's hash) and `server_hello` with those bytes zero.
/// `derive` as for [`hrr_accepts`].
pub(crate) fn server_hello_accepts(
    inner: &Transcript,
    inner_random: &[u8; 32],
    server_hello: &[u8],
    hash: HashAlg,
    derive: impl FnOnce(HashAlg, &[u8; 32], &'static str, &[u8]) -> [u8; 8],
) -> Result<bool, DecodeError> {
    // A decoded ServerHello is longer than 38 bytes: shorter would be the peer's malformed
    // message.
    let range = confirm::server_hello_range();
    if server_hello.len() < range.end {
        return Err(DecodeError::Truncated {
            what: "ServerHello.random",
        });
    }
    // Hashed in place around the zeroed bytes: the ServerHello is not copied.
    let th = inner.hash_with_parts(&[
        &server_hello[..range.start],
        &[0; 8],
        &server_hello[range.end..],
    ]);
    let want = derive(hash, inner_random, ACCEPT_LABEL, th.as_ref());
    Ok(server_hello[range] == want)
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
