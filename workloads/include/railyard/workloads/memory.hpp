// The memory model of a generated training step: what one GPU of each pipeline stage holds at its peak, by part.
//
//   - weights, gradients and optimizer states by ZeRO stage, per parameter as Megatron's distributed optimizer
//     documents them (NVIDIA/Megatron-LM docs/source/api-guide/dist_optimizer.md: bf16 parameters with fp32
//     gradients take 18 bytes per parameter, 6 + 12/d with the optimizer sharded over d data-parallel ranks) and as
//     ZeRO (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
//     section 5) shards them: stage 1 the optimizer states, stage 2 the gradients too, stage 3 the parameters too;
//   - activations per layer and micro-batch by recompute choice, Korthikanti et al. 2022 ("Reducing Activation
//     Recomputation in Large Transformer Models", section 4 and Table 2), generalised to grouped-query attention,
//     any FFN size, gated MLPs, fused attention, context parallelism and MoE layers (workloads/README.md, "Memory");
//   - times the micro-batches whose activations the pipeline schedule holds at once (counted on the schedule the
//     generator runs: pp - stage for 1F1B, more on the first stages with interleaving), plus the input embedding and
//     the loss on the first and last stages, and the working set of recomputing one layer in its backward pass.
//
// NCCL's buffers depend on the topology and are added by the scenario layer (scenario/README.md). Not counted: the
// CUDA context, cuBLAS and NCCL workspaces, the allocator's fragmentation, temporary buffers of the optimizer step.
#pragma once

#include "railyard/workloads/generator.hpp"

#include <string>
#include <vector>

namespace railyard::workloads {

/// One GPU of a pipeline stage at the peak of the step, in bytes.
struct StageMemory {
  int stage = 0;
  double parameters = 0; ///< held by one rank before sharding (dense + expert)
  double weight_bytes = 0;
  double gradient_bytes = 0;
  double optimizer_bytes = 0;   ///< fp32 master weights (unless the weights are fp32), Adam's two moments
  double activation_bytes = 0;  ///< stored for the backward pass at the schedule's peak, plus the recompute working set
  double nccl_buffer_bytes = 0; ///< 0 here; the scenario layer fills it from the communicators' channels
  int microbatches_in_flight = 0; ///< (micro-batch, model chunk) forward passes held at the peak
  [[nodiscard]] double total_bytes() const
  {
    return weight_bytes + gradient_bytes + optimizer_bytes + activation_bytes + nccl_buffer_bytes;
  }
};

/// Bytes of one transformer layer's activations that one rank stores for the backward pass of one micro-batch, with
/// `recompute` as given (Korthikanti et al. 2022, Table 2, generalised; workloads/README.md, "Memory").
double layer_activation_bytes(const MegatronConfig& config, const MegatronLayout& layout, Recompute recompute);

/// The peak number of (micro-batch, chunk) forward passes whose activations one stage holds in `pipeline_schedule`.
int microbatches_in_flight(int stages, int stage, int microbatches, int chunks);

/// One entry per pipeline stage. Throws InputError (via resolve_layout) for a configuration that does not fit the
/// GPU count.
std::vector<StageMemory> megatron_memory(const MegatronConfig& config, int world_size);

} // namespace railyard::workloads
