#!/usr/bin/env bash
# Instructions per handshake (client + server in one thread) under callgrind: one full and one
# resumed (psk_dhe_ke) handshake, tls13lab against rustls, for each group tls13lab implements.
# The count covers only the handshake (examples/one_handshake.rs, --toggle-collect), so it does
# not depend on the machine's load. Pass cargo flags through, e.g. `--features ring-aead`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --example one_handshake "$@" >&2
bin="${CARGO_TARGET_DIR:-target}/release/examples/one_handshake"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-16s %-8s %-9s %14s\n' group case library instructions
for group in $("$bin" --groups); do
  for kase in full resumed; do
    declare -A ir=()
    for lib in tls13lab rustls; do
      f="$out/$lib-$kase-$group.out"
      valgrind --tool=callgrind --callgrind-out-file="$f" --toggle-collect='*cg_measured_handshake*' \
        "$bin" "$lib" "$kase" "$group" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
      ir[$lib]=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
      printf '%-16s %-8s %-9s %14s\n' "$group" "$kase" "$lib" "${ir[$lib]}"
    done
    awk -v a="${ir[tls13lab]}" -v b="${ir[rustls]}" -v g="$group" -v k="$kase" \
      'BEGIN { printf "%-16s %-8s %-9s %14.2fx\n", g, k, "ratio", a / b }'
  done
done
