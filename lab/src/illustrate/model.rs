//! The page's model: one endpoint's events read into records (their wire bytes rebuilt as
//! [`crate::pcap::wire_records`] rebuilds them), the handshake messages each record carries, the
//! key and nonce that protected it, and the key tree of [`crate::explain`].

use tls13lab::crypto::aead::{suite_params, SuiteParams, NONCE_LEN};
use tls13lab::events::{Direction, Epoch, Event, HandshakeEvent, KeyShareEvent, RecordEvent};
use tls13lab::keylog::{self, KeyLog};
use tls13lab::keyschedule::hkdf::expand_label;
use tls13lab::ledger::Ledger;
use tls13lab::messages::enums::{ContentType, HandshakeType};
use tls13lab::messages::handshake::{DecodeContext, HandshakeMessage, HandshakePayload};
use tls13lab::messages::layout::{check_tiling, Span};
use tls13lab::transcript_reader::Negotiating;

use crate::explain::KeyTree;

/// One connection, read for the page.
#[derive(Clone, Debug)]
pub struct Illustrated {
    /// What connection this is.
    pub title: String,
    /// The records in the order the observing endpoint saw them.
    pub records: Vec<Record>,
    /// The handshake messages, per direction in order.
    pub messages: Vec<Message>,
    /// The key schedule (from the derivations).
    pub tree: KeyTree,
    /// The ledger of the same events (the ladder is drawn from it).
    pub ledger: Ledger,
    /// The key exchanges, component by component.
    pub shares: Vec<KeyShareEvent>,
    /// The ClientHelloInner of each ClientHelloOuter, in order, when the events carry it (RFC
    /// 9849: the client sealed it, the server opened it); `records` is empty, it never crossed
    /// the wire as such.
    pub inner_hellos: Vec<Message>,
    /// For each CompressedCertificate in `messages` (by index), the Certificate message it
    /// decompresses to (RFC 8879 §4), with its certificates split; not bytes of any record.
    pub decompressed: Vec<(usize, Message)>,
    /// The negotiated suite's parameters, once a ServerHello was seen.
    pub suite: Option<SuiteParams>,
    /// What could not be shown, in words.
    pub notes: Vec<String>,
}

/// One record.
#[derive(Clone, Debug)]
pub struct Record {
    /// 1-based position (the ledger's index; the page's `rec-N` anchor).
    pub index: usize,
    /// The record as reported.
    pub event: RecordEvent,
    /// Header and payload as on the wire.
    pub wire: Vec<u8>,
    /// The keys of a protected record.
    pub protection: Option<Protection>,
    /// The handshake messages (or pieces of them) its content carries, in order.
    pub parts: Vec<Part>,
}

impl Record {
    /// TLSInnerPlaintext (content ‖ type ‖ zeros) of a protected record, or `None`.
    pub fn inner_plaintext(&self) -> Option<Vec<u8>> {
        self.event.seq?;
        let mut v = self.event.content.clone();
        v.push(u8::from(self.event.inner_type));
        v.resize(v.len() + self.event.padding_len, 0);
        Some(v)
    }
}

/// A piece of a handshake message inside one record's content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// Index into [`Illustrated::messages`].
    pub message: usize,
    /// Where the piece starts in the message.
    pub msg_off: usize,
    /// Where it starts in the record's content.
    pub content_off: usize,
    /// Its length.
    pub len: usize,
}

/// A handshake message.
#[derive(Clone, Debug)]
pub struct Message {
    /// As reported.
    pub event: HandshakeEvent,
    /// Its layout, checked to tile the message (hybrid shares split into their components).
    pub layout: Option<Vec<Span>>,
    /// The records that carry it (1-based indexes).
    pub records: Vec<usize>,
}

/// What protected a record (RFC 8446 §5.2, §5.3, §7.3).
#[derive(Clone, Debug)]
pub struct Protection {
    /// AEAD algorithm name.
    pub aead: &'static str,
    /// The traffic secret's name, e.g. `server_handshake_traffic_secret`.
    pub secret_name: String,
    /// The secret.
    pub secret: Vec<u8>,
    /// Its node in the key tree.
    pub secret_node: Option<usize>,
    /// write_key.
    pub key: Vec<u8>,
    /// Its node in the key tree (`None`: derived here from the secret).
    pub key_node: Option<usize>,
    /// write_iv.
    pub iv: Vec<u8>,
    /// Its node in the key tree.
    pub iv_node: Option<usize>,
    /// The record's sequence number.
    pub seq: u64,
    /// iv ⊕ the sequence number, left-padded to the IV's length.
    pub nonce: Vec<u8>,
    /// The additional data: the record header.
    pub aad: Vec<u8>,
}

/// The name of the traffic secret protecting `epoch` in `direction` (as the key schedule names
/// it), or `None` for plaintext.
pub fn secret_name(direction: Direction, epoch: Epoch) -> Option<String> {
    let who = match direction {
        Direction::ClientToServer => "client",
        Direction::ServerToClient => "server",
    };
    Some(match epoch {
        Epoch::Plaintext => return None,
        Epoch::Early => "client_early_traffic_secret".to_string(),
        Epoch::Handshake => format!("{who}_handshake_traffic_secret"),
        Epoch::Application(n) => format!("{who}_application_traffic_secret_{n}"),
    })
}

/// The per-record nonce: iv with the 64-bit sequence number XORed into its end (RFC 8446 §5.3).
pub fn nonce(iv: &[u8], seq: u64) -> Vec<u8> {
    let mut n = iv.to_vec();
    let len = n.len();
    for (i, b) in seq.to_be_bytes().iter().enumerate() {
        if let Some(x) = (len + i).checked_sub(8).and_then(|j| n.get_mut(j)) {
            *x ^= b;
        }
    }
    n
}

impl Illustrated {
    /// Reads one endpoint's events (records, handshake messages with layouts, derivations and
    /// secrets: [`tls13lab::events::Observe::ALL_WITH_SECRETS`]).
    pub fn from_events(title: &str, events: &[Event]) -> Result<Illustrated, String> {
        Illustrated::from_events_with_keys(title, events, None)
    }

    /// As [`Illustrated::from_events`], for events that carry no secrets (a connection
    /// dissected from a capture): `keys` is the key log and the client random its lines are
    /// under. Messages reported without a layout get the one found by decoding their bytes.
    pub fn from_events_with_keys(
        title: &str,
        events: &[Event],
        keys: Option<(&KeyLog, &[u8])>,
    ) -> Result<Illustrated, String> {
        let wire = crate::pcap::wire_records_with_keys(events, keys)?;
        let tree = KeyTree::from_events(title, events);
        let ledger = Ledger::from_events(events);
        let suite = Negotiating::from_events(events)
            .suite()
            .and_then(suite_params);
        let (log, random) = crate::pcap::traffic_keys(events, keys);
        let hash_len = suite.map_or(0, |s| s.hash.output_len());
        let shares: Vec<KeyShareEvent> = events
            .iter()
            .filter_map(|e| match e {
                Event::KeyShare(k) => Some(k.clone()),
                _ => None,
            })
            .collect();
        let mut notes = Vec::new();
        let mut records = Vec::new();
        let rec_events = events.iter().filter_map(|e| match e {
            Event::Record(r) => Some(r),
            _ => None,
        });
        for (i, (r, w)) in rec_events.zip(wire).enumerate() {
            let protection = match r.seq {
                None => None,
                Some(seq) => {
                    let p = protection(&tree, suite, &log, random.as_deref(), r, seq);
                    if p.is_none() {
                        notes.push(format!("record #{}: no secret for its keys", i + 1));
                    }
                    p
                }
            };
            records.push(Record {
                index: i + 1,
                event: r.clone(),
                wire: w.bytes,
                protection,
                parts: Vec::new(),
            });
        }
        let message = |h: &HandshakeEvent| Message {
            layout: h
                .layout
                .clone()
                .or_else(|| {
                    HandshakeMessage::decode(&h.bytes, DecodeContext { hash_len })
                        .ok()
                        .map(|m| m.layout())
                })
                .filter(|l| check_tiling(l, h.bytes.len()).is_ok())
                .map(|mut l| {
                    split_shares(&mut l, &h.bytes, h.direction, &shares);
                    match h.typ {
                        HandshakeType::Certificate => split_certificates(&mut l, &h.bytes),
                        HandshakeType::ClientHello => split_ech(&mut l, &h.bytes),
                        _ => {}
                    }
                    split_trust_anchors(&mut l, &h.bytes, h.typ);
                    l
                }),
            event: h.clone(),
            records: Vec::new(),
        };
        let mut messages = Vec::new();
        let mut inner_hellos = Vec::new();
        for e in events {
            match e {
                Event::Handshake(h) => messages.push(message(h)),
                Event::InnerClientHello(h) => inner_hellos.push(message(h)),
                _ => {}
            }
        }
        // At most MAX_DECOMPRESSED bytes in all, however many CompressedCertificates a
        // capture holds.
        let mut budget = MAX_DECOMPRESSED;
        let mut decompressed = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            if let Some(cert) = decompress(&m.event, hash_len, budget) {
                budget -= cert.bytes.len() - 4;
                decompressed.push((i, message(&cert)));
            }
        }
        for dir in [Direction::ClientToServer, Direction::ServerToClient] {
            if let Err(e) = place_messages(&mut records, &mut messages, dir) {
                notes.push(e);
            }
        }
        Ok(Illustrated {
            title: title.to_string(),
            records,
            messages,
            tree,
            ledger,
            shares,
            inner_hellos,
            decompressed,
            suite,
            notes,
        })
    }

    /// The records a key-tree node's secret protects (1-based indexes).
    pub fn records_of_node(&self, node: usize) -> Vec<usize> {
        self.records
            .iter()
            .filter(|r| r.protection.as_ref().and_then(|p| p.secret_node) == Some(node))
            .map(|r| r.index)
            .collect()
    }
}

/// The keys of one protected record: the traffic secret's node in the tree and its write_key
/// and write_iv children when the events derived them, else derived here from the key log's
/// secret (as the dissector and the pcap writer do).
fn protection(
    tree: &KeyTree,
    suite: Option<SuiteParams>,
    log: &KeyLog,
    random: Option<&[u8]>,
    r: &RecordEvent,
    seq: u64,
) -> Option<Protection> {
    let suite = suite?;
    let name = secret_name(r.direction, r.epoch)?;
    let secret_node = tree.nodes.iter().position(|n| n.step.name == name);
    let secret = match secret_node {
        Some(i) => tree.nodes[i].step.output.clone(),
        None => keylog::traffic_secret(log, random?, suite.hash, r.direction, r.epoch)?,
    };
    let child = |what: &str| {
        secret_node.and_then(|i| {
            tree.nodes[i]
                .children
                .iter()
                .copied()
                .find(|&c| tree.nodes[c].step.name == what)
        })
    };
    let (key_node, iv_node) = (child("write_key"), child("write_iv"));
    let key = match key_node {
        Some(k) => tree.nodes[k].step.output.clone(),
        None => expand_label(suite.hash, &secret, "key", b"", suite.aead.key_len()).ok()?,
    };
    let iv = match iv_node {
        Some(k) => tree.nodes[k].step.output.clone(),
        None => expand_label(suite.hash, &secret, "iv", b"", NONCE_LEN).ok()?,
    };
    Some(Protection {
        aead: suite.aead.name(),
        secret_name: name,
        secret,
        secret_node,
        nonce: nonce(&iv, seq),
        key,
        key_node,
        iv,
        iv_node,
        seq,
        aad: r.header.clone(),
    })
}

/// Lays `direction`'s handshake messages over its handshake records' contents (a message may
/// span records, a record hold several messages). Stops at the first message whose bytes are
/// not the stream's.
fn place_messages(
    records: &mut [Record],
    messages: &mut [Message],
    direction: Direction,
) -> Result<(), String> {
    // (record position, start in the stream, length)
    let mut stream = Vec::new();
    let mut spans = Vec::new();
    for (k, r) in records.iter().enumerate() {
        if r.event.direction == direction && r.event.inner_type == ContentType::Handshake {
            spans.push((k, stream.len(), r.event.content.len()));
            stream.extend_from_slice(&r.event.content);
        }
    }
    let mut at = 0;
    for (m, msg) in messages.iter_mut().enumerate() {
        if msg.event.direction != direction {
            continue;
        }
        let len = msg.event.bytes.len();
        if stream.get(at..at + len) != Some(&msg.event.bytes[..]) {
            return Err(format!(
                "{}: the {} message is not the next bytes of its records",
                direction.arrow(),
                msg.event.typ
            ));
        }
        for &(k, start, rlen) in &spans {
            let (lo, hi) = (at.max(start), (at + len).min(start + rlen));
            if lo < hi {
                records[k].parts.push(Part {
                    message: m,
                    msg_off: lo - at,
                    content_off: lo - start,
                    len: hi - lo,
                });
                msg.records.push(records[k].index);
            }
        }
        at += len;
    }
    Ok(())
}

/// Splits each hybrid key share's `data` into its components (draft-ietf-tls-ecdhe-mlkem: the
/// shares are concatenated), when a reported key exchange of that group has exactly these
/// bytes as its components' shares for this direction.
fn split_shares(spans: &mut [Span], bytes: &[u8], direction: Direction, shares: &[KeyShareEvent]) {
    let group = spans
        .iter()
        .find(|s| s.name == "group" && s.len == 2)
        .map(|s| u16::from_be_bytes([bytes[s.offset], bytes[s.offset + 1]]));
    for s in spans.iter_mut() {
        if s.name == "key_exchange" {
            if let Some(g) = group {
                split_one(s, g, bytes, direction, shares);
            }
        } else {
            split_shares(&mut s.children, bytes, direction, shares);
        }
    }
}

fn split_one(
    key_exchange: &mut Span,
    group: u16,
    bytes: &[u8],
    direction: Direction,
    shares: &[KeyShareEvent],
) {
    let Some(data) = key_exchange
        .children
        .iter_mut()
        .find(|c| c.name == "data" && c.children.is_empty())
    else {
        return;
    };
    let value = &bytes[data.offset..data.end()];
    let client = direction == Direction::ClientToServer;
    for k in shares {
        if u16::from(k.group) != group || k.components.len() < 2 {
            continue;
        }
        let parts: Vec<&[u8]> = k
            .components
            .iter()
            .map(|c| {
                if client {
                    &c.client_share[..]
                } else {
                    &c.server_share[..]
                }
            })
            .collect();
        if parts.concat() != value {
            continue;
        }
        let mut at = data.offset;
        for (c, p) in k.components.iter().zip(parts) {
            let what = match (c.name.starts_with("ML-KEM"), client) {
                (true, true) => "encapsulation key",
                (true, false) => "ciphertext",
                (false, _) => "public key",
            };
            data.children.push(Span {
                name: format!("{} {what}", c.name),
                offset: at,
                len: p.len(),
                children: Vec::new(),
            });
            at += p.len();
        }
        return;
    }
}

/// The most a page decompresses, all CompressedCertificates together (each may declare up to
/// 2^24 − 1 bytes; real chains, ML-DSA-87 ones included, are tens of kilobytes).
const MAX_DECOMPRESSED: usize = 1 << 20;

/// The Certificate message a CompressedCertificate `h` carries (RFC 8879 §4): its header and
/// the decompressed body, as the receiver processed it. `None` for any other message, an
/// algorithm this build lacks, a body over `budget` bytes, or bytes that do not decompress to
/// the declared length.
fn decompress(h: &HandshakeEvent, hash_len: usize, budget: usize) -> Option<HandshakeEvent> {
    if h.typ != HandshakeType::CompressedCertificate {
        return None;
    }
    let m = HandshakeMessage::decode(&h.bytes, DecodeContext { hash_len }).ok()?;
    let HandshakePayload::CompressedCertificate(cc) = m.payload else {
        return None;
    };
    let len = cc.uncompressed_length as usize;
    if len > budget {
        return None;
    }
    let body =
        tls13lab::certcomp::decompress(cc.algorithm, &cc.compressed_certificate_message, len)
            .ok()?;
    let mut bytes = vec![HandshakeType::Certificate.to_repr()];
    bytes.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    bytes.extend_from_slice(&body);
    Some(HandshakeEvent {
        typ: HandshakeType::Certificate,
        bytes,
        layout: None,
        ..h.clone()
    })
}

/// Splits each `cert_data` of a Certificate message into its X.509 structure
/// ([`super::der::certificate`]); one that is not a well-formed certificate stays whole.
fn split_certificates(spans: &mut [Span], bytes: &[u8]) {
    for s in spans.iter_mut() {
        if s.name == "cert_data" {
            if let Some(data) = s
                .children
                .iter_mut()
                .find(|c| c.name == "data" && c.children.is_empty())
            {
                if let Some(c) = bytes
                    .get(data.offset..data.end())
                    .and_then(|der| super::der::certificate(der, data.offset))
                {
                    *data = c;
                }
            }
        } else {
            split_certificates(&mut s.children, bytes);
        }
    }
}

/// Splits a ClientHello's `encrypted_client_hello` into its fields (RFC 9849 §5):
/// ECHClientHelloType, then for an outer one cipher_suite (kdf_id, aead_id), config_id, enc and
/// payload, each vector with its length. Anything else stays whole.
fn split_ech(spans: &mut [Span], bytes: &[u8]) {
    for s in spans.iter_mut() {
        if s.name.starts_with("encrypted_client_hello") {
            if let Some(data) = s
                .children
                .iter_mut()
                .find(|c| c.name == "extension_data" && c.children.is_empty())
            {
                if let Some(kids) = ech_fields(bytes, data.offset, data.end()) {
                    data.children = kids;
                }
            }
        } else {
            split_ech(&mut s.children, bytes);
        }
    }
}

/// Splits a `trust_anchors` extension's list into its IDs (draft-ietf-tls-trust-anchor-ids
/// §4.1): a RequestedTrustAnchorList in a ClientHello or CertificateRequest, an
/// AvailableTrustAnchorList in EncryptedExtensions, each TrustAnchorID its length and bytes.
/// The Certificate's is empty, and a list that does not decode stays whole.
fn split_trust_anchors(spans: &mut [Span], bytes: &[u8], typ: HandshakeType) {
    let list = match typ {
        HandshakeType::ClientHello | HandshakeType::CertificateRequest => {
            "RequestedTrustAnchorList"
        }
        HandshakeType::EncryptedExtensions => "AvailableTrustAnchorList",
        _ => return,
    };
    for s in spans.iter_mut() {
        if s.name.starts_with("trust_anchors") {
            if let Some(data) = s
                .children
                .iter_mut()
                .find(|c| c.name == "extension_data" && c.children.is_empty())
            {
                if let Some(kids) = trust_anchor_fields(bytes, data.offset, data.end()) {
                    data.name = list.to_string();
                    data.children = kids;
                }
            }
        } else {
            split_trust_anchors(&mut s.children, bytes, typ);
        }
    }
}

fn trust_anchor_fields(bytes: &[u8], start: usize, end: usize) -> Option<Vec<Span>> {
    let leaf = |name: &str, offset: usize, len: usize| Span {
        name: name.to_string(),
        offset,
        len,
        children: Vec::new(),
    };
    let body = bytes.get(start..end)?;
    // The core's decoder checks every length and that the IDs fill the list.
    let ids = tls13lab::trust_anchors::decode_requested(body).ok()?;
    let mut out = vec![leaf("length", start, 2)];
    let mut at = start + 2;
    for id in ids {
        out.push(Span {
            name: super::decode::TRUST_ANCHOR_ID.into(),
            offset: at,
            len: 1 + id.len(),
            children: vec![leaf("length", at, 1), leaf("id", at + 1, id.len())],
        });
        at += 1 + id.len();
    }
    (at == end).then_some(out)
}

fn ech_fields(bytes: &[u8], start: usize, end: usize) -> Option<Vec<Span>> {
    let leaf = |name: &str, offset: usize, len: usize| Span {
        name: name.to_string(),
        offset,
        len,
        children: Vec::new(),
    };
    let typ = *bytes.get(start).filter(|_| start < end)?;
    let mut out = vec![leaf("ECHClientHelloType", start, 1)];
    if typ == 1 {
        return (end == start + 1).then_some(out);
    }
    if typ != 0 || end < start + 6 {
        return None;
    }
    out.push(Span {
        name: "cipher_suite".into(),
        offset: start + 1,
        len: 4,
        children: vec![leaf("kdf_id", start + 1, 2), leaf("aead_id", start + 3, 2)],
    });
    out.push(leaf("config_id", start + 5, 1));
    let mut at = start + 6;
    for name in ["enc", "payload"] {
        let n = usize::from(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]));
        if at + 2 + n > end {
            return None;
        }
        let mut children = vec![leaf("length", at, 2)];
        if n > 0 {
            children.push(leaf("data", at + 2, n));
        }
        out.push(Span {
            name: name.into(),
            offset: at,
            len: 2 + n,
            children,
        });
        at += 2 + n;
    }
    (at == end).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonce_xors_the_sequence_number_into_the_end() {
        let iv = [0u8; 12];
        assert_eq!(nonce(&iv, 1)[11], 1);
        assert_eq!(nonce(&iv, 0x0102)[10..], [1, 2]);
        let iv = [0xff; 12];
        assert_eq!(nonce(&iv, 1)[..], [[0xff; 11].as_slice(), &[0xfe]].concat());
    }

    #[test]
    fn ech_fields_tile_the_extension_or_give_none() {
        // outer, HKDF-SHA256 / AES-128-GCM, config_id 7, enc of 2 bytes, payload of 3.
        let ext = [0, 0, 1, 0, 1, 7, 0, 2, 9, 9, 0, 3, 1, 2, 3];
        let f = ech_fields(&ext, 0, ext.len()).unwrap();
        check_tiling(&f, ext.len()).unwrap();
        let names: Vec<&str> = f.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ECHClientHelloType",
                "cipher_suite",
                "config_id",
                "enc",
                "payload"
            ]
        );
        assert_eq!(ech_fields(&[1], 0, 1).unwrap().len(), 1);
        for n in 0..ext.len() {
            assert!(ech_fields(&ext[..n], 0, n).is_none(), "{n}");
        }
        assert!(ech_fields(&ext, 0, ext.len() - 1).is_none());
        assert!(ech_fields(&[2, 0], 0, 2).is_none());
    }
}
