-- wrk script of scripts/bench's sec part: every request carries `Authorization: Bearer TOKEN`
-- (a header whose value has a space, which the series' word-split options cannot pass).
--
--   wrk -t1 -c50 -d5s -s wrk-bearer.lua https://127.0.0.1:PORT/v1/snowflake -- TOKEN

function init(args)
  wrk.headers["Authorization"] = "Bearer " .. (args[1] or "")
end
