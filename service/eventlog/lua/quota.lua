-- A moving-window counter: at most `limit` admitted in any `window_ms` (the list holds the
-- times, newest first, of the last `limit` admitted). Included at the top of append.lua and
-- of quota_only.lua (the store prepends it): `take` returns false when it admits (counted),
-- else the milliseconds until one more would be. A counter written outside the store (of
-- another type, or times that do not parse) starts over: it only ever admits a few more.
-- `limit` and `window_ms` come as the decimal strings the caller sent: each number handed to
-- redis.call is printed to a string first, which costs more than the command (Redis 7.0).
local function take(key, limit, window_ms)
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local count = tonumber(limit)
  local last = string.format('%d', count - 1)
  local oldest = redis.pcall('LINDEX', key, last)
  if type(oldest) == 'table' then  -- an error: not a list
    redis.call('DEL', key)
    oldest = false
  end
  local at = oldest and tonumber(oldest)
  if oldest and not at then redis.call('DEL', key) end
  local window = tonumber(window_ms)
  if at and now - at < window then
    return window - (now - at)
  end
  if redis.call('LPUSH', key, string.format('%d', now)) > count then
    redis.call('LTRIM', key, '0', last)
  end
  redis.call('PEXPIRE', key, window_ms)
  return false
end
