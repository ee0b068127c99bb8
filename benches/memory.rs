//! Memory: bytes one established, idle connection holds (client and server), and allocations per
//! handshake per side, tls13lab against rustls (aws-lc-rs). Not a criterion bench: it counts, once.
//!
//! Two counts: Rust allocations, by a counting global allocator (exact requested sizes), and every
//! `malloc` of the process, Rust's and aws-lc's C code alike, by interposing `malloc`/`free` in
//! this binary (sizes as `malloc_usable_size`, so rounded up to malloc's granularity).
//! Handshakes: full, TLS_AES_128_GCM_SHA256, no tickets, caller-owned I/O buffers dropped before
//! measuring; one warm-up handshake first so one-time initialisation is not counted.

mod common;

use common::{group_name, groups, Case, Counting, Identity, Ours, Rustls, Timer, Who};
use tls13lab::messages::enums::CipherSuite;
use tls13lab::session::TicketStore;

#[global_allocator]
static ALLOC: Counting = Counting;

use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

static C_LIVE: AtomicI64 = AtomicI64::new(0);

extern "C" {
    fn __libc_malloc(n: usize) -> *mut libc::c_void;
    fn __libc_calloc(n: usize, m: usize) -> *mut libc::c_void;
    fn __libc_realloc(p: *mut libc::c_void, n: usize) -> *mut libc::c_void;
    fn __libc_free(p: *mut libc::c_void);
}

fn usable(p: *mut libc::c_void) -> i64 {
    if p.is_null() {
        0
    } else {
        // SAFETY: `p` is a live pointer from glibc's malloc family.
        unsafe { libc::malloc_usable_size(p) as i64 }
    }
}

/// # Safety
/// The C `malloc` contract; forwards to glibc.
#[no_mangle]
pub unsafe extern "C" fn malloc(n: usize) -> *mut libc::c_void {
    let p = __libc_malloc(n);
    common::MALLOCS.fetch_add(1, Relaxed);
    C_LIVE.fetch_add(usable(p), Relaxed);
    p
}

/// # Safety
/// The C `calloc` contract; forwards to glibc.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, m: usize) -> *mut libc::c_void {
    let p = __libc_calloc(n, m);
    common::MALLOCS.fetch_add(1, Relaxed);
    C_LIVE.fetch_add(usable(p), Relaxed);
    p
}

/// # Safety
/// The C `realloc` contract; forwards to glibc.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut libc::c_void, n: usize) -> *mut libc::c_void {
    let before = usable(p);
    let q = __libc_realloc(p, n);
    common::MALLOCS.fetch_add(1, Relaxed);
    C_LIVE.fetch_add(usable(q) - before, Relaxed);
    q
}

/// # Safety
/// The C `free` contract; forwards to glibc.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut libc::c_void) {
    C_LIVE.fetch_sub(usable(p), Relaxed);
    __libc_free(p)
}

fn heap() -> i64 {
    C_LIVE.load(Relaxed)
}

#[derive(Default, Debug)]
struct Held {
    /// Rust bytes requested.
    rust: i64,
    /// Every malloc'd byte (usable size), C included.
    heap: i64,
}

struct Row {
    lib: &'static str,
    client_allocs: u64,
    server_allocs: u64,
    client_mallocs: u64,
    server_mallocs: u64,
    client: Held,
    server: Held,
}

/// Runs one handshake with `make`, then measures what each side holds by dropping the server,
/// then the client.
fn measure<C, S>(lib: &'static str, mut make: impl FnMut(&mut Timer) -> (C, S)) -> Row {
    drop(make(&mut Timer::new(Who::Both))); // warm-up
    let (r0, h0) = (Counting::live(), heap());
    let mut t = Timer::new(Who::Both);
    let (c, s) = make(&mut t);
    let (r1, h1) = (Counting::live(), heap());
    drop(s);
    let (r2, h2) = (Counting::live(), heap());
    drop(c);
    let (r3, h3) = (Counting::live(), heap());
    assert!((r3 - r0).abs() < 64, "{lib}: {} bytes not freed", r3 - r0);
    let _ = h0;
    Row {
        lib,
        client_allocs: t.allocs[0],
        server_allocs: t.allocs[1],
        client_mallocs: t.mallocs[0],
        server_mallocs: t.mallocs[1],
        client: Held {
            rust: r2 - r3,
            heap: h2 - h3,
        },
        server: Held {
            rust: r1 - r2,
            heap: h1 - h2,
        },
    }
}

fn main() {
    let id = Identity::new();
    println!(
        "{:<20} {:<9} {:>22} {:>22} {:>26} {:>26}",
        "handshake",
        "library",
        "client allocs Rust/all",
        "server allocs Rust/all",
        "client idle B Rust/malloc",
        "server idle B Rust/malloc"
    );
    for g in groups() {
        let suite = CipherSuite::TLS_AES_128_GCM_SHA256;
        let mut ours = Ours::new(&id, g, suite, Case::Full);
        let server = ours.server.clone();
        let theirs = Rustls::new(&id, g, suite, Case::Full);
        let rows = [
            measure("tls13lab", |t| {
                ours.handshake(t, &server, TicketStore::default())
            }),
            measure("rustls", |t| theirs.handshake(t, &theirs.server.clone())),
        ];
        for r in rows {
            println!(
                "{:<20} {:<9} {:>22} {:>22} {:>26} {:>26}",
                format!("full/{}", group_name(g)),
                r.lib,
                format!("{} / {}", r.client_allocs, r.client_mallocs),
                format!("{} / {}", r.server_allocs, r.server_mallocs),
                format!("{} / {}", r.client.rust, r.client.heap),
                format!("{} / {}", r.server.rust, r.server.heap),
            );
        }
    }
}
