-- renew: extends a lease and raises its HWM to max(stored, ARGV[3]), only if the token holds.
-- KEYS[1] the worker's hash, KEYS[2] the sorted set of expiries; ARGV[1] the key prefix,
-- ARGV[2] the token, ARGV[3] the HWM (canonical decimal), ARGV[4] the TTL in ms (<= 2^52),
-- ARGV[5] the worker ID as a sorted-set member.
-- Returns {'ok', hwm, expires_at_ms} | {'lost'}.
local row = redis.call('HMGET', KEYS[1], 'token', 'node', 'hwm')
if not row[1] or row[1] ~= ARGV[2] then
  return { 'lost' }
end
local hwm = row[3] or '0'
if dec_gt(ARGV[3], hwm) then
  hwm = ARGV[3]
end
local expires = fmt(now_ms() + tonumber(ARGV[4]))
redis.call('HSET', KEYS[1], 'hwm', hwm, 'expires', expires)
redis.call('ZADD', KEYS[2], expires, ARGV[5])
redis.call('ZADD', ARGV[1] .. 'node:' .. row[2], expires, ARGV[5])
return { 'ok', hwm, expires }
