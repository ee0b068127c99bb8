//! From ServerHello to our Finished (RFC 8446 §4.1.3 to §4.4): the server's flight checked
//! message by message, each transition consuming its state, then our second flight. The
//! Certificate, CertificateVerify and Finished checks and sends are [`crate::auth`]'s, which the
//! server calls too.

use crate::auth::{self, Compression};
use crate::config::{ClientConfig, ServerVerification};
use crate::crypto::aead::{suite_params, SuiteParams};
use crate::crypto::cert::Usage;
use crate::ech::wire::decode_retry_configs;
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EarlyDataStatus, Epoch, Event, KeyShareEvent, Negotiated, Side};
use crate::keyschedule::schedule::EarlySecret;
use crate::keyschedule::transcript::Transcript;
use crate::messages::ech::EchConfigList;
use crate::messages::enums::{ExtensionType, HandshakeType, ProtocolVersion, SignatureScheme};
use crate::messages::extensions::{Extension, ExtensionContext};
use crate::messages::handshake::{
    HandshakeMessage, HandshakePayload, ServerHello, DOWNGRADE_TLS11, DOWNGRADE_TLS12,
};
use crate::traffic::Traffic;

use super::{
    offers_post_handshake_auth, out_of_place, requested_compression, requested_schemes,
    requested_trust_anchors, unexpected, CertificateRequested, Connected, Cx, EchStatus,
    ExpectCertificate, ExpectCertificateOrRequest, ExpectCertificateVerify,
    ExpectEncryptedExtensions, ExpectFinished, ExpectServerHello, ExpectServerHelloAfterRetry,
    Handshake, Offer, ServerAuth, ServerCertificate, ServerExtensions, State,
};

impl ExpectServerHello {
    /// The answer to the first ClientHello: a ServerHello, or a HelloRetryRequest.
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::ServerHello(sh) = &msg.payload else {
            return Err(unexpected("ServerHello", &msg));
        };
        let ExpectServerHello {
            mut offer,
            early_data_offered,
        } = *self;
        let suite = cx.check_server_hello(sh, &offer)?;
        if sh.is_hello_retry_request() {
            let next = cx.answer_hello_retry(offer, sh, &msg.encoded, suite)?;
            return Ok(State::ExpectServerHelloAfterRetry(next));
        }
        let ech = cx.settle_ech(&mut offer, sh, &msg.encoded, &suite)?;
        let next = cx.accept_server_hello(
            offer,
            early_data_offered,
            false,
            sh,
            &msg.encoded,
            suite,
            ech,
        )?;
        Ok(State::ExpectEncryptedExtensions(next))
    }
}

impl ExpectServerHelloAfterRetry {
    /// The answer to the second ClientHello: a ServerHello in the suite the retry named.
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::ServerHello(sh) = &msg.payload else {
            return Err(unexpected("ServerHello", &msg));
        };
        let suite = cx.check_server_hello(sh, &self.offer)?;
        if suite.suite != self.retry_suite {
            return Err(PeerMisbehaved::HelloRetryMismatch("cipher suite").into());
        }
        if sh.is_hello_retry_request() {
            return Err(PeerMisbehaved::SecondHelloRetry.into());
        }
        let mut offer = self.offer;
        let ech = cx.settle_ech(&mut offer, sh, &msg.encoded, &suite)?;
        let next = cx.accept_server_hello(offer, false, true, sh, &msg.encoded, suite, ech)?;
        Ok(State::ExpectEncryptedExtensions(next))
    }
}

impl ExpectEncryptedExtensions {
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::EncryptedExtensions(exts) = &msg.payload else {
            return Err(unexpected("EncryptedExtensions", &msg));
        };
        let ExpectEncryptedExtensions {
            mut hs,
            psk_identity,
            early_offered,
        } = *self;
        let mut ee = ServerExtensions::default();
        let mut early_accepted = false;
        // Each arm asks about the extension it matched, so "offered" is a question about our
        // configuration alone.
        let config = cx.config;
        let offered = |t: ExtensionType| offered_extension(config, t);
        for e in exts {
            match e {
                Extension::ServerNameAck if offered(ExtensionType::ServerName) => {}
                // §4.2.7: informational. Nothing here may act on it before the handshake
                // completes; it is only kept, and reported after our Finished.
                Extension::SupportedGroups(groups) => ee.groups = Some(groups.clone()),
                Extension::Alpn(protos)
                    if offered(ExtensionType::ApplicationLayerProtocolNegotiation) =>
                {
                    // RFC 7301 §3.1: exactly one protocol, one we offered.
                    match protos.as_slice() {
                        [p] if cx.config.alpn.contains(p) => ee.alpn = Some(p.clone()),
                        _ => return Err(PeerMisbehaved::UnofferedAlpn.into()),
                    }
                }
                Extension::RecordSizeLimit(limit) if offered(ExtensionType::RecordSizeLimit) => {
                    if *limit < 64 {
                        return Err(PeerMisbehaved::BadRecordSizeLimit.into());
                    }
                    // RFC 8449 §4: the limit counts the inner content type byte in TLS 1.3.
                    cx.conn.max_fragment = (*limit as usize - 1).min(crate::record::MAX_PLAINTEXT);
                    // The server acknowledged the extension: ours is now in force.
                    cx.conn.recv_limit = cx.config.record_size_limit.map(usize::from);
                }
                Extension::EarlyDataEmpty if early_offered && psk_identity.is_some() => {
                    early_accepted = true;
                }
                // RFC 9849 §5: "The response is valid only when the server used the
                // ClientHelloOuter ... MUST abort with an "unsupported_extension" alert."
                Extension::Unknown {
                    typ: ExtensionType::EncryptedClientHello,
                    ..
                } if matches!(hs.ech, EchStatus::Accepted) => {
                    return Err(PeerMisbehaved::UnsolicitedExtension(
                        ExtensionType::EncryptedClientHello,
                    )
                    .into());
                }
                // RFC 9849 §6.1.6, §6.2: retry_configs after a rejection or GREASE, checked
                // for syntax (decode_error) and kept only after a rejection. Unasked, the
                // extension falls through to unsupported_extension.
                Extension::Unknown {
                    typ: ExtensionType::EncryptedClientHello,
                    body,
                } if matches!(hs.ech, EchStatus::Grease | EchStatus::Rejected { .. }) => {
                    let list = decode_retry_configs(body)?;
                    EchConfigList::decode(&list)?;
                    if let EchStatus::Rejected { retry_configs, .. } = &mut hs.ech {
                        *retry_configs = Some(list);
                    }
                }
                // draft-ietf-tls-trust-anchor-ids §4.3: the anchors the server has paths for,
                // reported now, so a failed certificate check can be retried with one.
                Extension::Unknown { typ, body }
                    if config
                        .trust_anchors
                        .as_ref()
                        .is_some_and(|t| t.code_point == *typ) =>
                {
                    let ids = crate::trust_anchors::decode_available(body)?;
                    cx.conn.ev.push(Event::TrustAnchorsAvailable { ids });
                }
                Extension::Unknown { typ, .. } => {
                    let ctx = ExtensionContext::EncryptedExtensions;
                    if ctx.allows(*typ) == Some(false) || !offered(*typ) {
                        return Err(out_of_place(ctx, *typ));
                    }
                }
                other => {
                    // §4.2: a known extension not allowed here, or not offered.
                    let t = other.typ();
                    return Err(if offered(t) {
                        PeerMisbehaved::IllegalExtension("EncryptedExtensions").into()
                    } else {
                        PeerMisbehaved::UnsolicitedExtension(t).into()
                    });
                }
            }
        }
        hs.transcript
            .add(HandshakeType::EncryptedExtensions, &msg.encoded);
        if early_offered {
            if early_accepted {
                cx.early_data.status = Some(EarlyDataStatus::Accepted);
                // Delivered: the copy kept for a rejection is not needed any more.
                cx.early_data.sent = Vec::new();
            } else {
                cx.reject_early_data();
                cx.conn
                    .set_write_keys(Epoch::Handshake, &hs.suite, &hs.client_hs)?;
            }
        }
        Ok(match psk_identity {
            // §2.2: the PSK authenticates the server; no Certificate follows.
            Some(identity) => State::ExpectFinished(Box::new(ExpectFinished {
                hs,
                ee,
                auth: ServerAuth::Psk {
                    identity,
                    early_data_accepted: early_accepted,
                },
            })),
            None => {
                State::ExpectCertificateOrRequest(Box::new(ExpectCertificateOrRequest { hs, ee }))
            }
        })
    }
}

impl ExpectCertificateOrRequest {
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let ExpectCertificateOrRequest { mut hs, ee } = *self;
        match &msg.payload {
            HandshakePayload::CertificateRequest(cr) => {
                // §4.3.2: signature_algorithms is mandatory; context empty during the handshake.
                let schemes = requested_schemes(cr)?;
                if !cr.context.is_empty() {
                    return Err(PeerMisbehaved::IllegalExtension(
                        "certificate_request_context during handshake",
                    )
                    .into());
                }
                hs.transcript
                    .add(HandshakeType::CertificateRequest, &msg.encoded);
                Ok(State::ExpectCertificate(Box::new(ExpectCertificate {
                    hs,
                    ee,
                    request: CertificateRequested {
                        schemes,
                        compression: requested_compression(cr),
                        trust_anchors: requested_trust_anchors(cx.config, cr)?,
                    },
                })))
            }
            HandshakePayload::Certificate(_) | HandshakePayload::CompressedCertificate(_) => {
                let cert = cx.accept_server_certificate(&mut hs, msg)?;
                Ok(State::ExpectCertificateVerify(Box::new(
                    ExpectCertificateVerify {
                        hs,
                        ee,
                        request: None,
                        cert,
                    },
                )))
            }
            _ => Err(unexpected("Certificate or CertificateRequest", &msg)),
        }
    }
}

impl ExpectCertificate {
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let ExpectCertificate {
            mut hs,
            ee,
            request,
        } = *self;
        let cert = cx.accept_server_certificate(&mut hs, msg)?;
        Ok(State::ExpectCertificateVerify(Box::new(
            ExpectCertificateVerify {
                hs,
                ee,
                request: Some(request),
                cert,
            },
        )))
    }
}

impl ExpectCertificateVerify {
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::CertificateVerify(cv) = &msg.payload else {
            return Err(unexpected("CertificateVerify", &msg));
        };
        let ExpectCertificateVerify {
            mut hs,
            ee,
            request,
            cert,
        } = *self;
        let offered = &cx.config.signature_schemes;
        let scheme =
            auth::check_certificate_verify(Side::Server, offered, &hs.transcript, &cert.leaf, cv)?;
        hs.transcript
            .add(HandshakeType::CertificateVerify, &msg.encoded);
        Ok(State::ExpectFinished(Box::new(ExpectFinished {
            hs,
            ee,
            auth: ServerAuth::Certificate { scheme, request },
        })))
    }
}

impl ExpectFinished {
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::Finished(verify_data) = &msg.payload else {
            return Err(unexpected("Finished", &msg));
        };
        let ExpectFinished {
            mut hs,
            ee,
            auth: server_auth,
        } = *self;
        auth::check_finished(cx.conn, &hs.server_hs, &hs.transcript, verify_data)?;
        // RFC 9849 §6.1.6: a rejected ECH handshake that completed ends here with ech_required
        // (the error's alert), before our Finished: never a connection, no tickets.
        if let EchStatus::Rejected { retry_configs, .. } = &mut hs.ech {
            return Err(Error::EchRejected {
                retry_configs: retry_configs.take(),
            });
        }
        hs.transcript.add(HandshakeType::Finished, &msg.encoded);
        let ev = &mut cx.conn.ev;
        let master = hs.secret.into_master(ev);
        let client_app = master.client_application_traffic_secret(&hs.transcript, ev);
        let server_app = master.server_application_traffic_secret(&hs.transcript, ev);
        let exporter = master.exporter_master_secret(&hs.transcript, ev);
        cx.conn
            .set_read_keys(Epoch::Application(0), &hs.suite, &server_app)?;
        cx.conn.ccs_allowed = false;

        // Our second flight (§4.4): [CCS] [EndOfEarlyData] [Certificate CertificateVerify] Finished.
        if cx.config.compat_mode && !hs.ccs_sent {
            cx.conn.send_ccs()?;
        }
        if let ServerAuth::Psk {
            early_data_accepted: true,
            ..
        } = server_auth
        {
            let eoed = HandshakePayload::EndOfEarlyData;
            hs.transcript
                .add(HandshakeType::EndOfEarlyData, cx.conn.send_handshake(&eoed));
        }
        cx.early_data.open = false;
        if cx.conn.write_epoch != Epoch::Handshake {
            cx.conn
                .set_write_keys(Epoch::Handshake, &hs.suite, &hs.client_hs)?;
        }
        let mut client_scheme = None;
        if let ServerAuth::Certificate {
            request: Some(request),
            ..
        } = &server_auth
        {
            client_scheme = cx.send_client_certificate(&mut hs.transcript, &[], request)?;
        }
        auth::send_finished(cx.conn, &mut hs.transcript, &hs.client_hs);
        let resumption = master.resumption_master_secret(&hs.transcript, &mut cx.conn.ev);
        cx.conn
            .set_write_keys(Epoch::Application(0), &hs.suite, &client_app)?;
        cx.conn.log_secret(exporter.name(), exporter.as_bytes());
        let (signature_scheme, psk_identity) = match server_auth {
            ServerAuth::Certificate { scheme, .. } => (Some(scheme), None),
            ServerAuth::Psk { identity, .. } => (None, Some(identity)),
        };
        let negotiated = Negotiated {
            version: "TLSv1.3",
            suite: hs.suite.suite,
            group: hs.group,
            signature_scheme,
            client_signature_scheme: client_scheme,
            resumed: psk_identity.is_some(),
            psk_identity,
            early_data: cx.early_data.status.unwrap_or(EarlyDataStatus::NotSent),
            alpn: ee
                .alpn
                .as_ref()
                .map(|a| String::from_utf8_lossy(a).into_owned()),
            hello_retry: hs.hello_retry,
        };
        *cx.negotiated = Some(negotiated.clone());
        cx.conn.ev.push(Event::Connected(negotiated));
        if let Some(groups) = ee.groups {
            cx.conn.ev.push(Event::ServerGroups { groups });
        }
        let traffic = Traffic {
            suite: hs.suite,
            client_app,
            server_app,
            exporter,
            resumption,
            key_updates_in_a_row: 0,
        };
        // §4.6.2: only a client that offered post_handshake_auth may be asked later.
        let pha = offers_post_handshake_auth(cx.config).then(|| Box::new(hs.transcript));
        Ok(State::Connected(Box::new(Connected { traffic, pha })))
    }
}

impl Cx<'_> {
    /// Checks shared by ServerHello and HelloRetryRequest; the suite they select.
    fn check_server_hello(&self, sh: &ServerHello, offer: &Offer) -> Result<SuiteParams, Error> {
        check_server_hello_common(sh, offer)?;
        let offered = self.config.cipher_suites.contains(&sh.cipher_suite);
        offered
            .then(|| suite_params(sh.cipher_suite))
            .flatten()
            .ok_or_else(|| PeerMisbehaved::SelectedUnoffered("cipher suite").into())
    }

    // What the ServerHello settled (the offer, 0-RTT, the retry, ECH) arrives from two states.
    #[allow(clippy::too_many_arguments)]
    fn accept_server_hello(
        &mut self,
        mut offer: Offer,
        early_offered: bool,
        hello_retry: bool,
        sh: &ServerHello,
        encoded: &[u8],
        suite: SuiteParams,
        ech: EchStatus,
    ) -> Result<Box<ExpectEncryptedExtensions>, Error> {
        // §4.1.3 / §4.2: only these extensions may appear in a ServerHello.
        for e in &sh.extensions {
            match e.typ() {
                ExtensionType::KeyShare
                | ExtensionType::PreSharedKey
                | ExtensionType::SupportedVersions => {}
                other => return Err(out_of_place(ExtensionContext::ServerHello, other)),
            }
        }
        // PSK: the server either selected our only identity or ignored it.
        let mut psk_identity = None;
        let mut early = offer.early_secret.take();
        if let Some(Extension::PreSharedKeyServer(idx)) = sh.find(ExtensionType::PreSharedKey) {
            let Some(p) = &offer.psk else {
                return Err(
                    PeerMisbehaved::UnsolicitedExtension(ExtensionType::PreSharedKey).into(),
                );
            };
            if *idx != 0 {
                return Err(PeerMisbehaved::SelectedUnoffered("PSK identity").into());
            }
            if p.suite.hash != suite.hash {
                return Err(
                    PeerMisbehaved::SelectedUnoffered("suite with another PSK hash").into(),
                );
            }
            psk_identity = Some(0);
        } else {
            early = None;
        }
        // Key exchange (§4.2.8): the share must be for a group we sent a share for.
        let mut group = None;
        let mut shared = None;
        match sh.find(ExtensionType::KeyShare) {
            Some(Extension::KeyShareServer(entry)) => {
                let pos = offer
                    .shares
                    .iter()
                    .position(|k| k.group() == entry.group)
                    .ok_or(PeerMisbehaved::SelectedUnoffered("key share group"))?;
                let share = offer.shares.swap_remove(pos);
                // The per-component shares and secrets are copied only for an observer of
                // secrets (the KeyShare event); otherwise the key exchange yields just the secret.
                let observed = self.conn.observe().secrets;
                let mut result = if observed {
                    share.complete(&entry.key_exchange)?
                } else {
                    share.complete_secret_only(&entry.key_exchange)?
                };
                if observed {
                    self.conn.ev.push(Event::KeyShare(KeyShareEvent {
                        group: entry.group,
                        components: core::mem::take(&mut result.components),
                        shared_secret: result.shared_secret.to_vec(),
                    }));
                }
                group = Some(entry.group);
                // Kept as the KxResult, which erases the secret when it drops.
                shared = Some(result);
            }
            Some(_) => return Err(PeerMisbehaved::IllegalExtension("key_share").into()),
            None if psk_identity.is_some() => {
                // psk_ke: allowed only if we offered it (§4.2.9).
                if !self
                    .config
                    .psk_modes
                    .contains(&crate::messages::enums::PskKeyExchangeMode::PskKe)
                {
                    return Err(PeerMisbehaved::MissingExtension(ExtensionType::KeyShare).into());
                }
            }
            None => return Err(PeerMisbehaved::MissingExtension(ExtensionType::KeyShare).into()),
        }
        let mut transcript = offer.transcript;
        transcript
            .start_hash(suite.hash)
            .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
        transcript.add(HandshakeType::ServerHello, encoded);
        let es = match early {
            Some(es) => es,
            None => EarlySecret::new(suite.hash, None, &mut self.conn.ev),
        };
        let secret = es.into_handshake(
            shared.as_ref().map(|k| k.shared_secret.as_slice()),
            &mut self.conn.ev,
        );
        let client_hs = secret.client_handshake_traffic_secret(&transcript, &mut self.conn.ev);
        let server_hs = secret.server_handshake_traffic_secret(&transcript, &mut self.conn.ev);
        self.conn
            .set_read_keys(Epoch::Handshake, &suite, &server_hs)?;
        if !early_offered {
            // From here on our alerts go out under the handshake keys (§6), even before our
            // Finished. With 0-RTT in flight the early keys stay until EndOfEarlyData.
            self.conn
                .set_write_keys(Epoch::Handshake, &suite, &client_hs)?;
        }
        Ok(Box::new(ExpectEncryptedExtensions {
            hs: Handshake {
                suite,
                transcript,
                secret,
                client_hs,
                server_hs,
                group,
                hello_retry,
                ccs_sent: offer.ccs_sent,
                ech,
            },
            psk_identity,
            early_offered,
        }))
    }

    /// The server's Certificate (§4.4.2), or its CompressedCertificate (RFC 8879 §4) in an
    /// algorithm we offered: its chain checked as configured (§4.4.2.4), and the message as
    /// received added to the transcript.
    fn accept_server_certificate(
        &mut self,
        hs: &mut Handshake,
        msg: HandshakeMessage,
    ) -> Result<ServerCertificate, Error> {
        // RFC 9849 §6.1.7: after a rejected ECH the certificate must be valid for the
        // config's public_name, which is all this handshake can authenticate.
        let name = match &hs.ech {
            EchStatus::Rejected { public_name, .. } => Some(public_name.as_str()),
            _ => self.config.server_name.as_deref(),
        };
        let config = self.config;
        let (c, typ, encoded) = auth::received_certificate(
            msg,
            &config.cert_compression,
            config.max_handshake_message,
            "Certificate",
        )?;
        if !c.context.is_empty() {
            return Err(PeerMisbehaved::IllegalExtension("certificate_request_context").into());
        }
        // draft-ietf-tls-trust-anchor-ids §4.2: an empty trust_anchors in the first entry says
        // the path was chosen for an anchor we asked for; anywhere else, or with a body, it is
        // malformed.
        let cp = config.trust_anchors_code_point();
        let matched = crate::trust_anchors::certificate_matched(
            &c.entries,
            cp,
            config.trust_anchors.is_some() || offered_extension(config, cp),
        )?;
        // The certificates move out of the decoded message.
        let mut chain: Vec<Vec<u8>> = c.entries.into_iter().map(|e| e.cert_data).collect();
        if chain.is_empty() {
            return Err(PeerMisbehaved::NoServerCertificate.into());
        }
        let (roots, name) = match &config.verification {
            ServerVerification::Roots(roots) => (Some(roots.as_slice()), name),
            ServerVerification::RootsNoName(roots) => (Some(roots.as_slice()), None),
            ServerVerification::InsecureAcceptAny => (None, None),
        };
        let now = config.fixed_validation_time_ms.unwrap_or(self.conn.now_ms);
        let memo = config.signature_memo.as_deref();
        // A Merkle Tree Certificate is verified by its proof against the relying-party
        // configuration; any other leaf by its chain.
        let mtc = match (&config.mtc, roots) {
            (Some(rp), Some(_)) => {
                match crate::crypto::cert::mtc::verify_mtc(&chain[0], rp, now / 1000) {
                    Err(crate::crypto::cert::mtc::MtcError::NotMtc) => false,
                    Err(e) => return Err(Error::Mtc(e)),
                    Ok(_) => {
                        crate::crypto::cert::mtc::check_server_usage(&chain[0])
                            .map_err(Error::Mtc)?;
                        true
                    }
                }
            }
            _ => false,
        };
        if mtc {
            if let Some(name) = name {
                crate::crypto::cert::verify_name(&chain[0], name)?;
            }
        } else {
            auth::verify_chain(&chain, roots, name, now, Usage::Server, memo)?;
        }
        if matched {
            self.conn.ev.push(Event::TrustAnchorMatched);
        }
        hs.transcript.add(typ, &encoded);
        // Only the end-entity certificate is needed from here on; `chain` is not empty (above).
        Ok(ServerCertificate {
            leaf: chain.swap_remove(0),
        })
    }

    /// §4.4.2, §4.4.3: our Certificate (empty if we have none) and CertificateVerify, echoing
    /// the request's certificate_request_context: empty during the handshake (§4.3.2), the
    /// server's chosen value after it (§4.6.2). A certificate goes out compressed (RFC 8879
    /// §4) when the request offered an algorithm we use and that makes it smaller.
    pub(super) fn send_client_certificate(
        &mut self,
        transcript: &mut Transcript,
        context: &[u8],
        request: &CertificateRequested,
    ) -> Result<Option<SignatureScheme>, Error> {
        // The certificate is sent from the configuration as it is (no copy of the chain).
        let config = self.config;
        // draft-ietf-tls-trust-anchor-ids §4.2 for the client's certificate: a request's
        // trust_anchors that our path's properties match is answered with the empty extension;
        // a negotiation-only path goes out only when asked for.
        let props = config.client_cert_properties.as_ref();
        let matched = match (&request.trust_anchors, props) {
            (Some(ids), Some(p)) => p.requested_by(ids),
            _ => false,
        };
        let withheld = !matched && props.is_some_and(|p| p.negotiation_only);
        let Some(ck) = config.client_cert.as_ref().filter(|_| !withheld) else {
            auth::send_certificate(self.conn, transcript, context, &[], &[], Compression::NONE);
            return Ok(None);
        };
        let scheme = ck
            .key
            .schemes()
            .into_iter()
            .find(|s| request.schemes.contains(s))
            .ok_or(PeerMisbehaved::NoCommonSignatureScheme)?;
        let compression = Compression {
            ours: &config.cert_compression,
            theirs: &request.compression,
            cache: config.compressed_certificates.as_deref(),
        };
        let marker = [Extension::Unknown {
            typ: config.trust_anchors_code_point(),
            body: Vec::new(),
        }];
        let first: &[Extension] = if matched { &marker } else { &[] };
        if matched {
            self.conn.ev.push(Event::TrustAnchorMatched);
        }
        auth::send_certificate(
            self.conn,
            transcript,
            context,
            &ck.chain,
            first,
            compression,
        );
        auth::send_certificate_verify(self.conn, transcript, ck.key.as_ref(), scheme)?;
        Ok(Some(scheme))
    }
}

/// Whether our ClientHello carried an extension of type `t` that the server may answer in
/// EncryptedExtensions.
fn offered_extension(config: &ClientConfig, t: ExtensionType) -> bool {
    match t {
        ExtensionType::ServerName => config.server_name.is_some(),
        ExtensionType::ApplicationLayerProtocolNegotiation => !config.alpn.is_empty(),
        ExtensionType::RecordSizeLimit => config.record_size_limit.is_some(),
        _ => config.extra_extensions.iter().any(|e| e.typ() == t),
    }
}

/// Checks shared by ServerHello and HelloRetryRequest (§4.1.3, §4.2.1).
fn check_server_hello_common(sh: &ServerHello, s: &Offer) -> Result<(), Error> {
    match sh.find(ExtensionType::SupportedVersions) {
        Some(Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3)) => {}
        Some(Extension::SupportedVersionsServer(_)) => {
            return Err(PeerMisbehaved::SelectedUnoffered("version").into())
        }
        Some(_) => return Err(PeerMisbehaved::IllegalExtension("supported_versions").into()),
        None => {
            // A TLS 1.2 server: we only speak 1.3. Check the downgrade sentinel first (§4.1.3).
            let tail = &sh.random[24..];
            if tail == DOWNGRADE_TLS12 || tail == DOWNGRADE_TLS11 {
                return Err(PeerMisbehaved::DowngradeSentinel.into());
            }
            return Err(PeerMisbehaved::UnsupportedVersion.into());
        }
    }
    if sh.legacy_version != 0x0303 {
        return Err(PeerMisbehaved::BadLegacyField("legacy_version").into());
    }
    if sh.legacy_compression_method != 0 {
        return Err(PeerMisbehaved::BadLegacyField("legacy_compression_method").into());
    }
    if sh.legacy_session_id_echo != s.session_id {
        return Err(PeerMisbehaved::SessionIdMismatch.into());
    }
    Ok(())
}
