-- join_set: records this store as a member of a store set, if it has no record and holds no
-- data (see `WorkerLeases::join_store_set`).
-- KEYS[1] the set record's hash, KEYS[2] the set of tag names, KEYS[3] the sorted set of every
-- worker ID ever leased; ARGV[1] the set ID, ARGV[2] the index, ARGV[3] the count, ARGV[4] the
-- block size (canonical decimals, stored as given).
-- Returns {'exists', set ID, index, count, block, recorded_at_ms} when a record is there (the
-- client decides whether it is the same), {'data'} when the store holds tags or leases, else
-- {'ok', set ID, index, count, block, recorded_at_ms}.
local function record()
  local r = redis.call('HMGET', KEYS[1], 'set_id', 'index', 'count', 'block', 'recorded_at_ms')
  return { r[1] or '', r[2] or '', r[3] or '', r[4] or '', r[5] or '' }
end

if redis.call('EXISTS', KEYS[1]) == 1 then
  local r = record()
  return { 'exists', r[1], r[2], r[3], r[4], r[5] }
end
if redis.call('SCARD', KEYS[2]) > 0 or redis.call('ZCARD', KEYS[3]) > 0 then
  return { 'data' }
end
redis.call('HSET', KEYS[1], 'set_id', ARGV[1], 'index', ARGV[2], 'count', ARGV[3],
  'block', ARGV[4], 'recorded_at_ms', fmt(now_ms()))
local r = record()
return { 'ok', r[1], r[2], r[3], r[4], r[5] }
