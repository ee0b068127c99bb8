//! `tls13lab keys`: the key schedule of one connection as a tree, from its inputs (PSK or
//! zeros, the (EC)DHE/KEM shared secret with each hybrid component) to every secret, key, IV,
//! Finished value, binder, exporter and resumption PSK (docs/keyschedule.md); with `--ech`,
//! Encrypted ClientHello's HPKE steps and acceptance confirmation first.
//!
//! The tree is built and printed by [`lab::explain`], the `--html` page by [`lab::illustrate`];
//! this module only reads the options.

use std::path::PathBuf;

use lab::explain::{self, Connection, InMemory, KeyTree};
use lab::illustrate;
use tls13lab::crypto::hpke::Kem;
use tls13lab::events::Side;

use super::common::Offer;

/// Options of `tls13lab keys`.
#[derive(clap::Args, Debug, Clone)]
pub struct KeysArgs {
    /// Replay RFC 8448 section N (3, 4, 5, 6 or 7) through our client or server instead of an
    /// in-memory run, to check every value against the RFC.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(3..=7),
          conflicts_with = "ledger")]
    pub rfc8448: Option<u8>,
    /// Read the connection from a JSON file: a --json report written with --show-secrets, or
    /// an array of events.
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// Seed of the in-memory run (the default source).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// What the client offers in the in-memory run; as in `demo`, the server uses the same
    /// groups, suites, signature schemes and ALPN protocols.
    #[command(flatten)]
    pub offer: Offer,
    /// Which of the demo's connections: full, resumed (from a ticket of the full one, no early
    /// data) or 0rtt (resumed, the request sent as 0-RTT data).
    #[arg(long, value_name = "KIND", default_value = "full", value_parser = connection)]
    pub connection: Connection,
    /// Encrypted ClientHello (RFC 9849): the server has an ECH key made from the seed and
    /// accepts the client's sealed ClientHelloInner. Printed first: the ECHConfig, every HPKE
    /// step (RFC 9180), each Seal (nonce, AAD, payload) and the acceptance confirmation.
    #[arg(long, conflicts_with_all = ["rfc8448", "ledger"])]
    pub ech: bool,
    /// The HPKE KEM of that ECH key: x25519 (DHKEM(X25519, HKDF-SHA256)), or the
    /// post-quantum mlkem768 (ML-KEM-768, 0x0041) or xwing (X-Wing, 0x647a) of
    /// draft-ietf-hpke-pq, whose enc is a 1088- or 1120-byte ciphertext.
    #[arg(long, value_name = "KEM", default_value = "x25519", value_parser = ech_kem,
          requires = "ech")]
    pub ech_kem: Kem,
    /// The client sends no key share, so the server answers with a HelloRetryRequest (RFC 8446
    /// §4.1.4); with --ech, also its confirmation and the second Seal (sequence number 1).
    #[arg(long, conflicts_with_all = ["rfc8448", "ledger"])]
    pub hrr: bool,
    /// The server's certificate chain, made from the seed: one algorithm per level, root
    /// first, as `tls13lab cert --chain` takes them (e.g. mldsa44,mldsa44) [default: the
    /// demo's self-signed ECDSA P-256 certificate].
    #[arg(long, value_name = "LIST", value_parser = super::cert::alg_list,
          conflicts_with_all = ["rfc8448", "ledger"])]
    pub chain: Option<super::cert::AlgList>,
    /// After the handshake, update keys both ways (KeyUpdate), to show "traffic upd".
    #[arg(long)]
    pub key_update: bool,
    /// After the handshake, the server asks for the client's certificate N times (RFC 8446
    /// §4.6.2): each answer's Finished and the context it covers (§4.4.1).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub post_handshake_auth: u8,
    /// Whose events to show: client or server.
    #[arg(long, value_name = "SIDE", default_value = "client", value_parser = side)]
    pub side: Side,
    /// Label of the 32-byte TLS-Exporter value computed after the handshake (in-memory and
    /// RFC 8448 runs).
    #[arg(long, value_name = "LABEL", default_value = "EXPERIMENTAL tls13lab")]
    pub export: String,
    /// Compute no exporter value.
    #[arg(long)]
    pub no_export: bool,
    /// Add, for each step, one sentence with its RFC 8446 section and the HkdfLabel bytes.
    #[arg(long)]
    pub explain: bool,
    /// Also draw the tree as an SVG image into FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also write the connection as one self-contained HTML page into FILE: every byte of
    /// every record annotated, each protected record with its key, IV, nonce and additional
    /// data, the key schedule linked to the records it protects (not with --ledger).
    #[arg(long, value_name = "FILE", conflicts_with = "ledger")]
    pub html: Option<PathBuf>,
}

/// Build the tree the options ask for, print it, and write the SVG if asked.
pub fn run(a: &KeysArgs) -> Result<(), String> {
    let tree = tree(a)?;
    print!("{}", tree.text(a.explain));
    if let Some(path) = &a.svg {
        std::fs::write(path, tree.svg()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &a.html {
        let export = (!a.no_export).then_some(a.export.as_bytes());
        let page = match a.rfc8448 {
            Some(n) => illustrate::rfc8448(n, a.side, export)?,
            None => illustrate::in_memory(&in_memory_run(a)?, a.side, export)?,
        };
        std::fs::write(path, page).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn tree(a: &KeysArgs) -> Result<KeyTree, String> {
    let export = (!a.no_export).then_some(a.export.as_bytes());
    if let Some(n) = a.rfc8448 {
        return explain::rfc8448(n, a.side, export);
    }
    if let Some(path) = &a.ledger {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
        return KeyTree::from_json(&name, &text).map_err(|e| format!("{name}: {e}"));
    }
    explain::in_memory_tree(&in_memory_run(a)?, a.side, export)
}

/// The in-memory run the options describe.
fn in_memory_run(a: &KeysArgs) -> Result<InMemory, String> {
    let mut run = InMemory::demo(a.seed).map_err(|e| e.to_string())?;
    if let Some(levels) = &a.chain {
        run = run.with_chain(&levels.0)?;
    }
    a.offer.apply(&mut run.client).map_err(|e| e.to_string())?;
    a.offer.apply_to_server(&run.client, &mut run.server);
    run.connection = a.connection;
    run.key_update = a.key_update;
    run.post_handshake_auth = a.post_handshake_auth;
    run.ech = a.ech;
    run.ech_kem = a.ech_kem;
    run.hello_retry = a.hrr;
    Ok(run)
}

fn ech_kem(s: &str) -> Result<Kem, String> {
    match s.to_ascii_lowercase().as_str() {
        "x25519" => Ok(Kem::X25519HkdfSha256),
        "mlkem768" | "ml-kem-768" => Ok(Kem::MlKem768),
        "xwing" | "x-wing" => Ok(Kem::XWing),
        _ => Err(format!("expected x25519, mlkem768 or xwing, got '{s}'")),
    }
}

fn connection(s: &str) -> Result<Connection, String> {
    match s.to_ascii_lowercase().as_str() {
        "full" => Ok(Connection::Full),
        "resumed" => Ok(Connection::Resumed),
        "0rtt" | "0-rtt" => Ok(Connection::ZeroRtt),
        _ => Err(format!("expected full, resumed or 0rtt, got '{s}'")),
    }
}

fn side(s: &str) -> Result<Side, String> {
    match s.to_ascii_lowercase().as_str() {
        "client" => Ok(Side::Client),
        "server" => Ok(Side::Server),
        _ => Err(format!("expected client or server, got '{s}'")),
    }
}
