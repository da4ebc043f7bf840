on("world.chunk.unload", function(c)
  local x <close> = setmetatable({}, {__close = function() while true do end end})
  while true do pcall(Lerror) end
end)
