// A dlopen'ed shared object; closed when the last owner goes away.
#pragma once
#include <memory>
#include <string>
#include <utility>

namespace kiln::runtime {

class SharedLibrary {
 public:
  // Throws kiln::Error(Toolchain) with dlerror() if the file cannot be loaded.
  static std::shared_ptr<SharedLibrary> open(const std::string& path);
  ~SharedLibrary();
  // Throws if the symbol is missing.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

}  // namespace kiln::runtime
