//! Merkle Tree Certificate issuance (draft-ietf-plants-merkle-tree-certs): a seeded issuance
//! log, its CA cosigner and other cosigners, checkpoints, landmarks, and standalone and
//! landmark-relative certificates, as DER X.509. Verification is the core's
//! (`tls13lab::crypto::cert::mtc`), and so are the Merkle tree algorithms this log uses.
//!
//! ```text
//! IssuanceLog::append(request) -> index         entry = MTCLogEntry(TBSCertificateLogEntry)
//! IssuanceLog::checkpoint(time)                 CA + cosigners sign [0, n) (timestamped) and
//!                                               the two subtrees covering [previous n, n)
//!                                               (timestamp 0); a landmark every N entries
//! IssuanceLog::standalone(index)                inclusion proof + the subtree's cosignatures
//! IssuanceLog::landmark_relative(index)         inclusion proof to a landmark subtree only
//! IssuanceLog::relying_party(k)                 cosigners, policy (CA + k others), landmark
//!                                               subtrees checked by consistency proofs
//! ```
//!
//! Every key and every signature comes from the seed: the same seed issues the same bytes.

mod der;

use core::fmt;

use tls13lab::crypto::cert::mtc::{
    consistency_proof, cosigned_message, covering_subtrees, inclusion_proof, leaf_hash, mth,
    subtree_hash, verify_cosignature, Cosigner, CosignerRequirement, Hash, MtcProof, RelyingParty,
    Subtree, SubtreeSignature, TrustAnchorId, TrustedCa,
};
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::{MlDsaLevel, SigningKey};
use tls13lab::messages::enums::SignatureScheme;
use tls13lab::trust_anchors::{CertificateProperties, TrustAnchorRange};

pub use der::certificate;

/// Failure to issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssueError(pub String);

impl fmt::Display for IssueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MTC issuance failed: {}", self.0)
    }
}

impl std::error::Error for IssueError {}

fn err(s: impl Into<String>) -> IssueError {
    IssueError(s.into())
}

/// A cosigner's signature algorithm (§"Signature Algorithms").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CosignerAlg {
    /// ML-DSA-44 (as c2sp.org/tlog-cosignature).
    MlDsa44,
    /// Ed25519.
    Ed25519,
}

impl CosignerAlg {
    /// The signature scheme its signatures use.
    pub fn scheme(self) -> SignatureScheme {
        match self {
            CosignerAlg::MlDsa44 => SignatureScheme::mldsa44,
            CosignerAlg::Ed25519 => SignatureScheme::ed25519,
        }
    }
}

/// A cosigner with its private key (§"Cosigners"), seeded.
pub struct CosignerKey {
    id: TrustAnchorId,
    alg: CosignerAlg,
    key: SigningKey,
    rng: SeededRandom,
}

impl fmt::Debug for CosignerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CosignerKey({}, {:?})", self.id, self.alg)
    }
}

impl CosignerKey {
    /// A key for `id` from `seed`.
    pub fn generate(id: TrustAnchorId, alg: CosignerAlg, seed: u64) -> CosignerKey {
        let mut rng = SeededRandom::from_seed(seed);
        let key = match alg {
            CosignerAlg::MlDsa44 => SigningKey::generate_mldsa(MlDsaLevel::L44, &mut rng),
            CosignerAlg::Ed25519 => SigningKey::generate_ed25519(&mut rng),
        };
        CosignerKey { id, alg, key, rng }
    }

    /// Its ID.
    pub fn id(&self) -> &TrustAnchorId {
        &self.id
    }

    /// What a relying party configures for it.
    pub fn public(&self) -> Result<Cosigner, IssueError> {
        Ok(Cosigner {
            id: self.id.clone(),
            scheme: self.alg.scheme(),
            spki_der: self
                .key
                .public_key_spki_der()
                .map_err(|e| err(e.to_string()))?,
        })
    }

    /// Signs a CosignedMessage (§"Signature Format").
    pub fn sign(
        &mut self,
        timestamp: u64,
        log_id: &TrustAnchorId,
        subtree: Subtree,
        hash: &Hash,
    ) -> Result<Vec<u8>, IssueError> {
        let m = cosigned_message(&self.id, timestamp, log_id, subtree, hash)
            .ok_or_else(|| err("cosigner or log ID too long"))?;
        self.key
            .sign(self.alg.scheme(), &m, &mut self.rng)
            .map_err(|e| err(e.to_string()))
    }
}

/// What a certificate asserts (§"Certificate Inputs"): a subject key, names, validity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtcRequest {
    /// The subject's SubjectPublicKeyInfo DER.
    pub spki_der: Vec<u8>,
    /// DNS names or IP addresses (subjectAltName; the first is also the CN).
    pub names: Vec<String>,
    /// notBefore, unix seconds.
    pub not_before: u64,
    /// notAfter, unix seconds.
    pub not_after: u64,
    /// extKeyUsage lists id-kp-serverAuth (beside id-kp-clientAuth): false makes a
    /// client-only certificate, which a TLS client refuses.
    pub server_auth: bool,
}

/// Cosignatures in the MTCProof's order (shorter IDs first, then lexicographic).
pub type Cosignatures = Vec<(TrustAnchorId, Vec<u8>)>;

/// A checkpoint (§"Issuance Logs") and its timestamped cosignatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The tree size.
    pub tree_size: u64,
    /// `MTH(D[0:tree_size])`.
    pub root: Hash,
    /// The signing time (non-zero: §"Signature Format").
    pub timestamp: u64,
    /// Every cosigner's signature over `[0, tree_size)` at `timestamp`.
    pub signatures: Cosignatures,
}

/// A subtree signed for standalone certificates (timestamp 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedSubtree {
    /// The interval.
    pub subtree: Subtree,
    /// Its hash.
    pub hash: Hash,
    /// The cosignatures.
    pub signatures: Cosignatures,
}

/// How a log is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    /// The CA ID, e.g. `32473.1`.
    pub ca_id: TrustAnchorId,
    /// The log number (1..=65535).
    pub log_number: u64,
    /// The CA cosigner's algorithm.
    pub ca_alg: CosignerAlg,
    /// Other cosigners (witnesses, mirrors): their IDs and algorithms.
    pub cosigners: Vec<(TrustAnchorId, CosignerAlg)>,
    /// A landmark is allocated at a checkpoint once this many entries are past the last one.
    pub landmark_every: u64,
    /// `max_active_landmarks` (§"Landmark Tree Sizes").
    pub max_active_landmarks: usize,
}

impl LogConfig {
    /// The draft's example CA `32473.1`, log 1, an ML-DSA-44 CA cosigner, an Ed25519 and an
    /// ML-DSA-44 witness (`32473.2`, `32473.3`), a landmark every `landmark_every` entries.
    pub fn example(landmark_every: u64) -> LogConfig {
        let id = |s| TrustAnchorId::from_ascii(s).unwrap_or_else(|| unreachable!());
        LogConfig {
            ca_id: id("32473.1"),
            log_number: 1,
            ca_alg: CosignerAlg::MlDsa44,
            cosigners: vec![
                (id("32473.2"), CosignerAlg::Ed25519),
                (id("32473.3"), CosignerAlg::MlDsa44),
            ],
            landmark_every,
            max_active_landmarks: 169,
        }
    }
}

struct Entry {
    fields: Option<der::Fields>,
}

/// A CA's issuance log (§"Issuance Logs") with its cosigners and landmarks.
pub struct IssuanceLog {
    config: LogConfig,
    log_id: TrustAnchorId,
    ca: CosignerKey,
    cosigners: Vec<CosignerKey>,
    entries: Vec<Entry>,
    leaves: Vec<Hash>,
    checkpoints: Vec<Checkpoint>,
    signed: Vec<SignedSubtree>,
    /// Landmark tree sizes; landmark 0 is size 0.
    landmarks: Vec<u64>,
}

impl fmt::Debug for IssuanceLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IssuanceLog({}, {} entries, {} landmarks)",
            self.log_id,
            self.entries.len(),
            self.landmarks.len()
        )
    }
}

impl IssuanceLog {
    /// A new, empty log; every key is derived from `seed`.
    pub fn new(config: LogConfig, seed: u64) -> Result<IssuanceLog, IssueError> {
        if !(1..=65535).contains(&config.log_number) {
            return Err(err("log number outside 1..=65535"));
        }
        let log_id = config
            .ca_id
            .log_id(config.log_number)
            .ok_or_else(|| err("log ID too long"))?;
        let ca = CosignerKey::generate(config.ca_id.clone(), config.ca_alg, seed);
        let cosigners = config
            .cosigners
            .iter()
            .enumerate()
            .map(|(i, (id, alg))| {
                CosignerKey::generate(id.clone(), *alg, seed.wrapping_add(1 + i as u64))
            })
            .collect();
        Ok(IssuanceLog {
            config,
            log_id,
            ca,
            cosigners,
            entries: Vec::new(),
            leaves: Vec::new(),
            checkpoints: Vec::new(),
            signed: Vec::new(),
            landmarks: vec![0],
        })
    }

    /// The log's ID (CA ID, 0, log number).
    pub fn log_id(&self) -> &TrustAnchorId {
        &self.log_id
    }

    /// The configuration.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Entries so far.
    pub fn len(&self) -> u64 {
        self.entries.len() as u64
    }

    /// No entries yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The leaf hashes, `MTH({entry})` each.
    pub fn leaves(&self) -> &[Hash] {
        &self.leaves
    }

    /// The checkpoints made so far.
    pub fn checkpoints(&self) -> &[Checkpoint] {
        &self.checkpoints
    }

    /// The landmark tree sizes (index = landmark number; landmark 0 is size 0).
    pub fn landmarks(&self) -> &[u64] {
        &self.landmarks
    }

    /// The subtrees signed for standalone certificates.
    pub fn signed_subtrees(&self) -> &[SignedSubtree] {
        &self.signed
    }

    fn serial(&self, index: u64) -> u64 {
        (self.config.log_number << 48) | index
    }

    /// Appends a certificate entry (§"Log Entries"); returns its index.
    pub fn append(&mut self, req: &MtcRequest) -> Result<u64, IssueError> {
        let index = self.len();
        if index >= (1 << 48) - 1 {
            return Err(err("log is full"));
        }
        let fields = der::Fields::new(
            &self.config.ca_id,
            &req.spki_der,
            &req.names,
            req.not_before,
            req.not_after,
            req.server_auth,
        );
        let entry = fields
            .log_entry()
            .ok_or_else(|| err("malformed SubjectPublicKeyInfo"))?;
        if entry.len() > 0xffff {
            return Err(err("log entry over 65535 bytes"));
        }
        self.leaves.push(leaf_hash(&entry));
        self.entries.push(Entry {
            fields: Some(fields),
        });
        Ok(index)
    }

    /// Appends `null_entry`s (§"Log Entries"), e.g. to give the tree a size.
    pub fn append_null(&mut self, count: u64) {
        // extensions<0..2^16-1> empty, type null_entry(0).
        let h = leaf_hash(&[0, 0, 0, 0]);
        for _ in 0..count {
            self.leaves.push(h);
            self.entries.push(Entry { fields: None });
        }
    }

    fn cosign_all(
        &mut self,
        timestamp: u64,
        subtree: Subtree,
        hash: &Hash,
    ) -> Result<Cosignatures, IssueError> {
        let log_id = self.log_id.clone();
        let mut sigs = vec![(
            self.ca.id.clone(),
            self.ca.sign(timestamp, &log_id, subtree, hash)?,
        )];
        for c in &mut self.cosigners {
            sigs.push((c.id.clone(), c.sign(timestamp, &log_id, subtree, hash)?));
        }
        sigs.sort_by(|a, b| {
            let (a, b) = (a.0.as_bytes(), b.0.as_bytes());
            a.len().cmp(&b.len()).then_with(|| a.cmp(b))
        });
        Ok(sigs)
    }

    /// Makes a checkpoint of everything appended (§"Standalone Certificates" steps 1–5): every
    /// cosigner signs `[0, n)` at `timestamp` (> 0) and the two subtrees covering the entries
    /// since the last checkpoint with timestamp 0; then a landmark is allocated if
    /// `landmark_every` entries have passed since the last one.
    pub fn checkpoint(&mut self, timestamp: u64) -> Result<&Checkpoint, IssueError> {
        if timestamp == 0 {
            return Err(err("a checkpoint's timestamp must be non-zero"));
        }
        let n = self.len();
        let prev = self.checkpoints.last().map_or(0, |c| c.tree_size);
        if n <= prev && !self.checkpoints.is_empty() {
            return Err(err("no new entries since the last checkpoint"));
        }
        let root = mth(&self.leaves);
        let signatures = self.cosign_all(timestamp, Subtree { start: 0, end: n }, &root)?;
        let (left, right) = covering_subtrees(prev, n);
        for s in [left, right] {
            if s.start == s.end {
                continue;
            }
            let hash = subtree_hash(&self.leaves, s.start, s.end)
                .ok_or_else(|| err("covering subtree is not a subtree"))?;
            let signatures = self.cosign_all(0, s, &hash)?;
            self.signed.push(SignedSubtree {
                subtree: s,
                hash,
                signatures,
            });
        }
        let last_landmark = *self.landmarks.last().unwrap_or(&0);
        if n - last_landmark >= self.config.landmark_every.max(1) {
            self.landmarks.push(n);
        }
        self.checkpoints.push(Checkpoint {
            tree_size: n,
            root,
            timestamp,
            signatures,
        });
        Ok(self.checkpoints.last().unwrap_or_else(|| unreachable!()))
    }

    /// Allocates the latest checkpoint as a landmark now (§"Allocating Landmarks"), if it is
    /// past the last one. Returns the new landmark's number.
    pub fn allocate_landmark(&mut self) -> Option<u64> {
        let size = self.checkpoints.last()?.tree_size;
        if size <= *self.landmarks.last()? {
            return None;
        }
        self.landmarks.push(size);
        Some(self.landmarks.len() as u64 - 1)
    }

    /// The landmark subtrees of landmark `l` > 0 (§"Landmark Tree Sizes"), empty ones included.
    pub fn landmark_subtrees(&self, l: u64) -> Option<(Subtree, Subtree)> {
        let l = usize::try_from(l).ok().filter(|l| *l > 0)?;
        let size = *self.landmarks.get(l)?;
        Some(covering_subtrees(self.landmarks[l - 1], size))
    }

    /// The active landmarks' numbers (§"Landmark Tree Sizes": the last `max_active_landmarks`).
    pub fn active_landmarks(&self) -> core::ops::RangeInclusive<u64> {
        let last = self.landmarks.len() as u64 - 1;
        let first = (last + 1)
            .saturating_sub(self.config.max_active_landmarks as u64)
            .max(1);
        first..=last
    }

    fn tbs(&self, index: u64) -> Result<Vec<u8>, IssueError> {
        let e = self
            .entries
            .get(index as usize)
            .ok_or_else(|| err("no such entry"))?;
        let f = e
            .fields
            .as_ref()
            .ok_or_else(|| err("a null entry has no certificate"))?;
        Ok(f.tbs(self.serial(index)))
    }

    fn build(
        &self,
        index: u64,
        subtree: Subtree,
        sigs: &[(TrustAnchorId, Vec<u8>)],
    ) -> Result<Vec<u8>, IssueError> {
        let tbs = self.tbs(index)?;
        let proof = MtcProof {
            extensions: &[],
            start: subtree.start,
            end: subtree.end,
            inclusion_proof: inclusion_proof(&self.leaves, subtree.start, subtree.end, index)
                .ok_or_else(|| err("no inclusion proof"))?,
            signatures: sigs
                .iter()
                .map(|(id, s)| SubtreeSignature {
                    cosigner_id: id.as_bytes(),
                    signature: s,
                })
                .collect(),
        }
        .encode()
        .ok_or_else(|| err("MTCProof too long"))?;
        Ok(der::certificate(&tbs, &proof))
    }

    /// A standalone certificate for entry `index` (§"Standalone Certificates"): the inclusion
    /// proof to the signed subtree that covers it, and every cosignature on that subtree.
    /// Fails until a checkpoint includes the entry.
    pub fn standalone(&self, index: u64) -> Result<Vec<u8>, IssueError> {
        let s = self
            .signed
            .iter()
            .find(|s| s.subtree.contains(index))
            .ok_or_else(|| err("entry not yet in a checkpoint"))?;
        self.build(index, s.subtree, &s.signatures)
    }

    /// A standalone certificate with only the cosignatures of `keep` (to build certificates a
    /// policy refuses).
    pub fn standalone_with(
        &self,
        index: u64,
        keep: &[TrustAnchorId],
    ) -> Result<Vec<u8>, IssueError> {
        let s = self
            .signed
            .iter()
            .find(|s| s.subtree.contains(index))
            .ok_or_else(|| err("entry not yet in a checkpoint"))?;
        let sigs: Vec<_> = s
            .signatures
            .iter()
            .filter(|(id, _)| keep.contains(id))
            .cloned()
            .collect();
        self.build(index, s.subtree, &sigs)
    }

    /// The landmark that covers entry `index` (§"Constructing Landmark-Relative Certificates"
    /// step 1): the smallest active landmark whose tree size exceeds it.
    pub fn landmark_for(&self, index: u64) -> Result<u64, IssueError> {
        let active = self.active_landmarks();
        let l = active
            .clone()
            .find(|&l| self.landmarks[l as usize] > index)
            .ok_or_else(|| err("no landmark includes this entry yet"))?;
        if self.landmarks[l as usize - 1] > index {
            return Err(err("the entry's landmark is no longer active"));
        }
        Ok(l)
    }

    /// A landmark-relative certificate for entry `index` (§"Constructing Landmark-Relative
    /// Certificates"): the inclusion proof to the landmark subtree that contains it, no
    /// signatures. Returns the certificate and the landmark number.
    pub fn landmark_relative(&self, index: u64) -> Result<(Vec<u8>, u64), IssueError> {
        let l = self.landmark_for(index)?;
        let (a, b) = self
            .landmark_subtrees(l)
            .ok_or_else(|| err("no such landmark"))?;
        let s = if a.contains(index) { a } else { b };
        Ok((self.build(index, s, &[])?, l))
    }

    /// The relying-party configuration that trusts this CA (§"Relying Party Configuration"):
    /// every cosigner's key; a policy requiring the CA cosigner and `others` of the other
    /// cosigners; and the active landmark subtrees, each admitted only after its consistency
    /// proof against the latest checkpoint verifies and every cosigner's signature on that
    /// checkpoint verifies (§"Trusted Subtrees"). Serials below this log's are revoked
    /// (`minSerial`, §"Revoked Ranges").
    pub fn relying_party(&self, others: usize) -> Result<RelyingParty, IssueError> {
        let mut cosigners = vec![self.ca.public()?];
        for c in &self.cosigners {
            cosigners.push(c.public()?);
        }
        let mut requirements = vec![CosignerRequirement {
            any_of: vec![self.config.ca_id.clone()],
            at_least: 1,
        }];
        if others > 0 {
            requirements.push(CosignerRequirement {
                any_of: self.cosigners.iter().map(|c| c.id.clone()).collect(),
                at_least: others,
            });
        }
        let mut ca = TrustedCa {
            ca_id: self.config.ca_id.clone(),
            requirements,
            trusted_subtrees: Vec::new(),
            revoked: vec![(0, self.serial(0))],
        };
        if let Some(cp) = self.checkpoints.last() {
            let whole = Subtree {
                start: 0,
                end: cp.tree_size,
            };
            for c in &cosigners {
                let ok = cp.signatures.iter().any(|(id, sig)| {
                    *id == c.id
                        && verify_cosignature(c, cp.timestamp, &self.log_id, whole, &cp.root, sig)
                });
                if !ok {
                    return Err(err(format!("checkpoint not signed by {}", c.id)));
                }
            }
            let leaves = &self.leaves[..cp.tree_size as usize];
            for l in self.active_landmarks() {
                let Some((a, b)) = self.landmark_subtrees(l) else {
                    continue;
                };
                for s in [a, b] {
                    if s.start == s.end {
                        continue;
                    }
                    let hash = subtree_hash(leaves, s.start, s.end)
                        .ok_or_else(|| err("landmark subtree beyond the checkpoint"))?;
                    let proof = consistency_proof(leaves, s.start, s.end)
                        .ok_or_else(|| err("no consistency proof"))?;
                    if !ca.trust_subtree(
                        self.config.log_number,
                        s,
                        hash,
                        Some(l),
                        cp.tree_size,
                        &cp.root,
                        &proof,
                    ) {
                        return Err(err("landmark subtree inconsistent with the checkpoint"));
                    }
                }
            }
        }
        Ok(RelyingParty {
            cosigners,
            cas: vec![ca],
        })
    }

    /// A standalone certificate's properties (trust-anchor-ids §6; MTC §"Standalone
    /// Certificates" in TLS): the CA ID, included in every landmark group of this log.
    pub fn standalone_properties(&self) -> Result<CertificateProperties, IssueError> {
        let mut p = CertificateProperties::with_id(self.config.ca_id.as_bytes().to_vec());
        p.group_inclusions.push(self.groups(0, u64::MAX)?);
        Ok(p)
    }

    /// A landmark-relative certificate's properties (MTC §"Landmark-Relative Certificates" in
    /// TLS): the landmark's ID; the landmark groups that contain it (landmark `l` is in the
    /// groups `l` to `l + max_active_landmarks - 1`); and trust_anchor_negotiation, since only
    /// a client that holds the landmark can verify it.
    pub fn landmark_properties(&self, l: u64) -> Result<CertificateProperties, IssueError> {
        let id = self
            .config
            .ca_id
            .landmark_id(self.config.log_number, l)
            .ok_or_else(|| err("landmark ID too long"))?;
        let last = l.saturating_add((self.config.max_active_landmarks as u64).saturating_sub(1));
        Ok(CertificateProperties {
            trust_anchor_id: Some(id.as_bytes().to_vec()),
            group_inclusions: vec![self.groups(l, last)?],
            negotiation_only: true,
            other: Vec::new(),
        })
    }

    /// The range of this log's landmark groups `min..=max` (CA ID, 2, log number, L).
    fn groups(&self, min: u64, max: u64) -> Result<TrustAnchorRange, IssueError> {
        let base = self
            .config
            .ca_id
            .child(&[2, self.config.log_number])
            .ok_or_else(|| err("landmark group ID too long"))?;
        Ok(TrustAnchorRange {
            base: base.as_bytes().to_vec(),
            min,
            max,
        })
    }

    /// The MTCLogEntry of a certificate entry as the lab wrote it (from the fields, not the
    /// TBSCertificate), for checking the core's derivation.
    pub fn log_entry(&self, index: u64) -> Option<Vec<u8>> {
        self.entries
            .get(index as usize)?
            .fields
            .as_ref()?
            .log_entry()
    }
}

/// One certificate issued both ways for a TLS server, with what its configuration needs.
#[derive(Clone, Debug)]
pub struct IssuedForTls {
    /// The entry's index in the log.
    pub index: u64,
    /// The standalone certificate (inclusion proof and every cosignature).
    pub standalone: Vec<u8>,
    /// Its properties: the CA ID.
    pub standalone_properties: CertificateProperties,
    /// The landmark-relative certificate (inclusion proof only).
    pub landmark_relative: Vec<u8>,
    /// The landmark it is relative to.
    pub landmark: u64,
    /// Its properties: the landmark's ID, its groups, negotiation only.
    pub landmark_properties: CertificateProperties,
    /// A client's configuration: every cosigner, the CA cosigner and one more required, and the
    /// active landmarks.
    pub relying_party: RelyingParty,
}

/// Issues `req` in a log of the example CA ([`LogConfig::example`], a landmark every
/// `landmark_every` entries) after `before` other entries, followed by `after` more, with a
/// checkpoint after each part (signed at `now - 3`, `now - 2`, `now - 1`), so that the entry
/// has a standalone certificate and a landmark that covers it. Other entries are null
/// entries: they give the tree its size and the proofs their length.
pub fn issue_for_tls(
    req: &MtcRequest,
    before: u64,
    after: u64,
    landmark_every: u64,
    seed: u64,
    now: u64,
) -> Result<IssuedForTls, IssueError> {
    let mut log = IssuanceLog::new(LogConfig::example(landmark_every), seed)?;
    if before > 0 {
        log.append_null(before);
        log.checkpoint(now - 3)?;
    }
    let index = log.append(req)?;
    log.checkpoint(now - 2)?;
    log.append_null(after);
    if after > 0 {
        log.checkpoint(now - 1)?;
    }
    log.allocate_landmark();
    let standalone = log.standalone(index)?;
    let (landmark_relative, landmark) = log.landmark_relative(index)?;
    Ok(IssuedForTls {
        index,
        standalone,
        standalone_properties: log.standalone_properties()?,
        landmark_relative,
        landmark,
        landmark_properties: log.landmark_properties(landmark)?,
        relying_party: log.relying_party(1)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tls13lab::crypto::cert::mtc::{parse_mtc, verify_mtc, MtcTrust};

    const T: u64 = 1_796_256_000; // 2026-12-03

    fn request(not_before: u64, not_after: u64) -> MtcRequest {
        let key = SigningKey::generate_ed25519(&mut SeededRandom::from_seed(5));
        MtcRequest {
            spki_der: key.public_key_spki_der().unwrap(),
            names: vec!["a.example".into(), "2001:db8::1".into()],
            not_before,
            not_after,
            server_auth: true,
        }
    }

    #[test]
    fn validity_after_2049_is_generalized_time() {
        // RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; the core reads both.
        let mut log = IssuanceLog::new(LogConfig::example(1), 1).unwrap();
        let y2049 = 2_524_607_999; // 2049-12-31T23:59:59Z
        let y2051 = 2_556_143_999; // 2050-12-31T23:59:59Z
        log.append(&request(y2049, y2051)).unwrap();
        log.checkpoint(T).unwrap();
        let cert = log.standalone(0).unwrap();
        let c = parse_mtc(&cert).unwrap();
        assert_eq!((c.not_before, c.not_after), (y2049, y2051));
        let has = |needle: &[u8]| cert.windows(needle.len()).any(|w| w == needle);
        assert!(has(b"\x17\x0d491231235959Z"));
        assert!(has(b"\x18\x0f20501231235959Z"));
    }

    #[test]
    fn landmarks_leave_the_active_window() {
        let mut config = LogConfig::example(4);
        config.max_active_landmarks = 2;
        let mut log = IssuanceLog::new(config, 1).unwrap();
        for _ in 0..4 {
            for _ in 0..4 {
                log.append(&request(T, T + 86_400)).unwrap();
            }
            log.checkpoint(T).unwrap();
        }
        assert_eq!(log.landmarks(), &[0, 4, 8, 12, 16]);
        assert_eq!(log.active_landmarks(), 3..=4);
        // Entry 1 is in landmark 1, no longer active: no landmark-relative certificate.
        assert!(log.landmark_relative(1).is_err());
        assert_eq!(log.landmark_relative(9).unwrap().1, 3);
        // The relying party holds only the active landmarks' subtrees.
        let rp = log.relying_party(0).unwrap();
        let landmarks: Vec<_> = rp.cas[0]
            .trusted_subtrees
            .iter()
            .map(|t| t.landmark)
            .collect();
        // §"Selecting Two Subtrees" splits even an aligned interval at its top node: [8, 12)
        // is covered by [8, 10) and [10, 12), [12, 16) by [12, 14) and [14, 16).
        assert_eq!(landmarks, [Some(3), Some(3), Some(4), Some(4)]);
        let (cert, _) = log.landmark_relative(13).unwrap();
        let v = verify_mtc(&cert, &rp, T).unwrap();
        assert_eq!(v.trust, MtcTrust::TrustedSubtree { landmark: Some(4) });
        // Entries past the last landmark wait for the next one.
        log.append(&request(T, T + 86_400)).unwrap();
        log.checkpoint(T).unwrap();
        assert!(log.landmark_relative(16).is_err());
        assert!(log.standalone(16).is_ok());
    }
}
