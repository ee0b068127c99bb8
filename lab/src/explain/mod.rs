//! The key schedule of one connection as a tree, for teaching (`tls13lab keys`).
//!
//! A connection reports every HKDF step as an [`Event::Derivation`]. [`KeyTree`] links the steps
//! back together: each hangs under the step whose output it consumed — the secret of
//! Derive-Secret and HKDF-Expand-Label, the salt of HKDF-Extract, the key of HMAC — and the
//! Extracts' other inputs, the PSK and the (EC)DHE/KEM shared secret with each component of a
//! hybrid group, are the tree's inputs. The links are made by value, not by name, so a tree that
//! hangs together also shows that the values fit together.
//!
//! Every line says which operation made the value, with which label and which context: for a
//! transcript hash, which handshake messages it covers. [`KeyTree::text`] prints the tree (one
//! sentence per step and its RFC 8446 section with `explain`), [`KeyTree::svg`] draws it.
//!
//! The steps come from an in-memory run ([`in_memory`]), an RFC 8448 trace replayed through our
//! client or server ([`rfc8448()`]), or a JSON file ([`KeyTree::from_json`]).
//!
//! ```
//! use tls13lab::events::Side;
//! use lab::explain;
//!
//! // RFC 8448 §3 replayed through our client: the tree carries the RFC's values.
//! let tree = explain::rfc8448(3, Side::Client, None).unwrap();
//! let text = tree.text(false);
//! assert!(text.contains(
//!     "handshake_secret = HKDF-Extract(salt: derived_for_handshake, IKM: x25519 shared secret)"
//! ));
//! assert!(text.contains("1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac"));
//!
//! // An in-memory hybrid handshake: the shared secret is shown component by component.
//! let run = explain::InMemory::demo(1)?
//!     .with_groups(&[tls13lab::messages::enums::NamedGroup::X25519MLKEM768]);
//! let tree = explain::in_memory_tree(&run, Side::Client, None).unwrap();
//! let names: Vec<&str> = tree.shared[0].components.iter().map(|(n, _)| n.as_str()).collect();
//! assert_eq!(names, ["ML-KEM-768", "X25519"]);
//! # Ok::<(), tls13lab::Error>(())
//! ```
//!
//! `model.rs` holds the tree's types, `data.rs` builds a tree from events or JSON and runs the
//! connections they come from, `text.rs` writes it in RFC 8446 §7.1 notation and `svg.rs` draws
//! it, `hpke.rs` writes HPKE's steps (RFC 9180) as [`hpke_text`], and `ech.rs` gathers
//! Encrypted ClientHello's part (RFC 9849: the ECHConfig, those steps, each Seal and the
//! acceptance confirmations) as [`EchView`], which [`KeyTree::text`] prints above the key
//! schedule; every item is re-exported here.
//!
//! [`Event::Derivation`]: tls13lab::events::Event::Derivation

mod data;
mod ech;
mod hpke;
mod model;
mod svg;
mod text;

pub use self::data::{
    in_memory, in_memory_title, in_memory_tree, rfc8448, rfc8448_title, Connection, InMemory,
    DEMO_REQUEST,
};
pub use self::ech::{Confirmation, EchView, Seal};
pub use self::hpke::hpke_text;
pub use self::model::{Ikm, KeyTree, Node, SharedSecret, Step};
