#!/usr/bin/env bash
# Installs the python suite's pinned client libraries (requirements.txt) into
# a venv at $COMPAT_CACHE/python/venv. A stamp holding the checksum of
# requirements.txt makes a second run with unchanged pins a no-op; the venv is
# built under a temporary name and renamed into place, so an interrupted
# install never looks complete.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
: "${COMPAT_CACHE:?COMPAT_CACHE must be set}"
dest="$COMPAT_CACHE/python"
venv="$dest/venv"
stamp="$dest/requirements.sha256"
python="${PYTHON:-python3}"

want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/python" ]]; then
  exit 0
fi

mkdir -p "$dest"
rm -f "$stamp"
tmp="$(mktemp -d "$dest/.venv.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# A venv's console scripts (bin/pip) name the path it was built at, but its
# bin/python does not, and run.sh only ever runs bin/python: so the venv can be
# built in a temp dir and renamed into place once it is complete.
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --no-input --only-binary=:all: -r "$here/requirements.txt"
"$tmp/venv/bin/python" -m pip check
# Every codec kafka-python can use must be importable, or the codec scenarios
# would fail for a reason that has nothing to do with the broker.
"$tmp/venv/bin/python" -c '
import kafka.codec as c
missing = [n for n, ok in [("snappy", c.has_snappy()), ("lz4", c.has_lz4()), ("zstd", c.has_zstd())] if not ok]
assert not missing, "kafka-python cannot use codecs: %s" % missing
import confluent_kafka
'
rm -rf "$venv"
mv "$tmp/venv" "$venv"
echo "$want" > "$stamp"
