//! HKDF (RFC 5869) in the shape TLS 1.3 uses it (RFC 8446 §7.1): Extract, HKDF-Expand-Label and
//! Derive-Secret, plus the labels, all in one place.
//!
//! ```text
//! HKDF-Expand-Label(Secret, Label, Context, Length) = HKDF-Expand(Secret, HkdfLabel, Length)
//! struct {
//!     uint16 length = Length;
//!     opaque label<7..255> = "tls13 " + Label;
//!     opaque context<0..255> = Context;
//! } HkdfLabel;
//! Derive-Secret(Secret, Label, Messages) = HKDF-Expand-Label(Secret, Label, Transcript-Hash(Messages), Hash.length)
//! ```
//!
//! HkdfLabel is never built in a buffer on the hot path: its pieces are fed to HMAC one by one.

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::crypto::hash::{HashAlg, Output, MAX_HASH_LEN};
use crate::crypto::hmac_key::HmacKey;

/// Prefix of every TLS 1.3 HKDF label (RFC 8446 §7.1).
pub const LABEL_PREFIX: &str = "tls13 ";

/// Every fixed label of the TLS 1.3 key schedule (RFC 8446 §7.1, §7.2, §7.3, §7.5, §4.4.4,
/// §4.6.1), without the `"tls13 "` prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Label {
    /// "derived": the salt for the next Extract.
    Derived,
    /// "ext binder": binder key of an external PSK.
    ExtBinder,
    /// "res binder": binder key of a resumption PSK.
    ResBinder,
    /// "c e traffic": client_early_traffic_secret.
    ClientEarlyTraffic,
    /// "e exp master": early_exporter_master_secret.
    EarlyExporterMaster,
    /// "c hs traffic": client_handshake_traffic_secret.
    ClientHandshakeTraffic,
    /// "s hs traffic": server_handshake_traffic_secret.
    ServerHandshakeTraffic,
    /// "c ap traffic": client_application_traffic_secret_0.
    ClientApplicationTraffic,
    /// "s ap traffic": server_application_traffic_secret_0.
    ServerApplicationTraffic,
    /// "exp master": exporter_master_secret.
    ExporterMaster,
    /// "res master": resumption_master_secret.
    ResumptionMaster,
    /// "finished": finished_key (§4.4.4) and the binder's finished key (§4.2.11.2).
    Finished,
    /// "key": write key (§7.3).
    Key,
    /// "iv": write IV (§7.3).
    Iv,
    /// "traffic upd": next application traffic secret (§7.2).
    TrafficUpdate,
    /// "resumption": PSK from a ticket nonce (§4.6.1).
    Resumption,
    /// "exporter": the final step of TLS-Exporter (§7.5).
    Exporter,
}

impl Label {
    /// The label as RFC 8446 writes it, without the prefix.
    pub fn as_str(self) -> &'static str {
        // Every `full()` string starts with the ASCII prefix, so this is a char boundary.
        &self.full()[LABEL_PREFIX.len()..]
    }

    /// The label as it appears inside HkdfLabel, with the `"tls13 "` prefix.
    pub const fn full(self) -> &'static str {
        match self {
            Label::Derived => "tls13 derived",
            Label::ExtBinder => "tls13 ext binder",
            Label::ResBinder => "tls13 res binder",
            Label::ClientEarlyTraffic => "tls13 c e traffic",
            Label::EarlyExporterMaster => "tls13 e exp master",
            Label::ClientHandshakeTraffic => "tls13 c hs traffic",
            Label::ServerHandshakeTraffic => "tls13 s hs traffic",
            Label::ClientApplicationTraffic => "tls13 c ap traffic",
            Label::ServerApplicationTraffic => "tls13 s ap traffic",
            Label::ExporterMaster => "tls13 exp master",
            Label::ResumptionMaster => "tls13 res master",
            Label::Finished => "tls13 finished",
            Label::Key => "tls13 key",
            Label::Iv => "tls13 iv",
            Label::TrafficUpdate => "tls13 traffic upd",
            Label::Resumption => "tls13 resumption",
            Label::Exporter => "tls13 exporter",
        }
    }
}

/// Secret key material of at most 48 bytes, erased on drop; `Debug` never shows the bytes.
///
/// A secret that is expanded (a PRK) keeps its HMAC key state — the hash states after the key
/// XOR ipad and XOR opad blocks — after the first expansion, so the next labels derived from it
/// (handshake and master secrets: 3–4 each; traffic secrets: key, iv, finished) cost two
/// compressions instead of four. That state is erased with the secret.
#[derive(Clone)]
pub struct Secret {
    bytes: [u8; MAX_HASH_LEN],
    len: u8,
    hmac: KeyState,
}

/// Erased as a slice (one fill and a barrier; see `Output`), with its HMAC key state.
impl Zeroize for Secret {
    fn zeroize(&mut self) {
        self.bytes[..].zeroize();
        self.len.zeroize();
        self.hmac.zeroize();
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.zeroize();
    }
}

impl ZeroizeOnDrop for Secret {}

/// The cached HMAC key state of a [`Secret`]: erased when the secret is (and on drop).
#[derive(Clone, Default)]
struct KeyState(std::sync::OnceLock<HmacKey>);

impl Zeroize for KeyState {
    fn zeroize(&mut self) {
        // Taken out and dropped: an `HmacKey` erases itself on drop.
        drop(self.0.take());
    }
}

impl Secret {
    /// Copies `bytes`; `None` if longer than 48 bytes.
    pub fn new(bytes: &[u8]) -> Option<Secret> {
        if bytes.len() > MAX_HASH_LEN {
            return None;
        }
        let mut s = Secret::zeroed(bytes.len());
        s.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(s)
    }

    /// `len` zero bytes (`len` ≤ 48, clamped).
    fn zeroed(len: usize) -> Secret {
        Secret {
            bytes: [0; MAX_HASH_LEN],
            len: len.min(MAX_HASH_LEN) as u8,
            hmac: KeyState::default(),
        }
    }

    /// HMAC keyed with this secret (HKDF-Expand's PRF).
    fn hmac_parts(&self, hash: HashAlg, parts: &[&[u8]]) -> Output {
        let key = self
            .hmac
            .0
            .get_or_init(|| HmacKey::new(hash, self.as_bytes()));
        // A secret is used with one hash in a schedule; any other is computed afresh.
        if key.alg() == hash {
            return key.sign(parts);
        }
        hash.hmac_parts(self.as_bytes(), parts)
    }

    /// The secret bytes (for the key log and the teaching CLI; keep them out of logs otherwise).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True if zero-length.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsRef<[u8]> for Secret {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl core::fmt::Debug for Secret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Why a caller-supplied HKDF-Expand-Label request cannot be encoded or computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HkdfError {
    /// `"tls13 " + label` is longer than 255 bytes (HkdfLabel.label is `opaque<7..255>`).
    LabelTooLong,
    /// Context longer than 255 bytes (HkdfLabel.context is `opaque<0..255>`).
    ContextTooLong,
    /// More than 255 × Hash.length bytes requested (RFC 5869 §2.3), or more than 65535.
    OutputTooLong,
}

impl core::fmt::Display for HkdfError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            HkdfError::LabelTooLong => "HKDF label longer than 255 bytes",
            HkdfError::ContextTooLong => "HKDF context longer than 255 bytes",
            HkdfError::OutputTooLong => "HKDF output too long",
        })
    }
}

impl std::error::Error for HkdfError {}

/// HKDF-Extract(salt, IKM) = HMAC-Hash(salt, IKM) (RFC 5869 §2.2). A zero-length `salt` is the
/// same as Hash.length zeros, as HMAC pads keys with zeros.
pub fn extract(hash: HashAlg, salt: &[u8], ikm: &[u8]) -> Secret {
    // The HMAC output is erased when dropped (Output is ZeroizeOnDrop).
    secret_from_output(&hash.hmac(salt, ikm))
}

/// HKDF-Expand-Label with a caller-chosen label (RFC 8446 §7.1); fails only on lengths that
/// HkdfLabel or HKDF cannot express.
pub fn expand_label(
    hash: HashAlg,
    secret: &[u8],
    label: &str,
    context: &[u8],
    len: usize,
) -> Result<Vec<u8>, HkdfError> {
    let mut out = vec![0u8; len];
    expand_label_into(hash, secret, label.as_bytes(), context, &mut out)?;
    Ok(out)
}

/// HKDF-Expand-Label into `out` (its length is the Length field). `label` excludes the prefix.
pub fn expand_label_into(
    hash: HashAlg,
    secret: &[u8],
    label: &[u8],
    context: &[u8],
    out: &mut [u8],
) -> Result<(), HkdfError> {
    expand_label_prk(hash, Prk::Bytes(secret), label, context, out)
}

/// [`expand_label_into`] from a [`Prk`].
pub(crate) fn expand_label_prk(
    hash: HashAlg,
    secret: Prk<'_>,
    label: &[u8],
    context: &[u8],
    out: &mut [u8],
) -> Result<(), HkdfError> {
    if LABEL_PREFIX.len() + label.len() > 255 {
        return Err(HkdfError::LabelTooLong);
    }
    if context.len() > 255 {
        return Err(HkdfError::ContextTooLong);
    }
    if out.len() > 255 * hash.output_len() || out.len() > usize::from(u16::MAX) {
        return Err(HkdfError::OutputTooLong);
    }
    let length = (out.len() as u16).to_be_bytes();
    let label_len = [(LABEL_PREFIX.len() + label.len()) as u8];
    let context_len = [context.len() as u8];
    let info: [&[u8]; 6] = [
        &length,
        &label_len,
        LABEL_PREFIX.as_bytes(),
        label,
        &context_len,
        context,
    ];
    expand(hash, secret, &info, out);
    Ok(())
}

/// HKDF-Expand-Label(secret, label, context, Hash.length) for a schedule label: the lengths
/// are within HkdfLabel's bounds by construction, so this cannot fail.
///
/// `context` is a transcript hash, an empty string or a ticket nonce (`opaque<0..255>` on the
/// wire); were it longer than 255 bytes only its first 255 would be used.
pub fn expand_label_secret(hash: HashAlg, secret: &Secret, label: Label, context: &[u8]) -> Secret {
    expand_to_secret(hash, secret, label, context, hash.output_len())
}

/// HKDF-Expand-Label(secret, label, "", `len`) for a schedule label into a [`Secret`]: a record
/// key (16 or 32 bytes, RFC 8446 §7.3) held inline and erased on drop, so a key change
/// allocates nothing. `len` is clamped to 48.
pub(crate) fn expand_label_len(hash: HashAlg, secret: &Secret, label: Label, len: usize) -> Secret {
    expand_to_secret(hash, secret, label, &[], len)
}

fn expand_to_secret(
    hash: HashAlg,
    secret: &Secret,
    label: Label,
    context: &[u8],
    len: usize,
) -> Secret {
    let mut out = Secret::zeroed(len);
    let n = out.len();
    expand_fixed(
        hash,
        Prk::Secret(secret),
        label,
        context,
        &mut out.bytes[..n],
    );
    out
}

/// HKDF-Expand-Label(secret, label, context, Hash.length) with a caller-chosen label (the
/// exporter's, RFC 8446 §7.5), as a [`Secret`].
pub fn expand_label_to_secret(
    hash: HashAlg,
    secret: &Secret,
    label: &[u8],
    context: &[u8],
) -> Result<Secret, HkdfError> {
    let mut out = Secret::zeroed(hash.output_len());
    let n = out.len();
    expand_label_prk(
        hash,
        Prk::Secret(secret),
        label,
        context,
        &mut out.bytes[..n],
    )?;
    Ok(out)
}

/// HKDF-Expand-Label for a schedule label into a buffer of at most 255 × Hash.length bytes (the
/// key, IV and finished-key lengths all are).
pub(crate) fn expand_fixed(
    hash: HashAlg,
    secret: Prk<'_>,
    label: Label,
    context: &[u8],
    out: &mut [u8],
) {
    let context = &context[..context.len().min(255)];
    let out_len = out.len().min(255 * hash.output_len());
    // The HkdfLabel encoded once, in one piece: the HMAC then copies one part, not five
    // (a schedule label is at most 24 bytes with its prefix; the context at most 255).
    let full = label.full().as_bytes();
    let mut info = [0u8; 2 + 1 + 32 + 1 + 255];
    info[..2].copy_from_slice(&(out_len as u16).to_be_bytes());
    info[2] = full.len() as u8;
    let mut at = 3 + full.len();
    info[3..at].copy_from_slice(full);
    info[at] = context.len() as u8;
    at += 1;
    info[at..at + context.len()].copy_from_slice(context);
    at += context.len();
    expand(hash, secret, &[&info[..at]], &mut out[..out_len]);
}

/// Derive-Secret(Secret, Label, Messages) given Transcript-Hash(Messages) (RFC 8446 §7.1).
pub fn derive_secret(
    hash: HashAlg,
    secret: &Secret,
    label: Label,
    transcript_hash: &[u8],
) -> Secret {
    expand_label_secret(hash, secret, label, transcript_hash)
}

/// The encoded HkdfLabel (the HKDF "info"), for showing a derivation; never on the hot path.
pub fn hkdf_label(label: &[u8], context: &[u8], len: usize) -> Vec<u8> {
    let label = &label[..label.len().min(255 - LABEL_PREFIX.len())];
    let context = &context[..context.len().min(255)];
    let mut v = Vec::with_capacity(4 + LABEL_PREFIX.len() + label.len() + context.len());
    v.extend_from_slice(&(len.min(usize::from(u16::MAX)) as u16).to_be_bytes());
    v.push((LABEL_PREFIX.len() + label.len()) as u8);
    v.extend_from_slice(LABEL_PREFIX.as_bytes());
    v.extend_from_slice(label);
    v.push(context.len() as u8);
    v.extend_from_slice(context);
    v
}

/// The PRK of an HKDF-Expand: caller bytes, or a schedule [`Secret`] (which may keep its HMAC
/// key state between expansions).
#[derive(Clone, Copy)]
pub(crate) enum Prk<'a> {
    /// Raw bytes.
    Bytes(&'a [u8]),
    /// A schedule secret.
    Secret(&'a Secret),
}

impl Prk<'_> {
    fn hmac_parts(self, hash: HashAlg, parts: &[&[u8]]) -> Output {
        match self {
            Prk::Bytes(b) => hash.hmac_parts(b, parts),
            Prk::Secret(s) => s.hmac_parts(hash, parts),
        }
    }
}

/// HKDF-Expand (RFC 5869 §2.3) from a [`Prk`]: a [`Secret`] keys HMAC from its kept state.
/// `out` must be at most 255 × Hash.length bytes (callers check).
fn expand(hash: HashAlg, prk: Prk<'_>, info: &[&[u8]], out: &mut [u8]) {
    crate::crypto::hkdf::expand_with(hash, |parts| prk.hmac_parts(hash, parts), info, out);
}

fn secret_from_output(o: &Output) -> Secret {
    let mut s = Secret::zeroed(o.len());
    let n = s.len();
    s.bytes[..n].copy_from_slice(&o[..n]);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    #[test]
    fn labels_are_prefixed_and_short() {
        assert_eq!(Label::ClientHandshakeTraffic.as_str(), "c hs traffic");
        assert_eq!(Label::TrafficUpdate.full(), "tls13 traffic upd");
    }

    #[test]
    fn rfc5869_case1_extract_and_expand() {
        let prk = extract(
            HashAlg::Sha256,
            &h("000102030405060708090a0b0c"),
            &h("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"),
        );
        assert_eq!(
            hex::encode(prk.as_bytes()),
            "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"
        );
        // Raw bytes, then the Secret twice (with `ring-hash` the second run, and the second
        // block of the first, use the HMAC key state the Secret kept).
        for p in [
            Prk::Bytes(prk.as_bytes()),
            Prk::Secret(&prk),
            Prk::Secret(&prk),
        ] {
            let mut okm = [0u8; 42];
            expand(HashAlg::Sha256, p, &[&h("f0f1f2f3f4f5f6f7f8f9")], &mut okm);
            assert_eq!(
                hex::encode(okm),
                "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
            );
        }
    }

    #[test]
    fn rfc8448_s3_derived_and_info() {
        // RFC 8448 §3 "derive secret for handshake": PRK = early secret, hash = Hash("").
        let early = Secret::new(&h(
            "33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a",
        ))
        .unwrap();
        let empty = HashAlg::Sha256.hash(b"");
        assert_eq!(
            hex::encode(hkdf_label(b"derived", &empty, 32)),
            "00200d746c733133206465726976656420e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let d = derive_secret(HashAlg::Sha256, &early, Label::Derived, &empty);
        assert_eq!(
            hex::encode(d.as_bytes()),
            "6f2615a108c702c5678f54fc9dbab69716c076189c48250cebeac3576c3611ba"
        );
        // The generic entry point agrees with the schedule one.
        let g = expand_label(HashAlg::Sha256, early.as_bytes(), "derived", &empty, 32).unwrap();
        assert_eq!(g, d.as_bytes());
    }

    #[test]
    fn length_errors() {
        let s = [0u8; 32];
        let long = "x".repeat(250);
        assert_eq!(
            expand_label(HashAlg::Sha256, &s, &long, b"", 16),
            Err(HkdfError::LabelTooLong)
        );
        assert_eq!(
            expand_label(HashAlg::Sha256, &s, "a", &[0; 256], 16),
            Err(HkdfError::ContextTooLong)
        );
        assert_eq!(
            expand_label(HashAlg::Sha256, &s, "a", b"", 255 * 32 + 1),
            Err(HkdfError::OutputTooLong)
        );
        assert_eq!(
            expand_label(HashAlg::Sha256, &s, "a", b"", 255 * 32).map(|v| v.len()),
            Ok(255 * 32)
        );
    }

    #[test]
    fn secret_debug_is_redacted() {
        let s = Secret::new(&[0xab; 32]).unwrap();
        assert_eq!(format!("{s:?}"), "Secret(..)");
        assert_eq!(format!("{s:#?}"), "Secret(..)");
    }

    /// A secret that kept its HMAC key state gives the same expansions as its bare bytes, for
    /// either hash, and erasing it erases the state too.
    #[test]
    fn kept_hmac_key_state_changes_no_output_and_is_erased() {
        for hash in [HashAlg::Sha256, HashAlg::Sha384] {
            let mut s = Secret::new(&[0x5a; 48][..hash.output_len()]).unwrap();
            for label in [Label::Key, Label::Iv, Label::Finished, Label::Key] {
                let (mut a, mut b) = ([0u8; 40], [0u8; 40]);
                let l = label.as_str().as_bytes();
                expand_label_prk(hash, Prk::Secret(&s), l, b"ctx", &mut a).unwrap();
                expand_label_into(hash, s.as_bytes(), l, b"ctx", &mut b).unwrap();
                assert_eq!(a, b, "{hash} {label:?}");
            }
            assert!(s.hmac.0.get().is_some(), "the state was kept");
            s.zeroize();
            assert_eq!(
                (s.bytes, s.len),
                ([0; MAX_HASH_LEN], 0),
                "the bytes were erased"
            );
            assert!(s.hmac.0.get().is_none(), "the state was erased");
        }
    }
}
