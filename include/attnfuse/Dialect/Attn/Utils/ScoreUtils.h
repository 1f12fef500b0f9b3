//===- ScoreUtils.h - scalar pieces of attention's score pipeline -*- C++ -*-//
//
// Builders for the per-element parts of attn.attention's semantics (structural
// mask, score modification, dropout keep decision), and the key-block range
// the structural mask leaves to the tiled lowerings. Every lowering builds
// them through these functions, so the reference lowering and the fused
// kernels compute the same thing by construction.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_DIALECT_ATTN_UTILS_SCOREUTILS_H
#define ATTNFUSE_DIALECT_ATTN_UTILS_SCOREUTILS_H

#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "mlir/IR/IRMapping.h"

namespace attnfuse::attn {

/// The values of an op's sizes at the builder's insertion point: B, Nq and
/// Nk as index attributes when static and as `tensor.dim` of the query (B,
/// Nq) or the key (Nk; with paged K/V, the block table's P times the page
/// size) when runtime, and the structural mask's offset (0, or Nk - Nq for
/// bottom-right alignment: MaskWindow).
///
/// With per-batch key lengths (`key_lengths`), `validKeys` is the number of
/// keys of one batch (the keys [0, validKeys) exist) and the bottom-right
/// offset is validKeys - Nq: both are set by sizesAtBatch, and are null in
/// the sizes of the whole op (materializeSizes).
struct SizeValues {
  mlir::OpFoldResult batch, queryLength, keyLength, maskOffset;
  mlir::OpFoldResult validKeys;
};
SizeValues materializeSizes(mlir::OpBuilder &b, mlir::Location loc,
                            AttentionOpInterface op);

/// The sizes of batch `batch` (an index value): `sizes` with, for an op with
/// key lengths, `validKeys` = clamp(key_lengths[batch], 0, Nk) and the mask
/// offset that follows from it, validKeys - sizes.queryLength where the op's
/// offset is not static (docs/Semantics.md, "Key lengths"). `sizes`
/// unchanged without key lengths. `lengths`: the [B] tensor to read them
/// from where it is not the op's operand (a GPU kernel's view of its
/// argument).
SizeValues sizesAtBatch(mlir::OpBuilder &b, mlir::Location loc,
                        AttentionOpInterface op, const SizeValues &sizes,
                        mlir::Value batch, mlir::Value lengths = {});

/// Where key position `k` of batch `batch` (index values) lives in paged K/V:
/// slot `k % pageSize` of page `block_table[batch, k / pageSize]`. `valid` is
/// false for a page id outside [0, pages); `page` is then clamped into that
/// range, so that a read of it stays in bounds (the key is hidden:
/// buildMaskedScore). `table`: the [B, P] tensor to read the ids from where
/// it is not the op's operand (a GPU kernel's view of its argument; K's
/// page count must then be static).
struct PagedPosition {
  mlir::Value page, slot, valid;
};
PagedPosition buildPagedPosition(mlir::OpBuilder &b, mlir::Location loc,
                                 AttentionOpInterface op, mlir::Value batch,
                                 mlir::Value k, mlir::Value table = {});

/// The packed sequence (sequence_offsets) of query row `q` (index): its first
/// query and key and its numbers of queries and keys, at the effective
/// offsets (docs/Semantics.md, "Packed sequences"). A row in no sequence has
/// keyLength 0 (it sees no key).
struct SequenceSpan {
  mlir::Value queryStart, keyStart, queryLength, keyLength;
};
SequenceSpan buildSequenceSpan(mlir::OpBuilder &b, mlir::Location loc,
                               AttentionOpInterface op, mlir::Value q);

/// The positions [first, last) on the other side that the packed sequences
/// meeting rows [begin, end) cover: with `fromQueries`, the keys the query
/// rows can see; otherwise the queries that can see the keys. Empty (first
/// >= last) when no sequence meets the rows. The tiled lowerings' block
/// skipping over packed sequences.
std::pair<mlir::Value, mlir::Value>
buildSequenceRange(mlir::OpBuilder &b, mlir::Location loc,
                   AttentionOpInterface op, bool fromQueries,
                   mlir::Value begin, mlir::Value end);

/// Asserts (cf.assert) at the builder's insertion point that the runtime
/// sizes the verifier could only require to agree at run time do: a '?'
/// dimension of K, V, the bias, the keep mask (or, for the backward op, O,
/// lse and dO) equals the size it stands for in `sizes` (materializeSizes;
/// docs/Semantics.md, "Runtime sizes"). Nothing for static shapes.
void buildRuntimeSizeChecks(mlir::OpBuilder &b, mlir::Location loc,
                            AttentionOpInterface op, const SizeValues &sizes);

/// Returns an i1 that is true iff query `q` sees key `k` (both index) under
/// the op's structural mask and, with key lengths, iff `k < validKeys` (with
/// packed sequences: iff `k` is a key of `q`'s sequence and the structural
/// mask shows it in the sequence's positions); or a
/// null Value when these hide nothing. `sizes` are the sizes at the element's
/// batch (sizesAtBatch), required with key lengths; without them a runtime
/// mask offset is materialized at the insertion point.
mlir::Value buildStructuralMaskVisible(mlir::OpBuilder &b, mlir::Location loc,
                                       AttentionOpInterface op, mlir::Value q,
                                       mlir::Value k,
                                       const SizeValues *sizes = nullptr);

/// Whether one side (`window.left` or `window.right`) of the structural mask
/// hides anything among `queryLength` x `keyLength` scores: an unbounded
/// side, or one at least Nq + Nk wide, shows every key (treating it as
/// unbounded keeps block arithmetic far from overflow). With a runtime
/// length, a side of 2^61 or more (beyond any Nq + Nk the verifier's size
/// limit admits) counts as unbounded.
bool isWindowSideBounded(int64_t side, int64_t queryLength,
                         int64_t keyLength);

/// The key blocks [begin, end) of `blockK` keys (ceil(keyLength / blockK)
/// of them) that query rows [q0, q0 + rows) can see under the structural
/// mask `window`: k >= q0 + off - left and k <= q0 + rows - 1 + off +
/// right. `q0` and `rows` are index values; so are the results. `sizes`
/// gives Nk and the offset where they are runtime values. The range
/// can be empty with end below begin, and end negative (a window that shows
/// the rows no key, Nq > Nk): compare the two signed, as scf.for does (an
/// unsigned test made the wgmma kernel wait for a block never loaded).
///
/// With key lengths (`sizes->validKeys` set), end is at most
/// ceil(validKeys / blockK).
std::pair<mlir::Value, mlir::Value>
buildKeyBlockRange(mlir::OpBuilder &b, mlir::Location loc,
                   const MaskWindow &window, int64_t queryLength,
                   int64_t keyLength, mlir::Value q0, mlir::Value rows,
                   int64_t blockK, const SizeValues *sizes = nullptr);

/// The arithmetic of buildKeyBlockRange over any `Arith` (IR values through
/// a builder, or integers: getKeyBlockRange), so that the kernels and the
/// planners that count their work (the GPU cost report) share one
/// definition. `Arith` provides V (the value type), idx(int64_t) and add,
/// sub, max, min, floorDiv(V, int64_t); the operations are requested in a
/// fixed order (IR builders create them in that order). A runtime Nk
/// (`nk` = ShapedType::kDynamic) or mask offset takes its value from
/// `nkValue` or `offsetValue`.
template <typename Arith>
std::pair<typename Arith::V, typename Arith::V>
keyBlockRangeOf(Arith &a, const MaskWindow &w, int64_t nq, int64_t nk,
                typename Arith::V q0, typename Arith::V rows, int64_t blockK,
                typename Arith::V nkValue = {},
                typename Arith::V offsetValue = {}) {
  using V = typename Arith::V;
  V begin = a.idx(0);
  V end = mlir::ShapedType::isDynamic(nk)
              ? a.floorDiv(a.add(nkValue, a.idx(blockK - 1)), blockK)
              : a.idx((nk + blockK - 1) / blockK);
  if (isWindowSideBounded(w.left, nq, nk)) {
    V shifted = a.add(q0, w.hasStaticOffset() ? a.idx(w.offset) : offsetValue);
    V first = a.sub(shifted, a.idx(w.left));
    begin = a.max(begin, a.floorDiv(first, blockK));
  }
  if (isWindowSideBounded(w.right, nq, nk)) {
    V rowsEnd = a.add(q0, rows);
    V last = w.hasStaticOffset()
                 ? a.add(rowsEnd, a.idx(w.offset - 1 + w.right))
                 : a.add(a.add(rowsEnd, offsetValue), a.idx(w.right - 1));
    V lastBlock = a.floorDiv(last, blockK);
    end = a.min(end, a.add(lastBlock, a.idx(1)));
  }
  return {begin, end};
}

/// The backward's counterpart of keyBlockRangeOf: the query blocks of
/// `blockQ` rows [begin, end) that can see a key of the block of `blockK`
/// keys from `key0` (static sizes): q >= key0 - off - right for its first
/// key, q <= min(key0 + blockK, Nk) - 1 - off + left for its last. The same
/// `Arith` contract (the backward kernels' IR builders, or integers:
/// getQueryBlockRange).
template <typename Arith>
std::pair<typename Arith::V, typename Arith::V>
queryBlockRangeOf(Arith &a, const MaskWindow &w, int64_t nq, int64_t nk,
                  typename Arith::V key0, int64_t blockK, int64_t blockQ) {
  using V = typename Arith::V;
  V begin = a.idx(0), end = a.idx((nq + blockQ - 1) / blockQ);
  if (isWindowSideBounded(w.right, nq, nk))
    begin = a.max(begin,
                  a.floorDiv(a.sub(key0, a.idx(w.offset + w.right)), blockQ));
  if (isWindowSideBounded(w.left, nq, nk)) {
    V last = a.min(a.add(key0, a.idx(blockK - 1)), a.idx(nk - 1));
    end = a.min(end, a.add(a.floorDiv(a.add(last, a.idx(w.left - w.offset)),
                                      blockQ),
                           a.idx(1)));
  }
  return {begin, end};
}

/// queryBlockRangeOf on integers (end may be below begin: none).
std::pair<int64_t, int64_t> getQueryBlockRange(const MaskWindow &window,
                                               int64_t queryLength,
                                               int64_t keyLength, int64_t key0,
                                               int64_t blockK, int64_t blockQ);

/// keyBlockRangeOf on integers: the key blocks [begin, end) that query rows
/// [q0, q0 + rows) visit (end may be below begin: none).
std::pair<int64_t, int64_t> getKeyBlockRange(const MaskWindow &window,
                                             int64_t queryLength,
                                             int64_t keyLength, int64_t q0,
                                             int64_t rows, int64_t blockK);

/// Clones the op's score_mod region at the builder's insertion point with
/// (score, b, h, q, k) substituted and returns the yielded f32 score. Returns
/// `score` unchanged when there is no region. `captures`, when given, maps the
/// values the region uses from above (getScoreModCaptures) to their
/// replacements at the insertion point (e.g. a GPU kernel's arguments).
mlir::Value buildScoreMod(mlir::OpBuilder &b, mlir::Location loc,
                          AttentionOpInterface op, mlir::Value score,
                          mlir::ValueRange coords,
                          const mlir::IRMapping *captures = nullptr);

/// The score pipeline of one element: `t = score_mod(scale * s, b, h, q, k)`,
/// `t += f32(bias)` when `bias` is non-null, then `t = -inf` where the
/// structural mask (when `applyStructuralMask`) or `keep` (when non-null)
/// hides (q, k), and, with paged K/V, where the key's page id is out of range
/// (always: buildPagedPosition). `s` is the f32 dot product; `bhqk` are
/// global coordinates; `sizes` are the sizes at the element's batch
/// (buildStructuralMaskVisible). When `derivative` is non-null it receives
/// dt/ds = score_mod'(scale * s) * scale (for visible elements; the backward
/// pass multiplies it by P, which is 0 where hidden). `captures`: see
/// buildScoreMod.
mlir::Value buildMaskedScore(mlir::OpBuilder &b, mlir::Location loc,
                             AttentionOpInterface op, mlir::Value s,
                             mlir::ValueRange bhqk, mlir::Value bias,
                             mlir::Value keep, bool applyStructuralMask,
                             mlir::Value *derivative = nullptr,
                             const mlir::IRMapping *captures = nullptr,
                             const SizeValues *sizes = nullptr);

/// The term `p * x` of a sum over keys or queries (P V in the forward pass;
/// dS K, dS^T Q and (P Z)^T dO in the backward pass) for a (query, key) pair
/// whose masked score is `t` (f32): 0 where
/// the key is hidden (t = -inf), whatever `p` and `x` are (no 0 * inf), so
/// that a hidden key contributes exactly nothing in every lowering and at
/// every block size (docs/Semantics.md). `x` is converted to f32.
mlir::Value buildVisibleProduct(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Value t, mlir::Value p, mlir::Value x);

/// The bias gradient of one element, `dT = p * (dp - di)` (f32; `dp` already
/// times the dropout factor), 0 where the key is hidden (`t = -inf`) whatever
/// `dp` is.
mlir::Value buildScoreGradient(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value t, mlir::Value p, mlir::Value dp,
                               mlir::Value di);

/// The f32 tensor `x` rounded to `elementType` by a linalg.generic of
/// arith.truncf (`x` itself for f32): the results of the lowerings.
mlir::Value buildRoundedTensor(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value x, mlir::Type elementType);

/// attn.attention_backward's grad_bias from the f32 score gradients `dT`
/// ([B, Hq, Nq, Nk], 0 where hidden): summed over the dimensions along which
/// a bias of `biasType` is broadcast (numpy's rules), in `biasType`.
mlir::Value buildBiasGradient(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value scoreGradients,
                              mlir::RankedTensorType biasType);

/// The normalization of the forward pass, `l != 0 ? x / l : 0` (f32): 0 only
/// for a row that sees no key (l = 0); a NaN `l` (a NaN or +inf score in the
/// row) propagates.
mlir::Value buildNormalize(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value x, mlir::Value l);

/// The dropout factor of element (b, h, q, k): `keep ? 1 / (1 - p) : 0`
/// (f32); 1 without dropout.
mlir::Value buildDropoutFactor(mlir::OpBuilder &b, mlir::Location loc,
                               AttentionOpInterface op, mlir::ValueRange bhqk);

/// The four 32-bit output words (i32) of Philox4x32-10 (Salmon et al.,
/// SC'11) for the counter `counter` (four i32) and the key (seed[31:0],
/// seed[63:32]); `seed` is i64.
llvm::SmallVector<mlir::Value, 4> buildPhilox(mlir::OpBuilder &b,
                                              mlir::Location loc,
                                              mlir::Value seed,
                                              mlir::ValueRange counter);

/// The dropout generator's counter for element (b, h, q, k) (index
/// coordinates), as i32: (4 (k / 32) + (k / 2) % 4, q, h, b). The element's
/// 16 bits are half k % 2 (low, high) of output word (k / 8) % 4, so one
/// Philox call serves the 8 keys k0 + 8w + {0, 1} (w = 0..3) of a row: the
/// keys of one thread in the tensor-core accumulator layouts (a thread holds
/// keys 2t and 2t + 1 of every 8; docs/Semantics.md).
llvm::SmallVector<mlir::Value, 4> buildDropoutCounter(mlir::OpBuilder &b,
                                                      mlir::Location loc,
                                                      mlir::ValueRange bhqk);

/// The dropout threshold: an element is kept iff its 16 bits >= threshold,
/// floor(p * 2^16).
uint64_t getDropoutThreshold(double p);

/// Returns two i1 that are true iff dropout keeps the elements whose 16 bits
/// are the low and the high half of the Philox word (i32, see
/// buildDropoutCounter) `word`: of an even key and the next one.
std::pair<mlir::Value, mlir::Value>
buildDropoutKeepHalves(mlir::OpBuilder &b, mlir::Location loc,
                       AttentionOpInterface op, mlir::Value word);

/// The word of key `k` (index) among the four output `words` of its Philox
/// call: word (k / 8) % 4.
mlir::Value buildDropoutWord(mlir::OpBuilder &b, mlir::Location loc,
                             llvm::ArrayRef<mlir::Value> words, mlir::Value k);

/// Returns an i1 that is true iff dropout keeps element (b, h, q, k): one
/// Philox call for this element alone (a kernel whose threads own the keys
/// of a call shares it through buildDropoutCounter/buildDropoutKeepHalves).
mlir::Value buildDropoutKeep(mlir::OpBuilder &b, mlir::Location loc,
                             AttentionOpInterface op, mlir::Value seed,
                             mlir::ValueRange bhqk);

} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_UTILS_SCOREUTILS_H
