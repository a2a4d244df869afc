#include "railyard/scenario/collective_calibration.hpp"

#include "railyard/calibration/digest.hpp"
#include "railyard/calibration/minimize.hpp"
#include "railyard/common/csv.hpp"
#include "railyard/common/error.hpp"
#include "railyard/common/yaml.hpp"
#include "railyard/models/collective.hpp"
#include "railyard/scenario/nccl_tests.hpp"
#include "railyard/scenario/scenario.hpp"
#include "row_inputs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace railyard::scenario {
namespace {

double positive(const std::string& text, const InputLocation& where)
{
  return detail::positive_cell(text, where, "the value");
}

int whole(const std::string& text, const InputLocation& where)
{
  const double v = positive(text, where);
  if (v != std::floor(v) || v > 1e7)
    throw InputError(where, fmt::format("'{}' is not a whole number", text), "write a count, e.g. 16");
  return static_cast<int>(v);
}

// A value with its unit ("400 Gb/s", "0.6 us"): the number and the rest.
std::pair<double, std::string> split_value(const std::string& text, const InputLocation& where)
{
  const auto n = detail::leading_number(text);
  if (!n || n->first < 0)
    throw InputError(where, fmt::format("the base value '{}' is not a number with its unit", text),
                     "fit only keys the base scenario gives as a number, e.g. 'bandwidth: 400 Gb/s'");
  return *n;
}

} // namespace

std::vector<MeasuredCollective> read_measured_collectives(const std::string& path, const std::vector<std::string>& only)
{
  const auto records = parse_csv(calibration::read_text_file(path), path);
  if (records.empty())
    throw InputError({path, 0, ""}, "the points CSV is empty", "give a header row and one row per measured point");
  const auto& header = records.front();
  std::map<std::string, std::size_t> col;
  for (std::size_t c = 0; c < header.fields.size(); ++c)
    col[detail::trim(header.fields[c])] = c;
  for (const char* required : {"collective", "ranks", "size_bytes", "time_us"})
    if (!col.count(required))
      throw InputError({path, header.line, required}, fmt::format("no '{}' column", required),
                       "give columns collective, ranks, size_bytes and time_us (nodes, algorithm, protocol, id and "
                       "system are optional)");
  auto field = [&](const CsvRecord& r, const std::string& name) -> std::string {
    const auto it = col.find(name);
    return it == col.end() || it->second >= r.fields.size() ? std::string() : detail::trim(r.fields[it->second]);
  };
  std::vector<MeasuredCollective> out;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const auto& r = records[i];
    if (r.fields.size() != header.fields.size())
      throw InputError({path, r.line, ""},
                       fmt::format("the row has {} fields and the header {}", r.fields.size(), header.fields.size()),
                       "give every row one value per column");
    if (!only.empty() && std::find(only.begin(), only.end(), field(r, "system")) == only.end()) continue;
    MeasuredCollective m;
    m.line = r.line;
    m.id = field(r, "id").empty() ? fmt::format("line {}", r.line) : field(r, "id");
    m.collective = field(r, "collective");
    if (!models::collective_from_string(m.collective))
      throw InputError({path, r.line, "collective"}, fmt::format("unknown collective '{}'", m.collective),
                       "use all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall or sendrecv");
    m.ranks = whole(field(r, "ranks"), {path, r.line, "ranks"});
    if (const std::string n = field(r, "nodes"); !n.empty()) m.nodes = whole(n, {path, r.line, "nodes"});
    if (m.ranks % m.nodes != 0)
      throw InputError({path, r.line, "nodes"}, fmt::format("{} ranks do not fill {} nodes evenly", m.ranks, m.nodes),
                       "give the same number of ranks on every node");
    const double size = positive(field(r, "size_bytes"), {path, r.line, "size_bytes"});
    if (size != std::floor(size) || size > 9007199254740992.0)
      throw InputError({path, r.line, "size_bytes"},
                       fmt::format("'{}' is not a whole number of bytes up to 2^53", field(r, "size_bytes")),
                       "write the size nccl-tests prints, e.g. 1048576");
    m.size_bytes = static_cast<std::int64_t>(size);
    m.time_us = positive(field(r, "time_us"), {path, r.line, "time_us"});
    m.algorithm = field(r, "algorithm").empty() ? field(r, "forced_algo") : field(r, "algorithm");
    m.protocol = field(r, "protocol").empty() ? field(r, "forced_proto") : field(r, "protocol");
    out.push_back(std::move(m));
  }
  if (out.empty())
    throw InputError({path, header.line, only.empty() ? "" : "system"},
                     only.empty() ? "the points CSV has no rows"
                                  : fmt::format("no row of system {}", fmt::join(only, " or ")),
                     "give one row per measured point, or another --only");
  return out;
}

CollectiveCalibration calibrate_collectives(const std::string& points_csv, const CollectiveFitOptions& o)
{
  const auto points = read_measured_collectives(points_csv, o.only);
  if (o.keys.empty())
    throw InputError({"", 0, "--fit"}, "no key to fit",
                     "name the physical parameters to fit, e.g. --fit cluster.nic.bandwidth,nccl.step_overhead");
  if (o.fit_ranks.empty())
    throw InputError({"", 0, "--fit-ranks"}, "no communicator size to fit on",
                     "name the rank counts the fit may use, e.g. --fit-ranks 16");
  const std::string base_text = calibration::read_text_file(o.scenario);
  const YamlNode base_root = YamlNode::load_string(base_text, o.scenario);
  const Scenario base = parse_scenario(base_root, false);
  CollectiveCalibration out;
  std::vector<double> base_values;
  std::vector<std::string> units;
  for (const auto& key : o.keys) {
    const auto v = detail::get_key(base_root.raw(), key);
    if (!v)
      throw InputError({o.scenario, 0, key}, fmt::format("the base scenario gives no value for '{}'", key),
                       "write the key with its current value in the base scenario, e.g. 'nic: {bandwidth: 400 "
                       "Gb/s}', so the fit has a value to scale");
    const auto [number, unit] = split_value(*v, {o.scenario, 0, key});
    // The fit scales the base value; a value of 0 (no step overhead) is fitted from 1 of its unit.
    base_values.push_back(number > 0 ? number : 1.0);
    units.push_back(unit);
    out.keys.push_back({key, *v, *v});
  }
  for (const auto& p : points)
    if (p.nodes > base.cluster.nodes || p.ranks / p.nodes > base.cluster.gpus_per_node)
      throw InputError({points_csv, p.line, "ranks"},
                       fmt::format("{} ranks on {} nodes do not fit the base scenario's {} nodes of {} GPUs", p.ranks,
                                   p.nodes, base.cluster.nodes, base.cluster.gpus_per_node),
                       "give a base scenario with at least as many nodes and GPUs per node as the largest point");
  // The keys' values at x, the logarithms of their scale factors (from 1/1000 to 1000 of the base value).
  auto values_at = [&](const std::vector<double>& x) {
    std::vector<std::string> values;
    for (std::size_t k = 0; k < x.size(); ++k)
      values.push_back(fmt::format(
          "{:.6g}{}", base_values[k] * std::exp(std::clamp(x[k], std::log(1e-3), std::log(1e3))), units[k]));
    return values;
  };
  // The base scenario's tree with the keys set to `values`.
  auto tree_with = [&](const std::vector<std::string>& values) {
    YamlNode root = YamlNode::load_string(base_text, o.scenario);
    YAML::Node raw;
    raw.reset(root.raw());
    for (std::size_t k = 0; k < values.size(); ++k)
      detail::set_key(raw, o.keys[k], values[k]);
    return root;
  };
  auto simulate = [&](const std::vector<std::string>& values, const MeasuredCollective& p) {
    YamlNode root = tree_with(values);
    YAML::Node raw;
    raw.reset(root.raw());
    if (!p.algorithm.empty()) detail::set_key(raw, "nccl.algo", p.algorithm);
    if (!p.protocol.empty()) detail::set_key(raw, "nccl.proto", p.protocol);
    const Scenario sc = parse_scenario(root, false);
    NcclTestsOptions opt;
    opt.kind = *models::collective_from_string(p.collective);
    opt.min_bytes = opt.max_bytes = p.size_bytes;
    const int per_node = p.ranks / p.nodes;
    for (int n = 0; n < p.nodes; ++n)
      for (int g = 0; g < per_node; ++g)
        opt.ranks.push_back(n * sc.cluster.gpus_per_node + g);
    const NcclTestsRun run = simulate_nccl_tests(sc, opt);
    return run.rows.front().time.seconds() * 1e6;
  };
  std::vector<std::string> base_texts;
  for (const auto& k : out.keys)
    base_texts.push_back(k.base_value);
  for (const auto& p : points) {
    CollectivePrediction c;
    c.point = p;
    c.fit = std::find(o.fit_ranks.begin(), o.fit_ranks.end(), p.ranks) != o.fit_ranks.end();
    try {
      c.base_us = simulate(base_texts, p);
    } catch (const InputError& e) {
      throw InputError({points_csv, p.line, e.where().field},
                       fmt::format("point {} cannot be simulated on {}: {}", p.id, o.scenario, e.rule()), e.fix());
    }
    out.points.push_back(c);
  }
  const auto fit_points = std::count_if(out.points.begin(), out.points.end(), [](const auto& c) { return c.fit; });
  if (fit_points < static_cast<long>(o.keys.size()) + 1)
    throw InputError({points_csv, 0, "--fit-ranks"},
                     fmt::format("{} points have a fit rank count, and {} keys need at least {}", fit_points,
                                 o.keys.size(), o.keys.size() + 1),
                     "fit fewer keys, or on more points");
  auto objective = [&](const std::vector<double>& x) {
    const auto values = values_at(x);
    double sum = 0;
    for (const auto& c : out.points)
      if (c.fit) {
        const double e = std::log(simulate(values, c.point) / c.point.time_us);
        sum += e * e;
      }
    return sum / static_cast<double>(fit_points);
  };
  const auto m = calibration::nelder_mead(objective, std::vector<double>(o.keys.size(), 0.0), std::log(1.5),
                                          o.max_evaluations, 1e-6);
  out.evaluations = m.evaluations;
  const auto values = values_at(m.x);
  for (std::size_t k = 0; k < o.keys.size(); ++k)
    out.keys[k].fitted_value = values[k];
  for (auto& c : out.points)
    c.fitted_us = simulate(values, c.point);
  out.scenario_yaml = YAML::Dump(tree_with(values).raw()) + "\n";
  return out;
}

} // namespace railyard::scenario
