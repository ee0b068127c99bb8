//! Encrypted ClientHello in the explainer (RFC 9849): the ECHConfig, HPKE's steps, each
//! ClientHelloOuter's Seal, and the acceptance confirmations, as one endpoint's events report
//! them ([`EchView`]). `tls13lab keys --ech` prints this above the TLS key schedule.
//!
//! Nothing here is recomputed from scratch: the steps, the payloads and the confirmations are
//! the run's. What the events do not carry is derived from what they do, and checked against
//! it: the Seal's nonce comes from base_nonce and the payload is opened with the context's key
//! (so a wrong key, nonce or AAD shows as "does not open"), and HKDF-Extract(0,
//! ClientHelloInner.random) is redone so that its Expand can be compared with the reported
//! confirmation.

use std::fmt::Write as _;

use tls13lab::crypto::aead::{AeadKey, NONCE_LEN};
use tls13lab::crypto::hash::HashAlg;
use tls13lab::crypto::hpke::{Aead, HpkeStep, HpkeValue};
use tls13lab::ech::confirm::{self, ACCEPT_LABEL, HRR_ACCEPT_LABEL};
use tls13lab::ech::inner;
use tls13lab::ech::wire::EchClientHello;
use tls13lab::events::{hex, Event};
use tls13lab::keyschedule::hkdf;
use tls13lab::messages::codec::Reader;
use tls13lab::messages::ech::{EchConfig, EchConfigBody};
use tls13lab::messages::enums::{HandshakeType, HpkeAeadId};
use tls13lab::messages::handshake::HRR_RANDOM;

/// One ClientHelloOuter's sealed ClientHelloInner (RFC 9849 §6.1.1, RFC 9180 §5.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seal {
    /// The HPKE sequence number: 0 for the first ClientHello, 1 after a HelloRetryRequest.
    pub seq: u64,
    /// ECHClientHello.config_id.
    pub config_id: u8,
    /// ECHClientHello.cipher_suite's AEAD.
    pub aead: HpkeAeadId,
    /// The encapsulated key; empty in the second ClientHelloOuter (§6.1.5).
    pub enc: Vec<u8>,
    /// ClientHelloOuterAAD: the outer ClientHello body with the payload zeroed (§5.2).
    pub aad: Vec<u8>,
    /// The payload on the wire: Seal(key, nonce, aad, EncodedClientHelloInner).
    pub payload: Vec<u8>,
    /// ComputeNonce(seq) = base_nonce XOR I2OSP(seq, Nn), when base_nonce was reported.
    pub nonce: Option<[u8; NONCE_LEN]>,
    /// EncodedClientHelloInner, if the payload opens with the context's key, that nonce and
    /// the AAD.
    pub opened: Option<Vec<u8>>,
}

/// One acceptance confirmation (RFC 9849 §7.2, §7.2.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confirmation {
    /// `"ech accept confirmation"` or `"hrr ech accept confirmation"`.
    pub label: String,
    /// The transcript hash (the handshake's suite's).
    pub hash: HashAlg,
    /// ClientHelloInner.random.
    pub inner_random: Vec<u8>,
    /// The inner transcript through the ServerHello or HelloRetryRequest with its confirmation
    /// bytes zeroed.
    pub transcript_hash: Vec<u8>,
    /// HKDF-Extract(0, ClientHelloInner.random).
    pub prk: Vec<u8>,
    /// The eight bytes the endpoint computed.
    pub confirmation: Vec<u8>,
    /// Whether HKDF-Expand-Label(prk, label, transcript_hash, 8) gives `confirmation`.
    pub derivation_checks: bool,
    /// The eight bytes where the server put them: ServerHello.random[24..32] or the
    /// HelloRetryRequest's `encrypted_client_hello`.
    pub on_wire: Option<Vec<u8>>,
}

impl Confirmation {
    /// Whether it is the HelloRetryRequest's (§7.2.1).
    pub fn is_hrr(&self) -> bool {
        self.label == HRR_ACCEPT_LABEL
    }
}

/// The ECH part of one endpoint's events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchView {
    /// The ECHConfig the HPKE context was set up with (read back from HPKE's info).
    pub config: Option<EchConfig>,
    /// The HPKE steps: the client's DeriveKeyPair, Encap and KeySchedule; the server's Decap
    /// and KeySchedule.
    pub steps: Vec<HpkeStep>,
    /// One per ClientHelloOuter with an outer-type `encrypted_client_hello`.
    pub seals: Vec<Seal>,
    /// In the order computed: the HelloRetryRequest's, then the ServerHello's.
    pub confirmations: Vec<Confirmation>,
    /// ClientHelloInner's length (header included), one per inner hello.
    pub inner_lens: Vec<usize>,
}

/// What an [`EchView`] is made of, gathered from one endpoint's events or from a JSON report
/// ([`super::KeyTree::from_json`]).
#[derive(Clone, Debug, Default)]
pub(super) struct EchInputs {
    /// The HPKE steps, in order.
    pub steps: Vec<HpkeStep>,
    /// Each ClientHello(Outer) as sent, header included.
    pub hellos: Vec<Vec<u8>>,
    /// Each ServerHello and HelloRetryRequest, header included.
    pub server_hellos: Vec<Vec<u8>>,
    /// Each confirmation as the endpoint reported it.
    pub confirmations: Vec<Reported>,
    /// ClientHelloInner's length (header included), one per inner hello.
    pub inner_lens: Vec<usize>,
}

impl EchInputs {
    /// The ECH part of one endpoint's events, and the handshake messages its transcript
    /// hashes ([`EchInputs::take_messages`]).
    pub(super) fn from_events(events: &[Event]) -> (EchInputs, Vec<Vec<u8>>) {
        let mut x = EchInputs::default();
        let mut messages = Vec::new();
        for e in events {
            match e {
                Event::Hpke(s) => x.steps.push(s.clone()),
                Event::Handshake(h) => messages.push((h.bytes.clone(), false)),
                Event::InnerClientHello(h) => messages.push((h.bytes.clone(), true)),
                Event::EchConfirmation {
                    label,
                    inner_random,
                    transcript_hash,
                    confirmation,
                } => x.confirmations.push(Reported {
                    label: label.to_string(),
                    inner_random: inner_random.clone(),
                    transcript_hash: transcript_hash.clone(),
                    confirmation: confirmation.clone(),
                }),
                _ => {}
            }
        }
        let transcript = x.take_messages(messages, tls13lab::events::ech_accepted(events));
        (x, transcript)
    }

    /// Takes the ClientHellos, ServerHellos and inner hellos of `messages` (each with whether it
    /// is a ClientHelloInner, in any order between inner and outer) and returns the messages
    /// the TLS transcript hashes: once ECH is accepted that is ClientHelloInner's, the i-th
    /// inner hello standing in for the i-th outer one (RFC 9849 §6.1.4, §7.2).
    pub(super) fn take_messages(
        &mut self,
        messages: Vec<(Vec<u8>, bool)>,
        accepted: bool,
    ) -> Vec<Vec<u8>> {
        let (inner, outer): (Vec<_>, Vec<_>) = messages.into_iter().partition(|(_, i)| *i);
        self.inner_lens = inner.iter().map(|(b, _)| b.len()).collect();
        let mut inner = inner.into_iter().filter(|_| accepted).map(|(b, _)| b);
        let mut transcript = Vec::new();
        for (bytes, _) in outer {
            match bytes.first().map(|t| HandshakeType::from(*t)) {
                Some(HandshakeType::ClientHello) => {
                    self.hellos.push(bytes.clone());
                    transcript.push(inner.next().unwrap_or(bytes));
                }
                Some(HandshakeType::ServerHello) => {
                    self.server_hellos.push(bytes.clone());
                    transcript.push(bytes);
                }
                _ => transcript.push(bytes),
            }
        }
        transcript
    }
}

/// One confirmation as an endpoint reported it ([`Event::EchConfirmation`]).
#[derive(Clone, Debug)]
pub(super) struct Reported {
    pub label: String,
    pub inner_random: Vec<u8>,
    pub transcript_hash: Vec<u8>,
    pub confirmation: Vec<u8>,
}

impl Reported {
    /// An `ech_confirmation` event as serialized; its label must be one of RFC 9849's two.
    pub(super) fn from_json(e: &serde_json::Value) -> Result<Reported, String> {
        let label = e["label"].as_str().unwrap_or_default();
        if label != ACCEPT_LABEL && label != HRR_ACCEPT_LABEL {
            return Err(format!(
                "ech_confirmation: label {:?} is not RFC 9849's",
                e["label"]
            ));
        }
        let field = |k: &str| {
            e[k].as_str()
                .and_then(tls13lab::ledger::unhex)
                .ok_or_else(|| format!("ech_confirmation: {k} is not hex"))
        };
        Ok(Reported {
            label: label.to_string(),
            inner_random: field("inner_random")?,
            transcript_hash: field("transcript_hash")?,
            confirmation: field("confirmation")?,
        })
    }
}

impl EchView {
    /// Whether the server accepted: the ServerHello carries the confirmation (RFC 9849 §7.2).
    pub fn accepted(&self) -> bool {
        self.confirmations
            .iter()
            .any(|c| !c.is_hrr() && c.on_wire.as_ref() == Some(&c.confirmation))
    }

    /// The ECH part of `events`, or `None` if they hold no HPKE step (no ECH, GREASE, or
    /// secrets not observed).
    pub fn from_events(events: &[Event]) -> Option<EchView> {
        EchView::from_inputs(EchInputs::from_events(events).0)
    }

    /// The view of `x`, or `None` if it holds no HPKE step.
    pub(super) fn from_inputs(x: EchInputs) -> Option<EchView> {
        let EchInputs {
            steps,
            hellos,
            server_hellos,
            confirmations,
            inner_lens,
        } = x;
        if steps.is_empty() {
            return None;
        }
        let config = steps
            .iter()
            .find(|s| s.name == HpkeValue::InfoHash)
            .and_then(|s| s.inputs.iter().find(|(k, _)| *k == "ikm"))
            .and_then(|(_, info)| info.strip_prefix(tls13lab::ech::INFO_PREFIX))
            .and_then(|raw| EchConfig::decode(&mut Reader::new(raw)).ok());
        let output = |v: HpkeValue| {
            steps
                .iter()
                .rev()
                .find(|s| s.name == v)
                .map(|s| s.output.clone())
        };
        let (key, base_nonce) = (output(HpkeValue::Key), output(HpkeValue::BaseNonce));
        let seals = hellos
            .iter()
            .filter_map(|m| seal_of(m))
            .enumerate()
            .map(|(seq, mut s)| {
                s.seq = seq as u64;
                s.nonce = base_nonce.as_deref().and_then(|n| nonce(n, s.seq));
                s.opened = open(&s, key.as_deref());
                s
            })
            .collect();
        let hrr = server_hellos
            .iter()
            .find(|m| m.get(6..38) == Some(&HRR_RANDOM[..]));
        let sh = server_hellos
            .iter()
            .find(|m| m.get(6..38) != Some(&HRR_RANDOM[..]));
        let confirmations = confirmations
            .into_iter()
            .map(|r| {
                let Reported {
                    label,
                    inner_random: random,
                    transcript_hash: th,
                    confirmation: c,
                } = r;
                let hash = if th.len() == HashAlg::Sha384.output_len() {
                    HashAlg::Sha384
                } else {
                    HashAlg::Sha256
                };
                let prk = hkdf::extract(hash, &[], &random).as_ref().to_vec();
                let derivation_checks = hkdf::expand_label(hash, &prk, &label, &th, 8)
                    .is_ok_and(|v| v.as_slice() == c.as_slice());
                let on_wire = if label == HRR_ACCEPT_LABEL {
                    hrr.and_then(|m| Some(m.get(confirm::hrr_range(m)?)?.to_vec()))
                } else {
                    sh.and_then(|m| m.get(confirm::server_hello_range()))
                        .map(<[u8]>::to_vec)
                };
                Confirmation {
                    label,
                    hash,
                    inner_random: random,
                    transcript_hash: th,
                    prk,
                    confirmation: c,
                    derivation_checks,
                    on_wire,
                }
            })
            .collect();
        Some(EchView {
            config,
            steps,
            seals,
            confirmations,
            inner_lens,
        })
    }

    /// The ECH section above the key schedule: the ECHConfig, HPKE's steps ([`super::hpke_text`]),
    /// each Seal, and the confirmations; with `explain`, one sentence per value with its RFC 9849
    /// or RFC 9180 section.
    pub fn text(&self, explain: bool) -> String {
        let mut out = String::from("Encrypted ClientHello (RFC 9849); values in hex\n\n");
        let line = |out: &mut String, k: &str, v: &str| {
            let _ = writeln!(out, "  {k:<20} {v}");
        };
        let why = |out: &mut String, text: &str| {
            if explain {
                let _ = writeln!(out, "  {:<20} {text}", "why");
            }
        };
        out.push_str("ECHConfig (RFC 9849 §4)\n");
        match self.config.as_ref().map(|c| (c, &c.body)) {
            Some((c, EchConfigBody::Contents(cc))) => {
                let k = &cc.key_config;
                line(&mut out, "config_id", &k.config_id.to_string());
                line(&mut out, "kem_id", &k.kem_id.to_string());
                let suites: Vec<String> = k
                    .cipher_suites
                    .iter()
                    .map(|s| format!("{}/{}", s.kdf_id, s.aead_id))
                    .collect();
                line(&mut out, "cipher_suites", &suites.join(", "));
                line(
                    &mut out,
                    "public_name",
                    &String::from_utf8_lossy(&cc.public_name),
                );
                if k.public_key.len() > 64 {
                    // A post-quantum KEM's key (ML-KEM-768: 1184 bytes, X-Wing: 1216).
                    let n = k.public_key.len();
                    line(&mut out, "public_key", &format!("{n} bytes"));
                    for chunk in k.public_key.chunks(32) {
                        line(&mut out, "", &hex(chunk));
                    }
                } else {
                    line(&mut out, "public_key", &hex(&k.public_key));
                }
                line(
                    &mut out,
                    "maximum_name_length",
                    &cc.maximum_name_length.to_string(),
                );
                line(&mut out, "ECHConfig", &hex(&c.raw));
                why(
                    &mut out,
                    "The server's published key: the client seals to public_key, sends \
                     public_name as the outer SNI, and binds the whole ECHConfig into HPKE's \
                     info = \"tls ech\" ‖ 0x00 ‖ ECHConfig (RFC 9849 §4, §6.1).",
                );
            }
            _ => line(&mut out, "", "not found in HPKE's info"),
        }
        out.push('\n');
        out.push_str(&super::hpke_text(&self.steps, explain));
        for s in &self.seals {
            out.push('\n');
            self.seal_text(&mut out, s, explain);
        }
        for c in &self.confirmations {
            out.push('\n');
            let after_hrr = !c.is_hrr() && self.confirmations.iter().any(Confirmation::is_hrr);
            confirmation_text(&mut out, c, after_hrr, explain);
        }
        out
    }

    fn seal_text(&self, out: &mut String, s: &Seal, explain: bool) {
        let line = |out: &mut String, k: &str, v: &str| {
            let _ = writeln!(out, "    {k:<8} {v}");
        };
        let which = if s.seq == 0 {
            "ClientHelloOuter"
        } else {
            "ClientHelloOuter after HelloRetryRequest"
        };
        let _ = writeln!(
            out,
            "{which}: payload = Seal(key, nonce, aad, EncodedClientHelloInner) (RFC 9849 §6.1.1, RFC 9180 §5.2)"
        );
        let _ = writeln!(out, "  config_id {}, seq {}", s.config_id, s.seq);
        let _ = writeln!(out, "nonce = base_nonce XOR I2OSP(seq, {NONCE_LEN})");
        match &s.nonce {
            Some(n) => line(out, "value", &hex(n)),
            None => line(out, "value", "base_nonce not reported"),
        }
        if explain {
            line(
                out,
                "why",
                if s.seq == 0 {
                    "The first message of the context uses base_nonce itself (RFC 9180 §5.2)."
                } else {
                    "The second ClientHelloOuter is sealed with the same context, so its \
                     sequence number is 1 and its nonce differs from the first in the last \
                     byte (RFC 9849 §6.1.5, RFC 9180 §5.2)."
                },
            );
        }
        if s.enc.is_empty() {
            let _ = writeln!(out, "enc");
            line(out, "value", "empty");
        } else {
            let _ = writeln!(out, "enc, {} bytes", s.enc.len());
            wrapped(out, "value", &s.enc);
        }
        if explain {
            line(
                out,
                "why",
                if s.enc.is_empty() {
                    "After a HelloRetryRequest enc is empty: the server reuses the context the \
                     first ClientHello set up (RFC 9849 §6.1.5, §7.1.1)."
                } else {
                    "The KEM's encapsulated key, which lets the server decapsulate the shared \
                     secret: DHKEM's ephemeral public key pkE, or a post-quantum KEM's \
                     ciphertext (RFC 9180 §4.1, draft-ietf-hpke-pq, RFC 9849 §5)."
                },
            );
        }
        let _ = writeln!(
            out,
            "aad = ClientHelloOuterAAD, {} bytes: ClientHelloOuter with the payload zeroed",
            s.aad.len()
        );
        wrapped(out, "value", &s.aad);
        if explain {
            line(
                out,
                "why",
                "The AAD is the outer ClientHello with the payload's bytes set to zero, so the \
                 whole outer hello is authenticated and cannot be changed without the inner one \
                 failing to open (RFC 9849 §5.2).",
            );
        }
        let tag = Aead::from_id(s.aead).map_or(0, Aead::tag_len);
        let _ = writeln!(
            out,
            "payload, {} bytes: EncodedClientHelloInner sealed, with a {tag}-byte tag",
            s.payload.len(),
        );
        wrapped(out, "value", &s.payload);
        match &s.opened {
            Some(p) => {
                let inner = self
                    .inner_lens
                    .get(s.seq as usize)
                    .map_or(String::new(), |l| {
                        format!(" (ClientHelloInner is {l} bytes with its header)")
                    });
                line(
                    out,
                    "opens",
                    &format!(
                        "with key, nonce and aad: EncodedClientHelloInner, {} bytes{inner}",
                        p.len()
                    ),
                );
                wrapped(out, "", p);
            }
            None => line(
                out,
                "opens",
                "no: key, nonce or aad does not fit the payload",
            ),
        }
        if explain {
            line(
                out,
                "why",
                "EncodedClientHelloInner is ClientHelloInner without its header and session id, \
                 with the extensions it shares with the outer hello replaced by \
                 ech_outer_extensions, zero-padded so its length does not reveal the inner \
                 name (RFC 9849 §5.1, §6.1.3).",
            );
        }
    }
}

fn confirmation_text(out: &mut String, c: &Confirmation, after_hrr: bool, explain: bool) {
    let line = |out: &mut String, k: &str, v: &str| {
        let _ = writeln!(out, "    {k:<16} {v}");
    };
    let (title, covers, name, th, random) = if c.is_hrr() {
        (
            "HelloRetryRequest confirmation (RFC 9849 §7.2.1)",
            "message_hash(ClientHelloInner1), HelloRetryRequest with the extension's 8 bytes zeroed",
            "hrr_accept_confirmation",
            "transcript_hrr_ech_conf",
            "ClientHelloInner1.random",
        )
    } else if after_hrr {
        (
            "Acceptance confirmation (RFC 9849 §7.2)",
            "message_hash, HelloRetryRequest, ClientHelloInner2, ServerHello with random[24..32] zeroed",
            "accept_confirmation",
            "transcript_ech_conf",
            "ClientHelloInner.random",
        )
    } else {
        (
            "Acceptance confirmation (RFC 9849 §7.2)",
            "ClientHelloInner, ServerHello with random[24..32] zeroed",
            "accept_confirmation",
            "transcript_ech_conf",
            "ClientHelloInner.random",
        )
    };
    let _ = writeln!(out, "{title}; {}", c.hash.name());
    let _ = writeln!(out, "{th} = Transcript-Hash({covers})");
    line(out, "value", &hex(&c.transcript_hash));
    if explain {
        line(
            out,
            "why",
            if c.is_hrr() {
                "The inner transcript up to the HelloRetryRequest, ClientHelloInner1 replaced by \
                 message_hash as RFC 8446 §4.4.1 does, with the confirmation bytes as zeros, \
                 since they cannot cover themselves (RFC 9849 §7.2.1)."
            } else {
                "The inner transcript, as RFC 8446 §4.4.1 computes it, through a ServerHello \
                 whose last 8 random bytes are zero, since they cannot cover themselves \
                 (RFC 9849 §7.2)."
            },
        );
    }
    let _ = writeln!(out, "prk = HKDF-Extract(0, {random})");
    line(out, "random", &hex(&c.inner_random));
    line(out, "value", &hex(&c.prk));
    if explain {
        line(
            out,
            "why",
            "Only a server that decrypted ClientHelloInner knows its random, so only it can \
             derive this key (RFC 9849 §7.2).",
        );
    }
    let _ = writeln!(
        out,
        "{name} = HKDF-Expand-Label(prk, \"{}\", {th}, 8)",
        c.label
    );
    line(out, "value", &hex(&c.confirmation));
    if !c.derivation_checks {
        line(
            out,
            "check",
            "HKDF-Expand-Label of prk does NOT give this value",
        );
    }
    let place = if c.is_hrr() {
        "HelloRetryRequest encrypted_client_hello"
    } else {
        "ServerHello.random[24..32]"
    };
    match &c.on_wire {
        Some(w) if *w == c.confirmation => line(
            out,
            "on the wire",
            &format!("{} = {place}: ECH accepted", hex(w)),
        ),
        Some(w) => line(
            out,
            "on the wire",
            &format!("{} ≠ {place}: ECH rejected", hex(w)),
        ),
        None => line(out, "on the wire", &format!("no {place}")),
    }
    if explain {
        line(
            out,
            "why",
            if c.is_hrr() {
                "The server says it used ClientHelloInner in the HelloRetryRequest's \
                 encrypted_client_hello extension; the ServerHello must confirm again \
                 (RFC 9849 §7.2.1, §6.1.5)."
            } else {
                "The server says it used ClientHelloInner by overwriting the last 8 bytes of \
                 ServerHello.random; a client that finds other bytes there goes on with \
                 ClientHelloOuter (RFC 9849 §7.2, §6.1.4)."
            },
        );
    }
}

/// The outer `encrypted_client_hello` of a ClientHello message (header included), with its
/// AAD; `seq`, `nonce` and `opened` are filled in by the caller.
fn seal_of(msg: &[u8]) -> Option<Seal> {
    let body = msg.get(4..)?;
    let EchClientHello::Outer {
        config_id,
        enc,
        payload,
        suite,
    } = inner::outer_extension(body)?
    else {
        return None;
    };
    Some(Seal {
        seq: 0,
        config_id,
        aead: suite.aead_id,
        enc,
        aad: inner::aad(body).ok()?,
        payload,
        nonce: None,
        opened: None,
    })
}

/// ComputeNonce(seq) (RFC 9180 §5.2) of a base_nonce from the HPKE steps.
fn nonce(base_nonce: &[u8], seq: u64) -> Option<[u8; NONCE_LEN]> {
    Some(tls13lab::crypto::hpke::compute_nonce(
        base_nonce.try_into().ok()?,
        seq.into(),
    ))
}

/// Opens `s.payload` with `key`, its nonce and AAD, under the extension's AEAD.
fn open(s: &Seal, key: Option<&[u8]>) -> Option<Vec<u8>> {
    let alg = Aead::from_id(s.aead)?.alg()?;
    let k = AeadKey::new(alg, key?).ok()?;
    let mut buf = s.payload.clone();
    k.open_in_place(&s.nonce?, &s.aad, &mut buf).ok()?;
    Some(buf)
}

/// `bytes` in hex, 32 bytes a line, under the value column.
fn wrapped(out: &mut String, key: &str, bytes: &[u8]) {
    for (i, chunk) in bytes.chunks(32).enumerate() {
        let k = if i == 0 { key } else { "" };
        let _ = writeln!(out, "    {k:<8} {}", hex(chunk));
    }
    if bytes.is_empty() {
        let _ = writeln!(out, "    {key:<8} empty");
    }
}

#[cfg(test)]
mod tests {
    use super::super::{in_memory, InMemory, KeyTree};
    use tls13lab::crypto::hpke::{HpkeOp, Kem};
    use tls13lab::events::{hex, Event};

    /// The KEM's step (draft-ietf-hpke-pq: Encap's or Decap's shared secret) of one side.
    fn kem_step(events: &[Event]) -> tls13lab::crypto::hpke::HpkeStep {
        events
            .iter()
            .find_map(|e| match e {
                Event::Hpke(s) if s.op == HpkeOp::Kem => Some(s.clone()),
                _ => None,
            })
            .expect("a KEM step")
    }

    /// ECH with an ML-KEM-768 and an X-Wing config: the text shows the KEM's enc (its
    /// ciphertext, Nenc bytes) and shared secret, and the key schedule over it, with the
    /// seeded run's values; the payload opens with that key.
    #[test]
    fn post_quantum_ech_shows_the_kem_and_the_schedule_over_it() {
        for kem in [Kem::MlKem768, Kem::XWing] {
            let run = InMemory {
                ech: true,
                ech_kem: kem,
                ..InMemory::demo(1).unwrap()
            };
            let (client, server) = in_memory(&run, None).unwrap();
            assert!(tls13lab::events::ech_accepted(&client));
            let tree = KeyTree::from_events("pq ech", &client);
            let ech = tree.ech.as_ref().unwrap();
            let text = tree.text(true);
            let (c, s) = (kem_step(&client), kem_step(&server));
            // Decap gives the server the client's Encap secret.
            assert_eq!(c.output, s.output);
            let enc = &c.inputs.iter().find(|(k, _)| *k == "enc").unwrap().1;
            assert_eq!(enc.len(), kem.enc_len());
            assert_eq!(&ech.seals[0].enc, enc);
            assert!(ech.seals[0].opened.is_some(), "the payload opens");
            let name = kem.id().to_string();
            for needle in [
                format!("Encap / Decap: {name}, a KEM"),
                format!("    enc      {} bytes\n", enc.len()),
                format!("    value    {}\n", hex(&c.output)),
                format!("enc, {} bytes\n", enc.len()),
                "draft-ietf-hpke-pq".to_string(),
            ] {
                assert!(text.contains(&needle), "{kem:?}: no {needle:?} in\n{text}");
            }
            // Every step of the schedule after the KEM's, with its value.
            for st in client.iter().filter_map(|e| match e {
                Event::Hpke(s) if s.op != HpkeOp::Kem => Some(s),
                _ => None,
            }) {
                assert!(text.contains(&format!("{} = ", st.name)), "{}", st.name);
                assert!(text.contains(&hex(&st.output)), "{}", st.name);
            }
            // The enc's bytes, a line at a time.
            assert!(text.contains(&hex(&enc[enc.len() - 32..])));
        }
    }
}
