// kiln's dlopen calls: one at a time, and none once the process has begun to exit.
//
// glibc's exit runs each library's destructors (_dl_fini) and marks the library uninitialized,
// so a library loaded after that runs the constructors of the libraries it depends on a second
// time: a kernel library loaded by a daemon thread whose compile (run without the GIL) ended
// while the interpreter exited reran libgomp's, which asserts ("goacc_register: Assertion
// `!dispatchers[disp->type]' failed") and aborted the process. An exit handler, registered when
// libkiln loads and so run before _dl_fini, waits for a load in flight and closes loading: a
// later load from another thread parks that thread (it ends with the process), as CPython parks
// a daemon thread that asks for the GIL then (python/common.h).
#pragma once
#include <string>

namespace kiln::runtime {

// Held around dlopen calls whose results must not interleave with another load's (the objects
// that appear in the process during a kernel library's load are that load's). Parks the calling
// thread when the process is exiting; the thread that runs the exit handlers passes.
class LoadingSection {
 public:
  LoadingSection();
  ~LoadingSection();
  LoadingSection(const LoadingSection&) = delete;
  LoadingSection& operator=(const LoadingSection&) = delete;
};

// dlopen(name, flags) inside a LoadingSection.
void* open_library(const std::string& name, int flags);

}  // namespace kiln::runtime
