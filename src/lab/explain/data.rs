//! The key schedule of one connection as a tree, for teaching (`tls13lab keys`).
//!
//! A connection reports every HKDF step as an [`Event::Derivation`]. [`KeyTree`] links the steps
//! back together: each hangs under the step whose output it consumed — the secret of
//! Derive-Secret and HKDF-Expand-Label, the salt of HKDF-Extract, the key of HMAC — and the
//! Extracts' other inputs, the PSK and the (EC)DHE/KEM shared secret with each component of a
//! hybrid group, are the tree's inputs. The links are made by value, not by name, so a tree that
//! hangs together also shows that the values fit together.
//!
//! Every line says which operation made the value, with which label and which context: for a
//! transcript hash, which handshake messages it covers. [`KeyTree::text`] prints the tree (one
//! sentence per step and its RFC 8446 section with `explain`), [`KeyTree::svg`] draws it.
//!
//! The steps come from an in-memory run ([`in_memory`]), an RFC 8448 trace replayed through our
//! client or server ([`rfc8448()`]), or a JSON file ([`KeyTree::from_json`]).
//!
//! ```
//! use tls13lab::events::Side;
//! use tls13lab::lab::explain;
//!
//! // RFC 8448 §3 replayed through our client: the tree carries the RFC's values.
//! let tree = explain::rfc8448(3, Side::Client, None).unwrap();
//! let text = tree.text(false);
//! assert!(text.contains(
//!     "handshake_secret = HKDF-Extract(salt: derived_for_handshake, IKM: x25519 shared secret)"
//! ));
//! assert!(text.contains("1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac"));
//!
//! // An in-memory hybrid handshake: the shared secret is shown component by component.
//! let run = explain::InMemory::demo(1)?
//!     .with_groups(&[tls13lab::messages::enums::NamedGroup::X25519MLKEM768]);
//! let tree = explain::in_memory_tree(&run, Side::Client, None).unwrap();
//! let names: Vec<&str> = tree.shared[0].components.iter().map(|(n, _)| n.as_str()).collect();
//! assert_eq!(names, ["ML-KEM-768", "X25519"]);
//! # Ok::<(), tls13lab::Error>(())
//! ```

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;

use crate::config::{ClientConfig, ServerConfig};
use crate::crypto::hash::HashAlg;
use crate::demo::{self, Pair};
use crate::events::{hex, Event, Side};
use crate::keyschedule::{Derivation, DerivationOp, Transcript};
use crate::ledger::unhex;
use crate::messages::enums::{HandshakeType, NamedGroup};
use crate::messages::handshake::HRR_RANDOM;
use crate::session::TicketStore;

/// One key-schedule step with owned strings, so it can come from events or from JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The HKDF operation.
    pub op: DerivationOp,
    /// What was derived, e.g. `client_handshake_traffic_secret` or `write_key`.
    pub name: String,
    /// The secret it was derived from, as the schedule named it.
    pub parent_name: Option<String>,
    /// The full HKDF label (`"tls13 c hs traffic"`); empty for Extract, HMAC and the exporter's
    /// first step (whose label is the application's, in `inputs["label"]`).
    pub label: String,
    /// The hash function.
    pub hash: Option<HashAlg>,
    /// Named inputs: `salt`/`ikm`, `secret`/`context`/`info`, `key`/`hash`.
    pub inputs: Vec<(String, Vec<u8>)>,
    /// Which handshake messages the transcript hash in the context covers.
    pub covers: String,
    /// The derived value.
    pub output: Vec<u8>,
}

impl Step {
    /// The input called `key`.
    pub fn input(&self, key: &str) -> Option<&[u8]> {
        self.inputs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }

    /// The transcript hash this step uses, if any: Derive-Secret's context, HMAC's hash.
    fn transcript_hash(&self) -> Option<&[u8]> {
        match self.op {
            DerivationOp::DeriveSecret => self.input("context"),
            DerivationOp::Hmac => self.input("hash"),
            _ => None,
        }
    }

    fn from_json(v: &Value) -> Result<Step, String> {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        let op = match v["op"].as_str() {
            Some("Extract") => DerivationOp::Extract,
            Some("DeriveSecret") => DerivationOp::DeriveSecret,
            Some("ExpandLabel") => DerivationOp::ExpandLabel,
            Some("Hmac") => DerivationOp::Hmac,
            other => return Err(format!("unknown key-schedule operation {other:?}")),
        };
        let hash = match v["hash"].as_str() {
            Some("Sha256") => Some(HashAlg::Sha256),
            Some("Sha384") => Some(HashAlg::Sha384),
            _ => None,
        };
        let bytes = |x: &Value| {
            x.as_str()
                .and_then(unhex)
                .ok_or_else(|| format!("{} is not hex", s("name")))
        };
        let mut inputs = Vec::new();
        if let Some(m) = v["inputs"].as_object() {
            for (k, x) in m {
                inputs.push((k.clone(), bytes(x)?));
            }
        }
        Ok(Step {
            op,
            name: s("name"),
            parent_name: v["parent"].as_str().map(str::to_string),
            label: s("label"),
            hash,
            inputs,
            covers: s("context_covers"),
            output: bytes(&v["output"])?,
        })
    }
}

impl From<&Derivation> for Step {
    fn from(d: &Derivation) -> Step {
        Step {
            op: d.op,
            name: d.name.to_string(),
            parent_name: d.parent.map(|p| p.to_string()),
            label: d.label.to_string(),
            hash: Some(d.hash),
            inputs: d
                .inputs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            covers: d.context_covers.clone(),
            output: d.output.clone(),
        }
    }
}

/// The (EC)DHE/KEM shared secret of a key exchange, component by component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedSecret {
    /// The group, e.g. `x25519` or `X25519MLKEM768`.
    pub group: String,
    /// Each component's name and secret, in concatenation order (empty if not known).
    pub components: Vec<(String, Vec<u8>)>,
    /// The shared secret HKDF-Extract takes as IKM.
    pub value: Vec<u8>,
}

/// What an HKDF-Extract took as input keying material.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ikm {
    /// Hash.length zero bytes: no PSK, psk_ke mode, or the Master Secret.
    Zeros,
    /// A PSK (the Early Secret's input).
    Psk,
    /// The shared secret `KeyTree::shared[i]`.
    SharedSecret(usize),
    /// Bytes not matched to a known input.
    Other,
}

/// One step in the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The step.
    pub step: Step,
    /// The node whose output this step consumed.
    pub parent: Option<usize>,
    /// Steps that consumed this one's output, in the order they happened.
    pub children: Vec<usize>,
    /// For HKDF-Extract: what the IKM was.
    pub ikm: Option<Ikm>,
}

/// A connection's key schedule as a tree (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyTree {
    /// What connection this is, e.g. "RFC 8448 §3 Simple 1-RTT Handshake (client view)".
    pub title: String,
    /// The negotiated cipher suite, if reported.
    pub suite: Option<String>,
    /// The steps; `roots` index the ones with no parent.
    pub nodes: Vec<Node>,
    /// Steps derived from no other step (Early Secrets, or steps whose parent was not seen).
    pub roots: Vec<usize>,
    /// The shared secrets of the connection's key exchanges.
    pub shared: Vec<SharedSecret>,
}

impl KeyTree {
    /// The tree of one endpoint's events.
    pub fn from_events(title: &str, events: &[Event]) -> KeyTree {
        let mut steps = Vec::new();
        let mut shared = Vec::new();
        let mut messages = Vec::new();
        let mut suite = None;
        for e in events {
            match e {
                Event::Derivation(d) => steps.push(Step::from(d)),
                Event::KeyShare(k) => shared.push(SharedSecret {
                    group: k.group.to_string(),
                    components: k
                        .components
                        .iter()
                        .map(|c| (c.name.to_string(), c.secret.clone()))
                        .collect(),
                    value: k.shared_secret.clone(),
                }),
                Event::Handshake(h) => messages.push(h.bytes.clone()),
                Event::Connected(n) => suite = Some(n.suite.to_string()),
                _ => {}
            }
        }
        KeyTree::build(title, suite, steps, shared, &messages)
    }

    /// The tree of a JSON file: a `--json` report written with `--show-secrets` (its
    /// `derivations`, `key_shares`, `messages` and `negotiated`), or an array of serialized
    /// [`Event`]s (or an object holding one under `events`).
    pub fn from_json(title: &str, text: &str) -> Result<KeyTree, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let mut steps = Vec::new();
        let mut shared = Vec::new();
        let mut messages = Vec::new();
        let mut suite = v["negotiated"]["suite"].as_str().map(str::to_string);
        let share = |k: &Value| -> Option<SharedSecret> {
            Some(SharedSecret {
                group: k["group"].as_str()?.to_string(),
                components: k["components"]
                    .as_array()?
                    .iter()
                    .filter_map(|c| {
                        Some((
                            c["name"].as_str()?.to_string(),
                            unhex(c["secret"].as_str()?)?,
                        ))
                    })
                    .collect(),
                value: unhex(k["shared_secret"].as_str()?)?,
            })
        };
        let message = |m: &Value| m["bytes"].as_str().and_then(unhex);
        if let Some(ds) = v["derivations"].as_array() {
            for d in ds {
                steps.push(Step::from_json(d)?);
            }
            shared.extend(
                v["key_shares"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(share),
            );
            messages.extend(
                v["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(message),
            );
        } else {
            let events = v.as_array().or_else(|| v["events"].as_array());
            for e in events.into_iter().flatten() {
                match e["event"].as_str() {
                    Some("derivation") => steps.push(Step::from_json(e)?),
                    Some("key_share") => shared.extend(share(e)),
                    Some("handshake") => messages.extend(message(e)),
                    Some("connected") => suite = e["suite"].as_str().map(str::to_string),
                    _ => {}
                }
            }
        }
        if steps.is_empty() {
            return Err(
                "no key-schedule steps in it (write the JSON with --show-secrets)".to_string(),
            );
        }
        Ok(KeyTree::build(title, suite, steps, shared, &messages))
    }

    fn build(
        title: &str,
        suite: Option<String>,
        steps: Vec<Step>,
        shared: Vec<SharedSecret>,
        messages: &[Vec<u8>],
    ) -> KeyTree {
        let contexts = steps
            .iter()
            .find_map(|s| s.hash)
            .map(|h| transcript_contexts(messages, h))
            .unwrap_or_default();
        let mut t = KeyTree {
            title: title.to_string(),
            suite,
            shared,
            ..KeyTree::default()
        };
        for mut step in steps {
            // Endpoints recompute some values (e.g. a binder to check it): show each once.
            if t.nodes.iter().any(|n| n.step == step) {
                continue;
            }
            // A Finished HMAC is reported with its hash only: name the messages it covers.
            if step.covers.is_empty() {
                if let Some(h) = step.transcript_hash() {
                    if let Some((_, covers)) = contexts.iter().find(|(c, _)| c == h) {
                        step.covers = covers.clone();
                    }
                }
            }
            let from = match step.op {
                DerivationOp::Extract if step.parent_name.is_some() => step.input("salt"),
                DerivationOp::Extract => None,
                DerivationOp::DeriveSecret | DerivationOp::ExpandLabel => step.input("secret"),
                DerivationOp::Hmac => step.input("key"),
            };
            let parent = from.and_then(|b| {
                let named = t.nodes.iter().rposition(|n| {
                    n.step.output == b && Some(&n.step.name) == step.parent_name.as_ref()
                });
                named.or_else(|| t.nodes.iter().rposition(|n| n.step.output == b))
            });
            let ikm = (step.op == DerivationOp::Extract).then(|| {
                let ikm = step.input("ikm").unwrap_or_default();
                if ikm.iter().all(|b| *b == 0) {
                    Ikm::Zeros
                } else if let Some(i) = t.shared.iter().position(|s| s.value == ikm) {
                    Ikm::SharedSecret(i)
                } else if step.parent_name.is_none() {
                    Ikm::Psk
                } else {
                    Ikm::Other
                }
            });
            let i = t.nodes.len();
            t.nodes.push(Node {
                step,
                parent,
                children: Vec::new(),
                ikm,
            });
            match parent {
                Some(p) => t.nodes[p].children.push(i),
                None => t.roots.push(i),
            }
        }
        t
    }

    /// The hash function of the schedule.
    pub fn hash(&self) -> Option<HashAlg> {
        self.nodes.iter().find_map(|n| n.step.hash)
    }

    /// Nodes in display order (depth first) with their depth.
    fn walk(&self) -> Vec<(usize, usize)> {
        fn go(t: &KeyTree, i: usize, depth: usize, out: &mut Vec<(usize, usize)>) {
            out.push((i, depth));
            for &c in &t.nodes[i].children {
                go(t, c, depth + 1, out);
            }
        }
        let mut out = Vec::new();
        for &r in &self.roots {
            go(self, r, 0, &mut out);
        }
        out
    }

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
    fn details(&self, i: usize, explain: bool) -> Vec<(&'static str, String)> {
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
            "finished_key" => {
                "The HMAC key of the Finished message sent under its parent secret \
                 (RFC 8446 §4.4.4)."
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

    /// The tree as text: a header, the inputs, then every step with its operation, label,
    /// context and value; with `explain`, also the HkdfLabel and one sentence per step.
    pub fn text(&self, explain: bool) -> String {
        let mut out = String::new();
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

    /// The tree as a standalone SVG drawing: one box per step (colored by operation) with its
    /// formula and value, indented under its parent, and the inputs beside the Extracts they
    /// feed.
    pub fn svg(&self) -> String {
        const ROW: usize = 58;
        const INDENT: usize = 26;
        const BOX_W: usize = 700;
        const INPUT_W: usize = 330;
        const LEFT: usize = 16;
        const TOP: usize = 86;
        let rows = self.walk();
        let max_depth = rows.iter().map(|(_, d)| *d).max().unwrap_or(0);
        let input_x = LEFT + max_depth * INDENT + BOX_W + 50;
        let width = input_x + INPUT_W + LEFT;
        let height = TOP + rows.len() * ROW + 10;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"##
        );
        s.push_str(concat!(
            r##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>"##,
            "\n",
            r##"<rect width="100%" height="100%" fill="#ffffff"/>"##,
            "\n"
        ));
        let _ = writeln!(
            s,
            r##"<text x="{LEFT}" y="24" font-size="16" font-weight="bold">key schedule of {}</text>"##,
            esc(&self.title)
        );
        let suite = self.suite.as_deref().unwrap_or("cipher suite not reported");
        let hash = self.hash().map_or("?", HashAlg::name);
        let _ = writeln!(
            s,
            r##"<text x="{LEFT}" y="44" fill="#444">{}, {hash}; values in hex</text>"##,
            esc(suite)
        );
        let mut x = LEFT;
        for op in [
            DerivationOp::Extract,
            DerivationOp::DeriveSecret,
            DerivationOp::ExpandLabel,
            DerivationOp::Hmac,
        ] {
            let (fill, stroke) = colors(op);
            let _ = writeln!(
                s,
                r##"<rect x="{x}" y="56" width="14" height="14" rx="3" fill="{fill}" stroke="{stroke}"/><text x="{}" y="67">{}</text>"##,
                x + 20,
                op_name(op)
            );
            x += 150;
        }
        let mut y_of = vec![0usize; self.nodes.len()];
        for (row, &(i, depth)) in rows.iter().enumerate() {
            let y = TOP + row * ROW;
            y_of[i] = y;
            let bx = LEFT + depth * INDENT;
            let n = &self.nodes[i];
            if let Some(p) = n.parent {
                let px = LEFT + (depth - 1) * INDENT + 10;
                let py = y_of[p] + ROW - 10;
                let cy = y + (ROW - 10) / 2;
                let _ = writeln!(
                    s,
                    r##"<path d="M{px},{py} V{cy} H{bx}" fill="none" stroke="#888"/>"##
                );
            }
            let (fill, stroke) = colors(n.step.op);
            let _ = writeln!(
                s,
                r##"<rect x="{bx}" y="{y}" width="{BOX_W}" height="{}" rx="5" fill="{fill}" stroke="{stroke}"/>"##,
                ROW - 10
            );
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}"><tspan font-weight="bold">{}</tspan><tspan dx="5" fill="#333" font-size="11">= {}</tspan></text>"##,
                bx + 8,
                y + 16,
                esc(&n.step.name),
                esc(&self.formula(i))
            );
            let context = self
                .details(i, false)
                .into_iter()
                .find(|(k, _)| *k != "value")
                .map(|(k, v)| format!("{k} {v}"));
            let mut value_y = y + 31;
            if let Some(c) = context {
                let _ = writeln!(
                    s,
                    r##"<text x="{}" y="{}" font-size="10" fill="#555">{}</text>"##,
                    bx + 8,
                    y + 29,
                    esc(&ellipsize(&c, 118))
                );
                value_y = y + 42;
            }
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{value_y}" font-family="monospace" font-size="11">{}</text>"##,
                bx + 8,
                hex(&n.step.output)
            );
            if let Some(ikm) = n.ikm.filter(|k| *k != Ikm::Zeros) {
                self.svg_input(&mut s, ikm, n, input_x, y, bx + BOX_W, ROW - 10, INPUT_W);
            }
        }
        s.push_str("</svg>\n");
        s
    }

    #[allow(clippy::too_many_arguments)]
    fn svg_input(
        &self,
        s: &mut String,
        ikm: Ikm,
        n: &Node,
        x: usize,
        y: usize,
        target_x: usize,
        h: usize,
        w: usize,
    ) {
        let mut lines: Vec<(String, String)> = Vec::new();
        let title = match ikm {
            Ikm::SharedSecret(i) => {
                let sh = &self.shared[i];
                if sh.components.len() > 1 {
                    for (name, v) in &sh.components {
                        lines.push((name.clone(), hex(v)));
                    }
                }
                format!("{} shared secret", sh.group)
            }
            Ikm::Psk => "PSK".to_string(),
            _ => "IKM".to_string(),
        };
        if lines.is_empty() {
            lines.push((String::new(), hex(n.step.input("ikm").unwrap_or_default())));
        }
        let _ = writeln!(
            s,
            r##"<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="5" fill="#fff7d6" stroke="#c9a227"/>"##
        );
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" font-weight="bold">{}</text>"##,
            x + 8,
            y + 15,
            esc(&title)
        );
        for (k, (name, v)) in lines.iter().enumerate() {
            let text = if name.is_empty() {
                ellipsize(v, 50)
            } else {
                ellipsize(&format!("{name} {v}"), 50)
            };
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}" font-family="monospace" font-size="10">{}</text>"##,
                x + 8,
                y + 29 + k * 12,
                esc(&text)
            );
        }
        let _ = writeln!(
            s,
            r##"<path d="M{x},{} H{}" stroke="#555" marker-end="url(#arrow)"/>"##,
            y + h / 2,
            target_x + 2
        );
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

fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn op_name(op: DerivationOp) -> &'static str {
    match op {
        DerivationOp::Extract => "HKDF-Extract",
        DerivationOp::DeriveSecret => "Derive-Secret",
        DerivationOp::ExpandLabel => "HKDF-Expand-Label",
        DerivationOp::Hmac => "HMAC",
    }
}

fn colors(op: DerivationOp) -> (&'static str, &'static str) {
    match op {
        DerivationOp::Extract => ("#dbe8fb", "#3d6fb6"),
        DerivationOp::DeriveSecret => ("#dff3e0", "#3f8f48"),
        DerivationOp::ExpandLabel => ("#eeeeee", "#777777"),
        DerivationOp::Hmac => ("#fbe5d6", "#c0662b"),
    }
}

/// Transcript hashes of every prefix of `messages` (handshake messages in order, post-handshake
/// ones skipped) under `alg`, with what each covers; ClientHello1 becomes `message_hash` after
/// a HelloRetryRequest (RFC 8446 §4.4.1).
fn transcript_contexts(messages: &[Vec<u8>], alg: HashAlg) -> Vec<(Vec<u8>, String)> {
    let mut t = Transcript::new();
    let mut out = Vec::new();
    for m in messages {
        let Some(&typ) = m.first() else { continue };
        let typ = HandshakeType::from(typ);
        if matches!(
            typ,
            HandshakeType::NewSessionTicket | HandshakeType::KeyUpdate
        ) {
            continue;
        }
        let hrr = typ == HandshakeType::ServerHello && m.get(6..38) == Some(&HRR_RANDOM[..]);
        if hrr && t.replace_with_message_hash().is_err() {
            return out;
        }
        t.add(typ, m);
        if t.start_hash(alg).is_err() {
            return out;
        }
        out.push((t.current_hash().to_vec(), t.covers()));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Sources.

/// Which connection of the demo's three (RFC 8446 §2: full, resumed, resumed with 0-RTT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Connection {
    /// A full handshake.
    #[default]
    Full,
    /// Resumed from a ticket of the full handshake (psk_dhe_ke), without early data.
    Resumed,
    /// Resumed with the request sent as 0-RTT data.
    ZeroRtt,
}

/// An in-memory run between our client and server.
#[derive(Clone, Debug)]
pub struct InMemory {
    /// Seed of all randomness.
    pub seed: u64,
    /// The client's configuration.
    pub client: ClientConfig,
    /// The server's configuration.
    pub server: ServerConfig,
    /// Which connection.
    pub connection: Connection,
    /// Whether the client updates its keys after the handshake and asks the server to do the
    /// same (RFC 8446 §4.6.3), so generation 1 of the application secrets appears.
    pub key_update: bool,
}

impl InMemory {
    /// A full handshake between the demo's configurations ([`demo::server_config`] and
    /// [`demo::client_config`]) made from `seed`.
    pub fn demo(seed: u64) -> Result<InMemory, crate::Error> {
        let (server, root) = demo::server_config(seed, demo::NOW_MS)?;
        Ok(InMemory {
            seed,
            client: demo::client_config(root),
            server,
            connection: Connection::Full,
            key_update: false,
        })
    }

    /// Both sides use `groups` in this order, and the client sends a key share for the first.
    pub fn with_groups(mut self, groups: &[NamedGroup]) -> InMemory {
        if let Some(first) = groups.first() {
            self.client.groups = groups.to_vec();
            self.client.key_shares = vec![*first];
            self.server.groups = groups.to_vec();
        }
        self
    }
}

/// The request the demo connections send (`demo::three_connections` in the docs uses it too).
pub const DEMO_REQUEST: &[u8] = b"GET / HTTP/1.0\r\n\r\n";

/// Runs the connection `o` describes in memory (the same seeds and clock as
/// [`demo::three_connections`]) and returns the client's and the server's events. With
/// `export`, both sides then compute a 32-byte TLS-Exporter value under that label.
pub fn in_memory(
    o: &InMemory,
    export: Option<&[u8]>,
) -> Result<(Vec<Event>, Vec<Event>), crate::Error> {
    let client = Arc::new(o.client.clone());
    let server = Arc::new(o.server.clone());
    let mut p = match o.connection {
        Connection::Full => Pair::new(client, server, o.seed, demo::NOW_MS)?,
        Connection::Resumed | Connection::ZeroRtt => {
            let mut first = Pair::new(client.clone(), server.clone(), o.seed, demo::NOW_MS)?;
            first.handshake()?;
            first.settle()?;
            // As the demo does: the resumed connection takes the last ticket, 0-RTT the one
            // before, and they run a second later.
            let mut all = first.client.tickets().clone();
            let mut ticket = all.tickets.pop_back();
            let (seed, client) = if o.connection == Connection::Resumed {
                let no_early = ClientConfig {
                    enable_early_data: false,
                    ..(*client).clone()
                };
                (o.seed + 1, Arc::new(no_early))
            } else {
                ticket = all.tickets.pop_back();
                (o.seed + 2, client)
            };
            let mut tickets = TicketStore::default();
            tickets.tickets.extend(ticket);
            Pair::with_tickets(client, server, seed, demo::NOW_MS + 1000, tickets)?
        }
    };
    p.client.start(p.now_ms)?;
    if o.connection == Connection::ZeroRtt {
        p.client.send(DEMO_REQUEST)?;
    }
    p.settle()?;
    if !(p.client.is_connected() && p.server.is_connected()) {
        return Err(crate::Error::InvalidState("handshake did not complete"));
    }
    if o.key_update {
        p.client.key_update(true)?;
        p.settle()?;
    }
    if let Some(label) = export {
        p.client.export(label, b"", 32)?;
        p.server.export(label, b"", 32)?;
    }
    p.client_events.extend(p.client.events());
    p.server_events.extend(p.server.events());
    Ok((p.client_events, p.server_events))
}

/// The key tree of an in-memory run, from `side`'s events.
pub fn in_memory_tree(o: &InMemory, side: Side, export: Option<&[u8]>) -> Result<KeyTree, String> {
    let (c, s) = in_memory(o, export).map_err(|e| e.to_string())?;
    let what = match o.connection {
        Connection::Full => "full handshake",
        Connection::Resumed => "resumed handshake",
        Connection::ZeroRtt => "resumed handshake with 0-RTT",
    };
    let mut title = format!("an in-memory {what}, seed {}", o.seed);
    if o.key_update {
        title.push_str(", KeyUpdate");
    }
    let _ = write!(title, " ({} view)", side_name(side));
    let events = if side == Side::Client { c } else { s };
    Ok(KeyTree::from_events(&title, &events))
}

/// The key tree of RFC 8448 section `n` (3 to 7) replayed through our `side`; with `export`,
/// it then computes a 32-byte TLS-Exporter value under that label.
pub fn rfc8448(n: u8, side: Side, export: Option<&[u8]>) -> Result<KeyTree, String> {
    let sec = crate::lab::rfc8448::Section::new(n).map_err(|e| e.to_string())?;
    let events = crate::lab::rfc8448::replay_section(n, side, export).map_err(|e| e.to_string())?;
    let title = format!("RFC 8448 §{n} {} ({} view)", sec.title(), side_name(side));
    Ok(KeyTree::from_events(&title, &events))
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Client => "client",
        Side::Server => "server",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3() -> KeyTree {
        rfc8448(3, Side::Client, None).unwrap()
    }

    #[test]
    fn rfc8448_s3_tree_links_every_step_to_its_parent() {
        let t = s3();
        // One root (the Early Secret); everything else hangs under it.
        assert_eq!(t.roots.len(), 1);
        assert_eq!(t.nodes[t.roots[0]].step.name, "early_secret");
        let name_of = |i: usize| t.nodes[i].step.name.as_str();
        let find = |name: &str| t.nodes.iter().position(|n| n.step.name == name).unwrap();
        let hs = find("handshake_secret");
        assert_eq!(
            name_of(t.nodes[hs].parent.unwrap()),
            "derived_for_handshake"
        );
        assert_eq!(t.nodes[hs].ikm, Some(Ikm::SharedSecret(0)));
        assert_eq!(t.nodes[find("master_secret")].ikm, Some(Ikm::Zeros));
        // Finished HMACs hang under their finished_key, and name what the hash covers.
        let vd: Vec<&Node> = t
            .nodes
            .iter()
            .filter(|n| n.step.name == "verify_data")
            .collect();
        assert_eq!(vd.len(), 2);
        for n in &vd {
            assert_eq!(name_of(n.parent.unwrap()), "finished_key");
        }
        assert_eq!(vd[0].step.covers, "ClientHello..server CertificateVerify");
        assert_eq!(vd[1].step.covers, "ClientHello..server Finished");
        let rms = find("resumption_master_secret");
        assert_eq!(t.nodes[rms].step.covers, "ClientHello..client Finished");
        assert_eq!(name_of(t.nodes[rms].children[0]), "resumption_psk");
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
        let sec = crate::lab::rfc8448::Section::new(4).unwrap();
        let psk = hex(&sec.summary("psk").unwrap());
        assert!(text.contains(&format!("PSK                          {psk}")));
        assert!(text.contains(
            "binder = HMAC(binder_finished_key, Transcript-Hash(ClientHello (truncated)))"
        ));
        assert!(text.contains("early_secret = HKDF-Extract(salt: 0, IKM: PSK)"));
    }

    #[test]
    fn json_report_round_trips_to_the_same_tree() {
        let (events, _) =
            in_memory(&InMemory::demo(1).unwrap(), Some(b"EXPERIMENTAL test")).unwrap();
        let from_events = KeyTree::from_events("x", &events);
        // An array of serialized events ...
        let json = serde_json::to_string(&events).unwrap();
        let from_json = KeyTree::from_json("x", &json).unwrap();
        assert_eq!(from_json.text(true), from_events.text(true));
        // ... and the shape of a --json --show-secrets report.
        let pick = |kind: &str| -> Vec<Value> {
            events
                .iter()
                .map(|e| serde_json::to_value(e).unwrap())
                .filter(|v| v["event"] == kind)
                .collect()
        };
        let report = serde_json::json!({
            "negotiated": pick("connected")[0],
            "derivations": pick("derivation"),
            "key_shares": pick("key_share"),
            "messages": pick("handshake"),
        });
        let from_report = KeyTree::from_json("x", &report.to_string()).unwrap();
        assert_eq!(from_report.text(true), from_events.text(true));
        assert!(KeyTree::from_json("x", "{\"records\": []}")
            .unwrap_err()
            .contains("--show-secrets"));
    }

    #[test]
    fn hybrid_run_shows_each_component() {
        let o = InMemory::demo(3)
            .unwrap()
            .with_groups(&[NamedGroup::X25519MLKEM768]);
        let t = in_memory_tree(&o, Side::Client, None).unwrap();
        assert_eq!(t.shared.len(), 1);
        let sh = &t.shared[0];
        let names: Vec<&str> = sh.components.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["ML-KEM-768", "X25519"]);
        assert_eq!(
            sh.value,
            [sh.components[0].1.clone(), sh.components[1].1.clone()].concat()
        );
        let text = t.text(false);
        assert!(text.contains("X25519MLKEM768 shared secret = ML-KEM-768 ‖ X25519"));
        assert!(text.contains(
            "HKDF-Extract(salt: derived_for_handshake, IKM: X25519MLKEM768 shared secret)"
        ));
        let svg = t.svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("ML-KEM-768"));
    }

    #[test]
    fn resumed_zero_rtt_and_key_update() {
        let o = InMemory {
            connection: Connection::ZeroRtt,
            key_update: true,
            ..InMemory::demo(1).unwrap()
        };
        let t = in_memory_tree(&o, Side::Client, None).unwrap();
        let names: Vec<&str> = t.nodes.iter().map(|n| n.step.name.as_str()).collect();
        for n in [
            "res_binder_key",
            "binder",
            "client_early_traffic_secret",
            "client_application_traffic_secret_1",
            "server_application_traffic_secret_1",
        ] {
            assert!(names.contains(&n), "{n} missing: {names:?}");
        }
        assert!(t.text(true).contains("traffic upd"));
        let resumed = InMemory {
            connection: Connection::Resumed,
            ..o.clone()
        };
        let t = in_memory_tree(&resumed, Side::Server, None).unwrap();
        assert!(!t
            .nodes
            .iter()
            .any(|n| n.step.name == "client_early_traffic_secret"));
        assert!(t.nodes.iter().any(|n| n.step.name == "res_binder_key"));
        // psk_ke: no key exchange at all.
        let mut psk_ke = resumed.clone();
        psk_ke.client.psk_modes = vec![crate::messages::enums::PskKeyExchangeMode::PskKe];
        let t = in_memory_tree(&psk_ke, Side::Client, None).unwrap();
        assert!(t.shared.is_empty());
        let text = t.text(false);
        assert!(text.contains("(EC)DHE/KEM shared secret    none: Hash.length zero bytes"));
        assert!(
            text.contains("handshake_secret = HKDF-Extract(salt: derived_for_handshake, IKM: 0)")
        );
    }
}
