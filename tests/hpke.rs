//! HPKE (RFC 9180) base mode against the RFC's own vectors (tests/vectors/hpke/base.txt, from
//! Appendix A) — every intermediate value, every listed encryption and export — and against an
//! independent implementation (rustls' aws-lc-rs HPKE) for AES-256-GCM, which Appendix A has
//! no vector for with these KEMs.

use tls13lab::crypto::hpke::{
    self, Aead, HpkeStep, HpkeValue, Kdf, Kem, KeyPair, ReceiverContext, SenderContext, Suite,
};
use tls13lab::crypto::random::{ScriptedRandom, SeededRandom};
use tls13lab::keyschedule::NoSink;
use tls13lab::messages::enums::{HpkeAeadId, HpkeKdfId, HpkeKemId};

type Fields = Vec<(String, String)>;

struct Case {
    setup: Fields,
    encryptions: Vec<Fields>,
    exports: Vec<Fields>,
}

fn get<'a>(f: &'a Fields, k: &str) -> &'a str {
    f.iter()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {k}"))
}

fn bytes(f: &Fields, k: &str) -> Vec<u8> {
    hex::decode(get(f, k)).unwrap()
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/hpke/base.txt"
    ))
    .unwrap();
    let mut cases: Vec<Case> = Vec::new();
    let mut cur: Option<&mut Fields> = None;
    for line in text.lines() {
        match line {
            "[suite]" => {
                cases.push(Case {
                    setup: Vec::new(),
                    encryptions: Vec::new(),
                    exports: Vec::new(),
                });
                cur = cases.last_mut().map(|c| &mut c.setup);
            }
            "[encryption]" | "[export]" => {
                let c = cases.last_mut().unwrap();
                let list = if line == "[encryption]" {
                    &mut c.encryptions
                } else {
                    &mut c.exports
                };
                list.push(Vec::new());
                cur = list.last_mut();
            }
            _ => {
                let (k, v) = line.split_once(':').unwrap();
                cur.as_mut()
                    .unwrap()
                    .push((k.to_string(), v.trim().to_string()));
            }
        }
    }
    cases
}

fn suite_of(f: &Fields) -> Suite {
    let id = |k| get(f, k).parse::<u16>().unwrap();
    Suite::from_ids(
        HpkeKemId::from(id("kem_id")),
        HpkeKdfId::from(id("kdf_id")),
        HpkeAeadId::from(id("aead_id")),
    )
    .unwrap()
}

/// The output of the one step named `name` (exactly one must be reported).
fn step(steps: &[HpkeStep], name: HpkeValue) -> Vec<u8> {
    let found: Vec<_> = steps.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "{name}: {steps:?}");
    found[0].output.clone()
}

fn check_schedule(f: &Fields, steps: &[HpkeStep], who: &str) {
    for (name, key) in [
        (HpkeValue::SharedSecret, "shared_secret"),
        (HpkeValue::KeyScheduleContext, "key_schedule_context"),
        (HpkeValue::Secret, "secret"),
        (HpkeValue::ExporterSecret, "exporter_secret"),
    ] {
        assert_eq!(hex::encode(step(steps, name)), get(f, key), "{who} {key}");
    }
    // Export-only has neither key nor base_nonce (the vector lists them empty).
    if !get(f, "key").is_empty() {
        assert_eq!(
            hex::encode(step(steps, HpkeValue::Key)),
            get(f, "key"),
            "{who}"
        );
        assert_eq!(
            hex::encode(step(steps, HpkeValue::BaseNonce)),
            get(f, "base_nonce"),
            "{who}"
        );
    }
}

fn setup(c: &Case) -> (SenderContext, ReceiverContext, Vec<HpkeStep>, Vec<HpkeStep>) {
    let f = &c.setup;
    let suite = suite_of(f);
    // DeriveKeyPair reproduces both key pairs from their ikm (RFC 9180 §7.1.3).
    let r = suite
        .kem
        .derive_key_pair(&bytes(f, "ikmR"), &mut NoSink)
        .unwrap();
    assert_eq!(hex::encode(r.public_key()), get(f, "pkRm"));
    assert_eq!(hex::encode(r.private_key()), get(f, "skRm"));
    let e = suite
        .kem
        .derive_key_pair(&bytes(f, "ikmE"), &mut NoSink)
        .unwrap();
    assert_eq!(hex::encode(e.public_key()), get(f, "pkEm"));
    assert_eq!(hex::encode(e.private_key()), get(f, "skEm"));
    // The sender's ephemeral ikm is one draw from the injected source.
    let mut rng = ScriptedRandom::new([bytes(f, "ikmE")], 0);
    let mut s_steps = Vec::new();
    let (enc, tx) = hpke::setup_base_s(
        suite,
        r.public_key(),
        &bytes(f, "info"),
        &mut rng,
        &mut s_steps,
    )
    .unwrap();
    assert!(rng.mismatches().is_empty() && rng.remaining() == 0 && rng.draws() == 1);
    assert_eq!(hex::encode(&enc), get(f, "enc"));
    // The first steps are DeriveKeyPair's: dkp_prk, then sk (X25519) or the accepted candidate.
    assert_eq!(s_steps[0].name, HpkeValue::DkpPrk);
    let sk = s_steps
        .iter()
        .rfind(|s| matches!(s.name, HpkeValue::Sk | HpkeValue::Candidate))
        .unwrap();
    assert_eq!(hex::encode(&sk.output), get(f, "skEm"));
    check_schedule(f, &s_steps, "sender");
    // The receiver from a key pair rebuilt from the serialized private key.
    let r = KeyPair::from_private(suite.kem, &bytes(f, "skRm")).unwrap();
    let mut r_steps = Vec::new();
    let rx = hpke::setup_base_r(suite, &enc, &r, &bytes(f, "info"), &mut r_steps).unwrap();
    check_schedule(f, &r_steps, "receiver");
    (tx, rx, s_steps, r_steps)
}

#[test]
fn rfc9180_base_vectors_key_schedule() {
    let cases = cases();
    assert_eq!(cases.len(), 5);
    for c in &cases {
        let (_, _, s_steps, r_steps) = setup(c);
        // The sender derived its ephemeral pair, then both ran the same KEM and schedule.
        let kem_steps = if suite_of(&c.setup).kem == Kem::P256HkdfSha256 {
            // dkp_prk and at least one candidate.
            3
        } else {
            2
        };
        assert!(s_steps.len() >= r_steps.len() + kem_steps - 1);
        assert_eq!(
            s_steps[s_steps.len() - r_steps.len()..],
            r_steps[..],
            "both sides' KEM and key schedule steps are equal"
        );
        assert_eq!(hex::encode(step(&r_steps, HpkeValue::KemContext)), {
            let mut kc = get(&c.setup, "enc").to_string();
            kc.push_str(get(&c.setup, "pkRm"));
            kc
        });
    }
}

#[test]
fn rfc9180_base_vectors_encryptions_and_exports() {
    for c in &cases() {
        let (mut tx, mut rx, _, _) = setup(c);
        let suite = suite_of(&c.setup);
        let listed: Vec<u64> = c
            .encryptions
            .iter()
            .map(|e| get(e, "sequence_number").parse().unwrap())
            .collect();
        assert_eq!(
            listed.is_empty(),
            suite.aead == Aead::ExportOnly,
            "{suite:?}"
        );
        if suite.aead == Aead::ExportOnly {
            assert_eq!(tx.seal(b"", b"x"), Err(hpke::HpkeError::ExportOnly));
        }
        // Sequence numbers advance one per message, so seal (and open) every one up to the
        // last listed; the vectors give pt, aad, nonce and ct for the listed ones.
        for seq in 0..listed.iter().max().map_or(0, |&last| last + 1) {
            assert_eq!(tx.sequence(), u128::from(seq));
            let e = c
                .encryptions
                .iter()
                .find(|e| get(e, "sequence_number") == seq.to_string());
            let (aad, pt) = match e {
                Some(e) => (bytes(e, "aad"), bytes(e, "pt")),
                None => (format!("Count-{seq}").into_bytes(), b"filler".to_vec()),
            };
            if let Some(e) = e {
                assert_eq!(hex::encode(tx.next_nonce()), get(e, "nonce"));
                assert_eq!(hex::encode(rx.next_nonce()), get(e, "nonce"));
            }
            let ct = tx.seal(&aad, &pt).unwrap();
            if let Some(e) = e {
                assert_eq!(hex::encode(&ct), get(e, "ct"), "{suite:?} seq {seq}");
            }
            assert_eq!(rx.open(&aad, &ct).unwrap(), pt);
        }
        assert_eq!(c.exports.len(), 3);
        for x in &c.exports {
            let ctx = bytes(x, "exporter_context");
            let len: usize = get(x, "L").parse().unwrap();
            let mut steps = Vec::new();
            let v = tx.export(&ctx, len, &mut steps).unwrap();
            assert_eq!(hex::encode(&v), get(x, "exported_value"));
            assert_eq!(rx.export(&ctx, len, &mut NoSink).unwrap(), v);
            assert_eq!(steps.len(), 1);
            assert_eq!((steps[0].label, &steps[0].output), ("sec", &v));
        }
    }
}

/// Unwatched (no sink), a context takes psk_id_hash from the per-suite value computed once and
/// derives exporter_secret only when it exports: the same ciphertexts and exported values as
/// the watched path, for every vector, on first use of the cached value and after it.
#[test]
fn unwatched_contexts_seal_and_export_as_the_vectors_say() {
    for round in 0..2 {
        for c in &cases() {
            let f = &c.setup;
            let suite = suite_of(f);
            let mut rng = ScriptedRandom::new([bytes(f, "ikmE")], 0);
            let r = KeyPair::from_private(suite.kem, &bytes(f, "skRm")).unwrap();
            let (enc, mut tx) = hpke::setup_base_s(
                suite,
                r.public_key(),
                &bytes(f, "info"),
                &mut rng,
                &mut NoSink,
            )
            .unwrap();
            assert_eq!(hex::encode(&enc), get(f, "enc"));
            let mut rx =
                hpke::setup_base_r(suite, &enc, &r, &bytes(f, "info"), &mut NoSink).unwrap();
            if let Some(e) = c
                .encryptions
                .iter()
                .find(|e| get(e, "sequence_number") == "0")
            {
                let ct = tx.seal(&bytes(e, "aad"), &bytes(e, "pt")).unwrap();
                assert_eq!(hex::encode(&ct), get(e, "ct"), "{suite:?} round {round}");
                assert_eq!(rx.open(&bytes(e, "aad"), &ct).unwrap(), bytes(e, "pt"));
            }
            for x in &c.exports {
                let ctx = bytes(x, "exporter_context");
                let len: usize = get(x, "L").parse().unwrap();
                // Unwatched, then watched: the step that derives exporter_secret is shown when
                // it runs.
                assert_eq!(
                    hex::encode(tx.export(&ctx, len, &mut NoSink).unwrap()),
                    get(x, "exported_value")
                );
                let mut steps = Vec::new();
                let v = rx.export(&ctx, len, &mut steps).unwrap();
                assert_eq!(hex::encode(&v), get(x, "exported_value"));
                assert_eq!(steps[0].name, HpkeValue::ExporterSecret);
                assert_eq!(hex::encode(&steps[0].output), get(f, "exporter_secret"));
            }
        }
    }
}

#[test]
fn unsupported_suites_are_refused() {
    assert!(Suite::from_ids(
        HpkeKemId::DhkemX448HkdfSha512,
        HpkeKdfId::HkdfSha256,
        HpkeAeadId::Aes128Gcm
    )
    .is_err());
    assert!(Suite::from_ids(
        HpkeKemId::DhkemX25519HkdfSha256,
        HpkeKdfId::Unknown(9),
        HpkeAeadId::Aes128Gcm
    )
    .is_err());
}

/// AES-256-GCM, which Appendix A pairs only with P-521: both directions against rustls'
/// aws-lc-rs HPKE, for both KEMs (and every other AEAD too, as a second opinion).
#[test]
fn interoperates_with_rustls_hpke_for_every_suite() {
    use rustls::crypto::aws_lc_rs::hpke as r;
    use rustls::crypto::hpke::{EncapsulatedSecret, Hpke, HpkePrivateKey, HpkePublicKey};
    let theirs: [(&dyn Hpke, Kem, Aead); 6] = [
        (
            r::DH_KEM_X25519_HKDF_SHA256_AES_128,
            Kem::X25519HkdfSha256,
            Aead::Aes128Gcm,
        ),
        (
            r::DH_KEM_X25519_HKDF_SHA256_AES_256,
            Kem::X25519HkdfSha256,
            Aead::Aes256Gcm,
        ),
        (
            r::DH_KEM_X25519_HKDF_SHA256_CHACHA20_POLY1305,
            Kem::X25519HkdfSha256,
            Aead::ChaCha20Poly1305,
        ),
        (
            r::DH_KEM_P256_HKDF_SHA256_AES_128,
            Kem::P256HkdfSha256,
            Aead::Aes128Gcm,
        ),
        (
            r::DH_KEM_P256_HKDF_SHA256_AES_256,
            Kem::P256HkdfSha256,
            Aead::Aes256Gcm,
        ),
        (
            r::DH_KEM_P256_HKDF_SHA256_CHACHA20_POLY1305,
            Kem::P256HkdfSha256,
            Aead::ChaCha20Poly1305,
        ),
    ];
    let mut rng = SeededRandom::from_seed(9180);
    for (them, kem, aead) in theirs {
        let suite = Suite {
            kem,
            kdf: Kdf::HkdfSha256,
            aead,
        };
        assert_eq!(u16::from(them.suite().sym.aead_id), aead.id().to_repr());
        assert_eq!(u16::from(them.suite().kem), kem.id().to_repr());
        // They seal to our key; we open, in sequence.
        let ours = kem.generate_key_pair(&mut rng, &mut NoSink).unwrap();
        let (enc, mut sealer) = them
            .setup_sealer(b"info", &HpkePublicKey(ours.public_key().to_vec()))
            .unwrap();
        let mut rx = hpke::setup_base_r(suite, &enc.0, &ours, b"info", &mut NoSink).unwrap();
        for i in 0..3u8 {
            let ct = sealer.seal(&[i], b"to us").unwrap();
            assert_eq!(rx.open(&[i], &ct).unwrap(), b"to us", "{suite:?}");
        }
        // We seal to their key; they open.
        let (pk, sk) = them.generate_key_pair().unwrap();
        let (enc, mut tx) =
            hpke::setup_base_s(suite, &pk.0, b"ctx", &mut rng, &mut NoSink).unwrap();
        let mut opener = them
            .setup_opener(
                &EncapsulatedSecret(enc),
                b"ctx",
                &HpkePrivateKey::from(sk.secret_bytes().to_vec()),
            )
            .unwrap();
        for i in 0..3u8 {
            let ct = tx.seal(&[i], b"to them").unwrap();
            assert_eq!(opener.open(&[i], &ct).unwrap(), b"to them", "{suite:?}");
        }
    }
}

/// The draft-ietf-hpke-pq test vectors (tests/vectors/hpke-pq/test-vectors.json).
fn pq_vectors() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/hpke-pq/test-vectors.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// draft-ietf-hpke-pq's vectors (tests/vectors/hpke-pq/test-vectors.json, from the draft's
/// repository): every one whose KEM, KDF and AEAD we implement (ML-KEM-768 and X-Wing with
/// HKDF-SHA256) must pass: DeriveKeyPair, Encap with the vector's ikmE as the one random draw,
/// Decap, the key schedule, every encryption and export. The others must be refused as
/// unsupported, not mis-run: both ML-KEM-1024 vectors among them, whose KDFs (HKDF-SHA384,
/// SHAKE256) we lack; [`hpke_pq_draft_vectors_kem_steps`] checks their KEM.
#[test]
fn hpke_pq_draft_vectors() {
    let vectors = pq_vectors();
    let h = |v: &serde_json::Value, k: &str| hex::decode(v[k].as_str().unwrap()).unwrap();
    let mut passed = Vec::new();
    for v in &vectors {
        let id = |k: &str| u16::try_from(v[k].as_u64().unwrap()).unwrap();
        let (kem, kdf, aead) = (id("kem_id"), id("kdf_id"), id("aead_id"));
        let suite = match Suite::from_ids(kem.into(), kdf.into(), aead.into()) {
            Ok(s) => s,
            Err(hpke::HpkeError::Unsupported { .. }) => continue,
            Err(e) => panic!("{kem:#x}/{kdf}/{aead}: {e}"),
        };
        let who = format!("KEM {kem:#06x} KDF {kdf} AEAD {aead}");
        let mut derive_steps = Vec::new();
        let r = suite
            .kem
            .derive_key_pair(&h(v, "ikmR"), &mut derive_steps)
            .unwrap();
        assert_eq!(r.private_key(), &h(v, "skRm")[..], "{who} skRm");
        assert_eq!(r.public_key(), &h(v, "pkRm")[..], "{who} pkRm");
        assert_eq!(suite.kem.pk_len(), r.public_key().len(), "{who} Npk");
        assert_eq!(derive_steps.len(), 1, "{who}: one LabeledDerive");
        // Encap's randomness is the vector's ikmE, drawn once.
        let mut rng = ScriptedRandom::new([h(v, "ikmE")], 0);
        let mut s_steps = Vec::new();
        let (enc, mut tx) =
            hpke::setup_base_s(suite, r.public_key(), &h(v, "info"), &mut rng, &mut s_steps)
                .unwrap();
        assert!(rng.mismatches().is_empty() && rng.remaining() == 0 && rng.draws() == 1);
        assert_eq!(enc, h(v, "enc"), "{who} enc");
        assert_eq!(suite.kem.enc_len(), enc.len(), "{who} Nenc");
        let r = KeyPair::from_private(suite.kem, &h(v, "skRm")).unwrap();
        let mut r_steps = Vec::new();
        let mut rx = hpke::setup_base_r(suite, &enc, &r, &h(v, "info"), &mut r_steps).unwrap();
        for (steps, side) in [(&s_steps, "sender"), (&r_steps, "receiver")] {
            for (name, key) in [
                (HpkeValue::SharedSecret, "shared_secret"),
                (HpkeValue::Key, "key"),
                (HpkeValue::BaseNonce, "base_nonce"),
                (HpkeValue::ExporterSecret, "exporter_secret"),
            ] {
                assert_eq!(step(steps, name), h(v, key), "{who} {side} {key}");
            }
        }
        let base_nonce = h(v, "base_nonce");
        for (i, e) in v["encryptions"].as_array().unwrap().iter().enumerate() {
            // The listed nonces are base_nonce XOR seq for seq = 0, 1, 2...
            let seq: u128 = h(e, "nonce")
                .iter()
                .zip(&base_nonce)
                .fold(0, |acc, (a, b)| (acc << 8) | u128::from(a ^ b));
            assert_eq!(seq, i as u128, "{who}: consecutive encryptions");
            let ct = tx.seal(&h(e, "aad"), &h(e, "pt")).unwrap();
            assert_eq!(ct, h(e, "ct"), "{who} encryption {i}");
            assert_eq!(rx.open(&h(e, "aad"), &ct).unwrap(), h(e, "pt"));
        }
        for e in v["exports"].as_array().unwrap() {
            let l = usize::try_from(e["L"].as_u64().unwrap()).unwrap();
            let ctx = h(e, "exporter_context");
            let want = h(e, "exported_value");
            assert_eq!(
                tx.export(&ctx, l, &mut NoSink).unwrap(),
                want,
                "{who} export"
            );
            assert_eq!(
                rx.export(&ctx, l, &mut NoSink).unwrap(),
                want,
                "{who} export"
            );
        }
        // A flipped ciphertext byte opens to a different secret: the AEAD refuses the record.
        let mut bad = enc.clone();
        bad[0] ^= 1;
        let mut rx_bad = hpke::setup_base_r(suite, &bad, &r, &h(v, "info"), &mut NoSink).unwrap();
        let ct = tx.seal(b"", b"x").unwrap();
        assert_eq!(rx_bad.open(b"", &ct), Err(hpke::HpkeError::Open), "{who}");
        passed.push((kem, kdf, aead));
    }
    passed.sort();
    assert_eq!(passed, vec![(0x0041, 1, 1), (0x647a, 1, 3)]);
}

/// The KEM half of every draft-ietf-hpke-pq vector whose KEM we implement, whatever its KDF and
/// AEAD: DeriveKeyPair (skRm, pkRm), Encap with ikmE as the one draw (enc, shared_secret) and
/// Decap (shared_secret). A KEM's steps depend on the KEM alone (suite_id "KEM" || kem_id; the
/// DHKEMs' own HKDF-SHA256), so a suite with our KDF and AEAD carries them. This is what checks
/// ML-KEM-1024 against the draft (its two vectors use HKDF-SHA384 and SHAKE256), and the
/// DHKEM(P-256) and DHKEM(X25519) vectors the draft pairs with the SHAKE KDFs.
#[test]
fn hpke_pq_draft_vectors_kem_steps() {
    let vectors = pq_vectors();
    let h = |v: &serde_json::Value, k: &str| hex::decode(v[k].as_str().unwrap()).unwrap();
    let mut checked = Vec::new();
    for v in &vectors {
        let id = |k: &str| u16::try_from(v[k].as_u64().unwrap()).unwrap();
        let (kem_id, kdf, aead) = (id("kem_id"), id("kdf_id"), id("aead_id"));
        let Some(kem) = Kem::from_id(kem_id.into()) else {
            continue;
        };
        let who = format!("KEM {kem_id:#06x} KDF {kdf:#x} AEAD {aead}");
        let carrier = Suite {
            kem,
            kdf: Kdf::HkdfSha256,
            aead: Aead::Aes128Gcm,
        };
        let r = kem.derive_key_pair(&h(v, "ikmR"), &mut NoSink).unwrap();
        assert_eq!(r.private_key(), &h(v, "skRm")[..], "{who} skRm");
        assert_eq!(r.public_key(), &h(v, "pkRm")[..], "{who} pkRm");
        assert_eq!(
            (kem.sk_len(), kem.pk_len()),
            (r.private_key().len(), r.public_key().len()),
            "{who} Nsk, Npk"
        );
        let mut rng = ScriptedRandom::new([h(v, "ikmE")], 0);
        let mut s_steps = Vec::new();
        let (enc, _) =
            hpke::setup_base_s(carrier, r.public_key(), b"", &mut rng, &mut s_steps).unwrap();
        assert!(rng.mismatches().is_empty() && rng.remaining() == 0 && rng.draws() == 1);
        assert_eq!(enc, h(v, "enc"), "{who} enc");
        assert_eq!(kem.enc_len(), enc.len(), "{who} Nenc");
        let mut r_steps = Vec::new();
        hpke::setup_base_r(carrier, &enc, &r, b"", &mut r_steps).unwrap();
        for (steps, side) in [(&s_steps, "Encap"), (&r_steps, "Decap")] {
            assert_eq!(
                step(steps, HpkeValue::SharedSecret),
                h(v, "shared_secret"),
                "{who} {side} shared_secret"
            );
        }
        checked.push((kem_id, kdf, aead));
    }
    checked.sort();
    assert_eq!(
        checked,
        vec![
            (0x0010, 0x10, 1),
            (0x0020, 0x12, 3),
            (0x0041, 1, 1),
            (0x0042, 2, 2),
            (0x0042, 0x13, 1),
            (0x647a, 1, 3),
            (0x647a, 0x11, 3),
        ]
    );
}
