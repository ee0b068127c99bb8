//! The client half of ECH (RFC 9849 §6): which config to offer or whether to send GREASE,
//! sealing ClientHelloInner into ClientHelloOuter, and reading the confirmation in the server's
//! HelloRetryRequest or ServerHello that says which hello the handshake goes on with. What
//! follows from the outcome is where it happens: retry_configs are read with the rest of
//! EncryptedExtensions, and a rejected ECH ends at the server's Finished with ech_required
//! (`handshake.rs`).

use std::borrow::Cow;

use crate::config::EchMode;
use crate::crypto::aead::SuiteParams;
use crate::crypto::hpke;
use crate::crypto::hpke::{HpkeSink, HpkeStep};
use crate::ech::client::{choose, compressible_run, Chosen};
use crate::ech::confirm;
use crate::ech::confirm::{ACCEPT_LABEL, HRR_ACCEPT_LABEL};
use crate::ech::inner::InnerLayout;
use crate::ech::wire::EchClientHello;
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EchInnerParts, EchOfferEvent, EchOutcome, EchParts, Event, HandshakeEvent};
use crate::keyschedule::schedule::EarlySecret;
use crate::keyschedule::transcript::Transcript;
use crate::keyschedule::NoSink;
use crate::messages::codec::DecodeError;
use crate::messages::enums::{ExtensionType, HandshakeType};
use crate::messages::extensions::{Extension, OutgoingExtension};
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
        let (enc, context) = hpke::setup_base_s(
            chosen.suite,
            &chosen.public_key,
            &chosen.info(),
            self.conn.rng.as_mut(),
            sink,
        )
        .map_err(|e| Error::Config(format!("ECH config: {e}")))?;
        self.conn.ech_hpke(steps, &outer_random, &chosen.config.raw);
        let grease_psk = psk.map(|p| self.grease_psk(p));
        let mut offer = Box::new(EchOffer {
            chosen,
            context,
            outer_random,
            outer_transcript: first.clone(),
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
        let types: Vec<ExtensionType> = inner.extensions.iter().map(|e| e.typ()).collect();
        let run = compressible_run(&types);
        let compress: Vec<u16> = run.iter().map(|t| t.to_repr()).collect();
        let (encoded, layout) =
            crate::ech::inner::encode(&inner_msg[4..], &compress, ech.chosen.maximum_name_length)
                .map_err(|e| Error::Config(e.to_string()))?;
        ech.layout = layout;
        let inner_sizes = EchInnerParts {
            encoded_inner_len: layout.total(),
            padding: layout.name_padding + layout.round_padding,
            inner_len: inner_msg.len(),
            session_id: inner.legacy_session_id.len(),
            saved: layout.saved,
            outer_extensions: run,
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
        // The outer hello: the public name, what it must share with the inner one (every
        // compressed extension, in the same order, §5.1; and key_share, supported_versions,
        // a cookie and psk_key_exchange_modes as a server that rejects ECH needs them,
        // §6.1), early_data when the inner has it (§6.1), the ECH extension, and the
        // GREASE pre_shared_key last (§6.1.2, RFC 8446 §4.2.11). ALPN and the rest stay inside.
        let public_name = ech.chosen.public_name.clone();
        let mut exts: Vec<OutgoingExtension<'_>> = Vec::with_capacity(10);
        exts.push(OutgoingExtension::HostName(public_name.as_bytes()));
        exts.extend(
            inner
                .extensions
                .iter()
                .filter(|e| OUTER_COPIES.contains(&e.typ()))
                .cloned(),
        );
        let payload_len = encoded.len() + ech.chosen.suite.aead.tag_len();
        let outer_ext = |payload: Vec<u8>| EchClientHello::Outer {
            suite: ech.chosen.symmetric,
            config_id: ech.chosen.config_id,
            enc: enc.to_vec(),
            payload,
        };
        exts.push(ech_extension(outer_ext(vec![0; payload_len]).encode()));
        let ech_at = exts.len() - 1;
        if let Some(psk) = &ech.grease_psk {
            exts.push(OutgoingExtension::Ext(Cow::Borrowed(psk)));
        }
        let mut outer = ClientHelloOut {
            legacy_version: 0x0303,
            random: ech.outer_random,
            legacy_session_id: inner.legacy_session_id,
            cipher_suites: inner.cipher_suites,
            legacy_compression_methods: &[0],
            extensions: exts,
        };
        // With the payload all zeros, the serialized outer hello is ClientHelloOuterAAD (§5.2).
        let mut aad = Vec::with_capacity(outer.message_len());
        OutgoingMessage::ClientHello(&outer).encode_into(&mut aad);
        let sealed = ech
            .context
            .seal(&aad[4..], &encoded)
            .map_err(|e| Error::Config(format!("ECH seal: {e}")))?;
        // Same length, so no length prefix changes (§6.1.1).
        outer.extensions[ech_at] = ech_extension(outer_ext(sealed).encode());
        let sent = self
            .conn
            .send_handshake(OutgoingMessage::ClientHello(&outer));
        ech.outer_transcript.add(HandshakeType::ClientHello, sent);
        if observe.handshake {
            self.conn.ev.push(Event::EchParts(EchParts::new(
                ech.chosen.symmetric,
                ech.chosen.config_id,
                enc.len(),
                payload_len,
                Some(inner_sizes),
            )));
        }
        self.early_data_budget(early_data_offered, psk);
        Ok((transcript, early, early_data_offered))
    }

    /// §6.1.2: a pre_shared_key for the outer hello shaped like the inner one's, all random:
    /// identity of the same length, a random obfuscated_ticket_age, a binder of the same length.
    fn grease_psk(&mut self, psk: &OfferedPsk) -> Extension {
        let mut identity = vec![0u8; psk.ticket.ticket.len()];
        let mut binder = vec![0u8; psk.suite.hash.output_len()];
        self.conn.rng.fill(&mut identity);
        let age = u32::from_be_bytes(self.conn.random());
        self.conn.rng.fill(&mut binder);
        Extension::PreSharedKeyClient(crate::messages::extensions::OfferedPsks {
            identities: vec![crate::messages::extensions::PskIdentity {
                identity,
                obfuscated_ticket_age: age,
            }],
            binders: vec![binder],
        })
    }

    /// §6.2: a GREASE `encrypted_client_hello` for `hello`, its payload as long as a real
    /// offer's would be: `hello` as the inner one (plus the 5-byte inner extension), compressed
    /// alike, padded with maximum_name_length 0 (§6.1.3), plus the tag. Reported as the event.
    fn grease_ech(&mut self, hello: &ClientHelloOut<'_>) -> Result<Vec<u8>, Error> {
        let mut msg = Vec::with_capacity(hello.message_len());
        OutgoingMessage::ClientHello(hello).encode_into(&mut msg);
        let types: Vec<ExtensionType> = hello.extensions.iter().map(|e| e.typ()).collect();
        let compress: Vec<u16> = compressible_run(&types)
            .iter()
            .map(|t| t.to_repr())
            .collect();
        let (_, layout) = crate::ech::inner::encode(&msg[4..], &compress, 0)
            .map_err(|e| Error::Config(e.to_string()))?;
        let len = layout.client_hello + 5 + layout.name_padding;
        let len = len + 31 - ((len - 1) % 32);
        let g = crate::ech::client::grease(self.conn.rng.as_mut(), len)
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
        // §7.2.1: the confirmation over the inner transcript, with its own 8 bytes zeroed.
        let accepted = match (confirmation, confirm::zero_hrr(encoded)) {
            (Some(got), Some(zeroed)) => {
                let mut t = inner_transcript.clone();
                t.add(HandshakeType::ServerHello, &zeroed);
                let want = self.conn.ech_confirmation(
                    suite.hash,
                    inner_random,
                    HRR_ACCEPT_LABEL,
                    t.current_hash().as_ref(),
                );
                got == want
            }
            _ => false,
        };
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
        let accepted = e.hrr_accepted != Some(false) && {
            let mut t = offer.transcript.clone();
            t.start_hash(suite.hash)
                .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
            // A decoded ServerHello is longer than 38 bytes: shorter would be the peer's
            // malformed message.
            let zeroed = confirm::zero_server_hello(encoded).ok_or(DecodeError::Truncated {
                what: "ServerHello.random",
            })?;
            t.add(HandshakeType::ServerHello, &zeroed);
            let want = self.conn.ech_confirmation(
                suite.hash,
                &offer.random,
                ACCEPT_LABEL,
                t.current_hash().as_ref(),
            );
            sh.random[24..] == want
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

/// The extensions a ClientHelloOuter copies from ClientHelloInner (RFC 9849 §6.1): those a
/// server that rejects ECH needs to answer, none naming the real server.
const OUTER_COPIES: [ExtensionType; 7] = [
    ExtensionType::SupportedGroups,
    ExtensionType::KeyShare,
    ExtensionType::EarlyData,
    ExtensionType::SupportedVersions,
    ExtensionType::SignatureAlgorithms,
    ExtensionType::Cookie,
    ExtensionType::PskKeyExchangeModes,
];

/// An `encrypted_client_hello` extension with this extension_data.
pub(super) fn ech_extension(body: Vec<u8>) -> OutgoingExtension<'static> {
    Extension::Unknown {
        typ: ExtensionType::EncryptedClientHello,
        body,
    }
    .into()
}

/// Adds `ext` as the last extension, before pre_shared_key (which stays last, §4.2.11).
pub(super) fn insert_before_psk<'a>(hello: &mut ClientHelloOut<'a>, ext: OutgoingExtension<'a>) {
    let at = hello
        .extensions
        .iter()
        .position(|e| e.typ() == ExtensionType::PreSharedKey)
        .unwrap_or(hello.extensions.len());
    hello.extensions.insert(at, ext);
}

/// `"HKDF-SHA256/AES-128-GCM"`.
fn suite_name(s: crate::ech::wire::HpkeSymmetricCipherSuite) -> String {
    format!("{}/{}", s.kdf_id, s.aead_id)
}
