//! The ClientHello size lab: build a ClientHello exactly as tls13lab's client sends it, edit it
//! the way other clients shape theirs (GREASE, more versions, shares for groups we do not
//! implement, duplicates, padding), and account for every byte — fields, extensions, records,
//! TCP segments.
//!
//! The lab describes bytes; it does not need a peer. [`build`] runs a real [`Client`] with a
//! seeded random source, takes the ClientHello it queued, and applies the edits of a
//! [`HelloSpec`] to the decoded message (recomputing the PSK binder afterwards, so even an edited
//! hello carries a binder that matches its bytes). [`describe`] turns the message into a
//! [`HelloReport`] from its layout spans (RFC 8446 §4.1.2), re-framed into records at the offsets
//! asked for and cut into segments for a [`Link`].

use std::sync::Arc;

use serde::Serialize;

use crate::client::Client;
use crate::config::{ClientConfig, HelloPadding};
use crate::crypto::aead::suite_params;
use crate::crypto::kx;
use crate::crypto::random::{RandomSource, SeededRandom};
use crate::error::Error;
use crate::events::{hex, Observe};
use crate::keyschedule::schedule::{EarlySecret, NoSink};
use crate::lab::tcp::Link;
use crate::messages::enums::{
    CipherSuite, ContentType, ExtensionType, NamedGroup, ProtocolVersion, PskKeyExchangeMode,
    SignatureScheme,
};
use crate::messages::extensions::{Extension, KeyShareEntry};
use crate::messages::handshake::{ClientHello, DecodeContext, HandshakeMessage, HandshakePayload};
use crate::messages::layout::Span;
use crate::session::{StoredTicket, TicketStore};

/// The clock the lab's client runs at (2026-01-01T00:00:00Z); only ticket ages depend on it.
pub const LAB_NOW_MS: u64 = 1_767_225_600_000;

/// The 16 GREASE values for cipher suites, extensions, groups, signature algorithms, versions
/// and ALPN (RFC 8701 §2): `0x?A?A` with both nibbles equal.
pub const GREASE_VALUES: [u16; 16] = [
    0x0a0a, 0x1a1a, 0x2a2a, 0x3a3a, 0x4a4a, 0x5a5a, 0x6a6a, 0x7a7a, 0x8a8a, 0x9a9a, 0xaaaa, 0xbaba,
    0xcaca, 0xdada, 0xeaea, 0xfafa,
];

/// GREASE values for psk_key_exchange_modes (RFC 8701 §2): `0x1F * N + 0x0B`.
pub const GREASE_PSK_MODES: [u8; 8] = [0x0b, 0x2a, 0x49, 0x68, 0x87, 0xa6, 0xc5, 0xe4];

/// Whether a 16-bit code point is one of the reserved GREASE values.
pub fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 12 == (v >> 4) & 0x0f
}

/// Where to put GREASE values (RFC 8701 §3), the way BoringSSL and Chrome do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Grease {
    /// A GREASE cipher suite first.
    pub cipher_suite: bool,
    /// An empty GREASE extension first and a one-byte one last (before pre_shared_key).
    pub extensions: bool,
    /// A GREASE group first in supported_groups.
    pub group: bool,
    /// A one-byte key share for a GREASE group first in key_share (§3: "any length").
    pub key_share: bool,
    /// A GREASE signature algorithm first in signature_algorithms.
    pub signature_algorithm: bool,
    /// A GREASE version first in supported_versions.
    pub version: bool,
    /// A GREASE value first in psk_key_exchange_modes.
    pub psk_mode: bool,
}

impl Grease {
    /// Every place.
    pub const ALL: Grease = Grease {
        cipher_suite: true,
        extensions: true,
        group: true,
        key_share: true,
        signature_algorithm: true,
        version: true,
        psk_mode: true,
    };

    /// Whether any GREASE is asked for.
    pub fn any(&self) -> bool {
        *self != Grease::default()
    }

    /// The names of the places, as `--grease` takes them.
    pub const PLACES: &'static [&'static str] = &[
        "suite",
        "extension",
        "group",
        "key-share",
        "sigalg",
        "version",
        "psk-mode",
    ];

    /// Turn on one place by name (see [`Grease::PLACES`]) or `all`.
    pub fn set(&mut self, place: &str) -> Result<(), String> {
        let p: String = place
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        match p.as_str() {
            "all" => *self = Grease::ALL,
            "suite" | "suites" | "ciphersuite" => self.cipher_suite = true,
            "extension" | "extensions" | "ext" => self.extensions = true,
            "group" | "groups" => self.group = true,
            "keyshare" | "share" => self.key_share = true,
            "sigalg" | "sigalgs" | "signaturealgorithm" => self.signature_algorithm = true,
            "version" | "versions" => self.version = true,
            "pskmode" | "pskmodes" => self.psk_mode = true,
            _ => {
                return Err(format!(
                    "unknown GREASE place '{place}' (known: all, {})",
                    Grease::PLACES.join(", ")
                ))
            }
        }
        Ok(())
    }
}

/// A PSK offer made with a fake ticket: the shape of a resumption ClientHello without a server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PskOffer {
    /// Bytes of the ticket (the PSK identity). Real tickets: ~32 (stateful ids) to ~200
    /// (sealed session state).
    pub identity_len: usize,
    /// Also offer 0-RTT (the early_data extension).
    pub early_data: bool,
    /// The suite the ticket is bound to; its hash sets the binder length (32 or 48 bytes).
    pub suite: CipherSuite,
}

/// Everything that shapes one ClientHello.
#[derive(Clone, Debug)]
pub struct HelloSpec {
    /// A name for reports (a preset name, or the command-line variant).
    pub label: String,
    /// The client's configuration. `key_shares` may name groups tls13lab cannot compute (a
    /// random share of the right size is used) and may repeat a group (the entry is copied).
    pub config: ClientConfig,
    /// Replace supported_versions with this list (the client itself offers only TLS 1.3).
    pub versions: Option<Vec<ProtocolVersion>>,
    /// GREASE values to add.
    pub grease: Grease,
    /// Offer a PSK with a fake ticket.
    pub psk: Option<PskOffer>,
    /// RFC 7685 padding, applied after every other edit.
    pub padding: HelloPadding,
    /// Seeds the random, session id, key shares and GREASE picks.
    pub seed: u64,
    /// Where this shape comes from (for presets: the public facts it reproduces).
    pub source: Option<String>,
}

impl HelloSpec {
    /// tls13lab's own client defaults, with `example.com` as server name.
    pub fn new(label: impl Into<String>) -> HelloSpec {
        HelloSpec {
            label: label.into(),
            config: ClientConfig {
                server_name: Some("example.com".into()),
                ..ClientConfig::default()
            },
            versions: None,
            grease: Grease::default(),
            psk: None,
            padding: HelloPadding::None,
            seed: 1,
            source: None,
        }
    }
}

/// A ClientHello as built, with what was done to it.
#[derive(Clone, Debug)]
pub struct BuiltHello {
    /// The spec's label.
    pub label: String,
    /// The message.
    pub message: HandshakeMessage,
    /// The decoded hello (same bytes as `message`).
    pub hello: ClientHello,
    /// Edits applied after the client built it.
    pub notes: Vec<String>,
    /// Things a server would reject or that break an RFC rule.
    pub warnings: Vec<String>,
}

/// Key-share sizes of groups tls13lab cannot compute: X448 (RFC 7748), secp521r1 uncompressed
/// (RFC 8446 §4.2.8.2), FFDHE: the prime's size (§4.2.8.1, RFC 7919).
pub fn share_len(group: NamedGroup) -> Option<usize> {
    Some(match group {
        NamedGroup::X25519 => 32,
        NamedGroup::X448 => 56,
        NamedGroup::secp256r1 => 65,
        NamedGroup::secp384r1 => 97,
        NamedGroup::secp521r1 => 133,
        NamedGroup::ffdhe2048 => 256,
        NamedGroup::ffdhe3072 => 384,
        NamedGroup::ffdhe4096 => 512,
        NamedGroup::ffdhe6144 => 768,
        NamedGroup::ffdhe8192 => 1024,
        NamedGroup::MLKEM512 => 800,
        NamedGroup::MLKEM768 => 1184,
        NamedGroup::MLKEM1024 => 1568,
        NamedGroup::X25519MLKEM768 => 1216,
        NamedGroup::SecP256r1MLKEM768 => 1249,
        NamedGroup::SecP384r1MLKEM1024 => 1665,
        g if is_grease(g.to_repr()) => 1,
        _ => return None,
    })
}

/// Build the ClientHello of `spec`.
pub fn build(spec: &HelloSpec) -> Result<BuiltHello, Error> {
    let mut cfg = spec.config.clone();
    cfg.hello_padding = HelloPadding::None; // padded last, after the edits
    cfg.observe = Observe::NONE;
    let wanted = cfg.key_shares.clone();
    let mut real: Vec<NamedGroup> = Vec::new();
    for g in &wanted {
        if kx::is_supported(*g) && !real.contains(g) {
            real.push(*g);
        }
    }
    cfg.key_shares = real;
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    let mut rng = SeededRandom::from_seed(spec.seed ^ 0x1ab_0000_0000);

    let mut tickets = TicketStore::default();
    let mut psk_secret = None;
    if let Some(p) = &spec.psk {
        let params = suite_params(p.suite)
            .ok_or_else(|| Error::Config(format!("PSK suite {} is not implemented", p.suite)))?;
        if !cfg.cipher_suites.contains(&p.suite) {
            return Err(Error::Config(format!(
                "the PSK's suite {} is not among the offered suites",
                p.suite
            )));
        }
        if p.identity_len == 0 || p.identity_len > 65_535 - 6 {
            return Err(Error::Config("a ticket has 1..=65529 bytes".into()));
        }
        let mut ticket = vec![0; p.identity_len];
        rng.fill(&mut ticket);
        let mut psk = vec![0; params.hash.output_len()];
        rng.fill(&mut psk);
        let mut age_add = [0; 4];
        rng.fill(&mut age_add);
        tickets.insert(StoredTicket {
            server_name: cfg.server_name.clone(),
            suite: p.suite,
            ticket,
            psk: psk.clone(),
            age_add: u32::from_be_bytes(age_add),
            lifetime: 7200,
            received_at_ms: LAB_NOW_MS - 10_000,
            max_early_data: if p.early_data { 16_384 } else { 0 },
            alpn: None,
            external: false,
        });
        cfg.enable_early_data = p.early_data;
        if cfg.psk_modes.is_empty() {
            cfg.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
        }
        psk_secret = Some((params.hash, psk));
        notes.push(format!(
            "PSK: a fake ticket of {} bytes bound to {} (binder {} bytes){}",
            p.identity_len,
            p.suite,
            params.hash.output_len(),
            if p.early_data { ", 0-RTT offered" } else { "" }
        ));
    }

    let mut client = Client::new(Arc::new(cfg), Box::new(SeededRandom::from_seed(spec.seed)))?
        .with_tickets(tickets);
    client.start(LAB_NOW_MS)?;
    let first = first_handshake_message(&client.take_output())?;
    let msg = HandshakeMessage::decode(&first, DecodeContext::default())?;
    let HandshakePayload::ClientHello(mut ch) = msg.payload else {
        return Err(Error::InvalidState(
            "the client's first message is not a ClientHello",
        ));
    };

    if let Some(v) = &spec.versions {
        for e in &mut ch.extensions {
            if let Extension::SupportedVersionsClient(list) = e {
                *list = v.clone();
            }
        }
        if v.iter().any(|x| *x != ProtocolVersion::TLSv1_3) {
            notes.push(format!(
                "supported_versions set to {}",
                v.iter()
                    .map(|x| version_name(*x))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }

    // Key shares in the order asked for: computed, copied (duplicates) or synthetic.
    let computed: Vec<KeyShareEntry> = match ch.find(ExtensionType::KeyShare) {
        Some(Extension::KeyShareClient(v)) => v.clone(),
        _ => Vec::new(),
    };
    let mut shares: Vec<KeyShareEntry> = Vec::new();
    for g in &wanted {
        if let Some(done) = shares.iter().find(|s| s.group == *g).cloned() {
            warnings.push(format!(
                "two key shares for {g}: RFC 8446 §4.2.8 forbids it (a server answers illegal_parameter)"
            ));
            shares.push(done);
        } else if let Some(c) = computed.iter().find(|s| s.group == *g) {
            shares.push(c.clone());
        } else {
            let len = share_len(*g)
                .ok_or_else(|| Error::Config(format!("no known key share size for group {g}")))?;
            let mut key_exchange = vec![0; len];
            rng.fill(&mut key_exchange);
            notes.push(format!(
                "key share for {g}: {len} random bytes of the right size (tls13lab does not implement {g})"
            ));
            shares.push(KeyShareEntry {
                group: *g,
                key_exchange,
            });
        }
    }
    for e in &mut ch.extensions {
        if let Extension::KeyShareClient(v) = e {
            *v = shares.clone();
        }
    }

    if spec.grease.any() {
        apply_grease(&mut ch, spec.grease, &mut rng, &mut notes);
    }

    match spec.padding {
        HelloPadding::None => {}
        p => pad(&mut ch, p, &mut notes),
    }

    if let Some((hash, psk)) = psk_secret {
        // The binder covers the ClientHello up to the binders list (§4.2.11.2): recompute it
        // over the edited bytes.
        let partial = HandshakeMessage::new(HandshakePayload::ClientHello(ch.clone()));
        let partial = &partial.encoded[..partial.encoded.len() - ch.binders_len()];
        let key = EarlySecret::new(hash, Some(&psk), &mut NoSink).binder_key(true, &mut NoSink);
        let binder = key.binder(hash.hash(partial).as_slice(), &mut NoSink);
        if let Some(Extension::PreSharedKeyClient(offer)) = ch.extensions.last_mut() {
            offer.binders = vec![binder];
        }
    }
    let message = HandshakeMessage::new(HandshakePayload::ClientHello(ch.clone()));
    if message.encoded.len() > 4 + 0xffff {
        warnings
            .push("the message is longer than 65539 bytes: servers cap ClientHello sizes".into());
    }
    Ok(BuiltHello {
        label: spec.label.clone(),
        message,
        hello: ch,
        notes,
        warnings,
    })
}

/// The first handshake message in a stream of plaintext records.
fn first_handshake_message(stream: &[u8]) -> Result<Vec<u8>, Error> {
    let mut data = Vec::new();
    let mut at = 0;
    while at + 5 <= stream.len() {
        let len = usize::from(u16::from_be_bytes([stream[at + 3], stream[at + 4]]));
        let body = stream
            .get(at + 5..at + 5 + len)
            .ok_or(Error::InvalidState("truncated record"))?;
        if ContentType::from(stream[at]) == ContentType::Handshake {
            data.extend_from_slice(body);
        }
        at += 5 + len;
        if data.len() >= 4 {
            let need = 4
                + ((usize::from(data[1]) << 16)
                    | (usize::from(data[2]) << 8)
                    | usize::from(data[3]));
            if data.len() >= need {
                data.truncate(need);
                return Ok(data);
            }
        }
    }
    Err(Error::InvalidState("no complete handshake message"))
}

fn pick_grease(rng: &mut dyn RandomSource, not: Option<u16>) -> u16 {
    loop {
        let mut b = [0u8; 1];
        rng.fill(&mut b);
        let v = GREASE_VALUES[usize::from(b[0] & 15)];
        if Some(v) != not {
            return v;
        }
    }
}

fn apply_grease(
    ch: &mut ClientHello,
    g: Grease,
    rng: &mut dyn RandomSource,
    notes: &mut Vec<String>,
) {
    let mut done = Vec::new();
    // BoringSSL uses one value for the group and its key share, and two different ones for the
    // first and last extension.
    let group = pick_grease(rng, None);
    if g.cipher_suite {
        let v = pick_grease(rng, None);
        ch.cipher_suites.insert(0, CipherSuite::from(v));
        done.push(format!("suite {v:#06x}"));
    }
    for e in &mut ch.extensions {
        match e {
            Extension::SupportedGroups(list) if g.group => {
                list.insert(0, NamedGroup::from(group));
                done.push(format!("group {group:#06x}"));
            }
            Extension::KeyShareClient(list) if g.key_share => {
                list.insert(
                    0,
                    KeyShareEntry {
                        group: NamedGroup::from(group),
                        key_exchange: vec![0],
                    },
                );
                done.push(format!("key share {group:#06x} (1 byte)"));
            }
            Extension::SignatureAlgorithms(list) if g.signature_algorithm => {
                let v = pick_grease(rng, None);
                list.insert(0, SignatureScheme::from(v));
                done.push(format!("signature algorithm {v:#06x}"));
            }
            Extension::SupportedVersionsClient(list) if g.version => {
                let v = pick_grease(rng, None);
                list.insert(0, ProtocolVersion::from(v));
                done.push(format!("version {v:#06x}"));
            }
            Extension::PskKeyExchangeModes(list) if g.psk_mode => {
                let mut b = [0u8; 1];
                rng.fill(&mut b);
                let v = GREASE_PSK_MODES[usize::from(b[0] & 7)];
                list.insert(0, PskKeyExchangeMode::from(v));
                done.push(format!("psk mode {v:#04x}"));
            }
            _ => {}
        }
    }
    if g.extensions {
        let first = pick_grease(rng, None);
        let last = pick_grease(rng, Some(first));
        ch.extensions.insert(
            0,
            Extension::Unknown {
                typ: ExtensionType::from(first),
                body: Vec::new(),
            },
        );
        let at = psk_position(ch);
        ch.extensions.insert(
            at,
            Extension::Unknown {
                typ: ExtensionType::from(last),
                body: vec![0],
            },
        );
        done.push(format!(
            "extensions {first:#06x} (empty, first) and {last:#06x} (1 byte, last)"
        ));
    }
    notes.push(format!("GREASE (RFC 8701): {}", done.join(", ")));
}

/// Where an extension goes that must precede pre_shared_key (§4.2.11: it is last).
fn psk_position(ch: &ClientHello) -> usize {
    ch.extensions
        .iter()
        .position(|e| e.typ() == ExtensionType::PreSharedKey)
        .unwrap_or(ch.extensions.len())
}

/// RFC 7685 padding: a padding extension (4-byte header + zeros) bringing the message to the
/// target, before pre_shared_key, as tls13lab's client and BoringSSL place it.
fn pad(ch: &mut ClientHello, p: HelloPadding, notes: &mut Vec<String>) {
    let len = HandshakeMessage::new(HandshakePayload::ClientHello(ch.clone()))
        .encoded
        .len();
    let target = match p {
        HelloPadding::ToSize(n) => n,
        HelloPadding::Avoid256To511 if (256..512).contains(&len) => 512,
        _ => 0,
    };
    if len + 4 <= target {
        let at = psk_position(ch);
        ch.extensions
            .insert(at, Extension::Padding(vec![0; target - len - 4]));
        notes.push(format!(
            "padding (RFC 7685): {} bytes brought the message from {len} to {target}",
            target - len
        ));
    } else if target > len {
        notes.push(format!(
            "padding: the message is {len} bytes; a padding extension needs 4 bytes, so {target} cannot be reached exactly: not padded"
        ));
    } else if let HelloPadding::ToSize(n) = p {
        notes.push(format!(
            "padding: the message ({len} bytes) is not shorter than {n}: not padded"
        ));
    }
}

// ---------------------------------------------------------------------------------- report

/// How the message is put into records (RFC 8446 §5.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Framing {
    /// Message offsets at which a new record starts (the "split the ClientHello" control).
    pub split_at: Vec<usize>,
    /// Largest record fragment (2^14 in TLS 1.3; a record_size_limit can lower what a peer
    /// accepts, not what a ClientHello may use).
    pub max_fragment: usize,
    /// legacy_record_version: 0x0301 for an initial ClientHello (§5.1).
    pub record_version: u16,
}

impl Default for Framing {
    fn default() -> Self {
        Framing {
            split_at: Vec::new(),
            max_fragment: 16_384,
            record_version: 0x0301,
        }
    }
}

/// Whether an [`Item`] is a fixed field of the ClientHello or an extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A field of §4.1.2 (or the handshake header, or the extensions' length).
    Field,
    /// One extension: 2 type + 2 length + body.
    Extension,
}

/// A named part of an item (a key share entry, the binders...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Part {
    /// Its name.
    pub name: String,
    /// Its bytes.
    pub len: usize,
}

/// One top-level piece of the message. The items of a report tile the message exactly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Item {
    /// Field or extension.
    pub kind: ItemKind,
    /// Field name, or the extension's name (GREASE extensions: `GREASE`).
    pub name: String,
    /// The extension type.
    pub code: Option<u16>,
    /// Offset in the handshake message (header included).
    pub offset: usize,
    /// Bytes, prefixes and headers included.
    pub len: usize,
    /// What it holds, in words.
    pub detail: String,
    /// Its main parts.
    pub parts: Vec<Part>,
    /// The first and last TCP segment (1-based) carrying its bytes.
    pub segments: (usize, usize),
}

/// One record of the framing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecordFrame {
    /// 1-based.
    pub index: usize,
    /// Where its fragment starts in the handshake message.
    pub msg_offset: usize,
    /// Fragment bytes.
    pub fragment_len: usize,
    /// 5 + fragment.
    pub wire_len: usize,
    /// Where it starts in the TCP stream.
    pub stream_offset: usize,
}

/// One TCP segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SegmentInfo {
    /// 1-based.
    pub index: usize,
    /// Where its payload starts in the stream.
    pub stream_offset: usize,
    /// Payload bytes.
    pub payload_len: usize,
    /// IP packet bytes.
    pub packet_len: usize,
    /// What it carries: record headers and items (`name…` when only part of it).
    pub carries: Vec<String>,
}

/// Every byte of one ClientHello, accounted for.
#[derive(Clone, Debug, Serialize)]
pub struct HelloReport {
    /// The spec's label.
    pub label: String,
    /// Where the shape comes from.
    pub source: Option<String>,
    /// Edits after the client built the message.
    pub notes: Vec<String>,
    /// RFC rules the message breaks.
    pub warnings: Vec<String>,
    /// Handshake message bytes (4-byte header included).
    pub message_len: usize,
    /// Fields and extensions in wire order; their `len`s sum to `message_len`.
    pub items: Vec<Item>,
    /// Extensions block: 2-byte length + every extension.
    pub extensions_len: usize,
    /// The records.
    pub records: Vec<RecordFrame>,
    /// Sum of the records' wire bytes: the TCP payload.
    pub record_bytes: usize,
    /// legacy_record_version of the records.
    pub record_version: String,
    /// The packet framing assumed.
    pub link: Link,
    /// The assumptions in words.
    pub link_text: String,
    /// The segments.
    pub segments: Vec<SegmentInfo>,
    /// IP bytes of all segments.
    pub packet_bytes: usize,
    /// Whether the ClientHello fits one segment.
    pub fits_one_segment: bool,
    /// The message, hex.
    pub hex: String,
    /// The records as sent, hex.
    pub records_hex: String,
    /// The full layout tree.
    #[serde(skip)]
    pub layout: Vec<Span>,
    /// The message bytes.
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

/// Account for every byte of `built`, framed by `framing`, over `link`.
pub fn describe(built: &BuiltHello, framing: &Framing, link: Link) -> Result<HelloReport, String> {
    let bytes = &built.message.encoded;
    let layout = built.message.layout();
    let len = bytes.len();

    // Records.
    let mut cuts: Vec<usize> = framing.split_at.clone();
    for &c in &cuts {
        if c == 0 || c >= len {
            return Err(format!(
                "cannot start a record at offset {c}: the message has {len} bytes (split at 1..{len})"
            ));
        }
    }
    if framing.max_fragment == 0 || framing.max_fragment > 16_384 {
        return Err("a record fragment has 1..=16384 bytes (RFC 8446 §5.1)".into());
    }
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    let mut records = Vec::new();
    let mut stream = 0;
    for w in cuts.windows(2) {
        let mut at = w[0];
        while at < w[1] {
            let n = framing.max_fragment.min(w[1] - at);
            records.push(RecordFrame {
                index: records.len() + 1,
                msg_offset: at,
                fragment_len: n,
                wire_len: 5 + n,
                stream_offset: stream,
            });
            stream += 5 + n;
            at += n;
        }
    }
    let record_bytes = stream;
    let to_stream = |m: usize| -> usize {
        records
            .iter()
            .find(|r| m >= r.msg_offset && m < r.msg_offset + r.fragment_len)
            .map_or(record_bytes, |r| r.stream_offset + 5 + m - r.msg_offset)
    };
    let seg_of = |s: usize| s / link.mss + 1;

    // Items.
    let mut items = Vec::new();
    let mut ext_index = 0;
    let mut extensions_len = 0;
    for span in &layout {
        if span.name == "extensions" {
            extensions_len = span.len;
            for c in &span.children {
                if c.name == "length" {
                    items.push(field(
                        c,
                        "extensions length",
                        "2-byte length of the extension block".into(),
                    ));
                    continue;
                }
                let ext = built.hello.extensions.get(ext_index);
                ext_index += 1;
                let code = u16::from_be_bytes([bytes[c.offset], bytes[c.offset + 1]]);
                items.push(Item {
                    kind: ItemKind::Extension,
                    name: extension_name(code),
                    code: Some(code),
                    offset: c.offset,
                    len: c.len,
                    detail: ext
                        .map(|e| extension_detail(e, c.len - 4))
                        .unwrap_or_default(),
                    parts: extension_parts(c),
                    segments: (0, 0),
                });
            }
            continue;
        }
        let detail = match span.name.as_str() {
            "msg_type" => "client_hello (1)".to_string(),
            "length" => format!("uint24 body length: {}", len - 4),
            "legacy_version" => format!(
                "{:#06x} (TLS 1.2, as §4.1.2 requires)",
                built.hello.legacy_version
            ),
            "random" => "32 random bytes".into(),
            "legacy_session_id" => match built.hello.legacy_session_id.len() {
                0 => "empty (compatibility mode off)".into(),
                n => format!("1 + {n} (compatibility mode, §D.4)"),
            },
            "cipher_suites" => format!(
                "2 + {} suites × 2{}",
                built.hello.cipher_suites.len(),
                tls12_note(&built.hello.cipher_suites)
            ),
            "legacy_compression_methods" => "1 + null(0)".into(),
            _ => String::new(),
        };
        let name = if span.name == "length" {
            "handshake length"
        } else {
            span.name.as_str()
        };
        items.push(field(span, name, detail));
    }
    for it in &mut items {
        let first = seg_of(to_stream(it.offset));
        let last = seg_of(to_stream(it.offset + it.len - 1));
        it.segments = (first, last);
    }

    // Segments.
    let segments: Vec<SegmentInfo> = link
        .segment(record_bytes)
        .into_iter()
        .enumerate()
        .map(|(i, (off, n))| {
            let end = off + n;
            let mut carries = Vec::new();
            for r in &records {
                if r.stream_offset >= off && r.stream_offset < end {
                    carries.push(format!("record {} header", r.index));
                }
            }
            for it in &items {
                let (a, b) = (to_stream(it.offset), to_stream(it.offset + it.len - 1) + 1);
                if a < end && b > off {
                    let whole = a >= off && b <= end;
                    carries.push(if whole {
                        it.name.clone()
                    } else {
                        format!("{}…", it.name)
                    });
                }
            }
            SegmentInfo {
                index: i + 1,
                stream_offset: off,
                payload_len: n,
                packet_len: link.packet_len(n),
                carries,
            }
        })
        .collect();
    let mut records_hex = String::new();
    for r in &records {
        let mut hdr = vec![22u8];
        hdr.extend_from_slice(&framing.record_version.to_be_bytes());
        hdr.extend_from_slice(&(r.fragment_len as u16).to_be_bytes());
        records_hex.push_str(&hex(&hdr));
        records_hex.push_str(&hex(&bytes[r.msg_offset..r.msg_offset + r.fragment_len]));
    }
    Ok(HelloReport {
        label: built.label.clone(),
        source: None,
        notes: built.notes.clone(),
        warnings: built.warnings.clone(),
        message_len: len,
        items,
        extensions_len,
        packet_bytes: segments.iter().map(|s| s.packet_len).sum(),
        fits_one_segment: segments.len() <= 1,
        segments,
        records,
        record_bytes,
        record_version: format!("{:#06x}", framing.record_version),
        link,
        link_text: link.describe(),
        hex: hex(bytes),
        records_hex,
        layout,
        bytes: bytes.clone(),
    })
}

/// [`build`] then [`describe`].
pub fn report(spec: &HelloSpec, framing: &Framing, link: Link) -> Result<HelloReport, String> {
    let built = build(spec).map_err(|e| e.to_string())?;
    let mut r = describe(&built, framing, link)?;
    r.source = spec.source.clone();
    Ok(r)
}

fn field(span: &Span, name: &str, detail: String) -> Item {
    Item {
        kind: ItemKind::Field,
        name: name.to_string(),
        code: None,
        offset: span.offset,
        len: span.len,
        detail,
        parts: Vec::new(),
        segments: (0, 0),
    }
}

/// An extension's name: the IANA name, `GREASE`, or `unknown`.
pub fn extension_name(code: u16) -> String {
    if is_grease(code) {
        return "GREASE".into();
    }
    ExtensionType::from(code).name().to_string()
}

fn version_name(v: ProtocolVersion) -> String {
    if is_grease(v.to_repr()) {
        format!("GREASE({:#06x})", v.to_repr())
    } else {
        v.to_string()
    }
}

fn group_name(g: NamedGroup) -> String {
    if is_grease(g.to_repr()) {
        format!("GREASE({:#06x})", g.to_repr())
    } else {
        g.to_string()
    }
}

fn tls12_note(suites: &[CipherSuite]) -> String {
    let grease = suites.iter().filter(|s| is_grease(s.to_repr())).count();
    let old = suites
        .iter()
        .filter(|s| !is_grease(s.to_repr()) && suite_params(**s).is_none())
        .count();
    let mut s = String::new();
    if old > 0 {
        s.push_str(&format!(", {old} not TLS 1.3"));
    }
    if grease > 0 {
        s.push_str(&format!(", {grease} GREASE"));
    }
    s
}

/// The body in words.
fn extension_detail(e: &Extension, body: usize) -> String {
    let names = |v: Vec<String>| -> String {
        let all = v.join(", ");
        if all.len() <= 64 {
            return all;
        }
        let mut short = format!("{}: ", v.len());
        for (i, x) in v.iter().enumerate() {
            if short.len() + x.len() > 60 {
                short.push('…');
                break;
            }
            if i > 0 {
                short.push_str(", ");
            }
            short.push_str(x);
        }
        short
    };
    match e {
        Extension::ServerName(list) => list
            .iter()
            .map(|n| format!("host_name \"{}\"", String::from_utf8_lossy(&n.name)))
            .collect::<Vec<_>>()
            .join(", "),
        Extension::SupportedGroups(g) => names(g.iter().map(|g| group_name(*g)).collect()),
        Extension::SignatureAlgorithms(s) | Extension::SignatureAlgorithmsCert(s) => {
            format!("{} schemes", s.len())
        }
        Extension::KeyShareClient(v) => names(
            v.iter()
                .map(|k| format!("{} {}", group_name(k.group), k.key_exchange.len()))
                .collect(),
        ),
        Extension::SupportedVersionsClient(v) => {
            names(v.iter().map(|x| version_name(*x)).collect())
        }
        Extension::PskKeyExchangeModes(m) => names(
            m.iter()
                .map(|x| {
                    if GREASE_PSK_MODES.contains(&x.to_repr()) {
                        format!("GREASE({:#04x})", x.to_repr())
                    } else {
                        x.to_string()
                    }
                })
                .collect(),
        ),
        Extension::Alpn(p) => names(
            p.iter()
                .map(|x| String::from_utf8_lossy(x).into_owned())
                .collect(),
        ),
        Extension::PreSharedKeyClient(o) => format!(
            "{} identity of {} bytes, binder of {} bytes",
            o.identities.len(),
            o.identities.first().map_or(0, |i| i.identity.len()),
            o.binders.first().map_or(0, Vec::len)
        ),
        Extension::Padding(p) => format!("{} zero bytes", p.len()),
        Extension::RecordSizeLimit(n) => format!("{n}"),
        Extension::Unknown { typ, body } if is_grease(typ.to_repr()) => {
            format!("RFC 8701, {} byte body", body.len())
        }
        Extension::RenegotiationInfo(b) if b.as_slice() == [0] => {
            "empty renegotiated_connection (RFC 5746)".into()
        }
        Extension::Unknown {
            typ: ExtensionType::EcPointFormats,
            body,
        } if body.as_slice() == [3, 0, 1, 2] => {
            "uncompressed, ansiX962_compressed_prime, _char2 (TLS 1.2)".into()
        }
        Extension::Unknown {
            typ:
                ExtensionType::SessionTicket
                | ExtensionType::EncryptThenMac
                | ExtensionType::ExtendedMasterSecret,
            body,
        } if body.is_empty() => "empty (TLS 1.2 only)".into(),
        _ if body == 0 => "empty".into(),
        _ => format!("{body} bytes"),
    }
}

/// Key share entries and PSK identities/binders as parts; other extensions: type, length, body.
fn extension_parts(span: &Span) -> Vec<Part> {
    let mut parts = vec![Part {
        name: "type + length".into(),
        len: 4,
    }];
    for c in span
        .children
        .iter()
        .filter(|c| c.name != "type" && c.name != "length")
    {
        let list: Vec<&Span> = c.children.iter().filter(|x| x.name != "length").collect();
        if c.name == "client_shares" {
            parts.push(Part {
                name: "client_shares length".into(),
                len: 2,
            });
            for s in list {
                // Span names are the group's Display; GREASE groups read better as such.
                let name = match s.name.strip_prefix("unknown(0x") {
                    Some(h) => match u16::from_str_radix(h.trim_end_matches(')'), 16) {
                        Ok(v) if is_grease(v) => format!("GREASE({v:#06x})"),
                        _ => s.name.clone(),
                    },
                    None => s.name.clone(),
                };
                parts.push(Part {
                    name: format!("{name} share (4 + key)"),
                    len: s.len,
                });
            }
        } else {
            parts.push(Part {
                name: c.name.clone(),
                len: c.len,
            });
        }
    }
    parts
}

// ---------------------------------------------------------------------------------- presets

/// Names of the built-in presets, with what they reproduce.
pub const PRESETS: &[(&str, &str)] = &[
    ("tls13lab", "tls13lab's own client defaults"),
    (
        "openssl-3.0",
        "OpenSSL 3.0 s_client defaults (Debian 12's openssl 3.0.19)",
    ),
    (
        "openssl-3.5",
        "OpenSSL 3.5 s_client defaults (hybrid X25519MLKEM768 + X25519 shares)",
    ),
];

/// TLS 1.2 suites OpenSSL 3.x offers after its TLS 1.3 ones (in its default order).
const OPENSSL_TLS12_SUITES: [u16; 27] = [
    0xc02c, 0xc030, 0x009f, 0xcca9, 0xcca8, 0xccaa, 0xc02b, 0xc02f, 0x009e, 0xc024, 0xc028, 0x006b,
    0xc023, 0xc027, 0x0067, 0xc00a, 0xc014, 0x0039, 0xc009, 0xc013, 0x0033, 0x009d, 0x009c, 0x003d,
    0x003c, 0x0035, 0x002f,
];

/// OpenSSL's TLS 1.2-era extensions: ec_point_formats (uncompressed, ansiX962 prime and char2),
/// session_ticket (empty), encrypt_then_mac, extended_master_secret.
fn openssl_legacy_extensions() -> Vec<Extension> {
    vec![
        Extension::Unknown {
            typ: ExtensionType::EcPointFormats,
            body: vec![3, 0, 1, 2],
        },
        Extension::Unknown {
            typ: ExtensionType::SessionTicket,
            body: Vec::new(),
        },
        Extension::Unknown {
            typ: ExtensionType::EncryptThenMac,
            body: Vec::new(),
        },
        Extension::Unknown {
            typ: ExtensionType::ExtendedMasterSecret,
            body: Vec::new(),
        },
    ]
}

fn schemes(codes: &[u16]) -> Vec<SignatureScheme> {
    codes.iter().map(|c| SignatureScheme::from(*c)).collect()
}

/// The signature algorithms OpenSSL 3.0 offers by default (`tls12_sigalgs` minus SHA-1, which
/// security level 1 drops): 20 schemes, the last 4 DSA.
pub const OPENSSL_30_SIGALGS: [u16; 20] = [
    0x0403, 0x0503, 0x0603, 0x0807, 0x0808, 0x0809, 0x080a, 0x080b, 0x0804, 0x0805, 0x0806, 0x0401,
    0x0501, 0x0601, 0x0303, 0x0301, 0x0302, 0x0402, 0x0502, 0x0602,
];

/// OpenSSL 3.5 adds ML-DSA first and the RFC 8734 brainpool schemes: 26 schemes, the last 4
/// DSA (absent from a `no-dsa` build).
pub const OPENSSL_35_SIGALGS: [u16; 26] = [
    0x0905, 0x0906, 0x0904, 0x0403, 0x0503, 0x0603, 0x0807, 0x0808, 0x081a, 0x081b, 0x081c, 0x0809,
    0x080a, 0x080b, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0303, 0x0301, 0x0302, 0x0402,
    0x0502, 0x0602,
];

/// DSA signature schemes (dsa_sha224..dsa_sha512), which a `no-dsa` OpenSSL does not offer.
pub const DSA_SCHEMES: [u16; 4] = [0x0302, 0x0402, 0x0502, 0x0602];

/// A preset by name (see [`PRESETS`]).
pub fn preset(name: &str) -> Option<HelloSpec> {
    use ExtensionType as T;
    let mut spec = HelloSpec::new(name);
    match name {
        "tls13lab" => {
            spec.source = Some("ClientConfig::default() with server_name example.com".into());
        }
        "openssl-3.0" | "openssl-3.5" => {
            let v35 = name == "openssl-3.5";
            let c = &mut spec.config;
            c.compat_mode = true; // OpenSSL sends a 32-byte legacy_session_id by default
            let mut suites = vec![
                CipherSuite::TLS_AES_256_GCM_SHA384,
                CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
                CipherSuite::TLS_AES_128_GCM_SHA256,
            ];
            suites.extend(OPENSSL_TLS12_SUITES.iter().map(|s| CipherSuite::from(*s)));
            let mut order = vec![
                T::ServerName,
                T::EcPointFormats,
                T::SupportedGroups,
                T::SessionTicket,
                T::EncryptThenMac,
                T::ExtendedMasterSecret,
                T::SignatureAlgorithms,
                T::SupportedVersions,
                T::PskKeyExchangeModes,
                T::KeyShare,
            ];
            let mut extra = openssl_legacy_extensions();
            use NamedGroup as G;
            if v35 {
                // 3.5 sends renegotiation_info as an extension instead of the SCSV.
                order.insert(0, T::RenegotiationInfo);
                extra.insert(0, Extension::RenegotiationInfo(vec![0]));
                c.groups = vec![
                    G::X25519MLKEM768,
                    G::X25519,
                    G::secp256r1,
                    G::X448,
                    G::secp384r1,
                    G::secp521r1,
                    G::ffdhe2048,
                    G::ffdhe3072,
                ];
                c.key_shares = vec![G::X25519MLKEM768, G::X25519];
                c.signature_schemes = schemes(&OPENSSL_35_SIGALGS);
                spec.versions = Some(vec![ProtocolVersion::TLSv1_3, ProtocolVersion::TLSv1_2]);
                spec.source = Some(
                    "OpenSSL 3.5 s_client -servername example.com: groups ?*X25519MLKEM768 / ?*X25519:?secp256r1 / \
                     ?X448:?secp384r1:?secp521r1 / ?ffdhe2048:?ffdhe3072 (two key shares), checked against a captured \
                     ClientHello of OpenSSL 3.5.5 (tests/instruments.rs)"
                        .into(),
                );
            } else {
                suites.push(CipherSuite::TLS_EMPTY_RENEGOTIATION_INFO_SCSV);
                c.groups = vec![
                    G::X25519,
                    G::secp256r1,
                    G::X448,
                    G::secp521r1,
                    G::secp384r1,
                    G::ffdhe2048,
                    G::ffdhe3072,
                    G::ffdhe4096,
                    G::ffdhe6144,
                    G::ffdhe8192,
                ];
                c.key_shares = vec![G::X25519];
                c.signature_schemes = schemes(&OPENSSL_30_SIGALGS);
                spec.versions = Some(vec![
                    ProtocolVersion::TLSv1_3,
                    ProtocolVersion::TLSv1_2,
                    ProtocolVersion::TLSv1_1,
                    ProtocolVersion::TLSv1_0,
                ]);
                spec.source = Some(
                    "OpenSSL 3.0 s_client -servername example.com (Debian 12, 3.0.19), checked against a captured \
                     ClientHello (tests/instruments.rs)"
                        .into(),
                );
            }
            c.cipher_suites = suites;
            c.extra_extensions = extra;
            c.extension_order = order;
            c.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
        }
        _ => return None,
    }
    Some(spec)
}

// ---------------------------------------------------------------------------------- rendering

/// The report as text: fields and extensions, records, segments.
pub fn render(r: &HelloReport, tree: bool) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "ClientHello \"{}\"", r.label);
    if let Some(src) = &r.source {
        let _ = writeln!(s, "  shape: {src}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "  edit: {n}");
    }
    for w in &r.warnings {
        let _ = writeln!(s, "  WARNING: {w}");
    }
    let _ = writeln!(
        s,
        "\n{:<34} {:>6} {:>6} {:>4}  contents",
        "field / extension", "offset", "bytes", "seg"
    );
    for it in &r.items {
        let name = match it.code {
            Some(c) => format!("  {} ({c:#06x})", it.name),
            None => it.name.clone(),
        };
        let seg = if it.segments.0 == it.segments.1 {
            it.segments.0.to_string()
        } else {
            format!("{}-{}", it.segments.0, it.segments.1)
        };
        let _ = writeln!(
            s,
            "{:<34} {:>6} {:>6} {:>4}  {}",
            name, it.offset, it.len, seg, it.detail
        );
        if it.parts.len() > 2 && it.kind == ItemKind::Extension {
            for p in &it.parts {
                let _ = writeln!(
                    s,
                    "{:<34} {:>6} {:>6}",
                    format!("      {}", p.name),
                    "",
                    p.len
                );
            }
        }
    }
    let fields: usize = r
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Field && i.name != "extensions length")
        .map(|i| i.len)
        .sum();
    let _ = writeln!(
        s,
        "\nhandshake message  {} bytes = {} fixed fields (header 4 included) + {} extension block ({} extensions)",
        r.message_len,
        fields,
        r.extensions_len,
        r.items.iter().filter(|i| i.kind == ItemKind::Extension).count()
    );
    let recs: Vec<String> = r
        .records
        .iter()
        .map(|x| format!("5+{}", x.fragment_len))
        .collect();
    let _ = writeln!(
        s,
        "records            {} bytes in {} record{} ({}), legacy_record_version {}",
        r.record_bytes,
        r.records.len(),
        if r.records.len() == 1 { "" } else { "s" },
        recs.join(", "),
        r.record_version
    );
    let _ = writeln!(s, "TCP                {}", r.link_text);
    for seg in &r.segments {
        let _ = writeln!(
            s,
            "  segment {}: stream {}..{}, {} payload bytes, {} byte packet: {}",
            seg.index,
            seg.stream_offset,
            seg.stream_offset + seg.payload_len,
            seg.payload_len,
            seg.packet_len,
            carries_text(&seg.carries)
        );
    }
    let _ = writeln!(
        s,
        "verdict            {}",
        if r.fits_one_segment {
            "fits one TCP segment".to_string()
        } else {
            format!(
                "crosses a segment boundary: {} segments, {} packet bytes",
                r.segments.len(),
                r.packet_bytes
            )
        }
    );
    if tree {
        s.push_str("\nlayout (offset, bytes, name)\n");
        for span in &r.layout {
            tree_lines(&mut s, span, 1);
        }
    }
    s
}

/// `a, b … y, z` for long lists.
fn carries_text(c: &[String]) -> String {
    if c.len() <= 5 {
        return c.join(", ");
    }
    format!(
        "{}, {} … {}, {} ({} items)",
        c[0],
        c[1],
        c[c.len() - 2],
        c[c.len() - 1],
        c.len()
    )
}

fn tree_lines(s: &mut String, span: &Span, depth: usize) {
    use std::fmt::Write as _;
    let _ = writeln!(
        s,
        "{:>6} {:>6} {}{}",
        span.offset,
        span.len,
        "  ".repeat(depth),
        span.name
    );
    for c in &span.children {
        tree_lines(s, c, depth + 1);
    }
}

/// The bytes, item by item, 32 per line; record headers where records start.
pub fn render_hex(r: &HelloReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let record_at = |m: usize| r.records.iter().find(|x| x.msg_offset == m);
    for it in &r.items {
        for rec in r
            .records
            .iter()
            .filter(|x| x.msg_offset >= it.offset && x.msg_offset < it.offset + it.len)
        {
            let h = &r.records_hex[2 * rec.stream_offset..2 * rec.stream_offset + 10];
            let _ = writeln!(s, "{:<28} {h}  (record {} header)", "", rec.index);
        }
        let _ = record_at;
        let bytes = &r.bytes[it.offset..it.offset + it.len];
        for (i, chunk) in bytes.chunks(32).enumerate() {
            let name = if i == 0 { it.name.as_str() } else { "" };
            let _ = writeln!(s, "{:<28} {}", name, hex(chunk));
        }
    }
    s
}

/// A key identifying "the same row" across configurations.
fn row_key(it: &Item, grease_seen: &mut usize) -> String {
    match it.code {
        Some(c) if is_grease(c) => {
            *grease_seen += 1;
            format!("grease#{grease_seen}")
        }
        Some(c) => format!("ext:{c}"),
        None => it.name.clone(),
    }
}

/// Several configurations side by side, item by item, with each one's difference from the first.
pub fn render_compare(reports: &[HelloReport]) -> String {
    use std::fmt::Write as _;
    // Rows: every item of every report, in first-seen order, new ones after their predecessor.
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut cells: Vec<std::collections::HashMap<String, usize>> = Vec::new();
    for r in reports {
        let mut map = std::collections::HashMap::new();
        let mut g = 0;
        let mut prev: Option<usize> = None;
        for it in &r.items {
            let key = row_key(it, &mut g);
            let label = match it.code {
                Some(c) if is_grease(c) => format!("  GREASE extension #{g}"),
                Some(c) => format!("  {} ({c})", it.name),
                None => it.name.clone(),
            };
            map.insert(key.clone(), it.len);
            match rows.iter().position(|(k, _)| *k == key) {
                Some(i) => prev = Some(i),
                None => {
                    let at = prev.map_or(rows.len(), |p| p + 1);
                    rows.insert(at, (key, label));
                    prev = Some(at);
                }
            }
        }
        cells.push(map);
    }
    // pre_shared_key is last in every ClientHello (§4.2.11): keep its row last too.
    if let Some(i) = rows.iter().position(|(k, _)| k == "ext:41") {
        let psk = rows.remove(i);
        rows.push(psk);
    }
    let w: Vec<usize> = reports
        .iter()
        .map(|r| r.label.chars().count().max(13))
        .collect();
    let lw = rows
        .iter()
        .map(|(_, l)| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(20)
        + 1;
    let mut s = String::new();
    let _ = write!(s, "{:<lw$}", "bytes");
    for (r, w) in reports.iter().zip(&w) {
        let _ = write!(s, " {:>w$}", r.label, w = *w);
    }
    s.push('\n');
    let cell = |v: Option<usize>, base: Option<usize>, first: bool| -> String {
        match (v, first) {
            (None, _) => "-".into(),
            (Some(v), true) => v.to_string(),
            (Some(v), false) => {
                let d = v as i64 - base.unwrap_or(0) as i64;
                if d == 0 {
                    v.to_string()
                } else {
                    format!("{v} ({d:+})")
                }
            }
        }
    };
    for (key, label) in &rows {
        let _ = write!(s, "{label:<lw$}");
        let base = cells[0].get(key).copied();
        for (i, w) in w.iter().enumerate() {
            let _ = write!(
                s,
                " {:>w$}",
                cell(cells[i].get(key).copied(), base, i == 0),
                w = *w
            );
        }
        s.push('\n');
    }
    type Total = (&'static str, fn(&HelloReport) -> usize);
    let totals: [Total; 4] = [
        ("handshake message", |r| r.message_len),
        ("records on the wire", |r| r.record_bytes),
        ("TCP segments", |r| r.segments.len()),
        ("IP packet bytes", |r| r.packet_bytes),
    ];
    for (name, f) in totals {
        let _ = write!(s, "{name:<lw$}");
        let base = f(&reports[0]);
        for (i, (r, w)) in reports.iter().zip(&w).enumerate() {
            let _ = write!(s, " {:>w$}", cell(Some(f(r)), Some(base), i == 0), w = *w);
        }
        s.push('\n');
    }
    let _ = write!(s, "{:<lw$}", "fits one segment");
    for (r, w) in reports.iter().zip(&w) {
        let _ = write!(
            s,
            " {:>w$}",
            if r.fits_one_segment { "yes" } else { "no" },
            w = *w
        );
    }
    s.push('\n');
    if let Some(r) = reports.first() {
        let _ = writeln!(
            s,
            "({}; one record per ClientHello unless split)",
            r.link_text
        );
    }
    for r in reports {
        for n in r.notes.iter().chain(&r.warnings) {
            let _ = writeln!(s, "{}: {n}", r.label);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grease_values_are_recognized() {
        for v in GREASE_VALUES {
            assert!(is_grease(v), "{v:#x}");
        }
        assert!(!is_grease(0x1a2a));
        assert!(!is_grease(0x0a0b));
        assert!(!is_grease(0x001d));
    }

    #[test]
    fn items_tile_the_message() {
        let mut spec = HelloSpec::new("t");
        spec.grease = Grease::ALL;
        spec.psk = Some(PskOffer {
            identity_len: 100,
            early_data: true,
            suite: CipherSuite::TLS_AES_128_GCM_SHA256,
        });
        spec.padding = HelloPadding::ToSize(700);
        let r = report(&spec, &Framing::default(), Link::default()).unwrap();
        assert_eq!(r.message_len, 700);
        let mut at = 0;
        for it in &r.items {
            assert_eq!(it.offset, at, "{}", it.name);
            at += it.len;
        }
        assert_eq!(at, r.message_len);
    }
}
