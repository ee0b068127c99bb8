//! Dissect a captured TLS 1.3 connection: the two byte streams (from a pcap/pcapng file via
//! [`crate::pcap::read_capture`], or two raw files) plus an NSS key log become records,
//! decrypted records, handshake messages, application data, a [`Ledger`], Finished checks and
//! what was negotiated ([`Negotiation`]) — the view the endpoints had, rebuilt from the outside.
//!
//! Decryption follows each direction's epochs in order (RFC 8446 §7): client → server early
//! (if 0-RTT was offered), handshake, application 0, 1, …; server → client handshake,
//! application 0, 1, …. A protected record is tried with the current epoch's keys and, if that
//! fails, with the next ones (this is how a rejected 0-RTT flight or a KeyUpdate is crossed
//! without reading the state machine's mind); records no key opens are reported, with the
//! secrets that would have opened them.

use serde::Serialize;

use crate::keylog::{self, KeyLog};
use crate::tcp::Stream;
use tls13lab::crypto::aead::{suite_params, SuiteParams};
use tls13lab::crypto::ech::EchKeyPair;
use tls13lab::crypto::hash::HashAlg;
use tls13lab::crypto::hpke::{self, ReceiverContext};
use tls13lab::ech::confirm::{self, ACCEPT_LABEL};
use tls13lab::ech::inner;
use tls13lab::ech::wire::{
    EchClientHello, HelloParts, HpkeSymmetricCipherSuite, ECH_OUTER_EXTENSIONS,
};
use tls13lab::events::{
    hex, Direction, EarlyDataStatus, Epoch, Event, HandshakeEvent, Negotiated, RecordEvent,
};
use tls13lab::keyschedule::NoSink;
use tls13lab::ledger::Ledger;
use tls13lab::messages::codec::Reader;
use tls13lab::messages::ech::EchConfig;
use tls13lab::messages::enums::{
    CipherSuite, ContentType, ExtensionType, HandshakeType, NamedGroup, ProtocolVersion,
    PskKeyExchangeMode, ServerNameType, SignatureScheme,
};
use tls13lab::messages::extensions::Extension;
use tls13lab::messages::handshake::{
    ClientHello, DecodeContext, HandshakeMessage, HandshakePayload,
};
use tls13lab::record::deframer::OpaqueRecord;
use tls13lab::record::protect::RecordProtector;

/// One handshake message found in a stream.
#[derive(Clone, Debug, Serialize)]
pub struct Message {
    /// Which way.
    pub direction: Direction,
    /// Under which keys it travelled.
    pub epoch: Epoch,
    /// Its type.
    pub typ: HandshakeType,
    /// Bytes with its 4-byte header.
    pub len: usize,
    /// Whether it decoded as a valid message of its type.
    pub valid: bool,
    /// The bytes.
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

/// Application data found in a stream.
#[derive(Clone, Debug, Serialize)]
pub struct AppData {
    /// Which way.
    pub direction: Direction,
    /// Early (0-RTT) or application keys.
    pub epoch: Epoch,
    /// The bytes.
    #[serde(serialize_with = "tls13lab::ledger::ser_hex")]
    pub data: Vec<u8>,
}

/// A Finished message checked against the key log (RFC 8446 §4.4.4).
#[derive(Clone, Debug, Serialize)]
pub struct FinishedCheck {
    /// Whose Finished.
    pub direction: Direction,
    /// `Some(true)`: verify_data matches; `Some(false)`: it does not; `None`: not checkable.
    pub verified: Option<bool>,
    /// What was compared, or why it could not be.
    pub detail: String,
}

/// Everything dissected from one connection.
#[derive(Clone, Debug, Serialize)]
pub struct Dissection {
    /// Client address (captures only).
    pub client: Option<String>,
    /// Server address.
    pub server: Option<String>,
    /// ClientHello.random, hex: the key of the traffic secrets' key log lines —
    /// ClientHelloInner's when ECH was accepted (RFC 9850 §4).
    pub client_random: Option<String>,
    /// Encrypted ClientHello, when the first ClientHello offers it (RFC 9849).
    pub ech: Option<EchView>,
    /// Key log labels found for this connection.
    pub secrets_found: Vec<String>,
    /// Secrets that would have opened records that stayed closed.
    pub missing_secrets: Vec<String>,
    /// The ledger (records in capture order, or in handshake order for raw streams).
    pub ledger: Ledger,
    /// Handshake messages, per direction in stream order.
    pub messages: Vec<Message>,
    /// Application data.
    pub app_data: Vec<AppData>,
    /// Finished checks.
    pub finished: Vec<FinishedCheck>,
    /// What was negotiated, as far as the messages tell; `None` without a ServerHello.
    pub negotiated: Option<Negotiation>,
    /// Records no key opened.
    pub undecrypted: usize,
    /// Things worth knowing: gaps, truncation, retransmissions, how the order was chosen.
    pub notes: Vec<String>,
    /// The synthesized events (records, handshake messages, data, outcome) the ledger was built
    /// from: the same shape an endpoint reports.
    #[serde(skip)]
    pub events: Vec<Event>,
}

/// A record of one direction, before and after decryption.
struct Rec {
    direction: Direction,
    time_us: Option<u64>,
    header: [u8; 5],
    payload: Vec<u8>,
    /// Filled in by decryption (plaintext records: the payload).
    epoch: Epoch,
    inner: Option<(ContentType, Vec<u8>, usize)>,
    seq: Option<u64>,
    /// The tag of the AEAD that opened it: 16, 8 under AES-128-CCM-8, 0 if not opened.
    tag_len: usize,
}

fn deframe(
    stream: &Stream,
    direction: Direction,
    timed: bool,
    notes: &mut Vec<String>,
) -> Vec<Rec> {
    let b = &stream.bytes;
    let mut out = Vec::new();
    let mut at = 0;
    while at + 5 <= b.len() {
        let len = usize::from(u16::from_be_bytes([b[at + 3], b[at + 4]]));
        if at + 5 + len > b.len() {
            break;
        }
        let mut header = [0u8; 5];
        header.copy_from_slice(&b[at..at + 5]);
        out.push(Rec {
            direction,
            time_us: timed.then(|| stream.time_of(at + 5 + len - 1)),
            header,
            payload: b[at + 5..at + 5 + len].to_vec(),
            epoch: Epoch::Plaintext,
            inner: None,
            seq: None,
            tag_len: 0,
        });
        at += 5 + len;
    }
    if at < b.len() {
        notes.push(format!(
            "{}: the stream ends inside a record ({} bytes left over)",
            direction.arrow(),
            b.len() - at
        ));
    }
    if stream.gap {
        notes.push(format!(
            "{}: bytes missing from the capture (a sequence gap): the stream stops there",
            direction.arrow()
        ));
    }
    if stream.retransmissions > 0 {
        notes.push(format!(
            "{}: {} retransmitted segment(s) ignored",
            direction.arrow(),
            stream.retransmissions
        ));
    }
    out
}

/// Handshake messages of a run of plaintext fragments.
fn split_messages(data: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let len = (usize::from(data[at + 1]) << 16)
            | (usize::from(data[at + 2]) << 8)
            | usize::from(data[at + 3]);
        if at + 4 + len > data.len() {
            break;
        }
        out.push(data[at..at + 4 + len].to_vec());
        at += 4 + len;
    }
    (out, at)
}

/// What the plaintext handshake messages tell before any decryption.
#[derive(Default)]
struct Hellos {
    random: Option<Vec<u8>>,
    early_offered: bool,
    suite: Option<SuiteParams>,
    hrr: bool,
    /// ECH was accepted: the transcript's ClientHellos are the inner ones.
    ech_accepted: bool,
    /// The plaintext ClientHello and ServerHello messages, in order.
    client_hellos: Vec<Vec<u8>>,
    server_hellos: Vec<Vec<u8>>,
}

fn hellos(c2s: &[Rec], s2c: &[Rec]) -> Hellos {
    let mut h = Hellos::default();
    let plain = |recs: &[Rec]| -> Vec<u8> {
        recs.iter()
            .filter(|r| r.header[0] == ContentType::Handshake.to_repr())
            .flat_map(|r| r.payload.clone())
            .collect()
    };
    for m in split_messages(&plain(c2s)).0 {
        if let Ok(HandshakePayload::ClientHello(ch)) =
            HandshakeMessage::decode(&m, DecodeContext::default()).map(|m| m.payload)
        {
            h.random.get_or_insert(ch.random.to_vec());
            // Only the first ClientHello may offer 0-RTT (§4.2.10).
            if h.random.as_deref() == Some(&ch.random[..]) && !h.hrr {
                h.early_offered |= ch.find(ExtensionType::EarlyData).is_some();
            }
            h.client_hellos.push(m);
        }
    }
    for m in split_messages(&plain(s2c)).0 {
        if let Ok(HandshakePayload::ServerHello(sh)) =
            HandshakeMessage::decode(&m, DecodeContext::default()).map(|m| m.payload)
        {
            h.server_hellos.push(m.clone());
            if sh.is_hello_retry_request() {
                h.hrr = true;
            } else {
                h.suite = suite_params(sh.cipher_suite);
            }
        }
    }
    h
}

/// The epochs a direction goes through, in order.
fn epochs(direction: Direction, early: bool, max_gen: u64) -> Vec<Epoch> {
    let mut v = Vec::new();
    if direction == Direction::ClientToServer && early {
        v.push(Epoch::Early);
    }
    v.push(Epoch::Handshake);
    for n in 0..=max_gen {
        v.push(Epoch::Application(n));
    }
    v
}

/// Decrypt one direction's protected records in place; returns the labels that were missing.
fn decrypt(
    recs: &mut [Rec],
    direction: Direction,
    hs: &Hellos,
    log: &KeyLog,
    missing: &mut Vec<String>,
) -> usize {
    let (Some(suite), Some(random)) = (hs.suite, hs.random.as_deref()) else {
        let protected = recs
            .iter()
            .filter(|r| r.header[0] == ContentType::ApplicationData.to_repr())
            .count();
        return protected;
    };
    // Up to 64 KeyUpdates are followed.
    let order = epochs(
        direction,
        hs.early_offered && direction == Direction::ClientToServer,
        64,
    );
    let mut current = 0usize;
    let mut open: Vec<Option<RecordProtector>> = order.iter().map(|_| None).collect();
    let mut tried: Vec<bool> = vec![false; order.len()];
    let mut undecrypted = 0;
    for r in recs.iter_mut() {
        let outer = ContentType::from(r.header[0]);
        if outer != ContentType::ApplicationData {
            r.epoch = Epoch::Plaintext;
            r.inner = Some((outer, r.payload.clone(), 0));
            continue;
        }
        let mut done = false;
        for (k, epoch) in order.iter().enumerate().skip(current) {
            if !tried[k] {
                tried[k] = true;
                open[k] = keylog::traffic_secret(log, random, suite.hash, direction, *epoch)
                    .and_then(|s| keylog::protector(suite, &s));
            }
            let Some(p) = open[k].as_mut() else { continue };
            let seq = p.seq();
            let rec = OpaqueRecord::new(
                outer,
                u16::from_be_bytes([r.header[1], r.header[2]]),
                r.payload.clone(),
            );
            if let Ok(inner) = p.open(&rec) {
                current = k;
                r.epoch = *epoch;
                r.seq = Some(seq);
                r.tag_len = p.tag_len();
                r.inner = Some((inner.typ, inner.content, inner.padding));
                done = true;
                break;
            }
            // A failed early key means the server went on without 0-RTT; others may be a
            // KeyUpdate: keep trying later epochs, but never a later application generation
            // than one beyond the current (that would be a guess, not a KeyUpdate).
            if matches!(epoch, Epoch::Application(n) if *n > 0 && k > current + 1) {
                break;
            }
        }
        if !done {
            undecrypted += 1;
            // Probably under the first epoch from here on whose secret is missing (a key we
            // have and that failed says the record is not its).
            let guess = (current..order.len().min(current + 3))
                .find(|k| {
                    keylog::label_for(direction, order[*k])
                        .is_some_and(|l| log.get(random, l).is_none())
                })
                .unwrap_or(current);
            r.epoch = order.get(guess).copied().unwrap_or(Epoch::Handshake);
            if let Some(label) = keylog::label_for(direction, r.epoch) {
                if log.get(random, label).is_none() && !missing.iter().any(|m| m == label) {
                    missing.push(label.to_string());
                }
            }
        }
    }
    undecrypted
}

/// The record as an endpoint would have reported it.
fn record_event(r: &Rec, origin_us: u64) -> RecordEvent {
    let wire_type = ContentType::from(r.header[0]);
    let (inner_type, content, padding) = match &r.inner {
        Some((t, c, p)) => (*t, c.clone(), *p),
        None => (wire_type, Vec::new(), 0),
    };
    let plaintext_len = if r.inner.is_some() {
        content.len()
    } else {
        // Not decrypted: what is known is the payload.
        r.payload.len()
    };
    RecordEvent {
        direction: r.direction,
        epoch: r.epoch,
        time_ms: r.time_us.unwrap_or(origin_us) / 1000,
        header: r.header.to_vec(),
        wire_type,
        inner_type,
        wire_len: 5 + r.payload.len(),
        payload_len: r.payload.len(),
        plaintext_len,
        padding_len: padding,
        tag_len: r.tag_len,
        seq: r.seq,
        content: if r.inner.is_some() {
            content
        } else {
            Vec::new()
        },
    }
}

/// Dissect the connection carried by two streams. `timed`: the streams carry capture times
/// (from a pcap) and the records are merged by time; otherwise they are ordered as the
/// handshake dictates.
pub fn dissect(c2s: &Stream, s2c: &Stream, log: &KeyLog, timed: bool) -> Dissection {
    dissect_with(c2s, s2c, log, timed, DissectOptions::default())
}

/// [`dissect`] with ECH keys: a ClientHelloOuter's payload is opened with the key log's
/// `ECH_SECRET` and `ECH_CONFIG` (keyed by the outer random, RFC 9850 §5) or with the key of
/// the config it names; when the ServerHello confirms acceptance (RFC 9849 §7.2), the rest
/// of the connection is read as the endpoints read it: transcript over ClientHelloInner,
/// traffic secrets keyed by its random (RFC 9850 §4).
pub fn dissect_with(
    c2s: &Stream,
    s2c: &Stream,
    log: &KeyLog,
    timed: bool,
    opts: DissectOptions<'_>,
) -> Dissection {
    let mut notes = Vec::new();
    let mut a = deframe(c2s, Direction::ClientToServer, timed, &mut notes);
    let mut b = deframe(s2c, Direction::ServerToClient, timed, &mut notes);
    let mut hs = hellos(&a, &b);
    let outer_random = hs.random.clone();
    let ech = ech_view(&hs.client_hellos, &hs.server_hellos, log, opts.ech_keys);
    let inners: Vec<&InnerHello> = ech
        .iter()
        .flat_map(|e| &e.hellos)
        .filter_map(|h| h.inner.as_ref())
        .collect();
    let accepted = ech.as_ref().is_some_and(|e| e.accepted == Some(true));
    if let (true, Some(first)) = (accepted, inners.first()) {
        hs.ech_accepted = true;
        hs.random = first.bytes.get(6..38).map(<[u8]>::to_vec);
        // 0-RTT rides on ClientHelloInner's PSK (RFC 9849 §6.1).
        hs.early_offered = HandshakeMessage::decode(&first.bytes, DecodeContext::default())
            .ok()
            .is_some_and(|m| match m.payload {
                HandshakePayload::ClientHello(ch) => ch.find(ExtensionType::EarlyData).is_some(),
                _ => false,
            });
    }
    let mut missing = Vec::new();
    let mut secrets_found = Vec::new();
    if let Some(random) = &hs.random {
        for l in &log.lines {
            let ech_line =
                outer_random.as_ref() == Some(&l.client_random) && l.label.starts_with("ECH_");
            if (&l.client_random == random || ech_line) && !secrets_found.contains(&l.label) {
                secrets_found.push(l.label.clone());
            }
        }
        if !log.knows(random) {
            notes.push(format!(
                "the key log has no line for {}.random {}",
                if accepted {
                    "ClientHelloInner"
                } else {
                    "ClientHello"
                },
                hex(random)
            ));
            if ech.as_ref().is_some_and(|e| e.accepted.is_none()) {
                notes.push(
                    "ECH was offered: if the server accepted it, the traffic secrets are keyed \
                     by ClientHelloInner.random (RFC 9850), which opening the inner hello reveals"
                        .into(),
                );
            }
        }
    } else {
        notes.push("no ClientHello found".into());
    }
    if hs.suite.is_none() && hs.random.is_some() {
        notes.push("no ServerHello found: nothing can be decrypted".into());
    }
    let undecrypted = decrypt(&mut a, Direction::ClientToServer, &hs, log, &mut missing)
        + decrypt(&mut b, Direction::ServerToClient, &hs, log, &mut missing);

    // Order.
    let origin = a
        .iter()
        .chain(&b)
        .filter_map(|r| r.time_us)
        .min()
        .unwrap_or(0);
    let order: Vec<&Rec> = if timed {
        let mut all: Vec<(u64, usize, &Rec)> = a
            .iter()
            .enumerate()
            .map(|(i, r)| (r.time_us.unwrap_or(0), i, r))
            .chain(
                b.iter()
                    .enumerate()
                    .map(|(i, r)| (r.time_us.unwrap_or(0), 1_000_000 + i, r)),
            )
            .collect();
        all.sort_by_key(|(t, i, _)| (*t, *i));
        all.into_iter().map(|(_, _, r)| r).collect()
    } else {
        notes.push(
            "raw streams carry no timing: records are ordered as the handshake dictates \
             (client's first flight, server's through its Finished, client's through its \
             Finished and what follows it, server's rest, then closing alerts)"
                .into(),
        );
        handshake_order(&a, &b)
    };

    // Events: records, handshake messages, data.
    let mut events = Vec::new();
    let mut joined: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut messages = Vec::new();
    let mut app_data = Vec::new();
    let hash_len = hs.suite.map_or(0, |s| s.hash.output_len());
    let mut outer_seen = 0;
    for r in &order {
        // The record first, then the messages it completed.
        events.push(Event::Record(record_event(r, origin)));
        let d = usize::from(r.direction == Direction::ServerToClient);
        if let Some((t, content, _)) = &r.inner {
            match t {
                ContentType::Handshake => {
                    joined[d].extend_from_slice(content);
                    let (msgs, used) = split_messages(&joined[d]);
                    for m in msgs {
                        let decoded = HandshakeMessage::decode(&m, DecodeContext { hash_len });
                        let typ = HandshakeType::from(m[0]);
                        events.push(Event::Handshake(HandshakeEvent {
                            direction: r.direction,
                            epoch: r.epoch,
                            typ,
                            bytes: m.clone(),
                            layout: None,
                        }));
                        // The inner hello beside its outer one, as the server reports it.
                        if typ == HandshakeType::ClientHello && r.epoch == Epoch::Plaintext {
                            if let Some(i) = inners.get(outer_seen) {
                                events.push(Event::InnerClientHello(HandshakeEvent {
                                    direction: r.direction,
                                    epoch: Epoch::Plaintext,
                                    typ,
                                    bytes: i.bytes.clone(),
                                    layout: None,
                                }));
                            }
                            outer_seen += 1;
                        }
                        messages.push(Message {
                            direction: r.direction,
                            epoch: r.epoch,
                            typ,
                            len: m.len(),
                            valid: decoded.is_ok(),
                            bytes: m,
                        });
                    }
                    joined[d].drain(..used);
                }
                ContentType::ApplicationData => app_data.push(AppData {
                    direction: r.direction,
                    epoch: r.epoch,
                    data: content.clone(),
                }),
                _ => {}
            }
        }
    }

    // Accepted ECH: the endpoints' transcript has ClientHelloInner where the wire had the
    // outer one (RFC 9849 §6.1.4, §7.2).
    let mut transcript_messages = messages.clone();
    if accepted {
        let hellos = transcript_messages
            .iter_mut()
            .filter(|m| m.direction == Direction::ClientToServer)
            .filter(|m| m.typ == HandshakeType::ClientHello && m.epoch == Epoch::Plaintext);
        for (m, i) in hellos.zip(&inners) {
            m.bytes.clone_from(&i.bytes);
            m.len = i.len;
        }
    }
    let finished = check_finished(&transcript_messages, &hs, log);
    let negotiated = negotiation(&transcript_messages, hash_len, log, hs.random.as_deref());
    let mut all_events = events;
    // The ledger gets an endpoint's report only when nothing in it would be a guess.
    if let Some(n) = negotiated.as_ref().and_then(Negotiation::to_negotiated) {
        all_events.push(Event::Connected(n));
    }
    let mut ledger = Ledger::from_events(&all_events);
    ledger.set_origin(origin / 1000);
    Dissection {
        client: None,
        server: None,
        client_random: hs.random.as_deref().map(hex),
        ech,
        secrets_found,
        missing_secrets: missing,
        ledger,
        messages,
        app_data,
        finished,
        negotiated,
        undecrypted,
        notes,
        events: all_events,
    }
}

/// Records of raw streams in the order the handshake forces.
fn handshake_order<'a>(a: &'a [Rec], b: &'a [Rec]) -> Vec<&'a Rec> {
    let has = |r: &Rec, t: HandshakeType| matches!(&r.inner, Some((ContentType::Handshake, c, _)) if split_messages(c).0.iter().any(|m| HandshakeType::from(m[0]) == t));
    let is_alert = |r: &Rec| matches!(&r.inner, Some((ContentType::Alert, _, _)));
    // Client: first flight = up to the first record under handshake keys (or the second
    // ClientHello after a HelloRetryRequest, which is treated like the rest).
    let c_first = a
        .iter()
        .position(|r| {
            r.epoch == Epoch::Handshake || (r.epoch != Epoch::Plaintext && r.epoch != Epoch::Early)
        })
        .unwrap_or(a.len());
    let s_fin = b
        .iter()
        .position(|r| has(r, HandshakeType::Finished))
        .map_or(b.len(), |i| i + 1);
    let (c_rest, c_alerts): (Vec<&Rec>, Vec<&Rec>) =
        a[c_first..].iter().partition(|r| !is_alert(r));
    let (s_rest, s_alerts): (Vec<&Rec>, Vec<&Rec>) = b[s_fin..].iter().partition(|r| !is_alert(r));
    let mut v: Vec<&Rec> = a[..c_first].iter().collect();
    v.extend(&b[..s_fin]);
    v.extend(c_rest);
    v.extend(s_rest);
    v.extend(c_alerts);
    v.extend(s_alerts);
    v
}

/// Verify both Finished messages against the transcript (§4.4.1, §4.4.4).
fn check_finished(messages: &[Message], hs: &Hellos, log: &KeyLog) -> Vec<FinishedCheck> {
    let mut out = Vec::new();
    let (Some(suite), Some(random)) = (hs.suite, hs.random.as_deref()) else {
        return out;
    };
    let hash = suite.hash;
    let c: Vec<&Message> = messages
        .iter()
        .filter(|m| m.direction == Direction::ClientToServer)
        .collect();
    let s: Vec<&Message> = messages
        .iter()
        .filter(|m| m.direction == Direction::ServerToClient)
        .collect();
    // Transcript: ClientHello1 [HelloRetryRequest ClientHello2] ServerHello ... server Finished.
    let mut transcript: Vec<u8> = Vec::new();
    let mut ci = 0;
    let mut si = 0;
    let take = |v: &[&Message], i: &mut usize, t: HandshakeType| -> Option<Vec<u8>> {
        let m = v.get(*i).filter(|m| m.typ == t)?;
        *i += 1;
        Some(m.bytes.clone())
    };
    let Some(ch1) = take(&c, &mut ci, HandshakeType::ClientHello) else {
        return out;
    };
    if hs.hrr {
        // §4.4.1: ClientHello1 is replaced by message_hash(Hash(ClientHello1)).
        let h = hash.hash(&ch1);
        transcript.extend_from_slice(&[254, 0, 0, h.len() as u8]);
        transcript.extend_from_slice(h.as_slice());
        let Some(hrr) = take(&s, &mut si, HandshakeType::ServerHello) else {
            return out;
        };
        transcript.extend_from_slice(&hrr);
        let Some(ch2) = take(&c, &mut ci, HandshakeType::ClientHello) else {
            return out;
        };
        transcript.extend_from_slice(&ch2);
    } else {
        transcript.extend_from_slice(&ch1);
    }
    // Server flight up to (not including) its Finished.
    while let Some(m) = s.get(si) {
        if m.typ == HandshakeType::Finished {
            break;
        }
        transcript.extend_from_slice(&m.bytes);
        si += 1;
    }
    let mut check = |direction: Direction,
                     fin: Option<&&Message>,
                     transcript: &[u8],
                     label: &str,
                     covers: String| {
        let Some(fin) = fin.filter(|m| m.typ == HandshakeType::Finished) else {
            out.push(FinishedCheck {
                direction,
                verified: None,
                detail: "no Finished message (not sent, or not decrypted)".into(),
            });
            return;
        };
        let Some(secret) = log.get(random, label) else {
            out.push(FinishedCheck {
                direction,
                verified: None,
                detail: format!("{label} is not in the key log"),
            });
            return;
        };
        let th = hash.hash(transcript);
        let expected = keylog::verify_data(hash, secret, th.as_slice());
        let got = &fin.bytes[4..];
        let ok = expected.as_deref() == Some(got);
        out.push(FinishedCheck {
            direction,
            verified: Some(ok),
            detail: format!(
                "verify_data {} HMAC(finished_key from {label}, Hash({covers}))",
                if ok { "=" } else { "≠" }
            ),
        });
    };
    let names = |tr: &[u8]| -> String {
        let (msgs, _) = split_messages(tr);
        let v: Vec<String> = msgs
            .iter()
            .map(|m| crate::ladder::message_name(HandshakeType::from(m[0])))
            .map(|n| match n.as_str() {
                "ClientHello" if hs.ech_accepted => "ClientHelloInner".into(),
                _ => n,
            })
            .collect();
        v.join(" ")
    };
    let covers = names(&transcript);
    check(
        Direction::ServerToClient,
        s.get(si),
        &transcript,
        "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        covers,
    );
    if let Some(f) = s.get(si) {
        transcript.extend_from_slice(&f.bytes);
    }
    // Client: EndOfEarlyData, Certificate, CertificateVerify before its Finished.
    while let Some(m) = c.get(ci) {
        if m.typ == HandshakeType::Finished {
            break;
        }
        transcript.extend_from_slice(&m.bytes);
        ci += 1;
    }
    let covers = names(&transcript);
    check(
        Direction::ClientToServer,
        c.get(ci),
        &transcript,
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        covers,
    );
    out
}

/// One field of a [`Negotiation`]: read from the messages, or not readable because the
/// messages that carry it stayed encrypted (or never made it into the capture).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen<T> {
    /// What the messages say.
    Known(T),
    /// Why it cannot be told: e.g. `SERVER_HANDSHAKE_TRAFFIC_SECRET not in the key log`.
    Unknown(String),
}

impl<T> Seen<T> {
    /// The value, if known.
    pub fn known(&self) -> Option<&T> {
        match self {
            Seen::Known(v) => Some(v),
            Seen::Unknown(_) => None,
        }
    }

    /// Why it is not known, if it is not.
    pub fn why(&self) -> Option<&str> {
        match self {
            Seen::Known(_) => None,
            Seen::Unknown(w) => Some(w),
        }
    }
}

/// What was negotiated, as far as the messages of the two streams tell: the fields of
/// [`Negotiated`] (what an endpoint reports), each one that only encrypted messages carry being
/// [`Seen::Unknown`] when they were not read, plus what the plaintext adds (the PSK exchange
/// mode, the name the client asked for).
///
/// The ServerHello is plaintext (RFC 8446 §4.1.3): version, suite, group, PSK and the
/// HelloRetryRequest are always known. The server's signature scheme, ALPN and the early-data
/// answer are in its encrypted flight (§4.3.1, §4.4.3); the client's signature in its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Negotiation {
    /// supported_versions of the ServerHello (its legacy_version without one).
    pub version: ProtocolVersion,
    /// The ServerHello's cipher suite.
    pub suite: CipherSuite,
    /// The ServerHello's key_share group; `None` for psk_ke.
    pub group: Option<NamedGroup>,
    /// The server's CertificateVerify scheme; `Known(None)`: its flight had none (resumed).
    pub signature_scheme: Seen<Option<SignatureScheme>>,
    /// The client's CertificateVerify scheme; `Known(None)`: it did not authenticate.
    pub client_signature_scheme: Seen<Option<SignatureScheme>>,
    /// The ServerHello selected a PSK.
    pub resumed: bool,
    /// The PSK identity it selected.
    pub psk_identity: Option<u16>,
    /// With a PSK: psk_dhe_ke if the ServerHello has a key_share, else psk_ke (§4.2.9).
    pub psk_mode: Option<PskKeyExchangeMode>,
    /// What became of 0-RTT.
    pub early_data: Seen<EarlyDataStatus>,
    /// The protocol EncryptedExtensions selected; `Known(None)`: none.
    pub alpn: Seen<Option<String>>,
    /// A HelloRetryRequest came first.
    pub hello_retry: bool,
    /// The host_name of the first ClientHello's server_name (RFC 6066 §3).
    pub server_name: Option<String>,
}

impl From<&Negotiated> for Negotiation {
    /// An endpoint's own report: everything known. The PSK mode follows from the group, as it
    /// does on the wire (psk_ke carries no key_share, §4.2.9).
    fn from(n: &Negotiated) -> Self {
        Negotiation {
            version: ProtocolVersion::KNOWN
                .iter()
                .copied()
                .find(|v| v.name() == n.version)
                .unwrap_or(ProtocolVersion::TLSv1_3),
            suite: n.suite,
            group: n.group,
            signature_scheme: Seen::Known(n.signature_scheme),
            client_signature_scheme: Seen::Known(n.client_signature_scheme),
            resumed: n.resumed,
            psk_identity: n.psk_identity,
            psk_mode: n.resumed.then_some(if n.group.is_some() {
                PskKeyExchangeMode::PskDheKe
            } else {
                PskKeyExchangeMode::PskKe
            }),
            early_data: Seen::Known(n.early_data),
            alpn: Seen::Known(n.alpn.clone()),
            hello_retry: n.hello_retry,
            server_name: None,
        }
    }
}

impl Negotiation {
    /// The endpoint-shaped report, when every field is known.
    pub fn to_negotiated(&self) -> Option<Negotiated> {
        Some(Negotiated {
            version: self.version.name(),
            suite: self.suite,
            group: self.group,
            signature_scheme: *self.signature_scheme.known()?,
            client_signature_scheme: *self.client_signature_scheme.known()?,
            resumed: self.resumed,
            psk_identity: self.psk_identity,
            early_data: *self.early_data.known()?,
            alpn: self.alpn.known()?.clone(),
            hello_retry: self.hello_retry,
        })
    }

    /// The fields that are not known, with why.
    pub fn unknown(&self) -> Vec<(&'static str, &str)> {
        [
            ("signature_scheme", self.signature_scheme.why()),
            (
                "client_signature_scheme",
                self.client_signature_scheme.why(),
            ),
            ("early_data", self.early_data.why()),
            ("alpn", self.alpn.why()),
        ]
        .into_iter()
        .filter_map(|(k, w)| w.map(|w| (k, w)))
        .collect()
    }
}

/// The same keys as the `negotiated` object of an endpoint's `--json` report (a serialized
/// [`Negotiated`]), plus `psk_mode` and `server_name`. A field that is not known is left out
/// (`null` means "none" there) and named in `unknown`, with why.
impl Serialize for Negotiation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("version", &self.version)?;
        m.serialize_entry("suite", &self.suite)?;
        m.serialize_entry("group", &self.group)?;
        if let Seen::Known(v) = &self.signature_scheme {
            m.serialize_entry("signature_scheme", v)?;
        }
        if let Seen::Known(v) = &self.client_signature_scheme {
            m.serialize_entry("client_signature_scheme", v)?;
        }
        m.serialize_entry("resumed", &self.resumed)?;
        m.serialize_entry("psk_identity", &self.psk_identity)?;
        m.serialize_entry("psk_mode", &self.psk_mode)?;
        if let Seen::Known(v) = &self.early_data {
            m.serialize_entry("early_data", v)?;
        }
        if let Seen::Known(v) = &self.alpn {
            m.serialize_entry("alpn", v)?;
        }
        m.serialize_entry("hello_retry", &self.hello_retry)?;
        m.serialize_entry("server_name", &self.server_name)?;
        let unknown: std::collections::BTreeMap<&str, &str> = self.unknown().into_iter().collect();
        m.serialize_entry("unknown", &unknown)?;
        m.end()
    }
}

/// One summary line: the label in the column `tls13lab client` prints.
pub fn summary_line(label: &str, value: &str) -> String {
    format!("{label:<18} {value}\n")
}

/// How the early data went, in words.
pub fn early_data_text(s: EarlyDataStatus) -> &'static str {
    match s {
        EarlyDataStatus::Accepted => "accepted",
        EarlyDataStatus::Rejected => "rejected",
        EarlyDataStatus::NotSent => "not sent",
    }
}

/// The summary lines of what was negotiated: what `tls13lab client` prints after its ledger and
/// `tls13lab dissect` after its checks, so the two read the same.
pub fn summary_lines(n: &Negotiation) -> String {
    // A known value in words (`None`: no line), or why it is not known.
    fn text<T>(s: &Seen<T>, words: impl Fn(&T) -> Option<String>) -> Option<String> {
        match s {
            Seen::Known(v) => words(v),
            Seen::Unknown(why) => Some(format!("unknown ({why})")),
        }
    }
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let mut s = String::new();
    let mut line = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            s.push_str(&summary_line(k, &v));
        }
    };
    line("version", Some(n.version.to_string()));
    line("cipher suite", Some(n.suite.to_string()));
    line(
        "group",
        Some(n.group.map_or("none (psk_ke)".into(), |g| g.to_string())),
    );
    let none = if n.resumed { "none (resumed)" } else { "none" };
    line(
        "signature scheme",
        text(&n.signature_scheme, |x| {
            Some(x.map_or(none.into(), |x| x.to_string()))
        }),
    );
    // Only a client that authenticated (or might have) gets a line, as in the client's summary.
    line(
        "client signature",
        text(&n.client_signature_scheme, |x| x.map(|x| x.to_string())),
    );
    line(
        "resumed",
        Some(match (n.psk_identity, n.psk_mode) {
            (Some(i), Some(m)) if n.resumed => format!("yes (PSK identity {i}, {m})"),
            (Some(i), None) if n.resumed => format!("yes (PSK identity {i})"),
            _ => yes_no(n.resumed).into(),
        }),
    );
    line(
        "early data",
        text(&n.early_data, |e| Some(early_data_text(*e).into())),
    );
    line("hello retry", Some(yes_no(n.hello_retry).into()));
    line(
        "alpn",
        text(&n.alpn, |a| {
            Some(a.clone().unwrap_or_else(|| "none".into()))
        }),
    );
    s
}

/// What the hellos, EncryptedExtensions, CertificateRequest, CertificateVerify and Finished
/// messages say was negotiated; `None` without a ServerHello.
fn negotiation(
    messages: &[Message],
    hash_len: usize,
    log: &KeyLog,
    random: Option<&[u8]>,
) -> Option<Negotiation> {
    let decode = |m: &Message| {
        HandshakeMessage::decode(&m.bytes, DecodeContext { hash_len })
            .ok()
            .map(|d| d.payload)
    };
    let from = |dir: Direction| {
        messages
            .iter()
            .filter(move |m| m.direction == dir && m.valid)
            .filter_map(move |m| decode(m).map(|p| (m.epoch, p)))
    };
    let hellos: Vec<ClientHello> = from(Direction::ClientToServer)
        .filter_map(|(_, p)| match p {
            HandshakePayload::ClientHello(ch) => Some(ch),
            _ => None,
        })
        .collect();
    let mut hrr = false;
    let mut sh = None;
    for (_, p) in from(Direction::ServerToClient) {
        if let HandshakePayload::ServerHello(h) = p {
            if h.is_hello_retry_request() {
                hrr = true;
            } else if sh.is_none() {
                sh = Some(h);
            }
        }
    }
    let sh = sh?;
    // The server's and the client's encrypted handshake flights (§4.3-§4.4), as far as read.
    let server: Vec<HandshakePayload> = from(Direction::ServerToClient)
        .filter(|(e, _)| *e == Epoch::Handshake)
        .map(|(_, p)| p)
        .collect();
    let client: Vec<HandshakePayload> = from(Direction::ClientToServer)
        .filter(|(e, _)| *e == Epoch::Handshake)
        .map(|(_, p)| p)
        .collect();
    let closed = |label: &str, whose: &str| -> String {
        match random {
            Some(r) if log.get(r, label).is_none() => format!("{label} not in the key log"),
            _ => format!("the {whose}'s encrypted handshake messages were not read"),
        }
    };
    let server_closed = || closed("SERVER_HANDSHAKE_TRAFFIC_SECRET", "server");
    let client_closed = || closed("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "client");
    let finished =
        |f: &[HandshakePayload]| f.iter().any(|p| matches!(p, HandshakePayload::Finished(_)));
    let verify = |f: &[HandshakePayload]| {
        f.iter().find_map(|p| match p {
            HandshakePayload::CertificateVerify(cv) => Some(cv.scheme),
            _ => None,
        })
    };
    let ee = server.iter().find_map(|p| match p {
        HandshakePayload::EncryptedExtensions(x) => Some(x),
        _ => None,
    });
    let cert_request = server
        .iter()
        .any(|p| matches!(p, HandshakePayload::CertificateRequest(_)));

    let mut version = ProtocolVersion::from(sh.legacy_version);
    let (mut group, mut psk_identity) = (None, None);
    for e in &sh.extensions {
        match e {
            Extension::SupportedVersionsServer(v) => version = *v,
            Extension::KeyShareServer(k) => group = Some(k.group),
            Extension::PreSharedKeyServer(i) => psk_identity = Some(*i),
            _ => {}
        }
    }
    let resumed = psk_identity.is_some();
    let first = hellos.first();
    let offered = |t: ExtensionType| hellos.last().is_some_and(|ch| ch.find(t).is_some());
    let server_name = first.and_then(|ch| match ch.find(ExtensionType::ServerName) {
        Some(Extension::ServerName(names)) => names
            .iter()
            .find(|n| n.typ == ServerNameType::HostName)
            .map(|n| String::from_utf8_lossy(&n.name).into_owned()),
        _ => None,
    });
    let signature_scheme = match verify(&server) {
        Some(s) => Seen::Known(Some(s)),
        // Its Finished came without a CertificateVerify: it did not sign (a PSK handshake).
        None if finished(&server) => Seen::Known(None),
        None => Seen::Unknown(server_closed()),
    };
    let client_signature_scheme = match verify(&client) {
        Some(s) => Seen::Known(Some(s)),
        // The client authenticates in the handshake only when asked (§4.3.2); asked, it may
        // send an empty Certificate and no CertificateVerify (§4.4.2.4).
        None if finished(&server) && !cert_request => Seen::Known(None),
        None if cert_request && finished(&client) => Seen::Known(None),
        None if !finished(&server) => Seen::Unknown(server_closed()),
        None => Seen::Unknown(client_closed()),
    };
    // §4.2.10: only the first ClientHello may offer 0-RTT; a HelloRetryRequest, or a PSK other
    // than the first one offered (or none), refuses it whatever EncryptedExtensions says.
    let early_offered = first.is_some_and(|ch| ch.find(ExtensionType::EarlyData).is_some());
    let early_data = match ee {
        _ if !early_offered => Seen::Known(EarlyDataStatus::NotSent),
        _ if hrr || psk_identity != Some(0) => Seen::Known(EarlyDataStatus::Rejected),
        Some(x) if x.iter().any(|e| matches!(e, Extension::EarlyDataEmpty)) => {
            Seen::Known(EarlyDataStatus::Accepted)
        }
        Some(_) => Seen::Known(EarlyDataStatus::Rejected),
        None => Seen::Unknown(server_closed()),
    };
    let alpn = match ee {
        Some(x) => Seen::Known(x.iter().find_map(|e| match e {
            Extension::Alpn(p) => p.first().map(|x| String::from_utf8_lossy(x).into_owned()),
            _ => None,
        })),
        // The server may only answer an offer (RFC 7301 §3.1).
        None if !offered(ExtensionType::ApplicationLayerProtocolNegotiation) => Seen::Known(None),
        None => Seen::Unknown(server_closed()),
    };
    Some(Negotiation {
        version,
        suite: sh.cipher_suite,
        group,
        signature_scheme,
        client_signature_scheme,
        resumed,
        psk_identity,
        psk_mode: resumed.then_some(if group.is_some() {
            PskKeyExchangeMode::PskDheKe
        } else {
            PskKeyExchangeMode::PskKe
        }),
        early_data,
        alpn,
        hello_retry: hrr,
        server_name,
    })
}

/// Printable text of application data: `\r\n` and non-printables escaped, cut at `max` chars.
pub fn printable(data: &[u8], max: usize) -> String {
    let mut s = String::new();
    for &b in data {
        if s.len() >= max {
            s.push('…');
            break;
        }
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

/// The dissection as text.
pub fn render(d: &Dissection) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    if let (Some(c), Some(sv)) = (&d.client, &d.server) {
        let _ = writeln!(s, "connection {c} → {sv}");
    }
    let ech_outer = d
        .ech
        .as_ref()
        .filter(|e| e.accepted == Some(true))
        .and_then(|e| e.hellos.first());
    match (&d.client_random, ech_outer) {
        (Some(r), Some(o)) => {
            let _ = writeln!(s, "ClientHelloInner.random {r} (keys the traffic secrets)");
            let _ = writeln!(
                s,
                "ClientHelloOuter.random {} (keys ECH_SECRET, ECH_CONFIG)",
                o.outer_random
            );
        }
        (Some(r), None) => {
            let _ = writeln!(s, "ClientHello.random {r}");
        }
        _ => {}
    }
    let _ = writeln!(
        s,
        "key log: {}",
        if d.secrets_found.is_empty() {
            "no secrets for this connection".to_string()
        } else {
            format!(
                "{} secrets ({})",
                d.secrets_found.len(),
                d.secrets_found.join(", ")
            )
        }
    );
    if let Some(e) = &d.ech {
        render_ech(&mut s, e);
    }
    s.push('\n');
    s.push_str(&d.ledger.table());
    s.push_str("\nhandshake messages\n");
    for m in &d.messages {
        let _ = writeln!(
            s,
            "  {} {:<12} {:<22} {:>6} bytes{}",
            m.direction.arrow(),
            m.epoch.to_string(),
            m.typ.to_string(),
            m.len,
            if m.valid { "" } else { "  (does not decode)" }
        );
    }
    if !d.app_data.is_empty() {
        s.push_str("\napplication data\n");
        for a in &d.app_data {
            let _ = writeln!(
                s,
                "  {} {:<12} {:>6} bytes  \"{}\"",
                a.direction.arrow(),
                a.epoch.to_string(),
                a.data.len(),
                printable(&a.data, 72)
            );
        }
    }
    s.push_str("\nFinished checks\n");
    if d.finished.is_empty() {
        s.push_str("  none (no ClientHello/ServerHello pair)\n");
    }
    for f in &d.finished {
        let who = match f.direction {
            Direction::ClientToServer => "client",
            Direction::ServerToClient => "server",
        };
        let verdict = match f.verified {
            Some(true) => "verified",
            Some(false) => "WRONG",
            None => "not checked",
        };
        let _ = writeln!(s, "  {who} Finished: {verdict}: {}", f.detail);
    }
    s.push_str("\nnegotiated\n");
    match &d.negotiated {
        Some(n) => {
            s.push_str(&summary_lines(n));
            s.push_str(&summary_line(
                "server name",
                n.server_name.as_deref().unwrap_or("none"),
            ));
        }
        None => s.push_str(&summary_line("handshake", "no ServerHello")),
    }
    let _ = writeln!(
        s,
        "\nmissing secrets: {}",
        if d.missing_secrets.is_empty() {
            if d.undecrypted == 0 {
                "none".to_string()
            } else {
                format!("none listed, but {} record(s) stayed closed", d.undecrypted)
            }
        } else {
            format!(
                "{} ({} record(s) not decrypted)",
                d.missing_secrets.join(", "),
                d.undecrypted
            )
        }
    );
    for n in &d.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

// ------------------------------------------------------------------ Encrypted ClientHello

/// What dissection may use besides the key log.
#[derive(Clone, Copy, Debug, Default)]
pub struct DissectOptions<'a> {
    /// ECH keys (`--ech-key`): the private key of the config a ClientHelloOuter names opens
    /// its inner ClientHello without `ECH_SECRET` (RFC 9849 §7.1).
    pub ech_keys: &'a [EchKeyPair],
}

/// A ClientHelloOuter's `encrypted_client_hello` (RFC 9849 §5) and what opening it gave.
#[derive(Clone, Debug, Serialize)]
pub struct EchHello {
    /// ClientHelloOuter.random, hex: the key of the `ECH_SECRET` and `ECH_CONFIG` lines.
    pub outer_random: String,
    /// The outer server_name (the config's public_name, §6.1).
    pub outer_server_name: Option<String>,
    /// HPKE KDF and AEAD, e.g. `HKDF-SHA256, AES-128-GCM`.
    pub suite: String,
    /// ECHConfigContents.key_config.config_id.
    pub config_id: u8,
    /// The encapsulated key; empty in the ClientHelloOuter after a HelloRetryRequest (§6.1.5).
    #[serde(serialize_with = "tls13lab::ledger::ser_hex")]
    pub enc: Vec<u8>,
    /// The sealed EncodedClientHelloInner, tag included.
    pub payload_len: usize,
    /// The AEAD tag in it, when the suite is known.
    pub tag_len: Option<usize>,
    /// The HPKE context's sequence number that opened it (0, or 1 after a HelloRetryRequest).
    pub sequence: Option<u128>,
    /// ClientHelloInner, once opened and decoded.
    pub inner: Option<InnerHello>,
}

/// ClientHelloInner as the server rebuilt it (§5.1).
#[derive(Clone, Debug, Serialize)]
pub struct InnerHello {
    /// ClientHelloInner.random, hex: the key of the connection's traffic secrets if ECH was
    /// accepted (RFC 9850 §4).
    pub random: String,
    /// Its server_name: the name the client really asked for.
    pub server_name: Option<String>,
    /// Its extensions, in order.
    pub extensions: Vec<String>,
    /// Those copied from ClientHelloOuter by `ech_outer_extensions`.
    pub from_outer: Vec<String>,
    /// The EncodedClientHelloInner the payload held: the ClientHello as encoded, then zeros.
    pub encoded_len: usize,
    /// The padding (§6.1.3).
    pub padding: usize,
    /// Bytes `ech_outer_extensions` saved (§5.1).
    pub saved: usize,
    /// ClientHelloInner with its handshake header.
    pub len: usize,
    /// The message bytes (the transcript's when ECH was accepted).
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

/// ECH as seen in a capture.
#[derive(Clone, Debug, Serialize)]
pub struct EchView {
    /// One per ClientHelloOuter with an outer `encrypted_client_hello`.
    pub hellos: Vec<EchHello>,
    /// What opened the payload: `ECH_SECRET` + `ECH_CONFIG`, or an `--ech-key`.
    pub opened_with: Option<String>,
    /// `Some(true)`: ServerHello.random carries the confirmation (§7.2) and the handshake went
    /// on with ClientHelloInner; `Some(false)`: it does not; `None`: not known.
    pub accepted: Option<bool>,
    /// What would open a payload that stayed closed.
    pub missing: Option<String>,
    /// A key or secret that did not open the payload, an inner hello that does not decode.
    pub problems: Vec<String>,
}

/// The outer `encrypted_client_hello` of a ClientHello message, if it has one.
fn outer_ech(msg: &[u8]) -> Option<(HpkeSymmetricCipherSuite, u8, Vec<u8>, Vec<u8>)> {
    match inner::outer_extension(msg.get(4..)?)? {
        EchClientHello::Outer {
            suite,
            config_id,
            enc,
            payload,
        } => Some((suite, config_id, enc, payload)),
        EchClientHello::Inner => None,
    }
}

fn ext_name(t: u16) -> String {
    match t {
        ECH_OUTER_EXTENSIONS => "ech_outer_extensions".into(),
        t => ExtensionType::from(t).to_string(),
    }
}

/// The HPKE context of `ECH_SECRET` and `ECH_CONFIG` (RFC 9850 §5): KeySchedule over the
/// shared secret with info = "tls ech" || 0x00 || ECHConfig (RFC 9849 §6.1).
fn context_from_log(
    secret: &[u8],
    config: &[u8],
    suite: HpkeSymmetricCipherSuite,
) -> Result<ReceiverContext, String> {
    let mut r = Reader::new(config);
    let c = EchConfig::decode(&mut r)
        .and_then(|c| r.finish("ECH_CONFIG").map(|()| c))
        .map_err(|e| format!("ECH_CONFIG is not an ECHConfig: {e}"))?;
    let contents = c
        .contents()
        .ok_or_else(|| format!("ECH_CONFIG has version {:#06x}, not 0xfe0d", c.version))?;
    let hs = hpke::Suite::from_ids(contents.key_config.kem_id, suite.kdf_id, suite.aead_id)
        .map_err(|e| e.to_string())?;
    hpke::receiver_from_shared_secret(hs, secret, &tls13lab::ech::hpke_info(&c.raw), &mut NoSink)
        .map_err(|e| e.to_string())
}

/// Open the first ClientHelloOuter's payload with the key log's lines, else with the key of
/// the config it names (every key when none has that config_id, as `--ech-trial-decrypt`
/// does): the context and the EncodedClientHelloInner, or `None` with why in `view`.
fn open_first(
    outer: &[u8],
    offer: &(HpkeSymmetricCipherSuite, u8, Vec<u8>, Vec<u8>),
    log: &KeyLog,
    keys: &[EchKeyPair],
    view: &mut EchView,
) -> Option<(ReceiverContext, Vec<u8>)> {
    let (suite, config_id, enc, payload) = offer;
    let body = outer.get(4..)?;
    let random = body.get(2..34)?;
    let aad = inner::aad(body).ok()?;
    let secret = log.get(random, "ECH_SECRET");
    let config = log.get(random, "ECH_CONFIG");
    if let (Some(secret), Some(config)) = (secret, config) {
        match context_from_log(secret, config, *suite) {
            Ok(mut ctx) => match ctx.open(&aad, payload) {
                Ok(pt) => {
                    view.opened_with = Some("ECH_SECRET and ECH_CONFIG from the key log".into());
                    return Some((ctx, pt));
                }
                Err(e) => view.problems.push(format!(
                    "the key log's ECH_SECRET and ECH_CONFIG for this random do not open the \
                     payload ({e})"
                )),
            },
            Err(e) => view
                .problems
                .push(format!("the key log's ECH lines give no HPKE context: {e}")),
        }
    }
    let id_of = |k: &&EchKeyPair| k.config.contents().map(|c| c.key_config.config_id);
    let mut candidates: Vec<&EchKeyPair> = keys
        .iter()
        .filter(|k| id_of(k) == Some(*config_id))
        .collect();
    let trial = candidates.is_empty();
    if trial {
        candidates = keys.iter().collect();
    }
    let mut tried = 0;
    for key in candidates {
        let Some(c) = key.config.contents() else {
            continue;
        };
        let Ok(hs) = hpke::Suite::from_ids(c.key_config.kem_id, suite.kdf_id, suite.aead_id) else {
            continue;
        };
        tried += 1;
        let Ok(mut ctx) = hpke::setup_base_r(
            hs,
            enc,
            &key.key,
            &tls13lab::ech::hpke_info(&key.config.raw),
            &mut NoSink,
        ) else {
            continue;
        };
        if let Ok(pt) = ctx.open(&aad, payload) {
            view.opened_with = Some(format!(
                "the --ech-key of config_id {} (public_name {})",
                c.key_config.config_id,
                c.public_name_str().unwrap_or("?")
            ));
            return Some((ctx, pt));
        }
    }
    if !keys.is_empty() {
        view.problems.push(match (trial, tried) {
            (_, 0) => format!(
                "no --ech-key has the HPKE suite of the payload ({} keys)",
                keys.len()
            ),
            (true, n) => format!(
                "no --ech-key has config_id {config_id}; the {n} tried did not open the payload"
            ),
            (false, _) => format!(
                "the --ech-key of config_id {config_id} did not open the payload (another key \
                 with that config_id, or GREASE)"
            ),
        });
    }
    if secret.is_none() || config.is_none() {
        view.missing = Some(format!(
            "ECH_SECRET and ECH_CONFIG for ClientHelloOuter.random {}, or --ech-key with the \
             private key of config_id {config_id}",
            hex(random)
        ));
    }
    None
}

/// ClientHelloInner rebuilt from an opened EncodedClientHelloInner and its ClientHelloOuter
/// (§5.1), with what the encoding did.
fn rebuild_inner(encoded: &[u8], outer: &[u8]) -> Result<InnerHello, String> {
    let outer_body = outer.get(4..).unwrap_or_default();
    let bytes = inner::decode_message(encoded, outer_body).map_err(|e| e.to_string())?;
    let body = &bytes[4..];
    let (end, from_outer) = inner::encoded_parts(encoded).map_err(|e| e.to_string())?;
    let ch = match HandshakeMessage::decode(&bytes, DecodeContext::default()).map(|m| m.payload) {
        Ok(HandshakePayload::ClientHello(ch)) => ch,
        Ok(_) => return Err("ClientHelloInner is not a ClientHello".into()),
        Err(e) => return Err(format!("ClientHelloInner does not decode: {e}")),
    };
    let parts = HelloParts::parse(body).map_err(|e| e.to_string())?;
    let outer_sid = HelloParts::parse(outer_body)
        .map(|p| p.session_id.1 - p.session_id.0 - 1)
        .unwrap_or(0);
    Ok(InnerHello {
        random: hex(&ch.random),
        server_name: ch.host_name(),
        extensions: parts.exts.iter().map(|e| ext_name(e.typ)).collect(),
        from_outer: from_outer.into_iter().map(ext_name).collect(),
        encoded_len: encoded.len(),
        padding: encoded.len() - end,
        saved: body.len().saturating_sub(end + outer_sid),
        len: bytes.len(),
        bytes,
    })
}

/// RFC 9849 §7.2 from the outside: whether ServerHello.random ends with the confirmation
/// derived from ClientHelloInner.random and the inner transcript (message_hash of the first
/// inner hello, the HelloRetryRequest and the second, after a retry).
fn ech_confirmed(
    inners: &[&InnerHello],
    hrr: Option<&[u8]>,
    sh: &[u8],
    hash: HashAlg,
) -> Option<bool> {
    let first = inners.first()?;
    let random: [u8; 32] = first.bytes.get(6..38)?.try_into().ok()?;
    let mut t = Vec::new();
    match hrr {
        Some(hrr) => {
            let second = inners.get(1)?;
            let h = hash.hash(&first.bytes);
            t.extend_from_slice(&[254, 0, 0, h.len() as u8]);
            t.extend_from_slice(h.as_slice());
            t.extend_from_slice(hrr);
            t.extend_from_slice(&second.bytes);
        }
        None => t.extend_from_slice(&first.bytes),
    }
    t.extend_from_slice(&confirm::zero_server_hello(sh)?);
    let want = confirm::confirmation(hash, &random, ACCEPT_LABEL, hash.hash(&t).as_slice());
    Some(sh.get(confirm::server_hello_range())? == want)
}

/// Find, open and rebuild the inner ClientHello(s) of the plaintext hellos; `None` when the
/// first ClientHello offers no ECH.
fn ech_view(
    client_hellos: &[Vec<u8>],
    server_hellos: &[Vec<u8>],
    log: &KeyLog,
    keys: &[EchKeyPair],
) -> Option<EchView> {
    let first = client_hellos.first()?;
    let offer = outer_ech(first)?;
    let mut view = EchView {
        hellos: Vec::new(),
        opened_with: None,
        accepted: None,
        missing: None,
        problems: Vec::new(),
    };
    let mut ctx: Option<ReceiverContext> = None;
    // A ClientHello after a HelloRetryRequest is the only second one (RFC 8446 §4.1.2).
    for (i, msg) in client_hellos.iter().take(2).enumerate() {
        let Some(o) = outer_ech(msg) else {
            if i > 0 {
                view.problems.push(
                    "the ClientHello after the HelloRetryRequest has no encrypted_client_hello"
                        .into(),
                );
            }
            continue;
        };
        let decoded = HandshakeMessage::decode(msg, DecodeContext::default()).map(|m| m.payload);
        let outer_sni = match &decoded {
            Ok(HandshakePayload::ClientHello(ch)) => ch.host_name(),
            _ => None,
        };
        let tag_len = hpke::Aead::from_id(o.0.aead_id).map(|a| a.tag_len());
        let mut h = EchHello {
            outer_random: msg.get(6..38).map(hex).unwrap_or_default(),
            outer_server_name: outer_sni,
            suite: format!("{}, {}", o.0.kdf_id, o.0.aead_id),
            config_id: o.1,
            enc: o.2.clone(),
            payload_len: o.3.len(),
            tag_len,
            sequence: None,
            inner: None,
        };
        let opened = if i == 0 {
            open_first(msg, &offer, log, keys, &mut view).map(|(c, pt)| {
                ctx = Some(c);
                pt
            })
        } else if let Some(c) = ctx.as_mut() {
            // §6.1.5: the same context, its next sequence number; the AAD is this outer hello.
            let aad = msg.get(4..).and_then(|b| inner::aad(b).ok());
            match aad.map(|a| c.open(&a, &o.3)) {
                Some(Ok(pt)) => Some(pt),
                _ => {
                    view.problems.push(
                        "the second ClientHelloOuter's payload does not open with the first \
                         one's HPKE context"
                            .into(),
                    );
                    None
                }
            }
        } else {
            None
        };
        if let (Some(pt), Some(c)) = (opened, ctx.as_ref()) {
            h.sequence = Some(c.sequence() - 1);
            match rebuild_inner(&pt, msg) {
                Ok(inner) => h.inner = Some(inner),
                Err(e) => view
                    .problems
                    .push(format!("ClientHelloInner {}: {e}", i + 1)),
            }
        }
        view.hellos.push(h);
    }
    // The confirmation needs the suite's hash: the (non-HRR) ServerHello's.
    let mut hrr = None;
    for m in server_hellos {
        let Ok(HandshakePayload::ServerHello(sh)) =
            HandshakeMessage::decode(m, DecodeContext::default()).map(|m| m.payload)
        else {
            continue;
        };
        if sh.is_hello_retry_request() {
            hrr = Some(m.as_slice());
            continue;
        }
        let inners: Vec<&InnerHello> = view
            .hellos
            .iter()
            .filter_map(|h| h.inner.as_ref())
            .collect();
        if let Some(suite) = suite_params(sh.cipher_suite) {
            view.accepted = ech_confirmed(&inners, hrr, m, suite.hash);
        }
        break;
    }
    Some(view)
}

/// The ECH section of [`render`].
fn render_ech(s: &mut String, e: &EchView) {
    use std::fmt::Write as _;
    s.push_str("\nencrypted ClientHello (RFC 9849)\n");
    for (i, h) in e.hellos.iter().enumerate() {
        let _ = writeln!(
            s,
            "  ClientHelloOuter {}{}: server name {}, {}, config_id {}, enc {} bytes, payload {} bytes{}",
            i + 1,
            if i > 0 { " (after HelloRetryRequest)" } else { "" },
            h.outer_server_name.as_deref().unwrap_or("none"),
            h.suite,
            h.config_id,
            h.enc.len(),
            h.payload_len,
            h.tag_len
                .map(|t| format!(" ({} sealed + {t} tag)", h.payload_len.saturating_sub(t)))
                .unwrap_or_default()
        );
        let Some(inner) = &h.inner else {
            s.push_str("    ClientHelloInner: encrypted\n");
            continue;
        };
        let _ = writeln!(
            s,
            "    ClientHelloInner: {} bytes, server name {}, random {}{}",
            inner.len,
            inner.server_name.as_deref().unwrap_or("none"),
            inner.random,
            h.sequence
                .map(|q| format!(" (HPKE sequence {q})"))
                .unwrap_or_default()
        );
        let _ = writeln!(s, "      extensions: {}", inner.extensions.join(", "));
        if !inner.from_outer.is_empty() {
            let _ = writeln!(
                s,
                "      from ClientHelloOuter (ech_outer_extensions): {}; {} bytes saved",
                inner.from_outer.join(", "),
                inner.saved
            );
        }
        let _ = writeln!(
            s,
            "      EncodedClientHelloInner {} bytes: {} of ClientHello, {} of padding",
            inner.encoded_len,
            inner.encoded_len - inner.padding,
            inner.padding
        );
    }
    if let Some(w) = &e.opened_with {
        let _ = writeln!(s, "  opened with {w}");
    }
    let _ = writeln!(
        s,
        "  {}",
        match e.accepted {
            Some(true) =>
                "accepted: ServerHello.random carries the confirmation (§7.2); \
                           the handshake goes on with ClientHelloInner",
            Some(false) =>
                "not accepted: ServerHello.random carries no confirmation; \
                            the handshake goes on with ClientHelloOuter",
            None => "acceptance unknown (ClientHelloInner not read, or no ServerHello)",
        }
    );
    if let Some(m) = &e.missing {
        let _ = writeln!(s, "  to open it: {m}");
    }
    for p in &e.problems {
        let _ = writeln!(s, "  problem: {p}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes() {
        assert_eq!(printable(b"GET /\r\n\x00", 80), "GET /\\r\\n\\x00");
        assert_eq!(printable(b"abcdef", 3), "abc…");
    }

    #[test]
    fn messages_split_at_their_lengths() {
        let (m, used) = split_messages(&[20, 0, 0, 1, 9, 2, 0, 0]);
        assert_eq!(m, vec![vec![20, 0, 0, 1, 9]]);
        assert_eq!(used, 5);
    }
}
