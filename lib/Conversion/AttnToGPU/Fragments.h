//===- Fragments.h - online softmax on tensor-core accumulators -*- C++ -*-===//
//
// What the tensor-core families share: FlashAttention-2's online softmax
// (log2 domain) on accumulator fragments, from the per-element masks to the
// epilogue, written once against FragmentLayout. The families differ in how
// they stage operands and issue the products, not in this.
//
// Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_FRAGMENTS_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_FRAGMENTS_H

#include "KernelBuilder.h"

namespace attnfuse::gpu_kernels {

/// The f32 accumulator fragments of a warp's tiles of m16 rows and n8
/// columns, as mma.sync m16n8 lays them out (and each warp of a wgmma
/// m64nN: its accumulator is four warps' m16 tiles). Lane 4 g + t holds, of
/// tile (mt, n), elements i = 0..3 at row 16 mt + g + 8 (i / 2) and column
/// 8 n + 2 t + i % 2. A thread thus holds 2 mTiles rows, rr = 2 mt + i / 2;
/// the other columns of a row are in the lanes of its quad (shuffle xor 1,
/// 2). Fragments are flat vectors, element (mt, n, i) at index().
struct FragmentLayout {
  int64_t mTiles, nTiles;
  int64_t size() const { return 4 * mTiles * nTiles; }
  int64_t rows() const { return 2 * mTiles; }
  int64_t index(int64_t mt, int64_t n, int64_t i) const {
    return 4 * (mt * nTiles + n) + i;
  }
};

/// A head dim as the tensor cores see it: rounded up to their k step of 16.
/// The columns past the true dim are zeros in shared memory (and in
/// registers), which add 0 to every dot product; O's are not stored.
inline int64_t paddedHeadDim(int64_t d) { return llvm::alignTo(d, 16); }

/// Why a tensor-core family cannot compute the forward kernel of `plan`
/// (empty when it can): the forward kind only (the backward's:
/// getMmaSyncBackwardUnsupportedReason, getWgmmaBackwardUnsupportedReason),
/// bf16 or f16,
/// head dims up to 256 (the widest n of an instruction); any head dim below
/// (those that are not multiples of 8 are copied element by element).
std::string getTensorCoreUnsupportedReason(const KernelPlan &plan);
/// What both tensor-core backwards need (empty when `plan` has it):
/// bf16/f16, and atomics for dQ (deterministic=true: simt's dQ kernel).
std::string getTensorCoreBackwardUnsupportedReason(const KernelPlan &plan);

/// 2^x by ex2.approx.ftz.f32 (FlashAttention's choice): without .ftz,
/// ptxas wraps every MUFU.EX2 in a subnormal range check (FSETP and two
/// predicated FMULs), which costs issue slots and registers in the
/// softmax; results below 2^-126 flush to 0, as FA2's.
Value exp2Approx(KB &e, Value x);
/// A pair of bf16/f16 (`elt`) as a tensor-core operand register: i32 for
/// bf16, vector<2xf16> for f16.
Value toOperand(KB &e, Type elt, Value pair);
/// Two f32 rounded to `elt` (kept for f32): a vector of two (packPair), as
/// an operand register (packOperand).
Value packPair(KB &e, Type elt, Value x, Value y);
Value packOperand(KB &e, Type elt, Value x, Value y);

/// The bias and keep-mask values of each element of a step's score
/// fragments (layout `sl`, at the coordinates `bhqk(mt, n, i)` gives; empty
/// vectors for an absent operand). A kernel loads them before it waits for
/// the scores, so that their latency hides behind the products. A bias whose
/// key dim is not broadcast and has even length comes in pairs (the keys
/// 2t, 2t + 1 of a row), one vector load each: its base must be aligned to
/// two elements, as the launchers check.
struct ElementOperands {
  SmallVector<Value> bias, keep;
  /// Bias elements `index` and `index + 1` (keys 2t, 2t + 1 of a row) from
  /// a loaded vector<2> `pair`.
  void setBiasPair(KB &e, int64_t index, Value pair);
};
/// `keyPairs`: elements i and i + 1 of a tile are keys 2t and 2t + 1 of one
/// row (the forward's S); false for transposed fragments (the backward's
/// S^T, where they are two queries of one key), which load one by one.
ElementOperands loadElementOperands(
    KB &e, const KernelPlan &plan, FragmentLayout sl, Value bias, Value keep,
    function_ref<SmallVector<Value>(int64_t, int64_t, int64_t)> bhqk,
    bool keyPairs = true);

/// The per-element terms of the score fragments `s` (layout `sl`), in log2
/// units: t = score_mod(scale s, b, h, q, k) + bias, -inf where the keep
/// mask is false (ScoreUtils's buildMaskedScore, without the structural
/// mask), times log2 e (KB::toLog2), with `operands` loaded at the
/// coordinates `bhqk(mt, n, i)` gives; `captures` maps the score_mod
/// region's captures (KernelArgs). With `derivatives` (the backward's; no
/// captures) it receives dt/ds of every element, in the order of `s`.
void applyElementScores(
    KB &e, const KernelPlan &plan, FragmentLayout sl, MutableArrayRef<Value> s,
    const ElementOperands &operands, const IRMapping *captures,
    function_ref<SmallVector<Value>(int64_t, int64_t, int64_t)> bhqk,
    SmallVectorImpl<Value> *derivatives = nullptr);

/// Hides the elements of the score fragments `s` (layout `sl`, keys
/// k0 + 8 n + 2 t + i % 2 of rows row0 + 16 mt + 8 (i / 2)) that the
/// structural mask, the key tail or the tile's key length hides (`sizes`:
/// KernelArgs::sizesAt): -inf. From two values per thread: with
/// delta = key - row = d0 + c (d0 = k0 + 2t - row0,
/// c = 8n + i % 2 - 16 mt - 8 (i / 2)), visible iff
/// off - left <= delta <= off + right (the structural mask's definition)
/// and, with a key tail, k0 + 2t < Nk - 8n - i % 2 (with key lengths
/// k0 + 2t - validKeys < -8n - i % 2): one i32 comparison against a
/// constant per bound and element. An offset that follows the key lengths
/// goes into d0.
///
/// `pageValid` (paged K/V: KernelArgs::keyPageValid of the tile's batch)
/// hides the keys of pages whose ids are out of range, one lookup per page
/// the elements can span: the block's where the page size is a multiple of
/// block-k, each n-tile's where it is a multiple of 8 (the same for the
/// warp), each key's otherwise.
using KeyValidity = function_ref<Value(KB &, Value key)>;
void maskScores(KB &e, const KernelPlan &plan, const attn::SizeValues &sizes,
                FragmentLayout sl, Value k0, Value t2, Value row0,
                MutableArrayRef<Value> s, KeyValidity pageValid = {});

/// maskScores for transposed fragments (S^T: rows are keys, columns are
/// queries; the backward's): element i of tile (mt, n) is key
/// key0 + 16 mt + 8 (i / 2) and query q0 + 8 n + i % 2 (key0 = the thread's
/// first key row, q0 = its first query column, 2t included), -inf where the
/// structural mask hides it, past Nk (`keyTail`) or past Nq (`queryTail`).
void maskScoresTransposed(KB &e, const KernelPlan &plan, FragmentLayout sl,
                          Value key0, Value q0, bool keyTail, bool queryTail,
                          MutableArrayRef<Value> s);

/// How raw S becomes log2-domain scores: with per-element terms (score_mod,
/// bias, keep mask) every element goes through applyElementScores; without
/// them and with a positive scale, the row max is taken on raw S and
/// scale * log2 e folds into exp2's FMA (foldScale); otherwise S is scaled.
struct ScoreScaling {
  double scaleLog2e;
  bool elementwise, foldScale;
  explicit ScoreScaling(const KernelPlan &plan)
      : ScoreScaling(plan.op, plan.bias || plan.keepMask) {}

private:
  ScoreScaling(AttentionOpInterface op, bool sideTerms)
      : scaleLog2e(op.getScaleOrDefault() * kLog2e),
        elementwise(op.hasScoreMod() || sideTerms),
        foldScale(!elementwise && scaleLog2e > 0) {}
};

/// The scores of one step's S fragments `s` (layout `sl`), for
/// updateRowMaxima: the per-element terms at the coordinates `bhqk` gives
/// (with `operands` from loadElementOperands), or the scale (ScoreScaling),
/// then, on the blocks they cut (`masked`), the structural mask, key tail
/// and key length (maskScores: keys k0 + ..., rows row0 + ..., a tile of
/// `sizes`).
void scoreFragments(
    KB &e, const KernelPlan &plan, const ScoreScaling &scaling,
    FragmentLayout sl, MutableArrayRef<Value> s,
    const ElementOperands &operands, const IRMapping *captures,
    function_ref<SmallVector<Value>(int64_t, int64_t, int64_t)> bhqk,
    bool masked, Value k0, Value t2, Value row0,
    const attn::SizeValues &sizes, KeyValidity pageValid = {});

/// The running row maxima after one step of scores: per row rr of the
/// thread, mNew = max(m, rowmax(s)) (over the quad; times scale log2 e
/// first when the scale is folded), then KB::rescaleRow's negM = -m''
/// (m'' = safe(mNew)), alpha = 2^(m - m'') and lsum = alpha l.
struct RowMaxima {
  SmallVector<Value> mNew, negM, alpha, lsum;
};
RowMaxima updateRowMaxima(KB &e, FragmentLayout sl, ArrayRef<Value> s,
                          ArrayRef<Value> m, ArrayRef<Value> l,
                          const ScoreScaling &scaling);

/// acc * alpha per row (layout `ol`). alpha = 1 exactly where m did not
/// change (and acc = 0 while m = -inf), so with `lazy` the warp skips the
/// multiplications unless one of its row maxima changed (a warp vote).
SmallVector<Value> rescaleAccumulators(KB &e, FragmentLayout ol,
                                       const RowMaxima &rows,
                                       ArrayRef<Value> mOld,
                                       ArrayRef<Value> acc, bool lazy);

/// The dropout decisions of one step's score fragments (a key block or
/// chunk), drawn as attn::buildDropoutCounter defines: one Philox4x32-10
/// call per row and 32 keys, whose four words are the halves of keys 2t and
/// 2t + 1 of four consecutive n-tiles, i.e. exactly the thread's elements in
/// those tiles. Where the step starts at a multiple of 32 keys (`aligned`),
/// n-tiles 4j..4j + 3 of an m-tile share one call per row, made at the
/// first of them that asks; otherwise each n-tile makes its own calls and
/// picks its word at run time. No shuffles. Without a seed (no dropout) it
/// draws nothing and is false.
class DropoutDraws {
public:
  DropoutDraws(AttentionOpInterface op, Value seed, bool aligned)
      : op(op), seed(seed), aligned(aligned) {}
  explicit operator bool() const { return static_cast<bool>(seed); }
  /// keep(b, h, q, k) of the four elements i of n-tile n of m-tile mt, whose
  /// coordinates `bhqk(n, i)` gives (keys not clamped past a tail).
  SmallVector<Value, 4>
  keep(KB &e, int64_t mt, int64_t n,
       function_ref<SmallVector<Value>(int64_t, int64_t)> bhqk);

private:
  AttentionOpInterface op;
  Value seed;
  bool aligned;
  /// Per (m-tile, n-tile / 4): the words of rows r and r + 8.
  llvm::DenseMap<std::pair<int64_t, int64_t>, SmallVector<Value, 8>> words;
};

/// P = 2^(t - m'') of k-step ks (keys 16 ks .. 16 ks + 15, n-tiles 2 ks and
/// 2 ks + 1) of m-tile mt of the score fragments `s` (overwritten), each
/// row's 4 values summed as a tree into rows.lsum, times the dropout factor
/// (keep(b, h, q, k) ? 1 / (1 - p) : 0 from `dropout` where it has a seed, at
/// the coordinates `bhqk(n, i)` gives, keys not clamped past a tail), packed to
/// `elt` pairs: the A fragment of P V, reg0 = (c0, c1) of n-tile 2ks, reg1 =
/// (c2, c3) of 2ks, reg2 = (c0, c1) of 2ks + 1, reg3 = (c2, c3) of 2ks + 1.
SmallVector<Value>
probabilityOperands(KB &e, const KernelPlan &plan, FragmentLayout sl,
                    MutableArrayRef<Value> s, int64_t mt, int64_t ks,
                    RowMaxima &rows, const ScoreScaling &scaling,
                    DropoutDraws &dropout,
                    function_ref<SmallVector<Value>(int64_t, int64_t)> bhqk);

/// The backward's transposed tiles (S^T, dP^T: keys in rows, queries in
/// columns), shared by the backward kernels of the tensor-core families
/// (MmaSyncBackward.cpp, WgmmaBackward.cpp). Fragments of layout `sl` with
/// one m-tile: element 4 n + i is key keyRow + 8 (i / 2) and query
/// q0 + t2 + 8 n + i % 2 (the thread's first key row, the query block's
/// first row and the thread's 2t); per query column 2 n + h a value of each
/// query (lse, Di).
///
/// -lse log2 e of each value, in place (-inf where lse = -inf: a row that
/// sees no key has P = 0).
void negateLogSumExp(KB &e, MutableArrayRef<Value> lse);
/// P^T = 2^(t log2 e - lse log2 e) of S^T fragments `s` (overwritten by
/// the log2-domain scores), t = scale s or, with per-element terms,
/// applyElementScores's (`operands` at the coordinates `bhqk` gives; dt/ds
/// of every element to `dtds` when given); on `masked` blocks -inf where
/// the structural mask or a tail (`keyTail`, `queryTail`) hides the element
/// (maskScoresTransposed). `negLse`: negateLogSumExp's, per query column,
/// or, without per-element terms, empty where `s` is S^T - lse / scale
/// already (foldedLogSumExp).
SmallVector<Value> transposedProbabilities(
    KB &e, const KernelPlan &plan, FragmentLayout sl, MutableArrayRef<Value> s,
    const ElementOperands &operands,
    function_ref<SmallVector<Value>(int64_t, int64_t, int64_t)> bhqk,
    bool masked, Value keyRow, Value q0, Value t2, bool keyTail,
    bool queryTail, ArrayRef<Value> negLse, SmallVectorImpl<Value> *dtds);
/// -lse / scale of each value, in place: S^T's starting accumulators, so
/// that scale log2 e (S^T - lse / scale) is the exponent of P^T (-inf
/// times the scale's sign where lse = -inf, so that P = 0; scale != 0).
void foldedLogSumExp(KB &e, double scale, MutableArrayRef<Value> lse);
/// Dropout's factor Z of every element: keep ? 1 / (1 - p) : 0, the
/// forward's mask regenerated (docs/Semantics.md). The thread's two keys of
/// a query column, keyRow and keyRow + 8 (keyRow within a 16-aligned slice
/// of keys), share the Philox counter (4 (k / 32) + (k / 2) % 4, q, h, b):
/// one call per query column, whose words (k / 8) % 4 and halves k % 2 they
/// pick at run time.
SmallVector<Value> transposedDropoutFactors(KB &e, AttentionOpInterface op,
                                            Value seed, FragmentLayout sl,
                                            Value batch, Value head,
                                            Value keyRow, Value q0, Value t2);
/// dS^T = P^T (dP^T Z - Di) (w.r.t. t: the scale comes with dK and dQ),
/// times dt/ds where `dtds` is not empty; `z` empty without dropout, `di`
/// per query column (empty: `dp` is dP^T - Di already). `dt`, when given,
/// receives dT^T, before dt/ds (grad_bias).
SmallVector<Value> transposedScoreGradients(
    KB &e, FragmentLayout sl, ArrayRef<Value> p, ArrayRef<Value> dp,
    ArrayRef<Value> z, ArrayRef<Value> di, ArrayRef<Value> dtds,
    SmallVectorImpl<Value> *dt = nullptr);

/// grad_bias of transposed fragments (writeBiasGradient): dT^T = P^T (dP^T Z
/// - Di) (transposedScoreGradients without dt/ds), element 4 n + i at key
/// keyRow + 8 (i / 2) and query queryColumn0 + 8 n + i % 2 of batch `bi`
/// and query head `hi`, 0 where P is; elements past Nq or Nk are skipped.
/// A bias shared by the queries is summed over the quad first (shuffles:
/// the whole warp calls it).
void writeTransposedBiasGradients(KB &e, const KernelPlan &plan,
                                  const KernelArgs &args, FragmentLayout sl,
                                  ArrayRef<Value> p, ArrayRef<Value> dt,
                                  Value bi, Value hi, Value keyRow,
                                  Value queryColumn0);

/// The A fragment of k-step ks (queries 16 ks ..) of transposed fragments
/// `c` (P^T, dS^T) as `elt` operand registers: (c0, c1) and (c2, c3) of
/// n-tiles 2 ks and 2 ks + 1, the A operand of dV += P^T dO and
/// dK += dS^T Q.
SmallVector<Value> transposedOperands(KB &e, Type elt, FragmentLayout sl,
                                      ArrayRef<Value> c, int64_t ks);
/// The factor of dK and dQ: the scale, which dS^T leaves out (it is taken
/// w.r.t. t = scale s), or 1 with a score_mod, whose dt/ds (with the scale
/// in it) dS^T has.
inline double backwardGradientScale(AttentionOpInterface op) {
  return op.hasScoreMod() ? 1.0 : op.getScaleOrDefault();
}

/// The epilogue: per row rr of the thread, l summed over the quad,
/// O = acc ((l != 0) ? 1 / l : 0) (buildNormalize) stored as pairs of
/// out's element type (the op's; f32 for a split forward's partials) at
/// out[bi, hi, rows[rr], 8 n + 2t], and lse = m'' ln 2 + log l by the quad's
/// first lane; rows past Nq and columns past Dv (a padded head dim) are not
/// stored. `state` is m (rows), l (rows),
/// then the accumulators (layout `ol`). With `storePair`, the pairs go to
/// it (row, column, the `elt` pair) instead of to `out`: every row and
/// column of the thread, those past Nq and Dv too.
void storeOutputs(KB &k, const KernelPlan &plan, FragmentLayout ol,
                  ArrayRef<Value> state, ArrayRef<Value> rows, Value bi,
                  Value hi, Value t, Value t2, Value out, Value lse,
                  function_ref<void(KB &, Value row, Value col, Value pair)>
                      storePair = nullptr);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_FRAGMENTS_H
