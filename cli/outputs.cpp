// Writes reconstructed images in the format the output path's extension names.
#include "outputs.hpp"

#include <unistd.h>

namespace mri::cli {
namespace {

bool ends_with(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void write_cfl_images(const std::string &path, const std::vector<Image> &images) {
  const Grid &g = images[0].grid();
  std::vector<std::int64_t> dims{g.nx(), g.ny(), g.nz()};
  if (images.size() > 1) {
    dims.resize(11, 1); // BART's TIME_DIM = 10
    dims[10] = static_cast<std::int64_t>(images.size());
  }
  std::vector<cfloat> data;
  data.reserve(images[0].size() * images.size());
  for (const Image &im : images) data.insert(data.end(), im.values().begin(), im.values().end());
  write_cfl_atomic(cfl_base(path), dims, data);
}

void write_png_images(const std::string &path, const std::vector<Image> &images) {
  std::vector<PngPanel> panels;
  for (const Image &im : images) panels.push_back({&im, 0.0f}); // central z slice, own maximum
  const std::filesystem::path final_path(path);
  const std::filesystem::path tmp =
      final_path.parent_path() / ("." + final_path.filename().string() + ".tmp-" + std::to_string(::getpid()));
  write_png_montage(tmp, panels);
  std::error_code ec;
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw IoError(path + ": cannot write (" + ec.message() + ")");
  }
}

} // namespace

void write_images(const std::string &path, const std::vector<Image> &images, const OutputOptions &options) {
  if (images.empty()) throw UsageError(path + ": no image to write");
  if (ends_with(path, ".nii") || ends_with(path, ".nii.gz")) {
    write_nifti(path, images, options.voxel_mm, options.complex ? NiftiValues::Complex : NiftiValues::Magnitude);
  } else if (ends_with(path, ".png")) {
    write_png_images(path, images);
  } else if (ends_with(path, ".h5")) {
    throw Unsupported(path + ": ISMRMRD image output (.h5) is not implemented yet; use .nii, .png or a BART name");
  } else if (std::filesystem::path(path).has_extension() && std::filesystem::path(path).extension() != ".cfl") {
    throw UsageError(path + ": unknown output extension " + std::filesystem::path(path).extension().string() +
                     " (.nii, .nii.gz, .png, or no extension for BART .cfl/.hdr)");
  } else {
    write_cfl_images(path, images);
  }
}

} // namespace mri::cli
