// railyard plan: capacity planning. A bill of materials from a cluster's topology (nodes and GPUs, switches by tier,
// transceivers and cables by reach), its power and cost from a parts catalogue whose every figure names a dated public
// source (data/catalogue/parts.yaml, built into the binary; a user's own catalogue replaces it field by field), and
// the time, energy and cost to train a number of tokens, from each cluster's simulated step. studies/README.md has the
// plan file's format.
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/common/yaml.hpp"
#include "railyard/studies/sweep.hpp"
#include "railyard/topologies/topology.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace railyard::studies {

/// Where a catalogue figure comes from.
struct CatalogueSource {
  std::string id, title, url, published, accessed, says;
};

/// One part. A price or power the catalogue has no public figure for is empty (a gap the plan reports).
struct Part {
  std::string id, category, description; ///< category: gpu, host, switch, transceiver, cable
  std::optional<double> price_usd, power_w;
  std::string price_source, power_source;
  int gpus = 0, nics = 0;            ///< host: the GPUs and fabric NICs of one node
  int nic_ports_per_transceiver = 1; ///< host: NIC ports one cage (and its transceiver) carries
  int ports = 0;                     ///< switch: ports; transceiver: links it carries
  double port_gbps = 0;              ///< switch: each port's rate
  int ports_per_transceiver = 1;     ///< switch: logical ports per cage
  double reach_m = 0;                ///< transceiver, cable: longest link
  std::string medium;                ///< cable: dac or fiber
};

struct Facility {
  double pue = 1, electricity_usd_per_kwh = 0, power_fraction = 1;
  std::string pue_source, electricity_source, power_fraction_source;
};

struct Catalogue {
  std::string version, currency;
  Facility facility;
  std::map<std::string, Part> parts;
  std::map<std::string, CatalogueSource> sources;
  std::vector<std::string> files; ///< "built-in" and the user's catalogue, in the order they were applied
};

/// The catalogue built into the binary (data/catalogue/parts.yaml at build time).
Catalogue builtin_catalogue();
/// `base` with the parts, sources and facility figures of the catalogue file `path` laid over it field by field (a
/// part or source it names anew is added). InputError naming the file, line and field for anything wrong.
Catalogue overlay_catalogue(Catalogue base, const std::string& path);
/// Parses a catalogue from text (`name` for messages); the same checks: every figure has a source that exists and
/// every source a date.
Catalogue parse_catalogue(const std::string& text, const std::string& name);

/// How a cluster is built from catalogue parts.
struct ClusterParts {
  std::string gpu = "h100_sxm", host = "hgx_8gpu_host";
  /// By tier family (leaf, spine, agg, core); "*" for every tier not named.
  std::map<std::string, std::string> switches = {{"*", "quantum2_qm9700"}};
  std::string transceiver_short = "osfp_800g_2xsr4"; ///< optical links within a row (NIC-leaf, leaf-spine)
  std::string transceiver_long = "osfp_800g_2xdr4";  ///< links across the hall (aggregation-core)
  std::string dac = "dac_400g", fiber = "mpo12_fiber";
  int nodes_per_rack = 4; ///< a leaf whose NICs all sit in one rack is its top-of-rack switch: copper to the NICs
  bool merge_spines =
      true; ///< switches above the leaves using at most half their ports are built as fewer, bigger ones
  InputLocation where;
};

/// One line of a bill of materials.
struct BomLine {
  std::string category, part, description;
  long long count = 0;
  std::optional<double> unit_price_usd, unit_power_w;
  std::string note; ///< how the count was made (ports used, reach class)
  [[nodiscard]] std::optional<double> price_usd() const
  {
    return unit_price_usd ? std::optional<double>(*unit_price_usd * static_cast<double>(count)) : std::nullopt;
  }
  [[nodiscard]] std::optional<double> power_w() const
  {
    return unit_power_w ? std::optional<double>(*unit_power_w * static_cast<double>(count)) : std::nullopt;
  }
};

struct Bom {
  std::vector<BomLine> lines;
  long long nodes = 0, gpus = 0, nics = 0, switches = 0, transceivers = 0, dac_cables = 0, fiber_cables = 0;
  std::map<std::string, long long> switches_by_tier; ///< physical switches per tier family
  double capex_usd = 0, it_power_w = 0;              ///< sums of what the catalogue prices and powers
  std::vector<std::string> unpriced, unpowered;      ///< parts counted but without a price or a power figure
};

/// The bill of materials of a topology as built (a failure in the cluster section does not remove parts).
Bom bill_of_materials(const topo::Topology& topology, const Catalogue& catalogue, const ClusterParts& parts);

/// How a sweep or a search prices its points: the catalogue and the parts of their clusters.
struct CostSpec {
  Catalogue catalogue;
  ClusterParts parts;
  double depreciation_years = 4;
};

/// A study file's `parts:` (as a plan cluster's), `catalogue:` (relative to `file`) and `depreciation_years:`; null
/// when it has no `parts:`.
std::shared_ptr<const CostSpec> read_cost_spec(const YamlNode& root, const std::string& file);

/// A point's cost columns: capex_usd, it_power_kw, facility_power_kw, usd_per_gpu_hour, from the cluster of its
/// scenario (YAML text; failures left out: what is down is still bought). InputError when the parts do not fit it.
std::vector<std::pair<std::string, std::string>> cost_metrics(const CostSpec& cost, const std::string& scenario_yaml,
                                                              const std::string& name);

/// A plan file.
struct PlanCluster {
  std::string name;
  SweepSpec scenario; ///< the cluster's scenario as a one-point sweep (its `set:` keys as single-valued axes)
  ClusterParts parts;
  std::optional<double> step_time_s;     ///< given: not simulated
  std::optional<double> tokens_per_step; ///< given; else global_batch x seq_length of a generated workload
  InputLocation where;
};

struct PlanSpec {
  std::string file, name;
  Catalogue catalogue;
  double tokens = 0; ///< to train; 0: no training estimate
  double depreciation_years = 4;
  std::vector<PlanCluster> clusters;
};

PlanSpec load_plan(const std::string& path);

struct PlanRow {
  std::string cluster, scenario;
  Bom bom;
  double facility_power_w = 0;
  std::string status = "ok", error; ///< failed: the simulation did not finish
  std::optional<double> step_time_s, tokens_per_step, mfu;
  double steps = 0, train_s = 0, energy_kwh = 0, energy_cost_usd = 0, capex_share_usd = 0, cost_usd = 0;
  double usd_per_gpu_hour = 0;
};

struct PlanOutcome {
  std::vector<PlanRow> rows;
  std::string plan_csv, bom_csv, plan_json;
  std::size_t failed = 0;
};

/// Builds each cluster's bill of materials, simulates its step (unless given, or `bom_only`) through the sweep
/// machinery into options.out/clusters/<name>, and writes plan.csv, bom.csv and plan.json into options.out.
PlanOutcome run_plan(const PlanSpec& spec, const SweepRunOptions& options, bool bom_only);

} // namespace railyard::studies
