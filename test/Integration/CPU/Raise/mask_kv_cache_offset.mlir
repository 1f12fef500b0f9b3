// The graphs of test/Dialect/Attn/Transforms/mask_kv_cache_offset.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_kv_cache_offset.mlir --entry=kv_cache_offset | FileCheck %s --check-prefix=KVCACHEOFFSET
// KVCACHEOFFSET: @kv_cache_offset check=naive: PASS
