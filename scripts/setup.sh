#!/usr/bin/env bash
# Installs what building and testing alcc needs on a fresh Debian 12 machine (run as root).
# Idempotent: it installs only what is missing.
set -euo pipefail

need_apt=()
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v ping >/dev/null 2>&1 || need_apt+=(iputils-ping)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing ${need_apt[*]}; run as root or install them" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
