//! Key-share prediction (draft-ietf-tls-key-share-prediction): which key shares a client sends
//! first, and what that costs over a population of servers.
//!
//! A client that does not know the server's groups guesses its key shares: one classical share
//! is small but makes a post-quantum server ask again (a HelloRetryRequest, one more round trip)
//! or, worse, settles for a classical group; one hybrid share costs 1,216 bytes and a round trip
//! with every classical-only server; both cost the bytes every time. The draft lets a server
//! publish its groups in DNS (the SVCB/HTTPS `tls-supported-groups` SvcParam, most preferred
//! first) so the client can send the right share first time. [`run`] puts each strategy through
//! whole simulated connections ([`crate::simulate`]) against each server of a population, and
//! [`render`] weighs the results by the population's shares.
//!
//! The servers choose as RFC 8446 §4.2.8 allows and the draft's §5 asks of post-quantum servers:
//! their own most preferred group among the client's supported_groups, with a HelloRetryRequest
//! when the client sent no share for it (`strict_group_preference`), so a classical share never
//! talks a post-quantum server down to a classical group.

use std::sync::Arc;

use serde::Serialize;
use tls13lab::messages::enums::{HandshakeType, NamedGroup};
use tls13lab::{ClientConfig, Error};

use crate::simulate::{self, Network, Scenario, SIM_EPOCH_MS};

/// The `tls-supported-groups` SvcParamValue in presentation form (§3.1): decimal code points
/// separated by commas, at least one, no duplicates, no escapes. Group names as tls13lab spells
/// them (`X25519MLKEM768,x25519`) are accepted too.
pub fn parse_svc_param(value: &str) -> Result<Vec<NamedGroup>, String> {
    let mut out: Vec<NamedGroup> = Vec::new();
    if value.trim().is_empty() {
        return Err("tls-supported-groups: an empty list is invalid (§3.1)".into());
    }
    for part in value.split(',') {
        let part = part.trim();
        let group = match part.parse::<u16>() {
            Ok(n) => NamedGroup::from(n),
            Err(_) => NamedGroup::KNOWN
                .iter()
                .copied()
                .find(|g| g.name().eq_ignore_ascii_case(part))
                .ok_or_else(|| {
                    format!(
                        "tls-supported-groups: {part:?} is not a decimal code point or a group name (§3.1)"
                    )
                })?,
        };
        if out.contains(&group) {
            return Err(format!(
                "tls-supported-groups: {group} listed twice (§3.1: no duplicates)"
            ));
        }
        out.push(group);
    }
    Ok(out)
}

/// The SvcParamValue's wire form (§3.1): 2-octet code points in network order.
pub fn svc_param_wire(groups: &[NamedGroup]) -> Vec<u8> {
    groups
        .iter()
        .flat_map(|g| g.to_repr().to_be_bytes())
        .collect()
}

/// The SvcParamValue's wire form read back: a non-empty, even-length list without duplicates.
pub fn parse_svc_param_wire(wire: &[u8]) -> Result<Vec<NamedGroup>, String> {
    if wire.is_empty() || !wire.len().is_multiple_of(2) {
        return Err(format!(
            "tls-supported-groups: {} bytes is not a non-empty list of 2-octet values",
            wire.len()
        ));
    }
    let groups: Vec<NamedGroup> = wire
        .chunks(2)
        .map(|c| NamedGroup::from(u16::from_be_bytes([c[0], c[1]])))
        .collect();
    for (i, g) in groups.iter().enumerate() {
        if groups[..i].contains(g) {
            return Err(format!("tls-supported-groups: {g} listed twice"));
        }
    }
    Ok(groups)
}

/// One kind of server in the population.
#[derive(Clone, Debug, Serialize)]
pub struct ServerKind {
    /// What it stands for.
    pub label: String,
    /// Its groups, most preferred first (what it would publish in DNS).
    pub groups: Vec<NamedGroup>,
    /// Its share of the population (any unit; the rows are weighted by it).
    pub weight: u32,
}

/// The default population. The weights are an assumption to reason with, not a measurement of
/// the Internet: change them with `--population`.
pub fn default_population() -> Vec<ServerKind> {
    use NamedGroup as G;
    let kind = |label: &str, groups: &[NamedGroup], weight| ServerKind {
        label: label.into(),
        groups: groups.to_vec(),
        weight,
    };
    vec![
        kind(
            "hybrid first (OpenSSL 3.5+, rustls, CDNs)",
            &[G::X25519MLKEM768, G::X25519, G::secp256r1],
            50,
        ),
        kind(
            "classical (OpenSSL 3.0 and older)",
            &[G::X25519, G::secp256r1, G::secp384r1],
            35,
        ),
        kind("P-256 only", &[G::secp256r1], 5),
        kind(
            "another post-quantum group first",
            &[G::SecP256r1MLKEM768, G::X25519, G::secp256r1],
            10,
        ),
    ]
}

/// `LABEL=GROUPS:WEIGHT;...`, GROUPS as in [`parse_svc_param`] (the label is optional).
pub fn parse_population(spec: &str) -> Result<Vec<ServerKind>, String> {
    let mut out = Vec::new();
    for item in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (label, rest) = match item.split_once('=') {
            Some((l, r)) => (Some(l.trim().to_string()), r),
            None => (None, item),
        };
        let (groups, weight) = rest
            .rsplit_once(':')
            .ok_or_else(|| format!("{item:?}: expected GROUPS:WEIGHT"))?;
        let weight: u32 = weight
            .trim()
            .parse()
            .map_err(|_| format!("{item:?}: the weight is not a number"))?;
        let groups = parse_svc_param(groups)?;
        let label = label.unwrap_or_else(|| {
            groups
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        });
        out.push(ServerKind {
            label,
            groups,
            weight,
        });
    }
    if out.is_empty() || out.iter().all(|k| k.weight == 0) {
        return Err("the population needs at least one server kind with a weight".into());
    }
    Ok(out)
}

/// How the client picks its first key shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// One X25519 share.
    Classical,
    /// One X25519MLKEM768 share.
    Hybrid,
    /// X25519MLKEM768 and X25519 from one X25519 scalar (tls13lab's default).
    Both,
    /// The share the server's DNS record predicts; the default shares when nothing is in common.
    Dns,
}

impl Strategy {
    /// Every strategy, in the table's order.
    pub const ALL: [Strategy; 4] = [
        Strategy::Classical,
        Strategy::Hybrid,
        Strategy::Both,
        Strategy::Dns,
    ];

    /// Its row label.
    pub fn label(self) -> &'static str {
        match self {
            Strategy::Classical => "one classical share (x25519)",
            Strategy::Hybrid => "one hybrid share (X25519MLKEM768)",
            Strategy::Both => "both (X25519MLKEM768 + x25519)",
            Strategy::Dns => "predicted from DNS (tls-supported-groups)",
        }
    }
}

/// The client's supported_groups in every strategy: the same list, so only the key shares
/// differ (§3.3 keeps supported_groups whatever DNS says).
pub fn client_groups() -> Vec<NamedGroup> {
    use NamedGroup as G;
    vec![
        G::X25519MLKEM768,
        G::SecP256r1MLKEM768,
        G::X25519,
        G::secp256r1,
        G::secp384r1,
    ]
}

/// One connection: a strategy against a server kind.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// The server kind's label.
    pub server: String,
    /// The key shares of the first ClientHello.
    pub shares: Vec<NamedGroup>,
    /// Whether the server asked again.
    pub hello_retry: bool,
    /// The group the handshake used.
    pub group: Option<NamedGroup>,
    /// Bytes of the first ClientHello record (header included).
    pub client_hello_bytes: usize,
    /// TCP payload bytes client → server until the response.
    pub bytes_c2s: usize,
    /// Time to the first response byte (µs).
    pub first_response_us: Option<u64>,
}

/// A strategy over the population.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Which.
    pub strategy: Strategy,
    /// One cell per server kind, in the population's order.
    pub cells: Vec<Cell>,
}

fn is_post_quantum(g: NamedGroup) -> bool {
    matches!(
        g,
        NamedGroup::X25519MLKEM768
            | NamedGroup::SecP256r1MLKEM768
            | NamedGroup::SecP384r1MLKEM1024
            | NamedGroup::MLKEM512
            | NamedGroup::MLKEM768
            | NamedGroup::MLKEM1024
    )
}

/// Every strategy against every server kind of `population`, over `net`.
pub fn run(net: Network, population: &[ServerKind], seed: u64) -> Result<Vec<Row>, Error> {
    let (base_server, root) = simulate::server_with_cert(seed, SIM_EPOCH_MS, 0)?;
    let request = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let response = simulate::http_response(1000);
    let mut rows = Vec::new();
    for strategy in Strategy::ALL {
        let mut cells = Vec::new();
        for (i, kind) in population.iter().enumerate() {
            let mut server = base_server.clone();
            server.groups = kind.groups.clone();
            server.strict_group_preference = true;
            let server = Arc::new(server);
            let mut c: ClientConfig = crate::demo::client_config(root.clone());
            c.groups = client_groups();
            c.enable_early_data = false;
            c.key_shares = match strategy {
                Strategy::Classical => vec![NamedGroup::X25519],
                Strategy::Hybrid => vec![NamedGroup::X25519MLKEM768],
                Strategy::Both | Strategy::Dns => {
                    vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519]
                }
            };
            if strategy == Strategy::Dns {
                c.use_dns_groups(&kind.groups);
            }
            let shares = c.key_shares.clone();
            let (o, _) = simulate::simulate(
                &format!("{} / {}", strategy.label(), kind.label),
                net,
                &Scenario::Tls {
                    client: Arc::new(c),
                    tickets: Default::default(),
                },
                &server,
                seed + i as u64,
                SIM_EPOCH_MS,
                request,
                &response,
            )?;
            let negotiated = o.ledger.negotiated.as_ref();
            let client_hello_bytes = o
                .ledger
                .records
                .iter()
                .find(|r| {
                    r.messages
                        .iter()
                        .any(|m| m.typ == HandshakeType::ClientHello)
                })
                .map_or(0, |r| r.record.wire_len);
            cells.push(Cell {
                server: kind.label.clone(),
                shares,
                hello_retry: negotiated.is_some_and(|n| n.hello_retry),
                group: negotiated.and_then(|n| n.group),
                client_hello_bytes,
                bytes_c2s: o.bytes_c2s,
                first_response_us: o.first_response_us,
            });
        }
        rows.push(Row { strategy, cells });
    }
    Ok(rows)
}

/// The weighted table: per strategy, HelloRetryRequest rate, post-quantum rate, mean first
/// ClientHello and client-to-server bytes, mean time to the first response byte; then each
/// server kind's cell.
pub fn render(net: &Network, population: &[ServerKind], rows: &[Row]) -> String {
    let total: u64 = population
        .iter()
        .map(|k| u64::from(k.weight))
        .sum::<u64>()
        .max(1);
    let mean = |row: &Row, f: &dyn Fn(&Cell) -> f64| -> f64 {
        row.cells
            .iter()
            .zip(population)
            .map(|(c, k)| f(c) * f64::from(k.weight))
            .sum::<f64>()
            / total as f64
    };
    let mut s = format!(
        "key-share prediction over {} server kinds ({}); servers choose their own first group\n\n",
        population.len(),
        net.describe()
    );
    s.push_str(&format!(
        "{:<42} {:>6} {:>6} {:>12} {:>9} {:>10}\n",
        "client strategy", "HRR", "PQ", "ClientHello", "C→S", "1st byte"
    ));
    for row in rows {
        let hrr = mean(row, &|c| f64::from(u8::from(c.hello_retry)));
        let pq = mean(row, &|c| {
            f64::from(u8::from(c.group.is_some_and(is_post_quantum)))
        });
        let ch = mean(row, &|c| c.client_hello_bytes as f64);
        let c2s = mean(row, &|c| c.bytes_c2s as f64);
        let ms = mean(row, &|c| c.first_response_us.unwrap_or(0) as f64 / 1000.0);
        s.push_str(&format!(
            "{:<42} {:>5.0}% {:>5.0}% {:>10.0} B {:>7.0} B {:>7.1} ms\n",
            row.strategy.label(),
            hrr * 100.0,
            pq * 100.0,
            ch,
            c2s,
            ms
        ));
    }
    s.push_str("\nper server kind (weight): shares sent → group used, HRR, ClientHello bytes, time to first byte\n");
    for (i, k) in population.iter().enumerate() {
        s.push_str(&format!(
            "{} ({}), DNS tls-supported-groups={}:\n",
            k.label,
            k.weight,
            k.groups
                .iter()
                .map(|g| g.to_repr().to_string())
                .collect::<Vec<_>>()
                .join(",")
        ));
        for row in rows {
            let c = &row.cells[i];
            s.push_str(&format!(
                "  {:<42} {:<30} → {:<18} {:<6} {:>5} B {:>7.1} ms\n",
                row.strategy.label(),
                c.shares
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("+"),
                c.group.map_or("none".into(), |g| g.to_string()),
                if c.hello_retry { "HRR" } else { "" },
                c.client_hello_bytes,
                c.first_response_us.unwrap_or(0) as f64 / 1000.0
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svc_param_forms() {
        // The draft's example: x25519 (29) then secp256r1 (23), wire 001d0017.
        let g = parse_svc_param("29,23").unwrap();
        assert_eq!(g, vec![NamedGroup::X25519, NamedGroup::secp256r1]);
        assert_eq!(svc_param_wire(&g), [0x00, 0x1d, 0x00, 0x17]);
        assert_eq!(parse_svc_param_wire(&[0x00, 0x1d, 0x00, 0x17]).unwrap(), g);
        assert_eq!(
            parse_svc_param("X25519MLKEM768,x25519").unwrap(),
            vec![NamedGroup::X25519MLKEM768, NamedGroup::X25519]
        );
        assert!(parse_svc_param("").is_err());
        assert!(parse_svc_param("29,29").is_err());
        assert!(parse_svc_param("29,nope").is_err());
        assert!(parse_svc_param_wire(&[]).is_err());
        assert!(parse_svc_param_wire(&[0x00]).is_err());
        assert!(parse_svc_param_wire(&[0, 29, 0, 29]).is_err());
    }

    #[test]
    fn prediction_ignores_unknown_groups_and_keeps_supported_groups() {
        let mut c = ClientConfig::default();
        c.groups = client_groups();
        let before = c.groups.clone();
        // GREASE and a group we do not offer are skipped (§3.3).
        let dns = [
            NamedGroup::from(0x0a0a),
            NamedGroup::X448,
            NamedGroup::secp256r1,
        ];
        assert_eq!(c.use_dns_groups(&dns), Some(NamedGroup::secp256r1));
        assert_eq!(c.key_shares, vec![NamedGroup::secp256r1]);
        assert_eq!(c.groups, before);
        // Nothing in common: the shares stay.
        assert_eq!(c.use_dns_groups(&[NamedGroup::X448]), None);
        assert_eq!(c.key_shares, vec![NamedGroup::secp256r1]);
    }

    #[test]
    fn dns_prediction_never_retries_and_the_others_do_somewhere() {
        let pop = default_population();
        let rows = run(Network::default(), &pop, 1).unwrap();
        let row = |s: Strategy| rows.iter().find(|r| r.strategy == s).unwrap();
        let dns = row(Strategy::Dns);
        assert!(dns.cells.iter().all(|c| !c.hello_retry), "{dns:?}");
        // Each server got the group it prefers, first time.
        for (c, k) in dns.cells.iter().zip(&pop) {
            assert_eq!(c.group, Some(k.groups[0]), "{}", k.label);
            assert_eq!(c.shares, vec![k.groups[0]]);
        }
        // A classical share makes the hybrid-first server ask again; it is not talked down.
        let classical = &row(Strategy::Classical).cells[0];
        assert!(classical.hello_retry);
        assert_eq!(classical.group, Some(NamedGroup::X25519MLKEM768));
        // One hybrid share makes every classical server ask again.
        assert!(row(Strategy::Hybrid).cells[1].hello_retry);
        // Both shares cost the most bytes first time, whatever the server.
        let both = row(Strategy::Both);
        for (i, c) in both.cells.iter().enumerate() {
            assert!(c.client_hello_bytes >= dns.cells[i].client_hello_bytes);
        }
        // The other post-quantum group: only the DNS prediction avoids its round trip.
        assert!(both.cells[3].hello_retry && !dns.cells[3].hello_retry);
        let text = render(&Network::default(), &pop, &rows);
        assert!(text.contains("predicted from DNS"), "{text}");
    }
}
