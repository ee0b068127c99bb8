//! What post-quantum authentication does to the server's flight (docs/pq-auth.md): real chains
//! ([`crate::certgen::chain`]) of each signature algorithm, with and without embedded SCTs,
//! with and without certificate compression (RFC 8879), under classical and hybrid key exchange,
//! each run as a full handshake through the simulator at several initial congestion windows.

use std::fmt::Write as _;
use std::sync::Arc;

use super::simulate::{self, Kx, Network, Scenario, ServerChain, SIM_EPOCH_MS};
use crate::certgen::KeyAlg;
use tls13lab::config::{CertifiedKey, ServerConfig};
use tls13lab::error::Error;
use tls13lab::messages::enums::{CertificateCompressionAlgorithm, HandshakeType};
use tls13lab::session::TicketStore;

/// One chain of the table: its name and levels, root first.
#[derive(Clone, Debug)]
pub struct ChainCase {
    /// As the table names it.
    pub name: &'static str,
    /// Root first; the root itself is not sent. Empty for a Merkle Tree Certificate.
    pub levels: Vec<KeyAlg>,
    /// A Merkle Tree Certificate instead of an X.509 chain: `Some(true)` landmark-relative,
    /// `Some(false)` standalone ([`ServerChain::mtc`]).
    pub mtc: Option<bool>,
}

/// The chains of docs/pq-auth.md: a root and a leaf of each algorithm, and the three-level
/// ML-DSA-87 → 65 → 44 chain.
pub fn chains() -> Vec<ChainCase> {
    use KeyAlg::*;
    let two = |name, a| ChainCase {
        name,
        levels: vec![a, a],
        mtc: None,
    };
    vec![
        two("ECDSA P-256", EcdsaP256),
        two("RSA-2048", Rsa2048),
        two("ML-DSA-44", MlDsa44),
        two("ML-DSA-65", MlDsa65),
        two("ML-DSA-87", MlDsa87),
        ChainCase {
            name: "ML-DSA-87 → 65 → 44",
            levels: vec![MlDsa87, MlDsa65, MlDsa44],
            mtc: None,
        },
        ChainCase {
            name: "MTC standalone",
            levels: Vec::new(),
            mtc: Some(false),
        },
        ChainCase {
            name: "MTC landmark",
            levels: Vec::new(),
            mtc: Some(true),
        },
    ]
}

/// Initial congestion windows of the table, in segments: 3 (4,380 B, about 4 KB), RFC 6928's
/// 10 (14,600 B), and 22 (32,120 B, about 32 KB).
pub const WINDOWS: [usize; 3] = [3, 10, 22];

/// One row: a full handshake's server side.
#[derive(Clone, Debug)]
pub struct Row {
    /// Key exchange.
    pub kx: Kx,
    /// The chain's name.
    pub chain: &'static str,
    /// Embedded SCTs in the leaf.
    pub scts: usize,
    /// The compression the server used, if any.
    pub compression: Option<CertificateCompressionAlgorithm>,
    /// The Certificate (or CompressedCertificate) message, header included.
    pub certificate_message: usize,
    /// The uncompressed Certificate message's size (equal without compression).
    pub certificate_uncompressed: usize,
    /// The CertificateVerify message.
    pub certificate_verify: usize,
    /// ServerHello..Finished on the wire (records included).
    pub server_flight: usize,
    /// Per window of [`WINDOWS`]: server-to-client packets until the first response byte,
    /// congestion-window stalls, and round trips to the first response byte.
    pub by_window: Vec<(usize, usize, f64)>,
}

/// Runs every case: 2 key exchanges × [`chains`] × {0, 2 SCTs} × {none, brotli}, at `rtt_ms`
/// with unlimited bandwidth (so the figures are round trips and windows only).
pub fn table(rtt_ms: u64) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    for case in chains() {
        // An MTC needs no SCTs: its log is the transparency.
        let sct_counts: &[usize] = if case.mtc.is_some() { &[0] } else { &[0, 2] };
        for &scts in sct_counts {
            let chain = match case.mtc {
                Some(landmark) => ServerChain::mtc(landmark)?,
                None => ServerChain::generated(&case.levels, scts)?,
            };
            for compression in [None, Some(CertificateCompressionAlgorithm::Brotli)] {
                let mut server = ServerConfig::new(CertifiedKey {
                    chain: chain.chain.clone(),
                    key: chain.key.clone(),
                });
                server.cert_compression = compression.into_iter().collect();
                let server = Arc::new(server);
                for kx in [Kx::Classical, Kx::Hybrid] {
                    rows.push(row(&case, scts, compression, kx, &chain, &server, rtt_ms)?);
                }
            }
        }
    }
    Ok(rows)
}

fn row(
    case: &ChainCase,
    scts: usize,
    compression: Option<CertificateCompressionAlgorithm>,
    kx: Kx,
    chain: &ServerChain,
    server: &Arc<ServerConfig>,
    rtt_ms: u64,
) -> Result<Row, Error> {
    let mut client = crate::demo::client_config(chain.root.clone());
    client.mtc = chain.mtc.clone();
    client.key_shares = vec![kx.group()];
    client.enable_early_data = false;
    client.server_name = chain.server_name.clone();
    let client = Arc::new(client);
    let request = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let response = simulate::http_response(1000);
    let mut by_window = Vec::new();
    let mut sizes = (0, 0, 0, 0);
    for initcwnd in WINDOWS {
        let net = Network {
            rtt_us: rtt_ms * 1000,
            bandwidth_bps: 0,
            initcwnd,
            ..Network::default()
        };
        let scenario = Scenario::Tls {
            client: client.clone(),
            tickets: TicketStore::default(),
        };
        let (o, _) = simulate::simulate(
            case.name,
            net,
            &scenario,
            server,
            1,
            SIM_EPOCH_MS,
            request,
            &response,
        )?;
        let rtts = o.round_trips.ok_or(Error::InvalidState(
            "the simulated connection got no response",
        ))?;
        by_window.push((o.packets_s2c, o.cwnd_stalls, rtts));
        if initcwnd == WINDOWS[0] {
            sizes = message_sizes(&o);
        }
    }
    Ok(Row {
        kx,
        chain: case.name,
        scts,
        compression,
        certificate_message: sizes.0,
        certificate_uncompressed: sizes.1,
        certificate_verify: sizes.2,
        server_flight: sizes.3,
        by_window,
    })
}

/// (Certificate or CompressedCertificate message, the uncompressed Certificate message,
/// CertificateVerify message, server flight), from the ledger of a full handshake. The
/// uncompressed size is what the CompressedCertificate declares (RFC 8879 §4) plus the 4-byte
/// header a Certificate message would have.
fn message_sizes(o: &simulate::Outcome) -> (usize, usize, usize, usize) {
    let parts = || o.ledger.records.iter().flat_map(|r| &r.messages);
    let len = |t: HandshakeType| parts().find(|m| m.typ == t).map_or(0, |m| m.len);
    let (certificate, uncompressed) = match parts().find_map(|m| m.compression.map(|c| (m.len, c)))
    {
        Some((len, c)) => (len, 4 + c.uncompressed_length),
        None => (
            len(HandshakeType::Certificate),
            len(HandshakeType::Certificate),
        ),
    };
    (
        certificate,
        uncompressed,
        len(HandshakeType::CertificateVerify),
        o.server_flight,
    )
}

/// The table as Markdown.
pub fn markdown(rows: &[Row], rtt_ms: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "RTT {rtt_ms} ms, unlimited bandwidth, MSS 1460 (IPv4, no TCP options), no loss; a full \
         handshake and a 1,000-byte response. Certificate: the Certificate message (or the \
         CompressedCertificate, with the uncompressed size after →), header included; the \
         root is not sent. Flight: ServerHello..Finished on the wire, records included. Per \
         initial window (3 segments = 4,380 B, 10 = 14,600 B, 22 = 32,120 B): server packets \
         until the first response byte / congestion-window stalls / round trips from SYN to \
         the first response byte.\n"
    );
    let _ = writeln!(
        s,
        "| key exchange | chain | SCTs | compression | Certificate B | CertificateVerify B | flight B | initcwnd 3 | initcwnd 10 | initcwnd 22 |"
    );
    let _ = writeln!(
        s,
        "| --- | --- | ---: | --- | ---: | ---: | ---: | --- | --- | --- |"
    );
    for r in rows {
        let cert = if r.compression.is_some() && r.certificate_message != r.certificate_uncompressed
        {
            format!("{} → {}", r.certificate_message, r.certificate_uncompressed)
        } else {
            r.certificate_message.to_string()
        };
        let windows: Vec<String> = r
            .by_window
            .iter()
            .map(|(p, st, rt)| format!("{p} / {st} / {rt:.2}"))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {cert} | {} | {} | {} |",
            match r.kx {
                Kx::Classical => "X25519",
                Kx::Hybrid => "X25519MLKEM768",
            },
            r.chain,
            r.scts,
            r.compression.map_or("none".to_string(), |c| c.to_string()),
            r.certificate_verify,
            r.server_flight,
            windows.join(" | "),
        );
    }
    s
}

/// What the table says, in sentences computed from it: each chain's extra round trips over
/// ECDSA P-256 at initcwnd 10 with the hybrid key exchange and 2 SCTs, and whether brotli
/// changed anything.
pub fn summary(rows: &[Row]) -> String {
    let mut s = String::new();
    let find = |chain: &str, comp: bool| {
        rows.iter().find(|r| {
            r.kx == Kx::Hybrid && r.scts == 2 && r.chain == chain && r.compression.is_some() == comp
        })
    };
    let Some(base) = find("ECDSA P-256", false) else {
        return s;
    };
    let i10 = WINDOWS.iter().position(|w| *w == 10).unwrap_or(0);
    let _ = writeln!(
        s,
        "With X25519MLKEM768, 2 SCTs and initcwnd 10, the ECDSA P-256 chain's server flight is {} B \
         and the first response byte comes after {:.2} round trips. Against it:\n",
        base.server_flight, base.by_window[i10].2
    );
    for c in chains().iter().skip(1) {
        let (Some(r), Some(b)) = (find(c.name, false), find(c.name, true)) else {
            continue;
        };
        let (_, stalls, rtts) = r.by_window[i10];
        let _ = writeln!(
            s,
            "- {}: flight {} B ({:+} B), {:.2} round trips ({:+.2}), {} stall(s); with brotli the \
             Certificate message is {} B instead of {} B.",
            c.name,
            r.server_flight,
            r.server_flight as i64 - base.server_flight as i64,
            rtts,
            rtts - base.by_window[i10].2,
            stalls,
            b.certificate_message,
            r.certificate_message,
        );
    }
    s
}
