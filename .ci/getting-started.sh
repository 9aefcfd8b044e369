#!/usr/bin/env bash
# The guide's Getting-started program, built and run as a new user would: its Cargo.toml and
# src/main.rs are cut out of docs/src/getting-started.md (so what is tested is exactly what the
# guide shows), written into a fresh crate in a temporary directory that depends on this checkout
# by path, and run with `cargo run --release` in its own target directory with no RUSTFLAGS: the
# flags a dependent's build gets, not this repository's .cargo/config.toml.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
chapter="$repo/docs/src/getting-started.md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The text of the first fenced block whose opening line is exactly "```$1" and, when $2 is
# given, whose first line of code is $2.
block() {
    awk -v fence="\`\`\`$1" -v first="${2:-}" '
        !inside && $0 == fence { inside = 1; n = 0; next }
        inside && /^```/ { if (!done && (first == "" || lines[1] == first)) { for (i = 1; i <= n; i++) print lines[i]; done = 1 } inside = 0; next }
        inside { lines[++n] = $0 }
    ' "$chapter"
}

mkdir -p "$work/falling-balls/src"
block toml | sed "s|path = \"../freyr\"|path = \"$repo\"|" >"$work/falling-balls/Cargo.toml"
block rust "// src/main.rs" >"$work/falling-balls/src/main.rs"
grep -q "path = \"$repo\"" "$work/falling-balls/Cargo.toml" ||
    { echo "getting-started.md's Cargo.toml no longer has freyr = { path = \"../freyr\" }" >&2; exit 1; }
grep -q "fn main()" "$work/falling-balls/src/main.rs" ||
    { echo "getting-started.md has no rust block starting with // src/main.rs" >&2; exit 1; }

cd "$work/falling-balls"
env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u CARGO_BUILD_RUSTFLAGS \
    CARGO_TARGET_DIR="$work/target" cargo run --release 2>&1 | tee "$work/out.txt"
grep -q "balls have landed" "$work/out.txt"
grep -q "world hash 0x" "$work/out.txt"
