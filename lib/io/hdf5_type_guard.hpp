#pragma once
// HDF5 1.10.8 (Debian 12) decodes a dataset's datatype message when H5Dopen2 opens the dataset,
// and trusts what it decodes. Found by fuzzing the ISMRMRD reader (docs/reliability.md):
// an array member whose stored size is 0 (its 8 elements of 2 bytes) made H5Dopen2 divide by zero
// (SIGFPE, finding 15), and a variable-length string whose characters the message makes
// 2^31 + 1 bytes each made H5Dread size its conversion buffer by that (finding 17); an array's
// rank is only an assertion there (its dimensions go into 32 slots), and the message's own
// length is not checked against what the type's encoding reads.
//
// open_checked_dataset decodes the dataset's datatype message from the file's bytes first (the
// link's object header, its continuation chunks, then the type and its members, bases and
// elements recursively, as the HDF5 file format specification lays them out) and refuses what
// HDF5 would trust: a type of size 0, an array whose size is not its elements', an enumeration
// whose size is not its base's, a number whose bits (precision, offset; a float's sign, exponent
// and mantissa) do not fit as HDF5's own H5Tset_* functions require, a variable-length string of
// characters other than 1 byte, a type that runs past its message, and what it cannot follow (a
// shared datatype message, a soft or external link), before HDF5 reads any of it. What HDF5
// checks itself when decoding (versions, classes, the object header's structure) is left to
// H5Dopen2. Call with lock_hdf5() held.
#include <filesystem>
#include <string>

#include <hdf5.h>

namespace mri::detail {

// H5Dopen2(file, name) once its datatype message is checked: the dataset, or -1 when HDF5 cannot
// open it. Throws IoError("<path>: <name>: <what is wrong>") for a type it refuses.
hid_t open_checked_dataset(const std::filesystem::path &path, hid_t file, const std::string &name);

} // namespace mri::detail
