-- Count one request that writes nothing against a table's counter (see quota.lua).
-- KEYS: the counter; ARGV: limit, window_ms. Returns 0 when admitted, else the wait in ms.
local wait = take(KEYS[1], ARGV[1], ARGV[2])
return wait or 0
