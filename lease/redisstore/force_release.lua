-- KEYS[1] lock key, KEYS[2] fence counter (same hash slot)
-- Deletes the lease whoever holds it and moves the fence counter on, as
-- acquire.lua does (max(counter + 1, server clock in microseconds)), so
-- the next holder's fence is above the old holder's. The counter then
-- expires once the clock has passed it (as release.lua's).
-- Returns 1 when a lease was held, 0 when not. Like release.lua, it
-- publishes on KEYS[1]..":released" for waiters and watchers.
if redis.call("EXISTS", KEYS[1]) == 0 then
	return 0
end
redis.call("DEL", KEYS[1])
redis.call("PUBLISH", KEYS[1] .. ":released", "1")
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local f = (tonumber(redis.call("GET", KEYS[2])) or 0) + 1
if now > f then
	f = now
end
redis.call("SET", KEYS[2], string.format("%d", f), "PX", string.format("%d", math.ceil((f - now) / 1000) + 1000))
return 1
