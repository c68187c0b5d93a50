// How a CUDA program is cut into NVRTC compilation units (api/pipeline.cpp compiles them in
// parallel helper processes): the NVRTC stage lasts as long as its slowest unit, so the units
// are balanced by an estimate of each kernel's compile time, not cut in source order (session
// 67, H200: one fused BN+ReLU+maxpool kernel of 1,191 lines took 310 ms of NVRTC, a BERT
// layer norm 336 ms, most kernels 10-30 ms). The split is a function of the source alone, so a
// program's units, and their cache keys, are the same on every compile.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

struct CudaSource;

// The estimated NVRTC cost of one kernel's functions (CudaSource::functions[k]), in characters
// of code after unrolling: each statement line counts its characters once per step of the
// loops that `#pragma unroll` (a count's steps, or all of a constant trip count) unrolls around
// it, and each function a fixed amount for what every kernel compiles.
int64_t estimated_nvrtc_cost(const std::string& functions);

// estimated_nvrtc_cost of each of `source`'s functions.
std::vector<int64_t> estimated_nvrtc_costs(const CudaSource& source);

// How many units a program of functions of these costs is compiled as, with at most
// `most_units` compiled at once (the machine's cores): runs of about kFunctionsPerUnit
// functions (each unit pays for the header again, 30-60 ms, and may start a helper), or more
// where it takes more for the costliest function to bound the slowest unit (the total over the
// costliest, or over a header's cost where that is more).
size_t cuda_unit_count(const std::vector<int64_t>& costs, size_t most_units);

// The functions of each of at most `units` units (fewer when there are fewer functions), by
// longest processing time first: the costliest function first, each into the unit of least
// cost so far (ties: the first such unit), so that a function costlier than the average unit
// has a unit of its own. Every function is in exactly one unit; each unit's in source order.
std::vector<std::vector<size_t>> balanced_units(const std::vector<int64_t>& costs, size_t units);

// `source` as at most `units` compilation units, each the header and its functions
// (balanced_units of their estimated_nvrtc_cost).
std::vector<std::string> split_cuda_source(const CudaSource& source, size_t units);

}  // namespace kiln::codegen
