-- release: frees a worker ID at once (expires = 0) and records the final HWM, only if the token
-- holds. The final HWM is the highest tick the holder issued: it may be below the HWM the
-- holder had raised ahead of the clock, since nothing above it was issued and the holder
-- issues nothing more.
-- KEYS[1] the worker's hash, KEYS[2] the sorted set of expiries; ARGV[1] the key prefix,
-- ARGV[2] the token, ARGV[3] the final HWM (canonical decimal), ARGV[4] the worker ID as a
-- sorted-set member.
-- Returns {'ok'} | {'lost'}.
local row = redis.call('HMGET', KEYS[1], 'token', 'node', 'hwm')
if not row[1] or row[1] ~= ARGV[2] then
  return { 'lost' }
end
redis.call('HSET', KEYS[1], 'hwm', ARGV[3], 'expires', '0')
redis.call('ZADD', KEYS[2], 0, ARGV[4])
redis.call('ZADD', ARGV[1] .. 'node:' .. row[2], 0, ARGV[4])
return { 'ok' }
