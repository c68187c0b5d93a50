// How NumPy's messages print a float scalar (f"{value}", which is Python's repr of the float:
// "autodetected range of [nan, inf] is not finite"), for the values a runtime check names.
#pragma once
#include <string>

namespace kiln::runtime {

// repr(float(value)): the shortest digits that read back as the value, positional for decimal
// exponents -4 to 15 ("0.0001", "1.0", "1000000000000000.0"), scientific outside ("1e-05",
// "1.5e+16"), and "nan", "inf", "-inf".
std::string float_text(double value);

}  // namespace kiln::runtime
