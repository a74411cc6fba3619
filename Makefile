# hadeploy — the two commands a newcomer needs:
#   make demo   the main job on the built-in default (the virtual device matrix)
#   make test   every test, lint included
SHELL := /bin/bash
UNAME := $(shell uname -s)
# macOS: the Swift of Xcode 26 or later (Swift 6.2, the dependencies' floor). With xcode-select on an
# older Xcode (13.2.1 kept for armv7 builds), XCODE_MODERN=/Applications/Xcode-26.app (or
# DEVELOPER_DIR) names the one to build with; scripts/bootstrap.sh stops with that hint otherwise.
ifeq ($(UNAME),Darwin)
ifneq ($(XCODE_MODERN),)
export DEVELOPER_DIR ?= $(XCODE_MODERN)/Contents/Developer
endif
endif
SWIFT ?= swift
BIN = $(shell $(SWIFT) build --show-bin-path 2>/dev/null)/hadeploy
PREFIX ?= /usr/local
# The release build, compiled once for everything: release mode with testable imports, so `make test`
# runs its suites on the very objects that ship. The shipped binary (`make release`, `install`,
# `dist`) is those objects linked again with the Swift runtime and Foundation inside
# (scripts/link-static.py: SwiftPM's own link command plus the static runtime; stripped), so it
# needs only the Debian libraries of libimobiledevice, libssh, OpenSSL, libpng and libtiff
# (scripts/dist.sh).
# macOS: the system's Swift runtime and Homebrew's libraries, loaded from Homebrew's prefix (the
# binary needs those formulae where it runs; scripts/link-static.py copies it as it is).
RELEASE_BUILD = -c release -Xswiftc -enable-testing --scratch-path .build-release
# Swift Testing starts every test of a suite at once unless told otherwise; the twins, SSH servers and
# Home Assistant many suites start then share two cores with the suite's own process, and a twin in
# that process answers only when Swift's two pool threads get to it (libusbmuxd gives up after 5 s).
# At most 6 tests of a suite run at a time (Swift 6.3's own limit, set by this variable): the suites
# took as long as without it (EndToEnd 172 s vs 175/184, SSHTransport 94 vs 89–100, VirtualDevice
# 106 vs 108; BENCHMARKS §14), and each test's deadlines are kept by a less crowded process.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH ?= 6
RELEASE_BIN = .build-release/release/hadeploy-$(if $(filter Darwin,$(UNAME)),dynamic,static)

.PHONY: check test-mac test-suites test-root test-root-here test-brew-gen peers-user all deps peers peers-demo build demo check-fresh test lint lint-workflows format bench clean release install dist test-install

all: build

deps:
	@SWIFT="$(SWIFT)" scripts/bootstrap.sh

peers:
	@scripts/system-peers.sh
	@$(MAKE) --no-print-directory peers-user

# The peers an ordinary user installs: pinned Python venvs (pip), the Home Assistant peer; the
# system's part (apt, the SSH login account, Chromium) is scripts/system-peers.sh.
peers-user:
	@for s in scripts/tools-venv.sh scripts/workflow-lint-venv.sh scripts/pmd3-venv.sh scripts/ha-peer.sh scripts/idevice-tools.sh; do \
	  [ -x $$s ] || { echo "make peers: $$s is missing or not executable" >&2; exit 1; }; \
	  case $$s in *ha-peer.sh) $$s install ;; *) $$s ;; esac || exit 1; done

# Everything `make demo` uses and nothing else, on a fresh machine (apt-get as root, through sudo
# otherwise): the build dependencies (the USB/Wi-Fi twins are in-process), the jailbroken iPad twin's
# packages (OpenSSH server, python3, openssl, util-linux) and the Home Assistant venv the demo starts
# on loopback (scripts/ha-peer.sh; not when HA_SERVER and HA_TOKEN name one). What it installs is
# listed in scripts/bootstrap.sh (demo_packages) and scripts/demo.sh --peers: pymobiledevice3 for the
# iOS 17 twins goes there when the demo uses it.
peers-demo:
	@scripts/demo.sh --peers

build: deps
	$(SWIFT) build

demo: peers-demo build
	scripts/demo.sh $(BIN) all --kiosk --virtual --report report --allow-shallow

# The wall iPads as Wi-Fi devices only, as Linux sees them: no usbmuxd lists the twins, each announces
# itself over mDNS, hadeploy's own usbmuxd finds and reaches them (README, "Wi-Fi devices").
demo-wifi: peers-demo build
	scripts/demo.sh $(BIN) mini4 iphone mini5 --kiosk --virtual --wifi-only --report report-wifi --allow-shallow

# `make demo` as a newcomer runs it: a clone of HEAD with a fresh HOME (no caches, no venvs), its own
# build; checks that the Wi-Fi and jailbroken twins end verified (scripts/check-fresh.sh; ~15 minutes).
check-fresh:
	scripts/check-fresh.sh

# Each test target runs in its own process: libimobiledevice 1.3.0 select()s on its sockets and
# aborts on a descriptor above 1023, which one process running every suite at once can reach.
TEST_TARGETS_LIBRARY = HADeployCoreTests VersioningTests TemplatingTests DeviceSpecTests ImageCodecTests HADeployKitTests \
  VirtualDeviceTests PyMobileDevice3FidelityTests MobileDeviceTests SSHSessionTests MQTTTests HostCryptoTests
TEST_TARGETS_BINARY = CLITests SSHTransportTests HomeAssistantTests EndToEndTests
TEST_TARGETS = $(TEST_TARGETS_LIBRARY) $(TEST_TARGETS_BINARY)


# `make test`: what the system lacks first (apt-get as root, sudo otherwise, only what is missing:
# scripts/system-peers.sh), then every suite as an ordinary user — started as root (CI), as the account
# hadeploy-test on a copy of this tree (scripts/test-as-user.sh) — and last the few tests that need
# root, as root (`make test-root`, each with why).
test:
	@if [ "$(UNAME)" = Darwin ]; then echo "make test runs on Linux only (its peers are Debian packages: sshd, dropbear, the libimobiledevice tools, the jailbroken twin's namespaces); on a Mac: make test-mac" >&2; exit 1; fi
	@scripts/system-peers.sh
	@if [ "$$(id -u)" -eq 0 ]; then scripts/test-as-user.sh; else \
	  status=0; $(MAKE) --no-print-directory test-suites || status=1; \
	  $(MAKE) --no-print-directory test-root || status=1; exit $$status; fi

# On a Mac: the build with its tests, then the suites that need no Linux-only peer (no sshd,
# dropbear, Debian libimobiledevice tools, /proc or namespaces), each in its own process, and the lint
# scripts that need no venv. .github/workflows/ci.yml runs this on macOS.
# ContactSheetTests renders the report with chromium (a Debian package); skipped when it is not there.
MAC_SUITES = HADeployCoreTests VersioningTests TemplatingTests DeviceSpecTests ImageCodecTests HostCryptoTests \
  HADeployKitTests
# The C-facing suites (libimobiledevice, libusbmuxd, OpenSSL: Homebrew's generation on a Mac) that need
# no Debian tool, no sshd and no Python peer: against the in-process twins and files only.
MAC_C_TESTS = AppArtifactTests|DebugServerLauncherTests|DeveloperImageLocatorTests|DeviceWorkerTests|ErrorMessageTests|GDBPacketTests|HostileArtifactTests|HouseArrestTests|IPAArchiveTests|InstallRecordLimitTests|LockdownProbeTests|MachOEntitlementsTests|MachOSlicesTests|NetworkAddressShimTests|NetworkDeviceTests|PairRecordFolderTests|ProvisioningArtifactTests|RelayFolderTests
test-mac:
	$(SWIFT) build --build-tests
	@scripts/tools-venv.sh
	@skips=""; command -v chromium > /dev/null || { skips="--skip ContactSheetTests"; echo "no chromium: ContactSheetTests skipped"; }; \
	  failed=""; for t in $(MAC_SUITES); do echo "=== $$t"; \
	  $(SWIFT) test --skip-build --filter "^$$t\\." $$skips || failed="$$failed $$t"; done; \
	  echo "=== MobileDeviceTests (the C-facing suites that need no Linux peer)"; \
	  $(SWIFT) test --skip-build --filter "^MobileDeviceTests\\.($(MAC_C_TESTS))" || failed="$$failed MobileDeviceTests"; \
	  scripts/platform-lint.sh || failed="$$failed platform-lint"; \
	  scripts/side-effects-lint.sh || failed="$$failed side-effects-lint"; \
	  if [ -n "$$failed" ]; then echo "FAILED:$$failed"; exit 1; fi; echo "the Mac suites passed"

# `make check`: the inner loop — the format lint, the import, side-effect and platform lints, and the
# suites that need no peer (the Mac suites but ContactSheetTests, which renders with chromium) on the
# release build `make test` uses (built, or brought up to date, first). About 2 minutes after a build
# on 2 cores (BENCHMARKS.md); `make test` is still what says a change is done.
check:
	$(SWIFT) build $(RELEASE_BUILD) --build-tests
	$(SWIFT) format lint --strict --recursive --parallel Sources Tests Benchmarks Package.swift
	SWIFT=$(SWIFT) scripts/check-imports.sh
	@scripts/side-effects-lint.sh
	@scripts/platform-lint.sh
	@failed=""; skips="--skip ContactSheetTests"; suites="$(MAC_SUITES)"; $(RUN_SUITES); \
	  if [ -n "$$failed" ]; then echo "FAILED:$$failed"; exit 1; fi; echo "make check passed"

# Tests that need root, and why (one line each). They run as root after the others (through `sudo -n`
# for an ordinary user; without it they fail, never skip). Everything else runs unprivileged.
#   SSHTransportTests, SSHSessionTests: the real sshd and dropbear log in the system account
#     hadeploy-ssh (privilege separation, its password in /etc/shadow, client keys in the root-only
#     /var/lib/hadeploy-ssh-test). SSHSessionTests also runs against brew-gen (libssh 0.11) here.
#   TwinConfinementTests: another local account (nobody) attacks the iOS 17 twin's tunnel and muxer
#     socket through pymobiledevice3; becoming that account takes root.
#   anUnusableReportFolderIsFoundBeforeAnyDevice: fills a disk by mounting a 64 KiB tmpfs (mount).
#   AnotherUsersUsbmuxdTests: another local account (nobody) serves a usbmuxd socket hadeploy must
#     refuse; becoming that account takes root.
ROOT_SUITES = SSHTransportTests SSHSessionTests
ROOT_TESTS = TwinConfinementTests anUnusableReportFolderIsFoundBeforeAnyDevice AnotherUsersUsbmuxdTests
ROOT_SKIPS = $(foreach t,$(ROOT_TESTS),--skip $(t))

# What users install is what is tested, built once: the release build with its tests, then the
# `make dist` archive linked from those same objects; every suite that runs `hadeploy` runs that
# archive's static binary (HADEPLOY_DIST_ARCHIVE; EndToEndTests.ReleaseArchiveTests fails when it
# is not the archive's). The user-level peers (pip venvs, mostly downloads) install while the build
# runs, and the suites wait for it. The second build, of the C-facing suites against brew-gen (`make
# test-brew-gen`), starts once the release build is done and runs beside the suites at idle priority
# (SCHED_IDLE: it gets only the CPU time the suites leave; beside the release build even at nice 19 it
# made that build take 914 s instead of ~490 on two vCPUs); its suites run after the others.
# Runs the suites named in $$suites one after another, each with its wall time and its output kept in
# .build-release/logs/<suite>.log; a failed one is added to $$failed and its failing tests (and the
# log's last lines, for a crash) are printed again after it, so the end of the output says what failed.
RUN_SUITES = mkdir -p .build-release/logs; for t in $$suites; do start=$$(date +%s); echo "=== $$t"; \
  log=.build-release/logs/$$t.log; \
  $(SWIFT) test $(RELEASE_BUILD) --skip-build --filter "^$$t\\." $$skips 2>&1 | tee "$$log"; \
  if [ "$${PIPESTATUS[0]}" -ne 0 ]; then failed="$$failed $$t"; echo "=== $$t FAILED; its failures:"; \
    grep -aE '✘|error:|Fatal error|signal [0-9]|Test Case .* failed' "$$log" | head -40; \
    echo "--- the log's last lines ($$log):"; tail -n 15 "$$log"; fi; \
  echo "=== $$t: $$(( $$(date +%s) - start )) s"; done
test-suites:
	@echo "=== the suites run as $$(id -un) (uid $$(id -u))"
	@mkdir -p .build-release; rm -rf .build-release/logs; ( $(MAKE) -s --no-print-directory peers-user > .build-release/peers.out 2>&1 ) & peers=$$!; \
	  start=$$(date +%s); $(SWIFT) build $(RELEASE_BUILD) --build-tests || { wait $$peers; exit 1; }; \
	  echo "=== release build with tests: $$(( $$(date +%s) - start )) s"; \
	  $(MAKE) -s --no-print-directory dist > .build-release/dist.out 2>&1 || { cat .build-release/dist.out; echo "make dist failed" >&2; wait $$peers; exit 1; }; \
	  archive="$$PWD/$$(tail -1 .build-release/dist.out)"; [ -f "$$archive" ] || { cat .build-release/dist.out; wait $$peers; exit 1; }; \
	  export HADEPLOY_DIST_ARCHIVE="$$archive"; echo "binary under test: $$archive"; \
	  ( SUITES=MobileDeviceTests BREW_GEN_BUILD_ONLY=1 SWIFT=$(SWIFT) chrt --idle 0 nice -n 19 scripts/brew-gen-test.sh > .build-release/brew-gen-build.out 2>&1 ) & brewgen=$$!; \
	  start=$$(date +%s); wait $$peers || { kill $$brewgen 2> /dev/null; cat .build-release/peers.out; echo "make peers failed" >&2; exit 1; }; \
	  echo "=== waited $$(( $$(date +%s) - start )) s for the peers"; \
	  failed=""; skips="$(ROOT_SKIPS)"; suites="$(filter-out $(ROOT_SUITES),$(TEST_TARGETS))"; $(RUN_SUITES); \
	  MAC_SUITES="$(MAC_SUITES)" MAC_C_TESTS="$(MAC_C_TESTS)" SWIFT=$(SWIFT) scripts/mac-tmpdir-suites.sh || failed="$$failed mac-tmpdir"; \
	  $(MAKE) --no-print-directory lint || failed="$$failed lint"; \
	  start=$$(date +%s); wait $$brewgen || true; echo "=== waited $$(( $$(date +%s) - start )) s for the brew-gen build ($$(grep -a '=== build against brew-gen' .build-release/brew-gen-build.out || echo 'it failed: built again below'))"; \
	  SUITES=MobileDeviceTests $(MAKE) --no-print-directory test-brew-gen || failed="$$failed test-brew-gen"; \
	  $(MAKE) --no-print-directory test-install || failed="$$failed test-install"; \
	  if [ -n "$$failed" ]; then echo "FAILED:$$failed"; exit 1; fi; echo "all unprivileged test targets passed"

# The tests of ROOT_SUITES and ROOT_TESTS, as root, on the build test-suites made (through sudo, the
# build folders are given back to the user who ran it).
# Not root: the same make, through sudo, once — with this user's PATH (sudo's secure_path has no
# swiftly or swift.org toolchain) and the very swift the user's build used; the recipe below then runs
# only as root, never again as the user.
test-root:
	@if [ "$$(id -u)" -eq 0 ]; then exec $(MAKE) --no-print-directory test-root-here; fi; \
	  if ! sudo -n true 2> /dev/null; then \
	    echo "make test-root: $(ROOT_SUITES) $(ROOT_TESTS) need root (see the Makefile) and sudo asks for a password: run sudo make test-root" >&2; exit 1; fi; \
	  swift="$$(command -v $(SWIFT))" || { echo "make test-root: $(SWIFT) is not on PATH" >&2; exit 1; }; \
	  exec sudo -n env "PATH=$$PATH" $(MAKE) --no-print-directory test-root-here "SWIFT=$$swift"

test-root-here:
	@[ "$$(id -u)" -eq 0 ] || { echo "make test-root-here: run as root (make test-root does)" >&2; exit 1; }
	@archive="$$PWD/$$(tail -1 .build-release/dist.out)"; export HADEPLOY_DIST_ARCHIVE="$$archive"; \
	  echo "=== as root: $(ROOT_SUITES) $(ROOT_TESTS)"; failed=""; skips=""; \
	  suites="$(ROOT_SUITES)"; $(RUN_SUITES); \
	  for t in $(ROOT_TESTS); do start=$$(date +%s); echo "=== $$t"; log=.build-release/logs/$$t.log; \
	    $(SWIFT) test $(RELEASE_BUILD) --skip-build --filter "$$t" 2>&1 | tee "$$log"; \
	    if [ "$${PIPESTATUS[0]}" -ne 0 ]; then failed="$$failed $$t"; grep -aE '✘|error:|Fatal error' "$$log" | head -40; fi; \
	    echo "=== $$t: $$(( $$(date +%s) - start )) s"; done; \
	  SUITES=SSHSessionTests $(MAKE) --no-print-directory test-brew-gen || failed="$$failed SSHSessionTests(brew-gen)"; \
	  if [ -n "$${SUDO_UID:-}" ]; then chown -R "$$SUDO_UID:$$SUDO_GID" .build-release .build-brew-gen 2> /dev/null || true; fi; \
	  if [ -n "$$failed" ]; then echo "FAILED (as root):$$failed"; exit 1; fi; echo "all root test targets passed"

# `make test` runs MobileDeviceTests (unprivileged) and SSHSessionTests (libssh's side, as root in
# test-root) this way, on a build of those suites alone; `make test-brew-gen` (as root) builds the
# whole package and adds SSHTransportTests.
# The C-facing suites (MobileDeviceTests, SSHTransportTests) against the second generation of the C
# libraries, Homebrew's (libplist 2.7, libimobiledevice 1.4, libusbmuxd 2.1, libssh 0.11), vendored in
# compat/brew-gen: its own debug build in .build-brew-gen, checked with ldd (scripts/brew-gen-test.sh).
test-brew-gen:
	SWIFT=$(SWIFT) scripts/brew-gen-test.sh

# Benchmarks (BENCHMARKS.md), side by side with the peer tools; minutes, not part of `make test`.
bench: peers build
	scripts/bench-remote-build.py 7
	scripts/bench-virtual-install.sh 200
	scripts/bench-ha.py
	@echo "deploy fan-out and start-up need a release build:"
	@echo "  make release && scripts/bench-deploy.py"

release: deps
	$(SWIFT) build $(RELEASE_BUILD) --product hadeploy
	scripts/link-static.py .build-release $(RELEASE_BIN)

# make install PREFIX=~/.local — the binary, bash/zsh/fish completions and the man page.
install: release
	scripts/install.sh $(RELEASE_BIN) "$(DESTDIR)$(PREFIX)"

# dist/hadeploy-<version>-<linux|macos>-<arch>.tar.gz (prints its path last).
dist: release
	scripts/dist.sh $(RELEASE_BIN) dist

# make install and make dist, checked (one release build for both).
test-install:
	scripts/test-install.sh

lint: lint-workflows
	$(SWIFT) format lint --strict --recursive --parallel Sources Tests Benchmarks Package.swift
	SWIFT=$(SWIFT) scripts/check-imports.sh
	@scripts/side-effects-lint.sh
	@scripts/platform-lint.sh

# Every workflow template hadeploy ships, through the GitHub Actions security linter zizmor and the
# checker actionlint (both pinned in .venv-workflow-lint): no zizmor finding of medium or high
# severity, no ignore comment honoured, no actionlint error (syntax, expressions, contexts, runner
# labels: Templates/ci/actionlint.yaml names the self-hosted ones), and hadeploy's own CI
# (.github/workflows/ci.yml) the same way. WORKFLOWS=FILE checks another.
WORKFLOWS ?= Templates/ci/*.yml .github/workflows/*.yml
lint-workflows:
	@scripts/workflow-lint-venv.sh
	.venv-workflow-lint/bin/zizmor --offline --strict-collection --no-ignores --min-severity medium $(WORKFLOWS)
	.venv-workflow-lint/bin/actionlint -config-file Templates/ci/actionlint.yaml $(WORKFLOWS)

format:
	$(SWIFT) format --in-place --recursive --parallel Sources Tests Benchmarks Package.swift

clean:
	rm -rf .build .build-release dist Generated report .hadeploy
