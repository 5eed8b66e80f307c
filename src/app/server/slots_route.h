// llama-server's GET /slots: what the engine holds. kvforge has no fixed
// slots in the paged mode (a pool of blocks shared by up to --max-seqs
// sequences), so the entries are the running requests in admission order,
// then idle entries up to total_slots (--max-seqs, or the static slots):
//   {"id", "id_task" (the request, -1 when idle), "n_ctx", "speculative":
//    false, "is_processing", "n_prompt_tokens" (an idle entry: the tokens it
//    holds, EngineLoop::slot_tokens; 0 once erased), "n_branches",
//    "next_token": {"has_next_token", "has_new_line": false, "n_remain": -1,
//    "n_decoded", "stopping_word": ""}}
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "app/server/engine_loop.h"

namespace kvforge::server {

// `held`: EngineLoop::slot_token_counts.
nlohmann::json slots_response(const std::vector<EngineLoop::RunningRequest>& running,
                              const std::vector<size_t>& held, int total_slots, int n_ctx);

}  // namespace kvforge::server
