//! Research instruments: pure functions from configurations, byte streams and ledgers to reports.
//!
//! Nothing here owns a socket or reads a clock. Each instrument drives the real client and server
//! (through [`crate::demo::Pair`]-style in-memory exchange) or reads what they reported
//! ([`tls13lab::ledger::Ledger`], [`tls13lab::events::Event`]), so an instrument can never describe bytes
//! that tls13lab would not send.
//!
//! - [`dissect`]: decode a captured connection with an NSS key log: ledger, decrypted messages,
//!   Finished checks, missing secrets — the core's [`tls13lab::transcript_reader`] reading a
//!   capture.
//! - [`explain`]: a connection's key schedule as a tree, text or SVG (`tls13lab keys`).
//! - [`fingerprint`]: JA3, JA4 and JA4S of ClientHellos and ServerHellos.
//! - [`hello`]: the ClientHello size lab — every field, extension, record and TCP segment.
//! - [`illustrate`]: one connection as one self-contained HTML page, every byte of every record
//!   annotated, the key calculations beside the bytes they protect.
//! - [`keylog`]: NSS key logs and the record keys and Finished checks they unlock (the core's
//!   [`tls13lab::keylog`], re-exported).
//! - [`ladder`]: a ladder (sequence) diagram of a connection, as text or as SVG.
//! - `pcap` (feature `pcap`): pcapng export (synthetic TCP/IP, key log embedded) and pcap/pcapng
//!   reading.
//! - [`ech`]: Encrypted ClientHello between our client and server in memory: docs/ech.md.
//! - [`pqauth`]: what post-quantum authentication (ML-DSA chains, SCTs, certificate
//!   compression) does to the server's flight: the table of docs/pq-auth.md.
//! - [`rfc8448`]: RFC 8448's example traces replayed byte for byte through our client and server.
//! - [`simulate`]: complete connections over a virtual link (RTT, bandwidth, MTU, initial
//!   congestion window): time to the first response byte and round trips.
//! - [`tcp`]: what the instruments assume about packets (headers, MSS, segmentation).

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod certgen;
pub mod demo;
pub mod dissect;
pub mod ech;
pub mod explain;
pub mod fingerprint;
pub mod hello;
pub mod illustrate;
pub mod keylog;
pub mod keyshare;
pub mod ladder;
pub mod mtc;
pub mod pcap;
pub mod pqauth;
pub mod probe;
pub mod rfc8448;
pub mod simulate;
pub mod tcp;
