//! Reports as text: one hello item by item ([`render`]), its bytes ([`render_hex`]), several
//! side by side ([`render_compare`]).

use super::model::{is_grease, CaptureView, EchKind, EchView, HelloReport, Item, ItemKind};
use crate::fingerprint::ClientFingerprints;
use tls13lab::crypto::hpke::Kem;
use tls13lab::events::hex;
use tls13lab::messages::layout::Span;

/// The report as text: fields and extensions, records, segments.
pub fn render(r: &HelloReport, tree: bool) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "ClientHello \"{}\"", r.label);
    if let Some(src) = &r.source {
        let _ = writeln!(s, "  shape: {src}");
    }
    if let Some(c) = &r.capture {
        s.push_str(&render_capture(c));
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
    if let Some(f) = &r.fingerprints {
        s.push_str(&render_fingerprints(f));
    }
    if let Some(e) = &r.ech {
        s.push_str(&render_ech(e));
    }
    if tree {
        s.push_str("\nlayout (offset, bytes, name)\n");
        for span in &r.layout {
            tree_lines(&mut s, span, 1);
        }
    }
    s
}

/// Where a captured hello comes from and how it travelled.
fn render_capture(c: &CaptureView) -> String {
    use std::fmt::Write as _;
    let mut s = format!("  captured: {}\n", c.origin);
    if !c.records_captured {
        s.push_str(
            "  captured: a bare message: one record of legacy_record_version 0x0301 assumed\n",
        );
    }
    if !c.tcp_segments.is_empty() {
        let _ = writeln!(
            s,
            "  captured: its records arrived in {} TCP segment{} ({} payload bytes); the segments below are those of the link assumed",
            c.tcp_segments.len(),
            if c.tcp_segments.len() == 1 { "" } else { "s" },
            c.tcp_segments
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" + ")
        );
    }
    if c.trailing > 0 {
        let _ = writeln!(
            s,
            "  captured: its last record also carries {} bytes of the next message, not counted here",
            c.trailing
        );
    }
    s
}

/// The fingerprints section: JA3 with its string, JA4 with its raw and wire-order forms.
fn render_fingerprints(f: &ClientFingerprints) -> String {
    format!(
        "\nfingerprints (GREASE values left out)\n  JA3     {}\n          {}\n  JA4     {}\n  JA4_r   {}\n  JA4_o   {}\n  JA4_ro  {}\n",
        f.ja3, f.ja3_full, f.ja4, f.ja4_r, f.ja4_o, f.ja4_ro
    )
}

/// The ECH section: the extension's parts, the inner hello and its encoding, the two SNIs.
fn render_ech(e: &EchView) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let sealed = e.payload_len.saturating_sub(e.tag_len);
    let parts = format!(
        "{} = 4 type+length + 1 outer + 4 suite + 1 config_id + 2+{} enc + 2+{} payload",
        e.extension_len, e.enc_len, e.payload_len
    );
    let name = |n: &Option<String>| n.clone().unwrap_or_else(|| "(none)".into());
    match e.kind {
        EchKind::Captured => {
            let _ = writeln!(
                s,
                "\nencrypted_client_hello (RFC 9849): a real offer or GREASE, which look alike from outside (§6.2)"
            );
            let _ = writeln!(
                s,
                "  encrypted_client_hello  {parts}\n  suite, config_id        {}, {}\n  payload                 {} = {sealed} (sealed inner hello, or random) + {} (AEAD tag, or as long)",
                e.suite, e.config_id, e.payload_len, e.tag_len
            );
            let _ = writeln!(
                s,
                "  outer SNI               {} (a public_name, or the real name with GREASE)",
                name(&e.outer_sni)
            );
        }
        EchKind::Grease => {
            let _ = writeln!(
                s,
                "\nGREASE ECH (RFC 9849 §6.2): no inner hello; random bytes shaped like a real offer"
            );
            let _ = writeln!(
                s,
                "  encrypted_client_hello  {parts}\n  suite, config_id        {}, {} (config_id random)",
                e.suite, e.config_id
            );
            let _ = writeln!(
                s,
                "  payload                 {} random = {} (the EncodedClientHelloInner a real offer of this hello\n                          would seal, maximum_name_length 0) + {} (where the tag would be)",
                e.payload_len,
                e.grease_encoded_len.unwrap_or(sealed),
                e.tag_len
            );
            let _ = writeln!(
                s,
                "  SNI                     {} (the real name, in the clear)",
                name(&e.outer_sni)
            );
        }
        EchKind::Config => {
            let _ = writeln!(
                s,
                "\nEncrypted ClientHello (RFC 9849): the report above is ClientHelloOuter, as sent"
            );
            let _ = writeln!(
                s,
                "  encrypted_client_hello  {parts}\n  suite, config_id        {}, {}\n  payload                 {} = {sealed} sealed EncodedClientHelloInner + {} AEAD tag",
                e.suite, e.config_id, e.payload_len, e.tag_len
            );
            let _ = writeln!(
                s,
                "  outer SNI               {} (public_name {})\n  inner SNI               {} (sealed)",
                name(&e.outer_sni),
                name(&e.public_name),
                name(&e.inner_sni)
            );
            if let Some(kem) = e.kem {
                // What the config's KEM costs: enc against DHKEM(X25519)'s (draft-ietf-hpke-pq).
                let base = Kem::X25519HkdfSha256.enc_len();
                let more = match e.enc_len.checked_sub(base) {
                    Some(0) | None => String::new(),
                    Some(n) => format!(", {n} more than DHKEM(X25519)'s {base}"),
                };
                let _ = writeln!(
                    s,
                    "  KEM                     {}: enc {} bytes{more}",
                    kem.id(),
                    e.enc_len
                );
            }
            if let Some(i) = &e.inner {
                let _ = writeln!(
                    s,
                    "  ClientHelloInner        {} bytes (header 4 included), {} extensions:",
                    i.message_len,
                    i.extensions.len()
                );
                for x in &i.extensions {
                    let _ = writeln!(
                        s,
                        "    {:<30} {:>6}{}",
                        format!("{} ({:#06x})", x.name, x.code),
                        x.len,
                        if x.compressed {
                            "  → ech_outer_extensions (sent once, in the outer hello)"
                        } else {
                            ""
                        }
                    );
                }
                let compressed: usize = i
                    .extensions
                    .iter()
                    .filter(|x| x.compressed)
                    .map(|x| x.len)
                    .sum();
                let _ = writeln!(
                    s,
                    "  ech_outer_extensions    {} bytes for {compressed} compressed: saved {} (§5.1)",
                    i.outer_extensions_len, i.saved
                );
                let _ = writeln!(
                    s,
                    "  EncodedClientHelloInner {} = {} inner − 4 header − {} session id − {} saved\n                          + {} name padding (L={}) + {} to a multiple of 32 (§6.1.3) = {}",
                    i.encoded_len,
                    i.message_len,
                    i.session_id_len,
                    i.saved,
                    i.name_padding,
                    i.maximum_name_length,
                    i.round_padding,
                    i.sealed_len
                );
            }
        }
    }
    s
}

/// One line on a report's ECH, for the side-by-side view.
fn ech_summary(r: &HelloReport) -> String {
    let name = |n: &Option<String>| n.clone().unwrap_or_else(|| "(none)".into());
    match &r.ech {
        None => {
            let sni = r
                .items
                .iter()
                .find(|i| i.code == Some(0))
                .map_or("(none)".to_string(), |i| i.detail.clone());
            format!("no ECH: server_name {sni} in the clear")
        }
        Some(e) if e.kind == EchKind::Captured => format!(
            "encrypted_client_hello {} bytes (payload {}: sealed or GREASE), outer SNI {}",
            e.extension_len,
            e.payload_len,
            name(&e.outer_sni)
        ),
        Some(e) if e.kind == EchKind::Grease => format!(
            "GREASE ECH: encrypted_client_hello {} bytes (payload {} random), SNI {} in the clear",
            e.extension_len,
            e.payload_len,
            name(&e.outer_sni)
        ),
        Some(e) => format!(
            "ECH: encrypted_client_hello {} bytes (payload {} = {} sealed + {} tag); outer SNI {}, inner SNI {}{}",
            e.extension_len,
            e.payload_len,
            e.payload_len.saturating_sub(e.tag_len),
            e.tag_len,
            name(&e.outer_sni),
            name(&e.inner_sni),
            e.inner.as_ref().map_or(String::new(), |i| format!(
                "; ClientHelloInner {} bytes, ech_outer_extensions saved {}",
                i.message_len, i.saved
            ))
        ),
    }
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
        if let Some(f) = &r.fingerprints {
            let _ = writeln!(s, "{}: JA3 {}, JA4 {}", r.label, f.ja3, f.ja4);
        }
    }
    if reports.iter().any(|r| r.ech.is_some()) {
        for r in reports {
            let _ = writeln!(s, "{}: {}", r.label, ech_summary(r));
        }
    }
    for r in reports {
        for n in r.notes.iter().chain(&r.warnings) {
            let _ = writeln!(s, "{}: {n}", r.label);
        }
    }
    s
}
