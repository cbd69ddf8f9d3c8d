-- Record tables' next due moments in the due index, each unless a later version of the
-- table was recorded already (so records that arrive out of order never move a due back).
-- Included at the top of due_record.lua and, on one Redis, of the append script (the store
-- prepends it: `service.eventlog.redis_store`), which then records the table's due with its
-- events.
-- A due earlier than the index's earliest (or in an empty index) wakes a dispatcher waiting
-- on the wake list (one token at most: a dispatcher that was not waiting finds it at its
-- next wait and looks at the index once more, for nothing).
-- Keys: index (sorted set: table id -> due, epoch s), versions (hash: table id -> version),
--       wake (list)
-- records: (table_id, version, due ('' when nothing is due)) for each table, flat
-- (A record written outside the index that does not parse is replaced.) Returns how many
-- records took.
local function record_dues(index_key, versions_key, wake_key, records)
  local taken = 0
  local head = redis.call('ZRANGE', index_key, 0, 0, 'WITHSCORES')
  local earliest = tonumber(head[2] or '')
  local wake = false
  for i = 1, #records, 3 do
    local table_id, version, due = records[i], records[i + 1], records[i + 2]
    local stored = tonumber(redis.call('HGET', versions_key, table_id) or '-1') or -1
    if tonumber(version) >= stored then
      taken = taken + 1
      if due == '' then
        redis.call('ZREM', index_key, table_id)
        redis.call('HDEL', versions_key, table_id)
      else
        redis.call('ZADD', index_key, due, table_id)
        redis.call('HSET', versions_key, table_id, version)
        if earliest == nil or tonumber(due) < earliest then
          wake = true
        end
      end
    end
  end
  if wake then
    redis.call('RPUSH', wake_key, '1')
    redis.call('LTRIM', wake_key, -1, -1)
  end
  return taken
end
