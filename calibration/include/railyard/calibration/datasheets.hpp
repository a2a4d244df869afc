// Datasheet peaks of the GPUs Railyard knows, by the name CUDA reports. A kernel-model fit divides a measured rate
// by these to get an efficiency. Tensor Core rates are dense: NVIDIA's datasheets list them "with sparsity", which
// is twice the dense rate.
#pragma once

#include "railyard/calibration/names.hpp"

#include <string>

namespace railyard::calibration {

struct GpuDatasheet {
  const char* match; ///< lowercase, without spaces or dashes, found in the normalised CUDA name
  const char* name;
  double memory_bandwidth_GBps;                                          ///< HBM peak
  double tflops_fp32, tflops_tf32, tflops_fp16, tflops_bf16, tflops_fp8; ///< dense; 0 where the GPU has none
  double nvlink_GBps_per_direction; ///< 0 where the GPU has no NVLink to an NVSwitch
  double pcie_GBps_per_direction;
  const char* source;
  /// Memory the part offers, as nvidia-smi's memory.total reports it (MiB); 0 where Railyard does not carry it.
  double memory_MiB;
  const char* memory_source;

  [[nodiscard]] double peak_tflops(DType t) const;
};

/// The datasheet whose pattern the model name contains, or nullptr (unknown GPU, or a variant whose numbers
/// Railyard does not carry, such as H100 NVL / H200 NVL).
const GpuDatasheet* find_datasheet(const std::string& gpu_model);

} // namespace railyard::calibration
