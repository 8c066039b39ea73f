-- KEYS[1] lock key; ARGV[1] owner, ARGV[2] TTL in ms (0: no expiry).
-- Returns 1 when refreshed, 0 when not held.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
	redis.call("PEXPIRE", KEYS[1], ttl)
else
	redis.call("PERSIST", KEYS[1])
end
return 1
