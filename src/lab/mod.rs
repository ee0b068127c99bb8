//! Research instruments: pure functions from configurations, byte streams and ledgers to reports.
//!
//! Nothing here owns a socket or reads a clock. Each instrument drives the real client and server
//! (through [`crate::demo::Pair`]-style in-memory exchange) or reads what they reported
//! ([`crate::ledger::Ledger`], [`crate::events::Event`]), so an instrument can never describe bytes
//! that tls13lab would not send.
//!
//! - [`hello`]: the ClientHello size lab — every field, extension, record and TCP segment.
//! - [`ladder`]: a ladder (sequence) diagram of a connection, as SVG.
//! - [`simulate`]: complete connections over a virtual link (RTT, bandwidth, MTU, initial
//!   congestion window): time to the first response byte and round trips.
//! - [`tcp`]: what the instruments assume about packets (headers, MSS, segmentation).

pub mod hello;
pub mod ladder;
pub mod simulate;
pub mod tcp;
