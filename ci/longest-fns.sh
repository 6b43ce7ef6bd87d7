#!/usr/bin/env bash
# The ten longest functions under src/ (lines from `fn` to the closing brace at the same
# indentation, doc comments not counted), then the ten largest files. Run from anywhere.
# The acceptance limits of issue 13: no function over 100 lines, no source file over 800.
cd "$(dirname "$0")/.." || exit 1
find src -name '*.rs' | sort | xargs awk '
  FNR == 1 { depth = "" }
  match($0, /^ *((pub(\([a-z]+\))? )?(const )?(async )?(unsafe )?(extern "C" )?fn [A-Za-z0-9_]+)/) && depth == "" {
    ind = match($0, /[^ ]/) - 1; start = FNR; name = $0; sub(/^ */, "", name)
    sub(/.*fn /, "", name); sub(/[(<].*/, "", name)
    if ($0 ~ /;[ \t]*$/ && $0 !~ /\{/) next   # a declaration without a body
    if ($0 ~ /\}[ \t]*$/ && $0 ~ /\{/) { print 1, FILENAME ":" FNR, name; next }  # one line
    depth = ind; next
  }
  depth != "" {
    line = $0
    if (match(line, /[^ ]/) - 1 == depth && line ~ /^ *\}/) {
      print FNR - start + 1, FILENAME ":" start, name; depth = ""
    }
  }
' | sort -rn | head -"${1:-10}"
echo "--- largest files"
find src -name '*.rs' -print0 | xargs -0 wc -l | grep -v ' total$' | sort -rn | head -"${1:-10}"
