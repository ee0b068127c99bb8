//! Building the measurements: a ClientHello made by the real client from a [`HelloSpec`] and
//! edited as asked ([`build`]), then its layout spans turned into fields, extensions, records and
//! TCP segments ([`describe`]).

use std::sync::Arc;

use super::model::{
    is_grease, BuiltHello, EchInner, EchKind, EchView, Framing, Grease, HelloReport, HelloSpec,
    InnerExtension, Item, ItemKind, Part, RecordFrame, SegmentInfo, GREASE_PSK_MODES,
    GREASE_VALUES,
};
use crate::tcp::Link;
use tls13lab::client::Client;
use tls13lab::config::{EchMode, HelloPadding};
use tls13lab::crypto::aead::suite_params;
use tls13lab::crypto::hpke::Aead;
use tls13lab::crypto::kx;
use tls13lab::crypto::random::{RandomSource, SeededRandom};
use tls13lab::ech::client::{choose, compressible_run, Chosen};
use tls13lab::ech::wire::EchClientHello;
use tls13lab::error::Error;
use tls13lab::events::{hex, Event, Observe};
use tls13lab::keyschedule::schedule::{EarlySecret, NoSink};
use tls13lab::keyschedule::transcript::Transcript;
use tls13lab::messages::enums::{
    CipherSuite, ContentType, ExtensionType, NamedGroup, ProtocolVersion, PskKeyExchangeMode,
    SignatureScheme,
};
use tls13lab::messages::extensions::{Extension, KeyShareEntry};
use tls13lab::messages::handshake::{
    ClientHello, DecodeContext, HandshakeMessage, HandshakePayload,
};
use tls13lab::messages::layout::Span;
use tls13lab::session::{StoredTicket, TicketStore};

/// The clock the lab's client runs at (2026-01-01T00:00:00Z); only ticket ages depend on it.
pub const LAB_NOW_MS: u64 = 1_767_225_600_000;

/// The size of a group's client key_exchange: X25519/X448 u-coordinates (RFC 7748),
/// uncompressed points (RFC 8446 §4.2.8.2, also for the RFC 8734 brainpool curves), FFDHE Y as
/// long as the prime (§4.2.8.1, RFC 7919: ffdhe8192's is 1024 bytes), ML-KEM encapsulation keys
/// and the hybrids' concatenations. [`build`] makes real shares for the groups tls13lab
/// implements and uses random bytes of this size for the others (brainpool, GREASE).
pub fn share_len(group: NamedGroup) -> Option<usize> {
    Some(match group {
        NamedGroup::X25519 => 32,
        NamedGroup::X448 => 56,
        NamedGroup::secp256r1 => 65,
        NamedGroup::secp384r1 => 97,
        NamedGroup::secp521r1 => 133,
        NamedGroup::brainpoolP256r1tls13 => 65,
        NamedGroup::brainpoolP384r1tls13 => 97,
        NamedGroup::brainpoolP512r1tls13 => 129,
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
                                            // Handshake events carry the ClientHelloInner a real ECH offer sealed.
    cfg.observe = Observe::NONE.with_handshake(true);
    let wanted = cfg.key_shares.clone();
    let mut real: Vec<NamedGroup> = Vec::new();
    for g in &wanted {
        if kx::is_supported(*g) && !real.contains(g) {
            real.push(*g);
        }
    }
    let chosen = match &cfg.ech {
        EchMode::Config {
            list,
            grease_fallback,
        } => match choose(list) {
            Some(c) => Some(c),
            None if *grease_fallback => None,
            None => {
                return Err(Error::Config(
                    "no usable ECHConfig in the list (version 0xfe0d, an HPKE suite tls13lab \
                     implements, a host name as public_name, no mandatory extension: \
                     RFC 9849 §4, §6.1)"
                        .into(),
                ))
            }
        },
        _ => None,
    };
    if chosen.is_some() {
        // ClientHelloOuter is the AAD of the sealed inner hello (RFC 9849 §5.2): an edit after
        // sealing would send bytes no server opens, so the outer hello goes out as built.
        let mut edits = Vec::new();
        if spec.versions.is_some() {
            edits.push("--versions");
        }
        if spec.grease.any() {
            edits.push("--grease");
        }
        if spec.padding != HelloPadding::None {
            edits.push("--pad-to");
        }
        if real != wanted {
            edits.push("repeated key shares or shares for groups tls13lab does not implement");
        }
        if !edits.is_empty() {
            return Err(Error::Config(format!(
                "with --ech-config the lab cannot apply {}: ClientHelloOuter is the AAD of the \
                 sealed ClientHelloInner (RFC 9849 §5.2), so it is measured exactly as the \
                 client sends it",
                edits.join(", ")
            )));
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
    let events: Vec<Event> = client.events().collect();
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

    if let (Some((hash, psk)), None) = (psk_secret, &chosen) {
        // (With ECH the real binder is inside, and the client computed it: nothing was edited.)
        // The binder covers the ClientHello up to the binders list (§4.2.11.2): recompute it
        // over the edited bytes.
        let edited = HandshakeMessage::new(HandshakePayload::ClientHello(ch.clone()));
        let key = EarlySecret::new(hash, Some(&psk), &mut NoSink).binder_key(true, &mut NoSink);
        // A first ClientHello: nothing precedes it in the transcript.
        let first = Transcript::new();
        if let Some(b) =
            key.binder_for_hello(&first, &edited.encoded, ch.binders_len(), &mut NoSink)
        {
            // Only a hello whose last extension is pre_shared_key has binders to write.
            let _ = ch.set_psk_binders(vec![b]);
        }
    }
    let message = HandshakeMessage::new(HandshakePayload::ClientHello(ch.clone()));
    if chosen.is_some() && message.encoded != first {
        return Err(Error::InvalidState(
            "the ECH outer hello changed after the client sealed it",
        ));
    }
    let ech = ech_view(&ch, chosen.as_ref(), &events)?;
    if ech.as_ref().is_some_and(|e| e.kind == EchKind::Grease)
        && (spec.versions.is_some() || spec.grease.any() || spec.padding != HelloPadding::None)
    {
        notes.push(
            "GREASE ECH: the payload was sized (§6.2) for the hello before the lab's edits".into(),
        );
    }
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
        ech,
    })
}

/// The ECH view of the outer hello `outer` (RFC 9849 §5): its extension's parts, and for a real
/// offer the ClientHelloInner the client reported, re-encoded here with the client's own
/// functions (§5.1, §6.1.3) — whose length must be what the payload sealed, or the build fails.
fn ech_view(
    outer: &ClientHello,
    chosen: Option<&Chosen>,
    events: &[Event],
) -> Result<Option<EchView>, Error> {
    let Some(Extension::Unknown { body, .. }) = outer.find(ExtensionType::EncryptedClientHello)
    else {
        return Ok(None);
    };
    let EchClientHello::Outer {
        suite,
        config_id,
        enc,
        payload,
    } = EchClientHello::decode(body)?
    else {
        return Err(Error::InvalidState(
            "the outer hello carries an inner ECH extension",
        ));
    };
    let tag_len = Aead::from_id(suite.aead_id).map_or(0, Aead::tag_len);
    let mut view = EchView {
        kind: EchKind::Grease,
        extension_len: 4 + body.len(),
        suite: format!("{}/{}", suite.kdf_id, suite.aead_id),
        config_id,
        enc_len: enc.len(),
        payload_len: payload.len(),
        tag_len,
        outer_sni: outer.host_name(),
        inner_sni: None,
        public_name: None,
        kem: None,
        inner: None,
        grease_encoded_len: None,
    };
    let Some(chosen) = chosen else {
        let len = events.iter().find_map(|e| match e {
            Event::EchOffer(o) => Some(o.encoded_inner_len),
            _ => None,
        });
        if len.map(|l| l + tag_len) != Some(payload.len()) {
            return Err(Error::InvalidState(
                "the GREASE ECH payload is not the size the client reported",
            ));
        }
        view.grease_encoded_len = len;
        return Ok(Some(view));
    };
    let inner_msg = events
        .iter()
        .find_map(|e| match e {
            Event::InnerClientHello(h) => Some(h.bytes.clone()),
            _ => None,
        })
        .ok_or(Error::InvalidState(
            "the client reported no ClientHelloInner",
        ))?;
    let decoded = HandshakeMessage::decode(&inner_msg, DecodeContext::default())?;
    let HandshakePayload::ClientHello(inner) = &decoded.payload else {
        return Err(Error::InvalidState("ClientHelloInner is not a ClientHello"));
    };
    let types: Vec<ExtensionType> = inner.extensions.iter().map(Extension::typ).collect();
    let run = compressible_run(&types);
    let compress: Vec<u16> = run.iter().map(|t| t.to_repr()).collect();
    let (encoded, layout) =
        tls13lab::ech::inner::encode(&inner_msg[4..], &compress, chosen.maximum_name_length)
            .map_err(|e| Error::Config(e.to_string()))?;
    if encoded.len() + tag_len != payload.len() {
        return Err(Error::InvalidState(
            "EncodedClientHelloInner plus the tag is not the sealed payload's length",
        ));
    }
    let mut extensions = Vec::new();
    for span in decoded.layout().iter().filter(|s| s.name == "extensions") {
        for c in span.children.iter().filter(|c| c.name != "length") {
            let code = u16::from_be_bytes([inner_msg[c.offset], inner_msg[c.offset + 1]]);
            extensions.push(InnerExtension {
                name: extension_name(code),
                code,
                len: c.len,
                compressed: compress.contains(&code),
            });
        }
    }
    view.kind = EchKind::Config;
    view.inner_sni = inner.host_name();
    view.public_name = Some(chosen.public_name.clone());
    view.kem = Some(chosen.suite.kem);
    view.inner = Some(EchInner {
        message_len: inner_msg.len(),
        extensions,
        session_id_len: inner.legacy_session_id.len(),
        // 4-byte header, a one-byte list length, two bytes per type (§5.1).
        outer_extensions_len: if compress.is_empty() {
            0
        } else {
            4 + 1 + 2 * compress.len()
        },
        saved: layout.saved,
        encoded_len: layout.client_hello,
        maximum_name_length: chosen.maximum_name_length,
        name_padding: layout.name_padding,
        round_padding: layout.round_padding,
        sealed_len: layout.total(),
    });
    Ok(Some(view))
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
    let target = p.target(len).unwrap_or(0);
    if let Some(body) = p.extension_body_len(len) {
        let at = psk_position(ch);
        ch.extensions.insert(at, Extension::Padding(vec![0; body]));
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
                    parts: ech_parts(&bytes[c.offset + 4..c.offset + c.len], built.ech.as_ref())
                        .unwrap_or_else(|| extension_parts(c)),
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
        ech: built.ech.clone(),
        fingerprints: crate::fingerprint::client_hello(bytes).ok(),
        capture: None,
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

/// An extension's name: the IANA name, `GREASE`, the name of a code point browsers send
/// without an IANA entry, or `unknown`.
pub fn extension_name(code: u16) -> String {
    if is_grease(code) {
        return "GREASE".into();
    }
    match code {
        // draft-vvv-tls-alps: Chrome's first code point and its current one.
        0x4469 => "application_settings_old".into(),
        0x44cd => "application_settings".into(),
        _ => ExtensionType::from(code).name().to_string(),
    }
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
        // RFC 8879 §3: the algorithms the client decompresses a server Certificate with.
        Extension::CompressCertificate(a) => names(a.iter().map(|x| x.to_string()).collect()),
        Extension::Unknown {
            typ: ExtensionType::EncryptedClientHello,
            body: ech,
        } => match EchClientHello::decode(ech) {
            Ok(EchClientHello::Outer {
                suite,
                config_id,
                enc,
                payload,
            }) => format!(
                "outer, {}/{}, config_id {config_id}, enc {}, payload {}",
                suite.kdf_id,
                suite.aead_id,
                enc.len(),
                payload.len()
            ),
            Ok(EchClientHello::Inner) => "inner (RFC 9849 §5)".into(),
            Err(_) => format!("{body} bytes, not an ECHClientHello"),
        },
        // draft-ietf-tls-trust-anchor-ids §4.1: the IDs in their ASCII form (§3).
        Extension::Unknown {
            typ: ExtensionType::TrustAnchors,
            body,
        } => match tls13lab::trust_anchors::decode_requested(body) {
            Ok(ids) if ids.is_empty() => "RequestedTrustAnchorList, empty".into(),
            Ok(ids) => format!(
                "RequestedTrustAnchorList: {}",
                names(
                    ids.iter()
                        .map(|id| { tls13lab::trust_anchors::to_ascii(id) })
                        .collect()
                )
            ),
            Err(_) => format!("{} bytes, not a RequestedTrustAnchorList", body.len()),
        },
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
        // RFC 8422 §5.1.2: a one-byte list of formats.
        Extension::Unknown {
            typ: ExtensionType::EcPointFormats,
            body,
        } if body.first().map(|n| usize::from(*n) + 1) == Some(body.len()) => {
            let names: Vec<String> = body[1..]
                .iter()
                .map(|f| match f {
                    0 => "uncompressed".to_string(),
                    1 => "ansiX962_compressed_prime".into(),
                    2 => "ansiX962_compressed_char2".into(),
                    f => format!("{f}"),
                })
                .collect();
            format!("{} (TLS 1.2)", names.join(", "))
        }
        // RFC 6066 §8: status_type ocsp, empty responder_id_list and request_extensions.
        Extension::StatusRequest(body) if body.as_slice() == [1, 0, 0, 0, 0] => {
            "ocsp, no responder ids or extensions (RFC 6066 §8)".into()
        }
        // draft-vvv-tls-alps: the ALPN protocols the client has settings for.
        Extension::Unknown { typ, body } if matches!(typ.to_repr(), 0x4469 | 0x44cd) => {
            alps_protocols(body).unwrap_or_else(|| format!("{} bytes", body.len()))
        }
        Extension::Sct(body) if body.is_empty() => "empty: asks for SCTs (RFC 6962 §3.3.1)".into(),
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

/// ALPS's body: a u16-prefixed list of u8-prefixed protocol names (as ALPN's).
fn alps_protocols(body: &[u8]) -> Option<String> {
    let mut r = tls13lab::messages::codec::Reader::new(body);
    let mut list = r.sub_u16("protocols").ok()?;
    r.finish("ALPS").ok()?;
    let mut names = Vec::new();
    while !list.is_empty() {
        names.push(String::from_utf8_lossy(&list.vec_u8("protocol").ok()?).into_owned());
    }
    Some(names.join(", "))
}

/// An outer encrypted_client_hello's parts (RFC 9849 §5): ECHClientHelloType, cipher_suite,
/// config_id, enc and payload, its AEAD tag apart. `None` for any other body.
fn ech_parts(body: &[u8], view: Option<&EchView>) -> Option<Vec<Part>> {
    let EchClientHello::Outer {
        suite,
        enc,
        payload,
        ..
    } = EchClientHello::decode(body).ok()?
    else {
        return None;
    };
    let tag = Aead::from_id(suite.aead_id).map_or(0, Aead::tag_len);
    let kind = view.map(|v| v.kind);
    let part = |name: &str, len: usize| Part {
        name: name.into(),
        len,
    };
    let (sealed, tag_name) = match kind {
        Some(EchKind::Grease) => ("payload: random (GREASE)", "payload: tag-sized random"),
        Some(EchKind::Captured) => ("payload: sealed or GREASE", "payload: tag (or as long)"),
        _ => ("payload: sealed inner hello", "payload: AEAD tag"),
    };
    Some(vec![
        part("type + length", 4),
        part("ECHClientHelloType outer", 1),
        part("cipher_suite (KDF, AEAD)", 4),
        part("config_id", 1),
        part("enc length", 2),
        part("enc (HPKE encapsulated key)", enc.len()),
        part("payload length", 2),
        part(sealed, payload.len().saturating_sub(tag)),
        part(tag_name, tag.min(payload.len())),
    ])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hello::PskOffer;

    #[test]
    fn items_tile_the_message() {
        let mut spec = HelloSpec::new("t");
        spec.grease = Grease::ALL;
        spec.psk = Some(PskOffer {
            identity_len: 100,
            early_data: true,
            suite: CipherSuite::TLS_AES_128_GCM_SHA256,
        });
        spec.padding = HelloPadding::ToSize(2000);
        let r = report(&spec, &Framing::default(), Link::default()).unwrap();
        assert_eq!(r.message_len, 2000);
        let mut at = 0;
        for it in &r.items {
            assert_eq!(it.offset, at, "{}", it.name);
            at += it.len;
        }
        assert_eq!(at, r.message_len);
    }

    /// trust_anchors is named and its IDs shown in ASCII (draft-ietf-tls-trust-anchor-ids
    /// §4.1); an ML-KEM-768 or X-Wing ECHConfig's enc is named by its KEM and set against
    /// DHKEM(X25519)'s, the extension growing by the difference.
    #[test]
    fn trust_anchors_and_post_quantum_ech_configs_are_named() {
        use tls13lab::config::TrustAnchorOffer;
        use tls13lab::crypto::hpke::Kem;
        let ids = ["32473.1", "32473.1.1.1.2"];
        let mut spec = HelloSpec::new("ta");
        spec.config.trust_anchors = Some(TrustAnchorOffer::new(
            ids.iter()
                .map(|a| tls13lab::trust_anchors::from_ascii(a).unwrap())
                .collect(),
        ));
        let r = report(&spec, &Framing::default(), Link::default()).unwrap();
        let it = r.items.iter().find(|i| i.name == "trust_anchors").unwrap();
        assert_eq!(it.code, Some(ExtensionType::TrustAnchors.to_repr()));
        assert_eq!(
            it.detail,
            format!("RequestedTrustAnchorList: {}", ids.join(", "))
        );
        let text = super::super::render(&r, false);
        assert!(text.contains(&it.detail));

        let ech = |kem| {
            let mut spec = HelloSpec::new("ech");
            spec.config.server_name = Some(crate::ech::INNER_NAME.into());
            spec.config.ech = EchMode::Config {
                list: crate::ech::key_for(1, 1, kem).unwrap().list,
                grease_fallback: false,
            };
            report(&spec, &Framing::default(), Link::default()).unwrap()
        };
        let classic = ech(Kem::X25519HkdfSha256);
        let base = classic.ech.as_ref().unwrap();
        for kem in [Kem::MlKem768, Kem::XWing] {
            let r = ech(kem);
            let e = r.ech.as_ref().unwrap();
            assert_eq!(e.kem, Some(kem));
            assert_eq!(e.enc_len, kem.enc_len());
            assert_eq!(
                e.extension_len - base.extension_len,
                e.enc_len - base.enc_len
            );
            let text = super::super::render(&r, false);
            let line = format!(
                "KEM                     {}: enc {} bytes, {} more than DHKEM(X25519)'s {}",
                kem.id(),
                e.enc_len,
                e.enc_len - base.enc_len,
                base.enc_len
            );
            assert!(text.contains(&line), "no {line:?} in\n{text}");
        }
    }
}
