local function f(...) return f(1, ...) end
on("world.chunk.load", function(c) f() end)
