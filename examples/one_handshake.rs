//! Performs exactly one handshake inside `cg_measured_handshake`, for scripts/callgrind.sh:
//! `one_handshake LIBRARY CASE GROUP` with LIBRARY tls13lab, tls13lab-nomemo (no certificate
//! signature memo), tls13lab-ech (Encrypted ClientHello, RFC 9849), rustls, floor-tls13lab or
//! floor-aws-lc (the crypto floor of tls13lab's handshake on its own crates or on aws-lc) or
//! floor-ech (what ECH adds at the least: `common::run_ech_floor`, both sides), CASE
//! full, resumed, psk_ke or 0rtt, or full-mldsa44, full-mldsa65, full-mldsa87 (a full handshake
//! with an ML-DSA root → leaf chain, `Identity::mldsa`). An optional N (full handshakes only)
//! runs N handshakes in the measured function, for cases whose cost varies from one handshake
//! to the next (ML-DSA signing is a rejection loop): scripts/callgrind.sh divides by N.
//! Everything else (the certificate, the configurations, a warm-up
//! handshake, the ticket for a resumption) happens outside that function, so callgrind's
//! `--toggle-collect` counts only the handshake, client and server together, with the setup of
//! benches/common/mod.rs.

#[path = "../benches/common/mod.rs"]
mod common;

use common::{
    group_name, groups, run_ech_floor, run_floor, AwsLcPrimitives, Case, EchFloorOps, FloorOps,
    Identity, OurPrimitives, Ours, Primitives, Rustls, Timer, Who,
};
use lab::certgen::KeyAlg;
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
    let (lib, case, group, n) = match &args[..] {
        [lib, case, group] => (lib, case, group, 1),
        [lib, case, group, n] => (lib, case, group, n.parse::<u32>().expect("N")),
        _ => {
            eprintln!(
                "usage: one_handshake tls13lab|tls13lab-nomemo|tls13lab-ech|rustls|floor-tls13lab|floor-aws-lc|floor-ech \
                 full|resumed|psk_ke|0rtt|full-mldsa44|full-mldsa65|full-mldsa87 GROUP [N]  (or --groups)"
            );
            std::process::exit(2);
        }
    };
    let (case, mldsa) = match case.as_str() {
        "full" => (Case::Full, None),
        "resumed" => (Case::Resumed, None),
        "psk_ke" => (Case::ResumedPskKe, None),
        "0rtt" => (Case::ZeroRtt, None),
        "full-mldsa44" => (Case::Full, Some(KeyAlg::MlDsa44)),
        "full-mldsa65" => (Case::Full, Some(KeyAlg::MlDsa65)),
        "full-mldsa87" => (Case::Full, Some(KeyAlg::MlDsa87)),
        other => panic!("unknown case {other}"),
    };
    assert!(
        n >= 1 && (n == 1 || case == Case::Full),
        "N > 1 is for full handshakes"
    );
    let group = groups()
        .into_iter()
        .find(|g| group_name(*g) == group)
        .unwrap_or_else(|| panic!("unknown or unimplemented group {group}"));
    let id = mldsa.map_or_else(Identity::new, Identity::mldsa);
    let suite = CipherSuite::TLS_AES_128_GCM_SHA256;
    match lib.as_str() {
        "tls13lab" | "tls13lab-nomemo" | "tls13lab-ech" => {
            let mut o = Ours::new(&id, group, suite, case);
            if lib == "tls13lab-nomemo" {
                o = o.without_memo();
            }
            if lib == "tls13lab-ech" {
                o = o.with_ech();
                o.check(); // ECH is accepted
            }
            let server = o.server.clone();
            o.handshake(&mut Timer::new(Who::Both), &server, TicketStore::default()); // warm-up
            let mut tickets = TicketStore::default();
            if case.resumes() {
                let mut all = o.mint_tickets();
                tickets.insert(all.tickets.pop_back().expect("ticket"));
            }
            let mut tickets = Some(tickets);
            cg_measured_handshake(&mut || {
                for _ in 0..n {
                    let (c, s) = o.handshake(
                        &mut Timer::new(Who::Both),
                        &server,
                        tickets.take().unwrap_or_default(),
                    );
                    assert!(c.is_connected() && s.is_connected());
                    assert_eq!(c.negotiated().map(|n| n.resumed), Some(case.resumes()));
                }
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
                for _ in 0..n {
                    let (c, _s) = r.handshake(&mut Timer::new(Who::Both), &server);
                    assert_eq!(
                        c.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
                        case.resumes()
                    );
                }
            });
        }
        floor @ ("floor-tls13lab" | "floor-aws-lc") => {
            let (cf, sf) = FloorOps::of(&Ours::new(&id, group, suite, case));
            let p: Box<dyn Primitives> = if floor == "floor-aws-lc" {
                Box::new(AwsLcPrimitives::new(&id))
            } else {
                Box::new(OurPrimitives::new(&id))
            };
            let mut buf = Vec::with_capacity(20_000);
            // Warm-up, which also fills the caches of peer inputs made outside the timing.
            run_floor(p.as_ref(), &cf, true, &mut buf);
            run_floor(p.as_ref(), &sf, false, &mut buf);
            cg_measured_handshake(&mut || {
                for _ in 0..n {
                    run_floor(p.as_ref(), &cf, true, &mut buf);
                    run_floor(p.as_ref(), &sf, false, &mut buf);
                }
            });
        }
        "floor-ech" => {
            let ops = EchFloorOps::of(&Ours::new(&id, group, suite, case).with_ech());
            let (aws, ours) = (AwsLcPrimitives::new(&id), OurPrimitives::new(&id));
            let mut buf = Vec::with_capacity(4096);
            run_ech_floor(&aws, &ours, &ops, true, &mut buf); // warm-up
            run_ech_floor(&aws, &ours, &ops, false, &mut buf);
            cg_measured_handshake(&mut || {
                for _ in 0..n {
                    run_ech_floor(&aws, &ours, &ops, true, &mut buf);
                    run_ech_floor(&aws, &ours, &ops, false, &mut buf);
                }
            });
        }
        other => panic!("unknown library {other}"),
    }
}
