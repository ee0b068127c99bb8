//! Injected randomness.
//!
//! The sans-IO core never reads OS randomness: every random value (ClientHello/ServerHello
//! randoms, (EC)DHE scalars, RSA-PSS salts, ticket nonces, ticket_age_add, ...) is drawn from a
//! caller-supplied [`RandomSource`]. A whole connection can therefore be replayed from a seed, and
//! an RFC 8448 test can script the exact values the RFC used (its randoms and private keys).

use std::collections::VecDeque;

use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, RngCore, SeedableRng};

/// The only source of randomness the core uses. `Send`, so a connection can move to another
/// thread (an async runtime's task) with its source.
pub trait RandomSource: Send {
    /// Fills `buf` entirely with random bytes. One call is one "draw".
    fn fill(&mut self, buf: &mut [u8]);
}

impl<T: RandomSource + ?Sized> RandomSource for &mut T {
    fn fill(&mut self, buf: &mut [u8]) {
        (**self).fill(buf)
    }
}

impl<T: RandomSource + ?Sized> RandomSource for Box<T> {
    fn fill(&mut self, buf: &mut [u8]) {
        (**self).fill(buf)
    }
}

/// A reproducible byte stream (the ChaCha20 keystream keyed by the seed): same seed, same bytes,
/// on every platform. Byte `i` of the stream does not depend on how earlier draws were sized.
///
/// `Debug` shows nothing of the stream: its next bytes become private keys.
#[derive(Clone)]
pub struct SeededRandom {
    rng: ChaCha20Rng,
    block: [u8; 64],
    /// Bytes of `block` already handed out.
    used: usize,
}

impl SeededRandom {
    /// Expands a short seed (rand_core's PCG32-based expansion to a 32-byte ChaCha key).
    pub fn from_seed(seed: u64) -> Self {
        Self::with_rng(ChaCha20Rng::seed_from_u64(seed))
    }

    /// Uses the 32 bytes directly as the ChaCha20 key.
    pub fn from_seed_bytes(seed: [u8; 32]) -> Self {
        Self::with_rng(ChaCha20Rng::from_seed(seed))
    }

    fn with_rng(rng: ChaCha20Rng) -> Self {
        Self {
            rng,
            block: [0; 64],
            used: 64,
        }
    }
}

impl core::fmt::Debug for SeededRandom {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SeededRandom(..)")
    }
}

impl RandomSource for SeededRandom {
    fn fill(&mut self, mut buf: &mut [u8]) {
        // ChaCha20Rng hands out whole 32-bit words, so odd-sized draws would skip bytes; drawing
        // whole 64-byte blocks keeps this a contiguous keystream.
        while !buf.is_empty() {
            if self.used == self.block.len() {
                self.rng.fill_bytes(&mut self.block);
                self.used = 0;
            }
            let n = buf.len().min(self.block.len() - self.used);
            let (head, tail) = buf.split_at_mut(n);
            head.copy_from_slice(&self.block[self.used..self.used + n]);
            self.used += n;
            buf = tail;
        }
    }
}

/// Operating-system randomness (getrandom). For the CLI and drivers only; the core takes a
/// `&mut dyn RandomSource` and never constructs this itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    /// Panics only if the OS entropy source fails, which getrandom treats as unrecoverable.
    fn fill(&mut self, buf: &mut [u8]) {
        rand_core::OsRng.fill_bytes(buf)
    }
}

/// A draw that did not match the head of a [`ScriptedRandom`] queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptMismatch {
    /// Index of the draw (0-based, counting every `fill` call).
    pub draw: usize,
    /// Bytes the caller asked for.
    pub wanted: usize,
    /// Length of the queued entry that was not used.
    pub queued: usize,
}

/// Replays scripted byte strings, e.g. the randoms and private keys printed in RFC 8448.
///
/// Each `fill` whose length equals the head entry's length consumes that entry. A draw of another
/// length leaves the queue untouched, is served from the seeded fallback, and is recorded in
/// [`mismatches`](Self::mismatches) so a test can assert the script was followed. Draws after the
/// queue is empty come from the fallback and are not mismatches. `Debug` shows counts only: the
/// script holds private keys.
#[derive(Clone)]
pub struct ScriptedRandom {
    queue: VecDeque<Vec<u8>>,
    fallback: SeededRandom,
    draws: usize,
    mismatches: Vec<ScriptMismatch>,
}

impl ScriptedRandom {
    /// `entries` are served in order; `fallback_seed` seeds the stream for unscripted draws.
    pub fn new<I: IntoIterator<Item = Vec<u8>>>(entries: I, fallback_seed: u64) -> Self {
        Self {
            queue: entries.into_iter().collect(),
            fallback: SeededRandom::from_seed(fallback_seed),
            draws: 0,
            mismatches: Vec::new(),
        }
    }

    /// Appends one entry to the script.
    pub fn push(&mut self, entry: Vec<u8>) {
        self.queue.push_back(entry);
    }

    /// Entries not yet consumed.
    pub fn remaining(&self) -> usize {
        self.queue.len()
    }

    /// Draws whose length did not match the queued entry.
    pub fn mismatches(&self) -> &[ScriptMismatch] {
        &self.mismatches
    }

    /// Number of `fill` calls so far.
    pub fn draws(&self) -> usize {
        self.draws
    }
}

impl core::fmt::Debug for ScriptedRandom {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ScriptedRandom")
            .field("remaining", &self.queue.len())
            .field("draws", &self.draws)
            .field("mismatches", &self.mismatches)
            .finish_non_exhaustive()
    }
}

impl RandomSource for ScriptedRandom {
    fn fill(&mut self, buf: &mut [u8]) {
        let draw = self.draws;
        self.draws += 1;
        match self.queue.front() {
            Some(head) if head.len() == buf.len() => {
                buf.copy_from_slice(head);
                self.queue.pop_front();
            }
            Some(head) => {
                self.mismatches.push(ScriptMismatch {
                    draw,
                    wanted: buf.len(),
                    queued: head.len(),
                });
                self.fallback.fill(buf);
            }
            None => self.fallback.fill(buf),
        }
    }
}

/// Lets RustCrypto APIs (which want `rand_core::{RngCore, CryptoRng}`) draw from an injected
/// [`RandomSource`]. Every `RngCore` call becomes exactly one `fill`.
pub struct RngAdapter<'a>(pub &'a mut dyn RandomSource);

impl RngCore for RngAdapter<'_> {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.0.fill(&mut b);
        u32::from_le_bytes(b)
    }

    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.0.fill(&mut b);
        u64::from_le_bytes(b)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill(dest)
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.0.fill(dest);
        Ok(())
    }
}

/// The wrapped source is a cryptographic RNG by contract of [`RandomSource`].
impl CryptoRng for RngAdapter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(r: &mut dyn RandomSource, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        r.fill(&mut v);
        v
    }

    #[test]
    fn seeded_is_reproducible() {
        let mut a = SeededRandom::from_seed(7);
        let mut b = SeededRandom::from_seed(7);
        let mut c = SeededRandom::from_seed(8);
        let (x, y, z) = (draw(&mut a, 64), draw(&mut b, 64), draw(&mut c, 64));
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert_ne!(x, vec![0u8; 64]);
        // Chunking does not change the stream.
        let mut d = SeededRandom::from_seed(7);
        let mut joined = draw(&mut d, 10);
        joined.extend(draw(&mut d, 1));
        joined.extend(draw(&mut d, 0));
        joined.extend(draw(&mut d, 53));
        assert_eq!(joined, x);
        let mut e = SeededRandom::from_seed(7);
        let long = draw(&mut e, 200);
        assert_eq!(long[..64], x[..]);
        let mut f = SeededRandom::from_seed(7);
        let mut pieces = Vec::new();
        for n in [3, 61, 1, 70, 65] {
            pieces.extend(draw(&mut f, n));
        }
        assert_eq!(pieces, long);
        // Byte seeds too; the stream is the plain ChaCha20 keystream.
        let mut g = SeededRandom::from_seed_bytes([1; 32]);
        let mut raw = [0u8; 64];
        ChaCha20Rng::from_seed([1; 32]).fill_bytes(&mut raw);
        assert_eq!(draw(&mut g, 64), raw.to_vec());
    }

    #[test]
    fn scripted_replays_then_falls_back() {
        let mut s = ScriptedRandom::new(vec![vec![1; 32], vec![2; 4]], 99);
        assert_eq!(draw(&mut s, 32), vec![1; 32]);
        // Wrong length: not consumed, served from the fallback, recorded.
        let odd = draw(&mut s, 8);
        assert_eq!(
            s.mismatches(),
            &[ScriptMismatch {
                draw: 1,
                wanted: 8,
                queued: 4
            }]
        );
        assert_eq!(odd, draw(&mut SeededRandom::from_seed(99), 8));
        assert_eq!(draw(&mut s, 4), vec![2; 4]);
        assert_eq!(s.remaining(), 0);
        let _ = draw(&mut s, 16);
        assert_eq!(s.mismatches().len(), 1);
        assert_eq!(s.draws(), 4);
    }

    #[test]
    fn adapter_draws_through_source() {
        let mut s = ScriptedRandom::new(vec![vec![0xaa; 16], 5u32.to_le_bytes().to_vec()], 0);
        let mut a = RngAdapter(&mut s);
        let mut buf = [0u8; 16];
        a.fill_bytes(&mut buf);
        assert_eq!(buf, [0xaa; 16]);
        assert_eq!(a.next_u32(), 5);
        assert!(s.mismatches().is_empty());
    }
}
