-- give_back: returns the unused tail [start, end) if nobody allocated after it (max_id == end).
-- KEYS[1] the tag's hash; ARGV[1] start, ARGV[2] end (canonical decimals).
-- Returns {'ok'} when max_id became start, {'no'} when someone allocated after, {'unknown'}.
local max_id = redis.call('HGET', KEYS[1], 'max_id')
if not max_id then
  return { 'unknown' }
end
if max_id ~= ARGV[2] then
  return { 'no' }
end
redis.call('HSET', KEYS[1], 'max_id', ARGV[1], 'updated_at_ms', fmt(now_ms()))
return { 'ok' }
