#!/usr/bin/env bash
# Installs what building and testing alcc needs on a fresh Debian 12 machine (run as root).
# Idempotent: it installs only what is missing.
# `scripts/setup.sh refs` also installs what building the authors' Verus, Copa and Sprout needs
# (for scripts/refs.sh; the list is ../shared/refs/BUILD.md's), without recommended packages.
set -euo pipefail
cd "$(dirname "$0")/.."

need_refs=()
need_fuzz=0
if [ "${1:-}" = fuzz ]; then
  # `scripts/setup.sh fuzz`: cargo-fuzz for fuzz/ (scripts/fuzz.sh), on the stable toolchain.
  need_fuzz=1
elif [ "${1:-}" = refs ]; then
  for p in build-essential autoconf automake libtool pkg-config makepp libalglib-dev libasio-dev \
    libboost-system-dev libboost-dev libprotobuf-dev protobuf-compiler libjemalloc-dev libssl-dev \
    libncurses-dev zlib1g-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need_refs+=("$p")
  done
elif [ $# -gt 0 ]; then
  echo "setup: unknown argument $1 (the only ones are \`refs\` and \`fuzz\`)" >&2
  exit 2
fi

need_apt=()
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# wget: the preload shim's client-side test (crates/alcc-preload/tests/receiver.rs).
command -v wget >/dev/null 2>&1 || need_apt+=(wget)
command -v ping >/dev/null 2>&1 || need_apt+=(iputils-ping)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v jq >/dev/null 2>&1 || need_apt+=(jq)
# Tests: setpriv drops privileges (the unprivileged-error tests), ss shows a socket's congestion
# control (iproute2 above).
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
# The BPF underlay (crates/alcc/bpf): clang compiles it, libbpf-rs builds its vendored libbpf
# against libelf and zlib; bpftool is for looking at what is loaded.
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
[ -f /usr/include/bpf/bpf_helpers.h ] || need_apt+=(libbpf-dev)
[ -f /usr/include/libelf.h ] || need_apt+=(libelf-dev)
[ -f /usr/include/zlib.h ] || need_apt+=(zlib1g-dev)
command -v bpftool >/dev/null 2>&1 || [ -x /usr/sbin/bpftool ] || need_apt+=(bpftool)
# The report (python/): a venv (Debian's pip refuses system-wide installs) and headless Chromium
# to check that report.html renders.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv python3-pip)
# The `alcc` command embeds CPython for `--cc py:module:Class` (alcc-cli's `python` feature,
# crates/alcc-python-cc): it links libpython3.11.so (python3-dev brings the headers and the
# link-time symlink, and libpython3.11, which the binary loads at run time from the rpath that
# crates/alcc-cli/build.rs sets to the LIBDIR of the python3 it was built against).
[ -f "$(python3 -c 'import sysconfig as s; print(s.get_config_var("LIBDIR"), s.get_config_var("LDLIBRARY"), sep="/")')" ] ||
  need_apt+=(python3-dev)
# The Java client library (java/): a JDK (it compiles with --release 11) and Maven, which fetches
# JUnit 5 and the Android API-21 signatures from Maven Central on first use.
command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
# An unmodified event-loop server under libalcc_preload.so (crates/alcc-preload/tests): nginx.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt+=(nginx-light)
# The FTP server of the paper's experiments (vsftpd) and wget as a client, under the shim too.
command -v vsftpd >/dev/null 2>&1 || [ -x /usr/sbin/vsftpd ] || need_apt+=(vsftpd)
command -v wget >/dev/null 2>&1 || need_apt+=(wget)
# The video case (an HLS stream and a progressive MP4 from nginx, read by ffmpeg/ffprobe, media
# made with ffmpeg's lavfi test sources) and the overhead benchmark's load generator (wrk).
command -v ffmpeg >/dev/null 2>&1 || need_apt+=(ffmpeg)
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
# The constant-rate UDP cross traffic of the harness's workloads (docs/experiment-format.md).
command -v iperf3 >/dev/null 2>&1 || need_apt+=(iperf3)
if [ ${#need_apt[@]} -gt 0 ] || [ ${#need_refs[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing ${need_apt[*]} ${need_refs[*]}; run as root or install them" >&2
    exit 1
  fi
  apt-get update -qq
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  # RUNLEVEL=1: no package starts a service (nginx's would listen on port 80).
  RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if [ ${#need_refs[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_refs[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if [ "$need_fuzz" -eq 1 ] && ! command -v cargo-fuzz >/dev/null 2>&1; then
  # libFuzzer's C++ sources are compiled by libfuzzer-sys with the C++ compiler of build-essential.
  cargo install -q --locked cargo-fuzz --version 0.13.2
fi

# The report package in a project-local venv; reinstalled when python/pyproject.toml changes.
# Its dev extra brings pytest, ruff and maturin (which `make python-ext` builds the alcc package with).
if [ -f python/pyproject.toml ]; then
  stamp=.venv/.alcc-installed
  want="$(sha256sum python/pyproject.toml | cut -d' ' -f1)"
  if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    python3 -m venv .venv
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -e 'python[dev]'
    echo "$want" >"$stamp"
  fi
fi
