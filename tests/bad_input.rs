//! A scripted adversarial peer, built on our own `messages` module and on the keys the honest
//! peer reports in its events: real flights from an in-memory connection are mutated (and, under
//! protection, decrypted, changed and re-sealed) and fed to the other side.
//!
//! Each case asserts the exact error and the exact alert — the one RFC 8446 prescribes, cited per
//! case — and that the alert is the single, last record the endpoint queued, decoded (and
//! decrypted) from its output bytes. Sweeps and proptest-based fuzzing check that no input makes
//! an endpoint panic and that every error comes with exactly one alert.

mod util;

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config as PropConfig, TestRunner};
use tls13lab::crypto::aead::{suite_params, AeadAlg, AeadKey};
use tls13lab::crypto::ffdhe;
use tls13lab::crypto::kx::KxError;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigError;
use tls13lab::events::{Epoch, Event, Side};
use tls13lab::keyschedule::SecretName;
use tls13lab::messages::codec::DecodeError;
use tls13lab::messages::enums::{
    AlertDescription as A, AlertLevel, CipherSuite, ContentType, ExtensionType, HandshakeType,
    KeyUpdateRequest, NamedGroup, ProtocolVersion, SignatureScheme,
};
use tls13lab::messages::extensions::{Extension, KeyShareEntry, OfferedPsks, PskIdentity};
use tls13lab::messages::handshake::{
    handshake_header, CertificatePayload, CertificateRequest, ClientHello, DecodeContext,
    HandshakeMessage, HandshakePayload, NewSessionTicket, ServerHello, DOWNGRADE_TLS11,
    DOWNGRADE_TLS12, HRR_RANDOM,
};
use tls13lab::record::RecordError;
use tls13lab::{
    Client, ClientAuth, ClientConfig, ClientSide, Connection, Error, PeerMisbehaved, Role, Server,
    ServerConfig, ServerSide,
};

use util::{KeyKind, NOW};

// =============================================================================================
// The endpoint under test
// =============================================================================================

/// One record as it left an endpoint, opened with the endpoint's own keys.
#[derive(Clone, Debug)]
struct Rec {
    /// The bytes on the wire.
    wire: Vec<u8>,
    /// The real content type (TLSInnerPlaintext.type when protected).
    typ: ContentType,
    /// The plaintext content.
    content: Vec<u8>,
    epoch: Epoch,
}

fn wire(recs: &[Rec]) -> Vec<u8> {
    recs.iter().flat_map(|r| r.wire.clone()).collect()
}

/// Record protection keys for one direction and epoch, taken from an endpoint's derivations.
struct Keys {
    key: AeadKey,
    iv: [u8; 12],
}

impl Keys {
    fn nonce(&self, seq: u64) -> [u8; 12] {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    /// A TLSCiphertext whose TLSInnerPlaintext is exactly `inner` (§5.2).
    fn seal_inner(&self, seq: u64, mut inner: Vec<u8>) -> Vec<u8> {
        let len = inner.len() + self.key.tag_len();
        let header = [23, 3, 3, (len >> 8) as u8, len as u8];
        let tag = self
            .key
            .seal_detached(&self.nonce(seq), &header, &mut inner)
            .expect("seal");
        let mut out = header.to_vec();
        out.extend_from_slice(&inner);
        out.extend_from_slice(&tag);
        out
    }

    /// `content` of real type `typ` with `padding` zeros (§5.4).
    fn seal(&self, seq: u64, typ: ContentType, content: &[u8], padding: usize) -> Vec<u8> {
        let mut inner = content.to_vec();
        inner.push(typ.to_repr());
        inner.resize(inner.len() + padding, 0);
        self.seal_inner(seq, inner)
    }

    fn open(&self, seq: u64, rec: &[u8]) -> (ContentType, Vec<u8>) {
        let header = &rec[..5];
        let tag_at = rec.len() - self.key.tag_len();
        let mut body = rec[5..tag_at].to_vec();
        self.key
            .open_detached(&self.nonce(seq), header, &mut body, &rec[tag_at..])
            .expect("our own record opens with the keys the events report");
        let at = body.iter().rposition(|&b| b != 0).expect("content type");
        let typ = ContentType::from(body[at]);
        body.truncate(at);
        (typ, body)
    }
}

/// An endpoint under test, with every event it reported.
struct Ep<R: Role> {
    tls: Connection<R>,
    side: Side,
    events: Vec<Event>,
    /// 0-RTT data (a server) and application data it read.
    early: Vec<u8>,
    data: Vec<u8>,
    /// Sent record events already matched with output bytes.
    sent_seen: usize,
    /// Records forged under this endpoint's keys, per epoch (to continue its sequence numbers).
    forged: HashMap<String, u64>,
}

impl Ep<ClientSide> {
    /// The harness reads record keys from the endpoint's derivations: it asks for secrets.
    fn client(mut cfg: ClientConfig, seed: u64) -> Self {
        cfg.observe = tls13lab::Observe::ALL_WITH_SECRETS;
        let mut c = Client::new(Arc::new(cfg), Box::new(SeededRandom::from_seed(seed))).unwrap();
        c.start(NOW).unwrap();
        Ep::wrap(c)
    }
}

impl Ep<ServerSide> {
    fn server(mut cfg: ServerConfig, seed: u64) -> Self {
        cfg.observe = tls13lab::Observe::ALL_WITH_SECRETS;
        let s = Server::new(Arc::new(cfg), Box::new(SeededRandom::from_seed(seed))).unwrap();
        Ep::wrap(s)
    }
}

impl<R: Role> Ep<R> {
    fn wrap(tls: Connection<R>) -> Self {
        Ep {
            side: tls.side(),
            tls,
            events: Vec::new(),
            early: Vec::new(),
            data: Vec::new(),
            sent_seen: 0,
            forged: HashMap::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let r = lab::demo::deliver(&mut self.tls, bytes, NOW, &mut self.early, &mut self.data);
        self.events.extend(self.tls.events().collect::<Vec<_>>());
        r
    }

    /// 0-RTT data then application data, all it read.
    fn received(&self) -> Vec<u8> {
        [self.early.as_slice(), &self.data].concat()
    }

    /// Feeds `bytes` in pieces of `piece` bytes, stopping at the first error.
    fn feed_in_pieces(&mut self, bytes: &[u8], piece: usize) -> Result<(), Error> {
        for chunk in bytes.chunks(piece.max(1)) {
            self.feed(chunk)?;
        }
        Ok(())
    }

    fn sent_records(&self) -> Vec<&tls13lab::events::RecordEvent> {
        util::records(&self.events)
            .into_iter()
            .filter(|r| r.direction == self.side.sending())
            .collect()
    }

    /// Everything queued since the last call, split into records and opened: the wire bytes
    /// are parsed here, and protected records are decrypted with the keys the events report.
    fn output(&mut self) -> Vec<Rec> {
        let bytes = self.tls.take_output();
        self.events.extend(self.tls.events().collect::<Vec<_>>());
        let sent: Vec<_> = self.sent_records()[self.sent_seen..]
            .iter()
            .map(|r| (*r).clone())
            .collect();
        let mut recs = Vec::new();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            assert!(rest.len() >= 5, "partial record header in output");
            let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
            let (rec, tail) = rest.split_at(5 + len);
            rest = tail;
            let ev = sent
                .get(recs.len())
                .unwrap_or_else(|| panic!("a record without an event: {rec:?}"));
            assert_eq!(&ev.header[..], &rec[..5]);
            let (typ, content) = match ev.seq {
                Some(seq) => self.keys(self.side, ev.epoch).open(seq, rec),
                None => (ContentType::from(rec[0]), rec[5..].to_vec()),
            };
            assert_eq!((typ, &content), (ev.inner_type, &ev.content));
            recs.push(Rec {
                wire: rec.to_vec(),
                typ,
                content,
                epoch: ev.epoch,
            });
        }
        assert_eq!(recs.len(), sent.len(), "every record event was output");
        self.sent_seen += sent.len();
        recs
    }

    /// Everything queued since the last call, unparsed: for a client whose 0-RTT records cannot
    /// be opened yet (the suite is known from its ServerHello).
    fn raw_output(&mut self) -> Vec<u8> {
        let bytes = self.tls.take_output();
        self.events.extend(self.tls.events().collect::<Vec<_>>());
        self.sent_seen = self.sent_records().len();
        bytes
    }

    /// The AEAD of the negotiated suite (from the ServerHello this endpoint sent or received).
    fn aead(&self) -> AeadAlg {
        self.events
            .iter()
            .find_map(|e| match e {
                Event::Handshake(h) if h.typ == HandshakeType::ServerHello => {
                    match decode(&h.bytes) {
                        HandshakePayload::ServerHello(sh) if sh.random != HRR_RANDOM => {
                            suite_params(sh.cipher_suite).map(|s| s.aead)
                        }
                        _ => None,
                    }
                }
                _ => None,
            })
            .expect("a ServerHello")
    }

    /// The keys `sender` protects `epoch` with, as this endpoint derived them.
    fn keys(&self, sender: Side, epoch: Epoch) -> Keys {
        let secret = match (sender, epoch) {
            (Side::Client, Epoch::Early) => SecretName::ClientEarlyTrafficSecret,
            (Side::Client, Epoch::Handshake) => SecretName::ClientHandshakeTrafficSecret,
            (Side::Server, Epoch::Handshake) => SecretName::ServerHandshakeTrafficSecret,
            (Side::Client, Epoch::Application(n)) => SecretName::ClientApplicationTrafficSecret(n),
            (Side::Server, Epoch::Application(n)) => SecretName::ServerApplicationTrafficSecret(n),
            other => panic!("no keys for {other:?}"),
        };
        let find = |name: SecretName| -> Vec<u8> {
            self.events
                .iter()
                .rev()
                .find_map(|e| match e {
                    Event::Derivation(d) if d.name == name && d.parent == Some(secret) => {
                        Some(d.output.clone())
                    }
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no {name:?} of {secret:?} in the events"))
        };
        Keys {
            key: AeadKey::new(self.aead(), &find(SecretName::TrafficKey)).unwrap(),
            iv: find(SecretName::TrafficIv).try_into().unwrap(),
        }
    }

    /// A record protected as this endpoint would protect its next one in `epoch`.
    fn forge(&mut self, epoch: Epoch, typ: ContentType, content: &[u8], padding: usize) -> Vec<u8> {
        let inner = {
            let mut v = content.to_vec();
            v.push(typ.to_repr());
            v.resize(v.len() + padding, 0);
            v
        };
        self.forge_inner(epoch, inner)
    }

    fn forge_inner(&mut self, epoch: Epoch, inner: Vec<u8>) -> Vec<u8> {
        let sent = self
            .sent_records()
            .iter()
            .filter(|r| r.epoch == epoch && r.seq.is_some())
            .count() as u64;
        let n = self.forged.entry(format!("{epoch:?}")).or_insert(0);
        let seq = sent + *n;
        *n += 1;
        self.keys(self.side, epoch).seal_inner(seq, inner)
    }

    fn sent_alerts(&self) -> Vec<(AlertLevel, A)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Alert {
                    direction,
                    level,
                    description,
                } if *direction == self.side.sending() => Some((*level, *description)),
                _ => None,
            })
            .collect()
    }

    /// Feeds `input`, which must be rejected with alert `want`; checks the alert on the wire.
    #[track_caller]
    fn rejects(&mut self, input: &[u8], want: A) -> Error {
        let e = self.feed(input).expect_err("the input must be rejected");
        assert_eq!(e.alert(), Some(want), "{e:?} maps to the wrong alert");
        self.check_failed(&e);
        e
    }

    /// After an error: exactly one alert record was queued, it is the last record, it is the
    /// fatal alert the error calls for, and the connection is dead.
    #[track_caller]
    fn check_failed(&mut self, e: &Error) {
        let recs = self.output();
        let alerts: Vec<&Rec> = recs
            .iter()
            .filter(|r| r.typ == ContentType::Alert)
            .collect();
        if let Error::AlertReceived(_) = e {
            assert!(alerts.is_empty(), "no alert answers an alert: {recs:?}");
            assert!(self.sent_alerts().is_empty());
        } else {
            let want = e.alert().unwrap_or_else(|| panic!("{e:?} has no alert"));
            assert_eq!(alerts.len(), 1, "{e:?}: one alert record, got {recs:?}");
            assert_eq!(alerts[0].content, [2, want.to_repr()], "{e:?}");
            assert_eq!(
                recs.last().unwrap().typ,
                ContentType::Alert,
                "the alert is last"
            );
            assert_eq!(self.sent_alerts(), vec![(AlertLevel::Fatal, want)], "{e:?}");
        }
        assert!(
            self.events.iter().any(|e| matches!(e, Event::Closed)),
            "Closed is reported"
        );
        assert_eq!(self.feed(&[23, 3, 3, 0, 1, 0]), Err(Error::Closed));
        assert!(self.output().is_empty(), "nothing more after failing");
    }

    /// After any input: an error comes with exactly one alert, success with none.
    #[track_caller]
    fn check_outcome(&mut self, r: Result<(), Error>) {
        match r {
            Ok(()) => {
                let recs = self.output();
                assert!(
                    recs.iter().all(|r| r.typ != ContentType::Alert),
                    "an alert without an error: {recs:?}"
                );
            }
            Err(e) => self.check_failed(&e),
        }
    }
}

// =============================================================================================
// Wire helpers
// =============================================================================================

fn record(typ: u8, version: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![typ];
    v.extend_from_slice(&version.to_be_bytes());
    v.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

fn hs_record(payload: &[u8]) -> Vec<u8> {
    record(22, 0x0303, payload)
}

fn encode(p: HandshakePayload) -> Vec<u8> {
    HandshakeMessage::new(p).encoded
}

fn decode(bytes: &[u8]) -> HandshakePayload {
    HandshakeMessage::decode(bytes, DecodeContext { hash_len: 0 })
        .expect("decodes")
        .payload
}

/// A handshake message with its header length set to its body.
fn message(typ: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![typ];
    m.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    m.extend_from_slice(body);
    m
}

/// Splits handshake content into whole messages.
fn split_messages(mut content: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (_, len) = handshake_header(content).expect("header");
        let (m, rest) = content.split_at(4 + len);
        out.push(m.to_vec());
        content = rest;
    }
    out
}

/// Replaces the extension of `e`'s type (or appends it).
fn set_ext(exts: &mut Vec<Extension>, e: Extension) {
    match exts.iter().position(|x| x.typ() == e.typ()) {
        Some(i) => exts[i] = e,
        None => exts.push(e),
    }
}

fn remove_ext(exts: &mut Vec<Extension>, t: ExtensionType) {
    exts.retain(|e| e.typ() != t);
}

fn peer(e: PeerMisbehaved) -> Error {
    Error::Peer(e)
}

// =============================================================================================
// Configurations and scenarios
// =============================================================================================

fn server_config() -> ServerConfig {
    util::server_config(KeyKind::P256).0
}

fn client_config() -> ClientConfig {
    util::client_config(util::certified(KeyKind::P256).1)
}

const CLIENT_SEED: u64 = 1;
const SERVER_SEED: u64 = 2;

/// A client configured with `cfg` that has just sent its ClientHello, and that ClientHello.
fn client_hello_of(cfg: ClientConfig) -> ClientHello {
    let mut c = Ep::client(cfg, CLIENT_SEED);
    let recs = c.output();
    match decode(&recs[0].content) {
        HandshakePayload::ClientHello(ch) => ch,
        other => panic!("{other:?}"),
    }
}

fn client_hello() -> ClientHello {
    client_hello_of(client_config())
}

fn ch_wire(ch: &ClientHello) -> Vec<u8> {
    record(
        22,
        0x0301,
        &encode(HandshakePayload::ClientHello(ch.clone())),
    )
}

fn fresh_server() -> Ep<ServerSide> {
    Ep::server(server_config(), SERVER_SEED)
}

/// A fresh server must reject `ch` with `want`.
#[track_caller]
fn server_rejects(ch: &ClientHello, want: A) -> Error {
    fresh_server().rejects(&ch_wire(ch), want)
}

/// A client that sent its ClientHello, and the real server's first flight in answer.
struct ToClient {
    client: Ep<ClientSide>,
    server: Ep<ServerSide>,
    flight: Vec<Rec>,
}

impl ToClient {
    fn new(ccfg: ClientConfig, scfg: ServerConfig) -> ToClient {
        let mut client = Ep::client(ccfg, CLIENT_SEED);
        let mut server = Ep::server(scfg, SERVER_SEED);
        server
            .feed(&wire(&client.output()))
            .expect("server takes the ClientHello");
        let flight = server.output();
        ToClient {
            client,
            server,
            flight,
        }
    }

    fn default() -> ToClient {
        ToClient::new(client_config(), server_config())
    }

    /// The ServerHello (or HelloRetryRequest) message.
    fn server_hello(&self) -> ServerHello {
        match decode(&self.flight[0].content) {
            HandshakePayload::ServerHello(sh) => sh,
            other => panic!("{other:?}"),
        }
    }

    /// The messages the server protected with its handshake keys, in order.
    fn encrypted(&self) -> Vec<Vec<u8>> {
        let content: Vec<u8> = self
            .flight
            .iter()
            .filter(|r| r.epoch == Epoch::Handshake && r.typ == ContentType::Handshake)
            .flat_map(|r| r.content.clone())
            .collect();
        split_messages(&content)
    }

    fn server_keys(&self) -> Keys {
        self.server.keys(Side::Server, Epoch::Handshake)
    }

    /// `sh` in a plaintext record, then `msgs` sealed into one record from sequence 0.
    fn wire_with(&self, sh: &ServerHello, msgs: &[Vec<u8>]) -> Vec<u8> {
        let mut w = hs_record(&encode(HandshakePayload::ServerHello(sh.clone())));
        if !msgs.is_empty() {
            w.extend(
                self.server_keys()
                    .seal(0, ContentType::Handshake, &msgs.concat(), 0),
            );
        }
        w
    }

    /// The real ServerHello, then `msgs` (the encrypted messages, possibly changed).
    fn wire_msgs(&self, msgs: &[Vec<u8>]) -> Vec<u8> {
        self.wire_with(&self.server_hello(), msgs)
    }

    /// The client must reject `input` with `want`.
    #[track_caller]
    fn rejects(mut self, input: &[u8], want: A) -> Error {
        self.client.rejects(input, want)
    }
}

/// The server's ServerHello changed by `f`, alone in its record.
#[track_caller]
fn client_rejects_server_hello(f: impl FnOnce(&mut ServerHello), want: A) -> Error {
    let t = ToClient::default();
    let mut sh = t.server_hello();
    f(&mut sh);
    let w = hs_record(&encode(HandshakePayload::ServerHello(sh)));
    t.rejects(&w, want)
}

/// The encrypted messages changed by `f`.
#[track_caller]
fn client_rejects_messages(f: impl FnOnce(&mut Vec<Vec<u8>>), want: A) -> Error {
    let t = ToClient::default();
    let mut msgs = t.encrypted();
    f(&mut msgs);
    let w = t.wire_msgs(&msgs);
    t.rejects(&w, want)
}

/// Index of the first message of type `t`.
fn index_of(msgs: &[Vec<u8>], t: HandshakeType) -> usize {
    msgs.iter()
        .position(|m| HandshakeType::from(m[0]) == t)
        .unwrap_or_else(|| panic!("no {t}"))
}

/// Client and server after a HelloRetryRequest: the client holds its first ClientHello's
/// state, `hrr` is the server's record (not yet delivered).
struct Retry {
    client: Ep<ClientSide>,
    server: Ep<ServerSide>,
    hrr: Vec<u8>,
}

fn retry_configs() -> (ClientConfig, ServerConfig) {
    let mut c = client_config();
    c.key_shares = vec![NamedGroup::X25519];
    let mut s = server_config();
    s.groups = vec![NamedGroup::secp256r1];
    (c, s)
}

fn retry_with(c: ClientConfig, s: ServerConfig) -> Retry {
    let mut client = Ep::client(c, CLIENT_SEED);
    let mut server = Ep::server(s, SERVER_SEED);
    server.feed(&wire(&client.output())).unwrap();
    let hrr = wire(&server.output());
    Retry {
        client,
        server,
        hrr,
    }
}

fn retry() -> Retry {
    let (c, s) = retry_configs();
    retry_with(c, s)
}

/// The ServerHello (or HelloRetryRequest) alone in the record `wire`.
fn sh_of(wire: &[u8]) -> ServerHello {
    match decode(&wire[5..]) {
        HandshakePayload::ServerHello(sh) => sh,
        other => panic!("{other:?}"),
    }
}

/// A ServerHello (or HelloRetryRequest) alone in a plaintext record.
fn sh_record(sh: &ServerHello) -> Vec<u8> {
    hs_record(&encode(HandshakePayload::ServerHello(sh.clone())))
}

/// A connected pair with nothing in flight.
struct Connected {
    client: Ep<ClientSide>,
    server: Ep<ServerSide>,
}

fn connected_with(c: ClientConfig, s: ServerConfig) -> Connected {
    let mut client = Ep::client(c, CLIENT_SEED);
    let mut server = Ep::server(s, SERVER_SEED);
    for _ in 0..8 {
        let w = wire(&client.output());
        if !w.is_empty() {
            server.feed(&w).unwrap();
        }
        let w = wire(&server.output());
        if !w.is_empty() {
            client.feed(&w).unwrap();
        }
    }
    assert!(client.tls.is_connected() && server.tls.is_connected());
    Connected { client, server }
}

fn connected() -> Connected {
    connected_with(client_config(), server_config())
}

/// The client's second flight (its Finished) as produced, before the server sees it.
struct ToServer {
    client: Ep<ClientSide>,
    server: Ep<ServerSide>,
    /// The client's records: [CCS] [Certificate CertificateVerify] Finished, opened.
    flight: Vec<Rec>,
}

fn to_server_with(c: ClientConfig, s: ServerConfig) -> ToServer {
    let mut t = ToClient::new(c, s);
    t.client.feed(&wire(&t.flight)).unwrap();
    let flight = t.client.output();
    ToServer {
        client: t.client,
        server: t.server,
        flight,
    }
}

impl ToServer {
    fn messages(&self) -> Vec<Vec<u8>> {
        let content: Vec<u8> = self
            .flight
            .iter()
            .filter(|r| r.epoch == Epoch::Handshake)
            .flat_map(|r| r.content.clone())
            .collect();
        split_messages(&content)
    }

    /// `msgs` sealed under the client's handshake keys, in one record.
    fn seal(&self, msgs: &[Vec<u8>]) -> Vec<u8> {
        self.client.keys(Side::Client, Epoch::Handshake).seal(
            0,
            ContentType::Handshake,
            &msgs.concat(),
            0,
        )
    }
}

// =============================================================================================
// Server: the ClientHello
// =============================================================================================

#[test]
fn client_hello_truncated_at_every_length_with_lengths_fixed() {
    // §4: the message no longer parses. §6.2 decode_error: "a message could not be decoded
    // because some field was out of the specified range or the length of the message was
    // incorrect".
    let ch = client_hello();
    let full = encode(HandshakePayload::ClientHello(ch.clone()));
    let body = &full[4..];
    // Cut just before the extension block, it is a TLS 1.2 ClientHello without extensions:
    // well formed, and refused for its version (RFC 5246 §7.4.1.2; §4.2.1 protocol_version).
    let no_extensions = body.len() - encode_exts_len(&ch.extensions) - 2;
    for len in 0..body.len() {
        let w = record(22, 0x0301, &message(1, &body[..len]));
        if len == no_extensions {
            let e = fresh_server().rejects(&w, A::ProtocolVersion);
            assert_eq!(e, peer(PeerMisbehaved::UnsupportedVersion));
            continue;
        }
        let e = fresh_server().rejects(&w, A::DecodeError);
        assert!(matches!(e, Error::Decode(_)), "{len}: {e:?}");
    }
}

#[test]
fn client_hello_truncated_without_fixing_lengths_waits_for_more() {
    // A record or message that is not complete yet is not an error (§5.1: messages may span
    // records): the server waits, and completes the handshake when the rest arrives.
    let full = ch_wire(&client_hello());
    for cut in [1, 4, 5, 6, 9, 40, full.len() - 1] {
        // The record itself cut short.
        let mut s = fresh_server();
        s.feed(&full[..cut]).unwrap();
        assert!(s.output().is_empty(), "{cut}");
        s.feed(&full[cut..]).unwrap();
        let recs = s.output();
        assert!(matches!(
            decode(&recs[0].content),
            HandshakePayload::ServerHello(_)
        ));
        // The record length fixed, the handshake message left incomplete: the rest follows in
        // a second record.
        if cut > 5 {
            let mut s = fresh_server();
            s.feed(&record(22, 0x0301, &full[5..cut])).unwrap();
            assert!(s.output().is_empty(), "{cut}");
            s.feed(&record(22, 0x0301, &full[cut..])).unwrap();
            let recs = s.output();
            assert!(matches!(
                decode(&recs[0].content),
                HandshakePayload::ServerHello(_)
            ));
        }
    }
}

#[test]
fn client_hello_extended_is_decode_error() {
    let full = encode(HandshakePayload::ClientHello(client_hello()));
    // Trailing bytes after the extensions (§4.1.2 ends with the extensions vector).
    for extra in [&[0u8][..], &[0, 0], &[0xff; 7]] {
        let mut body = full[4..].to_vec();
        body.extend_from_slice(extra);
        let e = fresh_server().rejects(&record(22, 0x0301, &message(1, &body)), A::DecodeError);
        assert!(
            matches!(e, Error::Decode(DecodeError::Trailing { .. })),
            "{e:?}"
        );
    }
    // Garbage inside the extensions block, its length fixed: a partial extension.
    let ch = client_hello();
    let mut enc = encode(HandshakePayload::ClientHello(ch.clone()));
    let exts_len_at = enc.len() - encode_exts_len(&ch.extensions) - 2;
    let n = u16::from_be_bytes([enc[exts_len_at], enc[exts_len_at + 1]]) + 3;
    enc[exts_len_at..exts_len_at + 2].copy_from_slice(&n.to_be_bytes());
    enc.extend_from_slice(&[0x12, 0x34, 0x00]);
    let e = fresh_server().rejects(&record(22, 0x0301, &message(1, &enc[4..])), A::DecodeError);
    assert!(matches!(e, Error::Decode(_)), "{e:?}");
}

/// Encoded length of an extension list (without its 2-byte prefix).
fn encode_exts_len(exts: &[Extension]) -> usize {
    exts.iter()
        .map(|e| {
            let mut w = tls13lab::messages::Writer::new();
            e.encode(&mut w);
            w.len()
        })
        .sum()
}

#[test]
fn client_hello_inner_lengths_wrong_are_decode_error() {
    // Every length prefix inside the ClientHello, made one too long or one too short, with the
    // outer lengths left consistent: §6.2 decode_error.
    let ch = client_hello();
    let enc = encode(HandshakePayload::ClientHello(ch.clone()));
    let sid_at = 4 + 2 + 32;
    let suites_at = sid_at + 1 + ch.legacy_session_id.len();
    let comp_at = suites_at + 2 + 2 * ch.cipher_suites.len();
    let exts_at = comp_at + 1 + ch.legacy_compression_methods.len();
    let first_ext_len_at = exts_at + 2 + 2;
    for (at, width) in [
        (sid_at, 1),
        (suites_at, 2),
        (comp_at, 1),
        (exts_at, 2),
        (first_ext_len_at, 2),
    ] {
        for delta in [1i32, -1] {
            let mut m = enc.clone();
            let v = m[at..at + width]
                .iter()
                .fold(0i32, |a, &b| (a << 8) | i32::from(b));
            let nv = v + delta;
            if nv < 0 {
                continue;
            }
            for i in 0..width {
                m[at + i] = (nv >> (8 * (width - 1 - i))) as u8;
            }
            let e = fresh_server().rejects(&record(22, 0x0301, &m), A::DecodeError);
            assert!(matches!(e, Error::Decode(_)), "{at} {delta}: {e:?}");
        }
    }
}

#[test]
fn client_hello_vector_bounds() {
    // legacy_session_id<0..32> (§4.1.2): 33 bytes is out of range.
    let mut ch = client_hello();
    ch.legacy_session_id = vec![7; 33];
    let e = server_rejects(&ch, A::DecodeError);
    assert!(
        matches!(e, Error::Decode(DecodeError::TooLarge { .. })),
        "{e:?}"
    );
    // cipher_suites<2..2^16-2>: empty.
    let mut ch = client_hello();
    ch.cipher_suites.clear();
    assert!(matches!(
        server_rejects(&ch, A::DecodeError),
        Error::Decode(_)
    ));
}

#[test]
fn client_hello_duplicate_extension_is_illegal_parameter() {
    // §4.2: "There MUST NOT be more than one extension of the same type in a given extension
    // block." The message is well-formed but inconsistent: illegal_parameter (§6.2).
    let mut ch = client_hello();
    let dup = ch
        .extensions
        .iter()
        .find(|e| e.typ() == ExtensionType::SupportedGroups)
        .unwrap()
        .clone();
    ch.extensions.push(dup);
    let e = server_rejects(&ch, A::IllegalParameter);
    assert_eq!(
        e,
        Error::Decode(DecodeError::DuplicateExtension(
            ExtensionType::SupportedGroups
        ))
    );
    // Also for a type we do not model.
    let mut ch = client_hello();
    for _ in 0..2 {
        ch.extensions.insert(
            0,
            Extension::Unknown {
                typ: ExtensionType::Unknown(0x7a7a),
                body: vec![],
            },
        );
    }
    server_rejects(&ch, A::IllegalParameter);
}

fn psk_extension() -> Extension {
    Extension::PreSharedKeyClient(OfferedPsks {
        identities: vec![PskIdentity {
            identity: b"ticket".to_vec(),
            obfuscated_ticket_age: 1,
        }],
        binders: vec![vec![0x11; 32]],
    })
}

#[test]
fn pre_shared_key_not_last_is_illegal_parameter() {
    // §4.2.11: "servers MUST check that it is the last extension and otherwise fail the
    // handshake with an "illegal_parameter" alert."
    let mut ch = client_hello();
    ch.extensions.insert(1, psk_extension());
    let e = server_rejects(&ch, A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::PskNotLast));
}

fn set_shares(ch: &mut ClientHello, shares: Vec<KeyShareEntry>) {
    set_ext(&mut ch.extensions, Extension::KeyShareClient(shares));
}

fn x25519_share() -> KeyShareEntry {
    let ch = client_hello();
    match ch.find(ExtensionType::KeyShare) {
        Some(Extension::KeyShareClient(s)) => s[0].clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn key_share_for_a_group_not_offered_is_illegal_parameter() {
    // §4.2.8: "Clients MUST NOT offer any KeyShareEntry values for groups not listed in the
    // client's "supported_groups" extension. Servers MAY check for violations of these rules
    // and abort the handshake with an "illegal_parameter" alert if one is violated."
    let mut ch = client_hello();
    set_ext(
        &mut ch.extensions,
        Extension::SupportedGroups(vec![NamedGroup::secp256r1]),
    );
    let e = server_rejects(&ch, A::IllegalParameter);
    assert_eq!(
        e,
        peer(PeerMisbehaved::IllegalExtension(
            "key_share group not offered"
        ))
    );
}

#[test]
fn duplicate_key_share_groups_are_illegal_parameter() {
    // §4.2.8: "Clients MUST NOT offer multiple KeyShareEntry values for the same group."
    let mut ch = client_hello();
    let s = x25519_share();
    set_shares(&mut ch, vec![s.clone(), s]);
    let e = server_rejects(&ch, A::IllegalParameter);
    assert_eq!(
        e,
        peer(PeerMisbehaved::IllegalExtension(
            "duplicate key_share group"
        ))
    );
}

#[test]
fn empty_key_shares_get_a_hello_retry_request() {
    // §4.2.8: "client_shares ... MAY be empty if the client is requesting a HelloRetryRequest".
    let mut ch = client_hello();
    set_shares(&mut ch, vec![]);
    let mut s = fresh_server();
    s.feed(&ch_wire(&ch)).unwrap();
    let recs = s.output();
    assert_eq!(recs.len(), 1);
    let hrr = sh_of(&recs[0].wire);
    assert_eq!(hrr.random, HRR_RANDOM);
    // The server's first preference among the client's groups (ServerConfig's default order).
    assert!(hrr
        .extensions
        .contains(&Extension::KeyShareHrr(NamedGroup::X25519MLKEM768)));
    // §4.2.8: after a HelloRetryRequest the client sends a single share of the selected group;
    // still sending none breaks that rule: illegal_parameter.
    let e = s.rejects(&ch_wire(&ch), A::IllegalParameter);
    assert_eq!(
        e,
        peer(PeerMisbehaved::SecondClientHelloMismatch("key_share"))
    );
}

#[test]
fn empty_key_exchange_in_a_key_share_entry_is_decode_error() {
    // §4.2.8: `opaque key_exchange<1..2^16-1>`: an empty one is out of the vector's range, so
    // the ClientHello does not decode (§6.2 decode_error: "some field was out of the specified
    // range"), as OpenSSL answers it — for a group we implement and for one we do not.
    for group in [NamedGroup::X25519, NamedGroup::Unknown(0x0a0a)] {
        let mut ch = client_hello();
        let mut shares = vec![KeyShareEntry {
            group,
            key_exchange: vec![],
        }];
        if group != NamedGroup::X25519 {
            shares.push(x25519_share());
        }
        set_shares(&mut ch, shares);
        let e = server_rejects(&ch, A::DecodeError);
        assert!(matches!(e, Error::Decode(_)), "{group}: {e:?}");
    }
}

#[test]
fn invalid_x25519_shares_are_illegal_parameter() {
    // §4.2.8.2 (peers MUST validate each other's public key) and §7.4.2 (an all-zero X25519
    // shared secret MUST be rejected): the share is an illegal parameter.
    let mut cases: Vec<Vec<u8>> = vec![vec![9; 31], vec![9; 33], vec![9]];
    cases.push(vec![0; 32]); // the zero point: small order
    let mut one = vec![0; 32];
    one[0] = 1; // u = 1: order 4
    cases.push(one);
    for key_exchange in cases {
        let mut ch = client_hello();
        set_shares(
            &mut ch,
            vec![KeyShareEntry {
                group: NamedGroup::X25519,
                key_exchange: key_exchange.clone(),
            }],
        );
        let e = server_rejects(&ch, A::IllegalParameter);
        assert!(
            matches!(e, Error::KeyExchange(_)),
            "{key_exchange:?}: {e:?}"
        );
    }
}

#[test]
fn invalid_p256_shares_are_illegal_parameter() {
    // §4.2.8.2: "peers MUST validate each other's public key Y by ensuring that the point is a
    // valid point on the elliptic curve", in the uncompressed form only.
    let mut cfg = client_config();
    cfg.key_shares = vec![NamedGroup::secp256r1];
    let base = client_hello_of(cfg);
    let real = match base.find(ExtensionType::KeyShare) {
        Some(Extension::KeyShareClient(s)) => s[0].key_exchange.clone(),
        other => panic!("{other:?}"),
    };
    let mut off_curve = real.clone();
    off_curve[64] ^= 1;
    let mut compressed = vec![2 + (real[64] & 1)];
    compressed.extend_from_slice(&real[1..33]);
    let mut hybrid_prefix = real.clone();
    hybrid_prefix[0] = 0x06;
    for key_exchange in [
        off_curve,
        compressed,
        hybrid_prefix,
        real[..64].to_vec(),
        vec![0],
        vec![4; 65],
    ] {
        let mut ch = base.clone();
        set_shares(
            &mut ch,
            vec![KeyShareEntry {
                group: NamedGroup::secp256r1,
                key_exchange: key_exchange.clone(),
            }],
        );
        let e = server_rejects(&ch, A::IllegalParameter);
        assert!(
            matches!(e, Error::KeyExchange(_)),
            "{key_exchange:?}: {e:?}"
        );
    }
    // The unmodified share is fine.
    let mut s = fresh_server();
    s.feed(&ch_wire(&base)).unwrap();
}

/// A client offering only `g` (one share) and a server accepting it.
fn configs_for(g: NamedGroup) -> (ClientConfig, ServerConfig) {
    let mut c = client_config();
    c.groups = vec![g];
    c.key_shares = vec![g];
    let mut s = server_config();
    s.groups = vec![g];
    (c, s)
}

type KxCheck = fn(&KxError) -> bool;

/// Invalid shares of the groups past x25519/P-256 (secp521r1, x448, ffdhe*), each with the
/// KxError it must give: §4.2.8.2 for the curves, §7.4.2 / RFC 7748 §6.2 for an all-zero X448
/// secret, §4.2.8.1 and RFC 7919 §5.1 for FFDHE (left-padded to |p|, 1 < Y < p-1).
fn bad_shares(g: NamedGroup, real: &[u8]) -> Vec<(Vec<u8>, KxCheck)> {
    let invalid: KxCheck = |e| matches!(e, KxError::InvalidPeerShare(_));
    let zero: KxCheck = |e| *e == KxError::ZeroSharedSecret;
    let mut v = vec![
        (real[..real.len() - 1].to_vec(), invalid),
        ([real, &[0]].concat(), invalid),
    ];
    if g == NamedGroup::secp521r1 {
        let mut off_curve = real.to_vec();
        off_curve[132] ^= 1;
        let mut compressed = vec![2 + (real[132] & 1)];
        compressed.extend_from_slice(&real[1..67]);
        let mut prefix = real.to_vec();
        prefix[0] = 0x06;
        v.extend([
            (off_curve, invalid),
            (compressed, invalid),
            (prefix, invalid),
            (vec![4; 133], invalid),
        ]);
    } else if g == NamedGroup::X448 {
        let mut one = vec![0; 56];
        one[0] = 1;
        v.extend([(vec![0; 56], zero), (one, zero)]);
    } else {
        let f = ffdhe::Group::of(g).unwrap();
        let p = f.prime();
        // p is odd and ends in 64 one bits: p - 1 only changes the last byte.
        let mut p_minus_1 = p.clone();
        *p_minus_1.last_mut().unwrap() -= 1;
        let mut p_plus_1 = p.clone();
        for b in p_plus_1.iter_mut().rev() {
            let (x, carry) = b.overflowing_add(1);
            *b = x;
            if !carry {
                break;
            }
        }
        let mut one = vec![0; f.p_len()];
        one[f.p_len() - 1] = 1;
        v.extend([
            (vec![0; f.p_len()], invalid),
            (one, invalid),
            (p_minus_1, invalid),
            (p, invalid),
            (p_plus_1, invalid),
        ]);
    }
    v
}

fn server_share(sh: &ServerHello) -> Vec<u8> {
    sh.extensions
        .iter()
        .find_map(|e| match e {
            Extension::KeyShareServer(k) => Some(k.key_exchange.clone()),
            _ => None,
        })
        .expect("a server key share")
}

#[test]
fn invalid_secp521r1_x448_and_ffdhe_shares_are_illegal_parameter() {
    for g in [
        NamedGroup::secp521r1,
        NamedGroup::X448,
        NamedGroup::ffdhe2048,
        NamedGroup::ffdhe3072,
        NamedGroup::ffdhe4096,
        NamedGroup::ffdhe6144,
        NamedGroup::ffdhe8192,
    ] {
        let (c, s) = configs_for(g);
        let base = client_hello_of(c.clone());
        let real = match base.find(ExtensionType::KeyShare) {
            Some(Extension::KeyShareClient(s)) => s[0].key_exchange.clone(),
            other => panic!("{other:?}"),
        };
        // The server refuses a bad ClientHello share, and takes the real one.
        for (key_exchange, want) in bad_shares(g, &real) {
            let mut ch = base.clone();
            set_shares(
                &mut ch,
                vec![KeyShareEntry {
                    group: g,
                    key_exchange: key_exchange.clone(),
                }],
            );
            let e = Ep::server(s.clone(), SERVER_SEED).rejects(&ch_wire(&ch), A::IllegalParameter);
            match &e {
                Error::KeyExchange(k) => assert!(want(k), "{g} {}: {k:?}", key_exchange.len()),
                other => panic!("{g}: {other:?}"),
            }
        }
        Ep::server(s.clone(), SERVER_SEED)
            .feed(&ch_wire(&base))
            .unwrap();
        // The client refuses the same kinds of values in the ServerHello's share.
        let server_real = server_share(&ToClient::new(c.clone(), s.clone()).server_hello());
        for (key_exchange, want) in bad_shares(g, &server_real) {
            let t = ToClient::new(c.clone(), s.clone());
            let mut sh = t.server_hello();
            set_ext(
                &mut sh.extensions,
                Extension::KeyShareServer(KeyShareEntry {
                    group: g,
                    key_exchange: key_exchange.clone(),
                }),
            );
            let w = hs_record(&encode(HandshakePayload::ServerHello(sh)));
            match &t.rejects(&w, A::IllegalParameter) {
                Error::KeyExchange(k) => assert!(want(k), "{g} {}: {k:?}", key_exchange.len()),
                other => panic!("{g}: {other:?}"),
            }
        }
    }
}

#[test]
fn legacy_version_above_tls12_is_illegal_parameter() {
    // §4.1.2: "legacy_version ... MUST be set to 0x0303". A higher value with TLS 1.3 in
    // supported_versions is inconsistent: illegal_parameter (§6.2).
    for v in [0x0304, 0x0305, 0x7f1c, 0xffff] {
        let mut ch = client_hello();
        ch.legacy_version = v;
        let e = server_rejects(&ch, A::IllegalParameter);
        assert_eq!(e, peer(PeerMisbehaved::BadLegacyField("legacy_version")));
    }
}

#[test]
fn legacy_version_below_tls12_is_protocol_version() {
    // §D.5: "Any endpoint receiving a Hello message with ClientHello.legacy_version ... set to
    // 0x0300 MUST abort the handshake with a "protocol_version" alert." Every value below
    // 0x0303 is an older version's hello, even with TLS 1.3 in supported_versions.
    for v in [0x0302, 0x0301, 0x0300, 0x0200, 0x0002, 0x0000] {
        let mut ch = client_hello();
        ch.legacy_version = v;
        let e = server_rejects(&ch, A::ProtocolVersion);
        assert_eq!(e, peer(PeerMisbehaved::LegacyVersionTooLow(v)), "{v:#06x}");
    }
}

#[test]
fn compression_methods_other_than_null_are_illegal_parameter() {
    // §4.1.2: "If a TLS 1.3 ClientHello is received with any other value in this field, the
    // server MUST abort the handshake with an "illegal_parameter" alert."
    for methods in [vec![1], vec![0, 1], vec![1, 0], vec![0, 0]] {
        let mut ch = client_hello();
        ch.legacy_compression_methods = methods;
        let e = server_rejects(&ch, A::IllegalParameter);
        assert_eq!(
            e,
            peer(PeerMisbehaved::BadLegacyField("legacy_compression_methods"))
        );
    }
    // An empty vector is out of its <1..2^8-1> range: decode_error.
    let mut ch = client_hello();
    ch.legacy_compression_methods.clear();
    assert!(matches!(
        server_rejects(&ch, A::DecodeError),
        Error::Decode(_)
    ));
}

#[test]
fn no_tls13_in_supported_versions_is_protocol_version() {
    // §4.2.1 / §D.2: without supported_versions the client offers at most TLS 1.2, which we do
    // not speak: "the server MUST abort the handshake with a "protocol_version" alert".
    let mut ch = client_hello();
    remove_ext(&mut ch.extensions, ExtensionType::SupportedVersions);
    let e = server_rejects(&ch, A::ProtocolVersion);
    assert_eq!(e, peer(PeerMisbehaved::UnsupportedVersion));
    for versions in [
        vec![ProtocolVersion::TLSv1_2],
        vec![ProtocolVersion::TLSv1_2, ProtocolVersion::TLSv1_1],
        vec![ProtocolVersion::Unknown(0x7f1c)],
    ] {
        let mut ch = client_hello();
        set_ext(
            &mut ch.extensions,
            Extension::SupportedVersionsClient(versions),
        );
        let e = server_rejects(&ch, A::ProtocolVersion);
        assert_eq!(e, peer(PeerMisbehaved::UnsupportedVersion));
    }
}

#[test]
fn tls12_client_hello_with_a_short_or_no_extension_block_is_protocol_version() {
    // A TLS 1.2 ClientHello may end after its compression methods or carry a block under
    // TLS 1.3's minimum of 8 bytes (RFC 5246 §7.4.1.2): it is well formed, and like every
    // TLS 1.2-only offer it gets protocol_version (§4.2.1, §D.2), not decode_error.
    let ch = client_hello();
    let full = encode(HandshakePayload::ClientHello(ch.clone()));
    let fixed = &full[4..full.len() - encode_exts_len(&ch.extensions) - 2];
    let renegotiation_info = [0xff, 0x01, 0x00, 0x01, 0x00];
    let ec_point_formats = [0x00, 0x0b, 0x00, 0x02, 0x01, 0x00];
    for block in [
        None,
        Some(&[][..]),
        Some(&renegotiation_info[..]),
        Some(&ec_point_formats[..]),
    ] {
        let mut body = fixed.to_vec();
        if let Some(b) = block {
            body.extend_from_slice(&(b.len() as u16).to_be_bytes());
            body.extend_from_slice(b);
        }
        let w = record(22, 0x0301, &message(1, &body));
        let e = fresh_server().rejects(&w, A::ProtocolVersion);
        assert_eq!(e, peer(PeerMisbehaved::UnsupportedVersion), "{block:?}");
    }
    // Offering TLS 1.3, the block is `<8..2^16-1>` (§4.1.2): supported_versions alone (7
    // bytes) is out of range, decode_error.
    let only_versions = [0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04];
    let mut body = fixed.to_vec();
    body.extend_from_slice(&(only_versions.len() as u16).to_be_bytes());
    body.extend_from_slice(&only_versions);
    let e = fresh_server().rejects(&record(22, 0x0301, &message(1, &body)), A::DecodeError);
    assert!(matches!(e, Error::Decode(_)), "{e:?}");
}

/// The code points of RFC 8446 §B.3.1.4's obsolete_RESERVED ranges, at their edges and inside.
const OBSOLETE_GROUPS: [u16; 9] = [
    0x0001, 0x0009, 0x0013, 0x0016, 0x001a, 0x001b, 0x001c, 0xff01, 0xff02,
];

#[test]
fn obsolete_groups_in_a_tls13_only_client_hello_are_illegal_parameter() {
    // §4.2.7: "Values within "obsolete_RESERVED" ranges are used in previous versions of TLS
    // and MUST NOT be offered or negotiated by TLS 1.3 implementations." A ClientHello that
    // offers only TLS 1.3 and lists one — alone, next to usable groups, or as a key share —
    // breaks that: illegal_parameter (§6.2: "a field in the handshake was incorrect or
    // inconsistent with other fields").
    for v in OBSOLETE_GROUPS {
        let g = NamedGroup::from(v);
        let share = KeyShareEntry {
            group: g,
            key_exchange: vec![4; 65],
        };
        type Offer = (Vec<NamedGroup>, Vec<KeyShareEntry>);
        let offers: [Offer; 4] = [
            (vec![g], vec![]),
            (vec![g, NamedGroup::secp256r1], vec![]),
            (vec![NamedGroup::X25519, g], vec![x25519_share()]),
            (vec![g, NamedGroup::X25519], vec![share, x25519_share()]),
        ];
        for (groups, shares) in offers {
            let mut ch = client_hello();
            set_ext(&mut ch.extensions, Extension::SupportedGroups(groups));
            set_shares(&mut ch, shares);
            let e = server_rejects(&ch, A::IllegalParameter);
            assert_eq!(e, peer(PeerMisbehaved::ObsoleteGroup(g)), "{v:#06x}");
        }
    }
    // A ClientHello that also offers TLS 1.2 may list them for TLS 1.2: it is answered with a
    // TLS 1.3 ServerHello. So is one that lists the groups next to the obsolete ranges.
    let versions = vec![ProtocolVersion::TLSv1_3, ProtocolVersion::TLSv1_2];
    for v in OBSOLETE_GROUPS {
        let mut ch = client_hello();
        set_ext(
            &mut ch.extensions,
            Extension::SupportedVersionsClient(versions.clone()),
        );
        set_ext(
            &mut ch.extensions,
            Extension::SupportedGroups(vec![
                NamedGroup::from(v),
                NamedGroup::X25519MLKEM768,
                NamedGroup::X25519,
            ]),
        );
        let mut s = fresh_server();
        s.feed(&ch_wire(&ch)).unwrap();
        assert!(matches!(
            decode(&s.output()[0].content),
            HandshakePayload::ServerHello(_)
        ));
    }
    for v in [0x0017u16, 0x001d, 0x001e, 0x0100, 0xfe00, 0xff00, 0xff03] {
        let mut ch = client_hello();
        set_ext(
            &mut ch.extensions,
            Extension::SupportedGroups(vec![
                NamedGroup::from(v),
                NamedGroup::X25519MLKEM768,
                NamedGroup::X25519,
            ]),
        );
        let mut s = fresh_server();
        s.feed(&ch_wire(&ch)).unwrap();
        assert!(
            matches!(
                decode(&s.output()[0].content),
                HandshakePayload::ServerHello(_)
            ),
            "{v:#06x}"
        );
    }
}

#[test]
fn client_hello_over_64_kib_with_a_maximal_signature_algorithms_list_is_answered() {
    // §4.2.3: `SignatureScheme supported_signature_algorithms<2..2^16-2>`: 32,767 schemes fit.
    // A ClientHello whose list fills the extension block (<8..2^16-1>, §4.1.2) is valid although
    // it is longer than 64 KiB; it spans records of 2^14 bytes (§5.1), and is answered.
    let mut ch = client_hello();
    let others: usize = ch
        .extensions
        .iter()
        .filter(|e| e.typ() != ExtensionType::SignatureAlgorithms)
        .map(|e| encode_exts_len(std::slice::from_ref(e)))
        .sum();
    // What is left of the block's 65,535 bytes: 4 (header) + 2 (list length) + 2 per scheme.
    let n = (0xffff - others - 4 - 2) / 2;
    let mut schemes: Vec<SignatureScheme> = (0..n - 1)
        .map(|i| SignatureScheme::from(0xfe00 - i as u16))
        .collect();
    schemes.push(SignatureScheme::ecdsa_secp256r1_sha256);
    set_ext(&mut ch.extensions, Extension::SignatureAlgorithms(schemes));
    let msg = encode(HandshakePayload::ClientHello(ch));
    assert!(msg.len() > 65_536 + 4, "{}", msg.len());
    assert!(n > 32_000, "{n}");
    let w: Vec<u8> = msg
        .chunks(1 << 14)
        .flat_map(|c| record(22, 0x0301, c))
        .collect();
    let mut s = fresh_server();
    s.feed(&w).unwrap();
    assert!(matches!(
        decode(&s.output()[0].content),
        HandshakePayload::ServerHello(_)
    ));
}

#[test]
fn missing_mandatory_extensions_are_missing_extension() {
    // §9.2: a ClientHello without signature_algorithms (certificate authentication), or with
    // supported_groups but no key_share (or the reverse), is answered with missing_extension.
    for t in [
        ExtensionType::SignatureAlgorithms,
        ExtensionType::KeyShare,
        ExtensionType::SupportedGroups,
    ] {
        let mut ch = client_hello();
        remove_ext(&mut ch.extensions, t);
        let e = server_rejects(&ch, A::MissingExtension);
        assert_eq!(e, peer(PeerMisbehaved::MissingExtension(t)), "{t}");
    }
}

#[test]
fn nothing_in_common_is_handshake_failure() {
    // §4.1.1: "If the server is unable to negotiate a supported set of parameters ... it MUST
    // abort the handshake with either a "handshake_failure" or "insufficient_security" fatal
    // alert."
    let mut ch = client_hello();
    ch.cipher_suites = vec![
        CipherSuite::TLS_AES_128_CCM_SHA256,
        CipherSuite::Unknown(0x00ff),
    ];
    let e = server_rejects(&ch, A::HandshakeFailure);
    assert_eq!(e, peer(PeerMisbehaved::NoCommonCipherSuite));

    let mut ch = client_hello();
    set_ext(
        &mut ch.extensions,
        Extension::SupportedGroups(vec![NamedGroup::ffdhe2048, NamedGroup::X448]),
    );
    set_shares(&mut ch, vec![]);
    let e = server_rejects(&ch, A::HandshakeFailure);
    assert_eq!(e, peer(PeerMisbehaved::NoCommonGroup));

    let mut ch = client_hello();
    set_ext(
        &mut ch.extensions,
        Extension::SignatureAlgorithms(vec![
            SignatureScheme::rsa_pkcs1_sha256,
            SignatureScheme::ecdsa_secp384r1_sha384,
        ]),
    );
    let e = server_rejects(&ch, A::HandshakeFailure);
    assert_eq!(e, peer(PeerMisbehaved::NoCommonSignatureScheme));
}

#[test]
fn unknown_values_are_ignored() {
    // §4.1.2 and §4.2: servers MUST ignore unrecognized cipher suites, groups, signature
    // schemes, versions and extensions (RFC 8701 GREASE relies on it), including a key share
    // for a group they do not know (§4.2.8).
    let mut ch = client_hello();
    ch.cipher_suites.insert(0, CipherSuite::Unknown(0x0a0a));
    ch.extensions.insert(
        0,
        Extension::Unknown {
            typ: ExtensionType::Unknown(0x3a3a),
            body: vec![],
        },
    );
    ch.extensions.push(Extension::Unknown {
        typ: ExtensionType::Unknown(0x4a4a),
        body: vec![0],
    });
    for e in ch.extensions.iter_mut() {
        match e {
            Extension::SupportedGroups(g) => g.insert(0, NamedGroup::Unknown(0x1a1a)),
            Extension::KeyShareClient(s) => s.insert(
                0,
                KeyShareEntry {
                    group: NamedGroup::Unknown(0x1a1a),
                    key_exchange: vec![0],
                },
            ),
            Extension::SupportedVersionsClient(v) => v.insert(0, ProtocolVersion::Unknown(0x2a2a)),
            Extension::SignatureAlgorithms(s) => s.insert(0, SignatureScheme::Unknown(0x0b0b)),
            _ => {}
        }
    }
    let mut s = fresh_server();
    s.feed(&ch_wire(&ch)).unwrap();
    let recs = s.output();
    let sh = match decode(&recs[0].content) {
        HandshakePayload::ServerHello(sh) => sh,
        other => panic!("{other:?}"),
    };
    assert_eq!(sh.cipher_suite, CipherSuite::TLS_AES_128_GCM_SHA256);
    assert!(matches!(
        sh.find(ExtensionType::KeyShare),
        Some(Extension::KeyShareServer(KeyShareEntry {
            group: NamedGroup::X25519MLKEM768,
            ..
        }))
    ));
    assert!(recs.iter().all(|r| r.typ != ContentType::Alert));
}

/// The supported_groups our server put in EncryptedExtensions in answer to `ch`, if any.
fn ee_groups_for(s: ServerConfig, ch: &ClientHello) -> Option<Vec<NamedGroup>> {
    let mut server = Ep::server(s, SERVER_SEED);
    server.feed(&ch_wire(ch)).unwrap();
    let recs = server.output();
    let sealed = recs.iter().find(|r| r.epoch == Epoch::Handshake).unwrap();
    let msgs = split_messages(&sealed.content);
    let HandshakePayload::EncryptedExtensions(ee) = decode(&msgs[0]) else {
        panic!("EncryptedExtensions first: {msgs:?}")
    };
    ee.iter().find_map(|e| match e {
        Extension::SupportedGroups(g) => Some(g.clone()),
        _ => None,
    })
}

#[test]
fn supported_groups_in_encrypted_extensions_only_in_answer_to_a_request() {
    // §4.2: "Implementations MUST NOT send extension responses if the remote endpoint did not
    // send the corresponding extension requests" (only HelloRetryRequest's cookie is exempt).
    // A psk_ke ClientHello needs neither supported_groups nor key_share (§9.2: both or neither):
    // without them our server, set to list its groups, lists nothing; with them it does.
    use tls13lab::config::{EeSupportedGroups, ExternalPsk};
    use tls13lab::crypto::hash::HashAlg;
    use tls13lab::keyschedule::{EarlySecret, NoSink};
    use tls13lab::messages::enums::PskKeyExchangeMode;
    let psk = ExternalPsk {
        identity: b"probe".to_vec(),
        key: vec![9; 32],
        suite: CipherSuite::TLS_AES_128_GCM_SHA256,
    };
    let mut c = client_config();
    c.external_psks = vec![psk.clone()];
    c.psk_modes = vec![PskKeyExchangeMode::PskKe];
    let with = client_hello_of(c);
    // The same hello without the two extensions, its binder recomputed over the new bytes
    // (§4.2.11.2: HMAC over the hello truncated before the binders list).
    let mut without = with.clone();
    remove_ext(&mut without.extensions, ExtensionType::SupportedGroups);
    remove_ext(&mut without.extensions, ExtensionType::KeyShare);
    let encoded = encode(HandshakePayload::ClientHello(without.clone()));
    let binders_len = 2 + 1 + 32;
    let partial = &encoded[..encoded.len() - binders_len];
    let bk = EarlySecret::new(HashAlg::Sha256, Some(&psk.key), &mut NoSink)
        .binder_key(false, &mut NoSink);
    let binder = bk.binder(HashAlg::Sha256.hash(partial).as_ref(), &mut NoSink);
    match without.extensions.last_mut() {
        Some(Extension::PreSharedKeyClient(o)) => o.binders = vec![binder],
        other => panic!("{other:?}"),
    }

    let mut s = server_config();
    s.external_psks = vec![psk];
    s.psk_modes = vec![PskKeyExchangeMode::PskKe];
    let ours = s.groups.clone();
    let first = ours[0];
    for mode in [
        EeSupportedGroups::Always,
        EeSupportedGroups::WhenNotOurFirst,
    ] {
        s.send_supported_groups = mode;
        assert_eq!(ee_groups_for(s.clone(), &without), None, "{mode:?}");
        // psk_ke used no group: the list is news under either rule.
        assert_eq!(
            ee_groups_for(s.clone(), &with),
            Some(ours.clone()),
            "{mode:?}"
        );
    }
    s.send_supported_groups = EeSupportedGroups::Never;
    assert_eq!(ee_groups_for(s, &with), None);

    // A full handshake: `Always` lists them whenever asked; `WhenNotOurFirst` only when the
    // client's share was not for our first group (OpenSSL's rule: otherwise nothing is new).
    let mut s = server_config();
    let mut c = client_config();
    (c.groups, c.key_shares) = (vec![first], vec![first]);
    let on_first = client_hello_of(c);
    let second = *ours.iter().find(|g| **g != first).unwrap();
    let mut c = client_config();
    (c.groups, c.key_shares) = (vec![second], vec![second]);
    let on_second = client_hello_of(c);
    s.send_supported_groups = EeSupportedGroups::Always;
    assert_eq!(ee_groups_for(s.clone(), &on_first), Some(ours.clone()));
    s.send_supported_groups = EeSupportedGroups::WhenNotOurFirst;
    assert_eq!(ee_groups_for(s.clone(), &on_first), None);
    assert_eq!(ee_groups_for(s, &on_second), Some(ours));
}

#[test]
fn record_size_limit_below_64_is_illegal_parameter() {
    // RFC 8449 §4: "Endpoints MUST NOT send a "record_size_limit" extension with a value smaller
    // than 64. An endpoint MUST treat receipt of a smaller value as a fatal error and generate an
    // "illegal_parameter" alert."
    let mut ch = client_hello();
    set_ext(&mut ch.extensions, Extension::RecordSizeLimit(63));
    let mut cfg = server_config();
    cfg.record_size_limit = Some(1000);
    let e = Ep::server(cfg, SERVER_SEED).rejects(&ch_wire(&ch), A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::BadRecordSizeLimit));
}

#[test]
fn client_hello_followed_by_handshake_bytes_in_its_record_is_unexpected_message() {
    // §5.1: the ClientHello can precede a key change, so it must end its record; "if not, then
    // they MUST terminate the connection with an "unexpected_message" alert." The alert goes
    // out under the handshake keys just installed, after the ServerHello already written.
    let ch = encode(HandshakePayload::ClientHello(client_hello()));
    for extra in [message(20, &[0; 32]), vec![20], ch.clone()] {
        let mut payload = ch.clone();
        payload.extend_from_slice(&extra);
        let mut s = fresh_server();
        let e = s.feed(&record(22, 0x0301, &payload)).unwrap_err();
        assert_eq!(e, peer(PeerMisbehaved::KeyChangeNotOnRecordBoundary));
        s.check_failed(&e);
    }
}

// =============================================================================================
// Server: records before and around the ClientHello
// =============================================================================================

#[test]
fn unknown_record_types_are_unexpected_message() {
    // §5: "If a TLS implementation receives an unexpected record type, it MUST terminate the
    // connection with an "unexpected_message" alert."
    for typ in [0u8, 19, 24, 25, 99, 255] {
        let e = fresh_server().rejects(&record(typ, 0x0303, &[1, 2, 3]), A::UnexpectedMessage);
        assert_eq!(
            e,
            Error::Record(RecordError::UnexpectedContentType(ContentType::from(typ)))
        );
    }
    // Also behind a complete, valid ClientHello in the same read.
    let mut w = ch_wire(&client_hello());
    w.extend(record(24, 0x0303, &[1]));
    let mut s = fresh_server();
    let e = s.feed(&w).unwrap_err();
    assert_eq!(e.alert(), Some(A::UnexpectedMessage));
    s.check_failed(&e);
}

#[test]
fn oversized_records_are_record_overflow() {
    // §5.1: TLSPlaintext.length "MUST NOT exceed 2^14 bytes. An endpoint that receives a record
    // that exceeds this length MUST terminate the connection with a "record_overflow" alert."
    // §5.2: TLSCiphertext.length "MUST NOT exceed 2^14 + 256 bytes".
    for (typ, len) in [
        (22u8, (1 << 14) + 1),
        (21, (1 << 14) + 1),
        (20, (1 << 14) + 1),
        (23, (1 << 14) + 257),
        (22, 0xffff),
    ] {
        // Refused on the header alone, before the body arrives.
        let header = [typ, 3, 3, (len >> 8) as u8, len as u8];
        let e = fresh_server().rejects(&header, A::RecordOverflow);
        assert_eq!(e, Error::Record(RecordError::RecordOverflow), "{typ} {len}");
    }
}

#[test]
fn oversized_handshake_messages_are_refused_on_their_header() {
    // A message longer than we accept (64 KiB; the wire allows 2^24 - 1) is refused as soon as
    // its 4-byte header arrives, before any of it is buffered (STYLE "Unbounded buffering");
    // its length is one we cannot process: decode_error (§6.2).
    // A ClientHello may be as long as its fields allow (MAX_CLIENT_HELLO, ~128 KiB); every
    // other message, 64 KiB.
    let over = tls13lab::record::MAX_CLIENT_HELLO + 1;
    let ch_over = [1u8, (over >> 16) as u8, (over >> 8) as u8, over as u8];
    for header in [[1u8, 0xff, 0xff, 0xff], ch_over, [11, 0x01, 0x00, 0x01]] {
        let e = fresh_server().rejects(&record(22, 0x0301, &header), A::DecodeError);
        assert!(
            matches!(e, Error::Record(RecordError::HandshakeTooLarge { .. })),
            "{e:?}"
        );
    }
    let t = ToClient::default();
    let mut w = hs_record(&t.flight[0].content);
    w.extend(
        t.server_keys()
            .seal(0, ContentType::Handshake, &[11, 0x02, 0, 0], 0),
    );
    let e = t.rejects(&w, A::DecodeError);
    assert!(
        matches!(e, Error::Record(RecordError::HandshakeTooLarge { .. })),
        "{e:?}"
    );
}

#[test]
fn client_hello_spanning_records_of_the_maximum_size_is_fine() {
    // 2^14 bytes is allowed (§5.1), and a message may span records.
    let mut ch = client_hello();
    ch.extensions.insert(0, Extension::Padding(vec![0; 20_000]));
    let msg = encode(HandshakePayload::ClientHello(ch));
    let mut w = record(22, 0x0301, &msg[..1 << 14]);
    w.extend(record(22, 0x0301, &msg[1 << 14..]));
    let mut s = fresh_server();
    s.feed(&w).unwrap();
    assert!(matches!(
        decode(&s.output()[0].content),
        HandshakePayload::ServerHello(_)
    ));
}

#[test]
fn zero_length_records_of_handshake_or_alert_are_unexpected_message() {
    // §5.1: "Implementations MUST NOT send zero-length fragments of Handshake types" and an
    // alert record carries exactly one alert (§5.1, §6): unexpected_message.
    let e = fresh_server().rejects(&record(22, 0x0303, &[]), A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::EmptyRecord));
    let e = fresh_server().rejects(&record(21, 0x0303, &[]), A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::EmptyRecord));
    // A malformed alert (not two bytes) does not decode (§6): decode_error.
    for body in [&[2u8][..], &[2, 40, 0]] {
        let e = fresh_server().rejects(&record(21, 0x0303, body), A::DecodeError);
        assert!(matches!(e, Error::Decode(_)), "{e:?}");
    }
}

#[test]
fn change_cipher_spec_is_only_one_byte_of_1_after_the_client_hello() {
    // §5: "An implementation may receive an unencrypted record of type change_cipher_spec
    // consisting of the single byte value 0x01 at any time after the first ClientHello message
    // has been sent or received and before the peer's Finished message has been received and
    // MUST simply drop it without further processing. ... An implementation which receives any
    // other change_cipher_spec value or which receives a protected change_cipher_spec record
    // MUST abort the handshake with an "unexpected_message" alert."
    let ch = ch_wire(&client_hello());
    // Before the ClientHello.
    let e = fresh_server().rejects(&record(20, 0x0303, &[1]), A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::BadChangeCipherSpec));
    // After it, with a wrong payload.
    for body in [&[2u8][..], &[1, 1], &[], &[0]] {
        let mut s = fresh_server();
        s.feed(&ch).unwrap();
        s.output();
        let e = s.rejects(&record(20, 0x0303, body), A::UnexpectedMessage);
        assert_eq!(e, peer(PeerMisbehaved::BadChangeCipherSpec), "{body:?}");
    }
    // The right one is dropped.
    let mut s = fresh_server();
    s.feed(&ch).unwrap();
    s.output();
    s.feed(&record(20, 0x0303, &[1])).unwrap();
    assert!(s.output().is_empty());
}

#[test]
fn second_change_cipher_spec_is_unexpected_message() {
    // §D.4: in compatibility mode an endpoint sends exactly one dummy ChangeCipherSpec; §5's
    // "MUST simply drop it" covers that one. A second, in its own record or in the same read,
    // before the peer's Finished, is unexpected_message (as OpenSSL answers it).
    let ch = ch_wire(&client_hello());
    let ccs = record(20, 0x0303, &[1]);
    for together in [false, true] {
        let mut s = fresh_server();
        s.feed(&ch).unwrap();
        s.output();
        let e = if together {
            s.rejects(&[ccs.clone(), ccs.clone()].concat(), A::UnexpectedMessage)
        } else {
            s.feed(&ccs).unwrap();
            s.rejects(&ccs, A::UnexpectedMessage)
        };
        assert_eq!(
            e,
            peer(PeerMisbehaved::SecondChangeCipherSpec),
            "{together}"
        );
    }
    // The client: a second CCS from the server after its first one.
    let t = ToClient::default();
    let sh = hs_record(&t.flight[0].content);
    let e = t.rejects(&[sh, ccs.clone(), ccs].concat(), A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::SecondChangeCipherSpec));
}

#[test]
fn application_data_before_the_handshake_is_unexpected_message() {
    // §5: application data "MUST NOT be sent" before keys exist for it; §6.2 unexpected_message:
    // "An inappropriate message (e.g., the wrong handshake message, premature Application Data,
    // etc.) was received."
    let e = fresh_server().rejects(&record(23, 0x0303, b"GET /"), A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::ApplicationDataBeforeHandshake));
    // After the ClientHello the server expects protected records: plaintext application data
    // does not authenticate (§5.2: bad_record_mac).
    let mut s = fresh_server();
    s.feed(&ch_wire(&client_hello())).unwrap();
    s.output();
    let e = s.rejects(&record(23, 0x0303, &[0; 40]), A::BadRecordMac);
    assert_eq!(e, Error::Record(RecordError::BadRecordMac));
    // Properly protected application data, but before the client's Finished.
    let mut t = to_server_with(client_config(), server_config());
    let data = t.client.keys(Side::Client, Epoch::Handshake).seal(
        0,
        ContentType::ApplicationData,
        b"early",
        0,
    );
    let e = t.server.rejects(&data, A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::ApplicationDataBeforeHandshake));
}

#[test]
fn alert_inside_a_fragmented_handshake_message_is_unexpected_message() {
    // §5.1: "Handshake messages MUST NOT be interleaved with other record types."
    let msg = encode(HandshakePayload::ClientHello(client_hello()));
    let mut w = record(22, 0x0301, &msg[..50]);
    w.extend(record(21, 0x0303, &[1, 90]));
    w.extend(record(22, 0x0301, &msg[50..]));
    let e = fresh_server().rejects(&w, A::UnexpectedMessage);
    assert_eq!(
        e,
        peer(PeerMisbehaved::UnexpectedContentType(ContentType::Alert))
    );
}

#[test]
fn change_cipher_spec_inside_a_fragmented_handshake_message_is_unexpected_message() {
    // §5.1: "Handshake messages MUST NOT be interleaved with other record types" — the dummy
    // CCS included (it may come "at any time", but not inside a message).
    // To the client: its ServerHello in two records, a CCS between them.
    let t = ToClient::default();
    let sh = t.flight[0].content.clone();
    let mut w = hs_record(&sh[..20]);
    w.extend(record(20, 0x0303, &[1]));
    w.extend(hs_record(&sh[20..]));
    let e = t.rejects(&w, A::UnexpectedMessage);
    assert_eq!(
        e,
        peer(PeerMisbehaved::UnexpectedContentType(
            ContentType::ChangeCipherSpec
        ))
    );
    // To the server: the client's Finished in two protected records, a CCS between them.
    let mut t = to_server_with(client_config(), server_config());
    let fin = t.messages().pop().unwrap();
    let keys = t.client.keys(Side::Client, Epoch::Handshake);
    let mut w = keys.seal(0, ContentType::Handshake, &fin[..10], 0);
    w.extend(record(20, 0x0303, &[1]));
    w.extend(keys.seal(1, ContentType::Handshake, &fin[10..], 0));
    let e = t.server.rejects(&w, A::UnexpectedMessage);
    assert_eq!(
        e,
        peer(PeerMisbehaved::UnexpectedContentType(
            ContentType::ChangeCipherSpec
        ))
    );
    // The same split without the CCS is fine.
    let mut t = to_server_with(client_config(), server_config());
    let mut w = keys.seal(0, ContentType::Handshake, &fin[..10], 0);
    w.extend(keys.seal(1, ContentType::Handshake, &fin[10..], 0));
    t.server.feed(&w).unwrap();
    assert!(t.server.tls.is_connected());
}

#[test]
fn empty_application_data_under_handshake_keys_is_unexpected_message() {
    // §5.1 allows zero-length application data records, but application data of any length
    // before the handshake completes is premature (§6.2 unexpected_message) — it is never
    // protected with handshake keys (§7.3: those protect the handshake only).
    let t = ToClient::default();
    let mut w = hs_record(&t.flight[0].content);
    w.extend(
        t.server_keys()
            .seal(0, ContentType::ApplicationData, &[], 0),
    );
    let e = t.rejects(&w, A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::ApplicationDataBeforeHandshake));
    let mut t = to_server_with(client_config(), server_config());
    let w =
        t.client
            .keys(Side::Client, Epoch::Handshake)
            .seal(0, ContentType::ApplicationData, &[], 0);
    let e = t.server.rejects(&w, A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::ApplicationDataBeforeHandshake));
}

#[test]
fn plaintext_handshake_after_the_keys_changed_is_unexpected_message() {
    // §5: once handshake keys are in place every record is protected; a plaintext handshake
    // record is of an unexpected type.
    let mut t = to_server_with(client_config(), server_config());
    let fin = t.messages().pop().unwrap();
    let e = t.server.rejects(&hs_record(&fin), A::UnexpectedMessage);
    assert_eq!(
        e,
        peer(PeerMisbehaved::UnexpectedContentType(
            ContentType::Handshake
        ))
    );
}

// =============================================================================================
// Server: the second ClientHello (§4.1.2, §4.1.4)
// =============================================================================================

/// The client's real second ClientHello after the HelloRetryRequest, decoded.
fn second_client_hello(r: &mut Retry) -> ClientHello {
    r.client.feed(&r.hrr).unwrap();
    let recs = r.client.output();
    let ch = recs
        .iter()
        .find(|x| x.typ == ContentType::Handshake)
        .unwrap();
    match decode(&ch.content) {
        HandshakePayload::ClientHello(ch) => ch,
        other => panic!("{other:?}"),
    }
}

/// The client's real second ClientHello changed by `f` (after a HelloRetryRequest with a cookie
/// of `cookie` bytes, if any) must be refused with illegal_parameter; the error.
#[track_caller]
fn second_client_hello_rejected(cookie: Option<usize>, f: fn(&mut ClientHello)) -> Error {
    let (c, mut s) = retry_configs();
    s.hrr_cookie = cookie;
    let mut r = retry_with(c, s);
    let mut ch2 = second_client_hello(&mut r);
    f(&mut ch2);
    r.server.rejects(
        &hs_record(&encode(HandshakePayload::ClientHello(ch2))),
        A::IllegalParameter,
    )
}

#[test]
fn second_client_hello_must_answer_the_retry() {
    // §4.1.2: the second ClientHello is the first "without modification, except" the key_share
    // (one share of the selected group, §4.2.8), the cookie echoed (§4.2.2), early_data removed;
    // §4.1.4 the cipher suite must not change. Violations are illegal_parameter (§4.2.8, §6.2).
    type Mutation = fn(&mut ClientHello);
    let cases: [(&str, Mutation, PeerMisbehaved); 7] = [
        (
            "random",
            |ch| ch.random[0] ^= 1,
            PeerMisbehaved::SecondClientHelloMismatch("random"),
        ),
        (
            "share of another group",
            |ch| set_shares(ch, vec![x25519_share()]),
            PeerMisbehaved::SecondClientHelloMismatch("key_share"),
        ),
        (
            "no share",
            |ch| set_shares(ch, vec![]),
            PeerMisbehaved::SecondClientHelloMismatch("key_share"),
        ),
        (
            "cookie dropped",
            |ch| remove_ext(&mut ch.extensions, ExtensionType::Cookie),
            PeerMisbehaved::SecondClientHelloMismatch("cookie"),
        ),
        (
            "cookie changed",
            |ch| set_ext(&mut ch.extensions, Extension::Cookie(vec![1, 2, 3])),
            PeerMisbehaved::SecondClientHelloMismatch("cookie"),
        ),
        (
            "suite changed",
            |ch| ch.cipher_suites = vec![CipherSuite::TLS_AES_256_GCM_SHA384],
            PeerMisbehaved::HelloRetryMismatch("cipher suite"),
        ),
        (
            // §4.1.2: "Early data is not permitted after a HelloRetryRequest."
            "early_data added",
            |ch| ch.extensions.insert(0, Extension::EarlyDataEmpty),
            PeerMisbehaved::SecondClientHelloMismatch("early_data"),
        ),
    ];
    for (what, f, want) in cases {
        let e = second_client_hello_rejected(Some(20), f);
        assert_eq!(e, peer(want), "{what}");
    }
}

#[test]
fn second_client_hello_repeats_the_first_field_by_field() {
    // §4.1.2: "the client MUST send the same ClientHello without modification, except as
    // follows" — the key_share, early_data, cookie, pre_shared_key and padding changes. The same
    // extensions in another order, another extension added, removed or changed, or another
    // fixed field: illegal_parameter (§6.2), with and without a cookie.
    type Mutation = fn(&mut ClientHello);
    let cases: [(&str, Mutation, &str); 8] = [
        (
            "first two swapped",
            |ch| ch.extensions.swap(0, 1),
            "extensions",
        ),
        (
            "reversed",
            |ch| {
                // The cookie, if any, may stay anywhere: reverse the others around it.
                ch.extensions.reverse();
            },
            "extensions",
        ),
        (
            "supported_groups changed",
            |ch| {
                set_ext(
                    &mut ch.extensions,
                    Extension::SupportedGroups(vec![NamedGroup::secp256r1]),
                )
            },
            "supported_groups",
        ),
        (
            "signature_algorithms changed",
            |ch| {
                set_ext(
                    &mut ch.extensions,
                    Extension::SignatureAlgorithms(vec![SignatureScheme::ed25519]),
                )
            },
            "signature_algorithms",
        ),
        (
            "an extension added",
            |ch| ch.extensions.insert(1, Extension::PostHandshakeAuth),
            "extensions",
        ),
        (
            "an extension removed",
            |ch| remove_ext(&mut ch.extensions, ExtensionType::SignatureAlgorithms),
            "extensions",
        ),
        (
            "legacy_session_id changed",
            |ch| ch.legacy_session_id = vec![9; 32],
            "legacy_session_id",
        ),
        (
            "cipher_suites reordered",
            |ch| ch.cipher_suites.rotate_left(1),
            "cipher_suites",
        ),
    ];
    for cookie in [None, Some(20)] {
        for (what, f, field) in cases {
            let e = second_client_hello_rejected(cookie, f);
            assert_eq!(
                e,
                peer(PeerMisbehaved::SecondClientHelloMismatch(field)),
                "{what}, cookie {cookie:?}"
            );
        }
    }
    // What §4.1.2 allows: padding added, and the unchanged second ClientHello, are answered.
    for pad in [false, true] {
        let (c, mut s) = retry_configs();
        s.hrr_cookie = Some(20);
        let mut r = retry_with(c, s);
        let mut ch2 = second_client_hello(&mut r);
        if pad {
            ch2.extensions.insert(2, Extension::Padding(vec![0; 100]));
        }
        r.server
            .feed(&hs_record(&encode(HandshakePayload::ClientHello(ch2))))
            .unwrap();
        assert!(matches!(
            decode(&r.server.output()[0].content),
            HandshakePayload::ServerHello(sh) if sh.random != HRR_RANDOM
        ));
    }
}

// =============================================================================================
// Server: the client's second flight
// =============================================================================================

#[test]
fn wrong_client_finished_is_decrypt_error() {
    // §4.4.4: "Recipients of Finished messages MUST verify that the contents are correct and if
    // incorrect MUST terminate the connection with a "decrypt_error" alert."
    for (byte, bit) in [(4, 0), (20, 3), (35, 7)] {
        let mut t = to_server_with(client_config(), server_config());
        let mut msgs = t.messages();
        msgs.last_mut().unwrap()[byte] ^= 1 << bit;
        let w = t.seal(&msgs);
        let e = t.server.rejects(&w, A::DecryptError);
        assert_eq!(e, peer(PeerMisbehaved::BadFinished));
    }
    // A Finished of the wrong length does not decode (§4.4.4: verify_data[Hash.length]).
    for len in [0usize, 31, 33, 48] {
        let mut t = to_server_with(client_config(), server_config());
        let w = t.seal(&[message(20, &vec![0; len])]);
        let e = t.server.rejects(&w, A::DecodeError);
        assert!(matches!(e, Error::Decode(_)), "{len}: {e:?}");
    }
}

#[test]
fn bit_flips_in_protected_records_are_bad_record_mac() {
    // §5.2: "If the decryption fails, the receiver MUST terminate the connection with a
    // "bad_record_mac" alert." Every byte after the header, and the header's version bytes
    // (they are the AEAD's additional data).
    let base = to_server_with(client_config(), server_config());
    let rec = base.flight.last().unwrap().wire.clone();
    for i in (1..3).chain(5..rec.len()) {
        let mut t = to_server_with(client_config(), server_config());
        let mut w = rec.clone();
        w[i] ^= 0x20;
        let e = t.server.rejects(&w, A::BadRecordMac);
        assert_eq!(e, Error::Record(RecordError::BadRecordMac), "byte {i}");
    }
    // A protected record shorter than a tag cannot be authentic either.
    for len in 0..16 {
        let mut t = to_server_with(client_config(), server_config());
        let e = t
            .server
            .rejects(&record(23, 0x0303, &vec![0; len]), A::BadRecordMac);
        assert_eq!(e, Error::Record(RecordError::BadRecordMac), "{len}");
    }
}

/// Under TLS_AES_128_CCM_8_SHA256 the tag is 8 bytes (RFC 6655 §3.4; RFC 8446 §B.4): every
/// flipped bit is still bad_record_mac, and so is a record too short for the 8-byte tag, or
/// whose tag was stretched to GCM's 16 bytes.
#[test]
fn ccm8_records_with_bad_or_missing_8_byte_tags_are_bad_record_mac() {
    let ccm8 = || {
        let (mut c, mut s) = (client_config(), server_config());
        c.cipher_suites = vec![CipherSuite::TLS_AES_128_CCM_8_SHA256];
        s.cipher_suites = vec![CipherSuite::TLS_AES_128_CCM_8_SHA256];
        to_server_with(c, s)
    };
    let base = ccm8();
    let rec = base.flight.last().unwrap().wire.clone();
    // The client's Finished: 4 + 32 bytes, the type byte and an 8-byte tag.
    assert_eq!(rec.len(), 5 + 36 + 1 + 8);
    for i in (1..3).chain(5..rec.len()) {
        let mut t = ccm8();
        let mut w = rec.clone();
        w[i] ^= 0x01;
        let e = t.server.rejects(&w, A::BadRecordMac);
        assert_eq!(e, Error::Record(RecordError::BadRecordMac), "byte {i}");
    }
    for len in 0..=8 {
        let mut t = ccm8();
        let e = t
            .server
            .rejects(&record(23, 0x0303, &vec![0; len]), A::BadRecordMac);
        assert_eq!(e, Error::Record(RecordError::BadRecordMac), "{len}");
    }
    let mut stretched = rec[5..].to_vec();
    stretched.extend_from_slice(&[0; 8]);
    let mut t = ccm8();
    let e = t
        .server
        .rejects(&record(23, 0x0303, &stretched), A::BadRecordMac);
    assert_eq!(e, Error::Record(RecordError::BadRecordMac));
    // The record as sent is accepted.
    let mut t = ccm8();
    t.server.feed(&rec).unwrap();
    assert!(t.server.tls.is_connected());
}

#[test]
fn client_finished_followed_by_handshake_bytes_is_unexpected_message() {
    // §5.1: Finished precedes a key change and must end its record.
    for extra in [
        encode(HandshakePayload::KeyUpdate(
            KeyUpdateRequest::UpdateNotRequested,
        )),
        vec![24],
    ] {
        let mut t = to_server_with(client_config(), server_config());
        let mut msgs = t.messages();
        msgs.push(extra);
        let w = t.seal(&msgs);
        let e = t.server.rejects(&w, A::UnexpectedMessage);
        assert_eq!(e, peer(PeerMisbehaved::KeyChangeNotOnRecordBoundary));
    }
}

fn client_auth_configs() -> (ClientConfig, ServerConfig) {
    let mut c = client_config();
    c.client_cert = Some(util::client_identity().0);
    let mut s = server_config();
    s.client_auth = ClientAuth::Required(vec![util::client_identity().1]);
    (c, s)
}

#[test]
fn wrong_client_certificate_verify_is_decrypt_error() {
    // §4.4.3: "If the verification fails, the receiver MUST terminate the handshake with a
    // "decrypt_error" alert."
    let (c, s) = client_auth_configs();
    let mut t = to_server_with(c, s);
    let mut msgs = t.messages();
    let cv = index_of(&msgs, HandshakeType::CertificateVerify);
    let last = msgs[cv].len() - 1;
    msgs[cv][last] ^= 1;
    let w = t.seal(&msgs);
    let e = t.server.rejects(&w, A::DecryptError);
    assert_eq!(e, peer(PeerMisbehaved::BadCertificateVerify));
}

/// `cv` (a whole CertificateVerify message) carrying `signature` instead of its own, the
/// lengths re-encoded.
fn cv_with_signature(cv: &[u8], signature: Vec<u8>) -> Vec<u8> {
    match decode(cv) {
        HandshakePayload::CertificateVerify(mut c) => {
            c.signature = signature;
            encode(HandshakePayload::CertificateVerify(c))
        }
        other => panic!("{other:?}"),
    }
}

/// The signature in a CertificateVerify message.
fn cv_signature(cv: &[u8]) -> Vec<u8> {
    match decode(cv) {
        HandshakePayload::CertificateVerify(c) => c.signature,
        other => panic!("{other:?}"),
    }
}

/// A client that authenticates with an ML-DSA-65 certificate, and a server that trusts it.
fn mldsa_client_auth_configs() -> (ClientConfig, ServerConfig) {
    let (ck, root) = util::certified(KeyKind::MlDsa65);
    let mut c = client_config();
    c.client_cert = Some(ck);
    let mut s = server_config();
    s.client_auth = ClientAuth::Required(vec![root]);
    (c, s)
}

#[test]
fn wrong_mldsa_certificate_verify_is_decrypt_error() {
    // §4.4.3: a signature that does not verify is decrypt_error; in ML-DSA's c~ (the start),
    // z (the middle) or the hint (the end), from a server of each level and from a client.
    for kind in [KeyKind::MlDsa44, KeyKind::MlDsa65, KeyKind::MlDsa87] {
        let (s, root) = util::server_config(kind);
        let fresh = || ToClient::new(util::client_config(root.clone()), s.clone());
        let msgs = fresh().encrypted();
        let cv = index_of(&msgs, HandshakeType::CertificateVerify);
        let sig = cv_signature(&msgs[cv]);
        for i in [0, sig.len() / 2, sig.len() - 1] {
            let mut bad = sig.clone();
            bad[i] ^= 0x04;
            let t = fresh();
            let mut m = msgs.clone();
            m[cv] = cv_with_signature(&m[cv], bad);
            let w = t.wire_msgs(&m);
            let e = t.rejects(&w, A::DecryptError);
            assert_eq!(
                e,
                peer(PeerMisbehaved::BadCertificateVerify),
                "{kind:?} {i}"
            );
        }
    }
    let (c, s) = mldsa_client_auth_configs();
    let mut t = to_server_with(c, s);
    let mut msgs = t.messages();
    let cv = index_of(&msgs, HandshakeType::CertificateVerify);
    let mut sig = cv_signature(&msgs[cv]);
    sig[100] ^= 1;
    msgs[cv] = cv_with_signature(&msgs[cv], sig);
    let w = t.seal(&msgs);
    let e = t.server.rejects(&w, A::DecryptError);
    assert_eq!(e, peer(PeerMisbehaved::BadCertificateVerify));
}

#[test]
fn wrong_ed448_certificate_verify_is_decrypt_error() {
    // §4.4.3: decrypt_error for a signature that does not verify: a flipped bit in R (the
    // first 57 bytes) or S, S replaced by a value >= L (RFC 8032 §5.2.7: not canonical), and a
    // truncated signature; from the server and from the client.
    let (s, root) = util::server_config(KeyKind::Ed448);
    let fresh = || ToClient::new(util::client_config(root.clone()), s.clone());
    let msgs = fresh().encrypted();
    let cv = index_of(&msgs, HandshakeType::CertificateVerify);
    let sig = cv_signature(&msgs[cv]);
    assert_eq!(sig.len(), 114);
    let flip = |i: usize| {
        let mut b = sig.clone();
        b[i] ^= 0x02;
        b
    };
    let mut high_s = sig.clone();
    high_s[57..113].fill(0xff);
    for (what, bad) in [
        ("R", flip(3)),
        ("S", flip(80)),
        ("S >= L", high_s),
        ("short", sig[..113].to_vec()),
    ] {
        let t = fresh();
        let mut m = msgs.clone();
        m[cv] = cv_with_signature(&m[cv], bad);
        let w = t.wire_msgs(&m);
        let e = t.rejects(&w, A::DecryptError);
        assert_eq!(e, peer(PeerMisbehaved::BadCertificateVerify), "{what}");
    }
    let (ck, root) = util::certified(KeyKind::Ed448);
    let mut c = client_config();
    c.client_cert = Some(ck);
    let mut s = server_config();
    s.client_auth = ClientAuth::Required(vec![root]);
    let mut t = to_server_with(c, s);
    let mut msgs = t.messages();
    let cv = index_of(&msgs, HandshakeType::CertificateVerify);
    let mut sig = cv_signature(&msgs[cv]);
    sig[60] ^= 1;
    msgs[cv] = cv_with_signature(&msgs[cv], sig);
    let w = t.seal(&msgs);
    let e = t.server.rejects(&w, A::DecryptError);
    assert_eq!(e, peer(PeerMisbehaved::BadCertificateVerify));
}

#[test]
fn mldsa_chain_with_a_flipped_signature_byte_is_bad_certificate() {
    // §4.4.2.4 / RFC 9881: an ML-DSA-65 intermediate's signature on the ML-DSA-44 leaf, or the
    // ML-DSA-87 root's on the intermediate, one byte off: the path does not validate, and §6.2
    // calls a certificate whose signature did not verify bad_certificate. Unchanged, it does.
    let pem = |s: &str| tls13lab::crypto::cert::certs_from_pem(s).unwrap();
    let chain = pem(include_str!("vectors/pem/mldsa_chain.pem"));
    let root = pem(include_str!("vectors/pem/mldsa_chain_root.pem")).remove(0);
    let key = tls13lab::crypto::sign::SigningKey::from_pem(include_str!(
        "vectors/pem/mldsa_chain_leaf_key.pem"
    ))
    .unwrap();
    let config = |chain: Vec<Vec<u8>>| {
        let s = ServerConfig::new(tls13lab::config::CertifiedKey {
            chain,
            key: std::sync::Arc::new(key.clone()),
        });
        (util::client_config(root.clone()), s)
    };
    let (c, s) = config(chain.clone());
    let mut t = ToClient::new(c, s);
    let w = t.wire_msgs(&t.encrypted());
    t.client.feed(&w).unwrap();
    assert!(t.client.tls.is_connected());
    for i in 0..chain.len() {
        let mut bad = chain.clone();
        let at = bad[i].len() - 1000;
        bad[i][at] ^= 0x10;
        let (c, s) = config(bad);
        let t = ToClient::new(c, s);
        let w = t.wire_msgs(&t.encrypted());
        let e = t.rejects(&w, A::BadCertificate);
        assert_eq!(
            e,
            Error::Certificate(tls13lab::crypto::cert::CertError::BadSignature),
            "certificate {i}"
        );
    }
}

#[test]
fn mldsa_certificate_verify_of_the_wrong_length_is_decrypt_error() {
    // FIPS 204 signatures have one length per parameter set; any other does not verify, which
    // §4.4.3 answers with decrypt_error (not decode_error: the message itself parses). One byte
    // short or long, empty, and another level's length.
    let (s, root) = util::server_config(KeyKind::MlDsa65);
    let fresh = || ToClient::new(util::client_config(root.clone()), s.clone());
    let msgs = fresh().encrypted();
    let cv = index_of(&msgs, HandshakeType::CertificateVerify);
    let sig = cv_signature(&msgs[cv]);
    assert_eq!(sig.len(), 3309);
    for bad in [
        sig[..sig.len() - 1].to_vec(),
        [&sig[..], &[0]].concat(),
        Vec::new(),
        sig[..2420].to_vec(),
    ] {
        let len = bad.len();
        let t = fresh();
        let mut m = msgs.clone();
        m[cv] = cv_with_signature(&m[cv], bad);
        let w = t.wire_msgs(&m);
        let e = t.rejects(&w, A::DecryptError);
        assert_eq!(e, peer(PeerMisbehaved::BadCertificateVerify), "{len}");
    }
    let (c, s) = mldsa_client_auth_configs();
    let mut t = to_server_with(c, s);
    let mut msgs = t.messages();
    let cv = index_of(&msgs, HandshakeType::CertificateVerify);
    let sig = cv_signature(&msgs[cv]);
    msgs[cv] = cv_with_signature(&msgs[cv], sig[..sig.len() - 1].to_vec());
    let w = t.seal(&msgs);
    let e = t.server.rejects(&w, A::DecryptError);
    assert_eq!(e, peer(PeerMisbehaved::BadCertificateVerify));
}

#[test]
fn client_authentication_flight_is_checked() {
    use HandshakeType as T;
    // §4.4.2: the client's Certificate echoes the CertificateRequest's (empty) context; another
    // value is an illegal parameter (§6.2).
    let (c, s) = client_auth_configs();
    let mut t = to_server_with(c.clone(), s.clone());
    let mut msgs = t.messages();
    let i = index_of(&msgs, T::Certificate);
    let mut cert = match decode(&msgs[i]) {
        HandshakePayload::Certificate(cert) => cert,
        other => panic!("{other:?}"),
    };
    cert.context = vec![7];
    msgs[i] = encode(HandshakePayload::Certificate(cert));
    let w = t.seal(&msgs);
    let e = t.server.rejects(&w, A::IllegalParameter);
    assert!(
        matches!(e, Error::Peer(PeerMisbehaved::IllegalExtension(_))),
        "{e:?}"
    );
    // §4.4.3: the client's CertificateVerify must use a scheme from the CertificateRequest's
    // signature_algorithms: illegal_parameter otherwise.
    let mut s_ed = s.clone();
    s_ed.signature_schemes = vec![
        SignatureScheme::ecdsa_secp256r1_sha256,
        SignatureScheme::rsa_pss_rsae_sha256,
    ];
    let mut t = to_server_with(c.clone(), s_ed);
    let mut msgs = t.messages();
    with_cv_scheme(&mut msgs, SignatureScheme::ed25519);
    let w = t.seal(&msgs);
    let e = t.server.rejects(&w, A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::UnofferedSignatureScheme));
    // An empty Certificate takes the client to Finished: a CertificateVerify then is out of
    // order (§4.4.2.4 with optional authentication, §6.2 unexpected_message).
    let mut s_opt = s.clone();
    s_opt.client_auth = ClientAuth::Optional(vec![util::client_identity().1]);
    let mut t = to_server_with(c, s_opt);
    let mut msgs = t.messages();
    let i = index_of(&msgs, T::Certificate);
    msgs[i] = encode(HandshakePayload::Certificate(CertificatePayload {
        context: vec![],
        entries: vec![],
    }));
    let w = t.seal(&msgs);
    let e = t.server.rejects(&w, A::UnexpectedMessage);
    assert!(
        matches!(
            e,
            Error::Peer(PeerMisbehaved::UnexpectedMessage {
                got: T::CertificateVerify,
                ..
            })
        ),
        "{e:?}"
    );
}

#[test]
fn unrequested_client_certificate_is_unexpected_message() {
    // §4.4.2: the client sends a Certificate only "if the server requested client
    // authentication"; otherwise it is an inappropriate message (§6.2 unexpected_message).
    let (c, s) = client_auth_configs();
    let with_cert = to_server_with(c, s);
    let cert = with_cert.messages()[0].clone();
    assert_eq!(cert[0], 11);
    let mut t = to_server_with(client_config(), server_config());
    let mut msgs = t.messages();
    msgs.insert(0, cert);
    let w = t.seal(&msgs);
    let e = t.server.rejects(&w, A::UnexpectedMessage);
    assert!(
        matches!(
            e,
            Error::Peer(PeerMisbehaved::UnexpectedMessage {
                got: HandshakeType::Certificate,
                ..
            })
        ),
        "{e:?}"
    );
}

#[test]
fn handshake_messages_a_server_never_expects_are_unexpected_message() {
    // §4: each of these is the wrong message in the server's states (§6.2 unexpected_message).
    let nst = encode(HandshakePayload::NewSessionTicket(NewSessionTicket {
        lifetime: 10,
        age_add: 1,
        nonce: vec![],
        ticket: vec![1],
        extensions: vec![],
    }));
    for m in [
        nst.clone(),
        encode(HandshakePayload::EndOfEarlyData),
        encode(HandshakePayload::KeyUpdate(
            KeyUpdateRequest::UpdateNotRequested,
        )),
        message(99, &[1, 2]),
        encode(HandshakePayload::ClientHello(client_hello())),
    ] {
        let mut t = to_server_with(client_config(), server_config());
        let w = t.seal(std::slice::from_ref(&m));
        let e = t.server.rejects(&w, A::UnexpectedMessage);
        assert!(
            matches!(e, Error::Peer(PeerMisbehaved::UnexpectedMessage { .. })),
            "{:?}: {e:?}",
            m[0]
        );
    }
    // After the handshake, a NewSessionTicket from the client is still unexpected.
    let mut c = connected();
    let w = c
        .client
        .forge(Epoch::Application(0), ContentType::Handshake, &nst, 0);
    let e = c.server.rejects(&w, A::UnexpectedMessage);
    assert!(matches!(
        e,
        Error::Peer(PeerMisbehaved::UnexpectedMessage {
            got: HandshakeType::NewSessionTicket,
            ..
        })
    ));
}

// =============================================================================================
// Client: the ServerHello (§4.1.3)
// =============================================================================================

#[test]
fn server_hello_truncated_at_every_length_is_decode_error() {
    let t = ToClient::default();
    let sh = t.flight[0].content.clone();
    for len in 0..sh.len() - 4 {
        let t = ToClient::default();
        let w = hs_record(&message(2, &sh[4..4 + len]));
        let e = t.rejects(&w, A::DecodeError);
        assert!(matches!(e, Error::Decode(_)), "{len}: {e:?}");
    }
    // Cut without fixing the lengths: the client waits.
    let all = wire(&t.flight);
    for cut in 1..t.flight[0].wire.len() {
        let mut t = ToClient::default();
        t.client.feed(&all[..cut]).unwrap();
        assert!(t.client.output().is_empty());
    }
}

#[test]
fn wrong_session_id_echo_is_illegal_parameter() {
    // §4.1.3: "A client which receives a legacy_session_id_echo field that does not match what
    // it sent in the ClientHello MUST abort the handshake with an "illegal_parameter" alert."
    let e = client_rejects_server_hello(
        |sh| sh.legacy_session_id_echo = vec![1; 32],
        A::IllegalParameter,
    );
    assert_eq!(e, peer(PeerMisbehaved::SessionIdMismatch));
    // In compatibility mode: one byte changed, or the echo left empty.
    for f in [
        (|sh: &mut ServerHello| sh.legacy_session_id_echo[31] ^= 1) as fn(&mut ServerHello),
        |sh| sh.legacy_session_id_echo.clear(),
    ] {
        let mut c = client_config();
        c.compat_mode = true;
        let t = ToClient::new(c, server_config());
        let mut sh = t.server_hello();
        assert_eq!(sh.legacy_session_id_echo.len(), 32);
        f(&mut sh);
        let e = t.rejects(&sh_record(&sh), A::IllegalParameter);
        assert_eq!(e, peer(PeerMisbehaved::SessionIdMismatch));
    }
}

#[test]
fn unoffered_cipher_suite_is_illegal_parameter() {
    // §4.1.3: "A client which receives a cipher suite that was not offered MUST abort the
    // handshake with an "illegal_parameter" alert."
    for suite in [
        CipherSuite::TLS_AES_128_CCM_SHA256,
        CipherSuite::Unknown(0x1337),
        CipherSuite::TLS_EMPTY_RENEGOTIATION_INFO_SCSV,
    ] {
        let e = client_rejects_server_hello(|sh| sh.cipher_suite = suite, A::IllegalParameter);
        assert_eq!(e, peer(PeerMisbehaved::SelectedUnoffered("cipher suite")));
    }
    // A suite we implement but did not offer this time.
    let mut c = client_config();
    c.cipher_suites = vec![CipherSuite::TLS_AES_128_GCM_SHA256];
    let t = ToClient::new(c, server_config());
    let mut sh = t.server_hello();
    sh.cipher_suite = CipherSuite::TLS_CHACHA20_POLY1305_SHA256;
    let e = t.rejects(&sh_record(&sh), A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::SelectedUnoffered("cipher suite")));
}

#[test]
fn key_share_for_an_unoffered_group_is_illegal_parameter() {
    // §4.2.8: the server's share "MUST be in the same group as the KeyShareEntry value offered
    // by the client that the server has selected"; a client receiving another group aborts with
    // illegal_parameter (§4.2.8, §6.2).
    let p256 = {
        let mut c = client_config();
        c.key_shares = vec![NamedGroup::secp256r1];
        match client_hello_of(c).find(ExtensionType::KeyShare) {
            Some(Extension::KeyShareClient(s)) => s[0].clone(),
            other => panic!("{other:?}"),
        }
    };
    for entry in [
        p256,
        KeyShareEntry {
            group: NamedGroup::X448,
            key_exchange: vec![5; 56],
        },
    ] {
        let e = client_rejects_server_hello(
            |sh| set_ext(&mut sh.extensions, Extension::KeyShareServer(entry.clone())),
            A::IllegalParameter,
        );
        assert_eq!(
            e,
            peer(PeerMisbehaved::SelectedUnoffered("key share group"))
        );
    }
}

#[test]
fn invalid_server_key_share_is_illegal_parameter() {
    // §4.2.8.2, §7.4.2 (see the server-side case).
    for key_exchange in [vec![0; 32], vec![9; 31], vec![9; 33]] {
        let e = client_rejects_server_hello(
            |sh| {
                set_ext(
                    &mut sh.extensions,
                    Extension::KeyShareServer(KeyShareEntry {
                        group: NamedGroup::X25519,
                        key_exchange: key_exchange.clone(),
                    }),
                )
            },
            A::IllegalParameter,
        );
        assert!(matches!(e, Error::KeyExchange(_)), "{e:?}");
    }
}

#[test]
fn missing_key_share_is_missing_extension() {
    // §9.2 / §4.2.8: a non-PSK ServerHello must carry key_share: missing_extension.
    let e = client_rejects_server_hello(
        |sh| remove_ext(&mut sh.extensions, ExtensionType::KeyShare),
        A::MissingExtension,
    );
    assert_eq!(
        e,
        peer(PeerMisbehaved::MissingExtension(ExtensionType::KeyShare))
    );
}

#[test]
fn downgrade_sentinels_are_illegal_parameter() {
    // §4.1.3: "TLS 1.3 clients receiving a ServerHello indicating TLS 1.2 or below MUST check
    // that the last 8 bytes are not equal to either of these values. ... If a match is found,
    // the client MUST abort the handshake with an "illegal_parameter" alert."
    for sentinel in [DOWNGRADE_TLS12, DOWNGRADE_TLS11] {
        let e = client_rejects_server_hello(
            |sh| {
                remove_ext(&mut sh.extensions, ExtensionType::SupportedVersions);
                sh.random[24..].copy_from_slice(&sentinel);
            },
            A::IllegalParameter,
        );
        assert_eq!(e, peer(PeerMisbehaved::DowngradeSentinel));
    }
    // A TLS 1.2 ServerHello without the sentinel: a version we do not support (§4.2.1, §D.1:
    // protocol_version).
    let e = client_rejects_server_hello(
        |sh| remove_ext(&mut sh.extensions, ExtensionType::SupportedVersions),
        A::ProtocolVersion,
    );
    assert_eq!(e, peer(PeerMisbehaved::UnsupportedVersion));
    // §4.2.1: "If the "supported_versions" extension in the ServerHello contains a version not
    // offered by the client or contains a version prior to TLS 1.3, the client MUST abort the
    // handshake with an "illegal_parameter" alert."
    for v in [ProtocolVersion::TLSv1_2, ProtocolVersion::Unknown(0x0305)] {
        let e = client_rejects_server_hello(
            |sh| set_ext(&mut sh.extensions, Extension::SupportedVersionsServer(v)),
            A::IllegalParameter,
        );
        assert_eq!(e, peer(PeerMisbehaved::SelectedUnoffered("version")));
    }
}

#[test]
fn server_hello_legacy_fields_wrong_are_illegal_parameter() {
    // §4.1.3: legacy_version = 0x0303 and legacy_compression_method "MUST have the value 0";
    // a value breaking either is an illegal parameter (§6.2).
    let e = client_rejects_server_hello(|sh| sh.legacy_version = 0x0304, A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::BadLegacyField("legacy_version")));
    let e = client_rejects_server_hello(|sh| sh.legacy_compression_method = 1, A::IllegalParameter);
    assert_eq!(
        e,
        peer(PeerMisbehaved::BadLegacyField("legacy_compression_method"))
    );
}

#[test]
fn server_hello_extensions_out_of_place() {
    // §4.2: "If an implementation receives an extension which it recognizes and which is not
    // specified for the message in which it appears, it MUST abort the handshake with an
    // "illegal_parameter" alert." ... "Upon receiving such an extension [a response to no
    // request], an endpoint MUST abort the handshake with an "unsupported_extension" alert."
    let mut c = client_config();
    c.alpn = vec![b"h2".to_vec()];
    for ext in [
        Extension::Alpn(vec![b"h2".to_vec()]),
        Extension::ServerNameAck,
        Extension::Cookie(vec![1]),
        Extension::SupportedGroups(vec![NamedGroup::X25519]),
    ] {
        let t = ToClient::new(c.clone(), server_config());
        let mut sh = t.server_hello();
        sh.extensions.insert(0, ext.clone());
        let e = t.rejects(&sh_record(&sh), A::IllegalParameter);
        assert!(
            matches!(e, Error::Peer(PeerMisbehaved::IllegalExtension(_))),
            "{ext:?}: {e:?}"
        );
    }
    // An extension we do not know and did not send.
    let e = client_rejects_server_hello(
        |sh| {
            sh.extensions.push(Extension::Unknown {
                typ: ExtensionType::Unknown(0x7777),
                body: vec![],
            })
        },
        A::UnsupportedExtension,
    );
    assert_eq!(
        e,
        peer(PeerMisbehaved::UnsolicitedExtension(
            ExtensionType::Unknown(0x7777)
        ))
    );
    // A pre_shared_key answer when we offered no PSK.
    let e = client_rejects_server_hello(
        |sh| sh.extensions.push(Extension::PreSharedKeyServer(0)),
        A::UnsupportedExtension,
    );
    assert_eq!(
        e,
        peer(PeerMisbehaved::UnsolicitedExtension(
            ExtensionType::PreSharedKey
        ))
    );
}

#[test]
fn server_hello_with_duplicate_extension_is_illegal_parameter() {
    // §4.2 (see the ClientHello case).
    let e = client_rejects_server_hello(
        |sh| {
            let sv = sh.find(ExtensionType::SupportedVersions).unwrap().clone();
            sh.extensions.push(sv);
        },
        A::IllegalParameter,
    );
    assert_eq!(
        e,
        Error::Decode(DecodeError::DuplicateExtension(
            ExtensionType::SupportedVersions
        ))
    );
}

#[test]
fn handshake_bytes_after_the_server_hello_in_its_record_are_unexpected_message() {
    // §5.1: the ServerHello precedes a key change; "Implementations MUST verify that all
    // messages immediately preceding a key change align with a record boundary; if not, then
    // they MUST terminate the connection with an "unexpected_message" alert."
    let t = ToClient::default();
    let ee = t.encrypted()[0].clone();
    for extra in [ee.clone(), ee[..2].to_vec()] {
        let t = ToClient::default();
        let mut payload = t.flight[0].content.clone();
        payload.extend_from_slice(&extra);
        let e = t.rejects(&hs_record(&payload), A::UnexpectedMessage);
        assert_eq!(e, peer(PeerMisbehaved::KeyChangeNotOnRecordBoundary));
    }
}

// =============================================================================================
// Client: HelloRetryRequest (§4.1.4)
// =============================================================================================

#[test]
fn second_hello_retry_request_is_unexpected_message() {
    // §4.1.4: "If a client receives a second HelloRetryRequest in the same connection (i.e.,
    // where the ClientHello was itself in response to a HelloRetryRequest), it MUST abort the
    // handshake with an "unexpected_message" alert."
    let mut r = retry();
    r.client.feed(&r.hrr).unwrap();
    r.client.output();
    let e = r.client.rejects(&r.hrr, A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::SecondHelloRetry));
}

#[test]
fn hello_retry_request_that_changes_nothing_is_illegal_parameter() {
    // §4.1.4: "Clients MUST abort the handshake with an "illegal_parameter" alert if the
    // HelloRetryRequest would not result in any change in the ClientHello."
    let mut r = retry();
    let mut hrr = sh_of(&r.hrr);
    remove_ext(&mut hrr.extensions, ExtensionType::KeyShare);
    let e = r.client.rejects(&sh_record(&hrr), A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::HelloRetryChangesNothing));
    // Asking for the group the client already sent a share for changes nothing either
    // (§4.2.8: "the client MUST abort ... if the selected group ... corresponds to a group
    // which was provided in the "key_share" extension in the original ClientHello").
    let mut r = retry();
    let mut hrr = sh_of(&r.hrr);
    set_ext(
        &mut hrr.extensions,
        Extension::KeyShareHrr(NamedGroup::X25519),
    );
    let e = r.client.rejects(&sh_record(&hrr), A::IllegalParameter);
    assert_eq!(
        e,
        peer(PeerMisbehaved::IllegalExtension(
            "HelloRetryRequest key_share"
        ))
    );
}

#[test]
fn hello_retry_request_for_an_unoffered_group_is_illegal_parameter() {
    // §4.2.8: the selected_group "MUST be in the "supported_groups" extension in the
    // original ClientHello"; otherwise "the client MUST abort the handshake with an
    // "illegal_parameter" alert".
    for g in [NamedGroup::X448, NamedGroup::Unknown(0x1234)] {
        let mut r = retry();
        let mut hrr = sh_of(&r.hrr);
        set_ext(&mut hrr.extensions, Extension::KeyShareHrr(g));
        let e = r.client.rejects(&sh_record(&hrr), A::IllegalParameter);
        assert_eq!(
            e,
            peer(PeerMisbehaved::IllegalExtension(
                "HelloRetryRequest key_share"
            ))
        );
    }
}

#[test]
fn hello_retry_request_checks_like_a_server_hello() {
    // The HelloRetryRequest is a ServerHello (§4.1.4): unoffered suite and wrong session id
    // echo are illegal_parameter (§4.1.3); an extension not allowed in it is illegal_parameter,
    // one we do not know is unsupported_extension (§4.2).
    let mut r = retry();
    let mut hrr = sh_of(&r.hrr);
    hrr.cipher_suite = CipherSuite::TLS_AES_128_CCM_SHA256;
    let e = r.client.rejects(&sh_record(&hrr), A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::SelectedUnoffered("cipher suite")));

    let mut r = retry();
    let mut hrr = sh_of(&r.hrr);
    hrr.legacy_session_id_echo = vec![3; 8];
    let e = r.client.rejects(&sh_record(&hrr), A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::SessionIdMismatch));

    let mut r = retry();
    let mut hrr = sh_of(&r.hrr);
    hrr.extensions.insert(
        0,
        Extension::Unknown {
            typ: ExtensionType::ApplicationLayerProtocolNegotiation,
            body: vec![0, 3, 2, b'h', b'2'],
        },
    );
    let e = r.client.rejects(&sh_record(&hrr), A::IllegalParameter);
    assert!(
        matches!(e, Error::Peer(PeerMisbehaved::IllegalExtension(_))),
        "{e:?}"
    );

    let mut r = retry();
    let mut hrr = sh_of(&r.hrr);
    hrr.extensions.insert(
        0,
        Extension::Unknown {
            typ: ExtensionType::Unknown(0x7777),
            body: vec![],
        },
    );
    let e = r.client.rejects(&sh_record(&hrr), A::UnsupportedExtension);
    assert_eq!(
        e,
        peer(PeerMisbehaved::UnsolicitedExtension(
            ExtensionType::Unknown(0x7777)
        ))
    );
    // An empty cookie is outside cookie<1..2^16-1> (§4.2.2): decode_error.
    let mut r = retry();
    let mut hrr = sh_of(&r.hrr);
    hrr.extensions.push(Extension::Unknown {
        typ: ExtensionType::Cookie,
        body: vec![0, 0],
    });
    let e = r.client.rejects(&sh_record(&hrr), A::DecodeError);
    assert!(
        matches!(e, Error::Decode(DecodeError::Empty { .. })),
        "{e:?}"
    );
}

#[test]
fn server_hello_suite_differing_from_the_retry_is_illegal_parameter() {
    // §4.1.4: "Upon receiving the ServerHello, clients MUST check that the cipher suite supplied
    // in the ServerHello is the same as that in the HelloRetryRequest and otherwise abort the
    // handshake with an "illegal_parameter" alert."
    let mut r = retry();
    r.client.feed(&r.hrr).unwrap();
    r.server.feed(&wire(&r.client.output())).unwrap();
    let flight = r.server.output();
    let mut sh = match decode(&flight[0].content) {
        HandshakePayload::ServerHello(sh) => sh,
        other => panic!("{other:?}"),
    };
    assert_eq!(sh.cipher_suite, CipherSuite::TLS_AES_128_GCM_SHA256);
    sh.cipher_suite = CipherSuite::TLS_AES_256_GCM_SHA384;
    let e = r.client.rejects(&sh_record(&sh), A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::HelloRetryMismatch("cipher suite")));
}

// =============================================================================================
// Client: the encrypted flight
// =============================================================================================

#[test]
fn the_unchanged_flight_resealed_is_accepted() {
    // The harness itself: re-sealing the real messages gives a flight the client accepts, so
    // each rejection below is caused by its mutation alone.
    let mut t = ToClient::default();
    let w = t.wire_msgs(&t.encrypted());
    t.client.feed(&w).unwrap();
    assert!(t.client.tls.is_connected());
    let recs = t.client.output();
    assert!(recs.iter().all(|r| r.typ != ContentType::Alert));
}

#[test]
fn wrong_server_finished_is_decrypt_error() {
    // §4.4.4 (see the server-side case).
    for (byte, bit) in [(4, 0), (17, 5), (35, 7)] {
        let e =
            client_rejects_messages(|m| m.last_mut().unwrap()[byte] ^= 1 << bit, A::DecryptError);
        assert_eq!(e, peer(PeerMisbehaved::BadFinished));
    }
}

#[test]
fn wrong_server_certificate_verify_is_decrypt_error() {
    // §4.4.3: "If the verification fails, the receiver MUST terminate the handshake with a
    // "decrypt_error" alert." Bytes of the DER signature anywhere: a signature that does not
    // parse does not verify either.
    let t = ToClient::default();
    let cv_len = t.encrypted()[index_of(&t.encrypted(), HandshakeType::CertificateVerify)].len();
    for i in [8, 9, 12, 40, cv_len - 1] {
        let e = client_rejects_messages(
            |m| {
                let cv = index_of(m, HandshakeType::CertificateVerify);
                m[cv][i] ^= 0x01;
            },
            A::DecryptError,
        );
        assert_eq!(e, peer(PeerMisbehaved::BadCertificateVerify), "byte {i}");
    }
}

fn with_cv_scheme(m: &mut [Vec<u8>], scheme: SignatureScheme) {
    let cv = index_of(m, HandshakeType::CertificateVerify);
    m[cv][4..6].copy_from_slice(&scheme.to_repr().to_be_bytes());
}

#[test]
fn certificate_verify_with_an_unoffered_scheme_is_illegal_parameter() {
    // §4.4.3: "If the CertificateVerify message is sent by a server, the signature algorithm
    // MUST be one offered in the client's "signature_algorithms" extension"; RSASSA-PKCS1-v1_5
    // and SHA-1 are never allowed. A field inconsistent with the handshake: illegal_parameter.
    for scheme in [
        SignatureScheme::rsa_pkcs1_sha256,
        SignatureScheme::ecdsa_brainpoolP256r1tls13_sha256,
        SignatureScheme::ecdsa_sha1,
        SignatureScheme::Unknown(0x0b0b),
    ] {
        let e = client_rejects_messages(|m| with_cv_scheme(m, scheme), A::IllegalParameter);
        assert_eq!(
            e,
            peer(PeerMisbehaved::UnofferedSignatureScheme),
            "{scheme}"
        );
    }
    // An offered scheme that does not fit the certificate's key (§4.4.3: the algorithm must be
    // compatible with the key in the end-entity certificate).
    for scheme in [SignatureScheme::ed25519, SignatureScheme::ed448] {
        let e = client_rejects_messages(|m| with_cv_scheme(m, scheme), A::IllegalParameter);
        assert!(matches!(e, Error::Signature(_)), "{scheme}: {e:?}");
    }
}

#[test]
fn legacy_schemes_in_certificate_verify_are_illegal_parameter_even_when_offered() {
    // §4.2.3: rsa_pkcs1_* "refer solely to signatures which appear in certificates" and "are
    // not defined for use in signed TLS handshake messages"; the SHA-1 schemes likewise. A peer
    // may list them for TLS 1.2's sake (OpenSSL does), so a client that offers them must still
    // refuse them in CertificateVerify (§4.4.3), and a server asking for them in its
    // CertificateRequest too: illegal_parameter, from the signature check, not the offer check.
    use SignatureScheme as S;
    let legacy = [
        S::rsa_pkcs1_sha256,
        S::rsa_pkcs1_sha384,
        S::rsa_pkcs1_sha512,
        S::rsa_pkcs1_sha1,
        S::ecdsa_sha1,
    ];
    for scheme in legacy {
        // Server CertificateVerify to a client that offered the scheme.
        let mut c = client_config();
        c.signature_schemes.push(scheme);
        let t = ToClient::new(c, server_config());
        let mut msgs = t.encrypted();
        with_cv_scheme(&mut msgs, scheme);
        let w = t.wire_msgs(&msgs);
        let e = t.rejects(&w, A::IllegalParameter);
        assert_eq!(
            e,
            Error::Signature(SigError::UnsupportedScheme(scheme)),
            "{scheme}"
        );
        // Client CertificateVerify to a server whose CertificateRequest listed it.
        let (c, mut s) = client_auth_configs();
        s.signature_schemes.push(scheme);
        let mut t = to_server_with(c, s);
        let mut msgs = t.messages();
        with_cv_scheme(&mut msgs, scheme);
        let w = t.seal(&msgs);
        let e = t.server.rejects(&w, A::IllegalParameter);
        assert_eq!(
            e,
            Error::Signature(SigError::UnsupportedScheme(scheme)),
            "client {scheme}"
        );
    }
}

#[test]
fn rsa_pss_key_certificate_verify_under_an_rsae_code_point_is_illegal_parameter() {
    // §4.2.3: rsa_pss_rsae_* needs an rsaEncryption key and rsa_pss_pss_* an id-RSASSA-PSS one;
    // both offered, the server's signature relabelled to the other kind does not fit the key.
    use SignatureScheme as S;
    for (kind, relabel) in [
        (KeyKind::RsaPss, S::rsa_pss_rsae_sha256),
        (KeyKind::Rsa2048, S::rsa_pss_pss_sha256),
        (KeyKind::RsaPssSha384, S::rsa_pss_pss_sha512),
    ] {
        let (s, root) = util::server_config(kind);
        let t = ToClient::new(util::client_config(root), s);
        let mut msgs = t.encrypted();
        with_cv_scheme(&mut msgs, relabel);
        let w = t.wire_msgs(&msgs);
        let e = t.rejects(&w, A::IllegalParameter);
        assert_eq!(
            e,
            Error::Signature(SigError::KeyMismatch(relabel)),
            "{kind:?} {relabel}"
        );
    }
}

#[test]
fn flight_messages_out_of_order_are_unexpected_message() {
    // §4 fixes the order EncryptedExtensions, [CertificateRequest], Certificate,
    // CertificateVerify, Finished; §4.6.3: "Implementations that receive a KeyUpdate message
    // prior to receiving a Finished message MUST terminate the connection with an
    // "unexpected_message" alert." Anything else out of place: §6.2 unexpected_message.
    use HandshakeType as T;
    let t = ToClient::default();
    let msgs = t.encrypted();
    let by = |typ: T| msgs[index_of(&msgs, typ)].clone();
    let (ee, cert, cv, fin) = (
        by(T::EncryptedExtensions),
        by(T::Certificate),
        by(T::CertificateVerify),
        by(T::Finished),
    );
    let ku = encode(HandshakePayload::KeyUpdate(
        KeyUpdateRequest::UpdateNotRequested,
    ));
    let nst = encode(HandshakePayload::NewSessionTicket(NewSessionTicket {
        lifetime: 10,
        age_add: 1,
        nonce: vec![],
        ticket: vec![1],
        extensions: vec![],
    }));
    let cr = encode(HandshakePayload::CertificateRequest(CertificateRequest {
        context: vec![],
        extensions: vec![Extension::SignatureAlgorithms(vec![
            SignatureScheme::ed25519,
        ])],
    }));
    let sh = t.flight[0].content.clone();
    let cases: Vec<(&str, Vec<Vec<u8>>, T)> = vec![
        (
            "no EncryptedExtensions",
            vec![cert.clone(), cv.clone(), fin.clone()],
            T::Certificate,
        ),
        (
            "EncryptedExtensions twice",
            vec![ee.clone(), ee.clone()],
            T::EncryptedExtensions,
        ),
        (
            "CertificateVerify first",
            vec![ee.clone(), cv.clone()],
            T::CertificateVerify,
        ),
        (
            "Finished without certificate",
            vec![ee.clone(), fin.clone()],
            T::Finished,
        ),
        (
            "no CertificateVerify",
            vec![ee.clone(), cert.clone(), fin.clone()],
            T::Finished,
        ),
        (
            "Certificate twice",
            vec![ee.clone(), cert.clone(), cert.clone()],
            T::Certificate,
        ),
        (
            "CertificateRequest after Certificate",
            vec![ee.clone(), cert.clone(), cr],
            T::CertificateRequest,
        ),
        (
            "KeyUpdate before Finished",
            vec![ee.clone(), ku.clone()],
            T::KeyUpdate,
        ),
        (
            "KeyUpdate before Finished, late",
            vec![ee.clone(), cert.clone(), cv.clone(), ku],
            T::KeyUpdate,
        ),
        (
            "NewSessionTicket before Finished",
            vec![ee.clone(), nst],
            T::NewSessionTicket,
        ),
        ("ServerHello again", vec![sh], T::ServerHello),
        (
            "EndOfEarlyData from a server",
            vec![encode(HandshakePayload::EndOfEarlyData)],
            T::EndOfEarlyData,
        ),
        (
            "unknown message type",
            vec![message(99, &[0; 3])],
            T::Unknown(99),
        ),
        (
            "ClientHello from a server",
            vec![encode(HandshakePayload::ClientHello(client_hello()))],
            T::ClientHello,
        ),
    ];
    for (what, msgs, got) in cases {
        let t = ToClient::default();
        let w = t.wire_msgs(&msgs);
        let e = t.rejects(&w, A::UnexpectedMessage);
        assert!(
            matches!(e, Error::Peer(PeerMisbehaved::UnexpectedMessage { got: g, .. }) if g == got),
            "{what}: {e:?}"
        );
    }
}

#[test]
fn handshake_bytes_after_the_server_finished_in_its_record_are_unexpected_message() {
    // §5.1: Finished precedes a key change and must end its record.
    let nst = encode(HandshakePayload::NewSessionTicket(NewSessionTicket {
        lifetime: 10,
        age_add: 1,
        nonce: vec![],
        ticket: vec![1],
        extensions: vec![],
    }));
    for extra in [nst, vec![4, 0]] {
        let e = client_rejects_messages(|m| m.push(extra.clone()), A::UnexpectedMessage);
        assert_eq!(e, peer(PeerMisbehaved::KeyChangeNotOnRecordBoundary));
    }
}

#[test]
fn empty_server_certificate_is_decode_error() {
    // §4.4.2.4: "If the server supplies an empty Certificate message, the client MUST abort the
    // handshake with a "decode_error" alert."
    let e = client_rejects_messages(
        |m| {
            let c = index_of(m, HandshakeType::Certificate);
            m[c] = encode(HandshakePayload::Certificate(CertificatePayload {
                context: vec![],
                entries: vec![],
            }));
        },
        A::DecodeError,
    );
    assert_eq!(e, peer(PeerMisbehaved::NoServerCertificate));
}

fn encrypted_extensions(exts: Vec<Extension>) -> Vec<u8> {
    encode(HandshakePayload::EncryptedExtensions(exts))
}

#[test]
fn encrypted_extensions_checked_against_the_offer() {
    // §4.2: a response to no request is unsupported_extension; an extension not allowed in
    // EncryptedExtensions is illegal_parameter. RFC 7301 §3.1: the server's ProtocolNameList
    // "MUST contain exactly one" protocol, one the client offered; anything else is a field
    // inconsistent with the handshake (§6.2 illegal_parameter).
    let set_ee = |exts: Vec<Extension>| {
        move |m: &mut Vec<Vec<u8>>| {
            let ee = index_of(m, HandshakeType::EncryptedExtensions);
            m[ee] = encrypted_extensions(exts);
        }
    };
    // Unsolicited: ALPN and record_size_limit we did not offer.
    for ext in [
        Extension::Alpn(vec![b"h2".to_vec()]),
        Extension::RecordSizeLimit(100),
        Extension::EarlyDataEmpty,
        Extension::Unknown {
            typ: ExtensionType::Unknown(0x7777),
            body: vec![],
        },
    ] {
        let t = ext.typ();
        let e = client_rejects_messages(set_ee(vec![ext]), A::UnsupportedExtension);
        assert_eq!(e, peer(PeerMisbehaved::UnsolicitedExtension(t)));
    }
    // Not allowed in EncryptedExtensions at all (§4.2 table): key_share, supported_versions,
    // signature_algorithms, cookie, pre_shared_key.
    for (typ, body) in [
        (ExtensionType::KeyShare, vec![0, 0x1d, 0, 1, 9]),
        (ExtensionType::SupportedVersions, vec![3, 4]),
        (ExtensionType::SignatureAlgorithms, vec![0, 2, 4, 3]),
        (ExtensionType::Cookie, vec![0, 1, 1]),
        (ExtensionType::PreSharedKey, vec![0, 0]),
    ] {
        let e = client_rejects_messages(
            set_ee(vec![Extension::Unknown { typ, body }]),
            A::IllegalParameter,
        );
        assert!(
            matches!(e, Error::Peer(PeerMisbehaved::IllegalExtension(_))),
            "{typ}: {e:?}"
        );
    }
    // Offered ALPN, but answered with another protocol or with two.
    let mut c = client_config();
    c.alpn = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    for answer in [
        vec![b"spdy/3".to_vec()],
        vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    ] {
        let t = ToClient::new(c.clone(), server_config());
        let mut msgs = t.encrypted();
        msgs[0] = encrypted_extensions(vec![Extension::Alpn(answer)]);
        let w = t.wire_msgs(&msgs);
        let e = t.rejects(&w, A::IllegalParameter);
        assert_eq!(e, peer(PeerMisbehaved::UnofferedAlpn));
    }
    // RFC 8449 §4: a record_size_limit below 64 is illegal_parameter.
    let mut c = client_config();
    c.record_size_limit = Some(1000);
    let t = ToClient::new(c, server_config());
    let mut msgs = t.encrypted();
    msgs[0] = encrypted_extensions(vec![Extension::RecordSizeLimit(63)]);
    let w = t.wire_msgs(&msgs);
    let e = t.rejects(&w, A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::BadRecordSizeLimit));
    // A duplicate is illegal_parameter (§4.2).
    let e = client_rejects_messages(
        set_ee(vec![Extension::ServerNameAck, Extension::ServerNameAck]),
        A::IllegalParameter,
    );
    assert!(matches!(
        e,
        Error::Decode(DecodeError::DuplicateExtension(_))
    ));
}

#[test]
fn certificate_request_is_checked() {
    // §4.3.2: "The "signature_algorithms" extension MUST be specified"; its absence is
    // missing_extension (§9.2 lists it as mandatory-to-use; §6.2). The context "SHALL be zero
    // length unless used for the post-handshake authentication": illegal_parameter.
    let insert_cr = |cr: CertificateRequest| {
        move |m: &mut Vec<Vec<u8>>| {
            m.insert(1, encode(HandshakePayload::CertificateRequest(cr)));
        }
    };
    let e = client_rejects_messages(
        insert_cr(CertificateRequest {
            context: vec![],
            extensions: vec![Extension::Unknown {
                typ: ExtensionType::Unknown(0x7777),
                body: vec![],
            }],
        }),
        A::MissingExtension,
    );
    assert_eq!(
        e,
        peer(PeerMisbehaved::MissingExtension(
            ExtensionType::SignatureAlgorithms
        ))
    );
    let e = client_rejects_messages(
        insert_cr(CertificateRequest {
            context: vec![1],
            extensions: vec![Extension::SignatureAlgorithms(vec![
                SignatureScheme::ed25519,
            ])],
        }),
        A::IllegalParameter,
    );
    assert!(matches!(
        e,
        Error::Peer(PeerMisbehaved::IllegalExtension(_))
    ));
}

#[test]
fn finished_of_the_wrong_length_is_decode_error() {
    // §4.4.4: verify_data is Hash.length bytes; another length does not decode.
    for len in [0usize, 31, 33, 48] {
        let e = client_rejects_messages(
            |m| *m.last_mut().unwrap() = message(20, &vec![0; len]),
            A::DecodeError,
        );
        assert!(matches!(e, Error::Decode(_)), "{len}: {e:?}");
    }
}

#[test]
fn encrypted_flight_truncated_at_every_message_length_is_decode_error() {
    // Each message of the flight cut short with its length fixed (the record re-sealed): §6.2
    // decode_error.
    let t = ToClient::default();
    let msgs = t.encrypted();
    for (i, m) in msgs.iter().enumerate() {
        for len in (0..m.len() - 4).step_by(if m.len() > 200 { 7 } else { 1 }) {
            let e =
                client_rejects_messages(|ms| ms[i] = message(m[0], &m[4..4 + len]), A::DecodeError);
            assert!(matches!(e, Error::Decode(_)), "message {i} at {len}: {e:?}");
        }
    }
}

// =============================================================================================
// After the handshake
// =============================================================================================

fn key_update(req: KeyUpdateRequest) -> Vec<u8> {
    encode(HandshakePayload::KeyUpdate(req))
}

#[test]
fn key_update_flood_is_unexpected_message() {
    // A resource limit (STYLE "Unbounded buffering"): more than 32 KeyUpdates with no data in
    // between is abuse. §6.2 unexpected_message. 32 are fine, and data still flows after them.
    fn flood<S: Role, R: Role>(sender: &mut Ep<S>, receiver: &mut Ep<R>, n: usize, ok: bool) {
        for _ in 0..n {
            sender.tls.key_update(false).unwrap();
        }
        let w = wire(&sender.output());
        if ok {
            receiver.feed(&w).unwrap();
            assert!(receiver.output().is_empty());
            sender.tls.send(b"after the updates").unwrap();
            receiver.feed(&wire(&sender.output())).unwrap();
            assert_eq!(receiver.received(), b"after the updates");
        } else {
            let e = receiver.rejects(&w, A::UnexpectedMessage);
            assert_eq!(e, peer(PeerMisbehaved::TooManyKeyUpdates));
        }
    }
    for (from_server, n, ok) in [(true, 32, true), (true, 33, false), (false, 33, false)] {
        let mut c = connected();
        if from_server {
            flood(&mut c.server, &mut c.client, n, ok);
        } else {
            flood(&mut c.client, &mut c.server, n, ok);
        }
    }
}

#[test]
fn a_finished_before_a_suite_is_unexpected_message_whatever_its_length() {
    // Before a suite is chosen there is no Hash.length to hold a Finished to: one where a
    // ClientHello or a ServerHello is expected is out of order (§4, §6.2), whatever its length,
    // never decode_error for not being 32 bytes.
    for len in [0usize, 20, 32, 48, 64] {
        let mut msg = vec![20u8, 0, 0, len as u8];
        msg.resize(4 + len, 0x5a);
        let rec = [&[22u8, 3, 3, 0, msg.len() as u8][..], &msg].concat();
        let mut server = Ep::server(server_config(), SERVER_SEED);
        let e = server.rejects(&rec, A::UnexpectedMessage);
        assert!(
            matches!(e, Error::Peer(PeerMisbehaved::UnexpectedMessage { .. })),
            "{e:?}"
        );
        let mut client = Ep::client(client_config(), CLIENT_SEED);
        let _hello = client.output();
        let e = client.rejects(&rec, A::UnexpectedMessage);
        assert!(
            matches!(e, Error::Peer(PeerMisbehaved::UnexpectedMessage { .. })),
            "{e:?}"
        );
    }
}

#[test]
fn key_update_with_an_invalid_request_is_illegal_parameter() {
    // §4.6.3: "If an implementation receives any other value [than 0 or 1], it MUST terminate
    // the connection with an "illegal_parameter" alert."
    for v in [2u8, 255] {
        let mut c = connected();
        let w = c.server.forge(
            Epoch::Application(0),
            ContentType::Handshake,
            &key_update(KeyUpdateRequest::Unknown(v)),
            0,
        );
        let e = c.client.rejects(&w, A::IllegalParameter);
        assert!(matches!(
            e,
            Error::Peer(PeerMisbehaved::IllegalExtension(_))
        ));
        // The connection is closed, yet what the handshake established stays readable: the
        // connected state keeps its secrets through a failed post-handshake message.
        assert!(c.client.tls.is_connected() && c.client.tls.is_closed());
        assert_eq!(
            c.client
                .tls
                .export(b"EXPORTER-test", b"", 16)
                .unwrap()
                .len(),
            16
        );
    }
}

#[test]
fn key_update_followed_by_handshake_bytes_is_unexpected_message() {
    // §5.1: KeyUpdate precedes a key change and must end its record (the OpenJDK bug).
    let ku = key_update(KeyUpdateRequest::UpdateNotRequested);
    for extra in [ku.clone(), vec![24, 0, 0]] {
        let mut c = connected();
        let mut content = ku.clone();
        content.extend_from_slice(&extra);
        let w = c
            .server
            .forge(Epoch::Application(0), ContentType::Handshake, &content, 0);
        let e = c.client.rejects(&w, A::UnexpectedMessage);
        assert_eq!(e, peer(PeerMisbehaved::KeyChangeNotOnRecordBoundary));
    }
}

#[test]
fn empty_record_floods_are_unexpected_message() {
    // §5.1: "Zero-length fragments of Application Data MAY be sent", but an endless run of them
    // costs the receiver without progress (STYLE "Unbounded buffering"): more than 32 in a row
    // is refused with unexpected_message. Data resets the count.
    let mut c = connected();
    let mut w = Vec::new();
    for _ in 0..32 {
        w.extend(
            c.server
                .forge(Epoch::Application(0), ContentType::ApplicationData, &[], 0),
        );
    }
    w.extend(
        c.server
            .forge(Epoch::Application(0), ContentType::ApplicationData, b"x", 0),
    );
    for _ in 0..32 {
        w.extend(
            c.server
                .forge(Epoch::Application(0), ContentType::ApplicationData, &[], 5),
        );
    }
    c.client.feed(&w).unwrap();
    assert!(c.client.output().is_empty());
    let last = c
        .server
        .forge(Epoch::Application(0), ContentType::ApplicationData, &[], 0);
    let e = c.client.rejects(&last, A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::TooManyEmptyRecords));
    // A flood of dummy ChangeCipherSpec records during the handshake ends at the second one
    // (§D.4: exactly one is sent).
    let mut s = fresh_server();
    s.feed(&ch_wire(&client_hello())).unwrap();
    s.output();
    let ccs = record(20, 0x0303, &[1]);
    let e = s.rejects(&ccs.repeat(33), A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::SecondChangeCipherSpec));
}

#[test]
fn malformed_protected_records_are_rejected() {
    // §5.4: "If a receiving implementation does not find a non-zero octet in the cleartext, it
    // MUST terminate the connection with an "unexpected_message" alert."
    let mut c = connected();
    let w = c.server.forge_inner(Epoch::Application(0), vec![0; 20]);
    let e = c.client.rejects(&w, A::UnexpectedMessage);
    assert_eq!(e, Error::Record(RecordError::NoContentType));
    let mut c = connected();
    let w = c.server.forge_inner(Epoch::Application(0), vec![]);
    let e = c.client.rejects(&w, A::UnexpectedMessage);
    assert_eq!(e, Error::Record(RecordError::NoContentType));
    // §5: "An implementation which receives ... a protected change_cipher_spec record MUST abort
    // the handshake with an "unexpected_message" alert."; unknown inner types likewise (§5).
    for typ in [
        ContentType::ChangeCipherSpec,
        ContentType::Heartbeat,
        ContentType::Unknown(99),
    ] {
        let mut c = connected();
        let w = c.server.forge(Epoch::Application(0), typ, &[1], 0);
        let e = c.client.rejects(&w, A::UnexpectedMessage);
        assert_eq!(e, peer(PeerMisbehaved::UnexpectedContentType(typ)));
    }
    // Zero-length protected Handshake and Alert records (§5.1, §5.4; picotls #605/#611).
    for typ in [ContentType::Handshake, ContentType::Alert] {
        let mut c = connected();
        let w = c.server.forge(Epoch::Application(0), typ, &[], 3);
        let e = c.client.rejects(&w, A::UnexpectedMessage);
        assert_eq!(e, Error::Record(RecordError::EmptyFragment(typ)), "{typ}");
    }
    // §5.4: TLSInnerPlaintext over 2^14 + 1 bytes is record_overflow, whether content or
    // padding makes it long ("The length MUST NOT exceed 2^14 + 1 octets", §5.4; §5.2).
    for (content, padding) in [
        ((1 << 14) + 1, 0),
        (100, (1 << 14) - 99),
        (0, (1 << 14) + 1),
    ] {
        let mut c = connected();
        let w = c.server.forge(
            Epoch::Application(0),
            ContentType::ApplicationData,
            &vec![7; content],
            padding,
        );
        let e = c.client.rejects(&w, A::RecordOverflow);
        assert_eq!(e, Error::Record(RecordError::RecordOverflow));
    }
    // Exactly 2^14 + 1 is fine.
    for (content, padding) in [(1 << 14, 0), (100, (1 << 14) - 100)] {
        let mut c = connected();
        let w = c.server.forge(
            Epoch::Application(0),
            ContentType::ApplicationData,
            &vec![7; content],
            padding,
        );
        c.client.feed(&w).unwrap();
        assert_eq!(c.client.received().len(), content);
    }
}

#[test]
fn rejected_early_data_skips_only_records_that_do_not_open() {
    // §4.2.10: a server rejecting 0-RTT "skip[s] past early data" by trying the handshake key
    // and dropping records that fail to decrypt. A record that does decrypt under the handshake
    // key is the client's second flight: if it is malformed (here an empty Handshake record,
    // §5.4), that is an error, not early data to skip.
    let mut ch = client_hello();
    ch.extensions.push(Extension::EarlyDataEmpty);
    let mut s = fresh_server();
    s.feed(&ch_wire(&ch)).unwrap();
    s.output();
    // Undecryptable records are skipped silently...
    s.feed(&record(23, 0x0303, &[0x55; 100])).unwrap();
    assert!(s.output().is_empty());
    // ... but an empty Handshake record under the client's handshake key is not.
    let server_view = s.keys(Side::Client, Epoch::Handshake);
    let w = server_view.seal(0, ContentType::Handshake, &[], 0);
    let e = s.rejects(&w, A::UnexpectedMessage);
    assert_eq!(
        e,
        Error::Record(RecordError::EmptyFragment(ContentType::Handshake))
    );
}

#[test]
fn rejected_early_data_skipping_stops_at_the_first_record_that_opens() {
    // §4.2.10: the server skips early data "by attempting to deprotect received records using
    // the handshake traffic key, discarding records which fail deprotection"; once a record
    // opens, the client's handshake flight has begun, and a later record that fails is a
    // forgery: bad_record_mac (§5.2).
    let mut ch = client_hello();
    ch.extensions.push(Extension::EarlyDataEmpty);
    let garbage = record(23, 0x0303, &[0x55; 100]);
    let mut s = fresh_server();
    s.feed(&ch_wire(&ch)).unwrap();
    s.output();
    s.feed(&garbage.repeat(3)).unwrap();
    assert!(s.output().is_empty());
    // The first two bytes of a Finished, under the client's handshake key: it opens.
    let keys = s.keys(Side::Client, Epoch::Handshake);
    s.feed(&keys.seal(0, ContentType::Handshake, &[20, 0], 0))
        .unwrap();
    let e = s.rejects(&garbage, A::BadRecordMac);
    assert_eq!(e, Error::Record(RecordError::BadRecordMac));
}

#[test]
fn early_data_after_a_hello_retry_is_skipped_only_before_the_second_client_hello() {
    // §4.2.10: a server that sends a HelloRetryRequest ignores early data "by skipping all
    // records with an external content type of "application_data" ... up to the configured
    // max_early_data_size"; those come before the second ClientHello. After it, the client's
    // records are under the handshake keys, and one that fails is bad_record_mac (§5.2).
    let (c, srv) = retry_configs();
    let mut client = Ep::client(c, CLIENT_SEED);
    let first = client.output();
    let mut ch1 = match decode(&first[0].content) {
        HandshakePayload::ClientHello(ch) => ch,
        other => panic!("{other:?}"),
    };
    ch1.extensions.insert(0, Extension::EarlyDataEmpty);
    let mut s = Ep::server(srv, SERVER_SEED);
    s.feed(&ch_wire(&ch1)).unwrap();
    let hrr = s.output();
    let garbage = record(23, 0x0303, &[0x55; 100]);
    s.feed(&garbage.repeat(3)).unwrap();
    assert!(s.output().is_empty());
    // The real second ClientHello (early_data dropped, as §4.1.2 allows).
    client.feed(&wire(&hrr)).unwrap();
    s.feed(&wire(&client.output())).unwrap();
    assert!(matches!(
        decode(&s.output()[0].content),
        HandshakePayload::ServerHello(sh) if sh.random != HRR_RANDOM
    ));
    let e = s.rejects(&garbage, A::BadRecordMac);
    assert_eq!(e, Error::Record(RecordError::BadRecordMac));
}

#[test]
fn plaintext_records_after_the_handshake_are_unexpected_message() {
    // §5: the dummy CCS is allowed only "before the peer's Finished message has been received";
    // after that, and for any plaintext alert or handshake record once application keys are in
    // use, the record type is unexpected.
    for (typ, body) in [
        (20u8, vec![1u8]),
        (21, vec![2, 40]),
        (22, key_update(KeyUpdateRequest::UpdateNotRequested)),
    ] {
        let mut c = connected();
        let e = c
            .client
            .rejects(&record(typ, 0x0303, &body), A::UnexpectedMessage);
        assert_eq!(e.alert(), Some(A::UnexpectedMessage), "{typ}");
    }
}

#[test]
fn application_data_inside_a_fragmented_key_update_is_unexpected_message() {
    // §5.1: "Handshake messages MUST NOT be interleaved with other record types."
    let mut c = connected();
    let ku = key_update(KeyUpdateRequest::UpdateNotRequested);
    let mut w = c
        .server
        .forge(Epoch::Application(0), ContentType::Handshake, &ku[..2], 0);
    w.extend(
        c.server
            .forge(Epoch::Application(0), ContentType::ApplicationData, b"x", 0),
    );
    let e = c.client.rejects(&w, A::UnexpectedMessage);
    assert_eq!(
        e,
        peer(PeerMisbehaved::UnexpectedContentType(
            ContentType::ApplicationData
        ))
    );
}

#[test]
fn data_after_close_notify_is_ignored() {
    // §6.1: "Any data received after a closure alert has been received MUST be ignored." No
    // error, no alert, no data delivered; and our write side stays open.
    let mut c = connected();
    c.server.tls.send(b"before").unwrap();
    c.server.tls.close();
    let mut w = wire(&c.server.output());
    w.extend(c.server.forge(
        Epoch::Application(0),
        ContentType::ApplicationData,
        b"after",
        0,
    ));
    w.extend(record(23, 0x0303, &[0; 3])); // garbage, even a partial record
    w.extend_from_slice(&[23, 3]);
    c.client.feed(&w).unwrap();
    c.client.feed(b"more garbage").unwrap();
    assert_eq!(c.client.received(), b"before");
    assert!(c.client.output().is_empty());
    assert!(c.client.sent_alerts().is_empty());
    c.client.tls.send(b"reply").unwrap();
    c.server.feed(&wire(&c.client.output())).unwrap();
    assert_eq!(c.server.received(), b"reply");
}

#[test]
fn received_alerts_end_the_connection_without_an_answer() {
    // §6.2: "Upon receiving an error alert, the TLS implementation SHOULD indicate an error to
    // the application and MUST NOT allow any further data to be sent or received"; all alerts
    // but close_notify and user_canceled are errors whatever their level (§6).
    for (level, desc) in [(2u8, 40u8), (1, 40), (2, 255), (1, 10)] {
        let mut c = connected();
        let w = c
            .server
            .forge(Epoch::Application(0), ContentType::Alert, &[level, desc], 0);
        let e = c.client.feed(&w).unwrap_err();
        assert_eq!(e, Error::AlertReceived(A::from(desc)));
        c.client.check_failed(&e);
        assert!(matches!(c.client.tls.send(b"x"), Err(Error::Closed)));
    }
    // During the handshake, a plaintext alert from the server.
    let mut t = ToClient::default();
    let e = t.client.feed(&record(21, 0x0303, &[2, 40])).unwrap_err();
    assert_eq!(e, Error::AlertReceived(A::HandshakeFailure));
    t.client.check_failed(&e);
    // user_canceled is not an error (§6.1).
    let mut c = connected();
    let w = c
        .server
        .forge(Epoch::Application(0), ContentType::Alert, &[1, 90], 0);
    c.client.feed(&w).unwrap();
}

// =============================================================================================
// Sweeps: every record truncated at every length, fed in pieces
// =============================================================================================

/// Where a recorded record is delivered: a fresh endpoint in the right state, replayed from
/// the same seeds.
#[derive(Clone, Copy, Debug)]
enum Stage {
    /// The ClientHello, to a fresh server.
    ClientHello,
    /// The server's first flight, to the client that sent the ClientHello.
    ServerFlight,
    /// The client's second flight, to the server that sent its flight.
    ClientFlight,
    /// Post-handshake records from the server, to a connected client.
    ServerAfter,
}

/// The records of each stage, and how to rebuild the receiver.
struct Sweep {
    stages: Vec<(Stage, Vec<Vec<u8>>)>,
}

fn sweep() -> Sweep {
    let mut c = client_config();
    c.compat_mode = true;
    let s = server_config();
    let mut client = Ep::client(c.clone(), CLIENT_SEED);
    let mut server = Ep::server(s.clone(), SERVER_SEED);
    let ch = client.output();
    server.feed(&wire(&ch)).unwrap();
    let sf = server.output();
    client.feed(&wire(&sf)).unwrap();
    let cf = client.output();
    server.feed(&wire(&cf)).unwrap();
    server.tls.send(b"some application data").unwrap();
    server.tls.key_update(true).unwrap();
    server.tls.send(b"more").unwrap();
    server.tls.close();
    let after = server.output();
    let recs = |v: &[Rec]| v.iter().map(|r| r.wire.clone()).collect::<Vec<_>>();
    Sweep {
        stages: vec![
            (Stage::ClientHello, recs(&ch)),
            (Stage::ServerFlight, recs(&sf)),
            (Stage::ClientFlight, recs(&cf)),
            (Stage::ServerAfter, recs(&after)),
        ],
    }
}

/// Feeds `input` in pieces of `piece` bytes to `ep` and checks the outcome (no panic; an
/// error comes with exactly one alert).
fn feed_checked<R: Role>(mut ep: Ep<R>, input: &[u8], piece: usize) {
    let r = ep.feed_in_pieces(input, piece);
    ep.check_outcome(r);
}

impl Sweep {
    /// [`feed_checked`] into the receiver of `stage`.
    fn feed_checked(&self, stage: Stage, input: &[u8], piece: usize) {
        match stage {
            Stage::ClientHello | Stage::ClientFlight => {
                feed_checked(self.server_receiver(stage), input, piece)
            }
            Stage::ServerFlight | Stage::ServerAfter => {
                feed_checked(self.client_receiver(stage), input, piece)
            }
        }
    }

    /// The server receiving `stage` (ClientHello or ClientFlight), ready for its first record.
    fn server_receiver(&self, stage: Stage) -> Ep<ServerSide> {
        let mut server = fresh_server();
        if let Stage::ClientFlight = stage {
            server.feed(&self.stages[0].1.concat()).unwrap();
        }
        server
    }

    /// The client receiving `stage` (ServerFlight or ServerAfter), ready for its first record.
    fn client_receiver(&self, stage: Stage) -> Ep<ClientSide> {
        let mut c = client_config();
        c.compat_mode = true;
        let mut client = Ep::client(c, CLIENT_SEED);
        client.output();
        if let Stage::ServerAfter = stage {
            client.feed(&self.stages[1].1.concat()).unwrap();
            client.output();
        }
        client
    }
}

/// Delivers each of `recs` truncated at every length, with its header length left alone
/// (only incomplete: no error allowed) or fixed to the cut, fed in pieces of 1, 3 and 1000
/// bytes to a fresh receiver that got the records before it. Returns how many cuts failed.
fn truncate_every_record<R: Role>(
    what: &str,
    recs: &[Vec<u8>],
    receiver: &dyn Fn() -> Ep<R>,
) -> usize {
    let mut errors = 0;
    for (i, rec) in recs.iter().enumerate() {
        let before: Vec<u8> = recs[..i].concat();
        for len in 0..=rec.len() {
            for fix_length in [false, true] {
                if fix_length && len < 5 {
                    continue;
                }
                let mut cut = rec[..len].to_vec();
                if fix_length {
                    let l = (len - 5) as u16;
                    cut[3..5].copy_from_slice(&l.to_be_bytes());
                }
                for piece in [1usize, 3, 1000] {
                    let mut ep = receiver();
                    ep.feed(&before).unwrap();
                    ep.output();
                    let r = ep.feed_in_pieces(&cut, piece);
                    if r.is_err() {
                        errors += 1;
                    }
                    if !fix_length && len < rec.len() {
                        // A cut record is only incomplete.
                        assert!(r.is_ok(), "{what} record {i} cut at {len}: {r:?}");
                    }
                    ep.check_outcome(r);
                }
            }
        }
    }
    errors
}

#[test]
fn every_record_truncated_at_every_length_in_pieces_never_panics() {
    let s = sweep();
    let mut errors = 0;
    for (stage, recs) in &s.stages {
        let what = format!("{stage:?}");
        errors += match stage {
            Stage::ClientHello | Stage::ClientFlight => {
                truncate_every_record(&what, recs, &|| s.server_receiver(*stage))
            }
            Stage::ServerFlight | Stage::ServerAfter => {
                truncate_every_record(&what, recs, &|| s.client_receiver(*stage))
            }
        };
    }
    assert!(errors > 1000, "the sweep must reach errors: {errors}");
}

/// The HelloRetryRequest path: the server's HelloRetryRequest (and CCS) to the client, and the
/// client's [CCS +] second ClientHello to the server.
/// Records of one flight, each as on the wire.
type Flight = Vec<Vec<u8>>;

fn retry_path() -> (
    Flight,
    Flight,
    impl Fn() -> (Ep<ClientSide>, Ep<ServerSide>),
) {
    let make = || {
        let (mut c, mut s) = retry_configs();
        c.compat_mode = true;
        s.hrr_cookie = Some(24);
        let mut client = Ep::client(c, CLIENT_SEED);
        let mut server = Ep::server(s, SERVER_SEED);
        server.feed(&wire(&client.output())).unwrap();
        (client, server)
    };
    let (mut client, mut server) = make();
    let hrr = server.output();
    client.feed(&wire(&hrr)).unwrap();
    let ch2 = client.output();
    let recs = |v: &[Rec]| v.iter().map(|r| r.wire.clone()).collect::<Vec<_>>();
    (recs(&hrr), recs(&ch2), make)
}

#[test]
fn hello_retry_path_truncated_at_every_length_never_panics() {
    let (hrr, ch2, make) = retry_path();
    assert_eq!(hrr.len(), 2, "HelloRetryRequest and CCS");
    let mut errors = truncate_every_record("HelloRetryRequest", &hrr, &|| {
        let (mut c, _) = make();
        c.output();
        c
    });
    errors += truncate_every_record("second ClientHello", &ch2, &|| {
        let (_, mut s) = make();
        s.output();
        s
    });
    // Cut plaintext handshake records with fixed lengths are just incomplete messages; the
    // empty CCS records (one each way) are errors, in each of the three piece sizes.
    assert!(errors >= 6, "{errors}");
}

// =============================================================================================
// Fuzzing (proptest): random bytes and random mutations of real flights
// =============================================================================================

/// One edit of a byte string.
#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Truncate),
    ];
    prop::collection::vec(edit, 1..6)
}

fn apply(mut v: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = v.len().max(1);
        match *e {
            Edit::Flip(i, b) if !v.is_empty() => v[i % n] ^= b,
            Edit::Set(i, b) if !v.is_empty() => v[i % n] = b,
            Edit::Insert(i, b) => v.insert(i % (v.len() + 1), b),
            Edit::Delete(i) if !v.is_empty() => {
                v.remove(i % n);
            }
            Edit::Truncate(i) => v.truncate(i % (v.len() + 1)),
            _ => {}
        }
    }
    v
}

/// A proptest runner with `cases` cases, or `PROPTEST_CASES` when set (for long fuzzing runs).
fn runner(cases: u32) -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    TestRunner::new(PropConfig {
        cases,
        failure_persistence: None,
        ..PropConfig::default()
    })
}

#[test]
fn fuzz_random_bytes_into_both_sides() {
    let s = sweep();
    runner(400)
        .run(
            &(
                prop::collection::vec(any::<u8>(), 0..600),
                0usize..4,
                1usize..64,
            ),
            |(bytes, stage, piece)| {
                let stage = [
                    Stage::ClientHello,
                    Stage::ServerFlight,
                    Stage::ClientFlight,
                    Stage::ServerAfter,
                ][stage];
                // Half the time behind a plausible record header.
                let mut input = bytes.clone();
                if piece % 2 == 0 && !bytes.is_empty() {
                    input = record(bytes[0] % 4 + 20, 0x0303, &bytes);
                }
                s.feed_checked(stage, &input, piece);
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn fuzz_mutated_flights_on_the_wire() {
    let s = sweep();
    runner(600)
        .run(
            &(0usize..4, edits(), 1usize..2000),
            |(stage, edits, piece)| {
                let (st, recs) = &s.stages[stage];
                s.feed_checked(*st, &apply(recs.concat(), &edits), piece);
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn fuzz_mutated_client_hello_messages() {
    // Below the record layer: the ClientHello message itself mutated, in a well-framed record.
    let ch = encode(HandshakePayload::ClientHello(client_hello()));
    runner(600)
        .run(&edits(), |edits| {
            let m = apply(ch.clone(), &edits);
            let mut s = fresh_server();
            let mut w = Vec::new();
            for chunk in m.chunks(1 << 14) {
                w.extend(record(22, 0x0301, chunk));
            }
            let r = s.feed(&w);
            s.check_outcome(r);
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_mutated_server_flight_plaintext_resealed() {
    // Below the protection: the server's encrypted messages decrypted, mutated and re-sealed,
    // so the client parses and judges every mutation instead of failing on the MAC.
    let base = ToClient::default();
    let sh = base.server_hello();
    let content = base.encrypted().concat();
    let keys = base.server_keys();
    runner(600)
        .run(&(edits(), any::<bool>()), |(edits, split)| {
            let m = apply(content.clone(), &edits);
            let mut w = hs_record(&encode(HandshakePayload::ServerHello(sh.clone())));
            if m.is_empty() {
                w.extend(keys.seal(0, ContentType::Handshake, &m, 0));
            } else if split {
                // One message per record boundary is not required: cut in the middle too.
                let cut = m.len() / 2;
                w.extend(keys.seal(0, ContentType::Handshake, &m[..cut.max(1)], 0));
                if cut.max(1) < m.len() {
                    w.extend(keys.seal(1, ContentType::Handshake, &m[cut.max(1)..], 0));
                }
            } else {
                w.extend(keys.seal(0, ContentType::Handshake, &m, 0));
            }
            let mut client = Ep::client(client_config(), CLIENT_SEED);
            client.output();
            let r = client.feed(&w);
            client.check_outcome(r);
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_mutated_client_flight_plaintext_resealed() {
    let (c, s) = client_auth_configs();
    let base = to_server_with(c.clone(), s.clone());
    let content = base.messages().concat();
    let keys = base.client.keys(Side::Client, Epoch::Handshake);
    runner(300)
        .run(&edits(), |edits| {
            let m = apply(content.clone(), &edits);
            let w = keys.seal(0, ContentType::Handshake, &m, 0);
            let mut t = to_server_with(c.clone(), s.clone());
            let r = t.server.feed(&w);
            t.server.check_outcome(r);
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_post_handshake_records() {
    // Random inner content of any type, under the server's application keys.
    runner(300)
        .run(
            &(
                prop::collection::vec(any::<u8>(), 0..80),
                prop::sample::select(vec![20u8, 21, 22, 23, 0, 99]),
                0usize..40,
            ),
            |(content, typ, padding)| {
                let mut c = connected();
                let w = c.server.forge(
                    Epoch::Application(0),
                    ContentType::from(typ),
                    &content,
                    padding,
                );
                let r = c.client.feed(&w);
                c.client.check_outcome(r);
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn fuzz_mutated_hello_retry_messages() {
    // The HelloRetryRequest message mutated, to the client; the second ClientHello message
    // mutated, to the server that asked for it.
    let (hrr, ch2, make) = retry_path();
    let hrr_msg = hrr[0][5..].to_vec();
    let ch2_msg: Vec<u8> = ch2
        .iter()
        .filter(|r| r[0] == 22)
        .flat_map(|r| r[5..].to_vec())
        .collect();
    runner(400)
        .run(&(edits(), any::<bool>()), |(edits, to_client)| {
            let (mut client, mut server) = make();
            let m = apply(
                if to_client {
                    hrr_msg.clone()
                } else {
                    ch2_msg.clone()
                },
                &edits,
            );
            let mut w = Vec::new();
            for chunk in m.chunks(1 << 14) {
                w.extend(hs_record(chunk));
            }
            if to_client {
                server.output();
                feed_checked(client, &w, w.len());
            } else {
                client.feed(&hrr.concat()).unwrap();
                client.output();
                server.output();
                feed_checked(server, &w, w.len());
            }
            Ok(())
        })
        .unwrap();
}

// =============================================================================================
// Resumption and 0-RTT (§4.2.9, §4.2.10, §4.2.11), RFC 8449, and the resource limits
// =============================================================================================

/// Tickets from a full handshake between `c` and `s` (the clone of `s` shares its ticket keys).
fn tickets_for(c: &ClientConfig, s: &ServerConfig) -> tls13lab::session::TicketStore {
    let p = lab::demo::request_response(
        Arc::new(c.clone()),
        Arc::new(s.clone()),
        40,
        NOW,
        b"GET / HTTP/1.0\r\n\r\n",
        b"ok",
        tls13lab::session::TicketStore::default(),
    )
    .expect("a full handshake");
    assert!(!p.client.tickets().is_empty());
    p.client.tickets().clone()
}

/// A client offering one of `tickets`, started at `start_ms` (its clock dates the ticket age).
fn resuming_client(
    mut c: ClientConfig,
    tickets: tls13lab::session::TicketStore,
    start_ms: u64,
) -> Ep<ClientSide> {
    c.observe = tls13lab::Observe::ALL_WITH_SECRETS;
    let mut client = Client::new(Arc::new(c), Box::new(SeededRandom::from_seed(41)))
        .unwrap()
        .with_tickets(tickets);
    client.start(start_ms).unwrap();
    Ep::wrap(client)
}

/// A server config accepting 0-RTT of at most `max_early` bytes, and a client config for it.
fn early_configs(max_early: u32) -> (ClientConfig, ServerConfig) {
    let mut s = server_config();
    s.max_early_data = max_early;
    (client_config(), s)
}

#[test]
fn early_data_over_max_early_data_size_is_unexpected_message() {
    // §4.2.10: "A server which receives more than max_early_data_size bytes of 0-RTT data
    // SHOULD terminate the connection with an "unexpected_message" alert." The ticket allows
    // 1000 bytes: exactly 1000 are delivered, one more is refused.
    for (extra, ok) in [(400usize, true), (401, false)] {
        let (c, s) = early_configs(1000);
        let tickets = tickets_for(&c, &s);
        let mut client = resuming_client(c, tickets, NOW);
        client.tls.send(&[b'a'; 600]).expect("600 bytes of 0-RTT");
        let mut server = Ep::server(s, SERVER_SEED);
        server.feed(&client.raw_output()).unwrap();
        // The client learns the suite from the server's flight; it does not answer yet, so the
        // next record under its early keys has sequence number 1.
        client.feed(&wire(&server.output())).unwrap();
        let more = client.forge(
            Epoch::Early,
            ContentType::ApplicationData,
            &vec![b'b'; extra],
            0,
        );
        if ok {
            server.feed(&more).unwrap();
            assert_eq!(server.early.len(), 1000);
        } else {
            let e = server.rejects(&more, A::UnexpectedMessage);
            assert_eq!(e, peer(PeerMisbehaved::TooMuchEarlyData));
        }
    }
}

#[test]
fn rejected_early_data_is_skipped_within_a_bound() {
    // §4.2.10: a server that rejects 0-RTT skips records it cannot decrypt "up to the configured
    // max_early_data_size"; beyond a bound (16 records of the largest size here) it stops
    // wasting decryptions: unexpected_message, as for too much accepted early data.
    let mut ch = client_hello();
    ch.extensions.push(Extension::EarlyDataEmpty);
    let big = record(23, 0x0303, &vec![0x55; (1 << 14) + 256]);
    let mut s = fresh_server();
    s.feed(&ch_wire(&ch)).unwrap();
    s.output();
    s.feed(&big.repeat(16)).unwrap();
    assert!(s.output().is_empty());
    let e = s.rejects(&big, A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::TooMuchEarlyData));
    // The same bound while the server waits for the second ClientHello after a
    // HelloRetryRequest (no keys at all: the 0-RTT records are plaintext to it, §4.2.10).
    let (c, srv) = retry_configs();
    let mut ch = client_hello_of(c);
    ch.extensions.insert(0, Extension::EarlyDataEmpty);
    let mut s = Ep::server(srv, SERVER_SEED);
    s.feed(&ch_wire(&ch)).unwrap();
    let hrr = s.output();
    assert!(
        matches!(decode(&hrr[0].content), HandshakePayload::ServerHello(sh) if sh.random == HRR_RANDOM)
    );
    s.feed(&big.repeat(16)).unwrap();
    assert!(s.output().is_empty());
    let e = s.rejects(&big, A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::TooMuchEarlyData));
}

#[test]
fn wrong_binder_is_decrypt_error() {
    // §4.2.11.2: "If this value is not present or does not validate, the server MUST abort the
    // handshake." §6.2 decrypt_error: "... unable to ... validate a Finished message or a PSK
    // binder." A flipped bit, and a binder of another (legal) length.
    let (mut c, s) = early_configs(0);
    c.enable_early_data = false;
    let tickets = tickets_for(&c, &s);
    let mut client = resuming_client(c, tickets, NOW + 1000);
    let ch = match decode(&client.output()[0].content) {
        HandshakePayload::ClientHello(ch) => ch,
        other => panic!("{other:?}"),
    };
    let mutations: [fn(&mut Vec<u8>); 3] = [
        |b| b[0] ^= 1,
        |b| {
            let n = b.len();
            b[n - 1] ^= 0x80
        },
        |b| b.extend_from_slice(&[0; 16]),
    ];
    for f in mutations {
        let mut ch = ch.clone();
        match ch.extensions.last_mut() {
            Some(Extension::PreSharedKeyClient(o)) => f(&mut o.binders[0]),
            other => panic!("{other:?}"),
        }
        let mut server = Ep::server(s.clone(), SERVER_SEED);
        let e = server.rejects(&ch_wire(&ch), A::DecryptError);
        assert_eq!(e, peer(PeerMisbehaved::BadBinder));
    }
    // The unchanged ClientHello resumes.
    let mut server = Ep::server(s, SERVER_SEED);
    server.feed(&ch_wire(&ch)).unwrap();
    assert!(server.output().iter().all(|r| r.typ != ContentType::Alert));
}

#[test]
fn ticket_age_out_of_window_rejects_0rtt_and_the_handshake_completes() {
    // §8.3: a ticket age that disagrees with the server's view by more than the window means
    // the ClientHello may be a replay: 0-RTT is refused (§4.2.10: "the server MUST NOT process
    // the early data") but the PSK still resumes the session. The client's clock runs 60 s
    // ahead of the server's (window: 10 s).
    for (skew_ms, accepted) in [(0u64, true), (60_000, false)] {
        let (c, s) = early_configs(16384);
        let tickets = tickets_for(&c, &s);
        let mut client = resuming_client(c, tickets, NOW + skew_ms);
        client.tls.send(b"GET /early").unwrap();
        let mut server = Ep::server(s, SERVER_SEED);
        for _ in 0..4 {
            let w = client.raw_output();
            if !w.is_empty() {
                server.feed(&w).unwrap();
            }
            let w = wire(&server.output());
            if !w.is_empty() {
                client.feed(&w).unwrap();
            }
        }
        assert!(client.tls.is_connected() && server.tls.is_connected());
        let early = !server.early.is_empty();
        assert_eq!(early, accepted, "skew {skew_ms}");
        let rejected = client
            .events
            .iter()
            .any(|e| matches!(e, Event::EarlyDataRejected { .. }));
        assert_eq!(rejected, !accepted, "skew {skew_ms}");
        let resumed = client
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected(n) if n.resumed && n.psk_identity == Some(0)));
        assert!(resumed, "skew {skew_ms}: the PSK is still used");
        assert!(client.sent_alerts().is_empty() && server.sent_alerts().is_empty());
    }
}

#[test]
fn pre_shared_key_without_psk_key_exchange_modes_is_missing_extension() {
    // §4.2.9: "If clients offer "pre_shared_key" without a "psk_key_exchange_modes" extension,
    // servers MUST abort the handshake."; §9.2 names missing_extension for a ClientHello that
    // lacks an extension it must carry.
    let mut ch = client_hello();
    remove_ext(&mut ch.extensions, ExtensionType::PskKeyExchangeModes);
    ch.extensions.push(psk_extension());
    let e = server_rejects(&ch, A::MissingExtension);
    assert_eq!(
        e,
        peer(PeerMisbehaved::MissingExtension(
            ExtensionType::PskKeyExchangeModes
        ))
    );
}

#[test]
fn records_over_our_record_size_limit_are_record_overflow() {
    // RFC 8449 §4: "A TLS endpoint that receives a record larger than its advertised limit MUST
    // generate a fatal "record_overflow" alert"; in TLS 1.3 the limit counts the whole
    // TLSInnerPlaintext: content, content type and padding.
    let pair = || {
        let mut c = client_config();
        c.record_size_limit = Some(100);
        let mut s = server_config();
        s.record_size_limit = Some(200);
        connected_with(c, s)
    };
    // To the client (limit 100): 99 bytes + type fit; 100 + type, or 50 + type + 50 zeros, do not.
    for (content, padding, ok) in [(99usize, 0usize, true), (100, 0, false), (50, 50, false)] {
        let mut c = pair();
        let w = c.server.forge(
            Epoch::Application(0),
            ContentType::ApplicationData,
            &vec![7; content],
            padding,
        );
        if ok {
            c.client.feed(&w).unwrap();
        } else {
            let e = c.client.rejects(&w, A::RecordOverflow);
            assert_eq!(e, Error::Record(RecordError::RecordOverflow));
        }
    }
    // To the server (limit 200), also for handshake content (a KeyUpdate padded past it).
    for (typ, content, padding, ok) in [
        (ContentType::ApplicationData, vec![7u8; 199], 0usize, true),
        (ContentType::ApplicationData, vec![7; 200], 0, false),
        (
            ContentType::Handshake,
            key_update(KeyUpdateRequest::UpdateNotRequested),
            200,
            false,
        ),
    ] {
        let mut c = pair();
        let w = c
            .client
            .forge(Epoch::Application(0), typ, &content, padding);
        if ok {
            c.server.feed(&w).unwrap();
        } else {
            let e = c.server.rejects(&w, A::RecordOverflow);
            assert_eq!(e, Error::Record(RecordError::RecordOverflow));
        }
    }
    // The client's Finished under the handshake keys is held to the server's limit too.
    let mut c = client_config();
    c.record_size_limit = Some(100);
    let mut s = server_config();
    s.record_size_limit = Some(64);
    let mut t = to_server_with(c, s);
    let fin = t.messages().pop().unwrap();
    let w = t.client.keys(Side::Client, Epoch::Handshake).seal(
        0,
        ContentType::Handshake,
        &fin,
        64 - fin.len(),
    );
    let e = t.server.rejects(&w, A::RecordOverflow);
    assert_eq!(e, Error::Record(RecordError::RecordOverflow));
    // Not negotiated (the server does not answer the extension): full-size records are fine.
    let mut c = client_config();
    c.record_size_limit = Some(100);
    let mut p = connected_with(c, server_config());
    let w = p.server.forge(
        Epoch::Application(0),
        ContentType::ApplicationData,
        &vec![7; 1 << 14],
        0,
    );
    p.client.feed(&w).unwrap();
}

#[test]
fn padding_only_records_under_handshake_keys_are_unexpected_message() {
    // §5.4: an inner plaintext of zeros only has no content type: unexpected_message. A
    // Handshake or Alert record with padding but no content is a zero-length fragment (§5.1),
    // and padded but empty application data under handshake keys is premature (§6.2).
    let cases: [(Vec<u8>, Error); 4] = [
        (vec![0; 30], Error::Record(RecordError::NoContentType)),
        (
            [&[22u8][..], &[0; 30]].concat(),
            Error::Record(RecordError::EmptyFragment(ContentType::Handshake)),
        ),
        (
            [&[21u8][..], &[0; 30]].concat(),
            Error::Record(RecordError::EmptyFragment(ContentType::Alert)),
        ),
        (
            [&[23u8][..], &[0; 30]].concat(),
            peer(PeerMisbehaved::ApplicationDataBeforeHandshake),
        ),
    ];
    for (inner, want) in cases {
        // To the server, under the client's handshake keys.
        let mut t = to_server_with(client_config(), server_config());
        let w = t
            .client
            .keys(Side::Client, Epoch::Handshake)
            .seal_inner(0, inner.clone());
        let e = t.server.rejects(&w, A::UnexpectedMessage);
        assert_eq!(e, want);
        // To the client, under the server's handshake keys, after its ServerHello.
        let t = ToClient::default();
        let mut w = hs_record(&t.flight[0].content);
        w.extend(t.server_keys().seal_inner(0, inner));
        let e = t.rejects(&w, A::UnexpectedMessage);
        assert_eq!(e, want);
    }
}

#[test]
fn key_updates_interleaved_with_empty_records_still_count() {
    // Empty application data is not data: it must not reset the KeyUpdate limit (nor does a
    // KeyUpdate, which is handshake content, let empty records run on forever). The server
    // updates its keys 33 times so that every generation's keys are known; the records are
    // then forged: in each generation an empty record, then the KeyUpdate.
    let mut c = connected();
    // The tickets already went out under generation 0.
    let tickets = c
        .server
        .sent_records()
        .iter()
        .filter(|r| r.epoch == Epoch::Application(0) && r.seq.is_some())
        .count() as u64;
    for _ in 0..33 {
        c.server.tls.key_update(false).unwrap();
    }
    c.server.output();
    let ku = key_update(KeyUpdateRequest::UpdateNotRequested);
    let mut w = Vec::new();
    for i in 0..33u64 {
        let k = c.server.keys(Side::Server, Epoch::Application(i));
        let base = if i == 0 { tickets } else { 0 };
        w.extend(k.seal(base, ContentType::ApplicationData, &[], 0));
        w.extend(k.seal(base + 1, ContentType::Handshake, &ku, 0));
    }
    let e = c.client.rejects(&w, A::UnexpectedMessage);
    assert_eq!(e, peer(PeerMisbehaved::TooManyKeyUpdates));
}

#[test]
fn data_after_close_notify_is_ignored_by_the_server_too() {
    // §6.1: "Any data received after a closure alert has been received MUST be ignored."
    let mut c = connected();
    c.client.tls.send(b"request").unwrap();
    c.client.tls.close();
    let mut w = wire(&c.client.output());
    w.extend(c.client.forge(
        Epoch::Application(0),
        ContentType::ApplicationData,
        b"after close",
        0,
    ));
    w.extend(record(24, 0x0303, &[1, 2, 3])); // even a record type that is otherwise fatal
    c.server.feed(&w).unwrap();
    c.server.feed(&[0xff; 100]).unwrap();
    assert_eq!(c.server.received(), b"request");
    assert!(c.server.sent_alerts().is_empty());
}

#[test]
fn ticket_lifetime_over_seven_days_is_illegal_parameter() {
    // §4.6.1: "Servers MUST NOT use any value greater than 604800 seconds (7 days)." A ticket
    // that claims more is an out-of-range field of the message: illegal_parameter (§6.2).
    for (lifetime, ok) in [(604_800u32, true), (604_801, false), (u32::MAX, false)] {
        let mut c = connected();
        let nst = encode(HandshakePayload::NewSessionTicket(NewSessionTicket {
            lifetime,
            age_add: 1,
            nonce: vec![9],
            ticket: vec![1, 2, 3],
            extensions: vec![],
        }));
        let w = c
            .server
            .forge(Epoch::Application(0), ContentType::Handshake, &nst, 0);
        if ok {
            c.client.feed(&w).unwrap();
        } else {
            let e = c.client.rejects(&w, A::IllegalParameter);
            assert_eq!(e, peer(PeerMisbehaved::TicketLifetimeTooLong));
        }
    }
}

// =============================================================================================
// Post-handshake client authentication (§4.6.2)
// =============================================================================================

/// A connected pair whose client offers post_handshake_auth (with its certificate when
/// `with_cert`) and whose server may ask with `auth`.
fn pha_connected(auth: ClientAuth, with_cert: bool) -> Connected {
    let mut c = client_config();
    if with_cert {
        c.client_cert = Some(util::client_identity().0);
    } else {
        c.post_handshake_auth = Some(true);
    }
    let mut s = server_config();
    s.post_handshake_auth = auth;
    connected_with(c, s)
}

/// The server asks with `context`; returns the client's honest answer, not delivered: its
/// handshake messages (Certificate, [CertificateVerify,] Finished), in order.
fn pha_answer(c: &mut Connected, context: &[u8]) -> Vec<Vec<u8>> {
    c.server
        .tls
        .request_client_certificate(Some(context))
        .unwrap();
    c.client.feed(&wire(&c.server.output())).unwrap();
    let recs = c.client.output();
    let content: Vec<u8> = recs
        .iter()
        .filter(|r| r.typ == ContentType::Handshake)
        .flat_map(|r| r.content.clone())
        .collect();
    split_messages(&content)
}

/// `msgs` in one record under the client's first application keys, at sequence number `seq`
/// (the client sent no application record before).
fn pha_seal(c: &Connected, seq: u64, msgs: &[Vec<u8>]) -> Vec<u8> {
    c.client.keys(Side::Client, Epoch::Application(0)).seal(
        seq,
        ContentType::Handshake,
        &msgs.concat(),
        0,
    )
}

fn pha_events(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::PostHandshakeAuth { .. }))
        .count()
}

#[test]
fn post_handshake_answer_resealed_is_accepted() {
    // The harness itself: the honest answer, re-sealed, verifies, so each rejection below is
    // caused by its mutation alone.
    let mut c = pha_connected(ClientAuth::Required(vec![util::client_identity().1]), true);
    let msgs = pha_answer(&mut c, b"ctx");
    let types: Vec<u8> = msgs.iter().map(|m| m[0]).collect();
    assert_eq!(
        types,
        [11, 15, 20],
        "Certificate, CertificateVerify, Finished"
    );
    c.server.feed(&pha_seal(&c, 0, &msgs)).unwrap();
    assert_eq!(pha_events(&c.server.events), 1);
    assert!(c.server.output().is_empty());
}

#[test]
fn certificate_request_to_a_client_without_post_handshake_auth_is_unexpected_message() {
    // §4.2.6: "A client that receives a CertificateRequest message without having sent the
    // "post_handshake_auth" extension MUST send an "unexpected_message" fatal alert."
    let mut c = connected();
    let cr = encode(HandshakePayload::CertificateRequest(CertificateRequest {
        context: b"ctx".to_vec(),
        extensions: vec![Extension::SignatureAlgorithms(vec![
            SignatureScheme::ecdsa_secp256r1_sha256,
        ])],
    }));
    let w = c
        .server
        .forge(Epoch::Application(0), ContentType::Handshake, &cr, 0);
    let e = c.client.rejects(&w, A::UnexpectedMessage);
    assert!(matches!(
        e,
        Error::Peer(PeerMisbehaved::UnexpectedMessage {
            got: HandshakeType::CertificateRequest,
            ..
        })
    ));
}

#[test]
fn post_handshake_certificate_request_without_signature_algorithms_is_missing_extension() {
    // §4.3.2: "The "signature_algorithms" extension MUST be specified"; §9.2 missing_extension.
    let mut c = pha_connected(ClientAuth::InsecureAcceptAny { required: false }, true);
    let cr = encode(HandshakePayload::CertificateRequest(CertificateRequest {
        context: b"ctx".to_vec(),
        // The list cannot be empty (§4.3.2 `extensions<2..2^16-1>`): an unknown extension
        // stands for "anything but signature_algorithms".
        extensions: vec![Extension::Unknown {
            typ: ExtensionType::from(0x7a7a),
            body: Vec::new(),
        }],
    }));
    let w = c
        .server
        .forge(Epoch::Application(0), ContentType::Handshake, &cr, 0);
    let e = c.client.rejects(&w, A::MissingExtension);
    assert_eq!(
        e,
        peer(PeerMisbehaved::MissingExtension(
            ExtensionType::SignatureAlgorithms
        ))
    );
}

/// The client's Certificate with its context replaced.
fn with_context(cert: &[u8], context: &[u8]) -> Vec<u8> {
    match decode(cert) {
        HandshakePayload::Certificate(mut c) => {
            c.context = context.to_vec();
            encode(HandshakePayload::Certificate(c))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn post_handshake_certificate_with_a_context_never_sent_is_illegal_parameter() {
    // §4.4.2: certificate_request_context echoes the CertificateRequest answered; §4.3.2 makes
    // it the server's means to tell answers apart. One we never sent answers nothing of ours.
    for other in [&b""[..], b"cty", b"ctx-longer"] {
        let mut c = pha_connected(ClientAuth::InsecureAcceptAny { required: false }, true);
        let mut msgs = pha_answer(&mut c, b"ctx");
        msgs[0] = with_context(&msgs[0], other);
        let e = c
            .server
            .rejects(&pha_seal(&c, 0, &msgs), A::IllegalParameter);
        assert_eq!(
            e,
            peer(PeerMisbehaved::IllegalExtension(
                "certificate_request_context"
            ))
        );
    }
}

#[test]
fn post_handshake_answer_repeated_is_illegal_parameter() {
    // An answer replayed for a context already answered, while another request is outstanding:
    // each context is answered once (§4.3.2 "unique").
    let mut c = pha_connected(ClientAuth::InsecureAcceptAny { required: false }, true);
    let first = pha_answer(&mut c, b"one");
    c.server.feed(&pha_seal(&c, 0, &first)).unwrap();
    assert_eq!(pha_events(&c.server.events), 1);
    let _second = pha_answer(&mut c, b"two");
    let e = c
        .server
        .rejects(&pha_seal(&c, 1, &first), A::IllegalParameter);
    assert_eq!(
        e,
        peer(PeerMisbehaved::IllegalExtension(
            "certificate_request_context"
        ))
    );
}

#[test]
fn post_handshake_certificate_verify_wrong_is_decrypt_error() {
    // §4.4.3: "If the verification fails, the receiver MUST terminate the handshake with a
    // "decrypt_error" alert." The signature covers the post-handshake context (§4.4.1).
    let probe = pha_answer(
        &mut pha_connected(ClientAuth::InsecureAcceptAny { required: false }, true),
        b"ctx",
    );
    for i in [8, 12, 40, probe[1].len() - 1] {
        let mut c = pha_connected(ClientAuth::InsecureAcceptAny { required: false }, true);
        let mut msgs = pha_answer(&mut c, b"ctx");
        msgs[1][i] ^= 0x01;
        let e = c.server.rejects(&pha_seal(&c, 0, &msgs), A::DecryptError);
        assert_eq!(e, peer(PeerMisbehaved::BadCertificateVerify), "byte {i}");
    }
}

#[test]
fn post_handshake_finished_wrong_is_decrypt_error() {
    // §4.4.4: "Recipients of Finished messages MUST verify that the contents are correct and
    // if incorrect MUST terminate the connection with a "decrypt_error" alert."
    for (byte, bit) in [(4, 0), (17, 5), (35, 7)] {
        let mut c = pha_connected(ClientAuth::InsecureAcceptAny { required: false }, true);
        let mut msgs = pha_answer(&mut c, b"ctx");
        msgs[2][byte] ^= 1 << bit;
        let e = c.server.rejects(&pha_seal(&c, 0, &msgs), A::DecryptError);
        assert_eq!(e, peer(PeerMisbehaved::BadFinished));
    }
}

#[test]
fn post_handshake_finished_under_the_handshake_finished_key_is_decrypt_error() {
    // §4.4.4: after the handshake the Finished key is derived from
    // client_application_traffic_secret_N, not the handshake secret: the Finished of an
    // implementation that keeps the old key is caught.
    let mut c = pha_connected(ClientAuth::InsecureAcceptAny { required: false }, true);
    let mut msgs = pha_answer(&mut c, b"ctx");
    // The client's handshake Finished is the same length, computed with the wrong key.
    let handshake_fin = util::handshake_messages(
        &c.client.events,
        tls13lab::events::Direction::ClientToServer,
    )
    .into_iter()
    .find(|(t, _)| *t == HandshakeType::Finished)
    .unwrap()
    .1;
    msgs[2] = handshake_fin;
    let e = c.server.rejects(&pha_seal(&c, 0, &msgs), A::DecryptError);
    assert_eq!(e, peer(PeerMisbehaved::BadFinished));
}

#[test]
fn post_handshake_empty_certificate_when_required_is_certificate_required() {
    // §4.4.2.4: "If the client does not send any certificates ..., the server MAY ... abort
    // the handshake with a "certificate_required" alert."
    let mut c = pha_connected(ClientAuth::InsecureAcceptAny { required: true }, false);
    let msgs = pha_answer(&mut c, b"ctx");
    assert_eq!(msgs.len(), 2, "empty Certificate and Finished");
    let e = c
        .server
        .rejects(&pha_seal(&c, 0, &msgs), A::CertificateRequired);
    assert_eq!(e, peer(PeerMisbehaved::NoClientCertificate));
}

#[test]
fn unsolicited_post_handshake_certificate_and_finished_are_unexpected_message() {
    // §4.6.2: the client sends Certificate, CertificateVerify, Finished only in answer to a
    // CertificateRequest; a server that did not ask gets none (§6.2 unexpected_message). Whether
    // or not the server could have asked.
    for could_ask in [false, true] {
        let auth = if could_ask {
            ClientAuth::InsecureAcceptAny { required: false }
        } else {
            ClientAuth::None
        };
        for msg in [
            encode(HandshakePayload::Certificate(CertificatePayload {
                context: b"ctx".to_vec(),
                entries: Vec::new(),
            })),
            encode(HandshakePayload::Finished(vec![0; 32])),
        ] {
            let mut c = pha_connected(auth.clone(), true);
            let w = c
                .client
                .forge(Epoch::Application(0), ContentType::Handshake, &msg, 0);
            let e = c.server.rejects(&w, A::UnexpectedMessage);
            assert!(
                matches!(e, Error::Peer(PeerMisbehaved::UnexpectedMessage { .. })),
                "{e:?}"
            );
        }
    }
}

#[test]
fn post_handshake_answer_out_of_order_is_unexpected_message() {
    // After a non-empty Certificate only its CertificateVerify may come (§4.4): a Finished or a
    // KeyUpdate in between is unexpected_message.
    for cut in ["finished first", "key update between"] {
        let mut c = pha_connected(ClientAuth::InsecureAcceptAny { required: false }, true);
        let mut msgs = pha_answer(&mut c, b"ctx");
        match cut {
            "finished first" => {
                msgs.remove(1);
            }
            _ => msgs.insert(1, key_update(KeyUpdateRequest::UpdateNotRequested)),
        }
        let e = c
            .server
            .rejects(&pha_seal(&c, 0, &msgs), A::UnexpectedMessage);
        assert!(
            matches!(e, Error::Peer(PeerMisbehaved::UnexpectedMessage { .. })),
            "{cut}: {e:?}"
        );
    }
}

#[cfg(feature = "cert-compression")]
mod cert_compression {
    use super::*;

    // =============================================================================================
    // Certificate compression (RFC 8879)
    // =============================================================================================

    /// The server's Certificate replaced by a CompressedCertificate that `make` builds from the
    /// Certificate's body; the client (configured with `ccfg`) must refuse it with `want`.
    #[track_caller]
    fn client_rejects_compressed(
        ccfg: ClientConfig,
        make: impl FnOnce(&[u8]) -> tls13lab::messages::CompressedCertificate,
        want: A,
    ) -> Error {
        let t = ToClient::new(ccfg, server_config());
        let mut msgs = t.encrypted();
        let c = index_of(&msgs, HandshakeType::Certificate);
        msgs[c] = encode(HandshakePayload::CompressedCertificate(make(&msgs[c][4..])));
        let w = t.wire_msgs(&msgs);
        t.rejects(&w, want)
    }

    fn compressed(
        algorithm: tls13lab::messages::CertificateCompressionAlgorithm,
        uncompressed_length: usize,
        data: Vec<u8>,
    ) -> tls13lab::messages::CompressedCertificate {
        tls13lab::messages::CompressedCertificate {
            algorithm,
            uncompressed_length: uncompressed_length as u32,
            compressed_certificate_message: data,
        }
    }

    #[test]
    fn compressed_certificate_over_the_certificate_limit_is_bad_certificate() {
        // RFC 8879 §5: "they MUST apply the same limit as if no compression were used"; refused on
        // the declared length, before any decompression (the data here is not even valid).
        use tls13lab::messages::CertificateCompressionAlgorithm as C;
        let limit = client_config().max_handshake_message;
        for alg in [C::Zlib, C::Brotli, C::Zstd] {
            let e = client_rejects_compressed(
                client_config(),
                |_| compressed(alg, limit + 1, vec![0xff; 16]),
                A::BadCertificate,
            );
            assert_eq!(e, peer(PeerMisbehaved::CompressedCertificateTooLarge));
        }
        // At the limit the length is allowed, and then the data is what fails.
        let e = client_rejects_compressed(
            client_config(),
            |_| compressed(C::Zlib, limit, vec![0xff; 16]),
            A::BadCertificate,
        );
        assert!(matches!(
            e,
            Error::Peer(PeerMisbehaved::BadCompressedCertificate(_))
        ));
    }

    /// The client's Certificate (with client authentication, compression offered in the
    /// CertificateRequest) replaced by `msg`; the server must refuse it with bad_certificate.
    #[track_caller]
    fn server_rejects_compressed_as_bad_certificate(msg: Vec<u8>) -> Error {
        let (c, mut s) = client_auth_configs();
        s.cert_compression = tls13lab::certcomp::supported().to_vec();
        let mut t = to_server_with(c, s);
        let mut msgs = t.messages();
        // The client compressed its certificate, as the CertificateRequest offered.
        let i = index_of(&msgs, HandshakeType::CompressedCertificate);
        msgs[i] = msg;
        let w = t.seal(&msgs);
        t.server.rejects(&w, A::BadCertificate)
    }

    /// The 4-byte header of a CompressedCertificate declaring a `len`-byte body, and the start
    /// of that body: what a peer has sent when the first record of a huge message arrives.
    fn compressed_header(len: usize) -> Vec<u8> {
        let mut m = vec![25, (len >> 16) as u8, (len >> 8) as u8, len as u8];
        m.extend([0, 1, 0, 0x10, 0]);
        m.extend(vec![0x78; 200]);
        m
    }

    #[test]
    fn compressed_certificate_over_the_message_limit_is_bad_certificate_both_ways() {
        // RFC 8879 §4: "If the received CompressedCertificate message cannot be decompressed, the
        // connection MUST be terminated with the "bad_certificate" alert." A message longer than
        // we buffer (64 KiB) is refused on its header, so it is never decompressed: the alert is
        // RFC 8879's, not the decode_error other oversized messages get
        // (oversized_handshake_messages_are_refused_on_their_header). The lengths are the
        // conformance suite's: just over the limit, 1.6 MB, and the largest a u24 holds.
        let max = client_config().max_handshake_message;
        assert_eq!(max, server_config().max_handshake_message);
        for len in [max + 1, 1_600_000, (1 << 24) - 1] {
            let want = Error::Record(RecordError::HandshakeTooLarge {
                typ: HandshakeType::CompressedCertificate,
                len,
                max,
            });
            // From a server, in place of its Certificate.
            let t = ToClient::default();
            let mut msgs = t.encrypted();
            let c = index_of(&msgs, HandshakeType::Certificate);
            msgs.truncate(c);
            msgs.push(compressed_header(len));
            let w = t.wire_msgs(&msgs);
            assert_eq!(
                t.rejects(&w, A::BadCertificate),
                want,
                "to the client, {len}"
            );
            // From a client, as its certificate.
            let e = server_rejects_compressed_as_bad_certificate(compressed_header(len));
            assert_eq!(e, want, "to the server, {len}");
        }
    }

    #[test]
    fn compressed_client_certificate_over_the_certificate_limit_is_bad_certificate() {
        // RFC 8879 §5 at the server: a client's uncompressed_length over our Certificate limit
        // is refused before decompressing, and a bomb is cut one byte past its declared length.
        use tls13lab::certcomp::compress;
        use tls13lab::messages::CertificateCompressionAlgorithm as C;
        let limit = server_config().max_handshake_message;
        for alg in [C::Zlib, C::Brotli, C::Zstd] {
            let msg = encode(HandshakePayload::CompressedCertificate(compressed(
                alg,
                limit + 1,
                vec![0xff; 16],
            )));
            let e = server_rejects_compressed_as_bad_certificate(msg);
            assert_eq!(
                e,
                peer(PeerMisbehaved::CompressedCertificateTooLarge),
                "{alg}"
            );
        }
        let bomb = encode(HandshakePayload::CompressedCertificate(compressed(
            C::Zlib,
            1000,
            compress(C::Zlib, &vec![0; 1 << 20]).unwrap(),
        )));
        let e = server_rejects_compressed_as_bad_certificate(bomb);
        assert_eq!(
            e,
            peer(PeerMisbehaved::BadCompressedCertificate(
                "decompresses to more than uncompressed_length"
            ))
        );
    }

    #[test]
    fn compressed_certificate_longer_than_declared_is_bad_certificate() {
        // RFC 8879 §5: "MUST abort the connection if the size of the output of the decompression
        // function exceeds that limit". A bomb (1 KiB of zlib expanding to 1 MiB) declared as the
        // real body's length, and the real body declared one byte short, for each algorithm.
        use tls13lab::certcomp::compress;
        use tls13lab::messages::CertificateCompressionAlgorithm as C;
        let e = client_rejects_compressed(
            client_config(),
            |body| {
                compressed(
                    C::Zlib,
                    body.len(),
                    compress(C::Zlib, &vec![0; 1 << 20]).unwrap(),
                )
            },
            A::BadCertificate,
        );
        assert_eq!(
            e,
            peer(PeerMisbehaved::BadCompressedCertificate(
                "decompresses to more than uncompressed_length"
            ))
        );
        for alg in [C::Zlib, C::Brotli, C::Zstd] {
            let e = client_rejects_compressed(
                client_config(),
                |body| compressed(alg, body.len() - 1, compress(alg, body).unwrap()),
                A::BadCertificate,
            );
            assert_eq!(
                e,
                peer(PeerMisbehaved::BadCompressedCertificate(
                    "decompresses to more than uncompressed_length"
                )),
                "{alg}"
            );
        }
    }

    #[test]
    fn compressed_certificate_shorter_than_declared_is_bad_certificate() {
        // RFC 8879 §4: "If after decompression the specified length does not match the actual
        // length, the party receiving the invalid message MUST abort the connection with the
        // "bad_certificate" alert."
        use tls13lab::certcomp::compress;
        use tls13lab::messages::CertificateCompressionAlgorithm as C;
        for alg in [C::Zlib, C::Brotli, C::Zstd] {
            let e = client_rejects_compressed(
                client_config(),
                |body| compressed(alg, body.len() + 1, compress(alg, body).unwrap()),
                A::BadCertificate,
            );
            assert_eq!(
                e,
                peer(PeerMisbehaved::BadCompressedCertificate(
                    "decompresses to less than uncompressed_length"
                )),
                "{alg}"
            );
        }
    }

    #[test]
    fn compressed_certificate_that_does_not_decompress_is_bad_certificate() {
        // RFC 8879 §4: "If the received CompressedCertificate message cannot be decompressed, the
        // connection MUST be terminated with the "bad_certificate" alert." Garbage, a stream cut
        // short, and a valid stream with a byte after it.
        use tls13lab::certcomp::compress;
        use tls13lab::messages::CertificateCompressionAlgorithm as C;
        for alg in [C::Zlib, C::Brotli, C::Zstd] {
            for case in 0..3 {
                let e = client_rejects_compressed(
                    client_config(),
                    |body| {
                        let mut data = compress(alg, body).unwrap();
                        match case {
                            0 => data = vec![0xff; 40],
                            1 => data.truncate(data.len() / 2),
                            _ => data.push(0),
                        }
                        compressed(alg, body.len(), data)
                    },
                    A::BadCertificate,
                );
                assert!(
                    matches!(e, Error::Peer(PeerMisbehaved::BadCompressedCertificate(_))),
                    "{alg} case {case}: {e:?}"
                );
            }
        }
    }

    #[test]
    fn compressed_certificate_in_an_algorithm_not_offered_is_illegal_parameter() {
        // RFC 8879 §4: the algorithm "MUST be one of the algorithms listed in the peer's
        // compress_certificate extension"; a field inconsistent with the handshake (RFC 8446 §6.2).
        use tls13lab::certcomp::compress;
        use tls13lab::messages::CertificateCompressionAlgorithm as C;
        let mut ccfg = client_config();
        ccfg.cert_compression = vec![C::Brotli];
        let e = client_rejects_compressed(
            ccfg,
            |body| compressed(C::Zlib, body.len(), compress(C::Zlib, body).unwrap()),
            A::IllegalParameter,
        );
        assert_eq!(
            e,
            peer(PeerMisbehaved::UnofferedCompressionAlgorithm(C::Zlib))
        );
        // An unknown code point we did not offer either.
        let e = client_rejects_compressed(
            client_config(),
            |body| compressed(C::Unknown(0x4001), body.len(), vec![1]),
            A::IllegalParameter,
        );
        assert_eq!(
            e,
            peer(PeerMisbehaved::UnofferedCompressionAlgorithm(C::Unknown(
                0x4001
            )))
        );
    }

    #[test]
    fn unsolicited_compressed_certificate_is_unexpected_message() {
        // RFC 8879 §4: compressed only "if the peer has indicated that it supports compression";
        // a client that offered none did not expect one (RFC 8446 §6.2 unexpected_message). And a
        // server that offered none in its CertificateRequest (none configured) likewise.
        use tls13lab::certcomp::compress;
        use tls13lab::messages::CertificateCompressionAlgorithm as C;
        let mut ccfg = client_config();
        ccfg.cert_compression = Vec::new();
        let e = client_rejects_compressed(
            ccfg,
            |body| compressed(C::Zlib, body.len(), compress(C::Zlib, body).unwrap()),
            A::UnexpectedMessage,
        );
        assert_eq!(
            e,
            peer(PeerMisbehaved::UnexpectedMessage {
                expected: "Certificate",
                got: HandshakeType::CompressedCertificate
            })
        );
    }
}

// =============================================================================================
// ECH at the server (RFC 9849 §5, §7): ClientHelloOuter sealed here with HPKE directly
// =============================================================================================

mod ech_server {
    use super::*;
    use tls13lab::crypto::ech::{EchKeyPair, EchKeyParams};
    use tls13lab::crypto::hash::HashAlg;
    use tls13lab::crypto::hpke::{self, Kem, SenderContext};
    use tls13lab::ech::confirm::{self, ACCEPT_LABEL, HRR_ACCEPT_LABEL};
    use tls13lab::ech::wire::{encode_outer_extensions, EchClientHello, ECH_OUTER_EXTENSIONS};
    use tls13lab::ech::EchError;
    use tls13lab::events::EchStatus;
    use tls13lab::keyschedule::NoSink;
    use tls13lab::messages::ech::HpkeSymmetricCipherSuite;
    use tls13lab::messages::enums::{HpkeAeadId, HpkeKdfId};

    const CONFIG_ID: u8 = 7;
    const SUITE: HpkeSymmetricCipherSuite = HpkeSymmetricCipherSuite {
        kdf_id: HpkeKdfId::HkdfSha256,
        aead_id: HpkeAeadId::Aes128Gcm,
    };
    const ECH: ExtensionType = ExtensionType::EncryptedClientHello;

    fn key() -> EchKeyPair {
        let params = EchKeyParams {
            public_name: "public.example".into(),
            kem: Kem::X25519HkdfSha256,
            suites: vec![SUITE],
            config_id: Some(CONFIG_ID),
            maximum_name_length: 0,
        };
        EchKeyPair::generate(&params, &mut SeededRandom::from_seed(40)).unwrap()
    }

    fn ech_server_config(groups: Option<Vec<NamedGroup>>) -> ServerConfig {
        let mut s = server_config();
        s.ech_keys = vec![key()];
        if let Some(g) = groups {
            s.groups = g;
        }
        s
    }

    fn ext(typ: ExtensionType, body: Vec<u8>) -> Extension {
        Extension::Unknown { typ, body }
    }

    fn outer_ext(config_id: u8, enc: Vec<u8>, payload: Vec<u8>) -> Extension {
        outer_ext_in(SUITE, config_id, enc, payload)
    }

    fn outer_ext_in(
        suite: HpkeSymmetricCipherSuite,
        config_id: u8,
        enc: Vec<u8>,
        payload: Vec<u8>,
    ) -> Extension {
        let e = EchClientHello::Outer {
            suite,
            config_id,
            enc,
            payload,
        };
        ext(ECH, e.encode())
    }

    /// Our client's ClientHello as ClientHelloInner: the inner-type ECH extension added.
    fn inner_hello() -> ClientHello {
        let mut ch = client_hello();
        ch.extensions.push(ext(ECH, vec![1]));
        ch
    }

    /// EncodedClientHelloInner made by hand so that every §5.1 rule can be broken: session id
    /// emptied, the key_share replaced by an `ech_outer_extensions` naming `refs`, `padding`
    /// appended.
    fn encoded(inner: &ClientHello, refs: &[u16], padding: &[u8]) -> Vec<u8> {
        let mut e = inner.clone();
        e.legacy_session_id.clear();
        if let Some(i) = e
            .extensions
            .iter()
            .position(|x| x.typ() == ExtensionType::KeyShare)
        {
            e.extensions[i] = ext(
                ExtensionType::Unknown(ECH_OUTER_EXTENSIONS),
                encode_outer_extensions(refs),
            );
        }
        let mut b = encode(HandshakePayload::ClientHello(e))[4..].to_vec();
        b.extend_from_slice(padding);
        b
    }

    /// ClientHelloOuter around `encoded`: the inner's fields with another random and SNI, the
    /// outer ECH extension in place of the inner one, payload sealed over the AAD (§5.2).
    fn seal_outer(
        inner: &ClientHello,
        encoded: &[u8],
        enc_ctx: Option<&mut SenderContext>,
        seed: u64,
        config_id: u8,
    ) -> (ClientHello, Option<SenderContext>) {
        let k = key();
        let mut outer = inner.clone();
        outer.random = [0x5a; 32];
        set_ext(
            &mut outer.extensions,
            Extension::ServerName(vec![tls13lab::messages::extensions::ServerName {
                typ: tls13lab::messages::enums::ServerNameType::HostName,
                name: b"public.example".to_vec(),
            }]),
        );
        let suite = hpke::Suite::from_ids(
            tls13lab::messages::enums::HpkeKemId::DhkemX25519HkdfSha256,
            SUITE.kdf_id,
            SUITE.aead_id,
        )
        .unwrap();
        let mut info = b"tls ech\0".to_vec();
        info.extend_from_slice(&k.config.raw);
        let (enc, mut fresh) = match enc_ctx {
            Some(_) => (Vec::new(), None),
            None => {
                let (enc, ctx) = hpke::setup_base_s(
                    suite,
                    k.key.public_key(),
                    &info,
                    &mut SeededRandom::from_seed(seed),
                    &mut NoSink,
                )
                .unwrap();
                (enc, Some(ctx))
            }
        };
        let len = encoded.len() + 16;
        set_ext(
            &mut outer.extensions,
            outer_ext(config_id, enc.clone(), vec![0; len]),
        );
        let aad = encode(HandshakePayload::ClientHello(outer.clone()))[4..].to_vec();
        let ctx = match (enc_ctx, fresh.as_mut()) {
            (Some(c), _) => c,
            (None, Some(c)) => c,
            _ => unreachable!(),
        };
        let payload = ctx.seal(&aad, encoded).unwrap();
        set_ext(&mut outer.extensions, outer_ext(config_id, enc, payload));
        (outer, fresh)
    }

    fn sealed(inner: &ClientHello, refs: &[u16], padding: &[u8]) -> ClientHello {
        seal_outer(inner, &encoded(inner, refs, padding), None, 41, CONFIG_ID).0
    }

    const KS: u16 = 0x0033;

    fn ech_rejects(ch: &ClientHello, want: A) -> Error {
        Ep::server(ech_server_config(None), SERVER_SEED).rejects(&ch_wire(ch), want)
    }

    fn ech_status(events: &[Event]) -> Option<EchStatus> {
        events.iter().find_map(|e| match e {
            Event::Ech(e) => Some(e.status),
            _ => None,
        })
    }

    /// The `encrypted_client_hello` of the EncryptedExtensions a server sent (which it must
    /// have sent), if any.
    fn ee_ech(events: &[Event]) -> Option<Vec<u8>> {
        let ee = events
            .iter()
            .find_map(|e| match e {
                Event::Handshake(h) if h.typ == HandshakeType::EncryptedExtensions => {
                    Some(h.bytes.clone())
                }
                _ => None,
            })
            .expect("EncryptedExtensions sent");
        let HandshakePayload::EncryptedExtensions(exts) = decode(&ee) else {
            panic!("EncryptedExtensions");
        };
        exts.iter().find_map(|e| match e {
            Extension::Unknown { typ, body } if *typ == ECH => Some(body.clone()),
            _ => None,
        })
    }

    #[test]
    fn a_sealed_inner_hello_is_accepted_and_confirmed_and_replays() {
        let inner = inner_hello();
        let outer = sealed(&inner, &[KS], &[0; 13]);
        let run = || {
            let mut s = Ep::server(ech_server_config(None), SERVER_SEED);
            s.feed(&ch_wire(&outer)).expect("accepted");
            let recs = s.output();
            (s, recs)
        };
        let (s, recs) = run();
        assert_eq!(ech_status(&s.events), Some(EchStatus::Accepted));
        // The inner hello the server answers is ours byte for byte (the key_share came back
        // from the outer), and the event shows it beside the outer.
        let inner_msg = encode(HandshakePayload::ClientHello(inner.clone()));
        let shown = s.events.iter().find_map(|e| match e {
            Event::InnerClientHello(h) => Some(h.bytes.clone()),
            _ => None,
        });
        assert_eq!(shown.as_deref(), Some(inner_msg.as_slice()));
        // §7.2: the last 8 bytes of ServerHello.random, recomputed here.
        let sh = split_messages(&recs[0].content).remove(0);
        let zero = confirm::zero_server_hello(&sh).unwrap();
        let th = HashAlg::Sha256.hash(&[inner_msg.as_slice(), &zero].concat());
        let want = confirm::confirmation(HashAlg::Sha256, &inner.random, ACCEPT_LABEL, th.as_ref());
        assert_eq!(&sh[confirm::server_hello_range()], want.as_slice());
        // The server answered the inner hello: it echoes the inner session id and its
        // ServerHello is not that of the outer.
        assert!(s.events.iter().any(|e| matches!(e,
            Event::Secret(x) if x.nss_label == "ECH_SECRET" && x.client_random == outer.random)));
        // Replay: the same seeds, the same bytes.
        let (_, again) = run();
        assert_eq!(wire(&recs), wire(&again));
        // A server without ECH keys answers the same hello as ClientHelloOuter (a rejection)
        // and, having no configs, sends no retry_configs (§7.1).
        let mut s = Ep::server(server_config(), SERVER_SEED);
        s.feed(&ch_wire(&outer)).expect("answered as outer");
        assert_eq!(ech_status(&s.events), Some(EchStatus::Rejected));
        assert_eq!(ee_ech(&s.events), None);
    }

    #[test]
    fn a_stale_config_is_rejected_with_retry_configs() {
        let inner = inner_hello();
        // Sealed to our key under another config_id: no candidate (trial decryption is off).
        let enc = encoded(&inner, &[KS], &[]);
        let outer = seal_outer(&inner, &enc, None, 41, CONFIG_ID + 1).0;
        let mut s = Ep::server(ech_server_config(None), SERVER_SEED);
        s.feed(&ch_wire(&outer)).expect("answered as outer");
        assert_eq!(ech_status(&s.events), Some(EchStatus::Rejected));
        assert_eq!(ee_ech(&s.events), Some(key().list.encode()));
        // With trial decryption the same hello opens.
        let mut cfg = ech_server_config(None);
        cfg.ech_trial_decrypt = true;
        let mut s = Ep::server(cfg, SERVER_SEED);
        s.feed(&ch_wire(&outer)).expect("trial decryption");
        assert_eq!(ech_status(&s.events), Some(EchStatus::Accepted));
    }

    /// A server with ECH keys: every §5/§7 check on the extension itself is fatal.
    #[test]
    fn malformed_or_misplaced_ech_extensions() {
        let mut ch = client_hello();
        // An inner-type extension from the network (§7): illegal_parameter.
        ch.extensions.push(ext(ECH, vec![1]));
        let e = ech_rejects(&ch, A::IllegalParameter);
        assert!(
            matches!(e, Error::Peer(PeerMisbehaved::Ech(EchError::Illegal(_)))),
            "{e:?}"
        );
        // An unknown ECHClientHelloType: illegal_parameter.
        set_ext(&mut ch.extensions, ext(ECH, vec![2, 0, 1]));
        ech_rejects(&ch, A::IllegalParameter);
        // Truncated, empty, trailing bytes: decode_error.
        for body in [vec![0, 0, 1], vec![], {
            let mut b = EchClientHello::Outer {
                suite: SUITE,
                config_id: 1,
                enc: vec![1; 32],
                payload: vec![2; 20],
            }
            .encode();
            b.push(0);
            b
        }] {
            set_ext(&mut ch.extensions, ext(ECH, body.clone()));
            ech_rejects(&ch, A::DecodeError);
        }
    }

    /// A server without ECH keys does not implement ECH (`ServerConfig::ech_keys`): whatever
    /// the `encrypted_client_hello` holds, it is ignored as RFC 8446 §4.2 ignores an unknown
    /// extension, and ClientHelloOuter is answered (RFC 9849 §7 "rejecting ECH") without
    /// retry_configs, in the first ClientHello and after a HelloRetryRequest. The ECH event
    /// reports a rejection, with the config_id when the extension parses as an outer one.
    #[test]
    fn a_server_without_ech_keys_ignores_any_encrypted_client_hello() {
        let outer = EchClientHello::Outer {
            suite: SUITE,
            config_id: CONFIG_ID,
            enc: vec![1; 32],
            payload: vec![2; 40],
        }
        .encode();
        let trailing = [outer.as_slice(), &[0]].concat();
        let cases: [(&str, Vec<u8>, Option<u8>); 6] = [
            ("truncated", vec![0, 0, 1], None),
            ("empty", vec![], None),
            ("trailing bytes", trailing, None),
            ("inner-type", vec![1], None),
            ("unknown ECHClientHelloType", vec![2, 0, 1], None),
            ("a well-formed outer one", outer, Some(CONFIG_ID)),
        ];
        let answered = |s: &mut Ep<ServerSide>, what: &str| {
            let recs = s.output();
            assert!(
                recs.iter().all(|r| r.typ != ContentType::Alert),
                "{what}: {recs:?}"
            );
            assert_eq!(ee_ech(&s.events), None, "{what}: no retry_configs");
        };
        for (what, body, config_id) in cases {
            // The first ClientHello.
            let mut ch = client_hello();
            ch.extensions.push(ext(ECH, body.clone()));
            let mut s = Ep::server(server_config(), SERVER_SEED);
            s.feed(&ch_wire(&ch))
                .unwrap_or_else(|e| panic!("{what}: {e:?}"));
            answered(&mut s, what);
            let ech = s.events.iter().find_map(|e| match e {
                Event::Ech(e) => Some(e.clone()),
                _ => None,
            });
            let ech = ech.unwrap_or_else(|| panic!("{what}: no ECH event"));
            assert_eq!(ech.status, EchStatus::Rejected, "{what}");
            assert_eq!(ech.config_id, config_id, "{what}");
            assert!(!ech.retry_configs_sent, "{what}");
            // Both ClientHellos around a HelloRetryRequest (the server speaks only P-256, our
            // client's share is X25519); the second repeats the extension (RFC 8446 §4.1.2).
            let (c, sc) = retry_configs();
            let mut client = Ep::client(c, CLIENT_SEED);
            let HandshakePayload::ClientHello(mut ch1) = decode(&client.output()[0].content) else {
                panic!("ClientHello");
            };
            ch1.extensions.push(ext(ECH, body.clone()));
            let mut s = Ep::server(sc, SERVER_SEED);
            s.feed(&ch_wire(&ch1))
                .unwrap_or_else(|e| panic!("{what}: {e:?}"));
            let hrr = s.output();
            let HandshakePayload::ServerHello(h) = decode(&split_messages(&hrr[0].content)[0])
            else {
                panic!("HelloRetryRequest");
            };
            assert_eq!(h.random, HRR_RANDOM, "{what}");
            assert!(h.find(ECH).is_none(), "{what}: nothing in the HRR");
            client
                .feed(&wire(&hrr))
                .expect("the client answers the HRR");
            let recs = client.output();
            let rec = recs
                .iter()
                .find(|r| r.typ == ContentType::Handshake)
                .unwrap();
            let HandshakePayload::ClientHello(mut ch2) = decode(&rec.content) else {
                panic!("second ClientHello");
            };
            ch2.extensions.push(ext(ECH, body));
            s.feed(&hs_record(&encode(HandshakePayload::ClientHello(ch2))))
                .unwrap_or_else(|e| panic!("{what}, second ClientHello: {e:?}"));
            answered(&mut s, what);
        }
    }

    #[test]
    fn inner_hello_violations_are_illegal_parameter() {
        let inner = inner_hello();
        let outer_refs = ExtensionType::Unknown(ECH_OUTER_EXTENSIONS);
        // Each case, and the EchError it must give (compared by variant).
        let cases: Vec<(&str, ClientHello, EchError)> = vec![
            // §5.1: a reference to an extension the outer lacks.
            (
                "missing",
                sealed_without(&inner, &[KS], ExtensionType::KeyShare),
                EchError::OuterExtensions(""),
            ),
            (
                "repeated",
                sealed(&inner, &[KS, KS], &[]),
                EchError::OuterExtensions(""),
            ),
            (
                "reordered",
                sealed(&inner, &[KS, 0x000a], &[]),
                EchError::OuterExtensions(""),
            ),
            (
                "encrypted_client_hello",
                sealed(&inner, &[0xfe0d], &[]),
                EchError::OuterExtensions(""),
            ),
            // §5.1: ech_outer_extensions "MUST NOT appear in either ClientHelloOuter or
            // ClientHelloInner": a reference would copy the outer's (present here, so only
            // that check stops it) into ClientHelloInner.
            (
                "references ech_outer_extensions",
                {
                    let mut shell = inner.clone();
                    let at = shell
                        .extensions
                        .iter()
                        .position(|x| x.typ() == ExtensionType::KeyShare)
                        .unwrap();
                    shell
                        .extensions
                        .insert(at + 1, ext(outer_refs, encode_outer_extensions(&[0x000a])));
                    let enc = encoded(&inner, &[KS, ECH_OUTER_EXTENSIONS], &[]);
                    seal_outer(&shell, &enc, None, 41, CONFIG_ID).0
                },
                EchError::OuterExtensions(""),
            ),
            // ... and a second one would stay in ClientHelloInner (expanded, this one's
            // supported_groups would only be a duplicate: another error).
            (
                "two ech_outer_extensions",
                {
                    let mut i = inner.clone();
                    i.extensions
                        .insert(0, ext(outer_refs, encode_outer_extensions(&[0x000a])));
                    let enc = encoded(&i, &[KS], &[]);
                    seal_outer(&inner, &enc, None, 41, CONFIG_ID).0
                },
                EchError::OuterExtensions(""),
            ),
            (
                "non-zero padding",
                sealed(&inner, &[KS], &[0, 0, 1]),
                EchError::NonZeroPadding,
            ),
            (
                "TLS 1.2 offered",
                {
                    let mut i = inner.clone();
                    set_ext(
                        &mut i.extensions,
                        Extension::SupportedVersionsClient(vec![
                            ProtocolVersion::TLSv1_3,
                            ProtocolVersion::TLSv1_2,
                        ]),
                    );
                    sealed(&i, &[KS], &[])
                },
                EchError::Illegal(""),
            ),
            (
                "no inner extension",
                {
                    let mut i = inner.clone();
                    remove_ext(&mut i.extensions, ECH);
                    sealed(&i, &[KS], &[])
                },
                EchError::Illegal(""),
            ),
            // §7.1: "a well-formed "encrypted_client_hello" extension of type inner": the
            // type byte alone.
            (
                "malformed inner extension",
                {
                    let mut i = inner.clone();
                    set_ext(&mut i.extensions, ext(ECH, vec![1, 0]));
                    sealed(&i, &[KS], &[])
                },
                EchError::Illegal(""),
            ),
        ];
        for (what, ch, want) in cases {
            let e = ech_rejects(&ch, A::IllegalParameter);
            let Error::Peer(PeerMisbehaved::Ech(got)) = &e else {
                panic!("{what}: {e:?}");
            };
            assert_eq!(
                std::mem::discriminant(got),
                std::mem::discriminant(&want),
                "{what}: {e:?}"
            );
        }
    }

    /// `inner` sealed with a reference to `refs`, in an outer that lacks `drop`.
    fn sealed_without(inner: &ClientHello, refs: &[u16], drop: ExtensionType) -> ClientHello {
        let mut shell = inner.clone();
        remove_ext(&mut shell.extensions, drop);
        let enc = encoded(inner, refs, &[]);
        seal_outer(&shell, &enc, None, 41, CONFIG_ID).0
    }

    /// An ECH-accepting HelloRetryRequest (the server speaks only P-256; our client's share is
    /// X25519), then the second ClientHelloOuter changed by `f`.
    fn after_hrr(
        f: impl FnOnce(&ClientHello, &mut SenderContext) -> ClientHello,
        want: A,
    ) -> Error {
        let inner = inner_hello();
        let enc = encoded(&inner, &[KS], &[]);
        let (outer, ctx) = seal_outer(&inner, &enc, None, 41, CONFIG_ID);
        let mut ctx = ctx.unwrap();
        let mut s = Ep::server(
            ech_server_config(Some(vec![NamedGroup::secp256r1])),
            SERVER_SEED,
        );
        s.feed(&ch_wire(&outer)).expect("HelloRetryRequest");
        let recs = s.output();
        let hrr = split_messages(&recs[0].content).remove(0);
        // §7.2.1: the confirmation in the HRR, recomputed over message_hash(ClientHelloInner1).
        let inner_msg = encode(HandshakePayload::ClientHello(inner.clone()));
        let mut mh = vec![254, 0, 0, 32];
        mh.extend_from_slice(HashAlg::Sha256.hash(&inner_msg).as_ref());
        let th = HashAlg::Sha256.hash(&[mh, confirm::zero_hrr(&hrr).unwrap()].concat());
        let want_c = confirm::confirmation(
            HashAlg::Sha256,
            &inner.random,
            HRR_ACCEPT_LABEL,
            th.as_ref(),
        );
        assert_eq!(&hrr[confirm::hrr_range(&hrr).unwrap()], want_c.as_slice());
        let second = f(&inner, &mut ctx);
        s.rejects(
            &record(22, 0x0303, &encode(HandshakePayload::ClientHello(second))),
            want,
        )
    }

    #[test]
    fn second_client_hello_after_an_accepting_hrr() {
        // No ECH at all: missing_extension (§7.1.1).
        let e = after_hrr(
            |inner, _| {
                let mut o = inner.clone();
                remove_ext(&mut o.extensions, ECH);
                o
            },
            A::MissingExtension,
        );
        assert_eq!(e, peer(PeerMisbehaved::Ech(EchError::MissingAfterRetry)));
        // Another cipher suite or config_id, a non-empty enc: illegal_parameter.
        let chacha = HpkeSymmetricCipherSuite {
            kdf_id: HpkeKdfId::HkdfSha256,
            aead_id: HpkeAeadId::ChaCha20Poly1305,
        };
        for (what, changed) in [
            (
                "cipher suite",
                outer_ext_in(chacha, CONFIG_ID, vec![], vec![1; 40]),
            ),
            ("config_id", outer_ext(CONFIG_ID + 1, vec![], vec![1; 40])),
            ("enc", outer_ext(CONFIG_ID, vec![9; 32], vec![1; 40])),
        ] {
            let e = after_hrr(
                |inner, _| {
                    let mut o = inner.clone();
                    set_ext(&mut o.extensions, changed);
                    o
                },
                A::IllegalParameter,
            );
            assert!(
                matches!(e, Error::Peer(PeerMisbehaved::Ech(EchError::Illegal(_)))),
                "{what}: {e:?}"
            );
        }
        // A payload the first context cannot open: decrypt_error.
        let e = after_hrr(
            |inner, _| {
                let mut o = inner.clone();
                set_ext(&mut o.extensions, outer_ext(CONFIG_ID, vec![], vec![1; 40]));
                o
            },
            A::DecryptError,
        );
        assert_eq!(e, peer(PeerMisbehaved::Ech(EchError::DecryptFailed)));
        // One sealed with the first context (its second message) opens: the failure is then
        // past ECH (our inner hello still offers X25519 only: key_share mismatch).
        let e = after_hrr(
            |inner, ctx| {
                let enc = encoded(inner, &[KS], &[]);
                seal_outer(inner, &enc, Some(ctx), 0, CONFIG_ID).0
            },
            A::IllegalParameter,
        );
        assert!(!matches!(e, Error::Peer(PeerMisbehaved::Ech(_))), "{e:?}");
    }
}

// =============================================================================================
// Encrypted ClientHello, the client (RFC 9849 §6.1, §6.2): our server without ECH keys answers
// the outer ClientHello — a rejection — unless a test forges the confirmation; with the key
// (`ech_key`) it accepts.
// =============================================================================================

/// An ECH key whose config names `public_name` (the same for the same name).
fn ech_key(public_name: &str) -> tls13lab::crypto::ech::EchKeyPair {
    use tls13lab::crypto::ech::{EchKeyPair, EchKeyParams};
    use tls13lab::crypto::hpke::Kem;
    let params = EchKeyParams {
        public_name: public_name.into(),
        kem: Kem::X25519HkdfSha256,
        suites: vec![tls13lab::ech::client::GREASE_SUITE],
        config_id: Some(7),
        maximum_name_length: 32,
    };
    EchKeyPair::generate(&params, &mut SeededRandom::from_seed(5)).unwrap()
}

/// A client offering ECH with `ech_key(public_name)`'s config, connecting to `inner_name`.
fn ech_client_config(public_name: &str, inner_name: &str) -> ClientConfig {
    let key = ech_key(public_name);
    let mut c = client_config();
    c.server_name = Some(inner_name.into());
    c.ech = tls13lab::config::EchMode::Config {
        list: key.list,
        grease_fallback: false,
    };
    c
}

/// §6.1.6, §6.1.7: rejected, the handshake is authenticated for the public name (our
/// certificate names `localhost`, the inner name is another), and once the server's Finished
/// verifies the client sends ech_required instead of its own Finished: an error, never a
/// connection. Without retry_configs from the server, the error carries none.
#[test]
fn rejected_ech_ends_with_ech_required_after_authenticating_the_public_name() {
    let mut t = ToClient::new(
        ech_client_config("localhost", "secret.example"),
        server_config(),
    );
    let w = wire(&t.flight);
    let e = t.client.rejects(&w, A::EchRequired);
    assert_eq!(
        e,
        Error::EchRejected {
            retry_configs: None
        }
    );
    assert!(!t.client.tls.is_connected());
    let outcome = t.client.events.iter().find_map(|e| match e {
        Event::EchOffer(e) => Some(e.outcome),
        _ => None,
    });
    assert_eq!(outcome, Some(tls13lab::events::EchOutcome::Rejected));
}

/// §6.1.7: "The client MUST verify that the certificate is valid for
/// ECHConfig.contents.public_name": a certificate for the inner name alone fails.
#[test]
fn rejected_ech_with_a_certificate_not_for_the_public_name_fails() {
    let mut t = ToClient::new(
        ech_client_config("public.example", "localhost"),
        server_config(),
    );
    let w = wire(&t.flight);
    let e = t.client.rejects(&w, A::BadCertificate);
    assert!(
        matches!(&e, Error::Certificate(tls13lab::crypto::cert::CertError::NameMismatch { expected, .. })
            if expected == "public.example"),
        "{e:?}"
    );
}

/// §6.1.2: the outer ClientHello's PSK is GREASE; a server that rejected ECH and selects it
/// is illegal_parameter.
#[test]
fn rejected_ech_server_hello_selecting_a_psk_is_illegal_parameter() {
    let t = ToClient::new(
        ech_client_config("localhost", "secret.example"),
        server_config(),
    );
    let mut sh = t.server_hello();
    set_ext(&mut sh.extensions, Extension::PreSharedKeyServer(0));
    let e = t.rejects(&sh_record(&sh), A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::EchRejectedButResumed));
}

/// §6.1.6: an `encrypted_client_hello` in EncryptedExtensions after a rejection must be a
/// valid ECHConfigList (decode_error otherwise).
#[test]
fn rejected_ech_malformed_retry_configs_are_decode_error() {
    for body in [vec![], vec![0, 0], vec![0, 4, 0xfe, 0x0d, 0, 9]] {
        let t = ToClient::new(
            ech_client_config("localhost", "secret.example"),
            server_config(),
        );
        let w = ee_with_ech(&t, body);
        let e = t.rejects(&w, A::DecodeError);
        assert!(matches!(e, Error::Decode(_)), "{e:?}");
    }
}

/// `encrypted_client_hello` with `body` added to the EncryptedExtensions of `t`'s flight.
fn ee_with_ech(t: &ToClient, body: Vec<u8>) -> Vec<u8> {
    let mut msgs = t.encrypted();
    let ee = index_of(&msgs, HandshakeType::EncryptedExtensions);
    let HandshakePayload::EncryptedExtensions(mut exts) = decode(&msgs[ee]) else {
        panic!("EncryptedExtensions");
    };
    exts.push(Extension::Unknown {
        typ: ExtensionType::EncryptedClientHello,
        body,
    });
    msgs[ee] = encode(HandshakePayload::EncryptedExtensions(exts));
    t.wire_msgs(&msgs)
}

/// RFC 9849 §5: retry_configs are "valid only when the server used the ClientHelloOuter. If
/// the server sent this extension in response to the `inner` variant, then the client MUST
/// abort with an "unsupported_extension" alert." A server with the key accepts; a valid
/// ECHConfigList added to its EncryptedExtensions is refused.
#[test]
fn accepted_ech_retry_configs_in_encrypted_extensions_is_unsupported_extension() {
    let mut s = server_config();
    s.ech_keys = vec![ech_key("public.example")];
    let mut t = ToClient::new(ech_client_config("public.example", "localhost"), s);
    let w = ee_with_ech(&t, ech_key("public.example").list.encode());
    let e = t.client.rejects(&w, A::UnsupportedExtension);
    assert_eq!(
        e,
        peer(PeerMisbehaved::UnsolicitedExtension(
            ExtensionType::EncryptedClientHello
        ))
    );
    let outcome = t.client.events.iter().find_map(|e| match e {
        Event::EchOffer(e) => Some(e.outcome),
        _ => None,
    });
    assert_eq!(outcome, Some(tls13lab::events::EchOutcome::Accepted));
}

/// A client sending GREASE ECH (§6.2).
fn grease_client_config() -> ClientConfig {
    let mut c = client_config();
    c.ech = tls13lab::config::EchMode::Grease;
    c
}

/// §6.2: a GREASE client checks an `encrypted_client_hello` in EncryptedExtensions
/// syntactically (decode_error) and ignores a valid one.
#[test]
fn grease_ech_malformed_retry_configs_are_decode_error() {
    for body in [vec![], vec![0, 0], vec![0, 4, 0xfe, 0x0d, 0, 9]] {
        let t = ToClient::new(grease_client_config(), server_config());
        let w = ee_with_ech(&t, body);
        let e = t.rejects(&w, A::DecodeError);
        assert!(matches!(e, Error::Decode(_)), "{e:?}");
    }
}

/// §6.2: "It otherwise ignores the extension. It MUST NOT save the "retry_configs" value":
/// a server with ECH keys rejects GREASE with its retry_configs, and the GREASE client
/// connects (no ech_required, no `Error::EchRejected`).
#[test]
fn grease_ech_valid_retry_configs_are_ignored() {
    let mut s = server_config();
    s.ech_keys = vec![ech_key("public.example")];
    let c = connected_with(grease_client_config(), s);
    let ee = c.client.events.iter().find_map(|e| match e {
        Event::Handshake(h) if h.typ == HandshakeType::EncryptedExtensions => {
            Some(decode(&h.bytes))
        }
        _ => None,
    });
    let Some(HandshakePayload::EncryptedExtensions(exts)) = ee else {
        panic!("EncryptedExtensions");
    };
    assert!(
        exts.iter()
            .any(|e| e.typ() == ExtensionType::EncryptedClientHello),
        "the server sent retry_configs"
    );
    // Not kept: a GREASE client stays a GREASE client, connected, with nothing to retry.
    assert_eq!(
        c.client.tls.ech_outcome(),
        Some(tls13lab::events::EchOutcome::Grease)
    );
}

/// A HelloRetryRequest to an ECH client (X25519 share, the server wants P-256), and what the
/// client sealed: its first ClientHelloInner.
fn ech_retry() -> (Retry, Vec<u8>) {
    let (_, s) = retry_configs();
    let mut c = ech_client_config("localhost", "secret.example");
    c.key_shares = vec![NamedGroup::X25519];
    let r = retry_with(c, s);
    let inner = r
        .client
        .events
        .iter()
        .find_map(|e| match e {
            Event::InnerClientHello(h) => Some(h.bytes.clone()),
            _ => None,
        })
        .expect("the inner ClientHello event");
    (r, inner)
}

/// §6.1.4: the HelloRetryRequest's `encrypted_client_hello` is 8 bytes, else decode_error.
#[test]
fn ech_hello_retry_confirmation_of_the_wrong_length_is_decode_error() {
    for len in [0, 7, 9] {
        let (mut r, _) = ech_retry();
        let mut hrr = sh_of(&r.hrr);
        hrr.extensions.push(Extension::Unknown {
            typ: ExtensionType::EncryptedClientHello,
            body: vec![0xaa; len],
        });
        let e = r.client.rejects(&sh_record(&hrr), A::DecodeError);
        assert!(matches!(e, Error::Decode(_)), "{e:?}");
    }
}

/// §6.2: a GREASE client checks an `encrypted_client_hello` in a HelloRetryRequest: 8
/// bytes, else decode_error; 8 bytes are ignored (the second ClientHello goes out).
#[test]
fn grease_ech_hello_retry_extension_of_the_wrong_length_is_decode_error() {
    let grease_retry = || {
        let (_, s) = retry_configs();
        let mut c = grease_client_config();
        c.key_shares = vec![NamedGroup::X25519];
        retry_with(c, s)
    };
    for len in [0, 7, 8, 9] {
        let mut r = grease_retry();
        let mut hrr = sh_of(&r.hrr);
        hrr.extensions.push(Extension::Unknown {
            typ: ExtensionType::EncryptedClientHello,
            body: vec![0xaa; len],
        });
        if len == 8 {
            r.client.feed(&sh_record(&hrr)).expect("ignored");
            let second = r
                .client
                .output()
                .iter()
                .any(|rec| HandshakeType::from(rec.content[0]) == HandshakeType::ClientHello);
            assert!(second, "the second ClientHello went out");
            continue;
        }
        let e = r.client.rejects(&sh_record(&hrr), A::DecodeError);
        assert!(matches!(e, Error::Decode(_)), "{len}: {e:?}");
    }
}

/// §6.1.5: after a HelloRetryRequest that confirmed ECH (forged here from the inner
/// ClientHello the client reported), a ServerHello that does not is illegal_parameter.
#[test]
fn ech_server_hello_withdrawing_a_confirmed_hello_retry_is_illegal_parameter() {
    use tls13lab::crypto::hash::HashAlg;
    use tls13lab::ech::confirm;
    let (mut r, inner) = ech_retry();
    let mut hrr = sh_of(&r.hrr);
    hrr.extensions.push(Extension::Unknown {
        typ: ExtensionType::EncryptedClientHello,
        body: vec![0; 8],
    });
    let zeroed = encode(HandshakePayload::ServerHello(hrr.clone()));
    // §7.2.1: message_hash(ClientHelloInner1) || HRR with the confirmation zeroed.
    let h = HashAlg::Sha256;
    let mut th = vec![254, 0, 0, 32];
    th.extend_from_slice(h.hash(&inner).as_ref());
    th.extend_from_slice(&zeroed);
    let random: [u8; 32] = inner[6..38].try_into().unwrap();
    let c = confirm::confirmation(h, &random, confirm::HRR_ACCEPT_LABEL, h.hash(&th).as_ref());
    let last = hrr.extensions.len() - 1;
    hrr.extensions[last] = Extension::Unknown {
        typ: ExtensionType::EncryptedClientHello,
        body: c.to_vec(),
    };
    r.client
        .feed(&sh_record(&hrr))
        .expect("a confirmed HelloRetryRequest");
    let accepted = r
        .client
        .output()
        .iter()
        .any(|rec| HandshakeType::from(rec.content[0]) == HandshakeType::ClientHello);
    assert!(accepted, "the second ClientHello went out");
    // A ServerHello whose random does not confirm: the HRR's fields, a random of zeros.
    let mut sh = hrr.clone();
    sh.random = [0x11; 32];
    sh.extensions
        .retain(|e| e.typ() == ExtensionType::SupportedVersions);
    sh.extensions.push(Extension::KeyShareServer(KeyShareEntry {
        group: NamedGroup::secp256r1,
        key_exchange: vec![4; 65],
    }));
    let e = r.client.rejects(&sh_record(&sh), A::IllegalParameter);
    assert_eq!(e, peer(PeerMisbehaved::EchAcceptanceWithdrawn));
}

/// §6.1.1, §5.2: what the client sends opens, as a server would open it (setup_base_r over
/// the config's key, ClientHelloOuterAAD, §5.1 decoding), to exactly the ClientHelloInner it
/// reported; and the whole outer hello replays byte for byte from the seed.
#[test]
fn ech_outer_hello_opens_to_the_reported_inner_hello_and_replays_from_the_seed() {
    use tls13lab::crypto::ech::{EchKeyPair, EchKeyParams};
    use tls13lab::crypto::hpke::{self, Kem, Suite};
    use tls13lab::ech::wire::{EchClientHello, HelloParts};
    let params = EchKeyParams {
        public_name: "localhost".into(),
        kem: Kem::X25519HkdfSha256,
        suites: vec![tls13lab::ech::client::GREASE_SUITE],
        config_id: Some(7),
        maximum_name_length: 32,
    };
    let key = EchKeyPair::generate(&params, &mut SeededRandom::from_seed(5)).unwrap();
    let hello = || {
        let mut c = Ep::client(
            ech_client_config("localhost", "secret.example"),
            CLIENT_SEED,
        );
        let outer = c.output()[0].content.clone();
        let inner = c
            .events
            .iter()
            .find_map(|e| match e {
                Event::InnerClientHello(h) => Some(h.bytes.clone()),
                _ => None,
            })
            .unwrap();
        (outer, inner)
    };
    let (outer, inner) = hello();
    assert_eq!(
        hello(),
        (outer.clone(), inner.clone()),
        "replays from the seed"
    );
    let body = &outer[4..];
    let p = HelloParts::parse(body).unwrap();
    let e = p.find(0xfe0d).expect("encrypted_client_hello");
    assert_eq!(e.end, p.extensions.1, "last (no PSK offered)");
    let EchClientHello::Outer {
        config_id,
        enc,
        payload,
        suite,
        ..
    } = EchClientHello::decode(&body[e.data_start..e.end]).unwrap()
    else {
        panic!("outer");
    };
    assert_eq!(config_id, 7);
    let s = Suite::from_ids(key.key.kem().id(), suite.kdf_id, suite.aead_id).unwrap();
    let mut info = b"tls ech\0".to_vec();
    info.extend_from_slice(&key.config.raw);
    let mut ctx =
        hpke::setup_base_r(s, &enc, &key.key, &info, &mut tls13lab::keyschedule::NoSink).unwrap();
    let aad = tls13lab::ech::inner::aad(body).unwrap();
    let encoded = ctx.open(&aad, &payload).expect("the payload opens");
    assert_eq!(encoded.len() % 32, 0, "padded to a multiple of 32 (§6.1.3)");
    let decoded = tls13lab::ech::inner::decode(&encoded, body).unwrap();
    assert_eq!(decoded, inner[4..], "the inner hello the client reported");
    // The inner hello names the real server; the outer one only the public name.
    assert!(inner.windows(14).any(|w| w == b"secret.example"));
    assert!(!outer.windows(14).any(|w| w == b"secret.example"));
}
