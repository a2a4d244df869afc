// gemm_bench: cuBLASLt matrix products over shapes for bf16, fp16, fp8 (e4m3, where the GPU has it: compute
// capability 8.9 and up), tf32 and fp32, timed with CUDA events on random data. A few output elements are checked
// against a host dot product (the `wrong` column). Writes a calibration CSV (program gemm_bench).
#include "common.hpp"

#include "gpu_blaslt.hpp"

using namespace railyard::calib;

#define RY_LT(call)                                                                                                    \
  do {                                                                                                                 \
    const cublasStatus_t ry_st_ = (call);                                                                              \
    if (ry_st_ != CUBLAS_STATUS_SUCCESS) {                                                                             \
      std::fprintf(stderr, "%s:%d: %s failed: cuBLAS status %d\n", __FILE__, __LINE__, #call, int(ry_st_));            \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

namespace {

struct DType {
  const char* name;
  cudaDataType_t ab; // A and B
  cudaDataType_t cd; // C and D
  cublasComputeType_t compute;
  size_t ab_bytes, cd_bytes;
  int min_cc;           // major*10 + minor
  double rel_tolerance; // for the spot check, relative to sum |a b|
};

const DType kTypes[] = {
    {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, 80, 1e-2},
    {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, 80, 5e-3},
    {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, 89, 1e-2},
    {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, 80, 5e-3},
    {"fp32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 80, 1e-4},
};

// Deterministic values k/8 for k in -8..7: at most 4 significant bits, so exact in every type above, e4m3 included.
__host__ __device__ inline float value_at(unsigned long long i, unsigned seed)
{
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<float>(static_cast<int>(x % 16) - 8) / 8.0f;
}

template <class T>
__global__ void fill(T* p, size_t n, unsigned seed)
{
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<T>(value_at(i, seed));
}

void fill_any(void* p, size_t n, cudaDataType_t t, unsigned seed, cudaStream_t s)
{
  switch (t) {
  case CUDA_R_16BF:
    fill<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed);
    break;
  case CUDA_R_16F:
    fill<<<1024, 256, 0, s>>>(static_cast<__half*>(p), n, seed);
    break;
  case CUDA_R_8F_E4M3:
    fill<<<1024, 256, 0, s>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed);
    break;
  default:
    fill<<<1024, 256, 0, s>>>(static_cast<float*>(p), n, seed);
    break;
  }
  RY_CUDA(cudaGetLastError());
}

float to_float(const void* base, size_t i, cudaDataType_t t)
{
  switch (t) {
  case CUDA_R_16BF:
    return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
  case CUDA_R_16F:
    return __half2float(static_cast<const __half*>(base)[i]);
  default:
    return static_cast<const float*>(base)[i];
  }
}

struct Shape {
  long long m, n, k;
};

const char* kUsage =
    "usage: gemm_bench --out FILE.csv [--device N] [--dtypes bf16,fp16,fp8,tf32,fp32] [--max-dim 16384]\n"
    "                  [--time-per-shape-ms 100]\n"
    "  D = A^T B (cuBLASLt, A and B stored k-major) for square shapes 256..max-dim and transformer-like shapes.\n";

} // namespace

int main(int argc, char** argv)
{
  Options o(argc, argv, kUsage);
  o.allow({"out", "device", "dtypes", "max-dim", "time-per-shape-ms"});
  if (!o.has("out")) o.fail("--out is required");
  const int dev = static_cast<int>(o.integer("device", 0));
  const long long max_dim = o.integer("max-dim", 16384);
  const double budget_s = o.number("time-per-shape-ms", 100) * 1e-3;
  const auto wanted = o.list("dtypes", "bf16,fp16,fp8,tf32,fp32");
  RY_CUDA(cudaSetDevice(dev));
  cudaDeviceProp p{};
  RY_CUDA(cudaGetDeviceProperties(&p, dev));
  const int cc = p.major * 10 + p.minor;

  std::vector<Shape> shapes;
  for (long long d = 256; d <= max_dim; d *= 2)
    shapes.push_back({d, d, d});
  // Shapes of a transformer layer's projections (tokens x hidden x hidden and the 4x MLP), where they fit.
  for (Shape s : {Shape{8192, 4096, 4096}, Shape{8192, 16384, 4096}, Shape{8192, 4096, 16384}, Shape{2048, 8192, 1024}})
    if (s.m <= max_dim && s.n <= max_dim && s.k <= max_dim) shapes.push_back(s);

  CsvWriter w(o.str("out"), "gemm_bench");
  common_metadata(w, dev, argc, argv);
  w.meta("timing", "CUDA events around each product; alpha 1, beta 0; bytes = A + B read + D written");
  w.meta("layout", "cuBLASLt column-major D(m x n) = A^T (A stored k x m) times B (k x n)");
  w.header("dtype,m,n,k,flops,bytes,time_us,tflops,time_min_us,time_max_us,iters,wrong");

  cublasLtHandle_t lt;
  RY_LT(cublasLtCreate(&lt));
  cudaStream_t s;
  RY_CUDA(cudaStreamCreate(&s));
  cudaEvent_t e0, e1;
  RY_CUDA(cudaEventCreate(&e0));
  RY_CUDA(cudaEventCreate(&e1));
  const size_t workspace_bytes = 64ull << 20;
  void* workspace = nullptr;
  RY_CUDA(cudaMalloc(&workspace, workspace_bytes));

  for (const auto& t : kTypes) {
    if (std::find(wanted.begin(), wanted.end(), t.name) == wanted.end()) continue;
    if (cc < t.min_cc) {
      w.note(
          format("%s skipped: compute capability %d.%d has no %s Tensor Core path", t.name, p.major, p.minor, t.name));
      continue;
    }
    for (const auto& sh : shapes) {
      size_t free_b = 0, total_b = 0;
      RY_CUDA(cudaMemGetInfo(&free_b, &total_b));
      const size_t a_bytes = sh.k * sh.m * t.ab_bytes, b_bytes = sh.k * sh.n * t.ab_bytes,
                   d_bytes = sh.m * sh.n * t.cd_bytes;
      if (a_bytes + b_bytes + d_bytes > 0.8 * free_b) {
        w.note(format("%s %lldx%lldx%lld skipped: does not fit in GPU memory", t.name, sh.m, sh.n, sh.k));
        continue;
      }
      void *a = nullptr, *b = nullptr, *d = nullptr;
      RY_CUDA(cudaMalloc(&a, a_bytes));
      RY_CUDA(cudaMalloc(&b, b_bytes));
      RY_CUDA(cudaMalloc(&d, d_bytes));
      fill_any(a, sh.k * sh.m, t.ab, 1, s);
      fill_any(b, sh.k * sh.n, t.ab, 2, s);

      cublasLtMatmulDesc_t op;
      RY_LT(cublasLtMatmulDescCreate(&op, t.compute, CUDA_R_32F));
      const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      RY_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
      RY_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
      cublasLtMatrixLayout_t la, lb, lc;
      RY_LT(cublasLtMatrixLayoutCreate(&la, t.ab, sh.k, sh.m, sh.k));
      RY_LT(cublasLtMatrixLayoutCreate(&lb, t.ab, sh.k, sh.n, sh.k));
      RY_LT(cublasLtMatrixLayoutCreate(&lc, t.cd, sh.m, sh.n, sh.m));
      cublasLtMatmulPreference_t pref;
      RY_LT(cublasLtMatmulPreferenceCreate(&pref));
      RY_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                 sizeof workspace_bytes));
      cublasLtMatmulHeuristicResult_t heur{};
      int found = 0;
      const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found);
      const float alpha = 1.0f, beta = 0.0f;
      if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
        w.note(format("%s %lldx%lldx%lld skipped: cuBLASLt offers no algorithm (status %d)", t.name, sh.m, sh.n, sh.k,
                      int(hs)));
      } else {
        const auto run = [&] {
          RY_LT(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, lc, d, lc, &heur.algo, workspace,
                               workspace_bytes, s));
        };
        const auto timed = [&] {
          RY_CUDA(cudaEventRecord(e0, s));
          run();
          RY_CUDA(cudaEventRecord(e1, s));
          RY_CUDA(cudaEventSynchronize(e1));
          float ms = 0;
          RY_CUDA(cudaEventElapsedTime(&ms, e0, e1));
          return ms * 1e-3;
        };
        for (int i = 0; i < 3; ++i)
          timed();
        const double one = timed();
        const int iters = std::max(5, std::min(50, static_cast<int>(budget_s / std::max(one, 1e-6))));
        std::vector<double> times;
        for (int i = 0; i < iters; ++i)
          times.push_back(timed());
        // Spot check: D[i, j] = sum_l A[l, i] B[l, j], on the grid values of value_at.
        int wrong = 0;
        const long long is[] = {0, sh.m - 1, sh.m / 2, 1 % sh.m};
        const long long js[] = {0, sh.n - 1, sh.n / 3, sh.n - 2};
        for (int c = 0; c < 4; ++c) {
          const long long i = is[c], j = js[c];
          double expect = 0, scale = 0;
          for (long long l = 0; l < sh.k; ++l) {
            const double x = value_at(i * sh.k + l, 1), y = value_at(j * sh.k + l, 2);
            expect += x * y;
            scale += std::fabs(x * y);
          }
          std::vector<unsigned char> got(t.cd_bytes);
          RY_CUDA(cudaMemcpy(got.data(), static_cast<char*>(d) + (j * sh.m + i) * t.cd_bytes, t.cd_bytes,
                             cudaMemcpyDeviceToHost));
          const double g = to_float(got.data(), 0, t.cd);
          // The output type's own rounding (bf16: 2^-8 relative) plus the type's accumulation tolerance.
          const double out_round = t.cd == CUDA_R_16BF ? 1.0 / 256 : t.cd == CUDA_R_16F ? 1.0 / 2048 : 0;
          if (!(std::fabs(g - expect) <= t.rel_tolerance * scale + out_round * std::fabs(expect) + 1e-6)) ++wrong;
        }
        const Stats st = stats_of(times);
        const double flops = 2.0 * sh.m * sh.n * sh.k;
        w.row({t.name, std::to_string(sh.m), std::to_string(sh.n), std::to_string(sh.k), g6(flops),
               g6(double(a_bytes + b_bytes + d_bytes)), g6(st.mean * 1e6), g6(flops / st.mean / 1e12), g6(st.min * 1e6),
               g6(st.max * 1e6), std::to_string(st.n), std::to_string(wrong)});
      }
      RY_LT(cublasLtMatmulPreferenceDestroy(pref));
      RY_LT(cublasLtMatrixLayoutDestroy(la));
      RY_LT(cublasLtMatrixLayoutDestroy(lb));
      RY_LT(cublasLtMatrixLayoutDestroy(lc));
      RY_LT(cublasLtMatmulDescDestroy(op));
      RY_CUDA(cudaFree(a));
      RY_CUDA(cudaFree(b));
      RY_CUDA(cudaFree(d));
    }
  }
  RY_CUDA(cudaFree(workspace));
  RY_LT(cublasLtDestroy(lt));
  w.complete();
  return 0;
}
