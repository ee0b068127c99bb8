//! After the handshake (RFC 8446 §4.6), what the `Connected` state handles: a NewSessionTicket
//! (kept by `tickets.rs`), a KeyUpdate ([`crate::traffic`]), and, when we offered
//! post_handshake_auth, a CertificateRequest, answered at once (§4.6.2).

use crate::error::Error;
use crate::events::Event;
use crate::keyschedule::transcript::Transcript;
use crate::messages::enums::HandshakeType;
use crate::messages::handshake::{
    CertificateRequest, HandshakeMessage, HandshakePayload, OutgoingMessage,
};
use crate::traffic::{receive_key_update, Traffic};

use super::{
    requested_compression, requested_schemes, requested_trust_anchors, unexpected,
    CertificateRequested, Connected, Cx,
};

impl Connected {
    pub(super) fn handle(&mut self, cx: &mut Cx<'_>, msg: HandshakeMessage) -> Result<(), Error> {
        if let HandshakePayload::CertificateRequest(cr) = &msg.payload {
            // §4.2.6: a CertificateRequest to a client that did not offer post_handshake_auth
            // is "a fatal "unexpected_message" alert".
            let Some(handshake) = &self.pha else {
                return Err(unexpected("NewSessionTicket or KeyUpdate", &msg));
            };
            cx.answer_certificate_request(handshake, &self.traffic, cr, &msg.encoded)?;
            return Ok(());
        }
        let t = &mut self.traffic;
        match &msg.payload {
            HandshakePayload::NewSessionTicket(nst) => {
                cx.store_ticket(t, nst)?;
                Ok(())
            }
            HandshakePayload::KeyUpdate(req) => {
                receive_key_update(cx.conn, t, *req)?;
                Ok(())
            }
            _ => Err(unexpected(
                "NewSessionTicket, KeyUpdate or CertificateRequest",
                &msg,
            )),
        }
    }
}

impl Cx<'_> {
    /// §4.6.2: answer a post-handshake CertificateRequest with Certificate, CertificateVerify
    /// (when we have a certificate) and Finished, under the current application traffic keys.
    /// Each request's Handshake Context is the handshake's transcript (through our Finished)
    /// followed by this request and our answer alone (§4.4.1), so `handshake` is cloned, never
    /// extended: several requests, outstanding at once or one after another, are independent.
    fn answer_certificate_request(
        &mut self,
        handshake: &Transcript,
        t: &Traffic,
        cr: &CertificateRequest,
        encoded: &[u8],
    ) -> Result<(), Error> {
        let request = CertificateRequested {
            schemes: requested_schemes(cr)?,
            compression: requested_compression(cr),
            trust_anchors: requested_trust_anchors(self.config, cr)?,
        };
        if self.conn.write_closed {
            // After our close_notify nothing may be sent (§6.1): the request goes unanswered.
            return Ok(());
        }
        let mut transcript = handshake.clone();
        transcript.add(HandshakeType::CertificateRequest, encoded);
        let scheme = self.send_client_certificate(&mut transcript, &cr.context, &request)?;
        // §4.4.4: after the handshake the Finished key comes from
        // client_application_traffic_secret_N, the one we send under now.
        let fin = t.client_app.verify_data_for(&transcript, &mut self.conn.ev);
        self.conn.send_handshake(OutgoingMessage::Finished(&fin));
        let certificates = match (&self.config.client_cert, scheme) {
            (Some(ck), Some(_)) => ck.chain.len(),
            _ => 0,
        };
        self.conn.ev.push(Event::PostHandshakeAuth {
            direction: self.conn.side.sending(),
            context: cr.context.clone(),
            certificates,
            scheme,
        });
        Ok(())
    }
}
