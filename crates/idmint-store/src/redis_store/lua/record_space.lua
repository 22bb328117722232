-- record_space: records a namespace's ID space in force, in one decision.
-- KEYS[1] the list of ID-space records (oldest first), KEYS[2] the sorted set of every worker ID
-- ever leased, KEYS[3] the sorted set of expiries; ARGV[1] the key prefix ('{ns}:'), ARGV[2]
-- the record's version, ARGV[3] the record without its time ('version|layout|epoch|dc|from|
-- first|permutation'), ARGV[4] the highest HWM the change was judged by.
-- Returns {'ok'} or {'refused', newest version, live leases, highest HWM}: the client turns
-- the figures into the reason (the same rules as every other store).
local version, bound = tonumber(ARGV[2]), tonumber(ARGV[4])
local now = now_ms()
local newest = redis.call('LLEN', KEYS[1])
local live, max_hwm = 0, 0
if version > 1 then
  live = redis.call('ZCOUNT', KEYS[3], '(' .. fmt(now), '+inf')
  for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local hwm = tonumber(redis.call('HGET', ARGV[1] .. 'w:' .. fmt(tonumber(m)), 'hwm') or '0')
    if hwm > max_hwm then
      max_hwm = hwm
    end
  end
end
if newest + 1 ~= version or live > 0 or max_hwm > bound then
  return { 'refused', fmt(newest), fmt(live), fmt(max_hwm) }
end
if version > 1 then
  -- Every holder of the old space is fenced: its next renewal finds another token.
  for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    redis.call('HINCRBY', ARGV[1] .. 'w:' .. fmt(tonumber(m)), 'token', 1)
  end
end
redis.call('RPUSH', KEYS[1], ARGV[3] .. '|' .. fmt(now))
return { 'ok' }
