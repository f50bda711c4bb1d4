// `tapestry launch`: the mpirun line that runs a tapestry command across N processes, built and
// executed (or printed with --dry-run).
//
//   tapestry launch -n 2 -- run examples/mlp.tap --plan examples/plans/mlp-megatron.json
//   → mpirun --allow-run-as-root --oversubscribe -q -np 2 /path/to/tapestry run examples/mlp.tap
//       --plan examples/plans/mlp-megatron.json --executor mpi
//
// The flags this machine needs are added when they apply: --allow-run-as-root when running as
// root (Open MPI refuses root otherwise), --oversubscribe when N exceeds the cores (Open MPI
// counts slots by cores), -q so a failing job shows tapestry's one error line instead of
// mpirun's banners. `run` without --executor gets --executor mpi, `optimize` without --mpi gets
// --mpi (one island of the search per rank: search/islands.h). --host and --mca pass through
// (the two-host run of docs/distributed.md uses them); the tapestry binary is this one.
#include <fmt/core.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "command.h"
#include "tapestry/runtime/mpi_executor.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

struct LaunchOptions {
  std::string processes_text;  // -n N, --np N, or mpirun's own spelling -np N (see below)
  int processes = 0;
  std::string mpirun = "mpirun";
  std::vector<std::string> hosts;
  std::vector<std::string> mca;  // "NAME=VALUE"
  std::vector<std::string> mpirun_args;
  bool dry_run = false;
  std::vector<std::string> command;  // the tapestry command line after `--`
};

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_./=:,@+") == std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> mpirun_line(const LaunchOptions& options) {
  if (options.processes < 1) throw Error("-np: expected at least 1 process");
  if (options.command.empty()) {
    throw Error(
        "nothing to launch: give the tapestry command after --, e.g. `tapestry launch "
        "-n 2 -- run graph.tap --plan plan.json`");
  }
  std::vector<std::string> line{options.mpirun};
  if (geteuid() == 0) line.emplace_back("--allow-run-as-root");
  const auto cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  if (options.processes > cores || !options.hosts.empty()) line.emplace_back("--oversubscribe");
  line.emplace_back("-q");
  for (const std::string& host : options.hosts) {
    line.emplace_back("--host");
    line.push_back(host);
  }
  for (const std::string& setting : options.mca) {
    const std::size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(fmt::format("--mca {}: expected NAME=VALUE", setting));
    }
    line.emplace_back("--mca");
    line.push_back(setting.substr(0, eq));
    line.push_back(setting.substr(eq + 1));
  }
  line.insert(line.end(), options.mpirun_args.begin(), options.mpirun_args.end());
  line.emplace_back("-np");
  line.push_back(std::to_string(options.processes));
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  line.push_back(ec ? std::string("tapestry") : self.string());
  line.insert(line.end(), options.command.begin(), options.command.end());
  const bool has_executor = std::any_of(
      options.command.begin(), options.command.end(),
      [](const std::string& a) { return a == "--executor" || a.rfind("--executor=", 0) == 0; });
  if (options.command.front() == "run" && !has_executor) {
    line.emplace_back("--executor");
    line.emplace_back("mpi");
  }
  const bool has_mpi =
      std::find(options.command.begin(), options.command.end(), "--mpi") != options.command.end();
  if (options.command.front() == "optimize" && !has_mpi) line.emplace_back("--mpi");
  return line;
}

// The process count. mpirun spells it -np; CLI11 cannot take that name (it reads `-np 4` as
// -n with the value "p"), so launch takes -n N or --np N and explains when it sees -np.
LaunchOptions with_process_count(LaunchOptions options) {
  const std::string& text = options.processes_text;
  if (text == "p") throw Error("-np: write -n N or --np N (tapestry launch -n 2 -- run …)");
  std::size_t used = 0;
  try {
    options.processes = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw Error(fmt::format("-n {}: expected a number of processes", text));
  }
  return options;
}

int run_launch(LaunchOptions options) {
  options = with_process_count(std::move(options));
  if (!runtime::mpi_built()) {
    throw Error(
        "this tapestry was built without MPI (CMake's find_package(MPI) found none): "
        "install libopenmpi-dev and openmpi-bin (scripts/install-deps.sh) and rebuild");
  }
  const std::vector<std::string> line = mpirun_line(options);
  std::vector<std::string> quoted;
  for (const std::string& word : line) quoted.push_back(shell_quote(word));
  if (options.dry_run) {
    fmt::print("{}\n", fmt::join(quoted, " "));
    return kExitOk;
  }
  std::vector<char*> argv;
  for (const std::string& word : line) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp(argv[0], argv.data());
  throw Error(fmt::format("cannot run {}: {} (is Open MPI installed? scripts/install-deps.sh)",
                          options.mpirun, std::strerror(errno)));
}

}  // namespace

void register_launch(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<LaunchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "launch", "Run a tapestry command on N MPI processes: builds and executes the mpirun line");
  cmd->add_option("-n,--np", options->processes_text, "number of processes (ranks)")->required();
  cmd->add_option("--mpirun", options->mpirun, "the launcher (default: mpirun)");
  cmd->add_option("--host", options->hosts,
                  "hosts to run on, as mpirun's --host (HOST or HOST:SLOTS; repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--mca", options->mca, "an Open MPI parameter NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--mpirun-arg", options->mpirun_args,
                  "one more argument for mpirun, verbatim (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--dry-run", options->dry_run, "print the mpirun line instead of running it");
  cmd->add_option("command", options->command,
                  "the tapestry command to run on every rank, after --: -- run GRAPH …")
      ->required();
  cmd->callback([&dispatch, options] {
    dispatch.name = "launch";
    dispatch.run = [options] { return run_launch(*options); };
  });
}

}  // namespace tapestry::cli
