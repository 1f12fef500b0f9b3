//===- Transforms.h - public entry points of attn transformations -*- C++ -*-//
#ifndef ATTNFUSE_DIALECT_ATTN_TRANSFORMS_TRANSFORMS_H
#define ATTNFUSE_DIALECT_ATTN_TRANSFORMS_TRANSFORMS_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

#include <string>

namespace attnfuse::attn {

/// How raiseAttention reports each candidate chain.
enum class RaiseReport {
  None,    ///< Silent (the statistics are still filled).
  Remarks, ///< A remark per chain: fused, or not fused with the reason.
  Errors,  ///< Fused chains get a remark; a chain not fused is an error.
};

struct RaiseAttentionOptions {
  RaiseReport report = RaiseReport::Remarks;
};

/// Counts of one raiseAttention run.
struct RaiseAttentionStats {
  unsigned candidates = 0;
  unsigned fused = 0;
  /// Not-fused chains, by short reason key (e.g. "softmax-axis").
  std::map<std::string, unsigned> notFused;
  void print(llvm::raw_ostream &os) const;
};

/// Rewrites every attention chain (contraction -> softmax over the key axis
/// -> contraction) under `root` into `attn.attention`, when the op provably
/// computes the chain's function; reports every candidate as `options` says.
/// Returns failure iff `options.report` is Errors and a candidate was not
/// fused.
mlir::LogicalResult raiseAttention(mlir::Operation *root,
                                   const RaiseAttentionOptions &options,
                                   RaiseAttentionStats *stats = nullptr);

} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_TRANSFORMS_TRANSFORMS_H
