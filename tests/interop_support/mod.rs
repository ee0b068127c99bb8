//! What the interop tests share: identities (keys and certificates as DER and PEM), the results
//! matrix and the generated sections of docs/interop.md, and ClientHello/ServerHello extension
//! sizes taken from our handshake events.
//!
//! Each interop test binary runs its whole matrix in one `#[test]`: every cell runs (a failing
//! cell does not hide the others), the results become a Markdown section, and that section must
//! equal the one in docs/interop.md. `TLS13LAB_WRITE_DOCS=1` rewrites the section instead;
//! `TLS13LAB_INTEROP_ONLY=substring` runs only the matching cells (and skips the docs check).

#![allow(dead_code)] // each test binary uses a different part

use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lab::certgen::self_signed_p256;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::events::{Direction, Event, HandshakeEvent};
use tls13lab::messages::enums::{CipherSuite, HandshakeType, NamedGroup};
use tls13lab::messages::layout::Span;
use tls13lab::{Connection, Role};

/// The caller's clock for our sans-IO API (real time: OpenSSL and rustls use theirs).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Every group of issue 4 (and secp384r1, which came with it), in the order the docs list them.
pub const GROUPS: &[NamedGroup] = &[
    NamedGroup::X25519,
    NamedGroup::secp256r1,
    NamedGroup::secp384r1,
    NamedGroup::X25519MLKEM768,
    NamedGroup::SecP256r1MLKEM768,
    NamedGroup::SecP384r1MLKEM1024,
    NamedGroup::MLKEM512,
    NamedGroup::MLKEM768,
    NamedGroup::MLKEM1024,
];

/// The three suites every peer here has (RFC 8446 §9.1 and ChaCha20; rustls has no CCM, whose
/// suites cli/tests/interop_openssl.rs adds).
pub const SUITES: &[CipherSuite] = &[
    CipherSuite::TLS_AES_128_GCM_SHA256,
    CipherSuite::TLS_AES_256_GCM_SHA384,
    CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
];

/// Whether our key exchange implements `g` (the post-quantum groups arrive with issue 4 item 1).
pub fn we_support(g: NamedGroup) -> bool {
    tls13lab::crypto::kx::is_supported(g)
}

// ------------------------------------------------------------------------------ identities

/// A P-256 key with a self-signed certificate, as our types and as PEM files for OpenSSL.
pub struct Identity {
    /// The key.
    pub key: SigningKey,
    /// The certificate.
    pub cert_der: Vec<u8>,
    /// PKCS#8 DER of the key.
    pub key_der: Vec<u8>,
}

impl Identity {
    /// A deterministic identity for `name` (a DNS name also used as CN), valid around now.
    pub fn new(name: &str, seed: u64) -> Identity {
        Identity::for_names(&[name], seed)
    }

    /// The same for several DNS names, the first also the CN.
    pub fn for_names(names: &[&str], seed: u64) -> Identity {
        let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(seed));
        let now_s = now_ms() / 1000;
        let cert_der = self_signed_p256(names, &key, now_s - 86_400, now_s + 30 * 86_400)
            .expect("self-signed certificate");
        let key_der = key.to_pkcs8_der().expect("pkcs8");
        Identity {
            key,
            cert_der,
            key_der,
        }
    }

    /// A P-256 identity whose self-signed certificate names localhost and a1.example …
    /// a60.example: compressible, as RFC 8879 tests need (OpenSSL sends CompressedCertificate only
    /// when it is smaller). Fixed dates (2020-01-01 to 2040-01-01), so the certificate, its
    /// signature's length and the sizes docs/interop.md shows are the same in every run.
    pub fn compressible(seed: u64) -> Identity {
        let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(seed));
        let names: Vec<String> = std::iter::once("localhost".to_string())
            .chain((1..=60).map(|i| format!("a{i}.example")))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let cert_der = self_signed_p256(&names, &key, 1_577_836_800, 2_208_988_800)
            .expect("self-signed certificate");
        let key_der = key.to_pkcs8_der().expect("pkcs8");
        Identity {
            key,
            cert_der,
            key_der,
        }
    }

    /// The certificate as PEM.
    pub fn cert_pem(&self) -> String {
        pem("CERTIFICATE", &self.cert_der)
    }

    /// The private key as PEM.
    pub fn key_pem(&self) -> String {
        pem("PRIVATE KEY", &self.key_der)
    }

    /// Write `<dir>/<stem>.crt` and `<dir>/<stem>.key`; returns their paths.
    pub fn write(&self, dir: &Path, stem: &str) -> (PathBuf, PathBuf) {
        let c = dir.join(format!("{stem}.crt"));
        let k = dir.join(format!("{stem}.key"));
        std::fs::write(&c, self.cert_pem()).unwrap();
        std::fs::write(&k, self.key_pem()).unwrap();
        (c, k)
    }

    /// As our server/client credential.
    pub fn certified_key(&self) -> tls13lab::config::CertifiedKey {
        tls13lab::config::CertifiedKey {
            chain: vec![self.cert_der.clone()],
            key: Arc::new(self.key.clone()),
        }
    }
}

/// RFC 7468 PEM.
pub fn pem(label: &str, der: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::new();
    for chunk in der.chunks(3) {
        let n = chunk.len();
        let v = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= n {
                b64.push(B64[((v >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let mut s = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        s.push_str(std::str::from_utf8(line).unwrap());
        s.push('\n');
    }
    let _ = writeln!(s, "-----END {label}-----");
    s
}

/// A fresh scratch directory for one cell.
pub fn scratch_dir(peer: &str, cell: &str) -> PathBuf {
    let safe: String = cell
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("interop-{peer}"))
        .join(safe);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ------------------------------------------------------------------- handshake bytes

/// One extension as its type code and the length of its extension_data.
pub type ExtSize = (u16, usize);

/// The first handshake message of type `typ` that went `dir` in `events`.
pub fn handshake_msg(events: &[Event], dir: Direction, typ: HandshakeType) -> &HandshakeEvent {
    events
        .iter()
        .find_map(|e| match e {
            Event::Handshake(h) if h.direction == dir && h.typ == typ => Some(h),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {typ} {dir:?} in our events"))
}

/// Every handshake message of type `typ` that went `dir`.
pub fn handshake_msgs(
    events: &[Event],
    dir: Direction,
    typ: HandshakeType,
) -> Vec<&HandshakeEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Handshake(h) if h.direction == dir && h.typ == typ => Some(h),
            _ => None,
        })
        .collect()
}

/// The extensions of a ClientHello/ServerHello as our layout reports them: every span named
/// `name (code)` whose first child is the 2-byte `type`; the data length excludes type and length.
pub fn extension_sizes(h: &HandshakeEvent) -> Vec<ExtSize> {
    fn walk(spans: &[Span], out: &mut Vec<ExtSize>) {
        for s in spans {
            let is_ext = s
                .children
                .first()
                .is_some_and(|c| c.name == "type" && c.len == 2);
            if is_ext {
                let code = s
                    .name
                    .rsplit_once('(')
                    .and_then(|(_, c)| c.trim_end_matches(')').parse::<u16>().ok())
                    .unwrap_or_else(|| panic!("extension span without a code: {:?}", s.name));
                out.push((code, s.len - 4));
            } else {
                walk(&s.children, out);
            }
        }
    }
    let layout = h.layout.as_ref().expect("layouts are observed");
    let mut v = Vec::new();
    walk(layout, &mut v);
    v
}

// ------------------------------------------------------------------------- our endpoints

/// Appends `bytes` to `pending`, a caller-owned receive buffer, opens every complete record in
/// it with `open_in_place`, keeps the partial one, and returns the plaintext opened in place.
pub fn open_all_in_place<R: Role>(
    ep: &mut Connection<R>,
    pending: &mut Vec<u8>,
    bytes: &[u8],
    now: u64,
) -> Result<Vec<u8>, tls13lab::Error> {
    pending.extend_from_slice(bytes);
    let (mut start, mut plain) = (0, Vec::new());
    loop {
        let o = ep.open_in_place(&mut pending[start..], now)?;
        if let Some(d) = o.data {
            plain.extend_from_slice(&pending[start + d.start..start + d.end]);
        }
        start += o.consumed;
        if o.consumed == 0 {
            break;
        }
    }
    pending.drain(..start);
    Ok(plain)
}

// --------------------------------------------------------------------------- the matrix

/// How a cell ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and every assertion held; the text is stable evidence for the docs.
    Pass(String),
    /// It could not run yet (e.g. a group we do not implement yet).
    Pending(String),
    /// An assertion failed or it timed out.
    Fail(String),
    /// The peer does not have this feature.
    NotApplicable(String),
    /// Filtered out of this run.
    NotRun,
}

impl Outcome {
    /// The short word for tables.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Pass(_) => "pass",
            Outcome::Pending(_) => "pending",
            Outcome::Fail(_) => "**FAIL**",
            Outcome::NotApplicable(_) => "n/a",
            Outcome::NotRun => "-",
        }
    }

    /// The evidence or reason.
    pub fn text(&self) -> &str {
        match self {
            Outcome::Pass(s)
            | Outcome::Pending(s)
            | Outcome::Fail(s)
            | Outcome::NotApplicable(s) => s,
            Outcome::NotRun => "",
        }
    }
}

/// What a cell body returns when it does not panic.
pub type CellResult = Result<String, Skip>;

/// A cell that did not run, and why.
#[derive(Debug)]
pub enum Skip {
    /// Not implemented on our side yet.
    Pending(String),
    /// Not supported by the peer.
    NotApplicable(String),
}

/// A cell to run: a unique name and its body (which panics on failure).
pub struct Cell {
    /// Unique name, e.g. `openssl-3.5 s_client→ours X25519 TLS_AES_128_GCM_SHA256`.
    pub name: String,
    /// The test.
    pub body: Box<dyn FnOnce() -> CellResult + Send>,
}

impl Cell {
    /// A cell.
    pub fn new(
        name: impl Into<String>,
        body: impl FnOnce() -> CellResult + Send + 'static,
    ) -> Cell {
        Cell {
            name: name.into(),
            body: Box::new(body),
        }
    }
}

/// Whether the run is filtered (then the docs are neither checked nor written).
pub fn filter() -> Option<String> {
    std::env::var("TLS13LAB_INTEROP_ONLY")
        .ok()
        .filter(|s| !s.is_empty())
}

/// Run every cell (`workers` at a time), catching panics; results in the input order.
pub fn run_cells(cells: Vec<Cell>, workers: usize) -> Vec<(String, Outcome)> {
    let only = filter();
    let cells: Vec<Cell> = cells
        .into_iter()
        .filter(|c| {
            only.as_ref()
                .is_none_or(|f| c.name.to_lowercase().contains(&f.to_lowercase()))
        })
        .collect();
    let n = cells.len();
    let names: Vec<String> = cells.iter().map(|c| c.name.clone()).collect();
    let queue = Arc::new(Mutex::new(
        cells.into_iter().enumerate().collect::<Vec<_>>(),
    ));
    let results = Arc::new(Mutex::new(vec![None; n]));
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            let queue = queue.clone();
            let results = results.clone();
            s.spawn(move || loop {
                let Some((i, cell)) = ({
                    let mut q = queue.lock().unwrap();
                    if q.is_empty() {
                        None
                    } else {
                        Some(q.remove(0))
                    }
                }) else {
                    return;
                };
                let t0 = Instant::now();
                let outcome = match catch_unwind(AssertUnwindSafe(cell.body)) {
                    Ok(Ok(evidence)) => Outcome::Pass(evidence),
                    Ok(Err(Skip::Pending(why))) => Outcome::Pending(why),
                    Ok(Err(Skip::NotApplicable(why))) => Outcome::NotApplicable(why),
                    Err(p) => Outcome::Fail(panic_text(&p)),
                };
                eprintln!(
                    "[interop] {:<8} {:>6} ms  {}",
                    outcome.word().trim_matches('*'),
                    t0.elapsed().as_millis(),
                    cell.name
                );
                results.lock().unwrap()[i] = Some(outcome);
            });
        }
    });
    eprintln!(
        "[interop] {n} cells in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let results = std::mem::take(&mut *results.lock().unwrap());
    names
        .into_iter()
        .zip(results)
        .map(|(n, o)| (n, o.unwrap_or(Outcome::Fail("did not run".into()))))
        .collect()
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "panic".into()
    }
}

/// Panic listing every failed cell (after the docs were handled, so the table shows them).
pub fn assert_all_passed(results: &[(String, Outcome)]) {
    let failed: Vec<String> = results
        .iter()
        .filter_map(|(n, o)| match o {
            Outcome::Fail(why) => Some(format!("--- {n}\n{why}")),
            _ => None,
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} interop cells failed:\n{}",
        failed.len(),
        results.len(),
        failed.join("\n")
    );
}

/// Look up a cell's outcome by name ([`Outcome::NotRun`] when it was filtered out).
pub fn outcome<'a>(results: &'a [(String, Outcome)], name: &str) -> &'a Outcome {
    results
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, o)| o)
        .unwrap_or(&Outcome::NotRun)
}

// ---------------------------------------------------------------------------- the docs

/// docs/interop.md, found from the package that compiles this module (the root or cli/).
pub fn docs_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("Cargo.lock").exists())
        .unwrap_or(Path::new(env!("CARGO_MANIFEST_DIR")))
        .join("docs/interop.md")
}

/// `intro`, then a `| cell | result |` table of `results` (a pass shows what it returned), into
/// the docs/interop.md section `section`; then every cell must have passed and the page must be
/// current.
pub fn cell_results_section(section: &str, intro: &str, results: &[(String, Outcome)]) {
    let mut docs = format!("{intro}\n\n| cell | result |\n| --- | --- |\n");
    for (name, outcome) in results {
        let word = match outcome {
            Outcome::Pass(s) => format!("pass ({s})"),
            other => other.word().to_string(),
        };
        docs.push_str(&format!("| {name} | {word} |\n"));
    }
    let stale = sync_docs_section(section, &docs);
    assert_all_passed(results);
    if let Err(e) = stale {
        panic!("{e}");
    }
}

/// Write `content` as section `name` of target results and then either rewrite it in
/// docs/interop.md (`TLS13LAB_WRITE_DOCS=1`) or check that the docs already say exactly that.
/// Returns an error message when the docs are stale (the caller fails after reporting cells).
pub fn sync_docs_section(name: &str, content: &str) -> Result<(), String> {
    let results = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("interop-results-{name}.md"));
    let _ = std::fs::write(&results, content);
    if filter().is_some() {
        eprintln!("[interop] filtered run: docs/interop.md not checked");
        return Ok(());
    }
    let begin =
        format!("<!-- BEGIN GENERATED {name}: written by the interop tests, do not edit -->\n");
    let end = format!("<!-- END GENERATED {name} -->");
    let path = docs_path();
    let docs = std::fs::read_to_string(&path).unwrap_or_default();
    let (Some(b), Some(e)) = (docs.find(&begin), docs.find(&end)) else {
        return Err(format!(
            "{} has no section `{}`",
            path.display(),
            begin.trim()
        ));
    };
    let current = &docs[b + begin.len()..e];
    if current == content {
        return Ok(());
    }
    if std::env::var("TLS13LAB_WRITE_DOCS").as_deref() == Ok("1") {
        let new = format!("{}{}{}", &docs[..b + begin.len()], content, &docs[e..]);
        std::fs::write(&path, new).map_err(|e| e.to_string())?;
        eprintln!("[interop] rewrote section {name} of {}", path.display());
        return Ok(());
    }
    // Section `openssl-cli` belongs to interop_openssl too.
    let test = name.split('-').next().unwrap_or(name);
    Err(format!(
        "docs/interop.md section `{name}` differs from this run's results ({}).\n\
         Regenerate it with: TLS13LAB_WRITE_DOCS=1 cargo test --release --test interop_{test}",
        results.display()
    ))
}

/// A bounded wait: poll `cond` every few ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
