//! `tls13lab probe HOST:PORT`: ask a server what it does with TLS 1.3, post-quantum groups,
//! ECH and malformed ClientHellos (the batteries are the lab's, `lab::probe`).

use std::io::IsTerminal;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lab::probe::{Options, Pacer, Report, Sections};
use tls13lab::crypto::cert::CertVerifier;

use super::common::{load_certs, read_text, Failure};

/// Options of `tls13lab probe`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "The probe inspects, it does not trust: its handshakes accept any \
    certificate (the CertificateVerify signature is still checked against the leaf), so that a \
    server with a private or broken chain can be examined; the chain is then checked against \
    --cafile or the system roots and the result reported. It sends no secret: a `GET /` and its \
    own test data. It connects only to the addresses given."
)]
pub struct ProbeArgs {
    /// The server: host:port, or [v6-address]:port.
    #[arg(value_name = "HOST:PORT", required_unless_present = "targets")]
    pub target: Option<String>,
    /// Probe every HOST:PORT of FILE (one a line; # starts a comment), printing JSON lines
    /// with --json.
    #[arg(long, value_name = "FILE", conflicts_with = "target")]
    pub targets: Option<PathBuf>,
    /// server_name to send [default: HOST unless it is an IP address].
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// Print JSON (one object; one line per target with --targets).
    #[arg(long)]
    pub json: bool,
    /// Seconds each connection may take.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub timeout: f64,
    /// Trust anchors (PEM) the chain is checked against [default: the system's]; the result
    /// is reported, the probe continues either way.
    #[arg(long, value_name = "FILE")]
    pub cafile: Option<PathBuf>,
    /// An ECHConfigList to offer (base64, or a PEM file with an ECHCONFIG block) [default:
    /// the retry_configs the server sends to a GREASE offer].
    #[arg(long, value_name = "BASE64|FILE")]
    pub ech_config_list: Option<String>,
    /// Batteries to run: capabilities, tolerance, conformance [default: all].
    #[arg(long, value_name = "LIST", value_parser = Sections::parse)]
    pub only: Option<Sections>,
    /// Targets probed at once (--targets).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub concurrency: usize,
    /// At most R new connections a second, over all targets.
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
}

/// Split `host:port` / `[v6]:port`.
fn host_port(s: &str) -> Result<(String, u16), String> {
    let bad = || format!("'{s}' is not HOST:PORT");
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

/// The system's trust anchors (those webpki can use), and where they came from.
fn system_roots() -> (Vec<Vec<u8>>, String) {
    let loaded = rustls_native_certs::load_native_certs();
    let roots: Vec<Vec<u8>> = loaded
        .certs
        .into_iter()
        .map(|c| c.to_vec())
        .filter(|c| CertVerifier::new(vec![c.clone()]).is_ok())
        .collect();
    let n = roots.len();
    (roots, format!("the system roots ({n})"))
}

/// One target: its name as given, the one address it resolves to first, its server_name.
struct Job {
    name: String,
    addr: Result<SocketAddr, String>,
    sni: Option<String>,
}

fn job(spec: &str, sni: Option<&String>) -> Job {
    let resolved = host_port(spec).and_then(|(host, port)| {
        let addr = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| format!("{spec}: {e}"))?
            .next()
            .ok_or_else(|| format!("{spec}: no address"))?;
        let sni = match sni {
            Some(s) => Some(s.clone()),
            None if host.parse::<std::net::IpAddr>().is_ok() => None,
            None => Some(host),
        };
        Ok((addr, sni))
    });
    match resolved {
        Ok((addr, sni)) => Job {
            name: spec.to_string(),
            addr: Ok(addr),
            sni,
        },
        Err(e) => Job {
            name: spec.to_string(),
            addr: Err(e),
            sni: None,
        },
    }
}

/// Runs `tls13lab probe`.
pub fn run(a: ProbeArgs) -> Result<(), Failure> {
    if !(0.0..=600.0).contains(&a.timeout) || a.timeout == 0.0 {
        return Err(Failure::BadOption("--timeout: 0 < SECS <= 600".into()));
    }
    if a.concurrency == 0 {
        return Err(Failure::BadOption("--concurrency: at least 1".into()));
    }
    if a.rate.is_some_and(|r| r.is_nan() || r <= 0.0) {
        return Err(Failure::BadOption("--rate: above 0".into()));
    }
    let (roots, roots_source) = match &a.cafile {
        Some(f) => (load_certs(f)?, format!("{}", f.display())),
        None => system_roots(),
    };
    let ech = a
        .ech_config_list
        .as_deref()
        .map(super::client::ech_config_list)
        .transpose()?;
    let base = Options {
        server_name: None,
        timeout: Duration::from_secs_f64(a.timeout),
        roots,
        roots_source,
        ech_config_list: ech,
        sections: a.only.unwrap_or_default(),
        pacer: a.rate.map(|r| Arc::new(Pacer::new(r))),
    };
    let specs: Vec<String> = match (&a.targets, &a.target) {
        (Some(f), _) => read_text(f)?
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
        (None, Some(t)) => vec![t.clone()],
        (None, None) => return Err(Failure::BadOption("give HOST:PORT or --targets".into())),
    };
    let jobs: Vec<Job> = specs.iter().map(|s| job(s, a.sni.as_ref())).collect();
    if a.targets.is_none() {
        let j = &jobs[0];
        let addr = j.addr.clone().map_err(Failure::Network)?;
        let opts = Options {
            server_name: j.sni.clone(),
            ..base
        };
        let r = lab::probe::probe(&j.name, addr, &opts);
        if let Some(e) = &r.error {
            return Err(Failure::Network(format!("{}: {e}", j.name)));
        }
        if a.json {
            println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
        } else {
            print!("{}", lab::probe::text::render(&r));
        }
        return Ok(());
    }
    let results: Mutex<Vec<Option<Result<Report, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let progress = std::io::stderr().is_terminal();
    std::thread::scope(|s| {
        for _ in 0..a.concurrency.min(jobs.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(j) = jobs.get(i) else { break };
                let r = j.addr.clone().map(|addr| {
                    let opts = Options {
                        server_name: j.sni.clone(),
                        ..base.clone()
                    };
                    lab::probe::probe(&j.name, addr, &opts)
                });
                if let Ok(mut v) = results.lock() {
                    v[i] = Some(r);
                }
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if progress {
                    eprint!("\rprobe: {d}/{} targets done", jobs.len());
                }
            });
        }
    });
    if progress {
        eprintln!();
    }
    let results = results.into_inner().unwrap_or_default();
    let mut summary = String::from(
        "target                         TLS 1.3              group                groups  tolerance  conformance\n",
    );
    for (j, r) in jobs.iter().zip(results) {
        match r {
            Some(Ok(r)) => {
                if a.json {
                    println!("{}", serde_json::to_string(&r).unwrap_or_default());
                } else {
                    println!("{}", lab::probe::text::render(&r));
                }
                summary.push_str(&summary_line(&r));
            }
            other => {
                let e = match other {
                    Some(Err(e)) => e,
                    _ => "not probed".to_string(),
                };
                if a.json {
                    println!("{}", serde_json::json!({ "target": j.name, "error": e }));
                }
                summary.push_str(&format!("{:<30} error: {e}\n", j.name));
            }
        }
    }
    if !a.json {
        print!("{summary}");
    }
    Ok(())
}

fn summary_line(r: &Report) -> String {
    if let Some(e) = &r.error {
        return format!("{:<30} error: {e}\n", r.target);
    }
    let c = r.capabilities.as_ref();
    let ratio = |n: usize, d: usize| format!("{n}/{d}");
    format!(
        "{:<30} {:<20} {:<20} {:<7} {:<10} {}\n",
        r.target,
        c.map_or("-".to_string(), |c| c.tls13.clone()),
        c.and_then(|c| c.group.clone())
            .unwrap_or_else(|| "-".into()),
        c.map_or("-".into(), |c| ratio(
            c.groups.iter().filter(|g| g.accepted).count(),
            c.groups.len()
        )),
        r.tolerance.as_ref().map_or("-".into(), |t| ratio(
            t.iter().filter(|c| c.ok).count(),
            t.len()
        )),
        r.conformance.as_ref().map_or("-".into(), |t| ratio(
            t.iter().filter(|c| c.verdict == "ok").count(),
            t.len()
        )),
    )
}
