#!/usr/bin/env bash
# Builds the Go clients' suite (franz-go, Sarama, segmentio/kafka-go, pinned
# exactly in go.mod and go.sum) into $COMPAT_CACHE/go/gocompat. A stamp of
# the sources' checksum skips the build when nothing changed since the last
# one. Needs go (the version go.mod names) and the Go module proxy.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}/go
bin=$cache/gocompat
mkdir -p "$cache"
cd "$here"

sum=$( (go version; find . -name '*.go' -o -name '*.tsv' -o -name go.mod -o -name go.sum | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -d' ' -f1)
if [[ -x $bin && -f $cache/stamp && $(cat "$cache/stamp") == "$sum" ]]; then
	echo "go: $bin is up to date"
	exit 0
fi
# -mod=readonly: build exactly what go.mod and go.sum pin, never update them.
GOFLAGS="${GOFLAGS:-} -mod=readonly" go build -trimpath -o "$bin.tmp" .
mv "$bin.tmp" "$bin"
echo "$sum" >"$cache/stamp"
echo "go: built $bin ($("$bin" -client franz-go -list | head -n 1) franz-go, $("$bin" -client sarama -list | head -n 1) sarama, $("$bin" -client kafka-go -list | head -n 1) kafka-go)"
