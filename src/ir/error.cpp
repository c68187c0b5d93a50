// kiln::error_message: the one place that decides how a user-facing error reads, so every
// stage's messages look alike ("kiln: add at model.cpp:12: ...").
#include "kiln/error.h"

namespace kiln {

std::string error_message(const std::string& op, const std::string& location,
                          const std::string& message) {
  std::string text = "kiln: ";
  if (!op.empty()) text += op;
  if (!location.empty()) text += (op.empty() ? "at " : " at ") + location;
  if (!op.empty() || !location.empty()) text += ": ";
  return text + message;
}

}  // namespace kiln
