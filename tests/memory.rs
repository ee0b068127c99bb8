//! What a connection holds, counted by the allocator: observation costs nothing unless asked
//! for, and a connection nobody drains holds no more than its buffer limit plus one record.
//!
//! One test in this binary: the counting allocator is global, so a second test running beside it
//! would count into its figures.

mod util;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use std::sync::Mutex;
use tls13lab::crypto::random::SeededRandom;

use tls13lab::events::{Direction, Event, Observer, RecordView};
use tls13lab::messages::enums::ContentType;
use tls13lab::{Client, ClientConfig, ClientSide, Connection, Observe, Role, Server, ServerSide};

use util::{KeyKind, NOW};

/// Bytes allocated and not yet freed, by everything in the process.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

// SAFETY: every call is passed to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// 64 MiB each way.
const TOTAL: usize = 64 << 20;
/// What the application hands `send` at a time.
const CHUNK: usize = 16 << 10;
/// The largest record on the wire: header, 2^14 of content, the inner type and a tag (with
/// no padding, the default policy's for a full record).
const RECORD: usize = 5 + (1 << 14) + 256;
/// The connection's default buffer limit (Connection::set_buffer_limit).
const LIMIT: usize = 64 << 10;

fn pair(observe: Observe) -> (Connection<ClientSide>, Connection<ServerSide>) {
    let (mut s, root) = util::server_config(KeyKind::P256);
    s.observe = observe;
    let mut c = ClientConfig::new(vec![root]);
    c.server_name = Some("localhost".into());
    c.fixed_validation_time_ms = Some(NOW);
    c.observe = observe;
    let mut client = Client::new(Arc::new(c), Box::new(SeededRandom::from_seed(1))).unwrap();
    let mut server = Server::new(Arc::new(s), Box::new(SeededRandom::from_seed(2))).unwrap();
    client.start(NOW).unwrap();
    for _ in 0..8 {
        let out = client.take_output();
        feed(&mut server, &out, 0, 0);
        let back = server.take_output();
        feed(&mut client, &back, 0, 0);
    }
    assert!(client.is_connected() && server.is_connected());
    (client, server)
}

/// Hands `bytes` to `to`, reading what it buffers whenever it stops taking input (at its
/// limit), as an application that keeps up does. Returns the bytes read and the largest heap
/// growth over `base` seen with the data inside the connection, before each read, less the
/// `harness` bytes the caller holds.
fn feed<R: Role>(
    to: &mut Connection<R>,
    mut bytes: &[u8],
    base: isize,
    harness: isize,
) -> (usize, isize) {
    let mut buf = [0u8; 4096];
    let (mut read, mut peak) = (0, 0);
    loop {
        let n = to.receive(bytes, NOW).unwrap();
        bytes = &bytes[n..];
        peak = peak.max(live() - base - harness);
        loop {
            let r = to.read(&mut buf);
            if r == 0 {
                break;
            }
            read += r;
        }
        if bytes.is_empty() {
            return (read, peak);
        }
    }
}

/// Chunks the sender queues before its output is taken: 128 KiB of records in one go, more
/// than the receiver's limit, so `receive` stops at the limit and the reader catches up.
const BURST: usize = 8;

/// Sends `TOTAL` bytes from `from` to `to`, `BURST` chunks at a time, and returns what arrived
/// and the largest number of bytes the two connections held beyond what they held before:
/// measured inside `feed`, each time `receive` returns, with the sender's output taken and the
/// receiver holding what it has not been asked to read yet. The harness's own allocations (the
/// chunk, the wire bytes in flight) are not counted.
fn transfer<A: Role, B: Role>(from: &mut Connection<A>, to: &mut Connection<B>) -> (usize, isize) {
    let chunk = vec![0x5a; CHUNK];
    let base = live();
    let (mut received, mut peak) = (0, 0);
    let mut sent = 0;
    while sent < TOTAL {
        for _ in 0..BURST {
            from.send(&chunk).unwrap();
        }
        sent += BURST * CHUNK;
        let wire = from.take_output();
        let (n, held) = feed(to, &wire, base, wire.capacity() as isize);
        received += n;
        peak = peak.max(held);
    }
    (received, peak)
}

/// An observer that looks at every record as it passes and keeps nothing: the application data
/// bytes it saw, per direction.
#[derive(Default)]
struct Looker {
    data: [usize; 2],
    events: usize,
}

impl Observer for Looker {
    fn observe(&mut self, _event: Event) {
        self.events += 1;
    }

    fn record(&mut self, r: RecordView<'_>) {
        if r.inner_type == ContentType::ApplicationData {
            self.data[r.direction as usize] += r.plaintext.len();
        }
    }
}

#[test]
fn an_undrained_connection_holds_its_buffers_only_and_a_recorder_sees_everything() {
    // Observe::NONE, the default: nothing is recorded, so a connection whose events nobody
    // drains holds no more than its buffer limit plus one record, each way.
    assert_eq!(Observe::default(), Observe::NONE);
    assert_eq!(ClientConfig::default().observe, Observe::NONE);
    let (mut c, mut s) = pair(Observe::default());
    let (got, up) = transfer(&mut c, &mut s);
    assert_eq!(got, TOTAL);
    let (got, down) = transfer(&mut s, &mut c);
    assert_eq!(got, TOTAL);
    println!("held beyond the handshake's: client → server {up} B, server → client {down} B");
    let bound = (LIMIT + RECORD) as isize;
    assert!(up < bound, "client → server: {up} B held, bound {bound}");
    assert!(
        down < bound,
        "server → client: {down} B held, bound {bound}"
    );
    assert_eq!(c.events().count(), 0);
    assert_eq!(s.events().count(), 0);

    // An observer with borrowed hooks (Observe::PUBLIC): it sees every record's plaintext as it
    // passes, and the connections hold no more than without it.
    let (mut c, mut s) = pair(Observe::PUBLIC);
    let (cl, sl): (Arc<Mutex<Looker>>, Arc<Mutex<Looker>>) = Default::default();
    c.set_observer(Box::new(cl.clone()));
    s.set_observer(Box::new(sl.clone()));
    let (_, up) = transfer(&mut c, &mut s);
    let (_, down) = transfer(&mut s, &mut c);
    println!("with an observer that only looks: {up} B and {down} B");
    assert!(
        up < bound,
        "client → server, observed: {up} B held, bound {bound}"
    );
    assert!(
        down < bound,
        "server → client, observed: {down} B held, bound {bound}"
    );
    for (looker, side) in [(cl, "client"), (sl, "server")] {
        let l = looker.lock().unwrap();
        assert_eq!(l.data, [TOTAL, TOTAL], "{side}");
        // The rest (handshake messages, the outcome) still arrives as events.
        assert!(l.events > 0, "{side}");
    }
    assert_eq!(c.events().count(), 0);

    // A recorder (Observe::PUBLIC): every record is there, with its plaintext; what it keeps
    // is the recorder's (and grows with the connection until drained).
    let (mut c, mut s) = pair(Observe::PUBLIC);
    let before: Vec<Event> = c.events().chain(s.events()).collect();
    assert!(!before.is_empty());
    let (_, up) = transfer(&mut c, &mut s);
    let (_, down) = transfer(&mut s, &mut c);
    println!("with a recorder nobody drains: {up} B and {down} B");
    // What the recorder keeps is every record's plaintext at least, until drained.
    assert!(up > TOTAL as isize && down > TOTAL as isize, "{up} {down}");
    for (events, side) in [
        (c.events().collect::<Vec<_>>(), "client"),
        (s.events().collect::<Vec<_>>(), "server"),
    ] {
        for dir in [Direction::ClientToServer, Direction::ServerToClient] {
            let data: usize = events
                .iter()
                .filter_map(|e| match e {
                    Event::Record(r)
                        if r.direction == dir && r.inner_type == ContentType::ApplicationData =>
                    {
                        assert_eq!(r.content.len(), r.plaintext_len);
                        Some(r.plaintext_len)
                    }
                    _ => None,
                })
                .sum();
            assert_eq!(data, TOTAL, "{side} recorded {dir:?}");
        }
    }
}
