//! The probe's blocking TCP transport: one connection with one deadline, writes cut into
//! chosen TCP segments, and bounded reads.
//!
//! TCP is a byte stream, so a segment boundary is only a request: with Nagle off
//! (`TCP_NODELAY`) each `write` goes out at once, and a short pause before the next write keeps
//! the kernel from joining them (on loopback and on real paths alike, as long as the peer's
//! window is open). That is how the tolerance battery moves TCP boundaries independently of
//! record boundaries.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The pause between writes meant to land in separate segments.
pub const SEGMENT_PAUSE: Duration = Duration::from_millis(20);

/// Largest TLSCiphertext we read whole: 5-byte header plus 2^14 + 256 (RFC 8446 §5.2).
pub const MAX_RECORD: usize = 5 + (1 << 14) + 256;

/// The wall clock as Unix milliseconds (ticket ages, certificate validity).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Why reading stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadEnd {
    /// The peer closed (FIN).
    Eof,
    /// The peer reset the connection.
    Reset,
    /// The connection's deadline passed.
    Timeout,
    /// Any other socket error.
    Io(String),
}

/// One TCP connection to the target with one deadline for everything it does.
pub struct Wire {
    stream: TcpStream,
    deadline: Instant,
}

impl Wire {
    /// Connects to `addr` (never anything else) within `timeout`, which also bounds the whole
    /// connection's life.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<Wire> {
        let deadline = Instant::now() + timeout;
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(timeout))?;
        Ok(Wire { stream, deadline })
    }

    /// Writes each of `segments` with its own `write` call, pausing [`SEGMENT_PAUSE`] between
    /// them so that each leaves in its own TCP segment (see the module comment).
    pub fn write_segments(&mut self, segments: &[Vec<u8>]) -> io::Result<()> {
        for (i, s) in segments.iter().enumerate() {
            if i > 0 {
                std::thread::sleep(SEGMENT_PAUSE);
            }
            self.stream.write_all(s)?;
            self.stream.flush()?;
        }
        Ok(())
    }

    /// Reads what is there into `buf`, waiting at most until the deadline (or `quiet`, when
    /// given and sooner): `Ok(0)` only when `quiet` passed without data.
    pub fn read_some(&mut self, buf: &mut [u8], quiet: Option<Duration>) -> Result<usize, ReadEnd> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadEnd::Timeout);
        }
        let wait = quiet.map_or(left, |q| q.min(left));
        let quiet_first = quiet.is_some_and(|q| q < left);
        self.stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .map_err(|e| ReadEnd::Io(e.to_string()))?;
        match self.stream.read(buf) {
            Ok(0) => Err(ReadEnd::Eof),
            Ok(n) => Ok(n),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if quiet_first {
                    Ok(0)
                } else {
                    Err(ReadEnd::Timeout)
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
                ) =>
            {
                Err(ReadEnd::Reset)
            }
            Err(e) => Err(ReadEnd::Io(e.to_string())),
        }
    }

    /// Reads one whole record (type, body) of at most [`MAX_RECORD`] bytes; bytes after it stay
    /// in `pending` for the next call. A length field beyond the bound ends with `Err(Io)`.
    pub fn read_record(&mut self, pending: &mut Vec<u8>) -> Result<(u8, Vec<u8>), ReadEnd> {
        let mut buf = [0u8; 4096];
        loop {
            if pending.len() >= 5 {
                let len = usize::from(u16::from_be_bytes([pending[3], pending[4]]));
                if 5 + len > MAX_RECORD {
                    return Err(ReadEnd::Io(format!("record of {len} bytes")));
                }
                if pending.len() >= 5 + len {
                    let typ = pending[0];
                    let body = pending[5..5 + len].to_vec();
                    pending.drain(..5 + len);
                    return Ok((typ, body));
                }
            }
            let n = self.read_some(&mut buf, None)?;
            pending.extend_from_slice(&buf[..n]);
        }
    }

    /// Stops sending (FIN) and drops the connection.
    pub fn close(self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}
