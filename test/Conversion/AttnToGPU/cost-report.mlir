// report-cost=true: a remark per forward kernel with its FLOPs, HBM bytes,
// arithmetic intensity and roofline time (KernelCost.cpp). The numbers by
// hand:
//  @plain: B 1, H 2, N 256, d 64, bf16, simt block-q 64 block-k 64. FLOPs
//   2 heads * 256^2 pairs * 2 (64 + 64) = 33.55 MFLOP, every pair visible.
//   Q 2 * 256 * 64 * 2 B = 65536; K/V: 4 query blocks per head each read
//   the 256 keys, 2 * 4 * 256 * 128 * 2 B = 524288; O and lse 2 * 256 *
//   (128 + 4) = 67584; planned 657408 B (51.04 FLOP/byte); read once Q +
//   K/V 131072 + O and lse = 264192 B. sm_90a's f32 FMAs (simt): 66.9
//   TFLOP/s -> 0.5016 us compute-bound (264192 B at 4800 GB/s: 0.05504 us;
//   the planned bytes 0.137 us).
//  @causal: Nq 100, Nk 130 bottom-right: row q sees keys 0 .. q + 30, so
//   sum (q + 31) = 8050 pairs * 2 (32 + 32) = 1.03 MFLOP; the tiles are
//   whole key blocks of 64: rows 0-63 visit keys 0-127, rows 64-99 all 130:
//   64 * 128 + 36 * 130 = 12872 pairs, 1.648 MFLOP.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="report-cost=true mma=simt block-q=64 block-k=64" -o /dev/null 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu="report-cost=true mma=simt chip=sm_86" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: attnfuse-opt %s --convert-attn-to-gpu="report-cost=true mma=simt chip=sm_86 block-q=64 block-k=64 peak-tflops=100 peak-gbps=1000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GIVEN
// No remark without the option.
// RUN: attnfuse-opt %s --convert-attn-to-gpu -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE --allow-empty

// CHECK: remark: convert-attn-to-gpu: cost of attn_fwd_0 (simt): 0.03355 GFLOP (the visible pairs; 0.03355 in the tiles); HBM 0.6574 MB as planned (Q 0.06554, K/V 0.5243, O and lse 0.06758), 0.2642 MB reading each operand once; 51.04 FLOP/byte; roofline 0.5016 us (compute-bound at 66.9 TFLOP/s, 4800 GB/s, each operand read once; 0.137 us to move the planned bytes without reuse in L2)
// CHECK: remark: convert-attn-to-gpu: cost of attn_fwd_1 (simt): 0.00103 GFLOP (the visible pairs; 0.001648 in the tiles)
// UNKNOWN: no roofline: the chip's peaks are unknown (give peak-tflops and peak-gbps)
// GIVEN: cost of attn_fwd_0 (simt): {{.*}} roofline 0.3355 us (compute-bound at 100 TFLOP/s, 1000 GB/s, each operand read once; 0.6574 us
// NONE-NOT: remark: convert-attn-to-gpu: cost
func.func @plain(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16>
  return %o : tensor<1x2x256x64xbf16>
}
func.func @causal(%q: tensor<1x1x100x32xbf16>, %k: tensor<1x1x130x32xbf16>, %v: tensor<1x1x130x32xbf16>) -> tensor<1x1x100x32xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x100x32xbf16>, tensor<1x1x130x32xbf16>, tensor<1x1x130x32xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<1x1x100x32xbf16>
  return %o : tensor<1x1x100x32xbf16>
}
