#!/usr/bin/env bash
# Fails when a shipped client library contains the embedded MQTT broker or the state store
# server. A stripped library still names the source file of every panic location, so the
# broker's (mqtt5/src/...) and the server's (server/src/...) files would show; the client's own
# (core/src/client/...) must show, or the check proves nothing.
# Usage: bash scripts/lib/check-client-only.sh LIBRARY...
set -euo pipefail
for library in "$@"; do
  text="$(strings "$library")"
  client="$(grep -c '^core/src/client/' <<<"$text" || true)"
  [ "$client" -gt 0 ] || { echo "$library: no client source locations (core/src/client/): nothing to check" >&2; exit 1; }
  found="$(grep -cE '(^|/)(mqtt5/src|server/src)/' <<<"$text" || true)"
  if [ "$found" != 0 ]; then
    echo "$library: contains the broker or the server ($found source locations of mqtt5/ or server/):" >&2
    grep -E '(^|/)(mqtt5/src|server/src)/' <<<"$text" | head -5 >&2 || true
    exit 1
  fi
  echo "client only: $library ($client client source locations, none of the broker or server)"
done
