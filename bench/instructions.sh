#!/usr/bin/env bash
# instructions.sh counts the instructions one iteration of a benchmark
# runs, with valgrind's callgrind: the difference of a 20,000-iteration
# and a 120,000-iteration run, so that start-up does not count. Unlike
# ns/op it does not move with the host's load; it leaves out the garbage
# collector (GOGC=off) and so its write barriers, and it does not see
# stalls (a store that does not forward, a cache miss).
#
#   go test -c -o /tmp/hedge.test ./hedge/
#   bench/instructions.sh /tmp/hedge.test 'Raced$'
#
# Needs valgrind (apt-get install valgrind). Go's asynchronous preemption
# signals crash callgrind, hence asyncpreemptoff.
set -euo pipefail
bin=$1
bench=$2
count() {
	GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$bin" -test.run '^$' -test.bench "$bench" -test.benchtime="$1"x 2>&1 |
		awk '/refs:/ {gsub(",", "", $4); print $4}'
}
a=$(count 20000)
b=$(count 120000)
echo "$bench: $(((b - a) / 100000)) instructions per iteration"
