//! The built-in ClientHello shapes ([`PRESETS`]): tls13lab's own, and OpenSSL 3.0's and 3.5's,
//! which cli/tests/instruments.rs checks against captured hellos.

use super::model::HelloSpec;
use tls13lab::messages::enums::{
    CipherSuite, ExtensionType, NamedGroup, ProtocolVersion, PskKeyExchangeMode, SignatureScheme,
};
use tls13lab::messages::extensions::Extension;

/// Names of the built-in presets, with what they reproduce.
pub const PRESETS: &[(&str, &str)] = &[
    ("tls13lab", "tls13lab's own client defaults"),
    (
        "openssl-3.0",
        "OpenSSL 3.0 s_client defaults (Debian 12's openssl 3.0.19)",
    ),
    (
        "openssl-3.5",
        "OpenSSL 3.5 s_client defaults (hybrid X25519MLKEM768 + X25519 shares)",
    ),
];

/// TLS 1.2 suites OpenSSL 3.x offers after its TLS 1.3 ones (in its default order).
const OPENSSL_TLS12_SUITES: [u16; 27] = [
    0xc02c, 0xc030, 0x009f, 0xcca9, 0xcca8, 0xccaa, 0xc02b, 0xc02f, 0x009e, 0xc024, 0xc028, 0x006b,
    0xc023, 0xc027, 0x0067, 0xc00a, 0xc014, 0x0039, 0xc009, 0xc013, 0x0033, 0x009d, 0x009c, 0x003d,
    0x003c, 0x0035, 0x002f,
];

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
    match name {
        "tls13lab" => {
            spec.source = Some("ClientConfig::default() with server_name example.com".into());
        }
        "openssl-3.0" | "openssl-3.5" => {
            let v35 = name == "openssl-3.5";
            let c = &mut spec.config;
            c.compat_mode = true; // OpenSSL sends a 32-byte legacy_session_id by default
            let mut suites = vec![
                CipherSuite::TLS_AES_256_GCM_SHA384,
                CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
                CipherSuite::TLS_AES_128_GCM_SHA256,
            ];
            suites.extend(OPENSSL_TLS12_SUITES.iter().map(|s| CipherSuite::from(*s)));
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
        _ => return None,
    }
    Some(spec)
}
