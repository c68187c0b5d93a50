// A loop that updates a carried array in the buffer of its initial value (the enclosing body's
// donated parameter: scheduler.cpp, reusable_output) must not write it while something still
// reads the old value. Reads the loop itself depends on run before it: the sieve's `if s[i]:`
// reads the flags, then the loop striking the multiples of i updates them in place; before,
// each outer iteration copied the whole array in and out (O(n^2): 6-8x NumPy's time at 100k).
#pragma once
#include "ir/graph.h"

namespace kiln::sched {

// Whether `init` is `loop`'s input once, every other use of it is a value `loop` depends on
// (computed before the loop runs), and no other input of `loop` is a view of it (which the
// loop would read as it writes).
bool read_only_before_loop(const ir::Graph& graph, ir::ValueId init, ir::ValueId loop);

}  // namespace kiln::sched
