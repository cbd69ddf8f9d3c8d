-- A moving-window counter: at most `limit` admitted in any `window_ms` (the list holds the
-- times, newest first, of the last `limit` admitted). Included at the top of append.lua and
-- of quota_only.lua (the store prepends it): `take` returns false when it admits (counted),
-- else the milliseconds until one more would be. A counter written outside the store (of
-- another type, or times that do not parse) starts over: it only ever admits a few more.
local function take(key, limit, window_ms)
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'list' and kind ~= 'none' then redis.call('DEL', key) end
  local oldest = redis.call('LINDEX', key, limit - 1)
  local at = oldest and tonumber(oldest)
  if oldest and not at then redis.call('DEL', key) end
  if at and now - at < window_ms then
    return window_ms - (now - at)
  end
  redis.call('LPUSH', key, now)
  redis.call('LTRIM', key, 0, limit - 1)
  redis.call('PEXPIRE', key, window_ms)
  return false
end
