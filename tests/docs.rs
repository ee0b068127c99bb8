//! The docs/ book is produced by the tool. Every block between
//! `<!-- BEGIN GENERATED name -->` and `<!-- END GENERATED -->` in docs/*.md whose name is in
//! [`BLOCKS`], and every file listed in `generated_files`, is regenerated here from the library;
//! the test fails when the committed docs differ from what the code prints now. Blocks with other
//! names belong to other generators (the interop tests write docs/interop.md's) and are left alone.
//!
//! To rewrite them: `TLS13LAB_WRITE_DOCS=1 cargo test --release --test docs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lab::demo::{self, DemoRun};
use lab::explain::{self, InMemory};
use lab::ladder::ladder;
#[cfg(feature = "cert-compression")]
use lab::pqauth;
use tls13lab::events::Side;
use tls13lab::messages::enums::{HandshakeType, NamedGroup};

#[path = "../examples/sans_io.rs"]
#[allow(dead_code)]
mod sans_io;

const BEGIN: &str = "<!-- BEGIN GENERATED ";
const END: &str = "<!-- END GENERATED";

/// The blocks this file writes; each must appear in docs/.
const BLOCKS: &[&str] = &[
    "keyschedule-figure",
    "keys-rfc8448-3",
    "keys-rfc8448-4",
    "keys-hybrid",
    "keys-ech",
    "costs-compare",
    "costs-x25519-summary",
    "costs-hybrid-summary",
    "costs-x25519-full",
    "costs-x25519-resumed",
    "costs-x25519-0rtt",
    "costs-hybrid-full",
    "costs-hybrid-resumed",
    "costs-hybrid-0rtt",
    "api-example",
    "api-output",
    "pqauth-summary",
    "pqauth-table",
    "ech-summary",
    "ech-noech",
    "ech-accepted",
    "ech-grease",
    "ech-rejected",
    "ech-retry",
    "ech-pq",
];
const EXPORT: &[u8] = b"EXPERIMENTAL tls13lab";
const RESPONSE: &[u8] = b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nhello from tls13lab\n";

fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs")
}

/// A command line and what it prints.
fn shell(command: &str, output: &str) -> String {
    format!("```text\n$ {command}\n{output}```\n")
}

fn text(body: &str) -> String {
    format!("```text\n{body}```\n")
}

/// The demo's three connections (full, resumed, 0-RTT) with the client's key share in `group`.
fn three(group: NamedGroup) -> Vec<DemoRun> {
    let (server, root) = demo::server_config(1, demo::NOW_MS).unwrap();
    let mut client = demo::client_config(root);
    client.key_shares = vec![group];
    demo::three_connections(
        Arc::new(client),
        Arc::new(server),
        1,
        demo::NOW_MS,
        explain::DEMO_REQUEST,
        RESPONSE,
    )
    .unwrap()
}

fn group_of(name: &str) -> NamedGroup {
    match name {
        "x25519" => NamedGroup::X25519,
        "hybrid" => NamedGroup::X25519MLKEM768,
        other => panic!("unknown group {other} in a generated block name"),
    }
}

fn message_len(run: &DemoRun, typ: HandshakeType) -> usize {
    run.ledger
        .records
        .iter()
        .flat_map(|r| &r.messages)
        .find(|m| m.typ == typ)
        .map_or(0, |m| m.len)
}

/// Classical vs hybrid, connection by connection, as a Markdown table.
fn compare() -> String {
    let classical = three(NamedGroup::X25519);
    let hybrid = three(NamedGroup::X25519MLKEM768);
    let mut s = String::from(
        "| connection | ClientHello | ServerHello | C→S bytes | S→C bytes | total |\n\
         | --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (c, h) in classical.iter().zip(&hybrid) {
        let cell = |f: &dyn Fn(&DemoRun) -> usize| {
            let (a, b) = (f(c), f(h));
            format!("{a} → {b} (+{})", b - a)
        };
        let c2s = |r: &DemoRun| r.ledger.totals.client_to_server.bytes;
        let s2c = |r: &DemoRun| r.ledger.totals.server_to_client.bytes;
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            c.label,
            cell(&|r| message_len(r, HandshakeType::ClientHello)),
            cell(&|r| message_len(r, HandshakeType::ServerHello)),
            cell(&c2s),
            cell(&s2c),
            cell(&|r| c2s(r) + s2c(r)),
        ));
    }
    s
}

/// docs/ech.md's connections, run once for all of its blocks.
fn ech_runs() -> &'static [lab::ech::EchRun] {
    static RUNS: std::sync::OnceLock<Vec<lab::ech::EchRun>> = std::sync::OnceLock::new();
    RUNS.get_or_init(|| lab::ech::runs().expect("the ECH runs"))
}

/// docs/pq-auth.md's round-trip time.
#[cfg(feature = "cert-compression")]
const PQ_RTT_MS: u64 = 50;

/// docs/pq-auth.md's rows, computed once for both of its blocks.
#[cfg(feature = "cert-compression")]
fn pq_rows() -> &'static [pqauth::Row] {
    static ROWS: std::sync::OnceLock<Vec<pqauth::Row>> = std::sync::OnceLock::new();
    ROWS.get_or_init(|| pqauth::table(PQ_RTT_MS).expect("the pq-auth table"))
}

/// The text between ```text fences of the key schedule figure in src/keyschedule/mod.rs.
fn keyschedule_figure() -> String {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/keyschedule/mod.rs"),
    )
    .unwrap();
    let lines: Vec<&str> = src
        .lines()
        .map(|l| l.strip_prefix("//!").unwrap_or(l))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .skip_while(|l| *l != "```text")
        .skip(1)
        .take_while(|l| *l != "```")
        .collect();
    text(&format!("{}\n", lines.join("\n")))
}

/// The content of the generated block `name`.
fn generate(name: &str) -> String {
    let parts: Vec<&str> = name.split('-').collect();
    match parts.as_slice() {
        ["keyschedule", "figure"] => keyschedule_figure(),
        ["keys", "rfc8448", "3"] => shell(
            "tls13lab keys --rfc8448 3 --explain --no-export",
            &explain::rfc8448(3, Side::Client, None).unwrap().text(true),
        ),
        ["keys", "rfc8448", "4"] => shell(
            "tls13lab keys --rfc8448 4 --no-export",
            &explain::rfc8448(4, Side::Client, None).unwrap().text(false),
        ),
        ["keys", "hybrid"] => {
            let run = InMemory::demo(1)
                .unwrap()
                .with_groups(&[NamedGroup::X25519MLKEM768]);
            shell(
                "tls13lab keys --groups X25519MLKEM768",
                &explain::in_memory_tree(&run, Side::Client, Some(EXPORT))
                    .unwrap()
                    .text(false),
            )
        }
        ["keys", "ech"] => {
            let run = InMemory {
                ech: true,
                hello_retry: true,
                ..InMemory::demo(1).unwrap()
            };
            let text = explain::in_memory_tree(&run, Side::Client, None)
                .unwrap()
                .text(true);
            // The ECH part, through the key schedule's first line.
            let n = text
                .lines()
                .position(|l| l.starts_with("key schedule of"))
                .unwrap()
                + 1;
            let head: String = text.lines().take(n).map(|l| format!("{l}\n")).collect();
            shell(
                &format!("tls13lab keys --ech --hrr --explain --no-export | head -n {n}"),
                &head,
            )
        }
        ["costs", group, "summary"] => text(&demo::summary_table(&three(group_of(group)))),
        ["costs", group, which] => {
            let runs = three(group_of(group));
            let label = match *which {
                "full" => "full",
                "resumed" => "resumed",
                "0rtt" => "resumed+0-RTT",
                other => panic!("unknown connection {other}"),
            };
            let run = runs.iter().find(|r| r.label == label).unwrap();
            text(&format!("{}\n{}", ladder(&run.ledger), run.ledger.table()))
        }
        ["costs", "compare"] => compare(),
        ["ech", "summary"] => {
            let mut t = String::from(
                "| connection | ClientHello on the wire | client to server | server to client | end |\n\
                 | --- | ---: | ---: | ---: | --- |\n",
            );
            for r in ech_runs() {
                t.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    r.label,
                    r.client_hello_len,
                    r.ledger.totals.client_to_server.bytes,
                    r.ledger.totals.server_to_client.bytes,
                    r.end
                ));
            }
            t
        }
        ["ech", "pq"] => {
            use tls13lab::crypto::hpke::Kem;
            let mut t = String::from(
                "| ECHConfig KEM | enc | ECHConfigList | ClientHello on the wire | vs X25519 | segments at MTU 1500 | end |\n\
                 | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
            );
            let x25519 = ech_runs()
                .iter()
                .find(|r| r.label == "ECH accepted")
                .unwrap();
            for (label, kem, config) in [
                ("ECH accepted", Kem::X25519HkdfSha256, (1, 1)),
                ("ECH accepted, ML-KEM-768 config", Kem::MlKem768, (3, 3)),
                ("ECH accepted, X-Wing config", Kem::XWing, (4, 4)),
            ] {
                let r = ech_runs().iter().find(|r| r.label == label).unwrap();
                let list = lab::ech::key_for(config.0, config.1, kem).unwrap().list;
                // The message (its header counted) in one record; Linux's TCP timestamps on.
                let wire = r.client_hello_len + 5;
                let mss = lab::tcp::Link::ipv4(1500, lab::tcp::TCP_TIMESTAMPS)
                    .unwrap()
                    .mss;
                let segments = wire.div_ceil(mss);
                let added = r.client_hello_len as i64 - x25519.client_hello_len as i64;
                t.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} | {} |\n",
                    kem.id(),
                    kem.enc_len(),
                    list.encode().len(),
                    wire,
                    if added == 0 {
                        "—".to_string()
                    } else {
                        format!("+{added}")
                    },
                    segments,
                    r.end
                ));
            }
            t
        }
        ["ech", which] => {
            let label = match *which {
                "noech" => "no ECH",
                "accepted" => "ECH accepted",
                "grease" => "GREASE ECH",
                "rejected" => "stale config: rejected",
                "retry" => "retry with retry_configs",
                other => panic!("unknown ECH run {other}"),
            };
            let r = ech_runs().iter().find(|r| r.label == label).unwrap();
            let server = r.server_ledger.ech_lines();
            let server = if server.is_empty() {
                server
            } else {
                format!("\nThe server's ledger of the same connection:\n{server}")
            };
            text(&format!(
                "{}\n{}{server}",
                ladder(&r.ledger),
                r.ledger.table()
            ))
        }
        #[cfg(feature = "cert-compression")]
        ["pqauth", "summary"] => pqauth::summary(pq_rows()),
        #[cfg(feature = "cert-compression")]
        ["pqauth", "table"] => pqauth::markdown(pq_rows(), PQ_RTT_MS),
        ["api", "example"] => format!("```rust\n{}```\n", include_str!("../examples/sans_io.rs")),
        ["api", "output"] => {
            let mut out = Vec::new();
            sans_io::run(&mut out).unwrap();
            shell(
                "cargo run --example sans_io",
                &String::from_utf8(out).unwrap(),
            )
        }
        _ => unreachable!("{name} is in BLOCKS but has no generator"),
    }
}

/// Whole files the tool writes into docs/.
fn generated_files() -> Vec<(&'static str, String)> {
    let ech = InMemory {
        ech: true,
        ..InMemory::demo(1).unwrap()
    };
    vec![
        (
            "keys-rfc8448-3.svg",
            explain::rfc8448(3, Side::Client, None).unwrap().svg(),
        ),
        // `tls13lab keys --ech --no-export --svg docs/keys-ech.svg`
        (
            "keys-ech.svg",
            explain::in_memory_tree(&ech, Side::Client, None)
                .unwrap()
                .svg(),
        ),
    ]
}

/// `text` with each of our generated blocks regenerated, and the names of those blocks. Trailing
/// spaces are dropped so an editor that strips them does not make the docs stale.
fn regenerate(file: &str, text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let marker_end = rest[start..]
            .find("-->")
            .unwrap_or_else(|| panic!("{file}: unterminated BEGIN marker"))
            + start
            + "-->".len();
        let name = rest[start + BEGIN.len()..marker_end]
            .split_whitespace()
            .next()
            .unwrap_or_default();
        let end = rest[marker_end..]
            .find(END)
            .unwrap_or_else(|| panic!("{file}: block {name} has no END marker"))
            + marker_end;
        let end_marker_end = rest[end..]
            .find("-->")
            .unwrap_or_else(|| panic!("{file}: unterminated END marker"))
            + end
            + "-->".len();
        if !BLOCKS.contains(&name) {
            // Another generator's block: keep it as it is.
            out.push_str(&rest[..end_marker_end]);
        } else {
            out.push_str(&rest[..marker_end]);
            out.push('\n');
            for line in generate(name).lines() {
                out.push_str(line.trim_end());
                out.push('\n');
            }
            out.push_str(&rest[end..end_marker_end]);
            names.push(name.to_string());
        }
        rest = &rest[end_marker_end..];
    }
    out.push_str(rest);
    (out, names)
}

#[test]
fn docs_match_what_the_tool_prints() {
    let write = std::env::var_os("TLS13LAB_WRITE_DOCS").is_some();
    let dir = docs_dir();
    let mut stale = Vec::new();
    let mut used = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let old = std::fs::read_to_string(&path).unwrap();
        let (new, names) = regenerate(&name, &old);
        used.extend(names);
        if new != old {
            if write {
                std::fs::write(&path, new).unwrap();
            }
            stale.push(name);
        }
    }
    for (name, content) in generated_files() {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(content.as_str()) {
            if write {
                std::fs::write(&path, content).unwrap();
            }
            stale.push(name.to_string());
        }
    }
    let unused: Vec<&&str> = BLOCKS
        .iter()
        .filter(|b| !used.iter().any(|u| u == *b))
        .collect();
    assert!(
        unused.is_empty(),
        "generated blocks missing from docs/: {unused:?}"
    );
    assert!(
        write || stale.is_empty(),
        "docs/ no longer matches the tool's output: {stale:?}\n\
         regenerate with: TLS13LAB_WRITE_DOCS=1 cargo test --release --test docs"
    );
}

#[test]
fn sans_io_example_runs() {
    let mut out = Vec::new();
    sans_io::run(&mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("server read 18 bytes: \"GET / HTTP/1.0"),
        "{out}"
    );
    assert!(
        out.contains("client read 24 bytes: \"HTTP/1.0 200 OK"),
        "{out}"
    );
    assert!(out.contains("exporter value (same on both sides)"));
}

#[test]
fn regenerate_replaces_only_our_block_bodies() {
    let doc = "intro\n<!-- BEGIN GENERATED costs-compare -->\nold\n<!-- END GENERATED -->\n\
               <!-- BEGIN GENERATED other: not ours -->\nkept\n<!-- END GENERATED other -->\noutro\n";
    let (new, names) = regenerate("t.md", doc);
    assert_eq!(names, ["costs-compare"]);
    assert!(new.starts_with("intro\n<!-- BEGIN GENERATED costs-compare -->\n| connection |"));
    assert!(
        new.contains("|\n<!-- END GENERATED -->\n<!-- BEGIN GENERATED other: not ours -->\nkept\n")
    );
    assert!(new.ends_with("<!-- END GENERATED other -->\noutro\n"));
    assert!(!new.contains("old"));
    assert_eq!(regenerate("t.md", &new).0, new);
}
