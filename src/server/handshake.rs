//! Our flight and the client's (RFC 8446 §2): ServerHello, EncryptedExtensions,
//! CertificateRequest, Certificate, CertificateVerify and Finished sent in one go, then the
//! client's EndOfEarlyData, Certificate, CertificateVerify and Finished, each transition
//! consuming its state. The Certificate, CertificateVerify and Finished sends and checks are
//! [`crate::auth`]'s, which the client calls too.

use crate::auth::{self, Compression};
use crate::config::{apply_extension_order, ClientAuth, ServerConfig};
use crate::crypto::aead::SuiteParams;
use crate::crypto::cert::Usage;
use crate::crypto::kx;
use crate::ech::server::retry_configs;
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EarlyDataStatus, Epoch, Event, KeyShareEvent, Negotiated, Side};
use crate::keyschedule::schedule::HandshakeSecret;
use crate::keyschedule::transcript::Transcript;
use crate::messages::enums::{ExtensionType, HandshakeType, NamedGroup, ProtocolVersion};
use crate::messages::extensions::{Extension, KeyShareEntry};
use crate::messages::handshake::{
    CertificatePayload, CertificateRequest, CertificateVerify, ClientHello, HandshakeMessage,
    HandshakePayload, ServerHello,
};
use crate::traffic::Traffic;
use crate::trust_anchors;

use super::hello::{Offer, Prior};
use super::{
    unexpected, ClientCertificate, ClientVerified, Connected, Cx, EchState, ExpectCertificate,
    ExpectCertificateVerify, ExpectEndOfEarlyData, ExpectFinished, Handshake, PostHandshakeAuth,
    State,
};

impl Cx<'_> {
    /// A ClientHello we can answer: our ServerHello, a CCS in compatibility mode,
    /// EncryptedExtensions, CertificateRequest if we ask, Certificate and CertificateVerify
    /// unless a PSK authenticates us, and Finished (§2).
    pub(super) fn answer_hello(
        &mut self,
        encoded: &[u8],
        ch: &ClientHello,
        suite: SuiteParams,
        prior: Prior,
        offer: Offer<'_>,
    ) -> Result<State, Error> {
        let Prior {
            mut transcript,
            hello_retry,
            ccs_sent,
            ech,
        } = prior;
        let Offer { psk, share } = offer;
        let offers_early = ch.find(ExtensionType::EarlyData).is_some();
        // Certificate authentication needs a credential and a common signature scheme (§4.2.3).
        let credential = if psk.is_none() {
            Some(self.choose_credential(ch)?)
        } else {
            None
        };
        let scheme = credential.as_ref().map(|c| c.scheme);

        let psk_used = psk.as_ref().map(|(p, _)| p);
        let early_secret = self.early_secret(psk_used, &suite, &transcript, encoded, ch)?;
        transcript.add(HandshakeType::ClientHello, encoded);

        // 0-RTT (§4.2.10): only with the first identity, a fresh ticket allowing it, the same suite
        // and ALPN, no HelloRetryRequest, and the anti-replay policy's consent.
        let alpn = self.choose_alpn(ch)?;
        let early_accepted = match &psk {
            Some((p, _)) if offers_early && !hello_retry => {
                self.accept_early(p, &suite, alpn.as_deref())
            }
            _ => false,
        };
        let early_budget = psk.as_ref().map_or(0, |(p, _)| p.max_early_data);

        // ServerHello (§4.1.3): random first, then our share, from the injected source.
        let random: [u8; 32] = self.conn.random();
        let mut sh_exts = Vec::new();
        if let Some((p, _)) = &psk {
            sh_exts.push(Extension::PreSharedKeyServer(p.index));
        }
        let mut shared = None;
        if let Some(entry) = &share {
            // The per-component shares and secrets are copied only for an observer of secrets
            // (the KeyShare event); otherwise the key exchange yields just the secret.
            let observed = self.conn.observe().secrets;
            let respond = if observed {
                kx::server_respond
            } else {
                kx::server_respond_secret_only
            };
            let (server_share, mut kx) =
                respond(entry.group, &entry.key_exchange, self.conn.rng.as_mut())?;
            if observed {
                self.conn.ev.push(Event::KeyShare(KeyShareEvent {
                    group: entry.group,
                    components: core::mem::take(&mut kx.components),
                    shared_secret: kx.shared_secret.to_vec(),
                }));
            }
            // Kept as the KxResult, which erases the secret when it drops.
            shared = Some(kx);
            sh_exts.push(Extension::KeyShareServer(KeyShareEntry {
                group: entry.group,
                key_exchange: server_share,
            }));
        }
        sh_exts.push(Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3));
        let mut sh = ServerHello {
            legacy_version: 0x0303,
            random,
            legacy_session_id_echo: ch.legacy_session_id.clone(),
            cipher_suite: suite.suite,
            legacy_compression_method: 0,
            extensions: sh_exts,
        };
        if let EchState::Accepted(acc) = &ech {
            self.confirm_ech(acc, &mut sh, &transcript, &suite);
        }
        let sh = HandshakePayload::ServerHello(sh);
        // The early traffic secret covers ClientHello only (§7.1).
        let early_traffic = early_accepted
            .then(|| early_secret.client_early_traffic_secret(&transcript, &mut self.conn.ev));
        if early_accepted {
            let ees = early_secret.early_exporter_master_secret(&transcript, &mut self.conn.ev);
            self.conn.log_secret(ees.name(), ees.as_bytes());
            *self.early_exporter = Some(ees);
        }
        transcript.add(HandshakeType::ServerHello, self.conn.send_handshake(&sh));
        // §D.4: in compatibility mode the CCS follows our first handshake message.
        if self.config.compat_mode && !ch.legacy_session_id.is_empty() && !ccs_sent {
            self.conn.send_ccs()?;
        }

        let ev = &mut self.conn.ev;
        let hs: HandshakeSecret =
            early_secret.into_handshake(shared.as_ref().map(|k| k.shared_secret.as_slice()), ev);
        let client_hs = hs.client_handshake_traffic_secret(&transcript, ev);
        let server_hs = hs.server_handshake_traffic_secret(&transcript, ev);
        self.conn
            .set_write_keys(Epoch::Handshake, &suite, &server_hs)?;
        match &early_traffic {
            Some(secret) => self.conn.set_read_keys(Epoch::Early, &suite, secret)?,
            None => self
                .conn
                .set_read_keys(Epoch::Handshake, &suite, &client_hs)?,
        }
        if offers_early && !early_accepted {
            // We did not accept 0-RTT: skip what the client sends under early keys (§4.2.10).
            *self.early_skip = Some(self.early_skip_budget());
        }

        // EncryptedExtensions (§4.3.1).
        let used_group = share.as_ref().map(|s| s.group);
        let mut ee = self.encrypted_extensions(ch, alpn.as_deref(), used_group)?;
        if early_accepted {
            ee.push(Extension::EarlyDataEmpty);
        }
        // RFC 9849 §7.1: a rejected ECH is answered with our current configs.
        let retry = matches!(ech, EchState::Rejected) && !self.config.ech_keys.is_empty();
        if retry {
            ee.push(Extension::Unknown {
                typ: ExtensionType::EncryptedClientHello,
                body: retry_configs(&self.config.ech_keys).encode(),
            });
        }
        // draft-ietf-tls-trust-anchor-ids §4.3: the anchors we have paths for, for a retry.
        let anchors = credential
            .as_ref()
            .filter(|c| !c.available_trust_anchors.is_empty());
        if let Some(c) = anchors {
            ee.push(Extension::Unknown {
                typ: self.config.trust_anchors_code_point,
                body: trust_anchors::encode_list(&c.available_trust_anchors),
            });
        }
        if early_accepted || retry || anchors.is_some() {
            apply_extension_order(&mut ee, &self.config.extension_order, Extension::typ);
        }
        let ee = HandshakePayload::EncryptedExtensions(ee);
        transcript.add(
            HandshakeType::EncryptedExtensions,
            self.conn.send_handshake(&ee),
        );

        // Certificate-based authentication (§4.4.2, §4.4.3) unless a PSK authenticates us.
        let asked_client = scheme.is_some() && !matches!(self.config.client_auth, ClientAuth::None);
        if let Some(choice) = credential {
            let (credential, scheme) = (choice.index, choice.scheme);
            if asked_client {
                let cr = HandshakePayload::CertificateRequest(CertificateRequest {
                    context: Vec::new(),
                    extensions: certificate_request_extensions(self.config),
                });
                transcript.add(
                    HandshakeType::CertificateRequest,
                    self.conn.send_handshake(&cr),
                );
            }
            let config = self.config;
            let ck = config
                .credentials()
                .nth(credential)
                .ok_or_else(|| Error::Config("credential chosen out of range".into()))?;
            // Compressed in the first algorithm of our preference list that the client's
            // compress_certificate lists, when that is smaller (RFC 8879 §4).
            let compression = Compression {
                ours: &config.cert_compression,
                theirs: match ch.find(ExtensionType::CompressCertificate) {
                    Some(Extension::CompressCertificate(algorithms)) => algorithms,
                    _ => &[],
                },
                cache: config.compressed_certificates.as_deref(),
            };
            // §4.2: a path chosen for a requested anchor says so in its first entry.
            let matched = [Extension::Unknown {
                typ: config.trust_anchors_code_point,
                body: Vec::new(),
            }];
            let first: &[Extension] = if choice.trust_anchor_matched {
                self.conn.ev.push(Event::TrustAnchorMatched);
                &matched
            } else {
                &[]
            };
            let conn = &mut *self.conn;
            auth::send_certificate(conn, &mut transcript, &[], &ck.chain, first, compression);
            auth::send_certificate_verify(conn, &mut transcript, ck.key.as_ref(), scheme)?;
        }

        // Finished (§4.4.4), then the application keys for our side.
        auth::send_finished(self.conn, &mut transcript, &server_hs);
        let ev = &mut self.conn.ev;
        let master = hs.into_master(ev);
        let client_app = master.client_application_traffic_secret(&transcript, ev);
        let server_app = master.server_application_traffic_secret(&transcript, ev);
        // The exporter covers ClientHello..server Finished, like the traffic secrets (§7.1).
        let exporter = master.exporter_master_secret(&transcript, ev);
        self.conn
            .set_write_keys(Epoch::Application(0), &suite, &server_app)?;

        let negotiated = Negotiated {
            version: "TLSv1.3",
            suite: suite.suite,
            group: share.as_ref().map(|s| s.group),
            signature_scheme: scheme,
            client_signature_scheme: None,
            resumed: psk.is_some(),
            psk_identity: psk.as_ref().map(|(p, _)| p.index),
            early_data: if early_accepted {
                EarlyDataStatus::Accepted
            } else if offers_early {
                EarlyDataStatus::Rejected
            } else {
                EarlyDataStatus::NotSent
            },
            alpn: alpn.map(|a| String::from_utf8_lossy(&a).into_owned()),
            hello_retry,
        };
        let hs = Handshake {
            suite,
            transcript,
            master,
            client_hs,
            client_app,
            server_app,
            exporter,
            negotiated,
            pha_offered: ch.find(ExtensionType::PostHandshakeAuth).is_some(),
        };
        Ok(if early_accepted {
            let early_remaining = early_budget as usize;
            State::ExpectEndOfEarlyData(Box::new(ExpectEndOfEarlyData {
                hs,
                early_remaining,
            }))
        } else if asked_client {
            State::ExpectCertificate(Box::new(ExpectCertificate { hs }))
        } else {
            State::ExpectFinished(Box::new(ExpectFinished {
                hs,
                client_verified: None,
            }))
        })
    }

    /// The client's Certificate, or its CompressedCertificate in an algorithm our
    /// CertificateRequest offered (RFC 8879 §4), with the type to add it to the transcript as.
    pub(super) fn client_certificate(
        &self,
        msg: HandshakeMessage,
        expected: &'static str,
    ) -> Result<(CertificatePayload, HandshakeType, Vec<u8>), Error> {
        let config = self.config;
        let limit = config.max_handshake_message;
        auth::received_certificate(msg, &config.cert_compression, limit, expected)
    }

    /// Our EncryptedExtensions (§4.3.1), for a handshake that used `used_group` (none: psk_ke).
    fn encrypted_extensions(
        &mut self,
        ch: &ClientHello,
        alpn: Option<&[u8]>,
        used_group: Option<NamedGroup>,
    ) -> Result<Vec<Extension>, Error> {
        let cfg = self.config;
        let mut exts = Vec::new();
        if cfg.ack_server_name && ch.find(ExtensionType::ServerName).is_some() {
            exts.push(Extension::ServerNameAck);
        }
        if let Some(p) = alpn {
            exts.push(Extension::Alpn(vec![p.to_vec()]));
        }
        let requested = ch.find(ExtensionType::SupportedGroups).is_some();
        if cfg
            .send_supported_groups
            .sends(requested, used_group, cfg.groups.first().copied())
        {
            exts.push(Extension::SupportedGroups(cfg.groups.clone()));
        }
        if let (Some(Extension::RecordSizeLimit(theirs)), Some(ours)) = (
            ch.find(ExtensionType::RecordSizeLimit),
            cfg.record_size_limit,
        ) {
            if *theirs < 64 {
                return Err(PeerMisbehaved::BadRecordSizeLimit.into());
            }
            self.conn.max_fragment = (*theirs as usize - 1).min(crate::record::MAX_PLAINTEXT);
            self.conn.recv_limit = Some(usize::from(ours));
            exts.push(Extension::RecordSizeLimit(ours));
        }
        apply_extension_order(&mut exts, &cfg.extension_order, Extension::typ);
        Ok(exts)
    }

    /// The client's chain against `roots` (§4.4.2.4), in the handshake or after it. `None`:
    /// the configuration asked by name to accept any chain (`ClientAuth::InsecureAcceptAny`;
    /// its CertificateVerify is still checked). An empty list of roots validates nothing.
    pub(super) fn verify_client_chain(
        &self,
        chain: &[Vec<u8>],
        roots: Option<&[Vec<u8>]>,
    ) -> Result<(), Error> {
        let config = self.config;
        let now = config.fixed_validation_time_ms.unwrap_or(self.conn.now_ms);
        let memo = config.signature_memo.as_deref();
        auth::verify_chain(chain, roots, None, now, Usage::Client, memo)
    }

    /// §4.4.3: the client's CertificateVerify, in a scheme we offered, signed by its end-entity
    /// certificate's key over the transcript so far with the client's context string.
    pub(super) fn check_client_certificate_verify(
        &self,
        transcript: &Transcript,
        leaf: &ClientCertificate,
        cv: &CertificateVerify,
    ) -> Result<ClientVerified, Error> {
        let offered = &self.config.signature_schemes;
        let scheme =
            auth::check_certificate_verify(Side::Client, offered, transcript, &leaf.0, cv)?;
        Ok(ClientVerified { scheme })
    }
}

/// Our CertificateRequest's extensions (§4.3.2): signature_algorithms, compress_certificate
/// when we decompress (RFC 8879 §3), trust_anchors when configured (trust-anchor-ids §4.1).
pub(super) fn certificate_request_extensions(config: &ServerConfig) -> Vec<Extension> {
    let mut exts = vec![Extension::SignatureAlgorithms(
        config.signature_schemes.clone(),
    )];
    if !config.cert_compression.is_empty() {
        exts.push(Extension::CompressCertificate(
            config.cert_compression.clone(),
        ));
    }
    if let Some(ids) = &config.client_trust_anchors {
        exts.push(Extension::Unknown {
            typ: config.trust_anchors_code_point,
            body: crate::trust_anchors::encode_list(ids),
        });
    }
    exts
}

/// Whether the client's Certificate says it matched our CertificateRequest's trust_anchors;
/// reported once its chain validated, as the client reports the server's.
pub(super) fn client_trust_anchor_matched(
    config: &ServerConfig,
    c: &crate::messages::handshake::CertificatePayload,
) -> Result<bool, Error> {
    crate::trust_anchors::certificate_matched(
        &c.entries,
        config.trust_anchors_code_point,
        config.client_trust_anchors.is_some(),
    )
}

impl ExpectEndOfEarlyData {
    /// §4.2.10: EndOfEarlyData ends 0-RTT; the client's handshake keys take over, on a record
    /// boundary.
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::EndOfEarlyData = &msg.payload else {
            return Err(unexpected("EndOfEarlyData", &msg));
        };
        let ExpectEndOfEarlyData { mut hs, .. } = *self;
        hs.transcript
            .add(HandshakeType::EndOfEarlyData, &msg.encoded);
        cx.conn
            .set_read_keys(Epoch::Handshake, &hs.suite, &hs.client_hs)?;
        Ok(State::ExpectFinished(Box::new(ExpectFinished {
            hs,
            client_verified: None,
        })))
    }
}

impl ExpectCertificate {
    /// The client's Certificate, answering our CertificateRequest (§4.4.2): empty, or a chain
    /// we validate.
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        // Owned: the client's certificates move out of the message, not copied.
        let (c, typ, encoded) = cx.client_certificate(msg, "Certificate")?;
        if !c.context.is_empty() {
            return Err(PeerMisbehaved::IllegalExtension("certificate_request_context").into());
        }
        let matched = client_trust_anchor_matched(cx.config, &c)?;
        let ExpectCertificate { mut hs } = *self;
        hs.transcript.add(typ, &encoded);
        let mut chain: Vec<Vec<u8>> = c.entries.into_iter().map(|e| e.cert_data).collect();
        if chain.is_empty() {
            // §4.4.2.4: no certificate — fatal only if we require one.
            if cx.config.client_auth.requires_certificate() {
                return Err(PeerMisbehaved::NoClientCertificate.into());
            }
            return Ok(State::ExpectFinished(Box::new(ExpectFinished {
                hs,
                client_verified: None,
            })));
        }
        let Some(roots) = cx.config.client_auth.roots() else {
            // Not reached: this state follows our CertificateRequest, which the (immutable)
            // configuration asked for.
            return Err(PeerMisbehaved::UnexpectedMessage {
                expected: "Finished",
                got: typ,
            }
            .into());
        };
        cx.verify_client_chain(&chain, roots)?;
        if matched {
            cx.conn.ev.push(crate::events::Event::TrustAnchorMatched);
        }
        // The chain is not empty (above). Its end-entity certificate is all CertificateVerify
        // needs (§4.4.3); the rest has served.
        let leaf = ClientCertificate(chain.swap_remove(0));
        Ok(State::ExpectCertificateVerify(Box::new(
            ExpectCertificateVerify { hs, leaf },
        )))
    }
}

impl ExpectCertificateVerify {
    /// The client's CertificateVerify (§4.4.3), under the certificate it sent.
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::CertificateVerify(cv) = &msg.payload else {
            return Err(unexpected("CertificateVerify", &msg));
        };
        let ExpectCertificateVerify { mut hs, leaf } = *self;
        let verified = cx.check_client_certificate_verify(&hs.transcript, &leaf, cv)?;
        hs.transcript
            .add(HandshakeType::CertificateVerify, &msg.encoded);
        Ok(State::ExpectFinished(Box::new(ExpectFinished {
            hs,
            client_verified: Some(verified),
        })))
    }
}

impl ExpectFinished {
    /// The client's Finished (§4.4.4): the handshake is complete, our tickets go out.
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
            client_verified,
        } = *self;
        auth::check_finished(cx.conn, &hs.client_hs, &hs.transcript, verify_data)?;
        hs.transcript.add(HandshakeType::Finished, &msg.encoded);
        *cx.early_skip = None;
        cx.conn
            .set_read_keys(Epoch::Application(0), &hs.suite, &hs.client_app)?;
        cx.conn.ccs_allowed = false;
        let ev = &mut cx.conn.ev;
        let exporter = hs.exporter;
        let resumption = hs.master.resumption_master_secret(&hs.transcript, ev);
        cx.conn.log_secret(exporter.name(), exporter.as_bytes());
        hs.negotiated.client_signature_scheme = client_verified.map(|v| v.scheme);
        *cx.negotiated = Some(hs.negotiated.clone());
        cx.conn.ev.push(Event::Connected(hs.negotiated));
        let traffic = Traffic {
            suite: hs.suite,
            client_app: hs.client_app,
            server_app: hs.server_app,
            exporter,
            resumption,
            key_updates_in_a_row: 0,
        };
        // §4.6.1: tickets go out once the client's Finished is verified — unless the
        // application already sent close_notify (possible when it answered 0-RTT data before
        // the Finished): nothing may follow that alert (§6.1).
        let tickets = if cx.conn.write_closed {
            0
        } else {
            cx.config.tickets
        };
        for _ in 0..tickets {
            cx.issue_ticket(&traffic)?;
        }
        let may_ask = !matches!(cx.config.post_handshake_auth, ClientAuth::None);
        let pha = (hs.pha_offered && may_ask).then(|| {
            Box::new(PostHandshakeAuth {
                handshake: hs.transcript,
                pending: Vec::new(),
                answer: None,
            })
        });
        Ok(State::Connected(Box::new(Connected { traffic, pha })))
    }
}
