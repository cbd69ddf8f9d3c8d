-- The data of the event at version ARGV[1] in a table's stream (false if it holds none), and
-- a write in the table's slot (KEYS[2], expiring), so that a WAIT sent after this script on
-- the same connection waits until replicas hold this master's log up to that event (the
-- replication stream is one, in order).
-- KEYS: the table's stream, its confirmation mark; ARGV: the version
local id = ARGV[1] .. '-0'
local entry = redis.call('XRANGE', KEYS[1], id, id)
redis.call('SET', KEYS[2], ARGV[1], 'PX', 60000)
if #entry == 0 then
  return false
end
local fields = entry[1][2]
for i = 1, #fields, 2 do
  if fields[i] == 'data' then
    return fields[i + 1]
  end
end
return false
