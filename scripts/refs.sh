#!/usr/bin/env bash
# Builds the authors' reference programs (Verus, Copa in genericCC, Sprout) from the source
# tarballs in $ALCC_REFS_SRC (default ../shared/refs beside the main checkout, which holds
# BUILD.md) into $ALCC_REFS_DIR (default target/refs: untracked, removed by `make clean`).
# Their code never enters this repository: this script unpacks the tarballs, applies the Debian
# 12 build fix for Verus that ships beside them (verus-debian12.patch), and builds each with its
# own build system.
#
# Result, in $ALCC_REFS_DIR/bin (what `alcc experiment run` looks for in ref-X schemes):
#   verus_server          Verus sender, R = 6 (the authors' compile-time default)
#   verus_server_rN       Verus sender built with -DVERUS_R=N.0, for every N in $VERUS_RS
#   verus_client          Verus receiver
#   genericcc_sender      genericCC's sender (Copa is its cctype=markovian)
#   genericcc_receiver    genericCC's receiver (echoes every packet)
#   sproutbt2             Sprout's bulk-transfer example (both ends)
#   sprout.model          the model sproutbt2 reads from SPROUT_MODEL_IN
# and $ALCC_REFS_DIR/build.txt: which tarballs (sha256) and compiler built them.
#
# Usage: scripts/refs.sh [verus|copa|sprout ...]   (default: all three)
# Environment: ALCC_REFS_SRC, ALCC_REFS_DIR, VERUS_RS (default "2 4"; R = 6 is always built).
# The build dependencies come from `scripts/setup.sh refs` (`make refs` runs both). A program
# whose tarball, patch and R list did not change since its last build is not rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."

# The default lies beside the main checkout, also when this is a git worktree elsewhere (the
# main checkout holds the common .git); outside git, beside this folder.
common="$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)"
case "$common" in
  */.git) checkout="${common%/.git}" ;;
  *) checkout="$PWD" ;;
esac
src="${ALCC_REFS_SRC:-$checkout/../shared/refs}"
dir="${ALCC_REFS_DIR:-target/refs}"
verus_rs="${VERUS_RS:-2 4}"
programs=("$@")
[ ${#programs[@]} -eq 0 ] && programs=(verus copa sprout)

for p in "${programs[@]}"; do
  case "$p" in
    verus|copa|sprout) ;;
    *) echo "refs: unknown program \`$p\` (verus, copa or sprout)" >&2; exit 2 ;;
  esac
done
for r in $verus_rs; do
  [[ "$r" =~ ^[1-9][0-9]*$ ]] || { echo "refs: VERUS_RS: \`$r\` is not a positive integer" >&2; exit 2; }
done
if [ ! -d "$src" ]; then
  echo "refs: $src does not exist: set ALCC_REFS_SRC to the folder with the authors' tarballs" >&2
  exit 1
fi
src="$(cd "$src" && pwd)"
mkdir -p "$dir/bin" "$dir/src"
dir="$(cd "$dir" && pwd)"
bin="$dir/bin"

# tarball PROGRAM: the source tarball of PROGRAM (exactly one must match).
tarball() {
  local pattern
  case "$1" in
    verus) pattern="verus-*.tar.gz" ;;
    copa) pattern="genericCC-*.tar.gz" ;;
    sprout) pattern="sprout-*.tar.gz" ;;
  esac
  local found=("$src"/$pattern)
  if [ ${#found[@]} -ne 1 ] || [ ! -f "${found[0]}" ]; then
    echo "refs: expected one $pattern in $src, found: ${found[*]}" >&2
    exit 1
  fi
  echo "${found[0]}"
}

# unpack TARBALL NAME: a fresh copy of the tarball's top folder NAME in $dir/src; prints its path.
unpack() {
  rm -rf "${dir:?}/src/$2"
  tar -xzf "$1" -C "$dir/src"
  [ -d "$dir/src/$2" ] || { echo "refs: $1 has no top folder $2/" >&2; exit 1; }
  echo "$dir/src/$2"
}

# Each build runs with nice (the machine is shared) and logs to $dir/PROGRAM.log.
jobs="$(nproc 2>/dev/null || echo 1)"
run_logged() {
  local log="$1"
  shift
  if ! nice -n 19 "$@" >>"$log" 2>&1; then
    echo "refs: \`$*\` failed; the last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
}

build_verus() {
  local tb patch w log
  tb="$(tarball verus)"
  patch="$src/verus-debian12.patch"
  [ -f "$patch" ] || { echo "refs: $patch is missing (Verus needs it on Debian 12)" >&2; exit 1; }
  log="$dir/verus.log"
  : >"$log"
  w="$(unpack "$tb" verus)"
  run_logged "$log" patch -d "$w" -p1 -i "$patch"
  (cd "$w" && run_logged "$log" ./bootstrap.sh && run_logged "$log" ./configure \
    && run_logged "$log" make -j"$jobs")
  install -m 755 "$w/src/verus_server" "$w/src/verus_client" "$bin/"
  # Other R values: the same compilation of the sender with VERUS_R defined (BUILD.md).
  for r in $verus_rs; do
    [ "$r" = 6 ] && continue
    (cd "$w/src" && run_logged "$log" g++ -DHAVE_CONFIG_H "-DVERUS_R=$r.0" -I. -I.. -std=c++11 -O2 \
      -o "$bin/verus_server_r$r" verus_server.cpp -lpthread -lalglib -lboost_system)
  done
}

build_copa() {
  local w log
  log="$dir/copa.log"
  : >"$log"
  w="$(unpack "$(tarball copa)" genericCC)"
  (cd "$w" && run_logged "$log" makepp --no-builtin-rules -j"$jobs" sender receiver)
  install -m 755 "$w/sender" "$bin/genericcc_sender"
  install -m 755 "$w/receiver" "$bin/genericcc_receiver"
}

build_sprout() {
  local w log
  log="$dir/sprout.log"
  : >"$log"
  w="$(unpack "$(tarball sprout)" sprout)"
  (cd "$w" && run_logged "$log" ./autogen.sh && run_logged "$log" ./configure --enable-examples \
    && run_logged "$log" make -j"$jobs")
  install -m 755 "$w/src/examples/sproutbt2" "$bin/"
  install -m 644 "$w/src/examples/sprout.model" "$bin/"
}

# stamp PROGRAM: what a build of PROGRAM depends on.
stamp() {
  {
    sha256sum "$(tarball "$1")" | cut -d' ' -f1
    [ "$1" = verus ] && sha256sum "$src/verus-debian12.patch" | cut -d' ' -f1 && echo "R: $verus_rs"
    sha256sum "$0" | cut -d' ' -f1
  } | tr '\n' ' '
}

# outputs PROGRAM: the files a finished build of PROGRAM leaves in bin/.
outputs() {
  case "$1" in
    verus)
      echo verus_server verus_client
      for r in $verus_rs; do [ "$r" = 6 ] || echo "verus_server_r$r"; done
      ;;
    copa) echo genericcc_sender genericcc_receiver ;;
    sprout) echo sproutbt2 sprout.model ;;
  esac
}

for p in "${programs[@]}"; do
  want="$(stamp "$p")"
  done_already=1
  [ "$(cat "$dir/$p.stamp" 2>/dev/null)" = "$want" ] || done_already=0
  for f in $(outputs "$p"); do [ -e "$bin/$f" ] || done_already=0; done
  if [ "$done_already" -eq 1 ]; then
    echo "refs: $p is up to date in $bin"
    continue
  fi
  rm -f "$dir/$p.stamp"
  start=$SECONDS
  echo "refs: building $p from $(basename "$(tarball "$p")") (log: $dir/$p.log)"
  "build_$p"
  echo "$want" >"$dir/$p.stamp"
  echo "refs: $p built in $((SECONDS - start)) s"
done

{
  echo "# The authors' programs, built by scripts/refs.sh from $src"
  for p in verus copa sprout; do
    [ -f "$dir/$p.stamp" ] && echo "$p: $(basename "$(tarball "$p")") sha256 $(cut -d' ' -f1 "$dir/$p.stamp")"
  done
  echo "compiler: $(g++ --version | head -n1)"
} >"$dir/build.txt"
