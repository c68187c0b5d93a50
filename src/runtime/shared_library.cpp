#include "runtime/shared_library.h"

#include <dlfcn.h>

#include "kiln/error.h"

namespace kiln::runtime {
namespace {

std::string last_dynamic_loader_error() {
  const char* message = dlerror();
  return message ? message : "unknown dynamic loader error";
}

}  // namespace

std::shared_ptr<SharedLibrary> SharedLibrary::open(const std::string& path) {
  // RTLD_NOW: an unresolved symbol fails here, naming the file, not at the first kernel call.
  // RTLD_LOCAL: kernels of different graphs export the same names; they must not interpose.
  // RTLD_NODELETE: a kernel library pulls in libgomp, whose worker threads outlive any one
  // kernel; unloading it under them (at dlclose, or at exit) would crash the process.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    throw Error(ErrorKind::Toolchain,
                "kiln: cannot load compiled kernel " + path + ": " + last_dynamic_loader_error());
  }
  // The constructor is private, so std::make_shared cannot reach it.
  return std::shared_ptr<SharedLibrary>(new SharedLibrary(handle, path));
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* SharedLibrary::symbol(const std::string& name) const {
  dlerror();  // a null symbol is only an error if dlerror() says so
  void* address = dlsym(handle_, name.c_str());
  if (address == nullptr) {
    const char* message = dlerror();
    if (message != nullptr) {
      throw Error(ErrorKind::Toolchain,
                  "kiln: symbol " + name + " not found in " + path_ + ": " + message);
    }
  }
  return address;
}

}  // namespace kiln::runtime
