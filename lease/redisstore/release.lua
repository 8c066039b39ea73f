-- KEYS[1] lock key, KEYS[2] (optional) fence counter; ARGV[1] owner.
-- Returns 1 when released, 0 when not held. A release is published on
-- KEYS[1]..":released" for waiters (wait.go).
-- With the counter given, it goes too once the server clock (in
-- microseconds) is above it: the next acquire's max(counter + 1, clock) is
-- then above it without it. Otherwise it is kept for as long as the counter
-- runs ahead of the clock.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call("DEL", KEYS[1])
redis.call("PUBLISH", KEYS[1] .. ":released", "1")
if KEYS[2] then
	local f = tonumber(redis.call("GET", KEYS[2]))
	if f then
		local t = redis.call("TIME")
		local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
		if now > f then
			redis.call("DEL", KEYS[2])
		else
			redis.call("PEXPIRE", KEYS[2], string.format("%d", math.ceil((f - now) / 1000) + 1000))
		end
	end
end
return 1
