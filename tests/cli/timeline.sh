#!/usr/bin/env bash
# weir timeline and the REPL's :draw --svg: the picture of the allowed-lateness example's replay
# against a golden SVG (the replay's virtual clock makes it the same bytes every run), rendered
# to PNG by rsvg-convert (Debian librsvg2-bin) at the size the SVG declares; the --data table;
# usage errors.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/lib.bash"
# a frozen copy of examples/allowed-lateness (the goldens name its lines)
cp "$ROOT/tests/cli/sweep/job.lua" "$ROOT/tests/cli/sweep/input.replay" .

# svg_size FILE: "WIDTH HEIGHT" of the root element
svg_size() { sed -n '1s/^<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$1"; }
# png_size FILE: "WIDTH HEIGHT" from the PNG's IHDR chunk
png_size() {
  od -An -tu1 -j16 -N8 "$1" | awk '{ printf "%d %d\n", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8 }'
}
check_png() { # check_png SVG WHAT
  if ! command -v rsvg-convert >/dev/null; then
    bad "$2: rsvg-convert is not installed (scripts/setup.sh installs librsvg2-bin)"
    return
  fi
  rsvg-convert "$1" -o "$1.png" 2>"$TMP/rsvg.err" && ok || bad "$2: rsvg-convert failed: $(cat "$TMP/rsvg.err")"
  [ "$(head -c 8 "$1.png" | od -An -tx1 | tr -d ' ')" = "89504e470d0a1a0a" ] && ok || bad "$2: not a PNG"
  local want got
  want=$(svg_size "$1")
  got=$(png_size "$1.png")
  [ -n "$want" ] && [ "$want" = "$got" ] && ok || bad "$2: PNG is $got, the SVG says $want"
}

run_weir timeline job.lua --replay input.replay -o timeline.svg --data timeline.lua
expect_rc 0 "timeline"
expect_out_has "1718157600000-1718157605000" "the job's output still goes to stdout"
diff -u "$ROOT/tests/cli/timeline/allowed-lateness.svg" timeline.svg >diff.txt && ok || bad "the picture differs from the golden:
$(head -40 diff.txt)"
[ "$(svg_size timeline.svg | cut -d' ' -f1)" = 960 ] && ok || bad "the picture is 960 wide"
check_png timeline.svg "timeline"
for what in '>record<' '>late record, kept (lateness)<' '>late record dropped<' '>fire: on time<' '>late fire (allowed lateness)<' '>purged<' '>watermark<' '>idle input<'; do
  grep -qF -- "$what" timeline.svg && ok || bad "the legend lacks $what"
done
grep -q 'nan\|inf"' timeline.svg && bad "nan or inf in the picture" || ok
# the data: a Lua table with the fires, their kinds and processing times
cat >read.lua <<'LUA'
local d = dofile("timeline.lua")
local kinds = {}
for _, f in ipairs(d.fires) do kinds[f.kind] = (kinds[f.kind] or 0) + 1 end
print(d.records_in, #d.elements, kinds["on time"], kinds.late or 0, d.late_dropped)
LUA
luajit read.lua >read.out 2>&1 || lua read.lua >read.out 2>&1
[ "$(cat read.out)" = "$(printf '12\t12\t6\t3\t0')" ] && ok || bad "--data: $(cat read.out)"

# the same job with no lateness drops what came late: the picture shows it
run_weir timeline job.lua --replay input.replay --param allowed_lateness=0 -o nolate.svg
expect_rc 0 "timeline --param"
grep -qF -- "3 late record(s) dropped" nolate.svg && ok || bad "the picture counts the dropped records"
grep -qF -- "--param allowed_lateness=0" nolate.svg && ok || bad "the picture names its parameters"
[ "$(grep -c 'stroke="#c62828"' nolate.svg)" -ge 6 ] && ok || bad "the dropped records are drawn (per key and over processing time)"
check_png nolate.svg "timeline without lateness"

# idle inputs (the idleness example)
cp "$ROOT/examples/idleness/job.lua" idle.lua
run_weir timeline idle.lua --replay "$ROOT/examples/idleness/input.replay" -o idle.svg
expect_rc 0 "timeline of the idleness example"
at=$(grep -n ":assign_timestamps_and_watermarks(" idle.lua | head -1 | cut -d: -f1)
grep -qF -- "idle: assign_timestamps_and_watermarks (idle.lua:$at) 2/2 from" idle.svg && ok || bad "the idle input is named"
check_png idle.svg "idleness"

# the REPL: :draw --svg FILE draws the session's job the same way
printf ':start\n:advance 20s\n:draw --svg repl.svg\n:draw --svg\n' >session.txt
timeout 30 "$WEIR" repl job.lua --replay input.replay <session.txt >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc 0 "repl :draw --svg"
expect_out_has "wrote repl.svg: 12 record(s), 9 fire(s), 3 key(s)" ":draw --svg says what it drew"
expect_out_has ":draw --svg needs a FILE (:draw --svg timeline.svg)" ":draw --svg without a file"
check_png repl.svg ":draw --svg"

# usage errors
run_weir timeline job.lua --replay input.replay
expect_rc 2 "timeline without -o"
expect_err_has "timeline: needs -o FILE.svg (or --data FILE)" "timeline without -o is named"
run_weir timeline job.lua --replay input.replay -o
expect_rc 2 "-o without its file"
expect_err_has "-o needs a FILE.svg" "-o without its file is named"
run_weir timeline job.lua --replay input.replay -o nodir/x.svg
expect_rc 1 "an -o that cannot be written"
expect_err_has "weir: timeline: cannot write -o nodir/x.svg: No such file or directory" "the unwritable file is named"
[ ! -s "$TMP/out" ] && ok || bad "an unwritable -o stops the job before it runs"
run_weir timeline missing.lua -o x.svg
expect_rc 2 "a missing job"
expect_err_has "job missing.lua" "the missing job is named"
run_weir timeline job.lua -o x.svg --progress
expect_rc 2 "timeline --progress"
run_weir timeline --help
expect_rc 0 "timeline --help"
expect_out_has "draws what happened as" "timeline --help describes timeline"
finish
