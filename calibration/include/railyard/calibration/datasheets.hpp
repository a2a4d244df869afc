// Datasheet peaks of the GPUs Railyard knows, by the name CUDA (or ROCm's HIP) reports. A kernel-model fit divides
// a measured rate by these to get an efficiency. Tensor Core / Matrix Core rates are dense: NVIDIA's datasheets list
// them "with sparsity", which is twice the dense rate; AMD's list both.
#pragma once

#include "railyard/calibration/names.hpp"

#include <string>

namespace railyard::calibration {

struct GpuDatasheet {
  const char* match; ///< lowercase, without spaces or dashes, found in the normalised CUDA name
  const char* name;
  double memory_bandwidth_GBps;                                          ///< HBM peak
  double tflops_fp32, tflops_tf32, tflops_fp16, tflops_bf16, tflops_fp8; ///< dense; 0 where the GPU has none
  /// The GPU's scale-up links together, one direction: NVLink to the NVSwitches, or AMD's xGMI links to its peers
  /// (7 x 64 GB/s on MI300X); 0 where the GPU has neither.
  double scale_up_GBps_per_direction;
  double pcie_GBps_per_direction;
  const char* source;
  /// Memory the part offers, as nvidia-smi's memory.total (rocm-smi's VRAM Total Memory) reports it (MiB); 0 where
  /// Railyard does not carry it.
  double memory_MiB;
  const char* memory_source;

  [[nodiscard]] double peak_tflops(DType t) const;
};

/// The datasheet whose pattern the model name contains, or nullptr (unknown GPU, or a variant whose numbers
/// Railyard does not carry, such as H100 NVL / H200 NVL).
const GpuDatasheet* find_datasheet(const std::string& gpu_model);

} // namespace railyard::calibration
