//! Finite-field Diffie-Hellman over the RFC 7919 groups ffdhe2048 … ffdhe8192, for the
//! key_share extension (RFC 8446 §4.2.8.1, §7.4.1).
//!
//! ```text
//! group      code    share = secret = |p|   private exponent (RFC 7919 Appendix A, §5.2)
//! ffdhe2048  0x0100  256 B                  29 B = 232 bits (at least 225)
//! ffdhe3072  0x0101  384 B                  35 B = 280 bits (at least 275)
//! ffdhe4096  0x0102  512 B                  41 B = 328 bits (at least 325)
//! ffdhe6144  0x0103  768 B                  47 B = 376 bits (at least 375)
//! ffdhe8192  0x0104  1024 B                 50 B = 400 bits (at least 400)
//! ```
//!
//! Every p is a safe prime with generator g = 2, so RFC 7919 §5.2 allows short exponents: the
//! private value is one draw of the length above from the injected source, used verbatim
//! (an exponent of 0 or 1 is drawn again), and Y = 2^x mod p. The arithmetic is
//! `crypto-bigint`'s constant-time Montgomery exponentiation (already in the tree through the
//! elliptic-curve crates), bounded to the exponent's bit length, which is public.

use std::sync::OnceLock;

use crypto_bigint::modular::runtime_mod::{DynResidue, DynResidueParams};
use crypto_bigint::{Uint, U2048, U3072, U4096, U512, U6144, U8192};
use zeroize::{Zeroize, Zeroizing};

use crate::crypto::random::RandomSource;

/// One of the five RFC 7919 groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// ffdhe2048 (0x0100).
    Ffdhe2048,
    /// ffdhe3072 (0x0101).
    Ffdhe3072,
    /// ffdhe4096 (0x0102).
    Ffdhe4096,
    /// ffdhe6144 (0x0103).
    Ffdhe6144,
    /// ffdhe8192 (0x0104).
    Ffdhe8192,
}

/// The longest private exponent (ffdhe8192's 50 bytes) fits a U512.
const EXP_BYTES: usize = 64;

/// Draws allowed when an exponent candidate is 0 or 1 (only a broken source draws one).
const MAX_EXPONENT_DRAWS: usize = 8;

impl Group {
    /// RFC 7919's name.
    pub fn name(self) -> &'static str {
        match self {
            Group::Ffdhe2048 => "ffdhe2048",
            Group::Ffdhe3072 => "ffdhe3072",
            Group::Ffdhe4096 => "ffdhe4096",
            Group::Ffdhe6144 => "ffdhe6144",
            Group::Ffdhe8192 => "ffdhe8192",
        }
    }

    /// The size of p in bytes: the length of a share and of the shared secret (§4.2.8.1, §7.4.1).
    pub fn p_len(self) -> usize {
        match self {
            Group::Ffdhe2048 => 256,
            Group::Ffdhe3072 => 384,
            Group::Ffdhe4096 => 512,
            Group::Ffdhe6144 => 768,
            Group::Ffdhe8192 => 1024,
        }
    }

    /// p, big-endian in |p| bytes (for tests and experiments: p-1, p, p+1 are invalid shares).
    pub fn prime(self) -> Vec<u8> {
        fn be<const L: usize>(p: &Uint<L>) -> Vec<u8> {
            p.as_words()
                .iter()
                .rev()
                .flat_map(|w| w.to_be_bytes())
                .collect()
        }
        match self {
            Group::Ffdhe2048 => be(&P2048),
            Group::Ffdhe3072 => be(&P3072),
            Group::Ffdhe4096 => be(&P4096),
            Group::Ffdhe6144 => be(&P6144),
            Group::Ffdhe8192 => be(&P8192),
        }
    }

    /// The group of a NamedGroup code point, if it is one of RFC 7919's.
    pub fn of(group: crate::messages::enums::NamedGroup) -> Option<Group> {
        use crate::messages::enums::NamedGroup as G;
        Some(match group {
            G::ffdhe2048 => Group::Ffdhe2048,
            G::ffdhe3072 => Group::Ffdhe3072,
            G::ffdhe4096 => Group::Ffdhe4096,
            G::ffdhe6144 => Group::Ffdhe6144,
            G::ffdhe8192 => Group::Ffdhe8192,
            _ => return None,
        })
    }

    /// Bytes of the private exponent: the least whole number of bytes holding RFC 7919's
    /// minimum short-exponent length (Appendix A: 225, 275, 325, 375, 400 bits).
    pub fn exponent_len(self) -> usize {
        match self {
            Group::Ffdhe2048 => 29,
            Group::Ffdhe3072 => 35,
            Group::Ffdhe4096 => 41,
            Group::Ffdhe6144 => 47,
            Group::Ffdhe8192 => 50,
        }
    }
}

/// A private exponent, right-aligned in a big-endian U512 buffer (zeroized on drop).
pub struct Private {
    group: Group,
    x: Zeroizing<[u8; EXP_BYTES]>,
}

impl Clone for Private {
    fn clone(&self) -> Self {
        Private {
            group: self.group,
            x: Zeroizing::new(*self.x),
        }
    }
}

/// Draws the private exponent and appends Y = 2^x mod p, left-padded to |p|, to `public`.
pub fn generate(group: Group, rng: &mut dyn RandomSource, public: &mut Vec<u8>) -> Private {
    let n = group.exponent_len();
    let mut x = Zeroizing::new([0u8; EXP_BYTES]);
    let mut ok = false;
    for _ in 0..MAX_EXPONENT_DRAWS {
        rng.fill(&mut x[EXP_BYTES - n..]);
        // x >= 2: x = 0 would give Y = 1, which the peer must refuse; x = 1 gives Y = g.
        if x[..EXP_BYTES - 1].iter().any(|b| *b != 0) || x[EXP_BYTES - 1] >= 2 {
            ok = true;
            break;
        }
    }
    if !ok {
        // A constant source: a weak but working exponent from a stream seeded by the draw, as
        // kx's scalar draws do, rather than a hang.
        use rand_core::{RngCore, SeedableRng};
        let mut seed = Zeroizing::new([0u8; 32]);
        seed.copy_from_slice(&x[EXP_BYTES - 32..]);
        let mut stream = rand_chacha::ChaCha20Rng::from_seed(*seed);
        stream.fill_bytes(&mut x[EXP_BYTES - n..]);
        x[EXP_BYTES - 1] |= 2;
    }
    let private = Private { group, x };
    let mut two = vec![0u8; group.p_len()];
    two[group.p_len() - 1] = 2;
    modexp(group, &two, &private.x, public);
    private
}

/// RFC 8446 §4.2.8.1: Y is "left-padded with zeros to the size of p"; RFC 7919 §5.1 and
/// §4.2.8.1: "peers MUST validate each other's public key Y by ensuring that 1 < Y < p-1"
/// (which also keeps Y out of the subgroup {1, p-1} of order 2). Y is public: no constant time.
pub fn check_peer(group: Group, y: &[u8]) -> Result<(), &'static str> {
    if y.len() != group.p_len() {
        return Err("ffdhe share must be left-padded to the size of p");
    }
    let in_range = match group {
        Group::Ffdhe2048 => in_range(&P2048, y),
        Group::Ffdhe3072 => in_range(&P3072, y),
        Group::Ffdhe4096 => in_range(&P4096, y),
        Group::Ffdhe6144 => in_range(&P6144, y),
        Group::Ffdhe8192 => in_range(&P8192, y),
    };
    if !in_range {
        return Err("ffdhe share is not in the range 1 < Y < p-1");
    }
    Ok(())
}

impl Private {
    /// Z = Y^x mod p for a peer share that passes [`check_peer`], appended to `out` left-padded
    /// to |p| (§7.4.1).
    pub fn shared_into(&self, peer: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
        check_peer(self.group, peer)?;
        modexp(self.group, peer, &self.x, out);
        Ok(())
    }
}

fn in_range<const L: usize>(p: &Uint<L>, y: &[u8]) -> bool {
    let y = Uint::<L>::from_be_slice(y);
    y > Uint::ONE && y < p.wrapping_sub(&Uint::ONE)
}

/// base^x mod p for the group's p, appended big-endian and left-padded to |p|. `base` has
/// exactly |p| bytes (a checked share, or 2).
fn modexp(group: Group, base: &[u8], x: &[u8; EXP_BYTES], out: &mut Vec<u8>) {
    static PARAMS2048: OnceLock<DynResidueParams<{ U2048::LIMBS }>> = OnceLock::new();
    static PARAMS3072: OnceLock<DynResidueParams<{ U3072::LIMBS }>> = OnceLock::new();
    static PARAMS4096: OnceLock<DynResidueParams<{ U4096::LIMBS }>> = OnceLock::new();
    static PARAMS6144: OnceLock<DynResidueParams<{ U6144::LIMBS }>> = OnceLock::new();
    static PARAMS8192: OnceLock<DynResidueParams<{ U8192::LIMBS }>> = OnceLock::new();
    let bits = 8 * group.exponent_len();
    let mut x = U512::from_be_slice(x);
    match group {
        Group::Ffdhe2048 => modexp_in(&PARAMS2048, &P2048, base, &x, bits, out),
        Group::Ffdhe3072 => modexp_in(&PARAMS3072, &P3072, base, &x, bits, out),
        Group::Ffdhe4096 => modexp_in(&PARAMS4096, &P4096, base, &x, bits, out),
        Group::Ffdhe6144 => modexp_in(&PARAMS6144, &P6144, base, &x, bits, out),
        Group::Ffdhe8192 => modexp_in(&PARAMS8192, &P8192, base, &x, bits, out),
    }
    x.zeroize();
}

fn modexp_in<const L: usize>(
    params: &'static OnceLock<DynResidueParams<L>>,
    p: &Uint<L>,
    base: &[u8],
    x: &U512,
    bits: usize,
    out: &mut Vec<u8>,
) {
    // The Montgomery constants of p: computed once per process (a few ms for ffdhe8192).
    let params = *params.get_or_init(|| DynResidueParams::new(p));
    let base = DynResidue::new(&Uint::<L>::from_be_slice(base), params);
    let mut z = base.pow_bounded_exp(x, bits).retrieve();
    // Uint<L> is little-endian limbs; |p| = L limbs exactly, so this is the left-padded form.
    for w in z.as_words().iter().rev() {
        out.extend_from_slice(&w.to_be_bytes());
    }
    z.zeroize();
}

/// ffdhe2048 p (RFC 7919 Appendix A.1).
const P2048: U2048 = U2048::from_be_hex(concat!(
    "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9",
    "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935",
    "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb",
    "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61",
    "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa",
    "886b423861285c97ffffffffffffffff",
));

/// ffdhe3072 p (RFC 7919 Appendix A.2).
const P3072: U3072 = U3072::from_be_hex(concat!(
    "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9",
    "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935",
    "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb",
    "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61",
    "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa",
    "886b4238611fcfdcde355b3b6519035bbc34f4def99c023861b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91c",
    "aefe130985139270b4130c93bc437944f4fd4452e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0d",
    "abc521979b0deada1dbf9a42d5c4484e0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b66c62e37ffffffffffffffff",
));

/// ffdhe4096 p (RFC 7919 Appendix A.3).
const P4096: U4096 = U4096::from_be_hex(concat!(
    "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9",
    "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935",
    "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb",
    "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61",
    "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa",
    "886b4238611fcfdcde355b3b6519035bbc34f4def99c023861b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91c",
    "aefe130985139270b4130c93bc437944f4fd4452e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0d",
    "abc521979b0deada1dbf9a42d5c4484e0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b669e1ef16e6f52c3164df4fb",
    "7930e9e4e58857b6ac7d5f42d69f6d187763cf1d5503400487f55ba57e31cc7a7135c886efb4318aed6a1e012d9e6832",
    "a907600a918130c46dc778f971ad0038092999a333cb8b7a1a1db93d7140003c2a4ecea9f98d0acc0a8291cdcec97dcf",
    "8ec9b55a7f88a46b4db5a851f44182e1c68a007e5e655f6affffffffffffffff",
));

/// ffdhe6144 p (RFC 7919 Appendix A.4).
const P6144: U6144 = U6144::from_be_hex(concat!(
    "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9",
    "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935",
    "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb",
    "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61",
    "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa",
    "886b4238611fcfdcde355b3b6519035bbc34f4def99c023861b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91c",
    "aefe130985139270b4130c93bc437944f4fd4452e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0d",
    "abc521979b0deada1dbf9a42d5c4484e0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b669e1ef16e6f52c3164df4fb",
    "7930e9e4e58857b6ac7d5f42d69f6d187763cf1d5503400487f55ba57e31cc7a7135c886efb4318aed6a1e012d9e6832",
    "a907600a918130c46dc778f971ad0038092999a333cb8b7a1a1db93d7140003c2a4ecea9f98d0acc0a8291cdcec97dcf",
    "8ec9b55a7f88a46b4db5a851f44182e1c68a007e5e0dd9020bfd64b645036c7a4e677d2c38532a3a23ba4442caf53ea6",
    "3bb454329b7624c8917bdd64b1c0fd4cb38e8c334c701c3acdad0657fccfec719b1f5c3e4e46041f388147fb4cfdb477",
    "a52471f7a9a96910b855322edb6340d8a00ef092350511e30abec1fff9e3a26e7fb29f8c183023c3587e38da0077d9b4",
    "763e4e4b94b2bbc194c6651e77caf992eeaac0232a281bf6b3a739c1226116820ae8db5847a67cbef9c9091b462d538c",
    "d72b03746ae77f5e62292c311562a846505dc82db854338ae49f5235c95b91178ccf2dd5cacef403ec9d1810c6272b04",
    "5b3b71f9dc6b80d63fdd4a8e9adb1e6962a69526d43161c1a41d570d7938dad4a40e329cd0e40e65ffffffffffffffff",
));

/// ffdhe8192 p (RFC 7919 Appendix A.5).
const P8192: U8192 = U8192::from_be_hex(concat!(
    "ffffffffffffffffadf85458a2bb4a9aafdc5620273d3cf1d8b9c583ce2d3695a9e13641146433fbcc939dce249b3ef9",
    "7d2fe363630c75d8f681b202aec4617ad3df1ed5d5fd65612433f51f5f066ed0856365553ded1af3b557135e7f57c935",
    "984f0c70e0e68b77e2a689daf3efe8721df158a136ade73530acca4f483a797abc0ab182b324fb61d108a94bb2c8e3fb",
    "b96adab760d7f4681d4f42a3de394df4ae56ede76372bb190b07a7c8ee0a6d709e02fce1cdf7e2ecc03404cd28342f61",
    "9172fe9ce98583ff8e4f1232eef28183c3fe3b1b4c6fad733bb5fcbc2ec22005c58ef1837d1683b2c6f34a26c1b2effa",
    "886b4238611fcfdcde355b3b6519035bbc34f4def99c023861b46fc9d6e6c9077ad91d2691f7f7ee598cb0fac186d91c",
    "aefe130985139270b4130c93bc437944f4fd4452e2d74dd364f2e21e71f54bff5cae82ab9c9df69ee86d2bc522363a0d",
    "abc521979b0deada1dbf9a42d5c4484e0abcd06bfa53ddef3c1b20ee3fd59d7c25e41d2b669e1ef16e6f52c3164df4fb",
    "7930e9e4e58857b6ac7d5f42d69f6d187763cf1d5503400487f55ba57e31cc7a7135c886efb4318aed6a1e012d9e6832",
    "a907600a918130c46dc778f971ad0038092999a333cb8b7a1a1db93d7140003c2a4ecea9f98d0acc0a8291cdcec97dcf",
    "8ec9b55a7f88a46b4db5a851f44182e1c68a007e5e0dd9020bfd64b645036c7a4e677d2c38532a3a23ba4442caf53ea6",
    "3bb454329b7624c8917bdd64b1c0fd4cb38e8c334c701c3acdad0657fccfec719b1f5c3e4e46041f388147fb4cfdb477",
    "a52471f7a9a96910b855322edb6340d8a00ef092350511e30abec1fff9e3a26e7fb29f8c183023c3587e38da0077d9b4",
    "763e4e4b94b2bbc194c6651e77caf992eeaac0232a281bf6b3a739c1226116820ae8db5847a67cbef9c9091b462d538c",
    "d72b03746ae77f5e62292c311562a846505dc82db854338ae49f5235c95b91178ccf2dd5cacef403ec9d1810c6272b04",
    "5b3b71f9dc6b80d63fdd4a8e9adb1e6962a69526d43161c1a41d570d7938dad4a40e329ccff46aaa36ad004cf600c838",
    "1e425a31d951ae64fdb23fcec9509d43687feb69edd1cc5e0b8cc3bdf64b10ef86b63142a3ab8829555b2f747c932665",
    "cb2c0f1cc01bd70229388839d2af05e454504ac78b7582822846c0ba35c35f5c59160cc046fd8251541fc68c9c86b022",
    "bb7099876a460e7451a8a93109703fee1c217e6c3826e52c51aa691e0e423cfc99e9e31650c1217b624816cdad9a95f9",
    "d5b8019488d9c0a0a1fe3075a577e23183f81d4a3f2fa4571efc8ce0ba8a4fe8b6855dfe72b0a66eded2fbabfbe58a30",
    "fafabe1c5d71a87e2f741ef8c1fe86fea6bbfde530677f0d97d11d49f7a8443d0822e506a9f4614e011e2a94838ff88c",
    "d68c8bb7c5c6424cffffffffffffffff",
));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::random::{ScriptedRandom, SeededRandom};

    const ALL: [Group; 5] = [
        Group::Ffdhe2048,
        Group::Ffdhe3072,
        Group::Ffdhe4096,
        Group::Ffdhe6144,
        Group::Ffdhe8192,
    ];

    fn p_bytes(g: Group) -> Vec<u8> {
        g.prime()
    }

    /// Big-endian `a` + `d` (|d| small), same length.
    fn add_small(a: &[u8], d: i32) -> Vec<u8> {
        let mut v = a.to_vec();
        let mut carry = d;
        for b in v.iter_mut().rev() {
            let s = i32::from(*b) + carry;
            *b = s.rem_euclid(256) as u8;
            carry = s.div_euclid(256);
            if carry == 0 {
                break;
            }
        }
        v
    }

    #[test]
    fn primes_have_the_rfc7919_shape_and_pass_fermat() {
        for g in ALL {
            let p = p_bytes(g);
            assert_eq!(p.len(), g.p_len());
            // p = 2^b - 2^(b-64) + {[2^(b-130) e] + X} * 2^64 - 1: 64 one bits at each end, then
            // e's binary expansion (0xadf85458a2bb4a9a...) below the top ones.
            assert_eq!(&p[..8], &[0xff; 8], "{}", g.name());
            assert_eq!(&p[p.len() - 8..], &[0xff; 8], "{}", g.name());
            assert_eq!(&p[8..12], &[0xad, 0xf8, 0x54, 0x58], "{}", g.name());
            // A typo would almost surely fail Fermat (3^(p-1) = 1) or 2 being a quadratic
            // residue (2^((p-1)/2) = 1, so g = 2 generates the subgroup of prime order q).
            let p_minus_1 = add_small(&p, -1);
            let mut q = p_minus_1.clone(); // (p-1)/2 as a big-endian shift
            let mut carry = 0u8;
            for b in q.iter_mut() {
                let next = *b & 1;
                *b = (*b >> 1) | (carry << 7);
                carry = next;
            }
            let mut three = vec![0u8; g.p_len()];
            three[g.p_len() - 1] = 3;
            let mut two = vec![0u8; g.p_len()];
            two[g.p_len() - 1] = 2;
            let mut one = vec![0u8; g.p_len()];
            one[g.p_len() - 1] = 1;
            assert_eq!(full_modexp(g, &three, &p_minus_1), one, "{}", g.name());
            assert_eq!(full_modexp(g, &two, &q), one, "{}", g.name());
        }
    }

    /// base^e mod p with a full-length exponent (tests only).
    fn full_modexp(g: Group, base: &[u8], e: &[u8]) -> Vec<u8> {
        fn run<const L: usize>(p: &Uint<L>, base: &[u8], e: &[u8]) -> Vec<u8> {
            let params = DynResidueParams::new(p);
            let b = DynResidue::new(&Uint::<L>::from_be_slice(base), params);
            let z = b.pow(&Uint::<L>::from_be_slice(e)).retrieve();
            z.as_words()
                .iter()
                .rev()
                .flat_map(|w| w.to_be_bytes())
                .collect()
        }
        match g {
            Group::Ffdhe2048 => run(&P2048, base, e),
            Group::Ffdhe3072 => run(&P3072, base, e),
            Group::Ffdhe4096 => run(&P4096, base, e),
            Group::Ffdhe6144 => run(&P6144, base, e),
            Group::Ffdhe8192 => run(&P8192, base, e),
        }
    }

    #[test]
    fn round_trip_and_replay() {
        for g in ALL {
            let (mut a_pub, mut b_pub) = (Vec::new(), Vec::new());
            let a = generate(g, &mut SeededRandom::from_seed(1), &mut a_pub);
            let b = generate(g, &mut SeededRandom::from_seed(2), &mut b_pub);
            assert_eq!((a_pub.len(), b_pub.len()), (g.p_len(), g.p_len()));
            let (mut z1, mut z2) = (Vec::new(), Vec::new());
            a.shared_into(&b_pub, &mut z1).unwrap();
            b.shared_into(&a_pub, &mut z2).unwrap();
            assert_eq!(z1, z2, "{}", g.name());
            assert_eq!(z1.len(), g.p_len());
            let mut again = Vec::new();
            generate(g, &mut SeededRandom::from_seed(1), &mut again);
            assert_eq!(again, a_pub);
        }
    }

    #[test]
    fn injected_exponent_is_used_verbatim() {
        // x = 2^10 + 1: Y = 2^1025 mod p = 2^1025 for ffdhe2048 (< p), big-endian, left-padded.
        let g = Group::Ffdhe2048;
        let mut x = vec![0u8; g.exponent_len()];
        x[g.exponent_len() - 2] = 0x04;
        x[g.exponent_len() - 1] = 0x01;
        let mut rng = ScriptedRandom::new(vec![x], 0);
        let mut y = Vec::new();
        generate(g, &mut rng, &mut y);
        let mut expect = vec![0u8; 256];
        expect[256 - 1 - 1025 / 8] = 1 << (1025 % 8);
        assert_eq!(y, expect);
        assert_eq!(rng.remaining(), 0);
    }

    #[test]
    fn shares_and_secrets_are_left_padded() {
        // Y = 2^x is short for small x: the share keeps its leading zeros (§4.2.8.1), and so does
        // a secret Z = Y'^x below 2^(8(|p|-1)) (§7.4.1).
        let g = Group::Ffdhe3072;
        let mut x = vec![0u8; g.exponent_len()];
        x[g.exponent_len() - 1] = 3; // Y = 8
        let mut y = Vec::new();
        let k = generate(g, &mut ScriptedRandom::new(vec![x], 0), &mut y);
        assert_eq!(y.len(), 384);
        assert_eq!(y[383], 8);
        assert!(y[..383].iter().all(|b| *b == 0));
        let mut peer = vec![0u8; 384];
        peer[383] = 2; // Z = 2^3
        let mut z = Vec::new();
        k.shared_into(&peer, &mut z).unwrap();
        assert_eq!(z.len(), 384);
        assert_eq!(z[383], 8);
    }

    #[test]
    fn invalid_shares_are_refused() {
        for g in ALL {
            let p = p_bytes(g);
            let mut two = vec![0u8; g.p_len()];
            two[g.p_len() - 1] = 2;
            let k = generate(g, &mut SeededRandom::from_seed(9), &mut Vec::new());
            // Y = 0, 1, p-1, p, p+1, 2^(8|p|)-1: out of range; |Y| one byte short or long.
            for bad in [
                vec![0u8; g.p_len()],
                add_small(&vec![0u8; g.p_len()], 1),
                add_small(&p, -1),
                p.clone(),
                add_small(&p, 1),
                vec![0xff; g.p_len()],
            ] {
                let e = check_peer(g, &bad).unwrap_err();
                assert!(e.contains("1 < Y < p-1"), "{e}");
                assert!(k.shared_into(&bad, &mut Vec::new()).is_err());
            }
            for bad in [two[1..].to_vec(), [&[0u8][..], &two].concat(), vec![]] {
                let e = check_peer(g, &bad).unwrap_err();
                assert!(e.contains("left-padded"), "{e}");
            }
            // The edges that are allowed: 2 and p-2.
            check_peer(g, &two).unwrap();
            check_peer(g, &add_small(&p, -2)).unwrap();
        }
    }

    #[test]
    fn constant_source_still_gets_a_working_exponent() {
        struct Zero;
        impl RandomSource for Zero {
            fn fill(&mut self, buf: &mut [u8]) {
                buf.fill(0)
            }
        }
        let g = Group::Ffdhe2048;
        let mut y = Vec::new();
        generate(g, &mut Zero, &mut y);
        check_peer(g, &y).unwrap();
    }
}
