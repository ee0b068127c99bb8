//! Wire-format tests for `tls13lab::messages`: every handshake message of RFC 8448 decodes,
//! re-encodes byte-exact, has a tiling layout and rejects every truncation and extension; and
//! property tests round-trip generated messages and extensions.

use proptest::prelude::*;
use proptest::strategy::Union;
use serde_json::Value;
use std::sync::OnceLock;
use tls13lab::messages::layout::check_tiling;
use tls13lab::messages::*;

// ---------------------------------------------------------------------------------------------
// RFC 8448 vectors
// ---------------------------------------------------------------------------------------------

/// One whole handshake message from RFC 8448.
struct Vector {
    label: String,
    bytes: Vec<u8>,
    /// Hash.length of the section's suite (for Finished).
    hash_len: usize,
}

impl Vector {
    fn ctx(&self) -> DecodeContext {
        DecodeContext {
            hash_len: self.hash_len,
        }
    }
}

fn json() -> &'static Value {
    static JSON: OnceLock<Value> = OnceLock::new();
    JSON.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/rfc8448.json");
        let text = std::fs::read_to_string(path).expect("read rfc8448.json");
        serde_json::from_str(&text).expect("parse rfc8448.json")
    })
}

fn hex_field(v: &Value, key: &str) -> Vec<u8> {
    hex::decode(v[key].as_str().unwrap_or_else(|| panic!("no {key} in {v}"))).unwrap()
}

/// Splits a record's handshake content into whole messages.
fn split_messages(mut content: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (_, len) = handshake_header(content).expect("handshake header");
        let (msg, rest) = content.split_at(4 + len);
        out.push(msg.to_vec());
        content = rest;
    }
    out
}

/// Every handshake message of every section: the complete messages carried by the records,
/// plus every "construct" step. A construct step that is not a whole message must be a strict
/// prefix of a record's message (RFC 8448 §4 prints the ClientHello without its binders).
fn vectors() -> &'static [Vector] {
    static VECTORS: OnceLock<Vec<Vector>> = OnceLock::new();
    VECTORS.get_or_init(|| {
        let mut out = Vec::new();
        for (num, section) in json()["sections"].as_object().unwrap() {
            let hash_len = match section["cipher_suite"]["hash"].as_str() {
                Some("sha256") => 32,
                Some("sha384") => 48,
                other => panic!("§{num}: unknown hash {other:?}"),
            };
            let mut from_records = Vec::new();
            for rec in section["records"].as_array().unwrap() {
                if rec["inner_content_type"] == "handshake" {
                    for (i, m) in split_messages(&hex_field(rec, "payload"))
                        .into_iter()
                        .enumerate()
                    {
                        from_records.push(Vector {
                            label: format!("§{num} record trace_n={} #{i}", rec["trace_n"]),
                            bytes: m,
                            hash_len,
                        });
                    }
                }
            }
            for m in section["handshake_messages"].as_array().unwrap() {
                let bytes = hex_field(m, "hex");
                let label = format!("§{num} {} ({})", m["rfc_step"], m["type"]);
                if HandshakeMessage::decode(&bytes, DecodeContext { hash_len }).is_err() {
                    assert!(
                        from_records
                            .iter()
                            .any(|v| v.bytes.len() > bytes.len() && v.bytes.starts_with(&bytes)),
                        "{label} does not decode and is not a prefix of a record's message"
                    );
                    continue;
                }
                out.push(Vector {
                    label,
                    bytes,
                    hash_len,
                });
            }
            out.extend(from_records);
        }
        out
    })
}

#[test]
fn rfc8448_has_all_sections_and_messages() {
    let sections: Vec<&String> = json()["sections"].as_object().unwrap().keys().collect();
    assert_eq!(sections, ["3", "4", "5", "6", "7"]);
    // 40 construct steps (one of them the §4 binder-less prefix) + 40 messages from records.
    assert_eq!(vectors().len(), 39 + 40);
}

#[test]
fn rfc8448_messages_decode_and_reencode_byte_exact() {
    for v in vectors() {
        let msg = HandshakeMessage::decode(&v.bytes, v.ctx())
            .unwrap_or_else(|e| panic!("{}: {e}", v.label));
        assert_eq!(msg.encoded, v.bytes, "{}", v.label);
        let again = HandshakeMessage::new(msg.payload.clone());
        assert_eq!(again.encoded, v.bytes, "{}: re-encoding differs", v.label);
        assert_eq!(again.typ(), msg.typ());
        assert!(
            !matches!(msg.payload, HandshakePayload::Unknown { .. }),
            "{}: every RFC 8448 message type is modelled",
            v.label
        );
    }
}

#[test]
fn rfc8448_known_extensions_are_parsed() {
    // Every extension in RFC 8448 is modelled in its context, except the TLS 1.2
    // session_ticket (RFC 5077) that its ClientHellos also offer: that one stays raw.
    fn check(label: &str, exts: &[Extension]) {
        for e in exts {
            assert!(
                !matches!(e, Extension::Unknown { typ, .. } if *typ != ExtensionType::SessionTicket),
                "{label}: unparsed extension {e:?}"
            );
        }
    }
    for v in vectors() {
        let msg = HandshakeMessage::decode(&v.bytes, v.ctx()).unwrap();
        match &msg.payload {
            HandshakePayload::ClientHello(ch) => check(&v.label, &ch.extensions),
            HandshakePayload::ServerHello(sh) => check(&v.label, &sh.extensions),
            HandshakePayload::EncryptedExtensions(e) => check(&v.label, e),
            HandshakePayload::CertificateRequest(cr) => check(&v.label, &cr.extensions),
            HandshakePayload::NewSessionTicket(nst) => check(&v.label, &nst.extensions),
            HandshakePayload::Certificate(c) => c
                .entries
                .iter()
                .for_each(|e| check(&v.label, &e.extensions)),
            _ => {}
        }
    }
}

/// Checks the conventions of the layout beyond tiling: header first, extensions named
/// `name (number)` with "type" and "length" children.
fn check_layout(label: &str, spans: &[Span], len: usize) {
    check_tiling(spans, len).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(spans[0].name, "msg_type", "{label}");
    assert_eq!(spans[1].name, "length", "{label}");
    fn walk(label: &str, s: &Span) {
        if s.name.ends_with(')') && s.name.contains(" (") {
            let names: Vec<&str> = s.children.iter().take(2).map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["type", "length"], "{label}: {}", s.name);
        }
        s.children.iter().for_each(|c| walk(label, c));
    }
    spans.iter().for_each(|s| walk(label, s));
}

#[test]
fn rfc8448_layouts_tile_exactly() {
    for v in vectors() {
        let msg = HandshakeMessage::decode(&v.bytes, v.ctx()).unwrap();
        check_layout(&v.label, &msg.layout(), v.bytes.len());
    }
}

#[test]
fn rfc8448_client_hello_layout() {
    let v = &vectors()[0];
    let msg = HandshakeMessage::decode(&v.bytes, v.ctx()).unwrap();
    assert_eq!(msg.typ(), HandshakeType::ClientHello);
    let spans = msg.layout();
    let top: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        top,
        [
            "msg_type",
            "length",
            "legacy_version",
            "random",
            "legacy_session_id",
            "cipher_suites",
            "legacy_compression_methods",
            "extensions"
        ]
    );
    let exts: Vec<&str> = spans[7].children.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        exts,
        [
            "length",
            "server_name (0)",
            "renegotiation_info (65281)",
            "supported_groups (10)",
            "session_ticket (35)",
            "key_share (51)",
            "supported_versions (43)",
            "signature_algorithms (13)",
            "psk_key_exchange_modes (45)",
            "record_size_limit (28)",
        ]
    );
    let key_share: Vec<&str> = spans[7].children[5]
        .children
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(key_share, ["type", "length", "client_shares"]);
}

#[test]
fn rfc8448_every_truncation_is_an_error() {
    for v in vectors() {
        for n in 0..v.bytes.len() {
            assert!(
                HandshakeMessage::decode(&v.bytes[..n], v.ctx()).is_err(),
                "{}: accepted a {n}-byte truncation",
                v.label
            );
        }
    }
}

/// Rewrites the 24-bit header length to match `body`.
fn with_body(typ: u8, body: &[u8]) -> Vec<u8> {
    let len = (body.len() as u32).to_be_bytes();
    let mut out = vec![typ, len[1], len[2], len[3]];
    out.extend_from_slice(body);
    out
}

#[test]
fn rfc8448_truncated_bodies_with_fixed_up_length_are_errors() {
    // Stronger than cutting the message: the outer length agrees, so an inner length or a
    // fixed-size field has to catch it.
    for v in vectors() {
        let body = &v.bytes[4..];
        for n in 0..body.len() {
            let cut = with_body(v.bytes[0], &body[..n]);
            assert!(
                HandshakeMessage::decode(&cut, v.ctx()).is_err(),
                "{}: accepted the body cut to {n} bytes",
                v.label
            );
        }
    }
}

#[test]
fn rfc8448_extended_bodies_are_errors() {
    for v in vectors() {
        for extra in [&[0u8][..], &[0, 0], &[0xff, 0, 0, 0]] {
            let mut body = v.bytes[4..].to_vec();
            body.extend_from_slice(extra);
            let long = with_body(v.bytes[0], &body);
            assert!(
                matches!(
                    HandshakeMessage::decode(&long, v.ctx()),
                    Err(DecodeError::Trailing { .. })
                ),
                "{}: accepted {} trailing bytes",
                v.label,
                extra.len()
            );
        }
    }
}

#[test]
fn rfc8448_partial_client_hello_for_binders() {
    // §4 prints the ClientHello up to (excluding) the binders; that is exactly what
    // binders_len() cuts off the complete message (RFC 8446 §4.2.11.2).
    let s4 = &json()["sections"]["4"];
    let prefix = hex_field(&s4["handshake_messages"][0], "hex");
    let complete = split_messages(&hex_field(&s4["records"][0], "payload")).remove(0);
    let msg = HandshakeMessage::decode(&complete, DecodeContext { hash_len: 32 }).unwrap();
    let HandshakePayload::ClientHello(ch) = &msg.payload else {
        panic!("not a ClientHello")
    };
    assert!(matches!(
        ch.extensions.last(),
        Some(Extension::PreSharedKeyClient(p)) if p.identities.len() == 1 && p.binders.len() == 1
    ));
    assert_eq!(ch.binders_len(), 35);
    assert_eq!(&complete[..complete.len() - ch.binders_len()], &prefix[..]);
}

#[test]
fn rfc8448_hello_retry_request() {
    let s5 = &json()["sections"]["5"];
    let bytes = hex_field(&s5["handshake_messages"][1], "hex");
    let msg = HandshakeMessage::decode(&bytes, DecodeContext::default()).unwrap();
    let HandshakePayload::ServerHello(hrr) = &msg.payload else {
        panic!("not a ServerHello")
    };
    assert!(hrr.is_hello_retry_request());
    assert_eq!(hrr.random, HRR_RANDOM);
    assert_eq!(
        hrr.find(ExtensionType::KeyShare),
        Some(&Extension::KeyShareHrr(NamedGroup::secp256r1))
    );
    assert_eq!(
        hrr.find(ExtensionType::SupportedVersions),
        Some(&Extension::SupportedVersionsServer(
            ProtocolVersion::TLSv1_3
        ))
    );
    assert!(matches!(
        hrr.find(ExtensionType::Cookie),
        Some(Extension::Cookie(_))
    ));

    // The ordinary ServerHello of §3 is not an HRR and has a full key share.
    let sh = hex_field(&json()["sections"]["3"]["handshake_messages"][1], "hex");
    let msg = HandshakeMessage::decode(&sh, DecodeContext::default()).unwrap();
    let HandshakePayload::ServerHello(sh) = &msg.payload else {
        panic!("not a ServerHello")
    };
    assert!(!sh.is_hello_retry_request());
    assert!(matches!(
        sh.find(ExtensionType::KeyShare),
        Some(Extension::KeyShareServer(KeyShareEntry { group: NamedGroup::X25519, key_exchange }))
            if key_exchange.len() == 32
    ));
}

#[test]
fn rfc8448_alerts_and_change_cipher_spec() {
    for (num, section) in json()["sections"].as_object().unwrap() {
        for rec in section["records"].as_array().unwrap() {
            let payload = hex_field(rec, "payload");
            match rec["inner_content_type"].as_str() {
                Some("alert") => {
                    let alert = Alert::decode(&payload).unwrap();
                    assert_eq!(alert.description, AlertDescription::CloseNotify, "§{num}");
                    assert_eq!(alert.encode().as_slice(), payload);
                }
                Some("change_cipher_spec") => {
                    assert_eq!(ChangeCipherSpec::decode(&payload), Ok(ChangeCipherSpec));
                }
                _ => {}
            }
        }
    }
}

#[test]
fn duplicate_extension_maps_to_illegal_parameter() {
    // §3 EncryptedExtensions with its last extension (server_name ack) doubled.
    let ee = hex_field(&json()["sections"]["3"]["handshake_messages"][2], "hex");
    let mut body = ee[4..].to_vec();
    body.extend_from_slice(&[0, 0, 0, 0]);
    let ext_len = u16::from_be_bytes([body[0], body[1]]) + 4;
    body[..2].copy_from_slice(&ext_len.to_be_bytes());
    let err = HandshakeMessage::decode(&with_body(8, &body), DecodeContext::default()).unwrap_err();
    assert_eq!(
        err,
        DecodeError::DuplicateExtension(ExtensionType::ServerName)
    );
    assert_eq!(err.alert(), AlertDescription::IllegalParameter);
}

// ---------------------------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------------------------

fn bytes(min: usize, max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), min..=max)
}

fn list<T: std::fmt::Debug>(
    s: impl Strategy<Value = T>,
    min: usize,
    max: usize,
) -> impl Strategy<Value = Vec<T>> {
    prop::collection::vec(s, min..=max)
}

fn code_point<T: From<u16> + std::fmt::Debug>() -> impl Strategy<Value = T> {
    any::<u16>().prop_map(T::from)
}

fn key_share_entry() -> impl Strategy<Value = KeyShareEntry> {
    (code_point(), bytes(1, 300)).prop_map(|(group, key_exchange)| KeyShareEntry {
        group,
        key_exchange,
    })
}

fn offered_psks() -> impl Strategy<Value = OfferedPsks> {
    let identity = (bytes(1, 100), any::<u32>()).prop_map(|(identity, age)| PskIdentity {
        identity,
        obfuscated_ticket_age: age,
    });
    (list(identity, 1, 3), list(bytes(32, 64), 1, 3)).prop_map(|(identities, binders)| {
        OfferedPsks {
            identities,
            binders,
        }
    })
}

/// Extension types that decode as [`Extension::Unknown`] in `ctx`.
fn unknown_extension(ctx: ExtensionContext) -> BoxedStrategy<Extension> {
    use ExtensionType as T;
    let mut never_modelled = vec![
        T::MaxFragmentLength,
        T::EcPointFormats,
        T::UseSrtp,
        T::ExtendedMasterSecret,
        T::SessionTicket,
        T::OidFilters,
        T::EncryptedClientHello,
    ];
    if ctx != ExtensionContext::ClientHello {
        never_modelled.extend([T::Padding, T::PostHandshakeAuth, T::PskKeyExchangeModes]);
    }
    let typ = prop_oneof![
        any::<u16>()
            .prop_map(ExtensionType::from)
            .prop_filter("unassigned", |t| matches!(t, T::Unknown(_))),
        prop::sample::select(never_modelled),
    ];
    (typ, bytes(0, 40))
        .prop_map(|(typ, body)| Extension::Unknown { typ, body })
        .boxed()
}

/// Any extension as it may appear in a `ctx` message.
fn extension(ctx: ExtensionContext) -> BoxedStrategy<Extension> {
    use Extension as E;
    use ExtensionContext as C;
    let server_names = list(
        (any::<u8>(), bytes(1, 40)).prop_map(|(t, name)| ServerName {
            typ: t.into(),
            name,
        }),
        1,
        3,
    )
    .prop_map(E::ServerName)
    .boxed();
    let groups = list(code_point(), 1, 8)
        .prop_map(E::SupportedGroups)
        .boxed();
    let sigs = list(code_point(), 1, 8)
        .prop_map(E::SignatureAlgorithms)
        .boxed();
    let sigs_cert = list(code_point(), 1, 8)
        .prop_map(E::SignatureAlgorithmsCert)
        .boxed();
    let alpn = list(bytes(1, 20), 1, 4).prop_map(E::Alpn).boxed();
    let early_empty = Just(E::EarlyDataEmpty).boxed();
    let rsl = any::<u16>().prop_map(E::RecordSizeLimit).boxed();
    let cookie = bytes(1, 300).prop_map(E::Cookie).boxed();
    let cas = list(bytes(1, 50), 1, 3)
        .prop_map(E::CertificateAuthorities)
        .boxed();
    let status = bytes(0, 40).prop_map(E::StatusRequest).boxed();
    let sct = bytes(0, 40).prop_map(E::Sct).boxed();
    let reneg = bytes(0, 10).prop_map(E::RenegotiationInfo).boxed();
    let sv_server = code_point().prop_map(E::SupportedVersionsServer).boxed();
    let ack = Just(E::ServerNameAck).boxed();

    let mut options = vec![unknown_extension(ctx)];
    match ctx {
        C::ClientHello => options.extend([
            server_names,
            groups,
            sigs,
            sigs_cert,
            alpn,
            list(code_point(), 1, 8)
                .prop_map(E::SupportedVersionsClient)
                .boxed(),
            list(key_share_entry(), 0, 3)
                .prop_map(E::KeyShareClient)
                .boxed(),
            list(any::<u8>().prop_map(PskKeyExchangeMode::from), 1, 4)
                .prop_map(E::PskKeyExchangeModes)
                .boxed(),
            offered_psks().prop_map(E::PreSharedKeyClient).boxed(),
            early_empty,
            cookie,
            rsl,
            bytes(0, 100).prop_map(E::Padding).boxed(),
            Just(E::PostHandshakeAuth).boxed(),
            cas,
            status,
            sct,
            reneg,
        ]),
        C::ServerHello => options.extend([
            ack,
            sv_server,
            key_share_entry().prop_map(E::KeyShareServer).boxed(),
            any::<u16>().prop_map(E::PreSharedKeyServer).boxed(),
            reneg,
        ]),
        C::HelloRetryRequest => options.extend([
            sv_server,
            code_point().prop_map(E::KeyShareHrr).boxed(),
            cookie,
        ]),
        C::EncryptedExtensions => options.extend([ack, groups, alpn, early_empty, rsl]),
        C::CertificateRequest => options.extend([sigs, sigs_cert, cas, status, sct]),
        C::Certificate => options.extend([status, sct]),
        C::NewSessionTicket => options.push(any::<u32>().prop_map(E::EarlyDataMax).boxed()),
    }
    Union::new(options).boxed()
}

/// A valid extension block for `ctx`: `first` (what the RFC requires there, which also meets
/// the block's minimum length) followed by others, one per type.
fn extension_block(
    ctx: ExtensionContext,
    first: Option<Extension>,
    max: usize,
) -> impl Strategy<Value = Vec<Extension>> {
    list(extension(ctx), 0, max).prop_map(move |more| {
        let mut out: Vec<Extension> = first.iter().cloned().collect();
        for e in more {
            if out.iter().all(|o| o.typ() != e.typ()) {
                out.push(e);
            }
        }
        out
    })
}

fn all_contexts() -> impl Strategy<Value = ExtensionContext> {
    use ExtensionContext as C;
    prop::sample::select(vec![
        C::ClientHello,
        C::ServerHello,
        C::HelloRetryRequest,
        C::EncryptedExtensions,
        C::CertificateRequest,
        C::Certificate,
        C::NewSessionTicket,
    ])
}

fn client_hello() -> impl Strategy<Value = HandshakePayload> {
    // Two versions: the block must be at least 8 bytes (RFC 8446 §4.1.2).
    let first = Extension::SupportedVersionsClient(vec![
        ProtocolVersion::TLSv1_3,
        ProtocolVersion::TLSv1_2,
    ]);
    (
        any::<u16>(),
        any::<[u8; 32]>(),
        bytes(0, 32),
        list(code_point(), 1, 10),
        bytes(1, 4),
        extension_block(ExtensionContext::ClientHello, Some(first), 8),
    )
        .prop_map(|(v, random, sid, suites, comp, extensions)| {
            HandshakePayload::ClientHello(ClientHello {
                legacy_version: v,
                random,
                legacy_session_id: sid,
                cipher_suites: suites,
                legacy_compression_methods: comp,
                extensions,
            })
        })
}

fn server_hello() -> impl Strategy<Value = HandshakePayload> {
    any::<bool>().prop_flat_map(|hrr| {
        let (random, ctx) = if hrr {
            (
                Just(HRR_RANDOM).boxed(),
                ExtensionContext::HelloRetryRequest,
            )
        } else {
            (
                any::<[u8; 32]>()
                    .prop_filter("not HRR", |r| *r != HRR_RANDOM)
                    .boxed(),
                ExtensionContext::ServerHello,
            )
        };
        let first = Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3);
        (
            any::<u16>(),
            random,
            bytes(0, 32),
            code_point(),
            any::<u8>(),
            extension_block(ctx, Some(first), 4),
        )
            .prop_map(|(v, random, sid, suite, comp, extensions)| {
                HandshakePayload::ServerHello(ServerHello {
                    legacy_version: v,
                    random,
                    legacy_session_id_echo: sid,
                    cipher_suite: suite,
                    legacy_compression_method: comp,
                    extensions,
                })
            })
    })
}

fn certificate() -> impl Strategy<Value = HandshakePayload> {
    let entry = (
        bytes(1, 300),
        extension_block(ExtensionContext::Certificate, None, 2),
    )
        .prop_map(|(cert_data, extensions)| CertificateEntry {
            cert_data,
            extensions,
        });
    (bytes(0, 10), list(entry, 0, 3)).prop_map(|(context, entries)| {
        HandshakePayload::Certificate(CertificatePayload { context, entries })
    })
}

fn any_payload() -> impl Strategy<Value = HandshakePayload> {
    use HandshakePayload as P;
    let sig_algs = Extension::SignatureAlgorithms(vec![SignatureScheme::ed25519]);
    let unknown_type = any::<u8>()
        .prop_map(HandshakeType::from)
        .prop_filter("not modelled", |t| {
            matches!(
                t,
                HandshakeType::Unknown(_)
                    | HandshakeType::HelloRequest
                    | HandshakeType::ServerKeyExchange
                    | HandshakeType::ServerHelloDone
                    | HandshakeType::ClientKeyExchange
                    | HandshakeType::CertificateStatus
            )
        });
    prop_oneof![
        client_hello(),
        server_hello(),
        extension_block(ExtensionContext::EncryptedExtensions, None, 5)
            .prop_map(P::EncryptedExtensions),
        (
            bytes(0, 10),
            extension_block(ExtensionContext::CertificateRequest, Some(sig_algs), 4)
        )
            .prop_map(
                |(context, extensions)| P::CertificateRequest(CertificateRequest {
                    context,
                    extensions
                })
            ),
        certificate(),
        (code_point(), bytes(0, 300)).prop_map(|(scheme, signature)| P::CertificateVerify(
            CertificateVerify { scheme, signature }
        )),
        bytes(32, 32).prop_map(P::Finished),
        (
            any::<u32>(),
            any::<u32>(),
            bytes(0, 255),
            bytes(1, 300),
            extension_block(ExtensionContext::NewSessionTicket, None, 2)
        )
            .prop_map(|(lifetime, age_add, nonce, ticket, extensions)| {
                P::NewSessionTicket(NewSessionTicket {
                    lifetime,
                    age_add,
                    nonce,
                    ticket,
                    extensions,
                })
            }),
        Just(P::EndOfEarlyData),
        any::<u8>().prop_map(|r| P::KeyUpdate(r.into())),
        bytes(32, 32).prop_map(P::MessageHash),
        (unknown_type, bytes(0, 50)).prop_map(|(typ, body)| P::Unknown { typ, body }),
    ]
}

/// A mutation of one RFC 8448 message: one byte replaced.
fn mutated_vector() -> impl Strategy<Value = (usize, Vec<u8>)> {
    (
        0..vectors().len(),
        any::<prop::sample::Index>(),
        any::<u8>(),
    )
        .prop_map(|(i, at, b)| {
            let mut bytes = vectors()[i].bytes.clone();
            let at = at.index(bytes.len());
            bytes[at] = b;
            (i, bytes)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn extensions_round_trip((ctx, ext) in all_contexts().prop_flat_map(|c| (Just(c), extension(c)))) {
        let mut w = Writer::new();
        ext.encode(&mut w);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        let back = Extension::decode(&mut r, ctx);
        prop_assert_eq!(back, Ok(ext.clone()));
        prop_assert!(r.is_empty());
        // Extension blocks (length prefix + each) round-trip too.
        let mut w = Writer::new();
        encode_extensions(&mut w, std::slice::from_ref(&ext));
        let block = w.into_bytes();
        if block.len() - 2 >= match ctx {
            ExtensionContext::ClientHello => 8,
            ExtensionContext::ServerHello | ExtensionContext::HelloRetryRequest => 6,
            ExtensionContext::CertificateRequest => 2,
            _ => 0,
        } {
            prop_assert_eq!(decode_extensions(&mut Reader::new(&block), ctx), Ok(vec![ext]));
        }
    }

    #[test]
    fn handshake_messages_round_trip(payload in any_payload()) {
        let msg = HandshakeMessage::new(payload.clone());
        let back = HandshakeMessage::decode(&msg.encoded, DecodeContext { hash_len: 32 });
        prop_assert_eq!(back.as_ref().map(|m| &m.payload), Ok(&payload));
        prop_assert_eq!(handshake_header(&msg.encoded), Some((payload.typ(), msg.encoded.len() - 4)));
        check_layout("generated", &msg.layout(), msg.encoded.len());
    }

    #[test]
    fn mutated_rfc8448_messages_never_panic_and_reencode_exactly((i, bytes) in mutated_vector()) {
        if let Ok(msg) = HandshakeMessage::decode(&bytes, vectors()[i].ctx()) {
            prop_assert_eq!(HandshakeMessage::new(msg.payload).encoded, bytes);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(typ in any::<u8>(), body in bytes(0, 200)) {
        let msg = with_body(typ, &body);
        if let Ok(m) = HandshakeMessage::decode(&msg, DecodeContext::default()) {
            prop_assert_eq!(HandshakeMessage::new(m.payload).encoded, msg);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ECHConfigList (RFC 9849 §4)
// ---------------------------------------------------------------------------------------------

mod ech_config {
    use tls13lab::crypto::cert::{base64_decode, pem_blocks};
    use tls13lab::messages::ech::*;
    use tls13lab::messages::enums::{HpkeAeadId, HpkeKdfId, HpkeKemId};
    use tls13lab::messages::DecodeError;

    /// The ECHConfigList of `openssl ech -public_name public.example` (OpenSSL 4.0.3), from
    /// tests/vectors/ech/openssl-x25519.pem.
    fn openssl_list() -> Vec<u8> {
        let pem = include_str!("vectors/ech/openssl-x25519.pem");
        pem_blocks(pem, "ECHCONFIG").unwrap().remove(0)
    }

    /// A list with a 0xfe0d config carrying an unknown KEM, two suites (one unknown) and two
    /// extensions (one mandatory), then a config of an unknown version.
    fn exotic_list() -> Vec<u8> {
        hex::decode(concat!(
            "003b",
            "fe0d",
            "0029",
            "07",
            "0a0a",
            "0003",
            "010203",
            "0008",
            "0001",
            "0002",
            "1234",
            "ffff",
            "20",
            "09",
            "612e6578616d706c65",
            "000a",
            "0001",
            "0000",
            "fa00",
            "0002",
            "abcd",
            "fe0e",
            "000a",
            "00112233445566778899",
        ))
        .unwrap()
    }

    #[test]
    fn openssl_config_decodes_and_round_trips() {
        let bytes = openssl_list();
        let list = EchConfigList::decode(&bytes).unwrap();
        assert_eq!(list.encode(), bytes);
        let [c] = list.configs.as_slice() else {
            panic!("{list:?}")
        };
        assert_eq!(c.version, ECH_VERSION);
        assert_eq!(c.raw, bytes[2..]);
        let k = &c.contents().unwrap().key_config;
        assert_eq!(k.kem_id, HpkeKemId::DhkemX25519HkdfSha256);
        assert_eq!(k.public_key.len(), 32);
        assert_eq!(
            k.cipher_suites,
            [HpkeSymmetricCipherSuite {
                kdf_id: HpkeKdfId::HkdfSha256,
                aead_id: HpkeAeadId::Aes128Gcm
            }]
        );
        let contents = c.contents().unwrap();
        assert_eq!(contents.public_name_str(), Some("public.example"));
        assert_eq!(contents.maximum_name_length, 0);
        assert!(contents.extensions.is_empty());
        // The same bytes as base64 on a command line.
        assert_eq!(
            base64_decode("AEH+DQA9AwAgACCFE8T4blJK7zbl0wXKfFWKjxXXKS+GrvvZcZiVY8/4LwAEAAEAAQAOcHVibGljLmV4YW1wbGUAAA==").unwrap(),
            bytes
        );
    }

    #[test]
    fn unknown_versions_kems_suites_and_extensions_are_kept() {
        let bytes = exotic_list();
        let list = EchConfigList::decode(&bytes).unwrap();
        assert_eq!(list.encode(), bytes);
        assert_eq!(list.configs.len(), 2);
        let c = list.configs[0].contents().unwrap();
        assert_eq!(c.key_config.kem_id, HpkeKemId::Unknown(0x0a0a));
        assert_eq!(
            c.key_config.cipher_suites[1].aead_id,
            HpkeAeadId::ExportOnly
        );
        assert_eq!(
            c.key_config.cipher_suites[1].kdf_id,
            HpkeKdfId::Unknown(0x1234)
        );
        assert_eq!(c.maximum_name_length, 32);
        assert_eq!(c.extensions.len(), 2);
        assert!(!c.extensions[0].is_mandatory() && c.extensions[1].is_mandatory());
        assert_eq!(list.configs[1].version, 0xfe0e);
        assert_eq!(
            list.configs[1].body,
            EchConfigBody::Unknown(hex::decode("00112233445566778899").unwrap())
        );
        assert_eq!(list.configs[1].raw, bytes[bytes.len() - 14..]);
        // A config built from its parts encodes as the decoded one did.
        assert_eq!(EchConfig::new(c.clone()).raw, list.configs[0].raw);
    }

    #[test]
    fn every_truncation_and_extension_is_an_error() {
        for bytes in [openssl_list(), exotic_list()] {
            for n in 0..bytes.len() {
                assert!(EchConfigList::decode(&bytes[..n]).is_err(), "{n}");
            }
            let mut long = bytes.clone();
            long.push(0);
            assert_eq!(
                EchConfigList::decode(&long),
                Err(DecodeError::Trailing {
                    what: "ECHConfigList"
                })
            );
        }
    }

    #[test]
    fn malformed_contents_are_errors() {
        let good = exotic_list();
        // Each edit keeps every length consistent, so only the named rule can fail.
        let cases: &[(&str, usize, &[u8], DecodeError)] = &[
            // The second extension's type made equal to the first.
            (
                "duplicate extension",
                41,
                &[0x00, 0x01],
                DecodeError::Invalid {
                    what: "duplicate ECHConfigExtension",
                },
            ),
        ];
        for (what, at, patch, err) in cases {
            let mut b = good.clone();
            b[*at..*at + patch.len()].copy_from_slice(patch);
            assert_eq!(EchConfigList::decode(&b).as_ref(), Err(err), "{what}");
        }
        // An empty public_name, cipher_suites of 6 bytes, an empty list, a 0-byte public key.
        let config = |name: &str, suites: &str, pk: &str| {
            let body = format!("01 0020 {pk} {suites} 00 {name} 0000").replace(' ', "");
            let body = hex::decode(body).unwrap();
            let mut c = vec![0xfe, 0x0d];
            c.extend_from_slice(&(body.len() as u16).to_be_bytes());
            c.extend_from_slice(&body);
            let mut l = (c.len() as u16).to_be_bytes().to_vec();
            l.extend_from_slice(&c);
            EchConfigList::decode(&l)
        };
        assert!(config("016e", "000400010001", "000109").is_ok());
        assert_eq!(
            config("00", "000400010001", "000109"),
            Err(DecodeError::Empty {
                what: "public_name"
            })
        );
        assert_eq!(
            config("016e", "0006000100010001", "000109"),
            Err(DecodeError::LengthNotMultiple {
                what: "cipher_suites"
            })
        );
        assert_eq!(
            config("016e", "0000", "000109"),
            Err(DecodeError::Empty {
                what: "cipher_suites"
            })
        );
        assert_eq!(
            config("016e", "000400010001", "0000"),
            Err(DecodeError::Empty {
                what: "HpkePublicKey"
            })
        );
        assert_eq!(
            EchConfigList::decode(&[0, 0]),
            Err(DecodeError::Empty {
                what: "ECHConfigList"
            })
        );
    }
}
