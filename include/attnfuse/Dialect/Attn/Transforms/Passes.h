//===- Passes.h - attn dialect transformation passes ------------*- C++ -*-===//
#ifndef ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Transforms/Transforms.h"
#include "mlir/Pass/Pass.h"

namespace attnfuse::attn {
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_H
