// Links the installed SDK and runs a tiny adjointness check through its public API.
#include <cmath>
#include <cstdio>

#include <mri/mri.hpp>

int main() {
  const mri::Grid grid(16, 16);
  const auto traj = mri::traj::uniform_random(grid, 200, 7);
  const mri::FourierOperator f(traj, grid, {mri::Backend::Cpu, mri::Precision::Float64});
  const mri::Image x = mri::Phantom::shepp_logan_2d().rasterize(grid);
  const auto y = mri::Phantom::shepp_logan_2d().kspace(traj, grid);
  const auto fx = mri::forward(f, x);
  const mri::Image fhy = mri::adjoint(f, y);
  std::complex<double> lhs = 0, rhs = 0;
  for (std::size_t m = 0; m < y.size(); ++m) lhs += std::conj(std::complex<double>(fx[m])) * std::complex<double>(y[m]);
  for (std::size_t n = 0; n < x.size(); ++n) rhs += std::conj(std::complex<double>(x[n])) * std::complex<double>(fhy[n]);
  const double rel = std::abs(lhs - rhs) / std::abs(lhs);
  std::printf("consumer: <Fx,y> vs <x,F^H y> relative difference %.2e\n", rel);
  return rel < 1e-5 ? 0 : 1;
}
