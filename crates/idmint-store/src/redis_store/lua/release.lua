-- release: frees a worker ID at once (expires = 0) and records the final HWM (raised, never
-- lowered), only if the token holds.
-- KEYS[1] the worker's hash, KEYS[2] the sorted set of expiries; ARGV[1] the key prefix,
-- ARGV[2] the token, ARGV[3] the final HWM (canonical decimal), ARGV[4] the worker ID as a
-- sorted-set member.
-- Returns {'ok'} | {'lost'}.
local row = redis.call('HMGET', KEYS[1], 'token', 'node', 'hwm')
if not row[1] or row[1] ~= ARGV[2] then
  return { 'lost' }
end
local hwm = row[3] or '0'
if dec_gt(ARGV[3], hwm) then
  hwm = ARGV[3]
end
redis.call('HSET', KEYS[1], 'hwm', hwm, 'expires', '0')
redis.call('ZADD', KEYS[2], 0, ARGV[4])
redis.call('ZADD', ARGV[1] .. 'node:' .. row[2], 0, ARGV[4])
return { 'ok' }
