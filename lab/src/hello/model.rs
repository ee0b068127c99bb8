//! The ClientHello lab's types: what shapes a hello ([`HelloSpec`], [`Grease`], [`PskOffer`]),
//! the hello as built ([`BuiltHello`]) and every byte of it accounted for ([`HelloReport`]).

use serde::Serialize;

use crate::fingerprint::ClientFingerprints;
use crate::tcp::Link;
use tls13lab::config::{ClientConfig, HelloPadding};
use tls13lab::crypto::hpke::Kem;
use tls13lab::messages::enums::{CipherSuite, ProtocolVersion};
use tls13lab::messages::handshake::{ClientHello, HandshakeMessage};
use tls13lab::messages::layout::Span;

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
    /// With `config.ech` GREASE: the HPKE AEAD id and payload length the program itself puts in
    /// its GREASE encrypted_client_hello, which RFC 9849 §6.2 leaves to the client (Chromium
    /// sent 144 to 208 bytes in our runs, Firefox 239, where §6.2's sizing gives about 1,500
    /// with a hybrid share). `tls13lab client --preset` sends this size; the lab sizes its own
    /// per §6.2.
    pub grease_ech_size: Option<(u16, usize)>,
}

impl HelloSpec {
    /// tls13lab's own client defaults, with `example.com` as server name.
    pub fn new(label: impl Into<String>) -> HelloSpec {
        HelloSpec {
            label: label.into(),
            config: {
                let mut config = ClientConfig::default();
                config.server_name = Some("example.com".into());
                config
            },
            versions: None,
            grease: Grease::default(),
            psk: None,
            padding: HelloPadding::None,
            seed: 1,
            source: None,
            grease_ech_size: None,
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
    /// With ECH: the ClientHelloInner behind the outer `message`, as the client sealed it.
    pub ech: Option<EchView>,
}

/// Whether the hello carries a real ECH offer or GREASE (RFC 9849 §6.1, §6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EchKind {
    /// ClientHelloInner sealed to an ECHConfig.
    Config,
    /// A GREASE extension: random bytes of the right shape.
    Grease,
    /// Another client's (`hello --from`): a real offer or GREASE, which look alike from
    /// outside (§6.2).
    Captured,
}

/// One extension of ClientHelloInner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InnerExtension {
    /// Its name.
    pub name: String,
    /// Its type.
    pub code: u16,
    /// Bytes: 2 type + 2 length + body.
    pub len: usize,
    /// Replaced by the `ech_outer_extensions` reference in EncodedClientHelloInner (§5.1):
    /// the outer hello carries the same bytes.
    pub compressed: bool,
}

/// The ClientHelloInner of a real offer and how it was encoded for sealing (RFC 9849 §5.1,
/// §6.1.3). `encoded_len + name_padding + round_padding == sealed_len`, and
/// `sealed_len + tag` is the payload of the outer hello's extension.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EchInner {
    /// ClientHelloInner, 4-byte handshake header included: what the transcript hashes.
    pub message_len: usize,
    /// Its extensions in order.
    pub extensions: Vec<InnerExtension>,
    /// Its legacy_session_id bytes, which EncodedClientHelloInner leaves out (§5.1).
    pub session_id_len: usize,
    /// The `ech_outer_extensions` extension that replaces the compressed ones (4 + 1 + 2n).
    pub outer_extensions_len: usize,
    /// The compressed extensions' bytes minus the reference's.
    pub saved: usize,
    /// EncodedClientHelloInner before padding.
    pub encoded_len: usize,
    /// ECHConfig.maximum_name_length (L of §6.1.3).
    pub maximum_name_length: u8,
    /// max(0, L − length of the inner server name), or L + 9 without one (§6.1.3).
    pub name_padding: usize,
    /// Zeros up to the next multiple of 32 (§6.1.3).
    pub round_padding: usize,
    /// The whole EncodedClientHelloInner: what the AEAD sealed.
    pub sealed_len: usize,
}

/// The encrypted_client_hello extension of the outer hello, part by part (RFC 9849 §5), and
/// what it hides. Its parts add up to `extension_len`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EchView {
    /// Real offer or GREASE.
    pub kind: EchKind,
    /// The whole extension: 4 + 1 type + 4 suite + 1 config_id + 2 + enc + 2 + payload.
    pub extension_len: usize,
    /// HPKE KDF and AEAD, e.g. `HKDF-SHA256/AES-128-GCM`.
    pub suite: String,
    /// ECHClientHello.config_id (random for GREASE).
    pub config_id: u8,
    /// The encapsulated key (32 for X25519).
    pub enc_len: usize,
    /// The payload: sealed EncodedClientHelloInner plus the tag.
    pub payload_len: usize,
    /// The AEAD tag in the payload.
    pub tag_len: usize,
    /// server_name of the outer hello (the config's public_name; the real name with GREASE).
    pub outer_sni: Option<String>,
    /// server_name of the inner hello (none for GREASE: there is no inner hello).
    pub inner_sni: Option<String>,
    /// The config's public_name (real offers).
    pub public_name: Option<String>,
    /// The config's HPKE KEM (real offers): DHKEM(X25519)'s enc is a 32-byte key, ML-KEM-768's
    /// and X-Wing's a 1088- or 1120-byte ciphertext (draft-ietf-hpke-pq).
    #[serde(serialize_with = "ser_kem", skip_serializing_if = "Option::is_none")]
    pub kem: Option<Kem>,
    /// The inner hello (real offers).
    pub inner: Option<EchInner>,
    /// GREASE: the EncodedClientHelloInner length the payload pretends to seal (§6.2: a real
    /// offer's for this hello, with maximum_name_length 0).
    pub grease_encoded_len: Option<usize>,
}

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

/// Where a captured hello (`hello --from`) was found and how it travelled there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CaptureView {
    /// The file and the place in it, in words.
    pub origin: String,
    /// Whether the file had its records (else one record is assumed).
    pub records_captured: bool,
    /// Payload bytes of each TCP segment that carried part of its records in the capture
    /// (empty without TCP); the report's `segments` are those of its `link`.
    pub tcp_segments: Vec<usize>,
    /// Bytes of the next message sharing its last record (not counted in the report).
    pub trailing: usize,
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
    /// The ECH view (RFC 9849), when the hello offers ECH or GREASE ECH.
    pub ech: Option<EchView>,
    /// JA3 and JA4 (crate::fingerprint).
    pub fingerprints: Option<ClientFingerprints>,
    /// A captured hello (`hello --from`): where it was found and how it travelled.
    pub capture: Option<CaptureView>,
    /// The full layout tree.
    #[serde(skip)]
    pub layout: Vec<Span>,
    /// The message bytes.
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

/// A KEM by its IANA name (`ML-KEM-768`).
fn ser_kem<S: serde::Serializer>(k: &Option<Kem>, s: S) -> Result<S::Ok, S::Error> {
    match k {
        Some(k) => s.serialize_str(&k.id().to_string()),
        None => s.serialize_none(),
    }
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
}
