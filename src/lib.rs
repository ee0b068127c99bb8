//! # tls13lab — a sans-IO TLS 1.3 client and server for studying TLS
//!
//! Bytes in → bytes out, data read with `read`, and [`events::Event`]s for whoever observes. The
//! core owns no socket, reads no clock and draws no OS
//! randomness: time is a parameter of every call and all randomness comes from the
//! [`crypto::random::RandomSource`] you pass in, so a whole connection replays byte for byte from a seed.
//!
//! ```
//! use std::sync::Arc;
//! use tls13lab::{Client, ClientConfig, Server, ServerConfig};
//! use tls13lab::crypto::random::SeededRandom;
//!
//! // The server's certificate, and the root the client trusts: the client verifies the server
//! // against the roots it is given (`ClientConfig::default()` trusts none).
//! // The lab crate's in-memory harness makes a certificate (a dev-dependency here).
//! let (server_config, root) = lab::demo::server_config(7, 1_700_000_000_000).unwrap();
//! let mut client_config = ClientConfig::new(vec![root]);
//! client_config.server_name = Some("localhost".into());
//! let mut client = Client::new(Arc::new(client_config), Box::new(SeededRandom::from_seed(1))).unwrap();
//! let mut server = Server::new(Arc::new(server_config), Box::new(SeededRandom::from_seed(2))).unwrap();
//!
//! let now = 1_700_000_000_000;
//! client.start(now).unwrap();
//! // `receive` says how many bytes it took: all of them unless unread data fills its buffer.
//! let hello = client.take_output();
//! assert_eq!(server.receive(&hello, now).unwrap(), hello.len());  // ClientHello
//! let flight = server.take_output();
//! assert_eq!(client.receive(&flight, now).unwrap(), flight.len()); // ServerHello .. Finished
//! client.send(b"GET / HTTP/1.0\r\n\r\n").unwrap();
//! let finished = client.take_output();
//! assert_eq!(server.receive(&finished, now).unwrap(), finished.len()); // Finished + request
//! assert!(client.is_connected() && server.is_connected());
//!
//! // Received data is read apart from the events (records, messages: what happened).
//! let mut request = [0u8; 64];
//! let n = server.read(&mut request);
//! assert_eq!(&request[..n], b"GET / HTTP/1.0\r\n\r\n");
//! // Events only where a recorder was asked for: the demo's server configuration records
//! // everything; the client's, by default (`Observe::NONE`), nothing, at no cost.
//! assert!(server.events().count() > 0);
//! assert_eq!(client.events().count(), 0);
//! ```
//!
//! Where things live: [`messages`] parses and encodes bytes (no crypto, no state); [`record`] frames and
//! protects records; [`keyschedule`] derives every secret; [`crypto`] holds the primitives;
//! [`client`] and [`server`] are the state machines; [`events`] and [`ledger`] report what happened;
//! [`transcript_reader`] reads a connection from the outside, with the secrets of a [`keylog`].
//! Outside the core, as crates of their own on this public API (docs/architecture.md): `lab/`
//! (the crate `lab`) holds the in-memory harness (`lab::demo`), certificate generation and every
//! research instrument: RFC 8448 replays, the key schedule as a tree, ladder diagrams, ClientHello
//! sizes, network simulation, capture export and dissection; `cli/` is the `tls13lab` binary.

// No unsafe anywhere except crypto::awslc (features `aws-lc-kx`, `aws-lc-mldsa`), the FFI to
// aws-lc's deterministic ML-KEM, X25519 and ML-DSA, which opts in with `#![allow(unsafe_code)]`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub(crate) mod auth;
pub mod certcomp;
pub mod client;
pub mod config;
pub(crate) mod conn;
pub mod connection;
pub mod crypto;
pub mod ech;
pub mod error;
pub mod events;
pub mod keylog;
pub mod keyschedule;
pub mod ledger;
pub mod messages;
pub mod record;
pub mod server;
pub mod session;
pub(crate) mod traffic;
pub mod transcript_reader;
pub mod trust_anchors;

pub use client::{Client, ClientSide};
pub use config::{ClientAuth, ClientConfig, ServerConfig, ServerVerification};
pub use connection::{Connection, Opened, Role};
pub use error::{Error, PeerMisbehaved};
pub use events::{Event, Observe};
pub use ledger::Ledger;
pub use server::{Server, ServerSide};
