#include "codegen/size_parameters.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <string_view>
#include <unordered_map>

#include "sched/cpu/hoist_invariants.h"

namespace kiln::codegen {
namespace {

// Generated source is ASCII; tested inline, not through the C library's locale (every new
// size's source is scanned: size_table).
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_identifier_char(char c) { return is_identifier_start(c) || is_digit(c); }
bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// The end of the C++ token of generated source at text[i]: an identifier, a pp-number, a
// string or character literal, a run of whitespace (kept, so that the tokens spell the text
// again) or a single punctuation character. `comment` is set for a comment, which is no token:
// comments quote the graph, shapes included.
size_t token_end(std::string_view text, size_t i, bool& comment) {
  const size_t n = text.size();
  const char c = text[i];
  comment = c == '/' && i + 1 < n && (text[i + 1] == '/' || text[i + 1] == '*');
  if (comment && text[i + 1] == '/') {
    while (i < n && text[i] != '\n') ++i;
  } else if (comment) {
    size_t end = text.find("*/", i + 2);
    i = end == std::string_view::npos ? n : end + 2;
  } else if (is_space(c)) {
    while (i < n && is_space(text[i])) ++i;
  } else if (is_identifier_start(c)) {
    while (i < n && is_identifier_char(text[i])) ++i;
  } else if (is_digit(c) ||
             (c == '.' && i + 1 < n && is_digit(text[i + 1]))) {
    ++i;
    while (i < n && (is_identifier_char(text[i]) || text[i] == '.' ||
                     ((text[i] == '+' || text[i] == '-') &&
                      std::string_view("eEpP").find(text[i - 1]) != std::string_view::npos))) {
      ++i;
    }
  } else if (c == '"' || c == '\'') {
    ++i;
    while (i < n && text[i] != c) i += text[i] == '\\' ? 2 : 1;
    i = std::min(i + 1, n);
  } else {
    ++i;
  }
  return i;
}

// Calls visit(token) on each token of `text` (views into it), in order.
template <class Visit>
void for_each_token(std::string_view text, Visit&& visit) {
  bool comment = false;
  for (size_t i = 0, end = 0; i < text.size(); i = end) {
    end = token_end(text, i, comment);
    if (!comment) visit(text.substr(i, end - i));
  }
}

std::vector<std::string> tokenize(const std::string& text) {
  std::vector<std::string> tokens;
  for_each_token(text, [&](std::string_view token) { tokens.emplace_back(token); });
  return tokens;
}

// A definition's temporaries (t<id>, and the CUDA emitter's vectors kiln_v<id>, numbered by the
// loop IR's values, whose count before a kernel can vary with the sizes) renamed t0, t1, ...
// (kiln_v0, ...) in order of appearance: two definitions alike up to those names compare
// equal, and the renamed one is the same code. The names are views into the definition.
class Temporaries {
 public:
  // The prefix of `token` when it names a temporary, or an empty view.
  static std::string_view prefix(std::string_view token) {
    if (token.empty() || (token[0] != 't' && token[0] != 'k')) return {};  // most tokens
    for (std::string_view prefix : {std::string_view("t"), std::string_view("kiln_v")}) {
      if (token.size() > prefix.size() && token.starts_with(prefix) &&
          std::all_of(token.begin() + static_cast<long>(prefix.size()), token.end(),
                      [](char c) { return is_digit(c); }))
        return prefix;
    }
    return {};
  }
  // The number temporary `token` (of that prefix) is renamed to.
  size_t number(std::string_view token, std::string_view prefix) {
    auto found = numbers_.find(token);
    if (found == numbers_.end())
      found = numbers_.emplace(token, counts_[prefix.size() == 1 ? 0 : 1]++).first;
    return found->second;
  }
  // `token` renamed (itself when it is no temporary).
  std::string renamed(std::string_view token) {
    std::string_view of = prefix(token);
    return of.empty() ? std::string(token) : std::string(of) + std::to_string(number(token, of));
  }

 private:
  std::unordered_map<std::string_view, size_t> numbers_;
  size_t counts_[2] = {0, 0};
};

// The tokens of a definition, its temporaries renamed (Temporaries).
std::vector<std::string> piece_tokens(const std::string& piece) {
  std::vector<std::string> tokens;
  Temporaries names;
  for_each_token(piece, [&](std::string_view token) { tokens.push_back(names.renamed(token)); });
  return tokens;
}

// Digits, and the `ll` suffix the printer gives an int64 constant (`(int64_t)-3ll`).
bool is_integer_literal(std::string_view token) {
  const size_t digits = token.size() > 2 && token.ends_with("ll") ? token.size() - 2 : token.size();
  if (digits == 0 || digits > 18) return false;  // fits int64
  for (size_t k = 0; k < digits; ++k)
    if (!is_digit(token[k])) return false;
  return true;
}

bool is_whitespace(const std::string& token) { return !token.empty() && is_space(token[0]); }

// The index of the `back`-th token before `t` that is not whitespace (0: the nearest), or -1.
long previous(const std::vector<std::string>& tokens, size_t t, size_t back) {
  while (t > 0) {
    --t;
    if (is_whitespace(tokens[t])) continue;
    if (back-- == 0) return static_cast<long>(t);
  }
  return -1;
}

std::string token_at(const std::vector<std::string>& tokens, long index) {
  return index < 0 ? "" : tokens[static_cast<size_t>(index)];
}

// Whether integer literal `t` may be a value read at run time: not in a preprocessor line
// (pragmas), an array declaration's bound, a template argument, alignas or a case label. (A
// constant context these rules miss fails to compile: the sizes then compile their own code.)
bool takes_runtime_value(const std::vector<std::string>& tokens, size_t t) {
  size_t first = t;  // the line's first token that is not whitespace
  while (first > 0 && tokens[first - 1].find('\n') == std::string::npos) --first;
  while (first < t && is_whitespace(tokens[first])) ++first;
  if (tokens[first] == "#") return false;
  long before = previous(tokens, t, 0);
  if (token_at(tokens, before) == "[") {  // `type name[N]` declares: a bound must be constant
    std::string name = token_at(tokens, previous(tokens, t, 1));
    std::string type = token_at(tokens, previous(tokens, t, 2));
    if (!name.empty() && is_identifier_start(name[0]) &&
        (type == ">" || type == "*" || (!type.empty() && is_identifier_start(type[0])))) {
      return false;
    }
  }
  // kiln_f<8>: a template argument (the emitter spaces its comparisons, `i < 8`).
  if (token_at(tokens, before) == "<" && before > 0 &&
      !is_whitespace(tokens[static_cast<size_t>(before) - 1]))
    return false;
  if (token_at(tokens, before) == "(" &&
      (token_at(tokens, previous(tokens, t, 1)) == "alignas" ||
       token_at(tokens, previous(tokens, t, 1)) == "__launch_bounds__"))
    return false;
  return token_at(tokens, before) != "case";
}

// Whether token `t` is the bound of a local array's declaration (`alignas(64) float h0[25];`).
bool is_local_array_bound(const std::vector<std::string>& tokens, size_t t) {
  size_t first = t;
  while (first > 0 && tokens[first - 1].find('\n') == std::string::npos) --first;
  while (first < t && is_whitespace(tokens[first])) ++first;
  const std::string name = token_at(tokens, previous(tokens, t, 1));
  return tokens[first] == "alignas" && token_at(tokens, previous(tokens, t, 0)) == "[" &&
         name.size() > 1 && name[0] == 'h' && is_digit(name[1]);
}

// The line of token `t`.
std::string line_at(const std::vector<std::string>& tokens, size_t t) {
  std::string line;
  size_t begin = t;
  while (begin > 0 && tokens[begin - 1].find('\n') == std::string::npos) --begin;
  for (size_t k = begin; k < tokens.size() && tokens[k].find('\n') == std::string::npos; ++k)
    line += tokens[k];
  return line;
}

// Token `t` of `a` on its line, and what `b` has there: where two codes part.
std::string difference_at(const std::vector<std::string>& a, const std::vector<std::string>& b,
                          size_t t) {
  return "'" + line_at(a, t) + "' where the other has '" + (t < b.size() ? b[t] : "") + "'";
}

// The first place two token lists part in more than integers ("" when they do not).
std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t t = 0;
  while (t < a.size() && t < b.size() &&
         (a[t] == b[t] || (is_integer_literal(a[t]) && is_integer_literal(b[t]))))
    ++t;
  if (t == a.size() && t == b.size()) return "";
  return difference_at(a, b, std::min(t, a.size() - (a.empty() ? 0 : 1)));
}

constexpr const char* kThreadsLine = "kiln_threads = (int)(long)kiln_args[";

// `piece` with its size-dependent literals read from kiln_sizes, declared after the thread
// count; nullopt when the piece is not a kernel function of the emitter's form.
std::optional<std::string> generic_piece(const std::vector<std::string>& tokens,
                                         const std::vector<size_t>& parameter_tokens,
                                         const std::vector<size_t>& parameter_numbers) {
  std::vector<std::string> spelled = tokens;
  for (size_t k = 0; k < parameter_tokens.size(); ++k)
    spelled[parameter_tokens[k]] = "kiln_sizes[" + std::to_string(parameter_numbers[k]) + "]";
  std::string text;
  for (const std::string& token : spelled) text += token;
  if (parameter_tokens.empty()) return text;
  size_t line = text.find(kThreadsLine);
  if (line == std::string::npos) return std::nullopt;
  size_t number = line + std::string(kThreadsLine).size();
  size_t close = text.find(']', number);
  size_t end = text.find('\n', number);
  if (close == std::string::npos || end == std::string::npos) return std::nullopt;
  // The slot is the kernel's argument count: never a size (and never one of the table's reads).
  const std::string slot = text.substr(number, close - number);
  if (!is_integer_literal(slot)) return std::nullopt;
  int64_t threads_slot = std::stoll(slot);
  text.insert(end + 1, "  const int64_t* const kiln_sizes = (const int64_t*)kiln_args[" +
                           std::to_string(threads_slot + 1) + "];\n");
  return text;
}

// The index of the next token after `t` that is not whitespace, or tokens.size().
size_t next(const std::vector<std::string>& tokens, size_t t) {
  ++t;
  while (t < tokens.size() && is_whitespace(tokens[t])) ++t;
  return t;
}

// The CUDA form of generic_piece: each `__global__` function of the piece reads its own
// parameters from a kiln_size_table after its kiln_arg_table, in the order they appear
// (`functions` gets each one's symbol and parameters); nullopt when a parameter is outside a
// function of the emitter's form.
std::optional<std::string> generic_cuda_piece(
    const std::vector<std::string>& tokens, const std::vector<size_t>& parameter_tokens,
    const std::vector<size_t>& parameter_numbers,
    std::vector<SizeGenericSource::Function>& functions) {
  std::vector<std::string> spelled = tokens;
  // By function of the piece: its symbol, the token closing its parameter list, its parameters.
  struct Found {
    std::string symbol;
    size_t close = 0;
    std::vector<size_t> parameters;
  };
  std::vector<Found> found;
  size_t p = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] == "__global__") found.emplace_back();
    // `symbol(const kiln_arg_table<N> kiln_args)`: the function's name and parameter list.
    if (tokens[t] == "kiln_arg_table" && !found.empty() && found.back().symbol.empty()) {
      long open = previous(tokens, t, 1);
      long name = previous(tokens, t, 2);
      size_t args = t;
      while (args < tokens.size() && tokens[args] != "kiln_args") ++args;
      size_t close = next(tokens, args);
      if (token_at(tokens, open) != "(" || close >= tokens.size() || tokens[close] != ")")
        return std::nullopt;
      found.back().symbol = token_at(tokens, name);
      found.back().close = close;
    }
    if (p < parameter_tokens.size() && parameter_tokens[p] == t) {
      if (found.empty() || found.back().symbol.empty()) return std::nullopt;
      spelled[t] = "kiln_sizes.v[" + std::to_string(found.back().parameters.size()) + "]";
      found.back().parameters.push_back(parameter_numbers[p++]);
    }
  }
  for (const Found& function : found) {
    if (function.parameters.empty()) continue;
    spelled[function.close] = ", const kiln_size_table<" +
                              std::to_string(function.parameters.size()) + "> kiln_sizes)";
    functions.push_back({function.symbol, function.parameters});
  }
  std::string text;
  for (const std::string& token : spelled) text += token;
  return text;
}

}  // namespace

std::string SizeGenericSource::text() const {
  std::string text = prefix;
  for (const std::string& piece : pieces) text += piece;
  return text;
}

namespace {

// Whether `probe` is `hint` (its pieces' tokens) with other integer literals; marks the tokens
// that differ in `varies`. `why` says where they part otherwise.
bool differs_in_integers(const std::string& hint_prefix,
                         const std::vector<std::vector<std::string>>& hint,
                         const SourcePieces& probe, std::vector<std::vector<bool>>& varies,
                         std::string& why) {
  if (hint_prefix != probe.prefix) {
    why = "the declarations differ at other sizes: " +
          first_difference(tokenize(hint_prefix), tokenize(probe.prefix));
    return false;
  }
  if (hint.size() != probe.pieces.size()) {
    why = "the schedule has another shape at other sizes (" + std::to_string(hint.size()) +
          " and " + std::to_string(probe.pieces.size()) + " definitions)";
    return false;
  }
  std::vector<std::vector<bool>> marked = varies;
  for (size_t p = 0; p < hint.size(); ++p) {
    const std::vector<std::string>& a = hint[p];
    std::vector<std::string> b = piece_tokens(probe.pieces[p]);
    if (a.size() != b.size()) {
      why = "the schedule has another shape at other sizes: " + first_difference(a, b);
      return false;
    }
    for (size_t t = 0; t < a.size(); ++t) {
      if (a[t] == b[t]) continue;
      if (!is_integer_literal(a[t]) || !is_integer_literal(b[t])) {
        why = "the code differs at other sizes in more than integers: " + difference_at(a, b, t);
        return false;
      }
      marked[p][t] = true;
    }
  }
  varies = std::move(marked);
  return true;
}

}  // namespace

std::optional<SizeGenericSource> size_generic_source(const SourcePieces& hint,
                                                     const std::vector<SourcePieces>& probes,
                                                     std::string& why) {
  SizeGenericSource generic;
  generic.form = hint.form;
  generic.prefix = hint.prefix;
  std::vector<std::vector<bool>> varies;
  for (const std::string& piece : hint.pieces) {
    generic.tokens.push_back(piece_tokens(piece));
    varies.emplace_back(generic.tokens.back().size(), false);
  }
  // Each probe that has the hint's shape shows more of the integers that depend on the sizes
  // (one alone may agree with the hint by chance: min(extent, 64) at 200 and 250).
  bool any = false;
  std::string unused;  // why each probe that has another shape was left out
  for (size_t k = 0; k < probes.size(); ++k) {
    std::string reason;
    bool used = differs_in_integers(generic.prefix, generic.tokens, probes[k], varies, reason);
    if (!used) unused += (unused.empty() ? "probe " : "; probe ") + std::to_string(k) + ": " + reason;
    any = any || used;
  }
  why = unused;
  if (!any) return std::nullopt;
  for (size_t p = 0; p < generic.tokens.size(); ++p) {
    std::vector<size_t> parameter_tokens, parameter_numbers;
    std::vector<std::string> declared = generic.tokens[p];  // local arrays at their capacity
    for (size_t t = 0; t < generic.tokens[p].size(); ++t) {
      if (!varies[p][t]) continue;
      if (is_local_array_bound(generic.tokens[p], t)) {
        generic.capacities.push_back({p, t});
        declared[t] = std::to_string(sched::cpu::kMaxHoistedElements);
        continue;
      }
      if (!takes_runtime_value(generic.tokens[p], t)) {
        why = "a size-dependent integer where C++ needs a constant (" + generic.tokens[p][t] +
              " in '" + line_at(generic.tokens[p], t) + "')";
        return std::nullopt;
      }
      parameter_tokens.push_back(t);
      parameter_numbers.push_back(generic.parameters.size());
      generic.parameters.push_back({p, t});
    }
    std::optional<std::string> piece =
        generic.form == SizeTableForm::LaunchParameter
            ? generic_cuda_piece(declared, parameter_tokens, parameter_numbers, generic.functions)
            : generic_piece(declared, parameter_tokens, parameter_numbers);
    if (!piece) {
      why = "size-dependent integers outside a kernel function";
      return std::nullopt;
    }
    generic.pieces.push_back(std::move(*piece));
  }
  return generic;
}

// Checked on every call of a new size (a decoder's every token): the source's tokens are
// compared as they are scanned, as views, without a copy of each.
std::optional<std::vector<int64_t>> size_table(const SizeGenericSource& generic,
                                               const SourcePieces& source, std::string& why) {
  if (source.form != generic.form || source.prefix != generic.prefix || source.pieces.size() != generic.tokens.size()) {
    why = "the schedule for these sizes has another shape";
    return std::nullopt;
  }
  std::vector<int64_t> table;
  table.reserve(generic.parameters.size());
  size_t next = 0, next_capacity = 0;  // the next parameter and capacity, in (piece, token) order
  for (size_t p = 0; p < generic.tokens.size(); ++p) {
    const std::vector<std::string>& expected = generic.tokens[p];
    Temporaries names;
    size_t t = 0;
    bool same = true;  // so far
    for_each_token(source.pieces[p], [&](std::string_view token) {
      if (!same) return;
      if (t == expected.size()) {
        same = false;
        why = "the schedule for these sizes has another shape: " +
              first_difference(expected, piece_tokens(source.pieces[p]));
        return;
      }
      const bool parameter = next < generic.parameters.size() &&
                             generic.parameters[next].piece == p &&
                             generic.parameters[next].token == t;
      const bool capacity = next_capacity < generic.capacities.size() &&
                            generic.capacities[next_capacity].piece == p &&
                            generic.capacities[next_capacity].token == t;
      int64_t value = 0;
      const bool integer = is_integer_literal(token);
      if (integer) std::from_chars(token.data(), token.data() + token.size(), value);
      if (capacity) {
        same = integer && value <= sched::cpu::kMaxHoistedElements;
        if (!same) why = "a local array of these sizes is larger than the generic code's";
        ++next_capacity;
      } else if (parameter) {
        same = integer;
        if (!same) why = "the code for these sizes differs in more than integers";
        table.push_back(value);
        ++next;
      } else {
        const std::string_view of = Temporaries::prefix(token);
        const std::string_view wanted = expected[t];
        same = of.empty() ? token == wanted
                          : wanted.starts_with(of) &&
                                wanted.substr(of.size()) == std::to_string(names.number(token, of));
        if (!same)
          why = "the code for these sizes differs where the generic code has '" + expected[t] +
                "' (here '" + names.renamed(token) + "')";
      }
      ++t;
    });
    if (same && t != expected.size()) {
      same = false;
      why = "the schedule for these sizes has another shape: " +
            first_difference(expected, piece_tokens(source.pieces[p]));
    }
    if (!same) return std::nullopt;
  }
  return table;
}

void set_launch_sizes(const SizeGenericSource& generic, const std::vector<int64_t>& table,
                      std::vector<runtime::CudaKernelCall>& kernels) {
  std::map<std::string, const SizeGenericSource::Function*> by_symbol;
  for (const SizeGenericSource::Function& function : generic.functions)
    by_symbol.emplace(function.symbol, &function);
  auto set = [&](runtime::CudaLaunch& launch) {
    auto found = by_symbol.find(launch.symbol);
    if (found == by_symbol.end()) return;
    launch.sizes.clear();
    for (size_t parameter : found->second->parameters) launch.sizes.push_back(table.at(parameter));
  };
  for (runtime::CudaKernelCall& kernel : kernels) {
    for (runtime::CudaLaunch& launch : kernel.launches) set(launch);
    for (std::vector<runtime::CudaLaunch>& alternative : kernel.alternatives)
      for (runtime::CudaLaunch& launch : alternative) set(launch);
  }
}

}  // namespace kiln::codegen
