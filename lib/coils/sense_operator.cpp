// SenseOperator: the coil maps around the exact F, one coil at a time.
#include "mri/sense.hpp"

#include <string>

#include "mri/error.hpp"

namespace mri {

SenseOperator::SenseOperator(Trajectory trajectory, Grid grid, std::shared_ptr<const CoilSensitivities> maps,
                             OperatorOptions options)
    : fourier_(std::move(trajectory), grid, options), maps_(std::move(maps)) {
  if (!maps_) detail::invalid_argument("maps", "null", "SENSE needs coil sensitivities");
  if (maps_->grid() != grid)
    detail::invalid_argument("maps->grid().voxels()", maps_->grid().voxels(),
                             "must be the operator's grid (" + std::to_string(grid.voxels()) + " voxels)");
}

std::vector<cfloat> SenseOperator::apply(const Image &image) const {
  if (image.grid() != fourier_.grid())
    detail::invalid_argument("image.grid().voxels()", image.grid().voxels(), "must be the operator's grid");
  const std::size_t m = fourier_.trajectory().size();
  std::vector<cfloat> out(m * static_cast<std::size_t>(coils()));
  Image coil_image(image.grid());
  for (int c = 0; c < coils(); ++c) {
    const std::span<const cfloat> s = maps_->map(c);
    for (std::size_t i = 0; i < image.size(); ++i) coil_image[i] = s[i] * image[i];
    const std::vector<cfloat> y = fourier_.apply(coil_image);
    std::copy(y.begin(), y.end(), out.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c) * m));
  }
  return out;
}

Image SenseOperator::adjoint(std::span<const cfloat> samples) const {
  const std::size_t m = fourier_.trajectory().size();
  if (samples.size() != m * static_cast<std::size_t>(coils()))
    detail::invalid_argument("samples.size()", samples.size(),
                             "must equal coils * M = " + std::to_string(m * static_cast<std::size_t>(coils())));
  Image out(fourier_.grid());
  for (int c = 0; c < coils(); ++c) {
    const Image coil_image = fourier_.adjoint(samples.subspan(static_cast<std::size_t>(c) * m, m));
    const std::span<const cfloat> s = maps_->map(c);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += std::conj(s[i]) * coil_image[i];
  }
  return out;
}

} // namespace mri
