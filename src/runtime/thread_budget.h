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

}  // namespace kiln::runtime
