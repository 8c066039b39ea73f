-- KEYS[1] lock key; ARGV[1] owner. Returns 1 when released, 0 when not held.
-- A release is published on KEYS[1]..":released" for waiters (wait.go).
if redis.call("GET", KEYS[1]) == ARGV[1] then
	local n = redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", KEYS[1] .. ":released", "1")
	return n
end
return 0
