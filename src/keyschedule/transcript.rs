//! The handshake transcript hash (RFC 8446 §4.4.1).
//!
//! A client sends its ClientHello before it knows which hash the server's cipher suite will use,
//! so the transcript first buffers whole messages and switches to incremental hashing when
//! [`Transcript::start_hash`] names the function. It also remembers which handshake messages it
//! covers, so every derived secret can say what its context was ("ClientHello..ServerHello").

use crate::crypto::hash::{HashAlg, HashState, Output};
use crate::messages::enums::HandshakeType;

/// Misuse of the transcript by the state machine (never caused by peer bytes alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TranscriptError {
    /// The hash was already chosen and a different one was asked for. After a
    /// HelloRetryRequest the ServerHello must keep the HRR's suite (RFC 8446 §4.1.4), so the
    /// hash can never legitimately change.
    HashChanged {
        /// Hash in use.
        current: HashAlg,
        /// Hash requested.
        requested: HashAlg,
    },
    /// The operation needs the hash function, which is not chosen yet.
    NotStarted,
    /// `replace_with_message_hash` needs a transcript holding exactly the first ClientHello
    /// (RFC 8446 §4.4.1); a second HelloRetryRequest also ends up here.
    NotFirstClientHello,
}

impl core::fmt::Display for TranscriptError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TranscriptError::HashChanged { current, requested } => {
                write!(
                    f,
                    "transcript hash is {current}, cannot switch to {requested}"
                )
            }
            TranscriptError::NotStarted => f.write_str("transcript hash not chosen yet"),
            TranscriptError::NotFirstClientHello => {
                f.write_str("message_hash replaces only a lone first ClientHello")
            }
        }
    }
}

impl std::error::Error for TranscriptError {}

// One per connection: boxing the hash state would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum State {
    /// Hash not chosen: whole messages kept verbatim.
    Buffering(Vec<u8>),
    /// Running hash of everything added so far.
    Hashing(HashState),
}

/// How many message types [`Transcript::covered`] remembers. A handshake hashes at most 13
/// messages (ClientHello, HelloRetryRequest as message_hash + HRR, ClientHello2, ServerHello,
/// EncryptedExtensions, CertificateRequest, Certificate, CertificateVerify, Finished,
/// EndOfEarlyData, and the client's Certificate, CertificateVerify, Finished), so a fixed array
/// holds them without allocating.
const MAX_COVERED: usize = 16;

/// Transcript-Hash(M1 || M2 || ... ) over whole handshake messages including their 4-byte
/// headers (RFC 8446 §4.4.1), excluding record-layer headers.
#[derive(Clone, Debug)]
pub struct Transcript {
    state: State,
    /// Types of the messages added, in order: `covered[..covered_len]`. Descriptive only (what a
    /// derived secret's context was); past [`MAX_COVERED`] further types are not recorded.
    covered: [HandshakeType; MAX_COVERED],
    covered_len: usize,
    /// The last hash read and its function, until a message is added.
    last: LastHash,
    /// The running state over the transcript and a prefix read with it, until a message is
    /// added.
    prefix: Prefix,
}

/// What [`Transcript::hash_of_prefix_with_alg`] hashed beyond the transcript — a ClientHello up
/// to its binders list (RFC 8446 §4.2.11.2) — and the running state after it: the whole
/// ClientHello is added next, and when it starts with these bytes the state continues from
/// there instead of hashing them again (a 1.2 KB prefix with an X25519MLKEM768 share: on the
/// server, and on a client whose transcript hashes from the start, which is when every offered
/// suite and the PSK share one hash, or after a HelloRetryRequest). The bytes are kept to check
/// that: only an exact prefix is skipped. Boxed: it lives from a binder to the next `add`, and
/// every transcript kept longer (a connected one for post-handshake authentication) stays small.
#[derive(Clone, Default)]
struct Prefix(std::sync::OnceLock<Box<(Vec<u8>, HashState)>>);

impl core::fmt::Debug for Prefix {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0.get().map(|b| &**b) {
            Some((p, _)) => write!(f, "{} bytes", p.len()),
            None => f.write_str("none"),
        }
    }
}

/// The transcript hash last read, under its function: several values come from one
/// transcript (c/s hs traffic over ClientHello..ServerHello; c/s ap traffic, the exporter
/// master secret and one Finished over ClientHello..server Finished), and each reading
/// otherwise clones the running state and finishes it (a compression). Emptied whenever the
/// transcript changes.
#[derive(Clone, Default)]
struct LastHash(std::sync::OnceLock<(HashAlg, Output)>);

impl LastHash {
    /// The value for `alg`, from the one kept or from `compute` (then kept).
    fn get(&self, alg: HashAlg, compute: impl FnOnce() -> Output) -> Output {
        match self.0.get() {
            Some((a, h)) if *a == alg => h.clone(),
            Some(_) => compute(),
            None => self.0.get_or_init(|| (alg, compute())).1.clone(),
        }
    }

    fn clear(&mut self) {
        self.0.take();
    }
}

/// Transcript hashes are public values, but `Debug` of a transcript stays what it was: the
/// state and the messages covered.
impl core::fmt::Debug for LastHash {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "kept"
        } else {
            "none"
        })
    }
}

impl Default for Transcript {
    fn default() -> Self {
        Self::new()
    }
}

impl Transcript {
    /// An empty transcript whose hash function is not chosen yet.
    pub fn new() -> Transcript {
        Transcript {
            state: State::Buffering(Vec::new()),
            covered: [HandshakeType::ClientHello; MAX_COVERED],
            covered_len: 0,
            last: LastHash::default(),
            prefix: Prefix::default(),
        }
    }

    /// An empty transcript hashing with `alg` from the start: the suite (so the hash) is known
    /// before the first message, as on a server choosing it from the ClientHello it is about
    /// to add.
    pub fn with_hash(alg: HashAlg) -> Transcript {
        Transcript {
            state: State::Hashing(HashState::new(alg)),
            ..Transcript::new()
        }
    }

    /// Appends one whole handshake message (`msg` starts with its 4-byte header), exactly the
    /// bytes sent or received: hashing a re-encoding could differ from what the peer hashed.
    pub fn add(&mut self, typ: HandshakeType, msg: &[u8]) {
        self.last.clear();
        let prefix = self.prefix.0.take();
        match &mut self.state {
            State::Buffering(buf) => buf.extend_from_slice(msg),
            // The state over this transcript and the start of `msg` (nothing was added since
            // it was kept): only the rest remains to hash.
            State::Hashing(h) => match prefix.map(|b| *b) {
                Some((p, after)) if after.alg() == h.alg() && msg.starts_with(&p) => {
                    *h = after;
                    h.update(&msg[p.len()..]);
                }
                _ => h.update(msg),
            },
        }
        if let Some(slot) = self.covered.get_mut(self.covered_len) {
            *slot = typ;
            self.covered_len += 1;
        }
    }

    /// Chooses the hash (the negotiated suite's) and hashes what was buffered. Calling it again
    /// with the same function is a no-op.
    pub fn start_hash(&mut self, alg: HashAlg) -> Result<(), TranscriptError> {
        match &mut self.state {
            State::Hashing(h) if h.alg() == alg => Ok(()),
            State::Hashing(h) => Err(TranscriptError::HashChanged {
                current: h.alg(),
                requested: alg,
            }),
            State::Buffering(buf) => {
                let mut h = HashState::new(alg);
                h.update(buf);
                self.state = State::Hashing(h);
                Ok(())
            }
        }
    }

    /// The hash function, once chosen.
    pub fn alg(&self) -> Option<HashAlg> {
        match &self.state {
            State::Buffering(_) => None,
            State::Hashing(h) => Some(h.alg()),
        }
    }

    /// Transcript-Hash of everything added so far.
    ///
    /// Before [`start_hash`](Self::start_hash) this is the empty [`Output`]: any key or Finished
    /// value computed from it is wrong, so a state-machine slip fails closed instead of panicking.
    pub fn current_hash(&self) -> Output {
        match &self.state {
            State::Buffering(_) => Output::empty(),
            State::Hashing(h) => self.last.get(h.alg(), || h.current()),
        }
    }

    /// Transcript-Hash under `alg`: works before the hash is chosen too (a client's early
    /// secrets hash the ClientHello with the PSK's hash, RFC 8446 §7.1). `None` if the
    /// transcript already runs another hash.
    pub fn current_hash_as(&self, alg: HashAlg) -> Option<Output> {
        self.hash_of_prefix_with_alg(alg, &[])
    }

    /// Hash of the transcript followed by `extra`, without adding `extra`: the PSK binder input
    /// (RFC 8446 §4.2.11.2), where `extra` is the ClientHello up to its binders list. Like
    /// [`current_hash`](Self::current_hash), empty before `start_hash`.
    pub fn hash_of_prefix_with(&self, extra: &[u8]) -> Output {
        match &self.state {
            State::Buffering(_) => Output::empty(),
            State::Hashing(h) => self
                .hash_of_prefix_with_alg(h.alg(), extra)
                .unwrap_or_else(Output::empty),
        }
    }

    /// Hash of the transcript followed by `parts`, read once: nothing is kept for a later `add`
    /// (ECH's acceptance confirmation, RFC 9849 §7.2, hashes a ServerHello that is never added
    /// as it was hashed). Empty before `start_hash`.
    pub fn hash_with_parts(&self, parts: &[&[u8]]) -> Output {
        let mut h = match &self.state {
            State::Buffering(_) => return Output::empty(),
            State::Hashing(h) => h.clone(),
        };
        for p in parts {
            h.update(p);
        }
        h.finish()
    }

    /// [`hash_of_prefix_with`](Self::hash_of_prefix_with) under `alg`, the PSK's hash, which
    /// also works before the hash is chosen (the first ClientHello's binder is computed before
    /// the server picks a suite). `None` if the transcript already runs another hash: after a
    /// HelloRetryRequest, a PSK whose hash differs from the selected suite's cannot be offered.
    pub fn hash_of_prefix_with_alg(&self, alg: HashAlg, extra: &[u8]) -> Option<Output> {
        match &self.state {
            State::Buffering(buf) if extra.is_empty() => Some(self.last.get(alg, || alg.hash(buf))),
            State::Buffering(buf) => {
                let mut h = HashState::new(alg);
                h.update(buf);
                h.update(extra);
                Some(h.finish())
            }
            State::Hashing(h) if h.alg() == alg => {
                if extra.is_empty() {
                    return Some(self.last.get(alg, || h.current()));
                }
                if let Some((p, after)) = self.prefix.0.get().map(|b| &**b) {
                    if p == extra {
                        return Some(after.current());
                    }
                }
                let mut h = h.clone();
                h.update(extra);
                let out = h.current();
                // Kept for `add` if no other prefix is (the first one read since the last add).
                let _ = self.prefix.0.set(Box::new((extra.to_vec(), h)));
                Some(out)
            }
            State::Hashing(_) => None,
        }
    }

    /// HelloRetryRequest (RFC 8446 §4.4.1): replaces ClientHello1 with the synthetic
    ///
    /// ```text
    /// message_hash(254) 00 00 Hash.length || Hash(ClientHello1)
    /// ```
    ///
    /// Call after `start_hash` with the HRR's suite and before adding the HRR. Only a transcript
    /// holding exactly one ClientHello qualifies, which also rejects a second HRR.
    pub fn replace_with_message_hash(&mut self) -> Result<(), TranscriptError> {
        let State::Hashing(h) = &self.state else {
            return Err(TranscriptError::NotStarted);
        };
        if self.covered() != [HandshakeType::ClientHello] {
            return Err(TranscriptError::NotFirstClientHello);
        }
        let alg = h.alg();
        let ch1 = self.last.get(alg, || h.current());
        self.last.clear();
        self.prefix.0.take();
        let mut fresh = HashState::new(alg);
        fresh.update(&[
            HandshakeType::MessageHash.to_repr(),
            0,
            0,
            alg.output_len() as u8,
        ]);
        fresh.update(&ch1);
        self.state = State::Hashing(fresh);
        self.covered[0] = HandshakeType::MessageHash;
        Ok(())
    }

    /// The messages covered, in order (`MessageHash` stands for a replaced ClientHello1).
    pub fn covered(&self) -> &[HandshakeType] {
        &self.covered[..self.covered_len]
    }

    /// Short description of what the hash covers: `""`, `"ClientHello"`, or
    /// `"ClientHello..ServerHello"` (first..last), as the RFC writes transcript contexts. The
    /// synthetic message of a HelloRetryRequest is shown under its RFC name, `message_hash`.
    /// Certificate, CertificateVerify and Finished, which both sides send, are named with their
    /// sender ("ClientHello..server Finished"): in TLS 1.3 the client's come after the server's
    /// Finished, so the position tells. A post-handshake authentication context, the handshake
    /// through the client's Finished and then one request and its answer (§4.4.1), is shown as
    /// the two runs it joins: "ClientHello..client Finished + CertificateRequest..client
    /// CertificateVerify".
    pub fn covers(&self) -> String {
        let covered = self.covered();
        let server_finished = covered.iter().position(|t| *t == HandshakeType::Finished);
        let name = |i: usize| -> String {
            let t = covered[i];
            match t {
                HandshakeType::MessageHash => "message_hash".to_string(),
                HandshakeType::Certificate
                | HandshakeType::CertificateVerify
                | HandshakeType::Finished => {
                    let sender = match server_finished {
                        Some(f) if i > f => "client",
                        _ => "server",
                    };
                    format!("{sender} {t:?}")
                }
                other => format!("{other:?}"),
            }
        };
        let run = |a: usize, b: usize| -> String {
            if a == b {
                name(a)
            } else {
                format!("{}..{}", name(a), name(b))
            }
        };
        // The client's Finished ends the handshake; messages after it are post-handshake.
        let client_finished = server_finished.and_then(|f| {
            covered[f + 1..]
                .iter()
                .position(|t| *t == HandshakeType::Finished)
                .map(|i| f + 1 + i)
        });
        match (covered.len(), client_finished) {
            (0, _) => String::new(),
            (n, Some(cf)) if cf + 1 < n => format!("{} + {}", run(0, cf), run(cf + 1, n - 1)),
            (n, _) => run(0, n - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyschedule::test_vectors as v;

    #[test]
    fn buffers_until_hash_is_chosen() {
        let mut t = Transcript::new();
        t.add(HandshakeType::ClientHello, &v::s3_client_hello());
        assert!(t.current_hash().is_empty());
        assert_eq!(t.alg(), None);
        t.start_hash(HashAlg::Sha256).unwrap();
        t.add(HandshakeType::ServerHello, &v::s3_server_hello());
        // RFC 8448 §3: the c/s hs traffic context, Hash(ClientHello || ServerHello).
        assert_eq!(
            hex::encode(t.current_hash()),
            "860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8"
        );
        assert_eq!(t.covers(), "ClientHello..ServerHello");
        assert_eq!(t.start_hash(HashAlg::Sha256), Ok(()));
        assert_eq!(
            t.start_hash(HashAlg::Sha384),
            Err(TranscriptError::HashChanged {
                current: HashAlg::Sha256,
                requested: HashAlg::Sha384
            })
        );
        assert_eq!(t.current_hash_as(HashAlg::Sha384), None);
    }

    #[test]
    fn hash_as_before_start_and_prefix_does_not_commit() {
        let mut t = Transcript::new();
        let ch = v::s3_client_hello();
        t.add(HandshakeType::ClientHello, &ch[..100]);
        let with = t
            .hash_of_prefix_with_alg(HashAlg::Sha256, &ch[100..])
            .unwrap();
        assert_eq!(with, HashAlg::Sha256.hash(&ch));
        assert!(
            t.hash_of_prefix_with(&ch[100..]).is_empty(),
            "no hash chosen yet"
        );
        assert_eq!(
            t.current_hash_as(HashAlg::Sha256).unwrap(),
            HashAlg::Sha256.hash(&ch[..100])
        );
        t.start_hash(HashAlg::Sha256).unwrap();
        assert_eq!(t.hash_of_prefix_with(&ch[100..]), with);
        assert_eq!(t.hash_of_prefix_with_alg(HashAlg::Sha384, b""), None);
        assert_eq!(t.current_hash(), HashAlg::Sha256.hash(&ch[..100]));
    }

    #[test]
    fn rfc8448_s5_hello_retry_request_message_hash() {
        let mut t = Transcript::new();
        t.add(HandshakeType::ClientHello, &v::s5_client_hello_1());
        assert_eq!(
            t.replace_with_message_hash(),
            Err(TranscriptError::NotStarted)
        );
        t.start_hash(HashAlg::Sha256).unwrap();
        t.replace_with_message_hash().unwrap();
        t.add(HandshakeType::ServerHello, &v::s5_hello_retry_request());
        // A second HRR cannot be folded in.
        assert_eq!(
            t.replace_with_message_hash(),
            Err(TranscriptError::NotFirstClientHello)
        );
        // Computed extras §5: transcript hash before ClientHello2 is sent, then before ServerHello.
        assert_eq!(
            hex::encode(t.current_hash()),
            "74eec04d09c926e86c0647c37ba4dc18d277eec3337e4608c4d829b77e2fd2b3"
        );
        t.add(HandshakeType::ClientHello, &v::s5_client_hello_2());
        t.add(HandshakeType::ServerHello, &v::s5_server_hello());
        // ... and the context of "c hs traffic" / "s hs traffic" in §5.
        assert_eq!(
            hex::encode(t.current_hash()),
            "8aa8e828ec2f8a884fec95a3139de01c15a3daa7ff5bfc3f4bfcc21b438d7bf8"
        );
        assert_eq!(t.covers(), "message_hash..ServerHello");
        assert_eq!(
            t.covered(),
            &[
                HandshakeType::MessageHash,
                HandshakeType::ServerHello,
                HandshakeType::ClientHello,
                HandshakeType::ServerHello
            ]
        );
    }

    #[test]
    fn a_kept_hash_lasts_until_the_transcript_changes() {
        let (ch, sh) = (v::s3_client_hello(), v::s3_server_hello());
        let mut t = Transcript::with_hash(HashAlg::Sha256);
        t.add(HandshakeType::ClientHello, &ch);
        assert_eq!(t.current_hash(), HashAlg::Sha256.hash(&ch));
        // Read again: the kept value, under the function asked for.
        assert_eq!(t.current_hash(), HashAlg::Sha256.hash(&ch));
        assert_eq!(
            t.current_hash_as(HashAlg::Sha256),
            Some(HashAlg::Sha256.hash(&ch))
        );
        assert_eq!(t.current_hash_as(HashAlg::Sha384), None);
        let before = t.clone();
        t.add(HandshakeType::ServerHello, &sh);
        assert_eq!(
            t.current_hash(),
            HashAlg::Sha256.hash(&[ch.clone(), sh].concat())
        );
        assert_eq!(before.current_hash(), HashAlg::Sha256.hash(&ch));

        // Before the hash is chosen, each function gets its own value.
        let mut b = Transcript::new();
        b.add(HandshakeType::ClientHello, &ch);
        for alg in [HashAlg::Sha256, HashAlg::Sha384, HashAlg::Sha256] {
            assert_eq!(b.current_hash_as(alg), Some(alg.hash(&ch)));
        }
        b.start_hash(HashAlg::Sha384).unwrap();
        assert_eq!(b.current_hash(), HashAlg::Sha384.hash(&ch));
    }

    #[test]
    fn a_binder_prefix_is_not_hashed_again_only_when_the_message_starts_with_it() {
        let ch = v::s3_client_hello();
        let (n, sha) = (100, HashAlg::Sha256);
        // The ClientHello whose prefix was read: continued from the kept state.
        let mut t = Transcript::with_hash(sha);
        assert_eq!(t.hash_of_prefix_with(&ch[..n]), sha.hash(&ch[..n]));
        assert_eq!(t.hash_of_prefix_with(&ch[..n]), sha.hash(&ch[..n]));
        t.add(HandshakeType::ClientHello, &ch);
        assert_eq!(t.current_hash(), sha.hash(&ch));
        // A message that differs from the prefix in its last byte, or is shorter than it.
        let mut other = ch[..n].to_vec();
        other[n - 1] ^= 1;
        for (prefix, msg) in [(&other[..], &ch[..]), (&ch[..], &ch[..n])] {
            let mut t = Transcript::with_hash(sha);
            t.hash_of_prefix_with(prefix);
            t.add(HandshakeType::ClientHello, msg);
            assert_eq!(t.current_hash(), sha.hash(msg));
        }
        // A prefix read after some messages continues from them, and is used once.
        let mut t = Transcript::with_hash(sha);
        t.add(HandshakeType::ClientHello, &ch);
        t.hash_of_prefix_with(&ch[..n]);
        t.add(HandshakeType::ClientHello, &ch);
        t.add(HandshakeType::ClientHello, &ch[..n]);
        assert_eq!(
            t.current_hash(),
            sha.hash(&[&ch[..], &ch, &ch[..n]].concat())
        );
        // message_hash drops it: the HelloRetryRequest is hashed after the synthetic message.
        let (ch1, hrr) = (v::s5_client_hello_1(), v::s5_hello_retry_request());
        let mut t = Transcript::with_hash(sha);
        t.add(HandshakeType::ClientHello, &ch1);
        t.hash_of_prefix_with(&hrr[..n]);
        t.replace_with_message_hash().unwrap();
        t.add(HandshakeType::ServerHello, &hrr);
        let synthetic = [&[254, 0, 0, 32][..], &sha.hash(&ch1)].concat();
        assert_eq!(t.current_hash(), sha.hash(&[synthetic, hrr].concat()));
    }

    #[test]
    fn covers_names_the_sender_of_messages_both_sides_send() {
        let mut t = Transcript::new();
        for typ in [
            HandshakeType::ClientHello,
            HandshakeType::ServerHello,
            HandshakeType::EncryptedExtensions,
            HandshakeType::Certificate,
            HandshakeType::CertificateVerify,
        ] {
            t.add(typ, &[typ.to_repr(), 0, 0, 0]);
        }
        assert_eq!(t.covers(), "ClientHello..server CertificateVerify");
        t.add(HandshakeType::Finished, &[20, 0, 0, 0]);
        assert_eq!(t.covers(), "ClientHello..server Finished");
        t.add(HandshakeType::Certificate, &[11, 0, 0, 0]);
        assert_eq!(t.covers(), "ClientHello..client Certificate");
        t.add(HandshakeType::Finished, &[20, 0, 0, 0]);
        assert_eq!(t.covers(), "ClientHello..client Finished");
        // Post-handshake authentication (§4.4.1): the handshake, then one request's messages.
        t.add(HandshakeType::CertificateRequest, &[13, 0, 0, 0]);
        assert_eq!(
            t.covers(),
            "ClientHello..client Finished + CertificateRequest"
        );
        t.add(HandshakeType::Certificate, &[11, 0, 0, 0]);
        t.add(HandshakeType::CertificateVerify, &[15, 0, 0, 0]);
        assert_eq!(
            t.covers(),
            "ClientHello..client Finished + CertificateRequest..client CertificateVerify"
        );
    }
}
