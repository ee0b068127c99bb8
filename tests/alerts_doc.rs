//! docs/alerts.md is checked, not just written: every test it names exists in `tests/*.rs` or
//! `cli/tests/*.rs` (the tests that run the binary),
//! every `PeerMisbehaved` and `RecordError` variant appears in it, and the alert written in a
//! row that names a `PeerMisbehaved` variant is the one `PeerMisbehaved::alert` maps it to
//! (read from src/error.rs).

use std::collections::{BTreeMap, BTreeSet};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `#[test] fn name()` functions of each `tests/*.rs` and `cli/tests/*.rs` file, by file stem.
fn test_functions() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    let entries = ["tests", "cli/tests"].into_iter().flat_map(|dir| {
        std::fs::read_dir(format!("{ROOT}/{dir}")).unwrap_or_else(|e| panic!("{dir}/: {e}"))
    });
    for entry in entries {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(&path).expect("test source");
        let mut fns = BTreeSet::new();
        let mut after_test_attr = false;
        for line in src.lines() {
            let t = line.trim();
            if t == "#[test]" {
                after_test_attr = true;
                continue;
            }
            if after_test_attr {
                if let Some(rest) = t.strip_prefix("fn ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    fns.insert(name);
                }
                if !t.starts_with("#[") {
                    after_test_attr = false;
                }
            }
        }
        out.insert(stem, fns);
    }
    out
}

/// Variant names of `pub enum NAME` in `src`.
fn variants(src: &str, name: &str) -> Vec<String> {
    let start = src
        .find(&format!("pub enum {name} {{"))
        .unwrap_or_else(|| panic!("enum {name}"));
    let body = &src[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with('#') && !l.is_empty())
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
        .map(|l| {
            l.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// `CamelCase` → `snake_case` (alert names as the RFC writes them).
fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// PeerMisbehaved variant → alert name, from the match in `PeerMisbehaved::alert`.
fn alert_map(error_rs: &str) -> BTreeMap<String, String> {
    let start = error_rs
        .find("pub fn alert(&self) -> AlertDescription")
        .unwrap();
    let body = &error_rs[start..];
    let body = &body[..body.find("\n    }\n}").unwrap()];
    let mut out = BTreeMap::new();
    let mut pending: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find(['P', 'A', '=']) {
        rest = &rest[i..];
        if let Some(r) = rest.strip_prefix("P::") {
            let v: String = r.chars().take_while(|c| c.is_alphanumeric()).collect();
            pending.push(v.clone());
            rest = &r[v.len()..];
        } else if let Some(r) = rest.strip_prefix("A::") {
            let a: String = r.chars().take_while(|c| c.is_alphanumeric()).collect();
            for v in pending.drain(..) {
                out.insert(v, snake(&a));
            }
            rest = &r[a.len()..];
        } else {
            rest = &rest[1..];
        }
    }
    // A variant that wraps an error with its own alert (`P::Ech(e) => e.alert()`): its rows
    // name the inner error, whose alert the ECH tests check.
    for v in pending {
        out.insert(v, DELEGATED.to_string());
    }
    out
}

const DELEGATED: &str = "(the wrapped error's)";

/// Backticked spans of a line.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

#[test]
fn every_test_named_in_alerts_md_exists() {
    let doc = read("docs/alerts.md");
    let tests = test_functions();
    let mut named = 0;
    for line in doc.lines() {
        for span in code_spans(line) {
            let Some((file, func)) = span.split_once("::") else {
                continue;
            };
            let Some(fns) = tests.get(file) else {
                continue; // e.g. `PeerMisbehaved::BadBinder`
            };
            assert!(
                fns.contains(func),
                "docs/alerts.md names {span}, but tests/{file}.rs has no #[test] fn {func}"
            );
            named += 1;
        }
    }
    assert!(named >= 80, "only {named} tests named");
}

#[test]
fn every_error_variant_appears_in_alerts_md() {
    let doc = read("docs/alerts.md");
    for (file, enum_name) in [
        ("src/error.rs", "PeerMisbehaved"),
        ("src/record/mod.rs", "RecordError"),
        ("src/crypto/cert/mtc.rs", "MtcError"),
    ] {
        let vs = variants(&read(file), enum_name);
        assert!(vs.len() >= 9, "{enum_name}: {vs:?}");
        for v in vs {
            assert!(
                doc.contains(&format!("`{enum_name}::{v}`")),
                "docs/alerts.md does not mention `{enum_name}::{v}`"
            );
        }
    }
}

#[test]
fn alerts_in_alerts_md_match_the_code() {
    let doc = read("docs/alerts.md");
    let map = alert_map(&read("src/error.rs"));
    let all = variants(&read("src/error.rs"), "PeerMisbehaved");
    assert_eq!(
        map.keys().cloned().collect::<BTreeSet<_>>(),
        all.iter().cloned().collect::<BTreeSet<_>>(),
        "every variant has an alert"
    );
    let mut checked = 0;
    for line in doc.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 6 {
            continue;
        }
        let alert_cell = cells[3];
        for span in code_spans(line) {
            if let Some(v) = span.strip_prefix("PeerMisbehaved::") {
                let want = map
                    .get(v)
                    .unwrap_or_else(|| panic!("unknown variant {span} in docs/alerts.md"));
                if want == DELEGATED {
                    continue;
                }
                assert!(
                    alert_cell.contains(want.as_str()),
                    "docs/alerts.md: {span} is answered with {want}, the row says {alert_cell:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 40, "only {checked} rows checked");
}
