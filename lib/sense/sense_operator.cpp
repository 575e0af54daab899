// SenseOperator: the coil maps around the exact F, one coil at a time.
#include "mri/sense.hpp"

#include <algorithm>
#include <string>

#include "mri/error.hpp"
#include "operator_checks.hpp"

namespace mri {

SenseOperator::SenseOperator(Trajectory trajectory, Grid grid, std::shared_ptr<const CoilSensitivities> maps,
                             OperatorOptions options)
    : fourier_(std::move(trajectory), grid, options), maps_(std::move(maps)) {
  if (!maps_) detail::invalid_argument("maps", "null", "SENSE needs coil sensitivities");
  if (maps_->grid() != grid)
    detail::invalid_argument("maps->grid().voxels()", maps_->grid().voxels(),
                             "must be the operator's grid (" + std::to_string(grid.voxels()) + " voxels)");
}

std::vector<cfloat> SenseOperator::range_vector() const {
  return std::vector<cfloat>(fourier_.trajectory().size() * static_cast<std::size_t>(coils()));
}

void SenseOperator::forward(const Image &image, std::span<cfloat> samples) const {
  detail::check_image_grid(image, fourier_.grid());
  const std::size_t m = fourier_.trajectory().size();
  check_coil_samples(samples.size(), m);
  Image coil_image(image.grid());
  for (int c = 0; c < coils(); ++c) {
    const std::span<const cfloat> s = maps_->map(c);
    for (std::size_t i = 0; i < image.size(); ++i) coil_image[i] = s[i] * image[i];
    fourier_.forward(coil_image, samples.subspan(static_cast<std::size_t>(c) * m, m));
  }
}

void SenseOperator::adjoint(std::span<const cfloat> samples, Image &out) const {
  detail::check_image_grid(out, fourier_.grid());
  const std::size_t m = fourier_.trajectory().size();
  check_coil_samples(samples.size(), m);
  std::fill(out.data(), out.data() + out.size(), cfloat(0));
  Image coil_image(fourier_.grid());
  for (int c = 0; c < coils(); ++c) {
    fourier_.adjoint(samples.subspan(static_cast<std::size_t>(c) * m, m), coil_image);
    const std::span<const cfloat> s = maps_->map(c);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += std::conj(s[i]) * coil_image[i];
  }
}

void SenseOperator::check_coil_samples(std::size_t size, std::size_t m) const {
  if (size != m * static_cast<std::size_t>(coils()))
    detail::invalid_argument("samples.size()", size,
                             "must equal coils * M = " + std::to_string(m * static_cast<std::size_t>(coils())));
}

} // namespace mri
