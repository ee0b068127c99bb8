//! The authentication messages both roles send and check (RFC 8446 §4.4): Certificate, or
//! CompressedCertificate (RFC 8879 §4), CertificateVerify (§4.4.3) and Finished (§4.4.4).
//!
//! The server sends them in its flight and the client checks them; a client asked for its
//! certificate sends them in its second flight or after the handshake (§4.6.2), and the server
//! checks them. One implementation serves both: what differs between the roles (the chain and
//! its signer, the compression algorithms each side offered, the roots, the secret, whose
//! context string a signature carries) is an argument, and the state machines keep what only
//! they know (which scheme to sign with, what an empty chain means, what state comes next).

use crate::certcomp::{self, CompressionCache};
use crate::config::Signer;
use crate::conn::Conn;
use crate::crypto::cert::{self, SignatureMemo, Usage};
use crate::crypto::sign::{certificate_verify_message, SigError};
use crate::error::{Error, PeerMisbehaved};
use crate::events::Side;
use crate::keyschedule::schedule::TrafficSecret;
use crate::keyschedule::transcript::Transcript;
use crate::messages::enums::{CertificateCompressionAlgorithm, HandshakeType, SignatureScheme};
use crate::messages::extensions::Extension;
use crate::messages::handshake::{
    CertificatePayload, CertificateVerify, HandshakeMessage, HandshakePayload, OutgoingMessage,
};

/// What a Certificate may be compressed with (RFC 8879 §3): our algorithms in our order of
/// preference, those the peer's compress_certificate offered, and the cache that compresses a
/// chain once per algorithm rather than once per handshake.
pub(crate) struct Compression<'a> {
    pub(crate) ours: &'a [CertificateCompressionAlgorithm],
    pub(crate) theirs: &'a [CertificateCompressionAlgorithm],
    pub(crate) cache: Option<&'a CompressionCache>,
}

impl Compression<'_> {
    /// Nothing to compress with: the Certificate goes out as it is.
    pub(crate) const NONE: Compression<'static> = Compression {
        ours: &[],
        theirs: &[],
        cache: None,
    };
}

/// §4.4.2: our Certificate, `chain` (leaf first; sent from it as it is, not copied into a
/// message value) echoing the request's `context`. It goes out as a CompressedCertificate
/// (RFC 8879 §4) in the first of our algorithms the peer offered when that is smaller; the
/// transcript holds the message as sent. `first_extensions` go in the first CertificateEntry.
pub(crate) fn send_certificate(
    conn: &mut Conn,
    transcript: &mut Transcript,
    context: &[u8],
    chain: &[Vec<u8>],
    first_extensions: &[Extension],
    compression: Compression<'_>,
) {
    let cert = OutgoingMessage::Certificate {
        context,
        chain,
        first_extensions,
    };
    let compressed = if compression.theirs.is_empty() || compression.ours.is_empty() {
        None
    } else {
        let body = cert.body_bytes();
        certcomp::compress_for_peer(
            compression.ours,
            compression.theirs,
            compression.cache,
            &body,
        )
        .map(|(algorithm, bytes)| (algorithm, body.len() as u32, bytes))
    };
    match &compressed {
        Some((algorithm, uncompressed_length, bytes)) => {
            let m = OutgoingMessage::CompressedCertificate {
                algorithm: *algorithm,
                uncompressed_length: *uncompressed_length,
                compressed: bytes,
            };
            transcript.add(HandshakeType::CompressedCertificate, conn.send_handshake(m));
        }
        None => transcript.add(HandshakeType::Certificate, conn.send_handshake(cert)),
    }
}

/// §4.4.3: our CertificateVerify, `signer`'s signature in `scheme` over the transcript so far
/// with our role's context string. Any randomness the scheme needs (an RSA-PSS salt, a hedged
/// nonce) is drawn from the connection's source, so the signature replays from a seed.
pub(crate) fn send_certificate_verify(
    conn: &mut Conn,
    transcript: &mut Transcript,
    signer: &dyn Signer,
    scheme: SignatureScheme,
) -> Result<(), Error> {
    let server = conn.side == Side::Server;
    let content = certificate_verify_message(server, transcript.current_hash().as_ref());
    let signature = signer.sign(scheme, &content, conn.rng.as_mut())?;
    let cv = HandshakePayload::CertificateVerify(CertificateVerify { scheme, signature });
    transcript.add(HandshakeType::CertificateVerify, conn.send_handshake(&cv));
    Ok(())
}

/// §4.4.4: our Finished in the handshake: verify_data under `secret`, our handshake traffic
/// secret, over the transcript so far, which then holds it.
pub(crate) fn send_finished(conn: &mut Conn, transcript: &mut Transcript, secret: &TrafficSecret) {
    let fin = secret.verify_data(transcript.current_hash().as_ref(), &mut conn.ev);
    transcript.add(
        HandshakeType::Finished,
        conn.send_handshake(OutgoingMessage::Finished(&fin)),
    );
}

/// The peer's Certificate (§4.4.2), or its CompressedCertificate in an algorithm we offered
/// (`offered`, RFC 8879 §4) decompressed to at most `limit` bytes, with the type and the bytes
/// the transcript adds. Any other message is unexpected_message, `expected` naming what was.
/// The message is taken by value: its certificates move out, not copied.
pub(crate) fn received_certificate(
    msg: HandshakeMessage,
    offered: &[CertificateCompressionAlgorithm],
    limit: usize,
    expected: &'static str,
) -> Result<(CertificatePayload, HandshakeType, Vec<u8>), Error> {
    let typ = msg.typ();
    let c = match msg.payload {
        HandshakePayload::Certificate(c) => c,
        HandshakePayload::CompressedCertificate(ref cc) => {
            certcomp::certificate_from(cc, offered, limit, expected)?
        }
        _ => return Err(PeerMisbehaved::UnexpectedMessage { expected, got: typ }.into()),
    };
    Ok((c, typ, msg.encoded))
}

/// §4.4.2.4: the peer's chain (leaf first) against `roots`, and against `name` when given, at
/// `now_ms` (Unix ms), for `usage`. `None` for roots: the configuration asked by name to accept
/// any chain (the CertificateVerify is still checked); an empty list of roots validates nothing.
pub(crate) fn verify_chain(
    chain: &[Vec<u8>],
    roots: Option<&[Vec<u8>]>,
    name: Option<&str>,
    now_ms: u64,
    usage: Usage,
    memo: Option<&SignatureMemo>,
) -> Result<(), Error> {
    let Some(roots) = roots else {
        return Ok(());
    };
    cert::verify_chain(chain, roots, name, now_ms / 1000, usage, memo)?;
    Ok(())
}

/// §4.4.3: the CertificateVerify of `peer`, in a scheme we offered (`offered`), signed by the
/// key of its end-entity certificate `leaf` over the transcript so far with `peer`'s context
/// string. Returns the scheme that verified.
pub(crate) fn check_certificate_verify(
    peer: Side,
    offered: &[SignatureScheme],
    transcript: &Transcript,
    leaf: &[u8],
    cv: &CertificateVerify,
) -> Result<SignatureScheme, Error> {
    if !offered.contains(&cv.scheme) {
        return Err(PeerMisbehaved::UnofferedSignatureScheme.into());
    }
    let server = peer == Side::Server;
    let content = certificate_verify_message(server, transcript.current_hash().as_ref());
    cert::verify_with_leaf(leaf, cv.scheme, &content, &cv.signature).map_err(|e| match e {
        SigError::BadSignature => Error::Peer(PeerMisbehaved::BadCertificateVerify),
        other => Error::Signature(other),
    })?;
    Ok(cv.scheme)
}

/// §4.4.4: the peer's Finished in the handshake, against verify_data under `secret`, its
/// handshake traffic secret, over the transcript so far.
pub(crate) fn check_finished(
    conn: &mut Conn,
    secret: &TrafficSecret,
    transcript: &Transcript,
    verify_data: &[u8],
) -> Result<(), Error> {
    // verify_data is computed inline (an `Output`); compared as bytes, in constant time.
    let expected: &[u8] = &secret.verify_data(transcript.current_hash().as_ref(), &mut conn.ev);
    check_verify_data(expected, verify_data)
}

/// A Finished's verify_data against the value we computed, in constant time (§4.4.4): both
/// sides, in the handshake and after it.
pub(crate) fn check_verify_data(expected: &[u8], got: &[u8]) -> Result<(), Error> {
    use subtle::ConstantTimeEq;
    if got.len() != expected.len() {
        return Err(crate::messages::codec::DecodeError::Invalid {
            what: "Finished length",
        }
        .into());
    }
    if !bool::from(expected.ct_eq(got)) {
        return Err(PeerMisbehaved::BadFinished.into());
    }
    Ok(())
}
