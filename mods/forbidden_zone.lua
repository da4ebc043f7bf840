-- forbidden_zone: no chunk in a rectangle of chunks is ever loaded.
-- Shows the Lua API: hook handlers, cancel with a reason, the streaming service, log.
local zone = { minX = 4, maxX = 6, minZ = -2, maxZ = 2 } -- chunk coordinates, inclusive

local function inside(c)
  return c.x >= zone.minX and c.x <= zone.maxX and c.z >= zone.minZ and c.z <= zone.maxZ
end

log(("forbidden zone: chunks x %d..%d, z %d..%d (%g m a side)"):format(
  zone.minX, zone.maxX, zone.minZ, zone.maxZ, streaming.chunkSize()))

on("world.chunk.load", function(c)
  if inside(c) then
    return cancel(("chunk %d,%d is in the forbidden zone"):format(c.x, c.z))
  end
end)
