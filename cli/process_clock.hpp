#pragma once
// Seconds since this process was started by the kernel (exec), for the report's "process"
// timeline of `mri recon`: what start-up (loading libmri, HDF5, CUDA's libraries) and each later
// stage cost, so that a whole-process figure (a 64-slice batch's seconds) can be split. From
// /proc/self/stat's start time, so its resolution is one clock tick (10 ms at USER_HZ = 100);
// NaN where /proc is not mounted.
namespace mri::cli {

double seconds_since_process_start();

} // namespace mri::cli
