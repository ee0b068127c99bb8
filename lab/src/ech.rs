//! Encrypted ClientHello between our client and our server, in memory (docs/ech.md): the same
//! hybrid connection without ECH, with ECH accepted, with GREASE, and with a stale config that
//! is rejected and then retried with the server's retry_configs (RFC 9849 §6.1.6).

use std::sync::Arc;

use crate::certgen::self_signed_p256;
use crate::demo::{self, Pair};
use tls13lab::config::{CertifiedKey, ClientConfig, EchMode, ServerConfig};
use tls13lab::crypto::ech::{EchKeyPair, EchKeyParams};
use tls13lab::crypto::hpke::Kem;
use tls13lab::crypto::random::SeededRandom;
use tls13lab::crypto::sign::SigningKey;
use tls13lab::error::Error;
use tls13lab::ledger::Ledger;
use tls13lab::messages::ech::{EchConfigList, HpkeSymmetricCipherSuite};
use tls13lab::messages::enums::{HpkeAeadId, HpkeKdfId, NamedGroup};

/// The real (inner) server name.
pub const INNER_NAME: &str = "localhost";
/// The ECHConfig's public_name: the outer SNI.
pub const PUBLIC_NAME: &str = "public.example";

/// One connection of the page.
#[derive(Debug)]
pub struct EchRun {
    /// What it shows.
    pub label: &'static str,
    /// The client's ledger (records, messages, the ECH lines).
    pub ledger: Ledger,
    /// The server's ledger of the same connection: its view of the same ECH extensions.
    pub server_ledger: Ledger,
    /// How it ended: "connected", or the client's error.
    pub end: String,
    /// The ClientHello on the wire (the outer one with ECH), header included.
    pub client_hello_len: usize,
}

/// An ECH key (X25519, HKDF-SHA256/AES-128-GCM, maximum_name_length 32) made from `seed`.
pub fn key(seed: u64, config_id: u8) -> Result<EchKeyPair, Error> {
    key_for(seed, config_id, Kem::X25519HkdfSha256)
}

/// [`key`] with another HPKE KEM: ML-KEM-768, ML-KEM-1024 or X-Wing (draft-ietf-hpke-pq) for a
/// ClientHello whose inner hello cannot be decrypted later by a quantum computer.
pub fn key_for(seed: u64, config_id: u8, kem: Kem) -> Result<EchKeyPair, Error> {
    let params = EchKeyParams {
        public_name: PUBLIC_NAME.into(),
        kem,
        suites: vec![HpkeSymmetricCipherSuite {
            kdf_id: HpkeKdfId::HkdfSha256,
            aead_id: HpkeAeadId::Aes128Gcm,
        }],
        config_id: Some(config_id),
        maximum_name_length: 32,
    };
    EchKeyPair::generate(&params, &mut SeededRandom::from_seed(seed))
        .map_err(|e| Error::Config(e.to_string()))
}

/// The server: a P-256 certificate for both names (a rejected ECH authenticates the public name,
/// §6.1.7), X25519MLKEM768 first, and `ech_keys`. Returns it and the certificate to trust.
pub fn server(ech_keys: Vec<EchKeyPair>) -> Result<(ServerConfig, Vec<u8>), Error> {
    let key = SigningKey::generate_p256(&mut SeededRandom::from_seed(0xec4));
    let now_s = demo::NOW_MS / 1000;
    let cert = self_signed_p256(
        &[INNER_NAME, PUBLIC_NAME],
        &key,
        now_s - 86_400,
        now_s + 365 * 86_400,
    )
    .map_err(|e| Error::Config(e.to_string()))?;
    let mut s = ServerConfig::new(CertifiedKey {
        chain: vec![cert.clone()],
        key: Arc::new(key),
    });
    s.ech_keys = ech_keys;
    s.observe = tls13lab::events::Observe::PUBLIC;
    Ok((s, cert))
}

/// The client: trusts `root`, asks for [`INNER_NAME`], one X25519MLKEM768 share, `ech`.
pub fn client(root: Vec<u8>, ech: EchMode) -> ClientConfig {
    let mut c = demo::client_config(root);
    c.server_name = Some(INNER_NAME.into());
    c.key_shares = vec![NamedGroup::X25519MLKEM768];
    c.ech = ech;
    c
}

/// One in-memory connection from `seed`: both ledgers, and the client's error if it failed.
pub fn run(
    label: &'static str,
    client: ClientConfig,
    server: &Arc<ServerConfig>,
    seed: u64,
) -> Result<(EchRun, Option<Error>), Error> {
    let mut p = Pair::new(Arc::new(client), server.clone(), seed, demo::NOW_MS)?;
    let result = p.handshake().and_then(|_| p.settle());
    let ledger = p.ledger();
    let server_ledger = Ledger::from_events(&p.server_events);
    let client_hello_len = ledger
        .records
        .iter()
        .flat_map(|r| &r.messages)
        .find(|m| m.typ == tls13lab::messages::enums::HandshakeType::ClientHello)
        .map_or(0, |m| m.len);
    let (end, err) = match result {
        Ok(()) if p.client.is_connected() => ("connected".to_string(), None),
        Ok(()) => ("not connected".to_string(), None),
        Err(e) => (format!("client error: {e}"), Some(e)),
    };
    Ok((
        EchRun {
            label,
            ledger,
            server_ledger,
            end,
            client_hello_len,
        },
        err,
    ))
}

/// The page's connections, in order: no ECH, ECH accepted, GREASE, a stale config rejected,
/// the retry with the server's retry_configs, then ECH accepted with the post-quantum KEMs
/// ML-KEM-768 and X-Wing (a server holding those two keys, so the first five are unchanged).
pub fn runs() -> Result<Vec<EchRun>, Error> {
    let current = key(1, 1)?;
    let stale = key(2, 2)?;
    let list = current.list.clone();
    let mlkem = key_for(3, 3, Kem::MlKem768)?;
    let xwing = key_for(4, 4, Kem::XWing)?;
    let pq_lists = [
        ("ECH accepted, ML-KEM-768 config", mlkem.list.clone()),
        ("ECH accepted, X-Wing config", xwing.list.clone()),
    ];
    let pq_server = Arc::new(server(vec![mlkem, xwing])?.0);
    let (s, root) = server(vec![current])?;
    let s = Arc::new(s);
    let mut out = Vec::new();
    out.push(run("no ECH", client(root.clone(), EchMode::Off), &s, 1)?.0);
    let offer = EchMode::offer;
    out.push(run("ECH accepted", client(root.clone(), offer(list)), &s, 1)?.0);
    out.push(run("GREASE ECH", client(root.clone(), EchMode::Grease), &s, 1)?.0);
    let (rejected, err) = run(
        "stale config: rejected",
        client(root.clone(), offer(stale.list)),
        &s,
        1,
    )?;
    out.push(rejected);
    let Some(Error::EchRejected {
        retry_configs: Some(retry),
    }) = err
    else {
        return Err(Error::InvalidState(
            "the stale config was not rejected with retry_configs",
        ));
    };
    let retry = EchConfigList::decode(&retry).map_err(Error::Decode)?;
    out.push(
        run(
            "retry with retry_configs",
            client(root.clone(), offer(retry)),
            &s,
            1,
        )?
        .0,
    );
    for (label, list) in pq_lists {
        out.push(run(label, client(root.clone(), offer(list)), &pq_server, 1)?.0);
    }
    Ok(out)
}
