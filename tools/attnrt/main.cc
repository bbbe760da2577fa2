// attnrt: the command-line tool. Errors in inputs print one line and exit with code 2.

#include <CLI/CLI.hpp>
#include <iostream>
#include <vector>

#include "attnrt/core/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"attnrt: paged-KV attention runtime (plan, run, bench)"};
  app.require_subcommand(1);
  std::vector<std::function<int()>> commands = {attnrt::cli::add_plan_command(app),
                                                attnrt::cli::add_run_command(app),
                                                attnrt::cli::add_bench_command(app)};
  try {
    app.parse(argc, argv);
    for (const auto& command : commands) {
      if (int code = command(); code >= 0) return code;
    }
    return 0;
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const attnrt::Error& e) {
    std::cerr << "attnrt: error: " << e.what() << '\n';
    return 2;
  }
}
