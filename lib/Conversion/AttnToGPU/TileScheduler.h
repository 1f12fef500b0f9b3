//===- TileScheduler.h - which CTA computes which tile -*- C++ -*-===//
//
// The order of the tiles (query block, batch * head) of a kernel: the
// one-CTA-per-tile grid of every family (blockCoordinates, in the order of
// KernelPlan::headsFastest) and the persistent walk of the wgmma family's
// CTAs over the same tiles (TileScheduler::forEachTile), FA3's
// tile_scheduler.hpp. Every kind of kernel walks its tiles through it.
// Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_TILESCHEDULER_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_TILESCHEDULER_H

#include "KernelFamily.h"

#include <utility>

namespace attnfuse::gpu_kernels {

/// The query block and (batch * head) index of grid position (bx, by) (see
/// KernelPlan::headsFastest); query blocks are walked backwards.
std::pair<Value, Value> gridCoordinates(KB &k, const KernelPlan &plan, Value bx,
                                        Value by);
/// Those of the CTA (one per tile).
std::pair<Value, Value> blockCoordinates(KB &k, const KernelPlan &plan);
/// Those of the tile `tile` of a persistent kernel: the CTAs of the
/// one-CTA-per-tile grid, numbered x fastest.
std::pair<Value, Value> tileCoordinates(KB &k, const KernelPlan &plan,
                                        Value tile);
/// One CTA per (query block, batch * head), plan.threads threads, in the
/// order of blockCoordinates; plan.kvSplits CTAs per tile (grid z) where
/// the forward splits the keys.
LaunchShape getTileGridShape(const KernelPlan &plan);

/// The key splits of a forward whose options are resolved (block-q,
/// block-k): `requested` where positive (at most one per key block), else
/// FlashDecoding's case: where the tiles are fewer than kSplitCtasPerSm
/// CTAs per SM, as many splits as bring them there, each keeping at least
/// kMinBlocksPerSplit key blocks; 1 otherwise.
int64_t chooseKeySplits(const KernelPlan &plan, int64_t requested);
/// The fewest automatic splits for which mma=auto leaves the wgmma forward
/// for the split mma_sync one (convert-attn-to-gpu resolves the mma_sync
/// forward's options for the op on trial and compares its split count):
/// with fewer, the unsplit wgmma forward was faster (H100, 2026-12-07,
/// docs/GPU.md's "Split keys": packed GQA decode at B = 8, 64 tiles, 9
/// splits: 2781 against 2515 GB/s at Nk = 8k).
constexpr int64_t kMinAutomaticSplits = 16;
/// Split `split`'s share of the key blocks [kbBegin, kbEnd) (of
/// plan.kvSplits near-equal shares, in order; empty where the range is).
std::pair<Value, Value> splitKeyBlocks(KB &k, const KernelPlan &plan,
                                       Value split, Value kbBegin,
                                       Value kbEnd);

/// One tile of a persistent kernel: its batch, head and K/V head, its query
/// rows from q0, the key blocks [kbBegin, kbEnd) its rows can see, its
/// place among the CTA's tiles (round: 0, 1, ...) and the sizes it sees
/// (KernelArgs::sizesAt: its batch's key length).
struct Tile {
  Value bi, hi, kvh, q0, kbBegin, kbEnd, round;
  attn::SizeValues sizes;
  /// Whether the tile has a key block: signed, since the range's end is
  /// negative when a window shows the tile's rows no key at all (Nq > Nk,
  /// bottom-right); unsigned, it would wrap, and the consumers would wait
  /// for a block the producer never loads.
  Value hasBlocks(KB &e) const;
};

/// The persistent walk over the tiles of query blocks of `blockQ` rows and
/// key blocks of `blockK` keys: plan.cfg.persistentCtas CTAs (or one per
/// tile, -1), each walking its tiles in the one-CTA-per-tile grid's order.
class TileScheduler {
public:
  TileScheduler(const KernelPlan &plan, const KernelArgs &args, int64_t blockQ,
                int64_t blockK);
  /// min(tiles, persistent-ctas) CTAs, or one per tile with
  /// persistent-ctas = -1; x alone.
  static LaunchShape getLaunchShape(const KernelPlan &plan);
  /// Emits a loop over the CTA's tiles (a snake over rounds of gridDim.x
  /// tiles, in the one-CTA-per-tile grid's order, see tileCoordinates;
  /// causal-like masks where walksUnits: pairs of one head's query blocks)
  /// with loop-carried `init`: `body` gets the tile and the carried values,
  /// and yields the next ones. One tile per CTA: no loop.
  SmallVector<Value>
  forEachTile(KB &e, ValueRange init,
              function_ref<SmallVector<Value>(KB &, const Tile &, ValueRange)>
                  body) const;

private:
  /// Whether the walk takes units of two query blocks of a head rather
  /// than every head's tiles longest first.
  bool walksUnits() const;

  const KernelPlan &plan;
  const KernelArgs &args;
  const int64_t blockQ, blockK;
  /// Whether the tiles' (batch, head) index walks the batch fastest: a bias
  /// one per head, the same for every batch element (a [1, H, Nq, Nk] bias;
  /// B > 1, no GQA), so that the tiles of one head's batch elements run
  /// together and read the same bias tiles, mostly from L2, instead of
  /// heads of one batch element, which read different ones from memory.
  /// (GQA keeps heads fastest: a group's heads share K/V that way; a bias
  /// the same for every head is shared by heads running together already.)
  const bool batchFastest;
};

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_TILESCHEDULER_H
