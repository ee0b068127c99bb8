//! The key tree's types: a [`Step`] as reported, the [`Node`] it becomes, the tree's inputs
//! ([`SharedSecret`], [`Ikm`]) and the [`KeyTree`] itself.

use tls13lab::crypto::hash::HashAlg;
use tls13lab::keyschedule::DerivationOp;

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
    pub(super) fn transcript_hash(&self) -> Option<&[u8]> {
        match self.op {
            DerivationOp::DeriveSecret => self.input("context"),
            DerivationOp::Hmac => self.input("hash"),
            _ => None,
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

/// A connection's key schedule as a tree (see the [module docs](super)).
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
    /// Encrypted ClientHello's HPKE steps, Seals and confirmations, when the events have them.
    pub ech: Option<super::EchView>,
}

impl KeyTree {
    /// The hash function of the schedule.
    pub fn hash(&self) -> Option<HashAlg> {
        self.nodes.iter().find_map(|n| n.step.hash)
    }
}
