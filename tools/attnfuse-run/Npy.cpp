//===- Npy.cpp - NumPy .npy files for attnfuse-run ------------------------===//
#include "Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace attnfuse_run;
using llvm::StringRef;

static constexpr char kMagic[] = "\x93NUMPY";
static constexpr size_t kMagicSize = 6;

namespace {
/// The dtype of a .npy file: kind 'f', 'i', 'u', 'b' or 'V' and item size.
struct Dtype {
  char kind;
  unsigned size;
  std::string descr;
};

/// The header of a .npy file and where its data starts.
struct Header {
  Dtype dtype;
  llvm::SmallVector<int64_t> shape;
  size_t dataOffset;
};
} // namespace

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Returns the text after `'key':` in the header dictionary, with leading
/// blanks removed.
static llvm::Expected<StringRef> findValue(StringRef dict, StringRef key) {
  for (const char *quote : {"'", "\""}) {
    std::string pattern = (llvm::Twine(quote) + key + quote).str();
    size_t pos = dict.find(pattern);
    if (pos == StringRef::npos)
      continue;
    StringRef rest = dict.drop_front(pos + pattern.size()).ltrim();
    if (!rest.consume_front(":"))
      break;
    return rest.ltrim();
  }
  return makeError("no '" + key + "' in the header");
}

static llvm::Expected<Dtype> parseDescr(StringRef value) {
  if (value.empty() || (value[0] != '\'' && value[0] != '"'))
    return makeError("unsupported dtype (structured arrays are not "
                     "supported): " +
                     value.take_until([](char c) { return c == '}'; }));
  char quote = value[0];
  StringRef descr = value.drop_front().take_until(
      [quote](char c) { return c == quote; });
  Dtype dtype{0, 0, descr.str()};
  if (descr.size() < 3 || !StringRef("<|=>").contains(descr[0]) ||
      descr.drop_front(2).getAsInteger(10, dtype.size))
    return makeError("unsupported dtype '" + descr + "'");
  dtype.kind = descr[1];
  if (descr[0] == '>' && dtype.size != 1)
    return makeError("big-endian dtype '" + descr + "' is not supported");
  return dtype;
}

static llvm::Expected<llvm::SmallVector<int64_t>> parseShape(StringRef value) {
  if (!value.consume_front("("))
    return makeError("malformed shape");
  StringRef tuple = value.take_until([](char c) { return c == ')'; });
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<StringRef> parts;
  tuple.split(parts, ',');
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t dim;
    // Sizes may carry an 'L' suffix in files written by Python 2.
    part.consume_back("L");
    if (part.getAsInteger(10, dim) || dim < 0)
      return makeError("malformed shape '(" + tuple + ")'");
    shape.push_back(dim);
  }
  return shape;
}

static llvm::Expected<Header> parseHeader(StringRef file) {
  if (file.size() < 10 || !file.starts_with(StringRef(kMagic, kMagicSize)))
    return makeError("not a .npy file");
  unsigned major = static_cast<unsigned char>(file[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(file[8]) |
                   static_cast<unsigned char>(file[9]) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12)
      return makeError("truncated header");
    headerLength = 0;
    for (int i = 3; i >= 0; --i)
      headerLength = headerLength << 8 | static_cast<unsigned char>(file[8 + i]);
    headerStart = 12;
  } else {
    return makeError("unsupported .npy format version " + llvm::Twine(major));
  }
  if (file.size() < headerStart + headerLength)
    return makeError("truncated header");
  StringRef dict = file.substr(headerStart, headerLength);

  Header header;
  header.dataOffset = headerStart + headerLength;
  llvm::Expected<StringRef> descr = findValue(dict, "descr");
  if (!descr)
    return descr.takeError();
  llvm::Expected<Dtype> dtype = parseDescr(*descr);
  if (!dtype)
    return dtype.takeError();
  header.dtype = std::move(*dtype);
  llvm::Expected<StringRef> fortran = findValue(dict, "fortran_order");
  if (!fortran)
    return fortran.takeError();
  if (fortran->starts_with("True"))
    return makeError("Fortran-ordered arrays are not supported (save a "
                     "C-contiguous array, e.g. numpy.ascontiguousarray)");
  llvm::Expected<StringRef> shapeText = findValue(dict, "shape");
  if (!shapeText)
    return shapeText.takeError();
  llvm::Expected<llvm::SmallVector<int64_t>> shape = parseShape(*shapeText);
  if (!shape)
    return shape.takeError();
  header.shape = std::move(*shape);
  return header;
}

static std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string s = "(";
  for (int64_t dim : shape)
    s += std::to_string(dim) + (shape.size() == 1 ? "," : ", ");
  if (shape.size() > 1)
    s.resize(s.size() - 2);
  return s + ")";
}

/// Reads the little-endian unsigned integer of `size` bytes at `p`.
static uint64_t loadBits(const char *p, unsigned size) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, size);
  return bits;
}

/// Converts the integer element at `p` of `dtype` (bool, int or uint).
static llvm::Expected<int64_t> loadInt(const char *p, const Dtype &dtype) {
  uint64_t bits = loadBits(p, dtype.size);
  if (dtype.kind == 'b')
    return bits != 0;
  if (dtype.kind == 'u') {
    if (bits > static_cast<uint64_t>(INT64_MAX))
      return makeError("value " + llvm::Twine(bits) + " is out of range");
    return static_cast<int64_t>(bits);
  }
  unsigned shift = 64 - 8 * dtype.size;
  return static_cast<int64_t>(bits << shift) >> shift;
}

llvm::Expected<HostTensor> attnfuse_run::readNpy(StringRef path,
                                                 ElementKind kind,
                                                 llvm::ArrayRef<int64_t> shape) {
  auto fail = [&](const llvm::Twine &message) {
    return makeError(path + ": " + message);
  };
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(buffer.getError().message());
  StringRef file = (*buffer)->getBuffer();
  llvm::Expected<Header> header = parseHeader(file);
  if (!header)
    return fail(llvm::toString(header.takeError()));
  const Dtype &dtype = header->dtype;
  if (llvm::ArrayRef<int64_t>(header->shape) != shape)
    return fail("shape " + formatShape(header->shape) +
                " does not match the argument's shape " + formatShape(shape));

  bool floatSource = dtype.kind == 'f' &&
                     (dtype.size == 2 || dtype.size == 4 || dtype.size == 8);
  bool intSource = (dtype.kind == 'b' && dtype.size == 1) ||
                   ((dtype.kind == 'i' || dtype.kind == 'u') &&
                    llvm::is_contained({1u, 2u, 4u, 8u}, dtype.size));
  bool bf16Bits = kind == ElementKind::BF16 && dtype.size == 2 &&
                  (dtype.kind == 'u' || dtype.kind == 'V');
  bool compatible =
      isFloat(kind) ? floatSource || bf16Bits : intSource;
  if (!compatible)
    return fail("cannot convert dtype '" + dtype.descr + "' to " +
                getName(kind));

  HostTensor tensor(kind, shape);
  int64_t n = tensor.getNumElements();
  size_t dataBytes = file.size() - header->dataOffset;
  size_t expectedBytes = static_cast<size_t>(n) * dtype.size;
  if (dataBytes < expectedBytes)
    return fail("truncated data");
  // A longer file is not this array (two arrays written to one file, or a
  // shape that disagrees with the data).
  if (dataBytes > expectedBytes)
    return fail(llvm::Twine(dataBytes - expectedBytes) +
                " bytes after the data of the " + formatShape(header->shape) +
                " array");
  const char *data = file.data() + header->dataOffset;
  if (bf16Bits) {
    std::memcpy(tensor.data(), data, tensor.getNumBytes());
    return tensor;
  }
  if (floatSource) {
    ElementKind source = dtype.size == 2   ? ElementKind::F16
                         : dtype.size == 4 ? ElementKind::F32
                                           : ElementKind::F64;
    for (int64_t i = 0; i < n; ++i)
      tensor.setFloat(
          i, bitsToDouble(loadBits(data + i * dtype.size, dtype.size), source));
    return tensor;
  }
  unsigned width = kind == ElementKind::I1 ? 1 : 8 * getByteSize(kind);
  int64_t low = kind == ElementKind::I1 ? 0 : -(int64_t(1) << (width - 1));
  int64_t high =
      width == 64 ? INT64_MAX : static_cast<int64_t>((uint64_t(1) << width) - 1);
  for (int64_t i = 0; i < n; ++i) {
    llvm::Expected<int64_t> value = loadInt(data + i * dtype.size, dtype);
    if (!value)
      return fail(llvm::toString(value.takeError()));
    if (*value < low || *value > high)
      return fail("element " + llvm::Twine(i) + " = " + llvm::Twine(*value) +
                  " does not fit in " + getName(kind));
    tensor.setInt(i, *value);
  }
  return tensor;
}

llvm::Error attnfuse_run::writeNpy(StringRef path, const HostTensor &tensor) {
  ElementKind kind = tensor.getKind();
  StringRef descr;
  switch (kind) {
  case ElementKind::F16:
    descr = "<f2";
    break;
  case ElementKind::BF16:
  case ElementKind::F32:
    descr = "<f4";
    break;
  case ElementKind::F64:
    descr = "<f8";
    break;
  case ElementKind::I1:
    descr = "|b1";
    break;
  case ElementKind::I8:
    descr = "|i1";
    break;
  case ElementKind::I16:
    descr = "<i2";
    break;
  case ElementKind::I32:
    descr = "<i4";
    break;
  case ElementKind::I64:
    descr = "<i8";
    break;
  }
  std::string dict = ("{'descr': '" + descr +
                      "', 'fortran_order': False, 'shape': " +
                      formatShape(tensor.getShape()) + ", }")
                         .str();
  // Pad with blanks and a newline so that the data starts 64-byte aligned.
  bool wide = kMagicSize + 4 + dict.size() + 1 > 65535;
  size_t prefix = kMagicSize + (wide ? 6 : 4);
  size_t total = llvm::alignTo(prefix + dict.size() + 1, 64);
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError(path + ": " + ec.message());
  os.write(kMagic, kMagicSize);
  os << static_cast<char>(wide ? 2 : 1) << '\0';
  uint32_t length = dict.size();
  for (unsigned i = 0; i < (wide ? 4u : 2u); ++i)
    os << static_cast<char>(length >> (8 * i) & 0xff);
  os << dict;
  if (kind == ElementKind::BF16) {
    for (int64_t i = 0, e = tensor.getNumElements(); i < e; ++i) {
      float f = static_cast<float>(tensor.getFloat(i));
      os.write(reinterpret_cast<const char *>(&f), sizeof(f));
    }
  } else {
    os.write(static_cast<const char *>(tensor.data()), tensor.getNumBytes());
  }
  os.close();
  if (os.has_error())
    return makeError(path + ": " + os.error().message());
  return llvm::Error::success();
}
