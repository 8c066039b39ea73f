-- KEYS[1] lock key, KEYS[2] fence counter (same hash slot)
-- ARGV[1] owner, ARGV[2] TTL in ms (0: no expiry)
-- Returns the holder's fence, or 0 when someone else holds the lease.
local ttl = tonumber(ARGV[2])
local holder = redis.call("GET", KEYS[1])
if holder == ARGV[1] then
	-- The same owner again: a retry whose first reply was lost. Its fence
	-- is the counter's value (only a grant moves the counter).
	if ttl > 0 then
		redis.call("PEXPIRE", KEYS[1], ttl)
	else
		redis.call("PERSIST", KEYS[1])
	end
	local f = tonumber(redis.call("GET", KEYS[2]))
	if f then
		return f
	end
	-- The counter is gone but the key is not (evicted): issue a new fence.
elseif holder then
	return 0
end
if ttl > 0 then
	redis.call("SET", KEYS[1], ARGV[1], "PX", ttl)
else
	redis.call("SET", KEYS[1], ARGV[1])
end
-- fence = max(counter + 1, server clock in microseconds): a counter lost
-- to a restart without persistence (or restored from an older snapshot)
-- continues above every fence issued before, as long as the server's
-- clock does not go back.
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local f = (tonumber(redis.call("GET", KEYS[2])) or 0) + 1
if now > f then
	f = now
end
redis.call("SET", KEYS[2], string.format("%d", f))
return f
