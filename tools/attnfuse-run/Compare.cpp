//===- Compare.cpp - elementwise comparison of results --------------------===//
#include "Compare.h"

#include <cassert>
#include <cmath>
#include <limits>

using namespace attnfuse_run;

Tolerance attnfuse_run::getDefaultTolerance(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
    return {1e-12, 1e-10};
  case ElementKind::F32:
    return {1e-5, 1e-4};
  case ElementKind::F16:
    return {1e-3, 1e-2};
  case ElementKind::BF16:
    return {1e-2, 5e-2};
  default:
    return {0, 0};
  }
}

Comparison attnfuse_run::compare(const HostTensor &actual,
                                 const HostTensor &expected,
                                 Tolerance tolerance) {
  assert(actual.getShape() == expected.getShape() && "shapes differ");
  assert(isFloat(actual.getKind()) == isFloat(expected.getKind()) &&
         "comparing floats with integers");
  constexpr double inf = std::numeric_limits<double>::infinity();
  Comparison result;
  auto record = [&](double diff, double expectedValue) {
    double rel = expectedValue == 0 ? inf : diff / std::fabs(expectedValue);
    result.maxAbs = std::max(result.maxAbs, diff);
    result.maxRel = std::max(result.maxRel, rel);
  };
  int64_t n = actual.getNumElements();
  if (!isFloat(actual.getKind())) {
    // Integers match exactly, whatever the tolerance.
    for (int64_t i = 0; i < n; ++i) {
      int64_t a = actual.getInt(i), b = expected.getInt(i);
      if (a == b)
        continue;
      record(std::fabs(static_cast<double>(a) - static_cast<double>(b)), b);
      ++result.numMismatches;
    }
    return result;
  }
  for (int64_t i = 0; i < n; ++i) {
    double a = actual.getFloat(i), b = expected.getFloat(i);
    // NaN matches NaN, and only NaN (docs/Semantics.md: NaN propagates).
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) {
        ++result.numNaNs;
        ++result.numMismatches;
      }
      continue;
    }
    if (a == b)
      continue;
    bool infinite = std::isinf(a) || std::isinf(b);
    double diff = infinite ? inf : std::fabs(a - b);
    record(diff, b);
    if (infinite || diff > tolerance.atol + tolerance.rtol * std::fabs(b))
      ++result.numMismatches;
  }
  return result;
}
