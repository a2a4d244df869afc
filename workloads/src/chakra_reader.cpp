// Chakra execution traces: one varint-length-delimited protobuf stream per rank, GlobalMetadata then Nodes
// (mlcommons/chakra schema/protobuf/et_def.proto, as ASTRA-sim's ETFeeder reads them).
#include "railyard/workloads/readers.hpp"

#include "et_def.pb.h"
#include "file_io.hpp"

#include "railyard/common/numbers.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <limits>
#include <map>
#include <queue>
#include <regex>
#include <set>
#include <unordered_map>

namespace railyard::workloads {

namespace {

namespace fs = std::filesystem;
using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;

// Streams of a Chakra rank: ASTRA-sim runs one GPU compute node at a time, CPU nodes on the host, and PyTorch's
// ProcessGroupNCCL gives each process group its own NCCL stream.
constexpr StreamId kComputeStream = 0;
constexpr StreamId kCpuStream = 1;
constexpr StreamId kMemoryStream = 2;
constexpr StreamId kFirstCommStream = 16;

// Rank files of one trace: far more than any traced job (2^20, the most GPUs a cluster here has).
constexpr std::int64_t kMaxRankFiles = 1 << 20;

struct RankFile {
  int rank = 0;
  std::string path;                ///< the file, or "archive.tar.gz:member/prefix.0.et"
  std::optional<std::string> data; ///< the bytes of an archive member (a plain file is read when its rank is)
};

// The rank files of a trace set and its comm_group.json: a file's name, and its text when it came from an archive.
struct TraceSet {
  std::vector<RankFile> files;
  std::string comm_group_name;
  std::optional<std::string> comm_group_text;
};

bool is_archive(const std::string& path)
{
  return detail::ends_with(path, ".tar.gz") || detail::ends_with(path, ".tgz") || detail::ends_with(path, ".tar");
}

// Ranks 0..n-1 without gaps; `found` maps a rank to its file.
std::vector<RankFile> contiguous_ranks(std::map<int, RankFile> found, const std::string& prefix)
{
  std::vector<RankFile> out;
  for (auto& [rank, file] : found) {
    if (rank != static_cast<int>(out.size()))
      throw InputError(
          {fmt::format("{}.{}.et", prefix, out.size()), 0, fmt::format("rank {}", out.size())},
          fmt::format("the trace of rank {} is missing (found up to rank {})", out.size(), found.rbegin()->first),
          "give one file per rank, numbered from 0 without gaps");
    out.push_back(std::move(file));
  }
  return out;
}

int rank_of_name(const std::string& digits, const std::string& file)
{
  try {
    return static_cast<int>(parse_integer(digits, 0, kMaxRankFiles - 1));
  } catch (const std::invalid_argument& e) {
    throw InputError({file, 0, "rank"}, fmt::format("the rank in the file name: {}", e.what()),
                     "number the files <prefix>.0.et, <prefix>.1.et, ... one per rank");
  }
}

// A .tar, .tar.gz or .tgz holding one trace set: members <prefix>.<rank>.et (the rank from the name, as ASTRA-sim
// names the files it reads), and comm_group.json beside them if any. macOS "._" resource forks are skipped.
TraceSet read_archive_set(const std::string& archive)
{
  static const std::regex rank_member(R"(^(.*)\.(\d+)\.et$)");
  auto members = detail::read_archive(archive, {".et", "comm_group.json"});
  std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  TraceSet set;
  std::map<int, RankFile> found;
  std::string prefix;
  std::vector<detail::ArchiveMember> groups;
  for (auto& m : members) {
    std::smatch match;
    if (detail::ends_with(m.name, "comm_group.json")) {
      groups.push_back(std::move(m));
      continue;
    }
    if (!std::regex_match(m.name, match, rank_member)) continue; // a .et file without a rank, not part of the set
    if (prefix.empty()) prefix = match[1];
    if (match[1] != prefix)
      throw InputError(
          {m.name, 0, ""},
          fmt::format("the archive holds two trace sets, {}.<rank>.et and {}.<rank>.et", prefix, std::string(match[1])),
          "archive one trace set (the per-rank files of one run) per archive");
    const int rank = rank_of_name(match[2], m.name);
    if (found.count(rank))
      throw InputError({m.name, 0, fmt::format("rank {}", rank)},
                       fmt::format("rank {} has two files, {} and {}", rank, found[rank].path, m.name),
                       "keep one file per rank");
    found[rank] = RankFile{rank, m.name, std::move(m.data)};
  }
  if (found.empty()) {
    for (const auto& m : detail::read_archive(archive, {".json"}))
      if (const std::string kind = detail::sniff_trace_kind(m.data); !kind.empty())
        throw InputError(
            {archive, 0, ""},
            fmt::format("the archive holds no Chakra trace but JSON ({}: {})", m.name, detail::read_it_as(kind)),
            "name the trace kind the archive holds in the scenario's trace:");
    throw InputError({archive, 0, ""}, "the archive holds no Chakra trace (no member named <prefix>.<rank>.et)",
                     "archive the per-rank files <prefix>.0.et, <prefix>.1.et, ...");
  }
  set.files = contiguous_ranks(std::move(found), prefix);
  // comm_group.json in the folder of the traces, as ASTRA-sim's examples keep it (or anywhere, if only one).
  const std::string folder = prefix.substr(0, prefix.find_last_of('/') + 1);
  for (auto& g : groups)
    if (g.name == folder + "comm_group.json" || groups.size() == 1) {
      set.comm_group_name = g.name;
      set.comm_group_text = std::move(g.data);
      break;
    }
  return set;
}

std::vector<RankFile> find_rank_files(const std::string& prefix_in)
{
  std::string prefix = prefix_in;
  static const std::regex rank_suffix(R"(^(.*)\.(\d+)\.et$)");
  std::smatch m;
  std::error_code ec; // a name the system cannot look up (too long) is not a file; found stays empty below
  if (fs::is_regular_file(prefix, ec) && std::regex_match(prefix, m, rank_suffix)) prefix = m[1];
  fs::path p(prefix);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string base = p.filename().string();
  std::map<int, RankFile> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= base.size() + 4 || name.compare(0, base.size() + 1, base + ".") != 0 ||
        !detail::ends_with(name, ".et"))
      continue;
    std::string digits = name.substr(base.size() + 1, name.size() - base.size() - 4);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const int rank = rank_of_name(digits, entry.path().string());
    found[rank] = RankFile{rank, entry.path().string(), std::nullopt};
  }
  if ((ec || found.empty()) && fs::is_regular_file(prefix_in, ec))
    if (const std::string kind = detail::sniff_trace_kind(detail::read_gzip_file(prefix_in)); !kind.empty())
      throw InputError({prefix_in, 0, ""}, "not a Chakra trace set: " + detail::read_it_as(kind),
                       "name the file's trace kind in the scenario's trace:");
  if (ec || found.empty())
    throw InputError({prefix + ".<rank>.et", 0, ""}, "no Chakra trace files found",
                     "give the prefix of files named <prefix>.0.et, <prefix>.1.et, ..., or a .tar.gz of them");
  return contiguous_ranks(std::move(found), prefix);
}

const AttributeProto* find_attr(const Node& n, std::string_view name)
{
  for (const auto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

// An integer attribute of a node, whatever integer, floating or string type the trace stores it in. A value that no
// int64 holds (a uint64 above 2^63, a NaN or 1e300 double, a string that is not a whole number) is refused at the
// node: casting it would wrap or be undefined.
template <class Where>
std::optional<std::int64_t> attr_int(const Node& n, std::string_view name, const Where& where)
{
  const AttributeProto* a = find_attr(n, name);
  if (!a) return std::nullopt;
  const auto refuse = [&](const std::string& value) -> std::int64_t {
    throw InputError(where(),
                     fmt::format("attribute {} is {}, which is not a whole number a 64-bit integer holds", name, value),
                     "give the trace as the converter wrote it");
  };
  const auto from_double = [&](double d) {
    if (!(d >= -9.2e18 && d <= 9.2e18)) return refuse(fmt::format("{}", d));
    return static_cast<std::int64_t>(d);
  };
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  switch (a->value_case()) {
  case AttributeProto::kInt32Val:
    return a->int32_val();
  case AttributeProto::kInt64Val:
    return a->int64_val();
  case AttributeProto::kUint32Val:
    return a->uint32_val();
  case AttributeProto::kUint64Val:
    return a->uint64_val() > kMax ? refuse(std::to_string(a->uint64_val()))
                                  : static_cast<std::int64_t>(a->uint64_val());
  case AttributeProto::kSint32Val:
    return a->sint32_val();
  case AttributeProto::kSint64Val:
    return a->sint64_val();
  case AttributeProto::kFixed32Val:
    return a->fixed32_val();
  case AttributeProto::kFixed64Val:
    return a->fixed64_val() > kMax ? refuse(std::to_string(a->fixed64_val()))
                                   : static_cast<std::int64_t>(a->fixed64_val());
  case AttributeProto::kSfixed32Val:
    return a->sfixed32_val();
  case AttributeProto::kSfixed64Val:
    return a->sfixed64_val();
  case AttributeProto::kBoolVal:
    return a->bool_val() ? 1 : 0;
  case AttributeProto::kDoubleVal:
    return from_double(a->double_val());
  case AttributeProto::kFloatVal:
    return from_double(a->float_val());
  case AttributeProto::kStringVal:
    try {
      return parse_integer(a->string_val(), std::numeric_limits<std::int64_t>::min(),
                           std::numeric_limits<std::int64_t>::max());
    } catch (const std::invalid_argument&) {
      return refuse("'" + a->string_val() + "'");
    }
  default:
    return std::nullopt;
  }
}

template <class Where>
std::optional<std::string> attr_string(const Node& n, std::string_view name, const Where& where)
{
  const AttributeProto* a = find_attr(n, name);
  if (!a) return std::nullopt;
  if (a->value_case() == AttributeProto::kStringVal) return a->string_val();
  if (auto v = attr_int(n, name, where)) return std::to_string(*v);
  return std::nullopt;
}

// A rank, root or tag as the int the op graph stores.
template <class Where>
int as_int(std::int64_t v, const char* what, const Where& where)
{
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw InputError(where(), fmt::format("{} {} does not fit a 32-bit integer", what, v),
                     "give the trace as the converter wrote it");
  return static_cast<int>(v);
}

std::optional<models::CollectiveKind> collective_of(std::int64_t comm_type)
{
  using ChakraProtoMsg::CollectiveCommType;
  switch (comm_type) {
  case ChakraProtoMsg::ALL_REDUCE:
    return CollectiveKind::AllReduce;
  case ChakraProtoMsg::REDUCE:
    return CollectiveKind::Reduce;
  case ChakraProtoMsg::ALL_GATHER:
    return CollectiveKind::AllGather;
  case ChakraProtoMsg::BROADCAST:
    return CollectiveKind::Broadcast;
  case ChakraProtoMsg::ALL_TO_ALL:
    return CollectiveKind::AllToAll;
  case ChakraProtoMsg::REDUCE_SCATTER:
  case ChakraProtoMsg::REDUCE_SCATTER_BLOCK:
    return CollectiveKind::ReduceScatter;
  case ChakraProtoMsg::BARRIER: // NCCL has no barrier; PyTorch implements it as a one-element all-reduce
    return CollectiveKind::AllReduce;
  default:
    return std::nullopt;
  }
}

// Which list of a node a dependency came from, to name it in errors.
enum class DepList : std::uint8_t { Data, Ctrl };

const char* dep_list_name(DepList l)
{
  return l == DepList::Data ? "data_deps" : "ctrl_deps";
}

struct Dep {
  std::uint32_t node; ///< file index of the node depended on
  DepList kind;
};

// A trace converted from PyTorch by chakra's converter carries the host trace's schema version in the GlobalMetadata
// attribute "schema" (src/converter/pytorch_converter.py, encode_global_metadata: schema, pid, time, start_ts,
// finish_ts); ASTRA-sim's generated traces set `version` (0.0.4) or other attributes instead.
std::optional<std::string> pytorch_schema(const ChakraProtoMsg::GlobalMetadata& meta)
{
  for (const auto& a : meta.attr())
    if (a.name() == "schema") return a.value_case() == AttributeProto::kStringVal ? a.string_val() : "?";
  return std::nullopt;
}

class ChakraReader {
public:
  explicit ChakraReader(TraceSet set) : files_(std::move(set.files)), comm_group_file_(std::move(set.comm_group_name))
  {
    comm_group_text_ = std::move(set.comm_group_text);
  }

  Workload read()
  {
    const int world = static_cast<int>(files_.size());
    std::vector<int> all(world);
    for (int r = 0; r < world; ++r)
      all[r] = r;
    w_.source = files_.front().path;
    world_comm_ = w_.add_communicator("world", GroupKind::Other, all);
    if (!comm_group_file_.empty()) read_comm_groups();
    for (auto& f : files_)
      w_.add_rank(read_rank(f));
    add_notes();
    validate(w_);
    return std::move(w_);
  }

private:
  void read_comm_groups()
  {
    std::string text = comm_group_text_ ? *comm_group_text_ : detail::read_file(comm_group_file_);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw InputError({comm_group_file_, 0, fmt::format("byte {}", e.byte)}, "malformed JSON",
                       "comm_group.json maps group ids to rank lists: {\"0\": [0, 1], ...}");
    } catch (const nlohmann::json::exception& e) { // out_of_range: a number beyond a double, such as 1e999
      throw InputError({comm_group_file_, 0, ""}, fmt::format("malformed JSON: {}", e.what()),
                       "comm_group.json maps group ids to rank lists: {\"0\": [0, 1], ...}");
    }
    if (!j.is_object())
      throw InputError({comm_group_file_, 0, ""}, "expected a JSON object of group id -> rank list",
                       "write {\"0\": [0, 1], ...}");
    // Numeric order of the ids, so communicator ids do not depend on the JSON object's key order.
    std::vector<std::pair<long long, std::string>> keys;
    for (auto it = j.begin(); it != j.end(); ++it) {
      try {
        keys.emplace_back(
            parse_integer(it.key(), std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()),
            it.key());
      } catch (const std::exception&) {
        throw InputError({comm_group_file_, 0, it.key()}, "group ids must be integers, as ASTRA-sim reads them",
                         "rename the group to its integer id");
      }
    }
    std::sort(keys.begin(), keys.end());
    for (const auto& [id, key] : keys) {
      const auto& members = j.at(key);
      std::vector<int> ranks;
      if (!members.is_array())
        throw InputError({comm_group_file_, 0, key}, "a group must list its member ranks", "write [0, 1, ...]");
      for (const auto& m : members) {
        // Compared as int64: get<int> of 2^32 would wrap into a valid rank.
        if (!m.is_number_integer() || m.get<std::int64_t>() < 0 ||
            m.get<std::int64_t>() >= static_cast<std::int64_t>(files_.size()))
          throw InputError({comm_group_file_, 0, key},
                           fmt::format("member {} is not a rank of this trace ({} ranks)", m.dump(), files_.size()),
                           "list ranks that have a trace file");
        ranks.push_back(m.get<int>());
      }
      groups_[key] = w_.add_communicator("comm_group " + key, GroupKind::Other, std::move(ranks));
    }
  }

  // PyTorch-converted traces define their process groups in a METADATA_NODE ("## process_group:init ##") whose
  // inputs.values hold JSON: [{"pg_name": "0", "ranks": [...]}, ...]; empty ranks mean the whole world.
  template <class Where>
  void read_pg_metadata(const Node& n, const Where& where)
  {
    const std::string& v = n.inputs().values();
    auto b = v.find("[{");
    auto e = v.rfind("}]");
    if (b == std::string::npos || e == std::string::npos || e < b) return;
    nlohmann::json j = nlohmann::json::parse(v.substr(b, e + 2 - b), nullptr, false);
    if (j.is_discarded() || !j.is_array()) return;
    for (const auto& g : j) {
      if (!g.contains("pg_name")) continue;
      std::string name = g["pg_name"].is_string() ? g["pg_name"].get<std::string>() : g["pg_name"].dump();
      if (groups_.count(name)) continue;
      std::vector<int> ranks;
      if (g.contains("ranks") && g["ranks"].is_array())
        for (const auto& r : g["ranks"]) {
          if (!r.is_number_integer() || r.get<std::int64_t>() < 0 ||
              r.get<std::int64_t>() >= static_cast<std::int64_t>(files_.size()))
            throw InputError(where(),
                             fmt::format("process group '{}' lists rank {}, not a rank of this trace ({} ranks)", name,
                                         r.dump(), files_.size()),
                             "give the trace as the converter wrote it");
          ranks.push_back(static_cast<int>(r.get<std::int64_t>()));
        }
      if (ranks.empty()) ranks = w_.communicators[world_comm_].ranks;
      std::string desc = g.contains("pg_desc") && g["pg_desc"].is_string() ? g["pg_desc"].get<std::string>() : "";
      groups_[name] = w_.add_communicator("pg " + name + (desc.empty() ? "" : " (" + desc + ")"), GroupKind::Other,
                                          std::move(ranks));
    }
  }

  // The GlobalMetadata and the nodes of one rank's file, in file order. An archive member's bytes are released here.
  std::vector<Node> parse_file(RankFile& f, ChakraProtoMsg::GlobalMetadata& meta)
  {
    std::string data = f.data ? std::move(*f.data) : detail::read_file(f.path);
    f.data.reset();
    std::vector<Node> nodes;
    std::size_t off = 0;
    bool metadata = true;
    std::uint64_t last_id = 0;
    while (off < data.size()) {
      auto where = [&](std::size_t at) {
        std::string after = nodes.empty() ? std::string("after the metadata") : fmt::format("after node {}", last_id);
        return InputLocation{f.path, 0, fmt::format("rank {} byte offset {} ({})", f.rank, at, after)};
      };
      const std::size_t remaining = std::min<std::size_t>(data.size() - off, INT_MAX);
      google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(data.data() + off),
                                                static_cast<int>(remaining));
      std::uint32_t len = 0;
      if (!in.ReadVarint32(&len))
        throw InputError(where(off), "truncated protobuf: the varint length prefix runs past the end of the file",
                         "the file was cut short; copy or generate it again");
      const std::size_t body = off + static_cast<std::size_t>(in.CurrentPosition());
      if (len > data.size() - body)
        throw InputError(where(off),
                         fmt::format("truncated protobuf: the length prefix at byte offset {} says the message has {} "
                                     "bytes but only {} remain in the file ({} bytes)",
                                     off, len, data.size() - body, data.size()),
                         "the file was cut short; copy or generate it again");
      auto limit = in.PushLimit(static_cast<int>(len));
      bool ok;
      if (metadata) {
        ok = meta.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
      } else {
        nodes.emplace_back();
        ok = nodes.back().ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
        if (ok) last_id = nodes.back().id();
      }
      in.PopLimit(limit);
      if (!ok)
        throw InputError(where(off),
                         fmt::format("the {} message of {} bytes does not parse as et_def.proto {}",
                                     metadata ? "first" : "next", len, metadata ? "GlobalMetadata" : "Node"),
                         "check that this is a Chakra ET file (schema 0.0.4 or later)");
      metadata = false;
      off = body + len;
    }
    if (metadata)
      throw InputError({f.path, 0, fmt::format("rank {}", f.rank)}, "the file is empty: no GlobalMetadata message",
                       "give a Chakra ET file");
    return nodes;
  }

  int communicator_for(const Node& n, const RankFile& f)
  {
    auto pg = attr_string(n, "pg_name", [&] {
      return InputLocation{f.path, 0, fmt::format("rank {} node {}", f.rank, n.id())};
    });
    if (!pg || pg->empty()) return world_comm_;
    auto it = groups_.find(*pg);
    if (it == groups_.end())
      throw InputError({f.path, 0, fmt::format("rank {} node {}", f.rank, n.id())},
                       fmt::format("pg_name '{}' names no known communicator", *pg),
                       comm_group_file_.empty() ? "put comm_group.json (group id -> ranks) next to the traces"
                                                : "add the group to " + comm_group_file_);
    return it->second;
  }

  int group_rank(int comm, int global, const Node& n, const RankFile& f, const char* what)
  {
    const auto& ranks = w_.communicators[comm].ranks;
    auto it = std::find(ranks.begin(), ranks.end(), global);
    if (it == ranks.end())
      throw InputError(
          {f.path, 0, fmt::format("rank {} node {}", f.rank, n.id())},
          fmt::format("{} rank {} is not a member of communicator '{}'", what, global, w_.communicators[comm].name),
          "use a rank of the node's process group");
    return static_cast<int>(it - ranks.begin());
  }

  StreamId comm_stream(int comm)
  {
    auto s = static_cast<StreamId>(kFirstCommStream + comm);
    stream_labels_[s] = "nccl " + w_.communicators[comm].name;
    return s;
  }

  RankGraph read_rank(RankFile& f)
  {
    ChakraProtoMsg::GlobalMetadata meta;
    std::vector<Node> nodes = parse_file(f, meta);
    const auto n = nodes.size();
    auto at = [&](std::size_t i) {
      return InputLocation{f.path, 0, fmt::format("rank {} node {}", f.rank, nodes[i].id())};
    };
    std::unordered_map<std::uint64_t, std::uint32_t> index;
    index.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      if (!index.emplace(nodes[i].id(), static_cast<std::uint32_t>(i)).second)
        throw InputError(at(i), fmt::format("node id {} appears twice", nodes[i].id()), "give every node its own id");
    // The dependency rule (workloads/README.md, "Chakra execution traces"). A node runs after the nodes its data_deps
    // name, as chakra's ETFeeder resolves them (mlcommons/chakra src/feeder/et_feeder.cpp: data_deps alone). Its
    // ctrl_deps count as well, as ASTRA-sim's FeederV3 reads them, except in a trace converted from PyTorch: there they
    // are the host trace's caller->callee parent links (chakra src/converter/pytorch_converter.py), which name nodes
    // the converter left out and form cycles, and the converter wrote the execution order into data_deps.
    const std::optional<std::string> schema = pytorch_schema(meta);
    std::vector<std::vector<Dep>> deps(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto add = [&](const auto& list, DepList kind) {
        for (std::uint64_t d : list) {
          auto it = index.find(d);
          if (it == index.end()) throw_dangling(f, nodes[i], d, kind);
          deps[i].push_back({it->second, kind});
        }
      };
      add(nodes[i].data_deps(), DepList::Data);
      if (!schema) add(nodes[i].ctrl_deps(), DepList::Ctrl);
    }
    if (schema) tally_parent_links(f, nodes, index, *schema);
    // Topological order, smallest file position first among ready nodes (ASTRA-sim issues ready nodes by id), so
    // stream order never contradicts a dependency.
    std::vector<std::uint32_t> indeg(n, 0);
    std::vector<std::vector<std::uint32_t>> succ(n);
    for (std::uint32_t i = 0; i < n; ++i)
      for (auto d : deps[i]) {
        ++indeg[i];
        succ[d.node].push_back(i);
      }
    std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready;
    for (std::uint32_t i = 0; i < n; ++i)
      if (indeg[i] == 0) ready.push(i);
    std::vector<std::uint32_t> order;
    order.reserve(n);
    std::vector<bool> done(n, false);
    while (!ready.empty()) {
      auto v = ready.top();
      ready.pop();
      order.push_back(v);
      done[v] = true;
      for (auto s : succ[v])
        if (--indeg[s] == 0) ready.push(s);
    }
    if (order.size() != n) throw_cycle(f, nodes, deps, done);

    stream_labels_.clear();
    RankGraphBuilder b(f.path, SourceKind::NodeId);
    std::vector<OpId> op_of(n);
    for (auto i : order) {
      const Node& node = nodes[i];
      Op op;
      std::optional<Seconds> runtime;
      if (node.duration_micros() > 0) runtime = units::us(static_cast<double>(node.duration_micros()));
      const auto here = [&] { return at(i); };
      bool cpu = attr_int(node, "is_cpu_op", here).value_or(0) != 0;
      switch (node.type()) {
      case ChakraProtoMsg::COMP_NODE:
        op = Op::make_compute(static_cast<double>(attr_int(node, "num_ops", here).value_or(0)),
                              Bytes(static_cast<double>(attr_int(node, "tensor_size", here).value_or(0))),
                              cpu ? kCpuStream : kComputeStream);
        if (!runtime) runtime = Seconds(0); // ASTRA-sim replays a runtime-less node as (almost) free
        break;
      case ChakraProtoMsg::COMM_COLL_NODE: {
        if (cpu) {
          op = host_side(node, f, runtime);
          break;
        }
        auto type = attr_int(node, "comm_type", here);
        if (!type)
          throw InputError(
              at(i),
              "COMM_COLL_NODE without a comm_type attribute on the GPU (is_cpu_op false or absent): a "
              "collective of unknown kind",
              "add comm_type (et_def.proto CollectiveCommType: ALL_REDUCE = 0, ALL_GATHER = 2, BROADCAST = "
              "5, ...); if the node is the host side of a collective (a c10d:: call), set is_cpu_op true "
              "and it runs as a CPU op of its duration_micros");
        auto kind = collective_of(*type);
        if (!kind)
          throw InputError(at(i),
                           fmt::format("collective comm_type {} ({}) is not supported", *type,
                                       ChakraProtoMsg::CollectiveCommType_IsValid(static_cast<int>(*type))
                                           ? ChakraProtoMsg::CollectiveCommType_Name(
                                                 static_cast<ChakraProtoMsg::CollectiveCommType>(*type))
                                           : "unknown"),
                           "use ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL or REDUCE_SCATTER");
        auto size = attr_int(node, "comm_size", here);
        if (!size) throw InputError(at(i), "COMM_COLL_NODE without a comm_size attribute", "add comm_size in bytes");
        int comm = communicator_for(node, f);
        int root = -1;
        if (*kind == CollectiveKind::Broadcast || *kind == CollectiveKind::Reduce) {
          auto r = attr_int(node, "root", here);
          root = r ? group_rank(comm, as_int(*r, "root", here), node, f, "root") : 0;
        }
        op = Op::make_collective(*kind, Bytes(static_cast<double>(*size)), comm, root, comm_stream(comm));
        break;
      }
      case ChakraProtoMsg::COMM_SEND_NODE:
      case ChakraProtoMsg::COMM_RECV_NODE: {
        if (cpu) {
          op = host_side(node, f, runtime);
          break;
        }
        bool send = node.type() == ChakraProtoMsg::COMM_SEND_NODE;
        const char* peer_attr = send ? "comm_dst" : "comm_src";
        auto peer = attr_int(node, peer_attr, here);
        auto size = attr_int(node, "comm_size", here);
        if (!peer || !size)
          throw InputError(
              at(i), fmt::format("{} needs {} and comm_size", send ? "COMM_SEND_NODE" : "COMM_RECV_NODE", peer_attr),
              "add the peer's rank and the size in bytes");
        int comm = communicator_for(node, f);
        int p = group_rank(comm, as_int(*peer, peer_attr, here), node, f, send ? "destination" : "source");
        int tag = as_int(attr_int(node, "comm_tag", here).value_or(0), "comm_tag", here);
        op = send ? Op::make_send(comm, p, Bytes(static_cast<double>(*size)), tag, comm_stream(comm))
                  : Op::make_recv(comm, p, Bytes(static_cast<double>(*size)), tag, comm_stream(comm));
        break;
      }
      case ChakraProtoMsg::MEM_LOAD_NODE:
      case ChakraProtoMsg::MEM_STORE_NODE:
        op =
            Op::make_memcpy(Bytes(static_cast<double>(attr_int(node, "tensor_size", here).value_or(0))), kMemoryStream);
        break;
      case ChakraProtoMsg::METADATA_NODE:
      case ChakraProtoMsg::INVALID_NODE:
        // ASTRA-sim completes these at once; kept as empty ops so that dependencies through them still hold.
        if (node.type() == ChakraProtoMsg::METADATA_NODE) read_pg_metadata(node, here);
        op = Op::make_compute(0, Bytes(0), kUnordered);
        runtime = Seconds(0);
        break;
      default:
        throw InputError(at(i),
                         fmt::format("unknown node type {}{}", static_cast<int>(node.type()),
                                     ChakraProtoMsg::NodeType_IsValid(node.type())
                                         ? " (" + ChakraProtoMsg::NodeType_Name(node.type()) + ")"
                                         : ""),
                         "use COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD_NODE, MEM_STORE_NODE "
                         "or METADATA_NODE");
      }
      OpId id = b.add(op, node.name());
      op_of[i] = id;
      b.set_source_id(id, node.id());
      if (runtime) b.set_measured(id, std::nullopt, runtime);
      for (auto d : deps[i])
        b.add_dep(id, op_of[d.node]);
    }
    b.set_stream_label(kComputeStream, "gpu compute");
    b.set_stream_label(kCpuStream, "cpu");
    b.set_stream_label(kMemoryStream, "memory");
    for (auto& [s, label] : stream_labels_)
      b.set_stream_label(s, label);
    return b.finish();
  }

  // The host side of a communication (is_cpu_op true: PyTorch's c10d::allreduce_ call; the NCCL kernel it launched is
  // a GPU node of its own, and chakra's converter gives the host node no comm_type). ASTRA-sim issues every is_cpu_op
  // node as a CPU op of its measured runtime, never as communication (Workload::issue with chakra's ETFeeder,
  // astra-sim f66c1da); so does this reader.
  Op host_side(const Node& node, const RankFile& f, std::optional<Seconds>& runtime)
  {
    if (!runtime) runtime = Seconds(0);
    if (cpu_comm_nodes_++ == 0)
      first_cpu_comm_ = fmt::format("{} rank {} node {} '{}'", f.path, f.rank, node.id(), node.name());
    return Op::make_compute(0, Bytes(0), kCpuStream);
  }

  [[noreturn]] static void throw_dangling(const RankFile& f, const Node& node, std::uint64_t missing, DepList kind)
  {
    const InputLocation where{f.path, 0, fmt::format("rank {} node {}", f.rank, node.id())};
    if (kind == DepList::Data)
      throw InputError(
          where,
          fmt::format("node {} depends on node {} through its data_deps, but no node {} is in this file: "
                      "data_deps give the execution order, so node {} could never run",
                      node.id(), missing, missing, node.id()),
          fmt::format("remove {} from the data_deps of node {}, or give the complete file (this one may be cut "
                      "short, or come from another run)",
                      missing, node.id()));
    throw InputError(
        where,
        fmt::format("node {} depends on node {} through its ctrl_deps, but no node {} is in this file "
                    "(ctrl_deps are dependencies here, as ASTRA-sim reads them: the GlobalMetadata has no "
                    "PyTorch schema attribute)",
                    node.id(), missing, missing),
        fmt::format("remove {} from the ctrl_deps of node {} or add the node; a trace converted from "
                    "PyTorch keeps its GlobalMetadata attribute schema, and its ctrl_deps are then read as "
                    "parent links",
                    missing, node.id()));
  }

  // A cycle among the nodes the topological sort left (`done` false): walk from the first of them to a dependency
  // that is also left until a node repeats; the nodes from there on form a cycle.
  [[noreturn]] static void throw_cycle(const RankFile& f, const std::vector<Node>& nodes,
                                       const std::vector<std::vector<Dep>>& deps, const std::vector<bool>& done)
  {
    const auto n = static_cast<std::uint32_t>(nodes.size());
    std::uint32_t v = 0;
    while (done[v])
      ++v;
    std::vector<std::int64_t> seen(n, -1);
    std::vector<std::uint32_t> path;
    std::vector<DepList> kinds; // path[k] waits for path[k + 1] through kinds[k]
    while (seen[v] < 0) {
      seen[v] = static_cast<std::int64_t>(path.size());
      path.push_back(v);
      const Dep& d = *std::find_if(deps[v].begin(), deps[v].end(), [&](const Dep& x) { return !done[x.node]; });
      kinds.push_back(d.kind);
      v = d.node;
    }
    std::vector<std::uint32_t> cycle(path.begin() + seen[v], path.end());
    std::vector<DepList> via(kinds.begin() + seen[v], kinds.end());
    // Start at the node first in the file, so that the message does not depend on where the walk began.
    const auto first = std::min_element(cycle.begin(), cycle.end()) - cycle.begin();
    std::rotate(cycle.begin(), cycle.begin() + first, cycle.end());
    std::rotate(via.begin(), via.begin() + first, via.end());
    constexpr std::size_t kShown = 8;
    std::string chain;
    bool data = false, ctrl = false;
    for (std::size_t k = 0; k < cycle.size(); ++k) {
      (via[k] == DepList::Data ? data : ctrl) = true;
      if (k < kShown || k + 1 == cycle.size())
        chain += fmt::format("{}node {} waits for {} ({})", chain.empty() ? "" : ", ", nodes[cycle[k]].id(),
                             cycle.size() == 1 ? "itself"
                                               : fmt::format("node {}", nodes[cycle[(k + 1) % cycle.size()]].id()),
                             dep_list_name(via[k]));
      else if (k == kShown)
        chain += fmt::format(", ... ({} nodes on the cycle)", cycle.size());
    }
    const std::string lists = data && ctrl ? "data_deps and ctrl_deps" : data ? "data_deps" : "ctrl_deps";
    throw InputError({f.path, 0, fmt::format("rank {} node {}", f.rank, nodes[cycle.front()].id())},
                     fmt::format("dependency cycle through {}: {}; no node on it can ever run", lists, chain),
                     ctrl ? std::string("remove one of these dependencies (ctrl_deps count as dependencies in a trace "
                                        "whose GlobalMetadata has no PyTorch schema attribute)")
                          : std::string("remove one of these data_deps: they must form an acyclic graph (chakra's "
                                        "ETFeeder would never issue these nodes)"));
  }

  // ctrl_deps of a PyTorch-converted file are parent links; what is odd about them goes into a note (add_notes).
  void tally_parent_links(const RankFile& f, const std::vector<Node>& nodes,
                          const std::unordered_map<std::uint64_t, std::uint32_t>& index, const std::string& schema)
  {
    ParentLinks& t = parent_links_;
    ++t.files;
    t.schemas.insert(schema);
    const auto n = static_cast<std::uint32_t>(nodes.size());
    std::vector<std::vector<std::uint32_t>> parents(n);
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint64_t d : nodes[i].ctrl_deps()) {
        ++t.links;
        auto it = index.find(d);
        if (it == index.end()) {
          if (t.dangling++ == 0)
            t.first_dangling = fmt::format("{} rank {} node {} names node {}", f.path, f.rank, nodes[i].id(), d);
        } else if (it->second == i) {
          if (t.self_loops++ == 0) t.first_self_loop = fmt::format("{} rank {} node {}", f.path, f.rank, nodes[i].id());
        } else {
          parents[i].push_back(it->second);
        }
      }
    // Cycles through several nodes: strongly connected components of more than one node (Tarjan, iterative).
    std::vector<std::int64_t> order(n, -1), low(n, 0);
    std::vector<bool> on_stack(n, false);
    std::vector<std::uint32_t> stack;
    std::vector<std::pair<std::uint32_t, std::size_t>> calls;
    std::int64_t counter = 0;
    std::optional<std::uint32_t> first_cycle; // the file's first node that lies on such a cycle
    const auto visit = [&](std::uint32_t v) {
      order[v] = low[v] = counter++;
      stack.push_back(v);
      on_stack[v] = true;
      calls.emplace_back(v, 0);
    };
    for (std::uint32_t root = 0; root < n; ++root) {
      if (order[root] >= 0) continue;
      visit(root);
      while (!calls.empty()) {
        const std::uint32_t v = calls.back().first;
        if (calls.back().second < parents[v].size()) {
          const std::uint32_t w = parents[v][calls.back().second++];
          if (order[w] < 0)
            visit(w);
          else if (on_stack[w])
            low[v] = std::min(low[v], order[w]);
          continue;
        }
        calls.pop_back();
        if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[v]);
        if (low[v] != order[v]) continue;
        std::size_t size = 0;
        std::uint32_t smallest = v;
        for (std::uint32_t w = n; w != v;) {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          smallest = std::min(smallest, w);
          ++size;
        }
        if (size > 1) {
          ++t.cycles;
          if (!first_cycle || smallest < *first_cycle) first_cycle = smallest;
        }
      }
    }
    if (first_cycle && t.first_cycle.empty())
      t.first_cycle = fmt::format("{} rank {} node {}", f.path, f.rank, nodes[*first_cycle].id());
  }

  void add_notes()
  {
    const ParentLinks& t = parent_links_;
    if (t.files > 0) {
      std::string schemas;
      for (const auto& s : t.schemas)
        schemas += (schemas.empty() ? "" : ", ") + s;
      std::vector<std::string> odd;
      if (t.dangling > 0)
        odd.push_back(fmt::format("{} name nodes not in the file (first: {})", t.dangling, t.first_dangling));
      if (t.self_loops > 0)
        odd.push_back(fmt::format("{} are self-loops (first: {})", t.self_loops, t.first_self_loop));
      if (t.cycles > 0)
        odd.push_back(fmt::format("{} cycles run through several nodes (first through {})", t.cycles, t.first_cycle));
      std::string told;
      for (std::size_t k = 0; k < odd.size(); ++k)
        told += (k == 0 ? "" : k + 1 == odd.size() ? " and " : ", ") + odd[k];
      w_.notes.push_back(fmt::format(
          "ctrl_deps of {} PyTorch-converted rank file{} (GlobalMetadata schema {}) read as caller->callee parent "
          "links, not as dependencies: the execution order is their data_deps, as chakra's ETFeeder reads it. Of {} "
          "ctrl_deps, {}",
          t.files, t.files == 1 ? "" : "s", schemas, t.links,
          told.empty() ? std::string("none names a missing node or forms a cycle") : told));
    }
    if (cpu_comm_nodes_ > 0)
      w_.notes.push_back(fmt::format(
          "{} CPU-side communication node{} (is_cpu_op true, such as the host's c10d:: call; first: {}) run as CPU ops "
          "of their measured duration_micros, as ASTRA-sim issues host ops; the collective itself is its GPU node",
          cpu_comm_nodes_, cpu_comm_nodes_ == 1 ? "" : "s", first_cpu_comm_));
  }

  // What tally_parent_links found, over all rank files.
  struct ParentLinks {
    int files = 0;
    std::set<std::string> schemas;
    std::int64_t links = 0, dangling = 0, self_loops = 0, cycles = 0;
    std::string first_dangling, first_self_loop, first_cycle;
  };

  std::vector<RankFile> files_;
  std::string comm_group_file_;
  std::optional<std::string> comm_group_text_; // comm_group.json of an archive; else read from comm_group_file_
  ParentLinks parent_links_;
  std::int64_t cpu_comm_nodes_ = 0;
  std::string first_cpu_comm_;
  Workload w_;
  int world_comm_ = 0;
  std::map<std::string, int> groups_; // pg_name / comm_group id -> communicator
  std::map<StreamId, std::string> stream_labels_;
};

} // namespace

Workload read_chakra(const std::string& prefix, const ChakraOptions& options)
{
  TraceSet set;
  if (is_archive(prefix)) {
    set = read_archive_set(prefix);
  } else {
    set.files = find_rank_files(prefix);
    fs::path candidate = fs::path(set.files.front().path).parent_path() / "comm_group.json";
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) set.comm_group_name = candidate.string();
  }
  if (!options.comm_group_file.empty()) {
    set.comm_group_name = options.comm_group_file;
    set.comm_group_text.reset();
  }
  return ChakraReader(std::move(set)).read();
}

} // namespace railyard::workloads
