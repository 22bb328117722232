-- list_leases: one page of the worker IDs ever leased, by ID, with the store's clock.
-- KEYS[1] the sorted set of worker IDs; ARGV[1] the key prefix, ARGV[2] the lowest score to
-- list ('-inf', or '(<id>' to start after the last ID of the previous page), ARGV[3] the page
-- size.
-- Returns {now_ms, id, node, expires_at_ms, hwm, id, ...}; fewer than ARGV[3] rows on the last
-- page. Paged so that listing millions of IDs never blocks Redis for long.
local out = { fmt(now_ms()) }
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], '+inf', 'LIMIT', 0, ARGV[3])
for _, m in ipairs(ids) do
  local id = fmt(tonumber(m))
  local row = redis.call('HMGET', ARGV[1] .. 'w:' .. id, 'node', 'expires', 'hwm')
  out[#out + 1] = id
  out[#out + 1] = row[1] or ''
  out[#out + 1] = row[2] or ''
  out[#out + 1] = row[3] or ''
end
return out
