//! Secrets stay secret: no key, secret, PSK or private key shows in `Debug` output unless the
//! caller asked for secrets (events recorded with `Observe::secrets`), and comparisons of
//! Finished and binder values are constant-time (checked by reading: `subtle::ConstantTimeEq`
//! in src/auth.rs and the server's binder check; see docs/alerts.md).
//!
//! The test runs real connections with every observer on to learn every secret value they
//! derive, then formats `Debug` of the connections, their configurations, tickets, key
//! schedule stages, key shares, signing keys, random sources and the events themselves, and
//! looks for those values as hex (either case) and as Rust's decimal byte lists. Events carry
//! secrets only when asked for, and show them only where asked for by name (serialized).

mod util;

use std::sync::Arc;

use lab::demo::Pair;
use tls13lab::config::ExternalPsk;
use tls13lab::crypto::aead::{AeadAlg, AeadKey};
use tls13lab::crypto::hash::HashAlg;
use tls13lab::crypto::kx::{server_respond, KeyShareSecret};
use tls13lab::crypto::random::{RandomSource, ScriptedRandom, SeededRandom};
use tls13lab::crypto::sign::SigningKey;
use tls13lab::events::{Event, Observe};
use tls13lab::keyschedule::schedule::{Derivation, EarlySecret, SecretName};
use tls13lab::keyschedule::transcript::Transcript;
use tls13lab::messages::enums::{CipherSuite, HandshakeType, NamedGroup};
use tls13lab::session::TicketStore;
use tls13lab::{ClientConfig, ServerConfig};

use util::{KeyKind, NOW};

/// Every way a secret could be spelled in Debug output: hex of its first 12 bytes in either
/// case, and the decimal list `[a, b, c, ...` Rust prints for `Vec<u8>` and arrays.
fn spellings(secret: &[u8]) -> Vec<String> {
    let head = &secret[..secret.len().min(12)];
    let lower: String = head.iter().map(|b| format!("{b:02x}")).collect();
    let decimal = head
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    vec![lower.clone(), lower.to_uppercase(), decimal]
}

/// Values worth looking for: long enough that a chance match is impossible, and not all zeros
/// (a zero salt or PSK is no secret).
fn interesting(v: &[u8]) -> bool {
    v.len() >= 12 && v.iter().any(|&b| b != 0)
}

struct Secrets(Vec<(String, Vec<u8>)>);

impl Secrets {
    fn add(&mut self, what: impl Into<String>, v: &[u8]) {
        if interesting(v) {
            self.0.push((what.into(), v.to_vec()));
        }
    }

    /// Secrets from events: named secrets, key shares, and every derivation output except the
    /// values that travel on the wire (Finished verify_data, binders) or are public (exporter
    /// outputs are the application's, still secret: kept).
    fn add_events(&mut self, events: &[Event]) {
        for e in events {
            match e {
                Event::Secret(s) => self.add(format!("{:?}", s.name), &s.secret),
                Event::KeyShare(k) => {
                    self.add(format!("{} shared secret", k.group), &k.shared_secret);
                    for c in &k.components {
                        self.add(format!("{} component secret", c.name), &c.secret);
                    }
                }
                Event::Derivation(d) => self.add_derivation(d),
                _ => {}
            }
        }
    }

    fn add_derivation(&mut self, d: &Derivation) {
        if !matches!(d.name, SecretName::VerifyData | SecretName::Binder) {
            self.add(format!("{:?}", d.name), &d.output);
        }
    }

    /// Panics if `text` (the Debug output of `what`) shows any secret.
    #[track_caller]
    fn assert_absent(&self, what: &str, text: &str) {
        for (name, v) in &self.0 {
            for s in spellings(v) {
                assert!(
                    !text.contains(&s),
                    "Debug of {what} shows {name} ({s}):\n{text}"
                );
            }
        }
    }

    /// Sanity check of the detector: `text` must show at least one secret.
    #[track_caller]
    fn assert_some_present(&self, text: &str) {
        assert!(
            self.0
                .iter()
                .any(|(_, v)| spellings(v).iter().any(|s| text.contains(s))),
            "the detector finds nothing in text that holds secrets"
        );
    }
}

fn psk(identity: &[u8], key_byte: u8) -> ExternalPsk {
    ExternalPsk {
        identity: identity.to_vec(),
        key: vec![key_byte; 32],
        suite: CipherSuite::TLS_AES_128_GCM_SHA256,
    }
}

/// The test configurations (the demo's, which observe everything), observing `observe` instead
/// when given.
fn configs(observe: Option<Observe>) -> (ClientConfig, ServerConfig) {
    let (mut s, root) = util::server_config(KeyKind::P256);
    let mut c = util::client_config(root);
    if let Some(observe) = observe {
        c.observe = observe;
        s.observe = observe;
    }
    // External PSKs that are configured but not the one used: their keys must not show either.
    c.external_psks = vec![];
    s.external_psks = vec![psk(b"spare", 0xa7)];
    (c, s)
}

/// A full handshake, data both ways, then a resumption with 0-RTT; the pairs and every event.
fn connections(observe: Option<Observe>) -> (Vec<Pair>, Vec<Event>) {
    let (c, s) = configs(observe);
    let (c, s) = (Arc::new(c), Arc::new(s));
    let mut first = Pair::new(c.clone(), s.clone(), 3, NOW).unwrap();
    first.handshake().unwrap();
    first.client.send(b"ping").unwrap();
    first.server.send(b"pong").unwrap();
    first.client.key_update(true).unwrap();
    first.settle().unwrap();
    let tickets = first.client.tickets().clone();
    assert!(!tickets.is_empty());
    let mut second = Pair::with_tickets(c, s, 4, NOW + 1000, tickets).unwrap();
    second.client.start(NOW + 1000).unwrap();
    second.client.send(b"early").unwrap();
    second.settle().unwrap();
    assert!(second.client.negotiated().unwrap().resumed);
    let mut events = Vec::new();
    for p in [&first, &second] {
        events.extend(p.client_events.iter().cloned());
        events.extend(p.server_events.iter().cloned());
    }
    (vec![first, second], events)
}

#[test]
fn connections_configs_and_tickets_show_no_secret_in_debug() {
    let (pairs, events) = connections(Some(Observe::ALL_WITH_SECRETS));
    let mut secrets = Secrets(Vec::new());
    secrets.add_events(&events);
    let (c, s) = configs(Some(Observe::ALL_WITH_SECRETS));
    for p in [&c.external_psks, &s.external_psks] {
        for k in p {
            secrets.add("external PSK", &k.key);
        }
    }
    for p in &pairs {
        for t in &p.client.tickets().tickets {
            secrets.add("ticket PSK", &t.psk);
        }
    }
    assert!(secrets.0.len() > 40, "{} secrets", secrets.0.len());
    // The detector works: secrets do show where they were asked for (the serialized events).
    secrets.assert_some_present(&serde_json::to_string(&events).unwrap());
    // Never in Debug, not even of the events that carry them.
    secrets.assert_absent("events with secrets", &format!("{events:?}"));
    secrets.assert_absent("events with secrets (alternate)", &format!("{events:#?}"));

    for p in &pairs {
        secrets.assert_absent("Client", &format!("{:?}", p.client));
        secrets.assert_absent("Client (alternate)", &format!("{:#?}", p.client));
        secrets.assert_absent("Server", &format!("{:?}", p.server));
        secrets.assert_absent("TicketStore", &format!("{:?}", p.client.tickets()));
        secrets.assert_absent("Negotiated", &format!("{:?}", p.client.negotiated()));
    }
    secrets.assert_absent("ClientConfig", &format!("{c:?}"));
    secrets.assert_absent("ServerConfig", &format!("{s:?}"));
    let mut c2 = c.clone();
    c2.external_psks = vec![psk(b"mine", 0xa7)];
    secrets.assert_absent("ClientConfig with a PSK", &format!("{c2:?}"));
    secrets.assert_absent(
        "TicketStore JSON-loaded",
        &format!(
            "{:?}",
            TicketStore::from_json(&pairs[0].client.tickets().to_json()).unwrap()
        ),
    );
}

/// The same connections with an observer plugged in: it sees exactly the events the queue
/// would have held, and by default no secret among them.
#[test]
fn an_observer_sees_what_the_queue_would_and_no_secret_by_default() {
    use std::sync::Mutex;
    let (_, with) = connections(Some(Observe::ALL_WITH_SECRETS));
    let mut secrets = Secrets(Vec::new());
    secrets.add_events(&with);
    for observe in [
        Observe::ALL_WITH_SECRETS,
        Observe::PUBLIC,
        Observe::default(),
    ] {
        // Fresh configurations for each run: a server's session state (its ticket key) is
        // shared through its configuration.
        let (c, s) = configs(Some(observe));
        let mut queued = Pair::new(Arc::new(c), Arc::new(s), 3, NOW).unwrap();
        queued.handshake().unwrap();
        queued.settle().unwrap();
        let (c, s) = configs(Some(observe));
        let mut observed = Pair::new(Arc::new(c), Arc::new(s), 3, NOW).unwrap();
        let sink: Arc<Mutex<Vec<Event>>> = Arc::default();
        let ledger: Arc<Mutex<tls13lab::ledger::Ledger>> = Arc::default();
        observed.client.set_observer(Box::new(sink.clone()));
        observed.server.set_observer(Box::new(ledger.clone()));
        observed.handshake().unwrap();
        observed.settle().unwrap();
        assert!(observed.client_events.is_empty() && observed.server_events.is_empty());
        assert_eq!(*sink.lock().unwrap(), queued.client_events, "{observe:?}");
        assert_eq!(
            ledger.lock().unwrap().to_json(),
            tls13lab::ledger::Ledger::from_events(&queued.server_events).to_json()
        );
        if !observe.reports_secrets() {
            let text = serde_json::to_string(&*sink.lock().unwrap()).unwrap();
            secrets.assert_absent("observed events by default (JSON)", &text);
        }
    }
}

#[test]
fn events_show_no_secret_unless_asked() {
    // Learn the secrets of the connection with every observer on...
    let (_, with) = connections(Some(Observe::ALL_WITH_SECRETS));
    let mut secrets = Secrets(Vec::new());
    secrets.add_events(&with);
    // ... then replay it (same seeds) with derivations and secrets off: the records (ciphertext),
    // handshake messages and data events must not show them.
    let quiet = Observe::ALL_WITH_SECRETS
        .with_derivations(false)
        .with_secrets(false);
    let (_, without) = connections(Some(quiet));
    assert!(!without.is_empty());
    secrets.assert_absent("events without secrets", &format!("{without:?}"));
    secrets.assert_absent(
        "events without secrets (JSON)",
        &serde_json::to_string(&without).unwrap(),
    );
}

#[test]
fn default_configurations_report_no_secret() {
    // Secrets reach the observation stream only when asked for: the configurations' defaults
    // (ClientConfig::default, ServerConfig::new) observe nothing, and Observe::PUBLIC records,
    // messages and layouts, no derivation, traffic secret or key-exchange secret.
    let (client_default, server_default) = (
        ClientConfig::new(Vec::new()).observe,
        ServerConfig::new(configs(None).1.cert).observe,
    );
    assert_eq!(client_default, Observe::default());
    assert_eq!(server_default, Observe::default());
    assert_eq!(ClientConfig::default().observe, Observe::default());
    assert!(!Observe::default().reports_secrets());
    let (_, with) = connections(Some(Observe::ALL_WITH_SECRETS));
    let mut secrets = Secrets(Vec::new());
    secrets.add_events(&with);
    // The default records nothing at all; Observe::PUBLIC, what the instruments ask for when
    // they do not ask for secrets, records records and messages, and no secret.
    let (_, by_default) = connections(Some(Observe::default()));
    assert!(by_default.is_empty(), "{by_default:?}");
    let (_, public) = connections(Some(Observe::PUBLIC));
    assert!(public
        .iter()
        .any(|e| matches!(e, Event::Record(_) | Event::Handshake(_))));
    assert!(!public.iter().any(|e| matches!(
        e,
        Event::Derivation(_) | Event::Secret(_) | Event::KeyShare(_)
    )));
    secrets.assert_absent("public events", &format!("{public:?}"));
    secrets.assert_absent(
        "public events (JSON)",
        &serde_json::to_string(&public).unwrap(),
    );
}

#[test]
fn key_schedule_key_shares_and_keys_show_no_secret_in_debug() {
    let mut sink: Vec<Derivation> = Vec::new();
    let psk_bytes = [0x5c; 32];
    let mut t = Transcript::new();
    t.start_hash(HashAlg::Sha256).unwrap();
    t.add(HandshakeType::ClientHello, &[1, 0, 0, 2, 3, 3]);
    let early = EarlySecret::new(HashAlg::Sha256, Some(&psk_bytes), &mut sink);
    let binder = early.binder_key(true, &mut sink);
    let cets = early.client_early_traffic_secret(&t, &mut sink);
    let eems = early.early_exporter_master_secret(&t, &mut sink);
    let mut texts = vec![
        format!("{early:?}"),
        format!("{binder:?}"),
        format!("{cets:?}"),
        format!("{eems:?}"),
    ];
    let hs = early.into_handshake(Some(&[0x77; 32]), &mut sink);
    let chts = hs.client_handshake_traffic_secret(&t, &mut sink);
    let fk = chts.finished_key(&mut sink);
    texts.push(format!("{hs:?}"));
    texts.push(format!("{chts:?}"));
    texts.push(format!("{fk:?}"));
    let (key, iv) = chts.keys(AeadAlg::Aes128Gcm, &mut sink);
    texts.push(format!(
        "{:?}",
        AeadKey::new(AeadAlg::Aes128Gcm, &key).unwrap()
    ));
    let master = hs.into_master(&mut sink);
    let cats = master.client_application_traffic_secret(&t, &mut sink);
    let exporter = master.exporter_master_secret(&t, &mut sink);
    let res = master.resumption_master_secret(&t, &mut sink);
    let ticket_psk = res.psk(&[0, 1], &mut sink);
    texts.push(format!("{master:?}"));
    texts.push(format!("{:?}", cats.next(&mut sink)));
    texts.push(format!("{cats:?} {exporter:?} {res:?} {ticket_psk:?}"));

    // Key exchange: the client's private key is the first draw of its random source.
    for group in [
        NamedGroup::X25519,
        NamedGroup::secp256r1,
        NamedGroup::X25519MLKEM768,
    ] {
        let mut draws = SeededRandom::from_seed(9);
        let mut scalar = [0u8; 64];
        draws.fill(&mut scalar);
        let share = KeyShareSecret::generate(group, &mut SeededRandom::from_seed(9)).unwrap();
        texts.push(format!("{share:?}"));
        let (server_share, skx) =
            server_respond(group, share.public(), &mut SeededRandom::from_seed(10)).unwrap();
        let ckx = share.complete(&server_share).unwrap();
        assert_eq!(ckx.shared_secret, skx.shared_secret);
        let mut secrets = Secrets(Vec::new());
        secrets.add("private key draw", &scalar[..32]);
        secrets.add("private key draw", &scalar[32..]);
        secrets.add("shared secret", &ckx.shared_secret);
        for c in &ckx.components {
            secrets.add("component secret", &c.secret);
        }
        secrets.assert_absent("KxResult", &format!("{ckx:?} {skx:?}"));
        secrets.assert_absent("KeyShareSecret", &texts.concat());
    }

    // Signing keys: the private scalar / seed never shows.
    let p256 = SigningKey::generate_p256(&mut SeededRandom::from_seed(11));
    let ed = SigningKey::generate_ed25519(&mut SeededRandom::from_seed(12));
    let mut secrets = Secrets(Vec::new());
    if let SigningKey::EcdsaP256(k) = &p256 {
        secrets.add("P-256 private key", &k.to_bytes());
    }
    if let SigningKey::Ed25519(k) = &ed {
        secrets.add("Ed25519 private key", &k.to_bytes());
    }
    assert_eq!(secrets.0.len(), 2);
    secrets.assert_absent("SigningKey", &format!("{p256:?} {ed:?} {p256:#?}"));

    // Random sources: the next bytes become private keys.
    let mut rng = SeededRandom::from_seed(13);
    let mut b = [0u8; 5];
    rng.fill(&mut b);
    let mut ahead = rng.clone();
    let mut next = [0u8; 64];
    ahead.fill(&mut next);
    let scripted = ScriptedRandom::new([vec![0x3c; 32], next.to_vec()], 14);
    let mut secrets = Secrets(Vec::new());
    secrets.add("upcoming random bytes", &next);
    secrets.add("upcoming random bytes", &next[12..]);
    secrets.add("upcoming random bytes", &next[40..]);
    secrets.add("scripted key", &[0x3c; 32]);
    secrets.assert_absent("random sources", &format!("{rng:?} {scripted:?}"));

    // The key schedule: every value derived above.
    let mut derived = Secrets(Vec::new());
    derived.add("psk", &psk_bytes);
    derived.add("key", &key);
    derived.add("iv", &iv);
    for d in &sink {
        derived.add_derivation(d);
    }
    assert!(derived.0.len() > 15);
    derived.assert_absent("key schedule stages", &texts.concat());
    // The derivations carry the values (serialized, where asked for), never in Debug.
    derived.assert_some_present(&serde_json::to_string(&sink).unwrap());
    derived.assert_absent("derivations", &format!("{sink:?}"));
}

#[test]
fn finished_and_binder_comparisons_are_constant_time() {
    // §4.4.4 verify_data and §4.2.11.2 binders are MACs: comparing them with `==` would leak,
    // through timing, how many leading bytes of a forgery are right. The state machines compare
    // them with `subtle::ConstantTimeEq` (Finished through one helper both sides call, in the
    // handshake and after it); this guards against a refactor that forgets.
    let root = env!("CARGO_MANIFEST_DIR");
    let ct = "use subtle::ConstantTimeEq;";
    let check = "check_verify_data(expected, verify_data)";
    let finished = "auth::check_finished(";
    let wanted: &[(&str, &[&str])] = &[
        ("src/auth.rs", &[ct, "expected.ct_eq(got)", check]),
        ("src/client/handshake.rs", &[finished]),
        ("src/server/handshake.rs", &[finished]),
        (
            "src/server/post_handshake.rs",
            &["auth::check_verify_data("],
        ),
        ("src/server/tickets.rs", &[ct, "expected.ct_eq(&p.binder)"]),
    ];
    // Every file of the state machines is read for `==` on a MAC, not only those above.
    let mut files: Vec<String> = ["src/auth.rs", "src/client.rs", "src/server.rs"]
        .map(String::from)
        .to_vec();
    for dir in ["src/client", "src/server"] {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".rs") {
                files.push(format!("{dir}/{name}"));
            }
        }
    }
    files.sort();
    for (file, _) in wanted {
        assert!(files.iter().any(|f| f == file), "{file} is gone");
    }
    for file in &files {
        let src = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
        let must = wanted
            .iter()
            .find(|(f, _)| f == file)
            .map_or(&[][..], |(_, w)| *w);
        for w in must {
            assert!(src.contains(w), "{file} no longer has {w}");
        }
        for (i, line) in src.lines().enumerate() {
            let l = line.replace(' ', "");
            for bad in [
                "verify_data==",
                "==verify_data",
                "binder==",
                "==p.binder",
                "==&p.binder",
            ] {
                assert!(
                    !l.contains(bad),
                    "{file}:{}: a MAC compared with ==: {line}",
                    i + 1
                );
            }
        }
    }
}

#[test]
fn secret_holders_zeroize_on_drop() {
    // Compile-time: the types that hold our secrets erase them when dropped (the crates mark
    // this with `ZeroizeOnDrop`). KxResult, KxComponent, StoredTicket, ResumptionState,
    // ExternalPsk and the server's PSK candidate do it in their own `Drop`, and
    // x25519_dalek::StaticSecret through `#[zeroize(drop)]` (no marker trait).
    fn erased_on_drop<T: zeroize::ZeroizeOnDrop>() {}
    erased_on_drop::<tls13lab::keyschedule::hkdf::Secret>();
    erased_on_drop::<tls13lab::crypto::hash::Output>();
    erased_on_drop::<p256::ecdsa::SigningKey>();
    erased_on_drop::<p384::ecdsa::SigningKey>();
    erased_on_drop::<ed25519_dalek::SigningKey>();
    erased_on_drop::<rsa::RsaPrivateKey>();
    erased_on_drop::<zeroize::Zeroizing<Vec<u8>>>();
}
