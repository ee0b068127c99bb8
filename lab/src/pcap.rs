//! Captures: write a connection as pcapng, read pcap/pcapng files back into TCP streams.
//!
//! **Writing.** The events of a connection hold every record's header and plaintext, and its
//! secrets; sealing the plaintext again with the same key, nonce (IV ⊕ sequence number) and
//! header gives exactly the bytes that crossed the wire (AEAD encryption is deterministic,
//! RFC 8446 §5.2). Those records are put into synthetic TCP/IP packets — a three-way handshake,
//! each flight cut into MSS-sized segments, ACKs, FINs — between the real 4-tuple (TCP runs) or
//! two loopback addresses (in-memory runs), and written as pcapng with the key log in a
//! Decryption Secrets Block (pcapng §4.7, type `TLSK`), so Wireshark and tshark decrypt the file
//! with no other input.
//!
//! **Reading.** [`read_capture`] takes pcap or pcapng (Ethernet, raw IP, BSD loopback, Linux
//! cooked captures), parses IPv4/IPv6 and TCP, reassembles each direction of each connection by
//! sequence number (retransmissions and reordering tolerated, gaps reported) and returns the
//! streams with the key logs embedded in the file.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::SectionHeaderBlock;
use pcap_file::pcapng::blocks::unknown::UnknownBlock;
use pcap_file::pcapng::{Block, PcapNgReader, PcapNgWriter};
use pcap_file::{DataLink, Endianness};

use crate::keylog::{self, KeyLog};
use tls13lab::crypto::aead::{suite_params, SuiteParams};
use tls13lab::events::{Direction, Epoch, Event, RecordEvent};
use tls13lab::messages::enums::ContentType;
use tls13lab::record::protect::RecordProtector;
use tls13lab::transcript_reader::Negotiating;

/// pcapng block type of a Decryption Secrets Block.
pub const DSB_TYPE: u32 = 0x0000_000a;
/// Secrets type of a TLS key log inside a DSB ("TLSK").
pub const DSB_TLS_KEY_LOG: u32 = 0x544c_534b;

/// The two ends of the TCP connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// The client's address and port.
    pub client: SocketAddr,
    /// The server's.
    pub server: SocketAddr,
}

impl Default for Endpoints {
    /// 127.0.0.1:49152 → 127.0.0.2:443 (443, so dissectors recognise TLS without being told).
    fn default() -> Self {
        Endpoints {
            client: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), 49_152),
            server: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), 443),
        }
    }
}

/// One record as it crossed the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireRecord {
    /// Which way.
    pub direction: Direction,
    /// The observer's clock (Unix ms).
    pub time_ms: u64,
    /// Header and payload.
    pub bytes: Vec<u8>,
}

/// The cipher suite of the ServerHello among `events`.
fn negotiated_suite(events: &[Event]) -> Option<SuiteParams> {
    Negotiating::from_events(events)
        .suite()
        .and_then(suite_params)
}

/// The records of a connection as they were on the wire, rebuilt from its events (which must
/// include records, handshake messages and secrets: [`tls13lab::events::Observe::ALL_WITH_SECRETS`]).
pub fn wire_records(events: &[Event]) -> Result<Vec<WireRecord>, String> {
    wire_records_with_keys(events, None)
}

/// The key log of `events` with `keys`' log merged in, and the client random the traffic
/// secrets go by: the events' own (ECH's lines come first and go by the outer random, the
/// traffic secrets by the inner one when ECH was accepted, RFC 9850 §4, §5), else `keys`'.
pub fn traffic_keys(events: &[Event], keys: Option<(&KeyLog, &[u8])>) -> (KeyLog, Option<Vec<u8>>) {
    let mut log = KeyLog::from_events(events);
    let mut random = events.iter().find_map(|e| match e {
        Event::Secret(s) if !s.nss_label.starts_with("ECH_") => Some(s.client_random.clone()),
        _ => None,
    });
    if let Some((extra, r)) = keys {
        log.merge(extra);
        random = random.or_else(|| Some(r.to_vec()));
    }
    (log, random)
}

/// [`wire_records`] for events that may carry no secrets (a dissected connection): `keys` adds
/// a key log and the client random its traffic secrets are under.
pub fn wire_records_with_keys(
    events: &[Event],
    keys: Option<(&KeyLog, &[u8])>,
) -> Result<Vec<WireRecord>, String> {
    let (log, random) = traffic_keys(events, keys);
    let suite = negotiated_suite(events);
    let mut protectors: BTreeMap<(u8, String), RecordProtector> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let Event::Record(r) = e else { continue };
        let bytes = match r.seq {
            None => [r.header.as_slice(), &r.content].concat(),
            Some(seq) => {
                let key = (r.direction as u8, r.epoch.to_string());
                if !protectors.contains_key(&key) {
                    let (Some(suite), Some(random)) = (suite, &random) else {
                        return Err(
                            "a protected record, but no ServerHello or secrets in the events"
                                .into(),
                        );
                    };
                    let secret =
                        keylog::traffic_secret(&log, random, suite.hash, r.direction, r.epoch)
                            .ok_or_else(|| {
                                format!("no secret for {} {} records", r.direction.arrow(), r.epoch)
                            })?;
                    let p = keylog::protector(suite, &secret).ok_or("bad traffic secret")?;
                    protectors.insert(key.clone(), p);
                }
                let p = protectors.get_mut(&key).ok_or("protector")?;
                if p.seq() != seq {
                    return Err(format!(
                        "record sequence {seq} but {} records were seen in {} {}",
                        p.seq(),
                        r.direction.arrow(),
                        r.epoch
                    ));
                }
                let wire = p
                    .seal(r.inner_type, &r.content, r.padding_len)
                    .map_err(|e| e.to_string())?;
                if wire[..5] != r.header[..] || wire.len() != r.wire_len {
                    return Err(format!(
                        "rebuilt record {} {} #{seq} does not match its header",
                        r.direction.arrow(),
                        r.epoch
                    ));
                }
                wire
            }
        };
        out.push(WireRecord {
            direction: r.direction,
            time_ms: r.time_ms,
            bytes,
        });
    }
    Ok(out)
}

// ------------------------------------------------------------------------------ IP and TCP

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

fn checksum(chunks: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    let mut odd: Option<u8> = None;
    for c in chunks {
        for &b in *c {
            match odd.take() {
                Some(hi) => sum += u32::from(u16::from_be_bytes([hi, b])),
                None => odd = Some(b),
            }
        }
    }
    if let Some(hi) = odd {
        sum += u32::from(u16::from_be_bytes([hi, 0]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// One IP packet carrying one TCP segment.
#[allow(clippy::too_many_arguments)]
fn packet(
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
    id: u16,
) -> Vec<u8> {
    let mut tcp = Vec::with_capacity(20 + payload.len());
    tcp.extend_from_slice(&src.port().to_be_bytes());
    tcp.extend_from_slice(&dst.port().to_be_bytes());
    tcp.extend_from_slice(&seq.to_be_bytes());
    tcp.extend_from_slice(&ack.to_be_bytes());
    tcp.push(5 << 4); // data offset: 20 bytes, no options
    tcp.push(flags);
    tcp.extend_from_slice(&65_535u16.to_be_bytes());
    tcp.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    tcp.extend_from_slice(payload);
    let tcp_len = tcp.len();
    match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let pseudo = [
                &s.octets()[..],
                &d.octets()[..],
                &[0, 6],
                &(tcp_len as u16).to_be_bytes(),
            ]
            .concat();
            let c = checksum(&[&pseudo, &tcp]);
            tcp[16..18].copy_from_slice(&c.to_be_bytes());
            let mut ip = Vec::with_capacity(20 + tcp_len);
            ip.extend_from_slice(&[0x45, 0]);
            ip.extend_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
            ip.extend_from_slice(&id.to_be_bytes());
            ip.extend_from_slice(&[0x40, 0, 64, 6, 0, 0]); // DF, TTL 64, TCP
            ip.extend_from_slice(&s.octets());
            ip.extend_from_slice(&d.octets());
            let c = checksum(&[&ip]);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            ip.extend_from_slice(&tcp);
            ip
        }
        (s, d) => {
            let (s, d) = (v6(s), v6(d));
            let pseudo = [
                &s[..],
                &d[..],
                &(tcp_len as u32).to_be_bytes(),
                &[0, 0, 0, 6],
            ]
            .concat();
            let c = checksum(&[&pseudo, &tcp]);
            tcp[16..18].copy_from_slice(&c.to_be_bytes());
            let mut ip = Vec::with_capacity(40 + tcp_len);
            ip.extend_from_slice(&[0x60, 0, 0, 0]);
            ip.extend_from_slice(&(tcp_len as u16).to_be_bytes());
            ip.extend_from_slice(&[6, 64]);
            ip.extend_from_slice(&s);
            ip.extend_from_slice(&d);
            ip.extend_from_slice(&tcp);
            ip
        }
    }
}

fn v6(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
        IpAddr::V6(v) => v.octets(),
    }
}

/// What [`pcapng`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The file.
    pub bytes: Vec<u8>,
    /// IP packets in it.
    pub packets: usize,
    /// TLS records carried.
    pub records: usize,
    /// Key log lines embedded.
    pub secrets: usize,
}

/// The connection of `events` as a pcapng file: synthetic TCP/IP between `ep`, segments of at
/// most `mss` bytes, the key log in a Decryption Secrets Block.
pub fn pcapng(events: &[Event], ep: Endpoints, mss: usize) -> Result<Written, String> {
    let records = wire_records(events)?;
    let log = KeyLog::from_events(events).to_text();
    let mut w = PcapNgWriter::with_section_header(
        Vec::new(),
        SectionHeaderBlock {
            endianness: Endianness::Little,
            ..SectionHeaderBlock::default()
        },
    )
    .map_err(|e| e.to_string())?;
    // pcap-file writes EPB timestamps in nanoseconds: say so (if_tsresol 9).
    w.write_pcapng_block(InterfaceDescriptionBlock {
        linktype: DataLink::RAW,
        snaplen: 0xffff,
        options: vec![InterfaceDescriptionOption::IfTsResol(9)],
    })
    .map_err(|e| e.to_string())?;
    let mut dsb = Vec::with_capacity(8 + log.len());
    dsb.extend_from_slice(&DSB_TLS_KEY_LOG.to_le_bytes());
    dsb.extend_from_slice(&(log.len() as u32).to_le_bytes());
    dsb.extend_from_slice(log.as_bytes());
    if !log.is_empty() {
        w.write_block(&Block::Unknown(UnknownBlock::new(DSB_TYPE, 0, &dsb)))
            .map_err(|e| e.to_string())?;
    }

    // TCP state: [client, server] sequence numbers (ISNs fixed: the file is reproducible).
    let mut seq = [1_000u32, 5_000u32];
    let addr = [ep.client, ep.server];
    let start_ms = records.first().map_or(0, |r| r.time_ms);
    let mut clock_us: u64 = start_ms * 1000;
    let mut count = 0;
    let mut id: u16 = 1;
    let mut emit = |w: &mut PcapNgWriter<Vec<u8>>,
                    from: usize,
                    seq: &mut [u32; 2],
                    flags: u8,
                    payload: &[u8],
                    at_ms: u64|
     -> Result<(), String> {
        clock_us = (clock_us + 1).max(at_ms * 1000);
        let ack = if flags & ACK != 0 { seq[1 - from] } else { 0 };
        let p = packet(
            addr[from],
            addr[1 - from],
            seq[from],
            ack,
            flags,
            payload,
            id,
        );
        id = id.wrapping_add(1);
        let len = payload.len() as u32 + u32::from(flags & (SYN | FIN) != 0);
        seq[from] = seq[from].wrapping_add(len);
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_micros(clock_us),
            original_len: p.len() as u32,
            data: Cow::Owned(p),
            options: vec![],
        })
        .map_err(|e| e.to_string())?;
        count += 1;
        Ok(())
    };
    emit(&mut w, 0, &mut seq, SYN, &[], start_ms)?;
    emit(&mut w, 1, &mut seq, SYN | ACK, &[], start_ms)?;
    emit(&mut w, 0, &mut seq, ACK, &[], start_ms)?;
    let mut i = 0;
    while i < records.len() {
        // A flight: consecutive records one way, sent as one burst of segments.
        let dir = records[i].direction;
        let from = usize::from(dir == Direction::ServerToClient);
        let j = records[i..]
            .iter()
            .position(|r| r.direction != dir)
            .map_or(records.len(), |k| i + k);
        let at = records[i].time_ms;
        let stream: Vec<u8> = records[i..j].iter().flat_map(|r| r.bytes.clone()).collect();
        for chunk in stream.chunks(mss.max(1)) {
            emit(&mut w, from, &mut seq, ACK | PSH, chunk, at)?;
        }
        // The other side acknowledges when it has nothing to send back at once.
        if j == records.len() || records[j].direction == dir {
            emit(&mut w, 1 - from, &mut seq, ACK, &[], records[j - 1].time_ms)?;
        }
        i = j;
    }
    let end = records.last().map_or(start_ms, |r| r.time_ms);
    emit(&mut w, 0, &mut seq, FIN | ACK, &[], end)?;
    emit(&mut w, 1, &mut seq, FIN | ACK, &[], end)?;
    emit(&mut w, 0, &mut seq, ACK, &[], end)?;
    Ok(Written {
        bytes: w.into_inner(),
        packets: count,
        records: records.len(),
        secrets: log.lines().count(),
    })
}

// -------------------------------------------------------------------------------- reading

pub use super::tcp::Stream;

/// A TCP connection found in a capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpConnection {
    /// The side that sent the SYN (or, without one, the side whose stream starts with a
    /// ClientHello).
    pub client: SocketAddr,
    /// The other side.
    pub server: SocketAddr,
    /// Client → server bytes.
    pub c2s: Stream,
    /// Server → client bytes.
    pub s2c: Stream,
    /// Packets of this connection in the capture.
    pub packets: usize,
}

/// What a capture file holds.
#[derive(Clone, Debug, Default)]
pub struct CaptureFile {
    /// "pcap" or "pcapng".
    pub format: String,
    /// TCP connections, in order of their first packet.
    pub connections: Vec<TcpConnection>,
    /// Key logs from Decryption Secrets Blocks.
    pub keylog: KeyLog,
    /// Packets read.
    pub packets: usize,
    /// Packets that were not TCP over IPv4/IPv6 on a known link type.
    pub skipped: usize,
}

struct Segment {
    time_us: u64,
    seq: u32,
    flags: u8,
    payload: Vec<u8>,
}

/// The IP packet inside a frame of `linktype`.
fn ip_of(linktype: DataLink, frame: &[u8]) -> Option<&[u8]> {
    let ethertype_ip = |t: u16| t == 0x0800 || t == 0x86dd;
    match linktype {
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => Some(frame),
        DataLink::ETHERNET => {
            let mut at = 12;
            let mut t = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
            while t == 0x8100 || t == 0x88a8 {
                at += 4;
                t = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
            }
            ethertype_ip(t).then(|| frame.get(at + 2..)).flatten()
        }
        DataLink::NULL | DataLink::LOOP => frame.get(4..),
        DataLink::LINUX_SLL => {
            let t = u16::from_be_bytes([*frame.get(14)?, *frame.get(15)?]);
            ethertype_ip(t).then(|| frame.get(16..)).flatten()
        }
        DataLink::LINUX_SLL2 => {
            let t = u16::from_be_bytes([*frame.first()?, *frame.get(1)?]);
            ethertype_ip(t).then(|| frame.get(20..)).flatten()
        }
        _ => None,
    }
}

/// `(src, dst, segment)` of a TCP segment in an IP packet.
fn tcp_of(ip: &[u8], time_us: u64) -> Option<(SocketAddr, SocketAddr, Segment)> {
    let (src, dst, tcp) = match ip.first()? >> 4 {
        4 => {
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
            if *ip.get(9)? != 6 || ip.len() < total || ihl < 20 {
                return None;
            }
            let s: [u8; 4] = ip.get(12..16)?.try_into().ok()?;
            let d: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
            (IpAddr::from(s), IpAddr::from(d), ip.get(ihl..total)?)
        }
        6 => {
            // Extension headers are not followed: TCP must be the next header.
            let plen = usize::from(u16::from_be_bytes([*ip.get(4)?, *ip.get(5)?]));
            if *ip.get(6)? != 6 {
                return None;
            }
            let s: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
            let d: [u8; 16] = ip.get(24..40)?.try_into().ok()?;
            (IpAddr::from(s), IpAddr::from(d), ip.get(40..40 + plen)?)
        }
        _ => return None,
    };
    let sp = u16::from_be_bytes([*tcp.first()?, *tcp.get(1)?]);
    let dp = u16::from_be_bytes([*tcp.get(2)?, *tcp.get(3)?]);
    let seq = u32::from_be_bytes(tcp.get(4..8)?.try_into().ok()?);
    let off = usize::from(tcp.get(12)? >> 4) * 4;
    let flags = *tcp.get(13)?;
    Some((
        SocketAddr::new(src, sp),
        SocketAddr::new(dst, dp),
        Segment {
            time_us,
            seq,
            flags,
            payload: tcp.get(off..)?.to_vec(),
        },
    ))
}

/// Reassemble one direction from its segments.
fn reassemble(mut segs: Vec<Segment>) -> Stream {
    let mut s = Stream::default();
    let isn = segs
        .iter()
        .find(|x| x.flags & SYN != 0)
        .map(|x| x.seq.wrapping_add(1))
        .or_else(|| {
            segs.iter()
                .filter(|x| !x.payload.is_empty())
                .map(|x| x.seq)
                .min()
        });
    let Some(isn) = isn else { return s };
    segs.retain(|x| !x.payload.is_empty());
    // Stable: equal offsets keep capture order.
    segs.sort_by_key(|x| x.seq.wrapping_sub(isn));
    for x in segs {
        let off = x.seq.wrapping_sub(isn) as usize;
        let end = off + x.payload.len();
        if off > s.bytes.len() {
            s.gap = true;
            break;
        }
        if end <= s.bytes.len() {
            s.retransmissions += 1;
            continue;
        }
        s.times.push((s.bytes.len(), x.time_us));
        s.bytes.extend_from_slice(&x.payload[s.bytes.len() - off..]);
    }
    s
}

/// Read a pcap or pcapng file.
pub fn read_capture(data: &[u8]) -> Result<CaptureFile, String> {
    let mut cap = CaptureFile::default();
    let mut frames: Vec<(DataLink, u64, Vec<u8>)> = Vec::new();
    let magic = data.get(..4).ok_or("not a capture file: too short")?;
    if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
        cap.format = "pcapng".into();
        let mut r = PcapNgReader::new(data).map_err(|e| format!("pcapng: {e}"))?;
        // The reader's own section and interface lists borrow it; keep ours.
        let mut little = r.section().endianness == Endianness::Little;
        // (link type, timestamp units per second) per interface.
        let mut links: Vec<(DataLink, u128)> = Vec::new();
        while let Some(block) = r.next_block() {
            let block = block.map_err(|e| format!("pcapng: {e}"))?;
            match block {
                Block::SectionHeader(h) => {
                    little = h.endianness == Endianness::Little;
                    links.clear();
                }
                Block::InterfaceDescription(i) => {
                    // if_tsresol: 10^-n (or 2^-n with the top bit) seconds; default 10^-6.
                    let per_second = i
                        .options
                        .iter()
                        .find_map(|o| match o {
                            InterfaceDescriptionOption::IfTsResol(r) if r & 0x80 == 0 => {
                                10u128.checked_pow(u32::from(*r))
                            }
                            InterfaceDescriptionOption::IfTsResol(r) => {
                                1u128.checked_shl(u32::from(r & 0x7f))
                            }
                            _ => None,
                        })
                        .unwrap_or(1_000_000);
                    links.push((i.linktype, per_second.max(1)));
                }
                Block::EnhancedPacket(p) => {
                    let (link, per_second) = links
                        .get(p.interface_id as usize)
                        .copied()
                        .unwrap_or((DataLink::RAW, 1_000_000));
                    // pcap-file hands back the raw timestamp as if it counted nanoseconds.
                    let us = p.timestamp.as_nanos() * 1_000_000 / per_second;
                    frames.push((link, us as u64, p.data.into_owned()));
                }
                Block::SimplePacket(p) => {
                    let link = links.first().map_or(DataLink::RAW, |l| l.0);
                    frames.push((link, 0, p.data.into_owned()));
                }
                Block::Unknown(u) if u.type_ == DSB_TYPE => {
                    let v = &u.value;
                    let num = |b: &[u8]| -> u32 {
                        let a = [b[0], b[1], b[2], b[3]];
                        if little {
                            u32::from_le_bytes(a)
                        } else {
                            u32::from_be_bytes(a)
                        }
                    };
                    if v.len() >= 8 && num(&v[..4]) == DSB_TLS_KEY_LOG {
                        let n = (num(&v[4..8]) as usize).min(v.len() - 8);
                        cap.keylog
                            .merge(&KeyLog::parse(&String::from_utf8_lossy(&v[8..8 + n])));
                    }
                }
                _ => {}
            }
        }
    } else {
        cap.format = "pcap".into();
        let mut r = pcap_file::pcap::PcapReader::new(data).map_err(|e| format!("pcap: {e}"))?;
        let link = r.header().datalink;
        while let Some(p) = r.next_packet() {
            let p = p.map_err(|e| format!("pcap: {e}"))?;
            frames.push((link, p.timestamp.as_micros() as u64, p.data.into_owned()));
        }
    }
    cap.packets = frames.len();

    // Group segments by connection (unordered address pair), keeping first-seen order.
    type Key = (SocketAddr, SocketAddr);
    let mut order: Vec<Key> = Vec::new();
    let mut flows: BTreeMap<String, (Key, Vec<(SocketAddr, Segment)>)> = BTreeMap::new();
    for (link, t, frame) in &frames {
        let Some((src, dst, seg)) = ip_of(*link, frame).and_then(|ip| tcp_of(ip, *t)) else {
            cap.skipped += 1;
            continue;
        };
        let key = if src <= dst { (src, dst) } else { (dst, src) };
        let name = format!("{} {}", key.0, key.1);
        let e = flows.entry(name).or_insert_with(|| {
            order.push(key);
            (key, Vec::new())
        });
        e.1.push((src, seg));
    }
    for key in order {
        let Some((_, segs)) = flows.remove(&format!("{} {}", key.0, key.1)) else {
            continue;
        };
        let packets = segs.len();
        // The client sent the SYN without ACK; else the first sender of a ClientHello.
        let syn_from = segs
            .iter()
            .find(|(_, s)| s.flags & SYN != 0 && s.flags & ACK == 0)
            .map(|(a, _)| *a);
        let hello_from = segs
            .iter()
            .find(|(_, s)| s.payload.len() > 5 && s.payload[0] == 22 && s.payload[5] == 1)
            .map(|(a, _)| *a);
        let client = syn_from.or(hello_from).unwrap_or(key.0);
        let server = if client == key.0 { key.1 } else { key.0 };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (src, s) in segs {
            if src == client {
                a.push(s);
            } else {
                b.push(s);
            }
        }
        cap.connections.push(TcpConnection {
            client,
            server,
            c2s: reassemble(a),
            s2c: reassemble(b),
            packets,
        });
    }
    Ok(cap)
}

/// A record's epoch and sequence as the events report them (for comparisons in tests).
pub fn record_key(r: &RecordEvent) -> (Direction, Epoch, ContentType, usize) {
    (r.direction, r.epoch, r.inner_type, r.wire_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_rfc_1071() {
        // The example IPv4 header from RFC 1071-style textbooks: checksum 0xb861.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&[&hdr]), 0xb861);
        assert_eq!(checksum(&[&[0x01], &[0x02]]), checksum(&[&[0x01, 0x02]]));
    }

    #[test]
    fn packets_parse_back() {
        let ep = Endpoints::default();
        for (c, s) in [
            (ep.client, ep.server),
            ("[::1]:5000".parse().unwrap(), "[::1]:443".parse().unwrap()),
        ] {
            let p = packet(c, s, 7, 9, ACK | PSH, b"hello", 1);
            let (src, dst, seg) = tcp_of(&p, 3).unwrap();
            assert_eq!(
                (src, dst, seg.seq, seg.payload.as_slice()),
                (c, s, 7, &b"hello"[..])
            );
        }
    }

    #[test]
    fn reassembly_orders_and_dedups() {
        let seg = |seq: u32, p: &[u8], t: u64| Segment {
            time_us: t,
            seq,
            flags: ACK,
            payload: p.to_vec(),
        };
        let syn = Segment {
            time_us: 0,
            seq: 99,
            flags: SYN,
            payload: vec![],
        };
        let s = reassemble(vec![
            syn,
            seg(103, b"def", 2),
            seg(100, b"abc", 1),
            seg(100, b"abc", 3),
        ]);
        assert_eq!(s.bytes, b"abcdef");
        assert_eq!(s.retransmissions, 1);
        assert_eq!(s.time_of(4), 2);
        let s = reassemble(vec![seg(10, b"ab", 1), seg(20, b"cd", 2)]);
        assert!(s.gap);
        assert_eq!(s.bytes, b"ab");
    }
}
