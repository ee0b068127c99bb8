#!/usr/bin/env bash
# Build the `openssl` command-line tool of OpenSSL 3.5 (post-quantum groups: X25519MLKEM768,
# SecP256r1MLKEM768, SecP384r1MLKEM1024, MLKEM512/768/1024) or OpenSSL 4.0 (also ECH and
# certificate compression with zlib, brotli and zstd) from the source that the `openssl-src` crate
# bundles. openssl-src (300.x and, renamed, 400.x) is a dev-dependency of the CLI (cli/Cargo.toml) only so that
# cargo fetches that source; this script turns it into a binary for the interop tests.
#
# Usage: scripts/build-openssl.sh [CACHE_ROOT]
#   CACHE_ROOT  default $TLS13LAB_CACHE or ~/.cache/tls13lab
# Installs CACHE_ROOT/openssl-<openssl version>/bin/openssl and prints its absolute path as the
# last line of stdout; progress goes to stderr. A cache hit prints the path at once, without
# touching cargo or the network. Concurrent runs (several test binaries) wait on one lock.
#
# Env (optional; each one is part of the cache key, so changing it rebuilds):
#   OPENSSL_SRC_VERSION  exact openssl-src crate version, default 300.5.5 (OpenSSL 3.5.5);
#                        400.0.2 is OpenSSL 4.0.3, built with zlib, brotli and zstd (RFC 8879),
#                        which needs zlib1g-dev, libbrotli-dev and libzstd-dev
#   OPENSSL_CFLAGS       default -O1 (the tests need a working peer, not a fast one)
#   JOBS                 make parallelism, default $(nproc)
set -euo pipefail
# The whole script is one function, called on the last line: bash has parsed all of it before it
# runs anything, so editing this file while a build runs cannot derail that build.
main() {
  CRATE_VERSION=${OPENSSL_SRC_VERSION:-300.5.5}
  CACHE_ROOT=${1:-${TLS13LAB_CACHE:-${HOME:?}/.cache/tls13lab}}
  CFLAGS_OPT=${OPENSSL_CFLAGS:--O1}
  JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
  PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  SCRIPT_REV=1 # bump when the build logic changes: it invalidates every cache

  log() { echo "[build-openssl] $*" >&2; }

  # The crate version 300.X.Y bundles OpenSSL 3.X.Y.
  case $CRATE_VERSION in
    300.*.*) OPENSSL_VERSION=3.${CRATE_VERSION#300.} ;;
    # 400.0.2 bundles 4.0.3: the crate's patch number lags, so the version is read from the
    # source (VERSION.dat) once it is found.
    400.*.*) OPENSSL_VERSION=4 ;;
    *) log "only openssl-src 300.x and 400.x are supported, not $CRATE_VERSION"; exit 2 ;;
  esac

  # Configure options.
  # - Forced by what the crate strips from the source tree: no-tests (test/ and fuzz/ are gone),
  #   no-docs (doc/ is gone), no-module (util/providers.num is gone, so the legacy provider module
  #   cannot be generated). no-shared: one static binary that needs nothing beside it.
  # - Pruned because the tests never use them (halves the build): legacy ciphers and digests,
  #   engines, compression, SRP, CMS/CMP/TS, binary curves, DSA... What stays: TLS 1.3, X25519,
  #   P-256/384/521, ML-KEM (every hybrid and pure group), ML-DSA, RSA, AES-GCM, ChaCha20-Poly1305,
  #   PSK/tickets/early data, -trace (ssl-trace is on by default), -keylogfile.
  OPTS="no-docs no-tests no-shared no-module no-legacy no-engine no-comp no-zlib no-aria no-bf \
  no-camellia no-cast no-des no-idea no-md4 no-mdc2 no-rc2 no-rc4 no-rmd160 no-seed no-sm2 no-sm3 \
  no-sm4 no-whirlpool no-gost no-ec2m no-siv no-ocb no-srp no-ts no-cms no-cmp no-ct no-dsa \
  no-rfc3779 no-nextprotoneg no-srtp"
  # OpenSSL 4: ENGINEs are gone (no-engine only warns), and certificate compression (RFC 8879)
  # is what 4.0 is here for, so zlib, brotli and zstd are on.
  case $CRATE_VERSION in
    400.*) OPTS=${OPTS/no-engine /}; OPTS=${OPTS/no-comp no-zlib /}
      OPTS="$OPTS enable-comp enable-zlib enable-brotli enable-zstd" ;;
  esac
  OPTS=$(echo $OPTS) # normalise whitespace

  KEY="rev=$SCRIPT_REV crate=$CRATE_VERSION opts=$OPTS cflags=$CFLAGS_OPT arch=$(uname -m) cc=$(${CC:-cc} -dumpfullversion 2>/dev/null || echo unknown)"
  PREFIX="$CACHE_ROOT/openssl-$OPENSSL_VERSION"
  # The 4.x cache directory is named by the crate version (its OpenSSL patch is only known later).
  case $CRATE_VERSION in 400.*) PREFIX="$CACHE_ROOT/openssl-src-$CRATE_VERSION" ;; esac
  BIN="$PREFIX/bin/openssl"

  cache_hit() { [ -x "$BIN" ] && [ "$(sed -n 's/^key: //p' "$PREFIX/BUILDINFO" 2>/dev/null)" = "$KEY" ]; }

  if cache_hit; then
    echo "$BIN"
    exit 0
  fi

  mkdir -p "$CACHE_ROOT"
  # One builder at a time; the others wait here and then find the cache filled.
  exec 9>"$CACHE_ROOT/.openssl-$OPENSSL_VERSION.lock"
  if command -v flock >/dev/null; then
    flock 9
  fi
  if cache_hit; then
    echo "$BIN"
    exit 0
  fi

  # --- Find the source: cargo has unpacked the dev-dependency under its registry ------------
  find_src() {
    local d
    for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/openssl-src-"$CRATE_VERSION"+*/openssl; do
      [ -x "$d/Configure" ] && [ -d "$d/apps" ] && { echo "$d"; return 0; }
    done
    return 1
}
if ! SRC=$(find_src); then
  log "openssl-src $CRATE_VERSION not unpacked yet: cargo fetch"
  (cd "$PROJECT" && cargo fetch -q >&2)
  SRC=$(find_src) || { log "no OpenSSL source for openssl-src $CRATE_VERSION (is it still a dev-dependency?)"; exit 1; }
fi
FOUND=$(. "$SRC/VERSION.dat" && echo "$MAJOR.$MINOR.$PATCH")
case $OPENSSL_VERSION in 4) [ "${FOUND%%.*}" = 4 ] && OPENSSL_VERSION=$FOUND ;; esac
[ "$FOUND" = "$OPENSSL_VERSION" ] || { log "$SRC is OpenSSL $FOUND, expected $OPENSSL_VERSION"; exit 1; }
log "building OpenSSL $FOUND from $SRC (one time; about 2 CPU-minutes)"

# --- Configure and build out of tree: the registry copy stays pristine --------------------
WORK=$(mktemp -d "$CACHE_ROOT/.build-openssl-$OPENSSL_VERSION.XXXXXX")
STAGE="$PREFIX.partial"
trap 'rm -rf "$WORK" "$STAGE"' EXIT
cd "$WORK"
t0=$(date +%s)
log "Configure $OPTS (CFLAGS=$CFLAGS_OPT)"
CFLAGS="$CFLAGS_OPT" perl "$SRC/Configure" --prefix="$PREFIX" --openssldir="$PREFIX/ssl" \
  --libdir=lib $OPTS >configure.log 2>&1 || { cat configure.log >&2; exit 1; }
# build_programs, not apps/openssl: on a fresh tree only the former generates the headers first.
log "make -j$JOBS build_programs"
make -j"$JOBS" build_programs >make.log 2>&1 || { tail -50 make.log >&2; exit 1; }
t1=$(date +%s)

# --- Install the binary and a minimal openssl.cnf (the crate ships none), atomically ------
rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/ssl"
install -m755 apps/openssl "$STAGE/bin/openssl"
strip "$STAGE/bin/openssl" 2>/dev/null || true
printf '[req]\ndistinguished_name = req_dn\n[req_dn]\n' >"$STAGE/ssl/openssl.cnf"
{
  echo "key: $KEY"
  echo "build_seconds: $((t1 - t0))"
  "$STAGE/bin/openssl" version -a
} >"$STAGE/BUILDINFO"
rm -rf "$PREFIX"
mv "$STAGE" "$PREFIX"
log "built in $((t1 - t0)) s: $("$BIN" version)"
echo "$BIN"
}

main "$@"
