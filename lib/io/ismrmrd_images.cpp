// Reconstructed images into a new ISMRMRD file (`mri recon --out image.h5`), the way Gadgetron
// stores them: group "dataset", one image per item in the variable "image_0".
#include "mri/io/ismrmrd.hpp"

#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

#include <cmath>

#include "ismrmrd_common.hpp"
#include "mri/error.hpp"

namespace mri {
namespace {

template <class T> void set_geometry(ISMRMRD::Image<T> &im, const ScannerGeometry &g) {
  const auto f = [](double v) { return static_cast<float>(v); };
  im.setPosition(f(g.position[0]), f(g.position[1]), f(g.position[2]));
  im.setReadDirection(f(g.read_dir[0]), f(g.read_dir[1]), f(g.read_dir[2]));
  im.setPhaseDirection(f(g.phase_dir[0]), f(g.phase_dir[1]), f(g.phase_dir[2]));
  im.setSliceDirection(f(g.slice_dir[0]), f(g.slice_dir[1]), f(g.slice_dir[2]));
}

template <class T> ISMRMRD::Image<T> to_ismrmrd(const Image &x, const std::array<double, 3> &voxel_mm, int index) {
  const Grid &g = x.grid();
  ISMRMRD::Image<T> im(static_cast<std::uint16_t>(g.nx()), static_cast<std::uint16_t>(g.ny()),
                       static_cast<std::uint16_t>(g.nz()), 1);
  im.setFieldOfView(static_cast<float>(voxel_mm[0] * static_cast<double>(g.nx())),
                    static_cast<float>(voxel_mm[1] * static_cast<double>(g.ny())),
                    static_cast<float>(voxel_mm[2] * static_cast<double>(g.nz())));
  im.setImageIndex(static_cast<std::uint16_t>(index));
  im.setRepetition(static_cast<std::uint16_t>(index));
  T *out = im.getDataPtr();
  for (std::size_t i = 0; i < x.size(); ++i) {
    if constexpr (std::is_same_v<T, float>) out[i] = std::abs(x[i]);
    else out[i] = x[i];
  }
  im.setImageType(std::is_same_v<T, float> ? ISMRMRD::ISMRMRD_IMTYPE_MAGNITUDE : ISMRMRD::ISMRMRD_IMTYPE_COMPLEX);
  return im;
}

} // namespace

void write_ismrmrd_images(const std::filesystem::path &path, const std::vector<Image> &images,
                          const std::array<double, 3> &voxel_mm, bool complex,
                          const std::vector<ScannerGeometry> &geometry) {
  if (images.empty()) detail::invalid_argument("write_ismrmrd_images: images", 0, "nothing to write");
  if (!geometry.empty() && geometry.size() != images.size())
    detail::invalid_argument("write_ismrmrd_images: geometry.size()", geometry.size(),
                             "one per image (" + std::to_string(images.size()) + ") or none");
  for (const Image &x : images)
    for (int a = 0; a < 3; ++a)
      if (x.grid().extent(a) > 65535)
        detail::invalid_argument("write_ismrmrd_images: extent", x.grid().extent(a), "ISMRMRD allows 65535");
  if (images.size() > 65535) detail::invalid_argument("write_ismrmrd_images: images", images.size(), "too many");
  detail::write_then_rename(path, [&](const std::filesystem::path &tmp) {
    ISMRMRD::Dataset dataset(tmp.c_str(), "dataset", true);
    for (std::size_t i = 0; i < images.size(); ++i) {
      const int index = static_cast<int>(i);
      const auto append = [&](auto image) {
        if (!geometry.empty()) set_geometry(image, geometry[i]);
        dataset.appendImage("image_0", image);
      };
      if (complex) append(to_ismrmrd<std::complex<float>>(images[i], voxel_mm, index));
      else append(to_ismrmrd<float>(images[i], voxel_mm, index));
    }
  });
}

} // namespace mri
