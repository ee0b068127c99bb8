#!/usr/bin/env bash
# Bounded fuzzing (issue 8): every cargo-fuzz target in fuzz/ for FUZZ_SECONDS (default 60)
# seconds, starting from the seeds tests/fuzz_corpus.rs generates (RFC 8448 and recorded
# handshakes). A crash fails the run and prints the input; turn it into a named regression test
# in tests/fuzz_corpus.rs.
#
# cargo-fuzz needs unstable compiler flags: the nightly toolchain when it is installed, else the
# stable one with RUSTC_BOOTSTRAP=1 (only one toolchain may be on the machine). Without
# cargo-fuzz (and no way to install it) the run is skipped; the seeds and a seeded mutation run
# of every target still run in `cargo test` (tests/fuzz_corpus.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked >/dev/null 2>&1 || true
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: cargo-fuzz is not available; skipping the bounded fuzz run"
    exit 0
fi
toolchain=()
if rustup run nightly rustc --version >/dev/null 2>&1; then
    toolchain=(+nightly)
else
    export RUSTC_BOOTSTRAP=1
fi

FUZZ_CORPUS_DIR="$PWD/fuzz/corpus" cargo test --release -p tls13lab --test fuzz_corpus -- --ignored write_corpus
sanitizer=()
if ! cargo "${toolchain[@]}" fuzz build -O; then
    echo "fuzz: the AddressSanitizer build failed; fuzzing without a sanitizer"
    sanitizer=(--sanitizer none)
    if ! cargo "${toolchain[@]}" fuzz build -O "${sanitizer[@]}"; then
        # The targets themselves compile in tests/fuzz_corpus.rs, so this is the toolchain.
        echo "fuzz: cargo-fuzz cannot build with this toolchain; skipping the bounded fuzz run"
        exit 0
    fi
fi
status=0
for t in $(cargo "${toolchain[@]}" fuzz list); do
    echo "fuzz: $t for ${secs}s"
    if ! cargo "${toolchain[@]}" fuzz run -O "${sanitizer[@]}" "$t" -- \
        -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
        2>"fuzz/$t.log"; then
        status=1
        echo "fuzz: $t FAILED"
        tail -60 "fuzz/$t.log"
        for f in fuzz/artifacts/"$t"/*; do
            [ -f "$f" ] && echo "input $f: $(od -An -tx1 -v "$f" | tr -d ' \n')"
        done
    fi
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "fuzz/$t.log" | sed "s/^/fuzz: $t /" || true
done
rm -f fuzz/*.log
exit $status
