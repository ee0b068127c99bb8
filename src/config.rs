//! Client and server configuration.
//!
//! Defaults are what a modern client/server sends; every knob a researcher wants to turn (extension
//! order, extra extensions, padding, compatibility mode, which groups get a key share) is a field.

use std::sync::Arc;

use crate::certcomp::CompressionCache;
use crate::crypto::cert::SignatureMemo;
use crate::crypto::random::RandomSource;
#[cfg(feature = "ring-sign")]
use crate::crypto::ring_signer::RingEcdsaSigner;
use crate::crypto::sign::SigningKey;
use crate::error::Error;
use crate::events::Observe;
use crate::messages::ech::EchConfigList;
use crate::messages::enums::{
    CertificateCompressionAlgorithm, CipherSuite, ExtensionType, NamedGroup, PskKeyExchangeMode,
    SignatureScheme,
};
use crate::messages::extensions::Extension;
use crate::record::PaddingPolicy;
use crate::session::ServerSessions;

/// Default cap on one handshake message (checked before reassembly).
pub const DEFAULT_MAX_HANDSHAKE_MESSAGE: usize = 64 * 1024;

/// Something that can produce CertificateVerify signatures.
///
/// [`SigningKey`] is the usual implementation; tests replaying RFC 8448 use one that returns the
/// published (randomized) RSA-PSS signature.
pub trait Signer: Send + Sync {
    /// The schemes this key can sign with, in preference order.
    fn schemes(&self) -> Vec<SignatureScheme>;
    /// Sign `message` (the §4.4.3 content) with `scheme`, drawing any randomness from `rng`.
    fn sign(
        &self,
        scheme: SignatureScheme,
        message: &[u8],
        rng: &mut dyn RandomSource,
    ) -> Result<Vec<u8>, Error>;
}

impl Signer for SigningKey {
    fn schemes(&self) -> Vec<SignatureScheme> {
        SigningKey::schemes(self).to_vec()
    }

    fn sign(
        &self,
        scheme: SignatureScheme,
        message: &[u8],
        rng: &mut dyn RandomSource,
    ) -> Result<Vec<u8>, Error> {
        SigningKey::sign(self, scheme, message, rng).map_err(Error::Signature)
    }
}

#[cfg(feature = "ring-sign")]
impl Signer for RingEcdsaSigner {
    fn schemes(&self) -> Vec<SignatureScheme> {
        RingEcdsaSigner::schemes(self)
    }

    fn sign(
        &self,
        scheme: SignatureScheme,
        message: &[u8],
        rng: &mut dyn RandomSource,
    ) -> Result<Vec<u8>, Error> {
        RingEcdsaSigner::sign(self, scheme, message, rng).map_err(Error::Signature)
    }
}

/// `key` as a server signs CertificateVerify with it on the fastest backend of this build: ECDSA
/// P-256 on ring (read from the same PKCS#8, `pkcs8`) where the build has `ring-sign`, any other
/// key as it is. Both draw their randomness from the connection's source, so both replay.
pub fn fastest_signer(key: SigningKey, pkcs8: &[u8]) -> Result<Arc<dyn Signer>, Error> {
    #[cfg(feature = "ring-sign")]
    if key.schemes().first() == Some(&SignatureScheme::ecdsa_secp256r1_sha256) {
        return Ok(Arc::new(
            RingEcdsaSigner::from_pkcs8(pkcs8).map_err(Error::Signature)?,
        ));
    }
    let _ = pkcs8;
    Ok(Arc::new(key))
}

/// A certificate chain (leaf first, DER) with the key of its leaf.
#[derive(Clone)]
pub struct CertifiedKey {
    /// DER certificates, leaf first.
    pub chain: Vec<Vec<u8>>,
    /// The leaf's private key.
    pub key: Arc<dyn Signer>,
}

impl core::fmt::Debug for CertifiedKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "CertifiedKey({} certs)", self.chain.len())
    }
}

/// How the client checks the server's certificate.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ServerVerification {
    /// Validate the chain against these DER trust anchors and the server name.
    Roots(Vec<Vec<u8>>),
    /// Validate the chain against these roots but not the name: for certificates without a
    /// subjectAltName, such as RFC 8448's.
    RootsNoName(Vec<Vec<u8>>),
    /// Research mode, never the default: accept any certificate (the CertificateVerify
    /// signature is still checked against the leaf's key, so the handshake transcript stays
    /// authenticated by *someone*). [`ClientConfig::insecure_accept_any_certificate`] builds it.
    InsecureAcceptAny,
}

/// Whether and how the server asks for a client certificate (RFC 8446 §4.3.2).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub enum ClientAuth {
    /// Do not send CertificateRequest.
    #[default]
    None,
    /// Ask; an empty Certificate is accepted. A non-empty one must validate against the roots:
    /// with none, every chain fails (unknown_ca).
    Optional(Vec<Vec<u8>>),
    /// Ask and insist (certificate_required otherwise); the chain must validate against the
    /// roots.
    Required(Vec<Vec<u8>>),
    /// Ask, and accept any chain without validating it — research servers that want to see what
    /// clients send. The CertificateVerify is still checked against the end-entity key. Insecure,
    /// so it has to be asked for by name; `required` insists on a certificate.
    InsecureAcceptAny {
        /// Whether an empty Certificate is certificate_required.
        required: bool,
    },
}

impl ClientAuth {
    /// Whether an empty Certificate is refused (certificate_required).
    pub(crate) fn requires_certificate(&self) -> bool {
        matches!(
            self,
            ClientAuth::Required(_) | ClientAuth::InsecureAcceptAny { required: true }
        )
    }

    /// The roots a client chain must validate against; `None` when no certificate is asked
    /// for; `Some(None)` when any chain is accepted by name.
    pub(crate) fn roots(&self) -> Option<Option<&[Vec<u8>]>> {
        match self {
            ClientAuth::None => None,
            ClientAuth::Optional(r) | ClientAuth::Required(r) => Some(Some(r)),
            ClientAuth::InsecureAcceptAny { .. } => Some(None),
        }
    }
}

/// An externally provisioned PSK (RFC 8446 §4.2.11). The key is erased on drop and never shown
/// by `Debug`.
#[derive(Clone)]
pub struct ExternalPsk {
    /// The identity sent on the wire.
    pub identity: Vec<u8>,
    /// The key.
    pub key: Vec<u8>,
    /// The hash it is bound to.
    pub suite: CipherSuite,
}

impl Drop for ExternalPsk {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.key);
    }
}

impl core::fmt::Debug for ExternalPsk {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ExternalPsk")
            .field("identity", &crate::events::hex(&self.identity))
            .field("key", &format_args!("<{} bytes>", self.key.len()))
            .field("suite", &self.suite)
            .finish()
    }
}

/// When the client adds a padding extension (RFC 7685) to its ClientHello.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HelloPadding {
    /// Never.
    #[default]
    None,
    /// Pad every ClientHello shorter than this many bytes (message length with its header) to it.
    ToSize(usize),
    /// Pad a ClientHello of 256..=511 bytes to 512: the workaround for middleboxes that hang on
    /// such lengths (RFC 7685 §1), as RFC 8448's client and BoringSSL do.
    Avoid256To511,
}

impl HelloPadding {
    /// The length this rule pads a ClientHello of `len` bytes (message with its header) to, if
    /// it pads one of that length at all. `ToSize(n)` gives `n` whatever `len` is: padding
    /// happens only while the message is shorter (see [`extension_body_len`](Self::extension_body_len)).
    pub fn target(self, len: usize) -> Option<usize> {
        match self {
            HelloPadding::None => None,
            HelloPadding::ToSize(n) => Some(n),
            HelloPadding::Avoid256To511 => (256..512).contains(&len).then_some(512),
        }
    }

    /// The body length of the padding extension (RFC 7685: a 4-byte extension header and that
    /// many zeros) that brings a ClientHello of `len` bytes to this rule's target; `None` when
    /// nothing is padded: no target, or one closer than an extension header. The client and
    /// the ClientHello lab both pad by it, placing the extension before pre_shared_key (which
    /// stays last, RFC 8446 §4.2.11).
    pub fn extension_body_len(self, len: usize) -> Option<usize> {
        let target = self.target(len)?;
        (len + 4 <= target).then(|| target - len - 4)
    }
}

/// Whether the client offers Encrypted ClientHello (RFC 9849).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub enum EchMode {
    /// No `encrypted_client_hello` extension.
    #[default]
    Off,
    /// A GREASE `encrypted_client_hello` (§6.2): it looks like ECH, and no server can open it.
    Grease,
    /// Offer ECH with the first usable ECHConfig of `list` (§6.1); when none is usable, send
    /// GREASE if `grease_fallback`, else no ECH (§6.1: "SHOULD proceed as described in §6.2").
    Config {
        /// The ECHConfigList, as published (DNS, a retry, a key file).
        list: EchConfigList,
        /// GREASE when no config in `list` is usable.
        grease_fallback: bool,
    },
}

impl EchMode {
    /// Offer ECH with `list`, and no ECH at all when none of its configs is usable.
    pub fn offer(list: EchConfigList) -> EchMode {
        EchMode::Config {
            list,
            grease_fallback: false,
        }
    }
}

/// Client configuration.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Offered suites, in order.
    pub cipher_suites: Vec<CipherSuite>,
    /// supported_groups, in order.
    pub groups: Vec<NamedGroup>,
    /// Groups that get a key share in the first ClientHello (must be in `groups`).
    pub key_shares: Vec<NamedGroup>,
    /// Use one X25519 scalar for every X25519 component among the key shares (e.g.
    /// X25519MLKEM768 + X25519).
    pub reuse_x25519: bool,
    /// signature_algorithms, in order.
    pub signature_schemes: Vec<SignatureScheme>,
    /// server_name (SNI) and the name checked in the certificate.
    pub server_name: Option<String>,
    /// ALPN protocols offered.
    pub alpn: Vec<Vec<u8>>,
    /// Certificate verification.
    pub verification: ServerVerification,
    /// Middlebox compatibility mode (RFC 8446 §D.4): 32-byte legacy_session_id and a dummy CCS.
    pub compat_mode: bool,
    /// record_size_limit to advertise (RFC 8449), if any.
    pub record_size_limit: Option<u16>,
    /// Padding of protected records we send.
    pub padding: PaddingPolicy,
    /// Largest handshake message accepted.
    pub max_handshake_message: usize,
    /// Extensions added verbatim to the ClientHello (e.g. renegotiation_info, GREASE).
    pub extra_extensions: Vec<Extension>,
    /// Extension order: listed types first, in this order; the rest keep their default order.
    /// pre_shared_key always stays last (§4.2.11).
    pub extension_order: Vec<ExtensionType>,
    /// Client certificate for CertificateRequest.
    pub client_cert: Option<CertifiedKey>,
    /// Its certificate properties (draft-ietf-tls-trust-anchor-ids §6): a CertificateRequest
    /// whose trust_anchors lists its ID (or a group it is in) gets it with the empty
    /// extension that says so (§4.2); a negotiation-only certificate is sent only then.
    pub client_cert_properties: Option<crate::trust_anchors::CertificateProperties>,
    /// Whether the ClientHello offers post_handshake_auth (RFC 8446 §4.2.6), which lets the
    /// server ask for our certificate after the handshake (§4.6.2). `None` (the default): offered
    /// when there is a [`client_cert`](Self::client_cert). `Some(true)` offers it without one too
    /// (a request is then answered with an empty Certificate); `Some(false)` never offers it.
    pub post_handshake_auth: Option<bool>,
    /// psk_key_exchange_modes offered (empty: extension not sent unless resuming).
    pub psk_modes: Vec<PskKeyExchangeMode>,
    /// External PSKs to offer.
    pub external_psks: Vec<ExternalPsk>,
    /// Whether to offer early data when a ticket allows it.
    pub enable_early_data: bool,
    /// ClientHello padding (RFC 7685).
    pub hello_padding: HelloPadding,
    /// What to record ([`Observe::NONE`], the default: nothing, at no cost).
    pub observe: Observe,
    /// Unix time (ms) used for certificate validation when the caller passes no clock; tests use it.
    pub fixed_validation_time_ms: Option<u64>,
    /// Certificate signatures already verified, shared by every connection made with this
    /// configuration ([`SignatureMemo`]: path, time and name are still checked each time).
    /// `None` verifies every signature every time.
    pub signature_memo: Option<Arc<SignatureMemo>>,
    /// Certificate compression (RFC 8879), in preference order: offered in the ClientHello's
    /// compress_certificate (the server's certificate may come compressed), and used for our
    /// certificate when a CertificateRequest offers one of them. Empty: not offered, never
    /// used. Default: every algorithm of this build ([`crate::certcomp::supported`]: brotli,
    /// zstd, zlib), as OpenSSL 4.0 offers all three.
    pub cert_compression: Vec<CertificateCompressionAlgorithm>,
    /// Our certificate compressed once per algorithm, shared by the connections of this
    /// configuration; `None` compresses every time.
    pub compressed_certificates: Option<Arc<CompressionCache>>,
    /// Encrypted ClientHello (RFC 9849): off, GREASE, or a config to offer.
    pub ech: EchMode,
    /// The `trust_anchors` extension (draft-ietf-tls-trust-anchor-ids §4): the IDs of trust
    /// anchors we accept, so the server can pick a certification path for one of them. When
    /// the certificate then fails, [`crate::events::Event::TrustAnchorsAvailable`] says which
    /// anchors the server has paths for, to retry with one (§4.3). `None`: not sent.
    pub trust_anchors: Option<TrustAnchorOffer>,
    /// Merkle Tree Certificates we accept (draft-ietf-plants-merkle-tree-certs): a server
    /// certificate whose signatureAlgorithm is id-alg-mtcProof is verified against this
    /// relying-party configuration (trusted cosigners, landmark subtrees) instead of a chain to
    /// the roots; its name is checked as any leaf's. `None`: MTCs are refused like any
    /// certificate without a path.
    pub mtc: Option<Arc<crate::crypto::cert::mtc::RelyingParty>>,
}

/// What the client sends in `trust_anchors`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustAnchorOffer {
    /// The extension's code point ([`crate::trust_anchors::DEFAULT_CODE_POINT`], 0xca34, until
    /// IANA assigns one).
    pub code_point: ExtensionType,
    /// Trust anchor IDs, binary form (may be empty: a request for the server's list).
    pub ids: Vec<Vec<u8>>,
}

impl TrustAnchorOffer {
    /// An offer of `ids` under the default code point.
    pub fn new(ids: Vec<Vec<u8>>) -> Self {
        TrustAnchorOffer {
            code_point: crate::trust_anchors::DEFAULT_CODE_POINT,
            ids,
        }
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            cipher_suites: vec![
                CipherSuite::TLS_AES_128_GCM_SHA256,
                CipherSuite::TLS_AES_256_GCM_SHA384,
                CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
            ],
            // The 2026 shape (docs/architecture.md, "The default ClientHello"): the hybrid first
            // with a share, and an X25519 share beside it for servers without ML-KEM, both from
            // one X25519 scalar.
            groups: vec![
                NamedGroup::X25519MLKEM768,
                NamedGroup::X25519,
                NamedGroup::secp256r1,
                NamedGroup::secp384r1,
            ],
            key_shares: vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519],
            reuse_x25519: true,
            // Every scheme crypto::sign verifies in CertificateVerify (§4.2.3).
            signature_schemes: crate::crypto::sign::supported_verify_schemes().to_vec(),
            server_name: None,
            alpn: Vec::new(),
            // No trust anchor: nothing verifies until the caller gives roots (`ClientConfig::new`).
            verification: ServerVerification::Roots(Vec::new()),
            compat_mode: false,
            record_size_limit: None,
            padding: PaddingPolicy::None,
            max_handshake_message: DEFAULT_MAX_HANDSHAKE_MESSAGE,
            extra_extensions: Vec::new(),
            extension_order: Vec::new(),
            client_cert: None,
            client_cert_properties: None,
            post_handshake_auth: None,
            psk_modes: vec![PskKeyExchangeMode::PskDheKe],
            external_psks: Vec::new(),
            enable_early_data: true,
            hello_padding: HelloPadding::None,
            observe: Observe::NONE,
            fixed_validation_time_ms: None,
            signature_memo: Some(Arc::default()),
            cert_compression: crate::certcomp::supported().to_vec(),
            compressed_certificates: Some(Arc::default()),
            ech: EchMode::Off,
            trust_anchors: None,
            mtc: None,
        }
    }
}

impl ClientConfig {
    /// The `trust_anchors` code point we use: our offer's, else 0xca34 (a CertificateRequest
    /// may carry the extension whether or not our ClientHello did).
    pub fn trust_anchors_code_point(&self) -> ExtensionType {
        self.trust_anchors
            .as_ref()
            .map_or(crate::trust_anchors::DEFAULT_CODE_POINT, |t| t.code_point)
    }

    /// A client that validates the server's chain against `roots` (DER trust anchors) and, when
    /// [`server_name`](Self::server_name) is set, the name; everything else as
    /// [`Default`]. The default itself trusts no root, so it verifies nothing: every server
    /// certificate fails with unknown_ca.
    pub fn new(roots: Vec<Vec<u8>>) -> Self {
        ClientConfig {
            verification: ServerVerification::Roots(roots),
            ..ClientConfig::default()
        }
    }

    /// Research mode: a client that accepts any server certificate
    /// ([`ServerVerification::InsecureAcceptAny`]); the CertificateVerify signature is still
    /// checked against the leaf's key.
    pub fn insecure_accept_any_certificate() -> Self {
        ClientConfig {
            verification: ServerVerification::InsecureAcceptAny,
            ..ClientConfig::default()
        }
    }

    /// The group a server publishing `server_groups` (its DNS `tls-supported-groups`, most
    /// preferred first: draft-ietf-tls-key-share-prediction §3) will choose: its first group
    /// that is in our supported_groups and that we can make a share for. Code points we do not
    /// support are ignored (§3.3); `None`
    /// when nothing is in common.
    pub fn predict_key_share(&self, server_groups: &[NamedGroup]) -> Option<NamedGroup> {
        server_groups
            .iter()
            .copied()
            .find(|g| self.groups.contains(g) && crate::crypto::kx::supported_groups().contains(g))
    }

    /// Send one key share, for the predicted group (§3.3 "SHOULD send a key_share extension
    /// containing just that named group"); supported_groups stays as it is, in our order, so
    /// a forged DNS answer cannot downgrade the handshake (§3.3, §5). With no group in common
    /// the key shares are left alone (the record may be stale). Returns the prediction.
    pub fn use_dns_groups(&mut self, server_groups: &[NamedGroup]) -> Option<NamedGroup> {
        let predicted = self.predict_key_share(server_groups)?;
        self.key_shares = vec![predicted];
        Some(predicted)
    }
}

/// How the server keeps resumption state (RFC 8446 §4.6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TicketMode {
    /// The ticket is the session state sealed under a rotating ticket key (no server memory).
    #[default]
    Stateless,
    /// The ticket is a random identifier of a server-side cache entry, removed when used.
    Stateful,
}

/// 0-RTT anti-replay policy (RFC 8446 §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AntiReplay {
    /// Every ticket allows 0-RTT once (§8.1): the server remembers used tickets until they expire.
    #[default]
    SingleUse,
    /// Remember ClientHellos (their binders) inside a freshness window (§8.2) and refuse 0-RTT for a
    /// repeated one or a ticket age outside the window.
    Window {
        /// Allowed difference between the client's and our view of the ticket age, and how long a
        /// ClientHello is remembered.
        window_ms: u64,
    },
    /// Accept replays: for experiments only.
    Off,
}

/// Server configuration.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The server's certificate chain and key.
    pub cert: CertifiedKey,
    /// Further chains and keys, as dual-certificate servers hold an ECDSA and an ML-DSA chain
    /// side by side. The server answers with the first of `cert`, then these, whose key signs a
    /// scheme the client offers in signature_algorithms and whose chain is signed only with
    /// schemes it offers (signature_algorithms_cert when sent, §4.2.3, §4.4.2.2); failing that,
    /// the first whose key fits (§4.4.2.2: the server "SHOULD continue the handshake" with a
    /// chain of its choice); failing that, handshake_failure.
    pub more_certs: Vec<CertifiedKey>,
    /// Suites in server preference order.
    pub cipher_suites: Vec<CipherSuite>,
    /// Groups in server preference order.
    pub groups: Vec<NamedGroup>,
    /// Signature schemes we are willing to use, in preference order.
    pub signature_schemes: Vec<SignatureScheme>,
    /// ALPN protocols we speak, in preference order.
    pub alpn: Vec<Vec<u8>>,
    /// Client authentication policy.
    pub client_auth: ClientAuth,
    /// What a CertificateRequest after the handshake asks for (RFC 8446 §4.6.2,
    /// [`Server::request_client_certificate`](crate::Server::request_client_certificate)):
    /// `None` (the default) refuses the call; `Optional` accepts an empty Certificate and
    /// `Required` answers it with certificate_required. The roots validate a non-empty chain as
    /// for [`client_auth`](Self::client_auth) (an empty list accepts any chain; the
    /// CertificateVerify is checked either way). Independent of `client_auth`: a server can
    /// ask only after the handshake, as `openssl s_server -verify_post_handshake` does.
    pub post_handshake_auth: ClientAuth,
    /// Send the dummy ChangeCipherSpec when the client is in compatibility mode (§D.4).
    pub compat_mode: bool,
    /// record_size_limit to advertise in EncryptedExtensions when the client sent one.
    pub record_size_limit: Option<u16>,
    /// When our supported_groups goes in EncryptedExtensions (§4.2.7 allows it): never (the
    /// default), or only in answer to a client's supported_groups (§4.2), always or when it
    /// tells the client something new.
    pub send_supported_groups: EeSupportedGroups,
    /// Acknowledge server_name with an empty extension in EncryptedExtensions (RFC 6066 §3).
    pub ack_server_name: bool,
    /// EncryptedExtensions order: listed types first.
    pub extension_order: Vec<ExtensionType>,
    /// Insist on our most preferred common group: send a HelloRetryRequest for it even when the
    /// client already sent a share for another acceptable group (RFC 8448 §5 does this).
    pub strict_group_preference: bool,
    /// Put a cookie of this many random bytes in HelloRetryRequest (§4.2.2).
    pub hrr_cookie: Option<usize>,
    /// Padding of protected records we send.
    pub padding: PaddingPolicy,
    /// Largest handshake message accepted.
    pub max_handshake_message: usize,
    /// What to record ([`Observe::NONE`], the default: nothing, at no cost).
    pub observe: Observe,
    /// Unix time (ms) for client certificate validation (tests).
    pub fixed_validation_time_ms: Option<u64>,
    /// Certificate signatures already verified, shared by every connection made with this
    /// configuration ([`SignatureMemo`]: path, time and name are still checked each time).
    /// `None` verifies every signature every time.
    pub signature_memo: Option<Arc<SignatureMemo>>,
    /// NewSessionTickets sent after the handshake (§4.6.1).
    pub tickets: u32,
    /// ticket_lifetime in seconds (at most 604800).
    pub ticket_lifetime: u32,
    /// max_early_data_size advertised in tickets; 0 refuses 0-RTT.
    pub max_early_data: u32,
    /// Stateless or stateful tickets.
    pub ticket_mode: TicketMode,
    /// Length of a stateful ticket identifier (random bytes).
    pub stateful_ticket_len: usize,
    /// 0-RTT anti-replay.
    pub anti_replay: AntiReplay,
    /// PSK key exchange modes we accept (§4.2.9), in preference order.
    pub psk_modes: Vec<PskKeyExchangeMode>,
    /// Externally provisioned PSKs we accept.
    pub external_psks: Vec<ExternalPsk>,
    /// Resumption state shared by every connection of this server (ticket keys, cache, replay
    /// memory). Cloning the config shares it.
    pub sessions: Arc<ServerSessions>,
    /// Certificate compression (RFC 8879), in preference order: our Certificate goes out
    /// compressed with the first of these the client's compress_certificate lists (when that is
    /// smaller), and our CertificateRequests offer them for the client's. Empty (the default):
    /// off, so a server's flight is what it was unless asked for (`tls13lab server
    /// --cert-compression`); [`crate::certcomp::supported`] lists what this build has.
    pub cert_compression: Vec<CertificateCompressionAlgorithm>,
    /// Our chain compressed once per algorithm (and per chain), shared by every connection of
    /// this configuration; `None` compresses in every handshake.
    pub compressed_certificates: Option<Arc<CompressionCache>>,
    /// ECH keys (RFC 9849 §7.1), each with the ECHConfig it publishes: a ClientHelloOuter
    /// sealed to one of them is opened and its ClientHelloInner answered; their configs are the
    /// retry_configs of a rejection. With keys, every RFC 9849 §7 check applies: a malformed,
    /// inner-type or unknown-type `encrypted_client_hello` is fatal (docs/alerts.md).
    /// Empty: a server that does not implement ECH (RFC 8446 §4.2, unknown extensions are
    /// ignored): no `encrypted_client_hello`, in the first or the second ClientHello, is
    /// refused, whatever it holds; ClientHelloOuter is answered (RFC 9849 §7's "rejecting
    /// ECH") and no retry_configs are sent. The ECH event still reports a rejection, with the
    /// config_id and suite when the extension parses as an outer ECHClientHello.
    pub ech_keys: Vec<crate::crypto::ech::EchKeyPair>,
    /// Try every ECH key when the client's config_id names none (§7.1 method 2, for clients
    /// that randomize config_id); off by default, as §7.1 requires unless configured.
    pub ech_trial_decrypt: bool,
    /// Put eight random bytes of encrypted_client_hello in a HelloRetryRequest that rejects
    /// ECH (RFC 9849 §7.1 MAY), so the retry looks like an accepting one (§10.10.4). Off by
    /// default: OpenSSL 4.0.3's client takes any such extension for an acceptance and aborts at
    /// ServerHello instead of reading retry_configs (docs/ech.md).
    pub ech_hrr_disguise: bool,
    /// The credentials' certificate properties (draft-ietf-tls-trust-anchor-ids §6), by index
    /// in [`ServerConfig::credentials`] (`cert` first, then `more_certs`; missing or `None`:
    /// that path does not take part). A ClientHello's `trust_anchors` picks the first usable
    /// credential whose ID or one of whose group inclusions it lists, whose Certificate then
    /// says so; EncryptedExtensions lists the IDs of every usable one (§4.2, §4.3). A path
    /// marked `negotiation_only` is never a fallback.
    pub certificate_properties: Vec<Option<crate::trust_anchors::CertificateProperties>>,
    /// The `trust_anchors` code point we answer (0xca34 by default).
    pub trust_anchors_code_point: ExtensionType,
    /// trust_anchors for the client's certificate (§4.1): these IDs go in our
    /// CertificateRequest, and a Certificate that says it matched one is reported
    /// ([`crate::events::Event::TrustAnchorMatched`]). The chain is validated as ever.
    pub client_trust_anchors: Option<Vec<Vec<u8>>>,
}

/// When a server lists its groups in EncryptedExtensions (RFC 8446 §4.2.7), "so that the
/// client can use them in subsequent connections". Whatever the choice, never to a client that
/// sent no supported_groups: §4.2, "Implementations MUST NOT send extension responses if the
/// remote endpoint did not send the corresponding extension requests".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EeSupportedGroups {
    /// Never (the default).
    #[default]
    Never,
    /// Whenever the client sent supported_groups (the servers of RFC 8448's traces do).
    Always,
    /// When the client sent supported_groups and the handshake did not use our most preferred
    /// group (under psk_ke, none): only when the list tells the client something it could use
    /// next time, as OpenSSL's server does. `tls13lab server`'s default.
    WhenNotOurFirst,
}

impl EeSupportedGroups {
    /// Whether to send the list to a client that sent supported_groups (`requested`), in a
    /// handshake that used `used` (`None` under psk_ke), when our preference starts with
    /// `first`.
    pub fn sends(
        self,
        requested: bool,
        used: Option<NamedGroup>,
        first: Option<NamedGroup>,
    ) -> bool {
        match self {
            EeSupportedGroups::Never => false,
            EeSupportedGroups::Always => requested,
            EeSupportedGroups::WhenNotOurFirst => requested && (used.is_none() || used != first),
        }
    }
}

impl ServerConfig {
    /// A configuration with defaults around a certificate.
    pub fn new(cert: CertifiedKey) -> Self {
        ServerConfig {
            cert,
            more_certs: Vec::new(),
            cipher_suites: vec![
                CipherSuite::TLS_AES_128_GCM_SHA256,
                CipherSuite::TLS_AES_256_GCM_SHA384,
                CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
            ],
            groups: vec![
                NamedGroup::X25519MLKEM768,
                NamedGroup::X25519,
                NamedGroup::secp256r1,
                NamedGroup::secp384r1,
                NamedGroup::SecP256r1MLKEM768,
                NamedGroup::SecP384r1MLKEM1024,
                NamedGroup::MLKEM768,
                NamedGroup::MLKEM1024,
                NamedGroup::MLKEM512,
            ],
            // Every scheme crypto::sign verifies in CertificateVerify (§4.2.3).
            signature_schemes: crate::crypto::sign::supported_verify_schemes().to_vec(),
            alpn: Vec::new(),
            client_auth: ClientAuth::None,
            post_handshake_auth: ClientAuth::None,
            compat_mode: true,
            record_size_limit: None,
            send_supported_groups: EeSupportedGroups::Never,
            ack_server_name: true,
            extension_order: Vec::new(),
            strict_group_preference: false,
            hrr_cookie: None,
            padding: PaddingPolicy::None,
            max_handshake_message: DEFAULT_MAX_HANDSHAKE_MESSAGE,
            observe: Observe::NONE,
            fixed_validation_time_ms: None,
            signature_memo: Some(Arc::default()),
            tickets: 2,
            ticket_lifetime: 7200,
            max_early_data: 16384,
            ticket_mode: TicketMode::Stateless,
            stateful_ticket_len: 32,
            anti_replay: AntiReplay::SingleUse,
            psk_modes: vec![PskKeyExchangeMode::PskDheKe, PskKeyExchangeMode::PskKe],
            external_psks: Vec::new(),
            sessions: Arc::new(ServerSessions::new()),
            cert_compression: Vec::new(),
            compressed_certificates: Some(Arc::default()),
            ech_keys: Vec::new(),
            ech_trial_decrypt: false,
            ech_hrr_disguise: false,
            certificate_properties: Vec::new(),
            trust_anchors_code_point: crate::trust_anchors::DEFAULT_CODE_POINT,
            client_trust_anchors: None,
        }
    }
}

impl ServerConfig {
    /// `cert`, then `more_certs`: the credentials in the order the server tries them.
    pub fn credentials(&self) -> impl Iterator<Item = &CertifiedKey> {
        core::iter::once(&self.cert).chain(&self.more_certs)
    }
}

/// Sort `exts` so that types listed in `order` come first, in that order; others keep their relative
/// order; pre_shared_key stays last (§4.2.11). `typ` names an extension's type (`exts` holds
/// [`Extension`]s or the client's borrowed `OutgoingExtension`s).
pub(crate) fn apply_extension_order<E>(
    exts: &mut [E],
    order: &[ExtensionType],
    typ: impl Fn(&E) -> ExtensionType,
) {
    if order.is_empty() {
        return;
    }
    let rank = |e: &E| -> usize {
        let t = typ(e);
        if t == ExtensionType::PreSharedKey {
            return usize::MAX;
        }
        order.iter().position(|o| *o == t).unwrap_or(order.len())
    };
    exts.sort_by_key(rank); // stable: unlisted keep their order
}
