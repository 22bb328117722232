-- idmint: helpers prepended to every script (see ../scripts.rs).
--
-- Lua numbers are doubles: exact only up to 2^53. IDs, tokens and high-water marks are handled
-- as the decimal strings Redis stores, so nothing above 2^53 is ever rounded; only times
-- (ms since the epoch), TTLs and worker IDs, all kept below 2^53 by the caller, are numbers.

-- Replicate the script's effects, not the script: it reads the clock (TIME). A no-op from
-- Redis 7 on, where effects replication is the only mode.
if redis.replicate_commands then
  redis.replicate_commands()
end

-- The store's clock, in ms since the Unix epoch.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A whole number (below 2^53) as the decimal string Redis stores.
local function fmt(n)
  return string.format('%d', n)
end

-- A worker ID as a sorted-set member: zero-padded, so members with equal scores sort by ID.
local function member(id)
  return string.format('%016d', id)
end

-- Whether the canonical decimal string a is greater than b, exactly, byte by byte.
local function dec_gt(a, b)
  if #a ~= #b then
    return #a > #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x > y
    end
  end
  return false
end

-- A tag hash's fields, in the order the client reads them; '' for a missing field (the client
-- refuses it), never nil, which would cut a Lua array short.
local function tag_row(key)
  local row = redis.call('HMGET', key, 'max_id', 'step', 'description', 'updated_at_ms', 'dating')
  return { row[1] or '', row[2] or '', row[3] or '', row[4] or '', row[5] or '' }
end
