#!/usr/bin/env bash
# Instructions per handshake (client + server in one thread) under callgrind: full, resumed
# (psk_dhe_ke), psk_ke and 0-RTT handshakes, tls13lab (also with ECH, RFC 9849) against rustls
# (which has no psk_ke nor an ECH server) and against the crypto floor of the same handshake on
# our crates and on aws-lc, for each group benchmarked; ECH's additions against ECH's own floor
# (floor-ech); then full X25519MLKEM768 handshakes with an ML-DSA-44, -65 and -87 chain.
# The count covers only the handshake (examples/one_handshake.rs, --toggle-collect), so it does
# not depend on the machine's load. Pass cargo flags through, e.g.
# `--features ring-aead,ring-verify,ring-sign`. CASES=classic or CASES=mldsa runs one part.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release -p tls13lab --example one_handshake "$@" >&2
bin="${CARGO_TARGET_DIR:-target}/release/examples/one_handshake"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cases="${CASES:-classic mldsa}"

# Instructions of `one_handshake LIB CASE GROUP [N]`, divided by N.
count() {
  local f="$out/$1-$2-$3.out" n="${4:-1}"
  valgrind --tool=callgrind --callgrind-out-file="$f" --toggle-collect='*cg_measured_handshake*' \
    "$bin" "$@" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  awk -v n="$n" '/^(summary|totals):/ {printf "%d\n", $2 / n; exit}' "$f"
}

printf '%-16s %-14s %-15s %12s\n' group case library instructions
if [[ " $cases " == *" classic "* ]]; then
for group in $("$bin" --groups); do
  for kase in full resumed psk_ke 0rtt; do
    declare -A ir=()
    libs="tls13lab tls13lab-ech rustls floor-tls13lab floor-aws-lc floor-ech"
    [ "$kase" = psk_ke ] && libs="tls13lab tls13lab-ech floor-tls13lab floor-aws-lc floor-ech"
    [ "$kase" = full ] && libs="tls13lab tls13lab-nomemo tls13lab-ech rustls floor-tls13lab floor-aws-lc floor-ech"
    for lib in $libs; do
      ir[$lib]=$(count "$lib" "$kase" "$group")
      printf '%-16s %-14s %-15s %12s\n' "$group" "$kase" "$lib" "${ir[$lib]}"
    done
    # The floor counts both certificate verifications the client makes without the signature
    # memo, so for full handshakes "beyond floor" is taken from tls13lab-nomemo.
    awk -v a="${ir[tls13lab]}" -v b="${ir[rustls]:-}" -v f="${ir[floor-tls13lab]}" \
        -v n="${ir[tls13lab-nomemo]:-}" -v e="${ir[tls13lab-ech]}" -v ef="${ir[floor-ech]}" \
        -v g="$group" -v k="$kase" \
      'BEGIN { if (b != "") printf "%-16s %-14s %-15s %11.2fx\n", g, k, "vs rustls", a / b;
               printf "%-16s %-14s %-15s %+11.0f%%\n", g, k, "ECH adds", (e - a) / a * 100;
               printf "%-16s %-14s %-15s %11.2fx\n", g, k, "ECH/its floor", (e - a) / ef;
               if (n != "") printf "%-16s %-14s %-15s %11.2fx\n", g, k, "nomemo/rustls", n / b;
               o = (n != "") ? n : a;
               printf "%-16s %-14s %-15s %+11.0f%%\n", g, k, "beyond floor", (o - f) / f * 100 }'
  done
done
fi

# ML-DSA: signing is a rejection loop whose iterations depend on the message and rnd, so each
# figure is the mean of N handshakes (tls13lab: N seeds; rustls and aws-lc: their own rnd).
if [[ " $cases " == *" mldsa "* ]]; then
n="${MLDSA_N:-32}"
group=x25519mlkem768
for level in mldsa44 mldsa65 mldsa87; do
  kase="full-$level"
  declare -A ir=()
  for lib in tls13lab tls13lab-nomemo rustls floor-tls13lab floor-aws-lc; do
    ir[$lib]=$(count "$lib" "$kase" "$group" "$n")
    printf '%-16s %-14s %-15s %12s\n' "$group" "$kase" "$lib" "${ir[$lib]}"
  done
  awk -v a="${ir[tls13lab]}" -v b="${ir[rustls]}" -v n="${ir[tls13lab-nomemo]}" \
      -v f="${ir[floor-tls13lab]}" -v w="${ir[floor-aws-lc]}" -v g="$group" -v k="$kase" \
    'BEGIN { printf "%-16s %-14s %-15s %11.2fx\n", g, k, "vs rustls", a / b;
             printf "%-16s %-14s %-15s %11.2fx\n", g, k, "nomemo/rustls", n / b;
             printf "%-16s %-14s %-15s %+11.0f%%\n", g, k, "nomemo/aws-lc", (n - w) / w * 100;
             printf "%-16s %-14s %-15s %+11.0f%%\n", g, k, "beyond floor", (n - f) / f * 100 }'
done
fi
