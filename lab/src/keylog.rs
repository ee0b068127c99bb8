//! NSS key logs: the core's [`tls13lab::keylog`], re-exported where the instruments have always
//! found it. The passive reader that opens records with them is
//! [`tls13lab::transcript_reader`].

pub use tls13lab::keylog::*;
