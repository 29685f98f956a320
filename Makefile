# The two commands of the README: `make run` and `make test`.

GO       ?= go
DATA_DIR ?= portico-data
BIN      ?= bin/portico
FUZZTIME ?= 30s
# CONFIG: a config file for make run (PORTICO_CONFIG is the same).
CONFIG   ?= $(PORTICO_CONFIG)

# make run's arguments: the data directory, and the config when one is
# given; with a config, its own data_dir unless DATA_DIR is given too.
ifneq ($(CONFIG),)
RUN_ARGS := --config $(CONFIG)
ifneq ($(origin DATA_DIR),file)
RUN_ARGS += --data-dir $(DATA_DIR)
endif
else
RUN_ARGS := --data-dir $(DATA_DIR)
endif
RUN_ARGS += --auth-dev-log-codes --dev-dashboard

.PHONY: run test test-deps vet fuzz flake bench build release-snapshot

## run: build $(BIN), then start portico serve on the embedded defaults
## or on CONFIG (state kept in $(DATA_DIR)), with the development
## conveniences: the dashboard on with a dev admin token, the auth server
## writing email login codes to the log; Ctrl-C (or SIGINT to make) stops
## it with exit status 0
run:
	@GO="$(GO)" BIN="$(BIN)" MAKE_PID=$$PPID exec ./scripts/run.sh $(RUN_ARGS)

## test: install what the tests need (Debian: curl, jq, chromium, postgresql,
## redis-server, buildah, systemd; npm: anvil and the interop libraries, into
## node_modules; Go: goreleaser, built into ~/.cache/portico/tools), start
## PostgreSQL and Redis on 127.0.0.1, vet, and run every test (missing parts
## fail, not skip), then the shipping tests (deploy/: a Go module of its
## own, docs/deploy.md)
test: test-deps vet
	PORTICO_TEST_STRICT=1 $(GO) test -timeout 20m ./...
	cd deploy && PORTICO_TEST_STRICT=1 $(GO) test -timeout 20m ./...

test-deps:
	./scripts/install-test-deps.sh
	./scripts/install-chromium.sh
	./scripts/install-deploy-deps.sh
	./scripts/start-services.sh

vet:
	$(GO) vet ./...
	cd deploy && $(GO) vet ./...

build:
	$(GO) build -o $(BIN) ./cmd/portico

## fuzz: run every Fuzz target for $(FUZZTIME) each (not part of `make test`)
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

## flake: the flake hunt, not part of `make test`: the whole suite ROUNDS
## times (default 3) in shuffled order beside BUSY busy loops (default one
## per core), each failure printed (RACE=1 adds the race detector;
## docs/testing.md)
flake: test-deps
	./scripts/flake.sh

## bench: gateway benchmarks, see docs/benchmarks.md
bench:
	./scripts/bench.sh

## release-snapshot: the release binaries for linux and darwin (amd64, arm64),
## archives, checksums and SBOMs in dist/, not published (docs/deploy.md)
release-snapshot:
	./scripts/release-snapshot.sh
