// PyTorch profiler (Kineto) traces in Chrome trace format: GPU activity becomes ops, NCCL kernels collectives.
#include "railyard/workloads/readers.hpp"

#include "file_io.hpp"
#include "names.hpp"

#include "railyard/common/numbers.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
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
    for (auto& d : docs)
      read_doc(d);
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
      }
    }

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
    if (!have_meta) {
      const json* c = arg(e, "correlation");
      auto l = c ? launch.find(static_cast<long long>(number(*c))) : launch.end();
      if (l != launch.end()) {
        const json& le = ev[l->second];
        double at = number(le.value("ts", json(0)));
        auto h = host_ops.find({static_cast<long long>(number(le.value("pid", json(0)))),
                                static_cast<long long>(number(le.value("tid", json(0))))});
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
  return KinetoReader(options).read(load_docs(paths));
}

} // namespace railyard::workloads
