//! X448 (RFC 7748 §5), for the x448 group (RFC 8446 §4.2.8.2, §7.4.2).
//!
//! The Montgomery ladder of RFC 7748 §5 over GF(2^448 - 2^224 - 1), written out on
//! `crypto-bigint`'s constant-time Montgomery arithmetic (the crate the p256/p384 stack already
//! builds on). No released, maintained X448 crate fits: RustCrypto's `x448` exists only as
//! 0.14 pre-releases on a second elliptic-curve generation (and Rust 1.85), and the released
//! `x448` 0.6 / `ed448-goldilocks` 0.9 are no longer maintained. The ladder is the RFC's
//! pseudocode line for line; the tests check it against RFC 7748 §5.2 and §6.2.

use crypto_bigint::modular::runtime_mod::{DynResidue, DynResidueParams};
use crypto_bigint::subtle::{Choice, ConditionallySelectable, ConstantTimeEq};
use crypto_bigint::{Encoding, U448};
use zeroize::{Zeroize, Zeroizing};

/// Bytes of a scalar, a u-coordinate and a shared secret (RFC 7748 §5).
pub const LEN: usize = 56;

type Fe = DynResidue<{ U448::LIMBS }>;

/// p = 2^448 - 2^224 - 1.
const P: U448 = U448::from_be_hex(concat!(
    "fffffffffffffffffffffffffffffffffffffffffffffffffffffffe",
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
));
const PARAMS: DynResidueParams<{ U448::LIMBS }> = DynResidueParams::new(&P);
/// (A - 2) / 4 for Curve448's A = 156326 (RFC 7748 §5).
const A24: u32 = 39081;

fn fe(n: &U448) -> Fe {
    DynResidue::new(n, PARAMS)
}

/// decodeScalar448: clear the two low bits, set the top one (RFC 7748 §5).
fn decode_scalar(k: &[u8; LEN]) -> Zeroizing<[u8; LEN]> {
    let mut s = Zeroizing::new(*k);
    s[0] &= 252;
    s[LEN - 1] |= 128;
    s
}

/// decodeUCoordinate: 56 little-endian bytes; a value >= p is used reduced (RFC 7748 §5:
/// "MUST accept non-canonical values"). u is public, so the comparison may branch.
fn decode_u(u: &[u8; LEN]) -> U448 {
    let n = U448::from_le_bytes(*u);
    if n >= P {
        n.wrapping_sub(&P)
    } else {
        n
    }
}

/// X448(k, u), RFC 7748 §5: the ladder with a constant-time conditional swap on every bit.
/// `k` is the 56-byte private value before clamping.
pub fn x448(k: &[u8; LEN], u: &[u8; LEN]) -> Zeroizing<[u8; LEN]> {
    let k = decode_scalar(k);
    let x1 = fe(&decode_u(u));
    let (mut x2, mut z2, mut x3, mut z3) = (Fe::one(PARAMS), Fe::zero(PARAMS), x1, Fe::one(PARAMS));
    let a24 = fe(&U448::from_u32(A24));
    let mut swap = Choice::from(0);
    for t in (0..448).rev() {
        let kt = Choice::from((k[t / 8] >> (t % 8)) & 1);
        swap ^= kt;
        Fe::conditional_swap(&mut x2, &mut x3, swap);
        Fe::conditional_swap(&mut z2, &mut z3, swap);
        swap = kt;
        let a = x2.add(&z2);
        let aa = a.square();
        let b = x2.sub(&z2);
        let bb = b.square();
        let e = aa.sub(&bb);
        let c = x3.add(&z3);
        let d = x3.sub(&z3);
        let da = d.mul(&a);
        let cb = c.mul(&b);
        x3 = da.add(&cb).square();
        z3 = x1.mul(&da.sub(&cb).square());
        x2 = aa.mul(&bb);
        z2 = e.mul(&aa.add(&a24.mul(&e)));
    }
    Fe::conditional_swap(&mut x2, &mut x3, swap);
    Fe::conditional_swap(&mut z2, &mut z3, swap);
    // x2 * z2^(p-2): z2 = 0 (a low-order u) gives 0, as the RFC's formula does.
    let out = x2.mul(&z2.pow(&P.wrapping_sub(&U448::from_u8(2))));
    let mut n = out.retrieve();
    let bytes = Zeroizing::new(n.to_le_bytes());
    for v in [&mut x2, &mut z2, &mut x3, &mut z3] {
        v.zeroize();
    }
    n.zeroize();
    bytes
}

/// The public key for private value `k`: X448(k, 5) (RFC 7748 §6.2).
pub fn public(k: &[u8; LEN]) -> [u8; LEN] {
    let mut five = [0u8; LEN];
    five[0] = 5;
    *x448(k, &five)
}

/// The shared secret, or `None` when it is all zeros: the peer sent a low-order point, which
/// RFC 8446 §7.4.2 and RFC 7748 §6.2 require us to refuse (checked in constant time).
pub fn diffie_hellman(k: &[u8; LEN], peer: &[u8; LEN]) -> Option<Zeroizing<[u8; LEN]>> {
    let shared = x448(k, peer);
    let zero: bool = shared.ct_eq(&[0u8; LEN]).into();
    (!zero).then_some(shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h56(s: &str) -> [u8; LEN] {
        hex::decode(s).unwrap().try_into().unwrap()
    }

    #[test]
    fn rfc7748_section_5_2_vectors() {
        let k = h56("3d262fddf9ec8e88495266fea19a34d28882acef045104d0d1aae121700a779c984c24f8cdd78fbff44943eba368f54b29259a4f1c600ad3");
        let u = h56("06fce640fa3487bfda5f6cf2d5263f8aad88334cbd07437f020f08f9814dc031ddbdc38c19c6da2583fa5429db94ada18aa7a7fb4ef8a086");
        assert_eq!(
            *x448(&k, &u),
            h56("ce3e4ff95a60dc6697da1db1d85e6afbdf79b50a2412d7546d5f239fe14fbaadeb445fc66a01b0779d98223961111e21766282f73dd96b6f")
        );
        let k = h56("203d494428b8399352665ddca42f9de8fef600908e0d461cb021f8c538345dd77c3e4806e25f46d3315c44e0a5b4371282dd2c8d5be3095f");
        let u = h56("0fbcc2f993cd56d3305b0b7d9e55d4c1a8fb5dbb52f8e9a1e9b6201b165d015894e56c4d3570bee52fe205e28a78b91cdfbde71ce8d157db");
        assert_eq!(
            *x448(&k, &u),
            h56("884a02576239ff7a2f2f63b2db6a9ff37047ac13568e1e30fe63c4a7ad1b3ee3a5700df34321d62077e63633c575c1c954514e99da7c179d")
        );
    }

    #[test]
    fn rfc7748_section_5_2_iterated_1000() {
        // k = u = 5; then repeatedly k, u = X448(k, u), k.
        let mut k = [0u8; LEN];
        k[0] = 5;
        let mut u = k;
        for i in 1..=1000 {
            let r = *x448(&k, &u);
            u = k;
            k = r;
            if i == 1 {
                assert_eq!(k, h56("3f482c8a9f19b01e6c46ee9711d9dc14fd4bf67af30765c2ae2b846a4d23a8cd0db897086239492caf350b51f833868b9bc2b3bca9cf4113"));
            }
        }
        assert_eq!(k, h56("aa3b4749d55b9daf1e5b00288826c467274ce3ebbdd5c17b975e09d4af6c67cf10d087202db88286e2b79fceea3ec353ef54faa26e219f38"));
    }

    #[test]
    fn rfc7748_section_6_2_diffie_hellman() {
        let a = h56("9a8f4925d1519f5775cf46b04b5800d4ee9ee8bae8bc5565d498c28dd9c9baf574a9419744897391006382a6f127ab1d9ac2d8c0a598726b");
        let b = h56("1c306a7ac2a0e2e0990b294470cba339e6453772b075811d8fad0d1d6927c120bb5ee8972b0d3e21374c9c921b09d1b0366f10b65173992d");
        let a_pub = public(&a);
        let b_pub = public(&b);
        assert_eq!(a_pub, h56("9b08f7cc31b7e3e67d22d5aea121074a273bd2b83de09c63faa73d2c22c5d9bbc836647241d953d40c5b12da88120d53177f80e532c41fa0"));
        assert_eq!(b_pub, h56("3eb7a829b0cd20f5bcfc0b599b6feccf6da4627107bdb0d4f345b43027d8b972fc3e34fb4232a13ca706dcb57aec3dae07bdc1c67bf33609"));
        let k = h56("07fff4181ac6cc95ec1c16a94a0f74d12da232ce40a77552281d282bb60c0b56fd2464c335543936521c24403085d59a449a5037514a879d");
        assert_eq!(*diffie_hellman(&a, &b_pub).unwrap(), k);
        assert_eq!(*diffie_hellman(&b, &a_pub).unwrap(), k);
    }

    #[test]
    fn low_order_and_non_canonical_points() {
        let k = [0x42u8; LEN];
        // u = 0 (order 2) and u = 1, u = p - 1 (order 4, on the curve or its twist) give the
        // all-zero output for every clamped k, a multiple of 4; u = p and u = p + 1 are 0 and 1
        // written non-canonically.
        let p = P.to_le_bytes();
        let p_plus_1 = (P.wrapping_add(&U448::ONE)).to_le_bytes();
        let p_minus_1 = (P.wrapping_sub(&U448::ONE)).to_le_bytes();
        let mut one = [0u8; LEN];
        one[0] = 1;
        for u in [[0u8; LEN], one, p_minus_1, p, p_plus_1] {
            assert!(diffie_hellman(&k, &u).is_none(), "{}", hex::encode(u));
        }
        // A non-canonical encoding of an ordinary point gives that point's result.
        let mut five = [0u8; LEN];
        five[0] = 5;
        let five_plus_p = U448::from_le_bytes(five).wrapping_add(&P).to_le_bytes();
        assert_eq!(*x448(&k, &five_plus_p), public(&k));
    }
}
