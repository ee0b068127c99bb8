//! Resumption state: the client's ticket store (saved to and loaded from JSON so resumption works
//! across processes) and the server's ticket issuing, sealing and anti-replay (RFC 8446 §4.6.1, §8).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::crypto::aead::suite_params;
use crate::crypto::hash::HashAlg;
use crate::messages::enums::CipherSuite;

/// One ticket as the client keeps it (§4.6.1): enough to offer it and derive its PSK.
///
/// The PSK is erased when the ticket drops, and `Debug` shows only its length.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// An external PSK (RFC 8446 §4.2.11): its binder uses the "ext binder" label and its
    /// obfuscated age is 0.
    #[serde(default)]
    pub external: bool,
}

impl Drop for StoredTicket {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.psk);
    }
}

impl core::fmt::Debug for StoredTicket {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StoredTicket")
            .field("server_name", &self.server_name)
            .field("suite", &self.suite)
            .field("ticket_len", &self.ticket.len())
            .field("psk", &format_args!("<{} bytes>", self.psk.len()))
            .field("lifetime", &self.lifetime)
            .field("received_at_ms", &self.received_at_ms)
            .field("max_early_data", &self.max_early_data)
            .field("alpn", &self.alpn)
            .field("external", &self.external)
            .finish_non_exhaustive()
    }
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

    /// Remove and return the newest usable ticket for `server_name` in a suite this build knows
    /// whose hash an offered suite shares (§4.2.11: a PSK is used with its hash).
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
                && t.suite_hash().is_some_and(|h| {
                    suites
                        .iter()
                        .any(|s| suite_params(*s).is_some_and(|p| p.hash == h))
                })
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
    #[cfg(feature = "json")]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parse a session file.
    #[cfg(feature = "json")]
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

// ------------------------------------------------------------------------------------- server

use std::collections::HashMap;
use std::sync::Mutex;

use crate::crypto::aead::{AeadAlg, AeadKey};
use crate::crypto::random::RandomSource;
use crate::messages::codec::{Reader, Writer};

/// What a server needs to resume a session (the content of a stateless ticket, or a cache entry).
///
/// The PSK is erased when the state drops, and `Debug` shows only its length.
#[derive(Clone, PartialEq, Eq)]
pub struct ResumptionState {
    /// The suite of the issuing connection.
    pub suite: CipherSuite,
    /// The resumption PSK (§4.6.1).
    pub psk: Vec<u8>,
    /// ticket_age_add.
    pub age_add: u32,
    /// When the ticket was issued (server clock, Unix ms).
    pub issued_ms: u64,
    /// ticket_lifetime (s).
    pub lifetime: u32,
    /// max_early_data_size the ticket allows.
    pub max_early_data: u32,
    /// ALPN of the issuing connection (0-RTT requires the same, §4.2.10).
    pub alpn: Option<Vec<u8>>,
}

impl Drop for ResumptionState {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.psk);
    }
}

impl core::fmt::Debug for ResumptionState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ResumptionState")
            .field("suite", &self.suite)
            .field("psk", &format_args!("<{} bytes>", self.psk.len()))
            .field("issued_ms", &self.issued_ms)
            .field("lifetime", &self.lifetime)
            .field("max_early_data", &self.max_early_data)
            .field("alpn", &self.alpn)
            .finish_non_exhaustive()
    }
}

impl ResumptionState {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u16(self.suite.to_repr());
        w.opaque_u8(&self.psk);
        w.u32(self.age_add);
        w.u32((self.issued_ms >> 32) as u32);
        w.u32(self.issued_ms as u32);
        w.u32(self.lifetime);
        w.u32(self.max_early_data);
        w.opaque_u8(self.alpn.as_deref().unwrap_or(&[]));
        w.into_bytes()
    }

    fn decode(b: &[u8]) -> Option<ResumptionState> {
        let mut r = Reader::new(b);
        let suite = CipherSuite::from(r.u16("suite").ok()?);
        let psk = r.vec_u8("psk").ok()?;
        let age_add = r.u32("age_add").ok()?;
        let hi = u64::from(r.u32("issued").ok()?);
        let lo = u64::from(r.u32("issued").ok()?);
        let lifetime = r.u32("lifetime").ok()?;
        let max_early_data = r.u32("max_early_data").ok()?;
        let alpn = r.vec_u8("alpn").ok()?;
        r.finish("ticket").ok()?;
        Some(ResumptionState {
            suite,
            psk,
            age_add,
            issued_ms: (hi << 32) | lo,
            lifetime,
            max_early_data,
            alpn: (!alpn.is_empty()).then_some(alpn),
        })
    }

    /// Whether the ticket is within its lifetime at `now_ms`.
    pub fn is_fresh(&self, now_ms: u64) -> bool {
        now_ms >= self.issued_ms && now_ms < self.expires_ms()
    }

    /// When the ticket stops being accepted (lifetime capped at 7 days, §4.6.1).
    fn expires_ms(&self) -> u64 {
        self.issued_ms + u64::from(self.lifetime.min(604_800)) * 1000
    }
}

/// How many stateful entries / remembered tickets / remembered ClientHellos a server keeps: memory
/// stays bounded whatever clients send.
const MAX_ENTRIES: usize = 65_536;
/// Stateless ticket: key id (4) ‖ nonce (12) ‖ AES-256-GCM(state) ‖ tag (16).
const TICKET_OVERHEAD: usize = 4 + 12 + 16;

struct TicketKey {
    id: [u8; 4],
    key: AeadKey,
    created_ms: u64,
}

#[derive(Default)]
struct Inner {
    /// Current key first, then the previous one (tickets sealed before a rotation still open).
    keys: Vec<TicketKey>,
    cache: HashMap<Vec<u8>, ResumptionState>,
    /// When a full `cache` can next free a slot (its earliest expiry): until then a full cache is
    /// not scanned again, so a server full of live sessions costs O(1) per handshake, not O(n).
    cache_frees_at: u64,
    /// Stateless tickets already used for 0-RTT (single-use policy), with when they expire.
    used: ExpiringSet,
    /// ClientHello binders seen inside the anti-replay window, with when they leave it.
    seen: ExpiringSet,
}

/// A bounded set of keys that expire (replay memory, §8).
#[derive(Default)]
struct ExpiringSet {
    map: HashMap<Vec<u8>, u64>,
    /// Earliest expiry among the entries when the set was last found full (see `cache_frees_at`).
    frees_at: u64,
}

/// Resumption state shared by all connections of one server: ticket keys, the stateful cache and
/// replay memory (RFC 8446 §8). Thread-safe; bounded.
pub struct ServerSessions {
    inner: Mutex<Inner>,
    /// Rotate the stateless ticket key after this long (ms).
    pub rotate_after_ms: u64,
}

impl core::fmt::Debug for ServerSessions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ServerSessions(..)")
    }
}

impl Default for ServerSessions {
    fn default() -> Self {
        ServerSessions::new()
    }
}

impl ServerSessions {
    /// Empty state. The first ticket key is drawn from the first connection's injected randomness,
    /// so the core never touches OS randomness and seeded runs replay.
    pub fn new() -> Self {
        ServerSessions {
            inner: Mutex::new(Inner::default()),
            rotate_after_ms: 12 * 3600 * 1000,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps inconsistent in a way that matters
        // here (worst case: a ticket is not resumable), so recover from poisoning.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Install a new current ticket key; the previous one keeps opening older tickets.
    pub fn rotate(&self, key: [u8; 32], id: [u8; 4], now_ms: u64) {
        // `key` is a copy: erase it once the cipher is keyed.
        let key = zeroize::Zeroizing::new(key);
        let mut g = self.lock();
        if let Ok(k) = AeadKey::new(AeadAlg::Aes256Gcm, key.as_slice()) {
            g.keys.insert(
                0,
                TicketKey {
                    id,
                    key: k,
                    created_ms: now_ms,
                },
            );
            g.keys.truncate(2);
        }
    }

    /// Seal `state` into a stateless ticket.
    pub(crate) fn seal(
        &self,
        state: &ResumptionState,
        rng: &mut dyn RandomSource,
        now_ms: u64,
    ) -> Vec<u8> {
        let needs_key = {
            let g = self.lock();
            g.keys
                .first()
                .is_none_or(|k| now_ms.saturating_sub(k.created_ms) > self.rotate_after_ms)
        };
        if needs_key {
            let mut key = [0u8; 32];
            let mut id = [0u8; 4];
            rng.fill(&mut key);
            rng.fill(&mut id);
            self.rotate(key, id, now_ms);
            zeroize::Zeroize::zeroize(&mut key);
        }
        let mut nonce = [0u8; 12];
        rng.fill(&mut nonce);
        let g = self.lock();
        let Some(k) = g.keys.first() else {
            return Vec::new();
        };
        // The encoded state holds the PSK until it is encrypted in place.
        let mut body = zeroize::Zeroizing::new(state.encode());
        let mut out = Vec::with_capacity(body.len() + TICKET_OVERHEAD);
        out.extend_from_slice(&k.id);
        out.extend_from_slice(&nonce);
        if k.key.seal_in_place(&nonce, &k.id, &mut body).is_err() {
            return Vec::new();
        }
        out.extend_from_slice(&body);
        out
    }

    /// Open a stateless ticket; `None` if it is not ours, was tampered with, or its key rotated out.
    pub(crate) fn open(&self, ticket: &[u8]) -> Option<ResumptionState> {
        if ticket.len() < TICKET_OVERHEAD {
            return None;
        }
        let (id, rest) = ticket.split_at(4);
        let (nonce, ct) = rest.split_at(12);
        let g = self.lock();
        let k = g.keys.iter().find(|k| k.id == id)?;
        let mut body = zeroize::Zeroizing::new(ct.to_vec());
        let nonce: [u8; 12] = nonce.try_into().ok()?;
        k.key.open_in_place(&nonce, &k.id, &mut body).ok()?;
        ResumptionState::decode(&body)
    }

    /// Remember a stateful session under `id`.
    pub(crate) fn store(&self, id: Vec<u8>, state: ResumptionState, now_ms: u64) {
        let mut g = self.lock();
        if g.cache.len() >= MAX_ENTRIES {
            if now_ms < g.cache_frees_at {
                return; // still full of live sessions: this one is simply not resumable
            }
            g.cache.retain(|_, s| s.is_fresh(now_ms));
            if g.cache.len() >= MAX_ENTRIES {
                g.cache_frees_at = g.cache.values().map(|s| s.expires_ms()).min().unwrap_or(0);
                return;
            }
        }
        g.cache.insert(id, state);
    }

    /// Take (and forget) a stateful session: stateful tickets are single-use.
    pub(crate) fn take(&self, id: &[u8]) -> Option<ResumptionState> {
        self.lock().cache.remove(id)
    }

    /// Single-use anti-replay (§8.1): true the first time `ticket` is used before `expires_ms`.
    pub(crate) fn first_use(&self, ticket: &[u8], now_ms: u64, expires_ms: u64) -> bool {
        let mut g = self.lock();
        remember(&mut g.used, ticket, now_ms, expires_ms)
    }

    /// ClientHello recording (§8.2): true if this binder was not seen inside the window.
    pub(crate) fn first_hello(&self, binder: &[u8], now_ms: u64, window_ms: u64) -> bool {
        let mut g = self.lock();
        remember(&mut g.seen, binder, now_ms, now_ms + window_ms)
    }

    /// Number of stateful sessions held.
    pub fn cached(&self) -> usize {
        self.lock().cache.len()
    }
}

/// Insert `key` into a bounded expiring set; false if it was already there and unexpired, or
/// if the set is full of unexpired entries (refusing 0-RTT is the safe answer for anti-replay).
fn remember(set: &mut ExpiringSet, key: &[u8], now_ms: u64, until: u64) -> bool {
    if let Some(exp) = set.map.get(key) {
        if *exp > now_ms {
            return false;
        }
    }
    if set.map.len() >= MAX_ENTRIES {
        if now_ms < set.frees_at {
            return false; // nothing has expired since the last scan
        }
        set.map.retain(|_, exp| *exp > now_ms);
        if set.map.len() >= MAX_ENTRIES {
            set.frees_at = set.map.values().copied().min().unwrap_or(0);
            return false;
        }
    }
    set.map.insert(key.to_vec(), until);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replay memory stays bounded, and once full it refuses without rescanning until its
    /// earliest entry expires (a full server costs O(1) per 0-RTT attempt, not O(n)).
    #[test]
    fn full_replay_memory_refuses_until_an_entry_expires() {
        let mut set = ExpiringSet::default();
        for i in 0..MAX_ENTRIES as u64 {
            assert!(remember(&mut set, &i.to_be_bytes(), 0, 1000 + i));
        }
        assert!(
            !remember(&mut set, b"new", 10, 5000),
            "full of live entries"
        );
        assert_eq!(set.frees_at, 1000);
        assert!(
            !remember(&mut set, b"new", 999, 5000),
            "nothing expired yet"
        );
        assert!(
            remember(&mut set, b"new", 1000, 5000),
            "the first entry expired"
        );
        assert_eq!(set.map.len(), MAX_ENTRIES);
        assert!(
            !remember(&mut set, b"new", 1001, 5000),
            "already remembered"
        );
    }
}
