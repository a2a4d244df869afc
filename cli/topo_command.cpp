// `railyard topo describe FILE`: builds the cluster of a scenario and prints what it is made of and what it can carry.
#include "commands.hpp"

#include "railyard/common/error.hpp"
#include "railyard/common/output_file.hpp"
#include "railyard/common/yaml.hpp"
#include "railyard/topologies/topology.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace railyard::cli {
namespace {

struct DescribeOptions {
  std::string scenario;
  std::string dot;
  bool json = false;
};

std::string ratio(double r)
{
  return fmt::format("{:.4g}:1", r);
}

void print_table(const topo::ClusterSpec& spec, const topo::TopologySummary& s, std::ostream& out)
{
  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back("cluster", fmt::format("{}, {} node{} x {} GPUs", topo::to_string(spec.kind), spec.nodes,
                                           spec.nodes == 1 ? "" : "s", spec.gpus_per_node));
  rows.emplace_back("GPUs", std::to_string(s.gpus));
  rows.emplace_back("NICs", fmt::format("{} x {}", s.nics, format_bandwidth(spec.nic_bandwidth)));
  if (spec.fully_connected()) {
    rows.emplace_back("node", fmt::format("fully connected, {} GPU pair links per node of {} each way",
                                          spec.gpus_per_node * (spec.gpus_per_node - 1) / 2,
                                          format_bandwidth(spec.xgmi_bandwidth)));
    rows.emplace_back("GPU-GPU links", std::to_string(s.gpu_links));
  } else {
    rows.emplace_back("NVSwitches", std::to_string(s.nvswitches));
  }
  for (const auto& [tier, count] : s.switches_by_tier)
    rows.emplace_back(tier + " switches", std::to_string(count));
  rows.emplace_back("directed links", std::to_string(s.links));
  rows.emplace_back("cables outside nodes", std::to_string(s.cables));
  rows.emplace_back("optics (transceivers)", std::to_string(s.optics));
  if (s.full_bisection.bytes_per_sec() > 0) {
    rows.emplace_back("bisection bandwidth", format_bandwidth(s.bisection));
    rows.emplace_back("full bisection", format_bandwidth(s.full_bisection));
    rows.emplace_back("bisection / full", fmt::format("{:.4g}", s.bisection / s.full_bisection));
  } else {
    rows.emplace_back("bisection bandwidth", "none (no fabric between two halves of the nodes)");
  }
  rows.emplace_back("leaf oversubscription",
                    s.switches_by_tier.empty() ? "none (no fabric)" : ratio(s.oversubscription));
  if (spec.has_core_tier()) rows.emplace_back("core oversubscription", ratio(s.core_oversubscription));

  std::size_t width = 0;
  for (const auto& row : rows)
    width = std::max(width, row.first.size());
  for (const auto& [name, value] : rows)
    out << fmt::format("{:<{}}  {}\n", name, width, value);
}

int describe(const DescribeOptions& o)
{
  const YamlNode cluster = YamlNode::load_file(o.scenario).at("cluster");
  const topo::ClusterSpec spec = topo::parse_cluster(cluster);
  const topo::Topology topology = topo::build_topology(spec, cluster.where());
  // The DOT file is never the scenario it is drawn from (a slip of the shell's completion would replace it).
  if (!o.dot.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec, ec_dot, ec_scenario;
    const bool same_file = fs::equivalent(o.dot, o.scenario, ec);
    const fs::path dot_path = fs::weakly_canonical(fs::absolute(o.dot, ec_dot), ec_dot);
    const fs::path scenario_path = fs::weakly_canonical(fs::absolute(o.scenario, ec_scenario), ec_scenario);
    if (same_file || (!ec_dot && !ec_scenario && dot_path == scenario_path))
      throw InputError({o.dot, 0, "--dot"}, fmt::format("the DOT file is the scenario file '{}'", o.scenario),
                       "name another file for --dot, e.g. --dot cluster.dot");
  }
  // Create the DOT file (a temporary beside it) before printing anything, so that a bad path fails first; it replaces
  // FILE only once it is complete.
  std::unique_ptr<ReplacingFile> dot;
  if (!o.dot.empty()) dot = std::make_unique<ReplacingFile>(o.dot);
  const topo::TopologySummary s = topology.summary();
  if (o.json)
    std::cout << topo::summary_json(spec, s).dump(2) << "\n";
  else
    print_table(spec, s, std::cout);
  if (dot) {
    topology.write_dot(dot->stream());
    dot->commit();
    if (!o.json) std::cout << "wrote " << o.dot << "\n";
  }
  return 0;
}

} // namespace

void add_topo_command(CLI::App& app, Action* action)
{
  CLI::App* topo = app.add_subcommand("topo", "Inspect the cluster topology of a scenario");
  topo->require_subcommand(1);
  auto opts = std::make_shared<DescribeOptions>();
  CLI::App* cmd = topo->add_subcommand(
      "describe", "Build the cluster of a scenario's `cluster:` section (other sections are ignored) and print its "
                  "GPUs, NICs, switches per tier, links, cables and optics outside the nodes, bisection bandwidth "
                  "(a max flow from the NICs of the first half of the nodes to those of the second half), the full "
                  "bisection a non-blocking fabric would give, and the leaf oversubscription");
  cmd->add_option("FILE", opts->scenario, "scenario YAML file")->required();
  cmd->add_option("--dot", opts->dot, "also write the graph in Graphviz DOT to this file (one edge per cable)");
  cmd->add_flag("--json", opts->json, "print the summary as JSON (bandwidths in bytes per second) instead of a table");
  cmd->callback([opts, action] { *action = [opts] { return describe(*opts); }; });
}

} // namespace railyard::cli
