// The group check before HDF5 looks names up (lib/io/hdf5_group_guard.hpp) on files HDF5 writes:
// a symbol table B-tree of two levels with a soft link (the old format, libismrmrd's), compact
// and dense new-style groups (the latest format), then the same kinds of damage as the fuzzing
// found (finding 18: a local heap's free list that loops) written into them. The fuzzing input
// itself is in test_ismrmrd.cpp and the replayed regressions. Dense storage (fractal heap, v2
// B-trees) is damaged with its checksums made right again, as a made file would have them: HDF5
// verifies them, and a test that left them wrong would show only that.
#include "catch.hpp"
#include "../../lib/io/hdf5_group_guard.hpp"
#include "mri/error.hpp"
#include "mri/io/ismrmrd.hpp"
#include "mri/phantom.hpp"
#include "test_support.hpp"

#include <hdf5.h>

#include <chrono>
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

std::string le_bytes(std::uint64_t v, std::size_t n) { return u64_bytes(v).substr(0, n); }

// Bob Jenkins' lookup3 hashlittle with seed 0: HDF5's metadata checksum.
std::uint32_t lookup3(const std::string &s) {
  const auto *k = reinterpret_cast<const unsigned char *>(s.data());
  std::size_t n = s.size();
  const auto rot = [](std::uint32_t x, int r) { return x << r | x >> (32 - r); };
  const auto word = [&](std::size_t i) {
    std::uint32_t w = 0;
    for (std::size_t j = 0; j < 4 && i + j < n; ++j) w |= std::uint32_t{k[i + j]} << 8 * j;
    return w;
  };
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeef + static_cast<std::uint32_t>(n);
  std::size_t i = 0;
  for (; n - i > 12; i += 12) {
    a += word(i), b += word(i + 4), c += word(i + 8);
    a -= c, a ^= rot(c, 4), c += b;
    b -= a, b ^= rot(a, 6), a += c;
    c -= b, c ^= rot(b, 8), b += a;
    a -= c, a ^= rot(c, 16), c += b;
    b -= a, b ^= rot(a, 19), a += c;
    c -= b, c ^= rot(b, 4), b += a;
  }
  if (n == i) return c;
  a += word(i), b += word(i + 4), c += word(i + 8);
  c ^= b, c -= rot(b, 14);
  a ^= c, a -= rot(c, 11);
  b ^= a, b -= rot(a, 25);
  c ^= b, c -= rot(b, 16);
  a ^= c, a -= rot(c, 4);
  b ^= a, b -= rot(a, 14);
  c ^= b, c -= rot(b, 24);
  return c;
}

// A file's bytes, patched, each structure's checksum (over [from, at)) made right again.
struct Patched {
  std::string bytes;
  std::uint64_t u(std::size_t at, std::size_t n) const {
    std::uint64_t v = 0;
    std::memcpy(&v, bytes.data() + at, n);
    return v;
  }
  Patched &set(std::size_t at, const std::string &what) {
    bytes.replace(at, what.size(), what);
    return *this;
  }
  Patched &seal(std::size_t from, std::size_t at) {
    return set(at, le_bytes(lookup3(bytes.substr(from, at - from)), 4));
  }
  void save(const std::filesystem::path &path) const {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
};

// A radial ISMRMRD file of write_ismrmrd, copied into one of the latest format whose root group
// and "dataset" keep their links in dense storage (a fractal heap and a name index from the first
// link on), "dataset" with its creation order indexed too and `extra` more links (300: an
// indirect block in the heap, a name index of depth 1).
void write_dense_ismrmrd(const std::filesystem::path &dir, const std::filesystem::path &path, int extra) {
  const mri::Grid grid{16, 16};
  mri::Trajectory t = mri::traj::radial(grid, 8, 16);
  std::vector<mri::cfloat> s = mri::Phantom::shepp_logan_2d().kspace(t, grid);
  const mri::KSpaceData data(std::move(t), std::move(s), {}, 1);
  mri::IsmrmrdWriteInput in;
  in.header.encoded_matrix = in.header.recon_matrix = {16, 16, 1};
  in.header.encoded_fov_mm = in.header.recon_fov_mm = {64, 64, 5};
  in.header.trajectory = "radial";
  in.header.coils = 1;
  in.slices = {{&data, std::nullopt}};
  in.readouts = 8;
  mri::write_ismrmrd(dir / "plain.h5", in);

  const hid_t source = H5Fopen((dir / "plain.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE), gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  H5Pset_link_phase_change(fcpl, 0, 0);
  H5Pset_link_phase_change(gcpl, 0, 0);
  H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  const hid_t group = H5Gcreate2(file, "dataset", H5P_DEFAULT, gcpl, H5P_DEFAULT);
  REQUIRE(H5Ocopy(source, "dataset/xml", group, "xml", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  REQUIRE(H5Ocopy(source, "dataset/data", group, "data", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  for (int i = 0; i < extra; ++i)
    H5Lcreate_hard(group, "xml", group, ("extra_" + std::to_string(i)).c_str(), H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(group);
  H5Fclose(file);
  for (const hid_t p : {fapl, fcpl, gcpl}) H5Pclose(p);
  H5Fclose(source);
}

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

// Each damage below is written with its structure's checksum right. What HDF5 1.10.8 does with
// the same bytes without the check (H5Lexists of dataset/data, dataset/xml and an absent name,
// H5Gget_info, H5Literate by name and by creation order; tried once): a root node
// said to hold 60000 records, and a huge object's heap ID, crash it (SIGSEGV), as did a damaged
// huge-object B-tree address when the file closed (a mutation: the regression input
// dense-heap-huge-btree-address.h5); a name index of
// depth 60000 corrupts its heap (abort in free); a tree total of 2^40 records is reported as the
// group's link count (what an iteration sizes its table by). Of the rest it catches the heap's
// sizes, the heap's root address, a loop of B-tree nodes, a record's heap offset or length and a
// link message that runs past its object itself (a clean error), or is not misled by them in
// these calls (a heap block listed twice): the check refuses them all the same, since what HDF5
// catches depends on which names a call compares.
TEST_CASE("hdf5 group guard: dense link storage passes and is read; damaged heaps and B-trees are refused",
          "[ismrmrd]") {
  mri::test::TempDir dir("dense-guard");
  const std::filesystem::path small = dir / "small.h5", large = dir / "large.h5", bad = dir / "bad.h5";
  write_dense_ismrmrd(dir.path(), small, 0);
  write_dense_ismrmrd(dir.path(), large, 300);
  CHECK(answer(small) == "ok");
  CHECK(answer(large) == "ok");
  const mri::IsmrmrdData plain = mri::read_ismrmrd(dir / "plain.h5"), dense = mri::read_ismrmrd(large);
  CHECK(dense.counts.acquisitions == plain.counts.acquisitions);
  REQUIRE(dense.items.size() == 1);
  REQUIRE(plain.items.size() == 1);
  CHECK(dense.items[0].data.samples() == plain.items[0].data.samples());

  // The dataset group's structures (the root group's are written first): its fractal heap, then
  // its name index and creation-order index (8-byte addresses and lengths).
  Patched p{file_bytes(large)};
  const std::size_t heap = p.bytes.rfind("FRHP"), names = p.bytes.find("BTHD", p.bytes.find("BTHD") + 4);
  const std::size_t order = p.bytes.find("BTHD", names + 4), root_block = p.bytes.find("FHIB");
  REQUIRE(order != std::string::npos);
  REQUIRE(root_block != std::string::npos);
  REQUIRE(p.u(heap + 132, 8) == root_block);
  const std::size_t heap_sum = heap + 142, names_sum = names + 34, order_sum = order + 34;
  const std::size_t rows = p.u(heap + 140, 2), root_block_sum = root_block + 17 + rows * 4 * 8;
  // The name index: a root node of depth 1, its records (hash, heap ID: 11 bytes), then its
  // pointers (address, record count of the child: 9 bytes); the first leaf's records.
  REQUIRE(p.u(names + 12, 2) == 1);
  const std::size_t root = p.u(names + 16, 8), root_records = p.u(names + 24, 2);
  const std::size_t pointers = root + 6 + root_records * 11, root_sum = pointers + (root_records + 1) * 9;
  const std::size_t leaf = p.u(pointers, 8), leaf_sum = leaf + 6 + p.u(pointers + 8, 1) * 11;
  const auto refused = [&](Patched damaged, const std::string &what) {
    damaged.save(bad);
    const auto start = std::chrono::steady_clock::now();
    const std::string got = answer(bad);
    INFO(got);
    CHECK(got.rfind(bad.string() + ": dataset: ", 0) == 0);
    CHECK(got.find(what) != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  };

  SECTION("the fractal heap's header") {
    refused(Patched(p).set(heap + 110, le_bytes(3, 2)).seal(heap, heap_sum), "a table width of 3, not a power of 2");
    refused(Patched(p).set(heap + 128, le_bytes(200, 2)).seal(heap, heap_sum), "a maximum size of 2^200 bytes");
    refused(Patched(p).set(heap + 112, u64_bytes(1000)).seal(heap, heap_sum), "has blocks of 1000 to 65536 bytes");
    refused(Patched(p).set(heap + 22, u64_bytes(1000)).seal(heap, heap_sum),
            "has huge objects (a B-tree at 1000): not checked");
    refused(Patched(p).set(heap + 140, le_bytes(60000, 2)).seal(heap, heap_sum),
            "a root indirect block of 60000 rows, more than the 22");
    refused(Patched(p).set(heap + 132, u64_bytes(1ull << 40)).seal(heap, heap_sum),
            "indirect block at 1099511627776 of " + std::to_string(root_block_sum + 4 - root_block) +
                " bytes is not inside the file");
  }
  SECTION("the fractal heap's blocks") {
    // Its second direct block given the first one's address: one block reached twice.
    refused(Patched(p).set(root_block + 25, p.bytes.substr(root_block + 17, 8)).seal(root_block, root_block_sum),
            "its fractal heap's block at " + std::to_string(p.u(root_block + 17, 8)) + " is reached twice");
    refused(Patched(p).set(root_block + 5, u64_bytes(heap + 1)).seal(root_block, root_block_sum),
            "says it is at offset 0 of the heap at " + std::to_string(heap + 1));
  }
  SECTION("the name index's header and nodes") {
    refused(Patched(p).set(names + 12, le_bytes(60000, 2)).seal(names, names_sum),
            "its link name index has a depth of 60000, more than nodes of 512 bytes can make");
    refused(Patched(p).set(names + 24, le_bytes(60000, 2)).seal(names, names_sum),
            "is said to hold 60000 records, more than the 24 it can");
    refused(Patched(p).set(names + 26, u64_bytes(1ull << 40)).seal(names, names_sum),
            "its link name index's header says it holds 1099511627776 records; its nodes hold 302");
    refused(Patched(p).set(names + 10, le_bytes(200, 2)).seal(names, names_sum), "records of 200 bytes, not 11");
    refused(Patched(p).set(order + 26, u64_bytes(5)).seal(order, order_sum),
            "its creation-order index's header says it holds 5 records");
    refused(Patched(p).set(pointers + 8, le_bytes(200, 1)).seal(root, root_sum),
            "node at " + std::to_string(leaf) + " (depth 0) is said to hold 200 records, more than the 45 it can");
    refused(Patched(p).set(pointers + 9, u64_bytes(leaf)).seal(root, root_sum),
            "node at " + std::to_string(leaf) + " is reached twice");
  }
  SECTION("a record's heap ID") {
    // The first leaf's first record: hash (4), then the ID: flags, offset (4), length (2).
    refused(Patched(p).set(leaf + 11, le_bytes(0x7fff0000, 4)).seal(leaf, leaf_sum),
            "at heap offset 2147418112 is not inside the objects of a direct block");
    refused(Patched(p).set(leaf + 15, le_bytes(60000, 2)).seal(leaf, leaf_sum),
            "a fractal heap object of 60000 bytes");
    refused(Patched(p).set(leaf + 10, std::string(1, '\x10')).seal(leaf, leaf_sum),
            "a huge object's fractal heap ID: not checked");
  }
  SECTION("a link message in the heap") {
    // The small file's dataset heap has one direct block (512 bytes, its checksum at 17 over the whole
    // block with the field zeroed); "data"'s message: version 1, flags 0x04 (a creation order of
    // 8 bytes), then the name's length (1 byte) and the name, made 255 bytes long.
    Patched s{file_bytes(small)};
    const std::size_t name = s.bytes.find("\x04" "data") + 1, block = s.bytes.rfind("FHDB", name);
    REQUIRE(block != std::string::npos);
    REQUIRE(name - block < 512);
    s.set(name - 1, "\xff").set(block + 17, std::string(4, '\0'));
    s.set(block + 17, le_bytes(lookup3(s.bytes.substr(block, 512)), 4));
    refused(s, "a link message ends inside what it encodes");
  }
}
