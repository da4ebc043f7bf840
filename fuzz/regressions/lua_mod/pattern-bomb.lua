on("world.chunk.load", function(c) local s = string.rep("a", 5000); return s:find(".-.-.-.-b") end)
