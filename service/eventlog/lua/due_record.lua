-- Record tables' next due moments in the due index, each unless a later version of the
-- table was recorded already (so records that arrive out of order never move a due back).
-- One call records many tables: the index's keys share one hash tag, so this runs on a
-- Redis Cluster as on one Redis (a pipeline of scripts does not).
-- A due earlier than the index's earliest (or in an empty index) wakes a dispatcher waiting
-- on the wake list (one token at most: a dispatcher that was not waiting finds it at its
-- next wait and looks at the index once more, for nothing).
-- KEYS: index (sorted set: table id -> due, epoch s), versions (hash: table id -> version),
--       wake (list)
-- ARGV: (table_id, version, due ('' when nothing is due)) for each table
-- (A record written outside the index that does not parse is replaced.) Returns how many
-- records took.
local taken = 0
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local earliest = tonumber(head[2] or '')
local wake = false
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
      if earliest == nil or tonumber(due) < earliest then
        wake = true
      end
    end
  end
end
if wake then
  redis.call('RPUSH', KEYS[3], '1')
  redis.call('LTRIM', KEYS[3], -1, -1)
end
return taken
