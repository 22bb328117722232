-- wrk script of scripts/bench's mem part: every request asks one of N tags, at random, for
-- one segment ID: GET /v1/segment/tag-000000000000 ... tag-<N-1, 12 digits>, the names
-- redis-benchmark's -r N gives tag-__rand_int__.
--
--   wrk -t1 -c50 -d5s -s wrk-random-tag.lua http://127.0.0.1:PORT/ -- N
local tags = 10000

function init(args)
  tags = tonumber(args[1]) or tags
  math.randomseed(os.time())
end

function request()
  return wrk.format("GET", string.format("/v1/segment/tag-%012d", math.random(0, tags - 1)))
end
