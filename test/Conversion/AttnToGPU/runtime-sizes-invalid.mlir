// The GPU kernels take static sizes: an op with runtime sizes (forward or
// backward) is refused at the op, on every family.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt" -split-input-file -verify-diagnostics
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync chip=sm_80" -split-input-file -verify-diagnostics

func.func @forward(%q: tensor<1x2x?x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>) -> tensor<1x2x?x64xf16> {
  // expected-error @+1 {{convert-attn-to-gpu needs static shapes: the GPU kernels take no runtime sizes yet (the CPU lowerings do)}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>) -> tensor<1x2x?x64xf16>
  return %o : tensor<1x2x?x64xf16>
}

// -----

func.func @backward(%q: tensor<?x2x8x64xf16>, %k: tensor<?x2x8x64xf16>, %v: tensor<?x2x8x64xf16>,
                    %o: tensor<?x2x8x64xf16>, %lse: tensor<?x2x8xf32>, %do: tensor<?x2x8x64xf16>)
    -> (tensor<?x2x8x64xf16>, tensor<?x2x8x64xf16>, tensor<?x2x8x64xf16>) {
  // expected-error @+1 {{convert-attn-to-gpu needs static shapes: the GPU kernels take no runtime sizes yet (the CPU lowerings do)}}
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<?x2x8x64xf16>, tensor<?x2x8x64xf16>, tensor<?x2x8x64xf16>)
      grad(%o, %lse, %do : tensor<?x2x8x64xf16>, tensor<?x2x8xf32>, tensor<?x2x8x64xf16>)
      -> tensor<?x2x8x64xf16>, tensor<?x2x8x64xf16>, tensor<?x2x8x64xf16>
  return %dq, %dk, %dv : tensor<?x2x8x64xf16>, tensor<?x2x8x64xf16>, tensor<?x2x8x64xf16>
}
