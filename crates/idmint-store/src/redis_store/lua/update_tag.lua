-- update_tag: changes a tag's step and/or description.
-- KEYS[1] the tag's hash; ARGV[1] the new step or '' to keep it, ARGV[2] '1' to set the
-- description to ARGV[3], '0' to keep it.
-- Returns {'ok', max_id, step, description, updated_at_ms, dating} | {'unknown'}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return { 'unknown' }
end
if ARGV[1] ~= '' then
  redis.call('HSET', KEYS[1], 'step', ARGV[1])
end
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'description', ARGV[3])
end
redis.call('HSET', KEYS[1], 'updated_at_ms', fmt(now_ms()))
local row = tag_row(KEYS[1])
return { 'ok', row[1], row[2], row[3], row[4], row[5] }
