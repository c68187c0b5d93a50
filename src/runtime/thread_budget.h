// How many threads a parallel kernel should use right now. A busy machine (a browser, a
// compile, another job holding a core) makes OpenMP's static schedule and join barrier wait for
// a descheduled worker: two-thread kernels then run many times slower than one thread. So the
// runtime measures, every kSampleSeconds, how much CPU other processes use (/proc/stat's busy
// time minus this process's own CPU time) and gives kernels only the cores that are free.
// Measured in bench/oversubscription.md.
#pragma once

namespace kiln::runtime {

// At most `wanted` threads, at least 1: the usable cores minus those other processes keep busy.
int thread_budget(int wanted);

// The libraries kiln calls (OpenBLAS, oneDNN, the sort) size their thread teams by
// omp_get_max_threads(), not by the count passed to kernels: for its lifetime this scope gives
// them `threads` (the budget), then restores the calling thread's setting. Without it a float32
// product on a busy machine waited a time slice (24 ms) per call at its join barrier.
class LibraryThreads {
 public:
  explicit LibraryThreads(int threads);
  ~LibraryThreads();
  LibraryThreads(const LibraryThreads&) = delete;
  LibraryThreads& operator=(const LibraryThreads&) = delete;

 private:
  int previous_;
};

}  // namespace kiln::runtime
