"""Reconstruct BART files from Python: python3 bart_recon.py TRAJ KSP OUT [NX NY [NZ]]
(what `mri recon --traj TRAJ --kspace KSP --matrix NX,NY --lambda 0.01 --iterations 30 --out OUT` does)."""
import sys

import mri

traj, ksp = mri.io.read_cfl(sys.argv[1]), mri.io.read_cfl(sys.argv[2])  # BART's [3, samples, lines], [1, samples, lines, coils]
matrix = tuple(int(n) for n in sys.argv[4:]) or (256, 256)
image, report = mri.reconstruct(traj, ksp, matrix=matrix, lam=0.01, iterations=30)  # BART arrays: BART's units
mri.io.write_cfl(sys.argv[3], image)
print(f"{report['method']} on {report['backend']}, {report['coils']} coil(s): {report['iterations']} iterations, {report['total_seconds']:.3f} s")
