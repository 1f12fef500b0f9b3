// convert-attn-to-gpu takes no packed sequences and no per-batch key lengths
// in the backward (the forward kernels take key lengths and paged K/V:
// forward-key-lengths.mlir, forward-paged-kv.mlir): an op with either is
// refused at the op, on every family, naming the pass that expresses them
// through a keep mask.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt" -split-input-file -verify-diagnostics
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync chip=sm_80" -split-input-file -verify-diagnostics
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma chip=sm_90a" -split-input-file -verify-diagnostics

func.func @backward(%q: tensor<2x2x8x64xf16>, %k: tensor<2x2x8x64xf16>, %v: tensor<2x2x8x64xf16>,
                    %o: tensor<2x2x8x64xf16>, %lse: tensor<2x2x8xf32>, %do: tensor<2x2x8x64xf16>,
                    %lens: tensor<2xi64>)
    -> (tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>) {
  // expected-error @+1 {{convert-attn-to-gpu: the GPU kernels take no per-batch key lengths (key_lengths) in the backward (run attn-expand-inference-operands first, as attn-lower-to-nvvm-pipeline does)}}
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>)
      grad(%o, %lse, %do : tensor<2x2x8x64xf16>, tensor<2x2x8xf32>, tensor<2x2x8x64xf16>)
      key_lengths(%lens : tensor<2xi64>)
      -> tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>
  return %dq, %dk, %dv : tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>
}

// -----

func.func @packed(%q: tensor<1x4x64x64xf16>, %k: tensor<1x1x128x64xf16>, %v: tensor<1x1x128x64xf16>,
                  %cq: tensor<3xi32>, %ck: tensor<3xi32>) -> tensor<1x4x64x64xf16> {
  // expected-error @+1 {{convert-attn-to-gpu: the GPU kernels take no packed sequences (sequence_offsets) (run attn-expand-inference-operands first, as attn-lower-to-nvvm-pipeline does)}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x4x64x64xf16>, tensor<1x1x128x64xf16>, tensor<1x1x128x64xf16>)
      sequence_offsets(%cq, %ck : tensor<3xi32>, tensor<3xi32>) -> tensor<1x4x64x64xf16>
  return %o : tensor<1x4x64x64xf16>
}
