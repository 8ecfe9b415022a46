#!/usr/bin/env bash
# CI smoke: every example under every cleanup strategy, in text and JSON, with
# --check-leaks; fails on any error. Usage: scripts/smoke.sh [GRAPHRUN_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/graphrun}
fails=0
runs=0
for f in scripts/examples/*.graph scripts/examples/*.json; do
    for cleanup in background safepoint close; do
        for format in text json; do
            runs=$((runs + 1))
            if ! out=$("$bin" run "$f" --cleanup="$cleanup" --format="$format" --check-leaks --iterations=2 2>/tmp/smoke.err.$$); then
                echo "FAIL $f --cleanup=$cleanup --format=$format" >&2
                cat /tmp/smoke.err.$$ >&2
                fails=$((fails + 1))
                continue
            fi
            if [ "$format" = json ] && ! printf '%s\n' "$out" | python3 -c '
import json, sys
doc = json.loads(sys.stdin.read())
after = doc["memory"]["after_teardown"]
for dev, s in after.items():
    assert s["in_use"] == s["pending"] == s["reserved"] == s["live"] == 0, (dev, s)
    assert s["allocs"] == s["frees"], (dev, s)
assert "error" not in doc, doc.get("error")
'; then
                echo "FAIL $f --cleanup=$cleanup --format=json: bad JSON document" >&2
                fails=$((fails + 1))
            fi
        done
    done
done
rm -f /tmp/smoke.err.$$
echo "smoke: $((runs - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
