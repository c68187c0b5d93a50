// Whole numbers read from KILN_* environment variables, all parsed one way: decimal digits
// only (no sign, spaces, exponent or suffix), within int64. strtoull alone took " -5" as
// 18446744073709551611 and "99999999999999999999999" as its maximum, silently.
#pragma once
#include <cstdint>
#include <string>

namespace kiln::runtime {

// The value of environment variable `name`: `fallback` when it is unset or empty; anything
// else that is not a whole number of at least `least` is a kiln::Error(Value) reading
// "kiln: NAME=VALUE " + `expected`.
int64_t environment_whole_number(const char* name, int64_t fallback, int64_t least,
                                 const std::string& expected);

}  // namespace kiln::runtime
