-- A timestamp assigner returning {} for the third record: the job fails naming the value,
-- the record and the operator (the job: ../lib/ts_assigner.lua).
require("ts_assigner")({})
