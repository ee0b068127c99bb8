//! HPKE's post-quantum KEMs (draft-ietf-hpke-pq): ML-KEM-768 (0x0041), ML-KEM-1024 (0x0042)
//! and MLKEM768-X25519, X-Wing (0x647a). They are KEMs, not Diffie-Hellman groups: Encap's
//! output is the shared secret itself (Nsecret 32, no ExtractAndExpand) and `enc` is a
//! ciphertext, not a public key.
//!
//! ```text
//! DeriveKeyPair(ikm)   dk = SHAKE256(ikm || "HPKE-v1" || suite_id || I2OSP(13, 2) ||
//!                                    "DeriveKeyPair" || I2OSP(Nsk, 2))           §3, §4
//!   ML-KEM-768/1024    dk = d || z (64 bytes); ek from ML-KEM.KeyGen_internal(d, z)
//!   X-Wing             sk = 32 bytes; SHAKE256(sk, 96) = d || z || skX;
//!                      pk = ek_M || X25519(skX, 9)   (ML-KEM-768)
//! Encap(pk)            ML-KEM: ML-KEM.Encaps(ek, m), m the 32 drawn bytes, after the
//!                      FIPS 203 §7.2 modulus check on ek
//!                      X-Wing: eseed (64 drawn bytes) = m || ekX; ctX = X25519(ekX, 9);
//!                      ss = SHA3-256(ss_M || X25519(ekX, pkX) || ctX || pkX || "\.//^\")
//!
//!                      Npk    Nenc   Nsk
//!   ML-KEM-768         1184   1088   64
//!   ML-KEM-1024        1568   1568   64
//!   X-Wing             1216   1120   32
//! ```
//!
//! The ML-KEM here is always RustCrypto's `ml-kem` with its deterministic entry points (one
//! generic helper per step over the parameter set, so the two ML-KEMs and X-Wing share them):
//! the encapsulation randomness comes from the injected `RandomSource` (one draw of 32 or 64
//! bytes), so ECH with these KEMs replays from a seed and the draft's vectors (whose `ikmE`
//! is that draw) can be scripted. The seeds and shared secrets are erased on drop
//! (`Zeroizing`; `ml-kem`'s decapsulation keys erase themselves).

use ml_kem::kem::Decapsulate;
use ml_kem::{EncapsulateDeterministic, EncodedSizeUser, KemCore, MlKem1024, MlKem768, B32};
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::{Digest, Sha3_256, Shake256};
use zeroize::{Zeroize, Zeroizing};

use super::kx::{static_dh, KxError};

/// ML-KEM-768's encapsulation key and ciphertext lengths (FIPS 203 Table 3).
pub(crate) const MLKEM768_EK: usize = 1184;
pub(crate) const MLKEM768_CT: usize = 1088;
/// ML-KEM-1024's (FIPS 203 Table 3).
pub(crate) const MLKEM1024_EK: usize = 1568;
pub(crate) const MLKEM1024_CT: usize = 1568;
/// X-Wing's combiner label (draft-connolly-cfrg-xwing-kem, "\.//^\").
const XWING_LABEL: &[u8; 6] = b"\\.//^\\";

/// Which post-quantum KEM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PqKem {
    MlKem768,
    MlKem1024,
    XWing,
}

/// SHAKE256.LabeledDerive(ikm, "DeriveKeyPair", "", len) under `suite_id` (draft-ietf-hpke-pq
/// §3: RFC 9180's labels with the output length before the context).
pub(crate) fn labeled_derive(suite_id: &[u8], ikm: &[u8], len: usize) -> Zeroizing<Vec<u8>> {
    const LABEL: &[u8] = b"DeriveKeyPair";
    let mut h = Shake256::default();
    h.update(ikm);
    h.update(b"HPKE-v1");
    h.update(suite_id);
    h.update(&(LABEL.len() as u16).to_be_bytes());
    h.update(LABEL);
    h.update(&(len as u16).to_be_bytes());
    let mut out = Zeroizing::new(vec![0u8; len]);
    h.finalize_xof().read(&mut out);
    out
}

/// ML-KEM.KeyGen_internal(d, z) of the parameter set `K`, from the 64 bytes d || z: the
/// decapsulation key (erased on drop by `ml-kem`) and the encapsulation key.
fn keygen<K: KemCore>(seeds: &[u8]) -> (K::DecapsulationKey, K::EncapsulationKey) {
    let mut d = B32::try_from(&seeds[..32]).expect("32 bytes");
    let mut z = B32::try_from(&seeds[32..64]).expect("32 bytes");
    let keys = K::generate_deterministic(&d, &z);
    // The seeds are the private key: the copies go as the caller's do.
    d.as_mut_slice().zeroize();
    z.as_mut_slice().zeroize();
    keys
}

/// ML-KEM.Encaps(ek, m) of `K` with the drawn m (32 bytes), after the modulus check:
/// (shared secret, ciphertext).
fn mlkem_encap<K: KemCore>(ek: &[u8], m: &[u8]) -> Result<(Zeroizing<[u8; 32]>, Vec<u8>), KxError> {
    let ek = mlkem_ek::<K>(ek)?;
    let mut m = B32::try_from(&m[..32]).expect("32 bytes");
    let encapsulated = ek.encapsulate_deterministic(&m);
    // m and ek give the shared secret: erased as soon as it is used.
    m.as_mut_slice().zeroize();
    let (ct, mut ss) = encapsulated.map_err(|_| KxError::KemFailure("ML-KEM encapsulation"))?;
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(&ss);
    ss.as_mut_slice().zeroize();
    Ok((out, ct.to_vec()))
}

/// ML-KEM.Decaps of `K` with the key of the seeds d || z: the shared secret (the implicit
/// rejection key for a wrong ciphertext of the right length).
fn mlkem_decap<K: KemCore>(seeds: &[u8], ct: &[u8]) -> Result<Zeroizing<[u8; 32]>, KxError> {
    let (dk, _) = keygen::<K>(seeds);
    let ct = ml_kem::Ciphertext::<K>::try_from(ct)
        .map_err(|_| KxError::InvalidPeerShare("ML-KEM ciphertext of the wrong length"))?;
    let mut ss = dk
        .decapsulate(&ct)
        .map_err(|_| KxError::KemFailure("ML-KEM decapsulation"))?;
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(&ss);
    ss.as_mut_slice().zeroize();
    Ok(out)
}

/// X-Wing's expanded key: the ML-KEM seeds and the X25519 private key.
fn xwing_expand(sk: &[u8]) -> Zeroizing<[u8; 96]> {
    let mut h = Shake256::default();
    h.update(sk);
    let mut out = Zeroizing::new([0u8; 96]);
    h.finalize_xof().read(&mut out[..]);
    out
}

impl PqKem {
    /// Nsk: the serialized private key (ML-KEM's 64-byte seed form; X-Wing's 32-byte seed).
    pub(crate) const fn sk_len(self) -> usize {
        match self {
            PqKem::MlKem768 | PqKem::MlKem1024 => 64,
            PqKem::XWing => 32,
        }
    }

    /// Npk.
    pub(crate) const fn pk_len(self) -> usize {
        match self {
            PqKem::MlKem768 => MLKEM768_EK,
            PqKem::MlKem1024 => MLKEM1024_EK,
            PqKem::XWing => MLKEM768_EK + 32,
        }
    }

    /// Nenc.
    pub(crate) const fn enc_len(self) -> usize {
        match self {
            PqKem::MlKem768 => MLKEM768_CT,
            PqKem::MlKem1024 => MLKEM1024_CT,
            PqKem::XWing => MLKEM768_CT + 32,
        }
    }

    /// Bytes Encap draws from the random source.
    pub(crate) const fn encap_random_len(self) -> usize {
        match self {
            PqKem::MlKem768 | PqKem::MlKem1024 => 32,
            PqKem::XWing => 64,
        }
    }

    /// The public key of a serialized private key.
    pub(crate) fn public(self, sk: &[u8]) -> Vec<u8> {
        match self {
            PqKem::MlKem768 => keygen::<MlKem768>(sk).1.as_bytes().to_vec(),
            PqKem::MlKem1024 => keygen::<MlKem1024>(sk).1.as_bytes().to_vec(),
            PqKem::XWing => {
                let e = xwing_expand(sk);
                let (_, ek) = keygen::<MlKem768>(&e[..64]);
                let x: Zeroizing<[u8; 32]> = Zeroizing::new(e[64..].try_into().expect("32 bytes"));
                let mut pk = ek.as_bytes().to_vec();
                pk.extend_from_slice(&static_dh::x25519_public(&x));
                pk
            }
        }
    }

    /// Encap(pk) with the drawn `random` (Nrandom bytes): (shared_secret, enc).
    pub(crate) fn encap(
        self,
        pk: &[u8],
        random: &[u8],
    ) -> Result<(Zeroizing<[u8; 32]>, Vec<u8>), KxError> {
        if pk.len() != self.pk_len() {
            return Err(KxError::InvalidPeerShare(
                "HPKE public key of the wrong length",
            ));
        }
        match self {
            PqKem::MlKem768 => mlkem_encap::<MlKem768>(pk, random),
            PqKem::MlKem1024 => mlkem_encap::<MlKem1024>(pk, random),
            PqKem::XWing => {
                let (ss_m, mut enc) = mlkem_encap::<MlKem768>(&pk[..MLKEM768_EK], random)?;
                let ek_x: Zeroizing<[u8; 32]> =
                    Zeroizing::new(random[32..64].try_into().expect("32 bytes"));
                let ct_x = static_dh::x25519_public(&ek_x);
                let pk_x = &pk[MLKEM768_EK..];
                let ss_x = static_dh::x25519(&ek_x, pk_x)?;
                enc.extend_from_slice(&ct_x);
                Ok((xwing_combine(&ss_m[..], &ss_x[..], &ct_x, pk_x), enc))
            }
        }
    }

    /// Decap(enc, sk): the shared secret.
    pub(crate) fn decap(self, sk: &[u8], enc: &[u8]) -> Result<Zeroizing<[u8; 32]>, KxError> {
        if enc.len() != self.enc_len() {
            return Err(KxError::InvalidPeerShare("HPKE enc of the wrong length"));
        }
        match self {
            PqKem::MlKem768 => mlkem_decap::<MlKem768>(&sk[..64], enc),
            PqKem::MlKem1024 => mlkem_decap::<MlKem1024>(&sk[..64], enc),
            PqKem::XWing => {
                // The expanded seeds d || z and X25519 key are erased on drop.
                let e = xwing_expand(sk);
                let ss_m = mlkem_decap::<MlKem768>(&e[..64], &enc[..MLKEM768_CT])?;
                let sk_x: Zeroizing<[u8; 32]> =
                    Zeroizing::new(e[64..].try_into().expect("32 bytes"));
                let ct_x = &enc[MLKEM768_CT..];
                let ss_x = static_dh::x25519(&sk_x, ct_x)?;
                let pk_x = static_dh::x25519_public(&sk_x);
                Ok(xwing_combine(&ss_m[..], &ss_x[..], ct_x, &pk_x))
            }
        }
    }
}

/// The encapsulation key of `K`, checked as FIPS 203 §7.2 requires (its coefficients reduced
/// mod q: decoding and re-encoding gives the same bytes).
fn mlkem_ek<K: KemCore>(bytes: &[u8]) -> Result<K::EncapsulationKey, KxError> {
    let encoded = ml_kem::Encoded::<K::EncapsulationKey>::try_from(bytes)
        .map_err(|_| KxError::InvalidPeerShare("ML-KEM encapsulation key of the wrong length"))?;
    let ek = K::EncapsulationKey::from_bytes(&encoded);
    if ek.as_bytes().as_slice() != bytes {
        return Err(KxError::InvalidPeerShare(
            "ML-KEM encapsulation key fails the modulus check",
        ));
    }
    Ok(ek)
}

/// X-Wing's combiner: SHA3-256(ss_M || ss_X || ct_X || pk_X || label).
fn xwing_combine(ss_m: &[u8], ss_x: &[u8], ct_x: &[u8], pk_x: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut h = Sha3_256::new();
    Digest::update(&mut h, ss_m);
    Digest::update(&mut h, ss_x);
    Digest::update(&mut h, ct_x);
    Digest::update(&mut h, pk_x);
    Digest::update(&mut h, XWING_LABEL);
    Zeroizing::new(h.finalize().into())
}
