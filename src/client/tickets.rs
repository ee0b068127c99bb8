//! Resumption and 0-RTT on the client (RFC 8446 §2.2, §4.2.10, §4.6.1): which PSK a ClientHello
//! offers, the early data it allows, the data handed back when the server rejects it, and what
//! a NewSessionTicket leaves for the next connection.

use crate::crypto::aead::{suite_params, SuiteParams};
use crate::error::{Error, PeerMisbehaved};
use crate::events::{EarlyDataStatus, Epoch, Event};
use crate::keyschedule::schedule::EarlySecret;
use crate::keyschedule::transcript::Transcript;
use crate::messages::extensions::Extension;
use crate::messages::handshake::NewSessionTicket;
use crate::session::StoredTicket;
use crate::traffic::Traffic;

use super::{Cx, OfferedPsk};

impl Cx<'_> {
    /// What the ClientHello offers (§4.2.11): a usable resumption ticket if we have one, else
    /// the first configured external PSK (an external PSK is kept as a ticket that never
    /// expires and allows no 0-RTT). Either comes with its suite: `take_usable` returns only
    /// tickets in a known suite whose hash an offered suite shares, and `Client::new` refused
    /// external PSKs in suites we lack.
    pub(super) fn psk_to_offer(&mut self) -> Option<OfferedPsk> {
        let now = self.conn.now_ms;
        let ticket = self
            .tickets
            .take_usable(
                self.config.server_name.as_deref(),
                &self.config.cipher_suites,
                now,
            )
            .or_else(|| {
                self.config.external_psks.first().map(|p| StoredTicket {
                    server_name: self.config.server_name.clone(),
                    suite: p.suite,
                    ticket: p.identity.clone(),
                    psk: p.key.clone(),
                    age_add: 0,
                    lifetime: 0,
                    received_at_ms: now,
                    max_early_data: 0,
                    alpn: None,
                    external: true,
                })
            })?;
        let suite = suite_params(ticket.suite)?;
        Some(OfferedPsk { ticket, suite })
    }

    /// §4.2.10: 0-RTT data goes right after the ClientHello under the client early traffic
    /// secret (the early exporter is derived with it, §7.5). In compatibility mode our CCS goes
    /// first (§D.4); returns whether it went.
    pub(super) fn open_early_data(
        &mut self,
        early: &EarlySecret,
        transcript: &Transcript,
        suite: &SuiteParams,
    ) -> Result<bool, Error> {
        let mut ccs_sent = false;
        if self.config.compat_mode {
            self.conn.send_ccs()?;
            ccs_sent = true;
        }
        let secret = early.client_early_traffic_secret(transcript, &mut self.conn.ev);
        let exporter = early.early_exporter_master_secret(transcript, &mut self.conn.ev);
        self.conn.log_secret(exporter.name(), exporter.as_bytes());
        *self.early_exporter = Some(exporter);
        self.conn.set_write_keys(Epoch::Early, suite, &secret)?;
        self.early_data.open = true;
        Ok(ccs_sent)
    }

    /// A hello that offers early data may carry up to the ticket's max_early_data_size
    /// (§4.2.10); until EncryptedExtensions accepts it, it counts as rejected.
    pub(super) fn early_data_budget(&mut self, early_data_offered: bool, psk: Option<&OfferedPsk>) {
        if let (Some(p), true) = (psk, early_data_offered) {
            self.early_data.budget = p.ticket.max_early_data as usize;
            self.early_data.status = Some(EarlyDataStatus::Rejected);
        }
    }

    /// The server did not take our 0-RTT data (§4.2.10), or a HelloRetryRequest abandoned it:
    /// no more may be sent, and what was sent is the application's to send again.
    pub(super) fn reject_early_data(&mut self) {
        if self.early_data.status.is_some() {
            self.early_data.status = Some(EarlyDataStatus::Rejected);
            self.early_data.open = false;
            let data = core::mem::take(&mut self.early_data.sent);
            // Never lose application bytes silently: hand them back, on the data path (an
            // observer is told too).
            if self.conn.ev.active() {
                self.conn
                    .ev
                    .push(Event::EarlyDataRejected { data: data.clone() });
            }
            self.early_data.rejected = data;
        }
    }

    /// A NewSessionTicket (§4.6.1): its PSK derived from the resumption secret and the ticket
    /// nonce (§4.6.1), stored for a later ClientHello with what 0-RTT will need (§4.2.10).
    pub(super) fn store_ticket(
        &mut self,
        t: &Traffic,
        nst: &NewSessionTicket,
    ) -> Result<(), Error> {
        // §4.6.1: lifetime at most 7 days.
        if nst.lifetime > 604_800 {
            return Err(PeerMisbehaved::TicketLifetimeTooLong.into());
        }
        let max_early = nst.extensions.iter().find_map(|e| match e {
            Extension::EarlyDataMax(n) => Some(*n),
            _ => None,
        });
        let psk = t.resumption.psk(&nst.nonce, &mut self.conn.ev);
        self.tickets.insert(StoredTicket {
            server_name: self.config.server_name.clone(),
            suite: t.suite.suite,
            ticket: nst.ticket.clone(),
            psk: psk.as_ref().to_vec(),
            age_add: nst.age_add,
            lifetime: nst.lifetime,
            received_at_ms: self.conn.now_ms,
            max_early_data: max_early.unwrap_or(0),
            alpn: self.negotiated.as_ref().and_then(|n| n.alpn.clone()),
            external: false,
        });
        self.conn.ev.push(Event::Ticket {
            direction: self.conn.side.receiving(),
            lifetime: nst.lifetime,
            max_early_data: max_early,
        });
        Ok(())
    }
}
