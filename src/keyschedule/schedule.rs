//! The TLS 1.3 key schedule as one type per stage (RFC 8446 §7.1), each consumed by value when
//! the next Extract happens, so an out-of-order use does not compile:
//!
//! ```compile_fail,E0382
//! use tls13lab::crypto::hash::HashAlg;
//! use tls13lab::keyschedule::schedule::{EarlySecret, NoSink};
//! let early = EarlySecret::new(HashAlg::Sha256, None, &mut NoSink);
//! let _hs = early.into_handshake(Some(&[1; 32]), &mut NoSink);
//! let _again = early.into_handshake(None, &mut NoSink); // `early` was moved: error E0382
//! ```
//!
//! Every step reports a [`Derivation`] (operation, label, inputs, which messages the transcript
//! covers, output) to a [`DerivationSink`]. The report is built only when the sink is enabled,
//! so with [`NoSink`] deriving a secret allocates nothing.
//!
//! Transcript hashes are taken under the stage's own hash. If the state machine hands over a
//! transcript that runs a different hash (a bug: the PSK's hash must match the suite's, RFC 8446
//! §4.2.11), the context used is empty, which yields secrets the peer cannot match: the
//! handshake fails closed instead of panicking.

use serde::ser::{SerializeMap, Serializer};

use super::hkdf::{self, Label, Secret};
use super::transcript::Transcript;
use crate::crypto::aead::{AeadAlg, NONCE_LEN};
use crate::crypto::hash::{to_hex, HashAlg, Output};

/// Which HKDF operation a [`Derivation`] is (RFC 8446 §7.1, §4.4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum DerivationOp {
    /// HKDF-Extract(salt, IKM).
    Extract,
    /// Derive-Secret(Secret, Label, Messages).
    DeriveSecret,
    /// HKDF-Expand-Label(Secret, Label, Context, Length).
    ExpandLabel,
    /// HMAC(finished_key, transcript hash): Finished verify_data and PSK binders.
    Hmac,
}

/// Names of the secrets and values the schedule derives (RFC 8446 §7.1-§7.5 terminology).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecretName {
    /// Early Secret: HKDF-Extract(0, PSK or 0).
    EarlySecret,
    /// A binder key whose kind is unknown to the observer; the schedule itself always reports
    /// [`ResumptionBinderKey`](Self::ResumptionBinderKey) or
    /// [`ExternalBinderKey`](Self::ExternalBinderKey).
    BinderKey,
    /// binder_key from "res binder".
    ResumptionBinderKey,
    /// binder_key from "ext binder".
    ExternalBinderKey,
    /// client_early_traffic_secret.
    ClientEarlyTrafficSecret,
    /// early_exporter_master_secret.
    EarlyExporterMasterSecret,
    /// Derive-Secret(Early Secret, "derived", ""): salt of the Handshake Secret.
    DerivedForHandshake,
    /// Handshake Secret.
    HandshakeSecret,
    /// client_handshake_traffic_secret.
    ClientHandshakeTrafficSecret,
    /// server_handshake_traffic_secret.
    ServerHandshakeTrafficSecret,
    /// Derive-Secret(Handshake Secret, "derived", ""): salt of the Master Secret.
    DerivedForMaster,
    /// Master Secret.
    MasterSecret,
    /// client_application_traffic_secret_N.
    ClientApplicationTrafficSecret(u64),
    /// server_application_traffic_secret_N.
    ServerApplicationTrafficSecret(u64),
    /// exporter_master_secret.
    ExporterMasterSecret,
    /// resumption_master_secret.
    ResumptionMasterSecret,
    /// A ticket's PSK (RFC 8446 §4.6.1).
    ResumptionPsk,
    /// finished_key of a traffic secret (§4.4.4).
    FinishedKey,
    /// Record write key (§7.3).
    TrafficKey,
    /// Record write IV (§7.3).
    TrafficIv,
    /// finished_key derived from a binder key (§4.2.11.2).
    BinderFinishedKey,
    /// A PSK binder value (§4.2.11.2).
    Binder,
    /// A Finished verify_data value (§4.4.4).
    VerifyData,
    /// Derive-Secret(exporter secret, label, "") inside TLS-Exporter (§7.5).
    ExporterLabelSecret,
    /// A TLS-Exporter output (§7.5).
    Exporter,
    /// The HPKE KEM shared secret of ECH (RFC 9850 §5: `ECH_SECRET`).
    EchSecret,
    /// The ECHConfig ECH used, logged as a value (RFC 9850 §5: `ECH_CONFIG`).
    EchConfig,
}

impl SecretName {
    /// Label in the NSS key log format (what Wireshark reads). Only generation 0 of the
    /// application traffic secrets has one: readers derive later generations themselves.
    pub fn nss_label(&self) -> Option<&'static str> {
        Some(match self {
            SecretName::ClientEarlyTrafficSecret => "CLIENT_EARLY_TRAFFIC_SECRET",
            SecretName::ClientHandshakeTrafficSecret => "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
            SecretName::ServerHandshakeTrafficSecret => "SERVER_HANDSHAKE_TRAFFIC_SECRET",
            SecretName::ClientApplicationTrafficSecret(0) => "CLIENT_TRAFFIC_SECRET_0",
            SecretName::ServerApplicationTrafficSecret(0) => "SERVER_TRAFFIC_SECRET_0",
            SecretName::ExporterMasterSecret => "EXPORTER_SECRET",
            SecretName::EarlyExporterMasterSecret => "EARLY_EXPORTER_SECRET",
            SecretName::EchSecret => "ECH_SECRET",
            SecretName::EchConfig => "ECH_CONFIG",
            _ => return None,
        })
    }

    /// The generation of an application traffic secret (0 = from the Master Secret).
    pub fn generation(&self) -> Option<u64> {
        match self {
            SecretName::ClientApplicationTrafficSecret(n)
            | SecretName::ServerApplicationTrafficSecret(n) => Some(*n),
            _ => None,
        }
    }

    fn base_name(&self) -> &'static str {
        match self {
            SecretName::EarlySecret => "early_secret",
            SecretName::BinderKey => "binder_key",
            SecretName::ResumptionBinderKey => "res_binder_key",
            SecretName::ExternalBinderKey => "ext_binder_key",
            SecretName::ClientEarlyTrafficSecret => "client_early_traffic_secret",
            SecretName::EarlyExporterMasterSecret => "early_exporter_master_secret",
            SecretName::DerivedForHandshake => "derived_for_handshake",
            SecretName::HandshakeSecret => "handshake_secret",
            SecretName::ClientHandshakeTrafficSecret => "client_handshake_traffic_secret",
            SecretName::ServerHandshakeTrafficSecret => "server_handshake_traffic_secret",
            SecretName::DerivedForMaster => "derived_for_master",
            SecretName::MasterSecret => "master_secret",
            SecretName::ClientApplicationTrafficSecret(_) => "client_application_traffic_secret",
            SecretName::ServerApplicationTrafficSecret(_) => "server_application_traffic_secret",
            SecretName::ExporterMasterSecret => "exporter_master_secret",
            SecretName::ResumptionMasterSecret => "resumption_master_secret",
            SecretName::ResumptionPsk => "resumption_psk",
            SecretName::FinishedKey => "finished_key",
            SecretName::TrafficKey => "write_key",
            SecretName::TrafficIv => "write_iv",
            SecretName::BinderFinishedKey => "binder_finished_key",
            SecretName::Binder => "binder",
            SecretName::VerifyData => "verify_data",
            SecretName::ExporterLabelSecret => "exporter_label_secret",
            SecretName::Exporter => "exporter",
            SecretName::EchSecret => "ech_secret",
            SecretName::EchConfig => "ech_config",
        }
    }
}

impl core::fmt::Display for SecretName {
    /// RFC-style snake case, e.g. `client_application_traffic_secret_1`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.base_name())?;
        match self.generation() {
            Some(n) => write!(f, "_{n}"),
            None => Ok(()),
        }
    }
}

impl serde::Serialize for SecretName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One step of the key schedule, for the ledger, the key log and the teaching CLI.
///
/// It holds secrets in plain `Vec`s: it exists only when an observer asked to see them.
#[derive(Clone, PartialEq, Eq, serde::Serialize)]
pub struct Derivation {
    /// Extract, Derive-Secret, Expand-Label or HMAC.
    pub op: DerivationOp,
    /// What was derived.
    pub name: SecretName,
    /// The secret it was derived from (`None` for the Early Secret). For keys, IVs, finished
    /// keys and verify_data this tells whose they are.
    pub parent: Option<SecretName>,
    /// The full HKDF label, e.g. `"tls13 c hs traffic"`; `""` for Extract and HMAC.
    pub label: &'static str,
    /// Hash function.
    pub hash: HashAlg,
    /// Named inputs in order: `salt`/`ikm` (Extract), `secret`/`context`/`info` (Derive-Secret,
    /// Expand-Label), `key`/`hash` (HMAC). Serialized as a map of hex strings.
    #[serde(serialize_with = "ser_inputs")]
    pub inputs: Vec<(&'static str, Vec<u8>)>,
    /// Which handshake messages the context hash covers, e.g. `"ClientHello..ServerHello"`;
    /// `""` when the context is not a transcript (or is the empty transcript).
    pub context_covers: String,
    /// The derived bytes (hex when serialized).
    #[serde(serialize_with = "ser_hex")]
    pub output: Vec<u8>,
}

fn ser_hex<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&to_hex(v))
}

fn ser_inputs<S: Serializer>(v: &[(&'static str, Vec<u8>)], s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(v.len()))?;
    for (k, b) in v {
        m.serialize_entry(k, &to_hex(b))?;
    }
    m.end()
}

/// The step without its values: secrets are shown when asked for by name (the serialized
/// ledger, `tls13lab keys`), never by `Debug`, so a debug log of events leaks no key.
impl core::fmt::Debug for Derivation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?} {} <- ", self.op, self.name)?;
        if let Some(p) = self.parent {
            write!(f, "{p} ")?;
        }
        write!(f, "{:?} [{}]", self.label, self.context_covers)?;
        for (k, v) in &self.inputs {
            write!(f, " {k}=<{} bytes>", v.len())?;
        }
        write!(f, " => <{} bytes>", self.output.len())
    }
}

/// Receives the key schedule's [`Derivation`]s.
pub trait DerivationSink {
    /// Whether derivations should be built at all; `false` keeps the hot path allocation-free.
    fn enabled(&self) -> bool;
    /// Takes one derivation (called only when `enabled()`).
    fn record(&mut self, d: Derivation);
}

/// Collects everything.
impl DerivationSink for Vec<Derivation> {
    fn enabled(&self) -> bool {
        true
    }
    fn record(&mut self, d: Derivation) {
        self.push(d);
    }
}

/// The sink that observes nothing: crypto's, which HPKE's steps use too.
pub use crate::crypto::NoSink;

impl DerivationSink for NoSink {
    fn enabled(&self) -> bool {
        false
    }
    fn record(&mut self, _d: Derivation) {}
}

// ---------------------------------------------------------------------------------------------
// Reported primitives. Each computes, then builds a report only for an enabled sink.

fn extract_step(
    hash: HashAlg,
    salt: &[u8],
    ikm: &[u8],
    name: SecretName,
    parent: Option<SecretName>,
    sink: &mut dyn DerivationSink,
) -> Secret {
    let out = hkdf::extract(hash, salt, ikm);
    if sink.enabled() {
        sink.record(Derivation {
            op: DerivationOp::Extract,
            name,
            parent,
            label: "",
            hash,
            inputs: vec![("salt", salt.to_vec()), ("ikm", ikm.to_vec())],
            context_covers: String::new(),
            output: out.as_bytes().to_vec(),
        });
    }
    out
}

/// Reports an HKDF-Expand-Label (or Derive-Secret) whose output is already in `out`.
#[allow(clippy::too_many_arguments)]
fn report_expand(
    sink: &mut dyn DerivationSink,
    op: DerivationOp,
    hash: HashAlg,
    secret: &Secret,
    parent: SecretName,
    label: Label,
    context: &[u8],
    covers: impl FnOnce() -> String,
    name: SecretName,
    out: &[u8],
) {
    if sink.enabled() {
        sink.record(Derivation {
            op,
            name,
            parent: Some(parent),
            label: label.full(),
            hash,
            inputs: vec![
                ("secret", secret.as_bytes().to_vec()),
                ("context", context.to_vec()),
                (
                    "info",
                    hkdf::hkdf_label(label.as_str().as_bytes(), context, out.len()),
                ),
            ],
            context_covers: covers(),
            output: out.to_vec(),
        });
    }
}

/// Derive-Secret with `context` = Transcript-Hash(Messages) (RFC 8446 §7.1).
#[allow(clippy::too_many_arguments)]
fn derive_step(
    hash: HashAlg,
    secret: &Secret,
    parent: SecretName,
    label: Label,
    context: &[u8],
    covers: impl FnOnce() -> String,
    name: SecretName,
    sink: &mut dyn DerivationSink,
) -> Secret {
    let out = hkdf::derive_secret(hash, secret, label, context);
    report_expand(
        sink,
        DerivationOp::DeriveSecret,
        hash,
        secret,
        parent,
        label,
        context,
        covers,
        name,
        out.as_bytes(),
    );
    out
}

/// Derive-Secret over a transcript, hashed with the stage's own function.
fn derive_from_transcript(
    hash: HashAlg,
    secret: &Secret,
    parent: SecretName,
    label: Label,
    transcript: &Transcript,
    name: SecretName,
    sink: &mut dyn DerivationSink,
) -> Secret {
    // Fail closed on a hash mismatch (see module docs).
    let th = transcript
        .current_hash_as(hash)
        .unwrap_or_else(Output::empty);
    derive_step(
        hash,
        secret,
        parent,
        label,
        &th,
        || transcript.covers(),
        name,
        sink,
    )
}

/// Derive-Secret(secret, label, "") (the context is Hash of the empty string).
fn derive_empty(
    hash: HashAlg,
    secret: &Secret,
    parent: SecretName,
    label: Label,
    name: SecretName,
    sink: &mut dyn DerivationSink,
) -> Secret {
    derive_step(
        hash,
        secret,
        parent,
        label,
        hash.empty_hash(),
        String::new,
        name,
        sink,
    )
}

/// HKDF-Expand-Label(secret, label, context, Hash.length) with a non-transcript context.
fn expand_step(
    hash: HashAlg,
    secret: &Secret,
    parent: SecretName,
    label: Label,
    context: &[u8],
    name: SecretName,
    sink: &mut dyn DerivationSink,
) -> Secret {
    let out = hkdf::expand_label_secret(hash, secret, label, context);
    report_expand(
        sink,
        DerivationOp::ExpandLabel,
        hash,
        secret,
        parent,
        label,
        context,
        String::new,
        name,
        out.as_bytes(),
    );
    out
}

/// HMAC(key, hash): Finished verify_data (§4.4.4) and binders (§4.2.11.2).
#[allow(clippy::too_many_arguments)]
fn hmac_step(
    hash: HashAlg,
    key: &Secret,
    data: &[u8],
    covers: impl FnOnce() -> String,
    name: SecretName,
    parent: SecretName,
    sink: &mut dyn DerivationSink,
) -> Output {
    let mac = hash.hmac(key.as_bytes(), data);
    if sink.enabled() {
        sink.record(Derivation {
            op: DerivationOp::Hmac,
            name,
            parent: Some(parent),
            label: "",
            hash,
            inputs: vec![("key", key.as_bytes().to_vec()), ("hash", data.to_vec())],
            context_covers: covers(),
            output: mac.to_vec(),
        });
    }
    mac
}

// ---------------------------------------------------------------------------------------------
// Stages.

/// Early Secret = HKDF-Extract(0, PSK) — or of Hash.length zeros without a PSK (RFC 8446 §7.1).
#[derive(Debug)]
pub struct EarlySecret {
    hash: HashAlg,
    secret: Secret,
}

impl EarlySecret {
    /// Starts the schedule. `psk` is a resumption or external PSK of any length.
    pub fn new(hash: HashAlg, psk: Option<&[u8]>, sink: &mut dyn DerivationSink) -> EarlySecret {
        let zeros = hash.zeros();
        let secret = extract_step(
            hash,
            &zeros,
            psk.unwrap_or(&zeros),
            SecretName::EarlySecret,
            None,
            sink,
        );
        EarlySecret { hash, secret }
    }

    /// The schedule's hash function.
    pub fn hash(&self) -> HashAlg {
        self.hash
    }

    /// binder_key = Derive-Secret(., "res binder" | "ext binder", "") (RFC 8446 §7.1): the label
    /// keeps a resumption PSK's binder from verifying as an external one's.
    pub fn binder_key(&self, resumption: bool, sink: &mut dyn DerivationSink) -> BinderKey {
        let (label, name) = if resumption {
            (Label::ResBinder, SecretName::ResumptionBinderKey)
        } else {
            (Label::ExtBinder, SecretName::ExternalBinderKey)
        };
        let secret = derive_empty(
            self.hash,
            &self.secret,
            SecretName::EarlySecret,
            label,
            name,
            sink,
        );
        BinderKey {
            hash: self.hash,
            secret,
            name,
        }
    }

    /// client_early_traffic_secret = Derive-Secret(., "c e traffic", ClientHello): keys 0-RTT
    /// data (RFC 8446 §7.1, §2.3).
    pub fn client_early_traffic_secret(
        &self,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> TrafficSecret {
        let name = SecretName::ClientEarlyTrafficSecret;
        let secret = derive_from_transcript(
            self.hash,
            &self.secret,
            SecretName::EarlySecret,
            Label::ClientEarlyTraffic,
            transcript,
            name,
            sink,
        );
        TrafficSecret {
            hash: self.hash,
            secret,
            name,
        }
    }

    /// early_exporter_master_secret = Derive-Secret(., "e exp master", ClientHello) (§7.1, §7.5).
    pub fn early_exporter_master_secret(
        &self,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> ExporterSecret {
        let name = SecretName::EarlyExporterMasterSecret;
        let secret = derive_from_transcript(
            self.hash,
            &self.secret,
            SecretName::EarlySecret,
            Label::EarlyExporterMaster,
            transcript,
            name,
            sink,
        );
        ExporterSecret {
            hash: self.hash,
            secret,
            name,
        }
    }

    /// Handshake Secret = HKDF-Extract(Derive-Secret(., "derived", ""), (EC)DHE) (§7.1); `None`
    /// in psk_ke mode, which uses Hash.length zeros.
    pub fn into_handshake(
        self,
        shared: Option<&[u8]>,
        sink: &mut dyn DerivationSink,
    ) -> HandshakeSecret {
        let salt = derive_empty(
            self.hash,
            &self.secret,
            SecretName::EarlySecret,
            Label::Derived,
            SecretName::DerivedForHandshake,
            sink,
        );
        let zeros = self.hash.zeros();
        let secret = extract_step(
            self.hash,
            salt.as_bytes(),
            shared.unwrap_or(&zeros),
            SecretName::HandshakeSecret,
            Some(SecretName::DerivedForHandshake),
            sink,
        );
        HandshakeSecret {
            hash: self.hash,
            secret,
        }
    }
}

/// A PSK binder key (RFC 8446 §4.2.11.2).
#[derive(Debug)]
pub struct BinderKey {
    hash: HashAlg,
    secret: Secret,
    name: SecretName,
}

impl BinderKey {
    /// binder = HMAC(finished_key, Transcript-Hash(Truncate(ClientHello))) where finished_key =
    /// HKDF-Expand-Label(binder_key, "finished", "", Hash.length) (RFC 8446 §4.2.11.2, §4.4.4).
    /// The caller compares with `subtle`.
    pub fn binder(&self, partial_ch_hash: &[u8], sink: &mut dyn DerivationSink) -> Vec<u8> {
        self.binder_inner(partial_ch_hash, String::new, sink)
    }

    /// The binder of a ClientHello (§4.2.11.2) encoded as `hello` (4-byte header included,
    /// placeholder binders of the right lengths), whose binders list is its last `binders_len`
    /// bytes (`ClientHello::binders_len`): [`binder_for`](Self::binder_for) over `transcript`
    /// and the hello up to that list. The client binds its hellos with it, and the ClientHello
    /// lab an edited hello; `None` as for `binder_for`.
    pub fn binder_for_hello(
        &self,
        transcript: &Transcript,
        hello: &[u8],
        binders_len: usize,
        sink: &mut dyn DerivationSink,
    ) -> Option<Vec<u8>> {
        let partial = hello.get(..hello.len().checked_sub(binders_len)?)?;
        self.binder_for(transcript, partial, sink)
    }

    /// [`binder`](Self::binder) over `transcript` (empty, or ClientHello1 + HelloRetryRequest)
    /// followed by `partial_ch`, the ClientHello up to its binders list; also reports what the
    /// hash covers. `None` if the transcript already runs a different hash than the PSK's.
    pub fn binder_for(
        &self,
        transcript: &Transcript,
        partial_ch: &[u8],
        sink: &mut dyn DerivationSink,
    ) -> Option<Vec<u8>> {
        let h = transcript.hash_of_prefix_with_alg(self.hash, partial_ch)?;
        let covers = || {
            let before = transcript.covers();
            if before.is_empty() {
                "ClientHello (truncated)".to_string()
            } else {
                format!("{before}, ClientHello (truncated)")
            }
        };
        Some(self.binder_inner(&h, covers, sink))
    }

    fn binder_inner(
        &self,
        h: &[u8],
        covers: impl FnOnce() -> String,
        sink: &mut dyn DerivationSink,
    ) -> Vec<u8> {
        let fk = expand_step(
            self.hash,
            &self.secret,
            self.name,
            Label::Finished,
            &[],
            SecretName::BinderFinishedKey,
            sink,
        );
        hmac_step(
            self.hash,
            &fk,
            h,
            covers,
            SecretName::Binder,
            SecretName::BinderFinishedKey,
            sink,
        )
        .to_vec()
    }
}

/// Handshake Secret (RFC 8446 §7.1).
#[derive(Debug)]
pub struct HandshakeSecret {
    hash: HashAlg,
    secret: Secret,
}

impl HandshakeSecret {
    /// The schedule's hash function.
    pub fn hash(&self) -> HashAlg {
        self.hash
    }

    /// client_handshake_traffic_secret = Derive-Secret(., "c hs traffic", ClientHello..ServerHello).
    pub fn client_handshake_traffic_secret(
        &self,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> TrafficSecret {
        self.traffic(
            Label::ClientHandshakeTraffic,
            SecretName::ClientHandshakeTrafficSecret,
            transcript,
            sink,
        )
    }

    /// server_handshake_traffic_secret = Derive-Secret(., "s hs traffic", ClientHello..ServerHello).
    pub fn server_handshake_traffic_secret(
        &self,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> TrafficSecret {
        self.traffic(
            Label::ServerHandshakeTraffic,
            SecretName::ServerHandshakeTrafficSecret,
            transcript,
            sink,
        )
    }

    fn traffic(
        &self,
        label: Label,
        name: SecretName,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> TrafficSecret {
        let secret = derive_from_transcript(
            self.hash,
            &self.secret,
            SecretName::HandshakeSecret,
            label,
            transcript,
            name,
            sink,
        );
        TrafficSecret {
            hash: self.hash,
            secret,
            name,
        }
    }

    /// Master Secret = HKDF-Extract(Derive-Secret(., "derived", ""), 0) (RFC 8446 §7.1).
    pub fn into_master(self, sink: &mut dyn DerivationSink) -> MasterSecret {
        let salt = derive_empty(
            self.hash,
            &self.secret,
            SecretName::HandshakeSecret,
            Label::Derived,
            SecretName::DerivedForMaster,
            sink,
        );
        let secret = extract_step(
            self.hash,
            salt.as_bytes(),
            &self.hash.zeros(),
            SecretName::MasterSecret,
            Some(SecretName::DerivedForMaster),
            sink,
        );
        MasterSecret {
            hash: self.hash,
            secret,
        }
    }
}

/// Master Secret (RFC 8446 §7.1). Kept until the client Finished is in the transcript, for the
/// resumption master secret.
#[derive(Debug)]
pub struct MasterSecret {
    hash: HashAlg,
    secret: Secret,
}

impl MasterSecret {
    /// The schedule's hash function.
    pub fn hash(&self) -> HashAlg {
        self.hash
    }

    /// client_application_traffic_secret_0 = Derive-Secret(., "c ap traffic",
    /// ClientHello..server Finished).
    pub fn client_application_traffic_secret(
        &self,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> TrafficSecret {
        self.traffic(
            Label::ClientApplicationTraffic,
            SecretName::ClientApplicationTrafficSecret(0),
            transcript,
            sink,
        )
    }

    /// server_application_traffic_secret_0 = Derive-Secret(., "s ap traffic",
    /// ClientHello..server Finished).
    pub fn server_application_traffic_secret(
        &self,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> TrafficSecret {
        self.traffic(
            Label::ServerApplicationTraffic,
            SecretName::ServerApplicationTrafficSecret(0),
            transcript,
            sink,
        )
    }

    /// exporter_master_secret = Derive-Secret(., "exp master", ClientHello..server Finished).
    pub fn exporter_master_secret(
        &self,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> ExporterSecret {
        let name = SecretName::ExporterMasterSecret;
        let secret = self.derive(Label::ExporterMaster, name, transcript, sink);
        ExporterSecret {
            hash: self.hash,
            secret,
            name,
        }
    }

    /// resumption_master_secret = Derive-Secret(., "res master", ClientHello..client Finished).
    pub fn resumption_master_secret(
        &self,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> ResumptionSecret {
        let secret = self.derive(
            Label::ResumptionMaster,
            SecretName::ResumptionMasterSecret,
            transcript,
            sink,
        );
        ResumptionSecret {
            hash: self.hash,
            secret,
        }
    }

    fn traffic(
        &self,
        label: Label,
        name: SecretName,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> TrafficSecret {
        TrafficSecret {
            hash: self.hash,
            secret: self.derive(label, name, transcript, sink),
            name,
        }
    }

    fn derive(
        &self,
        label: Label,
        name: SecretName,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> Secret {
        derive_from_transcript(
            self.hash,
            &self.secret,
            SecretName::MasterSecret,
            label,
            transcript,
            name,
            sink,
        )
    }
}

/// A record write key (RFC 8446 §7.3; 16 or 32 bytes) held inline, so a key change allocates
/// nothing, and erased when it drops. Dereferences to the key bytes; `Debug` never shows them.
pub struct TrafficKey(Secret);

impl core::ops::Deref for TrafficKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl core::fmt::Debug for TrafficKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("TrafficKey(..)")
    }
}

/// A traffic secret (early, handshake or application generation N): the base key of one
/// direction's record protection and of that side's Finished.
#[derive(Debug)]
pub struct TrafficSecret {
    hash: HashAlg,
    secret: Secret,
    name: SecretName,
}

impl TrafficSecret {
    /// Write key and IV: HKDF-Expand-Label(., "key" | "iv", "", length) (RFC 8446 §7.3). Both
    /// are held inline (no allocation per key change); the key is erased when it drops.
    pub fn keys(
        &self,
        aead: AeadAlg,
        sink: &mut dyn DerivationSink,
    ) -> (TrafficKey, [u8; NONCE_LEN]) {
        let key = TrafficKey(hkdf::expand_label_len(
            self.hash,
            &self.secret,
            Label::Key,
            aead.key_len(),
        ));
        report_expand(
            sink,
            DerivationOp::ExpandLabel,
            self.hash,
            &self.secret,
            self.name,
            Label::Key,
            &[],
            String::new,
            SecretName::TrafficKey,
            &key,
        );
        let mut iv = [0u8; NONCE_LEN];
        hkdf::expand_fixed(
            self.hash,
            hkdf::Prk::Secret(&self.secret),
            Label::Iv,
            &[],
            &mut iv,
        );
        report_expand(
            sink,
            DerivationOp::ExpandLabel,
            self.hash,
            &self.secret,
            self.name,
            Label::Iv,
            &[],
            String::new,
            SecretName::TrafficIv,
            &iv,
        );
        (key, iv)
    }

    /// finished_key = HKDF-Expand-Label(., "finished", "", Hash.length) (RFC 8446 §4.4.4).
    pub fn finished_key(&self, sink: &mut dyn DerivationSink) -> Secret {
        expand_step(
            self.hash,
            &self.secret,
            self.name,
            Label::Finished,
            &[],
            SecretName::FinishedKey,
            sink,
        )
    }

    /// verify_data = HMAC(finished_key, transcript_hash) (RFC 8446 §4.4.4), held inline. The
    /// state machine compares a received value with `subtle`.
    pub fn verify_data(&self, transcript_hash: &[u8], sink: &mut dyn DerivationSink) -> Output {
        self.verify_data_inner(transcript_hash, String::new, sink)
    }

    /// [`verify_data`](Self::verify_data) over the transcript's current hash, reporting what the
    /// transcript covers.
    pub fn verify_data_for(
        &self,
        transcript: &Transcript,
        sink: &mut dyn DerivationSink,
    ) -> Output {
        let th = transcript
            .current_hash_as(self.hash)
            .unwrap_or_else(Output::empty);
        self.verify_data_inner(&th, || transcript.covers(), sink)
    }

    fn verify_data_inner(
        &self,
        th: &[u8],
        covers: impl FnOnce() -> String,
        sink: &mut dyn DerivationSink,
    ) -> Output {
        let fk = self.finished_key(sink);
        hmac_step(
            self.hash,
            &fk,
            th,
            covers,
            SecretName::VerifyData,
            self.name,
            sink,
        )
    }

    /// application_traffic_secret_N+1 = HKDF-Expand-Label(N, "traffic upd", "", Hash.length)
    /// (RFC 8446 §7.2), for KeyUpdate. Only application secrets are updated; for others the name
    /// is kept as is.
    pub fn next(&self, sink: &mut dyn DerivationSink) -> TrafficSecret {
        let name = match self.name {
            SecretName::ClientApplicationTrafficSecret(n) => {
                SecretName::ClientApplicationTrafficSecret(n.saturating_add(1))
            }
            SecretName::ServerApplicationTrafficSecret(n) => {
                SecretName::ServerApplicationTrafficSecret(n.saturating_add(1))
            }
            other => other,
        };
        let secret = expand_step(
            self.hash,
            &self.secret,
            self.name,
            Label::TrafficUpdate,
            &[],
            name,
            sink,
        );
        TrafficSecret {
            hash: self.hash,
            secret,
            name,
        }
    }

    /// The secret bytes (key log, teaching output).
    pub fn as_bytes(&self) -> &[u8] {
        self.secret.as_bytes()
    }

    /// Which secret this is.
    pub fn name(&self) -> SecretName {
        self.name
    }

    /// The schedule's hash function.
    pub fn hash(&self) -> HashAlg {
        self.hash
    }
}

/// resumption_master_secret (RFC 8446 §7.1): the root of every ticket's PSK.
#[derive(Debug)]
pub struct ResumptionSecret {
    hash: HashAlg,
    secret: Secret,
}

impl ResumptionSecret {
    /// PSK = HKDF-Expand-Label(resumption_master_secret, "resumption", ticket_nonce,
    /// Hash.length) (RFC 8446 §4.6.1). The nonce is `opaque<0..255>` on the wire.
    pub fn psk(&self, ticket_nonce: &[u8], sink: &mut dyn DerivationSink) -> Secret {
        expand_step(
            self.hash,
            &self.secret,
            SecretName::ResumptionMasterSecret,
            Label::Resumption,
            ticket_nonce,
            SecretName::ResumptionPsk,
            sink,
        )
    }

    /// The schedule's hash function (a ticket's PSK may only be used with it, RFC 8446 §4.6.1).
    pub fn hash(&self) -> HashAlg {
        self.hash
    }
}

/// exporter_master_secret or early_exporter_master_secret (RFC 8446 §7.5).
#[derive(Debug)]
pub struct ExporterSecret {
    hash: HashAlg,
    secret: Secret,
    name: SecretName,
}

impl ExporterSecret {
    /// TLS-Exporter(label, context_value, key_length) = HKDF-Expand-Label(Derive-Secret(Secret,
    /// label, ""), "exporter", Hash(context_value), key_length) (RFC 8446 §7.5). The label is
    /// the application's (RFC 5705) and gets the "tls13 " prefix like any other.
    ///
    /// Fails if the label is over 249 bytes or `len` over 255 × Hash.length. The reported
    /// first step has an empty `label` field: the application's label is `inputs["label"]`.
    pub fn export(
        &self,
        label: &[u8],
        context: &[u8],
        len: usize,
        sink: &mut dyn DerivationSink,
    ) -> Result<Vec<u8>, hkdf::HkdfError> {
        let hl = self.hash.output_len();
        let empty = self.hash.empty_hash();
        // Derive-Secret(Secret, label, "") with the application's label.
        let per_label = hkdf::expand_label_to_secret(self.hash, &self.secret, label, empty)?;
        if sink.enabled() {
            sink.record(Derivation {
                op: DerivationOp::DeriveSecret,
                name: SecretName::ExporterLabelSecret,
                parent: Some(self.name),
                label: "",
                hash: self.hash,
                inputs: vec![
                    ("secret", self.secret.as_bytes().to_vec()),
                    ("label", label.to_vec()),
                    ("context", empty.to_vec()),
                    ("info", hkdf::hkdf_label(label, empty, hl)),
                ],
                context_covers: String::new(),
                output: per_label.as_bytes().to_vec(),
            });
        }
        let ctx_hash = self.hash.hash(context);
        let mut out = vec![0u8; len];
        hkdf::expand_label_into(
            self.hash,
            per_label.as_bytes(),
            Label::Exporter.as_str().as_bytes(),
            &ctx_hash,
            &mut out,
        )?;
        report_expand(
            sink,
            DerivationOp::ExpandLabel,
            self.hash,
            &per_label,
            SecretName::ExporterLabelSecret,
            Label::Exporter,
            &ctx_hash,
            String::new,
            SecretName::Exporter,
            &out,
        );
        Ok(out)
    }

    /// Which exporter secret this is.
    pub fn name(&self) -> SecretName {
        self.name
    }

    /// The secret bytes (key log).
    pub fn as_bytes(&self) -> &[u8] {
        self.secret.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyschedule::test_vectors as v;
    use crate::messages::enums::HandshakeType as T;

    fn hx(b: &[u8]) -> String {
        hex::encode(b)
    }

    /// A sink that must never be asked to record (checks the hot path builds no reports).
    struct Disabled;
    impl DerivationSink for Disabled {
        fn enabled(&self) -> bool {
            false
        }
        fn record(&mut self, d: Derivation) {
            panic!("recorded while disabled: {d:?}");
        }
    }

    fn s3_transcript_to(n: usize) -> Transcript {
        let msgs = [
            (T::ClientHello, v::s3_client_hello()),
            (T::ServerHello, v::s3_server_hello()),
            (T::EncryptedExtensions, v::s3_encrypted_extensions()),
            (T::Certificate, v::s3_certificate()),
            (T::CertificateVerify, v::s3_certificate_verify()),
            (T::Finished, v::s3_server_finished()),
            (T::Finished, v::s3_client_finished()),
        ];
        let mut t = Transcript::new();
        for (typ, m) in msgs.iter().take(n) {
            t.add(*typ, m);
        }
        t.start_hash(HashAlg::Sha256).unwrap();
        t
    }

    const S3_ECDHE: &str = "8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d";

    #[test]
    fn rfc8448_s3_full_schedule() {
        let sink = &mut Disabled;
        let aead = AeadAlg::Aes128Gcm;
        let early = EarlySecret::new(HashAlg::Sha256, None, sink);
        assert_eq!(
            hx(early.secret.as_bytes()),
            "33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a"
        );
        let mut log = Vec::new();
        let hs = early.into_handshake(Some(&hex::decode(S3_ECDHE).unwrap()), &mut log);
        assert_eq!(log[0].name, SecretName::DerivedForHandshake);
        assert_eq!(
            hx(&log[0].output),
            "6f2615a108c702c5678f54fc9dbab69716c076189c48250cebeac3576c3611ba"
        );
        assert_eq!(
            hx(hs.secret.as_bytes()),
            "1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac"
        );

        let t = s3_transcript_to(2);
        let c_hs = hs.client_handshake_traffic_secret(&t, sink);
        let s_hs = hs.server_handshake_traffic_secret(&t, sink);
        assert_eq!(
            hx(c_hs.as_bytes()),
            "b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21"
        );
        assert_eq!(
            hx(s_hs.as_bytes()),
            "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38"
        );
        let (k, iv) = s_hs.keys(aead, sink);
        assert_eq!(hx(&k), "3fce516009c21727d0f2e4e86ee403bc");
        assert_eq!(hx(&iv), "5d313eb2671276ee13000b30");
        let (k, iv) = c_hs.keys(aead, sink);
        assert_eq!(hx(&k), "dbfaa693d1762c5b666af5d950258d01");
        assert_eq!(hx(&iv), "5bd3c71b836e0b76bb73265f");
        assert_eq!(
            hx(s_hs.finished_key(sink).as_bytes()),
            "008d3b66f816ea559f96b537e885c31fc068bf492c652f01f288a1d8cdc19fc8"
        );
        assert_eq!(
            hx(c_hs.finished_key(sink).as_bytes()),
            "b80ad01015fb2f0bd65ff7d4da5d6bf83f84821d1f87fdc7d3c75b5a7b42d9c4"
        );

        // Server Finished covers ClientHello..CertificateVerify.
        let t = s3_transcript_to(5);
        let s_fin = s_hs.verify_data_for(&t, sink);
        assert_eq!(
            hx(&s_fin),
            "9b9b141d906337fbd2cbdce71df4deda4ab42c309572cb7fffee5454b78f0718"
        );
        assert_eq!(s_fin, s_hs.verify_data(&t.current_hash(), sink));
        assert_eq!(&v::s3_server_finished()[4..], &s_fin[..]);

        log.clear();
        let ms = hs.into_master(&mut log);
        assert_eq!(log[0].name, SecretName::DerivedForMaster);
        assert_eq!(
            hx(&log[0].output),
            "43de77e0c77713859a944db9db2590b53190a65b3ee2e4f12dd7a0bb7ce254b4"
        );
        assert_eq!(
            hx(ms.secret.as_bytes()),
            "18df06843d13a08bf2a449844c5f8a478001bc4d4c627984d5a41da8d0402919"
        );
        let t = s3_transcript_to(6);
        let c_ap = ms.client_application_traffic_secret(&t, sink);
        let s_ap = ms.server_application_traffic_secret(&t, sink);
        let exp = ms.exporter_master_secret(&t, sink);
        assert_eq!(
            hx(c_ap.as_bytes()),
            "9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5"
        );
        assert_eq!(
            hx(s_ap.as_bytes()),
            "a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643"
        );
        assert_eq!(
            hx(exp.as_bytes()),
            "fe22f881176eda18eb8f44529e6792c50c9a3f89452f68d8ae311b4309d3cf50"
        );
        let (k, iv) = s_ap.keys(aead, sink);
        assert_eq!(hx(&k), "9f02283b6c9c07efc26bb9f2ac92e356");
        assert_eq!(hx(&iv), "cf782b88dd83549aadf1e984");
        let (k, iv) = c_ap.keys(aead, sink);
        assert_eq!(hx(&k), "17422dda596ed5d9acd890e3c63f5051");
        assert_eq!(hx(&iv), "5b78923dee08579033e523d9");

        // Client Finished covers ClientHello..server Finished.
        let c_fin = c_hs.verify_data_for(&t, sink);
        assert_eq!(
            hx(&c_fin),
            "a8ec436d677634ae525ac1fcebe11a039ec17694fac6e98527b642f2edd5ce61"
        );

        let t = s3_transcript_to(7);
        let res = ms.resumption_master_secret(&t, sink);
        assert_eq!(
            hx(res.secret.as_bytes()),
            "7df235f2031d2a051287d02b0241b0bfdaf86cc856231f2d5aba46c434ec196c"
        );
        assert_eq!(
            hx(res.psk(&[0, 0], sink).as_bytes()),
            "4ecd0eb6ec3b4d87f5d6028f922ca4c5851a277fd41311c9e62d2c9492e1c4f3"
        );
    }

    const S4_BINDER: &str = "3add4fb2d8fdf822a0ca3cf7678ef5e88dae990141c5924d57bb6fa31b9e5f9d";

    #[test]
    fn rfc8448_s4_resumption_binder_and_early_secrets() {
        let mut log = Vec::new();
        let psk = hex::decode("4ecd0eb6ec3b4d87f5d6028f922ca4c5851a277fd41311c9e62d2c9492e1c4f3")
            .unwrap();
        let early = EarlySecret::new(HashAlg::Sha256, Some(&psk), &mut log);
        assert_eq!(
            hx(early.secret.as_bytes()),
            "9b2188e9b2fc6d64d71dc329900e20bb41915000f678aa839cbb797cb7d8332c"
        );
        let bk = early.binder_key(true, &mut log);
        assert_eq!(
            hx(bk.secret.as_bytes()),
            "69fe131a3bbad5d63c64eebcc30e395b9d8107726a13d074e389dbc8a4e47256"
        );
        // From the printed partial-ClientHello hash ...
        let binder_hash =
            hex::decode("63224b2e4573f2d3454ca84b9d009a04f6be9e05711a8396473aefa01e924a14")
                .unwrap();
        assert_eq!(hx(&bk.binder(&binder_hash, &mut log)), S4_BINDER);
        // ... and from the partial ClientHello itself, through the (empty) transcript.
        let prefix = v::s4_client_hello_prefix();
        let t0 = Transcript::new();
        assert_eq!(
            hx(&bk.binder_for(&t0, &prefix, &mut log).unwrap()),
            S4_BINDER
        );
        let fk = log
            .iter()
            .find(|d| d.name == SecretName::BinderFinishedKey)
            .unwrap();
        assert_eq!(
            hx(&fk.output),
            "5588673e72cb59c87d220caffe94f2dea9a3b1609f7d50e90a48227db9ed7eaa"
        );
        assert_eq!(fk.parent, Some(SecretName::ResumptionBinderKey));
        let b = log.last().unwrap();
        assert_eq!(b.op, DerivationOp::Hmac);
        assert_eq!(b.context_covers, "ClientHello (truncated)");

        // The complete ClientHello = prefix || binders list (u16 length, u8 length, binder).
        let mut ch = prefix.clone();
        ch.extend_from_slice(&[0x00, 0x21, 0x20]);
        ch.extend_from_slice(&hex::decode(S4_BINDER).unwrap());
        assert_eq!(ch.len(), 512);
        // Before the server answers, the client hashes it with the PSK's hash.
        let mut t = Transcript::new();
        t.add(T::ClientHello, &ch);
        let cets = early.client_early_traffic_secret(&t, &mut log);
        assert_eq!(
            hx(cets.as_bytes()),
            "3fbbe6a60deb66c30a32795aba0eff7eaa10105586e7be5c09678d63b6caab62"
        );
        assert_eq!(log.last().unwrap().context_covers, "ClientHello");
        let (k, iv) = cets.keys(AeadAlg::Aes128Gcm, &mut log);
        assert_eq!(hx(&k), "920205a5b7bf2115e6fc5c2942834f54");
        assert_eq!(hx(&iv), "6d475f0993c8e564610db2b9");
        let eems = early.early_exporter_master_secret(&t, &mut log);
        assert_eq!(
            hx(eems.as_bytes()),
            "b2026866610937d7423e5be90862ccf24c0e6091186d34f812089ff5be2ef7df"
        );
        assert_eq!(eems.name().nss_label(), Some("EARLY_EXPORTER_SECRET"));

        let hs = early.into_handshake(
            Some(
                &hex::decode("f44194756ff9ec9d25180635d66ea6824c6ab3bf179977be37f723570e7ccb2e")
                    .unwrap(),
            ),
            &mut log,
        );
        assert_eq!(
            hx(hs.secret.as_bytes()),
            "005cb112fd8eb4ccc623bb88a07c64b3ede1605363fc7d0df8c7ce4ff0fb4ae6"
        );
    }

    #[test]
    fn external_binder_label_differs() {
        let early = EarlySecret::new(HashAlg::Sha256, Some(b"external psk"), &mut NoSink);
        let r = early.binder_key(true, &mut NoSink);
        let e = early.binder_key(false, &mut NoSink);
        assert_ne!(r.secret.as_bytes(), e.secret.as_bytes());
        assert_eq!(e.name, SecretName::ExternalBinderKey);
    }

    #[test]
    fn rfc8448_s5_hrr_handshake_secrets() {
        let sink = &mut NoSink;
        let mut t = Transcript::new();
        t.add(T::ClientHello, &v::s5_client_hello_1());
        t.start_hash(HashAlg::Sha256).unwrap();
        t.replace_with_message_hash().unwrap();
        t.add(T::ServerHello, &v::s5_hello_retry_request());
        t.add(T::ClientHello, &v::s5_client_hello_2());
        t.add(T::ServerHello, &v::s5_server_hello());
        let ecdhe = hex::decode("c142ce13ca11b5c2233652e63ad3d97844f1621fbfb9de69d547dc8fedeabeb4")
            .unwrap();
        let hs = EarlySecret::new(HashAlg::Sha256, None, sink).into_handshake(Some(&ecdhe), sink);
        assert_eq!(
            hx(hs.client_handshake_traffic_secret(&t, sink).as_bytes()),
            "158aa7ab8855073582b41d674b4055cabcc534728f659314861b4e08e2011566"
        );
        assert_eq!(
            hx(hs.server_handshake_traffic_secret(&t, sink).as_bytes()),
            "3403e781e2af7b6508da28574f6e95a1abf162de83a97927c37672a4a0cef8a1"
        );
    }

    /// The hybrid groups' combined secrets (tests/vectors/hybrid: s2n's published ones, and the
    /// composed wire vectors) through §7.1 to the handshake traffic secrets, with the vectors'
    /// stand-in transcript (ASCII text hashed in place of ClientHello..ServerHello). That the
    /// key exchange produces these shared secrets is crypto::kx's test.
    #[test]
    fn hybrid_vectors_handshake_traffic_secrets() {
        let json: serde_json::Value = serde_json::from_str(include_str!(
            "../../tests/vectors/hybrid/hybrid_kex_vectors.json"
        ))
        .unwrap();
        let field = |v: &serde_json::Value, key: &str| {
            hex::decode(
                v[key]
                    .as_str()
                    .unwrap_or_else(|| panic!("missing field {key}")),
            )
            .unwrap()
        };
        let secrets = |hash: HashAlg, shared: &[u8], transcript: &str| {
            let mut t = Transcript::new();
            t.add(T::ClientHello, transcript.as_bytes());
            t.start_hash(hash).unwrap();
            let hs =
                EarlySecret::new(hash, None, &mut NoSink).into_handshake(Some(shared), &mut NoSink);
            let c = hs.client_handshake_traffic_secret(&t, &mut NoSink);
            let s = hs.server_handshake_traffic_secret(&t, &mut NoSink);
            (c.as_bytes().to_vec(), s.as_bytes().to_vec())
        };
        let hash_of_suite = |suite: &str| match suite {
            "TLS_AES_128_GCM_SHA256" => HashAlg::Sha256,
            "TLS_AES_256_GCM_SHA384" => HashAlg::Sha384,
            other => panic!("unknown suite {other}"),
        };

        let vectors = json["composed_wire_vectors"].as_array().unwrap();
        assert_eq!(vectors.len(), 3);
        for v in vectors {
            let label = v["group"].as_str().unwrap();
            let ks = v["key_schedule"].as_object().unwrap();
            assert_eq!(ks.len(), 2);
            for (suite, sv) in ks {
                let (c, s) = secrets(
                    hash_of_suite(suite),
                    &field(v, "shared_secret"),
                    "client_hello || server_hello",
                );
                assert_eq!(
                    c,
                    field(sv, "client_handshake_traffic_secret"),
                    "{label} {suite}"
                );
                assert_eq!(
                    s,
                    field(sv, "server_handshake_traffic_secret"),
                    "{label} {suite}"
                );
            }
        }

        let published = json["published_s2n_kat"].as_array().unwrap();
        assert_eq!(published.len(), 6);
        for p in published {
            let (c, s) = secrets(
                hash_of_suite(p["cipher_suite"].as_str().unwrap()),
                &field(p, "hybrid_shared_secret"),
                p["transcript_ascii"].as_str().unwrap(),
            );
            assert_eq!(c, field(p, "expected_client_handshake_traffic_secret"));
            assert_eq!(s, field(p, "expected_server_handshake_traffic_secret"));
        }
    }

    #[test]
    fn key_update_traffic_upd() {
        // Expected values computed independently (Python hmac/hashlib HKDF-Expand-Label) from
        // RFC 8448 §3 client_application_traffic_secret_0.
        let mut log = Vec::new();
        let t = s3_transcript_to(6);
        let hs = EarlySecret::new(HashAlg::Sha256, None, &mut NoSink)
            .into_handshake(Some(&hex::decode(S3_ECDHE).unwrap()), &mut NoSink);
        let ms = hs.into_master(&mut NoSink);
        let c0 = ms.client_application_traffic_secret(&t, &mut NoSink);
        assert_eq!(c0.name().nss_label(), Some("CLIENT_TRAFFIC_SECRET_0"));
        let c1 = c0.next(&mut log);
        assert_eq!(c1.name(), SecretName::ClientApplicationTrafficSecret(1));
        assert_eq!(c1.name().to_string(), "client_application_traffic_secret_1");
        assert_eq!(c1.name().nss_label(), None);
        assert_eq!(
            hx(c1.as_bytes()),
            "fcdfcc72725aaee48bf64e4fd8b749cdbdbab39d90da0b26e2245ca6ea167207"
        );
        let d = &log[0];
        assert_eq!(
            (d.op, d.label, d.parent),
            (
                DerivationOp::ExpandLabel,
                "tls13 traffic upd",
                Some(SecretName::ClientApplicationTrafficSecret(0))
            )
        );
        let (k, iv) = c1.keys(AeadAlg::Aes128Gcm, &mut NoSink);
        assert_eq!(hx(&k), "3879d82f5f14056e623f2ce5bfc66fce");
        assert_eq!(hx(&iv), "5dfb2c5938c3379b6cc5d1f2");
        let c2 = c1.next(&mut NoSink);
        assert_eq!(c2.name(), SecretName::ClientApplicationTrafficSecret(2));
        assert_eq!(
            hx(c2.as_bytes()),
            "68474fe58c172143d0a009a76edd231b0d934f3058588ea0852662279e54a573"
        );
    }

    #[test]
    fn exporter() {
        // Expected value computed independently (Python) from RFC 8448 §3 exporter_master_secret.
        let t = s3_transcript_to(6);
        let ms = EarlySecret::new(HashAlg::Sha256, None, &mut NoSink)
            .into_handshake(Some(&hex::decode(S3_ECDHE).unwrap()), &mut NoSink)
            .into_master(&mut NoSink);
        let exp = ms.exporter_master_secret(&t, &mut NoSink);
        let mut log = Vec::new();
        let out = exp
            .export(b"EXPERIMENTAL tls13lab", b"context", 42, &mut log)
            .unwrap();
        assert_eq!(
            hx(&out),
            "d20608723aeff1cabfe9caba61c682392679c6e6fd381361f43156803a0a1bf7e720f6390149cbd99939"
        );
        assert_eq!(log.len(), 2);
        assert_eq!(log[1].name, SecretName::Exporter);
        assert_eq!(
            exp.export(&[b'x'; 250], b"", 16, &mut NoSink),
            Err(hkdf::HkdfError::LabelTooLong)
        );
        assert_eq!(
            exp.export(b"a", b"", 255 * 32 + 1, &mut NoSink),
            Err(hkdf::HkdfError::OutputTooLong)
        );
    }

    #[test]
    fn sha384_schedule() {
        // Expected values computed independently (Python) for SHA-384, IKM = 00..1f,
        // transcript = the bytes "abc".
        let mut t = Transcript::new();
        t.add(T::ClientHello, b"abc");
        t.start_hash(HashAlg::Sha384).unwrap();
        let early = EarlySecret::new(HashAlg::Sha384, None, &mut NoSink);
        assert_eq!(
            hx(early.secret.as_bytes()),
            "7ee8206f5570023e6dc7519eb1073bc4e791ad37b5c382aa10ba18e2357e716971f9362f2c2fe2a76bfd78dfec4ea9b5"
        );
        let ikm: Vec<u8> = (0u8..32).collect();
        let hs = early.into_handshake(Some(&ikm), &mut NoSink);
        assert_eq!(
            hx(hs.secret.as_bytes()),
            "03e67b8797b8868b32c737ad09d2454266b47b828fe83999484501c1d0f12bfefdecf2341ab055c50f8f81a4d91610dd"
        );
        let c = hs.client_handshake_traffic_secret(&t, &mut NoSink);
        assert_eq!(
            hx(c.as_bytes()),
            "cffb3daa31699a38b3dd653db1fd3b49f79a8af47794658eb287713c67a44501be0a3c960e278d26f99c145f584fd326"
        );
        let (k, iv) = c.keys(AeadAlg::Aes256Gcm, &mut NoSink);
        assert_eq!(
            hx(&k),
            "d8ee940f9bbaffb3c9d852a18633b3310cdcb73c536dbcbb9a8f03b4dfbfb00c"
        );
        assert_eq!(hx(&iv), "55295b3af115c6e5f539187c");
        assert_eq!(
            hx(&c.verify_data_for(&t, &mut NoSink)),
            "a7411e00499c6a59ba37e6a9d8e8228518a9e9e155fc791a34ff3388ff2969685e187dfb370cab7cd192b5f8da765409"
        );
    }

    #[test]
    fn derivations_are_reported_with_labels_inputs_and_covers() {
        let mut log = Vec::new();
        let early = EarlySecret::new(HashAlg::Sha256, None, &mut log);
        let hs = early.into_handshake(Some(&hex::decode(S3_ECDHE).unwrap()), &mut log);
        let t = s3_transcript_to(2);
        let c = hs.client_handshake_traffic_secret(&t, &mut log);
        let _ = c.keys(AeadAlg::Aes128Gcm, &mut log);
        let names: Vec<String> = log.iter().map(|d| d.name.to_string()).collect();
        assert_eq!(
            names,
            [
                "early_secret",
                "derived_for_handshake",
                "handshake_secret",
                "client_handshake_traffic_secret",
                "write_key",
                "write_iv"
            ]
        );
        let chs = &log[3];
        assert_eq!(chs.op, DerivationOp::DeriveSecret);
        assert_eq!(chs.label, "tls13 c hs traffic");
        assert_eq!(chs.context_covers, "ClientHello..ServerHello");
        assert_eq!(chs.parent, Some(SecretName::HandshakeSecret));
        assert_eq!(
            chs.name.nss_label(),
            Some("CLIENT_HANDSHAKE_TRAFFIC_SECRET")
        );
        // RFC 8448 §3 prints exactly this "info" for the step.
        let info = &chs.inputs.iter().find(|(k, _)| *k == "info").unwrap().1;
        assert_eq!(
            hx(info),
            "002012746c7331332063206873207472616666696320860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8"
        );
        assert_eq!(log[2].inputs[1], ("ikm", hex::decode(S3_ECDHE).unwrap()));
        assert_eq!(
            log[4].parent,
            Some(SecretName::ClientHandshakeTrafficSecret)
        );

        let json = serde_json::to_value(&log[3]).unwrap();
        assert_eq!(json["name"], "client_handshake_traffic_secret");
        assert_eq!(json["op"], "DeriveSecret");
        assert_eq!(
            json["output"],
            "b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21"
        );
        assert_eq!(
            json["inputs"]["context"],
            "860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8"
        );
    }

    #[test]
    fn mismatched_transcript_hash_fails_closed() {
        let mut t = Transcript::new();
        t.add(T::ClientHello, b"hello");
        t.start_hash(HashAlg::Sha384).unwrap();
        let hs =
            EarlySecret::new(HashAlg::Sha256, None, &mut NoSink).into_handshake(None, &mut NoSink);
        let a = hs.client_handshake_traffic_secret(&t, &mut NoSink);
        let mut t2 = Transcript::new();
        t2.add(T::ClientHello, b"hello");
        t2.start_hash(HashAlg::Sha256).unwrap();
        let b = hs.client_handshake_traffic_secret(&t2, &mut NoSink);
        assert_eq!(a.as_bytes().len(), 32);
        assert_ne!(a.as_bytes(), b.as_bytes());
        let bk = EarlySecret::new(HashAlg::Sha256, Some(b"k"), &mut NoSink)
            .binder_key(true, &mut NoSink);
        assert!(bk.binder_for(&t, b"partial", &mut NoSink).is_none());
    }

    #[test]
    fn debug_never_shows_secrets() {
        let early = EarlySecret::new(HashAlg::Sha256, None, &mut NoSink);
        let s = format!("{early:?} {early:#?}");
        assert!(!s.contains("33ad0a1c") && !s.contains("51, 173"));
        assert!(s.contains("Secret(..)"));
    }
}
