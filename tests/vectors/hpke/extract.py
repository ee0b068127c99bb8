#!/usr/bin/env python3
"""Extracts RFC 9180 Appendix A's base-mode (mode 0) vectors for the suites tls13lab implements.

Usage: extract.py rfc9180.md > base.txt  (the RFC's kramdown source or its text rendering)

Output: one block per suite, `key: hex` lines with the RFC's wrapped hex joined, encryptions and
exports as `[encryption]` / `[export]` sub-blocks, blocks separated by `[suite]` lines.
"""
import re
import sys

WANT = {(32, 1, 1), (32, 1, 3), (16, 1, 1), (16, 1, 3), (32, 1, 0xFFFF)}


def fields(lines):
    """`key: value` pairs, continuation lines (bare hex) appended to the previous value."""
    out = []
    for line in lines:
        line = line.strip()
        if not line:
            out.append(None)
            continue
        m = re.match(r"^([a-zA-Z_ ]+):\s*(.*)$", line)
        if m:
            out.append([m.group(1).strip().replace(" ", "_"), m.group(2).strip()])
        elif re.fullmatch(r"[0-9a-f]+", line) and out and out[-1]:
            out[-1][1] += line
        else:
            raise SystemExit(f"unexpected line: {line!r}")
    return out


def main():
    text = open(sys.argv[1]).read().splitlines()
    i = 0
    blocks = []  # (heading, [lines])
    heading = None
    while i < len(text):
        line = text[i]
        if line.startswith("#"):
            heading = line
        if line.startswith("~~~"):
            j = i + 1
            while not text[j].startswith("~~~"):
                j += 1
            blocks.append((heading, text[i + 1 : j]))
            i = j
        i += 1
    suite = None
    for heading, lines in blocks:
        if "Base Setup Information" in (heading or ""):
            f = fields(lines)
            d = {k: v for k, v in (x for x in f if x)}
            key = (int(d["kem_id"]), int(d["kdf_id"]), int(d["aead_id"]))
            suite = key if d["mode"] == "0" and key in WANT else None
            if suite:
                print("[suite]")
                for k, v in (x for x in f if x):
                    print(f"{k}: {v}")
        elif suite and heading and heading.startswith("####"):
            kind = "encryption" if "Encryptions" in heading else "export"
            cur = None
            for x in fields(lines) + [None]:
                if x is None:
                    cur = None
                    continue
                if cur is None:
                    print(f"[{kind}]")
                    cur = True
                print(f"{x[0]}: {x[1]}")
        elif heading and heading.startswith("###") and not heading.startswith("####"):
            suite = None


main()
