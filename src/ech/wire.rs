//! The bytes ECH adds to the handshake (RFC 9849 §5): the `encrypted_client_hello` extension
//! in its three shapes (ClientHello outer/inner, HelloRetryRequest, EncryptedExtensions), the
//! `ech_outer_extensions` list, and a ClientHello body split into its fields and extensions
//! without re-encoding anything (the AAD and the transcript need the exact bytes).

use crate::messages::codec::{DecodeError, Reader, Writer};
pub use crate::messages::ech::HpkeSymmetricCipherSuite;
use crate::messages::enums::{HpkeAeadId, HpkeKdfId};

/// `encrypted_client_hello` (RFC 9849 §5).
pub const ENCRYPTED_CLIENT_HELLO: u16 = 0xfe0d;
/// `ech_outer_extensions` (RFC 9849 §5.1): only ever inside EncodedClientHelloInner.
pub const ECH_OUTER_EXTENSIONS: u16 = 0xfd00;

/// ECHClientHello (RFC 9849 §5): the ClientHello extension's payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EchClientHello {
    /// In ClientHelloOuter: what the client-facing server needs to decrypt the inner one.
    Outer {
        /// The suite that sealed `payload`.
        suite: HpkeSymmetricCipherSuite,
        /// ECHConfigContents.key_config.config_id of the chosen ECHConfig.
        config_id: u8,
        /// The HPKE encapsulated key; empty in the ClientHelloOuter after a HelloRetryRequest.
        enc: Vec<u8>,
        /// The sealed EncodedClientHelloInner.
        payload: Vec<u8>,
    },
    /// In ClientHelloInner: empty, so that the server may answer it.
    Inner,
}

impl EchClientHello {
    /// Parses the extension_data of an `encrypted_client_hello` in a ClientHello. An unknown
    /// ECHClientHelloType is [`DecodeError::Invalid`]; the server answers it with
    /// illegal_parameter (RFC 9849 §7).
    pub fn decode(data: &[u8]) -> Result<EchClientHello, DecodeError> {
        let mut r = Reader::new(data);
        let v = match r.u8("ECHClientHelloType")? {
            0 => {
                let suite = HpkeSymmetricCipherSuite {
                    kdf_id: HpkeKdfId::from(r.u16("HpkeSymmetricCipherSuite.kdf_id")?),
                    aead_id: HpkeAeadId::from(r.u16("HpkeSymmetricCipherSuite.aead_id")?),
                };
                let config_id = r.u8("config_id")?;
                let enc = r.vec_u16("enc")?;
                let payload = r
                    .sub_u16("payload")?
                    .at_least(1, "payload")?
                    .rest()
                    .to_vec();
                EchClientHello::Outer {
                    suite,
                    config_id,
                    enc,
                    payload,
                }
            }
            1 => EchClientHello::Inner,
            _ => {
                return Err(DecodeError::Invalid {
                    what: "ECHClientHelloType",
                })
            }
        };
        r.finish("ECHClientHello")?;
        Ok(v)
    }

    /// The extension_data bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.write(&mut w);
        w.into_bytes()
    }

    /// Writes the extension_data, naming each part (type, cipher_suite, config_id, enc,
    /// payload) for the ledger's layouts.
    pub fn write(&self, w: &mut Writer) {
        match self {
            EchClientHello::Outer {
                suite,
                config_id,
                enc,
                payload,
            } => {
                w.span("type", |w| w.u8(0));
                w.span("cipher_suite", |w| {
                    w.u16(suite.kdf_id.to_repr());
                    w.u16(suite.aead_id.to_repr());
                });
                w.span("config_id", |w| w.u8(*config_id));
                w.span("enc", |w| w.len_u16(|w| w.bytes(enc)));
                w.span("payload", |w| w.len_u16(|w| w.bytes(payload)));
            }
            EchClientHello::Inner => w.span("type", |w| w.u8(1)),
        }
    }
}

/// `ExtensionType OuterExtensions<2..254>` (RFC 9849 §5.1).
pub fn decode_outer_extensions(data: &[u8]) -> Result<Vec<u16>, DecodeError> {
    let mut r = Reader::new(data);
    let mut list = r
        .sub_u8("OuterExtensions")?
        .at_least(2, "OuterExtensions")?;
    if list.remaining() % 2 != 0 {
        return Err(DecodeError::LengthNotMultiple {
            what: "OuterExtensions",
        });
    }
    let mut out = Vec::with_capacity(list.remaining() / 2);
    while !list.is_empty() {
        out.push(list.u16("ExtensionType")?);
    }
    r.finish("ech_outer_extensions")?;
    Ok(out)
}

/// The extension_data of `ech_outer_extensions` listing `types`.
pub fn encode_outer_extensions(types: &[u16]) -> Vec<u8> {
    let mut w = Writer::new();
    w.len_u8(|w| {
        for t in types {
            w.u16(*t);
        }
    });
    w.into_bytes()
}

/// ECHHelloRetryRequest (RFC 9849 §5): exactly 8 bytes, else decode_error (§6.1.4).
pub fn decode_hrr_confirmation(data: &[u8]) -> Result<[u8; 8], DecodeError> {
    data.try_into().map_err(|_| DecodeError::Invalid {
        what: "ECHHelloRetryRequest.confirmation",
    })
}

/// ECHEncryptedExtensions (RFC 9849 §5): `ECHConfigList retry_configs`, returned as the raw
/// ECHConfigList (its own 2-byte length included), which is what a client stores and retries
/// with. Only the outer shape is checked here: one non-empty `<1..2^16-1>` vector.
pub fn decode_retry_configs(data: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut r = Reader::new(data);
    r.sub_u16("retry_configs")?.at_least(1, "retry_configs")?;
    r.finish("ECHEncryptedExtensions")?;
    Ok(data.to_vec())
}

/// One extension of a parsed ClientHello body, by position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtSpan {
    /// Its ExtensionType.
    pub typ: u16,
    /// Where the whole extension (type, length, data) starts in the body.
    pub start: usize,
    /// Where it ends.
    pub end: usize,
    /// Where its extension_data starts.
    pub data_start: usize,
}

/// A ClientHello body (RFC 8446 §4.1.2, without the 4-byte handshake header) split into its
/// fields by offset, so ECH can copy, zero and replace parts without re-encoding the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelloParts {
    /// Offset of `random` (after legacy_version).
    pub random: usize,
    /// The legacy_session_id field, its 1-byte length included.
    pub session_id: (usize, usize),
    /// From cipher_suites through legacy_compression_methods (both with their lengths).
    pub middle: (usize, usize),
    /// The extensions vector's body (after its 2-byte length).
    pub extensions: (usize, usize),
    /// Each extension, in order.
    pub exts: Vec<ExtSpan>,
}

impl HelloParts {
    /// Splits `body`. Duplicate extensions are not checked here: the full ClientHello parse
    /// that follows does that (RFC 8446 §4.2).
    pub fn parse(body: &[u8]) -> Result<HelloParts, DecodeError> {
        let (p, end) = HelloParts::parse_prefix(body)?;
        if end != body.len() {
            return Err(DecodeError::Trailing {
                what: "ClientHello",
            });
        }
        Ok(p)
    }

    /// Like [`parse`](Self::parse) for a ClientHello followed by other bytes (the padding of
    /// an EncodedClientHelloInner); also returns where the ClientHello ends.
    pub fn parse_prefix(body: &[u8]) -> Result<(HelloParts, usize), DecodeError> {
        let mut r = Reader::new(body);
        r.u16("legacy_version")?;
        let random = r.offset();
        r.bytes(32, "random")?;
        let sid_start = r.offset();
        r.sub_u8("legacy_session_id")?
            .at_most(32, "legacy_session_id")?;
        let sid_end = r.offset();
        r.sub_u16("cipher_suites")?;
        r.sub_u8("legacy_compression_methods")?;
        let middle_end = r.offset();
        let mut ext = r.sub_u16("extensions")?;
        let ext_start = ext.offset();
        let mut exts = Vec::new();
        while !ext.is_empty() {
            let start = ext.offset();
            let typ = ext.u16("extension_type")?;
            let data = ext.sub_u16("extension_data")?;
            let data_start = data.offset();
            exts.push(ExtSpan {
                typ,
                start,
                end: ext.offset(),
                data_start,
            });
        }
        let ext_end = ext.offset();
        let parts = HelloParts {
            random,
            session_id: (sid_start, sid_end),
            middle: (sid_end, middle_end),
            extensions: (ext_start, ext_end),
            exts,
        };
        Ok((parts, r.offset()))
    }

    /// The first extension of type `typ`.
    pub fn find(&self, typ: u16) -> Option<&ExtSpan> {
        self.exts.iter().find(|e| e.typ == typ)
    }
}

/// A ClientHello body rebuilt from parts: `head` (legacy_version and random), the session id
/// (its length prefix added here), `middle` as is, and the extensions (each whole).
pub(crate) fn assemble(head: &[u8], session_id: &[u8], middle: &[u8], exts: &[&[u8]]) -> Vec<u8> {
    let mut w = Writer::new();
    w.bytes(head);
    w.len_u8(|w| w.bytes(session_id));
    w.bytes(middle);
    w.len_u16(|w| {
        for e in exts {
            w.bytes(e);
        }
    });
    w.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outer() -> EchClientHello {
        EchClientHello::Outer {
            suite: HpkeSymmetricCipherSuite {
                kdf_id: HpkeKdfId::HkdfSha256,
                aead_id: HpkeAeadId::Aes128Gcm,
            },
            config_id: 7,
            enc: vec![0xee; 32],
            payload: vec![0xaa; 48],
        }
    }

    #[test]
    fn ech_client_hello_round_trips_and_every_truncation_fails() {
        for v in [outer(), EchClientHello::Inner] {
            let b = v.encode();
            assert_eq!(EchClientHello::decode(&b).unwrap(), v);
            for n in 0..b.len() {
                assert!(EchClientHello::decode(&b[..n]).is_err(), "{n}");
            }
            let mut long = b.clone();
            long.push(0);
            assert!(EchClientHello::decode(&long).is_err());
        }
        assert_eq!(
            EchClientHello::decode(&[2]),
            Err(DecodeError::Invalid {
                what: "ECHClientHelloType"
            })
        );
        // payload<1..2^16-1>: an empty payload is not an outer extension.
        let mut b = outer().encode();
        b.truncate(b.len() - 50);
        b.extend_from_slice(&[0, 0]);
        assert!(EchClientHello::decode(&b).is_err());
    }

    #[test]
    fn outer_extensions_round_trip_and_bounds() {
        let b = encode_outer_extensions(&[0x000a, 0x0033]);
        assert_eq!(b, [4, 0, 0x0a, 0, 0x33]);
        assert_eq!(decode_outer_extensions(&b).unwrap(), [0x000a, 0x0033]);
        for n in 0..b.len() {
            assert!(decode_outer_extensions(&b[..n]).is_err());
        }
        assert!(decode_outer_extensions(&[0]).is_err(), "<2..254>");
        assert!(decode_outer_extensions(&[3, 0, 1, 2]).is_err(), "odd");
    }

    #[test]
    fn hrr_confirmation_is_eight_bytes() {
        assert_eq!(decode_hrr_confirmation(&[1; 8]).unwrap(), [1; 8]);
        assert!(decode_hrr_confirmation(&[1; 7]).is_err());
        assert!(decode_hrr_confirmation(&[1; 9]).is_err());
    }

    #[test]
    fn retry_configs_must_be_one_non_empty_list() {
        assert!(decode_retry_configs(&[0, 2, 0xfe, 0x0d]).is_ok());
        assert!(decode_retry_configs(&[0, 0]).is_err());
        assert!(decode_retry_configs(&[0, 2, 0xfe]).is_err());
        assert!(decode_retry_configs(&[0, 1, 0xfe, 0]).is_err());
    }

    #[test]
    fn hello_parts_split_and_reassemble() {
        let exts: Vec<Vec<u8>> = vec![vec![0, 0, 0, 1, 9], vec![0, 0x2b, 0, 3, 2, 3, 4]];
        let refs: Vec<&[u8]> = exts.iter().map(|e| e.as_slice()).collect();
        let head = [[3u8, 3].as_slice(), &[0x11; 32]].concat();
        let body = assemble(&head, &[5; 32], &[0, 2, 0x13, 1, 1, 0], &refs);
        let p = HelloParts::parse(&body).unwrap();
        assert_eq!(p.random, 2);
        assert_eq!(&body[p.session_id.0 + 1..p.session_id.1], &[5; 32]);
        assert_eq!(p.exts.len(), 2);
        assert_eq!(p.find(0x2b).unwrap().data_start, p.exts[1].start + 4);
        assert_eq!(&body[p.exts[1].start..p.exts[1].end], exts[1].as_slice());
        for n in 0..body.len() {
            assert!(HelloParts::parse(&body[..n]).is_err(), "{n}");
        }
    }
}
