//! Reassembles handshake messages from record contents (RFC 8446 §5.1): a message may be split
//! over several records and a record may hold several messages.
//!
//! Two rules of §5.1 are left to the state machine, which this type equips to enforce them:
//! handshake records must not be interleaved with other types while a message is incomplete
//! (check [`HandshakeJoiner::is_empty`] when another type arrives), and a message that changes
//! keys must end exactly at a record boundary (check the `ends_record` flag of
//! [`HandshakeJoiner::next_message`] after ClientHello, ServerHello, Finished, EndOfEarlyData
//! and KeyUpdate).

use super::RecordError;
use crate::messages::enums::{ContentType, HandshakeType};

/// Handshake message header: msg_type (1) and length (3) (RFC 8446 §4).
const MSG_HEADER_LEN: usize = 4;

/// A reasonable default limit for a handshake message body: 64 KiB holds any sane certificate
/// chain, while the wire format allows 16 MiB.
pub const DEFAULT_MAX_HANDSHAKE: usize = 1 << 16;

/// The largest ClientHello body the wire format allows (§4.1.2): version, random,
/// `legacy_session_id<0..32>`, `cipher_suites<2..2^16-2>`, `legacy_compression_methods<1..2^8-1>`
/// and `extensions<8..2^16-1>`, each at its maximum: 131,396 bytes. A valid ClientHello can
/// exceed 64 KiB (a signature_algorithms list of 32,715 schemes is 65,609 bytes in all), so a
/// server bounds ClientHellos by this rather than by its limit for other messages.
pub const MAX_CLIENT_HELLO: usize = 2 + 32 + (1 + 32) + (2 + 0xfffe) + (1 + 0xff) + (2 + 0xffff);

/// Joins handshake fragments into whole messages, bounding what it buffers.
#[derive(Debug)]
pub struct HandshakeJoiner {
    max_message: usize,
    /// The bound for ClientHello bodies: `max_message` unless the owner allows more.
    max_client_hello: usize,
    /// Pending bytes are `buf[start..]`, beginning at a message boundary.
    buf: Vec<u8>,
    start: usize,
    error: Option<RecordError>,
}

impl HandshakeJoiner {
    /// A joiner refusing messages whose declared body exceeds `max_message` bytes.
    pub fn new(max_message: usize) -> HandshakeJoiner {
        HandshakeJoiner {
            max_message,
            max_client_hello: max_message,
            buf: Vec::new(),
            start: 0,
            error: None,
        }
    }

    /// Bounds ClientHello bodies by `max` instead of the limit for other messages (a server
    /// before its keys change: [`MAX_CLIENT_HELLO`]); `None` goes back to that limit.
    pub fn set_client_hello_limit(&mut self, max: Option<usize>) {
        self.max_client_hello = max.unwrap_or(self.max_message);
    }

    /// Adds the content of one Handshake record. Every message header that becomes complete is
    /// checked against the limit before the fragment is buffered, so an oversized declaration
    /// costs at most this one fragment. Errors are sticky.
    pub fn push(&mut self, fragment: &[u8]) -> Result<(), RecordError> {
        self.check_fragment(fragment)?;
        self.buf.extend_from_slice(fragment);
        Ok(())
    }

    /// [`push`](Self::push) for a fragment the caller no longer needs: when nothing is pending
    /// (a record starting at a message boundary, the usual case) its buffer becomes the
    /// joiner's, so the record's bytes are not copied.
    pub fn push_owned(&mut self, fragment: Vec<u8>) -> Result<(), RecordError> {
        self.check_fragment(&fragment)?;
        if self.buf.is_empty() {
            self.buf = fragment;
        } else {
            self.buf.extend_from_slice(&fragment);
        }
        Ok(())
    }

    /// The checks of [`push`](Self::push), and the already-read messages dropped from the
    /// front of the buffer.
    fn check_fragment(&mut self, fragment: &[u8]) -> Result<(), RecordError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if fragment.is_empty() {
            // §5.1: zero-length Handshake fragments must not be sent.
            return self.fail(RecordError::EmptyFragment(ContentType::Handshake));
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if let Err(e) = self.check_headers(fragment) {
            return self.fail(e);
        }
        Ok(())
    }

    fn fail(&mut self, e: RecordError) -> Result<(), RecordError> {
        self.error = Some(e);
        self.buf = Vec::new();
        self.start = 0;
        Err(e)
    }

    /// Walks message headers across the pending bytes followed by `fragment` without joining
    /// them, and checks every declared length.
    fn check_headers(&self, fragment: &[u8]) -> Result<(), RecordError> {
        let pending = &self.buf[self.start..];
        let at = |i: usize| -> u8 {
            match pending.get(i) {
                Some(b) => *b,
                None => fragment.get(i - pending.len()).copied().unwrap_or(0),
            }
        };
        let total = pending.len() + fragment.len();
        let mut pos = 0usize;
        while pos + MSG_HEADER_LEN <= total {
            let len = usize::from(at(pos + 1)) << 16
                | usize::from(at(pos + 2)) << 8
                | usize::from(at(pos + 3));
            let typ = HandshakeType::from(at(pos));
            let max = if typ == HandshakeType::ClientHello {
                self.max_client_hello
            } else {
                self.max_message
            };
            if len > max {
                return Err(RecordError::HandshakeTooLarge { typ, len, max });
            }
            pos += MSG_HEADER_LEN + len;
        }
        Ok(())
    }

    /// The next whole message (header included) and whether it ended exactly where the
    /// buffered bytes end, i.e. at the end of the last record pushed.
    ///
    /// Push one record and drain its messages before opening the next record; then
    /// `ends_record == true` is exactly "this message ended at a record boundary", which a
    /// key-changing message requires (§5.1).
    pub fn next_message(&mut self) -> Option<(Vec<u8>, bool)> {
        let pending = &self.buf[self.start..];
        if pending.len() < MSG_HEADER_LEN {
            return None;
        }
        let len =
            usize::from(pending[1]) << 16 | usize::from(pending[2]) << 8 | usize::from(pending[3]);
        let end = self.start + MSG_HEADER_LEN + len;
        if end > self.buf.len() {
            return None;
        }
        let msg = if end == self.buf.len() {
            // The last message of the buffer (often the only one): hand over the allocation,
            // after moving the message to its front if earlier messages were read from it.
            self.buf.drain(..self.start);
            self.start = 0;
            core::mem::take(&mut self.buf)
        } else {
            let m = self.buf[self.start..end].to_vec();
            self.start = end;
            if self.start == self.buf.len() {
                self.buf.clear();
                self.start = 0;
            }
            m
        };
        Some((msg, self.is_empty()))
    }

    /// Whether a whole message waits for [`next_message`](Self::next_message).
    pub fn has_message(&self) -> bool {
        let pending = &self.buf[self.start..];
        pending.len() >= MSG_HEADER_LEN
            && pending.len()
                >= MSG_HEADER_LEN
                    + (usize::from(pending[1]) << 16
                        | usize::from(pending[2]) << 8
                        | usize::from(pending[3]))
    }

    /// True if no bytes of an unfinished (or unread) message are held.
    pub fn is_empty(&self) -> bool {
        self.start == self.buf.len()
    }

    /// Bytes held.
    pub fn buffered_len(&self) -> usize {
        self.buf.len() - self.start
    }
}

impl Default for HandshakeJoiner {
    fn default() -> Self {
        HandshakeJoiner::new(DEFAULT_MAX_HANDSHAKE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyschedule::test_vectors as v;

    fn msg(typ: u8, body_len: usize) -> Vec<u8> {
        let mut m = vec![
            typ,
            (body_len >> 16) as u8,
            (body_len >> 8) as u8,
            body_len as u8,
        ];
        m.extend((0..body_len).map(|i| i as u8));
        m
    }

    #[test]
    fn message_split_across_records() {
        let cert = v::s3_certificate();
        let mut j = HandshakeJoiner::default();
        for (i, chunk) in cert.chunks(100).enumerate() {
            assert!(j.next_message().is_none(), "chunk {i}");
            j.push(chunk).unwrap();
        }
        assert_eq!(j.next_message(), Some((cert, true)));
        assert!(j.is_empty());
        // Even a split inside the 4-byte header works.
        let fin = v::s3_server_finished();
        j.push(&fin[..2]).unwrap();
        assert!(j.next_message().is_none());
        j.push(&fin[2..]).unwrap();
        assert_eq!(j.next_message(), Some((fin, true)));
    }

    #[test]
    fn many_messages_in_one_record() {
        // RFC 8448 §3: EE, Certificate, CertificateVerify and Finished share one record.
        let msgs = [
            v::s3_encrypted_extensions(),
            v::s3_certificate(),
            v::s3_certificate_verify(),
            v::s3_server_finished(),
        ];
        let record: Vec<u8> = msgs.concat();
        let mut j = HandshakeJoiner::default();
        j.push_owned(record).unwrap();
        for (i, m) in msgs.iter().enumerate() {
            let (got, ends) = j.next_message().unwrap();
            assert_eq!(&got, m);
            // Only the Finished ends the record: keys may change after it, not before.
            assert_eq!(ends, i == msgs.len() - 1);
        }
        assert!(j.next_message().is_none());
    }

    #[test]
    fn key_update_followed_by_more_bytes_in_the_same_record() {
        let mut rec = msg(24, 1); // KeyUpdate
        rec.extend(msg(4, 3)); // and a NewSessionTicket-typed message after it
        let mut j = HandshakeJoiner::default();
        j.push(&rec).unwrap();
        assert!(
            !j.next_message().unwrap().1,
            "KeyUpdate must not end the record here"
        );
        // A message that ends mid-record then one that starts the next record.
        let mut j = HandshakeJoiner::default();
        let a = msg(20, 32);
        let b = msg(8, 10);
        let mut r1 = a.clone();
        r1.extend_from_slice(&b[..3]);
        j.push(&r1).unwrap();
        assert_eq!(j.next_message(), Some((a, false)));
        assert!(!j.is_empty());
        j.push(&b[3..]).unwrap();
        assert_eq!(j.next_message(), Some((b, true)));
    }

    #[test]
    fn oversized_length_rejected_before_buffering_body() {
        let mut j = HandshakeJoiner::new(1000);
        // A header declaring 2^24 - 1 bytes: refused on the header alone.
        let err = j.push(&[11, 0xff, 0xff, 0xff, 1, 2, 3]).unwrap_err();
        assert_eq!(
            err,
            RecordError::HandshakeTooLarge {
                typ: HandshakeType::Certificate,
                len: 0xff_ffff,
                max: 1000
            }
        );
        assert_eq!(j.buffered_len(), 0);
        assert_eq!(j.push(&msg(20, 4)), Err(err), "sticky");

        // The oversized header may arrive split, or behind a good message in the same record.
        let mut j = HandshakeJoiner::new(1000);
        j.push(&[11, 0x00]).unwrap();
        assert!(j.push(&[0x03, 0xe9]).is_err()); // 1001
        let mut j = HandshakeJoiner::new(1000);
        let mut rec = msg(8, 1000);
        rec.extend_from_slice(&[11, 0, 0x03, 0xe9]);
        assert!(j.push(&rec).is_err());
        assert!(
            j.next_message().is_none(),
            "nothing is delivered after an error"
        );
        assert_eq!(err.alert().name(), "decode_error");
    }

    #[test]
    fn empty_fragment_is_unexpected_message() {
        let mut j = HandshakeJoiner::default();
        let e = j.push(&[]).unwrap_err();
        assert_eq!(e, RecordError::EmptyFragment(ContentType::Handshake));
        assert_eq!(e.alert().name(), "unexpected_message");
    }

    #[test]
    fn zero_length_message_and_partial_header() {
        let mut j = HandshakeJoiner::default();
        j.push(&[5, 0, 0, 0, 20, 0]).unwrap(); // EndOfEarlyData, then 2 bytes of a header
        assert_eq!(j.next_message(), Some((vec![5, 0, 0, 0], false)));
        assert!(j.next_message().is_none());
        assert_eq!(j.buffered_len(), 2);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Any messages, cut into any records, come out whole and in order; `ends_record` is
        /// true exactly when a message ends where a record ends.
        #[test]
        fn any_split_reassembles(
            lens in proptest::collection::vec(0usize..300, 1..8),
            cuts in proptest::collection::vec(1usize..200, 1..40),
        ) {
            let msgs: Vec<Vec<u8>> = lens.iter().enumerate().map(|(i, &l)| msg(i as u8, l)).collect();
            let stream = msgs.concat();
            let mut ends = std::collections::HashSet::new();
            let mut j = HandshakeJoiner::new(1000);
            let mut got = Vec::new();
            let (mut pos, mut ci) = (0, 0);
            while pos < stream.len() {
                let n = cuts[ci % cuts.len()].min(stream.len() - pos);
                ci += 1;
                // Both ways in, alternately: copied, and handed over.
                if ci % 2 == 0 {
                    j.push(&stream[pos..pos + n]).unwrap();
                } else {
                    j.push_owned(stream[pos..pos + n].to_vec()).unwrap();
                }
                pos += n;
                ends.insert(pos);
                while let Some((m, end)) = j.next_message() {
                    got.push((m, end));
                }
            }
            let mut off = 0;
            proptest::prop_assert_eq!(got.len(), msgs.len());
            for ((m, end), want) in got.iter().zip(&msgs) {
                off += want.len();
                proptest::prop_assert_eq!(m, want);
                proptest::prop_assert_eq!(*end, ends.contains(&off));
            }
            proptest::prop_assert!(j.is_empty());
        }
    }
}
