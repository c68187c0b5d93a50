// The CUDA source kiln would compile for a traced graph, with no GPU needed: the text, its
// parts (the header and each kernel's functions) with their estimated NVRTC cost, the units
// the pipeline would compile them as, and NVRTC on a unit (kiln.bench.nvrtc_units measures the
// NVRTC stage of the seed's models with them).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <time.h>

#include "api/pipeline.h"
#include "api/runtime_checks.h"
#include "codegen/cuda/compilation_units.h"
#include "codegen/cuda/cuda_emitter.h"
#include "python/common.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln::python {
namespace {

codegen::CudaSource emit_for(detail::Trace& trace, const std::vector<Tensor>& outputs,
                             nb::handle input_strides, int architecture, int multiprocessors) {
  ir::Graph graph = trace.graph;
  std::vector<ir::ValueId> ids;
  for (const Tensor& output : outputs) ids.push_back(output.id());
  detail::append_check_outputs(trace, ids);  // computed on the device too
  graph.set_outputs(ids);
  std::vector<std::vector<int64_t>> strides;
  if (!input_strides.is_none()) strides = nb::cast<std::vector<std::vector<int64_t>>>(input_strides);
  strides.resize(graph.inputs().size());
  const target::Target target = target::cuda_device(architecture, multiprocessors);
  detail::PreparedGraph prepared = detail::prepare_graph(graph, strides, {});
  sched::Program program = detail::schedule_program(prepared.graph, prepared.strides, target, {});
  return codegen::emit_cuda(program, Options{}, target, false);
}

}  // namespace

void bind_cuda_source(nb::module_& module) {
  module.def(
      "cuda_source",
      [](detail::Trace& trace, const std::vector<Tensor>& outputs, nb::handle input_strides,
         int architecture, int multiprocessors) {
        return emit_for(trace, outputs, input_strides, architecture, multiprocessors).text;
      },
      nb::arg("trace"), nb::arg("outputs"), nb::arg("input_strides").none() = nb::none(),
      nb::arg("architecture") = 90, nb::arg("multiprocessors") = 132,
      "The CUDA source kiln would compile for the traced graph on a device of this "
      "architecture and multiprocessor count, with no GPU needed (for reading the kernels).");
  module.def(
      "cuda_source_parts",
      [](detail::Trace& trace, const std::vector<Tensor>& outputs, nb::handle input_strides,
         int architecture, int multiprocessors) {
        codegen::CudaSource source =
            emit_for(trace, outputs, input_strides, architecture, multiprocessors);
        nb::dict parts;
        parts["header"] = source.header;
        parts["functions"] = source.functions;
        parts["costs"] = codegen::estimated_nvrtc_costs(source);
        return parts;
      },
      nb::arg("trace"), nb::arg("outputs"), nb::arg("input_strides").none() = nb::none(),
      nb::arg("architecture") = 90, nb::arg("multiprocessors") = 132,
      "cuda_source in parts: {'header', 'functions' (each distinct kernel's), 'costs' (their "
      "estimated NVRTC cost, codegen/cuda/compilation_units.h)}.");
  module.def(
      "cuda_unit_plan",
      [](const std::vector<int64_t>& costs, size_t most_units) {
        return codegen::balanced_units(costs, codegen::cuda_unit_count(costs, most_units));
      },
      nb::arg("costs"), nb::arg("most_units"),
      "The functions of each NVRTC unit the pipeline compiles a program of these function "
      "costs as, with at most `most_units` compiled at once (the machine's cores).");
  module.def(
      "nvrtc_compile_seconds",
      [](const std::string& source, int architecture) {
        nb::gil_scoped_release released;
        // The thread's CPU time: on a busy machine its wall time is mostly waiting for a core.
        auto cpu_seconds = [] {
          timespec now{};
          clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
          return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
        };
        const double start = cpu_seconds();
        runtime::cuda::compile_cubin(source, "unit.cu", architecture);
        return cpu_seconds() - start;
      },
      nb::arg("source"), nb::arg("architecture") = 90,
      "CPU seconds NVRTC takes on `source` in this thread, as kiln compiles a unit (no GPU "
      "needed; a compile error raises).");
}

}  // namespace kiln::python
