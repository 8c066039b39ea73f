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
--
-- A grant is five commands (MGET, SET, TIME, SET, PUBLISH), a refusal
-- one: each redis.call costs the server about as much as the script's own
-- start, so the script makes no call it can do without.
local ttl = tonumber(ARGV[2])
local both = redis.call("MGET", KEYS[1], KEYS[2])
local holder, f = both[1], tonumber(both[2])
if holder == ARGV[1] then
	-- The same owner again: a retry whose first reply was lost. Its fence
	-- is the counter's value (only a grant moves the counter).
	if ttl > 0 then
		redis.call("PEXPIRE", KEYS[1], ttl)
	else
		redis.call("PERSIST", KEYS[1])
	end
	if f then
		if ttl > 0 then
			local t = redis.call("TIME")
			local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
			redis.call("PEXPIRE", KEYS[2], string.format("%d", ttl + math.max(0, math.ceil((f - now) / 1000)) + 1000))
		else
			redis.call("PERSIST", KEYS[2])
		end
		return f
	end
	-- The counter is gone but the key is not (evicted): issue a new fence.
elseif holder then
	return 0
else
	-- Absent for MGET, which answers nil for a key of another type too:
	-- NX keeps such a key, and GET then fails on it, as it always did.
	local set
	if ttl > 0 then
		set = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ttl)
	else
		set = redis.call("SET", KEYS[1], ARGV[1], "NX")
	end
	if not set then
		redis.call("GET", KEYS[1])
		return 0
	end
end
-- fence = max(counter + 1, server clock in microseconds): a counter lost
-- to a restart without persistence (or restored from an older snapshot),
-- or expired after its lease, continues above every fence issued before,
-- as long as the server's clock does not go back.
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
f = (f or 0) + 1
if now > f then
	f = now
end
if ttl > 0 then
	redis.call("SET", KEYS[2], string.format("%d", f), "PX", string.format("%d", ttl + math.max(0, math.ceil((f - now) / 1000)) + 1000))
else
	redis.call("SET", KEYS[2], string.format("%d", f))
end
redis.call("PUBLISH", KEYS[1] .. ":acquired", "1")
return f
