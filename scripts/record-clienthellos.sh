#!/usr/bin/env bash
# Record the ClientHellos of the real programs behind the `tls13lab hello` presets into
# tests/vectors/clienthello/ (the records as they arrived at a listener on 127.0.0.1 that never
# answers: scripts/capture-clienthello.py). Each file is named after the program's version; the
# README there lists the commands. After a program update, re-run this, point the preset test
# (cli/tests/instruments.rs, every_recorded_preset_reproduces_its_capture) at the new file and
# update the preset (lab/src/hello/presets.rs) until it passes.
#
# Usage: scripts/record-clienthellos.sh [PROGRAM...]
#   PROGRAM  chromium firefox curl openssl-3.0 openssl-3.5 openssl-4.0 rustls go [default: all]
# Needs chromium, firefox-esr, curl, openssl, golang-go and python3; the OpenSSL 3.5/4.0 builds come from
# scripts/build-openssl.sh (cached), rustls' from the test tests/interop_rustls.rs.
set -euo pipefail
main() {
  PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  OUT=$PROJECT/tests/vectors/clienthello
  CAPTURE=$PROJECT/scripts/capture-clienthello.py
  WORK=$(mktemp -d)
  PIDS=()
  # Every program runs in its own process group (setsid), killed by that id on exit.
  trap 'for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
  log() { echo "[record] $*" >&2; }

  # capture FILE CMD...: start the listener, run CMD with PORT set, wait for the hello.
  capture() {
    local file=$1; shift
    rm -f "$WORK/port"
    python3 "$CAPTURE" "$WORK/hello.bin" 60 > "$WORK/port" &
    local listener=$!
    PIDS+=("$listener")
    # The listener prints its port once bound; if it dies first, say so instead of waiting.
    while [ ! -s "$WORK/port" ]; do
      kill -0 "$listener" 2>/dev/null || { log "$file: the listener exited before binding"; exit 1; }
      sleep 0.05
    done
    export PORT; PORT=$(cat "$WORK/port")
    setsid bash -c "$*" > "$WORK/client.out" 2>&1 < /dev/null &
    local client=$!
    PIDS+=("$client")
    wait "$listener"
    sleep 0.5
    kill -KILL -- "-$client" 2>/dev/null || true
    wait "$client" 2>/dev/null || true
    mv "$WORK/hello.bin" "$OUT/$file"
    log "$file: $(stat -c %s "$OUT/$file") bytes"
  }

  record_chromium() {
    local v; v=$(chromium --version 2>/dev/null | awk '{print $2}')
    # example.com resolves to 127.0.0.1 inside this browser only: the hello carries that SNI.
    capture "chromium-$v.bin" "HOME=$WORK chromium --headless --no-sandbox --disable-gpu --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync --disable-extensions \
      '--host-resolver-rules=MAP example.com 127.0.0.1' --user-data-dir=$WORK/chromium \
      --dump-dom https://example.com:\$PORT/"
  }

  record_firefox() {
    local v; v=$(firefox-esr --version | awk '{print $3}')
    mkdir -p "$WORK/firefox"
    # network.dns.localDomains: example.com is this machine (IPv4 only, where the listener is).
    cat > "$WORK/firefox/user.js" <<'PREFS'
user_pref("network.dns.localDomains", "example.com");
user_pref("network.dns.disableIPv6", true);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("app.update.enabled", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
PREFS
    capture "firefox-esr-${v%esr}.bin" "HOME=$WORK MOZ_CRASHREPORTER_DISABLE=1 firefox-esr --headless \
      --no-remote --profile $WORK/firefox --screenshot $WORK/shot.png https://example.com:\$PORT/"
  }

  record_curl() {
    local v; v=$(curl --version | awk 'NR==1{print $2}')
    capture "curl-$v.bin" "curl -sS --resolve example.com:\$PORT:127.0.0.1 https://example.com:\$PORT/"
  }

  # record_openssl BINARY NAME: s_client with stdin kept open, as the preset test does.
  record_openssl() {
    local bin=$1 v suffix=""
    v=$("$bin" version | awk '{print $2}')
    if "$bin" list -disabled 2>/dev/null | grep -qx DSA; then suffix=-no-dsa; fi
    capture "openssl-$v$suffix.bin" "sleep 30 | $bin s_client -connect 127.0.0.1:\$PORT -servername example.com"
  }

  built_openssl() {
    OPENSSL_SRC_VERSION=$1 bash "$PROJECT/scripts/build-openssl.sh" | tail -1
  }

  record_rustls() {
    local v
    v=$(awk '/^name = "rustls"$/{getline; gsub(/"/, "", $3); print $3; exit}' "$PROJECT/Cargo.lock")
    (cd "$PROJECT" && TLS13LAB_RECORD_RUSTLS="$OUT/rustls-$v.bin" cargo test -q --release \
      --test interop_rustls rustls_default_client_hello_is_the_recorded_one >&2)
    log "rustls-$v.bin: $(stat -c %s "$OUT/rustls-$v.bin") bytes"
  }

  record_go() {
    local v; v=$(go version | awk '{print $3}'); v=${v#go}
    # scripts/go-hello/main.go: tls.Dial with the default configuration and example.com.
    capture "go-$v.bin" "HOME=$WORK GOCACHE=$WORK/gocache GOPATH=$WORK/gopath GO111MODULE=off \
      go run $PROJECT/scripts/go-hello/main.go 127.0.0.1:\$PORT"
  }

  local all=(chromium firefox curl openssl-3.0 openssl-3.5 openssl-4.0 rustls go)
  for p in "${@:-${all[@]}}"; do
    case $p in
      chromium) record_chromium ;;
      firefox) record_firefox ;;
      curl) record_curl ;;
      openssl-3.0) record_openssl openssl ;;
      openssl-3.5) record_openssl "$(built_openssl 300.5.5)" ;;
      openssl-4.0) record_openssl "$(built_openssl 400.0.2)" ;;
      rustls) record_rustls ;;
      go) record_go ;;
      *) log "unknown program $p (known: ${all[*]})"; exit 2 ;;
    esac
  done
}
main "$@"
