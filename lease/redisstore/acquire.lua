-- KEYS[1] lock key, KEYS[2] fence counter (same hash slot)
-- ARGV[1] owner, ARGV[2] TTL in ms (0: no expiry)
-- Returns the new fence, or 0 when the lease is held.
local ttl = tonumber(ARGV[2])
local set
if ttl > 0 then
	set = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ttl)
else
	set = redis.call("SET", KEYS[1], ARGV[1], "NX")
end
if not set then
	return 0
end
return redis.call("INCR", KEYS[2])
