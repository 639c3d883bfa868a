# Miniapp Host. `make run` opens the playground; `make test` runs every test.
# Both install what they need first (Debian packages, staticcheck).

GO        ?= go
BIN       := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck
# Under Xvfb WebKit renders without compositing faster and with less memory (docs/webkitgtk.md, "Measured facts").
export WEBKIT_DISABLE_COMPOSITING_MODE := 1

# The WebKitGTK API to build against (docs/webkitgtk.md, "WebKitGTK 4.0 and 4.1"): a plain
# `go build` links 4.1 (libsoup 3); the build tag webkit2_40 links 4.0 (libsoup 2). make uses
# 4.1 when it is installed, else 4.0; WEBKIT_API=4.0 or 4.1, on the command line or in the
# environment, forces one. The choice is made when a recipe runs, after deps has installed
# what was missing, and reaches every go command (and the scripts' go builds) through GOFLAGS.
WEBKIT_API ?=
export WEBKIT_API
PKG_CONFIG ?= pkg-config
webkit_api = $(or $(strip $(WEBKIT_API)),$(shell $(PKG_CONFIG) --exists webkit2gtk-4.1 2>/dev/null && echo 4.1 || echo 4.0))
other_webkit_api = $(if $(filter 4.1,$(webkit_api)),4.0,4.1)
webkit_goflags = $(strip $(USER_GOFLAGS) $(if $(filter 4.0,$(1)),-tags=webkit2_40))
webkit_env = WEBKIT_API=$(1) GOFLAGS='$(call webkit_goflags,$(1))'
USER_GOFLAGS := $(GOFLAGS)
export GOFLAGS = $(call webkit_goflags,$(webkit_api))

.PHONY: all deps webkit build jaeger run test vet lint bench bench-sbs soak clean

all: build

# deps installs the preferred WebKitGTK API; `make test` asks for every one the distribution has.
DEPS_FLAGS ?=
deps:
	@./scripts/deps.sh $(DEPS_FLAGS)

# Says which WebKitGTK API this build uses; fails when a forced one is not installed.
webkit: deps
	@api='$(webkit_api)'; case "$$api" in 4.0|4.1) ;; \
	*) echo "WEBKIT_API=$$api: use 4.0 or 4.1, or leave it empty to pick the installed one" >&2; exit 2;; esac; \
	if ! $(PKG_CONFIG) --exists webkit2gtk-$$api; then \
		if [ -n '$(strip $(WEBKIT_API))' ]; then \
			echo "WEBKIT_API=$$api: webkit2gtk-$$api is not installed (Debian package libwebkit2gtk-$$api-dev)" >&2; \
		else \
			echo "webkit: pkg-config finds neither webkit2gtk-4.1 nor webkit2gtk-4.0 (Debian packages libwebkit2gtk-4.1-dev, libwebkit2gtk-4.0-dev)" >&2; \
		fi; exit 1; fi; \
	echo "webkit: WebKitGTK $$api (webkit2gtk-$$api, libsoup $$([ $$api = 4.1 ] && echo 3 || echo 2)); GOFLAGS=$(call webkit_goflags,$(webkit_api))"

# The binary must link the chosen API and no other (docs/webkitgtk.md, "Checking a binary").
build: webkit
	$(GO) build -o $(BIN)/miniapp-host ./cmd/miniapp-host
	@./scripts/check-webkit-api.sh $(BIN)/miniapp-host $(webkit_api)

# What `make run` starts grows with the project; RUN_ARGS picks another subcommand.
RUN_ARGS ?= playground
run: build
	./scripts/run.sh $(BIN)/miniapp-host $(RUN_ARGS)

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# Jaeger's all-in-one, the trace store the trace tests send a sign-in's spans to (docs/deploy.md,
# "Traces"); pinned in its own module, tools/jaeger, so its dependencies stay out of ours.
JAEGER := $(BIN)/jaeger
jaeger: $(JAEGER)
$(JAEGER): tools/jaeger/go.mod tools/jaeger/go.sum
	cd tools/jaeger && GOFLAGS= $(GO) build -o $(JAEGER) github.com/jaegertracing/jaeger/cmd/jaeger

vet: webkit
	$(GO) vet ./...

lint: vet $(STATICCHECK)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt: these files need formatting:"; echo "$$unformatted"; exit 1; fi
	$(STATICCHECK) ./...
	$(GO) vet -tags qa ./examples/qa/go/
	$(STATICCHECK) -tags qa ./examples/qa/go/

# Every test, with the race detector, under a virtual display (the host's tests open real windows);
# then the reference server's tests on PostgreSQL (STORE_PKGS); then the engine's GUI tests (ENGINE_PKGS) again against the other WebKitGTK API, when installed;
# then the example WebDriver suites (examples/qa/run.sh), which need WebKitGTK 4.1 and fail without it.
XVFB := xvfb-run -a -s "-screen 0 1280x900x24"
ENGINE_PKGS ?= ./host/webkitgtk/
# The packages whose tests take their database from storetest (SQLite, then PostgreSQL).
STORE_PKGS ?= ./authserver/...
test: DEPS_FLAGS = --all-webkit-apis
# One package at a time (-p 1): every package's windows share the one virtual display, and a
# window another package maps over the host's test window takes the clicks its tests send
# through the X server (xdotool) at the test window's coordinates.
test: lint $(JAEGER)
	$(XVFB) $(GO) test -race -count=1 -p 1 ./...
	@echo "test: the benchmark drivers' shared flow (bench/go.mod, a module of its own)"
	cd bench && GOFLAGS= $(GO) test -race -count=1 ./...
	@echo "test: the reference server's tests again, on PostgreSQL (a temporary server; authserver/store/storetest)"
	MINIAPP_HOST_TEST_STORE=postgres $(GO) test -race -count=1 $(STORE_PKGS)
	@other=$(other_webkit_api); \
	if ! $(PKG_CONFIG) --exists webkit2gtk-$$other; then \
		echo "test: engine tests against WebKitGTK $$other skipped: libwebkit2gtk-$$other-dev is not installed"; \
	else \
		echo "test: the engine tests again, against WebKitGTK $$other: $(call webkit_env,$(other_webkit_api)) go test $(ENGINE_PKGS)"; \
		$(call webkit_env,$(other_webkit_api)) $(XVFB) $(GO) test -race -count=1 $(ENGINE_PKGS); \
	fi
	@echo "test: the example QA suites (examples/qa, docs/webdriver.md \"Example suites\"): WebDriver on the WebKitGTK 4.1 host"
	$(XVFB) ./examples/qa/run.sh go
	$(XVFB) ./examples/qa/run.sh npm
	$(XVFB) ./examples/qa/run.sh wdio

# Go benchmarks, then the load runs; BENCHMARKS.md records their latest figures.
bench: webkit
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) run ./cmd/loadgen
	bash bench/side-by-side/bench.sh .

# The reference server beside panva's oidc-provider 9.13.3, interleaved rounds on this machine
# (bench/side-by-side/README.md; needs node and npm; about 6 minutes, bounded to 15).
bench-sbs:
	bash bench/side-by-side/bench.sh .

# A soak run of the playground through its automation channel (scripts/soak.sh, package soak):
# every command must be answered within 30 s, and SIGTERM must stop it within 10 s.
SOAK_MINUTES ?= 30
SOAK_ARGS ?=
soak: build
	SOAK_MINUTES=$(SOAK_MINUTES) ./scripts/soak.sh $(BIN)/miniapp-host $(SOAK_ARGS)

clean:
	rm -rf $(BIN)
