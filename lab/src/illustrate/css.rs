//! The page's inline style and script: a light and a dark scheme, print rules, and the only
//! JavaScript (buttons to expand or collapse every block, and everything opened for printing).
//! The page reads the same without the script: every block is `<details open>`.

/// The style sheet, inlined in `<style>`.
pub const CSS: &str = r#"
:root { color-scheme: light dark;
  --bg: #ffffff; --fg: #111827; --muted: #6b7280; --line: #d1d5db; --panel: #f9fafb;
  --c2s: #eef2ff; --s2c: #f0fdf4; --hex: #1f2937; --leaf: #ffffff; --accent: #1d4ed8;
  --hl: #fde68a; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0f1115; --fg: #e5e7eb; --muted: #9ca3af; --line: #374151; --panel: #161a21;
    --c2s: #1a2040; --s2c: #142a1c; --hex: #d1d5db; --leaf: #1b1f27; --accent: #93c5fd;
    --hl: #854d0e; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 1rem 1.5rem 4rem; background: var(--bg);
  color: var(--fg); font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
a { color: var(--accent); }
a:focus, summary:focus { outline: 2px solid var(--accent); outline-offset: 2px; }
h1 { font-size: 1.6rem; margin: .5rem 0; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid var(--line); }
h3, h4 { margin: .6rem 0 .3rem; font-size: 1rem; }
.muted, .flen, .clip { color: var(--muted); font-size: .9em; }
.cite { font-size: .85em; margin-left: .4em; }
nav ul { padding-left: 1.2rem; }
.ladder { overflow-x: auto; background: #ffffff; border: 1px solid var(--line); border-radius: 6px; }
.ladder svg { display: block; max-width: 100%; height: auto; }
details { margin: .2rem 0 .2rem .6rem; }
summary { cursor: pointer; }
details.record { margin: .8rem 0; border: 1px solid var(--line); border-radius: 6px; padding: .3rem .6rem; }
details.record.c2s { background: var(--c2s); }
details.record.s2c { background: var(--s2c); }
details.record > summary { font-weight: 600; }
details.record:target, details.ks:target { outline: 3px solid var(--hl); }
.rec-body { display: grid; grid-template-columns: repeat(auto-fit, minmax(330px, 1fr)); gap: .8rem; }
.pane { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .4rem .6rem; min-width: 0; }
.leaf { display: grid; grid-template-columns: minmax(8rem, max-content) 1fr; column-gap: .6rem;
  margin: .15rem 0 .15rem .6rem; padding: .1rem .3rem; background: var(--leaf); border-left: 3px solid var(--line); }
.leaf .fv { grid-column: 2; }
.leaf code.hex { grid-column: 1 / -1; }
.fname { font-weight: 600; }
code.hex, .val { font: 13px/1.35 ui-monospace, "DejaVu Sans Mono", Menlo, monospace; color: var(--hex);
  word-break: break-all; white-space: normal; }
table.calc { border-collapse: collapse; width: 100%; }
table.calc th { text-align: left; vertical-align: top; padding: .15rem .5rem .15rem 0; white-space: nowrap; }
table.calc td { padding: .15rem 0; }
details.more > summary { font-weight: 600; }
.ks dl { margin: .2rem 0 .4rem .6rem; display: grid; grid-template-columns: max-content 1fr; column-gap: .8rem; }
.ks dt { font-weight: 600; }
.ks dd { margin: 0; min-width: 0; }
#controls button { margin-right: .4rem; }
.xleaf { display: grid; grid-template-columns: minmax(8rem, max-content) 1fr; column-gap: .6rem;
  margin: .15rem 0 .15rem .6rem; padding: .1rem .3rem; border-left: 3px dashed var(--line); }
.xleaf .fv { grid-column: 2; }
.xleaf code.hex { grid-column: 1 / -1; }
pre.ech { overflow-x: auto; font-size: 12px; background: var(--panel); padding: .5rem; }
@media print {
  body { max-width: none; font-size: 11px; }
  #controls { display: none; }
  details.record { break-inside: avoid-page; }
  a { color: inherit; text-decoration: none; }
}
"#;

/// The script, inlined at the end of `<body>`: it adds the expand/collapse buttons (so a page
/// read without JavaScript shows no dead controls) and opens every block before printing.
pub const JS: &str = r#"
(function () {
  var all = function (open) {
    document.querySelectorAll('details').forEach(function (d) { d.open = open; });
  };
  var c = document.getElementById('controls');
  if (c) {
    [['Expand all', true], ['Collapse all', false]].forEach(function (b) {
      var e = document.createElement('button');
      e.type = 'button';
      e.textContent = b[0];
      e.addEventListener('click', function () { all(b[1]); });
      c.appendChild(e);
    });
  }
  window.addEventListener('beforeprint', function () { all(true); });
  var show = function () {
    var t = location.hash && document.getElementById(location.hash.slice(1));
    for (var d = t; d; d = d.parentElement) { if (d.tagName === 'DETAILS') d.open = true; }
  };
  window.addEventListener('hashchange', show);
  show();
})();
"#;
