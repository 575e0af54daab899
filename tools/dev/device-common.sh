# The prologue of the device scripts (tools/dev/*.sh, scripts/sanitize-gpu.sh), sourced once the
# script has set its BUILD_DIR default and its default steps:
#   BUILD_DIR=${BUILD_DIR:-build-gpu}; default_steps=(tests bench); source "$(dirname "$0")/device-common.sh" "$@"
# (scripts/sanitize-gpu.sh: "$(dirname "$0")/../tools/dev/device-common.sh").
# It moves to the repository root (two levels above this file, whichever script sources it) and defines
#   OUT            logs and results (default ./out, created)
#   steps, has S   the steps asked for (the arguments, else default_steps); has: is step S among them
#   status         the exit status to end with: 0, a failed step sets 1 (the others still run)
#   note TEXT      echo TEXT and append it to $OUT/summary.txt (emptied here)
#   machine_header FIELDS [COMMAND...]   date, host, nvidia-smi's FIELDS (and COMMAND's last line) noted
#   use_build_libraries                  the build tree's lib/ and runtime-libs/ first on LD_LIBRARY_PATH
#   note_missing_libraries FILES...      note what ldd cannot find for FILES
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=("${default_steps[@]}")
has() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
status=0
summary="$OUT/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

machine_header() {
  local fields=$1
  shift
  {
    echo "== $(date -u +%FT%TZ) $(hostname)"
    nvidia-smi --query-gpu="$fields" --format=csv 2>&1
    [ $# -gt 0 ] && "$@" 2>&1 | tail -1
  } | tee -a "$summary"
}

# The build tree's RPATH is absolute to where it was built; the checkout may sit elsewhere here.
# runtime-libs: shared libraries of this machine missing there (Debian libbenchmark.so.1debian).
use_build_libraries() {
  export LD_LIBRARY_PATH="$PWD/$BUILD_DIR/lib:$PWD/$BUILD_DIR/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

note_missing_libraries() {
  local missing
  missing=$(ldd "$@" 2>&1 | grep "not found" | sort -u)
  [ -n "$missing" ] && note "missing libraries: $missing"
}
