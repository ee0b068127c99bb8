//! Trust anchor IDs (draft-ietf-tls-trust-anchor-ids): the `trust_anchors` extension's lists,
//! the IDs' three forms, and trust anchor ranges.
//!
//! ```text
//! opaque TrustAnchorID<1..2^8-1>;
//! TrustAnchorID RequestedTrustAnchorList<0..2^16-1>;   ClientHello, CertificateRequest
//! TrustAnchorID AvailableTrustAnchorList<1..2^16-1>;   EncryptedExtensions
//! (empty extension_data)                               the first CertificateEntry
//!
//! struct { CertificatePropertyType type; opaque data<0..2^16-1>; } CertificateProperty;
//! CertificateProperty CertificatePropertyList<0..2^16-1>;   a path's configuration (§6)
//! ```
//!
//! The extension has no IANA code point yet; BoringSSL uses 0xca34, which is the default here
//! ([`DEFAULT_CODE_POINT`]), and both sides take another from their configuration. The
//! message layer therefore carries it as an unknown extension; the client and server read its
//! body with [`decode_requested`] and [`decode_available`].

use crate::messages::codec::Reader;
use crate::messages::enums::ExtensionType;
use crate::messages::DecodeError;

/// The PEM label of a CertificatePropertyList (§6.4, "application/pem-certificate-chain-with-
/// properties": the properties, then the chain leaf first).
pub const PROPERTIES_PEM_LABEL: &str = "CERTIFICATE PROPERTIES";

/// The properties in a chain-with-properties PEM (§6.4), if it has a CERTIFICATE PROPERTIES
/// block; an error if it has two or one that does not decode.
pub fn properties_from_pem(text: &str) -> Result<Option<CertificateProperties>, String> {
    let blocks = crate::crypto::cert::pem_blocks(text, PROPERTIES_PEM_LABEL)
        .ok_or_else(|| format!("{PROPERTIES_PEM_LABEL}: not base64 or unterminated"))?;
    match blocks.as_slice() {
        [] => Ok(None),
        [b] => CertificateProperties::decode(b)
            .map(Some)
            .map_err(|e| format!("{PROPERTIES_PEM_LABEL}: {e}")),
        _ => Err(format!("more than one {PROPERTIES_PEM_LABEL} block")),
    }
}

/// BoringSSL's experimental code point for `trust_anchors`.
pub const DEFAULT_CODE_POINT: ExtensionType = ExtensionType::TrustAnchors;

/// The extension_data of a list: each ID as `opaque<1..255>`, all in `<..2^16-1>`.
pub fn encode_list(ids: &[Vec<u8>]) -> Vec<u8> {
    let inner: usize = ids.iter().map(|id| 1 + id.len()).sum();
    let mut out = Vec::with_capacity(2 + inner);
    out.extend_from_slice(&(inner.min(0xffff) as u16).to_be_bytes());
    for id in ids {
        out.push(id.len() as u8);
        out.extend_from_slice(id);
    }
    out
}

fn decode_list(body: &[u8], what: &'static str) -> Result<Vec<Vec<u8>>, DecodeError> {
    let mut r = Reader::new(body);
    let mut list = r.sub_u16(what)?;
    let mut ids = Vec::new();
    while !list.is_empty() {
        let mut id = list.sub_u8("TrustAnchorID")?.at_least(1, "TrustAnchorID")?;
        ids.push(id.rest().to_vec());
    }
    r.finish(what)?;
    Ok(ids)
}

/// Whether a received Certificate says its path matched a trust anchor we asked for (§4.2): an
/// empty `trust_anchors` (at `code_point`) in the first entry. Anywhere else, or with a body,
/// it is illegal_parameter; when we did not ask (`asked` false) it is unsupported_extension
/// (RFC 8446 §4.2: Certificate extensions answer the ClientHello or CertificateRequest).
pub fn certificate_matched(
    entries: &[crate::messages::handshake::CertificateEntry],
    code_point: ExtensionType,
    asked: bool,
) -> Result<bool, crate::error::Error> {
    use crate::messages::extensions::Extension;
    let mut matched = false;
    for (i, entry) in entries.iter().enumerate() {
        for e in entry.extensions.iter().filter(|e| e.typ() == code_point) {
            match e {
                _ if !asked => {
                    return Err(
                        crate::error::PeerMisbehaved::UnsolicitedExtension(code_point).into(),
                    )
                }
                Extension::Unknown { body, .. } if i == 0 && body.is_empty() => matched = true,
                _ => {
                    return Err(crate::error::PeerMisbehaved::IllegalExtension(
                        "trust_anchors in Certificate: non-empty or not in the first entry",
                    )
                    .into())
                }
            }
        }
    }
    Ok(matched)
}

/// A RequestedTrustAnchorList (ClientHello, CertificateRequest): may be empty.
pub fn decode_requested(body: &[u8]) -> Result<Vec<Vec<u8>>, DecodeError> {
    decode_list(body, "RequestedTrustAnchorList")
}

/// An AvailableTrustAnchorList (EncryptedExtensions): must not be empty.
pub fn decode_available(body: &[u8]) -> Result<Vec<Vec<u8>>, DecodeError> {
    let ids = decode_list(body, "AvailableTrustAnchorList")?;
    if ids.is_empty() {
        return Err(DecodeError::Empty {
            what: "AvailableTrustAnchorList",
        });
    }
    Ok(ids)
}

/// An ID's binary form from its ASCII form, a relative OID under 1.3.6.1.4.1 in dotted
/// decimal (`32473.1` → `81 fd 59 01`): each component base-128, most significant first.
pub fn from_ascii(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for part in text.trim().split('.') {
        let v: u64 = part
            .parse()
            .map_err(|_| format!("trust anchor ID {text:?}: {part:?} is not a number"))?;
        let mut groups = Vec::new();
        let mut x = v;
        loop {
            groups.push((x & 0x7f) as u8);
            x >>= 7;
            if x == 0 {
                break;
            }
        }
        for (i, g) in groups.iter().rev().enumerate() {
            out.push(if i + 1 < groups.len() { g | 0x80 } else { *g });
        }
    }
    if out.is_empty() || out.len() > 255 {
        return Err(format!("trust anchor ID {text:?}: 1 to 255 bytes"));
    }
    Ok(out)
}

/// The ASCII form of a binary ID; hex when it is not a whole relative OID.
pub fn to_ascii(id: &[u8]) -> String {
    let mut parts = Vec::new();
    let mut v: u64 = 0;
    let mut started = false;
    for &b in id {
        if v >= 1 << 57 || (!started && b == 0x80) {
            return hex(id);
        }
        started = true;
        v = (v << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            parts.push(v.to_string());
            v = 0;
            started = false;
        }
    }
    if started || parts.is_empty() {
        return hex(id);
    }
    parts.join(".")
}

/// A trust anchor range (§3.1): every ID that is `base` followed by one component in
/// `min..=max`, e.g. the versions of a trust anchor group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustAnchorRange {
    /// The ID the range extends (binary form).
    pub base: Vec<u8>,
    /// The smallest last component.
    pub min: u64,
    /// The largest last component.
    pub max: u64,
}

impl TrustAnchorRange {
    /// Whether `id` is in the range.
    pub fn contains(&self, id: &[u8]) -> bool {
        range_contains(&self.base, self.min, self.max, id)
    }
}

/// A certification path's CertificatePropertyList (§6): what the server needs to take part in
/// trust anchor negotiation. Unknown property types are ignored as §6 requires but kept, so
/// a list re-encodes to its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertificateProperties {
    /// `trust_anchor_id` (0): the ID of the path's trust anchor.
    pub trust_anchor_id: Option<Vec<u8>>,
    /// `trust_anchor_group_inclusions` (1): groups that also contain that trust anchor.
    pub group_inclusions: Vec<TrustAnchorRange>,
    /// `trust_anchor_negotiation` (2): send this path only when the peer asked for it, never
    /// as a fallback (§6.3), as for a landmark-relative Merkle Tree Certificate.
    pub negotiation_only: bool,
    /// Properties of other types, in order.
    pub other: Vec<(u16, Vec<u8>)>,
}

impl CertificateProperties {
    /// Properties with only a trust anchor ID.
    pub fn with_id(id: Vec<u8>) -> CertificateProperties {
        CertificateProperties {
            trust_anchor_id: Some(id),
            ..CertificateProperties::default()
        }
    }

    /// Parses a CertificatePropertyList: sorted by type with no type twice, or it is a syntax
    /// error (§6); a known property's data must have its form.
    pub fn decode(b: &[u8]) -> Result<CertificateProperties, DecodeError> {
        let mut r = Reader::new(b);
        let mut list = r.sub_u16("CertificatePropertyList")?;
        r.finish("CertificatePropertyList")?;
        let mut p = CertificateProperties::default();
        let mut last: Option<u16> = None;
        while !list.is_empty() {
            let typ = list.u16("CertificatePropertyType")?;
            if last.is_some_and(|l| l >= typ) {
                return Err(DecodeError::Invalid {
                    what: "CertificatePropertyList order",
                });
            }
            last = Some(typ);
            let mut data = list.sub_u16("CertificateProperty.data")?;
            match typ {
                0 => {
                    let id = data.rest();
                    if id.is_empty() || id.len() > 255 {
                        return Err(DecodeError::Invalid {
                            what: "trust_anchor_id",
                        });
                    }
                    p.trust_anchor_id = Some(id.to_vec());
                }
                1 => {
                    let mut ranges = data.sub_u16("TrustAnchorRangeList")?;
                    data.finish("trust_anchor_group_inclusions")?;
                    if ranges.is_empty() {
                        return Err(DecodeError::Empty {
                            what: "TrustAnchorRangeList",
                        });
                    }
                    while !ranges.is_empty() {
                        let base = ranges.sub_u8("TrustAnchorRange.base")?;
                        let base = base.at_least(1, "TrustAnchorRange.base")?.rest().to_vec();
                        let min = u64::from_be_bytes(ranges.array("TrustAnchorRange.min")?);
                        let max = u64::from_be_bytes(ranges.array("TrustAnchorRange.max")?);
                        p.group_inclusions.push(TrustAnchorRange { base, min, max });
                    }
                }
                2 => {
                    data.finish("trust_anchor_negotiation")?;
                    p.negotiation_only = true;
                }
                _ => p.other.push((typ, data.rest().to_vec())),
            }
        }
        Ok(p)
    }

    /// The CertificatePropertyList, sorted by type.
    pub fn encode(&self) -> Vec<u8> {
        let mut props: Vec<(u16, Vec<u8>)> = Vec::new();
        if let Some(id) = &self.trust_anchor_id {
            props.push((0, id.clone()));
        }
        if !self.group_inclusions.is_empty() {
            let mut l = Vec::new();
            for g in &self.group_inclusions {
                l.push(g.base.len() as u8);
                l.extend_from_slice(&g.base);
                l.extend_from_slice(&g.min.to_be_bytes());
                l.extend_from_slice(&g.max.to_be_bytes());
            }
            let mut d = (l.len() as u16).to_be_bytes().to_vec();
            d.extend_from_slice(&l);
            props.push((1, d));
        }
        if self.negotiation_only {
            props.push((2, Vec::new()));
        }
        props.extend(self.other.iter().cloned());
        props.sort_by_key(|p| p.0);
        let mut body = Vec::new();
        for (t, d) in &props {
            body.extend_from_slice(&t.to_be_bytes());
            body.extend_from_slice(&(d.len() as u16).to_be_bytes());
            body.extend_from_slice(d);
        }
        let mut out = (body.len() as u16).to_be_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    /// Whether a peer's RequestedTrustAnchorList asks for this path (§4.2): its ID is listed,
    /// or one of its group inclusions contains a listed ID.
    pub fn requested_by(&self, requested: &[Vec<u8>]) -> bool {
        // §3.2: a path without a trust anchor ID does not take part, groups or not.
        self.trust_anchor_id.is_some()
            && requested.iter().any(|r| {
                self.trust_anchor_id.as_ref() == Some(r)
                    || self.group_inclusions.iter().any(|g| g.contains(r))
            })
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether the trust anchor range (`base`, `min`, `max`) contains `id` (§3.1's procedure).
pub fn range_contains(base: &[u8], min: u64, max: u64, id: &[u8]) -> bool {
    // 1. base must not end inside a component.
    if base.last().is_some_and(|b| b & 0x80 != 0) {
        return false;
    }
    // 2. base is a prefix of id.
    let Some(rest) = id.strip_prefix(base) else {
        return false;
    };
    // 3. rest is one minimally encoded component.
    let Some((last, init)) = rest.split_last() else {
        return false;
    };
    if last & 0x80 != 0 || init.iter().any(|b| b & 0x80 == 0) || rest[0] == 0x80 {
        return false;
    }
    let mut v: u64 = 0;
    for &b in rest {
        if v >= 1 << 57 {
            return false;
        }
        v = (v << 7) + u64::from(b & 0x7f);
    }
    // 4.
    min <= v && v <= max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drafts_example_id() {
        // §3: PEN 32473, ID 32473.1: binary 81 fd 59 01.
        assert_eq!(from_ascii("32473.1").unwrap(), [0x81, 0xfd, 0x59, 0x01]);
        assert_eq!(to_ascii(&[0x81, 0xfd, 0x59, 0x01]), "32473.1");
        assert!(from_ascii("").is_err() && from_ascii("1.x").is_err());
        assert_eq!(to_ascii(&[0x81]), "81", "a cut component is shown as hex");
    }

    #[test]
    fn lists_round_trip_and_are_bounded() {
        let ids = vec![vec![1], vec![0x81, 0xfd, 0x59, 0x01]];
        let body = encode_list(&ids);
        assert_eq!(decode_requested(&body).unwrap(), ids);
        assert_eq!(decode_available(&body).unwrap(), ids);
        assert_eq!(
            decode_requested(&encode_list(&[])).unwrap(),
            Vec::<Vec<u8>>::new()
        );
        assert!(decode_available(&encode_list(&[])).is_err());
        for cut in 0..body.len() {
            assert!(decode_requested(&body[..cut]).is_err(), "cut at {cut}");
        }
        assert!(decode_requested(&[&body[..], &[0]].concat()).is_err());
        // An empty TrustAnchorID is not one (<1..2^8-1>).
        assert!(decode_requested(&[0, 1, 0]).is_err());
    }

    #[test]
    fn the_drafts_certificate_properties_example() {
        // §6.4's example: trust_anchor_id 32473.1; inclusions 2187.2.100-200 and
        // 32473.3.42-MAX; trust_anchor_negotiation.
        let pem = "ADsAAAAEgf1ZAQABACsAKQORCwIAAAAAAAAAZAAAAAAAAADIBIH9WQMAAAAAAAAA\n\
                   Kv//////////AAIAAA==";
        let b = crate::crypto::cert::base64_decode(pem).unwrap();
        let p = CertificateProperties::decode(&b).unwrap();
        assert_eq!(p.trust_anchor_id, Some(from_ascii("32473.1").unwrap()));
        assert_eq!(
            p.group_inclusions,
            [
                TrustAnchorRange {
                    base: from_ascii("2187.2").unwrap(),
                    min: 100,
                    max: 200
                },
                TrustAnchorRange {
                    base: from_ascii("32473.3").unwrap(),
                    min: 42,
                    max: u64::MAX
                },
            ]
        );
        assert!(p.negotiation_only && p.other.is_empty());
        assert_eq!(p.encode(), b);
        for cut in 0..b.len() {
            assert!(
                CertificateProperties::decode(&b[..cut]).is_err(),
                "cut {cut}"
            );
        }
        let id = |s: &str| from_ascii(s).unwrap();
        assert!(p.requested_by(&[id("9.9"), id("32473.1")]));
        assert!(p.requested_by(&[id("2187.2.150")]));
        assert!(p.requested_by(&[id("32473.3.1000000")]));
        assert!(!p.requested_by(&[id("2187.2.99"), id("32473.3"), id("32473.1.0")]));
        assert!(!p.requested_by(&[]));
    }

    #[test]
    fn certificate_properties_out_of_order_or_twice_are_refused() {
        // §6: sorted by type, no type twice; unknown types kept.
        let list = |props: &[(u16, &[u8])]| {
            let mut body = Vec::new();
            for (t, d) in props {
                body.extend_from_slice(&t.to_be_bytes());
                body.extend_from_slice(&(d.len() as u16).to_be_bytes());
                body.extend_from_slice(d);
            }
            [&(body.len() as u16).to_be_bytes()[..], &body].concat()
        };
        assert!(CertificateProperties::decode(&list(&[(2, b""), (0, b"\x01")])).is_err());
        assert!(CertificateProperties::decode(&list(&[(0, b"\x01"), (0, b"\x02")])).is_err());
        assert!(CertificateProperties::decode(&list(&[(0, b"")])).is_err());
        assert!(CertificateProperties::decode(&list(&[(2, b"x")])).is_err());
        let b = list(&[(0, b"\x01"), (7, b"future")]);
        let p = CertificateProperties::decode(&b).unwrap();
        assert_eq!(p.other, [(7, b"future".to_vec())]);
        assert_eq!(p.encode(), b);
        assert_eq!(
            CertificateProperties::decode(&list(&[])).unwrap(),
            CertificateProperties::default()
        );
    }

    #[test]
    fn ranges_as_the_draft_checks_them() {
        let base = from_ascii("32473.2").unwrap();
        let id = |v: &str| from_ascii(&format!("32473.2.{v}")).unwrap();
        assert!(range_contains(&base, 0, u64::MAX, &id("0")));
        assert!(range_contains(&base, 3, 5, &id("4")));
        assert!(!range_contains(&base, 3, 5, &id("6")));
        assert!(
            !range_contains(&base, 0, u64::MAX, &base),
            "no component after the base"
        );
        assert!(
            !range_contains(&base, 0, u64::MAX, &id("1.2")),
            "two components"
        );
        assert!(
            !range_contains(&[0x81], 0, u64::MAX, &[0x81, 0x01]),
            "base ends mid-component"
        );
        // A non-minimal component (leading 0x80) is refused.
        assert!(!range_contains(
            &base,
            0,
            u64::MAX,
            &[&base[..], &[0x80, 0x01]].concat()
        ));
    }
}
