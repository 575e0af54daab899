// NIfTI-1 output and input through libnifti's nifti2_io (mri/io/nifti.hpp).
#include "mri/io/nifti.hpp"

#include <nifti2_io.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unistd.h>

#include "mri/error.hpp"
#include "gzip_parallel.hpp"
#include "nifti_placement.hpp"

namespace mri {
namespace {

struct NimDeleter {
  void operator()(nifti_image *nim) const { nifti_image_free(nim); }
};
using NimPtr = std::unique_ptr<nifti_image, NimDeleter>;

bool ends_with(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string nifti_extension(const std::filesystem::path &path) {
  const std::string name = path.filename().string();
  if (ends_with(name, ".nii.gz")) return ".nii.gz";
  if (ends_with(name, ".nii")) return ".nii";
  detail::invalid_argument("write_nifti: path", path.string(), "the extension must be .nii or .nii.gz");
}

// Something to write, all on one grid, voxel sizes positive: `what` names the function and the
// argument ("write_nifti: images").
template <class Volume>
void check_volumes(const std::string &what, const std::vector<Volume> &volumes, const std::array<double, 3> &voxel_mm) {
  if (volumes.empty()) detail::invalid_argument(what, 0, "nothing to write");
  for (std::size_t i = 1; i < volumes.size(); ++i)
    if (volumes[i].grid().extents() != volumes[0].grid().extents())
      detail::invalid_argument(what + "[" + std::to_string(i) + "]", "its grid", "differs from the first's");
  for (int a = 0; a < 3; ++a)
    if (!(voxel_mm[a] > 0) || !std::isfinite(voxel_mm[a]))
      detail::invalid_argument(what + ": voxel_mm[" + std::to_string(a) + "]", voxel_mm[a], "must be positive and finite");
}

// libnifti prints its errors to stderr unless its debug level is 0; ours are exceptions.
void quiet_nifti() {
  static std::once_flag once;
  std::call_once(once, [] { nifti_set_debug_level(0); });
}

nifti_dmat44 to_dmat44(const NiftiAffine &m) {
  nifti_dmat44 r{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) r.m[i][j] = m[i][j];
  r.m[3][3] = 1;
  return r;
}

// A NIfTI-1 header: dims (dims[0] = ndim), voxel sizes in mm, and `affine` as sform and (its
// quaternion form) qform, both "scanner anatomical".
NimPtr new_header(const std::int64_t (&dims)[8], int datatype, const std::array<double, 3> &voxel_mm,
                  const NiftiAffine &affine) {
  NimPtr nim(nifti_make_new_nim(dims, datatype, 0));
  if (!nim) throw IoError("write_nifti: libnifti could not make a header");
  nim->nifti_type = NIFTI_FTYPE_NIFTI1_1; // NIfTI-1: what every reader knows (dims fit in 16 bits)
  for (int a = 0; a < 3; ++a) nim->pixdim[a + 1] = voxel_mm[a];
  nim->dx = voxel_mm[0], nim->dy = voxel_mm[1], nim->dz = voxel_mm[2];
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->qform_code = nim->sform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->sto_xyz = to_dmat44(affine);
  double dx = 0, dy = 0, dz = 0;
  nifti_dmat44_to_quatern(nim->sto_xyz, &nim->quatern_b, &nim->quatern_c, &nim->quatern_d, &nim->qoffset_x,
                          &nim->qoffset_y, &nim->qoffset_z, &dx, &dy, &dz, &nim->qfac);
  nim->qto_xyz = nifti_quatern_to_dmat44(nim->quatern_b, nim->quatern_c, nim->quatern_d, nim->qoffset_x,
                                         nim->qoffset_y, nim->qoffset_z, dx, dy, dz, nim->qfac);
  nim->qto_ijk = nifti_dmat44_inverse(nim->qto_xyz);
  nim->sto_ijk = nifti_dmat44_inverse(nim->sto_xyz);
  return nim;
}

// The voxel values in the file's datatype, in the placement's order.
std::vector<unsigned char> payload(const std::vector<Image> &images, const std::vector<std::size_t> &order,
                                   NiftiValues values) {
  const std::size_t n = images[0].size(), bytes = values == NiftiValues::Complex ? sizeof(cfloat) : sizeof(float);
  std::vector<unsigned char> out(n * images.size() * bytes);
  for (std::size_t t = 0; t < order.size(); ++t) {
    const Image &im = images[order[t]];
    unsigned char *dst = out.data() + t * n * bytes;
    if (values == NiftiValues::Complex) {
      std::memcpy(dst, im.data(), n * bytes);
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const float m = std::abs(im[i]);
      std::memcpy(dst + i * bytes, &m, bytes);
    }
  }
  return out;
}

NiftiAffine rows(const nifti_dmat44 &m) {
  NiftiAffine r{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) r[i][j] = m.m[i][j];
  return r;
}

// Writes header and data to a temporary name, renamed at the end: nothing half-written. libnifti
// writes .nii; a .nii.gz is that file gzipped on every core (gzip_parallel.hpp: the same bytes
// once decompressed; libnifti's own gzip runs on one).
void write_file(const std::filesystem::path &path, const std::string &ext, nifti_image &nim, void *data) {
  quiet_nifti();
  std::error_code exists;
  if (!path.parent_path().empty() && !std::filesystem::is_directory(path.parent_path(), exists))
    throw IoError(path.string() + ": cannot write: no folder " + path.parent_path().string()); // libnifti would print
  std::string name(1, '.'); // built in steps: GCC 12 warns falsely (-Wrestrict) on "." + string
  name += path.filename().string();
  name += ".tmp-" + std::to_string(::getpid());
  const std::filesystem::path tmp = path.parent_path() / (name + ".nii"), packed = path.parent_path() / (name + ext);
  if (nifti_set_filenames(&nim, tmp.c_str(), 0, 1) != 0) throw IoError(path.string() + ": libnifti rejected the file name");
  nim.data = data;
  // write_data = 3: the data too, and the file left open, so a failed open is seen (NULL);
  // closing it here flushes (and for .gz finishes) the stream.
  znzFile fp = nifti_image_write_hdr_img(&nim, 3, "wb");
  nim.data = nullptr; // the caller's: nifti_image_free must not free it
  bool written = !znz_isnull(fp);
  if (written) znzclose(fp);
  std::error_code ec;
  written = written && std::filesystem::file_size(tmp, ec) > 0 && !ec;
  try {
    if (written && packed != tmp) detail::gzip_file(tmp, packed, Z_DEFAULT_COMPRESSION); // libnifti's level
  } catch (const IoError &) {
    written = false;
  }
  if (written) std::filesystem::rename(packed, path, ec);
  if (!written || ec) {
    std::filesystem::remove(packed, ec);
    std::filesystem::remove(tmp, ec);
    throw IoError(path.string() + ": cannot write the NIfTI file");
  }
  if (packed != tmp) std::filesystem::remove(tmp, ec); // the uncompressed one of a .nii.gz
}

// The data as float32 values in this machine's byte order, read here rather than by libnifti's
// nifti_image_load, which replaces NaN and Inf by 0 without a word: a file's non-finite values
// must reach the caller (mri motion refuses them).
std::vector<float> read_floats(const std::filesystem::path &path, const nifti_image &nim) {
  const auto count = static_cast<std::size_t>(nim.nvox) * (nim.datatype == DT_COMPLEX64 ? 2 : 1);
  std::vector<float> f(count);
  znzFile fp = znzopen(nim.iname, "rb", nifti_is_gzfile(nim.iname));
  if (znz_isnull(fp)) throw IoError(path.string() + ": cannot open its data");
  // znzseek: 0 (fseek) or the new offset (gzseek) on success, -1 on failure.
  const bool read = znzseek(fp, static_cast<znz_off_t>(nim.iname_offset), SEEK_SET) >= 0 &&
                    znzread(f.data(), sizeof(float), count, fp) == count;
  znzclose(fp);
  if (!read) throw IoError(path.string() + ": truncated: fewer than the " + std::to_string(count) + " values its header says");
  if (nim.byteorder != nifti_short_order()) nifti_swap_4bytes(static_cast<std::int64_t>(count), f.data());
  return f;
}

// Where the data starts, by the standard (nifti1.h, "DETAILS ABOUT vox_offset"): at (int)vox_offset;
// in a one-file .nii a vox_offset below the header's 352 bytes (NIfTI-2: 544) "is equivalent to
// 352". libnifti 2.0 moves it to 348 instead (the header struct without its 4 extension bytes):
// the extension flag became the first voxel and every value moved by 4 bytes, without a word.
// Refused: a vox_offset that is no position (NaN, infinite), negative in a two-file pair (no
// rule moves it), or past any file (its (int) would overflow).
std::int64_t data_offset(const std::filesystem::path &path, const nifti_image &nim) {
  int version = 0;
  const char *header = nim.fname != nullptr ? nim.fname : path.c_str(); // a pair's .hdr, as libnifti found it
  void *raw = nifti_read_header(header, &version, 0);                    // in this machine's byte order
  if (raw == nullptr) throw IoError(path.string() + ": not a readable NIfTI header");
  const double vox_offset = version == 2 ? static_cast<double>(static_cast<nifti_2_header *>(raw)->vox_offset)
                                         : static_cast<nifti_1_header *>(raw)->vox_offset;
  std::free(raw);
  const bool one_file = nim.nifti_type == NIFTI_FTYPE_NIFTI1_1 || nim.nifti_type == NIFTI_FTYPE_NIFTI2_1;
  const double header_bytes = version == 2 ? 544 : 352;
  const char *why = !std::isfinite(vox_offset)    ? "not a position in the file"
                    : vox_offset < 0 && !one_file ? "a position before the start of the data file"
                    : vox_offset > 0x1p62         ? "past the end of any file"
                                                  : nullptr;
  if (why != nullptr) {
    std::ostringstream os;
    os << path.string() << ": vox_offset = " << vox_offset << ": " << why;
    throw IoError(os.str());
  }
  const double offset = one_file ? std::max(header_bytes, vox_offset) : vox_offset;
  return static_cast<std::int64_t>(offset);
}

// The bytes the header's dims and datatype ask for must be in the data file before they are
// allocated (read_floats; a 352-byte header can ask for 2^60). A .gz file of n bytes holds at most
// 1032 n (deflate's largest ratio). In double: dims up to 2^63 in 7 axes overflow an int64.
void check_data_size(const nifti_image &nim, const std::filesystem::path &path) {
  std::ostringstream dims;
  double voxels = 1;
  for (int a = 1; a <= nim.ndim && a < 8; ++a) {
    voxels *= static_cast<double>(nim.dim[a]);
    dims << (a > 1 ? " x " : "") << nim.dim[a];
  }
  std::error_code ec;
  const std::filesystem::path data = nim.iname != nullptr ? nim.iname : path;
  const double bytes = static_cast<double>(std::filesystem::file_size(data, ec));
  if (ec) throw IoError(path.string() + ": no data file " + data.string());
  const double held =
      nifti_is_gzfile(data.c_str()) ? 1032 * bytes : std::max(0.0, bytes - static_cast<double>(nim.iname_offset));
  if (voxels * nim.nbyper <= held) return;
  std::ostringstream os;
  os << std::fixed << std::setprecision(0) << path.string() << ": dim = " << dims.str() << " of datatype "
     << nim.datatype << " needs " << voxels * nim.nbyper << " bytes, the file holds " << held
     << " after vox_offset " << nim.iname_offset;
  throw IoError(os.str());
}

} // namespace

void check_nifti_geometry(const Grid &grid, std::size_t images, const std::vector<ScannerGeometry> &geometry) {
  if (images > 0) detail::place_images(grid, images, {1, 1, 1}, geometry);
}

NiftiAffine nifti_identity_affine(const Grid &grid, const std::array<double, 3> &voxel_mm) {
  NiftiAffine m{};
  for (int a = 0; a < 3; ++a) m[a][a] = voxel_mm[a], m[a][3] = -static_cast<double>(grid.extent(a) / 2) * voxel_mm[a];
  return m;
}

namespace {

// Written component c = sum_a m[c][a] (displacement along voxel axis a, in voxels).
using ComponentMatrix = std::array<std::array<float, 3>, 3>;
ComponentMatrix displacement_matrix(DisplacementUnits units, const std::array<double, 3> &voxel_mm,
                                    const NiftiAffine &affine) {
  ComponentMatrix m{};
  for (int c = 0; c < 3; ++c)
    for (int a = 0; a < 3; ++a)
      m[c][a] = units == DisplacementUnits::RasMillimetres ? static_cast<float>(affine[c][a])
                : c != a                                   ? 0.0f
                : units == DisplacementUnits::Millimetres  ? static_cast<float>(voxel_mm[c])
                                                           : 1.0f;
  return m;
}

const char *displacement_intent(DisplacementUnits units) {
  switch (units) {
  case DisplacementUnits::Millimetres: return "disp mm ijk";
  case DisplacementUnits::Voxels: return "disp voxels ijk";
  case DisplacementUnits::RasMillimetres: return "disp mm RAS";
  }
  return "";
}

} // namespace

void write_nifti_displacements(const std::filesystem::path &path, const std::vector<DisplacementField> &fields,
                               const std::array<double, 3> &voxel_mm, DisplacementUnits units, const NiftiAffine &affine) {
  const std::string ext = nifti_extension(path);
  check_volumes("write_nifti_displacements: fields", fields, voxel_mm);
  const Grid &g = fields[0].grid();
  const auto t = static_cast<std::int64_t>(fields.size());
  const std::int64_t dims[8] = {5, g.nx(), g.ny(), g.nz(), t, 3, 1, 1};
  const NimPtr nim = new_header(dims, DT_FLOAT32, voxel_mm, affine);
  nim->intent_code = NIFTI_INTENT_DISPVECT;
  std::snprintf(nim->intent_name, sizeof(nim->intent_name), "%s", displacement_intent(units));
  const ComponentMatrix m = displacement_matrix(units, voxel_mm, affine);
  const std::size_t n = static_cast<std::size_t>(g.voxels());
  std::vector<float> data(n * fields.size() * 3);
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const RealVolume *along[3] = {&fields[f].u, &fields[f].v, &fields[f].w};
    for (std::size_t c = 0; c < 3; ++c) {
      float *dst = data.data() + (c * fields.size() + f) * n; // vector component slowest (dim 5)
      for (std::size_t i = 0; i < n; ++i)
        dst[i] = m[c][0] * (*along[0])[i] + m[c][1] * (*along[1])[i] + m[c][2] * (*along[2])[i];
    }
  }
  write_file(path, ext, *nim, data.data());
}

void write_nifti(const std::filesystem::path &path, const std::vector<Image> &images,
                 const std::array<double, 3> &voxel_mm, NiftiValues values,
                 const std::vector<ScannerGeometry> &geometry) {
  const std::string ext = nifti_extension(path);
  check_volumes("write_nifti: images", images, voxel_mm);
  const detail::NiftiPlacement placement = detail::place_images(images[0].grid(), images.size(), voxel_mm, geometry);
  const Grid &g = images[0].grid();
  const std::int64_t dims[8] = {placement.series > 1 ? 4 : 3, g.nx(), g.ny(), g.nz() * placement.positions,
                                placement.series, 1, 1, 1};
  const NimPtr nim = new_header(dims, values == NiftiValues::Complex ? DT_COMPLEX64 : DT_FLOAT32, placement.voxel_mm,
                                placement.affine);
  std::vector<unsigned char> data = payload(images, placement.order, values);
  write_file(path, ext, *nim, data.data());
}

NiftiVolume read_nifti(const std::filesystem::path &path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw IoError(path.string() + ": no such file");
  quiet_nifti();
  const NimPtr nim(nifti_image_read(path.c_str(), 0)); // the header; the data below
  if (!nim) throw IoError(path.string() + ": not a readable NIfTI file");
  if (nim->datatype != DT_FLOAT32 && nim->datatype != DT_COMPLEX64)
    throw IoError(path.string() + ": datatype " + std::to_string(nim->datatype) + " (float32 or complex64 expected)");
  if (nim->ndim > 4) throw IoError(path.string() + ": " + std::to_string(nim->ndim) + " dimensions (at most 4)");
  nim->iname_offset = data_offset(path, *nim);
  check_data_size(*nim, path);
  NiftiVolume v;
  for (int a = 0; a < 4; ++a) v.dims[a] = std::max<std::int64_t>(1, a < nim->ndim ? nim->dim[a + 1] : 1);
  for (int a = 0; a < 3; ++a) v.voxel_mm[a] = nim->pixdim[a + 1];
  v.qform = rows(nim->qto_xyz);
  v.sform = rows(nim->sto_xyz);
  v.values = nim->datatype == DT_COMPLEX64 ? NiftiValues::Complex : NiftiValues::Magnitude;
  const std::vector<float> f = read_floats(path, *nim);
  v.data.resize(static_cast<std::size_t>(nim->nvox));
  if (v.values == NiftiValues::Complex) std::memcpy(static_cast<void *>(v.data.data()), f.data(), f.size() * sizeof(float));
  else std::copy(f.begin(), f.end(), v.data.begin());
  return v;
}

namespace {

DisplacementUnits displacement_units(const std::filesystem::path &path, const std::string &intent) {
  for (DisplacementUnits u : {DisplacementUnits::Voxels, DisplacementUnits::Millimetres, DisplacementUnits::RasMillimetres})
    if (intent == displacement_intent(u)) return u;
  throw IoError(path.string() + ": intent_name \"" + intent +
                "\": expected \"disp voxels ijk\", \"disp mm ijk\" or \"disp mm RAS\" (write_nifti_displacements)");
}

// The inverse of the written matrix m (displacement_matrix): voxels along i, j, k from the stored
// components. Identity for voxels (the values copied, bitwise), diagonal for mm ijk.
std::array<std::array<double, 3>, 3> component_inverse(const std::filesystem::path &path, DisplacementUnits units,
                                                       const std::array<double, 3> &voxel_mm, const NiftiAffine &a) {
  std::array<std::array<double, 3>, 3> r{};
  if (units != DisplacementUnits::RasMillimetres) {
    for (int c = 0; c < 3; ++c) r[c][c] = units == DisplacementUnits::Millimetres ? 1.0 / voxel_mm[c] : 1.0;
    return r;
  }
  const double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
                     a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
  if (!(std::abs(det) > 0) || !std::isfinite(det))
    throw IoError(path.string() + ": the sform's 3x3 part is singular: RAS displacements cannot be turned into voxels");
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const int i1 = (j + 1) % 3, i2 = (j + 2) % 3, j1 = (i + 1) % 3, j2 = (i + 2) % 3;
      r[i][j] = (a[i1][j1] * a[i2][j2] - a[i1][j2] * a[i2][j1]) / det; // adjugate / det
    }
  return r;
}

} // namespace

NiftiDisplacements read_nifti_displacements(const std::filesystem::path &path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw IoError(path.string() + ": no such file");
  quiet_nifti();
  const NimPtr nim(nifti_image_read(path.c_str(), 0));
  if (!nim) throw IoError(path.string() + ": not a readable NIfTI file");
  if (nim->intent_code != NIFTI_INTENT_DISPVECT || nim->datatype != DT_FLOAT32 || nim->ndim != 5 || nim->dim[5] != 3)
    throw IoError(path.string() + ": not displacement fields (intent code " + std::to_string(nim->intent_code) +
                  ", datatype " + std::to_string(nim->datatype) + ", " + std::to_string(nim->ndim) +
                  " dimensions; expected intent 1006, float32, dims (x, y, z, fields, 3))");
  NiftiDisplacements out;
  out.units = displacement_units(path, nim->intent_name);
  for (int a = 0; a < 3; ++a) out.voxel_mm[a] = nim->pixdim[a + 1];
  out.affine = rows(nim->sto_xyz);
  const auto r = component_inverse(path, out.units, out.voxel_mm, out.affine);
  nim->iname_offset = data_offset(path, *nim);
  check_data_size(*nim, path);
  const std::vector<float> f = read_floats(path, *nim);
  const Grid grid(nim->dim[1], nim->dim[2], nim->dim[3]);
  const auto n = static_cast<std::size_t>(grid.voxels()), count = static_cast<std::size_t>(nim->dim[4]);
  for (std::size_t t = 0; t < count; ++t) {
    DisplacementField &field = out.fields.emplace_back(grid);
    RealVolume *along[3] = {&field.u, &field.v, &field.w};
    const float *c[3] = {f.data() + t * n, f.data() + (count + t) * n, f.data() + (2 * count + t) * n};
    for (int a = 0; a < 3; ++a) {
      if (out.units == DisplacementUnits::Voxels) {
        std::copy(c[a], c[a] + n, along[a]->data());
        continue;
      }
      for (std::size_t i = 0; i < n; ++i)
        (*along[a])[i] = static_cast<float>(r[a][0] * c[0][i] + r[a][1] * c[1][i] + r[a][2] * c[2][i]);
    }
  }
  return out;
}

} // namespace mri
