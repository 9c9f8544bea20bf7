#!/bin/sh
# Install, idempotently, what builds and tests need. Safe to run every time:
# each step checks first, so a prepared machine pays a few milliseconds.
set -eu
log() { printf 'setup: %s\n' "$*" >&2; }

need_rust_target() { # toolchain target
    rustup target list --toolchain "$1" --installed 2>/dev/null | grep -qx "$2" ||
        { log "rustup target add --toolchain $1 $2"; rustup target add --toolchain "$1" "$2" >&2; }
}

what=${1:-base}
case $what in
base)
    need_rust_target stable x86_64-unknown-linux-musl ;;
tiny)
    need_rust_target stable x86_64-unknown-linux-musl
    rustup toolchain list | grep -q '^nightly' || { log "rustup toolchain install nightly"; rustup toolchain install nightly --profile minimal >&2; }
    need_rust_target nightly x86_64-unknown-linux-musl
    rustup component list --toolchain nightly --installed | grep -q '^rust-src' ||
        { log "rustup component add rust-src"; rustup component add rust-src --toolchain nightly >&2; } ;;
cross)
    for t in aarch64-unknown-linux-musl i686-unknown-linux-musl riscv64gc-unknown-linux-gnu; do
        need_rust_target stable "$t"
    done ;;
fuzz)
    # cargo fuzz (tests/fuzz): libFuzzer's coverage flags want nightly.
    # Pinned: a new cargo-fuzz may change flags or the layout it expects.
    rustup toolchain list | grep -q '^nightly' || { log "rustup toolchain install nightly"; rustup toolchain install nightly --profile minimal >&2; }
    cargo fuzz --version 2>/dev/null | grep -qx 'cargo-fuzz 0.13.2' ||
        { log "cargo install cargo-fuzz 0.13.2"; cargo install cargo-fuzz --version 0.13.2 --locked >&2; } ;;
esac

# Debian packages: the trace-cmd oracle, qemu-user for cross tests, `file`.
pkgs=""
command -v trace-cmd >/dev/null 2>&1 || pkgs="$pkgs trace-cmd"
command -v file >/dev/null 2>&1 || pkgs="$pkgs file"
# llvm-objcopy strips the section headers from the release binary (see Makefile).
command -v llvm-objcopy >/dev/null 2>&1 || pkgs="$pkgs llvm"
if [ "$what" = cross ] || [ "$what" = test ]; then
    command -v qemu-aarch64-static >/dev/null 2>&1 || pkgs="$pkgs qemu-user-static"
fi
# riscv64 has no musl target here: static glibc, linked by the cross gcc.
if [ "$what" = cross ]; then
    command -v riscv64-linux-gnu-gcc >/dev/null 2>&1 || pkgs="$pkgs gcc-riscv64-linux-gnu libc6-dev-riscv64-cross"
fi
if [ -n "$pkgs" ] && command -v apt-get >/dev/null 2>&1; then
    log "apt-get install$pkgs"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || true
    # shellcheck disable=SC2086
    apt-get install -y -qq $pkgs >&2
fi

# Python packages the exporter tests read their output with (tests/export):
# Perfetto's generated protobuf bindings, and DuckDB. Pinned: the versions
# the checkers were written against.
PY_PKGS="perfetto==0.59.1 protobuf==7.36.2 duckdb==2.0.1"
if [ "$what" = test ] || [ "$what" = python ]; then
    py=${PYTHON:-python3}
    if ! "$py" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2, duckdb' 2>/dev/null; then
        command -v "$py" >/dev/null 2>&1 || pkgs_py="python3 python3-pip"
        if [ -n "${pkgs_py:-}" ] && command -v apt-get >/dev/null 2>&1; then
            log "apt-get install $pkgs_py"
            apt-get install -y -qq $pkgs_py >&2
        fi
        log "pip install $PY_PKGS"
        # Debian's own python3 refuses pip installs outside a venv
        # (PEP 668) unless told to.
        "$py" -m pip install -q $PY_PKGS >&2 ||
            "$py" -m pip install -q --break-system-packages $PY_PKGS >&2
    fi
fi
