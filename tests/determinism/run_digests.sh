#!/bin/sh
# Same input, same output: `attnrt run --json` RUNS times in a row, on a quiet machine or (with
# --load) while every processor is kept busy, must print one output digest.
# usage: run_digests.sh ATTNRT RUNS [--load] [run options...]
set -eu
attnrt=$1
runs=$2
shift 2
spinners=""
if [ "${1:-}" = "--load" ]; then
  shift
  for _ in $(seq "$(nproc)"); do
    sh -c 'while :; do :; done' &
    spinners="$spinners $!"
  done
fi
trap '[ -z "$spinners" ] || kill $spinners 2>/dev/null || true' EXIT
digests=""
for i in $(seq "$runs"); do
  digest=$("$attnrt" run --compare 0 --json "$@" | sed -n 's/.*"output_digest": *"\([0-9a-f]*\)".*/\1/p')
  [ -n "$digest" ] || { echo "run $i printed no output_digest"; exit 1; }
  echo "run $i: $digest"
  digests="$digests $digest"
done
distinct=$(echo "$digests" | tr ' ' '\n' | sed '/^$/d' | sort -u | wc -l)
if [ "$distinct" -ne 1 ]; then
  echo "$runs runs gave $distinct different digests"
  exit 1
fi
