//! The `tls13lab` command line. With no subcommand it runs the in-memory demo.

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use tls13lab::demo;

// TEMP: the CLI helper's src/cli/mod.rs will own this registration.
mod cli {
    pub mod bench;
}

#[derive(Parser)]
#[command(
    name = "tls13lab",
    version,
    about = "A sans-IO TLS 1.3 client and server that shows every byte"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// An in-memory client and server: handshake, request, response, close; prints the ledger.
    Demo(DemoArgs),
    /// Handshakes per second and bulk throughput on this machine (like `openssl speed`).
    Bench(cli::bench::BenchArgs),
}

#[derive(clap::Args, Default)]
struct DemoArgs {
    /// Seed for all randomness (the run replays byte for byte).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the client's ledger as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

const NOW_MS: u64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z: a fixed clock keeps the demo replayable

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Demo(DemoArgs {
        seed: 1,
        json: None,
    })) {
        Command::Demo(a) => run_demo(a),
        Command::Bench(a) => cli::bench::run(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tls13lab: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_demo(a: DemoArgs) -> Result<(), String> {
    let (server_cfg, root) = demo::server_config(a.seed, NOW_MS).map_err(|e| e.to_string())?;
    let client_cfg = demo::client_config(root);
    let request = b"GET / HTTP/1.0\r\n\r\n";
    let response = b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nhello from tls13lab\n";
    let runs = demo::three_connections(
        Arc::new(client_cfg),
        Arc::new(server_cfg),
        a.seed,
        NOW_MS,
        request,
        response,
    )
    .map_err(|e| e.to_string())?;
    for r in &runs {
        println!(
            "== {} (X25519, ECDSA P-256 certificate, seed {})",
            r.label, a.seed
        );
        print!("{}", r.ledger.table());
        if let Some(n) = &r.ledger.negotiated {
            println!(
                "negotiated: {} {} group {} signature {} resumed {} early data {:?}",
                n.version,
                n.suite,
                n.group.map_or("none".into(), |g| g.to_string()),
                n.signature_scheme.map_or("none".into(), |s| s.to_string()),
                n.resumed,
                n.early_data
            );
        }
        println!("response: {:?}\n", String::from_utf8_lossy(&r.response));
    }
    println!("== summary");
    print!("{}", demo::summary_table(&runs));
    if let Some(path) = a.json {
        let json =
            serde_json::to_string_pretty(&runs.iter().map(|r| &r.ledger).collect::<Vec<_>>())
                .map_err(|e| e.to_string())?;
        std::fs::write(&path, json).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
