#include "ir/size_choices.h"

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
  return next < choices.size() ? choices[next++] : computed;
}

SizeChoiceScope::SizeChoiceScope(SizeChoices* choices) : previous_(current) { current = choices; }

SizeChoiceScope::~SizeChoiceScope() { current = previous_; }

bool size_choice(bool computed, const std::source_location& place) {
  return current ? current->choose(computed, place) : computed;
}

}  // namespace kiln::ir
