#!/usr/bin/env bash
# The longest functions under src/ (lines from `fn` to the closing brace at the same
# indentation), then the largest files. Test code is left out of the functions: a module after
# `#[cfg(test)]`, and files named tests.rs or under a tests/ directory. Run from anywhere.
#
#   ci/longest-fns.sh [N]      the N longest functions and largest files (default 10)
#   ci/longest-fns.sh --check  exit 1, naming each, if a function outside tests is over 100 lines
#                              or any source file (tests too) is over 800 lines (CI runs this)
cd "$(dirname "$0")/.." || exit 1
fns() {
  find src -name '*.rs' | sort | grep -vE '(^|/)tests(\.rs|/)' | xargs awk '
    FNR == 1 { depth = ""; testmod = 0 }
    /^ *#\[cfg\(test\)\]/ { pending = 1; next }
    pending && /^ *(pub(\([a-z]+\))? )?mod [a-z_]+ *\{/ { testmod = 1 }
    { pending = 0 }
    testmod { next }
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
  ' | sort -rn
}
files() { find src -name '*.rs' -print0 | xargs -0 wc -l | grep -v ' total$' | sort -rn; }

if [ "${1:-}" = --check ]; then
  bad=0
  while read -r n where name; do
    [ "$n" -gt 100 ] || break
    echo "function over 100 lines: $where $name ($n lines)"; bad=1
  done < <(fns)
  while read -r n f; do
    [ "$n" -gt 800 ] || break
    echo "file over 800 lines: $f ($n lines)"; bad=1
  done < <(files)
  [ $bad = 0 ] && echo "longest-fns: no function over 100 lines, no file over 800"
  exit $bad
fi
fns | head -"${1:-10}"
echo "--- largest files"
files | head -"${1:-10}"
