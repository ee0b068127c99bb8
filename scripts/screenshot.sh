#!/usr/bin/env bash
# Screenshot of an illustrated page (issue 27) by headless Chromium (Debian's `chromium`): the top
# of the page in a fixed 1280×1400 viewport, light scheme, as docs/illustrated/rfc8448-3.png shows it.
#
# Usage: scripts/screenshot.sh [PAGE] [PNG]
#   PAGE  default docs/illustrated/rfc8448-3.html (written by cli/tests/instruments.rs; regenerate
#         it first with TLS13LAB_WRITE_DOCS=1 cargo test --release --test instruments illustrated)
#   PNG   default PAGE with .png for .html
# The page is opened from file:// with name resolution off; the profile lives in a temporary
# directory removed on exit.
set -euo pipefail
main() {
  PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  PAGE=$(realpath "${1:-$PROJECT/docs/illustrated/rfc8448-3.html}")
  PNG=${2:-${PAGE%.html}.png}
  command -v chromium >/dev/null || { echo "chromium is not installed (apt-get install -y chromium)" >&2; exit 1; }
  PROFILE=$(mktemp -d)
  trap 'rm -rf "$PROFILE"' EXIT
  # --no-sandbox: root in a container has no user namespaces for Chromium's sandbox.
  # --force-color-profile=srgb and a 1× device scale keep the pixels the same across displays;
  # preferredColorScheme=1 is the light scheme whatever the desktop prefers.
  timeout 90 chromium --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-extensions \
    --host-resolver-rules='MAP * ~NOTFOUND' \
    --user-data-dir="$PROFILE" \
    --window-size=1280,1400 --force-device-scale-factor=1 --hide-scrollbars \
    --force-color-profile=srgb --blink-settings=preferredColorScheme=1 \
    --screenshot="$PNG" "file://$PAGE" >/dev/null 2>&1
  test -s "$PNG"
  echo "$PNG ($(stat -c %s "$PNG") bytes)"
}
main "$@"
