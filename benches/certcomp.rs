//! Certificate compression (RFC 8879): what compressing a server's chain costs per algorithm,
//! against finding it in the per-chain cache (`CompressionCache`), and what decompressing it
//! costs the client. The chain: a P-256 certificate with 60 subjectAltNames (the interop tests'
//! compressible certificate). docs/architecture.md cites the result.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use lab::certgen::self_signed_p256;
use tls13lab::certcomp::{compress, decompress, supported, CompressionCache};
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::messages::OutgoingMessage;

/// The Certificate body of the compressible certificate.
fn body() -> Vec<u8> {
    let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(7));
    let names: Vec<String> = std::iter::once("localhost".to_string())
        .chain((1..=60).map(|i| format!("a{i}.example")))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let now = 1_700_000_000;
    let cert = self_signed_p256(&names, &key, now - 86_400, now + 86_400).expect("certificate");
    let chain = [cert];
    OutgoingMessage::Certificate {
        context: &[],
        chain: &chain,
        first_extensions: &[],
    }
    .body_bytes()
}

fn certcomp(c: &mut Criterion) {
    let body = body();
    let mut g = c.benchmark_group("certcomp");
    g.measurement_time(Duration::from_secs(3));
    for &alg in supported() {
        let compressed = compress(alg, &body).expect("compress");
        eprintln!("{alg}: {} -> {} bytes", body.len(), compressed.len());
        g.bench_function(format!("compress/{alg}"), |b| {
            b.iter(|| compress(alg, &body))
        });
        let cache = CompressionCache::default();
        cache.get_or_compress(alg, &body);
        g.bench_function(format!("cached/{alg}"), |b| {
            b.iter(|| cache.get_or_compress(alg, &body))
        });
        g.bench_function(format!("decompress/{alg}"), |b| {
            b.iter(|| decompress(alg, &compressed, body.len()))
        });
    }
    g.finish();
}

criterion_group!(benches, certcomp);
criterion_main!(benches);
