//! Dissect a captured TLS 1.3 connection: the two byte streams (from a pcap/pcapng file via
//! [`crate::lab::pcap::read_capture`], or two raw files) plus an NSS key log become records,
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

use crate::crypto::aead::{suite_params, SuiteParams};
use crate::events::{
    hex, Direction, EarlyDataStatus, Epoch, Event, HandshakeEvent, Negotiated, RecordEvent,
};
use crate::lab::keylog::{self, KeyLog};
use crate::lab::tcp::Stream;
use crate::ledger::Ledger;
use crate::messages::enums::{
    CipherSuite, ContentType, ExtensionType, HandshakeType, NamedGroup, ProtocolVersion,
    PskKeyExchangeMode, ServerNameType, SignatureScheme,
};
use crate::messages::extensions::Extension;
use crate::messages::handshake::{ClientHello, DecodeContext, HandshakeMessage, HandshakePayload};
use crate::record::deframer::OpaqueRecord;
use crate::record::protect::RecordProtector;

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
    #[serde(serialize_with = "crate::ledger::ser_hex")]
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
    /// ClientHello.random, hex: the key of the key log lines.
    pub client_random: Option<String>,
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
        }
    }
    for m in split_messages(&plain(s2c)).0 {
        if let Ok(HandshakePayload::ServerHello(sh)) =
            HandshakeMessage::decode(&m, DecodeContext::default()).map(|m| m.payload)
        {
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
    let mut notes = Vec::new();
    let mut a = deframe(c2s, Direction::ClientToServer, timed, &mut notes);
    let mut b = deframe(s2c, Direction::ServerToClient, timed, &mut notes);
    let hs = hellos(&a, &b);
    let mut missing = Vec::new();
    let mut secrets_found = Vec::new();
    if let Some(random) = &hs.random {
        for l in &log.lines {
            if &l.client_random == random && !secrets_found.contains(&l.label) {
                secrets_found.push(l.label.clone());
            }
        }
        if secrets_found.is_empty() {
            notes.push(format!(
                "the key log has no line for ClientHello.random {}",
                hex(random)
            ));
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

    let finished = check_finished(&messages, &hs, log);
    let negotiated = negotiation(&messages, hash_len, log, hs.random.as_deref());
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
            .map(|m| crate::lab::ladder::message_name(HandshakeType::from(m[0])))
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
    if let Some(r) = &d.client_random {
        let _ = writeln!(s, "ClientHello.random {r}");
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
