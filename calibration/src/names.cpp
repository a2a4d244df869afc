#include "railyard/calibration/names.hpp"

#include <algorithm>
#include <cctype>

namespace railyard::calibration {
namespace {

std::string lower(std::string_view s)
{
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

} // namespace

std::string to_string(LinkKind k)
{
  switch (k) {
  case LinkKind::NvLink:
    return "nvlink";
  case LinkKind::Xgmi:
    return "xgmi";
  case LinkKind::Pcie:
    return "pcie";
  case LinkKind::Network:
    return "network";
  }
  return "?";
}

std::optional<LinkKind> link_kind_from_string(std::string_view s)
{
  const std::string k = lower(s);
  if (k == "nvlink") return LinkKind::NvLink;
  if (k == "xgmi") return LinkKind::Xgmi;
  if (k == "pcie" || k == "pci") return LinkKind::Pcie;
  if (k == "network" || k == "net") return LinkKind::Network;
  return std::nullopt;
}

std::string library_name(CollectiveLibrary l)
{
  return l == CollectiveLibrary::Rccl ? "RCCL" : "NCCL";
}

std::optional<CollectiveLibrary> collective_library_from_string(std::string_view s)
{
  const std::string k = lower(s);
  if (k == "nccl") return CollectiveLibrary::Nccl;
  if (k == "rccl") return CollectiveLibrary::Rccl;
  return std::nullopt;
}

std::string to_string(DType t)
{
  switch (t) {
  case DType::Fp32:
    return "fp32";
  case DType::Tf32:
    return "tf32";
  case DType::Fp16:
    return "fp16";
  case DType::Bf16:
    return "bf16";
  case DType::Fp8:
    return "fp8";
  }
  return "?";
}

std::optional<DType> dtype_from_string(std::string_view s)
{
  const std::string k = lower(s);
  if (k == "fp32" || k == "float" || k == "float32") return DType::Fp32;
  if (k == "tf32") return DType::Tf32;
  if (k == "fp16" || k == "half" || k == "float16") return DType::Fp16;
  if (k == "bf16" || k == "bfloat16") return DType::Bf16;
  if (k == "fp8" || k == "e4m3" || k == "fp8_e4m3" || k == "float8") return DType::Fp8;
  return std::nullopt;
}

std::string algorithm_name(const std::optional<models::Algorithm>& a)
{
  return a ? models::to_string(*a) : "auto";
}
std::string protocol_name(const std::optional<models::Protocol>& p)
{
  return p ? models::to_string(*p) : "auto";
}

bool parse_algorithm(const std::string& s, std::optional<models::Algorithm>& out)
{
  if (lower(s) == "auto") {
    out.reset();
    return true;
  }
  const auto a = models::algorithm_from_string(s);
  if (!a) return false;
  out = a;
  return true;
}

bool parse_protocol(const std::string& s, std::optional<models::Protocol>& out)
{
  if (lower(s) == "auto") {
    out.reset();
    return true;
  }
  const auto p = models::protocol_from_string(s);
  if (!p) return false;
  out = p;
  return true;
}

} // namespace railyard::calibration
