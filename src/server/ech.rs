//! The server's ECH glue (RFC 9849 §7): what the state machine must own around the protocol in
//! `crate::ech::server` — deciding, from our keys, whether the ClientHello to answer is
//! ClientHelloOuter or ClientHelloInner, keeping the HPKE context for the second ClientHello,
//! passing our HelloRetryRequest and ServerHello to be confirmed, mapping `EchError` to the
//! connection's error, and what is reported of it all. Parsing the offer, opening it, the
//! checks on ClientHelloInner and on the second ClientHelloOuter, retry_configs and the
//! confirmation bytes are `ech::server`'s.

use crate::crypto::aead::SuiteParams;
use crate::ech::server::{self, OuterEch};
use crate::ech::wire::HpkeSymmetricCipherSuite;
use crate::ech::{inner, EchError};
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EchEvent, EchInnerParts, EchParts, EchStatus, Epoch, Event, HandshakeEvent};
use crate::keyschedule::transcript::Transcript;
use crate::messages::enums::{ExtensionType, HandshakeType};
use crate::messages::extensions::Extension;
use crate::messages::handshake::{ClientHello, DecodeContext, HandshakeMessage, ServerHello};

use super::{Cx, EchAccepted, EchState};

impl Cx<'_> {
    /// RFC 9849 §7.1 on the first ClientHello: `ech::server::open` tries our keys. A payload
    /// no key opens is a rejection, not an error (it may be GREASE); once one opens, every
    /// later check is fatal. Returns the ClientHello to answer (ClientHelloInner when accepted).
    /// Without keys we are a server that does not implement ECH: the extension, whatever it
    /// holds, is ignored (RFC 8446 §4.2) and ClientHelloOuter answered — RFC 9849 §7's
    /// "rejecting ECH" with no retry_configs, which §7.1 asks only of a server with configs.
    pub(super) fn open_ech(
        &mut self,
        outer: ClientHello,
        encoded: Vec<u8>,
    ) -> Result<(ClientHello, Vec<u8>, EchState), Error> {
        // What is reported (the outer server_name, a keyless server's view of the offer) is
        // worked out only for a recorder.
        let observed = self.conn.ev.active();
        let outer_sni = if observed { outer.host_name() } else { None };
        let Some(e) = outer.find(ExtensionType::EncryptedClientHello) else {
            self.ech_event(EchStatus::NotOffered, None, outer_sni, None);
            return Ok((outer, encoded, EchState::NotOffered));
        };
        if self.config.ech_keys.is_empty() {
            // Reported as what it was, when it parses as an outer ECHClientHello.
            let offer = if observed { ech_offer(e).ok() } else { None };
            if let Some(offer) = &offer {
                self.ech_parts(&outer, offer, None);
            }
            let ids = offer.map(|o| (o.suite, o.config_id));
            self.ech_event(EchStatus::Rejected, ids, outer_sni, None);
            return Ok((outer, encoded, EchState::Rejected));
        }
        let offer = ech_offer(e)?;
        let body = encoded.get(4..).unwrap_or_default();
        let config = self.config;
        let watch = self.conn.observes_hpke();
        let opened = server::open(
            &config.ech_keys,
            config.ech_trial_decrypt,
            &offer,
            body,
            watch,
        )
        .map_err(ech_error)?;
        let ids = Some((offer.suite, offer.config_id));
        let Some(opened) = opened else {
            self.ech_parts(&outer, &offer, None);
            self.ech_event(EchStatus::Rejected, ids, outer_sni, None);
            return Ok((outer, encoded, EchState::Rejected));
        };
        // Once a key opened the payload, every later check is fatal (§7.1).
        let (inner, inner_bytes) = self.inner_hello(&opened.encoded_inner, body)?;
        let parts = (opened.encoded_inner.as_slice(), inner_bytes.as_slice());
        self.ech_parts(&outer, &offer, Some(parts));
        let raw = &opened.key.config.raw;
        self.conn.ech_hpke(opened.steps, &outer.random, raw);
        let inner_sni = inner.host_name();
        self.ech_event(EchStatus::Accepted, ids, outer_sni, inner_sni);
        let acc = EchAccepted {
            ctx: opened.ctx,
            suite: offer.suite,
            config_id: offer.config_id,
            inner_random: inner.random,
        };
        Ok((inner, inner_bytes, EchState::Accepted(Box::new(acc))))
    }

    /// The second ClientHello as the first decided ECH (RFC 9849 §7.1.1): opened with the
    /// first's context when it was accepted; answered as it is otherwise.
    pub(super) fn second_hello_ech(
        &mut self,
        ech: EchState,
        ch: ClientHello,
        encoded: Vec<u8>,
    ) -> Result<(ClientHello, Vec<u8>, EchState), Error> {
        Ok(match ech {
            EchState::Accepted(acc) => self.open_second_ech(acc, ch, encoded)?,
            // Rejected or not offered: the second ClientHelloOuter is answered as it is, and
            // its payload, if any, is not opened (§7.1.1). Only a server with ECH keys checks
            // the extension (see `open_ech`).
            other => {
                if let Some(e) = ch.find(ExtensionType::EncryptedClientHello) {
                    let offer = match ech_offer(e) {
                        Err(e) if !self.config.ech_keys.is_empty() => return Err(e),
                        r => r.ok(),
                    };
                    if let Some(offer) = offer {
                        self.ech_parts(&ch, &offer, None);
                    }
                }
                (ch, encoded, other)
            }
        })
    }

    /// RFC 9849 §7.1.1: after a HelloRetryRequest that accepted ECH, the second
    /// ClientHelloOuter must carry ECH (missing_extension), and `ech::server::open_second`
    /// checks it and opens it with the first context.
    fn open_second_ech(
        &mut self,
        mut acc: Box<EchAccepted>,
        outer: ClientHello,
        encoded: Vec<u8>,
    ) -> Result<(ClientHello, Vec<u8>, EchState), Error> {
        let Some(e) = outer.find(ExtensionType::EncryptedClientHello) else {
            return Err(ech_error(EchError::MissingAfterRetry));
        };
        let offer = ech_offer(e)?;
        let body = encoded.get(4..).unwrap_or_default();
        let encoded_inner =
            server::open_second(&mut acc.ctx, acc.suite, acc.config_id, &offer, body)
                .map_err(ech_error)?;
        let (inner, inner_bytes) = self.inner_hello(&encoded_inner, body)?;
        let parts = (encoded_inner.as_slice(), inner_bytes.as_slice());
        self.ech_parts(&outer, &offer, Some(parts));
        acc.inner_random = inner.random;
        Ok((inner, inner_bytes, EchState::Accepted(acc)))
    }

    /// RFC 9849 §7.2: ECH accepted, so the last 8 bytes of our ServerHello's random confirm
    /// it; `transcript` is the inner one through ClientHelloInner.
    pub(super) fn confirm_ech(
        &mut self,
        acc: &EchAccepted,
        sh: &mut ServerHello,
        transcript: &Transcript,
        suite: &SuiteParams,
    ) {
        let conn = &mut *self.conn;
        server::confirm_server_hello(
            sh,
            transcript,
            suite.hash,
            &acc.inner_random,
            |h, r, l, th| conn.ech_confirmation(h, r, l, th),
        );
    }

    /// RFC 9849 §7.2.1: ECH accepted, so our HelloRetryRequest's `encrypted_client_hello`
    /// (its last extension, eight zero bytes until now) confirms it; `transcript` is
    /// message_hash(ClientHelloInner1).
    pub(super) fn confirm_ech_retry(
        &mut self,
        acc: &EchAccepted,
        hrr: &mut ServerHello,
        transcript: &Transcript,
        suite: &SuiteParams,
    ) {
        let conn = &mut *self.conn;
        server::confirm_hello_retry(
            hrr,
            transcript,
            suite.hash,
            &acc.inner_random,
            |h, r, l, th| conn.ech_confirmation(h, r, l, th),
        );
    }

    /// ClientHelloInner from an opened EncodedClientHelloInner (§5.1), as a whole message,
    /// reported, then with `ech::server::inner_hello`'s §7.1 checks.
    fn inner_hello(
        &mut self,
        encoded_inner: &[u8],
        outer_body: &[u8],
    ) -> Result<(ClientHello, Vec<u8>), Error> {
        let bytes = inner::decode_message(encoded_inner, outer_body).map_err(ech_error)?;
        let msg = HandshakeMessage::decode(&bytes, DecodeContext { hash_len: 32 })?;
        if self.conn.observe().handshake {
            let layout = self.conn.observe().layouts.then(|| msg.layout());
            self.conn.ev.push(Event::InnerClientHello(HandshakeEvent {
                direction: self.conn.side.receiving(),
                epoch: Epoch::Plaintext,
                typ: HandshakeType::ClientHello,
                bytes: bytes.clone(),
                layout,
            }));
        }
        let ch = server::inner_hello(msg.payload).map_err(ech_error)?;
        Ok((ch, bytes))
    }

    /// Reports [`Event::EchParts`] for the extension `offer` of ClientHelloOuter `outer`: its
    /// outer parts as received, and, when a key opened it, the EncodedClientHelloInner and the
    /// ClientHelloInner message rebuilt from it. `saved` is what the rebuilt hello has beyond
    /// the encoded one's ClientHello and the legacy_session_id copied back in (§5.1).
    fn ech_parts(&mut self, outer: &ClientHello, offer: &OuterEch, opened: Option<(&[u8], &[u8])>) {
        if !self.conn.observe().handshake {
            return;
        }
        let session_id = outer.legacy_session_id.len();
        let inner = opened.and_then(|(encoded, inner)| {
            // decode() accepted it already, so this parse succeeds; if not, say nothing.
            let (end, refs) = inner::encoded_parts(encoded).ok()?;
            Some(EchInnerParts {
                encoded_inner_len: encoded.len(),
                padding: encoded.len() - end,
                inner_len: inner.len(),
                session_id,
                saved: inner.len().saturating_sub(4 + end + session_id),
                outer_extensions: refs.into_iter().map(ExtensionType::from).collect(),
            })
        });
        self.conn.ev.push(Event::EchParts(EchParts::new(
            offer.suite,
            offer.config_id,
            offer.enc.len(),
            offer.payload.len(),
            inner,
        )));
    }

    /// The ECH outcome (RFC 9849 §7.1), once the first ClientHello decided it.
    fn ech_event(
        &mut self,
        status: EchStatus,
        offer: Option<(HpkeSymmetricCipherSuite, u8)>,
        outer_sni: Option<String>,
        inner_sni: Option<String>,
    ) {
        *self.ech = Some(status);
        if !self.conn.ev.active() {
            return;
        }
        let retry_configs_sent = status == EchStatus::Rejected && !self.config.ech_keys.is_empty();
        self.conn.ev.push(Event::Ech(EchEvent {
            status,
            config_id: offer.map(|(_, id)| id),
            kdf: offer.map(|(s, _)| s.kdf_id),
            aead: offer.map(|(s, _)| s.aead_id),
            outer_sni,
            inner_sni,
            retry_configs_sent,
        }));
    }
}

/// `ech::server::outer_ech`, its errors as the connection reports them: one that does not
/// parse is the decode_error of any malformed extension (`Error::Decode`), the rest ECH's.
fn ech_offer(e: &Extension) -> Result<OuterEch, Error> {
    server::outer_ech(e).map_err(|e| match e {
        EchError::Decode(d) => d.into(),
        e => ech_error(e),
    })
}

fn ech_error(e: EchError) -> Error {
    Error::Peer(PeerMisbehaved::Ech(e))
}
