// PyTorch profiler (Kineto) traces in Chrome trace format: GPU activity becomes ops, NCCL kernels collectives.
#include "railyard/workloads/readers.hpp"

#include "file_io.hpp"
#include "names.hpp"

#include "railyard/common/numbers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <tuple>
#include <unordered_map>

namespace railyard::workloads {

namespace {

using nlohmann::json;

struct TraceDoc {
  std::string name; ///< file, or "archive:member"
  std::string text;
};

/// The files of `paths`, archives expanded. `archive_fix` tells what an archive without a .json member should hold.
std::vector<TraceDoc> load_docs(const std::vector<std::string>& paths,
                                const std::string& archive_fix = "archive the ranks' *.pt.trace.json files")
{
  std::vector<TraceDoc> docs;
  for (const auto& p : paths) {
    if (detail::ends_with(p, ".tar.gz") || detail::ends_with(p, ".tgz") || detail::ends_with(p, ".tar")) {
      auto members = detail::read_archive(p, {".json"});
      if (members.empty()) {
        if (const auto ets = detail::read_archive(p, {".et"}); !ets.empty())
          throw InputError(
              {p, 0, ""},
              fmt::format("the archive holds no .json trace but Chakra execution traces ({}, ...)", ets.front().name),
              "read it with trace: chakra");
        throw InputError({p, 0, ""}, "the archive holds no .json trace", archive_fix);
      }
      std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
      for (auto& m : members)
        docs.push_back({std::move(m.name), std::move(m.data)});
    } else if (detail::ends_with(p, ".gz")) {
      docs.push_back({p, detail::read_gzip_file(p)});
    } else {
      docs.push_back({p, detail::read_file(p)});
    }
  }
  return docs;
}

// The rank of a trace whose JSON does not parse, for the error message: distributedInfo's "rank" when it appears
// before the broken part.
std::string guess_rank(const std::string& text)
{
  static const std::regex rank_re(R"re("distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(\d+))re");
  std::smatch m;
  if (std::regex_search(text, m, rank_re)) return m[1];
  return "unknown";
}

// A number of the trace, written as a JSON number or as a string holding one (Kineto writes some ids as strings);
// `fallback` where the field holds neither. Not checked for range: the callers that measure, count or index with it
// check it (measured_us, whole, ident below).
double number(const json& v, double fallback = 0.0)
{
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    const LeadingNumber n = leading_number(s);
    if (n.length > 0 && !n.out_of_range) return n.value;
  }
  return fallback;
}

// An id used as a key (correlation, pid, tid, stream): a finite whole number within int64, where it is a number at
// all; a cast of NaN or 1e300 to an integer is undefined.
bool fits_int64(double v)
{
  return v >= -9.2e18 && v <= 9.2e18;
}

const json* arg(const json& ev, const char* key)
{
  auto a = ev.find("args");
  if (a == ev.end() || !a->is_object()) return nullptr;
  auto it = a->find(key);
  return it == a->end() ? nullptr : &*it;
}

std::string text_arg(const json& ev, const char* key)
{
  const json* v = arg(ev, key);
  if (!v) return {};
  return v->is_string() ? v->get<std::string>() : v->dump();
}

/// Bytes per element of PyTorch's dtype names as Kineto writes them ("Float", "c10::Half", "long int", ...).
std::optional<int> dtype_bytes(std::string t)
{
  t = detail::lower(t);
  if (t.rfind("c10::", 0) == 0) t = t.substr(5);
  static const std::map<std::string, int> sizes = {{"float", 4},
                                                   {"float32", 4},
                                                   {"int", 4},
                                                   {"int32", 4},
                                                   {"unsigned int", 4},
                                                   {"uint32", 4},
                                                   {"half", 2},
                                                   {"float16", 2},
                                                   {"bfloat16", 2},
                                                   {"short", 2},
                                                   {"short int", 2},
                                                   {"int16", 2},
                                                   {"double", 8},
                                                   {"float64", 8},
                                                   {"long", 8},
                                                   {"long int", 8},
                                                   {"long long", 8},
                                                   {"int64", 8},
                                                   {"unsigned long", 8},
                                                   {"uint64", 8},
                                                   {"byte", 1},
                                                   {"unsigned char", 1},
                                                   {"char", 1},
                                                   {"signed char", 1},
                                                   {"int8", 1},
                                                   {"uint8", 1},
                                                   {"bool", 1},
                                                   {"float8_e4m3fn", 1},
                                                   {"float8_e5m2", 1},
                                                   {"float8_e4m3fnuz", 1},
                                                   {"float8_e5m2fnuz", 1},
                                                   {"complexfloat", 8},
                                                   {"complexdouble", 16}};
  auto it = sizes.find(t);
  if (it == sizes.end()) return std::nullopt;
  return it->second;
}

enum class CommClass { Collective, PointToPoint, Unsupported };

struct CommName {
  CommClass cls = CommClass::Unsupported;
  CollectiveKind kind = CollectiveKind::AllReduce;
};

/// PyTorch's collective names ("allreduce", "_allgather_base", "all_gather_into_tensor", "reduce_scatter_tensor",
/// "alltoall_base", "nccl:all_to_all", "send", ...) and NCCL kernel tokens ("AllReduce", "SendRecv").
CommName classify(std::string name)
{
  if (name.rfind("nccl:", 0) == 0) name = name.substr(5);
  std::string k;
  for (char c : detail::lower(name))
    if (c != '_' && c != ' ') k += c;
  auto starts = [&](const char* p) { return k.rfind(p, 0) == 0; };
  if (starts("allreduce") || starts("barrier")) return {CommClass::Collective, CollectiveKind::AllReduce};
  if (starts("allgather")) return {CommClass::Collective, CollectiveKind::AllGather};
  if (starts("reducescatter")) return {CommClass::Collective, CollectiveKind::ReduceScatter};
  if (starts("alltoall")) return {CommClass::Collective, CollectiveKind::AllToAll};
  if (starts("broadcast")) return {CommClass::Collective, CollectiveKind::Broadcast};
  if (k == "reduce") return {CommClass::Collective, CollectiveKind::Reduce};
  if (k == "send" || k == "recv" || k == "sendrecv" || k == "batchisendirecv" || k == "p2p")
    return {CommClass::PointToPoint, CollectiveKind::SendRecv};
  return {};
}

/// "ncclKernel_AllReduce_RING_LL_Sum_float(...)", "ncclDevKernel_AllGather_RING_LL(...)" -> "AllReduce", "AllGather".
std::optional<std::string> nccl_kernel_token(const std::string& name)
{
  for (const char* prefix : {"ncclKernel_", "ncclDevKernel_"}) {
    std::size_t n = std::char_traits<char>::length(prefix);
    if (name.compare(0, n, prefix) == 0) {
      std::size_t end = name.find_first_of("_(", n);
      return name.substr(n, end == std::string::npos ? std::string::npos : end - n);
    }
  }
  return std::nullopt;
}

std::vector<int> parse_rank_list(const std::string& s)
{
  std::vector<int> out;
  static const std::regex num(R"(-?\d+)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), num); it != std::sregex_iterator(); ++it) {
    try {
      // Negative and unknown ranks are left out when communicators are built; only an int must hold them.
      out.push_back(
          static_cast<int>(parse_integer(it->str(), std::numeric_limits<int>::min(), std::numeric_limits<int>::max())));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("Process Group Ranks '{}': {}", s, e.what()));
    }
  }
  return out;
}

// The kind a process group's name or description gives (PyTorch's pg_desc, Megatron's group names such as
// TENSOR_MODEL_PARALLEL_GROUP, DATA_PARALLEL_GROUP_WITH_CP, EXPERT_MODEL_PARALLEL_GROUP, or tp/dp/pp/ep/cp): the first
// word of the name that names a kind, so DATA_PARALLEL_GROUP_WITH_CP is DP. Other when no word does.
GroupKind kind_from_description(const std::string& text)
{
  static const std::map<std::string, GroupKind> words = {
      {"tensor", GroupKind::TP},    {"tp", GroupKind::TP},     {"pipeline", GroupKind::PP}, {"pp", GroupKind::PP},
      {"embedding", GroupKind::PP}, {"expert", GroupKind::EP}, {"ep", GroupKind::EP},       {"moe", GroupKind::EP},
      {"context", GroupKind::CP},   {"cp", GroupKind::CP},     {"data", GroupKind::DP},     {"dp", GroupKind::DP}};
  std::string word;
  for (char c : detail::lower(text) + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    if (auto it = words.find(word); it != words.end()) return it->second;
    word.clear();
  }
  return GroupKind::Other;
}

// The kind of a group whose name says none, from its ranks in the job (Megatron's rank order: tensor parallel
// innermost, consecutive ranks) and what it carries; `why` says how, for the workload's notes.
GroupKind kind_from_ranks(std::vector<int> ranks, int world, bool alltoall, std::string& why)
{
  std::sort(ranks.begin(), ranks.end());
  const auto n = static_cast<int>(ranks.size());
  if (n <= 1) return GroupKind::Other;
  if (n == world) {
    why = fmt::format("the whole job of {} ranks: data parallel, as DDP's and FSDP's default group", world);
    return GroupKind::DP;
  }
  const int stride = ranks[1] - ranks[0];
  for (int i = 2; i < n; ++i)
    if (ranks[i] - ranks[i - 1] != stride) return GroupKind::Other;
  if (alltoall) {
    why = fmt::format("{} ranks {} apart carrying all-to-alls: expert parallel", n, stride);
    return GroupKind::EP;
  }
  if (stride == 1) {
    why = fmt::format("{} consecutive ranks: tensor parallel, Megatron's innermost dimension", n);
    return GroupKind::TP;
  }
  why = fmt::format("{} ranks {} apart: data parallel, Megatron's dimension outside tensor parallelism", n, stride);
  return GroupKind::DP;
}

/// A runtime call in which the host waits for the device: cudaStreamSynchronize, cudaDeviceSynchronize,
/// cudaEventSynchronize (and HIP's and the driver's), and the blocking copies (cudaMemcpy without Async).
bool is_sync_call(const std::string& name)
{
  if (name.find("Synchronize") != std::string::npos) return true;
  for (const char* copy : {"cudaMemcpy", "hipMemcpy", "cuMemcpy"})
    if (name.rfind(copy, 0) == 0 && name.find("Async") == std::string::npos) return true;
  return false;
}

struct GroupRef {
  std::vector<int> ranks; ///< trace ranks in group-rank order; empty: the world
  std::string name, desc;
};

/// What a trace says about one NCCL kernel.
struct CommInfo {
  CommClass cls = CommClass::Unsupported;
  CollectiveKind kind = CollectiveKind::AllReduce;
  std::optional<double> bytes;
  GroupRef group;
  std::string source; ///< where the size came from, for notes
};

// ---- PyTorch host execution traces (ExecutionTraceObserver JSON), paired with the Kineto traces ----
//
// Field names as facebookresearch/param's et_replay reads them (execution_trace.py: _create_node_v1_0_1 and
// _create_node_v1_0_2_chakra_0_0_4; comm/commsTraceParser.py for record_param_comms and process_group:init) and as
// mlcommons/chakra's trace_link links them (kineto_operator.py: a Kineto op's "Record function id" is the host
// node's rf_id).

// Ranks of a job, as an int: far more than any traced job (2^20, the most GPUs a cluster here has).
constexpr int kMaxJobRanks = 1 << 20;

/// One record_param_comms node of a host ET: the c10d call PyTorch recorded, with its tensors.
struct HostComm {
  std::int64_t node = 0;
  std::int64_t rf_id = -1; ///< -1: none
  std::string collective;  ///< c10d's name: "allreduce", "all_to_allv", "all_gather", "wait", ...
  std::optional<double> in_bytes, out_bytes;
  std::string pg_name, pg_desc;        ///< its process group, where the node names it (schema 1.0.3 on)
  std::optional<long long> pg_backend; ///< ... or the backend id that process_group:init lists (1.0.1, 1.0.2)
  json input_shapes;                   ///< one entry per input, to check an order link against Input Dims
};

/// What the reader keeps of one host ET.
struct HostEt {
  std::string file;
  std::optional<int> rank;
  std::string rank_source; ///< "its rank field" or "its name"
  std::string schema;
  std::size_t nodes = 0;
  std::vector<HostComm> comms; ///< in rf_id order (node id order where a node has no rf_id)
  std::unordered_map<std::int64_t, std::int64_t> node_of_rf, parent;
  std::unordered_map<std::int64_t, std::size_t> comm_of_node;
  std::int64_t pg_init_node = -1;                 ///< the ## process_group:init ## node, -1: none
  std::string pg_init_problem;                    ///< why its payload was not read, empty when it was
  std::map<std::string, GroupRef> groups;         ///< by pg_name; ranks are job ranks
  std::map<long long, std::string> pg_of_backend; ///< backend_id (or uid) -> pg_name
  bool paired_alone = false;                      ///< no rank anywhere: paired with the only Kineto trace given
};

[[noreturn]] void host_fail(const std::string& file, const std::string& field, std::string rule, std::string fix)
{
  throw InputError({file, 0, field}, std::move(rule), std::move(fix));
}

/// The rank number in a host ET's file name: the one run of digits in its base name (dlrm_eg_3.json: 3), else the
/// one that follows "rank" (et_rank3_step12.json: 3). Nothing when the name has none or several without "rank".
std::optional<int> rank_in_name(const std::string& path)
{
  std::string base = path.substr(path.find_last_of("/:") == std::string::npos ? 0 : path.find_last_of("/:") + 1);
  for (const char* ext : {".gz", ".json"})
    if (detail::ends_with(base, ext)) base.resize(base.size() - std::char_traits<char>::length(ext));
  auto to_rank = [](const std::string& digits) -> std::optional<int> {
    if (digits.size() > 7) return std::nullopt; // beyond any rank (2^20)
    const int r = std::stoi(digits);
    return r < kMaxJobRanks ? std::optional<int>(r) : std::nullopt;
  };
  static const std::regex digits_re(R"(\d+)");
  static const std::regex rank_re(R"(rank[-_.]?(\d+))", std::regex::icase);
  std::vector<std::string> runs;
  for (auto it = std::sregex_iterator(base.begin(), base.end(), digits_re); it != std::sregex_iterator(); ++it)
    runs.push_back(it->str());
  if (runs.size() == 1) return to_rank(runs.front());
  std::vector<std::string> after_rank;
  for (auto it = std::sregex_iterator(base.begin(), base.end(), rank_re); it != std::sregex_iterator(); ++it)
    after_rank.push_back((*it)[1]);
  if (after_rank.size() == 1) return to_rank(after_rank.front());
  return std::nullopt;
}

/// "A,B[C,D],E" split at its top-level commas (a GenericList's element types).
std::vector<std::string> split_types(const std::string& s)
{
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// A whole number of a host ET (an id, a count) that fits an int64, or nothing.
std::optional<std::int64_t> host_int(const json& v)
{
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || !fits_int64(d)) return std::nullopt;
  return v.is_number_unsigned() ? static_cast<std::int64_t>(v.get<std::uint64_t>()) : v.get<std::int64_t>();
}

/// Reads one host ET. Errors name the file, the rank (when known) and the node.
class HostEtParser {
public:
  HostEtParser(std::string file, std::string text) : file_(std::move(file)), text_(std::move(text)) {}

  HostEt parse()
  {
    et_.file = file_;
    if (auto r = rank_in_name(file_)) {
      et_.rank = r;
      et_.rank_source = "its name";
    }
    json j;
    try {
      j = json::parse(text_);
    } catch (const json::exception& e) {
      host_fail(file_, where(), fmt::format("malformed JSON: {}", e.what()),
                "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
    }
    text_.clear();
    text_.shrink_to_fit();
    if (!j.is_object())
      host_fail(file_, where(), "not a PyTorch host execution trace: the file is not a JSON object",
                "give the ExecutionTraceObserver's JSON (an object with schema and nodes)");
    if (auto te = j.find("traceEvents"); te != j.end()) {
      std::string rank = "unknown";
      if (auto d = j.find("distributedInfo"); d != j.end() && d->is_object() && d->contains("rank"))
        rank = (*d)["rank"].dump();
      host_fail(file_, "rank " + rank,
                "a Kineto (PyTorch profiler) trace, not a host execution trace: it has traceEvents and no nodes",
                "give it as a Kineto trace (workload.path), and as host_et the ExecutionTraceObserver JSON of the "
                "same rank (an object with schema and nodes)");
    }
    auto nodes = j.find("nodes");
    if (nodes == j.end() || !nodes->is_array())
      host_fail(file_, where(), "not a PyTorch host execution trace: no nodes array",
                "give the ExecutionTraceObserver's JSON (an object with schema and nodes)");
    et_.schema = j.value("schema", json("unknown")).is_string() ? j.value("schema", "unknown") : "unknown";
    et_.nodes = nodes->size();
    // A rank the trace states itself wins over the file name (none of the schemas seen, 1.0.1 to
    // 1.1.0-chakra.0.0.4, writes one; Kineto's place for it is distributedInfo.rank).
    const json* stated = nullptr;
    if (auto r = j.find("rank"); r != j.end()) stated = &*r;
    if (auto d = j.find("distributedInfo"); d != j.end() && d->is_object() && d->contains("rank"))
      stated = &(*d)["rank"];
    if (stated) {
      auto r = host_int(*stated);
      if (!r || *r < 0 || *r >= kMaxJobRanks)
        host_fail(file_, "rank",
                  fmt::format("rank is {}, not a whole number from 0 to {}", stated->dump(), kMaxJobRanks - 1),
                  "give the host execution trace as PyTorch wrote it");
      et_.rank = static_cast<int>(*r);
      et_.rank_source = "its rank field";
    }
    for (const auto& n : *nodes) {
      try {
        read_node(n);
      } catch (const json::exception& e) {
        host_fail(file_, where(node_), fmt::format("unexpected JSON in the node: {}", e.what()),
                  "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
      }
    }
    bool all_rf = true;
    for (const auto& c : et_.comms)
      all_rf = all_rf && c.rf_id >= 0;
    std::stable_sort(et_.comms.begin(), et_.comms.end(), [&](const HostComm& a, const HostComm& b) {
      return all_rf ? a.rf_id < b.rf_id : a.node < b.node;
    });
    for (std::size_t k = 0; k < et_.comms.size(); ++k)
      et_.comm_of_node[et_.comms[k].node] = k;
    return std::move(et_);
  }

private:
  std::string where(std::optional<std::int64_t> node = std::nullopt) const
  {
    std::string s = et_.rank ? fmt::format("rank {}", *et_.rank) : "rank unknown";
    if (node) s += fmt::format(" node {}", *node);
    return s;
  }

  void read_node(const json& n)
  {
    if (!n.is_object())
      host_fail(file_, where(), fmt::format("a node is {}, not a JSON object", n.dump().substr(0, 40)),
                "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
    auto id = n.contains("id") ? host_int(n["id"]) : std::nullopt;
    if (!id)
      host_fail(file_, where(), fmt::format("a node's id is {}, not a whole number", n.value("id", json()).dump()),
                "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
    node_ = *id;
    const std::string name = n.value("name", json("")).is_string() ? n.value("name", "") : "";
    // Schema 1.0.1 names the parent `parent` and keeps rf_id at the top; 1.0.2 on name it ctrl_deps and keep rf_id
    // in attrs.
    for (const char* key : {"ctrl_deps", "parent"})
      if (n.contains(key))
        if (auto p = host_int(n[key])) et_.parent[*id] = *p;
    std::int64_t rf = -1;
    if (n.contains("rf_id"))
      if (auto r = host_int(n["rf_id"])) rf = *r;
    const json* attrs = n.contains("attrs") && n["attrs"].is_array() ? &n["attrs"] : nullptr;
    auto attr = [&](const char* key) -> const json* {
      if (!attrs) return nullptr;
      for (const auto& a : *attrs)
        if (a.is_object() && a.value("name", json("")) == key && a.contains("value")) return &a["value"];
      return nullptr;
    };
    if (const json* r = attr("rf_id"))
      if (auto v = host_int(*r)) rf = *v;
    if (rf >= 0) et_.node_of_rf[rf] = *id;
    // Inputs and outputs: flat lists in 1.0.1 (inputs, input_types, input_shapes), {values, types, shapes} on.
    auto side = [&](const char* key, const char* types, const char* shapes) {
      std::array<const json*, 3> out{nullptr, nullptr, nullptr};
      if (!n.contains(key)) return out;
      const json& v = n[key];
      if (v.is_object()) {
        if (v.contains("values")) out[0] = &v["values"];
        if (v.contains("types")) out[1] = &v["types"];
        if (v.contains("shapes")) out[2] = &v["shapes"];
      } else {
        out[0] = &v;
        if (n.contains(types)) out[1] = &n[types];
        if (n.contains(shapes)) out[2] = &n[shapes];
      }
      return out;
    };
    const auto in = side("inputs", "input_types", "input_shapes");
    const auto out = side("outputs", "output_types", "output_shapes");
    if (name.find("process_group:init") != std::string::npos) read_pg_init(in[0]);
    if (name != "record_param_comms") return;
    if (!in[0] || !in[0]->is_array() || !in[1] || !in[1]->is_array())
      host_fail(file_, where(node_), "record_param_comms without a list of inputs and their types",
                "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
    const json& values = *in[0];
    HostComm c;
    c.node = *id;
    c.rf_id = rf;
    c.input_shapes = in[2] && in[2]->is_array() ? *in[2] : json::array();
    // record_param_comms' inputs: [tensors,] seq, process group, rank, collective name, in splits, out splits, ...;
    // wait and barrier have no tensors, so everything is one place earlier (param's commsTraceParser: index_base).
    auto is_seq = [](const json& v) {
      return v.is_number() || (v.is_array() && v.size() == 2 && v[0].is_number() && v[1].is_boolean());
    };
    const std::size_t base = !values.empty() && is_seq(values[0]) ? 0 : 1;
    if (const json* a = attr("collective_name"); a && a->is_string())
      c.collective = a->get<std::string>();
    else if (values.size() > base + 3 && values[base + 3].is_string())
      c.collective = values[base + 3].get<std::string>();
    else
      host_fail(file_, where(node_),
                fmt::format("record_param_comms names no collective: input {} is {}", base + 3,
                            values.size() > base + 3 ? values[base + 3].dump() : "missing"),
                "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
    if (const json* a = attr("pg_name"); a && a->is_string()) {
      c.pg_name = a->get<std::string>();
      if (const json* d = attr("pg_desc"); d && d->is_string()) c.pg_desc = d->get<std::string>();
    } else if (values.size() > base + 1) {
      const json& pg = values[base + 1];
      if (pg.is_array() && pg.size() == 2 && pg[0].is_string() && pg[1].is_string()) { // (pg_name, pg_desc)
        c.pg_name = pg[0].get<std::string>();
        c.pg_desc = pg[1].get<std::string>();
      } else if (pg.is_string()) {
        c.pg_name = pg.get<std::string>();
      } else if (auto b = host_int(pg)) {
        c.pg_backend = *b;
      }
    }
    c.in_bytes = tensor_bytes(values, *in[1], "inputs");
    if (out[0] && out[1] && out[0]->is_array() && out[1]->is_array())
      c.out_bytes = tensor_bytes(*out[0], *out[1], "outputs");
    // Schema 1.1.0 on also writes the counts as attributes; they stand in where no tensor is listed.
    const json* dtype = attr("dtype");
    const int es = dtype && dtype->is_string() ? dtype_bytes(dtype->get<std::string>()).value_or(0) : 0;
    if (const json* a = attr("in_msg_nelems"); a && !c.in_bytes && es > 0)
      if (auto v = host_int(*a); v && *v >= 0) c.in_bytes = static_cast<double>(*v) * es;
    if (const json* a = attr("out_msg_nelems"); a && !c.out_bytes && es > 0)
      if (auto v = host_int(*a); v && *v >= 0) c.out_bytes = static_cast<double>(*v) * es;
    et_.comms.push_back(std::move(c));
  }

  // The bytes of every tensor among `values` (numel x element size: a tensor is [id, storage, offset, numel,
  // element size, device]), walking GenericLists by their types; nothing when none is a tensor.
  std::optional<double> tensor_bytes(const json& values, const json& types, const char* side)
  {
    double bytes = 0;
    bool any = false;
    for (std::size_t k = 0; k < values.size(); ++k) {
      const std::string t = k < types.size() && types[k].is_string() ? types[k].get<std::string>() : "";
      add_tensors(values[k], t, bytes, any, side, 0);
    }
    return any ? std::optional<double>(bytes) : std::nullopt;
  }

  void add_tensors(const json& v, const std::string& type, double& bytes, bool& any, const char* side, int depth)
  {
    if (depth > 8) return;
    if (type.rfind("Tensor", 0) == 0) {
      auto numel = v.is_array() && v.size() >= 5 ? host_int(v[3]) : std::nullopt;
      auto size = v.is_array() && v.size() >= 5 ? host_int(v[4]) : std::nullopt;
      if (!numel || !size || *numel < 0 || *size < 0 || *size > 64)
        host_fail(file_, where(node_),
                  fmt::format("a tensor among the {} of record_param_comms is {}, not [id, storage, offset, numel, "
                              "element size, device]",
                              side, v.dump().substr(0, 80)),
                  "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
      bytes += static_cast<double>(*numel) * static_cast<double>(*size);
      any = true;
      return;
    }
    const std::string list = "GenericList[";
    if (type.rfind(list, 0) == 0 && type.back() == ']' && v.is_array()) {
      const auto elems = split_types(type.substr(list.size(), type.size() - list.size() - 1));
      if (elems.empty()) return;
      for (std::size_t k = 0; k < v.size(); ++k)
        add_tensors(v[k], elems[std::min(k, elems.size() - 1)], bytes, any, side, depth + 1);
    }
  }

  // The process groups of `## process_group:init ##`: a JSON string listing {pg_name, pg_desc, ranks, group_size,
  // backend_id or uid}; ranks [] means every rank of a group of group_size (param's commsTraceParser).
  void read_pg_init(const json* values)
  {
    et_.pg_init_node = node_;
    if (!values || !values->is_array() || values->empty() || !(*values)[0].is_string()) {
      et_.pg_init_problem = "its first input is not the JSON text of the groups";
      return;
    }
    json pgs;
    try {
      pgs = json::parse((*values)[0].get<std::string>());
    } catch (const json::exception&) {
      // param's parsers skip a payload cut short the same way.
      et_.pg_init_problem = "its JSON text does not parse (cut short?)";
      return;
    }
    if (!pgs.is_array()) {
      et_.pg_init_problem = "its JSON text is not a list of groups";
      return;
    }
    for (const auto& pg : pgs) {
      if (!pg.is_object() || !pg.contains("pg_name")) continue;
      const std::string name = pg["pg_name"].is_string() ? pg["pg_name"].get<std::string>() : pg["pg_name"].dump();
      GroupRef g;
      g.name = name;
      g.desc = pg.value("pg_desc", json("")).is_string() ? pg.value("pg_desc", "") : "";
      const json ranks = pg.value("ranks", json::array());
      if (!ranks.is_array())
        host_fail(file_, where(node_), fmt::format("process group '{}' has ranks {}, not a list", name, ranks.dump()),
                  "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
      for (const auto& r : ranks) {
        auto v = host_int(r);
        if (!v || *v < 0 || *v >= kMaxJobRanks)
          host_fail(file_, where(node_),
                    fmt::format("process group '{}' lists rank {}, not a whole number from 0 to {}", name, r.dump(),
                                kMaxJobRanks - 1),
                    "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
        g.ranks.push_back(static_cast<int>(*v));
      }
      if (g.ranks.empty()) {
        auto size = pg.contains("group_size") ? host_int(pg["group_size"]) : std::nullopt;
        if (!size || *size < 1 || *size > kMaxJobRanks)
          host_fail(file_, where(node_),
                    fmt::format("process group '{}' lists no ranks and its group_size is {}, not 1 to {}", name,
                                pg.value("group_size", json()).dump(), kMaxJobRanks),
                    "give the host execution trace as PyTorch's ExecutionTraceObserver wrote it");
        for (int r = 0; r < *size; ++r)
          g.ranks.push_back(r);
      }
      for (const char* key : {"backend_id", "uid"})
        if (pg.contains(key))
          if (auto b = host_int(pg[key])) et_.pg_of_backend[*b] = name;
      et_.groups[name] = std::move(g);
    }
  }

  std::string file_, text_;
  HostEt et_;
  std::int64_t node_ = 0;
};

/// A host ET's process group of one record_param_comms: by name (schema 1.0.3 on) or by the backend id that
/// process_group:init lists (1.0.2). Nothing when the trace does not say or does not list it.
const GroupRef* host_group(const HostEt& et, const HostComm& c)
{
  std::string name = c.pg_name;
  if (name.empty() && c.pg_backend) {
    auto b = et.pg_of_backend.find(*c.pg_backend);
    if (b == et.pg_of_backend.end()) return nullptr;
    name = b->second;
  }
  if (name.empty()) return nullptr;
  auto g = et.groups.find(name);
  return g == et.groups.end() ? nullptr : &g->second;
}

struct PendingOp {
  double ts_us = 0, dur_us = 0;
  double launch_us = std::numeric_limits<double>::quiet_NaN(); ///< ts of the CUDA runtime call that launched it
  std::size_t event = 0;
  std::int64_t call = -1; ///< the runtime call that launched it (index into RankTrace::calls), -1: not traced
  std::uint64_t stream_key = 0;
  Op op;
  std::string name;
  int group = -1; ///< index into the reader's group table for collectives
};

class KinetoReader {
public:
  explicit KinetoReader(KinetoOptions options) : options_(options) {}

  Workload read(std::vector<TraceDoc> docs)
  {
    load_host_ets(docs.size());
    for (auto& d : docs)
      read_doc(d);
    finish_host_ets();
    return assemble();
  }

private:
  /// A CUDA runtime (or driver) call of a host thread.
  struct RtCall {
    double ts_us = 0, dur_us = 0;
    std::pair<long long, long long> thread; ///< (pid, tid)
    std::size_t event = 0;
    bool sync = false; ///< the host blocks in it until the device has done something (synchronize, blocking copy)
  };
  struct RankTrace {
    int rank = 0;
    std::string file;
    std::vector<PendingOp> ops;
    std::vector<RtCall> calls;
    std::map<std::uint64_t, std::string> stream_names;
    double t0 = 0, t1 = 0;
  };

  [[noreturn]] void fail(const std::string& file, const std::string& field, std::string rule, std::string fix)
  {
    throw InputError({file, 0, field}, std::move(rule), std::move(fix));
  }

  // Ranks of a job, as an int: far more than any traced job (2^20, the most GPUs a cluster here has).
  static constexpr int kMaxRanks = 1 << 20;

  // A measured time in microseconds (ts, dur) of the event at `field`: finite, and a duration >= 0 and at most the
  // 1e6 s a simulated time may reach (units.hpp limits). A timestamp may be large (Kineto counts from the epoch or
  // the boot); only the span of a rank's GPU events is bounded (read_doc).
  double measured_us(const std::string& file, const std::string& field, const char* key, const json& v, bool duration)
  {
    const bool numeric = v.is_number() || (v.is_string() && leading_number(v.get<std::string>()).length > 0);
    const double us = number(v, std::numeric_limits<double>::quiet_NaN());
    if (!numeric || !std::isfinite(us))
      fail(file, field, fmt::format("{} is {}, not a finite number of microseconds", key, v.dump()),
           "give the trace as the profiler wrote it");
    if (duration && !(us >= 0 && us <= limits::kMaxSeconds * 1e6))
      fail(file, field,
           fmt::format("{} is {} us; a measured duration must be zero or more and at most 1e6 s", key, v.dump()),
           "give the trace as the profiler wrote it");
    return us;
  }

  // A whole number such as a rank or a world size, in [min, max].
  int whole(const std::string& file, const std::string& field, const json& v, int min, int max)
  {
    const double d = number(v, std::numeric_limits<double>::quiet_NaN());
    if (!(d >= min && d <= max && d == std::floor(d)))
      fail(file, field, fmt::format("{} is not a whole number from {} to {}", v.dump(), min, max),
           "give the trace as the profiler wrote it");
    return static_cast<int>(d);
  }

  // An id used as a key: a finite whole number within int64 when it is a number; 0 for what is not a number at all
  // (ids written as words, as before).
  long long ident(const std::string& file, const std::string& field, const char* key, const json& v)
  {
    const double d = number(v);
    if (!std::isfinite(d) || !fits_int64(d))
      fail(file, field, fmt::format("{} is {}, not an id that fits a 64-bit integer", key, v.dump()),
           "give the trace as the profiler wrote it");
    return static_cast<long long>(d);
  }

  Bytes size(const std::string& file, const std::string& field, const char* key, double bytes)
  {
    try {
      return checked_bytes(bytes);
    } catch (const std::invalid_argument& e) {
      fail(file, field, fmt::format("{}: {}", key, e.what()), "give the trace as the profiler wrote it");
    }
  }

  int group_index(const GroupRef& g)
  {
    auto key = std::make_pair(g.ranks, g.name);
    auto it = group_index_.find(key);
    if (it != group_index_.end()) return it->second;
    groups_.push_back(g);
    return group_index_[key] = static_cast<int>(groups_.size() - 1);
  }

  void read_doc(TraceDoc& doc)
  {
    json j;
    try {
      j = json::parse(doc.text);
    } catch (const json::parse_error& e) {
      if (const std::string kind = detail::sniff_trace_kind(doc.text); kind == "chakra")
        fail(doc.name, "rank unknown", "not a Kineto trace: " + detail::read_it_as(kind),
             "write trace: chakra in the scenario, with the prefix of the per-rank .et files (or their .tar.gz) as "
             "path");
      fail(doc.name, fmt::format("rank {} byte {}", guess_rank(doc.text), e.byte),
           fmt::format("malformed JSON: {}", e.what()), "give the trace as the profiler wrote it (Chrome trace JSON)");
    } catch (const json::out_of_range& e) {
      // nlohmann refuses a number beyond a double (a dur of 1e999) with its text but no position: find it.
      const std::string what = e.what();
      const auto q = what.find('\'');
      const std::string token = q == std::string::npos ? "" : what.substr(q + 1, what.rfind('\'') - q - 1);
      const auto at = token.empty() ? std::string::npos : doc.text.find(token);
      fail(doc.name,
           at == std::string::npos ? fmt::format("rank {}", guess_rank(doc.text))
                                   : fmt::format("rank {} byte {}", guess_rank(doc.text), at),
           fmt::format("the number {} is beyond the range of a double, so no time or size can be read from it",
                       token.empty() ? what : token),
           "give the trace as the profiler wrote it");
    }
    doc.text.clear();
    doc.text.shrink_to_fit();
    try {
      read_events(doc, j);
    } catch (const json::exception& e) {
      // A field of an unexpected JSON type (a name that is a number, a rank list of strings): not a Kineto trace.
      fail(doc.name, fmt::format("event {}", event_), fmt::format("unexpected JSON in the trace: {}", e.what()),
           "give the trace as the profiler wrote it");
    } catch (const std::invalid_argument& e) { // a number in a text field that no rank can be
      fail(doc.name, fmt::format("event {}", event_), e.what(), "give the trace as the profiler wrote it");
    }
  }

  void read_events(const TraceDoc& doc, const json& j)
  {
    event_ = 0;
    const json* events = nullptr;
    const json* dist = nullptr;
    if (j.is_array()) {
      events = &j;
    } else if (j.is_object()) {
      if (auto it = j.find("traceEvents"); it != j.end() && it->is_array()) events = &*it;
      if (auto it = j.find("distributedInfo"); it != j.end() && it->is_object()) dist = &*it;
    }
    RankTrace t;
    t.file = doc.name;
    t.rank = static_cast<int>(traces_.size());
    if (dist && dist->contains("rank"))
      t.rank = whole(doc.name, "distributedInfo.rank", (*dist)["rank"], 0, kMaxRanks - 1);
    else
      notes_.push_back(
          fmt::format("{}: no distributedInfo.rank; taken as rank {} from its position", doc.name, t.rank));
    if (j.is_array())
      fail(doc.name, "",
           "the file is a JSON list, not a Kineto trace: a PyTorch profiler trace is a JSON object with "
           "traceEvents and distributedInfo",
           "give the trace the PyTorch profiler wrote (torch.profiler with on_trace_ready, or "
           "prof.export_chrome_trace)");
    if (!events && j.is_object() && j.contains("nodes") && j["nodes"].is_array()) {
      const auto r = rank_in_name(doc.name);
      fail(doc.name, r ? fmt::format("rank {}", *r) : "rank unknown",
           fmt::format("a PyTorch host execution trace (schema {}, {} nodes): it has no GPU activity, so there is "
                       "nothing to replay",
                       j.value("schema", json("unknown")).is_string() ? j.value("schema", "unknown") : "unknown",
                       j["nodes"].size()),
           "pair it with the Kineto trace of the same rank: give that trace as the Kineto trace (workload.path) and "
           "this file as its host execution trace (workload.host_et)");
    }
    if (!events)
      fail(doc.name, fmt::format("rank {}", t.rank),
           j.is_object() ? "not a Kineto trace: no traceEvents array" : "not a Kineto trace: not a JSON object",
           "give a PyTorch profiler trace (Chrome trace JSON with traceEvents)");
    if (dist && dist->contains("world_size")) {
      const int ws = whole(doc.name, "distributedInfo.world_size", (*dist)["world_size"], 1, kMaxRanks);
      if (world_size_ && *world_size_ != ws)
        fail(doc.name, fmt::format("rank {}", t.rank),
             fmt::format("distributedInfo.world_size is {} but another trace says {}", ws, *world_size_),
             "give traces of one job");
      world_size_ = ws;
    }
    if (dist && dist->contains("pg_config") && (*dist)["pg_config"].is_array())
      for (const auto& pg : (*dist)["pg_config"]) {
        std::string name = pg.contains("pg_name")
                               ? (pg["pg_name"].is_string() ? pg["pg_name"].get<std::string>() : pg["pg_name"].dump())
                               : "";
        GroupRef g;
        g.name = name;
        g.desc = pg.value("pg_desc", "");
        if (pg.contains("ranks") && pg["ranks"].is_array())
          for (const auto& r : pg["ranks"])
            g.ranks.push_back(whole(doc.name, "distributedInfo.pg_config ranks", r, 0, kMaxRanks - 1));
        pg_config_[name] = g;
      }

    // Launches by correlation id, and the host ops of each thread, to find what launched a kernel.
    std::map<long long, std::size_t> launch;
    std::unordered_map<std::size_t, std::size_t> call_of_event;
    std::map<std::pair<long long, long long>, std::vector<std::size_t>> host_ops;
    std::vector<std::size_t> param_comms; // record_param_comms events, for an order link to a host ET
    bool record_function_ids = false;
    const auto& ev = *events;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      event_ = i;
      const json& e = ev[i];
      if (!e.is_object()) continue;
      std::string cat = detail::lower(e.value("cat", ""));
      const std::string field = fmt::format("rank {} event {}", t.rank, i);
      if (cat == "cuda_runtime" || cat == "cuda_driver") {
        if (const json* c = arg(e, "correlation")) launch[ident(doc.name, field, "args.correlation", *c)] = i;
        if (e.contains("ts") && e.value("ph", "") == "X") {
          RtCall call;
          call.ts_us = measured_us(doc.name, field, "ts", e["ts"], false);
          call.dur_us = measured_us(doc.name, field, "dur", e.value("dur", json(0)), true);
          call.thread = {ident(doc.name, field, "pid", e.value("pid", json(0))),
                         ident(doc.name, field, "tid", e.value("tid", json(0)))};
          call.event = i;
          call.sync = is_sync_call(e.value("name", ""));
          call_of_event[i] = t.calls.size();
          t.calls.push_back(call);
        } else if (e.contains("ts")) {
          (void)measured_us(doc.name, field, "ts", e["ts"], false);
        }
      } else if ((cat == "cpu_op" || cat == "user_annotation") && e.value("ph", "") == "X") {
        // Their times decide which host op launched a kernel: checked like the GPU events' own.
        (void)measured_us(doc.name, field, "ts", e.value("ts", json(0)), false);
        (void)measured_us(doc.name, field, "dur", e.value("dur", json(0)), true);
        host_ops[{ident(doc.name, field, "pid", e.value("pid", json(0))),
                  ident(doc.name, field, "tid", e.value("tid", json(0)))}]
            .push_back(i);
        if (cat == "cpu_op" && e.value("name", json("")) == "record_param_comms") param_comms.push_back(i);
        record_function_ids = record_function_ids || arg(e, "Record function id");
      }
    }
    link_host(t.rank, ev, std::move(param_comms), record_function_ids);

    bool first = true;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      event_ = i;
      const json& e = ev[i];
      if (!e.is_object() || e.value("ph", "") != "X") continue;
      std::string cat = detail::lower(e.value("cat", ""));
      if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
      PendingOp p;
      p.event = i;
      p.name = e.value("name", "");
      if (!e.contains("ts"))
        fail(doc.name, fmt::format("rank {} event {}", t.rank, i), "GPU event without a timestamp (ts)",
             "give the trace as the profiler wrote it");
      const std::string field = fmt::format("rank {} event {}", t.rank, i);
      p.ts_us = measured_us(doc.name, field, "ts", e["ts"], false);
      p.dur_us = measured_us(doc.name, field, "dur", e.value("dur", json(0)), true);
      if (const json* c = arg(e, "correlation")) {
        auto l = launch.find(ident(doc.name, field, "args.correlation", *c));
        if (l != launch.end() && ev[l->second].contains("ts")) p.launch_us = number(ev[l->second]["ts"]);
        if (l != launch.end())
          if (auto k = call_of_event.find(l->second); k != call_of_event.end())
            p.call = static_cast<std::int64_t>(k->second);
      }
      const json* s = arg(e, "stream");
      p.stream_key = static_cast<std::uint64_t>(s ? ident(doc.name, field, "args.stream", *s)
                                                  : ident(doc.name, field, "tid", e.value("tid", json(0))));
      t.stream_names.emplace(p.stream_key, fmt::format("stream {}", p.stream_key));
      if (cat == "gpu_memcpy") {
        const json* b = arg(e, "bytes");
        p.op = Op::make_memcpy(size(doc.name, field, "args.bytes", b ? number(*b) : 0.0), 0);
      } else if (auto token = nccl_kernel_token(p.name); cat == "kernel" && token) {
        classify_nccl(doc.name, t, i, e, *token, ev, launch, host_ops, p);
      } else {
        p.op = Op::make_compute(0, Bytes(0), 0);
      }
      t.t0 = first ? p.ts_us : std::min(t.t0, p.ts_us);
      t.t1 = first ? p.ts_us + p.dur_us : std::max(t.t1, p.ts_us + p.dur_us);
      first = false;
      t.ops.push_back(std::move(p));
    }
    if (t.ops.empty())
      fail(
          doc.name, fmt::format("rank {}", t.rank),
          fmt::format("not a Kineto trace of GPU work: none of its {} events is a GPU event (cat kernel, gpu_memcpy or "
                      "gpu_memset with ph X), so there is nothing to replay",
                      ev.size()),
          "profile with GPU activities on (torch.profiler.ProfilerActivity.CUDA) and give that trace");
    if (!(t.t1 - t.t0 <= limits::kMaxSeconds * 1e6))
      fail(doc.name, fmt::format("rank {}", t.rank),
           fmt::format("the GPU events span {} us, more than the 1e6 s a simulated time may reach", t.t1 - t.t0),
           "give the trace of one training step");
    for (const auto& other : traces_)
      if (other.rank == t.rank)
        fail(doc.name, fmt::format("rank {}", t.rank),
             fmt::format("rank {} is traced twice (also in {})", t.rank, other.file), "give one trace per rank");
    traces_.push_back(std::move(t));
  }

  // Kind, size and group of an NCCL kernel: from its own args (newer PyTorch), else from the host op that launched
  // it (record_param_comms with the same args, or nccl:<collective> with Input Dims / Input type).
  void classify_nccl(const std::string& file, const RankTrace& t, std::size_t i, const json& e,
                     const std::string& token, const json& ev, const std::map<long long, std::size_t>& launch,
                     const std::map<std::pair<long long, long long>, std::vector<std::size_t>>& host_ops, PendingOp& p)
  {
    CommInfo info;
    CommName from_kernel = classify(token);
    info.cls = from_kernel.cls;
    info.kind = from_kernel.kind;
    bool have_meta = from_args(e, info);
    // The host ops on the launching thread that enclose the launch, innermost (the one that starts last) first.
    std::vector<std::size_t> enclosing;
    const json* c = arg(e, "correlation");
    auto l = c ? launch.find(static_cast<long long>(number(*c))) : launch.end();
    if (l != launch.end()) {
      const json& le = ev[l->second];
      double at = number(le.value("ts", json(0)));
      auto h = host_ops.find({static_cast<long long>(number(le.value("pid", json(0)))),
                              static_cast<long long>(number(le.value("tid", json(0))))});
      if (h != host_ops.end()) {
        for (std::size_t k : h->second) {
          const json& o = ev[k];
          double ts = number(o.value("ts", json(0)));
          if (ts <= at && at <= ts + number(o.value("dur", json(0)))) enclosing.push_back(k);
        }
        std::sort(enclosing.begin(), enclosing.end(), [&](std::size_t a, std::size_t b) {
          return number(ev[a].value("ts", json(0))) > number(ev[b].value("ts", json(0)));
        });
      }
    }
    if (!have_meta)
      for (std::size_t k : enclosing)
        if (from_args(ev[k], info)) {
          have_meta = true;
          break;
        }
    // What the args gave; a host ET fills in the rest, before the nccl:* annotation's Input Dims (which give the
    // first input tensor only).
    const bool args_size = info.bytes.has_value();
    const bool args_group = have_meta && (!info.group.ranks.empty() || !info.group.name.empty());
    if (!have_meta)
      for (std::size_t k : enclosing) {
        std::string n = ev[k].value("name", "");
        if (n.rfind("nccl:", 0) == 0 && from_input_dims(ev[k], n, info)) {
          have_meta = true;
          break;
        }
      }
    if (host_now_ && (!args_size || !args_group)) take_from_host(t, i, ev, enclosing, args_size, args_group, info);
    const std::string field = fmt::format("rank {} event {}", t.rank, i);
    if (info.cls == CommClass::Collective) {
      if (!info.bytes) {
        ++unknown_sizes_;
        unknown_size_example_ = file + " " + field;
      }
    }
    if (info.cls == CommClass::Collective) {
      p.op = Op::make_collective(info.kind, Bytes(info.bytes.value_or(0.0)), -1, 0, 0);
      p.group = group_index(info.group);
      return;
    }
    // Point-to-point kernels name no peer in these traces, and unknown ones no semantics: keep their measured time.
    p.op = Op::make_compute(0, Bytes(0), 0);
    p.name += info.cls == CommClass::PointToPoint ? " [nccl point-to-point, peer unknown: measured time kept]"
                                                  : " [nccl kernel of unknown kind: measured time kept]";
    ++opaque_nccl_;
  }

  // Newer PyTorch puts "Collective name", "In msg nelems", "Out msg nelems", "dtype", "Group size",
  // "Process Group Name/Description/Ranks" on record_param_comms and on the kernel itself.
  bool from_args(const json& e, CommInfo& info)
  {
    std::string cname = text_arg(e, "Collective name");
    if (cname.empty()) return false;
    CommName c = classify(cname);
    info.cls = c.cls;
    info.kind = c.kind;
    auto es = dtype_bytes(text_arg(e, "dtype"));
    const json* in_n = arg(e, "In msg nelems");
    const json* out_n = arg(e, "Out msg nelems");
    const json* gs = arg(e, "Group size");
    double group_size = gs ? number(*gs) : 0.0;
    if (es && (in_n || out_n)) {
      double in_b = in_n ? number(*in_n) * *es : 0.0;
      double out_b = out_n ? number(*out_n) * *es : 0.0;
      // nccl-tests sizes: all_gather counts the gathered output, reduce_scatter the full input, the rest the input.
      if (info.kind == CollectiveKind::AllGather)
        info.bytes = out_b > 0 ? out_b : in_b * group_size;
      else if (info.kind == CollectiveKind::ReduceScatter)
        info.bytes = in_b > 0 ? in_b : out_b * group_size;
      else
        info.bytes = in_b > 0 ? in_b : out_b;
      info.source = "args";
    }
    info.group.name = text_arg(e, "Process Group Name");
    info.group.desc = text_arg(e, "Process Group Description");
    info.group.ranks = parse_rank_list(text_arg(e, "Process Group Ranks"));
    if (info.group.ranks.empty()) info.group = group_by_name(info.group.name, info.group.desc);
    return true;
  }

  // Older traces: the nccl:<collective> annotation's first input tensor.
  bool from_input_dims(const json& e, const std::string& name, CommInfo& info)
  {
    CommName c = classify(name);
    if (c.cls == CommClass::Unsupported) return false;
    info.cls = c.cls;
    info.kind = c.kind;
    const json* dims = arg(e, "Input Dims");
    const json* types = arg(e, "Input type");
    if (!dims || !types || !dims->is_array() || !types->is_array() || dims->empty() || types->empty()) return true;
    const json& d0 = (*dims)[0];
    auto es = dtype_bytes((*types)[0].is_string() ? (*types)[0].get<std::string>() : "");
    if (!d0.is_array() || !es) return true;
    double n = 1;
    for (const auto& x : d0)
      n *= number(x);
    double b = n * *es;
    if (info.kind == CollectiveKind::AllGather) // the annotation records the local shard; nccl-tests counts all
      b *= world_size_.value_or(1);
    info.bytes = b;
    info.source = "Input Dims";
    return true;
  }

  GroupRef group_by_name(const std::string& name, const std::string& desc)
  {
    auto it = pg_config_.find(name);
    if (it != pg_config_.end()) return it->second;
    GroupRef g; // the world
    g.name = name;
    g.desc = desc;
    return g;
  }

  Workload assemble()
  {
    std::sort(traces_.begin(), traces_.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
    const int traced = static_cast<int>(traces_.size());
    const int world = std::max(world_size_.value_or(traced), traces_.back().rank + 1);
    std::vector<int> renumber(world, -1);
    for (int k = 0; k < traced; ++k)
      renumber[traces_[k].rank] = k;
    Workload w;
    w.source = traces_.front().file;
    bool partial = traced != world;
    if (partial) {
      std::string list;
      for (const auto& t : traces_)
        list += (list.empty() ? "" : ", ") + std::to_string(t.rank);
      w.notes.push_back(fmt::format("traced ranks {} of a world of {}: the workload holds these {} ranks, renumbered "
                                    "0..{}, and every communicator is restricted to its traced members",
                                    list, world, traced, traced - 1));
    }
    // Communicators: one per distinct process group, members as workload ranks.
    std::vector<int> comm_of_group(groups_.size(), -1);
    std::vector<char> alltoall(groups_.size(), 0);
    for (const auto& t : traces_)
      for (const auto& p : t.ops)
        if (p.group >= 0 && p.op.kind == OpKind::Collective && p.op.collective() == CollectiveKind::AllToAll)
          alltoall[static_cast<std::size_t>(p.group)] = 1;
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      const GroupRef& g = groups_[gi];
      std::vector<int> members;
      if (g.ranks.empty()) {
        for (int r = 0; r < world; ++r)
          if (renumber[r] >= 0) members.push_back(renumber[r]);
      } else {
        for (int r : g.ranks)
          if (r >= 0 && r < world && renumber[r] >= 0) members.push_back(renumber[r]);
      }
      std::string name = g.ranks.empty() && g.name.empty() ? "world" : "pg " + (g.name.empty() ? "?" : g.name);
      if (!g.desc.empty()) name += " (" + g.desc + ")";
      const bool restricted =
          partial && static_cast<int>(members.size()) < (g.ranks.empty() ? world : static_cast<int>(g.ranks.size()));
      GroupKind kind = kind_from_description(g.desc + " " + g.name);
      std::string why = "its name";
      if (kind == GroupKind::Other) {
        std::vector<int> job_ranks = g.ranks;
        if (job_ranks.empty())
          for (int r = 0; r < world; ++r)
            job_ranks.push_back(r);
        kind = kind_from_ranks(job_ranks, world, alltoall[gi], why);
      }
      if (kind != GroupKind::Other)
        w.notes.push_back(fmt::format("communicator '{}' is {}: {}", name, to_string(kind), why));
      comm_of_group[gi] = w.add_communicator(name, kind, std::move(members));
      if (restricted) {
        auto& recorded = w.communicators[comm_of_group[gi]].recorded_ranks;
        if (g.ranks.empty())
          for (int r = 0; r < world; ++r)
            recorded.push_back(r);
        else
          for (int r : g.ranks)
            if (r >= 0 && r < world) recorded.push_back(r);
      }
    }
    // Kineto's timestamps come from one clock per job here (the collectives of the 8 DLRM ranks end at the same
    // microsecond), so each rank's origin is kept relative to the earliest one.
    double t0_min = traces_.front().t0;
    for (const auto& t : traces_)
      t0_min = std::min(t0_min, t.t0);
    for (auto& t : traces_)
      w.add_rank(build(t, comm_of_group, t0_min));
    if (partial) {
      w.recorded_world = world;
      for (const auto& t : traces_)
        w.recorded_ranks.push_back(t.rank);
    }
    if (unknown_sizes_ > 0)
      w.notes.push_back(fmt::format("{} NCCL kernels had no size in the trace (first: {}); their size is 0 bytes",
                                    unknown_sizes_, unknown_size_example_));
    if (opaque_nccl_ > 0)
      w.notes.push_back(fmt::format("{} NCCL kernels are point-to-point or of unknown kind; kept as compute ops "
                                    "with their measured duration",
                                    opaque_nccl_));
    for (auto& n : notes_)
      w.notes.push_back(std::move(n));
    validate(w);
    return w;
  }

  RankGraph build(RankTrace& t, const std::vector<int>& comm_of_group, double t0_min)
  {
    // Ops in start order (then event order): stream order then follows each stream's timeline.
    std::stable_sort(t.ops.begin(), t.ops.end(), [](const PendingOp& a, const PendingOp& b) {
      return a.ts_us < b.ts_us || (a.ts_us == b.ts_us && a.event < b.event);
    });
    std::map<std::uint64_t, StreamId> stream_id;
    for (const auto& [key, label] : t.stream_names) {
      auto id = static_cast<StreamId>(stream_id.size());
      stream_id[key] = id;
    }
    RankGraphBuilder b(t.file, SourceKind::EventIndex);
    for (const auto& [key, label] : t.stream_names)
      b.set_stream_label(stream_id[key], label);
    const std::size_t nstreams = stream_id.size();
    // Per stream: ops so far as (end time, op id); ends are increasing because a stream runs one op at a time.
    std::vector<std::vector<std::pair<double, OpId>>> done(nstreams);
    std::vector<std::vector<std::int64_t>> last_dep(nstreams, std::vector<std::int64_t>(nstreams, -1));
    for (auto& p : t.ops) {
      StreamId s = stream_id[p.stream_key];
      p.op.stream = s;
      if (p.group >= 0) p.op.comm = comm_of_group[p.group];
      OpId id = b.add(p.op, p.name);
      b.set_source_id(id, p.event);
      b.set_measured(id, units::us(p.ts_us - t.t0), units::us(p.dur_us));
      if (!std::isnan(p.launch_us)) b.set_issue_time(id, units::us(p.launch_us - t.t0));
      if (options_.infer_cross_stream_deps) {
        for (std::size_t o = 0; o < nstreams; ++o) {
          if (o == s || done[o].empty()) continue;
          // The last op of stream o that had ended when this one started.
          auto it = std::upper_bound(done[o].begin(), done[o].end(), std::make_pair(p.ts_us, OpId(~0u)));
          if (it == done[o].begin()) continue;
          OpId dep = std::prev(it)->second;
          if (last_dep[s][o] == static_cast<std::int64_t>(dep))
            continue; // already implied through this stream's previous op
          last_dep[s][o] = dep;
          b.add_dep(id, dep);
        }
      }
      double end = p.ts_us + p.dur_us;
      auto& d = done[s];
      if (!d.empty() && end < d.back().first)
        end = d.back().first; // overlapping records on one stream: keep the list sorted
      d.emplace_back(end, id);
    }
    add_host_calls(t, b);
    b.set_measured_span(units::us(t.t1 - t.t0));
    b.set_clock_offset(units::us(t.t0 - t0_min));
    t.ops.clear();
    t.calls.clear();
    return b.finish();
  }

  // The host threads' calls that launched an op of the trace or synchronised with the device, as HostCalls: each
  // thread's calls in start order with the host's own time between them. A synchronisation waited when a GPU op
  // launched before it ended while it ran (within 2 us: the two clocks are aligned to the microsecond); the latest
  // such op released it. Ops are numbered in t.ops order (build adds them so).
  void add_host_calls(const RankTrace& t, RankGraphBuilder& b)
  {
    std::vector<std::vector<OpId>> launched(t.calls.size());
    std::vector<std::tuple<double, double, OpId>> by_end; // (end, launch, op)
    for (std::size_t k = 0; k < t.ops.size(); ++k) {
      const PendingOp& p = t.ops[k];
      if (p.call >= 0) launched[static_cast<std::size_t>(p.call)].push_back(static_cast<OpId>(k));
      if (!std::isnan(p.launch_us)) by_end.emplace_back(p.ts_us + p.dur_us, p.launch_us, static_cast<OpId>(k));
    }
    std::sort(by_end.begin(), by_end.end());
    std::map<std::pair<long long, long long>, std::uint32_t> thread_id;
    std::vector<std::size_t> order;
    for (std::size_t c = 0; c < t.calls.size(); ++c)
      if (!launched[c].empty() || t.calls[c].sync) {
        order.push_back(c);
        thread_id.emplace(t.calls[c].thread, 0);
      }
    if (order.empty()) return;
    std::vector<std::string> labels;
    for (auto& [key, id] : thread_id) {
      id = static_cast<std::uint32_t>(labels.size());
      labels.push_back(fmt::format("thread {}", key.second));
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t c) {
      const RtCall& x = t.calls[a];
      const RtCall& y = t.calls[c];
      return std::tuple(thread_id[x.thread], x.ts_us, x.event) < std::tuple(thread_id[y.thread], y.ts_us, y.event);
    });
    constexpr double kClockSlackUs = 2.0;
    std::vector<HostCall> calls;
    calls.reserve(order.size());
    for (std::size_t c : order) {
      const RtCall& r = t.calls[c];
      HostCall h;
      h.start_s = units::us(r.ts_us - t.t0).seconds();
      h.duration_s = units::us(r.dur_us).seconds();
      h.thread = thread_id[r.thread];
      if (!calls.empty() && calls.back().thread == h.thread)
        h.gap_s = h.start_s - (calls.back().start_s + calls.back().duration_s);
      if (r.sync) {
        const double end = r.ts_us + r.dur_us;
        auto it = std::upper_bound(by_end.begin(), by_end.end(),
                                   std::tuple(end + kClockSlackUs, std::numeric_limits<double>::infinity(), kNone));
        while (it != by_end.begin()) {
          --it;
          const auto& [op_end, op_launch, op] = *it;
          if (op_end <= r.ts_us) break;
          if (op_launch <= r.ts_us) {
            h.waits = op;
            h.tail_s = units::us(std::max(0.0, end - op_end)).seconds();
            break;
          }
        }
      }
      const auto index = static_cast<std::uint32_t>(calls.size());
      for (OpId op : launched[c])
        b.set_launch_call(op, index);
      calls.push_back(h);
    }
    b.set_host_calls(std::move(calls), std::move(labels));
  }

  // ---- Host execution traces (KinetoOptions::host_et) ----

  // Reads the host ETs and gives each its rank: the trace's own rank field, else the rank number in its file name;
  // one host ET given with one Kineto trace pairs with it whatever its name. Two for one rank, or one whose rank
  // cannot be told, are refused.
  void load_host_ets(std::size_t kineto_docs)
  {
    if (options_.host_et.empty()) return;
    auto docs = load_docs(options_.host_et, "archive the ranks' host execution traces (*.json)");
    if (docs.empty())
      throw InputError({"", 0, "workload.host_et"}, "no host execution trace given",
                       "list one host execution trace per rank, or leave host_et out");
    for (auto& d : docs)
      host_.push_back(HostEtParser(std::move(d.name), std::move(d.text)).parse());
    for (auto& h : host_) {
      if (h.rank) continue;
      if (host_.size() == 1 && kineto_docs == 1) {
        h.paired_alone = true;
        continue;
      }
      host_fail(h.file, "rank unknown",
                fmt::format("the rank of this host execution trace cannot be told: its JSON has no rank field and its "
                            "file name no single rank number, and there are {} host and {} Kineto traces to pair",
                            host_.size(), kineto_docs),
                "name each host execution trace with its rank, once (dlrm_eg_3.json or host_rank3.json is rank 3), "
                "or give one host trace with the one Kineto trace of its rank");
    }
    for (std::size_t a = 0; a < host_.size(); ++a)
      for (std::size_t b = a + 1; b < host_.size(); ++b)
        if (host_[a].rank && host_[a].rank == host_[b].rank)
          host_fail(host_[b].file, fmt::format("rank {}", *host_[b].rank),
                    fmt::format("two host execution traces are rank {}: this one (from {}) and {} (from {})",
                                *host_[b].rank, host_[b].rank_source, host_[a].file, host_[a].rank_source),
                    "give one host execution trace per rank, named with its rank number");
  }

  // Sets up the link of rank `rank`'s Kineto trace to its host ET. A trace whose host ops carry "Record function
  // id" (PyTorch from 2024) links each op to the host node with that rf_id, as chakra's trace_link does. An older
  // trace links its record_param_comms events in order: the k-th in start order is the host ET's k-th in rf_id
  // order (the host ET's execution order), as param's trace_link matched ops by execution order before the id
  // existed; the pairing holds only when both have as many and every Input Dims the Kineto event gives equals the
  // host node's input shape.
  void link_host(int rank, const json& ev, std::vector<std::size_t> rcp_events, bool has_rf)
  {
    host_now_ = nullptr;
    link_by_rf_ = false;
    order_failed_ = false;
    comm_of_event_.clear();
    for (auto& h : host_)
      if (h.paired_alone || (h.rank && *h.rank == rank)) host_now_ = &h;
    if (!host_now_) return;
    host_paired_.emplace_back(host_now_, rank);
    if (has_rf) {
      link_by_rf_ = true;
      ++hs_.ranks_by_rf;
      return;
    }
    ++hs_.ranks_by_order;
    const HostEt& h = *host_now_;
    std::stable_sort(rcp_events.begin(), rcp_events.end(), [&](std::size_t a, std::size_t b) {
      return number(ev[a].value("ts", json(0))) < number(ev[b].value("ts", json(0)));
    });
    std::string problem;
    if (rcp_events.size() != h.comms.size()) {
      problem = fmt::format("its Kineto trace has {} record_param_comms events and its host ET {} record_param_comms "
                            "nodes",
                            rcp_events.size(), h.comms.size());
    } else {
      for (std::size_t k = 0; k < rcp_events.size() && problem.empty(); ++k) {
        const json* dims = arg(ev[rcp_events[k]], "Input Dims");
        const json& shapes = h.comms[k].input_shapes;
        if (!dims || !dims->is_array()) continue;
        bool same = dims->size() == shapes.size();
        for (std::size_t d = 0; same && d < dims->size(); ++d)
          if ((*dims)[d].is_array() && !(*dims)[d].empty()) same = (*dims)[d] == shapes[d];
        if (!same)
          problem = fmt::format("its record_param_comms number {} (event {}, Input Dims {}) is not host node {} "
                                "(input shapes {})",
                                k + 1, rcp_events[k], dims->dump(), h.comms[k].node, shapes.dump());
      }
    }
    if (!problem.empty()) {
      hs_.order_problems.push_back(fmt::format("rank {}: {}", rank, problem));
      order_failed_ = true;
      return;
    }
    for (std::size_t k = 0; k < rcp_events.size(); ++k)
      comm_of_event_[rcp_events[k]] = k;
  }

  // Kind, size and group of a kernel from the host ET's record_param_comms that launched it, for what the Kineto
  // trace's args do not give. Sizes in nccl-tests terms: an all-gather's whole output, a reduce-scatter's whole input,
  // the input of the rest.
  void take_from_host(const RankTrace& t, std::size_t i, const json& ev, const std::vector<std::size_t>& enclosing,
                      bool args_size, bool args_group, CommInfo& info)
  {
    ++hs_.looked_up;
    const HostEt& h = *host_now_;
    const HostComm* hc = nullptr;
    if (link_by_rf_) {
      for (std::size_t k : enclosing) {
        const json* rf = arg(ev[k], "Record function id");
        const double id = rf ? number(*rf, -1) : -1;
        if (!(id >= 0 && fits_int64(id))) continue;
        auto n = h.node_of_rf.find(static_cast<std::int64_t>(id));
        if (n == h.node_of_rf.end()) continue;
        // The node itself or its caller: a nccl:<collective> annotation's parent is its record_param_comms.
        std::int64_t node = n->second;
        for (int depth = 0; depth < 64 && !hc; ++depth) {
          if (auto c = h.comm_of_node.find(node); c != h.comm_of_node.end()) hc = &h.comms[c->second];
          auto p = h.parent.find(node);
          if (p == h.parent.end() || p->second == node) break;
          node = p->second;
        }
        if (hc) break;
      }
    } else {
      for (std::size_t k : enclosing)
        if (ev[k].value("name", json("")) == "record_param_comms") {
          if (auto c = comm_of_event_.find(k); c != comm_of_event_.end()) hc = &h.comms[c->second];
          break;
        }
    }
    const std::string at = fmt::format("{} rank {} event {}", t.file, t.rank, i);
    if (!hc) {
      unlinked(order_failed_
                   ? fmt::format("{}: rank {}'s host execution trace could not be linked in order", at, t.rank)
                   : at + ": no record_param_comms of the host ET encloses its launch");
      return;
    }
    const CommName c = classify(hc->collective);
    if (c.cls == CommClass::Unsupported ||
        (info.cls == CommClass::Collective && c.cls == CommClass::Collective && c.kind != info.kind)) {
      unlinked(fmt::format("{} ({}) is linked to host node {}, a record_param_comms of '{}'", at,
                           info.cls == CommClass::Collective ? to_string(info.kind) : "NCCL kernel", hc->node,
                           hc->collective));
      return;
    }
    ++hs_.linked;
    if (c.cls != CommClass::Collective) return; // point-to-point: no peer modelled, the kernel keeps its time
    info.cls = c.cls;
    info.kind = c.kind;
    if (!args_size) {
      const auto& b = c.kind == CollectiveKind::AllGather ? hc->out_bytes : hc->in_bytes;
      if (b) {
        if (info.bytes && *info.bytes != *b && ++hs_.dims_differ == 1)
          hs_.dims_example =
              fmt::format("{}: {} B from Input Dims, {} B from host node {}", at, *info.bytes, *b, hc->node);
        info.bytes = *b;
        info.source = "host ET";
        ++hs_.sizes;
      }
    }
    if (!args_group) {
      if (const GroupRef* g = host_group(h, *hc)) {
        if (std::find(g->ranks.begin(), g->ranks.end(), t.rank) == g->ranks.end())
          host_fail(h.file, fmt::format("rank {} node {}", t.rank, hc->node),
                    fmt::format("record_param_comms names process group '{}' of ranks {}, which does not hold rank "
                                "{}, the rank of the Kineto trace {} it is paired with",
                                g->name, fmt::join(g->ranks, ","), t.rank, t.file),
                    "pair each host execution trace with the Kineto trace of its own rank");
        info.group = *g;
        ++hs_.groups;
      } else if ((!hc->pg_name.empty() || hc->pg_backend) && h.pg_init_node >= 0 && ++hs_.group_unknown == 1) {
        hs_.group_example =
            fmt::format("{} node {} names process group {}", h.file, hc->node,
                        hc->pg_name.empty() ? fmt::format("of backend {}", *hc->pg_backend) : "'" + hc->pg_name + "'");
      }
    }
  }

  void unlinked(std::string what)
  {
    if (++hs_.unlinked == 1) hs_.unlinked_example = std::move(what);
  }

  // Every host ET must have found its Kineto trace; the notes say what the pairing gave.
  void finish_host_ets()
  {
    if (host_.empty()) return;
    for (const auto& h : host_) {
      const bool paired =
          std::any_of(host_paired_.begin(), host_paired_.end(), [&](const auto& p) { return p.first == &h; });
      if (paired) continue;
      std::string ranks;
      for (const auto& t : traces_)
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(t.rank);
      host_fail(h.file, fmt::format("rank {}", *h.rank),
                fmt::format("this host execution trace is rank {} (from {}), but no Kineto trace of rank {} was given "
                            "(the Kineto traces are ranks {})",
                            *h.rank, h.rank_source, *h.rank, ranks),
                fmt::format("give the Kineto trace of rank {} too, or leave this host execution trace out", *h.rank));
    }
    std::set<std::string> schemas;
    std::string ranks;
    for (const auto& [h, rank] : host_paired_) {
      schemas.insert(h->schema);
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
      if (h->paired_alone)
        notes_.push_back(fmt::format("{}: no rank in the host execution trace or its name; paired with the only Kineto "
                                     "trace given, rank {}",
                                     h->file, rank));
    }
    std::string how;
    if (hs_.ranks_by_rf > 0) how = fmt::format("{} by Record function id = rf_id", hs_.ranks_by_rf);
    if (hs_.ranks_by_order > 0)
      how += fmt::format("{}{} in order (their Kineto traces carry no Record function id: the k-th "
                         "record_param_comms of a rank's Kineto trace in start order is the k-th of its host ET in "
                         "rf_id order, checked against its Input Dims)",
                         how.empty() ? "" : ", ", hs_.ranks_by_order);
    notes_.push_back(fmt::format(
        "host execution traces ({} files, schema {}) paired with the Kineto traces of ranks {}, linked {}: of {} NCCL "
        "kernels whose size or process group the Kineto trace's args do not give, {} were linked to their "
        "record_param_comms node; {} collectives took their size and {} their process group from the host ET; {} "
        "kernels could not be linked{}",
        host_.size(), fmt::join(schemas, ", "), ranks, how, hs_.looked_up, hs_.linked, hs_.sizes, hs_.groups,
        hs_.unlinked, hs_.unlinked > 0 ? " (first: " + hs_.unlinked_example + ")" : ""));
    for (const auto& p : hs_.order_problems)
      notes_.push_back("host execution trace not linked in order, " + p);
    if (hs_.dims_differ > 0)
      notes_.push_back(fmt::format(
          "{} sizes from the host ET differ from the nccl:* annotation's Input Dims (first: {}); the host ET's are "
          "kept: the annotation gives the first input tensor only (an all-gather's output taken as it times the "
          "world size)",
          hs_.dims_differ, hs_.dims_example));
    if (hs_.group_unknown > 0)
      notes_.push_back(fmt::format("{} collectives name a process group that the host ET's process_group:init node "
                                   "does not list (first: {}); they keep the Kineto trace's group",
                                   hs_.group_unknown, hs_.group_example));
    std::size_t no_init = 0;
    std::string first_no_init;
    for (const auto& [h, rank] : host_paired_) {
      if (h->pg_init_node < 0 && no_init++ == 0) first_no_init = h->file;
      if (h->pg_init_node >= 0 && !h->pg_init_problem.empty())
        notes_.push_back(fmt::format("{} node {} (## process_group:init ##): {}; no process group taken from it",
                                     h->file, h->pg_init_node, h->pg_init_problem));
    }
    if (no_init > 0)
      notes_.push_back(fmt::format("{} of the {} host execution traces have no ## process_group:init ## node (first: "
                                   "{}): no process group taken from them",
                                   no_init, host_paired_.size(), first_no_init));
  }

  struct HostStats {
    std::size_t ranks_by_rf = 0, ranks_by_order = 0;
    std::size_t looked_up = 0, linked = 0, sizes = 0, groups = 0, unlinked = 0, dims_differ = 0, group_unknown = 0;
    std::string unlinked_example, dims_example, group_example;
    std::vector<std::string> order_problems;
  };

  std::vector<HostEt> host_;                               ///< KinetoOptions::host_et, read
  std::vector<std::pair<const HostEt*, int>> host_paired_; ///< (host ET, Kineto rank) in reading order
  const HostEt* host_now_ = nullptr;                       ///< the host ET of the rank being read
  bool link_by_rf_ = false, order_failed_ = false;
  std::unordered_map<std::size_t, std::size_t> comm_of_event_; ///< order link: record_param_comms event -> comm
  HostStats hs_;

  KinetoOptions options_;
  std::vector<RankTrace> traces_;
  std::optional<int> world_size_;
  std::map<std::string, GroupRef> pg_config_;
  std::vector<GroupRef> groups_;
  std::map<std::pair<std::vector<int>, std::string>, int> group_index_;
  std::vector<std::string> notes_;
  std::size_t unknown_sizes_ = 0, opaque_nccl_ = 0;
  std::size_t event_ = 0; ///< the event being read, for messages about JSON of an unexpected type
  std::string unknown_size_example_;
};

} // namespace

Workload read_kineto(const std::vector<std::string>& paths, const KinetoOptions& options)
{
  auto docs = load_docs(paths);
  if (docs.empty())
    throw InputError({"", 0, "workload.traces"}, "no Kineto trace given", "list one or more trace files");
  return KinetoReader(options).read(std::move(docs));
}

} // namespace railyard::workloads
