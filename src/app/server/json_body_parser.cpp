#include "app/server/json_body_parser.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

using Json = nlohmann::ordered_json;
// ordered_map is a vector of pairs: appending to it directly skips its linear key search.
using ObjectItems = std::vector<std::pair<const std::string, Json>>;

constexpr size_t kValuesBetweenCancelChecks = 4096;

// nlohmann's SAX interface, building the document as its DOM parser does
// (a stack of the open containers; ancestors of the innermost are never
// appended to while it is open, so the pointers stay valid). Duplicate keys
// are looked for when an object closes.
class LinearDomBuilder {
 public:
  explicit LinearDomBuilder(const JsonBodyChecks& checks) : checks_(checks) {}

  Json take() { return std::move(root_); }

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(Json::number_integer_t v) { return put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(v); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return put(v); }
  bool string(Json::string_t& v) { return put(std::move(v)); }
  bool binary(Json::binary_t& v) { return put(Json::binary(std::move(v))); }

  bool start_object(std::size_t) {
    put(Json::object());
    open_.push_back(pending_);
    return true;
  }
  bool key(Json::string_t& k) {
    if (open_.size() == 1 && checks_.top_level_key) checks_.top_level_key(k);
    auto& items = static_cast<ObjectItems&>(open_.back()->get_ref<Json::object_t&>());
    items.emplace_back(std::move(k), nullptr);
    pending_ = &items.back().second;
    return true;
  }
  bool end_object() {
    refuse_duplicate_keys(open_.back()->get_ref<const Json::object_t&>());
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    put(Json::array());
    open_.push_back(pending_);
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    throw e;
  }

 private:
  // Sorting views of the keys finds a duplicate without a hash node per key.
  void refuse_duplicate_keys(const Json::object_t& items) {
    if (items.size() < 2) return;
    keys_.clear();
    for (const auto& item : items) keys_.push_back(item.first);
    std::sort(keys_.begin(), keys_.end());
    const auto twice = std::adjacent_find(keys_.begin(), keys_.end());
    if (twice != keys_.end())
      throw ApiError(400, "the request body has the key '" + std::string(*twice) +
                              "' twice in one object; each key may appear once");
  }

  // Places a value where the document expects the next one; pending_ then points at it.
  template <class Value>
  bool put(Value&& v) {
    if (static_cast<int>(open_.size()) > checks_.max_depth)
      throw ApiError(400, "request body is nested deeper than " +
                              std::to_string(checks_.max_depth) + " levels");
    if (++values_ % kValuesBetweenCancelChecks == 0 && checks_.cancelled && checks_.cancelled())
      throw ApiError(499, "the client closed the connection; the request was aborted",
                     "invalid_request_error");
    if (open_.empty()) {
      root_ = Json(std::forward<Value>(v));
      pending_ = &root_;
    } else if (Json& top = *open_.back(); top.is_array()) {
      auto& items = top.get_ref<Json::array_t&>();
      items.emplace_back(std::forward<Value>(v));
      pending_ = &items.back();
    } else {
      *pending_ = Json(std::forward<Value>(v));  // the slot key() appended
    }
    return true;
  }

  const JsonBodyChecks& checks_;
  Json root_;
  std::vector<Json*> open_;             // the containers being filled, outermost first
  std::vector<std::string_view> keys_;  // scratch for refuse_duplicate_keys
  Json* pending_ = nullptr;
  size_t values_ = 0;
};

}  // namespace

Json parse_json_linear(std::string_view text, const JsonBodyChecks& checks) {
  LinearDomBuilder builder(checks);
  Json::sax_parse(text.begin(), text.end(), &builder);
  return builder.take();
}

std::string string_value(const nlohmann::ordered_json& obj, const char* key,
                         const std::string& fallback) {
  const auto v = obj.find(key);
  if (v == obj.end() || v->is_null()) return fallback;
  return v->is_string() ? v->get<std::string>() : std::string("(not a string)");
}

}  // namespace kvforge::server
