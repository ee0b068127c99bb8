#!/usr/bin/env bash
# Instructions per handshake (client + server in one thread) under callgrind: full, resumed
# (psk_dhe_ke), psk_ke and 0-RTT handshakes, tls13lab (also with ECH, RFC 9849) against rustls
# (which has no psk_ke nor an ECH server) and against the crypto floor of the same handshake on
# our crates and on aws-lc, for each group
# benchmarked. The count covers only the handshake (examples/one_handshake.rs, --toggle-collect),
# so it does not depend on the machine's load. Pass cargo flags through, e.g.
# `--features ring-aead,ring-verify,ring-sign`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --example one_handshake "$@" >&2
bin="${CARGO_TARGET_DIR:-target}/release/examples/one_handshake"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-16s %-8s %-15s %12s\n' group case library instructions
for group in $("$bin" --groups); do
  for kase in full resumed psk_ke 0rtt; do
    declare -A ir=()
    libs="tls13lab tls13lab-ech rustls floor-tls13lab floor-aws-lc"
    [ "$kase" = psk_ke ] && libs="tls13lab tls13lab-ech floor-tls13lab floor-aws-lc"
    [ "$kase" = full ] && libs="tls13lab tls13lab-nomemo tls13lab-ech rustls floor-tls13lab floor-aws-lc"
    for lib in $libs; do
      f="$out/$lib-$kase-$group.out"
      valgrind --tool=callgrind --callgrind-out-file="$f" --toggle-collect='*cg_measured_handshake*' \
        "$bin" "$lib" "$kase" "$group" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
      ir[$lib]=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
      printf '%-16s %-8s %-15s %12s\n' "$group" "$kase" "$lib" "${ir[$lib]}"
    done
    # The floor counts both certificate verifications the client makes without the signature
    # memo, so for full handshakes "beyond floor" is taken from tls13lab-nomemo.
    awk -v a="${ir[tls13lab]}" -v b="${ir[rustls]:-}" -v f="${ir[floor-tls13lab]}" \
        -v n="${ir[tls13lab-nomemo]:-}" -v e="${ir[tls13lab-ech]}" -v g="$group" -v k="$kase" \
      'BEGIN { if (b != "") printf "%-16s %-8s %-15s %11.2fx\n", g, k, "vs rustls", a / b;
               printf "%-16s %-8s %-15s %+11.0f%%\n", g, k, "ECH adds", (e - a) / a * 100;
               if (n != "") printf "%-16s %-8s %-15s %11.2fx\n", g, k, "nomemo/rustls", n / b;
               o = (n != "") ? n : a;
               printf "%-16s %-8s %-15s %+11.0f%%\n", g, k, "beyond floor", (o - f) / f * 100 }'
  done
done
