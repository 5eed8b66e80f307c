#include "kvforge/sampling_params.h"

#include <cmath>
#include <cstdio>

namespace kvforge {
namespace {

std::string describe(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string error(const char* field, const char* allowed, double got) {
  return std::string("sampling: ") + field + " must be " + allowed + ", got " + describe(got);
}

// `!(lo <= v && v <= hi)` is also true for NaN, which must never pass.
bool outside(float v, float lo, float hi) { return !(lo <= v && v <= hi); }

}  // namespace

std::optional<std::string> SamplingParams::validate() const {
  if (outside(temperature, 0.0f, kMaxTemperature))
    return error("temperature", "in [0, 100] (0 = greedy)", temperature);
  if (top_k < 0) return error("top_k", ">= 0 (0 = off)", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) return error("top_p", "in (0, 1] (1 = off)", top_p);
  if (outside(min_p, 0.0f, 1.0f)) return error("min_p", "in [0, 1] (0 = off)", min_p);
  if (!(repetition_penalty > 0.0f && repetition_penalty <= kMaxRepetitionPenalty))
    return error("repetition_penalty", "in (0, 10] (1 = off)", repetition_penalty);
  if (outside(presence_penalty, -kMaxPresenceFrequencyPenalty, kMaxPresenceFrequencyPenalty))
    return error("presence_penalty", "in [-2, 2]", presence_penalty);
  if (outside(frequency_penalty, -kMaxPresenceFrequencyPenalty, kMaxPresenceFrequencyPenalty))
    return error("frequency_penalty", "in [-2, 2]", frequency_penalty);
  if (penalty_last_n < -1)
    return error("penalty_last_n", ">= -1 (-1 = whole context, 0 = off)", penalty_last_n);
  if (max_tokens && *max_tokens < 1) return error("max_tokens", ">= 1 when set", *max_tokens);
  if (n_keep && *n_keep < -1) return error("n_keep", ">= -1 (-1 = the whole prompt)", *n_keep);
  if (stop.size() > kMaxStopStrings)
    return "sampling: at most " + std::to_string(kMaxStopStrings) + " stop strings, got " +
           std::to_string(stop.size());
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) return "sampling: stop string " + std::to_string(i) + " is empty";
    if (stop[i].size() > kMaxStopStringBytes)
      return "sampling: stop string " + std::to_string(i) + " is " +
             std::to_string(stop[i].size()) + " bytes, at most " +
             std::to_string(kMaxStopStringBytes) + " allowed";
  }
  return std::nullopt;
}

}  // namespace kvforge
