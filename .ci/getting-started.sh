#!/usr/bin/env bash
# The guide's Getting-started program, built and run as a new user would: its Cargo.toml and
# src/main.rs are cut out of docs/src/getting-started.md (so what is tested is exactly what the
# guide shows), written into a fresh crate in a temporary directory that depends on this checkout
# by path, and run with `cargo run --release` in its own target directory with no RUSTFLAGS: the
# flags a dependent's build gets (this repository has no .cargo/config.toml either).
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

# Ordinary code beside Freyr: inference through `Sum` must not depend on what Freyr's
# dependencies implement. A default dependency with impls such as serde_json's
# `impl PartialEq<Value> for u64` makes `assert_eq!(total, xs.iter().sum())` ambiguous (E0283)
# the moment Freyr is added; this binary fails to build if one comes back.
mkdir -p "$work/falling-balls/src/bin"
cat >"$work/falling-balls/src/bin/inference.rs" <<'RUST'
use freyr::prelude::*;

struct Score(u64);

fn main() {
    let xs = [1u64, 2, 3];
    let total: u64 = 6;
    assert_eq!(total, xs.iter().sum());
    let mut registry = Registry::with_workers(2);
    registry.spawn_batch(xs.iter().map(|&x| (Score(x),)));
    let mut scores = Vec::new();
    registry.query::<&Score>().each(|_, s| scores.push(s.0));
    assert_eq!(total, scores.iter().sum());
    assert_eq!(registry.len() as u64, xs.iter().map(|_| 1).sum());
    println!("sums infer beside freyr");
}
RUST

cd "$work/falling-balls"
run() {
    env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u CARGO_BUILD_RUSTFLAGS \
        CARGO_TARGET_DIR="$work/target" cargo run --release "$@"
}
run --bin falling-balls 2>&1 | tee "$work/out.txt"
grep -q "balls have landed" "$work/out.txt"
grep -q "world hash 0x" "$work/out.txt"
run --bin inference 2>&1 | tee "$work/inference.txt"
grep -q "sums infer beside freyr" "$work/inference.txt"
