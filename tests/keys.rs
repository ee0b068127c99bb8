//! `tls13lab keys` end to end: the binary's output for RFC 8448 traces carries every value the RFC
//! prints, `--svg` draws the tree, and `--ledger` reads the events a run wrote as JSON.

use std::process::Command;

use tls13lab::events::Side;
use tls13lab::lab::explain;
use tls13lab::lab::rfc8448::{Section, SECTIONS};

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
    assert!(out.contains("x25519 shared secret"));
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
