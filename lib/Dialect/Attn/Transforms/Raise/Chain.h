//===- Chain.h - the raising's description of an attention chain -*- C++ -*-===//
//
// Internal to attn-raise-attention. The stages of the raising share these
// types:
//
//   Candidates.cpp  which contractions may end an attention chain
//   Terms.cpp       tensors as scalar expression trees (`Term`) over one
//                   canonical iteration space
//   Softmax.cpp     the softmax on the tree
//   Scores.cpp      the score pipeline split into scale, score_mod, bias,
//                   keep mask and structural mask
//   Operands.cpp    the roles (b, h, q) of the rows, and Q, K, V peeled
//   Match.cpp       the stages in order, for one chain
//   Rewrite.cpp     the IR written for a matched chain
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_DIALECT_ATTN_TRANSFORMS_RAISE_CHAIN_H
#define ATTNFUSE_LIB_DIALECT_ATTN_TRANSFORMS_RAISE_CHAIN_H

#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

#include <deque>
#include <optional>
#include <string>

namespace attnfuse::attn::raise {

using namespace mlir;

/// Canonical iteration space: dimensions are numbered 0..kMaxDims-1.
constexpr unsigned kMaxDims = 24;

/// A scalar expression over the canonical iteration space.
struct Term {
  enum Kind { Leaf, Scalar, Index, Op, Reduce, Softmax } kind;
  Value tensor;       ///< Leaf: the tensor read at `access`.
  AffineMap access;   ///< Leaf: canonical dims -> tensor indices.
  Value scalar;       ///< Scalar: a value defined outside any body.
  AffineExpr index;   ///< Index: the coordinate, in canonical dims.
  Operation *op = nullptr; ///< Op: body op; Reduce: combiner; Softmax: op.
  SmallVector<Term *> args; ///< Op operands; Reduce {body, init}; Softmax {in}.
  unsigned dim = 0;   ///< Reduce: reduced dim; Softmax: normalized dim.
  Type type;          ///< Scalar (element) type.
};

/// The description of a matched chain, everything needed by the rewrite.
struct Chain {
  linalg::LinalgOp c1, c2;
  unsigned scoresOperand = 0; ///< Which input of c2 is P.
  unsigned kDim = 0, eDim = 0, dDim = 0; ///< Key, value-feature, head dims.
  SmallVector<unsigned> rows;            ///< Row dims of the output.
  std::optional<unsigned> bDim, hDim, qDim;
  int64_t groupSize = 1; ///< G = Hq / Hkv.
  Term *scores = nullptr; ///< T, the softmax input.
  Term *region = nullptr; ///< The part of T that goes into score_mod.
  std::optional<APFloat> scale;
  Term *bias = nullptr, *keep = nullptr;
  MaskKind mask = MaskKind::none;
  MaskAlignment alignment = MaskAlignment::top_left;
  int64_t windowLeft = 0, windowRight = 0;
  Value q, k, v;           ///< Peeled sources.
  AffineMap qMap, kMap, vMap; ///< Canonical dims -> source indices.
  Type elementType;
  SetVector<Operation *> ops; ///< Chain ops between c1 and c2 (inclusive c1).
  /// A row of the second contraction that folds two coordinates:
  /// row = outer * factor + inner (B * H of a 3-D batch_matmul).
  struct Split {
    unsigned row, outer, inner;
    int64_t factor;
  };
  std::optional<Split> split;
};

//===----------------------------------------------------------------------===//
// Helpers shared by the stages
//===----------------------------------------------------------------------===//

/// A float constant (scalar or splat) as a double.
bool isF32Const(Attribute a, double *out);
/// A 2-input contraction `acc + cast(a) * cast(b)` with one reduction loop,
/// in floating point (or, with `allowInteger`, also in integers: quantized).
bool isContraction(Operation *op, bool allowInteger = false);
/// True when `v` is a tensor of zeros (linalg.fill or a splat constant).
bool isZeroTensor(Value v);
AffineExpr simplify(AffineExpr e);
/// `map` (over a linalg op's loops) with the loops replaced by `loops`.
AffineMap composeAccess(AffineMap map, ArrayRef<AffineExpr> loops,
                        MLIRContext *ctx);
/// The access of a reshape's source that reads what `access` reads of its
/// result (see Terms.cpp).
AffineMap reshapeSourceAccess(Operation *reshape, AffineMap access,
                              bool unitDimsAtZero);
inline bool usesDim(AffineExpr e, unsigned d) { return e.isFunctionOfDim(d); }

/// The value of a constant term: a constant op, a scalar constant, or a splat
/// leaf (getSplatLeaf); null otherwise.
TypedAttr getConstantTerm(Term *t);
/// A float constant term as a double.
bool isConstTerm(Term *t, double *value);
template <typename... OpTys> bool isOp(Term *t) {
  return t->kind == Term::Op && isa<OpTys...>(t->op);
}
Term *stripCasts(Term *t);
/// A tensor leaf that is one scalar: a splat constant (whatever its map, e.g.
/// a `tensor<1x1x1x1xf32>` scale read at `(b, 0, 0, 0)`) or a tensor read at
/// a constant position.
bool isScalarLeaf(Term *t);
/// The value of a splat leaf (a splat constant or a fill of a constant).
TypedAttr getSplatLeaf(Term *t);
/// True when `t` reads the scores (the first contraction's result).
bool readsScores(Term *t, Value scores);

//===----------------------------------------------------------------------===//
// Matcher
//===----------------------------------------------------------------------===//

class Matcher {
public:
  explicit Matcher(linalg::LinalgOp c2) : c2(c2), ctx(c2.getContext()) {}

  /// Matches the chain ending at c2; on failure `why` says why.
  FailureOr<Chain> match();
  RaiseFailure why;

  int64_t size(unsigned d) const { return sizes[d]; }
  Value getScores() const { return scoresValue; }
  /// `map` simplified with the ranges of the canonical dims: the floordiv
  /// and mod of a collapsed dimension read back through its expand cancel.
  AffineMap simplifyInRanges(AffineMap map) const;

private:
  LogicalResult fail(Operation *at, StringRef key, const Twine &msg) {
    if (!why.at) {
      why.at = at;
      why.key = key.str();
      why.message = msg.str();
    }
    return mlir::failure();
  }

  Term *make(Term::Kind kind, Type type) {
    arena.emplace_back();
    Term *t = &arena.back();
    t->kind = kind;
    t->type = type;
    return t;
  }
  std::optional<unsigned> freshDim(int64_t size) {
    if (sizes.size() >= kMaxDims)
      return std::nullopt;
    sizes.push_back(size);
    return sizes.size() - 1;
  }

  // Terms.cpp
  Term *traceTensor(Value v, AffineMap access);
  Term *traceLinalg(linalg::LinalgOp op, OpResult result, AffineMap access);
  Term *traceScalar(Value s, linalg::LinalgOp op, ArrayRef<AffineExpr> loops);
  // Softmax.cpp
  LogicalResult matchSoftmax(Term *p, Chain &chain);
  LogicalResult matchNormalization(Term *p, Chain &chain);
  bool isEmptyRowTest(Term *t, Term *scores, unsigned k);
  // Scores.cpp
  LogicalResult splitScores(Chain &chain);
  LogicalResult checkRegion(Term *t, Chain &chain, Operation *at);
  LogicalResult checkScoreCoordinates(AffineMap access, Chain &chain,
                                      Operation *at);
  LogicalResult matchStructuralMask(Term *cond, Chain &chain);
  // Operands.cpp
  LogicalResult assignRoles(Chain &chain);
  /// Replaces `row` by `outer * factor + inner` in every term and in the
  /// chain's rows.
  void splitRow(Chain &chain, unsigned row, unsigned outer, unsigned inner,
                int64_t factor);
  /// `map` with `split`'s row replaced by outer * factor + inner.
  AffineMap splitMap(AffineMap map, const Chain::Split &split) const;

  linalg::LinalgOp c2;
  MLIRContext *ctx;
  std::deque<Term> arena;
  SmallVector<int64_t> sizes;
  /// Ops computing from the first contraction's result (forward slice).
  SetVector<Operation *> slice;
  SetVector<Operation *> visited;
  Value scoresValue; ///< The first contraction's result.
  AffineMap scoresAccess;
  friend struct TermEq;
};

/// Structural equality of two terms, where `a`'s dims are renamed by `subst`
/// (and the fresh dims of reductions met in both are paired on the way).
struct TermEq {
  DenseMap<unsigned, unsigned> subst;
  MLIRContext *ctx;
  AffineExpr rename(AffineExpr e);
  bool eq(Term *a, Term *b);
};

/// Writes the op for a matched chain before its second contraction and
/// returns the value that replaces the second contraction's result (Rewrite.cpp).
Value buildAttention(RewriterBase &rewriter, Matcher &m, Chain &c);

} // namespace attnfuse::attn::raise

#endif // ATTNFUSE_LIB_DIALECT_ATTN_TRANSFORMS_RAISE_CHAIN_H
