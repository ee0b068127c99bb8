//! What `demo`, `client` and `server` write for the instruments: `--svg FILE`, a ladder diagram
//! of the connection (docs/ladder.md), and `--pcap FILE`, the connection as pcapng with its key
//! log embedded (docs/dissect.md); and `--html FILE`, the connection as one self-contained
//! page (docs/illustrated/).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use lab::ladder::{self, LadderOptions, Times};
use lab::pcap::{self, Endpoints};
use lab::tcp::Link;
use tls13lab::events::{Event, Side};

use super::common::{ledger, write_file, Failure};

/// Which connection an output describes.
pub struct Connection<'a> {
    /// The observing endpoint.
    pub side: Side,
    /// Its events.
    pub events: &'a [Event],
    /// When it started (Unix ms): the origin of the times.
    pub started_ms: u64,
    /// A title, e.g. `tls13lab client example.com:443`.
    pub title: String,
    /// Whether the clock is real (TCP) or fixed (in memory).
    pub real_clock: bool,
    /// The TCP 4-tuple `(client, server)`, if there was a socket.
    pub addrs: Option<(SocketAddr, SocketAddr)>,
}

/// Write `c` as pcapng: synthetic TCP/IP (the real 4-tuple when there was a socket), segments of
/// an Ethernet-sized MSS, the key log in a Decryption Secrets Block.
pub fn write_pcap(path: &Path, c: &Connection<'_>) -> Result<(), Failure> {
    let ep = c
        .addrs
        .map_or_else(Endpoints::default, |(client, server)| Endpoints {
            client,
            server,
        });
    let w = pcap::pcapng(c.events, ep, Link::default().mss)
        .map_err(|e| Failure::file(path, format!("cannot write the capture: {e}")))?;
    write_file(path, &w.bytes)
}

/// Write the ladder diagram of `c` to `path`.
pub fn write_svg(path: &Path, c: &Connection<'_>) -> Result<(), Failure> {
    let l = ledger(c.events, c.started_ms);
    let observer = match c.side {
        Side::Client => "the client",
        Side::Server => "the server",
    };
    let mut notes = vec![format!(
        "Records as {observer} sent and received them, in that order{}.",
        if c.real_clock {
            format!(", with {observer}'s clock (ms since the connection started)")
        } else {
            String::new()
        }
    )];
    if c.side == Side::Server {
        notes.push("Round trips are counted from the server's view.".into());
    }
    let doc = ladder::svg_with(
        &l,
        &LadderOptions {
            title: c.title.clone(),
            tcp_handshake: false,
            times: match (c.real_clock, c.side) {
                (false, _) => Times::Off,
                (true, Side::Client) => Times::AtClient,
                (true, Side::Server) => Times::AtServer,
            },
            origin_ms: Some(c.started_ms),
            notes,
            ..LadderOptions::default()
        },
    );
    write_file(path, doc.as_bytes())
}

/// Write `c` as one self-contained HTML page (lab::illustrate).
pub fn write_html(path: &Path, c: &Connection<'_>) -> Result<(), Failure> {
    let page = lab::illustrate::page(&c.title, c.events)
        .map_err(|e| Failure::file(path, format!("cannot illustrate the connection: {e}")))?;
    write_file(path, page.as_bytes())
}

/// `FILE` for the first connection, `FILE-N.ext` for the N-th (a server's later connections).
pub fn numbered(p: &Path, n: u64) -> PathBuf {
    if n <= 1 {
        return p.to_path_buf();
    }
    let stem = p
        .file_stem()
        .map_or_else(|| "conn".to_string(), |s| s.to_string_lossy().into_owned());
    match p.extension() {
        Some(e) => p.with_file_name(format!("{stem}-{n}.{}", e.to_string_lossy())),
        None => p.with_file_name(format!("{stem}-{n}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_connections_get_numbers() {
        assert_eq!(numbered(Path::new("/t/a.svg"), 1), Path::new("/t/a.svg"));
        assert_eq!(numbered(Path::new("/t/a.svg"), 3), Path::new("/t/a-3.svg"));
        assert_eq!(numbered(Path::new("a"), 2), Path::new("a-2"));
    }
}
