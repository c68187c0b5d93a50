#include "runtime/numpy_text.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kiln::runtime {

std::string float_text(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  std::string sign = std::signbit(value) ? "-" : "";
  if (value == 0) return sign + "0.0";
  char buffer[64];
  char* end = std::to_chars(buffer, buffer + sizeof buffer, std::fabs(value),
                            std::chars_format::scientific).ptr;
  std::string text(buffer, end);  // "1.25e-05": the shortest round-trip digits
  size_t e = text.find('e');
  int exponent = std::atoi(text.c_str() + e + 1);
  std::string digits = text.substr(0, e);
  if (digits.size() > 1) digits.erase(1, 1);  // the point
  if (exponent >= -4 && exponent < 16) {      // positional, with at least one decimal
    size_t point = static_cast<size_t>(exponent + 1);  // digits before the point (0: none)
    if (exponent < 0)
      return sign + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    if (point >= digits.size())
      return sign + digits + std::string(point - digits.size(), '0') + ".0";
    return sign + digits.substr(0, point) + "." + digits.substr(point);
  }
  std::string mantissa = digits.size() > 1 ? digits.substr(0, 1) + "." + digits.substr(1) : digits;
  std::string power = std::to_string(std::abs(exponent));
  if (power.size() < 2) power = "0" + power;
  return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + power;
}

}  // namespace kiln::runtime
