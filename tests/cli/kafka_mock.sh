#!/usr/bin/env bash
# weir kafka-mock: a Kafka-protocol endpoint on 127.0.0.1 that kcat produces to and consumes
# from, its control commands on stdin, its usage errors, and a clean exit on SIGTERM.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --brokers 3 --topic clicks:4 --topic other:1
case "$BS" in
  127.0.0.1:*,127.0.0.1:*,127.0.0.1:*) ok ;;
  *) bad "three brokers on 127.0.0.1, got $BS" ;;
esac
printf 'k1:v1\nk2:v2\nk3:v3\nk4:v4\nk5:v5\nk6:v6\n' | kc -P -t clicks -K:
kc -C -t clicks -e -q -f '%k=%s\n' | sort > got
[ "$(cat got)" = "$(printf 'k1=v1\nk2=v2\nk3=v3\nk4=v4\nk5=v5\nk6=v6')" ] && ok \
  || bad "kcat reads back what it produced: $(cat got); $(cat "$TMP/kcat.err")"
kc -L -t clicks > meta
grep -q 'with 4 partitions' meta && ok || bad "clicks has 4 partitions: $(cat meta)"
grep -q '3 brokers' meta && ok || bad "the metadata lists 3 brokers: $(cat meta)"
# keys hash to partitions: the same key always lands on the same one
kc -C -t clicks -e -q -f '%k %p\n' | sort > parts
[ "$(cut -d' ' -f2 parts | sort -u | wc -l)" -ge 2 ] && ok || bad "keys spread over partitions"

mock_cmd "topic late:2"
[ "$answer" = ok ] && ok || bad "topic command: $answer"
kc -L -t late | grep -q 'with 2 partitions' && ok || bad "the new topic has 2 partitions"
mock_cmd "down 9"
[ "$answer" = "error: down: no broker 9 (the brokers are 1 to 3)" ] && ok || bad "down 9: $answer"
mock_cmd "down 2"
[ "$answer" = ok ] && ok || bad "down 2: $answer"
mock_cmd "up 2"
[ "$answer" = ok ] && ok || bad "up 2: $answer"
mock_cmd "frobnicate 1"
case "$answer" in "error: unknown command frobnicate"*) ok ;; *) bad "unknown: $answer" ;; esac
stop_mock
[ "$mock_rc" = 0 ] && ok || bad "SIGTERM: exit $mock_rc ($(cat "$TMP/mock.err"))"

run_weir kafka-mock --topic nopartitions
expect_rc 2 "a topic without partitions"
expect_err_has "--topic needs NAME:PARTITIONS" "the usage error names the form"
run_weir kafka-mock --brokers 0
expect_rc 2 "zero brokers"
expect_err_has "--brokers needs an integer from 1 to 16" "the usage error names the range"
run_weir kafka-mock --help
expect_rc 0 "help"
expect_out_has "usage: weir kafka-mock" "help shows the usage"
finish
