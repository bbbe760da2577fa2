#!/usr/bin/env bash
# Checks that libattnrt.so exports the API and none of its insides (docs/design.md §2): the library
# compiles with hidden visibility and include/attnrt/ marks the API ATTNRT_API, so no symbol of
# attnrt::detail, CPU_FLASH's kernels (attnrt::cpu_flash and Highway's per-target namespaces in
# it), the classes' Impl (src/core/hidden.h), an anonymous namespace, or fmt, nlohmann or Highway
# code instantiated inside may be exported. A function of the API whose parameters name
# nlohmann::json is fine.
# Usage: scripts/check-exports.sh path/to/libattnrt.so
set -euo pipefail
library=${1:?usage: check-exports.sh path/to/libattnrt.so}
symbols=$(nm -D --defined-only -C "$library" | cut -d' ' -f3-)
# The symbol's own scope: after "typeinfo for", "vtable for" and the like, and after the return
# type that function template names start with.
owner='^((typeinfo( name)?|vtable|VTT|guard variable|construction vtable) for |non-virtual thunk to )?([^ (]+ )?'
leaks=$(grep -E -e 'attnrt::(detail|cpu_flash)::|attnrt::[A-Za-z]+::Impl::|\(anonymous namespace\)' \
                -e "${owner}(fmt|nlohmann|hwy)::" <<<"$symbols" || true)
if [[ -n "$leaks" ]]; then
  echo "check-exports: $library exports $(wc -l <<<"$leaks") internal symbols, e.g.:" >&2
  head -20 <<<"$leaks" >&2
  echo "check-exports: mark only the API ATTNRT_API (attnrt/core/export.h)" >&2
  exit 1
fi
echo "check-exports: $(wc -l <<<"$symbols") symbols exported, none internal"
