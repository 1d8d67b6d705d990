# drwatch — see README.md. Every target works from a clean clone on Debian with Go.
GO        ?= go
PKGS      ?= ./...
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DATE      ?= $(shell git log -1 --format=%cI 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
BIN       ?= bin/drwatch
# The Debian package's version (deploy/deb/version.sh says how it follows VERSION).
DEB_VERSION ?= $(shell sh deploy/deb/version.sh '$(VERSION)')
DEB_ARCH  ?= $(shell $(GO) env GOARCH)
# Where `make deb` writes drwatch_$(DEB_VERSION)_$(DEB_ARCH).deb (and stages its generated files).
DEB_DIR   ?= bin
NFPM      ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
TEST_TIMEOUT ?= 20m
FUZZ_TIME ?= 10m
SIM_TEST_N ?= 1000

.PHONY: all build deb test test-unit bench demo lint install-test-deps fuzz fuzz-long chaos sim clean

all: build

## build: the drwatch binary in bin/, stamped with version, commit and commit date (reproducible: -trimpath, no build time).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/drwatch

## deb: the Debian package $(DEB_DIR)/drwatch_$(DEB_VERSION)_$(DEB_ARCH).deb (nfpm), from the binary 'make build' stamps: unit, completions, man pages, examples (deploy/deb).
deb: build
	rm -rf $(DEB_DIR)/deb-stage && mkdir -p $(DEB_DIR)/deb-stage/man
	sed 's#/usr/local/bin/drwatch#/usr/bin/drwatch#g' deploy/systemd/drwatch.service > $(DEB_DIR)/deb-stage/drwatch.service
	$(abspath $(BIN)) completion bash > $(DEB_DIR)/deb-stage/drwatch.bash
	$(abspath $(BIN)) completion zsh > $(DEB_DIR)/deb-stage/_drwatch
	$(abspath $(BIN)) man $(DEB_DIR)/deb-stage/man
	gzip -9n $(DEB_DIR)/deb-stage/man/*.1
	printf 'drwatch ($(DEB_VERSION)) unstable; urgency=medium\n\n  * Built from commit $(COMMIT).\n\n -- drwatch maintainers <drwatch@users.noreply.github.com>  %s\n' \
	  "$$(git log -1 --format=%cD 2>/dev/null || date -R)" | gzip -9n > $(DEB_DIR)/deb-stage/changelog.gz
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) DEB_VERSION='$(DEB_VERSION)' DEB_ARCH='$(DEB_ARCH)' \
	  DEB_BIN='$(abspath $(BIN))' DEB_STAGE='$(abspath $(DEB_DIR))/deb-stage' \
	  $(NFPM) package --config deploy/deb/nfpm.yaml --packager deb --target $(DEB_DIR)/drwatch_$(DEB_VERSION)_$(DEB_ARCH).deb

## test: lint, install the real servers the tests need (as root), every test with the race detector (30 simulated schedules), then SIM_TEST_N more simulated schedules without it.
test: lint install-test-deps
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)
	SIM_SEED=31 SIM_N=$(SIM_TEST_N) $(GO) test -count=1 -timeout 10m -run TestSimSchedules ./test/sim/

## test-unit: the fast tests only (no real servers); for the edit-compile loop, not for CI.
test-unit:
	$(GO) test -race -short -count=1 $(PKGS)

## bench: benchmarks, reported as ratios against a floor or a peer measured in the same run; the end-to-end ones write test/bench/results/*.json, from which the README's table is then rewritten.
bench: install-test-deps
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 60m $(PKGS)
	$(GO) test -count=1 -run TestReadmeTableMatchesResults ./test/bench/ -update

## demo: three local watchers, two simulated sites, an embedded DNS server; watch it on the status page.
demo: build
	./$(BIN) demo

## lint: gofmt and go vet must be clean.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null; git ls-files --others --exclude-standard '*.go' 2>/dev/null)); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

## install-test-deps: apt-get install the real servers the integration tests use (root only; a no-op when present).
install-test-deps:
	@bash test/deps/install.sh

## fuzz: a short run of every fuzz target (seed corpora live in each package's testdata/fuzz).
fuzz:
	@bash test/deps/fuzz.sh

## fuzz-long: every fuzz target for FUZZ_TIME each (default 10m); hours in all, for a release or a night.
fuzz-long:
	@FUZZTIME=$(FUZZ_TIME) bash test/deps/fuzz.sh

## sim: a soak of the deterministic simulator (test/sim): SIM_N schedules (default 100000) from seed SIM_SEED (default 1), SIM_PARALLEL at a time (default: every core); about 15-25 a second without -race on 2 cores (one to two hours); make test runs 30 under -race and 1000 without.
sim:
	SIM_N=$${SIM_N:-100000} $(GO) test -count=1 -timeout 0 -run TestSimSchedules -v ./test/sim/

## chaos: 200 randomized real chaos schedules, 3 at a time (E2E_CHAOS_N, E2E_CHAOS_SEED, E2E_CHAOS_STEPS, E2E_CHAOS_PARALLEL), about 50 minutes on 2 cores; make test runs 3.
chaos: install-test-deps
	E2E_CHAOS_N=$${E2E_CHAOS_N:-200} E2E_CHAOS_PARALLEL=$${E2E_CHAOS_PARALLEL:-3} $(GO) test -race -count=1 -timeout 120m -run TestChaos12Randomized -v ./test/e2e/

clean:
	rm -rf bin
