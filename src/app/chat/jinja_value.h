// Values of the Jinja subset that chat templates use, with Python semantics:
// Jinja runs on Python, so `{{ x }}` prints str(x), truthiness and equality are
// Python's, dicts keep insertion order (tojson output depends on it), and an
// undefined name is a value of its own that is falsy and renders as "".
//
// Arrays, objects and namespaces are shared (copying a Value copies a
// pointer), like Python references; only namespaces may be mutated by a
// template (`{% set ns.x = 1 %}`), matching the immutable sandbox that
// Hugging Face renders chat templates in.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kvforge::jinja {

class Value;
using Array = std::vector<Value>;
// Insertion-ordered, unique keys; lookups are linear (chat messages have a handful of keys).
using Object = std::vector<std::pair<std::string, Value>>;

// Positional and keyword arguments of a call, filter or test.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Function {
  std::string name;  // for error messages
  std::function<Value(const CallArgs&)> call;
};

struct Undefined {
  std::string name;  // what was looked up, for "'x' is undefined"
};
struct None {};
struct NamespaceTag {};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction };

  Value() : v_(Undefined{}) {}
  static Value undefined(std::string name = {}) { return Value(Undefined{std::move(name)}); }
  static Value none() { return Value(None{}); }
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int i) : v_(int64_t{i}) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  // Containers throw std::length_error when nested deeper than kMaxNesting, so
  // printing, comparing and destroying a value never recurses without bound.
  static constexpr int kMaxNesting = 256;
  Value(Array a);
  Value(Object o);
  static Value make_namespace(Object o);
  static Value function(std::string name, std::function<Value(const CallArgs&)> fn);
  // JSON (objects keep the order of the ordered_json they come from). Throws
  // std::invalid_argument past kMaxJsonDepth levels of nesting.
  static constexpr int kMaxJsonDepth = 64;
  static Value from_json(const nlohmann::ordered_json& j, int depth = 0);

  Kind kind() const;
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_number() const { return kind() == Kind::kInt || kind() == Kind::kFloat; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }  // dicts and namespaces
  bool is_namespace() const;
  bool is_function() const { return kind() == Kind::kFunction; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_number() const;  // int or float
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Array& as_array() const { return *std::get<std::shared_ptr<Array>>(v_); }
  const Object& as_object() const { return *std::get<ObjectBox>(v_).object; }
  Object& mutable_namespace() const;  // only for namespaces
  const Function& as_function() const { return *std::get<std::shared_ptr<Function>>(v_); }
  const std::string& undefined_name() const { return std::get<Undefined>(v_).name; }
  int nesting() const { return nesting_; }
  // Is or contains a namespace (a namespace may not be stored inside another
  // value: that could form a cycle).
  bool holds_namespace() const { return holds_namespace_; }

  // Python bool(x).
  bool truthy() const;
  // The entry for `key`, or nullptr.
  const Value* find(std::string_view key) const;
  // Python type name, for error messages ("str", "int", "list", "dict", ...).
  std::string type_name() const;

 private:
  struct ObjectBox {
    std::shared_ptr<Object> object;
    bool is_namespace;
  };
  explicit Value(Undefined u) : v_(std::move(u)) {}
  explicit Value(None n) : v_(n) {}
  void note_children(const Value& child);
  void check_nesting() const;

  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<Array>,
               ObjectBox, std::shared_ptr<Function>>
      v_;
  int nesting_ = 0;  // container levels: 0 for scalars, 1 for [1, 2], 2 for [[1]]
  bool holds_namespace_ = false;
};

// Python ==: numbers compare by value (1 == 1.0 == True), containers deeply.
bool values_equal(const Value& a, const Value& b);

}  // namespace kvforge::jinja
