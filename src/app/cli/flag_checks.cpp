#include "app/cli/flag_checks.h"

#include <cmath>
#include <cstdlib>

namespace kvforge::cli {
namespace {

// The number in `text`, or nullopt when it is not one (the whole text, no trailing junk).
std::optional<double> number_in(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string shown(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

CLI::Validator at_least(double min, const std::string& meaning) {
  return CLI::Validator(
      [min, meaning](std::string& text) -> std::string {
        const std::optional<double> v = number_in(text);
        if (!v) return "takes a number, got '" + text + "'";
        if (*v >= min) return "";
        return "must be >= " + shown(min) + (meaning.empty() ? "" : " (" + meaning + ")") +
               ", got " + text;
      },
      ">=" + shown(min), "at_least");
}

CLI::Validator tcp_port() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<double> v = number_in(text);
        if (v && *v >= 0 && *v <= 65535 && *v == std::floor(*v)) return "";
        return "a TCP port is 1..65535 (0 = any free port), got " + text;
      },
      "0..65535", "tcp_port");
}

}  // namespace kvforge::cli
