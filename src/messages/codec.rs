//! Bounded reading and length-back-filling writing of the TLS presentation language
//! (RFC 8446 §3).
//!
//! Every length prefix opens a sub-[`Reader`] over exactly that many bytes; whoever opens one
//! must read it to its end ([`Reader::finish`]), so a field can never silently run into its
//! neighbour. The [`Writer`] writes a vector's body first and back-fills its length, so sizes are
//! never computed twice, and can record a [`Span`] tree describing every byte it wrote.

use super::enums::{AlertDescription, ExtensionType};
use super::layout::{Span, SpanRecorder};
use core::fmt;

/// Why a message failed to decode. Every variant is a `decode_error` alert except
/// [`DecodeError::DuplicateExtension`], which RFC 8446 §4.2 makes `illegal_parameter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ended inside `what` (or a length prefix pointed past the end).
    Truncated {
        /// The field being read.
        what: &'static str,
    },
    /// Bytes were left over after `what` was complete.
    Trailing {
        /// The structure that should have ended.
        what: &'static str,
    },
    /// A vector whose RFC minimum length is above zero was empty.
    Empty {
        /// The vector.
        what: &'static str,
    },
    /// A vector of fixed-size items had a length that is not a multiple of the item size.
    LengthNotMultiple {
        /// The vector.
        what: &'static str,
    },
    /// A value is not allowed here (e.g. a non-empty vector shorter than its RFC minimum).
    Invalid {
        /// The field.
        what: &'static str,
    },
    /// The same extension type appeared twice in one block (RFC 8446 §4.2).
    DuplicateExtension(ExtensionType),
    /// A vector is longer than its RFC maximum (e.g. `legacy_session_id<0..32>`).
    TooLarge {
        /// The vector.
        what: &'static str,
    },
}

impl DecodeError {
    /// The alert to send for this error (RFC 8446 §6.2).
    pub fn alert(&self) -> AlertDescription {
        match self {
            DecodeError::DuplicateExtension(_) => AlertDescription::IllegalParameter,
            _ => AlertDescription::DecodeError,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated { what } => write!(f, "truncated {what}"),
            DecodeError::Trailing { what } => write!(f, "trailing bytes after {what}"),
            DecodeError::Empty { what } => write!(f, "empty {what}"),
            DecodeError::LengthNotMultiple { what } => {
                write!(f, "{what}: length is not a multiple of the item size")
            }
            DecodeError::Invalid { what } => write!(f, "invalid {what}"),
            DecodeError::DuplicateExtension(t) => write!(f, "duplicate extension {t}"),
            DecodeError::TooLarge { what } => write!(f, "{what} is too large"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A bounded reader over a byte slice. It never reads past its slice, and remembers the slice's
/// absolute offset in the outermost input so errors and spans can point at real positions.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    /// A reader over all of `buf`, at absolute offset 0.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            base: 0,
        }
    }

    /// Absolute offset of the next byte to be read.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when everything has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(DecodeError::Truncated { what })?;
        let out = self
            .buf
            .get(self.pos..end)
            .ok_or(DecodeError::Truncated { what })?;
        self.pos = end;
        Ok(out)
    }

    /// A fixed-size array, e.g. `opaque Random[32]`.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N, what)?);
        Ok(out)
    }

    /// A big-endian unsigned integer of `width` bytes (at most 4).
    fn uint(&mut self, width: usize, what: &'static str) -> Result<u32, DecodeError> {
        Ok(self
            .bytes(width, what)?
            .iter()
            .fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
    }

    /// `uint8`.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        let [b] = self.array::<1>(what)?;
        Ok(b)
    }

    /// `uint16`.
    pub fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    /// `uint24`.
    pub fn u24(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        self.uint(3, what)
    }

    /// `uint32`.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    /// Reads a `width`-byte length and returns a reader over exactly that many following bytes.
    fn sub(&mut self, width: usize, what: &'static str) -> Result<Reader<'a>, DecodeError> {
        let len = self.uint(width, what)? as usize;
        let base = self.offset();
        let buf = self.bytes(len, what)?;
        Ok(Reader { buf, pos: 0, base })
    }

    /// The body of a vector with a 1-byte length prefix (`<..2^8-1>`).
    pub fn sub_u8(&mut self, what: &'static str) -> Result<Reader<'a>, DecodeError> {
        self.sub(1, what)
    }

    /// The body of a vector with a 2-byte length prefix (`<..2^16-1>`).
    pub fn sub_u16(&mut self, what: &'static str) -> Result<Reader<'a>, DecodeError> {
        self.sub(2, what)
    }

    /// The body of a vector with a 3-byte length prefix (`<..2^24-1>`).
    pub fn sub_u24(&mut self, what: &'static str) -> Result<Reader<'a>, DecodeError> {
        self.sub(3, what)
    }

    /// `opaque x<0..2^8-1>` as an owned vector.
    pub fn vec_u8(&mut self, what: &'static str) -> Result<Vec<u8>, DecodeError> {
        Ok(self.sub_u8(what)?.rest().to_vec())
    }

    /// `opaque x<0..2^16-1>` as an owned vector.
    pub fn vec_u16(&mut self, what: &'static str) -> Result<Vec<u8>, DecodeError> {
        Ok(self.sub_u16(what)?.rest().to_vec())
    }

    /// `opaque x<0..2^24-1>` as an owned vector.
    pub fn vec_u24(&mut self, what: &'static str) -> Result<Vec<u8>, DecodeError> {
        Ok(self.sub_u24(what)?.rest().to_vec())
    }

    /// Checks the lower bound of a vector `<min..>` on a freshly opened sub-reader:
    /// empty gives [`DecodeError::Empty`], non-empty but short gives [`DecodeError::Invalid`].
    pub fn at_least(self, min: usize, what: &'static str) -> Result<Self, DecodeError> {
        match self.remaining() {
            n if n >= min => Ok(self),
            0 => Err(DecodeError::Empty { what }),
            _ => Err(DecodeError::Invalid { what }),
        }
    }

    /// Checks the upper bound of a vector `<..max>` below its prefix's range (e.g. `<0..32>`).
    pub fn at_most(self, max: usize, what: &'static str) -> Result<Self, DecodeError> {
        if self.remaining() > max {
            return Err(DecodeError::TooLarge { what });
        }
        Ok(self)
    }

    /// Decodes items with `item` until this reader is exhausted: the body of a vector of
    /// structures. `item` must consume input; one that does not is reported as invalid rather
    /// than looping forever.
    pub fn items<T>(
        &mut self,
        what: &'static str,
        item: impl FnMut(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        self.items_with_capacity(what, 0, item)
    }

    /// [`items`](Self::items) into a vector allocated for `capacity` items up front: one
    /// allocation instead of a few growth steps when the caller knows (or can bound) the count.
    pub fn items_with_capacity<T>(
        &mut self,
        what: &'static str,
        capacity: usize,
        mut item: impl FnMut(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let mut out = Vec::with_capacity(capacity);
        while !self.is_empty() {
            let before = self.pos;
            out.push(item(self)?);
            if self.pos == before {
                return Err(DecodeError::Invalid { what });
            }
        }
        Ok(out)
    }

    /// The body of a vector of 2-byte code points (`NamedGroup`, `CipherSuite`, ...).
    pub fn u16_items<T: From<u16>>(&mut self, what: &'static str) -> Result<Vec<T>, DecodeError> {
        if !self.remaining().is_multiple_of(2) {
            return Err(DecodeError::LengthNotMultiple { what });
        }
        // Fixed-size items: the count is known, so the vector is allocated once, exactly.
        let mut out = Vec::with_capacity(self.remaining() / 2);
        while !self.is_empty() {
            out.push(T::from(self.u16(what)?));
        }
        Ok(out)
    }

    /// The body of a vector of 1-byte code points.
    pub fn u8_items<T: From<u8>>(&mut self, what: &'static str) -> Result<Vec<T>, DecodeError> {
        let n = self.remaining();
        self.items_with_capacity(what, n, |r| r.u8(what).map(T::from))
    }

    /// Everything not yet read.
    pub fn rest(&mut self) -> &'a [u8] {
        let out = self.buf.get(self.pos..).unwrap_or_default();
        self.pos = self.buf.len();
        out
    }

    /// Ends a bounded read: anything left over is [`DecodeError::Trailing`].
    pub fn finish(self, what: &'static str) -> Result<(), DecodeError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::Trailing { what })
        }
    }
}

/// Builds wire bytes. Vectors are written body first and their length back-filled
/// (RFC 8446 §3.4). With [`Writer::with_layout`] it also records which named field each byte
/// belongs to; with [`Writer::measuring`] it only counts the bytes it would write, so a message
/// can be given a buffer of exactly its size before it is encoded (one allocation, no growth).
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
    spans: Option<SpanRecorder>,
    /// Set for a measuring writer: bytes counted so far (nothing is stored).
    measured: Option<usize>,
}

impl Writer {
    /// A writer that only produces bytes.
    pub fn new() -> Self {
        Self::default()
    }

    /// A writer that also records a [`Span`] for every [`Writer::span`] call.
    pub fn with_layout() -> Self {
        Writer {
            buf: Vec::new(),
            spans: Some(SpanRecorder::default()),
            measured: None,
        }
    }

    /// A writer that appends to `buf` (which keeps its contents and capacity); take the bytes
    /// back with [`Writer::into_bytes`]. Lengths are back-filled within what this writer wrote.
    pub fn appending(buf: Vec<u8>) -> Self {
        Writer {
            buf,
            spans: None,
            measured: None,
        }
    }

    /// A writer that stores nothing and only counts: [`Writer::len`] is then the size the same
    /// calls would produce.
    pub fn measuring() -> Self {
        Writer {
            buf: Vec::new(),
            spans: None,
            measured: Some(0),
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.measured.unwrap_or(self.buf.len())
    }

    /// True if nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every write goes through here: stored, or only counted.
    fn put(&mut self, b: &[u8]) {
        match self.measured.as_mut() {
            Some(n) => *n += b.len(),
            None => self.buf.extend_from_slice(b),
        }
    }

    /// `uint8`.
    pub fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }

    /// `uint16`.
    pub fn u16(&mut self, v: u16) {
        self.put(&v.to_be_bytes());
    }

    /// `uint24`; the top byte of `v` must be zero.
    pub fn u24(&mut self, v: u32) {
        debug_assert!(v < 1 << 24, "uint24 out of range");
        self.put(&v.to_be_bytes()[1..]);
    }

    /// `uint32`.
    pub fn u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }

    /// Raw bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.put(b);
    }

    /// Names the bytes that `f` writes. Nested calls build a tree; the name is only formatted
    /// when recording, so this costs nothing otherwise. Zero-length spans are not recorded.
    pub fn span(&mut self, name: impl fmt::Display, f: impl FnOnce(&mut Writer)) {
        if let Some(rec) = self.spans.as_mut() {
            rec.open(name.to_string(), self.buf.len());
        }
        f(self);
        if let Some(rec) = self.spans.as_mut() {
            rec.close(self.buf.len());
        }
    }

    /// Writes a `width`-byte placeholder (span "length"), then the body, then fills in the
    /// body's length.
    ///
    /// # Panics
    /// If the body does not fit the prefix. That is a local encoding bug: everything decoded
    /// from a peer already fitted the same prefix, so it cannot be triggered by peer input.
    fn len_prefixed(&mut self, width: usize, f: impl FnOnce(&mut Writer)) {
        let start = self.len();
        self.span("length", |w| w.put(&[0; 4][..width]));
        f(self);
        let len = self.len() - start - width;
        assert!(
            (len as u64) < 1u64 << (8 * width),
            "vector body of {len} bytes does not fit a {width}-byte length"
        );
        let be = (len as u32).to_be_bytes();
        if let (Some(slot), Some(src)) = (
            self.buf.get_mut(start..start + width),
            be.get(be.len() - width..),
        ) {
            slot.copy_from_slice(src);
        }
    }

    /// A vector with a 1-byte length prefix whose body `f` writes.
    pub fn len_u8(&mut self, f: impl FnOnce(&mut Writer)) {
        self.len_prefixed(1, f)
    }

    /// A vector with a 2-byte length prefix whose body `f` writes.
    pub fn len_u16(&mut self, f: impl FnOnce(&mut Writer)) {
        self.len_prefixed(2, f)
    }

    /// A vector with a 3-byte length prefix whose body `f` writes.
    pub fn len_u24(&mut self, f: impl FnOnce(&mut Writer)) {
        self.len_prefixed(3, f)
    }

    /// `opaque x<..2^8-1>`: spans "length" and "data".
    pub fn opaque_u8(&mut self, data: &[u8]) {
        self.len_u8(|w| w.span("data", |w| w.bytes(data)))
    }

    /// `opaque x<..2^16-1>`: spans "length" and "data".
    pub fn opaque_u16(&mut self, data: &[u8]) {
        self.len_u16(|w| w.span("data", |w| w.bytes(data)))
    }

    /// `opaque x<..2^24-1>`: spans "length" and "data".
    pub fn opaque_u24(&mut self, data: &[u8]) {
        self.len_u24(|w| w.span("data", |w| w.bytes(data)))
    }

    /// The bytes written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// The bytes written and the recorded top-level spans (empty unless [`Writer::with_layout`]).
    pub fn into_layout(self) -> (Vec<u8>, Vec<Span>) {
        let spans = self.spans.map(SpanRecorder::finish).unwrap_or_default();
        (self.buf, spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_integers_and_tracks_offsets() {
        let data = [1, 0, 2, 0, 0, 3, 0, 0, 0, 4];
        let mut r = Reader::new(&data);
        assert_eq!(r.u8("a"), Ok(1));
        assert_eq!(r.u16("b"), Ok(2));
        assert_eq!(r.offset(), 3);
        assert_eq!(r.u24("c"), Ok(3));
        assert_eq!(r.u32("d"), Ok(4));
        assert!(r.finish("all").is_ok());
    }

    #[test]
    fn sub_reader_is_bounded_and_must_be_consumed() {
        // length 2, body [7, 8], then a byte that belongs to the parent.
        let data = [0, 2, 7, 8, 9];
        let mut r = Reader::new(&data);
        let mut sub = r.sub_u16("v").unwrap();
        assert_eq!(sub.offset(), 2);
        assert_eq!(sub.u8("x"), Ok(7));
        assert_eq!(
            sub.clone().finish("v"),
            Err(DecodeError::Trailing { what: "v" })
        );
        assert_eq!(sub.u8("x"), Ok(8));
        assert_eq!(sub.u8("x"), Err(DecodeError::Truncated { what: "x" }));
        assert!(sub.finish("v").is_ok());
        assert_eq!(r.u8("tail"), Ok(9));
    }

    #[test]
    fn length_past_end_is_truncated() {
        let mut r = Reader::new(&[0, 5, 1, 2]);
        assert_eq!(
            r.sub_u16("v").err(),
            Some(DecodeError::Truncated { what: "v" })
        );
        let mut r = Reader::new(&[0xff, 0xff, 0xff]);
        assert!(r.bytes(usize::MAX, "huge").is_err());
    }

    #[test]
    fn bounds_and_code_point_lists() {
        let r = Reader::new(&[]);
        assert_eq!(
            r.at_least(2, "v").err(),
            Some(DecodeError::Empty { what: "v" })
        );
        let r = Reader::new(&[1]);
        assert_eq!(
            r.at_least(2, "v").err(),
            Some(DecodeError::Invalid { what: "v" })
        );
        let r = Reader::new(&[0; 33]);
        assert_eq!(
            r.at_most(32, "v").err(),
            Some(DecodeError::TooLarge { what: "v" })
        );
        let mut r = Reader::new(&[0, 1, 0]);
        assert_eq!(
            r.u16_items::<u16>("v"),
            Err(DecodeError::LengthNotMultiple { what: "v" })
        );
        let mut r = Reader::new(&[0, 1, 0x11, 0xec]);
        assert_eq!(r.u16_items::<u16>("v"), Ok(vec![1, 0x11ec]));
    }

    #[test]
    fn items_rejects_a_non_consuming_decoder() {
        let mut r = Reader::new(&[1]);
        assert_eq!(
            r.items("v", |_| Ok(())),
            Err(DecodeError::Invalid { what: "v" })
        );
    }

    #[test]
    fn writer_backfills_lengths_and_records_tiling_spans() {
        let mut w = Writer::with_layout();
        w.span("outer", |w| {
            w.len_u16(|w| {
                w.span("a", |w| w.u8(1));
                w.span("b", |w| w.opaque_u8(&[2, 3]));
            })
        });
        w.span("empty", |_| {});
        let (bytes, spans) = w.into_layout();
        assert_eq!(bytes, [0, 4, 1, 2, 2, 3]);
        assert_eq!(spans.len(), 1, "zero-length spans are dropped");
        let outer = &spans[0];
        let names: Vec<_> = outer.children.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["length", "a", "b"]);
        assert!(crate::messages::layout::check_tiling(&spans, bytes.len()).is_ok());
    }

    #[test]
    fn plain_writer_records_nothing() {
        let mut w = Writer::new();
        w.span("x", |w| w.len_u24(|w| w.u32(7)));
        let (bytes, spans) = w.into_layout();
        assert_eq!(bytes, [0, 0, 4, 0, 0, 0, 7]);
        assert!(spans.is_empty());
    }

    #[test]
    fn measuring_counts_what_writing_writes_and_appending_keeps_the_prefix() {
        let body = |w: &mut Writer| {
            w.span("x", |w| w.len_u16(|w| w.opaque_u8(&[1, 2, 3])));
            w.u24(5);
        };
        let mut m = Writer::measuring();
        body(&mut m);
        let mut w = Writer::appending(vec![0xaa, 0xbb]);
        body(&mut w);
        let bytes = w.into_bytes();
        assert_eq!(bytes, [0xaa, 0xbb, 0, 4, 3, 1, 2, 3, 0, 0, 5]);
        assert_eq!(m.len(), bytes.len() - 2);
        assert!(
            m.into_bytes().is_empty(),
            "a measuring writer stores nothing"
        );
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn oversized_body_is_a_local_bug() {
        Writer::new().len_u8(|w| w.bytes(&[0; 256]));
    }
}
