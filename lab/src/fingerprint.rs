//! TLS fingerprints: what middleboxes, bot filters and threat feeds compute from a hello.
//!
//! - **JA3** (Salesforce, 2017) of a ClientHello: the MD5 of
//!   `SSLVersion,Ciphers,Extensions,EllipticCurves,EllipticCurvePointFormats`, each list in wire
//!   order as decimal values joined by `-`, GREASE values (RFC 8701) left out. The version is
//!   `legacy_version` (771 for every TLS 1.3 hello); the curves are supported_groups.
//! - **JA4** (FoxIO, technical_details/JA4.md) of a ClientHello: `t13d1516h2_8daaf6152771_e5627efa2ab1`
//!   — protocol, highest supported version, SNI or not, cipher and extension counts, the first
//!   ALPN's first and last characters; then the truncated SHA-256 of the sorted cipher list; then
//!   of the sorted extension list (SNI and ALPN left out) followed by the signature algorithms
//!   in wire order. `_r` is the unhashed form, `_o`/`_ro` keep the wire order (and SNI, ALPN).
//! - **JA4S** (FoxIO, technical_details/JA4S.md) of a ServerHello (or HelloRetryRequest):
//!   version, extension count, the ALPN chosen, the suite in hex and the truncated SHA-256 of
//!   the extensions in wire order. In TLS 1.3 the ALPN is in EncryptedExtensions, so a
//!   ServerHello's is `00`.
//!
//! Fingerprints are not TLS: the hellos are read here with the core's bounded [`Reader`] only
//! as far as the fingerprints need (every length prefix checked, nothing else interpreted), so a
//! hello the core would reject still gets its fingerprints.

use md5::Md5;
use serde::Serialize;
use sha2::{Digest, Sha256};

use tls13lab::messages::codec::Reader;

use crate::hello::is_grease;

/// The fingerprints of one ClientHello.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClientFingerprints {
    /// JA3: MD5 of [`ja3_full`](Self::ja3_full), hex.
    pub ja3: String,
    /// JA3's string: `version,ciphers,extensions,groups,point formats`.
    pub ja3_full: String,
    /// JA4: `t13d1516h2_8daaf6152771_e5627efa2ab1`.
    pub ja4: String,
    /// JA4_r: JA4 with its lists unhashed (sorted).
    pub ja4_r: String,
    /// JA4_o: JA4 over the lists in wire order (SNI and ALPN kept).
    pub ja4_o: String,
    /// JA4_ro: JA4_o unhashed.
    pub ja4_ro: String,
}

/// The fingerprints of one ServerHello.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServerFingerprints {
    /// JA4S: `t130200_1301_234ea6891581`.
    pub ja4s: String,
    /// JA4S_r: the extension list unhashed.
    pub ja4s_r: String,
}

/// What a ClientHello's fingerprints read from it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientHelloFields {
    /// legacy_version.
    pub legacy_version: u16,
    /// cipher_suites, in wire order (GREASE included).
    pub ciphers: Vec<u16>,
    /// Extension types, in wire order (GREASE included).
    pub extensions: Vec<u16>,
    /// supported_groups (10).
    pub groups: Vec<u16>,
    /// ec_point_formats (11).
    pub point_formats: Vec<u8>,
    /// signature_algorithms (13).
    pub sigalgs: Vec<u16>,
    /// supported_versions (43), when present.
    pub versions: Option<Vec<u16>>,
    /// The first protocol of application_layer_protocol_negotiation (16), when present.
    pub alpn: Option<Vec<u8>>,
}

const SNI: u16 = 0x0000;
const GROUPS: u16 = 0x000a;
const POINT_FORMATS: u16 = 0x000b;
const SIGALGS: u16 = 0x000d;
const ALPN: u16 = 0x0010;
const VERSIONS: u16 = 0x002b;

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

/// The body of a handshake message of type `typ` (its 4-byte header checked).
fn body(msg: &[u8], typ: u8, what: &str) -> Result<Vec<u8>, String> {
    let mut r = Reader::new(msg);
    let t = r.u8("msg_type").map_err(err)?;
    if t != typ {
        return Err(format!("not a {what} (handshake type {t})"));
    }
    let b = r.sub_u24("handshake body").map_err(err)?;
    r.finish("handshake message").map_err(err)?;
    let mut b = b;
    Ok(b.rest().to_vec())
}

/// A list of u16 values behind a u16 length (supported_groups, signature_algorithms).
fn u16_list(body: &[u8], what: &'static str) -> Result<Vec<u16>, String> {
    let mut r = Reader::new(body);
    let mut l = r.sub_u16(what).map_err(err)?;
    let mut v = Vec::new();
    while !l.is_empty() {
        v.push(l.u16(what).map_err(err)?);
    }
    r.finish(what).map_err(err)?;
    Ok(v)
}

/// The fields of a ClientHello (`msg`: the handshake message, 4-byte header included).
pub fn client_hello_fields(msg: &[u8]) -> Result<ClientHelloFields, String> {
    let b = body(msg, 1, "ClientHello")?;
    let mut r = Reader::new(&b);
    let mut f = ClientHelloFields {
        legacy_version: r.u16("legacy_version").map_err(err)?,
        ..ClientHelloFields::default()
    };
    r.bytes(32, "random").map_err(err)?;
    r.sub_u8("legacy_session_id").map_err(err)?;
    let mut suites = r.sub_u16("cipher_suites").map_err(err)?;
    while !suites.is_empty() {
        f.ciphers.push(suites.u16("cipher_suite").map_err(err)?);
    }
    r.sub_u8("legacy_compression_methods").map_err(err)?;
    // A hello without extensions (RFC 5246 §7.4.1.2 allows it) ends here.
    if r.is_empty() {
        return Ok(f);
    }
    let mut exts = r.sub_u16("extensions").map_err(err)?;
    r.finish("ClientHello").map_err(err)?;
    while !exts.is_empty() {
        let typ = exts.u16("extension_type").map_err(err)?;
        let mut e = exts.sub_u16("extension_data").map_err(err)?;
        let data = e.rest();
        f.extensions.push(typ);
        match typ {
            GROUPS => f.groups = u16_list(data, "supported_groups")?,
            SIGALGS => f.sigalgs = u16_list(data, "signature_algorithms")?,
            POINT_FORMATS => {
                let mut r = Reader::new(data);
                f.point_formats = r.vec_u8("ec_point_formats").map_err(err)?;
                r.finish("ec_point_formats").map_err(err)?;
            }
            VERSIONS => {
                let mut r = Reader::new(data);
                let mut l = r.sub_u8("supported_versions").map_err(err)?;
                let mut v = Vec::new();
                while !l.is_empty() {
                    v.push(l.u16("version").map_err(err)?);
                }
                r.finish("supported_versions").map_err(err)?;
                f.versions = Some(v);
            }
            ALPN => {
                let mut r = Reader::new(data);
                let mut l = r.sub_u16("protocol_name_list").map_err(err)?;
                f.alpn = Some(if l.is_empty() {
                    Vec::new()
                } else {
                    l.vec_u8("protocol_name").map_err(err)?
                });
            }
            _ => {}
        }
    }
    Ok(f)
}

fn md5_hex(s: &str) -> String {
    hex(&Md5::digest(s.as_bytes()))
}

/// The first 12 hex digits of SHA-256 (JA4's truncated hash).
fn sha256_12(s: &str) -> String {
    hex(&Sha256::digest(s.as_bytes()))[..12].to_string()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn no_grease(v: &[u16]) -> Vec<u16> {
    v.iter().copied().filter(|x| !is_grease(*x)).collect()
}

fn dec<T: ToString>(v: &[T]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("-")
}

fn hex_list(v: &[u16]) -> String {
    v.iter()
        .map(|x| format!("{x:04x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// JA4's two-character version (JA4.md "TLS and DTLS Version").
fn version_code(v: u16) -> &'static str {
    match v {
        0x0304 => "13",
        0x0303 => "12",
        0x0302 => "11",
        0x0301 => "10",
        0x0300 => "s3",
        0x0002 => "s2",
        0xfeff => "d1",
        0xfefd => "d2",
        0xfefc => "d3",
        _ => "00",
    }
}

/// JA4's ALPN characters (JA4.md "ALPN Extension Value"): the first and last characters of
/// the first protocol (one character: twice); `00` without one; when the first or last byte
/// is not alphanumeric, the first and last hex digits of the whole value instead. (Implementations
/// differ on such values: the `ja4plus` package writes `9` for a byte ≥ 0x80 and `99` for a
/// control byte; real clients send printable protocol names, on which all agree.)
fn alpn_code(alpn: Option<&[u8]>) -> String {
    let Some((a, first, last)) = alpn.and_then(|a| Some((a, a.first()?, a.last()?))) else {
        return "00".into();
    };
    if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() {
        format!("{}{}", *first as char, *last as char)
    } else {
        let h = hex(a);
        format!("{}{}", &h[..1], &h[h.len() - 1..])
    }
}

/// JA3 of a ClientHello's fields: (hash, full string).
pub fn ja3(f: &ClientHelloFields) -> (String, String) {
    let full = format!(
        "{},{},{},{},{}",
        f.legacy_version,
        dec(&no_grease(&f.ciphers)),
        dec(&no_grease(&f.extensions)),
        dec(&no_grease(&f.groups)),
        dec(&f.point_formats)
    );
    (md5_hex(&full), full)
}

/// JA4 of a ClientHello's fields: (JA4, JA4_r, JA4_o, JA4_ro).
pub fn ja4(f: &ClientHelloFields) -> (String, String, String, String) {
    let ciphers = no_grease(&f.ciphers);
    let exts = no_grease(&f.extensions);
    let version = match &f.versions {
        Some(v) => no_grease(v).into_iter().max().unwrap_or(f.legacy_version),
        None => f.legacy_version,
    };
    let a = format!(
        "t{}{}{:02}{:02}{}",
        version_code(version),
        if exts.contains(&SNI) { 'd' } else { 'i' },
        ciphers.len().min(99),
        exts.len().min(99),
        alpn_code(f.alpn.as_deref())
    );
    let mut sorted_ciphers = ciphers.clone();
    sorted_ciphers.sort_unstable();
    let mut sorted_exts: Vec<u16> = exts
        .iter()
        .copied()
        .filter(|e| *e != SNI && *e != ALPN)
        .collect();
    sorted_exts.sort_unstable();
    let sigalgs = no_grease(&f.sigalgs);
    // "If there are no signature algorithms ... the string ends without an underscore."
    let with_sigalgs = |list: &[u16]| {
        if sigalgs.is_empty() {
            hex_list(list)
        } else {
            format!("{}_{}", hex_list(list), hex_list(&sigalgs))
        }
    };
    // An empty list hashes to twelve zeros, not to SHA-256 of nothing (JA4.md).
    let b = |list: &[u16]| {
        if list.is_empty() {
            "000000000000".to_string()
        } else {
            sha256_12(&hex_list(list))
        }
    };
    let c = |list: &[u16]| {
        if sorted_exts.is_empty() {
            "000000000000".to_string()
        } else {
            sha256_12(&with_sigalgs(list))
        }
    };
    (
        format!("{a}_{}_{}", b(&sorted_ciphers), c(&sorted_exts)),
        format!(
            "{a}_{}_{}",
            hex_list(&sorted_ciphers),
            with_sigalgs(&sorted_exts)
        ),
        format!("{a}_{}_{}", b(&ciphers), c(&exts)),
        format!("{a}_{}_{}", hex_list(&ciphers), with_sigalgs(&exts)),
    )
}

/// JA3 and JA4 of a ClientHello (`msg`: the handshake message, 4-byte header included).
pub fn client_hello(msg: &[u8]) -> Result<ClientFingerprints, String> {
    let f = client_hello_fields(msg)?;
    let (ja3, ja3_full) = ja3(&f);
    let (ja4, ja4_r, ja4_o, ja4_ro) = ja4(&f);
    Ok(ClientFingerprints {
        ja3,
        ja3_full,
        ja4,
        ja4_r,
        ja4_o,
        ja4_ro,
    })
}

/// JA4S of a ServerHello or HelloRetryRequest (`msg`: the handshake message, 4-byte header
/// included).
pub fn server_hello(msg: &[u8]) -> Result<ServerFingerprints, String> {
    let b = body(msg, 2, "ServerHello")?;
    let mut r = Reader::new(&b);
    let mut version = r.u16("legacy_version").map_err(err)?;
    r.bytes(32, "random").map_err(err)?;
    r.sub_u8("legacy_session_id_echo").map_err(err)?;
    let suite = r.u16("cipher_suite").map_err(err)?;
    r.u8("legacy_compression_method").map_err(err)?;
    let mut exts = Vec::new();
    let mut alpn: Option<Vec<u8>> = None;
    if !r.is_empty() {
        let mut l = r.sub_u16("extensions").map_err(err)?;
        r.finish("ServerHello").map_err(err)?;
        while !l.is_empty() {
            let typ = l.u16("extension_type").map_err(err)?;
            let mut e = l.sub_u16("extension_data").map_err(err)?;
            match typ {
                // selected_version (RFC 8446 §4.2.1).
                VERSIONS => version = e.u16("selected_version").map_err(err)?,
                ALPN => {
                    let mut p = e.sub_u16("protocol_name_list").map_err(err)?;
                    alpn = Some(p.vec_u8("protocol_name").map_err(err)?);
                }
                _ => {}
            }
            if !is_grease(typ) {
                exts.push(typ);
            }
        }
    }
    let a = format!(
        "t{}{:02}{}",
        version_code(version),
        exts.len().min(99),
        alpn_code(alpn.as_deref())
    );
    let hash = if exts.is_empty() {
        "000000000000".to_string()
    } else {
        sha256_12(&hex_list(&exts))
    };
    Ok(ServerFingerprints {
        ja4s: format!("{a}_{suite:04x}_{hash}"),
        ja4s_r: format!("{a}_{suite:04x}_{}", hex_list(&exts)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello with JA4.md's example lists: its ciphers, its extensions in its wire
    /// order, its signature algorithms, ALPN h2, plus GREASE in every list (which must not
    /// count), and supported_versions 1.3/1.2.
    fn spec_example() -> Vec<u8> {
        let ciphers: [u16; 16] = [
            0x0a0a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013,
            0xc014, 0x009c, 0x009d, 0x002f, 0x0035,
        ];
        let exts: [u16; 16] = [
            0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023, 0x0012,
            0x002b, 0xff01, 0x000b, 0x000a, 0x0015,
        ];
        let sigalgs: [u16; 8] = [
            0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601,
        ];
        let u16s = |v: &[u16]| -> Vec<u8> { v.iter().flat_map(|x| x.to_be_bytes()).collect() };
        let with_len = |b: Vec<u8>| -> Vec<u8> {
            let mut v = (b.len() as u16).to_be_bytes().to_vec();
            v.extend(b);
            v
        };
        let mut body = vec![3, 3];
        body.extend([7; 32]);
        body.push(0);
        body.extend(with_len(u16s(&ciphers)));
        body.extend([1, 0]);
        let mut e = Vec::new();
        let mut ext = |typ: u16, data: Vec<u8>| {
            e.extend(typ.to_be_bytes());
            e.extend(with_len(data));
        };
        ext(0x2a2a, Vec::new()); // GREASE extension: not counted
        for t in exts {
            let data = match t {
                0x0000 => with_len([vec![0], with_len(b"example.com".to_vec())].concat()),
                0x0010 => {
                    with_len([vec![2], b"h2".to_vec(), vec![8], b"http/1.1".to_vec()].concat())
                }
                0x000d => with_len(u16s(&[[0x1a1a].as_slice(), &sigalgs].concat())),
                0x000a => with_len(u16s(&[0x3a3a, 0x001d, 0x0017])),
                0x000b => vec![1, 0],
                0x002b => [vec![6], u16s(&[0x4a4a, 0x0304, 0x0303])].concat(),
                _ => Vec::new(),
            };
            ext(t, data);
        }
        body.extend(with_len(e));
        let mut msg = vec![1, 0];
        msg.extend((body.len() as u16).to_be_bytes());
        msg.extend(body);
        msg
    }

    #[test]
    fn ja4_of_the_specification_example() {
        // technical_details/JA4.md: "JA4 = t13d1516h2_8daaf6152771_e5627efa2ab1", and its
        // JA4_r, JA4_ro and JA4_o, character for character.
        let fp = client_hello(&spec_example()).unwrap();
        assert_eq!(fp.ja4, "t13d1516h2_8daaf6152771_e5627efa2ab1");
        assert_eq!(
            fp.ja4_r,
            "t13d1516h2_002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9_\
             0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01_\
             0403,0804,0401,0503,0805,0501,0806,0601"
        );
        assert_eq!(
            fp.ja4_ro,
            "t13d1516h2_1301,1302,1303,c02b,c02f,c02c,c030,cca9,cca8,c013,c014,009c,009d,002f,0035_\
             001b,0000,0033,0010,4469,0017,002d,000d,0005,0023,0012,002b,ff01,000b,000a,0015_\
             0403,0804,0401,0503,0805,0501,0806,0601"
        );
        assert_eq!(fp.ja4_o, "t13d1516h2_acb858a92679_18f69afefd3d");
    }

    #[test]
    fn ja3_leaves_grease_out() {
        let fp = client_hello(&spec_example()).unwrap();
        // Worked by hand from spec_example(): decimal, wire order, no 0x?a?a value.
        let want =
            "771,4865-4866-4867-49195-49199-49196-49200-52393-52392-49171-49172-156-157-47-53,\
                    27-0-51-16-17513-23-45-13-5-35-18-43-65281-11-10-21,29-23,0";
        assert_eq!(fp.ja3_full, want);
        assert_eq!(fp.ja3, md5_hex(want));
        // MD5 itself (RFC 1321 §A.5's test suite).
        assert_eq!(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
    }

    #[test]
    fn alpn_characters_follow_the_specification() {
        // JA4.md's examples.
        for (v, want) in [
            (&[0xab][..], "ab"),
            (&[0xab, 0xcd], "ad"),
            (&[0x30, 0xab], "3b"),
            (&[0x30, 0x31, 0xab, 0xcd], "3d"),
            (&[0x30, 0xab, 0xcd, 0x31], "01"),
            (b"h2", "h2"),
            (b"http/1.1", "h1"),
            (b"h", "hh"),
            (b"", "00"),
        ] {
            assert_eq!(alpn_code(Some(v)), want, "{v:02x?}");
        }
        assert_eq!(alpn_code(None), "00");
    }

    #[test]
    fn ja4s_of_the_specification_example() {
        // technical_details/JA4S.md: TLS 1.2, c030, extensions 0005,0017,ff01,0000.
        let mut body = vec![3, 3];
        body.extend([9; 32]);
        body.push(0);
        body.extend([0xc0, 0x30, 0]);
        let exts: Vec<u8> = [0x0005u16, 0x0017, 0xff01, 0x0000]
            .iter()
            .flat_map(|t| [t.to_be_bytes().to_vec(), vec![0, 0]].concat())
            .collect();
        body.extend((exts.len() as u16).to_be_bytes());
        body.extend(exts);
        let mut msg = vec![2, 0];
        msg.extend((body.len() as u16).to_be_bytes());
        msg.extend(body);
        let fp = server_hello(&msg).unwrap();
        assert_eq!(fp.ja4s, "t120400_c030_4e8089b08790");
        assert_eq!(fp.ja4s_r, "t120400_c030_0005,0017,ff01,0000");
    }

    #[test]
    fn malformed_hellos_are_errors_not_panics() {
        let msg = spec_example();
        for n in 0..msg.len() {
            assert!(client_hello(&msg[..n]).is_err(), "{n}");
        }
        assert!(client_hello(&[2, 0, 0, 0]).is_err());
        assert!(server_hello(&msg).is_err());
    }
}
