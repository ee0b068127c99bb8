//! The ClientHello size lab; moved whole into `data.rs`, to be split.

mod data;

pub use data::*;
