#pragma once
// What HDF5 1.10.8 (Debian 12) trusts while H5Fopen runs, before any check that needs an open
// file: H5Fopen loads the root group's object header (and, for superblocks of version 2 and 3,
// the superblock extension's), allocating each chunk by the length the header or a continuation
// message gives. Found by fuzzing (docs/reliability.md, finding 19): a continuation of 160 GB in
// the root group's header made H5Fopen ask for 160 GB.
//
// check_before_open finds the superblock in the file's bytes (HDF5's search: offset 0, then 512,
// 1024, 2048, ...), decodes its sizes and the addresses of those object headers, and walks them
// (hdf5_object_header.hpp): a chunk not inside the file, or more than 256 chunks, is refused. A
// file with no superblock, or one whose encoding HDF5 itself refuses, is left to H5Fopen.
#include <filesystem>

namespace mri::detail {

// Throws IoError("<path>: <what is wrong>") for a file whose opening HDF5 would trust with
// lengths past the file's end.
void check_before_open(const std::filesystem::path &path);

} // namespace mri::detail
