#!/usr/bin/env bash
# STR-06 on a deployed stack: does the chat URL really stream? Asks for a long answer and checks the
# response is text/event-stream, starts with meta and ends with done, its first byte came within 2 s while
# the whole took at least 10 s, and it stayed under 6 MB. Works behind CloudFront OAC (the key in
# X-Docmind-Authorization, the body's SHA-256 in x-amz-content-sha256) and on a NONE URL.
#   usage: infra/smoke-stream.sh CHAT_URL KEY ["question"]
set -euo pipefail
url=${1:?usage: $0 CHAT_URL KEY [question]}
key=${2:?usage: $0 CHAT_URL KEY [question]}
question=${3:-"Summarise every policy in the knowledge base, section by section, in as much detail as the documents give."}
body=$(printf '{"question":%s}' "$(printf %s "$question" | python3 -c 'import json,sys;print(json.dumps(sys.stdin.read()))')")
sha=$(printf %s "$body" | sha256sum | cut -d' ' -f1)
out=$(mktemp)
trap 'rm -f "$out" "$out.h"' EXIT
timing=$(curl -sN -o "$out" -D "$out.h" "${url%/}/api/chat" \
  -H 'Content-Type: application/json' -H "Authorization: Bearer $key" -H "X-Docmind-Authorization: Bearer $key" \
  -H "x-amz-content-sha256: $sha" --data-binary "$body" \
  -w '%{http_code} %{time_starttransfer} %{time_total} %{size_download}')
read -r code ttfb total size <<<"$timing"
echo "status=$code ttfb=${ttfb}s total=${total}s size=${size}B"
fail=0
[ "$code" = 200 ] || { echo "FAIL: status $code"; head -c 500 "$out"; echo; fail=1; }
grep -qi '^content-type: text/event-stream' "$out.h" || { echo "FAIL: not text/event-stream"; fail=1; }
head -1 "$out" | grep -q '^event: meta' || { echo "FAIL: the stream does not start with meta"; fail=1; }
grep '^event: ' "$out" | tail -1 | grep -q '^event: done' || { echo "FAIL: the stream does not end with done"; fail=1; }
awk -v t="$ttfb" 'BEGIN{exit !(t <= 2)}' || { echo "FAIL: first byte after ${ttfb}s (want <= 2 s)"; fail=1; }
awk -v t="$total" 'BEGIN{exit !(t >= 10)}' || echo "NOTE: the whole answer took ${total}s; ask for a longer one to see streaming (want >= 10 s)"
[ "$size" -lt 6000000 ] || { echo "FAIL: ${size} bytes (a response stays under 6 MB)"; fail=1; }
[ "$fail" = 0 ] && echo "PASS: STR-06"
exit "$fail"
