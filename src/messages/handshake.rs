//! Handshake messages (RFC 8446 §4).
//!
//! ```text
//! struct {
//!     HandshakeType msg_type;    /* handshake type */
//!     uint24 length;             /* remaining bytes in message */
//!     select (Handshake.msg_type) { ... };
//! } Handshake;
//! ```
//!
//! A [`HandshakeMessage`] keeps the bytes it was decoded from beside the parse: the transcript
//! hash must cover what arrived on the wire (§4.4.1), not our re-encoding of it.

use super::codec::{DecodeError, Reader, Writer};
use super::enums::{
    CertificateCompressionAlgorithm, CipherSuite, ExtensionType, HandshakeType, KeyUpdateRequest,
    SignatureScheme,
};
use super::extensions::{
    decode_extension_block, decode_extensions, encode_extensions, encode_outgoing_extensions,
    Extension, ExtensionContext, OutgoingExtension,
};
use super::layout::Span;

/// ServerHello.random of a HelloRetryRequest: SHA-256("HelloRetryRequest") (§4.1.3).
pub const HRR_RANDOM: [u8; 32] = [
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
];

/// Last 8 bytes of ServerHello.random from a TLS 1.3 server that negotiated TLS 1.2 (§4.1.3).
pub const DOWNGRADE_TLS12: [u8; 8] = *b"DOWNGRD\x01";

/// Last 8 bytes of ServerHello.random from a server that negotiated TLS 1.1 or below (§4.1.3).
pub const DOWNGRADE_TLS11: [u8; 8] = *b"DOWNGRD\x00";

/// What the decoder needs to know from the connection state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeContext {
    /// Hash.length of the negotiated suite: the exact size of Finished.verify_data and of the
    /// message_hash body. 0 means "not known": any length is accepted and the state machine
    /// checks it.
    pub hash_len: usize,
}

/// Type and body length from the 4-byte handshake header, if `bytes` holds one (§4).
pub fn handshake_header(bytes: &[u8]) -> Option<(HandshakeType, usize)> {
    let mut r = Reader::new(bytes);
    let typ = r.u8("msg_type").ok()?;
    let len = r.u24("length").ok()?;
    Some((typ.into(), len as usize))
}

/// One handshake message: the parse and the exact bytes (4-byte header included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandshakeMessage {
    /// The decoded body.
    pub payload: HandshakePayload,
    /// The wire bytes, header included: what goes into the transcript hash.
    pub encoded: Vec<u8>,
}

impl HandshakeMessage {
    /// Encodes `payload` into a new message (one allocation of exactly its size).
    pub fn new(payload: HandshakePayload) -> Self {
        let mut encoded = Vec::with_capacity(payload.encoded_len());
        payload.encode_into(&mut encoded);
        HandshakeMessage { payload, encoded }
    }

    /// Decodes one whole message (header included); `bytes` must hold exactly that message.
    pub fn decode(bytes: &[u8], ctx: DecodeContext) -> Result<Self, DecodeError> {
        let payload = Self::decode_payload(bytes, ctx)?;
        Ok(HandshakeMessage {
            payload,
            encoded: bytes.to_vec(),
        })
    }

    /// [`decode`](Self::decode) keeping `bytes` as [`encoded`](Self::encoded) instead of copying
    /// them: what the connection does with each message the record layer hands it.
    pub fn decode_owned(bytes: Vec<u8>, ctx: DecodeContext) -> Result<Self, DecodeError> {
        Self::decode_owned_or_return(bytes, ctx).map_err(|(e, _)| e)
    }

    /// [`decode_owned`](Self::decode_owned) that hands the bytes back with the error, for a
    /// caller that looks at them again (a server telling a TLS 1.2 ClientHello from garbage).
    pub fn decode_owned_or_return(
        bytes: Vec<u8>,
        ctx: DecodeContext,
    ) -> Result<Self, (DecodeError, Vec<u8>)> {
        match Self::decode_payload(&bytes, ctx) {
            Ok(payload) => Ok(HandshakeMessage {
                payload,
                encoded: bytes,
            }),
            Err(e) => Err((e, bytes)),
        }
    }

    fn decode_payload(bytes: &[u8], ctx: DecodeContext) -> Result<HandshakePayload, DecodeError> {
        let mut r = Reader::new(bytes);
        let typ = HandshakeType::from(r.u8("msg_type")?);
        let mut body = r.sub_u24("handshake message")?;
        r.finish("handshake message")?;
        let payload = HandshakePayload::decode_body(typ, &mut body, ctx)?;
        body.finish(typ.name())?;
        Ok(payload)
    }

    /// msg_type.
    pub fn typ(&self) -> HandshakeType {
        self.payload.typ()
    }

    /// The named byte ranges of [`HandshakeMessage::encoded`], found by re-encoding the payload
    /// while recording spans (which gives the same bytes for any decoded message).
    pub fn layout(&self) -> Vec<Span> {
        self.payload.layout()
    }
}

/// The body of a handshake message, by msg_type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandshakePayload {
    /// §4.1.2.
    ClientHello(ClientHello),
    /// §4.1.3; also a HelloRetryRequest (see [`ServerHello::is_hello_retry_request`]).
    ServerHello(ServerHello),
    /// `struct { Extension extensions<0..2^16-1>; } EncryptedExtensions;` (§4.3.1).
    EncryptedExtensions(Vec<Extension>),
    /// §4.3.2.
    CertificateRequest(CertificateRequest),
    /// §4.4.2.
    Certificate(CertificatePayload),
    /// RFC 8879 §4: a Certificate, compressed; it replaces the Certificate message.
    CompressedCertificate(CompressedCertificate),
    /// §4.4.3.
    CertificateVerify(CertificateVerify),
    /// `struct { opaque verify_data[Hash.length]; } Finished;` (§4.4.4).
    Finished(Vec<u8>),
    /// §4.6.1.
    NewSessionTicket(NewSessionTicket),
    /// `struct {} EndOfEarlyData;` (§4.5).
    EndOfEarlyData,
    /// `struct { KeyUpdateRequest request_update; } KeyUpdate;` (§4.6.3).
    KeyUpdate(KeyUpdateRequest),
    /// The synthetic message that replaces ClientHello1 in the transcript after a
    /// HelloRetryRequest; its body is Hash(ClientHello1) (§4.4.1). Never sent.
    MessageHash(Vec<u8>),
    /// Any other msg_type, body kept byte-exact.
    Unknown {
        /// msg_type.
        typ: HandshakeType,
        /// The body.
        body: Vec<u8>,
    },
}

impl HandshakePayload {
    /// msg_type of this payload.
    pub fn typ(&self) -> HandshakeType {
        use HandshakePayload as P;
        use HandshakeType as T;
        match self {
            P::ClientHello(_) => T::ClientHello,
            P::ServerHello(_) => T::ServerHello,
            P::EncryptedExtensions(_) => T::EncryptedExtensions,
            P::CertificateRequest(_) => T::CertificateRequest,
            P::Certificate(_) => T::Certificate,
            P::CompressedCertificate(_) => T::CompressedCertificate,
            P::CertificateVerify(_) => T::CertificateVerify,
            P::Finished(_) => T::Finished,
            P::NewSessionTicket(_) => T::NewSessionTicket,
            P::EndOfEarlyData => T::EndOfEarlyData,
            P::KeyUpdate(_) => T::KeyUpdate,
            P::MessageHash(_) => T::MessageHash,
            P::Unknown { typ, .. } => *typ,
        }
    }

    fn decode_body(
        typ: HandshakeType,
        r: &mut Reader<'_>,
        ctx: DecodeContext,
    ) -> Result<Self, DecodeError> {
        use HandshakePayload as P;
        use HandshakeType as T;
        Ok(match typ {
            T::ClientHello => P::ClientHello(ClientHello::decode(r)?),
            T::ServerHello => P::ServerHello(ServerHello::decode(r)?),
            T::EncryptedExtensions => {
                P::EncryptedExtensions(decode_extensions(r, ExtensionContext::EncryptedExtensions)?)
            }
            T::CertificateRequest => P::CertificateRequest(CertificateRequest::decode(r)?),
            T::Certificate => P::Certificate(CertificatePayload::decode(r)?),
            T::CompressedCertificate => P::CompressedCertificate(CompressedCertificate::decode(r)?),
            T::CertificateVerify => P::CertificateVerify(CertificateVerify {
                scheme: r.u16("algorithm")?.into(),
                signature: r.vec_u16("signature")?,
            }),
            T::Finished => P::Finished(hash_sized(r, ctx, "verify_data")?),
            T::NewSessionTicket => P::NewSessionTicket(NewSessionTicket::decode(r)?),
            T::EndOfEarlyData => P::EndOfEarlyData,
            T::KeyUpdate => P::KeyUpdate(r.u8("request_update")?.into()),
            T::MessageHash => P::MessageHash(hash_sized(r, ctx, "message_hash")?),
            _ => P::Unknown {
                typ,
                body: r.rest().to_vec(),
            },
        })
    }

    /// Size of the whole message (4-byte header included), found by a measuring pass of the
    /// encoder, so the bytes can be written into a buffer allocated once.
    pub fn encoded_len(&self) -> usize {
        OutgoingMessage::Payload(self).encoded_len()
    }

    /// Appends the whole message (header included) to `out`; reserve
    /// [`encoded_len`](Self::encoded_len) first to avoid growing `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        OutgoingMessage::Payload(self).encode_into(out)
    }

    /// The named byte ranges of the encoded message (see [`HandshakeMessage::layout`]).
    pub fn layout(&self) -> Vec<Span> {
        OutgoingMessage::Payload(self).layout()
    }

    fn write_body(&self, w: &mut Writer) {
        use HandshakePayload as P;
        match self {
            P::ClientHello(ch) => client_hello_body(
                w,
                ClientHelloFields {
                    legacy_version: ch.legacy_version,
                    random: &ch.random,
                    legacy_session_id: &ch.legacy_session_id,
                    cipher_suites: &ch.cipher_suites,
                    legacy_compression_methods: &ch.legacy_compression_methods,
                },
                |w| encode_extensions(w, &ch.extensions),
            ),
            P::ServerHello(sh) => sh.encode(w),
            P::EncryptedExtensions(exts) => encode_extensions(w, exts),
            P::CertificateRequest(cr) => {
                w.span("certificate_request_context", |w| w.opaque_u8(&cr.context));
                encode_extensions(w, &cr.extensions);
            }
            P::Certificate(c) => certificate_body(
                w,
                &c.context,
                c.entries
                    .iter()
                    .map(|e| (e.cert_data.as_slice(), e.extensions.as_slice())),
            ),
            P::CompressedCertificate(cc) => compressed_certificate_body(
                w,
                cc.algorithm,
                cc.uncompressed_length,
                &cc.compressed_certificate_message,
            ),
            P::CertificateVerify(cv) => {
                w.span("algorithm", |w| w.u16(cv.scheme.into()));
                w.span("signature", |w| w.opaque_u16(&cv.signature));
            }
            P::Finished(verify_data) => finished_body(w, verify_data),
            P::NewSessionTicket(nst) => nst.encode(w),
            P::EndOfEarlyData => {}
            P::KeyUpdate(req) => w.span("request_update", |w| w.u8((*req).into())),
            P::MessageHash(hash) => w.span("hash", |w| w.bytes(hash)),
            P::Unknown { body, .. } => w.span("body", |w| w.bytes(body)),
        }
    }
}

/// `opaque x[Hash.length]`: exactly `ctx.hash_len` bytes when that is known, else the rest.
fn hash_sized(
    r: &mut Reader<'_>,
    ctx: DecodeContext,
    what: &'static str,
) -> Result<Vec<u8>, DecodeError> {
    match ctx.hash_len {
        0 => Ok(r.rest().to_vec()),
        n => Ok(r.bytes(n, what)?.to_vec()),
    }
}

/// `opaque legacy_session_id<0..32>` and `legacy_session_id_echo<0..32>`.
fn session_id(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<u8>, DecodeError> {
    Ok(r.sub_u8(what)?.at_most(32, what)?.rest().to_vec())
}

/// ```text
/// struct {
///     ProtocolVersion legacy_version = 0x0303;    /* TLS v1.2 */
///     Random random;
///     opaque legacy_session_id<0..32>;
///     CipherSuite cipher_suites<2..2^16-2>;
///     opaque legacy_compression_methods<1..2^8-1>;
///     Extension extensions<8..2^16-1>;
/// } ClientHello;
/// ```
/// §4.1.2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientHello {
    /// Always 0x0303 in TLS 1.3; the real versions are in supported_versions.
    pub legacy_version: u16,
    /// 32 random bytes.
    pub random: [u8; 32],
    /// Echoed by the server; non-empty in middlebox compatibility mode (§D.4).
    pub legacy_session_id: Vec<u8>,
    /// Offered suites, most preferred first.
    pub cipher_suites: Vec<CipherSuite>,
    /// Must be exactly `[0]` in TLS 1.3 (the state machine checks).
    pub legacy_compression_methods: Vec<u8>,
    /// Extensions in wire order.
    pub extensions: Vec<Extension>,
}

impl ClientHello {
    /// The extension of type `t`, if present.
    pub fn find(&self, t: ExtensionType) -> Option<&Extension> {
        self.extensions.iter().find(|e| e.typ() == t)
    }

    /// The first host_name in server_name (RFC 6066 §3), for reports.
    pub fn host_name(&self) -> Option<String> {
        match self.find(ExtensionType::ServerName) {
            Some(Extension::ServerName(names)) => names
                .iter()
                .find(|n| n.typ == super::enums::ServerNameType::HostName)
                .map(|n| String::from_utf8_lossy(&n.name).into_owned()),
            _ => None,
        }
    }

    /// Length of the binders list (2-byte prefix + entries) at the end of the encoding, 0 if the
    /// last extension is not pre_shared_key. The partial ClientHello that binders are computed
    /// over is `encoded[..encoded.len() - binders_len()]` (§4.2.11.2).
    pub fn binders_len(&self) -> usize {
        match self.extensions.last() {
            Some(Extension::PreSharedKeyClient(psks)) => psks.binders_len(),
            _ => 0,
        }
    }

    /// Writes `binders` into the pre_shared_key extension, which is last (§4.2.11); false,
    /// changing nothing, when the last extension is not pre_shared_key. A binder of the length
    /// the placeholder had leaves every length prefix, and the bytes it covers, as they were.
    #[must_use]
    pub fn set_psk_binders(&mut self, binders: Vec<Vec<u8>>) -> bool {
        match self.extensions.last_mut() {
            Some(Extension::PreSharedKeyClient(psks)) => {
                psks.binders = binders;
                true
            }
            _ => false,
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Self::decode_with(r, false)
    }

    /// The body of a ClientHello by the TLS 1.2 grammar (RFC 5246 §7.4.1.2), which RFC 8446's
    /// is stricter than: the extension block may be absent or shorter than 8 bytes. A server
    /// that cannot decode a ClientHello by RFC 8446 uses it to tell a well-formed TLS 1.2
    /// ClientHello (answered with protocol_version, §4.2.1) from a malformed one
    /// (decode_error). An absent block comes back as no extensions, so the result does not
    /// always re-encode to `body`; it is never a message of its own.
    pub fn decode_tls12(body: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body);
        let ch = Self::decode_with(&mut r, true)?;
        r.finish("ClientHello")?;
        Ok(ch)
    }

    fn decode_with(r: &mut Reader<'_>, tls12: bool) -> Result<Self, DecodeError> {
        Ok(ClientHello {
            legacy_version: r.u16("legacy_version")?,
            random: r.array("random")?,
            legacy_session_id: session_id(r, "legacy_session_id")?,
            cipher_suites: r
                .sub_u16("cipher_suites")?
                .at_least(2, "cipher_suites")?
                .u16_items("cipher_suites")?,
            legacy_compression_methods: r
                .sub_u8("legacy_compression_methods")?
                .at_least(1, "legacy_compression_methods")?
                .rest()
                .to_vec(),
            extensions: match (tls12, r.is_empty()) {
                (true, true) => Vec::new(),
                (true, false) => decode_extension_block(r, ExtensionContext::ClientHello, 0)?,
                (false, _) => decode_extensions(r, ExtensionContext::ClientHello)?,
            },
        })
    }
}

/// The fields of a ClientHello before its extensions, borrowed.
#[derive(Clone, Copy)]
struct ClientHelloFields<'a> {
    legacy_version: u16,
    random: &'a [u8; 32],
    legacy_session_id: &'a [u8],
    cipher_suites: &'a [CipherSuite],
    legacy_compression_methods: &'a [u8],
}

/// A ClientHello body: `fields`, then the extension block `extensions` writes. Shared by
/// [`ClientHello`] and [`ClientHelloOut`].
fn client_hello_body(
    w: &mut Writer,
    fields: ClientHelloFields<'_>,
    extensions: impl FnOnce(&mut Writer),
) {
    w.span("legacy_version", |w| w.u16(fields.legacy_version));
    w.span("random", |w| w.bytes(fields.random));
    w.span("legacy_session_id", |w| {
        w.opaque_u8(fields.legacy_session_id)
    });
    w.span("cipher_suites", |w| {
        w.len_u16(|w| {
            for &s in fields.cipher_suites {
                w.span(s, |w| w.u16(s.into()));
            }
        })
    });
    w.span("legacy_compression_methods", |w| {
        w.opaque_u8(fields.legacy_compression_methods)
    });
    extensions(w);
}

/// A ClientHello to send, borrowing its suites and extension contents from the client's
/// configuration and keys (see [`OutgoingExtension`]); encodes exactly like the
/// [`ClientHello`] [`to_client_hello`](Self::to_client_hello) returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientHelloOut<'a> {
    /// Always 0x0303 in TLS 1.3.
    pub legacy_version: u16,
    /// 32 random bytes.
    pub random: [u8; 32],
    /// Empty, or 32 bytes in middlebox compatibility mode (§D.4).
    pub legacy_session_id: &'a [u8],
    /// Offered suites, most preferred first.
    pub cipher_suites: &'a [CipherSuite],
    /// `[0]` in TLS 1.3.
    pub legacy_compression_methods: &'a [u8],
    /// Extensions in wire order (pre_shared_key last, §4.2.11).
    pub extensions: Vec<OutgoingExtension<'a>>,
}

impl ClientHelloOut<'_> {
    /// Whether an extension of type `t` is offered.
    pub fn offers(&self, t: ExtensionType) -> bool {
        self.extensions.iter().any(|e| e.typ() == t)
    }

    /// [`ClientHello::set_psk_binders`] on this hello.
    #[must_use]
    pub fn set_psk_binders(&mut self, binders: Vec<Vec<u8>>) -> bool {
        match self.extensions.last_mut() {
            // Checked before `to_mut`, which would copy a borrowed extension.
            Some(OutgoingExtension::Ext(e))
                if matches!(e.as_ref(), Extension::PreSharedKeyClient(_)) =>
            {
                if let Extension::PreSharedKeyClient(psks) = e.to_mut() {
                    psks.binders = binders;
                }
                true
            }
            _ => false,
        }
    }

    /// [`ClientHello::binders_len`] of this hello.
    pub fn binders_len(&self) -> usize {
        match self.extensions.last() {
            Some(OutgoingExtension::Ext(e)) => match e.as_ref() {
                Extension::PreSharedKeyClient(psks) => psks.binders_len(),
                _ => 0,
            },
            _ => 0,
        }
    }

    /// Size of the whole message, 4-byte header included (what RFC 7685 padding is computed
    /// from), without encoding it.
    pub fn message_len(&self) -> usize {
        OutgoingMessage::ClientHello(self).encoded_len()
    }

    /// The owned [`ClientHello`] this stands for (copies what it borrows).
    pub fn to_client_hello(&self) -> ClientHello {
        ClientHello {
            legacy_version: self.legacy_version,
            random: self.random,
            legacy_session_id: self.legacy_session_id.to_vec(),
            cipher_suites: self.cipher_suites.to_vec(),
            legacy_compression_methods: self.legacy_compression_methods.to_vec(),
            extensions: self
                .extensions
                .iter()
                .map(OutgoingExtension::to_extension)
                .collect(),
        }
    }

    fn encode(&self, w: &mut Writer) {
        client_hello_body(
            w,
            ClientHelloFields {
                legacy_version: self.legacy_version,
                random: &self.random,
                legacy_session_id: self.legacy_session_id,
                cipher_suites: self.cipher_suites,
                legacy_compression_methods: self.legacy_compression_methods,
            },
            |w| encode_outgoing_extensions(w, &self.extensions),
        );
    }
}

/// A handshake message to send, encoded from what the sender holds without first copying it
/// into a [`HandshakePayload`]: the connection encodes these straight into its output buffer.
/// Each encodes to exactly the bytes and layout of the payload it stands for.
#[derive(Clone, Copy, Debug)]
pub enum OutgoingMessage<'a> {
    /// Any payload.
    Payload(&'a HandshakePayload),
    /// A ClientHello built from the client's configuration and keys.
    ClientHello(&'a ClientHelloOut<'a>),
    /// [`HandshakePayload::Finished`] with this verify_data (§4.4.4).
    Finished(&'a [u8]),
    /// [`HandshakePayload::Certificate`] (§4.4.2): `context`, then each certificate of `chain`
    /// (DER, end-entity first), the first with `first_extensions` (e.g. an empty
    /// trust_anchors), the others without per-certificate extensions.
    Certificate {
        /// certificate_request_context.
        context: &'a [u8],
        /// The certificates.
        chain: &'a [Vec<u8>],
        /// The first CertificateEntry's extensions.
        first_extensions: &'a [Extension],
    },
    /// [`HandshakePayload::CompressedCertificate`] (RFC 8879 §4) of compressed bytes the
    /// sender keeps (a cache per credential).
    CompressedCertificate {
        /// The algorithm.
        algorithm: CertificateCompressionAlgorithm,
        /// Length of the Certificate message body the bytes decompress to.
        uncompressed_length: u32,
        /// compressed_certificate_message.
        compressed: &'a [u8],
    },
}

impl<'a> From<&'a HandshakePayload> for OutgoingMessage<'a> {
    fn from(p: &'a HandshakePayload) -> Self {
        OutgoingMessage::Payload(p)
    }
}

impl OutgoingMessage<'_> {
    /// msg_type.
    pub fn typ(&self) -> HandshakeType {
        match self {
            OutgoingMessage::Payload(p) => p.typ(),
            OutgoingMessage::ClientHello(_) => HandshakeType::ClientHello,
            OutgoingMessage::Finished(_) => HandshakeType::Finished,
            OutgoingMessage::Certificate { .. } => HandshakeType::Certificate,
            OutgoingMessage::CompressedCertificate { .. } => HandshakeType::CompressedCertificate,
        }
    }

    /// Size of the whole message (4-byte header included), found by a measuring pass of the
    /// encoder, so the bytes can be written into a buffer allocated once.
    pub fn encoded_len(&self) -> usize {
        let mut w = Writer::measuring();
        self.write(&mut w);
        w.len()
    }

    /// Appends the whole message (header included) to `out`. The connection encodes what it
    /// sends straight into its output buffer this way; reserve
    /// [`encoded_len`](Self::encoded_len) first to avoid growing `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let mut w = Writer::appending(core::mem::take(out));
        self.write(&mut w);
        *out = w.into_bytes();
    }

    /// The named byte ranges of the encoded message (see [`HandshakeMessage::layout`]).
    pub fn layout(&self) -> Vec<Span> {
        let mut w = Writer::with_layout();
        self.write(&mut w);
        w.into_layout().1
    }

    /// The body alone, without the 4-byte header: what RFC 8879 §4 compresses (the
    /// Certificate's body, as BoringSSL, OpenSSL and rustls do; uncompressed_length counts it).
    pub fn body_bytes(&self) -> Vec<u8> {
        let mut w = Writer::measuring();
        self.write_body(&mut w);
        let mut out = Writer::appending(Vec::with_capacity(w.len()));
        self.write_body(&mut out);
        out.into_bytes()
    }

    /// Header (spans "msg_type", "length") and body.
    fn write(&self, w: &mut Writer) {
        w.span("msg_type", |w| w.u8(self.typ().into()));
        w.len_u24(|w| self.write_body(w));
    }

    fn write_body(&self, w: &mut Writer) {
        match self {
            OutgoingMessage::Payload(p) => p.write_body(w),
            OutgoingMessage::ClientHello(ch) => ch.encode(w),
            OutgoingMessage::Finished(verify_data) => finished_body(w, verify_data),
            OutgoingMessage::Certificate {
                context,
                chain,
                first_extensions,
            } => certificate_body(
                w,
                context,
                chain.iter().enumerate().map(|(i, c)| {
                    let exts = if i == 0 { *first_extensions } else { &[] };
                    (c.as_slice(), exts)
                }),
            ),
            OutgoingMessage::CompressedCertificate {
                algorithm,
                uncompressed_length,
                compressed,
            } => compressed_certificate_body(w, *algorithm, *uncompressed_length, compressed),
        }
    }
}

/// `Finished` (§4.4.4): `opaque verify_data[Hash.length]`.
fn finished_body(w: &mut Writer, verify_data: &[u8]) {
    w.span("verify_data", |w| w.bytes(verify_data))
}

/// `Certificate` (§4.4.2): the context, then each entry's cert_data and extensions.
fn certificate_body<'c>(
    w: &mut Writer,
    context: &[u8],
    entries: impl Iterator<Item = (&'c [u8], &'c [Extension])>,
) {
    w.span("certificate_request_context", |w| w.opaque_u8(context));
    w.span("certificate_list", |w| {
        w.len_u24(|w| {
            for (cert, extensions) in entries {
                w.span("certificate_entry", |w| {
                    w.span("cert_data", |w| w.opaque_u24(cert));
                    encode_extensions(w, extensions);
                });
            }
        })
    });
}

/// ```text
/// struct {
///     ProtocolVersion legacy_version = 0x0303;    /* TLS v1.2 */
///     Random random;
///     opaque legacy_session_id_echo<0..32>;
///     CipherSuite cipher_suite;
///     uint8 legacy_compression_method = 0;
///     Extension extensions<6..2^16-1>;
/// } ServerHello;
/// ```
/// §4.1.3. A HelloRetryRequest has the same structure with [`HRR_RANDOM`] (§4.1.4); its
/// extensions are decoded in the HelloRetryRequest context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerHello {
    /// 0x0303; checked by the state machine, not the decoder.
    pub legacy_version: u16,
    /// 32 random bytes, or [`HRR_RANDOM`].
    pub random: [u8; 32],
    /// Must echo the ClientHello's legacy_session_id (the state machine checks).
    pub legacy_session_id_echo: Vec<u8>,
    /// The selected suite.
    pub cipher_suite: CipherSuite,
    /// 0; checked by the state machine.
    pub legacy_compression_method: u8,
    /// Extensions in wire order.
    pub extensions: Vec<Extension>,
}

impl ServerHello {
    /// True if this is a HelloRetryRequest (§4.1.3: "MUST first examine the Random value").
    pub fn is_hello_retry_request(&self) -> bool {
        self.random == HRR_RANDOM
    }

    /// The extension of type `t`, if present.
    pub fn find(&self, t: ExtensionType) -> Option<&Extension> {
        self.extensions.iter().find(|e| e.typ() == t)
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let legacy_version = r.u16("legacy_version")?;
        let random = r.array("random")?;
        let ctx = if random == HRR_RANDOM {
            ExtensionContext::HelloRetryRequest
        } else {
            ExtensionContext::ServerHello
        };
        Ok(ServerHello {
            legacy_version,
            random,
            legacy_session_id_echo: session_id(r, "legacy_session_id_echo")?,
            cipher_suite: r.u16("cipher_suite")?.into(),
            legacy_compression_method: r.u8("legacy_compression_method")?,
            extensions: decode_extensions(r, ctx)?,
        })
    }

    fn encode(&self, w: &mut Writer) {
        w.span("legacy_version", |w| w.u16(self.legacy_version));
        w.span("random", |w| w.bytes(&self.random));
        w.span("legacy_session_id_echo", |w| {
            w.opaque_u8(&self.legacy_session_id_echo)
        });
        w.span("cipher_suite", |w| w.u16(self.cipher_suite.into()));
        w.span("legacy_compression_method", |w| {
            w.u8(self.legacy_compression_method)
        });
        encode_extensions(w, &self.extensions);
    }
}

/// ```text
/// struct {
///     opaque certificate_request_context<0..2^8-1>;
///     Extension extensions<2..2^16-1>;
/// } CertificateRequest;
/// ```
/// §4.3.2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateRequest {
    /// Echoed in the client's Certificate; empty during the handshake.
    pub context: Vec<u8>,
    /// signature_algorithms is required (the state machine checks).
    pub extensions: Vec<Extension>,
}

impl CertificateRequest {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(CertificateRequest {
            context: r.vec_u8("certificate_request_context")?,
            extensions: decode_extensions(r, ExtensionContext::CertificateRequest)?,
        })
    }
}

/// ```text
/// struct {
///     opaque certificate_request_context<0..2^8-1>;
///     CertificateEntry certificate_list<0..2^24-1>;
/// } Certificate;
/// ```
/// §4.4.2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificatePayload {
    /// Empty for a server; echoes CertificateRequest's context for a client.
    pub context: Vec<u8>,
    /// The chain, end-entity first.
    pub entries: Vec<CertificateEntry>,
}

/// ```text
/// struct {
///     opaque cert_data<1..2^24-1>;     /* certificate_type X509 */
///     Extension extensions<0..2^16-1>;
/// } CertificateEntry;
/// ```
/// §4.4.2. Only the X.509 form is modelled (no RawPublicKey, RFC 7250).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateEntry {
    /// DER certificate.
    pub cert_data: Vec<u8>,
    /// Per-certificate extensions (OCSP status, SCTs).
    pub extensions: Vec<Extension>,
}

impl CertificatePayload {
    /// Decodes a Certificate body given without its handshake header: what a
    /// CompressedCertificate decompresses to (RFC 8879 §4).
    pub fn from_body(body: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body);
        let c = Self::decode(&mut r)?;
        r.finish(HandshakeType::Certificate.name())?;
        Ok(c)
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let context = r.vec_u8("certificate_request_context")?;
        let entries = r
            .sub_u24("certificate_list")?
            .items("certificate_list", |r| {
                Ok(CertificateEntry {
                    cert_data: r
                        .sub_u24("cert_data")?
                        .at_least(1, "cert_data")?
                        .rest()
                        .to_vec(),
                    extensions: decode_extensions(r, ExtensionContext::Certificate)?,
                })
            })?;
        Ok(CertificatePayload { context, entries })
    }
}

/// ```text
/// struct {
///      CertificateCompressionAlgorithm algorithm;
///      uint24 uncompressed_length;
///      opaque compressed_certificate_message<1..2^24-1>;
/// } CompressedCertificate;
/// ```
/// RFC 8879 §4. Decoding checks the grammar only; whether the algorithm was offered, the
/// length is within the limit and the bytes decompress to it is the state machine's call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressedCertificate {
    /// One of the algorithms the receiver's compress_certificate extension listed.
    pub algorithm: CertificateCompressionAlgorithm,
    /// Length of the Certificate message (its body) once decompressed.
    pub uncompressed_length: u32,
    /// The compressed Certificate message body.
    pub compressed_certificate_message: Vec<u8>,
}

impl CompressedCertificate {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(CompressedCertificate {
            algorithm: r.u16("algorithm")?.into(),
            uncompressed_length: r.u24("uncompressed_length")?,
            compressed_certificate_message: r
                .sub_u24("compressed_certificate_message")?
                .at_least(1, "compressed_certificate_message")?
                .rest()
                .to_vec(),
        })
    }
}

/// `CompressedCertificate` (RFC 8879 §4).
fn compressed_certificate_body(
    w: &mut Writer,
    algorithm: CertificateCompressionAlgorithm,
    uncompressed_length: u32,
    compressed: &[u8],
) {
    w.span("algorithm", |w| w.u16(algorithm.into()));
    w.span("uncompressed_length", |w| w.u24(uncompressed_length));
    w.span("compressed_certificate_message", |w| {
        w.opaque_u24(compressed)
    });
}

/// ```text
/// struct {
///     SignatureScheme algorithm;
///     opaque signature<0..2^16-1>;
/// } CertificateVerify;
/// ```
/// §4.4.3.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateVerify {
    /// algorithm.
    pub scheme: SignatureScheme,
    /// The signature over the §4.4.3 content.
    pub signature: Vec<u8>,
}

/// ```text
/// struct {
///     uint32 ticket_lifetime;
///     uint32 ticket_age_add;
///     opaque ticket_nonce<0..255>;
///     opaque ticket<1..2^16-1>;
///     Extension extensions<0..2^16-2>;
/// } NewSessionTicket;
/// ```
/// §4.6.1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSessionTicket {
    /// Seconds; at most 604800 (the state machine checks).
    pub lifetime: u32,
    /// Added to the ticket age to obfuscate it (§4.2.11.1).
    pub age_add: u32,
    /// Makes each ticket's PSK unique (§4.6.1).
    pub nonce: Vec<u8>,
    /// The opaque label the client offers as its PSK identity.
    pub ticket: Vec<u8>,
    /// e.g. early_data's max_early_data_size.
    pub extensions: Vec<Extension>,
}

impl NewSessionTicket {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(NewSessionTicket {
            lifetime: r.u32("ticket_lifetime")?,
            age_add: r.u32("ticket_age_add")?,
            nonce: r.vec_u8("ticket_nonce")?,
            ticket: r.sub_u16("ticket")?.at_least(1, "ticket")?.rest().to_vec(),
            extensions: decode_extensions(r, ExtensionContext::NewSessionTicket)?,
        })
    }

    fn encode(&self, w: &mut Writer) {
        w.span("ticket_lifetime", |w| w.u32(self.lifetime));
        w.span("ticket_age_add", |w| w.u32(self.age_add));
        w.span("ticket_nonce", |w| w.opaque_u8(&self.nonce));
        w.span("ticket", |w| w.opaque_u16(&self.ticket));
        encode_extensions(w, &self.extensions);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::enums::{NamedGroup, ProtocolVersion};
    use crate::messages::layout::check_tiling;

    /// RFC 8448 §5: the HelloRetryRequest (selected group secp256r1, a cookie).
    const HRR: &str =
        "020000ac0303cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c0013\
        01000084003300020017002c0074007271dcd04bb88bc3189119398a00000000eefafc76c146b823\
        b096f8aacad365dd0030953f4edf625636e5f21bb2e23fcc654b1b5b40318d10d137abcbb87574e3\
        6e8a1f025f7dfa5d6e50781b5eda4aa15b0c8be778257d16aa3030e9e7841dd9e4c0342267e8ca0c\
        af571fb2b7cff0f934b0002b00020304";

    fn hex(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    fn round_trip(bytes: &[u8], ctx: DecodeContext) -> HandshakeMessage {
        let msg = HandshakeMessage::decode(bytes, ctx).unwrap();
        assert_eq!(HandshakeMessage::new(msg.payload.clone()).encoded, bytes);
        let mut w = Writer::with_layout();
        OutgoingMessage::Payload(&msg.payload).write(&mut w);
        let (relaid, spans) = w.into_layout();
        assert_eq!(relaid, bytes, "recording spans does not change the bytes");
        check_tiling(&spans, bytes.len()).unwrap();
        msg
    }

    #[test]
    fn header_is_parsed() {
        assert_eq!(
            handshake_header(&[20, 0, 0, 32]),
            Some((HandshakeType::Finished, 32))
        );
        assert_eq!(handshake_header(&[20, 0, 0]), None);
    }

    #[test]
    fn hello_retry_request_is_detected_by_random() {
        let msg = round_trip(&hex(HRR), DecodeContext::default());
        let HandshakePayload::ServerHello(sh) = &msg.payload else {
            panic!("not a ServerHello: {msg:?}")
        };
        assert!(sh.is_hello_retry_request());
        assert_eq!(
            sh.find(ExtensionType::KeyShare),
            Some(&Extension::KeyShareHrr(NamedGroup::secp256r1))
        );
        assert!(matches!(
            sh.find(ExtensionType::Cookie),
            Some(Extension::Cookie(c)) if c.len() == 0x72
        ));
    }

    #[test]
    fn minimal_hrr_uses_the_hrr_context() {
        let sh = ServerHello {
            legacy_version: 0x0303,
            random: HRR_RANDOM,
            legacy_session_id_echo: vec![],
            cipher_suite: CipherSuite::TLS_AES_128_GCM_SHA256,
            legacy_compression_method: 0,
            extensions: vec![Extension::KeyShareHrr(NamedGroup::secp256r1)],
        };
        let msg = HandshakeMessage::new(HandshakePayload::ServerHello(sh.clone()));
        let back = round_trip(&msg.encoded, DecodeContext::default());
        assert_eq!(back.payload, HandshakePayload::ServerHello(sh));
    }

    #[test]
    fn client_hello_layout_names_the_rfc_fields() {
        let ch = ClientHello {
            legacy_version: 0x0303,
            random: [7; 32],
            legacy_session_id: vec![1; 32],
            cipher_suites: vec![CipherSuite::TLS_AES_128_GCM_SHA256],
            legacy_compression_methods: vec![0],
            // extensions<8..2^16-1>: one version alone would be a 7-byte block.
            extensions: vec![Extension::SupportedVersionsClient(vec![
                ProtocolVersion::TLSv1_3,
                ProtocolVersion::TLSv1_2,
            ])],
        };
        let msg = HandshakeMessage::new(HandshakePayload::ClientHello(ch));
        let spans = msg.layout();
        let names: Vec<_> = spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "msg_type",
                "length",
                "legacy_version",
                "random",
                "legacy_session_id",
                "cipher_suites",
                "legacy_compression_methods",
                "extensions"
            ]
        );
        round_trip(&msg.encoded, DecodeContext::default());
    }

    #[test]
    fn outgoing_messages_encode_like_the_payloads_they_stand_for() {
        let shares: [(NamedGroup, &[u8]); 1] = [(NamedGroup::X25519, &[9; 32])];
        let suites = [CipherSuite::TLS_AES_128_GCM_SHA256];
        let ch = ClientHelloOut {
            legacy_version: 0x0303,
            random: [7; 32],
            legacy_session_id: &[1; 32],
            cipher_suites: &suites,
            legacy_compression_methods: &[0],
            extensions: vec![
                OutgoingExtension::HostName(b"localhost"),
                OutgoingExtension::KeyShareClient(&shares),
                OutgoingExtension::SupportedVersionsClient(&[ProtocolVersion::TLSv1_3]),
            ],
        };
        let chain = [vec![0x30, 1, 2], vec![0x30, 3]];
        let cases = [
            (
                OutgoingMessage::ClientHello(&ch),
                HandshakePayload::ClientHello(ch.to_client_hello()),
            ),
            (
                OutgoingMessage::Finished(&[0xab; 32]),
                HandshakePayload::Finished(vec![0xab; 32]),
            ),
            (
                OutgoingMessage::Certificate {
                    context: &[],
                    chain: &chain,
                    first_extensions: &[],
                },
                HandshakePayload::Certificate(CertificatePayload {
                    context: vec![],
                    entries: chain
                        .iter()
                        .map(|c| CertificateEntry {
                            cert_data: c.clone(),
                            extensions: vec![],
                        })
                        .collect(),
                }),
            ),
            (
                OutgoingMessage::CompressedCertificate {
                    algorithm: CertificateCompressionAlgorithm::Zstd,
                    uncompressed_length: 300,
                    compressed: &[1, 2, 3],
                },
                HandshakePayload::CompressedCertificate(CompressedCertificate {
                    algorithm: CertificateCompressionAlgorithm::Zstd,
                    uncompressed_length: 300,
                    compressed_certificate_message: vec![1, 2, 3],
                }),
            ),
        ];
        for (out, payload) in cases {
            let bytes = HandshakeMessage::new(payload.clone()).encoded;
            assert_eq!(
                out.body_bytes(),
                bytes[4..],
                "the body is the message less its header"
            );
            let mut sent = vec![0xee]; // appended after what the buffer holds
            sent.reserve(out.encoded_len());
            out.encode_into(&mut sent);
            assert_eq!(&sent[1..], bytes);
            assert_eq!(out.encoded_len(), bytes.len());
            assert_eq!(out.typ(), payload.typ());
            assert_eq!(out.layout(), payload.layout());
            assert_eq!(
                round_trip(&bytes, DecodeContext::default()).payload,
                payload
            );
        }
        assert_eq!(
            ch.message_len(),
            HandshakePayload::ClientHello(ch.to_client_hello()).encoded_len()
        );
    }

    #[test]
    fn binders_len_covers_the_binders_vector() {
        let psks = crate::messages::extensions::OfferedPsks {
            identities: vec![crate::messages::extensions::PskIdentity {
                identity: vec![9; 10],
                obfuscated_ticket_age: 1,
            }],
            binders: vec![vec![0xbb; 32]],
        };
        let ch = ClientHello {
            legacy_version: 0x0303,
            random: [0; 32],
            legacy_session_id: vec![],
            cipher_suites: vec![CipherSuite::TLS_AES_128_GCM_SHA256],
            legacy_compression_methods: vec![0],
            extensions: vec![
                Extension::SupportedVersionsClient(vec![ProtocolVersion::TLSv1_3]),
                Extension::PreSharedKeyClient(psks),
            ],
        };
        assert_eq!(ch.binders_len(), 2 + 1 + 32);
        let msg = HandshakeMessage::new(HandshakePayload::ClientHello(ch));
        let tail = &msg.encoded[msg.encoded.len() - 35..];
        assert_eq!(&tail[..3], &[0, 33, 32]);
    }

    #[test]
    fn finished_length_is_checked_when_known() {
        let mut bytes = vec![20, 0, 0, 33];
        bytes.extend([0u8; 33]);
        let ctx = DecodeContext { hash_len: 32 };
        assert_eq!(
            HandshakeMessage::decode(&bytes, ctx).err(),
            Some(DecodeError::Trailing { what: "finished" })
        );
        assert!(HandshakeMessage::decode(&bytes, DecodeContext::default()).is_ok());
    }

    #[test]
    fn unknown_types_and_bad_lengths() {
        let msg = round_trip(&[12, 0, 0, 2, 0xaa, 0xbb], DecodeContext::default());
        assert_eq!(
            msg.payload,
            HandshakePayload::Unknown {
                typ: HandshakeType::ServerKeyExchange,
                body: vec![0xaa, 0xbb]
            }
        );
        // Header promises more than there is / less than there is.
        assert!(HandshakeMessage::decode(&[5, 0, 0, 1], DecodeContext::default()).is_err());
        assert_eq!(
            HandshakeMessage::decode(&[5, 0, 0, 0, 0], DecodeContext::default()).err(),
            Some(DecodeError::Trailing {
                what: "handshake message"
            })
        );
    }

    #[test]
    fn downgrade_sentinels_match_the_rfc() {
        assert_eq!(
            DOWNGRADE_TLS12,
            [0x44, 0x4f, 0x57, 0x4e, 0x47, 0x52, 0x44, 0x01]
        );
        assert_eq!(
            DOWNGRADE_TLS11,
            [0x44, 0x4f, 0x57, 0x4e, 0x47, 0x52, 0x44, 0x00]
        );
    }
}
