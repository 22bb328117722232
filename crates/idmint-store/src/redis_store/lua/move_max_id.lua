-- move_max_id: sets a tag's max_id to a new value if it holds the expected one: a tail given
-- back (the new value below), or a range taken by a store of a set (above).
-- KEYS[1] the tag's hash; ARGV[1] the expected max_id, ARGV[2] the new one (canonical decimals,
-- compared and stored as strings, never as Lua doubles).
-- Returns {'ok'} when max_id became the new value, {'no'} when it was not the expected one,
-- {'unknown'}.
local max_id = redis.call('HGET', KEYS[1], 'max_id')
if not max_id then
  return { 'unknown' }
end
if max_id ~= ARGV[1] then
  return { 'no' }
end
redis.call('HSET', KEYS[1], 'max_id', ARGV[2], 'updated_at_ms', fmt(now_ms()))
return { 'ok' }
