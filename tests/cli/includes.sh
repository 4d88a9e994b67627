#!/usr/bin/env bash
# The runtime's include graph: no circle between modules (x.c and x.h are one module; an edge
# runs from a module to each module whose header one of its files includes), and the loop
# names no source kind. The checker is first run on a small tree with a circle, so it is known
# to find one.
RUNTIME=$(cd "$(dirname "$0")/../../runtime" && pwd) || exit 1
[ -f "$RUNTIME/loop.c" ] || { echo "FAIL: no runtime/loop.c under $RUNTIME"; exit 1; }
. "$(dirname "$0")/lib.bash"

# module_edges DIR: "from to" for every #include "to.h" in DIR/from.{c,h}, to != from.
module_edges() {
  local f from
  for f in "$1"/*.c "$1"/*.h; do
    from=$(basename "$f")
    from=${from%.*}
    sed -n 's/^#include "\([^"]*\)\.h".*/\1/p' "$f" | while read -r to; do
      [ "$to" != "$from" ] && echo "$from $to"
    done
  done
}

# circle DIR: prints the modules of a circle (tsort names them) and succeeds if there is one.
circle() {
  local out
  out=$( (module_edges "$1"; echo) | tsort 2>&1 >/dev/null)
  [ -n "$out" ] && echo "$out"
  [ -n "$out" ]
}

mkdir -p circ
printf '#include "a.h"\n#include "b.h"\n' > circ/a.c
printf '#include "c.h"\n' > circ/a.h
printf '#include "b.h"\n' > circ/b.h
printf '#include "b.h"\n#include "a.h"\n' > circ/b.c
printf '#include "weir.h"\n' > circ/c.h
if circle circ >/dev/null; then ok; else bad "the checker misses the circle a -> b -> a"; fi
printf '#include "b.h"\n' > circ/b.c
if circle circ >/dev/null; then bad "the checker sees a circle in a -> b, a -> c"; else ok; fi

RUNTIME=${WEIR_CHECK_RUNTIME:-$RUNTIME} # another tree's runtime/, to try the check on it
if found=$(circle "$RUNTIME"); then
  bad "runtime/ has an include circle: $found"
else
  ok
fi

# The loop reaches sources only through wr_source_ops_t: it includes no source kind's header.
if grep -q '^#include "source_' "$RUNTIME/loop.c" "$RUNTIME/signals.c" "$RUNTIME/source.c"; then
  bad "loop.c, signals.c or source.c includes a source kind's header"
else
  ok
fi
if grep -qi 'repl' <(grep -h '^#include' "$RUNTIME/loop.c" "$RUNTIME/signals.c"); then
  bad "loop.c or signals.c includes the REPL's header"
else
  ok
fi
finish
