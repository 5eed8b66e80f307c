// The scaffolding every subcommand of `kvforge` shares, so that a command
// states only what is its own: its name and help, its flags (declared in
// --help order) and the function that runs on them.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <utility>

namespace kvforge::cli {

namespace detail {
// Subcommand `name` of `app` with a `Flags` that lives as long as `app`, and
// `run` on it once CLI11 has parsed the command line.
template <class Flags>
std::pair<CLI::App&, Flags&> subcommand_with_flags(CLI::App& app, const std::string& name,
                                                   const std::string& help,
                                                   void (*run)(const Flags&)) {
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(name, help);
  sub->callback([flags, run] { run(*flags); });
  return {*sub, *flags};
}
}  // namespace detail

// Adds subcommand `name` to `app`: `declare(sub, flags)` adds its flags (in
// --help order) and `run(flags)` runs it. `Flags` is given explicitly, so
// `run` and `declare` may name overloaded functions (each command file has
// its own `declare_flags`).
template <class Flags>
void add_command(CLI::App& app, const std::string& name, const std::string& help,
                 void (*run)(const Flags&), void (*declare)(CLI::App& sub, Flags& flags)) {
  auto [sub, flags] = detail::subcommand_with_flags<Flags>(app, name, help, run);
  declare(sub, flags);
}

// The same for a command that runs a model (`Flags` derives from ModelFlags):
// -m/--model and llama.cpp's loading flags come first, then the command's own.
template <class Flags>
void add_model_command(CLI::App& app, const std::string& name, const std::string& help,
                       void (*run)(const Flags&), void (*declare)(CLI::App& sub, Flags& flags)) {
  auto [sub, flags] = detail::subcommand_with_flags<Flags>(app, name, help, run);
  flags.add_model_flag(sub);
  declare(sub, flags);
}

}  // namespace kvforge::cli
