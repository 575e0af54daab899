// Writes reconstructed images in the format the output path's extension names.
#include "outputs.hpp"

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

// The central slice of a 3D volume across `axis` (0: the y-z plane, 1: x-z, 2: x-y) as a 2D image.
Image central_slice(const Image &v, int axis) {
  const Grid &g = v.grid();
  const int u = axis == 0 ? 1 : 0, w = axis == 2 ? 1 : 2; // the two axes kept
  Image s(Grid(g.extent(u), g.extent(w)));
  std::int64_t i[3] = {g.nx() / 2, g.ny() / 2, g.nz() / 2};
  for (i[w] = 0; i[w] < g.extent(w); ++i[w])
    for (i[u] = 0; i[u] < g.extent(u); ++i[u]) s.at(i[u], i[w]) = v.at(i[0], i[1], i[2]);
  return s;
}

// 2D images side by side; a 3D volume as its three central slices (x-y, x-z, y-z).
void write_png_images(const std::string &path, const std::vector<Image> &images) {
  std::vector<Image> slices;
  for (const Image &im : images) {
    if (im.grid().dims() == 2) slices.push_back(im);
    else
      for (const int axis : {2, 1, 0}) slices.push_back(central_slice(im, axis));
  }
  std::vector<PngPanel> panels;
  for (const Image &im : slices) panels.push_back({&im, 0.0f}); // each its own maximum
  replace_atomically(path, [&](const std::filesystem::path &tmp) { write_png_montage(tmp, panels); });
}


enum class Format { Nifti, Png, Ismrmrd, Cfl };

// Anything else is a BART base name, as BART's own tools take them: `recon_0.01` writes
// recon_0.01.cfl and recon_0.01.hdr, `x.cfl` or `x.hdr` the pair of `x` (cfl_base).
Format format_of(const std::string &path) {
  if (ends_with(path, ".nii") || ends_with(path, ".nii.gz")) return Format::Nifti;
  if (ends_with(path, ".png")) return Format::Png;
  if (ends_with(path, ".h5")) return Format::Ismrmrd;
  if (path.empty() || path.back() == '/' || std::filesystem::path(path).filename() == ".")
    throw UsageError("--out '" + path + "': names a folder, not a file");
  return Format::Cfl;
}

} // namespace

void check_output_path(const std::string &path) {
  format_of(path);
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    throw IoError(path + ": cannot write: no folder " + dir.string());
}

void check_output_placement(const std::string &path, const Grid &grid, std::size_t images, const OutputOptions &options) {
  if (format_of(path) == Format::Nifti) check_nifti_geometry(grid, images, options.geometry);
}

void write_images(const std::string &path, const std::vector<Image> &images, const OutputOptions &options) {
  if (images.empty()) throw UsageError(path + ": no image to write");
  switch (format_of(path)) {
  case Format::Nifti:
    write_nifti(path, images, options.voxel_mm, options.complex ? NiftiValues::Complex : NiftiValues::Magnitude,
                options.geometry);
    return;
  case Format::Png: write_png_images(path, images); return;
  case Format::Ismrmrd: write_ismrmrd_images(path, images, options.voxel_mm, options.complex, options.geometry); return;
  case Format::Cfl: write_cfl_images(path, images); return;
  }
}

} // namespace mri::cli
