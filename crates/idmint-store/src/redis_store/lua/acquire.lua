-- acquire: takes a worker ID for a node and issues a new fencing token, in one decision.
-- KEYS[1] the sorted set of every worker ID ever leased (score = ID), KEYS[2] the sorted set of
-- expiries (score = expires_at_ms);
-- ARGV[1] the key prefix ('{ns}:'), ARGV[2] the node name, ARGV[3] the worker count (<= 2^53),
-- ARGV[4] a static worker ID (< count) or '' to choose one, ARGV[5] the TTL in ms (<= 2^52),
-- ARGV[6] the ID-space version the node mints in, or '' not to check it; KEYS[3] the list of
-- ID-space records; ARGV[7] and ARGV[8] the store's partition: its index and the set's size
-- (0 and 1 for a single store): only worker IDs w with w % size == index are candidates;
-- KEYS[4] the store's set record, which must name the same index and size (none: 0 and 1).
-- Returns {'ok', worker ID, token, hwm, expires_at_ms} | {'held', holder} | {'none'} |
-- {'space', version in force}.
--
-- Keys of one worker and one node are built from the prefix: '{ns}:w:<id>' (hash: node,
-- token, hwm, expires) and '{ns}:node:<name>' (sorted set of the IDs the node held last,
-- score = expires_at_ms).
local prefix, node = ARGV[1], ARGV[2]
local count, ttl = tonumber(ARGV[3]), tonumber(ARGV[5])
local part_index, part_count = tonumber(ARGV[7]), tonumber(ARGV[8])

-- Whether this store leases worker ID id: below count, and of its partition.
local function candidate(id)
  return id < count and id % part_count == part_index
end

local now = now_ms()

local recorded = redis.call('HMGET', KEYS[4], 'index', 'count')
if tonumber(recorded[1] or '0') ~= part_index or tonumber(recorded[2] or '1') ~= part_count then
  return { 'set' }
end

local in_force = redis.call('LLEN', KEYS[3])
if ARGV[6] ~= '' and tonumber(ARGV[6]) ~= in_force then
  return { 'space', fmt(in_force) }
end

local function worker_key(id)
  return prefix .. 'w:' .. fmt(id)
end

local function node_key(name)
  return prefix .. 'node:' .. name
end

-- The choice of a worker ID is idmint's one policy, `idmint_core::store::choose_worker` (the
-- other stores call it): the node's own expired ID, else the smallest never-used one, else the
-- one that expired longest ago. These three functions are its steps, on Redis' sorted sets.

-- The node's own worker ID that expired most recently, if any is below count.
local function previous()
  local ids = redis.call('ZREVRANGEBYSCORE', node_key(node), fmt(now), '-inf')
  for _, m in ipairs(ids) do
    local id = tonumber(m)
    if candidate(id) then
      return id
    end
  end
  return nil
end

-- The smallest worker ID below count that was never leased: a binary search over ZCOUNT,
-- O(log(count) * log(n)). Invariant: every ID below lo is used; an unused one is in [lo, hi].
local function never_used()
  if part_count > 1 then
    -- A store of a set: its worker IDs are part_index, part_index + part_count, ...; the
    -- first one missing from the ever-leased set, found by walking it in order.
    local want = part_index
    while want < count do
      -- Every member returned is at or above want, so each batch moves want on or ends.
      local batch = redis.call('ZRANGEBYSCORE', KEYS[1], fmt(want), '+inf', 'LIMIT', 0, 128)
      if #batch == 0 then
        return want
      end
      for _, m in ipairs(batch) do
        local id = tonumber(m)
        if id > want then
          return want < count and want or nil
        end
        if id == want then
          want = want + part_count
        end
      end
    end
    return nil
  end
  if count < 1 or redis.call('ZCOUNT', KEYS[1], 0, fmt(count - 1)) >= count then
    return nil
  end
  local lo, hi = 0, count - 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if redis.call('ZCOUNT', KEYS[1], fmt(lo), fmt(mid)) < mid - lo + 1 then
      hi = mid
    else
      lo = mid + 1
    end
  end
  return lo
end

-- The worker ID below count that expired longest ago (ties: the smallest ID). Skips, in
-- batches, expired IDs at or above count (left by a wider layout).
local function longest_expired()
  local offset = 0
  while true do
    local batch = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', fmt(now), 'LIMIT', offset, 128)
    if #batch == 0 then
      return nil
    end
    for _, m in ipairs(batch) do
      local id = tonumber(m)
      if candidate(id) then
        return id
      end
    end
    offset = offset + #batch
  end
end

local id
if ARGV[4] ~= '' then
  id = tonumber(ARGV[4])
  local row = redis.call('HMGET', worker_key(id), 'node', 'expires')
  if row[1] and row[1] ~= node and tonumber(row[2]) > now then
    return { 'held', row[1] }
  end
else
  id = previous() or never_used() or longest_expired()
  if id == nil then
    return { 'none' }
  end
end

local key, m = worker_key(id), member(id)
local expires = fmt(now + ttl)
local last = redis.call('HGET', key, 'node')
if last and last ~= node then
  redis.call('ZREM', node_key(last), m)
end
redis.call('HINCRBY', key, 'token', 1)
redis.call('HSETNX', key, 'hwm', '0')
redis.call('HSET', key, 'node', node, 'expires', expires)
redis.call('ZADD', KEYS[1], fmt(id), m)
redis.call('ZADD', KEYS[2], expires, m)
redis.call('ZADD', node_key(node), expires, m)
local lease = redis.call('HMGET', key, 'token', 'hwm')
return { 'ok', fmt(id), lease[1], lease[2], expires }
