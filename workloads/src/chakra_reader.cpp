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
  std::string path;
};

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
  std::map<int, std::string> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= base.size() + 4 || name.compare(0, base.size() + 1, base + ".") != 0 ||
        !detail::ends_with(name, ".et"))
      continue;
    std::string digits = name.substr(base.size() + 1, name.size() - base.size() - 4);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    std::int64_t rank = 0;
    try {
      rank = parse_integer(digits, 0, kMaxRankFiles - 1);
    } catch (const std::invalid_argument& e) {
      throw InputError({entry.path().string(), 0, "rank"}, fmt::format("the rank in the file name: {}", e.what()),
                       "number the files <prefix>.0.et, <prefix>.1.et, ... one per rank");
    }
    found[static_cast<int>(rank)] = entry.path().string();
  }
  if (ec || found.empty())
    throw InputError({prefix + ".<rank>.et", 0, ""}, "no Chakra trace files found",
                     "give the prefix of files named <prefix>.0.et, <prefix>.1.et, ...");
  std::vector<RankFile> out;
  for (const auto& [rank, path] : found) {
    if (rank != static_cast<int>(out.size()))
      throw InputError(
          {fmt::format("{}.{}.et", prefix, out.size()), 0, fmt::format("rank {}", out.size())},
          fmt::format("the trace of rank {} is missing (found up to rank {})", out.size(), found.rbegin()->first),
          "give one file per rank, numbered from 0 without gaps");
    out.push_back({rank, path});
  }
  return out;
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

class ChakraReader {
public:
  ChakraReader(std::vector<RankFile> files, std::string comm_group_file)
      : files_(std::move(files)), comm_group_file_(std::move(comm_group_file))
  {
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
    for (const auto& f : files_)
      w_.add_rank(read_rank(f));
    validate(w_);
    return std::move(w_);
  }

private:
  void read_comm_groups()
  {
    std::string text = detail::read_file(comm_group_file_);
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

  std::vector<Node> parse_file(const RankFile& f)
  {
    std::string data = detail::read_file(f.path);
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
        ChakraProtoMsg::GlobalMetadata meta;
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

  RankGraph read_rank(const RankFile& f)
  {
    std::vector<Node> nodes = parse_file(f);
    const auto n = nodes.size();
    auto at = [&](std::size_t i) {
      return InputLocation{f.path, 0, fmt::format("rank {} node {}", f.rank, nodes[i].id())};
    };
    std::unordered_map<std::uint64_t, std::uint32_t> index;
    index.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      if (!index.emplace(nodes[i].id(), static_cast<std::uint32_t>(i)).second)
        throw InputError(at(i), fmt::format("node id {} appears twice", nodes[i].id()), "give every node its own id");
    // Dependencies as file indices; a dependency on a node that is not in the file is an error here.
    std::vector<std::vector<std::uint32_t>> deps(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (const auto* list : {&nodes[i].data_deps(), &nodes[i].ctrl_deps()})
        for (std::uint64_t d : *list) {
          auto it = index.find(d);
          if (it == index.end())
            throw InputError(at(i), fmt::format("depends on node {} which is not in this file", d),
                             "remove the dependency or add the node");
          deps[i].push_back(it->second);
        }
    }
    // Topological order, smallest file position first among ready nodes (ASTRA-sim issues ready nodes by id), so
    // stream order never contradicts a dependency.
    std::vector<std::uint32_t> indeg(n, 0);
    std::vector<std::vector<std::uint32_t>> succ(n);
    for (std::uint32_t i = 0; i < n; ++i)
      for (auto d : deps[i]) {
        ++indeg[i];
        succ[d].push_back(i);
      }
    std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready;
    for (std::uint32_t i = 0; i < n; ++i)
      if (indeg[i] == 0) ready.push(i);
    std::vector<std::uint32_t> order;
    order.reserve(n);
    while (!ready.empty()) {
      auto v = ready.top();
      ready.pop();
      order.push_back(v);
      for (auto s : succ[v])
        if (--indeg[s] == 0) ready.push(s);
    }
    if (order.size() != n) throw_cycle(f, nodes, deps);

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
        auto type = attr_int(node, "comm_type", here);
        if (!type)
          throw InputError(at(i), "COMM_COLL_NODE without a comm_type attribute",
                           "add comm_type (et_def.proto CollectiveCommType)");
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
        b.add_dep(id, op_of[d]);
    }
    b.set_stream_label(kComputeStream, "gpu compute");
    b.set_stream_label(kCpuStream, "cpu");
    b.set_stream_label(kMemoryStream, "memory");
    for (auto& [s, label] : stream_labels_)
      b.set_stream_label(s, label);
    return b.finish();
  }

  // Report a cycle with the node ids on it, through the op graph's own cycle finder.
  [[noreturn]] void throw_cycle(const RankFile& f, const std::vector<Node>& nodes,
                                const std::vector<std::vector<std::uint32_t>>& deps)
  {
    RankGraphBuilder b(f.path, SourceKind::NodeId);
    for (std::uint32_t i = 0; i < nodes.size(); ++i) {
      b.add(Op::make_compute(0, Bytes(0), kUnordered), nodes[i].name());
      b.set_source_id(i, nodes[i].id());
    }
    for (std::uint32_t i = 0; i < nodes.size(); ++i)
      for (auto d : deps[i])
        b.add_dep(i, d);
    Workload one;
    one.add_rank(b.finish());
    auto problems = find_problems(one, 1);
    if (problems.empty())
      throw InputError({f.path, 0, fmt::format("rank {}", f.rank)}, "dependency cycle", "break the cycle");
    InputLocation where = problems.front().where();
    where.field = fmt::format("rank {}{}", f.rank, where.field.substr(where.field.find(' ', 5)));
    throw InputError(where, problems.front().rule(), problems.front().fix());
  }

  std::vector<RankFile> files_;
  std::string comm_group_file_;
  Workload w_;
  int world_comm_ = 0;
  std::map<std::string, int> groups_; // pg_name / comm_group id -> communicator
  std::map<StreamId, std::string> stream_labels_;
};

} // namespace

Workload read_chakra(const std::string& prefix, const ChakraOptions& options)
{
  auto files = find_rank_files(prefix);
  std::string groups = options.comm_group_file;
  if (groups.empty()) {
    fs::path candidate = fs::path(files.front().path).parent_path() / "comm_group.json";
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) groups = candidate.string();
  }
  return ChakraReader(std::move(files), std::move(groups)).read();
}

} // namespace railyard::workloads
