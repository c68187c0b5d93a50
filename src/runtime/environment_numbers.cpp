#include "runtime/environment_numbers.h"

#include <cstdlib>

#include "kiln/error.h"

namespace kiln::runtime {

int64_t environment_whole_number(const char* name, int64_t fallback, int64_t least,
                                 const std::string& expected) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  int64_t value = 0;
  bool whole = true;
  for (const char* c = text; *c != '\0' && whole; ++c) {
    whole = *c >= '0' && *c <= '9' && value <= (INT64_MAX - (*c - '0')) / 10;
    value = whole ? value * 10 + (*c - '0') : value;
  }
  if (!whole || value < least)
    throw Error(ErrorKind::Value, std::string("kiln: ") + name + "=" + text + " " + expected);
  return value;
}

}  // namespace kiln::runtime
