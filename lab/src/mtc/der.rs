//! The DER an MTC issuer writes (RFC 5280 §4.1 with the draft's §"Certificate Format"): the
//! TBSCertificate, the TBSCertificateLogEntry built from the same fields, and the certificate
//! around an MTCProof. rcgen cannot write these (no id-alg-mtcProof, no CA-ID issuer), so the
//! fields are written here.

use std::net::IpAddr;

use sha2::{Digest, Sha256};

use tls13lab::crypto::cert::mtc::{TrustAnchorId, ID_RDNA_TRUST_ANCHOR_ID, MTC_PROOF_ALGORITHM};

pub(crate) use crate::certgen::der_wrap as tlv;

/// A positive INTEGER.
fn integer(v: u64) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count().min(7);
    let mut body = Vec::new();
    if bytes[skip] & 0x80 != 0 {
        body.push(0);
    }
    body.extend_from_slice(&bytes[skip..]);
    tlv(0x02, &body)
}

/// UTCTime through 2049, GeneralizedTime after (RFC 5280 §4.1.2.5).
fn time(unix: u64) -> Vec<u8> {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // H. Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let hms = format!(
        "{m:02}{d:02}{:02}{:02}{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if (1950..2050).contains(&y) {
        tlv(0x17, format!("{:02}{hms}", y % 100).as_bytes())
    } else {
        tlv(0x18, format!("{y:04}{hms}").as_bytes())
    }
}

/// The CA ID as a Name (§"Certification Authority Identifiers", experimental form): one RDN,
/// id-rdna-trustAnchorID (1.3.6.1.4.1.44363.47.1), UTF8String of the ASCII ID.
pub(crate) fn ca_name(ca_id: &TrustAnchorId) -> Vec<u8> {
    let atv = [
        tlv(0x06, ID_RDNA_TRUST_ANCHOR_ID),
        tlv(0x0c, ca_id.to_ascii().as_bytes()),
    ]
    .concat();
    tlv(0x30, &tlv(0x31, &tlv(0x30, &atv)))
}

/// CN=`cn` (id-at-commonName 2.5.4.3, UTF8String).
fn cn_name(cn: &str) -> Vec<u8> {
    let atv = [tlv(0x06, &[0x55, 0x04, 0x03]), tlv(0x0c, cn.as_bytes())].concat();
    tlv(0x30, &tlv(0x31, &tlv(0x30, &atv)))
}

/// `[3] EXPLICIT Extensions`: subjectAltName (dNSName / iPAddress) and extKeyUsage serverAuth
/// (if `server_auth`) + clientAuth.
fn extensions(names: &[String], server_auth: bool) -> Vec<u8> {
    let general_names: Vec<u8> = names
        .iter()
        .flat_map(|n| match n.parse::<IpAddr>() {
            Ok(IpAddr::V4(a)) => tlv(0x87, &a.octets()),
            Ok(IpAddr::V6(a)) => tlv(0x87, &a.octets()),
            Err(_) => tlv(0x82, n.as_bytes()),
        })
        .collect();
    let san = tlv(
        0x30,
        &[
            tlv(0x06, &[0x55, 0x1d, 0x11]),
            tlv(0x04, &tlv(0x30, &general_names)),
        ]
        .concat(),
    );
    // id-kp-serverAuth 1.3.6.1.5.5.7.3.1, id-kp-clientAuth .2
    let mut kps = Vec::new();
    if server_auth {
        kps.extend(tlv(0x06, &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01]));
    }
    kps.extend(tlv(0x06, &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02]));
    let eku = tlv(
        0x30,
        &[tlv(0x06, &[0x55, 0x1d, 0x25]), tlv(0x04, &tlv(0x30, &kps))].concat(),
    );
    tlv(0xa3, &tlv(0x30, &[san, eku].concat()))
}

/// The fields an entry and its certificate share.
pub(crate) struct Fields {
    pub version: Vec<u8>,
    pub issuer: Vec<u8>,
    pub validity: Vec<u8>,
    pub subject: Vec<u8>,
    pub spki: Vec<u8>,
    pub extensions: Vec<u8>,
}

impl Fields {
    pub(crate) fn new(
        ca_id: &TrustAnchorId,
        spki_der: &[u8],
        names: &[String],
        not_before: u64,
        not_after: u64,
        server_auth: bool,
    ) -> Fields {
        Fields {
            version: tlv(0xa0, &integer(2)),
            issuer: ca_name(ca_id),
            validity: tlv(0x30, &[time(not_before), time(not_after)].concat()),
            subject: cn_name(names.first().map_or("", String::as_str)),
            spki: spki_der.to_vec(),
            extensions: extensions(names, server_auth),
        }
    }

    /// The TBSCertificate with this serial (§"Certificate Format").
    pub(crate) fn tbs(&self, serial: u64) -> Vec<u8> {
        tlv(
            0x30,
            &[
                &self.version[..],
                &integer(serial),
                MTC_PROOF_ALGORITHM,
                &self.issuer,
                &self.validity,
                &self.subject,
                &self.spki,
                &self.extensions,
            ]
            .concat(),
        )
    }

    /// The MTCLogEntry (§"Log Entries"), written from the fields (not from a TBSCertificate),
    /// with no extensions: the core's `tbs_log_entry` must give the same bytes.
    pub(crate) fn log_entry(&self) -> Option<Vec<u8>> {
        // The SPKI's AlgorithmIdentifier: the first element inside its SEQUENCE.
        let inner = self.spki.get(2..)?;
        let spki_body = if self.spki.get(1)? & 0x80 != 0 {
            let n = usize::from(self.spki[1] & 0x7f);
            self.spki.get(2 + n..)?
        } else {
            inner
        };
        let alg_len = usize::from(*spki_body.get(1)?);
        if alg_len >= 0x80 {
            return None;
        }
        let alg = spki_body.get(..2 + alg_len)?;
        let mut e = vec![0, 0]; // extensions<0..2^16-1>: empty
        e.extend_from_slice(&1u16.to_be_bytes()); // tbs_cert_entry
        e.extend_from_slice(&self.version);
        e.extend_from_slice(&self.issuer);
        e.extend_from_slice(&self.validity);
        e.extend_from_slice(&self.subject);
        e.extend_from_slice(alg);
        e.extend_from_slice(&tlv(0x04, &Sha256::digest(&self.spki)));
        e.extend_from_slice(&self.extensions);
        Some(e)
    }
}

/// Certificate ::= SEQUENCE { tbs, id-alg-mtcProof, BIT STRING(MTCProof) }.
pub fn certificate(tbs: &[u8], proof: &[u8]) -> Vec<u8> {
    let bits = [&[0u8][..], proof].concat();
    tlv(
        0x30,
        &[tbs, MTC_PROOF_ALGORITHM, &tlv(0x03, &bits)].concat(),
    )
}
