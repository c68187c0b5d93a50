#include "ir/size_choices.h"

#include <algorithm>

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
  overrun_ = true;
  return computed;
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
