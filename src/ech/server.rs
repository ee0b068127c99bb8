//! The server half of ECH (RFC 9849 §7): the outer `encrypted_client_hello` parsed (§5, §7),
//! the payload opened with one of our keys (§7.1), ClientHelloInner checked (§7.1), the second
//! ClientHelloOuter after a HelloRetryRequest checked and opened (§7.1.1), our retry_configs
//! (§7.1), and the confirmations written into our HelloRetryRequest and ServerHello (§7.2,
//! §7.2.1). Functions of explicit inputs: the state machine (`server/ech.rs`) decides what to
//! answer, keeps the context between hellos and reports.

use super::confirm::{ACCEPT_LABEL, HRR_ACCEPT_LABEL};
use super::wire::{EchClientHello, HpkeSymmetricCipherSuite};
use super::{hpke_info, inner, EchError};
use crate::crypto::ech::EchKeyPair;
use crate::crypto::hash::HashAlg;
use crate::crypto::hpke::{self, HpkeSink, HpkeStep, ReceiverContext};
use crate::crypto::random::RandomSource;
use crate::keyschedule::transcript::Transcript;
use crate::keyschedule::NoSink;
use crate::messages::codec::DecodeError;
use crate::messages::ech::EchConfigList;
use crate::messages::enums::ExtensionType;
use crate::messages::extensions::Extension;
use crate::messages::handshake::{ClientHello, HandshakeMessage, HandshakePayload, ServerHello};

/// An outer-type `encrypted_client_hello` as a ClientHello carried it (§5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OuterEch {
    /// The suite the client sealed with.
    pub(crate) suite: HpkeSymmetricCipherSuite,
    /// The config_id of the ECHConfig it chose.
    pub(crate) config_id: u8,
    /// The encapsulated key; empty in the second ClientHelloOuter (§6.1.5).
    pub(crate) enc: Vec<u8>,
    /// The sealed EncodedClientHelloInner.
    pub(crate) payload: Vec<u8>,
}

/// The outer `encrypted_client_hello` of a ClientHello (§5). An inner-type one from the
/// network and an unknown ECHClientHelloType are illegal_parameter (§7); one that does not
/// parse is [`EchError::Decode`] (decode_error, as any malformed extension). Fatal only to a
/// server with ECH keys: one without reports what parsed and ignores the rest.
pub(crate) fn outer_ech(e: &Extension) -> Result<OuterEch, EchError> {
    let malformed = EchError::Decode(DecodeError::Invalid {
        what: "encrypted_client_hello",
    });
    let Extension::Unknown { body, .. } = e else {
        return Err(malformed);
    };
    match body.first() {
        Some(0) => {}
        Some(1) => {
            return Err(EchError::Illegal(
                "an inner-type encrypted_client_hello from the network",
            ))
        }
        Some(_) => return Err(EchError::Illegal("unknown ECHClientHelloType")),
        None => return Err(malformed),
    }
    match EchClientHello::decode(body).map_err(EchError::Decode)? {
        EchClientHello::Outer {
            suite,
            config_id,
            enc,
            payload,
        } => Ok(OuterEch {
            suite,
            config_id,
            enc,
            payload,
        }),
        EchClientHello::Inner => Err(EchError::Illegal(
            "an inner-type encrypted_client_hello from the network",
        )),
    }
}

/// What opened ClientHelloOuter's payload (§7.1).
pub(crate) struct Opened<'k> {
    /// The key whose config opened it.
    pub(crate) key: &'k EchKeyPair,
    /// The context that opened it; it opens the second ClientHelloOuter's payload too, as
    /// its second message (§7.1.1).
    pub(crate) ctx: ReceiverContext,
    /// EncodedClientHelloInner.
    pub(crate) encoded_inner: Vec<u8>,
    /// How the context was set up, when `watch` asked for it (empty otherwise).
    pub(crate) steps: Vec<HpkeStep>,
}

/// §7.1 on the first ClientHelloOuter, whose body (no header) is `outer` and extension
/// `offer`: the candidate keys are those whose config_id matches (all of them when none does
/// and `trial_decrypt`), a config of another version or without the client's suite is
/// skipped, and the payload is opened with ClientHelloOuterAAD (§5.2) by the first that works.
/// `None` when none does: a rejection, not an error (it may be GREASE). With `watch`, the
/// opening context's HPKE steps are kept for the observer.
pub(crate) fn open<'k>(
    keys: &'k [EchKeyPair],
    trial_decrypt: bool,
    offer: &OuterEch,
    outer: &[u8],
    watch: bool,
) -> Result<Option<Opened<'k>>, EchError> {
    let aad = inner::aad(outer)?;
    let id_of = |k: &&EchKeyPair| k.config.contents().map(|c| c.key_config.config_id);
    let mut candidates: Vec<_> = keys
        .iter()
        .filter(|k| id_of(k) == Some(offer.config_id))
        .collect();
    if candidates.is_empty() && trial_decrypt {
        candidates = keys.iter().collect();
    }
    for key in candidates {
        let Some(c) = key.config.contents() else {
            continue;
        };
        if !c.key_config.cipher_suites.contains(&offer.suite) {
            continue;
        }
        let Ok(suite) =
            hpke::Suite::from_ids(c.key_config.kem_id, offer.suite.kdf_id, offer.suite.aead_id)
        else {
            continue;
        };
        let info = hpke_info(&key.config.raw);
        let mut steps: Vec<HpkeStep> = Vec::new();
        let mut none = NoSink;
        let sink: &mut dyn HpkeSink = if watch { &mut steps } else { &mut none };
        let Ok(mut ctx) = hpke::setup_base_r(suite, &offer.enc, &key.key, &info, sink) else {
            continue;
        };
        let Ok(encoded_inner) = ctx.open(&aad, &offer.payload) else {
            continue;
        };
        return Ok(Some(Opened {
            key,
            ctx,
            encoded_inner,
            steps,
        }));
    }
    Ok(None)
}

/// §7.1.1: the second ClientHelloOuter (body `outer`, extension `offer`) after a
/// HelloRetryRequest that accepted ECH must keep the first one's `suite` and `config_id` and
/// send an empty enc (illegal_parameter), and its payload must open with the first context
/// `ctx` (decrypt_error). Returns EncodedClientHelloInner.
pub(crate) fn open_second(
    ctx: &mut ReceiverContext,
    suite: HpkeSymmetricCipherSuite,
    config_id: u8,
    offer: &OuterEch,
    outer: &[u8],
) -> Result<Vec<u8>, EchError> {
    if offer.suite != suite || offer.config_id != config_id {
        return Err(EchError::Illegal(
            "the second ClientHelloOuter changed the ECH cipher suite or config_id",
        ));
    }
    if !offer.enc.is_empty() {
        return Err(EchError::Illegal(
            "the second ClientHelloOuter's ECH enc is not empty",
        ));
    }
    let aad = inner::aad(outer)?;
    ctx.open(&aad, &offer.payload)
        .map_err(|_| EchError::DecryptFailed)
}

/// §7.1's checks of ClientHelloInner, decoded from an opened EncodedClientHelloInner
/// ([`inner::decode_message`]): a ClientHello with a well-formed inner-type
/// `encrypted_client_hello` (its type byte and nothing else) that offers TLS 1.3 only.
/// `ech_outer_extensions`, which "MUST NOT appear in ... ClientHelloInner" (§5.1), cannot be
/// left in it: `inner::decode` replaces the one it expands and refuses a second and a
/// reference to one in ClientHelloOuter.
pub(crate) fn inner_hello(payload: HandshakePayload) -> Result<ClientHello, EchError> {
    let HandshakePayload::ClientHello(ch) = payload else {
        return Err(EchError::Illegal("ClientHelloInner is not a ClientHello"));
    };
    match ch.find(ExtensionType::EncryptedClientHello) {
        Some(Extension::Unknown { body, .. }) if body.as_slice() == [1] => {}
        _ => {
            return Err(EchError::Illegal(
                "ClientHelloInner lacks a well-formed inner-type encrypted_client_hello",
            ))
        }
    }
    let tls13_only = match ch.find(ExtensionType::SupportedVersions) {
        Some(Extension::SupportedVersionsClient(v)) => v.iter().all(|v| v.to_repr() > 0x0303),
        _ => false,
    };
    if !tls13_only {
        return Err(EchError::Illegal(
            "ClientHelloInner offers TLS 1.2 or below",
        ));
    }
    Ok(ch)
}

/// Our retry_configs (§7.1): the ECHConfigList of every key.
pub(crate) fn retry_configs(keys: &[EchKeyPair]) -> EchConfigList {
    EchConfigList {
        configs: keys.iter().map(|k| k.config.clone()).collect(),
    }
}

/// Our HelloRetryRequest's `encrypted_client_hello` (§7.2.1): eight bytes, zero until
/// [`confirm_hello_retry`] writes the confirmation in; or, to `disguise` a rejection (§7.1,
/// §10.10.4), eight bytes drawn from `rng`. It must be the HelloRetryRequest's last extension.
pub(crate) fn hrr_extension(disguise: bool, rng: &mut dyn RandomSource) -> Extension {
    let mut body = vec![0; 8];
    if disguise {
        rng.fill(&mut body);
    }
    Extension::Unknown {
        typ: ExtensionType::EncryptedClientHello,
        body,
    }
}

/// §7.2: writes the confirmation into the last 8 bytes of our ServerHello's random: computed
/// over `inner` (the transcript through ClientHelloInner) and `sh` with those bytes zero,
/// keyed by ClientHelloInner's random. `derive` computes it ([`super::confirm::confirmation`],
/// or a connection's, which also reports it).
pub(crate) fn confirm_server_hello(
    sh: &mut ServerHello,
    inner: &Transcript,
    hash: HashAlg,
    inner_random: &[u8; 32],
    derive: impl FnOnce(HashAlg, &[u8; 32], &'static str, &[u8]) -> [u8; 8],
) {
    sh.random[24..].fill(0);
    let zeroed = HandshakeMessage::new(HandshakePayload::ServerHello(sh.clone())).encoded;
    let th = inner.hash_with_parts(&[&zeroed]);
    let c = derive(hash, inner_random, ACCEPT_LABEL, &th);
    sh.random[24..].copy_from_slice(&c);
}

/// §7.2.1: writes hrr_accept_confirmation into our HelloRetryRequest's last extension (the
/// [`hrr_extension`], zero until now): computed over `inner` (message_hash(ClientHelloInner1),
/// RFC 8446 §4.4.1) and `hrr` as it stands. `derive` as for [`confirm_server_hello`].
pub(crate) fn confirm_hello_retry(
    hrr: &mut ServerHello,
    inner: &Transcript,
    hash: HashAlg,
    inner_random: &[u8; 32],
    derive: impl FnOnce(HashAlg, &[u8; 32], &'static str, &[u8]) -> [u8; 8],
) {
    let zeroed = HandshakeMessage::new(HandshakePayload::ServerHello(hrr.clone())).encoded;
    let th = inner.hash_with_parts(&[&zeroed]);
    let c = derive(hash, inner_random, HRR_ACCEPT_LABEL, &th);
    if let Some(Extension::Unknown { body, .. }) = hrr.extensions.last_mut() {
        body.copy_from_slice(&c);
    }
}

#[cfg(test)]
mod tests {
    use super::super::client::{
        choose, ech_extension, encode_inner, hrr_accepts, seal_outer, server_hello_accepts,
        GREASE_SUITE,
    };
    use super::super::confirm::confirmation;
    use super::super::wire::decode_hrr_confirmation;
    use super::*;
    use crate::crypto::ech::EchKeyParams;
    use crate::crypto::random::SeededRandom;
    use crate::messages::enums::{
        CipherSuite, HandshakeType, NamedGroup, ProtocolVersion, SignatureScheme,
    };
    use crate::messages::extensions::OutgoingExtension;
    use crate::messages::handshake::{ClientHelloOut, DecodeContext, OutgoingMessage, HRR_RANDOM};

    fn key() -> EchKeyPair {
        let params = EchKeyParams {
            public_name: "public.example".into(),
            kem: hpke::Kem::X25519HkdfSha256,
            suites: vec![GREASE_SUITE],
            config_id: Some(7),
            maximum_name_length: 32,
        };
        EchKeyPair::generate(&params, &mut SeededRandom::from_seed(5)).unwrap()
    }

    fn server_hello(random: [u8; 32], extensions: Vec<Extension>) -> ServerHello {
        ServerHello {
            legacy_version: 0x0303,
            random,
            legacy_session_id_echo: vec![],
            cipher_suite: CipherSuite::TLS_AES_128_GCM_SHA256,
            legacy_compression_method: 0,
            extensions,
        }
    }

    fn ext(body: &[u8]) -> Extension {
        Extension::Unknown {
            typ: ExtensionType::EncryptedClientHello,
            body: body.to_vec(),
        }
    }

    #[test]
    fn a_malformed_offer_is_a_decode_error_and_an_inner_one_illegal() {
        assert!(matches!(outer_ech(&ext(&[])), Err(EchError::Decode(_))));
        assert!(matches!(outer_ech(&ext(&[0, 0])), Err(EchError::Decode(_))));
        assert!(matches!(outer_ech(&ext(&[1])), Err(EchError::Illegal(_))));
        assert!(matches!(outer_ech(&ext(&[2])), Err(EchError::Illegal(_))));
        let offer = EchClientHello::Outer {
            suite: GREASE_SUITE,
            config_id: 3,
            enc: vec![9; 32],
            payload: vec![1; 20],
        };
        let got = outer_ech(&ext(&offer.encode())).unwrap();
        assert_eq!((got.suite, got.config_id), (GREASE_SUITE, 3));
        assert_eq!((got.enc.len(), got.payload.len()), (32, 20));
    }

    /// What `ech::client` seals, `ech::server` opens: the first ClientHelloOuter with the
    /// setup's context, the second (empty enc, §6.1.5) with the same context's next nonce.
    #[test]
    fn what_the_client_seals_the_server_opens() {
        let key = key();
        let keys = std::slice::from_ref(&key);
        let list = EchConfigList {
            configs: vec![key.config.clone()],
        };
        let chosen = choose(&list).unwrap();
        let mut rng = SeededRandom::from_seed(9);
        let (enc, mut sender) = chosen.setup(&mut rng, &mut NoSink).unwrap();
        let share = [0x42u8; 32];
        let shares = [(NamedGroup::X25519, &share[..])];
        let inner = ClientHelloOut {
            legacy_version: 0x0303,
            random: [1; 32],
            legacy_session_id: &[],
            cipher_suites: &[CipherSuite::TLS_AES_128_GCM_SHA256],
            legacy_compression_methods: &[0],
            extensions: vec![
                OutgoingExtension::HostName(b"inner.example"),
                OutgoingExtension::SupportedGroups(&[NamedGroup::X25519]),
                OutgoingExtension::KeyShareClient(&shares),
                OutgoingExtension::SupportedVersionsClient(&[ProtocolVersion::TLSv1_3]),
                OutgoingExtension::SignatureAlgorithms(&[SignatureScheme::ed25519]),
                ech_extension(EchClientHello::Inner.encode()),
            ],
        };
        let mut inner_msg = Vec::new();
        OutgoingMessage::ClientHello(&inner).encode_into(&mut inner_msg);
        let encoded = encode_inner(&inner, &inner_msg, chosen.maximum_name_length).unwrap();
        assert_eq!(encoded.bytes.len() % 32, 0);

        let mut ctx = None;
        let mut first = None;
        for (i, enc) in [enc.as_slice(), &[]].into_iter().enumerate() {
            let outer = seal_outer(
                &chosen,
                &mut sender,
                [2; 32],
                enc,
                &inner,
                &encoded.bytes,
                None,
            )
            .unwrap();
            let mut msg = Vec::new();
            OutgoingMessage::ClientHello(&outer).encode_into(&mut msg);
            let HandshakePayload::ClientHello(ch) =
                HandshakeMessage::decode(&msg, DecodeContext::default())
                    .unwrap()
                    .payload
            else {
                panic!("a ClientHello");
            };
            assert_eq!(ch.host_name().as_deref(), Some("public.example"));
            let offer = outer_ech(ch.find(ExtensionType::EncryptedClientHello).unwrap()).unwrap();
            assert_eq!(offer.payload.len(), chosen.payload_len(encoded.bytes.len()));
            let opened = match ctx.as_mut() {
                None => {
                    let o = open(keys, false, &offer, &msg[4..], true)
                        .unwrap()
                        .expect("the key opens it");
                    assert!(!o.steps.is_empty());
                    ctx = Some(o.ctx);
                    first = Some((msg.clone(), offer.clone()));
                    o.encoded_inner
                }
                Some(c) => open_second(c, chosen.symmetric, 7, &offer, &msg[4..]).unwrap(),
            };
            assert_eq!(opened, encoded.bytes, "hello {i}");
            let rebuilt = inner::decode_message(&opened, &msg[4..]).unwrap();
            assert_eq!(rebuilt, inner_msg);
            let decoded = HandshakeMessage::decode(&rebuilt, DecodeContext::default()).unwrap();
            assert_eq!(inner_hello(decoded.payload).unwrap().random, [1; 32]);
        }
        // Under another config_id the key is tried only with trial decryption (§7.1).
        let (msg, mut offer) = first.unwrap();
        offer.config_id = 8;
        assert!(open(keys, false, &offer, &msg[4..], false)
            .unwrap()
            .is_none());
        let o = open(keys, true, &offer, &msg[4..], false).unwrap().unwrap();
        assert_eq!(o.encoded_inner, encoded.bytes);
        assert!(o.steps.is_empty());
        // A hello without an outer ECH extension has no ClientHelloOuterAAD.
        assert!(open(keys, true, &offer, &inner_msg[4..], false).is_err());
        assert_eq!(retry_configs(keys), list);
    }

    /// The confirmations `ech::server` writes are the ones `ech::client` checks (§7.2, §7.2.1).
    #[test]
    fn the_confirmations_written_are_the_ones_checked() {
        let hash = HashAlg::Sha256;
        let inner_random = [3u8; 32];
        let mut transcript = Transcript::with_hash(hash);
        transcript.add(HandshakeType::ClientHello, &[1, 0, 0, 2, 3, 3]);
        let mut sh = server_hello([0xaa; 32], vec![]);
        confirm_server_hello(&mut sh, &transcript, hash, &inner_random, confirmation);
        assert_eq!(sh.random[..24], [0xaa; 24]);
        let mut msg = HandshakeMessage::new(HandshakePayload::ServerHello(sh)).encoded;
        let ok = server_hello_accepts(&transcript, &inner_random, &msg, hash, confirmation);
        assert_eq!(ok, Ok(true));
        let other = [4u8; 32];
        let no = server_hello_accepts(&transcript, &other, &msg, hash, confirmation);
        assert_eq!(no, Ok(false));
        msg[37] ^= 1;
        let no = server_hello_accepts(&transcript, &inner_random, &msg, hash, confirmation);
        assert_eq!(no, Ok(false));
        let short =
            server_hello_accepts(&transcript, &inner_random, &msg[..37], hash, confirmation);
        assert!(short.is_err());

        let exts = vec![
            Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3),
            hrr_extension(false, &mut SeededRandom::from_seed(1)),
        ];
        let mut hrr = server_hello(HRR_RANDOM, exts);
        let mut retry = transcript.clone();
        retry.replace_with_message_hash().unwrap();
        confirm_hello_retry(&mut hrr, &retry, hash, &inner_random, confirmation);
        let Some(Extension::Unknown { body, .. }) = hrr.extensions.last() else {
            panic!("the ECH extension last");
        };
        let got = decode_hrr_confirmation(body).unwrap();
        assert_ne!(got, [0; 8]);
        let msg = HandshakeMessage::new(HandshakePayload::ServerHello(hrr)).encoded;
        assert!(hrr_accepts(
            &retry,
            &inner_random,
            &msg,
            Some(got),
            hash,
            confirmation
        ));
        assert!(!hrr_accepts(
            &retry,
            &inner_random,
            &msg,
            None,
            hash,
            confirmation
        ));
        let mut wrong = got;
        wrong[0] ^= 1;
        assert!(!hrr_accepts(
            &retry,
            &inner_random,
            &msg,
            Some(wrong),
            hash,
            confirmation
        ));
        // Disguised, the eight bytes are random (§7.1, §10.10.4).
        let Extension::Unknown { body, .. } = hrr_extension(true, &mut SeededRandom::from_seed(1))
        else {
            panic!("unknown");
        };
        assert_ne!(body, [0; 8]);
    }
}
