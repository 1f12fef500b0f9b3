// REQUIRES: ptxas
// The GPU pipeline raises the unfused example first (raise-report as in the
// CPU pipeline) and compiles it to one kernel launch and its binary.
// RUN: attnfuse-opt %S/../../examples/attention.mlir --attn-lower-to-nvvm-pipeline="format=isa raise-report=remarks" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// CHECK: remark: fused into attn.attention
// CHECK: module
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @attn_kernels
