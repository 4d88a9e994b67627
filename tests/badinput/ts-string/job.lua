-- A timestamp assigner returning "1000" for the third record: the job fails naming the value,
-- the record and the operator (the job: ../lib/ts_assigner.lua).
require("ts_assigner")("1000")
