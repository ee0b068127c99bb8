//! ECHConfig and ECHConfigList (RFC 9849 §4): what a client-facing server publishes (DNS HTTPS
//! records, retry_configs) and what `tls13lab ech keygen` writes.
//!
//! ```text
//! opaque HpkePublicKey<1..2^16-1>;
//! struct { HpkeKdfId kdf_id; HpkeAeadId aead_id; } HpkeSymmetricCipherSuite;
//! struct {
//!     uint8 config_id;
//!     HpkeKemId kem_id;
//!     HpkePublicKey public_key;
//!     HpkeSymmetricCipherSuite cipher_suites<4..2^16-4>;
//! } HpkeKeyConfig;
//! struct { ECHConfigExtensionType type; opaque data<0..2^16-1>; } ECHConfigExtension;
//! struct {
//!     HpkeKeyConfig key_config;
//!     uint8 maximum_name_length;
//!     opaque public_name<1..255>;
//!     ECHConfigExtension extensions<0..2^16-1>;
//! } ECHConfigContents;
//! struct {
//!     uint16 version;
//!     uint16 length;
//!     select (ECHConfig.version) { case 0xfe0d: ECHConfigContents contents; }
//! } ECHConfig;
//! ECHConfig ECHConfigList<4..2^16-1>;
//! ```
//!
//! A config of another version is kept as opaque bytes (§4: clients "MUST ignore" it, and the
//! length field exists so they can skip it); unknown KEMs, KDFs, AEADs and config extensions
//! are kept too. Each [`EchConfig`] holds its wire bytes beside the parse: HPKE's `info` is
//! `"tls ech" || 0x00 || ECHConfig` (§6.1), the bytes as published, not a re-encoding.

use super::codec::{DecodeError, Reader, Writer};
use super::enums::{HpkeAeadId, HpkeKdfId, HpkeKemId};

/// ECHConfig.version of RFC 9849 (the code point of the encrypted_client_hello extension).
pub const ECH_VERSION: u16 = 0xfe0d;

/// HpkeSymmetricCipherSuite: a KDF and AEAD pair the client may use with this key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HpkeSymmetricCipherSuite {
    /// HPKE KDF.
    pub kdf_id: HpkeKdfId,
    /// HPKE AEAD.
    pub aead_id: HpkeAeadId,
}

/// HpkeKeyConfig (§4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HpkeKeyConfig {
    /// Names this configuration in the client's ECH extension (§4.1).
    pub config_id: u8,
    /// The KEM of `public_key`.
    pub kem_id: HpkeKemId,
    /// SerializePublicKey(pkR) (RFC 9180 §7.1.1).
    pub public_key: Vec<u8>,
    /// In the server's order; at least one.
    pub cipher_suites: Vec<HpkeSymmetricCipherSuite>,
}

/// ECHConfigExtension (§4.2): any type kept with its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchConfigExtension {
    /// ECHConfigExtensionType.
    pub typ: u16,
    /// Its data.
    pub data: Vec<u8>,
}

impl EchConfigExtension {
    /// §4.2: a type with the high bit set is mandatory; a client that does not support it must
    /// ignore the whole ECHConfig.
    pub fn is_mandatory(&self) -> bool {
        self.typ & 0x8000 != 0
    }
}

/// ECHConfigContents of version 0xfe0d (§4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchConfigContents {
    /// The HPKE key and its suites.
    pub key_config: HpkeKeyConfig,
    /// The longest backend name, for padding (§6.1.3); 0 if unknown.
    pub maximum_name_length: u8,
    /// The client-facing server's DNS name (the outer SNI), 1 to 255 bytes.
    pub public_name: Vec<u8>,
    /// At most one of each type (§4.2).
    pub extensions: Vec<EchConfigExtension>,
}

/// The body of an ECHConfig.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EchConfigBody {
    /// Version 0xfe0d.
    Contents(EchConfigContents),
    /// Another version: its contents, unparsed.
    Unknown(Vec<u8>),
}

/// One ECHConfig: the parse and the exact bytes it came from (version and length included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchConfig {
    /// ECHConfig.version.
    pub version: u16,
    /// Its contents.
    pub body: EchConfigBody,
    /// The ECHConfig as received (or as [`EchConfig::new`] encoded it).
    pub raw: Vec<u8>,
}

impl HpkeKeyConfig {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let config_id = r.u8("config_id")?;
        let kem_id = HpkeKemId::from(r.u16("kem_id")?);
        let public_key = r
            .sub_u16("HpkePublicKey")?
            .at_least(1, "HpkePublicKey")?
            .rest()
            .to_vec();
        let mut suites = r.sub_u16("cipher_suites")?.at_least(4, "cipher_suites")?;
        if suites.remaining() % 4 != 0 {
            return Err(DecodeError::LengthNotMultiple {
                what: "cipher_suites",
            });
        }
        let cipher_suites = suites.items("cipher_suites", |r| {
            Ok(HpkeSymmetricCipherSuite {
                kdf_id: HpkeKdfId::from(r.u16("kdf_id")?),
                aead_id: HpkeAeadId::from(r.u16("aead_id")?),
            })
        })?;
        Ok(HpkeKeyConfig {
            config_id,
            kem_id,
            public_key,
            cipher_suites,
        })
    }

    fn encode(&self, w: &mut Writer) {
        w.u8(self.config_id);
        w.u16(self.kem_id.to_repr());
        w.opaque_u16(&self.public_key);
        w.len_u16(|w| {
            for s in &self.cipher_suites {
                w.u16(s.kdf_id.to_repr());
                w.u16(s.aead_id.to_repr());
            }
        });
    }
}

impl EchConfigContents {
    /// Decodes the whole of `r` (the ECHConfig's `length` bytes).
    pub fn decode(mut r: Reader<'_>) -> Result<Self, DecodeError> {
        let key_config = HpkeKeyConfig::decode(&mut r)?;
        let maximum_name_length = r.u8("maximum_name_length")?;
        let public_name = r
            .sub_u8("public_name")?
            .at_least(1, "public_name")?
            .rest()
            .to_vec();
        let mut exts = r.sub_u16("ECHConfigExtensions")?;
        let extensions = exts.items("ECHConfigExtensions", |r| {
            Ok(EchConfigExtension {
                typ: r.u16("ECHConfigExtensionType")?,
                data: r.vec_u16("ECHConfigExtension data")?,
            })
        })?;
        // §4.2: "there MUST NOT be more than one extension of the same type".
        for (i, e) in extensions.iter().enumerate() {
            if extensions[..i].iter().any(|o| o.typ == e.typ) {
                return Err(DecodeError::Invalid {
                    what: "duplicate ECHConfigExtension",
                });
            }
        }
        r.finish("ECHConfigContents")?;
        Ok(EchConfigContents {
            key_config,
            maximum_name_length,
            public_name,
            extensions,
        })
    }

    /// Appends the encoding.
    pub fn encode(&self, w: &mut Writer) {
        self.key_config.encode(w);
        w.u8(self.maximum_name_length);
        w.opaque_u8(&self.public_name);
        w.len_u16(|w| {
            for e in &self.extensions {
                w.u16(e.typ);
                w.opaque_u16(&e.data);
            }
        });
    }

    /// The public name as text, if it is UTF-8.
    pub fn public_name_str(&self) -> Option<&str> {
        core::str::from_utf8(&self.public_name).ok()
    }
}

impl EchConfig {
    /// A version 0xfe0d config and its encoding.
    pub fn new(contents: EchConfigContents) -> EchConfig {
        let mut w = Writer::new();
        w.u16(ECH_VERSION);
        w.len_u16(|w| contents.encode(w));
        EchConfig {
            version: ECH_VERSION,
            body: EchConfigBody::Contents(contents),
            raw: w.into_bytes(),
        }
    }

    /// Decodes one ECHConfig; another version's contents are kept unparsed.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let version = r.u16("ECHConfig.version")?;
        let body = r.sub_u16("ECHConfig.contents")?;
        let bytes = body.clone().rest();
        let parsed = match version {
            ECH_VERSION => EchConfigBody::Contents(EchConfigContents::decode(body)?),
            _ => EchConfigBody::Unknown(bytes.to_vec()),
        };
        let mut raw = Vec::with_capacity(4 + bytes.len());
        raw.extend_from_slice(&version.to_be_bytes());
        raw.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        raw.extend_from_slice(bytes);
        Ok(EchConfig {
            version,
            body: parsed,
            raw,
        })
    }

    /// Re-encodes from the parse (equal to `raw` for anything decoded).
    pub fn encode(&self, w: &mut Writer) {
        w.u16(self.version);
        w.len_u16(|w| match &self.body {
            EchConfigBody::Contents(c) => c.encode(w),
            EchConfigBody::Unknown(b) => w.bytes(b),
        });
    }

    /// The 0xfe0d contents, or `None` for another version.
    pub fn contents(&self) -> Option<&EchConfigContents> {
        match &self.body {
            EchConfigBody::Contents(c) => Some(c),
            EchConfigBody::Unknown(_) => None,
        }
    }
}

/// ECHConfigList (§4): one or more configs, in decreasing order of preference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchConfigList {
    /// The configs.
    pub configs: Vec<EchConfig>,
}

impl EchConfigList {
    /// Decodes a whole buffer holding exactly one ECHConfigList.
    pub fn decode(data: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(data);
        let list = Self::read(&mut r)?;
        r.finish("ECHConfigList")?;
        Ok(list)
    }

    /// Reads an ECHConfigList from `r` (e.g. inside retry_configs).
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut body = r.sub_u16("ECHConfigList")?.at_least(4, "ECHConfigList")?;
        let configs = body.items("ECHConfigList", EchConfig::decode)?;
        Ok(EchConfigList { configs })
    }

    /// Appends the encoding.
    pub fn encode_into(&self, w: &mut Writer) {
        w.len_u16(|w| {
            for c in &self.configs {
                c.encode(w);
            }
        });
    }

    /// The encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode_into(&mut w);
        w.into_bytes()
    }
}
