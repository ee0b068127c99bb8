//! The ClientHello (RFC 8446 §4.1.2): the first, built from the configuration with its
//! extensions in the configured order, the padding extension (RFC 7685) and the PSK binder
//! (§4.2.11.2); and the second, which answers a HelloRetryRequest (§4.1.4). With ECH, the hello
//! built here is ClientHelloInner, which `ech.rs` has `ech::client` seal into ClientHelloOuter.

use std::borrow::Cow;

use crate::config::{apply_extension_order, ClientConfig, HelloPadding};
use crate::crypto::aead::{suite_params, SuiteParams};
use crate::crypto::kx::KeyShareSecret;
use crate::ech::client::{ech_extension, insert_before_psk};
use crate::ech::wire::{decode_hrr_confirmation, EchClientHello};
use crate::error::{Error, PeerMisbehaved};
use crate::keyschedule::schedule::EarlySecret;
use crate::keyschedule::transcript::Transcript;
use crate::messages::enums::{ExtensionType, HandshakeType, NamedGroup, ProtocolVersion};
use crate::messages::extensions::{Extension, ExtensionContext, OutgoingExtension};
use crate::messages::handshake::{ClientHelloOut, OutgoingMessage, ServerHello};

use super::{
    offers_post_handshake_auth, out_of_place, Cx, ExpectServerHello, ExpectServerHelloAfterRetry,
    Offer, OfferEch, OfferedPsk,
};

impl ExpectServerHello {
    /// The first ClientHello (§4.1.2), sealed into ClientHelloOuter when ECH is offered, then
    /// the 0-RTT keys when the hello offers early data (§4.2.10): the state that awaits the
    /// answer.
    pub(super) fn send_first_hello(cx: &mut Cx<'_>) -> Result<Self, Error> {
        let random: [u8; 32] = cx.conn.random();
        cx.conn.client_random = random;
        // §D.4: a non-empty legacy_session_id puts the server in compatibility mode.
        let session_id = if cx.config.compat_mode {
            cx.conn.random::<32>().to_vec()
        } else {
            Vec::new()
        };
        let shares = KeyShareSecret::generate_many(
            &cx.config.key_shares,
            cx.conn.rng.as_mut(),
            cx.config.reuse_x25519,
        )?;
        let psk = cx.psk_to_offer();
        let cfg = cx.config;
        let share_list = share_list(&shares);
        let (chosen, grease) = cx.choose_ech(&cfg.ech);
        let hello = cx.build_hello(
            cfg,
            &random,
            &session_id,
            &share_list,
            psk.as_ref(),
            None,
            false,
            chosen.is_some(),
        );
        // §5.1: the first ClientHello may use record version 0x0301 for compatibility.
        cx.conn.plaintext_version = 0x0301;
        let first = cx.first_transcript(psk.as_ref());
        let (transcript, early_secret, early_data_offered, ech) = if let Some(chosen) = chosen {
            cx.send_first_ech_hello(chosen, hello, first, psk.as_ref())?
        } else if grease {
            cx.send_grease_hello(hello, first, psk.as_ref())?
        } else {
            let (t, e, d) = cx.finish_hello(hello, first, psk.as_ref())?;
            (t, e, d, OfferEch::None)
        };
        cx.conn.flush()?;
        cx.conn.plaintext_version = 0x0303;
        cx.conn.ccs_allowed = true;
        let ccs_sent = match (&early_secret, early_data_offered, &psk) {
            (Some(early), true, Some(p)) => cx.open_early_data(early, &transcript, &p.suite)?,
            _ => false,
        };
        Ok(ExpectServerHello {
            offer: Offer {
                random,
                session_id,
                shares,
                transcript,
                psk,
                early_secret,
                ccs_sent,
                ech,
            },
            early_data_offered,
        })
    }
}

impl Cx<'_> {
    /// The transcript the first ClientHello starts. Its hash is chosen by the server's suite
    /// (RFC 8446 §4.4.1), so the transcript buffers the ClientHello until the ServerHello says
    /// which; but when every suite we offer, and the PSK we offer, use the same hash, that hash
    /// is the only possible answer and hashing can start right away, without the buffer.
    fn first_transcript(&self, psk: Option<&OfferedPsk>) -> Transcript {
        let mut hashes = self
            .config
            .cipher_suites
            .iter()
            .filter_map(|s| suite_params(*s))
            .map(|s| s.hash)
            .chain(psk.map(|p| p.suite.hash));
        match hashes.next() {
            Some(first) if hashes.all(|h| h == first) => Transcript::with_hash(first),
            _ => Transcript::new(),
        }
    }

    /// The ClientHello, its extensions in the configured order (pre_shared_key last, §4.2.11).
    /// It borrows what it carries from `cfg` and the key `shares` (see [`OutgoingExtension`]):
    /// building it copies none of the configuration or the (for ML-KEM, kilobyte-sized) keys.
    // Each argument is one of the ClientHello's independent inputs; a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_hello<'a>(
        &self,
        cfg: &'a ClientConfig,
        random: &[u8; 32],
        session_id: &'a [u8],
        shares: &'a [(NamedGroup, &'a [u8])],
        psk: Option<&OfferedPsk>,
        cookie: Option<Vec<u8>>,
        retry: bool,
        ech_inner: bool,
    ) -> ClientHelloOut<'a> {
        // Room for every extension this function may add, so the list is allocated once.
        let mut exts = Vec::with_capacity(15 + cfg.extra_extensions.len());
        if let Some(name) = &cfg.server_name {
            exts.push(OutgoingExtension::HostName(name.as_bytes()));
        }
        exts.extend(
            cfg.extra_extensions
                .iter()
                .map(|e| OutgoingExtension::Ext(Cow::Borrowed(e))),
        );
        exts.push(OutgoingExtension::SupportedGroups(&cfg.groups));
        exts.push(OutgoingExtension::KeyShareClient(shares));
        if let (Some(p), true, false) = (psk, cfg.enable_early_data, retry) {
            if p.ticket.max_early_data > 0 {
                exts.push(Extension::EarlyDataEmpty.into());
            }
        }
        exts.push(OutgoingExtension::SupportedVersionsClient(&[
            ProtocolVersion::TLSv1_3,
        ]));
        exts.push(OutgoingExtension::SignatureAlgorithms(
            &cfg.signature_schemes,
        ));
        if let Some(c) = cookie {
            exts.push(Extension::Cookie(c).into());
        }
        if !cfg.psk_modes.is_empty() {
            exts.push(OutgoingExtension::PskKeyExchangeModes(&cfg.psk_modes));
        }
        if !cfg.alpn.is_empty() {
            exts.push(OutgoingExtension::Alpn(&cfg.alpn));
        }
        // RFC 8879 §3: the server's Certificate may come compressed with one of these. Offered
        // as configured, so an experiment can offer an algorithm this build lacks (a
        // CompressedCertificate in it is then bad_certificate: it cannot be decompressed, §4).
        if !cfg.cert_compression.is_empty() {
            exts.push(OutgoingExtension::CompressCertificate(
                &cfg.cert_compression,
            ));
        }
        if let Some(limit) = cfg.record_size_limit {
            exts.push(Extension::RecordSizeLimit(limit).into());
        }
        if offers_post_handshake_auth(cfg) {
            exts.push(Extension::PostHandshakeAuth.into());
        }
        // draft-ietf-tls-trust-anchor-ids §4.1.
        if let Some(t) = &cfg.trust_anchors {
            exts.push(
                Extension::Unknown {
                    typ: t.code_point,
                    body: crate::trust_anchors::encode_list(&t.ids),
                }
                .into(),
            );
        }
        apply_extension_order(&mut exts, &cfg.extension_order, OutgoingExtension::typ);
        if ech_inner {
            // RFC 9849 §6.1: ClientHelloInner carries the `inner` variant, outside the run of
            // extensions the outer hello shares.
            exts.push(ech_extension(EchClientHello::Inner.encode()));
        }
        if let Some(OfferedPsk { ticket: t, suite }) = psk {
            // Placeholder binder of the right length; filled in by `finish_hello`.
            let hash_len = suite.hash.output_len();
            // §4.2.11.1: ticket age in ms plus age_add; 0 for external PSKs.
            let age = (self.conn.now_ms.saturating_sub(t.received_at_ms)) as u32;
            let obfuscated = if t.external {
                0
            } else {
                age.wrapping_add(t.age_add)
            };
            exts.push(
                Extension::PreSharedKeyClient(crate::messages::extensions::OfferedPsks {
                    identities: vec![crate::messages::extensions::PskIdentity {
                        identity: t.ticket.clone(),
                        obfuscated_ticket_age: obfuscated,
                    }],
                    binders: vec![vec![0u8; hash_len]],
                })
                .into(),
            );
        }
        let mut hello = ClientHelloOut {
            legacy_version: 0x0303,
            random: *random,
            legacy_session_id: session_id,
            cipher_suites: &cfg.cipher_suites,
            legacy_compression_methods: &[0],
            extensions: exts,
        };
        // An inner hello is padded by ECH's own scheme (RFC 9849 §6.1.3) instead.
        if cfg.hello_padding != HelloPadding::None && !ech_inner {
            // RFC 7685: a padding extension (4-byte header + zeros) brings the message to the
            // rule's target; it sits before pre_shared_key, which must stay last (§4.2.11).
            if let Some(body) = cfg.hello_padding.extension_body_len(hello.message_len()) {
                let pad = Extension::Padding(vec![0; body]).into();
                let at = hello
                    .extensions
                    .iter()
                    .position(|e| e.typ() == ExtensionType::PreSharedKey)
                    .unwrap_or(hello.extensions.len());
                hello.extensions.insert(at, pad);
            }
        }
        hello
    }

    /// Compute the PSK binder (§4.2.11.2) if a ticket is offered, then send the ClientHello.
    /// Returns the transcript with the ClientHello, the PSK's early secret, and whether the
    /// hello offers early data.
    pub(super) fn finish_hello(
        &mut self,
        mut hello: ClientHelloOut<'_>,
        mut transcript: Transcript,
        psk: Option<&OfferedPsk>,
    ) -> Result<(Transcript, Option<EarlySecret>, bool), Error> {
        let early_data_offered = hello.offers(ExtensionType::EarlyData);
        let early = self.bind_psk(&mut hello, &transcript, psk)?;
        transcript.add(
            HandshakeType::ClientHello,
            self.conn
                .send_handshake(OutgoingMessage::ClientHello(&hello)),
        );
        self.early_data_budget(early_data_offered, psk);
        Ok((transcript, early, early_data_offered))
    }

    /// §4.2.11.2: the binder of the offered PSK, written into `hello`; its early secret.
    pub(super) fn bind_psk(
        &mut self,
        hello: &mut ClientHelloOut<'_>,
        transcript: &Transcript,
        psk: Option<&OfferedPsk>,
    ) -> Result<Option<EarlySecret>, Error> {
        let mut early = None;
        if let Some(OfferedPsk { ticket: t, suite }) = psk {
            let es = EarlySecret::new(suite.hash, Some(t.psk.as_ref()), &mut self.conn.ev);
            // §4.2.11.2: the binder covers the transcript so far and the ClientHello up to the
            // binders list, so encode once with a placeholder binder of the right length.
            let mut encoded = Vec::with_capacity(hello.message_len());
            OutgoingMessage::ClientHello(hello).encode_into(&mut encoded);
            let binder = es
                .binder_key(!t.external, &mut self.conn.ev)
                .binder_for_hello(transcript, &encoded, hello.binders_len(), &mut self.conn.ev)
                .ok_or(Error::InvalidState(
                    "transcript hash differs from the ticket's",
                ))?;
            let placed = hello.set_psk_binders(vec![binder]);
            debug_assert!(placed, "build_hello puts pre_shared_key last");
            early = Some(es);
        }
        Ok(early)
    }

    /// §4.1.4: answer a HelloRetryRequest (the first; a second one never reaches here) with a
    /// share for the group it names.
    pub(super) fn answer_hello_retry(
        &mut self,
        mut offer: Offer,
        hrr: &ServerHello,
        encoded: &[u8],
        suite: SuiteParams,
    ) -> Result<Box<ExpectServerHelloAfterRetry>, Error> {
        let mut new_group = None;
        let mut cookie = None;
        let mut ech_confirmation = None;
        for e in &hrr.extensions {
            match e {
                Extension::KeyShareHrr(g) => new_group = Some(*g),
                Extension::Cookie(c) => cookie = Some(c.clone()),
                Extension::SupportedVersionsServer(_) => {}
                // RFC 9849 §6.1.4, §6.2: 8 bytes or decode_error, real offer or GREASE.
                Extension::Unknown {
                    typ: ExtensionType::EncryptedClientHello,
                    body,
                } if !matches!(offer.ech, OfferEch::None) => {
                    ech_confirmation = Some(decode_hrr_confirmation(body)?);
                }
                other => {
                    return Err(out_of_place(
                        ExtensionContext::HelloRetryRequest,
                        other.typ(),
                    ))
                }
            }
        }
        if let Some(g) = new_group {
            // The group must be offered and must not be one we already sent a share for.
            if !self.config.groups.contains(&g) || offer.shares.iter().any(|k| k.group() == g) {
                return Err(PeerMisbehaved::IllegalExtension("HelloRetryRequest key_share").into());
            }
        } else if cookie.is_none() {
            return Err(PeerMisbehaved::HelloRetryChangesNothing.into());
        }
        // A PSK whose hash does not match the suite cannot be offered again.
        offer.psk = offer.psk.take().filter(|p| p.suite.hash == suite.hash);
        // 0-RTT is abandoned after HRR (§4.2.10); report the data as rejected now.
        self.reject_early_data();
        offer
            .transcript
            .start_hash(suite.hash)
            .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
        offer
            .transcript
            .replace_with_message_hash()
            .map_err(|_| PeerMisbehaved::SecondHelloRetry)?;
        if let OfferEch::Real(e) = &mut offer.ech {
            let inner = (&offer.transcript, &offer.random);
            self.ech_hello_retry(e, inner, ech_confirmation, encoded, &suite)?;
        }
        offer.transcript.add(HandshakeType::ServerHello, encoded);
        if self.config.compat_mode && !offer.ccs_sent {
            self.conn.send_ccs()?;
            offer.ccs_sent = true;
        }
        // Early keys (if any) are gone: the second ClientHello is plaintext again.
        self.conn.reset_write_to_plaintext()?;
        let shares = match new_group {
            Some(g) => vec![KeyShareSecret::generate(g, self.conn.rng.as_mut())?],
            None => core::mem::take(&mut offer.shares),
        };
        let cfg = self.config;
        let share_list = share_list(&shares);
        let psk = offer.psk.as_ref();
        let mut hello = self.build_hello(
            cfg,
            &offer.random,
            &offer.session_id,
            &share_list,
            psk,
            cookie,
            true,
            matches!(offer.ech, OfferEch::Real(_)),
        );
        let mut ech = core::mem::replace(&mut offer.ech, OfferEch::None);
        let (transcript, early_secret, _) = match &mut ech {
            // §6.1.5: the second inner hello sealed with the same context and an empty enc.
            // After a rejecting HelloRetryRequest it is sent all the same, so the second
            // outer hello still differs from the first only as RFC 8446 §4.1.2 allows; the
            // outer transcript goes on.
            OfferEch::Real(e) => self.send_ech_hello(hello, offer.transcript, e, &[], psk)?,
            // §6.2: "copies the entire encrypted_client_hello extension".
            OfferEch::Grease(ext) => {
                insert_before_psk(&mut hello, ech_extension(ext.clone()));
                let done = self.finish_hello(hello, offer.transcript, psk)?;
                self.grease_parts(ext);
                done
            }
            OfferEch::None => self.finish_hello(hello, offer.transcript, psk)?,
        };
        Ok(Box::new(ExpectServerHelloAfterRetry {
            offer: Offer {
                random: offer.random,
                session_id: offer.session_id,
                shares,
                transcript,
                psk: offer.psk,
                early_secret,
                ccs_sent: offer.ccs_sent,
                ech,
            },
            retry_suite: hrr.cipher_suite,
        }))
    }
}

/// Group and key_exchange of each share, as the ClientHello's key_share lists them (§4.2.8).
fn share_list(shares: &[KeyShareSecret]) -> Vec<(NamedGroup, &[u8])> {
    shares.iter().map(|s| (s.group(), s.public())).collect()
}
