//! The ledger: records, the handshake messages they carry, flights and totals — built only from
//! [`Event`]s, so it accounts for exactly what crossed the wire.
//!
//! Accounting (RFC 8446 §5.1, §5.2): `wire = 5 (header) + payload`, and for protected records
//! `payload = plaintext + 1 (inner content type) + padding + tag` (16 bytes; 8 under
//! TLS_AES_128_CCM_8_SHA256).
//! A *flight* is a maximal run of records one side sends before the other side's next record.

use std::fmt::Write as _;

use serde::Serialize;

use crate::crypto::cert::{cert_parts, CertParts};
use crate::events::{
    Direction, EarlyDataStatus, EchEvent, EchOfferEvent, EchOutcome, EchParts, EchStatus, Epoch,
    Event, HandshakeEvent, Negotiated, Observer, RecordEvent,
};
use crate::messages::codec::{DecodeError, Reader};
use crate::messages::enums::{
    CertificateCompressionAlgorithm, ContentType, ExtensionType, HandshakeType,
};

/// One handshake message (or the part of it) inside a record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MessagePart {
    /// Its type.
    pub typ: HandshakeType,
    /// The whole message's length including its 4-byte header.
    pub len: usize,
    /// Where in the message this part starts (0: the message begins in this record).
    pub offset: usize,
    /// Bytes of it carried by this record (less than `len` when fragmented).
    pub bytes_here: usize,
    /// A compressed_certificate's algorithm and sizes (RFC 8879 §4), on the part where the
    /// message begins.
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    pub compression: Option<CertCompression>,
}

/// What a CompressedCertificate says about itself (RFC 8879 §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CertCompression {
    /// The algorithm.
    pub algorithm: CertificateCompressionAlgorithm,
    /// The Certificate body's length once decompressed (as the message declares it).
    pub uncompressed_length: usize,
    /// Bytes of compressed_certificate_message.
    pub compressed_length: usize,
}

/// The first bytes of a CompressedCertificate body: algorithm (2) and uncompressed_length (3).
const COMPRESSED_LEAD: usize = 5;

/// One record in the ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LedgerRecord {
    /// 1-based position in the connection.
    pub index: usize,
    /// 1-based flight number.
    pub flight: usize,
    /// The record as reported.
    #[serde(flatten)]
    pub record: RecordEvent,
    /// Handshake messages it carries.
    pub messages: Vec<MessagePart>,
}

/// One Certificate message (RFC 8446 §4.4.2) and where its bytes go, entry by entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CertificateMessage {
    /// Which way it went.
    pub direction: Direction,
    /// The whole message, 4-byte header included:
    /// `4 + 1 + context + 3 + Σ (3 + der + extensions)`.
    pub len: usize,
    /// certificate_request_context (empty for a server's).
    pub context: usize,
    /// One per CertificateEntry, end-entity first.
    pub entries: Vec<CertificateEntrySizes>,
}

/// The bytes of one CertificateEntry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CertificateEntrySizes {
    /// cert_data: the DER certificate.
    pub der: usize,
    /// The entry's extensions block (OCSP status, SCTs sent in TLS), its 2-byte length included.
    pub extensions: usize,
    /// Where the certificate's bytes go (public key, signature, SCT list, other extensions);
    /// null if its DER does not parse.
    pub parts: Option<CertParts>,
    /// The entry's extensions by name, e.g. `trust_anchors` (draft-ietf-tls-trust-anchor-ids
    /// §4.1: empty, in the first entry, when the certificate matched a requested anchor).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extension_types: Vec<String>,
    /// A Merkle Tree Certificate's MTCProof (its signatureValue).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtc: Option<MtcProofSizes>,
}

/// What a Merkle Tree Certificate's signatureValue holds instead of a signature
/// (draft-ietf-plants-merkle-tree-certs §6.2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MtcProofSizes {
    /// Hashes in the inclusion proof (32 bytes each).
    pub inclusion_hashes: usize,
    /// Cosignatures: none in a landmark-relative certificate.
    pub cosignatures: usize,
}

impl MtcProofSizes {
    /// `None` unless `der` is an MTC whose proof decodes.
    fn of(der: &[u8]) -> Option<Self> {
        let c = crate::crypto::cert::mtc::parse_mtc(der).ok()?;
        let p = crate::crypto::cert::mtc::MtcProof::decode(c.proof).ok()?;
        Some(MtcProofSizes {
            inclusion_hashes: p.inclusion_proof.len(),
            cosignatures: p.signatures.len(),
        })
    }
}

impl CertificateMessage {
    /// The sizes of a Certificate message, from its bytes (header included); `None` if it does
    /// not decode.
    pub fn from_bytes(direction: Direction, bytes: &[u8]) -> Option<Self> {
        Self::decode(direction, bytes).ok()
    }

    fn decode(direction: Direction, bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        r.u8("msg_type")?;
        let mut body = r.sub_u24("handshake message")?;
        r.finish("handshake message")?;
        let context = body.vec_u8("certificate_request_context")?.len();
        let mut list = body.sub_u24("certificate_list")?;
        body.finish("Certificate")?;
        let mut entries = Vec::new();
        while !list.is_empty() {
            let der = list.sub_u24("cert_data")?.rest();
            let mut exts = list.sub_u16("extensions")?;
            let extensions = 2 + exts.remaining();
            let mut extension_types = Vec::new();
            while !exts.is_empty() {
                let t = exts.u16("extension_type")?;
                exts.sub_u16("extension_data")?;
                extension_types.push(ExtensionType::from(t).to_string());
            }
            entries.push(CertificateEntrySizes {
                der: der.len(),
                extensions,
                parts: cert_parts(der).ok(),
                extension_types,
                mtc: MtcProofSizes::of(der),
            });
        }
        Ok(CertificateMessage {
            direction,
            len: bytes.len(),
            context,
            entries,
        })
    }

    /// One line per entry for the table.
    fn lines(&self) -> String {
        let mut s = format!(
            "certificate {} {} bytes, {} entries:",
            self.direction.arrow(),
            self.len,
            self.entries.len()
        );
        for (i, e) in self.entries.iter().enumerate() {
            let names = if e.extension_types.is_empty() {
                String::new()
            } else {
                format!(" ({})", e.extension_types.join(", "))
            };
            // An MTC's "signature" is its MTCProof (draft-ietf-plants-merkle-tree-certs §6.2).
            let proof = e.mtc.as_ref().map_or(String::new(), |m| {
                format!(
                    " (MTCProof: {} inclusion proof hashes, {} cosignatures)",
                    m.inclusion_hashes, m.cosignatures
                )
            });
            match &e.parts {
                Some(p) => {
                    let _ = write!(
                        s,
                        "\n  #{i} der {} = public key info {} + signature {}{proof} + SCTs {} ({}) + other extensions {} + rest {}; entry extensions {}{names}",
                        e.der,
                        p.spki,
                        p.signature,
                        p.sct_list,
                        p.scts,
                        p.other_extensions,
                        p.der - p.spki - p.signature - p.sct_list - p.other_extensions,
                        e.extensions
                    );
                }
                None => {
                    let _ = write!(
                        s,
                        "\n  #{i} der {} (not X.509 DER); entry extensions {}{names}",
                        e.der, e.extensions
                    );
                }
            }
        }
        s.push('\n');
        s
    }
}

/// One ClientHelloOuter that carried ECH, with the ClientHelloInner beside it (RFC 9849 §5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EchHello {
    /// ClientHelloOuter as on the wire, its 4-byte header included (0 when handshake messages
    /// were not observed).
    pub outer_len: usize,
    /// Its `encrypted_client_hello`, part by part, and what this side knows of the inner one.
    #[serde(flatten)]
    pub parts: EchParts,
}

impl EchHello {
    /// The lines for the table: the outer and the inner hello side by side, then the
    /// extension's parts, each sum spelled out so it can be checked against the bytes.
    fn lines(&self, n: usize, grease: bool) -> String {
        let p = &self.parts;
        let mut s = String::new();
        let inner = p
            .inner
            .as_ref()
            .map_or("-".to_string(), |i| format!("{} bytes", i.inner_len));
        let _ = writeln!(
            s,
            "  ClientHello {n}: outer {} bytes | inner {inner}",
            self.outer_len
        );
        let _ = writeln!(
            s,
            "    encrypted_client_hello {} = header 4 + type 1 + cipher_suite 4 ({}/{}) + config_id 1 ({}) + enc 2+{} + payload 2+{}",
            p.extension_len(),
            p.kdf,
            p.aead,
            p.config_id,
            p.enc_len,
            p.payload_len
        );
        match &p.inner {
            Some(i) => {
                let ch = i.encoded_inner_len.saturating_sub(i.padding);
                let refs: Vec<String> = i.outer_extensions.iter().map(|t| t.to_string()).collect();
                let _ = writeln!(
                    s,
                    "    payload {} = EncodedClientHelloInner {} + tag {}; EncodedClientHelloInner {} = ClientHello {ch} + padding {}",
                    p.payload_len, i.encoded_inner_len, p.tag_len, i.encoded_inner_len, i.padding
                );
                let _ = writeln!(
                    s,
                    "    inner {} = header 4 + ClientHello {ch} + legacy_session_id {} + ech_outer_extensions saved {} ({})",
                    i.inner_len,
                    i.session_id,
                    i.saved,
                    if refs.is_empty() { "nothing referenced".to_string() } else { refs.join(" ") }
                );
            }
            None if grease => {
                let _ = writeln!(
                    s,
                    "    payload {}: random bytes shaped as a sealed inner hello plus tag {} (GREASE, §6.2)",
                    p.payload_len, p.tag_len
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "    payload {}: not opened here (no key of ours opens it: a stale config or GREASE), so the inner hello is unknown",
                    p.payload_len
                );
            }
        }
        s
    }
}

/// Per-direction sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DirectionTotals {
    /// Bytes on the wire (headers included).
    pub bytes: usize,
    /// Records.
    pub records: usize,
    /// Record headers (5 each).
    pub header_bytes: usize,
    /// AEAD tags.
    pub tag_bytes: usize,
    /// Inner content-type bytes.
    pub inner_type_bytes: usize,
    /// Padding.
    pub padding_bytes: usize,
    /// Handshake-message bytes.
    pub handshake_bytes: usize,
    /// Application-data bytes.
    pub app_bytes: usize,
}

/// Totals both ways.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Client → server.
    pub client_to_server: DirectionTotals,
    /// Server → client.
    pub server_to_client: DirectionTotals,
}

/// A connection's ledger.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Ledger {
    /// What was negotiated.
    pub negotiated: Option<Negotiated>,
    /// Every record, in the order the observing endpoint sent or received it.
    pub records: Vec<LedgerRecord>,
    /// Sums.
    pub totals: Totals,
    /// Every Certificate message, with the sizes of its certificates' parts.
    pub certificates: Vec<CertificateMessage>,
    /// The ECH offer's outcome (RFC 9849), when the client made one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ech: Option<EchOfferEvent>,
    /// Lengths of the ClientHelloInner messages sealed into the outer ones (never on the wire,
    /// so in no record): one per ClientHello the records carry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ech_inner_hellos: Vec<usize>,
    /// The server's ECH decision (RFC 9849 §7.1), on a server's ledger, when the client
    /// offered ECH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ech_server: Option<EchEvent>,
    /// Every ClientHelloOuter with ECH, in order (two after a HelloRetryRequest), as the
    /// observing side saw it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ech_hellos: Vec<EchHello>,
    /// The length of the last ClientHello seen, for the next [`Event::EchParts`].
    #[serde(skip)]
    last_client_hello: usize,
    #[serde(skip)]
    splitters: [Splitter; 2],
    #[serde(skip)]
    last_direction: Option<Direction>,
    #[serde(skip)]
    flights: usize,
    /// Clock value the table's `t(ms)` column counts from (default: the first record's time).
    #[serde(skip)]
    origin_ms: Option<u64>,
}

/// Splits one direction's handshake byte stream into messages across records.
#[derive(Clone, Debug, Default)]
struct Splitter {
    /// Bytes of a message header seen so far (while fewer than 4).
    header: Vec<u8>,
    typ: Option<HandshakeType>,
    len: usize,
    /// Body bytes of the current message still to come.
    remaining: usize,
    /// Parts (record index, part index) holding the start of a header whose length is not known
    /// yet: their `len` is filled in when the header completes in a later record.
    awaiting_len: Vec<(usize, usize)>,
    /// The part where the current message began (record index, part index).
    start: (usize, usize),
    /// A compressed_certificate's first body bytes, while fewer than [`COMPRESSED_LEAD`].
    lead: Option<Vec<u8>>,
}

/// A correction to a part of an earlier (or this) record, known only once later bytes came.
enum Fix {
    Len(usize, usize, usize),
    Compression(usize, usize, CertCompression),
}

impl Splitter {
    /// The parts of `content`, the content of record number `record` (0-based). Header bytes
    /// count in the record that carries them, so each record's parts add up to its content.
    /// Returns the parts and the fixes for earlier records (or this one).
    fn split(&mut self, record: usize, mut content: &[u8]) -> (Vec<MessagePart>, Vec<Fix>) {
        let mut parts: Vec<MessagePart> = Vec::new();
        let mut fixes = Vec::new();
        while !content.is_empty() {
            if self.remaining > 0 && self.header.is_empty() {
                // The body of a message begun in an earlier record.
                let take = self.remaining.min(content.len());
                parts.push(MessagePart {
                    typ: self.typ.unwrap_or(HandshakeType::Unknown(0)),
                    len: self.len,
                    offset: self.len - self.remaining,
                    bytes_here: take,
                    compression: None,
                });
                self.lead_bytes(&content[..take], &mut fixes);
                self.remaining -= take;
                content = &content[take..];
                continue;
            }
            // A header, perhaps continued from earlier records.
            let offset = self.header.len();
            let take = (4 - offset).min(content.len());
            self.header.extend_from_slice(&content[..take]);
            content = &content[take..];
            let typ = HandshakeType::from(self.header[0]);
            parts.push(MessagePart {
                typ,
                len: 0,
                offset,
                bytes_here: take,
                compression: None,
            });
            if offset == 0 {
                self.start = (record, parts.len() - 1);
            }
            if self.header.len() < 4 {
                self.awaiting_len.push((record, parts.len() - 1));
                break;
            }
            let body = (usize::from(self.header[1]) << 16)
                | (usize::from(self.header[2]) << 8)
                | usize::from(self.header[3]);
            self.header.clear();
            self.typ = Some(typ);
            self.len = body + 4;
            self.remaining = body;
            for (r, p) in self.awaiting_len.drain(..) {
                fixes.push(Fix::Len(r, p, body + 4));
            }
            self.lead = (typ == HandshakeType::CompressedCertificate).then(Vec::new);
            let take = self.remaining.min(content.len());
            self.lead_bytes(&content[..take], &mut fixes);
            self.remaining -= take;
            content = &content[take..];
            if let Some(p) = parts.last_mut() {
                p.len = body + 4;
                p.bytes_here += take;
            }
        }
        (parts, fixes)
    }

    /// Body bytes of the current message: a compressed_certificate's first ones are kept until
    /// its algorithm and uncompressed_length are known, then reported on its first part.
    fn lead_bytes(&mut self, body: &[u8], fixes: &mut Vec<Fix>) {
        let Some(lead) = &mut self.lead else {
            return;
        };
        let want = COMPRESSED_LEAD - lead.len();
        lead.extend_from_slice(&body[..want.min(body.len())]);
        if lead.len() == COMPRESSED_LEAD {
            let info = CertCompression {
                algorithm: u16::from_be_bytes([lead[0], lead[1]]).into(),
                uncompressed_length: (usize::from(lead[2]) << 16)
                    | (usize::from(lead[3]) << 8)
                    | usize::from(lead[4]),
                // Header (4), algorithm and uncompressed_length (5), the vector's length (3).
                compressed_length: self.len.saturating_sub(4 + COMPRESSED_LEAD + 3),
            };
            fixes.push(Fix::Compression(self.start.0, self.start.1, info));
            self.lead = None;
        }
    }
}

/// The ledger as a connection's observer (`set_observer`). Here, not in events.rs: the ledger is
/// built on events, never the reverse.
impl Observer for Ledger {
    fn observe(&mut self, event: Event) {
        Ledger::observe(self, &event);
    }
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Ledger::default()
    }

    /// A ledger of these events (typically one endpoint's whole stream).
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Self {
        let mut l = Ledger::new();
        for e in events {
            l.observe(e);
        }
        l
    }

    /// Count the table's `t(ms)` column from `origin_ms` (e.g. when the TCP connection was opened)
    /// instead of from the first record. Records keep the caller's clock in `time_ms`.
    pub fn set_origin(&mut self, origin_ms: u64) {
        self.origin_ms = Some(origin_ms);
    }

    /// Account for one event.
    pub fn observe(&mut self, e: &Event) {
        match e {
            Event::Record(r) => self.add_record(r),
            Event::Handshake(HandshakeEvent {
                typ: HandshakeType::Certificate,
                direction,
                bytes,
                ..
            }) => self
                .certificates
                .extend(CertificateMessage::from_bytes(*direction, bytes)),
            Event::Handshake(HandshakeEvent {
                typ: HandshakeType::ClientHello,
                bytes,
                ..
            }) => self.last_client_hello = bytes.len(),
            Event::Connected(n) => self.negotiated = Some(n.clone()),
            Event::EchOffer(e) => self.ech = Some(e.clone()),
            Event::InnerClientHello(h) => self.ech_inner_hellos.push(h.bytes.len()),
            // Both sides report the parts right after the outer hello's own event.
            Event::EchParts(p) => self.ech_hellos.push(EchHello {
                outer_len: self.last_client_hello,
                parts: p.clone(),
            }),
            Event::Ech(e) if e.status != EchStatus::NotOffered => self.ech_server = Some(e.clone()),
            _ => {}
        }
    }

    fn add_record(&mut self, r: &RecordEvent) {
        if self.last_direction != Some(r.direction) {
            self.flights += 1;
            self.last_direction = Some(r.direction);
        }
        let idx = match r.direction {
            Direction::ClientToServer => 0,
            Direction::ServerToClient => 1,
        };
        let (messages, fixes) = if r.inner_type == ContentType::Handshake {
            self.splitters[idx].split(self.records.len(), &r.content)
        } else {
            (Vec::new(), Vec::new())
        };
        let t = match r.direction {
            Direction::ClientToServer => &mut self.totals.client_to_server,
            Direction::ServerToClient => &mut self.totals.server_to_client,
        };
        t.bytes += r.wire_len;
        t.records += 1;
        t.header_bytes += 5;
        t.tag_bytes += r.tag_len;
        t.padding_bytes += r.padding_len;
        if r.seq.is_some() {
            t.inner_type_bytes += 1;
        }
        match r.inner_type {
            ContentType::Handshake => t.handshake_bytes += r.plaintext_len,
            ContentType::ApplicationData => t.app_bytes += r.plaintext_len,
            _ => {}
        }
        self.records.push(LedgerRecord {
            index: self.records.len() + 1,
            flight: self.flights,
            record: r.clone(),
            messages,
        });
        for fix in fixes {
            let (rec, part) = match fix {
                Fix::Len(rec, part, _) | Fix::Compression(rec, part, _) => (rec, part),
            };
            if let Some(p) = self
                .records
                .get_mut(rec)
                .and_then(|r| r.messages.get_mut(part))
            {
                match fix {
                    Fix::Len(_, _, len) => p.len = len,
                    Fix::Compression(_, _, info) => p.compression = Some(info),
                }
            }
        }
    }

    /// Client→server flights sent before the first application-data byte arrived from the server:
    /// the round trips the client waited (TCP's own handshake not included).
    pub fn round_trips_to_first_response(&self) -> Option<usize> {
        let first = self.records.iter().position(|r| {
            r.record.direction == Direction::ServerToClient
                && r.record.inner_type == ContentType::ApplicationData
        })?;
        let mut trips = 0;
        let mut last = None;
        for r in &self.records[..first] {
            if r.record.direction == Direction::ClientToServer && last != Some(r.flight) {
                trips += 1;
                last = Some(r.flight);
            }
        }
        Some(trips)
    }

    /// The record-by-record table.
    /// `t(ms)` is milliseconds since the origin ([`Ledger::set_origin`], default the first record).
    pub fn table(&self) -> String {
        let origin = self
            .origin_ms
            .or_else(|| self.records.first().map(|r| r.record.time_ms))
            .unwrap_or(0);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:>3} {:>6} {:>3} {:>3} {:<12} {:<18} {:<18} {:>6} {:>24}  messages",
            "#",
            "t(ms)",
            "dir",
            "fl",
            "epoch",
            "wire type",
            "inner type",
            "bytes",
            "hdr+plain+type+pad+tag"
        );
        for r in &self.records {
            let rec = &r.record;
            let breakdown = if rec.seq.is_some() {
                format!(
                    "5+{}+1+{}+{}",
                    rec.plaintext_len, rec.padding_len, rec.tag_len
                )
            } else {
                format!("5+{}", rec.plaintext_len)
            };
            let msgs: Vec<String> = r
                .messages
                .iter()
                .map(|m| {
                    let size = if m.bytes_here == m.len {
                        m.len.to_string()
                    } else {
                        format!("{}/{}", m.bytes_here, m.len)
                    };
                    match &m.compression {
                        // e.g. compressed_certificate(1210; brotli 1198 of 3004)
                        Some(c) => format!(
                            "{}({size}; {} {} of {})",
                            m.typ, c.algorithm, c.compressed_length, c.uncompressed_length
                        ),
                        None => format!("{}({size})", m.typ),
                    }
                })
                .collect();
            let msgs = if msgs.is_empty() && rec.inner_type == ContentType::Alert {
                alert_text(&rec.content)
            } else {
                msgs.join(" ")
            };
            let _ = writeln!(
                s,
                "{:>3} {:>6} {:>3} {:>3} {:<12} {:<18} {:<18} {:>6} {:>24}  {}",
                r.index,
                rec.time_ms.saturating_sub(origin),
                rec.direction.arrow(),
                r.flight,
                rec.epoch.to_string(),
                rec.wire_type.to_string(),
                rec.inner_type.to_string(),
                rec.wire_len,
                breakdown,
                msgs
            );
        }
        for c in &self.certificates {
            s.push_str(&c.lines());
        }
        s.push_str(&self.ech_lines());
        let t = &self.totals;
        for (name, d) in [("C→S", &t.client_to_server), ("S→C", &t.server_to_client)] {
            let _ = writeln!(
                s,
                "total {name}: {} bytes in {} records (headers {}, tags {}, inner types {}, padding {}; handshake {}, application {})",
                d.bytes, d.records, d.header_bytes, d.tag_bytes, d.inner_type_bytes, d.padding_bytes, d.handshake_bytes, d.app_bytes
            );
        }
        s
    }

    /// The ECH block (RFC 9849): the outcome and both SNIs, then each outer hello beside its
    /// inner one. The outer hellos are in the records above; the inner ones only here.
    pub fn ech_lines(&self) -> String {
        let mut s = String::new();
        let (outcome, inner_sni, outer_sni, grease) = match (&self.ech, &self.ech_server) {
            (Some(e), _) => (
                e.outcome.as_str().to_string(),
                e.inner_sni.as_deref(),
                e.outer_sni.as_deref(),
                e.outcome == EchOutcome::Grease,
            ),
            (None, Some(e)) => (
                match e.status {
                    EchStatus::Accepted => "accepted".to_string(),
                    EchStatus::Rejected if e.retry_configs_sent => {
                        "rejected, retry_configs sent".to_string()
                    }
                    EchStatus::Rejected => "rejected".to_string(),
                    EchStatus::NotOffered => "not offered".to_string(),
                },
                e.inner_sni.as_deref(),
                e.outer_sni.as_deref(),
                false,
            ),
            (None, None) if self.ech_hellos.is_empty() => return s,
            (None, None) => ("undecided".to_string(), None, None, false),
        };
        let _ = writeln!(
            s,
            "ECH {outcome}: SNI inner {}, outer {}",
            inner_sni.unwrap_or("-"),
            outer_sni.unwrap_or("-")
        );
        for (i, h) in self.ech_hellos.iter().enumerate() {
            s.push_str(&h.lines(i + 1, grease));
        }
        s
    }

    /// JSON (records, totals, negotiated).
    #[cfg(feature = "json")]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The early data outcome, if connected.
    pub fn early_data(&self) -> Option<EarlyDataStatus> {
        self.negotiated.as_ref().map(|n| n.early_data)
    }

    /// Handshake messages per flight, e.g. `[["client_hello"], ["server_hello", ...]]`.
    pub fn messages_per_flight(&self) -> Vec<(Direction, Vec<HandshakeType>)> {
        let mut out: Vec<(usize, Direction, Vec<HandshakeType>)> = Vec::new();
        for r in &self.records {
            let starts: Vec<HandshakeType> = r
                .messages
                .iter()
                .filter(|m| m.offset == 0)
                .map(|m| m.typ)
                .collect();
            match out.last_mut() {
                Some((f, _, v)) if *f == r.flight => v.extend(starts),
                _ => out.push((r.flight, r.record.direction, starts)),
            }
        }
        out.into_iter().map(|(_, d, v)| (d, v)).collect()
    }

    /// Records of one epoch kind (for tests and summaries).
    pub fn records_in(&self, epoch: Epoch) -> impl Iterator<Item = &LedgerRecord> {
        self.records.iter().filter(move |r| r.record.epoch == epoch)
    }
}

fn alert_text(content: &[u8]) -> String {
    match content {
        [level, desc] => format!(
            "alert {} {}",
            crate::messages::enums::AlertLevel::from(*level),
            crate::messages::enums::AlertDescription::from(*desc)
        ),
        _ => "alert".into(),
    }
}

// Beside `events::hex`, which the events' own serde attributes use: events sit below the ledger.
pub use crate::events::ser_hex;

/// Parse lowercase/uppercase hex.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}
