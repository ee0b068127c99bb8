//! The optional aws-lc backends: key exchange (feature `aws-lc-kx`: X25519 and ML-KEM) and
//! ML-DSA signing and verification (feature `aws-lc-mldsa`), on aws-lc's assembly through
//! `aws-lc-sys`, with *injected* randomness so that connections still replay byte for byte
//! from the seed.
//!
//! aws-lc-rs's safe API draws ML-KEM's seeds from the OS, which would break replay. aws-lc itself
//! exports the deterministic FIPS 203 entry points (`EVP_PKEY_keygen_deterministic` takes d || z,
//! `EVP_PKEY_encapsulate_deterministic` takes m), and X25519 takes the private key as bytes; this
//! module wraps those few C calls. It is the only module of the crate allowed `unsafe`: each call
//! is a plain function on buffers whose lengths are checked here, and every aws-lc object is
//! owned by exactly one Rust value that frees it on drop. The RFC 8448 and hybrid test vectors
//! pass unchanged through this backend (`cargo test --features aws-lc-kx`), which is what shows
//! the seeds are consumed exactly as the RustCrypto path consumes them.
//!
//! ML-DSA: aws-lc-rs' signer draws its `rnd` itself, so this module calls FIPS 204's internal
//! functions (Algorithms 6–8), which take ξ and `rnd` from the caller, with pure ML-DSA's
//! prefix for the empty context. They give the same keys and signatures as the RustCrypto
//! `ml-dsa` path (crypto::sign's tests compare both on all three levels).
#![allow(unsafe_code)]
// Each feature uses its half of the module.
#![cfg_attr(
    not(all(feature = "aws-lc-kx", feature = "aws-lc-mldsa")),
    allow(dead_code)
)]

use core::ptr::{self, NonNull};

use aws_lc_sys as ffi;
use zeroize::Zeroizing;

// crypto::sign's ML-DSA parameter set: its FIPS 204 Table 2 lengths size every buffer here.
use super::sign::MlDsaLevel as MlDsa;

/// X25519(k, 9): the public key of a 32-byte private key (clamped inside, RFC 7748 §5).
pub(crate) fn x25519_public(private: &[u8; 32]) -> [u8; 32] {
    let mut public = [0u8; 32];
    // SAFETY: both pointers address 32 valid bytes, as the function requires.
    unsafe { ffi::X25519_public_from_private(public.as_mut_ptr(), private.as_ptr()) };
    public
}

/// X25519(k, u), or `None` when the result is all zeros (RFC 7748 §6.1; RFC 8446 §7.4.2 says
/// to abort). aws-lc checks that in constant time and returns 0.
pub(crate) fn x25519(private: &[u8; 32], peer: &[u8; 32]) -> Option<Zeroizing<[u8; 32]>> {
    let mut shared = Zeroizing::new([0u8; 32]);
    // SAFETY: the three pointers address 32 valid bytes each.
    let ok = unsafe { ffi::X25519(shared.as_mut_ptr(), private.as_ptr(), peer.as_ptr()) };
    (ok == 1).then_some(shared)
}

/// The three ML-KEM parameter sets, as aws-lc names them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum MlKem {
    K512,
    K768,
    K1024,
}

impl MlKem {
    fn nid(self) -> i32 {
        match self {
            MlKem::K512 => ffi::NID_MLKEM512,
            MlKem::K768 => ffi::NID_MLKEM768,
            MlKem::K1024 => ffi::NID_MLKEM1024,
        }
    }

    /// Encapsulation key and ciphertext lengths (FIPS 203 §8, table 3).
    fn lens(self) -> (usize, usize) {
        match self {
            MlKem::K512 => (800, 768),
            MlKem::K768 => (1184, 1088),
            MlKem::K1024 => (1568, 1568),
        }
    }
}

/// An owned `EVP_PKEY` (freed on drop).
struct Pkey(NonNull<ffi::EVP_PKEY>);

impl Drop for Pkey {
    fn drop(&mut self) {
        // SAFETY: we own this reference; aws-lc cleanses key material when freeing it.
        unsafe { ffi::EVP_PKEY_free(self.0.as_ptr()) }
    }
}

// SAFETY: the key is only read after construction (decapsulation), and an EVP_PKEY may be read
// from any thread; this value is its only owner.
unsafe impl Send for Pkey {}
// SAFETY: as above: shared references only read the key.
unsafe impl Sync for Pkey {}

/// An owned `EVP_PKEY_CTX` (freed on drop).
struct Ctx(NonNull<ffi::EVP_PKEY_CTX>);

impl Ctx {
    fn for_key(key: &Pkey) -> Option<Ctx> {
        // SAFETY: `key` is a valid EVP_PKEY; the context takes its own reference to it.
        NonNull::new(unsafe { ffi::EVP_PKEY_CTX_new(key.0.as_ptr(), ptr::null_mut()) }).map(Ctx)
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: we own this context.
        unsafe { ffi::EVP_PKEY_CTX_free(self.0.as_ptr()) }
    }
}

/// An ML-KEM decapsulation key held between ClientHello and ServerHello.
pub(crate) struct MlKemPrivate {
    kem: MlKem,
    key: Pkey,
}

/// ML-KEM.KeyGen_internal(d, z) (FIPS 203 Algorithm 16): returns the decapsulation key and
/// appends the encoded encapsulation key to `ek`. `None` only if aws-lc fails (out of memory).
pub(crate) fn mlkem_generate(
    kem: MlKem,
    d: &[u8; 32],
    z: &[u8; 32],
    ek: &mut Vec<u8>,
) -> Option<MlKemPrivate> {
    let mut seed = Zeroizing::new([0u8; 64]);
    seed[..32].copy_from_slice(d);
    seed[32..].copy_from_slice(z);
    // SAFETY: a context for the KEM type, freed by `Ctx`'s drop.
    let ctx = Ctx(NonNull::new(unsafe {
        ffi::EVP_PKEY_CTX_new_id(ffi::EVP_PKEY_KEM, ptr::null_mut())
    })?);
    let mut raw: *mut ffi::EVP_PKEY = ptr::null_mut();
    let mut seed_len = seed.len();
    // SAFETY: `ctx` is valid; `raw` receives a new key we then own; the seed pointer addresses
    // `seed_len` (64) bytes, the d || z length aws-lc's ML-KEM requires.
    let ok = unsafe {
        ffi::EVP_PKEY_CTX_kem_set_params(ctx.0.as_ptr(), kem.nid()) == 1
            && ffi::EVP_PKEY_keygen_init(ctx.0.as_ptr()) == 1
            && ffi::EVP_PKEY_keygen_deterministic(
                ctx.0.as_ptr(),
                &mut raw,
                seed.as_ptr(),
                &mut seed_len,
            ) == 1
    };
    let key = Pkey(NonNull::new(raw)?);
    if !ok {
        return None;
    }
    let (ek_len, _) = kem.lens();
    let start = ek.len();
    ek.resize(start + ek_len, 0);
    let mut len = ek_len;
    // SAFETY: `ek[start..]` has room for `len` bytes; aws-lc writes at most that and updates
    // `len`.
    let ok = unsafe {
        ffi::EVP_PKEY_get_raw_public_key(key.0.as_ptr(), ek[start..].as_mut_ptr(), &mut len)
    };
    if ok != 1 || len != ek_len {
        ek.truncate(start);
        return None;
    }
    Some(MlKemPrivate { kem, key })
}

/// ML-KEM.Encaps_internal(ek, m) (FIPS 203 Algorithm 17) to an encapsulation key that already
/// passed our FIPS 203 §7.2 check: appends the ciphertext to `ct` and the shared secret to
/// `ss`, or returns `None` if aws-lc refuses the key.
pub(crate) fn mlkem_encapsulate(
    kem: MlKem,
    ek: &[u8],
    m: &[u8; 32],
    ct: &mut Vec<u8>,
    ss: &mut Vec<u8>,
) -> Option<()> {
    let (ek_len, ct_len) = kem.lens();
    if ek.len() != ek_len {
        return None;
    }
    // SAFETY: `ek` addresses `ek.len()` readable bytes; the new key is owned by `Pkey`.
    let key = Pkey(NonNull::new(unsafe {
        ffi::EVP_PKEY_kem_new_raw_public_key(kem.nid(), ek.as_ptr(), ek.len())
    })?);
    let ctx = Ctx::for_key(&key)?;
    let mut secret = Zeroizing::new([0u8; 32]);
    let start = ct.len();
    ct.resize(start + ct_len, 0);
    let (mut ct_out, mut ss_out, mut m_len) = (ct_len, secret.len(), m.len());
    // SAFETY: each buffer has room for the length passed beside it; aws-lc checks them against
    // the parameter set before writing.
    let ok = unsafe {
        ffi::EVP_PKEY_encapsulate_deterministic(
            ctx.0.as_ptr(),
            ct[start..].as_mut_ptr(),
            &mut ct_out,
            secret.as_mut_ptr(),
            &mut ss_out,
            m.as_ptr(),
            &mut m_len,
        )
    };
    if ok != 1 || ct_out != ct_len || ss_out != 32 {
        ct.truncate(start);
        return None;
    }
    ss.extend_from_slice(&secret[..]);
    Some(())
}

impl MlKemPrivate {
    /// The ciphertext length this key decapsulates.
    pub(crate) fn ciphertext_len(&self) -> usize {
        self.kem.lens().1
    }

    /// The decapsulation key as FIPS 203 encodes it (for the tests against the vectors).
    #[cfg(test)]
    pub(crate) fn encoded(&self) -> Vec<u8> {
        let mut len = 0;
        // SAFETY: a null buffer asks for the length only.
        unsafe {
            ffi::EVP_PKEY_get_raw_private_key(self.key.0.as_ptr(), ptr::null_mut(), &mut len)
        };
        let mut out = vec![0u8; len];
        // SAFETY: `out` has room for `len` bytes.
        let ok = unsafe {
            ffi::EVP_PKEY_get_raw_private_key(self.key.0.as_ptr(), out.as_mut_ptr(), &mut len)
        };
        assert_eq!(ok, 1);
        out.truncate(len);
        out
    }

    /// ML-KEM.Decaps (FIPS 203 Algorithm 18/21): a ciphertext of the right length always yields
    /// a key (the implicit-rejection one if it was tampered with), appended to `out`. `None`
    /// for a wrong length.
    pub(crate) fn decapsulate_into(&self, ct: &[u8], out: &mut Vec<u8>) -> Option<()> {
        if ct.len() != self.kem.lens().1 {
            return None;
        }
        let ctx = Ctx::for_key(&self.key)?;
        let mut ss = Zeroizing::new([0u8; 32]);
        let mut ss_len = ss.len();
        // SAFETY: `ss` has room for `ss_len` bytes, `ct` addresses `ct.len()` bytes.
        let ok = unsafe {
            ffi::EVP_PKEY_decapsulate(
                ctx.0.as_ptr(),
                ss.as_mut_ptr(),
                &mut ss_len,
                ct.as_ptr(),
                ct.len(),
            )
        };
        if ok != 1 || ss_len != 32 {
            return None;
        }
        out.extend_from_slice(&ss[..]);
        Some(())
    }
}

// ---------------------------------------------------------------------------------------------
// ML-DSA (feature `aws-lc-mldsa`): mldsa-native inside aws-lc, FIPS 204's internal interface.

/// The FIPS 204 "internal" entry points of aws-lc's ML-DSA (crypto/fipsmodule/ml_dsa/ml_dsa.h).
/// aws-lc-sys binds none of them, so they are declared here under the prefix aws-lc-sys gives
/// every symbol of the libcrypto it builds (`aws_lc_` and its version; Cargo.toml pins that
/// version, and a mismatch fails at link time, never at run time). Each returns 1 on success.
mod mldsa_ffi {
    macro_rules! levels {
        ($($l:literal: $keypair:ident $pk_from_sk:ident $sign:ident $verify:ident;)*) => {$(
            extern "C" {
                #[link_name = concat!("aws_lc_0_47_0_ml_dsa_", $l, "_keypair_internal")]
                pub(super) fn $keypair(public_key: *mut u8, private_key: *mut u8, seed: *const u8)
                    -> i32;
                #[link_name = concat!("aws_lc_0_47_0_ml_dsa_", $l, "_pack_pk_from_sk")]
                pub(super) fn $pk_from_sk(public_key: *mut u8, private_key: *const u8) -> i32;
                #[link_name = concat!("aws_lc_0_47_0_ml_dsa_", $l, "_sign_internal")]
                pub(super) fn $sign(
                    private_key: *const u8,
                    sig: *mut u8,
                    sig_len: *mut usize,
                    message: *const u8,
                    message_len: usize,
                    pre: *const u8,
                    pre_len: usize,
                    rnd: *const u8,
                ) -> i32;
                #[link_name = concat!("aws_lc_0_47_0_ml_dsa_", $l, "_verify_internal")]
                pub(super) fn $verify(
                    public_key: *const u8,
                    sig: *const u8,
                    sig_len: usize,
                    message: *const u8,
                    message_len: usize,
                    pre: *const u8,
                    pre_len: usize,
                ) -> i32;
            }
        )*};
    }
    levels! {
        "44": keypair_44 pk_from_sk_44 sign_44 verify_44;
        "65": keypair_65 pk_from_sk_65 sign_65 verify_65;
        "87": keypair_87 pk_from_sk_87 sign_87 verify_87;
    }
}

/// (public key, expanded private key, signature) lengths of `level`.
fn lens(level: MlDsa) -> (usize, usize, usize) {
    (
        level.public_key_len(),
        level.expanded_key_len(),
        level.signature_len(),
    )
}

/// Pure ML-DSA's prefix for the empty context string: M' = 0x00 || len(ctx) = 0 || M (FIPS 204
/// Algorithm 2 line 10, Algorithm 3 line 5); draft-ietf-tls-mldsa §3 signs with ctx empty.
const PURE_EMPTY_CONTEXT: [u8; 2] = [0, 0];

/// ML-DSA.KeyGen_internal(ξ) (FIPS 204 Algorithm 6): (pkEncode, skEncode) of the key of `seed`.
pub(crate) fn mldsa_keypair(level: MlDsa, seed: &[u8; 32]) -> (Vec<u8>, Zeroizing<Vec<u8>>) {
    let (pk_len, sk_len, _) = lens(level);
    let mut pk = vec![0u8; pk_len];
    let mut sk = Zeroizing::new(vec![0u8; sk_len]);
    let f = match level {
        MlDsa::L44 => mldsa_ffi::keypair_44,
        MlDsa::L65 => mldsa_ffi::keypair_65,
        MlDsa::L87 => mldsa_ffi::keypair_87,
    };
    // SAFETY: `pk` and `sk` have exactly the level's lengths, `seed` 32 bytes, as the function
    // requires; it writes nothing else.
    let ok = unsafe { f(pk.as_mut_ptr(), sk.as_mut_ptr(), seed.as_ptr()) };
    // Key generation from a seed has no failure mode outside a FIPS build's pairwise test.
    assert_eq!(ok, 1, "aws-lc ML-DSA key generation failed");
    (pk, sk)
}

/// The public key of an expanded private key, or `None` if the key is invalid: aws-lc
/// recomputes t from s1 and s2 and refuses a key whose s1 or s2 coefficients lie outside
/// [−η, η], whose t0 differs from the recomputed one or whose tr is not H(pk) (FIPS 204
/// Algorithm 25 decodes any bytes; §3.6.2's checks are on the caller).
pub(crate) fn mldsa_public_from_private(level: MlDsa, sk: &[u8]) -> Option<Vec<u8>> {
    let (pk_len, sk_len, _) = lens(level);
    if sk.len() != sk_len {
        return None;
    }
    let mut pk = vec![0u8; pk_len];
    let f = match level {
        MlDsa::L44 => mldsa_ffi::pk_from_sk_44,
        MlDsa::L65 => mldsa_ffi::pk_from_sk_65,
        MlDsa::L87 => mldsa_ffi::pk_from_sk_87,
    };
    // SAFETY: `pk` and `sk` have exactly the level's lengths (checked above).
    let ok = unsafe { f(pk.as_mut_ptr(), sk.as_ptr()) };
    (ok == 1).then_some(pk)
}

/// ML-DSA.Sign_internal(sk, M', rnd) (FIPS 204 Algorithm 7) with M' = 0x00 || 0x00 || message:
/// pure ML-DSA, empty context, hedged with the caller's `rnd`. Appends the signature to `out`.
/// `sk` must be a key [`mldsa_public_from_private`] accepted (or one [`mldsa_keypair`] made).
pub(crate) fn mldsa_sign(
    level: MlDsa,
    sk: &[u8],
    message: &[u8],
    rnd: &[u8; 32],
    out: &mut Vec<u8>,
) -> Option<()> {
    let (_, sk_len, sig_len) = lens(level);
    if sk.len() != sk_len {
        return None;
    }
    let f = match level {
        MlDsa::L44 => mldsa_ffi::sign_44,
        MlDsa::L65 => mldsa_ffi::sign_65,
        MlDsa::L87 => mldsa_ffi::sign_87,
    };
    let start = out.len();
    out.resize(start + sig_len, 0);
    let mut written = 0usize;
    // SAFETY: `sk` has the level's length (checked), `out[start..]` room for one signature of
    // this level, `rnd` 32 bytes; the message and prefix pointers address their lengths.
    let ok = unsafe {
        f(
            sk.as_ptr(),
            out[start..].as_mut_ptr(),
            &mut written,
            message.as_ptr(),
            message.len(),
            PURE_EMPTY_CONTEXT.as_ptr(),
            PURE_EMPTY_CONTEXT.len(),
            rnd.as_ptr(),
        )
    };
    if ok != 1 || written != sig_len {
        out.truncate(start);
        return None;
    }
    Some(())
}

/// ML-DSA.Verify_internal(pk, M', σ) (FIPS 204 Algorithm 8) with M' = 0x00 || 0x00 || message.
/// `false` for a public key or signature of the wrong length as for a wrong signature.
pub(crate) fn mldsa_verify(level: MlDsa, pk: &[u8], message: &[u8], sig: &[u8]) -> bool {
    let (pk_len, _, sig_len) = lens(level);
    if pk.len() != pk_len || sig.len() != sig_len {
        return false;
    }
    let f = match level {
        MlDsa::L44 => mldsa_ffi::verify_44,
        MlDsa::L65 => mldsa_ffi::verify_65,
        MlDsa::L87 => mldsa_ffi::verify_87,
    };
    // SAFETY: `pk` and `sig` have the level's lengths (checked); every pointer addresses the
    // length passed beside it; nothing is written.
    let ok = unsafe {
        f(
            pk.as_ptr(),
            sig.as_ptr(),
            sig.len(),
            message.as_ptr(),
            message.len(),
            PURE_EMPTY_CONTEXT.as_ptr(),
            PURE_EMPTY_CONTEXT.len(),
        )
    };
    ok == 1
}
