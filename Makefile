# Rukh. `make demo` sets up and runs the main job; `make test` is the test
# command CI runs (.ci/run).

GO       ?= go
BIN      := $(CURDIR)/bin
DEMOHOME := $(CURDIR)/.demo
FUZZTIME ?= 60s
# The source stamp of the build (internal/buildid): rukh and rukhd built
# from the same sources carry the same one, and a daemon refuses a client
# of another build (docs/adr/0003-daemon.md).
STAMP    ?= $(shell git ls-files -co --exclude-standard '*.go' go.mod go.sum 2>/dev/null | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
LDFLAGS  := -X github.com/rukh-cli/rukh/internal/buildid.stamp=$(STAMP)

.PHONY: all build demo test vet fuzz bench bench-pairs call-pairs soak clean
.PHONY: deb

all: build

# CGO_ENABLED=0: static binaries. The net package would otherwise link
# libc, and loading it is a third of the thin rukh's start
# (docs/benchmarks.md).
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/rukh ./cmd/rukhd
	# The one-shot core: rukhd without the built-in commands, MCP, the
	# release sources or the daemon, which the thin rukh runs a command
	# line of one extension command in when no daemon serves it
	# (docs/adr/0017-one-shot-core.md).
	CGO_ENABLED=0 $(GO) build -tags rukh_oneshot -ldflags "$(LDFLAGS)" -o $(BIN)/rukh-oneshot ./cmd/rukhd
	# The enforcement helper starts before every restricted or strict
	# command: C without libc (internal/run/sandbox/helper), built with $$CC or cc.
	$(GO) run ./cmd/mksandbox -o $(BIN)/rukh-sandbox
	$(GO) build -o examples/hello-go/bin/hello ./examples/hello-go

# The owner flow on a throwaway RUKH_HOME (./.demo), never your own.
demo: build
	./tests/demo.sh

test: vet
	$(GO) test -race -count=1 ./...
	$(GO) test -run='^$$' -bench=. -benchtime=1x -count=1 ./... # every benchmark once, so none rots
	cd packaging && $(GO) test -mod=mod -count=1 ./...

vet:
	$(GO) vet ./...
	$(GO) vet -tags rukh_oneshot ./app/ ./internal/cli/ ./cmd/rukhd/ # the one-shot core's build
	cd packaging && $(GO) vet -mod=mod ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

# rukh_VERSION_ARCH.deb here: rukh, rukhd, rukh-sandbox, the systemd user
# units, completions, man pages, copyright and changelog (lintian-clean:
# packaging/cmd/mkdeb's TestDeb). packaging/ is its own module, so nfpm stays out of go.mod;
# -mod=mod lets it follow the main module's requirements (replace ../).
# An embedder's package: make deb NAME=acme MODULE=examples/acme (its
# module, with cmd/acme and cmd/acmed) gives acme_VERSION_ARCH.deb.
deb:
	cd packaging && $(GO) run -mod=mod ./cmd/mkdeb -root $(CURDIR) -o $(CURDIR) -stamp '$(STAMP)' \
		$(if $(NAME),-name $(NAME)) $(if $(MODULE),-module $(abspath $(MODULE)))

# Each fuzz target for FUZZTIME (go test fuzzes one target at a time).
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) ./internal/release/descriptor/
	$(GO) test -run='^$$' -fuzz='^FuzzNames$$' -fuzztime=$(FUZZTIME) ./internal/release/descriptor/
	$(GO) test -run='^$$' -fuzz='^FuzzTaskName$$' -fuzztime=$(FUZZTIME) ./internal/core/profile/
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./internal/core/profile/
	$(GO) test -run='^$$' -fuzz='^FuzzCheck$$' -fuzztime=$(FUZZTIME) ./internal/release/resultschema/
	$(GO) test -run='^$$' -fuzz='^FuzzValidateResult$$' -fuzztime=$(FUZZTIME) ./internal/release/resultschema/
	$(GO) test -run='^$$' -fuzz='^FuzzArguments$$' -fuzztime=$(FUZZTIME) ./internal/release/values/
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./internal/strictjson/
	$(GO) test -run='^$$' -fuzz='^FuzzTransform$$' -fuzztime=$(FUZZTIME) ./internal/jsoncanon/
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeRecord$$' -fuzztime=$(FUZZTIME) ./internal/core/store/
	$(GO) test -run='^$$' -fuzz='^FuzzJournal$$' -fuzztime=$(FUZZTIME) ./internal/core/store/
	$(GO) test -run='^$$' -fuzz='^FuzzJournalGap$$' -fuzztime=$(FUZZTIME) ./internal/core/store/
	$(GO) test -run='^$$' -fuzz='^FuzzUnpack$$' -fuzztime=$(FUZZTIME) ./internal/release/trust/
	$(GO) test -run='^$$' -fuzz='^FuzzParseManifest$$' -fuzztime=$(FUZZTIME) ./internal/release/trust/
	$(GO) test -run='^$$' -fuzz='^FuzzReader$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=2s ./internal/release/extproto/
	$(GO) test -run='^$$' -fuzz='^FuzzParseInvoke$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=2s ./internal/release/extproto/
	$(GO) test -run='^$$' -fuzz='^FuzzGuardRead$$' -fuzztime=$(FUZZTIME) ./internal/mcp/guard/
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) ./internal/daemon/wire/
	$(GO) test -run='^$$' -fuzz='^FuzzMsgCodec$$' -fuzztime=$(FUZZTIME) ./internal/daemon/wire/
	$(GO) test -run='^$$' -fuzz='^FuzzToolCodec$$' -fuzztime=$(FUZZTIME) ./internal/daemon/wire/

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=5 ./internal/strictjson/ ./internal/release/descriptor/ ./internal/release/resultschema/ ./internal/release/values/ ./internal/core/store/ ./internal/core/projection/ ./internal/release/extproto/ ./internal/core/invoke/ ./internal/mcp/guard/ ./internal/daemon/wire/
	$(GO) test -run='^$$' -bench=BenchmarkCLI -benchtime=40x -count=5 ./tests/
	$(GO) test -run='^$$' -bench=BenchmarkHTTP -benchtime=40x -count=5 ./tests/
	$(GO) test -run='^$$' -bench='BenchmarkList|BenchmarkCall' -benchtime=20x -count=5 ./internal/mcp/

# Issue 28's paired rows for this tree and for BASE (a git revision),
# alternated round by round (docs/benchmarks.md): make bench-pairs BASE=main~3
ROUNDS ?= 6
bench-pairs:
	@test -n "$(BASE)" || { echo "usage: make bench-pairs BASE=<git revision> [ROUNDS=6]"; exit 2; }
	scripts/bench-pairs $(BASE) $(ROUNDS)

# Whole calls of this tree's build against BASE's, alternated call by
# call, without a daemon and through rukhd (docs/benchmarks.md):
# make call-pairs BASE=main~3
PAIRS ?= 200
call-pairs:
	@test -n "$(BASE)" || { echo "usage: make call-pairs BASE=<git revision> [ROUNDS=6] [PAIRS=200]"; exit 2; }
	scripts/call-pairs $(BASE) $(ROUNDS) $(PAIRS)

# 10,000 MCP calls across 20 sessions with kill -9 of children and of
# rukh mcp processes and profile changes under them (tests/soak_test.go);
# and the store lock under contention at full size, 200 concurrent calls
# and 20 owner loops (tests/contention_test.go; make test runs 100 and 10).
soak:
	RUKH_SOAK=1 $(GO) test -tags soak -run '^(TestContentionSoak|TestSoak)$$' -count=1 -v -timeout 30m ./tests/

clean:
	rm -rf $(BIN) $(DEMOHOME)
	rm -f rukh_*.deb acme_*.deb
