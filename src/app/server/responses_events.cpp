// The Responses API's typed event stream (ResponsesEventWriter,
// responses_api.h): the message's events and, with tools, function_call
// items streamed as the reply is read, as OpenAI streams them.
#include <algorithm>
#include <utility>
#include <vector>

#include "app/server/responses_api.h"
#include "app/server/responses_tools.h"

namespace kvforge::server {

using nlohmann::json;

ResponsesEventWriter::ResponsesEventWriter(const ResponsesRequest& r, ResponseIds ids,
                                           std::string model, int input_tokens,
                                           std::function<bool(const std::string&)> write)
    : request_(r),
      ids_(std::move(ids)),
      model_(std::move(model)),
      input_tokens_(input_tokens),
      write_(std::move(write)) {}

bool ResponsesEventWriter::send(const std::string& type, json data) {
  data["type"] = type;
  data["sequence_number"] = sequence_++;
  return write_(typed_sse_event(type, data));
}

json ResponsesEventWriter::item(const std::string& status, const json& content) const {
  return {{"id", ids_.message},
          {"type", "message"},
          {"status", status},
          {"role", "assistant"},
          {"content", content}};
}

bool ResponsesEventWriter::start() {
  const json response = response_object(request_, ids_, model_, input_tokens_, nullptr);
  if (tool_calls) calls_.emplace(*tool_calls);
  // With tools the message opens only once the reply is known to be text.
  return send("response.created", {{"response", response}}) &&
         send("response.in_progress", {{"response", response}}) && (calls_ || open_message());
}

bool ResponsesEventWriter::open_message() {
  message_index_ = next_index_++;
  json part = {{"item_id", ids_.message}, {"output_index", *message_index_}, {"content_index", 0}};
  part["part"] = output_text_part("");
  return send("response.output_item.added",
              {{"output_index", *message_index_}, {"item", item("in_progress", json::array())}}) &&
         send("response.content_part.added", part);
}

bool ResponsesEventWriter::delta(const std::string& text) {
  return calls_ ? forward(calls_->reader().feed(text)) : send_text(text);
}

bool ResponsesEventWriter::send_text(const std::string& text) {
  if (!message_index_ && !open_message()) return false;
  text_sent_ += text;
  return send("response.output_text.delta", {{"item_id", ids_.message},
                                             {"output_index", *message_index_},
                                             {"content_index", 0},
                                             {"delta", text},
                                             {"logprobs", json::array()}});
}

// The reader's text (streamed as the message) and call pieces.
bool ResponsesEventWriter::forward(const ToolCallReader::Output& out) {
  if (!out.content.empty() && !send_text(out.content)) return false;
  if (out.calls.empty()) return true;
  const json deltas = calls_->delta_json(out.calls);  // the calls' ids, as the final items'
  for (size_t k = 0; k < out.calls.size(); ++k) {
    const ToolCallDelta& d = out.calls[k];
    if (d.first && !add_call(deltas[k])) return false;
    const size_t i = size_t(d.index);
    if (d.arguments.empty() || i >= call_items_.size()) continue;
    call_arguments_[i] += d.arguments;
    if (!send("response.function_call_arguments.delta", {{"item_id", call_items_[i]["id"]},
                                                         {"output_index", call_indexes_[i]},
                                                         {"delta", d.arguments}}))
      return false;
  }
  return true;
}

bool ResponsesEventWriter::add_call(const json& chat_call) {
  call_items_.push_back(function_call_item(chat_call, "in_progress"));
  call_indexes_.push_back(next_index_++);
  call_arguments_.emplace_back();
  return send("response.output_item.added",
              {{"output_index", call_indexes_.back()}, {"item", call_items_.back()}});
}

bool ResponsesEventWriter::close_message(const GenerationOutcome& done, const json& message) {
  const json where = {{"item_id", ids_.message}, {"output_index", *message_index_}};
  json text_done = where, part_done = where;
  text_done["content_index"] = part_done["content_index"] = 0;
  text_done["text"] = message["content"][0]["text"];
  text_done["logprobs"] = json::array();
  part_done["part"] = message["content"][0];
  return send("response.output_text.done", text_done) &&
         send("response.content_part.done", part_done) &&
         send("response.output_item.done", {{"output_index", *message_index_}, {"item", message}});
}

// Each call added while streaming: its arguments done, then the item, as
// `calls` (the reply's calls in the chat shape) has it, or "incomplete" when
// the reply did not end as whole calls.
bool ResponsesEventWriter::close_calls(const json& calls) {
  for (size_t i = 0; i < call_items_.size(); ++i) {
    json item = call_items_[i];
    if (calls.is_array() && i < calls.size()) {
      item = function_call_item(calls[i], "completed");
    } else {
      item["status"] = "incomplete";
      item["arguments"] = call_arguments_[i];
    }
    const json where = {{"item_id", item["id"]}, {"output_index", call_indexes_[i]}};
    json args_done = where;
    args_done["arguments"] = item["arguments"];
    args_done["name"] = item["name"];
    if (!send("response.function_call_arguments.done", args_done) ||
        !send("response.output_item.done", {{"output_index", call_indexes_[i]}, {"item", item}}))
      return false;
  }
  return true;
}

// The response object with the output items in the order they streamed:
// a message before whole calls stays, calls that never completed are kept
// as "incomplete" items before the message that holds the reply's text. A
// call cut off by max_output_tokens is, as OpenAI answers it, an incomplete
// item with the arguments generated so far, and no message holds its text
// (only text streamed before it).
json ResponsesEventWriter::final_response(const GenerationOutcome& done, json& calls) {
  const bool whole = calls_ && calls_->reader().complete() && !calls_->reader().calls().empty();
  calls = whole ? calls_->message_json() : json();
  json response = response_object(request_, ids_, model_, input_tokens_, &done, calls);
  if (!calls_) return response;
  std::vector<std::pair<int, json>> items;
  if (whole) {
    for (size_t i = 0; i < response["output"].size(); ++i)
      items.emplace_back(call_indexes_.at(i), response["output"][i]);
    if (message_index_) {
      json message = item("completed", json::array({output_text_part(text_sent_)}));
      items.emplace_back(*message_index_, std::move(message));
    }
  } else {
    for (size_t i = 0; i < call_items_.size(); ++i) {
      json item = call_items_[i];
      item["status"] = "incomplete";
      item["arguments"] = call_arguments_[i];
      items.emplace_back(call_indexes_[i], std::move(item));
    }
    if (!call_cut(done))
      items.emplace_back(message_index_.value_or(next_index_), response["output"][0]);
    else if (message_index_)
      items.emplace_back(*message_index_,
                         item("completed", json::array({output_text_part(text_sent_)})));
  }
  std::sort(items.begin(), items.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  response["output"] = json::array();
  for (auto& [index, it] : items) response["output"].push_back(std::move(it));
  return response;
}

bool ResponsesEventWriter::finish(const GenerationOutcome& done) {
  if (calls_ && !forward(calls_->reader().finish())) return false;
  json calls;
  const json response = final_response(done, calls);
  if (on_finish) on_finish(done, response, calls);
  bool sent = close_calls(calls);
  const json& output = response["output"];
  const auto message = std::find_if(output.begin(), output.end(), [](const json& it) {
    return it["type"] == "message";  // the reply's text, beside any incomplete call
  });
  if (calls.is_null() && message != output.end()) {
    // Text the reader held (a reply that began as a call) goes out now.
    const std::string& text = (*message)["content"][0]["text"].get_ref<const std::string&>();
    const std::string rest =
        text.starts_with(text_sent_) ? text.substr(text_sent_.size()) : std::string();
    sent = sent && (message_index_ || open_message()) && (rest.empty() || send_text(rest)) &&
           close_message(done, *message);
  } else if (message_index_) {
    sent = sent && close_message(done, response["output"][size_t(*message_index_)]);
  }
  const std::string last =
      response["status"] == "completed" ? "response.completed" : "response.incomplete";
  return sent && send(last, {{"response", response}});
}

bool ResponsesEventWriter::call_cut(const GenerationOutcome& done) const {
  return done.finish == FinishReason::Length && !call_items_.empty() &&
         !(calls_->reader().complete() && !calls_->reader().calls().empty());
}

json ResponsesEventWriter::replay(const GenerationOutcome& done) {
  json object;
  on_finish = [&object](const GenerationOutcome&, const json& response, const json&) {
    object = response;
  };
  start();
  delta(done.text);
  finish(done);
  return object;
}

bool ResponsesEventWriter::error(const ApiError& e) {
  return send("error", {{"code", e.code() ? json(*e.code()) : json(e.type())},
                        {"message", e.what()},
                        {"param", e.param() ? json(*e.param()) : json()}});
}

}  // namespace kvforge::server
