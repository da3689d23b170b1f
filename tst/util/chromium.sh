#!/usr/bin/env bash
# chromium.sh install: Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver),
# the headless browser the viewer's page tests drive through selenium (capability `chromium`).
# Run it after docker-engine.sh install, not beside it: both take apt's lock.
set -euo pipefail

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

case "${1:-}" in
  install)
    if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
      as_root apt-get update -qq
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    fi
    ;;
  *)
    echo "usage: $0 install" >&2
    exit 2
    ;;
esac
