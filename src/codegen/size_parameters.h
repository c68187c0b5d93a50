// Size-generic kernels for graphs with size symbols (ir/shape.h). The scheduler and the
// emitter work on numbers: a graph with size symbols is specialised to each call's sizes and
// scheduled for them (milliseconds). What must not be repeated per size is the C++ compile.
// So the source is made size-generic: the emitter's output for two different sets of sizes
// (the hints, and a probe) is compared token by token; where they differ only in integer
// literals, those literals are the size-dependent ones, and the generic source reads them
// from a table the runtime passes (`kiln_sizes`, after the thread count in kiln_args). The
// source for any later sizes is checked against the generic one the same way: where it
// matches, its literals at those places are its table and the generic library runs it
// unchanged, exactly as its own source would; where it does not (another schedule, a
// literal that the probe did not vary, a float constant like a mean's 1/n), it is compiled
// for its sizes. Literals in places C++ needs constants (pragmas, array bounds, launch
// bounds) stay literal: a difference there refuses the generic source.
//
// The CUDA target works the same way on its functions (codegen/cuda/cuda_emitter.h): each
// `__global__` function of the generic source takes the integers it reads as a second by-value
// parameter (`kiln_size_table<N> kiln_sizes`), and each launch of a size passes its own values
// (runtime::CudaLaunch::sizes), so a CUDA graph captures them with the launch.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cuda/cuda_emitter.h"

namespace kiln::codegen {

// How a generic kernel reads its integers.
enum class SizeTableForm {
  KernelArgument,   // C++: a pointer in kiln_args, after the thread count
  LaunchParameter,  // CUDA: a kiln_size_table<N> parameter of each __global__ function
};

// A generated source as the comparison sees it: what every translation unit starts with, and
// the definitions.
struct SourcePieces {
  SourcePieces(const CppSource& source)  // NOLINT: either source converts
      : prefix(source.prefix), pieces(source.pieces) {}
  SourcePieces(const CudaSource& source)  // NOLINT
      : prefix(source.header), pieces(source.functions), form(SizeTableForm::LaunchParameter) {}
  std::string prefix;
  std::vector<std::string> pieces;
  SizeTableForm form = SizeTableForm::KernelArgument;
};

struct SizeGenericSource {
  SizeTableForm form = SizeTableForm::KernelArgument;
  std::string prefix;
  std::vector<std::vector<std::string>> tokens;  // per piece, the hint source's tokens
  // Parameter j is token tokens[piece][token] (an integer literal).
  struct Position {
    size_t piece, token;
  };
  std::vector<Position> parameters;
  // Bounds of local arrays (hoisted invariants, `alignas(64) float h0[25];`) that vary: C++
  // needs a constant there, so the generic code declares the largest the scheduler makes
  // (sched::cpu::kMaxHoistedElements) and a size's own bound must not exceed it.
  std::vector<Position> capacities;
  std::vector<std::string> pieces;  // the generic definitions (parameters read from kiln_sizes)
  // LaunchParameter: each __global__ function that reads parameters, and the parameters (indices
  // into `parameters`) its kiln_size_table holds, in order.
  struct Function {
    std::string symbol;
    std::vector<size_t> parameters;
  };
  std::vector<Function> functions;

  std::string text() const;  // prefix + pieces: what the toolchain compiles
};

// The generic source of `hint` given `probes` (the same program scheduled for other sizes;
// those that differ from it in more than integer literals are not used), or nullopt with
// `why` set when none is usable or a literal that varies is in a place a runtime value cannot
// take.
std::optional<SizeGenericSource> size_generic_source(const SourcePieces& hint,
                                                     const std::vector<SourcePieces>& probes,
                                                     std::string& why);

// The size table of `source` (emitted for some sizes) for the generic source's kernels, or
// nullopt with `why` set when `source` is not the generic source with other integers.
std::optional<std::vector<int64_t>> size_table(const SizeGenericSource& generic,
                                               const SourcePieces& source, std::string& why);

// LaunchParameter: gives each launch of `kernels` (a size's own CudaSource::kernels, whose
// functions are the generic source's) the values of `table` its function reads.
void set_launch_sizes(const SizeGenericSource& generic, const std::vector<int64_t>& table,
                      std::vector<runtime::CudaKernelCall>& kernels);

}  // namespace kiln::codegen
