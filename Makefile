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

# The main job on the embedded Gavel table: look at the table, estimate the
# pairs a partly profiled table lacks, allocate with a policy, plan rounds.
CLUSTER := v100=4,p100=4,k80=4
demo: build
	@echo "== 1. the embedded throughput table (steps/s alone, single-GPU job types) =="
	$(BIN)/gavel-plan table show --worker-type k80,p100,v100
	@echo "== 2. one job type's co-location row (fraction of solo speed kept by each job) =="
	$(BIN)/gavel-plan table show --worker-type k80,p100,v100 --pairs "ResNet-50 (batch size 64)"
	@echo "== 3. estimate the pairs missing from a partly profiled table (examples/partial.json) =="
	$(BIN)/gavel-profile estimate --table examples/partial.json --out $(BIN)/estimated.json
	@echo "== 4. allocate GPU time with heterogeneity-aware max-min fairness and space sharing =="
	$(BIN)/gavel-plan allocate --policy max_min_fairness_packed --cluster $(CLUSTER) --jobs examples/jobs.json --table $(BIN)/estimated.json
	@echo "== 5. realize the allocation in rounds (4 GPUs per server) =="
	$(BIN)/gavel-plan rounds --policy max_min_fairness_packed --cluster $(CLUSTER) --gpus-per-server v100=4,p100=4,k80=4 \
		--jobs examples/jobs.json --table $(BIN)/estimated.json --rounds 6

test: setup
	$(GO) vet ./...
	$(GO) test ./...

bench: setup
	$(GO) test -run '^$$' -bench . ./...

clean:
	rm -rf $(BIN)
