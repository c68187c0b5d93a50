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
// for its sizes. Literals in places C++ needs constants (pragmas, array bounds) stay literal:
// a difference there refuses the generic source.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"

namespace kiln::codegen {

struct SizeGenericSource {
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

  std::string text() const;  // prefix + pieces: what the toolchain compiles
};

// The generic source of `hint` given `probes` (the same program scheduled for other sizes;
// those that differ from it in more than integer literals are not used), or nullopt with
// `why` set when none is usable or a literal that varies is in a place a runtime value cannot
// take.
std::optional<SizeGenericSource> size_generic_source(const CppSource& hint,
                                                     const std::vector<CppSource>& probes,
                                                     std::string& why);

// The size table of `source` (emitted for some sizes) for the generic source's kernels, or
// nullopt with `why` set when `source` is not the generic source with other integers.
std::optional<std::vector<int64_t>> size_table(const SizeGenericSource& generic,
                                               const CppSource& source, std::string& why);

}  // namespace kiln::codegen
