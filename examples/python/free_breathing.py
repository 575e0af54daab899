"""Free-breathing radial MRI from Python: python3 free_breathing.py [OUT]
A simulated free-breathing golden-angle acquisition (mri.breathing) is self-gated, sorted into 4
respiratory states with equal counts, and the states reconstructed jointly with total variation
along the states (BART's -R T:1024:0:LAMBDA); OUT (a BART file) gets the (nx, ny, states) stack."""
import sys

import numpy as np

import mri


def main(out=None, matrix=(32, 32), spokes=2000, samples=8, coils=4):
    points = mri.traj.radial(matrix, spokes, samples, golden=True)  # readout-major: spoke r = rows r*S .. r*S+S-1
    acq = mri.breathing.simulate(points, matrix, samples, coils=coils, snr=30, amplitude_voxels=2, readout_seconds=0.01)
    signal = mri.frames.self_gating_signal(points, acq["kspace"], samples, acq["readout_seconds"])
    binning = mri.frames.bin_by_amplitude(signal["values"], 4)  # bin 0: end-expiration
    states = mri.frames.split_frames(points, acq["kspace"], samples, binning)  # [(points, kspace, weights)]
    images, report = mri.reconstruct_frames(states, matrix, terms=["T:1024:0:0.01"], iterations=20)
    print(f"breathing peak at {signal['peak_hz']:.2f} Hz, {len(images)} states of "
          f"{list(binning['readouts_per_frame'])} spokes; {report['solver']}: {report['iterations']} iterations, "
          f"{report['total_seconds']:.2f} s")
    stack = np.stack(images, axis=-1)  # (nx, ny, states): mri recon --bins' layout
    if out:
        mri.io.write_cfl(out, stack)
    return stack, report


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
