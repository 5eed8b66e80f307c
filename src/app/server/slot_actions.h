// llama-server's slot actions, POST /slots/{id}?action=save|restore|erase
// (body {"filename"} for save and restore, a bare name under
// --slot-save-path):
//   erase: forgets the tokens the idle entry holds (EngineLoop::slot_tokens)
//     and the K/V the engine keeps of them (Engine::forget_prefix: paged, the
//     prefix-cache blocks no running request holds; static, a free slot
//     holding them), so the next request is no hit from them →
//     llama-server's {"id_slot", "n_erased" (the tokens it held)}; a slot
//     that is processing a request is a 409 naming it (llama-server waits).
//   save, restore: with --slot-save-path, slot_files.h; without it, 501
//     (not_supported_error) naming the flag.
// The id (0 .. entries of GET /slots - 1), the action and the filename are
// checked first, as llama-server does: 400 "Invalid slot ID", "Invalid
// action", "Invalid filename".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "app/server/engine_loop.h"
#include "app/server/slot_files.h"

namespace kvforge::server {

// The checked request (no engine needed; the fuzz target's too).
struct SlotAction {
  size_t slot = 0;       // < entries
  std::string action;    // save, restore or erase
  std::string filename;  // save and restore: a bare name
};
// Throws ApiError 400 for an id outside [0, entries), an unknown action, or
// a save/restore body without a valid {"filename"}.
SlotAction parse_slot_action(std::string_view id, std::string_view action, std::string_view body,
                             size_t entries);

// Throws ApiError for every refusal. `files`: null without --slot-save-path.
nlohmann::json slot_action_response(EngineLoop& loop, const SlotFiles* files, int total_slots,
                                    const std::string& id, const std::string& action,
                                    const std::string& body);

}  // namespace kvforge::server
