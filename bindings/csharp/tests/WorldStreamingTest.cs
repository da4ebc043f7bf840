// The C# binding (bindings/csharp/WorldStreaming.cs) driven as a Unity game would: the seed's
// worked example (docs/reference/tick.md#the-worked-example), a drive across
// examples/scenes/terrain.json with every built chunk's heights read back and hashed (FNV-1a 64,
// docs/reference/terrain.md#chunk-content) against its event, entity data, and the error paths, all
// through the WorldStreaming wrapper; and a scene's files and saves as text. Compiled with mcs (C# 7) and run with mono by
// tests/capi_csharp.rs:
//   mono WorldStreamingTest.exe REPO DIR      REPO: the crate; DIR: a scratch directory
// Exits 0 when every check holds, 1 naming those that failed.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using WorldStreamingKit;

static class WorldStreamingTest
{
    static int failures = 0;

    static void Check(bool condition, string what)
    {
        if (!condition)
        {
            Console.Error.WriteLine("check failed: " + what);
            failures++;
        }
    }

    /// <summary>Runs `call`, which must throw a WorldStreamingException with `status` and a message
    /// containing `needle`.</summary>
    static void Expect(WsStatus status, string needle, Action call, string what)
    {
        try
        {
            call();
            Console.Error.WriteLine(what + ": expected " + status + ", got no error");
            failures++;
        }
        catch (WorldStreamingException e)
        {
            Console.WriteLine(e.Message);
            if (e.Status != status || !e.Message.Contains(needle))
            {
                Console.Error.WriteLine(what + ": expected " + status + " with \"" + needle + "\", got " + e.Status + ": " + e.Message);
                failures++;
            }
        }
    }

    const string SeedScene =
        "{ \"kits\": [ { \"id\": \"game.engine\" }, { \"id\": \"world.ground\" }," +
        "  { \"id\": \"world.streaming\", \"config\": { \"chunkSize\": 32, \"radius\": 1, \"budgetMs\": 2 } } ]," +
        "  \"entities\": [ { \"id\": \"hero\", \"tags\": [\"player\"], \"position\": { \"x\": 8, \"z\": 8 } } ] }";

    static void SeedExample(string dir)
    {
        using (var game = new WorldStreaming(SeedScene))
        {
            game.Tick();
            Check(game.DrainEvents() ==
                  "[{\"tick\":1,\"event\":\"world.chunk.loaded\",\"data\":{\"x\":0,\"z\":0}}," +
                  "{\"tick\":1,\"event\":\"world.chunk.loaded\",\"data\":{\"x\":0,\"z\":-1}}]", "tick 1 events");
            var loaded = game.Loaded();
            Check(loaded.Length == 2 && loaded[0].X == 0 && loaded[0].Z == -1 && loaded[1].Z == 0, "loaded() after tick 1");
            Check(game.Pending().Length == 7 && game.Variable("world.chunks.pending") == 7, "7 pending");
            Check(!game.Ready("hero"), "not ready at tick 1");
            game.Tick(3);
            game.Apply("{\"tick\": 5, \"do\": \"player.moved\", \"at\": {\"x\": 8, \"z\": 8}}");
            game.Tick();
            Check(game.TickCount == 5, "tick 5");
            Check(game.Variable("world.chunks.loaded") == 9 && game.Loaded().Length == 9, "9 loaded");
            Check(game.IsLoaded(1, 1) && !game.IsLoaded(2, 0), "(1,1) loaded, (2,0) not");
            // Without `vertical` only row 0 exists (docs/reference/engines.md#vertical-sections-in-c).
            Check(game.IsLoadedSection(1, 0, 1) && !game.IsLoadedSection(2, 0, 0), "section (1, 0, 1) loaded, (2, 0, 0) not");
            Check(!game.IsLoadedSection(1, 1, 1) && !game.IsLoadedSection(1, -1, 1), "no row but 0 in a flat world");
            Check(game.Ready("hero") && !game.Ready("nobody"), "ready at tick 5");
            Check(game.DrainEvents().Contains("\"event\":\"player.moved\""), "player.moved");
            string save = Path.Combine(dir, "seed.save.json");
            game.Save(save);
            using (var fresh = new WorldStreaming(SeedScene))
            {
                fresh.Load(save);
                Check(fresh.TickCount == 5 && fresh.Loaded().Length == 9, "the reload");
                Check(fresh.State() == game.State(), "the same state after the reload");
            }
            Check(game.DrainLog() == "[]", "no mod log");
        }
        Console.WriteLine("seed example: every number as docs/reference/tick.md#the-worked-example has it");
    }

    /// <summary>FNV-1a 64 of a chunk's bytes (docs/reference/terrain.md#chunk-content): the heights
    /// as little-endian u16, then the materials.</summary>
    static ulong ChunkHash(ushort[] heights, byte[] materials, int cells)
    {
        ulong h = 0xcbf29ce484222325UL;
        const ulong prime = 0x100000001b3UL;
        for (int i = 0; i < cells; i++)
        {
            h = (h ^ (ulong)(heights[i] & 0xff)) * prime;
            h = (h ^ (ulong)(heights[i] >> 8)) * prime;
        }
        for (int i = 0; i < cells; i++) h = (h ^ materials[i]) * prime;
        return h;
    }

    static void TerrainDrive(string repo)
    {
        string scenes = Path.Combine(repo, "examples", "scenes");
        string scene = File.ReadAllText(Path.Combine(scenes, "terrain.json"));
        // The record of the header: y last, 40 bytes (docs/reference/engines.md#vertical-sections-in-c).
        Check(System.Runtime.InteropServices.Marshal.SizeOf(typeof(WsChunkEvent)) == 40, "WsChunkEvent is 40 bytes");
        Check(System.Runtime.InteropServices.Marshal.OffsetOf(typeof(WsChunkEvent), "Y").ToInt64() == 32, "Y at offset 32");
        var buffer = new WsChunkEvent[8];
        var events = new List<WsChunkEvent>();
        ushort[] heights = null;
        byte[] materials = null;
        int built = 0, checkedChunks = 0, loaded = 0, unloaded = 0;
        using (var game = new WorldStreaming(scene, scenes))
        {
            for (int t = 1; t <= 40; t++)
            {
                game.Move("hero", 16.0 + 12.0 * t, 0.0, 16.0 - 2.0 * t);
                game.Tick();
                events.Clear();
                game.DrainChunkEvents(events, buffer);
                for (int i = 0; i < events.Count; i++)
                {
                    var e = events[i];
                    Check(e.Level == 0, "level 0");
                    Check(e.Y == 0, "y 0 without vertical");
                    if (e.Kind == (int)WsChunkEventKind.Loaded) loaded++;
                    if (e.Kind == (int)WsChunkEventKind.Unloaded) unloaded++;
                    if (e.Kind != (int)WsChunkEventKind.Built) continue;
                    built++;
                    if (heights == null)
                    {
                        int size = game.TerrainCells(e.X, e.Z);
                        Check(size == 32 * 32, "cellsPerChunk² is 1024, got " + size);
                        heights = new ushort[size];
                        materials = new byte[size];
                    }
                    bool releasedLater = false;
                    for (int k = i + 1; k < events.Count; k++)
                        if (events[k].Kind == (int)WsChunkEventKind.Unloaded && events[k].X == e.X && events[k].Z == e.Z)
                            releasedLater = true;
                    int cells;
                    bool isBuilt = game.TryTerrain(e.X, e.Z, 0, heights, materials, out cells);
                    Check(cells == heights.Length, "cells");
                    Check(isBuilt == !releasedLater, "built unless released later in the tick");
                    if (!isBuilt) continue;
                    Check(ChunkHash(heights, materials, cells) == e.Hash, "the hash of chunk " + e);
                    checkedChunks++;
                }
                Check(!game.DrainEvents().Contains("world.terrain.built"), "built events left the JSON drain");
            }
            Console.WriteLine("terrain drive: " + loaded + " loaded, " + unloaded + " unloaded, " + built +
                              " built, " + checkedChunks + " read back and hashed");
            Check(checkedChunks > 40 && unloaded > 0, "enough chunks");

            // Not built, short buffers, LOD blocks.
            int n;
            Check(!game.TryTerrain(500, 500, 0, heights, materials, out n) && n == 1024, "far chunk not built");
            Check(!game.TryTerrain(0, 0, 1, heights, materials, out n), "no LOD block built");
            Check(game.TerrainCells(9999, 9999) == -1, "TerrainCells of a chunk not built");
            var last = game.Loaded()[0];
            Expect(WsStatus.BufferTooSmall, "1024 are needed",
                   () => game.TryTerrain(last.X, last.Z, 0, new ushort[10], null, out n), "a short buffer");

            // Entity data.
            Check(game.EntityData("hero") == "null", "no data yet");
            game.SetData("hero", "{\"hp\": 3}");
            Check(game.EntityData("hero") == "{\"hp\":3}", "data read back");
            game.SetData("hero", "null");
            Check(game.EntityData("hero") == "null", "data cleared");
            Expect(WsStatus.NoSuchEntity, "ghost", () => game.EntityData("ghost"), "data of a ghost");
            Expect(WsStatus.InputFailed, "ghost", () => game.SetData("ghost", "{}"), "set data of a ghost");
            Expect(WsStatus.BadInput, "expected a JSON object", () => game.SetData("hero", "[]"), "set data to an array");
        }
    }

    static void ErrorPaths()
    {
        Expect(WsStatus.BadScene, "line 1", () => new WorldStreaming("{ not json"), "a bad scene");
        Expect(WsStatus.NullArgument, "scene_json is null", () => new WorldStreaming(null), "a null scene");
        var game = new WorldStreaming(SeedScene);
        Expect(WsStatus.BadInput, "to.x: expected a finite number", () => game.Move("hero", double.NaN, 0, 0), "a NaN move");
        Expect(WsStatus.BadInput, "to.y: expected a finite number", () => game.Move("hero", 0, double.PositiveInfinity, 0), "an infinite move");
        Expect(WsStatus.InputFailed, "ghost", () => game.Move("ghost", 1, 0, 1), "a ghost's move");
        Expect(WsStatus.BadInput, "the next tick to run is 1", () => game.Apply("{\"tick\": 5, \"do\": \"leave\"}"), "a line too late");
        Expect(WsStatus.NoSuchVariable, "no.such", () => game.Variable("no.such"), "no variable");
        Expect(WsStatus.NoTerrain, "world.terrain", () => game.TerrainCells(0, 0), "no terrain");
        Expect(WsStatus.LoadFailed, "missing.json", () => game.Load("/nonexistent/missing.json"), "a missing save");
        {
            // Bytes that are not UTF-8, through the raw declaration (the wrapper always encodes
            // valid UTF-8).
            bool ready;
            IntPtr error;
            var status = WorldStreamingNative.ws_game_ready(game.Handle, new byte[] { 0xff, 0 }, out ready, out error);
            string message = WorldStreamingNative.Take(error);
            Console.WriteLine(WorldStreaming.StatusName(status) + ": " + message);
            Check(status == WsStatus.InvalidUtf8 && message.Contains("entity is not valid UTF-8"), "invalid UTF-8");
        }
        // Another thread: the handle is unknown there.
        WorldStreamingException foreign = null;
        var thread = new Thread(() =>
        {
            try { game.Tick(); } catch (WorldStreamingException e) { foreign = e; }
        });
        thread.Start();
        thread.Join();
        Check(foreign != null && foreign.Status == WsStatus.InvalidHandle && foreign.Message.Contains("another thread"), "another thread's call");
        game.Move("hero", 8, 0, 8);
        game.Tick();
        game.Dispose();
        game.Dispose(); // a second Dispose does nothing
        Expect(WsStatus.InvalidHandle, "handle", () => game.Tick(), "a disposed game");
        Expect(WsStatus.InvalidHandle, "handle", () => game.Move("hero", 1, 0, 1), "a disposed game's move");
        Expect(WsStatus.InvalidHandle, "handle", () => game.DrainChunkEvents(new WsChunkEvent[4]), "a disposed game's drain");
        Check(WorldStreaming.StatusName(WsStatus.NotBuilt) == "WS_STATUS_NOT_BUILT", "status 16 is NOT_BUILT");
        Check(WorldStreaming.StatusName(WsStatus.NoSuchEntity) == "WS_STATUS_NO_SUCH_ENTITY", "status 20");
        // The C# enum copies the header's numbers: each value must carry its own name in the
        // library (NotBuilt -> WS_STATUS_NOT_BUILT), so a renumbering on either side fails here.
        foreach (WsStatus s in Enum.GetValues(typeof(WsStatus)))
        {
            string name = s.ToString();
            var snake = new System.Text.StringBuilder("WS_STATUS_");
            for (int i = 0; i < name.Length; i++)
            {
                if (i > 0 && char.IsUpper(name[i])) snake.Append('_');
                snake.Append(char.ToUpperInvariant(name[i]));
            }
            string expected = snake.ToString().Replace("UTF_8", "UTF8");
            Check(WorldStreaming.StatusName(s) == expected, "status " + (int)s + " is " + expected + ", the library says " + WorldStreaming.StatusName(s));
        }
        Check(WorldStreamingNative.ws_string_free(IntPtr.Zero) == WsStatus.Ok, "freeing null");
    }

    /// <summary>A scene's files and saves as text (docs/reference/engines.md#scene-files-as-text,
    /// docs/reference/engines.md#saves-as-text): examples/scenes/town.json with the JSON mod
    /// keep_home from disk and from text, the same events and state; the refusals; SaveText as
    /// Save's file, LoadText back to the same state, a bad save changing nothing.</summary>
    static void TextAbi(string repo, string dir)
    {
        string scenes = Path.Combine(repo, "examples", "scenes");
        string town = File.ReadAllText(Path.Combine(scenes, "town.json"));
        int brace = town.IndexOf('{');
        string diskScene = "{ \"mods\": [\"../../mods/keep_home.json\"]," + town.Substring(brace + 1);
        string scene = "{ \"mods\": [\"mods/keep_home.json\"]," + town.Substring(brace + 1);
        var files = new Dictionary<string, string>
        {
            { "mods/keep_home.json", File.ReadAllText(Path.Combine(repo, "mods", "keep_home.json")) },
            { "town.district.jsonl", File.ReadAllText(Path.Combine(scenes, "town.district.jsonl")) },
        };
        bool refused = false;
        using (var disk = new WorldStreaming(diskScene, scenes))
        using (var text = WorldStreaming.WithFiles(scene, files))
        {
            for (int t = 1; t <= 12; t++)
            {
                double x = t >= 3 && t < 6 ? 300.0 : 16.0;
                disk.Move("hero", x, 0, 16);
                text.Move("hero", x, 0, 16);
                disk.Tick();
                text.Tick();
                Check(disk.DrainEvents() == text.DrainEvents(), "tick " + t + ": the same events from text");
                string state = text.State();
                Check(disk.State() == state, "tick " + t + ": the same state from text");
                refused |= state.Contains("\"home\"");
            }
            Check(refused, "the mod read from text refused an unload");

            string save = Path.Combine(dir, "town.save.json");
            text.Save(save);
            string saved = text.SaveText();
            Check(saved == File.ReadAllText(save), "SaveText is Save's file");
            string atSave = text.State();
            text.Move("hero", 300, 0, 16);
            text.Tick(5);
            Check(text.State() != atSave, "the state moved on");
            text.LoadText(saved);
            Check(text.State() == atSave, "LoadText gives the state at the save");
            text.DrainEvents();
            Expect(WsStatus.LoadFailed, "load: save: line 1", () => text.LoadText("{"), "a save that is not JSON");
            Expect(WsStatus.LoadFailed, "load: save: ", () => text.LoadText("{\"tick\": \"soon\"}"), "a bad save");
            Check(text.State() == atSave && text.DrainEvents() == "[]" && text.SaveText() == saved, "a refused load changes nothing");
            text.Dispose();
            Expect(WsStatus.InvalidHandle, "handle", () => text.SaveText(), "a disposed game's save text");
            Expect(WsStatus.InvalidHandle, "handle", () => text.LoadText(saved), "a disposed game's load text");
        }
        Expect(WsStatus.BadScene, "mods/keep_home.json does not exist",
               () => WorldStreaming.WithFiles(scene, "{}"), "a file missing from the files");
        Expect(WsStatus.BadScene, "files: \"../x\": expected a path inside",
               () => WorldStreaming.WithFiles(scene, "{\"../x\": \"\"}"), "a key through ..");
        Expect(WsStatus.BadScene, "files: \"/abs.json\": expected a path relative",
               () => WorldStreaming.WithFiles(scene, new Dictionary<string, string> { { "/abs.json", "" } }), "an absolute key");
        Expect(WsStatus.BadScene, "files: \"a.json\": expected the file's text (a string), got 3",
               () => WorldStreaming.WithFiles(scene, "{\"a.json\": 3}"), "a value that is not text");
        Expect(WsStatus.NullArgument, "files_json is null",
               () => WorldStreaming.WithFiles(scene, (string)null), "null files");
        Console.WriteLine("scene files and saves as text: the same game from text as from disk");
    }

    const string CompleteScene =
        "{ \"kits\": [ { \"id\": \"world.ground\" }," +
        "  { \"id\": \"world.streaming\", \"config\": { \"chunkSize\": 32, \"radius\": 1, \"neighbours\": 1, \"budgetMs\": 6 } }," +
        "  { \"id\": \"world.terrain\", \"config\": { \"seed\": 7, \"cellsPerChunk\": 8, \"workers\": 1 } } ]," +
        "  \"entities\": [ { \"id\": \"hero\", \"tags\": [\"player\"], \"position\": { \"x\": 16, \"z\": 16 } } ] }";

    /// <summary>Whether snapshot `s` of chunk (s.X, s.Z) holds, cell for cell, what TryTerrain
    /// reads from the chunk and from the neighbour each skin cell lies in.</summary>
    static bool SnapshotMatchesTerrain(WorldStreaming game, WsSnapshot s, int c)
    {
        var heights = new ushort[c * c];
        var materials = new byte[c * c];
        int cells;
        for (int dz = -1; dz <= 1; dz++)
            for (int dx = -1; dx <= 1; dx++)
            {
                if (!game.TryTerrain(s.X + dx, s.Z + dz, 0, heights, materials, out cells)) return false;
                for (int j = 0; j < s.Side; j++)
                    for (int i = 0; i < s.Side; i++)
                    {
                        int gi = i - (int)s.Skin, gj = j - (int)s.Skin;
                        int ox = gi < 0 ? -1 : gi >= c ? 1 : 0, oz = gj < 0 ? -1 : gj >= c ? 1 : 0;
                        if (ox != dx || oz != dz) continue;
                        int k = (gj - oz * c) * c + (gi - ox * c);
                        if (s.Height(i, j) != heights[k] || s.Material(i, j) != materials[k]) return false;
                    }
            }
        return true;
    }

    /// <summary>Complete chunks and snapshots (docs/reference/engines.md#complete-chunks-in-c): a
    /// drive with neighbours 1 whose Complete / Incomplete events agree with IsComplete and the
    /// variable, snapshots refused before complete and equal to the terrain after, an edit moving
    /// the version, and the refusals.</summary>
    static void CompleteChunks()
    {
        Check((int)WsChunkEventKind.Complete == 7 && (int)WsChunkEventKind.Incomplete == 8, "kinds 7 and 8");
        var complete = new HashSet<long>();
        Func<long, long, long> key = (x, z) => (x << 32) ^ (z & 0xffffffffL);
        var buffer = new WsChunkEvent[6];
        var events = new List<WsChunkEvent>();
        int told = 0, untold = 0, snapshots = 0, refused = 0;
        using (var game = new WorldStreaming(CompleteScene))
        {
            for (int t = 1; t <= 60; t++)
            {
                game.Move("hero", t <= 14 ? 16.0 : 16.0 + 6.0 * (t - 14), 0, 16);
                game.Tick();
                events.Clear();
                game.DrainChunkEvents(events, buffer);
                foreach (var e in events)
                {
                    if (e.Kind == (int)WsChunkEventKind.Complete)
                    {
                        Check(complete.Add(key(e.X, e.Z)), "told complete twice: " + e);
                        told++;
                    }
                    else if (e.Kind == (int)WsChunkEventKind.Incomplete)
                    {
                        Check(complete.Remove(key(e.X, e.Z)), "told incomplete while not complete: " + e);
                        untold++;
                    }
                    else if (e.Kind == (int)WsChunkEventKind.Unloaded)
                    {
                        complete.Remove(key(e.X, e.Z));
                    }
                }
                int completeLoaded = 0;
                foreach (var c in game.Loaded())
                {
                    bool isComplete = game.IsComplete(c.X, c.Z);
                    Check(isComplete == complete.Contains(key(c.X, c.Z)), "tick " + t + ": IsComplete(" + c.X + ", " + c.Z + ") agrees with the events");
                    if (isComplete) completeLoaded++;
                }
                Check(completeLoaded == complete.Count && game.Variable("world.chunks.complete") == complete.Count, "tick " + t + ": the count");
                foreach (var e in events)
                {
                    if (e.Kind == (int)WsChunkEventKind.Complete && complete.Contains(key(e.X, e.Z)))
                    {
                        var s = game.TerrainSnapshot(e.X, e.Z, 1);
                        Check(s != null && s.Side == 10 && s.Heights.Length == 100 && s.Version == 1, "a snapshot of " + e);
                        Check(s != null && SnapshotMatchesTerrain(game, s, 8), "the snapshot of " + e + " is the terrain's cells");
                        Check(s != null && game.TerrainVersion(e.X, e.Z) == s.Version, "the version of " + e);
                        snapshots++;
                    }
                    else if (e.Kind == (int)WsChunkEventKind.Built && game.TerrainCells(e.X, e.Z) > 0 && !game.IsComplete(e.X, e.Z))
                    {
                        Check(game.TerrainSnapshot(e.X, e.Z, 1) == null, "no snapshot before " + e + " is complete");
                        Check(game.TerrainSnapshot(e.X, e.Z, 0) != null, "skin 0 of built " + e);
                        refused++;
                    }
                }
            }
            Console.WriteLine("complete chunks: " + told + " told complete, " + untold + " incomplete, " + snapshots +
                              " snapshots read back, " + refused + " refused before complete");
            Check(told > 20 && untold > 0 && snapshots > 20 && refused > 10, "enough of each");

            long cx = 0, cz = 0;
            foreach (var c in game.Loaded())
                if (game.IsComplete(c.X, c.Z)) { cx = c.X; cz = c.Z; break; }
            ulong before = game.TerrainVersion(cx, cz).Value;
            game.Apply("{\"tick\": " + (game.TickCount + 1) + ", \"do\": \"edit\", \"at\": {\"x\": " + (cx * 32 + 1) + ", \"z\": " + (cz * 32 + 1) + "}, \"height\": 4242}");
            game.Tick();
            var edited = game.TerrainSnapshot(cx, cz, 2);
            Check(edited != null && edited.Version == before + 1 && edited.Height(2, 2) == 4242, "the edit in the snapshot, the version moved");
            Check(edited != null && SnapshotMatchesTerrain(game, edited, 8), "the edited snapshot is the terrain's cells");

            int cells;
            ulong version;
            Expect(WsStatus.BufferTooSmall, "100 are needed",
                   () => game.TryTerrainSnapshot(cx, cz, 1, new ushort[10], null, out cells, out version), "a short snapshot buffer");
            Expect(WsStatus.OutOfRange, "skin 9 is out of range", () => game.TerrainSnapshot(cx, cz, 9), "skin 9");
            Check(!game.TryTerrainSnapshot(-40, 40, 1, new ushort[100], null, out cells, out version) && cells == 100 && version == 0, "far away: not complete");
            Check(game.TerrainVersion(-40, 40) == null && !game.IsComplete(-40, 40), "far away: not built, not complete");
        }
        using (var bare = new WorldStreaming(SeedScene))
        {
            Expect(WsStatus.NoTerrain, "world.terrain", () => bare.TerrainSnapshot(0, 0, 1), "a snapshot without terrain");
            Check(!bare.IsComplete(0, 0), "nothing complete before a tick");
        }
    }

    const string VerticalScene =
        "{ \"kits\": [ { \"id\": \"world.ground\" }," +
        "  { \"id\": \"world.streaming\", \"config\": { \"chunkSize\": 32, \"radius\": 2, \"shape\": \"disc\"," +
        "    \"vertical\": { \"radius\": 2, \"height\": 16 }, \"budgetMs\": 24 } } ]," +
        "  \"entities\": [ { \"id\": \"hero\", \"tags\": [\"player\"], \"position\": { \"x\": 16, \"y\": 8, \"z\": 16 } } ] }";

    /// <summary>Vertical sections (docs/reference/engines.md#vertical-sections-in-c): the hero
    /// climbs and dives; every drained record names a section by (X, Y, Z), the column kinds come
    /// with a column's first and last section, and IsLoadedSection agrees with the events.</summary>
    static void VerticalSections()
    {
        Check((int)WsChunkEventKind.ColumnLoaded == 9 && (int)WsChunkEventKind.ColumnUnloaded == 10, "kinds 9 and 10");
        var sections = new HashSet<Tuple<long, long, long>>();
        var columns = new HashSet<Tuple<long, long>>();
        var buffer = new WsChunkEvent[5];
        var events = new List<WsChunkEvent>();
        long minY = 0, maxY = 0;
        int columnEvents = 0, released = 0;
        using (var game = new WorldStreaming(VerticalScene))
        {
            for (int t = 1; t <= 60; t++)
            {
                double y = t <= 20 ? 8.0 + 5.0 * t : 108.0 - 6.0 * (t - 20);
                game.Move("hero", 16, y, 16);
                game.Tick();
                events.Clear();
                game.DrainChunkEvents(events, buffer);
                foreach (var e in events)
                {
                    var section = Tuple.Create(e.X, e.Y, e.Z);
                    var column = Tuple.Create(e.X, e.Z);
                    Check(e.Level == 0 && e.Hash == 0, "level and hash 0: " + e);
                    switch ((WsChunkEventKind)e.Kind)
                    {
                        case WsChunkEventKind.Loaded:
                            Check(sections.Add(section), "loaded twice: " + e);
                            minY = Math.Min(minY, e.Y);
                            maxY = Math.Max(maxY, e.Y);
                            break;
                        case WsChunkEventKind.Unloaded:
                            Check(sections.Remove(section), "released while not loaded: " + e);
                            released++;
                            break;
                        case WsChunkEventKind.ColumnLoaded:
                            Check(e.Y == 0 && columns.Add(column), "a column loaded twice: " + e);
                            Check(sections.Any(s => s.Item1 == e.X && s.Item3 == e.Z), "a column loaded before its section: " + e);
                            columnEvents++;
                            break;
                        case WsChunkEventKind.ColumnUnloaded:
                            Check(e.Y == 0 && columns.Remove(column), "a column released while not loaded: " + e);
                            Check(!sections.Any(s => s.Item1 == e.X && s.Item3 == e.Z), "a column released before its last section: " + e);
                            columnEvents++;
                            break;
                        default:
                            Check(false, "an unexpected kind: " + e);
                            break;
                    }
                }
                Check(columns.SetEquals(sections.Select(s => Tuple.Create(s.Item1, s.Item3))), "tick " + t + ": the columns are the sections' columns");
                foreach (var s in sections)
                    Check(game.IsLoadedSection(s.Item1, s.Item2, s.Item3), "tick " + t + ": section " + s + " told loaded");
                long row = (long)Math.Floor(y / 16.0);
                for (long sy = row - 5; sy <= row + 5; sy++)
                    Check(game.IsLoadedSection(0, sy, 0) == sections.Contains(Tuple.Create(0L, sy, 0L)), "tick " + t + ": row " + sy);
                Check(game.Variable("world.chunks.loaded") == sections.Count, "tick " + t + ": world.chunks.loaded counts sections");
            }
        }
        Check(minY < 0 && maxY >= 6 && released > 50 && columnEvents > 0, "rows " + minY + " ..= " + maxY + ", " + released + " released");
        Console.WriteLine("vertical sections: rows " + minY + " ..= " + maxY + " seen through WsChunkEvent.Y, " + released + " released, " + columnEvents + " column events");
    }

    static int Main(string[] args)
    {
        if (args.Length != 2)
        {
            Console.Error.WriteLine("usage: WorldStreamingTest.exe REPO DIR");
            return 2;
        }
        Console.WriteLine("library " + WorldStreaming.Version);
        SeedExample(args[1]);
        TerrainDrive(args[0]);
        ErrorPaths();
        TextAbi(args[0], args[1]);
        CompleteChunks();
        VerticalSections();
        if (failures > 0)
        {
            Console.Error.WriteLine("WorldStreamingTest: " + failures + " check(s) failed");
            return 1;
        }
        Console.WriteLine("WorldStreamingTest: every check passed");
        return 0;
    }
}
