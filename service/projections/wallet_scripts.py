"""The Lua scripts of the casino wallet's records (`service.projections.wallet`, whose module
doc names the keys): each is one atomic step on one tenant's keys, or (`CLAIM`) on a table's."""

from __future__ import annotations

OPEN = """
if #KEYS > 5 then
  local set = redis.call('HMGET', KEYS[6], 'url', 'currency', 'chip_value_minor', 'secret')
  for i = 1, 4 do
    if set[i] ~= ARGV[3 + i] then return redis.call('HGETALL', KEYS[6]) end
  end
end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return redis.call('HGET', KEYS[1], ARGV[1])
end
local seq = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[2], seq, ARGV[1])
redis.call('ZADD', KEYS[5], seq, ARGV[1])
if ARGV[3] ~= '' then redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1]) end
return false
"""
"""KEYS tx, order, seq, due, the table's index (and the settings); ARGV key, record, due (''
when not pending) (and the url, currency, chip_value_minor and secret the record was made
with): the record kept before (nothing when this one is new); when the settings are given and
are not the stored ones, nothing is written and the stored settings are returned (a list of
fields and values, empty when there are none)."""

WITHDRAW = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1
"""
"""KEYS tx, order, due, the table's index; ARGV key, the record as written: whether it was
still that record, and is now forgotten."""

SETTLE = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local record = cjson.decode(raw)
if record['status'] ~= ARGV[2] or record['attempts'] ~= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
if ARGV[5] == '' then redis.call('ZREM', KEYS[2], ARGV[1])
elseif ARGV[5] ~= 'keep' then redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1]) end
return 1
"""
"""KEYS tx, due; ARGV key, the status and attempts read, the new record, when it is next due
('' for never, 'keep' for when it was): whether this writer was first."""

CLAIM = """
local held = redis.call('HGET', KEYS[1], 'request_hash')
if held then return held end
redis.call('HSET', KEYS[1], 'request_hash', ARGV[1], 'response', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return ARGV[1]
"""
"""KEYS the idempotency record of ``wallet:<debit>`` on the table; ARGV the claim's request
hash, its response, its time to live: the request hash that holds the key now."""

DUE = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, key in ipairs(due) do redis.call('ZADD', KEYS[1], ARGV[2], key) end
return due
"""
