-- Trim a table's stream of events that are archived (after the archive verified them).
-- Touches only the table's own keys (all under its hash tag).
-- KEYS: events, meta
-- ARGV: the version archived up to, how many of the latest events to keep in any case
-- Never trims past the snapshot (a load needs the events after it), nor the latest `keep`
-- events (resuming clients and lagging readers find them here); the meta hash's "trimmed"
-- is the version the stream now starts after. Returns it.
local events_key, meta_key = KEYS[1], KEYS[2]
local stored = redis.call('HMGET', meta_key, 'version', 'snapshot_version', 'trimmed')
if not stored[1] then
  return 0
end
local version = tonumber(stored[1])
local trimmed = tonumber(stored[3] or '0')
for i = 1, 3 do  -- a field written outside the store: the caller sets the table aside
  if stored[i] and not string.match(stored[i], '^%d+$') then return -1 end
end
local upto = math.min(tonumber(ARGV[1]), tonumber(stored[2] or stored[1]), version - tonumber(ARGV[2]))
if upto <= trimmed then
  return trimmed
end
redis.call('XTRIM', events_key, 'MINID', string.format('%d-0', upto + 1))
redis.call('HSET', meta_key, 'trimmed', string.format('%d', upto))
return upto
