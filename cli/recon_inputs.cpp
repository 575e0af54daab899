// Reading `mri recon`'s inputs: ISMRMRD (--in) or BART files (--traj, --kspace [--weights]).
#include "recon_inputs.hpp"

#include <algorithm>
#include <utility>

#include "field_inputs.hpp"
#include "report.hpp"

namespace mri::cli {
namespace {

std::string item_label(const IsmrmrdItem &it) {
  return "slice " + std::to_string(it.slice) + " contrast " + std::to_string(it.contrast) + " repetition " +
         std::to_string(it.repetition) + " average " + std::to_string(it.average) + " phase " +
         std::to_string(it.phase) + " set " + std::to_string(it.set);
}

void tell_counts(const std::string &file, const IsmrmrdData &d, std::size_t items, bool quiet) {
  for (const std::string &note : d.notes)
    if (!quiet || note.rfind("warning", 0) == 0) say("recon", file + ": " + note);
  const IsmrmrdCounts &c = d.counts;
  if (!quiet)
    say("recon", file + ": " + std::to_string(c.acquisitions) + " acquisitions: " + std::to_string(c.imaging) +
                     " imaging in " + std::to_string(items) + " item(s), skipped " + std::to_string(c.noise) +
                     " noise, " + std::to_string(c.navigation) + " navigator, " + std::to_string(c.other) +
                     " other, " + std::to_string(c.other_encoding) + " of other encoding spaces");
}

ReconInputs load_h5(const InputArgs &a, bool quiet) {
  IsmrmrdReadOptions options;
  options.units = a.units;
  options.group = a.group;
  if (const std::optional<double> offset = ismrmrd_times_offset(a.readout_times)) {
    options.sample_times = true; // the acquisitions' sample_time_us and center_sample
    options.time_offset = *offset;
  }
  auto reader = std::make_unique<IsmrmrdReader>(a.in, options);
  const IsmrmrdHeader &h = reader->header();
  ReconInputs r;
  r.grid = h.encoded_grid();
  if (!a.matrix.empty() && parse_matrix(a.matrix, "--matrix").extents() != r.grid.extents())
    throw UsageError("--matrix = " + a.matrix + " contradicts the file's encoded matrix; leave it out for ISMRMRD input");
  r.output = Grid(std::min(r.grid.nx(), std::int64_t{h.recon_matrix[0]}),
                  std::min(r.grid.ny(), std::int64_t{h.recon_matrix[1]}),
                  std::min(r.grid.nz(), std::int64_t{h.recon_matrix[2]}));
  for (int ax = 0; ax < 3; ++ax) // 1 mm where the header has no FOV
    if (h.recon_fov_mm[ax] > 0) r.voxel_mm[ax] = h.recon_fov_mm[ax] / h.recon_matrix[ax];
  for (const IsmrmrdItem &it : reader->items()) r.problems.push_back({item_label(it), {}, {}, it.geometry});
  r.ismrmrd = ReconInputs::Ismrmrd{std::move(reader), a.in, a.prewhiten, quiet, {}};
  return r;
}

// The file's counts, notes and noise into the report, once it is read.
void describe_h5(ReconInputs &r, const IsmrmrdData &d) {
  const ReconInputs::Ismrmrd &src = *r.ismrmrd;
  tell_counts(src.file, d, r.problems.size(), src.quiet);
  r.source = to_json(d);
  r.source["items"] = r.problems.size(); // d holds none: they were handed over
  const std::vector<cdouble> cov = noise_covariance(d.noise, d.header.coils);
  for (std::size_t c = 0; c * c < cov.size(); ++c)
    r.source["noise_variance"].push_back(cov[c * static_cast<std::size_t>(d.header.coils) + c].real());
  const bool whiten = src.prewhiten && !cov.empty();
  r.source["prewhitened"] = whiten;
  if (!src.quiet && !cov.empty())
    say("recon", src.file + ": noise covariance of " + std::to_string(d.counts.noise) + " noise scan(s): " +
                     (whiten ? "samples prewhitened" : "not applied (--no-prewhiten)"));
  r.source["orientation"] = scanner_geometry(r).empty() ? "identity: an acquisition without read/phase/slice_dir"
                                                        : "from the acquisitions' read/phase/slice_dir and position";
}

// The voxel sizes of --fov for a BART grid (mm per voxel).
std::vector<double> voxel_sizes(const InputArgs &a, const Grid &grid) {
  const std::vector<double> fov = parse_sizes(a.fov, "--fov"); // mm per axis
  if (static_cast<int>(fov.size()) != grid.dims())
    throw UsageError("--fov = " + a.fov + ": one size per axis of --matrix " + a.matrix);
  std::vector<double> voxel;
  for (std::size_t ax = 0; ax < fov.size(); ++ax)
    voxel.push_back(fov[ax] / static_cast<double>(grid.extent(static_cast<int>(ax))));
  return voxel;
}

ReconInputs load_cfl(const InputArgs &a) {
  ReconInputs r;
  r.bart = true;
  r.grid = r.output = parse_matrix(a.matrix, "--matrix");
  const bart::CflArray traj = bart::read_cfl(cfl_base(a.traj));
  const Trajectory t = bart::to_trajectory(traj, r.grid.dims());
  bart::CflArray k = bart::read_cfl(cfl_base(a.kspace));
  if (k.data.size() % t.size() != 0)
    throw InvalidArgument(a.kspace + ": " + std::to_string(k.data.size()) + " samples are not a whole number of coils of " +
                          std::to_string(t.size()) + " trajectory points (" + a.traj + ")");
  std::vector<float> w;
  if (!a.weights.empty())
    for (const cfloat v : bart::read_cfl(cfl_base(a.weights)).data) w.push_back(v.real());
  const int coils = static_cast<int>(k.data.size() / t.size());
  std::vector<float> times;
  if (!a.readout_times.empty())
    times = read_readout_times(a.readout_times, t.size(), traj.dims.size() > 1 ? static_cast<std::size_t>(traj.dims[1]) : 1);
  r.problems.push_back({a.kspace, KSpaceData(t, std::move(k.data), std::move(w), coils, std::move(times)), {}, std::nullopt});
  if (!a.fov.empty()) std::copy_n(voxel_sizes(a, r.grid).begin(), r.grid.dims(), r.voxel_mm.begin());
  r.source = {{"traj", a.traj},   {"kspace", a.kspace}, {"weights", a.weights}, {"coils", coils},
              {"orientation", "identity: BART files carry no scanner geometry"}};
  return r;
}

} // namespace

void check_inputs(const InputArgs &a) {
  const bool file_times = a.readout_times == "ismrmrd" || a.readout_times.rfind("ismrmrd:", 0) == 0;
  if (!a.in.empty() && !a.readout_times.empty() && !file_times)
    throw UsageError("--readout-times with ISMRMRD input (--in) takes ismrmrd[:OFFSET_SECONDS]: the file's "
                     "sample_time_us and center_sample");
  if (a.in.empty() && file_times) throw UsageError("--readout-times " + a.readout_times + " needs ISMRMRD input (--in)");
  if (!a.in.empty() && (!a.traj.empty() || !a.kspace.empty() || !a.weights.empty()))
    throw UsageError("--in (ISMRMRD) and --traj/--kspace/--weights (BART) contradict each other: give one");
  if (!a.matrix.empty()) (void)parse_matrix(a.matrix, "--matrix");
  if (!a.in.empty()) return;
  if (a.traj.empty() || a.kspace.empty()) throw UsageError("give --in FILE.h5, or --traj T and --kspace K (BART)");
  if (a.matrix.empty()) throw UsageError("--matrix is needed with BART inputs");
  if (!a.fov.empty()) (void)voxel_sizes(a, parse_matrix(a.matrix, "--matrix"));
}

ReconInputs load_inputs(const InputArgs &a, bool quiet) {
  return a.in.empty() ? load_cfl(a) : load_h5(a, quiet);
}

void read_problems(ReconInputs &in, const std::function<void(std::size_t)> &ready) {
  if (!in.ismrmrd) {
    for (std::size_t i = 0; i < in.problems.size(); ++i) ready(i);
    return;
  }
  ReconInputs::Ismrmrd &src = *in.ismrmrd;
  bool first = true;
  const IsmrmrdData d = src.reader->read([&](std::size_t i, IsmrmrdItem &&item, const IsmrmrdData &file) {
    if (std::exchange(first, false) && src.prewhiten) // every noise scan is in before the first item
      src.covariance = noise_covariance(file.noise, file.header.coils);
    in.problems[i].data = std::move(item.data);
    in.problems[i].readouts = std::move(item.readouts);
    ready(i);
  });
  describe_h5(in, d);
}

KSpaceData take_data(ReconInputs &in, std::size_t i) {
  KSpaceData data = std::move(in.problems[i].data);
  if (!in.ismrmrd || in.ismrmrd->covariance.empty()) return data;
  return prewhiten(data, in.ismrmrd->covariance);
}

std::vector<ScannerGeometry> scanner_geometry(const ReconInputs &in) {
  std::vector<ScannerGeometry> g;
  for (const ReconProblem &p : in.problems) {
    if (!p.geometry) return {};
    g.push_back(*p.geometry);
  }
  return g;
}

Image centre_crop(const Image &image, const Grid &to) {
  const Grid &from = image.grid();
  if (from.extents() == to.extents()) return image;
  Image out(to);
  const std::int64_t ox = from.nx() / 2 - to.nx() / 2, oy = from.ny() / 2 - to.ny() / 2, oz = from.nz() / 2 - to.nz() / 2;
  for (std::int64_t z = 0; z < to.nz(); ++z)
    for (std::int64_t y = 0; y < to.ny(); ++y)
      for (std::int64_t x = 0; x < to.nx(); ++x) out.at(x, y, z) = image.at(x + ox, y + oy, z + oz);
  return out;
}

} // namespace mri::cli
