//! Bulk data: 16 KiB records sealed (client sends) and opened (server receives), through each
//! library's connection API, for the three TLS 1.3 AEADs — tls13lab both through its buffered
//! calls (`send`/`take_output`, `receive`) and in the caller's buffer (`seal_in_place`,
//! `open_in_place`); beside them the raw AEAD of the crate
//! each uses on the same 16 KiB, and (for choosing backends, docs/performance.md) the primitives
//! a handshake spends its time in, on each candidate crate.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tls13lab::crypto::aead::{AeadAlg, AeadKey};
use tls13lab::keyschedule::hkdf::{expand_label_secret, Label, Secret};
use tls13lab::messages::enums::{CipherSuite, NamedGroup};
use tls13lab::session::TicketStore;

use common::{Case, Identity, Ours, Rustls, Timer, Who};

const RECORD: usize = 16 * 1024;
/// Records made ahead of timing their opening (sequence numbers forbid reusing one).
const BATCH: u64 = 64;

const SUITES: [(CipherSuite, &str, AeadAlg); 3] = [
    (
        CipherSuite::TLS_AES_128_GCM_SHA256,
        "aes128gcm",
        AeadAlg::Aes128Gcm,
    ),
    (
        CipherSuite::TLS_AES_256_GCM_SHA384,
        "aes256gcm",
        AeadAlg::Aes256Gcm,
    ),
    (
        CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
        "chacha20poly1305",
        AeadAlg::ChaCha20Poly1305,
    ),
];

fn bulk(c: &mut Criterion) {
    let id = Identity::new();
    let data = vec![0x61u8; RECORD];
    for (suite, name, alg) in SUITES {
        let mut ours = Ours::new(&id, NamedGroup::X25519, suite, Case::Full);
        let server = ours.server.clone();
        let (mut oc, _os) =
            ours.handshake(&mut Timer::new(Who::Both), &server, TicketStore::default());
        let theirs = Rustls::new(&id, NamedGroup::X25519, suite, Case::Full);
        let (mut rc, _rs) = theirs.handshake(&mut Timer::new(Who::Both), &theirs.server.clone());
        let now = common::now_ms();

        let mut g = c.benchmark_group(format!("bulk/{name}"));
        g.throughput(Throughput::Bytes(RECORD as u64));
        g.bench_function("tls13lab/encrypt", |b| {
            b.iter(|| {
                oc.send(&data).unwrap();
                oc.take_output()
            })
        });
        // The caller's buffer: room for the header, the plaintext, then type byte and tag.
        let mut rec = vec![0x61u8; tls13lab::record::MAX_RECORD_LEN];
        g.bench_function("tls13lab-inplace/encrypt", |b| {
            b.iter(|| oc.seal_in_place(&mut rec, RECORD).unwrap())
        });
        let mut wire = Vec::with_capacity(RECORD + 64);
        g.bench_function("rustls/encrypt", |b| {
            b.iter(|| {
                rc.writer().write_all(&data).unwrap();
                wire.clear();
                rc.write_tls(&mut wire).unwrap();
                wire.len()
            })
        });
        // Fresh pairs: the records sealed above never reached their peers.
        let (mut oc, mut os) =
            ours.handshake(&mut Timer::new(Who::Both), &server, TicketStore::default());
        let (mut rc, mut rs) = theirs.handshake(&mut Timer::new(Who::Both), &theirs.server.clone());
        // Like rustls below: the plaintext is read into the caller's buffer.
        let mut ours_plain = vec![0u8; RECORD];
        g.bench_function("tls13lab/decrypt", |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || {
                        oc.send(&data).unwrap();
                        oc.take_output()
                    },
                    |r| {
                        assert_eq!(os.receive(r, now).unwrap(), r.len());
                        let mut got = 0;
                        while got < RECORD {
                            got += os.read(&mut ours_plain[got..]);
                        }
                        os.events().for_each(drop);
                    },
                )
            })
        });
        g.bench_function("tls13lab-inplace/decrypt", |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || {
                        let mut r = vec![0x61u8; tls13lab::record::MAX_RECORD_LEN];
                        let n = oc.seal_in_place(&mut r, RECORD).unwrap();
                        r.truncate(n);
                        r
                    },
                    |r| {
                        let o = os.open_in_place(r, now).unwrap();
                        o.data.map_or(0, |d| d.len())
                    },
                )
            })
        });
        let mut plain = vec![0u8; RECORD];
        g.bench_function("rustls/decrypt", |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || {
                        rc.writer().write_all(&data).unwrap();
                        let mut w = Vec::with_capacity(RECORD + 64);
                        rc.write_tls(&mut w).unwrap();
                        w
                    },
                    |r| {
                        let mut rd = &r[..];
                        while !rd.is_empty() {
                            rs.read_tls(&mut rd).unwrap();
                            rs.process_new_packets().unwrap();
                        }
                        let mut got = 0;
                        while got < RECORD {
                            got += rs.reader().read(&mut plain[got..]).unwrap();
                        }
                    },
                )
            })
        });

        // The AEAD alone on one record's inner plaintext (16 KiB + content type).
        let key = AeadKey::new(alg, &vec![7; alg.key_len()]).unwrap();
        let mut buf = vec![0x61u8; RECORD + 1];
        let aad = [23, 3, 3, 0x40, 0x11];
        g.bench_function("floor-tls13lab/encrypt", |b| {
            b.iter(|| key.seal_detached(&[1; 12], &aad, &mut buf).unwrap())
        });
        let tag = key.seal_detached(&[1; 12], &aad, &mut buf).unwrap();
        g.bench_function("floor-tls13lab/decrypt", |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || buf.clone(),
                    |ct| key.open_detached(&[1; 12], &aad, ct, &tag).unwrap(),
                )
            })
        });
        aead_candidates(&mut g, alg);
        g.finish();
    }
}

/// Times `open` on `iters` inputs from `make`, made `BATCH` at a time outside the timing: each
/// ciphertext is opened once where it lies, as a record is, with no copy to restore it.
fn batched<R>(
    iters: u64,
    mut make: impl FnMut() -> Vec<u8>,
    mut open: impl FnMut(&mut [u8]) -> R,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        left -= n;
        let mut inputs: Vec<Vec<u8>> = (0..n).map(|_| make()).collect();
        let t = Instant::now();
        for i in &mut inputs {
            std::hint::black_box(open(i));
        }
        total += t.elapsed();
    }
    total
}

/// Raw AEAD speed of the candidate backends on the same 16 KiB + 1 input.
fn aead_candidates(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    alg: AeadAlg,
) {
    macro_rules! candidate {
        ($name:literal, $m:ident) => {{
            use $m::aead::{Aad, LessSafeKey, Nonce, UnboundKey};
            let a = match alg {
                AeadAlg::Aes128Gcm => &$m::aead::AES_128_GCM,
                AeadAlg::Aes256Gcm => &$m::aead::AES_256_GCM,
                AeadAlg::ChaCha20Poly1305 => &$m::aead::CHACHA20_POLY1305,
                // Neither ring nor aws-lc-rs has CCM: no candidate to time.
                AeadAlg::Aes128Ccm | AeadAlg::Aes128Ccm8 => return,
            };
            let key = LessSafeKey::new(UnboundKey::new(a, &vec![7; alg.key_len()]).unwrap());
            let aad = [23, 3, 3, 0x40, 0x11];
            let mut buf = vec![0x61u8; RECORD + 1];
            g.bench_function(concat!("floor-", $name, "/encrypt"), |b| {
                b.iter(|| {
                    let t = key
                        .seal_in_place_separate_tag(
                            Nonce::assume_unique_for_key([1; 12]),
                            Aad::from(aad),
                            &mut buf,
                        )
                        .unwrap();
                    std::hint::black_box(t.as_ref()[0])
                })
            });
            let tag = key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key([1; 12]),
                    Aad::from(aad),
                    &mut buf,
                )
                .unwrap();
            buf.extend_from_slice(tag.as_ref());
            g.bench_function(concat!("floor-", $name, "/decrypt"), |b| {
                b.iter_custom(|iters| {
                    batched(
                        iters,
                        || buf.clone(),
                        |ct| {
                            key.open_in_place(
                                Nonce::assume_unique_for_key([1; 12]),
                                Aad::from(aad),
                                ct,
                            )
                            .unwrap()
                            .len()
                        },
                    )
                })
            });
        }};
    }
    candidate!("aws-lc", aws_lc_rs);
    candidate!("ring", ring);
}

/// Handshake primitives on each candidate crate: where the handshake floor goes.
fn primitives(c: &mut Criterion) {
    use tls13lab::crypto::hash::HashAlg;
    use tls13lab::crypto::random::SeededRandom;
    use tls13lab::crypto::sign::verify_signature;
    use tls13lab::messages::enums::SignatureScheme;
    let id = Identity::new();
    let mut g = c.benchmark_group("primitives");
    let msg = vec![0x20u8; 130];
    let scheme = SignatureScheme::ecdsa_secp256r1_sha256;

    // ECDSA P-256 (RustCrypto p256 via our sign module; ring; aws-lc).
    let mut rng = SeededRandom::from_seed(1);
    g.bench_function("ecdsa-p256-sign/tls13lab", |b| {
        b.iter(|| id.key.sign(scheme, &msg, &mut rng).unwrap())
    });
    let sig = id.key.sign(scheme, &msg, &mut rng).unwrap();
    let spki = id.key.public_key_spki_der().unwrap();
    g.bench_function("ecdsa-p256-verify/tls13lab", |b| {
        b.iter(|| verify_signature(scheme, &spki, &msg, &sig).unwrap())
    });
    macro_rules! ecdsa {
        ($name:literal, $m:ident) => {{
            use $m::signature::{
                EcdsaKeyPair, KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_ASN1,
                ECDSA_P256_SHA256_ASN1_SIGNING,
            };
            let rng = $m::rand::SystemRandom::new();
            let kp = ecdsa_key!(
                $m,
                EcdsaKeyPair,
                ECDSA_P256_SHA256_ASN1_SIGNING,
                &id.key_pkcs8,
                &rng
            );
            g.bench_function(concat!("ecdsa-p256-sign/", $name), |b| {
                b.iter(|| kp.sign(&rng, &msg).unwrap())
            });
            let sig = kp.sign(&rng, &msg).unwrap();
            let pk = kp.public_key().as_ref().to_vec();
            g.bench_function(concat!("ecdsa-p256-verify/", $name), |b| {
                b.iter(|| {
                    UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &pk)
                        .verify(&msg, sig.as_ref())
                        .unwrap()
                })
            });
        }};
    }
    macro_rules! ecdsa_key {
        (ring, $kp:ident, $alg:ident, $der:expr, $rng:expr) => {
            $kp::from_pkcs8(&$alg, $der, $rng).unwrap()
        };
        (aws_lc_rs, $kp:ident, $alg:ident, $der:expr, $rng:expr) => {
            $kp::from_pkcs8(&$alg, $der).unwrap()
        };
    }
    ecdsa!("aws-lc", aws_lc_rs);
    ecdsa!("ring", ring);

    // X25519: one key generation plus one shared secret (one side's share of a handshake).
    let peer = x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from([9u8; 32]));
    g.bench_function("x25519-keygen+dh/x25519-dalek", |b| {
        b.iter(|| {
            let mut k = [0u8; 32];
            tls13lab::crypto::random::RandomSource::fill(&mut rng, &mut k);
            let s = x25519_dalek::StaticSecret::from(k);
            let p = x25519_dalek::PublicKey::from(&s);
            (p, s.diffie_hellman(&peer))
        })
    });
    macro_rules! agree {
        (ring, $f:ident, $k:expr, $p:expr) => {
            $f($k, &$p, |s: &[u8]| s[0]).unwrap()
        };
        (aws_lc_rs, $f:ident, $k:expr, $p:expr) => {
            $f($k, $p, (), |s: &[u8]| Ok(s[0])).unwrap()
        };
    }
    macro_rules! x25519 {
        ($name:literal, $m:ident) => {{
            use $m::agreement::{agree_ephemeral, EphemeralPrivateKey, UnparsedPublicKey, X25519};
            let rng = $m::rand::SystemRandom::new();
            g.bench_function(concat!("x25519-keygen+dh/", $name), |b| {
                b.iter(|| {
                    let k = EphemeralPrivateKey::generate(&X25519, &rng).unwrap();
                    let p = k.compute_public_key().unwrap();
                    std::hint::black_box(p.as_ref());
                    agree!(
                        $m,
                        agree_ephemeral,
                        k,
                        UnparsedPublicKey::new(&X25519, peer.as_bytes())
                    )
                })
            });
        }};
    }
    x25519!("aws-lc", aws_lc_rs);
    x25519!("ring", ring);

    // Transcript-sized hashing: 4 KiB, then a copy of the state finished (current_hash).
    let data = vec![0x16u8; 4096];
    g.throughput(Throughput::Bytes(4096));
    g.bench_function("sha256-4k/sha2", |b| {
        b.iter(|| {
            let mut h = HashAlg::Sha256.start();
            h.update(&data);
            h.current()
        })
    });
    g.bench_function("sha256-4k/ring", |b| {
        b.iter(|| {
            let mut h = ring::digest::Context::new(&ring::digest::SHA256);
            h.update(&data);
            h.clone().finish()
        })
    });
    g.bench_function("sha256-4k/aws-lc", |b| {
        b.iter(|| {
            let mut h = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
            h.update(&data);
            h.clone().finish()
        })
    });
    g.finish();
    let mut g = c.benchmark_group("primitives");
    g.bench_function("hmac-sha256-32B/tls13lab", |b| {
        b.iter(|| HashAlg::Sha256.hmac(&[1; 32], &[2; 32]))
    });
    // HKDF-Expand-Label as the schedule runs it: on a secret whose HMAC key state is kept
    // (the 2nd+ expansion of a secret), and on a fresh secret (its first, key state included).
    let secret = Secret::new(&[3; 32]).expect("32 bytes");
    g.bench_function("hkdf-expand-label-kept-key/tls13lab", |b| {
        b.iter(|| expand_label_secret(HashAlg::Sha256, &secret, Label::Finished, &[]))
    });
    g.bench_function("hkdf-expand-label-fresh-key/tls13lab", |b| {
        b.iter(|| {
            let s = Secret::new(&[3; 32]).expect("32 bytes");
            expand_label_secret(HashAlg::Sha256, &s, Label::Finished, &[])
        })
    });
    g.bench_function("hmac-sha256-32B/aws-lc", |b| {
        b.iter(|| {
            let k = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &[1; 32]);
            aws_lc_rs::hmac::sign(&k, &[2; 32])
        })
    });
    g.finish();
    mldsa_primitives(c);
}

/// ML-DSA-44/65/87 signing and verification of a CertificateVerify-sized message: through our
/// `SigningKey` and `verify_signature` (aws-lc with `aws-lc-mldsa`, RustCrypto's `ml-dsa`
/// without: run both builds to compare) and through aws-lc-rs' `PqdsaKeyPair` (rustls' signer).
/// Signing is a rejection loop: each iteration signs with a fresh rnd, so the mean is a
/// handshake's.
fn mldsa_primitives(c: &mut Criterion) {
    use aws_lc_rs::signature::{self as sig, KeyPair, PqdsaKeyPair, UnparsedPublicKey};
    use tls13lab::crypto::random::SeededRandom;
    use tls13lab::crypto::sign::{verify_signature, MlDsaLevel, SigningKey};
    let mut g = c.benchmark_group("primitives");
    let msg = [0x20u8; 130];
    for level in MlDsaLevel::ALL {
        let name = level.scheme().to_string();
        let key = SigningKey::generate_mldsa(level, &mut SeededRandom::from_seed(42));
        let spki = key.public_key_spki_der().unwrap();
        let mut seed = 0u64;
        g.bench_function(format!("{name}-sign/tls13lab"), |b| {
            b.iter(|| {
                seed += 1;
                key.sign(level.scheme(), &msg, &mut SeededRandom::from_seed(seed))
                    .unwrap()
            })
        });
        let signature = key
            .sign(level.scheme(), &msg, &mut SeededRandom::from_seed(1))
            .unwrap();
        g.bench_function(format!("{name}-verify/tls13lab"), |b| {
            b.iter(|| verify_signature(level.scheme(), &spki, &msg, &signature).unwrap())
        });
        let (signing, verifying) = match level {
            MlDsaLevel::L44 => (&sig::ML_DSA_44_SIGNING, &sig::ML_DSA_44),
            MlDsaLevel::L65 => (&sig::ML_DSA_65_SIGNING, &sig::ML_DSA_65),
            MlDsaLevel::L87 => (&sig::ML_DSA_87_SIGNING, &sig::ML_DSA_87),
        };
        let kp = PqdsaKeyPair::from_pkcs8(signing, &key.to_pkcs8_der().unwrap()).unwrap();
        let mut out = vec![0u8; level.signature_len()];
        g.bench_function(format!("{name}-sign/aws-lc"), |b| {
            b.iter(|| kp.sign(&msg, &mut out).unwrap())
        });
        let pk = kp.public_key().as_ref().to_vec();
        g.bench_function(format!("{name}-verify/aws-lc"), |b| {
            b.iter(|| {
                UnparsedPublicKey::new(verifying, &pk)
                    .verify(&msg, &signature)
                    .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bulk, primitives);
criterion_main!(benches);
