// attn-lower-to-nvvm-pipeline starts with the TOSA lowering, as the CPU
// pipeline does: a bf16 cross-attention in TOSA with tosa.mul's shift operand
// (MIGraphX-style, from the corpus) failed with "'tosa.const' op was not
// bufferized". Now the chain is raised into the fused kernel and the glue
// (layout copies, the bias) becomes kernels too; no TOSA op is left.
// RUN: attnfuse-opt %S/../Corpus/migraphx/mgx_bf16_b2_cross_scale_bias.mlir --attn-lower-to-nvvm-pipeline="format=isa" | FileCheck %s
// CHECK-NOT: tosa.
// CHECK:     gpu.binary @attn_kernels
// CHECK-NOT: tosa.
