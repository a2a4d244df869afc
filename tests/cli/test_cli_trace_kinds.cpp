// A trace named as the wrong kind in a scenario is refused through the binary with exit 2, the file, its line and the
// kind to name instead (issue 16, reader ergonomics).
#include "cli_support.hpp"

using namespace railyard::test;

namespace {

const std::string kTraces = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces";

std::string scenario(const std::string& kind, const std::string& path)
{
  return "name: kinds\nseed: 1\ncluster:\n  kind: single_node\n  nodes: 1\n  gpus_per_node: 8\n"
         "profile: " +
         std::string(RAILYARD_SOURCE_DIR) + "/calibration/profiles/dgx_h100_ib_ndr.yaml\n" +
         "workload:\n  trace: " + kind + "\n  path: " + path + "\n";
}

} // namespace

class CliTraceKinds : public TempDirTest {};

TEST_F(CliTraceKinds, TheWrongKindNamesTheRightOne)
{
  struct Case {
    std::string kind, file, expect;
  };
  const Case cases[] = {
      {"aicb", kTraces + "/simai/SimAI_example/microAllReduce.txt", "trace: simai"},
      {"simai", kTraces + "/simai/aicb_physical_model_workload/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv",
       "trace: aicb"},
  };
  for (const Case& c : cases) {
    write("s.yaml", scenario(c.kind, c.file));
    const CliResult r = run_cli("run s.yaml --out o", "", dir_.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.file.substr(c.file.rfind('/') + 1) + ":1"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "o" / "summary.json"));
  }
}

// JSON and protobuf traces under the wrong kind: a Kineto trace read as Chakra, a Chakra ET (and an archive of them)
// read as Kineto, PyTorch host execution traces read as Chakra or as Kineto. Each names what the file is and the
// kind (or key) that reads it; exit 2, the file named, nothing written.
TEST_F(CliTraceKinds, JsonAndProtobufTracesNameTheirKind)
{
  struct Case {
    std::string kind, file, expect;
  };
  const Case cases[] = {
      {"chakra", kTraces + "/kineto/hta/nccl_parser_config/nccl_data.json.gz", "trace: kineto"},
      {"kineto", kTraces + "/chakra_et/astrasim_microbench_all_reduce_8npus_1MB/all_reduce.0.et", "trace: chakra"},
      {"kineto", kTraces + "/chakra_et/chakra_feeder_tests/feeder_tests_trace.tar.gz", "trace: chakra"},
      {"chakra", kTraces + "/pytorch_host_et/chakra_1.0.2/1.0.2-chakra.0.0.4.tgz", "workload.host_et"},
      {"kineto", kTraces + "/kineto/param_dlrm_8rank_v100/dlrm_pytorch_et.tar.gz", "host execution trace"},
  };
  for (const Case& c : cases) {
    write("s.yaml", scenario(c.kind, c.file));
    const CliResult r = run_cli("run s.yaml --out o", "", dir_.string());
    EXPECT_EQ(r.exit_code, 2) << c.file << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.file << "\n" << r.output;
    EXPECT_NE(r.output.find(c.file.substr(c.file.rfind('/') + 1)), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "o" / "summary.json"));
  }
}
