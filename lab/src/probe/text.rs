//! The probe's report as text: one table per battery.

use std::fmt::Write;

use super::Report;

fn row(out: &mut String, k: &str, v: &str) {
    let _ = writeln!(out, "  {k:<34} {v}");
}

/// The report as text tables.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "probe {} ({}), server_name {}",
        r.target,
        r.address,
        r.server_name.as_deref().unwrap_or("(none)")
    );
    if let Some(e) = &r.error {
        let _ = writeln!(out, "  not probed: the first handshake ended with {e}");
    }
    if let Some(c) = &r.capabilities {
        let _ = writeln!(out, "\ncapabilities");
        row(&mut out, "TLS 1.3", &c.tls13);
        row(&mut out, "only TLS 1.2 offered", &c.tls12_only);
        row(
            &mut out,
            "negotiated",
            &format!(
                "{} {}{}",
                c.suite.as_deref().unwrap_or("-"),
                c.group.as_deref().unwrap_or("-"),
                if c.hello_retry { " after HRR" } else { "" }
            ),
        );
        let accepted = |v: &[super::capabilities::Offer]| {
            v.iter()
                .filter(|o| o.accepted)
                .map(|o| o.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let refused = |v: &[super::capabilities::Offer]| {
            v.iter()
                .filter(|o| !o.accepted)
                .map(|o| format!("{} ({})", o.name, o.answer))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let pref = |p: &super::capabilities::Preference| match p.follows.as_str() {
            "client" => "follows the client's order".to_string(),
            _ => p.order.join(" > "),
        };
        row(&mut out, "groups accepted", &accepted(&c.groups));
        row(&mut out, "groups refused", &refused(&c.groups));
        row(&mut out, "group preference", &pref(&c.group_preference));
        row(&mut out, "HRR when no key share", &c.hrr_without_share);
        row(
            &mut out,
            "share for least preferred group",
            &c.hrr_for_least_preferred_share,
        );
        row(
            &mut out,
            "supported_groups in EE",
            &c.ee_supported_groups
                .as_ref()
                .map_or("not sent".to_string(), |g| g.join(", ")),
        );
        row(&mut out, "suites accepted", &accepted(&c.suites));
        row(&mut out, "suite preference", &pref(&c.suite_preference));
        row(
            &mut out,
            "signature schemes accepted",
            &accepted(&c.signature_schemes),
        );
        if let Some(ch) = &c.certificate {
            let certs: Vec<String> = ch
                .certificates
                .iter()
                .map(|x| {
                    format!(
                        "{} B (key {} B, signed with {}, {} B)",
                        x.bytes,
                        x.spki_bytes,
                        x.signed_with.as_deref().unwrap_or("?"),
                        x.signature_bytes
                    )
                })
                .collect();
            row(&mut out, "certificate chain", &certs.join("; "));
            row(
                &mut out,
                "Certificate message",
                &match (&ch.compression, ch.compressed_bytes) {
                    (Some(a), Some(n)) => {
                        format!("{} B, sent {a}-compressed as {n} B", ch.message_bytes)
                    }
                    _ => format!("{} B, uncompressed", ch.message_bytes),
                },
            );
            row(
                &mut out,
                "CertificateVerify",
                ch.signature_scheme.as_deref().unwrap_or("-"),
            );
            row(&mut out, "chain verification", &ch.verification);
        }
        row(
            &mut out,
            "ALPN (h2, http/1.1 offered)",
            c.alpn.as_deref().unwrap_or("none"),
        );
        row(
            &mut out,
            "record_size_limit",
            &c.record_size_limit
                .map_or("not sent".into(), |l| l.to_string()),
        );
        let t: Vec<String> = c
            .tickets
            .iter()
            .map(|t| {
                format!(
                    "{} s, {} B{}",
                    t.lifetime,
                    t.ticket_bytes,
                    t.max_early_data
                        .map_or(String::new(), |m| format!(", early data {m}"))
                )
            })
            .collect();
        row(
            &mut out,
            "tickets",
            &format!(
                "{}{}{}",
                t.len(),
                if t.is_empty() { "" } else { ": " },
                t.join("; ")
            ),
        );
        row(&mut out, "resumption psk_dhe_ke", &c.resumption_psk_dhe_ke);
        row(&mut out, "resumption psk_ke", &c.resumption_psk_ke);
        row(&mut out, "0-RTT", &c.early_data);
        row(&mut out, "0-RTT replayed", &c.early_data_replay);
        row(&mut out, "ECH GREASE", &c.ech.grease);
        row(
            &mut out,
            "ECH retry_configs",
            &if c.ech.retry_configs.is_empty() {
                "none".to_string()
            } else {
                c.ech.retry_configs.join(", ")
            },
        );
        row(
            &mut out,
            "ECH offer",
            &format!("{} (configs: {})", c.ech.offer, c.ech.config_source),
        );
    }
    if let Some(t) = &r.tolerance {
        let _ = writeln!(out, "\ntolerance");
        for c in t {
            let _ = writeln!(
                out,
                "  {:<28} {:>6} B {:>2} rec {:>2} seg  {}",
                c.name, c.hello_bytes, c.records, c.segments, c.answer
            );
        }
    }
    if let Some(t) = &r.conformance {
        let _ = writeln!(out, "\nconformance");
        for c in t {
            let _ = writeln!(
                out,
                "  {:<60} {:<18} expected {:<36} got {:<28} {}",
                c.name, c.section, c.expected, c.received, c.verdict
            );
        }
    }
    let _ = writeln!(out, "\n{} connections", r.connections);
    out
}
