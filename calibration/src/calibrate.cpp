#include "railyard/calibration/calibrate.hpp"

#include "measured.hpp"

#include "railyard/calibration/calibration_csv.hpp"
#include "railyard/calibration/datasheets.hpp"
#include "railyard/calibration/nccl_tests_log.hpp"
#include "railyard/common/error.hpp"
#include "railyard/common/numbers.hpp"
#include "railyard/common/units.hpp"
#include "railyard/models/nccl_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace railyard::calibration {
namespace {

namespace fs = std::filesystem;
using models::CollectiveKind;

std::string lower(std::string s)
{
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ")
{
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : sep) + s;
  return out;
}

void add_unique(std::vector<std::string>& v, const std::string& s)
{
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

FitQuality rounded(FitQuality q)
{
  q.rms_rel_error = round_significant(q.rms_rel_error, 4);
  q.max_rel_error = round_significant(q.max_rel_error, 4);
  return q;
}

// Single-node measurements travel over NVLink on SXM parts and over PCIe on PCIe cards and consumer GPUs.
std::pair<LinkKind, std::string> intra_node_link_for(const std::string& gpu_model, const std::string& recorded,
                                                     const CalibrateOptions& options)
{
  if (options.intra_node_link) return {*options.intra_node_link, "single node; link kind given on the command line"};
  if (!recorded.empty())
    if (const auto k = link_kind_from_string(recorded))
      return {*k, fmt::format("single node; the CSV records intra_node_link {}", recorded)};
  const std::string m = lower(gpu_model);
  // AMD Instinct OAM parts (MI250, MI300X/A, MI325X, MI350X, MI355X) sit on an xGMI mesh; AMD's PCIe cards (MI210,
  // Radeon) do not, unless bridged, which the name cannot tell: --intra-node-link xgmi says so.
  if (m.rfind("amd ", 0) == 0) {
    for (const char* xgmi_part : {"mi250", "mi300", "mi325", "mi350", "mi355"})
      if (m.find(xgmi_part) != std::string::npos)
        return {LinkKind::Xgmi,
                fmt::format("single node; the GPU name '{}' names an AMD Instinct OAM part, whose GPUs are linked "
                            "by xGMI",
                            gpu_model)};
    return {LinkKind::Pcie,
            fmt::format("single node; the GPU name '{}' names an AMD part without xGMI links", gpu_model)};
  }
  for (const char* pcie_hint : {"pcie", "geforce", "rtx", "quadro", " a10", " l4", " l40", " t4"})
    if (m.find(pcie_hint) != std::string::npos)
      return {LinkKind::Pcie, fmt::format("single node; the GPU name '{}' names a PCIe part", gpu_model)};
  return {LinkKind::NvLink,
          fmt::format("single node; the GPU name '{}' does not name a PCIe part, so NVLink is assumed", gpu_model)};
}

// NCCL_ALGO / NCCL_PROTO as the log shows them, in NCCL's own syntax (parseList in src/graph/tuning.cc, read by
// models::NcclOverrides::parse: "Ring", "^NVLS", "ring;allreduce:tree,nvls"), resolved for the log's collective:
// when exactly one algorithm (protocol) is left enabled for it the run was forced to it; when more are left the
// variable only restricted NCCL's choice (auto). A name NCCL does not know is refused, as NCCL refuses it.
std::optional<models::Algorithm> forced_algorithm(const std::string& env, CollectiveKind kind,
                                                  const InputLocation& where)
{
  if (env.empty()) return std::nullopt;
  const auto overrides = models::NcclOverrides::parse(env, std::nullopt, where);
  std::optional<models::Algorithm> only;
  for (int a = 0; a < models::kNcclAlgorithms; ++a) {
    const auto algo = static_cast<models::Algorithm>(a);
    if (!overrides.algorithm_allowed(kind, algo)) continue;
    if (only) return std::nullopt;
    only = algo;
  }
  return only;
}

std::optional<models::Protocol> forced_protocol(const std::string& env, CollectiveKind kind, const InputLocation& where)
{
  if (env.empty()) return std::nullopt;
  const auto overrides = models::NcclOverrides::parse(std::nullopt, env, where);
  std::optional<models::Protocol> only;
  for (int p = 0; p < models::kNcclProtocols; ++p) {
    const auto proto = static_cast<models::Protocol>(p);
    if (overrides.protocol_enable(kind, proto) == models::NcclEnable::Off) continue;
    if (only) return std::nullopt;
    only = proto;
  }
  return only;
}

// "all_reduce_ring_ll128.log": algorithm and protocol named in a file name's tokens.
void hints_from_file_name(const std::string& path, std::optional<models::Algorithm>& algo,
                          std::optional<models::Protocol>& proto)
{
  std::string name = lower(fs::path(path).stem().string());
  std::replace_if(
      name.begin(), name.end(), [](char c) { return c == '-' || c == '.' || c == ' '; }, '_');
  std::istringstream in(name);
  std::string tok;
  while (std::getline(in, tok, '_')) {
    if (tok == "ring" || tok == "tree" || tok == "nvls" || tok == "nvlstree" || tok == "collnetdirect" ||
        tok == "collnetchain" || tok == "pat")
      algo = models::algorithm_from_string(tok);
    if (tok == "ll" || tok == "ll128" || tok == "simple") proto = models::protocol_from_string(tok);
  }
}

struct CollKey {
  CollectiveKind collective;
  std::optional<models::Algorithm> algorithm;
  std::optional<models::Protocol> protocol;
  LinkKind link;
  int nranks;
  int nodes;

  [[nodiscard]] auto tie() const
  {
    return std::make_tuple(static_cast<int>(collective), algorithm ? static_cast<int>(*algorithm) + 1 : 0,
                           protocol ? static_cast<int>(*protocol) + 1 : 0, static_cast<int>(link), nranks, nodes);
  }
  bool operator<(const CollKey& o) const { return tie() < o.tie(); }
};

std::string describe(const CollKey& k)
{
  return fmt::format("{} {}/{} over {} with {} ranks on {} node(s)", models::to_string(k.collective),
                     algorithm_name(k.algorithm), protocol_name(k.protocol), to_string(k.link), k.nranks, k.nodes);
}

struct CollGroup {
  std::vector<Sample> samples; // x: bus bytes (size x nccl-tests factor), y: seconds
  std::vector<std::string> files;
  std::vector<std::string> link_reasons;
  double min_size = 0, max_size = 0;
  bool any = false;
};

struct Fact {
  std::string value;
  std::string file;
  std::string how; // "Rank lines", "gpu_model"
};

class Calibrator {
public:
  explicit Calibrator(const CalibrateOptions& o) : options_(o) {}

  void add(const std::string& path)
  {
    const std::string text = read_text_file(path);
    const InputFile input = describe_input(path, text);
    for (const auto& i : inputs_)
      if (i.path == path) throw InputError({path, 0, ""}, "the same file is named twice", "name each input once");
    inputs_.push_back(input);
    if (is_calibration_csv(text))
      add_csv(parse_calibration_csv(text, path));
    else
      add_log(parse_nccl_tests_text(text, path));
  }

  CalibrationResult finish()
  {
    CalibrationResult r;
    Profile& p = r.profile;
    p.created_by = options_.created_by;
    p.inputs = inputs_;
    if (gpu_models_.empty())
      throw InputError({inputs_.empty() ? "" : inputs_.front().path, 0, ""},
                       "no input names its GPU model (nccl-tests 'Rank' lines or a CSV's '# gpu_model:')",
                       "pass nccl-tests logs with their header lines, or CSVs from calibration/cuda programs");
    p.gpu_model = gpu_models_.front().value;
    p.gpu_model_source = fmt::format("{} of {}", gpu_models_.front().how, gpu_models_.front().file);
    p.gpus_per_node = std::max(1, gpus_per_node_);
    p.gpus_per_node_source = gpus_per_node_source_.empty() ? "assumption: no input shows more than one GPU in a node"
                                                           : gpus_per_node_source_;
    if (!libraries_.empty()) p.collective_library = *collective_library_from_string(libraries_.front().value);
    if (!nccl_versions_.empty()) {
      p.nccl_version = nccl_versions_.front().value;
      p.nccl_version_source = fmt::format("{} of {}", nccl_versions_.front().how, nccl_versions_.front().file);
      if (p.collective_library == CollectiveLibrary::Rccl && libraries_.front().how != nccl_versions_.front().how)
        p.nccl_version_source +=
            fmt::format("; {}: {} of {}", libraries_.front().value, libraries_.front().how, libraries_.front().file);
    } else if (p.collective_library == CollectiveLibrary::Rccl) {
      p.nccl_version_source = fmt::format("{}: {} of {}; no input prints the library's version",
                                          libraries_.front().value, libraries_.front().how, libraries_.front().file);
    }
    p.system = options_.system.empty() ? default_system_name(p.gpu_model) : options_.system;
    p.description = options_.description.empty()
                        ? fmt::format("Calibrated from {} input file(s) by railyard calibrate", inputs_.size())
                        : options_.description;

    fit_collectives(p);
    fit_links(p);
    fit_kernel(p);
    r.notes = notes_;
    if (p.collectives.empty() && p.links.empty() && !p.kernel)
      throw InputError({inputs_.front().path, 0, ""},
                       "the inputs hold nothing that can be fitted (no collective sizes, peer copies, GEMM or memory "
                       "measurements)",
                       "pass nccl-tests logs or the CSVs of calibration/run_on_gpu.sh");
    return r;
  }

private:
  void note_gpu(const std::string& model, const std::string& file, const std::string& how, int line)
  {
    if (model.empty()) return;
    for (const auto& g : gpu_models_)
      if (g.value != model)
        throw InputError({file, line, ""},
                         fmt::format("inputs come from different GPU models: '{}' ({} of {}) and '{}' ({} of this "
                                     "file); a profile, and every fit in it, describes one GPU model",
                                     g.value, g.how, g.file, model, how),
                         "calibrate each GPU model into a profile of its own");
    gpu_models_.push_back({model, file, how});
  }

  void note_nccl(const std::string& version, const std::string& file, const std::string& how)
  {
    if (version.empty()) return;
    for (const auto& v : nccl_versions_)
      if (v.value != version)
        throw InputError({file, 0, ""},
                         fmt::format("inputs come from different NCCL versions: {} ({} of {}) and {} (this file); "
                                     "NCCL's algorithms and tuning change between versions",
                                     v.value, v.how, v.file, version),
                         "calibrate from runs of one NCCL version");
    nccl_versions_.push_back({version, file, how});
  }

  void note_library(std::optional<CollectiveLibrary> library, const std::string& file, const std::string& how)
  {
    if (!library) return;
    const std::string name = library_name(*library);
    for (const auto& l : libraries_)
      if (l.value != name)
        throw InputError({file, 0, ""},
                         fmt::format("inputs come from different collective libraries: {} ({} of {}) and {} ({} of "
                                     "this file); their algorithms and tuning differ",
                                     l.value, l.how, l.file, name, how),
                         "calibrate NCCL runs and RCCL runs into separate profiles");
    libraries_.push_back({name, file, how});
  }

  void note_gpus_per_node(int n, const std::string& source)
  {
    if (n > gpus_per_node_) {
      gpus_per_node_ = n;
      gpus_per_node_source_ = source;
    }
  }

  void add_sample(const CollKey& k, double size, double seconds, const std::string& file, const std::string& reason)
  {
    auto& g = groups_[k];
    g.samples.push_back({size * models::busbw_factor(k.collective, k.nranks), seconds});
    add_unique(g.files, file);
    add_unique(g.link_reasons, reason);
    g.min_size = g.any ? std::min(g.min_size, size) : size;
    g.max_size = g.any ? std::max(g.max_size, size) : size;
    g.any = true;
  }

  void add_log(const NcclTestsLog& log)
  {
    const std::string& file = log.input.path;
    validate_nccl_tests_log(log);
    const int n = nccl_tests_nranks(log);
    if (n < 2)
      throw InputError({file, 0, ""}, "a collective measurement needs at least 2 ranks",
                       "run the test over 2 or more GPUs (-g N, or N MPI processes)");
    int nodes = 1;
    if (!log.ranks.empty()) {
      nodes = log.hosts();
      std::map<std::string, int> per_host;
      for (const auto& r : log.ranks)
        ++per_host[r.host];
      int most = 0;
      for (const auto& [h, c] : per_host)
        most = std::max(most, c);
      note_gpus_per_node(most, fmt::format("Rank lines of {} ({} GPUs on one host)", file, most));
    } else if (log.header_nthreads <= 0) {
      throw InputError({file, 0, ""},
                       "cannot tell whether the run crossed nodes: the log has no '#  Rank N ... on HOST' lines",
                       "keep the header lines nccl-tests prints before the results");
    }
    const std::string model = log.ranks.empty() ? "" : log.ranks.front().gpu_model;
    note_gpu(model, file, "Rank lines", log.ranks.empty() ? 0 : log.ranks.front().line);
    note_library(log.library, file, log.library_evidence);
    note_nccl(log.nccl_version, file,
              log.library == CollectiveLibrary::Rccl ? log.version_evidence
              : log.nccl_tests_version.empty()       ? "NCCL version line"
                                                     : "nccl-tests header");

    std::optional<models::Algorithm> algo =
        forced_algorithm(log.algo_env, *log.collective, {file, log.algo_env_line, "NCCL_ALGO"});
    std::optional<models::Protocol> proto =
        forced_protocol(log.proto_env, *log.collective, {file, log.proto_env_line, "NCCL_PROTO"});
    std::optional<models::Algorithm> name_algo;
    std::optional<models::Protocol> name_proto;
    hints_from_file_name(file, name_algo, name_proto);
    if (algo && name_algo && *algo != *name_algo)
      throw InputError({file, log.algo_env_line, "NCCL_ALGO"},
                       fmt::format("the log forces NCCL_ALGO={} but the file name says {}", log.algo_env,
                                   models::to_string(*name_algo)),
                       "rename the file so that it names the algorithm the run used");
    if (proto && name_proto && *proto != *name_proto)
      throw InputError({file, log.proto_env_line, "NCCL_PROTO"},
                       fmt::format("the log forces NCCL_PROTO={} but the file name says {}", log.proto_env,
                                   models::to_string(*name_proto)),
                       "rename the file so that it names the protocol the run used");
    if (!algo) algo = name_algo;
    if (!proto) proto = name_proto;

    LinkKind link = LinkKind::Network;
    std::string reason = fmt::format("{} nodes: NCCL crosses the network", nodes);
    if (nodes == 1) std::tie(link, reason) = intra_node_link_for(model, "", options_);
    const CollKey key{*log.collective, algo, proto, link, n, nodes};
    for (const auto& d : log.dropped)
      notes_.push_back(fmt::format("{}:{}: row dropped: {}", file, d.line, d.reason));
    for (const auto& row : log.rows) {
      const auto& t = row.out_of_place ? row.out_of_place : row.in_place;
      if (!t) continue;
      if (t->time_us == 0) { // no time to fit: a size the timer could not resolve
        notes_.push_back(fmt::format("{}:{}: row dropped: time is 0 us", file, row.line));
        continue;
      }
      add_sample(key, static_cast<double>(row.size_bytes), t->time_us * 1e-6, file, reason);
    }
  }

  void add_csv(const CalibrationCsv& csv)
  {
    const std::string& file = csv.input.path;
    const auto line_of = [&](const char* key) {
      const auto it = csv.meta_line.find(key);
      return it == csv.meta_line.end() ? 0 : it->second;
    };
    note_gpu(csv.meta_or("gpu_model"), file, "'# gpu_model:'", line_of("gpu_model"));
    if (const std::string lib = csv.meta_or("collective_library"); !lib.empty()) {
      const auto l = collective_library_from_string(lib);
      if (!l)
        throw InputError({file, line_of("collective_library"), "collective_library"},
                         fmt::format("unknown collective library '{}'", lib),
                         std::string("pass the unmodified CSV; the programs write one of: ") + kCollectiveLibraryNames);
      note_library(l, file, "'# collective_library:'");
    }
    note_nccl(csv.meta_or("nccl_version"), file, "'# nccl_version:'");
    for (const auto& n : csv.notes)
      notes_.push_back(fmt::format("{}: {}", file, n));
    // "published": measurements from a public source transcribed into nccl_sweep's columns (the files under
    // calibration/profiles/sources/), fitted the same way.
    if (csv.program == "nccl_sweep" || csv.program == "published")
      add_sweep(csv);
    else if (csv.program == "peer_copy")
      add_peer(csv);
    else if (csv.program == "gemm_bench")
      gemm_.push_back(csv);
    else if (csv.program == "mem_bench")
      mem_.push_back(csv);
    else
      throw InputError({file, line_of("program"), "program"},
                       fmt::format("unknown calibration program '{}'", csv.program),
                       "pass CSVs from nccl_sweep, peer_copy, gemm_bench or mem_bench (or 'published')");
  }

  void add_sweep(const CalibrationCsv& csv)
  {
    const std::string& file = csv.input.path;
    for (const auto& row : csv.rows) {
      const auto coll = models::collective_from_string(csv.text(row, "collective"));
      if (!coll)
        throw InputError({file, row.line, "collective"},
                         fmt::format("unknown collective '{}'", csv.text(row, "collective")),
                         std::string("use one of: ") + kCollectiveNames);
      std::optional<models::Algorithm> algo;
      std::optional<models::Protocol> proto;
      if (!parse_algorithm(csv.text(row, "algorithm"), algo))
        throw InputError({file, row.line, "algorithm"},
                         fmt::format("unknown algorithm '{}'", csv.text(row, "algorithm")),
                         std::string("use one of: ") + kAlgorithmNames);
      if (!parse_protocol(csv.text(row, "protocol"), proto))
        throw InputError({file, row.line, "protocol"}, fmt::format("unknown protocol '{}'", csv.text(row, "protocol")),
                         std::string("use one of: ") + kProtocolNames);
      const int nranks = static_cast<int>(csv.integer(row, "nranks", 0, std::numeric_limits<int>::max()));
      const int nodes = static_cast<int>(csv.integer(row, "nodes", 0, std::numeric_limits<int>::max()));
      if (nranks < 2 || nodes < 1 || nodes > nranks)
        throw InputError(
            {file, row.line, "nranks"},
            fmt::format("nranks {} / nodes {} do not describe a collective of 2 or more ranks", nranks, nodes),
            "pass the unmodified CSV nccl_sweep wrote");
      const double wrong = csv.number(row, "wrong");
      if (wrong > 0)
        throw InputError({file, row.line, "wrong"},
                         fmt::format("{} wrong elements at size {}: the collective returned wrong data, so its timings "
                                     "cannot be trusted",
                                     wrong, csv.text(row, "size_bytes")),
                         "find out why (rerun with NCCL_DEBUG=WARN), fix the system and rerun nccl_sweep");
      note_gpus_per_node(nranks / nodes, fmt::format("nranks/nodes of {}", file));
      LinkKind link = LinkKind::Network;
      std::string reason = fmt::format("{} nodes: NCCL crosses the network", nodes);
      if (nodes == 1)
        std::tie(link, reason) =
            intra_node_link_for(csv.meta_or("gpu_model"), csv.meta_or("intra_node_link"), options_);
      const auto size = measured(csv, row, "size_bytes", "B", limits::kMaxBytes, true);
      const auto us = measured(csv, row, "time_us", "us", limits::kMaxSeconds * 1e6, false);
      if (!size || !us) continue;
      add_sample({*coll, algo, proto, link, nranks, nodes}, *size, *us * 1e-6, file, reason);
    }
  }

  // A size or time of a CSV row; std::nullopt, with a note naming the file and line, when the row is dropped (a
  // NaN, inf, negative or zero time: nothing to fit). A value that cannot be represented refuses the file.
  std::optional<double> measured(const CalibrationCsv& csv, const CalibrationCsv::Row& row, const std::string& col,
                                 const char* unit, double max, bool whole)
  {
    const auto m = detail::read_measured(csv.text(row, col), col, unit, max, whole, {csv.input.path, row.line, col});
    if (!m) return csv.number(row, col); // not a number at all: csv.number names the cell
    std::string dropped = m->dropped;
    if (dropped.empty() && col == "time_us" && m->value == 0) dropped = "time_us is 0 us";
    if (dropped.empty()) return m->value;
    notes_.push_back(fmt::format("{}:{}: row dropped: {}", csv.input.path, row.line, dropped));
    return std::nullopt;
  }

  void add_peer(const CalibrationCsv& csv)
  {
    const std::string& file = csv.input.path;
    if (csv.rows.empty()) {
      notes_.push_back(fmt::format("{}: no GPU pair was measured (one visible GPU): no peer link fitted", file));
      return;
    }
    int gpu_count = 1;
    try {
      gpu_count = static_cast<int>(parse_integer(csv.meta_or("gpu_count", "1"), 1, std::numeric_limits<int>::max()));
    } catch (const std::invalid_argument& e) {
      const auto line = csv.meta_line.find("gpu_count");
      throw InputError({file, line == csv.meta_line.end() ? 0 : line->second, "gpu_count"}, e.what(),
                       "pass the unmodified CSV peer_copy wrote");
    }
    note_gpus_per_node(gpu_count, fmt::format("gpu_count of {}", file));
    for (const auto& row : csv.rows) {
      const std::string kind_text = csv.text(row, "link_kind");
      const auto kind = link_kind_from_string(kind_text);
      if (!kind || *kind == LinkKind::Network)
        throw InputError({file, row.line, "link_kind"}, fmt::format("'{}' is not a GPU-to-GPU link kind", kind_text),
                         "pass the unmodified CSV peer_copy wrote (nvlink, xgmi or pcie)");
      const auto size = measured(csv, row, "size_bytes", "B", limits::kMaxBytes, false);
      const auto us = measured(csv, row, "time_us", "us", limits::kMaxSeconds * 1e6, false);
      if (!size || !us) continue;
      auto& g = peer_[*kind];
      g.samples.push_back({*size, *us * 1e-6});
      add_unique(g.files, file);
    }
  }

  void fit_collectives(Profile& p)
  {
    for (const auto& [key, g] : groups_) {
      PiecewiseFit pf;
      try {
        pf = fit_piecewise(g.samples, options_.piecewise);
      } catch (const TooFewPoints& e) {
        throw InputError(
            {join(g.files), 0, ""}, fmt::format("{}: {}", describe(key), e.what()),
            fmt::format("measure at least {} different sizes, e.g. nccl-tests -b 8 -e 8G -f 2", e.needed()));
      }
      const double factor = models::busbw_factor(key.collective, key.nranks);
      CollectiveFit c;
      c.collective = key.collective;
      c.algorithm = key.algorithm;
      c.protocol = key.protocol;
      c.link = key.link;
      c.nranks = key.nranks;
      c.nodes = key.nodes;
      c.measured_min = Bytes(g.min_size);
      c.measured_max = Bytes(g.max_size);
      for (const auto& piece : pf.pieces) {
        CollectivePiece cp;
        cp.from = Bytes(std::round(piece.x_from / factor));
        cp.latency = Seconds(round_significant(piece.intercept * 1e6) * 1e-6);
        cp.busbw = piece.slope > 0 ? BytesPerSec(round_significant(1.0 / piece.slope / units::kGB) * units::kGB)
                                   : BytesPerSec(std::numeric_limits<double>::infinity());
        cp.quality = rounded(piece.quality);
        c.pieces.push_back(cp);
      }
      c.fit = FitRecord{rounded(pf.quality), g.files};
      c.source = fmt::format("fitted by railyard calibrate to the times of {} size(s) (out-of-place where nccl-tests "
                             "timed both) in {}: time = "
                             "latency + size x nccl-tests busbw factor / busbw, least squares on relative error, "
                             "{} piece(s); link: {}",
                             g.samples.size(), join(g.files), pf.pieces.size(), join(g.link_reasons, "; "));
      p.collectives.push_back(std::move(c));
    }
  }

  // A link's latency is the intercept of the smallest sizes' piece, its bandwidth the inverse slope of the largest
  // sizes' piece: the two ends of the alpha-beta model, where each dominates.
  LinkParams link_from(LinkKind kind, const PiecewiseFit& pf, const std::vector<std::string>& files,
                       const std::string& what)
  {
    LinkParams l;
    l.kind = kind;
    const auto& first = pf.pieces.front();
    const auto& last = pf.pieces.back();
    if (!(last.slope > 0))
      throw InputError({join(files), 0, ""},
                       fmt::format("{} times do not grow with size at the largest sizes measured, so no bandwidth can "
                                   "be fitted",
                                   what),
                       "measure up to larger sizes (at least 64 MiB)");
    // A slope so small that its inverse exceeds any bandwidth (found by tests/fuzz: fuzz_calibrate) comes from sizes
    // whose times barely grow, not from a link: refused here, where the logs can be named, not by the profile writer.
    const double bandwidth = round_significant(1.0 / last.slope / units::kGB) * units::kGB;
    if (!(bandwidth <= limits::kMaxBytesPerSec))
      throw InputError({join(files), 0, ""},
                       fmt::format("{} times grow so little with size at the largest sizes that the fitted bandwidth, "
                                   "{:.3g} B/s, is above the most a bandwidth may be ({:.0e} B/s)",
                                   what, bandwidth, limits::kMaxBytesPerSec),
                       "check the largest sizes' rows (a size or time mistyped, or rows of another run), or measure "
                       "up to larger sizes");
    l.latency = Seconds(round_significant(first.intercept * 1e6) * 1e-6);
    l.bandwidth = BytesPerSec(bandwidth);
    l.latency_source = fmt::format("fit: intercept of the smallest-size piece of {} times in {}", what, join(files));
    l.bandwidth_source = fmt::format("fit: 1/slope of the largest-size piece of {} times in {}", what, join(files));
    l.fit = FitRecord{rounded(pf.quality), files};
    return l;
  }

  void fit_links(Profile& p)
  {
    for (const auto& [kind, g] : peer_) {
      PiecewiseFit pf;
      try {
        pf = fit_piecewise(g.samples, options_.piecewise);
      } catch (const TooFewPoints& e) {
        throw InputError({join(g.files), 0, ""}, fmt::format("peer copies over {}: {}", to_string(kind), e.what()),
                         "run peer_copy over its default sizes");
      }
      auto l = link_from(kind, pf, g.files, "cudaMemcpyPeerAsync");
      l.latency_source += " (includes the copy engine's start, not only the wire)";
      p.links.push_back(std::move(l));
    }
    // The network link from point-to-point runs across nodes (sendrecv_perf / nccl_sweep sendrecv on 2+ nodes),
    // NCCL's own choice preferred over forced protocols.
    const CollKey* best = nullptr;
    for (const auto& [key, g] : groups_)
      if (key.collective == CollectiveKind::SendRecv && key.link == LinkKind::Network &&
          (!best || (!key.algorithm && !key.protocol && (best->algorithm || best->protocol))))
        best = &key;
    if (best) {
      const auto& g = groups_.at(*best);
      p.links.push_back(link_from(LinkKind::Network, fit_piecewise(g.samples, options_.piecewise), g.files,
                                  "NCCL send/recv across nodes"));
    }
    std::sort(p.links.begin(), p.links.end(), [](const LinkParams& a, const LinkParams& b) { return a.kind < b.kind; });
  }

  void fit_kernel(Profile& p)
  {
    if (gemm_.empty() && mem_.empty()) return;
    if (gemm_.empty() || mem_.empty())
      throw InputError({gemm_.empty() ? mem_.front().input.path : gemm_.front().input.path, 0, ""},
                       fmt::format("a kernel model needs both gemm_bench and mem_bench measurements; only {} given",
                                   gemm_.empty() ? "mem_bench" : "gemm_bench"),
                       "pass both CSVs (calibration/run_on_gpu.sh writes them together)");
    KernelModel k;
    const GpuDatasheet* sheet = find_datasheet(p.gpu_model);

    // Launch overhead and memory bandwidth from mem_bench.
    std::vector<Sample> mem;
    std::vector<std::string> mem_files;
    double launch_sum = 0;
    int launch_n = 0;
    for (const auto& csv : mem_) {
      for (const auto& row : csv.rows) {
        const std::string kernel = csv.text(row, "kernel");
        const auto us = measured(csv, row, "time_us", "us", limits::kMaxSeconds * 1e6, false);
        if (!us) continue;
        const double t = *us * 1e-6;
        if (kernel == "launch") {
          launch_sum += t;
          ++launch_n;
        } else if (const auto bytes = measured(csv, row, "bytes", "B", limits::kMaxBytes, false)) {
          mem.push_back({*bytes, t});
        }
      }
      add_unique(mem_files, csv.input.path);
    }
    PiecewiseFit mf;
    try {
      mf = fit_piecewise(mem, options_.piecewise);
    } catch (const TooFewPoints& e) {
      throw InputError({join(mem_files), 0, ""}, fmt::format("memory copies: {}", e.what()),
                       "run mem_bench over its default sizes");
    }
    const double mem_bw = 1.0 / mf.pieces.back().slope;
    if (!std::isfinite(mem_bw))
      throw InputError({join(mem_files), 0, ""}, "memory copy times do not grow with size at the largest sizes",
                       "run mem_bench up to a few GiB");
    if (launch_n > 0) {
      k.launch_overhead = Seconds(round_significant(launch_sum / launch_n * 1e6) * 1e-6);
      k.launch_overhead_source =
          fmt::format("measured: mean of {} empty-kernel launch rows in {}", launch_n, join(mem_files));
    } else {
      k.launch_overhead = Seconds(round_significant(mf.pieces.front().intercept * 1e6) * 1e-6);
      k.launch_overhead_source =
          fmt::format("fit: intercept of the smallest-size memory copies in {}", join(mem_files));
    }
    if (sheet) {
      k.memory_bandwidth = units::GBps(sheet->memory_bandwidth_GBps);
      k.memory_bandwidth_source = sheet->source;
    } else {
      k.memory_bandwidth = BytesPerSec(round_significant(mem_bw / units::kGB) * units::kGB);
      k.memory_bandwidth_source = fmt::format("no datasheet value known for '{}': set to the fitted copy bandwidth "
                                              "of {}",
                                              p.gpu_model, join(mem_files));
    }
    k.memory_efficiency = round_significant(mem_bw / k.memory_bandwidth.bytes_per_sec(), 4);
    k.memory_efficiency_source = fmt::format("fit: 1/slope of the largest-size piece of device copy and triad times "
                                             "in {} ({:.1f} GB/s counting bytes read and written), over the peak",
                                             join(mem_files), mem_bw / units::kGB);
    const double eff_mem_bw = k.memory_bandwidth.bytes_per_sec() * k.memory_efficiency;
    k.memory_fit =
        FitRecord{rounded(quality_of([&](double bytes) { return k.launch_overhead.seconds() + bytes / eff_mem_bw; },
                                     std::span<const Sample>(mem))),
                  mem_files};

    // Compute efficiency per dtype from the GEMMs above the ridge point, where the roofline says compute bounds.
    struct Gemm {
      double flops, bytes, seconds;
    };
    std::map<DType, std::vector<Gemm>> by_type;
    std::map<DType, std::vector<std::string>> type_files;
    for (const auto& csv : gemm_)
      for (const auto& row : csv.rows) {
        const auto t = dtype_from_string(csv.text(row, "dtype"));
        if (!t)
          throw InputError({csv.input.path, row.line, "dtype"},
                           fmt::format("unknown dtype '{}'", csv.text(row, "dtype")),
                           std::string("use one of: ") + kDTypeNames);
        if (csv.has_column("wrong") && csv.number(row, "wrong") > 0)
          throw InputError({csv.input.path, row.line, "wrong"},
                           fmt::format("the {} GEMM's spot check found {} wrong output elements: the result, and so "
                                       "its time, cannot be trusted",
                                       csv.text(row, "dtype"), csv.text(row, "wrong")),
                           "find out why (a faulty GPU, a cuBLAS problem), then rerun gemm_bench");
        add_unique(type_files[*t], csv.input.path);
        const auto us = measured(csv, row, "time_us", "us", limits::kMaxSeconds * 1e6, false);
        const auto flops =
            us ? measured(csv, row, "flops", "FLOP", std::numeric_limits<double>::max(), false) : std::nullopt;
        const auto bytes = flops ? measured(csv, row, "bytes", "B", limits::kMaxBytes, false) : std::nullopt;
        if (bytes) by_type[*t].push_back({*flops, *bytes, *us * 1e-6});
      }
    for (const auto& [dtype, rows] : by_type) {
      ComputeParams c;
      c.dtype = dtype;
      double best_rate = 0;
      for (const auto& g : rows)
        best_rate = std::max(best_rate, g.flops / g.seconds);
      const double sheet_peak = sheet ? sheet->peak_tflops(dtype) * 1e12 : 0;
      if (sheet_peak > 0) {
        c.peak_flops = sheet_peak;
        c.peak_source = sheet->source;
      } else {
        c.peak_flops = round_significant(best_rate / 1e12) * 1e12;
        c.peak_source = fmt::format("no datasheet {} peak known for '{}': set to the highest rate measured in {}",
                                    to_string(dtype), p.gpu_model, join(type_files[dtype]));
      }
      const double ridge = c.peak_flops / eff_mem_bw; // FLOP per byte
      std::vector<Sample> bound;
      for (const auto& g : rows)
        if (g.flops / g.bytes >= ridge) bound.push_back({g.flops, g.seconds});
      LineFit lf;
      try {
        lf = fit_line(bound);
      } catch (const TooFewPoints& e) {
        throw InputError({join(type_files[dtype]), 0, "dtype " + to_string(dtype)},
                         fmt::format("{} GEMMs above the ridge point ({:.0f} FLOP/byte, where compute rather than "
                                     "memory bounds them): {}",
                                     to_string(dtype), ridge, e.what()),
                         "run gemm_bench with larger shapes (its default list has them)");
      }
      if (!(lf.slope > 0))
        throw InputError({join(type_files[dtype]), 0, "dtype " + to_string(dtype)},
                         fmt::format("{} GEMM times do not grow with their FLOPs", to_string(dtype)),
                         "rerun gemm_bench; check that the GPU was not shared during the run");
      c.efficiency = round_significant(1.0 / lf.slope / c.peak_flops, 4);
      c.efficiency_source =
          fmt::format("fit: 1/slope of time over FLOPs of the {} {} GEMMs above the ridge point in {} "
                      "({:.1f} TFLOP/s), over the peak",
                      bound.size(), to_string(dtype), join(type_files[dtype]), 1.0 / lf.slope / 1e12);
      std::vector<double> errors;
      for (const auto& g : rows) {
        const double model =
            k.launch_overhead.seconds() + std::max(g.flops / (c.peak_flops * c.efficiency), g.bytes / eff_mem_bw);
        errors.push_back((model - g.seconds) / g.seconds);
      }
      c.fit = FitRecord{rounded(detail::quality_from_errors(errors)), type_files[dtype]};
      k.compute.push_back(std::move(c));
    }
    p.kernel = std::move(k);
  }

  static std::string default_system_name(const std::string& gpu)
  {
    std::string out = "calibrated_";
    for (char c : lower(gpu))
      out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
    return out;
  }

  const CalibrateOptions& options_;
  std::vector<InputFile> inputs_;
  std::vector<Fact> gpu_models_;
  std::vector<Fact> nccl_versions_;
  std::vector<Fact> libraries_; ///< "NCCL" / "RCCL" as each input states it
  int gpus_per_node_ = 0;
  std::string gpus_per_node_source_;
  std::map<CollKey, CollGroup> groups_;
  struct PeerGroup {
    std::vector<Sample> samples;
    std::vector<std::string> files;
  };
  std::map<LinkKind, PeerGroup> peer_;
  std::vector<CalibrationCsv> gemm_, mem_;
  std::vector<std::string> notes_;
};

} // namespace

double round_significant(double v, int digits)
{
  if (v == 0 || !std::isfinite(v)) return v;
  const double magnitude = std::floor(std::log10(std::fabs(v)));
  const double scale = std::pow(10.0, digits - 1 - magnitude);
  return std::round(v * scale) / scale;
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& paths)
{
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> files;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      if (files.empty())
        throw InputError({p, 0, ""}, "the folder holds no files", "name the logs or CSVs to calibrate from");
      out.insert(out.end(), files.begin(), files.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      throw InputError({p, 0, ""}, "no such file or folder", "check the path");
    }
  }
  return out;
}

CalibrationResult calibrate(const std::vector<std::string>& inputs, const CalibrateOptions& options)
{
  if (inputs.empty())
    throw InputError({"", 0, "--from"}, "no input files", "name nccl-tests logs or calibration CSVs after --from");
  Calibrator c(options);
  const std::vector<std::string> files = expand_inputs(inputs);
  for (const auto& path : files)
    c.add(path);
  CalibrationResult result = c.finish();
  // What calibrate returns, the profile writer writes and the reader reads back: a fitted number outside its range
  // is the measurements' fault, named here with the files, rather than the writer's internal error (exit 3).
  try {
    (void)profile_to_yaml(result.profile);
  } catch (const std::invalid_argument& e) {
    std::string files_text;
    for (const auto& f : files)
      files_text += (files_text.empty() ? "" : ", ") + f;
    throw InputError({files_text, 0, ""},
                     fmt::format("the measurements fit a profile that breaks a rule: {}", e.what()),
                     "check the rows the fit used for a mistyped size or time, or measure more sizes");
  }
  return result;
}

} // namespace railyard::calibration
