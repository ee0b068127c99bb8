//! `tls13lab dissect`: decode a captured TLS 1.3 connection — a pcap/pcapng file or two raw byte
//! streams — with an NSS key log (docs/dissect.md). Prints the ledger, the decrypted handshake
//! messages and application data, checks both Finished messages, names what was negotiated (in
//! the client's summary lines) and the missing secrets.

use std::path::PathBuf;

use lab::dissect::{self, DissectOptions, Dissection};
use lab::keylog::KeyLog;
use lab::pcap::{self, Stream};
use tls13lab::crypto::ech::EchKeyPair;

use super::common::{emit, read_file, read_text, write_file, Failure};

/// Options of `tls13lab dissect`.
#[derive(clap::Args, Debug)]
pub struct DissectArgs {
    /// A pcap or pcapng file (a Decryption Secrets Block in it is used as a key log).
    #[arg(value_name = "CAPTURE", required_unless_present = "c2s")]
    pub capture: Option<PathBuf>,
    /// Instead of a capture: the client → server bytes, raw.
    #[arg(
        long,
        value_name = "FILE",
        requires = "s2c",
        conflicts_with = "capture"
    )]
    pub c2s: Option<PathBuf>,
    /// With --c2s: the server → client bytes, raw.
    #[arg(long, value_name = "FILE", requires = "c2s")]
    pub s2c: Option<PathBuf>,
    /// An NSS key log (SSLKEYLOGFILE format), added to the secrets embedded in the capture.
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<PathBuf>,
    /// An ECH key file (OpenSSL's or `tls13lab ech keygen`'s PEM; repeatable): opens the inner
    /// ClientHello of an ECH connection without ECH_SECRET lines.
    #[arg(long, value_name = "FILE")]
    pub ech_key: Vec<PathBuf>,
    /// Ignore the key log embedded in the capture (see what is visible without it).
    #[arg(long)]
    pub no_embedded_keys: bool,
    /// Only the N-th TCP connection of the capture (1-based) [default: all].
    #[arg(long, value_name = "N")]
    pub connection: Option<usize>,
    /// Print JSON instead of text (to FILE, or stdout without one).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write a ladder diagram of the (first) dissected connection as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the (first) dissected connection as one self-contained HTML page
    /// (docs/illustrated/): every byte of every record annotated, decrypted with the key log.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Run `tls13lab dissect`.
pub fn run(a: DissectArgs) -> Result<(), Failure> {
    let mut log = KeyLog::default();
    let mut header = String::new();
    let mut found: Vec<Dissection> = Vec::new();
    let mut ech_keys = Vec::new();
    for path in &a.ech_key {
        let key = EchKeyPair::from_pem(&read_text(path)?)
            .map_err(|e| Failure::BadOption(format!("--ech-key {}: {e}", path.display())))?;
        ech_keys.push(key);
    }
    let opts = DissectOptions {
        ech_keys: &ech_keys,
    };
    if let (Some(c2s), Some(s2c)) = (&a.c2s, &a.s2c) {
        if let Some(k) = &a.keylog {
            log = KeyLog::parse(&read_text(k)?);
        }
        let stream = |p: &PathBuf| -> Result<Stream, Failure> {
            Ok(Stream {
                bytes: read_file(p)?,
                ..Stream::default()
            })
        };
        found.push(dissect::dissect_with(
            &stream(c2s)?,
            &stream(s2c)?,
            &log,
            false,
            opts,
        ));
        header.push_str(&format!(
            "raw streams: {} (client → server), {} (server → client)\n",
            c2s.display(),
            s2c.display()
        ));
    } else if let Some(path) = &a.capture {
        let cap = pcap::read_capture(&read_file(path)?).map_err(|e| Failure::file(path, e))?;
        if !a.no_embedded_keys {
            log.merge(&cap.keylog);
        }
        if let Some(k) = &a.keylog {
            log.merge(&KeyLog::parse(&read_text(k)?));
        }
        header.push_str(&format!(
            "{}: {}, {} packets, {} TCP connection{}{}, {} key log lines{}\n",
            path.display(),
            cap.format,
            cap.packets,
            cap.connections.len(),
            if cap.connections.len() == 1 { "" } else { "s" },
            if cap.skipped > 0 {
                format!(" ({} non-TCP packets skipped)", cap.skipped)
            } else {
                String::new()
            },
            log.lines.len(),
            if cap.keylog.lines.is_empty() {
                String::new()
            } else if a.no_embedded_keys {
                format!(" ({} embedded, ignored)", cap.keylog.lines.len())
            } else {
                format!(" ({} embedded)", cap.keylog.lines.len())
            }
        ));
        for (i, c) in cap.connections.iter().enumerate() {
            if a.connection.is_some_and(|n| n != i + 1) {
                continue;
            }
            let mut d = dissect::dissect_with(&c.c2s, &c.s2c, &log, true, opts);
            d.client = Some(c.client.to_string());
            d.server = Some(c.server.to_string());
            found.push(d);
        }
        if let Some(n) = a.connection {
            if found.is_empty() {
                return Err(Failure::BadOption(format!(
                    "--connection {n}: the capture has {} TCP connection(s)",
                    cap.connections.len()
                )));
            }
        }
    }
    if log.bad_lines > 0 {
        header.push_str(&format!(
            "warning: {} key log line(s) not understood\n",
            log.bad_lines
        ));
    }
    if let Some(path) = &a.svg {
        if let Some(d) = found.first() {
            let doc = lab::ladder::svg_with(
                &d.ledger,
                &lab::ladder::LadderOptions {
                    title: format!(
                        "dissected: {} → {}",
                        d.client.as_deref().unwrap_or("client"),
                        d.server.as_deref().unwrap_or("server")
                    ),
                    times: lab::ladder::Times::AtSender,
                    notes: vec![
                        "Rebuilt from a capture and a key log by tls13lab dissect; times: capture times (ms since the first record).".into(),
                    ],
                    ..Default::default()
                },
            );
            write_file(path, doc.as_bytes())?;
        }
    }
    if let Some(path) = &a.html {
        if let Some(d) = found.first() {
            let random = d
                .client_random
                .as_deref()
                .and_then(tls13lab::ledger::unhex)
                .unwrap_or_default();
            let title = format!(
                "dissected: {} → {}",
                d.client.as_deref().unwrap_or("client"),
                d.server.as_deref().unwrap_or("server")
            );
            let page =
                lab::illustrate::dissected(&title, &d.events, &log, &random).map_err(|e| {
                    Failure::file(path, format!("cannot illustrate the connection: {e}"))
                })?;
            write_file(path, page.as_bytes())?;
        }
    }
    let wrong = found
        .iter()
        .flat_map(|d| &d.finished)
        .any(|f| f.verified == Some(false));
    if let Some(path) = &a.json {
        let v = serde_json::json!({ "connections": found });
        let text = format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
        if path.as_os_str() == "-" {
            emit(&text);
        } else {
            write_file(path, text.as_bytes())?;
        }
    } else {
        let mut s = header;
        for (i, d) in found.iter().enumerate() {
            s.push_str(&format!("\n== connection {}\n", i + 1));
            s.push_str(&dissect::render(d));
        }
        emit(&s);
    }
    if wrong {
        return Err(Failure::Tls(
            "a Finished message does not match its transcript and key log".into(),
        ));
    }
    Ok(())
}
