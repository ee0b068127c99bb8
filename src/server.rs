//! The TLS 1.3 server: one struct per handshake state (RFC 8446 §A.2).
//!
//! ```text
//!  ExpectClientHello ──(no usable share)──▶ HelloRetryRequest ──▶ ExpectClientHello (retry)
//!        │ ClientHello: send ServerHello, [CCS], EncryptedExtensions, [CertificateRequest],
//!        │              Certificate, CertificateVerify, Finished
//!        ▼
//!  [ExpectEndOfEarlyData] ──▶ [ExpectCertificate ──▶ ExpectCertificateVerify] ──▶ ExpectFinished
//!        ▼
//!  Connected (NewSessionTicket, KeyUpdate, data)
//! ```

use std::sync::Arc;

use subtle::ConstantTimeEq;

use crate::config::{apply_extension_order, ClientAuth, ServerConfig};
use crate::conn::{self, Conn, Endpoint};
use crate::crypto::aead::{suite_params, SuiteParams};
use crate::crypto::cert::{self, Usage};
use crate::crypto::kx;
use crate::crypto::random::RandomSource;
use crate::crypto::sign::{certificate_verify_message, SigError};
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EarlyDataStatus, Epoch, Event, KeyShareEvent, Negotiated, Side};
use crate::keyschedule::schedule::{
    EarlySecret, ExporterSecret, HandshakeSecret, MasterSecret, TrafficSecret,
};
use crate::keyschedule::transcript::Transcript;
use crate::messages::enums::{
    AlertDescription, AlertLevel, CipherSuite, ExtensionType, HandshakeType, NamedGroup,
    ProtocolVersion, SignatureScheme,
};
use crate::messages::extensions::{Extension, KeyShareEntry};
use crate::messages::handshake::{
    CertificateEntry, CertificatePayload, CertificateRequest, CertificateVerify, ClientHello,
    DecodeContext, HandshakeMessage, HandshakePayload, ServerHello, HRR_RANDOM,
};
use crate::traffic::{receive_key_update, send_key_update, Traffic};

/// A TLS 1.3 server connection, sans-IO: feed it bytes with [`Server::receive`], send what
/// [`Server::take_output`] returns, and read what happened from [`Server::events`].
pub struct Server {
    conn: Conn,
    config: Arc<ServerConfig>,
    state: State,
    negotiated: Option<Negotiated>,
    early_skip: Option<usize>,
}

enum State {
    ExpectClientHello(Option<Box<Retry>>),
    ExpectCertificate(Box<Handshaking>),
    ExpectCertificateVerify(Box<Handshaking>),
    ExpectFinished(Box<Handshaking>),
    Connected(Box<Traffic>),
    Poisoned,
}

/// What a HelloRetryRequest asked for (§4.1.4): the second ClientHello must comply.
struct Retry {
    suite: CipherSuite,
    group: NamedGroup,
    cookie: Option<Vec<u8>>,
    transcript: Transcript,
    random: [u8; 32],
    session_id: Vec<u8>,
    ccs_sent: bool,
}

/// Between our Finished and the client's.
struct Handshaking {
    suite: SuiteParams,
    transcript: Transcript,
    master: MasterSecret,
    client_hs: TrafficSecret,
    client_app: TrafficSecret,
    server_app: TrafficSecret,
    /// Derived with the application secrets: its transcript ends at our Finished (§7.1).
    exporter: ExporterSecret,
    negotiated: Negotiated,
    client_chain: Vec<Vec<u8>>,
}

/// What we decided from a ClientHello.
struct Choice {
    suite: SuiteParams,
    scheme: SignatureScheme,
    /// The group and the client's share for it, or the group to ask for in a HelloRetryRequest.
    share: Result<KeyShareEntry, NamedGroup>,
}

impl Server {
    /// A server for `config`, drawing every random value from `rng`.
    pub fn new(config: Arc<ServerConfig>, rng: Box<dyn RandomSource>) -> Result<Server, Error> {
        if config.cert.chain.is_empty() {
            return Err(Error::Config("the server needs a certificate".into()));
        }
        let mut conn = Conn::new(
            Side::Server,
            config.observe,
            rng,
            config.padding,
            config.max_handshake_message,
        );
        conn.ccs_allowed = false;
        Ok(Server {
            conn,
            config,
            state: State::ExpectClientHello(None),
            negotiated: None,
            early_skip: None,
        })
    }

    /// Feed bytes received from the client (`now_ms`: the caller's clock, Unix ms).
    pub fn receive(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), Error> {
        conn::receive(self, bytes, now_ms)
    }

    /// Bytes to send to the client.
    pub fn take_output(&mut self) -> Vec<u8> {
        self.conn.take_output()
    }

    /// Whether output is waiting.
    pub fn wants_write(&self) -> bool {
        self.conn.has_output()
    }

    /// Drain the events recorded so far, in order.
    pub fn events(&mut self) -> impl Iterator<Item = Event> + '_ {
        self.conn.ev.queue.drain(..)
    }

    /// Send application data: allowed once our Finished is out (0.5-RTT data, §2).
    pub fn send(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.conn.failed || self.conn.write_closed {
            return Err(Error::Closed);
        }
        if !matches!(self.conn.write_epoch, Epoch::Application(_)) {
            return Err(Error::InvalidState("handshake not far enough"));
        }
        self.conn.send_app_data(data)?;
        Ok(())
    }

    /// Send close_notify (§6.1).
    pub fn close(&mut self) {
        self.conn
            .send_alert(AlertLevel::Warning, AlertDescription::CloseNotify);
    }

    /// Update our sending keys, optionally asking the client to update too (§4.6.3).
    pub fn key_update(&mut self, request_peer: bool) -> Result<(), Error> {
        let State::Connected(t) = &mut self.state else {
            return Err(Error::InvalidState("handshake not complete"));
        };
        send_key_update(&mut self.conn, t, request_peer)
    }

    /// RFC 8446 §7.5 exporter.
    pub fn export(&mut self, label: &[u8], context: &[u8], len: usize) -> Result<Vec<u8>, Error> {
        let State::Connected(t) = &self.state else {
            return Err(Error::InvalidState("handshake not complete"));
        };
        t.exporter
            .export(label, context, len, &mut self.conn.ev)
            .map_err(|_| Error::InvalidState("exporter label or length too long"))
    }

    /// What was negotiated, once connected.
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    /// Whether the handshake is complete.
    pub fn is_connected(&self) -> bool {
        matches!(self.state, State::Connected(_))
    }

    /// Whether the connection is closed or failed.
    pub fn is_closed(&self) -> bool {
        self.conn.failed || self.conn.read_closed
    }

    fn handle(&mut self, bytes: Vec<u8>) -> Result<(), Error> {
        let hash_len = match &self.state {
            State::ExpectCertificate(h)
            | State::ExpectCertificateVerify(h)
            | State::ExpectFinished(h) => h.suite.hash.output_len(),
            State::Connected(t) => t.suite.hash.output_len(),
            _ => 32,
        };
        let msg = HandshakeMessage::decode(&bytes, DecodeContext { hash_len })?;
        self.conn.handshake_received(&msg);
        let state = core::mem::replace(&mut self.state, State::Poisoned);
        self.state = match state {
            State::ExpectClientHello(retry) => self.on_client_hello(retry, msg)?,
            State::ExpectCertificate(h) => self.on_certificate(h, msg)?,
            State::ExpectCertificateVerify(h) => self.on_certificate_verify(h, msg)?,
            State::ExpectFinished(h) => self.on_finished(h, msg)?,
            State::Connected(t) => self.on_post_handshake(t, msg)?,
            State::Poisoned => return Err(Error::Closed),
        };
        Ok(())
    }

    fn on_client_hello(
        &mut self,
        retry: Option<Box<Retry>>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::ClientHello(ch) = &msg.payload else {
            return Err(unexpected("ClientHello", &msg));
        };
        // Once the first ClientHello is in, a dummy CCS may follow (§5).
        self.conn.ccs_allowed = true;
        check_client_hello(ch)?;
        if retry.is_none() {
            self.conn.client_random = ch.random;
        }
        let choice = self.choose(ch, retry.as_deref())?;
        let share = match choice.share {
            Ok(entry) => entry,
            Err(group) => {
                if retry.is_some() {
                    // The second ClientHello must carry the share we asked for (§4.1.4).
                    return Err(PeerMisbehaved::SecondClientHelloMismatch("key_share").into());
                }
                return self.send_hello_retry(ch, &msg, choice.suite, group);
            }
        };
        let (mut transcript, ccs_sent) = match retry {
            Some(r) => {
                // §4.1.2: the second ClientHello answers the HelloRetryRequest.
                if choice.suite.suite != r.suite {
                    return Err(PeerMisbehaved::HelloRetryMismatch("cipher suite").into());
                }
                if r.random != ch.random || r.session_id != ch.legacy_session_id {
                    return Err(PeerMisbehaved::SecondClientHelloMismatch("random").into());
                }
                let cookie = ch.extensions.iter().find_map(|e| match e {
                    Extension::Cookie(c) => Some(c),
                    _ => None,
                });
                if r.cookie.as_ref() != cookie {
                    return Err(PeerMisbehaved::SecondClientHelloMismatch("cookie").into());
                }
                if ch.find(ExtensionType::EarlyData).is_some() {
                    return Err(PeerMisbehaved::SecondClientHelloMismatch("early_data").into());
                }
                (r.transcript, r.ccs_sent)
            }
            None => {
                let mut t = Transcript::new();
                t.start_hash(choice.suite.hash)
                    .map_err(|_| Error::InvalidState("transcript hash already chosen"))?;
                (t, false)
            }
        };
        transcript.add(HandshakeType::ClientHello, &msg.encoded);
        let hello_retry = ccs_sent || transcript_has_retry(&transcript);

        // ServerHello (§4.1.3): random first, then our share, from the injected source.
        let random: [u8; 32] = self.conn.random();
        let (server_share, kx) =
            kx::server_respond(share.group, &share.key_exchange, self.conn.rng.as_mut())?;
        if self.conn.observe().secrets {
            self.conn.ev.push(Event::KeyShare(KeyShareEvent {
                group: share.group,
                components: kx.components.clone(),
                shared_secret: kx.shared_secret.to_vec(),
            }));
        }
        let sh = ServerHello {
            legacy_version: 0x0303,
            random,
            legacy_session_id_echo: ch.legacy_session_id.clone(),
            cipher_suite: choice.suite.suite,
            legacy_compression_method: 0,
            extensions: vec![
                Extension::KeyShareServer(KeyShareEntry {
                    group: share.group,
                    key_exchange: server_share,
                }),
                Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3),
            ],
        };
        let sh = HandshakeMessage::new(HandshakePayload::ServerHello(sh));
        transcript.add(HandshakeType::ServerHello, &sh.encoded);
        self.conn.send_handshake(&sh);
        // §D.4: in compatibility mode the CCS follows our first handshake message.
        if self.config.compat_mode && !ch.legacy_session_id.is_empty() && !ccs_sent {
            self.conn.send_ccs()?;
        }

        let suite = choice.suite;
        let ev = &mut self.conn.ev;
        let hs: HandshakeSecret = EarlySecret::new(suite.hash, None, ev)
            .into_handshake(Some(kx.shared_secret.as_ref()), ev);
        let client_hs = hs.client_handshake_traffic_secret(&transcript, ev);
        let server_hs = hs.server_handshake_traffic_secret(&transcript, ev);
        self.conn
            .set_write_keys(Epoch::Handshake, &suite, &server_hs)?;
        self.conn
            .set_read_keys(Epoch::Handshake, &suite, &client_hs)?;

        // EncryptedExtensions (§4.3.1).
        let (ee, alpn) = self.encrypted_extensions(ch)?;
        let ee = HandshakeMessage::new(HandshakePayload::EncryptedExtensions(ee));
        transcript.add(HandshakeType::EncryptedExtensions, &ee.encoded);
        self.conn.send_handshake(&ee);

        // CertificateRequest (§4.3.2).
        let asked_client = !matches!(self.config.client_auth, ClientAuth::None);
        if asked_client {
            let cr =
                HandshakeMessage::new(HandshakePayload::CertificateRequest(CertificateRequest {
                    context: Vec::new(),
                    extensions: vec![Extension::SignatureAlgorithms(
                        self.config.signature_schemes.clone(),
                    )],
                }));
            transcript.add(HandshakeType::CertificateRequest, &cr.encoded);
            self.conn.send_handshake(&cr);
        }

        // Certificate and CertificateVerify (§4.4.2, §4.4.3).
        let cert = HandshakeMessage::new(HandshakePayload::Certificate(CertificatePayload {
            context: Vec::new(),
            entries: self
                .config
                .cert
                .chain
                .iter()
                .map(|c| CertificateEntry {
                    cert_data: c.clone(),
                    extensions: Vec::new(),
                })
                .collect(),
        }));
        transcript.add(HandshakeType::Certificate, &cert.encoded);
        self.conn.send_handshake(&cert);
        let content = certificate_verify_message(true, transcript.current_hash().as_ref());
        let signature =
            self.config
                .cert
                .key
                .sign(choice.scheme, &content, self.conn.rng.as_mut())?;
        let cv = HandshakeMessage::new(HandshakePayload::CertificateVerify(CertificateVerify {
            scheme: choice.scheme,
            signature,
        }));
        transcript.add(HandshakeType::CertificateVerify, &cv.encoded);
        self.conn.send_handshake(&cv);

        // Finished (§4.4.4), then the application keys for our side.
        let ev = &mut self.conn.ev;
        let fin = server_hs.verify_data(transcript.current_hash().as_ref(), ev);
        let fin = HandshakeMessage::new(HandshakePayload::Finished(fin));
        transcript.add(HandshakeType::Finished, &fin.encoded);
        self.conn.send_handshake(&fin);
        let ev = &mut self.conn.ev;
        let master = hs.into_master(ev);
        let client_app = master.client_application_traffic_secret(&transcript, ev);
        let server_app = master.server_application_traffic_secret(&transcript, ev);
        let exporter = master.exporter_master_secret(&transcript, ev);
        self.conn
            .set_write_keys(Epoch::Application(0), &suite, &server_app)?;

        let negotiated = Negotiated {
            version: "TLSv1.3",
            suite: suite.suite,
            group: Some(share.group),
            signature_scheme: Some(choice.scheme),
            client_signature_scheme: None,
            resumed: false,
            psk_identity: None,
            early_data: if ch.find(ExtensionType::EarlyData).is_some() {
                EarlyDataStatus::Rejected
            } else {
                EarlyDataStatus::NotSent
            },
            alpn: alpn.map(|a| String::from_utf8_lossy(&a).into_owned()),
            hello_retry,
        };
        if ch.find(ExtensionType::EarlyData).is_some() {
            // We did not accept 0-RTT: skip what the client sends under early keys (§4.2.10).
            self.early_skip = Some(crate::record::MAX_EARLY_SKIP);
        }
        let h = Box::new(Handshaking {
            suite,
            transcript,
            master,
            client_hs,
            client_app,
            server_app,
            exporter,
            negotiated,
            client_chain: Vec::new(),
        });
        Ok(if asked_client {
            State::ExpectCertificate(h)
        } else {
            State::ExpectFinished(h)
        })
    }

    /// Pick suite, signature scheme and group (§4.1.1), in server preference order.
    fn choose(&self, ch: &ClientHello, retry: Option<&Retry>) -> Result<Choice, Error> {
        let suite = self
            .config
            .cipher_suites
            .iter()
            .filter(|s| ch.cipher_suites.contains(s))
            .find_map(|s| suite_params(*s))
            .ok_or(PeerMisbehaved::NoCommonCipherSuite)?;
        let client_schemes = match ch.find(ExtensionType::SignatureAlgorithms) {
            Some(Extension::SignatureAlgorithms(s)) => s.clone(),
            _ => {
                return Err(
                    PeerMisbehaved::MissingExtension(ExtensionType::SignatureAlgorithms).into(),
                )
            }
        };
        let scheme = self
            .config
            .cert
            .key
            .schemes()
            .into_iter()
            .filter(|s| self.config.signature_schemes.contains(s))
            .find(|s| client_schemes.contains(s))
            .ok_or(PeerMisbehaved::NoCommonSignatureScheme)?;
        let client_groups = match ch.find(ExtensionType::SupportedGroups) {
            Some(Extension::SupportedGroups(g)) => g.clone(),
            _ => {
                return Err(PeerMisbehaved::MissingExtension(ExtensionType::SupportedGroups).into())
            }
        };
        let shares = match ch.find(ExtensionType::KeyShare) {
            Some(Extension::KeyShareClient(s)) => s.clone(),
            _ => return Err(PeerMisbehaved::MissingExtension(ExtensionType::KeyShare).into()),
        };
        // §4.2.8: each share's group must be offered, and appear once.
        for (i, s) in shares.iter().enumerate() {
            if !client_groups.contains(&s.group) {
                return Err(PeerMisbehaved::IllegalExtension("key_share group not offered").into());
            }
            if shares[..i].iter().any(|o| o.group == s.group) {
                return Err(PeerMisbehaved::IllegalExtension("duplicate key_share group").into());
            }
        }
        if let Some(r) = retry {
            // §4.1.4: exactly one share, for the group we asked for.
            return match shares.as_slice() {
                [s] if s.group == r.group => Ok(Choice {
                    suite,
                    scheme,
                    share: Ok(s.clone()),
                }),
                _ => Err(PeerMisbehaved::SecondClientHelloMismatch("key_share").into()),
            };
        }
        let mutual: Vec<NamedGroup> = self
            .config
            .groups
            .iter()
            .copied()
            .filter(|g| client_groups.contains(g) && kx::is_supported(*g))
            .collect();
        // Prefer a group the client already sent a share for (saves a round trip), in our order.
        if let Some(s) = mutual
            .iter()
            .find_map(|g| shares.iter().find(|s| s.group == *g))
        {
            return Ok(Choice {
                suite,
                scheme,
                share: Ok(s.clone()),
            });
        }
        let group = *mutual.first().ok_or(PeerMisbehaved::NoCommonGroup)?;
        Ok(Choice {
            suite,
            scheme,
            share: Err(group),
        })
    }

    /// §4.1.4: ask for a share of `group`.
    fn send_hello_retry(
        &mut self,
        ch: &ClientHello,
        msg: &HandshakeMessage,
        suite: SuiteParams,
        group: NamedGroup,
    ) -> Result<State, Error> {
        let mut exts = vec![Extension::KeyShareHrr(group)];
        let cookie = self.config.hrr_cookie.map(|len| {
            let mut c = vec![0u8; len];
            self.conn.rng.fill(&mut c);
            c
        });
        if let Some(c) = &cookie {
            exts.push(Extension::Cookie(c.clone()));
        }
        exts.push(Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3));
        let hrr = HandshakeMessage::new(HandshakePayload::ServerHello(ServerHello {
            legacy_version: 0x0303,
            random: HRR_RANDOM,
            legacy_session_id_echo: ch.legacy_session_id.clone(),
            cipher_suite: suite.suite,
            legacy_compression_method: 0,
            extensions: exts,
        }));
        let mut transcript = Transcript::new();
        transcript
            .start_hash(suite.hash)
            .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
        transcript.add(HandshakeType::ClientHello, &msg.encoded);
        transcript
            .replace_with_message_hash()
            .map_err(|_| PeerMisbehaved::SecondHelloRetry)?;
        transcript.add(HandshakeType::ServerHello, &hrr.encoded);
        self.conn.send_handshake(&hrr);
        let mut ccs_sent = false;
        if self.config.compat_mode && !ch.legacy_session_id.is_empty() {
            self.conn.send_ccs()?;
            ccs_sent = true;
        }
        Ok(State::ExpectClientHello(Some(Box::new(Retry {
            suite: suite.suite,
            group,
            cookie,
            transcript,
            random: ch.random,
            session_id: ch.legacy_session_id.clone(),
            ccs_sent,
        }))))
    }

    /// Our EncryptedExtensions, and the ALPN protocol chosen (RFC 7301 §3.2).
    fn encrypted_extensions(
        &mut self,
        ch: &ClientHello,
    ) -> Result<(Vec<Extension>, Option<Vec<u8>>), Error> {
        let cfg = &self.config;
        let mut exts = Vec::new();
        if cfg.ack_server_name && ch.find(ExtensionType::ServerName).is_some() {
            exts.push(Extension::ServerNameAck);
        }
        let mut alpn = None;
        if let Some(Extension::Alpn(offered)) =
            ch.find(ExtensionType::ApplicationLayerProtocolNegotiation)
        {
            if !cfg.alpn.is_empty() {
                let p = cfg
                    .alpn
                    .iter()
                    .find(|p| offered.contains(p))
                    .ok_or(PeerMisbehaved::NoApplicationProtocol)?;
                exts.push(Extension::Alpn(vec![p.clone()]));
                alpn = Some(p.clone());
            }
        }
        if cfg.send_supported_groups {
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
            exts.push(Extension::RecordSizeLimit(ours));
        }
        apply_extension_order(&mut exts, &cfg.extension_order);
        Ok((exts, alpn))
    }

    fn on_certificate(
        &mut self,
        mut h: Box<Handshaking>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::Certificate(c) = &msg.payload else {
            return Err(unexpected("Certificate", &msg));
        };
        if !c.context.is_empty() {
            return Err(PeerMisbehaved::IllegalExtension("certificate_request_context").into());
        }
        h.transcript.add(HandshakeType::Certificate, &msg.encoded);
        if c.entries.is_empty() {
            // §4.4.2.4: no certificate — fatal only if we require one.
            if let ClientAuth::Required(_) = self.config.client_auth {
                return Err(PeerMisbehaved::NoClientCertificate.into());
            }
            return Ok(State::ExpectFinished(h));
        }
        let chain: Vec<Vec<u8>> = c.entries.iter().map(|e| e.cert_data.clone()).collect();
        let roots = match &self.config.client_auth {
            ClientAuth::Required(r) | ClientAuth::Optional(r) => r,
            ClientAuth::None => return Err(unexpected("Finished", &msg)),
        };
        if !roots.is_empty() {
            let now = self
                .config
                .fixed_validation_time_ms
                .unwrap_or(self.conn.now_ms);
            cert::verify_chain(&chain, roots, None, now / 1000, Usage::Client)?;
        }
        h.client_chain = chain;
        Ok(State::ExpectCertificateVerify(h))
    }

    fn on_certificate_verify(
        &mut self,
        mut h: Box<Handshaking>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakePayload::CertificateVerify(cv) = &msg.payload else {
            return Err(unexpected("CertificateVerify", &msg));
        };
        if !self.config.signature_schemes.contains(&cv.scheme) {
            return Err(PeerMisbehaved::UnofferedSignatureScheme.into());
        }
        let content = certificate_verify_message(false, h.transcript.current_hash().as_ref());
        let leaf = h
            .client_chain
            .first()
            .ok_or(PeerMisbehaved::NoClientCertificate)?;
        cert::verify_with_leaf(leaf, cv.scheme, &content, &cv.signature).map_err(|e| match e {
            SigError::BadSignature => Error::Peer(PeerMisbehaved::BadCertificateVerify),
            other => Error::Signature(other),
        })?;
        h.negotiated.client_signature_scheme = Some(cv.scheme);
        h.transcript
            .add(HandshakeType::CertificateVerify, &msg.encoded);
        Ok(State::ExpectFinished(h))
    }

    fn on_finished(&mut self, h: Box<Handshaking>, msg: HandshakeMessage) -> Result<State, Error> {
        let HandshakePayload::Finished(verify_data) = &msg.payload else {
            return Err(unexpected("Finished", &msg));
        };
        let mut h = *h;
        let ev = &mut self.conn.ev;
        let expected = h
            .client_hs
            .verify_data(h.transcript.current_hash().as_ref(), ev);
        if verify_data.len() != expected.len() {
            return Err(crate::messages::codec::DecodeError::Invalid {
                what: "Finished length",
            }
            .into());
        }
        if !bool::from(expected.ct_eq(verify_data)) {
            return Err(PeerMisbehaved::BadFinished.into());
        }
        h.transcript.add(HandshakeType::Finished, &msg.encoded);
        self.early_skip = None;
        self.conn
            .set_read_keys(Epoch::Application(0), &h.suite, &h.client_app)?;
        self.conn.ccs_allowed = false;
        let resumption = h
            .master
            .resumption_master_secret(&h.transcript, &mut self.conn.ev);
        self.negotiated = Some(h.negotiated.clone());
        self.conn.ev.push(Event::Connected(h.negotiated));
        Ok(State::Connected(Box::new(Traffic {
            suite: h.suite,
            client_app: h.client_app,
            server_app: h.server_app,
            exporter: h.exporter,
            resumption,
            key_updates_in_a_row: 0,
        })))
    }

    fn on_post_handshake(
        &mut self,
        mut t: Box<Traffic>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        match &msg.payload {
            HandshakePayload::KeyUpdate(req) => {
                receive_key_update(&mut self.conn, &mut t, *req)?;
                Ok(State::Connected(t))
            }
            _ => Err(unexpected("KeyUpdate", &msg)),
        }
    }
}

/// Was a HelloRetryRequest part of this transcript?
fn transcript_has_retry(t: &Transcript) -> bool {
    t.covers().starts_with("message_hash")
}

/// §4.1.2 checks every ClientHello must pass before we look at its offers.
fn check_client_hello(ch: &ClientHello) -> Result<(), Error> {
    match ch.find(ExtensionType::SupportedVersions) {
        Some(Extension::SupportedVersionsClient(v)) if v.contains(&ProtocolVersion::TLSv1_3) => {}
        Some(Extension::SupportedVersionsClient(_)) | None => {
            return Err(PeerMisbehaved::UnsupportedVersion.into())
        }
        Some(_) => return Err(PeerMisbehaved::IllegalExtension("supported_versions").into()),
    }
    if ch.legacy_version != 0x0303 {
        return Err(PeerMisbehaved::BadLegacyField("legacy_version").into());
    }
    if ch.legacy_compression_methods != [0] {
        return Err(PeerMisbehaved::BadLegacyField("legacy_compression_methods").into());
    }
    // §4.2.11: pre_shared_key must be the last extension.
    if let Some(pos) = ch
        .extensions
        .iter()
        .position(|e| e.typ() == ExtensionType::PreSharedKey)
    {
        if pos + 1 != ch.extensions.len() {
            return Err(PeerMisbehaved::PskNotLast.into());
        }
    }
    Ok(())
}

fn unexpected(expected: &'static str, msg: &HandshakeMessage) -> Error {
    PeerMisbehaved::UnexpectedMessage {
        expected,
        got: msg.typ(),
    }
    .into()
}

impl Endpoint for Server {
    fn conn(&mut self) -> &mut Conn {
        &mut self.conn
    }

    fn on_handshake(&mut self, bytes: Vec<u8>) -> Result<(), Error> {
        self.handle(bytes)
    }

    fn on_app_data(&mut self, data: Vec<u8>) -> Result<(), Error> {
        match &mut self.state {
            State::Connected(t) => {
                t.key_updates_in_a_row = 0;
                self.conn.ev.push(Event::AppData { data });
                Ok(())
            }
            _ => Err(PeerMisbehaved::ApplicationDataBeforeHandshake.into()),
        }
    }

    fn early_skip(&mut self) -> &mut Option<usize> {
        &mut self.early_skip
    }
}
