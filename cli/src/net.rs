//! The blocking TCP driver: moves bytes between a socket and a sans-IO endpoint.
//!
//! This is the only place the `tls13lab` binary touches sockets and the clock. It lives in the
//! binary crate, so the compiler holds it to the library's public API: `open_in_place(buf,
//! now_ms)`, `read_all()`, `read_all_early()`, `take_output()`, `events()`, `send()` and
//! `close()`. Received bytes stay in the driver's own buffer and records are opened where they
//! lie (the caller-owned-buffer API); the driver collects the plaintext, in order, for the CLI,
//! apart from the events. The clock is `SystemTime` as Unix milliseconds — the same clock the
//! core uses for ticket ages and certificate validity.
//!
//! Closing is lingering (as HTTP servers do): a socket closed with unread input makes the kernel
//! answer with a TCP reset, which can take back what was sent just before — the fatal alert
//! that says why (RFC 8446 §6.2) — before the peer reads it. So when the driver is dropped after
//! a fatal alert, or with input still unread, it shuts down writing and reads and discards what
//! the peer still sends, until EOF, [`LINGER_TIME`] or [`LINGER_BYTES`], before closing.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tls13lab::events::Event;
use tls13lab::record::MAX_RECORD_LEN;
use tls13lab::{Connection, Error, Role};

/// Longest a lingering close waits for the peer's EOF.
pub const LINGER_TIME: Duration = Duration::from_secs(1);
/// Most a lingering close reads and discards.
pub const LINGER_BYTES: usize = 1 << 20;

/// The wall clock as Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Why driving a connection stopped.
#[derive(Debug)]
pub enum NetError {
    /// The socket failed.
    Io(io::Error),
    /// The TLS endpoint failed (its alert, if any, was sent before this was returned).
    Tls(Error),
}

/// What one [`Driver::step`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Bytes arrived and were fed to the endpoint.
    Data,
    /// The peer closed its side of the TCP connection.
    Eof,
    /// Nothing arrived within the wait.
    Idle,
}

/// A TCP stream wired to an endpoint.
pub struct Driver<R: Role> {
    /// The sans-IO connection, either side.
    pub ep: Connection<R>,
    stream: TcpStream,
    /// Received bytes; `buf[..filled]` is at most one partial record between reads.
    buf: Vec<u8>,
    filled: usize,
    /// The endpoint's events since the last drain.
    events: Vec<Event>,
    /// 0-RTT data (never, for a client: the server's loop is crate::reactor) and application
    /// data received since the last take, in order.
    early: Vec<u8>,
    data: Vec<u8>,
    /// The peer closed its side (EOF or reset): nothing more can arrive.
    peer_closed: bool,
    /// The endpoint failed (its fatal alert, if any, was sent): the peer may still be sending.
    failed: bool,
}

impl<R: Role> Driver<R> {
    /// Drive `ep` over `stream`.
    pub fn new(stream: TcpStream, ep: Connection<R>) -> Self {
        let _ = stream.set_nodelay(true); // one flight, one segment burst: do not wait for ACKs
        Driver {
            ep,
            stream,
            // Room for a partial record and a whole one after it (RFC 8446 §5.2).
            buf: vec![0; 2 * MAX_RECORD_LEN],
            filled: 0,
            events: Vec::new(),
            early: Vec::new(),
            data: Vec::new(),
            peer_closed: false,
            failed: false,
        }
    }

    /// The events recorded so far, in order.
    pub fn drain_events(&mut self) -> Vec<Event> {
        let mut v = std::mem::take(&mut self.events);
        v.extend(self.ep.events());
        v
    }

    /// Bytes of application data collected and not yet taken.
    pub fn data_len(&self) -> usize {
        self.data.len()
    }

    /// The application data received since the last call, in order.
    pub fn take_data(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.data)
    }

    /// Write everything the endpoint has queued.
    pub fn flush(&mut self) -> Result<(), NetError> {
        let out = self.ep.take_output();
        if !out.is_empty() {
            self.stream.write_all(&out).map_err(NetError::Io)?;
        }
        Ok(())
    }

    /// Wait up to `wait` for bytes and feed them to the endpoint, then send what it answers.
    /// On a TLS error the alert the endpoint queued is sent before the error is returned.
    pub fn step(&mut self, wait: Duration) -> Result<Step, NetError> {
        let step = self.read_step(wait)?;
        self.flush()?;
        Ok(step)
    }

    /// Read and feed, leaving the endpoint's answer queued.
    fn read_step(&mut self, wait: Duration) -> Result<Step, NetError> {
        let wait = wait.max(Duration::from_millis(1)); // a zero timeout would mean "block forever"
        self.stream
            .set_read_timeout(Some(wait))
            .map_err(NetError::Io)?;
        let n = match self.stream.read(&mut self.buf[self.filled..]) {
            Ok(0) => {
                self.peer_closed = true;
                return Ok(Step::Eof);
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(Step::Idle)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(Step::Idle),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                self.peer_closed = true;
                return Ok(Step::Eof);
            }
            Err(e) => return Err(NetError::Io(e)),
        };
        self.filled += n;
        let (start, opened) = open_records(
            &mut self.ep,
            &mut self.buf[..self.filled],
            now_ms(),
            &mut Collected {
                events: &mut self.events,
                early: &mut self.early,
                data: &mut self.data,
            },
        );
        // Keep the partial record, if any, at the front for the next read.
        self.buf.copy_within(start..self.filled, 0);
        self.filled -= start;
        if let Err(e) = opened {
            // The alert the endpoint queued goes out before the error is returned; the peer
            // may be in the middle of a long flight, so dropping the driver lingers.
            self.failed = true;
            let _ = self.flush();
            return Err(NetError::Tls(e));
        }
        Ok(Step::Data)
    }

    /// Send close_notify and stop writing (the peer may still answer with its own).
    pub fn close(&mut self) {
        self.ep.close();
        let _ = self.flush();
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Whether received bytes wait unread in the socket (a pending EOF is none).
    fn unread_input(&mut self) -> bool {
        if self.stream.set_nonblocking(true).is_err() {
            return true; // cannot tell: linger to be safe
        }
        let peeked = self.stream.peek(&mut [0u8; 1]);
        let _ = self.stream.set_nonblocking(false);
        matches!(peeked, Ok(n) if n > 0)
    }

    /// Shut down writing, then read and discard until EOF, [`LINGER_TIME`] or [`LINGER_BYTES`].
    fn linger(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
        let end = Instant::now() + LINGER_TIME;
        let mut discarded = 0;
        while discarded < LINGER_BYTES {
            let left = remaining(end);
            if left.is_zero() || self.stream.set_read_timeout(Some(left)).is_err() {
                return;
            }
            match self.stream.read(&mut self.buf) {
                Ok(0) => return,
                Ok(n) => discarded += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return, // timed out, or reset
            }
        }
    }
}

/// Where [`open_records`] puts what the endpoint produced.
pub struct Collected<'a> {
    /// The endpoint's events, in order.
    pub events: &'a mut Vec<Event>,
    /// 0-RTT data received (a server).
    pub early: &'a mut Vec<u8>,
    /// Application data received.
    pub data: &'a mut Vec<u8>,
}

/// Open every whole record at the front of `buf` where it lies, collecting events and data in
/// order. Returns how many bytes were consumed (the rest is at most one partial record) and
/// whether the endpoint failed; on failure what it produced before is collected too and its
/// alert waits in `take_output()`.
pub fn open_records<R: Role>(
    ep: &mut Connection<R>,
    buf: &mut [u8],
    now: u64,
    out: &mut Collected<'_>,
) -> (usize, Result<(), Error>) {
    let mut start = 0;
    loop {
        match ep.open_in_place(&mut buf[start..], now) {
            Ok(o) => {
                // What the records before this one produced comes first: data records
                // `open_in_place` took the buffered way (the handshake's, 0-RTT), which
                // wait to be read.
                out.events.extend(ep.events());
                out.early.extend_from_slice(&ep.read_all_early());
                out.data.extend_from_slice(&ep.read_all());
                if let Some(d) = o.data {
                    out.data
                        .extend_from_slice(&buf[start + d.start..start + d.end]);
                }
                start += o.consumed;
                if o.consumed == 0 {
                    return (start, Ok(()));
                }
            }
            Err(e) => {
                out.events.extend(ep.events());
                out.early.extend_from_slice(&ep.read_all_early());
                out.data.extend_from_slice(&ep.read_all());
                return (start, Err(e));
            }
        }
    }
}

impl<R: Role> Drop for Driver<R> {
    /// The lingering close (see the module doc): may take up to [`LINGER_TIME`]. After a
    /// failure always, since the peer may still be sending what the error cut short; otherwise
    /// only if input waits unread. Output the endpoint still holds (an alert) goes first.
    fn drop(&mut self) {
        let _ = self.stream.set_write_timeout(Some(LINGER_TIME));
        let _ = self.flush();
        if !self.peer_closed && (self.failed || self.unread_input()) {
            self.linger();
        }
    }
}

/// Time left until `deadline` (zero if it passed).
pub fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// Resolve `host` and connect to the first address that answers within `timeout`.
pub fn connect(host: &str, port: u16, timeout: Duration) -> Result<TcpStream, io::Error> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e))?
        .collect();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}
