#include "railyard/scenario/gpu_memory.hpp"

#include "railyard/calibration/datasheets.hpp"
#include "railyard/calibration/profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace railyard::scenario {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string gib(double bytes)
{
  return fmt::format("{:.1f}", bytes / kGiB);
}

// The stage whose GPUs need the most (the first of equals).
int peak_stage(const std::vector<workloads::StageMemory>& stages)
{
  const auto most = std::max_element(stages.begin(), stages.end(),
                                     [](const auto& a, const auto& b) { return a.total_bytes() < b.total_bytes(); });
  return static_cast<int>(most - stages.begin());
}

// Single changes to the layout that bring the peak under `capacity`, NCCL's buffers taken as they are now (their
// largest over the stages): "parallel.zero: 2 (peak 61.2 GiB)", ...
std::vector<std::string> fixes(const workloads::MegatronConfig& c, int world, double nccl, double capacity)
{
  std::vector<std::pair<std::string, workloads::MegatronConfig>> tries;
  auto change = [&](std::string what, auto&& edit) {
    workloads::MegatronConfig v = c;
    edit(v);
    tries.emplace_back(std::move(what), std::move(v));
  };
  for (int z = c.parallel.zero_stage + 1; z <= 3; ++z)
    change(fmt::format("parallel.zero: {}", z), [z](auto& v) { v.parallel.zero_stage = z; });
  if (c.training.recompute != workloads::Recompute::Full)
    change("training.recompute: full", [](auto& v) { v.training.recompute = workloads::Recompute::Full; });
  if (c.training.micro_batch > 1)
    change(fmt::format("training.micro_batch: {}", c.training.micro_batch / 2),
           [](auto& v) { v.training.micro_batch /= 2; });
  for (int f : {2, 4}) {
    change(fmt::format("parallel.pp: {}", c.parallel.pp * f), [f](auto& v) {
      v.parallel.pp *= f;
      v.parallel.dp = 0;
    });
  }
  for (int f : {2, 4}) {
    change(fmt::format("parallel.tp: {}", c.parallel.tp * f), [f](auto& v) {
      v.parallel.tp *= f;
      v.parallel.dp = 0;
    });
  }
  std::vector<std::string> out;
  for (const auto& [what, v] : tries) {
    try {
      auto stages = workloads::megatron_memory(v, world);
      for (auto& st : stages)
        st.nccl_buffer_bytes = nccl;
      const double most = stages[static_cast<std::size_t>(peak_stage(stages))].total_bytes();
      if (most <= capacity) out.push_back(fmt::format("{} (peak {} GiB)", what, gib(most)));
    } catch (const InputError&) {
      // Not a valid layout on this cluster (layers, heads or GPUs not divisible): not offered.
    }
  }
  return out;
}

} // namespace

std::string memory_breakdown(const workloads::StageMemory& m)
{
  return fmt::format("weights {}, gradients {}, optimizer states {}, activations {} (of {} forward passes held), "
                     "NCCL buffers {} GiB",
                     gib(m.weight_bytes), gib(m.gradient_bytes), gib(m.optimizer_bytes), gib(m.activation_bytes),
                     m.microbatches_in_flight, gib(m.nccl_buffer_bytes));
}

double nccl_buffer_bytes(const workloads::Workload& w, int rank, const topo::Topology& topology,
                         const sim::NcclSettings& settings, const std::function<int(int)>& global)
{
  double bytes = 0;
  const auto& map = w.ranks[static_cast<std::size_t>(rank)].comm_map;
  for (std::int32_t id : map) {
    if (id < 0) continue;
    const auto& comm = w.communicators[static_cast<std::size_t>(id)];
    if (comm.ranks.size() < 2) continue;
    std::vector<int> gpus;
    gpus.reserve(comm.ranks.size());
    for (int r : comm.ranks)
      gpus.push_back(global(r));
    const sim::NcclCommunicator nccl(gpus, topology, settings);
    // Unequal GPUs per node: NCCL's model has no graph; its p2p channels (two per peer) stand in.
    const int channels = nccl.tuning() ? nccl.tuning()->comm_channels : 2 * nccl.p2p_lanes();
    bytes += channels * kNcclConnectionBufferBytes;
  }
  return bytes;
}

GpuMemoryReport check_gpu_memory(const WorkloadSpec& spec, const workloads::Workload& w, const topo::Topology& topology,
                                 const sim::NcclSettings& settings, const calibration::Profile* profile,
                                 const std::function<int(int)>& global, const std::string& job)
{
  GpuMemoryReport r;
  r.job = job;
  const workloads::MegatronConfig& c = spec.megatron;
  const int world = w.world_size();
  r.stages = workloads::megatron_memory(c, world);
  const workloads::MegatronLayout L = workloads::resolve_layout(c, world);
  double most_nccl = 0;
  for (std::size_t s = 0; s < r.stages.size(); ++s) {
    const int rank = L.rank(0, 0, 0, static_cast<int>(s));
    r.stages[s].nccl_buffer_bytes = nccl_buffer_bytes(w, rank, topology, settings, global);
    most_nccl = std::max(most_nccl, r.stages[s].nccl_buffer_bytes);
  }
  r.peak_stage = peak_stage(r.stages);
  if (spec.memory_limit_GiB) {
    r.capacity_bytes = *spec.memory_limit_GiB * kGiB;
    r.capacity_source = "training.memory_limit_GiB";
  } else if (profile) {
    if (const auto* sheet = calibration::find_datasheet(profile->gpu_model); sheet && sheet->memory_MiB > 0) {
      r.capacity_bytes = sheet->memory_MiB * 1024.0 * 1024.0;
      r.capacity_source = fmt::format("{} ({})", profile->gpu_model, sheet->memory_source);
    }
  }
  r.checked = spec.memory_check && r.capacity_bytes > 0;
  if (r.checked && r.peak_bytes() > r.capacity_bytes) {
    const auto& m = r.stages[static_cast<std::size_t>(r.peak_stage)];
    const auto ok = fixes(c, world, most_nccl, r.capacity_bytes);
    std::string fix = ok.empty() ? "no single change of ZeRO stage, recompute, micro-batch, pp or tp fits; combine "
                                   "them, or use more GPUs"
                                 : fmt::format("one of: {}", fmt::join(ok, "; "));
    fix += "; or set training.memory_check: false to simulate it anyway";
    throw InputError(spec.memory_where,
                     fmt::format("{}the layout does not fit in GPU memory: pipeline stage {} needs {} GiB per GPU ({}) "
                                 "and {} offers {} GiB (workloads/README.md, \"Memory\")",
                                 job.empty() ? "" : fmt::format("job '{}': ", job), r.peak_stage, gib(r.peak_bytes()),
                                 memory_breakdown(m), r.capacity_source, gib(r.capacity_bytes)),
                     fix);
  }
  return r;
}

} // namespace railyard::scenario
