// A profile: the measured (or published) numbers of one GPU system that the simulator runs on. YAML, versioned
// (`railyard_profile: 1`); every number carries its source, a citation of a public document or the input files a
// fit came from with the fit's residual. calibration/README.md documents the format field by field.
//
// What the simulator asks (all pure lookups):
//   link(kind)                         latency and per-direction bandwidth of nvlink / pcie / network
//   collective_time(call, link, n)     time of one collective at a size, from the fitted pieces
//   kernel_time(flops, bytes, dtype)   roofline time of a compute kernel
//   gemm_time(m, n, k, batch, ...)     a GEMM by its output tiles and waves over the SMs (roofline without `gemm:`)
#pragma once

#include "railyard/calibration/digest.hpp"
#include "railyard/calibration/fit.hpp"
#include "railyard/calibration/names.hpp"
#include "railyard/common/units.hpp"
#include "railyard/models/collective.hpp"

#include <optional>
#include <string>
#include <vector>

namespace railyard::calibration {

inline constexpr int kProfileVersion = 1;

/// The residual of a fit and the input files it came from (paths as listed in Profile::inputs).
struct FitRecord {
  FitQuality quality;
  std::vector<std::string> inputs;
};

struct LinkParams {
  LinkKind kind = LinkKind::NvLink;
  Seconds latency{0};
  std::string latency_source;
  BytesPerSec bandwidth{0}; ///< per direction
  std::string bandwidth_source;
  std::optional<FitRecord> fit;
  int line = 0; ///< line of the entry in the profile file, for messages and summaries; 0 when built in memory
};

/// time(size) = latency + size * busbw_factor(collective, n) / busbw for sizes from `from` on (up to the next
/// piece). busbw is nccl-tests' bus bandwidth (doc/PERFORMANCE.md); it may be infinite where the time does not grow
/// with size inside the piece (latency-bound small messages).
struct CollectivePiece {
  Bytes from{0};
  Seconds latency{0};
  BytesPerSec busbw{0};
  FitQuality quality;
};

struct CollectiveFit {
  models::CollectiveKind collective = models::CollectiveKind::AllReduce;
  std::optional<models::Algorithm> algorithm; ///< empty: "auto", what NCCL chose itself
  std::optional<models::Protocol> protocol;   ///< empty: "auto"
  LinkKind link = LinkKind::NvLink;
  int nranks = 0;
  int nodes = 1;
  Bytes measured_min{0}; ///< smallest and largest size measured: outside, the pieces extrapolate
  Bytes measured_max{0};
  std::vector<CollectivePiece> pieces; ///< ordered; the first starts at 0 bytes
  std::string source;                  ///< citation, or what the fit was made from
  std::optional<FitRecord> fit;        ///< over all points of all pieces
  int line = 0;                        ///< line of the entry in the profile file; 0 when built in memory

  /// Time at `size` for `nranks` ranks. With a rank count other than the measured one, the busbw (a per-link
  /// quantity, independent of n by nccl-tests' construction) is kept and the factor of the new n applied; the
  /// latency is kept as measured.
  [[nodiscard]] Seconds time(Bytes size, int nranks) const;
  [[nodiscard]] const CollectivePiece& piece_at(Bytes size) const;
};

struct ComputeParams {
  DType dtype = DType::Bf16;
  double peak_flops = 0; ///< FLOP/s (dense), datasheet
  std::string peak_source;
  double efficiency = 0; ///< fraction of peak reached by large GEMMs
  std::string efficiency_source;
  std::optional<FitRecord> fit;
};

/// How GEMMs fill the GPU (NVIDIA, "Matrix Multiplication Background User's Guide", section "Dimension Quantization
/// Effects"): the output is cut into tile_m x tile_n tiles, one thread block each; the SMs run one tile each at a
/// time, so a GEMM takes ceil(tiles / SMs) waves of one tile's time. A tile of depth k takes 2 tile_m tile_n k /
/// (peak x efficiency / SMs): a GEMM whose tiles fill every wave runs at the compute entry's efficiency.
struct GemmTiling {
  int tile_m = 0, tile_n = 0; ///< output tile of one thread block
  std::string tile_source;
  int sms = 0; ///< streaming multiprocessors of the GPU
  std::string sms_source;
  int line = 0; ///< line of the `gemm:` block; 0 when built in memory

  /// Tiles of a [m x n] output, `batch` times, with the tile laid either way (cuBLAS has kernels of both, e.g.
  /// 256x128 and 128x256); the fewer.
  [[nodiscard]] double tiles(double m, double n, double batch) const;
  /// ceil(tiles / (sms - sms_taken)): waves on the SMs left when `sms_taken` run other kernels (NCCL's blocks).
  [[nodiscard]] double waves(double m, double n, double batch, int sms_taken = 0) const;
};

/// Roofline: time = max(flops / (peak_flops * efficiency), bytes / (memory_bandwidth * memory_efficiency))
///                  + launch_overhead.
/// With `gemm`, a GEMM's compute term is waves x tile time instead (GemmTiling).
struct KernelModel {
  Seconds launch_overhead{0};
  std::string launch_overhead_source;
  BytesPerSec memory_bandwidth{0}; ///< datasheet peak
  std::string memory_bandwidth_source;
  double memory_efficiency = 0;
  std::string memory_efficiency_source;
  std::optional<FitRecord> memory_fit;
  std::vector<ComputeParams> compute;
  std::optional<GemmTiling> gemm;

  [[nodiscard]] const ComputeParams* compute_for(DType t) const;
};

/// What the training framework costs on the host beyond its kernels (sim::HostModel): per kernel and per
/// communication call issued, per micro-batch, per step, and whether it synchronises the device after each pipeline
/// transfer. Fitted from measured step times (railyard calibrate --steps).
struct FrameworkModel {
  std::string name; ///< the stack that was measured, e.g. "Megatron-DeepSpeed"
  Seconds launch{0};
  Seconds collective{0};
  Seconds microbatch{0};
  Seconds step{0};
  bool sync_after_p2p = true;
  std::string source;           ///< how and from what the numbers were obtained
  std::optional<FitRecord> fit; ///< residuals on the rows it was fitted to
  int line = 0;                 ///< line of the `framework:` block; 0 when built in memory
};

struct Profile {
  std::string file; ///< where it was read from (for error messages); empty when built in memory
  std::string system;
  std::string description;
  std::string created_by;
  std::string gpu_model;
  std::string gpu_model_source;
  int gpus_per_node = 0;
  std::string gpus_per_node_source;
  /// The collective library the measurements ran on (`nccl: library:`; NCCL when the profile does not say).
  CollectiveLibrary collective_library = CollectiveLibrary::Nccl;
  std::string nccl_version; ///< the library's version (NCCL's or RCCL's); may be empty when unknown
  std::string nccl_version_source;
  std::vector<InputFile> inputs;
  std::vector<LinkParams> links;
  std::vector<CollectiveFit> collectives;
  std::optional<KernelModel> kernel;
  std::optional<FrameworkModel> framework;

  [[nodiscard]] const LinkParams* link(LinkKind k) const;
  /// The fit for (collective, algorithm, protocol, link); among several rank counts the closest to `nranks`.
  /// Empty algorithm/protocol ask for the "auto" entry (NCCL's own choice). nullptr when the profile has none.
  [[nodiscard]] const CollectiveFit* collective(models::CollectiveKind c, std::optional<models::Algorithm> a,
                                                std::optional<models::Protocol> p, LinkKind link, int nranks) const;
  [[nodiscard]] std::optional<Seconds> collective_time(models::CollectiveKind c, std::optional<models::Algorithm> a,
                                                       std::optional<models::Protocol> p, LinkKind link, Bytes size,
                                                       int nranks) const;
  /// Roofline time; InputError naming the profile when it has no kernel model or no efficiency for `dtype` while
  /// `flops` > 0.
  [[nodiscard]] Seconds kernel_time(double flops, Bytes bytes, DType dtype) const;
  /// A GEMM C[m x n] = A[m x k] B[k x n], `batch` times, moving `bytes`: with a `gemm:` block, launch overhead +
  /// max(waves x tile time, memory time), on the SMs that `sms_taken` leave (GemmTiling); without one,
  /// kernel_time(2 m n k batch, bytes, dtype) (sms_taken then changes nothing).
  [[nodiscard]] Seconds gemm_time(double m, double n, double k, double batch, Bytes bytes, DType dtype,
                                  int sms_taken = 0) const;
};

/// Reads and validates; InputError with file, line, field, rule and fix on anything malformed: unknown or missing
/// fields, a version other than 1, a number without its source, negative or zero bandwidths, pieces out of order,
/// fit inputs not listed under `inputs`, duplicate entries.
Profile read_profile(const std::string& path);
Profile parse_profile(const std::string& text, const std::string& name);

/// YAML text of a profile. Numbers are written with 15 significant digits, so a number that was read from a
/// profile (or made from one with up to 15 digits) is read back as the same double and written as the same text. Throws
/// std::invalid_argument when the profile would not pass read_profile's validation.
std::string profile_to_yaml(const Profile& p);
/// Writes a temporary file beside PATH (checked and fsynced) and renames it to PATH, so PATH is either the old file
/// or the complete new one (common/output_file.hpp ReplacingFile); a failed write is an OutputError.
void write_profile(const Profile& p, const std::string& path);

} // namespace railyard::calibration
