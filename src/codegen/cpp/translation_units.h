// Bounded compile work: a generated source too big for one compiler process is split into
// translation units that the toolchain compiles in parallel and links into one library
// (runtime/toolchain.h). The units stay in one file, the cache's one readable source: after the
// prefix they all share, unit k's pieces sit in `#if !defined(KILN_UNIT) || KILN_UNIT == k`, so
// the file still compiles whole, and each compiler process, given -DKILN_UNIT=k, only skips the
// other units' lines.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace kiln::codegen {

struct SourceFile {
  std::string text;
  int units = 1;
  size_t largest_unit = 0;  // bytes of the largest unit, its share of the prefix included
  size_t largest_kernel = 0;  // bytes of the longest kernel function (CppSource's)
};

// The pieces, in order and never cut, packed into units of at most `unit_bytes` each (a piece
// larger than that is a unit of its own). One unit: the prefix and the pieces, no #if.
SourceFile lay_out_units(const std::string& prefix, const std::vector<std::string>& pieces,
                         size_t unit_bytes);

// $KILN_UNIT_BYTES (a positive number of bytes), else 2 MiB: the size a unit is filled to.
size_t unit_bytes_setting();

// The unit size that spreads `pieces` (kernels: what the compiler spends its time on) evenly
// over `workers` compiler processes, at most unit_bytes_setting() and at least 32 KiB (a
// smaller unit's compiler start-up and share of the prefix would cost more than it saves). The
// executable image is no piece: it is assembled in as data (runtime/embedded_bytes.h).
size_t parallel_unit_bytes(const std::vector<std::string>& pieces, int workers);

}  // namespace kiln::codegen
