#include "process_clock.hpp"

#include <time.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace mri::cli {
namespace {

// Field 22 of /proc/self/stat: the start time in clock ticks after boot. The command name (field
// 2) may hold spaces and parentheses, so the fields are counted after its last ')'.
double start_ticks() {
  std::ifstream file("/proc/self/stat");
  std::string stat;
  if (!std::getline(file, stat)) return NAN;
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return NAN;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::stod(field);
  return NAN;
}

} // namespace

double seconds_since_process_start() {
  timespec now{};
  if (clock_gettime(CLOCK_BOOTTIME, &now) != 0) return NAN;
  const double boot_s = static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
  return boot_s - start_ticks() / static_cast<double>(sysconf(_SC_CLK_TCK));
}

} // namespace mri::cli
