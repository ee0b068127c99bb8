#!/usr/bin/env python3
"""Markdown tables with ratios from criterion's results (target/criterion, or the directory given):
handshakes (tls13lab, rustls, both crypto floors) and bulk throughput. Used for docs/performance.md;
run after `cargo bench --bench handshake --bench bulk`."""
import json
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")

res = {}
for dirpath, _, files in os.walk(root):
    if os.path.basename(dirpath) != "new" or "benchmark.json" not in files:
        continue
    with open(os.path.join(dirpath, "benchmark.json")) as f:
        b = json.load(f)
    with open(os.path.join(dirpath, "estimates.json")) as f:
        e = json.load(f)
    res[(b["group_id"], b["function_id"])] = (e["median"]["point_estimate"], b.get("throughput"))


def t(group, fn):
    v = res.get((group, fn))
    return v[0] if v else None


def us(ns):
    return "–" if ns is None else f"{ns / 1000:,.1f}"


def ratio(a, b, fmt="{:.2f}×"):
    return "–" if a is None or b is None else fmt.format(a / b)


groups = sorted({g for g, _ in res if g.startswith("handshake/")},
                key=lambda g: (g.split("/")[2], ["full", "resumed", "resumed_psk_ke", "0rtt"].index(g.split("/")[1])))
if groups:
    print("| case | group | side | tls13lab µs | rustls µs | floor (ours) µs | floor (aws-lc) µs "
          "| speed vs rustls | ours beyond its floor |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|")
    for g in groups:
        _, case, group = g.split("/")
        for who in ["client+server", "client", "server"]:
            o, r = t(g, f"tls13lab/{who}"), t(g, f"rustls/{who}")
            fo, fa = t(g, f"floor-tls13lab/{who}"), t(g, f"floor-aws-lc/{who}")
            over = "–" if o is None or fo is None else f"{(o - fo) / fo * 100:+.0f}%"
            print(f"| {case} | {group} | {who} | {us(o)} | {us(r)} | {us(fo)} | {us(fa)} "
                  f"| {ratio(r, o)} | {over} |")
            n = t(g, f"tls13lab-nomemo/{who}")
            if n is not None:
                # The client verifies the certificate's signature again (no SignatureMemo); the
                # floor counts both verifications, so this row is the one to compare with it.
                over = "–" if fo is None else f"{(n - fo) / fo * 100:+.0f}%"
                print(f"| {case}, no memo | {group} | {who} | {us(n)} | {us(r)} | {us(fo)} | {us(fa)} "
                      f"| {ratio(r, n)} | {over} |")
    print()

bulk = sorted({g for g, _ in res if g.startswith("bulk/")})
if bulk:
    def gibs(group, fn):
        v = res.get((group, fn))
        if not v or not v[1]:
            return None
        return v[1]["Bytes"] / v[0]  # bytes per ns = GB/s
    # "in place": seal_in_place / open_in_place in the caller's buffer; the other tls13lab
    # column is the buffered calls (send + take_output, receive).
    print("| suite | direction | tls13lab in place GB/s | tls13lab buffered GB/s | rustls GB/s "
          "| our AeadKey alone GB/s | ring AEAD GB/s | aws-lc AEAD GB/s | in place vs rustls "
          "| in place vs our AEAD | buffered vs rustls | buffered vs our AEAD |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for g in bulk:
        for d in ["encrypt", "decrypt"]:
            i, o, r = (gibs(g, f"{x}/{d}") for x in ["tls13lab-inplace", "tls13lab", "rustls"])
            fo, fr, fa = (gibs(g, f"floor-{x}/{d}") for x in ["tls13lab", "ring", "aws-lc"])
            f = lambda x: "–" if x is None else f"{x:.2f}"
            print(f"| {g.split('/')[1]} | {d} | {f(i)} | {f(o)} | {f(r)} | {f(fo)} | {f(fr)} | {f(fa)} "
                  f"| {ratio(i, r)} | {ratio(i, fo, '{:.0%}')} | {ratio(o, r)} | {ratio(o, fo, '{:.0%}')} |")
    print()

prims = sorted((fn for g, fn in res if g == "primitives"))
if prims:
    print("| primitive | crate | µs |")
    print("|---|---|--:|")
    for fn in prims:
        name, crate = fn.split("/")
        print(f"| {name} | {crate} | {t('primitives', fn) / 1000:,.2f} |")
