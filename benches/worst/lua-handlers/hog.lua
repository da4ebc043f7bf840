-- 1 000 load handlers, each spending nearly its budget of 1 000 000 units and returning: not a
-- runaway. An audit's mod (7.5-8.8 s a tick in a debug build, before the tick budget).
for i = 1, 1000 do
  on("world.chunk.load", function(c)
    local x = 0
    for j = 1, 450000 do x = x + j end
  end)
end
