//! Dissect a captured TLS 1.3 connection: the two byte streams (from a pcap/pcapng file via
//! [`crate::pcap::read_capture`], or two raw files) plus an NSS key log become records,
//! decrypted records, handshake messages, application data, a [`Ledger`], Finished checks and
//! what was negotiated ([`Negotiation`]) — the view the endpoints had, rebuilt from the outside.
//!
//! The reading is the core's [`TranscriptReader`]: its deframer, record protection and
//! handshake joiner, and its rules for when each direction's keys change (client → server
//! early if 0-RTT was offered, handshake, application 0, 1, …; server → client handshake,
//! application 0, 1, …; a record the expected key does not open is tried under the next ones,
//! which is how a rejected 0-RTT flight is crossed without reading the state machine's mind).
//! Records no key opens are reported with the secrets that would have opened them. What this
//! module adds: capture times and the order of records across directions, ECH's inner hellos
//! opened with the key log or `--ech-key`, the Finished checks and the report.

use serde::Serialize;

use crate::fingerprint::{self, ClientFingerprints, ServerFingerprints};
use crate::keylog::{self, KeyLog};
use crate::tcp::Stream;
use tls13lab::crypto::ech::EchKeyPair;
use tls13lab::crypto::hash::HashAlg;
use tls13lab::crypto::hpke::{self, ReceiverContext};
use tls13lab::ech::inner;
use tls13lab::ech::wire::{
    EchClientHello, HelloParts, HpkeSymmetricCipherSuite, ECH_OUTER_EXTENSIONS,
};
use tls13lab::events::{hex, Direction, EarlyDataStatus, Epoch, Event, HandshakeEvent};
use tls13lab::keyschedule::NoSink;
use tls13lab::ledger::Ledger;
use tls13lab::messages::codec::Reader;
use tls13lab::messages::ech::EchConfig;
use tls13lab::messages::enums::{ContentType, ExtensionType, HandshakeType};
use tls13lab::messages::handshake::{DecodeContext, HandshakeMessage, HandshakePayload};
use tls13lab::transcript_reader::{ReadRecord, TranscriptReader};

/// What was negotiated, read from the messages: the core's, where the CLI's reports read it
/// too.
pub use tls13lab::transcript_reader::{Negotiation, Seen};

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
    /// A ClientHello's JA3 and JA4 (crate::fingerprint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_fingerprints: Option<ClientFingerprints>,
    /// A ServerHello's (or HelloRetryRequest's) JA4S.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_fingerprints: Option<ServerFingerprints>,
    /// What its newer parts carry, one line each: `trust_anchors` lists with their IDs in
    /// ASCII, each Merkle Tree Certificate's MTCProof byte by byte ([`message_details`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
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
    /// Without a ServerHello no message is read: the plaintext hellos found anyway, with their
    /// fingerprints (empty when `messages` has them).
    pub unread_hellos: Vec<Message>,
    /// Things worth knowing: gaps, truncation, retransmissions, how the order was chosen.
    pub notes: Vec<String>,
    /// The synthesized events (records, handshake messages, data, outcome) the ledger was built
    /// from: the same shape an endpoint reports.
    #[serde(skip)]
    pub events: Vec<Event>,
}

/// A record of one direction as the transcript reader read it, with its capture time.
struct Rec {
    read: ReadRecord,
    time_us: Option<u64>,
}

impl Rec {
    fn direction(&self) -> Direction {
        self.read.direction
    }

    fn epoch(&self) -> Epoch {
        self.read.epoch
    }

    fn inner_type(&self) -> Option<ContentType> {
        self.read.inner.as_ref().map(|i| i.typ)
    }
}

/// What the end of a stream says: cut inside a record, garbage, gaps, retransmissions.
fn stream_notes(
    stream: &Stream,
    direction: Direction,
    reader: &TranscriptReader,
    notes: &mut Vec<String>,
) {
    let partial = reader.partial_len(direction);
    if partial > 0 {
        notes.push(format!(
            "{}: the stream ends inside a record ({partial} bytes left over)",
            direction.arrow(),
        ));
    }
    if let Some(e) = reader.error(direction) {
        notes.push(format!(
            "{}: {e}: nothing after it is read",
            direction.arrow()
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
///
/// The records, their keys and their messages are the core's
/// [`TranscriptReader`]'s; this adds the capture's times and order, ECH's inner hellos, the
/// Finished checks and the report.
pub fn dissect_with(
    c2s: &Stream,
    s2c: &Stream,
    log: &KeyLog,
    timed: bool,
    opts: DissectOptions<'_>,
) -> Dissection {
    let mut notes = Vec::new();
    let streams = [c2s, s2c];
    let mut recs: [Vec<Rec>; 2] = [Vec::new(), Vec::new()];
    let mut offsets = [0usize; 2];
    let mut opener = EchOpener::new(log, opts.ech_keys);
    let mut reader = TranscriptReader::new(log.clone());
    reader.read_streams(&c2s.bytes, &s2c.bytes, |reader, r| {
        let i = usize::from(r.direction == Direction::ServerToClient);
        offsets[i] += r.wire_len();
        if r.direction == Direction::ClientToServer && r.epoch == Epoch::Plaintext {
            for m in r
                .messages
                .iter()
                .filter(|m| m.typ == HandshakeType::ClientHello)
            {
                if let Some(inner) = opener.client_hello(&m.bytes) {
                    reader.add_inner_client_hello(inner);
                }
            }
        }
        recs[i].push(Rec {
            // The time of the record's last byte.
            time_us: timed.then(|| streams[i].time_of(offsets[i] - 1)),
            read: r,
        });
    });
    for (stream, d) in [
        (c2s, Direction::ClientToServer),
        (s2c, Direction::ServerToClient),
    ] {
        stream_notes(stream, d, &reader, &mut notes);
    }
    let mut ech = opener.view;
    if let Some(view) = ech.as_mut() {
        view.accepted = reader.ech_accepted();
    }
    let inners: Vec<&InnerHello> = ech
        .iter()
        .flat_map(|e| &e.hellos)
        .filter_map(|h| h.inner.as_ref())
        .collect();
    let accepted = ech.as_ref().is_some_and(|e| e.accepted == Some(true));
    let random = reader.client_random().map(<[u8]>::to_vec);
    let outer_random = reader.first_client_random().map(<[u8]>::to_vec);
    let suite = reader.suite();
    let mut secrets_found = Vec::new();
    if let Some(random) = &random {
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
    if suite.is_none() && random.is_some() {
        notes.push("no ServerHello found: nothing can be decrypted".into());
    }
    // Without a suite and a random nothing is read past the records' headers, not even the
    // plaintext hellos' messages: what the dissection has always reported.
    let keyed = suite.is_some() && random.is_some();
    // The plaintext hellos' fingerprints need no key: kept even when nothing else is read.
    let mut unread_hellos = Vec::new();
    if !keyed {
        for m in recs
            .iter()
            .flatten()
            .filter(|r| r.epoch() == Epoch::Plaintext)
            .flat_map(|r| &r.read.messages)
        {
            let client = (m.typ == HandshakeType::ClientHello)
                .then(|| fingerprint::client_hello(&m.bytes).ok())
                .flatten();
            let server = (m.typ == HandshakeType::ServerHello)
                .then(|| fingerprint::server_hello(&m.bytes).ok())
                .flatten();
            if client.is_some() || server.is_some() {
                unread_hellos.push(Message {
                    direction: m.direction,
                    epoch: m.epoch,
                    typ: m.typ,
                    len: m.bytes.len(),
                    valid: HandshakeMessage::decode(&m.bytes, DecodeContext::default()).is_ok(),
                    client_fingerprints: client,
                    server_fingerprints: server,
                    details: message_details(&m.bytes, DecodeContext::default()),
                    bytes: m.bytes.clone(),
                });
            }
        }
        for r in recs.iter_mut().flatten() {
            r.read.epoch = Epoch::Plaintext;
            r.read.inner = None;
            r.read.seq = None;
            r.read.tag_len = 0;
            r.read.missing_secret = None;
            r.read.messages.clear();
        }
    }
    let mut missing: Vec<String> = Vec::new();
    let mut undecrypted = 0;
    for r in recs.iter().flatten() {
        if r.read.wire_type() == ContentType::ApplicationData && !r.read.is_open() {
            undecrypted += 1;
        }
        if let Some(label) = r.read.missing_secret {
            if !missing.iter().any(|m| m == label) {
                missing.push(label.to_string());
            }
        }
    }
    let [a, b] = &recs;

    // Order.
    let origin = a
        .iter()
        .chain(b)
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
        handshake_order(a, b)
    };

    // Events: records, handshake messages, data.
    let mut events = Vec::new();
    let mut messages = Vec::new();
    let mut app_data = Vec::new();
    let hash_len = suite.map_or(0, |s| s.hash.output_len());
    let mut outer_seen = 0;
    for r in &order {
        // The record first, then the messages it completed.
        events.push(Event::Record(
            r.read.to_event(r.time_us.unwrap_or(origin) / 1000),
        ));
        for m in &r.read.messages {
            let decoded = HandshakeMessage::decode(&m.bytes, DecodeContext { hash_len });
            events.push(Event::Handshake(m.to_event()));
            // The inner hello beside its outer one, as the server reports it.
            if m.typ == HandshakeType::ClientHello && m.epoch == Epoch::Plaintext {
                if let Some(i) = inners.get(outer_seen) {
                    events.push(Event::InnerClientHello(HandshakeEvent {
                        direction: m.direction,
                        epoch: Epoch::Plaintext,
                        typ: m.typ,
                        bytes: i.bytes.clone(),
                        layout: None,
                    }));
                }
                outer_seen += 1;
            }
            let plain = m.epoch == Epoch::Plaintext;
            messages.push(Message {
                direction: m.direction,
                epoch: m.epoch,
                typ: m.typ,
                len: m.bytes.len(),
                valid: decoded.is_ok(),
                client_fingerprints: (plain && m.typ == HandshakeType::ClientHello)
                    .then(|| fingerprint::client_hello(&m.bytes).ok())
                    .flatten(),
                server_fingerprints: (plain && m.typ == HandshakeType::ServerHello)
                    .then(|| fingerprint::server_hello(&m.bytes).ok())
                    .flatten(),
                details: message_details(&m.bytes, DecodeContext { hash_len }),
                bytes: m.bytes.clone(),
            });
        }
        if let Some(inner) = r.read.inner.as_ref() {
            if inner.typ == ContentType::ApplicationData {
                app_data.push(AppData {
                    direction: r.direction(),
                    epoch: r.epoch(),
                    data: inner.content.clone(),
                });
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
    let finished = match (suite, random.as_deref()) {
        (Some(suite), Some(random)) => check_finished(
            &transcript_messages,
            suite.hash,
            random,
            reader.hello_retry(),
            accepted,
            log,
        ),
        _ => Vec::new(),
    };
    let negotiated = if keyed { reader.negotiation() } else { None };
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
        client_random: random.as_deref().map(hex),
        ech,
        secrets_found,
        missing_secrets: missing,
        ledger,
        messages,
        app_data,
        finished,
        negotiated,
        undecrypted,
        unread_hellos,
        notes,
        events: all_events,
    }
}

/// Records of raw streams in the order the handshake forces.
fn handshake_order<'a>(a: &'a [Rec], b: &'a [Rec]) -> Vec<&'a Rec> {
    let has = |r: &Rec, t: HandshakeType| r.read.messages.iter().any(|m| m.typ == t);
    let is_alert = |r: &Rec| r.inner_type() == Some(ContentType::Alert);
    // Client: first flight = up to the first record under handshake keys (or the second
    // ClientHello after a HelloRetryRequest, which is treated like the rest).
    let c_first = a
        .iter()
        .position(|r| {
            r.epoch() == Epoch::Handshake
                || (r.epoch() != Epoch::Plaintext && r.epoch() != Epoch::Early)
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

/// Verify both Finished messages against the transcript (§4.4.1, §4.4.4): the handshake's
/// hash, the random its secrets go by, whether a HelloRetryRequest came first and whether the
/// transcript's ClientHellos are ECH's inner ones.
fn check_finished(
    messages: &[Message],
    hash: HashAlg,
    random: &[u8],
    hello_retry: bool,
    ech_accepted: bool,
    log: &KeyLog,
) -> Vec<FinishedCheck> {
    let mut out = Vec::new();
    let c: Vec<&Message> = messages
        .iter()
        .filter(|m| m.direction == Direction::ClientToServer)
        .collect();
    let s: Vec<&Message> = messages
        .iter()
        .filter(|m| m.direction == Direction::ServerToClient)
        .collect();
    // Transcript: ClientHello1 [HelloRetryRequest ClientHello2] ServerHello ... server Finished,
    // and the types of its messages.
    let mut transcript: Vec<u8> = Vec::new();
    let mut types: Vec<HandshakeType> = Vec::new();
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
    if hello_retry {
        // §4.4.1: ClientHello1 is replaced by message_hash(Hash(ClientHello1)).
        let h = hash.hash(&ch1);
        transcript.extend_from_slice(&[254, 0, 0, h.len() as u8]);
        transcript.extend_from_slice(h.as_slice());
        types.push(HandshakeType::from(254));
        let Some(hrr) = take(&s, &mut si, HandshakeType::ServerHello) else {
            return out;
        };
        transcript.extend_from_slice(&hrr);
        types.push(HandshakeType::ServerHello);
        let Some(ch2) = take(&c, &mut ci, HandshakeType::ClientHello) else {
            return out;
        };
        transcript.extend_from_slice(&ch2);
        types.push(HandshakeType::ClientHello);
    } else {
        transcript.extend_from_slice(&ch1);
        types.push(HandshakeType::ClientHello);
    }
    // Server flight up to (not including) its Finished.
    while let Some(m) = s.get(si) {
        if m.typ == HandshakeType::Finished {
            break;
        }
        transcript.extend_from_slice(&m.bytes);
        types.push(m.typ);
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
    let names = |types: &[HandshakeType]| -> String {
        let v: Vec<String> = types
            .iter()
            .map(|t| crate::ladder::message_name(*t))
            .map(|n| match n.as_str() {
                "ClientHello" if ech_accepted => "ClientHelloInner".into(),
                _ => n,
            })
            .collect();
        v.join(" ")
    };
    let covers = names(&types);
    check(
        Direction::ServerToClient,
        s.get(si),
        &transcript,
        "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        covers,
    );
    if let Some(f) = s.get(si) {
        transcript.extend_from_slice(&f.bytes);
        types.push(f.typ);
    }
    // Client: EndOfEarlyData, Certificate, CertificateVerify before its Finished.
    while let Some(m) = c.get(ci) {
        if m.typ == HandshakeType::Finished {
            break;
        }
        transcript.extend_from_slice(&m.bytes);
        types.push(m.typ);
        ci += 1;
    }
    let covers = names(&types);
    check(
        Direction::ClientToServer,
        c.get(ci),
        &transcript,
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        covers,
    );
    out
}

/// What a handshake message's newer parts carry, one line each, every byte counted:
///
/// - a `trust_anchors` extension (draft-ietf-tls-trust-anchor-ids §4.1): in a ClientHello or
///   CertificateRequest the RequestedTrustAnchorList, in EncryptedExtensions the
///   AvailableTrustAnchorList, each ID in its ASCII form (§3); in a CertificateEntry, empty;
/// - a Merkle Tree Certificate (draft-ietf-plants-merkle-tree-certs §6.2): the serial's log
///   and index, the issuer's CA ID, and its signatureValue split into the MTCProof's fields,
///   each cosignature with its cosigner ID.
///
/// Nothing for a message that does not decode.
pub fn message_details(bytes: &[u8], ctx: DecodeContext) -> Vec<String> {
    let Ok(m) = HandshakeMessage::decode(bytes, ctx) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    details_in(&m.layout(), bytes, m.typ(), &mut out);
    out
}

fn details_in(
    spans: &[tls13lab::messages::layout::Span],
    bytes: &[u8],
    typ: HandshakeType,
    out: &mut Vec<String>,
) {
    let mut entry = 0;
    for s in spans {
        let body = |name: &str| {
            s.children
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| bytes.get(c.offset..c.end()))
        };
        if s.name == ExtensionType::TrustAnchors.to_string()
            || s.name
                .starts_with(&format!("{} (", ExtensionType::TrustAnchors))
        {
            out.push(trust_anchors_line(
                typ,
                body("extension_data").unwrap_or(&[]),
            ));
        } else if s.name == "cert_data" {
            if let Some(der) = body("data") {
                out.extend(mtc_lines(entry, der));
            }
            entry += 1;
        } else {
            details_in(&s.children, bytes, typ, out);
        }
    }
}

/// One `trust_anchors` extension in words (draft-ietf-tls-trust-anchor-ids §4.1).
fn trust_anchors_line(typ: HandshakeType, body: &[u8]) -> String {
    let ascii = |id: &Vec<u8>| tls13lab::trust_anchors::to_ascii(id);
    let list = |ids: Result<Vec<Vec<u8>>, _>| match ids {
        Ok(ids) if ids.is_empty() => "empty".to_string(),
        Ok(ids) => ids.iter().map(ascii).collect::<Vec<_>>().join(", "),
        Err(e) => format!("does not decode: {e}"),
    };
    let n = body.len();
    match typ {
        HandshakeType::ClientHello | HandshakeType::CertificateRequest => format!(
            "trust_anchors {n} B, RequestedTrustAnchorList: {}",
            list(tls13lab::trust_anchors::decode_requested(body))
        ),
        HandshakeType::EncryptedExtensions => format!(
            "trust_anchors {n} B, AvailableTrustAnchorList: {}",
            list(tls13lab::trust_anchors::decode_available(body))
        ),
        _ if n == 0 => {
            "trust_anchors (empty): this certificate matched a requested trust anchor".into()
        }
        _ => format!("trust_anchors {n} B: should be empty here (§4.1)"),
    }
}

/// A Merkle Tree Certificate (the `entry`-th CertificateEntry's `der`) in words: nothing if
/// it is not one. The sums add up to the signatureValue's bytes.
fn mtc_lines(entry: usize, der: &[u8]) -> Vec<String> {
    use tls13lab::crypto::cert::mtc::{parse_mtc, MtcProof, HASH_SIZE};
    let Ok(c) = parse_mtc(der) else {
        return Vec::new();
    };
    let ascii = |id: &[u8]| tls13lab::trust_anchors::to_ascii(id);
    let p = c.proof.len();
    // The BIT STRING's contents: the unused-bits byte, then the MTCProof.
    let header = match p + 1 {
        n if n < 0x80 => 2,
        n if n < 0x100 => 3,
        n if n < 0x10000 => 4,
        _ => 5,
    };
    let mut out = vec![format!(
        "#{entry} Merkle Tree Certificate (id-alg-mtcProof), CA {}, serial {} = log {} index {}; {} bytes",
        c.ca_id.to_ascii(),
        c.serial,
        c.serial >> 48,
        c.serial & 0xffff_ffff_ffff,
        der.len()
    )];
    out.push(format!(
        "   signatureValue {} = tag, length {header} + unused bits 1 + MTCProof {p}",
        header + 1 + p
    ));
    let Ok(m) = MtcProof::decode(c.proof) else {
        out.push("   MTCProof does not decode".into());
        return out;
    };
    let sigs: usize = m
        .signatures
        .iter()
        .map(|s| 1 + s.cosigner_id.len() + 2 + s.signature.len())
        .sum();
    let hashes = m.inclusion_proof.len();
    out.push(format!(
        "   MTCProof {p} = extensions 2+{} + start 6 ({}) + end 6 ({}) + inclusion_proof 2+{} ({hashes} hash{} of {HASH_SIZE}) + signatures 2+{sigs} ({})",
        m.extensions.len(),
        m.start,
        m.end,
        hashes * HASH_SIZE,
        if hashes == 1 { "" } else { "es" },
        match m.signatures.len() {
            0 => "none: landmark-relative".to_string(),
            n => format!("{n}: standalone"),
        }
    ));
    for s in &m.signatures {
        out.push(format!(
            "   cosigner {}: cosigner_id 1+{} + signature 2+{}",
            ascii(s.cosigner_id),
            s.cosigner_id.len(),
            s.signature.len()
        ));
    }
    out
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
    if !d.unread_hellos.is_empty() {
        s.push_str(
            "  not read without a ServerHello; the plaintext hellos and their fingerprints:\n",
        );
    }
    for m in d.messages.iter().chain(&d.unread_hellos) {
        let _ = writeln!(
            s,
            "  {} {:<12} {:<22} {:>6} bytes{}",
            m.direction.arrow(),
            m.epoch.to_string(),
            m.typ.to_string(),
            m.len,
            if m.valid { "" } else { "  (does not decode)" }
        );
        if let Some(f) = &m.client_fingerprints {
            let _ = writeln!(s, "      JA3 {}  JA4 {}", f.ja3, f.ja4);
            let _ = writeln!(s, "      JA3 string {}", f.ja3_full);
        }
        if let Some(f) = &m.server_fingerprints {
            let _ = writeln!(s, "      JA4S {}", f.ja4s);
        }
        for d in &m.details {
            let _ = writeln!(s, "      {d}");
        }
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

/// Finds, opens and rebuilds the inner ClientHello(s) as the plaintext hellos are read: the
/// view stays `None` when the first ClientHello offers no ECH.
struct EchOpener<'a> {
    log: &'a KeyLog,
    keys: &'a [EchKeyPair],
    /// ClientHello messages seen.
    hellos: usize,
    /// The first ClientHelloOuter's offer.
    offer: Option<(HpkeSymmetricCipherSuite, u8, Vec<u8>, Vec<u8>)>,
    ctx: Option<ReceiverContext>,
    view: Option<EchView>,
}

impl<'a> EchOpener<'a> {
    fn new(log: &'a KeyLog, keys: &'a [EchKeyPair]) -> EchOpener<'a> {
        EchOpener {
            log,
            keys,
            hellos: 0,
            offer: None,
            ctx: None,
            view: None,
        }
    }

    /// A plaintext ClientHello message of the client's stream: its ClientHelloInner, when it
    /// has one and it opens and decodes.
    fn client_hello(&mut self, msg: &[u8]) -> Option<Vec<u8>> {
        let decoded = HandshakeMessage::decode(msg, DecodeContext::default()).map(|m| m.payload);
        let Ok(HandshakePayload::ClientHello(ch)) = decoded else {
            return None;
        };
        let i = self.hellos;
        self.hellos += 1;
        if i == 0 {
            self.offer = Some(outer_ech(msg)?);
            self.view = Some(EchView {
                hellos: Vec::new(),
                opened_with: None,
                accepted: None,
                missing: None,
                problems: Vec::new(),
            });
        }
        // A ClientHello after a HelloRetryRequest is the only second one (RFC 8446 §4.1.2).
        let (view, offer) = (self.view.as_mut()?, self.offer.as_ref()?);
        if i >= 2 {
            return None;
        }
        let Some(o) = outer_ech(msg) else {
            view.problems.push(
                "the ClientHello after the HelloRetryRequest has no encrypted_client_hello".into(),
            );
            return None;
        };
        let tag_len = hpke::Aead::from_id(o.0.aead_id).map(|a| a.tag_len());
        let mut h = EchHello {
            outer_random: msg.get(6..38).map(hex).unwrap_or_default(),
            outer_server_name: ch.host_name(),
            suite: format!("{}, {}", o.0.kdf_id, o.0.aead_id),
            config_id: o.1,
            enc: o.2.clone(),
            payload_len: o.3.len(),
            tag_len,
            sequence: None,
            inner: None,
        };
        let opened = if i == 0 {
            open_first(msg, offer, self.log, self.keys, view).map(|(c, pt)| {
                self.ctx = Some(c);
                pt
            })
        } else if let Some(c) = self.ctx.as_mut() {
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
        if let (Some(pt), Some(c)) = (opened, self.ctx.as_ref()) {
            h.sequence = Some(c.sequence() - 1);
            match rebuild_inner(&pt, msg) {
                Ok(inner) => h.inner = Some(inner),
                Err(e) => view
                    .problems
                    .push(format!("ClientHelloInner {}: {e}", i + 1)),
            }
        }
        let bytes = h.inner.as_ref().map(|i| i.bytes.clone());
        view.hellos.push(h);
        bytes
    }
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

    /// A captured MTC handshake: the trust anchor lists in ASCII and each proof's bytes, the
    /// sums checked against the certificate the server sent.
    #[test]
    fn mtc_handshakes_show_trust_anchors_and_the_proof_byte_by_byte() {
        use tls13lab::crypto::cert::mtc::{parse_mtc, MtcProof, TrustAnchorId};
        for landmark in [false, true] {
            let (events, _) = crate::illustrate::mtc_handshake(landmark);
            let w = crate::pcap::pcapng(&events, Default::default(), 1460).unwrap();
            let cap = crate::pcap::read_capture(&w.bytes).unwrap();
            let c = &cap.connections[0];
            let d = dissect(&c.c2s, &c.s2c, &cap.keylog, true);
            let text = render(&d);
            let ascii = |id: &[u8]| TrustAnchorId::from_binary(id).unwrap().to_ascii();
            let (mut asked, mut offered) = (None, None);
            for e in &events {
                match e {
                    Event::TrustAnchorsAvailable { ids } => offered = Some(ids.clone()),
                    Event::Handshake(h) if h.typ == HandshakeType::ClientHello => {
                        let m = HandshakeMessage::decode(&h.bytes, DecodeContext::default());
                        if let Ok(HandshakePayload::ClientHello(ch)) = m.map(|m| m.payload) {
                            asked = ch.extensions.iter().find_map(|x| match x {
                                tls13lab::messages::extensions::Extension::Unknown {
                                    typ: ExtensionType::TrustAnchors,
                                    body,
                                } => tls13lab::trust_anchors::decode_requested(body).ok(),
                                _ => None,
                            });
                        }
                    }
                    _ => {}
                }
            }
            let asked: Vec<String> = asked.unwrap().iter().map(|i| ascii(i)).collect();
            let offered: Vec<String> = offered.unwrap().iter().map(|i| ascii(i)).collect();
            assert!(
                text.contains(&format!("RequestedTrustAnchorList: {}\n", asked.join(", "))),
                "{text}"
            );
            assert!(
                text.contains(&format!(
                    "AvailableTrustAnchorList: {}\n",
                    offered.join(", ")
                )),
                "{text}"
            );
            assert!(text.contains("trust_anchors (empty): this certificate matched"));
            let cert = d
                .messages
                .iter()
                .find(|m| m.typ == HandshakeType::Certificate)
                .unwrap();
            let der = match HandshakeMessage::decode(&cert.bytes, DecodeContext::default())
                .unwrap()
                .payload
            {
                HandshakePayload::Certificate(c) => c.entries[0].cert_data.clone(),
                _ => unreachable!(),
            };
            let mtc = parse_mtc(&der).unwrap();
            let proof = MtcProof::decode(mtc.proof).unwrap();
            // Each line's parts add up to its total: the signatureValue's to the element, the
            // MTCProof's to the proof.
            let sums = |head: &str| {
                let line = cert
                    .details
                    .iter()
                    .find(|l| l.trim_start().starts_with(head))
                    .unwrap();
                let (total, parts) = line.trim_start()[head.len()..].split_once(" = ").unwrap();
                let sum: usize = parts
                    .split(" + ")
                    .map(|part| {
                        let n = part
                            .split_whitespace()
                            .find(|t| t.chars().all(|c| c.is_ascii_digit() || c == '+'))
                            .unwrap();
                        n.split('+')
                            .map(|x| x.parse::<usize>().unwrap())
                            .sum::<usize>()
                    })
                    .sum();
                (total.parse::<usize>().unwrap(), sum, line.clone())
            };
            let (total, sum, line) = sums("MTCProof ");
            assert_eq!((total, sum), (mtc.proof.len(), mtc.proof.len()), "{line}");
            let (total, sum, _) = sums("signatureValue ");
            assert_eq!(total, sum);
            // The BIT STRING element as DER writes it: tag, length octets, unused-bits byte,
            // the proof; it ends the certificate.
            let content = mtc.proof.len() + 1;
            let length_octets = if content < 0x80 {
                1
            } else {
                1 + (usize::BITS - content.leading_zeros()).div_ceil(8) as usize
            };
            let element = 1 + length_octets + content;
            assert_eq!(total, element);
            assert_eq!(der[der.len() - element], 0x03, "a BIT STRING");
            assert!(der.ends_with(mtc.proof));
            assert!(line.contains(&format!("({} hash", proof.inclusion_proof.len())));
            for s in &proof.signatures {
                assert!(text.contains(&format!(
                    "cosigner {}: cosigner_id 1+{} + signature 2+{}",
                    ascii(s.cosigner_id),
                    s.cosigner_id.len(),
                    s.signature.len()
                )));
            }
            assert_eq!(proof.signatures.is_empty(), landmark);
            // The ledger's certificate line names the proof and the entry's extension.
            assert!(text.contains(&format!(
                "(MTCProof: {} inclusion proof hashes, {} cosignatures)",
                proof.inclusion_proof.len(),
                proof.signatures.len()
            )));
            assert!(
                text.contains("; entry extensions 6 (trust_anchors)"),
                "{text}"
            );
            assert!(text.contains(&format!(
                "CA {}, serial {}",
                mtc.ca_id.to_ascii(),
                mtc.serial
            )));
        }
    }

    #[test]
    fn printable_escapes() {
        assert_eq!(printable(b"GET /\r\n\x00", 80), "GET /\\r\\n\\x00");
        assert_eq!(printable(b"abcdef", 3), "abc…");
    }
}
