//! EncodedClientHelloInner (RFC 9849 §5.1): the inner ClientHello as it is sealed — session id
//! emptied, a run of extensions shared with the outer one replaced by `ech_outer_extensions`,
//! zeros padded on (§6.1.3) — and the server's reverse, with every §5.1 check; and
//! ClientHelloOuterAAD (§5.2), the outer ClientHello with the payload zeroed.

use core::ops::Range;

use super::wire::{
    assemble, decode_outer_extensions, encode_outer_extensions, EchClientHello, HelloParts,
    ECH_OUTER_EXTENSIONS, ENCRYPTED_CLIENT_HELLO,
};
use super::EchError;
use crate::messages::codec::{DecodeError, Reader};

/// server_name (RFC 6066).
const SERVER_NAME: u16 = 0;

/// How the padding of one EncodedClientHelloInner was made (§6.1.3), for the ledger.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InnerLayout {
    /// Bytes of the encoded ClientHello before padding.
    pub client_hello: usize,
    /// Padding for the server name: max(0, L − D), or L + 9 without a server_name.
    pub name_padding: usize,
    /// Padding to the next multiple of 32.
    pub round_padding: usize,
    /// Bytes the `ech_outer_extensions` reference saved: the referenced extensions' size
    /// minus the reference's own.
    pub saved: usize,
}

impl InnerLayout {
    /// The whole EncodedClientHelloInner: what the AEAD seals.
    pub fn total(&self) -> usize {
        self.client_hello + self.name_padding + self.round_padding
    }
}

/// Encodes the ClientHelloInner `inner` (a ClientHello body: no handshake header) for sealing:
/// legacy_session_id emptied, the extensions listed in `compress` (which must sit consecutively
/// in `inner`, in that order, as §6.1 requires the client to arrange) replaced by one
/// `ech_outer_extensions`, then padded with `maximum_name_length` as §6.1.3 recommends.
pub fn encode(
    inner: &[u8],
    compress: &[u16],
    maximum_name_length: u8,
) -> Result<(Vec<u8>, InnerLayout), EchError> {
    let p = HelloParts::parse(inner).map_err(EchError::Decode)?;
    let mut exts: Vec<&[u8]> = Vec::with_capacity(p.exts.len());
    let reference = encode_outer_extensions(compress);
    let mut header = Vec::with_capacity(4 + reference.len());
    header.extend_from_slice(&ECH_OUTER_EXTENSIONS.to_be_bytes());
    header.extend_from_slice(&(reference.len() as u16).to_be_bytes());
    header.extend_from_slice(&reference);
    let mut saved = 0usize;
    let mut i = 0;
    while i < p.exts.len() {
        let e = &p.exts[i];
        if !compress.is_empty() && e.typ == compress[0] {
            let run = p.exts.get(i..i + compress.len()).unwrap_or_default();
            if run.len() != compress.len() || run.iter().zip(compress).any(|(e, t)| e.typ != *t) {
                return Err(EchError::Local(
                    "the extensions to compress are not consecutive in ClientHelloInner",
                ));
            }
            saved = run.iter().map(|e| e.end - e.start).sum::<usize>();
            exts.push(&header);
            i += compress.len();
            continue;
        }
        exts.push(&inner[e.start..e.end]);
        i += 1;
    }
    if !compress.is_empty() && saved == 0 {
        return Err(EchError::Local("an extension to compress is missing"));
    }
    let saved = saved.saturating_sub(header.len());
    let ch = assemble(
        &inner[..p.random + 32],
        &[],
        &inner[p.middle.0..p.middle.1],
        &exts,
    );
    let l = usize::from(maximum_name_length);
    let name_padding = match server_name_len(inner, &p) {
        Some(d) => l.saturating_sub(d),
        None => l + 9,
    };
    let len = ch.len() + name_padding;
    let round_padding = 31 - ((len - 1) % 32);
    let layout = InnerLayout {
        client_hello: ch.len(),
        name_padding,
        round_padding,
        saved,
    };
    let mut out = ch;
    out.resize(layout.total(), 0);
    Ok((out, layout))
}

/// The length of the first host name in the server_name extension, if there is one.
fn server_name_len(body: &[u8], p: &HelloParts) -> Option<usize> {
    let e = p.find(SERVER_NAME)?;
    let mut r = Reader::new(&body[e.data_start..e.end]);
    let mut list = r.sub_u16("server_name_list").ok()?;
    list.u8("name_type").ok()?;
    Some(list.sub_u16("host_name").ok()?.remaining())
}

/// The server's reverse of [`encode`] (§5.1): `encoded` is what the HPKE context opened,
/// `outer` the ClientHelloOuter body it came in. Returns the ClientHelloInner body: the
/// encoded ClientHello with the outer legacy_session_id and the referenced outer extensions
/// put back, built in one linear pass (Appendix A). The result never holds
/// `ech_outer_extensions`, which "MUST NOT appear in either ClientHelloOuter or
/// ClientHelloInner" (§5.1): a second one, which would stay, and a reference to one, which
/// would copy it in, are refused (illegal_parameter; §5.1 names no alert, this is §5.1's
/// alert for every other `ech_outer_extensions` violation).
pub fn decode(encoded: &[u8], outer: &[u8]) -> Result<Vec<u8>, EchError> {
    let (p, end) = HelloParts::parse_prefix(encoded).map_err(EchError::Decode)?;
    // "If any padding byte is non-zero, the server MUST abort ... illegal_parameter".
    if encoded[end..].iter().any(|b| *b != 0) {
        return Err(EchError::NonZeroPadding);
    }
    if p.session_id.1 - p.session_id.0 != 1 {
        return Err(EchError::InnerSessionId);
    }
    let o = HelloParts::parse(outer).map_err(EchError::Decode)?;
    let mut exts: Vec<&[u8]> = Vec::with_capacity(p.exts.len() + o.exts.len());
    let mut referenced = false;
    for e in &p.exts {
        if e.typ != ECH_OUTER_EXTENSIONS {
            exts.push(&encoded[e.start..e.end]);
            continue;
        }
        if referenced {
            return Err(EchError::OuterExtensions(
                "ech_outer_extensions appears twice (the second would stay in ClientHelloInner)",
            ));
        }
        referenced = true;
        let list = decode_outer_extensions(&encoded[e.data_start..e.end])
            .map_err(|_| EchError::OuterExtensions("malformed ech_outer_extensions"))?;
        // Appendix A: one cursor over the outer extensions, so each is copied at most once
        // and in the outer's order; a repeated or reordered reference runs off the end.
        let mut i = 0;
        for t in list {
            if t == ENCRYPTED_CLIENT_HELLO {
                return Err(EchError::OuterExtensions(
                    "ech_outer_extensions references encrypted_client_hello",
                ));
            }
            if t == ECH_OUTER_EXTENSIONS {
                return Err(EchError::OuterExtensions(
                    "ech_outer_extensions references ech_outer_extensions",
                ));
            }
            while i < o.exts.len() && o.exts[i].typ != t {
                i += 1;
            }
            let Some(oe) = o.exts.get(i) else {
                return Err(EchError::OuterExtensions(
                    "a referenced extension is missing from ClientHelloOuter, repeated or out of order",
                ));
            };
            exts.push(&outer[oe.start..oe.end]);
            i += 1;
        }
    }
    Ok(assemble(
        &encoded[..p.random + 32],
        &outer[o.session_id.0 + 1..o.session_id.1],
        &encoded[p.middle.0..p.middle.1],
        &exts,
    ))
}

/// [`decode`], as the handshake message ClientHelloInner (its 4-byte header included), which
/// the transcript hashes.
pub fn decode_message(encoded: &[u8], outer: &[u8]) -> Result<Vec<u8>, EchError> {
    let body = decode(encoded, outer)?;
    let len = u32::try_from(body.len())
        .ok()
        .filter(|l| *l < 1 << 24)
        .ok_or(EchError::Illegal("ClientHelloInner too long"))?;
    let mut msg = Vec::with_capacity(4 + body.len());
    msg.push(1); // client_hello
    msg.extend_from_slice(&len.to_be_bytes()[1..]);
    msg.extend_from_slice(&body);
    Ok(msg)
}

/// For the ledger, of an EncodedClientHelloInner that [`decode`] accepted: where its
/// ClientHello ends (the rest is padding, §5.1) and the types its `ech_outer_extensions`
/// references, in order (none without one).
pub fn encoded_parts(encoded: &[u8]) -> Result<(usize, Vec<u16>), EchError> {
    let (p, end) = HelloParts::parse_prefix(encoded).map_err(EchError::Decode)?;
    let refs = match p.find(ECH_OUTER_EXTENSIONS) {
        Some(e) => decode_outer_extensions(&encoded[e.data_start..e.end])
            .map_err(|_| EchError::OuterExtensions("malformed ech_outer_extensions"))?,
        None => Vec::new(),
    };
    Ok((end, refs))
}

/// The outer-type `encrypted_client_hello` of the ClientHello body `hello`, decoded, and where
/// its data starts in `hello`.
fn find_outer(hello: &[u8]) -> Option<(usize, EchClientHello)> {
    let p = HelloParts::parse(hello).ok()?;
    let e = p.find(ENCRYPTED_CLIENT_HELLO)?;
    match EchClientHello::decode(&hello[e.data_start..e.end]).ok()? {
        outer @ EchClientHello::Outer { .. } => Some((e.data_start, outer)),
        EchClientHello::Inner => None,
    }
}

/// The outer-type `encrypted_client_hello` of the ClientHello body `hello`, if it has one
/// that decodes.
pub fn outer_extension(hello: &[u8]) -> Option<EchClientHello> {
    find_outer(hello).map(|(_, e)| e)
}

/// Where the `payload` of the outer `encrypted_client_hello` lies in the ClientHello body
/// `outer`, if it has an outer-type one.
pub fn payload_range(outer: &[u8]) -> Option<Range<usize>> {
    let (data_start, EchClientHello::Outer { enc, payload, .. }) = find_outer(outer)? else {
        return None;
    };
    // type(1) kdf(2) aead(2) config_id(1) enc<2> payload<2>
    let start = data_start + 1 + 4 + 1 + 2 + enc.len() + 2;
    Some(start..start + payload.len())
}

/// ClientHelloOuterAAD (§5.2): `outer` with the payload's bytes set to zero.
pub fn aad(outer: &[u8]) -> Result<Vec<u8>, EchError> {
    let r = payload_range(outer).ok_or(EchError::Decode(DecodeError::Invalid {
        what: "encrypted_client_hello",
    }))?;
    let mut a = outer.to_vec();
    a[r].fill(0);
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ech::wire::HpkeSymmetricCipherSuite;
    use crate::messages::enums::{HpkeAeadId, HpkeKdfId};

    fn ext(typ: u16, data: &[u8]) -> Vec<u8> {
        let mut e = typ.to_be_bytes().to_vec();
        e.extend_from_slice(&(data.len() as u16).to_be_bytes());
        e.extend_from_slice(data);
        e
    }

    fn sni(name: &str) -> Vec<u8> {
        let n = name.as_bytes();
        let mut d = ((n.len() + 3) as u16).to_be_bytes().to_vec();
        d.push(0);
        d.extend_from_slice(&(n.len() as u16).to_be_bytes());
        d.extend_from_slice(n);
        ext(SERVER_NAME, &d)
    }

    fn hello(random: u8, sid: &[u8], exts: &[Vec<u8>]) -> Vec<u8> {
        let refs: Vec<&[u8]> = exts.iter().map(|e| e.as_slice()).collect();
        let head = [[3u8, 3].as_slice(), &[random; 32]].concat();
        assemble(&head, sid, &[0, 2, 0x13, 1, 1, 0], &refs)
    }

    /// An outer ClientHello carrying `ech` (an outer ECHClientHello) after `exts`.
    fn outer(exts: &[Vec<u8>], payload_len: usize) -> Vec<u8> {
        let ech = EchClientHello::Outer {
            suite: HpkeSymmetricCipherSuite {
                kdf_id: HpkeKdfId::HkdfSha256,
                aead_id: HpkeAeadId::Aes128Gcm,
            },
            config_id: 3,
            enc: vec![0xee; 32],
            payload: vec![0x55; payload_len],
        };
        let mut all = exts.to_vec();
        all.push(ext(ENCRYPTED_CLIENT_HELLO, &ech.encode()));
        hello(0x0f, &[9; 32], &all)
    }

    // Shared extensions: supported_groups (10), key_share (51), supported_versions (43).
    fn shared() -> Vec<Vec<u8>> {
        vec![
            ext(10, &[0, 2, 0x11, 0xec]),
            ext(51, &[0xaa; 40]),
            ext(43, &[2, 3, 4]),
        ]
    }

    #[test]
    fn encode_then_decode_gives_the_inner_hello_back() {
        let s = shared();
        let inner = hello(
            0x11,
            &[9; 32],
            &[
                sni("secret.example"),
                s[0].clone(),
                s[1].clone(),
                s[2].clone(),
                ext(ENCRYPTED_CLIENT_HELLO, &[1]),
            ],
        );
        let (enc, layout) = encode(&inner, &[10, 51, 43], 32).unwrap();
        // The reference (4 + 1 + 6) replaces three extensions (8 + 44 + 7).
        assert_eq!(layout.saved, 59 - 11);
        assert_eq!(layout.name_padding, 32 - "secret.example".len());
        assert_eq!(enc.len() % 32, 0);
        assert_eq!(enc.len(), layout.total());
        let o = outer(
            &[
                sni("public.example"),
                s[0].clone(),
                ext(0x16, &[]),
                s[1].clone(),
                s[2].clone(),
            ],
            100,
        );
        assert_eq!(decode(&enc, &o).unwrap(), inner);
    }

    #[test]
    fn padding_without_a_server_name_is_l_plus_9() {
        let inner = hello(1, &[], &[ext(43, &[2, 3, 4])]);
        let (_, l) = encode(&inner, &[], 20).unwrap();
        assert_eq!(l.name_padding, 29);
        assert_eq!(l.saved, 0);
        assert_eq!((l.client_hello + l.name_padding + l.round_padding) % 32, 0);
    }

    #[test]
    fn compressed_extensions_must_be_consecutive() {
        let s = shared();
        let inner = hello(1, &[], &[s[0].clone(), sni("a.example"), s[1].clone()]);
        assert!(matches!(
            encode(&inner, &[10, 51], 0),
            Err(EchError::Local(_))
        ));
        assert!(matches!(
            encode(&inner, &[0x99], 0),
            Err(EchError::Local(_))
        ));
    }

    /// Every §5.1 check on the server's side, each an illegal_parameter.
    #[test]
    fn decode_refuses_what_section_5_1_forbids() {
        let s = shared();
        let o = outer(&[s[0].clone(), s[1].clone()], 64);
        let with = |refs: &[u16], sid: &[u8], pad: &[u8]| {
            let mut e = vec![ext(43, &[2, 3, 4])];
            e.push(ext(ECH_OUTER_EXTENSIONS, &encode_outer_extensions(refs)));
            let mut b = hello(2, sid, &e);
            b.extend_from_slice(pad);
            decode(&b, &o)
        };
        assert!(with(&[10, 51], &[], &[0; 5]).is_ok());
        let illegal = |r: Result<Vec<u8>, EchError>| {
            let e = r.unwrap_err();
            assert_eq!(
                e.alert(),
                crate::messages::enums::AlertDescription::IllegalParameter,
                "{e}"
            );
        };
        illegal(with(&[10, 51], &[], &[0, 1]));
        illegal(with(&[10, 0x99], &[], &[]));
        illegal(with(&[51, 10], &[], &[]));
        illegal(with(&[10, 10], &[], &[]));
        illegal(with(&[10, ENCRYPTED_CLIENT_HELLO], &[], &[]));
        // §5.1: ech_outer_extensions never reaches ClientHelloInner, even when the outer
        // carries one to copy.
        let o2 = outer(&[s[0].clone(), ext(ECH_OUTER_EXTENSIONS, &[2, 0, 10])], 64);
        let refs = ext(
            ECH_OUTER_EXTENSIONS,
            &encode_outer_extensions(&[10, ECH_OUTER_EXTENSIONS]),
        );
        illegal(decode(&hello(2, &[], &[refs]), &o2));
        illegal(with(&[10, 51], &[1], &[]));
        // Two references.
        let mut e = vec![ext(
            ECH_OUTER_EXTENSIONS,
            &encode_outer_extensions(&[10, 51]),
        )];
        e.push(ext(
            ECH_OUTER_EXTENSIONS,
            &encode_outer_extensions(&[10, 51]),
        ));
        illegal(decode(&hello(2, &[], &e), &o));
        // A truncated encoded ClientHello is a decode_error.
        let b = hello(2, &[], &[ext(43, &[2, 3, 4])]);
        let e = decode(&b[..b.len() - 1], &o).unwrap_err();
        assert_eq!(
            e.alert(),
            crate::messages::enums::AlertDescription::DecodeError
        );
    }

    #[test]
    fn aad_zeroes_exactly_the_payload() {
        let o = outer(&shared(), 77);
        let r = payload_range(&o).unwrap();
        assert_eq!(r.len(), 77);
        assert!(o[r.clone()].iter().all(|b| *b == 0x55));
        let a = aad(&o).unwrap();
        assert!(a[r.clone()].iter().all(|b| *b == 0));
        assert_eq!(a[..r.start], o[..r.start]);
        assert_eq!(a[r.end..], o[r.end..]);
        assert!(aad(&hello(1, &[], &shared())).is_err());
    }
}
