//! Merkle Tree Certificates (draft-ietf-plants-merkle-tree-certs, the editor's copy after -05):
//! the relying party's side. Issuance (the log, cosigners, landmarks) is the lab's
//! (`lab::mtc`); this module holds what a client needs to verify one, and the Merkle tree
//! algorithms both sides share, as pure functions over leaf hashes.
//!
//! - Subtrees (§"Subtrees"): [`mth`], [`is_valid_subtree`], inclusion proofs
//!   ([`inclusion_proof`], [`evaluate_inclusion_proof`]), consistency proofs
//!   ([`consistency_proof`], [`verify_consistency_proof`]) and [`covering_subtrees`].
//! - Log entries (§"Log Entries"): [`tbs_log_entry`] turns a TBSCertificate into the
//!   MTCLogEntry the CA logged.
//! - Cosignatures (§"Signature Format"): [`cosigned_message`], [`verify_cosignature`].
//! - The certificate (§"Certificate Format"): [`MtcProof::decode`], bounded, never panics.
//! - The relying party (§"Relying Parties"): [`RelyingParty`] and [`verify_mtc`], each failure
//!   one [`MtcError`] variant with one alert.
//!
//! The log hash is SHA-256 (the draft's RECOMMENDED and only example hash). The OIDs are the
//! draft's experimental ones under 1.3.6.1.4.1.44363.47 (the IANA values are TBD); the CA ID in
//! `issuer` is a UTF8String of the ASCII trust anchor ID, as "early implementations" do, and a
//! RELATIVE-OID is accepted too.

use core::fmt;

use sha2::{Digest, Sha256};

use crate::crypto::sign::verify_signature;
use crate::messages::enums::{AlertDescription, SignatureScheme};

/// HASH_SIZE for SHA-256.
pub const HASH_SIZE: usize = 32;

/// A node of an issuance log's Merkle tree (SHA-256).
pub type Hash = [u8; HASH_SIZE];

/// id-alg-mtcProof, experimental OID 1.3.6.1.4.1.44363.47.0 (§"Certificate Format"), as DER
/// OBJECT IDENTIFIER contents.
pub const ID_ALG_MTC_PROOF: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0xda, 0x4b, 0x2f, 0x00];
/// id-rdna-trustAnchorID, experimental OID 1.3.6.1.4.1.44363.47.1 (§"Certification Authority
/// Identifiers").
pub const ID_RDNA_TRUST_ANCHOR_ID: &[u8] =
    &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0xda, 0x4b, 0x2f, 0x01];
/// id-pe-mtcCertificationAuthority, experimental OID 1.3.6.1.4.1.44363.47.2.
pub const ID_PE_MTC_CERTIFICATION_AUTHORITY: &[u8] =
    &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0xda, 0x4b, 0x2f, 0x02];
/// The AlgorithmIdentifier of an MTC (id-alg-mtcProof, parameters omitted), whole DER.
pub const MTC_PROOF_ALGORITHM: &[u8] = &[
    0x30, 0x0c, 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0xda, 0x4b, 0x2f, 0x00,
];
/// MTCLogEntryType tbs_cert_entry (§"Log Entries").
pub const TBS_CERT_ENTRY: u16 = 1;
/// The CosignedMessage label (§"Signature Format").
pub const COSIGNED_LABEL: &[u8; 12] = b"subtree/v1\n\0";

// ---------------------------------------------------------------------------------------------
// Hashing (RFC 9162 §2.1.1)

/// `HASH()`, the hash of the empty list.
pub fn empty_hash() -> Hash {
    Sha256::digest([]).into()
}

/// `MTH({d}) = HASH(0x00 || d)`, a leaf.
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(entry);
    h.finalize().into()
}

/// `HASH(0x01 || left || right)`, an interior node.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The largest power of two smaller than `n` (n > 1).
fn split_point(n: usize) -> usize {
    debug_assert!(n > 1);
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// `MTH(D)` over leaf hashes (RFC 9162 §2.1.1): the empty hash for none.
pub fn mth(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_hash(),
        1 => leaves[0],
        n => {
            let k = split_point(n);
            node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Subtrees (§"Definition of a Subtree")

/// `[start, end)` is a subtree: `start <= end` and `start` a multiple of `BIT_CEIL(end - start)`,
/// without overflowing when the size exceeds 2^63 (the draft's C++ example).
pub fn is_valid_subtree(start: u64, end: u64) -> bool {
    if start > end {
        return false;
    }
    let size = end - start;
    if size > 1 << 63 {
        return start == 0;
    }
    start & (size.next_power_of_two() - 1) == 0
}

/// `MTH(D[start:end])` over a log's leaf hashes, if `[start, end)` is a subtree within them.
pub fn subtree_hash(leaves: &[Hash], start: u64, end: u64) -> Option<Hash> {
    if !is_valid_subtree(start, end) || end > leaves.len() as u64 {
        return None;
    }
    Some(mth(&leaves[start as usize..end as usize]))
}

/// `PATH(m, D_n)` (RFC 9162 §2.1.3.1).
fn path(m: usize, leaves: &[Hash], out: &mut Vec<Hash>) {
    let n = leaves.len();
    if n <= 1 {
        return;
    }
    let k = split_point(n);
    if m < k {
        path(m, &leaves[..k], out);
        out.push(mth(&leaves[k..]));
    } else {
        path(m - k, &leaves[k..], out);
        out.push(mth(&leaves[..k]));
    }
}

/// The subtree inclusion proof for entry `index` of `[start, end)` (§"Subtree Inclusion
/// Proofs"): `PATH(index - start, D[start:end])`. `None` if the subtree is invalid, beyond the
/// leaves, or does not contain `index`.
pub fn inclusion_proof(leaves: &[Hash], start: u64, end: u64, index: u64) -> Option<Vec<Hash>> {
    if !is_valid_subtree(start, end) || end > leaves.len() as u64 || !(start..end).contains(&index)
    {
        return None;
    }
    let mut out = Vec::new();
    path(
        (index - start) as usize,
        &leaves[start as usize..end as usize],
        &mut out,
    );
    Some(out)
}

/// How many hashes the inclusion proof for `index` in `[start, end)` has, without the tree
/// (the size estimates of §"Size Estimates"). `None` where [`inclusion_proof`] would be.
pub fn inclusion_proof_len(start: u64, end: u64, index: u64) -> Option<usize> {
    if !is_valid_subtree(start, end) || !(start..end).contains(&index) {
        return None;
    }
    // Walk PATH's recursion on sizes only.
    let (mut m, mut n, mut len) = (index - start, end - start, 0);
    while n > 1 {
        let k = 1u64 << (63 - (n - 1).leading_zeros());
        if m < k {
            n = k;
        } else {
            m -= k;
            n -= k;
        }
        len += 1;
    }
    Some(len)
}

/// Evaluates a subtree inclusion proof (§"Evaluating a Subtree Inclusion Proof"): the subtree
/// hash it implies for `entry_hash` at `index` of `[start, end)`, or `None` where the draft says
/// "fail proof evaluation".
pub fn evaluate_inclusion_proof(
    proof: &[Hash],
    index: u64,
    start: u64,
    end: u64,
    entry_hash: &Hash,
) -> Option<Hash> {
    if !is_valid_subtree(start, end) || !(start..end).contains(&index) {
        return None;
    }
    let (mut f, mut s) = (index - start, end - start - 1);
    let mut r = *entry_hash;
    for p in proof {
        if s == 0 {
            return None;
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    (s == 0).then_some(r)
}

/// Verifies a subtree inclusion proof (§"Verifying a Subtree Inclusion Proof").
pub fn verify_inclusion_proof(
    proof: &[Hash],
    index: u64,
    start: u64,
    end: u64,
    entry_hash: &Hash,
    subtree_hash: &Hash,
) -> bool {
    evaluate_inclusion_proof(proof, index, start, end, entry_hash).as_ref() == Some(subtree_hash)
}

/// `SUBTREE_SUBPROOF(start, end, D_n, b)` (§"Generating a Subtree Consistency Proof").
fn subtree_subproof(start: usize, end: usize, leaves: &[Hash], b: bool, out: &mut Vec<Hash>) {
    let n = leaves.len();
    if start == 0 && end == n {
        if !b {
            out.push(mth(leaves));
        }
        return;
    }
    let k = split_point(n);
    if end <= k {
        subtree_subproof(start, end, &leaves[..k], b, out);
        out.push(mth(&leaves[k..]));
    } else if k <= start {
        subtree_subproof(start - k, end - k, &leaves[k..], b, out);
        out.push(mth(&leaves[..k]));
    } else {
        subtree_subproof(0, end - k, &leaves[k..], false, out);
        out.push(mth(&leaves[..k]));
    }
}

/// `SUBTREE_PROOF(start, end, D_n)`: the consistency proof between subtree `[start, end)` and
/// the tree over all of `leaves`. `None` if the subtree is invalid or beyond the tree.
pub fn consistency_proof(leaves: &[Hash], start: u64, end: u64) -> Option<Vec<Hash>> {
    if !is_valid_subtree(start, end) || end > leaves.len() as u64 {
        return None;
    }
    let mut out = Vec::new();
    if start < end {
        subtree_subproof(start as usize, end as usize, leaves, true, &mut out);
    }
    Some(out)
}

/// Verifies a subtree consistency proof (§"Verifying a Subtree Consistency Proof"): that
/// `node_hash` for `[start, end)` is consistent with `root_hash` of the tree of size `n`.
pub fn verify_consistency_proof(
    n: u64,
    start: u64,
    end: u64,
    proof: &[Hash],
    node_hash_: &Hash,
    root_hash: &Hash,
) -> bool {
    if !is_valid_subtree(start, end) || end > n {
        return false;
    }
    if start == end {
        return proof.is_empty() && *node_hash_ == empty_hash();
    }
    let (mut f, mut s, mut t) = (start, end - 1, n - 1);
    let shift = |f: &mut u64, s: &mut u64, t: &mut u64| {
        *f >>= 1;
        *s >>= 1;
        *t >>= 1;
    };
    if s == t {
        while f != s {
            shift(&mut f, &mut s, &mut t);
        }
    } else {
        while f != s && s & 1 == 1 {
            shift(&mut f, &mut s, &mut t);
        }
    }
    let mut rest = proof.iter();
    let (mut fr, mut sr) = if f == s {
        (*node_hash_, *node_hash_)
    } else {
        match rest.next() {
            Some(first) => (*first, *first),
            None => return false,
        }
    };
    for c in rest {
        if t == 0 {
            return false;
        }
        if s & 1 == 1 || s == t {
            if f < s {
                fr = node_hash(c, &fr);
            }
            sr = node_hash(c, &sr);
            // s > 0 here (s == t > 0, or s odd), so this ends.
            while s & 1 == 0 {
                shift(&mut f, &mut s, &mut t);
            }
        } else {
            sr = node_hash(&sr, c);
        }
        shift(&mut f, &mut s, &mut t);
    }
    t == 0 && fr == *node_hash_ && sr == *root_hash
}

/// A half-open interval `[start, end)` of a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Subtree {
    /// First entry.
    pub start: u64,
    /// One past the last entry.
    pub end: u64,
}

impl Subtree {
    /// Whether this is a valid subtree ([`is_valid_subtree`]).
    pub fn is_valid(self) -> bool {
        is_valid_subtree(self.start, self.end)
    }

    /// Whether entry `index` is in it.
    pub fn contains(self, index: u64) -> bool {
        (self.start..self.end).contains(&index)
    }
}

/// The two subtrees that efficiently cover `[start, end)` (§"Selecting Two Subtrees"): `left`
/// and `right` with `left.end == right.start`, `left.start <= start` and `right.end == end`.
/// `start <= end` is the caller's; an inverted interval gives `[start, end)` and `[end, end)`.
pub fn covering_subtrees(start: u64, end: u64) -> (Subtree, Subtree) {
    if end <= start || end - start <= 1 {
        return (Subtree { start, end }, Subtree { start: end, end });
    }
    let last = end - 1;
    let split = 63 - (start ^ last).leading_zeros();
    let mask = (1u64 << split) - 1;
    let mid = last & !mask;
    let left_split = 64 - (!start & mask).leading_zeros();
    let left_start = if left_split >= 64 {
        0
    } else {
        start & !((1u64 << left_split) - 1)
    };
    (
        Subtree {
            start: left_start,
            end: mid,
        },
        Subtree { start: mid, end },
    )
}

// ---------------------------------------------------------------------------------------------
// Trust anchor IDs (draft-ietf-tls-trust-anchor-ids §3)

/// A trust anchor ID in its binary representation: the contents octets of a RELATIVE-OID under
/// 1.3.6.1.4.1 (e.g. `32473.1` is `81 fd 59 01`). CA IDs, log IDs and cosigner IDs are these.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TrustAnchorId(Vec<u8>);

impl TrustAnchorId {
    /// From the ASCII representation (`32473.1`): dotted decimal components, each below 2^64.
    pub fn from_ascii(s: &str) -> Option<TrustAnchorId> {
        let mut out = Vec::new();
        for part in s.split('.') {
            if part.is_empty() || (part.len() > 1 && part.starts_with('0')) {
                return None;
            }
            let v: u64 = part.parse().ok()?;
            push_base128(&mut out, v);
        }
        TrustAnchorId::from_binary(&out)
    }

    /// From the binary representation: minimal base-128 components, 1..=255 bytes.
    pub fn from_binary(b: &[u8]) -> Option<TrustAnchorId> {
        if b.is_empty() || b.len() > 255 {
            return None;
        }
        components(b)?;
        Some(TrustAnchorId(b.to_vec()))
    }

    /// The binary representation.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The ASCII representation (`32473.1`).
    pub fn to_ascii(&self) -> String {
        // Valid by construction.
        components(&self.0)
            .unwrap_or_default()
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(".")
    }

    /// This ID with more components appended (e.g. a log ID: CA ID, 0, log number). `None` if
    /// the result would exceed 255 bytes.
    pub fn child(&self, more: &[u64]) -> Option<TrustAnchorId> {
        let mut out = self.0.clone();
        for &v in more {
            push_base128(&mut out, v);
        }
        (out.len() <= 255).then_some(TrustAnchorId(out))
    }

    /// The issuance log ID for `log_number` (§"Issuance Logs": CA ID, 0, log number).
    pub fn log_id(&self, log_number: u64) -> Option<TrustAnchorId> {
        self.child(&[0, log_number])
    }

    /// The trust anchor ID of landmark `landmark` of log `log_number` (§"Landmark-Relative
    /// Certificates" in TLS: CA ID, 1, log number, landmark).
    pub fn landmark_id(&self, log_number: u64, landmark: u64) -> Option<TrustAnchorId> {
        self.child(&[1, log_number, landmark])
    }

    /// The landmark group of landmark `landmark` of log `log_number` (§"Single-Log Landmark
    /// Groups": CA ID, 2, log number, landmark): the CA ID and the `max_active_landmarks`
    /// landmarks up to this one.
    pub fn landmark_group_id(&self, log_number: u64, landmark: u64) -> Option<TrustAnchorId> {
        self.child(&[2, log_number, landmark])
    }

    /// Whether landmark group `self` (CA, 2, log N, landmark L) contains `id` (§"Single-Log
    /// Landmark Groups"): the CA ID, or a landmark CA.1.N.l with l <= L. The window's lower
    /// end (`max_active_landmarks` back) is not known here, so an older landmark counts as
    /// covered too: for deciding what a client already asked for, that is the safe side.
    pub fn landmark_group_covers(&self, id: &TrustAnchorId) -> bool {
        let g = self.components();
        let i = id.components();
        let Some(ca_len) = g.len().checked_sub(3).filter(|n| *n > 0) else {
            return false;
        };
        if g[ca_len] != 2 {
            return false;
        }
        let ca = &g[..ca_len];
        i == ca
            || (i.len() == g.len()
                && &i[..ca_len] == ca
                && i[ca_len] == 1
                && i[ca_len + 1] == g[ca_len + 1]
                && i[ca_len + 2] <= g[ca_len + 2])
    }

    /// The components of the relative OID (empty if it does not decode).
    fn components(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut v: u64 = 0;
        for &b in &self.0 {
            if v >= 1 << 57 {
                return Vec::new();
            }
            v = (v << 7) | u64::from(b & 0x7f);
            if b & 0x80 == 0 {
                out.push(v);
                v = 0;
            }
        }
        out
    }

    /// `cosigner_name` / `log_origin` of a CosignedMessage: `oid/1.3.6.1.4.1.` and the ASCII.
    pub fn origin(&self) -> String {
        format!("oid/1.3.6.1.4.1.{}", self.to_ascii())
    }
}

impl fmt::Debug for TrustAnchorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TrustAnchorId({})", self.to_ascii())
    }
}

impl fmt::Display for TrustAnchorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_ascii())
    }
}

fn push_base128(out: &mut Vec<u8>, v: u64) {
    let mut groups = [0u8; 10];
    let mut n = 0;
    let mut x = v;
    loop {
        groups[n] = (x & 0x7f) as u8;
        n += 1;
        x >>= 7;
        if x == 0 {
            break;
        }
    }
    for i in (0..n).rev() {
        out.push(groups[i] | if i > 0 { 0x80 } else { 0 });
    }
}

/// The components of a binary relative OID: minimal (no leading 0x80), complete, below 2^64.
fn components(b: &[u8]) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    let mut v: u64 = 0;
    let mut fresh = true;
    for &byte in b {
        if fresh && byte == 0x80 {
            return None;
        }
        if v >> 57 != 0 {
            return None;
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        fresh = byte & 0x80 == 0;
        if fresh {
            out.push(v);
            v = 0;
        }
    }
    fresh.then_some(out)
}

// ---------------------------------------------------------------------------------------------
// Bounded readers

/// A TLS-presentation reader over a slice: every read checks the bytes are there.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }

    fn uint(&mut self, n: usize) -> Option<u64> {
        Some(
            self.take(n)?
                .iter()
                .fold(0u64, |a, b| (a << 8) | u64::from(*b)),
        )
    }

    /// A vector with an `n`-byte length prefix, as a reader that must be consumed.
    fn vec(&mut self, n: usize) -> Option<Reader<'a>> {
        let len = self.uint(n)? as usize;
        Some(Reader(self.take(len)?))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One DER element: (tag, contents, the whole element, what follows it).
type Tlv<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);

/// One DER element at the front of `input`. Definite, minimal lengths up to 4 bytes;
/// single-byte tags.
fn der(input: &[u8]) -> Option<Tlv<'_>> {
    let (&tag, rest) = input.split_first()?;
    if tag & 0x1f == 0x1f {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let (bytes, rest) = rest.split_at_checked(n)?;
        let len = bytes.iter().fold(0usize, |a, b| (a << 8) | usize::from(*b));
        if len < 0x80 || bytes[0] == 0 {
            return None;
        }
        (len, rest)
    };
    let (contents, after) = rest.split_at_checked(len)?;
    let whole = &input[..input.len() - after.len()];
    Some((tag, contents, whole, after))
}

fn der_expect(input: &[u8], tag: u8) -> Option<(&[u8], &[u8], &[u8])> {
    let (t, contents, whole, rest) = der(input)?;
    (t == tag).then_some((contents, whole, rest))
}

// ---------------------------------------------------------------------------------------------
// Log entries (§"Log Entries") and the certificate (§"Certificate Format")

/// The fields of an MTC's DER that verification reads, by reference into it.
#[derive(Clone, Debug)]
pub struct MtcCertificate<'a> {
    /// The TBSCertificate element, whole.
    pub tbs: &'a [u8],
    /// The serial number (`(log_number << 48) | index`).
    pub serial: u64,
    /// The issuer's CA ID.
    pub ca_id: TrustAnchorId,
    /// notBefore, unix seconds.
    pub not_before: u64,
    /// notAfter, unix seconds.
    pub not_after: u64,
    /// The SubjectPublicKeyInfo element, whole.
    pub spki: &'a [u8],
    /// The signatureValue bytes: the MTCProof.
    pub proof: &'a [u8],
}

/// The TBSCertificate's fields in order, by reference.
struct TbsFields<'a> {
    version: &'a [u8],
    serial: &'a [u8],
    signature: &'a [u8],
    issuer: &'a [u8],
    validity: &'a [u8],
    subject: &'a [u8],
    spki: &'a [u8],
    /// issuerUniqueID, subjectUniqueID, extensions: everything after the SPKI.
    rest: &'a [u8],
}

fn tbs_fields(tbs: &[u8]) -> Result<TbsFields<'_>, MtcError> {
    let bad = MtcError::MalformedCertificate;
    let (body, _, after) = der_expect(tbs, 0x30).ok_or(bad("TBSCertificate"))?;
    if !after.is_empty() {
        return Err(bad("bytes after TBSCertificate"));
    }
    let (version, rest) = match der(body) {
        Some((0xa0, _, whole, rest)) => (whole, rest),
        _ => (&body[..0], body),
    };
    let (_, serial, rest) = der_expect(rest, 0x02).ok_or(bad("serialNumber"))?;
    let (_, signature, rest) = der_expect(rest, 0x30).ok_or(bad("signature"))?;
    let (_, issuer, rest) = der_expect(rest, 0x30).ok_or(bad("issuer"))?;
    let (_, validity, rest) = der_expect(rest, 0x30).ok_or(bad("validity"))?;
    let (_, subject, rest) = der_expect(rest, 0x30).ok_or(bad("subject"))?;
    let (_, spki, rest) = der_expect(rest, 0x30).ok_or(bad("subjectPublicKeyInfo"))?;
    // issuerUniqueID [1], subjectUniqueID [2], extensions [3], each at most once, in order.
    let mut tail = rest;
    let mut last = 0u8;
    while !tail.is_empty() {
        let (tag, _, _, next) = der(tail).ok_or(bad("TBSCertificate tail"))?;
        let order = match tag {
            0x81 => 1,
            0x82 => 2,
            0xa3 => 3,
            _ => return Err(bad("unexpected TBSCertificate field")),
        };
        if order <= last {
            return Err(bad("TBSCertificate fields out of order"));
        }
        last = order;
        tail = next;
    }
    Ok(TbsFields {
        version,
        serial,
        signature,
        issuer,
        validity,
        subject,
        spki,
        rest,
    })
}

/// The MTCLogEntry a CA logged for this TBSCertificate (§"Log Entries", §"Verifying
/// Certificate Signatures" step 7–8): `extensions`, `tbs_cert_entry`, then the contents of the
/// TBSCertificateLogEntry (version, issuer, validity, subject, the SPKI's algorithm, the SPKI's
/// hash as an OCTET STRING, and the fields after the SPKI). `extensions` is the MTCProof's
/// extensions vector body (without its length prefix).
pub fn tbs_log_entry(tbs: &[u8], extensions: &[u8]) -> Result<Vec<u8>, MtcError> {
    let f = tbs_fields(tbs)?;
    let (_, spki_alg, _) = der_expect(
        der_expect(f.spki, 0x30)
            .ok_or(MtcError::MalformedCertificate("subjectPublicKeyInfo"))?
            .0,
        0x30,
    )
    .ok_or(MtcError::MalformedCertificate(
        "subjectPublicKeyInfo algorithm",
    ))?;
    if extensions.len() > 0xffff {
        return Err(MtcError::MalformedProof("extensions too long"));
    }
    let mut e = Vec::with_capacity(tbs.len());
    e.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
    e.extend_from_slice(extensions);
    e.extend_from_slice(&TBS_CERT_ENTRY.to_be_bytes());
    e.extend_from_slice(f.version);
    e.extend_from_slice(f.issuer);
    e.extend_from_slice(f.validity);
    e.extend_from_slice(f.subject);
    e.extend_from_slice(spki_alg);
    e.extend_from_slice(&[0x04, HASH_SIZE as u8]);
    e.extend_from_slice(&Sha256::digest(f.spki));
    e.extend_from_slice(f.rest);
    // §"Log Entries": an MTCLogEntry's size MUST NOT exceed 65535 bytes.
    if e.len() > 0xffff {
        return Err(MtcError::MalformedCertificate("log entry over 65535 bytes"));
    }
    Ok(e)
}

/// The CA ID in an `issuer` Name (§"Certification Authority Identifiers"): one RDN with one
/// attribute, id-rdna-trustAnchorID, whose value is a UTF8String of the ASCII ID (the draft's
/// experimental form) or a RELATIVE-OID.
pub fn ca_id_from_name(name: &[u8]) -> Option<TrustAnchorId> {
    let (rdns, _, rest) = der_expect(name, 0x30)?;
    if !rest.is_empty() {
        return None;
    }
    let (set, _, rest) = der_expect(rdns, 0x31)?;
    if !rest.is_empty() {
        return None;
    }
    let (atv, _, rest) = der_expect(set, 0x30)?;
    if !rest.is_empty() {
        return None;
    }
    let (oid, _, value) = der_expect(atv, 0x06)?;
    if oid != ID_RDNA_TRUST_ANCHOR_ID {
        return None;
    }
    match der(value)? {
        (0x0c, s, _, []) => TrustAnchorId::from_ascii(core::str::from_utf8(s).ok()?),
        (0x0d, b, _, []) => TrustAnchorId::from_binary(b),
        _ => None,
    }
}

/// A positive DER INTEGER's value, if it fits 64 bits.
fn der_u64(contents: &[u8]) -> Result<u64, MtcError> {
    match contents {
        [] => Err(MtcError::MalformedCertificate("empty serialNumber")),
        [b, ..] if b & 0x80 != 0 => Err(MtcError::BadSerial("negative")),
        [0, b, ..] if b & 0x80 == 0 => {
            Err(MtcError::MalformedCertificate("serialNumber not minimal"))
        }
        _ => {
            let digits = if contents[0] == 0 && contents.len() > 1 {
                &contents[1..]
            } else {
                contents
            };
            if digits.len() > 8 {
                return Err(MtcError::BadSerial("above 2^64-1"));
            }
            Ok(digits.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b)))
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSSZ) as RFC 5280 §4.1.2.5 allows
/// them, in unix seconds.
fn der_time(input: &[u8]) -> Option<(u64, &[u8])> {
    let (tag, s, _, rest) = der(input)?;
    let (year, digits) = match (tag, s.len()) {
        (0x17, 13) => {
            let yy = two(&s[0..2])?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &s[2..])
        }
        (0x18, 15) => (two(&s[0..2])? * 100 + two(&s[2..4])?, &s[4..]),
        _ => return None,
    };
    if digits[10] != b'Z' {
        return None;
    }
    let (mo, d, h, mi, se) = (
        two(&digits[0..2])?,
        two(&digits[2..4])?,
        two(&digits[4..6])?,
        two(&digits[6..8])?,
        two(&digits[8..10])?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let days = days_from_civil(year as i64, mo as i64, d as i64);
    let t = days * 86_400 + (h * 3600 + mi * 60 + se) as i64;
    Some((u64::try_from(t).ok()?, rest))
}

fn two(b: &[u8]) -> Option<u64> {
    match b {
        [a @ b'0'..=b'9', c @ b'0'..=b'9'] => Some(u64::from(a - b'0') * 10 + u64::from(c - b'0')),
        _ => None,
    }
}

/// Reads an MTC's DER (RFC 5280 §4.1 with §"Certificate Format"'s rules): both signature
/// algorithm fields id-alg-mtcProof with no parameters, the serial in range, the issuer a CA
/// ID, the signatureValue a whole number of bytes.
pub fn parse_mtc(der_: &[u8]) -> Result<MtcCertificate<'_>, MtcError> {
    let bad = MtcError::MalformedCertificate;
    let (body, _, rest) = der_expect(der_, 0x30).ok_or(bad("Certificate"))?;
    if !rest.is_empty() {
        return Err(bad("bytes after Certificate"));
    }
    let (_, tbs, rest) = der_expect(body, 0x30).ok_or(bad("TBSCertificate"))?;
    let (_, sig_alg, rest) = der_expect(rest, 0x30).ok_or(bad("signatureAlgorithm"))?;
    let (bits, _, rest) = der_expect(rest, 0x03).ok_or(bad("signatureValue"))?;
    if !rest.is_empty() {
        return Err(bad("bytes after signatureValue"));
    }
    let f = tbs_fields(tbs)?;
    // §"Verifying Certificate Signatures" step 1 (and RFC 5280 §4.1.1.2: the two must match).
    if f.signature != MTC_PROOF_ALGORITHM || sig_alg != MTC_PROOF_ALGORITHM {
        return Err(MtcError::NotMtc);
    }
    // Step 2: "not a multiple of 8 bits" fails.
    let proof = match bits.split_first() {
        Some((0, proof)) => proof,
        _ => return Err(MtcError::MalformedProof("signatureValue has unused bits")),
    };
    let (serial_contents, _, _) = der_expect(f.serial, 0x02).ok_or(bad("serialNumber"))?;
    let serial = der_u64(serial_contents)?;
    let ca_id = ca_id_from_name(f.issuer).ok_or(bad("issuer is not a CA ID"))?;
    let (validity, _, _) = der_expect(f.validity, 0x30).ok_or(bad("validity"))?;
    let (not_before, rest) = der_time(validity).ok_or(bad("notBefore"))?;
    let (not_after, rest) = der_time(rest).ok_or(bad("notAfter"))?;
    if !rest.is_empty() {
        return Err(bad("validity"));
    }
    Ok(MtcCertificate {
        tbs,
        serial,
        ca_id,
        not_before,
        not_after,
        spki: f.spki,
        proof,
    })
}

// ---------------------------------------------------------------------------------------------
// MTCProof (§"Certificate Format")

/// One SubtreeSignature: a cosigner's ID (binary) and its signature over the subtree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubtreeSignature<'a> {
    /// `cosigner_id`, the binary trust anchor ID.
    pub cosigner_id: &'a [u8],
    /// `signature`.
    pub signature: &'a [u8],
}

/// An MTCProof, by reference into the certificate.
///
/// ```text
/// struct {
///     MTCLogEntryExtension extensions<0..2^16-1>;
///     uint48 start;
///     uint48 end;
///     HashValue inclusion_proof<0..2^16-1>;
///     SubtreeSignature signatures<0..2^16-1>;
/// } MTCProof;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtcProof<'a> {
    /// The extensions vector's body (the log entry's `extensions`, without the length).
    pub extensions: &'a [u8],
    /// The subtree's start.
    pub start: u64,
    /// The subtree's end.
    pub end: u64,
    /// The inclusion proof's hashes.
    pub inclusion_proof: Vec<Hash>,
    /// The cosignatures, in the order the draft requires.
    pub signatures: Vec<SubtreeSignature<'a>>,
}

/// The draft's cosigner_id order: shorter first, then lexicographic.
fn id_order(a: &[u8], b: &[u8]) -> core::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

impl<'a> MtcProof<'a> {
    /// Decodes an MTCProof: every length checked, the whole input consumed, extensions in
    /// ascending unique order (§"Log Entries"), inclusion proof a whole number of hashes,
    /// cosigner IDs 1..=255 bytes, unique and ordered.
    pub fn decode(b: &'a [u8]) -> Result<MtcProof<'a>, MtcError> {
        let m = MtcError::MalformedProof;
        let mut r = Reader(b);
        let mut ext = r.vec(2).ok_or(m("extensions"))?;
        let extensions = ext.0;
        let mut last_type: Option<u64> = None;
        while !ext.is_empty() {
            let t = ext.uint(2).ok_or(m("extension type"))?;
            ext.vec(2).ok_or(m("extension data"))?;
            if last_type.is_some_and(|l| t <= l) {
                return Err(m("extensions not in ascending order"));
            }
            last_type = Some(t);
        }
        let start = r.uint(6).ok_or(m("start"))?;
        let end = r.uint(6).ok_or(m("end"))?;
        let proof = r.vec(2).ok_or(m("inclusion_proof"))?;
        if proof.0.len() % HASH_SIZE != 0 {
            return Err(m("inclusion_proof is not a whole number of hashes"));
        }
        let inclusion_proof = proof
            .0
            .chunks_exact(HASH_SIZE)
            .map(|c| {
                let mut h = [0u8; HASH_SIZE];
                h.copy_from_slice(c);
                h
            })
            .collect();
        let mut sigs = r.vec(2).ok_or(m("signatures"))?;
        let mut signatures: Vec<SubtreeSignature<'a>> = Vec::new();
        while !sigs.is_empty() {
            let id = sigs.vec(1).ok_or(m("cosigner_id"))?.0;
            if id.is_empty() {
                return Err(m("empty cosigner_id"));
            }
            let signature = sigs.vec(2).ok_or(m("signature"))?.0;
            if let Some(prev) = signatures.last() {
                if id_order(prev.cosigner_id, id) != core::cmp::Ordering::Less {
                    return Err(m("cosigner_ids duplicated or out of order"));
                }
            }
            signatures.push(SubtreeSignature {
                cosigner_id: id,
                signature,
            });
        }
        if !r.is_empty() {
            return Err(m("bytes after MTCProof"));
        }
        Ok(MtcProof {
            extensions,
            start,
            end,
            inclusion_proof,
            signatures,
        })
    }

    /// Encodes an MTCProof (the issuer's side; the inverse of [`MtcProof::decode`]). `None` if a
    /// field exceeds its length prefix or `start`/`end` exceed 48 bits.
    pub fn encode(&self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let put_vec = |out: &mut Vec<u8>, n: usize, body: &[u8]| -> Option<()> {
            if body.len() >> (8 * n) != 0 {
                return None;
            }
            out.extend_from_slice(&(body.len() as u64).to_be_bytes()[8 - n..]);
            out.extend_from_slice(body);
            Some(())
        };
        put_vec(&mut out, 2, self.extensions)?;
        for v in [self.start, self.end] {
            if v >> 48 != 0 {
                return None;
            }
            out.extend_from_slice(&v.to_be_bytes()[2..]);
        }
        put_vec(&mut out, 2, &self.inclusion_proof.concat())?;
        let mut sigs = Vec::new();
        for s in &self.signatures {
            put_vec(&mut sigs, 1, s.cosigner_id)?;
            put_vec(&mut sigs, 2, s.signature)?;
        }
        put_vec(&mut out, 2, &sigs)?;
        Some(out)
    }
}

// ---------------------------------------------------------------------------------------------
// Cosignatures (§"Signature Format")

/// The CosignedMessage a cosigner signs:
///
/// ```text
/// struct {
///     uint8 label[12] = "subtree/v1\n\0";
///     opaque cosigner_name<1..2^8-1>;
///     uint64 timestamp;
///     opaque log_origin<1..2^8-1>;
///     uint64 start;
///     uint64 end;
///     HashValue subtree_hash;
/// } CosignedMessage;
/// ```
///
/// `None` if a name exceeds 255 bytes.
pub fn cosigned_message(
    cosigner: &TrustAnchorId,
    timestamp: u64,
    log_id: &TrustAnchorId,
    subtree: Subtree,
    subtree_hash: &Hash,
) -> Option<Vec<u8>> {
    let name = cosigner.origin();
    let origin = log_id.origin();
    if name.len() > 255 || origin.len() > 255 {
        return None;
    }
    let mut m = Vec::with_capacity(12 + 2 + name.len() + origin.len() + 24 + HASH_SIZE);
    m.extend_from_slice(COSIGNED_LABEL);
    m.push(name.len() as u8);
    m.extend_from_slice(name.as_bytes());
    m.extend_from_slice(&timestamp.to_be_bytes());
    m.push(origin.len() as u8);
    m.extend_from_slice(origin.as_bytes());
    m.extend_from_slice(&subtree.start.to_be_bytes());
    m.extend_from_slice(&subtree.end.to_be_bytes());
    m.extend_from_slice(subtree_hash);
    Some(m)
}

/// A cosigner a relying party knows: its ID, its signature algorithm and its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cosigner {
    /// The cosigner ID (for the CA cosigner, the CA ID).
    pub id: TrustAnchorId,
    /// The signature algorithm (§"Signature Algorithms": fixed per cosigner), e.g.
    /// `mldsa44` or `ed25519`: pure signatures over the CosignedMessage, empty context.
    pub scheme: SignatureScheme,
    /// The public key as a DER SubjectPublicKeyInfo.
    pub spki_der: Vec<u8>,
}

/// Verifies `cosigner`'s signature over `subtree` of log `log_id` (timestamp as given; zero in
/// certificates).
pub fn verify_cosignature(
    cosigner: &Cosigner,
    timestamp: u64,
    log_id: &TrustAnchorId,
    subtree: Subtree,
    subtree_hash: &Hash,
    signature: &[u8],
) -> bool {
    cosigned_message(&cosigner.id, timestamp, log_id, subtree, subtree_hash).is_some_and(|m| {
        verify_signature(cosigner.scheme, &cosigner.spki_der, &m, signature).is_ok()
    })
}

// ---------------------------------------------------------------------------------------------
// Relying parties (§"Relying Parties")

/// One clause of a cosigner policy (§"Trusted Cosigners"): at least `at_least` valid
/// cosignatures from the cosigners in `any_of`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CosignerRequirement {
    /// The acceptable cosigners.
    pub any_of: Vec<TrustAnchorId>,
    /// How many of them must have signed.
    pub at_least: usize,
}

/// A predistributed subtree the relying party trusts without signatures (§"Trusted
/// Subtrees"), normally a landmark subtree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedSubtree {
    /// The log it belongs to.
    pub log_number: u64,
    /// Its interval.
    pub subtree: Subtree,
    /// Its hash.
    pub hash: Hash,
    /// The landmark it comes from, if known (reported, not checked).
    pub landmark: Option<u64>,
}

/// One Merkle Tree CA as a relying party trusts it (§"Relying Party Configuration"). The hash
/// is SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedCa {
    /// The CA ID (also its CA cosigner's ID).
    pub ca_id: TrustAnchorId,
    /// Every clause must hold for a standalone certificate. Should include the CA cosigner.
    pub requirements: Vec<CosignerRequirement>,
    /// Subtrees accepted without signatures (landmark-relative certificates).
    pub trusted_subtrees: Vec<TrustedSubtree>,
    /// Revoked serial numbers, half-open ranges `[from, to)` (§"Revoked Ranges").
    pub revoked: Vec<(u64, u64)>,
}

/// A relying party's MTC configuration: the cosigners it knows and the CAs it trusts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelyingParty {
    /// Known cosigners (CA cosigners and others), shared across CAs.
    pub cosigners: Vec<Cosigner>,
    /// Trusted CAs.
    pub cas: Vec<TrustedCa>,
}

impl RelyingParty {
    /// What this relying party sends in `trust_anchors` (§"Single-Log Landmark Groups": "A
    /// relying party whose latest trusted subtree in log N is landmark L SHOULD ... advertise"
    /// the landmark group `CA.2.N.L`): per CA, one group per log it holds landmarks of, or the
    /// CA ID for standalone certificates when it holds none. Binary IDs.
    pub fn advertised_trust_anchors(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for ca in &self.cas {
            let mut latest: Vec<(u64, u64)> = Vec::new();
            for t in &ca.trusted_subtrees {
                let Some(l) = t.landmark else { continue };
                match latest.iter_mut().find(|(n, _)| *n == t.log_number) {
                    Some(e) => e.1 = e.1.max(l),
                    None => latest.push((t.log_number, l)),
                }
            }
            if latest.is_empty() {
                out.push(ca.ca_id.as_bytes().to_vec());
            }
            for (n, l) in latest {
                if let Some(g) = ca.ca_id.landmark_group_id(n, l) {
                    out.push(g.as_bytes().to_vec());
                }
            }
        }
        out
    }

    /// Whether a server's available trust anchor (EncryptedExtensions) is one we can verify, to
    /// retry with it (trust-anchor-ids §4.3): a CA ID we trust (standalone certificates) or a
    /// landmark we hold.
    pub fn trusts_id(&self, id: &[u8]) -> bool {
        self.cas.iter().any(|ca| {
            ca.ca_id.as_bytes() == id
                || ca.trusted_subtrees.iter().any(|t| {
                    t.landmark
                        .and_then(|l| ca.ca_id.landmark_id(t.log_number, l))
                        .is_some_and(|x| x.as_bytes() == id)
                })
        })
    }

    /// The cosigner with this binary ID.
    pub fn cosigner(&self, id: &[u8]) -> Option<&Cosigner> {
        self.cosigners.iter().find(|c| c.id.as_bytes() == id)
    }

    /// The trusted CA with this ID.
    pub fn ca(&self, id: &TrustAnchorId) -> Option<&TrustedCa> {
        self.cas.iter().find(|c| c.ca_id == *id)
    }
}

impl TrustedCa {
    /// Adds `subtree` of log `log_number` as trusted once a subtree consistency proof shows it
    /// is in the checkpoint of size `tree_size` with root `root_hash` (§"Trusted Subtrees": the
    /// caller has checked that checkpoint's cosignatures). Returns whether it was added.
    #[allow(clippy::too_many_arguments)]
    pub fn trust_subtree(
        &mut self,
        log_number: u64,
        subtree: Subtree,
        hash: Hash,
        landmark: Option<u64>,
        tree_size: u64,
        root_hash: &Hash,
        proof: &[Hash],
    ) -> bool {
        if !verify_consistency_proof(
            tree_size,
            subtree.start,
            subtree.end,
            proof,
            &hash,
            root_hash,
        ) {
            return false;
        }
        self.trusted_subtrees.push(TrustedSubtree {
            log_number,
            subtree,
            hash,
            landmark,
        });
        true
    }
}

/// A relying-party configuration text that does not parse: the line (from 1) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpConfigError {
    /// The line, counted from 1.
    pub line: usize,
    /// What is wrong with it.
    pub what: &'static str,
}

impl fmt::Display for RpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MTC relying-party configuration, line {}: {}",
            self.line, self.what
        )
    }
}

impl std::error::Error for RpConfigError {}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl RelyingParty {
    /// The configuration as text, one item a line (what [`RelyingParty::from_text`] reads):
    ///
    /// ```text
    /// cosigner <id> <scheme> <SPKI DER, hex>
    /// ca <ca id>                                  the lines below apply to this CA
    /// require <at least> <id> [<id> ...]
    /// subtree <log> <start> <end> <hash, hex> <landmark or ->
    /// revoked <from> <to>                         serial numbers, [from, to)
    /// ```
    ///
    /// IDs are trust anchor IDs in ASCII (`32473.1`), schemes TLS names (`mldsa44`, `ed25519`);
    /// `#` starts a comment line.
    pub fn to_text(&self) -> String {
        let mut out = String::from("# MTC relying party (draft-ietf-plants-merkle-tree-certs)\n");
        for c in &self.cosigners {
            out += &format!(
                "cosigner {} {} {}\n",
                c.id,
                c.scheme.name(),
                to_hex(&c.spki_der)
            );
        }
        for ca in &self.cas {
            out += &format!("ca {}\n", ca.ca_id);
            for r in &ca.requirements {
                let ids: Vec<String> = r.any_of.iter().map(TrustAnchorId::to_ascii).collect();
                out += &format!("require {} {}\n", r.at_least, ids.join(" "));
            }
            for t in &ca.trusted_subtrees {
                let l = t.landmark.map_or("-".to_string(), |l| l.to_string());
                out += &format!(
                    "subtree {} {} {} {} {l}\n",
                    t.log_number,
                    t.subtree.start,
                    t.subtree.end,
                    to_hex(&t.hash)
                );
            }
            for (from, to) in &ca.revoked {
                out += &format!("revoked {from} {to}\n");
            }
        }
        out
    }

    /// Reads [`RelyingParty::to_text`]'s format. Subtrees must be valid; schemes known.
    pub fn from_text(text: &str) -> Result<RelyingParty, RpConfigError> {
        let mut rp = RelyingParty::default();
        for (n, line) in text.lines().enumerate() {
            let fail = |what| RpConfigError { line: n + 1, what };
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some((&kind, args)) = words.split_first() else {
                continue;
            };
            if kind.starts_with('#') {
                continue;
            }
            let id = |s: &str| TrustAnchorId::from_ascii(s).ok_or(fail("bad trust anchor ID"));
            let num = |s: &str| s.parse::<u64>().map_err(|_| fail("bad number"));
            match (kind, args) {
                ("cosigner", [i, scheme, spki]) => {
                    let scheme = SignatureScheme::KNOWN
                        .iter()
                        .copied()
                        .find(|s| s.name() == *scheme)
                        .ok_or(fail("unknown signature scheme"))?;
                    rp.cosigners.push(Cosigner {
                        id: id(i)?,
                        scheme,
                        spki_der: from_hex(spki).ok_or(fail("bad hex"))?,
                    });
                }
                ("ca", [i]) => rp.cas.push(TrustedCa {
                    ca_id: id(i)?,
                    requirements: Vec::new(),
                    trusted_subtrees: Vec::new(),
                    revoked: Vec::new(),
                }),
                (kind, args) => {
                    let ca = rp.cas.last_mut().ok_or(fail("before any `ca` line"))?;
                    match (kind, args) {
                        ("require", [k, ids @ ..]) if !ids.is_empty() => {
                            let any_of: Vec<TrustAnchorId> =
                                ids.iter().map(|i| id(i)).collect::<Result<_, _>>()?;
                            let at_least = num(k)? as usize;
                            let distinct = any_of
                                .iter()
                                .enumerate()
                                .all(|(j, x)| !any_of[..j].contains(x));
                            // A requirement of none, of more than it lists, or listing one
                            // cosigner twice is a configuration error, not a weaker policy.
                            if at_least == 0 || at_least > any_of.len() || !distinct {
                                return Err(fail("require: 1..=N distinct cosigners"));
                            }
                            ca.requirements
                                .push(CosignerRequirement { any_of, at_least })
                        }
                        ("subtree", [log, start, end, hash, landmark]) => {
                            let subtree = Subtree {
                                start: num(start)?,
                                end: num(end)?,
                            };
                            if !subtree.is_valid() {
                                return Err(fail("not a valid subtree"));
                            }
                            let hash: Hash = from_hex(hash)
                                .and_then(|h| h.try_into().ok())
                                .ok_or(fail("bad hash"))?;
                            let landmark = match *landmark {
                                "-" => None,
                                l => Some(num(l)?),
                            };
                            ca.trusted_subtrees.push(TrustedSubtree {
                                log_number: num(log)?,
                                subtree,
                                hash,
                                landmark,
                            });
                        }
                        ("revoked", [from, to]) => ca.revoked.push((num(from)?, num(to)?)),
                        _ => return Err(fail("unknown line or wrong number of fields")),
                    }
                }
            }
        }
        Ok(rp)
    }
}

/// How a verified certificate's subtree came to be trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MtcTrust {
    /// A landmark-relative certificate: the subtree is a trusted (predistributed) one.
    TrustedSubtree {
        /// Its landmark, if the configuration named it.
        landmark: Option<u64>,
    },
    /// A standalone certificate: these cosigners' signatures verified and met the policy.
    Cosigned {
        /// The cosigners whose signatures verified, in the certificate's order.
        cosigners: Vec<TrustAnchorId>,
    },
}

/// What [`verify_mtc`] established. Name checks and the key's use stay the caller's (RFC 5280
/// path validation beyond the signature; §"Verifying Certificate Signatures" last paragraph).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedMtc {
    /// The issuing CA.
    pub ca_id: TrustAnchorId,
    /// The serial number.
    pub serial: u64,
    /// `serial >> 48`.
    pub log_number: u64,
    /// The entry's index in the log (the serial's low 48 bits).
    pub index: u64,
    /// The subtree the inclusion proof leads to.
    pub subtree: Subtree,
    /// Its hash.
    pub subtree_hash: Hash,
    /// Why it is trusted.
    pub trust: MtcTrust,
    /// notBefore, unix seconds.
    pub not_before: u64,
    /// notAfter, unix seconds.
    pub not_after: u64,
    /// The subject's SubjectPublicKeyInfo DER (for CertificateVerify).
    pub spki_der: Vec<u8>,
    /// Bytes in the inclusion proof.
    pub inclusion_proof_len: usize,
    /// Bytes in the whole MTCProof.
    pub proof_len: usize,
}

/// Why an MTC was refused. Each variant is one check, with one alert ([`MtcError::alert`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MtcError {
    /// The certificate is not the DER X.509 shape, or a TBSCertificate field is malformed.
    MalformedCertificate(&'static str),
    /// The signature algorithm is not id-alg-mtcProof with absent parameters.
    NotMtc,
    /// The MTCProof (signatureValue) does not decode: a length, an order, trailing bytes.
    MalformedProof(&'static str),
    /// The serial number is negative, above 2^64-1, or names log number 0.
    BadSerial(&'static str),
    /// The issuer is a CA ID the relying party does not trust.
    UnknownCa(TrustAnchorId),
    /// The serial number is in a revoked range.
    Revoked {
        /// The serial number.
        serial: u64,
    },
    /// The inclusion proof cannot be evaluated: the subtree is not valid, does not contain the
    /// entry, or the proof has the wrong number of hashes.
    BadInclusionProof,
    /// The subtree is a trusted one, but the inclusion proof leads to another hash.
    SubtreeHashMismatch,
    /// No signatures and the subtree is not a trusted one: a landmark the relying party does
    /// not have (an unknown or expired landmark).
    UntrustedSubtree {
        /// The log.
        log_number: u64,
        /// The subtree.
        subtree: Subtree,
    },
    /// A known cosigner's signature does not verify (a tampered proof, entry or signature, or a
    /// key the relying party does not trust for that ID), and the policy is not met without it.
    BadCosignature(TrustAnchorId),
    /// The valid cosignatures do not meet a policy clause.
    MissingCosignature {
        /// The unmet clause's index in [`TrustedCa::requirements`].
        requirement: usize,
    },
    /// Outside the validity period.
    Expired {
        /// notAfter.
        not_after: u64,
        /// The time of the check.
        now: u64,
    },
    /// Before the validity period.
    NotYetValid {
        /// notBefore.
        not_before: u64,
        /// The time of the check.
        now: u64,
    },
    /// The key may not authenticate a TLS server: an extKeyUsage without id-kp-serverAuth, or
    /// a keyUsage without digitalSignature (RFC 5280 §4.2.1.3, §4.2.1.12).
    WrongUsage(&'static str),
}

impl MtcError {
    /// The one alert for this failure (RFC 8446 §6.2):
    /// - bad_certificate ("a certificate was corrupt, contained signatures that did not verify
    ///   correctly"): every malformed certificate or MTCProof (the Certificate message itself
    ///   decoded, so not decode_error; as [`super::CertError::BadEncoding`]), a bad serial, an
    ///   inclusion proof that fails or does not reach the trusted hash, and a cosignature that
    ///   fails or is missing (a signature in a certificate, so not decrypt_error, which §4.4.3
    ///   keeps for CertificateVerify).
    /// - unknown_ca ("a valid certificate chain or partial chain was received, but ... the CA
    ///   certificate could not be located or could not be matched with a known trust anchor"):
    ///   an untrusted CA ID, or a landmark-relative certificate whose subtree the relying party
    ///   does not hold: its trust anchor (the landmark) is unknown here.
    /// - certificate_revoked: a serial in a revoked range.
    /// - certificate_expired ("has expired or is not currently valid"): outside the validity.
    /// - unsupported_certificate ("of an unsupported type"): not an MTC at all, or one whose
    ///   key is not for a TLS server (as [`super::CertError::WrongUsage`]).
    pub fn alert(&self) -> AlertDescription {
        match self {
            MtcError::MalformedCertificate(_)
            | MtcError::MalformedProof(_)
            | MtcError::BadSerial(_)
            | MtcError::BadInclusionProof
            | MtcError::SubtreeHashMismatch
            | MtcError::BadCosignature(_)
            | MtcError::MissingCosignature { .. } => AlertDescription::BadCertificate,
            MtcError::NotMtc | MtcError::WrongUsage(_) => AlertDescription::UnsupportedCertificate,
            MtcError::UnknownCa(_) | MtcError::UntrustedSubtree { .. } => {
                AlertDescription::UnknownCa
            }
            MtcError::Revoked { .. } => AlertDescription::CertificateRevoked,
            MtcError::Expired { .. } | MtcError::NotYetValid { .. } => {
                AlertDescription::CertificateExpired
            }
        }
    }
}

impl fmt::Display for MtcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MtcError::MalformedCertificate(w) => write!(f, "malformed MTC: {w}"),
            MtcError::NotMtc => f.write_str("signature algorithm is not id-alg-mtcProof"),
            MtcError::MalformedProof(w) => write!(f, "malformed MTCProof: {w}"),
            MtcError::BadSerial(w) => write!(f, "MTC serial number {w}"),
            MtcError::UnknownCa(id) => write!(f, "MTC issued by untrusted CA {id}"),
            MtcError::Revoked { serial } => write!(f, "MTC serial {serial:#x} is revoked"),
            MtcError::BadInclusionProof => f.write_str("MTC inclusion proof does not evaluate"),
            MtcError::SubtreeHashMismatch => {
                f.write_str("MTC inclusion proof does not lead to the trusted subtree's hash")
            }
            MtcError::UntrustedSubtree {
                log_number,
                subtree,
            } => write!(
                f,
                "MTC subtree [{}, {}) of log {log_number} is not trusted (unknown landmark) and has no cosignatures",
                subtree.start, subtree.end
            ),
            MtcError::BadCosignature(id) => write!(f, "MTC cosignature by {id} does not verify"),
            MtcError::MissingCosignature { requirement } => {
                write!(f, "MTC cosignatures do not meet policy clause {requirement}")
            }
            MtcError::Expired { not_after, now } => {
                write!(f, "MTC expired at {not_after}, now {now}")
            }
            MtcError::NotYetValid { not_before, now } => {
                write!(f, "MTC not valid before {not_before}, now {now}")
            }
            MtcError::WrongUsage(w) => write!(f, "MTC key not for a TLS server: {w}"),
        }
    }
}

impl std::error::Error for MtcError {}

/// id-ce-extKeyUsage 2.5.29.37, id-ce-keyUsage 2.5.29.15, id-kp-serverAuth 1.3.6.1.5.5.7.3.1.
const ID_CE_EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
const ID_CE_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
const ID_KP_SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
/// Critical extensions a leaf may carry that the checks here and webpki's name check cover:
/// subjectAltName 2.5.29.17 and basicConstraints 2.5.29.19 (keyUsage and extKeyUsage above).
const KNOWN_CRITICAL: [&[u8]; 2] = [&[0x55, 0x1d, 0x11], &[0x55, 0x1d, 0x13]];

/// Whether an MTC's key may authenticate a TLS server (RFC 5280 path validation that
/// [`verify_mtc`] leaves to the caller, as webpki does for an X.509 leaf): an extKeyUsage, if
/// present, lists id-kp-serverAuth; a keyUsage, if present, has digitalSignature (RFC 8446
/// §4.4.2.2: the key signs CertificateVerify).
pub fn check_server_usage(der_: &[u8]) -> Result<(), MtcError> {
    let cert = parse_mtc(der_)?;
    let f = tbs_fields(cert.tbs)?;
    let bad = MtcError::MalformedCertificate;
    let mut tail = f.rest;
    while let Some((tag, contents, _, next)) = der(tail) {
        tail = next;
        if tag != 0xa3 {
            continue;
        }
        let (mut exts, _, after) = der_expect(contents, 0x30).ok_or(bad("extensions"))?;
        if !after.is_empty() {
            return Err(bad("bytes after extensions"));
        }
        let mut seen: Vec<&[u8]> = Vec::new();
        while !exts.is_empty() {
            let (ext, _, next) = der_expect(exts, 0x30).ok_or(bad("extension"))?;
            exts = next;
            let (oid, _, rest) = der_expect(ext, 0x06).ok_or(bad("extnID"))?;
            // RFC 5280 §4.2: "A certificate MUST NOT include more than one instance of a
            // particular extension."
            if seen.contains(&oid) {
                return Err(bad("an extension twice"));
            }
            seen.push(oid);
            // critical BOOLEAN DEFAULT FALSE: DER writes TRUE as ff and omits FALSE.
            let (critical, rest) = match der(rest) {
                Some((0x01, [0xff], _, r)) => (true, r),
                Some((0x01, _, _, _)) => return Err(bad("critical")),
                _ => (false, rest),
            };
            let (value, _, after) = der_expect(rest, 0x04).ok_or(bad("extnValue"))?;
            if !after.is_empty() {
                return Err(bad("bytes after extnValue"));
            }
            if oid == ID_CE_EXT_KEY_USAGE {
                let (mut kps, _, after) = der_expect(value, 0x30).ok_or(bad("extKeyUsage"))?;
                if !after.is_empty() || kps.is_empty() {
                    return Err(bad("extKeyUsage"));
                }
                let mut server = false;
                while !kps.is_empty() {
                    let (kp, _, next) = der_expect(kps, 0x06).ok_or(bad("KeyPurposeId"))?;
                    server |= kp == ID_KP_SERVER_AUTH;
                    kps = next;
                }
                if !server {
                    return Err(MtcError::WrongUsage("extKeyUsage lacks id-kp-serverAuth"));
                }
            } else if oid == ID_CE_KEY_USAGE {
                let (bits, _, after) = der_expect(value, 0x03).ok_or(bad("keyUsage"))?;
                // The unused-bits count (at most 7) and at least one set bit (§4.2.1.3);
                // digitalSignature is the first bit.
                match bits {
                    [unused, first, rest @ ..]
                        if after.is_empty()
                            && *unused <= 7
                            && (*first != 0 || rest.iter().any(|b| *b != 0)) =>
                    {
                        if first & 0x80 == 0 {
                            return Err(MtcError::WrongUsage("keyUsage lacks digitalSignature"));
                        }
                    }
                    _ => return Err(bad("keyUsage")),
                }
            } else if critical && !KNOWN_CRITICAL.contains(&oid) {
                // §4.2: a critical extension we do not process refuses the certificate, as
                // webpki refuses an X.509 leaf.
                return Err(bad("an unsupported critical extension"));
            }
        }
    }
    Ok(())
}

/// Verifies a Merkle Tree Certificate (§"Verifying Certificate Signatures") against `rp` at
/// `now` (unix seconds), and checks its validity period.
pub fn verify_mtc(der_: &[u8], rp: &RelyingParty, now: u64) -> Result<VerifiedMtc, MtcError> {
    let cert = parse_mtc(der_)?;
    // Step 2: the MTCProof.
    let proof = MtcProof::decode(cert.proof)?;
    // Steps 3–6: the serial, revocation, the log.
    let ca = rp
        .ca(&cert.ca_id)
        .ok_or_else(|| MtcError::UnknownCa(cert.ca_id.clone()))?;
    let serial = cert.serial;
    if ca
        .revoked
        .iter()
        .any(|&(from, to)| (from..to).contains(&serial))
    {
        return Err(MtcError::Revoked { serial });
    }
    let index = serial & ((1 << 48) - 1);
    let log_number = serial >> 48;
    if log_number == 0 {
        return Err(MtcError::BadSerial("names log number 0"));
    }
    let log_id = cert
        .ca_id
        .log_id(log_number)
        .ok_or(MtcError::BadSerial("log ID too long"))?;
    // Steps 7–9: the entry and its hash.
    let entry = tbs_log_entry(cert.tbs, proof.extensions)?;
    let entry_hash = leaf_hash(&entry);
    // Step 10: the subtree hash the proof implies.
    let subtree = Subtree {
        start: proof.start,
        end: proof.end,
    };
    let subtree_hash = evaluate_inclusion_proof(
        &proof.inclusion_proof,
        index,
        subtree.start,
        subtree.end,
        &entry_hash,
    )
    .ok_or(MtcError::BadInclusionProof)?;
    // Step 11: a trusted subtree decides alone.
    let trust = if let Some(t) = ca
        .trusted_subtrees
        .iter()
        .find(|t| t.log_number == log_number && t.subtree == subtree)
    {
        if t.hash != subtree_hash {
            return Err(MtcError::SubtreeHashMismatch);
        }
        MtcTrust::TrustedSubtree {
            landmark: t.landmark,
        }
    } else if proof.signatures.is_empty() {
        return Err(MtcError::UntrustedSubtree {
            log_number,
            subtree,
        });
    } else {
        // Step 12: cosignatures with timestamp 0; unknown cosigners ignored.
        let mut valid: Vec<TrustAnchorId> = Vec::new();
        let mut failed: Option<TrustAnchorId> = None;
        for s in &proof.signatures {
            let Some(c) = rp.cosigner(s.cosigner_id) else {
                continue;
            };
            if verify_cosignature(c, 0, &log_id, subtree, &subtree_hash, s.signature) {
                valid.push(c.id.clone());
            } else if failed.is_none() {
                failed = Some(c.id.clone());
            }
        }
        // A CA with no cosigner requirement accepts no standalone certificate (its relying
        // party trusts landmarks only), and a cosigned subtree needs at least one valid
        // cosignature: without this, a list of unknown cosigners would satisfy an empty policy.
        if ca.requirements.is_empty() || valid.is_empty() {
            return Err(match failed {
                Some(id) => MtcError::BadCosignature(id),
                None => MtcError::MissingCosignature { requirement: 0 },
            });
        }
        for (i, req) in ca.requirements.iter().enumerate() {
            // Each trusted cosigner counts once, however often it is listed.
            let mut ids: Vec<&TrustAnchorId> = req.any_of.iter().collect();
            ids.dedup();
            let have = ids.iter().filter(|id| valid.contains(id)).count();
            if have < req.at_least {
                return Err(match failed {
                    Some(id) => MtcError::BadCosignature(id),
                    None => MtcError::MissingCosignature { requirement: i },
                });
            }
        }
        MtcTrust::Cosigned { cosigners: valid }
    };
    // "The relying party MUST continue to perform other checks, such as checking expiry."
    if now < cert.not_before {
        return Err(MtcError::NotYetValid {
            not_before: cert.not_before,
            now,
        });
    }
    if now > cert.not_after {
        return Err(MtcError::Expired {
            not_after: cert.not_after,
            now,
        });
    }
    Ok(VerifiedMtc {
        ca_id: cert.ca_id,
        serial,
        log_number,
        index,
        subtree,
        subtree_hash,
        trust,
        not_before: cert.not_before,
        not_after: cert.not_after,
        spki_der: cert.spki.to_vec(),
        inclusion_proof_len: proof.inclusion_proof.len() * HASH_SIZE,
        proof_len: cert.proof.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_anchor_id_forms() {
        // draft-ietf-tls-trust-anchor-ids §3's example.
        let id = TrustAnchorId::from_ascii("32473.1").unwrap();
        assert_eq!(id.as_bytes(), &[0x81, 0xfd, 0x59, 0x01]);
        assert_eq!(id.to_ascii(), "32473.1");
        assert_eq!(id.origin(), "oid/1.3.6.1.4.1.32473.1");
        // §"Landmark-Relative Certificates" in TLS: landmark 42 of log 8.
        assert_eq!(id.landmark_id(8, 42).unwrap().to_ascii(), "32473.1.1.8.42");
        assert!(TrustAnchorId::from_binary(&[0x81]).is_none());
        assert!(TrustAnchorId::from_binary(&[0x80, 0x01]).is_none());
        assert!(TrustAnchorId::from_ascii("1..2").is_none());
        assert!(TrustAnchorId::from_ascii("01").is_none());
    }

    #[test]
    fn valid_subtree_edges() {
        assert!(is_valid_subtree(0, u64::MAX));
        assert!(is_valid_subtree(5, 5));
        assert!(is_valid_subtree(4, 8));
        assert!(is_valid_subtree(8, 13));
        assert!(!is_valid_subtree(6, 10));
        assert!(!is_valid_subtree(1, (1 << 63) + 2));
        assert!(!is_valid_subtree(3, 2));
    }

    #[test]
    fn times() {
        // 2026-12-03T00:00:00Z
        let t = der_time(b"\x17\x0d261203000000Z").unwrap().0;
        assert_eq!(t, 1_796_256_000);
        let g = der_time(b"\x18\x0f20261203000000Z").unwrap().0;
        assert_eq!(g, t);
        assert!(der_time(b"\x17\x0d261303000000Z").is_none());
    }
}
