#!/usr/bin/env bash
# Builds the kafka-streams suite (the driver and its pinned Kafka Streams
# 4.4.0, kafka-clients 4.4.0, slf4j-simple) with Maven into
# $COMPAT_CACHE/kafka-streams/build: the driver's jar and lib/ with every
# runtime jar. Maven's own repository is $COMPAT_CACHE/kafka-streams/m2.
#
# Skipped when the build is already there for the same pom.xml, deps.lock,
# sources and this script (the .complete stamp holds their checksum). A
# build is made in a temporary directory and renamed into place, so an
# interrupted one never looks complete.
#
# deps.lock lists the sha256 of each runtime jar; a build whose jars differ
# from it fails. After a deliberate version change, UPDATE_LOCK=1 ./setup.sh
# rewrites it (review the diff before committing).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# By hand, COMPAT_CACHE defaults to the lab's cache dir, compat-tests/.cache.
COMPAT_CACHE=${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}
cache=$COMPAT_CACHE/kafka-streams
dest=$cache/build

sum=$(cd "$here" && find pom.xml deps.lock setup.sh src -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [[ -f $dest/.complete && $(cat "$dest/.complete") == "$sum" ]]; then
	echo "kafka-streams setup: build up to date in $dest" >&2
	exit 0
fi

command -v mvn >/dev/null || { echo "kafka-streams setup: mvn not found (apt-get install -y maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "kafka-streams setup: java not found (Java 17+)" >&2; exit 1; }

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "kafka-streams setup: building with Maven into $dest" >&2
mvn -B -q -Dstyle.color=never -f "$here/pom.xml" \
	-Dmaven.repo.local="$cache/m2" \
	-Dcompat.build.dir="$tmp/target" \
	package dependency:copy-dependencies \
	-DincludeScope=runtime \
	-DoutputDirectory="$tmp/lib" >&2
mv "$tmp/target/kafka-streams-compat-0.jar" "$tmp/kafka-streams-compat.jar"
rm -rf "$tmp/target"

locked=$(cd "$tmp/lib" && sha256sum -- *.jar)
if [[ ${UPDATE_LOCK:-} == 1 ]]; then
	printf '%s\n' "$locked" >"$here/deps.lock"
	echo "kafka-streams setup: wrote $here/deps.lock" >&2
	# The stamp covers deps.lock, which just changed.
	sum=$(cd "$here" && find pom.xml deps.lock setup.sh src -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
elif ! diff <(cat "$here/deps.lock") <(printf '%s\n' "$locked") >&2; then
	echo "kafka-streams setup: runtime jars differ from deps.lock (above: < locked, > built)" >&2
	exit 1
fi

echo "$sum" >"$tmp/.complete"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "kafka-streams setup: done" >&2
