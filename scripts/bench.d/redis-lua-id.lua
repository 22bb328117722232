-- The "Redis + Lua" scheme of SEEDS.md, as its article describes it, for scripts/bench.
--
--   EVALSHA <sha> 1 <key> [step]
--
-- KEYS[1]  a numeric key (a user ID, say): it picks the shard, key % 1024.
-- ARGV[1]  the step (optional, default 1). With N Redis servers sharing the work, each
--          shard's counter starts at 1..N on its server and every server steps by N.
--
-- Returns {server ms, shard, sequence}: the client composes the 64-bit ID from them (time,
-- shard and sequence bits), which costs Redis nothing, so it is not done here.
local key = tonumber(KEYS[1])
if key == nil then
  return redis.error_reply('ERR key must be an integer')
end
local step = tonumber(ARGV[1] or '1')
local shard = key % 1024
local seq = redis.call('INCRBY', 'idgenerator_next_' .. shard, step)
-- TIME after a write is fine from Redis 5 on (scripts replicate their effects, not the script).
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
return {ms, shard, seq}
