//! Resumption and 0-RTT on the server (RFC 8446 §2.2, §4.2.10, §4.2.11, §4.6.1): which offered
//! PSK we can use and its binder, whether to accept early data (with the anti-replay policy,
//! §8), and the NewSessionTickets we issue.

use subtle::ConstantTimeEq;

use crate::config::{AntiReplay, TicketMode};
use crate::crypto::aead::{suite_params, SuiteParams};
use crate::error::{Error, PeerMisbehaved};
use crate::events::Event;
use crate::keyschedule::schedule::EarlySecret;
use crate::keyschedule::transcript::Transcript;
use crate::messages::enums::{ExtensionType, PskKeyExchangeMode};
use crate::messages::extensions::Extension;
use crate::messages::handshake::{ClientHello, HandshakePayload, NewSessionTicket};
use crate::session::ResumptionState;
use crate::traffic::Traffic;

use super::hello::ShareChoice;
use super::{Cx, Server, State};

/// An offered PSK we can use, before its binder is checked.
pub(super) struct PskCandidate {
    pub(super) index: u16,
    pub(super) psk: Vec<u8>,
    pub(super) binder: Vec<u8>,
    pub(super) external: bool,
    pub(super) state: Option<ResumptionState>,
    pub(super) ticket: Vec<u8>,
    pub(super) client_age_ms: u64,
    pub(super) max_early_data: u32,
}

impl Drop for PskCandidate {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.psk);
    }
}

/// How far the client's and our view of a ticket's age may differ for 0-RTT (§8.3).
const DEFAULT_AGE_WINDOW_MS: u64 = 10_000;

impl Cx<'_> {
    /// The first offered PSK identity we can use (§4.2.11), without checking its binder yet.
    pub(super) fn psk_candidate(
        &mut self,
        ch: &ClientHello,
        suite: &SuiteParams,
    ) -> Result<Option<PskCandidate>, Error> {
        let Some(Extension::PreSharedKeyClient(offer)) = ch.find(ExtensionType::PreSharedKey)
        else {
            return Ok(None);
        };
        // §4.2.9: a PSK offer without psk_key_exchange_modes is an error.
        if ch.find(ExtensionType::PskKeyExchangeModes).is_none() {
            return Err(
                PeerMisbehaved::MissingExtension(ExtensionType::PskKeyExchangeModes).into(),
            );
        }
        if offer.identities.len() != offer.binders.len() {
            return Err(PeerMisbehaved::IllegalExtension("pre_shared_key binders").into());
        }
        let now = self.conn.now_ms;
        for (i, (id, binder)) in offer.identities.iter().zip(&offer.binders).enumerate() {
            let Ok(index) = u16::try_from(i) else { break };
            if let Some(ext) = self
                .config
                .external_psks
                .iter()
                .find(|p| p.identity == id.identity)
            {
                if suite_params(ext.suite).map(|s| s.hash) == Some(suite.hash) {
                    return Ok(Some(PskCandidate {
                        index,
                        psk: ext.key.clone(),
                        binder: binder.clone(),
                        external: true,
                        state: None,
                        ticket: id.identity.clone(),
                        client_age_ms: 0,
                        max_early_data: 0,
                    }));
                }
                continue;
            }
            let sessions = &self.config.sessions;
            let state = match self.config.ticket_mode {
                TicketMode::Stateless => sessions.open(&id.identity),
                // Stateful tickets are single-use: taking one removes it (§8.1).
                TicketMode::Stateful => sessions.take(&id.identity),
            };
            let Some(state) = state else { continue };
            if !state.is_fresh(now) || suite_params(state.suite).map(|s| s.hash) != Some(suite.hash)
            {
                continue;
            }
            let client_age_ms = u64::from(id.obfuscated_ticket_age.wrapping_sub(state.age_add));
            return Ok(Some(PskCandidate {
                index,
                psk: state.psk.clone(),
                binder: binder.clone(),
                external: false,
                max_early_data: state.max_early_data,
                state: Some(state),
                ticket: id.identity.clone(),
                client_age_ms,
            }));
        }
        Ok(None)
    }

    /// The early secret (§7.1): from the PSK chosen, once its binder proves that the client
    /// holds it and binds it to this ClientHello (§4.2.11.2), verified over the transcript so
    /// far plus the ClientHello up to its binders; without a PSK, from zeros.
    pub(super) fn early_secret(
        &mut self,
        psk: Option<&PskCandidate>,
        suite: &SuiteParams,
        transcript: &Transcript,
        encoded: &[u8],
        ch: &ClientHello,
    ) -> Result<EarlySecret, Error> {
        Ok(match psk {
            Some(p) => {
                let es = EarlySecret::new(suite.hash, Some(&p.psk), &mut self.conn.ev);
                let expected = es
                    .binder_key(!p.external, &mut self.conn.ev)
                    .binder_for_hello(transcript, encoded, ch.binders_len(), &mut self.conn.ev)
                    .ok_or(PeerMisbehaved::BadBinder)?;
                if !bool::from(expected.ct_eq(&p.binder)) {
                    return Err(PeerMisbehaved::BadBinder.into());
                }
                es
            }
            None => EarlySecret::new(suite.hash, None, &mut self.conn.ev),
        })
    }

    /// psk_dhe_ke when both sides allow it and a key exchange is possible, else psk_ke (§4.2.9).
    pub(super) fn psk_mode(
        &self,
        ch: &ClientHello,
        share: &ShareChoice,
    ) -> Option<PskKeyExchangeMode> {
        let offered = match ch.find(ExtensionType::PskKeyExchangeModes) {
            Some(Extension::PskKeyExchangeModes(m)) => m.clone(),
            _ => return None,
        };
        self.config.psk_modes.iter().copied().find(|m| {
            offered.contains(m)
                && match m {
                    PskKeyExchangeMode::PskDheKe => {
                        matches!(share, ShareChoice::Use(_) | ShareChoice::Retry(_))
                    }
                    _ => true,
                }
        })
    }

    /// Whether to accept 0-RTT with this PSK (§4.2.10, §8).
    pub(super) fn accept_early(
        &self,
        p: &PskCandidate,
        suite: &SuiteParams,
        alpn: Option<&[u8]>,
    ) -> bool {
        let Some(state) = &p.state else { return false };
        if p.index != 0
            || self.config.max_early_data == 0
            || state.max_early_data == 0
            || state.suite != suite.suite
            || state.alpn.as_deref() != alpn
        {
            return false;
        }
        let now = self.conn.now_ms;
        let server_age = now.saturating_sub(state.issued_ms);
        let skew = server_age.abs_diff(p.client_age_ms);
        let sessions = &self.config.sessions;
        let expires = state.issued_ms + u64::from(state.lifetime) * 1000;
        match self.config.anti_replay {
            AntiReplay::Off => true,
            // A stateful ticket was removed from the cache when it was looked up, so it cannot
            // be used twice; only stateless tickets need remembering (§8.1).
            AntiReplay::SingleUse => {
                skew <= DEFAULT_AGE_WINDOW_MS
                    && (self.config.ticket_mode == TicketMode::Stateful
                        || sessions.first_use(&p.ticket, now, expires))
            }
            AntiReplay::Window { window_ms } => {
                skew <= window_ms && sessions.first_hello(&p.binder, now, window_ms)
            }
        }
    }

    /// Send one NewSessionTicket (§4.6.1). Draws age_add, then the ticket (stateful: random
    /// identifier; stateless: sealing nonce) from the injected source.
    pub(super) fn issue_ticket(&mut self, t: &Traffic) -> Result<(), Error> {
        let cfg = self.config;
        let age_add = u32::from_be_bytes(self.conn.random::<4>());
        // A per-connection counter keeps nonces unique (§4.6.1); RFC 8448 uses two bytes.
        let nonce = self.tickets_sent.to_be_bytes().to_vec();
        *self.tickets_sent = self.tickets_sent.wrapping_add(1);
        let psk = t.resumption.psk(&nonce, &mut self.conn.ev);
        let now = self.conn.now_ms;
        let state = ResumptionState {
            suite: t.suite.suite,
            psk: psk.as_ref().to_vec(),
            age_add,
            issued_ms: now,
            lifetime: cfg.ticket_lifetime.min(604_800),
            max_early_data: cfg.max_early_data,
            alpn: self
                .negotiated
                .as_ref()
                .and_then(|n| n.alpn.as_ref().map(|a| a.as_bytes().to_vec())),
        };
        let ticket = match cfg.ticket_mode {
            TicketMode::Stateless => cfg.sessions.seal(&state, self.conn.rng.as_mut(), now),
            TicketMode::Stateful => {
                let mut id = vec![0u8; cfg.stateful_ticket_len.max(1)];
                self.conn.rng.fill(&mut id);
                cfg.sessions.store(id.clone(), state, now);
                id
            }
        };
        let mut extensions = Vec::new();
        if cfg.max_early_data > 0 {
            extensions.push(Extension::EarlyDataMax(cfg.max_early_data));
        }
        self.conn
            .send_handshake(&HandshakePayload::NewSessionTicket(NewSessionTicket {
                lifetime: cfg.ticket_lifetime.min(604_800),
                age_add,
                nonce,
                ticket,
                extensions,
            }));
        self.conn.ev.push(Event::Ticket {
            direction: self.conn.side.sending(),
            lifetime: cfg.ticket_lifetime,
            max_early_data: (cfg.max_early_data > 0).then_some(cfg.max_early_data),
        });
        Ok(())
    }
}

impl Server {
    /// Send another NewSessionTicket now (§4.6.1: "at any time after" the client's Finished).
    pub fn send_ticket(&mut self) -> Result<(), Error> {
        // The state is lent beside the context: the connected state's secrets stay in place.
        let (mut cx, state) = self.cx();
        match state {
            State::Connected(c) => cx.issue_ticket(&c.traffic),
            _ => Err(Error::InvalidState("handshake not complete")),
        }
    }
}
