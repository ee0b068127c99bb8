//! The ClientHello size lab: build a ClientHello exactly as tls13lab's client sends it, edit it
//! the way other clients shape theirs (GREASE, more versions, shares for groups we do not
//! implement, duplicates, padding), and account for every byte — fields, extensions, records,
//! TCP segments.
//!
//! The lab describes bytes; it does not need a peer. [`build`] runs a real [`Client`] with a
//! seeded random source, takes the ClientHello it queued, and applies the edits of a
//! [`HelloSpec`] to the decoded message (recomputing the PSK binder afterwards, so even an edited
//! hello carries a binder that matches its bytes). [`describe`] turns the message into a
//! [`HelloReport`] from its layout spans (RFC 8446 §4.1.2), re-framed into records at the offsets
//! asked for and cut into segments for a [`Link`].
//!
//! `model.rs` holds the types (the spec, the built hello, the report), `data.rs` builds a
//! ClientHello from a spec and measures it, `presets.rs` holds the built-in shapes (tls13lab's,
//! OpenSSL's), `capture.rs` reads other clients' hellos from captures, raw files or hex
//! (`hello --from`), `clienthellos.rs` writes docs/clienthellos.md from the captures and
//! `text.rs` prints reports; every item is re-exported here.
//!
//! [`Client`]: tls13lab::Client
//! [`Link`]: crate::tcp::Link

mod capture;
mod clienthellos;
mod data;
mod model;
mod presets;
mod text;

pub use self::capture::{client_hello, client_hellos, report_from, CapturedHello};
pub use self::clienthellos::captures_page;
pub use self::data::{build, describe, extension_name, report, share_len, LAB_NOW_MS};
pub use self::model::{
    is_grease, BuiltHello, CaptureView, EchInner, EchKind, EchView, Framing, Grease, HelloReport,
    HelloSpec, InnerExtension, Item, ItemKind, Part, PskOffer, RecordFrame, SegmentInfo,
    GREASE_PSK_MODES, GREASE_VALUES,
};
pub use self::presets::{preset, DSA_SCHEMES, OPENSSL_30_SIGALGS, OPENSSL_35_SIGALGS, PRESETS};
pub use self::text::{render, render_compare, render_hex};
