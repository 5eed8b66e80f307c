#include "app/stop_strings.h"

#include <algorithm>
#include <stdexcept>

namespace kvforge {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (size_t i = 0; i < stops_.size(); ++i)
    if (stops_[i].empty())
      throw std::invalid_argument("stop strings: entry " + std::to_string(i) + " is empty");
}

// Only held_ needs searching: an occurrence starting in already-emitted text
// would have made a longer suffix a prefix of that stop string, and that
// suffix would have been held back.
std::string StopStringMatcher::feed(std::string_view piece) {
  if (matched_ || finished_) return {};
  held_.append(piece);
  size_t earliest = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t pos = held_.find(stops_[i]);
    if (pos < earliest) {
      earliest = pos;
      matched_ = i;
    }
  }
  if (matched_) {
    std::string out = emit(earliest);
    held_.clear();
    return out;
  }
  return emit(held_.size() - longest_partial_suffix());
}

std::string StopStringMatcher::finish() {
  if (finished_) return {};
  finished_ = true;
  return matched_ ? std::string() : emit(held_.size());
}

// Length of the longest suffix of held_ that is a proper prefix of a stop string.
size_t StopStringMatcher::longest_partial_suffix() const {
  const std::string_view held = held_;
  size_t best = 0;
  for (const std::string& stop : stops_) {
    for (size_t len = std::min(stop.size() - 1, held.size()); len > best; --len) {
      if (held.ends_with(std::string_view(stop).substr(0, len))) {
        best = len;
        break;
      }
    }
  }
  return best;
}

// Moves the first n bytes of held_ to the output.
std::string StopStringMatcher::emit(size_t n) {
  std::string out = held_.substr(0, n);
  held_.erase(0, n);
  text_ += out;
  return out;
}

}  // namespace kvforge
