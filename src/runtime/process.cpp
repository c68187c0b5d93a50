#include "runtime/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "kiln/error.h"
#include "runtime/environment_numbers.h"

extern char** environ;

namespace kiln::runtime {
namespace {

// The process-wide interruption check (set_interruption_check), read by each wait.
std::atomic<InterruptionCheck> interruption_check{nullptr};

// Bounds on one compiler process (inherited by the driver's children, see run_process).
constexpr rlim_t kCompileSeconds = 600;
constexpr rlim_t kCompileBytes = rlim_t(16) << 30;

// Starts the child with descriptors `input` on its stdin and `output` on its stdout and stderr
// (`errors`, when not -1, on its stderr instead), and $TMPDIR `temporary_directory` unless it
// is "", or throws.
pid_t spawn(const std::vector<std::string>& arguments, int input, int output, int errors,
            const std::string& temporary_directory = "") {
  std::vector<char*> argv;
  argv.reserve(arguments.size() + 1);
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  // The environment is made here: between vfork and exec nothing may allocate.
  std::vector<char*> environment;  // empty: this process's own
  const std::string tmpdir = "TMPDIR=" + temporary_directory;
  if (!temporary_directory.empty()) {
    for (char** variable = environ; *variable != nullptr; ++variable)
      if (strncmp(*variable, "TMPDIR=", 7) != 0) environment.push_back(*variable);
    environment.push_back(const_cast<char*>(tmpdir.c_str()));
    environment.push_back(nullptr);
  }

  // vfork + exec rather than posix_spawn: the child must ask the kernel to kill it when kiln's
  // process dies (PR_SET_PDEATHSIG), or a killed compile leaves the compiler running. The
  // driver's own children (cc1plus, as) do not inherit that (GCC starts them through setpriv,
  // which asks the same for each: toolchain.cpp), but they do inherit resource limits, so a
  // compile can never run away (kCompileSeconds of CPU, kCompileBytes of address
  // space per process), with kiln alive or not. Between vfork and exec the child makes system
  // calls only; it shares our memory, so exec's error comes back through `spawn_error`.
  const pid_t parent = getpid();
  volatile int spawn_error = 0;
  pid_t child = vfork();
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    const rlimit cpu{kCompileSeconds, kCompileSeconds}, memory{kCompileBytes, kCompileBytes};
    setrlimit(RLIMIT_CPU, &cpu);
    setrlimit(RLIMIT_AS, &memory);
    if (dup2(input, 0) < 0 || dup2(output, 1) < 0 || dup2(errors < 0 ? output : errors, 2) < 0) {
      spawn_error = errno;
      _exit(127);
    }
    execve(argv[0], argv.data(), environment.empty() ? environ : environment.data());
    spawn_error = errno;
    _exit(127);
  }
  if (child < 0) spawn_error = errno;
  if (spawn_error != 0) {
    if (child > 0) waitpid(child, nullptr, 0);
    throw Error(ErrorKind::Toolchain, "kiln: cannot run " + arguments[0] + ": " +
                                          strerror(spawn_error));
  }
  return child;
}

// /dev/null, closed when it leaves scope.
struct NullDevice {
  int descriptor;
  explicit NullDevice(int flags) : descriptor(open("/dev/null", flags | O_CLOEXEC)) {
    if (descriptor < 0)
      throw Error(ErrorKind::Toolchain, std::string("kiln: cannot open /dev/null: ") + strerror(errno));
  }
  ~NullDevice() { close(descriptor); }
};

}  // namespace

int start_process(const std::vector<std::string>& arguments, int channel) {
  NullDevice null_output(O_WRONLY);
  return spawn(arguments, channel, channel, null_output.descriptor);
}

void set_interruption_check(InterruptionCheck check) { interruption_check.store(check); }

bool interruption_requested() {
  InterruptionCheck check = interruption_check.load();
  return check != nullptr && check();
}

ProcessResult run_process(const std::vector<std::string>& arguments,
                          const std::string& temporary_directory,
                          const std::atomic<bool>* stop) {
  // The CPU limit does not bound a compiler that waits (a stalled network file system, a
  // wrapper's lock): without this, the call waited for it for ever.
  const int64_t most_seconds = environment_whole_number(
      "KILN_COMPILE_SECONDS", static_cast<int64_t>(kCompileSeconds), 1,
      "is not a whole number of seconds (at least 1)");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(most_seconds);
  int pipe_descriptors[2];
  if (pipe2(pipe_descriptors, O_CLOEXEC) != 0) {
    throw Error(ErrorKind::Toolchain,
                std::string("kiln: cannot create a pipe for a child process: ") + strerror(errno));
  }
  pid_t child = -1;
  try {
    NullDevice null_input(O_RDONLY);
    child = spawn(arguments, null_input.descriptor, pipe_descriptors[1], -1,
                  temporary_directory);
  } catch (...) {
    close(pipe_descriptors[0]);
    close(pipe_descriptors[1]);
    throw;
  }
  close(pipe_descriptors[1]);

  ProcessResult result;
  char buffer[4096];
  for (;;) {
    // A blocking read would keep a Ctrl-C waiting until the compiler ends (seconds, or never
    // for one that hangs): the wait wakes up to ask the interruption check.
    pollfd readable{pipe_descriptors[0], POLLIN, 0};
    int ready = poll(&readable, 1, kInterruptionPollMilliseconds);
    if (ready <= 0) {
      if (ready < 0 && errno != EINTR) break;
      const bool interrupted = (stop != nullptr && *stop) || interruption_requested();
      const bool late = std::chrono::steady_clock::now() >= deadline;
      if (!interrupted && !late) continue;
      close(pipe_descriptors[0]);
      kill(child, SIGKILL);
      while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
      }
      if (interrupted)
        throw Error(ErrorKind::Interrupted, "kiln: interrupted while running " + arguments[0]);
      throw Error(ErrorKind::Toolchain,
                  "kiln: " + arguments[0] + " ran for more than " + std::to_string(most_seconds) +
                      " s (KILN_COMPILE_SECONDS) and was killed");
    }
    ssize_t count = read(pipe_descriptors[0], buffer, sizeof buffer);
    if (count > 0) {
      result.output.append(buffer, static_cast<size_t>(count));
    } else if (count == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_descriptors[0]);

  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      throw Error(ErrorKind::Toolchain,
                  "kiln: lost track of " + arguments[0] + ": " + strerror(errno));
    }
  }
  if (WIFEXITED(status)) {
    result.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_status = 128 + WTERMSIG(status);
  }
  return result;
}

bool is_executable_file(const std::string& path) {
  struct stat information;
  return stat(path.c_str(), &information) == 0 && S_ISREG(information.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

}  // namespace kiln::runtime
