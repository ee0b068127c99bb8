//! Splits received bytes into records (RFC 8446 §5.1).
//!
//! Each byte is copied once, straight into the payload of the record it belongs to; a header
//! is checked (type, length) before any of its body is kept, so a hostile length can cost at
//! most one record of memory, and only one record is ever incomplete.

use std::collections::VecDeque;

use super::{RecordError, HEADER_LEN, MAX_CIPHERTEXT, MAX_PLAINTEXT};
use crate::messages::enums::ContentType;

/// One record as received: header and (still protected, if it is) payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpaqueRecord {
    /// The 5 header bytes as received: the AEAD's additional data (§5.2).
    pub header: [u8; HEADER_LEN],
    /// Outer content type.
    pub typ: ContentType,
    /// legacy_record_version: ignored for all purposes (§5.1), kept for observers.
    pub version: u16,
    /// The fragment or encrypted_record.
    pub payload: Vec<u8>,
}

impl OpaqueRecord {
    /// Builds a record (header derived from the fields), e.g. for tests and simulators.
    pub fn new(typ: ContentType, version: u16, payload: Vec<u8>) -> OpaqueRecord {
        let len = (payload.len().min(usize::from(u16::MAX)) as u16).to_be_bytes();
        let v = version.to_be_bytes();
        OpaqueRecord {
            header: [typ.to_repr(), v[0], v[1], len[0], len[1]],
            typ,
            version,
            payload,
        }
    }

    /// Bytes on the wire: header plus payload.
    pub fn wire_len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }
}

/// Reassembles records from a byte stream. Errors are sticky: once a bad header is seen nothing
/// more is accepted, and [`next_record`](Self::next_record) returns the error after the records
/// that preceded it.
#[derive(Debug, Default)]
pub struct Deframer {
    ready: VecDeque<OpaqueRecord>,
    header: [u8; HEADER_LEN],
    header_len: usize,
    /// Body of the record whose header is complete; capacity is exactly its length.
    body: Vec<u8>,
    body_len: usize,
    error: Option<RecordError>,
}

impl Deframer {
    /// An empty deframer.
    pub fn new() -> Deframer {
        Deframer::default()
    }

    /// Takes received bytes. Complete records queue for [`next_record`](Self::next_record); at
    /// most one partial record is held.
    pub fn feed(&mut self, mut data: &[u8]) {
        while let Ok(Some(rec)) = self.take_record(&mut data) {
            self.ready.push_back(rec);
        }
    }

    /// The next complete record; `Ok(None)` if more bytes are needed.
    pub fn next_record(&mut self) -> Result<Option<OpaqueRecord>, RecordError> {
        if let Some(r) = self.ready.pop_front() {
            return Ok(Some(r));
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// The next complete record, reading from `input` only as far as its end: the rest of
    /// `input` is left for the next call, so records are handed over as they complete and
    /// nothing is queued (what a connection does with each `receive`). Records queued by
    /// [`feed`](Self::feed) come first. `Ok(None)`: `input` is used up, at most one partial
    /// record is held.
    pub fn read(&mut self, input: &mut &[u8]) -> Result<Option<OpaqueRecord>, RecordError> {
        if let Some(r) = self.ready.pop_front() {
            return Ok(Some(r));
        }
        self.take_record(input)
    }

    /// How many more bytes complete the record begun by earlier input (as far as is known: the
    /// rest of its header, or of its body); `None` when no record is begun.
    pub fn partial_needs(&self) -> Option<usize> {
        if self.header_len == 0 || self.error.is_some() {
            None
        } else if self.header_len < HEADER_LEN {
            Some(HEADER_LEN - self.header_len)
        } else {
            Some(self.body_len - self.body.len())
        }
    }

    /// Consumes `data` up to the end of the first record it completes.
    fn take_record(&mut self, data: &mut &[u8]) -> Result<Option<OpaqueRecord>, RecordError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        while !data.is_empty() {
            if self.header_len < HEADER_LEN {
                let n = (HEADER_LEN - self.header_len).min(data.len());
                self.header[self.header_len..self.header_len + n].copy_from_slice(&data[..n]);
                self.header_len += n;
                *data = &data[n..];
                if self.header_len < HEADER_LEN {
                    return Ok(None);
                }
                match check_header(&self.header) {
                    // A record with an empty body is complete with its header, even at the end
                    // of `data`.
                    Ok(0) => return Ok(Some(self.complete())),
                    Ok(len) => {
                        self.body_len = len;
                        self.body = Vec::with_capacity(len);
                    }
                    Err(e) => {
                        self.error = Some(e);
                        return Err(e);
                    }
                }
            }
            let n = (self.body_len - self.body.len()).min(data.len());
            self.body.extend_from_slice(&data[..n]);
            *data = &data[n..];
            if self.body.len() == self.body_len {
                return Ok(Some(self.complete()));
            }
        }
        Ok(None)
    }

    fn complete(&mut self) -> OpaqueRecord {
        let h = self.header;
        self.header_len = 0;
        self.body_len = 0;
        OpaqueRecord {
            header: h,
            typ: ContentType::from(h[0]),
            version: u16::from_be_bytes([h[1], h[2]]),
            payload: core::mem::take(&mut self.body),
        }
    }

    /// True while part of a record is held: at end of stream this means truncation.
    pub fn has_partial(&self) -> bool {
        self.header_len > 0
    }

    /// Bytes held, complete records included.
    pub fn buffered_len(&self) -> usize {
        let queued: usize = self.ready.iter().map(OpaqueRecord::wire_len).sum();
        queued + self.header_len + self.body.len()
    }
}

/// Checks a header before its body is buffered and returns the body length.
///
/// Only TLS 1.3's four record types are accepted (§5: others get unexpected_message).
/// application_data may carry a TLSCiphertext of up to 2^14 + 256 bytes (§5.2); the others are
/// TLSPlaintext, up to 2^14 (§5.1). legacy_record_version is ignored, as §5.1 requires.
pub(crate) fn check_header(h: &[u8; HEADER_LEN]) -> Result<usize, RecordError> {
    let typ = ContentType::from(h[0]);
    let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
    let max = match typ {
        ContentType::ApplicationData => MAX_CIPHERTEXT,
        ContentType::Handshake | ContentType::Alert | ContentType::ChangeCipherSpec => {
            MAX_PLAINTEXT
        }
        other => return Err(RecordError::UnexpectedContentType(other)),
    };
    if len > max {
        return Err(RecordError::RecordOverflow);
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(typ: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![typ, 3, 3];
        v.extend_from_slice(&(body.len() as u16).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn byte_by_byte_and_many_at_once() {
        let mut wire = rec(22, b"hello");
        wire.extend(rec(23, &[9; 300]));
        wire.extend(rec(21, &[2, 40]));
        let mut d = Deframer::new();
        for b in &wire {
            d.feed(&[*b]);
        }
        let mut e = Deframer::new();
        e.feed(&wire);
        for d in [&mut d, &mut e] {
            let r1 = d.next_record().unwrap().unwrap();
            assert_eq!(
                (r1.typ, &r1.payload[..]),
                (ContentType::Handshake, &b"hello"[..])
            );
            assert_eq!(r1.header, [22, 3, 3, 0, 5]);
            let r2 = d.next_record().unwrap().unwrap();
            assert_eq!(r2.payload.len(), 300);
            assert_eq!(r2.version, 0x0303);
            let r3 = d.next_record().unwrap().unwrap();
            assert_eq!(r3.typ, ContentType::Alert);
            assert_eq!(d.next_record(), Ok(None));
            assert!(!d.has_partial());
        }
    }

    #[test]
    fn read_consumes_input_one_record_at_a_time() {
        let mut wire = rec(22, b"hello");
        wire.extend(rec(23, &[9; 300]));
        wire.extend_from_slice(&[21, 3, 3, 0]); // part of a third header
        let mut d = Deframer::new();
        let mut input = &wire[..];
        let r1 = d.read(&mut input).unwrap().unwrap();
        assert_eq!(&r1.payload[..], b"hello");
        assert_eq!(input.len(), 305 + 4, "only the first record was read");
        assert_eq!(d.read(&mut input).unwrap().unwrap().payload.len(), 300);
        assert_eq!(d.read(&mut input), Ok(None));
        assert!(input.is_empty() && d.has_partial());
        let mut rest = &[1u8, 40, 0][..];
        assert_eq!(d.read(&mut rest).unwrap().unwrap().payload, [40]);
        assert_eq!(rest, [0], "the byte after the record is left");
        // An error comes after the records before it, and sticks.
        let mut bad = &[21, 3, 3, 0, 2, 1, 0, 24, 3, 3, 0, 1, 0][..];
        assert!(d.read(&mut bad).unwrap().is_some());
        let e = Err(RecordError::UnexpectedContentType(ContentType::Heartbeat));
        assert_eq!(d.read(&mut bad), e);
        assert_eq!(d.read(&mut &rec(22, b"x")[..]), e);
    }

    #[test]
    fn holds_one_partial_record_only() {
        let mut d = Deframer::new();
        d.feed(&[23, 3, 3, 0x41, 0x00]);
        d.feed(&[0; 100]);
        assert!(d.has_partial());
        assert_eq!(d.buffered_len(), 105);
        assert_eq!(d.body.capacity(), MAX_CIPHERTEXT);
        assert_eq!(d.next_record(), Ok(None));
    }

    #[test]
    fn overflow_is_rejected_on_the_header() {
        // application_data: 2^14 + 256 is the limit; one more is an overflow.
        let mut d = Deframer::new();
        d.feed(&[23, 3, 3, 0x41, 0x00]);
        assert_eq!(d.next_record(), Ok(None));
        let mut d = Deframer::new();
        d.feed(&[23, 3, 3, 0x41, 0x01]);
        assert_eq!(d.next_record(), Err(RecordError::RecordOverflow));
        assert_eq!(d.body.capacity(), 0, "body must not be allocated");
        // Plaintext types: 2^14 is the limit.
        let mut d = Deframer::new();
        d.feed(&[22, 3, 1, 0x40, 0x01]);
        assert_eq!(d.next_record(), Err(RecordError::RecordOverflow));
    }

    #[test]
    fn records_before_an_error_come_first_and_error_sticks() {
        let mut wire = rec(22, b"ok");
        wire.extend_from_slice(&[24, 3, 3, 0, 1, 0]); // heartbeat: not TLS 1.3
        let mut d = Deframer::new();
        d.feed(&wire);
        d.feed(&rec(22, b"ignored"));
        assert!(d.next_record().unwrap().is_some());
        let e = Err(RecordError::UnexpectedContentType(ContentType::Heartbeat));
        assert_eq!(d.next_record(), e);
        assert_eq!(d.next_record(), e);
    }

    #[test]
    fn empty_record_is_framed() {
        let mut d = Deframer::new();
        d.feed(&rec(23, b""));
        assert_eq!(d.next_record().unwrap().unwrap().payload.len(), 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Any chunking of a record stream yields the same records.
        #[test]
        fn any_chunking(
            lens in proptest::collection::vec(0usize..2000, 1..6),
            cuts in proptest::collection::vec(1usize..3000, 1..20),
        ) {
            let bodies: Vec<Vec<u8>> = lens.iter().map(|&l| vec![l as u8; l]).collect();
            let stream: Vec<u8> = bodies.iter().flat_map(|b| rec(23, b)).collect();
            let mut d = Deframer::new();
            let mut got = Vec::new();
            let (mut pos, mut ci) = (0, 0);
            while pos < stream.len() {
                let n = cuts[ci % cuts.len()].min(stream.len() - pos);
                ci += 1;
                d.feed(&stream[pos..pos + n]);
                pos += n;
                while let Some(r) = d.next_record().unwrap() {
                    got.push(r.payload);
                }
            }
            proptest::prop_assert_eq!(got, bodies);
            proptest::prop_assert!(!d.has_partial());
        }
    }
}
