"""The Lua scripts of the webhooks' deliveries (`service.projections.webhooks`): each one
atomic step on one tenant's keys."""

DERIVE = """
local position = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if position ~= tonumber(ARGV[2]) then return 0 end
local now = ARGV[4]
for i = 5, #ARGV, 3 do
  local seq = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 2])
  redis.call('ZADD', KEYS[5] .. ARGV[i + 1], seq, ARGV[i])
  redis.call('ZADD', KEYS[4], now, ARGV[i])
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""
"""KEYS: positions, seq, deliveries, due, the prefix of the per-webhook indexes. ARGV: table
id, the position read, the new position, now, then per delivery its id, webhook id and
record (JSON)."""

CLAIM = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, id in ipairs(due) do redis.call('ZADD', KEYS[1], ARGV[2], id) end
return due
"""

RECORD = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local record = cjson.decode(raw)
if record['attempts'] ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
if ARGV[4] == '' then redis.call('ZREM', KEYS[2], ARGV[1])
else redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) end
if #KEYS >= 3 then
  if ARGV[6] == '' then redis.call('HDEL', KEYS[3], ARGV[5])
  else redis.call('HSET', KEYS[3], ARGV[5], ARGV[6]) end
end
return 1
"""
"""Record an attempt if no other recorded it: KEYS deliveries, due (and failing, for an
attempt made); ARGV delivery id, the attempts before, the new record, when the next attempt is
due ('' for none) (and the webhook's id, when its attempt failed: '' when it succeeded)."""
