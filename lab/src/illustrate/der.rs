//! A certificate's bytes as nested spans (RFC 5280 §4.1): a bounded DER walk that names every
//! element of the X.509 structure and covers every byte once, so the page can show a
//! Certificate message's `cert_data` part by part. Malformed input gives `None`, never a panic.
//!
//! A constructed element becomes a span whose first child is its tag and length; a primitive
//! element is one leaf, tag and length included, whose value [`describe`] puts in words.

use tls13lab::crypto::cert::mtc::{
    MtcProof, TrustAnchorId, HASH_SIZE, ID_ALG_MTC_PROOF, ID_PE_MTC_CERTIFICATION_AUTHORITY,
    ID_RDNA_TRUST_ANCHOR_ID, MTC_PROOF_ALGORITHM,
};
use tls13lab::messages::layout::Span;

/// The name of the span that holds a whole certificate; the page decodes the leaves under it
/// as DER.
pub const CERTIFICATE: &str = "Certificate (X.509)";

/// How deep the walk goes into elements it does not name (names, extension values).
const MAX_DEPTH: usize = 8;

/// One DER element of `der[pos..end]`: tag, header length, contents length. Definite lengths
/// of at most 4 bytes (X.690 §10.1).
fn tlv(der: &[u8], pos: usize, end: usize) -> Option<(u8, usize, usize)> {
    let tag = *der.get(pos).filter(|_| pos < end)?;
    if tag & 0x1f == 0x1f {
        return None; // high tag numbers do not occur in certificates
    }
    let first = *der.get(pos + 1).filter(|_| pos + 1 < end)?;
    let (len, hdr) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let b = der.get(pos + 2..pos + 2 + n)?;
        (
            b.iter().fold(0usize, |a, x| (a << 8) | usize::from(*x)),
            2 + n,
        )
    };
    (pos.checked_add(hdr)?.checked_add(len)? <= end).then_some((tag, hdr, len))
}

fn span(name: &str, offset: usize, len: usize, children: Vec<Span>) -> Span {
    Span {
        name: name.to_string(),
        offset,
        len,
        children,
    }
}

/// The element at `pos`, named `name`: a leaf if primitive (or `flat`), else its header and
/// its contents walked with `inner`. Offsets are shifted by `base`.
struct Walk<'a> {
    der: &'a [u8],
    base: usize,
}

impl Walk<'_> {
    /// An element with children produced by `inner(contents start, contents end)`.
    fn constructed(
        &self,
        name: &str,
        pos: usize,
        end: usize,
        inner: impl FnOnce(usize, usize) -> Option<Vec<Span>>,
    ) -> Option<(Span, usize)> {
        let (tag, hdr, len) = tlv(self.der, pos, end)?;
        if tag & 0x20 == 0 {
            return None;
        }
        let mut kids = vec![span("tag, length", self.base + pos, hdr, Vec::new())];
        kids.extend(inner(pos + hdr, pos + hdr + len)?);
        let stop = pos + hdr + len;
        Some((span(name, self.base + pos, hdr + len, kids), stop))
    }

    /// Any element as one leaf.
    fn leaf(&self, name: &str, pos: usize, end: usize) -> Option<(Span, usize)> {
        let (_, hdr, len) = tlv(self.der, pos, end)?;
        Some((
            span(name, self.base + pos, hdr + len, Vec::new()),
            pos + hdr + len,
        ))
    }

    /// Any element: constructed ones are walked generically (children named by their tag),
    /// primitive ones are leaves.
    fn any(&self, name: &str, pos: usize, end: usize, depth: usize) -> Option<(Span, usize)> {
        let (tag, _, _) = tlv(self.der, pos, end)?;
        if tag & 0x20 == 0 || depth >= MAX_DEPTH {
            return self.leaf(name, pos, end);
        }
        self.constructed(name, pos, end, |a, b| self.seq(a, b, |_| None, depth + 1))
    }

    /// The elements of `a..b` in order, the i-th named `names(i)` or by its tag.
    fn seq(
        &self,
        mut a: usize,
        b: usize,
        names: impl Fn(usize) -> Option<&'static str>,
        depth: usize,
    ) -> Option<Vec<Span>> {
        let mut out = Vec::new();
        while a < b {
            let (tag, _, _) = tlv(self.der, a, b)?;
            let name = names(out.len()).unwrap_or_else(|| tag_name(tag));
            let (s, next) = self.any(name, a, b, depth)?;
            out.push(s);
            a = next;
        }
        Some(out)
    }

    /// AlgorithmIdentifier ::= SEQUENCE { algorithm OID, parameters ANY OPTIONAL }.
    fn algorithm(&self, name: &str, pos: usize, end: usize) -> Option<(Span, usize)> {
        self.constructed(name, pos, end, |a, b| {
            self.seq(a, b, |i| ["algorithm", "parameters"].get(i).copied(), 1)
        })
    }

    /// Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }.
    fn extension(&self, pos: usize, end: usize) -> Option<(Span, usize)> {
        self.constructed("Extension", pos, end, |a, b| {
            let mut out = Vec::new();
            let (oid, mut at) = self.leaf("extnID", a, b)?;
            out.push(oid);
            if tlv(self.der, at, b)?.0 == 0x01 {
                let (c, next) = self.leaf("critical", at, b)?;
                out.push(c);
                at = next;
            }
            // extnValue is an OCTET STRING holding one DER element: walk it when it does.
            let (tag, hdr, len) = tlv(self.der, at, b)?;
            let walked = (tag == 0x04)
                .then(|| self.any("value", at + hdr, at + hdr + len, 2))
                .flatten()
                .filter(|(_, stop)| *stop == at + hdr + len);
            let (v, next) = match walked {
                Some((inner, stop)) => (
                    span(
                        "extnValue",
                        self.base + at,
                        hdr + len,
                        vec![span("tag, length", self.base + at, hdr, Vec::new()), inner],
                    ),
                    stop,
                ),
                None => self.leaf("extnValue", at, b)?,
            };
            out.push(v);
            (next == b).then_some(out)
        })
    }

    /// TBSCertificate (RFC 5280 §4.1.2).
    fn tbs(&self, pos: usize, end: usize) -> Option<(Span, usize)> {
        self.constructed("tbsCertificate", pos, end, |a, b| {
            let mut out = Vec::new();
            let mut at = a;
            if tlv(self.der, at, b)?.0 == 0xa0 {
                let (v, next) = self.constructed("version", at, b, |x, y| {
                    self.seq(x, y, |_| Some("version number"), 1)
                })?;
                out.push(v);
                at = next;
            }
            let (s, next) = self.leaf("serialNumber", at, b)?;
            out.push(s);
            let (s, next) = self.algorithm("signature", next, b)?;
            out.push(s);
            let (s, next) = self.any("issuer", next, b, 1)?;
            out.push(s);
            let (s, next) = self.constructed("validity", next, b, |x, y| {
                self.seq(x, y, |i| ["notBefore", "notAfter"].get(i).copied(), 1)
            })?;
            out.push(s);
            let (s, next) = self.any("subject", next, b, 1)?;
            out.push(s);
            let (s, mut at) = self.constructed("subjectPublicKeyInfo", next, b, |x, y| {
                let (alg, k) = self.algorithm("algorithm", x, y)?;
                let (key, stop) = self.leaf("subjectPublicKey", k, y)?;
                (stop == y).then_some(vec![alg, key])
            })?;
            out.push(s);
            while at < b {
                let (tag, _, _) = tlv(self.der, at, b)?;
                let (s, next) = match tag {
                    0xa1 => self.any("issuerUniqueID", at, b, 1)?,
                    0xa2 => self.any("subjectUniqueID", at, b, 1)?,
                    0xa3 => self.constructed("extensions", at, b, |x, y| {
                        let (s, stop) = self.constructed("Extensions", x, y, |p, q| {
                            let mut exts = Vec::new();
                            let mut e = p;
                            while e < q {
                                let (s, next) = self.extension(e, q)?;
                                exts.push(s);
                                e = next;
                            }
                            Some(exts)
                        })?;
                        (stop == y).then_some(vec![s])
                    })?,
                    _ => self.any(tag_name(tag), at, b, 1)?,
                };
                out.push(s);
                at = next;
            }
            Some(out)
        })
    }
}

/// `der` (one certificate, lying at `base` in its message) as spans tiling `base..base +
/// der.len()`: one span named [`CERTIFICATE`] with the X.509 structure under it, or `None`
/// if `der` is not one well-formed certificate.
pub fn certificate(der: &[u8], base: usize) -> Option<Span> {
    let w = Walk { der, base };
    let (s, stop) = w.constructed(CERTIFICATE, 0, der.len(), |a, b| {
        let (tbs, next) = w.tbs(a, b)?;
        let (alg, next) = w.algorithm("signatureAlgorithm", next, b)?;
        // A Merkle Tree Certificate's signatureValue is an MTCProof, not a signature
        // (draft-ietf-plants-merkle-tree-certs §6.2): split it when it decodes as one.
        let mtc = der.get(alg.offset - base..next) == Some(MTC_PROOF_ALGORITHM);
        let (sig, stop) = match mtc.then(|| w.mtc_signature_value(next, b)).flatten() {
            Some(x) => x,
            None => w.leaf("signatureValue", next, b)?,
        };
        (stop == b).then_some(vec![tbs, alg, sig])
    })?;
    (stop == der.len()).then_some(s)
}

/// The span an MTCProof lies in; its fields cite draft-ietf-plants-merkle-tree-certs.
pub const MTC_PROOF: &str = "MTCProof";

/// The section of draft-ietf-plants-merkle-tree-certs that defines an MTCProof part named
/// `name` under `parent` (its length prefixes and bytes have none of their own).
pub fn mtc_section(name: &str, parent: &str) -> Option<&'static str> {
    Some(match (name, parent) {
        (MTC_PROOF, _) | ("extensions" | "start" | "end" | "signatures", MTC_PROOF) => "6.2",
        ("SubtreeSignature", "signatures") => "6.2",
        ("inclusion_proof", MTC_PROOF) => "4.3",
        ("cosigner_id", "SubtreeSignature") => "5.3",
        ("signature", "SubtreeSignature") => "5.3.1",
        _ => return None,
    })
}

impl Walk<'_> {
    /// An MTC's signatureValue: the BIT STRING's header, its unused-bits byte (0: a whole
    /// number of bytes, §7.2 step 2) and the MTCProof, every field of it a span. `None`
    /// unless the bytes decode as one ([`MtcProof::decode`], which checks every length).
    fn mtc_signature_value(&self, pos: usize, end: usize) -> Option<(Span, usize)> {
        let (tag, hdr, len) = tlv(self.der, pos, end)?;
        let stop = pos + hdr + len;
        let proof = self.der.get(pos + hdr + 1..stop).filter(|_| tag == 0x03)?;
        if self.der[pos + hdr] != 0 || MtcProof::decode(proof).is_err() {
            return None;
        }
        let at = self.base + pos + hdr + 1;
        let kids = vec![
            span("tag, length", self.base + pos, hdr, Vec::new()),
            span("unused bits", self.base + pos + hdr, 1, Vec::new()),
            mtc_proof(proof, at)?,
        ];
        Some((
            span("signatureValue", self.base + pos, hdr + len, kids),
            stop,
        ))
    }
}

/// A u16-length-prefixed vector at `p[at..]` named `name`: its `length` and, when not empty,
/// its body split by `body(start, len)`. Returns the span and where it ends.
fn vec_span(
    p: &[u8],
    at: usize,
    base: usize,
    name: &str,
    prefix: usize,
    body: impl FnOnce(usize, usize) -> Option<Vec<Span>>,
) -> Option<(Span, usize)> {
    let n = p
        .get(at..at + prefix)?
        .iter()
        .fold(0usize, |a, b| (a << 8) | usize::from(*b));
    p.get(at + prefix..at + prefix + n)?;
    let mut kids = vec![span("length", base + at, prefix, Vec::new())];
    if n > 0 {
        kids.extend(body(at + prefix, n)?);
    }
    Some((span(name, base + at, prefix + n, kids), at + prefix + n))
}

/// The MTCProof `p` (already decoded, so well formed) lying at `base`, field by field
/// (§6.2): extensions, start, end, inclusion_proof (one span per 32-byte hash, §4.3),
/// signatures (each SubtreeSignature's cosigner_id and signature, §5.3.1).
fn mtc_proof(p: &[u8], base: usize) -> Option<Span> {
    let leaf = |name: &str, at: usize, len: usize| span(name, base + at, len, Vec::new());
    let mut kids = Vec::new();
    let (s, at) = vec_span(p, 0, base, "extensions", 2, |a, n| {
        Some(vec![leaf("data", a, n)])
    })?;
    kids.push(s);
    kids.push(leaf("start", at, 6));
    kids.push(leaf("end", at + 6, 6));
    let (s, at) = vec_span(p, at + 12, base, "inclusion_proof", 2, |a, n| {
        let count = n / HASH_SIZE;
        Some(
            (0..count)
                .map(|i| {
                    leaf(
                        &format!("hash {} of {count}", i + 1),
                        a + i * HASH_SIZE,
                        HASH_SIZE,
                    )
                })
                .collect(),
        )
    })?;
    kids.push(s);
    let (s, at) = vec_span(p, at, base, "signatures", 2, |mut a, n| {
        let stop = a + n;
        let mut sigs = Vec::new();
        while a < stop {
            let start = a;
            let (id, next) = vec_span(p, a, base, "cosigner_id", 1, |x, m| {
                Some(vec![leaf("id", x, m)])
            })?;
            let (sig, next) = vec_span(p, next, base, "signature", 2, |x, m| {
                Some(vec![leaf("value", x, m)])
            })?;
            sigs.push(span(
                "SubtreeSignature",
                base + start,
                next - start,
                vec![id, sig],
            ));
            a = next;
        }
        (a == stop).then_some(sigs)
    })?;
    kids.push(s);
    (at == p.len()).then(|| span(MTC_PROOF, base, p.len(), kids))
}

/// Whether a leaf named `name` under `parent` is a field of an MTC's signatureValue rather
/// than a DER element (its value is [`mtc_value`]'s, never a DER reading of its bytes).
pub fn is_mtc_leaf(name: &str, parent: &str) -> bool {
    matches!(
        parent,
        MTC_PROOF
            | "signatureValue"
            | "extensions"
            | "inclusion_proof"
            | "signatures"
            | "cosigner_id"
            | "signature"
    ) && (matches!(
        name,
        "length" | "data" | "value" | "start" | "end" | "unused bits" | "id"
    ) || name.starts_with("hash "))
}

/// The value of an MTCProof leaf named `name` under `parent` in words: lengths, start and
/// end in decimal (the inclusion proof's length also as a number of hashes), a cosigner ID in
/// its ASCII form (draft-ietf-tls-trust-anchor-ids §3). `None` for hashes and signatures.
pub fn mtc_value(name: &str, parent: &str, b: &[u8]) -> Option<String> {
    let n = b.iter().fold(0u64, |a, x| (a << 8) | u64::from(*x));
    Some(match (name, parent) {
        ("unused bits", _) => format!("{n}"),
        ("length", "inclusion_proof") => {
            let h = n / HASH_SIZE as u64;
            format!("{n} ({h} hash{})", if h == 1 { "" } else { "es" })
        }
        ("length", _) | ("start", _) | ("end", _) => format!("{n}"),
        ("id", "cosigner_id") => TrustAnchorId::from_binary(b)?.to_ascii(),
        _ => return None,
    })
}

fn tag_name(tag: u8) -> &'static str {
    match tag {
        0x01 => "BOOLEAN",
        0x02 => "INTEGER",
        0x03 => "BIT STRING",
        0x04 => "OCTET STRING",
        0x05 => "NULL",
        0x06 => "OBJECT IDENTIFIER",
        0x0c => "UTF8String",
        0x13 => "PrintableString",
        0x16 => "IA5String",
        0x17 => "UTCTime",
        0x18 => "GeneralizedTime",
        0x30 => "SEQUENCE",
        0x31 => "SET",
        t if t & 0xc0 == 0x80 => "[context-specific]",
        _ => "element",
    }
}

/// Dotted notation of an OID's contents (X.690 §8.19), or `None` if malformed.
pub fn oid_text(c: &[u8]) -> Option<String> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut v: u64 = 0;
    for (i, b) in c.iter().enumerate() {
        if v > (u64::MAX >> 7) {
            return None;
        }
        v = (v << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (v / 40).min(2);
                arcs.push(first);
                arcs.push(v - first * 40);
            } else {
                arcs.push(v);
            }
            v = 0;
        } else if i + 1 == c.len() {
            return None;
        }
    }
    (!arcs.is_empty()).then(|| {
        arcs.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(".")
    })
}

/// The name of a well-known OID.
pub fn oid_name(dotted: &str) -> Option<&'static str> {
    Some(match dotted {
        "2.5.4.3" => "commonName",
        "2.5.4.6" => "countryName",
        "2.5.4.10" => "organizationName",
        "2.5.4.11" => "organizationalUnitName",
        "1.2.840.10045.2.1" => "id-ecPublicKey",
        "1.2.840.10045.3.1.7" => "secp256r1",
        "1.3.132.0.34" => "secp384r1",
        "1.3.132.0.35" => "secp521r1",
        "1.2.840.10045.4.3.2" => "ecdsa-with-SHA256",
        "1.2.840.10045.4.3.3" => "ecdsa-with-SHA384",
        "1.2.840.10045.4.3.4" => "ecdsa-with-SHA512",
        "1.3.101.112" => "id-Ed25519",
        "1.3.101.113" => "id-Ed448",
        "1.2.840.113549.1.1.1" => "rsaEncryption",
        "1.2.840.113549.1.1.10" => "id-RSASSA-PSS",
        "1.2.840.113549.1.1.11" => "sha256WithRSAEncryption",
        "1.2.840.113549.1.1.12" => "sha384WithRSAEncryption",
        "1.2.840.113549.1.1.13" => "sha512WithRSAEncryption",
        "2.16.840.1.101.3.4.3.17" => "id-ml-dsa-44",
        "2.16.840.1.101.3.4.3.18" => "id-ml-dsa-65",
        "2.16.840.1.101.3.4.3.19" => "id-ml-dsa-87",
        "2.5.29.14" => "subjectKeyIdentifier",
        "2.5.29.15" => "keyUsage",
        "2.5.29.17" => "subjectAltName",
        "2.5.29.19" => "basicConstraints",
        "2.5.29.31" => "cRLDistributionPoints",
        "2.5.29.35" => "authorityKeyIdentifier",
        "2.5.29.37" => "extKeyUsage",
        "1.3.6.1.5.5.7.1.1" => "authorityInfoAccess",
        "1.3.6.1.5.5.7.3.1" => "serverAuth",
        "1.3.6.1.5.5.7.3.2" => "clientAuth",
        "1.3.6.1.4.1.11129.2.4.2" => "embeddedSCTList",
        d if Some(d) == oid_text(ID_ALG_MTC_PROOF).as_deref() => "id-alg-mtcProof",
        d if Some(d) == oid_text(ID_RDNA_TRUST_ANCHOR_ID).as_deref() => "id-rdna-trustAnchorID",
        d if Some(d) == oid_text(ID_PE_MTC_CERTIFICATION_AUTHORITY).as_deref() => {
            "id-pe-mtcCertificationAuthority"
        }
        _ => return None,
    })
}

/// The value of the element a walk named `name`, in words: [`describe`], and for the version
/// the X.509 version it encodes (RFC 5280 §4.1.2.1: 2 is v3).
pub fn value(name: &str, el: &[u8]) -> Option<String> {
    let words = describe(el)?;
    match (name, el) {
        ("version number", [0x02, 0x01, v]) => Some(format!("{words} (v{})", u16::from(*v) + 1)),
        _ => Some(words),
    }
}

/// One DER element (tag and length included) in words: OIDs by name, times and strings as
/// text, small integers in decimal, bit and octet strings by length. `None` if it is not one
/// element.
pub fn describe(el: &[u8]) -> Option<String> {
    let (tag, hdr, len) = tlv(el, 0, el.len())?;
    let c = el.get(hdr..hdr + len)?;
    let text = |c: &[u8]| String::from_utf8_lossy(c).into_owned();
    Some(match tag {
        0x01 => (if c == [0] { "FALSE" } else { "TRUE" }).to_string(),
        0x02 if len <= 8 => {
            let v = c.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b));
            format!("INTEGER {v}")
        }
        0x02 => format!("INTEGER, {len} bytes"),
        0x03 => format!("BIT STRING, {} bytes", len.saturating_sub(1)),
        0x04 => format!("OCTET STRING, {len} bytes"),
        0x05 => "NULL".to_string(),
        0x06 => {
            let d = oid_text(c)?;
            match oid_name(&d) {
                Some(n) => format!("{n} ({d})"),
                None => d,
            }
        }
        0x0c | 0x13 | 0x16 => format!("\"{}\"", text(c)),
        0x17 | 0x18 => text(c),
        0x82 => format!("dNSName \"{}\"", text(c)),
        0x87 if len == 4 => format!("iPAddress {}.{}.{}.{}", c[0], c[1], c[2], c[3]),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tls13lab::messages::layout::check_tiling;

    fn leaves<'a>(s: &'a Span, out: &mut Vec<&'a Span>) {
        if s.children.is_empty() {
            out.push(s);
        }
        for c in &s.children {
            leaves(c, out);
        }
    }

    #[test]
    fn a_certificate_tiles_into_its_parts_and_bad_input_gives_none() {
        let spec = crate::certgen::ChainSpec::new(vec![crate::certgen::KeyAlg::EcdsaP256]);
        let der = crate::certgen::chain(&spec, 1).unwrap().root_der;
        let s = certificate(&der, 7).unwrap();
        assert_eq!((s.offset, s.len), (7, der.len()));
        let mut full = vec![0u8; 7];
        full.extend_from_slice(&der);
        check_tiling(&[span("pre", 0, 7, vec![]), s.clone()], full.len()).unwrap();
        let names: Vec<&str> = s.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "tag, length",
                "tbsCertificate",
                "signatureAlgorithm",
                "signatureValue"
            ]
        );
        let tbs: Vec<&str> = s.children[1]
            .children
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        for part in [
            "version",
            "serialNumber",
            "signature",
            "issuer",
            "validity",
            "subject",
            "subjectPublicKeyInfo",
            "extensions",
        ] {
            assert!(tbs.contains(&part), "{part} in {tbs:?}");
        }
        let mut ls = Vec::new();
        leaves(&s, &mut ls);
        let words: Vec<String> = ls
            .iter()
            .filter_map(|l| describe(&full[l.offset..l.end()]))
            .collect();
        assert!(words
            .iter()
            .any(|w| w == "ecdsa-with-SHA256 (1.2.840.10045.4.3.2)"));
        assert!(words.iter().any(|w| w.starts_with("subjectAltName")));
        // Every prefix and a flipped length are refused without a panic.
        for n in 0..der.len() {
            assert!(certificate(&der[..n], 0).is_none());
        }
        let mut bad = der.clone();
        bad[1] ^= 0x40;
        assert!(certificate(&bad, 0).is_none());
    }

    #[test]
    fn oids_and_values_in_words() {
        assert_eq!(
            oid_text(&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]).as_deref(),
            Some("1.2.840.10045.2.1")
        );
        assert_eq!(oid_text(&[0x86]), None);
        assert_eq!(describe(&[0x02, 0x01, 0x02]).as_deref(), Some("INTEGER 2"));
        assert_eq!(
            describe(&[0x13, 0x02, b'U', b'S']).as_deref(),
            Some("\"US\"")
        );
        assert_eq!(describe(&[0x02, 0x05, 1]), None);
        assert_eq!(
            value("version number", &[0x02, 0x01, 0x02]).as_deref(),
            Some("INTEGER 2 (v3)")
        );
        assert_eq!(
            value("serialNumber", &[0x02, 0x01, 0x02]).as_deref(),
            Some("INTEGER 2")
        );
    }
}
