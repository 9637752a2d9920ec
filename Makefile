# The two commands of the README: `make demo` and `make test`. Both install
# what is missing first (scripts/setup.sh).
GO ?= go
# go-nvml's header trips ~30 harmless deprecation warnings in every cgo build.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
BIN := bin

.PHONY: setup build demo test bench clean

setup:
	@./scripts/setup.sh

build: setup
	$(GO) build -o $(BIN)/ ./cmd/...

# The main job on the embedded Gavel table.
demo: build
	@echo "== the embedded throughput table (isolated rates, single-GPU job types) =="
	$(BIN)/gavel-plan table show --worker-type k80,p100,v100
	@echo "== co-location row of one job type (fraction of solo speed kept) =="
	$(BIN)/gavel-plan table show --worker-type k80,p100,v100 --pairs "ResNet-50 (batch size 64)"

test: setup
	$(GO) vet ./...
	$(GO) test ./...

bench: setup
	$(GO) test -run '^$$' -bench . ./...

clean:
	rm -rf $(BIN)
