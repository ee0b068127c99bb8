//! The key schedule of one connection as a tree; moved whole into `data.rs`, to be split.

mod data;

pub use data::*;
