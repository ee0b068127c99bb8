//! Tests in a real browser: headless Chromium (Debian's `chromium`, installed by `.ci/run`) opens
//! the illustrated pages (issue 27, docs/illustrated/) from `file://` and a script added to a
//! copy of each page reports what the browser rendered. Outside CI (`CI` not `true`) the tests
//! print a NOTICE and pass when Chromium is absent; in CI they fail.
//!
//! One browser run per page: `chromium --headless --dump-dom` with a net log, in a temporary
//! directory that holds the page copy, the profile, the DOM and the log and is removed
//! afterwards. Chromium runs in its own process group, killed by that id if it overruns.
//!
//! What a page must show, checked through the rendered DOM:
//! - every byte of every record in exactly one visible, named leaf (`div.leaf` with
//!   `data-record`, `data-space`, `data-off`, `data-len`), its hex the record's bytes,
//!   known independently of the page renderer for every page (RFC 8448's own records for the
//!   §3 page; for the hybrid HRR, 0-RTT, ECH and ML-DSA-44 pages the record events of the same
//!   in-memory run `tls13lab keys` makes; a capture of the same demo run for `demo --html`); a
//!   page in docs/illustrated/ the test does not know fails it; on every page,
//!   the wire header's length matches the record and the key, nonce and additional data shown
//!   beside a protected record open its ciphertext to exactly the decrypted bytes shown;
//! - every record opens expanded; collapsed by a click on its summary it hides its decrypted
//!   messages, and a second click shows them again, every field; "Collapse all" and "Expand
//!   all" close and open every block;
//! - the §3 page's first handshake record shows RFC 8448's server handshake key;
//! - the ECH page's ClientHelloInner (decrypted, beside its outer hello): rendered as `.xleaf`
//!   fields, not leaves, their hex the inner hello the client sealed, its server_name shown;
//! - nothing is fetched: no request in Chromium's net log from the page, no resource entry in
//!   the page's performance timeline. A control run with an `<img>` pointing at 127.0.0.1
//!   proves both would see a fetch; the same run, with a leaf removed, a record's decrypted
//!   pane hidden and a key changed, proves the other checks fail; an ECH page copy with one
//!   inner-hello byte and its server_name changed proves the ClientHelloInner checks fail.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use tls13lab::crypto::aead::{AeadAlg, AeadKey};

const BIN: &str = env!("CARGO_BIN_EXE_tls13lab");
const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/illustrated");
/// How long one page may take in the browser before its process group is killed.
const BROWSER_DEADLINE: Duration = Duration::from_secs(90);

// ------------------------------------------------------------------------------ the browser

/// `chromium` on the PATH; `None` with a NOTICE outside CI, a failure in CI.
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("chromium"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI must run the browser tests: chromium is not installed (.ci/run installs it)"
        );
        eprintln!(
            "NOTICE: chromium is not installed (apt-get install -y chromium): skipping the browser checks"
        );
    }
    found
}

/// A temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d =
            std::env::temp_dir().join(format!("tls13lab-browser-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Sends `sig` to the process group `pgid` (one this test started: its leader's id); false when
/// no process is left in it. Signal 0 only asks.
fn signal_group(pgid: i32, sig: i32) -> bool {
    // SAFETY: kill(2) takes plain integers; a negative id names the group.
    unsafe { libc::kill(-pgid, sig) == 0 }
}

/// Kills the process group `pgid` and waits until it is gone.
fn kill_group(pgid: i32) {
    signal_group(pgid, libc::SIGKILL);
    let until = Instant::now() + Duration::from_secs(10);
    while signal_group(pgid, 0) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child`, the leader of its own process group, for at most [`BROWSER_DEADLINE`]
/// (then kills the group: `None`), and kills whatever is left of the group after it exited.
fn run_group(mut child: std::process::Child) -> Option<std::process::ExitStatus> {
    let pgid = child.id() as i32;
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > BROWSER_DEADLINE {
            kill_group(pgid);
            break None;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    // Helpers (zygote, renderer) leave with the browser; whatever is left goes now. (Chromium's
    // crash handlers start sessions of their own and leave when the browser is gone;
    // --disable-crashpad-for-testing would keep them away but makes --dump-dom hang.)
    let _ = child.wait();
    if signal_group(pgid, 0) {
        std::thread::sleep(Duration::from_millis(200));
        kill_group(pgid);
    }
    status
}

/// Runs headless Chromium on `page` (a file in `dir`): returns the DOM it serialised after the
/// load event and the path of its net log.
fn run_chromium(chromium: &Path, dir: &Path, page: &Path) -> (String, PathBuf) {
    run_chromium_timed(chromium, dir, page, true)
}

/// [`run_chromium`]; without `virtual_time` the page's clock is the wall clock and the DOM is
/// dumped as soon as the load event has run (for timing a page, [`large_page_load_times`]).
fn run_chromium_timed(
    chromium: &Path,
    dir: &Path,
    page: &Path,
    virtual_time: bool,
) -> (String, PathBuf) {
    let net_log = dir.join("netlog.json");
    let dom = dir.join("dom.html");
    let err = dir.join("chromium.err");
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        // Root in a container: no user namespaces for the sandbox; no GPU.
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        // Nothing the browser itself might want leaves the machine; requests still start and
        // are logged, which is what the check looks for.
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ])
    .args(
        // Timers run to completion before the DOM is dumped.
        virtual_time.then_some("--virtual-time-budget=2000"),
    )
    .arg(format!("--user-data-dir={}", dir.join("profile").display()))
    .arg(format!("--log-net-log={}", net_log.display()))
    .arg("--dump-dom")
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(&dom).unwrap())
    .stderr(std::fs::File::create(&err).unwrap())
    .process_group(0);
    let status = run_group(cmd.spawn().expect("start chromium"));
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    match status {
        Some(s) if s.success() => {}
        Some(s) => panic!("chromium on {} exited {s}: {stderr}", page.display()),
        None => panic!(
            "chromium on {} took over {BROWSER_DEADLINE:?}: killed. {stderr}",
            page.display()
        ),
    }
    (std::fs::read_to_string(&dom).unwrap(), net_log)
}

/// Added to the page copy: after the load event (and the page's own script) it collapses each
/// record with a click on its summary and expands it with another, noting what is rendered
/// each time; then it presses the page's "Collapse all" and "Expand all" buttons and reads the
/// leaves, the calculations and the resource timeline as the browser rendered them. The result
/// goes into the DOM as percent-encoded JSON (no markup to unescape).
const CHECK_JS: &str = r#"
window.addEventListener('load', function () {
  var out = { errors: [] };
  var list = function (q, root) { return Array.prototype.slice.call((root || document).querySelectorAll(q)); };
  var vis = function (e) {
    return !!e && e.checkVisibility({ visibilityProperty: true, opacityProperty: true }) &&
      e.getClientRects().length > 0;
  };
  var text = function (e) { return e ? e.innerText.replace(/\s+/g, ' ').trim() : ''; };
  try {
    var button = function (label) {
      var b = list('#controls button').filter(function (b) { return b.textContent === label; })[0];
      if (!b) { throw new Error('no "' + label + '" button in #controls'); }
      return b;
    };
    out.records = list('details.record').map(function (r) {
      // A record inside a collapsed summary row: open the row first, as a reader would.
      list('details').filter(function (d) { return !d.open && d !== r && d.contains(r); })
        .forEach(function (d) { d.querySelector(':scope > summary').click(); });
      var inner = r.querySelector('.pane.inner');
      var msgs = inner ? list('details.msg > summary', inner) : [];
      var leaves = inner ? list('div.leaf', inner) : [];
      var summary = r.querySelector(':scope > summary');
      var shown = function () {
        return {
          open: r.open, inner: vis(inner), messages: msgs.filter(vis).length,
          leaves: leaves.filter(vis).length,
        };
      };
      var rec = {
        id: r.id,
        dir: r.classList.contains('c2s') ? 'c2s' : (r.classList.contains('s2c') ? 's2c' : ''),
        summary_visible: vis(summary),
        protected: !!inner,
        initially_open: r.open,
      };
      // Collapse the record with a click on its summary, then expand it with another.
      if (r.open) { summary.click(); }
      rec.before = shown();
      summary.click();
      rec.after = shown();
      rec.messages = msgs.map(function (s) { return text(s.querySelector('.fname')); });
      rec.inner_leaves = leaves.length;
      return rec;
    });
    button('Collapse all').click();
    out.open_after_collapse = list('details[open]').length;
    button('Expand all').click();
    out.closed_after_expand = list('details:not([open])').length;
    out.leaves = list('div.leaf').map(function (l) {
      var rec = l.closest('details.record');
      return {
        record: Number(l.dataset.record), space: l.dataset.space || '',
        off: Number(l.dataset.off), len: Number(l.dataset.len),
        in_record: rec ? rec.id : '',
        name: text(l.querySelector('.fname')), hex: text(l.querySelector('code.hex')),
        visible: vis(l) && vis(l.querySelector('code.hex')),
      };
    });
    // ClientHelloInner beside an ECH record: fields shown (`.xleaf`), not record bytes.
    out.inner_hellos = list('.pane.innerhello').map(function (h) {
      var rec = h.closest('details.record');
      var x = list('.xleaf', h);
      return {
        record: rec ? rec.id : '', visible: vis(h), text: text(h), xleaves: x.length,
        xleaves_visible: x.filter(vis).length, leaves: list('div.leaf', h).length,
        hex: x.map(function (l) { return text(l.querySelector('code.hex')); }).join(' '),
      };
    });
    out.calc = list('[data-calc]').map(function (c) {
      var rec = c.closest('details.record');
      return { record: rec ? rec.id : '', what: c.dataset.calc, hex: text(c), visible: vis(c) };
    });
  } catch (e) {
    out.errors.push(String(e && e.stack || e));
  }
  out.resources = performance.getEntriesByType('resource').map(function (e) { return e.name; });
  var pre = document.createElement('pre');
  pre.id = 'tls13lab-browser-check';
  pre.textContent = encodeURIComponent(JSON.stringify(out));
  document.body.appendChild(pre);
});
"#;

#[derive(Debug, Deserialize)]
struct Rendered {
    errors: Vec<String>,
    #[serde(default)]
    open_after_collapse: usize,
    #[serde(default)]
    closed_after_expand: usize,
    #[serde(default)]
    records: Vec<RecordView>,
    #[serde(default)]
    leaves: Vec<LeafView>,
    #[serde(default)]
    calc: Vec<CalcView>,
    #[serde(default)]
    inner_hellos: Vec<InnerHelloView>,
    resources: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct RecordView {
    id: String,
    dir: String,
    summary_visible: bool,
    protected: bool,
    initially_open: bool,
    before: Shown,
    after: Shown,
    messages: Vec<String>,
    inner_leaves: usize,
}

#[derive(Debug, Deserialize)]
struct Shown {
    open: bool,
    inner: bool,
    messages: usize,
    leaves: usize,
}

#[derive(Debug, Deserialize)]
struct LeafView {
    record: usize,
    space: String,
    off: usize,
    len: usize,
    in_record: String,
    name: String,
    hex: String,
    visible: bool,
}

#[derive(Debug, Deserialize)]
struct CalcView {
    record: String,
    what: String,
    hex: String,
    visible: bool,
}

#[derive(Debug, Deserialize)]
struct InnerHelloView {
    record: String,
    visible: bool,
    text: String,
    xleaves: usize,
    xleaves_visible: usize,
    leaves: usize,
    hex: String,
}

/// A page as the browser showed it, and what it asked the network for.
struct Opened {
    dom: Rendered,
    /// URLs the page requested (from the net log: requests whose initiator is the page).
    requests: Vec<String>,
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let v = u8::from_str_radix(&s[i + 1..i + 3], 16).expect("percent escape");
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Opens `html` (a page's text) in Chromium with [`CHECK_JS`] added.
fn open(chromium: &Path, name: &str, html: &str) -> Opened {
    let scratch = Scratch::new(name);
    let at = html.rfind("</body>").expect("a </body>");
    let page_text = format!(
        "{}<script>{CHECK_JS}</script>\n{}",
        &html[..at],
        &html[at..]
    );
    let page = scratch.0.join("page.html");
    std::fs::write(&page, page_text).unwrap();
    let (dom, net_log) = run_chromium(chromium, &scratch.0, &page);
    const PRE: &str = "<pre id=\"tls13lab-browser-check\">";
    let start = dom
        .find(PRE)
        .unwrap_or_else(|| panic!("{name}: the check script left no result"))
        + PRE.len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = String::from_utf8(percent_decode(&dom[start..end])).unwrap();
    let rendered: Rendered =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e}: {json}"));
    let requests = page_requests(&net_log);
    Opened {
        dom: rendered,
        requests,
    }
}

/// The URLs of requests in a Chromium net log that the page made: every URL request's start
/// whose initiator is not the browser itself ("not an origin": its own background fetches,
/// which the host resolver rules keep on the machine) or whose network isolation key is a
/// `file://` page's.
fn page_requests(net_log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(net_log).expect("chromium wrote its net log");
    let log: serde_json::Value = serde_json::from_str(&text).expect("the net log is JSON");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .expect("the net log names URL_REQUEST_START_JOB");
    let mut out = Vec::new();
    for e in log["events"].as_array().expect("net log events") {
        if e["type"].as_u64() != Some(start_job) {
            continue;
        }
        let p = &e["params"];
        let Some(url) = p["url"].as_str() else {
            continue;
        };
        let browser_own = p["initiator"].as_str() == Some("not an origin")
            && !p["network_isolation_key"]
                .as_str()
                .unwrap_or("")
                .contains("file://");
        if !browser_own {
            out.push(url.to_string());
        }
    }
    out
}

// ------------------------------------------------------------------------------ the checks

/// What the test knows about a page's records without reading the page.
enum Known {
    /// Each record's wire bytes and, when protected, its TLSInnerPlaintext.
    Records(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    /// The bytes each direction carried (client → server, server → client), e.g. from a capture.
    Streams(Vec<u8>, Vec<u8>),
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let t: String = s.split_whitespace().collect();
    hex::decode(t).ok()
}

/// The AEADs a key of this length and a tag of that length can belong to (RFC 8446 §B.4).
fn aeads(key_len: usize, tag_len: usize) -> Vec<AeadAlg> {
    [
        AeadAlg::Aes128Gcm,
        AeadAlg::Aes256Gcm,
        AeadAlg::ChaCha20Poly1305,
        AeadAlg::Aes128Ccm,
        AeadAlg::Aes128Ccm8,
    ]
    .into_iter()
    .filter(|a| a.key_len() == key_len && a.tag_len() == tag_len)
    .collect()
}

/// Opens a protected record (`wire`, header included) with the key, nonce and additional data
/// the page shows beside it.
fn open_record(wire: &[u8], key: &[u8], nonce: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
    let nonce: [u8; 12] = nonce.try_into().ok()?;
    for tag_len in [16, 8] {
        if wire.len() < 5 + tag_len {
            continue;
        }
        for alg in aeads(key.len(), tag_len) {
            let k = AeadKey::new(alg, key).ok()?;
            let (body, tag) = wire[5..].split_at(wire.len() - 5 - tag_len);
            let mut data = body.to_vec();
            if k.open_detached(&nonce, aad, &mut data, tag).is_ok() {
                return Some(data);
            }
        }
    }
    None
}

/// Every check of one rendered page; returns the problems found (none for a good page).
fn problems(name: &str, o: &Opened, known: &Known) -> Vec<String> {
    let mut p = Vec::new();
    let d = &o.dom;
    p.extend(d.errors.iter().map(|e| format!("script error: {e}")));
    // Nothing fetched.
    for url in &o.requests {
        p.push(format!("requested {url}"));
    }
    for url in &d.resources {
        p.push(format!("resource timeline: {url}"));
    }
    if d.records.is_empty() {
        p.push("no records".into());
    }
    if d.open_after_collapse != 0 {
        p.push(format!(
            "{} blocks still open after \"Collapse all\"",
            d.open_after_collapse
        ));
    }
    if d.closed_after_expand != 0 {
        p.push(format!(
            "{} blocks still closed after \"Expand all\"",
            d.closed_after_expand
        ));
    }
    // Records rec-1, rec-2, … in order; collapsed they hide their decrypted messages, a click
    // on the summary shows them.
    for (i, r) in d.records.iter().enumerate() {
        let id = format!("rec-{}", i + 1);
        if r.id != id {
            p.push(format!("record {} has id {:?}", i + 1, r.id));
        }
        if !r.initially_open {
            p.push(format!("{id}: not open as loaded"));
        }
        if !r.summary_visible
            || r.before.open
            || r.before.inner
            || r.before.messages > 0
            || r.before.leaves > 0
        {
            p.push(format!("{id}: collapsed, it still shows its body"));
        }
        if !r.after.open {
            p.push(format!("{id}: a click on its summary did not open it"));
        }
        if r.protected && !r.after.inner {
            p.push(format!(
                "{id}: expanded, its decrypted plaintext is not shown"
            ));
        }
        if r.after.messages != r.messages.len() {
            p.push(format!(
                "{id}: expanded, {} of its {} messages shown",
                r.after.messages,
                r.messages.len()
            ));
        }
        if r.after.leaves != r.inner_leaves {
            p.push(format!(
                "{id}: expanded, {} of its {} decrypted fields shown",
                r.after.leaves, r.inner_leaves
            ));
        }
        if r.messages.iter().any(|m| m.is_empty()) {
            p.push(format!("{id}: a message without a name"));
        }
    }
    // Leaves: visible, named, inside their record; every byte of a record and space in exactly
    // one of them.
    let mut spaces: BTreeMap<(usize, &str), Vec<&LeafView>> = BTreeMap::new();
    for l in &d.leaves {
        let at = format!("leaf {} {} @{}", l.record, l.space, l.off);
        if l.name.is_empty() {
            p.push(format!("{at}: no name"));
        }
        if !l.visible {
            p.push(format!("{at}: not rendered"));
        }
        if l.in_record != format!("rec-{}", l.record) {
            p.push(format!("{at}: inside {:?}", l.in_record));
        }
        if !matches!(l.space.as_str(), "wire" | "inner") {
            p.push(format!("{at}: space {:?}", l.space));
        }
        spaces
            .entry((l.record, l.space.as_str()))
            .or_default()
            .push(l);
    }
    let mut shown: BTreeMap<(usize, &str), Vec<u8>> = BTreeMap::new();
    for (&(rec, space), leaves) in &spaces {
        let total = leaves.iter().map(|l| l.off + l.len).max().unwrap_or(0);
        let mut bytes = vec![0u8; total];
        let mut count = vec![0u32; total];
        for l in leaves {
            let Some(b) = unhex(&l.hex).filter(|b| b.len() == l.len) else {
                p.push(format!(
                    "leaf {rec} {space} @{}: its hex is not {} bytes",
                    l.off, l.len
                ));
                continue;
            };
            bytes[l.off..l.off + l.len].copy_from_slice(&b);
            for c in &mut count[l.off..l.off + l.len] {
                *c += 1;
            }
        }
        if let Some(i) = count.iter().position(|&c| c != 1) {
            p.push(format!(
                "record {rec} {space}: byte {i} is in {} leaves",
                count[i]
            ));
        }
        shown.insert((rec, space), bytes);
    }
    let n = d.records.len();
    if let Some(&(rec, _)) = shown.keys().find(|(r, _)| *r == 0 || *r > n) {
        p.push(format!("leaves of record {rec}, which is not on the page"));
    }
    let calc = |rec: &str, what: &str| -> Option<Vec<u8>> {
        d.calc
            .iter()
            .find(|c| c.record == rec && c.what == what && c.visible)
            .and_then(|c| unhex(&c.hex))
    };
    let (mut c2s, mut s2c) = (Vec::new(), Vec::new());
    for (i, r) in d.records.iter().enumerate() {
        let k = i + 1;
        let Some(wire) = shown.get(&(k, "wire")) else {
            p.push(format!("rec-{k}: no wire bytes"));
            continue;
        };
        let inner = shown.get(&(k, "inner"));
        if wire.len() < 5 || usize::from(u16::from_be_bytes([wire[3], wire[4]])) != wire.len() - 5 {
            p.push(format!(
                "rec-{k}: its header's length is not its {} bytes",
                wire.len()
            ));
        }
        if r.protected != inner.is_some() {
            p.push(format!(
                "rec-{k}: protected {} but inner leaves {}",
                r.protected,
                inner.is_some()
            ));
        }
        // The key, nonce and additional data beside a protected record open it to the bytes
        // shown as its plaintext.
        if let Some(inner) = inner {
            let id = format!("rec-{k}");
            match (calc(&id, "key"), calc(&id, "nonce"), calc(&id, "aad")) {
                (Some(key), Some(nonce), Some(aad)) => {
                    if aad != wire[..5.min(wire.len())] {
                        p.push(format!("{id}: the additional data is not the header"));
                    }
                    match open_record(wire, &key, &nonce, &aad) {
                        Some(plain) if &plain == inner => {}
                        Some(_) => p.push(format!("{id}: decrypts to other bytes than shown")),
                        None => p.push(format!(
                            "{id}: the key and nonce shown do not open the record"
                        )),
                    }
                }
                _ => p.push(format!("{id}: no key, nonce or additional data shown")),
            }
        }
        match r.dir.as_str() {
            "c2s" => c2s.extend_from_slice(wire),
            "s2c" => s2c.extend_from_slice(wire),
            other => p.push(format!("rec-{k}: direction {other:?}")),
        }
    }
    // Against what the test knows.
    match known {
        Known::Records(recs) => {
            if recs.len() != n {
                p.push(format!("{n} records on the page, {} known", recs.len()));
            }
            for (i, (wire, inner)) in recs.iter().enumerate() {
                let k = i + 1;
                if shown.get(&(k, "wire")) != Some(wire) {
                    p.push(format!(
                        "rec-{k}: the wire bytes shown are not the record's"
                    ));
                }
                if shown.get(&(k, "inner")) != inner.as_ref() {
                    p.push(format!(
                        "rec-{k}: the decrypted bytes shown are not the record's"
                    ));
                }
            }
        }
        Known::Streams(a, b) => {
            if &c2s != a {
                p.push("the client's records are not what it sent".into());
            }
            if &s2c != b {
                p.push("the server's records are not what it sent".into());
            }
        }
    }
    if p.is_empty() && d.leaves.len() < 50 {
        p.push(format!("{name}: only {} leaves", d.leaves.len()));
    }
    p
}

fn assert_good(name: &str, o: &Opened, known: &Known) {
    let p = problems(name, o, known);
    assert!(p.is_empty(), "{name} in Chromium:\n  {}", p.join("\n  "));
}

// ------------------------------------------------------------------------------ the pages

/// RFC 8448 §3's records from the RFC's own bytes: wire, and TLSInnerPlaintext (no padding).
fn rfc8448_3_records() -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    lab::rfc8448::Section::new(3)
        .unwrap()
        .records()
        .into_iter()
        .map(|r| (r.wire.clone(), r.inner_plaintext()))
        .collect()
}

/// Every page docs/illustrated/ holds (written by `tls13lab keys … --html`, see
/// `illustrated_pages_match_and_annotate_every_byte` in tests/instruments.rs), each with its
/// connection made again here.
const PAGES: [&str; 5] = [
    "rfc8448-3.html",
    "hybrid-hrr.html",
    "resumed-0rtt.html",
    "ech.html",
    "mldsa44.html",
];

/// What the test knows about a committed page without reading it: its records, and for ECH the
/// ClientHelloInner each outer hello sealed with the server_name it names.
struct KnownPage {
    records: Known,
    inner_hellos: Vec<Vec<u8>>,
    inner_snis: Vec<String>,
}

/// A committed page's connection, by file name: RFC 8448's own records for the §3 page; for the
/// others the same in-memory run `tls13lab keys` makes (its flags beside each), its records
/// as the client's record layer reported them (events, not the page renderer). `None` for a
/// page the test does not know.
fn known(file: &str) -> Option<KnownPage> {
    use lab::explain::{Connection, InMemory};
    use tls13lab::events::Event;
    use tls13lab::messages::NamedGroup;
    let demo = || InMemory::demo(1).unwrap();
    let run = match file {
        "rfc8448-3.html" => {
            return Some(KnownPage {
                records: Known::Records(rfc8448_3_records()),
                inner_hellos: Vec::new(),
                inner_snis: Vec::new(),
            })
        }
        // --groups X25519MLKEM768 --hrr
        "hybrid-hrr.html" => InMemory {
            hello_retry: true,
            ..demo().with_groups(&[NamedGroup::X25519MLKEM768])
        },
        // --connection 0rtt
        "resumed-0rtt.html" => InMemory {
            connection: Connection::ZeroRtt,
            ..demo()
        },
        // --ech
        "ech.html" => InMemory {
            ech: true,
            ..demo()
        },
        // --chain mldsa44,mldsa44
        "mldsa44.html" => demo()
            .with_chain(&[lab::certgen::KeyAlg::MlDsa44, lab::certgen::KeyAlg::MlDsa44])
            .unwrap(),
        _ => return None,
    };
    let events = lab::explain::in_memory(&run, None).unwrap().0;
    let mut inner_hellos = Vec::new();
    let mut inner_snis = Vec::new();
    for e in &events {
        match e {
            Event::InnerClientHello(h) => inner_hellos.push(h.bytes.clone()),
            Event::EchOffer(o) => inner_snis.extend(o.inner_sni.clone()),
            _ => {}
        }
    }
    Some(KnownPage {
        records: Known::Records(lab::illustrate::record_bytes(&events).unwrap()),
        inner_hellos,
        inner_snis,
    })
}

/// The ClientHelloInner panes of an ECH page (none on the others): rendered, their fields
/// `.xleaf`s (no `.leaf`: not record bytes), all shown once expanded, their hex the inner
/// hellos the client sealed, the inner server_name in words.
fn inner_hello_problems(o: &Opened, k: &KnownPage) -> Vec<String> {
    let mut p = Vec::new();
    let panes = &o.dom.inner_hellos;
    if panes.len() != k.inner_hellos.len() {
        p.push(format!(
            "{} ClientHelloInner panes, {} inner hellos sent",
            panes.len(),
            k.inner_hellos.len()
        ));
    }
    for (i, (h, want)) in panes.iter().zip(&k.inner_hellos).enumerate() {
        let at = format!("ClientHelloInner {} (in {:?})", i + 1, h.record);
        if !h.record.starts_with("rec-") {
            p.push(format!("{at}: not inside a record"));
        }
        if !h.visible || h.xleaves == 0 || h.xleaves_visible != h.xleaves {
            p.push(format!(
                "{at}: {} of its {} fields rendered (pane visible: {})",
                h.xleaves_visible, h.xleaves, h.visible
            ));
        }
        if h.leaves != 0 {
            p.push(format!("{at}: {} record-byte leaves inside", h.leaves));
        }
        if unhex(&h.hex).as_ref() != Some(want) {
            p.push(format!("{at}: its fields' hex is not the inner hello sent"));
        }
    }
    for sni in &k.inner_snis {
        if !panes.iter().any(|h| h.text.contains(sni.as_str())) {
            p.push(format!("the inner server_name {sni:?} is not shown"));
        }
    }
    p
}

/// Every page in docs/illustrated/ in the browser, each against its connection's records (a
/// page the test does not know fails: add its connection to [`known`] and [`PAGES`]), and the
/// §3 page's first handshake record against RFC 8448's key.
#[test]
fn illustrated_pages_in_chromium() {
    let mut files: Vec<String> = std::fs::read_dir(DOCS)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".html"))
        .collect();
    files.sort();
    let mut expected: Vec<String> = PAGES.iter().map(|f| f.to_string()).collect();
    expected.sort();
    assert_eq!(
        files, expected,
        "docs/illustrated/ holds other pages than the browser test knows: add each new page's \
         connection to known() and PAGES in cli/tests/browser.rs"
    );
    // The list holds without a browser too.
    let Some(chromium) = chromium() else { return };
    for file in &files {
        let known = known(file).unwrap_or_else(|| panic!("{file}: no known connection"));
        let html = std::fs::read_to_string(Path::new(DOCS).join(file)).unwrap();
        let stem = file.trim_end_matches(".html");
        let o = open(&chromium, stem, &html);
        let mut p = problems(file, &o, &known.records);
        p.extend(inner_hello_problems(&o, &known));
        assert!(p.is_empty(), "{file} in Chromium:\n  {}", p.join("\n  "));
        if file == "ech.html" {
            assert!(!known.inner_hellos.is_empty() && !known.inner_snis.is_empty());
        }
        if file == "rfc8448-3.html" {
            let d = &o.dom;
            // The first protected record that carries handshake messages: the server's
            // EncryptedExtensions to Finished, under server_handshake_traffic_key.
            let first = d
                .records
                .iter()
                .find(|r| r.protected && !r.messages.is_empty())
                .expect("a protected handshake record");
            assert_eq!(first.id, "rec-3");
            assert_eq!(
                first.messages,
                [
                    "EncryptedExtensions",
                    "Certificate",
                    "CertificateVerify",
                    "Finished"
                ]
            );
            // Collapsed, none of its fields is rendered; expanded, every one.
            assert!(first.inner_leaves > 20, "{first:?}");
            assert_eq!(
                (first.before.leaves, first.after.leaves),
                (0, first.inner_leaves)
            );
            let key = d
                .calc
                .iter()
                .find(|c| c.record == first.id && c.what == "key")
                .expect("its key");
            assert!(key.visible);
            assert_eq!(
                unhex(&key.hex).unwrap(),
                hex::decode("3fce516009c21727d0f2e4e86ee403bc").unwrap()
            );
        }
    }
}

/// A fresh `tls13lab demo --html` page in the browser, its wire bytes against a capture of the
/// same run (`--pcap`).
#[test]
fn demo_page_in_chromium() {
    let Some(chromium) = chromium() else { return };
    let scratch = Scratch::new("demo");
    let (page, pcap) = (scratch.0.join("demo.html"), scratch.0.join("demo.pcapng"));
    let out = Command::new(BIN)
        .args(["demo", "--once", "--html"])
        .arg(&page)
        .arg("--pcap")
        .arg(&pcap)
        .env_remove("SSLKEYLOGFILE")
        .output()
        .expect("run tls13lab");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let capture = lab::pcap::read_capture(&std::fs::read(&pcap).unwrap()).unwrap();
    assert_eq!(capture.connections.len(), 1);
    let c = &capture.connections[0];
    let known = Known::Streams(c.c2s.bytes.clone(), c.s2c.bytes.clone());
    let html = std::fs::read_to_string(&page).unwrap();
    let o = open(&chromium, "demo-page", &html);
    assert_good("demo --html", &o, &known);
    // The demo's request is there, decrypted, under application traffic keys.
    assert!(o.dom.leaves.iter().any(|l| l.space == "inner"));
    assert!(o
        .dom
        .records
        .iter()
        .any(|r| r.protected && r.messages.is_empty()));
}

/// The checks fail where they should: a page copy that fetches an image from 127.0.0.1 (port
/// 1: nothing listens, and Chromium refuses the port anyway), lost one leaf, hides one record's
/// decrypted pane and shows a wrong key is caught on each count.
#[test]
fn browser_checks_catch_a_broken_page() {
    let Some(chromium) = chromium() else { return };
    let html = std::fs::read_to_string(Path::new(DOCS).join("rfc8448-3.html")).unwrap();
    // The image.
    let broken = html.replacen(
        "<h1>",
        "<img src=\"http://127.0.0.1:1/tls13lab-control.png\" alt=\"\"><h1>",
        1,
    );
    // One leaf of record 1 (ClientHello) gone: its bytes are in no leaf.
    let leaf = "<div class=\"leaf\" data-record=\"1\" data-space=\"wire\" data-off=\"1\"";
    let at = broken.find(leaf).expect("record 1's version leaf");
    let end = at + broken[at..].find("</div>").unwrap() + "</div>".len();
    let broken = format!("{}{}", &broken[..at], &broken[end..]);
    // Record 5's decrypted pane never shows.
    let broken = broken.replacen(
        "</style>",
        "#rec-5 .pane.inner { display: none; }\n</style>",
        1,
    );
    // The first key shown is wrong by one bit.
    let key = "3f ce 51 60 09 c2 17 27 d0 f2 e4 e8 6e e4 03 bc";
    assert!(broken.contains(key));
    let broken = broken.replacen(key, "3e ce 51 60 09 c2 17 27 d0 f2 e4 e8 6e e4 03 bc", 1);
    let o = open(&chromium, "control", &broken);
    let p = problems("control", &o, &Known::Records(rfc8448_3_records()));
    let has = |s: &str| p.iter().any(|x| x.contains(s));
    assert!(
        o.requests
            .iter()
            .any(|u| u == "http://127.0.0.1:1/tls13lab-control.png"),
        "the net log missed the image: {p:?}"
    );
    assert!(
        o.dom
            .resources
            .iter()
            .any(|u| u.contains("127.0.0.1:1/tls13lab-control.png")),
        "the resource timeline missed the image: {p:?}"
    );
    assert!(
        has("record 1 wire: byte 1 is in 0 leaves"),
        "missing leaf: {p:?}"
    );
    assert!(
        has("rec-3: the key and nonce shown do not open the record"),
        "wrong key: {p:?}"
    );
    assert!(has("rec-1: the wire bytes shown are not the record's"));
    assert!(
        has("rec-5: expanded, its decrypted plaintext is not shown"),
        "hidden pane: {p:?}"
    );
    assert!(has("rec-5: expanded, 0 of its"), "hidden fields: {p:?}");
    assert!(has("leaf 5 inner @0: not rendered"), "hidden leaf: {p:?}");
}

/// The ClientHelloInner checks fail where they should: an ECH page copy whose inner hello shows
/// another msg_type byte and another server_name in words.
#[test]
fn browser_checks_catch_a_broken_inner_hello() {
    let Some(chromium) = chromium() else { return };
    let html = std::fs::read_to_string(Path::new(DOCS).join("ech.html")).unwrap();
    let known = known("ech.html").unwrap();
    assert_eq!(known.inner_snis, ["localhost"]);
    let at = html
        .find("<div class=\"pane innerhello\">")
        .expect("an inner hello");
    let (head, pane) = html.split_at(at);
    let msg_type = "<code class=\"hex\">01</code>";
    assert!(pane.contains(msg_type) && pane.contains("&quot;localhost&quot;"));
    let pane = pane
        .replacen(msg_type, "<code class=\"hex\">02</code>", 1)
        .replace("&quot;localhost&quot;", "&quot;elsewhere&quot;");
    let o = open(&chromium, "control-ech", &format!("{head}{pane}"));
    let p = inner_hello_problems(&o, &known);
    let has = |s: &str| p.iter().any(|x| x.contains(s));
    assert!(
        has("ClientHelloInner 1 (in \"rec-1\"): its fields' hex is not the inner hello sent"),
        "{p:?}"
    );
    assert!(
        has("the inner server_name \"localhost\" is not shown"),
        "{p:?}"
    );
    assert_eq!(p.len(), 2, "{p:?}");
}

/// Times an issue 27 "large connection" page in Chromium (not a check: speed figures go in
/// docs/performance.md, "The illustrated connection: a large page"): an ML-DSA-87 root → leaf
/// chain and 1 MiB of application data from the server, as in `lab::illustrate`'s
/// `a_large_connection_page_covers_every_byte_and_collapses_its_data`, against the small §3
/// page; three runs each, a fresh browser and profile every time, the page's clock (navigation
/// timing; a forced layout of the whole document in the load handler) and the wall time of
/// the whole `chromium --headless --dump-dom`; then the large page once with every check of
/// [`illustrated_pages_in_chromium`] against its records. Run:
/// `cargo test --release --test browser large_page -- --ignored --nocapture`.
#[test]
#[ignore = "timing, not a check"]
fn large_page_load_times() {
    use lab::certgen::KeyAlg;
    use lab::explain::InMemory;
    use std::sync::Arc;
    let Some(chromium) = chromium() else { return };
    let run = InMemory::demo(1)
        .unwrap()
        .with_chain(&[KeyAlg::MlDsa87, KeyAlg::MlDsa87])
        .unwrap();
    let big = vec![b'x'; 1 << 20];
    let p = lab::demo::request_response(
        Arc::new(run.client),
        Arc::new(run.server),
        1,
        lab::demo::NOW_MS,
        b"GET / HTTP/1.0\r\n\r\n",
        &big,
        Default::default(),
    )
    .unwrap();
    let large = lab::illustrate::page("large", &p.client_events).unwrap();
    let records = lab::illustrate::record_bytes(&p.client_events).unwrap();
    let wire: usize = records.iter().map(|r| r.0.len()).sum();
    println!(
        "large page: {} records, {wire} bytes on the wire, page {} bytes",
        records.len(),
        large.len()
    );
    let small = std::fs::read_to_string(Path::new(DOCS).join("rfc8448-3.html")).unwrap();
    const TIME_JS: &str = r#"
window.addEventListener('load', function () {
  var nav = performance.getEntriesByType('navigation')[0];
  var paint = performance.getEntriesByType('paint').filter(function (e) {
    return e.name === 'first-contentful-paint';
  })[0];
  var t0 = performance.now();
  var height = document.body.offsetHeight;
  var out = {
    dcl: nav.domContentLoadedEventEnd, load_start: nav.loadEventStart,
    layout_done: performance.now(), layout: performance.now() - t0, height: height,
    fcp: paint ? paint.startTime : null,
    details: document.querySelectorAll('details').length,
    open: document.querySelectorAll('details[open]').length,
  };
  var pre = document.createElement('pre');
  pre.id = 'tls13lab-timing';
  pre.textContent = encodeURIComponent(JSON.stringify(out));
  document.body.appendChild(pre);
});
"#;
    for (name, html) in [("small (rfc8448-3.html)", &small), ("large", &large)] {
        let at = html.rfind("</body>").unwrap();
        let text = format!("{}<script>{TIME_JS}</script>\n{}", &html[..at], &html[at..]);
        for i in 1..=3 {
            let scratch = Scratch::new(&format!("timing-{i}"));
            let page = scratch.0.join("page.html");
            std::fs::write(&page, &text).unwrap();
            let started = Instant::now();
            let (dom, _) = run_chromium_timed(&chromium, &scratch.0, &page, false);
            let wall = started.elapsed();
            const PRE: &str = "<pre id=\"tls13lab-timing\">";
            let start = dom.find(PRE).expect("the timing script ran") + PRE.len();
            let end = start + dom[start..].find("</pre>").unwrap();
            let json = String::from_utf8(percent_decode(&dom[start..end])).unwrap();
            println!(
                "{name} run {i}: chromium --dump-dom {:.0} ms wall; page clock (ms): {json}",
                wall.as_secs_f64() * 1e3
            );
        }
    }
    let started = Instant::now();
    let o = open(&chromium, "large", &large);
    println!(
        "large page, every check: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_good("large", &o, &Known::Records(records));
}

// ------------------------------------------------------- browsers as TLS peers (issue 28)
//
// Headless Chromium and Firefox ESR open https://127.0.0.1:PORT/ on `tls13lab server` and get
// its page: each completes a TLS 1.3 handshake with what it sends by default (X25519MLKEM768,
// GREASE, GREASE ECH, compress_certificate, ALPS...), and the server writes each connection's
// JSON ledger (kept in CARGO_TARGET_TMPDIR/browser-peers/). The server speaks ALPN http/1.1
// only, so neither browser gets h2. Each browser trusts the test certificate the way it allows
// for tests: Chromium by the SHA-256 of the leaf's SubjectPublicKeyInfo
// (--ignore-certificate-errors-spki-list, which only applies with --user-data-dir), Firefox by
// the test CA imported with `certutil` into a fresh profile's cert9.db (trust "C,,": a CA for
// TLS servers).

/// `program` on the PATH (`.ci/run` installs Debian's `package`); `None` with a NOTICE
/// outside CI, a failure in CI.
fn on_path(program: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI must run the browser tests: {program} is not installed (.ci/run installs {package})"
        );
        eprintln!("NOTICE: {program} is not installed (apt-get install -y {package}): skipping");
    }
    found
}

/// A test CA and a server certificate it signed for localhost and 127.0.0.1 (ECDSA P-256,
/// rcgen), written as `ca.pem`, `cert.pem` and `key.pem` into `dir`. Returns the base64 SHA-256
/// of the leaf's SubjectPublicKeyInfo (what Chromium's --ignore-certificate-errors-spki-list
/// takes).
fn test_pki(dir: &Path) -> String {
    use rcgen::PublicKeyData as _;
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "tls13lab browser test CA");
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = p.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(p, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let mut p =
        rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf = p.signed_by(&leaf_key, &issuer).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("cert.pem"), leaf.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), leaf_key.serialize_pem()).unwrap();
    let spki = leaf_key.subject_public_key_info();
    let digest = tls13lab::crypto::hash::HashAlg::Sha256.hash(&spki);
    tls13lab::crypto::cert::base64_encode(digest.as_ref())
}

/// `tls13lab server` on 127.0.0.1:0 with the certificate of [`test_pki`], ALPN http/1.1 only,
/// one JSON ledger per connection in `DIR/json`; killed by PID and reaped on drop.
struct PeerServer {
    child: std::process::Child,
    port: u16,
    json: PathBuf,
}

impl PeerServer {
    fn start(dir: &Path) -> PeerServer {
        let json = dir.join("json");
        let out = dir.join("server.out");
        let child = Command::new(BIN)
            .args(["server", "--listen", "127.0.0.1:0", "--alpn", "http/1.1"])
            .arg("--cert")
            .arg(dir.join("cert.pem"))
            .arg("--key")
            .arg(dir.join("key.pem"))
            .arg("--json-dir")
            .arg(&json)
            .env_remove("SSLKEYLOGFILE")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tls13lab server");
        let mut s = PeerServer {
            child,
            port: 0,
            json,
        };
        let until = Instant::now() + Duration::from_secs(20);
        while s.port == 0 {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if let Some(addr) = text
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("listening on "))
            {
                s.port = addr.rsplit_once(':').unwrap().1.trim().parse().unwrap();
            }
            assert!(Instant::now() < until, "the server printed no address");
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.port)
    }

    /// Keep every connection's JSON ledger in CARGO_TARGET_TMPDIR/browser-peers/NAME/ (replaced
    /// on each run), for a reader to open after the scratch directory is gone.
    fn keep(&self, name: &str) {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("browser-peers")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(&self.json)
            .into_iter()
            .flatten()
            .flatten()
        {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
    }

    /// The JSON ledgers of the connections that completed a handshake and carried a request,
    /// after waiting (up to 20 s) for at least one.
    fn served(&self) -> Vec<serde_json::Value> {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&self.json)
                .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
                .unwrap_or_default();
            files.sort();
            let served: Vec<serde_json::Value> = files
                .iter()
                .filter_map(|f| serde_json::from_str(&std::fs::read_to_string(f).ok()?).ok())
                .filter(|v: &serde_json::Value| {
                    !v["negotiated"].is_null()
                        && v["events"]
                            .as_array()
                            .is_some_and(|e| e.iter().any(|x| x["event"] == "app_data"))
                })
                .collect();
            if !served.is_empty() || Instant::now() > until {
                return served;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        let _ = self.child.kill(); // this child's PID only
        let _ = self.child.wait();
    }
}

/// What a served connection's ledger must say: TLS 1.3, ALPN http/1.1 (never h2), no error,
/// and the page sent back (application data records from the server after the handshake).
fn assert_served(browser: &str, v: &serde_json::Value) {
    let n = &v["negotiated"];
    assert_eq!(n["version"], "TLSv1.3", "{browser}: {n}");
    assert_eq!(n["alpn"], "http/1.1", "{browser}: {n}");
    assert!(v["error"].is_null(), "{browser}: {}", v["error"]);
    let hello = &v["messages"][0];
    assert_eq!(hello["type"], "client_hello", "{browser}");
    let page = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["direction"] == "server_to_client" && r["inner_type"] == "application_data");
    assert!(page, "{browser}: no page went back: {}", v["records"]);
}

/// Headless Chromium gets the page of `tls13lab server`, over an X25519MLKEM768 handshake.
#[test]
fn chromium_gets_the_servers_page() {
    let Some(chromium) = on_path("chromium", "chromium") else {
        return;
    };
    let scratch = Scratch::new("peer-chromium");
    let spki = test_pki(&scratch.0);
    let server = PeerServer::start(&scratch.0);
    let dom = scratch.0.join("dom.html");
    let err = scratch.0.join("chromium.err");
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        // Only 127.0.0.1: any other host fails to resolve.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ])
    .arg(format!("--ignore-certificate-errors-spki-list={spki}"))
    .arg(format!(
        "--user-data-dir={}",
        scratch.0.join("profile").display()
    ))
    .arg("--dump-dom")
    .arg(server.url())
    .env("HOME", &scratch.0)
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(&dom).unwrap())
    .stderr(std::fs::File::create(&err).unwrap())
    .process_group(0);
    let status = run_group(cmd.spawn().expect("start chromium"));
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "chromium: {status:?} {stderr}"
    );
    let served = server.served();
    server.keep("chromium");
    drop(server);
    let page = std::fs::read_to_string(&dom).unwrap();
    // The page the server wrote about this very connection.
    assert!(page.contains("tls13lab server: "), "{page}");
    assert!(page.contains("X25519MLKEM768"), "{page}");
    assert!(page.contains("GET / HTTP/1.1"), "{page}");
    assert!(!served.is_empty(), "no served connection: {stderr}");
    for v in &served {
        assert_served("chromium", v);
        assert_eq!(
            v["negotiated"]["group"], "X25519MLKEM768",
            "{}",
            v["negotiated"]
        );
    }
}

/// Headless Firefox ESR gets the page of `tls13lab server`, trusting the test CA from its
/// profile's certificate database.
#[test]
fn firefox_gets_the_servers_page() {
    let Some(firefox) = on_path("firefox-esr", "firefox-esr") else {
        return;
    };
    let Some(certutil) = on_path("certutil", "libnss3-tools") else {
        return;
    };
    let scratch = Scratch::new("peer-firefox");
    test_pki(&scratch.0);
    let profile = scratch.0.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let db = format!("sql:{}", profile.display());
    for args in [
        vec!["-N", "-d", &db, "--empty-password"],
        vec![
            "-A",
            "-d",
            &db,
            "-n",
            "tls13lab test CA",
            "-t",
            "C,,",
            "-i",
            scratch.0.join("ca.pem").to_str().unwrap(),
        ],
    ] {
        let o = Command::new(&certutil).args(&args).output().unwrap();
        assert!(
            o.status.success(),
            "certutil {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // Nothing but the page: no first-run pages, updates, telemetry or captive-portal probes.
    std::fs::write(
        profile.join("user.js"),
        [
            "browser.shell.checkDefaultBrowser",
            "app.update.enabled",
            "datareporting.policy.dataSubmissionEnabled",
            "toolkit.telemetry.reportingpolicy.firstRun",
            "network.captive-portal-service.enabled",
            "network.connectivity-service.enabled",
            "browser.safebrowsing.malware.enabled",
            "browser.safebrowsing.phishing.enabled",
            "extensions.update.enabled",
        ]
        .iter()
        .map(|p| format!("user_pref(\"{p}\", false);\n"))
        // Only 127.0.0.1 (an IP literal, which needs no resolver): no name resolves, so no
        // background service reaches anything.
        .chain(std::iter::once(
            "user_pref(\"network.dns.disabled\", true);\n".to_string(),
        ))
        .collect::<String>(),
    )
    .unwrap();
    let server = PeerServer::start(&scratch.0);
    let shot = scratch.0.join("page.png");
    let err = scratch.0.join("firefox.err");
    let mut cmd = Command::new(firefox);
    cmd.args(["--headless", "--no-remote", "--profile"])
        .arg(&profile)
        .arg("--screenshot")
        .arg(&shot)
        .arg(server.url())
        .env("HOME", &scratch.0)
        .env("MOZ_CRASHREPORTER_DISABLE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0);
    let status = run_group(cmd.spawn().expect("start firefox"));
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "firefox: {status:?} {stderr}"
    );
    let served = server.served();
    server.keep("firefox");
    drop(server);
    assert!(
        std::fs::metadata(&shot).is_ok_and(|m| m.len() > 0),
        "no screenshot: {stderr}"
    );
    assert!(!served.is_empty(), "no served connection: {stderr}");
    for v in &served {
        assert_served("firefox", v);
    }
    // Firefox offers X25519MLKEM768 first, with a share: the server's first choice too.
    assert!(
        served
            .iter()
            .any(|v| v["negotiated"]["group"] == "X25519MLKEM768"),
        "{served:?}"
    );
}
