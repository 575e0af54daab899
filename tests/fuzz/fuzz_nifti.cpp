// The NIfTI reader's harness (fuzz_targets.hpp): read_nifti on the input as a .nii file.
#include <filesystem>

#include "fuzz_scratch.hpp"
#include "fuzz_targets.hpp"
#include "mri/error.hpp"
#include "mri/io/nifti.hpp"

namespace mri::fuzz {

int nifti_reader(const std::uint8_t *data, std::size_t size) {
  const std::filesystem::path file = scratch_dir() / "input.nii";
  write_file(file, data, size);
  NiftiVolume v;
  try {
    v = read_nifti(file);
  } catch (const Error &) {
    return 0; // the expected answer to a bad file
  }
  std::uint64_t count = 1;
  for (const std::int64_t d : v.dims) {
    if (d < 1) finding("read_nifti returned a dimension below 1");
    count *= static_cast<std::uint64_t>(d);
  }
  if (count != v.data.size()) finding("read_nifti returned dims that do not match its data");
  return 0;
}

} // namespace mri::fuzz
