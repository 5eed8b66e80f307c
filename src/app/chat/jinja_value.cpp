#include "app/chat/jinja_value.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "app/chat/jinja_budget.h"

namespace kvforge::jinja {

void Value::note_children(const Value& child) {
  nesting_ = std::max(nesting_, child.nesting_ + 1);
  holds_namespace_ = holds_namespace_ || child.holds_namespace_;
}

void Value::check_nesting() const {
  if (nesting_ > kMaxNesting)
    throw std::length_error("value nested deeper than " + std::to_string(kMaxNesting) + " levels");
}

Value::Value(Array a) : nesting_(1) {
  for (const Value& e : a) note_children(e);
  check_nesting();
  v_ = std::make_shared<Array>(std::move(a));
}

Value::Value(Object o) : nesting_(1) {
  for (const auto& [k, e] : o) note_children(e);
  check_nesting();
  v_ = ObjectBox{std::make_shared<Object>(std::move(o)), false};
}

Value Value::make_namespace(Object o) {
  Value v(std::move(o));
  std::get<ObjectBox>(v.v_).is_namespace = true;
  v.holds_namespace_ = true;
  return v;
}

Value Value::function(std::string name, std::function<Value(const CallArgs&)> fn) {
  Value v;
  v.v_ = std::make_shared<Function>(Function{std::move(name), std::move(fn)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxJsonDepth)
    throw std::invalid_argument("chat template input nested deeper than " +
                                std::to_string(kMaxJsonDepth) + " levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      a.reserve(j.size());
      for (const auto& e : j) a.push_back(from_json(e, depth + 1));
      return Value(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      o.reserve(j.size());
      for (const auto& [k, e] : j.items()) o.emplace_back(k, from_json(e, depth + 1));
      return Value(std::move(o));
    }
    default:  // binary, discarded
      return none();
  }
}

Value::Kind Value::kind() const { return static_cast<Kind>(v_.index()); }

bool Value::is_namespace() const {
  return kind() == Kind::kObject && std::get<ObjectBox>(v_).is_namespace;
}

double Value::as_number() const {
  return kind() == Kind::kInt ? static_cast<double>(as_int()) : std::get<double>(v_);
}

Object& Value::mutable_namespace() const { return *std::get<ObjectBox>(v_).object; }

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_number() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kArray:
      return !as_array().empty();
    case Kind::kObject:
      return is_namespace() || !as_object().empty();
    case Kind::kFunction:
      return true;
  }
  return false;
}

const Value* Value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  charge_work(static_cast<int64_t>(as_object().size()));
  for (const auto& [k, v] : as_object())
    if (k == key) return &v;
  return nullptr;
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kArray:
      return "list";
    case Kind::kObject:
      return is_namespace() ? "Namespace" : "dict";
    case Kind::kFunction:
      return "function";
  }
  return "?";
}

bool values_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  const bool a_num = a.is_number() || a.kind() == K::kBool;
  const bool b_num = b.is_number() || b.kind() == K::kBool;
  if (a_num && b_num) {
    auto num = [](const Value& v) {
      return v.kind() == K::kBool ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
    };
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return num(a) == num(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone:
      return true;
    case K::kString:
      charge_work(static_cast<int64_t>(a.as_string().size() / RenderBudget::kBytesPerUnit));
      return a.as_string() == b.as_string();
    case K::kArray: {
      const Array& x = a.as_array();
      const Array& y = b.as_array();
      if (x.size() != y.size()) return false;
      charge_work(static_cast<int64_t>(x.size()));
      for (size_t i = 0; i < x.size(); ++i)
        if (!values_equal(x[i], y[i])) return false;
      return true;
    }
    case K::kObject: {
      if (a.is_namespace() || b.is_namespace()) return &a.as_object() == &b.as_object();
      const Object& x = a.as_object();
      if (x.size() != b.as_object().size()) return false;
      for (const auto& [k, v] : x) {
        const Value* other = b.find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    }
    case K::kFunction:
      return &a.as_function() == &b.as_function();
    default:
      return false;
  }
}

}  // namespace kvforge::jinja
