#!/usr/bin/env bash
# examples/kafka-clicks runs as its README says: the README's sh block is run as it is (weir on
# the PATH, from the repository's root) and its output is the README's output block; then the
# same block with `weir run --verify-checkpoints` (round-trip mode, as the other examples'
# roundtrip_example_* tests: snapshot, encode, restore after every batch) gives the same output.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
ROOT=$(cd "$HERE/../.." && pwd)
README="$ROOT/examples/kafka-clicks/README.md"
mkdir -p bin && ln -s "$WEIR" bin/weir
awk '/^```sh$/ { on = 1; next } /^```$/ { on = 0 } on' "$README" > snippet.sh
awk '/^```$/ && !in_sh { n++; if (n % 2 == 1) { on = 1; next } } /^```sh$/ { in_sh = 1 }
     /^```$/ && in_sh { in_sh = 0; next } /^```$/ { on = 0 } on' "$README" > want.txt
[ -s snippet.sh ] && [ -s want.txt ] && ok || bad "the README has a sh block and an output block"
(cd "$ROOT" && PATH="$TMP/bin:$PATH" timeout 60 bash "$TMP/snippet.sh") > got.txt 2> err.txt
rc=$?
expect_rc 0 "the README's commands"
# the first line is the bootstrap servers the snippet echoes
tail -n +2 got.txt > got_out.txt
cmp -s got_out.txt want.txt && ok || bad "the README's output: $(diff got_out.txt want.txt | head -10) $(cat err.txt)"
head -1 got.txt | grep -q '^127\.0\.0\.1:[0-9]*$' && ok || bad "the snippet echoes the bootstrap servers: $(head -1 got.txt)"
# round-trip mode
sed 's/^weir run "/weir run --verify-checkpoints "/' snippet.sh > snippet_rt.sh
grep -q -- '--verify-checkpoints' snippet_rt.sh && ok || bad "the snippet has a weir run line"
(cd "$ROOT" && PATH="$TMP/bin:$PATH" timeout 60 bash "$TMP/snippet_rt.sh") > got_rt.txt 2> err_rt.txt
rc=$?
expect_rc 0 "the README's commands in round-trip mode"
tail -n +2 got_rt.txt > got_rt_out.txt
cmp -s got_rt_out.txt want.txt && ok || bad "round-trip mode's output: $(diff got_rt_out.txt want.txt | head -10) $(cat err_rt.txt)"
finish
