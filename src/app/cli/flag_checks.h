// Range checks for numeric flags, at the place each flag is declared: a value
// out of range is refused naming the flag and the rule, never silently
// replaced by a default or wrapped (a port of 99999 is not port 34463).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace kvforge::cli {

// Refuses a value below `min`; `meaning` (may be empty) says what the
// smallest accepted values mean, e.g. "0 = the model's".
CLI::Validator at_least(double min, const std::string& meaning = "");
// A TCP port: 1..65535, or 0 for any free port.
CLI::Validator tcp_port();

}  // namespace kvforge::cli
