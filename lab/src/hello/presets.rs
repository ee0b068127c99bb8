//! The built-in ClientHello shapes ([`PRESETS`]): tls13lab's own (today's and the pre-2026
//! one), and ones recorded from real programs on a Debian 12 machine (Chromium, Firefox ESR,
//! curl, OpenSSL 3.0, 3.5 and 4.0, rustls, Go). Each recorded preset has its capture in
//! tests/vectors/clienthello/ (how it was made: the README there,
//! `scripts/record-clienthellos.sh`), and cli/tests/instruments.rs checks that the preset
//! reproduces it byte for byte but for randoms, session id, key share bytes, GREASE values, the
//! GREASE ECH payload and AEAD and, for Chromium and rustls, the extension order; and that it
//! reuses one X25519 scalar for both X25519 shares exactly when the program did.

use super::model::{Grease, HelloSpec};
use tls13lab::config::{EchMode, HelloPadding};
use tls13lab::messages::enums::{
    CertificateCompressionAlgorithm, CipherSuite, ExtensionType, NamedGroup, ProtocolVersion,
    PskKeyExchangeMode, SignatureScheme,
};
use tls13lab::messages::extensions::Extension;

/// Names of the built-in presets, with what they reproduce.
pub const PRESETS: &[(&str, &str)] = &[
    ("tls13lab", "tls13lab's own client defaults"),
    (
        "tls13lab-2023",
        "tls13lab's defaults before the 2026 shape: x25519 first with one X25519 share, X25519MLKEM768 third without one",
    ),
    (
        "openssl-3.0",
        "OpenSSL 3.0 s_client defaults (Debian 12's openssl 3.0.19)",
    ),
    (
        "openssl-3.5",
        "OpenSSL 3.5 s_client defaults (hybrid X25519MLKEM768 + X25519 shares)",
    ),
    (
        "openssl-4.0",
        "OpenSSL 4.0 s_client defaults (two hybrid groups, compress_certificate, server_name last)",
    ),
    (
        "chromium",
        "Chromium 156 (BoringSSL), Debian 12: GREASE, ECH GREASE, ALPS, trust_anchors; permutes its extensions",
    ),
    (
        "firefox",
        "Firefox ESR 153 (NSS), Debian 12: three key shares, delegated_credentials, ECH GREASE",
    ),
    (
        "curl",
        "curl 7.88.1 with OpenSSL 3.0.19, Debian 12: ALPN h2, post_handshake_auth, padded to 512",
    ),
    (
        "go",
        "Go 1.19.8 crypto/tls defaults (Debian 12's golang-go): x25519 share, TLS 1.3 suites last",
    ),
    (
        "rustls",
        "rustls 0.23.46 defaults (aws-lc-rs provider): hybrid share, ML-DSA; permutes its extensions",
    ),
];

/// Extension code points tls13lab has no name for, used by the browser presets.
mod code {
    /// application_settings (ALPS), the code point Chromium sends since 2025
    /// (draft-vvv-tls-alps; the older one is 0x4469).
    pub const ALPS: u16 = 0x44cd;
    /// trust_anchors (draft-ietf-tls-trust-anchor-ids; Chromium's experimental code point).
    pub const TRUST_ANCHORS: u16 = 0xca34;
    /// delegated_credential (RFC 9345 §4.1.1).
    pub const DELEGATED_CREDENTIAL: u16 = 0x22;
}

/// The trust anchor IDs Chromium 156 listed (the body of its 0xca34 extension, 186 bytes: a
/// 2-byte length and 33 length-prefixed relative OIDs), verbatim from the capture.
const CHROMIUM_TRUST_ANCHORS: &str = "00b80582df1302010582df1302060582df13020d0582df13020e0582df13020f0582df1302120582df1302130582df13021408839a648c9b2d010708839a648c9b2d010808839a648c9b2d010908839a648c9b2d010a08839a648c9b2d010b08839a648c9b2d010c08839a648c9b2d010d08839a648c9b2d011208839a648c9b2d011304d679090104d679090404d679090504d679090604d679090704d679090804d679090a04d679090b04d679090c04d679090d04d679090f";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

fn opaque(code: u16, body: Vec<u8>) -> Extension {
    Extension::Unknown {
        typ: ExtensionType::from(code),
        body,
    }
}

fn suites(codes: &[u16]) -> Vec<CipherSuite> {
    codes.iter().map(|c| CipherSuite::from(*c)).collect()
}

fn groups(codes: &[u16]) -> Vec<NamedGroup> {
    codes.iter().map(|c| NamedGroup::from(*c)).collect()
}

/// status_request (RFC 6066 §8): OCSP, no responder IDs, no request extensions.
fn status_request() -> Extension {
    opaque(ExtensionType::StatusRequest.to_repr(), vec![1, 0, 0, 0, 0])
}

fn empty(t: ExtensionType) -> Extension {
    opaque(t.to_repr(), Vec::new())
}

/// TLS 1.2 suites OpenSSL 3.x offers after its TLS 1.3 ones (in its default order).
const OPENSSL_TLS12_SUITES: [u16; 27] = [
    0xc02c, 0xc030, 0x009f, 0xcca9, 0xcca8, 0xccaa, 0xc02b, 0xc02f, 0x009e, 0xc024, 0xc028, 0x006b,
    0xc023, 0xc027, 0x0067, 0xc00a, 0xc014, 0x0039, 0xc009, 0xc013, 0x0033, 0x009d, 0x009c, 0x003d,
    0x003c, 0x0035, 0x002f,
];

/// OpenSSL 3.x's default cipher_suites: its three TLS 1.3 suites, then [`OPENSSL_TLS12_SUITES`].
fn openssl_suites() -> Vec<CipherSuite> {
    let mut list = vec![
        CipherSuite::TLS_AES_256_GCM_SHA384,
        CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
        CipherSuite::TLS_AES_128_GCM_SHA256,
    ];
    list.extend(suites(&OPENSSL_TLS12_SUITES));
    list
}

/// OpenSSL's TLS 1.2-era extensions: ec_point_formats (uncompressed, ansiX962 prime and char2),
/// session_ticket (empty), encrypt_then_mac, extended_master_secret.
fn openssl_legacy_extensions() -> Vec<Extension> {
    vec![
        Extension::Unknown {
            typ: ExtensionType::EcPointFormats,
            body: vec![3, 0, 1, 2],
        },
        Extension::Unknown {
            typ: ExtensionType::SessionTicket,
            body: Vec::new(),
        },
        Extension::Unknown {
            typ: ExtensionType::EncryptThenMac,
            body: Vec::new(),
        },
        Extension::Unknown {
            typ: ExtensionType::ExtendedMasterSecret,
            body: Vec::new(),
        },
    ]
}

fn schemes(codes: &[u16]) -> Vec<SignatureScheme> {
    codes.iter().map(|c| SignatureScheme::from(*c)).collect()
}

/// The signature algorithms OpenSSL 3.0 offers by default (`tls12_sigalgs` minus SHA-1, which
/// security level 1 drops): 20 schemes, the last 4 DSA.
pub const OPENSSL_30_SIGALGS: [u16; 20] = [
    0x0403, 0x0503, 0x0603, 0x0807, 0x0808, 0x0809, 0x080a, 0x080b, 0x0804, 0x0805, 0x0806, 0x0401,
    0x0501, 0x0601, 0x0303, 0x0301, 0x0302, 0x0402, 0x0502, 0x0602,
];

/// OpenSSL 3.5 adds ML-DSA first and the RFC 8734 brainpool schemes: 26 schemes, the last 4
/// DSA (absent from a `no-dsa` build).
pub const OPENSSL_35_SIGALGS: [u16; 26] = [
    0x0905, 0x0906, 0x0904, 0x0403, 0x0503, 0x0603, 0x0807, 0x0808, 0x081a, 0x081b, 0x081c, 0x0809,
    0x080a, 0x080b, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0303, 0x0301, 0x0302, 0x0402,
    0x0502, 0x0602,
];

/// DSA signature schemes (dsa_sha224..dsa_sha512), which a `no-dsa` OpenSSL does not offer.
pub const DSA_SCHEMES: [u16; 4] = [0x0302, 0x0402, 0x0502, 0x0602];

/// A preset by name (see [`PRESETS`]).
pub fn preset(name: &str) -> Option<HelloSpec> {
    use ExtensionType as T;
    let mut spec = HelloSpec::new(name);
    // Another program's shape draws its own X25519 scalars: one per share unless its capture
    // shows one reused (Firefox and rustls set it below; docs/clienthellos.md).
    spec.config.reuse_x25519 = name == "tls13lab";
    match name {
        "tls13lab" => {
            spec.source = Some("ClientConfig::default() with server_name example.com".into());
        }
        "tls13lab-2023" => {
            use NamedGroup as G;
            spec.source = Some(
                "ClientConfig::default() before the 2026 default, with server_name example.com"
                    .into(),
            );
            let c = &mut spec.config;
            c.groups = vec![G::X25519, G::secp256r1, G::X25519MLKEM768, G::secp384r1];
            c.key_shares = vec![G::X25519];
            c.reuse_x25519 = false;
        }
        "openssl-3.0" | "openssl-3.5" => {
            let v35 = name == "openssl-3.5";
            let c = &mut spec.config;
            c.compat_mode = true; // OpenSSL sends a 32-byte legacy_session_id by default
            let mut suites = openssl_suites();
            let mut order = vec![
                T::ServerName,
                T::EcPointFormats,
                T::SupportedGroups,
                T::SessionTicket,
                T::EncryptThenMac,
                T::ExtendedMasterSecret,
                T::SignatureAlgorithms,
                T::SupportedVersions,
                T::PskKeyExchangeModes,
                T::KeyShare,
            ];
            let mut extra = openssl_legacy_extensions();
            use NamedGroup as G;
            if v35 {
                // 3.5 sends renegotiation_info as an extension instead of the SCSV.
                order.insert(0, T::RenegotiationInfo);
                extra.insert(0, Extension::RenegotiationInfo(vec![0]));
                c.groups = vec![
                    G::X25519MLKEM768,
                    G::X25519,
                    G::secp256r1,
                    G::X448,
                    G::secp384r1,
                    G::secp521r1,
                    G::ffdhe2048,
                    G::ffdhe3072,
                ];
                c.key_shares = vec![G::X25519MLKEM768, G::X25519];
                c.signature_schemes = schemes(&OPENSSL_35_SIGALGS);
                spec.versions = Some(vec![ProtocolVersion::TLSv1_3, ProtocolVersion::TLSv1_2]);
                spec.source = Some(
                    "OpenSSL 3.5 s_client -servername example.com: groups ?*X25519MLKEM768 / ?*X25519:?secp256r1 / \
                     ?X448:?secp384r1:?secp521r1 / ?ffdhe2048:?ffdhe3072 (two key shares), checked against a captured \
                     ClientHello of OpenSSL 3.5.5 (cli/tests/instruments.rs)"
                        .into(),
                );
            } else {
                suites.push(CipherSuite::TLS_EMPTY_RENEGOTIATION_INFO_SCSV);
                c.groups = vec![
                    G::X25519,
                    G::secp256r1,
                    G::X448,
                    G::secp521r1,
                    G::secp384r1,
                    G::ffdhe2048,
                    G::ffdhe3072,
                    G::ffdhe4096,
                    G::ffdhe6144,
                    G::ffdhe8192,
                ];
                c.key_shares = vec![G::X25519];
                c.signature_schemes = schemes(&OPENSSL_30_SIGALGS);
                spec.versions = Some(vec![
                    ProtocolVersion::TLSv1_3,
                    ProtocolVersion::TLSv1_2,
                    ProtocolVersion::TLSv1_1,
                    ProtocolVersion::TLSv1_0,
                ]);
                spec.source = Some(
                    "OpenSSL 3.0 s_client -servername example.com (Debian 12, 3.0.19), checked against a captured \
                     ClientHello (cli/tests/instruments.rs)"
                        .into(),
                );
            }
            c.cipher_suites = suites;
            c.extra_extensions = extra;
            c.extension_order = order;
            c.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
            // Neither build links a compression library: no compress_certificate (RFC 8879).
            c.cert_compression = Vec::new();
        }
        "openssl-4.0" => openssl_40(&mut spec),
        "chromium" => chromium(&mut spec),
        "firefox" => firefox(&mut spec),
        "curl" => curl(&mut spec),
        "rustls" => rustls(&mut spec),
        "go" => go(&mut spec),
        _ => return None,
    }
    Some(spec)
}

/// Chromium 156 on Debian 12 (tests/vectors/clienthello/chromium-156.0.8078.114.bin). BoringSSL
/// permutes the extensions on every connection (the GREASE ones stay first and last): the order
/// here is the capture's.
fn chromium(spec: &mut HelloSpec) {
    use ExtensionType as T;
    use NamedGroup as G;
    let c = &mut spec.config;
    c.compat_mode = true;
    c.cipher_suites = suites(&[
        0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014,
        0x009c, 0x009d, 0x002f, 0x0035,
    ]);
    c.groups = vec![G::X25519MLKEM768, G::X25519, G::secp256r1, G::secp384r1];
    c.key_shares = vec![G::X25519MLKEM768, G::X25519];
    // ML-DSA-44/65/87 first, then ECDSA, RSA-PSS and PKCS#1 by hash.
    c.signature_schemes = schemes(&[
        0x0904, 0x0905, 0x0906, 0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601,
    ]);
    c.alpn = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    c.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
    c.cert_compression = vec![CertificateCompressionAlgorithm::Brotli];
    c.ech = EchMode::Grease;
    c.extra_extensions = vec![
        empty(T::ExtendedMasterSecret),
        empty(T::SignedCertificateTimestamp),
        status_request(),
        opaque(code::TRUST_ANCHORS, unhex(CHROMIUM_TRUST_ANCHORS)),
        // ALPS for h2: a list of one protocol.
        opaque(code::ALPS, vec![0, 3, 2, b'h', b'2']),
        opaque(T::EcPointFormats.to_repr(), vec![1, 0]),
        empty(T::SessionTicket),
        Extension::RenegotiationInfo(vec![0]),
    ];
    c.extension_order = vec![
        T::ExtendedMasterSecret,
        T::SignedCertificateTimestamp,
        T::PskKeyExchangeModes,
        T::StatusRequest,
        T::ApplicationLayerProtocolNegotiation,
        T::from(code::TRUST_ANCHORS),
        T::from(code::ALPS),
        T::SupportedVersions,
        T::EcPointFormats,
        T::SignatureAlgorithms,
        T::SessionTicket,
        T::CompressCertificate,
        T::SupportedGroups,
        T::ServerName,
        T::RenegotiationInfo,
        T::KeyShare,
    ];
    // GREASE everywhere BoringSSL puts it (RFC 8701): suite, first and last extension, group and
    // its one-byte share, signature algorithm, version. Not in psk_key_exchange_modes.
    spec.grease = Grease {
        psk_mode: false,
        ..Grease::ALL
    };
    // AES-128-GCM, and this capture's payload length (Chromium draws 144, 176, 208, ...).
    spec.grease_ech_size = Some((1, 208));
    spec.versions = Some(vec![ProtocolVersion::TLSv1_3, ProtocolVersion::TLSv1_2]);
    spec.source = Some(
        "Chromium 156.0.8078.114 (Debian 12) opening https://example.com:PORT/ headless, recorded by \
         scripts/record-clienthellos.sh (tests/vectors/clienthello/); extension order as captured. \
         Its GREASE ECH payload was 208 bytes (tls13lab client --preset sends that); the lab sizes \
         its own per RFC 9849 §6.2, larger with a hybrid share"
            .into(),
    );
}

/// Firefox ESR 153 on Debian 12 (tests/vectors/clienthello/firefox-esr-153.8.0.bin): no GREASE
/// but a GREASE ECH extension last, and key shares for X25519MLKEM768, X25519 and P-256.
fn firefox(spec: &mut HelloSpec) {
    use ExtensionType as T;
    let c = &mut spec.config;
    c.reuse_x25519 = true; // NSS: its X25519 share is the hybrid share's X25519 part
    c.compat_mode = true;
    c.cipher_suites = suites(&[
        0x1301, 0x1303, 0x1302, 0xc02b, 0xc02f, 0xcca9, 0xcca8, 0xc02c, 0xc030, 0xc00a, 0xc013,
        0xc014, 0x009c, 0x009d, 0x002f, 0x0035,
    ]);
    c.groups = groups(&[0x11ec, 0x001d, 0x0017, 0x0018, 0x0019, 0x0100, 0x0101]);
    c.key_shares = groups(&[0x11ec, 0x001d, 0x0017]);
    c.signature_schemes = schemes(&[
        0x0403, 0x0503, 0x0603, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0203, 0x0201,
    ]);
    c.alpn = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    c.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
    // RFC 8449: 2^14 + 1, TLS 1.3's largest inner plaintext with its content type.
    c.record_size_limit = Some(0x4001);
    c.cert_compression = vec![
        CertificateCompressionAlgorithm::Zlib,
        CertificateCompressionAlgorithm::Brotli,
        CertificateCompressionAlgorithm::Zstd,
    ];
    c.extra_extensions = vec![
        empty(T::ExtendedMasterSecret),
        Extension::RenegotiationInfo(vec![0]),
        opaque(T::EcPointFormats.to_repr(), vec![1, 0]),
        empty(T::SessionTicket),
        status_request(),
        // RFC 9345: the signature schemes a delegated credential may use.
        opaque(
            code::DELEGATED_CREDENTIAL,
            vec![0, 8, 4, 3, 5, 3, 6, 3, 2, 3],
        ),
        empty(T::SignedCertificateTimestamp),
    ];
    c.ech = EchMode::Grease;
    c.extension_order = vec![
        T::ServerName,
        T::ExtendedMasterSecret,
        T::RenegotiationInfo,
        T::SupportedGroups,
        T::EcPointFormats,
        T::SessionTicket,
        T::ApplicationLayerProtocolNegotiation,
        T::StatusRequest,
        T::from(code::DELEGATED_CREDENTIAL),
        T::SignedCertificateTimestamp,
        T::KeyShare,
        T::SupportedVersions,
        T::SignatureAlgorithms,
        T::PskKeyExchangeModes,
        T::RecordSizeLimit,
        T::CompressCertificate,
    ];
    // Its GREASE ECH goes last. NSS drew ChaCha20-Poly1305 for it here (AES-128-GCM in another
    // run), with a 239-byte payload in both.
    spec.grease_ech_size = Some((3, 239));
    spec.versions = Some(vec![ProtocolVersion::TLSv1_3, ProtocolVersion::TLSv1_2]);
    spec.source = Some(
        "Firefox ESR 153.8.0 (Debian 12) opening https://example.com:PORT/ headless, recorded by \
         scripts/record-clienthellos.sh (tests/vectors/clienthello/). Its GREASE ECH payload was \
         239 bytes (tls13lab client --preset sends that); the lab sizes its own per RFC 9849 §6.2, \
         larger with a hybrid share"
            .into(),
    );
}

/// curl 7.88.1 with OpenSSL 3.0.19 (Debian 12; tests/vectors/clienthello/curl-7.88.1.bin):
/// OpenSSL 3.0's hello with ALPN, post_handshake_auth, no session_ticket, and RFC 7685 padding
/// that lifts its 256..511-byte hello to 512.
fn curl(spec: &mut HelloSpec) {
    use ExtensionType as T;
    let c = &mut spec.config;
    c.compat_mode = true;
    let mut list = openssl_suites();
    list.push(CipherSuite::TLS_EMPTY_RENEGOTIATION_INFO_SCSV);
    c.cipher_suites = list;
    c.groups = groups(&[
        0x001d, 0x0017, 0x001e, 0x0019, 0x0018, 0x0100, 0x0101, 0x0102, 0x0103, 0x0104,
    ]);
    c.key_shares = vec![NamedGroup::X25519];
    c.signature_schemes = schemes(&OPENSSL_30_SIGALGS);
    c.alpn = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    c.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
    c.post_handshake_auth = Some(true);
    c.cert_compression = Vec::new();
    c.extra_extensions = vec![
        opaque(T::EcPointFormats.to_repr(), vec![3, 0, 1, 2]),
        empty(T::EncryptThenMac),
        empty(T::ExtendedMasterSecret),
    ];
    c.extension_order = vec![
        T::ServerName,
        T::EcPointFormats,
        T::SupportedGroups,
        T::ApplicationLayerProtocolNegotiation,
        T::EncryptThenMac,
        T::ExtendedMasterSecret,
        T::PostHandshakeAuth,
        T::SignatureAlgorithms,
        T::SupportedVersions,
        T::PskKeyExchangeModes,
        T::KeyShare,
    ];
    spec.padding = HelloPadding::Avoid256To511;
    spec.versions = Some(vec![
        ProtocolVersion::TLSv1_3,
        ProtocolVersion::TLSv1_2,
        ProtocolVersion::TLSv1_1,
        ProtocolVersion::TLSv1_0,
    ]);
    spec.source = Some(
        "curl 7.88.1 (libcurl/7.88.1 OpenSSL/3.0.19, Debian 12) `curl --resolve example.com:PORT:127.0.0.1 \
         https://example.com:PORT/`, recorded by scripts/record-clienthellos.sh (tests/vectors/clienthello/)"
            .into(),
    );
}

/// OpenSSL 4.0.3's s_client, built by scripts/build-openssl.sh with zlib, brotli and zstd
/// (tests/vectors/clienthello/openssl-4.0.3-no-dsa.bin): 3.5's hello with SecP256r1MLKEM768
/// added, only the uncompressed point format, compress_certificate, and server_name moved last.
/// Its signature_algorithms is the build's: that build has DSA disabled (`no-dsa`).
fn openssl_40(spec: &mut HelloSpec) {
    use ExtensionType as T;
    let c = &mut spec.config;
    c.compat_mode = true;
    let list = openssl_suites();
    c.cipher_suites = list;
    c.groups = groups(&[
        0x11ec, 0x11eb, 0x001d, 0x0017, 0x001e, 0x0018, 0x0019, 0x0100, 0x0101,
    ]);
    c.key_shares = groups(&[0x11ec, 0x001d]);
    c.signature_schemes = OPENSSL_35_SIGALGS
        .iter()
        .filter(|s| !DSA_SCHEMES.contains(s))
        .map(|s| SignatureScheme::from(*s))
        .collect();
    c.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
    c.cert_compression = vec![
        CertificateCompressionAlgorithm::Brotli,
        CertificateCompressionAlgorithm::Zlib,
        CertificateCompressionAlgorithm::Zstd,
    ];
    c.extra_extensions = vec![
        Extension::RenegotiationInfo(vec![0]),
        opaque(T::EcPointFormats.to_repr(), vec![1, 0]),
        empty(T::SessionTicket),
        empty(T::EncryptThenMac),
        empty(T::ExtendedMasterSecret),
    ];
    c.extension_order = vec![
        T::RenegotiationInfo,
        T::EcPointFormats,
        T::SupportedGroups,
        T::SessionTicket,
        T::EncryptThenMac,
        T::ExtendedMasterSecret,
        T::SignatureAlgorithms,
        T::SupportedVersions,
        T::PskKeyExchangeModes,
        T::KeyShare,
        T::CompressCertificate,
        T::ServerName,
    ];
    spec.versions = Some(vec![ProtocolVersion::TLSv1_3, ProtocolVersion::TLSv1_2]);
    spec.source = Some(
        "OpenSSL 4.0.3 s_client -servername example.com (built by scripts/build-openssl.sh, no-dsa), \
         recorded by scripts/record-clienthellos.sh (tests/vectors/clienthello/)"
            .into(),
    );
}

/// rustls 0.23.46's default client with the aws-lc-rs provider and its brotli and zlib features
/// (tests/vectors/clienthello/rustls-0.23.46.bin, recorded by a test of tests/interop_rustls.rs).
/// rustls shuffles its extensions on every connection: the order here is the capture's.
fn rustls(spec: &mut HelloSpec) {
    use ExtensionType as T;
    let c = &mut spec.config;
    c.reuse_x25519 = true; // rustls 0.23: the classical share reuses the hybrid's X25519 key
    c.compat_mode = true;
    c.cipher_suites = suites(&[
        0x1302, 0x1301, 0x1303, 0xc02c, 0xc02b, 0xcca9, 0xc030, 0xc02f, 0xcca8, 0x00ff,
    ]);
    c.groups = groups(&[0x11ec, 0x001d, 0x0017, 0x0018]);
    c.key_shares = groups(&[0x11ec, 0x001d]);
    c.signature_schemes = schemes(&[
        0x0503, 0x0403, 0x0603, 0x0807, 0x0806, 0x0805, 0x0804, 0x0601, 0x0501, 0x0401, 0x0904,
        0x0905, 0x0906,
    ]);
    c.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
    c.cert_compression = vec![
        CertificateCompressionAlgorithm::Brotli,
        CertificateCompressionAlgorithm::Zlib,
    ];
    c.extra_extensions = vec![
        opaque(T::EcPointFormats.to_repr(), vec![1, 0]),
        empty(T::ExtendedMasterSecret),
        status_request(),
        empty(T::SessionTicket),
    ];
    c.extension_order = vec![
        T::PskKeyExchangeModes,
        T::CompressCertificate,
        T::EcPointFormats,
        T::SupportedGroups,
        T::ExtendedMasterSecret,
        T::StatusRequest,
        T::SignatureAlgorithms,
        T::ServerName,
        T::SupportedVersions,
        T::SessionTicket,
        T::KeyShare,
    ];
    spec.versions = Some(vec![ProtocolVersion::TLSv1_3, ProtocolVersion::TLSv1_2]);
    spec.source = Some(
        "rustls 0.23.46 ClientConfig::builder() defaults (aws-lc-rs; brotli and zlib decompression) \
         connecting to example.com, recorded by scripts/record-clienthellos.sh (tests/vectors/clienthello/); \
         extension order as captured"
            .into(),
    );
}

/// Go 1.19.8's crypto/tls client defaults (Debian 12's golang-go;
/// tests/vectors/clienthello/go-1.19.8.bin, made by scripts/go-hello/main.go): TLS 1.2 suites
/// first and the TLS 1.3 ones last (AES-GCM first on a machine with AES hardware, as this one),
/// one x25519 share, no psk_key_exchange_modes, no ALPN. Go 1.19 predates X25519MLKEM768.
fn go(spec: &mut HelloSpec) {
    use ExtensionType as T;
    let c = &mut spec.config;
    c.compat_mode = true;
    c.cipher_suites = suites(&[
        0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc009, 0xc013, 0xc00a, 0xc014, 0x009c,
        0x009d, 0x002f, 0x0035, 0xc012, 0x000a, 0x1301, 0x1302, 0x1303,
    ]);
    c.groups = groups(&[0x001d, 0x0017, 0x0018, 0x0019]);
    c.key_shares = vec![NamedGroup::X25519];
    c.signature_schemes = schemes(&[
        0x0804, 0x0403, 0x0807, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0503, 0x0603, 0x0201,
        0x0203,
    ]);
    c.psk_modes = Vec::new();
    c.cert_compression = Vec::new();
    c.extra_extensions = vec![
        status_request(),
        opaque(T::EcPointFormats.to_repr(), vec![1, 0]),
        Extension::RenegotiationInfo(vec![0]),
        empty(T::SignedCertificateTimestamp),
    ];
    c.extension_order = vec![
        T::ServerName,
        T::StatusRequest,
        T::SupportedGroups,
        T::EcPointFormats,
        T::SignatureAlgorithms,
        T::RenegotiationInfo,
        T::SignedCertificateTimestamp,
        T::SupportedVersions,
        T::KeyShare,
    ];
    spec.versions = Some(vec![ProtocolVersion::TLSv1_3, ProtocolVersion::TLSv1_2]);
    spec.source = Some(
        "Go 1.19.8 (Debian 12) tls.Dial with ServerName example.com (scripts/go-hello/main.go), recorded \
         by scripts/record-clienthellos.sh (tests/vectors/clienthello/)"
            .into(),
    );
}
