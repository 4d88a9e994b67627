-- A timestamp assigner returning 9.3e18 for the third record: the job fails naming the value,
-- the record and the operator (the job: ../lib/ts_assigner.lua).
require("ts_assigner")(9.3e18)
