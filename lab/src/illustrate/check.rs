//! Reading a page back without a browser: its leaves (which record, which bytes, what hex they
//! show), whether they cover every byte of every record exactly once, and whether anything in it
//! would be fetched.

use tls13lab::ledger::unhex;

/// One record's bytes as a page must show them: the wire bytes and, for a protected record,
/// its TLSInnerPlaintext (content ‖ type ‖ padding).
pub type RecordBytes = (Vec<u8>, Option<Vec<u8>>);

/// One leaf as the page holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageLeaf {
    /// The record's 1-based index.
    pub record: usize,
    /// `"wire"` or `"inner"`.
    pub space: String,
    /// Offset in that space.
    pub off: usize,
    /// Length.
    pub len: usize,
    /// The bytes its hex shows.
    pub bytes: Vec<u8>,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    let end = tag[at..].find('"')?;
    Some(tag[at..at + end].to_string())
}

/// Every `<div class="leaf" …>` of `html`, in document order, with the bytes of the
/// `<code class="hex">` inside it.
pub fn leaves(html: &str) -> Result<Vec<PageLeaf>, String> {
    const OPEN: &str = "<div class=\"leaf\"";
    const CODE: &str = "<code class=\"hex\">";
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(OPEN) {
        rest = &rest[i..];
        let tag_end = rest.find('>').ok_or("unterminated leaf tag")?;
        let tag = &rest[..tag_end];
        let num = |n: &str| -> Result<usize, String> {
            attr(tag, n)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("leaf without {n}: {tag}"))
        };
        let (record, off, len) = (num("data-record")?, num("data-off")?, num("data-len")?);
        let space = attr(tag, "data-space").ok_or("leaf without data-space")?;
        let body_end = rest.find("</div>").ok_or("unterminated leaf")?;
        let body = &rest[tag_end..body_end];
        let c = body
            .find(CODE)
            .ok_or_else(|| format!("leaf without hex: {tag}"))?
            + CODE.len();
        let e = body[c..].find("</code>").ok_or("unterminated hex")?;
        let text: String = body[c..c + e].split_whitespace().collect();
        let bytes = unhex(&text).ok_or_else(|| format!("not hex in {tag}"))?;
        if bytes.len() != len {
            return Err(format!("{tag}: {} bytes of hex", bytes.len()));
        }
        out.push(PageLeaf {
            record,
            space,
            off,
            len,
            bytes,
        });
        rest = &rest[body_end..];
    }
    Ok(out)
}

/// Checks that the leaves of `html` cover each record's bytes exactly once, with the right hex:
/// `records[i]` is record `i + 1`'s wire bytes and, for a protected record, its
/// TLSInnerPlaintext (content ‖ type ‖ padding). Returns the number of leaves.
pub fn check_coverage(html: &str, records: &[RecordBytes]) -> Result<usize, String> {
    let all = leaves(html)?;
    for (i, (wire, inner)) in records.iter().enumerate() {
        let spaces = [("wire", Some(wire)), ("inner", inner.as_ref())];
        for (space, bytes) in spaces {
            let mut mine: Vec<&PageLeaf> = all
                .iter()
                .filter(|l| l.record == i + 1 && l.space == space)
                .collect();
            let Some(bytes) = bytes else {
                if !mine.is_empty() {
                    return Err(format!(
                        "record {}: {space} leaves but no such bytes",
                        i + 1
                    ));
                }
                continue;
            };
            mine.sort_by_key(|l| l.off);
            let mut at = 0;
            for l in mine {
                if l.off != at {
                    return Err(format!(
                        "record {} {space}: a leaf at {} but the bytes before end at {at}",
                        i + 1,
                        l.off
                    ));
                }
                if bytes.get(l.off..l.off + l.len) != Some(&l.bytes[..]) {
                    return Err(format!(
                        "record {} {space}: the leaf at {} shows other bytes",
                        i + 1,
                        l.off
                    ));
                }
                at += l.len;
            }
            if at != bytes.len() {
                return Err(format!(
                    "record {} {space}: leaves end at {at} of {}",
                    i + 1,
                    bytes.len()
                ));
            }
        }
    }
    if let Some(l) = all
        .iter()
        .find(|l| l.record == 0 || l.record > records.len())
    {
        return Err(format!(
            "a leaf of record {}, which does not exist",
            l.record
        ));
    }
    Ok(all.len())
}

/// What in `html` a browser would fetch: any `src=` attribute, a `<link>` element, an `href` on
/// anything but `<a>`, `url(` or `@import` in the style. Links (`<a href>`) are not fetched.
pub fn fetches(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    let lower = html.to_ascii_lowercase();
    for pat in [" src=", "<link", "@import", "<iframe", "<object", "<embed"] {
        if let Some(i) = lower.find(pat) {
            found.push(snippet(&lower[i..]));
        }
    }
    // `url(#id)` names something on the page (the ladder's arrow heads); anything else loads.
    for (i, _) in lower.match_indices("url(") {
        if !lower[i + 4..]
            .trim_start_matches(['"', '\''])
            .starts_with('#')
        {
            found.push(snippet(&lower[i..]));
        }
    }
    let mut rest = lower.as_str();
    while let Some(i) = rest.find(" href=") {
        let tag_start = rest[..i].rfind('<').unwrap_or(0);
        if !rest[tag_start..].starts_with("<a ") {
            found.push(snippet(&rest[tag_start..]));
        }
        rest = &rest[i + 6..];
    }
    found
}

fn snippet(s: &str) -> String {
    s.chars().take(60).collect()
}
