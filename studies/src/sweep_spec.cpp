// The sweep file and its points (sweep.hpp).
#include "railyard/studies/plan.hpp"
#include "railyard/studies/sweep.hpp"

#include "railyard/common/csv.hpp"
#include "railyard/common/yaml.hpp"

#include <fmt/format.h>
#include <muParser.h>

#include <charconv>
#include <cmath>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>

namespace railyard::studies {

namespace fs = std::filesystem;

namespace {

/// A value of a range as YAML: a whole number when it is one, else the shortest text that reads back as it.
YAML::Node number_node(double v)
{
  if (std::abs(v) < 9e15 && v == std::floor(v)) return YAML::Node(static_cast<std::int64_t>(v));
  return YAML::Node(shortest_number(v));
}

std::vector<YAML::Node> range_values(const YamlNode& r)
{
  r.expect_keys({"from", "to", "step", "factor"});
  const double from = r.at("from").as_double(), to = r.at("to").as_double();
  const bool has_step = r.has("step"), has_factor = r.has("factor");
  if (has_step == has_factor)
    r.fail("a range needs exactly one of step and factor",
           "give step: (from, from + step, "
           "... up to to) or factor: (from, from x factor, ... up to to)");
  std::vector<YAML::Node> out;
  const auto too_many = [&] {
    r.fail(fmt::format("the range has more than {} values", kMaxSweepPoints), "use a larger step or factor");
  };
  if (has_step) {
    const double step = r.at("step").as_double();
    if (!(step > 0)) r.at("step").fail("the step must be above zero", "give a positive step (ranges go upwards)");
    // By index, so that no rounding accumulates: from + i x step, up to `to` (a relative 1e-12 above it counts).
    for (std::size_t i = 0;; ++i) {
      const double v = from + static_cast<double>(i) * step;
      if (v > to + 1e-12 * std::max(std::abs(to), 1.0)) break;
      if (out.size() >= kMaxSweepPoints) too_many();
      out.push_back(number_node(v));
    }
  } else {
    const double factor = r.at("factor").as_double();
    if (!(factor > 1)) r.at("factor").fail("the factor must be above 1", "give a factor such as 2");
    if (!(from > 0)) r.at("from").fail("a range by factor starts above zero", "give a positive from:");
    for (std::size_t i = 0;; ++i) {
      const double v = from * std::pow(factor, static_cast<double>(i));
      if (v > to * (1 + 1e-12)) break;
      if (out.size() >= kMaxSweepPoints) too_many();
      out.push_back(number_node(std::abs(v - std::round(v)) <= 1e-9 * v ? std::round(v) : v));
    }
  }
  if (out.empty()) r.fail("the range is empty (from is above to)", "give from: at most to:");
  return out;
}

/// One `{key, values | range, name}` entry.
void read_key_entry(const YamlNode& e, SweepAxis& axis)
{
  e.expect_keys({"key", "values", "range", "name"});
  const YamlNode key = e.at("key");
  const std::string k = key.as_string();
  if (k.empty() || k.front() == '.' || k.back() == '.' || k.find("..") != std::string::npos)
    key.fail(fmt::format("'{}' is not a dotted path", k), "write the scenario key as section.key, e.g. cluster.nodes");
  std::vector<YAML::Node> values;
  if (e.has("values") == e.has("range"))
    e.fail("an axis needs exactly one of values and range",
           "give values: [a, b, ...] or range: {from: ..., to: ..., step: ...}");
  if (auto v = e.get("values")) {
    if (!v->is_sequence() || v->items().empty())
      v->fail("values must be a list with at least one value", "write values: [a, b, ...]");
    for (const YamlNode& item : v->items())
      values.push_back(YAML::Clone(item.raw()));
    if (values.size() > kMaxSweepPoints)
      v->fail(fmt::format("more than {} values", kMaxSweepPoints), "split the sweep into several files");
  } else {
    values = range_values(e.at("range"));
  }
  const std::string name = e.string_or("name", "");
  axis.keys.push_back(k);
  axis.names.push_back(name);
  axis.values.push_back(std::move(values));
  axis.where.push_back(key.where());
}

/// A YAML value as one CSV cell: a scalar as written, anything else in flow style.
std::string cell_text(const YAML::Node& n)
{
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << n;
  return e.c_str();
}

/// A YAML scalar that is a number (not a size with a unit, not a boolean): its value.
bool as_number(const YAML::Node& n, double& v)
{
  if (!n.IsScalar()) return false;
  const std::string& s = n.Scalar();
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && ptr == end && std::isfinite(v);
}

void collect_numbers(const YAML::Node& n, const std::string& path, std::vector<std::pair<std::string, double>>& out)
{
  if (!n.IsMap()) return;
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    const std::string p = path.empty() ? key : path + "." + key;
    double v = 0;
    if (as_number(kv.second, v))
      out.emplace_back(p, v);
    else
      collect_numbers(kv.second, p, out);
  }
}

double fn_floor(double x)
{
  return std::floor(x);
}
double fn_ceil(double x)
{
  return std::ceil(x);
}
double fn_round(double x)
{
  return std::round(x);
}

/// A parser for derived keys: names may hold dots (scenario keys), and floor, ceil, round beside muparser's own.
void configure(mu::Parser& p)
{
  p.DefineNameChars("0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.");
  p.DefineFun("floor", fn_floor);
  p.DefineFun("ceil", fn_ceil);
  p.DefineFun("round", fn_round);
}

/// Evaluates `expr` over the numbers of `point` (see sweep.hpp for the names it can use).
double evaluate(const std::string& expr, const YAML::Node& point, const std::map<std::string, double>& aliases)
{
  std::vector<std::pair<std::string, double>> numbers;
  collect_numbers(point, "", numbers);
  std::map<std::string, double> vars;
  std::map<std::string, int> leaf_count;
  for (const auto& [path, v] : numbers) {
    vars[path] = v;
    const auto dot = path.rfind('.');
    if (dot != std::string::npos) ++leaf_count[path.substr(dot + 1)];
  }
  for (const auto& [path, v] : numbers) {
    const auto dot = path.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string leaf = path.substr(dot + 1);
    if (leaf_count[leaf] == 1 && !vars.count(leaf)) vars[leaf] = v;
  }
  if (!vars.count("gpus") && vars.count("cluster.nodes") && vars.count("cluster.gpus_per_node"))
    vars["gpus"] = vars["cluster.nodes"] * vars["cluster.gpus_per_node"];
  for (const auto& [name, v] : aliases)
    vars[name] = v;
  std::deque<double> storage;
  mu::Parser p;
  configure(p);
  for (const auto& [name, v] : vars) {
    storage.push_back(v);
    p.DefineVar(name, &storage.back());
  }
  p.SetExpr(expr);
  return p.Eval();
}

} // namespace

std::uint64_t fnv1a(std::string_view text, std::uint64_t h)
{
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::vector<std::string> SweepSpec::columns() const
{
  std::vector<std::string> c;
  for (const auto& a : axes)
    c.insert(c.end(), a.keys.begin(), a.keys.end());
  for (const auto& d : derived)
    c.push_back(d.key);
  return c;
}

std::size_t SweepSpec::points() const
{
  std::size_t n = 1;
  for (const auto& a : axes)
    n *= a.size();
  return n;
}

void set_key(YAML::Node& root, const std::string& key, const YAML::Node& value, const InputLocation& where)
{
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  YAML::Node cur = root;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const bool last = i + 1 == parts.size();
    if (cur.IsSequence()) {
      std::size_t idx = 0;
      const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), idx);
      if (ec != std::errc() || ptr != part.data() + part.size() || idx >= cur.size())
        throw InputError(
            where,
            fmt::format("'{}' goes through a list ({} entries) with '{}', which is not an index of it", key, cur.size(),
                        part),
            fmt::format("index the list with a number from 0 to {}", cur.size() == 0 ? 0 : cur.size() - 1));
      if (last) {
        cur[idx] = YAML::Clone(value);
        return;
      }
      YAML::Node next = cur[idx];
      cur.reset(next);
      continue;
    }
    if (!cur.IsMap() && !cur.IsNull())
      throw InputError(
          where, fmt::format("'{}' goes through '{}', which is a value in the base scenario, not a section", key, part),
          "give the path of a key inside a section (or change the base scenario)");
    if (last) {
      cur[part] = YAML::Clone(value);
      return;
    }
    if (!cur[part] || cur[part].IsNull()) cur[part] = YAML::Node(YAML::NodeType::Map);
    YAML::Node next = cur[part];
    cur.reset(next);
  }
}

void read_sweep_base(const YamlNode& base, const std::string& file, SweepSpec& s)
{
  fs::path b = base.as_string();
  if (b.empty()) base.fail("the base scenario's path is empty", "give the path of a scenario file");
  if (b.is_relative()) b = fs::path(file).parent_path() / b;
  b = b.lexically_normal();
  std::error_code ec;
  if (!fs::is_regular_file(b, ec))
    base.fail(fmt::format("'{}' is not a file", b.string()),
              "give the path of a scenario file, relative to this file or absolute");
  s.base_file = fs::absolute(b).lexically_normal().string();
  s.base = YAML::Clone(YamlNode::load_file(s.base_file).raw());
  if (!s.base.IsMap()) base.fail("the base scenario is not a map of sections", "give a scenario file");
}

SweepSpec load_sweep(const std::string& path)
{
  const YamlNode root = YamlNode::load_file(path);
  root.expect_keys({"name", "base", "axes", "derived", "description", "parts", "catalogue", "depreciation_years"});
  SweepSpec s;
  s.file = path;
  s.name = root.string_or("name", fs::path(path).stem().string());
  read_sweep_base(root.at("base"), path, s);

  const YamlNode axes = root.at("axes");
  if (!axes.is_sequence() || axes.items().empty())
    axes.fail("axes must be a list with at least one axis", "write axes: [{key: cluster.nodes, values: [4, 8]}]");
  std::map<std::string, InputLocation> seen;
  std::size_t total = 1;
  for (const YamlNode& a : axes.items()) {
    SweepAxis axis;
    if (a.has("zip")) {
      a.expect_keys({"zip"});
      const YamlNode z = a.at("zip");
      if (!z.is_sequence() || z.items().size() < 2)
        z.fail("zip needs a list of at least two keys",
               "write zip: [{key: a, values: [...]}, {key: b, values: [...]}]");
      for (const YamlNode& e : z.items())
        read_key_entry(e, axis);
      for (std::size_t k = 1; k < axis.keys.size(); ++k)
        if (axis.values[k].size() != axis.values[0].size())
          throw InputError(axis.where[k],
                           fmt::format("zipped keys have {} values for {} and {} for {}", axis.values[0].size(),
                                       axis.keys[0], axis.values[k].size(), axis.keys[k]),
                           "give every zipped key as many values (or cross them as separate axes)");
    } else {
      read_key_entry(a, axis);
    }
    for (std::size_t k = 0; k < axis.keys.size(); ++k) {
      const auto [it, fresh] = seen.emplace(axis.keys[k], axis.where[k]);
      if (!fresh)
        throw InputError(axis.where[k],
                         fmt::format("'{}' is swept twice (also at line {})", axis.keys[k], it->second.line),
                         "give each key one axis (zip keys that move together)");
    }
    total *= axis.size();
    if (total > kMaxSweepPoints)
      a.fail(fmt::format("the sweep has more than {} points", kMaxSweepPoints),
             "split it into several sweeps or use fewer values");
    s.axes.push_back(std::move(axis));
  }
  if (auto d = root.get("derived")) {
    if (!d->is_sequence()) d->fail("derived must be a list", "write derived: [{key: ..., expr: ...}]");
    for (const YamlNode& e : d->items()) {
      e.expect_keys({"key", "expr"});
      DerivedKey dk{e.at("key").as_string(), e.at("expr").as_string(), e.at("key").where()};
      if (dk.key.empty()) e.at("key").fail("the key is empty", "give a dotted scenario key");
      const auto [it, fresh] = seen.emplace(dk.key, dk.where);
      if (!fresh)
        throw InputError(dk.where, fmt::format("'{}' is both swept and derived (or derived twice)", dk.key),
                         "derive a key that no axis sets, once");
      // The expression's syntax, checked once here (its names only exist per point).
      try {
        mu::Parser p;
        configure(p);
        p.EnableOptimizer(false);
        std::deque<double> store; // any name parses here; per point, only the point's names are defined
        p.SetVarFactory(
            [](const char*, void* data) -> double* {
              auto* st = static_cast<std::deque<double>*>(data);
              st->push_back(1.0);
              return &st->back();
            },
            &store);
        p.SetExpr(dk.expr);
        (void)p.GetUsedVar();
      } catch (const mu::Parser::exception_type& err) {
        e.at("expr").fail(fmt::format("the expression '{}' does not parse: {}", dk.expr, err.GetMsg()),
                          "write arithmetic over scenario keys, e.g. gpus / (tp * pp)");
      }
      s.derived.push_back(std::move(dk));
    }
  }
  s.cost = read_cost_spec(root, path);
  return s;
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec)
{
  const std::size_t n = spec.points();
  std::vector<SweepPoint> out;
  out.reserve(n);
  std::vector<std::size_t> at(spec.axes.size(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    // Mixed radix, the last axis fastest.
    std::size_t rest = i;
    for (std::size_t a = spec.axes.size(); a-- > 0;) {
      at[a] = rest % spec.axes[a].size();
      rest /= spec.axes[a].size();
    }
    SweepPoint p;
    p.index = i;
    YAML::Node node = YAML::Clone(spec.base);
    std::map<std::string, double> aliases;
    for (std::size_t a = 0; a < spec.axes.size(); ++a) {
      const SweepAxis& axis = spec.axes[a];
      for (std::size_t k = 0; k < axis.keys.size(); ++k) {
        const YAML::Node& v = axis.values[k][at[a]];
        set_key(node, axis.keys[k], v, axis.where[k]);
        p.values.push_back(cell_text(v));
        double x = 0;
        if (!axis.names[k].empty() && as_number(v, x)) aliases[axis.names[k]] = x;
      }
    }
    for (const DerivedKey& d : spec.derived) {
      if (!p.invalid.empty()) {
        p.values.emplace_back();
        continue;
      }
      double v = 0;
      try {
        v = evaluate(d.expr, node, aliases);
      } catch (const mu::Parser::exception_type& err) {
        p.invalid = fmt::format("{}:{}: derived {}: {}", d.where.file, d.where.line, d.key, err.GetMsg());
        p.values.emplace_back();
        continue;
      }
      if (!std::isfinite(v)) {
        p.invalid = fmt::format("{}:{}: derived {}: '{}' gives {}", d.where.file, d.where.line, d.key, d.expr, v);
        p.values.emplace_back();
        continue;
      }
      const YAML::Node value =
          number_node(std::abs(v - std::round(v)) <= 1e-9 * std::max(1.0, std::abs(v)) ? std::round(v) : v);
      set_key(node, d.key, value, d.where);
      p.values.push_back(value.Scalar());
    }
    YAML::Emitter e;
    e << node;
    p.yaml = std::string(e.c_str()) + "\n";
    out.push_back(std::move(p));
  }
  return out;
}

} // namespace railyard::studies
