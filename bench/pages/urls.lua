-- wrk script: each request asks for a path drawn at random from a file, one path per line.
--   wrk -t1 -c8 -d20s --latency -s bench/pages/urls.lua http://127.0.0.1:8765 -- PATHS_FILE SEED

local threads = {}
local paths = {}

function setup(thread)
  thread:set("number", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(args[1]) do
    if line ~= "" then
      paths[#paths + 1] = line
    end
  end
  -- The same seed gives the same sequence of paths on every run (per thread).
  math.randomseed((tonumber(args[2]) or 1) * 1000 + number)
end

function request()
  return wrk.format("GET", paths[math.random(#paths)])
end
