#!/bin/bash
# Makes the compressed-sensing benchmark data of issue 41 in OUTDIR (BART .cfl/.hdr files):
#   truth          256x256 Shepp-Logan image (bart phantom -x 256), the PSNR reference
#   sens           4 coil maps on the same 256 grid (bart phantom -S 4 -x 256); in v0.8.00
#                  they are not normalised: rss over coils spans about 1.5e4..1.8e5
#   sens_unit      sens times one real constant so that max rss = 1: the same model up to a
#                  global scale. pics' l1-wavelet (FISTA, -e) result does not change with it;
#                  its TV/ADMM and l2 results do (ADMM rho and the l2 lambda are absolute)
#   traj_rad       golden-angle radial: 48 spokes x 512 samples (2x oversampled readout),
#                  scaled by 0.5 so |k| <= 128 = the 256 grid's Nyquist (8.4x below 403 spokes)
#   ksp_rad        4-coil analytic k-space on traj_rad (bart phantom -s 4 -k -t) + noise
#   traj_spi       Archimedean spiral, 4 of 16 interleaves (0,4,8,12), 8 turns each,
#                  6400 samples each at constant speed (|dk| ~ 0.5, 2x oversampled);
#                  bart traj of v0.8.00 has no spiral, so it is written here in Python
#   ksp_spi        4-coil analytic k-space on traj_spi + noise
#   *_clean        the same k-space before noise
# Noise: complex Gaussian, SNR 30 dB relative to the k-space RMS of each case:
#   VAR = rms(ksp_clean)^2 / 10^(30/10), bart noise -n VAR (VAR is the complex variance
#   E|n|^2: checked, bart noise -n 2 on zeros gives mean |n|^2 = 2.00), fixed seeds below.
# Needs: bart (v0.8.00 checked), python3 (standard library only).
set -euo pipefail

if [ $# -ne 1 ]; then echo "usage: $0 OUTDIR" >&2; exit 2; fi
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
SNR_DB=30
SEED_RAD=20261
SEED_SPI=77213
mkdir -p "$OUT"
cd "$OUT"

bart phantom -x 256 truth
bart phantom -S 4 -x 256 sens
bart rss 8 sens sens_rss
SENS_MAX=$(python3 "$HERE/psnr.py" --max sens_rss)
bart scale "$(python3 -c "print('%.9e' % (1 / $SENS_MAX))")" sens sens_unit
rm -f sens_rss.cfl sens_rss.hdr

# Radial: -r radial, -G golden-angle increment (111.25 deg, angles in [0,180)).
bart traj -x 512 -y 48 -r -G traj_rad_os
bart scale 0.5 traj_rad_os traj_rad
rm -f traj_rad_os.cfl traj_rad_os.hdr

# Spiral: k(s) = r(s) (cos th, sin th), r = kmax th / th_max, th = th_max sqrt(s) (constant
# speed), interleave j rotated by 2 pi j / 16; keep j = 0, 4, 8, 12.
python3 - <<'PY'
import array, math
kmax, turns, nil, keep, ns = 128.0, 8, 16, (0, 4, 8, 12), 6400
thmax = 2 * math.pi * turns
vals = array.array("f")
for j in keep:
    rot = 2 * math.pi * j / nil
    for i in range(ns):
        th = thmax * math.sqrt(i / (ns - 1))
        r = kmax * th / thmax
        for c in (r * math.cos(th + rot), r * math.sin(th + rot), 0.0):
            vals.extend((c, 0.0))
with open("traj_spi.cfl", "wb") as f:
    vals.tofile(f)
with open("traj_spi.hdr", "w") as f:
    f.write("# Dimensions\n3 %d %d" % (ns, len(keep)) + " 1" * 13 + "\n")
PY

add_noise() { # clean noisy seed
  local rms var
  rms=$(python3 "$HERE/psnr.py" --rms "$1")
  var=$(python3 -c "print('%.9e' % ($rms ** 2 / 10 ** ($SNR_DB / 10)))")
  bart noise -s "$3" -n "$var" "$1" "$2"
  echo "$2 rms_clean=$rms snr_db=$SNR_DB noise_var=$var seed=$3" >> noise.txt
}

rm -f noise.txt
bart phantom -s 4 -k -t traj_rad ksp_rad_clean
add_noise ksp_rad_clean ksp_rad "$SEED_RAD"
bart phantom -s 4 -k -t traj_spi ksp_spi_clean
add_noise ksp_spi_clean ksp_spi "$SEED_SPI"

cat noise.txt
echo "made in $OUT: truth sens sens_unit traj_rad ksp_rad traj_spi ksp_spi (+ *_clean)"
