#!/usr/bin/env python3
"""An independent reader of the NIfTI-1 header (348 bytes, .nii or .nii.gz) for the tests: no
libnifti, no nibabel (not installed), only the standard's byte layout through `struct`.
Prints one field per line: name and values, the qform computed from its quaternion (NIfTI-1
standard, method 2) and the sform rows, each as 12 numbers (rows of the 3x4 voxel -> mm matrix)."""
import gzip
import math
import struct
import sys


def header(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read(348)
    for end in "<>":
        if struct.unpack_from(end + "i", raw, 0)[0] == 348:
            return end, raw
    sys.exit(f"{path}: not a NIfTI-1 header")


def qform(b, c, d, qx, qy, qz, pixdim):
    a = math.sqrt(max(0.0, 1.0 - (b * b + c * c + d * d)))
    r = [[a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
         [2 * (b * c + a * d), a * a + c * c - b * b - d * d, 2 * (c * d - a * b)],
         [2 * (b * d - a * c), 2 * (c * d + a * b), a * a + d * d - c * c - b * b]]
    qfac = -1.0 if pixdim[0] < 0 else 1.0
    scale = [pixdim[1], pixdim[2], qfac * pixdim[3]]
    offset = [qx, qy, qz]
    return [r[i][j] * scale[j] for i in range(3) for j in range(3)], offset


def main(path):
    e, h = header(path)
    dim = struct.unpack_from(e + "8h", h, 40)
    intent_code, datatype = struct.unpack_from(e + "2h", h, 68)
    pixdim = struct.unpack_from(e + "8f", h, 76)
    xyzt_units = struct.unpack_from(e + "B", h, 123)[0]
    qform_code, sform_code = struct.unpack_from(e + "2h", h, 252)
    b, c, d, qx, qy, qz = struct.unpack_from(e + "6f", h, 256)
    srows = struct.unpack_from(e + "12f", h, 280)
    intent_name = h[328:344].split(b"\0")[0].decode()
    rot, off = qform(b, c, d, qx, qy, qz, pixdim)
    q = [rot[0], rot[1], rot[2], off[0], rot[3], rot[4], rot[5], off[1], rot[6], rot[7], rot[8], off[2]]
    print("dim", *dim)
    print("pixdim", *pixdim)
    print("datatype", datatype)
    print("intent_code", intent_code)
    print("intent_name", intent_name or "-")
    print("xyz_units", xyzt_units & 7)
    print("qform_code", qform_code)
    print("sform_code", sform_code)
    print("qform", *q)
    print("sform", *srows)


if __name__ == "__main__":
    main(sys.argv[1])
