//===- Transforms.h - public entry points of attn transformations -*- C++ -*-//
#ifndef ATTNFUSE_DIALECT_ATTN_TRANSFORMS_TRANSFORMS_H
#define ATTNFUSE_DIALECT_ATTN_TRANSFORMS_TRANSFORMS_H

#include "attnfuse/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <memory>
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
  /// Fused chains whose op has a structural mask (causal or sliding window).
  unsigned structural = 0;
  /// Fused chains whose log-sum-exp the graph returns (the op's lse result).
  unsigned lse = 0;
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

//===----------------------------------------------------------------------===//
// One chain at a time, for compilers that drive their own rewriting
//===----------------------------------------------------------------------===//

/// Why a candidate chain was not raised, and where.
struct RaiseFailure {
  mlir::Operation *at = nullptr; ///< The op that failed the precondition.
  std::string key;               ///< Short reason key, as in the summary.
  std::string message;           ///< The precondition that failed.
};

namespace raise {
class Matcher;
struct Chain;
} // namespace raise

/// A matched attention chain: the analysis that proved it is attention. It
/// stays valid while the IR it was matched on is unchanged.
class AttentionChainMatch {
public:
  AttentionChainMatch(std::unique_ptr<raise::Matcher> matcher,
                      std::unique_ptr<raise::Chain> chain);
  AttentionChainMatch(AttentionChainMatch &&);
  AttentionChainMatch &operator=(AttentionChainMatch &&);
  ~AttentionChainMatch();

  /// The second contraction, whose result the raised op replaces.
  mlir::Operation *getRoot() const;
  /// True when the op gets a structural mask (causal or sliding window).
  bool hasStructuralMask() const;
  /// True when the graph's log-sum-exp becomes the op's lse result.
  bool hasLse() const;
  /// What the op carries besides Q, K, V, for the remark: e.g.
  /// "mask causal bottom_right; lse" (empty when nothing).
  std::string describe() const;

private:
  friend mlir::FailureOr<mlir::Value>
  rewriteAttentionChain(mlir::RewriterBase &, AttentionChainMatch &);
  std::unique_ptr<raise::Matcher> matcher;
  std::unique_ptr<raise::Chain> chain;
};

/// The contractions under `root` that may end an attention chain: each reads,
/// through non-contraction ops, a softmax (a `linalg.softmax`, or an `exp` or
/// `exp2` and a row reduction) computed from another contraction.
llvm::SmallVector<mlir::Operation *> findAttentionCandidates(mlir::Operation *root);

/// Matches the attention chain that ends at the contraction `c2`; on failure
/// `why` names the op and the reason.
mlir::FailureOr<AttentionChainMatch> matchAttentionChain(mlir::Operation *c2,
                                                         RaiseFailure &why);

/// Rewrites a matched chain through `rewriter`: the `attn.attention` op and
/// the layout glue around it are created before the second contraction,
/// which is replaced; the chain's other ops are erased once dead. Returns the
/// value that replaced the second contraction's result. The context must
/// have the attn, linalg, tensor and arith dialects loaded (a pass
/// lists them as dependent dialects, as attn-raise-attention does); fails,
/// with an error at the root and nothing changed, where one is not.
mlir::FailureOr<mlir::Value>
rewriteAttentionChain(mlir::RewriterBase &rewriter, AttentionChainMatch &match);

//===----------------------------------------------------------------------===//
// Inference operands through the operands every lowering takes
//===----------------------------------------------------------------------===//

/// Whether `op` has key lengths, a block table or packed sequences.
bool hasInferenceOperands(AttentionOpInterface op);

/// Rewrites `op` (attn.attention or attn.attention_backward, in place) into
/// the same attention without key lengths, a block table or packed
/// sequences, for a target that takes none of them: what they hide becomes a
/// keep mask `[B, 1 or Hq, 1 or Nq, Nk]` (and'ed with the op's own), paged K
/// and V are gathered into `[B, Hkv, Nk, D]` at the logical positions, and
/// where the structural mask's positions depend on them (packed sequences;
/// key lengths with a bottom-right mask) it moves into the keep mask too.
/// The computation is the same (docs/Semantics.md); the cost is a keep mask
/// and, for paged K/V, a copy of the pages, and no block skipping by length
/// or sequence. Creates ops before `op`; nothing when it has none of them.
void expandInferenceOperands(mlir::RewriterBase &rewriter,
                             AttentionOpInterface op);

/// Why the query heads of `op` do not pack into rows of their K/V head
/// (empty when they do): grouped query heads (Hq > Hkv), static shapes, no
/// dropout, no packed sequences, a bias and keep mask (if any) of size 1
/// along the head and query dimensions, a score_mod that does not read the
/// head or query index, and, unless `keepsStructuralMask` (a kernel that
/// masks each packed row by its query position and takes key lengths and
/// paged K/V: convert-attn-to-gpu's pack-gqa), no key lengths or block
/// table and one query row (Nq = 1) that the structural mask shows every
/// key (packGroupedQueries drops the mask).
std::string getGroupedQueryPackingBlocker(AttentionOp op,
                                          bool keepsStructuralMask = false);

/// Rewrites such an `op` (getGroupedQueryPackingBlocker empty) into the same
/// attention over the K/V heads: Q [B, Hq, 1, D] viewed as
/// [B, Hkv, G, D] (query head h = kvh * G + row: the rows of a K/V head are
/// its group's query heads), no structural mask (the row saw every key),
/// its O [B, Hkv, G, Dv] and lse viewed back as [B, Hq, 1, ...]. The same
/// function (every score depends on the query vector and the key alone); a
/// kernel then reads each K/V head once for its whole group, in one tile.
/// Returns the new op.
AttentionOp packGroupedQueries(mlir::RewriterBase &rewriter, AttentionOp op);

/// attn-hoist-runtime-checks on one block: each cf.assert, with the
/// side-effect-free, region-free ops of `block` that compute its condition,
/// moved up to right after the last op it depends on or the last op before
/// it with side effects other than a check.
void hoistRuntimeChecks(mlir::Block &block);

/// The pattern of attn-lower-dynamic-expand-shapes: a memref.expand_shape
/// that splits a dimension into two or more runtime sizes becomes
/// memref.extract_strided_metadata of its source and a
/// memref.reinterpret_cast of the base buffer (MLIR 22's
/// expand-strided-metadata crashes on such an expand_shape).
void populateLowerDynamicExpandShapePatterns(mlir::RewritePatternSet &patterns);

} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_TRANSFORMS_TRANSFORMS_H
