on("world.chunk.unload", function(c) error(setmetatable({}, {__tostring = function() return "t" end})) end)
