//! Extensions (RFC 8446 §4.2), decoded according to the message they appear in.
//!
//! ```text
//! struct {
//!     ExtensionType extension_type;
//!     opaque extension_data<0..2^16-1>;
//! } Extension;
//! ```
//!
//! The same extension type has different bodies in different messages (key_share is a list in
//! ClientHello, one entry in ServerHello and a bare group in HelloRetryRequest), so decoding
//! takes an [`ExtensionContext`]. A type we do not model in that context is kept as
//! [`Extension::Unknown`], byte-exact; whether it is *allowed* there is the state machine's call.

use super::codec::{DecodeError, Reader, Writer};
use super::enums::{
    CertificateCompressionAlgorithm, ExtensionType, NamedGroup, ProtocolVersion,
    PskKeyExchangeMode, ServerNameType, SignatureScheme,
};
use std::borrow::Cow;
use std::fmt;

/// The message an extension block belongs to (the "TLS 1.3" column of the table in §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExtensionContext {
    /// CH.
    ClientHello,
    /// SH.
    ServerHello,
    /// HRR: a ServerHello carrying the special random (§4.1.3).
    HelloRetryRequest,
    /// EE.
    EncryptedExtensions,
    /// CR.
    CertificateRequest,
    /// CT: the extensions of one CertificateEntry.
    Certificate,
    /// NST.
    NewSessionTicket,
}

impl ExtensionContext {
    /// Whether an extension of type `typ` may appear in this message: the "TLS 1.3" column of
    /// RFC 8446 §4.2's table (plus record_size_limit, RFC 8449 §4, and compress_certificate,
    /// RFC 8879 §3). `None` for a type this crate does not recognize. TLS 1.2-only extensions
    /// are allowed in the ClientHello alone (a 1.3 client may offer 1.2 as well).
    ///
    /// §4.2: an extension that is recognized but "not specified for the message in which it
    /// appears" is an illegal_parameter.
    pub fn allows(self, typ: ExtensionType) -> Option<bool> {
        use ExtensionContext as C;
        use ExtensionType as T;
        let ch = self == C::ClientHello;
        Some(match typ {
            T::ServerName
            | T::MaxFragmentLength
            | T::SupportedGroups
            | T::UseSrtp
            | T::Heartbeat
            | T::ApplicationLayerProtocolNegotiation
            | T::ClientCertificateType
            | T::ServerCertificateType
            | T::RecordSizeLimit => ch || self == C::EncryptedExtensions,
            T::StatusRequest | T::SignedCertificateTimestamp => {
                ch || matches!(self, C::CertificateRequest | C::Certificate)
            }
            T::SignatureAlgorithms
            | T::SignatureAlgorithmsCert
            | T::CertificateAuthorities
            | T::CompressCertificate => ch || self == C::CertificateRequest,
            T::OidFilters => self == C::CertificateRequest,
            T::Padding | T::PskKeyExchangeModes | T::PostHandshakeAuth => ch,
            T::PreSharedKey => ch || self == C::ServerHello,
            T::EarlyData => ch || matches!(self, C::EncryptedExtensions | C::NewSessionTicket),
            T::SupportedVersions | T::KeyShare => {
                ch || matches!(self, C::ServerHello | C::HelloRetryRequest)
            }
            T::Cookie => ch || self == C::HelloRetryRequest,
            T::EncryptedClientHello => {
                ch || matches!(self, C::EncryptedExtensions | C::HelloRetryRequest)
            }
            // draft-ietf-tls-trust-anchor-ids §4.1.
            T::TrustAnchors => {
                ch || matches!(
                    self,
                    C::EncryptedExtensions | C::CertificateRequest | C::Certificate
                )
            }
            T::EcPointFormats
            | T::EncryptThenMac
            | T::ExtendedMasterSecret
            | T::SessionTicket
            | T::RenegotiationInfo => ch,
            T::Unknown(_) => return None,
        })
    }

    /// The RFC's minimum byte length of the whole extensions vector in this message:
    /// ClientHello `<8..>`, ServerHello `<6..>` (§4.1.2, §4.1.3), CertificateRequest `<2..>`
    /// (§4.3.2); a TLS 1.2 ClientHello's may be shorter (RFC 5246 §7.4.1.2).
    fn min_block_len(self) -> usize {
        match self {
            ExtensionContext::ClientHello => 8,
            ExtensionContext::ServerHello | ExtensionContext::HelloRetryRequest => 6,
            ExtensionContext::CertificateRequest => 2,
            _ => 0,
        }
    }
}

/// ```text
/// struct {
///     NameType name_type;
///     select (name_type) { case host_name: HostName; } name;
/// } ServerName;
/// opaque HostName<1..2^16-1>;
/// ```
/// RFC 6066 §3. Every name type is read as `opaque<1..2^16-1>`, so unknown types round-trip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerName {
    /// name_type.
    pub typ: ServerNameType,
    /// The name's bytes (for host_name: ASCII, no trailing dot).
    pub name: Vec<u8>,
}

/// ```text
/// struct {
///     NamedGroup group;
///     opaque key_exchange<1..2^16-1>;
/// } KeyShareEntry;
/// ```
/// §4.2.8.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyShareEntry {
    /// The group of this share.
    pub group: NamedGroup,
    /// The public value (§4.2.8.1, §4.2.8.2).
    pub key_exchange: Vec<u8>,
}

impl KeyShareEntry {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(KeyShareEntry {
            group: r.u16("group")?.into(),
            key_exchange: nonempty_u16(r, "key_exchange")?,
        })
    }

    fn encode(&self, w: &mut Writer) {
        key_share_entry(w, self.group, &self.key_exchange);
    }
}

/// ```text
/// struct {
///     opaque identity<1..2^16-1>;
///     uint32 obfuscated_ticket_age;
/// } PskIdentity;
/// ```
/// §4.2.11.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PskIdentity {
    /// A ticket or an external PSK label.
    pub identity: Vec<u8>,
    /// Ticket age in ms plus ticket_age_add, mod 2^32 (§4.2.11.1).
    pub obfuscated_ticket_age: u32,
}

/// ```text
/// opaque PskBinderEntry<32..255>;
/// struct {
///     PskIdentity identities<7..2^16-1>;
///     PskBinderEntry binders<33..2^16-1>;
/// } OfferedPsks;
/// ```
/// §4.2.11. Matching counts of identities and binders is checked by the state machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfferedPsks {
    /// The offered PSKs, in order.
    pub identities: Vec<PskIdentity>,
    /// One HMAC per identity (§4.2.11.2).
    pub binders: Vec<Vec<u8>>,
}

impl OfferedPsks {
    /// Encoded length of the `binders` vector, prefix included: what a partial ClientHello
    /// leaves out (§4.2.11.2).
    pub fn binders_len(&self) -> usize {
        2 + self.binders.iter().map(|b| 1 + b.len()).sum::<usize>()
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let identities =
            r.sub_u16("identities")?
                .at_least(7, "identities")?
                .items("identities", |r| {
                    Ok(PskIdentity {
                        identity: nonempty_u16(r, "identity")?,
                        obfuscated_ticket_age: r.u32("obfuscated_ticket_age")?,
                    })
                })?;
        let binders = r
            .sub_u16("binders")?
            .at_least(33, "binders")?
            .items("binders", |r| {
                Ok(r.sub_u8("binder")?.at_least(32, "binder")?.rest().to_vec())
            })?;
        Ok(OfferedPsks {
            identities,
            binders,
        })
    }

    fn encode(&self, w: &mut Writer) {
        w.span("identities", |w| {
            w.len_u16(|w| {
                for id in &self.identities {
                    w.span("psk_identity", |w| {
                        w.span("identity", |w| w.opaque_u16(&id.identity));
                        w.span("obfuscated_ticket_age", |w| w.u32(id.obfuscated_ticket_age));
                    });
                }
            })
        });
        w.span("binders", |w| {
            w.len_u16(|w| {
                for b in &self.binders {
                    w.span("binder", |w| w.opaque_u8(b));
                }
            })
        });
    }
}

/// One extension, in the form it has in its message. Every value re-encodes to exactly the
/// bytes it was decoded from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extension {
    /// server_name in CH: `ServerName server_name_list<1..2^16-1>` (RFC 6066 §3).
    ServerName(Vec<ServerName>),
    /// server_name in SH/EE: empty body, "I used your name".
    ServerNameAck,
    /// supported_groups in CH/EE: `NamedGroup named_group_list<2..2^16-1>` (§4.2.7).
    SupportedGroups(Vec<NamedGroup>),
    /// signature_algorithms in CH/CR: `SignatureScheme supported_signature_algorithms<2..2^16-2>`
    /// (§4.2.3).
    SignatureAlgorithms(Vec<SignatureScheme>),
    /// signature_algorithms_cert in CH/CR, same grammar (§4.2.3).
    SignatureAlgorithmsCert(Vec<SignatureScheme>),
    /// ALPN in CH/EE: `ProtocolName protocol_name_list<2..2^16-1>`,
    /// `opaque ProtocolName<1..2^8-1>` (RFC 7301 §3.1).
    Alpn(Vec<Vec<u8>>),
    /// supported_versions in CH: `ProtocolVersion versions<2..254>` (§4.2.1).
    SupportedVersionsClient(Vec<ProtocolVersion>),
    /// supported_versions in SH/HRR: `ProtocolVersion selected_version` (§4.2.1).
    SupportedVersionsServer(ProtocolVersion),
    /// key_share in CH: `KeyShareEntry client_shares<0..2^16-1>` (§4.2.8).
    KeyShareClient(Vec<KeyShareEntry>),
    /// key_share in SH: `KeyShareEntry server_share` (§4.2.8).
    KeyShareServer(KeyShareEntry),
    /// key_share in HRR: `NamedGroup selected_group` (§4.2.8).
    KeyShareHrr(NamedGroup),
    /// psk_key_exchange_modes in CH: `PskKeyExchangeMode ke_modes<1..255>` (§4.2.9).
    PskKeyExchangeModes(Vec<PskKeyExchangeMode>),
    /// pre_shared_key in CH (§4.2.11). Must be the last extension: the state machine checks.
    PreSharedKeyClient(OfferedPsks),
    /// pre_shared_key in SH: `uint16 selected_identity` (§4.2.11).
    PreSharedKeyServer(u16),
    /// early_data in CH/EE: empty body (§4.2.10).
    EarlyDataEmpty,
    /// early_data in NST: `uint32 max_early_data_size` (§4.2.10).
    EarlyDataMax(u32),
    /// cookie in CH/HRR: `opaque cookie<1..2^16-1>` (§4.2.2).
    Cookie(Vec<u8>),
    /// record_size_limit in CH/EE: `uint16 RecordSizeLimit` (RFC 8449 §4).
    RecordSizeLimit(u16),
    /// padding in CH: the raw body, normally zeros (RFC 7685 §3).
    Padding(Vec<u8>),
    /// post_handshake_auth in CH: empty body (§4.2.6).
    PostHandshakeAuth,
    /// certificate_authorities in CH/CR: `DistinguishedName authorities<3..2^16-1>`,
    /// `opaque DistinguishedName<1..2^16-1>` (§4.2.4).
    CertificateAuthorities(Vec<Vec<u8>>),
    /// status_request in CH/CR/CT: raw body, tolerated (RFC 6066 §8, §4.4.2.1).
    StatusRequest(Vec<u8>),
    /// signed_certificate_timestamp in CH/CR/CT: raw body, tolerated (RFC 6962 §3.3).
    Sct(Vec<u8>),
    /// renegotiation_info in CH/SH: raw body, i.e. the `opaque<0..255>` with its length byte
    /// (RFC 5746 §3.2).
    RenegotiationInfo(Vec<u8>),
    /// compress_certificate in CH/CR: `CertificateCompressionAlgorithm algorithms<2..2^8-2>`,
    /// the algorithms the sender can decompress (RFC 8879 §3).
    CompressCertificate(Vec<CertificateCompressionAlgorithm>),
    /// Any extension not modelled in this context, byte-exact.
    Unknown {
        /// extension_type.
        typ: ExtensionType,
        /// extension_data.
        body: Vec<u8>,
    },
}

impl Extension {
    /// The extension_type on the wire.
    pub fn typ(&self) -> ExtensionType {
        use Extension as E;
        use ExtensionType as T;
        match self {
            E::ServerName(_) | E::ServerNameAck => T::ServerName,
            E::SupportedGroups(_) => T::SupportedGroups,
            E::SignatureAlgorithms(_) => T::SignatureAlgorithms,
            E::SignatureAlgorithmsCert(_) => T::SignatureAlgorithmsCert,
            E::Alpn(_) => T::ApplicationLayerProtocolNegotiation,
            E::SupportedVersionsClient(_) | E::SupportedVersionsServer(_) => T::SupportedVersions,
            E::KeyShareClient(_) | E::KeyShareServer(_) | E::KeyShareHrr(_) => T::KeyShare,
            E::PskKeyExchangeModes(_) => T::PskKeyExchangeModes,
            E::PreSharedKeyClient(_) | E::PreSharedKeyServer(_) => T::PreSharedKey,
            E::EarlyDataEmpty | E::EarlyDataMax(_) => T::EarlyData,
            E::Cookie(_) => T::Cookie,
            E::RecordSizeLimit(_) => T::RecordSizeLimit,
            E::Padding(_) => T::Padding,
            E::PostHandshakeAuth => T::PostHandshakeAuth,
            E::CertificateAuthorities(_) => T::CertificateAuthorities,
            E::StatusRequest(_) => T::StatusRequest,
            E::Sct(_) => T::SignedCertificateTimestamp,
            E::RenegotiationInfo(_) => T::RenegotiationInfo,
            E::CompressCertificate(_) => T::CompressCertificate,
            E::Unknown { typ, .. } => *typ,
        }
    }

    /// Decodes one extension (type, length, body) as it appears in a `ctx` message.
    pub fn decode(r: &mut Reader<'_>, ctx: ExtensionContext) -> Result<Self, DecodeError> {
        let typ = ExtensionType::from(r.u16("extension_type")?);
        let mut body = r.sub_u16("extension_data")?;
        let ext = Self::decode_body(typ, &mut body, ctx)?;
        body.finish(typ.name())?;
        Ok(ext)
    }

    fn decode_body(
        typ: ExtensionType,
        r: &mut Reader<'_>,
        ctx: ExtensionContext,
    ) -> Result<Self, DecodeError> {
        use Extension as E;
        use ExtensionContext as C;
        use ExtensionType as T;
        Ok(match (typ, ctx) {
            (T::ServerName, C::ClientHello) => E::ServerName(
                r.sub_u16("server_name_list")?
                    .at_least(1, "server_name_list")?
                    .items("server_name_list", |r| {
                        Ok(ServerName {
                            typ: r.u8("name_type")?.into(),
                            name: nonempty_u16(r, "host_name")?,
                        })
                    })?,
            ),
            (T::ServerName, C::ServerHello | C::EncryptedExtensions) => E::ServerNameAck,
            (T::SupportedGroups, C::ClientHello | C::EncryptedExtensions) => {
                E::SupportedGroups(code_points_u16(r, "named_group_list")?)
            }
            (T::SignatureAlgorithms, C::ClientHello | C::CertificateRequest) => {
                E::SignatureAlgorithms(code_points_u16(r, "supported_signature_algorithms")?)
            }
            (T::SignatureAlgorithmsCert, C::ClientHello | C::CertificateRequest) => {
                E::SignatureAlgorithmsCert(code_points_u16(r, "supported_signature_algorithms")?)
            }
            (T::ApplicationLayerProtocolNegotiation, C::ClientHello | C::EncryptedExtensions) => {
                E::Alpn(
                    r.sub_u16("protocol_name_list")?
                        .at_least(2, "protocol_name_list")?
                        .items("protocol_name_list", |r| {
                            Ok(r.sub_u8("protocol_name")?
                                .at_least(1, "protocol_name")?
                                .rest()
                                .to_vec())
                        })?,
                )
            }
            (T::SupportedVersions, C::ClientHello) => E::SupportedVersionsClient(
                r.sub_u8("versions")?
                    .at_least(2, "versions")?
                    .u16_items("versions")?,
            ),
            (T::SupportedVersions, C::ServerHello | C::HelloRetryRequest) => {
                E::SupportedVersionsServer(r.u16("selected_version")?.into())
            }
            (T::KeyShare, C::ClientHello) => E::KeyShareClient(
                r.sub_u16("client_shares")?
                    .items("client_shares", KeyShareEntry::decode)?,
            ),
            (T::KeyShare, C::ServerHello) => E::KeyShareServer(KeyShareEntry::decode(r)?),
            (T::KeyShare, C::HelloRetryRequest) => E::KeyShareHrr(r.u16("selected_group")?.into()),
            (T::PskKeyExchangeModes, C::ClientHello) => E::PskKeyExchangeModes(
                r.sub_u8("ke_modes")?
                    .at_least(1, "ke_modes")?
                    .u8_items("ke_modes")?,
            ),
            (T::PreSharedKey, C::ClientHello) => E::PreSharedKeyClient(OfferedPsks::decode(r)?),
            (T::PreSharedKey, C::ServerHello) => E::PreSharedKeyServer(r.u16("selected_identity")?),
            (T::EarlyData, C::ClientHello | C::EncryptedExtensions) => E::EarlyDataEmpty,
            (T::EarlyData, C::NewSessionTicket) => E::EarlyDataMax(r.u32("max_early_data_size")?),
            (T::Cookie, C::ClientHello | C::HelloRetryRequest) => {
                E::Cookie(nonempty_u16(r, "cookie")?)
            }
            (T::RecordSizeLimit, C::ClientHello | C::EncryptedExtensions) => {
                E::RecordSizeLimit(r.u16("record_size_limit")?)
            }
            (T::Padding, C::ClientHello) => E::Padding(r.rest().to_vec()),
            (T::PostHandshakeAuth, C::ClientHello) => E::PostHandshakeAuth,
            (T::CertificateAuthorities, C::ClientHello | C::CertificateRequest) => {
                E::CertificateAuthorities(
                    r.sub_u16("authorities")?
                        .at_least(3, "authorities")?
                        .items("authorities", |r| nonempty_u16(r, "distinguished_name"))?,
                )
            }
            (T::StatusRequest, C::ClientHello | C::CertificateRequest | C::Certificate) => {
                E::StatusRequest(r.rest().to_vec())
            }
            (
                T::SignedCertificateTimestamp,
                C::ClientHello | C::CertificateRequest | C::Certificate,
            ) => E::Sct(r.rest().to_vec()),
            (T::RenegotiationInfo, C::ClientHello | C::ServerHello) => {
                E::RenegotiationInfo(r.rest().to_vec())
            }
            (T::CompressCertificate, C::ClientHello | C::CertificateRequest) => {
                E::CompressCertificate(
                    r.sub_u8("algorithms")?
                        .at_least(2, "algorithms")?
                        .u16_items("algorithms")?,
                )
            }
            _ => E::Unknown {
                typ,
                body: r.rest().to_vec(),
            },
        })
    }

    /// Encodes type, length and body. The span is named like `key_share (51)`, with children
    /// "type", "length" and the body's fields.
    pub fn encode(&self, w: &mut Writer) {
        write_extension(w, self.typ(), |w| self.encode_body(w));
    }

    fn encode_body(&self, w: &mut Writer) {
        use Extension as E;
        match self {
            E::ServerName(names) => {
                server_name_list(w, names.iter().map(|n| (n.typ, n.name.as_slice())))
            }
            E::ServerNameAck | E::EarlyDataEmpty | E::PostHandshakeAuth => {}
            E::SupportedGroups(groups) => named_group_list(w, groups),
            E::SignatureAlgorithms(schemes) | E::SignatureAlgorithmsCert(schemes) => {
                signature_algorithms(w, schemes)
            }
            E::Alpn(protocols) => protocol_name_list(w, protocols),
            E::SupportedVersionsClient(versions) => client_versions(w, versions),
            E::SupportedVersionsServer(v) => w.span("selected_version", |w| w.u16((*v).into())),
            E::KeyShareClient(shares) => client_shares(
                w,
                shares.iter().map(|s| (s.group, s.key_exchange.as_slice())),
            ),
            E::KeyShareServer(share) => w.span("server_share", |w| share.encode(w)),
            E::KeyShareHrr(group) => w.span("selected_group", |w| w.u16((*group).into())),
            E::PskKeyExchangeModes(modes) => ke_modes(w, modes),
            E::CompressCertificate(algorithms) => compression_algorithms(w, algorithms),
            E::PreSharedKeyClient(psks) => psks.encode(w),
            E::PreSharedKeyServer(i) => w.span("selected_identity", |w| w.u16(*i)),
            E::EarlyDataMax(n) => w.span("max_early_data_size", |w| w.u32(*n)),
            E::Cookie(c) => w.span("cookie", |w| w.opaque_u16(c)),
            E::RecordSizeLimit(n) => w.span("record_size_limit", |w| w.u16(*n)),
            E::Padding(p) => w.span("padding", |w| w.bytes(p)),
            E::CertificateAuthorities(names) => w.span("authorities", |w| {
                w.len_u16(|w| {
                    for dn in names {
                        w.span("distinguished_name", |w| w.opaque_u16(dn));
                    }
                })
            }),
            E::StatusRequest(body)
            | E::Sct(body)
            | E::RenegotiationInfo(body)
            | E::Unknown { body, .. } => w.span("extension_data", |w| w.bytes(body)),
        }
    }
}

/// An extension to send, borrowing what it carries (the sender's configuration, its key
/// shares) instead of copying it into an [`Extension`] first. Each variant encodes exactly like
/// the [`Extension`] it stands for, bytes and layout alike: both are written by the same
/// functions. [`OutgoingExtension::to_extension`] gives that [`Extension`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutgoingExtension<'a> {
    /// Any extension value, borrowed or owned: configured extras, and the small or rare ones.
    Ext(Cow<'a, Extension>),
    /// [`Extension::ServerName`] naming one host (RFC 6066 §3), what a client sends.
    HostName(&'a [u8]),
    /// [`Extension::SupportedGroups`].
    SupportedGroups(&'a [NamedGroup]),
    /// [`Extension::KeyShareClient`]: the group and key_exchange of each share.
    KeyShareClient(&'a [(NamedGroup, &'a [u8])]),
    /// [`Extension::SupportedVersionsClient`].
    SupportedVersionsClient(&'a [ProtocolVersion]),
    /// [`Extension::SignatureAlgorithms`].
    SignatureAlgorithms(&'a [SignatureScheme]),
    /// [`Extension::PskKeyExchangeModes`].
    PskKeyExchangeModes(&'a [PskKeyExchangeMode]),
    /// [`Extension::Alpn`].
    Alpn(&'a [Vec<u8>]),
    /// [`Extension::CompressCertificate`].
    CompressCertificate(&'a [CertificateCompressionAlgorithm]),
}

impl OutgoingExtension<'_> {
    /// The extension_type on the wire.
    pub fn typ(&self) -> ExtensionType {
        use ExtensionType as T;
        use OutgoingExtension as O;
        match self {
            O::Ext(e) => e.typ(),
            O::HostName(_) => T::ServerName,
            O::SupportedGroups(_) => T::SupportedGroups,
            O::KeyShareClient(_) => T::KeyShare,
            O::SupportedVersionsClient(_) => T::SupportedVersions,
            O::SignatureAlgorithms(_) => T::SignatureAlgorithms,
            O::PskKeyExchangeModes(_) => T::PskKeyExchangeModes,
            O::Alpn(_) => T::ApplicationLayerProtocolNegotiation,
            O::CompressCertificate(_) => T::CompressCertificate,
        }
    }

    /// Encodes type, length and body, exactly as [`Extension::encode`] does for
    /// [`to_extension`](Self::to_extension).
    pub fn encode(&self, w: &mut Writer) {
        use OutgoingExtension as O;
        write_extension(w, self.typ(), |w| match self {
            O::Ext(e) => e.encode_body(w),
            O::HostName(name) => {
                server_name_list(w, core::iter::once((ServerNameType::HostName, *name)))
            }
            O::SupportedGroups(groups) => named_group_list(w, groups),
            O::KeyShareClient(shares) => client_shares(w, shares.iter().copied()),
            O::SupportedVersionsClient(versions) => client_versions(w, versions),
            O::SignatureAlgorithms(schemes) => signature_algorithms(w, schemes),
            O::PskKeyExchangeModes(modes) => ke_modes(w, modes),
            O::Alpn(protocols) => protocol_name_list(w, protocols),
            O::CompressCertificate(algorithms) => compression_algorithms(w, algorithms),
        });
    }

    /// The owned [`Extension`] this stands for (copies what it borrows).
    pub fn to_extension(&self) -> Extension {
        use Extension as E;
        use OutgoingExtension as O;
        match self {
            O::Ext(e) => e.clone().into_owned(),
            O::HostName(name) => E::ServerName(vec![ServerName {
                typ: ServerNameType::HostName,
                name: name.to_vec(),
            }]),
            O::SupportedGroups(groups) => E::SupportedGroups(groups.to_vec()),
            O::KeyShareClient(shares) => E::KeyShareClient(
                shares
                    .iter()
                    .map(|&(group, key_exchange)| KeyShareEntry {
                        group,
                        key_exchange: key_exchange.to_vec(),
                    })
                    .collect(),
            ),
            O::SupportedVersionsClient(versions) => E::SupportedVersionsClient(versions.to_vec()),
            O::SignatureAlgorithms(schemes) => E::SignatureAlgorithms(schemes.to_vec()),
            O::PskKeyExchangeModes(modes) => E::PskKeyExchangeModes(modes.to_vec()),
            O::Alpn(protocols) => E::Alpn(protocols.to_vec()),
            O::CompressCertificate(algorithms) => E::CompressCertificate(algorithms.to_vec()),
        }
    }
}

impl From<Extension> for OutgoingExtension<'_> {
    fn from(e: Extension) -> Self {
        OutgoingExtension::Ext(Cow::Owned(e))
    }
}

// The encoders below are shared by [`Extension`] and [`OutgoingExtension`], so an extension
// encodes to the same bytes and spans whichever form it was built in.

/// Type, length and the body `body` writes, in a span named like `key_share (51)` with
/// children "type", "length" and the body's fields.
fn write_extension(w: &mut Writer, typ: ExtensionType, body: impl FnOnce(&mut Writer)) {
    w.span(format_args!("{} ({})", typ.name(), typ.to_repr()), |w| {
        w.span("type", |w| w.u16(typ.to_repr()));
        w.len_u16(body);
    });
}

/// `ServerName server_name_list<1..2^16-1>` (RFC 6066 §3).
fn server_name_list<'n>(w: &mut Writer, names: impl Iterator<Item = (ServerNameType, &'n [u8])>) {
    w.span("server_name_list", |w| {
        w.len_u16(|w| {
            for (typ, name) in names {
                w.span(typ, |w| {
                    w.span("name_type", |w| w.u8(typ.into()));
                    w.span("name", |w| w.opaque_u16(name));
                });
            }
        })
    })
}

/// `NamedGroup named_group_list<2..2^16-1>` (§4.2.7).
fn named_group_list(w: &mut Writer, groups: &[NamedGroup]) {
    w.span("named_group_list", |w| {
        w.len_u16(|w| code_points(w, groups))
    })
}

/// `SignatureScheme supported_signature_algorithms<2..2^16-2>` (§4.2.3).
fn signature_algorithms(w: &mut Writer, schemes: &[SignatureScheme]) {
    w.span("supported_signature_algorithms", |w| {
        w.len_u16(|w| code_points(w, schemes))
    })
}

/// `ProtocolName protocol_name_list<2..2^16-1>` (RFC 7301 §3.1).
fn protocol_name_list(w: &mut Writer, protocols: &[Vec<u8>]) {
    w.span("protocol_name_list", |w| {
        w.len_u16(|w| {
            for p in protocols {
                w.span("protocol_name", |w| w.opaque_u8(p));
            }
        })
    })
}

/// `CertificateCompressionAlgorithm algorithms<2..2^8-2>` (RFC 8879 §3).
fn compression_algorithms(w: &mut Writer, algorithms: &[CertificateCompressionAlgorithm]) {
    w.span("algorithms", |w| w.len_u8(|w| code_points(w, algorithms)))
}

/// `ProtocolVersion versions<2..254>` (§4.2.1).
fn client_versions(w: &mut Writer, versions: &[ProtocolVersion]) {
    w.span("versions", |w| w.len_u8(|w| code_points(w, versions)))
}

/// `KeyShareEntry client_shares<0..2^16-1>` (§4.2.8), each share in a span named by its group.
fn client_shares<'s>(w: &mut Writer, shares: impl Iterator<Item = (NamedGroup, &'s [u8])>) {
    w.span("client_shares", |w| {
        w.len_u16(|w| {
            for (group, key_exchange) in shares {
                w.span(group, |w| key_share_entry(w, group, key_exchange));
            }
        })
    })
}

/// One `KeyShareEntry` (§4.2.8).
fn key_share_entry(w: &mut Writer, group: NamedGroup, key_exchange: &[u8]) {
    w.span("group", |w| w.u16(group.into()));
    w.span("key_exchange", |w| w.opaque_u16(key_exchange));
}

/// `PskKeyExchangeMode ke_modes<1..255>` (§4.2.9).
fn ke_modes(w: &mut Writer, modes: &[PskKeyExchangeMode]) {
    w.span("ke_modes", |w| {
        w.len_u8(|w| {
            for &m in modes {
                w.span(m, |w| w.u8(m.into()));
            }
        })
    })
}

/// Writes `Extension extensions<..2^16-1>`: span "extensions" with children "length" and one
/// span per extension.
pub fn encode_extensions(w: &mut Writer, exts: &[Extension]) {
    w.span("extensions", |w| {
        w.len_u16(|w| {
            for e in exts {
                e.encode(w);
            }
        })
    });
}

/// [`encode_extensions`] for extensions to send.
pub fn encode_outgoing_extensions(w: &mut Writer, exts: &[OutgoingExtension<'_>]) {
    w.span("extensions", |w| {
        w.len_u16(|w| {
            for e in exts {
                e.encode(w);
            }
        })
    });
}

/// Reads `Extension extensions<..2^16-1>` of a `ctx` message, enforcing the message's minimum
/// length and rejecting a repeated type (§4.2: "There MUST NOT be more than one extension of the
/// same type in a given extension block").
pub fn decode_extensions(
    r: &mut Reader<'_>,
    ctx: ExtensionContext,
) -> Result<Vec<Extension>, DecodeError> {
    decode_extension_block(r, ctx, ctx.min_block_len())
}

/// [`decode_extensions`] with another minimum block length (a TLS 1.2 ClientHello's: 0).
pub(crate) fn decode_extension_block(
    r: &mut Reader<'_>,
    ctx: ExtensionContext,
    min_len: usize,
) -> Result<Vec<Extension>, DecodeError> {
    let mut block = r.sub_u16("extensions")?.at_least(min_len, "extensions")?;
    let mut seen = TypeSet::new();
    let count = count_extensions(block.clone());
    block.items_with_capacity("extensions", count, |r| {
        let ext = Extension::decode(r, ctx)?;
        if !seen.insert(ext.typ()) {
            return Err(DecodeError::DuplicateExtension(ext.typ()));
        }
        Ok(ext)
    })
}

/// How many extensions a block holds, found by walking the type/length headers only, so the
/// decoded vector is allocated once. A hint, capped at 32 (a peer can still send more, and the
/// vector then grows): a malformed block simply gives a wrong hint, and decoding reports it.
fn count_extensions(mut block: Reader<'_>) -> usize {
    let mut n = 0;
    while n < 32 && block.u16("extension_type").is_ok() && block.sub_u16("extension_data").is_ok() {
        n += 1;
    }
    n
}

/// The extension types seen in one block, to refuse a repeat (§4.2) at a bounded cost per
/// extension. Blocks that real peers send hold a few dozen at most: those are checked by a scan
/// of an inline list, which allocates and clears nothing. Past [`TypeSet::FEW`] extensions the
/// set moves to one bit per possible type (8 KiB, allocated once), so a block stuffed with
/// thousands of tiny extensions costs constant time for each. (It used to be that bitmap on the
/// stack for every block: clearing 8 KiB per decoded message was a measurable share of a
/// psk_ke handshake.)
enum TypeSet {
    Few {
        types: [u16; TypeSet::FEW],
        len: usize,
    },
    Many(Vec<u64>),
}

impl TypeSet {
    const FEW: usize = 32;

    fn new() -> Self {
        TypeSet::Few {
            types: [0; TypeSet::FEW],
            len: 0,
        }
    }

    /// Adds `t`; false if it was already there.
    fn insert(&mut self, t: ExtensionType) -> bool {
        let v = t.to_repr();
        match self {
            TypeSet::Few { types, len } => {
                if types[..*len].contains(&v) {
                    return false;
                }
                if *len < TypeSet::FEW {
                    types[*len] = v;
                    *len += 1;
                    return true;
                }
                let mut bits = vec![0u64; 1 << 10];
                for &seen in types.iter() {
                    Self::set(&mut bits, seen);
                }
                let fresh = Self::set(&mut bits, v);
                *self = TypeSet::Many(bits);
                fresh
            }
            TypeSet::Many(bits) => Self::set(bits, v),
        }
    }

    /// Sets the bit of `v`; false if it was set already.
    fn set(bits: &mut [u64], v: u16) -> bool {
        let v = usize::from(v);
        let (word, bit) = (v / 64, 1u64 << (v % 64));
        let fresh = bits[word] & bit == 0;
        bits[word] |= bit;
        fresh
    }
}

/// `opaque x<1..2^16-1>`.
fn nonempty_u16(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<u8>, DecodeError> {
    Ok(r.sub_u16(what)?.at_least(1, what)?.rest().to_vec())
}

/// A `<2..2^16-x>` vector of 2-byte code points.
fn code_points_u16<T: From<u16>>(
    r: &mut Reader<'_>,
    what: &'static str,
) -> Result<Vec<T>, DecodeError> {
    r.sub_u16(what)?.at_least(2, what)?.u16_items(what)
}

/// 2-byte code points, each a span named after its value (e.g. "x25519").
fn code_points<T: Copy + fmt::Display + Into<u16>>(w: &mut Writer, items: &[T]) {
    for &item in items {
        w.span(item, |w| w.u16(item.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_hex(hex: &str, ctx: ExtensionContext) -> Result<Extension, DecodeError> {
        let bytes = hex::decode(hex).unwrap();
        let mut r = Reader::new(&bytes);
        let ext = Extension::decode(&mut r, ctx)?;
        r.finish("test")?;
        let mut w = Writer::new();
        ext.encode(&mut w);
        assert_eq!(w.into_bytes(), bytes, "re-encodes byte-exact");
        Ok(ext)
    }

    #[test]
    fn key_share_depends_on_context() {
        use ExtensionContext as C;
        assert_eq!(
            decode_hex("003300020017", C::HelloRetryRequest),
            Ok(Extension::KeyShareHrr(NamedGroup::secp256r1))
        );
        assert_eq!(
            decode_hex("00330006001d00020102", C::ServerHello),
            Ok(Extension::KeyShareServer(KeyShareEntry {
                group: NamedGroup::X25519,
                key_exchange: vec![1, 2]
            }))
        );
        assert_eq!(
            decode_hex("003300020000", C::ClientHello),
            Ok(Extension::KeyShareClient(vec![]))
        );
        // Not modelled in EncryptedExtensions: kept as bytes.
        assert_eq!(
            decode_hex("003300020017", C::EncryptedExtensions),
            Ok(Extension::Unknown {
                typ: ExtensionType::KeyShare,
                body: vec![0, 0x17]
            })
        );
    }

    #[test]
    fn rfc_minimums_are_enforced() {
        use ExtensionContext as C;
        // key_exchange<1..2^16-1> empty.
        assert_eq!(
            decode_hex("00330004001d0000", C::ServerHello),
            Err(DecodeError::Empty {
                what: "key_exchange"
            })
        );
        // versions<2..254> with one byte.
        assert_eq!(
            decode_hex("002b00020103", C::ClientHello),
            Err(DecodeError::Invalid { what: "versions" })
        );
        // A binder of 31 bytes.
        let psk = format!("0029002c0007000101000000000021{}00", "1f".repeat(32));
        assert_eq!(
            decode_hex(&psk, C::ClientHello),
            Err(DecodeError::Invalid { what: "binder" })
        );
    }

    #[test]
    fn empty_bodies_must_be_empty() {
        use ExtensionContext as C;
        assert_eq!(
            decode_hex("00000000", C::EncryptedExtensions),
            Ok(Extension::ServerNameAck)
        );
        assert_eq!(
            decode_hex("0000000100", C::EncryptedExtensions),
            Err(DecodeError::Trailing {
                what: "server_name"
            })
        );
    }

    #[test]
    fn duplicates_are_illegal_parameter() {
        let bytes = hex::decode("0008002a0000002a0000").unwrap();
        let err = decode_extensions(
            &mut Reader::new(&bytes),
            ExtensionContext::EncryptedExtensions,
        )
        .unwrap_err();
        assert_eq!(
            err,
            DecodeError::DuplicateExtension(ExtensionType::EarlyData)
        );
        assert_eq!(
            err.alert(),
            crate::messages::enums::AlertDescription::IllegalParameter
        );
        // The extremes of the type space (0 and 65535), and a repeat far apart.
        let mut block = vec![0, 0];
        for t in [0xffffu16, 0, 0x1234, 0xfffe, 0xffff] {
            block.extend_from_slice(&t.to_be_bytes());
            block.extend_from_slice(&[0, 0]);
        }
        let len = (block.len() - 2) as u16;
        block[..2].copy_from_slice(&len.to_be_bytes());
        assert_eq!(
            decode_extensions(
                &mut Reader::new(&block),
                ExtensionContext::EncryptedExtensions
            ),
            Err(DecodeError::DuplicateExtension(ExtensionType::Unknown(
                0xffff
            )))
        );
        block.truncate(block.len() - 4);
        block[..2].copy_from_slice(&(len - 4).to_be_bytes());
        let ctx = ExtensionContext::EncryptedExtensions;
        let exts = decode_extensions(&mut Reader::new(&block), ctx).unwrap();
        assert_eq!(exts.len(), 4);
    }

    /// Repeats are found whether the block is short (the inline list) or long (the bitmap it
    /// moves to past 32 extensions), and wherever the first occurrence was.
    #[test]
    fn duplicates_found_in_short_and_long_blocks() {
        let block = |types: &[u16]| {
            let mut b = vec![0, 0];
            for t in types {
                b.extend_from_slice(&t.to_be_bytes());
                b.extend_from_slice(&[0, 0]);
            }
            let len = (b.len() - 2) as u16;
            b[..2].copy_from_slice(&len.to_be_bytes());
            b
        };
        let ctx = ExtensionContext::EncryptedExtensions;
        for n in [1usize, 31, 32, 33, 64, 5000] {
            // Types this crate does not know, spread over 0x1000..0x98b1.
            let types: Vec<u16> = (0..n).map(|i| 0x1000 + (i as u16) * 7).collect();
            let exts = decode_extensions(&mut Reader::new(&block(&types)), ctx).unwrap();
            assert_eq!(exts.len(), n);
            for k in [0, n / 2, n - 1] {
                let mut dup = types.clone();
                dup.push(types[k]);
                assert_eq!(
                    decode_extensions(&mut Reader::new(&block(&dup)), ctx),
                    Err(DecodeError::DuplicateExtension(ExtensionType::Unknown(
                        types[k]
                    ))),
                    "{n} extensions, repeat of #{k}"
                );
            }
        }
    }

    #[test]
    fn unknown_types_round_trip() {
        assert_eq!(
            decode_hex("fafa0003010203", ExtensionContext::ClientHello),
            Ok(Extension::Unknown {
                typ: ExtensionType::Unknown(0xfafa),
                body: vec![1, 2, 3]
            })
        );
    }

    #[test]
    fn outgoing_extensions_encode_like_the_extensions_they_stand_for() {
        let groups = [NamedGroup::X25519, NamedGroup::secp256r1];
        let shares: [(NamedGroup, &[u8]); 2] = [
            (NamedGroup::X25519, &[1; 32]),
            (NamedGroup::secp256r1, &[4; 65]),
        ];
        let schemes = [SignatureScheme::ecdsa_secp256r1_sha256];
        let modes = [PskKeyExchangeMode::PskDheKe];
        let alpn = [b"h2".to_vec(), b"http/1.1".to_vec()];
        let extra = Extension::Cookie(vec![7; 5]);
        let all = [
            OutgoingExtension::HostName(b"example.com"),
            OutgoingExtension::SupportedGroups(&groups),
            OutgoingExtension::KeyShareClient(&shares),
            OutgoingExtension::SupportedVersionsClient(&[ProtocolVersion::TLSv1_3]),
            OutgoingExtension::SignatureAlgorithms(&schemes),
            OutgoingExtension::PskKeyExchangeModes(&modes),
            OutgoingExtension::Alpn(&alpn),
            OutgoingExtension::Ext(Cow::Borrowed(&extra)),
            Extension::RecordSizeLimit(512).into(),
            OutgoingExtension::CompressCertificate(&[
                CertificateCompressionAlgorithm::Brotli,
                CertificateCompressionAlgorithm::Unknown(0x4001),
            ]),
        ];
        for out in &all {
            let owned = out.to_extension();
            assert_eq!(out.typ(), owned.typ());
            let (mut a, mut b) = (Writer::with_layout(), Writer::with_layout());
            out.encode(&mut a);
            owned.encode(&mut b);
            let (a, b) = (a.into_layout(), b.into_layout());
            assert_eq!(a, b, "{owned:?}: same bytes and spans");
            // And the bytes decode (ClientHello context) back to the owned value.
            let mut r = Reader::new(&a.0);
            assert_eq!(
                Extension::decode(&mut r, ExtensionContext::ClientHello),
                Ok(owned)
            );
        }
        let (mut a, mut b) = (Writer::new(), Writer::new());
        encode_outgoing_extensions(&mut a, &all);
        let owned: Vec<Extension> = all.iter().map(OutgoingExtension::to_extension).collect();
        encode_extensions(&mut b, &owned);
        assert_eq!(a.into_bytes(), b.into_bytes());
    }

    #[test]
    fn spans_name_the_extension() {
        let ext = Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3);
        let mut w = Writer::with_layout();
        ext.encode(&mut w);
        let (bytes, spans) = w.into_layout();
        assert_eq!(bytes, hex::decode("002b00020304").unwrap());
        assert_eq!(spans[0].name, "supported_versions (43)");
        let names: Vec<_> = spans[0].children.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["type", "length", "selected_version"]);
    }
}
