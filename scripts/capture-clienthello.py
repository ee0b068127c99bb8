#!/usr/bin/env python3
"""Listen on 127.0.0.1, accept one TCP connection, and save the TLS records that carry its
first handshake message (the ClientHello) as they arrived, record headers included. The listener
never answers: a ClientHello capture needs no server. Prints the port on stdout at once, then
waits (at most TIMEOUT seconds) for a client; exits 0 once OUT is written.

Usage: capture-clienthello.py OUT [TIMEOUT]"""
import socket
import sys


def main():
    out = sys.argv[1]
    timeout = float(sys.argv[2]) if len(sys.argv) > 2 else 60
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(timeout)
    print(srv.getsockname()[1], flush=True)
    conn, _ = srv.accept()
    conn.settimeout(timeout)
    buf = b""
    msg = b""
    records = b""
    while True:
        # Whole records only; stop once the handshake message they carry is complete.
        while len(buf) >= 5 and len(buf) >= 5 + int.from_bytes(buf[3:5], "big"):
            n = 5 + int.from_bytes(buf[3:5], "big")
            if buf[0] != 22:
                sys.exit("not a handshake record")
            records += buf[:n]
            msg += buf[5:n]
            buf = buf[n:]
        if len(msg) >= 4 and len(msg) >= 4 + int.from_bytes(msg[1:4], "big"):
            break
        chunk = conn.recv(65536)
        if not chunk:
            sys.exit("the client closed before a whole ClientHello")
        buf += chunk
    with open(out, "wb") as f:
        f.write(records)
    conn.close()
    srv.close()


main()
