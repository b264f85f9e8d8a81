#!/usr/bin/env bash
# Generates the seed corpora fuzz/corpus/<target>/ from tests/data at run time (not committed; the few committed
# seeds, crash regressions among them, are in fuzz/seeds/<target>/). Needs RUSTC_BOOTSTRAP=1 on stable, as
# cargo fuzz does; .ci/fuzz sets it.
set -euo pipefail
cd "$(dirname "$0")/.."

flags=(-s none --debug-assertions)
dir=release
if [ "${FUZZ_PROFILE:-release}" = dev ]; then flags+=(--dev); dir=debug; fi
cargo fuzz build "${flags[@]}" seeds
host=$(rustc -vV | sed -n 's/^host: //p')
TOOLGATE_FUZZ_SEEDS=fuzz/corpus "fuzz/target/$host/$dir/seeds"
