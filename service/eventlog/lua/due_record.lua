-- Record tables' next due moments in the due index (`record_dues`, in due_records.lua,
-- which the index prepends). One call records many tables: the index's keys share one hash
-- tag, so this runs on a Redis Cluster as on one Redis (a pipeline of scripts does not).
-- KEYS: index, versions, wake
-- ARGV: (table_id, version, due ('' when nothing is due)) for each table
return record_dues(KEYS[1], KEYS[2], KEYS[3], ARGV)
