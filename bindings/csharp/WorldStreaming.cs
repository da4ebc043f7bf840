// WorldStreaming.cs: the C ABI of the world.streaming kit (include/world_streaming.h) for C#
// (Unity, Mono, .NET). Drop this file into a Unity project's Assets/ and the native library
// (libworld_streaming.so / world_streaming.dll / libworld_streaming.dylib, from
// `cargo build --release`) into Assets/Plugins/. C# 7, no unsafe code, no Unity dependency.
//
// Two layers:
// - `WorldStreamingNative`: one P/Invoke declaration per C function, exactly the header's
//   (strings go in as NUL-terminated UTF-8 byte arrays, strings come out as IntPtr to hand back
//   to ws_string_free).
// - `WorldStreaming`: a game as an IDisposable object. Every call checks the status and throws a
//   `WorldStreamingException` (with the status and the library's message) on an error, and frees
//   every string the library hands out. A game is used on the thread that created it (Unity's
//   main thread): Dispose it there too (there is no finalizer, as a finalizer runs on another
//   thread, where the handle is unknown).
//
// The test program bindings/csharp/tests/WorldStreamingTest.cs drives it (tests/capi_csharp.rs
// compiles it with mcs and runs it with mono).
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace WorldStreamingKit
{
    /// <summary>What a call did (WsStatus): OK is 0; every other value is an error.</summary>
    public enum WsStatus
    {
        Ok = 0,
        NullArgument = 1,
        InvalidUtf8 = 2,
        InvalidHandle = 3,
        Poisoned = 4,
        BadScene = 5,
        BadInput = 6,
        InputFailed = 7,
        NoStreaming = 8,
        SaveFailed = 9,
        LoadFailed = 10,
        OutOfRange = 11,
        BufferTooSmall = 12,
        NoSuchVariable = 13,
        UnknownString = 14,
        Panic = 15,
        NotBuilt = 16,
        WorldInUse = 17,
        EditsLost = 18,
        NotComplete = 19,
        NoSuchEntity = 20,
        NoTerrain = 21,
    }

    /// <summary>One chunk (WsChunk).</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct WsChunk
    {
        public long X;
        public long Z;
    }

    /// <summary>One chunk event (WsChunkEvent): Kind is one of the WsChunkEventKind values.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct WsChunkEvent
    {
        public int Kind;
        public uint Level;
        public long X;
        public long Z;
        public ulong Hash;
        /// <summary>The section row: the event's y with `vertical` on, else 0 (the last field,
        /// docs/reference/engines.md#vertical-sections-in-c).</summary>
        public long Y;

        public override string ToString()
        {
            // "(x, z)" in row 0, "(x, y, z)" in any other, as the kit writes a chunk.
            if (Y == 0)
                return string.Format("{0} level {1} ({2}, {3}) {4:x16}", (WsChunkEventKind)Kind, Level, X, Z, Hash);
            return string.Format("{0} level {1} ({2}, {3}, {4}) {5:x16}", (WsChunkEventKind)Kind, Level, X, Y, Z, Hash);
        }
    }

    /// <summary>The WS_CHUNK_EVENT_* kinds.</summary>
    public enum WsChunkEventKind
    {
        Loaded = 0,
        Unloaded = 1,
        Built = 2,
        Changed = 3,
        LodLoaded = 4,
        LodUnloaded = 5,
        LodBuilt = 6,
        /// <summary>world.chunk.complete: the chunk and its neighbours are loaded and built.</summary>
        Complete = 7,
        /// <summary>world.chunk.incomplete: a chunk complete at the end of the last tick is not now.</summary>
        Incomplete = 8,
        /// <summary>world.column.loaded: the first section of a column loaded (only with `vertical`).</summary>
        ColumnLoaded = 9,
        /// <summary>world.column.unloaded: the last section of a column released (only with `vertical`).</summary>
        ColumnUnloaded = 10,
    }

    /// <summary>A bordered snapshot of a complete chunk (ws_game_terrain_snapshot): Side x Side cells
    /// (Side = cellsPerChunk + 2 Skin) in row order, cell (i, j) at j * Side + i, the chunk's own
    /// first cell at (Skin, Skin); and the chunk's version when it was taken.</summary>
    public sealed class WsSnapshot
    {
        public long X { get; private set; }
        public long Z { get; private set; }
        public uint Skin { get; private set; }
        public int Side { get; private set; }
        public ushort[] Heights { get; private set; }
        public byte[] Materials { get; private set; }
        public ulong Version { get; private set; }

        public WsSnapshot(long x, long z, uint skin, int side, ushort[] heights, byte[] materials, ulong version)
        {
            X = x;
            Z = z;
            Skin = skin;
            Side = side;
            Heights = heights;
            Materials = materials;
            Version = version;
        }

        /// <summary>The height of cell (i, j), i east and j north, both 0..Side-1.</summary>
        public ushort Height(int i, int j) { return Heights[j * Side + i]; }

        /// <summary>The material of cell (i, j).</summary>
        public byte Material(int i, int j) { return Materials[j * Side + i]; }
    }

    /// <summary>The C functions, one declaration each (see include/world_streaming.h).</summary>
    public static class WorldStreamingNative
    {
        const string Lib = "world_streaming";

        [DllImport(Lib)] public static extern IntPtr ws_version();
        [DllImport(Lib)] public static extern IntPtr ws_status_name(int status);
        [DllImport(Lib)] public static extern WsStatus ws_string_free(IntPtr s);
        [DllImport(Lib)] public static extern WsStatus ws_game_new(byte[] sceneJson, byte[] baseDir, out ulong game, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_free(ulong game, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_apply(ulong game, byte[] line, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_tick(ulong game, ulong n, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_tick_count(ulong game, out ulong tick, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_drain_events(ulong game, out IntPtr json, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_move(ulong game, byte[] entity, double x, double y, double z, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_drain_chunk_events(ulong game, [Out] WsChunkEvent[] events, UIntPtr capacity, out UIntPtr count, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_terrain(ulong game, long x, long z, uint level, [Out] ushort[] heights, [Out] byte[] materials, UIntPtr capacity, out UIntPtr cells, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_terrain_snapshot(ulong game, long x, long z, uint skin, [Out] ushort[] heights, [Out] byte[] materials, UIntPtr capacity, out UIntPtr cells, out ulong version, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_terrain_version(ulong game, long x, long z, out ulong version, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_set_data(ulong game, byte[] entity, byte[] json, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_entity_data(ulong game, byte[] entity, out IntPtr json, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_drain_log(ulong game, out IntPtr json, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_state(ulong game, out IntPtr json, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_is_loaded(ulong game, long x, long z, [MarshalAs(UnmanagedType.U1)] out bool loaded, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_is_loaded_section(ulong game, long x, long y, long z, [MarshalAs(UnmanagedType.U1)] out bool loaded, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_is_complete(ulong game, long x, long z, [MarshalAs(UnmanagedType.U1)] out bool complete, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_ready(ulong game, byte[] entity, [MarshalAs(UnmanagedType.U1)] out bool ready, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_ticket_ready(ulong game, byte[] id, [MarshalAs(UnmanagedType.U1)] out bool ready, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_loaded(ulong game, [Out] WsChunk[] chunks, UIntPtr capacity, out UIntPtr count, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_pending(ulong game, [Out] WsChunk[] chunks, UIntPtr capacity, out UIntPtr count, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_variable(ulong game, byte[] name, out double value, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_save(ulong game, byte[] path, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_load(ulong game, byte[] path, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_new_with_files(byte[] sceneJson, byte[] filesJson, out ulong game, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_save_text(ulong game, out IntPtr json, out IntPtr error);
        [DllImport(Lib)] public static extern WsStatus ws_game_load_text(ulong game, byte[] json, out IntPtr error);

        /// <summary>A C string argument: the text as UTF-8 with its NUL (null stays null).</summary>
        public static byte[] Utf8(string text)
        {
            if (text == null) return null;
            var bytes = new byte[Encoding.UTF8.GetByteCount(text) + 1];
            Encoding.UTF8.GetBytes(text, 0, text.Length, bytes, 0);
            return bytes;
        }

        /// <summary>Reads a NUL-terminated UTF-8 string (null for IntPtr.Zero); does not free it.</summary>
        public static string Read(IntPtr s)
        {
            if (s == IntPtr.Zero) return null;
            int n = 0;
            while (Marshal.ReadByte(s, n) != 0) n++;
            var bytes = new byte[n];
            Marshal.Copy(s, bytes, 0, n);
            return Encoding.UTF8.GetString(bytes);
        }

        /// <summary>Reads a string the library handed out and frees it.</summary>
        public static string Take(IntPtr s)
        {
            string text = Read(s);
            if (s != IntPtr.Zero) ws_string_free(s);
            return text;
        }
    }

    /// <summary>A call that failed: its status and the library's message.</summary>
    public class WorldStreamingException : Exception
    {
        public WsStatus Status { get; private set; }

        public WorldStreamingException(WsStatus status, string message)
            : base(WorldStreaming.StatusName(status) + ": " + message)
        {
            Status = status;
        }
    }

    /// <summary>A game of the world.streaming kit: the C ABI as methods that throw on errors and free
    /// what the library hands out.</summary>
    public sealed class WorldStreaming : IDisposable
    {
        ulong handle;
        bool disposed;

        /// <summary>The handle (a number, never a pointer); it stays invalid once disposed.</summary>
        public ulong Handle { get { return handle; } }

        /// <summary>The kit version, e.g. "1.7.0".</summary>
        public static string Version { get { return WorldStreamingNative.Read(WorldStreamingNative.ws_version()); } }

        /// <summary>The status's header name, e.g. "WS_STATUS_NOT_BUILT".</summary>
        public static string StatusName(WsStatus status)
        {
            return WorldStreamingNative.Read(WorldStreamingNative.ws_status_name((int)status));
        }

        /// <summary>Throws on an error status; frees the message either way.</summary>
        static void Check(WsStatus status, IntPtr error)
        {
            string message = WorldStreamingNative.Take(error);
            if (status != WsStatus.Ok) throw new WorldStreamingException(status, message ?? "(no message)");
        }

        /// <summary>A game from scene JSON text; mod paths relative to baseDir.</summary>
        public WorldStreaming(string sceneJson, string baseDir = ".")
        {
            IntPtr error;
            var status = WorldStreamingNative.ws_game_new(WorldStreamingNative.Utf8(sceneJson), WorldStreamingNative.Utf8(baseDir), out handle, out error);
            Check(status, error);
        }

        WorldStreaming(ulong handle)
        {
            this.handle = handle;
        }

        /// <summary>A game from scene JSON text whose mods and district files are read from
        /// filesJson and nowhere else: a JSON object {"relative/path": "text", ...} standing for
        /// the scene's directory (docs/reference/engines.md#scene-files-as-text).</summary>
        public static WorldStreaming WithFiles(string sceneJson, string filesJson)
        {
            ulong game;
            IntPtr error;
            var status = WorldStreamingNative.ws_game_new_with_files(WorldStreamingNative.Utf8(sceneJson), WorldStreamingNative.Utf8(filesJson), out game, out error);
            Check(status, error);
            return new WorldStreaming(game);
        }

        /// <summary>WithFiles with the files as a dictionary of relative path to text.</summary>
        public static WorldStreaming WithFiles(string sceneJson, IDictionary<string, string> files)
        {
            return WithFiles(sceneJson, FilesJson(files));
        }

        /// <summary>The files_json of ws_game_new_with_files: a JSON object of relative path to text.</summary>
        public static string FilesJson(IDictionary<string, string> files)
        {
            var json = new StringBuilder("{");
            bool first = true;
            foreach (var file in files)
            {
                if (!first) json.Append(',');
                first = false;
                JsonString(json, file.Key);
                json.Append(':');
                JsonString(json, file.Value);
            }
            return json.Append('}').ToString();
        }

        static void JsonString(StringBuilder json, string text)
        {
            if (text == null)
            {
                json.Append("null");
                return;
            }
            json.Append('"');
            foreach (char c in text)
            {
                if (c == '"' || c == '\\') json.Append('\\').Append(c);
                else if (c < ' ') json.Append("\\u").Append(((int)c).ToString("x4"));
                else json.Append(c);
            }
            json.Append('"');
        }

        /// <summary>Frees the game (writing its edits back first). Throws a WorldStreamingException
        /// with EditsLost when edits could not be written (the game is freed all the same); a
        /// second Dispose does nothing.</summary>
        public void Dispose()
        {
            if (disposed) return;
            disposed = true;
            IntPtr error;
            var status = WorldStreamingNative.ws_game_free(handle, out error);
            Check(status, error);
        }

        /// <summary>Applies one inputs line ({"tick": N, "do": ...}).</summary>
        public void Apply(string line)
        {
            IntPtr error;
            Check(WorldStreamingNative.ws_game_apply(handle, WorldStreamingNative.Utf8(line), out error), error);
        }

        /// <summary>Runs n ticks.</summary>
        public void Tick(ulong n = 1)
        {
            IntPtr error;
            Check(WorldStreamingNative.ws_game_tick(handle, n, out error), error);
        }

        /// <summary>The last tick that ran.</summary>
        public ulong TickCount
        {
            get
            {
                ulong tick;
                IntPtr error;
                Check(WorldStreamingNative.ws_game_tick_count(handle, out tick, out error), error);
                return tick;
            }
        }

        delegate WsStatus JsonCall(ulong game, out IntPtr json, out IntPtr error);

        string Json(JsonCall call)
        {
            IntPtr json, error;
            var status = call(handle, out json, out error);
            string text = WorldStreamingNative.Take(json);
            Check(status, error);
            return text;
        }

        /// <summary>The events since the last drain, as a JSON array (without the chunk events
        /// DrainChunkEvents already handed out).</summary>
        public string DrainEvents() { return Json(WorldStreamingNative.ws_game_drain_events); }

        /// <summary>The Lua mods' log lines since the last drain, as a JSON array.</summary>
        public string DrainLog() { return Json(WorldStreamingNative.ws_game_drain_log); }

        /// <summary>The state document (docs/reference/files-and-cli.md#the-state-document) as
        /// JSON.</summary>
        public string State() { return Json(WorldStreamingNative.ws_game_state); }

        /// <summary>Moves an entity, as a move input stamped with the next tick (no JSON).</summary>
        public void Move(string entity, double x, double y, double z)
        {
            IntPtr error;
            Check(WorldStreamingNative.ws_game_move(handle, WorldStreamingNative.Utf8(entity), x, y, z, out error), error);
        }

        /// <summary>Takes at most buffer.Length chunk events into buffer; returns how many (call again
        /// while it equals buffer.Length).</summary>
        public int DrainChunkEvents(WsChunkEvent[] buffer)
        {
            UIntPtr count;
            IntPtr error;
            var capacity = new UIntPtr((uint)(buffer == null ? 0 : buffer.Length));
            Check(WorldStreamingNative.ws_game_drain_chunk_events(handle, buffer, capacity, out count, out error), error);
            return (int)count.ToUInt32();
        }

        /// <summary>Every chunk event since the last drain, drained through `buffer` (reused).</summary>
        public List<WsChunkEvent> DrainChunkEvents(List<WsChunkEvent> into, WsChunkEvent[] buffer)
        {
            int n;
            do
            {
                n = DrainChunkEvents(buffer);
                for (int i = 0; i < n; i++) into.Add(buffer[i]);
            } while (n == buffer.Length && n > 0);
            return into;
        }

        /// <summary>Copies a built chunk's (level 0) or LOD block's (level >= 1) cells in row order.
        /// Returns false when it is not built; cells always receives cellsPerChunk². Either array
        /// may be null; a buffer shorter than cellsPerChunk² throws with BufferTooSmall.</summary>
        public bool TryTerrain(long x, long z, uint level, ushort[] heights, byte[] materials, out int cells)
        {
            int capacity = Math.Min(heights == null ? int.MaxValue : heights.Length, materials == null ? int.MaxValue : materials.Length);
            if (heights == null && materials == null) capacity = 0;
            UIntPtr n;
            IntPtr error;
            var status = WorldStreamingNative.ws_game_terrain(handle, x, z, level, heights, materials, new UIntPtr((uint)capacity), out n, out error);
            cells = (int)n.ToUInt32();
            if (status == WsStatus.NotBuilt)
            {
                WorldStreamingNative.Take(error);
                return false;
            }
            Check(status, error);
            return true;
        }

        /// <summary>cellsPerChunk² (the size of a terrain buffer), or -1 when the chunk is not built.</summary>
        public int TerrainCells(long x, long z, uint level = 0)
        {
            int cells;
            return TryTerrain(x, z, level, null, null, out cells) ? cells : -1;
        }

        /// <summary>Copies a bordered snapshot of chunk (x, z) with `skin` (0..8, at most
        /// cellsPerChunk) into heights and materials (ws_game_terrain_snapshot,
        /// docs/reference/engines.md#complete-chunks-in-c). Returns false when the chunk is not
        /// complete (with skin 0: not built); cells always receives (cellsPerChunk + 2 skin)², version
        /// the chunk's version (0 when false). Either array may be null; a buffer shorter than cells
        /// throws with BufferTooSmall, a skin out of range with OutOfRange.</summary>
        public bool TryTerrainSnapshot(long x, long z, uint skin, ushort[] heights, byte[] materials, out int cells, out ulong version)
        {
            int capacity = Math.Min(heights == null ? int.MaxValue : heights.Length, materials == null ? int.MaxValue : materials.Length);
            if (heights == null && materials == null) capacity = 0;
            UIntPtr n;
            IntPtr error;
            var status = WorldStreamingNative.ws_game_terrain_snapshot(handle, x, z, skin, heights, materials, new UIntPtr((uint)capacity), out n, out version, out error);
            cells = (int)n.ToUInt32();
            if (status == WsStatus.NotComplete)
            {
                WorldStreamingNative.Take(error);
                return false;
            }
            Check(status, error);
            return true;
        }

        /// <summary>A bordered snapshot of chunk (x, z) with `skin` in new arrays, or null when the
        /// chunk is not complete (with skin 0: not built). A mesh built from it is stale once
        /// TerrainVersion(x, z) is no longer its Version.</summary>
        public WsSnapshot TerrainSnapshot(long x, long z, uint skin)
        {
            int cells;
            ulong version;
            if (!TryTerrainSnapshot(x, z, skin, null, null, out cells, out version)) return null;
            var heights = new ushort[cells];
            var materials = new byte[cells];
            // The count and the cells come from two calls: nothing ticks in between (one thread).
            if (!TryTerrainSnapshot(x, z, skin, heights, materials, out cells, out version)) return null;
            return new WsSnapshot(x, z, skin, (int)Math.Round(Math.Sqrt(cells)), heights, materials, version);
        }

        /// <summary>The version of built chunk (x, z) (ws_game_terrain_version): 1 at its commit, one
        /// more at each edit of it or of a neighbour; null when it is not built.</summary>
        public ulong? TerrainVersion(long x, long z)
        {
            ulong version;
            IntPtr error;
            var status = WorldStreamingNative.ws_game_terrain_version(handle, x, z, out version, out error);
            if (status == WsStatus.NotBuilt)
            {
                WorldStreamingNative.Take(error);
                return null;
            }
            Check(status, error);
            return version;
        }

        /// <summary>Replaces an entity's data (a JSON object; "null" clears it), as a set input.</summary>
        public void SetData(string entity, string json)
        {
            IntPtr error;
            Check(WorldStreamingNative.ws_game_set_data(handle, WorldStreamingNative.Utf8(entity), WorldStreamingNative.Utf8(json), out error), error);
        }

        /// <summary>An entity's data as JSON ("null" when it has none).</summary>
        public string EntityData(string entity)
        {
            IntPtr json, error;
            var status = WorldStreamingNative.ws_game_entity_data(handle, WorldStreamingNative.Utf8(entity), out json, out error);
            string text = WorldStreamingNative.Take(json);
            Check(status, error);
            return text;
        }

        /// <summary>isLoaded(x, z).</summary>
        public bool IsLoaded(long x, long z)
        {
            bool loaded;
            IntPtr error;
            Check(WorldStreamingNative.ws_game_is_loaded(handle, x, z, out loaded, out error), error);
            return loaded;
        }

        /// <summary>isLoaded(x, z, y): whether section (x, y, z) is loaded; without `vertical` only
        /// row 0 exists (docs/reference/engines.md#vertical-sections-in-c).</summary>
        public bool IsLoadedSection(long x, long y, long z)
        {
            bool loaded;
            IntPtr error;
            Check(WorldStreamingNative.ws_game_is_loaded_section(handle, x, y, z, out loaded, out error), error);
            return loaded;
        }

        /// <summary>isComplete(x, z): the chunk and every chunk within `neighbours` rings of it that
        /// overlaps the ground are loaded and built (docs/reference/engines.md#complete-chunks-in-c).</summary>
        public bool IsComplete(long x, long z)
        {
            bool complete;
            IntPtr error;
            Check(WorldStreamingNative.ws_game_is_complete(handle, x, z, out complete, out error), error);
            return complete;
        }

        /// <summary>Whether the anchor's focus is ready
        /// (docs/reference/streaming.md#readiness).</summary>
        public bool Ready(string entity)
        {
            bool ready;
            IntPtr error;
            Check(WorldStreamingNative.ws_game_ready(handle, WorldStreamingNative.Utf8(entity), out ready, out error), error);
            return ready;
        }

        /// <summary>Whether the ticket is ready (docs/reference/streaming.md#readiness).</summary>
        public bool TicketReady(string id)
        {
            bool ready;
            IntPtr error;
            Check(WorldStreamingNative.ws_game_ticket_ready(handle, WorldStreamingNative.Utf8(id), out ready, out error), error);
            return ready;
        }

        delegate WsStatus ChunksCall(ulong game, WsChunk[] chunks, UIntPtr capacity, out UIntPtr count, out IntPtr error);

        WsChunk[] Chunks(ChunksCall call)
        {
            while (true)
            {
                UIntPtr count;
                IntPtr error;
                Check(call(handle, null, UIntPtr.Zero, out count, out error), error);
                var chunks = new WsChunk[(int)count.ToUInt32()];
                var status = call(handle, chunks, new UIntPtr((uint)chunks.Length), out count, out error);
                if (status == WsStatus.BufferTooSmall)
                {
                    WorldStreamingNative.Take(error);
                    continue; // grew in between (a callback): ask again
                }
                Check(status, error);
                return chunks;
            }
        }

        /// <summary>loaded(), row order.</summary>
        public WsChunk[] Loaded() { return Chunks(WorldStreamingNative.ws_game_loaded); }

        /// <summary>pending(), nearest-first.</summary>
        public WsChunk[] Pending() { return Chunks(WorldStreamingNative.ws_game_pending); }

        /// <summary>A numeric engine variable, e.g. "world.chunks.loaded".</summary>
        public double Variable(string name)
        {
            double value;
            IntPtr error;
            Check(WorldStreamingNative.ws_game_variable(handle, WorldStreamingNative.Utf8(name), out value, out error), error);
            return value;
        }

        /// <summary>Saves the game to path (atomically).</summary>
        public void Save(string path)
        {
            IntPtr error;
            Check(WorldStreamingNative.ws_game_save(handle, WorldStreamingNative.Utf8(path), out error), error);
        }

        /// <summary>Loads a save into the game; on an error the game is unchanged.</summary>
        public void Load(string path)
        {
            IntPtr error;
            Check(WorldStreamingNative.ws_game_load(handle, WorldStreamingNative.Utf8(path), out error), error);
        }

        /// <summary>The save as text: byte for byte what Save writes to a file
        /// (docs/reference/engines.md#saves-as-text).</summary>
        public string SaveText() { return Json(WorldStreamingNative.ws_game_save_text); }

        /// <summary>Loads a save given as text, with every check of Load; on an error the game is
        /// unchanged.</summary>
        public void LoadText(string json)
        {
            IntPtr error;
            Check(WorldStreamingNative.ws_game_load_text(handle, WorldStreamingNative.Utf8(json), out error), error);
        }
    }
}
