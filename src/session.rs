//! Resumption state: the client's ticket store (saved to and loaded from JSON so resumption works
//! across processes) and the server's ticket issuing, sealing and anti-replay (RFC 8446 §4.6.1, §8).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::crypto::aead::suite_params;
use crate::crypto::hash::HashAlg;
use crate::messages::enums::CipherSuite;

/// One ticket as the client keeps it (§4.6.1): enough to offer it and derive its PSK.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredTicket {
    /// The SNI it was obtained under (offered only to the same name).
    pub server_name: Option<String>,
    /// The suite of the connection that issued it (its hash must match on resumption, §4.2.11).
    #[serde(with = "suite_serde")]
    pub suite: CipherSuite,
    /// The opaque ticket (the PSK identity).
    #[serde(with = "hex_serde")]
    pub ticket: Vec<u8>,
    /// HKDF-Expand-Label(resumption_master_secret, "resumption", nonce) (§4.6.1).
    #[serde(with = "hex_serde")]
    pub psk: Vec<u8>,
    /// ticket_age_add.
    pub age_add: u32,
    /// ticket_lifetime in seconds.
    pub lifetime: u32,
    /// When we received it (the caller's clock, Unix ms).
    pub received_at_ms: u64,
    /// max_early_data_size, 0 if 0-RTT is not allowed.
    pub max_early_data: u32,
    /// The ALPN protocol of the issuing connection.
    pub alpn: Option<String>,
}

impl StoredTicket {
    /// The hash of the ticket's suite.
    pub fn suite_hash(&self) -> Option<HashAlg> {
        suite_params(self.suite).map(|s| s.hash)
    }

    /// Whether it is still valid at `now_ms` (§4.6.1: lifetime, capped at 7 days).
    pub fn is_fresh(&self, now_ms: u64) -> bool {
        let lifetime_ms = u64::from(self.lifetime.min(604_800)) * 1000;
        now_ms >= self.received_at_ms && now_ms - self.received_at_ms < lifetime_ms
    }
}

/// The client's tickets, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketStore {
    /// The tickets.
    pub tickets: VecDeque<StoredTicket>,
}

/// How many tickets a store keeps (older ones are dropped).
const MAX_TICKETS: usize = 16;

impl TicketStore {
    /// Add a ticket.
    pub fn insert(&mut self, t: StoredTicket) {
        if self.tickets.len() == MAX_TICKETS {
            self.tickets.pop_front();
        }
        self.tickets.push_back(t);
    }

    /// Remove and return the newest usable ticket for `server_name` whose suite hash is offered.
    /// Tickets are single-use (§C.4: reuse lets observers link connections).
    pub fn take_usable(
        &mut self,
        server_name: Option<&str>,
        suites: &[CipherSuite],
        now_ms: u64,
    ) -> Option<StoredTicket> {
        self.tickets.retain(|t| t.is_fresh(now_ms));
        let pos = self.tickets.iter().rposition(|t| {
            t.server_name.as_deref() == server_name
                && suites
                    .iter()
                    .any(|s| suite_params(*s).map(|p| p.hash) == t.suite_hash())
        })?;
        self.tickets.remove(pos)
    }

    /// Number of tickets.
    pub fn len(&self) -> usize {
        self.tickets.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tickets.is_empty()
    }

    /// JSON for a session file.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parse a session file.
    pub fn from_json(s: &str) -> Result<TicketStore, String> {
        serde_json::from_str(s).map_err(|e| e.to_string())
    }
}

mod hex_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::events::hex(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        crate::ledger::unhex(&s).ok_or_else(|| serde::de::Error::custom("bad hex"))
    }
}

mod suite_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::messages::enums::CipherSuite;

    pub fn serialize<S: Serializer>(v: &CipherSuite, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(v.to_repr())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<CipherSuite, D::Error> {
        Ok(CipherSuite::from(u16::deserialize(d)?))
    }
}
