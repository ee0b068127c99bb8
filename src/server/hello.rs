//! The ClientHello (RFC 8446 §4.1.2): the checks every one must pass, what we choose from it in
//! our preference order (suite, key share group, credential, ALPN: §4.1.1, §4.2), a
//! HelloRetryRequest when no share is usable (§4.1.4), and the second ClientHello, which must do
//! as asked and otherwise repeat the first. ECH is opened before anything else (`ech.rs`), PSKs
//! are looked up in `tickets.rs`, and a hello we can answer goes to `handshake.rs`.

use crate::crypto::aead::{suite_params, SuiteParams};
use crate::crypto::{cert, kx};
use crate::ech::server::hrr_extension;
use crate::error::{Error, PeerMisbehaved};
use crate::keyschedule::transcript::Transcript;
use crate::messages::codec::DecodeError;
use crate::messages::enums::{
    ExtensionType, HandshakeType, NamedGroup, ProtocolVersion, PskKeyExchangeMode, SignatureScheme,
};
use crate::messages::extensions::{Extension, KeyShareEntry};
use crate::messages::handshake::{
    ClientHello, HandshakeMessage, HandshakePayload, ServerHello, HRR_RANDOM,
};
use crate::trust_anchors;

use super::tickets::PskCandidate;
use super::{unexpected, Cx, EchState, ExpectClientHello, ExpectSecondClientHello, State};

/// The key share decision (§4.2.8).
pub(super) enum ShareChoice<'a> {
    /// Use the client's share (borrowed from its ClientHello).
    Use(&'a KeyShareEntry),
    /// Ask for this group in a HelloRetryRequest.
    Retry(NamedGroup),
    /// No group in common.
    NoCommon,
    /// The client sent no key_share (possible with psk_ke).
    Missing,
}

/// What the client offered for the key exchange (§4.2.8, §4.2.9).
enum KeyExchange<'a> {
    Ready(Offer<'a>),
    /// Ask for this group in a HelloRetryRequest.
    Retry(NamedGroup),
}

/// A PSK we can use (binder not yet checked) and the client's share (borrowed from its
/// ClientHello), unless psk_ke makes it unnecessary.
pub(super) struct Offer<'a> {
    pub(super) psk: Option<(PskCandidate, PskKeyExchangeMode)>,
    pub(super) share: Option<&'a KeyShareEntry>,
}

/// Where the handshake stood when the ClientHello we answer arrived.
pub(super) struct Prior {
    /// Empty, or message_hash(ClientHello1) + HelloRetryRequest.
    pub(super) transcript: Transcript,
    pub(super) hello_retry: bool,
    /// Whether our HelloRetryRequest was followed by a CCS (§D.4: only one is sent).
    pub(super) ccs_sent: bool,
    pub(super) ech: EchState,
}

impl ExpectClientHello {
    /// The first ClientHello: answered with our flight, or with a HelloRetryRequest when it
    /// carries no share we can use (§4.1.1).
    pub(super) fn handle(self, cx: &mut Cx<'_>, msg: HandshakeMessage) -> Result<State, Error> {
        // Owned: a HelloRetryRequest keeps this ClientHello for the second to repeat.
        let HandshakeMessage {
            payload: HandshakePayload::ClientHello(outer),
            encoded,
        } = msg
        else {
            return Err(unexpected("ClientHello", &msg));
        };
        // Once the first ClientHello is in, a dummy CCS may follow (§5).
        cx.conn.ccs_allowed = true;
        // RFC 9849 §7.1: ECH is decided before anything else is negotiated; from here on `ch`
        // is ClientHelloInner when it was accepted.
        let (ch, encoded, ech) = cx.open_ech(outer, encoded)?;
        check_client_hello(&ch)?;
        cx.conn.client_random = ch.random;
        let suite = cx.choose_suite(&ch)?;
        let transcript = Transcript::with_hash(suite.hash);
        let offer = match cx.key_exchange(&ch, &suite, None)? {
            KeyExchange::Ready(offer) => offer,
            KeyExchange::Retry(group) => {
                if ch.find(ExtensionType::EarlyData).is_some() {
                    // 0-RTT records may follow ClientHello1; skip them (§4.2.10).
                    *cx.early_skip = Some(cx.early_skip_budget());
                }
                return self.send_hello_retry(cx, ch, &encoded, suite, group, ech);
            }
        };
        let prior = Prior {
            transcript,
            hello_retry: false,
            ccs_sent: false,
            ech,
        };
        cx.answer_hello(&encoded, &ch, suite, prior, offer)
    }

    /// §4.1.4: ask for a share of `group`. It consumes the first ClientHello's state, so only
    /// that state's transition can send a HelloRetryRequest.
    fn send_hello_retry(
        self,
        cx: &mut Cx<'_>,
        ch: ClientHello,
        encoded: &[u8],
        suite: SuiteParams,
        group: NamedGroup,
        ech: EchState,
    ) -> Result<State, Error> {
        let mut exts = vec![Extension::KeyShareHrr(group)];
        let cookie = cx.config.hrr_cookie.map(|len| {
            let mut c = vec![0u8; len];
            cx.conn.rng.fill(&mut c);
            c
        });
        if let Some(c) = &cookie {
            exts.push(Extension::Cookie(c.clone()));
        }
        exts.push(Extension::SupportedVersionsServer(ProtocolVersion::TLSv1_3));
        let accepted = matches!(ech, EchState::Accepted(_));
        // Asked to, a server with ECH keys that opened nothing sends eight random bytes (RFC 9849
        // §7.1), so the retry does not tell an observer that ECH was rejected (§10.10.4).
        let disguise = matches!(ech, EchState::Rejected)
            && cx.config.ech_hrr_disguise
            && !cx.config.ech_keys.is_empty();
        if accepted || disguise {
            // §7.2.1: eight bytes, last, zero while the confirmation is computed.
            exts.push(hrr_extension(disguise, cx.conn.rng.as_mut()));
        }
        let mut hrr = ServerHello {
            legacy_version: 0x0303,
            random: HRR_RANDOM,
            legacy_session_id_echo: ch.legacy_session_id.clone(),
            cipher_suite: suite.suite,
            legacy_compression_method: 0,
            extensions: exts,
        };
        let mut transcript = Transcript::new();
        transcript
            .start_hash(suite.hash)
            .map_err(|_| PeerMisbehaved::SelectedUnoffered("suite with another PSK hash"))?;
        transcript.add(HandshakeType::ClientHello, encoded);
        transcript
            .replace_with_message_hash()
            .map_err(|_| PeerMisbehaved::SecondHelloRetry)?;
        if let EchState::Accepted(acc) = &ech {
            cx.confirm_ech_retry(acc, &mut hrr, &transcript, &suite);
        }
        let hrr = HandshakePayload::ServerHello(hrr);
        transcript.add(HandshakeType::ServerHello, cx.conn.send_handshake(&hrr));
        let mut ccs_sent = false;
        if cx.config.compat_mode && !ch.legacy_session_id.is_empty() {
            cx.conn.send_ccs()?;
            ccs_sent = true;
        }
        Ok(State::ExpectSecondClientHello(Box::new(
            ExpectSecondClientHello {
                suite: suite.suite,
                group,
                cookie,
                transcript,
                first: ch,
                ccs_sent,
                ech,
            },
        )))
    }
}

impl ExpectSecondClientHello {
    /// The ClientHello after our HelloRetryRequest: it must do as asked (§4.1.4) and otherwise
    /// repeat the first (§4.1.2). Nothing leads from here to a second HelloRetryRequest.
    pub(super) fn handle(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        msg: HandshakeMessage,
    ) -> Result<State, Error> {
        let HandshakeMessage {
            payload: HandshakePayload::ClientHello(ch),
            encoded,
        } = msg
        else {
            return Err(unexpected("ClientHello", &msg));
        };
        // §4.2.10: after a HelloRetryRequest only the 0-RTT records sent before the second
        // ClientHello may be skipped; nothing after it is early data.
        *cx.early_skip = None;
        let mut st = self;
        let ech = core::mem::replace(&mut st.ech, EchState::NotOffered);
        let (ch, encoded, ech) = cx.second_hello_ech(ech, ch, encoded)?;
        let ch = &ch;
        check_client_hello(ch)?;
        let suite = cx.choose_suite(ch)?;
        if suite.suite != st.suite {
            return Err(PeerMisbehaved::HelloRetryMismatch("cipher suite").into());
        }
        check_second_hello(ch, &st)?;
        let offer = match cx.key_exchange(ch, &suite, Some(st.group))? {
            KeyExchange::Ready(offer) => offer,
            // The second ClientHello must carry the share we asked for (§4.1.4).
            KeyExchange::Retry(_) => {
                return Err(PeerMisbehaved::SecondClientHelloMismatch("key_share").into())
            }
        };
        let ExpectSecondClientHello {
            transcript,
            ccs_sent,
            ..
        } = *st;
        let prior = Prior {
            transcript,
            hello_retry: true,
            ccs_sent,
            ech,
        };
        cx.answer_hello(&encoded, ch, suite, prior, offer)
    }
}

impl Cx<'_> {
    /// PSK (§4.2.11) first: it decides whether we need a key share (§4.2.9). `asked`: the group
    /// our HelloRetryRequest asked for.
    fn key_exchange<'a>(
        &mut self,
        ch: &'a ClientHello,
        suite: &SuiteParams,
        asked: Option<NamedGroup>,
    ) -> Result<KeyExchange<'a>, Error> {
        let psk_offer = self.psk_candidate(ch, suite)?;
        let share = self.choose_share(ch, asked)?;
        let mode = match &psk_offer {
            Some(_) => self.psk_mode(ch, &share),
            None => None,
        };
        let psk = match (psk_offer, mode) {
            (Some(p), Some(m)) => Some((p, m)),
            _ => None,
        };
        let use_dhe = psk
            .as_ref()
            .is_none_or(|(_, m)| *m == PskKeyExchangeMode::PskDheKe);
        if !use_dhe {
            return Ok(KeyExchange::Ready(Offer { psk, share: None }));
        }
        match share {
            ShareChoice::Use(entry) => Ok(KeyExchange::Ready(Offer {
                psk,
                share: Some(entry),
            })),
            ShareChoice::Retry(group) => Ok(KeyExchange::Retry(group)),
            ShareChoice::NoCommon => Err(PeerMisbehaved::NoCommonGroup.into()),
            ShareChoice::Missing => {
                Err(PeerMisbehaved::MissingExtension(ExtensionType::KeyShare).into())
            }
        }
    }

    /// Suite in server preference order (§4.1.1).
    fn choose_suite(&self, ch: &ClientHello) -> Result<SuiteParams, Error> {
        self.config
            .cipher_suites
            .iter()
            .filter(|s| ch.cipher_suites.contains(s))
            .find_map(|s| suite_params(*s))
            .ok_or(PeerMisbehaved::NoCommonCipherSuite.into())
    }

    /// The credential (its index in [`ServerConfig::credentials`]) and the scheme of its key to
    /// sign with: the first whose key signs a scheme we allow and the client offers (§4.2.3),
    /// preferring one whose chain is signed only with schemes the client accepts for
    /// certificates (signature_algorithms_cert, else signature_algorithms: §4.2.3); when no chain
    /// is, the first whose key fits anyway (§4.4.2.2 "SHOULD continue the handshake").
    ///
    /// With a `trust_anchors` extension (draft-ietf-tls-trust-anchor-ids §4.2), the first usable
    /// credential whose trust anchor ID the client lists comes before all that, and the
    /// choice carries the IDs of every usable credential for EncryptedExtensions (§4.3).
    pub(super) fn choose_credential(&self, ch: &ClientHello) -> Result<CredentialChoice, Error> {
        let client_schemes = match ch.find(ExtensionType::SignatureAlgorithms) {
            Some(Extension::SignatureAlgorithms(s)) => s,
            _ => {
                return Err(
                    PeerMisbehaved::MissingExtension(ExtensionType::SignatureAlgorithms).into(),
                )
            }
        };
        let cert_schemes = match ch.find(ExtensionType::SignatureAlgorithmsCert) {
            Some(Extension::SignatureAlgorithmsCert(s)) => s,
            _ => client_schemes,
        };
        let config = self.config;
        let requested = match ch.find(config.trust_anchors_code_point) {
            Some(Extension::Unknown { body, .. }) => Some(trust_anchors::decode_requested(body)?),
            _ => None,
        };
        let usable = |ck: &crate::config::CertifiedKey| {
            ck.key
                .schemes()
                .into_iter()
                .filter(|s| config.signature_schemes.contains(s))
                .find(|s| client_schemes.contains(s))
        };
        let props_of = |i: usize| {
            config
                .certificate_properties
                .get(i)
                .and_then(Option::as_ref)
        };
        let mut available = Vec::new();
        let mut matched = None;
        let mut preferred = None;
        let mut fallback = None;
        let mut held_back = false;
        for (i, ck) in config.credentials().enumerate() {
            let Some(scheme) = usable(ck) else {
                continue;
            };
            let props = props_of(i);
            if let (Some(requested), Some(p)) = (&requested, props) {
                if let Some(id) = &p.trust_anchor_id {
                    available.push(id.clone());
                }
                if matched.is_none() && p.requested_by(requested) {
                    matched = Some((i, scheme));
                }
            }
            // §6.3: a path with trust_anchor_negotiation goes only to a peer that asked for it.
            if props.is_some_and(|p| p.negotiation_only) {
                held_back = true;
                continue;
            }
            if config.more_certs.is_empty() || cert::chain_signed_with(&ck.chain, cert_schemes) {
                preferred.get_or_insert((i, scheme));
            }
            fallback.get_or_insert((i, scheme));
        }
        let (index, scheme) = matched.or(preferred).or(fallback).ok_or(if held_back {
            PeerMisbehaved::NoRequestedTrustAnchor
        } else {
            PeerMisbehaved::NoCommonSignatureScheme
        })?;
        Ok(CredentialChoice {
            index,
            scheme,
            trust_anchor_matched: matched.is_some(),
            available_trust_anchors: available,
        })
    }

    /// Pick the group (§4.2.7, §4.2.8) in server preference order, preferring one the client
    /// already sent a share for (that saves a round trip). `asked`: the group our
    /// HelloRetryRequest asked for.
    fn choose_share<'a>(
        &self,
        ch: &'a ClientHello,
        asked: Option<NamedGroup>,
    ) -> Result<ShareChoice<'a>, Error> {
        let shares = match ch.find(ExtensionType::KeyShare) {
            Some(Extension::KeyShareClient(s)) => s,
            Some(_) => return Err(PeerMisbehaved::IllegalExtension("key_share").into()),
            None => return Ok(ShareChoice::Missing),
        };
        // §9.2: key_share requires supported_groups.
        let client_groups = match ch.find(ExtensionType::SupportedGroups) {
            Some(Extension::SupportedGroups(g)) => g,
            _ => {
                return Err(PeerMisbehaved::MissingExtension(ExtensionType::SupportedGroups).into())
            }
        };
        // §4.2.8: each share's group must be offered, and appear once.
        for (i, s) in shares.iter().enumerate() {
            if !client_groups.contains(&s.group) {
                return Err(PeerMisbehaved::IllegalExtension("key_share group not offered").into());
            }
            if shares[..i].iter().any(|o| o.group == s.group) {
                return Err(PeerMisbehaved::IllegalExtension("duplicate key_share group").into());
            }
        }
        if let Some(group) = asked {
            // §4.1.4: exactly one share, for the group we asked for.
            return match shares.as_slice() {
                [s] if s.group == group => Ok(ShareChoice::Use(s)),
                _ => Err(PeerMisbehaved::SecondClientHelloMismatch("key_share").into()),
            };
        }
        let mutual = self
            .config
            .groups
            .iter()
            .copied()
            .filter(|g| client_groups.contains(g) && kx::is_supported(*g));
        let mut first = None;
        for g in mutual {
            if let Some(s) = shares.iter().find(|s| s.group == g) {
                if first.is_none() || !self.config.strict_group_preference {
                    return Ok(ShareChoice::Use(s));
                }
            }
            first.get_or_insert(g);
        }
        Ok(first.map_or(ShareChoice::NoCommon, ShareChoice::Retry))
    }

    /// ALPN (RFC 7301 §3.2): our first protocol the client offers.
    pub(super) fn choose_alpn(&self, ch: &ClientHello) -> Result<Option<Vec<u8>>, Error> {
        if let Some(Extension::Alpn(offered)) =
            ch.find(ExtensionType::ApplicationLayerProtocolNegotiation)
        {
            if !self.config.alpn.is_empty() {
                return self
                    .config
                    .alpn
                    .iter()
                    .find(|p| offered.contains(p))
                    .cloned()
                    .map(Some)
                    .ok_or(PeerMisbehaved::NoApplicationProtocol.into());
            }
        }
        Ok(None)
    }

    /// How much 0-RTT the record layer may skip when we do not read it (§4.2.10).
    pub(super) fn early_skip_budget(&self) -> usize {
        (self.config.max_early_data as usize).max(crate::record::MAX_EARLY_SKIP)
    }
}

/// §4.1.2: the second ClientHello repeats the first "without modification, except": the
/// key_share replaced by one share of the group asked for (checked by `choose_share`),
/// early_data removed, the cookie added, pre_shared_key updated (new ages and binders, PSKs of
/// another hash dropped), and the padding extension added, removed or resized. Everything else
/// — every other field, every other extension byte for byte, and their order — must match.
fn check_second_hello(ch: &ClientHello, r: &ExpectSecondClientHello) -> Result<(), Error> {
    let first = &r.first;
    let mismatch = |what| Err(PeerMisbehaved::SecondClientHelloMismatch(what).into());
    if first.random != ch.random {
        return mismatch("random");
    }
    if first.legacy_session_id != ch.legacy_session_id {
        return mismatch("legacy_session_id");
    }
    if first.legacy_version != ch.legacy_version {
        return mismatch("legacy_version");
    }
    if first.cipher_suites != ch.cipher_suites {
        return mismatch("cipher_suites");
    }
    if first.legacy_compression_methods != ch.legacy_compression_methods {
        return mismatch("legacy_compression_methods");
    }
    let cookie = ch.extensions.iter().find_map(|e| match e {
        Extension::Cookie(c) => Some(c),
        _ => None,
    });
    if r.cookie.as_ref() != cookie {
        return mismatch("cookie");
    }
    if ch.find(ExtensionType::EarlyData).is_some() {
        return mismatch("early_data");
    }
    // The rest of the block, with what may come and go set aside on both sides.
    let comparable = |e: &&Extension| {
        !matches!(
            e.typ(),
            ExtensionType::Padding | ExtensionType::EarlyData | ExtensionType::Cookie
        )
    };
    let psk_dropped = first.find(ExtensionType::PreSharedKey).is_some()
        && ch.find(ExtensionType::PreSharedKey).is_none();
    let mut before = first
        .extensions
        .iter()
        .filter(comparable)
        .filter(|e| !(psk_dropped && e.typ() == ExtensionType::PreSharedKey));
    let mut after = ch.extensions.iter().filter(comparable);
    loop {
        match (before.next(), after.next()) {
            (None, None) => return Ok(()),
            (Some(a), Some(b)) if a.typ() == b.typ() => {
                // ECH: the second ClientHelloOuter carries a new payload and an empty enc
                // (RFC 9849 §6.1.5); §7.1.1 checks what must stay.
                let may_change = matches!(
                    a.typ(),
                    ExtensionType::KeyShare
                        | ExtensionType::PreSharedKey
                        | ExtensionType::EncryptedClientHello
                );
                if !may_change && a != b {
                    return mismatch(a.typ().name());
                }
            }
            // One added, removed or moved.
            _ => return mismatch("extensions"),
        }
    }
}

/// §4.1.2 checks every ClientHello must pass before we look at its offers.
fn check_client_hello(ch: &ClientHello) -> Result<(), Error> {
    let versions = match ch.find(ExtensionType::SupportedVersions) {
        Some(Extension::SupportedVersionsClient(v)) if v.contains(&ProtocolVersion::TLSv1_3) => v,
        Some(Extension::SupportedVersionsClient(_)) | None => {
            return Err(PeerMisbehaved::UnsupportedVersion.into())
        }
        Some(_) => return Err(PeerMisbehaved::IllegalExtension("supported_versions").into()),
    };
    // §D.5: "Any endpoint receiving a Hello message with ClientHello.legacy_version ... set to
    // 0x0300 MUST abort the handshake with a "protocol_version" alert"; a TLS 1.3 client sets
    // 0x0303 (§4.1.2), and a value below it is an older version's hello: protocol_version too.
    if ch.legacy_version < 0x0303 {
        return Err(PeerMisbehaved::LegacyVersionTooLow(ch.legacy_version).into());
    }
    if ch.legacy_version != 0x0303 {
        return Err(PeerMisbehaved::BadLegacyField("legacy_version").into());
    }
    if ch.legacy_compression_methods != [0] {
        return Err(PeerMisbehaved::BadLegacyField("legacy_compression_methods").into());
    }
    // §4.2.7: obsolete groups "MUST NOT be offered ... by TLS 1.3 implementations". A client
    // that also offers TLS 1.2 may list them for TLS 1.2; one offering only TLS 1.3 (GREASE
    // and draft versions aside) must not.
    let offers_older = versions
        .iter()
        .any(|v| (0x0300..0x0304).contains(&v.to_repr()));
    if !offers_older {
        let groups = match ch.find(ExtensionType::SupportedGroups) {
            Some(Extension::SupportedGroups(g)) => g.as_slice(),
            _ => &[],
        };
        let shares = match ch.find(ExtensionType::KeyShare) {
            Some(Extension::KeyShareClient(s)) => s.as_slice(),
            _ => &[],
        };
        let offered = groups.iter().copied().chain(shares.iter().map(|s| s.group));
        if let Some(g) = offered.into_iter().find(|g| g.is_obsolete()) {
            return Err(PeerMisbehaved::ObsoleteGroup(g).into());
        }
    }
    // §4.2.11: pre_shared_key must be the last extension.
    if let Some(pos) = ch
        .extensions
        .iter()
        .position(|e| e.typ() == ExtensionType::PreSharedKey)
    {
        if pos + 1 != ch.extensions.len() {
            return Err(PeerMisbehaved::PskNotLast.into());
        }
    }
    Ok(())
}

/// A message that is not a ClientHello by RFC 8446's grammar, where one is expected: a
/// well-formed TLS 1.2 ClientHello (no extension block, or one under 8 bytes, RFC 5246 §7.4.1.2)
/// that does not offer TLS 1.3 is an older client, answered with protocol_version (§4.2.1, §D.2);
/// anything else keeps its decode error.
pub(super) fn tls12_hello_or(e: DecodeError, bytes: &[u8]) -> Error {
    if bytes.first() == Some(&HandshakeType::ClientHello.to_repr()) {
        if let Ok(ch) = ClientHello::decode_tls12(&bytes[4..]) {
            let offers_tls13 = matches!(
                ch.find(ExtensionType::SupportedVersions),
                Some(Extension::SupportedVersionsClient(v)) if v.contains(&ProtocolVersion::TLSv1_3)
            );
            if !offers_tls13 {
                return PeerMisbehaved::UnsupportedVersion.into();
            }
        }
    }
    e.into()
}

/// The credential the server authenticates with (§4.4.2) and what `trust_anchors` said.
pub(super) struct CredentialChoice {
    /// Its index in [`crate::config::ServerConfig::credentials`].
    pub(super) index: usize,
    /// The CertificateVerify scheme.
    pub(super) scheme: SignatureScheme,
    /// Chosen for a trust anchor the client listed: the Certificate says so.
    pub(super) trust_anchor_matched: bool,
    /// With a client `trust_anchors`: the IDs of every usable credential, in our order.
    pub(super) available_trust_anchors: Vec<Vec<u8>>,
}
