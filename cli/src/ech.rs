//! `tls13lab ech keygen`: an ECH key pair and its ECHConfigList (RFC 9849 §4), written as the PEM
//! file `openssl ech` writes (a PKCS#8 `PRIVATE KEY` block, then an `ECHCONFIG` block), and the
//! base64 ECHConfigList printed for `s_client -ech_config_list` or a DNS HTTPS record.

use std::path::PathBuf;

use tls13lab::crypto::cert::base64_encode;
use tls13lab::crypto::ech::{EchKeyPair, EchKeyParams};
use tls13lab::crypto::hpke::{Aead, Kdf, Kem};
use tls13lab::crypto::random::{OsRandom, RandomSource, SeededRandom};
use tls13lab::messages::ech::HpkeSymmetricCipherSuite;
use tls13lab::messages::enums::{HpkeAeadId, HpkeKdfId, HpkeKemId};

use super::common::Failure;

/// Options of `tls13lab ech`.
#[derive(clap::Args, Debug, Clone)]
pub struct EchArgs {
    #[command(subcommand)]
    pub command: EchCommand,
}

/// `tls13lab ech` subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum EchCommand {
    /// Make an ECH key and ECHConfig: writes the PEM file OpenSSL's `openssl ech` writes, prints the base64 ECHConfigList.
    Keygen(KeygenArgs),
}

/// Options of `tls13lab ech keygen`.
#[derive(clap::Args, Debug, Clone)]
pub struct KeygenArgs {
    /// The client-facing server's name: the outer SNI clients send (ECHConfig.public_name).
    #[arg(long, value_name = "NAME")]
    pub public_name: String,
    /// HPKE suite as KEM,KDF,AEAD code points (OpenSSL's `-suite` syntax, e.g. 0x20,1,1 or
    /// 0x10,1,3); repeat for more KDF/AEAD pairs, which must share the first one's KEM.
    /// KEMs: 0x20 X25519, 0x10 P-256, and the post-quantum 0x41 ML-KEM-768, 0x42 ML-KEM-1024
    /// and 0x647a X-Wing (draft-ietf-hpke-pq); KDF: 1 HKDF-SHA256; AEADs: 1 AES-128-GCM,
    /// 2 AES-256-GCM, 3 ChaCha20Poly1305.
    #[arg(long, value_name = "KEM,KDF,AEAD", default_value = "0x20,1,1", value_parser = suite)]
    pub suite: Vec<(Kem, Kdf, Aead)>,
    /// ECHConfig.key_config.config_id (0-255); random by default, as OpenSSL's.
    #[arg(long, value_name = "N")]
    pub config_id: Option<u8>,
    /// ECHConfig.maximum_name_length: the longest inner server name, for padding (RFC 9849 §6.1.3).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_name_len: u8,
    /// Draw the key (and the config_id) from this seed instead of the OS: the same file every time.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Where to write the PEM file.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// `KEM,KDF,AEAD`, each decimal or 0x-hex.
fn suite(s: &str) -> Result<(Kem, Kdf, Aead), String> {
    let num = |p: &str| {
        let p = p.trim();
        match p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
            Some(h) => u16::from_str_radix(h, 16),
            None => p.parse(),
        }
        .map_err(|_| format!("{p:?} is not a number"))
    };
    let parts: Vec<&str> = s.split(',').collect();
    let [kem, kdf, aead] = parts.as_slice() else {
        return Err(format!("{s:?}: expected KEM,KDF,AEAD"));
    };
    let (kem, kdf, aead) = (
        HpkeKemId::from(num(kem)?),
        HpkeKdfId::from(num(kdf)?),
        HpkeAeadId::from(num(aead)?),
    );
    let kem = Kem::from_id(kem).ok_or(format!("unsupported HPKE KEM {kem}"))?;
    let kdf = Kdf::from_id(kdf).ok_or(format!("unsupported HPKE KDF {kdf}"))?;
    let aead = match Aead::from_id(aead) {
        // An ECH client must seal ClientHelloInner (RFC 9849 §6.1): no Export-only.
        Some(Aead::ExportOnly) | None => return Err(format!("unsupported HPKE AEAD {aead}")),
        Some(a) => a,
    };
    Ok((kem, kdf, aead))
}

/// Runs `tls13lab ech`.
pub fn run(args: EchArgs) -> Result<(), Failure> {
    match args.command {
        EchCommand::Keygen(a) => keygen(&a),
    }
}

fn keygen(a: &KeygenArgs) -> Result<(), Failure> {
    let kem = a.suite[0].0;
    if a.suite.iter().any(|s| s.0 != kem) {
        return Err(Failure::BadOption(
            "every --suite of one ECHConfig must have the same KEM".into(),
        ));
    }
    let params = EchKeyParams {
        public_name: a.public_name.clone(),
        kem,
        suites: a
            .suite
            .iter()
            .map(|(_, kdf, aead)| HpkeSymmetricCipherSuite {
                kdf_id: kdf.id(),
                aead_id: aead.id(),
            })
            .collect(),
        config_id: a.config_id,
        maximum_name_length: a.max_name_len,
    };
    let mut rng: Box<dyn RandomSource> = match a.seed {
        Some(s) => Box::new(SeededRandom::from_seed(s)),
        None => Box::new(OsRandom),
    };
    let key =
        EchKeyPair::generate(&params, &mut rng).map_err(|e| Failure::BadOption(e.to_string()))?;
    std::fs::write(&a.out, key.to_pem()).map_err(|e| Failure::file(&a.out, e))?;
    println!("{}", base64_encode(&key.list.encode()));
    Ok(())
}
