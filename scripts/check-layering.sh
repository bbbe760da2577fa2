#!/usr/bin/env bash
# Checks design.md §2: a layer includes only itself and the layers above it in the list
# core < config < kv < attention < backends < runner < engine < tools.
set -euo pipefail
cd "$(dirname "$0")/.."
layers=(core config kv attention backends runner engine)
rank() {
  local i
  for i in "${!layers[@]}"; do [[ "${layers[$i]}" == "$1" ]] && { echo "$i"; return; }; done
  echo 99
}
status=0
while IFS= read -r file; do
  layer=$(echo "$file" | sed -E 's#^(include/attnrt|src)/([a-z_]+)/.*#\2#')
  own=$(rank "$layer")
  while IFS= read -r used; do
    if (( $(rank "$used") > own )); then
      echo "layering: $file ($layer) includes attnrt/$used/"
      status=1
    fi
  done < <(grep -oE '#include "attnrt/[a-z_]+/' "$file" | sed -E 's#.*attnrt/([a-z_]+)/#\1#' | sort -u)
done < <(find include/attnrt src -name '*.h' -o -name '*.cc' | sort)
# The public headers are what an embedder compiles: they include no fmt, no more of nlohmann's
# JSON than its forward declarations (nlohmann/json_fwd.hpp), and no src/ header.
while IFS= read -r hit; do
  echo "public header: $hit (fmt, nlohmann/json.hpp and internal headers belong in src/)"
  status=1
done < <(grep -rnE '#include (<fmt/|<nlohmann/json\.hpp>|"core/fail\.h"|"(engine|backends|config|kv|runner|attention|core)/)' include/attnrt || true)
exit $status
