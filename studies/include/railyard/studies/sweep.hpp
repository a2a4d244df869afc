// railyard sweep: a base scenario and axes over its keys, expanded into points, each run by `railyard run` in its own
// process, gathered into one results table (studies/README.md has the file format).
//
// The sweep file:
//
//   name: fabric_study                      # default: the file's stem
//   base: ../examples/llama3_70b_1024.yaml  # the base scenario, relative to the sweep file
//   axes:                                   # crossed, the first outermost
//     - {key: cluster.kind, values: [rail_optimized, fat_tree]}
//     - {key: cluster.nodes, range: {from: 2, to: 16, factor: 2}}   # or step: (additive); both ends included
//     - zip:                                # advanced together: one dimension
//         - {key: workload.parallel.tp, values: [8, 4], name: tp}
//         - {key: workload.parallel.pp, values: [4, 8]}
//   derived:                                # after the axes, in order
//     - {key: workload.parallel.dp, expr: "gpus / (tp * pp)"}
//
// A key is a dotted path into the scenario (maps by key, lists by index: collectives.0.size); missing maps on the
// way are created. An expression (muparser syntax: + - * / ^, min, max, floor, ceil, round, ...) reads the point's
// numbers by dotted path, by their last name where that name is unique in the point, by an axis's `name:`, and
// `gpus` (cluster.nodes x cluster.gpus_per_node).
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/common/yaml.hpp"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace railyard::studies {

struct CostSpec; // plan.hpp: the catalogue and parts a study prices its points with

/// One dimension of a sweep: one key and its values, or several keys zipped (values[k][i] goes with values[j][i]).
struct SweepAxis {
  std::vector<std::string> keys;
  std::vector<std::string> names; ///< each key's alias in expressions ("" for none)
  std::vector<std::vector<YAML::Node>> values;
  std::vector<InputLocation> where; ///< each key's entry
  [[nodiscard]] std::size_t size() const { return values.empty() ? 0 : values.front().size(); }
};

struct DerivedKey {
  std::string key;
  std::string expr;
  InputLocation where;
};

struct SweepSpec {
  std::string file; ///< the sweep file
  std::string name;
  std::string base_file; ///< the base scenario, as resolved
  YAML::Node base;
  std::vector<SweepAxis> axes;
  std::vector<DerivedKey> derived;
  /// `parts:` (and `catalogue:`, `depreciation_years:`) given: every point's row gets its cluster's capex_usd,
  /// it_power_kw, facility_power_kw and usd_per_gpu_hour (plan.hpp); null otherwise.
  std::shared_ptr<const CostSpec> cost;
  /// Every axis and derived key, in the order of the results table's columns.
  [[nodiscard]] std::vector<std::string> columns() const;
  [[nodiscard]] std::size_t points() const;
};

/// At most this many points in one sweep.
inline constexpr std::size_t kMaxSweepPoints = 100000;

/// Reads and checks a sweep file (InputError naming the file, line and field for anything wrong in it).
SweepSpec load_sweep(const std::string& path);

/// The `base:` field of a sweep or search file `file`: the scenario it names (relative to `file`), read into
/// s.base_file and s.base; InputError at the field when it is not a file or not a scenario's map.
void read_sweep_base(const YamlNode& base, const std::string& file, SweepSpec& s);

/// One point: the base with its axis values and derived keys set.
struct SweepPoint {
  std::size_t index = 0;
  /// The value of every column of SweepSpec::columns(), as text ("" where a derived key could not be worked out).
  std::vector<std::string> values;
  std::string yaml;    ///< the point's scenario
  std::string invalid; ///< why it cannot run (a derived key's expression failed); empty when it can
};

/// The points in order: the first axis outermost, the last innermost.
std::vector<SweepPoint> expand_sweep(const SweepSpec& spec);

/// Sets `value` at the dotted `key` of `root` (maps created on the way; a list is indexed by a number). Throws
/// InputError at `where` when the path goes through a value that is neither.
void set_key(YAML::Node& root, const std::string& key, const YAML::Node& value, const InputLocation& where);

/// 64-bit FNV-1a, for the names of the points' folders (stable across builds and machines).
std::uint64_t fnv1a(std::string_view text, std::uint64_t h = 14695981039346656037ULL);

/// The metrics of a finished point, read from its summary.json: (column, value as text) in a fixed order.
std::vector<std::pair<std::string, std::string>> summary_metrics(const std::string& summary_json_text);

/// Running the points on a Slurm cluster: a job array (one task per `batch` points) and a gather job after it.
struct SlurmOptions {
  std::string partition, account, time; ///< sbatch --partition, --account, --time (empty: the cluster's defaults)
  std::string setup;    ///< shell lines each task runs first (module load ..., a container's environment)
  std::string railyard; ///< the binary on the compute nodes (default: this one's path: a shared file system)
  int batch = 1;        ///< points per array task
  bool wait = false;    ///< return once the gather job has ended (sbatch --wait), with its exit code
};

struct SweepRunOptions {
  enum class Mode {
    Local,  ///< run the points here, -j at once
    Slurm,  ///< submit them to Slurm; the gather job writes results.csv
    Gather, ///< run nothing: the table from the points that finished (the Slurm gather job runs this)
  };
  Mode mode = Mode::Local;
  std::string out;                   ///< the sweep's folder
  int jobs = 1;                      ///< points run at once
  std::string railyard;              ///< the binary that runs each point (railyard run)
  bool progress = false;             ///< progress lines on stderr even when it is not a terminal
  std::vector<std::string> run_args; ///< extra arguments for each point's railyard run (e.g. --max-memory)
  SlurmOptions slurm;
  std::string sweep_file; ///< the sweep file as given (the gather job reads it again)
  /// Points not to run (railyard search: layouts that do not fit): a non-empty text, by point index, is the reason,
  /// and the point's row has status `skipped`.
  std::vector<std::string> skip;
};

/// One row of the table.
struct PointResult {
  std::string status; ///< ok, failed, invalid, skipped
  std::string error;  ///< or the reason it was skipped
  std::vector<std::pair<std::string, std::string>> metrics;
  int exit_code = 0; ///< a failed point's railyard run: 2 for bad input, -1 killed or unknown
  [[nodiscard]] std::string metric(const std::string& name) const
  {
    for (const auto& [k, v] : metrics)
      if (k == name) return v;
    return {};
  }
};

struct SweepOutcome {
  std::size_t points = 0, ran = 0, reused = 0, failed = 0, invalid = 0;
  std::string results; ///< the results table's path
  /// The points that failed or could not run: (point, status, error), in the sweep's order.
  std::vector<std::tuple<std::size_t, std::string, std::string>> problems;
  /// Slurm: the array job and the gather job submitted ("" when nothing was left to run), and the gather job's exit
  /// code when waited for.
  std::string array_job, gather_job;
  int gather_exit = 0;
  std::size_t skipped = 0;
  std::vector<PointResult> rows; ///< by point index (empty when the table is left to a Slurm gather job)
};

/// A study's folder (a sweep's, a search's): created, or taken back when it is empty or holds the marker
/// `.railyard-sweep` of an earlier study, which it (re)writes; a folder holding anything else, or a file, is refused
/// (InputError naming --out): a study never writes over what it did not write.
void claim_study_folder(const std::filesystem::path& out, const std::string& study_file);

/// Runs every point not already finished in `options.out` (a point whose scenario, base folder and input files hash
/// to a finished result is reused) and writes results.csv there.
SweepOutcome run_sweep(const SweepSpec& spec, const SweepRunOptions& options);

} // namespace railyard::studies
