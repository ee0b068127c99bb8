//! A passive transcript reader: one connection rebuilt from the outside, from the bytes each
//! way and the traffic secrets of a key log.
//!
//! ```text
//! client → server bytes ─► Deframer ─┐                              ┌─► ReadRecord: header, epoch, seq,
//!                                    ├─► RecordProtector::open ─────┤   inner type, plaintext, padding, tag
//! server → client bytes ─► Deframer ─┘   (keys: KeyLog + the rules) └─► HandshakeJoiner ─► ReadMessage
//!                                                                        └─► Negotiating ─► Negotiation
//! ```
//!
//! The parts are the core's own: [`Deframer`], [`RecordProtector`], [`HandshakeJoiner`] and
//! [`HandshakeMessage::decode`], as a connection uses them, and the secrets come from a
//! [`KeyLog`] (an NSS key log file, or [`KeyLog::from_events`] for an endpoint's reported
//! secrets). The lab's dissector reads captures with it, and what was negotiated comes out of
//! the same [`Negotiating`] that the CLI's reports read an endpoint's events with: one
//! reconstruction of a connection, not one per instrument.
//!
//! # When keys change, seen from the outside
//!
//! An endpoint knows when it changes keys; an observer knows only what the messages say, by the
//! protocol's rules (RFC 8446 §2, §4.2.10, §4.6.3, §5.1, §7), which are encoded here once:
//!
//! - The first ClientHello's random names the connection's secrets in the key log — or
//!   ClientHelloInner's, when ECH was accepted (RFC 9850 §4): the caller, who can open the
//!   outer ClientHello, says which inner one it held
//!   ([`add_inner_client_hello`](TranscriptReader::add_inner_client_hello)) and the reader
//!   checks the ServerHello's confirmation (RFC 9849 §7.2).
//! - The ServerHello (not a HelloRetryRequest) names the suite, so no protected record opens
//!   before it: client records wait for it, server records wait until the ClientHellos it
//!   answers (two after a HelloRetryRequest) have been read. The caller feeds both directions
//!   as it has them; a direction that has to wait for the other takes no more input.
//! - Client → server: `client_early_traffic_secret` when the first ClientHello offered
//!   early_data, until EndOfEarlyData; then the handshake key. A server that rejected 0-RTT
//!   left the client without EndOfEarlyData, so a record the early key does not open is tried
//!   under the handshake key (the trial a rejecting server makes, §4.2.10).
//! - Each side's Finished under its handshake key moves it to `application_traffic_secret_0`;
//!   each KeyUpdate to the next generation (§7.2). Keys change only where a record ends
//!   (§5.1), so only the message that ends a record can move them: one step per record.
//! - A record the expected key does not open (its epoch's messages went unread: a secret missing
//!   from the key log) is tried under the following keys, up to the next application
//!   generation but one; one that none opens is reported closed, under the epoch it most likely
//!   belongs to, with the secret that would open it.
//!
//! # Bounds
//!
//! Per direction the reader holds at most one incomplete record (the deframer), one record
//! waiting for the other direction, one handshake message being joined (at most
//! [`max_handshake_message`](TranscriptReader::max_handshake_message) bytes;
//! [`MAX_CLIENT_HELLO`] for ClientHellos) and the keys of at most five epochs (the current one,
//! the one before it, those tried after it). The hellos it keeps for
//! ECH are two ClientHelloInner messages and one HelloRetryRequest and ServerHello. Garbage
//! stops a direction (a bad record header, a handshake message over the limit) and is reported
//! by [`error`](TranscriptReader::error); nothing panics.

mod negotiation;

pub use negotiation::{Negotiating, Negotiation, Seen};

use crate::crypto::aead::{suite_params, SuiteParams};
use crate::ech::confirm::{self, ACCEPT_LABEL};
use crate::events::{Direction, Epoch, HandshakeEvent, RecordEvent};
use crate::keylog::{self, KeyLog};
use crate::keyschedule::hkdf::expand_label;
use crate::messages::enums::{ContentType, ExtensionType, HandshakeType};
use crate::messages::handshake::{DecodeContext, HandshakeMessage, HandshakePayload};
use crate::record::joiner::DEFAULT_MAX_HANDSHAKE;
use crate::record::{
    Deframer, HandshakeJoiner, InnerPlaintext, OpaqueRecord, RecordError, RecordProtector,
    HEADER_LEN, MAX_CLIENT_HELLO,
};

/// One record as the reader saw it: as received, and as opened when a key opened it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRecord {
    /// Which way it went.
    pub direction: Direction,
    /// The 5 header bytes as received.
    pub header: [u8; HEADER_LEN],
    /// Bytes after the header.
    pub payload_len: usize,
    /// [`Epoch::Plaintext`] for a TLSPlaintext record; the epoch whose key opened a protected
    /// one; for a protected record that stayed closed, the epoch it most likely belongs to.
    pub epoch: Epoch,
    /// The content with its real type and padding: a plaintext record's fragment (type the
    /// outer type, no padding) or a protected record's TLSInnerPlaintext; `None` while closed.
    pub inner: Option<InnerPlaintext>,
    /// The AEAD sequence number it opened at (§5.3); `None` unless opened.
    pub seq: Option<u64>,
    /// Tag bytes of the AEAD that opened it: 16, 8 under AES-128-CCM-8; 0 unless opened.
    pub tag_len: usize,
    /// A closed record: the key log label of the secret that would likely open it, when the
    /// key log has no such line for this connection.
    pub missing_secret: Option<&'static str>,
    /// The handshake messages this record completed, in order.
    pub messages: Vec<ReadMessage>,
}

impl ReadRecord {
    /// Bytes on the wire: header plus payload.
    pub fn wire_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// The outer type: TLSPlaintext.type, or application_data for a protected record (§5.2).
    pub fn wire_type(&self) -> ContentType {
        ContentType::from(self.header[0])
    }

    /// Whether a key opened it (or it needed none).
    pub fn is_open(&self) -> bool {
        self.inner.is_some()
    }

    /// The record as an endpoint reports it ([`RecordEvent`]), at `time_ms`. A closed record
    /// reports its outer type, no content and its whole payload as plaintext length: what is
    /// known of it.
    pub fn to_event(&self, time_ms: u64) -> RecordEvent {
        let wire_type = self.wire_type();
        let (inner_type, plaintext_len, padding_len, content) = match &self.inner {
            Some(p) => (p.typ, p.content.len(), p.padding, p.content.clone()),
            None => (wire_type, self.payload_len, 0, Vec::new()),
        };
        RecordEvent {
            direction: self.direction,
            epoch: self.epoch,
            time_ms,
            header: self.header.to_vec(),
            wire_type,
            inner_type,
            wire_len: self.wire_len(),
            payload_len: self.payload_len,
            plaintext_len,
            padding_len,
            tag_len: self.tag_len,
            seq: self.seq,
            content,
        }
    }
}

/// One handshake message, whole, as joined from the records that carried it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadMessage {
    /// Which way it went.
    pub direction: Direction,
    /// The epoch of the record that completed it.
    pub epoch: Epoch,
    /// Its type, from its header.
    pub typ: HandshakeType,
    /// The message with its 4-byte header: what the transcript hash covers.
    pub bytes: Vec<u8>,
    /// Whether it ended exactly where its record ended (§5.1: a key change must).
    pub ends_record: bool,
}

impl ReadMessage {
    /// The message as an endpoint reports it (without a field layout).
    pub fn to_event(&self) -> HandshakeEvent {
        HandshakeEvent {
            direction: self.direction,
            epoch: self.epoch,
            typ: self.typ,
            bytes: self.bytes.clone(),
            layout: None,
        }
    }
}

/// The keys of one epoch of one direction, derived once.
#[derive(Debug)]
struct Keys {
    epoch: Epoch,
    /// The traffic secret, kept while a following application generation may derive from it.
    secret: Option<Vec<u8>>,
    protector: Option<RecordProtector>,
}

/// One direction.
#[derive(Debug)]
struct Side {
    direction: Direction,
    deframer: Deframer,
    /// A deframing error: the direction stops there.
    framing: Option<RecordError>,
    joiner: HandshakeJoiner,
    /// A joining error: no more messages this way.
    joining: Option<RecordError>,
    /// A protected record waiting for the other direction.
    held: Option<OpaqueRecord>,
    /// The caller has no more bytes this way.
    ended: bool,
    /// The epoch the next protected record is expected under.
    current: Epoch,
    /// Whether this direction's epochs begin with 0-RTT.
    early: bool,
    /// The keys of `current` and the epochs after it that were tried.
    keys: Vec<Keys>,
    /// The ClientHello.random `keys` were derived for.
    keys_random: Option<[u8; 32]>,
}

impl Side {
    fn new(direction: Direction, max_message: usize) -> Side {
        let mut joiner = HandshakeJoiner::new(max_message);
        if direction == Direction::ClientToServer {
            joiner.set_client_hello_limit(Some(MAX_CLIENT_HELLO.max(max_message)));
        }
        Side {
            direction,
            deframer: Deframer::new(),
            framing: None,
            joiner,
            joining: None,
            held: None,
            ended: false,
            current: Epoch::Handshake,
            early: false,
            keys: Vec::new(),
            keys_random: None,
        }
    }

    /// The epoch after `e` in this direction: early (client, when offered), handshake,
    /// application 0, 1, … (`None` past 2^64 - 1 generations).
    fn next(&self, e: Epoch) -> Option<Epoch> {
        match e {
            Epoch::Plaintext if self.early => Some(Epoch::Early),
            Epoch::Plaintext | Epoch::Early => Some(Epoch::Handshake),
            Epoch::Handshake => Some(Epoch::Application(0)),
            Epoch::Application(n) => n.checked_add(1).map(Epoch::Application),
        }
    }

    /// Move to `e`, forgetting the keys of the epochs before it but the one just before (the
    /// next application generation derives from it).
    fn advance(&mut self, e: Epoch) {
        self.current = e;
        self.keys
            .retain(|k| rank(k.epoch).saturating_add(1) >= rank(e));
    }
}

/// Order of epochs within a direction.
fn rank(e: Epoch) -> u64 {
    match e {
        Epoch::Plaintext => 0,
        Epoch::Early => 1,
        Epoch::Handshake => 2,
        Epoch::Application(n) => n.saturating_add(3),
    }
}

fn index(d: Direction) -> usize {
    match d {
        Direction::ClientToServer => 0,
        Direction::ServerToClient => 1,
    }
}

/// What a protected record can be opened with now.
enum Access {
    /// Wait for the other direction.
    Wait,
    /// Never: no suite or no ClientHello.random.
    Never,
    /// Before the hellos are complete (after a HelloRetryRequest, before the second
    /// ClientHello): a client record sent then is 0-RTT, under this random.
    EarlyOnly([u8; 32]),
    /// The hellos are read: every epoch, under this random.
    Keyed([u8; 32]),
}

/// Reads one connection from the outside: both directions' bytes in, [`ReadRecord`]s out, with
/// their handshake messages; what was negotiated on the side. See the [module
/// documentation](self) for the rules it follows.
///
/// ```
/// use std::sync::Arc;
/// use tls13lab::crypto::random::SeededRandom;
/// use tls13lab::keylog::KeyLog;
/// use tls13lab::transcript_reader::TranscriptReader;
/// use tls13lab::{Client, ClientConfig, Event, Observe, Server};
///
/// // A handshake in memory, its bytes kept each way; the client reports its secrets.
/// let (server_config, root) = lab::demo::server_config(7, 1_700_000_000_000).unwrap();
/// let mut config = ClientConfig::new(vec![root]);
/// config.server_name = Some("localhost".into());
/// config.observe = Observe::ALL_WITH_SECRETS;
/// let mut client = Client::new(Arc::new(config), Box::new(SeededRandom::from_seed(1))).unwrap();
/// let mut server =
///     Server::new(Arc::new(server_config), Box::new(SeededRandom::from_seed(2))).unwrap();
/// let now = 1_700_000_000_000;
/// client.start(now).unwrap();
/// let (mut c2s, mut s2c) = (client.take_output(), Vec::new());
/// server.receive(&c2s, now).unwrap();
/// s2c.extend(server.take_output());
/// client.receive(&s2c, now).unwrap();
/// client.send(b"ping").unwrap();
/// let finished = client.take_output();
/// server.receive(&finished, now).unwrap();
/// c2s.extend(finished);
///
/// // Read from the outside with the key log of those secrets.
/// let events: Vec<Event> = client.events().collect();
/// let mut reader = TranscriptReader::new(KeyLog::from_events(&events));
/// let mut records = Vec::new();
/// reader.read_streams(&c2s, &s2c, |_, r| records.push(r));
/// assert!(records.iter().all(|r| r.is_open()));
/// let last = records.last().unwrap();
/// assert_eq!(last.inner.as_ref().unwrap().content, b"ping");
/// let n = reader.negotiation().unwrap();
/// assert_eq!(n.to_negotiated().as_ref(), events.iter().find_map(|e| match e {
///     Event::Connected(n) => Some(n),
///     _ => None,
/// }));
/// ```
#[derive(Debug)]
pub struct TranscriptReader {
    log: KeyLog,
    sides: [Side; 2],
    max_message: usize,
    /// ClientHellos read (plaintext, client → server).
    client_hellos: usize,
    /// The first ClientHello's random.
    first_random: Option<[u8; 32]>,
    /// A ClientHello with that random offered early_data.
    outer_early: bool,
    /// The first HelloRetryRequest, kept for ECH's confirmation until the hellos are settled.
    hrr: Option<Vec<u8>>,
    hello_retry: bool,
    /// The ServerHello, kept for ECH's confirmation until the hellos are settled.
    server_hello: Option<Vec<u8>>,
    server_hello_seen: bool,
    suite: Option<SuiteParams>,
    /// ClientHelloInner messages the caller opened (at most two).
    inner: Vec<Vec<u8>>,
    /// The hellos are read and what they decide is decided.
    settled: bool,
    /// The random keying the traffic secrets, once settled.
    random: Option<[u8; 32]>,
    ech_accepted: Option<bool>,
    negotiating: Negotiating,
}

impl TranscriptReader {
    /// A reader that opens records with the secrets of `log`.
    pub fn new(log: KeyLog) -> TranscriptReader {
        TranscriptReader {
            log,
            sides: [
                Side::new(Direction::ClientToServer, DEFAULT_MAX_HANDSHAKE),
                Side::new(Direction::ServerToClient, DEFAULT_MAX_HANDSHAKE),
            ],
            max_message: DEFAULT_MAX_HANDSHAKE,
            client_hellos: 0,
            first_random: None,
            outer_early: false,
            hrr: None,
            hello_retry: false,
            server_hello: None,
            server_hello_seen: false,
            suite: None,
            inner: Vec::new(),
            settled: false,
            random: None,
            ech_accepted: None,
            negotiating: Negotiating::new(),
        }
    }

    /// Joins handshake messages of up to `max` bytes (body; ClientHellos up to at least
    /// [`MAX_CLIENT_HELLO`]) instead of the endpoints' default, 64 KiB: for connections whose
    /// endpoints were configured to accept more. Call before reading.
    pub fn with_max_handshake_message(mut self, max: usize) -> TranscriptReader {
        self.max_message = max;
        self.sides = [
            Side::new(Direction::ClientToServer, max),
            Side::new(Direction::ServerToClient, max),
        ];
        self
    }

    /// The largest handshake message body joined (ClientHellos excepted).
    pub fn max_handshake_message(&self) -> usize {
        self.max_message
    }

    /// The key log the secrets come from.
    pub fn keylog(&self) -> &KeyLog {
        &self.log
    }

    /// Reads the next record of `direction` from `input`, advancing `input` past the bytes it
    /// took. `None`: `input` is used up (part of a record may be held), the record read waits
    /// for the other direction (see [`is_waiting`](Self::is_waiting); no more input is taken
    /// until it can go on), or the direction stopped at an [`error`](Self::error).
    pub fn read(&mut self, direction: Direction, input: &mut &[u8]) -> Option<ReadRecord> {
        self.try_settle();
        let i = index(direction);
        let rec = match self.sides[i].held.take() {
            Some(r) => r,
            None => {
                if self.sides[i].framing.is_some() {
                    return None;
                }
                match self.sides[i].deframer.read(input) {
                    Ok(Some(r)) => r,
                    Ok(None) => return None,
                    Err(e) => {
                        self.sides[i].framing = Some(e);
                        return None;
                    }
                }
            }
        };
        if rec.typ != ContentType::ApplicationData {
            let payload_len = rec.payload.len();
            let inner = InnerPlaintext {
                typ: rec.typ,
                content: rec.payload,
                padding: 0,
            };
            let at = (rec.header, payload_len);
            return Some(self.opened(direction, at, Epoch::Plaintext, inner, None, 0));
        }
        match self.access(direction) {
            Access::Wait => {
                self.sides[i].held = Some(rec);
                None
            }
            Access::Never => Some(self.closed(direction, &rec, None)),
            Access::EarlyOnly(random) => {
                let early = match self.inner.first() {
                    Some(inner) => offers_early_data(inner),
                    None => self.outer_early,
                };
                let start = if early {
                    Epoch::Early
                } else {
                    Epoch::Handshake
                };
                Some(self.trial(direction, rec, random, start, Some(start)))
            }
            Access::Keyed(random) => {
                let start = self.sides[i].current;
                Some(self.trial(direction, rec, random, start, None))
            }
        }
    }

    /// The caller has no more bytes for `direction` (end of stream, or of what was captured).
    /// Records of the other direction that waited for this one go on with what is known.
    pub fn end(&mut self, direction: Direction) {
        self.sides[index(direction)].ended = true;
        self.try_settle();
    }

    /// Reads two whole streams, alternating between them so that each direction has what the
    /// other tells before it needs it, and ends both. `each` gets every record as it is read,
    /// in each direction's order, with the reader (to tell it about ClientHelloInner, for one).
    pub fn read_streams(
        &mut self,
        client_to_server: &[u8],
        server_to_client: &[u8],
        mut each: impl FnMut(&mut TranscriptReader, ReadRecord),
    ) {
        let mut inputs = [client_to_server, server_to_client];
        loop {
            let mut progress = false;
            for d in [Direction::ClientToServer, Direction::ServerToClient] {
                let i = index(d);
                while let Some(r) = self.read(d, &mut inputs[i]) {
                    progress = true;
                    each(self, r);
                }
                let side = &self.sides[i];
                if !side.ended && (inputs[i].is_empty() || side.framing.is_some()) {
                    self.end(d);
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
    }

    /// Whether `direction` holds a protected record that waits for the other direction.
    pub fn is_waiting(&self, direction: Direction) -> bool {
        self.sides[index(direction)].held.is_some()
    }

    /// Bytes of an incomplete record held for `direction`: at the end of a stream, what it
    /// was cut short by.
    pub fn partial_len(&self, direction: Direction) -> usize {
        let side = &self.sides[index(direction)];
        if side.framing.is_some() {
            0
        } else {
            side.deframer.buffered_len()
        }
    }

    /// What stopped `direction`: a record header no TLS 1.3 stream has (its records stop
    /// there), or a handshake message that cannot be joined (its messages stop there).
    pub fn error(&self, direction: Direction) -> Option<RecordError> {
        let side = &self.sides[index(direction)];
        side.framing.or(side.joining)
    }

    /// ECH (RFC 9849): a ClientHelloInner the caller opened from the ClientHelloOuter just read
    /// (the first, then the one after a HelloRetryRequest; at most two are kept). When the
    /// ServerHello confirms acceptance (§7.2), the connection's secrets are the inner random's
    /// (RFC 9850 §4), 0-RTT is the inner hello's, and [`negotiating`](Self::negotiating) reads
    /// the inner hellos. Tell it before reading on: the hellos are settled at the first
    /// protected record after the ServerHello and the ClientHellos it answers.
    pub fn add_inner_client_hello(&mut self, message: Vec<u8>) {
        if !self.settled && self.inner.len() < 2 {
            self.inner.push(message);
        }
    }

    /// The ClientHello.random that names the connection's secrets: the first ClientHello's,
    /// or ClientHelloInner's when ECH was accepted.
    pub fn client_random(&self) -> Option<&[u8]> {
        match &self.random {
            Some(r) if self.settled => Some(r),
            _ => self.first_random.as_ref().map(|r| &r[..]),
        }
    }

    /// The first ClientHello's random, as on the wire (ClientHelloOuter's, under ECH).
    pub fn first_client_random(&self) -> Option<&[u8]> {
        self.first_random.as_ref().map(|r| &r[..])
    }

    /// The suite of the ServerHello, when it names one of TLS 1.3's.
    pub fn suite(&self) -> Option<SuiteParams> {
        self.suite
    }

    /// Whether a HelloRetryRequest was read.
    pub fn hello_retry(&self) -> bool {
        self.hello_retry
    }

    /// Whether the client's epochs begin with 0-RTT: the (inner, under accepted ECH) first
    /// ClientHello offered early_data.
    pub fn early_data_offered(&self) -> bool {
        self.sides[0].early
    }

    /// ECH's outcome: `Some(true)` when the ServerHello carries the confirmation computed from
    /// the inner hellos given, `Some(false)` when it does not, `None` when no inner hello was
    /// given (or no ServerHello of a known suite read).
    pub fn ech_accepted(&self) -> Option<bool> {
        self.ech_accepted
    }

    /// What the handshake messages read so far say.
    pub fn negotiating(&self) -> &Negotiating {
        &self.negotiating
    }

    /// What was negotiated, as far as the messages read tell; `None` before a ServerHello. A
    /// field of a flight that was not read says why: the secret missing from the key log, or
    /// that the flight's records stayed closed.
    pub fn negotiation(&self) -> Option<Negotiation> {
        let random = self.client_random();
        self.negotiating.negotiation(|whose| {
            let (label, who) = match whose {
                Direction::ServerToClient => ("SERVER_HANDSHAKE_TRAFFIC_SECRET", "server"),
                Direction::ClientToServer => ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "client"),
            };
            match random {
                Some(r) if self.log.get(r, label).is_none() => {
                    format!("{label} not in the key log")
                }
                _ => format!("the {who}'s encrypted handshake messages were not read"),
            }
        })
    }

    // ------------------------------------------------------------------------------ keys

    /// What a protected record of `direction` can be opened with now.
    fn access(&mut self, direction: Direction) -> Access {
        let other_ended = match direction {
            Direction::ClientToServer => self.sides[1].ended,
            Direction::ServerToClient => self.sides[0].ended,
        };
        let Some(first) = self.first_random else {
            // No ClientHello read: nothing names the secrets yet. It opens the client's
            // stream, so a client record cannot wait for it; a server record can.
            return match direction {
                Direction::ServerToClient if !other_ended => Access::Wait,
                _ => Access::Never,
            };
        };
        if !self.server_hello_seen {
            // Client records wait for the ServerHello; a server record before it has none
            // coming.
            return match direction {
                Direction::ClientToServer if !other_ended => Access::Wait,
                _ => Access::Never,
            };
        }
        if self.suite.is_none() {
            return Access::Never;
        }
        if !self.settled {
            match direction {
                // After a HelloRetryRequest the second ClientHello follows in this stream:
                // what comes before it was sent before the retry, as 0-RTT.
                Direction::ClientToServer => {
                    let random = self
                        .inner
                        .first()
                        .and_then(|m| random_of(m))
                        .unwrap_or(first);
                    return Access::EarlyOnly(random);
                }
                Direction::ServerToClient if !other_ended => return Access::Wait,
                Direction::ServerToClient => self.settle(),
            }
        }
        match self.random {
            Some(r) => Access::Keyed(r),
            None => Access::Never,
        }
    }

    /// Settles the hellos once the ServerHello and the ClientHellos it answers are read (or no
    /// more ClientHellos can come).
    fn try_settle(&mut self) {
        let complete = self.client_hellos > usize::from(self.hello_retry);
        if !self.settled && self.server_hello_seen && (complete || self.sides[0].ended) {
            self.settle();
        }
    }

    /// Which random names the secrets, whether 0-RTT was offered, whether ECH was accepted.
    fn settle(&mut self) {
        self.settled = true;
        self.ech_accepted = match (&self.server_hello, self.suite) {
            (Some(sh), Some(suite)) if !self.inner.is_empty() => {
                ech_confirmed(&self.inner, self.hrr.as_deref(), sh, suite)
            }
            _ => None,
        };
        let inner = self
            .inner
            .first()
            .filter(|_| self.ech_accepted == Some(true));
        match inner.and_then(|m| random_of(m)) {
            Some(r) => {
                self.random = Some(r);
                self.sides[0].early = inner.is_some_and(|m| offers_early_data(m));
                self.negotiating.use_client_hellos(&self.inner);
            }
            None => {
                self.random = self.first_random;
                self.sides[0].early = self.outer_early;
            }
        }
        for side in &mut self.sides {
            side.current = side.next(Epoch::Plaintext).unwrap_or(Epoch::Handshake);
            if side.keys_random != self.random {
                side.keys.clear();
            }
        }
        self.server_hello = None;
        self.hrr = None;
    }

    /// The protector of `epoch` in side `i`, derived on first use for `random`.
    fn protector(
        &mut self,
        i: usize,
        epoch: Epoch,
        random: [u8; 32],
    ) -> Option<&mut RecordProtector> {
        let suite = self.suite?;
        let side = &mut self.sides[i];
        if side.keys_random != Some(random) {
            side.keys.clear();
            side.keys_random = Some(random);
        }
        let at = match side.keys.iter().position(|k| k.epoch == epoch) {
            Some(at) => at,
            None => {
                let previous = match epoch {
                    Epoch::Application(n) if n > 0 => side
                        .keys
                        .iter()
                        .find(|k| k.epoch == Epoch::Application(n - 1))
                        .and_then(|k| k.secret.as_deref()),
                    _ => None,
                };
                // The next generation from the one before it (§7.2), else from the key log.
                let secret = match previous {
                    Some(p) => {
                        let len = suite.hash.output_len();
                        expand_label(suite.hash, p, "traffic upd", b"", len).ok()
                    }
                    None => keylog::traffic_secret(
                        &self.log,
                        &random,
                        suite.hash,
                        side.direction,
                        epoch,
                    ),
                };
                let protector = secret.as_deref().and_then(|s| keylog::protector(suite, s));
                side.keys.push(Keys {
                    epoch,
                    secret,
                    protector,
                });
                side.keys.len() - 1
            }
        };
        side.keys.get_mut(at)?.protector.as_mut()
    }

    /// Opens a protected record under the expected epoch `start` or, failing that, the ones
    /// after it (none after `last`, if given).
    fn trial(
        &mut self,
        direction: Direction,
        rec: OpaqueRecord,
        random: [u8; 32],
        start: Epoch,
        last: Option<Epoch>,
    ) -> ReadRecord {
        let i = index(direction);
        let mut epoch = start;
        let mut distance = 0usize;
        loop {
            match self.protector(i, epoch, random) {
                Some(p) => {
                    let seq = p.seq();
                    let tag_len = p.tag_len();
                    if let Ok(inner) = p.open(&rec) {
                        if last.is_none() {
                            self.sides[i].advance(epoch);
                        }
                        let at = (rec.header, rec.payload.len());
                        return self.opened(direction, at, epoch, inner, Some(seq), tag_len);
                    }
                    // A KeyUpdate is one generation on: further is not a key change but a
                    // guess.
                    if matches!(epoch, Epoch::Application(n) if n > 0) && distance > 1 {
                        break;
                    }
                }
                // Every generation derives from the same missing secret.
                None if matches!(epoch, Epoch::Application(_)) => break,
                None => {}
            }
            if last == Some(epoch) {
                break;
            }
            match self.sides[i].next(epoch) {
                Some(e) => epoch = e,
                None => break,
            }
            distance += 1;
        }
        // Closed: probably under the first epoch from `start` on whose secret is missing (a key
        // we have that failed says the record is not its).
        let side = &self.sides[i];
        let missing = |e: Epoch| {
            keylog::label_for(direction, e).filter(|l| self.log.get(&random, l).is_none())
        };
        let mut guess = start;
        let mut e = Some(start);
        for _ in 0..3 {
            let Some(c) = e else { break };
            if missing(c).is_some() {
                guess = c;
                break;
            }
            e = side.next(c);
        }
        self.closed(direction, &rec, Some((guess, missing(guess))))
    }

    // --------------------------------------------------------------------------- records

    /// A record that stayed closed, under `guess` (its epoch and missing secret), or, without
    /// keys at all, under the first epoch its direction would use.
    fn closed(
        &self,
        direction: Direction,
        rec: &OpaqueRecord,
        guess: Option<(Epoch, Option<&'static str>)>,
    ) -> ReadRecord {
        let (epoch, missing_secret) = guess.unwrap_or_else(|| {
            let early = direction == Direction::ClientToServer && self.outer_early;
            (
                if early {
                    Epoch::Early
                } else {
                    Epoch::Handshake
                },
                None,
            )
        });
        ReadRecord {
            direction,
            header: rec.header,
            payload_len: rec.payload.len(),
            epoch,
            inner: None,
            seq: None,
            tag_len: 0,
            missing_secret,
            messages: Vec::new(),
        }
    }

    /// A record with its content: joins its handshake messages, reads the hellos and the
    /// negotiation from them, and moves the keys as they say.
    fn opened(
        &mut self,
        direction: Direction,
        (header, payload_len): ([u8; HEADER_LEN], usize),
        epoch: Epoch,
        inner: InnerPlaintext,
        seq: Option<u64>,
        tag_len: usize,
    ) -> ReadRecord {
        let messages = if inner.typ == ContentType::Handshake {
            self.join(direction, epoch, &inner.content)
        } else {
            Vec::new()
        };
        for m in &messages {
            self.message(m);
        }
        // Keys change only where a record ends (§5.1): the last message, if it ends it.
        if let Some(last) = messages.last().filter(|m| m.ends_record) {
            let side = &mut self.sides[index(direction)];
            let to = match (last.typ, side.current) {
                (HandshakeType::EndOfEarlyData, Epoch::Early)
                    if direction == Direction::ClientToServer =>
                {
                    Some(Epoch::Handshake)
                }
                (HandshakeType::Finished, Epoch::Handshake) => Some(Epoch::Application(0)),
                (HandshakeType::KeyUpdate, Epoch::Application(n)) => {
                    n.checked_add(1).map(Epoch::Application)
                }
                _ => None,
            };
            if let Some(to) = to.filter(|_| epoch == side.current && self.settled) {
                side.advance(to);
            }
        }
        ReadRecord {
            direction,
            header,
            payload_len,
            epoch,
            inner: Some(inner),
            seq,
            tag_len,
            missing_secret: None,
            messages,
        }
    }

    /// The handshake messages a record's content completes.
    fn join(&mut self, direction: Direction, epoch: Epoch, content: &[u8]) -> Vec<ReadMessage> {
        let side = &mut self.sides[index(direction)];
        if side.joining.is_some() {
            return Vec::new();
        }
        if let Err(e) = side.joiner.push(content) {
            side.joining = Some(e);
            return Vec::new();
        }
        let mut out = Vec::new();
        while let Some((bytes, ends_record)) = side.joiner.next_message() {
            out.push(ReadMessage {
                direction,
                epoch,
                typ: HandshakeType::from(bytes.first().copied().unwrap_or(0)),
                bytes,
                ends_record,
            });
        }
        out
    }

    /// What a handshake message tells the reader: the hellos name the secrets and the suite.
    fn message(&mut self, m: &ReadMessage) {
        if m.epoch == Epoch::Plaintext {
            match (m.direction, m.typ) {
                (Direction::ClientToServer, HandshakeType::ClientHello) => {
                    if let Ok(HandshakePayload::ClientHello(ch)) =
                        HandshakeMessage::decode(&m.bytes, DecodeContext::default())
                            .map(|d| d.payload)
                    {
                        self.client_hellos += 1;
                        let first = *self.first_random.get_or_insert(ch.random);
                        // Only the first ClientHello may offer 0-RTT (§4.2.10); the second
                        // keeps its random.
                        if first == ch.random {
                            self.outer_early |= ch.find(ExtensionType::EarlyData).is_some();
                        }
                    }
                }
                (Direction::ServerToClient, HandshakeType::ServerHello) => {
                    if let Ok(HandshakePayload::ServerHello(sh)) =
                        HandshakeMessage::decode(&m.bytes, DecodeContext::default())
                            .map(|d| d.payload)
                    {
                        if sh.is_hello_retry_request() {
                            self.hello_retry = true;
                            if self.hrr.is_none() && !self.settled {
                                self.hrr = Some(m.bytes.clone());
                            }
                        } else if !self.server_hello_seen {
                            self.server_hello_seen = true;
                            self.suite = suite_params(sh.cipher_suite);
                            self.server_hello = Some(m.bytes.clone());
                        }
                    }
                }
                _ => {}
            }
        }
        self.negotiating.message(m.direction, m.epoch, &m.bytes);
    }
}

/// ClientHello.random of a whole ClientHello message.
fn random_of(message: &[u8]) -> Option<[u8; 32]> {
    message.get(6..38)?.try_into().ok()
}

/// Whether a ClientHello message offers early_data.
fn offers_early_data(message: &[u8]) -> bool {
    HandshakeMessage::decode(message, DecodeContext::default()).is_ok_and(|m| match m.payload {
        HandshakePayload::ClientHello(ch) => ch.find(ExtensionType::EarlyData).is_some(),
        _ => false,
    })
}

/// RFC 9849 §7.2 from the outside: whether ServerHello.random ends with the confirmation
/// derived from ClientHelloInner.random and the inner transcript (message_hash of the first
/// inner hello, the HelloRetryRequest and the second, after a retry).
fn ech_confirmed(
    inners: &[Vec<u8>],
    hrr: Option<&[u8]>,
    sh: &[u8],
    suite: SuiteParams,
) -> Option<bool> {
    let hash = suite.hash;
    let first = inners.first()?;
    let random = random_of(first)?;
    let mut t = Vec::new();
    match hrr {
        Some(hrr) => {
            let second = inners.get(1)?;
            let h = hash.hash(first);
            t.extend_from_slice(&[254, 0, 0, h.len() as u8]);
            t.extend_from_slice(h.as_slice());
            t.extend_from_slice(hrr);
            t.extend_from_slice(second);
        }
        None => t.extend_from_slice(first),
    }
    t.extend_from_slice(&confirm::zero_server_hello(sh)?);
    let want = confirm::confirmation(hash, &random, ACCEPT_LABEL, hash.hash(&t).as_slice());
    Some(sh.get(confirm::server_hello_range())? == want)
}
