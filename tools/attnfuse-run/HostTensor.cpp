//===- HostTensor.cpp - dense host arrays for attnfuse-run ----------------===//
#include "HostTensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "attnfuse/ExecutionEngine/FloatBuiltins.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/ErrorHandling.h"

#include <cassert>
#include <cstring>

using namespace attnfuse_run;

std::optional<ElementKind> attnfuse_run::getElementKind(mlir::Type type) {
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isSignlessInteger(1))
    return ElementKind::I1;
  if (type.isSignlessInteger(8))
    return ElementKind::I8;
  if (type.isSignlessInteger(16))
    return ElementKind::I16;
  if (type.isSignlessInteger(32))
    return ElementKind::I32;
  if (type.isSignlessInteger(64))
    return ElementKind::I64;
  return std::nullopt;
}

unsigned attnfuse_run::getByteSize(ElementKind kind) {
  switch (kind) {
  case ElementKind::I1:
  case ElementKind::I8:
    return 1;
  case ElementKind::F16:
  case ElementKind::BF16:
  case ElementKind::I16:
    return 2;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  }
  llvm_unreachable("unknown element kind");
}

bool attnfuse_run::isFloat(ElementKind kind) {
  return kind == ElementKind::F16 || kind == ElementKind::BF16 ||
         kind == ElementKind::F32 || kind == ElementKind::F64;
}

llvm::StringRef attnfuse_run::getName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
    return "f16";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::F32:
    return "f32";
  case ElementKind::F64:
    return "f64";
  case ElementKind::I1:
    return "i1";
  case ElementKind::I8:
    return "i8";
  case ElementKind::I16:
    return "i16";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I64:
    return "i64";
  }
  llvm_unreachable("unknown element kind");
}

/// The APFloat semantics of a 16-bit float kind.
static const llvm::fltSemantics &getHalfSemantics(ElementKind kind) {
  return kind == ElementKind::F16 ? llvm::APFloat::IEEEhalf()
                                  : llvm::APFloat::BFloat();
}

uint64_t attnfuse_run::roundToBits(double value, ElementKind kind) {
  switch (kind) {
  case ElementKind::F64: {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
  }
  case ElementKind::F32: {
    // The C++ conversion rounds to nearest even in the default FP environment.
    float f = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    return bits;
  }
  case ElementKind::F16:
  case ElementKind::BF16:
    return attnfuse::roundToHalfBits(value, getHalfSemantics(kind));
  default:
    llvm_unreachable("not a float kind");
  }
}

double attnfuse_run::bitsToDouble(uint64_t bits, ElementKind kind) {
  switch (kind) {
  case ElementKind::F64: {
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    return d;
  }
  case ElementKind::F32: {
    uint32_t narrow = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &narrow, sizeof(f));
    return f;
  }
  case ElementKind::F16:
  case ElementKind::BF16:
    return attnfuse::halfBitsToDouble(static_cast<uint16_t>(bits),
                                      getHalfSemantics(kind));
  default:
    llvm_unreachable("not a float kind");
  }
}

HostTensor::HostTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape)
    : kind(kind), shape(shape) {
  numElements = 1;
  for (int64_t dim : shape)
    numElements *= dim;
  storage.assign((getNumBytes() + 7) / 8, 0);
}

double HostTensor::getFloat(int64_t i) const {
  assert(isFloat(kind) && "not a float tensor");
  unsigned size = getByteSize(kind);
  uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const char *>(data()) + i * size, size);
  return bitsToDouble(bits, kind);
}

void HostTensor::setFloat(int64_t i, double value) {
  assert(isFloat(kind) && "not a float tensor");
  unsigned size = getByteSize(kind);
  uint64_t bits = roundToBits(value, kind);
  std::memcpy(static_cast<char *>(data()) + i * size, &bits, size);
}

int64_t HostTensor::getInt(int64_t i) const {
  const char *p = static_cast<const char *>(data());
  switch (kind) {
  case ElementKind::I1:
    return p[i] != 0;
  case ElementKind::I8:
    return reinterpret_cast<const int8_t *>(p)[i];
  case ElementKind::I16:
    return reinterpret_cast<const int16_t *>(p)[i];
  case ElementKind::I32:
    return reinterpret_cast<const int32_t *>(p)[i];
  case ElementKind::I64:
    return reinterpret_cast<const int64_t *>(p)[i];
  default:
    llvm_unreachable("not an integer tensor");
  }
}

void HostTensor::setInt(int64_t i, int64_t value) {
  char *p = static_cast<char *>(data());
  switch (kind) {
  case ElementKind::I1:
    p[i] = (value & 1) != 0;
    return;
  case ElementKind::I8:
    reinterpret_cast<int8_t *>(p)[i] = static_cast<int8_t>(value);
    return;
  case ElementKind::I16:
    reinterpret_cast<int16_t *>(p)[i] = static_cast<int16_t>(value);
    return;
  case ElementKind::I32:
    reinterpret_cast<int32_t *>(p)[i] = static_cast<int32_t>(value);
    return;
  case ElementKind::I64:
    reinterpret_cast<int64_t *>(p)[i] = value;
    return;
  default:
    llvm_unreachable("not an integer tensor");
  }
}
