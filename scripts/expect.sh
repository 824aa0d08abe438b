# expect CODE DESCRIPTION ARGS...: run "$bin" ARGS, require exit CODE, and
# show its output when it differs. Sourced by the verify scripts, which set
# bin, out (a scratch file) and name (their prefix in messages).
expect() {
  local want=$1 what=$2
  shift 2
  local code=0
  "$bin" "$@" >"$out" 2>&1 || code=$?
  if [ "$code" != "$want" ]; then
    echo "$name: FAIL: $what: exit $code, want $want" >&2
    cat "$out" >&2
    exit 1
  fi
}
