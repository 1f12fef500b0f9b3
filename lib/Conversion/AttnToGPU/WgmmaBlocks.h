//===- WgmmaBlocks.h - the sm_90a machinery of the wgmma family -*- C++ -*-===//
//
// The building blocks the kernel kinds of the wgmma family assemble
// (WgmmaForward.cpp; Triton's MMAHelpers.h, FA3's CollectiveMainloop and
// named_barrier.hpp):
//
//   TileLayout     a tile of rows in shared memory as wgmma reads it
//                  (swizzled panels), its matrix descriptor fields
//   RegisterSplit  setmaxnreg of the producer and consumer warpgroups
//   WgmmaBlocks    per kernel: the 1024-aligned dynamic shared memory and
//                  the thread id; mbarriers (the full and empty barriers of
//                  a pipeline ring: init, wait, cp.async arrivals); a
//                  tile's load by TMA (one thread, complete_tx) or by
//                  cp.async of the producer warpgroup, and a staged tile's
//                  TMA store; the wgmma products (both operands in shared
//                  memory, or A in registers) and their wait; turns among
//                  the consumer warpgroups on named barriers
//
// Free functions below: i32 operands, the async-proxy fence,
// matrix descriptors. Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_WGMMABLOCKS_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_WGMMABLOCKS_H

#include "KernelBuilder.h"

namespace attnfuse::gpu_kernels {

/// The producer warpgroup's threads.
constexpr int64_t kProducerThreads = 128;

/// Registers per thread of the producer and of the consumer warpgroups
/// (setmaxnreg). The CTA's pool is what it launched with: 65536 / threads,
/// rounded down to 8 (168 x 384 threads, 128 x 512); setmaxnreg.inc waits
/// until the pool has the registers, so a split beyond it hangs the
/// consumers.
struct RegisterSplit {
  int64_t producer, consumer;
};
constexpr RegisterSplit registerSplit(int64_t consumers) {
  return consumers == 2 ? RegisterSplit{40, 232} : RegisterSplit{32, 160};
}
constexpr bool fitsPool(int64_t consumers) {
  int64_t threads = 128 * (consumers + 1);
  RegisterSplit s = registerSplit(consumers);
  return 128 * s.producer + 128 * consumers * s.consumer <=
         (65536 / threads) / 8 * 8 * threads;
}
static_assert(fitsPool(2) && fitsPool(3),
              "the register split exceeds the CTA's pool");

/// Whether a wgmma kernel loads its operands by TMA: the tma option, rows
/// whose strides are multiples of 16 bytes (TMA's global strides), and no
/// key lengths (a box would read a batch's keys past its length, which may
/// hold anything, NaN included, and 0 * NaN reaches O; cp.async clamps the
/// rows to the last valid key, lastKeyRow), and no block table (cp.async
/// reads each key row from its page, KernelArgs::keyRow).
bool loadsByTma(const KernelPlan &plan);

/// A tile of `lines` rows of a row-major source (Q, K or V), each of
/// `lineBytes` bytes, as wgmma reads it from shared memory: cut along the
/// row into panels of `panel` bytes (the swizzle width: 128, 64 or 32), a
/// panel holding its slice of every line, `panel` bytes apart, and panels
/// panelStride() apart. The 16-byte chunks of a line are permuted by the
/// swizzle: chunk c at byte offset x goes to c ^ ((x >> 7) & (panel / 16 -
/// 1)); the hardware applies it to shared-memory address bits, so tiles
/// start at 1024-byte boundaries. Q and K are K-major operands (the head dim
/// is the reduction), V an N-major one (its rows are P V's reduction).
struct TileLayout {
  int64_t lines, lineBytes, panel;
  TileLayout(int64_t lines, int64_t lineBytes)
      : lines(lines), lineBytes(lineBytes), panel(lineBytes % 128 == 0  ? 128
                                                  : lineBytes % 64 == 0 ? 64
                                                                        : 32) {}
  int64_t bytes() const { return lines * lineBytes; }
  int64_t panelStride() const { return lines * panel; }
  /// The byte offset of 16-byte chunk `chunk` of line `line`.
  Value chunkOffset(KB &e, Value line, Value chunk) const;
  /// The byte offset of element `col` (2 bytes) of line `line`.
  Value elementOffset(KB &e, Value line, Value col) const;
  /// The offset of the operand of k-step ks (16 elements of 2 bytes) from
  /// the tile's start: K-major, 32 bytes along the lines; N-major, 16 lines.
  int64_t kStepOffset(int64_t ks, bool nMajor) const {
    if (nMajor)
      return 16 * ks * panel;
    return (32 * ks / panel) * panelStride() + (32 * ks) % panel;
  }
  /// The matrix descriptor's fields besides the start address (PTX ISA,
  /// "Matrix Descriptor Format"): the leading dimension byte offset (unused
  /// by K-major swizzled layouts; between panels when N-major), the stride
  /// byte offset (between groups of 8 lines) and the swizzle mode.
  uint64_t descriptorBits(bool nMajor) const {
    uint64_t mode = panel == 128 ? 1 : panel == 64 ? 2 : 3;
    uint64_t lbo = nMajor ? panelStride() : 16, sbo = 8 * panel;
    return (((lbo >> 4) & 0x3FFF) << 16) | (((sbo >> 4) & 0x3FFF) << 32) |
           (mode << 62);
  }
};

/// x == c.
Value isEqual(KB &e, Value x, int64_t c);
Value i32Constant(KB &e, int64_t v);
/// An index as i32 (instruction operands: barrier ids, coordinates,
/// 32-bit shared-memory addresses).
Value toI32(KB &e, Value v);
/// The address `address` (an index) as an LLVM pointer of address space
/// `space` (0 generic, 3 shared).
Value pointerAt(KB &e, Value address, unsigned space);
/// fence.proxy.async.shared::cta: this thread's generic-proxy writes
/// (cp.async, stores) before the tensor cores' (or TMA's) async-proxy
/// reads.
void proxyFence(KB &e);
/// The f32 values of an LLVM struct `s` of `n`, and the type of such a
/// struct (wgmma's accumulators).
SmallVector<Value> unpack(KB &e, Value s, int64_t n);
Type f32Struct(MLIRContext *ctx, int64_t n);
/// The i64 matrix descriptor of a tile at `address` (a shared-memory byte
/// address) with the fields of `bits` (TileLayout::descriptorBits).
Value descriptor(KB &e, Value address, uint64_t bits);
/// `desc` moved by `bytes` (its start address is in 16-byte units).
Value advance(KB &e, Value desc, Value bytes);
/// wgmma.wait_group `pending`, the accumulators `acc` through it (inline
/// PTX that takes and returns them, "+f", so that no read of them moves
/// above the wait).
SmallVector<Value> waitGroup(KB &e, ArrayRef<Value> acc, int pending = 0);

/// Turns among `count` warpgroups, cyclically, on named barriers `first` +
/// w (bar.sync by warpgroup w's 128 threads, bar.arrive by the previous
/// one's): waitTurn waits for warpgroup `wg`'s turn, passTurn gives it to
/// the next, giveFirstTurn gives warpgroup 0 the first (by the last one, at
/// the start).
void waitTurn(KB &c, int64_t first, Value wg);
void passTurn(KB &c, int64_t first, int64_t count, Value wg);
void giveFirstTurn(KB &c, int64_t first);
/// bar.sync / bar.arrive on named barrier `id`, which `threads` threads
/// reach in all.
void syncNamedBarrier(KB &c, Value id, int64_t threads);
void arriveNamedBarrier(KB &c, Value id, int64_t threads);
/// bar.sync on named barrier `id` by one warpgroup's 128 threads.
void syncWarpgroup(KB &c, Value id);

/// Where a tile load reads: the tensor map of the source (TMA) and the
/// source buffer (cp.async).
struct TileSource {
  Value tensorMap, buffer;
};

/// The per-kernel machinery of a wgmma kernel: its shared memory, thread
/// id, mbarriers, tile loads and stores and products.
class WgmmaBlocks {
public:
  /// `tma`: the kernel loads by TMA (loadsByTma); `barrierOffset`: the
  /// byte offset of its mbarriers (8 bytes each) in shared memory.
  WgmmaBlocks(const KernelPlan &plan, bool tma, int64_t barrierOffset);

  /// Dynamic shared memory, its first 1024-byte boundary as the base of the
  /// tiles (`buf`: `elements` of the element type; `bufAddress`: its
  /// shared-memory address), and the thread id `tid`.
  void setUpSharedMemory(OpBuilder &b, Location loc, int64_t elements);

  /// The warp-specialized split, at the insertion point of `b`: the
  /// warpgroup index made warp-uniform for ptxas by a shuffle from lane 0
  /// (otherwise it allocates both roles' registers at the entry cap), then
  /// one branch per role, as setmaxnreg needs: warpgroup 0 runs `producer`,
  /// the others `consumers` (with the index, 1 ..); `b` ends after them.
  void splitRoles(OpBuilder &b, Location loc,
                  function_ref<void(OpBuilder &)> producer,
                  function_ref<void(OpBuilder &, Value)> consumers);

  /// The mbarrier `index` as a shared-memory pointer, and its address.
  Value barrier(KB &e, Value index);
  Value barrierAddress(KB &e, Value index);
  /// mbarrier.init of barrier `index` for `count` arrivals.
  void initBarrier(KB &e, int64_t index, int64_t count);
  /// mbarrier.arrive on barrier `index`.
  void arriveBarrier(KB &e, Value index);
  /// mbarrier.try_wait.parity on barrier `index` until the phase of
  /// `parity` completed.
  void waitBarrier(KB &e, Value index, Value parity);
  /// Waits on the full barrier `index` (waitBarrier) for a tile the
  /// tensor cores read next: cp.async's copies then need a proxyFence, TMA's
  /// are async-proxy writes already.
  void waitLanded(KB &e, Value index, Value parity);

  /// Loads rows row0 + [0, tile.lines) of `source` at (batch, h), their
  /// first `width` columns, into the tile at byte `offset` of the shared
  /// buffer and signals the full mbarrier `full` as they land: by TMA, one
  /// copy per panel issued by this thread from columns `col0` on (0 when
  /// null; rows past the source's end and the padding columns read as
  /// zeros), or by cp.async of the producer warpgroup (copyRows; rows
  /// clamped to `lastRow` when given, read where `place` says).
  void loadTile(KB &e, TileSource source, Value batch, Value h, Value row0,
                Value lastRow, int64_t width, const TileLayout &tile,
                Value offset, Value full, Value col0 = Value(),
                RowPlace place = {});
  /// Zeros of the padding columns [width, 16-aligned) of every line of
  /// `count` tiles `tile`, `stride` bytes apart from byte `offset`, by the
  /// CTA's threads.
  void zeroPadding(KB &k, const TileLayout &tile, int64_t width, int64_t offset,
                   int64_t count, int64_t stride);
  /// The TMA store, by this thread, of lines `firstLine` .. of the tile
  /// `tile` at byte `tileOffset` (one box per panel) to rows row0 .. of
  /// (batch, h) of the tensor map `map`, as one bulk group.
  void storeTile(KB &x, Value map, const TileLayout &tile, int64_t tileOffset,
                 Value firstLine, Value row0, Value h, Value batch);

  /// S (struct of n / 2 f32) = A B (+ S unless `first`), both operands
  /// from shared memory, K-major, or A M-major (`mMajorA`: imm-trans-a) and
  /// B N-major (`nMajorB`: imm-trans-b).
  Value wgmmaShared(KB &e, Value acc, Value descA, Value descB, int64_t n,
                    bool first, bool mMajorA = false, bool nMajorB = false);
  /// acc += A B, A four operand registers (the m64 tile's k-step), B N-major
  /// from shared memory.
  SmallVector<Value> wgmmaRegisterA(KB &e, ArrayRef<Value> acc,
                                    ArrayRef<Value> a, Value descB);

  /// The thread id, the shared buffer (elements) and its address.
  Value tid, buf, bufAddress;

protected:
  /// cp.async by the producer warpgroup of rows row0 + [0, lines) of `src`
  /// (clamped to `lastRow` when given) at (batch, h) (a row where `place`
  /// says), their first `width` columns, into the tile `tile` at element
  /// offset `base` of the shared buffer.
  void copyRows(KB &e, Value src, Value batch, Value h, Value row0,
                Value lastRow, int64_t width, const TileLayout &tile,
                Value base, RowPlace place);
  /// copyRows for a head dim that is not a multiple of 8 (its rows are not
  /// 16-byte aligned): element by element, by loads and shared-memory
  /// stores.
  void copyElements(KB &e, Value src, Value batch, Value h, Value row0,
                    Value lastRow, int64_t width, const TileLayout &tile,
                    Value base, RowPlace place);
  /// Signals the full mbarrier `index` once this thread's copies of rows of
  /// `width` elements (copyRows) landed.
  void signalFull(KB &e, Value index, int64_t width);

  /// The kernel's plan, its element type, whether it loads by TMA.
  const KernelPlan &plan;
  Type elt;
  const bool tma;
  const int64_t barrierOffset;
};

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_WGMMABLOCKS_H
