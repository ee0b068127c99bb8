//! The TLS 1.3 key schedule (RFC 8446 §7) and the transcript hash it feeds on (§4.4.1).
//!
//! RFC 8446 §7.1's figure, annotated with the type each stage is held in here:
//!
//! ```text
//!              ▼ salt = 0
//!    PSK ──► Extract ─────────────────────────────────────── EarlySecret
//!              ├─ "ext binder" | "res binder" ("") ─────────── BinderKey ─► binder (§4.2.11.2)
//!              ├─ "c e traffic"  (ClientHello) ─────────────── TrafficSecret (0-RTT)
//!              ├─ "e exp master" (ClientHello) ─────────────── ExporterSecret
//!              │
//!              ▼ salt = Derive-Secret(., "derived", "")       (into_handshake consumes EarlySecret)
//! (EC)DHE ─► Extract ─────────────────────────────────────── HandshakeSecret
//!              ├─ "c hs traffic" (ClientHello..ServerHello) ── TrafficSecret
//!              ├─ "s hs traffic" (ClientHello..ServerHello) ── TrafficSecret
//!              │
//!              ▼ salt = Derive-Secret(., "derived", "")       (into_master consumes HandshakeSecret)
//!      0 ──► Extract ─────────────────────────────────────── MasterSecret
//!              ├─ "c ap traffic" (ClientHello..server Finished) TrafficSecret ─"traffic upd"─► next
//!              ├─ "s ap traffic" (ClientHello..server Finished) TrafficSecret ─"traffic upd"─► next
//!              ├─ "exp master"   (ClientHello..server Finished) ExporterSecret ─► TLS-Exporter (§7.5)
//!              └─ "res master"   (ClientHello..client Finished) ResumptionSecret ─"resumption"─► PSK
//!
//! TrafficSecret ─"key", "iv"─► record protection (§7.3)
//!               ─"finished"─► finished_key ─HMAC(transcript hash)─► verify_data (§4.4.4)
//! ```
//!
//! - [`hkdf`]: Extract, HKDF-Expand-Label, Derive-Secret, the [`Label`]s and [`Secret`].
//! - [`transcript`]: the running transcript hash, including the HelloRetryRequest rewrite.
//! - [`schedule`]: one type per stage, consumed by value; every step reported to a
//!   [`DerivationSink`].

pub mod hkdf;
pub mod schedule;
pub mod transcript;

#[cfg(test)]
pub(crate) mod test_vectors;

pub use hkdf::{HkdfError, Label, Secret};
pub use schedule::{
    BinderKey, Derivation, DerivationOp, DerivationSink, EarlySecret, ExporterSecret,
    HandshakeSecret, MasterSecret, NoSink, ResumptionSecret, SecretName, TrafficSecret,
};
pub use transcript::{Transcript, TranscriptError};
