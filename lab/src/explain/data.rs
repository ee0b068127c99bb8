//! Building a [`KeyTree`]: from one endpoint's events or a JSON report, each step linked to the
//! step whose output it consumed; and the connections the events come from (an in-memory run,
//! an RFC 8448 replay).

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;

use super::ech::{EchInputs, Reported};
use super::model::{Ikm, KeyTree, Node, SharedSecret, Step};
use super::EchView;
use crate::demo::{self, Pair};
use tls13lab::config::{ClientConfig, EchMode, ServerConfig};
use tls13lab::crypto::hash::HashAlg;
use tls13lab::crypto::hpke::{HpkeOp, HpkeStep, HpkeValue};
use tls13lab::events::{Event, Side};
use tls13lab::keyschedule::{Derivation, DerivationOp, Transcript};
use tls13lab::ledger::unhex;
use tls13lab::messages::enums::{HandshakeType, NamedGroup};
use tls13lab::messages::handshake::HRR_RANDOM;
use tls13lab::session::TicketStore;

impl Step {
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

/// An HPKE step (RFC 9180) as `--show-secrets` reports write it among the derivations, or
/// `None` if `v` is a TLS key-schedule step. The operation, label and input names must be those
/// of the value it names ([`HpkeValue::op`], [`HpkeValue::label`], [`HpkeValue::inputs`]); the
/// inputs are put back in the order the step reported them.
fn hpke_step_from_json(v: &Value) -> Result<Option<HpkeStep>, String> {
    let Ok(op) = serde_json::from_value::<HpkeOp>(v["op"].clone()) else {
        return Ok(None);
    };
    let name = serde_json::from_value::<HpkeValue>(v["name"].clone())
        .map_err(|_| format!("unknown HPKE value {}", v["name"]))?;
    if op != name.op() || v["label"].as_str() != Some(name.label()) {
        return Err(format!(
            "HPKE {name}: {op:?} with label {} is not how RFC 9180 makes it",
            v["label"]
        ));
    }
    let bytes = |x: &Value| {
        x.as_str()
            .and_then(unhex)
            .ok_or_else(|| format!("HPKE {name}: {x} is not hex"))
    };
    let given = v["inputs"]
        .as_object()
        .ok_or_else(|| format!("HPKE {name}: no inputs"))?;
    if let Some(k) = given.keys().find(|k| !name.inputs().contains(&k.as_str())) {
        return Err(format!("HPKE {name}: unknown input {k:?}"));
    }
    let inputs = name
        .inputs()
        .iter()
        .map(|k| match given.get(*k) {
            Some(x) => Ok((*k, bytes(x)?)),
            None => Err(format!("HPKE {name}: no input {k:?}")),
        })
        .collect::<Result<_, _>>()?;
    Ok(Some(HpkeStep {
        op,
        name,
        label: name.label(),
        suite_id: bytes(&v["suite_id"])?,
        inputs,
        output: bytes(&v["output"])?,
    }))
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

impl KeyTree {
    /// The tree of one endpoint's events.
    pub fn from_events(title: &str, events: &[Event]) -> KeyTree {
        let mut steps = Vec::new();
        let mut shared = Vec::new();
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
                Event::Connected(n) => suite = Some(n.suite.to_string()),
                _ => {}
            }
        }
        let (ech, transcript) = EchInputs::from_events(events);
        let mut t = KeyTree::build(title, suite, steps, shared, &transcript);
        t.ech = EchView::from_inputs(ech);
        t
    }

    /// The tree of a JSON file: a `--json` report written with `--show-secrets` (its
    /// `derivations`, `key_shares`, `messages`, `negotiated` and `events`), or an array of
    /// serialized [`Event`]s (or an object holding one under `events`). HPKE's steps among
    /// them, with the ClientHellos, ECH's outcome and the confirmations, give the tree its ECH
    /// part and the inner transcript, as events would.
    pub fn from_json(title: &str, text: &str) -> Result<KeyTree, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let mut steps = Vec::new();
        let mut shared = Vec::new();
        let mut ech = EchInputs::default();
        // (bytes, whether it is a ClientHelloInner), in the order reported.
        let mut messages: Vec<(Vec<u8>, bool)> = Vec::new();
        // A client's report says it at the top; a server's, in its `ech` event.
        let mut accepted = v["ech"].as_str() == Some("accepted");
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
        let derivation = |d: &Value, steps: &mut Vec<Step>, hpke: &mut Vec<HpkeStep>| {
            match hpke_step_from_json(d)? {
                Some(h) => hpke.push(h),
                None => steps.push(Step::from_json(d)?),
            }
            Ok::<_, String>(())
        };
        let report = v["derivations"].as_array();
        let events = match report {
            Some(ds) => {
                for d in ds {
                    derivation(d, &mut steps, &mut ech.steps)?;
                }
                let all = |k: &str| v[k].as_array().into_iter().flatten();
                shared.extend(all("key_shares").filter_map(share));
                for m in all("messages") {
                    messages.extend(message(m).map(|b| (b, m["ech_inner"] == true)));
                }
                v["events"].as_array()
            }
            None => v.as_array().or_else(|| v["events"].as_array()),
        };
        for e in events.into_iter().flatten() {
            match e["event"].as_str() {
                Some("derivation" | "hpke") => derivation(e, &mut steps, &mut ech.steps)?,
                Some("key_share") => shared.extend(share(e)),
                Some("handshake") => messages.extend(message(e).map(|b| (b, false))),
                Some("inner_client_hello") => messages.extend(message(e).map(|b| (b, true))),
                Some("connected") => suite = e["suite"].as_str().map(str::to_string),
                Some("ech_offer") => accepted |= e["outcome"] == "accepted",
                Some("ech") => accepted |= e["status"] == "accepted",
                Some("ech_confirmation") => ech.confirmations.push(Reported::from_json(e)?),
                _ => {}
            }
        }
        if steps.is_empty() {
            return Err(
                "no key-schedule steps in it (write the JSON with --show-secrets)".to_string(),
            );
        }
        let transcript = ech.take_messages(messages, accepted);
        let mut t = KeyTree::build(title, suite, steps, shared, &transcript);
        t.ech = EchView::from_inputs(ech);
        Ok(t)
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
}

/// Transcript hashes of every prefix of `messages` (handshake messages in order, post-handshake
/// ones skipped) under `alg`, with what each covers; ClientHello1 becomes `message_hash` after
/// a HelloRetryRequest (RFC 8446 §4.4.1). After the handshake (the second Finished) each
/// CertificateRequest starts its own context: the handshake's transcript followed by that
/// request and its answer alone (§4.4.1, §4.6.2).
fn transcript_contexts(messages: &[Vec<u8>], alg: HashAlg) -> Vec<(Vec<u8>, String)> {
    let mut t = Transcript::new();
    let mut out = Vec::new();
    let mut finished = 0;
    let mut handshake: Option<Transcript> = None;
    for m in messages {
        let Some(&typ) = m.first() else { continue };
        let typ = HandshakeType::from(typ);
        if matches!(
            typ,
            HandshakeType::NewSessionTicket | HandshakeType::KeyUpdate
        ) {
            continue;
        }
        if typ == HandshakeType::CertificateRequest {
            if let Some(h) = &handshake {
                t = h.clone();
            }
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
        if typ == HandshakeType::Finished {
            finished += 1;
            if finished == 2 {
                handshake = Some(t.clone());
            }
        }
    }
    out
}

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
    /// How many times the server asks for the client's certificate after the handshake
    /// (RFC 8446 §4.6.2); the client has one and offers post_handshake_auth when this is not 0.
    /// Each answer's Finished is keyed from client_application_traffic_secret_N over its own
    /// Handshake Context (§4.4.1).
    pub post_handshake_auth: u8,
    /// Encrypted ClientHello (RFC 9849): the server holds an ECH key made from the seed
    /// ([`crate::ech::key`]), the client seals ClientHelloInner to its config, and the
    /// server accepts it.
    pub ech: bool,
    /// The HPKE KEM of that ECH key: DHKEM(X25519) by default, or ML-KEM-768 / X-Wing
    /// (draft-ietf-hpke-pq), whose `enc` is a 1088- / 1120-byte ciphertext.
    pub ech_kem: tls13lab::crypto::hpke::Kem,
    /// The client sends no key share, so the server answers with a HelloRetryRequest naming
    /// its group (RFC 8446 §4.1.4, §4.2.8); with `ech`, the second ClientHelloOuter is sealed
    /// with the same HPKE context (RFC 9849 §6.1.5).
    pub hello_retry: bool,
}

impl InMemory {
    /// A full handshake between the demo's configurations ([`demo::server_config`] and
    /// [`demo::client_config`]) made from `seed`.
    pub fn demo(seed: u64) -> Result<InMemory, tls13lab::Error> {
        let (server, root) = demo::server_config(seed, demo::NOW_MS)?;
        Ok(InMemory {
            seed,
            client: demo::client_config(root),
            server,
            connection: Connection::Full,
            key_update: false,
            post_handshake_auth: 0,
            ech: false,
            ech_kem: tls13lab::crypto::hpke::Kem::X25519HkdfSha256,
            hello_retry: false,
        })
    }

    /// The server presents a chain made from the seed by [`crate::certgen::chain`], one
    /// algorithm per level, root first (`[MlDsa44, MlDsa44]`: an ML-DSA-44 root and leaf), for
    /// `localhost`; the client trusts its root.
    pub fn with_chain(mut self, levels: &[crate::certgen::KeyAlg]) -> Result<InMemory, String> {
        let spec = crate::certgen::ChainSpec {
            sans: vec!["localhost".into()],
            ..crate::certgen::ChainSpec::new(levels.to_vec())
        };
        let made = crate::certgen::chain(&spec, self.seed).map_err(|e| e.to_string())?;
        let key = tls13lab::crypto::sign::SigningKey::from_pkcs8_der(&made.key_pkcs8_der)
            .map_err(|e| e.to_string())?;
        self.server.cert = tls13lab::config::CertifiedKey {
            chain: made.certs_der,
            key: Arc::new(key),
        };
        self.client.verification = tls13lab::config::ServerVerification::Roots(vec![made.root_der]);
        Ok(self)
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
) -> Result<(Vec<Event>, Vec<Event>), tls13lab::Error> {
    // The explainer shows every derivation with its value: it asks for the secrets.
    let (mut client, mut server) = (o.client.clone(), o.server.clone());
    client.observe = tls13lab::events::Observe::ALL_WITH_SECRETS;
    server.observe = tls13lab::events::Observe::ALL_WITH_SECRETS;
    if o.post_handshake_auth > 0 {
        let (id, root) = demo::client_identity(o.seed, demo::NOW_MS)?;
        client.client_cert = Some(id);
        client.post_handshake_auth = Some(true);
        server.post_handshake_auth = tls13lab::config::ClientAuth::Required(vec![root]);
    }
    if o.ech {
        let key = crate::ech::key_for(o.seed, 1, o.ech_kem)?;
        client.ech = EchMode::offer(key.list.clone());
        server.ech_keys = vec![key];
    }
    if o.hello_retry {
        // RFC 8446 §4.2.8: an empty client_shares asks the server to pick the group.
        client.key_shares.clear();
    }
    let (client, server) = (Arc::new(client), Arc::new(server));
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
                let mut no_early = (*client).clone();
                no_early.enable_early_data = false;
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
        return Err(tls13lab::Error::InvalidState("handshake did not complete"));
    }
    if o.key_update {
        p.client.key_update(true)?;
        p.settle()?;
    }
    for _ in 0..o.post_handshake_auth {
        p.server.request_client_certificate(None)?;
        p.settle()?;
    }
    if let Some(label) = export {
        p.client.export(label, b"", 32)?;
        p.server.export(label, b"", 32)?;
    }
    p.client_events.extend(p.client.events());
    p.server_events.extend(p.server.events());
    if o.ech && !tls13lab::events::ech_accepted(&p.client_events) {
        return Err(tls13lab::Error::InvalidState("ECH was not accepted"));
    }
    Ok((p.client_events, p.server_events))
}

/// The key tree of an in-memory run, from `side`'s events.
pub fn in_memory_tree(o: &InMemory, side: Side, export: Option<&[u8]>) -> Result<KeyTree, String> {
    let (c, s) = in_memory(o, export).map_err(|e| e.to_string())?;
    let events = if side == Side::Client { c } else { s };
    Ok(KeyTree::from_events(&in_memory_title(o, side), &events))
}

/// What an in-memory run is, e.g. "an in-memory full handshake, seed 1, HelloRetryRequest
/// (client view)": the title of its tree and of its illustrated page.
pub fn in_memory_title(o: &InMemory, side: Side) -> String {
    let what = match o.connection {
        Connection::Full => "full handshake",
        Connection::Resumed => "resumed handshake",
        Connection::ZeroRtt => "resumed handshake with 0-RTT",
    };
    let mut title = format!("an in-memory {what}, seed {}", o.seed);
    if o.hello_retry {
        title.push_str(", HelloRetryRequest");
    }
    if o.ech {
        title.push_str(", ECH accepted");
    }
    if o.key_update {
        title.push_str(", KeyUpdate");
    }
    match o.post_handshake_auth {
        0 => {}
        1 => title.push_str(", post-handshake authentication"),
        n => {
            let _ = write!(title, ", post-handshake authentication ×{n}");
        }
    }
    let _ = write!(title, " ({} view)", side_name(side));
    title
}

/// The key tree of RFC 8448 section `n` (3 to 7) replayed through our `side`; with `export`,
/// it then computes a 32-byte TLS-Exporter value under that label.
pub fn rfc8448(n: u8, side: Side, export: Option<&[u8]>) -> Result<KeyTree, String> {
    let events = crate::rfc8448::replay_section(n, side, export).map_err(|e| e.to_string())?;
    Ok(KeyTree::from_events(&rfc8448_title(n, side)?, &events))
}

/// "RFC 8448 §3 Simple 1-RTT Handshake (client view)": the title of a replay's tree and page.
pub fn rfc8448_title(n: u8, side: Side) -> Result<String, String> {
    let sec = crate::rfc8448::Section::new(n).map_err(|e| e.to_string())?;
    Ok(format!(
        "RFC 8448 §{n} {} ({} view)",
        sec.title(),
        side_name(side)
    ))
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
    fn post_handshake_authentication_has_a_context_per_request() {
        let o = InMemory {
            post_handshake_auth: 2,
            ..InMemory::demo(3).unwrap()
        };
        let (client, server) = in_memory(&o, None).unwrap();
        for (side, events) in [(Side::Client, client), (Side::Server, server)] {
            let t = KeyTree::from_events("pha", &events);
            let fin: Vec<&Node> = t
                .nodes
                .iter()
                .filter(|n| {
                    n.step.name == "verify_data"
                        && n.parent.is_some_and(|p| {
                            t.nodes[p].parent.is_some_and(|g| {
                                t.nodes[g].step.name == "client_application_traffic_secret_0"
                            })
                        })
                })
                .collect();
            assert_eq!(fin.len(), 2, "{side:?}: one Finished per request");
            // Each names its own context: the handshake, then its request and answer alone.
            for n in &fin {
                assert_eq!(
                    n.step.covers,
                    "ClientHello..client Finished + CertificateRequest..client CertificateVerify",
                    "{side:?}"
                );
            }
            assert_ne!(fin[0].step.output, fin[1].step.output);
            // A tree rebuilt from the messages alone (as from a ledger without covers) finds
            // each Finished's transcript hash among the contexts it computes.
            let messages: Vec<Vec<u8>> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Handshake(h) => Some(h.bytes.clone()),
                    _ => None,
                })
                .collect();
            let contexts = transcript_contexts(&messages, HashAlg::Sha256);
            for n in &fin {
                let h = n.step.transcript_hash().unwrap();
                assert!(contexts.iter().any(|(c, _)| c == h), "{side:?}");
            }
        }
        let t = in_memory_tree(&o, Side::Client, None).unwrap();
        assert!(t.title.contains("post-handshake authentication ×2"));
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
        psk_ke.client.psk_modes = vec![tls13lab::messages::enums::PskKeyExchangeMode::PskKe];
        let t = in_memory_tree(&psk_ke, Side::Client, None).unwrap();
        assert!(t.shared.is_empty());
        let text = t.text(false);
        assert!(text.contains("(EC)DHE/KEM shared secret    none: Hash.length zero bytes"));
        assert!(
            text.contains("handshake_secret = HKDF-Extract(salt: derived_for_handshake, IKM: 0)")
        );
    }
}
