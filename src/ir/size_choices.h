// Choices that depend on sizes, shared by every size of a graph with size symbols.
//
// The graph passes and the scheduler make a few choices by comparing element counts with
// thresholds (a small product inlined rather than a BLAS call; a reduction recomputed in each
// kernel that reads it rather than given a buffer). A graph with size symbols is specialised
// and scheduled per call's sizes (ir/specialize.h), and the sizes share one compiled library
// only when their code differs in integers alone (codegen/size_parameters.h): a threshold
// crossed between two sizes gives them different code. So those choices go through
// `size_choice`: while a SizeChoices records, each returns what the sizes at hand decide and
// is noted under the place in kiln's source that asks; while it replays, the k-th choice of a
// place returns the k-th noted there. Every size then makes the recorded sizes' choices. The
// choices are heuristics, never conditions of correctness, so any replayed choice gives a
// right program; a replay whose sequence runs out (the structure differed after all) makes its
// own choices from there, and its code then differs and compiles on its own.
#pragma once
#include <cstddef>
#include <map>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace kiln::ir {

class SizeChoices {
 public:
  enum class Mode { Record, Replay };
  explicit SizeChoices(Mode mode) : mode_(mode) {}
  // Starts a replay of what was recorded, from the first choice.
  void replay() {
    mode_ = Mode::Replay;
    overrun_ = false;
    for (auto& [place, choices] : made_) choices.second = 0;
  }
  // Whether the replay so far asked each place exactly as often as the recording did: the
  // program had the recorded one's structure.
  bool replayed_all() const;
  // Where the replay did not (the first place, "file:line"), for the logs; "" when it did.
  std::string unreplayed() const;
  Mode mode() const { return mode_; }
  bool choose(bool computed, const std::source_location& place);

 private:
  using Place = std::pair<const char*, unsigned>;  // file and line of the choice
  Mode mode_;
  bool overrun_ = false;
  Place overrun_at_{"", 0};  // the first place that asked more
  std::map<Place, std::pair<std::vector<bool>, size_t>> made_;  // the choices, the next one
};

// While alive, size_choice on this thread goes through `choices` (nullptr: none).
class SizeChoiceScope {
 public:
  explicit SizeChoiceScope(SizeChoices* choices);
  ~SizeChoiceScope();
  SizeChoiceScope(const SizeChoiceScope&) = delete;
  SizeChoiceScope& operator=(const SizeChoiceScope&) = delete;

 private:
  SizeChoices* previous_;
};

// `computed` (a threshold test on sizes), or the recorded choice in its place (above).
bool size_choice(bool computed,
                 const std::source_location& place = std::source_location::current());

}  // namespace kiln::ir
