#pragma once
// The subcommands of the `attnrt` CLI. Each registers itself on the app and runs when chosen.

#include <CLI/CLI.hpp>
#include <functional>

namespace attnrt::cli {

// `attnrt plan`'s exit code when the plan is complete but vLLM would refuse to start with it
// (AttentionPlan::startup); bad input stays 2.
inline constexpr int kExitVllmWouldRefuse = 3;

// Returns the action to run when the `plan` subcommand was chosen.
std::function<int()> add_plan_command(CLI::App& app);
std::function<int()> add_run_command(CLI::App& app);
std::function<int()> add_bench_command(CLI::App& app);

}  // namespace attnrt::cli
