# lockplugin: `make test` is what CI runs (.ci/run starts the databases first).
GO        ?= go
TESTFLAGS ?= -race -count=1 -timeout 25m
BENCHTIME ?= 1s
BENCHCOUNT ?= 5

.PHONY: test fmt-check vet unit conformance bench demo lint compose-up compose-down

test: fmt-check vet unit conformance

fmt-check:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd lease/etcdstore && $(GO) vet ./...
	cd lease/redisstore && $(GO) vet ./...
	cd tests && $(GO) vet ./...
	cd integrations/gocronlock && $(GO) vet ./...
	cd integrations/otellock && $(GO) vet ./...

unit:
	$(GO) test $(TESTFLAGS) ./...
	cd lease/etcdstore && $(GO) test $(TESTFLAGS) ./...
	cd lease/redisstore && $(GO) test $(TESTFLAGS) ./...
	cd integrations/gocronlock && $(GO) test $(TESTFLAGS) ./...
	cd integrations/otellock && $(GO) test $(TESTFLAGS) ./...

conformance:
	cd tests && $(GO) test $(TESTFLAGS) ./...

lint: fmt-check vet

# Every benchmark of tests/, written up in BENCHMARKS.md.
bench:
	cd tests && $(GO) run ./cmd/benchreport -benchtime $(BENCHTIME) -count $(BENCHCOUNT) -out ../BENCHMARKS.md

# lockcheck on an embedded SQLite file in a temp directory: nothing to install.
demo:
	cd tests && $(GO) run ./cmd/lockcheck

compose-up:
	docker compose up -d

compose-down:
	docker compose down -v
