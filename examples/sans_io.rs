//! A tls13lab client and server driven by hand: no socket, no thread, no clock. The caller moves
//! the bytes and reads the events; that is the whole API (docs/api.md walks through this file).
//!
//! `cargo run --example sans_io`

use std::io::Write;
use std::sync::Arc;

use lab::demo;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::events::{hex, Event, Side};
use tls13lab::{Client, ClientConfig, Ledger, Observe, Server};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut std::io::stdout().lock())
}

/// The whole connection, narrated to `out`.
pub fn run(out: &mut dyn Write) -> Result<(), Box<dyn std::error::Error>> {
    // The caller's clock: every call that can time out or check a certificate takes the time.
    let now_ms = 1_767_225_600_000;

    // Configuration: the server gets a self-signed ECDSA P-256 certificate for "localhost"
    // (made from a seed), and the client trusts exactly that certificate.
    // `ClientConfig::new` verifies against the roots it is given (the default trusts none).
    let (mut server_config, root) = demo::server_config(7, now_ms)?;
    let mut client_config = ClientConfig::new(vec![root]);
    client_config.server_name = Some("localhost".into());
    // Events report records and messages by default; secrets only when asked for by name, as
    // this narration does to show each new traffic secret.
    client_config.observe = Observe::ALL_WITH_SECRETS;
    server_config.observe = Observe::ALL_WITH_SECRETS;

    // All randomness comes from the source each endpoint is given: same seeds, same bytes.
    let mut client = Client::new(
        Arc::new(client_config),
        Box::new(SeededRandom::from_seed(1)),
    )?;
    let mut server = Server::new(
        Arc::new(server_config),
        Box::new(SeededRandom::from_seed(2)),
    )?;
    // Every event each side reported (the client's make its ledger at the end).
    let (mut client_events, mut server_events) = (Vec::new(), Vec::new());

    // The handshake: start the client, then move bytes until both sides are connected.
    client.start(now_ms)?;
    while !(client.is_connected() && server.is_connected()) {
        let to_server = client.take_output();
        report(out, Side::Client, client.events(), &mut client_events)?;
        writeln!(out, "--- {} bytes client → server", to_server.len())?;
        server.receive(&to_server, now_ms)?;
        let to_client = server.take_output();
        report(out, Side::Server, server.events(), &mut server_events)?;
        writeln!(out, "--- {} bytes server → client", to_client.len())?;
        client.receive(&to_client, now_ms)?;
        if to_server.is_empty() && to_client.is_empty() {
            return Err("the handshake is stuck".into());
        }
    }

    // Application data both ways.
    client.send(b"GET / HTTP/1.0\r\n\r\n")?;
    let bytes = client.take_output();
    report(out, Side::Client, client.events(), &mut client_events)?;
    writeln!(out, "--- {} bytes client → server", bytes.len())?;
    // `receive` returns how many bytes it took: all, unless unread data filled its buffer
    // (64 KiB by default), which a request this small cannot.
    assert_eq!(server.receive(&bytes, now_ms)?, bytes.len());
    report(out, Side::Server, server.events(), &mut server_events)?;
    // Received data is read apart from the events.
    let mut buf = [0u8; 256];
    let n = server.read(&mut buf);
    writeln!(
        out,
        "server read {n} bytes: {:?}",
        String::from_utf8_lossy(&buf[..n])
    )?;
    server.send(b"HTTP/1.0 200 OK\r\n\r\nhello")?;
    let bytes = server.take_output();
    report(out, Side::Server, server.events(), &mut server_events)?;
    writeln!(out, "--- {} bytes server → client", bytes.len())?;
    assert_eq!(client.receive(&bytes, now_ms)?, bytes.len());
    report(out, Side::Client, client.events(), &mut client_events)?;
    let n = client.read(&mut buf);
    writeln!(
        out,
        "client read {n} bytes: {:?}",
        String::from_utf8_lossy(&buf[..n])
    )?;

    // Both ends derive the same exporter value (RFC 8446 §7.5) without sending anything.
    let c = client.export(b"EXPERIMENTAL sans-io example", b"", 16)?;
    let s = server.export(b"EXPERIMENTAL sans-io example", b"", 16)?;
    assert_eq!(c, s);
    writeln!(out, "exporter value (same on both sides): {}", hex(&c))?;
    report(out, Side::Client, client.events(), &mut client_events)?;
    report(out, Side::Server, server.events(), &mut server_events)?;

    // close_notify both ways.
    client.close();
    let bytes = client.take_output();
    report(out, Side::Client, client.events(), &mut client_events)?;
    writeln!(out, "--- {} bytes client → server", bytes.len())?;
    server.receive(&bytes, now_ms)?;
    report(out, Side::Server, server.events(), &mut server_events)?;
    server.close();
    let bytes = server.take_output();
    report(out, Side::Server, server.events(), &mut server_events)?;
    writeln!(out, "--- {} bytes server → client", bytes.len())?;
    client.receive(&bytes, now_ms)?;
    report(out, Side::Client, client.events(), &mut client_events)?;

    // The ledger is built from the same events: every record, every byte.
    let ledger = Ledger::from_events(&client_events);
    write!(out, "{}", lab::ladder::ladder(&ledger))?;
    Ok(())
}

/// One line per interesting event of `side`; every event is also kept in `seen`.
fn report(
    out: &mut dyn Write,
    side: Side,
    events: impl Iterator<Item = Event>,
    seen: &mut Vec<Event>,
) -> std::io::Result<()> {
    let who = match side {
        Side::Client => "client",
        Side::Server => "server",
    };
    for e in events {
        let line = match &e {
            Event::Handshake(h) => {
                let verb = if h.direction == side.sending() {
                    "sent"
                } else {
                    "received"
                };
                Some(format!("{verb} {} ({} bytes)", h.typ, h.bytes.len()))
            }
            Event::KeyShare(k) => Some(format!(
                "key exchange {}: {}-byte shared secret",
                k.group,
                k.shared_secret.len()
            )),
            Event::Secret(s) => Some(format!("new secret {}", s.name)),
            Event::Connected(n) => Some(format!(
                "connected: {}, {}",
                n.suite,
                n.group.map_or("no key exchange".into(), |g| g.to_string())
            )),
            Event::Ticket { lifetime, .. } => Some(format!("ticket, lifetime {lifetime} s")),
            Event::Alert { description, .. } => Some(format!("alert {description}")),
            Event::Closed => Some("closed for reading".to_string()),
            _ => None,
        };
        if let Some(line) = line {
            writeln!(out, "{who}: {line}")?;
        }
        seen.push(e);
    }
    Ok(())
}
