#!/usr/bin/env bash
# Checks the image `make image` built (`make image-check`): prints its size,
# user, volume, ports and health check, runs a broker from it, waits for
# the image's own HEALTHCHECK to pass, runs the compatibility lab's
# franz-go scenarios (compat-tests/go) against it, stops it (a clean
# shutdown within 60 s) and removes it.
#
# Usage: deploy/image/check.sh [IMAGE]   (default gregor:dev)
#
# The broker listens on the same free port inside and outside the
# container, published on 127.0.0.1, because a broker dials its own
# advertised address (transaction markers, KIP-890 verification): a port
# published under another number would not reach it from inside.
#
# Environment: CONTAINER_ENGINE (default podman); ENGINE_ARGS, its global
# flags (default --runtime runc: on this project's machines crun refuses
# cgroups in hybrid mode); RUN_ARGS, extra `run` flags (default: ulimits
# the kernel here lets a container set, nofile 20000 and nproc 32768;
# podman's defaults, 1048576 and 4194304, are refused).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
image=${1:-gregor:dev}
engine=${CONTAINER_ENGINE:-podman}
engine_args=${ENGINE_ARGS---runtime runc}
run_args=${RUN_ARGS---ulimit nofile=20000:20000 --ulimit nproc=32768:32768}
name=gregor-image-check-$$
say() { echo "image-check: $*" >&2; }

"$engine" image inspect "$image" >/dev/null || { say "no image $image; run make image"; exit 1; }
"$engine" image inspect "$image" --format 'size {{.Size}} bytes; user {{.Config.User}}; volumes {{.Config.Volumes}}; ports {{.Config.ExposedPorts}}; entrypoint {{.Config.Entrypoint}} {{.Config.Cmd}}; healthcheck {{.Config.Healthcheck.Test}} every {{.Config.Healthcheck.Interval}}'

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
work=$(mktemp -d "${TMPDIR:-/tmp}/image-check.XXXXXX")
cleanup() {
	"$engine" rm -f -v "$name" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# shellcheck disable=SC2086 # engine_args and run_args are lists of flags.
"$engine" $engine_args run $run_args -d --name "$name" -p "127.0.0.1:$port:$port" \
	-e GREGOR_LISTENERS="PLAINTEXT://0.0.0.0:$port" \
	-e GREGOR_ADVERTISED_LISTENERS="PLAINTEXT://127.0.0.1:$port" \
	-e GREGOR_GROUP_INITIAL_REBALANCE_DELAY_MS=0 \
	"$image" >/dev/null
say "broker $name on 127.0.0.1:$port"

deadline=$((SECONDS + 60))
until "$engine" healthcheck run "$name" >/dev/null 2>&1; do
	((SECONDS < deadline)) || { say "the image's health check did not pass within 60 s"; "$engine" logs "$name" 2>&1 | tail -n 20 >&2; exit 1; }
	sleep 1
done
say "health check passed (gregor health on /readyz inside the container)"

bash "$root/compat-tests/go/setup.sh" >/dev/null
gocompat=${COMPAT_CACHE:-$root/compat-tests/.cache}/go/gocompat
timeout -k 10 600 "$gocompat" -client franz-go -bootstrap "127.0.0.1:$port" -prefix "image$$" \
	-results "$work/franz-go.tsv" 2>"$work/franz-go.log" || true
awk -F'\t' '{n++; if ($4 == "pass") p++} END {printf "image-check: franz-go: %d of %d scenarios passed\n", p, n}' "$work/franz-go.tsv"
awk -F'\t' '$4 != "pass" {print "  FAIL " $3 ": " $6}' "$work/franz-go.tsv"

"$engine" stop -t 60 "$name" >/dev/null
if ! "$engine" logs "$name" 2>&1 | tail -n 1 | grep -q "shut down cleanly"; then
	say "the broker did not shut down cleanly:"
	"$engine" logs "$name" 2>&1 | tail -n 5 >&2
	exit 1
fi
say "stopped: shut down cleanly, exit status $("$engine" inspect --format '{{.State.ExitCode}}' "$name")"
! awk -F'\t' '$4 != "pass"' "$work/franz-go.tsv" | grep -q .
