//! The fuzz targets (fuzz/src/lib.rs, included here as a module) on the stable toolchain:
//! every target on every seed of its corpus, a short seeded mutation run per target, and the
//! inputs that once crashed a target, each a named regression test.
//!
//! `cargo fuzz` (fuzz/, run by .ci/run for about a minute per target when it is available)
//! explores further; this file keeps what it found, and the targets themselves, in the README's
//! test command.

#[path = "../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod targets;

use tls13lab::crypto::random::{RandomSource, SeededRandom};

fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let json = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/rfc8448.json"
    ))
    .expect("rfc8448.json");
    targets::seeds(&json)
}

#[test]
fn every_target_has_seeds_and_passes_on_them() {
    let seeds = seeds();
    for t in targets::TARGETS {
        let n = seeds.iter().filter(|(target, _, _)| *target == t).count();
        assert!(n >= 10, "{t}: {n} seeds");
    }
    for (target, name, data) in &seeds {
        let r = std::panic::catch_unwind(|| targets::run(target, data));
        assert!(r.is_ok(), "{target} fails on seed {name}");
    }
}

#[test]
fn recorded_sessions_replay_to_the_end() {
    // A seed that replays the rest of the real connection after any prefix, verbatim or
    // re-sealed from its plaintext, must be accepted: the harness' keys, sequence numbers and
    // epochs are right, so mutations explore the state machines and not the harness' mistakes.
    let seeds = seeds();
    let mut n = 0;
    for (target, name, data) in &seeds {
        let outcome = match *target {
            "client" => targets::client_outcome(data),
            "server" => targets::server_outcome(data),
            _ => continue,
        };
        if name.ends_with("-sealed") || name.ends_with("-replay") || name.ends_with("-raw") {
            assert_eq!(outcome, None, "{target} seed {name}");
            n += 1;
        }
    }
    assert!(n > 100, "{n} replays");
}

#[test]
fn ech_config_list_seeds_decode() {
    // The messages target's ECHConfigList seeds must reach the decoder's success path, or
    // mutations would start from inputs it refuses at the first length.
    let seeds = seeds();
    let ech: Vec<_> = seeds
        .iter()
        .filter(|(t, name, _)| *t == "messages" && name.starts_with("ech-config-"))
        .collect();
    assert_eq!(ech.len(), 3);
    for (_, name, data) in ech {
        let list = tls13lab::messages::ech::EchConfigList::decode(data);
        assert!(list.is_ok(), "{name}: {list:?}");
    }
}

/// Cheap stable fuzzing: byte flips, insertions, deletions and splices of seeds, from a fixed
/// seed (`FUZZ_ITERATIONS` per target, default 300).
#[test]
fn seeded_mutations_of_the_seeds() {
    let iterations: usize = std::env::var("FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let seeds = seeds();
    let mut rng = SeededRandom::from_seed(0xf022);
    let mut draw = |n: usize| -> usize {
        let mut b = [0u8; 8];
        rng.fill(&mut b);
        (u64::from_le_bytes(b) % n.max(1) as u64) as usize
    };
    for t in targets::TARGETS {
        let pool: Vec<&Vec<u8>> = seeds
            .iter()
            .filter(|(target, _, _)| *target == t)
            .map(|(_, _, d)| d)
            .collect();
        for i in 0..iterations {
            let mut d = pool[draw(pool.len())].clone();
            for _ in 0..1 + draw(4) {
                match draw(5) {
                    0 if !d.is_empty() => {
                        let at = draw(d.len());
                        d[at] ^= 1 << draw(8);
                    }
                    1 if !d.is_empty() => {
                        let at = draw(d.len());
                        d[at] = draw(256) as u8;
                    }
                    2 => {
                        let at = draw(d.len() + 1);
                        d.insert(at, draw(256) as u8);
                    }
                    3 if !d.is_empty() => {
                        let at = draw(d.len());
                        let n = 1 + draw(16.min(d.len() - at));
                        d.drain(at..at + n.min(d.len() - at));
                    }
                    _ => {
                        let other = pool[draw(pool.len())];
                        let at = draw(d.len() + 1);
                        let from = draw(other.len());
                        let n = draw(other.len() - from + 1);
                        d.splice(at..at, other[from..from + n].iter().copied());
                    }
                }
            }
            let r = std::panic::catch_unwind(|| targets::run(t, &d));
            if r.is_err() {
                panic!("{t} iteration {i} fails on {}", hex::encode(&d));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions: inputs that made a target fail, named after what they found.
// ---------------------------------------------------------------------------------------------

/// The corpus generator: `FUZZ_CORPUS_DIR=fuzz/corpus cargo test --release --test fuzz_corpus --
/// --ignored write_corpus` writes every seed to `$FUZZ_CORPUS_DIR/<target>/seed-<name>`, where
/// `cargo fuzz run <target>` finds them (.ci/fuzz.sh does this before fuzzing).
#[test]
#[ignore = "writes files; run by .ci/fuzz.sh"]
fn write_corpus() {
    let dir = std::path::PathBuf::from(
        std::env::var("FUZZ_CORPUS_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus").into()),
    );
    let seeds = seeds();
    for (target, name, data) in &seeds {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).expect("corpus directory");
        std::fs::write(d.join(format!("seed-{name}")), data).expect("seed file");
    }
    println!("{} seeds written to {}", seeds.len(), dir.display());
}

/// Found by `cargo fuzz run messages` (CI, 2026-12-01): a ClientHello whose body ends after its
/// compression methods. A decoder that accepted the missing extension block (TLS 1.2 allows it)
/// re-encoded it with an empty one: other bytes. The RFC 8446 decoder refuses it; only the
/// server's TLS 1.2 check (`ClientHello::decode_tls12`) reads it.
#[test]
fn regression_client_hello_without_an_extension_block_round_trips() {
    let crash = "010000b903036ebb4740f483202c00eb2a4e9531650e379aedd8ed1fce6ed4e5f94abf391ab50000381301130213030100008a000e00000c000000096c6f63616c686f7374000a000a0008001d001711ec0018003300470045001700410426ce885b56b1cb7578543ef94d82475ebe41062bd46587d8584ef23463d1edbd74e5ad38ce33e85ddec2a293bb30f664c7534019bde2bd2cc155ff0c24581463002b0003020304000d000e000c040305030808040708050806002d00020101";
    let bytes = hex::decode(crash).unwrap();
    targets::messages(&bytes);
    assert!(tls13lab::messages::HandshakeMessage::decode(
        &bytes,
        tls13lab::messages::DecodeContext { hash_len: 0 }
    )
    .is_err());
    let ch = tls13lab::messages::ClientHello::decode_tls12(&bytes[4..]).unwrap();
    assert!(ch.extensions.is_empty());
}
