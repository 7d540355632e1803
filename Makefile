# speechgraph: make run | make test | make bench
# Every target installs what it needs first (Debian packages, via sudo when not root).

SHELL := /bin/bash
SWIFT ?= swift
BUILD_FLAGS ?= -c release
BIN = .build/release/speechgraph
SHARED ?= ../shared

# Debian packages the project builds, runs and tests with.
DEB_PACKAGES = pkg-config libpocketsphinx-dev libsphinxbase-dev pocketsphinx pocketsphinx-en-us \
	libsndfile1-dev libmpg123-dev libsoxr-dev libfftw3-dev jackd2 libjack-jackd2-dev jack-tools \
	espeak-ng flite sox python3 python3-venv time util-linux procps iproute2 haproxy \
	chromium chromium-driver

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

PREFIX ?= /usr/local
VENV = .venv
PLUGINS = speechgraph-gate speechgraph-match

.PHONY: venv deps build plugins install run run-offline run-plugins test test-build test-fast test-tsan fuzz bench docs format lint clean

## deps: install the Debian packages (only the missing ones; safe to repeat). One line says what it installs; apt's
## own output goes to $(INSTALL_LOG), shown in part when apt fails.
INSTALL_LOG ?= out/install.log
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		mkdir -p $(dir $(INSTALL_LOG)); \
		echo "make: installing $$(echo $$missing | wc -w) Debian packages ($$(echo $$missing)); log: $(INSTALL_LOG)" >&2; \
		{ $(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; } \
			>>$(INSTALL_LOG) 2>&1 || { tail -n 20 $(INSTALL_LOG) >&2; echo "error: apt-get failed (the whole log: $(INSTALL_LOG))" >&2; exit 1; }; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "error: no Swift toolchain on PATH: install Swift 6 from swift.org (Debian does not package it)" >&2; exit 1; }

## build: the release binary at .build/release/speechgraph, the example plugins beside it
## (libspeechgraph-gate.so, libspeechgraph-match.so) and the RealtimeSanitizer runtime `plugin check` preloads
build: deps
	$(SWIFT) build $(BUILD_FLAGS) --product speechgraph
	$(MAKE) --no-print-directory plugins CONFIG_DIR=.build/release

## plugins: the example plugins (Plugins/) and libspeechgraph-rtsan.so, in CONFIG_DIR
CONFIG_DIR ?= .build/release
plugins:
	@for p in $(PLUGINS); do $(SWIFT) build $(if $(filter .build/release,$(CONFIG_DIR)),-c release) --product $$p >&2 || exit 1; done
	bash scripts/build-rtsan.sh $(CONFIG_DIR)/rtsan/libspeechgraph-rtsan.so

## install: speechgraph, the plugin ABI header and its pkg-config file (speechgraph-plugin), the example plugins
## in PREFIX/lib/speechgraph/plugins (PREFIX=/usr/local)
install: build
	bash scripts/install.sh $(PREFIX) .build/release

## run: live recognition from JACK. With a JACK server running: graphs/live.graph on it (Ctrl-C stops).
## Without one: a private dummy server, and graphs/jack-demo.graph plays the synthesised demo
## recording through JACK into speechgraph's input, so the whole live path runs without a sound card.
run: build out/demo.wav
	@if (jack_lsp >/dev/null 2>&1; exit $$?) 2>/dev/null; then \
		echo "make run: JACK server found: running graphs/live.graph (Ctrl-C to stop)" >&2; \
		$(BIN) run graphs/live.graph; \
	else \
		scripts/with-jack.sh $(BIN) run graphs/jack-demo.graph --duration $$(soxi -D out/demo.wav | awk '{ print $$1 + 1.5 }'); \
	fi

## run-plugins: the two example plugins in graphs: match.graph (Swift: phrases heard in the demo recording)
run-plugins: build out/demo.wav
	$(BIN) plugin check .build/release/libspeechgraph-gate.so
	$(BIN) plugin check .build/release/libspeechgraph-match.so
	$(BIN) run --plugin-path .build/release graphs/match.graph

## run-offline: the same demo recording through graphs/demo.graph, as fast as the CPU allows
run-offline: build out/demo.wav
	$(BIN) check --plan graphs/demo.graph >&2
	$(BIN) run graphs/demo.graph

out/demo.wav: scripts/make-demo-audio.sh
	@mkdir -p out
	bash scripts/make-demo-audio.sh $@

## format: the house style (.swift-format, lines <= 120) on every Swift file; run before each commit
format:
	$(SWIFT) format format --in-place --recursive --parallel Package.swift Sources Tests Fuzz Plugins Examples

## lint: fails when a Swift file is not in the house style (make format fixes it) or has a line longer than 120
## characters, which make format leaves as it is when a string literal makes it long (split the literal)
lint:
	$(SWIFT) format lint --strict --recursive --parallel Package.swift Sources Tests Fuzz Plugins Examples
	@awk 'length > 120 { print FILENAME ":" FNR ": line longer than 120 characters"; bad = 1 } END { exit bad }' \
		$$(git ls-files '*.swift') </dev/null >&2

## test: every test suite (unit, end-to-end with the real PocketSphinx, CLI), after the style check
## (The Python venv is made while the build runs: its 25 s of pip overlap the build.)
test: deps lint
	@$(MAKE) -j2 --no-print-directory test-build $(VENV)/ok
	SWIFT=$(SWIFT) bash scripts/test.sh

test-build: deps
	$(SWIFT) build --build-tests
	$(MAKE) --no-print-directory plugins CONFIG_DIR=.build/debug

## test-fast: the fast tier (the tests tagged .fast: no PocketSphinx model, no JACK server, no corpus; the core:
## language, planner, placement, both executors, rings; the language-model spec and estimator; the VAD detector; the web
## sink and its hub; the final-result composer), in seconds after the build.
test-fast: deps lint
	$(SWIFT) build --build-tests
	SPEECHGRAPH_NO_CORPUS=1 $(SWIFT) test --skip-build \
		--filter "$$(python3 scripts/tests-by-tag.py .build/debug/speechgraphPackageTests.xctest fast)"

## test-tsan: the ring, wake-signal, compute-gate and worker-wake tests, and two real recognizer graphs running at
## once, under ThreadSanitizer. ignore_interceptors_accesses=0 makes TSan check the ring's memmove copies too (by default it skips accesses inside memmove).
test-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	TSAN_OPTIONS=ignore_interceptors_accesses=0 $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan \
		--filter "SPSCRing|WakeSignal|ComputeGate|WorkerWake|concurrentGraphs|pushedAudio"

## fuzz: libFuzzer over the graph parser and the audio readers, FUZZ_SECONDS (300) each (scripts/fuzz.sh);
## inputs that add coverage, and any crash, are kept in Tests/Fuzz/ and become regression tests
fuzz: deps
	bash scripts/fuzz.sh

## bench: figures as 'name value unit', one per line (IRSTLM, Debian's irstlm, is the language-model builder's peer)
bench: DEB_PACKAGES += irstlm
bench: build $(VENV)/ok
	SHARED=$(SHARED) bash scripts/bench.sh

## docs: regenerate docs/nodes.md from the node descriptors
docs: build
	$(BIN) nodes --markdown > docs/nodes.md

clean:
	rm -rf .build .build-tsan out .venv

## venv: the Python peers the tests run beside speechgraph (PyPI's srt, webvtt-py and wyoming), in .venv; make bench
## adds PyPI's pocketsphinx for the Wyoming peer (Tests/Peers/bench-requirements.txt)
$(VENV)/ok: Tests/Peers/requirements.txt
	@mkdir -p $(dir $(INSTALL_LOG))
	@echo "make: installing the Python test peers (Tests/Peers/requirements.txt) in $(VENV); log: $(INSTALL_LOG)" >&2
	@{ python3 -m venv $(VENV) && $(VENV)/bin/pip install -r Tests/Peers/requirements.txt; } >>$(INSTALL_LOG) 2>&1 \
		|| { tail -n 20 $(INSTALL_LOG) >&2; echo "error: the Python venv failed (the whole log: $(INSTALL_LOG))" >&2; exit 1; }
	@touch $@
venv: $(VENV)/ok
