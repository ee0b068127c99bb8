//! The key tree as a standalone SVG drawing ([`KeyTree::svg`]).

use std::fmt::Write as _;

use super::model::{Ikm, KeyTree, Node};
use super::EchView;
use tls13lab::crypto::hash::HashAlg;
use tls13lab::crypto::hpke::HpkeOp;
use tls13lab::events::hex;
use tls13lab::keyschedule::DerivationOp;

impl KeyTree {
    /// Nodes in display order (depth first) with their depth.
    fn walk(&self) -> Vec<(usize, usize)> {
        fn go(t: &KeyTree, i: usize, depth: usize, out: &mut Vec<(usize, usize)>) {
            out.push((i, depth));
            for &c in &t.nodes[i].children {
                go(t, c, depth + 1, out);
            }
        }
        let mut out = Vec::new();
        for &r in &self.roots {
            go(self, r, 0, &mut out);
        }
        out
    }

    /// The tree as a standalone SVG drawing: one box per step (colored by operation) with its
    /// formula and value, indented under its parent, and the inputs beside the Extracts they
    /// feed.
    pub fn svg(&self) -> String {
        const ROW: usize = 58;
        const INDENT: usize = 26;
        const BOX_W: usize = 700;
        const INPUT_W: usize = 330;
        const LEFT: usize = 16;
        const TOP: usize = 86;
        let rows = self.walk();
        let max_depth = rows.iter().map(|(_, d)| *d).max().unwrap_or(0);
        let input_x = LEFT + max_depth * INDENT + BOX_W + 50;
        let width = input_x + INPUT_W + LEFT;
        let ech = self.ech.as_ref().map(ech_rows).unwrap_or_default();
        // ECH's band (RFC 9849) comes first, as in the text: a heading, its rows, a heading.
        let ech_h = if ech.is_empty() {
            0
        } else {
            (ech.len() + 1) * ROW
        };
        let height = TOP + ech_h + rows.len() * ROW + 10;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"##
        );
        s.push_str(concat!(
            r##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>"##,
            "\n",
            r##"<rect width="100%" height="100%" fill="#ffffff"/>"##,
            "\n"
        ));
        let _ = writeln!(
            s,
            r##"<text x="{LEFT}" y="24" font-size="16" font-weight="bold">key schedule of {}</text>"##,
            esc(&self.title)
        );
        let suite = self.suite.as_deref().unwrap_or("cipher suite not reported");
        let hash = self.hash().map_or("?", HashAlg::name);
        let _ = writeln!(
            s,
            r##"<text x="{LEFT}" y="44" fill="#444">{}, {hash}; values in hex</text>"##,
            esc(suite)
        );
        let mut x = LEFT;
        for op in [
            DerivationOp::Extract,
            DerivationOp::DeriveSecret,
            DerivationOp::ExpandLabel,
            DerivationOp::Hmac,
        ] {
            let (fill, stroke) = colors(op);
            let _ = writeln!(
                s,
                r##"<rect x="{x}" y="56" width="14" height="14" rx="3" fill="{fill}" stroke="{stroke}"/><text x="{}" y="67">{}</text>"##,
                x + 20,
                op_name(op)
            );
            x += 150;
        }
        if !ech.is_empty() {
            for (fill, stroke, name) in [
                (DH_COLORS.0, DH_COLORS.1, "HPKE DH, ‖"),
                (SEAL_COLORS.0, SEAL_COLORS.1, "HPKE Seal"),
            ] {
                let _ = writeln!(
                    s,
                    r##"<rect x="{x}" y="56" width="14" height="14" rx="3" fill="{fill}" stroke="{stroke}"/><text x="{}" y="67">{name}</text>"##,
                    x + 20
                );
                x += 150;
            }
        }
        if !ech.is_empty() {
            let _ = writeln!(
                s,
                r##"<text x="{LEFT}" y="{}" font-size="14" font-weight="bold">Encrypted ClientHello (RFC 9849): HPKE (RFC 9180), each Seal, the acceptance confirmation</text>"##,
                TOP + 14
            );
            let w = BOX_W + max_depth * INDENT;
            // Monospace at 10 px is about 6 px a character (a 65-byte key_schedule_context
            // fits whole); 8 px of margin each side.
            let fits = (w - 16) / 6;
            for (k, r) in ech.iter().enumerate() {
                let y = TOP + (k + 1) * ROW - 24;
                let _ = writeln!(
                    s,
                    r##"<rect x="{LEFT}" y="{y}" width="{w}" height="{}" rx="5" fill="{}" stroke="{}"/>"##,
                    ROW - 10,
                    r.colors.0,
                    r.colors.1
                );
                let _ = writeln!(
                    s,
                    r##"<text x="{}" y="{}"><tspan font-weight="bold">{}</tspan><tspan dx="5" fill="#333" font-size="11">= {}</tspan></text>"##,
                    LEFT + 8,
                    y + 16,
                    esc(&r.name),
                    esc(&ellipsize(&r.formula, 110))
                );
                let _ = writeln!(
                    s,
                    r##"<text x="{}" y="{}" font-family="monospace" font-size="10">{}</text>"##,
                    LEFT + 8,
                    y + 34,
                    esc(&ellipsize(&r.value, fits))
                );
            }
            let _ = writeln!(
                s,
                r##"<text x="{LEFT}" y="{}" font-size="14" font-weight="bold">The TLS key schedule (RFC 8446 §7.1), of {}</text>"##,
                TOP + ech_h - 10,
                if self.ech.as_ref().is_some_and(EchView::accepted) {
                    "the inner handshake (ECH accepted)"
                } else {
                    "the outer handshake (ECH not accepted)"
                }
            );
        }
        let top = TOP + ech_h;
        let mut y_of = vec![0usize; self.nodes.len()];
        for (row, &(i, depth)) in rows.iter().enumerate() {
            let y = top + row * ROW;
            y_of[i] = y;
            let bx = LEFT + depth * INDENT;
            let n = &self.nodes[i];
            if let Some(p) = n.parent {
                let px = LEFT + (depth - 1) * INDENT + 10;
                let py = y_of[p] + ROW - 10;
                let cy = y + (ROW - 10) / 2;
                let _ = writeln!(
                    s,
                    r##"<path d="M{px},{py} V{cy} H{bx}" fill="none" stroke="#888"/>"##
                );
            }
            let (fill, stroke) = colors(n.step.op);
            let _ = writeln!(
                s,
                r##"<rect x="{bx}" y="{y}" width="{BOX_W}" height="{}" rx="5" fill="{fill}" stroke="{stroke}"/>"##,
                ROW - 10
            );
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}"><tspan font-weight="bold">{}</tspan><tspan dx="5" fill="#333" font-size="11">= {}</tspan></text>"##,
                bx + 8,
                y + 16,
                esc(&n.step.name),
                esc(&self.formula(i))
            );
            let context = self
                .details(i, false)
                .into_iter()
                .find(|(k, _)| *k != "value")
                .map(|(k, v)| format!("{k} {v}"));
            let mut value_y = y + 31;
            if let Some(c) = context {
                let _ = writeln!(
                    s,
                    r##"<text x="{}" y="{}" font-size="10" fill="#555">{}</text>"##,
                    bx + 8,
                    y + 29,
                    esc(&ellipsize(&c, 118))
                );
                value_y = y + 42;
            }
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{value_y}" font-family="monospace" font-size="11">{}</text>"##,
                bx + 8,
                hex(&n.step.output)
            );
            if let Some(ikm) = n.ikm.filter(|k| *k != Ikm::Zeros) {
                self.svg_input(&mut s, ikm, n, input_x, y, bx + BOX_W, ROW - 10, INPUT_W);
            }
        }
        s.push_str("</svg>\n");
        s
    }

    #[allow(clippy::too_many_arguments)]
    fn svg_input(
        &self,
        s: &mut String,
        ikm: Ikm,
        n: &Node,
        x: usize,
        y: usize,
        target_x: usize,
        h: usize,
        w: usize,
    ) {
        let mut lines: Vec<(String, String)> = Vec::new();
        let title = match ikm {
            Ikm::SharedSecret(i) => {
                let sh = &self.shared[i];
                if sh.components.len() > 1 {
                    for (name, v) in &sh.components {
                        lines.push((name.clone(), hex(v)));
                    }
                }
                format!("{} shared secret", sh.group)
            }
            Ikm::Psk => "PSK".to_string(),
            _ => "IKM".to_string(),
        };
        if lines.is_empty() {
            lines.push((String::new(), hex(n.step.input("ikm").unwrap_or_default())));
        }
        let _ = writeln!(
            s,
            r##"<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="5" fill="#fff7d6" stroke="#c9a227"/>"##
        );
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" font-weight="bold">{}</text>"##,
            x + 8,
            y + 15,
            esc(&title)
        );
        for (k, (name, v)) in lines.iter().enumerate() {
            let text = if name.is_empty() {
                ellipsize(v, 50)
            } else {
                ellipsize(&format!("{name} {v}"), 50)
            };
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}" font-family="monospace" font-size="10">{}</text>"##,
                x + 8,
                y + 29 + k * 12,
                esc(&text)
            );
        }
        let _ = writeln!(
            s,
            r##"<path d="M{x},{} H{}" stroke="#555" marker-end="url(#arrow)"/>"##,
            y + h / 2,
            target_x + 2
        );
    }
}

/// HPKE's DH and concatenations, and its Seals, in the ECH band.
const DH_COLORS: (&str, &str) = ("#fff7d6", "#c9a227");
const SEAL_COLORS: (&str, &str) = ("#ece0f8", "#7a4fb0");

/// One box of the ECH band.
struct EchRow {
    name: String,
    formula: String,
    value: String,
    colors: (&'static str, &'static str),
}

/// The ECH band's boxes: each HPKE step, each Seal (its nonce and whether the payload opens)
/// and each confirmation (beside the bytes on the wire).
fn ech_rows(e: &EchView) -> Vec<EchRow> {
    let mut out: Vec<EchRow> = e
        .steps
        .iter()
        .enumerate()
        .map(|(i, st)| EchRow {
            name: st.name.name().to_string(),
            formula: super::hpke::formula(st, &e.steps[..i]),
            value: hex(&st.output),
            colors: match st.op {
                HpkeOp::LabeledExtract => colors(DerivationOp::Extract),
                HpkeOp::LabeledExpand => colors(DerivationOp::ExpandLabel),
                HpkeOp::Dh | HpkeOp::Concat | HpkeOp::Kem => DH_COLORS,
            },
        })
        .collect();
    for seal in &e.seals {
        let opened = match &seal.opened {
            Some(p) => format!("opens: EncodedClientHelloInner, {} bytes", p.len()),
            None => "does not open with key, nonce and aad".to_string(),
        };
        let nonce = seal.nonce.map_or("?".to_string(), |n| hex(&n));
        out.push(EchRow {
            name: format!("payload (seq {})", seal.seq),
            formula: format!(
                "Seal(key, nonce = base_nonce XOR I2OSP({}, 12), ClientHelloOuterAAD {} bytes, EncodedClientHelloInner)",
                seal.seq,
                seal.aad.len()
            ),
            value: format!("nonce {nonce}; {} bytes, {opened}", seal.payload.len()),
            colors: SEAL_COLORS,
        });
    }
    for c in &e.confirmations {
        let name = if c.is_hrr() {
            "hrr_accept_confirmation"
        } else {
            "accept_confirmation"
        };
        let wire = match &c.on_wire {
            Some(w) if *w == c.confirmation => "= the bytes on the wire: ECH accepted",
            Some(_) => "≠ the bytes on the wire",
            None => "(not found on the wire)",
        };
        let checks = if c.derivation_checks {
            ""
        } else {
            " (the derivation does NOT give it)"
        };
        out.push(EchRow {
            name: name.to_string(),
            formula: format!(
                "HKDF-Expand-Label(HKDF-Extract(0, ClientHelloInner.random), \"{}\", transcript hash, 8)",
                c.label
            ),
            value: format!("{} {wire}{checks}", hex(&c.confirmation)),
            colors: colors(DerivationOp::ExpandLabel),
        });
    }
    out
}

fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn op_name(op: DerivationOp) -> &'static str {
    match op {
        DerivationOp::Extract => "HKDF-Extract",
        DerivationOp::DeriveSecret => "Derive-Secret",
        DerivationOp::ExpandLabel => "HKDF-Expand-Label",
        DerivationOp::Hmac => "HMAC",
    }
}

fn colors(op: DerivationOp) -> (&'static str, &'static str) {
    match op {
        DerivationOp::Extract => ("#dbe8fb", "#3d6fb6"),
        DerivationOp::DeriveSecret => ("#dff3e0", "#3f8f48"),
        DerivationOp::ExpandLabel => ("#eeeeee", "#777777"),
        DerivationOp::Hmac => ("#fbe5d6", "#c0662b"),
    }
}
