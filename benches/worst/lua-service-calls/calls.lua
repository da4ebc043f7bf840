-- Every load asks this handler, which calls the cheapest service function until the mod's
-- budget runs out: the tick's cost is what the calls cost, not what their instructions do.
on("world.chunk.load", function(c)
  while true do local r = streaming.isLoaded(c.x, c.z) end
end)
