// Child processes kiln runs: the C++ compiler (toolchain.h), waited for, and NVRTC's helpers
// (cuda/nvrtc_helpers.h), kept. Each dies with kiln's process and runs under bounds on its CPU
// time and address space.
#pragma once
#include <atomic>
#include <string>
#include <vector>

namespace kiln::runtime {

struct ProcessResult {
  int exit_status = -1;  // the exit code, or 128 + signal number when killed by a signal
  std::string output;    // stdout and stderr, interleaved as the child wrote them
};

// Runs `arguments[0]` (an absolute path) with stdin from /dev/null and stdout+stderr captured
// into one string. exec, not system(): no shell parses generated file names, and the
// caller gets the child's message rather than whatever the terminal happened to show.
// `temporary_directory`, when given, is the child's $TMPDIR. Throws kiln::Error(Toolchain)
// when the child cannot be started, or when it runs past KILN_COMPILE_SECONDS of wall-clock
// time (default 600, the CPU limit), killed then. `stop`, when given and set while it waits,
// ends the wait as an interruption does (interruptible_work.h sets it for a Ctrl-C seen on
// another thread).
ProcessResult run_process(const std::vector<std::string>& arguments,
                          const std::string& temporary_directory = "",
                          const std::atomic<bool>* stop = nullptr);

// Asked while run_process waits for its child, every kInterruptionPollMilliseconds and after
// each signal: true ends the wait, the child killed (its own children die with it), with
// kiln::Error(Interrupted). The Python module sets one that runs Python's signal handlers, so
// that Ctrl-C stops a compile at once instead of after it; none is set by default.
using InterruptionCheck = bool (*)();
void set_interruption_check(InterruptionCheck check);
bool interruption_requested();  // the check's answer now; false where none is set
constexpr int kInterruptionPollMilliseconds = 100;

// Starts `arguments[0]` (an absolute path) under the same bounds, its stdin and stdout the
// descriptor `channel` (a socket kiln talks to it through), its stderr /dev/null, and returns
// its process id; the caller reaps it (waitpid). Throws kiln::Error(Toolchain) when the child
// cannot be started.
int start_process(const std::vector<std::string>& arguments, int channel);

// A regular file this process may execute.
bool is_executable_file(const std::string& path);

}  // namespace kiln::runtime
