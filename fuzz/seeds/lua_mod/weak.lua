local mt = {} local w = setmetatable({}, mt) mt.__mode = "v"
local n = 0
on("world.chunk.load", function(c)
  for i = 1, 100 do w[#w + 1] = {} end
  for k, v in pairs(w) do n = n + 1 end
  if #w % 3 == 0 then return cancel(string.rep("\255", 400)) end
  log(string.pack("<d", 0/0), tostring(0/0), #w)
end)
