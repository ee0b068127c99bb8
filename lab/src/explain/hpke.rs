//! HPKE steps ([`HpkeStep`], RFC 9180) as text, in the style of the key tree: each value in
//! RFC 9180's notation, its inputs named by the step that produced them (linked by value, as
//! [`super::KeyTree`] links derivations), then its value. ECH's `tls13lab keys` will print this
//! above the TLS key schedule; [`hpke_text`] is the renderer.

use std::fmt::Write as _;

use tls13lab::crypto::hpke::{HpkeOp, HpkeStep, HpkeValue};
use tls13lab::events::hex;
use tls13lab::messages::enums::HpkeKemId;

/// The steps as text: a header per phase (DeriveKeyPair, Encap/Decap, KeySchedule, Export), the
/// suite_id whenever it changes, then each step's formula, its inputs that no earlier step made,
/// and its value; with `explain`, one sentence per step with its RFC 9180 section.
pub fn hpke_text(steps: &[HpkeStep], explain: bool) -> String {
    let mut out = String::from("HPKE (RFC 9180) mode_base; values in hex\n");
    let mut suite_id: Option<&[u8]> = None;
    for (i, s) in steps.iter().enumerate() {
        if let Some(phase) = phase(s.name) {
            let _ = writeln!(out, "\n{phase}");
        }
        if suite_id != Some(&s.suite_id[..]) && s.op != HpkeOp::Dh && s.op != HpkeOp::Concat {
            let _ = writeln!(out, "  suite_id = {}", suite_id_text(&s.suite_id));
            suite_id = Some(&s.suite_id);
        }
        if s.op == HpkeOp::Kem && s.name == HpkeValue::SharedSecret {
            let _ = writeln!(out, "\n{}", pq_phase(&s.suite_id));
        }
        let earlier = &steps[..i];
        let _ = writeln!(out, "{} = {}", s.name, formula(s, earlier));
        for (k, v) in &s.inputs {
            // Inputs made by an earlier step are named in the formula; the rest are shown.
            if name_of(v, earlier).is_none() && !v.is_empty() && *k != "L" {
                if v.len() > 64 {
                    // A post-quantum enc (a ciphertext of a thousand bytes): its size, then
                    // its bytes a line at a time.
                    let _ = writeln!(out, "    {k:<8} {} bytes", v.len());
                    for chunk in v.chunks(32) {
                        let _ = writeln!(out, "    {:<8} {}", "", hex(chunk));
                    }
                } else {
                    let _ = writeln!(out, "    {k:<8} {}", hex(v));
                }
            }
        }
        let _ = writeln!(out, "    {:<8} {}", "value", hex(&s.output));
        if explain {
            let text = match s.op {
                HpkeOp::Kem => why_pq(s.name),
                _ => why(s.name),
            };
            let _ = writeln!(out, "    {:<8} {}", "why", text);
        }
    }
    out
}

/// The heading printed before the first step of a phase.
fn phase(v: HpkeValue) -> Option<&'static str> {
    Some(match v {
        HpkeValue::DkpPrk => "DeriveKeyPair(ikm) (RFC 9180 §7.1.3)",
        HpkeValue::Dh => "Encap / Decap: ExtractAndExpand(DH, kem_context) (RFC 9180 §4.1)",
        HpkeValue::PskIdHash => {
            "KeySchedule(mode_base, shared_secret, info, \"\", \"\") (RFC 9180 §5.1)"
        }
        HpkeValue::ExportedValue => "Export(exporter_context, L) (RFC 9180 §5.3)",
        _ => return None,
    })
}

/// The heading of a post-quantum KEM's Encap / Decap (draft-ietf-hpke-pq), its suite_id
/// `"KEM" ‖ kem_id` naming the KEM.
fn pq_phase(suite_id: &[u8]) -> String {
    let kem = suite_id
        .get(3..5)
        .map(|id| HpkeKemId::from(u16::from_be_bytes([id[0], id[1]])).to_string())
        .unwrap_or_else(|| "?".into());
    format!(
        "Encap / Decap: {kem}, a KEM: enc is its ciphertext and its shared secret is HPKE's \
         (draft-ietf-hpke-pq)"
    )
}

/// [`why`] for a post-quantum KEM's step (draft-ietf-hpke-pq).
fn why_pq(v: HpkeValue) -> &'static str {
    match v {
        HpkeValue::SharedSecret => {
            "Encap(pkR) draws its randomness and returns the shared secret and enc, the KEM \
             ciphertext (ML-KEM-768: 1088 bytes; X-Wing: 1120, the ML-KEM ciphertext and an \
             X25519 share); Decap(enc, skR) gives the same 32 bytes. Unlike DHKEM there is no \
             DH value and no ExtractAndExpand: the KeySchedule takes this secret as is \
             (draft-ietf-hpke-pq)."
        }
        HpkeValue::Sk => {
            "The private key from SHAKE256 over ikm (draft-ietf-hpke-pq's DeriveKeyPair)."
        }
        v => why(v),
    }
}

/// `"KEM" ‖ 0x0020` or `"HPKE" ‖ 0x0020 ‖ 0x0001 ‖ 0x0001`.
fn suite_id_text(id: &[u8]) -> String {
    let text_len = id.iter().take_while(|b| b.is_ascii_uppercase()).count();
    let mut s = format!("\"{}\"", String::from_utf8_lossy(&id[..text_len]));
    for pair in id[text_len..].chunks(2) {
        let _ = write!(s, " ‖ 0x{}", hex(pair));
    }
    s
}

/// The name of the latest earlier step whose output is `v`.
fn name_of(v: &[u8], earlier: &[HpkeStep]) -> Option<&'static str> {
    if v.is_empty() {
        return None;
    }
    earlier
        .iter()
        .rev()
        .find(|s| s.output == v)
        .map(|s| s.name.name())
}

/// `s`'s formula, inputs made by an earlier step named after it.
pub(super) fn formula(s: &HpkeStep, earlier: &[HpkeStep]) -> String {
    let arg = |k: &str| -> String {
        let v = s
            .inputs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.as_slice())
            .unwrap_or_default();
        if v.is_empty() {
            return "\"\"".into();
        }
        match (name_of(v, earlier), k) {
            (Some(n), _) => n.to_string(),
            (None, "info") if s.name == HpkeValue::Candidate => format!("I2OSP({}, 1)", v[0]),
            (None, "info") if s.name == HpkeValue::ExportedValue => "exporter_context".into(),
            (None, k) => k.to_string(),
        }
    };
    match s.op {
        HpkeOp::LabeledExtract => {
            format!(
                "LabeledExtract({}, \"{}\", {})",
                arg("salt"),
                s.label,
                arg("ikm")
            )
        }
        HpkeOp::LabeledExpand => format!(
            "LabeledExpand({}, \"{}\", {}, {})",
            arg("prk"),
            s.label,
            arg("info"),
            s.output.len()
        ),
        HpkeOp::Dh => "DH(skE, pkR) = DH(skR, pkE)".into(),
        // draft-ietf-hpke-pq: the KEM's own steps.
        HpkeOp::Kem if s.name == HpkeValue::Sk => format!(
            "SHAKE256.LabeledDerive({}, \"DeriveKeyPair\", \"\", {})",
            arg("ikm"),
            s.output.len()
        ),
        HpkeOp::Kem => "Encap(pkR) = Decap(enc, skR): the KEM's own shared secret".into(),
        HpkeOp::Concat => s
            .inputs
            .iter()
            .map(|(k, v)| match name_of(v, earlier) {
                Some(n) => n.to_string(),
                None => (*k).to_string(),
            })
            .collect::<Vec<_>>()
            .join(" ‖ "),
    }
}

/// One sentence on what a value is for, with its RFC 9180 section.
fn why(v: HpkeValue) -> &'static str {
    match v {
        HpkeValue::DkpPrk => {
            "The key pair is derived from input keying material, so an injected ikm (RFC 9180's \
             ikmE) fixes the ephemeral key (§7.1.3)."
        }
        HpkeValue::Sk => "The X25519 private key is the expanded ikm itself (§7.1.3).",
        HpkeValue::Candidate => {
            "A P-256 private key candidate, kept if it is in [1, n) (rejection sampling, §7.1.3)."
        }
        HpkeValue::Dh => {
            "The Diffie-Hellman value of the ephemeral and the recipient's key; both sides \
             compute it (§4.1)."
        }
        HpkeValue::KemContext => {
            "enc and the recipient's public key, binding the shared secret to both (§4.1)."
        }
        HpkeValue::EaePrk => "ExtractAndExpand's PRK over the DH value (§4.1).",
        HpkeValue::SharedSecret => "The KEM shared secret, the key schedule's input (§4.1).",
        HpkeValue::PskIdHash => "mode_base has no PSK: the hash of an empty psk_id (§5.1).",
        HpkeValue::InfoHash => {
            "The application's info string (for ECH: \"tls ech\" ‖ 0 ‖ ECHConfig), hashed (§5.1)."
        }
        HpkeValue::KeyScheduleContext => "mode ‖ psk_id_hash ‖ info_hash (§5.1).",
        HpkeValue::Secret => {
            "The shared secret extracted with an empty PSK: the root of key, nonce and \
             exporter secret (§5.1)."
        }
        HpkeValue::Key => "The AEAD key of every Seal and Open of this context (§5.1, §5.2).",
        HpkeValue::BaseNonce => "Message seq's nonce is base_nonce XOR I2OSP(seq, Nn) (§5.2).",
        HpkeValue::ExporterSecret => "The root of Export() values (§5.1, §5.3).",
        HpkeValue::ExportedValue => "A secret exported from the context (§5.3).",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tls13lab::crypto::hpke::{self, Aead, Kdf, Kem, Suite};
    use tls13lab::crypto::random::ScriptedRandom;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    /// RFC 9180 A.1.1 (DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, base mode): the
    /// sender's steps, and the export with an empty context.
    #[test]
    fn renders_the_rfc9180_a1_sender_steps() {
        let suite = Suite {
            kem: Kem::X25519HkdfSha256,
            kdf: Kdf::HkdfSha256,
            aead: Aead::Aes128Gcm,
        };
        let ikm_e = h("7268600d403fce431561aef583ee1613527cff655c1343f29812e66706df3234");
        let pk_r = h("3948cfe0ad1ddb695d780e59077195da6c56506b027329794ab02bca80815c4d");
        let info = h("4f6465206f6e2061204772656369616e2055726e");
        let mut rng = ScriptedRandom::new([ikm_e.clone()], 0);
        let mut steps = Vec::new();
        let (_, ctx) = hpke::setup_base_s(suite, &pk_r, &info, &mut rng, &mut steps).unwrap();
        ctx.export(b"", 32, &mut steps).unwrap();
        let text = hpke_text(&steps, true);
        for needle in [
            "DeriveKeyPair(ikm) (RFC 9180 §7.1.3)",
            "  suite_id = \"KEM\" ‖ 0x0020\n",
            "dkp_prk = LabeledExtract(\"\", \"dkp_prk\", ikm)\n    ikm      7268600d",
            // skEm, named as the sk of DeriveKeyPair.
            "sk = LabeledExpand(dkp_prk, \"sk\", \"\", 32)\n    value    52c4a758a802cd8b936eceea314432798d5baf2d7e9235dc084ab1b9cfa2f736",
            "kem_context = enc ‖ pkRm\n    enc      37fda3567bdbd628",
            "eae_prk = LabeledExtract(\"\", \"eae_prk\", dh)",
            "shared_secret = LabeledExpand(eae_prk, \"shared_secret\", kem_context, 32)\n    value    fe0e18c9f024ce43799ae393c7e8fe8fce9d218875e8227b0187c04e7d2ea1fc",
            "  suite_id = \"HPKE\" ‖ 0x0020 ‖ 0x0001 ‖ 0x0001\n",
            "info_hash = LabeledExtract(\"\", \"info_hash\", ikm)\n    ikm      4f6465206f6e",
            "key_schedule_context = mode ‖ psk_id_hash ‖ info_hash\n    mode     00\n    value    00725611c9d98c07",
            "secret = LabeledExtract(shared_secret, \"secret\", \"\")\n    value    12fff91991e93b48de37e7daddb52981084bd8aa64289c3788471d9a9712f397",
            "key = LabeledExpand(secret, \"key\", key_schedule_context, 16)\n    value    4531685d41d65f03dc48f6b8302c05b0",
            "base_nonce = LabeledExpand(secret, \"base_nonce\", key_schedule_context, 12)\n    value    56d890e5accaaf011cff4b7d",
            "exporter_secret = LabeledExpand(secret, \"exp\", key_schedule_context, 32)\n    value    45ff1c2e220db587171952c0592d5f5ebe103f1561a2614e38f2ffd47e99e3f8",
            "exported_value = LabeledExpand(exporter_secret, \"sec\", \"\", 32)\n    value    3853fe2b4035195a573ffc53856e77058e15d9ea064de3e59f4961d0095250ee",
            "    why      The KEM shared secret, the key schedule's input (§4.1).",
        ] {
            assert!(text.contains(needle), "no {needle:?} in\n{text}");
        }
        assert!(!hpke_text(&steps, false).contains("    why "));
    }
}
