//! `tls13lab keys` end to end: the binary's output for RFC 8448 traces carries every value the RFC
//! prints, `--svg` draws the tree, and `--ledger` reads the events a run wrote as JSON.

use std::process::Command;

use lab::explain;
use lab::rfc8448::{Section, SECTIONS};
use tls13lab::events::Side;

fn keys(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tls13lab"))
        .arg("keys")
        .args(args)
        .output()
        .expect("run tls13lab");
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8(out.stderr).expect("utf-8"),
    )
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tls13lab-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn rfc8448_section3_output_contains_every_secret_the_rfc_prints() {
    let (ok, out, err) = keys(&["--rfc8448", "3"]);
    assert!(ok, "{err}");
    let sec = Section::new(3).unwrap();
    let values = sec.summary_values();
    assert!(values.len() >= 24, "{} values", values.len());
    for (name, value) in values {
        let hex = tls13lab::events::hex(&value);
        assert!(out.contains(&hex), "§3 {name} = {hex} not in the output");
    }
    // The same text the library renders (the docs are generated from the library).
    let tree = explain::rfc8448(3, Side::Client, Some(b"EXPERIMENTAL tls13lab")).unwrap();
    assert_eq!(out, tree.text(false));
}

#[test]
fn every_section_and_both_sides_show_the_rfc_values() {
    for n in SECTIONS {
        for side in [Side::Client, Side::Server] {
            let text = explain::rfc8448(n, side, None).unwrap().text(true);
            for (name, value) in Section::new(n).unwrap().summary_values() {
                let hex = tls13lab::events::hex(&value);
                assert!(text.contains(&hex), "§{n} {side:?}: {name} missing");
            }
        }
    }
}

#[test]
fn explain_and_svg() {
    let svg = tmp("s5.svg");
    let (ok, out, err) = keys(&[
        "--rfc8448",
        "5",
        "--side",
        "server",
        "--explain",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("(server view)"));
    assert!(out.contains("message_hash..ServerHello"), "HRR transcript");
    assert!(out.contains("(RFC 8446 §7.1)"));
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("handshake_secret"));
}

#[test]
fn ledger_file_of_events() {
    let run = explain::InMemory {
        key_update: true,
        ..explain::InMemory::demo(5).unwrap()
    };
    let (client, _) = explain::in_memory(&run, None).unwrap();
    let path = tmp("events.json");
    std::fs::write(&path, serde_json::to_string_pretty(&client).unwrap()).unwrap();
    let (ok, out, err) = keys(&["--ledger", path.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("client_application_traffic_secret_1"));
    let expected = explain::KeyTree::from_events(&path.display().to_string(), &client);
    assert_eq!(out, expected.text(false));

    std::fs::write(&path, "{\"records\": []}").unwrap();
    let (ok, _, err) = keys(&["--ledger", path.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("--show-secrets"), "{err}");
}

#[test]
fn ledger_file_written_by_demo_with_show_secrets() {
    let path = tmp("demo.json");
    let out = Command::new(env!("CARGO_BIN_EXE_tls13lab"))
        .args(["demo", "--show-secrets", "--json", path.to_str().unwrap()])
        .output()
        .expect("run tls13lab demo");
    assert!(out.status.success());
    let (ok, out, err) = keys(&["--ledger", path.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("X25519MLKEM768 shared secret = ML-KEM-768 ‖ X25519"));
    // The report's messages let the tree name what each Finished HMAC covers.
    assert!(out.contains(
        "verify_data = HMAC(finished_key, Transcript-Hash(ClientHello..server Finished))"
    ));
    assert!(out.contains("resumption_psk = "));
}

#[test]
fn bad_options_fail() {
    assert!(!keys(&["--rfc8448", "2"]).0);
    assert!(!keys(&["--groups", "x25518"]).0);
    assert!(!keys(&["--connection", "twice"]).0);
}

#[test]
fn in_memory_options() {
    let (ok, out, err) = keys(&[
        "--groups",
        "X25519MLKEM768",
        "--connection",
        "0rtt",
        "--no-export",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("X25519MLKEM768 shared secret = ML-KEM-768 ‖ X25519"));
    assert!(out.contains("client_early_traffic_secret"));
    assert!(!out.contains("exporter_label_secret"));
}

/// `--post-handshake-auth 2`: each answer's Finished under client_application_traffic_secret_0,
/// with its own Handshake Context (RFC 8446 §4.4.1), on both sides.
#[test]
fn post_handshake_authentication_in_the_tree() {
    for side in ["client", "server"] {
        let (ok, out, err) = keys(&["--post-handshake-auth", "2", "--side", side, "--explain"]);
        assert!(ok, "{err}");
        assert!(out.contains("post-handshake authentication ×2"), "{out}");
        let pha = "HMAC(finished_key, Transcript-Hash(ClientHello..client Finished + CertificateRequest..client CertificateVerify))";
        assert_eq!(out.matches(pha).count(), 2, "{side}: {out}");
        assert!(out.contains("RFC 8446 §4.4.1, §4.6.2"));
    }
}

// ---------------------------------------------------------------------------------------------
// Encrypted ClientHello (RFC 9849): `keys --ech [--hrr]`, every value recomputed here from the
// run's messages and the server's ECH key, not from what the explainer shows.
// ---------------------------------------------------------------------------------------------

mod ech {
    use super::keys;
    use lab::explain::{self, InMemory};
    use tls13lab::crypto::hash::HashAlg;
    use tls13lab::crypto::hpke::{self, HpkeStep, HpkeValue, Suite};
    use tls13lab::ech::confirm::{self, ACCEPT_LABEL, HRR_ACCEPT_LABEL};
    use tls13lab::ech::wire::{EchClientHello, HelloParts, ENCRYPTED_CLIENT_HELLO};
    use tls13lab::events::{hex, Event};
    use tls13lab::keyschedule::hkdf;
    use tls13lab::messages::enums::{HandshakeType, HpkeKemId};
    use tls13lab::messages::handshake::HRR_RANDOM;

    /// The run `keys --ech [--hrr]` makes (seed 1), as events of both sides.
    fn run(hello_retry: bool) -> (Vec<Event>, Vec<Event>) {
        let o = InMemory {
            ech: true,
            hello_retry,
            ..InMemory::demo(1).unwrap()
        };
        explain::in_memory(&o, None).unwrap()
    }

    fn messages(events: &[Event], typ: HandshakeType) -> Vec<Vec<u8>> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Handshake(h) if h.typ == typ => Some(h.bytes.clone()),
                _ => None,
            })
            .collect()
    }

    fn inner_hellos(events: &[Event]) -> Vec<Vec<u8>> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::InnerClientHello(h) => Some(h.bytes.clone()),
                _ => None,
            })
            .collect()
    }

    /// RFC 9849 §7.2 by hand: HKDF-Extract is HMAC with a zero key, then Expand-Label.
    fn confirmation(random: &[u8], label: &str, transcript: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let prk = HashAlg::Sha256.hmac(&[0u8; 32], random).as_ref().to_vec();
        let c = hkdf::expand_label(HashAlg::Sha256, &prk, label, transcript, 8).unwrap();
        (prk, c)
    }

    /// `message_hash` (RFC 8446 §4.4.1): 254, 00 00 Hash.length, Hash(ClientHello1).
    fn message_hash(ch1: &[u8]) -> Vec<u8> {
        let mut m = vec![254, 0, 0, 32];
        m.extend_from_slice(HashAlg::Sha256.hash(ch1).as_ref());
        m
    }

    /// The outer hello's ECH extension: (enc, payload) and ClientHelloOuterAAD (§5.2), by hand.
    fn outer(ch: &[u8]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let body = &ch[4..];
        let parts = HelloParts::parse(body).unwrap();
        let e = parts.find(ENCRYPTED_CLIENT_HELLO).unwrap();
        let EchClientHello::Outer { enc, payload, .. } =
            EchClientHello::decode(&body[e.data_start..e.end]).unwrap()
        else {
            panic!("inner-type ECH in ClientHelloOuter");
        };
        let mut aad = body.to_vec();
        let at = aad
            .windows(payload.len())
            .position(|w| w == payload.as_slice())
            .unwrap();
        aad[at..at + payload.len()].fill(0);
        (enc, payload, aad)
    }

    /// The server opens each ClientHelloOuter with its own ECH key (from the seed, as the run
    /// made it): HPKE's steps and every plaintext, independently of the explainer.
    fn server_open(client: &[Event]) -> (Vec<HpkeStep>, Vec<Vec<u8>>) {
        let key = lab::ech::key(1, 1).unwrap();
        let outers = messages(client, HandshakeType::ClientHello);
        let (enc, _, _) = outer(&outers[0]);
        let suite = Suite::from_ids(
            HpkeKemId::DhkemX25519HkdfSha256,
            tls13lab::messages::enums::HpkeKdfId::HkdfSha256,
            tls13lab::messages::enums::HpkeAeadId::Aes128Gcm,
        )
        .unwrap();
        let mut info = b"tls ech\0".to_vec();
        info.extend_from_slice(&key.config.raw);
        let mut steps = Vec::new();
        let mut ctx = hpke::setup_base_r(suite, &enc, &key.key, &info, &mut steps).unwrap();
        let opened = outers
            .iter()
            .map(|ch| {
                let (_, payload, aad) = outer(ch);
                ctx.open(&aad, &payload).unwrap()
            })
            .collect();
        (steps, opened)
    }

    fn value(steps: &[HpkeStep], v: HpkeValue) -> String {
        hex(&steps.iter().find(|s| s.name == v).unwrap().output)
    }

    /// The hex as `keys` wraps it: 32 bytes a line under the value column.
    fn wrapped(key: &str, b: &[u8]) -> String {
        b.chunks(32)
            .enumerate()
            .map(|(i, c)| format!("    {:<8} {}\n", if i == 0 { key } else { "" }, hex(c)))
            .collect()
    }

    #[test]
    fn keys_ech_shows_hpke_and_the_acceptance_confirmation_of_the_run() {
        let (client, server) = run(false);
        let (steps, opened) = server_open(&client);
        let inner = &inner_hellos(&client)[0];
        let sh = &messages(&client, HandshakeType::ServerHello)[0];
        // §7.2 by hand: the inner transcript through the ServerHello, its last 8 random
        // bytes zeroed; the result is what the ServerHello carries.
        let mut zeroed = sh.clone();
        zeroed[30..38].fill(0);
        let th = HashAlg::Sha256.hash(&[inner.as_slice(), &zeroed].concat());
        let (prk, want) = confirmation(&inner[6..38], ACCEPT_LABEL, th.as_ref());
        assert_eq!(want, sh[30..38], "the run's ServerHello confirms ECH");
        let (ok, out, err) = keys(&["--ech", "--no-export"]);
        assert!(ok, "{err}");
        let (ok, server_out, err) = keys(&["--ech", "--no-export", "--side", "server"]);
        assert!(ok, "{err}");
        for (side, out) in [("client", &out), ("server", &server_out)] {
            for needle in [
                "ECHConfig (RFC 9849 §4)\n  config_id            1\n".to_string(),
                "  public_name          public.example\n".to_string(),
                "dh = DH(skE, pkR) = DH(skR, pkE)\n".to_string(),
                format!(
                    "shared_secret = LabeledExpand(eae_prk, \"shared_secret\", kem_context, 32)\n    value    {}\n",
                    value(&steps, HpkeValue::SharedSecret)
                ),
                format!(
                    "key = LabeledExpand(secret, \"key\", key_schedule_context, 16)\n    value    {}\n",
                    value(&steps, HpkeValue::Key)
                ),
                // seq 0: the nonce is base_nonce itself.
                format!(
                    "nonce = base_nonce XOR I2OSP(seq, 12)\n    value    {}\n",
                    value(&steps, HpkeValue::BaseNonce)
                ),
                format!(
                    "    opens    with key, nonce and aad: EncodedClientHelloInner, {} bytes",
                    opened[0].len()
                ),
                wrapped("", &opened[0]),
                format!(
                    "transcript_ech_conf = Transcript-Hash(ClientHelloInner, ServerHello with random[24..32] zeroed)\n    value            {}\n",
                    hex(th.as_ref())
                ),
                format!(
                    "prk = HKDF-Extract(0, ClientHelloInner.random)\n    random           {}\n    value            {}\n",
                    hex(&inner[6..38]),
                    hex(&prk)
                ),
                format!(
                    "accept_confirmation = HKDF-Expand-Label(prk, \"ech accept confirmation\", transcript_ech_conf, 8)\n    value            {}\n    on the wire      {} = ServerHello.random[24..32]: ECH accepted\n",
                    hex(&want),
                    hex(&sh[30..38])
                ),
            ] {
                assert!(out.contains(&needle), "{side}: no {needle:?} in\n{out}");
            }
            // ECH comes first, then the TLS schedule of the inner handshake.
            let ech_at = out.find("Encrypted ClientHello (RFC 9849)").unwrap();
            let tls_at = out.find("key schedule of").unwrap();
            assert!(ech_at < tls_at && out[tls_at..].contains("ECH accepted"));
            assert!(!out.contains("does not open") && !out.contains("NOT give"));
        }
        // The client derived the sender's ephemeral key; the server only decapsulated.
        assert!(out.contains("DeriveKeyPair(ikm) (RFC 9180 §7.1.3)"));
        assert!(!server_out.contains("DeriveKeyPair"));
        // The Finished HMACs name the inner transcript they cover.
        assert!(out.contains("HMAC(finished_key, Transcript-Hash(ClientHello..server Finished))"));
        // The binary prints what the library renders, and replays from the seed.
        let tree = explain::KeyTree::from_events(
            "an in-memory full handshake, seed 1, ECH accepted (client view)",
            &client,
        );
        assert_eq!(out, tree.text(false));
        assert_eq!(server_out, {
            let t = explain::KeyTree::from_events(
                "an in-memory full handshake, seed 1, ECH accepted (server view)",
                &server,
            );
            t.text(false)
        });
    }

    #[test]
    fn keys_ech_hrr_shows_the_hrr_confirmation_and_the_second_seal() {
        let (client, _) = run(true);
        let (steps, opened) = server_open(&client);
        assert_eq!(
            opened.len(),
            2,
            "two ClientHelloOuters, both opened with one context"
        );
        let inner = inner_hellos(&client);
        let hellos = messages(&client, HandshakeType::ServerHello);
        let hrr = &hellos[0];
        assert_eq!(&hrr[6..38], &HRR_RANDOM[..]);
        let sh = &hellos[1];
        // §7.2.1: message_hash(ClientHelloInner1), HelloRetryRequest with its 8 bytes zeroed.
        let r = confirm::hrr_range(hrr).unwrap();
        let mut zeroed_hrr = hrr.clone();
        zeroed_hrr[r.clone()].fill(0);
        let th_hrr = HashAlg::Sha256.hash(&[message_hash(&inner[0]), zeroed_hrr].concat());
        let (_, hrr_want) = confirmation(&inner[0][6..38], HRR_ACCEPT_LABEL, th_hrr.as_ref());
        assert_eq!(hrr_want, hrr[r]);
        // §7.2 after the retry: the transcript carries the real HelloRetryRequest.
        let mut zeroed = sh.clone();
        zeroed[30..38].fill(0);
        let th = HashAlg::Sha256.hash(
            &[
                message_hash(&inner[0]),
                hrr.clone(),
                inner[1].clone(),
                zeroed,
            ]
            .concat(),
        );
        let (_, want) = confirmation(&inner[1][6..38], ACCEPT_LABEL, th.as_ref());
        assert_eq!(want, sh[30..38]);
        let mut nonce1 = tls13lab::ledger::unhex(&value(&steps, HpkeValue::BaseNonce)).unwrap();
        nonce1[11] ^= 1;
        let (ok, out, err) = keys(&["--ech", "--hrr", "--no-export", "--explain"]);
        assert!(ok, "{err}");
        for needle in [
            format!(
                "transcript_hrr_ech_conf = Transcript-Hash(message_hash(ClientHelloInner1), HelloRetryRequest with the extension's 8 bytes zeroed)\n    value            {}\n",
                hex(th_hrr.as_ref())
            ),
            format!(
                "hrr_accept_confirmation = HKDF-Expand-Label(prk, \"hrr ech accept confirmation\", transcript_hrr_ech_conf, 8)\n    value            {}\n    on the wire      {} = HelloRetryRequest encrypted_client_hello: ECH accepted\n",
                hex(&hrr_want),
                hex(&hrr_want)
            ),
            format!(
                "transcript_ech_conf = Transcript-Hash(message_hash, HelloRetryRequest, ClientHelloInner2, ServerHello with random[24..32] zeroed)\n    value            {}\n",
                hex(th.as_ref())
            ),
            format!("    value            {}\n    on the wire      {} = ServerHello.random[24..32]: ECH accepted", hex(&want), hex(&sh[30..38])),
            // The second Seal: sequence number 1, its nonce, an empty enc, what it opens to.
            "ClientHelloOuter after HelloRetryRequest: payload = Seal(key, nonce, aad, EncodedClientHelloInner)".to_string(),
            format!("  config_id 1, seq 1\nnonce = base_nonce XOR I2OSP(seq, 12)\n    value    {}\n", hex(&nonce1)),
            "enc\n    value    empty\n".to_string(),
            wrapped("", &opened[1]),
            "(RFC 9849 §7.2.1, §6.1.5)".to_string(),
            "(RFC 9849 §6.1.5, RFC 9180 §5.2)".to_string(),
        ] {
            assert!(out.contains(&needle), "no {needle:?} in\n{out}");
        }
        assert!(out.contains("HelloRetryRequest, ECH accepted (client view)"));
        assert!(!out.lines().any(|l| l.ends_with(' ')), "trailing spaces");
    }

    /// `keys --ledger` of an ECH connection's events (both sides, with and without HRR) shows
    /// the same ECH part and key schedule as the events themselves: HPKE's steps are read back
    /// from the JSON with their inputs in order, and the transcript is the inner one.
    #[test]
    fn ledger_file_of_ech_events() {
        for hrr in [false, true] {
            let (client, server) = run(hrr);
            for (side, events) in [("client", &client), ("server", &server)] {
                let path = super::tmp(&format!("ech-{side}-{hrr}.json"));
                std::fs::write(&path, serde_json::to_string(events).unwrap()).unwrap();
                let (ok, out, err) = keys(&["--ledger", path.to_str().unwrap()]);
                assert!(ok, "{side} {hrr}: {err}");
                let t = explain::KeyTree::from_events(&path.display().to_string(), events);
                assert!(t.ech.is_some());
                assert_eq!(out, t.text(false), "{side}, hrr {hrr}");
                assert!(out.contains("opens    with key") && !out.contains("does not open"));
            }
        }
    }

    /// `demo --ech --json F --show-secrets`, then `keys --ledger F`: the ECH part and the key
    /// schedule are those of `keys --ech` (the same seed, the same run) but for the title; a
    /// report with an operation, label or input RFC 9180 does not give the value, or a
    /// confirmation label RFC 9849 does not have, is refused.
    #[test]
    fn ledger_file_written_by_demo_with_ech() {
        let path = super::tmp("demo-ech.json");
        let demo = std::process::Command::new(env!("CARGO_BIN_EXE_tls13lab"))
            .args(["demo", "--ech", "--once", "--show-secrets", "--json"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(demo.status.success());
        let (ok, from_file, err) = keys(&["--ledger", path.to_str().unwrap()]);
        assert!(ok, "{err}");
        let (ok, in_memory, err) = keys(&["--ech", "--no-export"]);
        assert!(ok, "{err}");
        let title = |t: &str| t.replace(&path.display().to_string(), "T");
        assert_eq!(
            title(&from_file),
            in_memory.replace(
                "an in-memory full handshake, seed 1, ECH accepted (client view)",
                "T"
            )
        );
        assert!(
            from_file.contains("HMAC(finished_key, Transcript-Hash(ClientHello..server Finished))")
        );
        let json = std::fs::read_to_string(&path).unwrap();
        for (from, to, why) in [
            (
                "\"label\": \"sk\"",
                "\"label\": \"skk\"",
                "not how RFC 9180 makes it",
            ),
            (
                "\"op\": \"LabeledExpand\"",
                "\"op\": \"Dh\"",
                "not how RFC 9180 makes it",
            ),
            ("\"pkRm\":", "\"pkRx\":", "unknown input \"pkRx\""),
            ("\"prk\":", "\"ikm\":", "unknown input \"ikm\""),
            (
                "\"label\": \"ech accept confirmation\"",
                "\"label\": \"ech accept\"",
                "is not RFC 9849's",
            ),
        ] {
            let bad = json.replacen(from, to, 1);
            assert_ne!(bad, json, "{from} not in the report");
            std::fs::write(&path, bad).unwrap();
            let (ok, _, err) = keys(&["--ledger", path.to_str().unwrap()]);
            assert!(!ok && err.contains(why), "{from}: {err}");
        }
    }

    /// `keys --ech --hrr --svg F` draws ECH's band above the key tree: every HPKE step of the
    /// run with its value, both Seals (their nonces, opened) and both confirmations beside the
    /// bytes on the wire. A run without ECH has no band.
    #[test]
    fn keys_ech_svg_draws_hpke_seals_and_confirmations() {
        let (client, _) = run(true);
        let (steps, opened) = server_open(&client);
        let path = super::tmp("ech.svg");
        let (ok, _, err) = keys(&["--ech", "--hrr", "--svg", path.to_str().unwrap()]);
        assert!(ok, "{err}");
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("Encrypted ClientHello (RFC 9849)"));
        assert!(svg.contains("of the inner handshake (ECH accepted)"));
        let client_steps: Vec<&HpkeStep> = client
            .iter()
            .filter_map(|e| match e {
                Event::Hpke(s) => Some(s),
                _ => None,
            })
            .collect();
        assert!(client_steps.len() >= 12, "{}", client_steps.len());
        for s in &client_steps {
            assert!(
                svg.contains(&format!(">{}</text>", hex(&s.output))),
                "{} {}",
                s.name,
                hex(&s.output)
            );
        }
        let base = tls13lab::ledger::unhex(&value(&steps, HpkeValue::BaseNonce)).unwrap();
        for (seq, plain) in opened.iter().enumerate() {
            // base_nonce XOR I2OSP(seq, 12): seq is 0 or 1 here, the last byte.
            let mut nonce = base.clone();
            nonce[11] ^= seq as u8;
            assert!(svg.contains(&format!(
                "nonce {}; {} bytes, opens: EncodedClientHelloInner, {} bytes",
                hex(&nonce),
                plain.len() + 16,
                plain.len()
            )));
        }
        let confirmations: Vec<String> = client
            .iter()
            .filter_map(|e| match e {
                Event::EchConfirmation { confirmation, .. } => Some(hex(confirmation)),
                _ => None,
            })
            .collect();
        assert_eq!(confirmations.len(), 2);
        for c in confirmations {
            assert!(svg.contains(&format!("{c} = the bytes on the wire: ECH accepted")));
        }
        assert!(svg.find("dkp_prk").unwrap() < svg.find("early_secret").unwrap());
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        let (ok, _, err) = keys(&["--svg", path.to_str().unwrap()]);
        assert!(ok, "{err}");
        assert!(!std::fs::read_to_string(&path).unwrap().contains("RFC 9849"));
    }

    #[test]
    fn keys_ech_conflicts_with_replays() {
        assert!(!keys(&["--ech", "--rfc8448", "3"]).0);
        assert!(!keys(&["--hrr", "--ledger", "x.json"]).0);
    }
}
