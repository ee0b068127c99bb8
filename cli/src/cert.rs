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
    /// Issue Merkle Tree Certificates (draft-ietf-plants-merkle-tree-certs) for a key of the
    /// last --chain algorithm instead of an X.509 chain: a seeded issuance log of the example
    /// CA 32473.1 (an ML-DSA-44 CA cosigner, an Ed25519 and an ML-DSA-44 witness) writes
    /// leaf.key, mtc-standalone.pem and mtc-landmark.pem (each a certificate with its
    /// CERTIFICATE PROPERTIES, trust-anchor-ids §6.4: the trust anchor ID the server answers
    /// trust_anchors with) and relying-party.txt (what a client trusts: `client --mtc`).
    /// The validity starts at --not-before and lasts --days.
    #[arg(long, conflicts_with_all = ["scts", "aia", "crl"])]
    pub mtc: bool,
    /// With --mtc: entries in the log before ours (null entries, for the proofs' length); the
    /// next landmark comes this many entries later.
    #[arg(long, value_name = "N", default_value_t = 100_000, requires = "mtc",
          value_parser = clap::value_parser!(u64).range(1..=50_000_000))]
    pub mtc_log_size: u64,
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
    if a.mtc {
        return run_mtc(&a);
    }
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

/// `--mtc`: issue a key's standalone and landmark-relative certificates and write them with
/// their properties, the key and the relying-party file.
fn run_mtc(a: &CertArgs) -> Result<(), Failure> {
    use lab::mtc::{issue_for_tls, MtcRequest};
    use tls13lab::crypto::cert::pem_encode;
    use tls13lab::crypto::sign::SigningKey;
    let alg = *a.chain.0.last().unwrap_or(&KeyAlg::EcdsaP256);
    // The key of a one-level chain of that algorithm: the same seeded generation as `cert`.
    let mut spec = ChainSpec::new(vec![alg]);
    if !a.san.is_empty() {
        spec.sans = a.san.clone();
    }
    let key_pem = chain(&spec, a.seed)
        .map_err(|e| Failure::BadOption(e.0))?
        .leaf()
        .key_pem();
    let key = SigningKey::from_pem(&key_pem).map_err(|e| Failure::BadOption(e.to_string()))?;
    let req = MtcRequest {
        spki_der: key
            .public_key_spki_der()
            .map_err(|e| Failure::BadOption(e.to_string()))?,
        names: spec.sans.clone(),
        not_before: a.not_before,
        not_after: a.not_before.saturating_add(a.days * 86_400),
        server_auth: true,
    };
    // Checkpoints are signed just after the validity starts (the log has no clock of its own).
    let now = a.not_before.saturating_add(3);
    let every = a.mtc_log_size;
    let issued = issue_for_tls(&req, a.mtc_log_size, every, every, a.seed, now)
        .map_err(|e| Failure::BadOption(e.to_string()))?;
    std::fs::create_dir_all(&a.out).map_err(|e| Failure::file(&a.out, e))?;
    let with_props = |props: &tls13lab::trust_anchors::CertificateProperties, der: &[u8]| {
        [
            pem_encode(
                tls13lab::trust_anchors::PROPERTIES_PEM_LABEL,
                &props.encode(),
            ),
            pem_encode("CERTIFICATE", der),
        ]
        .concat()
    };
    let files = [
        ("leaf.key", key_pem.clone()),
        (
            "mtc-standalone.pem",
            with_props(&issued.standalone_properties, &issued.standalone),
        ),
        (
            "mtc-landmark.pem",
            with_props(&issued.landmark_properties, &issued.landmark_relative),
        ),
        ("relying-party.txt", issued.relying_party.to_text()),
    ];
    for (name, text) in &files {
        write_file(&a.out.join(name), text.as_bytes())?;
    }
    let ids = |p: &tls13lab::trust_anchors::CertificateProperties| {
        let mut s = p
            .trust_anchor_id
            .as_deref()
            .map(tls13lab::trust_anchors::to_ascii)
            .unwrap_or_default();
        for g in &p.group_inclusions {
            let base = tls13lab::trust_anchors::to_ascii(&g.base);
            let max = if g.max == u64::MAX {
                "MAX".to_string()
            } else {
                g.max.to_string()
            };
            let _ = write!(s, ", in groups {base}.{}..{base}.{max}", g.min);
        }
        if p.negotiation_only {
            s.push_str(", only when asked for");
        }
        s
    };
    let mut s = format!("{:<20} {:>6}  trust anchor\n", "certificate", "bytes");
    let _ = writeln!(
        s,
        "{:<20} {:>6}  {}",
        "mtc-standalone.pem",
        issued.standalone.len(),
        ids(&issued.standalone_properties)
    );
    let _ = writeln!(
        s,
        "{:<20} {:>6}  {}",
        "mtc-landmark.pem",
        issued.landmark_relative.len(),
        ids(&issued.landmark_properties)
    );
    let advertised: Vec<String> = issued
        .relying_party
        .advertised_trust_anchors()
        .iter()
        .map(|id| tls13lab::trust_anchors::to_ascii(id))
        .collect();
    let _ = writeln!(
        s,
        "entry {} of log 32473.1.0.1 ({} entries), landmark {}; {} key in leaf.key; a client \
         with relying-party.txt sends trust_anchors {}; in {}",
        issued.index,
        a.mtc_log_size + 1 + every,
        issued.landmark,
        alg.name(),
        advertised.join(","),
        a.out.display()
    );
    // The server's order is its preference (trust-anchor-ids §3.2): the landmark-relative
    // certificate first, as MTC §"Use in TLS" recommends when both are usable.
    let d = a.out.display();
    let _ = writeln!(
        s,
        "serve both: tls13lab server --cert {d}/mtc-landmark.pem --key {d}/leaf.key \
         --cert {d}/mtc-standalone.pem --key {d}/leaf.key"
    );
    emit(&s);
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
