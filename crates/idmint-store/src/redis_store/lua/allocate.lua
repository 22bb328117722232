-- allocate: takes [max_id, max_id + step) for a tag and advances max_id past it.
-- KEYS[1] the tag's hash; ARGV[1] the step (a decimal, 1..2^63-1).
-- Returns {'ok', new max_id} | {'unknown'} | {'full', max_id} | {'corrupt', message}.
--
-- HINCRBY does the addition in Redis's 64-bit integers and refuses (changing nothing) when the
-- result would pass 2^63-1: that is the guard against passing the largest ID.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return { 'unknown' }
end
local added = redis.pcall('HINCRBY', KEYS[1], 'max_id', ARGV[1])
if type(added) == 'table' and added.err then
  local max_id = redis.call('HGET', KEYS[1], 'max_id') or ''
  if string.find(added.err, 'overflow', 1, true) then
    return { 'full', max_id }
  end
  return { 'corrupt', 'max_id `' .. max_id .. '`: ' .. added.err }
end
redis.call('HSET', KEYS[1], 'updated_at_ms', fmt(now_ms()))
return { 'ok', redis.call('HGET', KEYS[1], 'max_id') }
