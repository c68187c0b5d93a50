#include "runtime/thread_budget.h"

#include <fcntl.h>
#include <omp.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>

namespace kiln::runtime {
namespace {

constexpr double kSampleSeconds = 0.05;
// A core counts as taken when other processes keep it this busy (smoothed over samples).
constexpr double kTakenShare = 0.3;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Busy CPU seconds of the whole machine (all CPUs), from the first line of /proc/stat; < 0
// when it cannot be read.
double machine_busy_seconds() {
  int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[256];
  ssize_t size = read(fd, text, sizeof text - 1);
  close(fd);
  if (size <= 0) return -1;
  text[size] = '\0';
  unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
  if (sscanf(text, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
             &iowait, &irq, &softirq, &steal) != 8)
    return -1;
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return static_cast<double>(user + nice + system + irq + softirq + steal) / ticks;
}

double own_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

struct Sampler {
  std::mutex mutex;
  double last_time = 0, last_busy = -1, last_own = 0;
  double others = 0;  // cores other processes keep busy, smoothed
  std::atomic<int> taken{0};
  std::atomic<double> next_sample{0};

  void sample(double time) {
    std::unique_lock<std::mutex> lock(mutex, std::try_to_lock);
    if (!lock.owns_lock()) return;  // another thread is sampling
    double busy = machine_busy_seconds(), own = own_cpu_seconds();
    if (busy >= 0 && last_busy >= 0 && time > last_time) {
      double window = time - last_time;
      double other_cores = std::max(0.0, (busy - last_busy) - (own - last_own)) / window;
      others = 0.5 * others + 0.5 * other_cores;
      taken.store(static_cast<int>(std::floor(others + (1 - kTakenShare))));
    }
    last_time = time, last_busy = busy, last_own = own;
    next_sample.store(time + kSampleSeconds);
  }
};

Sampler& sampler() {
  static Sampler instance;
  return instance;
}

// A child forked after OpenMP started its threads inherits a thread pool whose threads do not
// exist there (GNU OpenMP is not fork-safe): its first parallel region would wait for them
// forever. In a forked child, kernels and the libraries (OpenBLAS and oneDNN size their teams
// by omp_get_max_threads) run on the calling thread only.
std::atomic<bool> forked_child{false};
[[maybe_unused]] const int fork_handler = pthread_atfork(nullptr, nullptr, [] {
  forked_child.store(true);
  omp_set_num_threads(1);
});

}  // namespace

int thread_budget(int wanted) {
  if (wanted <= 1 || forked_child.load(std::memory_order_relaxed)) return 1;
  Sampler& state = sampler();
  double time = now_seconds();
  if (time >= state.next_sample.load(std::memory_order_relaxed)) state.sample(time);
  // /proc/stat counts every online CPU, so free cores are counted among them too.
  static const int cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  int free_cores = cores - state.taken.load(std::memory_order_relaxed);
  return std::clamp(free_cores, 1, wanted);
}

LibraryThreads::LibraryThreads(int threads) : previous_(omp_get_max_threads()) {
  if (threads != previous_) omp_set_num_threads(std::max(1, threads));
}

LibraryThreads::~LibraryThreads() {
  if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
}

}  // namespace kiln::runtime
