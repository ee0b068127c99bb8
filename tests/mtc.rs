//! Merkle Tree Certificates (draft-ietf-plants-merkle-tree-certs): the draft's subtree test
//! vectors and examples against the core's Merkle tree (`crypto::cert::mtc`); certificates
//! issued by the lab's log (`lab::mtc`) verified by the core; each adversarial change refused
//! with its own error and alert; the proof sizes.

use sha2::{Digest, Sha256};

use lab::mtc::{certificate, CosignerAlg, IssuanceLog, LogConfig, MtcRequest};
use tls13lab::crypto::cert::mtc::{
    check_server_usage, consistency_proof, covering_subtrees, evaluate_inclusion_proof,
    inclusion_proof, inclusion_proof_len, is_valid_subtree, leaf_hash, mth, parse_mtc,
    subtree_hash, tbs_log_entry, verify_consistency_proof, verify_inclusion_proof, verify_mtc,
    Hash, MtcError, MtcProof, MtcTrust, RelyingParty, Subtree, TrustAnchorId, HASH_SIZE,
};
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::{MlDsaLevel, SigningKey};
use tls13lab::messages::enums::AlertDescription;

const VECTORS: &str = include_str!("vectors/mtc/subtree-vectors.txt");

fn vector(name: &str) -> String {
    VECTORS
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(" = "))
        .unwrap_or_else(|| panic!("no vector {name}"))
        .to_string()
}

/// `D_130` of the appendix: d[i] is the byte i.
fn leaves(n: usize) -> Vec<Hash> {
    (0..n).map(|i| leaf_hash(&[i as u8])).collect()
}

fn hexs(proof: &[Hash]) -> String {
    proof
        .iter()
        .map(|p| format!(" {}", hex::encode(p)))
        .collect()
}

#[test]
fn subtree_hash_vector() {
    let d = leaves(130);
    let mut h = Sha256::new();
    for end in 0..=130u64 {
        for start in 0..=end {
            if is_valid_subtree(start, end) {
                let s = subtree_hash(&d, start, end).unwrap();
                h.update(format!("[{start}, {end}) {}\n", hex::encode(s)));
            }
        }
    }
    assert_eq!(hex::encode(h.finalize()), vector("subtree_hashes"));
}

#[test]
fn inclusion_proof_vector() {
    let d = leaves(130);
    let mut h = Sha256::new();
    for end in 0..=130u64 {
        for start in 0..=end {
            if !is_valid_subtree(start, end) {
                continue;
            }
            let root = subtree_hash(&d, start, end).unwrap();
            for index in start..end {
                let p = inclusion_proof(&d, start, end, index).unwrap();
                h.update(format!("{index} [{start}, {end}){}\n", hexs(&p)));
                // Every proof evaluates back to its subtree, and its length is the formula's.
                let entry = &d[index as usize];
                assert!(verify_inclusion_proof(&p, index, start, end, entry, &root));
                assert_eq!(inclusion_proof_len(start, end, index), Some(p.len()));
                // One hash more or fewer fails evaluation.
                let mut longer = p.clone();
                longer.push(root);
                assert_eq!(
                    evaluate_inclusion_proof(&longer, index, start, end, entry),
                    None
                );
                if !p.is_empty() {
                    let shorter = &p[..p.len() - 1];
                    assert_eq!(
                        evaluate_inclusion_proof(shorter, index, start, end, entry),
                        None
                    );
                }
            }
        }
    }
    assert_eq!(hex::encode(h.finalize()), vector("inclusion_proofs"));
}

#[test]
fn consistency_proof_vector() {
    let d = leaves(130);
    let mut h = Sha256::new();
    for n in 0..=130u64 {
        let tree = &d[..n as usize];
        let root = mth(tree);
        for end in 0..=n {
            for start in 0..=end {
                if !is_valid_subtree(start, end) {
                    continue;
                }
                let p = consistency_proof(tree, start, end).unwrap();
                h.update(format!("[{start}, {end}) {n}{}\n", hexs(&p)));
                let node = subtree_hash(tree, start, end).unwrap();
                assert!(
                    verify_consistency_proof(n, start, end, &p, &node, &root),
                    "[{start}, {end}) in {n}"
                );
                // A wrong subtree hash, a wrong root or a changed proof hash fails.
                let mut other = node;
                other[0] ^= 1;
                assert!(!verify_consistency_proof(n, start, end, &p, &other, &root));
                // (The empty subtree's proof is empty and involves no root.)
                if start < end {
                    assert!(!verify_consistency_proof(n, start, end, &p, &node, &other));
                }
                for i in 0..p.len() {
                    let mut q = p.clone();
                    q[i][31] ^= 0x80;
                    assert!(!verify_consistency_proof(n, start, end, &q, &node, &root));
                }
            }
        }
    }
    assert_eq!(hex::encode(h.finalize()), vector("consistency_proofs"));
}

#[test]
fn covering_subtrees_vector() {
    let mut h = Sha256::new();
    for end in 0..=130u64 {
        for start in 0..=end {
            let (l, r) = covering_subtrees(start, end);
            h.update(format!(
                "[{}, {}) [{}, {})\n",
                l.start, l.end, r.start, r.end
            ));
            // §"Selecting Two Subtrees": adjacent, valid, covering, bounded excess.
            assert!(l.is_valid() && r.is_valid());
            assert_eq!(l.end, r.start);
            assert!(l.start <= start && r.end == end);
            if start < end {
                assert!(start - l.start < l.end - start);
            }
        }
    }
    assert_eq!(hex::encode(h.finalize()), vector("covering_subtrees"));
}

/// The draft's worked examples (§"Example Subtrees" … §"Selecting Two Subtrees").
#[test]
fn draft_examples() {
    let d = leaves(14);
    let m = |a: usize, b: usize| mth(&d[a..b]);
    assert!(is_valid_subtree(4, 8) && is_valid_subtree(8, 13));
    assert!(!is_valid_subtree(7, 9) && is_valid_subtree(0, 9));
    // Entry 10 of [8, 13): MTH({d[11]}), MTH(D[8:10]), MTH({d[12]}).
    assert_eq!(
        inclusion_proof(&d[..13], 8, 13, 10).unwrap(),
        vec![m(11, 12), m(8, 10), m(12, 13)]
    );
    // [4, 8) in a tree of 14: MTH(D[0:4]), MTH(D[8:14]).
    assert_eq!(
        consistency_proof(&d, 4, 8).unwrap(),
        vec![m(0, 4), m(8, 14)]
    );
    // [8, 13) in a tree of 14: MTH({d[12]}), MTH({d[13]}), MTH(D[8:12]), MTH(D[0:8]).
    assert_eq!(
        consistency_proof(&d, 8, 13).unwrap(),
        vec![m(12, 13), m(13, 14), m(8, 12), m(0, 8)]
    );
    // [5, 13) is covered by [4, 8) and [8, 13).
    let s = |start, end| Subtree { start, end };
    assert_eq!(covering_subtrees(5, 13), (s(4, 8), s(8, 13)));
    assert_eq!(covering_subtrees(7, 9), (s(7, 8), s(8, 9)));
    // Subtrees do not change as the tree grows.
    assert_eq!(subtree_hash(&d[..13], 8, 13), Some(m(8, 13)));
}

// ---------------------------------------------------------------------------------------------
// Issuance and verification

const NOW: u64 = 1_796_256_000; // 2026-12-03
const DAY: u64 = 86_400;

fn subject_key(seed: u64) -> SigningKey {
    SigningKey::generate_mldsa(MlDsaLevel::L44, &mut SeededRandom::from_seed(seed))
}

fn request(i: u64) -> MtcRequest {
    MtcRequest {
        spki_der: subject_key(1000 + i).public_key_spki_der().unwrap(),
        names: vec![format!("host{i}.example"), "192.0.2.1".into()],
        not_before: NOW - DAY,
        not_after: NOW + 7 * DAY,
        server_auth: true,
    }
}

/// A log of 40 certificates in batches of 5 with a checkpoint after each, a landmark every 16
/// entries: landmarks at 0, 20, 40.
fn issued_log(seed: u64) -> IssuanceLog {
    let mut log = IssuanceLog::new(LogConfig::example(16), seed).unwrap();
    for batch in 0..8u64 {
        for i in 0..5 {
            log.append(&request(batch * 5 + i)).unwrap();
        }
        log.checkpoint(NOW - DAY + batch * 60).unwrap();
    }
    log
}

fn id(s: &str) -> TrustAnchorId {
    TrustAnchorId::from_ascii(s).unwrap()
}

fn fails(cert: &[u8], rp: &RelyingParty, now: u64) -> MtcError {
    match verify_mtc(cert, rp, now) {
        Ok(v) => panic!("verified: {v:?}"),
        Err(e) => e,
    }
}

/// The certificate with its MTCProof replaced.
fn with_proof(cert: &[u8], proof: &[u8]) -> Vec<u8> {
    certificate(parse_mtc(cert).unwrap().tbs, proof)
}

#[test]
fn standalone_and_landmark_round_trip() {
    let log = issued_log(7);
    assert_eq!(log.landmarks(), &[0, 20, 40]);
    let rp = log.relying_party(1).unwrap();
    assert_eq!(rp.cas[0].trusted_subtrees.len(), 4);
    for index in [0u64, 3, 17, 19, 20, 33, 39] {
        let req = request(index);
        let cert = log.standalone(index).unwrap();
        let v = verify_mtc(&cert, &rp, NOW).unwrap();
        assert_eq!(v.serial, (1 << 48) | index);
        assert_eq!((v.log_number, v.index), (1, index));
        assert_eq!(v.spki_der, req.spki_der);
        assert_eq!((v.not_before, v.not_after), (req.not_before, req.not_after));
        // §"Verifying Certificate Signatures" step 11: a standalone certificate whose signed
        // subtree is also a landmark subtree ([16, 20) here) is accepted as the trusted subtree.
        let landmark_subtree = rp.cas[0]
            .trusted_subtrees
            .iter()
            .find(|t| t.subtree == v.subtree);
        assert_eq!(landmark_subtree.is_some(), (16..20).contains(&index));
        match landmark_subtree {
            Some(t) => assert_eq!(
                v.trust,
                MtcTrust::TrustedSubtree {
                    landmark: t.landmark
                }
            ),
            None => assert_eq!(
                v.trust,
                MtcTrust::Cosigned {
                    cosigners: vec![id("32473.1"), id("32473.2"), id("32473.3")]
                }
            ),
        }
        // The core derives from the TBSCertificate the entry the lab logged from its fields.
        let tbs = parse_mtc(&cert).unwrap().tbs;
        assert_eq!(
            tbs_log_entry(tbs, &[]).unwrap(),
            log.log_entry(index).unwrap()
        );

        let (lm, landmark) = log.landmark_relative(index).unwrap();
        assert_eq!(landmark, if index < 20 { 1 } else { 2 });
        let v = verify_mtc(&lm, &rp, NOW).unwrap();
        assert_eq!(v.index, index);
        assert_eq!(
            v.trust,
            MtcTrust::TrustedSubtree {
                landmark: Some(landmark)
            }
        );
        assert!(lm.len() < cert.len());
    }
    // The same seed issues the same bytes; another seed other keys.
    let again = issued_log(7);
    assert_eq!(again.standalone(5).unwrap(), log.standalone(5).unwrap());
    assert_ne!(
        issued_log(8).standalone(5).unwrap(),
        log.standalone(5).unwrap()
    );
}

#[test]
fn tampered_inclusion_proof() {
    let log = issued_log(7);
    let rp = log.relying_party(1).unwrap();
    for (cert, want) in [
        (
            log.landmark_relative(21).unwrap().0,
            MtcError::SubtreeHashMismatch,
        ),
        (
            log.standalone(21).unwrap(),
            MtcError::BadCosignature(id("32473.1")),
        ),
    ] {
        let proof = parse_mtc(&cert).unwrap().proof.to_vec();
        let decoded = MtcProof::decode(&proof).unwrap();
        assert!(!decoded.inclusion_proof.is_empty());
        // The inclusion proof's hashes start after extensions (2), start, end (12) and its
        // length (2).
        let at = 2 + decoded.extensions.len() + 12 + 2;
        for i in at..at + decoded.inclusion_proof.len() * HASH_SIZE {
            let mut p = proof.clone();
            p[i] ^= 0x01;
            let e = fails(&with_proof(&cert, &p), &rp, NOW);
            assert_eq!(e, want, "byte {i}");
            assert_eq!(e.alert(), AlertDescription::BadCertificate);
        }
    }
}

#[test]
fn unknown_landmark() {
    let mut log = issued_log(7);
    let old = log.relying_party(1).unwrap();
    for i in 0..20 {
        log.append(&request(100 + i)).unwrap();
    }
    log.checkpoint(NOW).unwrap();
    assert_eq!(log.landmarks(), &[0, 20, 40, 60]);
    // Landmark 3 is new: a relying party configured before it does not know its subtrees.
    let (cert, l) = log.landmark_relative(45).unwrap();
    assert_eq!(l, 3);
    let e = fails(&cert, &old, NOW);
    assert!(
        matches!(e, MtcError::UntrustedSubtree { log_number: 1, .. }),
        "{e:?}"
    );
    assert_eq!(e.alert(), AlertDescription::UnknownCa);
    // An updated one does; and the standalone certificate works for both.
    let new = log.relying_party(1).unwrap();
    verify_mtc(&cert, &new, NOW).unwrap();
    verify_mtc(&log.standalone(45).unwrap(), &old, NOW).unwrap();
}

#[test]
fn missing_and_untrusted_cosignatures() {
    let log = issued_log(7);
    let rp = log.relying_party(1).unwrap();
    // Only the CA's signature: the "one other cosigner" clause fails.
    let ca_only = log.standalone_with(12, &[id("32473.1")]).unwrap();
    let e = fails(&ca_only, &rp, NOW);
    assert_eq!(e, MtcError::MissingCosignature { requirement: 1 });
    assert_eq!(e.alert(), AlertDescription::BadCertificate);
    // A relying party that asks only for the CA accepts it.
    verify_mtc(&ca_only, &log.relying_party(0).unwrap(), NOW).unwrap();
    // No CA signature: the CA clause fails.
    let witnesses = log
        .standalone_with(12, &[id("32473.2"), id("32473.3")])
        .unwrap();
    assert_eq!(
        fails(&witnesses, &rp, NOW),
        MtcError::MissingCosignature { requirement: 0 }
    );
    // Requiring both witnesses: the CA and one witness are not enough.
    let two = log
        .standalone_with(12, &[id("32473.1"), id("32473.3")])
        .unwrap();
    verify_mtc(&two, &rp, NOW).unwrap();
    assert_eq!(
        fails(&two, &log.relying_party(2).unwrap(), NOW),
        MtcError::MissingCosignature { requirement: 1 }
    );
    // An impostor CA with the same IDs and other keys: the CA's signature does not verify.
    let impostor = issued_log(99);
    let e = fails(&impostor.standalone(12).unwrap(), &rp, NOW);
    assert_eq!(e, MtcError::BadCosignature(id("32473.1")));
    assert_eq!(e.alert(), AlertDescription::BadCertificate);
    // A damaged witness signature: outvoted where one witness suffices, fatal where both are
    // required.
    let cert = log.standalone(12).unwrap();
    let proof = parse_mtc(&cert).unwrap().proof.to_vec();
    let mut decoded = MtcProof::decode(&proof).unwrap();
    let i = decoded
        .signatures
        .iter()
        .position(|s| s.cosigner_id == id("32473.2").as_bytes())
        .unwrap();
    let mut sig = decoded.signatures[i].signature.to_vec();
    sig[10] ^= 0x40;
    decoded.signatures[i].signature = &sig;
    let damaged = with_proof(&cert, &decoded.encode().unwrap());
    assert_eq!(
        verify_mtc(&damaged, &rp, NOW).unwrap().trust,
        MtcTrust::Cosigned {
            cosigners: vec![id("32473.1"), id("32473.3")]
        }
    );
    let e = fails(&damaged, &log.relying_party(2).unwrap(), NOW);
    assert_eq!(e, MtcError::BadCosignature(id("32473.2")));
    assert_eq!(e.alert(), AlertDescription::BadCertificate);
    // A cosigner the relying party does not know is ignored, not an error.
    let mut config = LogConfig::example(16);
    config
        .cosigners
        .push((id("32473.99"), CosignerAlg::Ed25519));
    let mut extra = IssuanceLog::new(config, 7).unwrap();
    for i in 0..5 {
        extra.append(&request(i)).unwrap();
    }
    extra.checkpoint(NOW).unwrap();
    let cert = extra.standalone(2).unwrap();
    let v = verify_mtc(&cert, &log.relying_party(1).unwrap(), NOW).unwrap();
    assert_eq!(
        v.trust,
        MtcTrust::Cosigned {
            cosigners: vec![id("32473.1"), id("32473.2"), id("32473.3")]
        }
    );
}

#[test]
fn unknown_ca_revoked_and_not_mtc() {
    let log = issued_log(7);
    let cert = log.standalone(3).unwrap();
    let mut rp = log.relying_party(1).unwrap();
    rp.cas[0].ca_id = id("32473.7");
    let e = fails(&cert, &rp, NOW);
    assert_eq!(e, MtcError::UnknownCa(id("32473.1")));
    assert_eq!(e.alert(), AlertDescription::UnknownCa);

    let mut rp = log.relying_party(1).unwrap();
    rp.cas[0].revoked.push(((1 << 48) + 2, (1 << 48) + 4));
    let e = fails(&cert, &rp, NOW);
    assert_eq!(
        e,
        MtcError::Revoked {
            serial: (1 << 48) | 3
        }
    );
    assert_eq!(e.alert(), AlertDescription::CertificateRevoked);
    verify_mtc(&log.standalone(4).unwrap(), &rp, NOW).unwrap();

    let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(1));
    let x509 = lab::certgen::self_signed_p256(&["a.example"], &key, NOW - DAY, NOW + DAY).unwrap();
    let e = fails(&x509, &rp, NOW);
    assert_eq!(e, MtcError::NotMtc);
    assert_eq!(e.alert(), AlertDescription::UnsupportedCertificate);
}

#[test]
fn truncated_and_extended_proofs() {
    let log = issued_log(7);
    let rp = log.relying_party(1).unwrap();
    for cert in [
        log.standalone(30).unwrap(),
        log.landmark_relative(30).unwrap().0,
    ] {
        let proof = parse_mtc(&cert).unwrap().proof.to_vec();
        for cut in 0..proof.len() {
            assert!(MtcProof::decode(&proof[..cut]).is_err(), "cut {cut}");
            let e = fails(&with_proof(&cert, &proof[..cut]), &rp, NOW);
            assert!(matches!(e, MtcError::MalformedProof(_)), "cut {cut}: {e:?}");
            assert_eq!(e.alert(), AlertDescription::BadCertificate);
        }
        let longer = [&proof[..], &[0]].concat();
        let e = fails(&with_proof(&cert, &longer), &rp, NOW);
        assert_eq!(e, MtcError::MalformedProof("bytes after MTCProof"));
        // The proof re-encodes to the same bytes.
        assert_eq!(MtcProof::decode(&proof).unwrap().encode().unwrap(), proof);
    }
}

#[test]
fn malformed_certificates_negative_serials_and_short_proofs() {
    let log = issued_log(7);
    let rp = log.relying_party(1).unwrap();
    let cert = log.landmark_relative(8).unwrap().0;
    // A certificate that is not DER X.509.
    let e = fails(&cert[..cert.len() / 2], &rp, NOW);
    assert!(matches!(e, MtcError::MalformedCertificate(_)), "{e:?}");
    assert_eq!(e.alert(), AlertDescription::BadCertificate);
    // Serial (1 << 48) | 8 is INTEGER 01 00 00 00 00 00 08; with its top bit set it is negative.
    let serial = [0x02, 0x07, 0x01, 0, 0, 0, 0, 0, 0x08];
    let at = cert
        .windows(9)
        .position(|w| w == serial)
        .expect("the serial");
    let mut negative = cert.clone();
    negative[at + 2] = 0x81;
    let e = fails(&negative, &rp, NOW);
    assert_eq!(e, MtcError::BadSerial("negative"));
    assert_eq!(e.alert(), AlertDescription::BadCertificate);
    // An inclusion proof one hash short does not evaluate to any subtree hash.
    let proof = parse_mtc(&cert).unwrap().proof.to_vec();
    let mut short = MtcProof::decode(&proof).unwrap();
    short.inclusion_proof.pop();
    let e = fails(&with_proof(&cert, &short.encode().unwrap()), &rp, NOW);
    assert_eq!(e, MtcError::BadInclusionProof);
    assert_eq!(e.alert(), AlertDescription::BadCertificate);
}

/// A DER element: tag, definite length, contents.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let n = content.len();
    let mut out = vec![tag];
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// `cert` with its extensions replaced by `exts` (Extension elements). Its proof no longer
/// matches, which `check_server_usage` does not look at.
fn with_extensions(cert: &[u8], exts: &[Vec<u8>]) -> Vec<u8> {
    let m = parse_mtc(cert).unwrap();
    // The lab writes [3] extensions last in the TBSCertificate: find it from the SPKI on.
    let spki_end = m
        .tbs
        .windows(m.spki.len())
        .position(|w| w == m.spki)
        .unwrap()
        + m.spki.len();
    let (_, rest) = m.tbs.split_at(spki_end);
    assert_eq!(rest[0], 0xa3);
    let header = if m.tbs[1] & 0x80 != 0 {
        2 + usize::from(m.tbs[1] & 0x7f)
    } else {
        2
    };
    let body = [
        &m.tbs[header..spki_end],
        &tlv(0xa3, &tlv(0x30, &exts.concat()))[..],
    ]
    .concat();
    certificate(&tlv(0x30, &body), m.proof)
}

#[test]
fn landmark_groups_cover_the_ca_and_earlier_landmarks() {
    // §"Single-Log Landmark Groups": CA.2.N.L contains the CA ID and landmarks of log N up
    // to L.
    let g = id("32473.1.2.8.42");
    for (other, covered) in [
        ("32473.1", true),
        ("32473.1.1.8.42", true),
        ("32473.1.1.8.41", true),
        ("32473.1.1.8.43", false),
        ("32473.1.1.7.42", false),
        ("32473.2", false),
        ("32473.1.2.8.42", false),
        ("32473.1.1.8", false),
    ] {
        assert_eq!(g.landmark_group_covers(&id(other)), covered, "{other}");
    }
    assert!(!id("32473.1").landmark_group_covers(&id("32473.1")));
    assert!(!id("32473.1.1.8.42").landmark_group_covers(&id("32473.1")));
}

#[test]
fn key_usage_is_read_strictly() {
    // RFC 5280 §4.2, §4.2.1.3, §4.2.1.12 on an MTC leaf (the checks `verify_mtc` leaves to
    // the caller and the TLS client makes).
    let log = issued_log(7);
    let cert = log.landmark_relative(8).unwrap().0;
    let ext = |oid: &[u8], critical: Option<&[u8]>, value: &[u8]| {
        let c = critical.map(|c| tlv(0x01, c)).unwrap_or_default();
        tlv(0x30, &[tlv(0x06, oid), c, tlv(0x04, value)].concat())
    };
    let (eku, ku, san) = (
        &[0x55, 0x1d, 0x25][..],
        &[0x55, 0x1d, 0x0f][..],
        &[0x55, 0x1d, 0x11][..],
    );
    let server_auth = tlv(0x06, &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01]);
    let client_auth = tlv(0x06, &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02]);
    let names = tlv(0x30, &tlv(0x82, b"a.example"));
    let check = |exts: &[Vec<u8>]| check_server_usage(&with_extensions(&cert, exts));
    let malformed = |r: Result<(), MtcError>| matches!(r, Err(MtcError::MalformedCertificate(_)));
    // Accepted: serverAuth; digitalSignature (bit 0); a critical subjectAltName; no EKU at all.
    assert_eq!(check(&[ext(eku, None, &tlv(0x30, &server_auth))]), Ok(()));
    assert_eq!(
        check(&[ext(ku, Some(&[0xff]), &tlv(0x03, &[7, 0x80]))]),
        Ok(())
    );
    assert_eq!(check(&[ext(san, Some(&[0xff]), &names)]), Ok(()));
    assert_eq!(check(&[]), Ok(()));
    // Refused for the key's use: unsupported_certificate.
    let e = check(&[ext(eku, None, &tlv(0x30, &client_auth))]).unwrap_err();
    assert_eq!(
        e,
        MtcError::WrongUsage("extKeyUsage lacks id-kp-serverAuth")
    );
    assert_eq!(e.alert(), AlertDescription::UnsupportedCertificate);
    let e = check(&[ext(ku, None, &tlv(0x03, &[5, 0x20]))]).unwrap_err();
    assert_eq!(e, MtcError::WrongUsage("keyUsage lacks digitalSignature"));
    // Malformed: bad_certificate.
    for exts in [
        vec![ext(ku, None, &tlv(0x03, &[]))], // no unused-bits byte
        vec![ext(ku, None, &tlv(0x03, &[8, 0x80]))], // 8 unused bits
        vec![ext(ku, None, &tlv(0x03, &[0, 0]))], // no bit set
        vec![ext(eku, Some(&[0x01]), &tlv(0x30, &server_auth))], // TRUE is ff in DER
        vec![ext(eku, Some(&[0x00]), &tlv(0x30, &server_auth))], // FALSE is omitted
        vec![ext(eku, None, &[tlv(0x30, &server_auth), vec![0]].concat())], // trailing byte
        vec![ext(eku, None, &tlv(0x30, &[]))], // an empty KeyPurposeId list
        vec![ext(san, None, &names), ext(san, None, &names)], // twice
        vec![ext(&[0x55, 0x1d, 0x1e], Some(&[0xff]), &tlv(0x30, &[]))], // critical, unknown
    ] {
        let r = check(&exts);
        assert!(malformed(r.clone()), "{exts:02x?}: {r:?}");
        assert_eq!(r.unwrap_err().alert(), AlertDescription::BadCertificate);
    }
}

#[test]
fn every_byte_of_a_certificate_matters() {
    // No single flipped bit anywhere in a landmark-relative certificate verifies, and none
    // panics.
    let log = issued_log(7);
    let rp = log.relying_party(1).unwrap();
    let (cert, _) = log.landmark_relative(8).unwrap();
    for i in 0..cert.len() {
        let mut c = cert.clone();
        c[i] ^= 0x01;
        assert!(verify_mtc(&c, &rp, NOW).is_err(), "byte {i}");
    }
    // Nor does any truncation of the whole certificate.
    for cut in 0..cert.len() {
        assert!(verify_mtc(&cert[..cut], &rp, NOW).is_err());
    }
}

#[test]
fn expired_and_not_yet_valid() {
    let log = issued_log(7);
    let rp = log.relying_party(1).unwrap();
    let cert = log.landmark_relative(2).unwrap().0;
    let req = request(2);
    verify_mtc(&cert, &rp, req.not_after).unwrap();
    let e = fails(&cert, &rp, req.not_after + 1);
    assert_eq!(
        e,
        MtcError::Expired {
            not_after: req.not_after,
            now: req.not_after + 1
        }
    );
    assert_eq!(e.alert(), AlertDescription::CertificateExpired);
    let e = fails(&cert, &rp, req.not_before - 1);
    assert!(matches!(e, MtcError::NotYetValid { .. }));
    assert_eq!(e.alert(), AlertDescription::CertificateExpired);
}

// ---------------------------------------------------------------------------------------------
// Sizes (§"Size Estimates")

/// The largest inclusion proof in a subtree of `size` entries starting at 0, in hashes.
fn max_proof_hashes(size: u64) -> usize {
    // The deepest leaves are the first ones (PATH goes left while the index is below k).
    (0..size.min(4))
        .chain([size / 2, size - 1])
        .map(|i| inclusion_proof_len(0, size, i).unwrap())
        .max()
        .unwrap()
}

#[test]
fn proof_sizes() {
    // The formula against built trees: every index of every subtree of a 300-entry log.
    let d: Vec<Hash> = (0..300u32).map(|i| leaf_hash(&i.to_be_bytes())).collect();
    for end in [1u64, 2, 3, 7, 8, 9, 100, 255, 256, 257, 300] {
        for index in 0..end {
            assert_eq!(
                inclusion_proof_len(0, end, index),
                Some(inclusion_proof(&d, 0, end, index).unwrap().len())
            );
        }
    }
    // The draft's estimates: a 2,500-entry standalone subtree needs 12 hashes (384 B); a
    // 4,400,000-entry landmark subtree 23 (736 B).
    let standalone = max_proof_hashes(2_500) * HASH_SIZE;
    let landmark = max_proof_hashes(4_400_000) * HASH_SIZE;
    println!(
        "inclusion proof: 2,500-entry subtree {standalone} B, 4,400,000-entry subtree {landmark} B"
    );
    assert_eq!(standalone, 384);
    assert_eq!(landmark, 736);
    // An hour of landmarks at 4.4 M/hour, a hundred hours in: the interval's covering subtrees.
    let (l, r) = covering_subtrees(100 * 4_400_000, 101 * 4_400_000);
    let worst = [l, r]
        .iter()
        .map(|s| max_proof_hashes(s.end - s.start))
        .max()
        .unwrap();
    println!(
        "landmark interval [440,000,000, 444,400,000): subtrees {:?} {:?}, worst proof {} B",
        l,
        r,
        worst * HASH_SIZE
    );
    assert!(worst <= 24);

    // A built log, a landmark every 50,000 entries: 100,000 null entries (landmark 1), four
    // certificates in their own checkpoint, 50,000 more null entries (landmark 2).
    let mut log = IssuanceLog::new(LogConfig::example(50_000), 3).unwrap();
    log.append_null(100_000);
    log.checkpoint(NOW - 3).unwrap();
    for i in 0..4 {
        log.append(&request(i)).unwrap();
    }
    log.checkpoint(NOW - 2).unwrap();
    log.append_null(50_000);
    log.checkpoint(NOW - 1).unwrap();
    assert_eq!(log.landmarks(), &[0, 100_000, 150_004]);
    let rp = log.relying_party(1).unwrap();
    let index = 100_001;
    let standalone = log.standalone(index).unwrap();
    let (landmark, _) = log.landmark_relative(index).unwrap();
    let s = verify_mtc(&standalone, &rp, NOW).unwrap();
    let l = verify_mtc(&landmark, &rp, NOW).unwrap();
    // MTCProof = extensions(2) + start, end (12) + proof (2 + 32 k) + signatures (2 + each
    // 1 + |id| + 2 + |sig|): ML-DSA-44 CA (2,420), Ed25519 (64), ML-DSA-44 (2,420), IDs 4 B.
    let sigs = 3 * (1 + 4 + 2) + 2_420 + 64 + 2_420;
    assert_eq!(s.proof_len, 2 + 12 + 2 + s.inclusion_proof_len + 2 + sigs);
    assert_eq!(l.proof_len, 2 + 12 + 2 + l.inclusion_proof_len + 2);
    assert_eq!(
        l.inclusion_proof_len,
        inclusion_proof_len(l.subtree.start, l.subtree.end, index).unwrap() * HASH_SIZE
    );
    println!(
        "log of {} entries: standalone subtree {:?}: proof {} B (inclusion {} B), certificate {} B; \
         landmark subtree {:?}: proof {} B (inclusion {} B), certificate {} B",
        log.len(),
        s.subtree,
        s.proof_len,
        s.inclusion_proof_len,
        standalone.len(),
        l.subtree,
        l.proof_len,
        l.inclusion_proof_len,
        landmark.len()
    );
}

#[test]
fn trusted_subtrees_need_a_consistency_proof() {
    let log = issued_log(7);
    let cp = log.checkpoints().last().unwrap().clone();
    let leaves = log.leaves();
    let s = Subtree { start: 32, end: 40 };
    let hash = subtree_hash(leaves, 32, 40).unwrap();
    let proof = consistency_proof(leaves, 32, 40).unwrap();
    let mut ca = log.relying_party(1).unwrap().cas.remove(0);
    ca.trusted_subtrees.clear();
    let mut wrong = hash;
    wrong[5] ^= 4;
    assert!(!ca.trust_subtree(1, s, wrong, None, cp.tree_size, &cp.root, &proof));
    assert!(!ca.trust_subtree(1, s, hash, None, cp.tree_size, &cp.root, &proof[1..]));
    assert!(ca.trusted_subtrees.is_empty());
    assert!(ca.trust_subtree(1, s, hash, Some(2), cp.tree_size, &cp.root, &proof));
    assert_eq!(ca.trusted_subtrees.len(), 1);
}

mod no_panic {
    use super::*;
    use proptest::prelude::*;
    use std::sync::OnceLock;

    fn fixture() -> &'static (Vec<u8>, Vec<u8>, RelyingParty) {
        static F: OnceLock<(Vec<u8>, Vec<u8>, RelyingParty)> = OnceLock::new();
        F.get_or_init(|| {
            let log = issued_log(7);
            (
                log.standalone(11).unwrap(),
                log.landmark_relative(11).unwrap().0,
                // Every cosignature required: with "one of two witnesses" a damaged witness
                // signature is rightly outvoted by the other.
                log.relying_party(2).unwrap(),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Arbitrary bytes as an MTCProof or a certificate: an error, never a panic.
        #[test]
        fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let (_, _, rp) = fixture();
            let _ = MtcProof::decode(&bytes);
            prop_assert!(verify_mtc(&bytes, rp, NOW).is_err());
        }

        /// A valid certificate with up to four bytes overwritten never verifies, never panics.
        #[test]
        fn overwritten_bytes(
            which in any::<bool>(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        ) {
            let (standalone, landmark, rp) = fixture();
            let mut c = if which { standalone.clone() } else { landmark.clone() };
            for (at, x) in edits {
                let i = at.index(c.len());
                c[i] ^= x;
            }
            prop_assert!(verify_mtc(&c, rp, NOW).is_err());
        }
    }
}

#[test]
fn relying_party_text_round_trip() {
    let log = issued_log(7);
    let rp = log.relying_party(1).unwrap();
    let text = rp.to_text();
    assert_eq!(RelyingParty::from_text(&text).unwrap(), rp);
    let (cert, _) = log.landmark_relative(5).unwrap();
    verify_mtc(&cert, &RelyingParty::from_text(&text).unwrap(), NOW).unwrap();
    // Each malformed line is named.
    for (bad, line) in [
        ("require 1 32473.1\n", 1),
        ("ca 32473.1\nsubtree 1 6 10 00 -\n", 2),
        ("cosigner 32473.1 nosuch 00\n", 1),
        ("# x\nca 32473..1\n", 2),
        ("ca 1\nrevoked 1\n", 2),
    ] {
        assert_eq!(
            RelyingParty::from_text(bad).unwrap_err().line,
            line,
            "{bad}"
        );
    }
}

/// What the TLS client adds to verify_mtc: the name check. webpki reads an MTC like any
/// certificate (it checks no signature here), so its name matching applies unchanged.
#[test]
fn names_check_with_webpki() {
    use rustls_pki_types::{CertificateDer, ServerName};
    let log = issued_log(7);
    for cert in [
        log.standalone(5).unwrap(),
        log.landmark_relative(5).unwrap().0,
    ] {
        let der = CertificateDer::from(cert.as_slice());
        let ee = webpki::EndEntityCert::try_from(&der).unwrap();
        let name = |s: &'static str| ServerName::try_from(s).unwrap();
        assert!(ee
            .verify_is_valid_for_subject_name(&name("host5.example"))
            .is_ok());
        assert!(ee
            .verify_is_valid_for_subject_name(&name("192.0.2.1"))
            .is_ok());
        assert!(ee
            .verify_is_valid_for_subject_name(&name("host6.example"))
            .is_err());
    }
}

// ---------------------------------------------------------------------------------------------
// In TLS: our client and server, paths chosen by trust_anchors (draft-ietf-tls-trust-anchor-ids)

mod tls {
    use super::*;
    use std::sync::Arc;
    use tls13lab::config::{CertifiedKey, TrustAnchorOffer};
    use tls13lab::events::Event;
    use tls13lab::trust_anchors::CertificateProperties;
    use tls13lab::{ClientConfig, Error, ServerConfig};

    struct Setup {
        log: IssuanceLog,
        key: Arc<SigningKey>,
        index: u64,
        standalone: Vec<u8>,
        landmark: Vec<u8>,
        ca_id: Vec<u8>,
        landmark_id: Vec<u8>,
    }

    /// A log of 40 certificates (issued_log's shape) where entry 3 is ours: localhost, a P-256
    /// key; its standalone and landmark-relative certificates and their trust anchor IDs.
    fn setup() -> Setup {
        setup_with(true)
    }

    /// `setup`, with or without id-kp-serverAuth in our certificate's extKeyUsage.
    fn setup_with(server_auth: bool) -> Setup {
        let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(0x3c));
        let mut log = IssuanceLog::new(LogConfig::example(16), 11).unwrap();
        let ours = MtcRequest {
            spki_der: key.public_key_spki_der().unwrap(),
            names: vec!["localhost".into()],
            not_before: NOW - DAY,
            not_after: NOW + 7 * DAY,
            server_auth,
        };
        for batch in 0..8u64 {
            for i in 0..5 {
                let n = batch * 5 + i;
                log.append(&if n == 3 { ours.clone() } else { request(n) })
                    .unwrap();
            }
            log.checkpoint(NOW - DAY + batch * 60).unwrap();
        }
        let standalone = log.standalone(3).unwrap();
        let (landmark, l) = log.landmark_relative(3).unwrap();
        let ca = log.config().ca_id.clone();
        let landmark_id = ca
            .landmark_id(log.config().log_number, l)
            .unwrap()
            .as_bytes()
            .to_vec();
        Setup {
            ca_id: ca.as_bytes().to_vec(),
            log,
            key: Arc::new(key),
            index: 3,
            standalone,
            landmark,
            landmark_id,
        }
    }

    /// A server with the standalone certificate first, the landmark-relative one second.
    fn server(s: &Setup, standalone: Vec<u8>, landmark: Vec<u8>) -> ServerConfig {
        let ck = |cert: Vec<u8>| CertifiedKey {
            chain: vec![cert],
            key: s.key.clone(),
        };
        let mut c = ServerConfig::new(ck(standalone));
        c.more_certs = vec![ck(landmark)];
        c.certificate_properties = vec![
            Some(CertificateProperties::with_id(s.ca_id.clone())),
            Some(CertificateProperties::with_id(s.landmark_id.clone())),
        ];
        c.observe = tls13lab::Observe::PUBLIC;
        c
    }

    fn client(rp: RelyingParty, ids: Option<Vec<Vec<u8>>>) -> ClientConfig {
        let mut c = ClientConfig::new(Vec::new());
        c.server_name = Some("localhost".into());
        c.mtc = Some(Arc::new(rp));
        c.trust_anchors = ids.map(TrustAnchorOffer::new);
        c.observe = tls13lab::Observe::PUBLIC;
        c
    }

    /// The handshake, and the server certificate the client received.
    fn run(c: ClientConfig, s: ServerConfig, seed: u64) -> (lab::demo::Pair, Result<(), Error>) {
        let mut p = lab::demo::Pair::new(Arc::new(c), Arc::new(s), seed, NOW * 1000).expect("pair");
        let r = p.handshake().and_then(|_| p.settle());
        (p, r)
    }

    fn received_certificate(p: &lab::demo::Pair) -> Vec<u8> {
        use tls13lab::messages::handshake::{DecodeContext, HandshakeMessage, HandshakePayload};
        use tls13lab::messages::HandshakeType;
        let bytes = p
            .client_events
            .iter()
            .find_map(|e| match e {
                Event::Handshake(h) if h.typ == HandshakeType::Certificate => Some(h.bytes.clone()),
                _ => None,
            })
            .expect("a Certificate");
        let m = HandshakeMessage::decode(&bytes, DecodeContext::default()).unwrap();
        match m.payload {
            HandshakePayload::Certificate(c) => c.entries[0].cert_data.clone(),
            _ => panic!("not a Certificate"),
        }
    }

    fn matched(events: &[Event]) -> bool {
        events
            .iter()
            .any(|e| matches!(e, Event::TrustAnchorMatched))
    }

    #[test]
    fn each_path_is_picked_by_its_trust_anchor_id() {
        let s = setup();
        let rp = s.log.relying_party(1).unwrap();
        for (want, id) in [(&s.landmark, &s.landmark_id), (&s.standalone, &s.ca_id)] {
            let c = client(rp.clone(), Some(vec![id.clone()]));
            let (p, r) = run(c, server(&s, s.standalone.clone(), s.landmark.clone()), 1);
            r.expect("handshake");
            assert!(p.client.is_connected());
            assert_eq!(&received_certificate(&p), want);
            assert!(matched(&p.client_events) && matched(&p.server_events));
        }
        // The landmark-relative certificate is the small one: no signatures in its proof.
        assert!(s.landmark.len() + 2000 < s.standalone.len());
    }

    #[test]
    fn the_retry_path_after_an_untrusted_fallback() {
        // The client trusts the landmarks but demands more cosigners than the log has: the
        // standalone certificate (the server's fallback for an empty list) fails, and the
        // server's EncryptedExtensions named both paths' anchors; asking again for the
        // landmark's, the connection succeeds (§4.3 of trust-anchor-ids).
        let s = setup();
        let rp = s.log.relying_party(3).unwrap();
        let (p, r) = run(
            client(rp.clone(), Some(Vec::new())),
            server(&s, s.standalone.clone(), s.landmark.clone()),
            2,
        );
        let err = r.expect_err("the standalone certificate lacks cosignatures");
        assert!(
            matches!(err, Error::Mtc(MtcError::MissingCosignature { .. })),
            "{err}"
        );
        assert_eq!(err.alert(), Some(AlertDescription::BadCertificate));
        let ids = p
            .client_events
            .iter()
            .find_map(|e| match e {
                Event::TrustAnchorsAvailable { ids } => Some(ids.clone()),
                _ => None,
            })
            .expect("the server's trust anchors");
        assert_eq!(ids, vec![s.ca_id.clone(), s.landmark_id.clone()]);
        let (p, r) = run(
            client(rp, Some(vec![s.landmark_id.clone()])),
            server(&s, s.standalone.clone(), s.landmark.clone()),
            3,
        );
        r.expect("the retry");
        assert!(p.client.is_connected() && matched(&p.client_events));
    }

    #[test]
    fn a_certificate_for_clients_only_is_unsupported_certificate() {
        // RFC 5280 §4.2.1.12: its extKeyUsage has id-kp-clientAuth alone. The proof and the
        // cosignatures verify; the key's use does not.
        let s = setup_with(false);
        let rp = s.log.relying_party(1).unwrap();
        assert!(verify_mtc(&s.landmark, &rp, NOW).is_ok());
        assert_eq!(
            check_server_usage(&s.landmark),
            Err(MtcError::WrongUsage("extKeyUsage lacks id-kp-serverAuth"))
        );
        for id in [&s.landmark_id, &s.ca_id] {
            let (_, r) = run(
                client(rp.clone(), Some(vec![id.clone()])),
                server(&s, s.standalone.clone(), s.landmark.clone()),
                6,
            );
            let err = r.expect_err("not for a server");
            assert!(matches!(err, Error::Mtc(MtcError::WrongUsage(_))), "{err}");
            assert_eq!(err.alert(), Some(AlertDescription::UnsupportedCertificate));
        }
        assert!(check_server_usage(&setup().landmark).is_ok());
    }

    #[test]
    fn a_tampered_proof_an_unknown_landmark_and_a_missing_cosignature_fail() {
        let s = setup();
        let rp = s.log.relying_party(1).unwrap();
        let ask_landmark = || Some(vec![s.landmark_id.clone()]);
        // A flipped byte in the inclusion proof (the last hash before the empty signatures).
        let mut tampered = s.landmark.clone();
        let at = tampered.len() - 10;
        tampered[at] ^= 1;
        let (_, r) = run(
            client(rp.clone(), ask_landmark()),
            server(&s, s.standalone.clone(), tampered),
            4,
        );
        let err = r.expect_err("tampered");
        assert!(matches!(err, Error::Mtc(_)), "{err}");
        assert_eq!(err.alert(), Some(AlertDescription::BadCertificate), "{err}");
        // A relying party that has not fetched the landmark.
        let mut no_landmarks = rp.clone();
        for ca in &mut no_landmarks.cas {
            ca.trusted_subtrees.clear();
        }
        let (_, r) = run(
            client(no_landmarks, ask_landmark()),
            server(&s, s.standalone.clone(), s.landmark.clone()),
            5,
        );
        let err = r.expect_err("unknown landmark");
        assert!(
            matches!(err, Error::Mtc(MtcError::UntrustedSubtree { .. })),
            "{err}"
        );
        assert_eq!(err.alert(), Some(AlertDescription::UnknownCa));
        // A standalone certificate with the CA's cosignature alone, to a relying party that
        // requires one more.
        let ca_only = s
            .log
            .standalone_with(s.index, &[s.log.config().ca_id.clone()])
            .unwrap();
        let (_, r) = run(
            client(rp, Some(vec![s.ca_id.clone()])),
            server(&s, ca_only, s.landmark.clone()),
            6,
        );
        let err = r.expect_err("missing cosignature");
        assert!(
            matches!(err, Error::Mtc(MtcError::MissingCosignature { .. })),
            "{err}"
        );
        assert_eq!(err.alert(), Some(AlertDescription::BadCertificate));
    }
}

#[test]
fn a_standalone_certificate_needs_a_valid_cosignature_whatever_the_policy() {
    // A landmark-only relying party (no cosigner requirement) must not accept a standalone
    // certificate, and signatures by cosigners it does not know count for nothing: either
    // would let anyone present any key under a trusted CA ID.
    let log = issued_log(7);
    let cert = log.standalone(3).unwrap();
    let mut landmarks_only = log.relying_party(1).unwrap();
    for ca in &mut landmarks_only.cas {
        ca.requirements.clear();
    }
    let e = fails(&cert, &landmarks_only, NOW);
    assert!(matches!(e, MtcError::MissingCosignature { .. }), "{e:?}");
    assert_eq!(e.alert(), AlertDescription::BadCertificate);
    let mut strangers = log.relying_party(1).unwrap();
    strangers.cosigners.clear();
    let e = fails(&cert, &strangers, NOW);
    assert!(matches!(e, MtcError::MissingCosignature { .. }), "{e:?}");
    // A configuration asking for none, or for more than it names, or naming one twice is
    // refused when read.
    let text = log.relying_party(1).unwrap().to_text();
    let ca = log.config().ca_id.to_ascii();
    for bad in [
        format!("require 0 {ca}"),
        format!("require 2 {ca}"),
        format!("require 2 {ca} {ca}"),
    ] {
        let edited: String = text
            .lines()
            .map(|l| {
                if l.starts_with("require") {
                    bad.clone()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(RelyingParty::from_text(&edited).is_err(), "{bad}");
    }
}
