// The group check before HDF5 looks names up (lib/io/hdf5_group_guard.hpp) on files HDF5 writes:
// a symbol table B-tree of two levels with a soft link (the old format, libismrmrd's), compact
// and dense new-style groups (the latest format), then the same kinds of damage as the fuzzing
// found (finding 18: a local heap's free list that loops) written into them. The fuzzing input
// itself is in test_ismrmrd.cpp and the replayed regressions.
#include "catch.hpp"
#include "hdf5_group_guard.hpp"
#include "mri/error.hpp"
#include "test_support.hpp"

#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace {

// "dataset" holds `links` hard links to one small dataset (and, in the old format, a soft link).
void write_groups(const std::filesystem::path &path, bool latest, int links) {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (latest) H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  const hid_t group = H5Gcreate2(file, "dataset", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t data = H5Dcreate2(group, "data", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  for (int i = 1; i < links; ++i)
    H5Lcreate_hard(group, "data", group, ("link_" + std::to_string(i)).c_str(), H5P_DEFAULT, H5P_DEFAULT);
  if (!latest) H5Lcreate_soft("/dataset/data", group, "soft", H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(data);
  H5Sclose(scalar);
  H5Gclose(group);
  H5Pclose(fapl);
  H5Fclose(file);
}

// What check_groups says of the file's root group and "dataset": "ok" or the error.
std::string answer(const std::filesystem::path &path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  std::string out = "ok";
  try {
    mri::detail::check_groups(path, file, "dataset");
  } catch (const mri::IoError &e) {
    out = e.what();
  }
  H5Fclose(file);
  return out;
}

std::string file_bytes(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uint64_t u64_at(const std::string &bytes, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, bytes.data() + at, 8); // little-endian, as HDF5 stores it (x86)
  return v;
}

void write_at(const std::filesystem::path &path, std::size_t at, const std::string &what) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(what.data(), static_cast<std::streamsize>(what.size()));
}

std::string u64_bytes(std::uint64_t v) { return std::string(reinterpret_cast<const char *>(&v), 8); }

} // namespace

TEST_CASE("hdf5 group guard: symbol tables and new-style groups pass; damaged ones are refused", "[ismrmrd]") {
  mri::test::TempDir dir("group-guard");
  const std::filesystem::path old = dir / "old.h5", compact = dir / "compact.h5", dense = dir / "dense.h5";
  write_groups(old, false, 300); // 8 entries a symbol table node: a B-tree of level 1
  write_groups(compact, true, 4);
  write_groups(dense, true, 20); // past 8 links: a fractal heap, left to HDF5
  CHECK(answer(old) == "ok");
  CHECK(answer(compact) == "ok");
  CHECK(answer(dense) == "ok");

  SECTION("a local heap's free list that comes back to its own block (finding 18)") {
    // The root group's heap is the file's first: "HEAP", version, 3 reserved, data size, the
    // first free block's offset, the data's address (8-byte lengths and addresses).
    const std::string bytes = file_bytes(old);
    const std::size_t heap = bytes.find("HEAP");
    REQUIRE(heap != std::string::npos);
    const std::uint64_t first_free = u64_at(bytes, heap + 16), data = u64_at(bytes, heap + 24);
    REQUIRE(first_free != 1); // the root heap has room left
    write_at(old, data + first_free, u64_bytes(first_free));
    CHECK(answer(old) == old.string() + ": the root group: its local heap's free list loops (back to the block at "
                                        "offset " + std::to_string(first_free) + ")");
  }
  SECTION("a symbol table node with more entries than it holds") {
    const std::string bytes = file_bytes(old);
    const std::size_t node = bytes.rfind("SNOD"); // one of "dataset"'s: written after the root's
    REQUIRE(node != std::string::npos);
    write_at(old, node + 6, std::string("\x09\x00", 2)); // 9 of 2 K = 8
    CHECK(answer(old) == old.string() + ": dataset: the symbol table node at " + std::to_string(node) +
                             " has 9 entries, more than 8");
  }
  SECTION("a link message whose name runs past the message") {
    // Version 1, no flags (a hard link, a 1-byte name length), "link_1"'s length made 255.
    const std::string link("\x01\x00\x06link_1", 9);
    const std::size_t at = file_bytes(compact).find(link);
    REQUIRE(at != std::string::npos);
    write_at(compact, at + 2, "\xff");
    CHECK(answer(compact) == compact.string() + ": dataset: a link message ends inside what it encodes");
  }
}
