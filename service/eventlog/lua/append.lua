-- Append events to one table's log, if the table is at the expected version.
-- Touches only the table's own keys (all under its hash tag).
-- KEYS: events, meta[, idempotency record]
-- ARGV: expected_version, snapshot ('' with none), ttl_s, request_hash, response,
--       whether there is a snapshot ('1' / '0'), due ('' when nothing is due: the epoch
--       seconds of the table's next due moment), the channel to publish the append's
--       notice on ('' for none), the table id, the head the events chain from and the
--       head they end at ('' and '' for none: the stored head is then forgotten), event
--       count, event..., then the quota's limit and window in ms ('' and '' for none:
--       with one, its counter is the last key, counted with the events: quota.lua)
-- The notice ("<version> <table id>") is not a key: it tells the live feeds to look.
local last = 12 + tonumber(ARGV[12])
local quota_limit, quota_window = ARGV[last + 1], ARGV[last + 2]
local quota_key = nil
if quota_limit ~= '' then quota_key = KEYS[#KEYS] end
local events_key, meta_key = KEYS[1], KEYS[2]
local idem_key = nil
if #KEYS - (quota_key and 1 or 0) == 3 then idem_key = KEYS[3] end
local expected = tonumber(ARGV[1])
local head = redis.call('HMGET', meta_key, 'version', 'trimmed', 'snapshot_version', 'head')
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
    if record[1] == ARGV[4] then
      -- Written again (unchanged), so a WAIT after this script waits for the record too.
      redis.call('HSET', idem_key, 'request_hash', record[1])
      return {'replayed', actual, record[2]}
    end
    return {'mismatch', record[1]}
  end
end

-- A caller whose state holds events the log does not (lost in a failover, then others
-- written at their versions) has the right version and the wrong head: it reloads.
if actual ~= expected or (ARGV[10] ~= '' and head[4] and head[4] ~= ARGV[10]) then
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
  local top = redis.call('XREVRANGE', events_key, '+', '-', 'COUNT', 1)[1]
  return {'corrupt', top and top[1] or ''}
end
if redis.call('XLEN', events_key) + tonumber(head[2] or '0') ~= actual then
  return corrupt()
end

-- Counted only when the events are written: a conflict's retry is the same request.
if quota_key then
  local wait = take(quota_key, tonumber(quota_limit), tonumber(quota_window))
  if wait then return {'limited', wait} end
end

local version = actual
for i = 13, last do
  version = version + 1
  local added = redis.pcall('XADD', events_key, string.format('%d-0', version), 'data', ARGV[i])
  if type(added) == 'table' and added.err then
    return corrupt()  -- only the first can fail (a later id is in the stream): nothing written
  end
end
local now = string.format('%d', version)
if ARGV[6] == '1' then
  redis.call('HSET', meta_key, 'version', now, 'snapshot', ARGV[2], 'snapshot_version', now)
else
  redis.call('HSET', meta_key, 'version', now)
end
if ARGV[11] == '' then
  redis.call('HDEL', meta_key, 'head')
else
  redis.call('HSET', meta_key, 'head', ARGV[11])
end
if ARGV[7] == '' then
  redis.call('HDEL', meta_key, 'due')
else
  redis.call('HSET', meta_key, 'due', ARGV[7])
end
if idem_key then
  redis.call('HSET', idem_key, 'request_hash', ARGV[4], 'response', ARGV[5])
  redis.call('EXPIRE', idem_key, ARGV[3])
end
if ARGV[8] ~= '' then
  redis.call('PUBLISH', ARGV[8], now .. ' ' .. ARGV[9])
end
return {'ok', version}
