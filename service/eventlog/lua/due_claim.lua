-- Claim the tables due at `now`: each moves to `lease_until`, so no other dispatcher takes
-- it meanwhile, and comes due again then if its claimant died before settling it.
-- KEYS: index (sorted set: table id -> due, epoch s)
-- ARGV: now, lease_until, limit
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, table_id in ipairs(due) do
  redis.call('ZADD', KEYS[1], ARGV[2], table_id)
end
return due
