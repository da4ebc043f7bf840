-- At its first ask, requests 1 024 tickets of radius 64 (each 129 x 129 chunks), 40 km apart:
-- past maxTicketChunks, each request answers nil, message (and world.ticket.refused).
local done, held, refused = false, 0, 0
on("world.chunk.load", function(c)
  if done then return end
  done = true
  for i = 0, 1023 do
    local ok = streaming.request(("t%04d"):format(i), {x = (i % 32) * 40960, z = (i // 32) * 40960}, 64, 100)
    if ok then held = held + 1 else refused = refused + 1 end
  end
  log("tickets held", held, "refused", refused)
end)
