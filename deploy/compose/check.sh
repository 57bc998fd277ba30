#!/usr/bin/env bash
# Runs the brokers of the compose files with podman-compose (`make
# compose-check`): for compose.yaml (etcd embedded in the brokers) and
# compose.external-etcd.yaml (a three-member etcd cluster), brings up the
# three brokers (and etcd), waits for the image's health check on each,
# runs the compatibility lab's franz-go scenarios against
# localhost:19092,19093,19094, stops one broker (it must shut down
# cleanly) and takes the stack down with its volumes.
#
# Prometheus and Grafana are left out: their images come from Docker Hub,
# which these machines cannot reach. For the same reason the etcd image
# of compose.external-etcd.yaml is replaced by one built here FROM scratch
# with etcd's server from the Go module proxy, at the version Gregor
# embeds (go.mod). An override file also sets what this machine needs:
# the runc runtime (crun refuses cgroups in hybrid mode) and ulimits the
# kernel lets a container set (nofile 20000, nproc 32768).
#
# Usage: deploy/compose/check.sh [compose.yaml|compose.external-etcd.yaml ...]
# Needs podman and podman-compose (apt-get install podman-compose) and the
# image gregor:dev (make image). Uses host ports 19092-19094.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
files=("$@")
((${#files[@]})) || files=(compose.yaml compose.external-etcd.yaml)
say() { echo "compose-check: $*" >&2; }
command -v podman-compose >/dev/null || { say "podman-compose not found (apt-get install podman-compose)"; exit 1; }
podman image exists gregor:dev || { say "no image gregor:dev; run make image"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/compose-check.XXXXXX")
project=""
file=""
down() {
	[[ -n $project ]] || return 0
	(cd "$here" && podman-compose -p "$project" -f "$file" -f "$work/override.yaml" down -v >/dev/null 2>&1) || true
	podman network rm "${project}_gregor" >/dev/null 2>&1 || true
	project=""
}
trap 'down; rm -rf "$work"' EXIT

bash "$root/compat-tests/go/setup.sh" >/dev/null
gocompat=${COMPAT_CACHE:-$root/compat-tests/.cache}/go/gocompat
limits='ulimits: {nofile: 20000, nproc: 32768}'
rc=0
for file in "${files[@]}"; do
	project=gregorcheck$$
	services=(gregor-1 gregor-2 gregor-3)
	{
		echo "services:"
		for s in "${services[@]}"; do echo "  $s: {$limits}"; done
	} >"$work/override.yaml"
	if grep -q 'etcd-1:' "$here/$file"; then
		etcd_version=$(cd "$root" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
		etcd_image=localhost/gregor-check-etcd:$etcd_version
		if ! podman image exists "$etcd_image"; then
			mkdir -p "$work/etcd"
			(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$work/etcd/etcd" go.etcd.io/etcd/server/v3)
			printf 'FROM scratch\nCOPY etcd /usr/local/bin/etcd\nENV PATH=/usr/local/bin\n' >"$work/etcd/Containerfile"
			podman build -q -t "$etcd_image" "$work/etcd" >/dev/null
		fi
		for s in etcd-1 etcd-2 etcd-3; do echo "  $s: {image: \"$etcd_image\", $limits}"; done >>"$work/override.yaml"
		services=(etcd-1 etcd-2 etcd-3 "${services[@]}")
	fi
	say "$file: up ${services[*]}"
	(cd "$here" && podman-compose --podman-args '--runtime runc' -p "$project" -f "$file" -f "$work/override.yaml" \
		up -d "${services[@]}" >"$work/up.log" 2>&1) || { say "$file: up failed:"; tail -n 20 "$work/up.log" >&2; rc=1; down; continue; }

	deadline=$((SECONDS + 120))
	for n in 1 2 3; do
		until podman healthcheck run "${project}_gregor-${n}_1" >/dev/null 2>&1; do
			if ((SECONDS > deadline)); then
				say "$file: gregor-$n not healthy after 120 s:"
				podman logs "${project}_gregor-${n}_1" 2>&1 | tail -n 10 >&2
				rc=1
				break 2
			fi
			sleep 1
		done
	done
	if ((rc == 0)); then
		say "$file: three brokers healthy"
		timeout -k 10 600 "$gocompat" -client franz-go -bootstrap localhost:19092,localhost:19093,localhost:19094 \
			-prefix "compose$$" -results "$work/franz-go.tsv" 2>"$work/franz-go.log" || true
		awk -F'\t' -v f="$file" '{n++; if ($4 == "pass") p++} END {printf "compose-check: %s: franz-go: %d of %d scenarios passed\n", f, p, n}' "$work/franz-go.tsv"
		if awk -F'\t' '$4 != "pass" {print "  FAIL " $3 ": " $6; bad = 1} END {exit !bad}' "$work/franz-go.tsv"; then
			rc=1
		fi
		rm -f "$work/franz-go.tsv"
		podman stop -t 60 "${project}_gregor-1_1" >/dev/null 2>&1
		if podman logs "${project}_gregor-1_1" 2>&1 | tail -n 1 | grep -q "shut down cleanly"; then
			say "$file: gregor-1 stopped: shut down cleanly"
		else
			say "$file: gregor-1 did not shut down cleanly:"
			podman logs "${project}_gregor-1_1" 2>&1 | tail -n 5 >&2
			rc=1
		fi
	fi
	down
done
exit "$rc"
