-- list_tags: every tag, as one consistent snapshot.
-- KEYS[1] the set of tag names; ARGV[1] the prefix of tag hashes ('{ns}:seg:').
-- Returns {name, max_id, step, description, updated_at_ms, dating, name, ...}, unsorted.
local out = {}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local row = tag_row(ARGV[1] .. name)
  out[#out + 1] = name
  for i = 1, 5 do
    out[#out + 1] = row[i]
  end
end
return out
