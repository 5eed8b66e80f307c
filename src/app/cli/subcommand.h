// The scaffolding every subcommand of `kvforge` shares, so that a command
// states only what is its own: its name and help, its flags (declared in
// --help order) and the function that runs on them.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace kvforge::cli {

// Adds subcommand `name` to `app`. Its flags live in one `Flags` for the life
// of `app`: `declare(sub, flags)` adds them to the subcommand, and `run(flags)`
// runs once CLI11 has parsed the command line. `Flags` is given explicitly, so
// `run` may name an overloaded function.
template <class Flags, class Declare>
void add_command(CLI::App& app, const std::string& name, const std::string& help,
                 void (*run)(const Flags&), Declare declare) {
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(name, help);
  declare(*sub, *flags);
  sub->callback([flags, run] { run(*flags); });
}

// The same for a command that runs a model (`Flags` derives from ModelFlags):
// -m/--model and llama.cpp's loading flags come first, then the command's own.
template <class Flags, class Declare>
void add_model_command(CLI::App& app, const std::string& name, const std::string& help,
                       void (*run)(const Flags&), Declare declare) {
  add_command<Flags>(app, name, help, run, [declare](CLI::App& sub, Flags& flags) {
    flags.add_model_flag(sub);
    declare(sub, flags);
  });
}

}  // namespace kvforge::cli
