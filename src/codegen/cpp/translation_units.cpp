#include "codegen/cpp/translation_units.h"

#include <algorithm>
#include <cstdlib>

#include "kiln/error.h"
#include "runtime/environment_numbers.h"

namespace kiln::codegen {

SourceFile lay_out_units(const std::string& prefix, const std::vector<std::string>& pieces,
                         size_t unit_bytes) {
  std::vector<std::vector<size_t>> units(1);
  std::vector<size_t> unit_sizes(1, 0);
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (unit_sizes.back() > 0 && unit_sizes.back() + pieces[k].size() > unit_bytes) {
      units.emplace_back();
      unit_sizes.push_back(0);
    }
    units.back().push_back(k);
    unit_sizes.back() += pieces[k].size();
  }
  SourceFile file;
  file.units = static_cast<int>(units.size());
  file.text = prefix;
  for (size_t unit = 0; unit < units.size(); ++unit) {
    file.largest_unit = std::max(file.largest_unit, prefix.size() + unit_sizes[unit]);
    if (file.units > 1)
      file.text += "\n#if !defined(KILN_UNIT) || KILN_UNIT == " + std::to_string(unit) + "\n";
    for (size_t piece : units[unit]) file.text += pieces[piece];
    if (file.units > 1) file.text += "#endif  // unit " + std::to_string(unit) + "\n";
  }
  return file;
}

size_t parallel_unit_bytes(const std::vector<std::string>& pieces, int workers) {
  constexpr size_t kLeastUnitBytes = size_t(32) << 10;
  size_t total = 0;
  for (const std::string& piece : pieces) total += piece.size();
  const size_t even = total / static_cast<size_t>(std::max(workers, 1)) + 1;
  return std::min(unit_bytes_setting(), std::max(kLeastUnitBytes, even));
}

size_t unit_bytes_setting() {
  constexpr size_t kDefaultUnitBytes = size_t(2) << 20;
  return static_cast<size_t>(runtime::environment_whole_number(
      "KILN_UNIT_BYTES", kDefaultUnitBytes, 1, "is not a positive number of bytes"));
}

}  // namespace kiln::codegen
