-- One idempotency record, written again unchanged when it exists, so that a WAIT sent after
-- this script on the same connection waits until replicas hold the record (a retry is told
-- an outcome only once it is replicated).
-- KEYS: the idempotency record
local record = redis.call('HMGET', KEYS[1], 'request_hash', 'response')
if record[1] then
  redis.call('HSET', KEYS[1], 'request_hash', record[1])
end
return record
