//! Record protection (RFC 8446 §5.2-§5.4): one [`RecordProtector`] per direction per key epoch.
//!
//! ```text
//! struct { opaque content[len]; ContentType type; uint8 zeros[padding]; } TLSInnerPlaintext;
//! TLSCiphertext = 23 || 0x0303 || length || AEAD-Encrypt(key, nonce, AAD = the 5 header bytes, TLSInnerPlaintext)
//! nonce = iv XOR (64-bit sequence number, left-padded with zeros to iv_length)
//! ```
//!
//! Sealing writes header, content, type and padding into one buffer and encrypts it in place;
//! opening decrypts in place. Neither copies more than once.

use super::deframer::OpaqueRecord;
use super::{RecordError, HEADER_LEN, LEGACY_RECORD_VERSION, MAX_CIPHERTEXT, MAX_PLAINTEXT};
use crate::crypto::aead::{AeadAlg, AeadKey, NONCE_LEN};
use crate::messages::enums::ContentType;

/// A decrypted record (RFC 8446 §5.4) with its padding stripped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InnerPlaintext {
    /// The real content type.
    pub typ: ContentType,
    /// TLSInnerPlaintext.content.
    pub content: Vec<u8>,
    /// How many zero bytes of padding followed the type.
    pub padding: usize,
}

/// Seals or opens records for one direction under one key (RFC 8446 §5.2), counting sequence
/// numbers from 0 (§5.3: they reset with every key change).
pub struct RecordProtector {
    key: AeadKey,
    iv: [u8; NONCE_LEN],
    seq: u64,
    /// Set once seq 2^64 - 1 has been used: the counter must never wrap (§5.3).
    exhausted: bool,
}

impl RecordProtector {
    /// Keys a direction with the "key" and "iv" of a traffic secret (§7.3). Fails only if `key`
    /// has the wrong length for `alg`.
    pub fn new(alg: AeadAlg, key: &[u8], iv: [u8; NONCE_LEN]) -> Result<Self, RecordError> {
        let key = AeadKey::new(alg, key).map_err(|_| RecordError::BadKey)?;
        Ok(RecordProtector {
            key,
            iv,
            seq: 0,
            exhausted: false,
        })
    }

    /// The AEAD algorithm.
    pub fn alg(&self) -> AeadAlg {
        self.key.alg()
    }

    /// Bytes of tag each record carries: 16, or 8 under AES-128-CCM-8.
    pub fn tag_len(&self) -> usize {
        self.key.tag_len()
    }

    /// Length of the record this key makes of `content_len` bytes and `padding` zeros:
    /// [`sealed_len`] with this key's tag.
    pub fn sealed_len(&self, content_len: usize, padding: usize) -> usize {
        sealed_len(content_len, padding, self.tag_len())
    }

    /// Sequence number of the next record.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Per-record nonce: the IV XOR the sequence number, big-endian in the last 8 bytes (§5.3).
    fn nonce(&self) -> [u8; NONCE_LEN] {
        let mut n = self.iv;
        for (b, s) in n[NONCE_LEN - 8..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    fn advance(&mut self) {
        match self.seq.checked_add(1) {
            Some(s) => self.seq = s,
            None => self.exhausted = true,
        }
    }

    /// Protects `plaintext` of real type `inner_type` with `padding` zero bytes and returns the
    /// whole wire record (§5.2).
    pub fn seal(
        &mut self,
        inner_type: ContentType,
        plaintext: &[u8],
        padding: usize,
    ) -> Result<Vec<u8>, RecordError> {
        let mut out = Vec::new();
        self.seal_into(inner_type, plaintext, padding, &mut out)?;
        Ok(out)
    }

    /// Like [`seal`](Self::seal) but appends the record to `out`, so a flight can be written into
    /// one buffer. On error `out` is unchanged.
    pub fn seal_into(
        &mut self,
        inner_type: ContentType,
        plaintext: &[u8],
        padding: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), RecordError> {
        self.check_seal(plaintext.len(), padding)?;
        let start = out.len();
        out.reserve(self.sealed_len(plaintext.len(), padding));
        out.extend_from_slice(&[0; HEADER_LEN]);
        out.extend_from_slice(plaintext);
        self.seal_in_place(inner_type, out, start, padding)
    }

    /// Seals the record that `out[start..]` holds: a 5-byte placeholder for the header, then
    /// the content. Appends the type byte, `padding` zeros and the tag, encrypts in place and
    /// writes the header (§5.2). The connection encodes handshake messages straight into its
    /// output buffer behind such a placeholder, so a flight is sealed where it was written,
    /// without a copy. On error the record is removed: `out` is truncated to `start`.
    pub fn seal_in_place(
        &mut self,
        inner_type: ContentType,
        out: &mut Vec<u8>,
        start: usize,
        padding: usize,
    ) -> Result<(), RecordError> {
        let Some(content_len) = out.len().checked_sub(start + HEADER_LEN) else {
            out.truncate(start);
            return Err(RecordError::PlaintextTooLong);
        };
        if let Err(e) = self.check_seal(content_len, padding) {
            out.truncate(start);
            return Err(e);
        }
        out.resize(start + self.sealed_len(content_len, padding), 0);
        match self.seal_slice(inner_type, &mut out[start..], content_len, padding) {
            Ok(_) => Ok(()),
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }

    /// Seals one record inside `buf`, which the caller owns: `buf[..HEADER_LEN]` is room for
    /// the header and `buf[HEADER_LEN..HEADER_LEN + content_len]` holds the content. Writes
    /// the type byte, `padding` zeros, encrypts in place, then the tag and the header (§5.2),
    /// and returns the record's length, [`sealed_len`](Self::sealed_len)`(content_len, padding)`. A `buf` shorter
    /// than that is refused with `PlaintextTooLong`, leaving it and the sequence number alone.
    pub fn seal_slice(
        &mut self,
        inner_type: ContentType,
        buf: &mut [u8],
        content_len: usize,
        padding: usize,
    ) -> Result<usize, RecordError> {
        self.check_seal(content_len, padding)?;
        let total = self.sealed_len(content_len, padding);
        if buf.len() < total {
            return Err(RecordError::PlaintextTooLong);
        }
        let inner_end = HEADER_LEN + content_len + 1 + padding;
        buf[HEADER_LEN + content_len] = inner_type.to_repr();
        buf[HEADER_LEN + content_len + 1..inner_end].fill(0);
        let l = ((total - HEADER_LEN) as u16).to_be_bytes();
        let v = LEGACY_RECORD_VERSION.to_be_bytes();
        let header = [
            ContentType::ApplicationData.to_repr(),
            v[0],
            v[1],
            l[0],
            l[1],
        ];
        buf[..HEADER_LEN].copy_from_slice(&header);
        let nonce = self.nonce();
        let tag = self
            .key
            .seal_detached(&nonce, &header, &mut buf[HEADER_LEN..inner_end])
            .map_err(|_| RecordError::PlaintextTooLong)?;
        buf[inner_end..total].copy_from_slice(&tag);
        self.advance();
        Ok(total)
    }

    /// Whether a record of `content_len` bytes plus `padding` may be sealed now.
    fn check_seal(&self, content_len: usize, padding: usize) -> Result<(), RecordError> {
        if self.exhausted {
            return Err(RecordError::SeqExhausted);
        }
        // content + padding ≤ 2^14, i.e. TLSInnerPlaintext ≤ 2^14 + 1 (§5.4).
        if content_len.saturating_add(padding) > MAX_PLAINTEXT {
            return Err(RecordError::PlaintextTooLong);
        }
        Ok(())
    }

    /// Opens a protected record, keeping `rec` (observers may want the ciphertext): one copy.
    pub fn open(&mut self, rec: &OpaqueRecord) -> Result<InnerPlaintext, RecordError> {
        self.open_payload(rec.typ, &rec.header, rec.payload.clone())
    }

    /// Opens a protected record in place, reusing its payload buffer: no copy.
    pub fn open_owned(&mut self, rec: OpaqueRecord) -> Result<InnerPlaintext, RecordError> {
        self.open_payload(rec.typ, &rec.header, rec.payload)
    }

    fn open_payload(
        &mut self,
        outer: ContentType,
        header: &[u8; HEADER_LEN],
        mut buf: Vec<u8>,
    ) -> Result<InnerPlaintext, RecordError> {
        // Protected records always say application_data outside (§5.2).
        if outer != ContentType::ApplicationData {
            return Err(RecordError::UnexpectedContentType(outer));
        }
        let (typ, content_len, padding) = self.open_slice(header, &mut buf)?;
        buf.truncate(content_len);
        Ok(InnerPlaintext {
            typ,
            content: buf,
            padding,
        })
    }

    /// Opens a protected record where it lies: `payload` is its encrypted_record, received
    /// after `header`, whose outer type the caller found to be application_data. Decrypts in
    /// place, then strips padding from the end: the content type is the last non-zero byte
    /// (§5.4). Returns that type, the content's length (the content is `payload[..len]`) and
    /// the padding's. The sequence number advances only on success, so a
    /// server skipping rejected 0-RTT records (§4.2.10) keeps its handshake-key count right.
    pub fn open_slice(
        &mut self,
        header: &[u8; HEADER_LEN],
        payload: &mut [u8],
    ) -> Result<(ContentType, usize, usize), RecordError> {
        if payload.len() > MAX_CIPHERTEXT {
            return Err(RecordError::RecordOverflow);
        }
        if self.exhausted {
            return Err(RecordError::SeqExhausted);
        }
        // Shorter than a tag: nothing can authenticate it (RFC 5116 §2.2 "FAIL").
        let Some(ct_len) = payload.len().checked_sub(self.tag_len()) else {
            return Err(RecordError::BadRecordMac);
        };
        let (ct, tag) = payload.split_at_mut(ct_len);
        let nonce = self.nonce();
        self.key
            .open_detached(&nonce, header, ct, tag)
            .map_err(|_| RecordError::BadRecordMac)?;
        self.advance();

        if ct_len > MAX_PLAINTEXT + 1 {
            return Err(RecordError::RecordOverflow);
        }
        let Some(type_at) = ct.iter().rposition(|&b| b != 0) else {
            return Err(RecordError::NoContentType);
        };
        let typ = ContentType::from(ct[type_at]);
        // Zero-length Handshake and Alert content is forbidden even with padding (§5.4).
        if type_at == 0 && matches!(typ, ContentType::Handshake | ContentType::Alert) {
            return Err(RecordError::EmptyFragment(typ));
        }
        Ok((typ, type_at, ct_len - type_at - 1))
    }
}

/// Length of a protected record carrying `content_len` bytes and `padding` zeros: header,
/// content, type byte, padding, and a tag of `tag_len` bytes (§5.2; [`AeadAlg::tag_len`]).
pub fn sealed_len(content_len: usize, padding: usize, tag_len: usize) -> usize {
    HEADER_LEN + content_len + 1 + padding + tag_len
}

impl core::fmt::Debug for RecordProtector {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecordProtector")
            .field("alg", &self.alg())
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyschedule::test_vectors as v;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    fn iv(s: &str) -> [u8; 12] {
        h(s).try_into().unwrap()
    }

    /// RFC 8448 §3 client handshake traffic key and IV.
    fn s3_client_hs() -> RecordProtector {
        RecordProtector::new(
            AeadAlg::Aes128Gcm,
            &h("dbfaa693d1762c5b666af5d950258d01"),
            iv("5bd3c71b836e0b76bb73265f"),
        )
        .unwrap()
    }

    fn parse(wire: &[u8]) -> OpaqueRecord {
        let mut d = super::super::Deframer::new();
        d.feed(wire);
        d.next_record().unwrap().unwrap()
    }

    #[test]
    fn rfc8448_s3_client_finished_record_byte_exact() {
        let wire = v::s3_client_finished_record();
        let finished = v::s3_client_finished();
        // Seal reproduces the record exactly (no padding; nonce = iv at seq 0; AAD 1703030035).
        let mut p = s3_client_hs();
        assert_eq!(p.nonce(), iv("5bd3c71b836e0b76bb73265f"));
        let sealed = p.seal(ContentType::Handshake, &finished, 0).unwrap();
        assert_eq!(hex::encode(&sealed), hex::encode(&wire));
        assert_eq!(&sealed[..5], &h("1703030035")[..]);
        assert_eq!(
            &sealed[sealed.len() - 16..],
            &h("46deb384bd1caeacab6867d726c40546")[..]
        );
        assert_eq!(p.seq(), 1);
        // Open returns the Finished message.
        let mut q = s3_client_hs();
        let inner = q.open(&parse(&wire)).unwrap();
        assert_eq!(inner.typ, ContentType::Handshake);
        assert_eq!(inner.content, finished);
        assert_eq!(inner.padding, 0);
        assert_eq!(q.seq(), 1);
    }

    #[test]
    fn sealing_in_place_behind_other_records() {
        // The connection writes a flight into one buffer: a record already there, then a
        // placeholder header and the content, sealed where it lies.
        let finished = v::s3_client_finished();
        let mut out = b"earlier record".to_vec();
        out.extend_from_slice(&[0; HEADER_LEN]);
        out.extend_from_slice(&finished);
        let mut p = s3_client_hs();
        p.seal_in_place(ContentType::Handshake, &mut out, 14, 0)
            .unwrap();
        assert_eq!(&out[..14], b"earlier record");
        assert_eq!(
            hex::encode(&out[14..]),
            hex::encode(v::s3_client_finished_record())
        );
        // On error the record is removed, and what came before it kept.
        p.seq = u64::MAX;
        p.exhausted = true;
        out.extend_from_slice(&[0; HEADER_LEN + 3]);
        let before = out.len() - HEADER_LEN - 3;
        assert_eq!(
            p.seal_in_place(ContentType::Handshake, &mut out, before, 0),
            Err(RecordError::SeqExhausted)
        );
        assert_eq!(out.len(), before);
    }

    #[test]
    fn rfc8448_s3_server_app_data_at_seq_1() {
        // Server application traffic key/IV; the record is the server's second (nonce ...e985).
        let mk = || {
            RecordProtector::new(
                AeadAlg::Aes128Gcm,
                &h("9f02283b6c9c07efc26bb9f2ac92e356"),
                iv("cf782b88dd83549aadf1e984"),
            )
            .unwrap()
        };
        let wire = v::s3_server_app_data_record();
        let data: Vec<u8> = (0u8..50).collect();
        let mut p = mk();
        p.seq = 1;
        assert_eq!(p.nonce(), iv("cf782b88dd83549aadf1e985"));
        assert_eq!(
            p.seal(ContentType::ApplicationData, &data, 0).unwrap(),
            wire
        );
        let mut q = mk();
        q.seq = 1;
        let inner = q.open_owned(parse(&wire)).unwrap();
        assert_eq!(
            (inner.typ, inner.content),
            (ContentType::ApplicationData, data)
        );
        // At the wrong sequence number the nonce differs and authentication fails.
        let mut r = mk();
        assert_eq!(r.open(&parse(&wire)), Err(RecordError::BadRecordMac));
        assert_eq!(r.seq(), 0, "seq advances only on success");
    }

    #[test]
    fn every_flipped_bit_is_bad_record_mac() {
        let wire = v::s3_client_finished_record();
        // Header bits are the AAD; body and tag bits are authenticated too.
        for i in 0..wire.len() * 8 {
            let mut w = wire.clone();
            w[i / 8] ^= 1 << (i % 8);
            let rec = OpaqueRecord {
                header: w[..5].try_into().unwrap(),
                typ: ContentType::ApplicationData,
                version: 0x0303,
                payload: w[5..].to_vec(),
            };
            assert_eq!(
                s3_client_hs().open(&rec),
                Err(RecordError::BadRecordMac),
                "bit {i}"
            );
        }
    }

    #[test]
    fn padding_round_trip_and_all_zero_inner_plaintext() {
        let mk = || RecordProtector::new(AeadAlg::ChaCha20Poly1305, &[3; 32], [9; 12]).unwrap();
        let (mut s, mut r) = (mk(), mk());
        let rec = s.seal(ContentType::ApplicationData, b"hi", 100).unwrap();
        assert_eq!(rec.len(), 5 + 2 + 1 + 100 + 16);
        let inner = r.open(&parse(&rec)).unwrap();
        assert_eq!((&inner.content[..], inner.padding), (&b"hi"[..], 100));

        // Inner plaintext of only zeros: type 0 (invalid) with empty content and padding; the
        // content type cannot be found (§5.4).
        let rec = s.seal(ContentType::Invalid, b"", 5).unwrap();
        assert_eq!(r.open(&parse(&rec)), Err(RecordError::NoContentType));
        assert_eq!(
            RecordError::NoContentType.alert().name(),
            "unexpected_message"
        );

        // Empty handshake content, even padded.
        let rec = s.seal(ContentType::Handshake, b"", 3).unwrap();
        assert_eq!(
            r.open(&parse(&rec)),
            Err(RecordError::EmptyFragment(ContentType::Handshake))
        );
        // Empty application data is allowed (§5.1).
        let rec = s.seal(ContentType::ApplicationData, b"", 0).unwrap();
        assert_eq!(r.open(&parse(&rec)).unwrap().content, b"");
    }

    #[test]
    fn size_limits() {
        let mut s = RecordProtector::new(AeadAlg::Aes256Gcm, &[1; 32], [0; 12]).unwrap();
        let max = vec![7u8; MAX_PLAINTEXT];
        let rec = s.seal(ContentType::ApplicationData, &max, 0).unwrap();
        assert_eq!(rec.len(), 5 + MAX_PLAINTEXT + 1 + 16);
        let mut out = vec![0xaa];
        assert_eq!(
            s.seal_into(ContentType::ApplicationData, &max, 1, &mut out),
            Err(RecordError::PlaintextTooLong)
        );
        assert_eq!(out, [0xaa], "unchanged on error");

        // A peer's record whose inner plaintext is 2^14 + 2 bytes: authentic but too long.
        let peer = RecordProtector::new(AeadAlg::Aes256Gcm, &[1; 32], [0; 12]).unwrap();
        let mut body = vec![7u8; MAX_PLAINTEXT + 1];
        body.push(23);
        let len = ((body.len() + 16) as u16).to_be_bytes();
        let header = [23, 3, 3, len[0], len[1]];
        let tag = peer
            .key
            .seal_detached(&peer.nonce(), &header, &mut body)
            .unwrap();
        body.extend_from_slice(&tag);
        let rec = OpaqueRecord {
            header,
            typ: ContentType::ApplicationData,
            version: 0x0303,
            payload: body,
        };
        let mut r = RecordProtector::new(AeadAlg::Aes256Gcm, &[1; 32], [0; 12]).unwrap();
        assert_eq!(r.open(&rec), Err(RecordError::RecordOverflow));

        let big = OpaqueRecord::new(
            ContentType::ApplicationData,
            0x0303,
            vec![0; MAX_CIPHERTEXT + 1],
        );
        assert_eq!(r.open(&big), Err(RecordError::RecordOverflow));
        let short = OpaqueRecord::new(ContentType::ApplicationData, 0x0303, vec![0; 15]);
        assert_eq!(r.open(&short), Err(RecordError::BadRecordMac));
        let hs = OpaqueRecord::new(ContentType::Handshake, 0x0303, vec![0; 20]);
        assert_eq!(
            r.open(&hs),
            Err(RecordError::UnexpectedContentType(ContentType::Handshake))
        );
    }

    /// AES-128-CCM-8's 8-byte tag through every path: sealed length, seal into a flight
    /// buffer, seal in a caller's slice, open, and the tag bytes authenticated.
    #[test]
    fn ccm8_records_carry_an_8_byte_tag() {
        let mk = || RecordProtector::new(AeadAlg::Aes128Ccm8, &[4; 16], [6; 12]).unwrap();
        let (mut s, mut r) = (mk(), mk());
        assert_eq!(s.tag_len(), 8);
        assert_eq!(s.sealed_len(2, 100), 5 + 2 + 1 + 100 + 8);
        let rec = s.seal(ContentType::ApplicationData, b"hi", 100).unwrap();
        assert_eq!(rec.len(), 5 + 2 + 1 + 100 + 8);
        assert_eq!(&rec[3..5], &((2 + 1 + 100 + 8) as u16).to_be_bytes());
        let inner = r.open(&parse(&rec)).unwrap();
        assert_eq!((&inner.content[..], inner.padding), (&b"hi"[..], 100));

        // The largest record: 2^14 of content, 8 bytes less than under GCM.
        let max = vec![7u8; MAX_PLAINTEXT];
        let rec = s.seal(ContentType::ApplicationData, &max, 0).unwrap();
        assert_eq!(rec.len(), 5 + MAX_PLAINTEXT + 1 + 8);
        assert_eq!(r.open_owned(parse(&rec)).unwrap().content, max);

        // In a caller's buffer of exactly sealed_len bytes; one byte less is refused.
        let mut buf = vec![0u8; s.sealed_len(5, 0)];
        buf[5..10].copy_from_slice(b"hello");
        let mut short = buf[..buf.len() - 1].to_vec();
        assert_eq!(
            s.seal_slice(ContentType::ApplicationData, &mut short, 5, 0),
            Err(RecordError::PlaintextTooLong)
        );
        let n = s
            .seal_slice(ContentType::ApplicationData, &mut buf, 5, 0)
            .unwrap();
        assert_eq!(n, 5 + 5 + 1 + 8);
        let (typ, len, pad) = r
            .open_slice(&buf[..5].try_into().unwrap(), &mut buf[5..n])
            .unwrap();
        assert_eq!(
            (typ, &buf[5..5 + len], pad),
            (ContentType::ApplicationData, &b"hello"[..], 0)
        );

        // Every bit of header, ciphertext and tag is authenticated: bad_record_mac.
        let rec = s.seal(ContentType::Handshake, b"finished", 0).unwrap();
        for i in 0..rec.len() * 8 {
            let mut w = rec.clone();
            w[i / 8] ^= 1 << (i % 8);
            let bad = OpaqueRecord {
                header: w[..5].try_into().unwrap(),
                typ: ContentType::ApplicationData,
                version: 0x0303,
                payload: w[5..].to_vec(),
            };
            assert_eq!(r.open(&bad), Err(RecordError::BadRecordMac), "bit {i}");
        }
        assert_eq!(r.open(&parse(&rec)).unwrap().content, b"finished");
        assert_eq!(RecordError::BadRecordMac.alert().name(), "bad_record_mac");

        // Shorter than the tag; an empty inner plaintext under a valid tag has no type.
        let short = OpaqueRecord::new(ContentType::ApplicationData, 0x0303, vec![0; 7]);
        assert_eq!(r.open(&short), Err(RecordError::BadRecordMac));
        let peer = mk();
        let header = [23, 3, 3, 0, 8];
        let tag = peer
            .key
            .seal_detached(&r.nonce(), &header, &mut [])
            .unwrap();
        let empty = OpaqueRecord {
            header,
            typ: ContentType::ApplicationData,
            version: 0x0303,
            payload: tag.to_vec(),
        };
        assert_eq!(r.open(&empty), Err(RecordError::NoContentType));
    }

    /// AES-128-CCM (16-byte tag) records: a 15-byte payload cannot hold the tag, and
    /// a record sealed under CCM-8 with the same key does not open under CCM.
    #[test]
    fn ccm_and_ccm8_records_are_distinct() {
        let mut s = RecordProtector::new(AeadAlg::Aes128Ccm, &[4; 16], [6; 12]).unwrap();
        let mut s8 = RecordProtector::new(AeadAlg::Aes128Ccm8, &[4; 16], [6; 12]).unwrap();
        let mut r = RecordProtector::new(AeadAlg::Aes128Ccm, &[4; 16], [6; 12]).unwrap();
        let rec = s.seal(ContentType::ApplicationData, b"data", 0).unwrap();
        assert_eq!(rec.len(), 5 + 4 + 1 + 16);
        let rec8 = s8.seal(ContentType::ApplicationData, b"data", 0).unwrap();
        assert_eq!(rec8.len(), 5 + 4 + 1 + 8);
        assert_eq!(r.open(&parse(&rec8)), Err(RecordError::BadRecordMac));
        assert_eq!(r.open(&parse(&rec)).unwrap().content, b"data");
        let short = OpaqueRecord::new(ContentType::ApplicationData, 0x0303, vec![0; 15]);
        assert_eq!(r.open(&short), Err(RecordError::BadRecordMac));
    }

    #[test]
    fn sequence_number_never_wraps() {
        let mut s = RecordProtector::new(AeadAlg::Aes128Gcm, &[1; 16], [0; 12]).unwrap();
        s.seq = u64::MAX;
        assert!(s.seal(ContentType::ApplicationData, b"last", 0).is_ok());
        assert_eq!(
            s.seal(ContentType::ApplicationData, b"one too many", 0),
            Err(RecordError::SeqExhausted)
        );
        assert_eq!(
            RecordProtector::new(AeadAlg::Aes128Gcm, &[1; 32], [0; 12]).map(|_| ()),
            Err(RecordError::BadKey)
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(100))]
        /// seal then open returns the content, type and padding, for every AEAD.
        #[test]
        fn seal_open_round_trip(
            content in proptest::collection::vec(proptest::num::u8::ANY, 1..600),
            padding in 0usize..300,
            typ in 21u8..=23,
            alg in 0usize..5,
        ) {
            let alg = [
                AeadAlg::Aes128Gcm,
                AeadAlg::Aes256Gcm,
                AeadAlg::ChaCha20Poly1305,
                AeadAlg::Aes128Ccm,
                AeadAlg::Aes128Ccm8,
            ][alg];
            let key = vec![0x42; alg.key_len()];
            let mut s = RecordProtector::new(alg, &key, [5; 12]).unwrap();
            let mut r = RecordProtector::new(alg, &key, [5; 12]).unwrap();
            for _ in 0..2 {
                let wire = s.seal(ContentType::from(typ), &content, padding).unwrap();
                proptest::prop_assert_eq!(wire.len(), s.sealed_len(content.len(), padding));
                let inner = r.open_owned(parse(&wire)).unwrap();
                proptest::prop_assert_eq!(inner.typ, ContentType::from(typ));
                proptest::prop_assert_eq!(&inner.content, &content);
                proptest::prop_assert_eq!(inner.padding, padding);
            }
        }
    }
}
