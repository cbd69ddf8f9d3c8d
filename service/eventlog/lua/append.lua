-- Append events to one table's log, if the table is at the expected version.
-- Touches only the table's own keys (all under its hash tag), but for the due index's with 'd'.
-- KEYS: events, meta[, idempotency record][, the due index's three keys][, the quota's
--       counter (quota.lua)]
-- ARGV: expected_version, due ('' when nothing is due: the epoch seconds of the table's next
--       due moment), the channel to publish the append's notice on ('' for none), the table
--       id, the head the events chain from and the head they end at ('' and '' for none: the
--       stored head is then forgotten), what follows ('' or any of 's', 'i', 'q', 'd'): with
--       's' the snapshot, with 'i' the idempotency record's ttl_s, request_hash and response,
--       with 'q' the quota's limit and window in ms (counted with the events), in that
--       order; then the events, to the end. With 'd' (on one Redis only: the index's keys
--       are in another slot than the table's) the due is recorded in the due index at the
--       new version once the events are written (`record_dues`, due_records.lua).
-- The notice ("<version> <table id>") is not a key: it tells the live feeds to look.
-- Each redis.call costs about as much as a small command sent alone, and each argument
-- passed about a fifth of that: so one HSET writes the meta fields, a field is deleted only
-- when it is there, and what an append does not need is not passed.
local events_key, meta_key = KEYS[1], KEYS[2]
local flags = ARGV[7]
local at = 8  -- the next argument
local snapshot, idem_at, quota_at, index_at = nil, nil, nil, nil
if flags ~= '' then
  if string.find(flags, 's', 1, true) then snapshot, at = ARGV[at], at + 1 end
  if string.find(flags, 'i', 1, true) then idem_at, at = at, at + 3 end
  if string.find(flags, 'q', 1, true) then quota_at, at = at, at + 2 end
  if string.find(flags, 'd', 1, true) then index_at = idem_at and 4 or 3 end
end
local idem_key = idem_at and KEYS[3]
local quota_key = quota_at and KEYS[#KEYS]
local expected = tonumber(ARGV[1])
local head = redis.call('HMGET', meta_key, 'version', 'trimmed', 'snapshot_version', 'head', 'due')
local actual = tonumber(head[1] or '0')
-- Fields written outside the store that do not parse: the caller sets the table aside.
local function count(raw)
  return raw == false or (string.match(raw, '^%d+$') ~= nil and #raw <= 18)
end
if not count(head[1]) then return {'unreadable', 'meta field version'} end
if not count(head[2]) then return {'unreadable', 'meta field trimmed'} end
if not count(head[3]) then return {'unreadable', 'meta field snapshot_version'} end

if idem_key then
  local record = redis.call('HMGET', idem_key, 'request_hash', 'response')
  if (record[1] == false) ~= (record[2] == false) then
    return {'unreadable', 'idempotency record'}
  end
  if record[1] then
    if record[1] == ARGV[idem_at + 1] then
      -- Written again (unchanged), so a WAIT after this script waits for the record too.
      redis.call('HSET', idem_key, 'request_hash', record[1])
      return {'replayed', actual, record[2]}
    end
    return {'mismatch', record[1]}
  end
end

-- A caller whose state holds events the log does not (lost in a failover, then others
-- written at their versions) has the right version and the wrong head: it reloads.
if actual ~= expected or (ARGV[5] ~= '' and head[4] and head[4] ~= ARGV[5]) then
  -- The current state, for the caller to decide again on: the snapshot and its tail.
  local stored = redis.call('HMGET', meta_key, 'snapshot', 'snapshot_version')
  local since = tonumber(stored[2] or actual)
  local reply = {'conflict', actual, stored[1] or '', since}
  if since < actual then
    local first, last = string.format('%d-0', since + 1), string.format('%d-0', actual)
    local expected = since
    for _, entry in ipairs(redis.call('XRANGE', events_key, first, last)) do
      expected = expected + 1
      if entry[1] ~= string.format('%d-0', expected) or entry[2][1] ~= 'data' then
        return {'unreadable', 'stream entry ' .. entry[1]}
      end
      reply[#reply + 1] = entry[2][2]
    end
  end
  return reply
end

-- The stream must end exactly at the stored version (empty for a new table): it holds as
-- many entries as that, less those trimmed once archived, and (the first XADD checks it)
-- none with a later id.
local function corrupt()
  local top = redis.call('XREVRANGE', events_key, '+', '-', 'COUNT', '1')[1]
  return {'corrupt', top and top[1] or ''}
end
if redis.call('XLEN', events_key) + tonumber(head[2] or '0') ~= actual then
  return corrupt()
end

-- Counted only when the events are written: a conflict's retry is the same request.
if quota_key then
  local wait = take(quota_key, ARGV[quota_at], ARGV[quota_at + 1])
  if wait then return {'limited', wait} end
end

local version = actual
for i = at, #ARGV do
  version = version + 1
  local added = redis.pcall('XADD', events_key, string.format('%d-0', version), 'data', ARGV[i])
  if type(added) == 'table' and added.err then
    -- Only the first can fail, and nothing is written then: a later id in the stream is the
    -- table's corruption; a Redis that takes no write (OOM, MISCONF, READONLY) is not.
    if string.find(added.err, 'equal or smaller', 1, true) then return corrupt() end
    return added
  end
end
local now = string.format('%d', version)
local fields = {'version', now}
if snapshot then
  fields[3], fields[4], fields[5], fields[6] = 'snapshot', snapshot, 'snapshot_version', now
end
local gone = {}
if ARGV[6] ~= '' then
  fields[#fields + 1], fields[#fields + 2] = 'head', ARGV[6]
elseif head[4] then
  gone[#gone + 1] = 'head'
end
if ARGV[2] ~= '' then
  fields[#fields + 1], fields[#fields + 2] = 'due', ARGV[2]
elseif head[5] then
  gone[#gone + 1] = 'due'
end
redis.call('HSET', meta_key, unpack(fields))
if #gone > 0 then
  redis.call('HDEL', meta_key, unpack(gone))
end
if idem_key then
  redis.call('HSET', idem_key, 'request_hash', ARGV[idem_at + 1], 'response', ARGV[idem_at + 2])
  redis.call('EXPIRE', idem_key, ARGV[idem_at])
end
-- The due index is every table's: a key of it written outside the service (another type)
-- leaves this table's due unindexed ('unindexed': the caller records it again, and the
-- dispatchers drop that key and index every table's due anew), not the events unanswered.
local indexed = true
if index_at then
  indexed = pcall(record_dues, KEYS[index_at], KEYS[index_at + 1], KEYS[index_at + 2],
                  {ARGV[4], now, ARGV[2]})
end
if ARGV[3] ~= '' then
  redis.call('PUBLISH', ARGV[3], now .. ' ' .. ARGV[4])
end
if not indexed then return {'ok', version, 'unindexed'} end
return {'ok', version}
