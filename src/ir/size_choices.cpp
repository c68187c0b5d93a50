#include "ir/size_choices.h"

#include <algorithm>
#include <string>

namespace kiln::ir {
namespace {

thread_local SizeChoices* current = nullptr;

}  // namespace

bool SizeChoices::choose(bool computed, const std::source_location& place) {
  auto& [choices, next] = made_[Place{place.file_name(), place.line()}];
  if (mode_ == Mode::Record) {
    choices.push_back(computed);
    return computed;
  }
  if (next < choices.size()) return choices[next++];
  if (!overrun_) overrun_at_ = Place{place.file_name(), place.line()};
  overrun_ = true;
  return computed;
}

std::string SizeChoices::unreplayed() const {
  for (const auto& [place, entry] : made_) {
    if (entry.second == entry.first.size() && !entry.first.empty()) continue;
    std::string file = place.first;
    file = file.substr(file.rfind("src/") == std::string::npos ? 0 : file.rfind("src/"));
    return file + ":" + std::to_string(place.second) + " (recorded " +
           std::to_string(entry.first.size()) + " choices, replayed " +
           std::to_string(entry.second) + (overrun_ ? ", asked more" : "") + ")";
  }
  if (!overrun_) return "";
  std::string file = overrun_at_.first;
  file = file.substr(file.rfind("src/") == std::string::npos ? 0 : file.rfind("src/"));
  return file + ":" + std::to_string(overrun_at_.second) + " (asked more often than recorded)";
}

bool SizeChoices::replayed_all() const {
  return !overrun_ && std::all_of(made_.begin(), made_.end(), [](const auto& entry) {
           return entry.second.second == entry.second.first.size();
         });
}

SizeChoiceScope::SizeChoiceScope(SizeChoices* choices) : previous_(current) { current = choices; }

SizeChoiceScope::~SizeChoiceScope() { current = previous_; }

bool size_choice(bool computed, const std::source_location& place) {
  return current ? current->choose(computed, place) : computed;
}

}  // namespace kiln::ir
