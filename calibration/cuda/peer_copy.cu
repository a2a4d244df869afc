// peer_copy: bandwidth and latency of cudaMemcpyPeerAsync between every ordered pair of visible GPUs, with the link
// kind CUDA reports for the pair. With one GPU there is no peer: the CSV says so and has no rows.
#include "common.hpp"

using namespace railyard::calib;

namespace {
const char* kUsage = "usage: peer_copy --out FILE.csv [--min-bytes 8] [--max-bytes 1G] [--factor 4] [--iters 20]\n"
                     "  Times copies from each GPU to each other GPU over sizes min..max (times factor).\n";
}

int main(int argc, char** argv)
{
  Options o(argc, argv, kUsage);
  o.allow({"out", "min-bytes", "max-bytes", "factor", "iters"});
  if (!o.has("out")) o.fail("--out is required");
  const long long min_bytes = o.integer("min-bytes", 8);
  const long long max_bytes = o.integer("max-bytes", 1ll << 30);
  const long long factor = o.integer("factor", 4);
  const int iters = static_cast<int>(o.integer("iters", 20));
  if (min_bytes < 1 || max_bytes < min_bytes || factor < 2 || iters < 1)
    o.fail("need 1 <= --min-bytes <= --max-bytes, --factor >= 2, --iters >= 1");
  int n = 0;
  RY_CUDA(cudaGetDeviceCount(&n));
  CsvWriter w(o.str("out"), "peer_copy");
  common_metadata(w, 0, argc, argv);
  w.meta("timing", "CUDA events on the source GPU's stream around each copy");
  w.note(format("link_kind: %s where the runtime reports peer access with native atomics (PCIe peer-to-peer has no "
                "native atomics), pcie otherwise; without peer access the copy is staged through host memory",
                kPeerLinkFast));
  if (n < 2) w.note(format("only %d visible GPU: no peer to copy to, nothing measured", n));
  w.header("src,dst,p2p_access,native_atomics,link_kind,size_bytes,time_us,GBps,time_min_us,time_max_us,iters");

  std::vector<void*> buf(n, nullptr);
  for (int d = 0; d < n; ++d) {
    RY_CUDA(cudaSetDevice(d));
    RY_CUDA(cudaMalloc(&buf[d], max_bytes));
    RY_CUDA(cudaMemset(buf[d], d + 1, max_bytes));
  }
  for (int src = 0; src < n; ++src)
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      int access = 0, atomics = 0;
      const std::string kind = peer_link_kind(src, dst, &access, &atomics);
      RY_CUDA(cudaSetDevice(src));
      if (access) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(dst, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) RY_CUDA(e);
        (void)cudaGetLastError(); // clear "already enabled"
      }
      cudaStream_t s;
      cudaEvent_t e0, e1;
      RY_CUDA(cudaStreamCreate(&s));
      RY_CUDA(cudaEventCreate(&e0));
      RY_CUDA(cudaEventCreate(&e1));
      for (long long bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
        std::vector<double> t;
        for (int i = -3; i < iters; ++i) {
          RY_CUDA(cudaEventRecord(e0, s));
          RY_CUDA(cudaMemcpyPeerAsync(buf[dst], dst, buf[src], src, bytes, s));
          RY_CUDA(cudaEventRecord(e1, s));
          RY_CUDA(cudaEventSynchronize(e1));
          float ms = 0;
          RY_CUDA(cudaEventElapsedTime(&ms, e0, e1));
          if (i >= 0) t.push_back(ms * 1e-3);
        }
        const Stats st = stats_of(t);
        w.row({std::to_string(src), std::to_string(dst), std::to_string(access), std::to_string(atomics), kind,
               std::to_string(bytes), g6(st.mean * 1e6), g6(bytes / st.mean / 1e9), g6(st.min * 1e6), g6(st.max * 1e6),
               std::to_string(st.n)});
      }
      // The last copy's first bytes must be the source's pattern.
      unsigned char check[64];
      RY_CUDA(cudaSetDevice(dst));
      RY_CUDA(cudaMemcpy(check, buf[dst], sizeof check, cudaMemcpyDeviceToHost));
      for (unsigned char c : check)
        if (c != static_cast<unsigned char>(src + 1)) {
          w.note(format("copy %d -> %d delivered wrong bytes", src, dst));
          break;
        }
      RY_CUDA(cudaSetDevice(src));
      RY_CUDA(cudaMemset(buf[src], src + 1, max_bytes)); // restore in case a copy into it happened earlier
      RY_CUDA(cudaSetDevice(dst));
      RY_CUDA(cudaMemset(buf[dst], dst + 1, max_bytes));
      RY_CUDA(cudaSetDevice(src));
      RY_CUDA(cudaStreamDestroy(s));
      RY_CUDA(cudaEventDestroy(e0));
      RY_CUDA(cudaEventDestroy(e1));
    }
  for (int d = 0; d < n; ++d) {
    RY_CUDA(cudaSetDevice(d));
    RY_CUDA(cudaFree(buf[d]));
  }
  w.complete();
  return 0;
}
