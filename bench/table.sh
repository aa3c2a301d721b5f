#!/usr/bin/env bash
# table.sh runs BenchmarkTable once, with -count, and prints benchstat's
# summary and the ratio table of README.md (medians, ratios to
# failsafe-go's pipelines and to each layer's reference).
#
#   bench/table.sh                       # -count 10 -benchtime 200ms
#   COUNT=20 BENCHTIME=500ms bench/table.sh
#
# The raw output stays in $OUT (default: a temporary file) for benchstat
# comparisons between branches.
set -euo pipefail
cd "$(dirname "$0")"
COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-200ms}
OUT=${OUT:-$(mktemp -t portico-bench.XXXXXX)}
go test -run '^$' -bench '^BenchmarkTable$' -benchtime="$BENCHTIME" -count="$COUNT" . | tee "$OUT" >/dev/null
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$OUT"
echo
go run ./cmd/ratios <"$OUT"
echo
echo "raw output: $OUT"
