#include "api/pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <thread>

#include "api/logging.h"
#include "api/matmul_choice.h"
#include "api/options.h"
#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cpp/translation_units.h"
#include "codegen/cuda/compilation_units.h"
#include "codegen/cuda/cuda_emitter.h"
#include "ir/complex_lowering.h"
#include "ir/cond.h"
#include "ir/printer.h"
#include "ir/shape.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "passes/pipeline.h"
#include "runtime/build_identity.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/nvrtc_helpers.h"
#include "runtime/cuda/cuda_executable.h"
#include "runtime/disk_cache.h"
#include "runtime/executable_image.h"
#include "runtime/interruptible_work.h"
#include "runtime/private_files.h"
#include "runtime/toolchain.h"
#include "sched/donated_outputs.h"
#include "sched/independent_kernels.h"
#include "sched/loop_passes.h"
#include "sched/scheduler.h"
#include "target/target.h"

namespace kiln::detail {
namespace {

using api::LogChannel;

// Runs one named stage, timed under KILN_LOGS=perf.
template <class Stage>
auto run_stage(const std::string& name, Stage&& stage) {
  auto start = std::chrono::steady_clock::now();
  struct Timer {
    const std::string& name;
    std::chrono::steady_clock::time_point start;
    ~Timer() {
      if (api::log_enabled(LogChannel::Perf))
        api::log(LogChannel::Perf, name + ": " + api::milliseconds_text(start));
    }
  } timer{name, start};
  return stage();
}

}  // namespace

std::string compile_key(const std::string& graph_text,
                        const std::vector<std::vector<int64_t>>& input_strides,
                        const Options& options, const target::Target& target,
                        const std::set<std::string>& disabled) {
  std::ostringstream layouts, passes_off, donated;
  for (const auto& strides : input_strides) {
    for (int64_t s : strides) layouts << s << ",";
    layouts << ";";
  }
  for (const std::string& name : disabled) passes_off << name << ",";
  for (int32_t input : options.donated) donated << input << ",";
  // The host C++ compiler builds CPU kernels only: a GPU program's cubins are keyed by NVRTC
  // and the driver (build_cuda_modules), and a GPU machine needs no C++ compiler (probing one
  // ran five processes on a cold start, and threw where there was none).
  const std::string compiler = target.kind == target::DeviceKind::Cpu
                                   ? runtime::Toolchain::system().identity()
                                   : "no host compiler";
  return runtime::cache_key({graph_text, layouts.str(), "donated " + donated.str(), options.mode,
                             options.allow_reassociation ? "reassociate" : "strict", target.key(),
                             passes_off.str(), compiler, runtime::build_identity()});
}

namespace {

bool same_statement_shape(const std::vector<sched::Stmt>& a, const std::vector<sched::Stmt>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].kind != b[k].kind || !same_statement_shape(a[k].body, b[k].body)) return false;
  return true;
}

void copy_decisions(std::vector<sched::Stmt>& to, const std::vector<sched::Stmt>& from) {
  for (size_t k = 0; k < to.size(); ++k) {
    to[k].parallel = from[k].parallel;
    to[k].vectorize = from[k].vectorize;
    to[k].split_lanes = from[k].split_lanes;
    to[k].blocked_sum = from[k].blocked_sum;
    copy_decisions(to[k].body, from[k].body);
  }
}

// The kernels of `program` that have the statements of `decisions`' kernels take the choices
// made on sizes there: parallel loops, SIMD loops, lane splits.
void follow_decisions(sched::Program& program, const sched::Program& decisions) {
  if (program.kernels.size() != decisions.kernels.size()) return;
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    sched::Kernel& kernel = program.kernels[k];
    const sched::Kernel& decided = decisions.kernels[k];
    if (same_statement_shape(kernel.body, decided.body)) copy_decisions(kernel.body, decided.body);
  }
}

}  // namespace

// The passes over a whole scheduled program, after the loop passes (schedule_program).
constexpr const char* kProgramPasses[] = {"write_donated_outputs", "join_independent_kernels"};

sched::Program schedule_program(const ir::Graph& graph,
                                const std::vector<std::vector<int64_t>>& input_strides,
                                const target::Target& target,
                                const std::set<std::string>& disabled,
                                const std::vector<int32_t>& donated, size_t checks,
                                const sched::Program* decisions) {
  std::vector<std::string> fusion_notes;
  // A GPU run tests its checks after the call (cuda_executable.h): a failed one would leave the
  // donated inputs written by a call that raised.
  const std::vector<int32_t> usable =
      checks > 0 && target.kind != target::DeviceKind::Cpu
          ? std::vector<int32_t>{}
          : sched::usable_donations(graph, input_strides, donated);
  sched::Program program =
      run_stage("schedule", [&] {
        return sched::schedule(graph, input_strides, &fusion_notes, usable,
                               sched::schedule_hints(target));
      });
  for (const std::string& note : fusion_notes) api::log(LogChannel::Schedule, "not fused: " + note);
  for (const sched::LoopPass& pass : sched::loop_passes(target)) {
    if (disabled.count(pass.name)) continue;
    bool changed = run_stage(pass.name, [&] {
      if (pass.run_program) return pass.run_program(program, target);
      bool any = false;
      for (sched::Kernel& kernel : program.kernels) any = pass.run(kernel, target) || any;
      if (decisions != nullptr && pass.name == "mark_reduction_lanes")
        follow_decisions(program, *decisions);
      return any;
    });
    if (api::log_enabled(LogChannel::Passes))
      api::log(LogChannel::Passes,
               pass.name + (changed ? ":\n" + sched::print_program(program) : ": unchanged"));
  }
  auto program_pass = [&](const std::string& name, const auto& pass) {
    if (disabled.count(name)) return;
    bool changed = run_stage(name, pass);
    if (api::log_enabled(LogChannel::Passes))
      api::log(LogChannel::Passes,
               name + (changed ? ":\n" + sched::print_program(program) : ": unchanged"));
  };
  // After the loop passes: it reorders the stores of the kernels it changes and reads their
  // final indices.
  if (!usable.empty())
    program_pass("write_donated_outputs",
                 [&] { return sched::write_donated_outputs(program, usable); });
  if (!usable.empty() && !sched::checks_precede_input_writes(program, checks))
    return schedule_program(graph, input_strides, target, disabled, {}, checks, decisions);
  // Last, on a GPU: parts of one kernel are one launch (codegen/cuda: combined launches).
  if (target.kind == target::DeviceKind::Cuda)
    program_pass("join_independent_kernels",
                 [&] { return sched::join_independent_kernels(program); });
  if (api::log_enabled(LogChannel::Schedule))
    api::log(LogChannel::Schedule,
             "program for " + target.description() + ":\n" + sched::print_program(program));
  return program;
}

namespace {

// Compile work is bounded: the source is compiled in units of at most unit_bytes_setting()
// each, its kernels spread over the target's threads (codegen/cpp/translation_units.h), in
// parallel; a unit past kMaxUnitBytes (one kernel that large), a source past kMaxSourceBytes
// (the compiler's time and memory grow with it) or a kernel function past kMaxKernelBytes is
// refused: the frontend runs the function eagerly, warning why (kiln.Unsupported). g++'s time
// grows faster than a function's length: the seed models' and NumPy workloads' kernels are at
// most 33 KB; 1,000 unrolled steps stacked by np.stack made one of 976 KB (2.4 minutes).
constexpr size_t kMaxUnitBytes = size_t(8) << 20;
constexpr size_t kMaxSourceBytes = size_t(16) << 20;
constexpr size_t kMaxKernelBytes = size_t(256) << 10;

}  // namespace

std::string key_marker_source(const std::string& key, bool cuda) {
  // `used`: kept though nothing reads it; static: the units of a C++ source link together.
  return std::string(cuda ? "extern \"C\" __device__" : "static __attribute__((used))") +
         " const char kiln_cache_key[] = \"" + runtime::cache_key_marker(key) + "\";\n";
}

void check_source_size(const codegen::SourceFile& file, const ir::Graph& graph) {
  api::log(LogChannel::Perf, "source: " + std::to_string(file.text.size()) + " bytes in " +
                                 std::to_string(file.units) + " translation unit" +
                                 (file.units > 1 ? "s" : "") + ", longest kernel " +
                                 std::to_string(file.largest_kernel) + " bytes");
  struct Bound {
    size_t size, most;
    const char* what;
  };
  for (const Bound& bound : {Bound{file.text.size(), kMaxSourceBytes, "graph"},
                             Bound{file.largest_unit, kMaxUnitBytes, "compile"},
                             Bound{file.largest_kernel, kMaxKernelBytes, "kernel function"}})
    if (bound.size > bound.most)
      throw Error(ErrorKind::Unsupported,
                  "kiln: the generated source of this graph (" + std::to_string(graph.size()) +
                      " ops) is " + std::to_string(file.text.size() >> 10) + " KiB, its longest "
                      "kernel " + std::to_string(file.largest_kernel >> 10) + " KiB: past kiln's "
                      "bound of " + std::to_string(bound.most >> 10) + " KiB for one " +
                      bound.what + "; it runs eagerly (KILN_LOGS=perf shows the sizes)");
}

namespace {

// A complex input's strides as its real pairs' (ir/complex_lowering.h): each doubled, then 1.
std::vector<std::vector<int64_t>> real_input_strides(
    const ir::Graph& graph, const std::vector<std::vector<int64_t>>& input_strides) {
  std::vector<std::vector<int64_t>> result = input_strides;
  for (size_t k = 0; k < result.size() && k < graph.inputs().size(); ++k) {
    if (!is_complex(graph.node(graph.inputs()[k]).dtype) || result[k].empty()) continue;
    for (int64_t& stride : result[k]) stride *= 2;
    result[k].push_back(1);
  }
  return result;
}

runtime::ExecutableImage read_image(const runtime::SharedLibrary::Use& library) {
  auto* size = static_cast<const unsigned long*>(library.symbol(runtime::kImageSizeSymbol));
  auto* bytes = static_cast<const char*>(library.symbol(runtime::kImageSymbol));
  auto find = [&](const std::string& name, int64_t) { return library.symbol(name); };
  return runtime::deserialize_image(std::string_view(bytes, *size), find);
}

// The C++ source the cache keeps for `program`; `image` gets the executable image linked in
// (runtime/embedded_bytes.h), `kernels` the kernel calls, `units` the units, `graph` an op to name.
std::string program_source(const sched::Program& program, const Options& options,
                           const target::Target& target, const std::string& key,
                           const ir::Graph* graph, std::vector<runtime::KernelCall>* kernels,
                           int* units, std::vector<runtime::EmbeddedBytes>* image) {
  codegen::CppSource source =
      run_stage("emit", [&] { return codegen::emit_cpp(program, options, target); });
  const size_t unit_bytes = codegen::parallel_unit_bytes(source.pieces, target.threads);
  *image = {{runtime::kImageSymbol, runtime::kImageSizeSymbol,
             runtime::serialize_image(program, source.kernels)}};
  codegen::SourceFile file = codegen::lay_out_units(source.prefix, source.pieces, unit_bytes);
  file.largest_kernel = source.largest_kernel;
  if (graph != nullptr) check_source_size(file, *graph);
  *units = file.units;
  if (kernels != nullptr) *kernels = std::move(source.kernels);
  return std::move(file.text) + key_marker_source(key, false);
}

}  // namespace

std::string CompiledGraph::graph_text() const { return ir::print_graph(graph); }

std::string CompiledGraph::source_text() const {
  if (!source.empty() || source_path.empty()) return source;
  // The entry's copy, read as the cache reads its files: private, and bounded (kiln writes at
  // most kMaxSourceBytes and its key there; a bigger file is not kiln's).
  runtime::Descriptor file = runtime::open_private_file(source_path);
  std::string text;
  if (!file.valid() || !runtime::read_all(file.get(), text, kMaxSourceBytes + 4096)) return "";
  return text;
}

std::set<std::string> cpu_disabled_passes() {
  std::set<std::string> names = disabled_passes();
  names.insert("channels_last_filters");
  names.insert("matmul_epilogues");
  names.insert("depthwise_convolutions");  // oneDNN has depthwise kernels of any rank
  names.insert("matrix_vector_inline");  // the CPU runs large matrix-vector products as gemv
  names.insert("integer_matmul_inline");  // the CPU has extern/integer_matmul.cpp
  return names;
}

std::vector<std::string> switchable_pass_names() {
  std::vector<std::string> names = passes::graph_pass_names();
  names.insert(names.end(), std::begin(kProgramPasses), std::end(kProgramPasses));
  for (const target::Target& target : {target::Target{}, target::cuda_device(90, 1)})
    for (const sched::LoopPass& pass : sched::loop_passes(target))
      if (std::find(names.begin(), names.end(), pass.name) == names.end())
        names.push_back(pass.name);
  return names;
}

std::set<std::string> disabled_passes() {
  std::set<std::string> names;
  const char* text = std::getenv("KILN_DISABLE_PASSES");
  if (text == nullptr) return names;
  const std::vector<std::string> known = switchable_pass_names();
  std::stringstream stream(text);
  std::string name;
  while (std::getline(stream, name, ',')) {
    size_t first = name.find_first_not_of(" \t"), last = name.find_last_not_of(" \t");
    if (first == std::string::npos) continue;
    name = name.substr(first, last - first + 1);
    if (name == "all") {
      names.insert(known.begin(), known.end());
      continue;
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string valid;
      for (const std::string& k : known) valid += k + ", ";
      throw Error(ErrorKind::Value, "kiln: KILN_DISABLE_PASSES: unknown pass '" + name +
                                        "' (valid: " + valid + "all)");
    }
    names.insert(name);
  }
  return names;
}

PreparedGraph prepare_graph(const ir::Graph& traced,
                            const std::vector<std::vector<int64_t>>& input_strides,
                            const std::set<std::string>& disabled, passes::PassRecord* record) {
  PreparedGraph prepared;
  // A trace that captured loops keeps the bodies' original nodes, dead (api/loop_trace.h).
  bool captured_loops = std::any_of(traced.nodes().begin(), traced.nodes().end(),
                                    [](const ir::Node& node) { return node.op == ir::Op::placeholder; });
  std::optional<ir::Graph> pruned;
  if (captured_loops) pruned = passes::eliminate_dead_code(traced);
  const ir::Graph& live = pruned ? *pruned : traced;  // (a ?: of the two would copy `traced`)
  // A replay's trace is another size of one the verifier passed (api/size_generic_graph.h)
  if (!record || !record->replaying) run_stage("verify", [&] { ir::verify(live, "trace"); });
  if (api::log_enabled(LogChannel::Graph))
    api::log(LogChannel::Graph, "traced graph:\n" + ir::print_graph(live, true));
  // The scheduler runs loops: a cond's regions become loops of 0 or 1 iterations (ir/cond.h).
  // (Each lowering copies the graph: only where it has something to lower.)
  std::optional<ir::Graph> looped, real;
  const ir::Graph* lowered = &live;
  if (ir::has_conditionals(*lowered)) {
    looped = run_stage("lower conditionals", [&] { return ir::lower_conditionals(*lowered); });
    lowered = &*looped;
  }
  if (ir::has_complex_values(*lowered)) {
    real = run_stage("lower complex", [&] { return ir::lower_complex(*lowered); });
    lowered = &*real;
  }
  prepared.strides = real_input_strides(live, input_strides);
  prepared.graph =
      run_stage("graph passes",
                [&] { return passes::run_graph_passes(*lowered, disabled, record); });
  ir::verify(prepared.graph, "graph passes");
  if (ir::has_complex_values(live)) {
    for (ir::ValueId input : live.inputs())
      prepared.complex_inputs.push_back(is_complex(live.node(input).dtype));
    for (ir::ValueId output : live.outputs())
      prepared.complex_outputs.push_back(is_complex(live.node(output).dtype));
  }
  return prepared;
}

runtime::ExecutionSettings execution_settings(const Options& options,
                                              const target::Target& target,
                                              const PreparedGraph& prepared,
                                              const std::string& tuning_file) {
  const api::ModeSettings& mode = api::mode_settings(options.mode);
  runtime::ExecutionSettings settings;
  settings.threads = target.threads;
  settings.pool_outputs = mode.reduce_overhead;
  settings.cuda_graphs = mode.cuda_graphs == api::CudaGraphs::Always;
  settings.host_bound_graphs = mode.cuda_graphs == api::CudaGraphs::WhenHostBound;
  settings.autotune = mode.autotune;
  settings.tuning_file = tuning_file;
  settings.complex_inputs = prepared.complex_inputs;
  settings.complex_outputs = prepared.complex_outputs;
  return settings;
}

target::Target cuda_target() {
  const runtime::cuda::DeviceInfo& device = runtime::cuda::device();  // no GPU: Error(Unsupported)
  return target::cuda_device(device.architecture, device.multiprocessors,
                             device.shared_memory_per_block);
}

CudaModules build_cuda_modules(const codegen::CudaSource& source, const std::string& key,
                               runtime::DiskCache& cache, const target::Target& target) {
  namespace cuda = runtime::cuda;
  const std::string versioned = runtime::cache_key(
      {key, cuda::compiler_identity(), "driver " + std::to_string(cuda::device().driver_version)});
  // The program as units of a few kernels, each its own cache entry, compiled (or read back)
  // on threads of their own: NVRTC takes about 10 ms a kernel, and a BERT has a hundred.
  // NVRTC compiles one program at a time in a process, and ptxas inside it has crashed on
  // valid kernels: units compile in kiln-nvrtc helpers (nvrtc_helpers.h), in parallel, and a
  // crash costs a helper, not this process. A helper's start pays NVRTC's (about 0.3 s on the
  // H200 machine, as this process's first unit would; 30-50 ms a unit after it) and it serves
  // the compiles that follow (a training step's backward after its forward).
  // The units are balanced by each kernel's estimated NVRTC time (compilation_units.h).
  const size_t most_units = std::max(1u, std::thread::hardware_concurrency());
  const std::vector<std::string> units = codegen::split_cuda_source(
      source, codegen::cuda_unit_count(codegen::estimated_nvrtc_costs(source), most_units));
  std::vector<std::string> cubins(units.size());
  std::vector<bool> hits(units.size());
  // Each unit's key covers its text: what the emitter prints may depend on more than the
  // graph's key (KILN_CUDA_DEVICE_LOOPS), and a cubin of other functions must never load.
  std::vector<std::string> unit_keys;
  for (size_t u = 0; u < units.size(); ++u)
    unit_keys.push_back(runtime::cache_key(
        {versioned, "unit " + std::to_string(u) + " of " + std::to_string(units.size()), units[u]}));
  run_stage("nvrtc", [&] {
    runtime::run_interruptibly(units.size(), most_units, [&](size_t u, const runtime::StopFlag&) {
      const std::string& unit_key = unit_keys[u];
      runtime::CachedObject object = cache.get_or_build(
          unit_key, [&] { return units[u] + key_marker_source(unit_key, true); },
          [&](const std::string& source_path, const std::string& object_path) {
            const auto start = std::chrono::steady_clock::now();
            const std::string crashes = cuda::compile_cubin_file_isolated(
                source_path, object_path, target.architecture);
            api::log(LogChannel::Perf, "nvrtc unit " + std::to_string(u) + ": " +  // slowest = stage
                         api::milliseconds_text(start) + (crashes.empty() ? "" : "; " + crashes));
          });
      cubins[u] = std::move(object.bytes);  // as verified: never the file read again
      hits[u] = object.hit;
      api::log(LogChannel::Cache,
               std::string(object.hit ? "hit " : "miss ") + unit_key + " -> " + object.path);
    });
  });
  CudaModules result;
  result.source_path = cache.source_path(unit_keys[0]);  // the header and its kernels
  result.all_hit = std::all_of(hits.begin(), hits.end(), [](bool hit) { return hit; });
  result.modules = run_stage("load", [&] {
    std::vector<std::shared_ptr<cuda::Module>> loaded;
    for (const std::string& cubin : cubins) loaded.push_back(cuda::Module::load(cubin));
    return loaded;
  });
  return result;
}

namespace {

// The CUDA target: schedule and emit (milliseconds, on every compile: the program and the
// launches come from them), NVRTC (the slow part) only on a disk-cache miss.
std::unique_ptr<CompiledGraph> compile_graph_cuda(const ir::Graph& traced,
                                                  const std::vector<std::vector<int64_t>>& input_strides,
                                                  const Options& options, CompileStats& stats,
                                                  std::vector<runtime::RuntimeCheck> checks) {
  const target::Target target = cuda_target();
  const std::set<std::string> disabled = disabled_passes();
  auto result = std::make_unique<CompiledGraph>();
  PreparedGraph prepared = prepare_graph(traced, input_strides, disabled);
  result->graph = prepared.graph;
  const std::string graph_key =
      compile_key(ir::print_graph(prepared.graph), prepared.strides, options, target, disabled);
  runtime::DiskCache cache = runtime::DiskCache::open(options.cache_dir, options.disk_cache);
  const bool autotune = api::mode_settings(options.mode).autotune;
  std::optional<ir::Graph> tuned;  // max-autotune: library or generated matmuls
  std::string choices_text;
  if (autotune) {  // timed once, then read back from a record under the graph's key
    const std::string record = runtime::cache_key({graph_key, "matmul choices"});
    MatmulChoices choices;
    if (std::optional<std::string> text = cache.load_record(record))
      read_matmul_choices(*text, choices);
    const size_t known = choices.size();
    tuned = run_stage("choose matmul kernels",
                      [&] { return choose_matmul_kernels(result->graph, options, choices); });
    choices_text = matmul_choices_text(choices);
    if (choices.size() != known) {
      try {
        cache.store_record(record, choices_text);
      } catch (const Error&) {
        // A read-only cache times the products again in the next process.
      }
    }
  }
  sched::Program program =
      schedule_program(tuned ? *tuned : result->graph, prepared.strides, target, disabled,
                       options.donated, checks.size());
  codegen::CudaSource source = run_stage(
      "emit", [&] { return codegen::emit_cuda(program, options, target, autotune); });
  CudaModules built =
      build_cuda_modules(source, runtime::cache_key({graph_key, choices_text}), cache, target);
  result->source = source.text;
  result->source_path = built.source_path;
  const std::string tuning_file =  // max-autotune's choices, beside the first unit's cubin
      result->source_path.substr(0, result->source_path.find_last_of('/')) + "/autotune-cuda.txt";
  (built.all_hit ? stats.disk_hits : stats.disk_misses)++;
  if (api::log_enabled(LogChannel::OutputCode))
    api::log(LogChannel::OutputCode, "source: " + result->source_path + "\n" + source.text);
  stats.kernels = static_cast<int>(program.kernels.size());
  result->executable = std::make_unique<runtime::CudaExecutable>(
      std::move(program), std::move(source.kernels), std::move(built.modules), std::move(checks),
      execution_settings(options, target, prepared, tuning_file));
  return result;
}

}  // namespace

std::unique_ptr<CompiledGraph> compile_graph(const ir::Graph& traced,
                                             const std::vector<std::vector<int64_t>>& input_strides,
                                             const Options& options, CompileStats& stats,
                                             std::vector<runtime::RuntimeCheck> checks) {
  api::check_log_environment();
  api::check_options(options);
  if (options.device == "cuda")
    return compile_graph_cuda(traced, input_strides, options, stats, std::move(checks));
  const std::set<std::string> disabled = cpu_disabled_passes();
  const target::Target target = target::host_cpu(options.num_threads);
  auto result = std::make_unique<CompiledGraph>();

  PreparedGraph prepared = prepare_graph(traced, input_strides, disabled);
  result->graph = prepared.graph;
  const std::vector<std::vector<int64_t>>& real_strides = prepared.strides;
  const std::string key = run_stage("cache key", [&] {
    return compile_key(ir::print_graph(prepared.graph), real_strides, options, target, disabled);
  });

  std::optional<runtime::ExecutableImage> image;  // made here on a miss, read back on a hit
  int units = 1;                                   // translation units of the source
  std::vector<runtime::EmbeddedBytes> embedded;    // the image, linked in beside the source
  runtime::DiskCache cache = runtime::DiskCache::open(options.cache_dir, options.disk_cache);
  runtime::CachedObject object = cache.get_or_build(
      key,
      [&] {
        image.emplace();
        std::optional<ir::Graph> tuned;  // max-autotune: library or generated matmuls
        if (api::mode_settings(options.mode).autotune) {
          MatmulChoices choices;
          tuned = run_stage("choose matmul kernels",
                            [&] { return choose_matmul_kernels(result->graph, options, choices); });
        }
        image->program =
            schedule_program(tuned ? *tuned : result->graph, real_strides, target, disabled,
                             options.donated, checks.size());
        result->source = program_source(image->program, options, target, key, &result->graph,
                                        &image->kernels, &units, &embedded);
        return result->source;
      },
      [&](const std::string& source_path, const std::string& object_path) {
        run_stage("toolchain", [&] {
          runtime::Toolchain::system().compile_shared_object(source_path, object_path, units,
                                                             target.threads, embedded);
        });
      });
  result->source_path = cache.source_path(key);
  (object.hit ? stats.disk_hits : stats.disk_misses)++;
  api::log(LogChannel::Cache,
           std::string(object.hit ? "hit " : "miss ") + key + " -> " + object.path);
  if (api::log_enabled(LogChannel::OutputCode))
    api::log(LogChannel::OutputCode,
             "source: " + result->source_path + "\n" + result->source_text());

  // Unloaded when too many libraries are loaded (runtime/shared_library.h); found again in the
  // cache, or rebuilt there from the executable's program, on its next run.
  runtime::SharedLibrary::Reloader reloader = [options, target, key](const sched::Program* program) {
    runtime::DiskCache cache = runtime::DiskCache::open(options.cache_dir, options.disk_cache);
    int units = 1;
    std::vector<runtime::EmbeddedBytes> embedded;
    return cache.get_or_build(
        key,
        [&] {
          if (program == nullptr)
            throw Error(ErrorKind::Toolchain, "kiln: compiled kernel " + key + " left the cache");
          return program_source(*program, options, target, key, nullptr, nullptr, &units,
                                &embedded);
        },
        [&](const std::string& source_path, const std::string& object_path) {
          runtime::Toolchain::system().compile_shared_object(source_path, object_path, units,
                                                             target.threads, embedded);
        });
  };
  runtime::SharedLibrary::Opened opened = run_stage(
      "load", [&] { return runtime::SharedLibrary::open(object, std::move(reloader)); });
  std::shared_ptr<runtime::SharedLibrary> library = opened.library;
  if (!image) image = run_stage("read image", [&] { return read_image(opened.use); });
  stats.kernels = static_cast<int>(image->program.kernels.size());
  runtime::ExecutionSettings settings = execution_settings(
      options, target, prepared,
      object.path.substr(0, object.path.find_last_of('/')) + "/autotune.txt");
  result->executable = std::make_unique<runtime::HostExecutable>(
      std::move(image->program), std::move(image->kernels), std::move(library), std::move(checks),
      std::move(settings));
  return result;
}

}  // namespace kiln::detail
