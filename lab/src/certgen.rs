//! Certificates made with rcgen around our own signing keys: self-signed ones for the in-memory
//! demo (`crate::demo`), the CLI and the tests, and whole chains for experiments ([`chain`],
//! `tls13lab cert`: root → intermediates → leaf, an algorithm per level, ML-DSA included,
//! embedded SCTs, AIA and CRL URLs). The sans-IO core never calls this: validation
//! (`verify.rs`) stands alone.

use core::fmt;
use std::time::Duration;

use rand_core::SeedableRng;
use sha2::Digest;
use zeroize::Zeroizing;

use tls13lab::crypto::cert::pem_encode;
use tls13lab::crypto::random::{RandomSource, SeededRandom};
use tls13lab::crypto::sign::SigningKey;

/// Failure to build a certificate locally.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertGenError(pub String);

impl fmt::Display for CertGenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "certificate generation failed: {}", self.0)
    }
}

impl std::error::Error for CertGenError {}

/// A self-signed end-entity certificate for `names` (DNS names or IP addresses; the first is
/// also the CN) with validity `[not_before, not_after]` (unix seconds), signed by our P-256
/// `key` through rcgen's remote-key hook. ECDSA here is RFC 6979 and rcgen derives the serial
/// from the public key, so the same key and inputs give byte-identical DER (seeded demos).
/// Returns the certificate DER.
pub fn self_signed_p256(
    names: &[&str],
    key: &SigningKey,
    not_before_unix: u64,
    not_after_unix: u64,
) -> Result<Vec<u8>, CertGenError> {
    if !matches!(key, SigningKey::EcdsaP256(_)) {
        return Err(CertGenError(format!("{key:?} is not a P-256 key")));
    }
    self_signed_ecdsa(names, key, not_before_unix, not_after_unix)
}

/// Like [`self_signed_p256`] for a P-256 or P-384 `key` (ecdsa-with-SHA256 or -SHA384).
pub fn self_signed_ecdsa(
    names: &[&str],
    key: &SigningKey,
    not_before_unix: u64,
    not_after_unix: u64,
) -> Result<Vec<u8>, CertGenError> {
    if !matches!(key, SigningKey::EcdsaP256(_) | SigningKey::EcdsaP384(_)) {
        return Err(CertGenError(format!("{key:?} is not an ECDSA key")));
    }
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .map_err(|e| CertGenError(e.to_string()))?;
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(
        rcgen::DnType::CommonName,
        names.first().copied().unwrap_or("tls13lab"),
    );
    params.distinguished_name = dn;
    set_validity(&mut params, not_before_unix, not_after_unix)?;
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let kp = rcgen_key(key)?;
    let cert = params
        .self_signed(&kp)
        .map_err(|e| CertGenError(e.to_string()))?;
    Ok(cert.der().to_vec())
}

/// rcgen wants `time::OffsetDateTime`; reach it from the epoch so we need no `time` dependency.
fn set_validity(
    params: &mut rcgen::CertificateParams,
    not_before: u64,
    not_after: u64,
) -> Result<(), CertGenError> {
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    let range = |secs: u64| CertGenError(format!("time {secs} out of range"));
    params.not_before = epoch
        .checked_add(
            Duration::from_secs(not_before)
                .try_into()
                .map_err(|_| range(not_before))?,
        )
        .ok_or_else(|| range(not_before))?;
    params.not_after = epoch
        .checked_add(
            Duration::from_secs(not_after)
                .try_into()
                .map_err(|_| range(not_after))?,
        )
        .ok_or_else(|| range(not_after))?;
    Ok(())
}

/// Wraps our key for rcgen; rcgen only serializes, the signature is ours.
fn rcgen_key(key: &SigningKey) -> Result<RcgenKey, CertGenError> {
    // `if let`, not a `match`: a key type this file does not generate is an error here, not a
    // compile error in every branch that adds one.
    let level = if let SigningKey::EcdsaP256(k) = key {
        LevelKey::P256(k.clone())
    } else if let SigningKey::EcdsaP384(k) = key {
        LevelKey::P384(k.clone())
    } else if let SigningKey::Ed25519(k) = key {
        LevelKey::Ed25519(k.clone())
    } else {
        // RSA keys sign PKCS#1 v1.5 certificates only in `chain`; rcgen has P-521 only on
        // aws-lc-rs' own keys, so tests take P-521 certificates from OpenSSL.
        return Err(CertGenError(format!(
            "{key:?}: no self-signed certificate for it"
        )));
    };
    Ok(RcgenKey::new(level, SeededRandom::from_seed(0)))
}

// ------------------------------------------------------------------------------ chains

/// The key algorithm of one level of a generated chain. A certificate is signed with its
/// issuer's algorithm: ECDSA with the curve's hash, RSA PKCS#1 v1.5 with SHA-256 (as CAs sign;
/// TLS 1.3 forbids it only in CertificateVerify, RFC 8446 §4.2.3), pure ML-DSA with an empty
/// context (RFC 9881 §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(into = "&'static str")]
pub enum KeyAlg {
    /// ECDSA on secp256r1.
    EcdsaP256,
    /// ECDSA on secp384r1.
    EcdsaP384,
    /// Ed25519.
    Ed25519,
    /// RSA with a 2048-bit modulus.
    Rsa2048,
    /// RSA with a 3072-bit modulus.
    Rsa3072,
    /// RSA with a 4096-bit modulus.
    Rsa4096,
    /// ML-DSA-44 (FIPS 204).
    MlDsa44,
    /// ML-DSA-65.
    MlDsa65,
    /// ML-DSA-87.
    MlDsa87,
}

impl From<KeyAlg> for &'static str {
    fn from(a: KeyAlg) -> Self {
        a.name()
    }
}

impl fmt::Display for KeyAlg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl KeyAlg {
    /// Every algorithm, in the order `--help` lists them.
    pub const ALL: [KeyAlg; 9] = [
        KeyAlg::EcdsaP256,
        KeyAlg::EcdsaP384,
        KeyAlg::Ed25519,
        KeyAlg::Rsa2048,
        KeyAlg::Rsa3072,
        KeyAlg::Rsa4096,
        KeyAlg::MlDsa44,
        KeyAlg::MlDsa65,
        KeyAlg::MlDsa87,
    ];

    /// The name `tls13lab cert --chain` takes.
    pub fn name(self) -> &'static str {
        match self {
            KeyAlg::EcdsaP256 => "ecdsa-p256",
            KeyAlg::EcdsaP384 => "ecdsa-p384",
            KeyAlg::Ed25519 => "ed25519",
            KeyAlg::Rsa2048 => "rsa-2048",
            KeyAlg::Rsa3072 => "rsa-3072",
            KeyAlg::Rsa4096 => "rsa-4096",
            KeyAlg::MlDsa44 => "mldsa44",
            KeyAlg::MlDsa65 => "mldsa65",
            KeyAlg::MlDsa87 => "mldsa87",
        }
    }

    /// Reads a name: ours, or the same without separators in any case (`P256`, `ML-DSA-65`,
    /// `rsa2048`).
    pub fn from_name(s: &str) -> Option<KeyAlg> {
        let squash = |n: &str| {
            n.chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase()
        };
        let want = squash(s);
        let want = want.strip_prefix("ecdsa").unwrap_or(&want);
        KeyAlg::ALL.into_iter().find(|a| {
            let n = squash(a.name());
            n == want || n.strip_prefix("ecdsa") == Some(want)
        })
    }

    /// A comma-separated list, root first (`mldsa87,mldsa65,mldsa44`).
    pub fn parse_list(s: &str) -> Result<Vec<KeyAlg>, CertGenError> {
        let v = s
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(|x| {
                KeyAlg::from_name(x).ok_or_else(|| {
                    let names: Vec<_> = KeyAlg::ALL.iter().map(|a| a.name()).collect();
                    CertGenError(format!(
                        "unknown algorithm '{x}' (one of {})",
                        names.join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if v.is_empty() {
            return Err(CertGenError("empty chain".into()));
        }
        Ok(v)
    }

    /// Whether this is ML-DSA, which only a branch with ML-DSA CertificateVerify can serve.
    pub fn is_mldsa(self) -> bool {
        matches!(self, KeyAlg::MlDsa44 | KeyAlg::MlDsa65 | KeyAlg::MlDsa87)
    }

    /// The two bytes of SignatureAndHashAlgorithm an SCT carries (RFC 6962 §3.2 uses TLS 1.2's
    /// DigitallySigned, RFC 5246 §4.7): TLS 1.3's SignatureScheme code points, which keep that
    /// split (`ecdsa_secp256r1_sha256` 0x0403, `rsa_pkcs1_sha256` 0x0401, `ed25519` 0x0807,
    /// draft-ietf-tls-mldsa's `mldsa44` 0x0904 ...).
    fn sct_signature_algorithm(self) -> [u8; 2] {
        match self {
            KeyAlg::EcdsaP256 => [4, 3],
            KeyAlg::EcdsaP384 => [5, 3],
            KeyAlg::Ed25519 => [8, 7],
            KeyAlg::Rsa2048 | KeyAlg::Rsa3072 | KeyAlg::Rsa4096 => [4, 1],
            KeyAlg::MlDsa44 => [9, 4],
            KeyAlg::MlDsa65 => [9, 5],
            KeyAlg::MlDsa87 => [9, 6],
        }
    }
}

/// What [`chain`] makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainSpec {
    /// One algorithm per level, root first; one level is a self-signed leaf.
    pub levels: Vec<KeyAlg>,
    /// The leaf's subjectAltNames (DNS names or IP addresses); the first is its CN.
    pub sans: Vec<String>,
    /// Embedded SCTs in the leaf (RFC 6962 §3.3), each from its own log.
    pub scts: usize,
    /// The logs' key algorithm.
    pub sct_alg: KeyAlg,
    /// authorityInfoAccess caIssuers URL (RFC 5280 §4.2.2.1) in every certificate but the root.
    pub aia: Option<String>,
    /// cRLDistributionPoints URL (RFC 5280 §4.2.1.13) in every certificate but the root.
    pub crl: Option<String>,
    /// Validity, unix seconds. Fixed, not "now", so a seed gives the same bytes on any day.
    pub not_before: u64,
    /// End of validity, unix seconds.
    pub not_after: u64,
}

impl ChainSpec {
    /// `levels` for `localhost` and `127.0.0.1`, no SCTs or URLs, valid 2025-01-01 for ten years.
    pub fn new(levels: Vec<KeyAlg>) -> Self {
        ChainSpec {
            levels,
            sans: vec!["localhost".into(), "127.0.0.1".into()],
            scts: 0,
            sct_alg: KeyAlg::EcdsaP256,
            aia: None,
            crl: None,
            not_before: 1_735_689_600,
            not_after: 1_735_689_600 + 3650 * 86_400,
        }
    }
}

/// One generated certificate and its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedLevel {
    /// Its algorithm.
    pub alg: KeyAlg,
    /// The certificate.
    pub cert_der: Vec<u8>,
    /// The private key, PKCS#8 (ML-DSA: the RFC 9881 seed form).
    pub key_pkcs8_der: Vec<u8>,
}

impl GeneratedLevel {
    /// The certificate as PEM.
    pub fn cert_pem(&self) -> String {
        pem_encode("CERTIFICATE", &self.cert_der)
    }

    /// The key as PEM ("PRIVATE KEY").
    pub fn key_pem(&self) -> String {
        pem_encode("PRIVATE KEY", &self.key_pkcs8_der)
    }
}

/// A generated chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedChain {
    /// Root first, leaf last.
    pub levels: Vec<GeneratedLevel>,
    /// What a server sends: the leaf, then the intermediates toward the root (not the root,
    /// unless the leaf is its own root).
    pub certs_der: Vec<Vec<u8>>,
    /// The leaf's private key, PKCS#8.
    pub key_pkcs8_der: Vec<u8>,
    /// The trust anchor.
    pub root_der: Vec<u8>,
}

impl GeneratedChain {
    /// The leaf.
    pub fn leaf(&self) -> &GeneratedLevel {
        // `chain` never returns an empty chain.
        &self.levels[self.levels.len() - 1]
    }

    /// `certs_der` as PEM, leaf first.
    pub fn chain_pem(&self) -> String {
        self.certs_der
            .iter()
            .map(|c| pem_encode("CERTIFICATE", c))
            .collect()
    }

    /// The intermediates as PEM, the leaf's issuer first (`openssl verify -untrusted`).
    pub fn intermediates_pem(&self) -> String {
        let n = self.levels.len();
        self.levels[1.min(n)..n.saturating_sub(1)]
            .iter()
            .rev()
            .map(GeneratedLevel::cert_pem)
            .collect()
    }

    /// The root as PEM.
    pub fn root_pem(&self) -> String {
        pem_encode("CERTIFICATE", &self.root_der)
    }
}

/// Generates `spec`'s chain from `seed`: every key, every signature's randomness (ML-DSA's rnd,
/// RSA blinding), the SCT logs' keys and timestamps are drawn from one [`SeededRandom`], and
/// ECDSA (RFC 6979), Ed25519 and RSA PKCS#1 v1.5 sign deterministically, so the same spec and
/// seed give byte-identical certificates and keys.
pub fn chain(spec: &ChainSpec, seed: u64) -> Result<GeneratedChain, CertGenError> {
    if spec.levels.is_empty() {
        return Err(CertGenError("empty chain".into()));
    }
    if spec.sans.is_empty() {
        return Err(CertGenError("the leaf needs a subjectAltName".into()));
    }
    if spec.scts > 64 {
        return Err(CertGenError("at most 64 SCTs".into()));
    }
    let mut rng = SeededRandom::from_seed(seed);
    let mut keys = Vec::new();
    for alg in &spec.levels {
        let key = LevelKey::generate(*alg, &mut rng)?;
        let mut stream = [0u8; 32];
        rng.fill(&mut stream);
        keys.push(RcgenKey::new(key, SeededRandom::from_seed_bytes(stream)));
    }
    let n = keys.len();
    let mut params = Vec::new();
    for i in 0..n {
        params.push(level_params(spec, i, n)?);
    }
    let mut levels: Vec<GeneratedLevel> = Vec::new();
    for i in 0..n {
        let issuer_i = i.saturating_sub(1);
        let issuer = rcgen::Issuer::from_params(&params[issuer_i], &keys[issuer_i]);
        let mut p = params[i].clone();
        if i == n - 1 && spec.scts > 0 {
            // RFC 6962 §3.2: a log signs the precertificate's TBSCertificate, which is the
            // final one without the SCT list; rcgen writes custom extensions last, so the
            // final TBS is that one with the list appended.
            let pre = p
                .signed_by(&keys[i], &issuer)
                .map_err(|e| CertGenError(e.to_string()))?;
            let tbs_range = tls13lab::crypto::cert::tbs_range(pre.der())
                .map_err(|e| CertGenError(e.to_string()))?;
            let tbs = &pre.der()[tbs_range];
            let issuer_spki = rcgen::PublicKeyData::subject_public_key_info(&keys[issuer_i]);
            let list = sct_list(spec, &mut rng, tbs, &issuer_spki)?;
            p.custom_extensions
                .push(rcgen::CustomExtension::from_oid_content(
                    SCT_LIST_ARCS,
                    der_wrap(0x04, &list),
                ));
        }
        let cert = p
            .signed_by(&keys[i], &issuer)
            .map_err(|e| CertGenError(e.to_string()))?;
        levels.push(GeneratedLevel {
            alg: spec.levels[i],
            cert_der: cert.der().to_vec(),
            key_pkcs8_der: keys[i].key.pkcs8_der()?,
        });
    }
    let root_der = levels[0].cert_der.clone();
    let mut certs_der: Vec<Vec<u8>> = levels
        .iter()
        .skip(1)
        .rev()
        .map(|l| l.cert_der.clone())
        .collect();
    if certs_der.is_empty() {
        certs_der.push(root_der.clone());
    }
    Ok(GeneratedChain {
        key_pkcs8_der: levels[n - 1].key_pkcs8_der.clone(),
        certs_der,
        root_der,
        levels,
    })
}

/// 1.3.6.1.4.1.11129.2.4.2, the embedded SCT list (RFC 6962 §3.3).
const SCT_LIST_ARCS: &[u64] = &[1, 3, 6, 1, 4, 1, 11129, 2, 4, 2];
/// id-pe-authorityInfoAccess, 1.3.6.1.5.5.7.1.1 (RFC 5280 §4.2.2.1).
const AIA_ARCS: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 1, 1];

/// The parameters of level `i` of `n` (0 the root).
fn level_params(
    spec: &ChainSpec,
    i: usize,
    n: usize,
) -> Result<rcgen::CertificateParams, CertGenError> {
    use rcgen::{BasicConstraints, DnType, IsCa, KeyUsagePurpose as Ku};
    let leaf = i == n - 1;
    let mut p = if leaf {
        rcgen::CertificateParams::new(spec.sans.clone()).map_err(|e| CertGenError(e.to_string()))?
    } else {
        rcgen::CertificateParams::default()
    };
    let alg = spec.levels[i];
    let cn = if leaf {
        spec.sans[0].clone()
    } else if i == 0 {
        format!("tls13lab root {alg}")
    } else {
        format!("tls13lab intermediate {i} {alg}")
    };
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name
        .push(DnType::OrganizationName, "tls13lab");
    p.distinguished_name.push(DnType::CommonName, cn);
    set_validity(&mut p, spec.not_before, spec.not_after)?;
    if leaf {
        if n > 1 {
            p.is_ca = IsCa::ExplicitNoCa;
        }
        p.key_usages = vec![Ku::DigitalSignature];
        p.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
    } else {
        // Each CA may have as many CAs below it as the chain has (RFC 5280 §4.2.1.9).
        let below = u8::try_from(n - 2 - i).map_err(|_| CertGenError("chain too long".into()))?;
        p.is_ca = IsCa::Ca(if i == 0 {
            BasicConstraints::Unconstrained
        } else {
            BasicConstraints::Constrained(below)
        });
        p.key_usages = vec![Ku::DigitalSignature, Ku::KeyCertSign, Ku::CrlSign];
    }
    if i > 0 {
        p.use_authority_key_identifier_extension = true;
        if let Some(url) = &spec.crl {
            p.crl_distribution_points = vec![rcgen::CrlDistributionPoint {
                uris: vec![url.clone()],
            }];
        }
        if let Some(url) = &spec.aia {
            // AuthorityInfoAccessSyntax ::= SEQUENCE OF AccessDescription { id-ad-caIssuers
            // (1.3.6.1.5.5.7.48.2), GeneralName uniformResourceIdentifier [6] IA5String }.
            let caissuers = [0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x02];
            let desc = der_wrap(
                0x30,
                &[&caissuers[..], &der_wrap(0x86, url.as_bytes())].concat(),
            );
            p.custom_extensions
                .push(rcgen::CustomExtension::from_oid_content(
                    AIA_ARCS,
                    der_wrap(0x30, &desc),
                ));
        }
    }
    Ok(p)
}

/// The TLS-encoded SignedCertificateTimestampList (RFC 6962 §3.3) of `spec.scts` SCTs over
/// the precertificate TBS `tbs` whose issuer's SubjectPublicKeyInfo is `issuer_spki`.
fn sct_list(
    spec: &ChainSpec,
    rng: &mut SeededRandom,
    tbs: &[u8],
    issuer_spki: &[u8],
) -> Result<Vec<u8>, CertGenError> {
    let tbs_len = u32::try_from(tbs.len())
        .ok()
        .filter(|l| *l < 1 << 24)
        .ok_or_else(|| CertGenError("TBSCertificate over 2^24 bytes".into()))?;
    let issuer_key_hash = sha2::Sha256::digest(issuer_spki);
    let mut list = Vec::new();
    for _ in 0..spec.scts {
        let log = LevelKey::generate(spec.sct_alg, rng)?;
        let log_spki = rcgen::PublicKeyData::subject_public_key_info(&RcgenKey::new(
            log.clone(),
            SeededRandom::from_seed(0),
        ));
        // LogID: SHA-256 of the log's public key (§3.2).
        let log_id = sha2::Sha256::digest(&log_spki);
        // Within the first hour of validity, in milliseconds (§3.2: timestamp is ms since
        // the epoch).
        let mut off = [0u8; 4];
        rng.fill(&mut off);
        let timestamp = spec.not_before * 1000 + u64::from(u32::from_be_bytes(off) % 3_600_000);
        // digitally-signed struct { sct_version v1(0), signature_type certificate_timestamp(0),
        // timestamp, entry_type precert_entry(1), PreCert { issuer_key_hash[32],
        // TBSCertificate<1..2^24-1> }, CtExtensions<0..2^16-1> } (§3.2).
        let mut signed = vec![0, 0];
        signed.extend_from_slice(&timestamp.to_be_bytes());
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(&issuer_key_hash);
        signed.extend_from_slice(&tbs_len.to_be_bytes()[1..]);
        signed.extend_from_slice(tbs);
        signed.extend_from_slice(&[0, 0]);
        let sig = log.sign(&signed, rng)?;
        let sig_len =
            u16::try_from(sig.len()).map_err(|_| CertGenError("SCT signature too long".into()))?;
        // SignedCertificateTimestamp: version, LogID id, timestamp, extensions, signature.
        let mut sct = vec![0];
        sct.extend_from_slice(&log_id);
        sct.extend_from_slice(&timestamp.to_be_bytes());
        sct.extend_from_slice(&[0, 0]);
        sct.extend_from_slice(&spec.sct_alg.sct_signature_algorithm());
        sct.extend_from_slice(&sig_len.to_be_bytes());
        sct.extend_from_slice(&sig);
        let sct_len = u16::try_from(sct.len()).map_err(|_| CertGenError("SCT too long".into()))?;
        list.extend_from_slice(&sct_len.to_be_bytes());
        list.extend_from_slice(&sct);
    }
    let total =
        u16::try_from(list.len()).map_err(|_| CertGenError("SCT list over 64 KiB".into()))?;
    Ok([&total.to_be_bytes()[..], &list].concat())
}

/// A private key of one level, in the crate each algorithm is signed with.
#[derive(Clone)]
enum LevelKey {
    P256(p256::ecdsa::SigningKey),
    P384(p384::ecdsa::SigningKey),
    Ed25519(ed25519_dalek::SigningKey),
    Rsa(Box<rsa::RsaPrivateKey>),
    MlDsa44(Box<MlDsaKey<ml_dsa::MlDsa44>>),
    MlDsa65(Box<MlDsaKey<ml_dsa::MlDsa65>>),
    MlDsa87(Box<MlDsaKey<ml_dsa::MlDsa87>>),
}

/// An ML-DSA key kept as its 32-byte seed ξ (what RFC 9881's seed form stores) and expanded.
#[derive(Clone)]
struct MlDsaKey<P: ml_dsa::MlDsaParams> {
    seed: Zeroizing<[u8; 32]>,
    expanded: ml_dsa::ExpandedSigningKey<P>,
    public: Vec<u8>,
}

impl<P: ml_dsa::MlDsaParams> MlDsaKey<P> {
    fn from_seed(seed: [u8; 32]) -> Box<Self> {
        let xi = ml_dsa::Seed::from(seed);
        let public =
            ml_dsa::signature::Keypair::verifying_key(&ml_dsa::SigningKey::<P>::from_seed(&xi))
                .encode()
                .to_vec();
        Box::new(MlDsaKey {
            seed: Zeroizing::new(seed),
            expanded: ml_dsa::ExpandedSigningKey::<P>::from_seed(&xi),
            public,
        })
    }

    /// ML-DSA.Sign (FIPS 204 Algorithm 2) with an empty context, its 32-byte rnd drawn from `rng`.
    fn sign(&self, msg: &[u8], rng: &mut dyn RandomSource) -> Result<Vec<u8>, CertGenError> {
        self.expanded
            .sign_randomized(msg, &[], &mut MlDsaRnd(rng))
            .map(|s| s.encode().to_vec())
            .map_err(|_| CertGenError("ML-DSA signing failed".into()))
    }
}

/// Hands ml-dsa's rand_core 0.10 the injected source: each of its draws is one `fill`.
struct MlDsaRnd<'a>(&'a mut dyn RandomSource);

impl ml_dsa::signature::rand_core::TryRng for MlDsaRnd<'_> {
    type Error = core::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut b = [0u8; 4];
        self.0.fill(&mut b);
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut b = [0u8; 8];
        self.0.fill(&mut b);
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.0.fill(dst);
        Ok(())
    }
}

impl ml_dsa::signature::rand_core::TryCryptoRng for MlDsaRnd<'_> {}

impl LevelKey {
    fn generate(alg: KeyAlg, rng: &mut dyn RandomSource) -> Result<Self, CertGenError> {
        let mut seed = [0u8; 32];
        rng.fill(&mut seed);
        let mut seeded = SeededRandom::from_seed_bytes(seed);
        let rsa = |bits: usize| -> Result<LevelKey, CertGenError> {
            // The rsa crate's prime search takes an RngCore: a ChaCha20 stream keyed by the draw.
            let mut c = rand_chacha::ChaCha20Rng::from_seed(seed);
            rsa::RsaPrivateKey::new(&mut c, bits)
                .map(|k| LevelKey::Rsa(Box::new(k)))
                .map_err(|e| CertGenError(format!("RSA key generation: {e}")))
        };
        Ok(match alg {
            KeyAlg::EcdsaP256 => LevelKey::P256(p256::ecdsa::SigningKey::from(
                tls13lab::crypto::kx::draw_p256_scalar(&mut seeded),
            )),
            KeyAlg::EcdsaP384 => LevelKey::P384(p384::ecdsa::SigningKey::from(
                tls13lab::crypto::kx::draw_p384_scalar(&mut seeded),
            )),
            KeyAlg::Ed25519 => LevelKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed)),
            KeyAlg::Rsa2048 => rsa(2048)?,
            KeyAlg::Rsa3072 => rsa(3072)?,
            KeyAlg::Rsa4096 => rsa(4096)?,
            KeyAlg::MlDsa44 => LevelKey::MlDsa44(MlDsaKey::from_seed(seed)),
            KeyAlg::MlDsa65 => LevelKey::MlDsa65(MlDsaKey::from_seed(seed)),
            KeyAlg::MlDsa87 => LevelKey::MlDsa87(MlDsaKey::from_seed(seed)),
        })
    }

    /// rcgen's `der_bytes`: the subjectPublicKey contents.
    fn public(&self) -> Result<Vec<u8>, CertGenError> {
        Ok(match self {
            LevelKey::P256(k) => k
                .verifying_key()
                .to_encoded_point(false)
                .as_bytes()
                .to_vec(),
            LevelKey::P384(k) => k
                .verifying_key()
                .to_encoded_point(false)
                .as_bytes()
                .to_vec(),
            LevelKey::Ed25519(k) => k.verifying_key().as_bytes().to_vec(),
            LevelKey::Rsa(k) => {
                use rsa::pkcs1::EncodeRsaPublicKey;
                k.to_public_key()
                    .to_pkcs1_der()
                    .map_err(|e| CertGenError(e.to_string()))?
                    .as_bytes()
                    .to_vec()
            }
            LevelKey::MlDsa44(k) => k.public.clone(),
            LevelKey::MlDsa65(k) => k.public.clone(),
            LevelKey::MlDsa87(k) => k.public.clone(),
        })
    }

    fn rcgen_alg(&self) -> &'static rcgen::SignatureAlgorithm {
        match self {
            LevelKey::P256(_) => &rcgen::PKCS_ECDSA_P256_SHA256,
            LevelKey::P384(_) => &rcgen::PKCS_ECDSA_P384_SHA384,
            LevelKey::Ed25519(_) => &rcgen::PKCS_ED25519,
            LevelKey::Rsa(_) => &rcgen::PKCS_RSA_SHA256,
            LevelKey::MlDsa44(_) => &rcgen::PKCS_ML_DSA_44,
            LevelKey::MlDsa65(_) => &rcgen::PKCS_ML_DSA_65,
            LevelKey::MlDsa87(_) => &rcgen::PKCS_ML_DSA_87,
        }
    }

    fn sign(&self, msg: &[u8], rng: &mut dyn RandomSource) -> Result<Vec<u8>, CertGenError> {
        use p256::ecdsa::signature::Signer;
        Ok(match self {
            // RFC 6979 nonces: no randomness.
            LevelKey::P256(k) => {
                let sig: p256::ecdsa::Signature = k.sign(msg);
                sig.to_der().as_bytes().to_vec()
            }
            LevelKey::P384(k) => {
                let sig: p384::ecdsa::Signature = k.sign(msg);
                sig.to_der().as_bytes().to_vec()
            }
            LevelKey::Ed25519(k) => k.sign(msg).to_bytes().to_vec(),
            LevelKey::Rsa(k) => {
                // PKCS#1 v1.5 is deterministic; the drawn stream only blinds the exponentiation.
                let mut seed = [0u8; 32];
                rng.fill(&mut seed);
                let mut blinding = rand_chacha::ChaCha20Rng::from_seed(seed);
                let digest = sha2::Sha256::digest(msg);
                k.sign_with_rng(
                    &mut blinding,
                    rsa::Pkcs1v15Sign::new::<sha2::Sha256>(),
                    &digest,
                )
                .map_err(|e| CertGenError(format!("RSA signing: {e}")))?
            }
            LevelKey::MlDsa44(k) => k.sign(msg, rng)?,
            LevelKey::MlDsa65(k) => k.sign(msg, rng)?,
            LevelKey::MlDsa87(k) => k.sign(msg, rng)?,
        })
    }

    /// PKCS#8 PrivateKeyInfo (RFC 5208). ML-DSA: RFC 9881 §6's seed form, `ML-DSA-PrivateKey
    /// ::= CHOICE { seed [0] OCTET STRING (SIZE (32)), ... }`, as OpenSSL's `seed-only` writes
    /// it (its default `seed-priv` reads it back), inside `privateKey OCTET STRING`.
    fn pkcs8_der(&self) -> Result<Vec<u8>, CertGenError> {
        use p256::pkcs8::EncodePrivateKey;
        let fail = |e: &dyn fmt::Display| CertGenError(format!("PKCS#8 encoding: {e}"));
        let seed_form = |oid_last: u8, seed: &[u8; 32]| {
            let alg = der_wrap(
                0x30,
                &[
                    0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, oid_last,
                ],
            );
            let key = der_wrap(0x04, &der_wrap(0x80, seed));
            der_wrap(0x30, &[&[0x02, 0x01, 0x00][..], &alg, &key].concat())
        };
        Ok(match self {
            LevelKey::P256(k) => k.to_pkcs8_der().map_err(|e| fail(&e))?.as_bytes().to_vec(),
            LevelKey::P384(k) => k.to_pkcs8_der().map_err(|e| fail(&e))?.as_bytes().to_vec(),
            LevelKey::Ed25519(k) => k.to_pkcs8_der().map_err(|e| fail(&e))?.as_bytes().to_vec(),
            LevelKey::Rsa(k) => k.to_pkcs8_der().map_err(|e| fail(&e))?.as_bytes().to_vec(),
            // id-ml-dsa-44/65/87: 2.16.840.1.101.3.4.3.17/18/19 (RFC 9881 §2).
            LevelKey::MlDsa44(k) => seed_form(0x11, &k.seed),
            LevelKey::MlDsa65(k) => seed_form(0x12, &k.seed),
            LevelKey::MlDsa87(k) => seed_form(0x13, &k.seed),
        })
    }
}

/// A level's key as rcgen sees it: rcgen writes the certificate, every signature is ours.
/// Signatures that draw (ML-DSA's rnd, RSA blinding) draw from this key's own seeded stream,
/// so a signature's bytes do not depend on how many other signatures came before it.
struct RcgenKey {
    key: LevelKey,
    public: Vec<u8>,
    rng: std::cell::RefCell<SeededRandom>,
}

impl RcgenKey {
    fn new(key: LevelKey, rng: SeededRandom) -> Self {
        // Every LevelKey has a public encoding; an RSA one that fails to encode signs nothing.
        let public = key.public().unwrap_or_default();
        RcgenKey {
            key,
            public,
            rng: std::cell::RefCell::new(rng),
        }
    }
}

impl rcgen::PublicKeyData for RcgenKey {
    fn der_bytes(&self) -> &[u8] {
        &self.public
    }

    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        self.key.rcgen_alg()
    }
}

impl rcgen::SigningKey for RcgenKey {
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        let mut rng = self
            .rng
            .try_borrow_mut()
            .map_err(|_| rcgen::Error::RemoteKeyError)?;
        self.key
            .sign(msg, &mut *rng)
            .map_err(|_| rcgen::Error::RemoteKeyError)
    }
}

/// A DER TLV (definite, minimal length); the MTC writer (`crate::mtc`) uses it too.
pub(crate) fn der_wrap(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    let len = body.len();
    if len < 0x80 {
        v.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        v.push(0x80 | (bytes.len() - skip) as u8);
        v.extend_from_slice(&bytes[skip..]);
    }
    v.extend_from_slice(body);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use tls13lab::crypto::cert::{verify_chain, verify_with_leaf, CertError, Usage};
    use tls13lab::crypto::random::SeededRandom;
    use tls13lab::crypto::sign::{certificate_verify_message, SigError};
    use tls13lab::messages::enums::{AlertDescription, SignatureScheme};

    const RSA_KEY: &str = include_str!("../../tests/vectors/pem/server_rsa_key.pem");

    const T_2020: u64 = 1_577_836_800; // 2020-01-01
    const NB: u64 = T_2020;
    const NA: u64 = T_2020 + 365 * 86_400;

    #[test]
    fn self_signed_p256_is_deterministic_and_validates() {
        let names = ["localhost", "127.0.0.1"];
        let k1 = SigningKey::generate_p256(&mut SeededRandom::from_seed(42));
        let k2 = SigningKey::generate_p256(&mut SeededRandom::from_seed(42));
        let c1 = self_signed_p256(&names, &k1, NB, NA).unwrap();
        let c2 = self_signed_p256(&names, &k2, NB, NA).unwrap();
        assert_eq!(c1, c2);
        let k3 = SigningKey::generate_p256(&mut SeededRandom::from_seed(43));
        assert_ne!(self_signed_p256(&names, &k3, NB, NA).unwrap(), c1);

        let chain = vec![c1.clone()];
        for name in [None, Some("localhost"), Some("127.0.0.1")] {
            for usage in [Usage::Server, Usage::Client] {
                verify_chain(&chain, &chain, name, NB + 10, usage, None).unwrap();
            }
        }
        assert_eq!(
            verify_chain(
                &chain,
                &chain,
                Some("example.com"),
                NB + 10,
                Usage::Server,
                None
            ),
            Err(CertError::NameMismatch {
                expected: "example.com".into(),
                presented: vec!["localhost".into(), "127.0.0.1".into()]
            })
        );
        let err = verify_chain(&chain, &chain, Some("example.com"), NB, Usage::Server, None);
        assert_eq!(
            err.unwrap_err().to_string(),
            "certificate name mismatch: \"example.com\" is not among the certificate's names \
             (localhost, 127.0.0.1)"
        );
        assert_eq!(
            verify_chain(&chain, &chain, None, NA + 1, Usage::Server, None),
            Err(CertError::Expired {
                not_after: NA,
                now: NA + 1
            })
        );

        // CertificateVerify round trip: the key signs, the certificate verifies.
        let msg = certificate_verify_message(true, &[3; 32]);
        let scheme = SignatureScheme::ecdsa_secp256r1_sha256;
        let sig = k1
            .sign(scheme, &msg, &mut SeededRandom::from_seed(0))
            .unwrap();
        verify_with_leaf(&c1, scheme, &msg, &sig).unwrap();
        assert_eq!(
            verify_with_leaf(&c1, SignatureScheme::ed25519, &msg, &sig),
            Err(SigError::KeyMismatch(SignatureScheme::ed25519))
        );

        assert!(self_signed_p256(&names, &k1, NB, u64::MAX).is_err());
        let rsa = SigningKey::from_pem(RSA_KEY).unwrap();
        assert!(self_signed_p256(&names, &rsa, NB, NA).is_err());
        let ed = SigningKey::generate_ed25519(&mut SeededRandom::from_seed(1));
        assert!(self_signed_p256(&names, &ed, NB, NA).is_err());
    }

    #[test]
    fn p384_root_signs_p256_leaf_and_p384_leaf_self_signed() {
        use rcgen::ExtendedKeyUsagePurpose as Eku;
        let mut rng = SeededRandom::from_seed(8);
        // A P-384 CA (ecdsa-with-SHA384) over a P-256 leaf, as public CAs do.
        let root_sk = SigningKey::generate_p384(&mut rng);
        let root_key = rcgen_key(&root_sk).unwrap();
        let leaf_sk = SigningKey::generate_p256(&mut rng);
        let leaf_key = rcgen_key(&leaf_sk).unwrap();
        let root_params = params("root384.test", true, vec![]);
        let root = root_params.self_signed(&root_key).unwrap();
        let leaf = params("leaf.test", false, vec![Eku::ServerAuth])
            .signed_by(
                &leaf_key,
                &rcgen::Issuer::from_params(&root_params, &root_key),
            )
            .unwrap();
        let chain = vec![leaf.der().to_vec()];
        let roots = vec![root.der().to_vec()];
        verify_chain(
            &chain,
            &roots,
            Some("leaf.test"),
            NB + 1,
            Usage::Server,
            None,
        )
        .unwrap();
        // Tampering with the P-384 signature breaks the chain.
        let mut bad = leaf.der().to_vec();
        let n = bad.len();
        bad[n - 2] ^= 1;
        assert!(verify_chain(&[bad], &roots, None, NB + 1, Usage::Server, None).is_err());

        // A self-signed P-384 leaf, and CertificateVerify with ecdsa_secp384r1_sha384.
        let names = ["localhost"];
        let c = self_signed_ecdsa(&names, &root_sk, NB, NA).unwrap();
        assert_eq!(c, self_signed_ecdsa(&names, &root_sk, NB, NA).unwrap());
        assert!(self_signed_p256(&names, &root_sk, NB, NA).is_err());
        let chain = vec![c.clone()];
        verify_chain(
            &chain,
            &chain,
            Some("localhost"),
            NB + 1,
            Usage::Server,
            None,
        )
        .unwrap();
        let msg = certificate_verify_message(true, &[5; 48]);
        let scheme = SignatureScheme::ecdsa_secp384r1_sha384;
        let sig = root_sk.sign(scheme, &msg, &mut rng).unwrap();
        verify_with_leaf(&c, scheme, &msg, &sig).unwrap();
        assert_eq!(
            verify_with_leaf(&c, SignatureScheme::ecdsa_secp256r1_sha256, &msg, &sig),
            Err(SigError::KeyMismatch(
                SignatureScheme::ecdsa_secp256r1_sha256
            ))
        );
        let ed = SigningKey::generate_ed25519(&mut rng);
        assert!(self_signed_ecdsa(&names, &ed, NB, NA).is_err());
    }

    fn params(
        name: &str,
        ca: bool,
        eku: Vec<rcgen::ExtendedKeyUsagePurpose>,
    ) -> rcgen::CertificateParams {
        let mut p = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CommonName, name);
        p.distinguished_name = dn;
        set_validity(&mut p, NB, NA).unwrap();
        if ca {
            p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        p.extended_key_usages = eku;
        p
    }

    #[test]
    fn chain_through_intermediate() {
        use rcgen::ExtendedKeyUsagePurpose as Eku;
        let mut rng = SeededRandom::from_seed(7);
        let root_key = rcgen_key(&SigningKey::generate_ed25519(&mut rng)).unwrap();
        let inter_key = rcgen_key(&SigningKey::generate_p256(&mut rng)).unwrap();
        let leaf_sk = SigningKey::generate_p256(&mut rng);
        let leaf_key = rcgen_key(&leaf_sk).unwrap();

        let root_params = params("root.test", true, vec![]);
        let root = root_params.self_signed(&root_key).unwrap();
        let inter_params = params("inter.test", true, vec![]);
        let inter = inter_params
            .signed_by(
                &inter_key,
                &rcgen::Issuer::from_params(&root_params, &root_key),
            )
            .unwrap();
        let leaf = params("leaf.test", false, vec![Eku::ServerAuth])
            .signed_by(
                &leaf_key,
                &rcgen::Issuer::from_params(&inter_params, &inter_key),
            )
            .unwrap();
        let chain = vec![leaf.der().to_vec(), inter.der().to_vec()];
        let roots = vec![root.der().to_vec()];

        verify_chain(
            &chain,
            &roots,
            Some("leaf.test"),
            NB + 1,
            Usage::Server,
            None,
        )
        .unwrap();
        // The issuer named is that of the chain's last certificate.
        assert_eq!(
            verify_chain(&chain[..1], &roots, None, NB + 1, Usage::Server, None),
            Err(CertError::UnknownIssuer {
                issuer: Some("CN=inter.test".into())
            })
        );
        assert_eq!(
            verify_chain(&chain, &[], None, NB + 1, Usage::Server, None),
            Err(CertError::UnknownIssuer {
                issuer: Some("CN=root.test".into())
            })
        );
        let err = verify_chain(&chain, &roots, None, NB + 1, Usage::Client, None).unwrap_err();
        assert_eq!(err, CertError::WrongUsage);
        assert_eq!(err.alert(), AlertDescription::UnsupportedCertificate);
        // The leaf's key signs CertificateVerify that checks out against the leaf certificate.
        let msg = certificate_verify_message(false, &[1; 48]);
        let sig = leaf_sk
            .sign(SignatureScheme::ecdsa_secp256r1_sha256, &msg, &mut rng)
            .unwrap();
        verify_with_leaf(
            &chain[0],
            SignatureScheme::ecdsa_secp256r1_sha256,
            &msg,
            &sig,
        )
        .unwrap();
    }

    #[test]
    fn chains_replay_from_their_seed_and_validate() {
        use tls13lab::crypto::cert::cert_parts;
        let mut spec = ChainSpec::new(vec![KeyAlg::EcdsaP384, KeyAlg::Ed25519, KeyAlg::EcdsaP256]);
        spec.scts = 2;
        spec.aia = Some("http://ca.tls13lab.test/inter.der".into());
        spec.crl = Some("http://ca.tls13lab.test/inter.crl".into());
        let a = chain(&spec, 5).unwrap();
        assert_eq!(a, chain(&spec, 5).unwrap());
        let b = chain(&spec, 6).unwrap();
        assert_ne!(a.root_der, b.root_der);
        assert_eq!(a.certs_der.len(), 2);
        assert_eq!(a.certs_der[0], a.leaf().cert_der);
        assert_eq!(a.key_pkcs8_der, a.leaf().key_pkcs8_der);
        let now = spec.not_before + 86_400;
        for name in ["localhost", "127.0.0.1"] {
            verify_chain(
                &a.certs_der,
                std::slice::from_ref(&a.root_der),
                Some(name),
                now,
                Usage::Server,
                None,
            )
            .unwrap();
        }
        // Without the intermediate there is no path.
        assert!(verify_chain(
            &a.certs_der[..1],
            std::slice::from_ref(&a.root_der),
            None,
            now,
            Usage::Server,
            None
        )
        .is_err());
        // The leaf's key signs what the leaf's certificate verifies.
        let key = SigningKey::from_pkcs8_der(&a.key_pkcs8_der).unwrap();
        let msg = certificate_verify_message(true, &[7; 32]);
        let scheme = SignatureScheme::ecdsa_secp256r1_sha256;
        let sig = key
            .sign(scheme, &msg, &mut SeededRandom::from_seed(1))
            .unwrap();
        verify_with_leaf(&a.certs_der[0], scheme, &msg, &sig).unwrap();

        let p = cert_parts(&a.certs_der[0]).unwrap();
        assert_eq!(p.scts, 2);
        // Two P-256 SCTs: 2 + 2 * (2 + 1 + 32 + 8 + 2 + 4 + 70..=72) = 240..=244 bytes of
        // list, plus 21 or so of extension (SEQUENCE, OID, two OCTET STRINGs).
        assert!((255..270).contains(&p.sct_list), "{p:?}");
        assert_eq!((p.spki, p.public_key), (91, 65));
        // Ed25519 signs the leaf: 64 bytes.
        assert_eq!(p.signature_value, 64);
        assert_eq!(
            p.header + p.tbs + p.signature_algorithm + p.signature,
            p.der
        );
        let inter = cert_parts(&a.certs_der[1]).unwrap();
        assert_eq!((inter.spki, inter.public_key, inter.scts), (44, 32, 0));
        // Without SCTs the leaf is the same certificate minus the list.
        spec.scts = 0;
        let plain = cert_parts(&chain(&spec, 5).unwrap().certs_der[0]).unwrap();
        assert_eq!(plain.sct_list, 0);
        assert_eq!(plain.other_extensions, p.other_extensions);
        // ... and the extensions' wrappers a few bytes longer.
        assert!(
            (0..=4).contains(&(p.tbs - plain.tbs - p.sct_list)),
            "{plain:?}"
        );
    }

    #[test]
    fn mldsa_and_rsa_levels_have_their_sizes() {
        use tls13lab::crypto::cert::cert_parts;
        let spec = ChainSpec::new(vec![
            KeyAlg::MlDsa87,
            KeyAlg::MlDsa65,
            KeyAlg::Rsa2048,
            KeyAlg::MlDsa44,
        ]);
        let c = chain(&spec, 1).unwrap();
        assert_eq!(c, chain(&spec, 1).unwrap());
        let parts: Vec<_> = c
            .levels
            .iter()
            .map(|l| cert_parts(&l.cert_der).unwrap())
            .collect();
        // FIPS 204 Table 2: public keys of 2592, 1952, 1312 bytes; signatures of 4627, 3309,
        // 2420. Each certificate carries its own key and its issuer's signature.
        assert_eq!(parts[0].public_key, 2592);
        assert_eq!(parts[0].signature_value, 4627);
        assert_eq!(parts[1].public_key, 1952);
        assert_eq!(parts[1].signature_value, 4627);
        assert_eq!(parts[2].public_key, 270);
        assert_eq!(parts[2].signature_value, 3309);
        assert_eq!(parts[3].public_key, 1312);
        assert_eq!(parts[3].signature_value, 256);
        // RFC 9881 seed-form PKCS#8: 54 bytes, [0] seed.
        assert_eq!(c.leaf().key_pkcs8_der.len(), 54);
        assert_eq!(&c.leaf().key_pkcs8_der[18..22], &[0x04, 0x22, 0x80, 0x20]);
        assert!(c
            .leaf()
            .key_pem()
            .starts_with("-----BEGIN PRIVATE KEY-----\n"));
        assert_eq!(
            tls13lab::crypto::cert::certs_from_pem(&c.chain_pem()).unwrap(),
            c.certs_der
        );
        assert_eq!(
            tls13lab::crypto::cert::certs_from_pem(&c.intermediates_pem()).unwrap(),
            c.certs_der[1..].to_vec()
        );
    }

    #[test]
    fn pem_base64_pads() {
        let body = |der: &[u8]| {
            pem_encode("X", der)
                .lines()
                .nth(1)
                .unwrap_or("")
                .to_string()
        };
        assert_eq!(pem_encode("X", b""), "-----BEGIN X-----\n-----END X-----\n");
        assert_eq!(body(b"f"), "Zg==");
        assert_eq!(body(b"fo"), "Zm8=");
        assert_eq!(body(b"foo"), "Zm9v");
        assert_eq!(body(b"foobar"), "Zm9vYmFy");
        let long = pem_encode("X", &[0xff; 49]);
        assert_eq!(long.lines().nth(1).map(str::len), Some(64));
        assert_eq!(long.lines().nth(2), Some("/w=="));
    }

    #[test]
    fn algorithm_names_parse() {
        for a in KeyAlg::ALL {
            assert_eq!(KeyAlg::from_name(a.name()), Some(a));
        }
        assert_eq!(KeyAlg::from_name("P256"), Some(KeyAlg::EcdsaP256));
        assert_eq!(KeyAlg::from_name("ML-DSA-65"), Some(KeyAlg::MlDsa65));
        assert_eq!(KeyAlg::from_name("rsa2048"), Some(KeyAlg::Rsa2048));
        assert_eq!(KeyAlg::from_name("rsa-1024"), None);
        assert!(KeyAlg::parse_list("mldsa44,dsa").is_err());
        assert!(KeyAlg::parse_list(" , ").is_err());
        assert_eq!(
            KeyAlg::parse_list("mldsa87, mldsa65,mldsa44").unwrap(),
            vec![KeyAlg::MlDsa87, KeyAlg::MlDsa65, KeyAlg::MlDsa44]
        );
    }
}
