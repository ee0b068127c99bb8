//! The server's readiness loop: one thread holds every connection, each a sans-IO endpoint
//! driven by the bytes mio says are there (issue 29).
//!
//! A thread per connection made the connection count the server's limit: 300 clients that
//! connect and send nothing (or half a ClientHello) held every thread until their timeouts and
//! good clients waited behind them. Here a connection that sends nothing costs its socket and
//! its endpoint; its partial record is all it buffers (never a whole read buffer). Each
//! connection has its own deadline in a timer heap. When the table is full, a new connection
//! evicts the oldest one still in its handshake, so a flood can delay a good client by at most
//! one accept, never keep it out.
//!
//! What a connection means (the page, echo, post-handshake auth) is the [`Service`]'s; this
//! module moves bytes, keeps time and bounds the work one connection gets per turn. Writes are
//! non-blocking: output waits in the [`Pipe`] until the socket takes it. A finished connection
//! closes lingering (as [`crate::net::Driver`] does, for the same reason: the fatal alert must
//! not be taken back by a reset), here without blocking anyone.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use tls13lab::events::Event;
use tls13lab::{Connection, Role};

use crate::net::{self, Collected, NetError, Step, LINGER_BYTES, LINGER_TIME};

/// Bytes one connection may read in one turn before the others get theirs.
const TURN_BYTES: usize = 256 * 1024;
/// One read's size; the loop's only large buffer, shared by every connection.
const SCRATCH: usize = 64 * 1024;
/// A receive buffer left this large by a burst is given back once emptied.
const KEEP_BUFFER: usize = 4096;
const LISTENER: Token = Token(usize::MAX);
/// Connections accepted in one pass before the open ones get their turn.
const ACCEPTS_PER_TURN: usize = 256;
/// Longest a finished connection may take to write what it still has for a slow reader.
const CLOSING_WRITE_TIME: Duration = Duration::from_secs(10);

/// A TCP stream wired to an endpoint, without blocking: the non-blocking sibling of
/// [`crate::net::Driver`], with the same collecting of events and data.
pub struct Pipe<R: Role> {
    /// The sans-IO connection.
    pub ep: Connection<R>,
    stream: TcpStream,
    /// At most one partial record between reads.
    inbuf: Vec<u8>,
    /// Output the socket has not taken yet: `out[sent..]`.
    out: Vec<u8>,
    sent: usize,
    events: Vec<Event>,
    early: Vec<u8>,
    data: Vec<u8>,
    /// The peer closed its side (EOF or reset).
    peer_closed: bool,
    /// Shut down our writing once `out` is empty.
    shut_pending: bool,
    shut_done: bool,
}

impl<R: Role> Pipe<R> {
    fn new(stream: TcpStream, ep: Connection<R>) -> Self {
        let _ = stream.set_nodelay(true);
        Pipe {
            ep,
            stream,
            inbuf: Vec::new(),
            out: Vec::new(),
            sent: 0,
            events: Vec::new(),
            early: Vec::new(),
            data: Vec::new(),
            peer_closed: false,
            shut_pending: false,
            shut_done: false,
        }
    }

    /// The events recorded so far, in order.
    pub fn drain_events(&mut self) -> Vec<Event> {
        let mut v = std::mem::take(&mut self.events);
        v.extend(self.ep.events());
        v
    }

    /// The application data received since the last call, in order.
    pub fn take_data(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.data)
    }

    /// The 0-RTT data received since the last call, in order.
    pub fn take_early(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.early)
    }

    /// Queue what the endpoint has to send and write as much as the socket takes now.
    pub fn flush(&mut self) -> Result<(), NetError> {
        let new = self.ep.take_output();
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        }
        self.out.extend_from_slice(&new);
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return Err(NetError::Io(io::ErrorKind::WriteZero.into())),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(NetError::Io(e)),
            }
        }
        if self.shut_pending && !self.shut_done {
            let _ = self.stream.shutdown(Shutdown::Write);
            self.shut_done = true;
        }
        Ok(())
    }

    /// Send close_notify and stop writing once it is out (the peer may still answer).
    pub fn close(&mut self) {
        self.ep.close();
        self.shut_pending = true;
        let _ = self.flush();
    }

    /// Bytes written by us and not yet taken by the socket.
    fn unsent(&self) -> usize {
        self.out.len() - self.sent
    }

    /// One read: `None` when nothing is there (the socket would block).
    fn read_once(&mut self, scratch: &mut [u8]) -> Option<Result<Step, NetError>> {
        let n = match self.stream.read(scratch) {
            Ok(0) => {
                self.peer_closed = true;
                return Some(Ok(Step::Eof));
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Some(Ok(Step::Idle)),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                self.peer_closed = true;
                return Some(Ok(Step::Eof));
            }
            Err(e) => return Some(Err(NetError::Io(e))),
        };
        // Open whole records where they lie: in the read buffer itself unless a partial record
        // waits from the last read.
        let mut collected = Collected {
            events: &mut self.events,
            early: &mut self.early,
            data: &mut self.data,
        };
        let opened = if self.inbuf.is_empty() {
            let (used, r) = net::open_records(
                &mut self.ep,
                &mut scratch[..n],
                net::now_ms(),
                &mut collected,
            );
            self.inbuf.extend_from_slice(&scratch[used..n]);
            r
        } else {
            self.inbuf.extend_from_slice(&scratch[..n]);
            let (used, r) =
                net::open_records(&mut self.ep, &mut self.inbuf, net::now_ms(), &mut collected);
            self.inbuf.drain(..used);
            r
        };
        if self.inbuf.is_empty() && self.inbuf.capacity() > KEEP_BUFFER {
            self.inbuf = Vec::new();
        }
        Some(match opened {
            Ok(()) => Ok(Step::Data),
            Err(e) => {
                // Its alert goes out before the error is returned (RFC 8446 §6.2).
                let _ = self.flush();
                Err(NetError::Tls(e))
            }
        })
    }

    /// After the end: read and discard; true once the peer is done (EOF, reset or error).
    fn discard(&mut self, scratch: &mut [u8], discarded: &mut usize) -> bool {
        loop {
            match self.stream.read(scratch) {
                Ok(0) => {
                    self.peer_closed = true;
                    return true;
                }
                Ok(n) => {
                    *discarded += n;
                    if *discarded >= LINGER_BYTES {
                        return true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return true,
            }
        }
    }
}

/// What a connection means: the server's page, echo and so on.
pub trait Service<R: Role> {
    /// The per-connection state.
    type Session;
    /// The endpoint and state of connection number `n` (from 1).
    fn open(&self, n: u64, peer: Option<SocketAddr>) -> Option<(Connection<R>, Self::Session)>;
    /// Bytes arrived (already fed to the endpoint), the peer closed, or reading failed.
    /// `Some` ends the connection with that result.
    fn step(
        &self,
        s: &mut Self::Session,
        p: &mut Pipe<R>,
        step: Result<Step, NetError>,
    ) -> Option<Result<(), crate::common::Failure>>;
    /// When [`Service::timer`] is next due.
    fn wake_at(&self, s: &Self::Session) -> Instant;
    /// The time from [`Service::wake_at`] came; `Some` ends the connection.
    fn timer(
        &self,
        s: &mut Self::Session,
        p: &mut Pipe<R>,
    ) -> Option<Result<(), crate::common::Failure>>;
    /// The connection ended: report it. What the session still sends is in the pipe.
    fn finish(
        &self,
        n: u64,
        s: Self::Session,
        p: &mut Pipe<R>,
        addrs: (Option<SocketAddr>, Option<SocketAddr>),
        result: Result<(), crate::common::Failure>,
    );
}

enum Phase<S> {
    Open(S),
    /// Finished and reported: the last output goes out (to a slow reader for up to
    /// [`CLOSING_WRITE_TIME`]), then we read until the peer's EOF or [`LINGER_TIME`] after it.
    Closing {
        until: Instant,
        write_by: Instant,
        discarded: usize,
    },
}

struct Entry<R: Role, S> {
    n: u64,
    pipe: Pipe<R>,
    phase: Phase<S>,
    peer: Option<SocketAddr>,
    local: Option<SocketAddr>,
    /// The time this entry's newest timer-heap item is due.
    timer: Instant,
}

/// The loop's limits.
pub struct Limits {
    /// Connections held at once (open and closing).
    pub max_connections: usize,
    /// Stop accepting after this many and return once they are finished.
    pub naccept: Option<u64>,
}

/// The connection table: slots indexed by token, a free list, a timer heap with lazy deletion.
struct Table<R: Role, S> {
    slots: Vec<Option<Entry<R, S>>>,
    free: Vec<usize>,
    live: usize,
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
}

impl<R: Role, S> Table<R, S> {
    fn insert(&mut self, e: Entry<R, S>) -> usize {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(e);
                i
            }
            None => {
                self.slots.push(Some(e));
                self.slots.len() - 1
            }
        }
    }

    fn remove(&mut self, poll: &Poll, i: usize) {
        if let Some(mut e) = self.slots.get_mut(i).and_then(Option::take) {
            let _ = poll.registry().deregister(&mut e.pipe.stream);
            self.live -= 1;
            self.free.push(i);
        }
    }

    /// The connection to give up for a new one: the oldest closing, else the oldest still in
    /// its handshake.
    fn victim(&self) -> Option<usize> {
        let oldest = |pred: &dyn Fn(&Entry<R, S>) -> bool| {
            self.slots
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.as_ref().filter(|e| pred(e)).map(|e| (e.n, i)))
                .min()
                .map(|(_, i)| i)
        };
        oldest(&|e| matches!(e.phase, Phase::Closing { .. }))
            .or_else(|| oldest(&|e| !e.pipe.ep.is_connected()))
    }
}

/// Serve connections from `listener` until `limits.naccept` is reached (or for ever).
pub fn run<R: Role, V: Service<R>>(
    listener: std::net::TcpListener,
    service: &V,
    limits: &Limits,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let mut listener = TcpListener::from_std(listener);
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut events = Events::with_capacity(1024);
    let mut scratch = vec![0u8; SCRATCH];
    let mut t: Table<R, V::Session> = Table {
        slots: Vec::new(),
        free: Vec::new(),
        live: 0,
        timers: BinaryHeap::new(),
    };
    let max = limits.max_connections.max(1);
    let mut accepted = 0u64;
    let mut listening = true;
    // Accepting waits: the table is full of finished handshakes, or accept failed (EMFILE).
    let mut accept_again: Option<Instant> = None;
    // Connections whose turn ended with bytes still to read (edge-triggered: no new event).
    let mut again: Vec<(usize, u64)> = Vec::new();
    loop {
        if !listening && t.live == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let mut wait = t
            .timers
            .peek()
            .map(|Reverse((at, _, _))| at.saturating_duration_since(now));
        if let Some(at) = accept_again {
            let d = at.saturating_duration_since(now);
            wait = Some(wait.map_or(d, |w| w.min(d)));
        }
        if !again.is_empty() {
            wait = Some(Duration::ZERO);
        }
        if let Err(e) = poll.poll(&mut events, wait) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let mut ready: Vec<(usize, bool, bool)> = Vec::new();
        let mut accept_now = accept_again.is_some_and(|at| at <= Instant::now());
        for ev in events.iter() {
            if ev.token() == LISTENER {
                accept_now = true;
            } else {
                ready.push((
                    ev.token().0,
                    ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                    ev.is_writable(),
                ));
            }
        }
        for (i, n) in std::mem::take(&mut again) {
            if t.slots
                .get(i)
                .and_then(Option::as_ref)
                .is_some_and(|e| e.n == n)
            {
                ready.push((i, true, false));
            }
        }
        if accept_now && listening {
            accept_again = None;
            let mut taken = 0;
            loop {
                if t.live >= max && t.victim().is_none() {
                    // Every connection has finished its handshake: the new ones wait in the
                    // kernel's queue until one ends.
                    accept_again = Some(Instant::now() + Duration::from_millis(50));
                    break;
                }
                if taken == ACCEPTS_PER_TURN {
                    // The open connections' turn first; more accepts right after.
                    accept_again = Some(Instant::now());
                    break;
                }
                let (stream, peer) = match listener.accept() {
                    Ok(x) => x,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                        ) =>
                    {
                        continue
                    }
                    Err(e) => {
                        // Out of descriptors and the like: one failed accept must not end the server.
                        eprintln!("tls13lab: accept failed: {e}");
                        accept_again = Some(Instant::now() + Duration::from_millis(50));
                        break;
                    }
                };
                taken += 1;
                accepted += 1;
                // Evict only for a connection actually taken.
                if t.live >= max {
                    if let Some(i) = t.victim() {
                        evict(&mut t, &poll, i, service);
                    }
                }
                let last = limits.naccept == Some(accepted);
                let local = stream.local_addr().ok();
                if let Some((ep, session)) = service.open(accepted, Some(peer)) {
                    let timer = service.wake_at(&session);
                    let n = accepted;
                    let i = t.insert(Entry {
                        n,
                        pipe: Pipe::new(stream, ep),
                        phase: Phase::Open(session),
                        peer: Some(peer),
                        local,
                        timer,
                    });
                    let e = t.slots[i].as_mut().expect("just inserted");
                    let registered = poll.registry().register(
                        &mut e.pipe.stream,
                        Token(i),
                        Interest::READABLE | Interest::WRITABLE,
                    );
                    // Bytes that arrived before registration are reported by the first
                    // event: epoll reports the current readiness on registration.
                    match registered {
                        Ok(()) => t.timers.push(Reverse((timer, i, n))),
                        Err(_) => t.remove(&poll, i),
                    }
                }
                if last {
                    let _ = poll.registry().deregister(&mut listener);
                    listening = false;
                    break;
                }
            }
        }
        for (i, readable, writable) in ready {
            let more = turn(&mut t, &poll, i, readable, writable, service, &mut scratch);
            if more {
                if let Some(e) = t.slots.get(i).and_then(Option::as_ref) {
                    again.push((i, e.n));
                }
            }
        }
        // Timers due.
        let now = Instant::now();
        while let Some(Reverse((at, i, n))) = t.timers.peek().copied() {
            if at > now {
                break;
            }
            t.timers.pop();
            let current = t
                .slots
                .get(i)
                .and_then(Option::as_ref)
                .is_some_and(|e| e.n == n && e.timer == at);
            if current {
                let i_n = (i, n);
                let _ = catch_unwind(AssertUnwindSafe(|| on_timer(&mut t, &poll, i_n.0, service)))
                    .map_err(|_| t.remove(&poll, i_n.0));
            }
        }
    }
}

/// One connection's turn at its readiness event; true if it has bytes left to read.
fn turn<R: Role, V: Service<R>>(
    t: &mut Table<R, V::Session>,
    poll: &Poll,
    i: usize,
    readable: bool,
    writable: bool,
    service: &V,
    scratch: &mut [u8],
) -> bool {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let Some(e) = t.slots.get_mut(i).and_then(Option::as_mut) else {
            return (false, false);
        };
        let mut ended = None;
        let mut more = false;
        if writable && e.pipe.unsent() > 0 {
            match (e.pipe.flush(), &mut e.phase) {
                (Err(err), Phase::Open(s)) => ended = service.step(s, &mut e.pipe, Err(err)),
                (Err(_), Phase::Closing { .. }) => return (false, true),
                // The last output is out: the linger counts from now.
                (Ok(()), Phase::Closing { until, .. }) if e.pipe.unsent() == 0 => {
                    *until = Instant::now() + LINGER_TIME;
                }
                (Ok(()), _) => {}
            }
        }
        if readable && ended.is_none() {
            match &mut e.phase {
                Phase::Open(s) => {
                    let mut reads = 0;
                    while ended.is_none() {
                        let Some(step) = e.pipe.read_once(scratch) else {
                            break;
                        };
                        let eof = matches!(step, Ok(Step::Eof) | Err(_));
                        ended = service.step(s, &mut e.pipe, step);
                        reads += 1;
                        if eof {
                            break; // nothing more will come
                        }
                        if reads * SCRATCH >= TURN_BYTES {
                            more = ended.is_none(); // the others' turn; back to this one next
                            break;
                        }
                    }
                }
                Phase::Closing { discarded, .. } => {
                    // Done once the peer is, unless our output still waits for it.
                    if e.pipe.discard(scratch, discarded) && e.pipe.unsent() == 0 {
                        return (false, true);
                    }
                }
            }
        }
        if let Some(result) = ended {
            finish(e, service, result);
            more = false;
            // What already waits in the socket brings no new edge: drain it now.
            if let Phase::Closing { discarded, .. } = &mut e.phase {
                e.pipe.discard(scratch, discarded);
            }
        }
        if let Phase::Closing { .. } = e.phase {
            if e.pipe.peer_closed && e.pipe.unsent() == 0 {
                return (false, true);
            }
        }
        reschedule(e, service, &mut t.timers, i);
        (more, false)
    }));
    match r {
        Ok((more, false)) => more,
        Ok((_, true)) | Err(_) => {
            // Done, or a bug in tls13lab (the panic hook printed it): this connection only.
            t.remove(poll, i);
            false
        }
    }
}

fn on_timer<R: Role, V: Service<R>>(
    t: &mut Table<R, V::Session>,
    poll: &Poll,
    i: usize,
    service: &V,
) {
    let Some(e) = t.slots.get_mut(i).and_then(Option::as_mut) else {
        return;
    };
    match &mut e.phase {
        Phase::Open(s) => {
            if let Some(result) = service.timer(s, &mut e.pipe) {
                finish(e, service, result);
                if e.pipe.peer_closed && e.pipe.unsent() == 0 {
                    t.remove(poll, i);
                    return;
                }
            }
            reschedule(e, service, &mut t.timers, i);
        }
        Phase::Closing {
            until, write_by, ..
        } => {
            let now = Instant::now();
            if now < *until {
                reschedule(e, service, &mut t.timers, i);
            } else if e.pipe.unsent() > 0 && now < *write_by {
                // A slow reader still taking our last output.
                *until = (now + LINGER_TIME).min(*write_by);
                reschedule(e, service, &mut t.timers, i);
            } else {
                t.remove(poll, i);
            }
        }
    }
}

/// Report the connection and start its lingering close.
fn finish<R: Role, V: Service<R>>(
    e: &mut Entry<R, V::Session>,
    service: &V,
    result: Result<(), crate::common::Failure>,
) {
    let phase = std::mem::replace(
        &mut e.phase,
        Phase::Closing {
            until: Instant::now() + LINGER_TIME,
            write_by: Instant::now() + CLOSING_WRITE_TIME,
            discarded: 0,
        },
    );
    if let Phase::Open(s) = phase {
        service.finish(e.n, s, &mut e.pipe, (e.peer, e.local), result);
    }
    e.pipe.shut_pending = true;
    let _ = e.pipe.flush();
}

/// Make sure the timer heap holds the entry's next due time.
fn reschedule<R: Role, V: Service<R>>(
    e: &mut Entry<R, V::Session>,
    service: &V,
    timers: &mut BinaryHeap<Reverse<(Instant, usize, u64)>>,
    i: usize,
) {
    let at = match &e.phase {
        Phase::Open(s) => service.wake_at(s),
        Phase::Closing { until, .. } => *until,
    };
    // One live heap entry per connection, the earliest: a later time waits until that entry
    // comes due (its handler reschedules), so a peer that keeps moving the time (a byte at a
    // time after our close) cannot grow the heap.
    if at < e.timer || e.timer <= Instant::now() {
        e.timer = at;
        timers.push(Reverse((at, i, e.n)));
    }
}

/// Give up connection `i` for a new one: reported, closed at once.
fn evict<R: Role, V: Service<R>>(t: &mut Table<R, V::Session>, poll: &Poll, i: usize, service: &V) {
    let live = t.live;
    if let Some(e) = t.slots.get_mut(i).and_then(Option::as_mut) {
        if let Phase::Open(_) = e.phase {
            let why = format!(
                "evicted: {live} connections held and this the oldest still in its handshake"
            );
            let _ = catch_unwind(AssertUnwindSafe(|| {
                finish(e, service, Err(crate::common::Failure::Network(why)))
            }));
        }
    }
    t.remove(poll, i);
}
