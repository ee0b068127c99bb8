//! What the subcommands share: parsing names and files, the failure type with its exit codes,
//! the key log, the summary and the `--json` report (schema: docs/ledger.md).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use lab::dissect;
use serde_json::{json, Value};
use tls13lab::config::{AntiReplay, CertifiedKey, ExternalPsk, TicketMode};
use tls13lab::crypto::aead::suite_params;
use tls13lab::crypto::cert::certs_from_pem;
use tls13lab::crypto::hash::HashAlg;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::events::{Direction, EarlyDataStatus, EchStatus, Epoch, Event, SecretEvent, Side};
use tls13lab::ledger::Ledger;
use tls13lab::messages::{
    CertificateCompressionAlgorithm, CipherSuite, ContentType, DecodeContext, HandshakeMessage,
    HandshakePayload, NamedGroup, PskKeyExchangeMode, SignatureScheme,
};
use tls13lab::record::PaddingPolicy;
use tls13lab::transcript_reader::Negotiating;
use tls13lab::Error;
use tls13lab::{ClientAuth, ClientConfig, ServerConfig};

// ------------------------------------------------------------------------------------ failures

/// Why a command failed. Each kind has its own exit code; the message is printed as the single
/// line `tls13lab: <message>` on stderr.
#[derive(Debug)]
pub enum Failure {
    /// Exit 2: the command line cannot work (unknown name, missing option, conflicting options).
    BadOption(String),
    /// Exit 3: a file could not be read, parsed or written.
    BadFile(String),
    /// Exit 4: TCP failed — connection refused, unreachable, name not resolved, timeout, the peer
    /// hung up mid-handshake.
    Network(String),
    /// Exit 5: TLS failed — an alert was received or sent.
    Tls(String),
}

impl Failure {
    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::BadOption(_) => 2,
            Failure::BadFile(_) => 3,
            Failure::Network(_) => 4,
            Failure::Tls(_) => 5,
        }
    }

    /// A file problem: `bad file: PATH: why`.
    pub fn file(path: &Path, why: impl fmt::Display) -> Failure {
        Failure::BadFile(format!("{}: {why}", path.display()))
    }

    /// A TLS failure, named by the alert that ended it. `during` is "handshake" or "connection".
    pub fn tls(e: &Error, during: &str) -> Failure {
        match e {
            Error::AlertReceived(a) => Failure::Tls(format!("{during} failed: received alert {a}")),
            Error::Closed => Failure::Tls(format!("{during} failed: connection already closed")),
            other => match other.alert() {
                Some(a) => Failure::Tls(format!("{during} failed: sent alert {a} ({other})")),
                None => Failure::Tls(format!("{during} failed: {other}")),
            },
        }
    }

    /// A socket error, named by its cause.
    pub fn io(what: &str, e: &std::io::Error) -> Failure {
        use std::io::ErrorKind as K;
        let cause = match e.kind() {
            K::ConnectionRefused => "connection refused".to_string(),
            K::TimedOut | K::WouldBlock => "timed out".to_string(),
            K::AddrInUse => "address in use".to_string(),
            K::AddrNotAvailable => "address not available".to_string(),
            K::PermissionDenied => "permission denied".to_string(),
            K::ConnectionReset => "connection reset".to_string(),
            K::NotFound => "cannot resolve host".to_string(),
            _ => e.to_string(),
        };
        Failure::Network(format!("{cause}: {what}"))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::BadOption(m) => write!(f, "bad option: {m}"),
            Failure::BadFile(m) => write!(f, "bad file: {m}"),
            Failure::Network(m) | Failure::Tls(m) => f.write_str(m),
        }
    }
}

// ------------------------------------------------------------------------------ option groups

/// What a client offers (shared by `client` and `demo`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Offer {
    /// supported_groups, in order (x25519, secp256r1 / P-256, x25519mlkem768, 0x11ec, ...).
    #[arg(long, value_name = "LIST", value_parser = groups)]
    pub groups: Option<List<NamedGroup>>,
    /// Groups that get a key share in the first ClientHello [default: the first group].
    #[arg(long, value_name = "LIST", value_parser = groups)]
    pub key_shares: Option<List<NamedGroup>>,
    /// cipher_suites, in order (aes128gcm / TLS_AES_128_GCM_SHA256, aes256gcm, chacha20poly1305, aes128ccm, aes128ccm8; the CCM ones only when asked for).
    #[arg(long, value_name = "LIST", value_parser = suites)]
    pub suites: Option<List<CipherSuite>>,
    /// signature_algorithms, in order (ecdsa_secp256r1_sha256 / ECDSA+SHA256, ecdsa_secp521r1_sha512, ed25519, rsa_pss_rsae_sha256 / RSA-PSS+SHA256, rsa_pss_pss_sha256, ...).
    #[arg(long, value_name = "LIST", value_parser = sigalgs)]
    pub sigalgs: Option<List<SignatureScheme>>,
    /// ALPN protocols to offer, comma-separated (e.g. h2,http/1.1).
    #[arg(long, value_name = "LIST", value_parser = alpn)]
    pub alpn: Option<List<Vec<u8>>>,
    /// psk_key_exchange_modes to offer with a PSK (a ticket, or an external one): dhe (psk_dhe_ke), ke (psk_ke) or both [default: dhe].
    #[arg(long, value_name = "LIST", value_parser = psk_modes)]
    pub psk_modes: Option<List<PskKeyExchangeMode>>,
    /// Middlebox compatibility mode (RFC 8446 §D.4): 32-byte legacy_session_id and a dummy CCS.
    #[arg(long, value_name = "on|off", value_parser = on_off)]
    pub compat: Option<bool>,
    /// Pad every protected record's inner plaintext to a multiple of N bytes (RFC 8446 §5.4; 0 = none).
    #[arg(long, value_name = "N")]
    pub padding: Option<usize>,
    /// Certificate compression (RFC 8879) offered in compress_certificate and used for our certificate, in preference order: zlib, brotli, zstd (or a number); none turns it off [default: brotli,zstd,zlib].
    #[arg(long, value_name = "LIST", value_parser = cert_compression)]
    pub cert_compression: Option<List<CertificateCompressionAlgorithm>>,
}

impl Offer {
    /// Apply to a client configuration; checks that the key-share groups are implemented.
    pub fn apply(&self, c: &mut ClientConfig) -> Result<(), Failure> {
        if let Some(g) = &self.groups {
            c.groups = g.0.clone();
            c.key_shares = vec![g.0[0]];
        }
        if let Some(k) = &self.key_shares {
            c.key_shares = k.0.clone();
            if self.groups.is_none() {
                // Offering a share implies offering its group: put the shares' groups first.
                let mut g = k.0.clone();
                g.extend(c.groups.iter().filter(|x| !k.0.contains(x)));
                c.groups = g;
            }
        }
        if let Some(x) = c.key_shares.iter().find(|g| !c.groups.contains(g)) {
            return Err(Failure::BadOption(format!(
                "--key-shares {x} is not in --groups"
            )));
        }
        let missing = unimplemented_groups(&c.key_shares);
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|g| g.to_string()).collect();
            return Err(Failure::BadOption(format!(
                "cannot make a key share for {} (implemented: {}); to offer it without a share, name an implemented group in --key-shares",
                names.join(", "),
                implemented_groups()
            )));
        }
        if let Some(s) = &self.suites {
            c.cipher_suites = s.0.clone();
        }
        if let Some(s) = &self.sigalgs {
            c.signature_schemes = s.0.clone();
        }
        if let Some(a) = &self.alpn {
            c.alpn = a.0.clone();
        }
        if let Some(m) = &self.psk_modes {
            c.psk_modes = m.0.clone();
        }
        if let Some(on) = self.compat {
            c.compat_mode = on;
        }
        if let Some(n) = self.padding {
            c.padding = padding(n);
        }
        if let Some(x) = &self.cert_compression {
            c.cert_compression = x.0.clone();
        }
        Ok(())
    }

    /// One option, both sides (in-memory runs): the server accepts what the client offers, so
    /// `--groups x25519mlkem768` negotiates it. `client` is the configuration `apply` produced.
    pub fn apply_to_server(&self, client: &tls13lab::ClientConfig, s: &mut tls13lab::ServerConfig) {
        if let Some(g) = &self.groups {
            s.groups = g.0.clone();
        }
        if let Some(x) = &self.suites {
            s.cipher_suites = x.0.clone();
        }
        if let Some(x) = &self.sigalgs {
            s.signature_schemes = x.0.clone();
        }
        if let Some(x) = &self.alpn {
            s.alpn = x.0.clone();
        }
        if let Some(x) = &self.cert_compression {
            s.cert_compression = x.0.clone();
        }
        s.padding = client.padding;
    }
}

/// An external PSK (RFC 8446 §4.2.11), given as `openssl s_client/s_server -psk HEX
/// -psk_identity ID` take it (shared by `client` and `server`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PskArgs {
    /// An external PSK, in hex (as `openssl -psk`): the client offers it, the server accepts it; a certificate is used only if the peer does not take it. Needs --psk-identity.
    #[arg(long, value_name = "HEX", value_parser = psk_hex, requires = "psk_identity")]
    pub psk: Option<PskHex>,
    /// The external PSK's identity, as text (as `openssl -psk_identity`).
    #[arg(long, value_name = "ID", value_parser = psk_identity, requires = "psk")]
    pub psk_identity: Option<String>,
    /// The hash the PSK is bound to, sha256 or sha384: only suites with that hash can use it (RFC 8446 §4.2.11), and `tls13lab server` prefers them [default: sha256].
    #[arg(long, value_name = "HASH", value_parser = psk_hash, requires = "psk")]
    pub psk_hash: Option<HashAlg>,
}

/// The key given to `--psk`, still as typed: checked by [`PskArgs::external`], whose error does
/// not repeat it (clap's would). `Debug` does not show it either.
#[derive(Clone)]
pub struct PskHex(String);

impl fmt::Debug for PskHex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PskHex(<{} characters>)", self.0.len())
    }
}

/// `--psk` value parser: kept as typed, checked later.
fn psk_hex(s: &str) -> Result<PskHex, String> {
    Ok(PskHex(s.to_string()))
}

/// `--psk-identity` value parser: 1 to 65535 bytes (`opaque identity<1..2^16-1>`, §4.2.11).
fn psk_identity(s: &str) -> Result<String, String> {
    match s.len() {
        0 => Err("empty: a PSK identity is 1 to 65535 bytes".into()),
        1..=65535 => Ok(s.to_string()),
        n => Err(format!("{n} bytes: a PSK identity is at most 65535")),
    }
}

/// `--psk-hash` value parser.
fn psk_hash(s: &str) -> Result<HashAlg, String> {
    match norm(s).as_str() {
        "sha256" => Ok(HashAlg::Sha256),
        "sha384" => Ok(HashAlg::Sha384),
        _ => Err(format!("expected sha256 or sha384, got '{s}'")),
    }
}

impl PskArgs {
    /// The PSK as the library takes it, `None` without `--psk`. It is bound to the first TLS 1.3
    /// suite of its hash; any suite with that hash can use it (§4.2.11), as with OpenSSL, whose
    /// `-psk` is bound to SHA-256.
    pub fn external(&self) -> Result<Option<ExternalPsk>, Failure> {
        let (Some(PskHex(hex)), Some(identity)) = (&self.psk, &self.psk_identity) else {
            return Ok(None);
        };
        let key = unhex(hex).ok_or_else(|| {
            Failure::BadOption(
                "--psk: not hex (an even number of digits 0-9, a-f, as openssl -psk takes it)"
                    .into(),
            )
        })?;
        if key.is_empty() {
            return Err(Failure::BadOption("--psk: empty key".into()));
        }
        let suite = match self.psk_hash.unwrap_or(HashAlg::Sha256) {
            HashAlg::Sha384 => CipherSuite::TLS_AES_256_GCM_SHA384,
            _ => CipherSuite::TLS_AES_128_GCM_SHA256,
        };
        Ok(Some(ExternalPsk {
            identity: identity.as_bytes().to_vec(),
            key,
            suite,
        }))
    }
}

/// Hex digits (either case) as bytes; `None` for anything else or an odd count.
fn unhex(s: &str) -> Option<Vec<u8>> {
    let digits = s.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|p| {
            let digit = |c: u8| (c as char).to_digit(16);
            Some((digit(p[0])? * 16 + digit(p[1])?) as u8)
        })
        .collect()
}

/// Whether two suites this crate implements use the same hash (a PSK is bound to one, §4.2.11).
pub fn same_hash(a: CipherSuite, b: CipherSuite) -> bool {
    match (suite_params(a), suite_params(b)) {
        (Some(a), Some(b)) => a.hash == b.hash,
        _ => false,
    }
}

/// `--padding N` as a policy.
pub fn padding(n: usize) -> PaddingPolicy {
    match n {
        0 | 1 => PaddingPolicy::None,
        n => PaddingPolicy::ToMultiple(n),
    }
}

/// How a server issues tickets and treats 0-RTT and client certificates (shared by `server` and
/// `demo`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Policy {
    /// NewSessionTickets to send after each handshake.
    #[arg(long, value_name = "N")]
    pub tickets: Option<u32>,
    /// stateless: the ticket is the sealed session state; stateful: a random id of a server-side entry.
    #[arg(long, value_name = "MODE", value_parser = ticket_mode)]
    pub ticket_mode: Option<TicketMode>,
    /// ticket_lifetime in seconds (at most 604800).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u32).range(0..=604_800))]
    pub ticket_lifetime: Option<u32>,
    /// 0-RTT anti-replay: single-use, window[=MS] (default 10000) or off.
    #[arg(long, value_name = "POLICY", value_parser = anti_replay)]
    pub anti_replay: Option<AntiReplay>,
    /// Put a cookie of LEN random bytes (default 32) in HelloRetryRequest.
    #[arg(long, value_name = "LEN", num_args = 0..=1, default_missing_value = "32")]
    pub hrr_cookie: Option<usize>,
    /// Ask for a client certificate; an empty one is accepted.
    #[arg(long, conflicts_with = "require_client_cert")]
    pub request_client_cert: bool,
    /// Ask for a client certificate and fail the handshake without one (certificate_required).
    #[arg(long)]
    pub require_client_cert: bool,
}

/// How the CLI server checks client certificates: against `--client-ca`, or — research mode,
/// which the server's page and summary say — any chain, its CertificateVerify still checked.
pub fn client_auth(roots: Vec<Vec<u8>>, required: bool) -> ClientAuth {
    match (roots.is_empty(), required) {
        (true, required) => ClientAuth::InsecureAcceptAny { required },
        (false, true) => ClientAuth::Required(roots),
        (false, false) => ClientAuth::Optional(roots),
    }
}

impl Policy {
    /// Apply to a server configuration; `client_roots` validate client certificates (empty: any).
    pub fn apply(&self, s: &mut ServerConfig, client_roots: Vec<Vec<u8>>) {
        if let Some(n) = self.tickets {
            s.tickets = n;
        }
        if let Some(m) = self.ticket_mode {
            s.ticket_mode = m;
        }
        if let Some(l) = self.ticket_lifetime {
            s.ticket_lifetime = l;
        }
        if let Some(a) = self.anti_replay {
            s.anti_replay = a;
        }
        if self.hrr_cookie.is_some() {
            s.hrr_cookie = self.hrr_cookie;
        }
        if self.require_client_cert || self.request_client_cert {
            s.client_auth = client_auth(client_roots, self.require_client_cert);
        }
    }
}

/// `--ticket-mode` value parser.
pub fn ticket_mode(s: &str) -> Result<TicketMode, String> {
    match norm(s).as_str() {
        "stateless" => Ok(TicketMode::Stateless),
        "stateful" => Ok(TicketMode::Stateful),
        _ => Err(format!("expected stateless or stateful, got '{s}'")),
    }
}

/// `--anti-replay` value parser: `single-use`, `window`, `window=MS`, `off`.
pub fn anti_replay(s: &str) -> Result<AntiReplay, String> {
    let (name, arg) = match s.split_once(['=', ':']) {
        Some((n, a)) => (n, Some(a)),
        None => (s, None),
    };
    match (norm(name).as_str(), arg) {
        ("singleuse" | "single", None) => Ok(AntiReplay::SingleUse),
        ("off" | "none", None) => Ok(AntiReplay::Off),
        ("window", None) => Ok(AntiReplay::Window { window_ms: 10_000 }),
        ("window", Some(ms)) => ms
            .parse()
            .map(|window_ms| AntiReplay::Window { window_ms })
            .map_err(|_| format!("bad window '{ms}' (milliseconds)")),
        _ => Err(format!(
            "expected single-use, window[=MS] or off, got '{s}'"
        )),
    }
}

/// Where to put what was observed (shared by `client` and `demo`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Output {
    /// Append NSS key log lines (the SSLKEYLOGFILE format Wireshark reads) to FILE; the
    /// SSLKEYLOGFILE environment variable is honoured too.
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<PathBuf>,
    /// Write the ledger, events and summary as JSON (schema: docs/ledger.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Put secret values (and every key-schedule step) in the JSON, not only their labels.
    #[arg(long)]
    pub show_secrets: bool,
    /// Write a ladder diagram of the connection as SVG (docs/ladder.md).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the connection as pcapng, key log embedded (docs/dissect.md).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
}

// --------------------------------------------------------------------------------- name lists

/// A comma-separated list parsed by clap (a newtype, so clap does not treat it as repetition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List<T>(pub Vec<T>);

/// Lowercase with separators removed: `P-256`, `p256` and `P_256` compare equal.
fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// A code point written as a number (`0x11ec`, `4588`): lets a researcher offer anything.
fn number(s: &str) -> Option<u16> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u16::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn list<T>(s: &str, one: fn(&str) -> Result<T, String>) -> Result<List<T>, String> {
    let items: Vec<&str> = s
        .split([',', ':'])
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .collect();
    if items.is_empty() {
        return Err("empty list".into());
    }
    items
        .into_iter()
        .map(one)
        .collect::<Result<_, _>>()
        .map(List)
}

fn known<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> String {
    all.iter().map(|t| name(*t)).collect::<Vec<_>>().join(", ")
}

/// A group: our names, the IANA names and OpenSSL's aliases, in any case (`x25519`, `P-256`,
/// `prime256v1`, `X25519MLKEM768`...), or a number.
pub fn group(s: &str) -> Result<NamedGroup, String> {
    if let Some(n) = number(s) {
        return Ok(NamedGroup::from(n));
    }
    let n = norm(s);
    let alias = match n.as_str() {
        "p256" | "prime256v1" | "nistp256" => Some(NamedGroup::secp256r1),
        "p384" | "nistp384" => Some(NamedGroup::secp384r1),
        "p521" | "nistp521" => Some(NamedGroup::secp521r1),
        "p256mlkem768" => Some(NamedGroup::SecP256r1MLKEM768),
        "p384mlkem1024" => Some(NamedGroup::SecP384r1MLKEM1024),
        _ => None,
    };
    alias
        .or_else(|| {
            NamedGroup::KNOWN
                .iter()
                .copied()
                .find(|g| norm(g.name()) == n)
        })
        .ok_or_else(|| {
            format!(
                "unknown group '{s}' (known: {})",
                known(NamedGroup::KNOWN, NamedGroup::name)
            )
        })
}

/// A cipher suite: `TLS_AES_128_GCM_SHA256`, `aes_128_gcm_sha256`, `aes128gcm`, `chacha20`...
pub fn suite(s: &str) -> Result<CipherSuite, String> {
    if let Some(n) = number(s) {
        return Ok(CipherSuite::from(n));
    }
    let n = norm(s);
    let n = n.strip_prefix("tls").unwrap_or(&n);
    let alias = match n {
        "aes128gcm" => Some(CipherSuite::TLS_AES_128_GCM_SHA256),
        "aes256gcm" => Some(CipherSuite::TLS_AES_256_GCM_SHA384),
        "chacha20" | "chacha20poly1305" => Some(CipherSuite::TLS_CHACHA20_POLY1305_SHA256),
        "aes128ccm" => Some(CipherSuite::TLS_AES_128_CCM_SHA256),
        "aes128ccm8" => Some(CipherSuite::TLS_AES_128_CCM_8_SHA256),
        _ => None,
    };
    alias
        .or_else(|| {
            CipherSuite::KNOWN.iter().copied().find(|c| {
                let k = norm(c.name());
                k.strip_prefix("tls").unwrap_or(&k) == n
            })
        })
        .ok_or_else(|| {
            format!(
                "unknown cipher suite '{s}' (known: aes128gcm, aes256gcm, chacha20poly1305, {})",
                known(CipherSuite::KNOWN, CipherSuite::name)
            )
        })
}

/// A signature scheme: `ecdsa_secp256r1_sha256`, OpenSSL's `ECDSA+SHA256`, `RSA-PSS+SHA256`
/// (rsae), `RSA+SHA256` (PKCS#1), `ed25519`...
pub fn sigalg(s: &str) -> Result<SignatureScheme, String> {
    use SignatureScheme as S;
    if let Some(n) = number(s) {
        return Ok(S::from(n));
    }
    let n = norm(s);
    let alias = match n.as_str() {
        "ecdsasha256" | "ecdsap256sha256" => Some(S::ecdsa_secp256r1_sha256),
        "ecdsasha384" | "ecdsap384sha384" => Some(S::ecdsa_secp384r1_sha384),
        "ecdsasha512" | "ecdsap521sha512" => Some(S::ecdsa_secp521r1_sha512),
        "rsapsssha256" | "pssrsaesha256" => Some(S::rsa_pss_rsae_sha256),
        "rsapsssha384" | "pssrsaesha384" => Some(S::rsa_pss_rsae_sha384),
        "rsapsssha512" | "pssrsaesha512" => Some(S::rsa_pss_rsae_sha512),
        "rsasha256" => Some(S::rsa_pkcs1_sha256),
        "rsasha384" => Some(S::rsa_pkcs1_sha384),
        "rsasha512" => Some(S::rsa_pkcs1_sha512),
        _ => None,
    };
    alias
        .or_else(|| S::KNOWN.iter().copied().find(|x| norm(x.name()) == n))
        .ok_or_else(|| {
            format!(
                "unknown signature scheme '{s}' (known: {})",
                known(S::KNOWN, S::name)
            )
        })
}

/// A PSK key exchange mode: `dhe` / `psk_dhe_ke`, `ke` / `psk_ke`.
pub fn psk_mode(s: &str) -> Result<PskKeyExchangeMode, String> {
    match norm(s).as_str() {
        "dhe" | "pskdheke" | "dheke" => Ok(PskKeyExchangeMode::PskDheKe),
        "ke" | "pskke" => Ok(PskKeyExchangeMode::PskKe),
        _ => Err(format!(
            "unknown PSK mode '{s}' (known: dhe, ke, psk_dhe_ke, psk_ke)"
        )),
    }
}

/// `--groups` value parser.
pub fn groups(s: &str) -> Result<List<NamedGroup>, String> {
    list(s, group)
}

/// `--suites` value parser.
pub fn suites(s: &str) -> Result<List<CipherSuite>, String> {
    list(s, suite)
}

/// `--sigalgs` value parser.
pub fn sigalgs(s: &str) -> Result<List<SignatureScheme>, String> {
    list(s, sigalg)
}

/// `--cert-compression` value parser: algorithm names or numbers (RFC 8879 §3), or `none`.
pub fn cert_compression(s: &str) -> Result<List<CertificateCompressionAlgorithm>, String> {
    if norm(s) == "none" {
        return Ok(List(Vec::new()));
    }
    let l = list(s, |x| {
        let n = norm(x);
        CertificateCompressionAlgorithm::KNOWN
            .iter()
            .copied()
            .find(|a| a.name() == n)
            .or_else(|| number(x).map(CertificateCompressionAlgorithm::from))
            .ok_or_else(|| {
                format!("unknown certificate compression '{x}' (known: zlib, brotli, zstd, none)")
            })
    })?;
    if l.0.len() > 127 {
        return Err("at most 127 algorithms fit compress_certificate".into());
    }
    Ok(l)
}

/// `--psk-modes` value parser.
pub fn psk_modes(s: &str) -> Result<List<PskKeyExchangeMode>, String> {
    list(s, psk_mode)
}

/// `--alpn` value parser: comma-separated protocol names.
pub fn alpn(s: &str) -> Result<List<Vec<u8>>, String> {
    let v: Vec<Vec<u8>> = s
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.as_bytes().to_vec())
        .collect();
    if v.is_empty() || v.iter().any(|p| p.len() > 255) {
        return Err("ALPN protocols are 1..=255 bytes, comma-separated".into());
    }
    Ok(List(v))
}

/// `on` / `off` (also yes/no, true/false, 1/0).
pub fn on_off(s: &str) -> Result<bool, String> {
    match norm(s).as_str() {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(format!("expected on or off, got '{s}'")),
    }
}

/// `--ee-groups` value parser: auto, on or off (and on/off's synonyms).
pub fn ee_groups(s: &str) -> Result<tls13lab::config::EeSupportedGroups, String> {
    use tls13lab::config::EeSupportedGroups as E;
    if norm(s) == "auto" {
        return Ok(E::WhenNotOurFirst);
    }
    match on_off(s) {
        Ok(true) => Ok(E::Always),
        Ok(false) => Ok(E::Never),
        Err(_) => Err(format!("expected auto, on or off, got '{s}'")),
    }
}

/// Bytes given on the command line (a newtype, so clap does not read `Vec<u8>` as repetition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

/// `--request` value parser: [`unescape`].
pub fn bytes(s: &str) -> Result<Bytes, String> {
    unescape(s).map(Bytes)
}

/// Interpret `\r`, `\n`, `\t`, `\\`, `\0` and `\xHH` so a request can be typed in a shell.
pub fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut b = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            continue;
        }
        match chars.next() {
            Some('r') => out.push(b'\r'),
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('0') => out.push(0),
            Some('\\') => out.push(b'\\'),
            Some('x') => {
                let h: String = chars.by_ref().take(2).collect();
                let b = u8::from_str_radix(&h, 16)
                    .map_err(|_| format!("bad escape \\x{h} (two hex digits)"))?;
                out.push(b);
            }
            Some(o) => return Err(format!("unknown escape \\{o}")),
            None => return Err("trailing backslash".into()),
        }
    }
    Ok(out)
}

/// Groups in `wanted` that have no implementation (the core would fail to make a share).
pub fn unimplemented_groups(wanted: &[NamedGroup]) -> Vec<NamedGroup> {
    wanted
        .iter()
        .copied()
        .filter(|g| !tls13lab::crypto::kx::is_supported(*g))
        .collect()
}

/// Names of the groups we can make key shares for.
pub fn implemented_groups() -> String {
    known(tls13lab::crypto::kx::supported_groups(), NamedGroup::name)
}

// -------------------------------------------------------------------------------------- files

/// Read a whole file, naming it in the error.
pub fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| Failure::file(path, e))
}

/// Read a text file, naming it in the error.
pub fn read_text(path: &Path) -> Result<String, Failure> {
    String::from_utf8(read_file(path)?).map_err(|_| Failure::file(path, "not UTF-8 text"))
}

/// Write a whole file, naming it in the error.
pub fn write_file(path: &Path, data: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, data).map_err(|e| Failure::file(path, e))
}

/// The certificates of a PEM file (at least one).
pub fn load_certs(path: &Path) -> Result<Vec<Vec<u8>>, Failure> {
    let certs = certs_from_pem(&read_text(path)?)
        .map_err(|e| Failure::file(path, format!("malformed PEM ({e:?})")))?;
    if certs.is_empty() {
        return Err(Failure::file(path, "no CERTIFICATE block in PEM"));
    }
    Ok(certs)
}

/// A certificate chain and its key from two PEM files.
pub fn load_certified_key(cert: &Path, key: &Path) -> Result<CertifiedKey, Failure> {
    let chain = load_certs(cert)?;
    let key = SigningKey::from_pem(&read_text(key)?).map_err(|e| Failure::file(key, e))?;
    Ok(CertifiedKey {
        chain,
        key: std::sync::Arc::new(key),
    })
}

/// The CERTIFICATE PROPERTIES of a chain-with-properties PEM file (trust-anchor-ids §6.4), as
/// `tls13lab cert --mtc` writes them; `None` for a plain chain.
pub fn load_certificate_properties(
    cert: &Path,
) -> Result<Option<tls13lab::trust_anchors::CertificateProperties>, Failure> {
    tls13lab::trust_anchors::properties_from_pem(&read_text(cert)?)
        .map_err(|e| Failure::file(cert, e))
}

/// DER certificates as PEM text.
pub fn certs_to_pem(chain: &[Vec<u8>]) -> String {
    chain
        .iter()
        .map(|der| tls13lab::crypto::cert::pem_encode("CERTIFICATE", der))
        .collect()
}

// ------------------------------------------------------------------------------------ key log

/// NSS key log files (`--keylog FILE` and `SSLKEYLOGFILE`), appended to line by line as secrets
/// are derived, so a capture can be decrypted even if the process dies mid-connection.
#[derive(Default)]
pub struct KeyLog {
    files: Vec<File>,
}

impl KeyLog {
    /// Open `explicit` and `$SSLKEYLOGFILE` (once if they name the same file).
    pub fn open(explicit: Option<&Path>) -> Result<KeyLog, Failure> {
        let mut paths: Vec<PathBuf> = explicit.map(Path::to_path_buf).into_iter().collect();
        if let Some(env) = std::env::var_os("SSLKEYLOGFILE").filter(|v| !v.is_empty()) {
            let env = PathBuf::from(env);
            if !paths.contains(&env) {
                paths.push(env);
            }
        }
        let files = paths
            .iter()
            .map(|p| {
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| Failure::file(p, e))
            })
            .collect::<Result<_, _>>()?;
        Ok(KeyLog { files })
    }

    /// Whether any file is open.
    pub fn is_active(&self) -> bool {
        !self.files.is_empty()
    }

    /// Append one line.
    pub fn write(&mut self, s: &SecretEvent) {
        let line = format!("{}\n", s.keylog_line());
        for f in &mut self.files {
            // A full disk must not kill the connection; the key log is best effort.
            let _ = f.write_all(line.as_bytes()).and_then(|()| f.flush());
        }
    }

    /// Append the lines of every secret in `events`.
    pub fn write_events(&mut self, events: &[Event]) {
        if self.files.is_empty() {
            return;
        }
        for e in events {
            if let Event::Secret(s) = e {
                self.write(s);
            }
        }
    }
}

// --------------------------------------------------------------------------- what happened

/// A ledger of `events` whose table counts time from `origin_ms`.
pub fn ledger(events: &[Event], origin_ms: u64) -> Ledger {
    let mut l = Ledger::from_events(events);
    l.set_origin(origin_ms);
    l
}

/// The PSK a connection used: the ServerHello says that one was used, its index among the
/// offered identities and (by its key_share) how; the identity itself is read from the last
/// ClientHello in the events that offered PSKs, which both sides have (the core's
/// [`Negotiating`], which `tls13lab dissect` reads captures with). Whether it is an external PSK or a ticket
/// depends on the configuration: external if it is one of `external`, the identities of the
/// configured external PSKs. A server never tries an identity it has as an external PSK as a
/// ticket, so for the server this is exact; for the client, a ticket equal to its external
/// identity would be counted as external.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PskUse {
    /// The identity the server selected, as offered.
    pub identity: Vec<u8>,
    /// Whether it is one of the configured external PSKs (else a resumption ticket).
    pub external: bool,
    /// psk_ke (no key exchange) or psk_dhe_ke (§4.2.9).
    pub mode: PskKeyExchangeMode,
}

impl PskUse {
    /// Read it out of `events`: `None` if no PSK was selected (or the ServerHello or the
    /// ClientHello are not among the events).
    pub fn from_events(events: &[Event], external: &[Vec<u8>]) -> Option<PskUse> {
        // Before the handshake completes (a server answering 0-RTT data) the ServerHello says
        // it all: the index, and a key_share beside the PSK for psk_dhe_ke.
        let hellos = Negotiating::from_events(events);
        let identity = hellos.psk_identity()?.to_vec();
        Some(PskUse {
            external: external.contains(&identity),
            identity,
            mode: hellos.psk_mode()?,
        })
    }

    /// In words: `external PSK "ID", psk_ke` or `resumption ticket, psk_dhe_ke`.
    pub fn describe(&self) -> String {
        if self.external {
            format!(
                "external PSK \"{}\", {}",
                self.identity.escape_ascii(),
                self.mode
            )
        } else {
            format!("resumption ticket, {}", self.mode)
        }
    }

    /// As JSON: `{identity, identity_hex, external, mode}`; `identity` is the text when it is
    /// UTF-8 (external identities are), else null.
    pub fn to_json(&self) -> Value {
        json!({
            "identity": std::str::from_utf8(&self.identity).ok(),
            "identity_hex": tls13lab::events::hex(&self.identity),
            "external": self.external,
            "mode": self.mode,
        })
    }
}

/// The server's supported_groups as the client recorded them after the handshake (§4.2.7).
pub fn server_groups(events: &[Event]) -> Option<&[NamedGroup]> {
    events.iter().find_map(|e| match e {
        Event::ServerGroups { groups } => Some(groups.as_slice()),
        _ => None,
    })
}

/// How the early data went, in words.
pub fn early_text(s: Option<EarlyDataStatus>) -> &'static str {
    s.map_or("unknown (no handshake)", dissect::early_data_text)
}

/// What the client and the demo print: the ledger table, the response (the application data
/// the client read), the summary. `external` names the configured external PSKs (see
/// [`PskUse`]).
pub fn printout(
    ledger: &Ledger,
    events: &[Event],
    response: &[u8],
    external: &[Vec<u8>],
) -> String {
    let text = String::from_utf8_lossy(response);
    let mut s = ledger.table();
    s.push_str(&format!("--- response ({} bytes)\n{text}", response.len()));
    if !text.is_empty() && !text.ends_with('\n') {
        s.push('\n');
    }
    s.push_str("--- summary\n");
    s.push_str(&summary(ledger, events, external));
    s
}

/// Write to stdout. A closed pipe (`tls13lab demo | head`) is not an error worth a panic.
pub fn emit(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
}

/// What a CLI connection observes: everything, and the secrets too when a key log is open or
/// `secrets` (an output that shows or embeds them) asks for them.
pub fn observe_for(keylog: &KeyLog, secrets: bool) -> tls13lab::Observe {
    if secrets || keylog.is_active() {
        tls13lab::Observe::ALL_WITH_SECRETS
    } else {
        tls13lab::Observe::PUBLIC
    }
}

/// The summary printed after the ledger and the response.
pub fn summary(ledger: &Ledger, events: &[Event], external: &[Vec<u8>]) -> String {
    // The negotiated lines are the ones `tls13lab dissect` prints too.
    let mut s = ledger.negotiated.as_ref().map_or_else(
        || dissect::summary_line("handshake", "not completed"),
        |n| dissect::summary_lines(&n.into()),
    );
    let mut line = |k: &str, v: String| s.push_str(&dissect::summary_line(k, &v));
    let t = &ledger.totals;
    line(
        "client → server",
        format!(
            "{} bytes in {} records",
            t.client_to_server.bytes, t.client_to_server.records
        ),
    );
    line(
        "server → client",
        format!(
            "{} bytes in {} records",
            t.server_to_client.bytes, t.server_to_client.records
        ),
    );
    line(
        "round trips",
        ledger.round_trips_to_first_response().map_or_else(
            || "no response".into(),
            |r| format!("{r} until the first response byte"),
        ),
    );
    let tickets = events
        .iter()
        .filter(|e| {
            matches!(e, Event::Ticket { direction, .. } if *direction == Direction::ServerToClient)
        })
        .count();
    line("tickets", format!("{tickets} received"));
    // Post-handshake client authentication (RFC 8446 §4.6.2): one entry per answered request.
    let answers: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::PostHandshakeAuth {
                certificates,
                scheme,
                ..
            } => Some(match scheme {
                Some(s) if *certificates > 0 => format!("{certificates} certificate(s), {s}"),
                _ => "empty Certificate".into(),
            }),
            _ => None,
        })
        .collect();
    if !answers.is_empty() {
        line(
            "post-hs auth",
            format!(
                "{} CertificateRequest(s) answered: {}",
                answers.len(),
                answers.join("; ")
            ),
        );
    }
    // What only an endpoint knows (a capture cannot tell an external PSK from a ticket), and
    // what the server said of its groups, after the lines `dissect` shares.
    if ledger.negotiated.is_some() {
        if let Some(p) = PskUse::from_events(events, external) {
            line("psk", p.describe());
        }
        if let Some(g) = server_groups(events) {
            let names: Vec<String> = g.iter().map(|g| g.to_string()).collect();
            line("server groups", names.join(", "));
        }
    }
    if let Some(t) = trust_anchors_line(events) {
        line("trust anchors", t);
    }
    s
}

/// What trust anchor negotiation did (draft-ietf-tls-trust-anchor-ids §4): whether the
/// certificate path was the one asked for, and the server's available anchors (client side).
fn trust_anchors_line(events: &[Event]) -> Option<String> {
    let matched = events
        .iter()
        .any(|e| matches!(e, Event::TrustAnchorMatched));
    let listed = events.iter().find_map(|e| match e {
        Event::TrustAnchorsAvailable { ids } => Some(ids),
        _ => None,
    });
    if !matched && listed.is_none() {
        return None;
    }
    let mut s = if matched {
        "the certificate path asked for".to_string()
    } else {
        "no path asked for: the server's fallback".to_string()
    };
    if let Some(ids) = listed {
        let ids: Vec<String> = ids
            .iter()
            .map(|i| tls13lab::trust_anchors::to_ascii(i))
            .collect();
        s.push_str(&format!("; the server has {}", ids.join(", ")));
    }
    Some(s)
}

// ------------------------------------------------------------------------------------- JSON

/// Inputs of the `--json` report (schema: docs/ledger.md).
pub struct Report<'a> {
    /// Which endpoint observed the connection.
    pub side: Side,
    /// The peer's address (`None` in memory).
    pub peer: Option<String>,
    /// The clock when the connection started (Unix ms); records carry the same clock.
    pub started_ms: u64,
    /// Every event the endpoint reported, in order.
    pub events: &'a [Event],
    /// Include secret values (and every key-schedule step).
    pub show_secrets: bool,
    /// The one-line failure, if the connection failed.
    pub error: Option<String>,
    /// The identities of the configured external PSKs (see [`PskUse`]).
    pub external_psks: &'a [Vec<u8>],
}

/// Version of the JSON layout; bumped on incompatible changes.
pub const SCHEMA: &str = "tls13lab.connection.v1";

impl Report<'_> {
    /// The report as JSON.
    pub fn to_json(&self) -> Value {
        let l = ledger(self.events, self.started_ms);
        let mut messages = Vec::new();
        let mut secrets = Vec::new();
        let mut derivations = Vec::new();
        let mut key_shares = Vec::new();
        let mut events = Vec::new();
        for e in self.events {
            match e {
                // Data this side received, as it arrived: each record that carried some (the
                // data itself is read apart from the events; the record says how much).
                Event::Record(r)
                    if r.direction == self.side.receiving()
                        && r.inner_type == ContentType::ApplicationData =>
                {
                    let event = match r.epoch {
                        Epoch::Early => "early_data",
                        _ => "app_data",
                    };
                    events.push(json!({"event": event, "len": r.plaintext_len}))
                }
                Event::Record(_) => {}
                Event::Handshake(h) => {
                    let mut m = json!({
                        "direction": h.direction,
                        "epoch": h.epoch,
                        "type": h.typ,
                        "len": h.bytes.len(),
                        "bytes": tls13lab::events::hex(&h.bytes),
                        "layout": h.layout,
                    });
                    // RFC 8879 §4: what a compressed_certificate says about itself.
                    if let Ok(HandshakeMessage {
                        payload: HandshakePayload::CompressedCertificate(cc),
                        ..
                    }) = HandshakeMessage::decode(&h.bytes, DecodeContext::default())
                    {
                        m["algorithm"] = json!(cc.algorithm);
                        m["uncompressed_length"] = json!(cc.uncompressed_length);
                        m["compressed_length"] = json!(cc.compressed_certificate_message.len());
                    }
                    messages.push(m)
                }
                Event::Secret(s) => {
                    let mut v = json!({
                        "name": s.name,
                        "label": s.nss_label,
                        "client_random": tls13lab::events::hex(&s.client_random),
                    });
                    if self.show_secrets {
                        v["secret"] = tls13lab::events::hex(&s.secret).into();
                    }
                    secrets.push(v);
                }
                Event::Derivation(d) if self.show_secrets => {
                    derivations.push(serde_json::to_value(d).unwrap_or(Value::Null))
                }
                Event::KeyShare(k) => {
                    if self.show_secrets {
                        key_shares.push(serde_json::to_value(k).unwrap_or(Value::Null));
                    } else {
                        key_shares.push(json!({
                            "group": k.group,
                            "components": k.components.iter().map(|c| c.name).collect::<Vec<_>>(),
                        }));
                    }
                }
                Event::Derivation(_) => {}
                // The ClientHelloInner ECH sealed (RFC 9849), beside the outer one.
                Event::InnerClientHello(h) => messages.push(json!({
                    "direction": h.direction,
                    "epoch": h.epoch,
                    "type": h.typ,
                    "ech_inner": true,
                    "len": h.bytes.len(),
                    "bytes": tls13lab::events::hex(&h.bytes),
                    "layout": h.layout,
                })),
                // HPKE's steps carry the ephemeral key and the context's secrets.
                Event::Hpke(h) if self.show_secrets => {
                    derivations.push(serde_json::to_value(h).unwrap_or(Value::Null))
                }
                Event::Hpke(_) => {}
                Event::EarlyDataRejected { data } => {
                    events.push(json!({"event": "early_data_rejected", "len": data.len()}))
                }
                other => events.push(serde_json::to_value(other).unwrap_or(Value::Null)),
            }
        }
        let n = l.negotiated.as_ref();
        let mut v = json!({
            "schema": SCHEMA,
            "side": self.side,
            "peer": self.peer,
            "started_ms": self.started_ms,
            "negotiated": n,
            "resumed": n.map(|n| n.resumed),
            "early_data": n.map(|n| n.early_data),
            "hello_retry": n.map(|n| n.hello_retry),
            "psk": PskUse::from_events(self.events, self.external_psks).map(|p| p.to_json()),
            "server_groups": server_groups(self.events),
            "round_trips_to_first_response": l.round_trips_to_first_response(),
            "totals": l.totals,
            "records": l.records,
            "certificates": l.certificates,
            "messages": messages,
            "secrets": secrets,
            "key_shares": key_shares,
            "events": events,
            "error": self.error,
        });
        if !l.ech_hellos.is_empty() {
            // Each ClientHelloOuter's encrypted_client_hello, part by part (RFC 9849 §5).
            v["ech_hellos"] = serde_json::to_value(&l.ech_hellos).unwrap_or(Value::Null);
        }
        if self.side == Side::Client {
            let ech = self.events.iter().rev().find_map(|e| match e {
                Event::EchOffer(e) => Some(e),
                _ => None,
            });
            v["ech"] = ech.map_or("not offered", |e| e.outcome.as_str()).into();
            v["ech_inner_sni"] = ech.and_then(|e| e.inner_sni.clone()).into();
            v["ech_outer_sni"] = ech.and_then(|e| e.outer_sni.clone()).into();
        } else if let Some(text) = server_ech_text(self.events) {
            // The server's words for it, as on its line.
            v["ech"] = text.into();
        }
        if self.show_secrets {
            v["derivations"] = derivations.into();
        }
        v
    }

    /// Write the report to `path`.
    pub fn write(&self, path: &Path) -> Result<(), Failure> {
        let text = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        write_file(path, format!("{text}\n").as_bytes())
    }
}

/// What a server made of an ECH offer, for its summary line, its page and its JSON; `None` when
/// none was offered. RFC 9849 §7.1: a server with keys that opened none rejects and sends its
/// configs; a server without keys rejects too (it answers ClientHelloOuter), and GREASE (§6.2) or
/// a config from elsewhere look the same to it, so it says which of the two it was.
pub fn server_ech_text(events: &[Event]) -> Option<String> {
    let e = events.iter().find_map(|e| match e {
        Event::Ech(e) => Some(e),
        _ => None,
    })?;
    let outer = e.outer_sni.as_deref().unwrap_or("none");
    let id = e
        .config_id
        .map_or("an unknown config_id".to_string(), |id| {
            format!("config_id {id}")
        });
    Some(match e.status {
        EchStatus::NotOffered => return None,
        EchStatus::Accepted => format!(
            "accepted ({id}, inner SNI {}, outer SNI {outer})",
            e.inner_sni.as_deref().unwrap_or("none")
        ),
        EchStatus::Rejected if e.retry_configs_sent => {
            format!("rejected: no key for {id} opened it, retry_configs sent (outer SNI {outer})")
        }
        EchStatus::Rejected => format!(
            "rejected: this server has no ECH keys (GREASE or a config it never held; {id}, \
             outer SNI {outer})"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_accept_every_spelling() {
        for s in ["x25519", "X25519", "0x001d", "29"] {
            assert_eq!(group(s), Ok(NamedGroup::X25519), "{s}");
        }
        for s in ["secp256r1", "P-256", "prime256v1", "p256", "SECP256R1"] {
            assert_eq!(group(s), Ok(NamedGroup::secp256r1), "{s}");
        }
        for s in ["x25519mlkem768", "X25519MLKEM768", "x25519_mlkem768"] {
            assert_eq!(group(s), Ok(NamedGroup::X25519MLKEM768), "{s}");
        }
        assert_eq!(group("0x0a0a"), Ok(NamedGroup::Unknown(0x0a0a)));
        assert!(group("x25518").is_err());
        for s in [
            "aes128gcm",
            "TLS_AES_128_GCM_SHA256",
            "aes_128_gcm_sha256",
            "0x1301",
        ] {
            assert_eq!(suite(s), Ok(CipherSuite::TLS_AES_128_GCM_SHA256), "{s}");
        }
        assert_eq!(
            suite("chacha20"),
            Ok(CipherSuite::TLS_CHACHA20_POLY1305_SHA256)
        );
        assert_eq!(
            suite("aes128ccm8"),
            Ok(CipherSuite::TLS_AES_128_CCM_8_SHA256)
        );
        for s in [
            "ecdsa_secp256r1_sha256",
            "ECDSA+SHA256",
            "ecdsa-secp256r1-sha256",
        ] {
            assert_eq!(
                sigalg(s),
                Ok(SignatureScheme::ecdsa_secp256r1_sha256),
                "{s}"
            );
        }
        assert_eq!(
            sigalg("RSA-PSS+SHA256"),
            Ok(SignatureScheme::rsa_pss_rsae_sha256)
        );
        assert_eq!(sigalg("Ed25519"), Ok(SignatureScheme::ed25519));
        assert_eq!(
            groups("x25519, P-256").map(|l| l.0),
            Ok(vec![NamedGroup::X25519, NamedGroup::secp256r1])
        );
        assert_eq!(
            groups("X25519:prime256v1").map(|l| l.0),
            Ok(vec![NamedGroup::X25519, NamedGroup::secp256r1]),
            "OpenSSL's colon lists"
        );
        assert!(groups(",").is_err());
        assert_eq!(
            psk_modes("dhe,ke").map(|l| l.0),
            Ok(vec![
                PskKeyExchangeMode::PskDheKe,
                PskKeyExchangeMode::PskKe
            ])
        );
    }

    #[test]
    fn psk_options_parse() {
        let args = |hex: &str, hash: Option<HashAlg>| PskArgs {
            psk: Some(psk_hex(hex).unwrap()),
            psk_identity: Some("id".into()),
            psk_hash: hash,
        };
        let p = args("00aAfF", None).external().unwrap().unwrap();
        assert_eq!(p.key, [0x00, 0xaa, 0xff]);
        assert_eq!(p.identity, b"id");
        assert_eq!(
            p.suite,
            CipherSuite::TLS_AES_128_GCM_SHA256,
            "SHA-256 by default"
        );
        let p = args("01", Some(HashAlg::Sha384))
            .external()
            .unwrap()
            .unwrap();
        assert_eq!(p.suite, CipherSuite::TLS_AES_256_GCM_SHA384);
        for bad in ["0", "0g", "0x01", " 01", ""] {
            let e = args(bad, None).external().unwrap_err().to_string();
            assert!(e.starts_with("bad option: --psk: "), "{bad:?}: {e}");
        }
        assert!(format!("{:?}", psk_hex("secret").unwrap()).contains("6 characters"));
        assert!(PskArgs::default().external().unwrap().is_none());
        assert!(psk_identity("").is_err());
        assert!(psk_identity(&"x".repeat(65_535)).is_ok());
        assert!(psk_identity(&"x".repeat(65_536)).is_err());
        assert_eq!(psk_hash("SHA-384"), Ok(HashAlg::Sha384));
        assert!(psk_hash("sha512").is_err());
        use CipherSuite as C;
        assert!(same_hash(
            C::TLS_AES_128_GCM_SHA256,
            C::TLS_CHACHA20_POLY1305_SHA256
        ));
        assert!(!same_hash(
            C::TLS_AES_128_GCM_SHA256,
            C::TLS_AES_256_GCM_SHA384
        ));
        assert!(same_hash(
            C::TLS_AES_128_CCM_8_SHA256,
            C::TLS_AES_128_GCM_SHA256
        ));
        assert!(!same_hash(C::Unknown(0x1399), C::Unknown(0x1399)));
    }

    #[test]
    fn requests_unescape() {
        assert_eq!(
            unescape(r"GET / HTTP/1.0\r\n\r\n").unwrap(),
            b"GET / HTTP/1.0\r\n\r\n"
        );
        assert_eq!(unescape(r"\x41\\").unwrap(), b"A\\");
        assert!(unescape(r"\q").is_err());
        assert!(unescape("\\").is_err());
    }

    #[test]
    fn pem_round_trips() {
        let der = vec![0x30, 0x03, 0x02, 0x01, 0x01];
        let pem = certs_to_pem(std::slice::from_ref(&der));
        // certs_from_pem does not check the DER, only the armour and base64.
        assert_eq!(certs_from_pem(&pem).unwrap(), vec![der]);
    }
}
