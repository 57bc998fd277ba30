#!/usr/bin/env bash
# Copies the Apache Kafka console tools pinned in pom.xml (kafka-tools,
# kafka-clients, their runtime dependencies and an slf4j binding) into
# $COMPAT_CACHE/console/kafka-<version>/libs (COMPAT_CACHE defaults to
# compat-tests/.cache), and prints that libs directory.
#
# The copy is skipped when the cache already holds a complete copy made from
# this pom.xml (the .complete stamp records the pom's checksum). A copy is
# made in a temporary directory and renamed into place, so an interrupted
# download never looks complete.
#
# Usage: compat-tests/console/fetch.sh        (progress on stderr, libs dir on stdout)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom=$here/pom.xml
version=$(sed -nE 's|.*<kafka.version>([^<]+)</kafka.version>.*|\1|p' "$pom")
[[ -n $version ]] || { echo "fetch.sh: no <kafka.version> in $pom" >&2; exit 1; }

cache=${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}/console
dest=$cache/kafka-$version
libs=$dest/libs
sum=$(sha256sum "$pom" | cut -d' ' -f1)

if [[ -f $dest/.complete && $(cat "$dest/.complete") == "$sum" ]]; then
	echo "fetch.sh: using cached Kafka $version tools in $libs" >&2
	echo "$libs"
	exit 0
fi

command -v mvn >/dev/null || { echo "fetch.sh: mvn not found (install Maven: apt-get install -y maven)" >&2; exit 1; }

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.kafka-$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "fetch.sh: downloading Kafka $version tools with Maven into $libs" >&2
mvn -B -q -f "$pom" \
	dependency:copy-dependencies \
	-DincludeScope=runtime \
	-DoutputDirectory="$tmp/libs" >&2

for jar in kafka-tools-"$version".jar kafka-clients-"$version".jar; do
	[[ -f $tmp/libs/$jar ]] || { echo "fetch.sh: Maven did not copy $jar" >&2; exit 1; }
done
echo "$sum" >"$tmp/.complete"

rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "$libs"
