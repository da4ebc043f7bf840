-- dice: refuses one load in six, and counts its answers. What must survive a save is in
-- `storage` (saved with the game, with the state of math.random); the top level runs again in a
-- fresh game before a save is loaded into it, so it only fills in what is missing.
storage.asks = storage.asks or 0
storage.refused = storage.refused or 0

on("world.chunk.load", function(c)
  storage.asks = storage.asks + 1
  if math.random(1, 6) == 1 then
    storage.refused = storage.refused + 1
    log("refused", c.x, c.z, storage.refused .. " of " .. storage.asks)
    return cancel("the dice said no")
  end
end)
