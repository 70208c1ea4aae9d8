#!/bin/sh
# Build NIST's trec_eval 10.0 (usnistgov/trec_eval) into a cache directory, for the
# differential tests (tests/agreement/test_trec_eval_binary.py) and benchmarks/trec_eval_vs_pytrec_eval.py.
# Nothing is committed: the source is read from
#   $TREC_EVAL_SRC   a source directory, or a git directory/clone holding commit $TREC_EVAL_COMMIT,
# or else cloned from GitHub (needs the network). Prints the binary's path; exits 1, saying why,
# when no source can be had.
set -eu
COMMIT=${TREC_EVAL_COMMIT:-f425365}   # "Updating CHANGELOG for version 10.0"
CACHE=${SAMPLEVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sampleval}
BIN=$CACHE/trec_eval-10.0/trec_eval
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=${TREC_EVAL_SRC:-}
if [ -z "$src" ]; then
    if ! timeout 60 git clone --quiet https://github.com/usnistgov/trec_eval "$work/clone" \
            2>/dev/null; then
        echo "build_trec_eval: no source: set TREC_EVAL_SRC to trec_eval's source or a git" \
             "clone (github.com/usnistgov/trec_eval is unreachable)" >&2
        exit 1
    fi
    src=$work/clone
fi
if git --git-dir="$src" rev-parse --verify -q "$COMMIT^{commit}" >/dev/null 2>&1; then
    git --git-dir="$src" archive "$COMMIT" | tar -x -C "$work" -f - --one-top-level=tree
elif git -C "$src" rev-parse --verify -q "$COMMIT^{commit}" >/dev/null 2>&1; then
    git -C "$src" archive "$COMMIT" | tar -x -C "$work" -f - --one-top-level=tree
elif [ -f "$src/trec_eval.c" ]; then
    cp -R "$src" "$work/tree"
else
    echo "build_trec_eval: $src holds neither trec_eval's source nor commit $COMMIT" >&2
    exit 1
fi
make -s -C "$work/tree" trec_eval >"$work/make.log" 2>&1 || {
    cat "$work/make.log" >&2; echo "build_trec_eval: make failed" >&2; exit 1; }
mkdir -p "$(dirname "$BIN")"
cp "$work/tree/trec_eval" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
echo "$BIN"
