# The mock Kafka cluster for the Kafka tests (sourced after lib.bash): start_mock ARGS... runs
# `weir kafka-mock ARGS...` in the background with its stdin and stdout on FIFOs, waits for its
# first line (no sleep: the read returns when the line is there) and sets $BS to the
# bootstrap servers; mock_cmd LINE sends a control command and leaves its answer in $answer;
# stop_mock sends SIGTERM and leaves the exit status in $mock_rc. kcat talks to it with -b "$BS".
start_mock() {
  rm -f "$TMP/mock.in" "$TMP/mock.out"
  mkfifo "$TMP/mock.in" "$TMP/mock.out"
  "$WEIR" kafka-mock "$@" <"$TMP/mock.in" >"$TMP/mock.out" 2>"$TMP/mock.err" &
  MOCK_PID=$!
  exec 7>"$TMP/mock.in" 8<"$TMP/mock.out"
  local first=""
  read -r -t 30 first <&8
  BS=${first#bootstrap.servers=}
  if [ -z "$first" ] || [ "$BS" = "$first" ]; then
    echo "FAIL: kafka-mock gave no bootstrap.servers line ($first; $(cat "$TMP/mock.err"))"
    exit 1
  fi
}
mock_cmd() {
  echo "$1" >&7
  answer=""
  read -r -t 30 answer <&8
}
stop_mock() {
  kill -TERM "$MOCK_PID"
  wait "$MOCK_PID"
  mock_rc=$?
  exec 7>&- 8<&-
}
# kcat with the test's defaults: the cluster above, errors on stderr in $TMP/kcat.err
kc() { timeout 60 kcat -b "$BS" "$@" 2>>"$TMP/kcat.err"; }
