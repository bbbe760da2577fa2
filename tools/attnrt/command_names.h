#pragma once
// The command words of `attnrt` (plan, run, bench attention, ...): a mistyped one is named with
// the closest valid one, before CLI11 would call it an unexpected argument or a missing command.

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

namespace attnrt::cli {

// Throws Error for an unknown command word at any level that takes subcommands, or for none.
void check_command_names(const CLI::App& app, int argc, const char* const* argv);

// "plan", "bench attention": the command chosen by a parsed app.
std::string chosen_command(const CLI::App& app);

// `message` as one printable line: line breaks become "; ", other control bytes are escaped.
std::string one_line(std::string_view message);

}  // namespace attnrt::cli
