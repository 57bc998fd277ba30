#!/usr/bin/env bash
# Builds the gregor CLI of this checkout into $COMPAT_CACHE/gregor-cli/gregor.
# The Go build cache makes a rebuild of an unchanged tree quick, so it runs
# every time: the suite always tests the CLI of the tree it belongs to.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
: "${COMPAT_CACHE:?COMPAT_CACHE must be set}"
mkdir -p "$COMPAT_CACHE/gregor-cli"
cd "$root"
go build -o "$COMPAT_CACHE/gregor-cli/gregor" ./cmd/gregor
