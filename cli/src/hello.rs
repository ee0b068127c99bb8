//! `tls13lab hello`: the ClientHello size lab (docs/hello.md). Builds a ClientHello with the
//! client's options plus the controls other libraries do not give (extension order, GREASE,
//! padding to a size, record splits, duplicate and synthetic key shares), or reads another
//! client's from a capture (`--from`), and prints every field's, extension's, record's and TCP
//! segment's size and its JA3/JA4 fingerprints; `--compare` puts hellos side by side.

use std::path::PathBuf;

use clap::Parser;
use lab::hello::{self, Framing, HelloReport, HelloSpec, PskOffer};
use lab::tcp::Link;
use tls13lab::config::{EchMode, HelloPadding};
use tls13lab::messages::{
    CipherSuite, Extension, ExtensionType, NamedGroup, ProtocolVersion, PskKeyExchangeMode,
    SignatureScheme,
};

use super::client::ech_config_list;
use super::common::{
    alpn, emit, groups, on_off, psk_modes, read_file, sigalgs, suite, suites, write_file, Failure,
    List,
};

/// What shapes one ClientHello (also the syntax of a `--compare` variant).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct HelloOpts {
    /// Read the ClientHello from FILE instead of building one: a pcap/pcapng capture (TCP
    /// streams reassembled, records joined), TLS records as raw bytes (header included), a bare
    /// handshake message, or hex of either. It is shown as it is: the options that shape a
    /// hello do not apply to it; its records are kept as captured.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// With --from: the N-th ClientHello of the file (1-based) [default: 1].
    #[arg(long, value_name = "N", requires = "from")]
    pub index: Option<usize>,
    /// Start from a preset: tls13lab (our client), tls13lab-2023 (its pre-2026 default),
    /// openssl-3.0, openssl-3.5, openssl-4.0, chromium, firefox, curl, rustls, go; `list` shows
    /// them.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// supported_groups, in order; any group, even one tls13lab cannot compute (brainpoolP256r1tls13...).
    #[arg(long, value_name = "LIST", value_parser = groups)]
    pub groups: Option<List<NamedGroup>>,
    /// Key shares, in order [default: the first group]. Groups tls13lab does not implement get random
    /// bytes of the right size; a repeated group repeats its entry (forbidden by RFC 8446 §4.2.8).
    #[arg(long, value_name = "LIST", value_parser = groups)]
    pub key_shares: Option<List<NamedGroup>>,
    /// One X25519 scalar for every X25519 component (X25519MLKEM768 + X25519): on (tls13lab's
    /// default, Firefox's, rustls') or off (one scalar per share, as Chromium and OpenSSL do)
    /// [default: the preset's].
    #[arg(long, value_name = "on|off", value_parser = on_off)]
    pub reuse_x25519: Option<bool>,
    /// cipher_suites, in order (TLS 1.2 code points as numbers: 0xc02c...).
    #[arg(long, value_name = "LIST", value_parser = suites)]
    pub suites: Option<List<CipherSuite>>,
    /// signature_algorithms, in order.
    #[arg(long, value_name = "LIST", value_parser = sigalgs)]
    pub sigalgs: Option<List<SignatureScheme>>,
    /// supported_versions, in order (1.3, 1.2, 0x0304...) [default: TLS 1.3 only].
    #[arg(long, value_name = "LIST", value_parser = versions)]
    pub versions: Option<List<ProtocolVersion>>,
    /// server_name [default: example.com].
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// Send no server_name.
    #[arg(long)]
    pub no_sni: bool,
    /// ALPN protocols, comma-separated.
    #[arg(long, value_name = "LIST", value_parser = alpn)]
    pub alpn: Option<List<Vec<u8>>>,
    /// psk_key_exchange_modes: dhe, ke or both.
    #[arg(long, value_name = "LIST", value_parser = psk_modes)]
    pub psk_modes: Option<List<PskKeyExchangeMode>>,
    /// Middlebox compatibility mode (32-byte legacy_session_id).
    #[arg(long, value_name = "on|off", value_parser = on_off)]
    pub compat: Option<bool>,
    /// Offer a PSK: a fake ticket of LEN bytes (pre_shared_key with a real binder over these bytes).
    #[arg(long, value_name = "LEN")]
    pub psk_ticket: Option<usize>,
    /// With --psk-ticket: also offer 0-RTT (early_data).
    #[arg(long)]
    pub early_data: bool,
    /// With --psk-ticket: the suite the ticket is bound to [default: the first offered].
    #[arg(long, value_name = "SUITE", value_parser = suite)]
    pub psk_suite: Option<CipherSuite>,
    /// GREASE (RFC 8701) in these places: all, suite, extension, group, key-share, sigalg, version, psk-mode.
    #[arg(long, value_name = "LIST")]
    pub grease: Option<String>,
    /// Pad the message to N bytes with a padding extension (RFC 7685); `avoid` pads 256..511 to 512.
    #[arg(long, value_name = "N|avoid")]
    pub pad_to: Option<String>,
    /// Extension order: these types first, in this order (names or numbers); pre_shared_key stays last.
    #[arg(long, value_name = "LIST", value_parser = ext_types)]
    pub order: Option<List<ExtensionType>>,
    /// Add an extension: TYPE or TYPE=HEXBODY (e.g. ec_point_formats=03000102, 0xfe0d=...). Repeatable.
    #[arg(long, value_name = "TYPE[=HEX]")]
    pub extra: Vec<String>,
    /// Advertise record_size_limit N (RFC 8449).
    #[arg(long, value_name = "N")]
    pub record_size_limit: Option<u16>,
    /// Offer Encrypted ClientHello (RFC 9849) with this ECHConfigList, base64 or a PEM file (as
    /// `client --ech-config`): the report is then the ClientHelloOuter sent, and the inner hello.
    #[arg(long, value_name = "BASE64|FILE")]
    pub ech_config: Option<String>,
    /// Send a GREASE encrypted_client_hello (RFC 9849 §6.2); with --ech-config, only when no
    /// config in it is usable.
    #[arg(long)]
    pub ech_grease: bool,
    /// No ECH (for a --compare variant: drops the command line's --ech-config/--ech-grease).
    #[arg(long)]
    pub no_ech: bool,
    /// Seed for the random, session id, key shares and GREASE values [default: 1].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// Options of `tls13lab hello`.
#[derive(clap::Args, Debug)]
pub struct HelloArgs {
    #[command(flatten)]
    pub opts: HelloOpts,
    /// Start a new record at these message offsets (split the ClientHello across records).
    #[arg(long, value_name = "OFFSETS", value_parser = offsets)]
    pub split_at: Option<List<usize>>,
    /// Largest record fragment [default: 16384].
    #[arg(long, value_name = "N")]
    pub max_fragment: Option<usize>,
    /// Path MTU: IP packet size with headers.
    #[arg(long, value_name = "BYTES", default_value_t = 1500)]
    pub mtu: usize,
    /// IPv6 (40-byte header) instead of IPv4 (20).
    #[arg(long)]
    pub ipv6: bool,
    /// TCP option bytes per segment (12 = timestamps, as Linux sends them).
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub tcp_options: usize,
    /// Show configurations side by side: each is a preset name, a captured hello's file (as
    /// --from reads it), a key-share list (x25519mlkem768,x25519) or quoted options
    /// ("--key-shares x25519 --grease all", "--from FILE --index 2") over the command line's;
    /// with and without ECH: --compare --no-ech "--ech-config FILE" --ech-grease.
    #[arg(long, value_name = "CONFIG", num_args = 1.., allow_hyphen_values = true)]
    pub compare: Vec<String>,
    /// Print the bytes, field by field.
    #[arg(long)]
    pub hex: bool,
    /// Print the whole layout tree (every span).
    #[arg(long)]
    pub tree: bool,
    /// Print JSON instead of text (to FILE, or stdout without one).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
}

/// A `--compare` variant given as options.
#[derive(Parser)]
#[command(no_binary_name = true)]
struct Variant {
    #[command(flatten)]
    opts: HelloOpts,
}

/// Run `tls13lab hello`.
pub fn run(a: HelloArgs) -> Result<(), Failure> {
    if a.opts.preset.as_deref() == Some("list") {
        let mut s = String::from("presets:\n");
        for (name, what) in hello::PRESETS {
            s.push_str(&format!("  {name:<12} {what}\n"));
        }
        emit(&s);
        return Ok(());
    }
    let link = if a.ipv6 {
        Link::ipv6(a.mtu, a.tcp_options)
    } else {
        Link::ipv4(a.mtu, a.tcp_options)
    }
    .map_err(Failure::BadOption)?;
    let framing = Framing {
        split_at: a.split_at.as_ref().map(|l| l.0.clone()).unwrap_or_default(),
        max_fragment: a.max_fragment.unwrap_or(16_384),
        ..Framing::default()
    };
    if a.compare.is_empty() && a.opts.from.is_some() {
        let mut set = shaping(&a.opts);
        if a.split_at.is_some() {
            set.push("--split-at");
        }
        if a.max_fragment.is_some() {
            set.push("--max-fragment");
        }
        if !set.is_empty() {
            return Err(Failure::BadOption(format!(
                "--from shows a captured hello as it is, in its captured records: {} does not apply",
                set.join(", ")
            )));
        }
    }
    let reports: Vec<HelloReport> = if a.compare.is_empty() {
        let label = match (&a.opts.from, &a.opts.preset) {
            (Some(f), _) => from_label(f, a.opts.index),
            (None, p) => p.clone().unwrap_or_else(|| "tls13lab".into()),
        };
        vec![one(&a.opts, label, &framing, link)?]
    } else {
        a.compare
            .iter()
            .map(|v| {
                let o = variant(&a.opts, v)?;
                let label = match &o.from {
                    Some(f) if !v.trim().starts_with('-') => from_label(f, None),
                    _ => v.clone(),
                };
                one(&o, label, &framing, link)
            })
            .collect::<Result<_, _>>()?
    };
    if let Some(path) = &a.json {
        let v = if a.compare.is_empty() {
            serde_json::to_value(&reports[0])
        } else {
            serde_json::to_value(&reports)
        }
        .map_err(|e| Failure::BadOption(e.to_string()))?;
        let text = format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
        if path.as_os_str() == "-" {
            emit(&text);
        } else {
            write_file(path, text.as_bytes())?;
        }
        return Ok(());
    }
    let mut out = if a.compare.is_empty() {
        hello::render(&reports[0], a.tree)
    } else {
        hello::render_compare(&reports)
    };
    if a.hex {
        for r in &reports {
            out.push_str(&format!(
                "\nbytes of \"{}\"\n{}",
                r.label,
                hello::render_hex(r)
            ));
        }
    }
    emit(&out);
    Ok(())
}

fn one(
    o: &HelloOpts,
    label: String,
    framing: &Framing,
    link: Link,
) -> Result<HelloReport, Failure> {
    if let Some(path) = &o.from {
        let data = read_file(path)?;
        let h =
            hello::client_hello(&data, o.index.unwrap_or(1)).map_err(|e| Failure::file(path, e))?;
        return hello::report_from(&h, &label, link).map_err(|e| Failure::file(path, e));
    }
    let spec = spec_from(o, label)?;
    hello::report(&spec, framing, link).map_err(Failure::BadOption)
}

/// The options of one `--compare` entry, over the command line's.
fn variant(base: &HelloOpts, v: &str) -> Result<HelloOpts, Failure> {
    let v = v.trim();
    let own = if v.starts_with('-') {
        Variant::try_parse_from(v.split_whitespace())
            .map_err(|e| {
                let text = e.to_string();
                let first = text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("error: ");
                Failure::BadOption(format!("--compare '{v}': {first}"))
            })?
            .opts
    } else if hello::preset(v).is_some() {
        HelloOpts {
            preset: Some(v.to_string()),
            ..HelloOpts::default()
        }
    } else if std::path::Path::new(v).is_file() {
        HelloOpts {
            from: Some(PathBuf::from(v)),
            ..HelloOpts::default()
        }
    } else {
        let shares = groups(v).map_err(|e| Failure::BadOption(format!("--compare '{v}': {e}")))?;
        HelloOpts {
            key_shares: Some(shares),
            ..HelloOpts::default()
        }
    };
    // A captured hello is shown as it is: a variant cannot also shape it (the command line's
    // options are for the built variants beside it).
    let set = shaping(&own);
    if own.from.is_some() && !set.is_empty() {
        return Err(Failure::BadOption(format!(
            "--compare '{v}': --from shows a captured hello as it is: {} does not apply",
            set.join(", ")
        )));
    }
    Ok(overlay(base, own))
}

/// `top`'s settings over `base`'s.
fn overlay(base: &HelloOpts, top: HelloOpts) -> HelloOpts {
    let b = base.clone();
    // A variant that says anything about ECH says all of it.
    let (ech_config, ech_grease, no_ech) =
        if top.ech_config.is_some() || top.ech_grease || top.no_ech {
            (top.ech_config, top.ech_grease, top.no_ech)
        } else {
            (b.ech_config, b.ech_grease, b.no_ech)
        };
    // A captured hello is its file's alone: it is not inherited.
    let index = top.from.as_ref().and(top.index.or(b.index));
    HelloOpts {
        from: top.from,
        index,
        preset: top.preset.or(b.preset),
        groups: top.groups.or(b.groups),
        key_shares: top.key_shares.or(b.key_shares),
        reuse_x25519: top.reuse_x25519.or(b.reuse_x25519),
        suites: top.suites.or(b.suites),
        sigalgs: top.sigalgs.or(b.sigalgs),
        versions: top.versions.or(b.versions),
        sni: top.sni.or(b.sni),
        no_sni: top.no_sni || b.no_sni,
        alpn: top.alpn.or(b.alpn),
        psk_modes: top.psk_modes.or(b.psk_modes),
        compat: top.compat.or(b.compat),
        psk_ticket: top.psk_ticket.or(b.psk_ticket),
        early_data: top.early_data || b.early_data,
        psk_suite: top.psk_suite.or(b.psk_suite),
        grease: top.grease.or(b.grease),
        pad_to: top.pad_to.or(b.pad_to),
        order: top.order.or(b.order),
        extra: if top.extra.is_empty() {
            b.extra
        } else {
            top.extra
        },
        record_size_limit: top.record_size_limit.or(b.record_size_limit),
        seed: top.seed.or(b.seed),
        ech_config,
        ech_grease,
        no_ech,
    }
}

/// The spec the options describe.
fn spec_from(o: &HelloOpts, label: String) -> Result<HelloSpec, Failure> {
    let mut spec = match &o.preset {
        Some(p) => hello::preset(p).ok_or_else(|| {
            let names: Vec<&str> = hello::PRESETS.iter().map(|(n, _)| *n).collect();
            Failure::BadOption(format!(
                "unknown preset '{p}' (known: {})",
                names.join(", ")
            ))
        })?,
        None => HelloSpec::new(label.clone()),
    };
    spec.label = label;
    let c = &mut spec.config;
    if let Some(g) = &o.groups {
        c.groups = g.0.clone();
        c.key_shares = vec![g.0[0]];
    }
    if let Some(k) = &o.key_shares {
        c.key_shares = k.0.clone();
        if o.groups.is_none() {
            // Offering a share implies offering its group: the shares' groups go first.
            let mut g: Vec<NamedGroup> = Vec::new();
            for x in k.0.iter().chain(c.groups.iter()) {
                if !g.contains(x) {
                    g.push(*x);
                }
            }
            c.groups = g;
        }
    }
    if let Some(x) = c.key_shares.iter().find(|g| !c.groups.contains(g)) {
        return Err(Failure::BadOption(format!(
            "--key-shares {x} is not in --groups"
        )));
    }
    if let Some(r) = o.reuse_x25519 {
        c.reuse_x25519 = r;
    }
    if let Some(s) = &o.suites {
        c.cipher_suites = s.0.clone();
    }
    if let Some(s) = &o.sigalgs {
        c.signature_schemes = s.0.clone();
    }
    if o.no_sni {
        c.server_name = None;
    } else if let Some(n) = &o.sni {
        c.server_name = Some(n.clone());
    }
    if let Some(a) = &o.alpn {
        c.alpn = a.0.clone();
    }
    if let Some(m) = &o.psk_modes {
        c.psk_modes = m.0.clone();
    }
    if let Some(on) = o.compat {
        c.compat_mode = on;
    }
    if let Some(order) = &o.order {
        c.extension_order = order.0.clone();
    }
    for e in &o.extra {
        c.extra_extensions.push(extra(e)?);
    }
    if let Some(n) = o.record_size_limit {
        c.record_size_limit = Some(n);
    }
    if let Some(v) = &o.versions {
        spec.versions = Some(v.0.clone());
    }
    if let Some(g) = &o.grease {
        for place in g.split([',', ':']).filter(|p| !p.trim().is_empty()) {
            spec.grease.set(place.trim()).map_err(Failure::BadOption)?;
        }
    }
    if let Some(p) = &o.pad_to {
        spec.padding = if p == "avoid" {
            HelloPadding::Avoid256To511
        } else {
            HelloPadding::ToSize(p.parse().map_err(|_| {
                Failure::BadOption(format!("--pad-to takes a size or 'avoid', not '{p}'"))
            })?)
        };
    }
    if o.early_data && o.psk_ticket.is_none() {
        return Err(Failure::BadOption(
            "--early-data needs --psk-ticket LEN".into(),
        ));
    }
    if let Some(len) = o.psk_ticket {
        let suite = o
            .psk_suite
            .or_else(|| {
                spec.config
                    .cipher_suites
                    .iter()
                    .copied()
                    .find(|s| tls13lab::crypto::aead::suite_params(*s).is_some())
            })
            .ok_or_else(|| Failure::BadOption("no TLS 1.3 suite to bind the PSK to".into()))?;
        spec.psk = Some(PskOffer {
            identity_len: len,
            early_data: o.early_data,
            suite,
        });
    }
    if let Some(s) = o.seed {
        spec.seed = s;
    }
    spec.config.ech = match (&o.ech_config, o.ech_grease) {
        _ if o.no_ech => EchMode::Off,
        (Some(arg), grease_fallback) => EchMode::Config {
            list: ech_config_list(arg)?,
            grease_fallback,
        },
        (None, true) => EchMode::Grease,
        // A preset's own ECH (a browser's GREASE) stays unless an option changes it.
        (None, false) => spec.config.ech.clone(),
    };
    Ok(spec)
}

/// The options given that shape a built hello (none applies to a captured one).
fn shaping(o: &HelloOpts) -> Vec<&'static str> {
    [
        (o.preset.is_some(), "--preset"),
        (o.groups.is_some(), "--groups"),
        (o.key_shares.is_some(), "--key-shares"),
        (o.reuse_x25519.is_some(), "--reuse-x25519"),
        (o.suites.is_some(), "--suites"),
        (o.sigalgs.is_some(), "--sigalgs"),
        (o.versions.is_some(), "--versions"),
        (o.sni.is_some() || o.no_sni, "--sni/--no-sni"),
        (o.alpn.is_some(), "--alpn"),
        (o.psk_modes.is_some(), "--psk-modes"),
        (o.compat.is_some(), "--compat"),
        (
            o.psk_ticket.is_some() || o.early_data || o.psk_suite.is_some(),
            "--psk-ticket",
        ),
        (o.grease.is_some(), "--grease"),
        (o.pad_to.is_some(), "--pad-to"),
        (o.order.is_some(), "--order"),
        (!o.extra.is_empty(), "--extra"),
        (o.record_size_limit.is_some(), "--record-size-limit"),
        (
            o.ech_config.is_some() || o.ech_grease || o.no_ech,
            "--ech-*",
        ),
        (o.seed.is_some(), "--seed"),
    ]
    .into_iter()
    .filter_map(|(set, name)| set.then_some(name))
    .collect()
}

/// A captured hello's label: its file name, with `#N` past the first.
fn from_label(path: &std::path::Path, index: Option<usize>) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    match index {
        Some(n) if n > 1 => format!("{name}#{n}"),
        _ => name,
    }
}

/// `--extra TYPE[=HEX]`.
fn extra(s: &str) -> Result<Extension, Failure> {
    let (t, body) = s.split_once('=').unwrap_or((s, ""));
    let typ = ext_type(t).map_err(Failure::BadOption)?;
    let body = tls13lab::ledger::unhex(body)
        .ok_or_else(|| Failure::BadOption(format!("--extra {s}: the body is not hex")))?;
    Ok(Extension::Unknown { typ, body })
}

fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn number(s: &str) -> Option<u16> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u16::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// An extension type: its IANA name in any spelling (`key_share`, `KeyShare`, `alpn`) or a number.
fn ext_type(s: &str) -> Result<ExtensionType, String> {
    if let Some(n) = number(s) {
        return Ok(ExtensionType::from(n));
    }
    let n = norm(s);
    if n == "alpn" {
        return Ok(ExtensionType::ApplicationLayerProtocolNegotiation);
    }
    if n == "sni" {
        return Ok(ExtensionType::ServerName);
    }
    ExtensionType::KNOWN
        .iter()
        .copied()
        .find(|t| norm(t.name()) == n)
        .ok_or_else(|| {
            let names: Vec<&str> = ExtensionType::KNOWN.iter().map(|t| t.name()).collect();
            format!(
                "unknown extension '{s}' (known: {}, or a number)",
                names.join(", ")
            )
        })
}

fn ext_types(s: &str) -> Result<List<ExtensionType>, String> {
    split(s, ext_type)
}

fn version(s: &str) -> Result<ProtocolVersion, String> {
    if let Some(n) = number(s).filter(|n| *n > 0x00ff) {
        return Ok(ProtocolVersion::from(n));
    }
    match norm(s).trim_start_matches("tlsv").trim_start_matches("tls") {
        "13" => Ok(ProtocolVersion::TLSv1_3),
        "12" => Ok(ProtocolVersion::TLSv1_2),
        "11" => Ok(ProtocolVersion::TLSv1_1),
        "10" | "1" => Ok(ProtocolVersion::TLSv1_0),
        _ => Err(format!(
            "unknown version '{s}' (1.3, 1.2, 1.1, 1.0 or 0x0304...)"
        )),
    }
}

fn versions(s: &str) -> Result<List<ProtocolVersion>, String> {
    split(s, version)
}

fn offsets(s: &str) -> Result<List<usize>, String> {
    split(s, |x| {
        x.parse()
            .map_err(|_| format!("'{x}' is not an offset (a byte count)"))
    })
}

fn split<T>(s: &str, one: fn(&str) -> Result<T, String>) -> Result<List<T>, String> {
    let v: Vec<T> = s
        .split([',', ':'])
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(one)
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err("empty list".into());
    }
    Ok(List(v))
}

#[cfg(test)]
mod tests {
    use super::super::common::group;
    use super::*;

    #[test]
    fn names_parse() {
        assert_eq!(ext_type("key_share"), Ok(ExtensionType::KeyShare));
        assert_eq!(ext_type("KeyShare"), Ok(ExtensionType::KeyShare));
        assert_eq!(ext_type("0xfe0d"), Ok(ExtensionType::EncryptedClientHello));
        assert_eq!(
            ext_type("alpn"),
            Ok(ExtensionType::ApplicationLayerProtocolNegotiation)
        );
        assert!(ext_type("keyshares").is_err());
        assert_eq!(version("1.3"), Ok(ProtocolVersion::TLSv1_3));
        assert_eq!(version("TLSv1.2"), Ok(ProtocolVersion::TLSv1_2));
        assert_eq!(version("0x0a0a"), Ok(ProtocolVersion::Unknown(0x0a0a)));
        assert_eq!(group("x448"), Ok(NamedGroup::X448));
    }

    #[test]
    fn variants_overlay_the_command_line() {
        let base = HelloOpts {
            alpn: Some(List(vec![b"h2".to_vec()])),
            ..HelloOpts::default()
        };
        let v = variant(&base, "x25519mlkem768,x25519").unwrap();
        assert_eq!(v.alpn, base.alpn);
        assert_eq!(
            v.key_shares.unwrap().0,
            vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519]
        );
        let v = variant(&base, "--grease all --pad-to 512").unwrap();
        assert_eq!(v.grease.as_deref(), Some("all"));
        assert_eq!(
            variant(&base, "openssl-3.5").unwrap().preset.as_deref(),
            Some("openssl-3.5")
        );
        assert!(variant(&base, "--no-such-option").is_err());
        assert!(variant(&base, "x25518").is_err());
        // A variant's own setting wins over the command line's, both ways.
        let on = HelloOpts {
            reuse_x25519: Some(true),
            ..HelloOpts::default()
        };
        assert_eq!(
            variant(&on, "--reuse-x25519 off").unwrap().reuse_x25519,
            Some(false)
        );
        assert_eq!(variant(&on, "--alpn h2").unwrap().reuse_x25519, Some(true));
        // A captured hello cannot be shaped by its own variant.
        let err = variant(&base, "--from x.bin --grease all").unwrap_err();
        assert!(
            err.to_string()
                .contains("--from shows a captured hello as it is"),
            "{err}"
        );
    }
}
