#include "command_names.h"

#include <fmt/format.h>

#include <vector>

#include "attnrt/core/nearest_name.h"
#include "attnrt/core/printable.h"
#include "core/fail.h"

namespace attnrt::cli {
namespace {

// Every subcommand of `app` (CLI11's parsed-only get_subcommands() overload lists the chosen).
std::vector<CLI::App*> subcommands_of(const CLI::App& app) {
  return const_cast<CLI::App&>(app).get_subcommands([](CLI::App*) { return true; });
}

// The subcommand named `word`, or an Error naming `word` and the closest subcommand.
const CLI::App& find_subcommand(const CLI::App& app, std::string_view word,
                                std::string_view context) {
  std::vector<std::string> names;
  for (const CLI::App* sub : subcommands_of(app)) {
    if (sub->get_name() == word) return *sub;
    names.push_back(sub->get_name());
  }
  const std::vector<std::string_view> views(names.begin(), names.end());
  const std::string shown = printable(word, 64);
  const std::string_view nearest = nearest_name(word, views);
  if (!nearest.empty()) {
    fail("unknown command \"{}\" for \"{}\"; did you mean \"{}\"?", shown, context, nearest);
  }
  fail("unknown command \"{}\" for \"{}\"; the commands are {}", shown, context,
       fmt::join(names, ", "));
}

}  // namespace

void check_command_names(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* level = &app;
  std::string context = "attnrt";  // "attnrt bench" once inside bench
  for (int i = 1; i < argc && !subcommands_of(*level).empty(); ++i) {
    const std::string_view word = argv[i];
    if (word.starts_with('-')) {
      if (word == "-h" || word == "--help") return;  // CLI11 prints the help
      continue;
    }
    level = &find_subcommand(*level, word, context);
    context += " " + std::string(word);
  }
  if (!subcommands_of(*level).empty()) {
    std::vector<std::string> names;
    for (const CLI::App* sub : subcommands_of(*level)) names.push_back(sub->get_name());
    fail("\"{}\" needs a command: one of {}", context, fmt::join(names, ", "));
  }
}

std::string chosen_command(const CLI::App& app) {
  std::string chosen;
  const CLI::App* level = &app;
  while (true) {
    const std::vector<CLI::App*> parsed = level->get_subcommands();
    if (parsed.empty()) return chosen;
    level = parsed.front();
    chosen += (chosen.empty() ? "" : " ") + level->get_name();
  }
}

std::string one_line(std::string_view message) {
  std::string joined;
  for (std::size_t pos = 0; pos < message.size(); ++pos) {
    if (message[pos] != '\n') {
      joined += message[pos];
      continue;
    }
    while (!joined.empty() && joined.back() == ' ') joined.pop_back();
    if (pos + 1 < message.size()) joined += "; ";
  }
  return printable(joined, 4096);
}

}  // namespace attnrt::cli
