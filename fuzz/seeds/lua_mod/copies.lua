local big = string.rep("x", 4 * 1024 * 1024)
local t = {[big .. "k"] = 1}
on("world.chunk.load", function(c)
  for i = 1, 1e9 do local y = big .. "a" local z = big == big .. "" for k in pairs(t) do end end
end)
on("world.chunk.unload", function(c) error(big, 0) end)
