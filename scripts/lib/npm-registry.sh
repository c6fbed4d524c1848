# Sourced by the package tests: a throwaway npm registry (verdaccio 5, from the npm registry,
# installed once into target/verdaccio) on a free loopback port, with no uplink and its storage
# in a temporary folder, so packages are installed by name exactly as from the public registry.
#   registry_start WORKDIR   sets $REGISTRY (its URL) and $NPMRC (a userconfig with a token);
#   registry_publish TGZ...  publishes tarballs to it;  registry_stop.
# shellcheck shell=bash
VERDACCIO_HOME="${VERDACCIO_HOME:-$PWD/target/verdaccio}"
registry_pid=""

registry_start() {
  local work="$1" port
  if [ ! -x "$VERDACCIO_HOME/node_modules/.bin/verdaccio" ]; then
    echo "== installing verdaccio 5 into $VERDACCIO_HOME"
    mkdir -p "$VERDACCIO_HOME"
    # verdaccio 5 asks for node-fetch by the dist-tag `cjs`, which not every registry carries:
    # the version behind that tag, pinned.
    printf '%s\n' '{ "private": true, "dependencies": { "verdaccio": "5.33.0" },' \
      '  "overrides": { "node-fetch": "2.7.0" } }' > "$VERDACCIO_HOME/package.json"
    (cd "$VERDACCIO_HOME" && timeout 600 npm install --no-package-lock --loglevel=error \
      --no-fund --no-audit >/dev/null)
  fi
  mkdir -p "$work/storage"
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  cat > "$work/config.yaml" <<YAML
storage: $work/storage
auth:
  htpasswd:
    file: $work/htpasswd
    max_users: 1
uplinks: {}
packages:
  '**':
    access: \$all
    publish: \$authenticated
log: { type: stdout, format: pretty, level: warn }
YAML
  "$VERDACCIO_HOME/node_modules/.bin/verdaccio" --config "$work/config.yaml" \
    --listen "127.0.0.1:$port" >"$work/verdaccio.log" 2>&1 &
  registry_pid=$!
  REGISTRY="http://127.0.0.1:$port/"
  local deadline=$((SECONDS + 60))
  until curl -fsS "${REGISTRY}-/ping" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ] || ! kill -0 "$registry_pid" 2>/dev/null; then
      echo "verdaccio did not start" >&2; cat "$work/verdaccio.log" >&2; return 1
    fi
    sleep 0.2
  done
  local token
  token="$(curl -fsS -X PUT -H 'content-type: application/json' \
    -d '{"name":"ci","password":"ci-password"}' "${REGISTRY}-/user/org.couchdb.user:ci" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')"
  NPMRC="$work/npmrc"
  printf 'registry=%s\n//127.0.0.1:%s/:_authToken=%s\nfund=false\naudit=false\nupdate-notifier=false\n' \
    "$REGISTRY" "$port" "$token" > "$NPMRC"
  export REGISTRY NPMRC
}

registry_publish() {
  local tarball
  for tarball in "$@"; do
    timeout 120 npm publish --userconfig "$NPMRC" --loglevel=warn "$tarball" >/dev/null
  done
}

registry_stop() {
  if [ -n "$registry_pid" ]; then kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; fi
  registry_pid=""
}
