//===- Staging.h - CTA-level staging of the tensor-core families -*- C++ -*-===//
//
// What the tensor-core families share above the fragments (Fragments.h):
// spreading copies over the CTA's threads, and walking the key blocks of a
// CTA's query rows (the backward: the query blocks of a CTA's key block),
// the ones every pair of the two blocks sees whole without per-element mask.
// Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_STAGING_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_STAGING_H

#include "KernelBuilder.h"

namespace attnfuse::gpu_kernels {

/// Spreads `total` items over the `threads` threads of the CTA (thread id
/// `tid`), item tid + it * threads in round it, and emits each with
/// `fn(x, it)`, which returns its cp.async token (pushed to `tokens` when
/// given) or null. A last round that not every thread has an item for runs
/// `fn` under scf.if (item < total) and leaves its token untracked:
/// repeating an item would be a write-after-write race (racecheck, even of
/// the same bytes), and cp.async.commit_group commits every earlier copy of
/// the thread.
void forEachItem(KB &k, Value tid, int64_t threads, int64_t total,
                 function_ref<Value(KB &, int64_t)> fn,
                 SmallVector<Value> *tokens = nullptr);

/// Items 0 .. total - 1 spread over the CTA's `threads` threads, item
/// tid + it * threads in round it, as a loop of rounds with `fn(x, item)`
/// under scf.if (item < total): the element-by-element copies of a head
/// dim that is not a multiple of 8, rolled (forEachItem unrolls).
void forEachElement(KB &k, Value tid, int64_t threads, int64_t total,
                    function_ref<void(KB &, Value)> fn);

/// The body of one key block (the backward's: one query block): `masked`
/// asks for the per-element structural mask and the tails; it ends with
/// scf.yield of the new loop state.
using KeyBlockBody = function_ref<void(bool masked, OpBuilder &, Location,
                                       Value kb, ValueRange state)>;

/// Runs `body` over the key blocks [kbBegin, kbEnd) of blockK keys for the
/// query rows [q0, q0 + blockQ) of a tile with sizes `sizes`
/// (KernelArgs::sizesAt), from `state`, and returns the final state. The
/// blocks every row sees whole (all rows see keys [k0, k0 + BK) iff
/// k0 >= q0 + BQ - 1 + off - left and k0 + BK - 1 <= q0 + off + right, and
/// no key is past Nk or the tile's valid keys) run an unmasked loop; the
/// ones before them (left window edge) and after them (causal diagonal,
/// right edge, key tail, the batch's last valid key) a masked one; with
/// paged K/V every block is masked (its pages' ids are checked). With
/// packed grouped queries the rows are every position of the period
/// (KernelPlan::queryPositions).
SmallVector<Value> runKeyBlocks(KB &k, const KernelPlan &plan,
                                const attn::SizeValues &sizes, Value q0,
                                int64_t blockQ, int64_t blockK, Value kbBegin,
                                Value kbEnd, ValueRange state,
                                KeyBlockBody body);

/// The last key row the loads of a tile with sizes `sizes` may read (a row
/// past it reads it instead, a value the masks then hide): with key lengths
/// validKeys - 1, at least 0 (a batch without keys prefetches too), so that
/// no row of the cache past the batch's length is read (whatever it holds,
/// even NaN, never reaches P V); Nk - 1 with a tail of `blockK`; null
/// otherwise (no clamp).
Value lastKeyRow(KB &k, const KernelPlan &plan, const attn::SizeValues &sizes,
                 int64_t blockK);

/// The loops of runKeyBlocks over blocks [begin, end): [begin, fullBegin)
/// masked (when `maskedBefore`), [fullBegin, fullEnd) not, [fullEnd, end)
/// masked (when `maskedAfter`); returns the final state.
SmallVector<Value> runBlockLoops(KB &k, Value begin, Value fullBegin,
                                 Value fullEnd, Value end, bool maskedBefore,
                                 bool maskedAfter, ValueRange state,
                                 KeyBlockBody body);

/// The backward's walk, transposed: the query blocks of `blockQ` rows that
/// the structural mask lets see a key of the block [key0, key0 + blockK)
/// (clamped to Nk): [begin, end) (empty when begin >= end).
std::pair<Value, Value> queryBlockRange(KB &k, const KernelPlan &plan,
                                        Value key0, int64_t blockK,
                                        int64_t blockQ);
/// Runs `body` over the query blocks [qbBegin, qbEnd) for the key block
/// from key0 (`lastKeyBlock`: an i1, whether it is the last, whose keys past
/// Nk need the mask when Nk is not a multiple of blockK): the blocks whose
/// every row sees every key of the block, without a query tail, unmasked;
/// before them (causal diagonal, right window edge) and after them (left
/// edge, query tail) masked.
SmallVector<Value> runQueryBlocks(KB &k, const KernelPlan &plan, Value key0,
                                  Value lastKeyBlock, int64_t blockK,
                                  int64_t blockQ, Value qbBegin, Value qbEnd,
                                  ValueRange state, KeyBlockBody body);

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_STAGING_H
