#!/usr/bin/env bash
# Lab setup of the console suite (see compat-tests/README.md): the Kafka
# console tools pinned in pom.xml, copied by fetch.sh into
# $COMPAT_CACHE/console/kafka-<version>/libs, and kcat, the Debian package
# pinned below, installed with apt-get when it is missing (as root only).
#
# Quick when already done: fetch.sh checks its stamp, and an installed kcat
# is left alone. An installed kcat of another version is kept (run.sh
# reports the version it finds); a missing one that cannot be installed
# fails setup, since half the suite's scenarios need it.
#
# Needs java (17+) and mvn on the PATH.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# kcat 1.7.1 on librdkafka 2.0.2, as Debian 12 (bookworm) ships it.
KCAT_DEB_VERSION=1.7.1-2

command -v java >/dev/null || { echo "setup.sh: java not found (install Java 17+, e.g. apt-get install -y openjdk-17-jre-headless)" >&2; exit 1; }
libs=$(bash "$here/fetch.sh")
echo "setup.sh: Kafka console tools in $libs" >&2

if command -v kcat >/dev/null; then
	have=$(dpkg-query -W -f='${Version}' kcat 2>/dev/null || echo "not from apt")
	if [[ $have != "$KCAT_DEB_VERSION" ]]; then
		echo "setup.sh: kcat is installed ($have), not the pinned $KCAT_DEB_VERSION; keeping it" >&2
	fi
	exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
	echo "setup.sh: kcat is missing; install it as root: apt-get update && apt-get install -y kcat=$KCAT_DEB_VERSION" >&2
	exit 1
fi
echo "setup.sh: installing kcat $KCAT_DEB_VERSION with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
timeout 900 apt-get update -qq >&2
if ! timeout 900 apt-get install -y -qq "kcat=$KCAT_DEB_VERSION" >&2; then
	echo "setup.sh: apt-get install kcat=$KCAT_DEB_VERSION failed (is this Debian 12? apt-cache policy kcat lists what the sources offer)" >&2
	exit 1
fi
command -v kcat >/dev/null || { echo "setup.sh: kcat still not found after apt-get install" >&2; exit 1; }
