-- allocate: takes [max_id, max_id + step) for a tag and advances max_id past it; when a full step
-- does not fit below 2^63-1 (MAX_SEGMENT_ID), takes the rest, [max_id, 2^63-1).
-- KEYS[1] the tag's hash; ARGV[1] the step (a decimal, 1..2^63-1).
-- Returns {'ok', start, end} | {'unknown'} | {'exhausted'} | {'corrupt', message}, or Redis's
-- error when HINCRBY fails for another reason than the value (e.g. -OOM).
--
-- HINCRBY does the addition in Redis's 64-bit integers and refuses (changing nothing) when the
-- result would pass 2^63-1: exactly when a full step does not fit. The rest then ends at 2^63-1,
-- set as a string, so no number above 2^53 ever goes through a Lua double. max_id is already
-- 2^63-1 (nothing left) when that refusal comes with max_id at the end.
local MAX_ID = '9223372036854775807'
if redis.call('EXISTS', KEYS[1]) == 0 then
  return { 'unknown' }
end
local start = redis.call('HGET', KEYS[1], 'max_id') or ''
local added = redis.pcall('HINCRBY', KEYS[1], 'max_id', ARGV[1])
if type(added) == 'table' and added.err then
  if string.find(added.err, 'not an integer', 1, true) then
    return { 'corrupt', 'max_id `' .. start .. '`: ' .. added.err }
  end
  if not string.find(added.err, 'overflow', 1, true) then
    -- Not about the value (out of memory under maxmemory, say): Redis's own error, so its code
    -- (OOM) tells the node to try again rather than call the tag damaged.
    return redis.error_reply(added.err)
  end
  if start == MAX_ID then
    return { 'exhausted' }
  end
  redis.call('HSET', KEYS[1], 'max_id', MAX_ID)
end
redis.call('HSET', KEYS[1], 'updated_at_ms', fmt(now_ms()))
return { 'ok', start, redis.call('HGET', KEYS[1], 'max_id') }
