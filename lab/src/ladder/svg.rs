//! A ladder (sequence) diagram of one connection, drawn from its [`Ledger`] as a hand-written SVG.
//!
//! Two lanes, client left and server right; one arrow per record, labelled with the handshake
//! messages it carries and its bytes (`5 + plaintext + 1 + padding + tag` for protected records);
//! the colour is the epoch (plaintext, 0-RTT, handshake, application keys); flights are grouped
//! in bands and numbered; round trips are counted in the left margin, and the record that brings
//! the first response byte is marked.

use std::fmt::Write as _;

use tls13lab::events::{Direction, Epoch};
use tls13lab::ledger::{Ledger, LedgerRecord};
use tls13lab::messages::enums::{ContentType, HandshakeType};
use tls13lab::messages::handshake::HRR_RANDOM;

const WIDTH: i64 = 1060;
const CLIENT_X: i64 = 300;
const SERVER_X: i64 = 840;
const ROW: i64 = 54;
const SLANT: i64 = 26;
const TOP: i64 = 110;

/// Colour and name of an epoch.
fn epoch_style(e: Epoch) -> (&'static str, &'static str) {
    match e {
        Epoch::Plaintext => ("#4b5563", "plaintext"),
        Epoch::Early => ("#d97706", "0-RTT (client_early_traffic_secret)"),
        Epoch::Handshake => ("#2563eb", "handshake keys"),
        Epoch::Application(0) => ("#059669", "application keys"),
        Epoch::Application(_) => ("#065f46", "application keys after KeyUpdate"),
    }
}

/// `ClientHello`, `EncryptedExtensions`... as RFC 8446 writes them.
pub fn message_name(t: HandshakeType) -> String {
    let s = t.to_string();
    s.split('_')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// What a record carries, in words, and its byte accounting: `("ServerHello 90", "95 B = 5 + 90")`.
pub fn record_summary(r: &LedgerRecord) -> (String, String) {
    let rec = &r.record;
    let mut names = Vec::new();
    let mut at = 0;
    for m in &r.messages {
        let mut name = message_name(m.typ);
        // A ServerHello with the special random is a HelloRetryRequest (§4.1.3).
        if m.typ == HandshakeType::ServerHello
            && m.offset == 0
            && rec.content.get(at + 6..at + 38) == Some(&HRR_RANDOM[..])
        {
            name = "HelloRetryRequest".into();
        }
        if m.bytes_here == m.len {
            names.push(format!("{name} {} B", m.len));
        } else {
            names.push(format!(
                "{name} [{}..{} of {} B]",
                m.offset,
                m.offset + m.bytes_here,
                m.len
            ));
        }
        at += m.bytes_here;
    }
    let what = match rec.inner_type {
        ContentType::Handshake => names.join(", "),
        ContentType::ChangeCipherSpec => "ChangeCipherSpec (compatibility, §D.4)".into(),
        ContentType::Alert => match rec.content.as_slice() {
            [l, d] => format!(
                "alert {} {}",
                tls13lab::messages::enums::AlertLevel::from(*l),
                tls13lab::messages::enums::AlertDescription::from(*d)
            ),
            _ => "alert".into(),
        },
        ContentType::ApplicationData if rec.epoch == Epoch::Early => {
            format!("0-RTT application data {} B", rec.plaintext_len)
        }
        ContentType::ApplicationData => format!("application data {} B", rec.plaintext_len),
        other => other.to_string(),
    };
    let bytes = if rec.seq.is_some() {
        format!(
            "{} B = 5 + {} + 1 + {} + {}",
            rec.wire_len, rec.plaintext_len, rec.padding_len, rec.tag_len
        )
    } else {
        format!("{} B = 5 + {}", rec.wire_len, rec.plaintext_len)
    };
    (what, bytes)
}

/// Where each record's time (ms since the origin) is written, if at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Times {
    /// No times (e.g. an in-memory run with a fixed clock).
    #[default]
    Off,
    /// At the sender's end of each arrow: the ledger's times are send times.
    AtSender,
    /// On the client's lane: the client's ledger (sent and received by the client).
    AtClient,
    /// On the server's lane: the server's ledger.
    AtServer,
}

/// Options of [`svg_with`].
#[derive(Clone, Debug, Default)]
pub struct LadderOptions {
    /// The title line.
    pub title: String,
    /// Draw TCP's three-way handshake first (it is one more round trip before any TLS byte).
    pub tcp_handshake: bool,
    /// Where to write times (only drawn when they vary).
    pub times: Times,
    /// Where the clock counts from (e.g. the TCP SYN).
    pub origin_ms: Option<u64>,
    /// Small print under the diagram (assumptions, sources).
    pub notes: Vec<String>,
    /// Per record (ledger order), µs since the origin: when it was sent and, if known, when its
    /// last byte arrived. Replaces the ledger's ms times; arrivals are drawn at the receiver.
    pub exact_times_us: Vec<(u64, Option<u64>)>,
    /// Replaces the footer's round-trip count (e.g. with a measured time).
    pub summary: Option<String>,
    /// Make each record's arrow a link to `#{prefix}{index}` (the ledger's 1-based index): the
    /// illustrated page embeds the ladder and links every arrow to its record.
    pub record_links: Option<String>,
}

fn fmt_us(us: u64) -> String {
    if us.is_multiple_of(1000) {
        format!("{} ms", us / 1000)
    } else {
        format!("{:.1} ms", us as f64 / 1000.0)
    }
}

/// The ladder diagram of `ledger` (the client's view of a connection).
pub fn svg(ledger: &Ledger, title: &str, rtt_us: Option<u64>) -> String {
    svg_with(
        ledger,
        &LadderOptions {
            title: title.to_string(),
            tcp_handshake: rtt_us.is_some(),
            times: if rtt_us.is_some() {
                Times::AtClient
            } else {
                Times::Off
            },
            ..LadderOptions::default()
        },
    )
}

/// [`svg`] with options.
pub fn svg_with(ledger: &Ledger, opt: &LadderOptions) -> String {
    let records = &ledger.records;
    let tcp_rows = if opt.tcp_handshake { 3 } else { 0 };
    // Flights get a gap between them.
    let mut y_of = Vec::with_capacity(records.len());
    let mut y = TOP + tcp_rows * (ROW - 14) + if opt.tcp_handshake { 20 } else { 0 };
    let mut last_flight = 0;
    for r in records {
        if r.flight != last_flight && last_flight != 0 {
            y += 18;
        }
        last_flight = r.flight;
        y_of.push(y);
        y += ROW;
    }
    let legend_y = y + 30;
    let notes: Vec<String> = opt.notes.iter().flat_map(|n| wrap(n, 150)).collect();
    let height = legend_y + 76 + 16 * notes.len() as i64;
    let origin = opt
        .origin_ms
        .unwrap_or_else(|| records.first().map_or(0, |r| r.record.time_ms));
    let first_response = records.iter().position(|r| {
        r.record.direction == Direction::ServerToClient
            && r.record.inner_type == ContentType::ApplicationData
    });

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, "<title>{}</title>", esc(&opt.title));
    s.push_str("<defs>\n");
    for (i, e) in [
        Epoch::Plaintext,
        Epoch::Early,
        Epoch::Handshake,
        Epoch::Application(0),
        Epoch::Application(1),
    ]
    .iter()
    .enumerate()
    {
        let (c, _) = epoch_style(*e);
        let _ = writeln!(
            s,
            r#"<marker id="a{i}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>"#
        );
    }
    s.push_str(r##"<marker id="atcp" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#9ca3af"/></marker>"##);
    s.push_str("\n</defs>\n");
    let _ = writeln!(
        s,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="28" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        WIDTH / 2,
        esc(&opt.title)
    );
    if let Some(n) = &ledger.negotiated {
        let sub = format!(
            "{} · {} · {}{}{}",
            n.suite,
            n.group.map_or("psk_ke".to_string(), |g| g.to_string()),
            if n.resumed {
                "resumed"
            } else {
                "full handshake"
            },
            match n.early_data {
                tls13lab::events::EarlyDataStatus::Accepted => " · 0-RTT accepted",
                tls13lab::events::EarlyDataStatus::Rejected => " · 0-RTT rejected",
                tls13lab::events::EarlyDataStatus::NotSent => "",
            },
            if n.hello_retry {
                " · HelloRetryRequest"
            } else {
                ""
            }
        );
        let _ = writeln!(
            s,
            r##"<text x="{}" y="48" text-anchor="middle" fill="#374151">{}</text>"##,
            WIDTH / 2,
            esc(&sub)
        );
    }
    // Lanes.
    for (x, name) in [(CLIENT_X, "client"), (SERVER_X, "server")] {
        let _ = writeln!(
            s,
            r##"<rect x="{}" y="62" width="120" height="26" rx="4" fill="#f3f4f6" stroke="#111827"/><text x="{x}" y="80" text-anchor="middle" font-weight="bold">{name}</text>"##,
            x - 60
        );
        let _ = writeln!(
            s,
            r##"<line x1="{x}" y1="88" x2="{x}" y2="{}" stroke="#111827" stroke-width="1.5"/>"##,
            legend_y - 14
        );
    }
    // TCP's handshake.
    if opt.tcp_handshake {
        let mut ty = TOP;
        for (i, what) in ["SYN", "SYN-ACK", "ACK"].iter().enumerate() {
            let (x1, x2) = if i == 1 {
                (SERVER_X, CLIENT_X)
            } else {
                (CLIENT_X, SERVER_X)
            };
            let _ = writeln!(
                s,
                r##"<line x1="{x1}" y1="{ty}" x2="{x2}" y2="{}" stroke="#9ca3af" stroke-width="1.5" stroke-dasharray="5,3" marker-end="url(#atcp)"/>"##,
                ty + SLANT
            );
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}" text-anchor="middle" fill="#6b7280">TCP {what}</text>"##,
                (CLIENT_X + SERVER_X) / 2,
                ty + SLANT / 2 - 6
            );
            ty += ROW - 14;
        }
        let _ = writeln!(
            s,
            r##"<text x="16" y="{}" fill="#6b7280" font-weight="bold">TCP: 1 RT</text>"##,
            TOP + SLANT
        );
    }
    // Flight bands and round-trip brackets.
    let mut i = 0;
    let mut round_trip = 0;
    let mut rt_start: Option<(i64, bool)> = None;
    while i < records.len() {
        let f = records[i].flight;
        let j = records[i..]
            .iter()
            .position(|r| r.flight != f)
            .map_or(records.len(), |k| i + k);
        let (top, bottom) = (y_of[i] - 22, y_of[j - 1] + SLANT + 10);
        let dir = records[i].record.direction;
        let bytes: usize = records[i..j].iter().map(|r| r.record.wire_len).sum();
        let fill = if dir == Direction::ClientToServer {
            "#eef2ff"
        } else {
            "#f0fdf4"
        };
        let _ = writeln!(
            s,
            r##"<rect x="{}" y="{top}" width="{}" height="{}" rx="6" fill="{fill}" stroke="#d1d5db"/>"##,
            CLIENT_X - 20,
            SERVER_X - CLIENT_X + 40,
            bottom - top
        );
        let (tx, anchor) = if dir == Direction::ClientToServer {
            (CLIENT_X - 84, "end")
        } else {
            (SERVER_X + 84, "start")
        };
        let _ = writeln!(
            s,
            r##"<text x="{tx}" y="{}" text-anchor="{anchor}" fill="#374151">flight {f}</text><text x="{tx}" y="{}" text-anchor="{anchor}" fill="#6b7280">{} record{}, {bytes} B</text>"##,
            top + 16,
            top + 31,
            j - i,
            if j - i == 1 { "" } else { "s" }
        );
        // A round trip: a client flight and the server flight that answers it. Those after the
        // first response byte are drawn grey.
        if dir == Direction::ClientToServer {
            round_trip += 1;
            rt_start = Some((top, first_response.is_some_and(|r| i > r)));
        } else if let Some((start, after)) = rt_start.take() {
            let c = if after { "#9ca3af" } else { "#7c3aed" };
            let _ = writeln!(
                s,
                r##"<path d="M 72 {start} h -8 V {bottom} h 8" fill="none" stroke="{c}" stroke-width="1.5"/><text x="58" y="{}" text-anchor="end" fill="{c}" font-weight="bold">RT {round_trip}</text>"##,
                (start + bottom) / 2 + 4
            );
        }
        i = j;
    }
    // Arrows.
    let times = opt.times != Times::Off
        && (!opt.exact_times_us.is_empty() || records.iter().any(|r| r.record.time_ms != origin));
    for (k, r) in records.iter().enumerate() {
        let rec = &r.record;
        let y = y_of[k];
        let (x1, x2) = match rec.direction {
            Direction::ClientToServer => (CLIENT_X, SERVER_X),
            Direction::ServerToClient => (SERVER_X, CLIENT_X),
        };
        let (colour, _) = epoch_style(rec.epoch);
        let marker = match rec.epoch {
            Epoch::Plaintext => 0,
            Epoch::Early => 1,
            Epoch::Handshake => 2,
            Epoch::Application(0) => 3,
            Epoch::Application(_) => 4,
        };
        let dash = if rec.inner_type == ContentType::ChangeCipherSpec {
            r#" stroke-dasharray="4,3""#
        } else {
            ""
        };
        let width = if rec.inner_type == ContentType::ApplicationData {
            "3"
        } else {
            "2"
        };
        // close_notify is the normal end; any other alert is drawn red.
        let alert = rec.inner_type == ContentType::Alert && rec.content.get(1) != Some(&0);
        if let Some(prefix) = &opt.record_links {
            let _ = writeln!(s, r##"<a href="#{}{}">"##, esc(prefix), r.index);
        }
        let _ = writeln!(
            s,
            r##"<line x1="{x1}" y1="{y}" x2="{x2}" y2="{}" stroke="{colour}" stroke-width="{width}"{dash} marker-end="url(#a{marker})"/>"##,
            y + SLANT
        );
        let (what, bytes) = record_summary(r);
        let mid = (CLIENT_X + SERVER_X) / 2;
        // Long labels (a whole server flight in one record) get a smaller, lighter font so they
        // stay between the lanes.
        let chars = what.chars().count() as i64;
        let long = chars > 62;
        let style = if long {
            r#"font-size="11""#
        } else {
            r#"font-weight="bold""#
        };
        // The label sits above the arrow where the arrow is highest under it: at the label's
        // end nearer the arrow's start (its width estimated at ~6.2 px a character in 11 px,
        // ~7.6 in bold), so a label as wide as the lanes does not cross its own arrow.
        let half = chars * if long { 62 } else { 76 } / 20;
        let lanes = SERVER_X - CLIENT_X;
        let under_end = y + SLANT * ((lanes / 2 - half).max(0)) / lanes;
        let _ = writeln!(
            s,
            r##"<text x="{mid}" y="{}" text-anchor="middle" fill="{}" {style}>{}</text>"##,
            (y + SLANT / 2 - 7).min(under_end - 3),
            if alert { "#dc2626" } else { "#111827" },
            esc(&what)
        );
        let _ = writeln!(
            s,
            r##"<text x="{mid}" y="{}" text-anchor="middle" fill="#6b7280" font-size="11">{} · {}</text>"##,
            y + SLANT / 2 + 17,
            esc(&bytes),
            esc(&rec.epoch.to_string())
        );
        if times {
            let exact = opt.exact_times_us.get(k).copied();
            let t = match exact {
                Some((sent, _)) => fmt_us(sent),
                None => format!("{} ms", rec.time_ms.saturating_sub(origin)),
            };
            let client_side = match opt.times {
                Times::AtClient => true,
                Times::AtServer => false,
                _ => rec.direction == Direction::ClientToServer,
            };
            // The time sits where the arrow leaves its lane if that lane is the sender's.
            let at_start = client_side == (rec.direction == Direction::ClientToServer);
            let ty = if at_start { y } else { y + SLANT };
            let (tx, anchor) = if client_side {
                (CLIENT_X - 26, "end")
            } else {
                (SERVER_X + 26, "start")
            };
            let _ = writeln!(
                s,
                r##"<text x="{tx}" y="{}" text-anchor="{anchor}" fill="#6b7280" font-size="11">{t}</text>"##,
                ty + 4
            );
            if let Some((_, Some(arrived))) = exact {
                // At the receiver's end of the arrow.
                let (ax, aanchor) = match rec.direction {
                    Direction::ClientToServer => (SERVER_X + 26, "start"),
                    Direction::ServerToClient => (CLIENT_X - 26, "end"),
                };
                let _ = writeln!(
                    s,
                    r##"<text x="{ax}" y="{}" text-anchor="{aanchor}" fill="#6b7280" font-size="11">→ {}</text>"##,
                    y + SLANT + 4,
                    fmt_us(arrived)
                );
            }
        }
        if opt.record_links.is_some() {
            s.push_str("</a>\n");
        }
        if Some(k) == first_response {
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}" text-anchor="end" fill="#b91c1c" font-weight="bold">first response byte ★</text>"##,
                CLIENT_X - 26,
                y + SLANT + 16
            );
        }
    }
    // Legend and totals.
    let mut lx = 20;
    for e in [
        Epoch::Plaintext,
        Epoch::Early,
        Epoch::Handshake,
        Epoch::Application(0),
    ] {
        let (c, name) = epoch_style(e);
        let _ = writeln!(
            s,
            r##"<line x1="{lx}" y1="{legend_y}" x2="{}" y2="{legend_y}" stroke="{c}" stroke-width="3"/><text x="{}" y="{}" fill="#374151">{}</text>"##,
            lx + 28,
            lx + 34,
            legend_y + 4,
            esc(name)
        );
        lx += 44 + name.len() as i64 * 7;
    }
    let t = &ledger.totals;
    let rts = opt.summary.clone().unwrap_or_else(|| {
        ledger
            .round_trips_to_first_response()
            .map_or("no response".to_string(), |n| {
                format!(
                    "{n} TLS round trip{} until the first response byte{}",
                    if n == 1 { "" } else { "s" },
                    if opt.tcp_handshake {
                        " (+1 for TCP)"
                    } else {
                        ""
                    }
                )
            })
    });
    let _ = writeln!(
        s,
        r##"<text x="20" y="{}" fill="#111827">{} · client → server {} B in {} records · server → client {} B in {} records</text>"##,
        legend_y + 30,
        esc(&rts),
        t.client_to_server.bytes,
        t.client_to_server.records,
        t.server_to_client.bytes,
        t.server_to_client.records
    );
    let _ = writeln!(
        s,
        r##"<text x="20" y="{}" fill="#6b7280" font-size="11">Record bytes: 5-byte header + plaintext (+ 1 inner content type + padding + AEAD tag when protected: 16 bytes, 8 under CCM_8), RFC 8446 §5. Dashed: ChangeCipherSpec.</text>"##,
        legend_y + 52
    );
    for (k, n) in notes.iter().enumerate() {
        let _ = writeln!(
            s,
            r##"<text x="20" y="{}" fill="#6b7280" font-size="11">{}</text>"##,
            legend_y + 70 + 16 * k as i64,
            esc(n)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Split `text` into lines of at most about `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rfc() {
        assert_eq!(message_name(HandshakeType::ClientHello), "ClientHello");
        assert_eq!(
            message_name(HandshakeType::EncryptedExtensions),
            "EncryptedExtensions"
        );
        assert_eq!(
            message_name(HandshakeType::EndOfEarlyData),
            "EndOfEarlyData"
        );
        assert_eq!(esc("a<b&\"c\">"), "a&lt;b&amp;&quot;c&quot;&gt;");
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
    }
}
