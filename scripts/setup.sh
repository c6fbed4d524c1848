#!/usr/bin/env bash
# Installs what the tests need, idempotently: Mosquitto and the aarch64 cross tools (apt),
# cargo-fuzz and cargo-nextest (crates.io).
# Fast when everything is already there (no apt-get update, no cargo install).
set -euo pipefail

CARGO_FUZZ_VERSION="${CARGO_FUZZ_VERSION:-0.13.2}"   # pinned; bump deliberately
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

log() { printf '[setup] %s\n' "$*" >&2; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# --- mosquitto (apt) --------------------------------------------------------
if command -v mosquitto >/dev/null 2>&1 && command -v mosquitto_pub >/dev/null 2>&1; then
  log "mosquitto already installed"
else
  log "installing mosquitto + mosquitto-clients"
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d on these machines already blocks service start (and there is no systemd);
  # make sure of it anyway so apt never starts a broker on :1883.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    CREATED_POLICY=1
  fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends mosquitto mosquitto-clients >/dev/null
  if [ "${CREATED_POLICY:-0}" = 1 ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi
fi
# If some system broker got started anyway, it is harmless as long as tests use their own
# port (never 1883); warn so it is visible.
if pgrep -x mosquitto >/dev/null 2>&1; then
  log "WARNING: a mosquitto process is already running (tests must not use port 1883)"
fi

# --- cargo-fuzz (crates.io) -------------------------------------------------
if cargo fuzz --version 2>/dev/null | grep -q "cargo-fuzz ${CARGO_FUZZ_VERSION}"; then
  log "cargo-fuzz ${CARGO_FUZZ_VERSION} already installed"
else
  log "installing cargo-fuzz ${CARGO_FUZZ_VERSION} (~85 s on 2 cores)"
  cargo install cargo-fuzz --version "${CARGO_FUZZ_VERSION}" --locked
fi

# --- cargo-nextest (crates.io; the machine image usually has it) ------------
if cargo nextest --version >/dev/null 2>&1; then
  log "cargo-nextest already installed"
else
  log "installing cargo-nextest"
  cargo install cargo-nextest --locked
fi

# --- the aarch64 cross tools (apt) -------------------------------------------
# qemu-user, the aarch64 cross gcc and libc, the LLVM library of Debian's cross rustc: what
# scripts/test-arm64.sh builds and runs with (unless STATESTORE_TEST_ARM64=0). Installed here,
# before the groups run side by side, so that no two apt-gets meet.
# shellcheck source=scripts/lib/arm64.sh
if [ "${STATESTORE_TEST_ARM64:-1}" = 1 ]; then
  source "$(dirname "$0")/lib/arm64.sh"
  arm64_host_tools
fi

# --- verify -----------------------------------------------------------------
# note: `mosquitto -h` exits 3 (usage), so capture instead of piping under pipefail
MOSQ_VER="$(mosquitto -h 2>&1 || true)"; MOSQ_VER="${MOSQ_VER%%$'\n'*}"
case "$MOSQ_VER" in "mosquitto version "*) ;; *) log "mosquitto not working: $MOSQ_VER"; exit 1;; esac
command -v mosquitto_pub >/dev/null && command -v mosquitto_sub >/dev/null \
  || { log "mosquitto clients missing"; exit 1; }
cargo fuzz --version >/dev/null || { log "cargo fuzz not working"; exit 1; }
log "ok: ${MOSQ_VER}; $(cargo fuzz --version); $(rustc --version)"
