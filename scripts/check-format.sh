#!/usr/bin/env bash
# Checks that every C++ file of the repository is formatted as .clang-format says (clang-format 14,
# Debian 12's). Prints the files that are not, and how to fix them; exits 1 if any.
set -euo pipefail
cd "$(dirname "$0")/.."
format=$(command -v clang-format-14 || command -v clang-format || true)
[[ -n "$format" ]] || { echo "check-format: clang-format-14 is not installed (scripts/install-deps.sh)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.h' '*.cc')
unformatted=()
for file in "${files[@]}"; do
  "$format" --dry-run -Werror "$file" >/dev/null 2>&1 || unformatted+=("$file")
done
if (( ${#unformatted[@]} > 0 )); then
  printf 'check-format: not formatted: %s\n' "${unformatted[@]}" >&2
  echo "check-format: run: git ls-files '*.h' '*.cc' | xargs $format -i" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
