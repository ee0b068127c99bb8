//! Certificate compression (RFC 8879): the algorithms this build has, compressing our
//! Certificate (once per credential, [`CompressionCache`]), and bounded decompression of the
//! peer's.
//!
//! What is compressed is the Certificate message's body, without its 4-byte handshake header:
//! `uncompressed_length` counts that body (BoringSSL, OpenSSL and rustls agree). The transcript
//! holds the CompressedCertificate as sent (§4); the Certificate inside is never hashed.
//!
//! Decompression never trusts the peer or the library: `uncompressed_length` is checked against
//! the limit a plain Certificate has (§5: "they MUST apply the same limit as if no compression
//! were used") before any work, the output buffer is exactly that long, and the decoder is read
//! through it, so it cannot hand us more than one byte past the declared length, however much
//! its input would expand to (a bomb is refused after `uncompressed_length + 1` bytes of output).

use std::sync::{Arc, Mutex};

use crate::error::{Error, PeerMisbehaved};
use crate::messages::enums::{CertificateCompressionAlgorithm, HandshakeType};
use crate::messages::handshake::{CertificatePayload, CompressedCertificate};

/// The algorithms this build compresses and decompresses, in our default preference order:
/// brotli first (its built-in dictionary knows the strings certificates repeat; what Chrome
/// offers), then zstd, then zlib. Empty without the `cert-compression` feature.
pub fn supported() -> &'static [CertificateCompressionAlgorithm] {
    #[cfg(feature = "cert-compression")]
    {
        use CertificateCompressionAlgorithm as A;
        &[A::Brotli, A::Zstd, A::Zlib]
    }
    #[cfg(not(feature = "cert-compression"))]
    {
        &[]
    }
}

/// The first algorithm of `ours` (our preference) that the peer's extension listed (§4:
/// "MUST be one of the algorithms listed in the peer's compress_certificate extension").
pub(crate) fn choose(
    ours: &[CertificateCompressionAlgorithm],
    theirs: &[CertificateCompressionAlgorithm],
) -> Option<CertificateCompressionAlgorithm> {
    ours.iter()
        .copied()
        .find(|a| supported().contains(a) && theirs.contains(a))
}

/// `data` compressed with `algorithm` at its best setting (the result is cached), or `None`
/// for an algorithm this build does not have.
pub fn compress(algorithm: CertificateCompressionAlgorithm, data: &[u8]) -> Option<Vec<u8>> {
    #[cfg(feature = "cert-compression")]
    {
        use std::io::Write;
        use CertificateCompressionAlgorithm as A;
        match algorithm {
            A::Zlib => {
                let mut enc = flate2::write::ZlibEncoder::new(
                    Vec::with_capacity(data.len()),
                    flate2::Compression::best(),
                );
                enc.write_all(data).ok()?;
                enc.finish().ok()
            }
            A::Brotli => {
                let mut out = Vec::with_capacity(data.len());
                let params = brotli::enc::BrotliEncoderParams {
                    quality: 11,
                    // A window just over the input: the decoder then needs no more memory.
                    lgwin: window_log(data.len()),
                    size_hint: data.len(),
                    ..Default::default()
                };
                brotli::BrotliCompress(&mut &data[..], &mut out, &params).ok()?;
                Some(out)
            }
            // ruzstd's best implemented level (about zstd's level 1).
            A::Zstd => Some(ruzstd::encoding::compress_to_vec(
                data,
                ruzstd::encoding::CompressionLevel::Fastest,
            )),
            A::Unknown(_) => None,
        }
    }
    #[cfg(not(feature = "cert-compression"))]
    {
        let _ = (algorithm, data);
        None
    }
}

/// Brotli's window (log2, 10..=24) for `len` bytes of input.
#[cfg(feature = "cert-compression")]
fn window_log(len: usize) -> i32 {
    let bits = usize::BITS - len.max(1).leading_zeros();
    (bits as i32 + 1).clamp(10, 24)
}

/// Why a CompressedCertificate did not decompress to its declared length (§4: each is
/// bad_certificate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecompressError {
    /// The decoder had more to give than uncompressed_length.
    LongerThanDeclared,
    /// The data ended before uncompressed_length bytes.
    ShorterThanDeclared,
    /// Not a valid stream of the algorithm, or bytes after its end.
    Undecodable,
    /// An algorithm this build cannot decompress.
    Unsupported,
}

impl DecompressError {
    /// For [`PeerMisbehaved::BadCompressedCertificate`].
    pub fn as_str(self) -> &'static str {
        match self {
            DecompressError::LongerThanDeclared => "decompresses to more than uncompressed_length",
            DecompressError::ShorterThanDeclared => "decompresses to less than uncompressed_length",
            DecompressError::Undecodable => "compressed_certificate_message does not decode",
            DecompressError::Unsupported => "algorithm not supported",
        }
    }
}

/// Decompresses `data` into exactly `len` bytes: the decoder is read into a buffer of `len`
/// bytes and then asked for one byte more, so it never produces more than `len + 1` bytes for
/// us whatever the input expands to; the input must also end where the stream does.
pub fn decompress(
    algorithm: CertificateCompressionAlgorithm,
    data: &[u8],
    len: usize,
) -> Result<Vec<u8>, DecompressError> {
    #[cfg(feature = "cert-compression")]
    {
        use CertificateCompressionAlgorithm as A;
        match algorithm {
            A::Zlib => {
                // bufread: the decoder takes from `data` only what the zlib stream holds, so
                // what is left afterwards is trailing input.
                let mut dec = flate2::bufread::ZlibDecoder::new(data);
                let out = read_exactly(&mut dec, len)?;
                no_trailing(dec.into_inner())?;
                Ok(out)
            }
            A::Brotli => brotli_exactly(data, len),
            A::Zstd => {
                // A window past the output is never needed (output is capped at `len`), but a
                // streaming compressor may declare one: allow libzstd's usual sizes.
                let window = (len as u64).next_power_of_two().max(8 << 20);
                let mut src = data;
                let mut dec =
                    ruzstd::decoding::StreamingDecoder::new_with_max_window_size(&mut src, window)
                        .map_err(|_| DecompressError::Undecodable)?;
                let out = read_exactly(&mut dec, len)?;
                drop(dec);
                no_trailing(src)?;
                Ok(out)
            }
            A::Unknown(_) => Err(DecompressError::Unsupported),
        }
    }
    #[cfg(not(feature = "cert-compression"))]
    {
        let _ = (algorithm, data, len);
        Err(DecompressError::Unsupported)
    }
}

/// Reads `r` into a buffer of exactly `len` bytes (pre-allocated: §4's reason for the field),
/// then one more byte, which must not come.
#[cfg(feature = "cert-compression")]
fn read_exactly(r: &mut impl std::io::Read, len: usize) -> Result<Vec<u8>, DecompressError> {
    use std::io::ErrorKind;
    let mut out = vec![0u8; len];
    let mut filled = 0;
    while filled < len {
        match r.read(&mut out[filled..]) {
            Ok(0) => return Err(DecompressError::ShorterThanDeclared),
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Err(DecompressError::Undecodable),
        }
    }
    let mut one = [0u8; 1];
    loop {
        return match r.read(&mut one) {
            Ok(0) => Ok(out),
            Ok(_) => Err(DecompressError::LongerThanDeclared),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => Err(DecompressError::Undecodable),
        };
    }
}

/// Brotli through its stream API, which says how much input is left and whether more output
/// was due: the output buffer is `len + 1` bytes, so a stream longer than declared stops there.
/// Windows are RFC 7932's (at most 16 MiB; not the "large window" extension).
#[cfg(feature = "cert-compression")]
fn brotli_exactly(data: &[u8], len: usize) -> Result<Vec<u8>, DecompressError> {
    use brotli::{BrotliDecompressStream, BrotliResult, BrotliState, HeapAlloc};
    let mut state = BrotliState::new(
        HeapAlloc::<u8>::default(),
        HeapAlloc::<u32>::default(),
        HeapAlloc::<brotli::HuffmanCode>::default(),
    );
    state.large_window = false;
    let mut out = vec![0u8; len + 1];
    let (mut available_in, mut input_offset) = (data.len(), 0);
    let (mut available_out, mut output_offset, mut total_out) = (out.len(), 0, 0);
    let result = BrotliDecompressStream(
        &mut available_in,
        &mut input_offset,
        data,
        &mut available_out,
        &mut output_offset,
        &mut out,
        &mut total_out,
        &mut state,
    );
    match result {
        BrotliResult::ResultSuccess if output_offset > len => {
            Err(DecompressError::LongerThanDeclared)
        }
        BrotliResult::ResultSuccess if output_offset < len => {
            Err(DecompressError::ShorterThanDeclared)
        }
        BrotliResult::ResultSuccess if available_in != 0 => Err(DecompressError::Undecodable),
        BrotliResult::ResultSuccess => {
            out.truncate(len);
            Ok(out)
        }
        // The buffer (one byte past the declared length) is full and the stream goes on.
        BrotliResult::NeedsMoreOutput => Err(DecompressError::LongerThanDeclared),
        // All input used, the stream not finished: a truncated stream.
        BrotliResult::NeedsMoreInput | BrotliResult::ResultFailure => {
            Err(DecompressError::Undecodable)
        }
    }
}

#[cfg(feature = "cert-compression")]
fn no_trailing(rest: &[u8]) -> Result<(), DecompressError> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(DecompressError::Undecodable)
    }
}

/// The Certificate a received CompressedCertificate stands for (RFC 8879 §4, §5), after the
/// checks in the order that costs the peer's input the least work:
/// - nothing offered: the message is unexpected (RFC 8446 §6.2 unexpected_message; RFC 8879
///   §4 allows it only "if the peer has indicated that it supports compression");
/// - an algorithm we did not offer: illegal_parameter (§4: "MUST be one of the algorithms
///   listed in the peer's compress_certificate extension");
/// - uncompressed_length over `limit`, our limit for a Certificate message: bad_certificate
///   (§5), before any decompression;
/// - output longer or shorter than declared, or undecodable: bad_certificate (§4).
///
/// The decompressed bytes are then decoded as a Certificate body "as if it were encoded
/// without being compressed" (§5): a malformed one is the decode_error it would be.
pub(crate) fn certificate_from(
    cc: &CompressedCertificate,
    offered: &[CertificateCompressionAlgorithm],
    limit: usize,
    expected: &'static str,
) -> Result<CertificatePayload, Error> {
    if offered.is_empty() {
        return Err(PeerMisbehaved::UnexpectedMessage {
            expected,
            got: HandshakeType::CompressedCertificate,
        }
        .into());
    }
    if !offered.contains(&cc.algorithm) {
        return Err(PeerMisbehaved::UnofferedCompressionAlgorithm(cc.algorithm).into());
    }
    let len = cc.uncompressed_length as usize;
    if len > limit {
        return Err(PeerMisbehaved::CompressedCertificateTooLarge.into());
    }
    let body = decompress(cc.algorithm, &cc.compressed_certificate_message, len)
        .map_err(|e| PeerMisbehaved::BadCompressedCertificate(e.as_str()))?;
    Ok(CertificatePayload::from_body(&body)?)
}

/// Compressed Certificate bodies, kept per credential and algorithm so a server (or a client
/// with a certificate) compresses its chain once, not once per handshake. An entry is found by
/// comparing the exact body, so a changed chain is never answered from the cache. Bounded: a
/// few credentials times three algorithms.
#[derive(Debug, Default)]
pub struct CompressionCache {
    entries: Mutex<Vec<CacheEntry>>,
}

#[derive(Debug)]
struct CacheEntry {
    algorithm: CertificateCompressionAlgorithm,
    body: Vec<u8>,
    compressed: Arc<[u8]>,
}

impl CompressionCache {
    /// Entries kept; the oldest goes first.
    pub const CAPACITY: usize = 16;

    /// `body` compressed with `algorithm`, from the cache or compressed now (and kept).
    pub fn get_or_compress(
        &self,
        algorithm: CertificateCompressionAlgorithm,
        body: &[u8],
    ) -> Option<Arc<[u8]>> {
        if let Ok(entries) = self.entries.lock() {
            if let Some(e) = entries
                .iter()
                .find(|e| e.algorithm == algorithm && e.body == body)
            {
                return Some(Arc::clone(&e.compressed));
            }
        }
        let compressed: Arc<[u8]> = compress(algorithm, body)?.into();
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= Self::CAPACITY {
                entries.remove(0);
            }
            entries.push(CacheEntry {
                algorithm,
                body: body.to_vec(),
                compressed: Arc::clone(&compressed),
            });
        }
        Some(compressed)
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.len())
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What to send for a Certificate whose body is `body`: `(algorithm, compressed)` when the
/// peer offered an algorithm we prefer and compression makes the message smaller (OpenSSL
/// does the same: a CompressedCertificate that is no smaller only costs the peer work), else
/// `None` (send the Certificate).
pub(crate) fn compress_for_peer(
    ours: &[CertificateCompressionAlgorithm],
    theirs: &[CertificateCompressionAlgorithm],
    cache: Option<&CompressionCache>,
    body: &[u8],
) -> Option<(CertificateCompressionAlgorithm, Arc<[u8]>)> {
    let algorithm = choose(ours, theirs)?;
    // uint24: a body this large would not have fit a Certificate either.
    if body.len() >= 1 << 24 {
        return None;
    }
    let compressed = match cache {
        Some(c) => c.get_or_compress(algorithm, body)?,
        None => compress(algorithm, body)?.into(),
    };
    // The CompressedCertificate body: algorithm (2), uncompressed_length (3), the vector (3 + n).
    (8 + compressed.len() < body.len()).then_some((algorithm, compressed))
}

#[cfg(all(test, feature = "cert-compression"))]
mod tests {
    use super::*;
    use CertificateCompressionAlgorithm as A;

    fn sample() -> Vec<u8> {
        let mut v = Vec::new();
        for i in 0..200u32 {
            v.extend_from_slice(format!("DNS:host{i}.example.com,").as_bytes());
        }
        v
    }

    #[test]
    fn every_algorithm_round_trips_and_compresses() {
        let data = sample();
        for &a in supported() {
            let c = compress(a, &data).unwrap();
            assert!(
                c.len() < data.len() / 2,
                "{a}: {} of {}",
                c.len(),
                data.len()
            );
            assert_eq!(decompress(a, &c, data.len()), Ok(data.clone()), "{a}");
        }
    }

    #[test]
    fn wrong_declared_lengths_and_trailing_bytes_are_refused() {
        let data = sample();
        for &a in supported() {
            let c = compress(a, &data).unwrap();
            assert_eq!(
                decompress(a, &c, data.len() - 1),
                Err(DecompressError::LongerThanDeclared),
                "{a}"
            );
            assert_eq!(
                decompress(a, &c, data.len() + 1),
                Err(DecompressError::ShorterThanDeclared),
                "{a}"
            );
            let mut trailing = c.clone();
            trailing.push(0);
            assert!(decompress(a, &trailing, data.len()).is_err(), "{a}");
            assert_eq!(
                decompress(a, &[0xff; 40], data.len()),
                Err(DecompressError::Undecodable),
                "{a}"
            );
        }
    }

    /// A bomb: 1 KiB of zlib that would expand to 1 MiB. Reading it against a small declared
    /// length stops one byte past it.
    #[test]
    fn a_zlib_bomb_is_cut_at_the_declared_length() {
        let bomb = compress(A::Zlib, &vec![0u8; 1 << 20]).unwrap();
        assert!(bomb.len() < 2048);
        assert_eq!(
            decompress(A::Zlib, &bomb, 1000),
            Err(DecompressError::LongerThanDeclared)
        );
    }

    #[test]
    fn the_cache_compresses_once_per_body_and_algorithm() {
        let cache = CompressionCache::default();
        let data = sample();
        let a = cache.get_or_compress(A::Brotli, &data).unwrap();
        let b = cache.get_or_compress(A::Brotli, &data).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(cache.len(), 1);
        cache.get_or_compress(A::Zlib, &data).unwrap();
        cache.get_or_compress(A::Brotli, &data[1..]).unwrap();
        assert_eq!(cache.len(), 3);
        for i in 0..2 * CompressionCache::CAPACITY {
            cache.get_or_compress(A::Zstd, &data[i..]).unwrap();
        }
        assert_eq!(cache.len(), CompressionCache::CAPACITY);
    }

    #[test]
    fn only_a_smaller_message_is_sent_compressed() {
        let data = sample();
        let ours = [A::Zstd, A::Brotli];
        assert_eq!(
            compress_for_peer(&ours, &[A::Brotli, A::Zlib], None, &data).map(|c| c.0),
            Some(A::Brotli)
        );
        assert_eq!(compress_for_peer(&ours, &[A::Zlib], None, &data), None);
        assert_eq!(compress_for_peer(&ours, &[A::Zstd], None, &[1, 2, 3]), None);
    }
}
