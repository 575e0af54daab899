// The linear solver of the Euler-Lagrange equations (the GPU motion paper's section 4.3;
// mri/motion.hpp): point-coupled Jacobi sweeps (as the paper does) or multicolour SOR passes
// (red-black; 4 colours with the divergence term), both through detail::motion::clg_update (shared
// with cuda/motion/motion_solver.cu). Both are deterministic: Jacobi reads src and writes dst; a
// colour pass writes only voxels none of whose neighbours it reads.
#include <cmath>
#include <limits>

#include "cpu_stages.hpp"

namespace mri::detail::motion {

template <class T>
void sweep(const Tensor<T> &j, const Field<T> &src, Field<T> &dst, int colour, int colours, T alpha,
           T gamma, T omega) {
  const Grid &g = src[0].grid;
  const std::int64_t nx = g.nx(), ny = g.ny(), nz = g.nz();
#pragma omp parallel for collapse(2) schedule(static) if (g.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x = 0; x < nx; ++x) {
        const std::int64_t v = g.index(x, y, z);
        if (colour >= 0 && voxel_colour(x, y, z, colours) != colour)
          continue;
        const auto load = [&](int c, int dx, int dy, int dz) {
          return src[c].v[v + dx + nx * (dy + ny * dz)];
        };
        const T jv[kTT] = {j[0].v[v], j[1].v[v], j[2].v[v], j[3].v[v], j[4].v[v],
                           j[5].v[v], j[6].v[v], j[7].v[v], j[8].v[v]};
        T out[3];
        clg_update(jv, load, VoxelPosition<std::int64_t>{{x, y, z}, {nx, ny, nz}}, alpha, gamma,
                   omega, colour < 0, out);
        for (int c = 0; c < 3; ++c)
          dst[c].v[v] = out[c];
      }
}

template <class T>
double residual(const Tensor<T> &j, const Field<T> &w, Field<T> &r, T alpha, T gamma) {
  const Grid &g = w[0].grid;
  const std::int64_t nx = g.nx(), ny = g.ny(), nz = g.nz();
  double sum = 0;
#pragma omp parallel for collapse(2) reduction(+ : sum) schedule(static) if (g.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x = 0; x < nx; ++x) {
        const std::int64_t v = g.index(x, y, z);
        const auto load = [&](int c, int dx, int dy, int dz) {
          return w[c].v[v + dx + nx * (dy + ny * dz)];
        };
        const T jv[kTT] = {j[0].v[v], j[1].v[v], j[2].v[v], j[3].v[v], j[4].v[v],
                           j[5].v[v], j[6].v[v], j[7].v[v], j[8].v[v]};
        const ClgGradient<T> grad =
            clg_gradient(jv, load, VoxelPosition<std::int64_t>{{x, y, z}, {nx, ny, nz}}, alpha, gamma);
        for (int c = 0; c < 3; ++c) {
          r[c].v[v] = -grad.r[c];
          sum += double(grad.r[c]) * double(grad.r[c]);
        }
      }
  return sum;
}

template <class T>
double apply_operator(const Tensor<T> &j, const Field<T> &x, Field<T> &out, T alpha, T gamma) {
  const Grid &g = x[0].grid;
  const std::int64_t nx = g.nx(), ny = g.ny(), nz = g.nz();
  double dot = 0;
#pragma omp parallel for collapse(2) reduction(+ : dot) schedule(static) if (g.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x0 = 0; x0 < nx; ++x0) {
        const std::int64_t v = g.index(x0, y, z);
        const auto load = [&](int c, int dx, int dy, int dz) {
          return x[c].v[v + dx + nx * (dy + ny * dz)];
        };
        const T jv[kTT] = {j[0].v[v], j[1].v[v], j[2].v[v], T(0),      j[4].v[v],
                           j[5].v[v], T(0),      j[7].v[v], T(0)}; // no time column: A x
        const ClgGradient<T> grad = clg_gradient(
            jv, load, VoxelPosition<std::int64_t>{{x0, y, z}, {nx, ny, nz}}, alpha, gamma);
        for (int c = 0; c < 3; ++c) {
          out[c].v[v] = grad.r[c];
          dot += double(grad.r[c]) * double(x[c].v[v]);
        }
      }
  return dot;
}

template <class T> double rhs_norm2(const Tensor<T> &j) {
  const std::int64_t n = j[0].grid.voxels();
  double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static) if (n >= kMinParallelVoxels)
  for (std::int64_t v = 0; v < n; ++v)
    for (int c : {kXT, kYT, kZT})
      sum += double(j[c].v[v]) * double(j[c].v[v]);
  return sum;
}

double relative_residual(double r2, double b2) {
  if (r2 == 0)
    return 0;
  return b2 > 0 ? std::sqrt(r2 / b2) : std::numeric_limits<double>::infinity();
}

template <class T>
double clg_energy(const Tensor<T> &j, const Field<T> &w, double alpha, double gamma) {
  const Grid &g = w[0].grid;
  const std::int64_t stride[3] = {1, g.nx(), g.nx() * g.ny()};
  double e = 0;
#pragma omp parallel for collapse(2) reduction(+ : e) schedule(static) if (g.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const std::int64_t v = g.index(x, y, z), pos[3] = {x, y, z};
        const double u[3] = {w[0].v[v], w[1].v[v], w[2].v[v]};
        const auto J = [&](int c) { return static_cast<double>(j[c].v[v]); };
        e += J(kXX) * u[0] * u[0] + J(kYY) * u[1] * u[1] + J(kZZ) * u[2] * u[2] +
             2 * (J(kXY) * u[0] * u[1] + J(kXZ) * u[0] * u[2] + J(kYZ) * u[1] * u[2]) +
             2 * (J(kXT) * u[0] + J(kYT) * u[1] + J(kZT) * u[2]);
        double div = 0;
        for (int a = 0; a < 3; ++a) {
          if (pos[a] + 1 >= g.extent(a))
            continue;
          for (int c = 0; c < 3; ++c) {
            const double diff = w[c].v[v + stride[a]] - u[c];
            e += alpha * diff * diff;
          }
          div += w[a].v[v + stride[a]] - u[a];
        }
        e += gamma * div * div;
      }
  return e;
}

template void sweep(const Tensor<float> &, const Field<float> &, Field<float> &, int, int, float,
                    float, float);
template void sweep(const Tensor<double> &, const Field<double> &, Field<double> &, int, int,
                    double, double, double);
template double residual(const Tensor<float> &, const Field<float> &, Field<float> &, float, float);
template double residual(const Tensor<double> &, const Field<double> &, Field<double> &, double,
                         double);
template double apply_operator(const Tensor<float> &, const Field<float> &, Field<float> &, float,
                               float);
template double apply_operator(const Tensor<double> &, const Field<double> &, Field<double> &,
                               double, double);
template double rhs_norm2(const Tensor<float> &);
template double rhs_norm2(const Tensor<double> &);
template double clg_energy(const Tensor<float> &, const Field<float> &, double, double);
template double clg_energy(const Tensor<double> &, const Field<double> &, double, double);

} // namespace mri::detail::motion
