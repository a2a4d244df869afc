#include "railyard/calibration/datasheets.hpp"

#include <array>
#include <cctype>

namespace railyard::calibration {
namespace {

constexpr const char* kH100Source =
    "NVIDIA H100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h100/ (SXM5: HBM3 3.35 TB/s, "
    "NVLink 900 GB/s both directions together, PCIe Gen5 128 GB/s both directions; Tensor Core TFLOPS listed with "
    "sparsity, dense is half: TF32 494.7, BF16/FP16 989.4, FP8 1978.9; FP32 66.9 as in NVIDIA's Hopper whitepaper)";
constexpr const char* kH100PcieSource =
    "NVIDIA H100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h100/ (PCIe: HBM2e 2 TB/s, "
    "PCIe Gen5 128 GB/s both directions; Tensor Core TFLOPS listed with sparsity, dense is half: TF32 378, "
    "BF16/FP16 756.5, FP8 1513; FP32 51)";
constexpr const char* kH200Source =
    "NVIDIA H200 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h200/ (SXM: HBM3e 4.8 TB/s, "
    "NVLink 900 GB/s both directions together, PCIe Gen5 128 GB/s both directions; compute as H100 SXM: dense "
    "TF32 494.7, BF16/FP16 989.4, FP8 1978.9, FP32 66.9)";
constexpr const char* kA100Source =
    "NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/a100/ (FP32 19.5, TF32 156, "
    "BF16/FP16 312 dense TFLOPS; HBM2e 2,039 GB/s on the 80GB SXM4, 1,935 GB/s on the 80GB PCIe, HBM2 1,555 GB/s "
    "on the 40GB parts; NVLink 600 GB/s both directions together; PCIe Gen4 64 GB/s both directions)";

constexpr const char* kMi300xSource =
    "AMD Instinct MI300X data sheet, https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
    "amd-instinct-mi300x-data-sheet.pdf (OAM, 304 CUs at 2,100 MHz: HBM3 192 GB at 5.3 TB/s; 7 AMD Infinity Fabric "
    "(xGMI) links of 128 GB/s both directions together, so 64 GB/s each way and 448 GB/s per GPU to its 7 peers; PCIe "
    "Gen5 x16 128 GB/s both directions; peak dense TFLOPS, with sparsity twice: FP32 matrix 163.4, TF32 653.7, "
    "FP16/BF16 1,307.4, FP8 2,614.9)";

// Memory: what nvidia-smi prints as memory.total on each part (the total of its "Memory-Usage" column, e.g.
// "1MiB / 81559MiB"), the capacity a training run can allocate from. The datasheet's "80GB" is 80 GiB of HBM
// (81920 MiB), of which an H100 SXM shows 81559 MiB.

// Most specific patterns first: "h100pcie" before "h100".
// rocm-smi's VRAM Total Memory of an MI300X is 206141652992 B = 196592 MiB, the 192 GiB of its 8 HBM3 stacks less
// 16 MiB the driver keeps; "AMD Instinct MI300X VF" (an SR-IOV function, as on Azure ND MI300X v5) is the same part.
constexpr std::array<GpuDatasheet, 10> kSheets{{
    {"mi300x", "AMD Instinct MI300X OAM 192GB", 5300, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 448, 64, kMi300xSource,
     196592,
     "rocm-smi VRAM Total Memory of 'AMD Instinct MI300X': 206141652992 B = 196592 MiB (datasheet: 192 GB HBM3)"},
    {"h200nvl", nullptr, 0, 0, 0, 0, 0, 0, 0, 0, nullptr, 0, nullptr},
    {"h100nvl", nullptr, 0, 0, 0, 0, 0, 0, 0, 0, nullptr, 0, nullptr},
    {"h200", "NVIDIA H200 SXM 141GB", 4800, 66.9, 494.7, 989.4, 989.4, 1978.9, 450, 64, kH200Source, 143771,
     "nvidia-smi memory.total of 'NVIDIA H200': 143771MiB (datasheet: 141 GB HBM3e)"},
    {"h100pcie", "NVIDIA H100 PCIe 80GB", 2000, 51, 378, 756.5, 756.5, 1513, 0, 64, kH100PcieSource, 81920,
     "nvidia-smi memory.total of 'NVIDIA H100 PCIe': 81920MiB (datasheet: 80 GB HBM2e)"},
    {"h100", "NVIDIA H100 SXM5 80GB", 3350, 66.9, 494.7, 989.4, 989.4, 1978.9, 450, 64, kH100Source, 81559,
     "nvidia-smi memory.total of 'NVIDIA H100 80GB HBM3': 81559MiB (datasheet: 80 GB HBM3)"},
    {"a100sxm480gb", "NVIDIA A100 SXM4 80GB", 2039, 19.5, 156, 312, 312, 0, 300, 32, kA100Source, 81920,
     "nvidia-smi memory.total of the A100 80GB parts: 81920MiB"},
    {"a100sxm440gb", "NVIDIA A100 SXM4 40GB", 1555, 19.5, 156, 312, 312, 0, 300, 32, kA100Source, 40960,
     "nvidia-smi memory.total of the A100 40GB parts: 40960MiB"},
    {"a10080gbpcie", "NVIDIA A100 PCIe 80GB", 1935, 19.5, 156, 312, 312, 0, 0, 32, kA100Source, 81920,
     "nvidia-smi memory.total of the A100 80GB parts: 81920MiB"},
    {"a100pcie40gb", "NVIDIA A100 PCIe 40GB", 1555, 19.5, 156, 312, 312, 0, 0, 32, kA100Source, 40960,
     "nvidia-smi memory.total of the A100 40GB parts: 40960MiB"},
}};

std::string normalise(const std::string& s)
{
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c)))
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

} // namespace

double GpuDatasheet::peak_tflops(DType t) const
{
  switch (t) {
  case DType::Fp32:
    return tflops_fp32;
  case DType::Tf32:
    return tflops_tf32;
  case DType::Fp16:
    return tflops_fp16;
  case DType::Bf16:
    return tflops_bf16;
  case DType::Fp8:
    return tflops_fp8;
  }
  return 0;
}

const GpuDatasheet* find_datasheet(const std::string& gpu_model)
{
  const std::string n = normalise(gpu_model);
  for (const auto& s : kSheets)
    if (n.find(s.match) != std::string::npos) return s.name ? &s : nullptr;
  return nullptr;
}

} // namespace railyard::calibration
