# The two commands of the README: `make run` and `make test`.

GO       ?= go
DATA_DIR ?= portico-data
BIN      ?= bin/portico
FUZZTIME ?= 30s

.PHONY: run test test-deps vet fuzz bench build release-snapshot

## run: build $(BIN), then start portico serve on the embedded defaults
## (state kept in $(DATA_DIR)), its auth server writing email login codes
## to the log (development only); Ctrl-C stops it with exit status 0
run:
	@GO="$(GO)" BIN="$(BIN)" ./scripts/run.sh --data-dir $(DATA_DIR) --auth-dev-log-codes

## test: install what the tests need, vet, and run every test (missing parts fail, not skip)
## (then the shipping tests, deploy/: a Go module of its own, docs/deploy.md)
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

## bench: gateway benchmarks, see docs/benchmarks.md
bench:
	./scripts/bench.sh

## release-snapshot: the release binaries for linux and darwin (amd64, arm64),
## archives, checksums and SBOMs in dist/, not published (docs/deploy.md)
release-snapshot:
	./scripts/release-snapshot.sh
