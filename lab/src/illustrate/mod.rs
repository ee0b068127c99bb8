//! The illustrated connection: one recorded connection as one self-contained HTML page, byte
//! by byte (issue 27; `tls13lab demo --html FILE`, `tls13lab keys --html FILE`).
//!
//! The page is made from one endpoint's events ([`tls13lab::events::Observe::ALL_WITH_SECRETS`]:
//! records, handshake messages with their layouts, derivations, secrets, key shares) and reuses
//! the lab's readings of them: the wire bytes are rebuilt as [`crate::pcap::wire_records`]
//! rebuilds them for a capture, the key schedule is [`crate::explain::KeyTree`], the ladder on
//! top is [`crate::ladder::svg_with`] with every arrow a link to its record.
//!
//! - Every record: its header fields and payload as hex; a protected record's
//!   `encrypted_record` and tag, and beside them the TLSInnerPlaintext it decrypts to (content,
//!   inner type, padding) with the traffic secret, write_key, write_iv, sequence number, nonce
//!   (IV ⊕ sequence number) and additional data that protected it.
//! - Every handshake message and extension as nested `<details open>` blocks from its layout:
//!   each field named, its value in words, its length, a link to the RFC or draft section;
//!   hybrid key shares split into their components (ML-KEM and X25519); certificates into
//!   their X.509 parts (`der.rs`, RFC 5280 §4.1); a ClientHelloOuter's
//!   `encrypted_client_hello` into config_id, cipher suite, enc and payload, with the
//!   ClientHelloInner it seals shown decrypted beside it (not a leaf: it is no record's bytes);
//!   a CompressedCertificate with the Certificate it decompresses to beside it (RFC 8879 §4).
//! - Beside a Finished, its verify_data computed (the base key, finished_key, the transcript
//!   hash); beside a ClientHello with a PSK, its binder; beside a ServerHello, ECH's acceptance
//!   confirmation; HPKE's steps in a section of their own.
//! - Every byte of every record lies in exactly one leaf (`class="leaf"` with `data-record`,
//!   `data-space`, `data-off`, `data-len`); [`check::check_coverage`] verifies it without a
//!   browser.
//! - The key schedule with its real values, labels and the messages each transcript hash
//!   covers; each traffic secret links to the records it protects and each record to its secret.
//!
//! Inline CSS and a few lines of inline JavaScript (expand/collapse all), nothing fetched;
//! readable without JavaScript, a light and a dark scheme, printable. Application data records
//! after the first [`APP_SHOWN`] collapse into a summary row.
//!
//! ```
//! use tls13lab::events::Side;
//!
//! let html = lab::illustrate::rfc8448(3, Side::Client, None).unwrap();
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! assert!(lab::illustrate::check::fetches(&html).is_empty());
//! ```
//!
//! A connection dissected from a capture ([`dissected`]) carries no secrets in its events: its
//! records are decrypted for the page with the key log, and its messages' layouts are found by
//! decoding them.
//!
//! `model.rs` reads the events ([`Illustrated`]), `decode.rs` says what a field's bytes mean
//! and where it is defined, `der.rs` walks certificates, `render.rs` writes the page, `css.rs` holds its style and script,
//! `check.rs` reads a page back.

pub mod check;
mod css;
mod decode;
pub(crate) mod der;
mod model;
mod render;

pub use self::decode::{rfc, Cite};
pub use self::model::{nonce, secret_name, Illustrated, Message, Part, Protection, Record};
pub use self::render::{esc, APP_SHOWN};

use tls13lab::events::{Event, Side};

use crate::explain::{self, InMemory};

/// The page of one endpoint's `events` (which must hold records, handshake messages and
/// secrets).
pub fn page(title: &str, events: &[Event]) -> Result<String, String> {
    Ok(render::page(&Illustrated::from_events(title, events)?))
}

/// The page of a connection read from outside ([`crate::dissect::Dissection::events`]): its
/// events carry no secrets, so the records are decrypted for the page with `keylog`'s lines
/// for `client_random`.
pub fn dissected(
    title: &str,
    events: &[Event],
    keylog: &tls13lab::keylog::KeyLog,
    client_random: &[u8],
) -> Result<String, String> {
    let ill = Illustrated::from_events_with_keys(title, events, Some((keylog, client_random)))?;
    Ok(render::page(&ill))
}

/// The page of RFC 8448 section `n` (3 to 7) replayed through our `side`, with the RFC's own
/// bytes; with `export`, a TLS-Exporter value under that label appears in the key schedule.
pub fn rfc8448(n: u8, side: Side, export: Option<&[u8]>) -> Result<String, String> {
    let events = crate::rfc8448::replay_section(n, side, export).map_err(|e| e.to_string())?;
    page(&explain::rfc8448_title(n, side)?, &events)
}

/// The page of an in-memory run (the key-schedule explainer's, [`explain::in_memory`]) from
/// `side`'s events.
pub fn in_memory(run: &InMemory, side: Side, export: Option<&[u8]>) -> Result<String, String> {
    let (c, s) = explain::in_memory(run, export).map_err(|e| e.to_string())?;
    let events = if side == Side::Client { c } else { s };
    page(&explain::in_memory_title(run, side), &events)
}

/// Each record of `events` as [`check::check_coverage`] takes it: its wire bytes and, when
/// protected, its TLSInnerPlaintext.
pub fn record_bytes(events: &[Event]) -> Result<Vec<check::RecordBytes>, String> {
    let ill = Illustrated::from_events("", events)?;
    Ok(ill
        .records
        .iter()
        .map(|r| (r.wire.clone(), r.inner_plaintext()))
        .collect())
}

/// An in-memory handshake with a Merkle Tree Certificate (draft-ietf-plants-merkle-tree-certs):
/// a 40-entry log whose entry 3 is the server's (P-256, localhost); the server holds the
/// standalone certificate and the landmark-relative one, the client asks with `trust_anchors`
/// for the landmark's ID (`landmark`) or the CA's. Both sides' events, secrets included.
#[cfg(test)]
pub(crate) fn mtc_handshake(landmark: bool) -> (Vec<Event>, Vec<Event>) {
    use crate::mtc::{IssuanceLog, LogConfig, MtcRequest};
    use std::sync::Arc;
    use tls13lab::config::{CertifiedKey, TrustAnchorOffer};
    use tls13lab::crypto::random::SeededRandom;
    use tls13lab::crypto::sign::SigningKey;
    use tls13lab::{ClientConfig, ServerConfig};
    let now = crate::demo::NOW_MS / 1000;
    let key = Arc::new(SigningKey::generate_p256(&mut SeededRandom::from_seed(
        0x3c,
    )));
    let mut log = IssuanceLog::new(LogConfig::example(16), 11).unwrap();
    let ours = MtcRequest {
        spki_der: key.public_key_spki_der().unwrap(),
        names: vec!["localhost".into()],
        not_before: now - 86_400,
        not_after: now + 7 * 86_400,
        server_auth: true,
    };
    for batch in 0..8u64 {
        if batch == 0 {
            log.append_null(3);
            log.append(&ours).unwrap();
            log.append_null(1);
        } else {
            log.append_null(5);
        }
        log.checkpoint(now - 86_400 + batch * 60).unwrap();
    }
    let (relative, l) = log.landmark_relative(3).unwrap();
    let ca = log.config().ca_id.clone();
    let landmark_id = ca.landmark_id(log.config().log_number, l).unwrap();
    let ck = |cert: Vec<u8>| CertifiedKey {
        chain: vec![cert],
        key: key.clone(),
    };
    let mut server = ServerConfig::new(ck(log.standalone(3).unwrap()));
    server.more_certs = vec![ck(relative)];
    let ids = [ca.as_bytes().to_vec(), landmark_id.as_bytes().to_vec()];
    server.certificate_properties = ids
        .iter()
        .map(|id| {
            Some(tls13lab::trust_anchors::CertificateProperties::with_id(
                id.clone(),
            ))
        })
        .collect();
    server.observe = tls13lab::Observe::ALL_WITH_SECRETS;
    let mut client = ClientConfig::new(Vec::new());
    client.server_name = Some("localhost".into());
    client.mtc = Some(Arc::new(log.relying_party(1).unwrap()));
    client.trust_anchors = Some(TrustAnchorOffer::new(vec![
        ids[usize::from(landmark)].clone()
    ]));
    client.observe = tls13lab::Observe::ALL_WITH_SECRETS;
    let mut p =
        crate::demo::Pair::new(Arc::new(client), Arc::new(server), 1, crate::demo::NOW_MS).unwrap();
    p.handshake().and_then(|_| p.settle()).unwrap();
    (p.client_events, p.server_events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rfc8448::Section;
    use tls13lab::messages::enums::NamedGroup;

    /// RFC 8448 §3's records, from the RFC's own bytes: wire and TLSInnerPlaintext.
    fn rfc_records() -> Vec<check::RecordBytes> {
        Section::new(3)
            .unwrap()
            .records()
            .into_iter()
            .map(|r| (r.wire.clone(), r.inner_plaintext()))
            .collect()
    }

    #[test]
    fn rfc8448_page_covers_every_byte_of_the_rfcs_records_once() {
        let html = rfc8448(3, Side::Client, None).unwrap();
        let records = rfc_records();
        assert_eq!(records.len(), 9);
        let leaves = check::check_coverage(&html, &records).unwrap();
        assert!(leaves > 150, "{leaves} leaves");
        // Every record is there, and links to it from the ladder.
        for i in 1..=records.len() {
            assert!(html.contains(&format!("id=\"rec-{i}\"")));
            assert!(html.contains(&format!("<a href=\"#rec-{i}\">")));
        }
    }

    #[test]
    fn rfc8448_page_shows_the_rfcs_keys() {
        let html = rfc8448(3, Side::Client, None).unwrap();
        let sec = Section::new(3).unwrap();
        let calc = |what: &str| calc(&html, what);
        // The first protected record is the server's handshake flight.
        let keys = calc("key");
        assert_eq!(
            keys[0],
            sec.summary("server_handshake_traffic_key").unwrap()
        );
        assert_eq!(
            keys[0],
            hex::decode("3fce516009c21727d0f2e4e86ee403bc").unwrap()
        );
        assert_eq!(
            calc("iv")[0],
            sec.summary("server_handshake_traffic_iv").unwrap()
        );
        // Its sequence number is 0, so the nonce is the IV; the client's Finished is next.
        assert_eq!(calc("nonce")[0], calc("iv")[0]);
        assert_eq!(
            keys[1],
            sec.summary("client_handshake_traffic_key").unwrap()
        );
        assert!(keys.contains(&sec.summary("server_application_traffic_key").unwrap()));
        assert!(keys.contains(&sec.summary("client_application_traffic_key").unwrap()));
        // The additional data is the record's header.
        assert_eq!(calc("aad")[0], rfc_records()[2].0[..5]);
        // The traffic secret links to the records it protects and back.
        let secret_at = html
            .find("data-name=\"server_handshake_traffic_secret\"")
            .unwrap();
        assert!(html[secret_at..].contains("records <a href=\"#rec-3\">#3</a>"));
    }

    /// The hex of every `data-calc="{what}"` value of `html`, in page order.
    fn calc(html: &str, what: &str) -> Vec<Vec<u8>> {
        let key = format!("data-calc=\"{what}\">");
        html.match_indices(&key)
            .map(|(i, _)| {
                let rest = &html[i + key.len()..];
                let text: String = rest[..rest.find('<').unwrap()].split_whitespace().collect();
                tls13lab::ledger::unhex(&text).unwrap()
            })
            .collect()
    }

    #[test]
    fn finished_messages_show_their_verify_data_computed() {
        let html = rfc8448(3, Side::Client, None).unwrap();
        let records = rfc_records();
        let verify = calc(&html, "verify_data");
        // The server's Finished ends record 3's content, the client's record 5's (RFC 8448 §3).
        let tail = |k: usize| {
            let inner = records[k].1.as_ref().unwrap();
            inner[inner.len() - 33..inner.len() - 1].to_vec()
        };
        assert_eq!(verify.len(), 2);
        assert_eq!(verify[0], tail(2));
        assert_eq!(verify[1], tail(3));
        assert_eq!(calc(&html, "finished_key").len(), 2);
        assert_eq!(calc(&html, "transcript_hash").len(), 2);
        // The base keys are the handshake traffic secrets.
        let sec = Section::new(3).unwrap();
        let base = calc(&html, "base_key");
        assert_eq!(calc(&html, "secret")[0], base[0]);
        assert!(sec.summary("server_handshake_traffic_key").is_some());
    }

    #[test]
    fn zero_rtt_page_shows_the_binder_computed_and_covers_every_byte() {
        let run = InMemory {
            connection: explain::Connection::ZeroRtt,
            ..InMemory::demo(1).unwrap()
        };
        let (events, _) = explain::in_memory(&run, None).unwrap();
        let html = page("0rtt", &events).unwrap();
        check::check_coverage(&html, &record_bytes(&events).unwrap()).unwrap();
        let binder = calc(&html, "binder");
        assert_eq!(binder.len(), 1);
        // The binder is the last bytes of the ClientHello (RFC 8446 §4.2.11).
        let hello = events
            .iter()
            .find_map(|e| match e {
                tls13lab::events::Event::Handshake(h) => Some(h.bytes.clone()),
                _ => None,
            })
            .unwrap();
        assert!(hello.ends_with(&binder[0]));
        assert!(html.contains("0-RTT accepted"));
        assert!(html.contains("data-epoch=\"early\""));
    }

    #[test]
    fn a_compressed_certificate_is_shown_decompressed_beside_its_record() {
        let mut run = InMemory::demo(1).unwrap();
        run.server.cert_compression = tls13lab::certcomp::supported().to_vec();
        assert!(!run.server.cert_compression.is_empty());
        let (events, _) = explain::in_memory(&run, None).unwrap();
        let html = page("compressed", &events).unwrap();
        check::check_coverage(&html, &record_bytes(&events).unwrap()).unwrap();
        assert!(html.contains(">CompressedCertificate<"));
        let at = html
            .find("Certificate, decompressed from compressed_certificate_message")
            .expect("the decompressed pane");
        let pane = &html[at..at
            + html[at..]
                .find("<div class=\"pane")
                .unwrap_or(html.len() - at)];
        // The certificate inside, part by part, beside the record: no leaf of the record.
        for part in ["tbsCertificate", "subjectPublicKeyInfo", "signatureValue"] {
            assert!(
                pane.contains(&format!("<span class=\"fname\">{part}</span>")),
                "{part}"
            );
        }
        assert!(!pane.contains("class=\"leaf\""));
    }

    #[test]
    fn ech_page_splits_the_extension_and_shows_the_inner_hello_and_confirmation() {
        let run = InMemory {
            ech: true,
            ..InMemory::demo(1).unwrap()
        };
        let (events, _) = explain::in_memory(&run, None).unwrap();
        let html = page("ech", &events).unwrap();
        check::check_coverage(&html, &record_bytes(&events).unwrap()).unwrap();
        let leaves = check::leaves(&html).unwrap();
        for f in ["ECHClientHelloType", "kdf_id", "aead_id", "config_id"] {
            assert!(
                html.contains(&format!("<span class=\"fname\">{f}</span>")),
                "{f}"
            );
        }
        assert!(html.contains("<span class=\"val\">outer (0)</span>"));
        // The inner hello is beside, not among the record's leaves.
        assert!(html.contains("ClientHelloInner, sealed"));
        assert!(html.contains("class=\"xleaf\""));
        // Its server_name is the real one; the outer hello's is the config's public name.
        let pane = &html[html.find("ClientHelloInner, sealed").unwrap()..];
        let pane = &pane[..pane.find("</div>\n</div>").unwrap_or(pane.len())];
        assert!(pane.contains("&quot;localhost&quot;"));
        assert!(html.contains("&quot;public.example&quot;"));
        // The confirmation is ServerHello.random[24..32] (RFC 9849 §7.2).
        let conf = calc(&html, "ech_confirmation");
        assert_eq!(conf.len(), 1);
        let sh = events
            .iter()
            .find_map(|e| match e {
                tls13lab::events::Event::Handshake(h)
                    if h.typ == tls13lab::messages::enums::HandshakeType::ServerHello =>
                {
                    Some(h.bytes.clone())
                }
                _ => None,
            })
            .unwrap();
        assert_eq!(conf[0], sh[6 + 24..6 + 32]);
        assert!(html.contains("ECH accepted"));
        assert!(html.contains("id=\"ech\""));
        assert!(leaves.iter().all(|l| l.len > 0));
    }

    #[test]
    fn ml_dsa_certificates_are_shown_part_by_part() {
        use crate::certgen::KeyAlg;
        let run = InMemory::demo(1)
            .unwrap()
            .with_chain(&[KeyAlg::MlDsa44, KeyAlg::MlDsa44])
            .unwrap();
        let (events, _) = explain::in_memory(&run, None).unwrap();
        let html = page("mldsa", &events).unwrap();
        check::check_coverage(&html, &record_bytes(&events).unwrap()).unwrap();
        for part in [
            "tbsCertificate",
            "serialNumber",
            "issuer",
            "validity",
            "subjectPublicKeyInfo",
            "subjectPublicKey",
            "signatureAlgorithm",
            "signatureValue",
        ] {
            let f = format!("<span class=\"fname\">{part}</span>");
            assert!(html.matches(&f).count() >= 1, "{part}");
        }
        assert!(html.contains("id-ml-dsa-44 (2.16.840.1.101.3.4.3.17)"));
        // ML-DSA-44: a 1312-byte public key (1317 with the BIT STRING's tag, length and unused
        // bits byte), a 2420-byte signature (2425).
        let leaves = check::leaves(&html).unwrap();
        assert!(leaves.iter().any(|l| l.len == 1312 + 5));
        assert!(leaves.iter().any(|l| l.len == 2420 + 5));
        assert!(html.contains("mldsa44"));
    }

    #[test]
    fn mtc_pages_split_the_proof_and_the_trust_anchors_and_cover_every_byte() {
        use tls13lab::crypto::cert::mtc::{parse_mtc, MtcProof, TrustAnchorId};
        use tls13lab::messages::handshake::{HandshakeMessage, HandshakePayload};
        for landmark in [false, true] {
            let (events, _) = mtc_handshake(landmark);
            let html = page("mtc", &events).unwrap();
            check::check_coverage(&html, &record_bytes(&events).unwrap()).unwrap();
            let fname = |f: &str| html.contains(&format!("<span class=\"fname\">{f}</span>"));
            let val = |v: &str| html.contains(&format!("<span class=\"val\">{v}</span>"));
            // The proof the server sent, read with the core's parser.
            let cert = events
                .iter()
                .find_map(|e| match e {
                    Event::Handshake(h)
                        if h.typ == tls13lab::messages::HandshakeType::Certificate =>
                    {
                        match HandshakeMessage::decode(&h.bytes, Default::default())
                            .ok()?
                            .payload
                        {
                            HandshakePayload::Certificate(c) => {
                                Some(c.entries[0].cert_data.clone())
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                })
                .unwrap();
            let mtc = parse_mtc(&cert).unwrap();
            let proof = MtcProof::decode(mtc.proof).unwrap();
            assert!(html.contains("id-alg-mtcProof (1.3.6.1.4.1.44363.47.0)"));
            for f in ["MTCProof", "start", "end", "inclusion_proof", "signatures"] {
                assert!(fname(f), "{f}");
            }
            assert!(val(&proof.start.to_string()) && val(&proof.end.to_string()));
            let sigs: usize = proof
                .signatures
                .iter()
                .map(|s| 3 + s.cosigner_id.len() + s.signature.len())
                .sum();
            assert!(val(&sigs.to_string()), "signatures length {sigs}");
            let n = proof.inclusion_proof.len();
            assert!(n > 0);
            assert!(val(&format!("{} ({n} hashes)", n * 32)) || n == 1);
            assert!(fname(&format!("hash {n} of {n}")));
            // A standalone certificate carries cosignatures, a landmark-relative one none.
            assert_eq!(proof.signatures.is_empty(), landmark);
            for s in &proof.signatures {
                let id = TrustAnchorId::from_binary(s.cosigner_id)
                    .unwrap()
                    .to_ascii();
                assert!(val(&id), "{id}");
            }
            assert_eq!(
                html.matches("<span class=\"fname\">SubtreeSignature</span>")
                    .count(),
                proof.signatures.len()
            );
            assert!(html.contains("draft-ietf-plants-merkle-tree-certs#section-6.2"));
            // trust_anchors: named and cited in the ClientHello, EncryptedExtensions and the
            // Certificate's entry; the lists' IDs in ASCII.
            assert!(html.matches("<span class=\"fname\">trust_anchors").count() >= 3);
            assert!(html.contains("draft-ietf-tls-trust-anchor-ids#section-4.1"));
            for f in [
                "RequestedTrustAnchorList",
                "AvailableTrustAnchorList",
                "TrustAnchorID",
            ] {
                assert!(fname(f), "{f}");
            }
            let ids = events
                .iter()
                .find_map(|e| match e {
                    Event::TrustAnchorsAvailable { ids } => Some(ids.clone()),
                    _ => None,
                })
                .unwrap();
            for id in ids {
                let ascii = TrustAnchorId::from_binary(&id).unwrap().to_ascii();
                assert!(val(&ascii), "{ascii}");
            }
        }
    }

    /// Issue 27's large connection: an ML-DSA-87 root → leaf chain and 1 MiB of application
    /// data from the server. Prints the page's size and the time to make it (docs/performance.md,
    /// "The illustrated connection"): `cargo test --release -p tls13lab-lab --lib large_connection
    /// -- --nocapture`.
    #[test]
    fn a_large_connection_page_covers_every_byte_and_collapses_its_data() {
        use crate::certgen::KeyAlg;
        use crate::demo;
        use std::sync::Arc;
        let run = InMemory::demo(1)
            .unwrap()
            .with_chain(&[KeyAlg::MlDsa87, KeyAlg::MlDsa87])
            .unwrap();
        let big = vec![b'x'; 1 << 20];
        let p = demo::request_response(
            Arc::new(run.client),
            Arc::new(run.server),
            1,
            demo::NOW_MS,
            b"GET / HTTP/1.0\r\n\r\n",
            &big,
            Default::default(),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let html = page("large", &p.client_events).unwrap();
        let took = started.elapsed();
        let records = record_bytes(&p.client_events).unwrap();
        let wire: usize = records.iter().map(|r| r.0.len()).sum();
        println!(
            "large connection: {} records, {wire} bytes on the wire; page {} bytes, made in {:.1} ms",
            records.len(),
            html.len(),
            took.as_secs_f64() * 1e3
        );
        check::check_coverage(&html, &records).unwrap();
        assert!(html.contains("id-ml-dsa-87"));
        let more = html
            .find("<details class=\"more\">")
            .expect("a summary row");
        assert!(html[more..].contains("more application data records"));
    }

    #[test]
    fn a_dissected_capture_gives_the_same_records_decrypted() {
        let run = InMemory::demo(1).unwrap();
        let (events, _) = explain::in_memory(&run, None).unwrap();
        let w = crate::pcap::pcapng(&events, Default::default(), 1460).unwrap();
        let cap = crate::pcap::read_capture(&w.bytes).unwrap();
        let c = &cap.connections[0];
        let d = crate::dissect::dissect(&c.c2s, &c.s2c, &cap.keylog, true);
        let random = tls13lab::ledger::unhex(d.client_random.as_deref().unwrap()).unwrap();
        let html = dissected("dissected", &d.events, &cap.keylog, &random).unwrap();
        let ill = Illustrated::from_events_with_keys("", &d.events, Some((&cap.keylog, &random)))
            .unwrap();
        let records: Vec<check::RecordBytes> = ill
            .records
            .iter()
            .map(|r| (r.wire.clone(), r.inner_plaintext()))
            .collect();
        check::check_coverage(&html, &records).unwrap();
        // Every record as the endpoint saw it, decrypted as it decrypted it.
        let original = record_bytes(&events).unwrap();
        assert_eq!(records.len(), original.len());
        for r in &records {
            assert!(original.contains(r));
        }
        // The server's flight, the client's Finished, the server's ticket.
        assert_eq!(records.iter().filter(|r| r.1.is_some()).count(), 3);
        assert_eq!(
            calc(&html, "key").len(),
            records.iter().filter(|r| r.1.is_some()).count()
        );
        // Layouts found by decoding: the ServerHello's fields are named.
        assert!(html.contains("<span class=\"fname\">cipher_suite</span>"));
        assert!(!html.contains("no layout reported"));
    }

    #[test]
    fn pages_fetch_nothing_and_escape_what_they_show() {
        let html = rfc8448(3, Side::Client, None).unwrap();
        assert_eq!(check::fetches(&html), Vec::<String>::new());
        assert!(!html.contains("<script src"));
        assert!(html.contains("<script>"));
        assert!(html.contains("prefers-color-scheme: dark"));
        // Links go only to the RFC editor and the datatracker.
        for (i, _) in html.match_indices("href=\"http") {
            let url = &html[i + 6..];
            assert!(
                url.starts_with("https://www.rfc-editor.org/rfc/")
                    || url.starts_with("https://datatracker.ietf.org/doc/html/"),
                "{}",
                &url[..60]
            );
        }
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let img = check::fetches("<img src=\"https://x\"><a href=\"https://y\">");
        assert_eq!(img.len(), 1);
        assert!(img[0].starts_with(" src="));
        assert_eq!(
            check::fetches("<svg><line marker-end=\"url(#a0)\"/>").len(),
            0
        );
        assert_eq!(check::fetches("<link rel=stylesheet href=s.css>").len(), 2);
    }

    #[test]
    fn hybrid_hello_retry_page_splits_the_shares_and_covers_every_byte() {
        let run = InMemory {
            hello_retry: true,
            ..InMemory::demo(1)
                .unwrap()
                .with_groups(&[NamedGroup::X25519MLKEM768])
        };
        let (events, _) = explain::in_memory(&run, None).unwrap();
        let html = page("hrr", &events).unwrap();
        check::check_coverage(&html, &record_bytes(&events).unwrap()).unwrap();
        assert!(html.contains(">HelloRetryRequest<"));
        for part in [
            "ML-KEM-768 encapsulation key",
            "X25519 public key",
            "ML-KEM-768 ciphertext",
        ] {
            let leaf = format!("<span class=\"fname\">{part}</span>");
            assert!(html.contains(&leaf), "{part}");
        }
        // The shared secret is ML-KEM-768's then X25519's (draft-ietf-tls-ecdhe-mlkem).
        assert!(html.contains("shared secret = ML-KEM-768 ‖ X25519</dt>"));
        let comps = calc(&html, "component");
        assert_eq!(comps.len(), 2);
        assert_eq!(calc(&html, "shared_secret")[0], comps.concat());
        // The ML-KEM-768 encapsulation key is 1184 bytes, its ciphertext 1088.
        let leaves = check::leaves(&html).unwrap();
        assert!(leaves.iter().any(|l| l.len == 1184));
        assert!(leaves.iter().any(|l| l.len == 1088));
    }

    #[test]
    fn application_data_beyond_a_few_records_collapses() {
        use crate::demo;
        use std::sync::Arc;
        let (server, root) = demo::server_config(5, demo::NOW_MS).unwrap();
        let client = demo::client_config(root);
        let big = vec![b'x'; 5 * 16384];
        let p = demo::request_response(
            Arc::new(client),
            Arc::new(server),
            5,
            demo::NOW_MS,
            b"GET / HTTP/1.0\r\n\r\n",
            &big,
            Default::default(),
        )
        .unwrap();
        let html = page("big", &p.client_events).unwrap();
        check::check_coverage(&html, &record_bytes(&p.client_events).unwrap()).unwrap();
        let more = html
            .find("<details class=\"more\">")
            .expect("a summary row");
        assert!(html[more..].contains("more application data records"));
        // A record split across records: none here, but every message piece is whole.
        assert!(!html.contains("continues in another record"));
    }
}
