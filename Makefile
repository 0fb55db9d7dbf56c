# contextd: build, install for the current user, test.
# `make quickstart` and `make test` are the two commands the README promises.

GO      ?= go
PREFIX  ?= $(HOME)/.local
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/contextd/contextd/cmd/contextd/app.Version=$(VERSION) \
           -X github.com/contextd/contextd/proxy.Version=$(VERSION)
# The e2e suite creates test users and may boot their user manager: it needs root.
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo -E env PATH="$$PATH")

.PHONY: all build deps install quickstart test test-unit test-e2e bench generate tools vet clean

all: build

# The daemon needs cgo (libseccomp). The proxy does not, and it starts on every
# tool call: static, it skips the dynamic loader (a few ms per call).
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/contextd
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/contextd-proxy

# Debian packages contextd and its tests need (installs only what is missing).
deps:
	scripts/deps.sh

# Install the binaries into $(PREFIX)/bin and the user units, and enable the socket.
install: build
	install -d $(PREFIX)/bin
	install -m 0755 bin/contextd bin/contextd-proxy $(PREFIX)/bin/
	$(PREFIX)/bin/contextd install-units --enable

# Fresh machine to a working tool call: deps, build, install, demonstration.
quickstart:
	scripts/quickstart.sh

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e

test-unit:
	$(GO) test -race -count=1 ./...

test-e2e:
	$(SUDO) $(GO) test -tags e2e -count=1 -timeout 15m -v ./e2e

# The whole suite: vet, unit (+ root-gated integration) tests, end-to-end.
test: deps vet test-unit test-e2e

# Benchmarks, each side by side with its baseline in one run:
# - latency of `safe_bash true` through the symlinked proxy against `bash -c true`
#   and a hand-assembled scope+bwrap sandbox, as the e2e test user;
# - `safe_read` of a 10 MB file end to end against `cat` of it;
# - scrub throughput against the gitleaks CLI (`gitleaks stdin`) on one corpus
#   (installs the CLI, at the version go.mod pins, when it is missing);
# - memory_search latency on the embedded store at 10k and 100k memories against
#   a plain LIKE scan of the same rows.
GITLEAKS_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/zricethezav/gitleaks/v8)
bench:
	command -v gitleaks >/dev/null || [ -x "$$($(GO) env GOPATH)/bin/gitleaks" ] || \
		$(GO) install github.com/zricethezav/gitleaks/v8@$(GITLEAKS_VERSION)
	$(GO) test -count=1 -run '^$$' -bench Scrub -benchtime 3x -v ./bench/scrub
	$(GO) test -count=1 -run '^$$' -bench Search -benchtime 200x -v ./daemon/store/sqlite
	$(SUDO) $(GO) test -tags e2e -count=1 -run '^$$' -bench 'RoundTrip|SafeRead10MB' -benchtime 1x -v ./e2e

# Regenerate the gRPC code and docs/errors.md.
generate: tools
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" $(GO) generate ./...

tools:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

clean:
	rm -rf bin
