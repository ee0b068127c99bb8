//! Certificate path validation, PEM loading and certificate generation (RFC 8446 §4.4.2); moved
//! whole into `verify.rs`, to be split.

mod verify;

pub use verify::*;
