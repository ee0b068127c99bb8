//! NSS key logs (the SSLKEYLOGFILE format) and what they unlock: record protection keys per
//! epoch and Finished checks — for whoever sees a connection from the outside
//! ([`crate::transcript_reader`], the lab's dissector and capture export).
//!
//! A connection writes these lines itself ([`crate::events::SecretEvent::keylog_line`]); this
//! module reads them back.
//!
//! ```text
//! CLIENT_HANDSHAKE_TRAFFIC_SECRET <64 hex: ClientHello.random> <hex secret>
//! ```
//!
//! The labels cover the early, handshake and first application traffic secrets; later
//! application secrets follow from `HKDF-Expand-Label(secret_N, "traffic upd", "", Hash.length)`
//! (RFC 8446 §7.2), as every observer computes them.

use crate::crypto::aead::{SuiteParams, NONCE_LEN};
use crate::crypto::hash::HashAlg;
use crate::events::{hex, Direction, Epoch, Event};
use crate::keyschedule::hkdf::expand_label;
use crate::ledger::unhex;
use crate::record::protect::RecordProtector;

/// One key log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLogLine {
    /// e.g. `SERVER_TRAFFIC_SECRET_0`.
    pub label: String,
    /// ClientHello.random (32 bytes).
    pub client_random: Vec<u8>,
    /// The secret.
    pub secret: Vec<u8>,
}

/// The lines of a key log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyLog {
    /// In file order.
    pub lines: Vec<KeyLogLine>,
    /// Lines that were neither comments nor `LABEL HEX HEX`.
    pub bad_lines: usize,
}

impl KeyLog {
    /// Parse the text of a key log; comments (`#`) and blank lines are skipped.
    pub fn parse(text: &str) -> KeyLog {
        let mut k = KeyLog::default();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            let parsed = (|| {
                let label = parts.next()?.to_string();
                let client_random = unhex(parts.next()?)?;
                let secret = unhex(parts.next()?)?;
                (parts.next().is_none() && !secret.is_empty()).then_some(KeyLogLine {
                    label,
                    client_random,
                    secret,
                })
            })();
            match parsed {
                Some(l) => k.lines.push(l),
                None => k.bad_lines += 1,
            }
        }
        k
    }

    /// The secrets a connection reported ([`Event::Secret`]).
    pub fn from_events(events: &[Event]) -> KeyLog {
        KeyLog {
            lines: events
                .iter()
                .filter_map(|e| match e {
                    Event::Secret(s) => Some(KeyLogLine {
                        label: s.nss_label.to_string(),
                        client_random: s.client_random.clone(),
                        secret: s.secret.clone(),
                    }),
                    _ => None,
                })
                .collect(),
            bad_lines: 0,
        }
    }

    /// Add the lines of `other` that are not here yet.
    pub fn merge(&mut self, other: &KeyLog) {
        for l in &other.lines {
            if !self.lines.contains(l) {
                self.lines.push(l.clone());
            }
        }
        self.bad_lines += other.bad_lines;
    }

    /// The key log file text.
    pub fn to_text(&self) -> String {
        self.lines
            .iter()
            .map(|l| format!("{} {} {}\n", l.label, hex(&l.client_random), hex(&l.secret)))
            .collect()
    }

    /// The secret labelled `label` for the connection whose ClientHello.random is `random`.
    pub fn get(&self, random: &[u8], label: &str) -> Option<&[u8]> {
        self.lines
            .iter()
            .find(|l| l.label == label && l.client_random == random)
            .map(|l| l.secret.as_slice())
    }

    /// Whether any line belongs to the connection with this ClientHello.random.
    pub fn knows(&self, random: &[u8]) -> bool {
        self.lines.iter().any(|l| l.client_random == random)
    }
}

/// The key log label of the traffic secret protecting `epoch` in `direction` (generation 0 for
/// application keys), or `None` for plaintext.
pub fn label_for(direction: Direction, epoch: Epoch) -> Option<&'static str> {
    let client = direction == Direction::ClientToServer;
    Some(match epoch {
        Epoch::Plaintext => return None,
        Epoch::Early => "CLIENT_EARLY_TRAFFIC_SECRET",
        Epoch::Handshake if client => "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        Epoch::Handshake => "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        Epoch::Application(_) if client => "CLIENT_TRAFFIC_SECRET_0",
        Epoch::Application(_) => "SERVER_TRAFFIC_SECRET_0",
    })
}

/// The traffic secret for `epoch` in `direction`: from the key log, then `N` KeyUpdates on.
pub fn traffic_secret(
    log: &KeyLog,
    random: &[u8],
    hash: HashAlg,
    direction: Direction,
    epoch: Epoch,
) -> Option<Vec<u8>> {
    let mut secret = log.get(random, label_for(direction, epoch)?)?.to_vec();
    if let Epoch::Application(n) = epoch {
        for _ in 0..n {
            secret = expand_label(hash, &secret, "traffic upd", b"", hash.output_len()).ok()?;
        }
    }
    Some(secret)
}

/// A record protector (sequence number 0) for `secret` (RFC 8446 §7.3: key and iv).
pub fn protector(suite: SuiteParams, secret: &[u8]) -> Option<RecordProtector> {
    let key = expand_label(suite.hash, secret, "key", b"", suite.aead.key_len()).ok()?;
    let iv = expand_label(suite.hash, secret, "iv", b"", NONCE_LEN).ok()?;
    let iv: [u8; NONCE_LEN] = iv.try_into().ok()?;
    RecordProtector::new(suite.aead, &key, iv).ok()
}

/// Finished.verify_data = HMAC(finished_key, transcript_hash), finished_key =
/// HKDF-Expand-Label(base_key, "finished", "", Hash.length) (RFC 8446 §4.4.4).
pub fn verify_data(hash: HashAlg, base_key: &[u8], transcript_hash: &[u8]) -> Option<Vec<u8>> {
    let key = expand_label(hash, base_key, "finished", b"", hash.output_len()).ok()?;
    Some(hash.hmac(&key, transcript_hash).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_key_logs() {
        let r = "11".repeat(32);
        let text = format!(
            "# comment\n\nCLIENT_HANDSHAKE_TRAFFIC_SECRET {r} {}\nbroken line\nSERVER_TRAFFIC_SECRET_0 {r} zz\n",
            "ab".repeat(32)
        );
        let k = KeyLog::parse(&text);
        assert_eq!(k.lines.len(), 1);
        assert_eq!(k.bad_lines, 2);
        assert_eq!(
            k.get(&[0x11; 32], "CLIENT_HANDSHAKE_TRAFFIC_SECRET"),
            Some(&[0xab; 32][..])
        );
        assert!(k
            .get(&[0x12; 32], "CLIENT_HANDSHAKE_TRAFFIC_SECRET")
            .is_none());
        assert_eq!(KeyLog::parse(&k.to_text()).lines, k.lines);
    }

    #[test]
    fn labels_per_epoch() {
        use Direction::*;
        assert_eq!(label_for(ClientToServer, Epoch::Plaintext), None);
        assert_eq!(
            label_for(ClientToServer, Epoch::Early),
            Some("CLIENT_EARLY_TRAFFIC_SECRET")
        );
        assert_eq!(
            label_for(ServerToClient, Epoch::Application(3)),
            Some("SERVER_TRAFFIC_SECRET_0")
        );
    }
}
