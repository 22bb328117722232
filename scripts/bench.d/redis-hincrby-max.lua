-- The "Redis HINCRBY with a durable maximum" scheme of SEEDS.md, for scripts/bench.
--
--   EVALSHA <sha> 1 <hash> [n]
--
-- KEYS[1]  the sequence's hash: {cur, max, seq_recently, seq_long_term}. max is also kept in
--          a database, and a job raises it ahead of the consumption rate (keeping e.g. 15
--          minutes' worth); the job also keeps the two rate fields. Neither is on this path.
-- ARGV[1]  how many IDs to take (optional, default 1).
--
-- Returns the last of the n IDs taken (cur after the increment), or an error, at once, when
-- that would pass max: the caller fails fast rather than block.
local n = tonumber(ARGV[1] or '1')
if n == nil or n < 1 then
  return redis.error_reply('ERR n must be a positive integer')
end
local fields = redis.call('HMGET', KEYS[1], 'cur', 'max')
local cur = tonumber(fields[1] or '0')
local max = tonumber(fields[2] or '0')
if cur + n > max then
  return redis.error_reply('ERR sequence exhausted: cur ' .. cur .. ' + ' .. n .. ' > max ' .. max)
end
return redis.call('HINCRBY', KEYS[1], 'cur', n)
