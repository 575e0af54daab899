// NIfTI-1 output and input through libnifti's nifti2_io (mri/io/nifti.hpp).
#include "mri/io/nifti.hpp"

#include <nifti2_io.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unistd.h>

#include "mri/error.hpp"

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

void check_images(const std::vector<Image> &images, const std::array<double, 3> &voxel_mm) {
  if (images.empty()) detail::invalid_argument("write_nifti: images", 0, "nothing to write");
  for (std::size_t i = 1; i < images.size(); ++i)
    if (images[i].grid().extents() != images[0].grid().extents())
      detail::invalid_argument("write_nifti: images[" + std::to_string(i) + "]", "its grid",
                               "differs from images[0]'s");
  for (int a = 0; a < 3; ++a)
    if (!(voxel_mm[a] > 0) || !std::isfinite(voxel_mm[a]))
      detail::invalid_argument("write_nifti: voxel_mm[" + std::to_string(a) + "]", voxel_mm[a],
                               "must be positive and finite");
}

// The header: dims, voxel sizes in mm, and the scanner-frame placement of the header comment.
// libnifti prints its errors to stderr unless its debug level is 0; ours are exceptions.
void quiet_nifti() {
  static std::once_flag once;
  std::call_once(once, [] { nifti_set_debug_level(0); });
}

NimPtr make_header(const std::vector<Image> &images, const std::array<double, 3> &voxel_mm, NiftiValues values) {
  const Grid &g = images[0].grid();
  const auto t = static_cast<std::int64_t>(images.size());
  const std::int64_t dims[8] = {t > 1 ? 4 : 3, g.nx(), g.ny(), g.nz(), t, 1, 1, 1};
  NimPtr nim(nifti_make_new_nim(dims, values == NiftiValues::Complex ? DT_COMPLEX64 : DT_FLOAT32, 0));
  if (!nim) throw IoError("write_nifti: libnifti could not make a header");
  nim->nifti_type = NIFTI_FTYPE_NIFTI1_1; // NIfTI-1: what every reader knows (dims fit in 16 bits)
  for (int a = 0; a < 3; ++a) nim->pixdim[a + 1] = voxel_mm[a];
  nim->dx = voxel_mm[0], nim->dy = voxel_mm[1], nim->dz = voxel_mm[2];
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->qform_code = nim->sform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->quatern_b = nim->quatern_c = nim->quatern_d = 0;
  nim->qfac = 1;
  nim->qoffset_x = -static_cast<double>(g.nx() / 2) * voxel_mm[0];
  nim->qoffset_y = -static_cast<double>(g.ny() / 2) * voxel_mm[1];
  nim->qoffset_z = -static_cast<double>(g.nz() / 2) * voxel_mm[2];
  nim->qto_xyz = nifti_quatern_to_dmat44(0, 0, 0, nim->qoffset_x, nim->qoffset_y, nim->qoffset_z, voxel_mm[0],
                                         voxel_mm[1], voxel_mm[2], 1);
  nim->sto_xyz = nim->qto_xyz;
  nim->qto_ijk = nim->sto_ijk = nifti_dmat44_inverse(nim->qto_xyz);
  return nim;
}

// The voxel values in the file's datatype, series after series.
std::vector<unsigned char> payload(const std::vector<Image> &images, NiftiValues values) {
  const std::size_t n = images[0].size(), bytes = values == NiftiValues::Complex ? sizeof(cfloat) : sizeof(float);
  std::vector<unsigned char> out(n * images.size() * bytes);
  for (std::size_t t = 0; t < images.size(); ++t) {
    unsigned char *dst = out.data() + t * n * bytes;
    if (values == NiftiValues::Complex) {
      std::memcpy(dst, images[t].data(), n * bytes);
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const float m = std::abs(images[t][i]);
      std::memcpy(dst + i * bytes, &m, bytes);
    }
  }
  return out;
}

} // namespace

void write_nifti(const std::filesystem::path &path, const std::vector<Image> &images,
                 const std::array<double, 3> &voxel_mm, NiftiValues values) {
  const std::string ext = nifti_extension(path);
  check_images(images, voxel_mm);
  quiet_nifti();
  std::error_code exists;
  if (!path.parent_path().empty() && !std::filesystem::is_directory(path.parent_path(), exists))
    throw IoError(path.string() + ": cannot write: no folder " + path.parent_path().string()); // libnifti would print
  NimPtr nim = make_header(images, voxel_mm, values);
  std::vector<unsigned char> data = payload(images, values);
  // A temporary name with the same extension (libnifti compresses by it), renamed at the end.
  std::string name(1, '.'); // built in steps: GCC 12 warns falsely (-Wrestrict) on "." + string
  name += path.filename().string();
  name += ".tmp-" + std::to_string(::getpid()) + ext;
  const std::filesystem::path tmp = path.parent_path() / name;
  if (nifti_set_filenames(nim.get(), tmp.c_str(), 0, 1) != 0)
    throw IoError(path.string() + ": libnifti rejected the file name");
  nim->data = data.data();
  // write_data = 3: the data too, and the file left open, so a failed open is seen (NULL);
  // closing it here flushes (and for .gz finishes) the stream.
  znzFile fp = nifti_image_write_hdr_img(nim.get(), 3, "wb");
  nim->data = nullptr; // ours: nifti_image_free must not free it
  bool written = !znz_isnull(fp);
  if (written) znzclose(fp);
  std::error_code ec;
  written = written && std::filesystem::file_size(tmp, ec) > 0 && !ec;
  if (written) std::filesystem::rename(tmp, path, ec);
  if (!written || ec) {
    std::filesystem::remove(tmp, ec);
    throw IoError(path.string() + ": cannot write the NIfTI file");
  }
}

namespace {

// The bytes the header's dims and datatype ask for must be in the data file before libnifti
// allocates them (a 352-byte header can ask for 2^60). A .gz file of n bytes holds at most
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

NiftiVolume read_nifti(const std::filesystem::path &path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw IoError(path.string() + ": no such file");
  quiet_nifti();
  NimPtr nim(nifti_image_read(path.c_str(), 0)); // the header: checked before the data is loaded
  if (!nim) throw IoError(path.string() + ": not a readable NIfTI file");
  if (nim->datatype != DT_FLOAT32 && nim->datatype != DT_COMPLEX64)
    throw IoError(path.string() + ": datatype " + std::to_string(nim->datatype) + " (float32 or complex64 expected)");
  if (nim->ndim > 4) throw IoError(path.string() + ": " + std::to_string(nim->ndim) + " dimensions (at most 4)");
  check_data_size(*nim, path);
  if (nifti_image_load(nim.get()) != 0 || nim->data == nullptr)
    throw IoError(path.string() + ": cannot read its data");
  NiftiVolume v;
  for (int a = 0; a < 4; ++a) v.dims[a] = std::max<std::int64_t>(1, a < nim->ndim ? nim->dim[a + 1] : 1);
  for (int a = 0; a < 3; ++a) v.voxel_mm[a] = nim->pixdim[a + 1];
  v.values = nim->datatype == DT_COMPLEX64 ? NiftiValues::Complex : NiftiValues::Magnitude;
  const auto n = static_cast<std::size_t>(nim->nvox);
  v.data.resize(n);
  if (v.values == NiftiValues::Complex) {
    std::memcpy(v.data.data(), nim->data, n * sizeof(cfloat));
  } else {
    const auto *f = static_cast<const float *>(nim->data);
    for (std::size_t i = 0; i < n; ++i) v.data[i] = f[i];
  }
  return v;
}

} // namespace mri
