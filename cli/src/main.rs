//! The `tls13lab` command (docs/cli.md): `demo` (the default), `client HOST:PORT` and
//! `server --listen ADDR`, the instruments, and `cert` (chains for experiments).
//!
//! A crate of its own over the core's public API (`tls13lab`) and the instruments (`lab`): the
//! blocking TCP driver ([`net`]), clap and the system trust store live here, outside the sans-IO
//! library, so a library user compiles none of them.
//!
//! Exit codes: 0 success; 2 bad option; 3 bad file; 4 network (refused, unreachable, timeout,
//! peer hung up); 5 TLS (an alert was received or sent). A failure prints exactly one line,
//! `tls13lab: <cause>`, on stderr.

mod bench;
mod cert;
mod client;
mod common;
mod demo;
mod dissect;
mod ech;
mod hello;
mod instruments;
mod keys;
mod net;
mod probe;
mod reactor;
mod server;
mod simulate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use common::Failure;

#[derive(Parser)]
#[command(
    name = "tls13lab",
    version,
    about = "A sans-IO TLS 1.3 client and server that shows every byte",
    after_help = "With no subcommand, runs `demo`.\n\
                  Exit codes: 0 success, 2 bad option, 3 bad file, 4 network error, 5 TLS alert.\n\
                  Names accept our spellings and the IANA/OpenSSL ones, in any case: x25519, P-256, \
                  prime256v1, X25519MLKEM768, aes128gcm, TLS_AES_128_GCM_SHA256, ECDSA+SHA256..."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// An in-memory client and server: full, resumed and 0-RTT connections with their ledgers (--once: the full one).
    Demo(demo::DemoArgs),
    /// Connect to HOST:PORT, send a request, print the ledger, the response and a summary.
    Client(client::ClientArgs),
    /// Accept TLS 1.3 connections and answer each with a page describing it (or echo).
    Server(server::ServerArgs),
    /// The ClientHello size lab: every field, extension, record and TCP segment; --compare side by side.
    Hello(hello::HelloArgs),
    /// Whole connections over a virtual link (RTT, bandwidth, MTU, initcwnd): time to first byte, round trips.
    Simulate(simulate::SimulateArgs),
    /// Decode a captured connection (pcap/pcapng or two raw streams) with a key log: ledger, messages, Finished checks.
    Dissect(dissect::DissectArgs),
    /// The key schedule of a connection as a tree: every secret, its label, context and value.
    Keys(keys::KeysArgs),
    /// Handshakes per second and bulk throughput on this machine (like `openssl speed`).
    Bench(bench::BenchArgs),
    /// Ask a server what it does with TLS 1.3, post-quantum groups, ECH and malformed ClientHellos
    Probe(probe::ProbeArgs),
    /// Encrypted ClientHello keys: `ech keygen` writes an ECH key file as OpenSSL does.
    Ech(ech::EchArgs),
    /// Certificate chains for experiments: root → intermediates → leaf, any algorithm per level (ML-DSA too), SCTs; seeded.
    Cert(cert::CertArgs),
}

/// Parse the command line, run the command, turn failures into one line and an exit code.
fn main() -> ExitCode {
    // A panic is a bug in tls13lab, never a user error: one line, no backtrace spew, and in the
    // server it ends only the connection's thread.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("tls13lab: internal error (please report): {info}");
    }));
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return clap_failure(e),
    };
    let result = match cli.command {
        None => demo::run(demo::DemoArgs::default()),
        Some(Command::Demo(a)) => demo::run(a),
        Some(Command::Client(a)) => client::run(a),
        Some(Command::Server(a)) => server::run(a),
        Some(Command::Hello(a)) => hello::run(a),
        Some(Command::Simulate(a)) => simulate::run(a),
        Some(Command::Dissect(a)) => dissect::run(a),
        Some(Command::Keys(a)) => keys::run(&a).map_err(common::Failure::BadOption),
        Some(Command::Bench(a)) => bench::run(&a).map_err(common::Failure::BadOption),
        Some(Command::Probe(a)) => probe::run(a),
        Some(Command::Ech(a)) => ech::run(a),
        Some(Command::Cert(a)) => cert::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("tls13lab: {f}");
            ExitCode::from(f.exit_code())
        }
    }
}

/// `--help` and `--version` print as clap does; every other parse error becomes one line.
fn clap_failure(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind as K;
    if matches!(e.kind(), K::DisplayHelp | K::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    // clap's message is "error: <what>" (sometimes continued on indented lines), a blank line,
    // then tips and usage: keep the first paragraph, on one line.
    let text = e.to_string();
    let msg = text
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let msg = msg.trim_start_matches("error:").trim();
    let msg = if msg.is_empty() {
        "invalid command line"
    } else {
        msg
    };
    let f = Failure::BadOption(msg.to_string());
    eprintln!("tls13lab: {f}");
    ExitCode::from(f.exit_code())
}
