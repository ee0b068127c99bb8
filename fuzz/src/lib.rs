//! The bodies of tls13lab's fuzz targets, and the seeds their corpora start from.
//!
//! Each `pub fn` here is one target: `fuzz_targets/*.rs` hand it libFuzzer's input (`cargo fuzz
//! run NAME`), and the main crate's `tests/fuzz_corpus.rs` includes this file as a module to run
//! every target on every seed and on the saved crash inputs with the stable toolchain, inside
//! the README's test command. The file therefore uses only `std` and `tls13lab`.
//!
//! | target | what it feeds | what must hold besides "no panic" |
//! | --- | --- | --- |
//! | [`messages`] | one handshake message, an extension block, an alert, an ECHConfigList | a decoded message re-encodes to the same bytes; layouts stay in bounds |
//! | [`records`] | a byte stream to the deframer, joiner and record protection | chunking does not change the records; inner-plaintext parsing follows §5.4 |
//! | [`client`], [`server`] | a peer's bytes after a prefix of a real handshake (see [`Session`]) | every error carries exactly the alert its type names; a failed endpoint stays failed |
//! | [`kx`] | a peer's key share for each group | a bad share is illegal_parameter, never internal_error |

use std::sync::{Arc, OnceLock};

use tls13lab::config::{AntiReplay, ClientAuth};
use tls13lab::crypto::aead::{suite_params, AeadAlg, AeadKey};
use tls13lab::crypto::kx::{server_respond, KeyShareSecret, KxError};
use tls13lab::crypto::random::SeededRandom;
use tls13lab::events::{Epoch, Event, RecordEvent, Side};
use tls13lab::keyschedule::SecretName;
use tls13lab::messages::ech::EchConfigList;
use tls13lab::messages::enums::{AlertDescription, ContentType, NamedGroup};
use tls13lab::messages::extensions::{decode_extensions, encode_extensions, ExtensionContext};
use tls13lab::messages::handshake::{DecodeContext, HandshakeMessage};
use tls13lab::messages::{Alert, Reader, Writer};
use tls13lab::record::{
    Deframer, HandshakeJoiner, OpaqueRecord, RecordError, RecordProtector, MAX_CIPHERTEXT,
    MAX_PLAINTEXT, MAX_RECORD_LEN,
};
use tls13lab::session::TicketStore;
use tls13lab::{Client, ClientConfig, Connection, Error, Ledger, Role, Server, ServerConfig};

/// The simulated clock of every fuzzed connection.
pub const NOW: u64 = 1_700_000_000_000;

/// The names of the targets, as `cargo fuzz` knows them.
pub const TARGETS: [&str; 5] = ["messages", "records", "client", "server", "kx"];

/// Runs target `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "messages" => messages(data),
        "records" => records(data),
        "client" => client(data),
        "server" => server(data),
        "kx" => kx(data),
        other => panic!("no fuzz target {other}"),
    }
}

// =============================================================================================
// messages
// =============================================================================================

const CONTEXTS: [ExtensionContext; 7] = [
    ExtensionContext::ClientHello,
    ExtensionContext::ServerHello,
    ExtensionContext::HelloRetryRequest,
    ExtensionContext::EncryptedExtensions,
    ExtensionContext::CertificateRequest,
    ExtensionContext::Certificate,
    ExtensionContext::NewSessionTicket,
];

/// Every message type through the one decoder (with each Hash.length the state machines pass),
/// every extension context, alerts. What decodes must re-encode byte for byte (STYLE: open enums
/// round-trip), and its layout must name ranges inside the message.
pub fn messages(data: &[u8]) {
    for hash_len in [0, 32, 48] {
        if let Ok(m) = HandshakeMessage::decode(data, DecodeContext { hash_len }) {
            let again = HandshakeMessage::new(m.payload.clone());
            assert_eq!(
                again.encoded, data,
                "a decoded {:?} re-encodes to other bytes",
                m.payload
            );
            for span in m.layout() {
                check_span(&span, data.len());
            }
            // Whatever decodes with a known hash length also decodes without one.
            if hash_len != 0 {
                assert!(HandshakeMessage::decode(data, DecodeContext { hash_len: 0 }).is_ok());
            }
        }
    }
    for ctx in CONTEXTS {
        let mut r = Reader::new(data);
        if let Ok(exts) = decode_extensions(&mut r, ctx) {
            let used = data.len() - r.rest().len();
            let mut w = Writer::new();
            encode_extensions(&mut w, &exts);
            assert_eq!(w.into_bytes(), &data[..used], "extensions in {ctx:?}");
        }
    }
    if let Ok(a) = Alert::decode(data) {
        assert_eq!(a.encode(), data);
    }
    // ECHConfigList (RFC 9849 §4): unknown versions, KEMs and extensions round-trip, and each
    // config keeps exactly its own wire bytes.
    if let Ok(list) = EchConfigList::decode(data) {
        assert_eq!(list.encode(), data, "ECHConfigList {list:?}");
        let mut at = 2;
        for c in &list.configs {
            assert_eq!(c.raw, data[at..at + c.raw.len()]);
            at += c.raw.len();
        }
    }
    // The server's ClientHelloInner path (RFC 9849 §5.1): the first byte splits the rest into
    // an EncodedClientHelloInner and a ClientHelloOuter body. Whatever it rebuilds is one
    // well-formed ClientHello body.
    if let Some((&cut, rest)) = data.split_first() {
        let cut = (usize::from(cut) * 8).min(rest.len());
        let (encoded, outer) = rest.split_at(cut);
        if let Ok(body) = tls13lab::ech::inner::decode(encoded, outer) {
            if let Err(e) = tls13lab::ech::wire::HelloParts::parse(&body) {
                panic!("rebuilt ClientHelloInner does not parse: {e}");
            }
        }
    }
}

/// ECHConfigList seeds for [`messages`]: the two files OpenSSL 4.0.3 wrote
/// (tests/vectors/ech/), and a list with an unknown version, KEM and extensions.
fn ech_config_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, pem) in [
        (
            "x25519",
            include_str!("../../tests/vectors/ech/openssl-x25519.pem"),
        ),
        (
            "p256",
            include_str!("../../tests/vectors/ech/openssl-p256.pem"),
        ),
    ] {
        for block in tls13lab::crypto::cert::pem_blocks(pem, "ECHCONFIG").unwrap_or_default() {
            out.push((format!("ech-config-openssl-{name}"), block));
        }
    }
    let exotic = "003bfe0d0029070a0a0003010203000800010002\
                  1234ffff2009612e6578616d706c65000a00010000fa000002abcd\
                  fe0e000a00112233445566778899";
    let exotic: Vec<u8> = (0..exotic.len() / 2)
        .filter_map(|i| u8::from_str_radix(&exotic[2 * i..2 * i + 2], 16).ok())
        .collect();
    out.push(("ech-config-exotic".into(), exotic));
    out
}

fn check_span(span: &tls13lab::messages::Span, len: usize) {
    assert!(
        span.offset <= len && span.len <= len - span.offset,
        "span {span:?} outside a message of {len} bytes"
    );
    for c in &span.children {
        check_span(c, len);
    }
}

// =============================================================================================
// records
// =============================================================================================

/// The record layer on its own: the first byte picks a chunk size; the rest is fed to two
/// deframers, whole and in chunks, which must agree. Handshake records go through a joiner with
/// a small limit, and every record's payload is sealed as a raw TLSInnerPlaintext and opened
/// again, which must follow §5.4 exactly.
pub fn records(data: &[u8]) {
    let Some((&chunk, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    let drain = |d: &mut Deframer| -> (Vec<OpaqueRecord>, Option<RecordError>) {
        let mut recs = Vec::new();
        loop {
            match d.next_record() {
                Ok(Some(r)) => recs.push(r),
                Ok(None) => return (recs, None),
                Err(e) => return (recs, Some(e)),
            }
        }
    };
    let mut whole = Deframer::new();
    whole.feed(stream);
    let a = drain(&mut whole);
    let mut pieces = Deframer::new();
    let mut b = (Vec::new(), None);
    for c in stream.chunks(chunk) {
        pieces.feed(c);
        let (recs, err) = drain(&mut pieces);
        b.0.extend(recs);
        if err.is_some() {
            b.1 = err;
        }
    }
    assert_eq!(a, b, "chunking changed the records");
    assert!(whole.buffered_len() <= 5 + MAX_CIPHERTEXT);

    let mut joiner = HandshakeJoiner::new(1024);
    let key = AeadKey::new(AeadAlg::Aes128Gcm, &[7; 16]).expect("key");
    for rec in &a.0 {
        assert_eq!(
            usize::from(u16::from_be_bytes([rec.header[3], rec.header[4]])),
            rec.payload.len()
        );
        let max = if rec.typ == ContentType::ApplicationData {
            MAX_CIPHERTEXT
        } else {
            MAX_PLAINTEXT
        };
        assert!(
            rec.payload.len() <= max,
            "the deframer let an oversized record through"
        );
        if rec.typ == ContentType::Handshake && joiner.push(&rec.payload).is_ok() {
            while let Some((m, _)) = joiner.next_message() {
                let len = (usize::from(m[1]) << 16) | (usize::from(m[2]) << 8) | usize::from(m[3]);
                assert_eq!(m.len(), 4 + len);
                assert!(len <= 1024);
            }
        }
        inner_plaintext_round_trip(&key, &rec.payload);
    }
}

/// Seals `inner` as a TLSInnerPlaintext exactly as given, opens it with a [`RecordProtector`]
/// and checks the outcome against §5.2/§5.4.
fn inner_plaintext_round_trip(key: &AeadKey, inner: &[u8]) {
    if inner.len() + 16 > MAX_CIPHERTEXT {
        return;
    }
    let iv = [3u8; 12];
    let len = (inner.len() + 16) as u16;
    let header = [23, 3, 3, (len >> 8) as u8, len as u8];
    let mut body = inner.to_vec();
    let tag = key.seal_detached(&iv, &header, &mut body).expect("seal");
    body.extend_from_slice(&tag);
    let rec = OpaqueRecord {
        header,
        typ: ContentType::ApplicationData,
        version: 0x0303,
        payload: body,
    };
    let mut p = RecordProtector::new(AeadAlg::Aes128Gcm, &[7; 16], iv).expect("protector");
    let got = p.open(&rec);
    let type_at = inner.iter().rposition(|&b| b != 0);
    if inner.len() > MAX_PLAINTEXT + 1 {
        assert_eq!(got.map(|_| ()), Err(RecordError::RecordOverflow));
        return;
    }
    match (got, type_at) {
        (Err(RecordError::NoContentType), None) => {}
        (Ok(ip), Some(at)) => {
            assert_eq!(ip.typ, ContentType::from(inner[at]));
            assert_eq!(ip.content, &inner[..at]);
            assert_eq!(ip.padding, inner.len() - at - 1);
        }
        (Err(RecordError::EmptyFragment(t)), Some(0)) => {
            // §5.4: no Handshake or Alert content, only a type (and padding).
            assert!(matches!(t, ContentType::Handshake | ContentType::Alert));
            assert_eq!(t, ContentType::from(inner[0]));
        }
        (Err(e), _) => panic!("{e:?} for an inner plaintext of {} bytes", inner.len()),
        (Ok(ip), None) => panic!("all-zero inner plaintext opened as {ip:?}"),
    }
}

// =============================================================================================
// kx
// =============================================================================================

/// Every group we implement (`kx::supported_groups`, in its order: corpus entries name a group
/// by its index) and one we do not.
fn groups() -> Vec<NamedGroup> {
    let mut v = tls13lab::crypto::kx::supported_groups().to_vec();
    v.push(NamedGroup::Unknown(0x1234));
    v
}

/// The first byte picks a group; the rest is the peer's key_exchange, given to the server side
/// (a client's share: points, encapsulation keys) and to the client side (a server's share:
/// points, ciphertexts) of our real key. Bad shares must be the peer's fault
/// (illegal_parameter), never ours (internal_error).
pub fn kx(data: &[u8]) {
    let Some((&g, share)) = data.split_first() else {
        return;
    };
    let groups = groups();
    let group = groups[usize::from(g) % groups.len()];
    match server_respond(group, share, &mut SeededRandom::from_seed(1)) {
        Ok((ours, result)) => {
            assert!(!ours.is_empty() && !result.shared_secret.is_empty());
        }
        Err(e) => check_kx_error(&e),
    }
    if let Ok(secret) = KeyShareSecret::generate(group, &mut SeededRandom::from_seed(2)) {
        match secret.complete(share) {
            Ok(result) => assert!(!result.shared_secret.is_empty()),
            Err(e) => check_kx_error(&e),
        }
    }
}

fn check_kx_error(e: &KxError) {
    assert!(!matches!(e, KxError::KemFailure(_)), "{e:?} on peer input");
    assert_eq!(e.alert(), AlertDescription::IllegalParameter, "{e:?}");
}

// =============================================================================================
// client and server: a scripted peer after a prefix of a real handshake
// =============================================================================================

/// A real connection between our client and server, recorded: every record each side sent,
/// with its epoch and sequence number, and the keys that protect it. A fuzzed endpoint is a
/// fresh one with the same configuration and seed, so it replays the recorded connection
/// exactly as long as it gets the same bytes.
pub struct Session {
    client_config: Arc<ClientConfig>,
    server_config: Arc<ServerConfig>,
    tickets: TicketStore,
    /// Records the client sent, in order, and what they carry.
    pub client_records: Vec<RecordEvent>,
    /// Records the server sent.
    pub server_records: Vec<RecordEvent>,
    client_keys: Vec<(Epoch, AeadKey, [u8; 12])>,
    server_keys: Vec<(Epoch, AeadKey, [u8; 12])>,
}

/// How many scenarios [`session`] knows.
pub const SCENARIOS: u8 = 5;

const CLIENT_SEED: u64 = 21;
const SERVER_SEED: u64 = 22;

/// Scenario `n`, recorded once per process.
pub fn session(n: u8) -> &'static Session {
    static CELLS: [OnceLock<Session>; SCENARIOS as usize] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let n = n % SCENARIOS;
    CELLS[usize::from(n)].get_or_init(|| Session::record(n))
}

impl Session {
    /// 0: defaults (X25519, P-256 certificate). 1: a HelloRetryRequest (X25519 offered, P-256
    /// wanted). 2: client authentication required, compatibility mode, record_size_limit, and
    /// both certificates compressed (RFC 8879: CompressedCertificate each way).
    /// 3: resumption with 0-RTT (replays allowed, so every fresh server accepts it again).
    /// 4: X25519MLKEM768. Every connection ends with data both ways and a KeyUpdate.
    fn record(n: u8) -> Session {
        let (mut s, root) = lab::demo::server_config(77, NOW).expect("server config");
        let mut c = lab::demo::client_config(root);
        s.anti_replay = AntiReplay::Off;
        match n {
            1 => {
                c.key_shares = vec![NamedGroup::X25519];
                s.groups = vec![NamedGroup::secp256r1];
            }
            2 => {
                let (client_side, client_root) =
                    lab::demo::server_config(78, NOW).expect("client identity");
                c.client_cert = Some(client_side.cert.clone());
                s.client_auth = ClientAuth::Required(vec![client_root]);
                c.compat_mode = true;
                c.record_size_limit = Some(4000);
                s.record_size_limit = Some(3000);
                s.cert_compression = tls13lab::certcomp::supported().to_vec();
            }
            4 => {
                c.key_shares = vec![NamedGroup::X25519MLKEM768];
            }
            _ => {}
        }
        c.fixed_validation_time_ms = Some(NOW);
        s.fixed_validation_time_ms = Some(NOW);
        let (c, s) = (Arc::new(c), Arc::new(s));
        let tickets = if n == 3 {
            let p = lab::demo::request_response(
                c.clone(),
                s.clone(),
                5,
                NOW,
                b"GET / HTTP/1.0\r\n\r\n",
                b"ok",
                TicketStore::default(),
            )
            .expect("first connection");
            p.client.tickets().clone()
        } else {
            TicketStore::default()
        };
        let mut client = new_client(&c, &tickets);
        let mut server =
            Server::new(s.clone(), Box::new(SeededRandom::from_seed(SERVER_SEED))).expect("server");
        let (mut cev, mut sev) = (Vec::new(), Vec::new());
        client.start(NOW).expect("start");
        if n == 3 {
            client.send(b"GET /early HTTP/1.0\r\n\r\n").expect("0-RTT");
        }
        let mut steps = 0;
        let mut sent_data = false;
        let mut updated = false;
        loop {
            let co = client.take_output();
            cev.extend(client.events());
            if !co.is_empty() {
                server.receive(&co, NOW).expect("server receives");
            }
            sev.extend(server.events());
            let so = server.take_output();
            sev.extend(server.events());
            if !so.is_empty() {
                client.receive(&so, NOW).expect("client receives");
            }
            cev.extend(client.events());
            steps += 1;
            if client.is_connected() && server.is_connected() && !sent_data {
                client.send(b"ping").expect("send");
                server.send(b"pong").expect("send");
                sent_data = true;
            } else if sent_data && !updated {
                server.key_update(true).expect("key update");
                updated = true;
            } else if updated && co.is_empty() && so.is_empty() {
                break;
            }
            assert!(steps < 20, "scenario {n} does not settle");
        }
        client.close();
        server.close();
        cev.extend(client.events());
        let co = client.take_output();
        cev.extend(client.events());
        server.receive(&co, NOW).expect("close_notify");
        sev.extend(server.events());
        let so = server.take_output();
        sev.extend(server.events());
        client.receive(&so, NOW).expect("close_notify");
        let sent = |events: &[Event], side: Side| -> Vec<RecordEvent> {
            events
                .iter()
                .filter_map(|e| match e {
                    Event::Record(r) if r.direction == side.sending() => Some(r.clone()),
                    _ => None,
                })
                .collect()
        };
        Session {
            client_records: sent(&cev, Side::Client),
            server_records: sent(&sev, Side::Server),
            client_keys: keys_of(&cev, Side::Client),
            server_keys: keys_of(&sev, Side::Server),
            client_config: c,
            server_config: s,
            tickets,
        }
    }

    /// The recorded records of `side`.
    pub fn records(&self, side: Side) -> &[RecordEvent] {
        match side {
            Side::Client => &self.client_records,
            Side::Server => &self.server_records,
        }
    }

    fn keys(&self, side: Side, epoch: Epoch) -> Option<(&AeadKey, [u8; 12])> {
        let list = match side {
            Side::Client => &self.client_keys,
            Side::Server => &self.server_keys,
        };
        list.iter()
            .find(|(e, _, _)| *e == epoch)
            .map(|(_, k, iv)| (k, *iv))
    }
}

fn new_client(c: &Arc<ClientConfig>, tickets: &TicketStore) -> Client {
    Client::new(c.clone(), Box::new(SeededRandom::from_seed(CLIENT_SEED)))
        .expect("client")
        .with_tickets(tickets.clone())
}

/// The record keys `side` used in each epoch, from the key schedule's derivation events.
fn keys_of(events: &[Event], side: Side) -> Vec<(Epoch, AeadKey, [u8; 12])> {
    let aead = events
        .iter()
        .find_map(|e| match e {
            Event::Connected(n) => suite_params(n.suite).map(|s| s.aead),
            _ => None,
        })
        .expect("connected");
    let mut out = Vec::new();
    let mut epochs = vec![Epoch::Early, Epoch::Handshake];
    epochs.extend((0..4).map(Epoch::Application));
    for epoch in epochs {
        let secret = match (side, epoch) {
            (Side::Client, Epoch::Early) => SecretName::ClientEarlyTrafficSecret,
            (Side::Server, Epoch::Early) => continue,
            (Side::Client, Epoch::Handshake) => SecretName::ClientHandshakeTrafficSecret,
            (Side::Server, Epoch::Handshake) => SecretName::ServerHandshakeTrafficSecret,
            (Side::Client, Epoch::Application(n)) => SecretName::ClientApplicationTrafficSecret(n),
            (Side::Server, Epoch::Application(n)) => SecretName::ServerApplicationTrafficSecret(n),
            _ => continue,
        };
        let find = |name: SecretName| -> Option<Vec<u8>> {
            events.iter().rev().find_map(|e| match e {
                Event::Derivation(d) if d.name == name && d.parent == Some(secret) => {
                    Some(d.output.clone())
                }
                _ => None,
            })
        };
        if let (Some(k), Some(iv)) = (find(SecretName::TrafficKey), find(SecretName::TrafficIv)) {
            let iv: [u8; 12] = iv.try_into().expect("12-byte IV");
            out.push((epoch, AeadKey::new(aead, &k).expect("key"), iv));
        }
    }
    out
}

/// What the harness does with an endpoint once the script is over: every call a caller may
/// still make, whatever state the script left it in.
fn poke_client(c: &mut Client) {
    let _ = c.send(b"after");
    let _ = c.key_update(true);
    let _ = c.export(b"EXPERIMENTAL fuzz", b"", 32);
    c.close();
}

fn poke_server(s: &mut Server) {
    let _ = s.send(b"after");
    let _ = s.key_update(false);
    let _ = s.send_ticket();
    let _ = s.export(b"EXPERIMENTAL fuzz", b"", 32);
    s.close();
}

/// Record types an op can name: `TYPES[(op >> 2) & 3]`.
const TYPES: [ContentType; 4] = [
    ContentType::Handshake,
    ContentType::ApplicationData,
    ContentType::Alert,
    ContentType::ChangeCipherSpec,
];

/// One step of a fuzz script (see [`script`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Bytes fed as they are.
    Raw(Vec<u8>),
    /// A protected record of real type `typ`, sealed under the peer's keys at the next sequence
    /// number of the epoch the recording had reached, with `padding` zeros.
    Sealed {
        /// Inner content type.
        typ: ContentType,
        /// Zero bytes of padding (0..=45).
        padding: usize,
        /// The content.
        content: Vec<u8>,
    },
    /// A plaintext record.
    Plain {
        /// Record type.
        typ: ContentType,
        /// Its fragment.
        payload: Vec<u8>,
    },
    /// The peer's recorded record number `index` (mod the count), replayed verbatim.
    Replay {
        /// Which record.
        index: usize,
    },
}

/// Encodes a script: scenario, prefix length, then ops as `[op][len: u16][bytes]`.
pub fn script(scenario: u8, prefix: u8, ops: &[Op]) -> Vec<u8> {
    let mut out = vec![scenario, prefix];
    for op in ops {
        let type_bits = |t: &ContentType| TYPES.iter().position(|x| x == t).unwrap_or(0) as u8;
        let (code, bytes): (u8, Vec<u8>) = match op {
            Op::Raw(b) => (0, b.clone()),
            Op::Sealed {
                typ,
                padding,
                content,
            } => (
                1 | (type_bits(typ) << 2) | (((padding / 3).min(15) as u8) << 4),
                content.clone(),
            ),
            Op::Plain { typ, payload } => (2 | (type_bits(typ) << 2), payload.clone()),
            Op::Replay { index } => (3, vec![*index as u8]),
        };
        out.push(code);
        out.extend_from_slice(&(bytes.len().min(0xffff) as u16).to_be_bytes());
        out.extend_from_slice(&bytes[..bytes.len().min(0xffff)]);
    }
    out
}

/// Decodes a script; a short last op takes what is left.
pub fn parse_script(data: &[u8]) -> Option<(u8, u8, Vec<Op>)> {
    let (&scenario, rest) = data.split_first()?;
    let (&prefix, mut rest) = rest.split_first()?;
    let mut ops = Vec::new();
    while let Some((&code, tail)) = rest.split_first() {
        let len = match tail {
            [a, b, ..] => usize::from(u16::from_be_bytes([*a, *b])),
            _ => tail.len(),
        };
        let tail = &tail[tail.len().min(2)..];
        let (bytes, next) = tail.split_at(len.min(tail.len()));
        rest = next;
        let typ = TYPES[usize::from((code >> 2) & 3)];
        ops.push(match code & 3 {
            0 => Op::Raw(bytes.to_vec()),
            1 => Op::Sealed {
                typ,
                padding: usize::from(code >> 4) * 3,
                content: bytes.to_vec(),
            },
            2 => Op::Plain {
                typ,
                payload: bytes.to_vec(),
            },
            _ => Op::Replay {
                index: usize::from(bytes.first().copied().unwrap_or(0)),
            },
        });
    }
    Some((scenario, prefix, ops))
}

/// A fresh client of scenario `data[0]` gets the first `data[1]` records the server sent in
/// the recording, then the ops of the script: arbitrary server bytes at any point of a real
/// handshake, including under its real keys.
pub fn client(data: &[u8]) {
    client_outcome(data);
}

/// [`client`], returning the first error the client reported (if any).
pub fn client_outcome(data: &[u8]) -> Option<Error> {
    let (scenario, prefix, ops) = parse_script(data)?;
    let s = session(scenario);
    let mut c = new_client(&s.client_config, &s.tickets);
    c.start(NOW).expect("start");
    if scenario % SCENARIOS == 3 {
        c.send(b"GET /early HTTP/1.0\r\n\r\n").expect("0-RTT");
    }
    drive(&mut c, poke_client, s, Side::Server, scenario, prefix, &ops)
}

/// A fresh server of scenario `data[0]` gets the first `data[1]` records the client sent, then
/// the script: arbitrary client bytes at any point of a real handshake.
pub fn server(data: &[u8]) {
    server_outcome(data);
}

/// [`server`], returning the first error the server reported (if any).
pub fn server_outcome(data: &[u8]) -> Option<Error> {
    let (scenario, prefix, ops) = parse_script(data)?;
    let s = session(scenario);
    let mut srv = Server::new(
        s.server_config.clone(),
        Box::new(SeededRandom::from_seed(SERVER_SEED)),
    )
    .expect("server");
    drive(
        &mut srv,
        poke_server,
        s,
        Side::Client,
        scenario,
        prefix,
        &ops,
    )
}

/// Delivers the recorded prefix of `peer`'s records, then the ops, checking after each input
/// that an error carries the alert its type names and that a failed endpoint stays failed.
/// Returns the first error.
///
/// Scenario numbers from `SCENARIOS` to `2 * SCENARIOS - 1` (and so on, alternately) feed every
/// input through `open_in_place` instead of `receive`, as a caller owning its buffer would.
fn drive<R: Role>(
    ep: &mut Connection<R>,
    poke: fn(&mut Connection<R>),
    s: &Session,
    peer: Side,
    scenario: u8,
    prefix: u8,
    ops: &[Op],
) -> Option<Error> {
    let in_place = scenario / SCENARIOS % 2 == 1;
    let mut pending = Vec::new();
    let mut feed = |ep: &mut Connection<R>, bytes: &[u8]| {
        if in_place {
            open_all(ep, &mut pending, bytes)
        } else {
            // What arrives is read as it arrives, so back-pressure never holds input back.
            lab::demo::deliver(ep, bytes, NOW, &mut Vec::new(), &mut Vec::new())
        }
    };
    let me = match peer {
        Side::Client => Side::Server,
        Side::Server => Side::Client,
    };
    let recorded = s.records(peer);
    let prefix = usize::from(prefix) % (recorded.len() + 1);
    let mut events = Vec::new();
    // Next sequence number per epoch, as the recording had it.
    let mut next_seq: Vec<(Epoch, u64)> = Vec::new();
    let mut failed = false;
    let mut first_error = None;
    for r in &recorded[..prefix] {
        let wire = [&r.header[..], &ciphertext_of(s, peer, r)].concat();
        if let Some(seq) = r.seq {
            note(&mut next_seq, r.epoch, seq);
        }
        if feed(ep, &wire).is_err() {
            panic!("the recorded prefix must replay: record {r:?}");
        }
        ep.take_output();
        events.extend(ep.events());
    }
    for (cursor, op) in (prefix..).zip(ops) {
        let bytes = match op {
            Op::Raw(b) => b.clone(),
            Op::Plain { typ, payload } => {
                let mut w = vec![typ.to_repr(), 3, 3];
                w.extend_from_slice(&(payload.len() as u16).to_be_bytes());
                w.extend_from_slice(payload);
                w
            }
            Op::Replay { index } if !recorded.is_empty() => {
                let r = &recorded[index % recorded.len()];
                if let Some(seq) = r.seq {
                    note(&mut next_seq, r.epoch, seq);
                }
                [&r.header[..], &ciphertext_of(s, peer, r)].concat()
            }
            Op::Replay { .. } => Vec::new(),
            Op::Sealed {
                typ,
                padding,
                content,
            } => {
                // The epoch the recording had reached here (the first protected one at or
                // after the cursor, else the last one used).
                let epoch = recorded[cursor.min(recorded.len())..]
                    .iter()
                    .find(|r| r.seq.is_some())
                    .or_else(|| recorded.iter().rev().find(|r| r.seq.is_some()))
                    .map(|r| r.epoch);
                match epoch.and_then(|e| s.keys(peer, e).map(|k| (e, k))) {
                    Some((epoch, (key, iv))) => {
                        let seq = next_seq
                            .iter()
                            .find(|(e, _)| *e == epoch)
                            .map_or(0, |x| x.1);
                        note(&mut next_seq, epoch, seq);
                        seal(key, iv, seq, *typ, content, *padding)
                    }
                    None => Vec::new(),
                }
            }
        };
        let r = feed(ep, &bytes);
        ep.take_output();
        events.extend(ep.events());
        match r {
            Ok(()) => assert!(!failed, "an endpoint accepted input after failing"),
            Err(Error::Closed) => assert!(failed || closed(&events), "Closed without a failure"),
            Err(e) => {
                failed = true;
                check_error(me, &e, &events);
                first_error.get_or_insert(e);
            }
        }
    }
    poke(ep);
    ep.take_output();
    events.extend(ep.events());
    let _ = Ledger::from_events(&events).table();
    first_error
}

/// Appends `bytes` to the caller's buffer `pending` and opens every complete record in it in
/// place, keeping the partial one: what a reader owning its buffer does with each read. The
/// buffer never holds more than one record.
fn open_all<R: Role>(
    ep: &mut Connection<R>,
    pending: &mut Vec<u8>,
    bytes: &[u8],
) -> Result<(), Error> {
    pending.extend_from_slice(bytes);
    let mut start = 0;
    let result = loop {
        let opened = ep.open_in_place(&mut pending[start..], NOW);
        // Records taken the buffered way wait to be read: read them, or input stops.
        let _ = (ep.read_all_early(), ep.read_all());
        match opened {
            Ok(o) => {
                if let Some(d) = &o.data {
                    assert!(d.start < d.end && d.end <= o.consumed, "{o:?}");
                }
                start += o.consumed;
                if o.consumed == 0 {
                    break Ok(());
                }
            }
            Err(e) => break Err(e),
        }
    };
    pending.drain(..start);
    if result.is_ok() {
        assert!(pending.len() < MAX_RECORD_LEN, "a complete record was left");
    } else {
        pending.clear();
    }
    result
}

fn closed(events: &[Event]) -> bool {
    events.iter().any(|e| matches!(e, Event::Closed))
}

/// An error is reported with the one alert its type maps to, as the last alert `me` sent, and
/// the connection is closed.
fn check_error(me: Side, e: &Error, events: &[Event]) {
    let sent: Vec<AlertDescription> = events
        .iter()
        .filter_map(|ev| match ev {
            Event::Alert {
                direction,
                description,
                ..
            } if *direction == me.sending() => Some(*description),
            _ => None,
        })
        .collect();
    if let Some(want) = e.alert() {
        assert_eq!(sent.last(), Some(&want), "{e:?}: the alert sent");
        assert_eq!(sent.len(), 1, "{e:?}: one alert, got {sent:?}");
    } else {
        assert!(
            matches!(e, Error::AlertReceived(_)),
            "{e:?} is an error without an alert"
        );
        assert!(sent.is_empty(), "{e:?}: no alert answers an alert");
    }
    assert!(closed(events), "{e:?} without Closed");
}

/// Records that sequence number `seq` of `epoch` was used.
fn note(next_seq: &mut Vec<(Epoch, u64)>, epoch: Epoch, seq: u64) {
    match next_seq.iter_mut().find(|(e, _)| *e == epoch) {
        Some(x) => x.1 = x.1.max(seq + 1),
        None => next_seq.push((epoch, seq + 1)),
    }
}

/// The ciphertext (or plaintext fragment) of a recorded record: plaintext records carry their
/// content; protected ones are sealed again from their content, padding and sequence number.
fn ciphertext_of(s: &Session, sender: Side, r: &RecordEvent) -> Vec<u8> {
    match r.seq {
        None => r.content.clone(),
        Some(seq) => {
            let (key, iv) = s.keys(sender, r.epoch).expect("keys of a recorded epoch");
            seal(key, iv, seq, r.inner_type, &r.content, r.padding_len)[5..].to_vec()
        }
    }
}

fn seal(
    key: &AeadKey,
    iv: [u8; 12],
    seq: u64,
    typ: ContentType,
    content: &[u8],
    padding: usize,
) -> Vec<u8> {
    let mut inner = content.to_vec();
    inner.push(typ.to_repr());
    inner.resize(inner.len() + padding, 0);
    if inner.len() + 16 > 0xffff {
        return Vec::new();
    }
    let len = (inner.len() + 16) as u16;
    let header = [23, 3, 3, (len >> 8) as u8, len as u8];
    let mut nonce = iv;
    for (b, x) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
        *b ^= x;
    }
    let tag = key
        .seal_detached(&nonce, &header, &mut inner)
        .expect("seal");
    let mut out = header.to_vec();
    out.extend_from_slice(&inner);
    out.extend_from_slice(&tag);
    out
}

// =============================================================================================
// Seeds
// =============================================================================================

/// The seed corpus of every target: (target, name, input). RFC 8448's messages and records
/// (from `rfc8448_json`, the text of tests/vectors/rfc8448.json) and the recorded sessions.
pub fn seeds(rfc8448_json: &str) -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    let v = parse_json_vectors(rfc8448_json);
    for (section, msgs, recs) in &v {
        for (i, m) in msgs.iter().enumerate() {
            out.push(("messages", format!("rfc8448-s{section}-msg{i}"), m.clone()));
        }
        let stream: Vec<u8> = recs.iter().flatten().copied().collect();
        out.push((
            "records",
            format!("rfc8448-s{section}-stream"),
            [&[7u8][..], &stream].concat(),
        ));
        for (i, r) in recs.iter().enumerate() {
            out.push((
                "records",
                format!("rfc8448-s{section}-rec{i}"),
                [&[200u8][..], r].concat(),
            ));
        }
    }
    for (name, data) in ech_config_seeds() {
        out.push(("messages", name, data));
    }
    // RFC 8879: a CompressedCertificate (each algorithm, and an unknown one) and a
    // CertificateRequest offering compression, for the messages target.
    for (i, alg) in [1u16, 2, 3, 0x4001].into_iter().enumerate() {
        let cc = tls13lab::messages::CompressedCertificate {
            algorithm: alg.into(),
            uncompressed_length: 300,
            compressed_certificate_message: vec![0x78, 0x9c, 3, 0, 0, 0, 0, 1],
        };
        let m = HandshakeMessage::new(tls13lab::messages::HandshakePayload::CompressedCertificate(
            cc,
        ));
        out.push(("messages", format!("compressed-certificate-{i}"), m.encoded));
    }
    let cr = HandshakeMessage::new(tls13lab::messages::HandshakePayload::CertificateRequest(
        tls13lab::messages::CertificateRequest {
            context: vec![],
            extensions: vec![
                tls13lab::messages::Extension::SignatureAlgorithms(vec![0x0403.into()]),
                tls13lab::messages::Extension::CompressCertificate(vec![
                    2.into(),
                    3.into(),
                    1.into(),
                ]),
            ],
        },
    ));
    out.push((
        "messages",
        "certificate-request-compress".into(),
        cr.encoded,
    ));
    for n in 0..SCENARIOS {
        let s = session(n);
        for (target, peer) in [("client", Side::Server), ("server", Side::Client)] {
            let recorded = s.records(peer);
            for k in 0..=recorded.len() {
                // The rest of the real connection, as re-sealed content (mutations then change
                // the plaintext under the real keys) and as verbatim records.
                let sealed: Vec<Op> = recorded[k..]
                    .iter()
                    .map(|r| match r.seq {
                        Some(_) => Op::Sealed {
                            typ: r.inner_type,
                            padding: r.padding_len,
                            content: r.content.clone(),
                        },
                        None => Op::Plain {
                            typ: r.wire_type,
                            payload: r.content.clone(),
                        },
                    })
                    .collect();
                out.push((
                    target,
                    format!("s{n}-{k}-sealed"),
                    script(n, k as u8, &sealed),
                ));
                out.push((
                    target,
                    format!("s{n}-{k}-inplace-sealed"),
                    script(n + SCENARIOS, k as u8, &sealed),
                ));
                let replay: Vec<Op> = (k..recorded.len())
                    .map(|index| Op::Replay { index })
                    .collect();
                out.push((
                    target,
                    format!("s{n}-{k}-replay"),
                    script(n, k as u8, &replay),
                ));
            }
            let wire: Vec<u8> = recorded
                .iter()
                .flat_map(|r| [&r.header[..], &ciphertext_of(s, peer, r)].concat())
                .collect();
            out.push((
                target,
                format!("s{n}-inplace-raw"),
                script(n + SCENARIOS, 0, &[Op::Raw(wire.clone())]),
            ));
            out.push((target, format!("s{n}-raw"), script(n, 0, &[Op::Raw(wire)])));
            for r in recorded {
                if r.inner_type == ContentType::Handshake {
                    for m in split_messages(&r.content) {
                        out.push(("messages", format!("s{n}-{target}-type{}", m[0]), m));
                    }
                }
            }
        }
    }
    // Key shares: ours for every group (as a client's share) and a server's answer to it.
    for (i, g) in groups().iter().enumerate() {
        if let Ok(share) = KeyShareSecret::generate(*g, &mut SeededRandom::from_seed(2)) {
            out.push((
                "kx",
                format!("{g}-client"),
                [&[i as u8][..], share.public()].concat(),
            ));
            if let Ok((answer, _)) =
                server_respond(*g, share.public(), &mut SeededRandom::from_seed(3))
            {
                out.push((
                    "kx",
                    format!("{g}-server"),
                    [&[i as u8][..], &answer].concat(),
                ));
            }
        }
    }
    out
}

/// Whole messages of handshake content (a trailing partial one is dropped).
fn split_messages(mut content: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while content.len() >= 4 {
        let len = (usize::from(content[1]) << 16)
            | (usize::from(content[2]) << 8)
            | usize::from(content[3]);
        if content.len() < 4 + len {
            break;
        }
        let (m, rest) = content.split_at(4 + len);
        out.push(m.to_vec());
        content = rest;
    }
    out
}

/// One RFC 8448 section: its number, its handshake messages and its records as on the wire.
type VectorSection = (String, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Every section of the vectors' JSON.
fn parse_json_vectors(json: &str) -> Vec<VectorSection> {
    let v: serde_json::Value = serde_json::from_str(json).expect("rfc8448.json parses");
    let mut out = Vec::new();
    let Some(sections) = v["sections"].as_object() else {
        return out;
    };
    let hex = |x: &serde_json::Value| -> Option<Vec<u8>> {
        let h = x.as_str()?;
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
            .collect()
    };
    for (num, sec) in sections {
        let msgs = sec["handshake_messages"]
            .as_array()
            .map(|a| a.iter().filter_map(|m| hex(&m["hex"])).collect())
            .unwrap_or_default();
        let recs = sec["records"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| {
                        // Protected records are quoted whole; plaintext ones by payload.
                        if let Some(whole) = hex(&r["complete_record"]) {
                            return Some(whole);
                        }
                        let typ = match r["record_content_type"].as_str()? {
                            "handshake" => 22u8,
                            "alert" => 21,
                            "change_cipher_spec" => 20,
                            _ => 23,
                        };
                        let p = hex(&r["payload"])?;
                        let mut w = vec![typ, 3, 3];
                        w.extend_from_slice(&(p.len() as u16).to_be_bytes());
                        w.extend_from_slice(&p);
                        Some(w)
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push((num.clone(), msgs, recs));
    }
    out
}
