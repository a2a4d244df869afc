#include "railyard/scenario/step_calibration.hpp"

#include "railyard/calibration/digest.hpp"
#include "railyard/calibration/minimize.hpp"
#include "railyard/common/csv.hpp"
#include "railyard/common/error.hpp"
#include "railyard/common/hash.hpp"
#include "railyard/common/yaml.hpp"
#include "railyard/scenario/run_workload.hpp"
#include "railyard/scenario/scenario.hpp"
#include "row_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

namespace railyard::scenario {
namespace {

// vTrain's ground-truth column names (VIA-Research/vTrain data/ground_truth_*.csv) and the keys they set.
const std::map<std::string, std::string>& vtrain_columns()
{
  static const std::map<std::string, std::string> m = {
      {"# GPUs", "gpus"},
      {"global batch", "workload.training.global_batch"},
      {"micro batch", "workload.training.micro_batch"},
      {"hidden size", "workload.model.hidden"},
      {"attention heads", "workload.model.heads"},
      {"# layers", "workload.model.layers"},
      {"sequence length", "workload.model.seq_length"},
      {"tensor parallelism", "workload.parallel.tp"},
      {"data parallelism", "workload.parallel.dp"},
      {"pipeline parallelism", "workload.parallel.pp"},
      {"iteration time (ms)", "step_time_ms"},
  };
  return m;
}

std::string label_of(const MeasuredStep& s)
{
  static const std::array<std::pair<const char*, const char*>, 7> short_names = {{
      {"workload.parallel.tp", "tp"},
      {"workload.parallel.pp", "pp"},
      {"workload.parallel.dp", "dp"},
      {"workload.training.micro_batch", "mb"},
      {"workload.training.global_batch", "gb"},
      {"workload.model.layers", "L"},
      {"workload.model.hidden", "h"},
  }};
  std::string out;
  if (s.gpus > 0) out = fmt::format("{} GPUs", s.gpus);
  for (const auto& [key, name] : short_names)
    for (const auto& [k, v] : s.keys)
      if (k == key) out += fmt::format("{}{}{}", out.empty() ? "" : " ", name, v);
  return out.empty() ? fmt::format("line {}", s.line) : out;
}

// The split: a hash of the row's line and the seed, never of its values or results.
bool in_fit_half(int line, std::uint64_t seed, double fraction)
{
  const std::uint64_t h = splitmix64(splitmix64(static_cast<std::uint64_t>(line)) ^ seed);
  return static_cast<double>(h >> 11) * 0x1.0p-53 < fraction;
}

std::vector<double> ranks_of(const std::vector<double>& v)
{
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]])
      ++j;
    const double rank = (static_cast<double>(i) + static_cast<double>(j)) / 2.0; // ties share their mean rank
    for (std::size_t k = i; k <= j; ++k)
      r[idx[k]] = rank;
    i = j + 1;
  }
  return r;
}

// Spearman's rank correlation: Pearson's correlation of the ranks.
double spearman(const std::vector<double>& a, const std::vector<double>& b)
{
  if (a.size() < 2) return 0;
  const auto ra = ranks_of(a), rb = ranks_of(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

std::string percent(double v)
{
  return fmt::format("{:+.1f}%", 100 * v);
}

} // namespace

std::vector<MeasuredStep> read_measured_steps(const std::string& path)
{
  std::string text = calibration::read_text_file(path);
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3); // a UTF-8 byte order mark (vTrain's files have one)
  const auto records = parse_csv(text, path);
  if (records.empty())
    throw InputError({path, 0, ""}, "the steps CSV is empty",
                     "give a header row and one row per measured configuration");
  const auto& header = records.front();
  struct Column {
    std::string key; ///< dotted key, "gpus", "step_time_s" or "step_time_ms"
    std::string name;
  };
  std::vector<Column> columns;
  int time_column = -1;
  for (std::size_t c = 0; c < header.fields.size(); ++c) {
    const std::string name = detail::trim(header.fields[c]);
    std::string key;
    if (const auto it = vtrain_columns().find(name); it != vtrain_columns().end())
      key = it->second;
    else if (name == "gpus" || name == "step_time_s" || name == "step_time_ms" ||
             (name.find('.') != std::string::npos && name.front() != '.' && name.back() != '.'))
      key = name;
    else
      throw InputError({path, header.line, name},
                       fmt::format("column '{}' is neither a dotted scenario key nor a known column", name),
                       "name columns by the scenario key they set (workload.model.layers, workload.parallel.tp, "
                       "...), 'gpus', and 'step_time_s' or 'step_time_ms' for the measurement");
    if (key == "step_time_s" || key == "step_time_ms") {
      if (time_column >= 0)
        throw InputError({path, header.line, name}, "two columns hold the measured step time",
                         "keep one of step_time_s and step_time_ms");
      time_column = static_cast<int>(c);
    }
    columns.push_back({key, name});
  }
  if (time_column < 0)
    throw InputError({path, header.line, ""}, "no column holds the measured step time",
                     "add a 'step_time_s' or 'step_time_ms' column");
  std::vector<MeasuredStep> out;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const auto& r = records[i];
    if (r.fields.size() != columns.size())
      throw InputError({path, r.line, ""},
                       fmt::format("the row has {} fields and the header {}", r.fields.size(), columns.size()),
                       "give every row one value per column");
    MeasuredStep s;
    s.line = r.line;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string v = detail::trim(r.fields[c]);
      const InputLocation where{path, r.line, columns[c].name};
      if (static_cast<int>(c) == time_column) {
        const double t = detail::positive_cell(v, where, "the measured step time");
        s.measured_s = columns[c].key == "step_time_ms" ? t / 1e3 : t;
      } else if (columns[c].key == "gpus") {
        const double g = detail::positive_cell(v, where, "the GPU count");
        if (g != std::floor(g) || g > 1e7)
          throw InputError(where, fmt::format("the GPU count '{}' is not a whole number", v), "write e.g. 8");
        s.gpus = static_cast<int>(g);
      } else {
        if (v.empty()) throw InputError(where, "empty value", "give the value of the key for this configuration");
        s.keys.emplace_back(columns[c].key, v);
      }
    }
    s.label = label_of(s);
    out.push_back(std::move(s));
  }
  if (out.empty())
    throw InputError({path, header.line, ""}, "the steps CSV has a header and no rows",
                     "add one row per measured configuration");
  return out;
}

StepErrors step_errors(const std::vector<StepPrediction>& rows, bool fit, bool framework)
{
  StepErrors e;
  std::vector<double> sim, meas;
  double log_sum = 0, sum = 0;
  int within = 0;
  for (const auto& r : rows) {
    if (r.fit != fit) continue;
    const double s = framework ? r.framework_s : r.device_s;
    const double err = s / r.measured_s - 1;
    log_sum += std::abs(std::log(s / r.measured_s));
    sum += err;
    if (std::abs(err) > std::abs(e.worst)) e.worst = err;
    if (std::abs(err) <= 0.08) ++within;
    sim.push_back(s);
    meas.push_back(r.measured_s);
  }
  e.n = static_cast<int>(sim.size());
  if (e.n == 0) return e;
  e.geomean = std::exp(log_sum / e.n) - 1;
  e.bias = sum / e.n;
  e.within_8 = static_cast<double>(within) / e.n;
  e.spearman = spearman(sim, meas);
  return e;
}

StepCalibration calibrate_steps(const std::string& steps_csv, const StepFitOptions& o)
{
  if (!(o.fit_fraction > 0 && o.fit_fraction < 1))
    throw InputError({"", 0, "--fit-fraction"}, "the fit fraction is a share strictly between 0 and 1",
                     "write e.g. --fit-fraction 0.5");
  const auto rows = read_measured_steps(steps_csv);
  const std::string base_text = calibration::read_text_file(o.scenario);
  const Scenario base = parse_scenario(YamlNode::load_string(base_text, o.scenario));
  if (!base.workload || base.workload->kind != WorkloadSpec::Kind::Megatron || !base.jobs.empty())
    throw InputError({o.scenario, 0, "workload"},
                     "calibrate --steps needs a base scenario with one generated workload (workload: {generator: "
                     "megatron, ...})",
                     "give a scenario whose workload section the rows' columns complete");
  if (base.profile.empty() && !base.profile_data)
    throw InputError({o.scenario, 0, "profile"}, "the base scenario names no profile",
                     "add 'profile: <path>/calibration/profiles/<system>.yaml'; the fitted profile is it plus the "
                     "framework block");

  // Each row's step, prepared once.
  std::vector<std::unique_ptr<PreparedStep>> steps;
  StepCalibration out;
  for (const auto& row : rows) {
    YamlNode root = YamlNode::load_string(base_text, o.scenario);
    YAML::Node raw;
    raw.reset(root.raw());
    if (row.gpus > 0) {
      const int gpn = base.cluster.gpus_per_node;
      if (base.cluster.nodes == 1 && row.gpus <= gpn)
        detail::set_key(raw, "cluster.gpus_per_node", std::to_string(row.gpus));
      else if (row.gpus % gpn == 0)
        detail::set_key(raw, "cluster.nodes", std::to_string(row.gpus / gpn));
      else
        throw InputError({steps_csv, row.line, "gpus"},
                         fmt::format("{} GPUs fill neither one node nor whole nodes of {} GPUs", row.gpus, gpn),
                         "give GPU counts of at most one node or whole nodes of the base scenario's cluster");
    }
    for (const auto& [k, v] : row.keys)
      detail::set_key(raw, k, v);
    try {
      const Scenario sc = parse_scenario(root);
      steps.push_back(std::make_unique<PreparedStep>(sc));
    } catch (const InputError& e) {
      const auto& w = e.where();
      throw InputError({steps_csv, row.line, w.field},
                       fmt::format("this row ({}) makes an invalid scenario from {}{}: {}", row.label, o.scenario,
                                   w.line > 0 ? fmt::format(" (line {})", w.line) : "", e.rule()),
                       e.fix() + " (in this row, or in the base scenario's keys the row does not set)");
    }
    StepPrediction p;
    p.line = row.line;
    p.label = row.label;
    p.measured_s = row.measured_s;
    p.fit = in_fit_half(row.line, o.seed, o.fit_fraction);
    p.device_s = steps.back()->replay(sim::HostModel{}).step_time.seconds();
    out.rows.push_back(p);
  }
  const auto fit_rows = std::count_if(out.rows.begin(), out.rows.end(), [](const auto& r) { return r.fit; });
  if (fit_rows < 2 || static_cast<std::size_t>(fit_rows) + 2 > out.rows.size())
    throw InputError({steps_csv, 0, ""},
                     fmt::format("the split leaves {} fit and {} held-out rows; each half needs at least 2", fit_rows,
                                 out.rows.size() - static_cast<std::size_t>(fit_rows)),
                     "give more rows, or another --fit-fraction or --seed");

  // Nelder-Mead over x = log(cost / 1 us) for (per kernel, per communication call, per micro-batch, per step).
  // Costs from 1 ns to 10 s: the search may wander, the replay never sees an infinite or vanishing cost.
  auto cost = [](double x) { return 1e-6 * std::exp(std::clamp(x, std::log(1e-3), std::log(1e7))); };
  auto host_of = [&](const std::vector<double>& x) {
    return sim::HostModel{true, cost(x[0]), cost(x[1]), cost(x[2]), cost(x[3]), o.sync_after_p2p};
  };
  auto objective = [&](const std::vector<double>& x) {
    const sim::HostModel h = host_of(x);
    double sum = 0;
    int n = 0;
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (out.rows[i].fit) {
        const double e = std::log(steps[i]->replay(h).step_time.seconds() / out.rows[i].measured_s);
        sum += e * e;
        ++n;
      }
    return sum / n;
  };
  // Start: 10 us per kernel and per call, 1 ms per micro-batch, 10 ms per step; the simplex spans a factor of 10 in
  // each.
  const calibration::Minimum m = calibration::nelder_mead(
      objective, {std::log(10.0), std::log(10.0), std::log(1e3), std::log(1e4)}, std::log(10.0), o.max_evaluations);
  out.evaluations = m.evaluations;
  const sim::HostModel fitted = host_of(m.x);
  for (std::size_t i = 0; i < steps.size(); ++i)
    out.rows[i].framework_s = steps[i]->replay(fitted).step_time.seconds();
  out.device_fit = step_errors(out.rows, true, false);
  out.device_held_out = step_errors(out.rows, false, false);
  out.framework_fit = step_errors(out.rows, true, true);
  out.framework_held_out = step_errors(out.rows, false, true);

  // The profile: the base scenario's, with the fitted framework block and the CSV as an input.
  out.profile = base.profile_data ? *base.profile_data : calibration::read_profile(base.profile);
  const std::string csv_text = calibration::read_text_file(steps_csv);
  const auto input = calibration::describe_input(steps_csv, csv_text);
  out.profile.inputs.erase(std::remove_if(out.profile.inputs.begin(), out.profile.inputs.end(),
                                          [&](const auto& i) { return i.path == input.path; }),
                           out.profile.inputs.end());
  out.profile.inputs.push_back(input);
  calibration::FrameworkModel fm;
  fm.name = o.framework_name;
  fm.launch = Seconds(fitted.launch_s);
  fm.collective = Seconds(fitted.collective_s);
  fm.microbatch = Seconds(fitted.microbatch_s);
  fm.step = Seconds(fitted.step_s);
  fm.sync_after_p2p = o.sync_after_p2p;
  double sq = 0, worst = 0;
  for (const auto& r : out.rows)
    if (r.fit) {
      const double e = r.framework_s / r.measured_s - 1;
      sq += e * e;
      worst = std::max(worst, std::abs(e));
    }
  calibration::FitRecord rec;
  rec.quality.points = static_cast<int>(fit_rows);
  rec.quality.rms_rel_error = std::sqrt(sq / static_cast<double>(fit_rows));
  rec.quality.max_rel_error = worst;
  rec.inputs = {input.path};
  fm.fit = rec;
  const StepErrors& h = out.framework_held_out;
  fm.source = fmt::format(
      "fitted by railyard calibrate --steps to {} of the {} rows of {} (split by a hash of each row's line with seed "
      "{}, fit fraction {}): least squares on log(simulated / measured step time) over the host's cost per kernel, "
      "per communication call, per micro-batch and per step (Nelder-Mead, {} evaluations), each row's step generated "
      "from the base scenario {} "
      "and replayed with them; on the {} held-out rows the fitted model's error is {} geometric mean, {} mean "
      "signed, {} worst, Spearman {:.3f} (the device alone: {} geometric mean, {} mean signed)",
      fit_rows, out.rows.size(), steps_csv, o.seed, o.fit_fraction, out.evaluations, o.scenario, h.n,
      fmt::format("{:.1f}%", 100 * h.geomean), percent(h.bias), percent(h.worst), h.spearman,
      fmt::format("{:.1f}%", 100 * out.device_held_out.geomean), percent(out.device_held_out.bias));
  out.profile.framework = fm;
  out.profile.created_by = (out.profile.created_by.empty() ? std::string() : out.profile.created_by + "; ") +
                           "framework block fitted by railyard calibrate --steps";
  out.profile.file.clear();
  return out;
}

} // namespace railyard::scenario
