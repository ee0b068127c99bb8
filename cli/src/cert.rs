//! `tls13lab cert`: certificate chains for experiments (docs/cli.md). Root → intermediates →
//! leaf, an algorithm per level, seeded so the same options write byte-identical files; the
//! chain itself is made by [`lab::certgen::chain`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lab::certgen::{chain, ChainSpec, GeneratedChain, KeyAlg};
use tls13lab::crypto::cert::cert_parts;

use super::common::{emit, write_file, Failure};

/// Options of `tls13lab cert`.
#[derive(clap::Args, Debug, Clone)]
pub struct CertArgs {
    /// Algorithms, root first, one per level: ecdsa-p256, ecdsa-p384, ed25519, rsa-2048,
    /// rsa-3072, rsa-4096, mldsa44, mldsa65, mldsa87, mixed freely (e.g. rsa-4096,ecdsa-p384,ecdsa-p256).
    /// One level is a self-signed leaf.
    #[arg(long, value_name = "LIST", default_value = "ecdsa-p256,ecdsa-p256,ecdsa-p256",
          value_parser = alg_list)]
    pub chain: AlgList,
    /// A subjectAltName of the leaf (DNS name or IP address; repeat for more). The first is also
    /// its CN. Default: localhost and 127.0.0.1.
    #[arg(long, value_name = "NAME")]
    pub san: Vec<String>,
    /// Directory to write the files to (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Seed of every key and every signature's randomness: the same seed writes the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Embed N Signed Certificate Timestamps in the leaf (RFC 6962 §3.3), each from its own
    /// made-up log, signed over the precertificate.
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u16).range(0..=64))]
    pub scts: u16,
    /// The algorithm the SCT logs sign with (RFC 6962 allows ecdsa-p256 and RSA; others for experiments).
    #[arg(long, value_name = "ALG", default_value = "ecdsa-p256", value_parser = alg)]
    pub sct_alg: KeyAlg,
    /// authorityInfoAccess caIssuers URL in every certificate but the root.
    #[arg(long, value_name = "URL")]
    pub aia: Option<String>,
    /// cRLDistributionPoints URL in every certificate but the root.
    #[arg(long, value_name = "URL")]
    pub crl: Option<String>,
    /// Start of validity, Unix seconds (fixed, so files replay on any day).
    #[arg(long, value_name = "SECONDS", default_value_t = 1_735_689_600)]
    pub not_before: u64,
    /// Days of validity.
    #[arg(long, value_name = "DAYS", default_value_t = 3650,
          value_parser = clap::value_parser!(u64).range(1..=36_500))]
    pub days: u64,
}

/// `--chain` values.
#[derive(Clone, Debug)]
pub struct AlgList(pub Vec<KeyAlg>);

pub fn alg_list(s: &str) -> Result<AlgList, String> {
    KeyAlg::parse_list(s).map(AlgList).map_err(|e| e.0)
}

fn alg(s: &str) -> Result<KeyAlg, String> {
    KeyAlg::from_name(s).ok_or_else(|| format!("unknown algorithm '{s}'"))
}

/// Generate the chain, write its files, print what went where.
pub fn run(a: CertArgs) -> Result<(), Failure> {
    let mut spec = ChainSpec::new(a.chain.0.clone());
    if !a.san.is_empty() {
        spec.sans = a.san.clone();
    }
    spec.scts = usize::from(a.scts);
    spec.sct_alg = a.sct_alg;
    spec.aia = a.aia.clone();
    spec.crl = a.crl.clone();
    spec.not_before = a.not_before;
    spec.not_after = a.not_before.saturating_add(a.days * 86_400);
    let c = chain(&spec, a.seed).map_err(|e| Failure::BadOption(e.0))?;
    std::fs::create_dir_all(&a.out).map_err(|e| Failure::file(&a.out, e))?;
    let files = files(&c);
    for (name, text) in &files {
        write_file(&a.out.join(name), text.as_bytes())?;
    }
    emit(&summary(&c, &a.out));
    Ok(())
}

/// The name of level `i` of `n` (root first): `root`, `intermediate-1` (the root's child) ...,
/// `leaf`. One level is the leaf (and its own root).
fn level_name(i: usize, n: usize) -> String {
    if i == n - 1 {
        "leaf".into()
    } else if i == 0 {
        "root".into()
    } else {
        format!("intermediate-{i}")
    }
}

/// Every file and its text: each level's NAME.pem and NAME.key, chain.pem (leaf first, as a
/// server sends it), intermediates.pem (the leaf's issuer first; only with intermediates) and
/// root.pem (the trust anchor; the leaf itself for one level).
fn files(c: &GeneratedChain) -> Vec<(String, String)> {
    let n = c.levels.len();
    let mut v = Vec::new();
    for (i, l) in c.levels.iter().enumerate() {
        let name = level_name(i, n);
        v.push((format!("{name}.pem"), l.cert_pem()));
        v.push((format!("{name}.key"), l.key_pem()));
    }
    v.push(("chain.pem".into(), c.chain_pem()));
    if n > 2 {
        v.push(("intermediates.pem".into(), c.intermediates_pem()));
    }
    if n == 1 {
        v.push(("root.pem".into(), c.root_pem()));
    }
    v
}

fn summary(c: &GeneratedChain, dir: &Path) -> String {
    let n = c.levels.len();
    let mut s = format!(
        "{:<16} {:<10} {:>6} {:>6} {:>6} {:>9} {:>6}  (bytes of DER)\n",
        "level", "algorithm", "cert", "key", "sig", "SCTs", "other"
    );
    for (i, l) in c.levels.iter().enumerate() {
        // Our own DER: it always parses; a line of dashes if not.
        match cert_parts(&l.cert_der) {
            Ok(p) => {
                let _ = writeln!(
                    s,
                    "{:<16} {:<10} {:>6} {:>6} {:>6} {:>9} {:>6}",
                    level_name(i, n),
                    l.alg.name(),
                    p.der,
                    p.spki,
                    p.signature,
                    format!("{} ({})", p.sct_list, p.scts),
                    p.other_extensions + p.tbs_other + p.header + p.signature_algorithm,
                );
            }
            Err(e) => {
                let _ = writeln!(s, "{:<16} {:<10} {e}", level_name(i, n), l.alg.name());
            }
        }
    }
    let sent: usize = c.certs_der.iter().map(Vec::len).sum();
    let _ = writeln!(
        s,
        "chain.pem: {} certificate(s), {sent} bytes of DER, leaf first; trust anchor root.pem; in {}",
        c.certs_der.len(),
        dir.display()
    );
    s
}
