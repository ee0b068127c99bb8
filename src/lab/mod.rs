//! Research instruments: pure functions from configurations, byte streams and ledgers to reports.
//!
//! Nothing here owns a socket or reads a clock. Each instrument drives the real client and server
//! (through [`crate::demo::Pair`]-style in-memory exchange) or reads what they reported
//! ([`crate::ledger::Ledger`], [`crate::events::Event`]), so an instrument can never describe bytes
//! that tls13lab would not send.
//!
//! - [`hello`]: the ClientHello size lab — every field, extension, record and TCP segment.
//! - [`tcp`]: what the instruments assume about packets (headers, MSS, segmentation).

pub mod hello;
pub mod tcp;
