# docmind. `make run` and `make test` are all a newcomer needs; both work offline with no API key.
SHELL   := /bin/bash
GO      ?= go
DATA    ?= ./data
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUNCTIONS := $(filter-out internal,$(notdir $(wildcard functions/*)))
LAMBDA_ENV   := GOOS=linux GOARCH=arm64 CGO_ENABLED=0
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags "-s -w -X main.version=$(VERSION)"

.PHONY: migrate test-lambda deploy deploy-guided preflight smoke smoke-stream invoke-query invoke-api invoke-rerank invoke-grade invoke-askstep invoke-canary
.PHONY: run install test test-integration test-browser screenshots lint build bench clean $(addprefix build-,$(FUNCTIONS))

## run: build the local binary and serve on 127.0.0.1:8080 (PORT=9090 or ADDR=host:port to change it)
## with embedded stores under $(DATA), saying what it does at each step
ADDR ?= $(if $(PORT),127.0.0.1:$(PORT),)
run:
	@echo "docmind: building bin/docmind (the first build compiles every dependency: minutes on a cold Go cache)"
	@$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/docmind ./cmd/docmind
	./bin/docmind serve --data $(DATA) $(if $(ADDR),--addr $(ADDR),)

## install: put docmind on PATH: into $(PREFIX)/bin when PREFIX is set (make install PREFIX=/usr/local),
## else into GOBIN (default $(go env GOPATH)/bin, which must be on PATH)
install:
	$(if $(PREFIX),$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(PREFIX)/bin/docmind ./cmd/docmind,$(GO) install -ldflags "-X main.version=$(VERSION)" ./cmd/docmind)
	@echo "docmind: installed $(if $(PREFIX),$(PREFIX)/bin/docmind,$$(d=$$($(GO) env GOBIN); echo $${d:-$$($(GO) env GOPATH)/bin})/docmind)"

## test: the hermetic suite (no network, no services, no keys)
test:
	$(GO) test -count=1 ./...

## test-integration: the conformance suites against real servers named by DOCMIND_TEST_REDIS_ADDR and
## DOCMIND_TEST_MYSQL_DSN (.ci/run starts both); DOCMIND_TEST_MILVUS_ADDR adds a real Milvus
test-integration:
	@test -n "$$DOCMIND_TEST_REDIS_ADDR" || { echo "set DOCMIND_TEST_REDIS_ADDR (host:port of a Redis)"; exit 2; }
	@test -n "$$DOCMIND_TEST_MYSQL_DSN" || { echo "set DOCMIND_TEST_MYSQL_DSN (user:pass@tcp(host:port)/ of a MySQL/MariaDB)"; exit 2; }
	$(GO) test -count=1 -v -run 'Conformance|Unavailable|Parity|CreateDocumentWaits' ./shared/store/redis ./shared/store/mysql ./shared/store/milvus ./shared/limits ./shared/ingest 2>&1 | tee /tmp/docmind-integration.log | grep -E '^(=== RUN|--- |ok|FAIL|PASS|\s+\w+_test.go)' ; exit $${PIPESTATUS[0]}

## test-browser: the page at / in Debian's chromium (/usr/bin/chromium) through playwright-core, against
## `docmind serve` on the demo with a fake model; needs node and `npm ci` in test/browser (.ci/run
## installs both); installs nothing itself
test-browser:
	@test -x /usr/bin/chromium || { echo "needs /usr/bin/chromium (apt-get install chromium fonts-noto-cjk)"; exit 2; }
	@test -d test/browser/node_modules/playwright-core || { echo "run: (cd test/browser && npm ci)"; exit 2; }
	$(GO) build -o bin/docmind ./cmd/docmind
	$(GO) build -o bin/fakellm ./test/browser/fakellm
	cd test/browser && DOCMIND_SCREENSHOTS=$(DOCMIND_SCREENSHOTS) DOCMIND_BIN=$(CURDIR)/bin/docmind FAKELLM_BIN=$(CURDIR)/bin/fakellm node --test --test-concurrency=1 browser_test.mjs

## screenshots: the browser suite, writing its 1400x900 and 375x812 screenshots to docs/screenshots
screenshots:
	$(MAKE) test-browser DOCMIND_SCREENSHOTS=$(CURDIR)/docs/screenshots

## lint: formatting, vet, and a tidy go.mod
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff

## build: every Lambda for linux/arm64 (bin/<function>/bootstrap) and the local binary
build: $(addprefix build-,$(FUNCTIONS))
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/docmind ./cmd/docmind

$(addprefix build-,$(FUNCTIONS)): build-%:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o bin/$*/bootstrap ./functions/$*

# sam build (BuildMethod: makefile) calls build-<LogicalId> with ARTIFACTS_DIR set
build-QueryFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/query
build-IngestFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/ingest
# one binary, two functions: ExtractFunction gets the memory PDF extraction needs
build-StageFunction build-ExtractFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/stage
build-ConsistencyFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/consistency
build-MigrateFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/migrate
build-RerankFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/rerank
build-GradeFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/grade
build-ApiFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/api
build-AskStepFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/askstep
build-CanaryFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/canary
build-ConnectorFunction:
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/connector

## deploy: build every function and deploy the stack with samconfig.toml's ENV section (dev or prod);
## refuses, naming them, while the section lacks the parameters only make deploy-guided can answer
ENV ?= dev
deploy:
	infra/deploy-params.sh $(ENV)
	sam build && sam deploy --config-env $(ENV)

## preflight: docmind aws preflight for a stack (deployed, or named in samconfig.toml): STACK=<name> [REGION=<r>]
preflight:
	@test -n "$(STACK)" || { echo "usage: make preflight STACK=<stack name> [REGION=<region>]"; exit 2; }
	$(GO) run ./cmd/docmind aws preflight --stack $(STACK) $(if $(REGION),--region $(REGION))

## deploy-guided: the first deploy of an ENV: sam deploy --guided asks for every parameter (the VPC,
## secrets and store endpoints have no default) and saves the answers in samconfig.toml's ENV section,
## so that `make deploy ENV=...` needs nothing else afterwards (DEPLOY.md)
deploy-guided:
	sam build && sam deploy --guided --config-env $(ENV)

## invoke-<fn>: invoke a deployed function of the ENV stack with its testdata event (sam remote invoke);
## the query and api events need KEY=<API key> for a stack with DOCMIND_AUTH=keys
invoke-query:
	sed 's/Bearer KEY/Bearer $(KEY)/' functions/query/testdata/chat.json > /tmp/docmind-invoke-query.json
	sam remote invoke QueryFunction --config-env $(ENV) --event-file /tmp/docmind-invoke-query.json
invoke-api:
	sed 's/Bearer KEY/Bearer $(KEY)/' functions/api/testdata/ask.json > /tmp/docmind-invoke-api.json
	sam remote invoke ApiFunction --config-env $(ENV) --event-file /tmp/docmind-invoke-api.json
invoke-rerank:
	sam remote invoke RerankFunction --config-env $(ENV) --event-file functions/rerank/testdata/rerank.json
invoke-grade:
	sam remote invoke GradeFunction --config-env $(ENV) --event-file functions/grade/testdata/grade.json
invoke-askstep:
	sam remote invoke AskStepFunction --config-env $(ENV) --event-file functions/askstep/testdata/understand.json
invoke-canary:
	sam remote invoke CanaryFunction --config-env $(ENV) --event-file functions/canary/testdata/schedule-input.json

## smoke: after a deploy, docmind aws smoke against the stack: STACK=<name> [REGION=<r>], an API key of an
## editor of the stack's tenant in DOCMIND_SMOKE_KEY; uploads, streams, deletes, checks consistency (docs/aws.md)
smoke:
	@test -n "$(STACK)" || { echo "usage: DOCMIND_SMOKE_KEY=<API key> make smoke STACK=<stack name> [REGION=<region>]"; exit 2; }
	$(GO) run ./cmd/docmind aws smoke --stack $(STACK) $(if $(REGION),--region $(REGION))

## smoke-stream: STR-06 against a chat URL alone (no stack outputs needed): CHAT_URL=<ChatUrl output>
## KEY=<API key or JWT>; first byte against total time (make smoke times every frame instead)
smoke-stream:
	infra/smoke-stream.sh "$(CHAT_URL)" "$(KEY)"

## migrate: apply the SQL migrations to the database named by DOCMIND_SQL_DRIVER / DOCMIND_SQL_DSN (a
## deploy step; on AWS the SchemaMigration custom resource runs functions/migrate)
migrate:
	$(GO) run ./cmd/docmind migrate

## test-lambda: the built bootstrap binaries under the Lambda Runtime Interface Emulator, against the
## in-process S3, MySQL and Milvus servers, and make smoke's checks against them (TestRIESmoke; needs
## aws-lambda-rie on PATH and moto_server; .ci/run installs both). It builds every Lambda for arm64 and
## amd64: on a machine whose build cache is cold that took 9 of go test's default 10 minutes on 2 cores.
test-lambda:
	DOCMIND_TEST_RIE=1 $(GO) test -count=1 -timeout 45m -v -run 'RIE' ./infra/ 2>&1 | tee /tmp/docmind-rie.log | grep -E '^(=== RUN|--- |ok|FAIL|PASS|\s+\w+_test.go)' ; exit $${PIPESTATUS[0]}

## bench: docmind bench with the peer libraries linked (tag bench_compare), results in docs/bench; then
## the Go micro-benchmarks. The million suite in it ingests 1,000,000 generated chunks and measures them
## in a fresh process (docs/bench/million.md: about 5 GB free in $TMPDIR and 10 GiB of memory, an hour on a loaded machine;
## `docmind bench --suite million --chunks 100000` for the 100k figures). memvec's BenchmarkQuantSchemes
## builds a 100k and a 1M index in its one iteration (about 11 GB free in $MEMVEC_BENCH_DIR or $TMPDIR)
bench:
	$(GO) run -tags bench_compare ./cmd/docmind bench --out docs/bench
	$(GO) test -run '^$$' -bench Search100k -benchtime 20x -count 5 ./shared/store/memvec
	$(GO) test -run '^$$' -bench QuantSchemes -benchtime 1x -timeout 2h ./shared/store/memvec
	$(GO) test -run '^$$' -bench . -count 5 ./shared/chunk
	$(GO) test -run '^$$' -bench . -benchtime 300x -count 5 ./shared/ingest
	$(GO) test -run '^$$' -bench . -benchtime 300x -count 3 ./shared/retrieve

clean:
	rm -rf bin
