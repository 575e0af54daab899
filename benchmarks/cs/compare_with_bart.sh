#!/bin/bash
# Head-to-head of `mri recon` and `bart pics` on the CS-2D data of make_cs_data.sh (issue 41):
# PSNR, wall seconds and peak memory of the whole process, the two tools alternated run by run
# so that both see the same machine load.
# usage: compare_with_bart.sh DATADIR OUT.csv
# Writes CSV: tool,data,maps,term,lambda,iterations,psnr_db,seconds,peak_mb
#   tool     mri | bart
#   data     rad (golden-angle radial, 48 spokes) | spi (4 of 16 spiral interleaves); 4 coils, 256^2
#   maps     sens (bart phantom -S 4 maps, not normalised) | sens_unit (the same over max rss)
#   term     W   mri: -R W:3:0:L            bart: -R W:3:0:L -e   (l1-wavelet; FISTA in both)
#            T   mri: -R T:3:0:L            bart: -R T:3:0:L -e   (isotropic TV; ADMM in both)
#            W+T mri: -R W:3:0:Lw -R T:3:0:Lt  bart: the same and -e (ADMM in both); lambda "Lw/Lt"
#   lambda   BART's units for both tools (mri's CLI converts with BART inputs)
#   psnr_db  psnr.py (magnitude, LS-optimal real scale onto |truth|, whole image, peak max|truth|)
#   seconds  wall clock of the whole process (/usr/bin/time -v), peak_mb its maximum resident set
# Phase 1 (quality): every data x maps x term x lambda once per tool (bart first, then mri).
# Phase 2 (cost): TIMING rows ("data:maps:term:lambda") REPEATS times, bart and mri alternated.
# Environment (defaults in brackets):
#   MRI [build-cs/cli/mri next to this repository]  ITERS [100]  OMP_NUM_THREADS [2]
#   DATAS ["rad spi"]  MAPS ["sens sens_unit"]  TERMS ["W T"]  LAMBDAS ["3e-4 1e-3 3e-3"]
#   COMBOS ["1e-3/1e-3 3e-4/1e-3 1e-3/3e-4"] (W+T pairs, run on every data x maps; "" for none)
#   TIMING ["rad:sens:T:1e-3 rad:sens:W:1e-3"]  REPEATS [5]
#   OMP_WAIT_POLICY passes through to both tools: set passive on a shared machine (with the
#   active default, 2 threads on 2 busy cores spin in libgomp barriers, mri far more than bart)
#   MRI_ARGS [""] extra mri recon options (e.g. --rho 0.03 --wavelet db4)
#   MRI_LAMBDA_FACTOR [1] mri's lambda = BART's times this (a workaround while the CLI's
#                     conversion is off; the factor used must be stated with the results)
set -euo pipefail

if [ $# -ne 2 ]; then echo "usage: $0 DATADIR OUT.csv" >&2; exit 2; fi
DATA=$(cd "$1" && pwd)
CSV=$2
HERE=$(cd "$(dirname "$0")" && pwd)
MRI=${MRI:-$HERE/../../build-cs/cli/mri}
ITERS=${ITERS:-100}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
DATAS=${DATAS:-"rad spi"}
MAPS=${MAPS:-"sens sens_unit"}
TERMS=${TERMS:-"W T"}
LAMBDAS=${LAMBDAS:-"3e-4 1e-3 3e-3"}
COMBOS=${COMBOS-"1e-3/1e-3 3e-4/1e-3 1e-3/3e-4"}
TIMING=${TIMING-"rad:sens:T:1e-3 rad:sens:W:1e-3"}
REPEATS=${REPEATS:-5}
MRI_ARGS=${MRI_ARGS:-}
MRI_LAMBDA_FACTOR=${MRI_LAMBDA_FACTOR:-1}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

[ -x "$MRI" ] || { echo "$MRI: not an executable (set MRI)" >&2; exit 2; }
command -v bart > /dev/null || { echo "bart: not found" >&2; exit 2; }
echo "tool,data,maps,term,lambda,iterations,psnr_db,seconds,peak_mb" > "$CSV"

# -R options of a term for one tool: regularisation TERM LAMBDA FACTOR
regularisation() {
  local term=$1 lambda=$2 factor=$3
  scaled() { python3 -c "print('%.6g' % ($1 * $factor))"; }
  case $term in
    W) echo "-R W:3:0:$(scaled "$lambda")" ;;
    T) echo "-R T:3:0:$(scaled "$lambda")" ;;
    W+T) echo "-R W:3:0:$(scaled "${lambda%/*}") -R T:3:0:$(scaled "${lambda#*/}")" ;;
    *) echo "unknown term $term" >&2; exit 2 ;;
  esac
}

# one run, one CSV row: run TOOL DATA MAPS TERM LAMBDA
run() {
  local tool=$1 data=$2 maps=$3 term=$4 lambda=$5 cmd
  local traj=$DATA/traj_$data ksp=$DATA/ksp_$data sens=$DATA/$maps out=$WORK/x
  rm -f "$out.cfl" "$out.hdr"
  if [ "$tool" = bart ]; then
    # shellcheck disable=SC2046
    cmd=(bart pics $(regularisation "$term" "$lambda" 1) -e -i "$ITERS" -t "$traj" "$ksp" "$sens" "$out")
  else
    # shellcheck disable=SC2046,SC2086
    cmd=("$MRI" recon --traj "$traj" --kspace "$ksp" --sens "$sens" --matrix 256,256
         $(regularisation "$term" "$lambda" "$MRI_LAMBDA_FACTOR") $MRI_ARGS --iterations "$ITERS" --out "$out" -q)
  fi
  if ! /usr/bin/time -v -o "$WORK/time.txt" "${cmd[@]}" > "$WORK/log.txt" 2>&1; then
    echo "failed: ${cmd[*]}" >&2; cat "$WORK/log.txt" >&2; exit 1
  fi
  local psnr secs mb
  psnr=$(python3 "$HERE/psnr.py" "$DATA/truth" "$out")
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0;
          for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$WORK/time.txt")
  mb=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$WORK/time.txt")
  echo "$tool,$data,$maps,$term,$lambda,$ITERS,$psnr,$secs,$mb" | tee -a "$CSV"
}

both() { run bart "$@"; run mri "$@"; }

for data in $DATAS; do
  for maps in $MAPS; do
    for term in $TERMS; do
      for lambda in $LAMBDAS; do both "$data" "$maps" "$term" "$lambda"; done
    done
    for pair in $COMBOS; do both "$data" "$maps" W+T "$pair"; done
  done
done

for spec in $TIMING; do
  IFS=: read -r data maps term lambda <<< "$spec"
  for ((r = 0; r < REPEATS; ++r)); do both "$data" "$maps" "$term" "$lambda"; done
done
echo "wrote $CSV" >&2
