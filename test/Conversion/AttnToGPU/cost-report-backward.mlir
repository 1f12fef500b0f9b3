// report-cost=true on attn.attention_backward: a remark per kernel (the
// pre-pass, the backward, the dQ conversion; in deterministic mode the
// ordered dQ kernel instead), KernelCost.cpp. The numbers by hand, B 1,
// H 2, N 256, d 64, bf16, no mask, the wgmma backward (block-k 128,
// block-q 64):
//  pre-pass: Di = rowsum(dO * O): 2 * 256 * 2 * 64 = 65536 FLOP; dO and O
//   2 * 256 * 2 * 128 B = 131072, Di 2 * 256 * 4 = 2048, the zeroed f32
//   accumulator 2 * 256 * 64 * 4 = 131072: 264192 B; f32 arithmetic
//   (66.9 TFLOP/s) and 4800 GB/s: 0.05504 us, memory-bound.
//  backward: 2 key blocks, each over the 4 query blocks: 65536 pairs a
//   head, 2 (64 + 64) + 2 * 64 (dV) + 2 * 64 (dK) + 2 * 64 (dQ) = 640 FLOP
//   each: 2 * 65536 * 640 = 83.89 MFLOP. K/V 2 * 256 * 128 * 2 = 131072;
//   Q, dO, lse, Di per key block: 2 heads * 2 * 256 rows * (128 + 128 + 8)
//   = 270336; the dQ reductions 2 * 512 * 64 * 4 = 262144; dK/dV 131072:
//   794624 B (105.6 FLOP/byte); once: 131072 + 135168 + 131072 + 131072 =
//   528384 B, 0.1101 us at 4800 GB/s (83.89 MFLOP at 989.4 TFLOP/s:
//   0.08478 us), memory-bound.
//  conversion: the accumulator 131072 B and dQ 65536 B: 0.04096 us.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="report-cost=true" -o /dev/null 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu="report-cost=true deterministic=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DET

// CHECK: remark: convert-attn-to-gpu: cost of attn_fwd_0_bwd_pre (wgmma): 6.554e-05 GFLOP; HBM 0.2642 MB as planned (dO and O 0.1311, Di 0.002048, dQ accumulator 0.1311), 0.2642 MB reading each operand once; 0.2481 FLOP/byte; roofline 0.05504 us (memory-bound
// CHECK: remark: convert-attn-to-gpu: cost of attn_fwd_0_bwd (wgmma): 0.08389 GFLOP (the visible pairs; 0.08389 in the tiles); HBM 0.7946 MB as planned (K/V 0.1311, Q, dO, lse, Di 0.2703, dQ f32 reductions 0.2621, dK/dV 0.1311), 0.5284 MB reading each operand once; 105.6 FLOP/byte; roofline 0.1101 us (memory-bound at 989.4 TFLOP/s, 4800 GB/s, each operand read once; 0.1655 us
// CHECK: remark: convert-attn-to-gpu: cost of attn_fwd_0_bwd_dq (wgmma): 0 GFLOP; HBM 0.1966 MB as planned (dQ accumulator 0.1311, dQ 0.06554), 0.1966 MB reading each operand once; 0 FLOP/byte; roofline 0.04096 us (memory-bound

// Deterministic mode: no accumulator; the backward without dQ (512 FLOP a
// pair), the ordered dQ kernel recomputing S and dP (384 a pair).
// DET: cost of attn_fwd_0_bwd_pre (simt): {{.*}}(dO and O 0.1311, Di 0.002048),
// DET: cost of attn_fwd_0_bwd (simt): 0.06711 GFLOP
// DET-NOT: dQ f32 reductions
// DET: cost of attn_fwd_0_bwd_dq_ordered (simt): 0.05033 GFLOP
func.func @backward(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>,
                    %o: tensor<1x2x256x64xbf16>, %lse: tensor<1x2x256xf32>, %do: tensor<1x2x256x64xbf16>)
    -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
      grad(%o, %lse, %do : tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>, tensor<1x2x256x64xbf16>)
      -> tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
  return %dq, %dk, %dv : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
}
