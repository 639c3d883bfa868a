# Miniapp Host. `make run` opens the playground; `make test` runs every test.
# Both install what they need first (Debian packages, staticcheck).

GO        ?= go
BIN       := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck
# Under Xvfb WebKit renders without compositing faster and with less memory (notes/webkitgtk.md).
export WEBKIT_DISABLE_COMPOSITING_MODE := 1

.PHONY: all deps build run test vet lint bench soak clean

all: build

deps:
	@./scripts/deps.sh

build: deps
	$(GO) build -o $(BIN)/miniapp-host ./cmd/miniapp-host

# What `make run` starts grows with the project; RUN_ARGS picks another subcommand.
RUN_ARGS ?= playground
run: build
	./scripts/run.sh $(BIN)/miniapp-host $(RUN_ARGS)

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

vet: deps
	$(GO) vet ./...

lint: vet $(STATICCHECK)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt: these files need formatting:"; echo "$$unformatted"; exit 1; fi
	$(STATICCHECK) ./...

# Every test, with the race detector, under a virtual display (the host's tests open real windows).
test: lint
	xvfb-run -a -s "-screen 0 1280x900x24" $(GO) test -race -count=1 ./...

# Go benchmarks, then the load runs; BENCHMARKS.md records their latest figures.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) run ./cmd/loadgen

# A soak run of the playground through its automation channel (scripts/soak.sh, package soak):
# every command must be answered within 30 s, and SIGTERM must stop it within 10 s.
SOAK_MINUTES ?= 30
SOAK_ARGS ?=
soak: build
	SOAK_MINUTES=$(SOAK_MINUTES) ./scripts/soak.sh $(BIN)/miniapp-host $(SOAK_ARGS)

clean:
	rm -rf $(BIN)
