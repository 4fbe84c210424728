-- Token buckets of one limit pool, shared by every worker: requests,
-- tokens, input tokens, output tokens, in one hash (KEYS[1]).
--
-- ARGV[1]    "take": charge only if every bucket has room, else return the
--            wait in microseconds; "adjust": charge unconditionally
--            (negative amounts give tokens back).
-- ARGV[2..13] per bucket (requests, tokens, input, output): refill per
--            second, capacity, amount. A refill of 0: not limited, skipped.
-- ARGV[14]   expiry of the hash in milliseconds (idle pools go away).
--
-- Each bucket is continuously refilled and may go into debt, like the
-- limiter's local ones: a demand above the capacity waits for a full
-- bucket only, and an under-estimate found after a call is charged in
-- full. The clock is the server's (TIME), the same for every worker.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local take = ARGV[1] == 'take'
local names = {'r', 't', 'i', 'o'}
local level = {}
local wait = 0
for k, name in ipairs(names) do
  local rate = tonumber(ARGV[3 * k - 1])
  local burst = tonumber(ARGV[3 * k])
  local n = tonumber(ARGV[3 * k + 1])
  if rate > 0 then
    local state = redis.call('HMGET', KEYS[1], name .. 't', name .. 'l')
    local tokens = tonumber(state[1]) or burst
    local last = tonumber(state[2]) or now
    if now > last then
      tokens = tokens + rate * (now - last)
    end
    tokens = math.min(tokens, burst)
    if take then
      local need = math.min(n, burst)
      if tokens + 1e-6 < need then
        wait = math.max(wait, (need - tokens) / rate)
      end
    end
    level[name] = math.min(burst, tokens - n)
  end
end
if wait > 0 then
  return math.ceil(wait * 1000000)
end
for name, tokens in pairs(level) do
  redis.call('HSET', KEYS[1], name .. 't', string.format('%.17g', tokens), name .. 'l', string.format('%.6f', now))
end
redis.call('PEXPIRE', KEYS[1], ARGV[14])
return 0
