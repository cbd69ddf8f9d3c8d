-- Record a table's next due moment in the due index, unless a later version of the table
-- was recorded already (so records that arrive out of order never move a due back).
-- KEYS: index (sorted set: table id -> due, epoch s), versions (hash: table id -> version)
-- ARGV: table_id, version, due ('' when nothing is due)
-- (A record written outside the index that does not parse is replaced.)
local stored = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '-1') or -1
if tonumber(ARGV[2]) < stored then
  return 0
end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return 1
