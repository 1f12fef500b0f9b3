// The tiled lowering, forward and backward, against fp64 with FlashAttention's
// tolerance rule, over a sweep of sizes, head dims, masks, features and dtypes
// (test/lib/sweep.py lists the configurations), at two block shapes.
// RUN: %python %S/../../lib/sweep.py --attnfuse-run attnfuse-run | FileCheck %s
// RUN: %python %S/../../lib/sweep.py --attnfuse-run attnfuse-run --pipeline-options="block-q=32 block-k=16" | FileCheck %s
// CHECK-NOT: FAIL
// CHECK: sweep: 0 failures
