// The datatype check before H5Dopen2 (lib/io/hdf5_type_guard.hpp) on what libismrmrd does not
// write: HDF5's version 2 object headers ("OHDR", messages with creation order, continuation
// chunks "OCHK"), made here with the latest file format. The fuzzing inputs (version 1 headers)
// are in test_ismrmrd.cpp and the replayed corpus.
#include "catch.hpp"
#include "../../lib/io/hdf5_type_guard.hpp"
#include "mri/error.hpp"
#include "test_support.hpp"

#include <hdf5.h>

#include <fstream>
#include <iterator>
#include <string>

namespace {

struct Record {
  unsigned short n;
  float position[3];
  hvl_t traj;
};

hid_t record_type() {
  const hsize_t three = 3;
  const hid_t position = H5Tarray_create2(H5T_NATIVE_FLOAT, 1, &three), traj = H5Tvlen_create(H5T_NATIVE_FLOAT);
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(Record));
  H5Tinsert(t, "n", HOFFSET(Record, n), H5T_NATIVE_USHORT);
  H5Tinsert(t, "position", HOFFSET(Record, position), position);
  H5Tinsert(t, "traj", HOFFSET(Record, traj), traj);
  H5Tclose(position);
  H5Tclose(traj);
  return t;
}

// dataset/data: 4 records, chunked, 40 attributes kept in its object header (continuation
// chunks); dataset/xml: a variable-length string.
void write_latest(const std::filesystem::path &path) {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  const hid_t group = H5Gcreate2(file, "dataset", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t n = 4, unlimited = H5S_UNLIMITED, chunk = 1;
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, &chunk);
  H5Pset_attr_creation_order(dcpl, H5P_CRT_ORDER_TRACKED);
  H5Pset_attr_phase_change(dcpl, 1000, 900);
  const hid_t type = record_type(), space = H5Screate_simple(1, &n, &unlimited);
  const hid_t data = H5Dcreate2(group, "data", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  float values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  Record records[4];
  for (unsigned i = 0; i < 4; ++i) records[i] = {static_cast<unsigned short>(i), {1, 2, 3}, {2 * i, values}};
  H5Dwrite(data, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, records);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  for (int i = 0; i < 40; ++i) {
    const std::string name = "an_attribute_with_a_long_name_" + std::to_string(i);
    const hid_t a = H5Acreate2(data, name.c_str(), H5T_NATIVE_DOUBLE, scalar, H5P_DEFAULT, H5P_DEFAULT);
    const double x = i;
    H5Awrite(a, H5T_NATIVE_DOUBLE, &x);
    H5Aclose(a);
  }
  const hid_t text = H5Tcopy(H5T_C_S1);
  H5Tset_size(text, H5T_VARIABLE);
  const hid_t xml = H5Dcreate2(group, "xml", text, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char *header = "<ismrmrdHeader/>";
  H5Dwrite(xml, text, H5S_ALL, H5S_ALL, H5P_DEFAULT, &header);
  for (const hid_t h : {xml, data}) H5Dclose(h);
  for (const hid_t h : {text, type}) H5Tclose(h);
  for (const hid_t h : {scalar, space}) H5Sclose(h);
  for (const hid_t h : {dcpl, fapl}) H5Pclose(h);
  H5Gclose(group);
  H5Fclose(file);
}

// What open_checked_dataset says of `name` in `path`: "opened", "HDF5 cannot open" or the error.
std::string open_answer(const std::filesystem::path &path, const std::string &name) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  std::string answer;
  try {
    const hid_t set = mri::detail::open_checked_dataset(path, file, name);
    answer = set < 0 ? "HDF5 cannot open" : "opened";
    if (set >= 0) H5Dclose(set);
  } catch (const mri::IoError &e) {
    answer = e.what();
  }
  H5Fclose(file);
  return answer;
}

// Replaces the first occurrence of `from` in the file's bytes by `to` (same length).
bool replace_bytes(const std::filesystem::path &path, const std::string &from, const std::string &to) {
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::size_t at = bytes.find(from);
  if (at == std::string::npos) return false;
  bytes.replace(at, to.size(), to);
  std::ofstream(path, std::ios::binary) << bytes;
  return true;
}

} // namespace

TEST_CASE("hdf5 type guard: version 2 object headers with continuation chunks are decoded and checked", "[ismrmrd]") {
  mri::test::TempDir dir("type-guard");
  const std::filesystem::path file = dir / "latest.h5";
  write_latest(file);
  {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(bytes.find("OHDR") != std::string::npos);
    REQUIRE(bytes.find("OCHK") != std::string::npos); // the attributes took more than chunk 0
  }
  CHECK(open_answer(file, "dataset/data") == "opened");
  CHECK(open_answer(file, "dataset/xml") == "opened");
  // The string's type: variable-length (class 9, version 1), string, 16 bytes; its characters'
  // type: fixed-point (class 0, version 1), 1 byte, made 2^31 + 1 (finding 17's damage).
  const std::string string_type("\x19\x01\x00\x00\x10\x00\x00\x00\x10\x00\x00\x00\x01\x00\x00\x00", 16);
  std::string damaged = string_type;
  damaged[15] = '\x80';
  REQUIRE(replace_bytes(file, string_type, damaged));
  CHECK(open_answer(file, "dataset/xml") ==
        file.string() + ": dataset/xml: its type: a variable-length string of characters of 2147483649 bytes (1 expected)");
  // The position's type: an array (class 10, version 3, in a version 3 compound: names unpadded,
  // 1-byte offsets) of 12 bytes made 0 (finding 15's damage).
  REQUIRE(replace_bytes(file, std::string("\x3a\x00\x00\x00\x0c\x00\x00\x00\x01", 9),
                        std::string("\x3a\x00\x00\x00\x00\x00\x00\x00\x01", 9)));
  CHECK(open_answer(file, "dataset/data") ==
        file.string() + ": dataset/data: its type's member \"position\": an array of 3 elements of 4 bytes stored as 0 bytes");
}
