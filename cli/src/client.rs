//! `tls13lab client HOST:PORT`: connect, send the request (0-RTT when a saved ticket allows it),
//! print the ledger, the response and a summary.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tls13lab::config::{EchMode, TrustAnchorOffer};
use tls13lab::crypto::cert::{
    base64_decode, base64_encode, leaf_is_a_root, pem_blocks, CertVerifier,
};
use tls13lab::crypto::random::{OsRandom, RandomSource, SeededRandom};
use tls13lab::events::{Event, Side};
use tls13lab::messages::ech::EchConfigList;
use tls13lab::session::TicketStore;
use tls13lab::Error;
use tls13lab::{Client, ClientConfig, ClientSide, ServerVerification};

use super::common::{
    bytes, emit, ledger, load_certified_key, load_certs, observe_for, printout, read_file,
    read_text, write_file, Bytes, Failure, KeyLog, List, Offer, Output, PskArgs, Report,
};
use crate::net::{self, Driver, NetError, Step};

/// The request sent when neither --request nor --early-data is given.
const DEFAULT_REQUEST: &[u8] = b"GET / HTTP/1.0\r\n\r\n";

/// Options of `tls13lab client`.
#[derive(clap::Args, Debug)]
pub struct ClientArgs {
    /// The server: host:port, or [v6-address]:port.
    #[arg(value_name = "HOST:PORT")]
    pub target: String,
    #[command(flatten)]
    pub offer: Offer,
    #[command(flatten)]
    pub psk: PskArgs,
    /// server_name to send and to check in the certificate [default: HOST unless it is an IP address].
    #[arg(long, value_name = "NAME", conflicts_with = "no_sni")]
    pub sni: Option<String>,
    /// Send no server_name.
    #[arg(long)]
    pub no_sni: bool,
    /// Trust anchors (PEM) to validate the server's certificate against [default: the system's;
    /// SSL_CERT_FILE / SSL_CERT_DIR replace them when set].
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub cafile: Option<PathBuf>,
    /// Accept any server certificate (its CertificateVerify signature is still checked).
    #[arg(long)]
    pub insecure: bool,
    /// Client certificate chain (PEM), sent if the server asks. A file that starts with
    /// CERTIFICATE PROPERTIES (trust-anchor-ids §6.4) is matched against the request's
    /// trust_anchors: a match is marked in the Certificate, and a negotiation-only
    /// certificate is sent only then.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// Private key of the client certificate (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Load tickets from FILE and offer one (resumption across processes).
    #[arg(long, value_name = "FILE")]
    pub sess_in: Option<PathBuf>,
    /// Save the tickets received (and unused loaded ones) to FILE.
    #[arg(long, value_name = "FILE")]
    pub sess_out: Option<PathBuf>,
    /// Send FILE's bytes as 0-RTT data when a loaded ticket allows it (after the handshake
    /// otherwise, or if the server rejects them); 0-RTT is offered only with this option.
    /// Without --request they are the request.
    #[arg(long, value_name = "FILE")]
    pub early_data: Option<PathBuf>,
    /// The request; \r \n \t \\ \xHH are interpreted [default: GET / HTTP/1.0\r\n\r\n].
    #[arg(long, value_name = "STRING", value_parser = bytes)]
    pub request: Option<Bytes>,
    #[command(flatten)]
    pub out: Output,
    /// Write the connection as one self-contained HTML page into FILE (docs/illustrated/):
    /// every byte of every record annotated and decrypted with the connection's own secrets,
    /// each protected record with its key, IV, nonce and additional data.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Seconds to wait for the connection, the handshake and the first response byte.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub timeout: u64,
    /// Once the response has started, close after this many milliseconds without data.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub linger: u64,
    /// Seed all randomness (replayable ClientHello, key shares...).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Offer Encrypted ClientHello (RFC 9849) with this ECHConfigList: base64 (as `s_client
    /// -ech_config_list` takes it), or a PEM file with an ECHCONFIG block (`openssl ech`,
    /// `tls13lab ech keygen`). The server_name goes inside; the config's public_name outside.
    #[arg(long, value_name = "BASE64|FILE")]
    pub ech_config: Option<String>,
    /// The server's groups as its DNS record publishes them (the SVCB/HTTPS
    /// `tls-supported-groups` SvcParam, draft-ietf-tls-key-share-prediction: decimal code points
    /// or names, most preferred first, e.g. 4588,29): send one key share, for the first of them
    /// we support; supported_groups is unchanged. Nothing in common: the usual shares.
    #[arg(long, value_name = "LIST", value_parser = dns_groups, conflicts_with = "key_shares")]
    pub dns_groups: Option<List<tls13lab::messages::NamedGroup>>,
    /// Send a GREASE encrypted_client_hello (RFC 9849 §6.2); with --ech-config, only when no
    /// config in it is usable.
    #[arg(long)]
    pub ech_grease: bool,
    /// When the server rejects ECH and sends retry_configs, connect again once with them
    /// (RFC 9849 §6.1.6).
    #[arg(long, requires = "ech_config")]
    pub ech_retry: bool,
    /// Verify a Merkle Tree Certificate (draft-ietf-plants-merkle-tree-certs) from the server
    /// against this relying-party file (`tls13lab cert --mtc` writes relying-party.txt: the
    /// cosigners, the policy, the landmark subtrees). Other certificates are verified against
    /// --cafile (or none). Without --trust-anchors, trust_anchors advertises the file's
    /// landmark groups (CA.2.log.landmark: the CA and its recent landmarks).
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub mtc: Option<PathBuf>,
    /// Send trust_anchors (draft-ietf-tls-trust-anchor-ids) with these trust anchor IDs, ASCII
    /// form, comma-separated (`32473.1,32473.1.2.1.2`; "" for an empty list). If the handshake
    /// fails on a path we did not ask for and the server's EncryptedExtensions listed an ID
    /// we can verify (a CA or a landmark of --mtc) that we did not send, connect again once
    /// asking only for it (§4.3).
    #[arg(long, value_name = "LIST", value_parser = trust_anchor_list)]
    pub trust_anchors: Option<TrustAnchorList>,
    /// Do not connect again with a trust anchor the server listed (report the failure).
    #[arg(long)]
    pub no_trust_anchor_retry: bool,
    /// Send the ClientHello shape of a preset (`tls13lab hello --preset list`: chromium,
    /// firefox, curl, openssl-3.5...), as utls does: its suites, groups, key shares, signature
    /// algorithms, ALPN, extensions in their order, GREASE and padding. The `preset` line says
    /// what tls13lab could not honour. Options such as --groups or --alpn apply on top.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
}

/// A GREASE value (RFC 8701 §2) other than `not`.
fn grease_value(rng: &mut dyn RandomSource, not: Option<u16>) -> u16 {
    loop {
        let mut b = [0u8; 1];
        rng.fill(&mut b);
        let v = lab::hello::GREASE_VALUES[usize::from(b[0] & 15)];
        if Some(v) != not {
            return v;
        }
    }
}

/// The configuration of preset `name`, and what of its shape tls13lab cannot send. The
/// preset's spec is the lab's (lab/src/hello/presets.rs); what the lab edits into a built
/// hello (GREASE, versions, padding, shares for groups we lack) is done here through the
/// client's own configuration, or reported.
fn preset_config(
    name: &str,
    rng: &mut dyn RandomSource,
) -> Result<(ClientConfig, Vec<String>), Failure> {
    use tls13lab::messages::enums::{
        CipherSuite, ExtensionType as T, NamedGroup, ProtocolVersion, PskKeyExchangeMode,
        SignatureScheme,
    };
    use tls13lab::messages::extensions::Extension;
    let spec = lab::hello::preset(name).ok_or_else(|| {
        let known: Vec<&str> = lab::hello::PRESETS.iter().map(|(n, _)| *n).collect();
        Failure::BadOption(format!(
            "--preset: unknown preset '{name}' (known: {})",
            known.join(", ")
        ))
    })?;
    let mut c = spec.config;
    let mut notes = Vec::new();
    let missing: Vec<NamedGroup> = c
        .key_shares
        .iter()
        .copied()
        .filter(|g| !tls13lab::crypto::kx::is_supported(*g))
        .collect();
    if !missing.is_empty() {
        c.key_shares.retain(|g| !missing.contains(g));
        let names: Vec<String> = missing.iter().map(|g| g.to_string()).collect();
        notes.push(format!(
            "no key share for {} (not implemented; still in supported_groups)",
            names.join(", ")
        ));
    }
    if let (Some((aead, len)), EchMode::Grease) = (spec.grease_ech_size, &c.ech) {
        // RFC 9849 §6.2 leaves the GREASE payload's size to the client: the program's, sent as
        // the extension it makes (outer, HKDF-SHA256, its AEAD, random config_id, a random
        // X25519-sized enc and payload), where the program puts it, before any GREASE one.
        let mut body = vec![0, 0, 1];
        body.extend_from_slice(&aead.to_be_bytes());
        let mut random = vec![0; 1 + 32 + len];
        rng.fill(&mut random);
        body.push(random[0]);
        body.extend_from_slice(&32u16.to_be_bytes());
        body.extend_from_slice(&random[1..33]);
        body.extend_from_slice(&(len as u16).to_be_bytes());
        body.extend_from_slice(&random[33..]);
        c.extra_extensions.push(Extension::Unknown {
            typ: T::EncryptedClientHello,
            body,
        });
        if !c.extension_order.is_empty() {
            c.extension_order.push(T::EncryptedClientHello);
        }
        c.ech = EchMode::Off;
    }
    let g = spec.grease;
    if g.cipher_suite {
        let v = grease_value(rng, None);
        c.cipher_suites.insert(0, CipherSuite::from(v));
    }
    if g.group {
        let v = grease_value(rng, None);
        c.groups.insert(0, NamedGroup::from(v));
    }
    if g.signature_algorithm {
        let v = grease_value(rng, None);
        c.signature_schemes.insert(0, SignatureScheme::from(v));
    }
    if g.psk_mode && !c.psk_modes.is_empty() {
        let mut b = [0u8; 1];
        rng.fill(&mut b);
        let v = lab::hello::GREASE_PSK_MODES[usize::from(b[0] & 7)];
        c.psk_modes.insert(0, PskKeyExchangeMode::from(v));
    }
    if g.extensions {
        // RFC 8701 §3, as BoringSSL: an empty GREASE extension first, a one-byte one last.
        let first = grease_value(rng, None);
        let last = grease_value(rng, Some(first));
        c.extra_extensions.push(Extension::Unknown {
            typ: T::from(first),
            body: Vec::new(),
        });
        c.extra_extensions.push(Extension::Unknown {
            typ: T::from(last),
            body: vec![0],
        });
        c.extension_order.insert(0, T::from(first));
        c.extension_order.push(T::from(last));
    }
    if g.key_share {
        notes.push(
            "no GREASE key share: the client sends shares only for groups it computes".into(),
        );
    }
    let versions = spec.versions.unwrap_or_default();
    if g.version || versions.iter().any(|v| *v != ProtocolVersion::TLSv1_3) {
        notes.push(format!(
            "supported_versions is TLS 1.3 alone (the preset offers {}{}): the client builds \
             that list itself",
            if g.version { "a GREASE version, " } else { "" },
            versions
                .iter()
                .map(|v| match *v {
                    ProtocolVersion::TLSv1_3 => "TLS 1.3".to_string(),
                    ProtocolVersion::TLSv1_2 => "TLS 1.2".to_string(),
                    ProtocolVersion::TLSv1_1 => "TLS 1.1".to_string(),
                    ProtocolVersion::TLSv1_0 => "TLS 1.0".to_string(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    c.hello_padding = spec.padding;
    let opaque: Vec<String> = c
        .extra_extensions
        .iter()
        .filter_map(|e| match e {
            Extension::Unknown { typ, .. }
                if !lab::hello::is_grease(typ.to_repr()) && *typ != T::EncryptedClientHello =>
            {
                Some(match typ.to_repr() {
                    0x44cd | 0x4469 => "ALPS".to_string(),
                    0xca34 => "trust_anchors".to_string(),
                    0x22 => "delegated_credential".to_string(),
                    _ => typ.to_string(),
                })
            }
            _ => None,
        })
        .collect();
    if !opaque.is_empty() {
        notes.push(format!(
            "not implemented, sent as opaque bytes: {}",
            opaque.join(", ")
        ));
    }
    if c.cipher_suites.iter().any(|s| {
        tls13lab::crypto::aead::suite_params(*s).is_none() && !lab::hello::is_grease(s.to_repr())
    }) {
        notes.push("TLS 1.2 cipher suites offered as listed, never negotiated".into());
    }
    if c.alpn.iter().any(|p| p == b"h2") {
        notes.push("ALPN offers h2 as the program does; this client speaks HTTP/1.x only".into());
    }
    Ok((c, notes))
}

/// The ECHConfigList of --ech-config: a PEM file's ECHCONFIG block, or base64.
pub(crate) fn ech_config_list(arg: &str) -> Result<EchConfigList, Failure> {
    let path = std::path::Path::new(arg);
    let bytes = if path.is_file() {
        let text = read_text(path)?;
        let blocks =
            pem_blocks(&text, "ECHCONFIG").ok_or_else(|| Failure::file(path, "bad PEM armour"))?;
        match <[Vec<u8>; 1]>::try_from(blocks) {
            Ok([b]) => b,
            Err(_) => return Err(Failure::file(path, "expected exactly one ECHCONFIG block")),
        }
    } else {
        base64_decode(arg).ok_or_else(|| {
            Failure::BadOption(format!(
                "--ech-config: '{arg}' is neither a file nor base64"
            ))
        })?
    };
    EchConfigList::decode(&bytes)
        .map_err(|e| Failure::BadOption(format!("--ech-config: not an ECHConfigList: {e:?}")))
}

/// Split `host:port` / `[v6]:port`.
fn host_port(s: &str) -> Result<(String, u16), Failure> {
    let bad = || Failure::BadOption(format!("'{s}' is not HOST:PORT"));
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest.split_once("]:").ok_or_else(bad)?;
        (h, p)
    } else {
        s.rsplit_once(':').ok_or_else(bad)?
    };
    if host.is_empty() {
        return Err(bad());
    }
    let port = port.parse().map_err(|_| bad())?;
    Ok((host.to_string(), port))
}

/// `--dns-groups`: the tls-supported-groups SvcParam's value.
/// `--trust-anchors` values, binary form.
#[derive(Clone, Debug)]
pub struct TrustAnchorList(pub Vec<Vec<u8>>);

pub(crate) fn trust_anchor_list(s: &str) -> Result<TrustAnchorList, String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(tls13lab::trust_anchors::from_ascii)
        .collect::<Result<_, _>>()
        .map(TrustAnchorList)
}

fn dns_groups(s: &str) -> Result<List<tls13lab::messages::NamedGroup>, String> {
    lab::keyshare::parse_svc_param(s).map(List)
}

fn build_config(
    a: &ClientArgs,
    host: &str,
    verification: ServerVerification,
) -> Result<ClientConfig, Failure> {
    let mut c = match &a.preset {
        Some(name) => {
            let mut rng: Box<dyn RandomSource> = match a.seed {
                Some(s) => Box::new(SeededRandom::from_seed(s ^ 0x9e5e)),
                None => Box::new(OsRandom),
            };
            let (c, notes) = preset_config(name, rng.as_mut())?;
            let said = if notes.is_empty() {
                "every part of the shape sent".to_string()
            } else {
                notes.join("; ")
            };
            emit(&format!("{:<18} {name}: {said}\n", "preset"));
            c
        }
        None => ClientConfig::default(),
    };
    a.offer.apply(&mut c)?;
    if let Some(dns) = &a.dns_groups {
        let said = match c.use_dns_groups(&dns.0) {
            Some(g) => format!("predicted {g}: one key share for it"),
            None => "no group in common: the usual key shares".to_string(),
        };
        emit(&format!("{:<18} {said}\n", "dns groups"));
    }
    // Offer 0-RTT only with something to send: otherwise a ticket that allows it would make the
    // ClientHello carry early_data, the server accept it, and the summary report "early data
    // accepted" for a connection that sent none (just an EndOfEarlyData).
    c.enable_early_data = a.early_data.is_some();
    c.server_name = if a.no_sni {
        None
    } else if let Some(n) = &a.sni {
        Some(n.clone())
    } else if host.parse::<std::net::IpAddr>().is_ok() {
        None // RFC 6066 §3: literal IP addresses are not permitted in server_name
    } else {
        Some(host.to_string())
    };
    c.verification = verification;
    if let (Some(cert), Some(key)) = (&a.cert, &a.key) {
        c.client_cert = Some(load_certified_key(cert, key)?);
        c.client_cert_properties = super::common::load_certificate_properties(cert)?;
    }
    c.external_psks = a.psk.external()?.into_iter().collect();
    if let Some(path) = &a.mtc {
        let rp = tls13lab::crypto::cert::mtc::RelyingParty::from_text(&read_text(path)?)
            .map_err(|e| Failure::file(path, e))?;
        if a.trust_anchors.is_none() {
            c.trust_anchors = Some(TrustAnchorOffer::new(rp.advertised_trust_anchors()));
        }
        c.mtc = Some(Arc::new(rp));
    }
    if let Some(ids) = &a.trust_anchors {
        c.trust_anchors = Some(TrustAnchorOffer::new(ids.0.clone()));
    }
    c.ech = match &a.ech_config {
        Some(arg) => EchMode::Config {
            list: ech_config_list(arg)?,
            grease_fallback: a.ech_grease,
        },
        None if a.ech_grease => EchMode::Grease,
        None => EchMode::Off,
    };
    if !matches!(c.ech, EchMode::Off) {
        // The client's own ECH replaces a preset's GREASE extension.
        c.extra_extensions
            .retain(|e| e.typ() != tls13lab::messages::enums::ExtensionType::EncryptedClientHello);
    }
    Ok(c)
}

/// Where the trust anchors came from: the summary's `roots` line and the JSON report's `roots`.
struct Roots {
    /// `cafile`, `system` or `none` (--insecure).
    source: &'static str,
    /// Anchors in use.
    certificates: usize,
    /// The file, the environment variables, or the platform store.
    from: String,
    /// What loading the system store skipped or failed on (the first error only).
    notes: Vec<String>,
}

impl Roots {
    /// `direct`: the server's leaf was one of the roots itself, trusted directly (a
    /// self-signed certificate given to --cafile).
    fn line(&self, direct: bool) -> String {
        let n = self.certificates;
        let mut s = match self.source {
            "none" => "none: --insecure, any certificate accepted".to_string(),
            src => format!(
                "{src}: {n} certificate{} ({}",
                if n == 1 { "" } else { "s" },
                self.from
            ),
        };
        for note in &self.notes {
            s.push_str("; ");
            s.push_str(note);
        }
        if self.source != "none" {
            s.push(')');
        }
        if direct {
            s.push_str("; the server's certificate is one of them, trusted directly");
        }
        s
    }

    fn json(&self, direct: bool) -> serde_json::Value {
        serde_json::json!({
            "source": self.source,
            "certificates": self.certificates,
            "from": self.from,
            "notes": self.notes,
            "leaf_trusted_directly": direct,
        })
    }
}

/// The server's end-entity certificate as it arrived (RFC 8446 §4.4.2), decompressed when it
/// came as a CompressedCertificate (RFC 8879 §4); `None` without one (resumption, PSK).
fn server_leaf(events: &[Event]) -> Option<Vec<u8>> {
    use tls13lab::messages::handshake::{DecodeContext, HandshakeMessage, HandshakePayload};
    use tls13lab::messages::HandshakeType;
    let h = events.iter().find_map(|e| match e {
        Event::Handshake(h)
            if h.direction == tls13lab::events::Direction::ServerToClient
                && matches!(
                    h.typ,
                    HandshakeType::Certificate | HandshakeType::CompressedCertificate
                ) =>
        {
            Some(h)
        }
        _ => None,
    })?;
    let payload = match HandshakeMessage::decode(&h.bytes, DecodeContext::default())
        .ok()?
        .payload
    {
        HandshakePayload::CompressedCertificate(cc) => {
            let body = tls13lab::certcomp::decompress(
                cc.algorithm,
                &cc.compressed_certificate_message,
                cc.uncompressed_length as usize,
            )
            .ok()?;
            let mut msg = vec![HandshakeType::Certificate.to_repr()];
            msg.extend_from_slice(&u32::try_from(body.len()).ok()?.to_be_bytes()[1..]);
            msg.extend_from_slice(&body);
            HandshakeMessage::decode(&msg, DecodeContext::default())
                .ok()?
                .payload
        }
        other => other,
    };
    match payload {
        HandshakePayload::Certificate(c) => c.entries.into_iter().next().map(|e| e.cert_data),
        _ => None,
    }
}

/// How the server's certificate is checked: --cafile, --insecure, or else the system's roots —
/// like curl and OpenSSL, SSL_CERT_FILE / SSL_CERT_DIR replace the platform store when set.
fn trust(a: &ClientArgs) -> Result<(ServerVerification, Roots), Failure> {
    if let Some(f) = &a.cafile {
        let certs = load_certs(f)?;
        let roots = Roots {
            source: "cafile",
            certificates: certs.len(),
            from: f.display().to_string(),
            notes: Vec::new(),
        };
        return Ok((ServerVerification::Roots(certs), roots));
    }
    if let (Some(f), true) = (&a.mtc, a.insecure) {
        return Err(Failure::BadOption(format!(
            "--mtc {} with --insecure: nothing would be verified",
            f.display()
        )));
    }
    if let Some(f) = &a.mtc {
        // Merkle Tree Certificates only: no X.509 anchors unless --cafile gives them.
        let roots = Roots {
            source: "mtc",
            certificates: 0,
            from: format!("X.509 none; Merkle Tree Certificates by {}", f.display()),
            notes: Vec::new(),
        };
        return Ok((ServerVerification::Roots(Vec::new()), roots));
    }
    if a.insecure {
        let roots = Roots {
            source: "none",
            certificates: 0,
            from: String::new(),
            notes: Vec::new(),
        };
        return Ok((ServerVerification::InsecureAcceptAny, roots));
    }
    // Named the way rustls-native-certs reads them: SSL_CERT_FILE if set at all, SSL_CERT_DIR
    // if it lists a directory; otherwise the platform's own store.
    let mut vars = Vec::new();
    if let Some(f) = std::env::var_os("SSL_CERT_FILE") {
        vars.push(format!("SSL_CERT_FILE={}", f.to_string_lossy()));
    }
    if let Some(d) = std::env::var_os("SSL_CERT_DIR")
        .filter(|d| std::env::split_paths(d).any(|p| !p.as_os_str().is_empty()))
    {
        vars.push(format!("SSL_CERT_DIR={}", d.to_string_lossy()));
    }
    let from = if vars.is_empty() {
        "platform store".to_string()
    } else {
        vars.join(", ")
    };
    let loaded = rustls_native_certs::load_native_certs();
    let found = loaded.certs.len();
    // A system store can hold certificates webpki cannot use as anchors; one of them among the
    // roots would fail every verification (CertError::BadTrustAnchor), so leave it out.
    let usable: Vec<Vec<u8>> = loaded
        .certs
        .into_iter()
        .map(|c| c.to_vec())
        .filter(|c| CertVerifier::new(vec![c.clone()]).is_ok())
        .collect();
    let mut notes = Vec::new();
    if usable.len() < found {
        notes.push(format!("{} unusable skipped", found - usable.len()));
    }
    if let Some(e) = loaded.errors.first() {
        let more = loaded.errors.len() - 1;
        notes.push(if more > 0 {
            format!("{e} (and {more} more errors)")
        } else {
            e.to_string()
        });
    }
    if usable.is_empty() && a.psk.psk.is_some() {
        // An external PSK authenticates the server without a certificate (RFC 8446 §2.2); one
        // that falls back to a certificate is verified as ever, against no anchors: it fails.
        notes.push("none found; the external PSK authenticates the server".into());
        let roots = Roots {
            source: "system",
            certificates: 0,
            from,
            notes,
        };
        return Ok((ServerVerification::Roots(Vec::new()), roots));
    }
    if usable.is_empty() {
        let why = if notes.is_empty() {
            "none found".to_string()
        } else {
            notes.join("; ")
        };
        return Err(Failure::BadFile(format!(
            "no trust anchors in the system store ({from}: {why}); give --cafile FILE (PEM) \
             or --insecure"
        )));
    }
    let roots = Roots {
        source: "system",
        certificates: usable.len(),
        from,
        notes,
    };
    Ok((ServerVerification::Roots(usable), roots))
}

/// Run the client.
pub fn run(a: ClientArgs) -> Result<(), Failure> {
    let (host, port) = host_port(&a.target)?;
    let (verification, roots) = trust(&a)?;
    let config = build_config(&a, &host, verification)?;
    let mut retry = None;
    let mut available = None;
    let result = connect_once(
        &a,
        &host,
        port,
        config.clone(),
        &roots,
        &mut retry,
        &mut available,
    );
    if let (Err(_), Some(offer), Some(listed), false) = (
        &result,
        config.trust_anchors.clone(),
        &available,
        a.no_trust_anchor_retry || (retry.is_some() && a.ech_retry),
    ) {
        // draft-ietf-tls-trust-anchor-ids §4.3: once, asking only for the first anchor in the
        // server's order that we can verify and did not ask for. (A failure on a path we asked
        // for is not a selection failure: `available` is then None, see connect_once.)
        let ours = |id: &Vec<u8>| config.mtc.as_ref().is_some_and(|rp| rp.trusts_id(id));
        use tls13lab::crypto::cert::mtc::TrustAnchorId;
        let asked = |id: &Vec<u8>| {
            offer.ids.iter().any(|o| {
                o == id
                    || TrustAnchorId::from_binary(o)
                        .zip(TrustAnchorId::from_binary(id))
                        .is_some_and(|(g, i)| g.landmark_group_covers(&i))
            })
        };
        if let Some(id) = listed.iter().find(|id| ours(id) && !asked(id)) {
            emit(&format!(
                "{:<18} the server has paths for {}: connecting again asking for {}\n",
                "trust anchors",
                listed
                    .iter()
                    .map(|i| tls13lab::trust_anchors::to_ascii(i))
                    .collect::<Vec<_>>()
                    .join(", "),
                tls13lab::trust_anchors::to_ascii(id)
            ));
            let mut again = config;
            again.trust_anchors = Some(TrustAnchorOffer {
                ids: vec![id.clone()],
                code_point: offer.code_point,
            });
            return connect_once(&a, &host, port, again, &roots, &mut None, &mut None);
        }
    }
    match (retry, a.ech_retry) {
        // §6.1.6: once, with the configs the server vouched for in the rejected handshake;
        // a second rejection is reported, not retried.
        (Some(list), true) => {
            let list = EchConfigList::decode(&list)
                .map_err(|e| Failure::Tls(format!("retry_configs: {e:?}")))?;
            emit(&format!(
                "{:<18} rejected with retry_configs: connecting again with them\n",
                "ech"
            ));
            let mut again = config;
            again.ech = EchMode::offer(list);
            connect_once(&a, &host, port, again, &roots, &mut None, &mut None)
        }
        _ => result,
    }
}

/// One connection with `config`; `retry` receives the retry_configs of a rejected ECH,
/// `available` the trust anchors the server's EncryptedExtensions listed.
fn connect_once(
    a: &ClientArgs,
    host: &str,
    port: u16,
    mut config: ClientConfig,
    roots: &Roots,
    retry: &mut Option<Vec<u8>>,
    available: &mut Option<Vec<Vec<u8>>>,
) -> Result<(), Failure> {
    let external: Vec<Vec<u8>> = config
        .external_psks
        .iter()
        .map(|p| p.identity.clone())
        .collect();
    let tickets = match &a.sess_in {
        Some(p) => TicketStore::from_json(&read_text(p)?)
            .map_err(|e| Failure::file(p, format!("not a session file: {e}")))?,
        None => TicketStore::default(),
    };
    let early = a.early_data.as_deref().map(read_file).transpose()?;
    let request = match (&a.request, &early) {
        (Some(r), _) => Some(r.0.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_REQUEST.to_vec()),
    };
    let mut keylog = KeyLog::open(a.out.keylog.as_deref())?;
    // Secrets are observed only for what asks for them: a key log, --show-secrets, a pcapng
    // file (it embeds its key log), a page (it shows every key).
    config.observe = observe_for(
        &keylog,
        a.out.show_secrets || a.out.pcap.is_some() || a.html.is_some(),
    );
    let rng: Box<dyn RandomSource> = match a.seed {
        Some(s) => Box::new(SeededRandom::from_seed(s)),
        None => Box::new(OsRandom),
    };
    // Kept to say on the roots line whether the server's leaf was itself a trusted root.
    let anchors = match &config.verification {
        ServerVerification::Roots(r) => r.clone(),
        _ => Vec::new(),
    };
    let client = Client::new(Arc::new(config), rng)
        .map_err(|e| Failure::BadOption(e.to_string()))?
        .with_tickets(tickets);

    let timeout = Duration::from_secs(a.timeout.max(1));
    let started = net::now_ms();
    let stream = net::connect(host, port, timeout)
        .map_err(|e| Failure::io(&format!("{host}:{port}"), &e))?;
    let peer = stream.peer_addr().ok().map(|p| p.to_string());
    let addrs = stream.local_addr().ok().zip(stream.peer_addr().ok());
    let mut d = Driver::new(stream, client);
    let mut events = Vec::new();
    let result = converse(
        &mut d,
        &mut events,
        &mut keylog,
        early.as_deref(),
        request.as_deref(),
        Instant::now() + timeout,
        Duration::from_millis(a.linger.max(1)),
        retry,
    );

    // The server's list, for a retry: only when the path it sent was not the one we asked
    // for (a failure on a matched path would fail again).
    let matched = events
        .iter()
        .any(|e| matches!(e, Event::TrustAnchorMatched));
    *available = events
        .iter()
        .find_map(|e| match e {
            Event::TrustAnchorsAvailable { ids } => Some(ids.clone()),
            _ => None,
        })
        .filter(|_| !matched);
    let l = ledger(&events, started);
    // The response: all the data the driver collected.
    let response = d.take_data();
    emit(&printout(&l, &events, &response, &external));
    let direct = server_leaf(&events).is_some_and(|leaf| leaf_is_a_root(&leaf, &anchors));
    emit(&format!("{:<18} {}\n", "roots", roots.line(direct)));
    if let Some(path) = &a.sess_out {
        let store = d.ep.tickets();
        write_file(path, format!("{}\n", store.to_json()).as_bytes())?;
        emit(&format!(
            "{:<18} {} saved to {}\n",
            "session",
            store.len(),
            path.display()
        ));
    }
    let c = super::instruments::Connection {
        side: Side::Client,
        events: &events,
        started_ms: started,
        title: format!("tls13lab client {}", a.target),
        real_clock: true,
        addrs,
    };
    if let Some(path) = &a.out.svg {
        super::instruments::write_svg(path, &c)?;
    }
    if let Some(path) = &a.out.pcap {
        super::instruments::write_pcap(path, &c)?;
    }
    if let Some(path) = &a.html {
        super::instruments::write_html(path, &c)?;
    }
    if let Some(path) = &a.out.json {
        let mut v = Report {
            side: Side::Client,
            peer,
            started_ms: started,
            events: &events,
            show_secrets: a.out.show_secrets,
            error: result.as_ref().err().map(|f| f.to_string()),
            external_psks: &external,
        }
        .to_json();
        v["roots"] = roots.json(direct);
        if let Some(r) = retry.as_deref() {
            v["ech_retry_configs"] = base64_encode(r).into();
        }
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        write_file(path, format!("{text}\n").as_bytes())?;
    }
    result
}

/// Handshake, request, response, close. Every event lands in `events` even on failure, so the
/// ledger shows what happened up to the alert.
///
/// Every event is kept for the ledger, so a server that streams records for ever (each one
/// resets the linger timer) is cut off after this many events: memory and time stay bounded
/// whatever the peer sends.
const MAX_EVENTS: usize = 100_000;
/// Response bytes kept (each is held twice: in its record event and in the response).
const MAX_RESPONSE_DATA: usize = 16 * 1024 * 1024;

// The connection's inputs and its three outputs (events, key log, retry_configs).
#[allow(clippy::too_many_arguments)]
fn converse(
    d: &mut Driver<ClientSide>,
    events: &mut Vec<Event>,
    keylog: &mut KeyLog,
    early: Option<&[u8]>,
    request: Option<&[u8]>,
    deadline: Instant,
    linger: Duration,
    ech_retry: &mut Option<Vec<u8>>,
) -> Result<(), Failure> {
    d.ep.start(net::now_ms())
        .map_err(|e| Failure::tls(&e, "handshake"))?;
    // 0-RTT: send() before the handshake completes is early data when the offered ticket allows
    // it, and an error otherwise — then the bytes wait for the handshake.
    let mut after_handshake: Vec<u8> = Vec::new();
    if let Some(e) = early {
        if d.ep.send(e).is_err() {
            after_handshake.extend_from_slice(e);
        }
    }
    let flushed = d.flush();
    let new = d.drain_events();
    keylog.write_events(&new);
    events.extend(new);
    flushed.map_err(io_failure)?;

    let mut sent = false;
    loop {
        let wait = if d.data_len() > 0 {
            linger
        } else {
            net::remaining(deadline)
        };
        if wait.is_zero() {
            return Err(Failure::Network(if d.ep.is_connected() {
                "timed out waiting for the response".into()
            } else {
                "timed out during the handshake".into()
            }));
        }
        let step = d.step(wait);
        let new = d.drain_events();
        keylog.write_events(&new);
        // §4.2.10: rejected 0-RTT data was not delivered; send it again as 1-RTT.
        let rejected = d.ep.take_rejected_early_data();
        if !rejected.is_empty() {
            after_handshake = [rejected, after_handshake].concat();
        }
        let response_started = d.data_len() > 0;
        events.extend(new);
        if events.len() > MAX_EVENTS || d.data_len() > MAX_RESPONSE_DATA {
            d.close();
            return Err(Failure::Network(format!(
                "more than {MAX_EVENTS} records and messages or {MAX_RESPONSE_DATA} bytes from \
                 the server: closed"
            )));
        }
        // The client is connected once its Finished is out, but the server may still refuse it
        // (bad Finished, certificate_required): until data arrives, call it the handshake.
        let during = if response_started {
            "connection"
        } else {
            "handshake"
        };
        match step {
            Err(NetError::Tls(e)) => {
                if let Error::EchRejected { retry_configs } = &e {
                    ech_retry.clone_from(retry_configs);
                }
                return Err(Failure::tls(&e, during));
            }
            Err(NetError::Io(e)) => return Err(Failure::io("connection", &e)),
            Ok(Step::Eof) if !d.ep.is_connected() => {
                return Err(Failure::Network(
                    "the server closed the connection during the handshake".into(),
                ))
            }
            Ok(Step::Eof) => break,
            Ok(Step::Idle) if response_started => break,
            Ok(Step::Idle) | Ok(Step::Data) => {}
        }
        if d.ep.is_connected() && !sent {
            sent = true;
            let mut data = std::mem::take(&mut after_handshake);
            data.extend_from_slice(request.unwrap_or_default());
            if !data.is_empty() {
                d.ep.send(&data)
                    .map_err(|e| Failure::tls(&e, "connection"))?;
            }
            d.flush().map_err(io_failure)?;
        }
        if d.ep.is_closed() {
            break;
        }
    }
    d.close();
    let new = d.drain_events();
    keylog.write_events(&new);
    events.extend(new);
    Ok(())
}

fn io_failure(e: NetError) -> Failure {
    match e {
        NetError::Io(e) => Failure::io("connection", &e),
        NetError::Tls(e) => Failure::tls(&e, "connection"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!(
            host_port("localhost:443").unwrap(),
            ("localhost".into(), 443)
        );
        assert_eq!(host_port("[::1]:8443").unwrap(), ("::1".into(), 8443));
        assert!(host_port("localhost").is_err());
        assert!(host_port(":443").is_err());
        assert!(host_port("h:99999").is_err());
    }
}
