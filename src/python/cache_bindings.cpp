// kiln._kiln.cache_*: the disk cache's maintenance (runtime/cache_maintenance.h) for
// `python -m kiln.cache`, and its records (DiskCache::store_record) with the traced graphs they
// hold (ir/serializer.h) for the torch backend's warm start; the logic is the C++ API's, this
// file only converts.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "python/common.h"
#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>

#include "api/logging.h"
#include "api/runtime_checks.h"
#include "api/trace.h"
#include "ir/serializer.h"
#include "kiln/tensor.h"

#include "runtime/build_identity.h"
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

// The disk cache compiles with `options` use: records only where it persists.
std::optional<runtime::DiskCache> persistent_cache(nb::handle options) {
  Options parsed = options_from_dict(options);
  if (!parsed.disk_cache) return std::nullopt;
  return runtime::DiskCache::open(parsed.cache_dir);
}

}  // namespace

void bind_cache_records(nb::module_& module) {
  module.def(
      "serialize_trace",
      [](detail::Trace& trace, const std::vector<Tensor>& outputs) {
        if (!trace.regions.empty() || !trace.cond_sides.empty())
          throw Error(ErrorKind::Internal, "kiln: serialize_trace: a loop or branch is still open");
        ir::Graph graph = trace.graph;
        std::vector<ir::ValueId> ids;
        for (const Tensor& output : outputs) {
          if (output.trace() != &trace)
            throw Error(ErrorKind::Value, "kiln: serialize_trace: an output of another trace");
          ids.push_back(output.id());
        }
        graph.set_outputs(ids);
        std::string bytes = ir::serialize_graph(graph);
        nb::list checks;
        for (const detail::Trace::Check& check : trace.checks)
          checks.append(nb::make_tuple(check.flag, check.value, static_cast<int>(check.kind),
                                       check.before, check.after));
        return nb::make_tuple(nb::bytes(bytes.data(), bytes.size()), checks);
      },
      nb::arg("trace"), nb::arg("outputs"),
      "(graph bytes, checks): the traced graph with `outputs` (ir/serializer.h) and its runtime "
      "checks, what load_trace takes back.");
  module.def(
      "load_trace",
      [](nb::handle trace_object, nb::bytes bytes,
         const std::vector<std::tuple<int32_t, int32_t, int, std::string, std::string>>& checks) {
        detail::Trace& trace = nb::cast<detail::Trace&>(trace_object);
        if (trace.graph.size() != 0)
          throw Error(ErrorKind::Value, "kiln: load_trace: the trace is not empty");
        // deserialize_graph verifies the graph; the checks are verified here.
        ir::Graph graph = ir::deserialize_graph(std::string_view(bytes.c_str(), bytes.size()));
        std::vector<detail::Trace::Check> loaded;
        for (const auto& [flag, value, kind, before, after] : checks) {
          if (!detail::well_formed_check(graph, flag, value) || kind < 0 ||
              kind > static_cast<int>(ErrorKind::LinAlg))
            throw Error(ErrorKind::Value, "kiln: load_trace: a damaged runtime check");
          detail::Trace::Check check;
          check.flag = flag, check.value = value, check.kind = static_cast<ErrorKind>(kind);
          check.before = before, check.after = after;
          loaded.push_back(std::move(check));
        }
        nb::list outputs;  // each keeps the trace alive, as the trace's own methods' results
        for (ir::ValueId id : graph.outputs()) {
          nb::object output = nb::cast(Tensor(&trace, id));
          nb::keep_alive_obj(output, trace_object);
          outputs.append(output);
        }
        graph.set_outputs({});
        trace.graph = std::move(graph);
        trace.checks = std::move(loaded);
        return outputs;
      },
      nb::arg("trace"), nb::arg("bytes"), nb::arg("checks"),
      "Fills an empty trace with what serialize_trace returned; returns the outputs.");
  module.def(
      "cache_record_key",
      [](std::vector<std::string> fields) {
        fields.insert(fields.begin(), {"record", runtime::build_identity()});
        return runtime::cache_key(fields);
      },
      nb::arg("fields"), "The key of a cache record: a digest of `fields` and kiln's build.");
  module.def(
      "cache_store_record",
      [](nb::handle options, const std::string& key, nb::bytes bytes) {
        if (auto cache = persistent_cache(options))
          cache->store_record(key, std::string(bytes.c_str(), bytes.size()));
      },
      nb::arg("options"), nb::arg("key"), nb::arg("bytes"),
      "Stores a record in the disk cache `options` name (nothing with disk_cache off).");
  module.def(
      "cache_load_record",
      [](nb::handle options, const std::string& key) -> nb::object {
        auto cache = persistent_cache(options);
        std::string why;
        std::optional<std::string> bytes = cache ? cache->load_record(key, &why) : std::nullopt;
        if (!why.empty())
          api::log(api::LogChannel::Cache, "record " + key.substr(0, 16) + " refused: " + why);
        if (!bytes) return nb::none();
        return nb::bytes(bytes->data(), bytes->size());
      },
      nb::arg("options"), nb::arg("key"),
      "A record's bytes, or None (missing, or refused: damaged, another key's, not private).");
}

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
