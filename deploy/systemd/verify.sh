#!/usr/bin/env bash
# Checks deploy/systemd/gregor.service with `systemd-analyze verify`, and
# prints `systemd-analyze security` for it. The unit runs
# /usr/local/bin/gregor, which need not exist here: a copy of the unit in a
# temp dir runs the gregor given instead (default bin/gregor), so that
# verify checks the rest. Needs systemd-analyze (Debian: systemd); the
# gregor user need not exist.
#
# Usage: deploy/systemd/verify.sh [BIN]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(realpath "${1:-$root/bin/gregor}")
[[ -x $bin ]] || { echo "verify.sh: $bin not found; run make build" >&2; exit 1; }
command -v systemd-analyze >/dev/null || { echo "verify.sh: systemd-analyze not found (apt-get install systemd)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gregor-unit.XXXXXX")
trap 'rm -rf "$work"' EXIT
sed "s|/usr/local/bin/gregor|$bin|" "$root/deploy/systemd/gregor.service" >"$work/gregor.service"

# verify prints warnings and errors only; any output is a problem.
out=$(systemd-analyze verify "$work/gregor.service" 2>&1) || { echo "$out" >&2; echo "verify.sh: systemd-analyze verify failed" >&2; exit 1; }
if [[ -n $out ]]; then
	echo "$out" >&2
	echo "verify.sh: systemd-analyze verify complained" >&2
	exit 1
fi
echo "systemd-analyze verify gregor.service: ok"
if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
	systemd-analyze security --offline=true --no-pager "$work/gregor.service" | tail -n 1
fi
