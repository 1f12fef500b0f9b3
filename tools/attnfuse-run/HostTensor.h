//===- HostTensor.h - dense host arrays for attnfuse-run --------*- C++ -*-===//
//
// A HostTensor is a dense, row-major array in host memory with one of the
// element types attnfuse-run exchanges with JIT-compiled functions. Its bytes
// use the in-memory representation of the JIT code: f16 and bf16 are their
// 16-bit patterns, i1 is one byte (0 or 1) per element.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_TOOLS_ATTNFUSE_RUN_HOSTTENSOR_H
#define ATTNFUSE_TOOLS_ATTNFUSE_RUN_HOSTTENSOR_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MemAlloc.h"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

namespace attnfuse_run {

/// The element types attnfuse-run supports.
enum class ElementKind { F16, BF16, F32, F64, I1, I8, I16, I32, I64 };

/// Returns the element kind of `type`, or nothing if it is not supported.
std::optional<ElementKind> getElementKind(mlir::Type type);

/// Returns the number of bytes one element occupies in memory.
unsigned getByteSize(ElementKind kind);

/// Returns true for f16, bf16, f32 and f64.
bool isFloat(ElementKind kind);

/// Returns the MLIR spelling of `kind` ("bf16", "i1", ...).
llvm::StringRef getName(ElementKind kind);

/// Rounds `value` to the nearest `kind` value, ties to even (single
/// rounding), and returns its bit pattern, zero-extended. `kind` is a float.
uint64_t roundToBits(double value, ElementKind kind);

/// Returns the value of the float bit pattern `bits` of `kind` (exact).
double bitsToDouble(uint64_t bits, ElementKind kind);

/// An allocator whose failure is LLVM's bad-alloc error (attnfuse-run's
/// "out of memory" error, exit status 2) in every build: it allocates with
/// llvm::safe_malloc. A failing operator new reaches that error only through
/// the new-handler, which AddressSanitizer's operator new does not call (it
/// aborts, even with allocator_may_return_null=1, for a host buffer of 2^59
/// bytes in test/Tools/attnfuse-run-resource-errors.mlir); its malloc
/// returns null there, as glibc's does.
template <typename T>
struct CheckedAllocator {
  using value_type = T;
  CheckedAllocator() = default;
  template <typename U>
  CheckedAllocator(const CheckedAllocator<U> &) {}
  T *allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T))
      llvm::report_bad_alloc_error("a host buffer");
    return static_cast<T *>(llvm::safe_malloc(n * sizeof(T)));
  }
  void deallocate(T *p, size_t) { std::free(p); }
  template <typename U>
  bool operator==(const CheckedAllocator<U> &) const { return true; }
  template <typename U>
  bool operator!=(const CheckedAllocator<U> &) const { return false; }
};

/// A dense row-major array of `kind` elements of shape `shape` (empty for a
/// scalar). The storage is 8-byte aligned.
class HostTensor {
public:
  HostTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape);

  ElementKind getKind() const { return kind; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getNumElements() const { return numElements; }
  size_t getNumBytes() const { return numElements * getByteSize(kind); }
  void *data() { return storage.data(); }
  const void *data() const { return storage.data(); }

  /// Reads element `i` of a float tensor, exactly.
  double getFloat(int64_t i) const;
  /// Writes element `i` of a float tensor, rounding `value` to nearest even.
  void setFloat(int64_t i, double value);
  /// Reads element `i` of an integer tensor, sign-extended (i1: 0 or 1).
  int64_t getInt(int64_t i) const;
  /// Writes element `i` of an integer tensor, truncating `value`.
  void setInt(int64_t i, int64_t value);

private:
  ElementKind kind;
  llvm::SmallVector<int64_t> shape;
  int64_t numElements;
  std::vector<uint64_t, CheckedAllocator<uint64_t>> storage;
};

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_HOSTTENSOR_H
