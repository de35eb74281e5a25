#!/usr/bin/env bash
# Checks a report.html in a real browser (Debian's headless chromium):
#   1. the page is self-contained: no scripts, no external resources;
#   2. chromium loads it without a console message or a failed request;
#   3. every plot (<svg class="plot"> in the rendered DOM) has drawn marks;
#   4. a screenshot is taken (SCREENSHOT, default: beside the report, .png).
# Installs chromium with apt-get when it is missing (CI only; not part of
# scripts/bootstrap.sh). Exit 0 all good, 1 a check failed, 2 usage/setup.
#
#   scripts/check-html.sh reports/out/report.html [shot.png]
set -euo pipefail

html=${1:?usage: scripts/check-html.sh REPORT.html [SCREENSHOT.png]}
[[ -f $html ]] || { echo "check-html: no such file: $html" >&2; exit 2; }
html=$(realpath "$html")
shot=${2:-${html%.html}.png}
width=${CHECK_HTML_WIDTH:-1400}
height=${CHECK_HTML_HEIGHT:-9000}

browser=""
find_browser() {
  for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null; then browser=$(command -v "$b"); return 0; fi
  done
  return 1
}
if ! find_browser; then
  echo "check-html: installing chromium (Debian package)"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
  find_browser || { echo "check-html: chromium could not be installed" >&2; exit 2; }
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "check-html: FAIL: $*"; failures=$((failures + 1)); }

# 1. Self-contained: nothing that could fetch, nothing that runs.
for pattern in '<script' 'src=' 'url(' '@import' '<link' '@font-face' '<iframe' '<object'; do
  if grep -qiF -- "$pattern" "$html"; then fail "the page contains '$pattern'"; fi
done

chrome() {  # chrome ARGS...: headless chromium on the report, stdout/stderr to the caller
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$(mktemp -d -p "$work")" \
    --enable-logging=stderr --v=0 "$@" "file://$html"
}

# 2. + 3. Rendered DOM, with the browser log.
if ! chrome --dump-dom >"$work/dom.html" 2>"$work/dom.log"; then
  cat "$work/dom.log" >&2
  fail "chromium could not load the page"
fi
if grep -E 'CONSOLE|Uncaught|net::ERR_|Failed to load' "$work/dom.log" >"$work/console.txt"; then
  fail "console messages or failed requests:"
  sed 's/^/    /' "$work/console.txt" | head -20
fi

# One line per <svg>: its index and its count of data marks.
awk 'BEGIN { RS = "<svg"; n = 0 }
     NR > 1 { body = substr($0, 1, index($0, "</svg>")); m = gsub(/class="mark"/, "", body);
              printf "%d %d\n", ++n, m }' "$work/dom.html" >"$work/marks.txt"
plots=$(wc -l <"$work/marks.txt")
empty=$(awk '$2 == 0' "$work/marks.txt" | wc -l)
if [[ $plots -eq 0 ]]; then fail "the rendered page has no plot"; fi
if [[ $empty -ne 0 ]]; then fail "$empty of $plots plots are empty (svg index: $(awk '$2 == 0 { printf "%s ", $1 }' "$work/marks.txt"))"; fi
grep -q '</html>\|</body>' "$work/dom.html" || fail "the rendered DOM is incomplete"

# 4. Screenshot (a tall window: the whole report in one image).
rm -f "$shot"
chrome --screenshot="$shot" --window-size="$width,$height" >"$work/shot.log" 2>&1 || true
if [[ ! -s $shot ]]; then
  sed 's/^/    /' "$work/shot.log" | tail -20
  fail "no screenshot written"
elif [[ $(stat -c %s "$shot") -lt 20000 ]]; then
  fail "the screenshot is suspiciously small ($(stat -c %s "$shot") bytes): a blank page?"
fi

if [[ $failures -ne 0 ]]; then
  echo "check-html: $failures check(s) failed for $html"
  exit 1
fi
echo "check-html: ok: $plots plots drawn, no console errors, screenshot $shot"
