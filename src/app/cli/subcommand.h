// The scaffolding every subcommand of `kvforge` shares, so that a command
// file states only what is its own: its flags (declared in --help order) and
// the function that runs on them. Names and help are listed in commands.h.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

namespace kvforge::cli {

namespace detail {
// A `Flags` that lives as long as `sub`, and `run` on it once CLI11 has
// parsed the command line.
template <class Flags>
Flags& flags_run_by(CLI::App& sub, void (*run)(const Flags&)) {
  auto flags = std::make_shared<Flags>();
  sub.callback([flags, run] { run(*flags); });
  return *flags;
}
}  // namespace detail

// Declares subcommand `sub` (commands.h names it): `declare(sub, flags)` adds
// its flags (in --help order) and `run(flags)` runs it. `Flags` is given
// explicitly, so `run` and `declare` may name overloaded functions (each
// command file has its own `declare_flags`).
template <class Flags>
void declare_command(CLI::App& sub, void (*run)(const Flags&),
                     void (*declare)(CLI::App& sub, Flags& flags)) {
  declare(sub, detail::flags_run_by(sub, run));
}

// The same for a command that runs a model (`Flags` derives from ModelFlags):
// -m/--model and llama.cpp's loading flags come first, then the command's own.
template <class Flags>
void declare_model_command(CLI::App& sub, void (*run)(const Flags&),
                           void (*declare)(CLI::App& sub, Flags& flags)) {
  Flags& flags = detail::flags_run_by(sub, run);
  flags.add_model_flag(sub);
  declare(sub, flags);
}

}  // namespace kvforge::cli
