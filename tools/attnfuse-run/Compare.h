//===- Compare.h - elementwise comparison of results ------------*- C++ -*-===//
#ifndef ATTNFUSE_TOOLS_ATTNFUSE_RUN_COMPARE_H
#define ATTNFUSE_TOOLS_ATTNFUSE_RUN_COMPARE_H

#include "HostTensor.h"

namespace attnfuse_run {

/// Elementwise tolerance: `|actual - expected| <= atol + rtol * |expected|`.
struct Tolerance {
  double atol;
  double rtol;
};

/// Returns the default tolerance for results of element type `kind`: f64
/// 1e-12/1e-10, f32 1e-5/1e-4, f16 1e-3/1e-2, bf16 1e-2/5e-2, integers exact.
Tolerance getDefaultTolerance(ElementKind kind);

/// The differences between two tensors of the same shape.
struct Comparison {
  /// Largest |actual - expected| (infinite where exactly one is infinite or
  /// the infinities differ).
  double maxAbs = 0;
  /// Largest |actual - expected| / |expected| (infinite for expected = 0).
  double maxRel = 0;
  /// Elements where exactly one side is NaN.
  int64_t numNaNs = 0;
  /// Elements outside the tolerance, NaNs included.
  int64_t numMismatches = 0;
};

/// Compares `actual` with `expected` elementwise. Both are float tensors (of
/// any float kinds) or both integer tensors, of the same shape. Equal values
/// (equal infinities included) match; NaN matches NaN and nothing else;
/// integers match only when equal. `tolerance` must not be NaN or negative.
Comparison compare(const HostTensor &actual, const HostTensor &expected,
                   Tolerance tolerance);

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_COMPARE_H
