//! `tls13lab simulate`: complete connections (TCP handshake, TLS handshake, first request and
//! response) over a virtual link, side by side: plain TCP, then full, resumed and 0-RTT TLS 1.3
//! with classical and hybrid key exchange (docs/simulate.md).

use std::path::PathBuf;

use lab::simulate::{self, Kx, Network, Plan};
use lab::tcp::Link;

use super::common::{bytes, emit, read_text, write_file, Bytes, Failure};

/// Options of `tls13lab simulate`.
#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// Round-trip time in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100.0)]
    pub rtt: f64,
    /// Bandwidth each way: 10mbit, 1gbit, 500kbit, a number of bit/s, or 0 for unlimited.
    #[arg(long, value_name = "RATE", default_value = "10mbit", value_parser = bandwidth)]
    pub bandwidth: u64,
    /// Path MTU (IP packet size with headers).
    #[arg(long, value_name = "BYTES", default_value_t = 1500)]
    pub mtu: usize,
    /// IPv6 (40-byte header) instead of IPv4 (20).
    #[arg(long)]
    pub ipv6: bool,
    /// TCP option bytes per segment (12 = timestamps).
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub tcp_options: usize,
    /// Initial congestion window in segments (RFC 6928: 10).
    #[arg(long, value_name = "SEGMENTS", default_value_t = 10)]
    pub initcwnd: usize,
    /// Pad the server's certificate with subjectAltNames to at least this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub cert_bytes: usize,
    /// A real chain instead of the padded certificate, generated as `tls13lab cert --chain LIST
    /// --seed 1` makes it (root first; ecdsa-p256, rsa-2048, mldsa44 ...). The leaf's key must be
    /// one this build signs CertificateVerify with. Or a Merkle Tree Certificate for an
    /// ML-DSA-44 key from a seeded 150,004-entry issuance log: mtc-standalone (inclusion proof
    /// and three cosignatures) or mtc-landmark (inclusion proof to a landmark the client trusts).
    #[arg(long, value_name = "LIST", value_parser = chain_arg,
          conflicts_with_all = ["cert_bytes", "server_cert"])]
    pub chain: Option<ChainArg>,
    /// Embedded SCTs in the --chain leaf (RFC 6962 §3.3).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "chain",
          value_parser = clap::value_parser!(u16).range(0..=64))]
    pub scts: u16,
    /// The server's chain from a PEM file, leaf first (as chain.pem); the client trusts its last
    /// certificate and checks no name. Needs --server-key.
    #[arg(
        long,
        value_name = "FILE",
        requires = "server_key",
        conflicts_with = "cert_bytes"
    )]
    pub server_cert: Option<PathBuf>,
    /// The --server-cert leaf's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "server_cert")]
    pub server_key: Option<PathBuf>,
    /// The server compresses its certificate (RFC 8879) with the first of these the client
    /// offers (zlib, brotli, zstd; the client offers all three), when that is smaller.
    #[arg(long, value_name = "LIST", value_parser = super::common::cert_compression)]
    pub cert_compression:
        Option<super::common::List<tls13lab::messages::CertificateCompressionAlgorithm>>,
    /// Key exchanges to compare: classical (X25519), hybrid (X25519MLKEM768), or both.
    #[arg(long, value_name = "LIST", default_value = "classical,hybrid", value_parser = kx_list)]
    pub kx: KxList,
    /// The request; \r \n \t \\ \xHH are interpreted.
    #[arg(long, value_name = "STRING", value_parser = bytes)]
    pub request: Option<Bytes>,
    /// Bytes of the server's response.
    #[arg(long, value_name = "BYTES", default_value_t = 1000)]
    pub response_bytes: usize,
    /// Seed for all randomness.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also run each key exchange's connections with Encrypted ClientHello (RFC 9849), rows
    /// "… ECH": the server holds an ECH key made from the seed, the client seals its
    /// ClientHello to it.
    #[arg(long)]
    pub ech: bool,
    /// Also print every packet of every connection.
    #[arg(long)]
    pub timeline: bool,
    /// Instead of the comparison: key-share prediction (draft-ietf-tls-key-share-prediction).
    /// Four client strategies (one classical share, one hybrid share, both, the share the
    /// server's DNS tls-supported-groups predicts) against each server kind of --population:
    /// HelloRetryRequest rate, post-quantum rate, ClientHello and client-to-server bytes, time to
    /// the first response byte, weighted by the population.
    #[arg(long)]
    pub key_share_prediction: bool,
    /// The servers for --key-share-prediction: `LABEL=GROUPS:WEIGHT;...`, GROUPS most preferred
    /// first as decimal code points or names (e.g. "pq=4588,29:50;classic=29,23:50") [default:
    /// hybrid first 50, classical 35, P-256 only 5, SecP256r1MLKEM768 first 10: an assumption,
    /// not a measurement].
    #[arg(long, value_name = "SPEC", requires = "key_share_prediction", value_parser = population)]
    pub population: Option<Population>,
    /// Write a ladder diagram of each TLS connection: FILE gets the first, FILE-2.svg ... the others.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print JSON instead of text (to FILE, or stdout without one).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
}

/// `--json [FILE]`: pretty JSON to FILE, or stdout for `-`.
fn write_json(path: &std::path::Path, v: &serde_json::Value) -> Result<(), Failure> {
    let text = format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default());
    if path.as_os_str() == "-" {
        emit(&text);
        Ok(())
    } else {
        write_file(path, text.as_bytes())
    }
}

/// `--chain` value.
#[derive(Clone, Debug)]
pub enum ChainArg {
    /// An X.509 chain of these levels, root first.
    Levels(super::cert::AlgList),
    /// A Merkle Tree Certificate: landmark-relative (`true`) or standalone.
    Mtc(bool),
}

fn chain_arg(s: &str) -> Result<ChainArg, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "mtc-standalone" => Ok(ChainArg::Mtc(false)),
        "mtc-landmark" => Ok(ChainArg::Mtc(true)),
        _ => super::cert::alg_list(s).map(ChainArg::Levels),
    }
}

/// `--population` value.
#[derive(Clone, Debug)]
pub struct Population(pub Vec<lab::keyshare::ServerKind>);

fn population(s: &str) -> Result<Population, String> {
    lab::keyshare::parse_population(s).map(Population)
}

/// `--kx` values.
#[derive(Clone, Debug)]
pub struct KxList(pub Vec<Kx>);

fn kx_list(s: &str) -> Result<KxList, String> {
    let mut v = Vec::new();
    for x in s.split([',', ':']).map(str::trim).filter(|x| !x.is_empty()) {
        let k = match x.to_ascii_lowercase().as_str() {
            "classical" | "x25519" => Kx::Classical,
            "hybrid" | "x25519mlkem768" | "pq" => Kx::Hybrid,
            _ => return Err(format!("unknown key exchange '{x}' (classical or hybrid)")),
        };
        if !v.contains(&k) {
            v.push(k);
        }
    }
    if v.is_empty() {
        return Err("empty list".into());
    }
    Ok(KxList(v))
}

/// `10mbit`, `1gbit`, `500kbit`, `1.5mbps`, `1000000`, `0`.
fn bandwidth(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    if t == "unlimited" || t == "inf" {
        return Ok(0);
    }
    // 10mbit, 10mbit/s, 10mbps, 10mb/s, 10m: the unit letter decides.
    let t = t.trim_end_matches("/s").trim_end_matches("ps");
    let t = t.trim_end_matches("bit").trim_end_matches('b');
    let (num, mult) = match t.chars().last() {
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('k') => (&t[..t.len() - 1], 1e3),
        _ => (t, 1.0),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad bandwidth '{s}' (e.g. 10mbit, 1gbit, 0 for unlimited)"))?;
    if !(n >= 0.0 && n.is_finite()) {
        return Err(format!("bad bandwidth '{s}'"));
    }
    Ok((n * mult).round() as u64)
}

/// Run `tls13lab simulate`.
pub fn run(a: SimulateArgs) -> Result<(), Failure> {
    if !(a.rtt > 0.0 && a.rtt <= 60_000.0) {
        return Err(Failure::BadOption("--rtt is 0..60000 ms".into()));
    }
    if a.initcwnd == 0 || a.initcwnd > 1000 {
        return Err(Failure::BadOption("--initcwnd is 1..=1000 segments".into()));
    }
    let link = if a.ipv6 {
        Link::ipv6(a.mtu, a.tcp_options)
    } else {
        Link::ipv4(a.mtu, a.tcp_options)
    }
    .map_err(Failure::BadOption)?;
    let net = Network {
        rtt_us: (a.rtt * 1000.0).round() as u64,
        bandwidth_bps: a.bandwidth,
        link,
        initcwnd: a.initcwnd,
    };
    if a.key_share_prediction {
        let population = a
            .population
            .clone()
            .map_or_else(lab::keyshare::default_population, |p| p.0);
        let rows = lab::keyshare::run(net, &population, a.seed)
            .map_err(|e| Failure::Tls(e.to_string()))?;
        if let Some(path) = &a.json {
            let v = serde_json::json!({
                "network": net,
                "assumptions": net.describe(),
                "population": population,
                "strategies": rows,
            });
            return write_json(path, &v);
        }
        emit(&lab::keyshare::render(&net, &population, &rows));
        return Ok(());
    }
    let chain = match (&a.chain, &a.server_cert, &a.server_key) {
        (Some(ChainArg::Levels(levels)), _, _) => Some(
            simulate::ServerChain::generated(&levels.0, usize::from(a.scts))
                .map_err(|e| Failure::BadOption(format!("--chain: {e}")))?,
        ),
        (Some(ChainArg::Mtc(landmark)), _, _) => Some(
            simulate::ServerChain::mtc(*landmark)
                .map_err(|e| Failure::BadOption(format!("--chain: {e}")))?,
        ),
        (None, Some(cert), Some(key)) => Some(
            simulate::ServerChain::from_pem(&read_text(cert)?, &read_text(key)?)
                .map_err(|e| Failure::file(cert, e))?,
        ),
        _ => None,
    };
    let mut plan = Plan {
        net,
        kx: a.kx.0.clone(),
        cert_bytes: a.cert_bytes,
        chain,
        cert_compression: a
            .cert_compression
            .as_ref()
            .map(|l| l.0.clone())
            .unwrap_or_default(),
        response_len: a.response_bytes,
        seed: a.seed,
        ech: a.ech,
        ..Plan::default()
    };
    if let Some(r) = &a.request {
        if r.0.is_empty() {
            return Err(Failure::BadOption("--request is empty".into()));
        }
        plan.request = r.0.clone();
    }
    let outcomes = simulate::compare(&plan).map_err(|e| Failure::Tls(e.to_string()))?;
    if let Some(svg) = &a.svg {
        let tls: Vec<_> = outcomes
            .iter()
            .filter(|o| !o.ledger.records.is_empty())
            .collect();
        for (i, o) in tls.iter().enumerate() {
            let path = super::instruments::numbered(svg, i as u64 + 1);
            let doc = simulate::ladder(o, &net);
            write_file(&path, doc.as_bytes())?;
        }
    }
    if let Some(path) = &a.json {
        let v = serde_json::json!({
            "network": net,
            "assumptions": net.describe(),
            "connections": outcomes,
        });
        return write_json(path, &v);
    }
    let mut s = simulate::render(&net, &outcomes);
    if a.timeline {
        for o in &outcomes {
            s.push('\n');
            s.push_str(&simulate::timeline(o));
        }
    }
    emit(&s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidths_parse() {
        assert_eq!(bandwidth("10mbit"), Ok(10_000_000));
        assert_eq!(bandwidth("1Gbit/s"), Ok(1_000_000_000));
        assert_eq!(bandwidth("1.5mbps"), Ok(1_500_000));
        assert_eq!(bandwidth("0"), Ok(0));
        assert_eq!(bandwidth("unlimited"), Ok(0));
        assert_eq!(bandwidth("64000"), Ok(64_000));
        assert!(bandwidth("fast").is_err());
    }
}
