//! HPKE (RFC 9180), base mode, as Encrypted ClientHello uses it (RFC 9849 §6.1, §7.1).
//!
//! ```text
//! DeriveKeyPair(ikm)         dkp_prk = LabeledExtract("", "dkp_prk", ikm)            §7.1.3
//!                            sk = LabeledExpand(dkp_prk, "sk" | "candidate", ..)
//! Encap(pkR)                 dh = DH(skE, pkR); kem_context = enc || pkRm            §4.1
//!                            eae_prk = LabeledExtract("", "eae_prk", dh)
//!                            shared_secret = LabeledExpand(eae_prk, "shared_secret", kem_context)
//! KeySchedule(mode_base)     psk_id_hash = LabeledExtract("", "psk_id_hash", "")     §5.1
//!                            info_hash = LabeledExtract("", "info_hash", info)
//!                            key_schedule_context = 0x00 || psk_id_hash || info_hash
//!                            secret = LabeledExtract(shared_secret, "secret", "")
//!                            key, base_nonce, exporter_secret =
//!                              LabeledExpand(secret, "key" | "base_nonce" | "exp", key_schedule_context)
//! Seal/Open                  nonce = base_nonce XOR I2OSP(seq, Nn)                   §5.2
//! Export                     LabeledExpand(exporter_secret, "sec", exporter_context, L)  §5.3
//! ```
//!
//! It is composed from the crate's own primitives (HKDF on [`HashAlg`], the key-share DH of
//! [`super::kx`], the record AEADs of [`super::aead`]) so that every step above can be reported
//! to an [`HpkeSink`] as an [`HpkeStep`], as the key schedule reports its derivations. The
//! sender's ephemeral key is `DeriveKeyPair(ikm)` with `ikm` drawn from the injected
//! [`RandomSource`] (Nsk bytes, one draw), so an ECH handshake replays from a seed and RFC 9180's
//! vectors (which give ikmE) can be scripted.
//!
//! Implemented: KEMs DHKEM(X25519, HKDF-SHA256), DHKEM(P-256, HKDF-SHA256), and the
//! post-quantum ML-KEM-768, ML-KEM-1024 and MLKEM768-X25519 (X-Wing) of draft-ietf-hpke-pq (their
//! DeriveKeyPair, Encap and Decap in `crypto/hpke_pq.rs`); KDF HKDF-SHA256;
//! AEADs AES-128-GCM, AES-256-GCM, ChaCha20Poly1305 and Export-only. Only mode_base: ECH uses
//! no PSK and no sender authentication (RFC 9849 §6.1).

use core::fmt;

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::aead::{AeadAlg, AeadError, AeadKey, NONCE_LEN};
use super::hash::{to_hex, HashAlg, PreparedHmac};
use super::hkdf;
use super::hpke_pq::{self, PqKem};
use super::kx::{static_dh, KxError};
use super::random::RandomSource;
use super::NoSink;
use crate::messages::enums::{HpkeAeadId, HpkeKdfId, HpkeKemId};

/// The version label every LabeledExtract/LabeledExpand starts with (RFC 9180 §4).
const VERSION_LABEL: &[u8] = b"HPKE-v1";
/// mode_base (RFC 9180 §5, Table 1).
const MODE_BASE: u8 = 0x00;

/// A KEM we implement (RFC 9180 §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Kem {
    /// DHKEM(X25519, HKDF-SHA256), 0x0020: Nsecret 32, Nenc = Npk 32, Nsk 32.
    X25519HkdfSha256,
    /// DHKEM(P-256, HKDF-SHA256), 0x0010: Nsecret 32, Nenc = Npk 65, Nsk 32.
    P256HkdfSha256,
    /// ML-KEM-768 (draft-ietf-hpke-pq §3), 0x0041: Nsecret 32, Nenc 1088, Npk 1184, Nsk 64.
    MlKem768,
    /// ML-KEM-1024 (draft-ietf-hpke-pq §3), 0x0042: Nsecret 32, Nenc 1568, Npk 1568, Nsk 64.
    MlKem1024,
    /// MLKEM768-X25519, X-Wing (draft-ietf-hpke-pq §4), 0x647a: Nsecret 32, Nenc 1120,
    /// Npk 1216, Nsk 32.
    XWing,
}

impl Kem {
    /// How many KEMs there are ([`Kem::index`] is below it).
    const COUNT: usize = 5;

    /// A dense index, for tables kept per KEM.
    const fn index(self) -> usize {
        match self {
            Kem::X25519HkdfSha256 => 0,
            Kem::P256HkdfSha256 => 1,
            Kem::MlKem768 => 2,
            Kem::XWing => 3,
            Kem::MlKem1024 => 4,
        }
    }

    /// The post-quantum KEM, if this is one.
    fn pq(self) -> Option<PqKem> {
        match self {
            Kem::MlKem768 => Some(PqKem::MlKem768),
            Kem::MlKem1024 => Some(PqKem::MlKem1024),
            Kem::XWing => Some(PqKem::XWing),
            Kem::X25519HkdfSha256 | Kem::P256HkdfSha256 => None,
        }
    }

    /// The KEM of `id`, if implemented.
    pub fn from_id(id: HpkeKemId) -> Option<Kem> {
        match id {
            HpkeKemId::DhkemX25519HkdfSha256 => Some(Kem::X25519HkdfSha256),
            HpkeKemId::DhkemP256HkdfSha256 => Some(Kem::P256HkdfSha256),
            HpkeKemId::MlKem768 => Some(Kem::MlKem768),
            HpkeKemId::MlKem1024 => Some(Kem::MlKem1024),
            HpkeKemId::MlKem768X25519 => Some(Kem::XWing),
            _ => None,
        }
    }

    /// Its code point.
    pub fn id(self) -> HpkeKemId {
        match self {
            Kem::X25519HkdfSha256 => HpkeKemId::DhkemX25519HkdfSha256,
            Kem::P256HkdfSha256 => HpkeKemId::DhkemP256HkdfSha256,
            Kem::MlKem768 => HpkeKemId::MlKem768,
            Kem::MlKem1024 => HpkeKemId::MlKem1024,
            Kem::XWing => HpkeKemId::MlKem768X25519,
        }
    }

    /// Nenc: the length of `enc` (a DHKEM's ephemeral public key, a KEM's ciphertext).
    pub const fn enc_len(self) -> usize {
        match self {
            Kem::X25519HkdfSha256 => 32,
            Kem::P256HkdfSha256 => 65,
            Kem::MlKem768 => PqKem::MlKem768.enc_len(),
            Kem::MlKem1024 => PqKem::MlKem1024.enc_len(),
            Kem::XWing => PqKem::XWing.enc_len(),
        }
    }

    /// Npk: the length of a serialized public key.
    pub const fn pk_len(self) -> usize {
        match self {
            Kem::X25519HkdfSha256 | Kem::P256HkdfSha256 => self.enc_len(),
            Kem::MlKem768 => PqKem::MlKem768.pk_len(),
            Kem::MlKem1024 => PqKem::MlKem1024.pk_len(),
            Kem::XWing => PqKem::XWing.pk_len(),
        }
    }

    /// Nsk: the length of a serialized private key (and of the ikm drawn for one).
    pub const fn sk_len(self) -> usize {
        match self {
            Kem::MlKem768 => PqKem::MlKem768.sk_len(),
            Kem::MlKem1024 => PqKem::MlKem1024.sk_len(),
            Kem::X25519HkdfSha256 | Kem::P256HkdfSha256 | Kem::XWing => 32,
        }
    }

    /// The KEM's own KDF hash (both DHKEMs here use HKDF-SHA256, so Nsecret = 32).
    fn hash(self) -> HashAlg {
        HashAlg::Sha256
    }

    /// suite_id = "KEM" || I2OSP(kem_id, 2) (RFC 9180 §4.1).
    fn suite_id(self) -> [u8; 5] {
        let [a, b] = self.id().to_repr().to_be_bytes();
        [b'K', b'E', b'M', a, b]
    }

    /// DeriveKeyPair(ikm) (RFC 9180 §7.1.3), every step reported to `sink`.
    pub fn derive_key_pair(
        self,
        ikm: &[u8],
        sink: &mut dyn HpkeSink,
    ) -> Result<KeyPair, HpkeError> {
        let suite_id = self.suite_id();
        if let Some(pq) = self.pq() {
            // SHAKE256.LabeledDerive (draft-ietf-hpke-pq §3, §4): one step, no PRK.
            let sk = hpke_pq::labeled_derive(&suite_id, ikm, pq.sk_len());
            report_kem_step(sink, HpkeValue::Sk, &suite_id, &[("ikm", ikm)], &sk);
            return KeyPair::from_private(self, &sk);
        }
        let mut l = Labeled::new(self.hash(), &suite_id, sink);
        let dkp_prk = l.extract(HpkeValue::DkpPrk, b"", ikm);
        let mut sk = Zeroizing::new([0u8; 32]);
        match self {
            Kem::P256HkdfSha256 => {
                // Rejection sampling over candidates; bitmask 0xff for P-256, so the candidate
                // is used whole. More than 256 rejections is DeriveKeyPairError.
                let mut found = false;
                for counter in 0..=255u8 {
                    let v = l.expand(HpkeValue::Candidate, &dkp_prk, &[counter], 32)?;
                    sk.copy_from_slice(&v);
                    if static_dh::p256_public(&sk).is_ok() {
                        found = true;
                        break;
                    }
                }
                if !found {
                    return Err(HpkeError::DeriveKeyPair);
                }
            }
            // X25519 (the post-quantum KEMs returned above).
            _ => {
                let v = l.expand(HpkeValue::Sk, &dkp_prk, b"", 32)?;
                sk.copy_from_slice(&v);
            }
        }
        KeyPair::from_private(self, &sk[..])
    }

    /// GenerateKeyPair: DeriveKeyPair over Nsk bytes drawn from `rng` in one draw.
    pub fn generate_key_pair(
        self,
        rng: &mut dyn RandomSource,
        sink: &mut dyn HpkeSink,
    ) -> Result<KeyPair, HpkeError> {
        let mut ikm = Zeroizing::new(vec![0u8; self.sk_len()]);
        rng.fill(&mut ikm);
        self.derive_key_pair(&ikm, sink)
    }

    fn public(self, sk: &[u8]) -> Result<Vec<u8>, HpkeError> {
        if let Some(pq) = self.pq() {
            return Ok(pq.public(sk));
        }
        let sk: &[u8; 32] = sk.try_into().map_err(|_| HpkeError::InvalidPrivateKey)?;
        match self {
            Kem::P256HkdfSha256 => static_dh::p256_public(sk)
                .map(|p| p.to_vec())
                .map_err(|_| HpkeError::InvalidPrivateKey),
            _ => Ok(static_dh::x25519_public(sk).to_vec()),
        }
    }

    fn dh(self, sk: &[u8], pk: &[u8]) -> Result<Zeroizing<[u8; 32]>, HpkeError> {
        let sk: &[u8; 32] = sk.try_into().map_err(|_| HpkeError::InvalidPrivateKey)?;
        match self {
            Kem::P256HkdfSha256 => static_dh::p256(sk, pk),
            _ => static_dh::x25519(sk, pk),
        }
        .map_err(HpkeError::Validation)
    }

    /// DH, kem_context and ExtractAndExpand (RFC 9180 §4.1), shared by Encap and Decap.
    fn shared_secret(
        self,
        sk: &[u8],
        pk_peer: &[u8],
        enc: &[u8],
        pk_r: &[u8],
        sink: &mut dyn HpkeSink,
    ) -> Result<Zeroizing<Vec<u8>>, HpkeError> {
        let suite_id = self.suite_id();
        let dh = self.dh(sk, pk_peer)?;
        let mut l = Labeled::new(self.hash(), &suite_id, sink);
        l.report(HpkeValue::Dh, &[enc, pk_r], &dh[..]);
        let mut kem_context = enc.to_vec();
        kem_context.extend_from_slice(pk_r);
        l.report(HpkeValue::KemContext, &[enc, pk_r], &kem_context);
        let eae_prk = l.extract(HpkeValue::EaePrk, b"", &dh[..]);
        l.expand(
            HpkeValue::SharedSecret,
            &eae_prk,
            &kem_context,
            self.hash().output_len(),
        )
    }
}

/// A KDF we implement (RFC 9180 §7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Kdf {
    /// HKDF-SHA256, 0x0001: Nh 32.
    HkdfSha256,
}

impl Kdf {
    /// The KDF of `id`, if implemented.
    pub fn from_id(id: HpkeKdfId) -> Option<Kdf> {
        match id {
            HpkeKdfId::HkdfSha256 => Some(Kdf::HkdfSha256),
            _ => None,
        }
    }

    /// Its code point.
    pub fn id(self) -> HpkeKdfId {
        HpkeKdfId::HkdfSha256
    }

    fn hash(self) -> HashAlg {
        HashAlg::Sha256
    }
}

/// An AEAD we implement (RFC 9180 §7.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Aead {
    /// AES-128-GCM, 0x0001: Nk 16, Nn 12, Nt 16.
    Aes128Gcm,
    /// AES-256-GCM, 0x0002: Nk 32, Nn 12, Nt 16.
    Aes256Gcm,
    /// ChaCha20Poly1305, 0x0003: Nk 32, Nn 12, Nt 16.
    ChaCha20Poly1305,
    /// Export-only, 0xffff: no key, no nonce; Seal and Open fail (§5.3).
    ExportOnly,
}

impl Aead {
    /// How many AEADs there are ([`Aead::index`] is below it).
    const COUNT: usize = 4;

    /// A dense index, for tables kept per AEAD.
    const fn index(self) -> usize {
        match self {
            Aead::Aes128Gcm => 0,
            Aead::Aes256Gcm => 1,
            Aead::ChaCha20Poly1305 => 2,
            Aead::ExportOnly => 3,
        }
    }

    /// The AEAD of `id`, if implemented.
    pub fn from_id(id: HpkeAeadId) -> Option<Aead> {
        match id {
            HpkeAeadId::Aes128Gcm => Some(Aead::Aes128Gcm),
            HpkeAeadId::Aes256Gcm => Some(Aead::Aes256Gcm),
            HpkeAeadId::ChaCha20Poly1305 => Some(Aead::ChaCha20Poly1305),
            HpkeAeadId::ExportOnly => Some(Aead::ExportOnly),
            HpkeAeadId::Unknown(_) => None,
        }
    }

    /// Its code point.
    pub fn id(self) -> HpkeAeadId {
        match self {
            Aead::Aes128Gcm => HpkeAeadId::Aes128Gcm,
            Aead::Aes256Gcm => HpkeAeadId::Aes256Gcm,
            Aead::ChaCha20Poly1305 => HpkeAeadId::ChaCha20Poly1305,
            Aead::ExportOnly => HpkeAeadId::ExportOnly,
        }
    }

    /// The record AEAD it is (the same AES-GCM and ChaCha20-Poly1305), `None` for export-only.
    pub fn alg(self) -> Option<AeadAlg> {
        match self {
            Aead::Aes128Gcm => Some(AeadAlg::Aes128Gcm),
            Aead::Aes256Gcm => Some(AeadAlg::Aes256Gcm),
            Aead::ChaCha20Poly1305 => Some(AeadAlg::ChaCha20Poly1305),
            Aead::ExportOnly => None,
        }
    }

    /// Nt: the tag each ciphertext carries (0 for Export-only).
    pub fn tag_len(self) -> usize {
        self.alg().map_or(0, |a| a.tag_len())
    }
}

/// An HPKE ciphersuite: KEM, KDF and AEAD (RFC 9180 §5.1; ECH's HpkeSymmetricCipherSuite plus
/// the ECHConfig's kem_id, RFC 9849 §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Suite {
    /// The KEM.
    pub kem: Kem,
    /// The KDF of the key schedule.
    pub kdf: Kdf,
    /// The AEAD.
    pub aead: Aead,
}

impl Suite {
    /// The suite of three code points, or [`HpkeError::Unsupported`].
    pub fn from_ids(kem: HpkeKemId, kdf: HpkeKdfId, aead: HpkeAeadId) -> Result<Suite, HpkeError> {
        match (Kem::from_id(kem), Kdf::from_id(kdf), Aead::from_id(aead)) {
            (Some(kem), Some(kdf), Some(aead)) => Ok(Suite { kem, kdf, aead }),
            _ => Err(HpkeError::Unsupported { kem, kdf, aead }),
        }
    }

    /// suite_id = "HPKE" || I2OSP(kem_id, 2) || I2OSP(kdf_id, 2) || I2OSP(aead_id, 2) (§5.1).
    fn suite_id(self) -> [u8; 10] {
        let mut s = *b"HPKE\0\0\0\0\0\0";
        for (i, id) in [
            self.kem.id().to_repr(),
            self.kdf.id().to_repr(),
            self.aead.id().to_repr(),
        ]
        .into_iter()
        .enumerate()
        {
            s[4 + 2 * i..6 + 2 * i].copy_from_slice(&id.to_be_bytes());
        }
        s
    }

    /// psk_id_hash = LabeledExtract("", "psk_id_hash", psk_id) (§5.1): in base mode psk_id is
    /// empty, so the value depends on the suite alone and is computed once per process (and
    /// afresh when a sink watches, so the step is shown).
    fn psk_id_hash(self, l: &mut Labeled<'_>) -> Zeroizing<Vec<u8>> {
        // One slot per (KEM, AEAD); one KDF today, so a second one must get its own slots.
        static CACHE: [[std::sync::OnceLock<[u8; 32]>; Aead::COUNT]; Kem::COUNT] =
            [const { [const { std::sync::OnceLock::new() }; Aead::COUNT] }; Kem::COUNT];
        let Kdf::HkdfSha256 = self.kdf;
        if l.sink.enabled() || l.hash.output_len() != 32 {
            return l.extract(HpkeValue::PskIdHash, b"", b"");
        }
        let v = CACHE[self.kem.index()][self.aead.index()].get_or_init(|| {
            let mut v = [0u8; 32];
            v.copy_from_slice(&l.extract(HpkeValue::PskIdHash, b"", b""));
            v
        });
        Zeroizing::new(v.to_vec())
    }

    /// KeySchedule(mode_base, shared_secret, info, "", "") (RFC 9180 §5.1).
    fn key_schedule(
        self,
        shared_secret: &[u8],
        info: &[u8],
        sink: &mut dyn HpkeSink,
    ) -> Result<Context, HpkeError> {
        let suite_id = self.suite_id();
        let hash = self.kdf.hash();
        let mut l = Labeled::new(hash, &suite_id, sink);
        let psk_id_hash = self.psk_id_hash(&mut l);
        let info_hash = l.extract(HpkeValue::InfoHash, b"", info);
        let mut ksc = vec![MODE_BASE];
        ksc.extend_from_slice(&psk_id_hash);
        ksc.extend_from_slice(&info_hash);
        l.report(
            HpkeValue::KeyScheduleContext,
            &[&[MODE_BASE], &psk_id_hash, &info_hash],
            &ksc,
        );
        let secret = l.extract(HpkeValue::Secret, shared_secret, b"");
        let mut base_nonce = [0u8; NONCE_LEN];
        let key = match self.aead.alg() {
            Some(alg) => {
                // `secret` keys two HMACs here: its key schedule once.
                let prepared = hash.hmac_prepared(&secret);
                let key = Some(&prepared);
                let k = l.expand_with(HpkeValue::Key, &secret, key, &ksc, alg.key_len())?;
                let n = l.expand_with(HpkeValue::BaseNonce, &secret, key, &ksc, NONCE_LEN)?;
                base_nonce.copy_from_slice(&n);
                Some(AeadKey::new(alg, &k).map_err(HpkeError::Aead)?)
            }
            None => None,
        };
        // ECH never exports: the exporter secret is derived when first needed, or now when
        // someone watches the schedule (the explainer shows every step).
        let exporter = if l.sink.enabled() {
            Exporter::Derived(l.expand(
                HpkeValue::ExporterSecret,
                &secret,
                &ksc,
                hash.output_len(),
            )?)
        } else {
            Exporter::Pending { secret, ksc }
        };
        Ok(Context {
            suite: self,
            key,
            base_nonce,
            exporter,
            seq: 0,
        })
    }
}

/// A KEM key pair (private key erased on drop, never shown by `Debug`).
#[derive(Clone)]
pub struct KeyPair {
    kem: Kem,
    sk: Zeroizing<Vec<u8>>,
    pk: Vec<u8>,
}

impl KeyPair {
    /// The pair of a serialized private key (RFC 9180 §7.1.2: X25519's 32 bytes; P-256's
    /// 32-byte big-endian scalar in [1, n); ML-KEM-768's 64-byte seed d || z; X-Wing's
    /// 32-byte seed).
    pub fn from_private(kem: Kem, sk: &[u8]) -> Result<KeyPair, HpkeError> {
        if sk.len() != kem.sk_len() {
            return Err(HpkeError::InvalidPrivateKey);
        }
        let sk = Zeroizing::new(sk.to_vec());
        let pk = kem.public(&sk)?;
        Ok(KeyPair { kem, sk, pk })
    }

    /// The KEM.
    pub fn kem(&self) -> Kem {
        self.kem
    }

    /// SerializePublicKey(pk).
    pub fn public_key(&self) -> &[u8] {
        &self.pk
    }

    /// SerializePrivateKey(sk): keep it out of logs.
    pub fn private_key(&self) -> &[u8] {
        &self.sk[..]
    }
}

impl fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyPair({:?}, pk={}, sk=..)", self.kem, to_hex(&self.pk))
    }
}

/// SetupBaseS(pkR, info) (RFC 9180 §5.1.1): the encapsulated key `enc` and the sender's context.
/// The ephemeral key pair is DeriveKeyPair of Nsk bytes drawn from `rng`.
pub fn setup_base_s(
    suite: Suite,
    pk_r: &[u8],
    info: &[u8],
    rng: &mut dyn RandomSource,
    sink: &mut dyn HpkeSink,
) -> Result<(Vec<u8>, SenderContext), HpkeError> {
    if let Some(pq) = suite.kem.pq() {
        // Encap's randomness, one draw (draft-ietf-hpke-pq: the vectors' ikmE).
        let mut random = Zeroizing::new(vec![0u8; pq.encap_random_len()]);
        rng.fill(&mut random);
        let (shared, enc) = pq.encap(pk_r, &random).map_err(HpkeError::Validation)?;
        let suite_id = suite.kem.suite_id();
        report_kem_step(
            sink,
            HpkeValue::SharedSecret,
            &suite_id,
            &[("enc", &enc)],
            &shared[..],
        );
        let ctx = suite.key_schedule(&shared[..], info, sink)?;
        return Ok((enc, SenderContext(ctx)));
    }
    let eph = suite.kem.generate_key_pair(rng, sink)?;
    let enc = eph.pk.clone();
    let shared = suite.kem.shared_secret(&eph.sk, pk_r, &enc, pk_r, sink)?;
    let ctx = suite.key_schedule(&shared, info, sink)?;
    Ok((enc, SenderContext(ctx)))
}

/// SetupBaseR(enc, skR, info) (RFC 9180 §5.1.1): the recipient's context.
pub fn setup_base_r(
    suite: Suite,
    enc: &[u8],
    key: &KeyPair,
    info: &[u8],
    sink: &mut dyn HpkeSink,
) -> Result<ReceiverContext, HpkeError> {
    if key.kem != suite.kem {
        return Err(HpkeError::InvalidPrivateKey);
    }
    if let Some(pq) = suite.kem.pq() {
        let shared = pq.decap(&key.sk, enc).map_err(HpkeError::Validation)?;
        let suite_id = suite.kem.suite_id();
        report_kem_step(
            sink,
            HpkeValue::SharedSecret,
            &suite_id,
            &[("enc", enc)],
            &shared[..],
        );
        let ctx = suite.key_schedule(&shared[..], info, sink)?;
        return Ok(ReceiverContext(ctx));
    }
    let shared = suite.kem.shared_secret(&key.sk, enc, enc, &key.pk, sink)?;
    let ctx = suite.key_schedule(&shared, info, sink)?;
    Ok(ReceiverContext(ctx))
}

/// The recipient's context from a known KEM `shared_secret` (KeySchedule alone, RFC 9180
/// §5.1): what an observer holding a key log's `ECH_SECRET` (RFC 9850 §5) rebuilds without
/// the private key. Same context as [`setup_base_r`] would give for that secret.
pub fn receiver_from_shared_secret(
    suite: Suite,
    shared_secret: &[u8],
    info: &[u8],
    sink: &mut dyn HpkeSink,
) -> Result<ReceiverContext, HpkeError> {
    suite
        .key_schedule(shared_secret, info, sink)
        .map(ReceiverContext)
}

/// What both sides' contexts hold (RFC 9180 §5.1): key, base_nonce, seq, exporter_secret.
struct Context {
    suite: Suite,
    /// `None` for Export-only.
    key: Option<AeadKey>,
    base_nonce: [u8; NONCE_LEN],
    exporter: Exporter,
    /// At most 2^96 - 1 (Nn = 12 bytes).
    seq: u128,
}

/// exporter_secret = LabeledExpand(secret, "exp", key_schedule_context, Nh) (§5.1), or what
/// derives it.
enum Exporter {
    Derived(Zeroizing<Vec<u8>>),
    Pending {
        secret: Zeroizing<Vec<u8>>,
        ksc: Vec<u8>,
    },
}

/// The largest sequence number a 12-byte nonce can take: (1 << 8·Nn) - 1 (RFC 9180 §5.2).
const SEQ_LIMIT: u128 = (1 << (8 * NONCE_LEN)) - 1;

/// ComputeNonce(seq) = base_nonce XOR I2OSP(seq, Nn) (RFC 9180 §5.2).
pub fn compute_nonce(base_nonce: &[u8; NONCE_LEN], seq: u128) -> [u8; NONCE_LEN] {
    let seq = seq.to_be_bytes();
    let mut n = *base_nonce;
    for (b, s) in n.iter_mut().zip(&seq[16 - NONCE_LEN..]) {
        *b ^= s;
    }
    n
}

impl Context {
    fn nonce(&self) -> [u8; NONCE_LEN] {
        compute_nonce(&self.base_nonce, self.seq)
    }

    /// The key and nonce for the next message, refusing the one sequence number §5.2's
    /// IncrementSeq could not step past (so no ciphertext is produced under it).
    fn next(&self) -> Result<(&AeadKey, [u8; NONCE_LEN]), HpkeError> {
        let key = self.key.as_ref().ok_or(HpkeError::ExportOnly)?;
        if self.seq >= SEQ_LIMIT {
            return Err(HpkeError::MessageLimitReached);
        }
        Ok((key, self.nonce()))
    }

    /// Export(exporter_context, L) (RFC 9180 §5.3).
    fn export(
        &self,
        exporter_context: &[u8],
        len: usize,
        sink: &mut dyn HpkeSink,
    ) -> Result<Vec<u8>, HpkeError> {
        let hash = self.suite.kdf.hash();
        if len > 255 * hash.output_len() {
            return Err(HpkeError::ExportTooLong);
        }
        let suite_id = self.suite.suite_id();
        let mut l = Labeled::new(hash, &suite_id, sink);
        let pending;
        let exporter_secret = match &self.exporter {
            Exporter::Derived(s) => s,
            Exporter::Pending { secret, ksc } => {
                pending = l.expand(HpkeValue::ExporterSecret, secret, ksc, hash.output_len())?;
                &pending
            }
        };
        let v = l.expand(
            HpkeValue::ExportedValue,
            exporter_secret,
            exporter_context,
            len,
        )?;
        Ok(v.to_vec())
    }
}

/// The sender's context (ContextS): seals in sequence.
pub struct SenderContext(Context);

/// The recipient's context (ContextR): opens in sequence.
pub struct ReceiverContext(Context);

macro_rules! context_common {
    ($t:ty) => {
        impl $t {
            /// The suite.
            pub fn suite(&self) -> Suite {
                self.0.suite
            }

            /// The sequence number of the next message.
            pub fn sequence(&self) -> u128 {
                self.0.seq
            }

            /// The nonce the next message will use (ComputeNonce(seq), §5.2).
            pub fn next_nonce(&self) -> [u8; NONCE_LEN] {
                self.0.nonce()
            }

            /// Export(exporter_context, L) (§5.3); the step is reported to `sink`, preceded
            /// by exporter_secret's when the context was set up unwatched (it is derived on
            /// export then, and again on each export).
            pub fn export(
                &self,
                exporter_context: &[u8],
                len: usize,
                sink: &mut dyn HpkeSink,
            ) -> Result<Vec<u8>, HpkeError> {
                self.0.export(exporter_context, len, sink)
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "{}({:?}, seq={}, ..)",
                    stringify!($t),
                    self.0.suite,
                    self.0.seq
                )
            }
        }
    };
}

context_common!(SenderContext);
context_common!(ReceiverContext);

impl SenderContext {
    /// ContextS.Seal(aad, pt) (RFC 9180 §5.2): ciphertext || tag, then seq += 1.
    pub fn seal(&mut self, aad: &[u8], pt: &[u8]) -> Result<Vec<u8>, HpkeError> {
        let (key, nonce) = self.0.next()?;
        let mut buf = pt.to_vec();
        key.seal_in_place(&nonce, aad, &mut buf)
            .map_err(HpkeError::Aead)?;
        self.0.seq += 1;
        Ok(buf)
    }
}

impl ReceiverContext {
    /// ContextR.Open(aad, ct) (RFC 9180 §5.2): the plaintext, then seq += 1. A failed open
    /// leaves seq unchanged (OpenError).
    pub fn open(&mut self, aad: &[u8], ct: &[u8]) -> Result<Vec<u8>, HpkeError> {
        let (key, nonce) = self.0.next()?;
        let mut buf = ct.to_vec();
        key.open_in_place(&nonce, aad, &mut buf)
            .map_err(|_| HpkeError::Open)?;
        self.0.seq += 1;
        Ok(buf)
    }
}

/// Why an HPKE operation failed (RFC 9180 §6.3's error classes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HpkeError {
    /// A KEM, KDF or AEAD this crate does not implement.
    Unsupported {
        /// KEM.
        kem: HpkeKemId,
        /// KDF.
        kdf: HpkeKdfId,
        /// AEAD.
        aead: HpkeAeadId,
    },
    /// ValidationError: a public key that is not one (wrong length, off the curve) or an
    /// all-zero X25519 output (§7.1.4).
    Validation(KxError),
    /// A private key of the wrong length, out of range, or for another KEM.
    InvalidPrivateKey,
    /// DeriveKeyPairError: no P-256 candidate in 256 tries (§7.1.3).
    DeriveKeyPair,
    /// OpenError: the ciphertext did not authenticate (§5.2).
    Open,
    /// MessageLimitReachedError: the sequence number is exhausted (§5.2).
    MessageLimitReached,
    /// Export length above 255 × Nh (§5.3, §7.2.1).
    ExportTooLong,
    /// Seal or Open with the Export-only AEAD (§5.3).
    ExportOnly,
    /// The AEAD refused its key or input.
    Aead(AeadError),
}

impl fmt::Display for HpkeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HpkeError::Unsupported { kem, kdf, aead } => {
                write!(f, "unsupported HPKE suite {kem}, {kdf}, {aead}")
            }
            HpkeError::Validation(e) => write!(f, "HPKE public key validation: {e}"),
            HpkeError::InvalidPrivateKey => f.write_str("invalid HPKE private key"),
            HpkeError::DeriveKeyPair => f.write_str("HPKE DeriveKeyPair found no key"),
            HpkeError::Open => f.write_str("HPKE open: authentication failed"),
            HpkeError::MessageLimitReached => f.write_str("HPKE sequence number exhausted"),
            HpkeError::ExportTooLong => f.write_str("HPKE export length too long"),
            HpkeError::ExportOnly => f.write_str("HPKE Export-only AEAD cannot seal or open"),
            HpkeError::Aead(e) => write!(f, "HPKE AEAD: {e}"),
        }
    }
}

impl std::error::Error for HpkeError {}

// ---------------------------------------------------------------------------------------------
// Observation
// ---------------------------------------------------------------------------------------------

/// What kind of step produced a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HpkeOp {
    /// LabeledExtract(salt, label, ikm) = Extract(salt, "HPKE-v1" || suite_id || label || ikm).
    LabeledExtract,
    /// LabeledExpand(prk, label, info, L) =
    /// Expand(prk, I2OSP(L, 2) || "HPKE-v1" || suite_id || label || info, L).
    LabeledExpand,
    /// DH(sk, pk): the x-coordinate (P-256) or u-coordinate (X25519).
    Dh,
    /// A concatenation (kem_context, key_schedule_context).
    Concat,
    /// A post-quantum KEM's own step (draft-ietf-hpke-pq): SHAKE256.LabeledDerive in
    /// DeriveKeyPair, or Encap/Decap, whose output is the shared secret itself.
    Kem,
}

/// Which HPKE value a step produced (RFC 9180's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HpkeValue {
    /// DeriveKeyPair's PRK.
    DkpPrk,
    /// X25519's derived private key.
    Sk,
    /// A P-256 private-key candidate.
    Candidate,
    /// The DH output.
    Dh,
    /// enc || pkRm.
    KemContext,
    /// ExtractAndExpand's PRK.
    EaePrk,
    /// The KEM shared secret.
    SharedSecret,
    /// LabeledExtract("", "psk_id_hash", psk_id).
    PskIdHash,
    /// LabeledExtract("", "info_hash", info).
    InfoHash,
    /// mode || psk_id_hash || info_hash.
    KeyScheduleContext,
    /// The key schedule's secret.
    Secret,
    /// The AEAD key.
    Key,
    /// The AEAD base nonce.
    BaseNonce,
    /// The exporter secret.
    ExporterSecret,
    /// An Export() output.
    ExportedValue,
}

impl HpkeValue {
    /// The name RFC 9180 uses, e.g. `"shared_secret"`.
    pub const fn name(self) -> &'static str {
        match self {
            HpkeValue::DkpPrk => "dkp_prk",
            HpkeValue::Sk => "sk",
            HpkeValue::Candidate => "candidate",
            HpkeValue::Dh => "dh",
            HpkeValue::KemContext => "kem_context",
            HpkeValue::EaePrk => "eae_prk",
            HpkeValue::SharedSecret => "shared_secret",
            HpkeValue::PskIdHash => "psk_id_hash",
            HpkeValue::InfoHash => "info_hash",
            HpkeValue::KeyScheduleContext => "key_schedule_context",
            HpkeValue::Secret => "secret",
            HpkeValue::Key => "key",
            HpkeValue::BaseNonce => "base_nonce",
            HpkeValue::ExporterSecret => "exporter_secret",
            HpkeValue::ExportedValue => "exported_value",
        }
    }

    /// The operation that makes it.
    pub const fn op(self) -> HpkeOp {
        match self {
            HpkeValue::DkpPrk
            | HpkeValue::EaePrk
            | HpkeValue::PskIdHash
            | HpkeValue::InfoHash
            | HpkeValue::Secret => HpkeOp::LabeledExtract,
            HpkeValue::Dh => HpkeOp::Dh,
            HpkeValue::KemContext | HpkeValue::KeyScheduleContext => HpkeOp::Concat,
            HpkeValue::Sk
            | HpkeValue::Candidate
            | HpkeValue::SharedSecret
            | HpkeValue::Key
            | HpkeValue::BaseNonce
            | HpkeValue::ExporterSecret
            | HpkeValue::ExportedValue => HpkeOp::LabeledExpand,
        }
    }

    /// The names of its step's inputs, in the order the step reports them.
    pub const fn inputs(self) -> &'static [&'static str] {
        match self {
            HpkeValue::Dh => &["pkE", "pkR"],
            HpkeValue::KemContext => &["enc", "pkRm"],
            HpkeValue::KeyScheduleContext => &["mode", "psk_id_hash", "info_hash"],
            v => match v.op() {
                HpkeOp::LabeledExtract => &["salt", "ikm"],
                _ => &["prk", "info", "L"],
            },
        }
    }

    /// The label of the LabeledExtract or LabeledExpand that makes it (`"exp"` for the
    /// exporter secret, `"sec"` for an Export output); `""` for DH and concatenations.
    pub const fn label(self) -> &'static str {
        match self {
            HpkeValue::Dh | HpkeValue::KemContext | HpkeValue::KeyScheduleContext => "",
            HpkeValue::ExporterSecret => "exp",
            HpkeValue::ExportedValue => "sec",
            other => other.name(),
        }
    }
}

impl fmt::Display for HpkeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One HPKE step, with its values. `Debug` shows names and lengths only (as
/// [`crate::keyschedule::Derivation`] does): the values include private keys and secrets.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct HpkeStep {
    /// Extract, Expand, DH or concatenation.
    pub op: HpkeOp,
    /// What was produced.
    pub name: HpkeValue,
    /// The label (`"eae_prk"`, `"shared_secret"`, ...); `""` for DH and concatenations.
    pub label: &'static str,
    /// The suite_id in the labeled input: `"KEM" || kem_id` or `"HPKE" || kem || kdf || aead`
    /// (hex when serialized).
    #[serde(serialize_with = "ser_hex")]
    pub suite_id: Vec<u8>,
    /// Named inputs in order: `salt`, `ikm` (Extract); `prk`, `info`, `L` (Expand); the public
    /// keys (DH); the parts (concatenation). Serialized as a map of hex strings.
    #[serde(serialize_with = "ser_inputs")]
    pub inputs: Vec<(&'static str, Vec<u8>)>,
    /// The value produced (hex when serialized).
    #[serde(serialize_with = "ser_hex")]
    pub output: Vec<u8>,
}

fn ser_hex<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&to_hex(v))
}

fn ser_inputs<S: serde::Serializer>(
    v: &[(&'static str, Vec<u8>)],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for (k, b) in v {
        m.serialize_entry(k, &to_hex(b))?;
    }
    m.end()
}

impl fmt::Debug for HpkeStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {} {:?}", self.op, self.name, self.label)?;
        for (k, v) in &self.inputs {
            write!(f, " {k}=<{} bytes>", v.len())?;
        }
        write!(f, " => <{} bytes>", self.output.len())
    }
}

/// Receives [`HpkeStep`]s.
pub trait HpkeSink {
    /// Whether steps should be built at all (`false`: no copies of secrets are made).
    fn enabled(&self) -> bool;
    /// Takes one step (called only when `enabled()`).
    fn record(&mut self, step: HpkeStep);
}

/// Collects every step.
impl HpkeSink for Vec<HpkeStep> {
    fn enabled(&self) -> bool {
        true
    }
    fn record(&mut self, step: HpkeStep) {
        self.push(step);
    }
}

/// Observes nothing.
impl HpkeSink for NoSink {
    fn enabled(&self) -> bool {
        false
    }
    fn record(&mut self, _step: HpkeStep) {}
}

/// A closure as a sink: `&mut FnSink(|s| ...)`.
pub struct FnSink<F: FnMut(HpkeStep)>(pub F);

impl<F: FnMut(HpkeStep)> HpkeSink for FnSink<F> {
    fn enabled(&self) -> bool {
        true
    }
    fn record(&mut self, step: HpkeStep) {
        (self.0)(step)
    }
}

/// Reports a post-quantum KEM's step ([`HpkeOp::Kem`]): its label is the value's name.
fn report_kem_step(
    sink: &mut dyn HpkeSink,
    name: HpkeValue,
    suite_id: &[u8],
    inputs: &[(&'static str, &[u8])],
    output: &[u8],
) {
    if sink.enabled() {
        sink.record(HpkeStep {
            op: HpkeOp::Kem,
            name,
            label: if name == HpkeValue::Sk {
                "DeriveKeyPair"
            } else {
                ""
            },
            suite_id: suite_id.to_vec(),
            inputs: inputs.iter().map(|(k, v)| (*k, v.to_vec())).collect(),
            output: output.to_vec(),
        });
    }
}

/// LabeledExtract and LabeledExpand under one suite_id (RFC 9180 §4), reporting each step.
struct Labeled<'a> {
    hash: HashAlg,
    suite_id: &'a [u8],
    sink: &'a mut dyn HpkeSink,
}

impl<'a> Labeled<'a> {
    fn new(hash: HashAlg, suite_id: &'a [u8], sink: &'a mut dyn HpkeSink) -> Self {
        Labeled {
            hash,
            suite_id,
            sink,
        }
    }

    /// Reports one step; its operation, label and input names are `name`'s own.
    fn report(&mut self, name: HpkeValue, inputs: &[&[u8]], output: &[u8]) {
        debug_assert_eq!(inputs.len(), name.inputs().len(), "{name}");
        if self.sink.enabled() {
            self.sink.record(HpkeStep {
                op: name.op(),
                name,
                label: name.label(),
                suite_id: self.suite_id.to_vec(),
                inputs: name
                    .inputs()
                    .iter()
                    .zip(inputs)
                    .map(|(k, v)| (*k, v.to_vec()))
                    .collect(),
                output: output.to_vec(),
            });
        }
    }

    /// Extract(salt, "HPKE-v1" || suite_id || label || ikm): HMAC keyed by the salt (an empty
    /// salt is Nh zeros, RFC 5869 §2.2).
    fn extract(&mut self, name: HpkeValue, salt: &[u8], ikm: &[u8]) -> Zeroizing<Vec<u8>> {
        let label = name.label().as_bytes();
        let out = self
            .hash
            .hmac_parts(salt, &[VERSION_LABEL, self.suite_id, label, ikm]);
        let out = Zeroizing::new(out.to_vec());
        debug_assert_eq!(name.op(), HpkeOp::LabeledExtract);
        self.report(name, &[salt, ikm], &out);
        out
    }

    /// Expand(prk, I2OSP(L, 2) || "HPKE-v1" || suite_id || label || info, L).
    fn expand(
        &mut self,
        name: HpkeValue,
        prk: &[u8],
        info: &[u8],
        len: usize,
    ) -> Result<Zeroizing<Vec<u8>>, HpkeError> {
        self.expand_with(name, prk, None, info, len)
    }

    /// [`expand`](Self::expand), signing with `prepared` (`prk`'s key schedule done once) when
    /// given.
    fn expand_with(
        &mut self,
        name: HpkeValue,
        prk: &[u8],
        prepared: Option<&PreparedHmac>,
        info: &[u8],
        len: usize,
    ) -> Result<Zeroizing<Vec<u8>>, HpkeError> {
        let label = name.label().as_bytes();
        let l = u16::try_from(len).map_err(|_| HpkeError::ExportTooLong)?;
        let l = l.to_be_bytes();
        let mut out = Zeroizing::new(vec![0u8; len]);
        let parts: [&[u8]; 5] = [&l, VERSION_LABEL, self.suite_id, label, info];
        match prepared {
            Some(key) if len <= 255 * self.hash.output_len() => {
                hkdf::expand_with(self.hash, |p| key.sign(p), &parts, &mut out)
            }
            _ => hkdf::expand(self.hash, prk, &parts, &mut out)
                .map_err(|_| HpkeError::ExportTooLong)?,
        }
        debug_assert_eq!(name.op(), HpkeOp::LabeledExpand);
        self.report(name, &[prk, info, &l], &out);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::random::SeededRandom;

    fn suite(aead: Aead) -> Suite {
        Suite {
            kem: Kem::X25519HkdfSha256,
            kdf: Kdf::HkdfSha256,
            aead,
        }
    }

    fn pair() -> (SenderContext, ReceiverContext) {
        let s = suite(Aead::Aes128Gcm);
        let r = Kem::X25519HkdfSha256
            .derive_key_pair(&[7; 32], &mut NoSink)
            .unwrap();
        let mut rng = SeededRandom::from_seed(1);
        let (enc, tx) = setup_base_s(s, r.public_key(), b"info", &mut rng, &mut NoSink).unwrap();
        let rx = setup_base_r(s, &enc, &r, b"info", &mut NoSink).unwrap();
        (tx, rx)
    }

    #[test]
    fn sequence_limit_is_an_error_not_a_nonce_reuse() {
        let (mut tx, mut rx) = pair();
        // Two steps before the end of the 96-bit space: the last usable number is 2^96 - 2.
        tx.0.seq = SEQ_LIMIT - 1;
        rx.0.seq = SEQ_LIMIT - 1;
        let ct = tx.seal(b"", b"last").unwrap();
        assert_eq!(rx.open(b"", &ct).unwrap(), b"last");
        assert_eq!(tx.seal(b"", b"x"), Err(HpkeError::MessageLimitReached));
        assert_eq!(rx.open(b"", &ct), Err(HpkeError::MessageLimitReached));
        assert_eq!(tx.sequence(), SEQ_LIMIT);
        // ComputeNonce uses all 12 bytes: seq 2^96 - 2 flips every bit but the last.
        let mut t2 = pair().0;
        let base = t2.next_nonce();
        t2.0.seq = SEQ_LIMIT - 1;
        let n = t2.next_nonce();
        for i in 0..11 {
            assert_eq!(n[i], !base[i]);
        }
        assert_eq!(n[11], base[11] ^ 0xfe);
    }

    #[test]
    fn failed_open_keeps_the_sequence() {
        let (mut tx, mut rx) = pair();
        let mut ct = tx.seal(b"aad", b"hello").unwrap();
        ct[0] ^= 1;
        assert_eq!(rx.open(b"aad", &ct), Err(HpkeError::Open));
        assert_eq!(rx.sequence(), 0);
        ct[0] ^= 1;
        assert_eq!(rx.open(b"aad", &ct).unwrap(), b"hello");
        assert_eq!(rx.open(b"aad", &ct), Err(HpkeError::Open), "seq 1 now");
    }

    #[test]
    fn bad_public_keys_are_validation_errors() {
        let s = suite(Aead::Aes128Gcm);
        let mut rng = SeededRandom::from_seed(2);
        // X25519: the all-zero point gives the all-zero DH output (§7.1.4).
        assert!(matches!(
            setup_base_s(s, &[0; 32], b"", &mut rng, &mut NoSink),
            Err(HpkeError::Validation(KxError::ZeroSharedSecret))
        ));
        assert!(matches!(
            setup_base_s(s, &[9; 31], b"", &mut rng, &mut NoSink),
            Err(HpkeError::Validation(_))
        ));
        // P-256: a point off the curve.
        let p = Suite {
            kem: Kem::P256HkdfSha256,
            ..s
        };
        let mut off = [0u8; 65];
        off[0] = 4;
        off[64] = 1;
        assert!(matches!(
            setup_base_s(p, &off, b"", &mut rng, &mut NoSink),
            Err(HpkeError::Validation(_))
        ));
        // A key pair of the other KEM.
        let k = Kem::P256HkdfSha256
            .derive_key_pair(&[1; 32], &mut NoSink)
            .unwrap();
        assert!(matches!(
            setup_base_r(s, &[9; 32], &k, b"", &mut NoSink),
            Err(HpkeError::InvalidPrivateKey)
        ));
    }

    #[test]
    fn export_only_cannot_seal_and_export_is_bounded() {
        let s = suite(Aead::ExportOnly);
        let r = Kem::X25519HkdfSha256
            .derive_key_pair(&[3; 32], &mut NoSink)
            .unwrap();
        let mut rng = SeededRandom::from_seed(3);
        let (enc, mut tx) = setup_base_s(s, r.public_key(), b"", &mut rng, &mut NoSink).unwrap();
        assert_eq!(tx.seal(b"", b"x"), Err(HpkeError::ExportOnly));
        let rx = setup_base_r(s, &enc, &r, b"", &mut NoSink).unwrap();
        assert_eq!(
            tx.export(b"c", 255 * 32, &mut NoSink).unwrap(),
            rx.export(b"c", 255 * 32, &mut NoSink).unwrap()
        );
        assert_eq!(
            tx.export(b"c", 255 * 32 + 1, &mut NoSink),
            Err(HpkeError::ExportTooLong)
        );
    }

    /// A key log's ECH_SECRET is all an observer needs: the context rebuilt from the shared
    /// secret opens what the sender sealed, in sequence; another secret does not.
    #[test]
    fn the_shared_secret_alone_rebuilds_the_receiver_context() {
        let s = suite(Aead::Aes128Gcm);
        let r = Kem::X25519HkdfSha256
            .derive_key_pair(&[7; 32], &mut NoSink)
            .unwrap();
        let mut rng = SeededRandom::from_seed(4);
        let mut steps = Vec::new();
        let (_, mut tx) = setup_base_s(s, r.public_key(), b"info", &mut rng, &mut steps).unwrap();
        let shared = steps
            .iter()
            .find(|x| x.name == HpkeValue::SharedSecret)
            .unwrap()
            .output
            .clone();
        let ct0 = tx.seal(b"a", b"first").unwrap();
        let ct1 = tx.seal(b"a", b"second").unwrap();
        let mut rx = receiver_from_shared_secret(s, &shared, b"info", &mut NoSink).unwrap();
        assert_eq!(rx.open(b"a", &ct0).unwrap(), b"first");
        assert_eq!(rx.open(b"a", &ct1).unwrap(), b"second");
        let mut wrong = receiver_from_shared_secret(s, &[0; 32], b"info", &mut NoSink).unwrap();
        assert_eq!(wrong.open(b"a", &ct0), Err(HpkeError::Open));
        let mut other_info =
            receiver_from_shared_secret(s, &shared, b"other", &mut NoSink).unwrap();
        assert_eq!(other_info.open(b"a", &ct0), Err(HpkeError::Open));
    }

    #[test]
    fn steps_hide_their_values_in_debug() {
        let mut steps = Vec::new();
        let k = Kem::X25519HkdfSha256
            .derive_key_pair(&[0x42; 32], &mut steps)
            .unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[1].output, k.private_key());
        let dbg = format!("{steps:?} {k:?}");
        assert!(!dbg.contains(&to_hex(k.private_key())), "{dbg}");
        assert!(!dbg.contains("4242"), "{dbg}");
    }

    /// The ML-KEMs: round trips to a derived key (Nenc, Npk, Nsk as the draft lists them);
    /// an encapsulation key with a coefficient not reduced mod q fails FIPS 203's modulus
    /// check; a wrong-length enc or public key is refused; a flipped ciphertext byte decaps to
    /// the implicit-rejection secret, so the record does not open.
    #[test]
    fn ml_kem_round_trips_and_checks_keys() {
        for (kem, id, npk, nenc) in [
            (Kem::MlKem768, 0x0041, 1184, 1088),
            (Kem::MlKem1024, 0x0042, 1568, 1568),
        ] {
            assert_eq!(Kem::from_id(HpkeKemId::from(id)), Some(kem));
            assert_eq!(kem.id().to_repr(), id);
            assert_eq!((kem.pk_len(), kem.enc_len(), kem.sk_len()), (npk, nenc, 64));
            let s = Suite {
                kem,
                kdf: Kdf::HkdfSha256,
                aead: Aead::Aes256Gcm,
            };
            let r = kem.derive_key_pair(&[3; 64], &mut NoSink).unwrap();
            assert_eq!(r.public_key().len(), npk);
            let mut rng = SeededRandom::from_seed(5);
            let (enc, mut tx) =
                setup_base_s(s, r.public_key(), b"info", &mut rng, &mut NoSink).unwrap();
            assert_eq!(enc.len(), nenc);
            let mut rx = setup_base_r(s, &enc, &r, b"info", &mut NoSink).unwrap();
            let ct = tx.seal(b"a", b"hi").unwrap();
            assert_eq!(rx.open(b"a", &ct).unwrap(), b"hi", "{kem:?}");
            // The first coefficient set to 4095 >= q = 3329.
            let mut bad = r.public_key().to_vec();
            bad[0] = 0xff;
            bad[1] |= 0x0f;
            assert!(
                matches!(
                    setup_base_s(s, &bad, b"", &mut rng, &mut NoSink),
                    Err(HpkeError::Validation(KxError::InvalidPeerShare(_)))
                ),
                "{kem:?}"
            );
            assert!(matches!(
                setup_base_s(s, &r.public_key()[1..], b"", &mut rng, &mut NoSink),
                Err(HpkeError::Validation(_))
            ));
            assert!(matches!(
                setup_base_r(s, &enc[1..], &r, b"info", &mut NoSink),
                Err(HpkeError::Validation(_))
            ));
            let mut flipped = enc.clone();
            flipped[7] ^= 0x20;
            let mut rx = setup_base_r(s, &flipped, &r, b"info", &mut NoSink).unwrap();
            assert_eq!(rx.open(b"a", &ct), Err(HpkeError::Open), "{kem:?}");
        }
    }
}
