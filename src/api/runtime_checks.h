// Data-dependent errors NumPy raises and a kernel cannot: the graph computes a flag and the
// offending value next to its results, and the executable raises before anything is returned
// (runtime::RuntimeCheck). One extra read of the checked tensor, fused like any reduction.
#pragma once
#include <string>
#include <vector>

#include "api/trace.h"
#include "runtime/executable.h"

namespace kiln::detail {

// Every element of `index` must lie in [-size, size) ([0, size) without `negative`: torch's
// gather and scatter): IndexError "index 5 is out of bounds for axis 0 with size 3", named
// after `op` and the builder's current location. `size` may hold size symbols (an axis of
// dynamic length).
// `kind`: the error's (torch raises RuntimeError for gather's, scatter's, index_add's).
void check_index_bounds(Trace& trace, ir::ValueId index, const ir::Dim& size, int64_t axis,
                        const std::string& op, bool negative = true,
                        ErrorKind kind = ErrorKind::Index);

// Every element of the integer `exponent` must be >= 0: NumPy's ValueError "Integers to
// negative integer powers are not allowed."
void check_nonnegative_exponent(Trace& trace, ir::ValueId exponent, const std::string& op);

// Every element of the integer `divisor` must be nonzero: torch's RuntimeError
// "ZeroDivisionError" (its integer division and remainder raise where a kernel would return 0).
void check_nonzero_divisor(Trace& trace, ir::ValueId divisor, const std::string& op);

// Every element of the integer `value` (a traced Python int) must lie in [low, high], the range
// of `dtype_name`, which NumPy 2 casts it to: its OverflowError "Python integer 300 out of
// bounds for int8".
void check_python_int_fits(Trace& trace, ir::ValueId value, int64_t low, int64_t high,
                           const std::string& dtype_name, const std::string& op);

// The general check: when the bool 0-d `flag` holds, the run raises `kind` with `before` + the
// elements of `values` (0-d or 1-d of constant length) as NumPy's messages print them (ints;
// floats as Python's repr of their float64), comma-separated, + `after`, named after `op`
// (np.histogram's "autodetected range of [nan, inf] is not finite"); where `after` holds "{}",
// the first value, then `after` with the next at each {} ("index 5 is out of bounds for axis
// 0 with size {}").
void check_flag(Trace& trace, ir::ValueId flag, ir::ValueId values, ErrorKind kind,
                const std::string& op, const std::string& before, const std::string& after);

// take / index_put with the bounds check optional: the NumPy frontend checks each index array
// against its own axis before merging several into one flat index, which is then in range.
Tensor take(const Tensor& x, const Tensor& indices, int64_t axis, bool check_bounds,
            const std::source_location& where);
Tensor index_put(const Tensor& x, const Tensor& indices, const Tensor& values, int64_t axis,
                 bool accumulate, bool check_bounds, const std::source_location& where);

// Checks recorded from number `first` on apply only where the bool 0-d `condition` holds (they
// were recorded by one side of a branch that both sides of a select compute).
void condition_checks(Trace& trace, size_t first, ir::ValueId condition);

// Whether `flag` and `values` of `graph` make a check (a bool 0-d flag; int64 or float64
// values of constant shape, 0-d or 1-d): load_trace's test of a record's checks.
bool well_formed_check(const ir::Graph& graph, ir::ValueId flag, ir::ValueId values);

// Appends the trace's check values to the graph outputs and returns their descriptors.
std::vector<runtime::RuntimeCheck> append_check_outputs(const Trace& trace,
                                                        std::vector<ir::ValueId>& outputs);

}  // namespace kiln::detail
