//===- MmaSyncBlocks.h - the machinery of the mma_sync family -*- C++ -*-===//
//
// The building blocks the kernel kinds of the mma_sync family assemble
// (MmaSyncForward.cpp, MmaSyncBackward.cpp; Triton's DotOpToLLVM/MMAv2.cpp):
// the m16n8k16 mma.sync and its ldmatrix operands (and their lane offsets),
// the cp.async staging of a block of rows (and of per-row f32 values) into a
// stage of a shared-memory ring (rows padded by kPad elements,
// so that ldmatrix's 8 row addresses hit distinct banks), the ring's
// cp.async groups, and the zeros of padded head dims. Fragment layouts:
// MmaSyncForward.cpp's header. Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_MMASYNCBLOCKS_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_MMASYNCBLOCKS_H

#include "KernelBuilder.h"

namespace attnfuse::gpu_kernels {

/// The padding of a shared-memory row, in elements, and the row stride of
/// rows of `d` elements.
constexpr int64_t kPad = 8;
inline int64_t rowStride(int64_t d) { return d + kPad; }

/// The per-kernel machinery of an mma_sync kernel of plan.cfg.warps warps:
/// its products, ldmatrix loads and cp.async staging.
class MmaSyncBlocks {
public:
  explicit MmaSyncBlocks(const KernelPlan &plan);

  /// c = a * b + c on one m16n8k16 tile; c has four f32.
  void mma(KB &e, ArrayRef<Value> a, ArrayRef<Value> bOps,
           MutableArrayRef<Value> c);
  /// The two n-tiles of an ldmatrix x4 B operand: c[0..3] += a * (b0, b1),
  /// c[4..7] += a * (b2, b3).
  void mmaPair(KB &e, ArrayRef<Value> a, ArrayRef<Value> b4, Value *c) {
    mma(e, a, {b4[0], b4[1]}, MutableArrayRef<Value>(c, 4));
    mma(e, a, {b4[2], b4[3]}, MutableArrayRef<Value>(c + 4, 4));
  }
  /// ldmatrix x4 of `buf[stage, row, col]`, the four registers as operands.
  SmallVector<Value> ldmatrix(KB &e, Value buf, Value stage, Value row,
                              Value col, bool transpose);
  /// Issues the cp.async copies of key block `kb` of src[batch, head] (rows
  /// clamped to Nk - 1, or to `lastRow` where given: lastKeyRow with key
  /// lengths; at the places `place` gives: paged K/V) into stage `stage` of
  /// `buf`, and adds their tokens to `tokens`: copyRows of blocks of kBK
  /// keys.
  void copyBlock(KB &e, Value src, Value batch, Value head, Value buf,
                 int64_t width, Value kb, Value stage,
                 SmallVector<Value> &tokens, Value lastRow = {},
                 RowPlace place = {}) {
    copyRows(e, src, batch, head, buf, width, kb, kBK, plan.Nk, plan.numKB,
             stage, tokens, lastRow, place);
  }
  /// The same for block `block` of `rows` rows of src[batch, head] (a
  /// sequence of `length` rows, `numBlocks` blocks): rows past `length`
  /// are clamped to its last (a block index past the last is clamped to it
  /// when `length` is a multiple of `rows`); with `lastRow`, every row is
  /// clamped to it instead. A row is read where `place` says.
  void copyRows(KB &e, Value src, Value batch, Value head, Value buf,
                int64_t width, Value block, int64_t rows, int64_t length,
                int64_t numBlocks, Value stage, SmallVector<Value> &tokens,
                Value lastRow = {}, RowPlace place = {});
  /// 4-byte cp.async copies of src[batch, head, row0 .. row0 + count - 1]
  /// (f32 per row, e.g. lse; rows clamped to `length` - 1) into
  /// buf[stage, 0 .. count - 1], tokens untracked (commit takes them).
  void copyRowValues(KB &e, Value src, Value batch, Value head, Value row0,
                     int64_t count, int64_t length, Value buf, Value stage);
  /// The copies of `tokens` as one cp.async group (tokens cleared): with S
  /// stages, S - 1 blocks are in flight, and a block is ready once at most
  /// S - 2 younger groups are pending (waitOldest; then a barrier makes it
  /// visible to every warp).
  Value commit(KB &e, SmallVector<Value> &tokens);
  void waitOldest(KB &e, Value group);
  /// Zeros in the padding columns [from, to) of every row of `stages` x
  /// `rows` of `buf`, for good (the copies write only the true columns):
  /// one 16-byte store per row (threads past the last row store nothing: no
  /// write-after-write).
  void zeroPadding(KB &k, Value buf, int64_t stages, int64_t rows, int64_t from,
                   int64_t to);

  /// The ldmatrix x4 row and column offsets of a lane (within a 16 x 16
  /// tile): `a` for A fragments (and B by .trans: V of P V), row
  /// l % 8 + 8 ((l / 8) % 2), column 8 (l / 16); `b` for B fragments (and
  /// A by .trans from a transposed buffer), row l % 8 + 8 (l / 16), column
  /// 8 ((l / 8) % 2).
  struct LaneOffsets {
    Value arow, acol, brow, bcol;
  };
  static LaneOffsets laneOffsets(KB &k, Value lane);

  /// The thread id (set by the kernel).
  Value tid;

protected:
  const KernelPlan &plan;
  Type elt;
  bool isBF16;
  /// Keys per block, warps and threads per CTA, K/V pipeline stages.
  const int64_t kBK, kWarps, kThreads, kStages;
  /// Nk is not a multiple of kBK: the last block's rows past Nk are clamped
  /// on load and masked.
  const bool tail;
};

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_MMASYNCBLOCKS_H
