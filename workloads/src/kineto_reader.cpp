// PyTorch profiler (Kineto) traces in Chrome trace format: GPU activity becomes ops, NCCL kernels collectives.
#include "railyard/workloads/readers.hpp"

#include "file_io.hpp"
#include "names.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>

namespace railyard::workloads {

namespace {

using nlohmann::json;

struct TraceDoc {
  std::string name; ///< file, or "archive:member"
  std::string text;
};

std::vector<TraceDoc> load_docs(const std::vector<std::string>& paths)
{
  std::vector<TraceDoc> docs;
  for (const auto& p : paths) {
    if (detail::ends_with(p, ".tar.gz") || detail::ends_with(p, ".tgz") || detail::ends_with(p, ".tar")) {
      auto members = detail::read_archive(p, {".json"});
      if (members.empty())
        throw InputError({p, 0, ""}, "the archive holds no .json trace", "archive the ranks' *.pt.trace.json files");
      std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
      for (auto& m : members)
        docs.push_back({std::move(m.name), std::move(m.data)});
    } else if (detail::ends_with(p, ".gz")) {
      docs.push_back({p, detail::read_gzip_file(p)});
    } else {
      docs.push_back({p, detail::read_file(p)});
    }
  }
  if (docs.empty())
    throw InputError({"", 0, "workload.traces"}, "no Kineto trace given", "list one or more trace files");
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

// A value of a trace the reader cannot use: nlohmann-json's type_error for a value of another JSON type than the format
// has, or this for a number that cannot be the id, rank or count it stands for. Thrown where the value is read and
// turned by KinetoReader::read_doc_checked into an InputError naming the file, the rank and the event.
struct BadValue : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Ranks and world sizes beyond this are not a real job's; bounding them keeps the per-rank tables small.
constexpr double kMaxRanks = 1 << 24;

// An id (correlation, pid, tid, stream) as an integer: casting a non-finite double or one beyond 2^63 is undefined.
long long whole_number(double v, const char* what)
{
  if (!(std::fabs(v) < 9.2e18)) throw BadValue(fmt::format("{} is {}, not a whole number", what, v));
  return static_cast<long long>(v);
}

int rank_number(double v, const char* what, double min = 0)
{
  if (!(v >= min && v < kMaxRanks))
    throw BadValue(fmt::format("{} is {}, outside {}..{}", what, v, min, static_cast<long long>(kMaxRanks) - 1));
  return static_cast<int>(v);
}

double number(const json& v, double fallback = 0.0)
{
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      return std::stod(v.get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return fallback;
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
  for (auto it = std::sregex_iterator(s.begin(), s.end(), num); it != std::sregex_iterator(); ++it)
    out.push_back(rank_number(std::strtod(it->str().c_str(), nullptr), "a rank of args.Process Group Ranks"));
  return out;
}

GroupKind kind_from_description(const std::string& text)
{
  std::string l = detail::lower(text);
  auto has = [&](const char* p) { return l.find(p) != std::string::npos; };
  if (has("tensor") || has("tp_") || has("_tp")) return GroupKind::TP;
  if (has("pipeline") || has("pp_") || has("_pp")) return GroupKind::PP;
  if (has("expert") || has("ep_") || has("_ep")) return GroupKind::EP;
  if (has("context") || has("cp_") || has("_cp")) return GroupKind::CP;
  if (has("data") || has("dp_") || has("_dp")) return GroupKind::DP;
  return GroupKind::Other;
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

struct PendingOp {
  double ts_us = 0, dur_us = 0;
  double launch_us = std::numeric_limits<double>::quiet_NaN(); ///< ts of the CUDA runtime call that launched it
  std::size_t event = 0;
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
    for (auto& d : docs)
      read_doc_checked(d);
    return assemble();
  }

private:
  struct RankTrace {
    int rank = 0;
    std::string file;
    std::vector<PendingOp> ops;
    std::map<std::uint64_t, std::string> stream_names;
    double t0 = 0, t1 = 0;
  };

  [[noreturn]] void fail(const std::string& file, const std::string& field, std::string rule, std::string fix)
  {
    throw InputError({file, 0, field}, std::move(rule), std::move(fix));
  }

  int group_index(const GroupRef& g)
  {
    auto key = std::make_pair(g.ranks, g.name);
    auto it = group_index_.find(key);
    if (it != group_index_.end()) return it->second;
    groups_.push_back(g);
    return group_index_[key] = static_cast<int>(groups_.size() - 1);
  }

  void read_doc_checked(TraceDoc& doc)
  {
    rank_ = static_cast<int>(traces_.size());
    event_ = kNoEvent;
    try {
      read_doc(doc);
    } catch (const json::exception& e) {
      fail(doc.name, where(), fmt::format("a value of the wrong JSON type: {}", e.what()),
           "give the trace as the profiler wrote it (Chrome trace JSON)");
    } catch (const BadValue& e) {
      fail(doc.name, where(), e.what(), "give the trace as the profiler wrote it (Chrome trace JSON)");
    }
  }

  [[nodiscard]] std::string where() const
  {
    return event_ == kNoEvent ? fmt::format("rank {}", rank_) : fmt::format("rank {} event {}", rank_, event_);
  }

  void read_doc(TraceDoc& doc)
  {
    json j;
    try {
      j = json::parse(doc.text);
    } catch (const json::parse_error& e) {
      fail(doc.name, fmt::format("rank {} byte {}", guess_rank(doc.text), e.byte),
           fmt::format("malformed JSON: {}", e.what()), "give the trace as the profiler wrote it (Chrome trace JSON)");
    } catch (const json::exception& e) {
      // nlohmann-json reports a number too large for a double (1e400) as out_of_range, not as a parse_error.
      fail(doc.name, fmt::format("rank {}", guess_rank(doc.text)), fmt::format("malformed JSON: {}", e.what()),
           "give the trace as the profiler wrote it (Chrome trace JSON)");
    }
    doc.text.clear();
    doc.text.shrink_to_fit();
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
      t.rank = rank_number(number((*dist)["rank"], t.rank), "distributedInfo.rank");
    else
      notes_.push_back(
          fmt::format("{}: no distributedInfo.rank; taken as rank {} from its position", doc.name, t.rank));
    rank_ = t.rank;
    if (!events)
      fail(doc.name, fmt::format("rank {}", t.rank), "no traceEvents array",
           "give a PyTorch profiler trace (Chrome trace JSON with traceEvents)");
    if (dist && dist->contains("world_size")) {
      int ws = rank_number(number((*dist)["world_size"]), "distributedInfo.world_size", 1);
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
            g.ranks.push_back(rank_number(r.get<double>(), "a rank of distributedInfo.pg_config"));
        pg_config_[name] = g;
      }

    // Launches by correlation id, and the host ops of each thread, to find what launched a kernel.
    std::map<long long, std::size_t> launch;
    std::map<std::pair<long long, long long>, std::vector<std::size_t>> host_ops;
    const auto& ev = *events;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      const json& e = ev[i];
      event_ = i;
      if (!e.is_object()) continue;
      std::string cat = detail::lower(e.value("cat", ""));
      if (cat == "cuda_runtime" || cat == "cuda_driver") {
        if (const json* c = arg(e, "correlation")) launch[whole_number(number(*c), "correlation")] = i;
      } else if ((cat == "cpu_op" || cat == "user_annotation") && e.value("ph", "") == "X") {
        host_ops[{whole_number(number(e.value("pid", json(0))), "pid"),
                  whole_number(number(e.value("tid", json(0))), "tid")}]
            .push_back(i);
      }
    }

    bool first = true;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      const json& e = ev[i];
      event_ = i;
      if (!e.is_object() || e.value("ph", "") != "X") continue;
      std::string cat = detail::lower(e.value("cat", ""));
      if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
      PendingOp p;
      p.event = i;
      p.name = e.value("name", "");
      if (!e.contains("ts"))
        fail(doc.name, fmt::format("rank {} event {}", t.rank, i), "GPU event without a timestamp (ts)",
             "give the trace as the profiler wrote it");
      p.ts_us = number(e["ts"]);
      p.dur_us = number(e.value("dur", json(0)));
      if (const json* c = arg(e, "correlation")) {
        auto l = launch.find(whole_number(number(*c), "correlation"));
        if (l != launch.end() && ev[l->second].contains("ts")) p.launch_us = number(ev[l->second]["ts"]);
      }
      if (p.dur_us < 0)
        fail(doc.name, fmt::format("rank {} event {}", t.rank, i), fmt::format("negative duration {} us", p.dur_us),
             "give the trace as the profiler wrote it");
      const json* s = arg(e, "stream");
      p.stream_key =
          static_cast<std::uint64_t>(whole_number(s ? number(*s) : number(e.value("tid", json(0))), "stream"));
      t.stream_names.emplace(p.stream_key, fmt::format("stream {}", p.stream_key));
      if (cat == "gpu_memcpy") {
        const json* b = arg(e, "bytes");
        p.op = Op::make_memcpy(Bytes(b ? number(*b) : 0.0), 0);
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
    if (!have_meta) {
      const json* c = arg(e, "correlation");
      auto l = c ? launch.find(whole_number(number(*c), "correlation")) : launch.end();
      if (l != launch.end()) {
        const json& le = ev[l->second];
        double at = number(le.value("ts", json(0)));
        auto h = host_ops.find({whole_number(number(le.value("pid", json(0))), "pid"),
                                whole_number(number(le.value("tid", json(0))), "tid")});
        if (h != host_ops.end()) {
          // Innermost first: the enclosing op that starts last.
          std::vector<std::size_t> enclosing;
          for (std::size_t k : h->second) {
            const json& o = ev[k];
            double ts = number(o.value("ts", json(0)));
            if (ts <= at && at <= ts + number(o.value("dur", json(0)))) enclosing.push_back(k);
          }
          std::sort(enclosing.begin(), enclosing.end(), [&](std::size_t a, std::size_t b) {
            return number(ev[a].value("ts", json(0))) > number(ev[b].value("ts", json(0)));
          });
          for (std::size_t k : enclosing)
            if (from_args(ev[k], info)) {
              have_meta = true;
              break;
            }
          if (!have_meta)
            for (std::size_t k : enclosing) {
              std::string n = ev[k].value("name", "");
              if (n.rfind("nccl:", 0) == 0 && from_input_dims(ev[k], n, info)) {
                have_meta = true;
                break;
              }
            }
        }
      }
    }
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
      comm_of_group[gi] = w.add_communicator(name, kind_from_description(g.desc + " " + g.name), std::move(members));
    }
    // Kineto's timestamps come from one clock per job here (the collectives of the 8 DLRM ranks end at the same
    // microsecond), so each rank's origin is kept relative to the earliest one.
    double t0_min = traces_.front().t0;
    for (const auto& t : traces_)
      t0_min = std::min(t0_min, t.t0);
    for (auto& t : traces_)
      w.add_rank(build(t, comm_of_group, t0_min));
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
    b.set_measured_span(units::us(t.t1 - t.t0));
    b.set_clock_offset(units::us(t.t0 - t0_min));
    t.ops.clear();
    return b.finish();
  }

  static constexpr std::size_t kNoEvent = std::numeric_limits<std::size_t>::max();

  KinetoOptions options_;
  int rank_ = 0;                 // rank of the trace being read, for messages
  std::size_t event_ = kNoEvent; // index of the event being read, for messages
  std::vector<RankTrace> traces_;
  std::optional<int> world_size_;
  std::map<std::string, GroupRef> pg_config_;
  std::vector<GroupRef> groups_;
  std::map<std::pair<std::vector<int>, std::string>, int> group_index_;
  std::vector<std::string> notes_;
  std::size_t unknown_sizes_ = 0, opaque_nccl_ = 0;
  std::string unknown_size_example_;
};

} // namespace

Workload read_kineto(const std::vector<std::string>& paths, const KinetoOptions& options)
{
  return KinetoReader(options).read(load_docs(paths));
}

} // namespace railyard::workloads
