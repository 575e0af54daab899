#!/bin/bash
# Reference runs of `bart pics` on the data of make_cs_data.sh (issue 41 targets).
# usage: bart_reference.sh DATADIR [CASE] [SENS] [OUT.csv]
#   CASE = rad (default) or spi; SENS = sens (default) or sens_unit (file in DATADIR)
#   environment: TERMS="W T W-noe T-noe l2" (default all) picks the terms to run;
#   SPARSE_LAMBDAS, L2_LAMBDAS replace the lambda lists below. With the raw phantom maps
#   (sens) A^H A has eigenvalues up to ~1e12, so l2 needs lambda ~1e9..1e12 to act at all
# Writes CSV: case,sens,term,flags,lambda,psnr_db,seconds,peak_rss_kb
#   term    W  = -R W:3:0:L -e   (l1-wavelet, FISTA, step from the max eigenvalue)
#           W-noe = -R W:3:0:L   without -e (step 0.95, not divided by the max eigenvalue of A^H A: diverges once that exceeds 2/0.95)
#           T  = -R T:3:0:L -e   (total variation, ADMM)
#           T-noe = -R T:3:0:L   without -e
#           l2 = -l2 -r L        (Tikhonov, CG)
#   every run: -i 100, -t traj, 2 threads (OMP_NUM_THREADS=2), no -S (output left in BART's
#   scaled units: PSNR below is scale-invariant, so -S does not change it)
#   psnr_db  psnr.py: magnitude, LS-optimal real scale onto |truth|, whole image, peak max|truth|
#   seconds  wall clock of the whole bart process, peak_rss_kb from /usr/bin/time -v
set -euo pipefail

if [ $# -lt 1 ]; then echo "usage: $0 DATADIR [rad|spi] [sens|sens_unit] [OUT.csv]" >&2; exit 2; fi
DATA=$(cd "$1" && pwd)
CASE=${2:-rad}
HERE=$(cd "$(dirname "$0")" && pwd)
SENS=${3:-sens}
CSV=${4:-$PWD/bart_reference_${CASE}_$SENS.csv}
TERMS=${TERMS:-W T W-noe T-noe l2}
export OMP_NUM_THREADS=2
ITERS=100
SPARSE_LAMBDAS=${SPARSE_LAMBDAS:-"1e-4 3e-4 1e-3 3e-3 1e-2 3e-2"}
L2_LAMBDAS=${L2_LAMBDAS:-"1e-4 1e-3 3e-3 1e-2 3e-2 1e-1 3e-1 1"}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "case,sens,term,flags,lambda,psnr_db,seconds,peak_rss_kb" > "$CSV"

run() { # term lambda pics-options...
  local term=$1 lambda=$2; shift 2
  case " $TERMS " in *" $term "*) ;; *) return 0 ;; esac
  /usr/bin/time -v -o "$WORK/time.txt" bart pics "$@" -i "$ITERS" \
      -t "$DATA/traj_$CASE" "$DATA/ksp_$CASE" "$DATA/$SENS" "$WORK/x" > "$WORK/log.txt" 2>&1
  local psnr secs rss
  psnr=$(python3 "$HERE/psnr.py" "$DATA/truth" "$WORK/x")
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0;
          for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$WORK/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time.txt")
  echo "$CASE,$SENS,$term,\"$*\",$lambda,$psnr,$secs,$rss" | tee -a "$CSV"
}

for L in $SPARSE_LAMBDAS; do
  run W "$L" -R "W:3:0:$L" -e
  run T "$L" -R "T:3:0:$L" -e
  run W-noe "$L" -R "W:3:0:$L"
  run T-noe "$L" -R "T:3:0:$L"
done
for L in $L2_LAMBDAS; do
  run l2 "$L" -l2 -r "$L"
done
echo "wrote $CSV"
