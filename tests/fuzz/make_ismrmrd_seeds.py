# The structured seeds of the ismrmrd_reader harness (the s-* files of corpus/ismrmrd_reader/), in
# fuzz_ismrmrd.cpp's layout (README.md):  python3 tests/fuzz/make_ismrmrd_seeds.py tests/fuzz/corpus/ismrmrd_reader
import struct, sys, os
out = sys.argv[1]

def xml(traj, m, coils, recon=None, limit_center=None):
    recon = recon or m
    lim = '<encodingLimits></encodingLimits>'
    if limit_center is not None:
        lim = ('<encodingLimits><kspace_encoding_step_1><minimum>0</minimum><maximum>%d</maximum>'
               '<center>%d</center></kspace_encoding_step_1></encodingLimits>' % (m[1] - 1, limit_center))
    coil = '<acquisitionSystemInformation><receiverChannels>%d</receiverChannels></acquisitionSystemInformation>' % coils if coils else ''
    sp = lambda n, f: ('<matrixSize><x>%d</x><y>%d</y><z>%d</z></matrixSize><fieldOfView_mm><x>%g</x><y>%g</y><z>%g</z></fieldOfView_mm>'
                       % (n[0], n[1], n[2], f * n[0], f * n[1], f * n[2]))
    return ('<?xml version="1.0"?><ismrmrdHeader xmlns="http://www.ismrm.org/ISMRMRD">%s<experimentalConditions>'
            '<H1resonanceFrequency_Hz>63500000</H1resonanceFrequency_Hz></experimentalConditions><encoding><encodedSpace>%s</encodedSpace>'
            '<reconSpace>%s</reconSpace>%s<trajectory>%s</trajectory></encoding></ismrmrdHeader>'
            % (coil, sp(m, 2.0), sp(recon, 2.0), lim, traj)).encode()

def v(x):  # one value byte: (b - 132) / 8
    if x != x: return 0
    b = int(round(x * 8 + 132)); assert 8 <= b <= 255; return b

def acq(samples, channels, td, data, traj=b'', flags=0, pre=0, post=0, center=0, space=0, counters=(0,) * 8):
    h = struct.pack('<QBBBHHHH8H', flags, samples, channels, td, pre, post, center, space, *counters)
    d = bytes(v(x) for x in data); t = bytes(v(x) for x in traj)
    assert len(d) == 2 * samples * channels and len(t) == td * samples
    return h + d + t

def seed(name, header, acqs):
    open(os.path.join(out, name), 'wb').write(b'\x01' + header + b'\0' + b''.join(acqs))

NOISE = 1 << 18
ramp = lambda n: [((i % 9) - 4) / 4 for i in range(n)]
radial = lambda s, ang: [c for i in range(s) for c in ((i - s / 2) * ang[0], (i - s / 2) * ang[1])]
seed('s-radial-2coils', xml('radial', (8, 8, 1), 2),
     [acq(4, 2, 2, ramp(16), radial(4, (1, 0)), counters=(0,) * 8), acq(4, 2, 2, ramp(16), radial(4, (0, 1)), counters=(1,) + (0,) * 7)])
seed('s-cartesian', xml('cartesian', (4, 4, 1), 1, limit_center=2),
     [acq(4, 1, 0, ramp(8), center=2, counters=(k,) + (0,) * 7) for k in range(4)])
seed('s-cartesian-noise', xml('cartesian', (4, 4, 1), 2, recon=(2, 4, 1)),
     [acq(4, 2, 0, ramp(16)[::-1], flags=NOISE)] + [acq(4, 2, 0, ramp(16), center=2, counters=(k,) + (0,) * 7) for k in range(4)])
seed('s-spiral-3d', xml('spiral', (4, 4, 4), 1),
     [acq(6, 1, 3, ramp(12), [((i * 5) % 7 - 3) / 2 for i in range(18)])])
seed('s-normalized', xml('goldenangle', (8, 8, 1), 1),
     [acq(5, 1, 2, ramp(10), [((i % 5) - 2) / 8 for i in range(10)])])
seed('s-two-slices-nav', xml('radial', (8, 8, 1), 1),
     [acq(4, 1, 2, ramp(8), radial(4, (1, 1)), counters=(0, 0, s, 0, 0, 0, 0, 0)) for s in range(2)] +
     [acq(4, 1, 2, ramp(8), radial(4, (1, 0)), flags=1 << 22), acq(4, 1, 2, ramp(8), radial(4, (1, 0)), space=1)])
# Bad ones: a NaN sample, no trajectory on a radial header, too many discarded samples, channels
# against the header, an empty header, a 2D trajectory for a 3D encoding.
seed('s-nan-sample', xml('radial', (8, 8, 1), 1), [acq(4, 1, 2, [float('nan')] + ramp(7), radial(4, (1, 0)))])
seed('s-radial-no-traj', xml('radial', (8, 8, 1), 1), [acq(4, 1, 0, ramp(8))])
seed('s-discard-all', xml('radial', (8, 8, 1), 1), [acq(4, 1, 2, ramp(8), radial(4, (1, 0)), pre=2, post=2)])
seed('s-channels-mismatch', xml('radial', (8, 8, 1), 4), [acq(4, 2, 2, ramp(16), radial(4, (1, 0)))])
seed('s-empty-header', b'', [acq(4, 1, 2, ramp(8), radial(4, (1, 0)))])
seed('s-2d-traj-3d-grid', xml('spiral', (4, 4, 4), 1), [acq(4, 1, 2, ramp(8), radial(4, (1, 0)))])
