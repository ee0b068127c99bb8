//! The `tls13lab` command (docs/cli.md). The blocking TCP driver ([`net`]) and the command line
//! ([`cli`]) live here in the binary, outside the sans-IO library, so the compiler holds them to
//! its public API.

mod cli;
mod net;

fn main() -> std::process::ExitCode {
    cli::main()
}
