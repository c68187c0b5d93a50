// The C++/OpenMP kernel emitter: the C-like printer (codegen/c_like_printer.h) plus what the
// CPU target adds: `omp parallel for` / `omp simd` on loops, reductions (accumulators, SIMD
// lanes, thread partials, blocked float sums). Internal to src/codegen/cpp; split over
// cpp_emitter.cpp (loops, function), reduce_emitter.cpp (reductions) and blocked_sums.cpp
// (float sums blocked for accuracy).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/c_like_printer.h"
#include "codegen/cpp/cpp_emitter.h"

namespace kiln::codegen::cpp_detail {

// A Welford state (count, mean, m2) that takes one element after another is a double whatever
// the float type, as PyTorch's CPU kernels keep it: a float32 mean updated once per element
// drifts by about n ulps (a float32 variance of 3.2 million elements came out 1e-3 off, NumPy's
// 3e-8). SIMD lanes' states, merged pairwise after a block of elements each, stay in the float
// type (in double a layer norm's row statistics took twice as long), but hold the statistics of
// x - K, K the first element of their first step (split_welfords_): a float32 mean near 1e3
// rounds by 3e-5 an update, which is most of a spread of 1e-2 (torch.var of such data was
// 2e-4 off, eager's 2e-7). Their totals are double states (lanes_total).
inline constexpr const char* kWelfordType = "double";

// An accumulation's variables: acc<local><suffix><subscript> and, for argmax/argmin,
// acc<local><suffix>_index<subscript>. `suffix` selects a thread's partials ("_part") or the
// SIMD lanes ("_lanes", with subscript "[lane]").
struct AccumulatorNames {
  std::string value, index;
};
inline AccumulatorNames accumulator_names(const sched::Accumulation& a, const std::string& suffix,
                                   const std::string& subscript = "") {
  std::string base = "acc" + std::to_string(a.local) + suffix;
  return {base + subscript, base + "_index" + subscript};
}

class KernelEmitter : public CLikePrinter {
 public:
  using CLikePrinter::CLikePrinter;

 private:
  std::string function_header() const override {
    return "extern \"C\" void KILN_KERNEL_NAME(char* const* kiln_args)";
  }
  // After the buffers: the threads of this call's parallel regions (runtime/kernel_call.h),
  // then the constant arrays the body reads.
  std::string extra_arguments() const override {
    std::string text = "  const int kiln_threads = (int)(long)kiln_args[" +
                       std::to_string(arguments_.size()) + "];\n";
    for (const auto& [name, type] : constants_)
      text += "  const " + type + "* KILN_RESTRICT k_" + name + " = kiln_opaque(" + name + ");\n";
    return text;
  }
  // A constant array is read through kiln_opaque: GCC 12 folds reads of an array whose
  // initializer it sees into vector constants, and in `omp simd` loops for this Xeon
  // (-march=native: rocketlake tuning) folded some wrong (a fuzzed copy of 52 int64 constants
  // stored 1 where the array holds 0; gcc -O3 -march=rocketlake -fopenmp-simd).
  std::string constant_name(const sched::Buffer& buffer) override {
    constants_.emplace(buffer.name, storage_type(buffer.dtype));
    return "k_" + buffer.name;
  }
  std::map<std::string, std::string> constants_;  // name -> element type
  bool before_loop(const Stmt& s) override;
  // An add into a buffer that other threads add into (sched/cpu/parallel_scatter_adds.h) is
  // an `omp atomic` update, unless the buffer is one of the parallel loop's `privatized_` or
  // the loop's iterations add into disjoint slices (Stmt::disjoint_adds).
  void accumulate_store(int32_t buffer, const std::string& index, const std::string& value,
                        DType from) override;
  // The small buffers a parallel loop only adds into (a histogram's 64 counts, np.bincount's):
  // each thread adds into its own copy, merged at the loop's end (an OpenMP array reduction),
  // where atomic adds from every thread into the same few cache lines serialised (a million
  // elements into 64 bins: 43 ms on two cores, NumPy's histogram 17).
  std::string privatized_adds(const Stmt& loop);
  std::set<int32_t> privatized_;
  bool adds_unshared_ = false;  // the parallel loop's Stmt::disjoint_adds
  void reduce(const Stmt& s) override;
  void scan(const Stmt& s) override;  // with Stmt::lanes_loop: sched/cpu/interleave_scans.h
  std::string local_value(ExprId id) override;

  // Every parallel region runs on the threads the runtime passes with the call (the target's,
  // lowered on a busy machine or by autotuning: runtime/kernel_call.h).
  std::string parallel_clause() const { return " num_threads(kiln_threads)"; }
  // count > 0: arrays of `count` accumulators (SIMD lanes).
  void declare_accumulators(const Stmt& s, const std::string& suffix, int64_t count = 0);
  void combine_elements(const Stmt& s, const std::string& suffix, const std::string& subscript);
  void merge_partials(const Stmt& s, const std::string& into, const std::string& from,
                      const std::string& from_subscript = "", const std::string& into_subscript = "");
  void fold_lanes(const Stmt& s, const std::string& suffix, int64_t lanes);
  void reduce_loops(const Stmt& s, bool worksharing, const std::string& suffix, bool simd_ok);
  void blocked_sum_loops(const Stmt& s, bool worksharing, const std::string& suffix,
                         int64_t lanes);
  void lane_loop(const Stmt& s, const std::string& variable, const std::string& start,
                 const std::string& lanes, const std::string& suffix);
  void combine_remainder(const Stmt& s, const std::string& variable, const std::string& start,
                         const std::string& end, const std::string& lanes_suffix,
                         const std::string& own_suffix);
  void shift_lanes(const Stmt& s, const std::string& variable, const std::string& start,
                   const std::string& end, const std::string& suffix);
  std::string lanes_total(const sched::Accumulation& a, const std::string& suffix);
  Stmt without_split_welfords(const Stmt& s) const;
  // Welford accumulations of the lane split being written (by local id), and its lanes: every
  // lane takes one element a step, so they share one count and one reciprocal of it a step, in
  // the float type, with means and m2 in two arrays (as shared_count_welfords_ below).
  std::set<int32_t> split_welfords_;
  int64_t split_lanes_ = 0;
  std::string finalized(const sched::Accumulation& a, const std::string& subscript);
  void lane_reduce(const Stmt& s);

  struct LaneAccumulation : sched::Accumulation {
    int32_t lane_variable;
  };
  std::map<int32_t, LaneAccumulation> lane_locals_;  // by local id
  // Welford accumulations of a lane reduction (by local id): every lane takes one element per
  // step, so the lanes share one count and one reciprocal of it per step (no division per
  // element), and keep their means and m2 in two arrays (acc<local>_mean[lane],
  // acc<local>_m2[lane], acc<local>_count) rather than an array of (count, mean, m2) structs.
  std::set<int32_t> shared_count_welfords_;
};

}  // namespace kiln::codegen::cpp_detail
