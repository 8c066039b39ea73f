-- KEYS[1] lock key, KEYS[2] (optional) fence counter; ARGV[1] owner.
-- Returns 1 when released, 0 when not held. A release is published on
-- KEYS[1]..":released" for waiters (wait.go).
-- With the counter given, it goes too once the server clock (in
-- microseconds) is above it: the next acquire's max(counter + 1, clock) is
-- then above it without it. Otherwise it is kept for as long as the counter
-- runs ahead of the clock.
--
-- Four commands (MGET, TIME, DEL, PUBLISH) when both keys are there: each
-- redis.call costs the server about as much as the script's own start.
if not KEYS[2] then
	if redis.call("GET", KEYS[1]) ~= ARGV[1] then
		return 0
	end
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", KEYS[1] .. ":released", "1")
	return 1
end
local both = redis.call("MGET", KEYS[1], KEYS[2])
if both[1] ~= ARGV[1] then
	if not both[1] then
		-- Absent for MGET, or of another type: GET fails on the latter,
		-- as it always did.
		redis.call("GET", KEYS[1])
	end
	return 0
end
local f = tonumber(both[2])
local now
if f then
	local t = redis.call("TIME")
	now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
if f and now > f then
	redis.call("DEL", KEYS[1], KEYS[2])
else
	redis.call("DEL", KEYS[1])
	if f then
		redis.call("PEXPIRE", KEYS[2], string.format("%d", math.ceil((f - now) / 1000) + 1000))
	end
end
redis.call("PUBLISH", KEYS[1] .. ":released", "1")
return 1
