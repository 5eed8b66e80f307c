#include "app/server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace kvforge::server {
namespace {

bool valid_name(const std::string& s, bool allow_colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Prometheus text-format escaping: backslash and newline everywhere, the
// double quote too inside a label value (HELP text is not quoted).
std::string escape_text(const std::string& v, bool quoted) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (quoted && c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

// {a="x",b="y"} with `extra` (the histogram's le) appended; "" when empty.
std::string label_text(const Labels& labels,
                       const std::pair<std::string, std::string>* extra = nullptr) {
  if (labels.empty() && !extra) return "";
  std::string out = "{";
  bool first = true;
  auto add = [&](const std::pair<std::string, std::string>& l) {
    if (!first) out += ',';
    first = false;
    out += l.first + "=\"" + escape_text(l.second, /*quoted=*/true) + "\"";
  };
  for (const auto& l : labels) add(l);
  if (extra) add(*extra);
  return out + "}";
}

const char* type_name(int t) {
  switch (t) {
    case 0:
      return "counter";
    case 1:
      return "gauge";
    default:
      return "histogram";
  }
}

}  // namespace

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && !(bounds_[i] > bounds_[i - 1])))
      throw std::invalid_argument("histogram bounds must be finite and strictly increasing");
  }
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::observe(double v) {
  // A value equal to a bound belongs to that bucket (le = "less or equal").
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  std::lock_guard lock(mu_);
  ++counts_[bucket];
  sum_ += v;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard lock(mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

MetricsRegistry::Series& MetricsRegistry::series(const std::string& name, const std::string& help,
                                                 Type type, const Labels& labels) {
  if (!valid_name(name, true)) throw std::invalid_argument("invalid metric name '" + name + "'");
  for (const auto& [k, v] : labels) {
    if (!valid_name(k, false) || k == "le" || k.rfind("__", 0) == 0)
      throw std::invalid_argument("invalid label name '" + k + "' on metric " + name);
  }
  std::lock_guard lock(mu_);
  Family* fam = nullptr;
  for (auto& f : families_)
    if (f->name == name) fam = f.get();
  if (!fam) {
    families_.push_back(std::make_unique<Family>(Family{name, help, type, {}}));
    fam = families_.back().get();
  } else if (fam->type != type) {
    throw std::invalid_argument("metric " + name + " was registered as a " +
                                type_name(static_cast<int>(fam->type)));
  }
  for (auto& s : fam->series)
    if (s->labels == labels) return *s;
  fam->series.push_back(std::make_unique<Series>());
  fam->series.back()->labels = labels;
  return *fam->series.back();
}

namespace {
// The series' metric in `slot`, made from `args` on first use (under `mu`).
template <class Metric, class... Args>
Metric& made_once(std::mutex& mu, std::unique_ptr<Metric>& slot, const Args&... args) {
  std::lock_guard lock(mu);
  if (!slot) slot = std::make_unique<Metric>(args...);
  return *slot;
}
}  // namespace

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const Labels& labels) {
  return made_once(mu_, series(name, help, Type::kCounter, labels).counter);
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const Labels& labels) {
  return made_once(mu_, series(name, help, Type::kGauge, labels).gauge);
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      const std::vector<double>& bounds, const Labels& labels) {
  return made_once(mu_, series(name, help, Type::kHistogram, labels).histogram, bounds);
}

std::string MetricsRegistry::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& f : families_) {
    out += "# HELP " + f->name + " " + escape_text(f->help, /*quoted=*/false) + "\n";
    out += "# TYPE " + f->name + " " + type_name(static_cast<int>(f->type)) + "\n";
    for (const auto& s : f->series) {
      if (s->counter) {
        out +=
            f->name + label_text(s->labels) + " " + format_metric_value(s->counter->value()) + "\n";
      } else if (s->gauge) {
        out +=
            f->name + label_text(s->labels) + " " + format_metric_value(s->gauge->value()) + "\n";
      } else if (s->histogram) {
        const Histogram::Snapshot snap = s->histogram->snapshot();
        for (size_t i = 0; i <= snap.bounds.size(); ++i) {
          const std::pair<std::string, std::string> le{
              "le", i < snap.bounds.size() ? format_metric_value(snap.bounds[i]) : "+Inf"};
          out += f->name + "_bucket" + label_text(s->labels, &le) + " " +
                 std::to_string(snap.cumulative[i]) + "\n";
        }
        out +=
            f->name + "_sum" + label_text(s->labels) + " " + format_metric_value(snap.sum) + "\n";
        out += f->name + "_count" + label_text(s->labels) + " " + std::to_string(snap.count) + "\n";
      }
    }
  }
  return out;
}

}  // namespace kvforge::server
