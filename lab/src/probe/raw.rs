//! The server's first answer to bytes we wrote ourselves, read from the plaintext records
//! before any key exists: an alert, a ServerHello (TLS 1.3 or an older version), a
//! HelloRetryRequest, a close, a reset or silence.

use serde::Serialize;
use tls13lab::messages::enums::AlertDescription;
use tls13lab::messages::handshake::HRR_RANDOM;

use super::session::{alert_name, Outcome};
use super::wire::Wire;
use super::Target;

/// What the server answered first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Answer {
    /// An alert record (its description).
    Alert(String),
    /// A TLS 1.3 ServerHello.
    ServerHello,
    /// A HelloRetryRequest (RFC 8446 §4.1.4).
    HelloRetryRequest,
    /// A ServerHello of an older version (no supported_versions): its legacy_version.
    OlderServerHello(String),
    /// Something else (record type, first bytes).
    Other(String),
    /// The connection ended without a record, or the socket failed.
    Ended(Outcome),
}

impl Answer {
    /// One short phrase.
    pub fn text(&self) -> String {
        match self {
            Answer::Alert(a) => format!("alert {a}"),
            Answer::ServerHello => "ServerHello".into(),
            Answer::HelloRetryRequest => "HelloRetryRequest".into(),
            Answer::OlderServerHello(v) => format!("ServerHello {v}"),
            Answer::Other(w) => w.clone(),
            Answer::Ended(o) => o.text(),
        }
    }

    /// The alert, if the answer was one.
    pub fn alert(&self) -> Option<&str> {
        match self {
            Answer::Alert(a) => Some(a),
            _ => None,
        }
    }
}

/// Connects, writes `segments` (each its own TCP segment) and reads the first record back.
pub fn first_answer(target: &Target, segments: &[Vec<u8>]) -> Answer {
    target.pace();
    let mut wire = match Wire::connect(target.addr, target.timeout) {
        Ok(w) => w,
        Err(e) => return Answer::Ended(Outcome::Network(e.to_string())),
    };
    if let Err(e) = wire.write_segments(segments) {
        // A server that answered and closed before we finished writing: read what it said.
        let _ = e;
    }
    let mut pending = Vec::new();
    let answer = match wire.read_record(&mut pending) {
        Ok((typ, body)) => classify(typ, &body),
        Err(e) => Answer::Ended(Outcome::from_read_end(e)),
    };
    wire.close();
    answer
}

/// Names one plaintext record.
pub fn classify(typ: u8, body: &[u8]) -> Answer {
    match (typ, body) {
        (21, [_level, desc]) => Answer::Alert(alert_name(AlertDescription::from(*desc))),
        (22, [2, ..]) => server_hello(body),
        _ => Answer::Other(format!(
            "record type {typ}, {} bytes, starting {:02x?}",
            body.len(),
            &body[..body.len().min(4)]
        )),
    }
}

/// A ServerHello's kind from its bytes (§4.1.3): the HRR random, or supported_versions.
fn server_hello(msg: &[u8]) -> Answer {
    let bad = || Answer::Other("a ServerHello that does not parse".into());
    // header(4) legacy_version(2) random(32) session_id<0..32> suite(2) compression(1)
    let Some(version) = msg.get(4..6) else {
        return bad();
    };
    let Some(random) = msg.get(6..38) else {
        return bad();
    };
    if random == HRR_RANDOM {
        return Answer::HelloRetryRequest;
    }
    let Some(&sid) = msg.get(38) else {
        return bad();
    };
    let mut pos = 39 + usize::from(sid) + 3;
    let Some(ext_len) = msg.get(pos..pos + 2) else {
        // RFC 5246 §7.4.1.3: extensions are optional before TLS 1.3.
        return Answer::OlderServerHello(version_name(version));
    };
    let end = pos + 2 + usize::from(u16::from_be_bytes([ext_len[0], ext_len[1]]));
    pos += 2;
    while pos + 4 <= end.min(msg.len()) {
        let typ = u16::from_be_bytes([msg[pos], msg[pos + 1]]);
        let len = usize::from(u16::from_be_bytes([msg[pos + 2], msg[pos + 3]]));
        if typ == 43 {
            if let Some(v) = msg.get(pos + 4..pos + 6) {
                if v == [3, 4] {
                    return Answer::ServerHello;
                }
                return Answer::OlderServerHello(version_name(v));
            }
        }
        pos += 4 + len;
    }
    Answer::OlderServerHello(version_name(version))
}

fn version_name(v: &[u8]) -> String {
    match v {
        [3, 1] => "TLS 1.0".into(),
        [3, 2] => "TLS 1.1".into(),
        [3, 3] => "TLS 1.2".into(),
        [3, 4] => "TLS 1.3".into(),
        other => format!("version {other:02x?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's bytes are never trusted: every prefix and every one-byte change of a
    /// ServerHello, a HelloRetryRequest and an alert is named without a panic.
    #[test]
    fn classify_never_panics_on_a_broken_record() {
        let mut sh = vec![2, 0, 0, 0, 3, 3];
        sh.extend_from_slice(&[7; 32]);
        sh.extend_from_slice(&[0, 0x13, 0x01, 0, 0, 6, 0, 43, 0, 2, 3, 4]);
        assert_eq!(classify(22, &sh), Answer::ServerHello);
        let mut hrr = sh.clone();
        hrr[6..38].copy_from_slice(&HRR_RANDOM);
        assert_eq!(classify(22, &hrr), Answer::HelloRetryRequest);
        assert_eq!(
            classify(21, &[2, 40]),
            Answer::Alert("handshake_failure".into())
        );
        let mut tls12 = sh.clone();
        tls12.truncate(sh.len() - 8);
        assert_eq!(
            classify(22, &tls12),
            Answer::OlderServerHello("TLS 1.2".into())
        );
        for msg in [&sh, &hrr] {
            for n in 0..=msg.len() {
                let _ = classify(22, &msg[..n]);
            }
            for i in 0..msg.len() {
                for b in [0u8, 1, 0x7f, 0xff] {
                    let mut m = msg.clone();
                    m[i] = b;
                    let _ = classify(22, &m);
                }
            }
        }
        assert!(matches!(classify(23, &[1, 2, 3]), Answer::Other(_)));
    }
}
