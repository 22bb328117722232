-- create_tag: creates a tag unless it exists.
-- KEYS[1] the tag's hash, KEYS[2] the set of tag names; ARGV[1] the tag name, ARGV[2] first
-- ID, ARGV[3] step, ARGV[4] description, ARGV[5] the dating of a dated tag ('' for a plain one).
-- Returns {'ok', max_id, step, description, updated_at_ms, dating} | {'exists'}.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return { 'exists' }
end
redis.call('HSET', KEYS[1], 'max_id', ARGV[2], 'step', ARGV[3], 'description', ARGV[4],
  'updated_at_ms', fmt(now_ms()))
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[1], 'dating', ARGV[5])
end
redis.call('SADD', KEYS[2], ARGV[1])
local row = tag_row(KEYS[1])
return { 'ok', row[1], row[2], row[3], row[4], row[5] }
