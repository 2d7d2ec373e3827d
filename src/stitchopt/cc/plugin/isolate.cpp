//===- isolate.cpp - Work in a child process, within a time limit ---------===//

#include "isolate.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace llvm;

namespace stitchopt {

static constexpr int ChildFailed = 70;

[[noreturn]] static void childFatal(void *, const char *, bool) {
  _exit(ChildFailed);
}

[[noreturn]] static void childOutOfMemory(void *, const char *, bool) {
  _exit(ChildFailed);
}

/// The child dies quietly and alone: default actions for crash signals (the
/// compiler's handlers print a stack dump and remove its output files) and
/// handlers for LLVM's fatal errors that only leave.
static void becomeQuietChild() {
  for (int Signal : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP,
                     SIGSYS, SIGQUIT, SIGXCPU, SIGXFSZ, SIGINT, SIGTERM,
                     SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2})
    std::signal(Signal, SIG_DFL);
  remove_fatal_error_handler();
  install_fatal_error_handler(childFatal);
  remove_bad_alloc_error_handler();
  install_bad_alloc_error_handler(childOutOfMemory);
  int Null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (Null >= 0) {
    ::dup2(Null, STDOUT_FILENO);
    ::dup2(Null, STDERR_FILENO);
  }
}

static bool writeAll(int FD, const std::string &Text) {
  size_t Done = 0;
  while (Done < Text.size()) {
    ssize_t N = ::write(FD, Text.data() + Done, Text.size() - Done);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      return false;
    Done += static_cast<size_t>(N);
  }
  return true;
}

Expected<std::string> inChild(function_ref<std::string()> Work,
                              double LimitSeconds) {
  int Pipe[2];
  if (::pipe2(Pipe, O_CLOEXEC) != 0)
    return createStringError(std::error_code(errno, std::generic_category()),
                             "cannot make a pipe for a child");
  pid_t Pid = ::fork();
  if (Pid < 0) {
    int Error = errno;
    ::close(Pipe[0]);
    ::close(Pipe[1]);
    return createStringError(std::error_code(Error, std::generic_category()),
                             "cannot start a child");
  }
  if (Pid == 0) {
    ::close(Pipe[0]);
    becomeQuietChild();
    _exit(writeAll(Pipe[1], Work()) ? 0 : ChildFailed);
  }
  ::close(Pipe[1]);

  using Clock = std::chrono::steady_clock;
  Clock::time_point Deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(LimitSeconds));
  std::string Out;
  bool TimedOut = false;
  char Buffer[4096];
  while (true) {
    auto Left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    Deadline - Clock::now())
                    .count();
    if (Left <= 0) {
      TimedOut = true;
      break;
    }
    struct pollfd Wait = {Pipe[0], POLLIN, 0};
    int Ready = ::poll(&Wait, 1, static_cast<int>(std::min<long long>(
                                     Left, 1000LL * 60 * 60)));
    if (Ready < 0 && errno == EINTR)
      continue;
    if (Ready <= 0)
      continue; // the deadline is checked above
    ssize_t N = ::read(Pipe[0], Buffer, sizeof(Buffer));
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      break; // the child closed its end: done, or dead
    Out.append(Buffer, static_cast<size_t>(N));
  }
  ::close(Pipe[0]);
  if (TimedOut)
    ::kill(Pid, SIGKILL);
  int Status = 0;
  while (::waitpid(Pid, &Status, 0) < 0 && errno == EINTR) {
  }
  if (TimedOut)
    return createStringError(inconvertibleErrorCode(),
                             "did not finish within " +
                                 Twine(static_cast<int>(LimitSeconds)) + " s");
  if (WIFSIGNALED(Status))
    return createStringError(inconvertibleErrorCode(),
                             "crashed (signal " + Twine(WTERMSIG(Status)) +
                                 ")");
  if (!WIFEXITED(Status) || WEXITSTATUS(Status) != 0)
    return createStringError(inconvertibleErrorCode(),
                             "failed (LLVM reported a fatal error)");
  return Out;
}

} // namespace stitchopt
