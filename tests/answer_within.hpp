#pragma once
// A question that might hang (a library looping on a damaged file) asked in a child process, so
// that a hang fails its test instead of stopping the suite.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "catch.hpp"

namespace mri::test {

// What `ask` returns, run in a forked child killed after `seconds` (the test fails then).
inline std::string answer_within(int seconds, const std::function<std::string()> &ask) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    const std::string answer = ask();
    (void)!::write(fds[1], answer.data(), answer.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  pollfd p{fds[0], POLLIN, 0};
  const bool answered = ::poll(&p, 1, seconds * 1000) == 1;
  std::string answer;
  char buf[4096];
  for (ssize_t got; answered && (got = ::read(fds[0], buf, sizeof buf)) > 0;) answer.append(buf, static_cast<std::size_t>(got));
  ::close(fds[0]);
  if (!answered) ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  if (!answered) FAIL("no answer within " << seconds << " s");
  return answer;
}

} // namespace mri::test
