#pragma once
// HDF5 1.10.8 (Debian 12) trusts the structures of a group it looks a name up in. Found by
// mutating fuzz seeds (docs/reliability.md, finding 18): a root group whose local heap's free
// list names its own block as the next made H5Lexists allocate a list node per step, gigabytes
// in seconds, before any check of the reader's. The same decoding also copies a symbol table
// node's entries into an array of 2 x K whatever count the node gives, compares names it reads
// from the heap without a bound, follows B-tree children whatever their level says, and copies
// a link message's name and value by lengths it does not compare with the message.
//
// check_groups reads the root group and the named group from the file's bytes first and refuses
// what HDF5 would trust: for a symbol table (old-style group, what libismrmrd writes), a local
// heap that is no version 0 heap inside the file or whose free list runs outside its data or
// loops, a B-tree node that is no group node inside the file, has more than 2K children, a level
// that is not its parent's minus 1, or is reached twice, a symbol table node with more than 2K'
// entries, and a name (a key or an entry's) that is not a NUL-terminated string inside the heap;
// for a new-style group, a link message whose name or value runs past the message. For a
// new-style group's dense storage (past 8 links, or a phase change of 0), where HDF5 verifies
// checksums but then trusts the fields they cover (a crafted file has them right): a fractal heap
// (hdf5_fractal_heap.hpp) whose sizes are not sane or whose blocks are not where its doubling
// table says, inside the file, once each; a name or creation-order index (hdf5_v2_btree.hpp)
// whose depth, node record counts or totals are not what its nodes hold, or whose nodes are not
// inside the file or are reached twice; a record whose heap ID names no object inside a managed
// direct block (huge objects, and filtered heaps, are refused: not checked); and a link message
// in the heap that runs past its object. Call with lock_hdf5() held.
#include <filesystem>
#include <string>

#include <hdf5.h>

namespace mri::detail {

// Checks the root group, then `group` (a name in the root group, if it exists), before HDF5 looks
// a name up in either. Throws IoError("<path>: <the group>: <what is wrong>").
void check_groups(const std::filesystem::path &path, hid_t file, const std::string &group);

} // namespace mri::detail
