//! Open code-point enums (RFC 8446 §4, §6, §B.3).
//!
//! Every enum has an `Unknown(n)` variant so a value we do not understand is kept and re-encoded
//! byte-exact: a research tool must be able to echo what it did not recognise.

use serde::{Serialize, Serializer};

macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $name:ident: $repr:ty {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr => $text:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* #[doc = concat!("`", $text, "` (", stringify!($value), ")")] $variant, )*
            /// A code point this crate does not know; kept for byte-exact re-encoding.
            Unknown($repr),
        }

        impl $name {
            /// The wire value.
            pub const fn to_repr(self) -> $repr {
                match self {
                    $( Self::$variant => $value, )*
                    Self::Unknown(v) => v,
                }
            }

            /// The IANA name, or `"unknown"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )*
                    Self::Unknown(_) => "unknown",
                }
            }

            /// All known variants, in declaration order.
            pub const KNOWN: &'static [$name] = &[ $( Self::$variant, )* ];
        }

        impl From<$repr> for $name {
            fn from(v: $repr) -> Self {
                match v {
                    $( x if x == $value => Self::$variant, )*
                    other => Self::Unknown(other),
                }
            }
        }

        impl From<$name> for $repr {
            fn from(v: $name) -> $repr {
                v.to_repr()
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self {
                    Self::Unknown(v) => write!(f, "unknown({:#x})", v),
                    other => f.write_str(other.name()),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

open_enum! {
    /// TLSPlaintext.type / TLSInnerPlaintext.type (RFC 8446 §5.1).
    ContentType: u8 {
        Invalid = 0 => "invalid",
        ChangeCipherSpec = 20 => "change_cipher_spec",
        Alert = 21 => "alert",
        Handshake = 22 => "handshake",
        ApplicationData = 23 => "application_data",
        Heartbeat = 24 => "heartbeat",
    }
}

open_enum! {
    /// HandshakeType (RFC 8446 §4).
    HandshakeType: u8 {
        HelloRequest = 0 => "hello_request",
        ClientHello = 1 => "client_hello",
        ServerHello = 2 => "server_hello",
        NewSessionTicket = 4 => "new_session_ticket",
        EndOfEarlyData = 5 => "end_of_early_data",
        EncryptedExtensions = 8 => "encrypted_extensions",
        Certificate = 11 => "certificate",
        ServerKeyExchange = 12 => "server_key_exchange",
        CertificateRequest = 13 => "certificate_request",
        ServerHelloDone = 14 => "server_hello_done",
        CertificateVerify = 15 => "certificate_verify",
        ClientKeyExchange = 16 => "client_key_exchange",
        Finished = 20 => "finished",
        CertificateStatus = 22 => "certificate_status",
        KeyUpdate = 24 => "key_update",
        /// RFC 8879 §4.
        CompressedCertificate = 25 => "compressed_certificate",
        MessageHash = 254 => "message_hash",
    }
}

open_enum! {
    /// ExtensionType (RFC 8446 §4.2 and the RFCs named per variant).
    ExtensionType: u16 {
        ServerName = 0 => "server_name",
        MaxFragmentLength = 1 => "max_fragment_length",
        StatusRequest = 5 => "status_request",
        SupportedGroups = 10 => "supported_groups",
        EcPointFormats = 11 => "ec_point_formats",
        SignatureAlgorithms = 13 => "signature_algorithms",
        UseSrtp = 14 => "use_srtp",
        Heartbeat = 15 => "heartbeat",
        ApplicationLayerProtocolNegotiation = 16 => "application_layer_protocol_negotiation",
        SignedCertificateTimestamp = 18 => "signed_certificate_timestamp",
        ClientCertificateType = 19 => "client_certificate_type",
        ServerCertificateType = 20 => "server_certificate_type",
        /// RFC 7685.
        Padding = 21 => "padding",
        EncryptThenMac = 22 => "encrypt_then_mac",
        ExtendedMasterSecret = 23 => "extended_master_secret",
        /// RFC 8879 §3.
        CompressCertificate = 27 => "compress_certificate",
        /// RFC 8449.
        RecordSizeLimit = 28 => "record_size_limit",
        SessionTicket = 35 => "session_ticket",
        PreSharedKey = 41 => "pre_shared_key",
        EarlyData = 42 => "early_data",
        SupportedVersions = 43 => "supported_versions",
        Cookie = 44 => "cookie",
        PskKeyExchangeModes = 45 => "psk_key_exchange_modes",
        CertificateAuthorities = 47 => "certificate_authorities",
        OidFilters = 48 => "oid_filters",
        PostHandshakeAuth = 49 => "post_handshake_auth",
        SignatureAlgorithmsCert = 50 => "signature_algorithms_cert",
        KeyShare = 51 => "key_share",
        RenegotiationInfo = 0xff01 => "renegotiation_info",
        EncryptedClientHello = 0xfe0d => "encrypted_client_hello",
        /// draft-ietf-tls-trust-anchor-ids, BoringSSL's experimental code point (no IANA one
        /// yet): read and written by crate::trust_anchors, never by the message layer.
        TrustAnchors = 0xca34 => "trust_anchors",
    }
}

open_enum! {
    /// NamedGroup (RFC 8446 §4.2.7, RFC 7919, RFC 8734, draft-ietf-tls-ecdhe-mlkem,
    /// draft-ietf-tls-mlkem).
    NamedGroup: u16 {
        secp256r1 = 0x0017 => "secp256r1",
        secp384r1 = 0x0018 => "secp384r1",
        secp521r1 = 0x0019 => "secp521r1",
        X25519 = 0x001d => "x25519",
        X448 = 0x001e => "x448",
        /// RFC 8734 (brainpool curves for TLS 1.3); not implemented by tls13lab.
        brainpoolP256r1tls13 = 0x001f => "brainpoolP256r1tls13",
        /// RFC 8734; not implemented.
        brainpoolP384r1tls13 = 0x0020 => "brainpoolP384r1tls13",
        /// RFC 8734; not implemented.
        brainpoolP512r1tls13 = 0x0021 => "brainpoolP512r1tls13",
        ffdhe2048 = 0x0100 => "ffdhe2048",
        ffdhe3072 = 0x0101 => "ffdhe3072",
        ffdhe4096 = 0x0102 => "ffdhe4096",
        ffdhe6144 = 0x0103 => "ffdhe6144",
        ffdhe8192 = 0x0104 => "ffdhe8192",
        MLKEM512 = 0x0200 => "MLKEM512",
        MLKEM768 = 0x0201 => "MLKEM768",
        MLKEM1024 = 0x0202 => "MLKEM1024",
        SecP256r1MLKEM768 = 0x11eb => "SecP256r1MLKEM768",
        X25519MLKEM768 = 0x11ec => "X25519MLKEM768",
        SecP384r1MLKEM1024 = 0x11ed => "SecP384r1MLKEM1024",
    }
}

impl NamedGroup {
    /// The code points RFC 8446 §B.3.1.4 marks `obsolete_RESERVED`: the binary (sect*), Koblitz
    /// (secp*k1) and small (secp160–224) curves of RFC 4492, the TLS 1.2 brainpool curves of
    /// RFC 7027, and the explicit-curve markers 0xFF01/0xFF02. "Values within 'obsolete_RESERVED'
    /// ranges are used in previous versions of TLS and MUST NOT be offered or negotiated by
    /// TLS 1.3 implementations" (§4.2.7).
    pub fn is_obsolete(self) -> bool {
        matches!(self.to_repr(), 0x0001..=0x0016 | 0x001a..=0x001c | 0xff01..=0xff02)
    }
}

open_enum! {
    /// SignatureScheme (RFC 8446 §4.2.3).
    SignatureScheme: u16 {
        rsa_pkcs1_sha1 = 0x0201 => "rsa_pkcs1_sha1",
        ecdsa_sha1 = 0x0203 => "ecdsa_sha1",
        rsa_pkcs1_sha256 = 0x0401 => "rsa_pkcs1_sha256",
        rsa_pkcs1_sha384 = 0x0501 => "rsa_pkcs1_sha384",
        rsa_pkcs1_sha512 = 0x0601 => "rsa_pkcs1_sha512",
        ecdsa_secp256r1_sha256 = 0x0403 => "ecdsa_secp256r1_sha256",
        ecdsa_secp384r1_sha384 = 0x0503 => "ecdsa_secp384r1_sha384",
        ecdsa_secp521r1_sha512 = 0x0603 => "ecdsa_secp521r1_sha512",
        rsa_pss_rsae_sha256 = 0x0804 => "rsa_pss_rsae_sha256",
        rsa_pss_rsae_sha384 = 0x0805 => "rsa_pss_rsae_sha384",
        rsa_pss_rsae_sha512 = 0x0806 => "rsa_pss_rsae_sha512",
        ed25519 = 0x0807 => "ed25519",
        ed448 = 0x0808 => "ed448",
        rsa_pss_pss_sha256 = 0x0809 => "rsa_pss_pss_sha256",
        rsa_pss_pss_sha384 = 0x080a => "rsa_pss_pss_sha384",
        rsa_pss_pss_sha512 = 0x080b => "rsa_pss_pss_sha512",
        /// RFC 8734 (TLS 1.3 brainpool curves).
        ecdsa_brainpoolP256r1tls13_sha256 = 0x081a => "ecdsa_brainpoolP256r1tls13_sha256",
        /// RFC 8734.
        ecdsa_brainpoolP384r1tls13_sha384 = 0x081b => "ecdsa_brainpoolP384r1tls13_sha384",
        /// RFC 8734.
        ecdsa_brainpoolP512r1tls13_sha512 = 0x081c => "ecdsa_brainpoolP512r1tls13_sha512",
        /// draft-ietf-tls-mldsa (ML-DSA, FIPS 204); offered by OpenSSL 3.5.
        mldsa44 = 0x0904 => "mldsa44",
        /// draft-ietf-tls-mldsa.
        mldsa65 = 0x0905 => "mldsa65",
        /// draft-ietf-tls-mldsa.
        mldsa87 = 0x0906 => "mldsa87",
    }
}

open_enum! {
    /// CipherSuite (RFC 8446 §B.4).
    CipherSuite: u16 {
        TLS_AES_128_GCM_SHA256 = 0x1301 => "TLS_AES_128_GCM_SHA256",
        TLS_AES_256_GCM_SHA384 = 0x1302 => "TLS_AES_256_GCM_SHA384",
        TLS_CHACHA20_POLY1305_SHA256 = 0x1303 => "TLS_CHACHA20_POLY1305_SHA256",
        TLS_AES_128_CCM_SHA256 = 0x1304 => "TLS_AES_128_CCM_SHA256",
        TLS_AES_128_CCM_8_SHA256 = 0x1305 => "TLS_AES_128_CCM_8_SHA256",
        /// RFC 5746 signalling value; meaningless in TLS 1.3 but common in ClientHellos.
        TLS_EMPTY_RENEGOTIATION_INFO_SCSV = 0x00ff => "TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
    }
}

open_enum! {
    /// AlertLevel (RFC 8446 §6).
    AlertLevel: u8 {
        Warning = 1 => "warning",
        Fatal = 2 => "fatal",
    }
}

open_enum! {
    /// AlertDescription (RFC 8446 §6).
    AlertDescription: u8 {
        CloseNotify = 0 => "close_notify",
        UnexpectedMessage = 10 => "unexpected_message",
        BadRecordMac = 20 => "bad_record_mac",
        RecordOverflow = 22 => "record_overflow",
        HandshakeFailure = 40 => "handshake_failure",
        BadCertificate = 42 => "bad_certificate",
        UnsupportedCertificate = 43 => "unsupported_certificate",
        CertificateRevoked = 44 => "certificate_revoked",
        CertificateExpired = 45 => "certificate_expired",
        CertificateUnknown = 46 => "certificate_unknown",
        IllegalParameter = 47 => "illegal_parameter",
        UnknownCa = 48 => "unknown_ca",
        AccessDenied = 49 => "access_denied",
        DecodeError = 50 => "decode_error",
        DecryptError = 51 => "decrypt_error",
        ProtocolVersion = 70 => "protocol_version",
        InsufficientSecurity = 71 => "insufficient_security",
        InternalError = 80 => "internal_error",
        InappropriateFallback = 86 => "inappropriate_fallback",
        UserCanceled = 90 => "user_canceled",
        MissingExtension = 109 => "missing_extension",
        UnsupportedExtension = 110 => "unsupported_extension",
        UnrecognizedName = 112 => "unrecognized_name",
        BadCertificateStatusResponse = 113 => "bad_certificate_status_response",
        UnknownPskIdentity = 115 => "unknown_psk_identity",
        CertificateRequired = 116 => "certificate_required",
        NoApplicationProtocol = 120 => "no_application_protocol",
        EchRequired = 121 => "ech_required",
    }
}

open_enum! {
    /// CertificateCompressionAlgorithm (RFC 8879 §3; 16384–65535 are for experiments, §7.3).
    CertificateCompressionAlgorithm: u16 {
        Zlib = 1 => "zlib",
        Brotli = 2 => "brotli",
        Zstd = 3 => "zstd",
    }
}

open_enum! {
    /// PskKeyExchangeMode (RFC 8446 §4.2.9).
    PskKeyExchangeMode: u8 {
        PskKe = 0 => "psk_ke",
        PskDheKe = 1 => "psk_dhe_ke",
    }
}

open_enum! {
    /// KeyUpdateRequest (RFC 8446 §4.6.3).
    KeyUpdateRequest: u8 {
        UpdateNotRequested = 0 => "update_not_requested",
        UpdateRequested = 1 => "update_requested",
    }
}

open_enum! {
    /// ProtocolVersion (RFC 8446 §4.1.2, §4.2.1).
    ProtocolVersion: u16 {
        SSLv3 = 0x0300 => "SSLv3",
        TLSv1_0 = 0x0301 => "TLSv1.0",
        TLSv1_1 = 0x0302 => "TLSv1.1",
        TLSv1_2 = 0x0303 => "TLSv1.2",
        TLSv1_3 = 0x0304 => "TLSv1.3",
    }
}

open_enum! {
    /// ServerNameType (RFC 6066 §3).
    ServerNameType: u8 {
        HostName = 0 => "host_name",
    }
}

open_enum! {
    /// CertificateStatusType (RFC 6066 §8).
    CertificateStatusType: u8 {
        Ocsp = 1 => "ocsp",
    }
}

open_enum! {
    /// HPKE KEM identifier (RFC 9180 §7.1), as ECHConfig's `kem_id` carries it (RFC 9849 §4).
    HpkeKemId: u16 {
        DhkemP256HkdfSha256 = 0x0010 => "DHKEM(P-256, HKDF-SHA256)",
        DhkemP384HkdfSha384 = 0x0011 => "DHKEM(P-384, HKDF-SHA384)",
        DhkemP521HkdfSha512 = 0x0012 => "DHKEM(P-521, HKDF-SHA512)",
        DhkemX25519HkdfSha256 = 0x0020 => "DHKEM(X25519, HKDF-SHA256)",
        DhkemX448HkdfSha512 = 0x0021 => "DHKEM(X448, HKDF-SHA512)",
        MlKem512 = 0x0040 => "ML-KEM-512",
        MlKem768 = 0x0041 => "ML-KEM-768",
        MlKem1024 = 0x0042 => "ML-KEM-1024",
        MlKem768P256 = 0x0050 => "MLKEM768-P256",
        MlKem1024P384 = 0x0051 => "MLKEM1024-P384",
        MlKem768X25519 = 0x647a => "MLKEM768-X25519 (X-Wing)",
    }
}

open_enum! {
    /// HPKE KDF identifier (RFC 9180 §7.2).
    HpkeKdfId: u16 {
        HkdfSha256 = 0x0001 => "HKDF-SHA256",
        HkdfSha384 = 0x0002 => "HKDF-SHA384",
        HkdfSha512 = 0x0003 => "HKDF-SHA512",
    }
}

open_enum! {
    /// HPKE AEAD identifier (RFC 9180 §7.3).
    HpkeAeadId: u16 {
        Aes128Gcm = 0x0001 => "AES-128-GCM",
        Aes256Gcm = 0x0002 => "AES-256-GCM",
        ChaCha20Poly1305 = 0x0003 => "ChaCha20Poly1305",
        ExportOnly = 0xffff => "Export-only",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_round_trips() {
        assert_eq!(NamedGroup::from(0x11ec), NamedGroup::X25519MLKEM768);
        assert_eq!(NamedGroup::from(0x0a0a), NamedGroup::Unknown(0x0a0a));
        assert_eq!(NamedGroup::Unknown(0x0a0a).to_repr(), 0x0a0a);
        assert_eq!(ContentType::from(99u8).to_repr(), 99);
        assert_eq!(AlertDescription::DecodeError.to_string(), "decode_error");
    }
}
