# ftbox — see README.md. `make demo` and `make test` are the two entry points;
# both install what they need through scripts/setup.sh.
CARGO   ?= cargo
OBJCOPY ?= llvm-objcopy
TARGET  := x86_64-unknown-linux-musl
BIN     := target/$(TARGET)/release/ftbox
TINY    := target/tiny/$(TARGET)/release/ftbox
APPLETS := ftcat ftctl ftrec
PREFIX  ?= /usr/local
CROSS_TARGETS := aarch64-unknown-linux-musl i686-unknown-linux-musl riscv64gc-unknown-linux-gnu

# Plain static executables, not static-pie: no run-time relocations to carry
# (measured: 29 KB smaller). Target-scoped so host builds are unaffected.
#
# The release binary does not link std (src/main.rs: no_std, no_main, an
# allocator of its own in src/sys/heap.rs, a panic handler; src/sys for the
# system calls): std's panic and backtrace machinery alone was 212 KB of
# the 730 KB binary, and stable Rust cannot leave it out while std is
# linked. A panic prints
# "ftbox: panicked at FILE:LINE:COL:", the message, and aborts (status 134).
#
# x86_64 also links without .eh_frame_hdr (no PT_GNU_EH_FRAME header) and
# without .eh_frame/.gcc_except_table (scripts/noeh.ld, NOEH_LD): with
# panic=abort nothing ever unwinds, so those tables are never read. Left
# out by the linker they take no room at all; objcopy removing them later
# left a hole of up to a page in the file before the code.
#
# After the link, `llvm-objcopy --strip-sections` (strip_sections below)
# drops the section header table and every section no segment loads (the
# linker's and compilers' version strings, .comment, and the section
# names): the kernel and musl's start-up read only the program headers.
# What goes: `readelf -S`, `objdump -d` and `size` on the shipped binary
# see no sections (`readelf -l` still shows the segments); the binary
# carries no symbols to find anyway (strip = true), and profiling uses a
# symbolized build of its own. GNU objcopy cannot remove the section
# headers, and lld's -z nosectionheader still leaves their room, zeroed.
#
# x86_64 links with rust-lld (shipped with rustup's rustc, as for the aarch64
# cross build): it lays the static binary out tighter than GNU ld (measured
# -7.5 KB). --icf=all folds functions that compiled to identical code (only
# -0.5 KB today, more as generic copies grow); sound for Rust, which makes
# no promise that distinct functions have distinct addresses (rustc's own
# merge-functions pass already merges them).
#
# LLVM's machine outliner (on by default for AArch64 -Oz in clang, opt-in on
# x86_64) moves repeated instruction sequences into shared functions, core
# and alloc included since fat LTO codegens them with our code; its known
# weak spot, CFI for outlined code, does not matter with no unwind tables.
# The board build (make tiny, below) uses it. This one does not: it also
# outlines pieces of hot loops (a call per hex digit of kallsyms), and
# without it ftcat decodes 25-40% faster, for 12 KB.
#
# LLVM's branch folding merges the identical tails of blocks from two
# instructions up rather than three, as in the board build (make tiny): a
# jump in place of a copy. The decode loops run the same instructions to
# within a few per million either way (cachegrind), so the bytes are free.
#
# Panic messages name the source file; for the crates from the registry
# that was the full path under $$CARGO_HOME, the builder's home directory
# and the registry index's name included. The remap leaves the path from
# the crate's own directory on, as ours is: "ruzstd-0.9.1/src/...".
# On a fresh machine the registry is still empty when make reads this:
# fetch the crates first, or the first build (a newcomer's, CI's) keeps
# the full paths and is larger than every later one. (`ls`, not
# $(wildcard): make caches what a directory held when first asked.)
CARGO_HOME ?= $(HOME)/.cargo
REGISTRY_SRC := $(shell ls -d $(CARGO_HOME)/registry/src/*/ 2>/dev/null)
ifeq ($(REGISTRY_SRC),)
REGISTRY_SRC := $(shell $(CARGO) fetch --locked >&2 && ls -d $(CARGO_HOME)/registry/src/*/ 2>/dev/null)
endif
REMAP := $(foreach d,$(REGISTRY_SRC),--remap-path-prefix=$(d:/=)/=)
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER := rust-lld
NOEH_LD := $(CURDIR)/scripts/noeh.ld
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS := -C relocation-model=static -C link-arg=--no-eh-frame-hdr -C link-arg=--icf=all -C link-arg=$(NOEH_LD) -C llvm-args=-tail-merge-size=2 $(REMAP)
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS := -C relocation-model=static $(REMAP)
export CARGO_TARGET_I686_UNKNOWN_LINUX_MUSL_RUSTFLAGS := -C relocation-model=static $(REMAP)

.PHONY: FORCE all build bin-check full test test-quick test-cross unit demo tiny cross size install clean setup vmtest strip-sections
all: build
FORCE:

setup:
	@sh scripts/setup.sh base

build: $(BIN) bin/.links

# Always asked of cargo (a no-op when nothing changed): a `cargo test
# --release --target $(TARGET)` run by hand (make test builds apart, in
# target/test) relinks this same file without the objcopy, and a
# timestamp rule would then leave that larger binary for `make size`.
$(BIN): FORCE
	@sh scripts/setup.sh base
	$(CARGO) build --release --target $(TARGET)
	$(call strip_sections,$(BIN))

# Strip the section headers from $(1) in a copy beside it, renamed over it:
# a program running from the binary (a recording under ./bin/ftrec) keeps
# its old inode, where objcopy writing the file in place fails with "Text
# file busy". `make strip-sections FILE=...` runs the step alone (tests/cli.rs).
strip_sections = $(OBJCOPY) --strip-sections $(1) $(1).stripped && mv -f $(1).stripped $(1)
strip-sections:
	$(call strip_sections,$(FILE))

# The default build and `ftrec --compression zstd` (feature zstd-write: 44 KB
# more than the default build's budget). The tests build with it too
# (target/test), and the tests that write zstd run that test build's binary.
FULL := target/full/$(TARGET)/release/ftbox
full:
	@sh scripts/setup.sh base
	$(CARGO) build --release --target $(TARGET) --target-dir target/full --features zstd-write
	$(call strip_sections,$(FULL))

bin/.links: $(BIN)
	@mkdir -p bin
	@for a in $(APPLETS); do ln -sf ../$(BIN) bin/$$a; done
	@touch $@

# What the shipped binary must be, checked before its tests run.
bin-check: build
	@file $(BIN) | grep -q 'statically linked' || { echo "$(BIN) is not static"; file $(BIN); exit 1; }
	@# One `&s[a..b]` on a str links core's string-slicing panic and its
	@# message formatting (about 8 KB): src uses get/split_once/split_at_checked
	@# or util::split_str instead, and this says so before the size budget does.
	@! grep -q 'is not a char boundary' $(BIN) || { echo "$(BIN): a str range index brought back core's string-slicing panic (use get, split_once or util::split_str)"; exit 1; }

test: bin-check
	@sh scripts/setup.sh test
	@# The decoding core alone (core + alloc, no I/O): it builds, and its
	@# tests decode whole recordings in-process (src/decode/tests.rs).
	$(CARGO) test --lib --no-default-features --quiet --target-dir target/core
	@# The tests build apart (target/test) and keep .eh_frame_hdr, which the
	@# shipped binary leaves out: without it a failed assert cannot unwind
	@# and the test binary aborts ("failed to initiate panic") before saying
	@# which test failed and why.
	FTBOX_BIN=$(CURDIR)/$(BIN) CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C relocation-model=static" \
		$(CARGO) test --release --target $(TARGET) --target-dir target/test --features zstd-write --no-fail-fast -- --test-threads=2
	@$(MAKE) --no-print-directory test-cross
	@$(MAKE) --no-print-directory fuzz-smoke
	@# The VM lab boots two Debian kernels under TCG (about 7 min): in CI
	@# always, elsewhere with VMTEST=1.
	@if [ "$${CI:-}" = true ] || [ "$${VMTEST:-}" = 1 ]; then $(MAKE) --no-print-directory vmtest; else echo "vmtest: not run (CI=true or VMTEST=1 runs it)"; fi

# The unit, fixture and CLI tests without the live ones (tests/*_live.rs and
# every test that honours FTBOX_NO_LIVE=1) and without the cross targets: a
# quick check that leaves tracefs alone, so several work trees can run it at
# once on one machine.
QUICK_TESTS = $(foreach f,$(wildcard tests/*.rs),$(if $(filter %_live,$(basename $(notdir $(f)))),,--test $(basename $(notdir $(f)))))
test-quick: bin-check
	FTBOX_NO_LIVE=1 FTBOX_BIN=$(CURDIR)/$(BIN) CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C relocation-model=static" \
		$(CARGO) test --release --target $(TARGET) --target-dir target/test --features zstd-write --no-fail-fast --lib --bins $(QUICK_TESTS) -- --test-threads=2

# Function tracers, kprobes and the rescue-shell use on real Debian kernels
# under QEMU (this host refuses function tracing): see scripts/vmtest.sh.
vmtest: build
	FTBOX_BIN=$(CURDIR)/$(BIN) sh scripts/vmtest.sh

# The same tests for every cross target, under qemu-user (scripts/test-cross.sh).
test-cross:
	@sh scripts/setup.sh cross
	sh scripts/test-cross.sh $(CROSS_TARGETS)

# About a second of scheduler events, recorded in a private instance (the
# top level is left alone) and printed back with ftcat.
DEMO_DAT ?= trace.dat
demo: build
	@mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
	./bin/ftrec --private -e sched -d 1 -o $(DEMO_DAT)
	./bin/ftcat $(DEMO_DAT)

# Nightly rebuilds core and alloc (all the binary uses: no std, see above)
# for size, at opt-level z like the default build, with panics that trap at once: no message formatting, no
# location strings, no landing pads (so the _Unwind_Resume stubs of
# src/main.rs go unused). Also: no unwind tables at all (nothing unwinds),
# `{:?}` prints nothing (non-test code must not use it for output; it does
# not), and alloc's size-optimized paths (e.g. small sorts). The issue
# asked for -Zbuild-std=std,panic_abort: with no std in the binary,
# core,alloc is that build minus what would go unused. LLVM's branch
# folding merges the identical tails of blocks from two instructions up,
# not three: a jump in place of a copy, for a build that puts size first.
TINYFLAGS := -Zunstable-options -Cpanic=immediate-abort -Crelocation-model=static \
	-Cforce-unwind-tables=no -Zlocation-detail=none -Zfmt-debug=none -Clinker=rust-lld -Clink-arg=--no-eh-frame-hdr -Clink-arg=--icf=all -Clink-arg=$(NOEH_LD) \
	-Cllvm-args=-enable-machine-outliner=always -Cllvm-args=-tail-merge-size=2
tiny:
	@sh scripts/setup.sh tiny
	RUSTFLAGS="$(TINYFLAGS)" CARGO_PROFILE_RELEASE_OPT_LEVEL=z \
	$(CARGO) +nightly build --release --target $(TARGET) --target-dir target/tiny \
		-Zbuild-std=core,alloc -Zbuild-std-features=optimize_for_size --no-default-features --features cli
	$(call strip_sections,$(TINY))

cross:
	@sh scripts/setup.sh cross
	CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld \
	CARGO_TARGET_RISCV64GC_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static" \
	CARGO_TARGET_RISCV64GC_UNKNOWN_LINUX_GNU_LINKER=$${RISCV_LINKER:-riscv64-linux-gnu-gcc} \
	sh -c 'for t in $(CROSS_TARGETS); do $(CARGO) build --release --target $$t || exit 1; done'

size:
	@for f in $(BIN) $(TINY) $(FULL) $(foreach t,$(CROSS_TARGETS),target/$(t)/release/ftbox); do \
		[ -f $$f ] && printf '%8d  %s\n' $$(stat -c %s $$f) $$f || printf '%8s  %s\n' - "$$f (not built)"; \
	done; true

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/ftbox
	$(DESTDIR)$(PREFIX)/bin/ftbox --install -s $(DESTDIR)$(PREFIX)/bin

clean:
	$(CARGO) clean
	rm -rf bin

# Coverage-guided fuzzing (tests/fuzz, cargo fuzz + libFuzzer, nightly):
# every target FUZZ_SECONDS in turn, corpora kept in target/fuzz. The
# smoke run (make test) gives each 3 s: a target that no longer builds, or
# crashes on its seeds, fails the test (tests/fuzz/README.md: CI cost).
FUZZ_SECONDS ?= 60
FUZZ_REPRO ?= fixtures/hostile
.PHONY: fuzz fuzz-smoke
fuzz:
	@sh scripts/setup.sh fuzz
	FUZZ_REPRO=$(FUZZ_REPRO) sh tests/fuzz/run.sh $(FUZZ_SECONDS)
fuzz-smoke:
	@sh scripts/setup.sh fuzz
	@# A 1 s timeout flags loaded machines, not hangs, in a 3 s run.
	FUZZ_TIMEOUT=10 sh tests/fuzz/run.sh 3
