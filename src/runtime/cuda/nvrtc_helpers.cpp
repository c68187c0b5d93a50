// NVRTC's helper processes and their connection: one request a unit, "SOURCE\nOBJECT\nOPTIONS\n"
// (two paths of kiln's private cache files and NVRTC's extra options, separated by spaces), one
// reply, the length of NVRTC's error message ("0" when the unit compiled), a newline and the
// message.
#include "runtime/cuda/nvrtc_helpers.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cstring>
#include <sstream>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kiln/error.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/process.h"

namespace kiln::runtime::cuda {
namespace {

using Clock = std::chrono::steady_clock;

bool send_all(int socket, const std::string& text) {
  for (size_t sent = 0; sent < text.size();) {
    const ssize_t count = send(socket, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) return false;
    sent += static_cast<size_t>(count);
  }
  return true;
}

bool receive_exactly(int socket, size_t size, std::string& text) {
  text.assign(size, '\0');
  for (size_t got = 0; got < size;) {
    const ssize_t count = recv(socket, text.data() + got, size - got, 0);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) return false;
    got += static_cast<size_t>(count);
  }
  return true;
}

// A line (without its newline); false when the connection closes first. Byte by byte: lines
// are two paths or a number, and nothing may be read past one (the next request).
bool receive_line(int socket, std::string& line) {
  line.clear();
  for (char c;;) {
    const ssize_t count = recv(socket, &c, 1, 0);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) return false;
    if (c == '\n') return true;
    line.push_back(c);
  }
}

struct Helper {
  int pid = -1;
  int socket = -1;  // kiln's end of the connection
  int architecture = 0;
  bool busy = false;
  Clock::time_point last_used;
};

// PR_SET_PDEATHSIG (process.h) kills a child when the thread that started it exits, not the
// process: helpers are started by the pool's own thread, which lives as long as the process
// (compiles ask for helpers from short-lived worker threads).
struct Starter {
  std::mutex mutex;
  std::condition_variable posted, done;
  const std::vector<std::string>* arguments = nullptr;  // the start asked for, if any
  int channel = -1;
  int pid = -1;
  bool running = false;  // the thread exists (not after a fork)
};

struct Pool {
  std::mutex mutex;
  std::condition_variable freed;
  std::vector<std::unique_ptr<Helper>> helpers;
  Starter starter;
};

Pool& pool();

// The child of a fork() keeps none of the parent's helpers (their connections are the
// parent's) nor its starter thread; the locks are held across the fork so their state is whole.
void lock_for_fork() {
  pool().mutex.lock();
  pool().starter.mutex.lock();
}
void unlock_after_fork() {
  pool().starter.mutex.unlock();
  pool().mutex.unlock();
}
void forget_after_fork() {
  Pool& helpers = pool();
  for (auto& helper : helpers.helpers) close(helper->socket);
  helpers.helpers.clear();
  helpers.starter.running = false;
  helpers.starter.arguments = nullptr;
  unlock_after_fork();
}

Pool& pool() {
  static Pool* helpers = [] {  // never destroyed: helpers see their connection close at exit
    auto* created = new Pool;
    pthread_atfork(lock_for_fork, unlock_after_fork, forget_after_fork);
    return created;
  }();
  return *helpers;
}

// start_process on the starter thread; -1 where the child cannot start.
int start_on_starter(Starter& starter, const std::vector<std::string>& arguments, int channel) {
  std::unique_lock<std::mutex> lock(starter.mutex);
  if (!starter.running) {
    std::thread([&starter] {
      std::unique_lock<std::mutex> held(starter.mutex);
      for (;;) {
        starter.posted.wait(held, [&] { return starter.arguments != nullptr; });
        try {
          starter.pid = start_process(*starter.arguments, starter.channel);
        } catch (const Error&) {
          starter.pid = -1;
        }
        starter.arguments = nullptr;
        starter.done.notify_all();
      }
    }).detach();
    starter.running = true;
  }
  starter.done.wait(lock, [&] { return starter.arguments == nullptr; });  // another start's turn
  starter.arguments = &arguments;
  starter.channel = channel;
  starter.posted.notify_one();
  starter.done.wait(lock, [&] { return starter.arguments == nullptr; });
  return starter.pid;
}

int most_helpers() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Closes the helper's connection (its next poll sees it closed and it exits) and waits for it;
// returns its wait status.
int retire(Helper& helper) {
  close(helper.socket);
  int status = 0;
  while (waitpid(helper.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string death_of(int status) {
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

std::string joined(const std::vector<std::string>& options) {
  std::string text;
  for (const std::string& option : options) text += (text.empty() ? "" : " ") + option;
  return text;
}

// Idle helpers that exited (an idle helper never writes: a readable connection is a closed
// one) or that are near their idle exit are retired. Under the pool's lock.
void reap(Pool& pool) {
  const Clock::time_point stale = Clock::now() - std::chrono::seconds(kHelperIdleSeconds - 10);
  auto& helpers = pool.helpers;
  for (auto it = helpers.begin(); it != helpers.end();) {
    Helper& helper = **it;
    pollfd closed{helper.socket, POLLIN, 0};
    if (!helper.busy && (helper.last_used < stale || poll(&closed, 1, 0) != 0)) {
      retire(helper);
      it = helpers.erase(it);
    } else {
      ++it;
    }
  }
}

// Starts a helper for `architecture`; false where none can run. Under the pool's lock.
bool start_helper(Pool& pool, int architecture) {
  const std::string& path = nvrtc_helper_path();
  if (path.empty()) return false;
  std::string library;
  try {
    library = nvrtc_library_path();
  } catch (const Error&) {  // no NVRTC: compile_cubin_file raises that in this process
    return false;
  }
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) return false;
  auto helper = std::make_unique<Helper>();
  const std::vector<std::string> arguments = {path, library, std::to_string(architecture),
                                              std::to_string(kHelperIdleSeconds)};
  helper->pid = start_on_starter(pool.starter, arguments, sockets[1]);
  close(sockets[1]);
  if (helper->pid < 0) {
    close(sockets[0]);
    return false;
  }
  helper->socket = sockets[0];
  helper->architecture = architecture;
  helper->last_used = Clock::now();
  pool.helpers.push_back(std::move(helper));
  return true;
}

}  // namespace

int nvrtc_helpers_running() {
  Pool& helpers = pool();
  std::lock_guard<std::mutex> lock(helpers.mutex);
  reap(helpers);
  return static_cast<int>(helpers.helpers.size());
}

HelperCompile compile_in_helper(const std::string& source_path, const std::string& object_path,
                                int architecture, const std::vector<std::string>& extra_options,
                                std::string* death) {
  const std::string options = joined(extra_options);
  if ((source_path + object_path + options).find('\n') != std::string::npos)
    return HelperCompile::no_helper;
  Pool& helpers = pool();
  std::unique_lock<std::mutex> lock(helpers.mutex);
  Helper* chosen = nullptr;
  while (chosen == nullptr) {
    reap(helpers);
    for (auto& helper : helpers.helpers)
      if (!helper->busy && helper->architecture == architecture) chosen = helper.get();
    if (chosen != nullptr) break;
    if (static_cast<int>(helpers.helpers.size()) >= most_helpers()) {
      // An idle helper of another architecture makes room; else wait for one to finish.
      auto other = std::find_if(helpers.helpers.begin(), helpers.helpers.end(),
                                [](const auto& helper) { return !helper->busy; });
      if (other == helpers.helpers.end()) {
        helpers.freed.wait(lock);
        continue;
      }
      retire(**other);
      helpers.helpers.erase(other);
    }
    if (!start_helper(helpers, architecture)) return HelperCompile::no_helper;
  }
  chosen->busy = true;
  lock.unlock();
  std::string header, message;
  const bool answered =
      send_all(chosen->socket, source_path + "\n" + object_path + "\n" + options + "\n") &&
      receive_line(chosen->socket, header) && !header.empty() &&
      header.find_first_not_of("0123456789") == std::string::npos &&
      receive_exactly(chosen->socket, std::stoul(header), message);
  lock.lock();
  chosen->busy = false;
  chosen->last_used = Clock::now();
  if (!answered) {  // the helper died compiling the unit (NVRTC crashed; killed; out of memory)
    auto it = std::find_if(helpers.helpers.begin(), helpers.helpers.end(),
                           [&](const auto& helper) { return helper.get() == chosen; });
    const int status = retire(*chosen);
    if (death != nullptr) *death = death_of(status);
    helpers.helpers.erase(it);
  }
  helpers.freed.notify_one();
  lock.unlock();
  if (!answered) return HelperCompile::died;
  if (!message.empty()) throw Error(ErrorKind::Internal, message);
  return HelperCompile::compiled;
}

std::string compile_cubin_file_isolated(const std::string& source_path,
                                        const std::string& object_path, int architecture) {
  // ptxas, inside NVRTC, has crashed on valid kernels (CUDA 13.0 on a twelve-output
  // concatenation: tests/cpp/data/ptxas_crash_sm90.cu). Another occupancy target steers its
  // register allocation elsewhere (that crash compiles with it); -O0 is the last resort.
  static const std::vector<std::vector<std::string>>& kSettings = *new std::vector<std::vector<std::string>>{
      {}, {"--ptxas-options=--minnctapersm=1"}, {"--ptxas-options=-O0"}};
  std::string crashes;
  for (const std::vector<std::string>& settings : kSettings) {
    std::string death;
    switch (compile_in_helper(source_path, object_path, architecture, settings, &death)) {
      case HelperCompile::compiled:
        return crashes.empty() ? crashes : crashes + "; compiled with " + joined(settings);
      case HelperCompile::no_helper:  // no kiln-nvrtc here: NVRTC in this process, unguarded
        compile_cubin_file(source_path, object_path, architecture, settings);
        return crashes;
      case HelperCompile::died:
        crashes += (crashes.empty() ? "" : "; ") + std::string("NVRTC ") + death + " with " +
                   (settings.empty() ? "the default options" : joined(settings));
    }
  }
  throw Error(ErrorKind::Internal, "kiln: the CUDA compiler crashed on " + source_path + ": " +
                                       crashes + " (a bug of NVRTC; please report it to kiln)");
}

int serve_nvrtc_requests(int channel, int architecture, int idle_seconds) {
  try {  // NVRTC's start paid before the first request (its error, if any, comes with that one)
    compile_cubin("extern \"C\" __global__ void kiln_warm_up() {}", "warm_up.cu", architecture);
  } catch (const std::exception&) {
  }
  for (;;) {
    pollfd request{channel, POLLIN, 0};
    const int ready = poll(&request, 1, idle_seconds * 1000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return 0;  // idle for idle_seconds (or a broken poll): exit
    std::string source, object, options;
    if (!receive_line(channel, source) || !receive_line(channel, object) ||
        !receive_line(channel, options))
      return 0;  // closed
    std::vector<std::string> extra_options;
    std::istringstream words(options);
    for (std::string word; words >> word;) extra_options.push_back(word);
    std::string message;
    try {
      compile_cubin_file(source, object, architecture, extra_options);
    } catch (const std::exception& error) {
      message = *error.what() ? error.what() : "kiln-nvrtc: the compile failed";
    }
    if (!send_all(channel, std::to_string(message.size()) + "\n" + message)) return 0;
  }
}

}  // namespace kiln::runtime::cuda
