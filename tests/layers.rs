//! No import cycle between the core's top-level modules (issue #25).
//!
//! Every `.rs` file under `src/` belongs to one top-level module (`src/foo.rs` and `src/foo/**` are
//! `foo`), except `src/lib.rs` (the root: it declares modules and re-exports). The instruments
//! and the binary are crates of their own (`lab/`, `cli/`), held to the core's public API by the
//! compiler; [`OUTSIDE_CORE`] checks that none of them has come back under `src/`.
//! A file uses another top-level module when its code names it through `crate::X` — in a `use`,
//! a grouped `use crate::{a::b, c}`, or a path in code — or through `super::` chains that climb to
//! the root; a root re-export (`crate::Client`) counts as a use of the module it comes from.
//! Comments, doc comments and string literals are skipped (intra-doc links are not dependencies),
//! except a string that is a path: serde's `serialize_with = "crate::x::f"` is code.
//!
//! Unit tests (`#[cfg(test)]` modules) are scanned like any other code, by choice: a test that
//! needs a module above its own belongs in `tests/`, or the layering would only hold outside
//! `cargo test`.
//!
//! The graph of those uses must be acyclic; the layer order it allows is in
//! docs/architecture.md ("Layers"), and `--nocapture` prints it. On failure the test prints every
//! elementary cycle, and for each of its edges one file:line that creates it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Top-level modules that are not the core: they live in `lab/` and `cli/`, never under `src/`.
const OUTSIDE_CORE: &[&str] = &["lab", "cli", "main", "net", "demo"];

/// Cycles printed in full before the rest are only counted.
const MAX_PRINTED: usize = 200;

#[derive(Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// One reference: the top-level module used and where.
struct Use {
    target: String,
    line: usize,
}

#[test]
fn core_modules_form_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    files.sort();

    // Top-level modules, core or not: the names `crate::` may be followed by.
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| top_level(&src, f))
        .filter(|m| m != "lib")
        .collect();
    let reexports = root_reexports(&fs::read_to_string(src.join("lib.rs")).unwrap());

    // module -> used module -> first file:line creating the edge
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut unresolved = Vec::new();
    let mut scanned = 0;
    for file in &files {
        let Some(module) = top_level(&src, file) else {
            continue;
        };
        assert!(
            !OUTSIDE_CORE.contains(&module.as_str()),
            "{} belongs in lab/ or cli/, not in the core",
            file.display()
        );
        if module == "lib" {
            continue;
        }
        scanned += 1;
        let rel = file
            .strip_prefix(src.parent().unwrap())
            .unwrap()
            .display()
            .to_string();
        let text = fs::read_to_string(file).unwrap();
        let node = graph.entry(module.clone()).or_default();
        for u in uses(&tokens(&strip(&text)), depth(&src, file)) {
            let target = if modules.contains(&u.target) {
                u.target
            } else if let Some(m) = reexports.get(&u.target) {
                m.clone()
            } else {
                unresolved.push(format!("{rel}:{}: crate::{}", u.line, u.target));
                continue;
            };
            if target != module {
                node.entry(target)
                    .or_insert_with(|| format!("{rel}:{}", u.line));
            }
        }
    }
    assert!(
        unresolved.is_empty(),
        "paths the check cannot resolve:\n{}",
        unresolved.join("\n")
    );
    // The scan must see the core's obvious edges, or an empty graph would pass.
    assert!(
        scanned > 20,
        "only {scanned} core files found under {}",
        src.display()
    );
    assert!(
        graph
            .get("client")
            .is_some_and(|e| e.contains_key("messages")),
        "the scan missed client -> messages"
    );

    let cycles = elementary_cycles(&graph);
    if cycles.is_empty() {
        // The layers, for docs/architecture.md (`--nocapture` shows them): each module sits one
        // above the highest module it uses.
        let mut layer: BTreeMap<&str, usize> = BTreeMap::new();
        while layer.len() < graph.len() {
            for (m, uses) in &graph {
                let below: Option<Vec<usize>> = uses
                    .keys()
                    .filter(|u| graph.contains_key(*u))
                    .map(|u| layer.get(u.as_str()).copied())
                    .collect();
                if let Some(below) = below {
                    layer.insert(m, below.into_iter().max().map_or(0, |l| l + 1));
                }
            }
        }
        for l in 0..=layer.values().copied().max().unwrap_or(0) {
            let at: Vec<&str> = layer
                .iter()
                .filter(|(_, &n)| n == l)
                .map(|(m, _)| *m)
                .collect();
            eprintln!("layer {l}: {}", at.join(", "));
        }
        return;
    }
    let mut report = format!(
        "{} import cycle(s) between the core's modules:\n",
        cycles.len()
    );
    for cycle in cycles.iter().take(MAX_PRINTED) {
        report += &format!("\n  {}\n", cycle.join(" -> "));
        for pair in cycle.windows(2) {
            let at = &graph[&pair[0]][&pair[1]];
            report += &format!("      {} -> {}   {at}\n", pair[0], pair[1]);
        }
    }
    if cycles.len() > MAX_PRINTED {
        report += &format!("\n  ... and {} more\n", cycles.len() - MAX_PRINTED);
    }
    panic!("{report}");
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/foo.rs`, `src/foo/**` -> `foo`.
fn top_level(src: &Path, file: &Path) -> Option<String> {
    let first = file.strip_prefix(src).ok()?.components().next()?;
    let name = first.as_os_str().to_str()?;
    Some(name.strip_suffix(".rs").unwrap_or(name).to_string())
}

/// How many modules deep a file's top is: `src/foo.rs` and `src/foo/mod.rs` are 1,
/// `src/foo/bar.rs` 2. (A `#[path]` file counts by where it is, which can only undercount.)
fn depth(src: &Path, file: &Path) -> usize {
    let parts = file.strip_prefix(src).unwrap().components().count();
    if file.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// Root names re-exported by lib.rs (`pub use client::{Client, ClientSide}`) -> their module.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let toks = tokens(&strip(lib));
    let mut map = BTreeMap::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i].0 == Tok::Ident("use".into()) {
            let Some((Tok::Ident(module), _)) = toks.get(i + 1) else {
                break;
            };
            // Every name brought in up to the `;`: the last identifier before `,`, `}` or `;`.
            let mut last = None;
            i += 2;
            while i < toks.len() && toks[i].0 != Tok::Punct(';') {
                match &toks[i].0 {
                    Tok::Ident(name) => last = Some(name.clone()),
                    Tok::Punct(',' | '}') => {
                        if let Some(name) = last.take() {
                            map.insert(name, module.clone());
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            if let Some(name) = last {
                map.insert(name, module.clone());
            }
        }
        i += 1;
    }
    map
}

/// The source with comments, string and char literals blanked; line breaks are kept, so token
/// lines are the file's.
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, from: &[char]| {
        out.extend(from.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }))
    };
    let mut i = 0;
    while i < c.len() {
        let start = i;
        if c[i] == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && at(i + 1) == '*' {
            let mut nest = 0;
            loop {
                if i >= c.len() {
                    break;
                } else if c[i] == '/' && at(i + 1) == '*' {
                    nest += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    nest -= 1;
                    i += 2;
                    if nest == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (i == 0 || !ident(c[i - 1]) || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
            && matches!(at(i + 1), '#' | '"')
            && c[i + 1..].iter().find(|&&ch| ch != '#') == Some(&'"')
        {
            // r"..." or r#"..."#: ends at a quote followed by as many hashes.
            let hashes = c[i + 1..].iter().take_while(|&&ch| ch == '#').count();
            i += 2 + hashes;
            while i < c.len() && !(c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                i += 1;
            }
            i = (i + 1 + hashes).min(c.len());
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(c.len());
            // A string that is a path is code to serde (`serialize_with = "crate::x::f"`).
            let inner: String = c[start + 1..i - 1].iter().collect();
            if is_path(&inner) {
                out.push(' ');
                out.push_str(&inner);
                out.push(' ');
                continue;
            }
        } else if c[i] == '\'' && at(i + 1) == '\\' {
            // '\n', '\'', '\u{..}'
            i += 3;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i = (i + 1).min(c.len());
        } else if c[i] == '\'' && at(i + 2) == '\'' {
            i += 3;
        } else {
            // Code, or a lifetime.
            out.push(c[i]);
            i += 1;
            continue;
        }
        blank(&mut out, &c[start..i.min(c.len())]);
    }
    out
}

/// `crate::a::f`, `super::f`: a path that can leave its module, and nothing else.
fn is_path(s: &str) -> bool {
    let mut parts = s.split("::");
    matches!(parts.next(), Some("crate" | "super"))
        && s.contains("::")
        && parts.all(|p| !p.is_empty() && p.chars().all(|ch| ch.is_alphanumeric() || ch == '_'))
}

/// Identifiers, `::` and single punctuation, with their line numbers.
fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        if c[i] == '\n' {
            line += 1;
            i += 1;
        } else if c[i].is_whitespace() {
            i += 1;
        } else if c[i].is_alphanumeric() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(c[start..i].iter().collect()), line));
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c[i]), line));
            i += 1;
        }
    }
    out
}

/// Every root-level name a file's code reaches: `crate::X`, `crate::{X, Y::..}`, and `super::`
/// chains that climb out of the file's top-level module. `depth` is the file's module depth;
/// inline `mod x { .. }` blocks add to it.
fn uses(toks: &[(Tok, usize)], depth: usize) -> Vec<Use> {
    let ident = |i: usize| match toks.get(i) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    let is = |i: usize, t: &Tok| toks.get(i).is_some_and(|(x, _)| x == t);
    let mut out = Vec::new();
    // One entry per open brace: whether it opened an inline module.
    let mut braces: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let line = toks[i].1;
        match &toks[i].0 {
            Tok::Punct('{') => braces.push(i >= 2 && ident(i - 2) == Some("mod")),
            Tok::Punct('}') => {
                braces.pop();
            }
            Tok::Ident(kw) if kw == "crate" && is(i + 1, &Tok::Path) => {
                root_names(toks, i + 2, line, &mut out);
            }
            // The first `super` of a chain (not `self::super` or `a::super`).
            Tok::Ident(kw)
                if kw == "super" && is(i + 1, &Tok::Path) && !(i > 0 && is(i - 1, &Tok::Path)) =>
            {
                let mut up = 0;
                while ident(i + 2 * up) == Some("super") && is(i + 2 * up + 1, &Tok::Path) {
                    up += 1;
                }
                let here = depth + braces.iter().filter(|&&m| m).count();
                assert!(
                    up <= here,
                    "super:: climbs above the crate root at line {line}"
                );
                if up == here {
                    root_names(toks, i + 2 * up, line, &mut out);
                }
                i += 2 * up;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The root-level names a path names from token `at` on: `X` or a group `{X::.., Y, ..}`.
fn root_names(toks: &[(Tok, usize)], at: usize, line: usize, out: &mut Vec<Use>) {
    match toks.get(at) {
        Some((Tok::Ident(name), _)) => out.push(Use {
            target: name.clone(),
            line,
        }),
        Some((Tok::Punct('{'), _)) => {
            // The first identifier of each item at the group's own level.
            let (mut level, mut item_start) = (0, true);
            for (tok, l) in &toks[at..] {
                match tok {
                    Tok::Punct('{') => {
                        level += 1;
                        item_start = level == 1;
                        continue;
                    }
                    Tok::Punct('}') => {
                        level -= 1;
                        if level == 0 {
                            break;
                        }
                    }
                    Tok::Punct(',') if level == 1 => {
                        item_start = true;
                        continue;
                    }
                    Tok::Ident(name) if item_start && level == 1 && name != "self" => {
                        out.push(Use {
                            target: name.clone(),
                            line: *l,
                        });
                    }
                    _ => {}
                }
                item_start = false;
            }
        }
        _ => {}
    }
}

/// Every elementary cycle, each as its modules with the first repeated at the end; a cycle is
/// listed once, starting from its smallest module.
fn elementary_cycles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    fn walk<'a>(
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        start: &'a str,
        path: &mut Vec<&'a str>,
        out: &mut Vec<Vec<String>>,
    ) {
        let last = *path.last().unwrap();
        for next in graph.get(last).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                let mut cycle: Vec<String> = path.iter().map(|s| s.to_string()).collect();
                cycle.push(start.to_string());
                out.push(cycle);
            } else if next.as_str() > start && !path.contains(&next.as_str()) {
                path.push(next);
                walk(graph, start, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    for start in graph.keys() {
        walk(graph, start, &mut vec![start.as_str()], &mut out);
    }
    out
}
