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

# Latency of `safe_bash true` through the symlinked proxy against `bash -c true`,
# measured side by side in one run, as the e2e test user.
bench:
	$(SUDO) $(GO) test -tags e2e -count=1 -run '^$$' -bench RoundTrip -benchtime 1x -v ./e2e

# Regenerate the gRPC code and docs/errors.md.
generate: tools
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" $(GO) generate ./...

tools:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

clean:
	rm -rf bin
