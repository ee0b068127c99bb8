//! Whole connections in memory (`lab::demo::Pair`): every suite × group × server key,
//! HelloRetryRequest, client authentication, compatibility mode, ALPN, record_size_limit,
//! KeyUpdate, exporters, close_notify, determinism, and the ledger's byte accounting and padding.
//!
//! Every successful connection is also checked with `util::check_ledger` (both endpoints' ledgers)
//! and `util::check_mirror` (what one side sent is what the other received).

mod util;

use std::sync::Arc;

use lab::demo::{request_response, Pair};
use tls13lab::crypto::random::SeededRandom;
use tls13lab::events::{Direction, Epoch, Event, Negotiated};
use tls13lab::messages::enums::{
    AlertDescription, CipherSuite, ContentType, ExtensionType, HandshakeType, KeyUpdateRequest,
    NamedGroup, SignatureScheme,
};
use tls13lab::messages::extensions::Extension;
use tls13lab::messages::handshake::{
    DecodeContext, HandshakeMessage, HandshakePayload, ServerHello, HRR_RANDOM,
};
use tls13lab::record::PaddingPolicy;
use tls13lab::session::TicketStore;
use tls13lab::{
    Client, ClientAuth, ClientConfig, Error, Ledger, Observe, PeerMisbehaved, Server, ServerConfig,
};

use util::{check_ledger, check_mirror, client_config, handshake_messages, KeyKind, NOW};

const REQUEST: &[u8] = b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n";
const RESPONSE: &[u8] = b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello";

/// The five suites of RFC 8446 §B.4; the CCM ones only when both sides are configured for them.
const SUITES: [CipherSuite; 5] = [
    CipherSuite::TLS_AES_128_GCM_SHA256,
    CipherSuite::TLS_AES_256_GCM_SHA384,
    CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
    CipherSuite::TLS_AES_128_CCM_SHA256,
    CipherSuite::TLS_AES_128_CCM_8_SHA256,
];
const GROUPS: [NamedGroup; 2] = [NamedGroup::X25519, NamedGroup::secp256r1];

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// One request/response connection, closed by both sides; checked end to end.
fn run(client: ClientConfig, server: ServerConfig, seed: u64) -> Pair {
    run_with(client, server, seed, REQUEST, RESPONSE)
}

fn run_with(
    client: ClientConfig,
    server: ServerConfig,
    seed: u64,
    request: &[u8],
    response: &[u8],
) -> Pair {
    let p = request_response(
        Arc::new(client),
        Arc::new(server),
        seed,
        NOW,
        request,
        response,
        TicketStore::default(),
    )
    .expect("connection");
    assert_eq!(p.server_received(), request);
    assert_eq!(p.client_received(), response);
    check_pair(&p);
    assert!(p.client.is_closed() && p.server.is_closed(), "both closed");
    p
}

/// The checks every healthy connection passes.
fn check_pair(p: &Pair) {
    check_ledger(&p.ledger());
    check_ledger(&Ledger::from_events(&p.server_events));
    check_mirror(&p.client_events, &p.server_events);
    let c = p.client.negotiated().expect("client negotiated");
    assert_eq!(Some(c), p.server.negotiated(), "both sides agree");
    assert_eq!(c.version, "TLSv1.3");
    for evs in [&p.client_events, &p.server_events] {
        assert_eq!(
            connected(evs),
            Some(c),
            "one Connected event, with the outcome"
        );
        assert!(
            !evs.iter().any(|e| matches!(
                e,
                Event::Alert { description, .. } if *description != AlertDescription::CloseNotify
            )),
            "no error alert"
        );
    }
}

fn connected(events: &[Event]) -> Option<&Negotiated> {
    let mut it = events.iter().filter_map(|e| match e {
        Event::Connected(n) => Some(n),
        _ => None,
    });
    let first = it.next();
    assert!(it.next().is_none(), "Connected is reported once");
    first
}

fn decode(bytes: &[u8]) -> HandshakePayload {
    HandshakeMessage::decode(bytes, DecodeContext { hash_len: 0 })
        .expect("our own message decodes")
        .payload
}

fn types(msgs: &[(HandshakeType, Vec<u8>)]) -> Vec<HandshakeType> {
    msgs.iter().map(|(t, _)| *t).collect()
}

/// The ServerHello-shaped messages the client received (HRR first when there was one).
fn server_hellos(p: &Pair) -> Vec<ServerHello> {
    handshake_messages(&p.client_events, Direction::ServerToClient)
        .iter()
        .filter_map(|(_, b)| match decode(b) {
            HandshakePayload::ServerHello(sh) => Some(sh),
            _ => None,
        })
        .collect()
}

fn client_hellos(p: &Pair) -> Vec<tls13lab::messages::handshake::ClientHello> {
    handshake_messages(&p.server_events, Direction::ClientToServer)
        .iter()
        .filter_map(|(_, b)| match decode(b) {
            HandshakePayload::ClientHello(ch) => Some(ch),
            _ => None,
        })
        .collect()
}

fn ccs_records(p: &Pair) -> Vec<(usize, Direction)> {
    p.ledger()
        .records
        .iter()
        .filter(|r| r.record.wire_type == ContentType::ChangeCipherSpec)
        .map(|r| (r.index, r.record.direction))
        .collect()
}

/// Connect a pair without closing it.
fn connect(client: ClientConfig, server: ServerConfig, seed: u64) -> Pair {
    let mut p = Pair::new(Arc::new(client), Arc::new(server), seed, NOW).expect("pair");
    p.handshake().expect("handshake");
    p.settle().expect("settle");
    p
}

fn default_pair(seed: u64) -> Pair {
    let (server, root) = util::server_config(KeyKind::P256);
    connect(client_config(root), server, seed)
}

fn key_updates(events: &[Event]) -> Vec<(Direction, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::KeyUpdate {
                direction,
                requested,
            } => Some((*direction, *requested)),
            _ => None,
        })
        .collect()
}

fn alerts(events: &[Event]) -> Vec<(Direction, AlertDescription)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Alert {
                direction,
                description,
                ..
            } => Some((*direction, *description)),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Suites × groups × server keys
// ---------------------------------------------------------------------------------------------

fn matrix(kind: KeyKind, scheme: SignatureScheme) {
    let mut seed = 100;
    for suite in SUITES {
        for group in GROUPS {
            seed += 1;
            let (mut server, root) = util::server_config(kind);
            server.groups = vec![group];
            server.cipher_suites = vec![suite];
            let mut client = client_config(root);
            client.cipher_suites = vec![suite];
            client.key_shares = vec![group];
            let p = run(client, server, seed);
            let n = p.client.negotiated().unwrap();
            let what = format!("{kind:?} {suite} {group}");
            assert_eq!(n.suite, suite, "{what}");
            assert_eq!(n.group, Some(group), "{what}");
            assert_eq!(n.signature_scheme, Some(scheme), "{what}");
            assert!(!n.hello_retry && !n.resumed, "{what}");
            // Finished carries Hash.length bytes of verify_data (§4.4.4).
            let hash_len = if suite == CipherSuite::TLS_AES_256_GCM_SHA384 {
                48
            } else {
                32
            };
            for dir in [Direction::ClientToServer, Direction::ServerToClient] {
                let fins: Vec<_> = handshake_messages(&p.client_events, dir)
                    .into_iter()
                    .filter(|(t, _)| *t == HandshakeType::Finished)
                    .collect();
                assert_eq!(fins.len(), 1, "{what}");
                assert_eq!(fins[0].1.len(), 4 + hash_len, "{what}");
            }
            // The expected flights: CH | SH EE Cert CV Fin | Fin (then data and close).
            let flights = p.ledger().messages_per_flight();
            use HandshakeType as T;
            assert_eq!(
                flights[0],
                (Direction::ClientToServer, vec![T::ClientHello])
            );
            assert_eq!(
                flights[1],
                (
                    Direction::ServerToClient,
                    vec![
                        T::ServerHello,
                        T::EncryptedExtensions,
                        T::Certificate,
                        T::CertificateVerify,
                        T::Finished
                    ]
                ),
                "{what}"
            );
            assert_eq!(flights[2].1[0], T::Finished, "{what}");
        }
    }
}

#[test]
fn every_suite_and_group_with_ecdsa_p256() {
    matrix(KeyKind::P256, SignatureScheme::ecdsa_secp256r1_sha256);
}

#[test]
fn every_suite_and_group_with_ed25519() {
    matrix(KeyKind::Ed25519, SignatureScheme::ed25519);
}

#[test]
fn every_suite_and_group_with_ed448() {
    // RFC 8032 PureEdDSA: CertificateVerify carries a 114-byte signature.
    matrix(KeyKind::Ed448, SignatureScheme::ed448);
    let (server, root) = util::server_config(KeyKind::Ed448);
    let p = run(client_config(root), server, 448);
    let cv: Vec<_> = handshake_messages(&p.client_events, Direction::ServerToClient)
        .into_iter()
        .filter(|(t, _)| *t == HandshakeType::CertificateVerify)
        .collect();
    // type(1) length(3) scheme(2) signature length(2) signature(114)
    assert_eq!(cv[0].1.len(), 4 + 2 + 2 + 114);
    assert_eq!(&cv[0].1[4..8], &[0x08, 0x08, 0x00, 114]);
}

#[test]
fn every_suite_and_group_with_rsa_2048() {
    matrix(KeyKind::Rsa2048, SignatureScheme::rsa_pss_rsae_sha256);
}

#[test]
fn every_suite_and_group_with_ecdsa_p521() {
    matrix(KeyKind::P521, SignatureScheme::ecdsa_secp521r1_sha512);
}

#[test]
fn every_suite_and_group_with_an_rsa_pss_key() {
    // An id-RSASSA-PSS key signs rsa_pss_pss_*, never the rsae schemes the client lists first.
    matrix(KeyKind::RsaPss, SignatureScheme::rsa_pss_pss_sha256);
    matrix(KeyKind::RsaPssSha384, SignatureScheme::rsa_pss_pss_sha384);
}

#[test]
fn every_suite_and_group_with_mldsa_44_65_87() {
    // draft-ietf-tls-mldsa: OpenSSL-made keys and certificates; CertificateVerify carries the
    // FIPS 204 signature of its parameter set.
    for (kind, scheme, sig_len) in [
        (KeyKind::MlDsa44, SignatureScheme::mldsa44, 2420),
        (KeyKind::MlDsa65, SignatureScheme::mldsa65, 3309),
        (KeyKind::MlDsa87, SignatureScheme::mldsa87, 4627),
    ] {
        matrix(kind, scheme);
        let (server, root) = util::server_config(kind);
        let p = run(client_config(root), server, 7);
        let s2c = handshake_messages(&p.client_events, Direction::ServerToClient);
        let cv = s2c
            .iter()
            .find(|(t, _)| *t == HandshakeType::CertificateVerify)
            .unwrap();
        // Header 4, scheme 2, length 2, signature.
        assert_eq!(cv.1.len(), 8 + sig_len, "{kind:?}");
    }
}

#[test]
fn mldsa_connections_replay_byte_for_byte_on_every_backend() {
    // ML-DSA signing is hedged with 32 bytes from the server's RandomSource (FIPS 204 §3.4):
    // the same seeds give the same records, CertificateVerify included, and the signature is
    // the same whether aws-lc (the default build) or RustCrypto's ml-dsa (the all-RustCrypto
    // build) made it: the SHA-256 of each CertificateVerify below (seed 7, the same on
    // both builds when recorded) holds on both builds.
    let golden = [
        (
            KeyKind::MlDsa44,
            "b72b7faf00a950ebfd901436a0c99dd633b1dfe306057261e8fbeae3b543044a",
        ),
        (
            KeyKind::MlDsa65,
            "ea570d1b3c5248055fad56c876b8f24dc4f38fb77c13d1a6fd1e57adaec9a422",
        ),
        (
            KeyKind::MlDsa87,
            "0107b89809542259e622377c594844862ffe38f961076aab2d10233136ab73f5",
        ),
    ];
    for (kind, want) in golden {
        let wire = |seed| {
            let (server, root) = util::server_config(kind);
            // The offer must not depend on the build: no certificate compression (a feature).
            let mut client = client_config(root);
            client.cert_compression = Vec::new();
            let p = run(client, server, seed);
            let records: Vec<Vec<u8>> = [&p.client_events, &p.server_events]
                .into_iter()
                .flatten()
                .filter_map(|e| match e {
                    Event::Record(r) => Some([r.header.clone(), r.content.clone()].concat()),
                    _ => None,
                })
                .collect();
            let s2c = handshake_messages(&p.client_events, Direction::ServerToClient);
            let cv = s2c
                .into_iter()
                .find(|(t, _)| *t == HandshakeType::CertificateVerify)
                .unwrap()
                .1;
            (records, cv)
        };
        let (a, cv) = wire(7);
        let (b, cv_again) = wire(7);
        assert_eq!(a, b, "{kind:?}");
        assert_eq!(cv, cv_again, "{kind:?}");
        let (c, cv_other) = wire(8);
        assert_ne!(a, c, "{kind:?}");
        assert_ne!(
            cv, cv_other,
            "{kind:?}: hedged, so another seed signs differently"
        );
        let digest = tls13lab::crypto::hash::HashAlg::Sha256.hash(&cv);
        assert_eq!(hex::encode(digest.as_slice()), want, "{kind:?}");
    }
}

/// An ECDSA P-256 chain and an ML-DSA-65 chain on one server (issue 16 item 3).
fn dual_credential_server() -> (ServerConfig, Vec<Vec<u8>>) {
    let (mut server, ecdsa_root) = util::server_config(KeyKind::P256);
    let (mldsa, mldsa_root) = util::certified(KeyKind::MlDsa65);
    server.more_certs = vec![mldsa];
    (server, vec![ecdsa_root, mldsa_root])
}

#[test]
fn a_server_with_two_chains_picks_by_the_clients_signature_algorithms() {
    let cases: [(&[SignatureScheme], SignatureScheme); 4] = [
        // The default offer lists ML-DSA last: the ECDSA chain, which is tried first.
        (
            tls13lab::crypto::sign::supported_verify_schemes(),
            SignatureScheme::ecdsa_secp256r1_sha256,
        ),
        (
            &[SignatureScheme::ecdsa_secp256r1_sha256],
            SignatureScheme::ecdsa_secp256r1_sha256,
        ),
        (&[SignatureScheme::mldsa65], SignatureScheme::mldsa65),
        (
            &[SignatureScheme::mldsa65, SignatureScheme::ed25519],
            SignatureScheme::mldsa65,
        ),
    ];
    for (offer, want) in cases {
        let (server, roots) = dual_credential_server();
        let mut client = ClientConfig::new(roots.clone());
        client.observe = Observe::PUBLIC;
        client.server_name = Some("localhost".into());
        client.fixed_validation_time_ms = Some(NOW);
        client.signature_schemes = offer.to_vec();
        let p = run(client, server, 61);
        let n = p.client.negotiated().unwrap();
        assert_eq!(n.signature_scheme, Some(want), "{offer:?}");
        // The chain sent is the one whose key signed.
        let s2c = handshake_messages(&p.client_events, Direction::ServerToClient);
        let cert = s2c
            .iter()
            .find(|(t, _)| *t == HandshakeType::Certificate)
            .unwrap();
        let leaf = match decode(&cert.1) {
            HandshakePayload::Certificate(c) => c.entries[0].cert_data.clone(),
            other => panic!("{other:?}"),
        };
        let want_root = if want == SignatureScheme::mldsa65 {
            1
        } else {
            0
        };
        assert_eq!(leaf, roots[want_root], "{offer:?}");
    }
    // Neither key's scheme offered: handshake_failure, as with one chain.
    let (server, roots) = dual_credential_server();
    let mut client = ClientConfig::new(roots);
    client.observe = Observe::PUBLIC;
    client.signature_schemes = vec![SignatureScheme::ed25519, SignatureScheme::mldsa87];
    let (e, seen) = handshake_rejected_by_server(client, server);
    assert_eq!(e, Error::Peer(PeerMisbehaved::NoCommonSignatureScheme));
    assert_eq!(
        seen,
        Error::AlertReceived(AlertDescription::HandshakeFailure)
    );
}

#[test]
fn signature_algorithms_cert_decides_between_chains_whose_keys_both_fit() {
    // Two ML-DSA credentials: an ML-DSA-44 leaf under an ML-DSA-65 intermediate and ML-DSA-87
    // root, then the self-signed ML-DSA-44 one. A client that takes mldsa44 in CertificateVerify
    // gets the chain only when its signature_algorithms_cert (§4.2.3) covers every signature in
    // it, else the self-signed one (whose own signature does not count: it starts the path).
    let pem = |s: &str| tls13lab::crypto::cert::certs_from_pem(s).unwrap();
    let chain = pem(include_str!("vectors/pem/mldsa_chain.pem"));
    let chain_root = pem(include_str!("vectors/pem/mldsa_chain_root.pem")).remove(0);
    let chain_key = tls13lab::crypto::sign::SigningKey::from_pem(include_str!(
        "vectors/pem/mldsa_chain_leaf_key.pem"
    ))
    .unwrap();
    let (single, single_root) = util::certified(KeyKind::MlDsa44);
    use SignatureScheme as S;
    for (cert_schemes, want_chain_len) in [
        (vec![S::mldsa44], 1),
        // The intermediate is signed by the ML-DSA-87 root: mldsa65 alone is not enough.
        (vec![S::mldsa44, S::mldsa65], 1),
        (vec![S::mldsa44, S::mldsa65, S::mldsa87], 2),
    ] {
        let mut server = ServerConfig::new(tls13lab::config::CertifiedKey {
            chain: chain.clone(),
            key: Arc::new(chain_key.clone()),
        });
        server.observe = Observe::PUBLIC;
        server.more_certs = vec![single.clone()];
        let mut client = ClientConfig::new(vec![chain_root.clone(), single_root.clone()]);
        client.observe = Observe::PUBLIC;
        client.server_name = Some("localhost".into());
        client.fixed_validation_time_ms = Some(NOW);
        client.signature_schemes = vec![SignatureScheme::mldsa44];
        client.extra_extensions = vec![Extension::SignatureAlgorithmsCert(cert_schemes.clone())];
        let p = run(client, server, 62);
        let s2c = handshake_messages(&p.client_events, Direction::ServerToClient);
        let cert = s2c
            .iter()
            .find(|(t, _)| *t == HandshakeType::Certificate)
            .unwrap();
        match decode(&cert.1) {
            HandshakePayload::Certificate(c) => {
                assert_eq!(c.entries.len(), want_chain_len, "{cert_schemes:?}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            p.client.negotiated().unwrap().signature_scheme,
            Some(SignatureScheme::mldsa44)
        );
    }
}

#[test]
fn each_rsa_pss_pss_hash_and_no_rsae_with_a_pss_key() {
    use SignatureScheme as S;
    for (kind, offer, want) in [
        (
            KeyKind::RsaPss,
            S::rsa_pss_pss_sha256,
            Some(S::rsa_pss_pss_sha256),
        ),
        (
            KeyKind::RsaPss,
            S::rsa_pss_pss_sha384,
            Some(S::rsa_pss_pss_sha384),
        ),
        (
            KeyKind::RsaPss,
            S::rsa_pss_pss_sha512,
            Some(S::rsa_pss_pss_sha512),
        ),
        (
            KeyKind::RsaPssSha384,
            S::rsa_pss_pss_sha384,
            Some(S::rsa_pss_pss_sha384),
        ),
        // §4.2.3: the key's parameters, or its type, rule these out: nothing in common.
        (KeyKind::RsaPssSha384, S::rsa_pss_pss_sha256, None),
        (KeyKind::RsaPss, S::rsa_pss_rsae_sha256, None),
        (KeyKind::Rsa2048, S::rsa_pss_pss_sha256, None),
    ] {
        let (server, root) = util::server_config(kind);
        let mut client = client_config(root);
        client.signature_schemes = vec![offer];
        let what = format!("{kind:?} offered {offer}");
        let mut p = Pair::new(Arc::new(client), Arc::new(server), 61, NOW).expect("pair");
        match want {
            Some(scheme) => {
                p.handshake().expect(&what);
                let n = p.client.negotiated().unwrap();
                assert_eq!(n.signature_scheme, Some(scheme), "{what}");
            }
            None => {
                let e = p.handshake().expect_err(&what);
                assert_eq!(
                    e.alert(),
                    Some(tls13lab::messages::enums::AlertDescription::HandshakeFailure),
                    "{what}: {e:?}"
                );
            }
        }
    }
}

#[test]
fn server_preference_picks_suite_and_group() {
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.cipher_suites = vec![
        CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
        CipherSuite::TLS_AES_128_GCM_SHA256,
    ];
    server.groups = vec![NamedGroup::secp256r1, NamedGroup::X25519];
    let mut client = client_config(root);
    client.key_shares = vec![NamedGroup::X25519, NamedGroup::secp256r1];
    let p = run(client, server, 7);
    let n = p.client.negotiated().unwrap();
    assert_eq!(n.suite, CipherSuite::TLS_CHACHA20_POLY1305_SHA256);
    // Both shares were sent: the server's first choice costs no round trip.
    assert_eq!(n.group, Some(NamedGroup::secp256r1));
    assert!(!n.hello_retry);
}

/// The CCM suites are offered and chosen only when configured (RFC 8446 §9.1 does not require
/// them; the defaults stay the three of §9.1 and ChaCha20), and then by server preference.
#[test]
fn ccm_suites_only_when_configured() {
    use CipherSuite as C;
    let ccm = [C::TLS_AES_128_CCM_SHA256, C::TLS_AES_128_CCM_8_SHA256];
    assert!(!ClientConfig::default()
        .cipher_suites
        .iter()
        .any(|s| ccm.contains(s)));
    let (server, root) = util::server_config(KeyKind::P256);
    assert!(!server.cipher_suites.iter().any(|s| ccm.contains(s)));
    // A client that prefers CCM-8, a default server: not CCM.
    let mut client = client_config(root.clone());
    client.cipher_suites = vec![ccm[1], ccm[0], C::TLS_AES_128_GCM_SHA256];
    let p = run(client.clone(), server.clone(), 8);
    assert_eq!(
        p.client.negotiated().unwrap().suite,
        C::TLS_AES_128_GCM_SHA256
    );
    // A server that prefers CCM-8: a default client does not offer it, this one does.
    let mut ccm_server = server;
    ccm_server.cipher_suites = vec![ccm[1], C::TLS_AES_128_GCM_SHA256];
    let p = run(client_config(root), ccm_server.clone(), 9);
    assert_eq!(
        p.client.negotiated().unwrap().suite,
        C::TLS_AES_128_GCM_SHA256
    );
    let p = run(client, ccm_server, 10);
    assert_eq!(p.client.negotiated().unwrap().suite, ccm[1]);
}

// ---------------------------------------------------------------------------------------------
// HelloRetryRequest (§4.1.4)
// ---------------------------------------------------------------------------------------------

fn hello_retry(cookie: Option<usize>, suite: CipherSuite) -> Pair {
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.groups = vec![NamedGroup::secp256r1];
    server.hrr_cookie = cookie;
    server.cipher_suites = vec![suite];
    let mut client = client_config(root);
    client.cipher_suites = vec![suite];
    client.key_shares = vec![NamedGroup::X25519];
    let p = run(client, server, 21);
    let n = p.client.negotiated().unwrap();
    assert!(n.hello_retry);
    assert_eq!(n.group, Some(NamedGroup::secp256r1));
    assert_eq!(n.suite, suite);

    use HandshakeType as T;
    let flights = p.ledger().messages_per_flight();
    assert_eq!(flights[0].1, vec![T::ClientHello]);
    assert_eq!(flights[1].1, vec![T::ServerHello], "the HelloRetryRequest");
    assert_eq!(flights[2].1, vec![T::ClientHello]);
    assert_eq!(
        flights[3].1,
        vec![
            T::ServerHello,
            T::EncryptedExtensions,
            T::Certificate,
            T::CertificateVerify,
            T::Finished
        ]
    );

    let shs = server_hellos(&p);
    assert_eq!(shs.len(), 2);
    let hrr = &shs[0];
    assert_eq!(hrr.random, HRR_RANDOM);
    assert!(shs[1].random != HRR_RANDOM);
    assert_eq!(hrr.cipher_suite, shs[1].cipher_suite, "same suite (§4.1.4)");
    assert!(hrr
        .extensions
        .contains(&Extension::KeyShareHrr(NamedGroup::secp256r1)));
    let hrr_cookie = hrr.extensions.iter().find_map(|e| match e {
        Extension::Cookie(c) => Some(c.clone()),
        _ => None,
    });
    assert_eq!(hrr_cookie.as_ref().map(Vec::len), cookie);

    let chs = client_hellos(&p);
    assert_eq!(chs.len(), 2);
    let (ch1, ch2) = (&chs[0], &chs[1]);
    assert_eq!(ch1.random, ch2.random, "§4.1.2: the same ClientHello");
    assert_eq!(ch1.legacy_session_id, ch2.legacy_session_id);
    assert_eq!(ch1.cipher_suites, ch2.cipher_suites);
    let shares = |ch: &tls13lab::messages::handshake::ClientHello| -> Vec<NamedGroup> {
        ch.extensions
            .iter()
            .find_map(|e| match e {
                Extension::KeyShareClient(s) => Some(s.iter().map(|s| s.group).collect()),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(shares(ch1), vec![NamedGroup::X25519]);
    assert_eq!(shares(ch2), vec![NamedGroup::secp256r1]);
    let ch2_cookie = ch2.extensions.iter().find_map(|e| match e {
        Extension::Cookie(c) => Some(c.clone()),
        _ => None,
    });
    assert_eq!(ch2_cookie, hrr_cookie, "§4.2.2: the cookie is echoed");
    assert!(ch1
        .extensions
        .iter()
        .all(|e| !matches!(e, Extension::Cookie(_))));
    p
}

#[test]
fn hello_retry_request_without_cookie() {
    // Every suite: the message_hash that replaces ClientHello1 uses the suite's hash (§4.4.1).
    for suite in SUITES {
        hello_retry(None, suite);
    }
}

#[test]
fn hello_retry_request_with_cookie() {
    for suite in SUITES {
        hello_retry(Some(48), suite);
    }
}

#[test]
fn hello_retry_request_with_compat_mode_sends_one_ccs_each_way() {
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.groups = vec![NamedGroup::secp256r1];
    server.compat_mode = true;
    let mut client = client_config(root);
    client.key_shares = vec![NamedGroup::X25519];
    client.compat_mode = true;
    let p = run(client, server, 22);
    assert_eq!(ccs_records(&p).len(), 2, "{}", p.ledger().table());
    // §D.4: the server's CCS comes right after the HelloRetryRequest, the client's right before
    // its second ClientHello. Each ledger lists records in the order its side handled them.
    for (evs, dir) in [
        (&p.server_events, Direction::ServerToClient),
        (&p.client_events, Direction::ClientToServer),
    ] {
        let sent: Vec<_> = util::records(evs)
            .into_iter()
            .filter(|r| r.direction == dir)
            .collect();
        assert_eq!(sent[1].wire_type, ContentType::ChangeCipherSpec, "{dir:?}");
        assert_eq!(sent[1].epoch, Epoch::Plaintext);
        let first = decode(&sent[0].content);
        match (dir, first) {
            (Direction::ServerToClient, HandshakePayload::ServerHello(sh)) => {
                assert_eq!(sh.random, HRR_RANDOM)
            }
            (Direction::ClientToServer, HandshakePayload::ClientHello(_)) => {
                assert!(matches!(
                    decode(&sent[2].content),
                    HandshakePayload::ClientHello(_)
                ))
            }
            other => panic!("{other:?}"),
        }
        assert!(sent[2..]
            .iter()
            .all(|r| r.wire_type != ContentType::ChangeCipherSpec));
    }
}

// ---------------------------------------------------------------------------------------------
// Client authentication (§4.3.2, §4.4.2.4)
// ---------------------------------------------------------------------------------------------

fn client_auth_configs(auth: ClientAuth, with_cert: bool) -> (ClientConfig, ServerConfig) {
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.client_auth = auth;
    let mut client = client_config(root);
    if with_cert {
        client.client_cert = Some(util::client_identity().0);
    }
    (client, server)
}

#[test]
fn client_auth_required_with_certificate() {
    let client_root = util::client_identity().1;
    let (client, server) = client_auth_configs(ClientAuth::Required(vec![client_root]), true);
    let p = run(client, server, 31);
    let n = p.server.negotiated().unwrap();
    assert_eq!(
        n.client_signature_scheme,
        Some(SignatureScheme::ecdsa_secp256r1_sha256)
    );
    use HandshakeType as T;
    let c2s = handshake_messages(&p.server_events, Direction::ClientToServer);
    assert_eq!(
        types(&c2s),
        vec![
            T::ClientHello,
            T::Certificate,
            T::CertificateVerify,
            T::Finished
        ]
    );
    let s2c = handshake_messages(&p.client_events, Direction::ServerToClient);
    assert_eq!(types(&s2c)[2], T::CertificateRequest);
}

/// §6.1: nothing follows close_notify. A server that closes before the client's Finished (as
/// one answering 0-RTT data may) issues no NewSessionTicket afterwards.
#[test]
fn no_ticket_after_the_servers_close_notify() {
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.tickets = 2;
    let mut p = Pair::new(Arc::new(client_config(root)), Arc::new(server), 51, NOW).expect("pair");
    p.client.start(NOW).expect("start");
    p.client_to_server().expect("ClientHello");
    p.server_to_client().expect("server flight");
    p.server.close();
    p.client_to_server().expect("client Finished");
    p.server_to_client().expect("after Finished");
    let sent: Vec<HandshakeType> = handshake_messages(&p.server_events, Direction::ServerToClient)
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert!(!sent.contains(&HandshakeType::NewSessionTicket), "{sent:?}");
    let received = handshake_messages(&p.server_events, Direction::ClientToServer);
    assert_eq!(received.last().map(|m| m.0), Some(HandshakeType::Finished));
    // The same flow without the early close does issue them.
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.tickets = 2;
    let mut p = Pair::new(Arc::new(client_config(root)), Arc::new(server), 51, NOW).expect("pair");
    p.handshake().expect("handshake");
    p.settle().expect("settle");
    let sent = handshake_messages(&p.server_events, Direction::ServerToClient);
    let nst = sent
        .iter()
        .filter(|(t, _)| *t == HandshakeType::NewSessionTicket)
        .count();
    assert_eq!(nst, 2);
}

/// Both sides remember certificate signatures across connections made with one configuration
/// (crypto::cert::SignatureMemo), and a connection without a memo still verifies everything.
#[test]
fn certificate_signatures_are_remembered_across_connections() {
    let client_root = util::client_identity().1;
    let (client, server) = client_auth_configs(ClientAuth::Required(vec![client_root]), true);
    let (client, server) = (Arc::new(client), Arc::new(server));
    let (cm, sm) = (
        client.signature_memo.clone().unwrap(),
        server.signature_memo.clone().unwrap(),
    );
    for (i, seed) in [41u64, 42, 43].into_iter().enumerate() {
        let mut p = Pair::new(client.clone(), server.clone(), seed, NOW).expect("pair");
        p.handshake().expect("handshake");
        // One self-signed certificate each way: verified once, then remembered.
        assert_eq!((cm.len(), cm.hits()), (1, i as u64), "client memo");
        assert_eq!((sm.len(), sm.hits()), (1, i as u64), "server memo");
    }
    let (mut client, mut server) = (Arc::unwrap_or_clone(client), Arc::unwrap_or_clone(server));
    client.signature_memo = None;
    server.signature_memo = None;
    let mut p = Pair::new(Arc::new(client), Arc::new(server), 44, NOW).expect("pair");
    p.handshake().expect("handshake without memo");
    assert_eq!((cm.hits(), sm.hits()), (2, 2));
}

#[test]
fn client_auth_with_every_key_kind() {
    for (kind, scheme) in [
        (KeyKind::P256, SignatureScheme::ecdsa_secp256r1_sha256),
        (KeyKind::Ed25519, SignatureScheme::ed25519),
        (KeyKind::Rsa2048, SignatureScheme::rsa_pss_rsae_sha256),
        (KeyKind::P521, SignatureScheme::ecdsa_secp521r1_sha512),
        (KeyKind::RsaPss, SignatureScheme::rsa_pss_pss_sha256),
        (KeyKind::RsaPssSha384, SignatureScheme::rsa_pss_pss_sha384),
        (KeyKind::MlDsa44, SignatureScheme::mldsa44),
        (KeyKind::MlDsa65, SignatureScheme::mldsa65),
        (KeyKind::MlDsa87, SignatureScheme::mldsa87),
        (KeyKind::Ed448, SignatureScheme::ed448),
    ] {
        let (ck, root) = util::certified(kind);
        let (mut client, server) = client_auth_configs(ClientAuth::Required(vec![root]), false);
        client.client_cert = Some(ck);
        let p = run(client, server, 35);
        assert_eq!(
            p.server.negotiated().unwrap().client_signature_scheme,
            Some(scheme),
            "{kind:?}"
        );
    }
}

#[test]
fn client_auth_optional_with_certificate() {
    let client_root = util::client_identity().1;
    let (client, server) = client_auth_configs(ClientAuth::Optional(vec![client_root]), true);
    let p = run(client, server, 32);
    assert_eq!(
        p.server.negotiated().unwrap().client_signature_scheme,
        Some(SignatureScheme::ecdsa_secp256r1_sha256)
    );
}

#[test]
fn client_auth_optional_without_certificate() {
    let client_root = util::client_identity().1;
    let (client, server) = client_auth_configs(ClientAuth::Optional(vec![client_root]), false);
    let p = run(client, server, 33);
    assert_eq!(p.server.negotiated().unwrap().client_signature_scheme, None);
    use HandshakeType as T;
    let c2s = handshake_messages(&p.server_events, Direction::ClientToServer);
    assert_eq!(
        types(&c2s),
        vec![T::ClientHello, T::Certificate, T::Finished]
    );
    match decode(&c2s[1].1) {
        HandshakePayload::Certificate(c) => assert!(c.entries.is_empty() && c.context.is_empty()),
        other => panic!("{other:?}"),
    }
}

/// §4.4.2: "The sender's certificate MUST come in the first CertificateEntry in the list":
/// the client's CertificateVerify is checked with that one, whatever follows it. No roots, so
/// the chain is not validated and only the certificates' order decides whose key counts.
#[test]
fn client_certificate_verify_is_checked_with_the_first_certificate() {
    // Was a unit test in server.rs; here because it needs the `demo` harness, which is built
    // on the server (the core's modules form no cycle: tests/layers.rs).
    use lab::demo::{client_config, server_config, NOW_MS};
    let run = |leaf_first: bool| {
        let (mut server, root) = server_config(1, NOW_MS).expect("server");
        server.client_auth = ClientAuth::InsecureAcceptAny { required: true };
        let mut identity = server_config(2, NOW_MS).expect("client identity").0.cert;
        let leaf = identity.chain[0].clone();
        let other = server_config(3, NOW_MS).expect("another certificate").1;
        identity.chain = if leaf_first {
            vec![leaf, other]
        } else {
            vec![other, leaf]
        };
        let mut client = client_config(root);
        client.client_cert = Some(identity);
        let mut p = Pair::new(Arc::new(client), Arc::new(server), 7, NOW_MS).expect("pair");
        p.handshake().map(|()| {
            p.server
                .negotiated()
                .and_then(|n| n.client_signature_scheme)
        })
    };
    assert_eq!(run(true), Ok(Some(SignatureScheme::ecdsa_secp256r1_sha256)));
    assert_eq!(
        run(false),
        Err(Error::Peer(PeerMisbehaved::BadCertificateVerify))
    );
}

#[test]
fn client_certificate_not_requested_is_not_sent() {
    let (client, server) = client_auth_configs(ClientAuth::None, true);
    let p = run(client, server, 34);
    use HandshakeType as T;
    let c2s = handshake_messages(&p.server_events, Direction::ClientToServer);
    assert_eq!(types(&c2s), vec![T::ClientHello, T::Finished]);
}

/// Drives the handshake until the server fails; returns the server's error and what the client
/// makes of the server's alert.
fn handshake_rejected_by_server(client: ClientConfig, server: ServerConfig) -> (Error, Error) {
    let mut c = Client::new(Arc::new(client), Box::new(SeededRandom::from_seed(1))).unwrap();
    let mut s = Server::new(Arc::new(server), Box::new(SeededRandom::from_seed(2))).unwrap();
    c.start(NOW).unwrap();
    let mut to_server = c.take_output();
    loop {
        let r = s.receive(&to_server, NOW);
        let to_client = s.take_output();
        if let Err(e) = r {
            let seen = c
                .receive(&to_client, NOW)
                .expect_err("client sees the alert");
            return (e, seen);
        }
        c.receive(&to_client, NOW).expect("client is happy");
        to_server = c.take_output();
        assert!(!to_server.is_empty(), "stuck without an error");
    }
}

#[test]
fn client_auth_required_but_missing_is_certificate_required() {
    let client_root = util::client_identity().1;
    let (client, server) = client_auth_configs(ClientAuth::Required(vec![client_root]), false);
    let (e, seen) = handshake_rejected_by_server(client, server);
    // §4.4.2.4: "abort the handshake with a certificate_required alert".
    assert_eq!(e, Error::Peer(PeerMisbehaved::NoClientCertificate));
    assert_eq!(
        seen,
        Error::AlertReceived(AlertDescription::CertificateRequired)
    );
}

#[test]
fn client_certificate_from_unknown_ca_is_rejected() {
    // The server trusts another root, not the client's certificate. (A root with the client
    // certificate's own subject name but another key would be a bad signature instead.)
    let (client, server) =
        client_auth_configs(ClientAuth::Optional(vec![util::unrelated_root()]), true);
    let (e, seen) = handshake_rejected_by_server(client, server);
    assert_eq!(e.alert(), Some(AlertDescription::UnknownCa), "{e:?}");
    assert_eq!(seen, Error::AlertReceived(AlertDescription::UnknownCa));
}

#[test]
fn a_default_client_trusts_no_certificate() {
    // Secure by default: `ClientConfig::default()` trusts no root, so the server's certificate
    // (a valid chain for its name, signed by a root the caller did not give) is refused with
    // unknown_ca (§6.2: "a valid certificate chain or partial chain was received, but the
    // certificate was not accepted because the CA certificate could not be located"); the
    // client sends the alert and the handshake never completes.
    let (server, root) = util::server_config(KeyKind::P256);
    for mut client in [ClientConfig::default(), ClientConfig::new(Vec::new())] {
        client.server_name = Some("localhost".into());
        let mut c = Client::new(Arc::new(client), Box::new(SeededRandom::from_seed(1))).unwrap();
        let mut s = Server::new(
            Arc::new(server.clone()),
            Box::new(SeededRandom::from_seed(2)),
        )
        .unwrap();
        c.start(NOW).unwrap();
        s.receive(&c.take_output(), NOW).unwrap();
        let e = c.receive(&s.take_output(), NOW).unwrap_err();
        assert_eq!(e.alert(), Some(AlertDescription::UnknownCa), "{e:?}");
        assert!(!c.is_connected());
        let seen = s.receive(&c.take_output(), NOW).unwrap_err();
        assert_eq!(seen, Error::AlertReceived(AlertDescription::UnknownCa));
    }
    // The same server with its root given: connected; and accepting any certificate takes a
    // constructor that says so.
    let mut trusting = ClientConfig::new(vec![root]);
    trusting.observe = Observe::PUBLIC;
    trusting.server_name = Some("localhost".into());
    let mut insecure = ClientConfig::insecure_accept_any_certificate();
    insecure.server_name = Some("localhost".into());
    for client in [trusting, insecure] {
        let mut p =
            lab::demo::Pair::new(Arc::new(client), Arc::new(server.clone()), 3, NOW).unwrap();
        p.handshake().unwrap();
        assert!(p.client.is_connected() && p.server.is_connected());
    }
}

/// The server side of secure by default: client authentication with no roots validates no
/// chain — the client's certificate is refused with unknown_ca, in the handshake and after it —
/// and accepting any chain takes `ClientAuth::InsecureAcceptAny`, which says so.
#[test]
fn client_auth_without_roots_trusts_no_client_certificate() {
    for (auth, accepted) in [
        (ClientAuth::Required(Vec::new()), false),
        (ClientAuth::Optional(Vec::new()), false),
        (ClientAuth::InsecureAcceptAny { required: true }, true),
        (ClientAuth::Required(vec![util::client_identity().1]), true),
    ] {
        let (mut server, root) = util::server_config(KeyKind::P256);
        server.client_auth = auth.clone();
        let mut client = client_config(root);
        client.client_cert = Some(util::client_identity().0);
        let mut p = Pair::new(Arc::new(client), Arc::new(server), 67, NOW).unwrap();
        let r = p.handshake();
        if accepted {
            r.unwrap();
            assert!(p
                .server
                .negotiated()
                .unwrap()
                .client_signature_scheme
                .is_some());
        } else {
            let e = r.unwrap_err();
            assert_eq!(
                e.alert(),
                Some(AlertDescription::UnknownCa),
                "{auth:?}: {e:?}"
            );
            assert!(!p.server.is_connected());
        }
    }
}

#[test]
fn alpn_without_overlap_is_no_application_protocol() {
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.alpn = vec![b"http/1.1".to_vec()];
    let mut client = client_config(root);
    client.alpn = vec![b"h2".to_vec()];
    let (e, seen) = handshake_rejected_by_server(client, server);
    // RFC 7301 §3.2: "the server MUST respond with a fatal no_application_protocol alert".
    assert_eq!(e, Error::Peer(PeerMisbehaved::NoApplicationProtocol));
    assert_eq!(
        seen,
        Error::AlertReceived(AlertDescription::NoApplicationProtocol)
    );
}

// ---------------------------------------------------------------------------------------------
// Middlebox compatibility mode (§D.4)
// ---------------------------------------------------------------------------------------------

#[test]
fn compatibility_mode_on_and_off_on_each_side() {
    for (client_compat, server_compat) in
        [(false, false), (true, false), (false, true), (true, true)]
    {
        let (mut server, root) = util::server_config(KeyKind::P256);
        server.compat_mode = server_compat;
        let mut client = client_config(root);
        client.compat_mode = client_compat;
        let p = run(client, server, 40);
        let what = format!("client {client_compat} server {server_compat}");
        let chs = client_hellos(&p);
        // §D.4: a client in compatibility mode sends a 32-byte legacy_session_id...
        assert_eq!(
            chs[0].legacy_session_id.len(),
            if client_compat { 32 } else { 0 },
            "{what}"
        );
        // ... which the server echoes (§4.1.3).
        assert_eq!(
            server_hellos(&p)[0].legacy_session_id_echo,
            chs[0].legacy_session_id,
            "{what}"
        );
        let l = p.ledger();
        let ccs = ccs_records(&p);
        let mut want = Vec::new();
        // The server's CCS comes right after its ServerHello, only when the client asked for
        // compatibility mode by sending a session id.
        if server_compat && client_compat {
            want.push((3, Direction::ServerToClient));
        }
        // The client's CCS opens its second flight.
        if client_compat {
            let first_c2s_after_server = l
                .records
                .iter()
                .skip(1)
                .find(|r| r.record.direction == Direction::ClientToServer)
                .unwrap()
                .index;
            want.push((first_c2s_after_server, Direction::ClientToServer));
        }
        assert_eq!(ccs, want, "{what}\n{}", l.table());
        for r in l
            .records
            .iter()
            .filter(|r| r.record.wire_type == ContentType::ChangeCipherSpec)
        {
            assert_eq!(r.record.content, [1]);
            assert_eq!(r.record.header, [20, 3, 3, 0, 1]);
            assert_eq!(r.record.epoch, Epoch::Plaintext);
        }
        if server_compat && client_compat {
            assert_eq!(l.records[1].messages[0].typ, HandshakeType::ServerHello);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ALPN (RFC 7301), record_size_limit (RFC 8449)
// ---------------------------------------------------------------------------------------------

#[test]
fn alpn_follows_server_preference() {
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.alpn = vec![b"http/1.1".to_vec(), b"h2".to_vec()];
    let mut client = client_config(root);
    client.alpn = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let p = run(client, server, 50);
    assert_eq!(
        p.client.negotiated().unwrap().alpn.as_deref(),
        Some("http/1.1")
    );
}

#[test]
fn alpn_absent_when_either_side_has_none() {
    for (client_alpn, server_alpn) in [(true, false), (false, true)] {
        let (mut server, root) = util::server_config(KeyKind::P256);
        if server_alpn {
            server.alpn = vec![b"h2".to_vec()];
        }
        let mut client = client_config(root);
        if client_alpn {
            client.alpn = vec![b"h2".to_vec()];
        }
        let p = run(client, server, 51);
        assert_eq!(p.client.negotiated().unwrap().alpn, None);
        let ee = handshake_messages(&p.client_events, Direction::ServerToClient)
            .into_iter()
            .find(|(t, _)| *t == HandshakeType::EncryptedExtensions)
            .unwrap();
        match decode(&ee.1) {
            HandshakePayload::EncryptedExtensions(exts) => {
                assert!(exts.iter().all(|e| !matches!(e, Extension::Alpn(_))))
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Largest TLSInnerPlaintext (content + type + padding) per direction among protected records.
fn largest_inner(l: &Ledger, dir: Direction) -> usize {
    l.records
        .iter()
        .filter(|r| r.record.direction == dir && r.record.seq.is_some())
        .map(|r| r.record.plaintext_len + 1 + r.record.padding_len)
        .max()
        .unwrap()
}

fn record_size_limit(client_limit: u16, server_limit: u16, padding: PaddingPolicy) -> Pair {
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.record_size_limit = Some(server_limit);
    server.padding = padding;
    let mut client = client_config(root);
    client.record_size_limit = Some(client_limit);
    client.padding = padding;
    let request: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    let response: Vec<u8> = (0..7000u32).map(|i| (i * 7) as u8).collect();
    let p = run_with(client, server, 60, &request, &response);
    let l = p.ledger();
    // RFC 8449 §4: in TLS 1.3 the limit bounds TLSInnerPlaintext, type and padding included.
    // The server knows the client's limit from the ClientHello: all its protected records obey.
    assert!(
        largest_inner(&l, Direction::ServerToClient) <= usize::from(client_limit),
        "{}",
        l.table()
    );
    // The client learns the server's limit from EncryptedExtensions.
    assert!(
        largest_inner(&l, Direction::ClientToServer) <= usize::from(server_limit),
        "{}",
        l.table()
    );
    let ee = handshake_messages(&p.client_events, Direction::ServerToClient)
        .into_iter()
        .find(|(t, _)| *t == HandshakeType::EncryptedExtensions)
        .unwrap();
    match decode(&ee.1) {
        HandshakePayload::EncryptedExtensions(exts) => {
            assert!(exts.contains(&Extension::RecordSizeLimit(server_limit)))
        }
        other => panic!("{other:?}"),
    }
    p
}

#[test]
fn record_size_limit_bounds_records_both_ways() {
    let p = record_size_limit(300, 200, PaddingPolicy::None);
    let l = p.ledger();
    // The limits are used, not just respected: data fills records up to them.
    assert_eq!(largest_inner(&l, Direction::ServerToClient), 300);
    assert_eq!(largest_inner(&l, Direction::ClientToServer), 200);
}

#[test]
fn record_size_limit_counts_padding() {
    record_size_limit(300, 200, PaddingPolicy::Fixed(50));
    record_size_limit(300, 200, PaddingPolicy::ToMultiple(128));
}

#[test]
fn small_record_size_limits_split_messages_anywhere() {
    // With records of 63..=95 bytes, messages and their 4-byte headers straddle records at every
    // offset: the ledger must still add up (`check_ledger` runs on each connection).
    let mut straddled = 0;
    for limit in 64..=96u16 {
        let p = record_size_limit(limit, 64 + (limit * 7) % 33, PaddingPolicy::None);
        let l = p.ledger();
        assert!(l.records.len() > 20);
        // Count records that begin inside a message header.
        straddled += l
            .records
            .iter()
            .filter(|r| {
                r.messages
                    .first()
                    .is_some_and(|m| (1..4).contains(&m.offset))
            })
            .count();
        // Each message is listed once in its flight, however many records it spans.
        use HandshakeType as T;
        assert_eq!(
            l.messages_per_flight()[1].1,
            vec![
                T::ServerHello,
                T::EncryptedExtensions,
                T::Certificate,
                T::CertificateVerify,
                T::Finished
            ]
        );
    }
    assert!(
        straddled > 0,
        "no header was split: the test proves nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// KeyUpdate (§4.6.3)
// ---------------------------------------------------------------------------------------------

fn exchange_data(p: &mut Pair, round: u8) {
    let c_before = p.server_received().len();
    let s_before = p.client_received().len();
    let up = vec![round; 100];
    let down = vec![round ^ 0xff; 200];
    p.client.send(&up).unwrap();
    p.server.send(&down).unwrap();
    p.settle().unwrap();
    assert_eq!(&p.server_received()[c_before..], &up[..]);
    assert_eq!(&p.client_received()[s_before..], &down[..]);
}

/// The epochs of each direction's application-data records, in order, deduplicated.
fn app_epochs(l: &Ledger, dir: Direction) -> Vec<Epoch> {
    let mut v: Vec<Epoch> = l
        .records
        .iter()
        .filter(|r| r.record.direction == dir && matches!(r.record.epoch, Epoch::Application(_)))
        .map(|r| r.record.epoch)
        .collect();
    v.dedup();
    v
}

#[test]
fn key_update_each_way_with_and_without_request() {
    use Direction::{ClientToServer as C2S, ServerToClient as S2C};
    for (client_initiates, requested) in
        [(true, false), (true, true), (false, false), (false, true)]
    {
        let mut p = default_pair(70);
        exchange_data(&mut p, 1);
        if client_initiates {
            p.client.key_update(requested).unwrap();
        } else {
            p.server.key_update(requested).unwrap();
        }
        p.settle().unwrap();
        exchange_data(&mut p, 2);
        let (initiator, responder) = if client_initiates {
            (C2S, S2C)
        } else {
            (S2C, C2S)
        };
        let mut want = vec![(initiator, requested)];
        if requested {
            // §4.6.3: the receiver answers with its own update_not_requested KeyUpdate.
            want.push((responder, false));
        }
        let what = format!("client initiates {client_initiates}, requested {requested}");
        assert_eq!(key_updates(&p.client_events), want, "{what}");
        assert_eq!(key_updates(&p.server_events), want, "{what}");
        let l = p.ledger();
        let mut moved = vec![Epoch::Application(0), Epoch::Application(1)];
        assert_eq!(app_epochs(&l, initiator), moved, "{what}");
        if !requested {
            moved.pop();
        }
        assert_eq!(app_epochs(&l, responder), moved, "{what}");
        // The KeyUpdate is the last record under the old keys, alone in it (§5.1).
        for r in &l.records {
            if r.messages.iter().any(|m| m.typ == HandshakeType::KeyUpdate) {
                assert_eq!(r.messages.len(), 1);
                assert_eq!(r.record.epoch, Epoch::Application(0));
                let kind = match decode(&r.record.content) {
                    HandshakePayload::KeyUpdate(k) => k,
                    other => panic!("{other:?}"),
                };
                let first = r.record.direction == initiator;
                assert_eq!(
                    kind,
                    if first && requested {
                        KeyUpdateRequest::UpdateRequested
                    } else {
                        KeyUpdateRequest::UpdateNotRequested
                    },
                    "{what}"
                );
            }
        }
        check_ledger(&l);
        check_mirror(&p.client_events, &p.server_events);
    }
}

#[test]
fn many_key_updates_keep_data_flowing() {
    let mut p = default_pair(71);
    for round in 0..10u8 {
        if round % 2 == 0 {
            p.client.key_update(round % 4 == 0).unwrap();
        } else {
            p.server.key_update(round % 3 == 0).unwrap();
        }
        // Data may follow the KeyUpdate immediately, in the same flight.
        exchange_data(&mut p, round);
    }
    let c = app_epochs(&p.ledger(), Direction::ClientToServer);
    let s = app_epochs(&p.ledger(), Direction::ServerToClient);
    assert!(c.len() > 5 && s.len() > 5, "{c:?} {s:?}");
    check_ledger(&p.ledger());
    check_mirror(&p.client_events, &p.server_events);
}

#[test]
fn key_update_before_connected_is_refused() {
    let (server, root) = util::server_config(KeyKind::P256);
    let mut c = Client::new(
        Arc::new(client_config(root)),
        Box::new(SeededRandom::from_seed(3)),
    )
    .unwrap();
    assert!(matches!(c.key_update(false), Err(Error::InvalidState(_))));
    c.start(NOW).unwrap();
    assert!(matches!(c.key_update(true), Err(Error::InvalidState(_))));
    let mut s = Server::new(Arc::new(server), Box::new(SeededRandom::from_seed(4))).unwrap();
    assert!(matches!(s.key_update(false), Err(Error::InvalidState(_))));
}

// ---------------------------------------------------------------------------------------------
// Exporters (§7.5), close_notify (§6.1)
// ---------------------------------------------------------------------------------------------

#[test]
fn exporters_are_equal_on_both_sides() {
    let mut p = default_pair(80);
    let label = b"EXPORTER-tls13lab-test";
    for (ctx, len) in [
        (&b""[..], 32),
        (&b"context"[..], 32),
        (&b"context"[..], 100),
    ] {
        let c = p.client.export(label, ctx, len).unwrap();
        let s = p.server.export(label, ctx, len).unwrap();
        assert_eq!(c, s);
        assert_eq!(c.len(), len);
    }
    let a = p.client.export(label, b"a", 32).unwrap();
    let b = p.client.export(label, b"b", 32).unwrap();
    let other = p.client.export(b"EXPORTER-other", b"a", 32).unwrap();
    assert!(a != b && a != other && b != other);
    // The exporter does not move with KeyUpdate (§7.5 derives it from the master secret).
    p.client.key_update(true).unwrap();
    p.settle().unwrap();
    assert_eq!(p.server.export(label, b"a", 32).unwrap(), a);
    // A different connection exports different values.
    let mut q = default_pair(81);
    assert!(q.client.export(label, b"a", 32).unwrap() != a);
}

#[test]
fn close_notify_each_way() {
    use Direction::{ClientToServer as C2S, ServerToClient as S2C};
    let mut p = default_pair(90);
    exchange_data(&mut p, 1);
    p.client.close();
    p.settle().unwrap();
    assert!(p.server.is_closed(), "server read side closed");
    assert!(!p.client.is_closed(), "client still reads");
    assert_eq!(
        alerts(&p.server_events),
        vec![(C2S, AlertDescription::CloseNotify)]
    );
    assert!(matches!(p.client.send(b"x"), Err(Error::Closed)));
    // §6.1: closing the write side does not close the read side.
    p.server.send(b"still talking").unwrap();
    p.settle().unwrap();
    assert!(p.client_received().ends_with(b"still talking"));
    p.server.close();
    p.settle().unwrap();
    assert!(p.client.is_closed());
    assert!(matches!(p.server.send(b"x"), Err(Error::Closed)));
    let want = vec![
        (C2S, AlertDescription::CloseNotify),
        (S2C, AlertDescription::CloseNotify),
    ];
    assert_eq!(alerts(&p.client_events), want);
    assert_eq!(alerts(&p.server_events), want);
    for evs in [&p.client_events, &p.server_events] {
        assert_eq!(evs.iter().filter(|e| matches!(e, Event::Closed)).count(), 1);
    }
    // The close_notify records are protected under the application keys.
    for r in p
        .ledger()
        .records
        .iter()
        .filter(|r| r.record.inner_type == ContentType::Alert)
    {
        assert_eq!(r.record.content, [1, 0]);
        assert_eq!(r.record.epoch, Epoch::Application(0));
    }
    check_ledger(&p.ledger());
    check_mirror(&p.client_events, &p.server_events);
}

// ---------------------------------------------------------------------------------------------
// Determinism
// ---------------------------------------------------------------------------------------------

/// Every byte each way, and every event, of one request/response connection.
struct Transcript {
    wire: Vec<(Direction, Vec<u8>)>,
    client_events: Vec<Event>,
    server_events: Vec<Event>,
}

fn transcript(seed: u64, kind: KeyKind) -> Transcript {
    let (mut server, root) = util::server_config(kind);
    // A HelloRetryRequest with a cookie, compatibility mode and client authentication: every
    // random draw of the handshake is exercised.
    server.hrr_cookie = Some(16);
    server.groups = vec![NamedGroup::secp256r1];
    let mut client = client_config(root);
    client.compat_mode = true;
    client.client_cert = Some(util::client_identity().0);
    let mut server = server;
    server.client_auth = ClientAuth::Required(vec![util::client_identity().1]);
    let mut c = Client::new(
        Arc::new(client),
        Box::new(SeededRandom::from_seed(seed * 2)),
    )
    .unwrap();
    let mut s = Server::new(
        Arc::new(server),
        Box::new(SeededRandom::from_seed(seed * 2 + 1)),
    )
    .unwrap();
    let mut t = Transcript {
        wire: Vec::new(),
        client_events: Vec::new(),
        server_events: Vec::new(),
    };
    let (mut request, mut response) = (Vec::new(), Vec::new());
    c.start(NOW).unwrap();
    for step in 0..12 {
        if c.is_connected() && step == 4 {
            c.send(REQUEST).unwrap();
            c.key_update(true).unwrap();
        }
        if s.is_connected() && step == 5 {
            s.send(RESPONSE).unwrap();
            s.close();
        }
        let out = c.take_output();
        if !out.is_empty() {
            let now = NOW + step as u64;
            lab::demo::deliver(&mut s, &out, now, &mut Vec::new(), &mut request).unwrap();
            t.wire.push((Direction::ClientToServer, out));
        }
        let out = s.take_output();
        if !out.is_empty() {
            let now = NOW + step as u64;
            lab::demo::deliver(&mut c, &out, now, &mut Vec::new(), &mut response).unwrap();
            t.wire.push((Direction::ServerToClient, out));
        }
        t.client_events.extend(c.events());
        t.server_events.extend(s.events());
    }
    assert!(c.is_closed());
    assert_eq!(request, REQUEST);
    assert_eq!(response, RESPONSE);
    t
}

#[test]
fn same_seed_same_bytes_and_events() {
    // P-521's nonce, the PSS salts and ML-DSA's rnd are drawn from the seed: they replay too.
    for kind in [
        KeyKind::P256,
        KeyKind::Rsa2048,
        KeyKind::P521,
        KeyKind::RsaPss,
        KeyKind::MlDsa65,
    ] {
        let a = transcript(5, kind);
        let b = transcript(5, kind);
        assert!(a.wire.len() >= 6, "{kind:?}");
        assert_eq!(a.wire, b.wire, "{kind:?}");
        assert_eq!(a.client_events, b.client_events, "{kind:?}");
        assert_eq!(a.server_events, b.server_events, "{kind:?}");
        check_ledger(&Ledger::from_events(&a.client_events));
        check_mirror(&a.client_events, &a.server_events);
    }
}

#[test]
fn different_seeds_differ() {
    let a = transcript(5, KeyKind::P256);
    let b = transcript(6, KeyKind::P256);
    assert_eq!(a.wire.len(), b.wire.len());
    // Every flight differs (randoms, shares, signatures, keys), though the shapes match.
    for ((da, wa), (db, wb)) in a.wire.iter().zip(&b.wire) {
        assert_eq!(da, db);
        assert!(wa != wb, "{da:?} flight repeated across seeds");
    }
    assert!(a.client_events != b.client_events);
    assert!(a.server_events != b.server_events);
    // Client and server streams of one seed are independent too.
    let randoms = |evs: &[Event]| -> Vec<[u8; 32]> {
        handshake_messages(evs, Direction::ServerToClient)
            .iter()
            .filter_map(|(_, m)| match decode(m) {
                HandshakePayload::ServerHello(sh) => Some(sh.random),
                _ => None,
            })
            .collect()
    };
    assert!(randoms(&a.client_events) != randoms(&b.client_events));
}

// ---------------------------------------------------------------------------------------------
// Ledger accounting and padding (§5.2, §5.4)
// ---------------------------------------------------------------------------------------------

#[test]
fn ledger_totals_match_a_hand_count() {
    let p = run(
        {
            let (_, root) = util::server_config(KeyKind::P256);
            client_config(root)
        },
        util::server_config(KeyKind::P256).0,
        95,
    );
    let l = p.ledger();
    // Count independently: every record sent by either side in the events.
    let mut bytes = [0usize; 2];
    for r in util::records(&p.client_events) {
        bytes[usize::from(r.direction == Direction::ServerToClient)] += r.header.len()
            + r.content.len()
            + if r.seq.is_some() {
                1 + r.padding_len + 16
            } else {
                0
            };
    }
    assert_eq!(l.totals.client_to_server.bytes, bytes[0]);
    assert_eq!(l.totals.server_to_client.bytes, bytes[1]);
    assert_eq!(
        l.totals.client_to_server.app_bytes + l.totals.server_to_client.app_bytes,
        REQUEST.len() + RESPONSE.len()
    );
    let hs: usize = handshake_messages(&p.client_events, Direction::ServerToClient)
        .iter()
        .map(|(_, b)| b.len())
        .sum();
    assert_eq!(l.totals.server_to_client.handshake_bytes, hs);
}

fn padded(client: PaddingPolicy, server: PaddingPolicy) -> Pair {
    let (mut s, root) = util::server_config(KeyKind::P256);
    s.padding = server;
    let mut c = client_config(root);
    c.padding = client;
    let big: Vec<u8> = vec![0x42; 20_000];
    let p = run_with(c, s, 96, REQUEST, &big);
    let l = p.ledger();
    for (dir, policy) in [
        (Direction::ClientToServer, client),
        (Direction::ServerToClient, server),
    ] {
        let mut padding = 0;
        for r in l
            .records
            .iter()
            .filter(|r| r.record.direction == dir && r.record.seq.is_some())
        {
            assert_eq!(
                r.record.padding_len,
                policy.padding_for(r.record.plaintext_len),
                "{policy:?} {:?}",
                r.record
            );
            assert!(r.record.plaintext_len + 1 + r.record.padding_len <= (1 << 14) + 1);
            padding += r.record.padding_len;
        }
        let t = match dir {
            Direction::ClientToServer => l.totals.client_to_server,
            Direction::ServerToClient => l.totals.server_to_client,
        };
        assert_eq!(t.padding_bytes, padding);
    }
    p
}

#[test]
fn padding_policy_is_reflected_in_the_ledger() {
    let p = padded(PaddingPolicy::Fixed(7), PaddingPolicy::ToMultiple(256));
    let l = p.ledger();
    assert!(l.totals.client_to_server.padding_bytes >= 7 * 3);
    assert!(l.totals.server_to_client.padding_bytes > 0);
    for r in l
        .records
        .iter()
        .filter(|r| r.record.direction == Direction::ServerToClient && r.record.seq.is_some())
    {
        // Inner plaintext padded to a multiple of 256, except the full 2^14 records (no room).
        let inner = r.record.plaintext_len + 1 + r.record.padding_len;
        assert!(
            inner % 256 == 0 || r.record.plaintext_len == 1 << 14,
            "{inner}"
        );
    }
    // Padding never touches plaintext records (ClientHello, ServerHello).
    assert!(l
        .records
        .iter()
        .filter(|r| r.record.seq.is_none())
        .all(|r| r.record.padding_len == 0));
}

#[test]
fn no_padding_means_no_padding_bytes() {
    let p = padded(PaddingPolicy::None, PaddingPolicy::None);
    let l = p.ledger();
    assert_eq!(l.totals.client_to_server.padding_bytes, 0);
    assert_eq!(l.totals.server_to_client.padding_bytes, 0);
    let p = padded(PaddingPolicy::ToMultiple(32), PaddingPolicy::Fixed(1000));
    assert!(p.ledger().totals.server_to_client.padding_bytes >= 1000 * 3);
}

/// RFC 8446 §6: once the client has handshake keys, its alerts are protected — a certificate it
/// rejects is answered with an encrypted bad_certificate/unknown_ca, not a plaintext alert.
#[test]
fn client_alert_after_server_hello_is_encrypted() {
    use std::sync::Arc;
    let now = 1_767_225_600_000;
    let (s, _root) = lab::demo::server_config(21, now).unwrap();
    let (_, other_root) = lab::demo::server_config(22, now).unwrap();
    let c = lab::demo::client_config(other_root);
    let mut p = lab::demo::Pair::new(Arc::new(c), Arc::new(s), 5, now).unwrap();
    p.client.start(now).unwrap();
    p.client_to_server().unwrap();
    let err = p.server_to_client().unwrap_err();
    // Same subject as our root but another key: the signature does not verify (bad_certificate).
    let alert = err.alert().unwrap();
    assert_eq!(
        alert,
        tls13lab::messages::enums::AlertDescription::BadCertificate
    );
    let out = p.client.take_output();
    assert_eq!(
        out[0], 23,
        "alert record must be protected (application_data on the wire)"
    );
    assert_eq!(out.len(), 5 + 2 + 1 + 16);
    // And the server decrypts it as the alert.
    let e = p.server.receive(&out, now).unwrap_err();
    assert_eq!(e, tls13lab::Error::AlertReceived(alert));
}

// ---------------------------------------------------------------------------------------------
// Records in the caller's buffers: seal_in_place / open_in_place
// ---------------------------------------------------------------------------------------------

/// Feeds `wire` to `open` the way a socket would deliver it, in chunks of `chunk` bytes, into
/// one caller-owned buffer that keeps a partial record between reads. Returns the plaintext
/// opened in place, in order.
fn open_stream(
    wire: &[u8],
    chunk: usize,
    mut open: impl FnMut(&mut [u8]) -> Result<tls13lab::Opened, Error>,
) -> Result<Vec<u8>, Error> {
    let mut buf = vec![0u8; tls13lab::record::MAX_RECORD_LEN + chunk];
    let (mut filled, mut got) = (0, Vec::new());
    for piece in wire.chunks(chunk) {
        buf[filled..filled + piece.len()].copy_from_slice(piece);
        filled += piece.len();
        let mut start = 0;
        loop {
            let o = open(&mut buf[start..filled])?;
            if let Some(r) = &o.data {
                assert!(
                    r.end <= o.consumed,
                    "plaintext lies within what was consumed"
                );
                got.extend_from_slice(&buf[start + r.start..start + r.end]);
            }
            start += o.consumed;
            if o.consumed == 0 || o.data.is_none() {
                break;
            }
        }
        // The partial record (if any) moves to the front; nothing else is kept.
        buf.copy_within(start..filled, 0);
        filled -= start;
        assert!(
            filled < tls13lab::record::MAX_RECORD_LEN,
            "at most one record kept"
        );
    }
    Ok(got)
}

/// Seals `data` record by record (at most `max` bytes each) in one caller-owned buffer, which
/// holds nothing but the plaintext before `seal` runs; returns the wire bytes.
fn seal_stream(
    data: &[u8],
    max: usize,
    mut seal: impl FnMut(&mut [u8], usize) -> Result<usize, Error>,
) -> Vec<u8> {
    let h = tls13lab::record::HEADER_LEN;
    let mut wire = Vec::new();
    let mut buf = vec![0u8; tls13lab::record::MAX_RECORD_LEN];
    for piece in data.chunks(max) {
        buf.fill(0xee);
        buf[h..h + piece.len()].copy_from_slice(piece);
        let n = seal(&mut buf, piece.len()).expect("seal");
        wire.extend_from_slice(&buf[..n]);
    }
    wire
}

/// Sealing in place makes exactly the records `send` makes (same keys, same sequence numbers,
/// same padding), and opening them in place gives back every byte, for every suite, however
/// the bytes are cut on the way.
#[test]
fn sealing_in_place_matches_send_and_opens_in_place() {
    let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7 + i / 300) as u8).collect();
    for (i, policy) in [PaddingPolicy::None, PaddingPolicy::ToMultiple(64)]
        .into_iter()
        .enumerate()
    {
        for suite in SUITES {
            // Same seed, same keys: three copies of one connection.
            let mk = || {
                let (mut server, root) = util::server_config(KeyKind::P256);
                let mut client = client_config(root);
                client.padding = policy;
                server.padding = policy;
                server.cipher_suites = vec![suite];
                client.cipher_suites = vec![suite];
                connect(client, server, 40 + i as u64)
            };
            let mut a = mk();
            a.client.send(&data).unwrap();
            let sent = a.client.take_output();
            let mut b = mk();
            let max = b.client.max_record_plaintext();
            assert_eq!(max, 1 << 14);
            let wire = seal_stream(&data, max, |buf, n| {
                let need = b.client.sealed_len(n);
                let got = b.client.seal_in_place(&mut buf[..need], n)?;
                assert_eq!(got, need);
                Ok(got)
            });
            assert_eq!(wire, sent, "{suite:?} {policy:?}: the bytes send() makes");
            for chunk in [1, 5, 6, 700, 16_411, wire.len()] {
                let mut c = mk();
                let got =
                    open_stream(&wire, chunk, |buf| c.server.open_in_place(buf, NOW)).unwrap();
                assert_eq!(got, data, "{suite:?} {policy:?}, chunks of {chunk}");
                // Handed over in place, not buffered for `read`.
                assert_eq!(c.server.readable(), 0);
            }
        }
    }
}

/// A whole connection on the in-place calls alone: the handshake records take the buffered
/// path inside `open_in_place`, application data both ways is sealed and opened in place, and
/// the record events (Observe::ALL_WITH_SECRETS) still mirror each other and add up in the ledgers.
#[test]
fn a_whole_connection_on_the_in_place_calls() {
    let (server, root) = util::server_config(KeyKind::P256);
    let mut p = Pair::new(Arc::new(client_config(root)), Arc::new(server), 61, NOW).unwrap();
    let (mut cev, mut sev) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; tls13lab::record::MAX_RECORD_LEN];
    p.client.start(NOW).unwrap();
    for _ in 0..8 {
        let c = p.client.take_output();
        assert!(open_stream(&c, 1000, |b| p.server.open_in_place(b, NOW))
            .unwrap()
            .is_empty());
        let s = p.server.take_output();
        assert!(open_stream(&s, 1000, |b| p.client.open_in_place(b, NOW))
            .unwrap()
            .is_empty());
        cev.extend(p.client.events());
        sev.extend(p.server.events());
    }
    assert!(p.client.is_connected() && p.server.is_connected());
    let h = tls13lab::record::HEADER_LEN;
    for (i, msg) in [&b"ping"[..], &[0x5a; 20_000][..], b""].iter().enumerate() {
        // Client to server, then the answer back, each record sealed and opened in place.
        let n = msg.len().min(p.client.max_record_plaintext());
        buf[h..h + n].copy_from_slice(&msg[..n]);
        let len = p.client.seal_in_place(&mut buf, n).unwrap();
        let o = p.server.open_in_place(&mut buf[..len], NOW).unwrap();
        assert_eq!(o.consumed, len, "record {i}");
        let got = o.data.map(|r| buf[r].to_vec()).unwrap_or_default();
        assert_eq!(got, &msg[..n], "record {i}");
        let reply = format!("reply {i}");
        buf[h..h + reply.len()].copy_from_slice(reply.as_bytes());
        let len = p.server.seal_in_place(&mut buf, reply.len()).unwrap();
        let o = p.client.open_in_place(&mut buf[..len], NOW).unwrap();
        assert_eq!(&buf[o.data.unwrap()], reply.as_bytes());
        cev.extend(p.client.events());
        sev.extend(p.server.events());
    }
    p.client.close();
    let c = p.client.take_output();
    open_stream(&c, 7, |b| p.server.open_in_place(b, NOW)).unwrap();
    cev.extend(p.client.events());
    sev.extend(p.server.events());
    assert!(p.server.is_closed());
    check_mirror(&cev, &sev);
    check_ledger(&Ledger::from_events(&cev));
    check_ledger(&Ledger::from_events(&sev));
    let sent = Ledger::from_events(&cev).totals.client_to_server.records;
    assert!(sent >= 5, "ledger counts the in-place records ({sent})");
}

/// After the handshake `open_in_place` still takes everything a peer may send: tickets, a
/// KeyUpdate (answered, and the new keys used for what follows), data sent with `send`, and
/// close_notify, after which the rest of the buffer is ignored (§6.1).
#[test]
fn open_in_place_takes_tickets_key_updates_and_close_notify() {
    for chunk in [1, 3, 64, 5_000, 100_000] {
        let mut p = default_pair(62);
        let tickets_before = p.client.tickets().len();
        let mut wire = Vec::new();
        let mut expect = Vec::new();
        p.server.send_ticket().unwrap();
        p.server.send(b"buffered ").unwrap();
        expect.extend_from_slice(b"buffered ");
        p.server.key_update(true).unwrap();
        wire.extend(p.server.take_output());
        let body = vec![0x33u8; 30_000];
        wire.extend(seal_stream(&body, 1 << 14, |buf, n| {
            p.server.seal_in_place(buf, n)
        }));
        expect.extend_from_slice(&body);
        p.server.close();
        wire.extend(p.server.take_output());
        wire.extend_from_slice(b"ignored after close_notify");
        let got = open_stream(&wire, chunk, |b| p.client.open_in_place(b, NOW)).unwrap();
        // Data sent with `send` opens in place too: only handshake messages and alerts
        // take the buffered path.
        assert_eq!(got, expect, "chunks of {chunk}");
        assert_eq!(p.client.readable(), 0);
        let evs: Vec<Event> = p.client.events().collect();
        assert_eq!(p.client.tickets().len(), tickets_before + 1);
        assert_eq!(
            key_updates(&evs),
            [
                (Direction::ServerToClient, true),
                (Direction::ClientToServer, false)
            ]
        );
        assert!(p.client.is_closed());
        // The client's answering KeyUpdate reaches the server.
        let c = p.client.take_output();
        p.server.receive(&c, NOW).unwrap();
    }
}

/// Half a record fed to `receive`, the rest to `open_in_place`: that record completes the
/// buffered way (its data waits for `read`), and the records after it open in place.
#[test]
fn open_in_place_after_a_half_record_from_receive() {
    let mut p = default_pair(63);
    p.server.send(b"first record").unwrap();
    p.server.send(b"second record").unwrap();
    let mut wire = p.server.take_output();
    p.client.receive(&wire[..10], NOW).unwrap();
    let got = open_stream(&wire[10..], 4, |b| p.client.open_in_place(b, NOW)).unwrap();
    assert_eq!(got, b"second record");
    assert_eq!(p.client.read_all(), b"first record");
    // Truncated input is no error: the caller keeps the bytes.
    p.server.send(b"third").unwrap();
    wire = p.server.take_output();
    let n = wire.len();
    let o = p.client.open_in_place(&mut wire[..n - 1], NOW).unwrap();
    assert_eq!(
        o,
        tls13lab::Opened {
            consumed: 0,
            data: None
        }
    );
    let o = p.client.open_in_place(&mut wire, NOW).unwrap();
    assert_eq!((o.consumed, &wire[o.data.unwrap()]), (n, &b"third"[..]));
}

/// Bad records given to `open_in_place` fail as they do through `receive`, with the alert
/// RFC 8446 prescribes, and the connection stays dead.
#[test]
fn open_in_place_rejects_bad_records_with_their_alerts() {
    type Spoil = fn(&mut Vec<u8>);
    let cases: [(&str, Spoil, AlertDescription); 4] = [
        (
            "flipped tag bit",
            |w| *w.last_mut().unwrap() ^= 1,
            AlertDescription::BadRecordMac,
        ),
        (
            "flipped header bit",
            |w| w[2] ^= 1,
            AlertDescription::BadRecordMac,
        ),
        (
            "length over 2^14 + 256",
            |w| w[3..5].copy_from_slice(&(16_385u16 + 256).to_be_bytes()),
            AlertDescription::RecordOverflow,
        ),
        (
            "unknown record type",
            |w| w[0] = 0x42,
            AlertDescription::UnexpectedMessage,
        ),
    ];
    for (what, spoil, alert) in cases {
        let mut p = default_pair(64);
        p.server.send(b"some data").unwrap();
        let mut wire = p.server.take_output();
        spoil(&mut wire);
        let e = p.client.open_in_place(&mut wire, NOW).unwrap_err();
        assert_eq!(e.alert(), Some(alert), "{what}: {e}");
        let out = p.client.take_output();
        let err = p.server.receive(&out, NOW).unwrap_err();
        assert_eq!(
            err,
            Error::AlertReceived(alert),
            "{what}: the alert reaches the peer"
        );
        assert!(p.client.is_closed());
        assert_eq!(p.client.open_in_place(&mut wire, NOW), Err(Error::Closed));
    }
}

/// `seal_in_place` refuses what it cannot do — before the handshake, with output queued, too
/// much plaintext, too small a buffer, after close — and a refusal changes nothing: the
/// next record is sealed under the sequence number the refused one would have had.
#[test]
fn seal_in_place_refusals_change_nothing() {
    let (server, root) = util::server_config(KeyKind::P256);
    let mut fresh = Pair::new(Arc::new(client_config(root)), Arc::new(server), 1, NOW).unwrap();
    fresh.client.start(NOW).unwrap();
    let mut buf = vec![0u8; tls13lab::record::MAX_RECORD_LEN];
    for sealed in [
        fresh.client.seal_in_place(&mut buf, 3),
        fresh.server.seal_in_place(&mut buf, 3),
    ] {
        assert!(matches!(sealed, Err(Error::InvalidState(_))), "{sealed:?}");
    }

    let mut p = default_pair(65);
    p.server.send_ticket().unwrap();
    assert!(matches!(
        p.server.seal_in_place(&mut buf, 3),
        Err(Error::InvalidState(_))
    ));
    p.server_to_client().unwrap();
    let max = p.server.max_record_plaintext();
    assert!(matches!(
        p.server.seal_in_place(&mut buf, max + 1),
        Err(Error::InvalidState(_))
    ));
    let need = p.server.sealed_len(3);
    assert_eq!(need, 5 + 3 + 1 + 16);
    assert!(matches!(
        p.server.seal_in_place(&mut buf[..need - 1], 3),
        Err(Error::InvalidState(_))
    ));
    buf[5..8].copy_from_slice(b"abc");
    let n = p.server.seal_in_place(&mut buf, 3).unwrap();
    let o = p.client.open_in_place(&mut buf[..n], NOW).unwrap();
    assert_eq!(&buf[o.data.unwrap()], b"abc");
    p.server.close();
    assert_eq!(p.server.seal_in_place(&mut buf, 3), Err(Error::Closed));
}

/// Back-pressure (issue 15): a reader that reads slowly loses nothing and holds bounded memory.
/// `receive` stops taking input once unread data reaches the limit, returns how much it took,
/// and takes the rest once the data is read; what is read is the stream, in order. A
/// NewSessionTicket and a KeyUpdate in the middle of the data are still handled, and the
/// server's 0-RTT data has the same bound.
#[test]
fn a_slow_reader_gets_back_pressure_and_loses_nothing() {
    let mut p = default_pair(64);
    let limit = 20_000;
    p.client.set_buffer_limit(limit);
    let mut expect = Vec::new();
    for i in 0..40u32 {
        let chunk: Vec<u8> = (0..5_000u32).map(|j| (i * 7 + j) as u8).collect();
        p.server.send(&chunk).unwrap();
        expect.extend_from_slice(&chunk);
        if i == 10 {
            p.server.send_ticket().unwrap();
            p.server.key_update(false).unwrap();
        }
    }
    let wire = p.server.take_output();
    let tickets_before = p.client.tickets().len();
    let (mut rest, mut got, mut stops) = (&wire[..], Vec::new(), 0);
    let mut buf = [0u8; 3_000];
    while !rest.is_empty() || p.client.readable() > 0 {
        let n = p.client.receive(rest, NOW).unwrap();
        if n < rest.len() {
            stops += 1;
        }
        rest = &rest[n..];
        // Bounded: the limit plus at most one record's plaintext.
        assert!(
            p.client.readable() < limit + (1 << 14),
            "{} unread",
            p.client.readable()
        );
        // A slow reader: one small read per call.
        let k = p.client.read(&mut buf);
        got.extend_from_slice(&buf[..k]);
    }
    assert!(
        stops > 5,
        "the limit must have held input back ({stops} times)"
    );
    assert_eq!(got.len(), expect.len());
    assert!(got == expect, "the data, in order");
    assert_eq!(p.client.tickets().len(), tickets_before + 1);
    assert!(key_updates(&p.client.events().collect::<Vec<_>>())
        .contains(&(Direction::ServerToClient, false)));
    // Nothing is read twice, and reads after the end find nothing.
    assert_eq!(p.client.read(&mut buf), 0);
    assert!(p.client.read_all().is_empty());
}

/// `read` splits and joins records freely: a buffer smaller than a record takes it in pieces,
/// one larger takes several records at once.
#[test]
fn read_splits_and_joins_records() {
    let mut p = default_pair(65);
    for msg in [&b"one"[..], b"two two", b"three three three"] {
        p.server.send(msg).unwrap();
    }
    let wire = p.server.take_output();
    assert_eq!(p.client.receive(&wire, NOW).unwrap(), wire.len());
    assert_eq!(p.client.readable(), 27);
    let mut small = [0u8; 2];
    assert_eq!(p.client.read(&mut small), 2);
    assert_eq!(&small, b"on");
    let mut big = [0u8; 100];
    let n = p.client.read(&mut big);
    assert_eq!(&big[..n], b"etwo twothree three three");
    assert_eq!(p.client.readable(), 0);
}

/// Connections are `Send`: an embedder can move one, with its random source and observer, into
/// another thread or an async task.
#[test]
fn connections_are_send() {
    fn is_send<T: Send>(_: &T) {}
    let p = default_pair(66);
    is_send(&p.client);
    is_send(&p.server);
    let mut c = p.client;
    std::thread::spawn(move || c.send(b"from another thread").unwrap())
        .join()
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Post-handshake client authentication (§4.6.2)
// ---------------------------------------------------------------------------------------------

/// A connected pair whose server may ask after the handshake with `auth`; the client has its
/// certificate when `with_cert`, and offers post_handshake_auth either way.
fn pha_pair(auth: ClientAuth, with_cert: bool, seed: u64) -> Pair {
    pha_pair_with(auth, with_cert.then(|| util::client_identity().0), seed)
}

/// [`pha_pair`] with the client's credential given (`None`: no certificate).
fn pha_pair_with(
    auth: ClientAuth,
    client_cert: Option<tls13lab::config::CertifiedKey>,
    seed: u64,
) -> Pair {
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.post_handshake_auth = auth;
    let mut client = client_config(root);
    if client_cert.is_some() {
        client.client_cert = client_cert;
    } else {
        client.post_handshake_auth = Some(true);
    }
    // Every key-schedule step is reported, with what its transcript covers.
    client.observe = tls13lab::Observe::ALL_WITH_SECRETS;
    server.observe = tls13lab::Observe::ALL_WITH_SECRETS;
    let mut p = Pair::new(Arc::new(client), Arc::new(server), seed, NOW).expect("pair");
    p.handshake().expect("handshake");
    p.settle().expect("tickets");
    p
}

/// The PostHandshakeAuth events: (direction, context, certificates, scheme).
fn pha_events(events: &[Event]) -> Vec<(Direction, Vec<u8>, usize, Option<SignatureScheme>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::PostHandshakeAuth {
                direction,
                context,
                certificates,
                scheme,
                ..
            } => Some((*direction, context.clone(), *certificates, *scheme)),
            _ => None,
        })
        .collect()
}

/// The client's handshake messages after its Finished, with the epoch they went under.
fn client_post_handshake(p: &Pair) -> Vec<(HandshakeType, Epoch, Vec<u8>)> {
    let msgs: Vec<_> = p
        .client_events
        .iter()
        .filter_map(|e| match e {
            Event::Handshake(h) if h.direction == Direction::ClientToServer => {
                Some((h.typ, h.epoch, h.bytes.clone()))
            }
            _ => None,
        })
        .collect();
    let fin = msgs
        .iter()
        .position(|m| m.0 == HandshakeType::Finished)
        .expect("the client's Finished");
    msgs[fin + 1..].to_vec()
}

/// Two requests on one connection, each with its own context, with data before, between and
/// after them, and a KeyUpdate in between: the second answer's Finished is keyed from
/// client_application_traffic_secret_1 (§4.4.4).
#[test]
fn post_handshake_auth_twice_with_data_and_key_update_between() {
    let client_root = util::client_identity().1;
    let mut p = pha_pair(ClientAuth::Required(vec![client_root]), true, 90);
    // §4.2.6: the client offered the extension; the handshake itself asked for nothing.
    let ch = &client_hellos(&p)[0];
    assert!(ch.find(ExtensionType::PostHandshakeAuth).is_some());
    assert_eq!(p.server.negotiated().unwrap().client_signature_scheme, None);
    exchange_data(&mut p, 1);
    let first = p.server.request_client_certificate(None).expect("request");
    assert_eq!(first.len(), 16, "a fresh context from the random source");
    p.settle().unwrap();
    exchange_data(&mut p, 2);
    p.client.key_update(true).unwrap();
    p.settle().unwrap();
    let second = p
        .server
        .request_client_certificate(Some(b"second"))
        .expect("request");
    assert_eq!(second, b"second");
    p.settle().unwrap();
    exchange_data(&mut p, 3);
    let scheme = Some(SignatureScheme::ecdsa_secp256r1_sha256);
    let want = vec![
        (Direction::ClientToServer, first.clone(), 1, scheme),
        (Direction::ClientToServer, second.clone(), 1, scheme),
    ];
    assert_eq!(pha_events(&p.client_events), want);
    assert_eq!(pha_events(&p.server_events), want);
    // Both sides report the Finished of each answer over the post-handshake context (§4.4.1).
    for evs in [&p.client_events, &p.server_events] {
        let contexts = evs
            .iter()
            .filter(|e| {
                matches!(e, Event::Derivation(d) if d.context_covers
                    == "ClientHello..client Finished + CertificateRequest..client CertificateVerify")
            })
            .count();
        assert_eq!(contexts, 2);
    }
    use HandshakeType as T;
    let answers = client_post_handshake(&p);
    let shape: Vec<_> = answers.iter().map(|(t, e, _)| (*t, *e)).collect();
    let (a0, a1) = (Epoch::Application(0), Epoch::Application(1));
    assert_eq!(
        shape,
        vec![
            (T::Certificate, a0),
            (T::CertificateVerify, a0),
            (T::Finished, a0),
            (T::KeyUpdate, a0),
            (T::Certificate, a1),
            (T::CertificateVerify, a1),
            (T::Finished, a1),
        ]
    );
    for (i, ctx) in [(0, &first), (4, &second)] {
        match decode(&answers[i].2) {
            HandshakePayload::Certificate(c) => {
                assert_eq!(&c.context, ctx);
                assert_eq!(c.entries.len(), 1);
            }
            other => panic!("{other:?}"),
        }
    }
    // The requests carry the contexts and our signature_algorithms (§4.3.2).
    let requests: Vec<_> = handshake_messages(&p.client_events, Direction::ServerToClient)
        .into_iter()
        .filter(|(t, _)| *t == T::CertificateRequest)
        .map(|(_, b)| match decode(&b) {
            HandshakePayload::CertificateRequest(cr) => cr,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].context, first);
    assert!(requests[1]
        .extensions
        .iter()
        .any(|e| matches!(e, Extension::SignatureAlgorithms(_))));
    check_ledger(&p.ledger());
    check_ledger(&Ledger::from_events(&p.server_events));
    check_mirror(&p.client_events, &p.server_events);
}

/// A post-handshake request answered with an ML-DSA-65 key (draft-ietf-tls-mldsa: the scheme
/// is as usable here as in the handshake, §4.6.2 reuses §4.4.3's CertificateVerify): both sides
/// report mldsa65, and the answer's CertificateVerify carries FIPS 204's one signature length.
#[test]
fn post_handshake_auth_answered_with_mldsa() {
    let (ck, root) = util::certified(KeyKind::MlDsa65);
    let mut p = pha_pair_with(ClientAuth::Required(vec![root]), Some(ck), 98);
    let ctx = p.server.request_client_certificate(None).expect("request");
    p.settle().unwrap();
    exchange_data(&mut p, 1);
    let want = vec![(
        Direction::ClientToServer,
        ctx,
        1,
        Some(SignatureScheme::mldsa65),
    )];
    assert_eq!(pha_events(&p.client_events), want);
    assert_eq!(pha_events(&p.server_events), want);
    let answers = client_post_handshake(&p);
    let cv = answers
        .iter()
        .find(|m| m.0 == HandshakeType::CertificateVerify)
        .expect("a CertificateVerify");
    match decode(&cv.2) {
        HandshakePayload::CertificateVerify(v) => {
            assert_eq!(v.scheme, SignatureScheme::mldsa65);
            let level = tls13lab::crypto::sign::MlDsaLevel::L65;
            assert_eq!(v.signature.len(), level.signature_len());
        }
        other => panic!("{other:?}"),
    }
    check_mirror(&p.client_events, &p.server_events);
}

/// Requests outstanding at once are answered in turn, each with its context.
#[test]
fn post_handshake_auth_requests_outstanding_at_once() {
    let mut p = pha_pair(ClientAuth::InsecureAcceptAny { required: false }, true, 91);
    let a = p.server.request_client_certificate(Some(b"a")).unwrap();
    let b = p.server.request_client_certificate(Some(b"b")).unwrap();
    // A context in use is refused: each answer must name one request (§4.3.2).
    assert!(matches!(
        p.server.request_client_certificate(Some(b"a")),
        Err(Error::InvalidState(_))
    ));
    p.settle().unwrap();
    exchange_data(&mut p, 1);
    let contexts: Vec<_> = pha_events(&p.server_events)
        .into_iter()
        .map(|e| e.1)
        .collect();
    assert_eq!(contexts, vec![a, b]);
    check_mirror(&p.client_events, &p.server_events);
}

/// A client without a certificate answers with an empty Certificate and Finished; a server
/// for which that is optional reports it (§4.4.2.4).
#[test]
fn post_handshake_auth_empty_certificate_when_optional() {
    let mut p = pha_pair(ClientAuth::InsecureAcceptAny { required: false }, false, 92);
    let ctx = p.server.request_client_certificate(None).unwrap();
    p.settle().unwrap();
    exchange_data(&mut p, 1);
    let want = vec![(Direction::ClientToServer, ctx.clone(), 0, None)];
    assert_eq!(pha_events(&p.client_events), want);
    assert_eq!(pha_events(&p.server_events), want);
    let answers = client_post_handshake(&p);
    let types: Vec<_> = answers.iter().map(|m| m.0).collect();
    assert_eq!(
        types,
        vec![HandshakeType::Certificate, HandshakeType::Finished]
    );
    match decode(&answers[0].2) {
        HandshakePayload::Certificate(c) => assert!(c.entries.is_empty() && c.context == ctx),
        other => panic!("{other:?}"),
    }
    check_mirror(&p.client_events, &p.server_events);
}

/// §4.4.2.4: a server that requires a certificate answers an empty one with
/// certificate_required.
#[test]
fn post_handshake_auth_missing_certificate_when_required() {
    let mut p = pha_pair(ClientAuth::InsecureAcceptAny { required: true }, false, 93);
    p.server.request_client_certificate(None).unwrap();
    p.server_to_client().unwrap();
    assert_eq!(
        p.client_to_server(),
        Err(Error::Peer(PeerMisbehaved::NoClientCertificate))
    );
    assert_eq!(
        p.server_to_client(),
        Err(Error::AlertReceived(AlertDescription::CertificateRequired))
    );
    assert!(pha_events(&p.server_events).is_empty());
}

/// A chain from a CA the server does not trust fails as in the handshake (unknown_ca).
#[test]
fn post_handshake_auth_certificate_from_unknown_ca() {
    let mut p = pha_pair(ClientAuth::Optional(vec![util::unrelated_root()]), true, 94);
    p.server.request_client_certificate(None).unwrap();
    p.server_to_client().unwrap();
    let e = p.client_to_server().expect_err("rejected");
    assert_eq!(e.alert(), Some(AlertDescription::UnknownCa), "{e:?}");
}

/// The call is refused unless connected, configured, and offered by the client (§4.2.6).
#[test]
fn post_handshake_auth_request_is_refused_when_not_allowed() {
    let refused = |p: &mut Pair| {
        matches!(
            p.server.request_client_certificate(None),
            Err(Error::InvalidState(_))
        )
    };
    // Before the handshake completes.
    let (mut server, root) = util::server_config(KeyKind::P256);
    server.post_handshake_auth = ClientAuth::InsecureAcceptAny { required: false };
    let mut client = client_config(root.clone());
    client.client_cert = Some(util::client_identity().0);
    let mut p = Pair::new(Arc::new(client.clone()), Arc::new(server.clone()), 95, NOW).unwrap();
    assert!(refused(&mut p));
    p.handshake().unwrap();
    // An empty context is the handshake's (§4.3.2).
    assert!(matches!(
        p.server.request_client_certificate(Some(b"")),
        Err(Error::InvalidState(_))
    ));
    assert!(!refused(&mut p), "allowed once connected");
    // A client without a certificate does not offer post_handshake_auth by default.
    client.client_cert = None;
    let mut p = Pair::new(Arc::new(client.clone()), Arc::new(server.clone()), 96, NOW).unwrap();
    p.handshake().unwrap();
    assert!(client_hellos(&p)[0]
        .find(ExtensionType::PostHandshakeAuth)
        .is_none());
    assert!(refused(&mut p));
    // A server not configured to ask.
    client.client_cert = Some(util::client_identity().0);
    server.post_handshake_auth = ClientAuth::None;
    let mut p = Pair::new(Arc::new(client), Arc::new(server), 97, NOW).unwrap();
    p.handshake().unwrap();
    assert!(refused(&mut p));
}

#[cfg(feature = "cert-compression")]
mod cert_compression {
    use super::*;
    use tls13lab::messages::enums::CertificateCompressionAlgorithm;

    // ---------------------------------------------------------------------------------------------
    // Certificate compression (RFC 8879)
    // ---------------------------------------------------------------------------------------------

    /// The CompressedCertificate among `msgs`, decoded, if there is one (and then no Certificate).
    fn compressed_certificate(
        msgs: &[(HandshakeType, Vec<u8>)],
    ) -> Option<tls13lab::messages::CompressedCertificate> {
        let mut found = None;
        let mut plain = 0;
        for (t, bytes) in msgs {
            if let HandshakePayload::CompressedCertificate(cc) = decode(bytes) {
                assert!(found.is_none(), "one CompressedCertificate");
                found = Some(cc);
            } else if *t == HandshakeType::Certificate {
                plain += 1;
            }
        }
        // One certificate message either way: compressed, or not.
        assert_eq!(plain + usize::from(found.is_some()), 1, "one of the two");
        found
    }

    /// A server with the compressible certificate, and the client that trusts it.
    fn compression_configs(
        client_algs: &[CertificateCompressionAlgorithm],
        server_algs: &[CertificateCompressionAlgorithm],
    ) -> (ClientConfig, ServerConfig) {
        let (ck, root) = util::compressible_identity(0xc0_0001);
        let mut server = ServerConfig::new(ck);
        server.observe = Observe::PUBLIC;
        server.cert_compression = server_algs.to_vec();
        let mut client = client_config(root);
        client.cert_compression = client_algs.to_vec();
        (client, server)
    }

    /// Each algorithm compresses the server's Certificate: the client validates the chain inside
    /// and the handshake completes, so both transcripts held the same CompressedCertificate (§4);
    /// both ledgers show its algorithm and sizes.
    #[test]
    fn server_certificate_compressed_with_each_algorithm() {
        use CertificateCompressionAlgorithm as A;
        for (i, alg) in [A::Zlib, A::Brotli, A::Zstd].into_iter().enumerate() {
            let (client, server) = compression_configs(&[A::Zlib, A::Brotli, A::Zstd], &[alg]);
            let p = run(client, server, 700 + i as u64);
            let s2c = handshake_messages(&p.client_events, Direction::ServerToClient);
            let cc = compressed_certificate(&s2c).unwrap_or_else(|| panic!("{alg}: compressed"));
            assert_eq!(cc.algorithm, alg);
            let compressed = cc.compressed_certificate_message.len();
            assert!(
                compressed * 3 < cc.uncompressed_length as usize * 2,
                "{alg}: {compressed} of {}",
                cc.uncompressed_length
            );
            for ledger in [p.ledger(), Ledger::from_events(&p.server_events)] {
                let info = ledger
                    .records
                    .iter()
                    .flat_map(|r| &r.messages)
                    .find_map(|m| m.compression)
                    .expect("the ledger shows the compression");
                assert_eq!(info.algorithm, alg);
                assert_eq!(info.uncompressed_length, cc.uncompressed_length as usize);
                assert_eq!(info.compressed_length, compressed);
                assert!(ledger
                    .table()
                    .contains(&format!("{alg} {compressed} of {}", cc.uncompressed_length)));
            }
        }
    }

    /// The client's certificate, compressed as the server's CertificateRequest offered (§3), with
    /// each algorithm; the server validates the chain inside and its CertificateVerify.
    #[test]
    fn client_certificate_compressed_with_each_algorithm() {
        use CertificateCompressionAlgorithm as A;
        let (client_ck, client_root) = util::compressible_identity(0xc0_0002);
        for (i, alg) in [A::Zlib, A::Brotli, A::Zstd].into_iter().enumerate() {
            // The server's certificate goes uncompressed: only the client's is under test.
            let (mut client, mut server) =
                compression_configs(&[alg], &[A::Zlib, A::Brotli, A::Zstd]);
            server.client_auth = ClientAuth::Required(vec![client_root.clone()]);
            client.client_cert = Some(client_ck.clone());
            let p = run(client, server, 710 + i as u64);
            let c2s = handshake_messages(&p.server_events, Direction::ClientToServer);
            let cc = compressed_certificate(&c2s).unwrap_or_else(|| panic!("{alg}: compressed"));
            assert_eq!(cc.algorithm, alg);
            let s2c = handshake_messages(&p.client_events, Direction::ServerToClient);
            assert_eq!(compressed_certificate(&s2c).map(|c| c.algorithm), Some(alg));
            let cr = s2c
                .iter()
                .find_map(|(_, b)| match decode(b) {
                    HandshakePayload::CertificateRequest(cr) => Some(cr),
                    _ => None,
                })
                .expect("CertificateRequest");
            assert!(cr.extensions.contains(&Extension::CompressCertificate(vec![
                A::Zlib,
                A::Brotli,
                A::Zstd
            ])));
            assert_eq!(
                p.server.negotiated().unwrap().client_signature_scheme,
                Some(SignatureScheme::ecdsa_secp256r1_sha256)
            );
        }
    }

    /// The server picks by its own preference among what the client offered (§4), and sends the
    /// Certificate uncompressed when the client offers nothing it has, or either side is off.
    #[test]
    fn the_server_preference_picks_the_algorithm_and_off_means_uncompressed() {
        use CertificateCompressionAlgorithm as A;
        let cases: [(&[A], &[A], Option<A>); 5] = [
            (
                &[A::Brotli, A::Zlib],
                &[A::Zstd, A::Zlib, A::Brotli],
                Some(A::Zlib),
            ),
            (
                &[A::Zstd, A::Unknown(0x4001)],
                &[A::Brotli, A::Zstd],
                Some(A::Zstd),
            ),
            (&[A::Zlib], &[A::Brotli], None),
            (&[], &[A::Brotli], None),
            (&[A::Brotli], &[], None),
        ];
        for (i, (client_algs, server_algs, want)) in cases.into_iter().enumerate() {
            let (client, server) = compression_configs(client_algs, server_algs);
            let p = run(client, server, 720 + i as u64);
            let s2c = handshake_messages(&p.client_events, Direction::ServerToClient);
            assert_eq!(
                compressed_certificate(&s2c).map(|c| c.algorithm),
                want,
                "{client_algs:?} / {server_algs:?}"
            );
            let ch = &client_hellos(&p)[0];
            let offered = ch.find(ExtensionType::CompressCertificate);
            if client_algs.is_empty() {
                assert_eq!(offered, None, "nothing offered when off");
            } else {
                assert_eq!(
                    offered,
                    Some(&Extension::CompressCertificate(client_algs.to_vec()))
                );
            }
        }
    }

    /// A post-handshake CertificateRequest offers compression too, and the client's answer is
    /// compressed (§4.6.2 with RFC 8879 §3).
    #[test]
    fn post_handshake_client_certificate_is_compressed() {
        use CertificateCompressionAlgorithm as A;
        let (client_ck, client_root) = util::compressible_identity(0xc0_0003);
        let (mut client, mut server) = compression_configs(&[A::Brotli], &[A::Brotli]);
        server.post_handshake_auth = ClientAuth::Required(vec![client_root]);
        client.client_cert = Some(client_ck);
        let mut p = connect(client, server, 730);
        p.server
            .request_client_certificate(Some(b"ctx"))
            .expect("request");
        p.settle().expect("answer");
        assert!(p.server_events.iter().any(|e| matches!(
            e,
            Event::PostHandshakeAuth {
                certificates: 1,
                scheme: Some(_),
                ..
            }
        )));
        let c2s = handshake_messages(&p.server_events, Direction::ClientToServer);
        assert_eq!(
            compressed_certificate(&c2s).map(|c| c.algorithm),
            Some(A::Brotli)
        );
    }
}

/// ECH (RFC 9849) between our client and our server, in memory (lab::ech, docs/ech.md):
/// accepted, GREASE (ignored), a stale config rejected with retry_configs, and the retry with
/// them accepted; the whole set replays from its seeds.
#[test]
fn ech_between_our_client_and_server() {
    use tls13lab::events::EchOutcome;
    let runs = lab::ech::runs().expect("ECH runs");
    let outcome = |label: &str| {
        let r = runs.iter().find(|r| r.label == label).expect(label);
        (r.ledger.ech.as_ref().map(|e| e.outcome), r.end.as_str())
    };
    assert_eq!(outcome("no ECH"), (None, "connected"));
    assert_eq!(
        outcome("ECH accepted"),
        (Some(EchOutcome::Accepted), "connected")
    );
    assert_eq!(
        outcome("GREASE ECH"),
        (Some(EchOutcome::Grease), "connected")
    );
    let (o, end) = outcome("stale config: rejected");
    assert_eq!(o, Some(EchOutcome::Rejected));
    assert!(end.contains("rejected ECH"), "{end}");
    assert_eq!(
        outcome("retry with retry_configs"),
        (Some(EchOutcome::Accepted), "connected")
    );
    let accepted = runs.iter().find(|r| r.label == "ECH accepted").unwrap();
    let e = accepted.ledger.ech.as_ref().unwrap();
    assert_eq!(e.inner_sni.as_deref(), Some(lab::ech::INNER_NAME));
    assert_eq!(e.outer_sni.as_deref(), Some(lab::ech::PUBLIC_NAME));
    // The hybrid key share is sent once: ECH adds far less than a second ClientHello.
    let plain = runs.iter().find(|r| r.label == "no ECH").unwrap();
    assert!(accepted.client_hello_len < plain.client_hello_len + 400);
    // draft-ietf-hpke-pq: ECHConfigs with ML-KEM-768 and X-Wing are accepted too. The outer
    // hello grows by exactly the larger enc (a KEM ciphertext instead of an X25519 key): the
    // same inner hello is sealed.
    for (label, enc_len) in [
        ("ECH accepted, ML-KEM-768 config", 1088),
        ("ECH accepted, X-Wing config", 1120),
    ] {
        assert_eq!(
            outcome(label),
            (Some(EchOutcome::Accepted), "connected"),
            "{label}"
        );
        let r = runs.iter().find(|r| r.label == label).unwrap();
        assert_eq!(
            r.client_hello_len,
            accepted.client_hello_len + enc_len - 32,
            "{label}"
        );
        assert_eq!(
            r.ledger.ech.as_ref().unwrap().inner_sni.as_deref(),
            Some(lab::ech::INNER_NAME)
        );
    }
    let again = lab::ech::runs().expect("ECH runs");
    for (a, b) in runs.iter().zip(&again) {
        assert_eq!(a.ledger.table(), b.ledger.table(), "{}", a.label);
    }
}

/// draft-ietf-hpke-pq: an ECHConfig with ML-KEM-1024 (0x0042) and AES-256-GCM, in memory:
/// accepted, the inner name reached, and the outer hello larger than with an X25519 config of
/// the same suite by exactly the larger enc (a 1568-byte ciphertext instead of a 32-byte key);
/// the connection replays from its seed.
#[test]
fn ech_with_an_ml_kem_1024_config() {
    use lab::ech;
    use tls13lab::config::EchMode;
    use tls13lab::crypto::ech::{EchKeyPair, EchKeyParams};
    use tls13lab::crypto::hpke::Kem;
    use tls13lab::events::{EchOutcome, EchStatus};
    use tls13lab::messages::ech::HpkeSymmetricCipherSuite;
    use tls13lab::messages::enums::{HpkeAeadId, HpkeKdfId, HpkeKemId};
    let key = |kem| {
        let params = EchKeyParams {
            public_name: ech::PUBLIC_NAME.into(),
            kem,
            suites: vec![HpkeSymmetricCipherSuite {
                kdf_id: HpkeKdfId::HkdfSha256,
                aead_id: HpkeAeadId::Aes256Gcm,
            }],
            config_id: Some(5),
            maximum_name_length: 32,
        };
        EchKeyPair::generate(&params, &mut SeededRandom::from_seed(5)).unwrap()
    };
    let connect = |k: EchKeyPair| {
        let list = k.list.clone();
        let (s, root) = ech::server(vec![k]).unwrap();
        let (r, err) = ech::run(
            "ECH",
            ech::client(root, EchMode::offer(list)),
            &Arc::new(s),
            11,
        )
        .unwrap();
        assert!(err.is_none(), "{err:?}");
        r
    };
    let mlkem = key(Kem::MlKem1024);
    let c = mlkem.config.contents().unwrap();
    assert_eq!(
        (c.key_config.kem_id, c.key_config.public_key.len()),
        (HpkeKemId::MlKem1024, 1568)
    );
    let r = connect(mlkem.clone());
    assert_eq!(r.end, "connected");
    let e = r.ledger.ech.as_ref().expect("the client's ECH outcome");
    assert_eq!(e.outcome, EchOutcome::Accepted);
    assert_eq!(e.inner_sni.as_deref(), Some(ech::INNER_NAME));
    let e = r.server_ledger.ech_server.as_ref().expect("the server's");
    assert_eq!(
        (e.status, e.aead, e.inner_sni.as_deref()),
        (
            EchStatus::Accepted,
            Some(HpkeAeadId::Aes256Gcm),
            Some(ech::INNER_NAME)
        )
    );
    let x25519 = connect(key(Kem::X25519HkdfSha256));
    assert_eq!(x25519.end, "connected");
    assert_eq!(r.client_hello_len, x25519.client_hello_len + 1568 - 32);
    let again = connect(mlkem);
    assert_eq!(again.ledger.table(), r.ledger.table());
}

/// RFC 9849 §7.1: asked to, a server with ECH keys that opened nothing sends eight random bytes
/// of encrypted_client_hello in its HelloRetryRequest, so the retry does not show the rejection
/// (§10.10.4); a client with a stale config reads them as no confirmation (§6.1.4) and ends with
/// retry_configs, a GREASE client ignores them (§6.2), and without an offer there is none.
#[test]
fn ech_rejecting_hello_retry_carries_random_bytes() {
    use lab::ech;
    use tls13lab::config::EchMode;
    use tls13lab::events::EchOutcome;
    let (mut s, root) = ech::server(vec![ech::key(1, 1).unwrap()]).unwrap();
    // The client's one share is X25519MLKEM768; a server wanting X25519 asks again.
    s.groups = vec![NamedGroup::X25519];
    s.ech_hrr_disguise = true;
    let s = Arc::new(s);
    let stale = EchMode::Config {
        list: ech::key(2, 2).unwrap().list,
        grease_fallback: false,
    };
    let mut bodies = Vec::new();
    for (seed, mode, want) in [
        (7, stale, Some(EchOutcome::Rejected)),
        (8, EchMode::Grease, Some(EchOutcome::Grease)),
        (9, EchMode::Off, None),
    ] {
        let offered = want.is_some();
        let mut c = ech::client(root.clone(), mode);
        c.groups = vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519];
        let mut p = Pair::new(Arc::new(c), s.clone(), seed, lab::demo::NOW_MS).unwrap();
        let result = p.handshake().and_then(|_| p.settle());
        let hrr = p
            .client_events
            .iter()
            .find_map(|e| match e {
                Event::Handshake(h) if h.typ == HandshakeType::ServerHello => Some(h.bytes.clone()),
                _ => None,
            })
            .expect("the HelloRetryRequest");
        let HandshakePayload::ServerHello(hrr) = decode(&hrr) else {
            panic!("not a ServerHello");
        };
        assert_eq!(hrr.random, HRR_RANDOM, "a HelloRetryRequest");
        let ech = hrr.extensions.iter().find_map(|e| match e {
            Extension::Unknown {
                typ: ExtensionType::EncryptedClientHello,
                body,
            } => Some(body.clone()),
            _ => None,
        });
        assert_eq!(ech.as_ref().map(Vec::len), offered.then_some(8), "{want:?}");
        bodies.extend(ech);
        assert_eq!(p.ledger().ech.as_ref().map(|e| e.outcome), want);
        match want {
            Some(EchOutcome::Rejected) => assert!(
                matches!(
                    result,
                    Err(Error::EchRejected {
                        retry_configs: Some(_)
                    })
                ),
                "{result:?}"
            ),
            _ => {
                result.expect("connects");
                assert!(p.client.is_connected());
            }
        }
    }
    // Drawn from the server's RandomSource, not a constant: other seeds, other bytes.
    assert_ne!(bodies[0], bodies[1]);
    // Off by default (OpenSSL 4.0.3's client aborts on it, docs/interop.md): no extension.
    let (mut s, root) = ech::server(vec![ech::key(1, 1).unwrap()]).unwrap();
    s.groups = vec![NamedGroup::X25519];
    let s = Arc::new(s);
    let mut c = ech::client(
        root,
        EchMode::Config {
            list: ech::key(2, 2).unwrap().list,
            grease_fallback: false,
        },
    );
    c.groups = vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519];
    let mut p = Pair::new(Arc::new(c), s, 7, lab::demo::NOW_MS).unwrap();
    assert!(p.handshake().and_then(|_| p.settle()).is_err());
    let hrr = p.client_events.iter().find_map(|e| match e {
        Event::Handshake(h) if h.typ == HandshakeType::ServerHello => Some(decode(&h.bytes)),
        _ => None,
    });
    let Some(HandshakePayload::ServerHello(hrr)) = hrr else {
        panic!("no HelloRetryRequest");
    };
    assert_eq!(hrr.random, HRR_RANDOM);
    assert!(hrr.find(ExtensionType::EncryptedClientHello).is_none());
}

/// A self-signed certificate with basicConstraints cA:TRUE, as `openssl req -x509` writes one,
/// for `localhost`, valid `from..to` (unix seconds): its DER.
fn self_signed_ca_leaf(from: i64, to: i64) -> Vec<u8> {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.not_before = rcgen::date_time_ymd(1970, 1, 1) + time_secs(from);
    params.not_after = rcgen::date_time_ymd(1970, 1, 1) + time_secs(to);
    params.self_signed(&key).unwrap().der().to_vec()
}

fn time_secs(s: i64) -> std::time::Duration {
    std::time::Duration::from_secs(s as u64)
}

/// Issue 29: a certificate the client trusts explicitly, served as the leaf, is trusted directly
/// even with cA:TRUE (OpenSSL and Go accept it; webpki alone says "CA used as end entity"). The
/// validity period and the name are still checked, and a cA:TRUE leaf that is not itself a
/// trusted root is still refused.
#[test]
fn a_trusted_self_signed_ca_certificate_is_trusted_as_the_leaf() {
    use tls13lab::crypto::cert::{verify_chain, CertError, Usage};
    let now = 1_800_000_000u64;
    let ok = self_signed_ca_leaf(now as i64 - 86_400, now as i64 + 86_400);
    let chain = vec![ok.clone()];
    verify_chain(&chain, &chain, Some("localhost"), now, Usage::Server, None).unwrap();
    // The name is still checked.
    let err = verify_chain(
        &chain,
        &chain,
        Some("other.example"),
        now,
        Usage::Server,
        None,
    )
    .unwrap_err();
    assert!(matches!(err, CertError::NameMismatch { .. }), "{err:?}");
    // Not a root: refused as a CA used as the leaf.
    let other = util::unrelated_root();
    let err = verify_chain(
        &chain,
        std::slice::from_ref(&other),
        Some("localhost"),
        now,
        Usage::Server,
        None,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("CA certificate used as the leaf"),
        "{err}"
    );
    // Expired and not yet valid: refused for that, though trusted (webpki checks the period
    // before basic constraints; this pins that order).
    let expired = vec![self_signed_ca_leaf(
        now as i64 - 2 * 86_400,
        now as i64 - 86_400,
    )];
    let err = verify_chain(
        &expired,
        &expired,
        Some("localhost"),
        now,
        Usage::Server,
        None,
    )
    .unwrap_err();
    assert!(matches!(err, CertError::Expired { .. }), "{err:?}");
    let early = vec![self_signed_ca_leaf(
        now as i64 + 86_400,
        now as i64 + 2 * 86_400,
    )];
    let err =
        verify_chain(&early, &early, Some("localhost"), now, Usage::Server, None).unwrap_err();
    assert!(matches!(err, CertError::NotYetValid { .. }), "{err:?}");
}

/// draft-ietf-tls-trust-anchor-ids: a server with two certification paths, each for its own
/// trust anchor (IDs 32473.1 and 32473.2), and a client that trusts only the second.
mod trust_anchors {
    use super::*;
    use tls13lab::config::{CertifiedKey, TrustAnchorOffer};
    use tls13lab::crypto::sign::SigningKey;
    use tls13lab::trust_anchors::{from_ascii, CertificateProperties, TrustAnchorRange};

    fn path(seed: u64) -> CertifiedKey {
        let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(seed));
        let now_s = NOW / 1000;
        let cert =
            lab::certgen::self_signed_p256(&["localhost"], &key, now_s - 86_400, now_s + 86_400)
                .unwrap();
        CertifiedKey {
            chain: vec![cert],
            key: Arc::new(key),
        }
    }

    /// (server, the client's one root: the second path's anchor)
    fn server() -> (ServerConfig, Vec<u8>) {
        let (a, b) = (path(0x7a1), path(0x7a2));
        let root_b = b.chain[0].clone();
        let mut s = ServerConfig::new(a);
        s.observe = tls13lab::Observe::PUBLIC;
        s.more_certs = vec![b];
        s.certificate_properties = vec![
            Some(CertificateProperties::with_id(
                from_ascii("32473.1").unwrap(),
            )),
            Some(CertificateProperties::with_id(
                from_ascii("32473.2").unwrap(),
            )),
        ];
        (s, root_b)
    }

    fn client(root: Vec<u8>, ids: Option<&[&str]>) -> ClientConfig {
        let mut c = ClientConfig::new(vec![root]);
        c.server_name = Some("localhost".into());
        c.observe = tls13lab::Observe::PUBLIC;
        c.trust_anchors = ids
            .map(|ids| TrustAnchorOffer::new(ids.iter().map(|i| from_ascii(i).unwrap()).collect()));
        c
    }

    fn run(c: ClientConfig, s: &ServerConfig, seed: u64) -> (Pair, Result<(), Error>) {
        let mut p = Pair::new(Arc::new(c), Arc::new(s.clone()), seed, NOW).unwrap();
        let r = p.handshake().and_then(|_| p.settle());
        (p, r)
    }

    fn available(events: &[Event]) -> Option<Vec<Vec<u8>>> {
        events.iter().find_map(|e| match e {
            Event::TrustAnchorsAvailable { ids } => Some(ids.clone()),
            _ => None,
        })
    }

    fn matched(events: &[Event]) -> bool {
        events
            .iter()
            .any(|e| matches!(e, Event::TrustAnchorMatched))
    }

    #[test]
    fn the_requested_anchor_picks_the_path() {
        let (s, root) = server();
        let (p, r) = run(client(root, Some(&["32473.2"])), &s, 1);
        r.expect("handshake");
        assert!(p.client.is_connected());
        assert!(matched(&p.client_events) && matched(&p.server_events));
        // EncryptedExtensions lists both paths, in the server's order.
        assert_eq!(
            available(&p.client_events),
            Some(vec![
                from_ascii("32473.1").unwrap(),
                from_ascii("32473.2").unwrap()
            ])
        );
    }

    #[test]
    fn an_empty_list_gets_the_fallback_then_the_retry_succeeds() {
        // §4.3: the client sends no ID; the server's first path is for an anchor it does not
        // trust: the certificate fails, and EncryptedExtensions said which anchors the server
        // has. The client retries asking for the one it trusts.
        let (s, root) = server();
        let (p, r) = run(client(root.clone(), Some(&[])), &s, 2);
        let err = r.expect_err("the fallback path is not trusted");
        assert!(
            matches!(
                err.alert(),
                Some(AlertDescription::UnknownCa | AlertDescription::BadCertificate)
            ),
            "{err}"
        );
        assert!(!matched(&p.client_events));
        let ids = available(&p.client_events).expect("the server's trust anchors");
        let ours = from_ascii("32473.2").unwrap();
        assert!(ids.contains(&ours));
        let (p, r) = run(client(root, Some(&["32473.2"])), &s, 3);
        r.expect("the retry");
        assert!(p.client.is_connected() && matched(&p.client_events));
    }

    #[test]
    fn without_the_extension_nothing_changes() {
        let (s, root) = server();
        let (p, r) = run(client(root, None), &s, 4);
        assert!(r.is_err(), "the first path, not trusted");
        assert_eq!(available(&p.client_events), None);
        assert!(!matched(&p.server_events));
        // A client that sends the extension to a server without IDs gets no answer to it.
        let mut plain = s.clone();
        plain.certificate_properties.clear();
        let (_, root_a) = (0, plain.cert.chain[0].clone());
        let (p, r) = run(client(root_a, Some(&["32473.1"])), &plain, 5);
        r.expect("handshake");
        assert_eq!(available(&p.client_events), None);
        assert!(!matched(&p.client_events));
    }

    #[test]
    fn a_group_inclusion_matches_a_requested_group_version() {
        // §4.2: a path also matches when one of its group inclusions contains a listed ID.
        let (mut s, root) = server();
        s.certificate_properties[1]
            .as_mut()
            .unwrap()
            .group_inclusions
            .push(TrustAnchorRange {
                base: from_ascii("2187.2").unwrap(),
                min: 100,
                max: 200,
            });
        let (p, r) = run(client(root.clone(), Some(&["2187.2.150"])), &s, 7);
        r.expect("the group version picks the second path");
        assert!(matched(&p.client_events) && matched(&p.server_events));
        // A version outside the range matches nothing: the first path, not trusted.
        let (p, r) = run(client(root, Some(&["2187.2.201"])), &s, 8);
        assert!(r.is_err() && !matched(&p.server_events));
    }

    #[test]
    fn a_negotiation_only_path_is_never_the_fallback() {
        // §6.3: the second path (the one the client trusts) is sent only when asked for.
        let (mut s, root) = server();
        s.certificate_properties[1]
            .as_mut()
            .unwrap()
            .negotiation_only = true;
        s.cert = s.more_certs.remove(0);
        s.more_certs.clear();
        s.certificate_properties.remove(0);
        // Its only path held back: without the extension, or with an ID it lacks, the server
        // has nothing to send and says handshake_failure.
        for ids in [None, Some(&["32473.9"][..])] {
            let (p, r) = run(client(root.clone(), ids), &s, 9);
            let err = r.expect_err("nothing to send");
            assert!(
                matches!(
                    err,
                    Error::Peer(PeerMisbehaved::NoRequestedTrustAnchor)
                        | Error::AlertReceived(AlertDescription::HandshakeFailure)
                ),
                "{err}"
            );
            assert_eq!(server_alerts(&p), vec![AlertDescription::HandshakeFailure]);
        }
        let (p, r) = run(client(root, Some(&["32473.2"])), &s, 10);
        r.expect("asked for");
        assert!(matched(&p.client_events));
    }

    /// Client authentication whose CertificateRequest lists `asked`, by a client whose
    /// certificate has `props`.
    fn client_auth(
        asked: &[&str],
        props: CertificateProperties,
        seed: u64,
    ) -> (Pair, Result<(), Error>) {
        let client_root = util::client_identity().1;
        let (mut c, mut s) =
            super::client_auth_configs(ClientAuth::Required(vec![client_root]), true);
        s.client_trust_anchors = Some(asked.iter().map(|i| from_ascii(i).unwrap()).collect());
        c.client_cert_properties = Some(props);
        c.observe = tls13lab::Observe::PUBLIC;
        s.observe = tls13lab::Observe::PUBLIC;
        run(c, &s, seed)
    }

    #[test]
    fn a_certificate_request_picks_the_client_path_too() {
        // §4.1, §4.2 for the client's certificate: the request lists a group version our
        // certificate's properties include; the first entry says it matched, both sides see it.
        let mut props = CertificateProperties::with_id(from_ascii("32473.5").unwrap());
        props.group_inclusions.push(TrustAnchorRange {
            base: from_ascii("32473.6").unwrap(),
            min: 1,
            max: 9,
        });
        let (p, r) = client_auth(&["32473.6.4"], props.clone(), 11);
        r.expect("handshake");
        assert!(matched(&p.client_events) && matched(&p.server_events));
        // Not listed: the certificate still goes (a fallback), without the marker.
        let (p, r) = client_auth(&["32473.9"], props.clone(), 12);
        r.expect("handshake");
        assert!(!matched(&p.client_events) && !matched(&p.server_events));
        // Negotiation-only and not listed: withheld, and this server requires one.
        props.negotiation_only = true;
        let (p, r) = client_auth(&["32473.9"], props, 13);
        let err = r.expect_err("no certificate");
        assert!(
            matches!(
                err,
                Error::Peer(PeerMisbehaved::NoClientCertificate)
                    | Error::AlertReceived(AlertDescription::CertificateRequired)
            ),
            "{err}"
        );
        assert_eq!(
            server_alerts(&p),
            vec![AlertDescription::CertificateRequired]
        );
    }

    #[test]
    fn a_certificate_marker_must_be_asked_for_empty_and_first() {
        // §4.2: the empty extension in the first entry only, and only when we asked.
        use tls13lab::messages::handshake::CertificateEntry;
        use tls13lab::trust_anchors::certificate_matched;
        let cp = ExtensionType::TrustAnchors;
        let marker = |body: Vec<u8>| Extension::Unknown { typ: cp, body };
        let entry = |extensions| CertificateEntry {
            cert_data: vec![0x30, 0],
            extensions,
        };
        let first = [entry(vec![marker(vec![])]), entry(vec![])];
        assert_eq!(certificate_matched(&first, cp, true), Ok(true));
        assert_eq!(certificate_matched(&first[1..], cp, true), Ok(false));
        let unasked = certificate_matched(&first, cp, false).unwrap_err();
        assert_eq!(
            unasked,
            Error::Peer(PeerMisbehaved::UnsolicitedExtension(cp))
        );
        assert_eq!(
            unasked.alert(),
            Some(AlertDescription::UnsupportedExtension)
        );
        for bad in [
            [entry(vec![marker(vec![0, 0])]), entry(vec![])],
            [entry(vec![]), entry(vec![marker(vec![])])],
        ] {
            let e = certificate_matched(&bad, cp, true).unwrap_err();
            assert!(
                matches!(e, Error::Peer(PeerMisbehaved::IllegalExtension(_))),
                "{e}"
            );
            assert_eq!(e.alert(), Some(AlertDescription::IllegalParameter));
        }
    }

    #[test]
    fn a_malformed_list_is_decode_error() {
        let (s, root) = server();
        let mut c = client(root, None);
        // One TrustAnchorID whose length runs past the list.
        c.extra_extensions = vec![Extension::Unknown {
            typ: ExtensionType::TrustAnchors,
            body: vec![0, 2, 5, 1],
        }];
        let (p, r) = run(c, &s, 6);
        assert!(r.is_err());
        assert_eq!(server_alerts(&p), vec![AlertDescription::DecodeError]);
    }

    fn server_alerts(p: &Pair) -> Vec<AlertDescription> {
        p.server_events
            .iter()
            .filter_map(|e| match e {
                Event::Alert {
                    direction: Direction::ServerToClient,
                    description,
                    ..
                } => Some(*description),
                _ => None,
            })
            .collect()
    }
}
