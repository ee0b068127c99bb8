//! The key tree as text: each step in RFC 8446 §7.1 notation with its context and value, and
//! with `explain` the HkdfLabel and one sentence per step ([`KeyTree::text`]). The notation
//! ([`KeyTree::formula`]) is the SVG's too.

use std::fmt::Write as _;

use super::model::{Ikm, KeyTree, Node};
use tls13lab::crypto::hash::HashAlg;
use tls13lab::events::hex;
use tls13lab::keyschedule::DerivationOp;

impl KeyTree {
    fn parent_name(&self, i: usize) -> String {
        let n = &self.nodes[i];
        n.parent
            .map(|p| self.nodes[p].step.name.clone())
            .or_else(|| n.step.parent_name.clone())
            .unwrap_or_else(|| "?".to_string())
    }

    fn ikm_name(&self, ikm: Ikm) -> String {
        match ikm {
            Ikm::Zeros => "0".to_string(),
            Ikm::Psk => "PSK".to_string(),
            Ikm::SharedSecret(i) => format!("{} shared secret", self.shared[i].group),
            Ikm::Other => "IKM".to_string(),
        }
    }

    /// The RFC 8446 §7.1 notation of node `i`'s step, e.g.
    /// `Derive-Secret(handshake_secret, "tls13 c hs traffic", ClientHello..ServerHello)`.
    pub fn formula(&self, i: usize) -> String {
        let n = &self.nodes[i];
        let s = &n.step;
        let parent = self.parent_name(i);
        match s.op {
            DerivationOp::Extract => {
                let salt = if s.parent_name.is_some() {
                    parent
                } else {
                    "0".to_string()
                };
                let ikm = self.ikm_name(n.ikm.unwrap_or(Ikm::Other));
                format!("HKDF-Extract(salt: {salt}, IKM: {ikm})")
            }
            DerivationOp::DeriveSecret => {
                let messages = if s.covers.is_empty() {
                    "\"\""
                } else {
                    &s.covers
                };
                format!("Derive-Secret({parent}, {}, {messages})", self.label(i))
            }
            DerivationOp::ExpandLabel => {
                let context = match (s.input("context"), s.label.as_str()) {
                    (None | Some([]), _) => "\"\"",
                    (_, "tls13 resumption") => "ticket_nonce",
                    (_, "tls13 exporter") => "Hash(context_value)",
                    _ => "context",
                };
                format!(
                    "HKDF-Expand-Label({parent}, {}, {context}, {})",
                    self.label(i),
                    s.output.len()
                )
            }
            DerivationOp::Hmac => format!("HMAC({parent}, {})", transcript_hash_of(&s.covers)),
        }
    }

    /// The label as quoted text: the HKDF label, or the application's exporter label.
    fn label(&self, i: usize) -> String {
        let s = &self.nodes[i].step;
        if s.label.is_empty() {
            // TLS-Exporter's first step: the application's label, with the usual prefix.
            let label = s.input("label").unwrap_or_default();
            quoted(&[b"tls13 ", label].concat())
        } else {
            format!("\"{}\"", s.label)
        }
    }

    /// The detail lines under node `i`: (key, text).
    pub(super) fn details(&self, i: usize, explain: bool) -> Vec<(&'static str, String)> {
        let n = &self.nodes[i];
        let s = &n.step;
        let mut d = Vec::new();
        match s.op {
            DerivationOp::Extract => {
                if let Some(ikm) = s.input("ikm").filter(|_| n.ikm != Some(Ikm::Zeros)) {
                    d.push(("IKM", hex(ikm)));
                }
            }
            DerivationOp::DeriveSecret => {
                if let Some(c) = s.input("context") {
                    let messages = if s.covers.is_empty() {
                        "\"\""
                    } else {
                        &s.covers
                    };
                    d.push((
                        "context",
                        format!("Transcript-Hash({messages}) = {}", hex(c)),
                    ));
                }
            }
            DerivationOp::ExpandLabel => {
                if let Some(c) = s.input("context").filter(|c| !c.is_empty()) {
                    d.push(("context", hex(c)));
                }
            }
            DerivationOp::Hmac => {
                if let Some(h) = s.input("hash") {
                    d.push((
                        "hash",
                        format!("{} = {}", transcript_hash_of(&s.covers), hex(h)),
                    ));
                }
            }
        }
        if explain {
            if let Some(info) = s.input("info") {
                d.push(("info", format!("HkdfLabel = {}", hex(info))));
            }
        }
        d.push(("value", hex(&s.output)));
        if explain {
            d.push(("why", self.why(i)));
        }
        d
    }

    /// One sentence on what node `i` is for, with its RFC section.
    pub fn why(&self, i: usize) -> String {
        let n = &self.nodes[i];
        let s = &n.step;
        if s.label == "tls13 traffic upd" {
            return "A KeyUpdate replaces an application traffic secret with its next generation, \
                    HKDF-Expand-Label of the previous one with \"traffic upd\" (RFC 8446 §7.2, §4.6.3)."
                .to_string();
        }
        let base = s
            .name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches('_');
        let text = match base {
            "early_secret" if n.ikm == Some(Ikm::Zeros) => {
                "Without a PSK the schedule still starts with HKDF-Extract, over Hash.length zero \
                 bytes, so every later stage has the same shape (RFC 8446 §7.1)."
            }
            "early_secret" => {
                "HKDF-Extract with a zero salt turns the PSK into the Early Secret, the root of \
                 everything a PSK handshake derives (RFC 8446 §7.1)."
            }
            "res_binder_key" | "ext_binder_key" | "binder_key" => {
                "The key that proves possession of the PSK; \"res binder\" and \"ext binder\" keep \
                 a resumption PSK from being accepted as an external one (RFC 8446 §7.1, §4.2.11.2)."
            }
            "binder_finished_key" => {
                "As for Finished, the binder's HMAC key is the binder key expanded with \
                 \"finished\" (RFC 8446 §4.2.11.2, §4.4.4)."
            }
            "binder" => {
                "The PSK binder: an HMAC over the ClientHello up to its binders list, tying the \
                 PSK to this very ClientHello (RFC 8446 §4.2.11.2)."
            }
            "client_early_traffic_secret" => {
                "Protects the client's 0-RTT data; its context is the ClientHello alone, so the \
                 data has no forward secrecy and can be replayed (RFC 8446 §7.1, §2.3)."
            }
            "early_exporter_master_secret" => {
                "Base of exporter values usable before the handshake completes, with the same \
                 replay caveats as 0-RTT data (RFC 8446 §7.5)."
            }
            "derived_for_handshake" => {
                "Derive-Secret with the label \"derived\" and an empty transcript turns the Early \
                 Secret into the salt of the next HKDF-Extract (RFC 8446 §7.1)."
            }
            "handshake_secret" if n.ikm == Some(Ikm::Zeros) => {
                "In psk_ke mode there is no key exchange: HKDF-Extract takes Hash.length zeros, \
                 and the handshake has no forward secrecy (RFC 8446 §7.1, §4.2.9)."
            }
            "handshake_secret" => {
                "HKDF-Extract mixes the key exchange's shared secret into the schedule \
                 (RFC 8446 §7.1, §7.4)."
            }
            "client_handshake_traffic_secret" => {
                "Protects the client's handshake messages (its Certificate, CertificateVerify \
                 and Finished); the context ends with the ServerHello (RFC 8446 §7.1)."
            }
            "server_handshake_traffic_secret" => {
                "Protects the server's handshake messages from EncryptedExtensions to Finished \
                 (RFC 8446 §7.1)."
            }
            "derived_for_master" => {
                "Derive-Secret with \"derived\" again makes the salt of the last HKDF-Extract \
                 (RFC 8446 §7.1)."
            }
            "master_secret" => {
                "HKDF-Extract over Hash.length zeros adds no new input: it separates the \
                 application secrets from the handshake ones (RFC 8446 §7.1)."
            }
            "client_application_traffic_secret" => {
                "Protects the client's application data; the context ends with the server \
                 Finished (RFC 8446 §7.1)."
            }
            "server_application_traffic_secret" => {
                "Protects the server's application data, including what it sends right after \
                 its Finished (RFC 8446 §7.1)."
            }
            "exporter_master_secret" => {
                "Base of the TLS-Exporter values applications derive for their own use \
                 (RFC 8446 §7.5)."
            }
            "resumption_master_secret" => {
                "Base of every ticket's PSK; its context runs to the client Finished \
                 (RFC 8446 §7.1, §4.6.1)."
            }
            "resumption_psk" => {
                "One ticket's PSK: the ticket_nonce as context gives every ticket a different \
                 PSK (RFC 8446 §4.6.1)."
            }
            "write_key" => "The AEAD key of the records its parent secret protects (RFC 8446 §7.3).",
            "write_iv" => {
                "The IV of those records: each record's nonce is this IV XOR the record's \
                 sequence number (RFC 8446 §7.3, §5.3)."
            }
            "finished_key" if self.parent_name(i).starts_with("client_application_traffic_secret") => {
                "After the handshake, the HMAC key of a post-handshake authentication's Finished \
                 comes from the client application traffic secret in use (RFC 8446 §4.4.4, \
                 §4.6.2)."
            }
            "finished_key" => {
                "The HMAC key of the Finished message sent under its parent secret \
                 (RFC 8446 §4.4.4)."
            }
            "verify_data" if s.covers.contains(" + CertificateRequest") => {
                "A post-handshake authentication's Finished: its Handshake Context is the \
                 handshake through the client Finished, then this CertificateRequest and the \
                 answer to it alone, so each request is independent (RFC 8446 §4.4.1, §4.6.2)."
            }
            "verify_data" => {
                "The Finished value: HMAC over the transcript hash up to, not including, this \
                 Finished (RFC 8446 §4.4.4)."
            }
            "exporter_label_secret" => {
                "TLS-Exporter first derives a secret per application label, Derive-Secret of the \
                 exporter secret with the label and an empty context (RFC 8446 §7.5)."
            }
            "exporter" => {
                "Then it expands that secret with \"exporter\" and the hash of the application's \
                 context to the length asked for (RFC 8446 §7.5)."
            }
            _ => "A key-schedule step (RFC 8446 §7).",
        };
        text.to_string()
    }

    /// The tree as text: with ECH, its part first ([`super::EchView::text`]); then a header,
    /// the inputs, and every step with its operation, label, context and value; with
    /// `explain`, also the HkdfLabel and one sentence per step.
    pub fn text(&self, explain: bool) -> String {
        let mut out = String::new();
        if let Some(ech) = &self.ech {
            // RFC 9849: the inner ClientHello is sealed before the TLS schedule starts.
            let _ = writeln!(out, "{}", ech.text(explain));
        }
        let _ = writeln!(out, "key schedule of {}", self.title);
        let suite = self.suite.as_deref().unwrap_or("cipher suite not reported");
        let hash = self.hash().map_or("?", HashAlg::name);
        let _ = writeln!(out, "{suite}, {hash}; values in hex\n");
        out.push_str(&self.inputs_text(explain));
        out.push('\n');
        for &r in &self.roots {
            self.write_node(&mut out, r, "", None, explain);
        }
        out
    }

    fn inputs_text(&self, explain: bool) -> String {
        let mut out = String::from("inputs\n");
        let line = |out: &mut String, k: &str, v: &str| {
            let _ = writeln!(out, "  {k:<28} {v}");
        };
        let early: Vec<&Node> = self
            .nodes
            .iter()
            .filter(|n| n.step.op == DerivationOp::Extract && n.step.parent_name.is_none())
            .collect();
        for n in &early {
            match n.ikm {
                Some(Ikm::Zeros) => line(&mut out, "PSK", "none: Hash.length zero bytes"),
                _ => line(
                    &mut out,
                    "PSK",
                    &hex(n.step.input("ikm").unwrap_or_default()),
                ),
            }
            if explain {
                line(
                    &mut out,
                    "",
                    if n.ikm == Some(Ikm::Zeros) {
                        "No PSK, so the Early Secret is extracted from zeros (RFC 8446 §7.1)."
                    } else {
                        "A resumption PSK from a ticket, or an external PSK (RFC 8446 §2.2, §4.2.11)."
                    },
                );
            }
        }
        for s in &self.shared {
            if s.components.len() > 1 {
                let names: Vec<&str> = s.components.iter().map(|(n, _)| n.as_str()).collect();
                let _ = writeln!(out, "  {} shared secret = {}", s.group, names.join(" ‖ "));
                for (name, v) in &s.components {
                    line(&mut out, &format!("  {name}"), &hex(v));
                }
                line(&mut out, "  concatenated", &hex(&s.value));
                if explain {
                    line(
                        &mut out,
                        "",
                        "A hybrid group's shared secret is its components' secrets concatenated \
                         in the group's order (draft-ietf-tls-ecdhe-mlkem §4.3).",
                    );
                }
            } else {
                line(
                    &mut out,
                    &format!("{} shared secret", s.group),
                    &hex(&s.value),
                );
                if explain {
                    line(
                        &mut out,
                        "",
                        "The (EC)DHE or KEM shared secret of the key_share exchange (RFC 8446 §7.4).",
                    );
                }
            }
        }
        if self.shared.is_empty() {
            line(
                &mut out,
                "(EC)DHE/KEM shared secret",
                "none: Hash.length zero bytes",
            );
            if explain {
                line(
                    &mut out,
                    "",
                    "No key exchange (psk_ke): the Handshake Secret is extracted from zeros \
                     (RFC 8446 §7.1, §4.2.9).",
                );
            }
        }
        out
    }

    fn write_node(
        &self,
        out: &mut String,
        i: usize,
        prefix: &str,
        last: Option<bool>,
        explain: bool,
    ) {
        let n = &self.nodes[i];
        let (head, inner) = match last {
            None => (String::new(), prefix.to_string()),
            Some(true) => (format!("{prefix}└── "), format!("{prefix}    ")),
            Some(false) => (format!("{prefix}├── "), format!("{prefix}│   ")),
        };
        let _ = writeln!(out, "{head}{} = {}", n.step.name, self.formula(i));
        let bar = if n.children.is_empty() {
            "    "
        } else {
            "│   "
        };
        for (k, v) in self.details(i, explain) {
            let _ = writeln!(out, "{inner}{bar}{k:<8} {v}");
        }
        for (j, &c) in n.children.iter().enumerate() {
            self.write_node(out, c, &inner, Some(j + 1 == n.children.len()), explain);
        }
    }
}

fn transcript_hash_of(covers: &str) -> String {
    if covers.is_empty() {
        "transcript hash".to_string()
    } else {
        format!("Transcript-Hash({covers})")
    }
}

/// Printable labels in quotes, anything else in hex.
fn quoted(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => format!("\"{s}\""),
        _ => format!("0x{}", hex(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::rfc8448;
    use tls13lab::events::Side;

    fn s3() -> KeyTree {
        rfc8448(3, Side::Client, None).unwrap()
    }

    #[test]
    fn text_shows_formula_context_and_value() {
        let text = s3().text(true);
        assert!(text.contains(
            "client_handshake_traffic_secret = Derive-Secret(handshake_secret, \"tls13 c hs traffic\", ClientHello..ServerHello)"
        ));
        assert!(text.contains(
            "context  Transcript-Hash(ClientHello..ServerHello) = 860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8"
        ));
        assert!(text.contains(
            "HKDF-Expand-Label(resumption_master_secret, \"tls13 resumption\", ticket_nonce, 32)"
        ));
        assert!(text.contains("(RFC 8446 §7.3, §5.3)"));
        // The RFC prints this HkdfLabel for "c hs traffic".
        assert!(text.contains("HkdfLabel = 002012746c7331332063206873207472616666696320860c06ed"));
        assert!(!text.lines().any(|l| l.ends_with(' ')), "trailing spaces");
    }

    #[test]
    fn section4_shows_binder_and_psk_input() {
        let t = rfc8448(4, Side::Client, None).unwrap();
        let text = t.text(false);
        let sec = crate::rfc8448::Section::new(4).unwrap();
        let psk = hex(&sec.summary("psk").unwrap());
        assert!(text.contains(&format!("PSK                          {psk}")));
        assert!(text.contains(
            "binder = HMAC(binder_finished_key, Transcript-Hash(ClientHello (truncated)))"
        ));
        assert!(text.contains("early_secret = HKDF-Extract(salt: 0, IKM: PSK)"));
    }
}
