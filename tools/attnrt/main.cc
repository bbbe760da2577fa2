// attnrt: the command-line tool. Every failure ends here as exactly one line on stderr: bad input
// (an attnrt::Error or a command-line mistake) exits with code 2, anything else with code 1.
// `plan` exits 3 when it printed a whole plan with which vLLM would refuse to start.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/core/error.h"
#include "attnrt/core/printable.h"
#include "attnrt/version.h"
#include "command_names.h"
#include "commands.h"
#include "engine_arg_options.h"

namespace {

int report(std::string_view kind, std::string_view message, int code) {
  std::cerr << "attnrt: " << kind << ": " << attnrt::cli::one_line(message) << '\n';
  return code;
}

// The CLI; main() adds the last guard for what is thrown before its own handlers are in place.
int run_cli(int argc, char** argv) {
  CLI::App app{"attnrt: paged-KV attention runtime (plan, run, bench)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "attnrt " + std::string(attnrt::version()));
  std::vector<std::function<int()>> commands = {attnrt::cli::add_plan_command(app),
                                                attnrt::cli::add_run_command(app),
                                                attnrt::cli::add_bench_command(app)};
  std::string doing = "reading the command line";
  try {
    std::vector<std::string> args = attnrt::cli::expand_vllm_aliases(argc, argv);
    std::vector<char*> pointers;
    pointers.reserve(args.size());
    for (std::string& arg : args) pointers.push_back(arg.data());
    // `attnrt --version` names no command; CLI11 prints the version (CLI::CallForVersion).
    if (argc != 2 || std::string_view(pointers[1]) != "--version") {
      attnrt::cli::check_command_names(app, argc, pointers.data());
    }
    app.parse(argc, pointers.data());
    doing = "running `attnrt " + attnrt::cli::chosen_command(app) + "`";
    for (const auto& command : commands) {
      if (int code = command(); code >= 0) return code;
    }
    return 0;
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return report("error", e.what(), 2);
  } catch (const attnrt::Error& e) {
    return report("error", e.what(), 2);
  } catch (const std::bad_alloc&) {
    return report("internal error", "out of memory while " + doing, 1);
  } catch (const std::exception& e) {
    return report("internal error", "while " + doing + ": " + e.what(), 1);
  } catch (...) {
    return report("internal error", "unknown exception while " + doing, 1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_cli(argc, argv);
  } catch (...) {  // building the command line itself failed (out of memory)
    std::fputs("attnrt: internal error: could not set up the command line\n", stderr);
    return 1;
  }
}
