// mem_bench: device memory bandwidth (cudaMemcpyAsync device to device, and a STREAM-style triad kernel) over
// sizes, and the overhead of launching an empty kernel. Writes a calibration CSV (program mem_bench); `bytes` is
// what the operation moves: a copy reads and writes its size, the triad reads two arrays and writes one.
#include "common.hpp"

using namespace railyard::calib;

namespace {

__global__ void triad(float4* a, const float4* b, const float4* c, float s, size_t n)
{
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

__global__ void empty_kernel() {}

__global__ void fill(float* p, size_t n, float v)
{
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = v + static_cast<float>(i % 97);
}

const char* kUsage =
    "usage: mem_bench --out FILE.csv [--device N] [--min-bytes 1M] [--max-bytes 4G] [--iters 20]\n"
    "  Device copies and triad from min to max bytes (per array, doubling), and empty-kernel launches.\n";

} // namespace

int main(int argc, char** argv)
{
  Options o(argc, argv, kUsage);
  o.allow({"out", "device", "min-bytes", "max-bytes", "iters"});
  if (!o.has("out")) o.fail("--out is required");
  const int dev = static_cast<int>(o.integer("device", 0));
  const long long min_bytes = o.integer("min-bytes", 1ll << 20);
  long long max_bytes = o.integer("max-bytes", 4ll << 30);
  const int iters = static_cast<int>(o.integer("iters", 20));
  if (min_bytes < 16 || max_bytes < min_bytes || iters < 1)
    o.fail("need 16 <= --min-bytes <= --max-bytes and --iters >= 1");
  RY_CUDA(cudaSetDevice(dev));
  size_t free_b = 0, total_b = 0;
  RY_CUDA(cudaMemGetInfo(&free_b, &total_b));
  // Three arrays of the largest size must fit, with room to spare.
  while (max_bytes > min_bytes && 3.0 * max_bytes > 0.8 * free_b)
    max_bytes /= 2;

  CsvWriter w(o.str("out"), "mem_bench");
  common_metadata(w, dev, argc, argv);
  w.meta("timing", "CUDA events around each operation; launch rows: events around 1000 back-to-back launches");
  w.header("kernel,bytes,time_us,GBps,time_min_us,time_max_us,iters");

  cudaStream_t s;
  RY_CUDA(cudaStreamCreate(&s));
  cudaEvent_t e0, e1;
  RY_CUDA(cudaEventCreate(&e0));
  RY_CUDA(cudaEventCreate(&e1));
  const auto elapsed_s = [&] {
    float ms = 0;
    RY_CUDA(cudaEventSynchronize(e1));
    RY_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    return ms * 1e-3;
  };

  // Launch overhead: the time between consecutive empty kernels when the host queues them back to back.
  for (int rep = 0; rep < 5; ++rep) {
    const int k = 1000;
    empty_kernel<<<1, 1, 0, s>>>();
    RY_CUDA(cudaStreamSynchronize(s));
    RY_CUDA(cudaEventRecord(e0, s));
    for (int i = 0; i < k; ++i)
      empty_kernel<<<1, 1, 0, s>>>();
    RY_CUDA(cudaEventRecord(e1, s));
    RY_CUDA(cudaGetLastError());
    const double t = elapsed_s() / k;
    w.row({"launch", "0", g6(t * 1e6), "0", g6(t * 1e6), g6(t * 1e6), std::to_string(k)});
  }

  float *a = nullptr, *b = nullptr, *c = nullptr;
  RY_CUDA(cudaMalloc(&a, max_bytes));
  RY_CUDA(cudaMalloc(&b, max_bytes));
  RY_CUDA(cudaMalloc(&c, max_bytes));
  cudaDeviceProp p{};
  RY_CUDA(cudaGetDeviceProperties(&p, dev));
  const int blocks = p.multiProcessorCount * 8;
  fill<<<blocks, 256, 0, s>>>(b, max_bytes / 4, 1.0f);
  fill<<<blocks, 256, 0, s>>>(c, max_bytes / 4, 2.0f);
  RY_CUDA(cudaGetLastError());
  RY_CUDA(cudaStreamSynchronize(s));

  for (long long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    for (int kind = 0; kind < 2; ++kind) {
      std::vector<double> t;
      for (int i = -3; i < iters; ++i) { // three untimed warm-ups
        RY_CUDA(cudaEventRecord(e0, s));
        if (kind == 0)
          RY_CUDA(cudaMemcpyAsync(a, b, bytes, cudaMemcpyDeviceToDevice, s));
        else
          triad<<<blocks, 256, 0, s>>>(reinterpret_cast<float4*>(a), reinterpret_cast<const float4*>(b),
                                       reinterpret_cast<const float4*>(c), 3.0f, bytes / 16);
        RY_CUDA(cudaEventRecord(e1, s));
        RY_CUDA(cudaGetLastError());
        const double dt = elapsed_s();
        if (i >= 0) t.push_back(dt);
      }
      const Stats st = stats_of(t);
      const double moved = kind == 0 ? 2.0 * bytes : 3.0 * bytes;
      w.row({kind == 0 ? "memcpy" : "triad", format("%.0f", moved), g6(st.mean * 1e6), g6(moved / st.mean / 1e9),
             g6(st.min * 1e6), g6(st.max * 1e6), std::to_string(st.n)});
    }
  }
  // The triad's result is checked once, so a kernel that did nothing cannot pass for a fast one.
  std::vector<float> host(1024);
  RY_CUDA(cudaMemcpy(host.data(), a, host.size() * 4, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (size_t i = 0; i < host.size(); ++i) {
    const float expect = (1.0f + static_cast<float>(i % 97)) + 3.0f * (2.0f + static_cast<float>(i % 97));
    wrong += host[i] != expect;
  }
  if (wrong) w.note(format("triad check: %d of %zu elements wrong", wrong, host.size()));
  RY_CUDA(cudaFree(a));
  RY_CUDA(cudaFree(b));
  RY_CUDA(cudaFree(c));
  w.complete();
  return wrong ? 1 : 0;
}
