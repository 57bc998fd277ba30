#!/usr/bin/env bash
# Builds the java-clients suite (see pom.xml) into
# $COMPAT_CACHE/java-clients/build: java-clients.jar plus libs/ with
# kafka-clients and its runtime dependencies from Maven Central (through the
# default ~/.m2 repository).
#
# The build is skipped when build/.complete holds the checksum of the pom,
# the sources and this script, so a second run costs a checksum. A build goes
# to a temporary directory renamed into place, so an interrupted one never
# looks complete.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}/java-clients
dest=$cache/build

sum=$(cd "$here" && { echo pom.xml; echo setup.sh; find src -type f | LC_ALL=C sort; } |
	xargs sha256sum | sha256sum | cut -d' ' -f1)
if [[ -f $dest/.complete && $(cat "$dest/.complete") == "$sum" ]]; then
	echo "java-clients: build in $dest is up to date"
	exit 0
fi

for tool in mvn java; do
	command -v "$tool" >/dev/null || { echo "java-clients: $tool not found (apt-get install -y maven openjdk-17-jdk-headless)" >&2; exit 1; }
done

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "java-clients: building with Maven into $dest"
mvn -B -q -Dstyle.color=never -f "$here/pom.xml" -Dsuite.build.dir="$tmp" package
for f in java-clients.jar libs/kafka-clients-4.4.0.jar libs/slf4j-simple-2.0.17.jar; do
	[[ -f $tmp/$f ]] || { echo "java-clients: the build made no $f" >&2; exit 1; }
done
echo "$sum" >"$tmp/.complete"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "java-clients: built $dest"
