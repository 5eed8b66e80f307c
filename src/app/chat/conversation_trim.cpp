#include "app/chat/conversation_trim.h"

#include <string>

namespace kvforge {
namespace {

bool kept_always(const nlohmann::ordered_json& m) {
  const std::string role = m.is_object() ? m.value("role", "") : "";
  return role == "system" || role == "developer";
}

bool is_user(const nlohmann::ordered_json& m) {
  return m.is_object() && m.value("role", "") == "user";
}

// For each message of `messages`, the turn it belongs to (1, 2, ... from the
// oldest), or 0 for a message that is never dropped (system, developer, the last).
std::vector<int> turn_of(const std::vector<nlohmann::ordered_json>& messages, int& n_turns) {
  std::vector<int> turn(messages.size(), 0);
  n_turns = 0;
  for (size_t i = 0; i + 1 < messages.size(); ++i) {
    if (kept_always(messages[i])) continue;
    if (n_turns == 0 || is_user(messages[i])) ++n_turns;
    turn[i] = n_turns;
  }
  return turn;
}

// `messages` without turns 1..k.
std::vector<nlohmann::ordered_json> without_turns(
    const std::vector<nlohmann::ordered_json>& messages, const std::vector<int>& turn, int k,
    int& dropped) {
  std::vector<nlohmann::ordered_json> out;
  dropped = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (turn[i] >= 1 && turn[i] <= k)
      ++dropped;
    else
      out.push_back(messages[i]);
  }
  return out;
}

}  // namespace

TrimResult trim_oldest_turns(
    std::vector<nlohmann::ordered_json>& messages,
    const std::function<bool(const std::vector<nlohmann::ordered_json>&)>& fits) {
  TrimResult r;
  if ((r.fits = fits(messages))) return r;
  int n_turns = 0;
  const std::vector<int> turn = turn_of(messages, n_turns);
  // Fewer turns never make a longer prompt: the fewest turns to drop is found by bisection,
  // so a conversation of n turns costs O(log n) renders, not O(n).
  int lo = 1, hi = n_turns;  // the answer is in [lo, hi], or none fits when even hi does not
  int dropped = 0;
  if (n_turns == 0 || !fits(without_turns(messages, turn, hi, dropped))) {
    messages = without_turns(messages, turn, n_turns, r.messages_dropped);
    return r;
  }
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(without_turns(messages, turn, mid, dropped)))
      hi = mid;
    else
      lo = mid + 1;
  }
  messages = without_turns(messages, turn, lo, r.messages_dropped);
  r.fits = fits(messages);  // also leaves the caller's view of the last candidate on this one
  return r;
}

}  // namespace kvforge
