//! In-memory connections: a client and a server wired back to back with a simulated clock.
//! The CLI demo, the tests and the benchmarks all drive connections through [`Pair`].

use std::sync::Arc;

use crate::client::Client;
use crate::config::{CertifiedKey, ClientConfig, ServerConfig, ServerVerification};
use crate::crypto::cert::self_signed_p256;
use crate::crypto::random::SeededRandom;
use crate::crypto::sign::SigningKey;
use crate::error::Error;
use crate::events::Event;
use crate::ledger::Ledger;
use crate::server::Server;
use crate::session::TicketStore;

/// A server configuration with a fresh self-signed ECDSA P-256 certificate for `localhost`, made
/// deterministically from `seed` and valid for a year around `now_ms`. Returns it with the
/// certificate's DER (to use as the client's root).
pub fn server_config(seed: u64, now_ms: u64) -> Result<(ServerConfig, Vec<u8>), Error> {
    let mut rng = SeededRandom::from_seed(seed ^ 0x5eed_cafe);
    let key = SigningKey::generate_p256(&mut rng);
    let now_s = now_ms / 1000;
    let cert = self_signed_p256(&["localhost"], &key, now_s - 86_400, now_s + 365 * 86_400)
        .map_err(|e| Error::Config(e.to_string()))?;
    let ck = CertifiedKey {
        chain: vec![cert.clone()],
        key: Arc::new(key),
    };
    Ok((ServerConfig::new(ck), cert))
}

/// A client and a server connected in memory.
pub struct Pair {
    /// The client.
    pub client: Client,
    /// The server.
    pub server: Server,
    /// The simulated clock (Unix ms).
    pub now_ms: u64,
    /// Every event the client reported.
    pub client_events: Vec<Event>,
    /// Every event the server reported.
    pub server_events: Vec<Event>,
}

impl Pair {
    /// A pair whose randomness comes from `seed` (client and server draw from separate streams).
    pub fn new(
        client: Arc<ClientConfig>,
        server: Arc<ServerConfig>,
        seed: u64,
        now_ms: u64,
    ) -> Result<Pair, Error> {
        Pair::with_tickets(client, server, seed, now_ms, TicketStore::default())
    }

    /// Like [`Pair::new`], with tickets for the client to resume with.
    pub fn with_tickets(
        client: Arc<ClientConfig>,
        server: Arc<ServerConfig>,
        seed: u64,
        now_ms: u64,
        tickets: TicketStore,
    ) -> Result<Pair, Error> {
        let client = Client::new(
            client,
            Box::new(SeededRandom::from_seed(seed.wrapping_mul(2))),
        )?
        .with_tickets(tickets);
        let server = Server::new(
            server,
            Box::new(SeededRandom::from_seed(seed.wrapping_mul(2) + 1)),
        )?;
        Ok(Pair {
            client,
            server,
            now_ms,
            client_events: Vec::new(),
            server_events: Vec::new(),
        })
    }

    /// Move pending bytes client→server then server→client once; returns the bytes moved.
    pub fn exchange(&mut self) -> Result<usize, Error> {
        let mut moved = 0;
        let c = self.client.take_output();
        moved += c.len();
        if !c.is_empty() {
            let r = self.server.receive(&c, self.now_ms);
            self.collect();
            r?;
        }
        let s = self.server.take_output();
        moved += s.len();
        if !s.is_empty() {
            let r = self.client.receive(&s, self.now_ms);
            self.collect();
            r?;
        }
        self.collect();
        Ok(moved)
    }

    /// Start the client and exchange bytes until both sides are connected (or stuck).
    pub fn handshake(&mut self) -> Result<(), Error> {
        self.client.start(self.now_ms)?;
        for _ in 0..16 {
            if self.client.is_connected() && self.server.is_connected() {
                return Ok(());
            }
            if self.exchange()? == 0 {
                break;
            }
        }
        if self.client.is_connected() && self.server.is_connected() {
            Ok(())
        } else {
            Err(Error::InvalidState("handshake did not complete"))
        }
    }

    /// Exchange until no bytes move.
    pub fn settle(&mut self) -> Result<(), Error> {
        for _ in 0..64 {
            if self.exchange()? == 0 {
                return Ok(());
            }
        }
        Ok(())
    }

    fn collect(&mut self) {
        self.client_events.extend(self.client.events());
        self.server_events.extend(self.server.events());
    }

    /// Application data the server received so far.
    pub fn server_received(&self) -> Vec<u8> {
        app_data(&self.server_events)
    }

    /// Application data the client received so far.
    pub fn client_received(&self) -> Vec<u8> {
        app_data(&self.client_events)
    }

    /// The client's ledger (it sees every record of the connection).
    pub fn ledger(&self) -> Ledger {
        Ledger::from_events(&self.client_events)
    }
}

/// Concatenated application (and early) data in `events`.
pub fn app_data(events: &[Event]) -> Vec<u8> {
    let mut v = Vec::new();
    for e in events {
        if let Event::AppData { data } | Event::EarlyData { data } = e {
            v.extend_from_slice(data);
        }
    }
    v
}

/// A client configuration that trusts `root` and names `localhost`.
pub fn client_config(root: Vec<u8>) -> ClientConfig {
    ClientConfig {
        server_name: Some("localhost".into()),
        verification: ServerVerification::Roots(vec![root]),
        ..ClientConfig::default()
    }
}

/// Run one request/response connection in memory and return the pair after close.
pub fn request_response(
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    seed: u64,
    now_ms: u64,
    request: &[u8],
    response: &[u8],
    tickets: TicketStore,
) -> Result<Pair, Error> {
    let mut p = Pair::with_tickets(client, server, seed, now_ms, tickets)?;
    p.client.start(p.now_ms)?;
    // 0-RTT: the request rides in the first flight when a ticket allows it.
    let early = p.client.send(request).is_ok();
    for _ in 0..16 {
        if p.client.is_connected() && p.server.is_connected() {
            break;
        }
        if p.exchange()? == 0 {
            break;
        }
    }
    let rejected = p
        .client_events
        .iter()
        .any(|e| matches!(e, Event::EarlyDataRejected { .. }));
    if !early || rejected {
        p.client.send(request)?;
    }
    p.exchange()?;
    p.server.send(response)?;
    p.exchange()?;
    p.client.close();
    p.exchange()?;
    p.server.close();
    p.settle()?;
    Ok(p)
}
