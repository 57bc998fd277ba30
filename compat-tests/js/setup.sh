#!/usr/bin/env bash
# Installs the kafkajs suite's pinned packages into $COMPAT_CACHE/js with
# npm ci. A stamp holding the lock file's checksum makes a second run with an
# unchanged lock file a no-op.
#
# kafkajs and the snappy and zstd codecs are plain JavaScript (zstd-codec is
# an Emscripten build). kafkajs-lz4 rests on lz4, whose package ships a macOS
# build of its native binding: it must be rebuilt here (node-gyp, with the
# machine's compiler and Node headers). That build runs on its own, after an
# install with --ignore-scripts, so that a machine that cannot compile it
# still gets every other codec; the suite then reports lz4 as failing, with
# the reason recorded in lz4-build-failed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
: "${COMPAT_CACHE:?COMPAT_CACHE must be set}"
dest="$COMPAT_CACHE/js"
stamp="$dest/.lock.sha256"

want="$(sha256sum "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$dest/node_modules/kafkajs" ]]; then
  exit 0
fi

mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
rm -f "$stamp" "$dest/lz4-build-failed"
(cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
if ! (cd "$dest" && npm rebuild lz4 --foreground-scripts >"$dest/lz4-build.log" 2>&1); then
  echo "lz4 native build failed, see $dest/lz4-build.log" | tee "$dest/lz4-build-failed" >&2
  exit 0 # no stamp: the next setup tries again
fi
echo "$want" > "$stamp"
