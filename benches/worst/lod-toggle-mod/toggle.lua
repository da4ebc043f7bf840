-- Every tick, switches between radius 1 without levels of detail and radius 64 with one level
-- of step 2 reaching 1 024 chunks (the largest), so that each tick the planner goes from one to
-- the other. Its clock: a ticket of radius 0 that never ends, whose ticksLeft falls by one a
-- tick (the handlers of one tick all read the same value).
streaming.request("clock", {x = 0, z = 0}, 0, 2147483647)
local function toggle()
  if streaming.tickets()[1].ticksLeft % 2 == 0 then
    streaming.setRadius(64)
    streaming.setLod({{step = 2, radius = 1024}})
  else
    streaming.setLod({})
    streaming.setRadius(1)
  end
end
on("world.chunk.load", toggle)
on("world.chunk.unload", toggle)
