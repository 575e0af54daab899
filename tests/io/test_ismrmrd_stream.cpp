// The streaming ISMRMRD reader (IsmrmrdReader) against the whole-file one (read_ismrmrd): the
// same items, bit for bit, handed over as soon as each is complete (slice after slice), at the
// end (interleaved, or while the units are undecided), and a file damaged mid-way.
#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/io/ismrmrd.hpp"
#include "mri/phantom.hpp"
#include "answer_within.hpp"
#include "test_support.hpp"

#include <ismrmrd/dataset.h>

using namespace mri;

namespace {

constexpr int kReadouts = 128, kSlices = 4; // 512 acquisitions: two of the reader's blocks

// kSlices slices of 2-coil radial phantom data, slice after slice (each with its own geometry
// and noise), two noise scans first.
void write_slices(const std::filesystem::path &path, TrajUnits units) {
  const Grid grid(16, 16);
  const Trajectory t = traj::radial(grid, kReadouts, 16);
  std::vector<KSpaceData> data;
  IsmrmrdWriteInput in;
  in.header.encoded_matrix = in.header.recon_matrix = {16, 16, 1};
  in.header.encoded_fov_mm = in.header.recon_fov_mm = {32, 32, 4};
  in.header.trajectory = "radial";
  in.header.coils = 2;
  for (int s = 0; s < kSlices; ++s) {
    std::vector<cfloat> k = Phantom::shepp_logan_2d().kspace(t, grid);
    const std::size_t m = k.size();
    for (std::size_t i = 0; i < m; ++i) k.push_back(k[i] * cfloat(0.1f * static_cast<float>(s), 0.5f));
    data.emplace_back(t, std::move(k), std::vector<float>{}, 2);
  }
  for (int s = 0; s < kSlices; ++s) {
    ScannerGeometry g;
    g.read_dir = {1, 0, 0}, g.phase_dir = {0, 1, 0}, g.slice_dir = {0, 0, 1}, g.position = {0, 0, 4.0 * s};
    in.slices.push_back({&data[static_cast<std::size_t>(s)], g});
  }
  in.readouts = kReadouts;
  in.units = units;
  for (int scan = 0; scan < 2; ++scan) {
    std::vector<cfloat> n;
    for (int i = 0; i < 2 * 64; ++i) n.emplace_back(0.01f * static_cast<float>(i % 7), -0.02f * static_cast<float>(i % 5 + scan));
    in.noise.push_back(std::move(n));
  }
  write_ismrmrd(path, in);
}

// The acquisitions of `from` rewritten into `to` with the slices' readouts interleaved (readout r
// of every slice, then r + 1 ...), a navigator after every slice round and one noise scan moved
// to the middle: every item completes at the end, after the last noise scan.
void write_interleaved(const std::filesystem::path &from, const std::filesystem::path &to) {
  ISMRMRD::Dataset in(from.c_str(), "dataset", false);
  std::string xml;
  in.readHeader(xml);
  std::vector<ISMRMRD::Acquisition> noise, image;
  for (std::uint32_t i = 0; i < in.getNumberOfAcquisitions(); ++i) {
    ISMRMRD::Acquisition a;
    in.readAcquisition(i, a);
    (a.isFlagSet(ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT) ? noise : image).push_back(a);
  }
  ISMRMRD::Dataset out(to.c_str(), "dataset", true);
  out.writeHeader(xml);
  out.appendAcquisition(noise[0]);
  for (int r = 0; r < kReadouts; ++r) {
    if (r == kReadouts / 2) out.appendAcquisition(noise[1]);
    for (int s = 0; s < kSlices; ++s) out.appendAcquisition(image[static_cast<std::size_t>(s * kReadouts + r)]);
    ISMRMRD::Acquisition nav = image[static_cast<std::size_t>(r)];
    nav.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_NAVIGATION_DATA);
    out.appendAcquisition(nav);
  }
}

struct Streamed {
  std::vector<IsmrmrdItem> items;
  std::vector<std::size_t> order;          // the items' indices as handed over
  std::vector<std::size_t> imaging_before; // acquisitions read when each was handed over
  IsmrmrdData rest;
};

Streamed stream(const std::filesystem::path &path, IsmrmrdReadOptions options = {}) {
  IsmrmrdReader reader(path, options);
  Streamed s;
  s.items.resize(reader.items().size());
  for (std::size_t i = 0; i < s.items.size(); ++i) {
    CHECK(reader.items()[i].data.trajectory().size() == 0); // the plan carries no data
    s.items[i].slice = -1;
  }
  s.rest = reader.read([&](std::size_t i, IsmrmrdItem &&item, const IsmrmrdData &file) {
    CHECK(file.noise.size() == 2); // every noise scan first
    CHECK(item.slice == reader.items()[i].slice);
    s.order.push_back(i);
    s.imaging_before.push_back(file.counts.imaging);
    s.items[i] = std::move(item);
  });
  return s;
}

void check_same_items(const Streamed &s, const IsmrmrdData &whole) {
  REQUIRE(s.items.size() == whole.items.size());
  for (std::size_t i = 0; i < whole.items.size(); ++i) {
    const IsmrmrdItem &a = s.items[i], &b = whole.items[i];
    CHECK(std::tie(a.slice, a.contrast, a.repetition, a.average, a.phase, a.set) ==
          std::tie(b.slice, b.contrast, b.repetition, b.average, b.phase, b.set));
    REQUIRE(a.geometry.has_value() == b.geometry.has_value());
    if (a.geometry) CHECK(a.geometry->position == b.geometry->position);
    CHECK(a.data.samples() == b.data.samples()); // bit for bit
    REQUIRE(a.data.trajectory().size() == b.data.trajectory().size());
    for (std::size_t m = 0; m < a.data.trajectory().size(); ++m) {
      CHECK(a.data.trajectory()[m].kx == b.data.trajectory()[m].kx);
      CHECK(a.data.trajectory()[m].ky == b.data.trajectory()[m].ky);
    }
  }
}

void check_same(const Streamed &s, const IsmrmrdData &whole) {
  check_same_items(s, whole);
  CHECK(s.rest.items.empty());
  CHECK(s.rest.counts.imaging == whole.counts.imaging);
  CHECK(s.rest.counts.noise == whole.counts.noise);
  CHECK(s.rest.counts.navigation == whole.counts.navigation);
  CHECK(s.rest.noise == whole.noise);
  CHECK(s.rest.units == whole.units);
  CHECK(s.rest.notes == whole.notes);
}

} // namespace

TEST_CASE("ismrmrd stream: slice after slice, each item as soon as its last readout is read", "[ismrmrd]") {
  test::TempDir dir("stream");
  write_slices(dir / "ms.h5", TrajUnits::CyclesPerFov);
  const IsmrmrdData whole = read_ismrmrd(dir / "ms.h5");
  REQUIRE(whole.items.size() == kSlices);
  const Streamed s = stream(dir / "ms.h5");
  check_same(s, whole);
  CHECK(s.order == std::vector<std::size_t>{0, 1, 2, 3});
  for (std::size_t i = 0; i < kSlices; ++i) CHECK(s.imaging_before[i] == (i + 1) * kReadouts); // not one more
}

TEST_CASE("ismrmrd stream: interleaved slices with noise scans and navigators complete at the end", "[ismrmrd]") {
  test::TempDir dir("stream");
  write_slices(dir / "ms.h5", TrajUnits::CyclesPerFov);
  write_interleaved(dir / "ms.h5", dir / "mixed.h5");
  const IsmrmrdData whole = read_ismrmrd(dir / "mixed.h5");
  CHECK(whole.counts.navigation == kReadouts);
  check_same(stream(dir / "mixed.h5"), whole);
  const Streamed s = stream(dir / "mixed.h5");
  check_same_items(s, read_ismrmrd(dir / "ms.h5")); // the same items as the ordered file
  CHECK(s.order == std::vector<std::size_t>{0, 1, 2, 3});
  for (std::size_t i = 0; i < kSlices; ++i) // each at its own last readout, in the last round
    CHECK(s.imaging_before[i] == kSlices * (kReadouts - 1) + i + 1);
}

TEST_CASE("ismrmrd stream: normalised units (auto) hold the items until the file's largest |k| is known", "[ismrmrd]") {
  test::TempDir dir("stream");
  write_slices(dir / "norm.h5", TrajUnits::Normalized);
  const IsmrmrdData whole = read_ismrmrd(dir / "norm.h5");
  REQUIRE(whole.units == TrajUnits::Normalized);
  const Streamed s = stream(dir / "norm.h5");
  check_same(s, whole);
  CHECK(s.imaging_before[0] == kSlices * kReadouts); // Auto could not settle before the end
  IsmrmrdReadOptions normalized;
  normalized.units = TrajUnits::Normalized; // said: each item at once
  const Streamed said = stream(dir / "norm.h5", normalized);
  check_same(said, read_ismrmrd(dir / "norm.h5", normalized));
  CHECK(said.imaging_before[0] == kReadouts);
}

// The global-heap guard (lib/io/hdf5_heap_guard.hpp) checks each block's collections just before
// HDF5 reads the block: the damage late in the file is found when the reader reaches it.
TEST_CASE("ismrmrd stream: a file damaged mid-way: the complete items first, then an error naming the file", "[ismrmrd]") {
  test::TempDir dir("stream");
  write_slices(dir / "bad.h5", TrajUnits::CyclesPerFov);
  REQUIRE(test::damage_late_heap(dir / "bad.h5"));
  const auto names_file = Catch::Matchers::Predicate<IoError>([&](const IoError &e) {
    return std::string(e.what()).find((dir / "bad.h5").string() + ": dataset/data: element ") == 0;
  });
  IsmrmrdReader reader(dir / "bad.h5");
  REQUIRE(reader.items().size() == kSlices); // the headers are whole
  std::vector<std::size_t> got;
  CHECK_THROWS_MATCHES(reader.read([&](std::size_t i, IsmrmrdItem &&, const IsmrmrdData &) { got.push_back(i); }),
                       IoError, names_file);
  CHECK(got == std::vector<std::size_t>{0}); // slice 0 lies in the first block of 256 acquisitions, slice 1 does not
  CHECK_THROWS_MATCHES(read_ismrmrd(dir / "bad.h5"), IoError, names_file);
}

TEST_CASE("ismrmrd stream: a late global heap HDF5 1.10.8 would loop on is refused at its block and never loaded", "[ismrmrd]") {
  test::TempDir dir("stream");
  write_slices(dir / "loop.h5", TrajUnits::CyclesPerFov);
  REQUIRE(test::loop_late_heap(dir / "loop.h5"));
  // Opening (the header, every acquisition's header) and the blocks before must not load the
  // collection, nor may the block that names it: HDF5 would never return.
  const std::string answer = test::answer_within(30, [&] {
    std::string items;
    try {
      IsmrmrdReader reader(dir / "loop.h5");
      (void)reader.read([&](std::size_t i, IsmrmrdItem &&, const IsmrmrdData &) { items += std::to_string(i) + ";"; });
    } catch (const IoError &e) {
      return items + e.what();
    }
    return items + "read";
  });
  CHECK_THAT(answer, test::contains("0;" + (dir / "loop.h5").string() + ": dataset/data: element ") &&
                         test::contains("object 0 at byte 16 of its 4096 has size 0, which is smaller than its own header"));
}
