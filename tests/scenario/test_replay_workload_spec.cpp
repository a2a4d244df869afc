// The `workload:` section's generator fields that steer Megatron's pipeline and embedding work (tied_embeddings,
// blocking_p2p, scatter_gather_p2p): read from YAML, their defaults when absent, and a clear error naming the field
// for a value that is not a boolean.
#include "railyard/scenario/workload_spec.hpp"

#include <gtest/gtest.h>

#include <string>

namespace scn = railyard::scenario;

using namespace railyard;

namespace {

// A two-stage, two-way tensor-parallel step without sequence parallelism: the case where scatter/gather changes the
// bytes sent between stages. `model_extra` and `parallel_extra` are appended to the model and parallel maps.
std::string section(const std::string& model_extra, const std::string& parallel_extra)
{
  return "workload:\n"
         "  generator: megatron\n"
         "  model: {layers: 2, hidden: 512, heads: 8, seq_length: 256, vocab: 1024" +
         model_extra +
         "}\n"
         "  parallel: {tp: 2, pp: 2, sequence_parallel: false" +
         parallel_extra +
         "}\n"
         "  training: {micro_batch: 1, global_batch: 4}\n";
}

scn::WorkloadSpec parse(const std::string& text)
{
  const YamlNode root = YamlNode::load_string(text, "scenario.yaml");
  return scn::parse_workload(root.at("workload"), "scenario.yaml");
}

// Bytes of the first Send of stage 0's program.
double first_send_bytes(const workloads::Workload& w)
{
  const auto& g = w.graph_of(0);
  for (const auto& op : g.ops())
    if (op.kind == workloads::OpKind::Send) return op.bytes.bytes();
  return -1;
}

} // namespace

TEST(ReplayWorkloadSpec, DefaultsAreTheGeneratorsDefaults)
{
  const auto w = parse(section("", ""));
  const workloads::MegatronConfig defaults;
  EXPECT_EQ(w.megatron.model.tied_embeddings, defaults.model.tied_embeddings);
  EXPECT_EQ(w.megatron.parallel.blocking_p2p, defaults.parallel.blocking_p2p);
  EXPECT_EQ(w.megatron.parallel.scatter_gather_p2p, defaults.parallel.scatter_gather_p2p);
}

TEST(ReplayWorkloadSpec, ReadsTiedEmbeddingsBlockingAndScatterGatherP2p)
{
  const auto on = parse(section(", tied_embeddings: true", ", blocking_p2p: true, scatter_gather_p2p: true"));
  EXPECT_TRUE(on.megatron.model.tied_embeddings);
  EXPECT_TRUE(on.megatron.parallel.blocking_p2p);
  EXPECT_TRUE(on.megatron.parallel.scatter_gather_p2p);
  const auto off = parse(section(", tied_embeddings: false", ", blocking_p2p: false, scatter_gather_p2p: false"));
  EXPECT_FALSE(off.megatron.model.tied_embeddings);
  EXPECT_FALSE(off.megatron.parallel.blocking_p2p);
  EXPECT_FALSE(off.megatron.parallel.scatter_gather_p2p);

  // The fields reach the generator. An activation of one micro-batch is b s h = 1 x 256 x 512 elements of 2 bytes;
  // with scatter/gather each of the 2 TP ranks sends half of it (Narayanan et al. 2021, section 4.1).
  const double activation = 1.0 * 256 * 512 * 2;
  EXPECT_DOUBLE_EQ(first_send_bytes(workloads::generate_megatron(on.megatron, 4)), activation / 2);
  EXPECT_DOUBLE_EQ(first_send_bytes(workloads::generate_megatron(off.megatron, 4)), activation);
  // Tied embeddings with pp > 1: the first and last stage all-reduce the embedding gradient (one extra
  // communicator per TP rank, 2 of them).
  EXPECT_EQ(workloads::generate_megatron(on.megatron, 4).communicators.size(),
            workloads::generate_megatron(off.megatron, 4).communicators.size() + 2);
}

TEST(ReplayWorkloadSpec, NonBooleanNamesTheFieldAndLine)
{
  struct Case {
    std::string model_extra, parallel_extra, field;
  };
  for (const Case& c : {Case{", tied_embeddings: 2", "", "workload.model.tied_embeddings"},
                        Case{"", ", blocking_p2p: sometimes", "workload.parallel.blocking_p2p"},
                        Case{"", ", scatter_gather_p2p: 1.5", "workload.parallel.scatter_gather_p2p"}}) {
    try {
      (void)parse(section(c.model_extra, c.parallel_extra));
      FAIL() << c.field << ": a non-boolean was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, "scenario.yaml");
      EXPECT_EQ(e.where().field, c.field);
      EXPECT_EQ(e.where().line, c.model_extra.empty() ? 4 : 3); // line 3: model, line 4: parallel
      EXPECT_NE(std::string(e.what()).find("not a boolean"), std::string::npos) << e.what();
    }
  }
}
