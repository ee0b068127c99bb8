//! RFC 8448 traces replayed byte for byte, in both roles.
//!
//! Inputs (randoms, ephemeral private keys) are injected through `ScriptedRandom`; outputs (every
//! record we send, every secret we derive) are compared with the RFC. RSA-PSS signatures are randomized,
//! so the server's CertificateVerify uses the RFC's published signature through a replaying signer,
//! and the client verifies it with the published certificate.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;
use tls13lab::config::{CertifiedKey, Signer};
use tls13lab::crypto::random::ScriptedRandom;
use tls13lab::crypto::sign::certificate_verify_message;
use tls13lab::events::Event;
use tls13lab::messages::enums::{
    CipherSuite, ExtensionType, NamedGroup, PskKeyExchangeMode, SignatureScheme,
};
use tls13lab::messages::extensions::Extension;
use tls13lab::{Client, ClientConfig, Error, Server, ServerConfig, ServerVerification};

const NOW_MS: u64 = 1_577_836_800_000; // 2020-01-01: inside the RFC certificates' validity

fn vectors() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/rfc8448.json"
    ))
    .expect("vectors");
    serde_json::from_str(&text).expect("json")
}

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).expect("hex")
}

struct Section {
    v: Value,
}

impl Section {
    fn new(n: &str) -> Section {
        Section {
            v: vectors()["sections"][n].clone(),
        }
    }

    /// The complete wire bytes of every record, in order, with its direction.
    fn records(&self) -> Vec<(String, Vec<u8>)> {
        self.v["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["direction"].as_str().unwrap().to_string(),
                    h(r["complete_record"].as_str().unwrap()),
                )
            })
            .collect()
    }

    fn key(&self, name: &str, which: &str) -> Vec<u8> {
        h(self.v["key_pairs"][name][which].as_str().unwrap())
    }

    fn parsed(&self, msg: &str, field: &str) -> Vec<u8> {
        h(self.v["parsed"][msg][field].as_str().unwrap())
    }

    /// Every value of the RFC's summary (secrets, keys, IVs, Finished values).
    fn summary_values(&self) -> Vec<(String, Vec<u8>)> {
        self.v["summary"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "source" | "ticket_nonce"))
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), h(s))))
            .collect()
    }

    fn handshake_message(&self, from: &str, name: &str) -> Vec<u8> {
        let m = self.v["handshake_messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["from"] == from && m["rfc_name"] == name)
            .unwrap();
        h(m["hex"].as_str().unwrap())
    }
}

/// The ClientHello every RFC 8448 trace sends, as configuration.
fn rfc_client_config(sec: &Section) -> ClientConfig {
    let cert = server_rsa_cert();
    ClientConfig {
        cipher_suites: vec![
            CipherSuite::TLS_AES_128_GCM_SHA256,
            CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
            CipherSuite::TLS_AES_256_GCM_SHA384,
        ],
        groups: [
            0x001d, 0x0017, 0x0018, 0x0019, 0x0100, 0x0101, 0x0102, 0x0103, 0x0104,
        ]
        .into_iter()
        .map(NamedGroup::from)
        .collect(),
        key_shares: vec![NamedGroup::X25519],
        signature_schemes: [
            0x0403, 0x0503, 0x0603, 0x0203, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0201,
            0x0402, 0x0502, 0x0602, 0x0202,
        ]
        .into_iter()
        .map(SignatureScheme::from)
        .collect(),
        server_name: Some("server".into()),
        // The RFC certificate has no subjectAltName: validate the chain, not the name.
        verification: ServerVerification::RootsNoName(vec![cert]),
        record_size_limit: Some(0x4001),
        psk_modes: vec![PskKeyExchangeMode::PskDheKe],
        extra_extensions: {
            let mut v = vec![Extension::RenegotiationInfo(vec![0])];
            if sec.v["parsed"]["client_hello_1"]["extension_types"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "0023")
            {
                v.push(Extension::Unknown {
                    typ: ExtensionType::SessionTicket,
                    body: vec![],
                });
            }
            v
        },
        extension_order: [
            0x0000, 0xff01, 0x000a, 0x0023, 0x0033, 0x002a, 0x002b, 0x000d, 0x002c, 0x002d, 0x001c,
            0x0015,
        ]
        .into_iter()
        .map(ExtensionType::from)
        .collect(),
        fixed_validation_time_ms: Some(NOW_MS),
        ..ClientConfig::default()
    }
}

fn server_rsa_cert() -> Vec<u8> {
    let pem = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/pem/server_rsa_certificate.pem"
    ))
    .unwrap();
    tls13lab::crypto::cert::certs_from_pem(&pem)
        .unwrap()
        .remove(0)
}

/// Returns the RFC's published RSA-PSS signature after checking that it is asked to sign exactly
/// the content the RFC signed (so the transcript up to CertificateVerify is proven identical).
struct ReplaySigner {
    expected_content: Vec<u8>,
    signature: Vec<u8>,
}

impl Signer for ReplaySigner {
    fn schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::rsa_pss_rsae_sha256]
    }

    fn sign(
        &self,
        _scheme: SignatureScheme,
        message: &[u8],
        _rng: &mut dyn tls13lab::crypto::random::RandomSource,
    ) -> Result<Vec<u8>, Error> {
        assert_eq!(
            message,
            &self.expected_content[..],
            "CertificateVerify content"
        );
        Ok(self.signature.clone())
    }
}

fn extras() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/rfc8448_computed_extras.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every derivation output, key-share secret and Finished value an endpoint reported.
fn derived_values(events: &[Event]) -> HashSet<Vec<u8>> {
    let mut set = HashSet::new();
    for e in events {
        match e {
            Event::Derivation(d) => {
                set.insert(d.output.clone());
            }
            Event::KeyShare(k) => {
                set.insert(k.shared_secret.clone());
            }
            Event::Handshake(hs) if hs.bytes.first() == Some(&20) => {
                set.insert(hs.bytes[4..].to_vec());
            }
            _ => {}
        }
    }
    set
}

fn assert_all_secrets(sec: &Section, events: &[Event], skip: &[&str]) {
    let have = derived_values(events);
    let mut checked = 0;
    for (name, value) in sec.summary_values() {
        if skip.contains(&name.as_str()) {
            continue;
        }
        assert!(have.contains(&value), "secret {name} not derived");
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} secrets checked");
}

fn rfc_server_config(sec: &Section) -> ServerConfig {
    let extras = extras();
    let cv = &extras["sections"]["3"]["certificate_verify_signed_content"][0];
    let content = h(cv["signed_content"].as_str().unwrap());
    // The CertificateVerify message: 0f 000084 0804 0080 <signature>.
    let cv_msg = sec.handshake_message("server", "CertificateVerify");
    let signature = cv_msg[8..].to_vec();
    assert_eq!(
        content,
        certificate_verify_message(true, &content[content.len() - 32..])
    );
    let key = ReplaySigner {
        expected_content: content,
        signature,
    };
    let mut cfg = ServerConfig::new(CertifiedKey {
        chain: vec![server_rsa_cert()],
        key: Arc::new(key),
    });
    cfg.cipher_suites = vec![CipherSuite::TLS_AES_128_GCM_SHA256];
    cfg.groups = rfc_client_config(sec).groups;
    cfg.send_supported_groups = true;
    cfg.record_size_limit = Some(0x4001);
    cfg.extension_order = vec![
        ExtensionType::SupportedGroups,
        ExtensionType::RecordSizeLimit,
        ExtensionType::ServerName,
    ];
    cfg
}

#[test]
fn section3_client_byte_exact() {
    let sec = Section::new("3");
    let recs = sec.records();
    let rng = ScriptedRandom::new(
        vec![
            sec.parsed("client_hello_1", "random"),
            sec.key("client_x25519", "private_key"),
        ],
        0,
    );
    let mut c = Client::new(Arc::new(rfc_client_config(&sec)), Box::new(rng)).unwrap();
    c.start(NOW_MS).unwrap();
    assert_eq!(c.take_output(), recs[0].1, "ClientHello record");
    // ServerHello, then the encrypted EncryptedExtensions..Finished record.
    c.receive(&recs[1].1, NOW_MS).unwrap();
    c.receive(&recs[2].1, NOW_MS).unwrap();
    assert!(c.is_connected());
    assert_eq!(c.take_output(), recs[3].1, "client Finished record");
    // NewSessionTicket.
    c.receive(&recs[4].1, NOW_MS).unwrap();
    assert_eq!(c.tickets().len(), 1);
    assert_eq!(
        c.tickets().tickets[0].psk,
        h(sec.v["summary"]["resumption_psk"].as_str().unwrap())
    );
    // Application data both ways, then close_notify both ways.
    let app = &sec.v["records"][5]["payload"];
    c.send(&h(app.as_str().unwrap())).unwrap();
    assert_eq!(c.take_output(), recs[5].1, "client application data record");
    c.receive(&recs[6].1, NOW_MS).unwrap();
    c.close();
    assert_eq!(c.take_output(), recs[7].1, "client close_notify record");
    c.receive(&recs[8].1, NOW_MS).unwrap();
    let events: Vec<Event> = c.events().collect();
    let server_data = h(sec.v["records"][6]["payload"].as_str().unwrap());
    assert_eq!(tls13lab::demo::app_data(&events), server_data);
    assert_all_secrets(&sec, &events, &[]);
}

#[test]
fn section3_server_byte_exact() {
    let sec = Section::new("3");
    let recs = sec.records();
    let rng = ScriptedRandom::new(
        vec![
            sec.parsed("server_hello", "random"),
            sec.key("server_x25519", "private_key"),
        ],
        0,
    );
    let mut s = Server::new(Arc::new(rfc_server_config(&sec)), Box::new(rng)).unwrap();
    s.receive(&recs[0].1, NOW_MS).unwrap();
    let mut expected = recs[1].1.clone();
    expected.extend_from_slice(&recs[2].1);
    assert_eq!(s.take_output(), expected, "ServerHello + encrypted flight");
    s.receive(&recs[3].1, NOW_MS).unwrap();
    assert!(s.is_connected());
    let app = h(sec.v["records"][6]["payload"].as_str().unwrap());
    s.receive(&recs[5].1, NOW_MS).unwrap();
    let _ = s.take_output();
    s.send(&app).unwrap();
    assert_eq!(s.take_output(), recs[6].1, "server application data record");
    s.receive(&recs[7].1, NOW_MS).unwrap();
    s.close();
    assert_eq!(s.take_output(), recs[8].1, "server close_notify record");
    let events: Vec<Event> = s.events().collect();
    let client_data = h(sec.v["records"][5]["payload"].as_str().unwrap());
    assert_eq!(tls13lab::demo::app_data(&events), client_data);
    // The ticket is issue 3's; every other §3 value must be derived here.
    assert_all_secrets(&sec, &events, &["resumption_psk"]);
}

#[test]
fn section3_flipped_bit_is_bad_record_mac() {
    let sec = Section::new("3");
    let recs = sec.records();
    for pos in [5usize, 100, recs[2].1.len() - 1] {
        let rng = ScriptedRandom::new(
            vec![
                sec.parsed("client_hello_1", "random"),
                sec.key("client_x25519", "private_key"),
            ],
            0,
        );
        let mut c = Client::new(Arc::new(rfc_client_config(&sec)), Box::new(rng)).unwrap();
        c.start(NOW_MS).unwrap();
        let _ = c.take_output();
        c.receive(&recs[1].1, NOW_MS).unwrap();
        let mut bad = recs[2].1.clone();
        bad[pos] ^= 0x01;
        let err = c.receive(&bad, NOW_MS).unwrap_err();
        assert_eq!(
            err.alert(),
            Some(tls13lab::messages::enums::AlertDescription::BadRecordMac),
            "bit flipped at {pos}: {err}"
        );
        // The alert goes out (under the handshake keys) and the connection is dead.
        assert!(!c.take_output().is_empty());
        assert!(c.is_closed());
    }
}
