// Chakra execution traces through the binary (issue 16, deliverable 2): mlcommons/chakra's real PyTorch-collected
// trace (tests/data/traces/chakra_et/chakra_feeder_tests, README there) run from its .tar.gz in a `railyard run`
// scenario, and crafted ETs with a broken data_deps refused with exit 2 naming the file, the rank, the node and
// data_deps.
//
// Expectations come from the trace's README (3,664 nodes; 5 AllReduce and 2 Broadcast on the GPU) and from decoding
// the archive's member here (libarchive and the generated protobuf classes), not from an earlier run:
// - every op of the one traced rank is in summary.json, and its 7 GPU collectives are in trace.json;
// - a CUDA stream and the host thread each run one op at a time, so the step lasts at least the sum of the measured
//   durations of the CPU nodes (is_cpu_op, the host-side c10d:: nodes among them) and at least that of the GPU
//   compute nodes.
#include "../support/trace_files.hpp"
#include "cli_support.hpp"

#include "et_def.pb.h"

#include <archive.h>
#include <archive_entry.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace railyard::test;

namespace {

using railyard::test::archive_member;

const std::string kFeeder =
    std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/chakra_et/chakra_feeder_tests/feeder_tests_trace.tar.gz";

std::string scenario(const std::string& path)
{
  return "name: chakra\nseed: 1\ncluster:\n  kind: single_node\n  nodes: 1\n  gpus_per_node: 8\n"
         "profile: " +
         std::string(RAILYARD_SOURCE_DIR) + "/calibration/profiles/dgx_h100_ib_ndr.yaml\n" +
         "workload:\n  trace: chakra\n  path: " + path + "\n";
}

// The nodes of a length-delimited ET (GlobalMetadata first, skipped).
std::vector<ChakraProtoMsg::Node> decode_nodes(const std::string& bytes)
{
  std::vector<ChakraProtoMsg::Node> nodes;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  std::uint32_t len = 0;
  bool first = true;
  while (in.ReadVarint32(&len)) {
    auto limit = in.PushLimit(static_cast<int>(len));
    if (first) {
      ChakraProtoMsg::GlobalMetadata meta;
      EXPECT_TRUE(meta.ParseFromCodedStream(&in));
    } else {
      EXPECT_TRUE(nodes.emplace_back().ParseFromCodedStream(&in));
    }
    in.PopLimit(limit);
    first = false;
  }
  return nodes;
}

bool is_cpu_op(const ChakraProtoMsg::Node& n)
{
  for (const auto& a : n.attr())
    if (a.name() == "is_cpu_op") return a.bool_val();
  return false;
}

// A length-delimited ET: GlobalMetadata as chakra's PyTorch converter writes it (attribute schema), then `nodes`.
std::string encode(const std::vector<ChakraProtoMsg::Node>& nodes)
{
  ChakraProtoMsg::GlobalMetadata meta;
  auto* schema = meta.add_attr();
  schema->set_name("schema");
  schema->set_string_val("1.0.1");
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream cos(&raw);
    cos.WriteVarint32(static_cast<std::uint32_t>(meta.ByteSizeLong()));
    meta.SerializeToCodedStream(&cos);
    for (const auto& n : nodes) {
      cos.WriteVarint32(static_cast<std::uint32_t>(n.ByteSizeLong()));
      n.SerializeToCodedStream(&cos);
    }
  }
  return out;
}

// Two 10 us kernels, the second after the first (data_deps); `extra` is added to the second's data_deps.
std::vector<ChakraProtoMsg::Node> two_kernels(std::uint64_t extra)
{
  std::vector<ChakraProtoMsg::Node> nodes(2);
  for (int i = 0; i < 2; ++i) {
    nodes[i].set_id(static_cast<std::uint64_t>(i + 1));
    nodes[i].set_name("kernel");
    nodes[i].set_type(ChakraProtoMsg::COMP_NODE);
    nodes[i].set_duration_micros(10);
  }
  nodes[1].add_data_deps(1);
  if (extra != 0) nodes[1].add_data_deps(extra);
  return nodes;
}

} // namespace

class CliChakra : public TempDirTest {};

TEST_F(CliChakra, RealPyTorchTraceRunsFromItsArchive)
{
  const auto nodes = decode_nodes(archive_member(kFeeder, "tests/data/chakra.0.et"));
  ASSERT_EQ(nodes.size(), 3664u); // the README's count
  double cpu_s = 0, gpu_compute_s = 0;
  for (const auto& n : nodes) {
    if (is_cpu_op(n))
      cpu_s += static_cast<double>(n.duration_micros()) * 1e-6;
    else if (n.type() == ChakraProtoMsg::COMP_NODE)
      gpu_compute_s += static_cast<double>(n.duration_micros()) * 1e-6;
  }

  write("s.yaml", scenario(kFeeder));
  const CliResult r = run_cli("run s.yaml --out o", "", dir_.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = nlohmann::json::parse(read_file(dir_ / "o" / "summary.json"));
  const auto& wl = summary.at("workload");
  EXPECT_EQ(wl.at("ranks").get<int>(), 1); // chakra.0.et: rank 0 of the 8-GPU run, the only rank in the archive
  EXPECT_EQ(wl.at("ops").get<std::size_t>(), nodes.size());
  std::string notes = wl.at("notes").dump();
  EXPECT_NE(notes.find("parent links"), std::string::npos) << notes;
  EXPECT_NE(notes.find("14 CPU-side communication nodes"), std::string::npos) << notes;
  const double step = summary.at("step_time_s").get<double>();
  EXPECT_GE(step, cpu_s * (1 - 1e-9));
  EXPECT_GE(step, gpu_compute_s * (1 - 1e-9));

  ASSERT_TRUE(fs::exists(dir_ / "o" / "trace.json"));
  int collectives = 0;
  const auto trace = nlohmann::json::parse(read_file(dir_ / "o" / "trace.json"));
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("cat", "") == "collective") ++collectives;
  EXPECT_EQ(collectives, 5 + 2); // the README's GPU AllReduce and Broadcast kernels
}

// Rank 3 of a 4-rank set names a node that is not in its file in data_deps: exit 2 with the file, the rank, the node
// and the list, and nothing written.
TEST_F(CliChakra, DanglingDataDepIsRefusedWithExitTwo)
{
  for (int rank = 0; rank < 4; ++rank)
    write("bad." + std::to_string(rank) + ".et", encode(two_kernels(rank == 3 ? 77 : 0)));
  write("s.yaml", scenario("bad"));
  const CliResult r = run_cli("run s.yaml --out o", "", dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.3.et"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 3 node 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("node 2 depends on node 77 through its data_deps"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("remove 77 from the data_deps of node 2"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "o" / "summary.json"));
}

// The same set with a data_deps cycle instead (node 1 waits for node 2, which waits for node 1).
TEST_F(CliChakra, DataDepsCycleIsRefusedWithExitTwo)
{
  for (int rank = 0; rank < 2; ++rank) {
    auto nodes = two_kernels(0);
    if (rank == 1) nodes[0].add_data_deps(2);
    write("cyc." + std::to_string(rank) + ".et", encode(nodes));
  }
  write("s.yaml", scenario("cyc"));
  const CliResult r = run_cli("run s.yaml --out o", "", dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cyc.1.et"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 1 node 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dependency cycle through data_deps: node 1 waits for node 2 (data_deps), node 2 waits for "
                          "node 1 (data_deps)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "o" / "summary.json"));
}
