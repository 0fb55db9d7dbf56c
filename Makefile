# contextd: build, install for the current user, test.
# `make quickstart` and `make test` are the two commands the README promises.

GO      ?= go
PREFIX  ?= $(HOME)/.local
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/contextd/contextd/cmd/contextd/app.Version=$(VERSION) \
           -X github.com/contextd/contextd/proxy.Version=$(VERSION)
# The e2e suite creates test users and may boot their user manager: it needs root.
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo -E env PATH="$$PATH")

.PHONY: all build deps install quickstart test test-unit test-e2e bench bench-toolsearch generate tools vet clean

all: build

# The daemon needs cgo (libseccomp). The proxy does not, and it starts on every
# tool call: static, it skips the dynamic loader (a few ms per call).
# contextd-proxy-mcp serves `contextd-proxy mcp`; it holds the MCP SDK, whose
# start-up the symlinked tools do not pay (proxy/mcp.go).
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/contextd
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/contextd-proxy ./cmd/contextd-proxy-mcp

# Debian packages contextd and its tests need (installs only what is missing),
# and then nfpm, which builds the Debian package (make deb, e2e TestApt): it
# comes from the Go module proxy, which needs the ca-certificates deps.sh
# installs, so it is made after, not as a prerequisite.
deps:
	scripts/deps.sh
	$(MAKE) --no-print-directory nfpm

# Install the binaries into $(PREFIX)/bin and the user units, and enable the socket.
install: build
	install -d $(PREFIX)/bin
	install -m 0755 bin/contextd bin/contextd-proxy bin/contextd-proxy-mcp $(PREFIX)/bin/
	$(PREFIX)/bin/contextd install-units --enable

# Fresh machine to a working tool call: deps, build, install, demonstration.
quickstart:
	scripts/quickstart.sh

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e

test-unit:
	$(GO) test -race -count=1 ./...

# (30m: TestApt builds the Debian package twice, the first time from a cold cache
# for its position-independent daemon.)
test-e2e:
	$(SUDO) $(GO) test -tags e2e -count=1 -timeout 40m -v ./e2e ./e2e/salcorpus

# The whole suite: vet, unit (+ root-gated integration) tests, end-to-end.
test: deps vet test-unit test-e2e

# Benchmarks, each side by side with its baseline in one run:
# - latency of `safe_bash true` through the symlinked proxy against `bash -c true`
#   and a hand-assembled scope+bwrap sandbox, as the e2e test user, in a project
#   with everything on; and a burst of 200 calls at once against as many
#   scope+bwrap sandboxes (wall time, failures);
# - `safe_read` of a 10 MB file end to end against `cat` of it;
# - scrub throughput against gitleaks on one corpus, like with like: both warm in
#   process (contextd's Find, gitleaks' library detector; one core and all cores), and
#   both as a fresh process reading it on stdin (bench/scrub/scrubstdin against
#   `gitleaks stdin`; installs the CLI, at the version go.mod pins, when it is missing);
# - memory_search latency on the embedded store at 10k and 100k memories against
#   a plain LIKE scan of the same rows.
# - what `contextd-proxy mcp wrap` adds to a real MCP server (server-everything):
#   tools/call latency and pipelined message throughput against the server
#   spoken to directly.
# - warm `go test ./...` of a real module (spf13/cobra, from the module proxy)
#   and warm `npm test` of a package tested by mocha (from the npm registry),
#   through safe_bash against the same command bare (issue 16: at most 1.2x).
# - what reading [hook] blocked with BurntSushi/toml costs a start of the hook
#   (issue 27: under 1 ms), against a process that reads the file and parses
#   nothing, and the hook's own reading path; and that parse in process.
GITLEAKS_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/zricethezav/gitleaks/v8)
bench:
	command -v gitleaks >/dev/null || [ -x "$$($(GO) env GOPATH)/bin/gitleaks" ] || \
		$(GO) install github.com/zricethezav/gitleaks/v8@$(GITLEAKS_VERSION)
	$(GO) test -count=1 -run '^$$' -bench Scrub -benchtime 3x -v ./bench/scrub
	$(GO) test -count=1 -run '^$$' -bench Search -benchtime 200x -v ./daemon/store/sqlite
	$(GO) test -count=1 -run '^$$' -bench 'Download|SmallRequest' -benchtime 5x -v ./daemon/egress
	$(GO) test -count=1 -run '^$$' -bench Pipeline10MB -benchtime 5x -v ./daemon/respond
	$(GO) test -count=1 -run '^$$' -bench ScanKinds -benchtime 10x -v ./salience
	$(GO) test -count=1 -run '^$$' -bench HookStart -benchtime 1x -v ./bench/hookstart
	$(GO) test -count=1 -run '^$$' -bench HookParse -benchmem -v ./bench/hookstart
	$(SUDO) $(GO) test -tags e2e -count=1 -run '^$$' -bench 'RoundTrip|Burst|SafeRead10MB|Salience10MB|Wrap|DevWarm|Plugin' -benchtime 1x -v ./e2e

# Tool search (issue 30): exact, BM25 and contextd's retrieval side by side on
# the frozen MCP catalogue and query set, search mode's token saving, and
# search latency at 1,000 tools. Outside sets plug in through ARGS, e.g.
# make bench-toolsearch ARGS='-fixtures DIR -queries FILE -split test'.
bench-toolsearch:
	$(GO) run ./bench/toolsearch $(ARGS)

# Regenerate the gRPC code and docs/errors.md.
generate: tools
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" $(GO) generate ./...

tools:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

clean:
	rm -rf bin

# Debian package and signed apt repository (packaging/README.md).
# `make deb` builds $(DIST)/contextd_<DEB_VERSION>-<DEB_REVISION>_<arch>.deb;
# DEB_VERSION defaults to one derived from `git describe` (packaging/gen
# version), and the packaged binaries report it as their version. `make apt-repo`
# indexes every package in $(DIST) into the flat repository $(DIST)/apt, signed
# with a key kept in $(DIST)/apt-key. LINTIAN= skips the lintian check.
# nfpm is pinned to the newest release whose modules the Go module proxy here
# serves (v2.46 and later need modules from a host it does not reach).
NFPM_VERSION  = v2.45.2
NFPM          = $(shell $(GO) env GOPATH)/bin/nfpm
DIST         ?= dist
DEB_VERSION  ?=
DEB_REVISION ?= 1
LINTIAN      ?= lintian

.PHONY: deb deb-build apt-repo nfpm

deb: nfpm
	@v='$(DEB_VERSION)'; [ -n "$$v" ] || v=$$($(GO) run ./packaging/gen version) || exit 1; \
	$(GO) run ./packaging/gen check-version "$$v" && \
	$(MAKE) --no-print-directory deb-build DEB_VERSION="$$v" VERSION="$$v"

# Called by deb with VERSION=DEB_VERSION, so that LDFLAGS stamps the package's
# version into the binaries. Every command in cmd/ but the daemon is static.
# Stripped (-s -w: no symbol table or DWARF; panics still name their functions);
# the daemon is hardened as Debian builds C programs: position-independent,
# full RELRO, and its cgo part with _FORTIFY_SOURCE and stack protection.
deb-build:
	rm -rf $(DIST)/build
	CGO_CFLAGS='-O2 -g -D_FORTIFY_SOURCE=2 -fstack-protector-strong' $(GO) build -trimpath -buildmode=pie \
		-ldflags '$(LDFLAGS) -s -w -extldflags=-Wl,-z,relro,-z,now' -o $(DIST)/build/bin/ ./cmd/contextd
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS) -s -w' -o $(DIST)/build/bin/ $(filter-out ./cmd/contextd,$(wildcard ./cmd/*))
	GO='$(GO)' NFPM='$(NFPM)' DIST='$(DIST)' DEB_VERSION='$(DEB_VERSION)' DEB_REVISION='$(DEB_REVISION)' \
		LINTIAN='$(LINTIAN)' packaging/build-deb.sh

apt-repo: deb
	DIST='$(DIST)' packaging/apt-repo.sh

nfpm:
	@[ "$$($(GO) version -m '$(NFPM)' 2>/dev/null | awk '$$1 == "mod" { print $$3 }')" = '$(NFPM_VERSION)' ] || \
		$(GO) install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)
