//! Ladder (message sequence) diagrams of a [`Ledger`]: one arrow per flight, with the messages
//! it carries in RFC 8446 §2's notation and the records and bytes it took on the wire.
//!
//! ```text
//! {...}  protected with the sender's handshake traffic keys
//! [...]  protected with the sender's application traffic keys
//! (...)  protected with the client's early traffic keys (0-RTT)
//! ```
//!
//! ```
//! use std::sync::Arc;
//! use lab::demo;
//!
//! let (server, root) = demo::server_config(1, demo::NOW_MS)?;
//! let client = demo::client_config(root);
//! let mut pair = demo::Pair::new(Arc::new(client), Arc::new(server), 1, demo::NOW_MS)?;
//! pair.handshake()?;
//! let diagram = lab::ladder::ladder(&pair.ledger());
//! assert!(diagram.lines().nth(1).unwrap().contains("ClientHello"));
//! println!("{diagram}");
//! # Ok::<(), tls13lab::Error>(())
//! ```

use tls13lab::events::{Direction, Epoch};
use tls13lab::ledger::{Ledger, LedgerRecord};
use tls13lab::messages::enums::{AlertDescription, AlertLevel, ContentType};

/// Columns between the two lifelines.
const WIDTH: usize = 66;

/// The ladder diagram of `ledger`, e.g.
///
/// ```text
/// client                                                                server
///   │ ClientHello                                                          │
///   ├──────────────────────── flight 1: 1 record, 253 bytes ─────────────▶│
/// ```
pub fn ladder(ledger: &Ledger) -> String {
    let mut out = format!("client{}server\n", " ".repeat(WIDTH - 8));
    let mut flight: Vec<&LedgerRecord> = Vec::new();
    for r in &ledger.records {
        if flight.last().is_some_and(|f| f.flight != r.flight) {
            draw_flight(&mut out, &flight);
            flight.clear();
        }
        flight.push(r);
    }
    if !flight.is_empty() {
        draw_flight(&mut out, &flight);
    }
    out
}

fn draw_flight(out: &mut String, records: &[&LedgerRecord]) {
    let Some(first) = records.first() else {
        return;
    };
    let dir = first.record.direction;
    // Items grouped by epoch: consecutive records under the same keys share one bracket.
    let mut groups: Vec<(Epoch, Vec<String>)> = Vec::new();
    for r in records {
        let items = record_items(r);
        if items.is_empty() {
            continue;
        }
        match groups.last_mut() {
            Some((e, v)) if *e == r.record.epoch => v.extend(items),
            _ => groups.push((r.record.epoch, items)),
        }
    }
    let mut words: Vec<String> = Vec::new();
    for (epoch, items) in groups {
        let (open, close) = match epoch {
            Epoch::Plaintext => ("", ""),
            Epoch::Early => ("(", ")"),
            Epoch::Handshake => ("{", "}"),
            Epoch::Application(_) => ("[", "]"),
        };
        let n = items.len();
        for (k, item) in items.into_iter().enumerate() {
            let mut w = String::new();
            if k == 0 {
                w.push_str(open);
            }
            w.push_str(&item);
            if k + 1 == n {
                w.push_str(close);
            }
            words.push(w);
        }
    }
    for line in wrap(&words, WIDTH - 2) {
        let text = if dir == Direction::ClientToServer {
            format!("{line:<w$}", w = WIDTH - 2)
        } else {
            format!("{line:>w$}", w = WIDTH - 2)
        };
        out.push_str(&format!("  │ {text} │\n"));
    }
    let bytes: usize = records.iter().map(|r| r.record.wire_len).sum();
    let n = records.len();
    let label = format!(
        " flight {}: {n} record{}, {bytes} bytes ",
        first.flight,
        if n == 1 { "" } else { "s" }
    );
    let dashes = WIDTH - 1 - label.chars().count();
    let (left, right) = (dashes / 2, dashes - dashes / 2);
    if dir == Direction::ClientToServer {
        out.push_str(&format!(
            "  ├{}{label}{}▶│\n",
            "─".repeat(left),
            "─".repeat(right)
        ));
    } else {
        out.push_str(&format!(
            "  │◀{}{label}{}┤\n",
            "─".repeat(left),
            "─".repeat(right)
        ));
    }
}

/// What one record carries: its handshake messages (the rest of a message split across records
/// marked as such), or its application data, alert or ChangeCipherSpec.
fn record_items(r: &LedgerRecord) -> Vec<String> {
    let rec = &r.record;
    match rec.inner_type {
        ContentType::Handshake => r
            .messages
            .iter()
            .map(|m| {
                if m.offset == 0 {
                    format!("{:?}", m.typ)
                } else {
                    format!("…{:?} continued", m.typ)
                }
            })
            .collect(),
        ContentType::ApplicationData => vec![format!("ApplicationData {}B", rec.plaintext_len)],
        ContentType::ChangeCipherSpec => vec!["ChangeCipherSpec".to_string()],
        ContentType::Alert => match rec.content.as_slice() {
            [level, desc] => vec![format!(
                "Alert({}, {})",
                AlertLevel::from(*level),
                AlertDescription::from(*desc)
            )],
            _ => vec!["Alert".to_string()],
        },
        other => vec![format!("{other}")],
    }
}

/// Greedy word wrap, words joined by ", ".
fn wrap(words: &[String], width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for (k, w) in words.iter().enumerate() {
        let piece = if k + 1 < words.len() {
            format!("{w},")
        } else {
            w.clone()
        };
        let extra = if line.is_empty() { 0 } else { 1 };
        if !line.is_empty() && line.chars().count() + extra + piece.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&piece);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo;
    use std::sync::Arc;

    #[test]
    fn full_handshake_ladder() {
        let (server, root) = demo::server_config(1, demo::NOW_MS).unwrap();
        let client = demo::client_config(root);
        let p = demo::request_response(
            Arc::new(client),
            Arc::new(server),
            1,
            demo::NOW_MS,
            b"ping",
            b"pong",
            Default::default(),
        )
        .unwrap();
        let l = p.ledger();
        let text = ladder(&l);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("client") && lines[0].ends_with("server"));
        assert!(lines[1].contains("│ ClientHello "));
        assert!(lines[2].contains("flight 1: 1 record,") && lines[2].ends_with("▶│"));
        assert!(text.contains("ServerHello, {EncryptedExtensions, Certificate,"));
        assert!(text.contains("[ApplicationData 4B"));
        assert!(text.contains("Alert(warning, close_notify)]"));
        // Every line is as wide as the header.
        let w = lines[0].chars().count();
        assert!(lines.iter().all(|l| l.chars().count() == w), "{text}");
        // Bytes per flight add up to the ledger's totals.
        let total: usize = lines
            .iter()
            .filter_map(|l| {
                l.split(", ")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
            .sum();
        assert_eq!(
            total,
            l.totals.client_to_server.bytes + l.totals.server_to_client.bytes
        );
    }

    #[test]
    fn split_message_is_listed_once_then_continued() {
        let (mut server, root) = demo::server_config(1, demo::NOW_MS).unwrap();
        let mut client = demo::client_config(root);
        // The server must cut its flight into records of at most 64 bytes (RFC 8449).
        client.record_size_limit = Some(64);
        server.record_size_limit = Some(64);
        let mut p = demo::Pair::new(Arc::new(client), Arc::new(server), 1, demo::NOW_MS).unwrap();
        p.handshake().unwrap();
        let text = ladder(&p.ledger());
        assert_eq!(text.matches("Certificate,").count(), 1, "{text}");
        assert!(text.contains("…Certificate continued"), "{text}");
    }

    #[test]
    fn wraps_on_item_boundaries() {
        let words: Vec<String> = ["aaaa", "bbbb", "cccc"].map(String::from).to_vec();
        assert_eq!(wrap(&words, 11), ["aaaa, bbbb,", "cccc"]);
        assert_eq!(wrap(&words, 100), ["aaaa, bbbb, cccc"]);
    }
}
