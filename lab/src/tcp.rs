//! What the instruments assume about the network under TLS: packet headers, the maximum segment
//! size, and how a byte stream is cut into segments.
//!
//! TCP sends a stream, not records: a sender with data queued fills segments of MSS bytes
//! (Nagle off, as every TLS stack sets it), so record boundaries and segment boundaries are
//! independent.

use serde::Serialize;

/// IPv4 header without options (RFC 791).
pub const IPV4_HEADER: usize = 20;
/// IPv6 fixed header (RFC 8200).
pub const IPV6_HEADER: usize = 40;
/// TCP header without options (RFC 9293).
pub const TCP_HEADER: usize = 20;
/// TCP timestamps option as Linux sends it on every segment: 10 bytes plus 2 NOPs (RFC 7323).
pub const TCP_TIMESTAMPS: usize = 12;

/// The packet framing assumed for one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Link {
    /// Largest IP packet, headers included.
    pub mtu: usize,
    /// IP header bytes per packet.
    pub ip_header: usize,
    /// TCP header bytes per segment (20 plus options).
    pub tcp_header: usize,
    /// Payload bytes per segment: MTU minus both headers.
    pub mss: usize,
}

impl Default for Link {
    fn default() -> Self {
        Link::ipv4(1500, 0).unwrap_or(Link {
            mtu: 1500,
            ip_header: IPV4_HEADER,
            tcp_header: TCP_HEADER,
            mss: 1460,
        })
    }
}

impl Link {
    /// IPv4 with `tcp_options` bytes of TCP options on every segment.
    pub fn ipv4(mtu: usize, tcp_options: usize) -> Result<Link, String> {
        Link::new(mtu, IPV4_HEADER, tcp_options)
    }

    /// IPv6 with `tcp_options` bytes of TCP options on every segment.
    pub fn ipv6(mtu: usize, tcp_options: usize) -> Result<Link, String> {
        Link::new(mtu, IPV6_HEADER, tcp_options)
    }

    fn new(mtu: usize, ip_header: usize, tcp_options: usize) -> Result<Link, String> {
        if tcp_options > 40 || !tcp_options.is_multiple_of(4) {
            return Err(format!(
                "TCP options are a multiple of 4 bytes, at most 40 (got {tcp_options})"
            ));
        }
        let tcp_header = TCP_HEADER + tcp_options;
        // IPv4 hosts must accept 576-byte datagrams, IPv6 links carry at least 1280 (RFC 8200 §5).
        let min = if ip_header == IPV6_HEADER { 1280 } else { 576 };
        if mtu < min || mtu > 65_535 {
            return Err(format!("MTU {mtu} is outside {min}..=65535"));
        }
        Ok(Link {
            mtu,
            ip_header,
            tcp_header,
            mss: mtu - ip_header - tcp_header,
        })
    }

    /// One line stating the assumptions, e.g. `MSS 1460 = MTU 1500 − IPv4 20 − TCP 20 (no options)`.
    pub fn describe(&self) -> String {
        let ip = if self.ip_header == IPV6_HEADER {
            "IPv6"
        } else {
            "IPv4"
        };
        let opts = match self.tcp_header - TCP_HEADER {
            0 => "no options".to_string(),
            TCP_TIMESTAMPS => "timestamps".to_string(),
            n => format!("{n} bytes of options"),
        };
        format!(
            "MSS {} = MTU {} − {ip} {} − TCP {} ({opts})",
            self.mss, self.mtu, self.ip_header, self.tcp_header
        )
    }

    /// Packet bytes (IP + TCP headers included) of a segment carrying `payload` bytes.
    pub fn packet_len(&self, payload: usize) -> usize {
        payload + self.ip_header + self.tcp_header
    }

    /// How many full-sized segments a stream of `len` bytes needs (0 for 0 bytes).
    pub fn segments_for(&self, len: usize) -> usize {
        len.div_ceil(self.mss)
    }

    /// The `(offset, len)` of each segment of a `len`-byte stream sent all at once.
    pub fn segment(&self, len: usize) -> Vec<(usize, usize)> {
        (0..len)
            .step_by(self.mss)
            .map(|o| (o, self.mss.min(len - o)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mss_follows_the_headers() {
        assert_eq!(Link::default().mss, 1460);
        assert_eq!(Link::ipv4(1500, TCP_TIMESTAMPS).unwrap().mss, 1448);
        assert_eq!(Link::ipv6(1500, 0).unwrap().mss, 1440);
        assert!(Link::ipv4(100, 0).is_err());
        assert!(Link::ipv4(1500, 3).is_err());
        let l = Link::default();
        assert_eq!(l.segment(2921), vec![(0, 1460), (1460, 1460), (2920, 1)]);
        assert_eq!(l.segments_for(0), 0);
        assert_eq!(l.packet_len(1460), 1500);
    }
}

/// One direction of a TCP connection, reassembled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    /// The payload bytes in sequence order.
    pub bytes: Vec<u8>,
    /// `(stream offset, capture time µs)` for each stretch of bytes as it arrived: the time of
    /// byte `i` is that of the last entry with offset ≤ i.
    pub times: Vec<(usize, u64)>,
    /// Bytes missing (a gap in sequence numbers): the stream stops before the first gap.
    pub gap: bool,
    /// Segments that brought nothing new (retransmissions).
    pub retransmissions: usize,
}

impl Stream {
    /// Capture time (µs) of the byte at `offset`.
    pub fn time_of(&self, offset: usize) -> u64 {
        self.times
            .iter()
            .take_while(|(o, _)| *o <= offset)
            .last()
            .map_or(0, |(_, t)| *t)
    }
}
