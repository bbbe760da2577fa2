#include "attnrt/core/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <utility>

#include "core/fail.h"

namespace attnrt {
namespace {

using Dims = std::vector<std::int64_t>;

std::string format_dims(const Dims& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// Python-style axis: -1 is the last axis.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t ndim, std::string_view operation) {
  const std::int64_t normalized = axis < 0 ? axis + ndim : axis;
  if (normalized < 0 || normalized >= ndim) {
    fail("{}: axis {} is out of range for a tensor with {} axes", operation, axis, ndim);
  }
  return normalized;
}

Dims contiguous_strides(const Dims& shape) {
  Dims strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

// Product of the sizes, or nullopt if it overflows int64.
std::optional<std::int64_t> checked_numel(const Dims& shape) {
  std::int64_t numel = 1;
  for (const std::int64_t size : shape) {
    if (__builtin_mul_overflow(numel, size, &numel)) return std::nullopt;
  }
  return numel;
}

// Bytes from the first addressable element to one past the last (for a non-empty view with
// non-negative strides), or nullopt if it overflows int64.
std::optional<std::int64_t> checked_extent(const Dims& shape, const Dims& strides,
                                           std::int64_t element_size) {
  std::int64_t last = 0;  // element offset of the last addressable element
  for (std::size_t i = 0; i < shape.size(); ++i) {
    std::int64_t term = 0;
    if (__builtin_mul_overflow(shape[i] - 1, strides[i], &term) ||
        __builtin_add_overflow(last, term, &last)) {
      return std::nullopt;
    }
  }
  std::int64_t extent = 0;
  if (__builtin_mul_overflow(last + 1, element_size, &extent)) return std::nullopt;
  return extent;
}

void validate_view(const Buffer* buffer, DType dtype, const Dims& shape, const Dims& strides,
                   std::int64_t byte_offset) {
  if (buffer == nullptr) fail("a tensor view needs a buffer, got a null buffer");
  if (shape.size() != strides.size()) {
    fail("tensor shape {} has {} axes but strides {} have {}", format_dims(shape), shape.size(),
         format_dims(strides), strides.size());
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) fail("tensor axis {} has negative size {}", i, shape[i]);
    if (strides[i] < 0) {
      fail("tensor axis {} has negative stride {}; negative strides are not supported", i,
           strides[i]);
    }
  }
  const auto element_size = static_cast<std::int64_t>(dtype_size(dtype));
  if (byte_offset < 0) fail("tensor byte offset {} is negative", byte_offset);
  if (byte_offset % element_size != 0) {
    fail("tensor byte offset {} is not a multiple of the {} element size ({} bytes)", byte_offset,
         dtype_name(dtype), element_size);
  }
  const auto buffer_size = static_cast<std::int64_t>(buffer->size());
  const auto numel = checked_numel(shape);
  if (!numel) fail("tensor shape {} has more elements than int64 can count", format_dims(shape));
  if (*numel == 0) {
    if (byte_offset > buffer_size) {
      fail("empty tensor offset {} lies past the end of its {}-byte buffer", byte_offset,
           buffer_size);
    }
    return;
  }
  const auto extent = checked_extent(shape, strides, element_size);
  std::int64_t end = 0;
  const bool overflow = !extent || __builtin_add_overflow(byte_offset, *extent, &end);
  if (overflow || end > buffer_size) {
    fail(
        "{}{} view with strides {} at offset {} addresses bytes up to {} but its buffer has {} "
        "bytes",
        dtype_name(dtype), format_dims(shape), format_dims(strides), byte_offset,
        overflow ? std::string("beyond int64") : fmt::to_string(end), buffer_size);
  }
}

void require_defined(const Tensor& tensor, std::string_view operation) {
  if (!tensor.defined()) fail("{} on an undefined (default-constructed) tensor", operation);
}

}  // namespace

Tensor::Tensor(std::shared_ptr<Buffer> buffer, DType dtype, std::vector<std::int64_t> shape,
               std::vector<std::int64_t> strides, std::int64_t byte_offset)
    : buffer_(std::move(buffer)),
      dtype_(dtype),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      byte_offset_(byte_offset) {
  validate_view(buffer_.get(), dtype_, shape_, strides_, byte_offset_);
}

Tensor Tensor::zeros(DType dtype, std::vector<std::int64_t> shape, Device device) {
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) fail("zeros: axis {} has negative size {}", i, shape[i]);
  }
  const auto numel = checked_numel(shape);
  std::int64_t bytes = 0;
  if (!numel ||
      __builtin_mul_overflow(*numel, static_cast<std::int64_t>(dtype_size(dtype)), &bytes)) {
    fail("zeros: shape {} of {} is too large to allocate", format_dims(shape), dtype_name(dtype));
  }
  auto buffer = Buffer::allocate(static_cast<std::size_t>(bytes), device);
  Dims strides = contiguous_strides(shape);
  return Tensor(std::move(buffer), dtype, std::move(shape), std::move(strides));
}

Device Tensor::device() const {
  return buffer_ ? buffer_->device() : Device::cpu();
}

std::int64_t Tensor::size(std::int64_t d) const {
  return shape_[normalize_axis(d, dim(), "size")];
}

std::int64_t Tensor::stride(std::int64_t d) const {
  return strides_[normalize_axis(d, dim(), "stride")];
}

std::int64_t Tensor::numel() const {
  std::int64_t numel = 1;
  for (const std::int64_t size : shape_) numel *= size;  // validated not to overflow
  return numel;
}

// Row-major contiguity; axes of size 1 may have any stride and an empty view is contiguous.
bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;
  std::int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

std::byte* Tensor::data() const {
  return buffer_ ? buffer_->data() + byte_offset_ : nullptr;
}

std::int64_t Tensor::first_byte() const {
  return byte_offset_;
}

std::int64_t Tensor::end_byte() const {
  if (!defined() || numel() == 0) return byte_offset_;
  const auto element_size = static_cast<std::int64_t>(dtype_size(dtype_));
  return byte_offset_ + *checked_extent(shape_, strides_, element_size);  // validated
}

// A single -1 in `shape` is inferred from the element count.
Tensor Tensor::view(std::vector<std::int64_t> shape) const {
  require_defined(*this, "view");
  if (!is_contiguous()) {
    fail("view({}) needs a contiguous tensor, got {}; view before permuting or slicing",
         format_dims(shape), describe());
  }
  std::optional<std::size_t> inferred;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && !inferred) {
      inferred = i;
    } else if (shape[i] < 0) {
      fail("view({}): invalid size {} at axis {} (only a single -1 may be inferred)",
           format_dims(shape), shape[i], i);
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      fail("view({}): too many elements", format_dims(shape));
    }
  }
  if (inferred) {
    if (known == 0 || numel() % known != 0) {
      fail("view({}): cannot infer the -1 axis for {} elements", format_dims(shape), numel());
    }
    shape[*inferred] = numel() / known;
    known = numel();
  }
  if (known != numel()) {
    fail("view({}) has {} elements but the tensor {} has {}", format_dims(shape), known, describe(),
         numel());
  }
  Dims strides = contiguous_strides(shape);
  return Tensor(buffer_, dtype_, std::move(shape), std::move(strides), byte_offset_);
}

Tensor Tensor::permute(std::span<const int> dims) const {
  require_defined(*this, "permute");
  if (static_cast<std::int64_t>(dims.size()) != dim()) {
    fail("permute got {} axes for a tensor with {}", dims.size(), dim());
  }
  std::vector<bool> seen(dims.size(), false);
  Dims shape(dims.size());
  Dims strides(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto axis = static_cast<std::size_t>(normalize_axis(dims[i], dim(), "permute"));
    if (seen[axis]) fail("permute: axis {} appears twice; pass a permutation of the axes", axis);
    seen[axis] = true;
    shape[i] = shape_[axis];
    strides[i] = strides_[axis];
  }
  return Tensor(buffer_, dtype_, std::move(shape), std::move(strides), byte_offset_);
}

Tensor Tensor::permute(std::initializer_list<int> dims) const {
  return permute(std::span<const int>(dims.begin(), dims.size()));
}

Tensor Tensor::select(std::int64_t d, std::int64_t index) const {
  require_defined(*this, "select");
  const auto axis = static_cast<std::size_t>(normalize_axis(d, dim(), "select"));
  if (index < 0 || index >= shape_[axis]) {
    fail("select: index {} is out of range for axis {} of size {} in {}", index, axis, shape_[axis],
         describe());
  }
  const auto element_size = static_cast<std::int64_t>(dtype_size(dtype_));
  const std::int64_t offset = byte_offset_ + index * strides_[axis] * element_size;
  Dims shape = shape_;
  Dims strides = strides_;
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(axis));
  return Tensor(buffer_, dtype_, std::move(shape), std::move(strides), offset);
}

Tensor Tensor::slice(std::int64_t d, std::int64_t start, std::int64_t end) const {
  require_defined(*this, "slice");
  const auto axis = static_cast<std::size_t>(normalize_axis(d, dim(), "slice"));
  if (start < 0 || start > end || end > shape_[axis]) {
    fail("slice: range [{}, {}) is not within axis {} of size {} in {}", start, end, axis,
         shape_[axis], describe());
  }
  const auto element_size = static_cast<std::int64_t>(dtype_size(dtype_));
  Dims shape = shape_;
  shape[axis] = end - start;
  return Tensor(buffer_, dtype_, std::move(shape), strides_,
                byte_offset_ + start * strides_[axis] * element_size);
}

// Follows torch.Tensor.view(dtype): same-size dtypes keep every stride; otherwise the last axis
// is rescaled and every other stride (and the offset) must be whole new elements.
Tensor Tensor::reinterpret(DType dtype) const {
  require_defined(*this, "reinterpret");
  const auto old_size = static_cast<std::int64_t>(dtype_size(dtype_));
  const auto new_size = static_cast<std::int64_t>(dtype_size(dtype));
  if (old_size == new_size) return Tensor(buffer_, dtype, shape_, strides_, byte_offset_);
  const auto where = [&] {
    return fmt::format("reinterpret {} as {}", describe(), dtype_name(dtype));
  };
  if (dim() == 0) fail("{}: a 0-d tensor can only change to a dtype of the same size", where());
  const std::size_t last = shape_.size() - 1;
  if (shape_[last] != 1 && strides_[last] != 1)
    fail("{}: the last axis is not contiguous", where());
  const std::int64_t last_bytes = shape_[last] * old_size;
  if (last_bytes % new_size != 0) {
    fail("{}: the last axis has {} bytes, not a multiple of {}", where(), last_bytes, new_size);
  }
  Dims shape = shape_;
  Dims strides = strides_;
  shape[last] = last_bytes / new_size;
  strides[last] = 1;
  for (std::size_t i = 0; i < last; ++i) {
    const std::int64_t stride_bytes = strides_[i] * old_size;
    if (stride_bytes % new_size != 0) {
      fail("{}: axis {} stride of {} bytes is not a multiple of {}", where(), i, stride_bytes,
           new_size);
    }
    strides[i] = stride_bytes / new_size;
  }
  if (byte_offset_ % new_size != 0) {
    fail("{}: byte offset {} is not a multiple of {}", where(), byte_offset_, new_size);
  }
  return Tensor(buffer_, dtype, std::move(shape), std::move(strides), byte_offset_);
}

float Tensor::get(std::initializer_list<std::int64_t> index) const {
  const std::span<const std::int64_t> coordinates(index.begin(), index.size());
  return load_as_float(dtype_, element_address(coordinates, dtype_size(dtype_)));
}

void Tensor::set(std::initializer_list<std::int64_t> index, float value) const {
  const std::span<const std::int64_t> coordinates(index.begin(), index.size());
  store_from_float(dtype_, element_address(coordinates, dtype_size(dtype_)), value);
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  std::string text = fmt::format("{}{} strides {} offset {}", dtype_name(dtype_),
                                 format_dims(shape_), format_dims(strides_), byte_offset_);
  if (!device().is_cpu()) text += " on " + device().str();
  return text;
}

std::byte* Tensor::element_address(std::span<const std::int64_t> index,
                                   std::size_t element_size) const {
  require_defined(*this, "element access");
  if (!device().is_cpu()) fail("element access on {}: only host tensors can be read", describe());
  if (element_size != dtype_size(dtype_)) {
    fail("at<T> with a {}-byte T on {} ({}-byte elements); use a T of the tensor's dtype",
         element_size, describe(), dtype_size(dtype_));
  }
  if (static_cast<std::int64_t>(index.size()) != dim()) {
    fail("index {} has {} coordinates but {} has {} axes",
         fmt::format("[{}]", fmt::join(index, ", ")), index.size(), describe(), dim());
  }
  std::int64_t offset = 0;
  for (std::size_t axis = 0; axis < index.size(); ++axis) {
    if (index[axis] < 0 || index[axis] >= shape_[axis]) {
      fail("index {} is out of range for axis {} of size {} in {}", index[axis], axis, shape_[axis],
           describe());
    }
    offset += index[axis] * strides_[axis];
  }
  return data() + offset * static_cast<std::int64_t>(element_size);
}

}  // namespace attnrt
