#include "app/server/slots_route.h"

#include <algorithm>

namespace kvforge::server {

nlohmann::json slots_response(const std::vector<EngineLoop::RunningRequest>& running,
                              const std::vector<size_t>& held, int total_slots, int n_ctx) {
  nlohmann::json out = nlohmann::json::array();
  const size_t n = std::max(running.size(), static_cast<size_t>(std::max(total_slots, 0)));
  for (size_t i = 0; i < n; ++i) {
    const bool busy = i < running.size();
    const EngineLoop::RunningRequest r = busy ? running[i] : EngineLoop::RunningRequest{};
    out.push_back({{"id", i},
                   {"id_task", busy ? static_cast<int64_t>(r.id) : -1},
                   {"n_ctx", n_ctx},
                   {"speculative", false},
                   {"is_processing", busy},
                   {"n_prompt_tokens", busy              ? size_t(r.prompt_tokens)
                                       : i < held.size() ? held[i]
                                                         : 0},
                   {"n_branches", busy ? r.branches : 0},
                   {"next_token",
                    {{"has_next_token", busy},
                     {"has_new_line", false},
                     {"n_remain", -1},
                     {"n_decoded", r.decoded},
                     {"stopping_word", ""}}}});
  }
  return out;
}

}  // namespace kvforge::server
