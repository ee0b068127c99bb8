//! Complete connections over a virtual link: TCP handshake, TLS handshake, first request and
//! response, with simulated time. Deterministic: same inputs, same timeline.
//!
//! The link has a round-trip time, a bandwidth (serialization delay per packet, each direction
//! its own queue), an MTU and an initial congestion window; no loss. The TCP model is the part
//! of RFC 9293 / RFC 5681 that decides *when* bytes can leave:
//!
//! - three-way handshake; the client's first data leaves with (right after) the final ACK;
//! - a sender keeps at most `cwnd` unacknowledged segments in flight; `cwnd` starts at
//!   `initcwnd` (RFC 6928: 10) and grows by one segment per acknowledged segment (slow start;
//!   without loss it never leaves slow start);
//! - the receiver acknowledges every segment at once (no delayed ACKs) with a pure ACK;
//! - Nagle is off, as every TLS stack sets it; endpoints take no processing time.
//!
//! The TLS endpoints are tls13lab's real [`Client`] and [`Server`]: every byte they exchange
//! crosses the virtual link, so the measured bytes and flights are the library's own.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use serde::Serialize;

use crate::certgen::{self_signed_p256, ChainSpec, KeyAlg};
use crate::tcp::Link;
use tls13lab::client::Client;
use tls13lab::config::{CertifiedKey, ClientConfig, EchMode, ServerConfig};
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::error::Error;
use tls13lab::events::{Direction, EarlyDataStatus, Event, Observe};
use tls13lab::ledger::Ledger;
use tls13lab::messages::enums::{HandshakeType, NamedGroup};
use tls13lab::server::Server;
use tls13lab::session::TicketStore;

/// The clock of simulated connections starts here (2026-01-01T00:00:00Z), in Unix ms.
pub const SIM_EPOCH_MS: u64 = 1_767_225_600_000;

/// The virtual link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Network {
    /// Round-trip time in microseconds (each direction takes half).
    pub rtt_us: u64,
    /// Bits per second in each direction; 0 means unlimited (no serialization delay).
    pub bandwidth_bps: u64,
    /// Packet framing and MSS.
    pub link: Link,
    /// Initial congestion window, in segments.
    pub initcwnd: usize,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            rtt_us: 100_000,
            bandwidth_bps: 10_000_000,
            link: Link::default(),
            initcwnd: 10,
        }
    }
}

impl Network {
    /// Time to put `bytes` on the wire.
    fn serialization_us(&self, bytes: usize) -> u64 {
        if self.bandwidth_bps == 0 {
            0
        } else {
            (bytes as u64 * 8 * 1_000_000).div_ceil(self.bandwidth_bps)
        }
    }

    /// The assumptions in one line.
    pub fn describe(&self) -> String {
        let bw = match self.bandwidth_bps {
            0 => "unlimited bandwidth".to_string(),
            b if b % 1_000_000 == 0 => format!("{} Mbit/s", b / 1_000_000),
            b if b % 1_000 == 0 => format!("{} kbit/s", b / 1_000),
            b => format!("{b} bit/s"),
        };
        format!(
            "RTT {} ms, {bw} each way, {}, initcwnd {} segments ({} bytes), no loss; \
             every segment ACKed at once, Nagle off, no processing time",
            fmt_ms(self.rtt_us),
            self.link.describe(),
            self.initcwnd,
            self.initcwnd * self.link.mss
        )
    }
}

/// One packet on the link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PacketRecord {
    /// When it started to leave (µs since the SYN).
    pub sent_us: u64,
    /// When it was fully received.
    pub arrived_us: u64,
    /// Which way.
    pub direction: Direction,
    /// IP packet bytes.
    pub ip_len: usize,
    /// TCP payload bytes.
    pub payload_len: usize,
    /// SYN, SYN-ACK, ACK or data.
    pub what: String,
}

/// What one simulated connection measured.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// Which connection.
    pub label: String,
    /// When the first response byte reached the client application (µs since the SYN).
    pub first_response_us: Option<u64>,
    /// `first_response_us` in round-trip times.
    pub round_trips: Option<f64>,
    /// When the client's TLS handshake completed (its Finished sent).
    pub handshake_done_us: Option<u64>,
    /// TCP payload bytes client → server until the response arrived (TLS records, or the
    /// request alone for plain TCP).
    pub bytes_c2s: usize,
    /// TCP payload bytes server → client until the response arrived.
    pub bytes_s2c: usize,
    /// Packets (data, SYNs and ACKs) client → server.
    pub packets_c2s: usize,
    /// Packets server → client.
    pub packets_s2c: usize,
    /// Bytes of the server's first flight (ServerHello .. Finished), records included.
    pub server_flight: usize,
    /// Whether the server sent a Certificate.
    pub certificate: bool,
    /// CertificateVerify signatures the server made.
    pub signatures: usize,
    /// Times a sender had data queued but a full congestion window.
    pub cwnd_stalls: usize,
    /// Whether the server accepted a PSK.
    pub resumed: bool,
    /// What happened to 0-RTT data.
    pub early_data: Option<EarlyDataStatus>,
    /// Every packet, in departure order.
    pub packets: Vec<PacketRecord>,
    /// The client's events (for its ledger and a ladder diagram).
    #[serde(skip)]
    pub client_events: Vec<Event>,
    /// The ledger built from them (times are the simulated clock).
    #[serde(skip)]
    pub ledger: Ledger,
    /// The simulated clock at the SYN (Unix ms), the origin of the ledger's times.
    pub started_ms: u64,
    /// Both directions' records in the order they were *sent* (times: when they left their
    /// sender): the flights as the endpoints wrote them. The client's own ledger orders by what
    /// the client saw, so a server flight split over two segments can look like two flights.
    #[serde(skip)]
    pub wire_ledger: Ledger,
    /// For each record of `wire_ledger`: when it left its sender and when it was complete at
    /// the receiver (µs since the SYN).
    #[serde(skip)]
    pub wire_times_us: Vec<(u64, Option<u64>)>,
}

// --------------------------------------------------------------------------------- endpoints

/// The application on one end of the virtual TCP connection.
trait Peer {
    /// The TCP connection is open (the client learns it from the SYN-ACK).
    fn on_open(&mut self, _now_ms: u64) -> Result<Vec<u8>, Error> {
        Ok(Vec::new())
    }
    /// Bytes arrived; returns bytes to send.
    fn on_data(&mut self, bytes: &[u8], now_ms: u64) -> Result<Vec<u8>, Error>;
    /// The client has received response bytes.
    fn has_response(&self) -> bool {
        false
    }
    /// Note the simulated time (µs) of the records produced by the last call.
    fn stamp(&mut self, _now_us: u64) {}
}

/// Records a TLS endpoint sent, with the simulated time (µs) they left it.
#[derive(Default)]
struct SentRecords {
    seen: usize,
    sent: Vec<(u64, Event)>,
    /// When each record from the peer was complete here (in the peer's sending order).
    received: Vec<u64>,
}

impl SentRecords {
    fn stamp(&mut self, events: &[Event], sending: Direction, now_us: u64) {
        for e in &events[self.seen..] {
            match e {
                Event::Record(r) if r.direction == sending => self.sent.push((now_us, e.clone())),
                Event::Record(_) => self.received.push(now_us),
                _ => {}
            }
        }
        self.seen = events.len();
    }
}

/// A plain TCP client: the request as soon as the connection is open.
struct PlainClient {
    request: Vec<u8>,
    received: usize,
}

impl Peer for PlainClient {
    fn on_open(&mut self, _: u64) -> Result<Vec<u8>, Error> {
        Ok(self.request.clone())
    }
    fn on_data(&mut self, bytes: &[u8], _: u64) -> Result<Vec<u8>, Error> {
        self.received += bytes.len();
        Ok(Vec::new())
    }
    fn has_response(&self) -> bool {
        self.received > 0
    }
}

/// A plain TCP server: the response once the whole request is in.
struct PlainServer {
    request_len: usize,
    received: usize,
    response: Vec<u8>,
    answered: bool,
}

impl Peer for PlainServer {
    fn on_data(&mut self, bytes: &[u8], _: u64) -> Result<Vec<u8>, Error> {
        self.received += bytes.len();
        if self.received >= self.request_len && !self.answered {
            self.answered = true;
            return Ok(self.response.clone());
        }
        Ok(Vec::new())
    }
}

/// tls13lab's client, sending its request as early as the protocol allows (0-RTT when a ticket
/// permits, else with its Finished), resending it if the server rejects 0-RTT.
struct TlsClient {
    client: Client,
    request: Vec<u8>,
    sent: bool,
    resent: bool,
    events: Vec<Event>,
    /// Response bytes read so far.
    received: Vec<u8>,
    records_sent: SentRecords,
}

impl TlsClient {
    fn drain(&mut self) {
        self.events.extend(self.client.events());
    }
}

impl Peer for TlsClient {
    fn on_open(&mut self, now_ms: u64) -> Result<Vec<u8>, Error> {
        self.client.start(now_ms)?;
        self.sent = self.client.send(&self.request).is_ok();
        // Record events are reported as the bytes are taken: drain after taking them.
        let out = self.client.take_output();
        self.drain();
        Ok(out)
    }

    fn on_data(&mut self, bytes: &[u8], now_ms: u64) -> Result<Vec<u8>, Error> {
        let r = crate::demo::deliver(
            &mut self.client,
            bytes,
            now_ms,
            &mut Vec::new(),
            &mut self.received,
        );
        self.drain();
        r?;
        let rejected = self
            .events
            .iter()
            .any(|e| matches!(e, Event::EarlyDataRejected { .. }));
        if self.client.is_connected() && (!self.sent || (rejected && !self.resent)) {
            self.client.send(&self.request)?;
            self.resent = self.sent;
            self.sent = true;
        }
        let out = self.client.take_output();
        self.drain();
        Ok(out)
    }

    fn has_response(&self) -> bool {
        !self.received.is_empty()
    }

    fn stamp(&mut self, now_us: u64) {
        self.records_sent
            .stamp(&self.events, Direction::ClientToServer, now_us);
    }
}

/// tls13lab's server, answering as soon as the whole request (0-RTT or not) has arrived.
struct TlsServer {
    server: Server,
    request_len: usize,
    response: Vec<u8>,
    answered: bool,
    events: Vec<Event>,
    /// Request bytes read so far: 0-RTT data and application data.
    early: Vec<u8>,
    received: Vec<u8>,
    records_sent: SentRecords,
}

impl Peer for TlsServer {
    fn on_data(&mut self, bytes: &[u8], now_ms: u64) -> Result<Vec<u8>, Error> {
        let r = crate::demo::deliver(
            &mut self.server,
            bytes,
            now_ms,
            &mut self.early,
            &mut self.received,
        );
        self.events.extend(self.server.events());
        r?;
        if self.early.len() + self.received.len() >= self.request_len && !self.answered {
            self.server.send(&self.response)?;
            self.answered = true;
        }
        let out = self.server.take_output();
        self.events.extend(self.server.events());
        Ok(out)
    }

    fn stamp(&mut self, now_us: u64) {
        self.records_sent
            .stamp(&self.events, Direction::ServerToClient, now_us);
    }
}

// ---------------------------------------------------------------------------------- the link

enum Payload {
    Syn,
    SynAck,
    Ack(usize),
    Data(Vec<u8>),
}

struct Arrival {
    to: usize,
    payload: Payload,
}

/// One direction's TCP sender.
#[derive(Default)]
struct Sender {
    queue: VecDeque<u8>,
    in_flight: usize,
    cwnd: usize,
    link_free_us: u64,
    stalls: usize,
    blocked: bool,
    bytes: usize,
    packets: usize,
}

struct Sim<'a> {
    net: Network,
    now: u64,
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    pending: Vec<Option<Arrival>>,
    senders: [Sender; 2],
    peers: [&'a mut dyn Peer; 2],
    log: Vec<PacketRecord>,
    epoch_ms: u64,
}

const CLIENT: usize = 0;
const SERVER: usize = 1;

impl Sim<'_> {
    fn now_ms(&self) -> u64 {
        self.epoch_ms + self.now / 1000
    }

    /// Put one packet on the wire from `from`.
    fn transmit(&mut self, from: usize, payload: Payload, what: String) {
        let payload_len = match &payload {
            Payload::Data(d) => d.len(),
            _ => 0,
        };
        let ip_len = self.net.link.packet_len(payload_len);
        let s = &mut self.senders[from];
        let start = self.now.max(s.link_free_us);
        s.link_free_us = start + self.net.serialization_us(ip_len);
        s.packets += 1;
        s.bytes += payload_len;
        let arrive = s.link_free_us + self.net.rtt_us / 2;
        self.log.push(PacketRecord {
            sent_us: start,
            arrived_us: arrive,
            direction: if from == CLIENT {
                Direction::ClientToServer
            } else {
                Direction::ServerToClient
            },
            ip_len,
            payload_len,
            what,
        });
        self.pending.push(Some(Arrival {
            to: 1 - from,
            payload,
        }));
        self.heap
            .push(Reverse((arrive, (self.pending.len() - 1) as u64)));
    }

    /// Send what the window allows.
    fn pump(&mut self, from: usize) {
        loop {
            let s = &mut self.senders[from];
            if s.queue.is_empty() {
                s.blocked = false;
                return;
            }
            if s.in_flight >= s.cwnd {
                // One wait per flight that outgrows the window, however many ACKs it takes.
                if !s.blocked {
                    s.stalls += 1;
                    s.blocked = true;
                }
                return;
            }
            let n = s.queue.len().min(self.net.link.mss);
            let data: Vec<u8> = s.queue.drain(..n).collect();
            s.in_flight += 1;
            self.transmit(from, Payload::Data(data), format!("{n} bytes"));
        }
    }

    fn queue(&mut self, from: usize, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        self.senders[from].queue.extend(bytes);
        self.pump(from);
    }

    /// Run until nothing moves; returns when the first response byte reached the client.
    fn run(&mut self, deadline_us: u64) -> Result<Option<u64>, Error> {
        let mut first = None;
        self.senders[CLIENT].cwnd = self.net.initcwnd;
        self.senders[SERVER].cwnd = self.net.initcwnd;
        self.transmit(CLIENT, Payload::Syn, "SYN".into());
        while let Some(Reverse((t, idx))) = self.heap.pop() {
            if t > deadline_us {
                break;
            }
            self.now = t;
            let Some(a) = self.pending[idx as usize].take() else {
                continue;
            };
            match a.payload {
                Payload::Syn => self.transmit(SERVER, Payload::SynAck, "SYN-ACK".into()),
                Payload::SynAck => {
                    self.transmit(CLIENT, Payload::Ack(0), "ACK".into());
                    let now_ms = self.now_ms();
                    let out = self.peers[CLIENT].on_open(now_ms)?;
                    self.peers[CLIENT].stamp(self.now);
                    self.queue(CLIENT, out);
                }
                Payload::Ack(0) => {}
                Payload::Ack(n) => {
                    let s = &mut self.senders[a.to];
                    s.in_flight -= n;
                    s.cwnd += n; // slow start
                    self.pump(a.to);
                }
                Payload::Data(d) => {
                    self.transmit(a.to, Payload::Ack(1), "ACK".into());
                    let now_ms = self.now_ms();
                    let out = self.peers[a.to].on_data(&d, now_ms)?;
                    self.peers[a.to].stamp(self.now);
                    if first.is_none() && a.to == CLIENT && self.peers[CLIENT].has_response() {
                        first = Some(self.now);
                    }
                    self.queue(a.to, out);
                }
            }
        }
        Ok(first)
    }
}

/// Which connection to simulate.
#[derive(Clone, Debug)]
pub enum Scenario {
    /// No TLS: request and response straight over TCP.
    PlainTcp,
    /// A TLS connection with this client configuration and these tickets.
    Tls {
        /// The client's configuration.
        client: Arc<ClientConfig>,
        /// Tickets to resume with (empty: a full handshake).
        tickets: TicketStore,
    },
}

/// Simulate one connection: `request` from the client, `response` from the server.
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    label: &str,
    net: Network,
    scenario: &Scenario,
    server: &Arc<ServerConfig>,
    seed: u64,
    epoch_ms: u64,
    request: &[u8],
    response: &[u8],
) -> Result<(Outcome, TicketStore), Error> {
    let deadline = 600_000_000; // 10 simulated minutes: a stuck connection ends, never hangs
    match scenario {
        Scenario::PlainTcp => {
            let mut c = PlainClient {
                request: request.to_vec(),
                received: 0,
            };
            let mut s = PlainServer {
                request_len: request.len(),
                received: 0,
                response: response.to_vec(),
                answered: false,
            };
            let mut sim = new_sim(net, [&mut c, &mut s], epoch_ms);
            let t = sim.run(deadline)?;
            Ok((outcome(label, net, &sim, t), TicketStore::default()))
        }
        Scenario::Tls { client, tickets } => {
            let mut c = TlsClient {
                client: Client::new(
                    client.clone(),
                    Box::new(SeededRandom::from_seed(seed.wrapping_mul(2))),
                )?
                .with_tickets(tickets.clone())
                .recording(Observe::PUBLIC),
                request: request.to_vec(),
                sent: false,
                resent: false,
                events: Vec::new(),
                received: Vec::new(),
                records_sent: SentRecords::default(),
            };
            let mut s = TlsServer {
                server: Server::new(
                    server.clone(),
                    Box::new(SeededRandom::from_seed(seed.wrapping_mul(2) + 1)),
                )?
                .recording(Observe::PUBLIC),
                request_len: request.len(),
                response: response.to_vec(),
                answered: false,
                events: Vec::new(),
                early: Vec::new(),
                received: Vec::new(),
                records_sent: SentRecords::default(),
            };
            // The run goes on after the response until nothing moves, so tickets that follow
            // it arrive too and later connections can resume.
            let mut o = {
                let mut sim = new_sim(net, [&mut c, &mut s], epoch_ms);
                let t = sim.run(deadline)?;
                outcome(label, net, &sim, t)
            };
            fill_tls(&mut o, &c.events, &s.events);
            (o.wire_ledger, o.wire_times_us) = wire_ledger(&c, &s, o.started_ms);
            Ok((o, c.client.tickets().clone()))
        }
    }
}

fn new_sim<'a>(net: Network, peers: [&'a mut dyn Peer; 2], epoch_ms: u64) -> Sim<'a> {
    Sim {
        net,
        now: 0,
        heap: BinaryHeap::new(),
        pending: Vec::new(),
        senders: [Sender::default(), Sender::default()],
        peers,
        log: Vec::new(),
        epoch_ms,
    }
}

fn outcome(label: &str, net: Network, sim: &Sim<'_>, t: Option<u64>) -> Outcome {
    let upto = t.unwrap_or(u64::MAX);
    // What left before the first response byte arrived (not the client's reaction to it).
    let sent: Vec<&PacketRecord> = sim.log.iter().filter(|p| p.sent_us < upto).collect();
    let count = |d: Direction| sent.iter().filter(|p| p.direction == d).count();
    let bytes = |d: Direction| {
        sent.iter()
            .filter(|p| p.direction == d)
            .map(|p| p.payload_len)
            .sum()
    };
    Outcome {
        label: label.to_string(),
        first_response_us: t,
        round_trips: t.map(|t| t as f64 / net.rtt_us as f64),
        handshake_done_us: None,
        bytes_c2s: bytes(Direction::ClientToServer),
        bytes_s2c: bytes(Direction::ServerToClient),
        packets_c2s: count(Direction::ClientToServer),
        packets_s2c: count(Direction::ServerToClient),
        server_flight: 0,
        certificate: false,
        signatures: 0,
        cwnd_stalls: sim.senders[CLIENT].stalls + sim.senders[SERVER].stalls,
        resumed: false,
        early_data: None,
        packets: sim.log.clone(),
        client_events: Vec::new(),
        ledger: Ledger::default(),
        started_ms: sim.epoch_ms,
        wire_ledger: Ledger::default(),
        wire_times_us: Vec::new(),
    }
}

/// What the client's and server's events say about the TLS connection.
fn fill_tls(o: &mut Outcome, client: &[Event], server: &[Event]) {
    let ledger = Ledger::from_events(client);
    o.certificate = ledger.records.iter().any(|r| {
        r.messages.iter().any(|m| {
            matches!(
                m.typ,
                HandshakeType::Certificate | HandshakeType::CompressedCertificate
            )
        })
    });
    o.signatures = server
        .iter()
        .filter(|e| {
            matches!(e, Event::Handshake(h)
                if h.typ == HandshakeType::CertificateVerify && h.direction == Direction::ServerToClient)
        })
        .count();
    // The server's first flight: its records from the first one through the one that carries
    // its Finished.
    let mut flight = 0;
    for r in ledger
        .records
        .iter()
        .filter(|r| r.record.direction == Direction::ServerToClient)
    {
        flight += r.record.wire_len;
        if r.messages.iter().any(|m| m.typ == HandshakeType::Finished) {
            break;
        }
    }
    o.server_flight = flight;
    label_packets(&mut o.packets, &ledger);
    if let Some(n) = &ledger.negotiated {
        o.resumed = n.resumed;
        o.early_data = Some(n.early_data);
    }
    // The time of the client's Finished: its first application-epoch record's time.
    o.handshake_done_us = ledger
        .records
        .iter()
        .find(|r| {
            r.record.direction == Direction::ClientToServer
                && r.messages.iter().any(|m| m.typ == HandshakeType::Finished)
        })
        .map(|r| r.record.time_ms.saturating_sub(o.started_ms) * 1000);
    o.client_events = client.to_vec();
    let mut ledger = ledger;
    ledger.set_origin(o.started_ms);
    o.ledger = ledger;
}

/// Both sides' sent records, merged in sending order (ties: the client's first).
fn wire_ledger(c: &TlsClient, s: &TlsServer, started_ms: u64) -> (Ledger, Vec<(u64, Option<u64>)>) {
    // (sent, arrived) per record: the k-th record one way is the k-th the other side received.
    let with_arrival =
        |sent: &[(u64, Event)], received: &[u64]| -> Vec<(u64, Option<u64>, Event)> {
            sent.iter()
                .enumerate()
                .map(|(k, (t, e))| (*t, received.get(k).copied(), e.clone()))
                .collect()
        };
    let mut all = with_arrival(&c.records_sent.sent, &s.records_sent.received);
    all.extend(with_arrival(&s.records_sent.sent, &c.records_sent.received));
    all.sort_by_key(|(t, _, _)| *t); // stable
    let times: Vec<(u64, Option<u64>)> = all.iter().map(|(t, a, _)| (*t, *a)).collect();
    let all: Vec<(u64, Event)> = all.into_iter().map(|(t, _, e)| (t, e)).collect();
    let mut events: Vec<Event> = all
        .into_iter()
        .map(|(t, e)| match e {
            Event::Record(mut r) => {
                r.time_ms = started_ms + t / 1000;
                Event::Record(r)
            }
            other => other,
        })
        .collect();
    events.extend(
        c.events
            .iter()
            .filter(|e| matches!(e, Event::Connected(_)))
            .cloned(),
    );
    let mut l = Ledger::from_events(&events);
    l.set_origin(started_ms);
    (l, times)
}

/// Name the TLS records each data packet carries (by stream offset: a direction's records and
/// segments are both in stream order).
fn label_packets(packets: &mut [PacketRecord], ledger: &Ledger) {
    for dir in [Direction::ClientToServer, Direction::ServerToClient] {
        let mut spans = Vec::new();
        let mut at = 0;
        for r in ledger.records.iter().filter(|r| r.record.direction == dir) {
            let (what, _) = crate::ladder::record_summary(r);
            spans.push((at, at + r.record.wire_len, what));
            at += r.record.wire_len;
        }
        let mut off = 0;
        for p in packets
            .iter_mut()
            .filter(|p| p.direction == dir && p.payload_len > 0)
        {
            let end = off + p.payload_len;
            let names: Vec<String> = spans
                .iter()
                .filter(|(a, b, _)| *a < end && *b > off)
                .map(|(a, b, w)| {
                    if *a >= off && *b <= end {
                        w.clone()
                    } else {
                        format!("{w} (part)")
                    }
                })
                .collect();
            if !names.is_empty() {
                p.what = names.join(" | ");
            }
            off = end;
        }
    }
}

// ---------------------------------------------------------------------------- the comparison

/// A server configuration whose certificate is padded with subjectAltNames until its DER has at
/// least `cert_bytes` bytes (a SAN-heavy certificate, as shared-hosting certificates are), plus
/// the root the client must trust.
pub fn server_with_cert(
    seed: u64,
    now_ms: u64,
    cert_bytes: usize,
) -> Result<(ServerConfig, Vec<u8>), Error> {
    let mut rng = SeededRandom::from_seed(seed ^ 0x5eed_cafe);
    let key = SigningKey::generate_p256(&mut rng);
    let now_s = now_ms / 1000;
    let make = |n: usize| -> Result<Vec<u8>, Error> {
        let extra: Vec<String> = (0..n)
            .map(|i| format!("san-{i:05}.tls13lab.test"))
            .collect();
        let mut names = vec!["localhost"];
        names.extend(extra.iter().map(String::as_str));
        self_signed_p256(&names, &key, now_s - 86_400, now_s + 365 * 86_400)
            .map_err(|e| Error::Config(e.to_string()))
    };
    let mut cert = make(0)?;
    if cert.len() < cert_bytes {
        // Each name costs the same: estimate, then top up.
        let per = (make(100)?.len() - cert.len()).div_ceil(100).max(1);
        let mut n = (cert_bytes - cert.len()).div_ceil(per);
        cert = make(n)?;
        while cert.len() < cert_bytes {
            n += 1;
            cert = make(n)?;
        }
    }
    let ck = CertifiedKey {
        chain: vec![cert.clone()],
        key: Arc::new(key),
    };
    Ok((ServerConfig::new(ck), cert))
}

/// The server's chain in a comparison, in place of the padded self-signed certificate.
#[derive(Clone, Debug)]
pub struct ServerChain {
    /// DER certificates as the server sends them, leaf first.
    pub chain: Vec<Vec<u8>>,
    /// The leaf's key.
    pub key: Arc<SigningKey>,
    /// What the client trusts.
    pub root: Vec<u8>,
    /// The name the client asks for and checks (None: no SNI, no name check).
    pub server_name: Option<String>,
    /// For a Merkle Tree Certificate: the relying-party configuration the client verifies it
    /// with (`root` is then unused).
    pub mtc: Option<Arc<tls13lab::crypto::cert::mtc::RelyingParty>>,
}

/// The seed of [`ServerChain::generated`]: fixed, so a `--chain` names one set of certificates.
pub const CHAIN_SEED: u64 = 1;

impl ServerChain {
    /// A chain of `levels` (root first) for `localhost` with `scts` embedded SCTs, generated by
    /// [`crate::certgen::chain`] from [`CHAIN_SEED`], valid around [`SIM_EPOCH_MS`].
    /// The leaf's key must be one CertificateVerify can sign with ([`SigningKey`]): where it is
    /// not, this is an error, not a stand-in.
    pub fn generated(levels: &[KeyAlg], scts: usize) -> Result<Self, Error> {
        let mut spec = ChainSpec::new(levels.to_vec());
        spec.sans = vec!["localhost".into()];
        spec.scts = scts;
        spec.not_before = SIM_EPOCH_MS / 1000 - 86_400;
        spec.not_after = SIM_EPOCH_MS / 1000 + 365 * 86_400;
        let c =
            crate::certgen::chain(&spec, CHAIN_SEED).map_err(|e| Error::Config(e.to_string()))?;
        let key = SigningKey::from_pkcs8_der(&c.key_pkcs8_der).map_err(|e| {
            Error::Config(format!(
                "a {} leaf cannot sign CertificateVerify here: {e}",
                spec.levels[spec.levels.len() - 1]
            ))
        })?;
        Ok(ServerChain {
            chain: c.certs_der,
            key: Arc::new(key),
            root: c.root_der,
            server_name: Some("localhost".into()),
            mtc: None,
        })
    }

    /// A Merkle Tree Certificate (draft-ietf-plants-merkle-tree-certs) for `localhost` and an
    /// ML-DSA-44 key, from a seeded issuance log of 150,004 entries ([`crate::mtc`]'s example
    /// CA: an ML-DSA-44 CA cosigner, an Ed25519 and an ML-DSA-44 witness; a landmark every
    /// 50,000 entries) where ours is entry 100,001: `landmark` picks the landmark-relative
    /// certificate (an inclusion proof to a landmark subtree the client already trusts), else
    /// the standalone one (an inclusion proof and three cosignatures). The client trusts the
    /// log's cosigners and landmarks.
    pub fn mtc(landmark: bool) -> Result<Self, Error> {
        use crate::mtc::{issue_for_tls, MtcRequest};
        let cfg = |e: crate::mtc::IssueError| Error::Config(e.0);
        let key = SigningKey::generate_mldsa(
            tls13lab::crypto::sign::MlDsaLevel::L44,
            &mut SeededRandom::from_seed(CHAIN_SEED),
        );
        let now = SIM_EPOCH_MS / 1000;
        let req = MtcRequest {
            spki_der: key
                .public_key_spki_der()
                .map_err(|e| Error::Config(e.to_string()))?,
            names: vec!["localhost".into()],
            not_before: now - 86_400,
            not_after: now + 7 * 86_400,
            server_auth: true,
        };
        let issued = issue_for_tls(&req, 100_000, 50_000, 50_000, CHAIN_SEED, now).map_err(cfg)?;
        Ok(ServerChain {
            chain: vec![if landmark {
                issued.landmark_relative
            } else {
                issued.standalone
            }],
            key: Arc::new(key),
            root: Vec::new(),
            server_name: Some("localhost".into()),
            mtc: Some(Arc::new(issued.relying_party)),
        })
    }

    /// A chain read from PEM (leaf first, as `tls13lab cert` writes chain.pem) and its key.
    /// The client trusts the chain's last certificate (a path ends there whether or not it is
    /// self-signed) and checks no name, so any chain works.
    pub fn from_pem(chain_pem: &str, key_pem: &str) -> Result<Self, Error> {
        let chain = tls13lab::crypto::cert::certs_from_pem(chain_pem)
            .ok()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| Error::Config("no CERTIFICATE in the chain's PEM".into()))?;
        let key = SigningKey::from_pem(key_pem).map_err(|e| Error::Config(e.to_string()))?;
        Ok(ServerChain {
            root: chain[chain.len() - 1].clone(),
            chain,
            key: Arc::new(key),
            server_name: None,
            mtc: None,
        })
    }
}

/// Key exchange of a comparison row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kx {
    /// X25519.
    Classical,
    /// X25519MLKEM768.
    Hybrid,
}

impl Kx {
    /// The key-share group.
    pub fn group(self) -> NamedGroup {
        match self {
            Kx::Classical => NamedGroup::X25519,
            Kx::Hybrid => NamedGroup::X25519MLKEM768,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kx::Classical => "classical",
            Kx::Hybrid => "hybrid",
        }
    }
}

/// What to compare.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The link.
    pub net: Network,
    /// Key exchanges to run (each gets full, resumed and 0-RTT rows).
    pub kx: Vec<Kx>,
    /// Pad the server certificate to at least this many bytes.
    pub cert_bytes: usize,
    /// A real chain instead (then `cert_bytes` is unused).
    pub chain: Option<ServerChain>,
    /// The server's certificate compression (RFC 8879), in preference order; empty: none. The
    /// client offers its defaults.
    pub cert_compression: Vec<tls13lab::messages::enums::CertificateCompressionAlgorithm>,
    /// The request.
    pub request: Vec<u8>,
    /// Bytes of the response.
    pub response_len: usize,
    /// Seed.
    pub seed: u64,
    /// Also run each key exchange's three connections with Encrypted ClientHello (RFC 9849): the
    /// server holds an ECH key made from the seed, the rows are labelled "… ECH".
    pub ech: bool,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            net: Network::default(),
            kx: vec![Kx::Classical, Kx::Hybrid],
            cert_bytes: 0,
            chain: None,
            cert_compression: Vec::new(),
            request: b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
            response_len: 1000,
            seed: 1,
            ech: false,
        }
    }
}

/// Plain TCP, then full, resumed and 0-RTT connections for each key exchange of `plan`.
pub fn compare(plan: &Plan) -> Result<Vec<Outcome>, Error> {
    let (mut server, root, server_name) = match &plan.chain {
        Some(c) => {
            let ck = CertifiedKey {
                chain: c.chain.clone(),
                key: c.key.clone(),
            };
            (ServerConfig::new(ck), c.root.clone(), c.server_name.clone())
        }
        None => {
            let (s, root) = server_with_cert(plan.seed, SIM_EPOCH_MS, plan.cert_bytes)?;
            (s, root, Some("localhost".into()))
        }
    };
    server.max_early_data = 16_384;
    server.tickets = 2;
    server.cert_compression = plan.cert_compression.clone();
    // The rows without ECH, then (with `plan.ech`) the same with it.
    let mut variants = vec![EchMode::Off];
    if plan.ech {
        let key = crate::ech::key(plan.seed, 1)?;
        variants.push(EchMode::offer(key.list.clone()));
        server.ech_keys = vec![key];
    }
    let server = Arc::new(server);
    let response = http_response(plan.response_len);
    let mut out = Vec::new();
    let (plain, _) = simulate(
        "plain TCP (no TLS)",
        plan.net,
        &Scenario::PlainTcp,
        &server,
        plan.seed,
        SIM_EPOCH_MS,
        &plan.request,
        &response,
    )?;
    out.push(plain);
    for (kx, ech) in plan
        .kx
        .iter()
        .flat_map(|kx| variants.iter().map(move |e| (kx, e)))
    {
        let with_ech = !matches!(ech, EchMode::Off);
        let mut base = crate::demo::client_config(root.clone());
        base.mtc = plan.chain.as_ref().and_then(|c| c.mtc.clone());
        base.key_shares = vec![kx.group()];
        base.enable_early_data = false;
        base.server_name = server_name.clone();
        base.ech = ech.clone();
        let full_cfg = Arc::new(base.clone());
        // Seeds by key exchange, not by position: `--kx hybrid` alone prints the same numbers,
        // and so do the rows without ECH whether or not ECH rows are added.
        let seed = plan.seed + 10 * (*kx as u64) + if with_ech { 5 } else { 0 };
        let suffix = if with_ech { " ECH" } else { "" };
        let (full, mut tickets) = simulate(
            &format!("{} full{suffix}", kx.name()),
            plan.net,
            &Scenario::Tls {
                client: full_cfg,
                tickets: TicketStore::default(),
            },
            &server,
            seed,
            SIM_EPOCH_MS,
            &plan.request,
            &response,
        )?;
        out.push(full);
        let later = SIM_EPOCH_MS + 60_000;
        for (j, (name, early)) in [("resumed", false), ("0-RTT", true)].iter().enumerate() {
            let mut one = TicketStore::default();
            if let Some(t) = tickets.tickets.pop_back() {
                one.insert(t);
            }
            let mut cfg = base.clone();
            cfg.enable_early_data = *early;
            let cfg = Arc::new(cfg);
            let (o, _) = simulate(
                &format!("{} {name}{suffix}", kx.name()),
                plan.net,
                &Scenario::Tls {
                    client: cfg,
                    tickets: one,
                },
                &server,
                seed + 1 + j as u64,
                later,
                &plan.request,
                &response,
            )?;
            out.push(o);
        }
    }
    Ok(out)
}

/// An HTTP/1.1 response of exactly `len` bytes (at least its header).
pub fn http_response(len: usize) -> Vec<u8> {
    let head = |n: usize| format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n");
    let mut body = len.saturating_sub(head(0).len());
    while head(body).len() + body > len && body > 0 {
        body -= 1;
    }
    let mut v = head(body).into_bytes();
    v.resize(v.len() + body, b'x');
    v
}

fn fmt_ms(us: u64) -> String {
    if us.is_multiple_of(1000) {
        format!("{}", us / 1000)
    } else {
        format!("{:.1}", us as f64 / 1000.0)
    }
}

/// The comparison table and what it shows.
pub fn render(net: &Network, outcomes: &[Outcome]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "link: {}", net.describe());
    let _ = writeln!(
        s,
        "\n{:<22} {:>11} {:>6} {:>8} {:>8} {:>9} {:>6} {:>5} {:>4} {:>7} {:>9}",
        "connection",
        "1st byte",
        "RTTs",
        "C→S B",
        "S→C B",
        "srv flight",
        "pkts",
        "cert",
        "sigs",
        "stalls",
        "0-RTT"
    );
    for o in outcomes {
        let plain = o.ledger.records.is_empty();
        let _ = writeln!(
            s,
            "{:<22} {:>11} {:>6} {:>8} {:>8} {:>9} {:>6} {:>5} {:>4} {:>7} {:>9}",
            o.label,
            o.first_response_us
                .map_or("never".into(), |t| format!("{} ms", fmt_ms(t))),
            o.round_trips.map_or("-".into(), |r| format!("{r:.2}")),
            o.bytes_c2s,
            o.bytes_s2c,
            if plain {
                "-".into()
            } else {
                o.server_flight.to_string()
            },
            o.packets_c2s + o.packets_s2c,
            if plain {
                "-"
            } else if o.certificate {
                "yes"
            } else {
                "no"
            },
            if plain {
                "-".into()
            } else {
                o.signatures.to_string()
            },
            o.cwnd_stalls,
            match o.early_data {
                Some(EarlyDataStatus::Accepted) => "accepted",
                Some(EarlyDataStatus::Rejected) => "rejected",
                _ => "-",
            }
        );
    }
    s.push_str(
        "\n1st byte: from the client's SYN until the first response byte reaches the client; \
         RTTs: the same in round-trip times.\nC→S B / S→C B: TCP payload bytes until then; \
         srv flight: ServerHello..Finished on the wire; stalls: a sender waited for ACKs (full \
         congestion window).\n",
    );
    let find = |l: &str| outcomes.iter().find(|o| o.label == l);
    // Rounded to what the table shows, so a difference of -0.001 prints as +0.00.
    let rt = |o: &Outcome| (o.round_trips.unwrap_or(f64::NAN) * 100.0).round() / 100.0;
    if let Some(p) = find("plain TCP (no TLS)") {
        s.push('\n');
        for kx in ["classical", "hybrid"] {
            let (Some(f), Some(r), Some(z)) = (
                find(&format!("{kx} full")),
                find(&format!("{kx} resumed")),
                find(&format!("{kx} 0-RTT")),
            ) else {
                continue;
            };
            let _ = writeln!(
                s,
                "{kx}: full TLS 1.3 costs {:+.2} RTT over plain TCP; resumption saves {} bytes S→C, {} signature(s) and {:.2} RTT; 0-RTT gets the response {:.2} RTT earlier than full",
                rt(f) - rt(p) + 0.0,
                f.bytes_s2c as i64 - r.bytes_s2c as i64,
                f.signatures.saturating_sub(r.signatures),
                rt(f) - rt(r) + 0.0,
                rt(f) - rt(z) + 0.0,
            );
            if let Some(e) = find(&format!("{kx} full ECH")) {
                let _ = writeln!(
                    s,
                    "{kx}: ECH (RFC 9849) adds {} bytes C→S and {:+.2} RTT to the full handshake ({} → {} packets)",
                    e.bytes_c2s as i64 - f.bytes_c2s as i64,
                    rt(e) - rt(f) + 0.0,
                    f.packets_c2s + f.packets_s2c,
                    e.packets_c2s + e.packets_s2c,
                );
            }
            if f.cwnd_stalls > 0 {
                let _ = writeln!(
                    s,
                    "{kx}: the server's first flight ({} bytes) exceeds initcwnd × MSS = {} bytes: the server waits for ACKs, an extra round trip",
                    f.server_flight,
                    net.initcwnd * net.link.mss
                );
            }
        }
    }
    s
}

/// The ladder diagram of a simulated TLS connection (TCP's handshake first, times since the SYN).
pub fn ladder(o: &Outcome, net: &Network) -> String {
    let notes = vec![
        format!("Simulated link: {}", net.describe()),
        "Arrows in the order records were sent; times (ms since the SYN): when each record left its sender, and when its last byte reached the receiver.".to_string(),
    ];
    let summary = o.first_response_us.map(|t| {
        format!(
            "first response byte at {} ms = {:.2} RTT after the SYN ({} TLS flight round trips)",
            fmt_ms(t),
            t as f64 / net.rtt_us as f64,
            o.wire_ledger.round_trips_to_first_response().unwrap_or(0)
        )
    });
    crate::ladder::svg_with(
        &o.wire_ledger,
        &crate::ladder::LadderOptions {
            title: format!("{} (simulated)", o.label),
            tcp_handshake: true,
            times: crate::ladder::Times::AtSender,
            exact_times_us: o.wire_times_us.clone(),
            summary,
            origin_ms: Some(o.started_ms),
            notes,
            record_links: None,
        },
    )
}

/// A packet-by-packet timeline of one outcome.
pub fn timeline(o: &Outcome) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "{}:", o.label);
    for p in &o.packets {
        let _ = writeln!(
            s,
            "  {:>9} → {:>9} ms  {}  {:>5} B  {}",
            fmt_ms(p.sent_us),
            fmt_ms(p.arrived_us),
            p.direction.arrow(),
            p.ip_len,
            p.what
        );
    }
    if let Some(t) = o.first_response_us {
        let _ = writeln!(s, "  first response byte at {} ms", fmt_ms(t));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_response_has_the_asked_length() {
        for n in [0, 10, 38, 39, 40, 100, 1000, 5000] {
            let r = http_response(n);
            assert!(r.len() == n || n < 38, "{n}: {}", r.len());
        }
    }

    #[test]
    fn plain_tcp_takes_two_round_trips() {
        let net = Network {
            bandwidth_bps: 0,
            ..Network::default()
        };
        let (server, _) = server_with_cert(1, SIM_EPOCH_MS, 0).unwrap();
        let (o, _) = simulate(
            "plain",
            net,
            &Scenario::PlainTcp,
            &Arc::new(server),
            1,
            SIM_EPOCH_MS,
            b"GET /",
            b"HTTP/1.1 200 OK\r\n\r\n",
        )
        .unwrap();
        assert_eq!(o.first_response_us, Some(200_000));
    }
}
