//! The server half of ECH (RFC 9849 §7): opening ClientHelloOuter's payload with our keys, or
//! rejecting it; the second ClientHello after a HelloRetryRequest; the confirmations in our
//! HelloRetryRequest and ServerHello; our retry_configs; and what is reported of it all.

use crate::config::ServerConfig;
use crate::crypto::aead::SuiteParams;
use crate::crypto::hpke;
use crate::crypto::hpke::HpkeStep;
use crate::ech::confirm::{ACCEPT_LABEL, HRR_ACCEPT_LABEL};
use crate::ech::wire::{EchClientHello, HpkeSymmetricCipherSuite};
use crate::ech::{inner, EchError};
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EchEvent, EchInnerParts, EchParts, EchStatus, Epoch, Event, HandshakeEvent};
use crate::keyschedule::transcript::Transcript;
use crate::keyschedule::NoSink;
use crate::messages::codec::DecodeError;
use crate::messages::ech::EchConfigList;
use crate::messages::enums::{ExtensionType, HandshakeType};
use crate::messages::extensions::Extension;
use crate::messages::handshake::{
    ClientHello, DecodeContext, HandshakeMessage, HandshakePayload, ServerHello,
};

use super::{Cx, EchAccepted, EchState};

impl Cx<'_> {
    /// RFC 9849 §7.1 on the first ClientHello: find the candidate keys by config_id (all of
    /// them with trial decryption when none matches), skip those whose config does not offer
    /// the client's suite, and open the payload with the first that works. A payload no key
    /// opens is a rejection, not an error (it may be GREASE); once one opens, every later
    /// check is fatal. Returns the ClientHello to answer (ClientHelloInner when accepted).
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
            if let Some((suite, config_id, enc, payload)) = &offer {
                self.ech_parts(&outer, *suite, *config_id, enc, payload, None);
            }
            let ids = offer.map(|(suite, config_id, ..)| (suite, config_id));
            self.ech_event(EchStatus::Rejected, ids, outer_sni, None);
            return Ok((outer, encoded, EchState::Rejected));
        }
        let (suite, config_id, enc, payload) = ech_offer(e)?;
        let config = self.config;
        let body = encoded.get(4..).unwrap_or_default();
        let aad = inner::aad(body).map_err(ech_error)?;
        let id_of = |k: &&crate::crypto::ech::EchKeyPair| {
            k.config.contents().map(|c| c.key_config.config_id)
        };
        let mut candidates: Vec<_> = config
            .ech_keys
            .iter()
            .filter(|k| id_of(k) == Some(config_id))
            .collect();
        if candidates.is_empty() && config.ech_trial_decrypt {
            candidates = config.ech_keys.iter().collect();
        }
        let watch = self.conn.observes_hpke();
        for key in candidates {
            // §7.1: a config of another version, or without the client's suite, is skipped.
            let Some(c) = key.config.contents() else {
                continue;
            };
            if !c.key_config.cipher_suites.contains(&suite) {
                continue;
            }
            let Ok(hsuite) =
                hpke::Suite::from_ids(c.key_config.kem_id, suite.kdf_id, suite.aead_id)
            else {
                continue;
            };
            let info = crate::ech::hpke_info(&key.config.raw);
            let mut steps: Vec<HpkeStep> = Vec::new();
            let mut none = NoSink;
            let sink: &mut dyn hpke::HpkeSink = if watch { &mut steps } else { &mut none };
            let Ok(mut ctx) = hpke::setup_base_r(hsuite, &enc, &key.key, &info, sink) else {
                continue;
            };
            let Ok(encoded_inner) = ctx.open(&aad, &payload) else {
                continue;
            };
            let (inner, inner_bytes) = self.inner_hello(&encoded_inner, body)?;
            let opened = (encoded_inner.as_slice(), inner_bytes.as_slice());
            self.ech_parts(&outer, suite, config_id, &enc, &payload, Some(opened));
            self.conn.ech_hpke(steps, &outer.random, &key.config.raw);
            let inner_sni = inner.host_name();
            self.ech_event(
                EchStatus::Accepted,
                Some((suite, config_id)),
                outer_sni,
                inner_sni,
            );
            let acc = EchAccepted {
                ctx,
                suite,
                config_id,
                inner_random: inner.random,
            };
            return Ok((inner, inner_bytes, EchState::Accepted(Box::new(acc))));
        }
        self.ech_parts(&outer, suite, config_id, &enc, &payload, None);
        self.ech_event(
            EchStatus::Rejected,
            Some((suite, config_id)),
            outer_sni,
            None,
        );
        Ok((outer, encoded, EchState::Rejected))
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
                    if let Some((suite, config_id, enc, payload)) = offer {
                        self.ech_parts(&ch, suite, config_id, &enc, &payload, None);
                    }
                }
                (ch, encoded, other)
            }
        })
    }

    /// RFC 9849 §7.1.1: after a HelloRetryRequest that accepted ECH, the second
    /// ClientHelloOuter must carry ECH (missing_extension) with the same suite and config_id
    /// and an empty enc (illegal_parameter), and its payload must open with the first
    /// context (decrypt_error).
    fn open_second_ech(
        &mut self,
        mut acc: Box<EchAccepted>,
        outer: ClientHello,
        encoded: Vec<u8>,
    ) -> Result<(ClientHello, Vec<u8>, EchState), Error> {
        let Some(e) = outer.find(ExtensionType::EncryptedClientHello) else {
            return Err(ech_error(EchError::MissingAfterRetry));
        };
        let (suite, config_id, enc, payload) = ech_offer(e)?;
        if suite != acc.suite || config_id != acc.config_id {
            return Err(ech_error(EchError::Illegal(
                "the second ClientHelloOuter changed the ECH cipher suite or config_id",
            )));
        }
        if !enc.is_empty() {
            return Err(ech_error(EchError::Illegal(
                "the second ClientHelloOuter's ECH enc is not empty",
            )));
        }
        let body = encoded.get(4..).unwrap_or_default();
        let aad = inner::aad(body).map_err(ech_error)?;
        let encoded_inner = acc
            .ctx
            .open(&aad, &payload)
            .map_err(|_| ech_error(EchError::DecryptFailed))?;
        let (inner, inner_bytes) = self.inner_hello(&encoded_inner, body)?;
        let opened = (encoded_inner.as_slice(), inner_bytes.as_slice());
        self.ech_parts(&outer, suite, config_id, &enc, &payload, Some(opened));
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
        // RFC 9849 §7.2: the last 8 bytes of random confirm ECH, computed over the inner
        // transcript through this ServerHello with those bytes zero.
        sh.random[24..].fill(0);
        let zeroed = HandshakeMessage::new(HandshakePayload::ServerHello(sh.clone())).encoded;
        let th = transcript.hash_of_prefix_with(&zeroed);
        let c = self
            .conn
            .ech_confirmation(suite.hash, &acc.inner_random, ACCEPT_LABEL, &th);
        sh.random[24..].copy_from_slice(&c);
    }

    /// RFC 9849 §7.2.1: ECH accepted, so our HelloRetryRequest's `encrypted_client_hello`
    /// (its last extension, eight zero bytes until now) confirms it.
    pub(super) fn confirm_ech_retry(
        &mut self,
        acc: &EchAccepted,
        hrr: &mut ServerHello,
        transcript: &Transcript,
        suite: &SuiteParams,
    ) {
        // hrr_accept_confirmation over message_hash(ClientHelloInner1) and this HRR with
        // the extension's bytes zero (§7.2.1).
        let zeroed = HandshakeMessage::new(HandshakePayload::ServerHello(hrr.clone())).encoded;
        let th = transcript.hash_of_prefix_with(&zeroed);
        let c = self
            .conn
            .ech_confirmation(suite.hash, &acc.inner_random, HRR_ACCEPT_LABEL, &th);
        if let Some(Extension::Unknown { body, .. }) = hrr.extensions.last_mut() {
            body.copy_from_slice(&c);
        }
    }

    /// ClientHelloInner from an opened EncodedClientHelloInner (§5.1), as a whole message,
    /// with the §7.1 checks: a well-formed inner-type `encrypted_client_hello` (its type byte
    /// and nothing else), and TLS 1.3 only. `ech_outer_extensions`, which "MUST NOT appear
    /// in ... ClientHelloInner" (§5.1), cannot be left in it: `inner::decode` replaces the
    /// one it expands and refuses a second and a reference to one in ClientHelloOuter.
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
        let HandshakePayload::ClientHello(ch) = msg.payload else {
            return Err(ech_error(EchError::Illegal(
                "ClientHelloInner is not a ClientHello",
            )));
        };
        match ch.find(ExtensionType::EncryptedClientHello) {
            Some(Extension::Unknown { body, .. }) if body.as_slice() == [1] => {}
            _ => {
                return Err(ech_error(EchError::Illegal(
                    "ClientHelloInner lacks a well-formed inner-type encrypted_client_hello",
                )))
            }
        }
        let tls13_only = match ch.find(ExtensionType::SupportedVersions) {
            Some(Extension::SupportedVersionsClient(v)) => v.iter().all(|v| v.to_repr() > 0x0303),
            _ => false,
        };
        if !tls13_only {
            return Err(ech_error(EchError::Illegal(
                "ClientHelloInner offers TLS 1.2 or below",
            )));
        }
        Ok((ch, bytes))
    }

    /// Reports [`Event::EchParts`] for the extension of ClientHelloOuter `outer`: its outer
    /// parts as received, and, when a key opened it, the EncodedClientHelloInner and the
    /// ClientHelloInner message rebuilt from it. `saved` is what the rebuilt hello has beyond
    /// the encoded one's ClientHello and the legacy_session_id copied back in (§5.1).
    fn ech_parts(
        &mut self,
        outer: &ClientHello,
        suite: HpkeSymmetricCipherSuite,
        config_id: u8,
        enc: &[u8],
        payload: &[u8],
        opened: Option<(&[u8], &[u8])>,
    ) {
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
            suite,
            config_id,
            enc.len(),
            payload.len(),
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

/// The outer `encrypted_client_hello` of a ClientHello (RFC 9849 §5): suite, config_id, enc,
/// payload. An inner-type one from the network and an unknown ECHClientHelloType are
/// illegal_parameter (§7); one that does not parse is decode_error. Fatal only to a server
/// with ECH keys: one without reports what parsed and ignores the rest (`open_ech`).
fn ech_offer(e: &Extension) -> Result<(HpkeSymmetricCipherSuite, u8, Vec<u8>, Vec<u8>), Error> {
    let Extension::Unknown { body, .. } = e else {
        return Err(DecodeError::Invalid {
            what: "encrypted_client_hello",
        }
        .into());
    };
    match body.first() {
        Some(0) => {}
        Some(1) => {
            return Err(ech_error(EchError::Illegal(
                "an inner-type encrypted_client_hello from the network",
            )))
        }
        Some(_) => return Err(ech_error(EchError::Illegal("unknown ECHClientHelloType"))),
        None => {
            return Err(DecodeError::Invalid {
                what: "encrypted_client_hello",
            }
            .into())
        }
    }
    match EchClientHello::decode(body)? {
        EchClientHello::Outer {
            suite,
            config_id,
            enc,
            payload,
        } => Ok((suite, config_id, enc, payload)),
        EchClientHello::Inner => Err(ech_error(EchError::Illegal(
            "an inner-type encrypted_client_hello from the network",
        ))),
    }
}

/// The ECHConfigList of every key: our retry_configs (RFC 9849 §7.1).
pub(super) fn retry_configs(config: &ServerConfig) -> EchConfigList {
    EchConfigList {
        configs: config.ech_keys.iter().map(|k| k.config.clone()).collect(),
    }
}

fn ech_error(e: EchError) -> Error {
    Error::Peer(PeerMisbehaved::Ech(e))
}
