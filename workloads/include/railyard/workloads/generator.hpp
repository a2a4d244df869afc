// The Megatron-style generator: one training step of a decoder-only transformer under tensor (with sequence),
// pipeline (1F1B or interleaved), data (ZeRO-0..3), expert and context parallelism, as a per-rank op graph.
//
// What each rank does follows Megatron-LM (NVIDIA/Megatron-LM megatron/core): the layer's GEMMs split across the
// TP group with the all-gather / reduce-scatter pairs of sequence parallelism (Korthikanti et al. 2022, "Reducing
// Activation Recomputation in Large Transformer Models", section 4.2), the pipeline schedules of
// megatron/core/pipeline_parallel/schedules.py (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training
// on GPU Clusters Using Megatron-LM", section 2.2), gradient buckets reduced on their own stream while the backward
// pass goes on (megatron/core/distributed), and all-to-all token dispatch for MoE layers. workloads/README.md,
// "Generator", lists every op, its FLOPs and bytes, and what is simplified.
//
// Programs are shared: all ranks of one pipeline stage run the same program and differ only in their communicator
// map, so an 8,192-GPU job holds one program per stage.
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/workloads/op_graph.hpp"

#include <map>
#include <string>
#include <vector>

namespace railyard::workloads {

/// Activation recomputation (Korthikanti et al. 2022, section 5): none; selective = the attention core (QK^T,
/// softmax, dropout, attention over V) is recomputed before its backward; full = every layer's forward is re-run
/// (with its tensor-parallel communication) before its backward.
enum class Recompute { None, Selective, Full };
std::string to_string(Recompute r);

struct TransformerSpec {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;       ///< 0: as many as heads (multi-head attention); fewer: grouped-query attention
  int ffn_hidden = 0;     ///< 0: 4 x hidden
  bool gated_mlp = false; ///< SwiGLU: three FFN matrices instead of two
  int seq_length = 0;
  int vocab = 0;
  int experts = 0;        ///< 0 or 1: dense MLP; more: every layer's MLP is a mixture of experts
  int top_k = 0;          ///< experts per token
  int moe_ffn_hidden = 0; ///< expert FFN size; 0: ffn_hidden
  /// Fused attention (FlashAttention): the s x s score matrix never reaches memory. Without it the softmax and the
  /// attention dropout are memory-bound kernels over b x heads x s x s elements, as in Megatron in 2022.
  bool flash_attention = true;
  /// The LM head reuses the word-embedding matrix (GPT-2/3 and Megatron's default before
  /// --untie-embeddings-and-output-weights; Korthikanti et al. 2022, section 3, assume it): one matrix on a one-stage
  /// pipeline; with pp > 1 the first and last stages each hold a copy and all-reduce its gradient between them before
  /// the optimizer (Megatron's _allreduce_embedding_grads).
  bool tied_embeddings = false;
};

struct ParallelSpec {
  int tp = 1;
  int pp = 1;
  int dp = 0; ///< 0: what the GPU count leaves, GPUs / (tp x pp x cp)
  /// Context parallelism: each CP rank holds s/cp tokens of every sequence; keys and values of the whole sequence
  /// are all-gathered before attention and their gradient reduce-scattered in the backward pass (Llama 3, Dubey et
  /// al. 2024, "The Llama 3 Herd of Models", section 3.3.2), on the CP group.
  int cp = 1;
  int ep = 1;             ///< expert parallelism, carved out of the data-parallel ranks (consecutive dp indices)
  int virtual_stages = 1; ///< > 1: the interleaved schedule with that many model chunks per stage
  /// Layers of the first and of the last pipeline stage when the layers do not divide evenly (Megatron-core's
  /// decoder_first_pipeline_num_layers / decoder_last_pipeline_num_layers: Llama 3 405B's 126 layers on 16 stages,
  /// 7 on the first and the last, 8 on each of the 14 others); the other stages share the rest equally. 0: an even
  /// split. Without interleaving only.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  bool sequence_parallel = true;
  /// 0: DDP (all-reduce of gradient buckets); 1: distributed optimizer (reduce-scatter of gradients in the last
  /// micro-batch, all-gather of parameters after the step); 2: gradients reduce-scattered in every micro-batch;
  /// 3 (FSDP): parameters all-gathered before each layer's forward and backward, gradients reduce-scattered after.
  int zero_stage = 1;
  double bucket_params = 40e6; ///< parameters per gradient bucket (Megatron's default bucket_size)
  /// ZeRO-1/2: all-gather the updated parameters at the start of the step, overlapped with the forward pass (each
  /// layer's first forward waits for its bucket), as Megatron's overlap_param_gather; else after the optimizer.
  bool overlap_param_gather = false;
  /// Pipeline sends block the compute stream until they complete: Megatron's p2p calls wait for their requests and
  /// synchronize the device (megatron/core/pipeline_parallel/p2p_communication.py, batch_isend_irecv then req.wait()
  /// and torch.cuda.synchronize()). false: a send overlaps the compute that follows it.
  bool blocking_p2p = true;
  /// Without sequence parallelism (and tp > 1), each TP rank sends 1/tp of the activation or gradient to the next
  /// stage and the receiver all-gathers it over TP (Narayanan et al. 2021, section 4.1, "scatter/gather
  /// optimization"; Megatron's default, --no-scatter-gather-tensors-in-pipeline turns it off). false: every TP rank
  /// sends the whole tensor.
  bool scatter_gather_p2p = true;
};

struct TrainingSpec {
  int micro_batch = 1;
  int global_batch = 0;
  Recompute recompute = Recompute::Selective;
  int bytes_per_element = 2;      ///< activations and parameters: bf16
  int grad_bytes_per_element = 4; ///< gradient reduction in fp32 (Megatron's main_grads)
};

struct MegatronConfig {
  TransformerSpec model;
  ParallelSpec parallel;
  TrainingSpec training;
  /// Where each field was given ("parallel.tp", "model.heads", ...), for messages; "" locates the whole section.
  std::map<std::string, InputLocation> where;
  /// The location of `field` (its dotted name under the workload section), else of the section.
  [[nodiscard]] InputLocation locate(const std::string& field) const;
};

/// The resolved layout of a configuration on `world_size` GPUs. Rank order is Megatron's (tp fastest, then cp,
/// dp, pp): rank = tp_i + tp x (cp_i + cp x (dp_i + dp x pp_i)).
struct MegatronLayout {
  int world = 0, tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, vpp = 1;
  int microbatches = 0;          ///< per pipeline: global_batch / (micro_batch x dp)
  int layers_per_chunk = 0;      ///< layers / (pp x vpp); with first/last_stage_layers, the most any stage holds
  std::vector<int> stage_layers; ///< layers of each model chunk on each stage (all layers_per_chunk when even)
  std::vector<int> stage_first;  ///< first layer of each stage (its chunk 0)
  /// First layer of `chunk` on `stage`.
  [[nodiscard]] int first_layer(int stage, int chunk) const
  {
    return stage_first[static_cast<std::size_t>(stage)] + chunk * pp * layers_per_chunk;
  }
  [[nodiscard]] int layers_of(int stage) const { return stage_layers[static_cast<std::size_t>(stage)]; }
  int padded_vocab = 0; ///< vocab rounded up to a multiple of 128 x tp (Megatron's make_vocab_size_divisible_by)
  int kv_heads = 0, ffn_hidden = 0, moe_ffn_hidden = 0;
  bool sequence_parallel = false; ///< effective: requested and tp > 1
  [[nodiscard]] int rank(int tp_i, int cp_i, int dp_i, int pp_i) const
  {
    return tp_i + tp * (cp_i + cp * (dp_i + dp * pp_i));
  }
};

/// Validates the configuration against the GPU count; an InputError names the field (e.g. "parallel.tp") and the
/// rule: tp x pp x cp x dp = GPUs, heads and kv_heads divisible by tp, layers by pp x virtual_stages, global batch by
/// micro_batch x dp, experts by ep, dp by ep, sequence by cp (and by tp under sequence parallelism), ...
MegatronLayout resolve_layout(const MegatronConfig& config, int world_size);

/// One step on one pipeline stage, in execution order: forward or backward of (micro-batch, model chunk).
struct PipelineSlot {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;
};
/// Megatron's 1F1B schedule (chunks == 1: warm-up of pp - stage - 1 forwards, then one forward one backward, then the
/// cool-down backwards) or its interleaved schedule (chunks > 1; microbatches must be a multiple of stages).
std::vector<PipelineSlot> pipeline_schedule(int stages, int stage, int microbatches, int chunks);

/// Generates one training step. Communicators are named "tp3", "dp0", ... with their kinds; programs are shared per
/// pipeline stage. Throws InputError (via resolve_layout) for a configuration that does not fit.
Workload generate_megatron(const MegatronConfig& config, int world_size);

/// Parameters one rank of a pipeline stage holds over all its model chunks, before any ZeRO sharding, as the
/// generator counts them (workloads/README.md, "Generator": weights of the linear layers and layernorms, no biases).
struct StageParameters {
  double dense = 0;        ///< reduced, and sharded under ZeRO, over the DP x CP group
  double expert = 0;       ///< reduced and sharded over the expert-data-parallel group
  double largest_unit = 0; ///< the largest unit the stage holds whole (a layer, the embedding, the LM head)
  double dense_group = 1;  ///< ranks the dense parameters' optimizer state is sharded over (dp x cp)
  double expert_group = 1; ///< ranks the expert parameters' optimizer state is sharded over
};
/// One entry per pipeline stage. Throws InputError (via resolve_layout) for a configuration that does not fit.
std::vector<StageParameters> megatron_stage_parameters(const MegatronConfig& config, int world_size);

/// Model FLOPs of one step over all GPUs (for MFU): 3 x the forward FLOPs of the global batch, without
/// recomputation, on the unpadded vocabulary (Korthikanti et al. 2022, section 6.3; for a GPT with ffn = 4h and
/// multi-head attention this is 72 B s l h^2 (1 + s/(6h) + V/(12 l h))). MoE layers count the top-k experts.
double megatron_model_flops(const MegatronConfig& config);

} // namespace railyard::workloads
