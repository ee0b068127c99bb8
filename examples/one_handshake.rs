//! Performs exactly one handshake inside `cg_measured_handshake`, for scripts/callgrind.sh:
//! `one_handshake tls13lab|rustls full|resumed x25519|x25519mlkem768`. Everything else (the
//! certificate, the configurations, a warm-up handshake, the ticket for a resumption) happens
//! outside that function, so callgrind's `--toggle-collect` counts only the handshake, client and
//! server together, with the setup of benches/common/mod.rs.

#[path = "../benches/common/mod.rs"]
mod common;

use common::{group_name, groups, Case, Identity, Ours, Rustls, Timer, Who};
use tls13lab::messages::enums::CipherSuite;
use tls13lab::session::TicketStore;

#[inline(never)]
fn cg_measured_handshake(f: &mut dyn FnMut()) {
    f()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--groups") {
        for g in groups() {
            println!("{}", group_name(g));
        }
        return;
    }
    let [lib, case, group] = &args[..] else {
        eprintln!("usage: one_handshake tls13lab|rustls full|resumed GROUP  (or --groups)");
        std::process::exit(2);
    };
    let case = match case.as_str() {
        "full" => Case::Full,
        "resumed" => Case::Resumed,
        other => panic!("unknown case {other}"),
    };
    let group = groups()
        .into_iter()
        .find(|g| group_name(*g) == group)
        .unwrap_or_else(|| panic!("unknown or unimplemented group {group}"));
    let id = Identity::new();
    let suite = CipherSuite::TLS_AES_128_GCM_SHA256;
    match lib.as_str() {
        "tls13lab" => {
            let mut o = Ours::new(&id, group, suite, case);
            let server = o.server.clone();
            o.handshake(&mut Timer::new(Who::Both), &server, TicketStore::default()); // warm-up
            let mut tickets = TicketStore::default();
            if case.resumes() {
                let mut all = o.mint_tickets();
                tickets.insert(all.tickets.pop_back().expect("ticket"));
            }
            let mut tickets = Some(tickets);
            cg_measured_handshake(&mut || {
                let (c, s) = o.handshake(
                    &mut Timer::new(Who::Both),
                    &server,
                    tickets.take().unwrap_or_default(),
                );
                assert!(c.is_connected() && s.is_connected());
                assert_eq!(c.negotiated().map(|n| n.resumed), Some(case.resumes()));
            });
        }
        "rustls" => {
            let r = Rustls::new(&id, group, suite, case);
            let server = r.server.clone();
            r.handshake(&mut Timer::new(Who::Both), &server); // warm-up
            if case.resumes() {
                r.mint_tickets();
            }
            cg_measured_handshake(&mut || {
                let (c, _s) = r.handshake(&mut Timer::new(Who::Both), &server);
                assert_eq!(
                    c.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
                    case.resumes()
                );
            });
        }
        other => panic!("unknown library {other}"),
    }
}
