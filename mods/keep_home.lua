-- keep_home: never release the home chunk (0, 0), the chunk the game starts in.
-- The Lua twin of keep_home.json. Its id is the file stem, "keep_home".
on("world.chunk.unload", function(c)
  if c.x == 0 and c.z == 0 then
    return cancel("home")
  end
end)
