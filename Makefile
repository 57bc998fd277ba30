# Gregor's build, test and lint entry points. `make help` lists the targets.
#
# GOFLAGS from the environment (or `go env -w`) apply to every go command here,
# as usual, and are not overridden; set them for one run with e.g.
# `make test GOFLAGS=-v`. Flags that only some commands should get (-race,
# -fuzz, -bench) are passed to those commands explicitly.

SHELL := bash
.DEFAULT_GOAL := build

GO ?= go

# Where `go install` puts tools: $GOBIN, else the first GOPATH entry's bin/.
GOBIN ?= $(shell $(GO) env GOBIN)
ifeq ($(strip $(GOBIN)),)
GOBIN := $(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin
endif

GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(GOBIN)/golangci-lint
BENCHSTAT := $(GOBIN)/benchstat

# `make run` settings.
DATA_DIR ?= ./data
LISTENERS ?= PLAINTEXT://localhost:9092

FUZZTIME ?= 30s
BENCHCOUNT ?= 5
TEST_TIMEOUT ?= 20m

# -race needs cgo, which Go turns off when no C compiler is installed; then the
# tests run without it and say so.
RACE ?= $(if $(filter 1,$(shell $(GO) env CGO_ENABLED)),-race)

.PHONY: help build run cluster test vet lint fmt fuzz bench gobench clean golangci-lint

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  \1\t/' | expand -t 16

build: ## Compile every package, and bin/gregor once cmd/gregor exists.
	$(GO) build ./...
	@if [ -d cmd/gregor ]; then \
		echo "$(GO) build -o bin/gregor ./cmd/gregor"; \
		$(GO) build -o bin/gregor ./cmd/gregor; \
	fi

run: ## Run a single-node broker on localhost:9092 with its data in ./data (Ctrl-C stops it cleanly).
	$(GO) build -o bin/gregor ./cmd/gregor && ./bin/gregor serve --log.dirs $(DATA_DIR) --listeners $(LISTENERS)

cluster: ## Run three brokers on localhost:9092-9094 (data in ./data/1..3), etcd embedded in all three (Ctrl-C stops them).
	$(GO) build -o bin/gregor ./cmd/gregor && DATA_DIR=$(DATA_DIR) bash deploy/local/cluster.sh bin/gregor

test: ## go vet, the unit tests with -race, the tests of the Kubernetes manifests and compose files (deploy/, a module of its own), then lint.
	$(GO) vet ./...
	@if [ -z "$(RACE)" ]; then echo "warning: cgo is off (no C compiler?), so the tests run WITHOUT -race" >&2; fi
	$(GO) test $(RACE) -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '^(TestConnectionLoad|TestHostileRSS|TestSASLFloodRSS)$$' ./broker/
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 ./...
	@$(MAKE) --no-print-directory lint

vet: ## go vet only.
	$(GO) vet ./...

lint: golangci-lint ## golangci-lint with .golangci.yml (installs the pinned version).
	$(GOLANGCI_LINT) run ./...

fmt: golangci-lint ## Rewrite files with gofmt and goimports, as lint checks them.
	$(GOLANGCI_LINT) fmt ./...

# Installs golangci-lint $(GOLANGCI_LINT_VERSION) into $(GOBIN) unless that
# version, built with the Go in use, is already there (golangci-lint refuses
# modules that need a newer Go than it was built with).
golangci-lint:
	@want="has version $(GOLANGCI_LINT_VERSION:v%=%) built with $$($(GO) env GOVERSION) "; \
	if ! "$(GOLANGCI_LINT)" version 2>/dev/null | grep -qF "$$want"; then \
		echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into $(GOBIN) (takes a few minutes once)"; \
		rm -f "$(GOLANGCI_LINT)"; \
		GOBIN="$(GOBIN)" $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); \
	fi

fuzz: ## Run every Fuzz target for FUZZTIME (default 30s), one at a time.
	@set -eo pipefail; found=0; failed=(); \
	for dir in $$($(GO) list -f '{{.Dir}}' ./...); do \
		pkg=".$${dir#"$(CURDIR)"}"; \
		for name in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*\*testing\.F\).*/\1/p' "$$dir"/*_test.go 2>/dev/null); do \
			found=$$((found + 1)); \
			echo "$(GO) test -run='^\$$' -fuzz='^$$name\$$' -fuzztime=$(FUZZTIME) $$pkg"; \
			$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) "$$pkg" || failed+=("$$pkg $$name"); \
		done; \
	done; \
	echo "fuzz: ran $$found target(s), $${#failed[@]} failed"; \
	for f in "$${failed[@]}"; do echo "  FAILED $$f"; done; \
	[ $${#failed[@]} -eq 0 ]

bench: ## Gregor vs Apache Kafka 4.x side by side (compat-tests/bench/run.sh; BENCH_RUNS, BENCH_DURATION, ...); writes compat-tests/bench/RESULTS.md.
	bash compat-tests/bench/run.sh

gobench: ## Go benchmarks (BENCHCOUNT runs, default 5) into bench.out, then a benchstat summary.
	@set -eo pipefail; pkgs=(); \
	for dir in $$($(GO) list -f '{{.Dir}}' ./...); do \
		if grep -qE '^func Benchmark[A-Za-z0-9_]*\(' "$$dir"/*_test.go 2>/dev/null; then pkgs+=(".$${dir#"$(CURDIR)"}"); fi; \
	done; \
	if [ $${#pkgs[@]} -eq 0 ]; then echo "bench: no benchmarks found"; exit 0; fi; \
	echo "$(GO) test -run='^\$$' -bench=. -benchmem -count=$(BENCHCOUNT) $${pkgs[*]} | tee bench.out"; \
	$(GO) test -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT) "$${pkgs[@]}" | tee bench.out; \
	if [ ! -x "$(BENCHSTAT)" ]; then \
		echo "installing benchstat into $(GOBIN)"; \
		GOBIN="$(GOBIN)" $(GO) install golang.org/x/perf/cmd/benchstat@latest || true; \
	fi; \
	if [ -x "$(BENCHSTAT)" ]; then \
		echo; echo "benchstat bench.out (medians):"; "$(BENCHSTAT)" bench.out; \
	else \
		echo "bench: benchstat unavailable; raw results are in bench.out"; \
	fi

.PHONY: crash-test
CRASH_CYCLES ?= 100
crash-test: ## kill -9 a child broker under idempotent acks=all load, partitions moving between its two log dirs, CRASH_CYCLES times (default 100); checks every acknowledged record.
	GREGOR_CRASH_CYCLES=$(CRASH_CYCLES) $(GO) test -count=1 -timeout 60m -run '^TestBrokerCrash$$' -v ./broker/

.PHONY: failover-test
FAILOVER_CYCLES ?= 50
failover-test: build ## kill -9 a partition leader of three brokers FAILOVER_CYCLES times (default 50) under kgo and Java acks=all writers; checks every acknowledged record.
	cd compat-tests/go && $(GO) test -count=1 ./internal/lab/ ./cmd/failover/
	FAILOVER_CYCLES=$(FAILOVER_CYCLES) bash compat-tests/failover/run.sh

.PHONY: eos-test
eos-test: build ## Exactly once under kill -9: a transactional consume-transform-produce pipeline over EOS_BROKERS (default 3) brokers killed EOS_KILLS times (default 6); the output must hold each input once.
	bash compat-tests/eos/run.sh

.PHONY: reassign-test
reassign-test: build ## Grow 3 brokers to 4 (gregor cluster rebalance) and retire broker 1 (gregor cluster decommission) under a checked acks=all load; REASSIGN_BYTES (default 1 GiB) moved, REASSIGN_KILL=controller|receiver kills a broker mid-move.
	bash compat-tests/reassign/run.sh

.PHONY: authz-matrix
authz-matrix: ## Authorization matrix: each API Kafka checks ACLs on, as a SASL/PLAIN user without and with the ACLs it needs, against Gregor and then Apache Kafka 4.4 (StandardAuthorizer); fails on a difference not in compat-tests/authz/known-differences.tsv (AUTHZ_TARGETS=gregor|kafka reruns one side).
	bash compat-tests/authz/run.sh

.PHONY: chaos chaos-broken chaos-summary
CHAOS_DURATION ?= 10m
CHAOS_CYCLES ?= 0
CHAOS_NEMESES ?= all
CHAOS_TARGET ?= gregor
CHAOS_ETCD ?= embedded
chaos: build ## Fault harness: three brokers in network namespaces under crashes, pauses, partitions, slow links and a full disk for CHAOS_DURATION (default 10m; CHAOS_CYCLES=N runs N cycles instead; CHAOS_NEMESES picks them; CHAOS_TARGET=kafka: the same against Apache Kafka 4.4; CHAOS_ETCD=external: etcd members apart from the brokers, with the kill-etcd nemesis).
	cd compat-tests/go && $(GO) test -count=1 ./internal/lab/ ./cmd/chaos/
	CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_CYCLES=$(CHAOS_CYCLES) CHAOS_NEMESES=$(CHAOS_NEMESES) CHAOS_TARGET=$(CHAOS_TARGET) CHAOS_ETCD=$(CHAOS_ETCD) bash compat-tests/chaos/run.sh

chaos-broken: ## The checker is not blind: make chaos against a broker built to acknowledge before its followers have a record (tag chaos_unsafe_hw), CHAOS_NEMESES (default partition-minority) for CHAOS_CYCLES (default 4); each cut is held until the other brokers lead the isolated leader's partitions and it acknowledged writes after the cut; passes only if acknowledged records are found lost.
	CHAOS_BROKEN=1 CHAOS_CYCLES=$(if $(filter 0,$(CHAOS_CYCLES)),4,$(CHAOS_CYCLES)) CHAOS_NEMESES=$(if $(filter all,$(CHAOS_NEMESES)),partition-minority,$(CHAOS_NEMESES)) bash compat-tests/chaos/run.sh

chaos-summary: ## Rewrite the summary table in compat-tests/chaos/README.md from compat-tests/chaos/results/*.json.
	cd compat-tests/go && $(GO) run ./cmd/chaos -summarize ../chaos/results -readme ../chaos/README.md

.PHONY: property-test
PROPERTY_DURATION ?= 150s
property-test: ## The storage data-safety property test for PROPERTY_DURATION (default 150s); GREGOR_PROPERTY_SEED replays a run.
	GREGOR_PROPERTY_DURATION=$(PROPERTY_DURATION) $(GO) test -count=1 -timeout 60m -run '^TestDataSafetyProperty$$' -v ./storage/

.PHONY: image
IMAGE ?= gregor:dev
IMAGE_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The first container engine that can build here: podman, buildah, or a
# docker whose daemon answers.
CONTAINER_ENGINE ?= $(shell if command -v podman >/dev/null; then echo podman; \
	elif command -v buildah >/dev/null; then echo buildah; \
	elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then echo docker; fi)
image: ## Container image gregor:dev, or IMAGE (deploy/image/Containerfile): a static bin/gregor on scratch, with podman, buildah or docker (CONTAINER_ENGINE).
	@if [ -z "$(CONTAINER_ENGINE)" ]; then echo "make image: no podman, buildah or running docker (apt-get install podman)" >&2; exit 1; fi
	rm -rf bin/image && mkdir -p bin/image/data
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(IMAGE_VERSION)" -o bin/image/gregor ./cmd/gregor
	cp deploy/image/passwd deploy/image/group bin/image/
	$(if $(filter buildah,$(CONTAINER_ENGINE)),buildah bud,$(CONTAINER_ENGINE) build) $(if $(filter docker,$(CONTAINER_ENGINE)),,--format docker) \
		-f deploy/image/Containerfile -t $(IMAGE) bin/image

.PHONY: image-check
image-check: ## Run a broker from the image (gregor:dev, or IMAGE; its HEALTHCHECK, a clean stop) and the compatibility lab's franz-go scenarios against it.
	bash deploy/image/check.sh $(IMAGE)

.PHONY: compose-check
compose-check: ## The brokers of deploy/compose (embedded and external etcd) under podman-compose, healthy, with the franz-go scenarios and a clean stop (needs gregor:dev: make image).
	bash deploy/compose/check.sh

.PHONY: systemd-verify
systemd-verify: build ## systemd-analyze verify (and security) on deploy/systemd/gregor.service.
	bash deploy/systemd/verify.sh bin/gregor

.PHONY: dashboard-check alerts-check
dashboard-check: build ## Three brokers under a small load and Prometheus (Debian's package, installed if missing as root): every Grafana dashboard query and every alert's series must return data; then alerts-check.
	bash deploy/check-dashboard.sh bin/gregor
	@$(MAKE) --no-print-directory alerts-check

alerts-check: ## promtool check rules and test rules on deploy/prometheus/alerts.yml.
	promtool check rules deploy/prometheus/alerts.yml
	promtool test rules deploy/prometheus/alerts_test.yml

.PHONY: console-test
console-test: ## Kafka 4.x Java console tools and kcat against bin/gregor (compat-tests/console).
	bash compat-tests/console/run.sh

.PHONY: compat
TARGET ?= gregor
CLUSTER ?= 1
compat: ## Compatibility lab: every client suite against Gregor (TARGET=kafka: against Apache Kafka 4.x; CLUSTER=3: against three brokers); writes compat-tests/RESULTS.md.
	bash compat-tests/run.sh --target $(TARGET) --cluster $(CLUSTER)

.PHONY: compat-secure
compat-secure: ## Compatibility lab over SASL_SSL (SCRAM-SHA-512) and over mTLS, the produce/consume/group scenarios against Gregor and Apache Kafka 4.x, one run at a time; writes compat-tests/results/<target>-<security>.tsv.
	@rc=0; for sec in sasl_ssl mtls; do for t in gregor kafka; do \
		bash compat-tests/run.sh --target $$t --security $$sec || rc=1; \
	done; done; exit $$rc

clean: ## Remove bin/ and bench.out (./data, the broker's data, is kept).
	rm -rf bin bench.out
