//! `tls13lab probe`: what a server does with TLS 1.3, post-quantum groups, ECH and malformed
//! ClientHellos, asked through real connections.
//!
//! An instrument over the core's public API: every handshake is a [`tls13lab::Client`] with a
//! configuration shaped for the question ([`capabilities`]), its first flight re-framed and
//! cut into chosen TCP segments ([`tolerance`]), or a ClientHello decoded, broken on purpose
//! and re-encoded ([`conformance`]). The server's answers are read from the client's events
//! (the messages it received, decrypted) or, before any key exists, from the plaintext records
//! themselves ([`raw`]). Every connection goes to the one address given, with its own deadline.
//!
//! The probe inspects, it does not trust: its handshakes accept any certificate
//! ([`tls13lab::ServerVerification::InsecureAcceptAny`], the CertificateVerify still checked
//! against the leaf) so that a server with a private or broken chain can still be examined, and
//! the chain is then checked separately against the roots given and reported. Nothing secret
//! is sent over these connections: a `GET /` and the probe's own test data.

pub mod capabilities;
pub mod conformance;
pub mod raw;
pub mod session;
pub mod text;
pub mod tolerance;
pub mod wire;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tls13lab::messages::ech::EchConfigList;
use tls13lab::ClientConfig;

pub use session::Outcome;

/// Which batteries to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sections {
    /// Capabilities.
    pub capabilities: bool,
    /// Tolerance.
    pub tolerance: bool,
    /// Conformance.
    pub conformance: bool,
}

impl Default for Sections {
    fn default() -> Self {
        Sections {
            capabilities: true,
            tolerance: true,
            conformance: true,
        }
    }
}

impl Sections {
    /// From a comma-separated list of `capabilities`, `tolerance`, `conformance`.
    pub fn parse(s: &str) -> Result<Sections, String> {
        let mut out = Sections {
            capabilities: false,
            tolerance: false,
            conformance: false,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "capabilities" | "caps" => out.capabilities = true,
                "tolerance" => out.tolerance = true,
                "conformance" => out.conformance = true,
                other => {
                    return Err(format!(
                        "unknown section '{other}' (capabilities, tolerance, conformance)"
                    ))
                }
            }
        }
        Ok(out)
    }
}

/// A cap on new connections per second, shared by every probe of a run.
#[derive(Debug)]
pub struct Pacer {
    interval: Duration,
    next: Mutex<Instant>,
}

impl Pacer {
    /// At most `per_second` connections a second (at least one a minute).
    pub fn new(per_second: f64) -> Pacer {
        let per_second = per_second.clamp(1.0 / 60.0, 1.0e6);
        Pacer {
            interval: Duration::from_secs_f64(1.0 / per_second),
            next: Mutex::new(Instant::now()),
        }
    }

    /// Waits for the next slot.
    pub fn wait(&self) {
        let slot = {
            let Ok(mut next) = self.next.lock() else {
                return;
            };
            let now = Instant::now();
            let slot = (*next).max(now);
            *next = slot + self.interval;
            slot
        };
        let now = Instant::now();
        if slot > now {
            std::thread::sleep(slot - now);
        }
    }
}

/// What the probe is pointed at, and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// server_name to send (`None`: none).
    pub server_name: Option<String>,
    /// Deadline of each connection.
    pub timeout: Duration,
    /// Trust anchors the chain is checked against (reported, never required).
    pub roots: Vec<Vec<u8>>,
    /// Where the roots came from, for the report.
    pub roots_source: String,
    /// An ECHConfigList to offer (otherwise the server's retry_configs are tried).
    pub ech_config_list: Option<EchConfigList>,
    /// Which batteries.
    pub sections: Sections,
    /// Rate cap shared by every connection.
    pub pacer: Option<Arc<Pacer>>,
}

/// One target: its address and options.
pub struct Target {
    /// The only address the probe sends to.
    pub addr: SocketAddr,
    /// Deadline of each connection.
    pub timeout: Duration,
    /// server_name.
    pub server_name: Option<String>,
    pacer: Option<Arc<Pacer>>,
    count: Counter,
}

impl Target {
    /// Counts a connection and waits for the rate cap, if any, before it.
    pub fn pace(&self) {
        self.count.bump();
        if let Some(p) = &self.pacer {
            p.wait();
        }
    }

    /// The base configuration of every probe connection: accept any chain (checked
    /// separately), our server name, nothing else changed.
    pub fn config(&self) -> ClientConfig {
        let mut c = ClientConfig::insecure_accept_any_certificate();
        c.server_name = self.server_name.clone();
        c
    }
}

/// Everything the probe found about one server.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// HOST:PORT as given.
    pub target: String,
    /// The address connected to.
    pub address: String,
    /// server_name sent.
    pub server_name: Option<String>,
    /// Connections made.
    pub connections: usize,
    /// Why no battery ran: the first handshake could not connect or got no answer in time
    /// (every other connection would wait as long).
    pub error: Option<String>,
    /// Capabilities, if asked for.
    pub capabilities: Option<capabilities::Capabilities>,
    /// Tolerance cases, if asked for.
    pub tolerance: Option<Vec<tolerance::ToleranceCase>>,
    /// Conformance cases, if asked for.
    pub conformance: Option<Vec<conformance::ConformanceCase>>,
}

/// A connection counter shared by a target's batteries.
#[derive(Debug, Default)]
pub struct Counter(std::sync::atomic::AtomicUsize);

impl Counter {
    /// Counts one.
    pub fn bump(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Runs the batteries of `opts` against `addr` (`name`: the target as given).
pub fn probe(name: &str, addr: SocketAddr, opts: &Options) -> Report {
    let target = Target {
        addr,
        timeout: opts.timeout,
        server_name: opts.server_name.clone(),
        pacer: opts.pacer.clone(),
        count: Counter::default(),
    };
    let first = session::drive(&target, session::Plan::new(target.config()));
    if matches!(first.outcome, Outcome::Network(_) | Outcome::Timeout) {
        return Report {
            target: name.to_string(),
            address: addr.to_string(),
            server_name: opts.server_name.clone(),
            connections: target.count.get(),
            error: Some(first.outcome.text()),
            capabilities: None,
            tolerance: None,
            conformance: None,
        };
    }
    let caps = opts
        .sections
        .capabilities
        .then(|| capabilities::run(&target, opts));
    let tol = opts.sections.tolerance.then(|| tolerance::run(&target));
    let conf = opts.sections.conformance.then(|| conformance::run(&target));
    Report {
        target: name.to_string(),
        address: addr.to_string(),
        server_name: opts.server_name.clone(),
        connections: target.count.get(),
        error: None,
        capabilities: caps,
        tolerance: tol,
        conformance: conf,
    }
}
