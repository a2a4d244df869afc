// Names the calibration layer reads and writes: link kinds, data types of compute kernels, and the spellings of
// NCCL's collectives, algorithms and protocols in profiles (NCCL's own spellings, "auto" for NCCL's own choice).
#pragma once

#include "railyard/models/collective.hpp"
#include "railyard/models/nccl_tuning.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace railyard::calibration {

/// What a measured latency/bandwidth belongs to. NvLink, Xgmi and Pcie are GPU-to-GPU paths inside a node (Xgmi: AMD
/// Instinct's Infinity Fabric links, a direct link from each GPU to each other GPU of an MI300X node, RCCL's "XGMI"
/// transport); Network is the whole path between nodes as NCCL/RCCL see it (GPU -> NIC -> fabric -> NIC -> GPU),
/// which is what nccl-tests and rccl-tests measure.
enum class LinkKind { NvLink, Xgmi, Pcie, Network };

std::string to_string(LinkKind k); ///< "nvlink", "xgmi", "pcie", "network"
std::optional<LinkKind> link_kind_from_string(std::string_view s);

/// The collective library a measurement ran on: NVIDIA's NCCL, or AMD's RCCL (ROCm's port of NCCL, same API and
/// version numbering, its own algorithms and tuning), so a fit records which one it describes. It is the cost models'
/// own enum (models/nccl_tuning.hpp), so a profile's library names the model that prices its calls.
using CollectiveLibrary = models::CollectiveLibrary;

std::string library_name(CollectiveLibrary l);                                       ///< "NCCL", "RCCL"
std::optional<CollectiveLibrary> collective_library_from_string(std::string_view s); ///< any case

/// Element types of the compute kernels the kernel model knows (GEMM dtypes of the Tensor Cores, plus fp32).
enum class DType { Fp32, Tf32, Fp16, Bf16, Fp8 };

std::string to_string(DType t); ///< "fp32", "tf32", "fp16", "bf16", "fp8"
/// Accepts the names above and common aliases: "float"/"float32", "half"/"float16", "bfloat16", "e4m3"/"fp8_e4m3".
std::optional<DType> dtype_from_string(std::string_view s);

/// "Ring", "NVLSTree", ... or "auto" when NCCL chose (no NCCL_ALGO forced).
std::string algorithm_name(const std::optional<models::Algorithm>& a);
std::string protocol_name(const std::optional<models::Protocol>& p);
/// Parses a profile's or a CSV's algorithm/protocol field; "auto" (any case) is NCCL's own choice.
/// Returns false when the text is neither "auto" nor a known name.
bool parse_algorithm(const std::string& s, std::optional<models::Algorithm>& out);
bool parse_protocol(const std::string& s, std::optional<models::Protocol>& out);

/// The names every error message lists as accepted spellings.
inline constexpr const char* kAlgorithmNames = "auto, Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain, PAT";
inline constexpr const char* kProtocolNames = "auto, LL, LL128, Simple";
inline constexpr const char* kCollectiveNames =
    "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv";
inline constexpr const char* kLinkKindNames = "nvlink, xgmi, pcie, network";
inline constexpr const char* kCollectiveLibraryNames = "NCCL, RCCL";
inline constexpr const char* kDTypeNames = "fp32, tf32, fp16, bf16, fp8";

} // namespace railyard::calibration
