//! docs/clienthellos.md: the ClientHellos real programs sent on this machine (the captures in
//! tests/vectors/clienthello/), side by side: size, extensions, key shares, TCP segments at MTU
//! 1500, JA3/JA4, and what the hybrid share costs in each.

use std::fmt::Write as _;

use tls13lab::messages::enums::NamedGroup;
use tls13lab::messages::extensions::Extension;
use tls13lab::messages::handshake::{DecodeContext, HandshakeMessage, HandshakePayload};

use super::capture::{client_hello, report_from};
use super::model::{is_grease, ItemKind};
use crate::tcp::Link;

/// One capture's row.
struct Row {
    name: String,
    message: usize,
    wire: usize,
    extensions: usize,
    shares: String,
    x25519_reused: &'static str,
    hybrid: Option<usize>,
    segments: usize,
    ja3: String,
    ja4: String,
}

/// The page for `captures`: (file name, file bytes), each holding one ClientHello (its first is
/// read; a bare handshake message reads too, which is how tls13lab's own default hello joins the
/// table). Deterministic: the same captures give the same page.
pub fn captures_page(captures: &[(String, Vec<u8>)]) -> Result<String, String> {
    let mut rows = Vec::new();
    for (name, data) in captures {
        let h = client_hello(data, 1).map_err(|e| format!("{name}: {e}"))?;
        let r = report_from(&h, name, Link::default()).map_err(|e| format!("{name}: {e}"))?;
        let m = HandshakeMessage::decode(&h.message, DecodeContext::default())
            .map_err(|e| format!("{name}: {e}"))?;
        let HandshakePayload::ClientHello(ch) = m.payload else {
            return Err(format!("{name}: not a ClientHello"));
        };
        let entries = ch
            .extensions
            .iter()
            .find_map(|e| match e {
                Extension::KeyShareClient(l) => Some(l.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let shares = entries
            .iter()
            .map(|e| {
                let g = e.group.to_repr();
                if is_grease(g) {
                    format!("GREASE {}", e.key_exchange.len())
                } else {
                    format!("{} {}", e.group, e.key_exchange.len())
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let key = |g: NamedGroup| {
            entries
                .iter()
                .find(|e| e.group == g)
                .map(|e| e.key_exchange.as_slice())
        };
        // draft-ietf-tls-ecdhe-mlkem §3: the hybrid client share is ML-KEM-768's 1,184-byte
        // encapsulation key followed by the 32-byte X25519 share.
        let x25519_reused = match (key(NamedGroup::X25519MLKEM768), key(NamedGroup::X25519)) {
            (Some(h), Some(x)) if h.len() == 1216 => {
                if h[1184..] == *x {
                    "yes"
                } else {
                    "no"
                }
            }
            _ => "—",
        };
        // The entry: group (2) + length (2) + key_exchange.
        let hybrid = key(NamedGroup::X25519MLKEM768).map(|k| 4 + k.len());
        let fp = r.fingerprints.as_ref();
        rows.push(Row {
            name: name.clone(),
            message: r.message_len,
            wire: r.record_bytes,
            extensions: r
                .items
                .iter()
                .filter(|i| i.kind == ItemKind::Extension)
                .count(),
            shares,
            x25519_reused,
            hybrid,
            segments: r.segments.len(),
            ja3: fp.map(|f| f.ja3.clone()).unwrap_or_default(),
            ja4: fp.map(|f| f.ja4.clone()).unwrap_or_default(),
        });
    }
    let mut o = String::new();
    o.push_str(
        "# ClientHellos of real programs\n\n\
         Generated from the captures in `tests/vectors/clienthello/` (where each program's version \
         and the command that made it are recorded; `scripts/record-clienthellos.sh` records them \
         again) by `lab::hello::captures_page`; `cli/tests/instruments.rs` checks that this page \
         is what it prints (`TLS13LAB_WRITE_DOCS=1` rewrites it). Message: the handshake message \
         with its 4-byte header; on the wire: its TLS records. Segments: TCP segments at MTU 1500 \
         (IPv4, 20-byte IP and TCP headers, no TCP options, so an MSS of 1,460: `lab::tcp::Link::default()`). Key shares: \
         group and key bytes. X25519 reused: whether the standalone X25519 share equals the \
         hybrid share's X25519 part (one scalar for both). Hybrid share: the X25519MLKEM768 entry \
         (4 + 1,216 bytes) and its part of the message. JA3 and JA4 as `tls13lab hello --from` \
         computes them (checked against tshark's JA3 and the ja4plus package's JA4 by \
         `cli/tests/instruments.rs`); Chromium and rustls permute their extensions, so their JA3 \
         changes from connection to connection while their JA4 does not.\n\n",
    );
    o.push_str(
        "| capture | message | on the wire | extensions | key shares | X25519 reused | hybrid share | segments | JA3 | JA4 |\n\
         |---|--:|--:|--:|---|---|--:|--:|---|---|\n",
    );
    for r in &rows {
        let hybrid = match r.hybrid {
            Some(n) => format!("{n} ({:.0} %)", n as f64 * 100.0 / r.message as f64),
            None => "none".into(),
        };
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | `{}` | `{}` |",
            r.name,
            r.message,
            r.wire,
            r.extensions,
            r.shares,
            r.x25519_reused,
            hybrid,
            r.segments,
            r.ja3,
            r.ja4
        );
    }
    Ok(o)
}
