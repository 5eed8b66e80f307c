// kvforge: one executable, one subcommand per job.
#include <pthread.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/llama_compat.h"
#include "core/cpu_features.h"
#include "kvforge_git_version.h"

namespace {

// "kvforge 3f2a9c1d0b7e (SIMD avx512)": the commit it was built from and the
// kernels this machine runs.
std::string version_line() {
  return std::string("kvforge ") + KVFORGE_GIT_COMMIT + " (SIMD " +
         kvforge::simd_level_name(kvforge::simd_level()) + ")";
}

}  // namespace

namespace {

// Ranks other than 0 print nothing: their stdout and stderr go to
// /dev/null. Returns a stream on the original stderr, for their errors.
FILE* silence_output() {
  const int err = ::dup(STDERR_FILENO);
  std::fflush(stdout);
  std::fflush(stderr);
  if (!std::freopen("/dev/null", "w", stdout) || !std::freopen("/dev/null", "w", stderr))
    return stderr;
  FILE* out = err >= 0 ? ::fdopen(err, "w") : nullptr;
  return out ? out : stderr;
}

// Whether the subcommand can run on several ranks (the others would each
// act alone, printing or writing files once per rank).
bool runs_tensor_parallel(int argc, char** argv) {
  if (argc < 2) return false;
  for (const char* name : {"run", "batch", "chat", "serve", "bench", "bench-serve", "perplexity"})
    if (std::strcmp(argv[1], name) == 0) return true;
  return false;
}

// Under mpirun every rank runs this executable; MPI starts here and ends
// when the returned communicator is destroyed.
// The threads MPI starts inherit SIGINT and SIGTERM blocked, so that those
// reach this thread (or the server's signal waiter) and not a thread of
// MPI's, where they would kill the process before the server can drain.
std::unique_ptr<kvforge::Communicator> start_world(int* argc, char*** argv) {
  sigset_t stop_signals, old_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);
  std::unique_ptr<kvforge::Communicator> world = kvforge::make_world_communicator(argc, argv);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return world;
}

// An error on one rank ends every rank: the others would wait for it forever.
int fail(kvforge::Communicator& world, FILE* errors, const char* what) {
  std::fflush(stdout);
  if (world.size() > 1)
    std::fprintf(errors, "kvforge: error: rank %d of %d: %s\n", world.rank(), world.size(), what);
  else
    std::fprintf(errors, "kvforge: error: %s\n", what);
  std::fflush(errors);
  if (world.size() > 1) world.abort(1);
  return 1;
}

// `kvforge` alone: what it is, its commands and where to start.
void print_usage(FILE* out) {
  std::fprintf(out,
               "kvforge: LLaMA-family inference engine (GGUF models)\n\n"
               "usage: kvforge COMMAND [OPTIONS]   (kvforge COMMAND --help for its flags)\n\n"
               "commands:\n");
  for (const kvforge::cli::Subcommand& c : kvforge::cli::kSubcommands)
    std::fprintf(out, "  %-14s %s\n", c.name, c.help);
  std::fprintf(out, "\nstart with: kvforge run -p \"In the beginning\"   or   kvforge chat\n");
}

void add_commands(CLI::App& app) {
  for (const kvforge::cli::Subcommand& c : kvforge::cli::kSubcommands)
    c.declare(*app.add_subcommand(c.name, c.help));
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<kvforge::Communicator> world = start_world(&argc, &argv);
  kvforge::cli::set_world(world.get());
  FILE* errors = world->rank() == 0 ? stderr : silence_output();
  if (world->size() > 1 && !runs_tensor_parallel(argc, argv))
    return fail(*world, errors,
                "under mpirun only run, batch, chat, serve, bench, bench-serve and perplexity run "
                "tensor-parallel");

  CLI::App app{"kvforge: LLaMA-family inference engine (GGUF models)", "kvforge"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  app.set_version_flag("--version", version_line(), "the commit and SIMD level, then exit");
  add_commands(app);
  if (argc < 2) {
    print_usage(errors);
    return 1;
  }
  try {
    // llama.cpp's -ctk, -fa, -ngl, ... as the long flags the commands declare.
    std::vector<std::string> args = kvforge::cli::spell_llama_flags(argc, argv);
    std::vector<char*> arg_ptrs;
    for (std::string& a : args) arg_ptrs.push_back(a.data());
    app.parse(int(arg_ptrs.size()), arg_ptrs.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const kvforge::cli::FollowerFinished&) {
    return 0;
  } catch (const kvforge::CommunicationError& e) {
    // A peer is gone or hung. Rank 0 ends the run itself (a server first
    // answers 503 and closes); the others give it a moment to, then end it.
    if (world->rank() != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    return fail(*world, errors, e.what());
  } catch (const std::exception& e) {
    return fail(*world, errors, e.what());
  }
  return 0;
}
