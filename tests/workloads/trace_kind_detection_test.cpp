// A trace read as the wrong kind names the right one (issue 16, reader ergonomics): an AICB physical CSV read as a
// layer-wise workload, a SimAI or ASTRA-sim layer-wise workload read as AICB's CSV, a JSON trace read as text; and a
// layer-wise workload without its GPU count says which scenario key gives it.
#include "railyard/common/error.hpp"
#include "railyard/workloads/readers.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace railyard;
using namespace railyard::workloads;

namespace {

const std::string kSimai = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/simai";
const std::string kAicbCsv = kSimai + "/aicb_physical_model_workload/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv";
const std::string kAicbForSimai =
    kSimai + "/aicb_simAI_model_workload/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1_A100.txt";
const std::string kSimaiExample = kSimai + "/SimAI_example/microAllReduce.txt";

template <class Read>
std::string refusal(Read&& read)
{
  try {
    read();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 1) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

} // namespace

TEST(TraceKindDetection, AnAicbCsvReadAsLayerWiseNamesAicb)
{
  for (const auto& msg : {refusal([] { (void)read_simai_workload(kAicbCsv); }),
                          refusal([] { (void)read_astrasim1_workload(kAicbCsv); })}) {
    EXPECT_TRUE(has(msg, "AICB physical workload CSV")) << msg;
    EXPECT_TRUE(has(msg, "trace: aicb")) << msg;
  }
}

TEST(TraceKindDetection, ALayerWiseWorkloadReadAsAicbNamesSimai)
{
  // SimAI's own example: ep:, pp:, vpp:, all_gpus: on its first line mark it as SimAI's.
  std::string msg = refusal([] { (void)read_aicb_physical_workload(kSimaiExample); });
  EXPECT_TRUE(has(msg, "SimAI layer-wise workload")) << msg;
  EXPECT_TRUE(has(msg, "trace: simai")) << msg;
  // What AICB writes for SimAI has the older ASTRA-sim header: both layer-wise kinds are named.
  msg = refusal([] { (void)read_aicb_physical_workload(kAicbForSimai); });
  EXPECT_TRUE(has(msg, "layer-wise workload")) << msg;
  EXPECT_TRUE(has(msg, "trace: simai")) << msg;
  EXPECT_TRUE(has(msg, "trace: astrasim1")) << msg;
  // And the files are what the messages say: each reads under the kind named.
  LayerWorkloadOptions o;
  o.world_size = 8;
  EXPECT_NO_THROW((void)read_simai_workload(kSimaiExample));
  EXPECT_NO_THROW((void)read_simai_workload(kAicbForSimai, o));
  EXPECT_NO_THROW((void)read_aicb_physical_workload(kAicbCsv));
}

TEST(TraceKindDetection, AJsonTraceReadAsTextNamesKinetoAndChakra)
{
  const auto path = std::filesystem::temp_directory_path() / "railyard_trace_kind.json";
  std::ofstream(path) << "{\"traceEvents\": []}\n";
  const std::string msg = refusal([&] { (void)read_simai_workload(path.string()); });
  EXPECT_TRUE(has(msg, "trace: kineto")) << msg;
  EXPECT_TRUE(has(msg, "trace: chakra")) << msg;
  std::filesystem::remove(path);
}

TEST(TraceKindDetection, AMissingGpuCountNamesTheScenarioKey)
{
  // AICB's SimAI file has no all_gpus: on its first line.
  const std::string msg = refusal([] { (void)read_simai_workload(kAicbForSimai); });
  EXPECT_TRUE(has(msg, "workload.world_size")) << msg;
  EXPECT_FALSE(has(msg, "LayerWorkloadOptions")) << msg; // a C++ name means nothing to a scenario's author
}
