//===- IndexBounds.h - the range of integer arguments -*- C++ -*-===//
//
// Exported models take integer tensors that index other tensors (token ids
// into an embedding table, positions, token types), and index them unchecked
// (a TOSA gather) or behind a cf.assert (torch-mlir's linalg). Random values
// of the whole integer range would read out of bounds or fail the assert, so
// attnfuse-run draws such arguments in the range they index.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_TOOLS_ATTNFUSE_RUN_INDEXBOUNDS_H
#define ATTNFUSE_TOOLS_ATTNFUSE_RUN_INDEXBOUNDS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <optional>

namespace attnfuse_run {

/// The size of the smallest static tensor dimension that the values of
/// argument `index` of `func` index, following them through every op that
/// gives integer results (casts, reshapes, elementwise arithmetic, the
/// bodies of linalg ops): as a `tensor.extract` index, or the indices of
/// `tosa.gather` (its values' dimension 1). None when they index nothing.
std::optional<int64_t> findIndexedSize(mlir::func::FuncOp func,
                                       unsigned index);

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_INDEXBOUNDS_H
