-- Claim the tables due at `now`: each moves to `lease_until`, so no other dispatcher takes
-- it meanwhile, and comes due again then if its claimant died before settling it. Returns
-- the earliest due left in the index after the claims ('' when none), then the claimed ids:
-- a dispatcher learns in the one round trip how long it may sleep.
-- KEYS: index (sorted set: table id -> due, epoch s)
-- ARGV: now, lease_until, limit
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, table_id in ipairs(due) do
  redis.call('ZADD', KEYS[1], ARGV[2], table_id)
end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
table.insert(due, 1, head[2] or '')
return due
