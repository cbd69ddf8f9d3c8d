-- Record tables' next due moments in the due index, each unless a later version of the
-- table was recorded already (so records that arrive out of order never move a due back).
-- One call records many tables: the index's keys share one hash tag, so this runs on a
-- Redis Cluster as on one Redis (a pipeline of scripts does not).
-- KEYS: index (sorted set: table id -> due, epoch s), versions (hash: table id -> version)
-- ARGV: (table_id, version, due ('' when nothing is due)) for each table
-- (A record written outside the index that does not parse is replaced.) Returns how many
-- records took.
local taken = 0
for i = 1, #ARGV, 3 do
  local table_id, version, due = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local stored = tonumber(redis.call('HGET', KEYS[2], table_id) or '-1') or -1
  if tonumber(version) >= stored then
    taken = taken + 1
    if due == '' then
      redis.call('ZREM', KEYS[1], table_id)
      redis.call('HDEL', KEYS[2], table_id)
    else
      redis.call('ZADD', KEYS[1], due, table_id)
      redis.call('HSET', KEYS[2], table_id, version)
    end
  end
end
return taken
