//! After the handshake (RFC 8446 §4.6), what the `Connected` state handles: a KeyUpdate, and
//! post-handshake client authentication (§4.6.2): our CertificateRequests and the client's
//! answers to them, one after another.

use crate::auth;
use crate::config::ClientAuth;
use crate::error::{Error, PeerMisbehaved};
use crate::events::Event;
use crate::messages::enums::HandshakeType;
use crate::messages::handshake::{CertificateRequest, HandshakeMessage, HandshakePayload};
use crate::traffic::{receive_key_update, Traffic};

use super::handshake::certificate_request_extensions;
use super::{
    unexpected, ClientCertificate, Connected, Cx, PendingRequest, PhaAnswer, PhaStep,
    PostHandshakeAuth, Server, State,
};

impl Server {
    /// Ask for the client's certificate now (post-handshake authentication, RFC 8446 §4.6.2):
    /// queues a CertificateRequest with our signature_algorithms and `context` as its
    /// certificate_request_context, or 16 bytes from the injected random source when `None`.
    /// Returns the context, which the [`Event::PostHandshakeAuth`] reporting the verified
    /// answer carries. Several requests may be outstanding; each context must be unique, and
    /// non-empty (§4.3.2: the empty context is the handshake's).
    ///
    /// Needs a connected server configured to ask
    /// ([`ServerConfig::post_handshake_auth`](crate::ServerConfig::post_handshake_auth)) and a
    /// client that offered post_handshake_auth (§4.2.6: "Servers MUST NOT send a
    /// post-handshake CertificateRequest to clients which do not offer this extension").
    pub fn request_client_certificate(&mut self, context: Option<&[u8]>) -> Result<Vec<u8>, Error> {
        if self.conn.failed || self.conn.write_closed {
            return Err(Error::Closed);
        }
        let (mut cx, state) = self.cx();
        let State::Connected(c) = state else {
            return Err(Error::InvalidState("handshake not complete"));
        };
        c.request_certificate(&mut cx, context)
    }
}

impl Connected {
    /// [`Server::request_client_certificate`] on a connected server.
    fn request_certificate(
        &mut self,
        cx: &mut Cx<'_>,
        context: Option<&[u8]>,
    ) -> Result<Vec<u8>, Error> {
        if matches!(cx.config.post_handshake_auth, ClientAuth::None) {
            return Err(Error::InvalidState(
                "post-handshake authentication is not configured (ServerConfig::post_handshake_auth)",
            ));
        }
        let Some(pha) = self.pha.as_deref_mut() else {
            return Err(Error::InvalidState(
                "the client did not offer post_handshake_auth",
            ));
        };
        let context = match context {
            Some(c) => c.to_vec(),
            None => cx.conn.random::<16>().to_vec(),
        };
        if context.is_empty() || context.len() > 255 {
            return Err(Error::InvalidState(
                "certificate_request_context must be 1 to 255 bytes after the handshake",
            ));
        }
        if pha.pending.iter().any(|p| p.context == context)
            || pha.answer.as_ref().is_some_and(|a| a.context == context)
        {
            return Err(Error::InvalidState(
                "certificate_request_context already used by an outstanding request",
            ));
        }
        let cr = HandshakePayload::CertificateRequest(CertificateRequest {
            context: context.clone(),
            extensions: certificate_request_extensions(cx.config),
        });
        let mut transcript = pha.handshake.clone();
        transcript.add(
            HandshakeType::CertificateRequest,
            cx.conn.send_handshake(&cr),
        );
        pha.pending.push(PendingRequest {
            context: context.clone(),
            transcript,
        });
        Ok(context)
    }

    /// A post-handshake message (§4.6). Taken by reference: when it fails, the connection is
    /// closed but keeps this state, so its secrets still answer.
    pub(super) fn handle(&mut self, cx: &mut Cx<'_>, msg: HandshakeMessage) -> Result<(), Error> {
        let Connected { traffic, pha } = self;
        match pha.as_deref_mut() {
            // Nothing can be asked: Certificate, CertificateVerify or Finished is unsolicited.
            None => match &msg.payload {
                HandshakePayload::KeyUpdate(req) => {
                    receive_key_update(cx.conn, traffic, *req)?;
                }
                _ => return Err(unexpected("KeyUpdate", &msg)),
            },
            Some(pha) => match pha.answer.take() {
                None => pha.handle_idle(cx, traffic, msg)?,
                Some(answer) => {
                    pha.answer = answer.handle(cx, traffic, msg)?;
                }
            },
        }
        Ok(())
    }
}

impl PostHandshakeAuth {
    /// Between answers: a KeyUpdate, or the Certificate that starts the answer to one of our
    /// outstanding requests.
    fn handle_idle(
        &mut self,
        cx: &mut Cx<'_>,
        traffic: &mut Traffic,
        msg: HandshakeMessage,
    ) -> Result<(), Error> {
        if !matches!(
            msg.payload,
            HandshakePayload::Certificate(_) | HandshakePayload::CompressedCertificate(_)
        ) {
            if let HandshakePayload::KeyUpdate(req) = &msg.payload {
                return receive_key_update(cx.conn, traffic, *req);
            }
            let expected = if self.pending.is_empty() {
                "KeyUpdate"
            } else {
                "KeyUpdate or Certificate"
            };
            return Err(unexpected(expected, &msg));
        }
        if self.pending.is_empty() {
            return Err(PeerMisbehaved::UnexpectedMessage {
                expected: "KeyUpdate",
                got: msg.typ(),
            }
            .into());
        }
        let (c, typ, encoded) = cx.client_certificate(msg, "KeyUpdate or Certificate")?;
        // §4.4.2: the context echoes the request answered; one we never sent, or one already
        // answered, is not a request of ours.
        let Some(i) = self.pending.iter().position(|p| p.context == c.context) else {
            return Err(PeerMisbehaved::IllegalExtension("certificate_request_context").into());
        };
        let PendingRequest {
            context,
            mut transcript,
        } = self.pending.remove(i);
        transcript.add(typ, &encoded);
        let matched = super::handshake::client_trust_anchor_matched(cx.config, &c)?;
        let mut chain: Vec<Vec<u8>> = c.entries.into_iter().map(|e| e.cert_data).collect();
        let certificates = chain.len();
        let step = if chain.is_empty() {
            // §4.4.2.4: no certificate — fatal only if we require one.
            if cx.config.post_handshake_auth.requires_certificate() {
                return Err(PeerMisbehaved::NoClientCertificate.into());
            }
            PhaStep::ExpectFinished(None)
        } else {
            let Some(roots) = cx.config.post_handshake_auth.roots() else {
                // Not reached: a request is pending only if the (immutable) configuration asks
                // (`request_client_certificate`). Were it not, the Certificate would answer no
                // request of ours: unexpected_message (§4.6.2), as during the handshake.
                return Err(PeerMisbehaved::UnexpectedMessage {
                    expected: "KeyUpdate",
                    got: typ,
                }
                .into());
            };
            cx.verify_client_chain(&chain, roots)?;
            if matched {
                cx.conn.ev.push(crate::events::Event::TrustAnchorMatched);
            }
            PhaStep::ExpectCertificateVerify(ClientCertificate(chain.swap_remove(0)))
        };
        self.answer = Some(PhaAnswer {
            context,
            transcript,
            certificates,
            step,
        });
        Ok(())
    }
}

impl PhaAnswer {
    /// The rest of one answer: CertificateVerify (after a non-empty Certificate), then
    /// Finished, keyed from client_application_traffic_secret_N (§4.4.4). `None`: the answer
    /// is complete and reported.
    fn handle(
        mut self,
        cx: &mut Cx<'_>,
        t: &Traffic,
        msg: HandshakeMessage,
    ) -> Result<Option<PhaAnswer>, Error> {
        match self.step {
            PhaStep::ExpectCertificateVerify(leaf) => {
                let HandshakePayload::CertificateVerify(cv) = &msg.payload else {
                    return Err(unexpected("CertificateVerify", &msg));
                };
                let scheme = cx.check_client_certificate_verify(&self.transcript, &leaf, cv)?;
                self.transcript
                    .add(HandshakeType::CertificateVerify, &msg.encoded);
                self.step = PhaStep::ExpectFinished(Some(scheme));
                Ok(Some(self))
            }
            PhaStep::ExpectFinished(verified) => {
                let HandshakePayload::Finished(verify_data) = &msg.payload else {
                    return Err(unexpected("Finished", &msg));
                };
                let expected = t
                    .client_app
                    .verify_data_for(&self.transcript, &mut cx.conn.ev);
                auth::check_verify_data(&expected, verify_data)?;
                cx.conn.ev.push(Event::PostHandshakeAuth {
                    direction: cx.conn.side.receiving(),
                    context: self.context,
                    certificates: self.certificates,
                    scheme: verified.map(|v| v.scheme),
                });
                Ok(None)
            }
        }
    }
}
