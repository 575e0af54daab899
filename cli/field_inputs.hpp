#pragma once
// Off-resonance inputs of `mri recon` (issue 43): the field map (--fieldmap: BART .cfl or NIfTI, Hz)
// and the samples' times (--readout-times: BART .cfl shaped like the k-space without coils, seconds).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace mri::cli {

// The map in `path` (.nii/.nii.gz: NIfTI; otherwise a BART base name), real, one volume. Throws
// InvalidArgument naming --fieldmap and the value (several volumes, a non-zero imaginary part,
// NaN), IoError for an unreadable file.
std::shared_ptr<const FieldMap> read_field_map(const std::string &path);

// The times in `path` for a trajectory of `samples` points in readouts of `readout` samples:
// the real parts, one per sample, finite, >= 0 and non-decreasing along each readout; or, for
// "dwell:D[:T0]", sample i of every readout at T0 + i D seconds. Throws InvalidArgument naming
// --readout-times and the value.
std::vector<float> read_readout_times(const std::string &path, std::size_t samples, std::size_t readout);

// "ismrmrd[:T0]" (ISMRMRD input): the file's own times, sample i of an acquisition at
// T0 + (i - center_sample) sample_time_us (IsmrmrdReadOptions::sample_times); the offset T0, or
// none for another spec. Throws InvalidArgument naming --readout-times for a bad offset.
std::optional<double> ismrmrd_times_offset(const std::string &spec);

} // namespace mri::cli
