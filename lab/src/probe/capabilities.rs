//! What the server supports and prefers: versions, groups (classical, hybrid, pure ML-KEM),
//! HelloRetryRequest, suites, signature schemes, the certificate chain, ALPN,
//! record_size_limit, tickets, resumption, 0-RTT and its replay, ECH.

use serde::Serialize;
use tls13lab::config::EchMode;
use tls13lab::crypto::cert::{verify_chain, Usage};
use tls13lab::events::{Direction, EarlyDataStatus, EchOutcome, Event};
use tls13lab::messages::ech::EchConfigList;
use tls13lab::messages::enums::{
    CipherSuite, ExtensionType, NamedGroup, PskKeyExchangeMode, SignatureScheme,
};
use tls13lab::messages::extensions::Extension;
use tls13lab::messages::handshake::{
    CertificatePayload, DecodeContext, HandshakeMessage, HandshakePayload,
};
use tls13lab::session::TicketStore;

use super::raw::first_answer;
use super::session::{drive, After, Outcome, Plan, Run, REQUEST};
use super::{conformance, Options, Target};

/// One code point offered alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Offer {
    /// Its name.
    pub name: String,
    /// Whether the server completed a handshake with it.
    pub accepted: bool,
    /// What happened.
    pub answer: String,
}

/// A server's preference among what it accepts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Preference {
    /// `server` (its own order, below), `client` (it takes the client's first) or `unknown`.
    pub follows: String,
    /// The server's order, most preferred first, when it has one.
    pub order: Vec<String>,
}

/// One certificate of the chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CertInfo {
    /// DER bytes.
    pub bytes: usize,
    /// SubjectPublicKeyInfo bytes.
    pub spki_bytes: usize,
    /// signatureValue bytes.
    pub signature_bytes: usize,
    /// The signatureAlgorithm its issuer signed it with (the next certificate's key, or the
    /// root's), by name.
    pub signed_with: Option<String>,
}

/// The outer signatureAlgorithm of `der` by name (RFC 5280 §4.1.1.2), read with bounds.
fn signed_with(der: &[u8]) -> Option<String> {
    let tbs = tls13lab::crypto::cert::tbs_range(der).ok()?;
    let seq = der.get(tbs.end..)?;
    let hdr = match *seq.get(1)? {
        l if l < 0x80 => 2,
        l => 2 + usize::from(l & 0x7f),
    };
    let oid = seq.get(hdr..)?;
    let len = usize::from(*oid.get(1)?);
    if *seq.first()? != 0x30 || *oid.first()? != 0x06 || len >= 0x80 {
        return None;
    }
    let words = crate::illustrate::der::describe(oid.get(..2 + len)?)?;
    Some(words.split(" (").next().unwrap_or(&words).to_string())
}

/// The server's Certificate message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Chain {
    /// The certificates, leaf first.
    pub certificates: Vec<CertInfo>,
    /// The Certificate message's bytes (uncompressed, with its header).
    pub message_bytes: usize,
    /// The compression algorithm used (RFC 8879), when the server compressed it.
    pub compression: Option<String>,
    /// CompressedCertificate's bytes, when compressed.
    pub compressed_bytes: Option<usize>,
    /// The CertificateVerify scheme.
    pub signature_scheme: Option<String>,
    /// Whether the chain verifies against the roots (the probe continues either way).
    pub verification: String,
}

/// One NewSessionTicket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ticket {
    /// ticket_lifetime, seconds.
    pub lifetime: u32,
    /// The ticket's length in bytes.
    pub ticket_bytes: usize,
    /// max_early_data_size, when early_data is in it.
    pub max_early_data: Option<u32>,
}

/// ECH findings (RFC 9849).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ech {
    /// The GREASE offer's outcome (§6.2: a server must tolerate it).
    pub grease: String,
    /// retry_configs the server sent in answer to GREASE (§7.1), as public names.
    pub retry_configs: Vec<String>,
    /// The retry_configs as base64 (the ECHConfigList), for `--ech-config-list`.
    pub retry_configs_base64: Option<String>,
    /// Where the configs of the real offer came from: `given`, `retry_configs` or `none`.
    pub config_source: String,
    /// The real offer's outcome: accepted, rejected, or not tried.
    pub offer: String,
}

/// Everything the capability battery found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// The baseline handshake (our default ClientHello, ALPN h2 and http/1.1,
    /// record_size_limit, every compression algorithm).
    pub tls13: String,
    /// What a ClientHello offering only TLS 1.2 got.
    pub tls12_only: String,
    /// The baseline's suite.
    pub suite: Option<String>,
    /// The baseline's group.
    pub group: Option<String>,
    /// Whether the baseline needed a HelloRetryRequest.
    pub hello_retry: bool,
    /// Each group we know, offered alone with a key share.
    pub groups: Vec<Offer>,
    /// The server's order among the accepted groups (offered with no key share, picked by HRR).
    pub group_preference: Preference,
    /// The group a HelloRetryRequest asked for when no key share was sent, or `none`.
    pub hrr_without_share: String,
    /// With a share only for the accepted group the server likes least: `no HRR` or the
    /// group the HelloRetryRequest asked for (a server insisting on its preference).
    pub hrr_for_least_preferred_share: String,
    /// supported_groups in the baseline's EncryptedExtensions.
    pub ee_supported_groups: Option<Vec<String>>,
    /// Each suite offered alone.
    pub suites: Vec<Offer>,
    /// The server's order among accepted suites.
    pub suite_preference: Preference,
    /// Each signature scheme offered alone.
    pub signature_schemes: Vec<Offer>,
    /// The certificate chain.
    pub certificate: Option<Chain>,
    /// ALPN selected when h2 and http/1.1 were offered.
    pub alpn: Option<String>,
    /// record_size_limit in EncryptedExtensions (we offered 16385).
    pub record_size_limit: Option<u16>,
    /// NewSessionTickets after the baseline's request.
    pub tickets: Vec<Ticket>,
    /// Resumption offering psk_dhe_ke only.
    pub resumption_psk_dhe_ke: String,
    /// Resumption offering psk_ke only.
    pub resumption_psk_ke: String,
    /// 0-RTT with a ticket that allows it.
    pub early_data: String,
    /// The same 0-RTT ClientHello sent again (RFC 8446 §8): `rejected` is right.
    pub early_data_replay: String,
    /// ECH.
    pub ech: Ech,
}

/// The signature schemes of TLS 1.3 offered one by one.
fn schemes() -> Vec<SignatureScheme> {
    tls13lab::crypto::sign::supported_verify_schemes().to_vec()
}

/// The five TLS 1.3 suites (RFC 8446 §B.4).
pub fn all_suites() -> Vec<CipherSuite> {
    vec![
        CipherSuite::TLS_AES_128_GCM_SHA256,
        CipherSuite::TLS_AES_256_GCM_SHA384,
        CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
        CipherSuite::TLS_AES_128_CCM_SHA256,
        CipherSuite::TLS_AES_128_CCM_8_SHA256,
    ]
}

fn accepted(run: &Run) -> bool {
    run.outcome == Outcome::Completed
}

/// Runs the capability battery.
pub fn run(target: &Target, opts: &Options) -> Capabilities {
    // Baseline: our default hello, both psk modes, ALPN, record_size_limit; then a request so
    // that the tickets arrive (§4.6.1).
    let mut c = target.config();
    c.alpn = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    c.record_size_limit = Some(16385);
    c.psk_modes = vec![PskKeyExchangeMode::PskDheKe, PskKeyExchangeMode::PskKe];
    let mut plan = Plan::new(c);
    plan.after = After::Request;
    let base = drive(target, plan);
    let neg = base.negotiated.clone();
    let msgs = received(&base.events);
    let ee = msgs.iter().find_map(|m| match &m.payload {
        HandshakePayload::EncryptedExtensions(e) => Some(e.clone()),
        _ => None,
    });
    let ee_groups = ee.as_ref().and_then(|e| {
        e.iter().find_map(|x| match x {
            Extension::SupportedGroups(g) => Some(g.iter().map(|g| g.to_string()).collect()),
            _ => None,
        })
    });
    let alpn = neg.as_ref().and_then(|n| n.alpn.clone());
    let rsl = ee.as_ref().and_then(|e| {
        e.iter().find_map(|x| match x {
            Extension::RecordSizeLimit(l) => Some(*l),
            _ => None,
        })
    });
    let certificate = chain(&msgs, neg.as_ref(), opts, target);
    let tickets = tickets(&msgs);

    let tls12_only = first_answer(target, &[conformance::tls12_only_hello(target)]).text();

    // Groups, each alone with its share.
    let mut groups = Vec::new();
    let mut good = Vec::new();
    for &g in tls13lab::crypto::kx::supported_groups() {
        let mut c = target.config();
        c.groups = vec![g];
        c.key_shares = vec![g];
        let r = drive(target, Plan::new(c));
        let ok = accepted(&r) && r.negotiated.as_ref().and_then(|n| n.group) == Some(g);
        if ok {
            good.push(g);
        }
        groups.push(Offer {
            name: g.to_string(),
            accepted: ok,
            answer: r.outcome.text(),
        });
    }
    let pick_group = |list: &[NamedGroup]| -> Option<NamedGroup> {
        let mut c = target.config();
        c.groups = list.to_vec();
        c.key_shares = Vec::new();
        let r = drive(target, Plan::new(c));
        r.negotiated.and_then(|n| n.group)
    };
    let group_preference = preference(&good, pick_group);
    let hrr_without_share = if good.is_empty() {
        "none".to_string()
    } else {
        let mut c = target.config();
        c.groups = good.clone();
        c.key_shares = Vec::new();
        let r = drive(target, Plan::new(c));
        match (&r.outcome, hrr_group(&r.events)) {
            (_, Some(g)) => g.to_string(),
            (o, None) => format!("no HRR ({})", o.text()),
        }
    };
    let least = group_preference
        .order
        .last()
        .and_then(|n| good.iter().copied().find(|g| g.to_string() == *n));
    let hrr_for_least_preferred_share = match least {
        Some(g) if good.len() > 1 => {
            let mut c = target.config();
            c.groups = good.clone();
            c.key_shares = vec![g];
            let r = drive(target, Plan::new(c));
            match (&r.outcome, hrr_group(&r.events)) {
                (_, Some(h)) => format!("HRR for {h}"),
                (Outcome::Completed, None) => "no HRR".into(),
                (o, None) => o.text(),
            }
        }
        _ => "n/a".into(),
    };

    // Suites, each alone.
    let mut suites = Vec::new();
    let mut good_suites = Vec::new();
    for s in all_suites() {
        let mut c = target.config();
        c.cipher_suites = vec![s];
        let r = drive(target, Plan::new(c));
        let ok = accepted(&r) && r.negotiated.as_ref().map(|n| n.suite) == Some(s);
        if ok {
            good_suites.push(s);
        }
        suites.push(Offer {
            name: s.to_string(),
            accepted: ok,
            answer: r.outcome.text(),
        });
    }
    let suite_preference = preference(&good_suites, |list: &[CipherSuite]| {
        let mut c = target.config();
        c.cipher_suites = list.to_vec();
        drive(target, Plan::new(c)).negotiated.map(|n| n.suite)
    });

    // Signature schemes, each alone.
    let mut signature_schemes = Vec::new();
    for s in schemes() {
        let mut c = target.config();
        c.signature_schemes = vec![s];
        let r = drive(target, Plan::new(c));
        let ok = accepted(&r) && r.negotiated.as_ref().and_then(|n| n.signature_scheme) == Some(s);
        signature_schemes.push(Offer {
            name: s.to_string(),
            accepted: ok,
            answer: r.outcome.text(),
        });
    }

    let (resumption_psk_dhe_ke, resumption_psk_ke) = (
        resume(target, PskKeyExchangeMode::PskDheKe),
        resume(target, PskKeyExchangeMode::PskKe),
    );
    let (early_data, early_data_replay) = zero_rtt(target);
    let ech = ech(target, opts);

    Capabilities {
        tls13: base.outcome.text(),
        tls12_only,
        suite: neg.as_ref().map(|n| n.suite.to_string()),
        group: neg.as_ref().and_then(|n| n.group).map(|g| g.to_string()),
        hello_retry: neg.as_ref().is_some_and(|n| n.hello_retry),
        groups,
        group_preference,
        hrr_without_share,
        hrr_for_least_preferred_share,
        ee_supported_groups: ee_groups,
        suites,
        suite_preference,
        signature_schemes,
        certificate,
        alpn,
        record_size_limit: rsl,
        tickets,
        resumption_psk_dhe_ke,
        resumption_psk_ke,
        early_data,
        early_data_replay,
        ech,
    }
}

/// The server's order among `items` (all of which it accepts), asked through `pick`: the
/// item it selects from a list. If it takes the first of our order and of the reverse, it
/// follows the client; otherwise its picks, removing each in turn, are its order.
fn preference<T: Copy + PartialEq + ToString>(
    items: &[T],
    pick: impl Fn(&[T]) -> Option<T>,
) -> Preference {
    let names = |v: &[T]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>();
    if items.len() < 2 {
        return Preference {
            follows: "server".into(),
            order: names(items),
        };
    }
    let first = pick(items);
    let mut rev = items.to_vec();
    rev.reverse();
    let first_rev = pick(&rev);
    if first == Some(items[0]) && first_rev == Some(rev[0]) {
        return Preference {
            follows: "client".into(),
            order: Vec::new(),
        };
    }
    let mut left = items.to_vec();
    let mut order = Vec::new();
    while !left.is_empty() {
        let Some(p) = (if order.is_empty() { first } else { pick(&left) }) else {
            return Preference {
                follows: "unknown".into(),
                order: names(&order),
            };
        };
        let Some(i) = left.iter().position(|x| *x == p) else {
            break;
        };
        order.push(p);
        left.remove(i);
    }
    Preference {
        follows: "server".into(),
        order: names(&order),
    }
}

/// The handshake messages the client received, decoded.
pub fn received(events: &[Event]) -> Vec<HandshakeMessage> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Handshake(h) if h.direction == Direction::ServerToClient => {
                HandshakeMessage::decode(&h.bytes, DecodeContext::default()).ok()
            }
            _ => None,
        })
        .collect()
}

/// The group a HelloRetryRequest asked for, if one came.
pub fn hrr_group(events: &[Event]) -> Option<NamedGroup> {
    received(events).iter().find_map(|m| match &m.payload {
        HandshakePayload::ServerHello(sh) if sh.is_hello_retry_request() => {
            sh.extensions.iter().find_map(|e| match e {
                Extension::KeyShareHrr(g) => Some(*g),
                _ => None,
            })
        }
        _ => None,
    })
}

fn chain(
    msgs: &[HandshakeMessage],
    neg: Option<&tls13lab::events::Negotiated>,
    opts: &Options,
    target: &Target,
) -> Option<Chain> {
    let (payload, message_bytes, compression, compressed_bytes) =
        msgs.iter().find_map(|m| match &m.payload {
            HandshakePayload::Certificate(c) => Some((c.clone(), m.encoded.len(), None, None)),
            // Bounded: a server's declared length is not a reason to allocate (RFC 8879 §4).
            HandshakePayload::CompressedCertificate(cc)
                if cc.uncompressed_length as usize
                    <= tls13lab::config::DEFAULT_MAX_HANDSHAKE_MESSAGE =>
            {
                let body = tls13lab::certcomp::decompress(
                    cc.algorithm,
                    &cc.compressed_certificate_message,
                    cc.uncompressed_length as usize,
                )
                .ok()?;
                let c = CertificatePayload::from_body(&body).ok()?;
                Some((
                    c,
                    body.len() + 4,
                    Some(cc.algorithm.to_string()),
                    Some(m.encoded.len()),
                ))
            }
            _ => None,
        })?;
    let ders: Vec<Vec<u8>> = payload
        .entries
        .iter()
        .map(|e| e.cert_data.clone())
        .collect();
    let certificates = ders
        .iter()
        .map(|d| {
            let p = tls13lab::crypto::cert::cert_parts(d).ok();
            CertInfo {
                bytes: d.len(),
                spki_bytes: p.as_ref().map_or(0, |p| p.spki),
                signature_bytes: p.as_ref().map_or(0, |p| p.signature),
                signed_with: signed_with(d),
            }
        })
        .collect();
    let verification = if opts.roots.is_empty() {
        format!("not checked: no roots ({})", opts.roots_source)
    } else {
        match verify_chain(
            &ders,
            &opts.roots,
            target.server_name.as_deref(),
            super::wire::now_ms() / 1000,
            Usage::Server,
            None,
        ) {
            Ok(()) => format!("verifies against {}", opts.roots_source),
            Err(e) => format!("does not verify against {}: {e}", opts.roots_source),
        }
    };
    Some(Chain {
        certificates,
        message_bytes,
        compression,
        compressed_bytes,
        signature_scheme: neg.and_then(|n| n.signature_scheme).map(|s| s.to_string()),
        verification,
    })
}

fn tickets(msgs: &[HandshakeMessage]) -> Vec<Ticket> {
    msgs.iter()
        .filter_map(|m| match &m.payload {
            HandshakePayload::NewSessionTicket(t) => Some(Ticket {
                lifetime: t.lifetime,
                ticket_bytes: t.ticket.len(),
                max_early_data: t.extensions.iter().find_map(|e| match e {
                    Extension::EarlyDataMax(n) => Some(*n),
                    _ => None,
                }),
            }),
            _ => None,
        })
        .collect()
}

/// A fresh full handshake for its tickets.
fn fresh_tickets(target: &Target, modes: Vec<PskKeyExchangeMode>) -> (TicketStore, Run) {
    let mut c = target.config();
    c.psk_modes = modes;
    let mut plan = Plan::new(c);
    plan.after = After::Request;
    let r = drive(target, plan);
    (r.tickets.clone(), r)
}

fn resume(target: &Target, mode: PskKeyExchangeMode) -> String {
    let (store, r) = fresh_tickets(target, vec![mode]);
    if store.is_empty() {
        return format!("no ticket ({})", r.outcome.text());
    }
    let mut c = target.config();
    c.psk_modes = vec![mode];
    let mut plan = Plan::new(c);
    plan.tickets = Some(store);
    let r = drive(target, plan);
    match (&r.outcome, r.negotiated) {
        (Outcome::Completed, Some(n)) if n.resumed && n.psk_mode() == Some(mode) => {
            "resumed".into()
        }
        (Outcome::Completed, Some(n)) if n.resumed => "resumed in another mode".into(),
        (Outcome::Completed, _) => "full handshake".into(),
        (o, _) => o.text(),
    }
}

/// 0-RTT, then the same ClientHello again: same seed, same ticket, same clock.
fn zero_rtt(target: &Target) -> (String, String) {
    let (store, r) = fresh_tickets(target, vec![PskKeyExchangeMode::PskDheKe]);
    if store.is_empty() {
        return (format!("no ticket ({})", r.outcome.text()), "n/a".into());
    }
    if store.tickets.iter().all(|t| t.max_early_data == 0) {
        return ("not allowed by the tickets".into(), "n/a".into());
    }
    let now = super::wire::now_ms();
    let seed = now ^ 0x5eed;
    let attempt = |store: TicketStore| {
        let mut c = target.config();
        c.psk_modes = vec![PskKeyExchangeMode::PskDheKe];
        c.enable_early_data = true;
        let mut plan = Plan::new(c);
        plan.tickets = Some(store);
        plan.seed = Some(seed);
        plan.now_ms = Some(now);
        plan.early_data = Some(REQUEST.to_vec());
        plan.after = After::Request;
        drive(target, plan)
    };
    let status = |r: &Run| match (&r.outcome, &r.negotiated) {
        (Outcome::Completed, Some(n)) => match n.early_data {
            EarlyDataStatus::Accepted => "accepted".to_string(),
            EarlyDataStatus::Rejected => "rejected".to_string(),
            EarlyDataStatus::NotSent => "not sent".to_string(),
        },
        (o, _) => o.text(),
    };
    let first = attempt(store.clone());
    let second = attempt(store);
    let same = first.first_flight == second.first_flight;
    let replay = if same {
        status(&second)
    } else {
        format!("{} (the replayed hello differed)", status(&second))
    };
    (status(&first), replay)
}

fn ech(target: &Target, opts: &Options) -> Ech {
    let mut c = target.config();
    c.ech = EchMode::Grease;
    let r = drive(target, Plan::new(c));
    let grease = r.outcome.text();
    let retry = received(&r.events).iter().find_map(|m| match &m.payload {
        HandshakePayload::EncryptedExtensions(e) => e.iter().find_map(|x| match x {
            Extension::Unknown { typ, body } if *typ == ExtensionType::EncryptedClientHello => {
                Some(body.clone())
            }
            _ => None,
        }),
        _ => None,
    });
    let retry_list = retry.as_deref().and_then(|b| EchConfigList::decode(b).ok());
    let retry_configs = retry_list
        .as_ref()
        .map(|l| {
            l.configs
                .iter()
                .map(|c| {
                    c.contents()
                        .and_then(|c| c.public_name_str())
                        .unwrap_or("?")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    let (list, config_source) = match (&opts.ech_config_list, retry_list) {
        (Some(l), _) => (Some(l.clone()), "given"),
        (None, Some(l)) => (Some(l), "retry_configs"),
        (None, None) => (None, "none"),
    };
    let offer = match list {
        None => "not tried".to_string(),
        Some(list) => {
            let mut c = target.config();
            if c.server_name.is_none() {
                c.server_name = Some("localhost".into());
            }
            c.ech = EchMode::offer(list);
            let r = drive(target, Plan::new(c));
            match (&r.outcome, r.ech) {
                (Outcome::Completed, Some(EchOutcome::Accepted)) => "accepted".into(),
                (Outcome::Completed, Some(o)) => o.as_str().to_string(),
                (o, _) => o.text(),
            }
        }
    };
    Ech {
        grease,
        retry_configs,
        retry_configs_base64: retry.map(|b| tls13lab::crypto::cert::base64_encode(&b)),
        config_source: config_source.into(),
        offer,
    }
}
