on("world.chunk.load", function(c)
  xpcall(function() while true do end end, function() while true do end end)
end)
