// The Toeplitz spectrum file cache (see toeplitz_cache.hpp).
#include "mri/toeplitz_cache.hpp"

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>
#include <unistd.h>

#include "mri/error.hpp"

namespace mri {
namespace {

// Two independent 64-bit lanes over 8-byte words (multiply-rotate, splitmix64 finalisers): not
// cryptographic, but every input bit reaches both lanes and a 128-bit key makes an accidental
// collision negligible; the header check on load catches the rest.
class Hasher {
public:
  explicit Hasher(std::uint64_t domain) : a_(0x243f6a8885a308d3ULL ^ domain), b_(0x13198a2e03707344ULL + domain) {}

  void bytes(const void *data, std::size_t n) {
    const auto *p = static_cast<const unsigned char *>(data);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      word(w);
    }
    if (i < n) {
      std::uint64_t w = 0;
      std::memcpy(&w, p + i, n - i);
      word(w ^ (std::uint64_t{0x80} << 56));
    }
    length_ += n;
  }
  template <class T> void value(const T &v) { bytes(&v, sizeof v); }

  std::array<std::uint64_t, 2> finish() const {
    return {mix(a_ ^ length_), mix(b_ + 0x9e3779b97f4a7c15ULL * (length_ + 1))};
  }

private:
  static std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  void word(std::uint64_t w) {
    a_ = rotl(a_ ^ (w * 0x87c37b91114253d5ULL), 31) * 0x4cf5ad432745937fULL;
    b_ = rotl(b_ + (w * 0xff51afd7ed558ccdULL), 27) * 0xc4ceb9fe1a85ec53ULL + 0x52dce729ULL;
  }
  std::uint64_t a_, b_, length_ = 0;
};

constexpr char kMagic[8] = {'M', 'R', 'I', 'Q', 'S', 'P', 'E', 'C'};
// Version 2: the checksum covers the header as well as the payload, and writes are fsync-ed.
// Version-1 entries fail the version check and are recomputed, never read.
constexpr std::uint32_t kVersion = 2;
// What the cache stores; changing the definition of Q or of the spectrum bumps this.
constexpr std::uint64_t kDefinition = 0x51'7370'6563'0001ULL; // "Q spec" v1

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_bytes;
  std::uint64_t key[2];
  std::uint64_t samples;
  std::int64_t grid[3];
  std::int64_t padded[3];
  std::uint64_t count;    // floats in the payload
  std::uint64_t checksum; // entry_checksum(): the header with this field 0, then the payload
};
static_assert(sizeof(Header) == 104, "the header is written as raw bytes: no padding");

// A bit flipped anywhere (a key, grid or count field included) changes the checksum, so a
// damaged entry is never taken for a valid one even where its fields still look plausible.
std::uint64_t entry_checksum(Header h, std::span<const float> payload) {
  h.checksum = 0;
  Hasher hasher(0x70617946ULL);
  hasher.bytes(&h, sizeof h);
  hasher.bytes(payload.data(), payload.size_bytes());
  return hasher.finish()[0];
}

[[noreturn]] void write_failed(const std::filesystem::path &file, const char *step, int error) {
  // std::error_code's message (strerror_r), not strerror: writers may fail on several threads.
  throw IoError("Toeplitz cache: " + std::string(step) + " " + file.string() + " failed (" +
                std::error_code(error, std::generic_category()).message() + ")");
}

// All n bytes, or the errno of the failing write (ENOSPC for a full disk, EFBIG past RLIMIT_FSIZE).
int write_all(int fd, const void *data, std::size_t n) {
  const auto *p = static_cast<const char *>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return 0;
}

// The temporary file, complete and on disk (fsync) before the rename makes it the entry: a
// crash or SIGKILL at any point leaves either the old entry, no entry, or the whole new one,
// plus at worst a stray "*.tmp.*" file that no reader opens.
void write_durably(const std::filesystem::path &tmp, const void *header, std::size_t header_bytes,
                   std::span<const float> payload) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) write_failed(tmp, "creating", errno);
  int error = write_all(fd, header, header_bytes);
  if (error == 0) error = write_all(fd, payload.data(), payload.size_bytes());
  const char *step = "writing";
  if (error == 0 && ::fsync(fd) != 0) {
    error = errno;
    step = "syncing";
  }
  if (::close(fd) != 0 && error == 0) {
    error = errno;
    step = "closing";
  }
  if (error != 0) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    write_failed(tmp, step, error);
  }
}

// Makes the rename itself durable. Best effort: if the directory cannot be synced, a crash may
// at worst forget the new entry (a later miss), never expose a partial one.
void sync_directory(const std::filesystem::path &dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// The entry written under a unique temporary name in the same directory (rename is atomic only
// within one file system: concurrent writers of one entry, in threads or processes, never share
// a file), then renamed into place.
void write_entry(const std::filesystem::path &file, const void *header, std::size_t header_bytes,
                 std::span<const float> payload) {
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) throw IoError("Toeplitz cache: cannot create " + file.parent_path().string() + ": " + ec.message());
  std::filesystem::path tmp = file;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
  write_durably(tmp, header, header_bytes, payload);
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    const int error = errno;
    std::filesystem::remove(tmp, ec);
    write_failed(file, "renaming into", error);
  }
  sync_directory(file.parent_path());
}

std::string grid_string(const std::int64_t *e) {
  return std::to_string(e[0]) + "x" + std::to_string(e[1]) + "x" + std::to_string(e[2]);
}

[[noreturn]] void reject(const std::filesystem::path &file, const std::string &why) {
  throw IoError("Toeplitz cache file " + file.string() + " rejected: " + why);
}

// An L entry: the header alone, the value in it.
constexpr char kLipschitzMagic[8] = {'M', 'R', 'I', 'L', 'I', 'P', 'S', 'C'};
constexpr std::uint32_t kLipschitzVersion = 1;
// What the L key hashes; changing the power iteration's definition (its start, its margin) bumps this.
constexpr std::uint64_t kLipschitzDefinition = 0x4c'6970'7363'0001ULL; // "L ipsc" v1

struct LipschitzEntry {
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_bytes;
  std::uint64_t key[2];
  std::uint64_t samples;
  double lipschitz;
  std::uint64_t checksum; // entry_checksum-style: the entry with this field 0
};
static_assert(sizeof(LipschitzEntry) == 56, "the entry is written as raw bytes: no padding");

std::uint64_t lipschitz_checksum(LipschitzEntry e) {
  e.checksum = 0;
  Hasher hasher(0x4c697073ULL);
  hasher.bytes(&e, sizeof e);
  return hasher.finish()[0];
}

} // namespace

std::string ToeplitzCacheKey::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hash[0]),
                static_cast<unsigned long long>(hash[1]));
  return buf;
}

ToeplitzCacheKey toeplitz_cache_key(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
                                    Precision precision, double nufft_tolerance) {
  if (!weights.empty() && weights.size() != trajectory.size())
    detail::invalid_argument("weights.size()", weights.size(),
                             "must be 0 or trajectory.size() = " + std::to_string(trajectory.size()));
  Hasher h(kDefinition);
  h.value(std::uint64_t{0x7472616a}); // "traj"
  h.value(static_cast<std::int32_t>(trajectory.dims()));
  h.value(static_cast<std::uint64_t>(trajectory.size()));
  h.bytes(trajectory.data(), trajectory.size() * sizeof(KPoint));
  h.value(std::uint64_t{0x77656967}); // "weig"
  h.value(static_cast<std::uint64_t>(weights.size()));
  h.bytes(weights.data(), weights.size_bytes());
  h.value(std::uint64_t{0x67726964}); // "grid"
  for (int a = 0; a < 3; ++a) h.value(grid.extent(a));
  h.value(static_cast<std::int32_t>(precision));
  if (nufft_tolerance != 0) { // exact-sum keys stay what they were before NUFFT entries existed
    h.value(std::uint64_t{0x6e756674}); // "nuft"
    h.value(std::bit_cast<std::uint64_t>(nufft_tolerance));
  }
  ToeplitzCacheKey key;
  key.hash = h.finish();
  key.samples = trajectory.size();
  return key;
}

std::filesystem::path toeplitz_cache_file(const std::filesystem::path &dir, const ToeplitzCacheKey &key) {
  return dir / ("toeplitz-" + key.hex() + ".mriq");
}

void save_toeplitz_spectrum(const std::filesystem::path &file, const ToeplitzCacheKey &key, const Grid &grid,
                            std::span<const float> spectrum) {
  const Grid padded = grid.doubled();
  if (spectrum.size() != static_cast<std::size_t>(padded.voxels()))
    detail::invalid_argument("spectrum.size()", spectrum.size(),
                             "must be grid.doubled().voxels() = " + std::to_string(padded.voxels()));
  for (std::size_t i = 0; i < spectrum.size(); ++i)
    if (!std::isfinite(spectrum[i]))
      detail::invalid_argument("spectrum[" + std::to_string(i) + "]", spectrum[i], "must be finite (not cached)");
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.header_bytes = sizeof(Header);
  h.key[0] = key.hash[0];
  h.key[1] = key.hash[1];
  h.samples = key.samples;
  for (int a = 0; a < 3; ++a) {
    h.grid[a] = grid.extent(a);
    h.padded[a] = padded.extent(a);
  }
  h.count = spectrum.size();
  h.checksum = entry_checksum(h, spectrum);

  write_entry(file, &h, sizeof h, spectrum);
}

std::vector<float> load_toeplitz_spectrum(const std::filesystem::path &file, const ToeplitzCacheKey &key,
                                          const Grid &grid) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError("Toeplitz cache file " + file.string() + " not found or not readable");
  Header h{};
  in.read(reinterpret_cast<char *>(&h), sizeof h);
  if (in.gcount() != static_cast<std::streamsize>(sizeof h)) reject(file, "truncated header");
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) reject(file, "not a Toeplitz spectrum file (bad magic)");
  if (h.version != kVersion || h.header_bytes != sizeof(Header))
    reject(file, "format version " + std::to_string(h.version) + ", this build reads " + std::to_string(kVersion));
  if (h.key[0] != key.hash[0] || h.key[1] != key.hash[1] || h.samples != key.samples) {
    ToeplitzCacheKey found;
    found.hash = {h.key[0], h.key[1]};
    reject(file, "written for another trajectory/weights/grid (key " + found.hex() + ", " + std::to_string(h.samples) +
                     " samples; expected " + key.hex() + ", " + std::to_string(key.samples) + " samples)");
  }
  const Grid padded = grid.doubled();
  const std::int64_t expect_grid[3] = {grid.nx(), grid.ny(), grid.nz()};
  const std::int64_t expect_padded[3] = {padded.nx(), padded.ny(), padded.nz()};
  if (std::memcmp(h.grid, expect_grid, sizeof expect_grid) != 0 ||
      std::memcmp(h.padded, expect_padded, sizeof expect_padded) != 0)
    reject(file, "grid " + grid_string(h.grid) + " (padded " + grid_string(h.padded) + "), expected " +
                     grid_string(expect_grid) + " (padded " + grid_string(expect_padded) + ")");
  if (h.count != static_cast<std::uint64_t>(padded.voxels()))
    reject(file, "payload of " + std::to_string(h.count) + " values, expected " + std::to_string(padded.voxels()));
  std::vector<float> spectrum(static_cast<std::size_t>(h.count));
  in.read(reinterpret_cast<char *>(spectrum.data()), static_cast<std::streamsize>(spectrum.size() * sizeof(float)));
  if (in.gcount() != static_cast<std::streamsize>(spectrum.size() * sizeof(float)))
    reject(file, "truncated payload (" + std::to_string(in.gcount()) + " of " +
                     std::to_string(spectrum.size() * sizeof(float)) + " bytes)");
  if (in.peek() != std::ifstream::traits_type::eof()) reject(file, "trailing bytes after the payload");
  if (entry_checksum(h, spectrum) != h.checksum) reject(file, "checksum mismatch (corrupt file)");
  return spectrum; // finite: save refuses anything else and the checksum vouches for the bytes
}

ToeplitzCacheKey lipschitz_cache_key(const ToeplitzCacheKey &q, std::span<const cfloat> maps, Regularizer regularizer,
                                     double lambda, Backend backend, int power_iterations) {
  Hasher h(kLipschitzDefinition);
  h.value(q.hash[0]);
  h.value(q.hash[1]);
  h.value(q.samples);
  h.value(std::uint64_t{0x6d617073}); // "maps"
  h.value(static_cast<std::uint64_t>(maps.size()));
  h.bytes(maps.data(), maps.size_bytes());
  h.value(static_cast<std::int32_t>(regularizer));
  h.value(std::bit_cast<std::uint64_t>(lambda));
  h.value(static_cast<std::int32_t>(backend));
  h.value(static_cast<std::int32_t>(power_iterations));
  ToeplitzCacheKey key;
  key.hash = h.finish();
  key.samples = q.samples;
  return key;
}

std::filesystem::path lipschitz_cache_file(const std::filesystem::path &dir, const ToeplitzCacheKey &key) {
  return dir / ("lipschitz-" + key.hex() + ".mril");
}

void save_lipschitz(const std::filesystem::path &file, const ToeplitzCacheKey &key, double lipschitz) {
  if (!(lipschitz > 0) || !std::isfinite(lipschitz))
    detail::invalid_argument("lipschitz", lipschitz, "must be finite and > 0 (not cached)");
  LipschitzEntry e{};
  std::memcpy(e.magic, kLipschitzMagic, sizeof kLipschitzMagic);
  e.version = kLipschitzVersion;
  e.header_bytes = sizeof(LipschitzEntry);
  e.key[0] = key.hash[0];
  e.key[1] = key.hash[1];
  e.samples = key.samples;
  e.lipschitz = lipschitz;
  e.checksum = lipschitz_checksum(e);
  write_entry(file, &e, sizeof e, {});
}

double load_lipschitz(const std::filesystem::path &file, const ToeplitzCacheKey &key) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError("Toeplitz cache file " + file.string() + " not found or not readable");
  LipschitzEntry e{};
  in.read(reinterpret_cast<char *>(&e), sizeof e);
  if (in.gcount() != static_cast<std::streamsize>(sizeof e)) reject(file, "truncated entry");
  if (std::memcmp(e.magic, kLipschitzMagic, sizeof kLipschitzMagic) != 0) reject(file, "not an L file (bad magic)");
  if (e.version != kLipschitzVersion || e.header_bytes != sizeof(LipschitzEntry))
    reject(file, "format version " + std::to_string(e.version) + ", this build reads " +
                     std::to_string(kLipschitzVersion));
  if (e.key[0] != key.hash[0] || e.key[1] != key.hash[1] || e.samples != key.samples)
    reject(file, "written for another operator (key " + ToeplitzCacheKey{{e.key[0], e.key[1]}, e.samples}.hex() +
                     ", expected " + key.hex() + ")");
  if (in.peek() != std::ifstream::traits_type::eof()) reject(file, "trailing bytes after the entry");
  if (lipschitz_checksum(e) != e.checksum) reject(file, "checksum mismatch (corrupt file)");
  if (!(e.lipschitz > 0) || !std::isfinite(e.lipschitz)) reject(file, "L is not finite and positive");
  return e.lipschitz;
}

} // namespace mri
