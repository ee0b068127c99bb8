//! The part of a connection both sides share: bytes ↔ records ↔ handshake messages, key switches,
//! alerts and events. The client and server state machines sit on top and never touch bytes directly.
//!
//! Receive path (RFC 8446 §5): `Deframer` (records) → `RecordProtector::open` (inner plaintext) →
//! `HandshakeJoiner` (messages) → the state machine. Send path: messages are encoded straight into
//! the output buffer, behind the header of a record left open for the current epoch, and the record
//! is sealed in place when the keys change or output is taken, so one flight under one key becomes
//! as few records as the size limit allows (RFC 8448 §3 sends EncryptedExtensions..Finished in one
//! record) and its bytes are written once.

use crate::crypto::aead::SuiteParams;
use crate::crypto::aead::MAX_TAG_LEN;
use crate::crypto::random::RandomSource;
use crate::error::{Error, PeerMisbehaved};
use crate::events::{
    Epoch, Event, EventQueue, MessageView, Observe, RecordEvent, RecordView, SecretView, Side,
};
use crate::keyschedule::schedule::{SecretName, TrafficSecret};
use crate::messages::enums::{AlertDescription, AlertLevel, ContentType};
use crate::messages::handshake::{HandshakeMessage, OutgoingMessage};
use crate::record::{
    plaintext_header, sealed_len, Deframer, HandshakeJoiner, OpaqueRecord, PaddingPolicy,
    RecordError, RecordProtector, HEADER_LEN, MAX_CLIENT_HELLO, MAX_PLAINTEXT,
};

/// What sealing appends to a record's content: the inner content type byte and the AEAD tag
/// (RFC 8446 §5.2; padding aside), at its longest. Reserved up front so sealing does not grow
/// the buffer.
const RECORD_TRAILER: usize = 1 + MAX_TAG_LEN;

/// What an empty output buffer reserves when a flight starts: a server's first flight
/// (ServerHello with an X25519MLKEM768 share, EncryptedExtensions, a certificate, its
/// CertificateVerify and Finished, in two records) is about 2.5 KiB.
const FLIGHT_RESERVE: usize = 4096;

/// Consecutive records without content (empty application data, CCS) we tolerate (resource limit).
pub(crate) const MAX_EMPTY_RECORDS: u32 = 32;

/// What the record layer hands the state machine.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// One whole handshake message (header included).
    Handshake(Vec<u8>),
    /// Application data (or early data, when the read epoch is `Early`).
    AppData(Vec<u8>),
    /// An alert.
    Alert(AlertLevel, AlertDescription),
}

pub(crate) struct Conn {
    pub(crate) side: Side,
    pub(crate) ev: EventQueue,
    pub(crate) rng: Box<dyn RandomSource>,
    pub(crate) now_ms: u64,
    deframer: Deframer,
    joiner: HandshakeJoiner,
    read: Option<RecordProtector>,
    pub(crate) read_epoch: Epoch,
    write: Option<RecordProtector>,
    pub(crate) write_epoch: Epoch,
    /// Wire bytes for the caller. Handshake messages are encoded straight into it, inside a
    /// record that `flush` seals in place (see `open_record`).
    out: Vec<u8>,
    /// Where in `out` the handshake record being filled under `write_epoch` starts: a 5-byte
    /// header placeholder followed by the messages queued so far, not yet sealed. Messages of
    /// one epoch share records this way (RFC 8448 §3 sends EncryptedExtensions..Finished in one).
    open_record: Option<usize>,
    /// Record events of `out`, reported when the bytes are taken: an observer then sees records in
    /// wire order (what we received before sending comes first).
    sent_records: Vec<RecordEvent>,
    padding: PaddingPolicy,
    /// Largest plaintext per record we send (RFC 8449 limit - 1, or 2^14).
    pub(crate) max_fragment: usize,
    /// Largest TLSInnerPlaintext (content, type byte and padding) we accept in a protected record:
    /// the record_size_limit we advertised, once the peer acknowledged it (RFC 8449 §4).
    pub(crate) recv_limit: Option<usize>,
    /// legacy_record_version for plaintext records (0x0301 only for the first ClientHello, §5.1).
    pub(crate) plaintext_version: u16,
    /// ChangeCipherSpec is tolerated from the first ClientHello until the peer's Finished (§5).
    pub(crate) ccs_allowed: bool,
    /// Whether the peer's one dummy ChangeCipherSpec has arrived (§D.4).
    ccs_received: bool,
    empty_records: u32,
    /// ClientHello.random, for key-log lines.
    pub(crate) client_random: [u8; 32],
    /// Set once a fatal error happened or close_notify was received.
    pub(crate) read_closed: bool,
    pub(crate) write_closed: bool,
    pub(crate) failed: bool,
}

impl Conn {
    /// The eight ECH acceptance confirmation bytes (RFC 9849 §7.2, §7.2.1): what a server
    /// sends, what a client expects; reported when derivations are observed.
    pub(crate) fn ech_confirmation(
        &mut self,
        hash: crate::crypto::hash::HashAlg,
        inner_random: &[u8; 32],
        label: &'static str,
        transcript_hash: &[u8],
    ) -> [u8; 8] {
        let c = crate::ech::confirm::confirmation(hash, inner_random, label, transcript_hash);
        if self.observe().derivations {
            self.ev.push(Event::EchConfirmation {
                label,
                inner_random: inner_random.to_vec(),
                transcript_hash: transcript_hash.to_vec(),
                confirmation: c.to_vec(),
            });
        }
        c
    }

    pub(crate) fn new(
        side: Side,
        observe: Observe,
        rng: Box<dyn RandomSource>,
        padding: PaddingPolicy,
        max_handshake_message: usize,
    ) -> Self {
        let mut joiner = HandshakeJoiner::new(max_handshake_message);
        if side == Side::Server {
            // Any valid ClientHello is accepted, however long (§4.1.2 allows ~128 KiB).
            joiner.set_client_hello_limit(Some(MAX_CLIENT_HELLO.max(max_handshake_message)));
        }
        Conn {
            side,
            ev: EventQueue::new(observe),
            rng,
            now_ms: 0,
            deframer: Deframer::new(),
            joiner,
            read: None,
            read_epoch: Epoch::Plaintext,
            write: None,
            write_epoch: Epoch::Plaintext,
            out: Vec::new(),
            open_record: None,
            sent_records: Vec::new(),
            padding,
            max_fragment: MAX_PLAINTEXT,
            recv_limit: None,
            plaintext_version: 0x0303,
            ccs_allowed: false,
            ccs_received: false,
            empty_records: 0,
            client_random: [0; 32],
            read_closed: false,
            write_closed: false,
            failed: false,
        }
    }

    pub(crate) fn observe(&self) -> Observe {
        self.ev.observe
    }

    // ---------------------------------------------------------------- sending

    /// Queue a handshake message under the current write keys and return its bytes (for the
    /// transcript). It is encoded straight into the output buffer, at the end of the record
    /// being filled for this epoch (opened here if there is none), which `flush` seals in
    /// place: no message value and no copy per message.
    ///
    /// The message is encoded once. A flight starts with room for a few KiB, which holds a
    /// whole ClientHello or server flight with an ECDSA or RSA chain; a message that does not fit
    /// (an ML-DSA chain) grows the buffer as it is written (by doubling, copying what is queued).
    pub(crate) fn send_handshake<'m>(&mut self, msg: impl Into<OutgoingMessage<'m>>) -> &[u8] {
        let msg = msg.into();
        if self.open_record.is_none() {
            self.open_record = Some(self.out.len());
            // The first record of a flight: the messages and records that follow it (a
            // server's whole first flight) usually fit in a few KiB, so reserve that much at
            // once rather than grow the buffer message by message.
            if self.out.is_empty() {
                self.out.reserve(FLIGHT_RESERVE);
            }
            self.out.extend_from_slice(&[0; HEADER_LEN]); // the header, written by `flush`
        }
        let at = self.out.len();
        msg.encode_into(&mut self.out);
        // Room for what sealing appends, so sealing does not grow the buffer.
        self.out.reserve(RECORD_TRAILER);
        if self.ev.observe.handshake {
            let layout = self.ev.observe.layouts.then(|| msg.layout());
            self.ev.handshake(MessageView {
                direction: self.side.sending(),
                epoch: self.write_epoch,
                typ: msg.typ(),
                bytes: &self.out[at..],
                layout,
            });
        }
        &self.out[at..]
    }

    /// Seal the handshake record being filled, if any, under the current write keys. Queued
    /// messages longer than one record may carry (`max_fragment`: 2^14, or the peer's
    /// record_size_limit) are cut into several records: the only case where they are copied.
    pub(crate) fn flush(&mut self) -> Result<(), Error> {
        let Some(start) = self.open_record.take() else {
            return Ok(());
        };
        if self.out.len() - start - HEADER_LEN <= self.max_fragment {
            return self.finish_record(start, ContentType::Handshake);
        }
        let queued = self.out.split_off(start + HEADER_LEN);
        self.out.truncate(start);
        for chunk in queued.chunks(self.max_fragment) {
            self.write_record(ContentType::Handshake, chunk)?;
        }
        Ok(())
    }

    /// Switch the write keys; what was queued goes out under the old ones (keys change on a record
    /// boundary, §5.1).
    pub(crate) fn set_write_keys(
        &mut self,
        epoch: Epoch,
        suite: &SuiteParams,
        secret: &TrafficSecret,
    ) -> Result<(), Error> {
        self.flush()?;
        self.log_secret(secret.name(), secret.as_bytes());
        let (key, iv) = secret.keys(suite.aead, &mut self.ev);
        self.write = Some(RecordProtector::new(suite.aead, &key, iv)?);
        self.write_epoch = epoch;
        Ok(())
    }

    /// Back to plaintext records (a client whose 0-RTT was cut short by a HelloRetryRequest sends
    /// its second ClientHello in the clear, §4.1.2).
    pub(crate) fn reset_write_to_plaintext(&mut self) -> Result<(), Error> {
        self.flush()?;
        self.write = None;
        self.write_epoch = Epoch::Plaintext;
        Ok(())
    }

    /// Switch the read keys. Bytes of the current record left after the message that triggered the
    /// change are a protocol violation (§5.1).
    pub(crate) fn set_read_keys(
        &mut self,
        epoch: Epoch,
        suite: &SuiteParams,
        secret: &TrafficSecret,
    ) -> Result<(), Error> {
        if !self.joiner.is_empty() {
            return Err(PeerMisbehaved::KeyChangeNotOnRecordBoundary.into());
        }
        // Under keys no ClientHello is expected: back to the limit for every message.
        self.joiner.set_client_hello_limit(None);
        self.log_secret(secret.name(), secret.as_bytes());
        let (key, iv) = secret.keys(suite.aead, &mut self.ev);
        self.read = Some(RecordProtector::new(suite.aead, &key, iv)?);
        self.read_epoch = epoch;
        Ok(())
    }

    /// Report a named secret (the NSS key log is built from these).
    pub(crate) fn log_secret(&mut self, name: SecretName, secret: &[u8]) {
        let random = self.client_random;
        self.log_secret_by(name, &random, secret);
    }

    /// Report a named secret keyed by `client_random`.
    fn log_secret_by(&mut self, name: SecretName, client_random: &[u8; 32], secret: &[u8]) {
        if !self.ev.observe.secrets {
            return;
        }
        if let Some(label) = name.nss_label() {
            self.ev.secret(SecretView {
                name,
                nss_label: label,
                client_random,
                secret,
            });
        }
    }

    /// Whether HPKE's steps should be collected: for their events or for the key log's ECH
    /// lines.
    pub(crate) fn observes_hpke(&self) -> bool {
        let o = self.ev.observe;
        o.derivations || o.secrets
    }

    /// Reports what setting up ECH's HPKE context derived, on either side: the steps (with
    /// derivations), and `ECH_SECRET` (the KEM shared secret) and `ECH_CONFIG` keyed by
    /// ClientHelloOuter.random (RFC 9850 §5).
    pub(crate) fn ech_hpke(
        &mut self,
        steps: Vec<crate::crypto::hpke::HpkeStep>,
        outer_random: &[u8; 32],
        config: &[u8],
    ) {
        let shared = steps
            .iter()
            .rev()
            .find(|s| s.name == crate::crypto::hpke::HpkeValue::SharedSecret)
            .map(|s| s.output.clone());
        if self.ev.observe.derivations {
            for s in steps {
                self.ev.push(Event::Hpke(s));
            }
        }
        if let Some(shared) = shared {
            self.log_secret_by(SecretName::EchSecret, outer_random, &shared);
        }
        self.log_secret_by(SecretName::EchConfig, outer_random, config);
    }

    /// The dummy ChangeCipherSpec of compatibility mode (§D.4): always plaintext.
    pub(crate) fn send_ccs(&mut self) -> Result<(), Error> {
        self.flush()?;
        let start = self.out.len();
        let typ = ContentType::ChangeCipherSpec;
        self.out
            .extend_from_slice(&plaintext_header(typ, 0x0303, 1));
        self.out.push(1);
        if self.ev.observe.records {
            let (header, wire_len) = (header_of(&self.out[start..]), self.out.len() - start);
            self.record_event_sent(header, wire_len, typ, 1, 0, 0, None, vec![1]);
        }
        Ok(())
    }

    pub(crate) fn send_alert(&mut self, level: AlertLevel, desc: AlertDescription) {
        if self.write_closed {
            return;
        }
        // A record that cannot be sealed (sequence exhausted) leaves nothing else to do.
        let _ = self.flush().and_then(|_| {
            self.write_record(ContentType::Alert, &[level.to_repr(), desc.to_repr()])
        });
        self.ev.push(Event::Alert {
            direction: self.side.sending(),
            level,
            description: desc,
        });
        if desc == AlertDescription::CloseNotify || level == AlertLevel::Fatal {
            self.write_closed = true;
        }
    }

    pub(crate) fn send_app_data(&mut self, data: &[u8]) -> Result<(), Error> {
        self.flush()?;
        for chunk in data.chunks(self.max_fragment) {
            self.write_record(ContentType::ApplicationData, chunk)?;
        }
        Ok(())
    }

    fn write_record(&mut self, typ: ContentType, content: &[u8]) -> Result<(), Error> {
        let start = self.out.len();
        self.out
            .reserve(HEADER_LEN + content.len() + RECORD_TRAILER);
        self.out.extend_from_slice(&[0; HEADER_LEN]);
        self.out.extend_from_slice(content);
        self.finish_record(start, typ)
    }

    /// Turns `out[start..]`, a header placeholder and the content, into a record: with no write
    /// keys, a TLSPlaintext header (§5.1); with keys, sealed in place (§5.2).
    fn finish_record(&mut self, start: usize, typ: ContentType) -> Result<(), Error> {
        let plaintext_len = self.out.len() - start - HEADER_LEN;
        // The content is gone once sealed: copy it only for an observer.
        let content = self
            .ev
            .observe
            .records
            .then(|| self.out[start + HEADER_LEN..].to_vec());
        let padding = self.padding_for(plaintext_len);
        let (padding, tag, seq) = match self.write.as_mut() {
            None => {
                let header = plaintext_header(typ, self.plaintext_version, plaintext_len);
                self.out[start..start + HEADER_LEN].copy_from_slice(&header);
                (0, 0, None)
            }
            Some(p) => {
                let seq = p.seq();
                p.seal_in_place(typ, &mut self.out, start, padding)?;
                (padding, p.tag_len(), Some(seq))
            }
        };
        if let Some(content) = content {
            let (header, wire_len) = (header_of(&self.out[start..]), self.out.len() - start);
            self.record_event_sent(
                header,
                wire_len,
                typ,
                plaintext_len,
                padding,
                tag,
                seq,
                content,
            );
        }
        Ok(())
    }

    /// Padding for a record of `len` bytes of content. The policy never pushes the inner
    /// plaintext past 2^14 + 1 (§5.4), nor past the peer's record_size_limit, which counts
    /// padding (RFC 8449 §4).
    fn padding_for(&self, len: usize) -> usize {
        self.padding
            .padding_for(len)
            .min(self.max_fragment.saturating_sub(len))
    }

    /// Bytes a protected record carrying `len` bytes of application data takes on the wire,
    /// with the write key's tag (8 bytes under AES-128-CCM-8); before there is one, with the
    /// longest tag, so a buffer of that size is always enough.
    pub(crate) fn sealed_len(&self, len: usize) -> usize {
        let tag = self.write.as_ref().map_or(MAX_TAG_LEN, |p| p.tag_len());
        sealed_len(len, self.padding_for(len), tag)
    }

    /// Seals one application data record in the caller's buffer: `buf[HEADER_LEN..][..len]`
    /// holds the plaintext; on success `buf[..n]` is the record. No copy, no allocation.
    pub(crate) fn seal_app_in_place(&mut self, buf: &mut [u8], len: usize) -> Result<usize, Error> {
        if self.failed || self.write_closed {
            return Err(Error::Closed);
        }
        if !matches!(self.write_epoch, Epoch::Application(_)) {
            return Err(Error::InvalidState(
                "sealing in place needs the application traffic keys (handshake not complete)",
            ));
        }
        // Records already queued must reach the wire first.
        if self.has_output() {
            return Err(Error::InvalidState(
                "output is queued: take_output before sealing in place",
            ));
        }
        if len > self.max_fragment {
            return Err(Error::InvalidState(
                "more plaintext than one record carries",
            ));
        }
        let padding = self.padding_for(len);
        let Some(p) = self.write.as_ref() else {
            return Err(Error::InvalidState("no write keys"));
        };
        if buf.len() < p.sealed_len(len, padding) {
            return Err(Error::InvalidState(
                "buffer too small for the sealed record",
            ));
        }
        let content = self
            .ev
            .observe
            .records
            .then(|| buf[HEADER_LEN..HEADER_LEN + len].to_vec());
        let Some(p) = self.write.as_mut() else {
            return Err(Error::InvalidState("no write keys"));
        };
        let (seq, tag) = (p.seq(), p.tag_len());
        let n = p.seal_slice(ContentType::ApplicationData, buf, len, padding)?;
        if let Some(content) = content {
            let typ = ContentType::ApplicationData;
            let header = header_of(buf);
            self.record_event_sent(header, n, typ, len, padding, tag, Some(seq), content);
            self.release_sent_events();
        }
        Ok(n)
    }

    /// Keep a sealed record's event until its bytes are taken: `header` and `wire_len`
    /// describe the record (its ciphertext is not copied), `content` is its plaintext.
    #[allow(clippy::too_many_arguments)]
    fn record_event_sent(
        &mut self,
        header: [u8; HEADER_LEN],
        wire_len: usize,
        inner: ContentType,
        plaintext_len: usize,
        padding_len: usize,
        tag_len: usize,
        seq: Option<u64>,
        content: Vec<u8>,
    ) {
        if !self.ev.observe.records {
            return;
        }
        let direction = self.side.sending();
        self.sent_records.push(RecordEvent {
            direction,
            // CCS and alerts sent before keys are plaintext whatever the current epoch.
            epoch: if seq.is_some() {
                self.write_epoch
            } else {
                Epoch::Plaintext
            },
            time_ms: self.now_ms,
            header: header.to_vec(),
            wire_type: ContentType::from(header[0]),
            inner_type: inner,
            wire_len,
            payload_len: wire_len - HEADER_LEN,
            plaintext_len,
            padding_len,
            tag_len,
            seq,
            content,
        });
    }

    /// Everything queued so far, as wire bytes.
    pub(crate) fn take_output(&mut self) -> Vec<u8> {
        if let Err(e) = self.flush() {
            self.fail(&e);
        }
        self.release_sent_events();
        core::mem::take(&mut self.out)
    }

    /// Reports the records whose bytes the caller now has, stamped with the current time.
    fn release_sent_events(&mut self) {
        let now = self.now_ms;
        for mut r in self.sent_records.drain(..) {
            r.time_ms = now;
            self.ev.record_owned(r);
        }
    }

    pub(crate) fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    // -------------------------------------------------------------- receiving

    /// The next complete item, or `None` when more bytes are needed. Records are read from
    /// `input` one at a time (what is left of it stays there), so none is queued.
    ///
    /// `early_skip`: for a server that rejected 0-RTT, the number of early-data bytes it may still
    /// silently drop when a record does not decrypt under the handshake keys (§4.2.10).
    /// Whether a handshake message already taken waits to be handled (so `next_incoming` has
    /// an item without reading input).
    pub(crate) fn has_pending_message(&self) -> bool {
        self.joiner.has_message()
    }

    pub(crate) fn next_incoming(
        &mut self,
        input: &mut &[u8],
        early_skip: &mut Option<usize>,
    ) -> Result<Option<Incoming>, Error> {
        loop {
            if let Some((msg, _)) = self.joiner.next_message() {
                return Ok(Some(Incoming::Handshake(msg)));
            }
            let rec = match self.deframer.read(input)? {
                Some(r) => r,
                None => return Ok(None),
            };
            if let Some(item) = self.process_record(rec, early_skip)? {
                return Ok(Some(item));
            }
        }
    }

    fn process_record(
        &mut self,
        rec: OpaqueRecord,
        early_skip: &mut Option<usize>,
    ) -> Result<Option<Incoming>, Error> {
        // §5: an unprotected CCS of one byte 0x01 is dropped during the handshake.
        if rec.typ == ContentType::ChangeCipherSpec {
            self.record_event_received(
                &rec.header,
                rec.payload.len(),
                ContentType::ChangeCipherSpec,
                &rec.payload,
                0,
                0,
                None,
            );
            if !self.ccs_allowed || rec.payload != [1] {
                return Err(PeerMisbehaved::BadChangeCipherSpec.into());
            }
            if !self.joiner.is_empty() {
                // §5.1: not even the dummy CCS may interleave with a handshake message.
                return Err(PeerMisbehaved::UnexpectedContentType(rec.typ).into());
            }
            // §D.4: compatibility mode sends exactly one, "either immediately after its first
            // ClientHello or immediately before its second flight" (a server: after its first
            // handshake message); §5's "drop it" covers that one, not a stream of them.
            if self.ccs_received {
                return Err(PeerMisbehaved::SecondChangeCipherSpec.into());
            }
            self.ccs_received = true;
            self.count_empty()?;
            return Ok(None);
        }
        let (inner, content) = match self.read.as_mut() {
            Some(p) if rec.typ == ContentType::ApplicationData => {
                let seq = p.seq();
                let n = rec.payload.len();
                // Decrypted in the record's own buffer, observed or not: an observer is shown
                // the header and the plaintext, so nothing else is kept.
                let header = rec.header;
                match p.open_owned(rec) {
                    Ok(inner) => {
                        // §4.2.10: skipping ends at the first record that opens under the
                        // handshake keys; from then on a record that fails is bad_record_mac.
                        *early_skip = None;
                        let tag = p.tag_len();
                        self.check_recv_limit(inner.content.len() + 1 + inner.padding)?;
                        self.record_event_received(
                            &header,
                            n,
                            inner.typ,
                            &inner.content,
                            inner.padding,
                            tag,
                            Some(seq),
                        );
                        (inner.typ, inner.content)
                    }
                    Err(e) => {
                        // Rejected 0-RTT: skip undecryptable records within the budget. Only
                        // those: a record that opened but is malformed is the peer's error.
                        if let (Some(budget), RecordError::BadRecordMac) = (early_skip.as_mut(), e)
                        {
                            // `open` leaves the sequence number alone on failure.
                            if n <= *budget {
                                *budget -= n;
                                return Ok(None);
                            }
                            return Err(PeerMisbehaved::TooMuchEarlyData.into());
                        }
                        return Err(e.into());
                    }
                }
            }
            // A peer that fails before it has our keys sends its alert in plaintext; report it.
            Some(_) if rec.typ == ContentType::Alert && self.read_epoch != Epoch::Plaintext => {
                if self.read_epoch != Epoch::Handshake && self.read_epoch != Epoch::Early {
                    return Err(PeerMisbehaved::UnexpectedContentType(rec.typ).into());
                }
                let (header, len) = (rec.header, rec.payload.len());
                self.record_event_received(&header, len, rec.typ, &rec.payload, 0, 0, None);
                (rec.typ, rec.payload)
            }
            Some(_) => return Err(PeerMisbehaved::UnexpectedContentType(rec.typ).into()),
            None => {
                match rec.typ {
                    ContentType::Handshake | ContentType::Alert => {}
                    ContentType::ApplicationData => {
                        // After a HelloRetryRequest the client's 0-RTT records still arrive
                        // before ClientHello2; the server skips them (§4.2.10).
                        if let Some(budget) = early_skip.as_mut() {
                            if rec.payload.len() <= *budget {
                                *budget -= rec.payload.len();
                                return Ok(None);
                            }
                            return Err(PeerMisbehaved::TooMuchEarlyData.into());
                        }
                        return Err(PeerMisbehaved::ApplicationDataBeforeHandshake.into());
                    }
                    other => return Err(PeerMisbehaved::UnexpectedContentType(other).into()),
                }
                let (header, len) = (rec.header, rec.payload.len());
                self.record_event_received(&header, len, rec.typ, &rec.payload, 0, 0, None);
                (rec.typ, rec.payload)
            }
        };
        if !self.check_inner(inner, content.len())? {
            return Ok(None);
        }
        self.deliver_inner(inner, content)
    }

    /// The rules for a record's inner content that do not depend on where it lies (§5.1,
    /// §5.4). `Ok(false)`: nothing to deliver (an empty application data record).
    fn check_inner(&mut self, typ: ContentType, len: usize) -> Result<bool, Error> {
        match typ {
            ContentType::Handshake => {
                if len == 0 {
                    return Err(PeerMisbehaved::EmptyRecord.into());
                }
                self.empty_records = 0;
            }
            ContentType::Alert | ContentType::ApplicationData if !self.joiner.is_empty() => {
                // §5.1: handshake messages must not be interleaved with other record types.
                return Err(PeerMisbehaved::UnexpectedContentType(typ).into());
            }
            ContentType::Alert if len == 0 => return Err(PeerMisbehaved::EmptyRecord.into()),
            ContentType::Alert => {}
            ContentType::ApplicationData if len == 0 => {
                // Premature even when empty: handshake keys never protect application data.
                if self.read_epoch == Epoch::Handshake {
                    return Err(PeerMisbehaved::ApplicationDataBeforeHandshake.into());
                }
                self.count_empty()?;
                return Ok(false);
            }
            ContentType::ApplicationData => self.empty_records = 0,
            other => return Err(PeerMisbehaved::UnexpectedContentType(other).into()),
        }
        Ok(true)
    }

    /// Hands checked inner content on: handshake bytes to the joiner, alerts and application
    /// data to the caller.
    fn deliver_inner(
        &mut self,
        typ: ContentType,
        content: Vec<u8>,
    ) -> Result<Option<Incoming>, Error> {
        match typ {
            ContentType::Handshake => {
                self.joiner.push_owned(content)?;
                Ok(None)
            }
            ContentType::Alert => {
                let alert = crate::messages::Alert::decode(&content)?;
                Ok(Some(Incoming::Alert(alert.level, alert.description)))
            }
            ContentType::ApplicationData => Ok(Some(Incoming::AppData(content))),
            other => Err(PeerMisbehaved::UnexpectedContentType(other).into()),
        }
    }

    /// RFC 8449 §4: "A TLS endpoint that receives a record larger than its advertised limit
    /// MUST generate a fatal "record_overflow" alert". The limit counts the whole
    /// TLSInnerPlaintext; 0-RTT records were sent before the limit was negotiated.
    fn check_recv_limit(&self, inner_len: usize) -> Result<(), Error> {
        match self.recv_limit {
            Some(limit) if inner_len > limit && self.read_epoch != Epoch::Early => {
                Err(RecordError::RecordOverflow.into())
            }
            _ => Ok(()),
        }
    }

    /// Whether the complete record at the start of `rec` can be opened where it lies: a
    /// protected record under application traffic keys (the bulk of a connection).
    pub(crate) fn opens_in_place(&self, rec: &[u8]) -> bool {
        rec[0] == ContentType::ApplicationData.to_repr()
            && self.read.is_some()
            && matches!(self.read_epoch, Epoch::Application(_))
    }

    /// Opens the complete protected record `rec` (header included) in place: application data
    /// comes back as the range of `rec` that now holds it, anything else as `receive` would
    /// produce it (its content copied out).
    pub(crate) fn open_record_in_place(&mut self, rec: &mut [u8]) -> Result<InPlace, Error> {
        let h = header_of(rec);
        let payload = &mut rec[HEADER_LEN..];
        let payload_len = payload.len();
        let Some(p) = self.read.as_mut() else {
            return Err(Error::InvalidState("no read keys"));
        };
        let (seq, tag) = (p.seq(), p.tag_len());
        let (typ, len, padding) = p.open_slice(&h, payload)?;
        self.check_recv_limit(len + 1 + padding)?;
        self.record_event_received(
            &h,
            payload_len,
            typ,
            &payload[..len],
            padding,
            tag,
            Some(seq),
        );
        if !self.check_inner(typ, len)? {
            return Ok(InPlace::Other(None));
        }
        if typ == ContentType::ApplicationData {
            return Ok(InPlace::AppData(HEADER_LEN..HEADER_LEN + len));
        }
        self.deliver_inner(typ, payload[..len].to_vec())
            .map(InPlace::Other)
    }

    fn count_empty(&mut self) -> Result<(), Error> {
        self.empty_records += 1;
        if self.empty_records > MAX_EMPTY_RECORDS {
            return Err(PeerMisbehaved::TooManyEmptyRecords.into());
        }
        Ok(())
    }

    /// Report a received record, borrowed: `header` as received, `payload_len` the bytes after
    /// it, `content` the opened plaintext.
    #[allow(clippy::too_many_arguments)]
    fn record_event_received(
        &mut self,
        header: &[u8; HEADER_LEN],
        payload_len: usize,
        inner: ContentType,
        content: &[u8],
        padding_len: usize,
        tag_len: usize,
        seq: Option<u64>,
    ) {
        if !self.ev.observe.records {
            return;
        }
        self.ev.record(RecordView {
            direction: self.side.receiving(),
            // A CCS or a plaintext alert arriving after the keys changed is still plaintext.
            epoch: if seq.is_some() {
                self.read_epoch
            } else {
                Epoch::Plaintext
            },
            time_ms: self.now_ms,
            header,
            wire_type: ContentType::from(header[0]),
            inner_type: inner,
            payload_len,
            plaintext: content,
            padding_len,
            tag_len,
            seq,
        });
    }

    /// Report a received handshake message.
    pub(crate) fn handshake_received(&mut self, msg: &HandshakeMessage) {
        if self.ev.observe.handshake {
            let layout = self.ev.observe.layouts.then(|| msg.layout());
            self.ev.handshake(MessageView {
                direction: self.side.receiving(),
                epoch: self.read_epoch,
                typ: msg.typ(),
                bytes: &msg.encoded,
                layout,
            });
        }
    }

    /// Fail the connection: send the alert `err` calls for (under the current keys) and stop.
    pub(crate) fn fail(&mut self, err: &Error) {
        if self.failed {
            return;
        }
        self.failed = true;
        // The peer always learns why (§6.2): a failure with no alert of its own is one of our
        // invariants not holding (Error::InvalidState inside a call that was taking input),
        // "an internal error unrelated to the peer", so internal_error. A received alert is not
        // answered, and a connection already closed sends nothing.
        let desc = match err {
            Error::AlertReceived(_) | Error::Closed => None,
            e => Some(e.alert().unwrap_or(AlertDescription::InternalError)),
        };
        if let Some(desc) = desc {
            self.send_alert(AlertLevel::Fatal, desc);
        }
        self.read_closed = true;
        self.ev.push(Event::Closed);
    }

    /// A received alert (§6): close_notify ends reading (`Ok(false)`), user_canceled is noted,
    /// every other alert is fatal whatever its level says (§6.2).
    pub(crate) fn alert_received(
        &mut self,
        level: AlertLevel,
        desc: AlertDescription,
    ) -> Result<bool, Error> {
        self.ev.push(Event::Alert {
            direction: self.side.receiving(),
            level,
            description: desc,
        });
        match desc {
            AlertDescription::CloseNotify => {
                // §6.1: no more data will come, and anything that does is ignored.
                self.read_closed = true;
                self.ev.push(Event::Closed);
                self.deframer = Deframer::new();
                Ok(false)
            }
            AlertDescription::UserCanceled => Ok(true),
            other => {
                self.failed = true;
                self.read_closed = true;
                self.write_closed = true;
                self.ev.push(Event::Closed);
                Err(Error::AlertReceived(other))
            }
        }
    }

    /// How many more bytes the record a `receive` call left half-read needs, if any.
    pub(crate) fn partial_record_needs(&self) -> Option<usize> {
        self.deframer.partial_needs()
    }

    /// Draw `N` random bytes from the injected source.
    pub(crate) fn random<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        self.rng.fill(&mut b);
        b
    }
}

/// The first `HEADER_LEN` bytes of `rec` (which has at least that many).
pub(crate) fn header_of(rec: &[u8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(&rec[..HEADER_LEN]);
    h
}

/// What `open_record_in_place` found in one record.
pub(crate) enum InPlace {
    /// Application data, now plaintext at this range of the record.
    AppData(core::ops::Range<usize>),
    /// Anything else, as the buffered path delivers it.
    Other(Option<Incoming>),
}
