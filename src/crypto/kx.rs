//! Key exchange for the `key_share` extension (RFC 8446 §4.2.8, §7.4).
//!
//! A named group is an ordered list of components. A pure group (x25519, secp256r1, secp384r1,
//! MLKEM768, ...) has one; a hybrid (draft-ietf-tls-ecdhe-mlkem) has two, whose shares and
//! shared secrets are concatenated in table order. Each component is either Diffie-Hellman
//! (both sides generate a key pair) or a KEM (the client sends an encapsulation key, the server
//! answers with a ciphertext). The client/server entry points do not know which.
//!
//! ```text
//! group               code    components (= concatenation order)  client  server  secret
//! x25519              0x001d  X25519                                  32      32      32
//! secp256r1           0x0017  P-256                                   65      65      32
//! secp384r1           0x0018  P-384                                   97      97      48
//! secp521r1           0x0019  P-521                                  133     133      66
//! x448                0x001e  X448                                    56      56      56
//! ffdhe2048           0x0100  ffdhe2048 (RFC 7919)                   256     256     256
//! ffdhe3072           0x0101  ffdhe3072                              384     384     384
//! ffdhe4096           0x0102  ffdhe4096                              512     512     512
//! ffdhe6144           0x0103  ffdhe6144                              768     768     768
//! ffdhe8192           0x0104  ffdhe8192                             1024    1024    1024
//! X25519MLKEM768      0x11ec  ML-KEM-768, X25519  (ML-KEM first!)   1216    1120      64
//! SecP256r1MLKEM768   0x11eb  P-256, ML-KEM-768                     1249    1153      64
//! SecP384r1MLKEM1024  0x11ed  P-384, ML-KEM-1024                    1665    1665      80
//! MLKEM512            0x0200  ML-KEM-512                             800     768      32
//! MLKEM768            0x0201  ML-KEM-768                            1184    1088      32
//! MLKEM1024           0x0202  ML-KEM-1024                           1568    1568      32
//! ```
//!
//! All private values are drawn from the injected [`RandomSource`], component by component in
//! table order: for X25519 and X448 the 32/56 drawn bytes *are* the private key, for
//! P-256/P-384/P-521 a 32/48/66-byte draw in [1, n) is the scalar (P-521's top 7 bits cleared),
//! an FFDHE exponent is one draw of 29 to 50 bytes (see [`super::ffdhe`]), and ML-KEM key
//! generation draws d then z (32 bytes each, FIPS 203 Algorithm 19) while encapsulation draws m
//! (32 bytes, Algorithm 20). RFC 8448 and the hybrid vectors can therefore inject their keys
//! and seeds.
//!
//! secp521r1, x448 and the FFDHE groups come last in [`supported_groups`], and no default
//! configuration offers or accepts them: they are opt-in (`groups` / `--groups`). The RFC 8734
//! brainpool groups are not implemented (docs/interop.md says why).

use core::fmt;

use p256::elliptic_curve::sec1::ToEncodedPoint;
use zeroize::{Zeroize, Zeroizing};

use crate::crypto::ffdhe::{self, Group as Ffdhe};
use crate::crypto::random::RandomSource;
use crate::crypto::x448;
use crate::messages::enums::{AlertDescription, NamedGroup};

/// Groups we can offer and accept, in our preference order.
pub fn supported_groups() -> &'static [NamedGroup] {
    &[
        NamedGroup::X25519,
        NamedGroup::secp256r1,
        NamedGroup::secp384r1,
        NamedGroup::X25519MLKEM768,
        NamedGroup::SecP256r1MLKEM768,
        NamedGroup::SecP384r1MLKEM1024,
        NamedGroup::MLKEM512,
        NamedGroup::MLKEM768,
        NamedGroup::MLKEM1024,
        NamedGroup::secp521r1,
        NamedGroup::X448,
        NamedGroup::ffdhe2048,
        NamedGroup::ffdhe3072,
        NamedGroup::ffdhe4096,
        NamedGroup::ffdhe6144,
        NamedGroup::ffdhe8192,
    ]
}

/// Whether [`KeyShareSecret::generate`] and [`server_respond`] accept `group`.
pub fn is_supported(group: NamedGroup) -> bool {
    components(group).is_some()
}

/// The components of a group, in the order their shares and secrets are concatenated.
fn components(group: NamedGroup) -> Option<&'static [Component]> {
    match group {
        NamedGroup::X25519 => Some(&[Component::X25519]),
        NamedGroup::secp256r1 => Some(&[Component::P256]),
        NamedGroup::secp384r1 => Some(&[Component::P384]),
        NamedGroup::secp521r1 => Some(&[Component::P521]),
        NamedGroup::X448 => Some(&[Component::X448]),
        NamedGroup::ffdhe2048 => Some(&[Component::Ffdhe(Ffdhe::Ffdhe2048)]),
        NamedGroup::ffdhe3072 => Some(&[Component::Ffdhe(Ffdhe::Ffdhe3072)]),
        NamedGroup::ffdhe4096 => Some(&[Component::Ffdhe(Ffdhe::Ffdhe4096)]),
        NamedGroup::ffdhe6144 => Some(&[Component::Ffdhe(Ffdhe::Ffdhe6144)]),
        NamedGroup::ffdhe8192 => Some(&[Component::Ffdhe(Ffdhe::Ffdhe8192)]),
        // draft-ietf-tls-ecdhe-mlkem §4: only X25519MLKEM768 puts ML-KEM first ("historical
        // reasons"); the NIST-curve hybrids put ECDH first so a FIPS-certified part leads.
        NamedGroup::X25519MLKEM768 => Some(&[Component::MlKem768, Component::X25519]),
        NamedGroup::SecP256r1MLKEM768 => Some(&[Component::P256, Component::MlKem768]),
        NamedGroup::SecP384r1MLKEM1024 => Some(&[Component::P384, Component::MlKem1024]),
        // draft-ietf-tls-mlkem: pure ML-KEM.
        NamedGroup::MLKEM512 => Some(&[Component::MlKem512]),
        NamedGroup::MLKEM768 => Some(&[Component::MlKem768]),
        NamedGroup::MLKEM1024 => Some(&[Component::MlKem1024]),
        _ => None,
    }
}

/// Why a key exchange failed. Each maps to one alert via [`KxError::alert`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KxError {
    /// The group is not one we implement.
    Unsupported(NamedGroup),
    /// The peer's key_exchange bytes are malformed: wrong length, not an uncompressed point,
    /// not on the curve (RFC 8446 §4.2.8.2), an FFDHE Y not left-padded to |p| or outside
    /// 1 < Y < p-1 (§4.2.8.1, RFC 7919 §5.1), an ML-KEM encapsulation key that fails the FIPS 203
    /// §7.2 check, or a ciphertext of the wrong length (draft-ietf-tls-ecdhe-mlkem §4.2).
    InvalidPeerShare(&'static str),
    /// X25519 or X448 produced the all-zero value: the peer sent a small-order point (RFC 8446
    /// §7.4.2, RFC 7748 §6).
    ZeroSharedSecret,
    /// ML-KEM encapsulation or decapsulation failed after its inputs were validated: our fault,
    /// not the peer's (draft-ietf-tls-ecdhe-mlkem §4.2: internal_error).
    KemFailure(&'static str),
}

impl KxError {
    /// The alert to send (RFC 8446 §6.2).
    pub fn alert(&self) -> AlertDescription {
        match self {
            // A group we did not offer, or a bad share, is an illegal parameter of the peer's
            // message (§4.2.8, §4.2.8.2, §7.4.2; draft-ietf-tls-ecdhe-mlkem §4.2, §4.3).
            KxError::Unsupported(_) | KxError::InvalidPeerShare(_) | KxError::ZeroSharedSecret => {
                AlertDescription::IllegalParameter
            }
            KxError::KemFailure(_) => AlertDescription::InternalError,
        }
    }
}

impl fmt::Display for KxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KxError::Unsupported(g) => write!(f, "unsupported key exchange group {g}"),
            KxError::InvalidPeerShare(why) => write!(f, "invalid peer key share: {why}"),
            KxError::ZeroSharedSecret => f.write_str("all-zero (EC)DHE shared secret"),
            KxError::KemFailure(why) => write!(f, "ML-KEM failure: {why}"),
        }
    }
}

impl std::error::Error for KxError {}

/// What one component of a group contributed, for the ledger.
#[derive(Clone, PartialEq, Eq)]
pub struct KxComponent {
    /// "X25519", "X448", "P-256", "P-384", "P-521", "ffdhe2048" … "ffdhe8192", "ML-KEM-512",
    /// "ML-KEM-768" or "ML-KEM-1024".
    pub name: &'static str,
    /// This component's slice of the client's key_exchange.
    pub client_share: Vec<u8>,
    /// This component's slice of the server's key_exchange.
    pub server_share: Vec<u8>,
    /// This component's shared secret (zeroized on drop).
    pub secret: Vec<u8>,
}

impl Drop for KxComponent {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

/// For the ledger: shares and secret as hex (the ledger shows secrets only when asked to).
impl serde::Serialize for KxComponent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("KxComponent", 4)?;
        st.serialize_field("name", self.name)?;
        st.serialize_field("client_share", &format!("{:?}", Hex(&self.client_share)))?;
        st.serialize_field("server_share", &format!("{:?}", Hex(&self.server_share)))?;
        st.serialize_field("secret", &format!("{:?}", Hex(&self.secret)))?;
        st.end()
    }
}

impl fmt::Debug for KxComponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KxComponent")
            .field("name", &self.name)
            .field("client_share", &Hex(&self.client_share))
            .field("server_share", &Hex(&self.server_share))
            .field("secret", &format_args!("<{} bytes>", self.secret.len()))
            .finish()
    }
}

/// The outcome of a key exchange: the (EC)DHE input to the key schedule (§7.1).
#[derive(Clone, PartialEq, Eq)]
pub struct KxResult {
    /// Concatenation of the component secrets (zeroized on drop).
    pub shared_secret: Vec<u8>,
    /// Per-component detail, in concatenation order.
    pub components: Vec<KxComponent>,
}

impl Drop for KxResult {
    fn drop(&mut self) {
        self.shared_secret.zeroize();
    }
}

impl fmt::Debug for KxResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KxResult")
            .field(
                "shared_secret",
                &format_args!("<{} bytes>", self.shared_secret.len()),
            )
            .field("components", &self.components)
            .finish()
    }
}

/// A client's pending key share: sent in the ClientHello, completed with the ServerHello's share.
pub struct KeyShareSecret {
    group: NamedGroup,
    public: Vec<u8>,
    private: Vec<ComponentPrivate>,
}

impl KeyShareSecret {
    /// Draws a fresh private key for `group` from `rng`.
    pub fn generate(group: NamedGroup, rng: &mut dyn RandomSource) -> Result<Self, KxError> {
        Self::generate_inner(group, rng, &mut None)
    }

    /// Shares for several groups, in order. With `reuse_x25519`, every X25519 component — the
    /// standalone group and the one inside X25519MLKEM768 — uses one scalar, drawn once: the
    /// ClientHello then carries the same 32-byte X25519 key twice and the client does one
    /// X25519 key generation instead of two (a common client optimisation).
    pub fn generate_many(
        groups: &[NamedGroup],
        rng: &mut dyn RandomSource,
        reuse_x25519: bool,
    ) -> Result<Vec<Self>, KxError> {
        let mut cache = None;
        groups
            .iter()
            .map(|g| {
                if reuse_x25519 {
                    Self::generate_inner(*g, rng, &mut cache)
                } else {
                    Self::generate(*g, rng)
                }
            })
            .collect()
    }

    fn generate_inner(
        group: NamedGroup,
        rng: &mut dyn RandomSource,
        x25519: &mut Option<(X25519Private, [u8; 32])>,
    ) -> Result<Self, KxError> {
        let comps = components(group).ok_or(KxError::Unsupported(group))?;
        let mut public = Vec::with_capacity(comps.iter().map(|c| c.client_share_len()).sum());
        let mut private = Vec::with_capacity(comps.len());
        for c in comps {
            let start = public.len();
            let priv_key = match (c, x25519.as_ref()) {
                // Reused: the key pair computed for the first X25519 component, no new scalar
                // multiplication.
                (Component::X25519, Some((secret, key))) => {
                    public.extend_from_slice(key);
                    ComponentPrivate::X25519(secret.clone())
                }
                _ => c.generate(rng, &mut public)?,
            };
            if let (Component::X25519, ComponentPrivate::X25519(secret)) = (c, &priv_key) {
                // X25519 generation appends exactly 32 bytes.
                if let (None, Ok(key)) = (x25519.as_ref(), <[u8; 32]>::try_from(&public[start..])) {
                    *x25519 = Some((secret.clone(), key));
                }
            }
            private.push(priv_key);
        }
        Ok(Self {
            group,
            public,
            private,
        })
    }

    /// The group this share belongs to.
    pub fn group(&self) -> NamedGroup {
        self.group
    }

    /// KeyShareEntry.key_exchange to send (§4.2.8).
    pub fn public(&self) -> &[u8] {
        &self.public
    }

    /// Client side: combine our private key(s) with the server's key_exchange.
    pub fn complete(self, server_share: &[u8]) -> Result<KxResult, KxError> {
        self.complete_inner(server_share, true)
    }

    /// [`complete`](Self::complete) without the per-component copies for the ledger
    /// (`components` is left empty): what a connection that observes no secrets needs.
    pub fn complete_secret_only(self, server_share: &[u8]) -> Result<KxResult, KxError> {
        self.complete_inner(server_share, false)
    }

    fn complete_inner(self, server_share: &[u8], detail: bool) -> Result<KxResult, KxError> {
        let comps = components(self.group).ok_or(KxError::Unsupported(self.group))?;
        let server_parts = split(server_share, comps, Component::server_share_len)?;
        let client_parts = split(&self.public, comps, Component::client_share_len)?;
        let mut out = KxResult::with_capacity(comps, detail);
        for (i, (c, p)) in comps.iter().zip(&self.private).enumerate() {
            let start = out.shared_secret.len();
            p.complete_into(server_parts[i], &mut out.shared_secret)?;
            out.detail(c.name(), client_parts[i], server_parts[i], start);
        }
        Ok(out)
    }
}

impl fmt::Debug for KeyShareSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyShareSecret")
            .field("group", &self.group)
            .field("public", &Hex(&self.public))
            .finish_non_exhaustive()
    }
}

/// Server side: validate the client's key_exchange for `group`, draw our own key (DH) or
/// encapsulate (KEM), and return our key_exchange with the shared secret.
pub fn server_respond(
    group: NamedGroup,
    client_share: &[u8],
    rng: &mut dyn RandomSource,
) -> Result<(Vec<u8>, KxResult), KxError> {
    server_respond_inner(group, client_share, rng, true)
}

/// [`server_respond`] without the per-component copies for the ledger (`components` is left
/// empty).
pub fn server_respond_secret_only(
    group: NamedGroup,
    client_share: &[u8],
    rng: &mut dyn RandomSource,
) -> Result<(Vec<u8>, KxResult), KxError> {
    server_respond_inner(group, client_share, rng, false)
}

fn server_respond_inner(
    group: NamedGroup,
    client_share: &[u8],
    rng: &mut dyn RandomSource,
    detail: bool,
) -> Result<(Vec<u8>, KxResult), KxError> {
    let comps = components(group).ok_or(KxError::Unsupported(group))?;
    let client_parts = split(client_share, comps, Component::client_share_len)?;
    // Validate every component before drawing anything, so a bad share costs no randomness and
    // the draw sequence of a replayed connection does not depend on peer garbage (a bad X25519
    // half of X25519MLKEM768 must not leave an ML-KEM encapsulation half done).
    for (c, cs) in comps.iter().zip(client_parts) {
        c.check_client_share(cs)?;
    }
    let mut server_share = Vec::with_capacity(comps.iter().map(|c| c.server_share_len()).sum());
    let mut out = KxResult::with_capacity(comps, detail);
    for (c, cs) in comps.iter().zip(client_parts) {
        let (share_start, secret_start) = (server_share.len(), out.shared_secret.len());
        c.respond_into(cs, rng, &mut server_share, &mut out.shared_secret)?;
        out.detail(c.name(), cs, &server_share[share_start..], secret_start);
    }
    Ok((server_share, out))
}

impl KxResult {
    fn with_capacity(comps: &[Component], detail: bool) -> KxResult {
        KxResult {
            shared_secret: Vec::with_capacity(comps.iter().map(|c| c.secret_len()).sum()),
            components: Vec::with_capacity(if detail { comps.len() } else { 0 }),
        }
    }

    /// Records the component whose secret starts at `secret_start`, if detail was asked for
    /// (`components` has capacity).
    fn detail(&mut self, name: &'static str, client: &[u8], server: &[u8], secret_start: usize) {
        if self.components.capacity() == 0 {
            return;
        }
        self.components.push(KxComponent {
            name,
            client_share: client.to_vec(),
            server_share: server.to_vec(),
            secret: self.shared_secret[secret_start..].to_vec(),
        });
    }
}

/// At most two components per group (the hybrids).
const MAX_COMPONENTS: usize = 2;

/// Splits a concatenated share into exactly the component lengths (no trailing bytes); entries
/// past `comps.len()` are empty.
fn split<'a>(
    mut share: &'a [u8],
    comps: &[Component],
    len_of: fn(Component) -> usize,
) -> Result<[&'a [u8]; MAX_COMPONENTS], KxError> {
    let mut parts: [&[u8]; MAX_COMPONENTS] = [&[]; MAX_COMPONENTS];
    for (part, c) in parts.iter_mut().zip(comps) {
        let len = len_of(*c);
        if share.len() < len {
            return Err(KxError::InvalidPeerShare(
                "key share too short for its group",
            ));
        }
        let (head, rest) = share.split_at(len);
        *part = head;
        share = rest;
    }
    if !share.is_empty() {
        return Err(KxError::InvalidPeerShare(
            "key share too long for its group",
        ));
    }
    Ok(parts)
}

/// One key-exchange primitive (a whole group, or one half of a hybrid).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Component {
    /// RFC 7748 X25519; shares are 32-byte u-coordinates.
    X25519,
    /// secp256r1 ECDH; shares are 65-byte uncompressed points (§4.2.8.2).
    P256,
    /// secp384r1 ECDH; shares are 97-byte uncompressed points (§4.2.8.2).
    P384,
    /// secp521r1 ECDH; shares are 133-byte uncompressed points (§4.2.8.2).
    P521,
    /// RFC 7748 X448; shares are 56-byte u-coordinates.
    X448,
    /// RFC 7919 finite-field DH; shares are Y left-padded to the size of p (§4.2.8.1).
    Ffdhe(Ffdhe),
    /// FIPS 203 ML-KEM-512: encapsulation key 800, ciphertext 768.
    MlKem512,
    /// FIPS 203 ML-KEM-768: encapsulation key 1184, ciphertext 1088.
    MlKem768,
    /// FIPS 203 ML-KEM-1024: encapsulation key 1568, ciphertext 1568.
    MlKem1024,
}

/// Draws allowed when an ECDH scalar candidate is zero or >= n (probability ~2^-32 for P-256,
/// ~2^-190 for P-384).
const MAX_SCALAR_DRAWS: usize = 8;

/// A private scalar from field-size draws (32 bytes for P-256, 48 for P-384), by rejection: a
/// value in [1, n) is used verbatim, so RFC 8448's and the hybrid vectors' keys can be injected.
/// A source that yields nothing valid in [`MAX_SCALAR_DRAWS`] draws (only a broken or constant
/// one does) gets a scalar derived from its last draw: a weak key, exactly as a constant source
/// gives a fixed X25519 key, but no hang.
fn draw_scalar<C>(rng: &mut dyn RandomSource) -> p256::elliptic_curve::NonZeroScalar<C>
where
    C: p256::elliptic_curve::CurveArithmetic,
{
    use p256::elliptic_curve::{FieldBytes, NonZeroScalar};
    use rand_core::SeedableRng;
    let mut repr = Zeroizing::new(FieldBytes::<C>::default());
    for _ in 0..MAX_SCALAR_DRAWS {
        rng.fill(repr.as_mut_slice());
        let candidate: Option<NonZeroScalar<C>> = NonZeroScalar::from_repr((*repr).clone()).into();
        if let Some(s) = candidate {
            return s;
        }
    }
    let mut seed = Zeroizing::new([0u8; 32]);
    let n = seed.len().min(repr.len());
    seed[..n].copy_from_slice(&repr[..n]);
    NonZeroScalar::random(&mut rand_chacha::ChaCha20Rng::from_seed(*seed))
}

/// A P-256 private scalar from 32-byte draws (see `draw_scalar`).
pub fn draw_p256_scalar(rng: &mut dyn RandomSource) -> p256::NonZeroScalar {
    draw_scalar::<p256::NistP256>(rng)
}

/// A P-384 private scalar from 48-byte draws (see `draw_scalar`).
pub fn draw_p384_scalar(rng: &mut dyn RandomSource) -> p384::NonZeroScalar {
    draw_scalar::<p384::NistP384>(rng)
}

/// A P-521 private scalar from 66-byte draws with the top 7 bits cleared: n is just below
/// 2^521, so a raw 528-bit draw would be rejected 127 times in 128, a 521-bit one almost
/// never. Otherwise as [`draw_scalar`] (a scalar below 2^521 is injected verbatim).
pub(crate) fn draw_p521_scalar(rng: &mut dyn RandomSource) -> p521::NonZeroScalar {
    use p256::elliptic_curve::{FieldBytes, NonZeroScalar};
    use rand_core::SeedableRng;
    let mut repr = Zeroizing::new(FieldBytes::<p521::NistP521>::default());
    for _ in 0..MAX_SCALAR_DRAWS {
        rng.fill(repr.as_mut_slice());
        repr[0] &= 0x01;
        let candidate: Option<NonZeroScalar<p521::NistP521>> =
            NonZeroScalar::from_repr(*repr).into();
        if let Some(s) = candidate {
            return s;
        }
    }
    let mut seed = Zeroizing::new([0u8; 32]);
    seed.copy_from_slice(&repr[repr.len() - 32..]);
    NonZeroScalar::random(&mut rand_chacha::ChaCha20Rng::from_seed(*seed))
}

impl Component {
    fn name(self) -> &'static str {
        match self {
            Component::X25519 => "X25519",
            Component::P256 => "P-256",
            Component::P384 => "P-384",
            Component::P521 => "P-521",
            Component::X448 => "X448",
            Component::Ffdhe(g) => g.name(),
            Component::MlKem512 => "ML-KEM-512",
            Component::MlKem768 => "ML-KEM-768",
            Component::MlKem1024 => "ML-KEM-1024",
        }
    }

    /// A DH public value, or a KEM encapsulation key (384·k + 32, FIPS 203 §8 table 3).
    fn client_share_len(self) -> usize {
        match self {
            Component::X25519 => 32,
            Component::P256 => 65,
            Component::P384 => 97,
            Component::P521 => 133,
            Component::X448 => x448::LEN,
            Component::Ffdhe(g) => g.p_len(),
            Component::MlKem512 => 800,
            Component::MlKem768 => 1184,
            Component::MlKem1024 => 1568,
        }
    }

    /// Equal to the client's for DH; a KEM ciphertext (32·(du·k + dv)) otherwise.
    fn server_share_len(self) -> usize {
        match self {
            Component::MlKem512 => 768,
            Component::MlKem768 => 1088,
            Component::MlKem1024 => 1568,
            dh => dh.client_share_len(),
        }
    }

    /// Server side: the checks on the client's share that need no private key.
    fn check_client_share(self, share: &[u8]) -> Result<(), KxError> {
        match self {
            Component::X25519 => x25519_peer(share),
            Component::P256 => p256_peer(share).map(drop),
            Component::P384 => p384_peer(share).map(drop),
            Component::P521 => p521_peer(share).map(drop),
            Component::X448 => x448_peer(share).map(drop),
            Component::Ffdhe(g) => ffdhe::check_peer(g, share).map_err(KxError::InvalidPeerShare),
            Component::MlKem512 | Component::MlKem768 | Component::MlKem1024 => {
                mlkem_check_encapsulation_key(self.client_share_len(), share)
            }
        }
    }

    /// Shared secret length: 32 bytes, except P-384's and P-521's x-coordinates (48, 66),
    /// X448's 56 and FFDHE's Z, as long as p (§7.4.1).
    fn secret_len(self) -> usize {
        match self {
            Component::P384 => 48,
            Component::P521 => 66,
            Component::X448 => x448::LEN,
            Component::Ffdhe(g) => g.p_len(),
            _ => 32,
        }
    }

    /// Key generation for the side that speaks first (client; server too for DH): appends the
    /// public share to `public`.
    fn generate(
        self,
        rng: &mut dyn RandomSource,
        public: &mut Vec<u8>,
    ) -> Result<ComponentPrivate, KxError> {
        match self {
            Component::X25519 => {
                let mut bytes = Zeroizing::new([0u8; 32]);
                rng.fill(&mut bytes[..]);
                // Clamping happens inside the scalar multiplication (RFC 7748 §5), so the drawn
                // bytes are used as-is and an RFC 8448 private key can be injected verbatim.
                let secret = X25519Private::from_bytes(&bytes);
                public.extend_from_slice(&secret.public());
                Ok(ComponentPrivate::X25519(secret))
            }
            Component::P256 => {
                let secret = p256::SecretKey::from(draw_p256_scalar(rng));
                public.extend_from_slice(secret.public_key().to_encoded_point(false).as_bytes());
                Ok(ComponentPrivate::P256(secret))
            }
            Component::P384 => {
                let secret = p384::SecretKey::from(draw_p384_scalar(rng));
                public.extend_from_slice(secret.public_key().to_encoded_point(false).as_bytes());
                Ok(ComponentPrivate::P384(secret))
            }
            Component::P521 => {
                let secret = p521::SecretKey::from(draw_p521_scalar(rng));
                public.extend_from_slice(secret.public_key().to_encoded_point(false).as_bytes());
                Ok(ComponentPrivate::P521(secret))
            }
            Component::X448 => {
                // As for X25519: the drawn bytes are the key, clamped inside X448 (RFC 7748 §5).
                let mut secret = Zeroizing::new([0u8; x448::LEN]);
                rng.fill(&mut secret[..]);
                public.extend_from_slice(&x448::public(&secret));
                Ok(ComponentPrivate::X448(secret))
            }
            Component::Ffdhe(g) => Ok(ComponentPrivate::Ffdhe(ffdhe::generate(g, rng, public))),
            Component::MlKem512 | Component::MlKem768 | Component::MlKem1024 => {
                mlkem_generate(self, rng, public)
            }
        }
    }

    /// Server side for one component: appends our share to `share` and the shared secret to
    /// `secret`. DH draws a key pair; a KEM draws m and encapsulates to the client's key.
    fn respond_into(
        self,
        client_share: &[u8],
        rng: &mut dyn RandomSource,
        share: &mut Vec<u8>,
        secret: &mut Vec<u8>,
    ) -> Result<(), KxError> {
        // Validate the peer's share before drawing anything (see `server_respond`).
        self.check_client_share(client_share)?;
        match self {
            Component::MlKem512 | Component::MlKem768 | Component::MlKem1024 => {
                mlkem_encapsulate(self, client_share, rng, share, secret)
            }
            Component::X25519
            | Component::P256
            | Component::P384
            | Component::P521
            | Component::X448
            | Component::Ffdhe(_) => {
                let private = self.generate(rng, share)?;
                private.complete_into(client_share, secret)
            }
        }
    }
}

/// A component's private state held between ClientHello and ServerHello (zeroized on drop by
/// the underlying types).
enum ComponentPrivate {
    X25519(X25519Private),
    P256(p256::SecretKey),
    P384(p384::SecretKey),
    P521(p521::SecretKey),
    X448(Zeroizing<[u8; x448::LEN]>),
    Ffdhe(ffdhe::Private),
    MlKem(MlKemPrivate),
}

impl ComponentPrivate {
    /// DH with the peer's share, or decapsulation of its ciphertext (validated here); appends
    /// the shared secret to `out`.
    fn complete_into(&self, peer: &[u8], out: &mut Vec<u8>) -> Result<(), KxError> {
        match self {
            ComponentPrivate::X25519(secret) => {
                let peer: &[u8; 32] = peer
                    .try_into()
                    .map_err(|_| KxError::InvalidPeerShare("x25519 share must be 32 bytes"))?;
                // §7.4.2 / RFC 7748 §6: abort on the all-zero output (checked in constant time).
                let shared = secret
                    .diffie_hellman(peer)
                    .ok_or(KxError::ZeroSharedSecret)?;
                out.extend_from_slice(&shared[..]);
            }
            ComponentPrivate::P256(secret) => {
                let peer = p256_peer(peer)?;
                let shared =
                    p256::ecdh::diffie_hellman(secret.to_nonzero_scalar(), peer.as_affine());
                // §7.4.2: the x-coordinate, full 32 bytes (leading zeros kept).
                out.extend_from_slice(shared.raw_secret_bytes());
            }
            ComponentPrivate::P384(secret) => {
                let peer = p384_peer(peer)?;
                let shared =
                    p384::ecdh::diffie_hellman(secret.to_nonzero_scalar(), peer.as_affine());
                // §7.4.2: the x-coordinate, full 48 bytes.
                out.extend_from_slice(shared.raw_secret_bytes());
            }
            ComponentPrivate::P521(secret) => {
                let peer = p521_peer(peer)?;
                let shared =
                    p521::ecdh::diffie_hellman(secret.to_nonzero_scalar(), peer.as_affine());
                // §7.4.2: the x-coordinate, full 66 bytes (leading zeros kept).
                out.extend_from_slice(shared.raw_secret_bytes());
            }
            ComponentPrivate::X448(secret) => {
                let peer = x448_peer(peer)?;
                // §7.4.2 / RFC 7748 §6.2: abort on the all-zero output (checked in constant time).
                let shared = x448::diffie_hellman(secret, peer).ok_or(KxError::ZeroSharedSecret)?;
                out.extend_from_slice(&shared[..]);
            }
            ComponentPrivate::Ffdhe(x) => {
                // §7.4.1: Z left-padded to the size of p.
                x.shared_into(peer, out)
                    .map_err(KxError::InvalidPeerShare)?;
            }
            ComponentPrivate::MlKem(dk) => dk.decapsulate_into(peer, out)?,
        }
        Ok(())
    }
}

/// An X25519 private key: the 32 drawn bytes. The scalar multiplications run on `x25519-dalek`
/// by default, on aws-lc with the `aws-lc-kx` feature (same bytes, ~2× faster here).
#[derive(Clone)]
struct X25519Private {
    #[cfg(not(feature = "aws-lc-kx"))]
    secret: x25519_dalek::StaticSecret,
    #[cfg(feature = "aws-lc-kx")]
    secret: Zeroizing<[u8; 32]>,
}

impl X25519Private {
    fn from_bytes(bytes: &[u8; 32]) -> Self {
        #[cfg(not(feature = "aws-lc-kx"))]
        let secret = x25519_dalek::StaticSecret::from(*bytes);
        #[cfg(feature = "aws-lc-kx")]
        let secret = Zeroizing::new(*bytes);
        X25519Private { secret }
    }

    fn public(&self) -> [u8; 32] {
        #[cfg(not(feature = "aws-lc-kx"))]
        return x25519_dalek::PublicKey::from(&self.secret).to_bytes();
        #[cfg(feature = "aws-lc-kx")]
        return super::awslc::x25519_public(&self.secret);
    }

    /// The shared secret, or `None` if it is all zeros (a low-order peer point).
    fn diffie_hellman(&self, peer: &[u8; 32]) -> Option<Zeroizing<[u8; 32]>> {
        #[cfg(not(feature = "aws-lc-kx"))]
        {
            let shared = self
                .secret
                .diffie_hellman(&x25519_dalek::PublicKey::from(*peer));
            shared
                .was_contributory()
                .then(|| Zeroizing::new(*shared.as_bytes()))
        }
        #[cfg(feature = "aws-lc-kx")]
        {
            super::awslc::x25519(&self.secret, peer)
        }
    }
}

/// An X25519 share is any 32 bytes (RFC 7748 §5: the top bit is masked when decoding).
fn x25519_peer(share: &[u8]) -> Result<(), KxError> {
    if share.len() != 32 {
        return Err(KxError::InvalidPeerShare("x25519 share must be 32 bytes"));
    }
    Ok(())
}

/// §4.2.8.2: UncompressedPointRepresentation (0x04 || X || Y), on the curve, not the identity.
fn p256_peer(share: &[u8]) -> Result<p256::PublicKey, KxError> {
    if share.len() != 65 || share[0] != 0x04 {
        return Err(KxError::InvalidPeerShare(
            "secp256r1 share must be a 65-byte uncompressed point",
        ));
    }
    p256::PublicKey::from_sec1_bytes(share)
        .map_err(|_| KxError::InvalidPeerShare("secp256r1 point is not on the curve"))
}

/// §4.2.8.2 for secp384r1: 0x04 || X (48) || Y (48), on the curve.
fn p384_peer(share: &[u8]) -> Result<p384::PublicKey, KxError> {
    if share.len() != 97 || share[0] != 0x04 {
        return Err(KxError::InvalidPeerShare(
            "secp384r1 share must be a 97-byte uncompressed point",
        ));
    }
    p384::PublicKey::from_sec1_bytes(share)
        .map_err(|_| KxError::InvalidPeerShare("secp384r1 point is not on the curve"))
}

/// §4.2.8.2 for secp521r1: 0x04 || X (66) || Y (66), on the curve.
fn p521_peer(share: &[u8]) -> Result<p521::PublicKey, KxError> {
    if share.len() != 133 || share[0] != 0x04 {
        return Err(KxError::InvalidPeerShare(
            "secp521r1 share must be a 133-byte uncompressed point",
        ));
    }
    p521::PublicKey::from_sec1_bytes(share)
        .map_err(|_| KxError::InvalidPeerShare("secp521r1 point is not on the curve"))
}

/// An X448 share is any 56 bytes (RFC 7748 §5: non-canonical u values are reduced); a
/// low-order one is caught by the all-zero check after the multiplication.
fn x448_peer(share: &[u8]) -> Result<&[u8; x448::LEN], KxError> {
    share
        .try_into()
        .map_err(|_| KxError::InvalidPeerShare("x448 share must be 56 bytes"))
}

// ---------------------------------------------------------------------------------------------
// ML-KEM (FIPS 203) on the `ml-kem` crate's deterministic entry points: the seeds come from our
// RandomSource, one `fill` each, so a connection replays byte for byte.

/// The q of FIPS 203 (§2.4): every coefficient of an encapsulation key lies in [0, q).
const MLKEM_Q: u16 = 3329;

#[cfg(not(feature = "aws-lc-kx"))]
type DecapsulationKey<K> = <K as ml_kem::KemCore>::DecapsulationKey;

/// FIPS 203 §7.2 encapsulation-key check, which the server MUST run (draft-ietf-tls-ecdhe-mlkem
/// §4.2): (1) type check, the length is 384·k + 32; (2) modulus check,
/// ByteEncode12(ByteDecode12(ek[0 : 384k])) = ek[0 : 384k], i.e. every 12-bit coefficient is
/// below q. ByteDecode12 reduces mod q, so without this check a key with a coefficient >= q would
/// silently be used as a different key. The trailing 32 bytes are the seed ρ (no constraint).
/// The ml-kem 0.2 crate does not check, so we do; the key is public, so no constant time.
fn mlkem_check_encapsulation_key(len: usize, ek: &[u8]) -> Result<(), KxError> {
    if ek.len() != len {
        return Err(KxError::InvalidPeerShare(
            "ML-KEM encapsulation key has the wrong length",
        ));
    }
    // Two 12-bit little-endian coefficients per 3 bytes (Algorithm 6 with d = 12).
    for t in ek[..len - 32].chunks_exact(3) {
        let c0 = u16::from(t[0]) | (u16::from(t[1] & 0x0f) << 8);
        let c1 = u16::from(t[1] >> 4) | (u16::from(t[2]) << 4);
        if c0 >= MLKEM_Q || c1 >= MLKEM_Q {
            return Err(KxError::InvalidPeerShare(
                "ML-KEM encapsulation key fails the FIPS 203 modulus check",
            ));
        }
    }
    Ok(())
}

/// An ML-KEM decapsulation key: the `ml-kem` crate's by default, aws-lc's with `aws-lc-kx`.
enum MlKemPrivate {
    // Boxed: the expanded decapsulation keys are kilobytes.
    #[cfg(not(feature = "aws-lc-kx"))]
    K512(Box<DecapsulationKey<ml_kem::MlKem512>>),
    #[cfg(not(feature = "aws-lc-kx"))]
    K768(Box<DecapsulationKey<ml_kem::MlKem768>>),
    #[cfg(not(feature = "aws-lc-kx"))]
    K1024(Box<DecapsulationKey<ml_kem::MlKem1024>>),
    #[cfg(feature = "aws-lc-kx")]
    AwsLc(super::awslc::MlKemPrivate),
}

#[cfg(feature = "aws-lc-kx")]
fn awslc_kem(c: Component) -> super::awslc::MlKem {
    match c {
        Component::MlKem512 => super::awslc::MlKem::K512,
        Component::MlKem768 => super::awslc::MlKem::K768,
        _ => super::awslc::MlKem::K1024,
    }
}

/// ML-KEM.KeyGen (FIPS 203 Algorithm 19): draws d, then z, 32 bytes each.
fn mlkem_generate(
    c: Component,
    rng: &mut dyn RandomSource,
    public: &mut Vec<u8>,
) -> Result<ComponentPrivate, KxError> {
    let mut d = Zeroizing::new([0u8; 32]);
    let mut z = Zeroizing::new([0u8; 32]);
    rng.fill(&mut d[..]);
    rng.fill(&mut z[..]);
    #[cfg(not(feature = "aws-lc-kx"))]
    {
        fn gen<K: ml_kem::KemCore>(
            d: &[u8; 32],
            z: &[u8; 32],
            public: &mut Vec<u8>,
        ) -> Box<DecapsulationKey<K>> {
            use ml_kem::EncodedSizeUser;
            let (dk, ek) =
                K::generate_deterministic(&ml_kem::B32::from(*d), &ml_kem::B32::from(*z));
            public.extend_from_slice(&ek.as_bytes());
            Box::new(dk)
        }
        let dk = match c {
            Component::MlKem512 => MlKemPrivate::K512(gen::<ml_kem::MlKem512>(&d, &z, public)),
            Component::MlKem768 => MlKemPrivate::K768(gen::<ml_kem::MlKem768>(&d, &z, public)),
            _ => MlKemPrivate::K1024(gen::<ml_kem::MlKem1024>(&d, &z, public)),
        };
        Ok(ComponentPrivate::MlKem(dk))
    }
    #[cfg(feature = "aws-lc-kx")]
    {
        let dk = super::awslc::mlkem_generate(awslc_kem(c), &d, &z, public)
            .ok_or(KxError::KemFailure("key generation failed"))?;
        Ok(ComponentPrivate::MlKem(MlKemPrivate::AwsLc(dk)))
    }
}

/// ML-KEM.Encaps (FIPS 203 Algorithm 20) to a key that passed
/// [`mlkem_check_encapsulation_key`]: draws m (32 bytes). Appends the ciphertext to `ct` and
/// the shared secret to `ss`.
fn mlkem_encapsulate(
    c: Component,
    ek: &[u8],
    rng: &mut dyn RandomSource,
    ct: &mut Vec<u8>,
    ss: &mut Vec<u8>,
) -> Result<(), KxError> {
    let mut m = Zeroizing::new([0u8; 32]);
    rng.fill(&mut m[..]);
    #[cfg(not(feature = "aws-lc-kx"))]
    {
        fn encaps<K: ml_kem::KemCore>(
            ek: &[u8],
            m: &[u8; 32],
            ct_out: &mut Vec<u8>,
            ss_out: &mut Vec<u8>,
        ) -> Result<(), KxError> {
            use ml_kem::{EncapsulateDeterministic, EncodedSizeUser};
            let encoded = ml_kem::Encoded::<K::EncapsulationKey>::try_from(ek).map_err(|_| {
                KxError::InvalidPeerShare("ML-KEM encapsulation key has the wrong length")
            })?;
            let ek = K::EncapsulationKey::from_bytes(&encoded);
            let (ct, mut ss) = ek
                .encapsulate_deterministic(&ml_kem::B32::from(*m))
                .map_err(|_| KxError::KemFailure("encapsulation failed"))?;
            ct_out.extend_from_slice(&ct);
            ss_out.extend_from_slice(&ss);
            ss.as_mut_slice().zeroize();
            Ok(())
        }
        match c {
            Component::MlKem512 => encaps::<ml_kem::MlKem512>(ek, &m, ct, ss),
            Component::MlKem768 => encaps::<ml_kem::MlKem768>(ek, &m, ct, ss),
            _ => encaps::<ml_kem::MlKem1024>(ek, &m, ct, ss),
        }
    }
    #[cfg(feature = "aws-lc-kx")]
    {
        super::awslc::mlkem_encapsulate(awslc_kem(c), ek, &m, ct, ss)
            .ok_or(KxError::KemFailure("encapsulation failed"))
    }
}

impl MlKemPrivate {
    /// The FIPS 203 encoding of the decapsulation key (tests compare it with the vectors').
    #[cfg(test)]
    fn encoded(&self) -> Vec<u8> {
        #[cfg(not(feature = "aws-lc-kx"))]
        {
            use ml_kem::EncodedSizeUser;
            match self {
                MlKemPrivate::K512(dk) => dk.as_bytes().to_vec(),
                MlKemPrivate::K768(dk) => dk.as_bytes().to_vec(),
                MlKemPrivate::K1024(dk) => dk.as_bytes().to_vec(),
            }
        }
        #[cfg(feature = "aws-lc-kx")]
        {
            let MlKemPrivate::AwsLc(dk) = self;
            dk.encoded()
        }
    }

    /// ML-KEM.Decaps (FIPS 203 Algorithm 21). The client MUST check the ciphertext length
    /// (draft-ietf-tls-ecdhe-mlkem §4.2: illegal_parameter); a wrong ciphertext of the right
    /// length yields the implicit-rejection key and the handshake then fails at Finished.
    fn decapsulate_into(&self, ct: &[u8], out: &mut Vec<u8>) -> Result<(), KxError> {
        #[cfg(not(feature = "aws-lc-kx"))]
        {
            fn decaps<K: ml_kem::KemCore>(
                dk: &DecapsulationKey<K>,
                ct: &[u8],
                out: &mut Vec<u8>,
            ) -> Result<(), KxError> {
                use ml_kem::kem::Decapsulate;
                let ct = ml_kem::Ciphertext::<K>::try_from(ct).map_err(|_| {
                    KxError::InvalidPeerShare("ML-KEM ciphertext has the wrong length")
                })?;
                let mut ss = dk
                    .decapsulate(&ct)
                    .map_err(|_| KxError::KemFailure("decapsulation failed"))?;
                out.extend_from_slice(&ss);
                ss.as_mut_slice().zeroize();
                Ok(())
            }
            match self {
                MlKemPrivate::K512(dk) => decaps::<ml_kem::MlKem512>(dk, ct, out),
                MlKemPrivate::K768(dk) => decaps::<ml_kem::MlKem768>(dk, ct, out),
                MlKemPrivate::K1024(dk) => decaps::<ml_kem::MlKem1024>(dk, ct, out),
            }
        }
        #[cfg(feature = "aws-lc-kx")]
        {
            let MlKemPrivate::AwsLc(dk) = self;
            if ct.len() != dk.ciphertext_len() {
                return Err(KxError::InvalidPeerShare(
                    "ML-KEM ciphertext has the wrong length",
                ));
            }
            dk.decapsulate_into(ct, out)
                .ok_or(KxError::KemFailure("decapsulation failed"))
        }
    }
}

/// Static-key Diffie-Hellman for HPKE's DHKEM (RFC 9180 §4.1), on the same backends as the
/// key shares: the private key is given, not drawn (HPKE derives it, §7.1.3).
pub(crate) mod static_dh {
    use super::*;

    /// X25519 public key of `sk` (RFC 7748 §6.1).
    pub(crate) fn x25519_public(sk: &[u8; 32]) -> [u8; 32] {
        X25519Private::from_bytes(sk).public()
    }

    /// X25519(sk, pk); the all-zero output is an error (RFC 9180 §7.1.4, RFC 7748 §6.1).
    pub(crate) fn x25519(sk: &[u8; 32], pk: &[u8]) -> Result<Zeroizing<[u8; 32]>, KxError> {
        x25519_peer(pk)?;
        let mut peer = [0u8; 32];
        peer.copy_from_slice(pk);
        X25519Private::from_bytes(sk)
            .diffie_hellman(&peer)
            .ok_or(KxError::ZeroSharedSecret)
    }

    /// The P-256 scalar of `sk`, which must be in [1, n) (RFC 9180 §7.1.2).
    fn p256_secret(sk: &[u8; 32]) -> Result<p256::SecretKey, KxError> {
        p256::SecretKey::from_bytes(sk.into())
            .map_err(|_| KxError::InvalidPeerShare("P-256 private key not in [1, n)"))
    }

    /// Uncompressed P-256 public key of `sk` (SEC1, RFC 9180 §7.1.1).
    pub(crate) fn p256_public(sk: &[u8; 32]) -> Result<[u8; 65], KxError> {
        let point = p256_secret(sk)?.public_key().to_encoded_point(false);
        let mut out = [0u8; 65];
        out.copy_from_slice(point.as_bytes());
        Ok(out)
    }

    /// The x-coordinate of sk·pk, with `pk` validated as a key share is (RFC 9180 §7.1.4).
    pub(crate) fn p256(sk: &[u8; 32], pk: &[u8]) -> Result<Zeroizing<[u8; 32]>, KxError> {
        let peer = p256_peer(pk)?;
        let shared =
            p256::ecdh::diffie_hellman(p256_secret(sk)?.to_nonzero_scalar(), peer.as_affine());
        let mut out = Zeroizing::new([0u8; 32]);
        out.copy_from_slice(shared.raw_secret_bytes());
        Ok(out)
    }
}

struct Hex<'a>(&'a [u8]);

impl fmt::Debug for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "kx_pq_tests.rs"]
mod pq_tests;

#[cfg(test)]
#[path = "kx_groups_tests.rs"]
mod groups_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::random::{ScriptedRandom, SeededRandom};

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    // RFC 8448 §3 (simple 1-RTT handshake).
    const S3_CLIENT_PRIV: &str = "49af42ba7f7994852d713ef2784bcbcaa7911de26adc5642cb634540e7ea5005";
    const S3_CLIENT_PUB: &str = "99381de560e4bd43d23d8e435a7dbafeb3c06e51c13cae4d5413691e529aaf2c";
    const S3_SERVER_PRIV: &str = "b1580eeadf6dd589b8ef4f2d5652578cc810e9980191ec8d058308cea216a21e";
    const S3_SERVER_PUB: &str = "c9828876112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f";
    const S3_SHARED: &str = "8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d";

    // RFC 8448 §5 (HelloRetryRequest to secp256r1).
    const S5_CLIENT_PRIV: &str = "ab5473467e19346ceb0a0414e41da21d4d2445bc3025afe97c4e8dc8d513da39";
    const S5_CLIENT_PUB: &str = "04a6da7392ec591e17abfd535964b99894d13befb221b3def2ebe3830eac8f0151812677c4d6d2237e85cf01d6910cfb83954e76ba7352830534159897e8065780";
    const S5_SERVER_PRIV: &str = "8c510601f9765bfb8ed693449a48989859b5cfa879cb9f5443c41c5ff10634ed";
    const S5_SERVER_PUB: &str = "04583e054b7a66672ae020ad9d2686fcc85b5ad41a134a0f03ee72b893052bd85b4c8de6776f5b04ac07d83540eab3e3d9c547bc6528c4317d294686093a6cad7d";
    const S5_SHARED: &str = "c142ce13ca11b5c2233652e63ad3d97844f1621fbfb9de69d547dc8fedeabeb4";

    #[test]
    fn rfc8448_s3_x25519_both_sides() {
        let mut crng = ScriptedRandom::new(vec![h(S3_CLIENT_PRIV)], 0);
        let client = KeyShareSecret::generate(NamedGroup::X25519, &mut crng).unwrap();
        assert_eq!(client.public(), &h(S3_CLIENT_PUB)[..]);
        assert_eq!(client.group(), NamedGroup::X25519);

        let mut srng = ScriptedRandom::new(vec![h(S3_SERVER_PRIV)], 0);
        let (sshare, sres) =
            server_respond(NamedGroup::X25519, client.public(), &mut srng).unwrap();
        assert_eq!(sshare, h(S3_SERVER_PUB));
        assert_eq!(sres.shared_secret, h(S3_SHARED));

        let cres = client.complete(&sshare).unwrap();
        assert_eq!(cres.shared_secret, h(S3_SHARED));
        assert_eq!(cres.components.len(), 1);
        assert_eq!(cres.components[0].name, "X25519");
        assert_eq!(cres.components[0].client_share, h(S3_CLIENT_PUB));
        assert_eq!(cres.components[0].server_share, h(S3_SERVER_PUB));
        assert!(crng.mismatches().is_empty() && srng.mismatches().is_empty());
        assert_eq!((crng.remaining(), srng.remaining()), (0, 0));
    }

    #[test]
    fn rfc8448_s5_p256_both_sides() {
        let mut crng = ScriptedRandom::new(vec![h(S5_CLIENT_PRIV)], 0);
        let client = KeyShareSecret::generate(NamedGroup::secp256r1, &mut crng).unwrap();
        assert_eq!(client.public(), &h(S5_CLIENT_PUB)[..]);

        let mut srng = ScriptedRandom::new(vec![h(S5_SERVER_PRIV)], 0);
        let (sshare, sres) =
            server_respond(NamedGroup::secp256r1, client.public(), &mut srng).unwrap();
        assert_eq!(sshare, h(S5_SERVER_PUB));
        assert_eq!(sres.shared_secret, h(S5_SHARED));
        assert_eq!(
            client.complete(&sshare).unwrap().shared_secret,
            h(S5_SHARED)
        );
    }

    #[test]
    fn seeded_generation_is_reproducible() {
        for &g in supported_groups() {
            let a = KeyShareSecret::generate(g, &mut SeededRandom::from_seed(3)).unwrap();
            let b = KeyShareSecret::generate(g, &mut SeededRandom::from_seed(3)).unwrap();
            let c = KeyShareSecret::generate(g, &mut SeededRandom::from_seed(4)).unwrap();
            assert_eq!(a.public(), b.public());
            assert_ne!(a.public(), c.public());
            let (ss, sres) =
                server_respond(g, a.public(), &mut SeededRandom::from_seed(5)).unwrap();
            let cres = a.complete(&ss).unwrap();
            assert_eq!(cres.shared_secret, sres.shared_secret);
        }
    }

    #[test]
    fn x25519_invalid_shares_rejected() {
        let mut rng = SeededRandom::from_seed(1);
        for bad in [&[][..], &[9u8; 31][..], &[9u8; 33][..]] {
            let err = server_respond(NamedGroup::X25519, bad, &mut rng).unwrap_err();
            assert!(matches!(err, KxError::InvalidPeerShare(_)), "{err:?}");
            assert_eq!(err.alert(), AlertDescription::IllegalParameter);
            let k = KeyShareSecret::generate(NamedGroup::X25519, &mut rng).unwrap();
            assert!(matches!(k.complete(bad), Err(KxError::InvalidPeerShare(_))));
        }
        // Small-order points give the all-zero secret (RFC 7748 §7): 0, 1, and the order-8 point.
        let mut one = [0u8; 32];
        one[0] = 1;
        let order8 = h("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800");
        for bad in [vec![0u8; 32], one.to_vec(), order8] {
            let err = server_respond(NamedGroup::X25519, &bad, &mut rng).unwrap_err();
            assert_eq!(err, KxError::ZeroSharedSecret);
            assert_eq!(err.alert(), AlertDescription::IllegalParameter);
            let k = KeyShareSecret::generate(NamedGroup::X25519, &mut rng).unwrap();
            assert_eq!(k.complete(&bad).unwrap_err(), KxError::ZeroSharedSecret);
        }
    }

    #[test]
    fn p256_invalid_shares_rejected() {
        let mut rng = SeededRandom::from_seed(1);
        let good = h(S5_SERVER_PUB);
        let mut off_curve = good.clone();
        off_curve[64] ^= 1;
        let mut compressed = vec![0x02];
        compressed.extend_from_slice(&good[1..33]);
        let mut bad_prefix = good.clone();
        bad_prefix[0] = 0x06;
        let mut identity_ish = vec![0x04];
        identity_ish.extend_from_slice(&[0u8; 64]);
        for bad in [
            vec![],
            vec![0x04],
            good[..64].to_vec(),
            [good.clone(), vec![0]].concat(),
            off_curve,
            compressed,
            bad_prefix,
            identity_ish,
        ] {
            let err = server_respond(NamedGroup::secp256r1, &bad, &mut rng).unwrap_err();
            assert!(matches!(err, KxError::InvalidPeerShare(_)), "{err:?}");
            let k = KeyShareSecret::generate(NamedGroup::secp256r1, &mut rng).unwrap();
            assert!(matches!(
                k.complete(&bad),
                Err(KxError::InvalidPeerShare(_))
            ));
        }
    }

    #[test]
    fn unsupported_group_and_constant_rng() {
        let mut rng = SeededRandom::from_seed(1);
        for g in [
            NamedGroup::brainpoolP256r1tls13,
            NamedGroup::Unknown(0x1234),
        ] {
            assert!(!is_supported(g));
            assert_eq!(
                KeyShareSecret::generate(g, &mut rng).unwrap_err(),
                KxError::Unsupported(g)
            );
            let err = server_respond(g, &[1; 32], &mut rng).unwrap_err();
            assert_eq!(err.alert(), AlertDescription::IllegalParameter);
        }
        struct Constant(u8);
        impl RandomSource for Constant {
            fn fill(&mut self, buf: &mut [u8]) {
                buf.fill(self.0)
            }
        }
        // A broken source still yields a usable (weak) key rather than hanging or failing.
        for byte in [0x00, 0xff] {
            let k = KeyShareSecret::generate(NamedGroup::secp256r1, &mut Constant(byte)).unwrap();
            let (ss, _) = server_respond(NamedGroup::secp256r1, k.public(), &mut rng).unwrap();
            k.complete(&ss).unwrap();
        }
    }

    #[test]
    fn component_serializes_as_hex() {
        let mut rng = ScriptedRandom::new(vec![h(S3_CLIENT_PRIV)], 0);
        let k = KeyShareSecret::generate(NamedGroup::X25519, &mut rng).unwrap();
        let r = k.complete(&h(S3_SERVER_PUB)).unwrap();
        let v = serde_json::to_value(&r.components[0]).unwrap();
        assert_eq!(v["name"], "X25519");
        assert_eq!(v["client_share"], S3_CLIENT_PUB);
        assert_eq!(v["server_share"], S3_SERVER_PUB);
        assert_eq!(v["secret"], S3_SHARED);
    }

    #[test]
    fn debug_redacts_secrets() {
        let k = KeyShareSecret::generate(
            NamedGroup::X25519,
            &mut ScriptedRandom::new(vec![h(S3_CLIENT_PRIV)], 0),
        )
        .unwrap();
        let dbg = format!("{k:?}");
        assert!(dbg.contains(S3_CLIENT_PUB) && !dbg.contains(S3_CLIENT_PRIV));
        let r = k.complete(&h(S3_SERVER_PUB)).unwrap();
        assert!(!format!("{r:?}").contains(S3_SHARED));
    }
}
