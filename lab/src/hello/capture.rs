//! ClientHellos from outside (`tls13lab hello --from FILE`): a pcap or pcapng capture (each
//! TCP connection's client → server stream reassembled, its TLS records joined), a raw file
//! (records with their 5-byte headers, or a bare handshake message) or the same as hex text.
//! [`report_from`] describes the hello exactly as [`describe`] describes one the lab built: the
//! captured record boundaries are kept, the TCP segments are those of the link asked for, and
//! the segments the capture carried it in are listed beside them.

use super::data::describe;
use super::model::{BuiltHello, CaptureView, EchKind, EchView, Framing, HelloReport};
use crate::pcap::read_capture;
use crate::tcp::Link;
use tls13lab::crypto::hpke::Aead;
use tls13lab::ech::wire::EchClientHello;
use tls13lab::messages::enums::ExtensionType;
use tls13lab::messages::extensions::Extension;
use tls13lab::messages::handshake::{DecodeContext, HandshakeMessage, HandshakePayload};

/// A handshake message larger than this is not read (a ClientHello is at most 2^16 + 4 bytes
/// in practice; RFC 8446 §4 allows 2^24 − 1).
const MAX_MESSAGE: usize = 1 << 20;

/// One ClientHello found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapturedHello {
    /// Where it was found, in words.
    pub origin: String,
    /// The handshake message, 4-byte header included.
    pub message: Vec<u8>,
    /// Message offsets at which a captured record starts (the first at 0 left out).
    pub record_starts: Vec<usize>,
    /// legacy_record_version of its first record (`None`: a bare message, no records).
    pub record_version: Option<u16>,
    /// Payload bytes of each TCP segment that carried part of its records (captures only).
    pub segments: Vec<usize>,
    /// Bytes of other messages sharing its last record.
    pub trailing: usize,
}

/// The ClientHellos of one client → server stream. `starts`: stream offsets at which a TCP
/// segment's new bytes begin (empty for a file without segments). Records are read while they
/// are Handshake (or ChangeCipherSpec) records whose messages are ClientHellos (a second one
/// follows a HelloRetryRequest, RFC 8446 §4.1.4); the first other message or record type ends
/// the plaintext part of the stream.
fn hellos_in_stream(
    stream: &[u8],
    starts: &[usize],
    origin: &dyn Fn(usize) -> String,
) -> Result<Vec<CapturedHello>, String> {
    // Handshake bytes joined across records, and where each record's fragment begins in them:
    // (handshake offset, stream offset of the record header, legacy_record_version).
    let mut hs: Vec<u8> = Vec::new();
    let mut frags: Vec<(usize, usize, u16)> = Vec::new();
    let mut at = 0;
    let mut pos = 0; // next message in `hs`
    let mut out = Vec::new();
    loop {
        // Complete messages first.
        while hs.len() >= pos + 4 {
            let need = 4
                + ((usize::from(hs[pos + 1]) << 16)
                    | (usize::from(hs[pos + 2]) << 8)
                    | usize::from(hs[pos + 3]));
            if hs[pos] != 1 {
                return Ok(out);
            }
            if need > MAX_MESSAGE {
                return Err(format!(
                    "a ClientHello of {need} bytes at stream offset {}: larger than the {MAX_MESSAGE} bytes read",
                    frags.iter().rfind(|f| f.0 <= pos).map_or(0, |f| f.1)
                ));
            }
            if hs.len() < pos + need {
                break;
            }
            let end = pos + need;
            // The records holding a byte of [pos, end).
            let mine: Vec<(usize, usize, u16)> = frags
                .iter()
                .enumerate()
                .filter(|(i, f)| {
                    let f_end = frags.get(i + 1).map_or(hs.len(), |g| g.0);
                    f.0 < end && f_end > pos
                })
                .map(|(_, f)| *f)
                .collect();
            let (Some(&first), Some(&last)) = (mine.first(), mine.last()) else {
                break;
            };
            let record_starts = mine
                .iter()
                .filter(|f| f.0 > pos)
                .map(|f| f.0 - pos)
                .collect();
            // The stream bytes of its records: from the first header to the end of the last.
            let last_end = record_end(stream, last.1);
            let trailing = frags
                .iter()
                .find(|f| f.0 > last.0)
                .map_or(hs.len(), |f| f.0)
                .saturating_sub(end);
            out.push(CapturedHello {
                origin: origin(out.len() + 1),
                message: hs[pos..end].to_vec(),
                record_starts,
                record_version: Some(first.2),
                segments: segments_over(starts, stream.len(), first.1, last_end),
                trailing,
            });
            pos = end;
        }
        // The next record.
        let Some(h) = stream.get(at..at + 5) else {
            break;
        };
        let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
        let Some(fragment) = stream.get(at + 5..at + 5 + len) else {
            break; // the stream ends inside a record
        };
        match h[0] {
            20 => {} // ChangeCipherSpec (RFC 8446 §D.4): skipped
            22 if hs.len() - pos <= MAX_MESSAGE => {
                frags.push((hs.len(), at, u16::from_be_bytes([h[1], h[2]])));
                hs.extend_from_slice(fragment);
            }
            _ => break,
        }
        at += 5 + len;
    }
    Ok(out)
}

/// Stream offset just past the record whose header is at `at`.
fn record_end(stream: &[u8], at: usize) -> usize {
    stream.get(at + 3..at + 5).map_or(stream.len(), |l| {
        (at + 5 + usize::from(u16::from_be_bytes([l[0], l[1]]))).min(stream.len())
    })
}

/// How many bytes of `[from, to)` each TCP segment carried (segments start at `starts`).
fn segments_over(starts: &[usize], len: usize, from: usize, to: usize) -> Vec<usize> {
    let mut v = Vec::new();
    for (i, &s) in starts.iter().enumerate() {
        let e = starts.get(i + 1).copied().unwrap_or(len);
        let (a, b) = (s.max(from), e.min(to));
        if a < b {
            v.push(b - a);
        }
    }
    v
}

/// Hex text (whitespace, `:` and a `0x` prefix allowed) as bytes, if it is that.
fn from_hex(data: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(data).ok()?;
    let digits: String = text
        .split_whitespace()
        .map(|w| w.trim_start_matches("0x"))
        .collect::<String>()
        .replace(':', "");
    // ASCII hex digits only: byte slicing below stays on char boundaries, and `from_str_radix`
    // would also take a sign.
    if digits.is_empty()
        || !digits.len().is_multiple_of(2)
        || !digits.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return None;
    }
    digits
        .as_bytes()
        .chunks(2)
        .map(|p| {
            core::str::from_utf8(p)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

fn is_capture(data: &[u8]) -> bool {
    matches!(
        data.get(..4),
        Some([0x0a, 0x0d, 0x0d, 0x0a])
            | Some([0xa1, 0xb2, 0xc3, 0xd4])
            | Some([0xd4, 0xc3, 0xb2, 0xa1])
            | Some([0xa1, 0xb2, 0x3c, 0x4d])
            | Some([0x4d, 0x3c, 0xb2, 0xa1])
    )
}

/// Every ClientHello in a file's bytes, in order: a capture's (connection by connection),
/// a record stream's, or a bare handshake message; hex text of either of the last two.
pub fn client_hellos(data: &[u8]) -> Result<Vec<CapturedHello>, String> {
    if is_capture(data) {
        let cap =
            read_capture(data).map_err(|e| format!("{e} (a truncated or malformed capture)"))?;
        let mut out = Vec::new();
        for (i, c) in cap.connections.iter().enumerate() {
            let starts: Vec<usize> = c.c2s.times.iter().map(|t| t.0).collect();
            let name = |n: usize| {
                format!(
                    "{}, TCP connection {} ({} → {}), ClientHello {n} of the connection",
                    cap.format,
                    i + 1,
                    c.client,
                    c.server
                )
            };
            out.extend(hellos_in_stream(&c.c2s.bytes, &starts, &name)?);
        }
        return Ok(out);
    }
    let (bytes, form) = match from_hex(data) {
        Some(b) => (b, "hex"),
        None => (data.to_vec(), "raw"),
    };
    match bytes.first() {
        // A bare handshake message: no records.
        Some(1) => {
            let need = bytes
                .get(1..4)
                .map(|l| {
                    4 + ((usize::from(l[0]) << 16) | (usize::from(l[1]) << 8) | usize::from(l[2]))
                })
                .ok_or("the file ends inside the handshake header")?;
            if bytes.len() < need {
                return Err(format!(
                    "a ClientHello of {need} bytes, but the file holds {}",
                    bytes.len()
                ));
            }
            if bytes.len() > need {
                return Err(format!(
                    "{} bytes after the ClientHello: give one message, or records",
                    bytes.len() - need
                ));
            }
            Ok(vec![CapturedHello {
                origin: format!("{form} handshake message"),
                message: bytes,
                record_starts: Vec::new(),
                record_version: None,
                segments: Vec::new(),
                trailing: 0,
            }])
        }
        Some(22) => hellos_in_stream(&bytes, &[], &|n| {
            format!("{form} TLS records, ClientHello {n}")
        }),
        _ => Err(
            "not a pcap/pcapng capture, TLS handshake records (0x16...), a ClientHello message \
             (0x01...) or hex of one"
                .into(),
        ),
    }
}

/// The `index`-th (1-based) ClientHello of a file.
pub fn client_hello(data: &[u8], index: usize) -> Result<CapturedHello, String> {
    let all = client_hellos(data)?;
    let n = all.len();
    if index == 0 {
        return Err("--index counts from 1".into());
    }
    all.into_iter().nth(index - 1).ok_or_else(|| match n {
        0 => "no complete ClientHello in it".to_string(),
        n => format!("--index {index}: it holds {n} ClientHello(s)"),
    })
}

/// A report of a captured hello, as [`describe`] reports a built one: `label` names it, `link`
/// gives the segments; the records are those captured.
pub fn report_from(h: &CapturedHello, label: &str, link: Link) -> Result<HelloReport, String> {
    let message = HandshakeMessage::decode(&h.message, DecodeContext::default())
        .map_err(|e| format!("the ClientHello does not decode: {e}"))?;
    let HandshakePayload::ClientHello(hello) = message.payload.clone() else {
        return Err("not a ClientHello".into());
    };
    let ech = captured_ech(&hello);
    let built = BuiltHello {
        label: label.to_string(),
        message,
        hello,
        notes: Vec::new(),
        warnings: Vec::new(),
        ech,
    };
    let framing = Framing {
        split_at: h.record_starts.clone(),
        record_version: h.record_version.unwrap_or(0x0301),
        ..Framing::default()
    };
    let mut r = describe(&built, &framing, link)?;
    r.capture = Some(CaptureView {
        origin: h.origin.clone(),
        records_captured: h.record_version.is_some(),
        tcp_segments: h.segments.clone(),
        trailing: h.trailing,
    });
    Ok(r)
}

/// The ECH view of a captured outer hello: its parts only. From outside a real offer and
/// GREASE look alike (RFC 9849 §6.2), which is the point of GREASE.
fn captured_ech(hello: &tls13lab::messages::handshake::ClientHello) -> Option<EchView> {
    let Some(Extension::Unknown { body, .. }) = hello.find(ExtensionType::EncryptedClientHello)
    else {
        return None;
    };
    let EchClientHello::Outer {
        suite,
        config_id,
        enc,
        payload,
    } = EchClientHello::decode(body).ok()?
    else {
        return None;
    };
    Some(EchView {
        kind: EchKind::Captured,
        extension_len: 4 + body.len(),
        suite: format!("{}/{}", suite.kdf_id, suite.aead_id),
        config_id,
        enc_len: enc.len(),
        payload_len: payload.len(),
        tag_len: Aead::from_id(suite.aead_id).map_or(0, Aead::tag_len),
        outer_sni: hello.host_name(),
        inner_sni: None,
        public_name: None,
        kem: None,
        inner: None,
        grease_encoded_len: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(msg: &[u8], cuts: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(msg.len());
        for w in bounds.windows(2) {
            out.extend([22, 3, 1]);
            out.extend(((w[1] - w[0]) as u16).to_be_bytes());
            out.extend(&msg[w[0]..w[1]]);
        }
        out
    }

    fn hello() -> Vec<u8> {
        crate::hello::build(&crate::hello::HelloSpec::new("t"))
            .unwrap()
            .message
            .encoded
    }

    #[test]
    fn records_hex_and_bare_messages_give_the_same_hello() {
        let msg = hello();
        let rec = records(&msg, &[100]);
        let from_records = client_hello(&rec, 1).unwrap();
        assert_eq!(from_records.message, msg);
        assert_eq!(from_records.record_starts, [100]);
        assert_eq!(from_records.record_version, Some(0x0301));
        let hex: String = rec.iter().map(|b| format!("{b:02x} ")).collect();
        assert_eq!(client_hello(hex.as_bytes(), 1).unwrap().message, msg);
        let bare = client_hello(&msg, 1).unwrap();
        assert_eq!((bare.message, bare.record_version), (msg.clone(), None));
        // A second hello after a ChangeCipherSpec (as after a HelloRetryRequest).
        let mut two = records(&msg, &[]);
        two.extend([20, 3, 3, 0, 1, 1]);
        two.extend(records(&msg, &[]));
        assert_eq!(client_hellos(&two).unwrap().len(), 2);
        assert!(client_hello(&two, 3).unwrap_err().contains("holds 2"));
    }

    #[test]
    fn truncated_and_foreign_input_is_an_error() {
        let msg = hello();
        let rec = records(&msg, &[]);
        for n in 0..rec.len() {
            assert!(client_hello(&rec[..n], 1).is_err(), "records cut at {n}");
        }
        for n in 0..msg.len() {
            assert!(client_hello(&msg[..n], 1).is_err(), "message cut at {n}");
        }
        assert!(client_hello(b"GET / HTTP/1.1\r\n", 1).is_err());
        assert!(client_hello(&[0x0a, 0x0d, 0x0d, 0x0a, 0, 0], 1).is_err());
    }
}
