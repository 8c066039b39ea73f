-- KEYS[1] lock key, KEYS[2] fence counter (same hash slot)
-- ARGV[1] owner, ARGV[2] TTL in ms (0: no expiry)
-- Returns the holder's fence, or 0 when someone else holds the lease.
-- A grant (not the same owner's retry, not a refusal) is published on
-- KEYS[1]..":acquired" for watchers (watch.go); a refresh publishes nothing.
--
-- The counter expires: it need only outlive the lease, and the server
-- clock's passing it. Once the clock (in microseconds) is above the
-- counter, max(counter + 1, clock) is above every fence issued without
-- it, so its expiry is the lease's plus how far the counter runs ahead of
-- the clock, plus a second.
local ttl = tonumber(ARGV[2])
local function clock()
	local t = redis.call("TIME")
	return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function keep(f, now)
	if ttl > 0 then
		redis.call("PEXPIRE", KEYS[2], string.format("%d", ttl + math.max(0, math.ceil((f - now) / 1000)) + 1000))
	else
		redis.call("PERSIST", KEYS[2])
	end
end
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
		keep(f, clock())
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
-- to a restart without persistence (or restored from an older snapshot),
-- or expired after its lease, continues above every fence issued before,
-- as long as the server's clock does not go back.
local now = clock()
local f = (tonumber(redis.call("GET", KEYS[2])) or 0) + 1
if now > f then
	f = now
end
redis.call("SET", KEYS[2], string.format("%d", f))
keep(f, now)
redis.call("PUBLISH", KEYS[1] .. ":acquired", "1")
return f
