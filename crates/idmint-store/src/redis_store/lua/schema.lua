-- schema: reads the namespace's layout version and records ARGV[1] (this binary's) unless the
-- stored one is newer. KEYS[1] the version key.
-- Returns {version found ('0' for an empty namespace)}.
local found = redis.call('GET', KEYS[1]) or '0'
local current = tonumber(found)
if current == nil then
  return { found }
end
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return { found }
