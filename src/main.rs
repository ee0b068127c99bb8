//! The `tls13lab` command (docs/cli.md). The blocking TCP driver ([`net`]) and the command line
//! ([`cli`]) live here in the binary, outside the sans-IO library, so the compiler holds them to
//! its public API.

mod cli;
mod net;

// TEMP: `tls13lab keys` until it is wired into src/cli/mod.rs (keys.rs uses `super::common`).
#[path = "cli/common.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod common;
#[path = "cli/keys.rs"]
mod keys;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("keys") {
        #[derive(clap::Parser)]
        #[command(name = "tls13lab keys")]
        struct Keys {
            #[command(flatten)]
            args: keys::KeysArgs,
        }
        let k = <Keys as clap::Parser>::parse_from(&args[1..]);
        return match keys::run(&k.args) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tls13lab: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    cli::main()
}
