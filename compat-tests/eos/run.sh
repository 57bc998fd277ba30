#!/usr/bin/env bash
# make eos-test: the exactly-once harness (compat-tests/go/cmd/eos, whose
# package doc says what it does): a transactional consume-transform-produce
# pipeline (franz-go's GroupTransactSession) over EOS_BROKERS gregor serve
# processes (1 or 3, default 3) on 127.0.0.1 while brokers are killed -9
# under it; the output must hold each input exactly once.
#
# Settings (environment): EOS_BROKERS, EOS_RECORDS (default 20000),
# EOS_KILLS (default 6), EOS_KILL_EVERY (default 6s), EOS_ABORT_RATE (share of
# transactions aborted on purpose, default 0.1), EOS_SEED, EOS_KEEP=1
# (keep the run directory), GREGOR_BIN (default bin/gregor).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${GREGOR_BIN:-$root/bin/gregor}
[[ -x $bin ]] || { echo "eos: $bin not found; run make build" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gregor-eos.XXXXXX")
cleanup() {
	rc=$?
	if [[ -f $work/pgids ]]; then
		while read -r pg; do
			[[ -n $pg ]] && kill -KILL -- "-$pg" 2>/dev/null || true
		done <"$work/pgids"
	fi
	if [[ $rc == 0 && ${EOS_KEEP:-0} != 1 ]]; then
		rm -rf "$work"
	else
		echo "eos: logs and data kept in $work (broker-N.log)" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$root/compat-tests/go" && go build -o "$work/eos" ./cmd/eos)
"$work/eos" -gregor "$bin" -dir "$work" -brokers "${EOS_BROKERS:-3}" -records "${EOS_RECORDS:-20000}" \
	-kills "${EOS_KILLS:-6}" -kill-every "${EOS_KILL_EVERY:-6s}" -abort-rate "${EOS_ABORT_RATE:-0.1}" -seed "${EOS_SEED:-0}"
