// kiln._kiln.cache_*: the disk cache's maintenance (runtime/cache_maintenance.h) for
// `python -m kiln.cache`; the logic is the C++ API's, this file only converts.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "python/common.h"
#include "runtime/cache_maintenance.h"
#include "runtime/disk_cache.h"

namespace kiln::python {
namespace {

std::string resolved(const std::string& directory) {
  return directory.empty() ? runtime::default_cache_dir() : directory;
}

nb::dict report_dict(const runtime::CacheReport& report) {
  nb::list entries;
  for (const runtime::CacheEntryInfo& entry : report.entries) {
    nb::dict item;
    item["key"] = entry.key;
    item["path"] = entry.path;
    item["bytes"] = entry.bytes;
    item["last_used"] = static_cast<int64_t>(entry.last_used);
    item["problem"] = entry.problem;
    entries.append(item);
  }
  nb::dict result;
  result["directory"] = report.directory;
  result["entries"] = entries;
  result["total_bytes"] = report.total_bytes;
  result["limit"] = report.limit;
  return result;
}

}  // namespace

void bind_cache_tools(nb::module_& module) {
  module.def("cache_default_dir", &runtime::default_cache_dir,
             "The cache directory kiln uses when none is configured (\"\" without a home).");
  module.def(
      "cache_inspect",
      [](const std::string& directory, bool verify) {
        return report_dict(runtime::inspect_cache(resolved(directory), verify));
      },
      nb::arg("directory"), nb::arg("verify") = false,
      "Entries (key, path, bytes, last_used, problem), total bytes and the size limit.");
  module.def(
      "cache_remove_entry",
      [](const std::string& entry) { return runtime::remove_cache_entry(entry); },
      nb::arg("entry_directory"));
  module.def(
      "cache_clear", [](const std::string& directory) {
        return runtime::clear_cache(resolved(directory));
      },
      nb::arg("directory"), "Removes every entry; returns how many.");
}

}  // namespace kiln::python
