# lockplugin: `make test` is what CI runs (.ci/run starts the databases first).
GO         ?= go
TESTFLAGS  ?= -race -count=1 -timeout 25m
FUZZTIME   ?= 15s
BENCHTIME  ?= 1s
BENCHCOUNT ?= 2
# The pairs whose ratios issue 27 bounds, run BENCHFOCUSROUNDS more rounds
# after the BENCHCOUNT rounds of everything: their medians are over
# BENCHCOUNT + BENCHFOCUSROUNDS rounds.
BENCHFOCUS ?= './lease:^BenchmarkAcquireRelease$$/^(redis|local)$$' './advisory:^BenchmarkWith$$' \
	'./observe:^BenchmarkObserverLease$$' './locks:^BenchmarkClaimRiver$$/^n=1$$' \
	'./lease:^BenchmarkRefusal$$//^mysql$$'
BENCHFOCUSROUNDS ?= 10
# tests/lease TestFairnessReport runs I25_FAIRNESS_SECONDS per store (6
# runs): short in make test, for its assertions (no overlap, no fence
# regression, no wait run out on a store that queues); the 30 s report in
# make fairness, and in make bench (its table goes into BENCHMARKS.md).
FAIRNESS_TEST_SECONDS ?= 4
FAIRNESS_SECONDS      ?= 30

# The library modules and tests/ are vetted and tested each on its own
# (GOWORK=off), as CI and their users see them: with go.work, which lists
# every module for development, the go command would resolve each module's
# dependencies together with the others' and hide a go.mod that is
# incomplete on its own. cmd/lockcheck requires the root and
# lease/redisstore at release versions, without replace directives, so it
# builds from the checkout through go.work; install-check proves that it
# also builds on its own, with `go install ...@version`.
MODULES  := . lease/etcdstore lease/redisstore lease/sqlstore/pgnotify integrations/gocronlock integrations/otellock
ALONE    := GOWORK=off
LOCKCHECK := cmd/lockcheck
OURS     := github.com/lockplugin/lockplugin
# INWORK DIR CMD runs CMD in DIR through go.work without writing the
# tracked go.work.sum (see .ci/inwork): no step of `make test` changes the
# tree.
INWORK   := bash .ci/inwork
# staticcheck with every check (doc comments included), at the version
# .ci/run installs (it reads STATICCHECK_VERSION here). The binary is taken
# from PATH, else from where go install puts it (GOBIN, or GOPATH's bin).
STATICCHECK_VERSION := v0.8.2
STATICCHECK ?= $(shell command -v staticcheck 2>/dev/null || { d=$$($(GO) env GOBIN); [ -n "$$d" ] || d=$$($(GO) env GOPATH | cut -d: -f1)/bin; echo "$$d/staticcheck"; })
STATICCHECKS ?= all

.PHONY: test fmt-check vet staticcheck unit conformance fuzz install-check tidy bench fairness demo lint compose-up compose-down

# make test is deterministic: no random search runs in it (FuzzMaskDSN's
# seeds and its testdata/fuzz corpus run as ordinary tests in conformance);
# fuzzing is `make fuzz`, on its own.
test: fmt-check vet staticcheck unit install-check conformance

fmt-check:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@set -e; for m in $(MODULES) tests .ci/modproxy; do echo "go vet ($$m)"; (cd $$m && $(ALONE) $(GO) vet ./...); done
	$(INWORK) $(LOCKCHECK) $(GO) vet ./...

# Each module on its own, as vet; lockcheck through the workspace.
staticcheck:
	@[ -x "$(STATICCHECK)" ] || { echo "staticcheck not found at $(STATICCHECK): go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)"; exit 1; }
	@set -e; for m in $(MODULES) tests .ci/modproxy; do echo "staticcheck ($$m)"; (cd $$m && $(ALONE) $(STATICCHECK) -checks $(STATICCHECKS) ./...); done
	$(INWORK) $(LOCKCHECK) $(STATICCHECK) -checks $(STATICCHECKS) ./...

unit:
	@set -e; for m in $(MODULES); do echo "go test ($$m)"; (cd $$m && $(ALONE) $(GO) test $(TESTFLAGS) ./...); done

# lockcheck's tests run its scenarios on the databases, like tests/.
conformance:
	cd tests && I25_FAIRNESS_SECONDS=$(FAIRNESS_TEST_SECONDS) $(ALONE) $(GO) test $(TESTFLAGS) ./...
	$(INWORK) $(LOCKCHECK) $(GO) test $(TESTFLAGS) ./...

# lockcheck's DSN masking against generated secrets, for FUZZTIME. A
# failure is written to cmd/lockcheck/testdata/fuzz/FuzzMaskDSN/: check it
# in as a seed with the fix (a developer's step, never CI's).
fuzz:
	$(INWORK) $(LOCKCHECK) $(GO) test -run '^$$' -fuzz '^FuzzMaskDSN$$' -fuzztime $(FUZZTIME) .

# go install .../cmd/lockcheck@VERSION from a clean GOPATH, workspace off,
# against a file-system proxy of this checkout's modules.
install-check:
	GO=$(GO) bash .ci/install-check

# go mod tidy for every module; cmd/lockcheck is tidied against the
# checkout through temporary replace directives, which are then dropped.
tidy:
	@set -e; for m in $(MODULES) tests .ci/modproxy; do echo "go mod tidy ($$m)"; (cd $$m && $(ALONE) $(GO) mod tidy); done
	cd $(LOCKCHECK) && $(GO) mod edit -replace=$(OURS)=../.. -replace=$(OURS)/lease/redisstore=../../lease/redisstore && \
	  { $(ALONE) $(GO) mod tidy; rc=$$?; $(GO) mod edit -dropreplace=$(OURS) -dropreplace=$(OURS)/lease/redisstore; exit $$rc; }

lint: fmt-check vet staticcheck

# Every benchmark of tests/, written up in BENCHMARKS.md, then the
# fairness report (its table is printed, for BENCHMARKS.md's fairness
# section).
bench:
	cd tests && $(GO) run ./cmd/benchreport -benchtime $(BENCHTIME) -count $(BENCHCOUNT) \
		$(foreach f,$(BENCHFOCUS),-focus $(f)) -focus-rounds $(BENCHFOCUSROUNDS) -fairness $(FAIRNESS_SECONDS) -out ../BENCHMARKS.md

# One hot name, 8 workers, FAIRNESS_SECONDS on each store, beside redsync
# and etcd's concurrency.Mutex: wait p50, p99, max, waits that ran out.
fairness:
	cd tests && I25_FAIRNESS_SECONDS=$(FAIRNESS_SECONDS) $(ALONE) $(GO) test -count=1 -timeout 30m -run '^TestFairnessReport$$' -v ./lease

# lockcheck on an embedded SQLite file in a temp directory: nothing to install.
demo:
	cd $(LOCKCHECK) && $(GO) run .

compose-up:
	docker compose up -d

compose-down:
	docker compose down -v
