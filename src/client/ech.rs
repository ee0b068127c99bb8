//! The client's ECH glue (RFC 9849 §6): what the state machine must own around the protocol
//! in `crate::ech::client` — the randoms drawn from the connection, the HPKE context and the
//! offer kept between hellos, the hellos sent and their transcripts, and the events. Which
//! config or GREASE to offer follows the configuration here; building and sealing
//! ClientHelloOuter, GREASE's shape and the confirmation checks are `ech::client`'s. What
//! follows from the outcome is where it happens: retry_configs are read with the rest of
//! EncryptedExtensions, and a rejected ECH ends at the server's Finished with ech_required
//! (`handshake.rs`).

use crate::config::EchMode;
use crate::crypto::aead::SuiteParams;
use crate::crypto::hpke::{HpkeSink, HpkeStep};
use crate::ech::client::{self, choose, ech_extension, insert_before_psk, Chosen, EncodedInner};
use crate::ech::inner::InnerLayout;
use crate::ech::wire::EchClientHello;
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EchInnerParts, EchOfferEvent, EchOutcome, EchParts, Event, HandshakeEvent};
use crate::keyschedule::schedule::EarlySecret;
use crate::keyschedule::transcript::Transcript;
use crate::keyschedule::NoSink;
use crate::messages::enums::{ExtensionType, HandshakeType};
use crate::messages::handshake::{ClientHelloOut, OutgoingMessage, ServerHello};

use super::{Cx, EchOffer, EchStatus, Offer, OfferEch, OfferedPsk};

impl Cx<'_> {
    /// Which ECH config to offer (RFC 9849 §6.1), and whether to send GREASE instead (§6.2):
    /// configured GREASE, or a list with no usable config and `grease_fallback`. A list with
    /// none and no fallback is reported as not offered.
    pub(super) fn choose_ech(&mut self, mode: &EchMode) -> (Option<Chosen>, bool) {
        let chosen = match mode {
            EchMode::Off | EchMode::Grease => None,
            EchMode::Config {
                list,
                grease_fallback,
            } => {
                let c = choose(list);
                if c.is_none() && !grease_fallback {
                    self.ech_event(EchOutcome::NotOffered, None, None, 0);
                }
                c
            }
        };
        let grease = chosen.is_none()
            && matches!(
                mode,
                EchMode::Grease
                    | EchMode::Config {
                        grease_fallback: true,
                        ..
                    }
            );
        (chosen, grease)
    }

    /// The first ClientHello with a real ECH offer: the HPKE context set up for `chosen` (its
    /// steps reported keyed by the outer random), then ClientHelloOuter with `inner` sealed in.
    /// Returns what `finish_hello` does, and the offer the server's answer settles.
    pub(super) fn send_first_ech_hello(
        &mut self,
        chosen: Chosen,
        inner: ClientHelloOut<'_>,
        first: Transcript,
        psk: Option<&OfferedPsk>,
    ) -> Result<(Transcript, Option<EarlySecret>, bool, OfferEch), Error> {
        debug_assert!(
            first.covered().is_empty(),
            "the transcript before the first ClientHello must be empty"
        );
        let outer_random: [u8; 32] = self.conn.random();
        // RFC 9850 §4: the traffic secrets stay keyed by ClientHelloInner.random, which the
        // handshake uses if ECH is accepted (settle_ech switches to the outer one if not);
        // the ECH lines are keyed by the outer random (§5).
        let mut steps: Vec<HpkeStep> = Vec::new();
        let sink: &mut dyn HpkeSink = if self.conn.observes_hpke() {
            &mut steps
        } else {
            &mut NoSink
        };
        let (enc, context) = chosen
            .setup(self.conn.rng.as_mut(), sink)
            .map_err(|e| Error::Config(format!("ECH config: {e}")))?;
        self.conn.ech_hpke(steps, &outer_random, &chosen.config.raw);
        // §6.1.2: the outer hello's pre_shared_key is GREASE shaped like the inner one's.
        let grease_psk = psk.map(|p| {
            client::grease_psk(
                self.conn.rng.as_mut(),
                p.ticket.ticket.len(),
                p.suite.hash.output_len(),
            )
        });
        let mut offer = Box::new(EchOffer {
            chosen,
            context,
            outer_random,
            // Buffered, not hashed: only a server that rejects ECH needs this transcript
            // (§6.1.4), and then it is hashed once the ServerHello names the hash.
            outer_transcript: Transcript::new(),
            grease_psk,
            hrr_accepted: None,
            layout: InnerLayout::default(),
        });
        let (t, e, d) = self.send_ech_hello(inner, first, &mut offer, &enc, psk)?;
        Ok((t, e, d, OfferEch::Real(offer)))
    }

    /// The first ClientHello with a GREASE `encrypted_client_hello` (§6.2), kept for the
    /// second ClientHello to repeat.
    pub(super) fn send_grease_hello(
        &mut self,
        mut hello: ClientHelloOut<'_>,
        first: Transcript,
        psk: Option<&OfferedPsk>,
    ) -> Result<(Transcript, Option<EarlySecret>, bool, OfferEch), Error> {
        let ext = self.grease_ech(&hello)?;
        insert_before_psk(&mut hello, ech_extension(ext.clone()));
        let (t, e, d) = self.finish_hello(hello, first, psk)?;
        self.grease_parts(&ext);
        Ok((t, e, d, OfferEch::Grease(ext)))
    }

    /// RFC 9849 §6.1, §6.1.1: send ClientHelloOuter with `inner` sealed into it, `enc` the
    /// encapsulated key (empty in a second outer hello, §6.1.5). Returns what `finish_hello`
    /// does, for the inner hello; the outer one is added to `ech.outer_transcript`.
    pub(super) fn send_ech_hello(
        &mut self,
        mut inner: ClientHelloOut<'_>,
        mut transcript: Transcript,
        ech: &mut EchOffer,
        enc: &[u8],
        psk: Option<&OfferedPsk>,
    ) -> Result<(Transcript, Option<EarlySecret>, bool), Error> {
        let early_data_offered = inner.offers(ExtensionType::EarlyData);
        let early = self.bind_psk(&mut inner, &transcript, psk)?;
        let mut inner_msg = Vec::with_capacity(inner.message_len());
        OutgoingMessage::ClientHello(&inner).encode_into(&mut inner_msg);
        transcript.add(HandshakeType::ClientHello, &inner_msg);
        let observe = self.conn.observe();
        let EncodedInner {
            bytes: encoded,
            layout,
            outer_extensions,
        } = client::encode_inner(&inner, &inner_msg, ech.chosen.maximum_name_length)
            .map_err(|e| Error::Config(e.to_string()))?;
        ech.layout = layout;
        let inner_sizes = EchInnerParts {
            encoded_inner_len: layout.total(),
            padding: layout.name_padding + layout.round_padding,
            inner_len: inner_msg.len(),
            session_id: inner.legacy_session_id.len(),
            saved: layout.saved,
            outer_extensions,
        };
        if observe.handshake {
            let layout = observe
                .layouts
                .then(|| OutgoingMessage::ClientHello(&inner).layout());
            self.conn.ev.push(Event::InnerClientHello(HandshakeEvent {
                direction: self.conn.side.sending(),
                epoch: self.conn.write_epoch,
                typ: HandshakeType::ClientHello,
                bytes: inner_msg,
                layout,
            }));
        }
        let outer = client::seal_outer(
            &ech.chosen,
            &mut ech.context,
            ech.outer_random,
            enc,
            &inner,
            &encoded,
            ech.grease_psk.as_ref(),
        )
        .map_err(|e| Error::Config(format!("ECH seal: {e}")))?;
        let sent = self
            .conn
            .send_handshake(OutgoingMessage::ClientHello(&outer));
        ech.outer_transcript.add(HandshakeType::ClientHello, sent);
        if observe.handshake {
            self.conn.ev.push(Event::EchParts(EchParts::new(
                ech.chosen.symmetric,
                ech.chosen.config_id,
                enc.len(),
                ech.chosen.payload_len(encoded.len()),
                Some(inner_sizes),
            )));
        }
        self.early_data_budget(early_data_offered, psk);
        Ok((transcript, early, early_data_offered))
    }

    /// §6.2: a GREASE `encrypted_client_hello` for `hello`, its payload as long as a real
    /// offer's would be. Reported as the event.
    fn grease_ech(&mut self, hello: &ClientHelloOut<'_>) -> Result<Vec<u8>, Error> {
        let len = client::grease_encoded_len(hello).map_err(|e| Error::Config(e.to_string()))?;
        let g = client::grease(self.conn.rng.as_mut(), len)
            .map_err(|e| Error::Config(format!("ECH GREASE: {e}")))?;
        if let EchClientHello::Outer {
            config_id, suite, ..
        } = &g
        {
            let (id, suite) = (*config_id, *suite);
            self.ech_event(EchOutcome::Grease, Some(id), Some(suite_name(suite)), len);
        }
        Ok(g.encode())
    }

    /// Reports [`Event::EchParts`] for a GREASE extension just sent: its outer parts only, the
    /// payload being random (§6.2).
    pub(super) fn grease_parts(&mut self, ext: &[u8]) {
        if !self.conn.observe().handshake {
            return;
        }
        if let Ok(EchClientHello::Outer {
            suite,
            config_id,
            enc,
            payload,
        }) = EchClientHello::decode(ext)
        {
            self.conn.ev.push(Event::EchParts(EchParts::new(
                suite,
                config_id,
                enc.len(),
                payload.len(),
                None,
            )));
        }
    }

    /// Reports [`Event::EchOffer`] for an offer without a config (GREASE, not offered).
    fn ech_event(
        &mut self,
        outcome: EchOutcome,
        config_id: Option<u8>,
        suite: Option<String>,
        encoded_inner_len: usize,
    ) {
        *self.ech = Some(outcome);
        let name = self.config.server_name.clone();
        self.conn.ev.push(Event::EchOffer(EchOfferEvent {
            outcome,
            config_id,
            suite,
            inner_sni: None,
            outer_sni: name,
            encoded_inner_len,
            padding: 0,
            saved: 0,
            hello_retry: false,
        }));
    }

    /// RFC 9849 §6.1.5: a HelloRetryRequest to a real offer says, in its
    /// `encrypted_client_hello` (`confirmation`), whether it answers ClientHelloInner, whose
    /// transcript (through message_hash, RFC 8446 §4.4.1) and random are `inner`; the outer
    /// transcript goes on the same way, for a server that rejects.
    pub(super) fn ech_hello_retry(
        &mut self,
        ech: &mut EchOffer,
        inner: (&Transcript, &[u8; 32]),
        confirmation: Option<[u8; 8]>,
        encoded: &[u8],
        suite: &SuiteParams,
    ) -> Result<(), Error> {
        let (inner_transcript, inner_random) = inner;
        let conn = &mut *self.conn;
        let accepted = client::hrr_accepts(
            inner_transcript,
            inner_random,
            encoded,
            confirmation,
            suite.hash,
            |h, r, l, th| conn.ech_confirmation(h, r, l, th),
        );
        ech.hrr_accepted = Some(accepted);
        ech.outer_transcript
            .start_hash(suite.hash)
            .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
        ech.outer_transcript
            .replace_with_message_hash()
            .map_err(|_| PeerMisbehaved::SecondHelloRetry)?;
        ech.outer_transcript
            .add(HandshakeType::ServerHello, encoded);
        Ok(())
    }

    /// RFC 9849 §6.1.4: whether the server used ClientHelloInner, from the last 8 bytes of
    /// ServerHello.random. Accepted: the handshake goes on with the inner transcript and
    /// preferences. Rejected: with the outer transcript, and without the PSK, which only the
    /// inner hello offered (§6.1.2).
    pub(super) fn settle_ech(
        &mut self,
        offer: &mut Offer,
        sh: &ServerHello,
        encoded: &[u8],
        suite: &SuiteParams,
    ) -> Result<EchStatus, Error> {
        let e = match core::mem::replace(&mut offer.ech, OfferEch::None) {
            OfferEch::None => return Ok(EchStatus::NotOffered),
            OfferEch::Grease(_) => return Ok(EchStatus::Grease),
            OfferEch::Real(e) => e,
        };
        // §6.1.5: a HelloRetryRequest that did not confirm settled it.
        let accepted = e.hrr_accepted != Some(false) && {
            // Hashing starts in the inner transcript itself, which goes on if ECH is accepted:
            // a copy would hash the inner ClientHello twice.
            offer
                .transcript
                .start_hash(suite.hash)
                .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
            let conn = &mut *self.conn;
            let t = &offer.transcript;
            client::server_hello_accepts(t, &offer.random, encoded, suite.hash, |h, r, l, th| {
                conn.ech_confirmation(h, r, l, th)
            })?
        };
        // §6.1.5: after a HelloRetryRequest that confirmed, the ServerHello must too.
        if e.hrr_accepted == Some(true) && !accepted {
            return Err(PeerMisbehaved::EchAcceptanceWithdrawn.into());
        }
        let outcome = if accepted {
            EchOutcome::Accepted
        } else {
            EchOutcome::Rejected
        };
        *self.ech = Some(outcome);
        let l = e.layout;
        self.conn.ev.push(Event::EchOffer(EchOfferEvent {
            outcome,
            config_id: Some(e.chosen.config_id),
            suite: Some(suite_name(e.chosen.symmetric)),
            inner_sni: self.config.server_name.clone(),
            outer_sni: Some(e.chosen.public_name.clone()),
            encoded_inner_len: l.total(),
            padding: l.name_padding + l.round_padding,
            saved: l.saved,
            hello_retry: e.hrr_accepted.is_some(),
        }));
        if accepted {
            return Ok(EchStatus::Accepted);
        }
        // §6.1.2: the outer hello's PSK is GREASE; a server that selects it misbehaves.
        if sh.find(ExtensionType::PreSharedKey).is_some() {
            return Err(PeerMisbehaved::EchRejectedButResumed.into());
        }
        let EchOffer {
            chosen,
            outer_random,
            outer_transcript,
            ..
        } = *e;
        offer.random = outer_random;
        // RFC 9850 §4: without ECH the connection's secrets go by the outer random.
        self.conn.client_random = outer_random;
        offer.transcript = outer_transcript;
        offer.early_secret = None;
        offer.psk = None;
        Ok(EchStatus::Rejected {
            public_name: chosen.public_name,
            retry_configs: None,
        })
    }
}

/// `"HKDF-SHA256/AES-128-GCM"`.
fn suite_name(s: crate::ech::wire::HpkeSymmetricCipherSuite) -> String {
    format!("{}/{}", s.kdf_id, s.aead_id)
}
