//! Byte layout of an encoded message: a tree of named spans.
//!
//! Produced by re-encoding a message with [`Writer::with_layout`](super::codec::Writer::with_layout).
//! Spans of one level tile their parent exactly: length prefixes are spans of their own
//! (named "length"), so every byte of a message belongs to exactly one leaf.

use serde::Serialize;

/// A named byte range. `offset` is relative to the start of the encoded handshake message
/// (including its 4-byte header).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Span {
    /// Field name, e.g. "legacy_session_id", "length" or "key_share (51)".
    pub name: String,
    /// Start of the range.
    pub offset: usize,
    /// Length of the range.
    pub len: usize,
    /// Sub-fields; when non-empty they tile this span exactly.
    pub children: Vec<Span>,
}

impl Span {
    /// One past the last byte of the range.
    pub fn end(&self) -> usize {
        self.offset + self.len
    }
}

/// Checks that `spans` tile `0..len` exactly and, recursively, that every span's children tile
/// the span. Returns a description of the first gap or overlap found.
pub fn check_tiling(spans: &[Span], len: usize) -> Result<(), String> {
    check_level(spans, 0, len, "message")
}

fn check_level(spans: &[Span], start: usize, len: usize, parent: &str) -> Result<(), String> {
    let mut at = start;
    for s in spans {
        if s.offset != at {
            return Err(format!(
                "in {parent}: span {:?} starts at {} but the previous one ended at {at}",
                s.name, s.offset
            ));
        }
        if !s.children.is_empty() {
            check_level(&s.children, s.offset, s.len, &s.name)?;
        }
        at = s.end();
    }
    if at != start + len {
        return Err(format!(
            "in {parent}: spans end at {at}, expected {}",
            start + len
        ));
    }
    Ok(())
}

/// The stack of spans opened by nested [`Writer::span`](super::codec::Writer::span) calls.
#[derive(Debug, Default)]
pub(crate) struct SpanRecorder {
    open: Vec<Span>,
    done: Vec<Span>,
}

impl SpanRecorder {
    pub(crate) fn open(&mut self, name: String, offset: usize) {
        self.open.push(Span {
            name,
            offset,
            len: 0,
            children: Vec::new(),
        });
    }

    /// Closes the innermost open span at `end` and attaches it to its parent.
    pub(crate) fn close(&mut self, end: usize) {
        let Some(mut span) = self.open.pop() else {
            return;
        };
        span.len = end - span.offset;
        if span.len == 0 {
            return;
        }
        match self.open.last_mut() {
            Some(parent) => parent.children.push(span),
            None => self.done.push(span),
        }
    }

    pub(crate) fn finish(self) -> Vec<Span> {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(name: &str, offset: usize, len: usize) -> Span {
        Span {
            name: name.into(),
            offset,
            len,
            children: vec![],
        }
    }

    #[test]
    fn tiling_detects_gaps_and_short_ends() {
        let ok = [leaf("a", 0, 2), leaf("b", 2, 3)];
        assert!(check_tiling(&ok, 5).is_ok());
        assert!(check_tiling(&ok, 6).is_err());
        let gap = [leaf("a", 0, 2), leaf("b", 3, 2)];
        assert!(check_tiling(&gap, 5).is_err());
        let mut parent = leaf("p", 0, 4);
        parent.children = vec![leaf("x", 0, 3)];
        assert!(check_tiling(&[parent], 4).is_err());
    }
}
