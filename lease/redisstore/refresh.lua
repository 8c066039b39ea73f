-- KEYS[1] lock key, KEYS[2] (optional) fence counter; ARGV[1] owner,
-- ARGV[2] TTL in ms (0: no expiry). Returns 1 when refreshed, 0 when not
-- held. The counter's expiry follows the lease's, as acquire.lua sets it.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
	redis.call("PEXPIRE", KEYS[1], ttl)
else
	redis.call("PERSIST", KEYS[1])
end
if KEYS[2] then
	local f = tonumber(redis.call("GET", KEYS[2]))
	if f then
		if ttl > 0 then
			local t = redis.call("TIME")
			local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
			redis.call("PEXPIRE", KEYS[2], string.format("%d", ttl + math.max(0, math.ceil((f - now) / 1000)) + 1000))
		else
			redis.call("PERSIST", KEYS[2])
		end
	end
end
return 1
