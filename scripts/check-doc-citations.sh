#!/usr/bin/env bash
# Checks that every section the tree cites exists: a "SEMANTICS" citation needs a heading in
# docs/semantics.md ("## 4. ..." for a section, "### 4.3 ..." for a subsection), a "DESIGN" or
# "DESIGN.md" citation a heading "## 2. ..." in docs/design.md.
#
# What counts as a citation (the section sign is written below as $SECT):
#   - a prefix SEMANTICS, SEMANTICS.md, DESIGN or DESIGN.md, a space, then $SECT and a number,
#     and the list that follows it on the line: ", $SECT 3.5", "–$SECT 7.4" or "-7.4" (a range:
#     both ends are checked), " and $SECT 8.6", "/$SECT 3.5";
#   - a bare $SECT number anywhere else: in docs/design.md it cites docs/design.md, in every
#     other file docs/semantics.md (the code cites SEMANTICS sections by number alone).
# Scanned: include/ src/ tools/ tests/ fuzz/ bench/ scripts/ docs/ and README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

SECT=$'\xc2\xa7'  # the section sign, as UTF-8 bytes
semantics=docs/semantics.md
design=docs/design.md

headings() {  # FILE → one section id per line ("4", "4.3")
  [[ -f "$1" ]] || return 0
  sed -nE -e 's/^## ([0-9]+)\. .*/\1/p' -e 's/^### ([0-9]+\.[0-9]+) .*/\1/p' \
    -e 's/^#### ([0-9]+\.[0-9]+\.[0-9]+) .*/\1/p' "$1"
}

roots=()
for root in include src tools tests fuzz bench scripts docs README.md; do
  [[ -e "$root" ]] && roots+=("$root")
done

mapfile -t files < <(grep -rlI -- "$SECT" "${roots[@]}" 2>/dev/null | sort)
if (( ${#files[@]} == 0 )); then
  echo "check-doc-citations: 0 citations, all resolve"
  exit 0
fi

awk -v sect="$SECT" -v semantics="$semantics" -v design="$design" \
    -v sem_ids="$(headings "$semantics" | tr '\n' ' ')" \
    -v des_ids="$(headings "$design" | tr '\n' ' ')" '
BEGIN {
  n = split(sem_ids, a, " "); for (i = 1; i <= n; i++) have["SEMANTICS", a[i]] = 1
  n = split(des_ids, a, " "); for (i = 1; i <= n; i++) have["DESIGN", a[i]] = 1
  doc["SEMANTICS"] = semantics; doc["DESIGN"] = design
  dash = "\342\200\223"                       # en dash
  num = "[0-9]+(\\.[0-9]+)*"
  token = "SEMANTICS|DESIGN|" sect num "|(" dash "|-)" num
  total = 0; bad = 0
}
FNR == 1 { chain = ""; file_default = (FILENAME == design) ? "DESIGN" : "SEMANTICS" }
{
  s = $0; chain = ""; prev_end = 0; pos = 0; last_was_ref = 0
  while (match(s, token)) {
    tok = substr(s, RSTART, RLENGTH)
    gap = substr(s, 1, RSTART - 1)
    pos += RSTART + RLENGTH - 1
    s = substr(s, RSTART + RLENGTH)
    if (tok == "SEMANTICS" || tok == "DESIGN") {
      chain = tok; wait_first = 1; last_was_ref = 0
      continue
    }
    if (substr(tok, 1, length(sect)) == sect) {
      id = substr(tok, length(sect) + 1)
      if (chain != "" && wait_first && gap ~ /^(\.md)? *$/) {
        target = chain; wait_first = 0
      } else if (chain != "" && !wait_first && last_was_ref && is_separator(gap)) {
        target = chain
      } else {
        chain = ""; target = file_default
      }
      check(target, id); last_was_ref = 1
      continue
    }
    # "-7.4" or "–7.4" right after a reference closes a range; anything else is not a citation.
    if (last_was_ref && gap == "") {
      id = tok; sub("^(" dash "|-)", "", id)
      check(target, id)
    } else {
      last_was_ref = 0; chain = ""
    }
  }
}
function is_separator(text) {
  gsub(dash, " ", text)
  return text ~ /^[ ,\/;&-]*((and|or|to)[ ,]*)?$/
}
function check(which, id) {
  total++
  if (!((which, id) in have)) {
    bad++
    level = (id ~ /\./) ? "### " id " " : "## " id "."
    printf "%s:%d: %s %s%s has no heading \"%s\" in %s\n", FILENAME, FNR, which, sect, id, level, doc[which]
  }
}
END {
  if (bad > 0) {
    printf "check-doc-citations: %d of %d citations do not resolve\n", bad, total
    exit 1
  }
  printf "check-doc-citations: %d citations, all resolve\n", total
}
' "${files[@]}"
