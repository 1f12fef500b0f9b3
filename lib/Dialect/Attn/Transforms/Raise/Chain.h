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
//   Masks.cpp       which (q, k) a mask hides: index conditions, constant
//                   mask tensors and the producers of mask tensors, as
//                   windows on k - q
//   Operands.cpp    the roles (b, h, q) of the rows, and Q, K, V peeled
//   Match.cpp       the stages in order, for one chain
//   Rewrite.cpp     the IR written for a matched chain
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_DIALECT_ATTN_TRANSFORMS_RAISE_CHAIN_H
#define ATTNFUSE_LIB_DIALECT_ATTN_TRANSFORMS_RAISE_CHAIN_H

#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

#include <deque>
#include <limits>
#include <optional>
#include <string>

namespace attnfuse::attn::raise {

using namespace mlir;

/// Canonical iteration space: dimensions are numbered 0..kMaxDims-1.
constexpr unsigned kMaxDims = 24;
/// An unbounded side of a window.
constexpr int64_t kUnbounded = MaskWindow::kUnbounded;
/// The largest hidden value of a large-negative mask (`finfo.min`, -1e9,
/// -10000): a key whose score is at most this (or -inf) is hidden.
constexpr double kLargeNegative = -1.0e4;

/// The keys a mask shows, as a window on rel = k - q: `lo <= rel <= hi`
/// (kUnbounded / -kUnbounded: no bound). `exact`: a key is visible iff it is
/// in the window (over the score's coordinate ranges); otherwise only
/// "visible implies in the window" is known.
struct Window {
  int64_t lo = -kUnbounded, hi = kUnbounded;
  bool exact = true;
  bool isFull() const { return lo == -kUnbounded && hi == kUnbounded; }
  bool isEmpty() const { return lo > hi; }
  static Window unknown() { return Window{-kUnbounded, kUnbounded, false}; }
  static Window empty() { return Window{1, 0, true}; }
};

/// The keys both windows show.
inline Window intersect(Window a, Window b) {
  return Window{std::max(a.lo, b.lo), std::min(a.hi, b.hi), a.exact && b.exact};
}

/// The keys either window shows (their hull: exact only without a gap).
inline Window unite(Window a, Window b) {
  // An empty window shows nothing, so it is exact either way.
  if (a.isEmpty())
    return b;
  if (b.isEmpty())
    return a;
  Window w{std::min(a.lo, b.lo), std::max(a.hi, b.hi), a.exact && b.exact};
  int64_t gapLo = std::max(a.lo, b.lo), gapHi = std::min(a.hi, b.hi);
  if (gapHi != kUnbounded && gapLo > gapHi + 1)
    w.exact = false;
  return w;
}

/// What a float term that does not read the scores is as a mask: `vis`
/// bounds where it is not hidden. `pure`: the term is exactly 0 in `vis`
/// (which is exact) and hidden outside, so it can be dropped for a
/// structural mask. `finite`: a hidden value may be a finite large negative
/// (<= kLargeNegative) instead of -inf. A term with `finite` false is -inf
/// outside `vis` (the structural mask `vis` is implied by it).
struct MaskInfo {
  Window vis = Window::unknown();
  bool pure = false;
  bool finite = false;
};

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

/// How much of the score pipeline's masks may be dropped for the structural
/// mask (Scores.cpp tries them in this order).
enum class MaskDrop {
  All,      ///< -inf and large-negative masks that are exactly a window
  NegInf,   ///< only -inf masks that are exactly a window
  None,     ///< nothing dropped; structural masks only where implied
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
  /// The per-batch key count L[b] of a -inf mask that hides the keys k >= L
  /// (an integer term that reads the batch coordinate only: padding from
  /// sequence lengths): the op's key_lengths (with a top-left structural
  /// mask, whose offset does not follow them).
  Term *keyLengths = nullptr;
  MaskKind mask = MaskKind::none;
  MaskAlignment alignment = MaskAlignment::top_left;
  int64_t windowLeft = 0, windowRight = 0;
  /// Mask terms of the graph dropped for the structural mask.
  unsigned droppedMasks = 0;
  /// The softmax's row max and sum (Reduce terms; null for linalg.softmax,
  /// max null without the max subtraction).
  Term *rowMax = nullptr, *rowSum = nullptr;
  /// The log-sum-exp `max + log(sum)` the graph also returns: the value and,
  /// per dimension of it, the canonical row it reads (nullopt: a unit dim).
  struct Lse {
    Value value;
    SmallVector<std::optional<unsigned>> dims;
    /// The LSE's dims `outerPos`, `innerPos` read a folded row of the output
    /// as `row floordiv factor`, `row mod factor` (the second contraction on
    /// B * H, the LSE on [B, H, ..]): the roles must split that row so.
    struct Fold {
      unsigned row, outerPos, innerPos;
      int64_t factor;
    };
    std::optional<Fold> fold;
  };
  std::optional<Lse> lse;
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
/// True when `v` is computed, through ops that are not contractions, by a
/// softmax (`linalg.softmax`, or an exponential and a row reduction) from a
/// contraction: the probabilities operand of a candidate's second
/// contraction. Values read inside bodies count (runtime-size broadcasts).
bool isSoftmaxOfContraction(Value v);
/// True when `v` is a tensor of zeros (linalg.fill or a splat constant).
bool isZeroTensor(Value v);
AffineExpr simplify(AffineExpr e);
/// The values `e` takes with every dim d in [0, sizes[d]); nullopt when
/// unknown.
std::optional<std::pair<int64_t, int64_t>> rangeOf(AffineExpr e,
                                                   ArrayRef<int64_t> sizes);
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
/// A constant hidden value of a mask: -inf (`finite` false) or a large
/// negative <= kLargeNegative (`finite` true); casts around it aside.
bool isHiddenValue(Term *t, bool *finite);
/// True when `t` reads the scores (the first contraction's result).
bool readsScores(Term *t, Value scores);

//===----------------------------------------------------------------------===//
// Normal form (NormalForm.cpp): one definition per equivalence
//===----------------------------------------------------------------------===//

/// For a binary float op with a neutral constant operand (`x * 1`, `1 * x`,
/// `x + 0`, `0 + x`, `x - 0`, `x / 1`), the index of the operand it returns
/// unchanged; `constantOf(i)` gives operand i's constant value, if any.
std::optional<unsigned>
neutralPassThrough(Operation *op,
                   function_ref<std::optional<double>(unsigned)> constantOf);
/// True when converting `outer` to `inner` and back to `back` gives every
/// value back (an upcast then a downcast to the same type).
bool isCastRoundTrip(Type outer, Type inner, Type back);
/// `t` in the normal form: neutral operands and cast round trips removed
/// (applied to every op term as the tree is built).
Term *normalizeTerm(Term *t);
/// For a linalg op that is data movement up to the normal form (its result
/// is one input element, maybe through neutral operands or a cast round
/// trip: a broadcast written as `x + zeros`), that input's index.
std::optional<unsigned> copiedInput(linalg::LinalgOp op);
/// For an elementwise downcast `truncf` whose input is an elementwise upcast
/// `extf` (identity maps) from the downcast's own type, the upcast: the two
/// ops are a cast round trip, data movement together.
Operation *castRoundTripUpcast(linalg::LinalgOp down);

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

  /// Two runtime sizes that the match takes as equal where the graph's
  /// meaning depends on them (a runtime broadcast `select(dim == 1, 0, i)`
  /// that is the identity when the sizes agree; a `tensor.reshape` whose
  /// shape operand keeps every runtime dim): dim `aDim` of `a`, and dim
  /// `bDim` of `b` or, with `bIsShape`, element `bDim` of the shape tensor
  /// `b`. The rewrite asserts them (cf.assert) before the op.
  struct SizeCheck {
    Value a;
    int64_t aDim;
    Value b;
    int64_t bDim;
    bool bIsShape;
  };
  SmallVector<SizeCheck> sizeChecks;

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
  /// The producer of a tensor leaf that does not read the scores, traced
  /// through elementwise ops, broadcasts and reshapes (the ops are not part
  /// of the chain); the leaf itself where it cannot be.
  Term *traceProducer(Term *leaf);
  Term *traceLinalg(linalg::LinalgOp op, OpResult result, AffineMap access);
  Term *traceScalar(Value s, linalg::LinalgOp op, ArrayRef<AffineExpr> loops);
  /// `tensor.extract %t[indices]` in the body of `op` (a broadcast written
  /// with a read from above, as torch-mlir writes it for runtime sizes) as a
  /// read of `t` at affine coordinates of the loops.
  Term *traceExtract(tensor::ExtractOp extract, linalg::LinalgOp op,
                     ArrayRef<AffineExpr> loops);
  /// `tensor.reshape` whose shape keeps each runtime dim in a group of its
  /// own: the access of its source (sizeChecks record the kept dims).
  std::optional<AffineMap> reshapeAccess(tensor::ReshapeOp reshape,
                                         AffineMap access);
  // Softmax.cpp
  LogicalResult matchSoftmax(Term *p, Chain &chain);
  LogicalResult matchNormalization(Term *p, Chain &chain);
  bool isEmptyRowTest(Term *t, Term *scores, unsigned k);
  // Scores.cpp
  LogicalResult splitScores(Chain &chain);
  LogicalResult splitScores(Chain &chain, MaskDrop drop);
  LogicalResult checkRegion(Term *t, Chain &chain, Operation *at);
  LogicalResult checkScoreCoordinates(AffineMap access, Chain &chain,
                                      Operation *at);
  /// Sets the chain's structural mask to `w` (intersected with the
  /// score ranges). With `exact`, fails where no mask attribute states `w`
  /// exactly; otherwise widens `w` to one that does (an implied mask).
  LogicalResult setStructuralMask(Window w, bool exact, Chain &chain);
  /// True when `t` is finite wherever the scores are: the scores, finite
  /// constants and coordinates under arithmetic that keeps them finite.
  bool isFiniteScoreFunction(Term *t);
  // Masks.cpp
  /// The keys a boolean term shows (true = visible; `negate`: false =
  /// visible).
  Window condWindow(Term *c, bool negate);
  /// L where the boolean term `c` (`negate`: its negation) is exactly
  /// k < L with k the key coordinate and L an integer term of the batch
  /// coordinate alone (null otherwise; Chain::keyLengths).
  Term *keyLengthBound(Term *c, bool negate);
  /// L where the float term `m` is 0 for k < L and -inf elsewhere (a
  /// padding mask built from sequence lengths), else null.
  Term *keyLengthMask(Term *m);
  /// Whether splitScores may take a mask as key lengths (it retries
  /// without where the chain then fits no top-left structural mask).
  bool allowKeyLengths = true;
  /// The term as a mask value (0 = visible).
  MaskInfo maskInfo(Term *m);
  /// Where the score term `t` is provably -inf: outside the result.
  Window impliedWindow(Term *t);
  /// An integer term of index arithmetic as an affine expression of the
  /// canonical dims (null when it is not one).
  AffineExpr intValue(Term *t);
  /// `w` clipped to the score's ranges: sides past every (q, k) become
  /// unbounded, a window that shows no (q, k) becomes empty.
  Window normalize(Window w) const;
  /// The window of `e pred 0` for an affine `e` (a linear bound on k - q,
  /// or a condition that holds everywhere or nowhere), else unknown.
  Window linearWindow(AffineExpr e, arith::CmpIPredicate pred);
  /// A constant mask tensor read at a leaf's access: which (q, k) it shows.
  std::optional<Window> constantWindow(Term *leaf,
                                       function_ref<int(int64_t)> classify,
                                       bool *anyOther);
  // LSE (Match.cpp)
  /// Finds the graph's `max + log(sum)` of the softmax among the ops outside
  /// the chain that read it.
  void matchLse(Chain &chain);
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
  /// traceTensor looks through the producers of mask tensors (outside the
  /// chain) instead of stopping at them.
  bool maskMode = false;
  /// The chain being split (Masks.cpp reads its q and k dims).
  Chain *current = nullptr;
  DenseMap<std::pair<Value, AffineMap>, Term *> producers;
  friend struct TermEq;
};

/// Structural equality of two terms, where `a`'s dims are renamed by `subst`
/// (and the fresh dims of reductions met in both are paired on the way).
struct TermEq {
  DenseMap<unsigned, unsigned> subst;
  MLIRContext *ctx;
  /// The sizes of the canonical dims (unit dims compare by value).
  ArrayRef<int64_t> sizes = {};
  AffineExpr rename(AffineExpr e);
  bool eq(Term *a, Term *b);
};

/// Whether a collapse or expand puts a runtime dimension in a group with
/// other dims than unit ones (its delinearization would need the runtime
/// size); reshapeSourceAccess takes the others.
bool regroupsRuntimeDim(Operation *reshape);

/// The value of runtime dim `dim` of `t` where the IR states it without
/// reading `t`: through the inits of destination-style ops to the size
/// operand of a tensor.empty (null otherwise).
Value getRuntimeSize(Value t, int64_t dim);

/// Writes the op for a matched chain before its second contraction and
/// returns the value that replaces the second contraction's result (Rewrite.cpp).
Value buildAttention(RewriterBase &rewriter, Matcher &m, Chain &c);

} // namespace attnfuse::attn::raise

#endif // ATTNFUSE_LIB_DIALECT_ATTN_TRANSFORMS_RAISE_CHAIN_H
