-- 3 tickets of radius 64 (what the default maxTicketChunks holds: with the player's square,
-- 66 564 chunks pending), then every load asks for the longest lists the service has until the
-- mod's budget runs out: each list is charged before it is gathered.
local asked = false
on("world.chunk.load", function(c)
  if not asked then
    asked = true
    for i = 1, 3 do
      streaming.request("t" .. i, {x = i * 6400, z = 0}, 64, 1000)
    end
  end
  while true do
    local a = streaming.pending()
    local b = streaming.loaded()
    local d = streaming.lodLoaded(1)
    local e = streaming.around({x = 0, z = 0})
  end
end)
