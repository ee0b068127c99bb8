//! In-memory handshakes over the ML-KEM, hybrid (draft-ietf-tls-ecdhe-mlkem) and P-384 groups,
//! the other classical groups (secp521r1, x448, ffdhe2048 … ffdhe8192), and with a P-384
//! certificate, through `demo::Pair`.

use std::sync::Arc;

use lab::certgen::self_signed_ecdsa;
use lab::demo::{self, Pair};
use tls13lab::config::CertifiedKey;
use tls13lab::crypto::kx::KxError;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::events::{Direction, Event, KeyShareEvent, Negotiated};
use tls13lab::messages::enums::{AlertDescription, HandshakeType, NamedGroup, SignatureScheme};
use tls13lab::messages::extensions::{Extension, KeyShareEntry};
use tls13lab::messages::handshake::{DecodeContext, HandshakeMessage, HandshakePayload};
use tls13lab::{ClientConfig, Error, ServerConfig};

const NOW_MS: u64 = 1_700_000_000_000;

/// (group, client key_exchange length, server key_exchange length, shared secret length,
/// component names in wire order).
const NEW_GROUPS: &[(NamedGroup, usize, usize, usize, &[&str])] = &[
    (NamedGroup::secp384r1, 97, 97, 48, &["P-384"]),
    (
        NamedGroup::X25519MLKEM768,
        1216,
        1120,
        64,
        &["ML-KEM-768", "X25519"],
    ),
    (
        NamedGroup::SecP256r1MLKEM768,
        1249,
        1153,
        64,
        &["P-256", "ML-KEM-768"],
    ),
    (
        NamedGroup::SecP384r1MLKEM1024,
        1665,
        1665,
        80,
        &["P-384", "ML-KEM-1024"],
    ),
    (NamedGroup::MLKEM512, 800, 768, 32, &["ML-KEM-512"]),
    (NamedGroup::MLKEM768, 1184, 1088, 32, &["ML-KEM-768"]),
    (NamedGroup::MLKEM1024, 1568, 1568, 32, &["ML-KEM-1024"]),
    (NamedGroup::secp521r1, 133, 133, 66, &["P-521"]),
    (NamedGroup::X448, 56, 56, 56, &["X448"]),
    (NamedGroup::ffdhe2048, 256, 256, 256, &["ffdhe2048"]),
    (NamedGroup::ffdhe3072, 384, 384, 384, &["ffdhe3072"]),
    (NamedGroup::ffdhe4096, 512, 512, 512, &["ffdhe4096"]),
    (NamedGroup::ffdhe6144, 768, 768, 768, &["ffdhe6144"]),
    (NamedGroup::ffdhe8192, 1024, 1024, 1024, &["ffdhe8192"]),
];

fn configs(
    client_groups: &[NamedGroup],
    client_shares: &[NamedGroup],
    server_groups: &[NamedGroup],
) -> (ClientConfig, ServerConfig) {
    let (mut server, root) = demo::server_config(1, NOW_MS).unwrap();
    server.groups = server_groups.to_vec();
    let mut client = demo::client_config(root);
    client.groups = client_groups.to_vec();
    client.key_shares = client_shares.to_vec();
    client.fixed_validation_time_ms = Some(NOW_MS);
    (client, server)
}

fn connect(client: ClientConfig, server: ServerConfig, seed: u64) -> Pair {
    let mut p = Pair::new(Arc::new(client), Arc::new(server), seed, NOW_MS).unwrap();
    p.handshake().unwrap();
    p
}

fn negotiated(events: &[Event]) -> &Negotiated {
    events
        .iter()
        .find_map(|e| match e {
            Event::Connected(n) => Some(n),
            _ => None,
        })
        .expect("no Connected event")
}

fn key_share(events: &[Event]) -> &KeyShareEvent {
    events
        .iter()
        .find_map(|e| match e {
            Event::KeyShare(k) => Some(k),
            _ => None,
        })
        .expect("no KeyShare event")
}

/// Every handshake message of type `typ` sent in `direction`, decoded.
fn messages(events: &[Event], direction: Direction, typ: HandshakeType) -> Vec<HandshakeMessage> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Handshake(h) if h.direction == direction && h.typ == typ => {
                Some(HandshakeMessage::decode(&h.bytes, DecodeContext { hash_len: 0 }).unwrap())
            }
            _ => None,
        })
        .collect()
}

fn client_shares(m: &HandshakeMessage) -> Vec<KeyShareEntry> {
    let HandshakePayload::ClientHello(ch) = &m.payload else {
        panic!("not a ClientHello")
    };
    ch.extensions
        .iter()
        .find_map(|e| match e {
            Extension::KeyShareClient(s) => Some(s.clone()),
            _ => None,
        })
        .expect("no key_share")
}

fn server_share(m: &HandshakeMessage) -> KeyShareEntry {
    let HandshakePayload::ServerHello(sh) = &m.payload else {
        panic!("not a ServerHello: {:?}", m.typ())
    };
    sh.extensions
        .iter()
        .find_map(|e| match e {
            Extension::KeyShareServer(s) => Some(s.clone()),
            _ => None,
        })
        .expect("no key_share")
}

#[test]
fn every_new_group_completes_a_handshake() {
    for &(group, client_len, server_len, secret_len, names) in NEW_GROUPS {
        let (client, server) = configs(&[group], &[group], &[NamedGroup::X25519, group]);
        let mut p = connect(client, server, 11);
        for events in [&p.client_events, &p.server_events] {
            let n = negotiated(events);
            assert_eq!(n.group, Some(group), "{group}");
            assert!(!n.hello_retry);
            let ks = key_share(events);
            assert_eq!(ks.group, group);
            assert_eq!(ks.shared_secret.len(), secret_len, "{group}");
            let got: Vec<_> = ks.components.iter().map(|c| c.name).collect();
            assert_eq!(got, names, "{group}");
        }
        // Both sides derived the same secret, component by component.
        assert_eq!(key_share(&p.client_events), key_share(&p.server_events));

        // The wire: one share of the right size each way.
        let ch = messages(
            &p.client_events,
            Direction::ClientToServer,
            HandshakeType::ClientHello,
        );
        let shares = client_shares(&ch[0]);
        assert_eq!(shares.len(), 1);
        assert_eq!(shares[0].group, group);
        assert_eq!(shares[0].key_exchange.len(), client_len, "{group}");
        let sh = messages(
            &p.client_events,
            Direction::ServerToClient,
            HandshakeType::ServerHello,
        );
        let s = server_share(&sh[0]);
        assert_eq!(s.group, group);
        assert_eq!(s.key_exchange.len(), server_len, "{group}");

        // And the keys work.
        p.client.send(b"ping").unwrap();
        p.exchange().unwrap();
        p.server.send(b"pong").unwrap();
        p.exchange().unwrap();
        assert_eq!(p.server_received(), b"ping");
        assert_eq!(p.client_received(), b"pong");
    }
}

#[test]
fn hybrid_handshake_replays_byte_for_byte() {
    for g in [
        NamedGroup::X25519MLKEM768,
        NamedGroup::X448,
        NamedGroup::secp521r1,
        NamedGroup::ffdhe2048,
    ] {
        replays_byte_for_byte(g);
    }
}

fn replays_byte_for_byte(g: NamedGroup) {
    let run = |seed| {
        let (client, server) = configs(&[g], &[g], &[g]);
        let p = connect(client, server, seed);
        let ledger = p.ledger();
        let wire: Vec<Vec<u8>> = p
            .client_events
            .iter()
            .filter_map(|e| match e {
                Event::Record(r) => Some([r.header.clone(), r.content.clone()].concat()),
                _ => None,
            })
            .collect();
        (wire, ledger.totals.client_to_server.bytes)
    };
    let (a, a_bytes) = run(5);
    let (b, b_bytes) = run(5);
    let (c, _) = run(6);
    assert_eq!(a, b, "{g}");
    assert_eq!(a_bytes, b_bytes, "{g}");
    assert_ne!(a, c, "{g}");
}

#[test]
fn client_hello_with_hybrid_and_x25519_shares() {
    let groups = [NamedGroup::X25519MLKEM768, NamedGroup::X25519];
    for (server_groups, expect) in [
        // A server without the hybrid takes the X25519 share.
        (
            vec![NamedGroup::X25519, NamedGroup::secp256r1],
            NamedGroup::X25519,
        ),
        // One that prefers it takes the hybrid share; no HelloRetryRequest either way.
        (groups.to_vec(), NamedGroup::X25519MLKEM768),
    ] {
        let (client, server) = configs(&groups, &groups, &server_groups);
        let p = connect(client, server, 3);
        let n = negotiated(&p.client_events);
        assert_eq!(n.group, Some(expect));
        assert!(!n.hello_retry);

        let ch = messages(
            &p.client_events,
            Direction::ClientToServer,
            HandshakeType::ClientHello,
        );
        assert_eq!(ch.len(), 1);
        let shares = client_shares(&ch[0]);
        let lens: Vec<_> = shares
            .iter()
            .map(|s| (s.group, s.key_exchange.len()))
            .collect();
        assert_eq!(
            lens,
            [(NamedGroup::X25519MLKEM768, 1216), (NamedGroup::X25519, 32)]
        );
        // The message carries both, each with its 4-byte KeyShareEntry header, inside the
        // 2-byte client_shares vector of a 4-byte extension header.
        let ch_len = ch[0].encoded.len();
        assert!(ch_len > 4 + 2 + (4 + 1216) + (4 + 32), "{ch_len}");
        // The ledger shows the same ClientHello in the first client record.
        let ledger = p.ledger();
        let first = &ledger.records[0];
        assert_eq!(first.record.direction, Direction::ClientToServer);
        assert_eq!(first.messages[0].typ, HandshakeType::ClientHello);
        assert_eq!(first.messages[0].len, ch_len);
        assert_eq!(first.record.plaintext_len, ch_len);
    }
}

#[test]
fn hello_retry_request_to_a_hybrid_group() {
    let (client, server) = configs(
        &[NamedGroup::X25519, NamedGroup::X25519MLKEM768],
        &[NamedGroup::X25519],
        &[NamedGroup::X25519MLKEM768],
    );
    let share = share_after_retry(&connect(client, server, 4), NamedGroup::X25519MLKEM768);
    assert_eq!(share.group, NamedGroup::X25519MLKEM768);
    assert_eq!(share.key_exchange.len(), 1216);
}

/// The one key share of ClientHello 2 after a HelloRetryRequest to `group`, which was
/// negotiated.
fn share_after_retry(p: &Pair, group: NamedGroup) -> KeyShareEntry {
    let n = negotiated(&p.client_events);
    assert_eq!(n.group, Some(group));
    assert!(n.hello_retry);
    let ch = messages(
        &p.client_events,
        Direction::ClientToServer,
        HandshakeType::ClientHello,
    );
    assert_eq!(ch.len(), 2);
    let mut second = client_shares(&ch[1]);
    assert_eq!(second.len(), 1);
    second.remove(0)
}

#[test]
fn hello_retry_request_to_ffdhe_and_x448() {
    // A server that takes only the new group asks for it (§4.1.4); ClientHello 2 carries one
    // share of the group's full size.
    for (g, len) in [(NamedGroup::ffdhe3072, 384), (NamedGroup::X448, 56)] {
        let (client, server) = configs(&[NamedGroup::X25519, g], &[NamedGroup::X25519], &[g]);
        let share = share_after_retry(&connect(client, server, 12), g);
        assert_eq!((share.group, share.key_exchange.len()), (g, len));
    }
}

#[test]
fn p384_certificate_with_secp384r1_mlkem1024() {
    let mut rng = SeededRandom::from_seed(77);
    let key = SigningKey::generate_p384(&mut rng);
    let now_s = NOW_MS / 1000;
    let cert = self_signed_ecdsa(&["localhost"], &key, now_s - 86_400, now_s + 86_400).unwrap();
    let mut server = ServerConfig::new(CertifiedKey {
        chain: vec![cert.clone()],
        key: Arc::new(key),
    });
    server.observe = tls13lab::Observe::PUBLIC;
    let g = NamedGroup::SecP384r1MLKEM1024;
    server.groups = vec![g];
    server.signature_schemes = vec![SignatureScheme::ecdsa_secp384r1_sha384];
    let mut client = demo::client_config(cert);
    client.groups = vec![g];
    client.key_shares = vec![g];
    client.fixed_validation_time_ms = Some(NOW_MS);
    client
        .signature_schemes
        .insert(0, SignatureScheme::ecdsa_secp384r1_sha384);
    let p = connect(client, server, 8);
    for events in [&p.client_events, &p.server_events] {
        let n = negotiated(events);
        assert_eq!(n.group, Some(g));
        assert_eq!(
            n.signature_scheme,
            Some(SignatureScheme::ecdsa_secp384r1_sha384)
        );
    }
}

/// Position of `needle` in `haystack` (exactly once).
fn find_once(haystack: &[u8], needle: &[u8]) -> usize {
    let hits: Vec<usize> = haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(hits.len(), 1);
    hits[0]
}

fn alert_sent(events: &[Event]) -> Option<AlertDescription> {
    events.iter().find_map(|e| match e {
        Event::Alert {
            direction,
            description,
            ..
        } if *direction == Direction::ServerToClient => Some(*description),
        _ => None,
    })
}

#[test]
fn server_rejects_encapsulation_key_failing_the_modulus_check() {
    let g = NamedGroup::X25519MLKEM768;
    let (client, server) = configs(&[g], &[g], &[g]);
    let mut p = Pair::new(Arc::new(client), Arc::new(server), 9, NOW_MS).unwrap();
    p.client.start(NOW_MS).unwrap();
    let mut flight = p.client.take_output();
    let events: Vec<Event> = p.client.events().collect();
    let ch = messages(
        &events,
        Direction::ClientToServer,
        HandshakeType::ClientHello,
    );
    let ek = client_shares(&ch[0])[0].key_exchange[..1184].to_vec();
    let at = find_once(&flight, &ek);
    // First coefficient := 0xfff (>= q = 3329).
    flight[at] = 0xff;
    flight[at + 1] |= 0x0f;
    let err = p.server.receive(&flight, NOW_MS).unwrap_err();
    assert!(
        matches!(err, Error::KeyExchange(KxError::InvalidPeerShare(_))),
        "{err:?}"
    );
    assert_eq!(err.alert(), Some(AlertDescription::IllegalParameter));
    let server_events: Vec<Event> = p.server.events().collect();
    assert_eq!(
        alert_sent(&server_events),
        Some(AlertDescription::IllegalParameter)
    );
    assert!(!p.server.take_output().is_empty());
}

#[test]
fn tampered_ciphertext_fails_the_handshake_without_an_ml_kem_error() {
    // Implicit rejection: decapsulation of a modified ciphertext "succeeds" with an unrelated
    // secret, so the client cannot decrypt the server's first encrypted record.
    let g = NamedGroup::MLKEM768;
    let (client, server) = configs(&[g], &[g], &[g]);
    let mut p = Pair::new(Arc::new(client), Arc::new(server), 10, NOW_MS).unwrap();
    p.client.start(NOW_MS).unwrap();
    let flight = p.client.take_output();
    p.server.receive(&flight, NOW_MS).unwrap();
    let mut reply = p.server.take_output();
    let events: Vec<Event> = p.server.events().collect();
    let sh = messages(
        &events,
        Direction::ServerToClient,
        HandshakeType::ServerHello,
    );
    let ct = server_share(&sh[0]).key_exchange;
    assert_eq!(ct.len(), 1088);
    let at = find_once(&reply, &ct);
    reply[at + 100] ^= 0x01;
    let err = p.client.receive(&reply, NOW_MS).unwrap_err();
    assert!(!matches!(err, Error::KeyExchange(_)), "{err:?}");
    assert_eq!(err.alert(), Some(AlertDescription::BadRecordMac));
}

#[test]
fn reused_x25519_scalar_appears_twice_and_still_works() {
    use std::sync::Arc;
    use tls13lab::events::Event;
    use tls13lab::messages::enums::NamedGroup;
    use tls13lab::messages::extensions::Extension;
    use tls13lab::messages::handshake::{HandshakeMessage, HandshakePayload};
    let now = 1_767_225_600_000;
    for (server_groups, expect) in [
        (vec![NamedGroup::X25519MLKEM768], NamedGroup::X25519MLKEM768),
        (vec![NamedGroup::X25519], NamedGroup::X25519),
    ] {
        let (mut s, root) = lab::demo::server_config(3, now).unwrap();
        s.groups = server_groups;
        let mut c = lab::demo::client_config(root);
        c.groups = vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519];
        c.key_shares = c.groups.clone();
        c.reuse_x25519 = true;
        let mut p = lab::demo::Pair::new(Arc::new(c), Arc::new(s), 4, now).unwrap();
        p.handshake().unwrap();
        assert_eq!(p.client.negotiated().unwrap().group, Some(expect));
        let ch = p
            .client_events
            .iter()
            .find_map(|e| match e {
                Event::Handshake(h) if h.typ.to_repr() == 1 => Some(h.bytes.clone()),
                _ => None,
            })
            .unwrap();
        let HandshakePayload::ClientHello(ch) = HandshakeMessage::decode(&ch, Default::default())
            .unwrap()
            .payload
        else {
            panic!()
        };
        let Some(Extension::KeyShareClient(shares)) = ch
            .extensions
            .iter()
            .find(|e| matches!(e, Extension::KeyShareClient(_)))
        else {
            panic!()
        };
        // X25519MLKEM768 = ML-KEM-768 ek (1184) ‖ X25519 (32): the tail equals the X25519 share.
        assert_eq!(shares[0].key_exchange[1184..], shares[1].key_exchange[..]);
    }
}
