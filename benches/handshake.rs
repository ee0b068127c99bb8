//! Handshakes per second, tls13lab against rustls (aws-lc-rs) and against the crypto floor, in
//! one run: full, resumed (psk_dhe_ke), resumed psk_ke (tls13lab only) and 0-RTT, for each group,
//! timed for client and server together and for each side alone. See benches/common/mod.rs for
//! the setup and docs/performance.md for the results.

mod common;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use tls13lab::messages::enums::CipherSuite;

use common::{
    group_name, groups, run_floor, AwsLcPrimitives, Case, FloorOps, Identity, OurPrimitives, Ours,
    Primitives, Rustls, Who,
};

const SUITE: CipherSuite = CipherSuite::TLS_AES_128_GCM_SHA256;

fn handshakes(c: &mut Criterion) {
    let id = Identity::new();
    let ours_p = OurPrimitives::new(&id);
    let aws_p = AwsLcPrimitives::new(&id);
    for group in groups() {
        for case in [Case::Full, Case::Resumed, Case::ResumedPskKe, Case::ZeroRtt] {
            let mut ours = Ours::new(&id, group, SUITE, case);
            ours.check();
            // Full handshakes also without the signature memo: the client then verifies the
            // certificate's signature every time, like rustls.
            let mut nomemo = (case == Case::Full).then(|| ours.without_memo());
            // And with ECH (RFC 9849), against the same handshake without: tls13lab only
            // (rustls has no ECH server).
            let mut ech = (case == Case::Full).then(|| {
                let mut e = ours.with_ech();
                e.check();
                e
            });
            let theirs = (case != Case::ResumedPskKe).then(|| {
                let r = Rustls::new(&id, group, SUITE, case);
                r.check();
                r
            });
            let (cf, sf) = FloorOps::of(&ours);
            let mut g =
                c.benchmark_group(format!("handshake/{}/{}", case.name(), group_name(group)));
            for who in [Who::Both, Who::Client, Who::Server] {
                g.bench_function(format!("tls13lab/{}", who.name()), |b| {
                    b.iter_custom(|iters| ours.run(who, iters))
                });
                if let Some(n) = nomemo.as_mut().filter(|_| who != Who::Server) {
                    g.bench_function(format!("tls13lab-nomemo/{}", who.name()), |b| {
                        b.iter_custom(|iters| n.run(who, iters))
                    });
                }
                if let Some(e) = ech.as_mut() {
                    g.bench_function(format!("tls13lab-ech/{}", who.name()), |b| {
                        b.iter_custom(|iters| e.run(who, iters))
                    });
                }
                if let Some(r) = &theirs {
                    g.bench_function(format!("rustls/{}", who.name()), |b| {
                        b.iter_custom(|iters| r.run(who, iters))
                    });
                }
                for (name, p) in [
                    ("floor-tls13lab", &ours_p as &dyn Primitives),
                    ("floor-aws-lc", &aws_p as &dyn Primitives),
                ] {
                    g.bench_function(format!("{name}/{}", who.name()), |b| {
                        b.iter_custom(|iters| floor(p, &cf, &sf, who, iters))
                    });
                }
            }
            g.finish();
        }
    }
    mldsa_handshakes(c);
}

/// Full X25519MLKEM768 handshakes with an ML-DSA-44, -65 and -87 server chain (root → leaf of
/// one level, `tls13lab cert`'s generator): tls13lab with and without the signature memo,
/// rustls (its aws-lc-rs provider signs and verifies ML-DSA in 0.23.46), and the crypto floor
/// of the same handshake on our crates and on aws-lc-rs (its `PqdsaKeyPair`, which draws its
/// own randomness: a floor only).
fn mldsa_handshakes(c: &mut Criterion) {
    use lab::certgen::KeyAlg;
    use tls13lab::messages::enums::NamedGroup;
    let group = NamedGroup::X25519MLKEM768;
    for alg in [KeyAlg::MlDsa44, KeyAlg::MlDsa65, KeyAlg::MlDsa87] {
        let id = Identity::mldsa(alg);
        let ours_p = OurPrimitives::new(&id);
        let aws_p = AwsLcPrimitives::new(&id);
        let mut ours = Ours::new(&id, group, SUITE, Case::Full);
        ours.check();
        let mut nomemo = ours.without_memo();
        let theirs = Rustls::new(&id, group, SUITE, Case::Full);
        theirs.check();
        let (cf, sf) = FloorOps::of(&ours);
        let mut g = c.benchmark_group(format!(
            "handshake/full-{}/{}",
            alg.name(),
            group_name(group)
        ));
        for who in [Who::Both, Who::Client, Who::Server] {
            g.bench_function(format!("tls13lab/{}", who.name()), |b| {
                b.iter_custom(|iters| ours.run(who, iters))
            });
            if who != Who::Server {
                g.bench_function(format!("tls13lab-nomemo/{}", who.name()), |b| {
                    b.iter_custom(|iters| nomemo.run(who, iters))
                });
            }
            g.bench_function(format!("rustls/{}", who.name()), |b| {
                b.iter_custom(|iters| theirs.run(who, iters))
            });
            for (name, p) in [
                ("floor-tls13lab", &ours_p as &dyn Primitives),
                ("floor-aws-lc", &aws_p as &dyn Primitives),
            ] {
                g.bench_function(format!("{name}/{}", who.name()), |b| {
                    b.iter_custom(|iters| floor(p, &cf, &sf, who, iters))
                });
            }
        }
        g.finish();
    }
}

fn floor(p: &dyn Primitives, cf: &FloorOps, sf: &FloorOps, who: Who, iters: u64) -> Duration {
    let mut buf = Vec::with_capacity(20_000);
    let t = Instant::now();
    for _ in 0..iters {
        if who != Who::Server {
            run_floor(p, cf, true, &mut buf);
        }
        if who != Who::Client {
            run_floor(p, sf, false, &mut buf);
        }
    }
    t.elapsed()
}

criterion_group!(benches, handshakes);
criterion_main!(benches);
