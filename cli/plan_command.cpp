// `railyard plan PLAN.yaml`: bill of materials, power, cost, and the time, energy and cost to train, side by side.
#include "commands.hpp"
#include "study_options.hpp"

#include "railyard/common/error.hpp"
#include "railyard/studies/plan.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace railyard::cli {
namespace {

std::string money(double usd)
{
  if (usd >= 1e6) return fmt::format("${:.2f}M", usd / 1e6);
  if (usd >= 1e3) return fmt::format("${:.1f}k", usd / 1e3);
  return fmt::format("${:.2f}", usd);
}

void print_side_by_side(const studies::PlanSpec& spec, const studies::PlanOutcome& r, std::ostream& out)
{
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  const auto row = [&](const std::string& name, auto&& cell) {
    std::vector<std::string> cells;
    for (const auto& x : r.rows)
      cells.push_back(cell(x));
    rows.emplace_back(name, std::move(cells));
  };
  row("GPUs", [](const studies::PlanRow& x) { return std::to_string(x.bom.gpus); });
  row("nodes", [](const studies::PlanRow& x) { return std::to_string(x.bom.nodes); });
  row("switches", [](const studies::PlanRow& x) {
    std::string s = std::to_string(x.bom.switches);
    std::string tiers;
    for (const auto& [t, n] : x.bom.switches_by_tier)
      tiers += fmt::format("{}{} {}", tiers.empty() ? "" : ", ", n, t);
    return tiers.empty() ? s : s + " (" + tiers + ")";
  });
  row("transceivers", [](const studies::PlanRow& x) { return std::to_string(x.bom.transceivers); });
  row("cables (DAC / fiber)",
      [](const studies::PlanRow& x) { return fmt::format("{} / {}", x.bom.dac_cables, x.bom.fiber_cables); });
  row("capex", [](const studies::PlanRow& x) { return money(x.bom.capex_usd); });
  row("IT power", [](const studies::PlanRow& x) { return fmt::format("{:.1f} kW", x.bom.it_power_w / 1000); });
  row("facility power", [](const studies::PlanRow& x) { return fmt::format("{:.1f} kW", x.facility_power_w / 1000); });
  row("USD per GPU-hour", [](const studies::PlanRow& x) { return fmt::format("${:.3f}", x.usd_per_gpu_hour); });
  row("step time", [](const studies::PlanRow& x) {
    return x.step_time_s ? fmt::format("{:.4f} s", *x.step_time_s) : x.status == "failed" ? "failed" : "-";
  });
  row("MFU", [](const studies::PlanRow& x) { return x.mfu ? fmt::format("{:.1f}%", 100 * *x.mfu) : "-"; });
  if (spec.tokens > 0) {
    row("days to train",
        [](const studies::PlanRow& x) { return x.train_s > 0 ? fmt::format("{:.2f}", x.train_s / 86400) : "-"; });
    row("energy",
        [](const studies::PlanRow& x) { return x.train_s > 0 ? fmt::format("{:.1f} MWh", x.energy_kwh / 1000) : "-"; });
    row("cost to train", [](const studies::PlanRow& x) {
      return x.train_s > 0 ? fmt::format("{} ({} energy + {} capex share)", money(x.cost_usd), money(x.energy_cost_usd),
                                         money(x.capex_share_usd))
                           : "-";
    });
  }
  std::size_t w0 = 0;
  for (const auto& [name, cells] : rows)
    w0 = std::max(w0, name.size());
  std::vector<std::size_t> w(r.rows.size());
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    w[i] = r.rows[i].cluster.size();
    for (const auto& [name, cells] : rows)
      w[i] = std::max(w[i], cells[i].size());
  }
  std::string head = fmt::format("{:<{}}", "", w0);
  for (std::size_t i = 0; i < r.rows.size(); ++i)
    head += fmt::format("  {:>{}}", r.rows[i].cluster, w[i]);
  out << head << "\n";
  for (const auto& [name, cells] : rows) {
    std::string line = fmt::format("{:<{}}", name, w0);
    for (std::size_t i = 0; i < cells.size(); ++i)
      line += fmt::format("  {:>{}}", cells[i], w[i]);
    out << line << "\n";
  }
}

} // namespace

void add_plan_command(CLI::App& app, Action* action)
{
  struct Options {
    std::string plan;
    StudyOptions study;
    bool bom_only = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Capacity planning: each cluster's bill of materials from its topology (nodes and GPUs, switches by "
              "tier, transceivers and cables by reach), its power and cost from the parts catalogue (every figure "
              "with a dated public source; yours laid over it with catalogue:), and the time, energy and cost to "
              "train `tokens` from its simulated step, side by side (studies/README.md)");
  cmd->add_option("plan", opts->plan, "plan YAML file")->required();
  cmd->add_option("--out,-o", opts->study.out,
                  "the plan's folder (default: out/<plan name>): plan.csv, bom.csv, plan.json and clusters/<name> "
                  "(each cluster's simulated step, reused when its inputs have not changed)");
  cmd->add_flag("--bom-only", opts->bom_only,
                "bill of materials, cost and power only: simulate nothing (clusters that give step_time_s still get "
                "their training estimate)");
  add_study_options(cmd, opts->study);
  cmd->callback([opts, action] {
    *action = [opts] {
      const studies::PlanSpec spec = studies::load_plan(opts->plan);
      const studies::SweepRunOptions o = study_run_options(opts->study, spec.name, opts->plan);
      const studies::PlanOutcome r = studies::run_plan(spec, o, opts->bom_only);
      std::cout << fmt::format("plan {}: {} cluster{}{}\n", spec.name, r.rows.size(), r.rows.size() == 1 ? "" : "s",
                               spec.tokens > 0 ? fmt::format(", {:.4g} tokens to train", spec.tokens) : "");
      print_side_by_side(spec, r, std::cout);
      for (const auto& row : r.rows) {
        if (!row.error.empty()) std::cout << fmt::format("{}: failed: {}\n", row.cluster, row.error);
        if (!row.bom.unpriced.empty() || !row.bom.unpowered.empty())
          std::cout << fmt::format(
              "{}: not in the totals (the catalogue has no public figure): price of {}; power "
              "of {} (give yours in a catalogue: file)\n",
              row.cluster, row.bom.unpriced.empty() ? "-" : fmt::format("{}", fmt::join(row.bom.unpriced, ", ")),
              row.bom.unpowered.empty() ? "-" : fmt::format("{}", fmt::join(row.bom.unpowered, ", ")));
      }
      std::cout << "wrote " << r.plan_csv << ", " << r.bom_csv << ", " << r.plan_json << "\n";
      return r.failed > 0 ? 1 : 0;
    };
  });
}

} // namespace railyard::cli
