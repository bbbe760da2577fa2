// Input checks of CPU_FLASH, the same as CPU_REFERENCE's: a call either runs on valid inputs or
// throws before writing anything, naming the token, request or array at fault.

#include "flash_checks.h"

#include "../cpu_backend_checks.h"
#include "core/fail.h"

namespace attnrt::cpu_flash {
namespace {

bool is_cross(const AttentionShape& shape) {
  return shape.type == AttentionType::cross;
}

}  // namespace

CacheView make_cache_view(const Tensor& view, const AttentionShape& shape,
                          std::string_view kernel) {
  CacheView cache;
  const bool mla = shape.type == AttentionType::mla;
  cache.key_size = shape.head_size;
  cache.value_offset = mla ? 0 : shape.head_size;  // MLA: the latent's first entries
  cache.value_size = shape.head_size_v;
  const int stored = std::max(cache.key_size, cache.value_offset + cache.value_size);
  backend_checks::check_cache_view("CPU_FLASH", kernel, view, shape, stored,
                                   /*contiguous_content=*/true);
  cache.base = view.data();
  cache.dtype = view.dtype();
  cache.element_size = static_cast<int>(dtype_size(cache.dtype));
  cache.num_kernel_blocks = view.size(0);
  cache.kernel_block_size = static_cast<int>(view.size(2));
  cache.block_stride = view.stride(0) * cache.element_size;
  cache.head_stride = view.stride(1) * cache.element_size;
  cache.state_stride = view.stride(2) * cache.element_size;
  return cache;
}

void check_forward(const AttentionForwardArgs& args, const CacheView& cache) {
  backend_checks::check_forward_shape("CPU_FLASH", args, cache.key_size, cache.value_size);
  backend_checks::check_step_arrays("CPU_FLASH", args.metadata.common, is_cross(args.shape));
}

int read_and_check_requests(const AttentionForwardArgs& args, const CacheView& cache,
                            std::span<Request> requests) {
  const CommonAttentionMetadata& common = args.metadata.common;
  read_requests(common, args.shape, requests);
  for (int r = 0; r < common.num_reqs; ++r) {
    const Request& request = requests[r];
    backend_checks::check_request("CPU_FLASH", args.shape, common, r,
                                  {request.query_start, request.query_len, request.kv_len},
                                  {cache.num_kernel_blocks, cache.kernel_block_size, cache.dtype});
  }
  const int num_tokens = common.query_start_loc[common.num_reqs];
  if (num_tokens > args.query.num_tokens || num_tokens > args.output.num_tokens) {
    fail("CPU_FLASH forward: the batch has {} query tokens but {} query and {} output rows",
         num_tokens, args.query.num_tokens, args.output.num_tokens);
  }
  return num_tokens;
}

void check_write(const KVWriteArgs& args, const CacheView& cache) {
  backend_checks::check_write("CPU_FLASH", args, cache.key_size, cache.value_size,
                              {cache.num_kernel_blocks, cache.kernel_block_size, cache.dtype});
}

}  // namespace attnrt::cpu_flash
