# Sourced by test scripts: the shell side of alcc's skip policy (crates/alcc-testenv).
# `skip NAME REASON` ends the script: in CI (CI set to anything but empty, 0 or false) as a
# failure (exit 1) naming the reason; otherwise as a visible skip (a SKIPPED line on stderr and
# a line in $ALCC_SKIP_LOG when it is set) with status 0.
skip() {
  local name="$1" reason="$2"
  case "${CI:-}" in
    "" | 0 | false | FALSE | False) ;;
    *)
      echo "$name cannot run here: $reason (a skip is a failure when CI is set)" >&2
      exit 1
      ;;
  esac
  echo "SKIPPED $name: $reason" >&2
  if [ -n "${ALCC_SKIP_LOG:-}" ]; then printf '%s\t%s\n' "$name" "$reason" >>"$ALCC_SKIP_LOG"; fi
  exit 0
}
