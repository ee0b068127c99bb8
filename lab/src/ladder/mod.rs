//! Ladder (sequence) diagrams of a connection, drawn from its [`Ledger`](tls13lab::ledger::Ledger):
//! one module, two renderers.
//!
//! - [`ladder`] (`text.rs`): one arrow per flight in box-drawing characters, the messages in
//!   RFC 8446 §2's notation (`{...}` handshake keys, `[...]` application keys, `(...)` 0-RTT) and
//!   the records and bytes each flight took; `examples/sans_io.rs` and docs/api.md print it.
//! - [`svg`] and [`svg_with`] (`svg.rs`): a hand-written SVG, one arrow per record with its byte
//!   accounting, coloured by epoch, flights in bands, round trips counted (docs/ladder.md). The
//!   simulator and the dissector draw with it; [`record_summary`] and [`message_name`] are its
//!   words for a record, which they also print.

mod svg;
mod text;

pub use self::svg::{message_name, record_summary, svg, svg_with, LadderOptions, Times};
pub use self::text::ladder;
