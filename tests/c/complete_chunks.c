/* Complete chunks and bordered snapshots through the C ABI
 * (docs/reference/engines.md#complete-chunks-in-c): a drive with `neighbours: 1` and
 * world.terrain whose chunk events are drained as WsChunkEvent structs. Every tick:
 *   - WS_CHUNK_EVENT_COMPLETE (7) / WS_CHUNK_EVENT_INCOMPLETE (8) come after the tick's other
 *     chunk events, each kind in row order (z, then x); a chunk is told complete only when it
 *     was not, incomplete only when it was, and a released chunk simply stops being complete;
 *   - ws_game_is_complete agrees with what the events said for every loaded chunk, and
 *     world.chunks.complete counts them;
 *   - a chunk built but not complete refuses a snapshot with skin 1 (WS_STATUS_NOT_COMPLETE);
 *   - a chunk told complete gives its snapshot (skins 1 and 3), whose every cell is the cell
 *     ws_game_terrain reads from the chunk or from the neighbour it lies in, with the version
 *     ws_game_terrain_version gives.
 * Then an edit (the version moves, the snapshot shows it), the buffer contract, bad skins, a
 * scene with `neighbours` 0 (no kind 7 or 8 ever; skin 0 needs only the chunk built), refusals
 * and freed handles. Built and run by tests/capi_c.rs (under valgrind in CI):
 *   complete_chunks
 * Exits 0 when every check holds, 1 naming those that failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world_streaming.h"

#define CHECK_FILE "complete_chunks.c"
#include "checks.h"

#define C 8                   /* cellsPerChunk */
#define MAX_SKIN 8
#define MAX_SIDE (C + 2 * MAX_SKIN)
#define BATCH 5               /* a small buffer: the drain is called again while it comes back full */
#define MAX_EVENTS 2048
#define MAX_CHUNKS 256

static const char *SCENE_K1 =
    "{ \"kits\": [ { \"id\": \"world.ground\" },"
    "  { \"id\": \"world.streaming\", \"config\": { \"chunkSize\": 32, \"radius\": 1, \"neighbours\": 1, \"budgetMs\": 6 } },"
    "  { \"id\": \"world.terrain\", \"config\": { \"seed\": 7, \"cellsPerChunk\": 8, \"workers\": 1 } } ],"
    "  \"entities\": [ { \"id\": \"hero\", \"tags\": [\"player\"], \"position\": { \"x\": 16, \"z\": 16 } } ] }";

static const char *SCENE_K0 =
    "{ \"kits\": [ { \"id\": \"world.ground\" },"
    "  { \"id\": \"world.streaming\", \"config\": { \"chunkSize\": 32, \"radius\": 1, \"budgetMs\": 6 } },"
    "  { \"id\": \"world.terrain\", \"config\": { \"seed\": 7, \"cellsPerChunk\": 8, \"workers\": 1 } } ],"
    "  \"entities\": [ { \"id\": \"hero\", \"tags\": [\"player\"], \"position\": { \"x\": 16, \"z\": 16 } } ] }";

/* The chunks the events said are complete. */
static struct { int64_t x, z; } complete[MAX_CHUNKS];
static size_t n_complete = 0;

static int find_complete(int64_t x, int64_t z) {
    for (size_t i = 0; i < n_complete; i++)
        if (complete[i].x == x && complete[i].z == z) return (int)i;
    return -1;
}

static void forget_complete(int at) {
    complete[at] = complete[n_complete - 1];
    n_complete--;
}

/* Every chunk event since the last drain, drained BATCH at a time. */
static size_t drain(WsGame game, WsChunkEvent *events) {
    size_t n = 0, got = BATCH;
    while (got == BATCH && n + BATCH <= MAX_EVENTS) {
        got = 0;
        EXPECT(WS_STATUS_OK, "", ws_game_drain_chunk_events(game, events + n, BATCH, &got, &error));
        n += got;
    }
    CHECK(got < BATCH);
    return n;
}

/* Whether (ax, az) comes before (bx, bz) in row order: z, then x. */
static int row_before(int64_t ax, int64_t az, int64_t bx, int64_t bz) {
    return az < bz || (az == bz && ax < bx);
}

/* Checks a snapshot of chunk (x, z) with `skin` against ws_game_terrain of the chunk and its
 * neighbours and against ws_game_terrain_version; returns the version. */
static uint64_t check_snapshot(WsGame game, int64_t x, int64_t z, uint32_t skin) {
    static uint16_t heights[MAX_SIDE * MAX_SIDE];
    static uint8_t materials[MAX_SIDE * MAX_SIDE];
    static uint16_t nh[3][3][C * C];
    static uint8_t nm[3][3][C * C];
    size_t side = C + 2 * skin, cells = 0;
    uint64_t version = 0, version_now = 0;
    EXPECT(WS_STATUS_OK, "",
           ws_game_terrain_snapshot(game, x, z, skin, heights, materials, MAX_SIDE * MAX_SIDE, &cells,
                                    &version, &error));
    CHECK(cells == side * side);
    CHECK(version >= 1);
    EXPECT(WS_STATUS_OK, "", ws_game_terrain_version(game, x, z, &version_now, &error));
    CHECK(version == version_now);
    for (int dz = -1; dz <= 1; dz++)
        for (int dx = -1; dx <= 1; dx++) {
            size_t n = 0;
            EXPECT(WS_STATUS_OK, "",
                   ws_game_terrain(game, x + dx, z + dz, 0, nh[dz + 1][dx + 1], nm[dz + 1][dx + 1], C * C,
                                   &n, &error));
            CHECK(n == C * C);
        }
    size_t wrong = 0;
    for (size_t j = 0; j < side; j++)
        for (size_t i = 0; i < side; i++) {
            long gi = (long)i - (long)skin, gj = (long)j - (long)skin; /* the chunk's own cells: 0..C */
            int dx = gi < 0 ? -1 : gi >= C ? 1 : 0;
            int dz = gj < 0 ? -1 : gj >= C ? 1 : 0;
            size_t li = (size_t)(gi - dx * C), lj = (size_t)(gj - dz * C);
            if (heights[j * side + i] != nh[dz + 1][dx + 1][lj * C + li] ||
                materials[j * side + i] != nm[dz + 1][dx + 1][lj * C + li])
                wrong++;
        }
    if (wrong) {
        fprintf(stderr, "chunk (%lld, %lld) skin %u: %zu of %zu cells differ from the terrain's\n",
                (long long)x, (long long)z, skin, wrong, side * side);
        failures++;
    }
    return version;
}

int main(void) {
    WsGame game = 0;
    EXPECT(WS_STATUS_OK, "", ws_game_new(SCENE_K1, ".", &game, &error));

    static WsChunkEvent events[MAX_EVENTS];
    static WsChunk loaded[MAX_CHUNKS];
    size_t told_complete = 0, told_incomplete = 0, released_complete = 0, snapshots = 0, refused = 0;
    for (int t = 1; t <= 70; t++) {
        /* Still for 14 ticks, then east 6 m a tick: chunks complete ahead and fall behind. */
        double x = t <= 14 ? 16.0 : 16.0 + 6.0 * (t - 14);
        EXPECT(WS_STATUS_OK, "", ws_game_move(game, "hero", x, 0.0, 16.0, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_tick(game, 1, &error));
        size_t n = drain(game, events);
        int seen_completeness = 0;
        const WsChunkEvent *last7 = NULL, *last8 = NULL;
        for (size_t i = 0; i < n; i++) {
            const WsChunkEvent *e = &events[i];
            int at = find_complete(e->x, e->z);
            if (e->kind == WS_CHUNK_EVENT_COMPLETE || e->kind == WS_CHUNK_EVENT_INCOMPLETE) {
                seen_completeness = 1;
                CHECK(e->level == 0 && e->hash == 0);
                const WsChunkEvent **last = e->kind == WS_CHUNK_EVENT_COMPLETE ? &last7 : &last8;
                CHECK(*last == NULL || row_before((*last)->x, (*last)->z, e->x, e->z));
                *last = e;
                if (e->kind == WS_CHUNK_EVENT_COMPLETE) {
                    CHECK(at < 0);
                    if (at < 0 && n_complete < MAX_CHUNKS) {
                        complete[n_complete].x = e->x;
                        complete[n_complete].z = e->z;
                        n_complete++;
                    }
                    told_complete++;
                } else {
                    CHECK(at >= 0);
                    if (at >= 0) forget_complete(at);
                    told_incomplete++;
                }
                continue;
            }
            /* The tick's completeness events come after all its other chunk events. */
            CHECK(!seen_completeness);
            if (e->kind == WS_CHUNK_EVENT_UNLOADED && at >= 0) {
                forget_complete(at); /* released while complete: only its unloaded event */
                released_complete++;
            }
        }
        /* ws_game_is_complete agrees with the events for every loaded chunk. */
        size_t count = 0, complete_loaded = 0;
        EXPECT(WS_STATUS_OK, "", ws_game_loaded(game, loaded, MAX_CHUNKS, &count, &error));
        for (size_t i = 0; i < count; i++) {
            bool is = false;
            EXPECT(WS_STATUS_OK, "", ws_game_is_complete(game, loaded[i].x, loaded[i].z, &is, &error));
            int told = find_complete(loaded[i].x, loaded[i].z) >= 0;
            if (is != told) {
                fprintf(stderr, "tick %d: chunk (%lld, %lld): is_complete %d, the events say %d\n", t,
                        (long long)loaded[i].x, (long long)loaded[i].z, (int)is, told);
                failures++;
            }
            complete_loaded += is;
        }
        CHECK(complete_loaded == n_complete);
        double variable = -1;
        EXPECT(WS_STATUS_OK, "", ws_game_variable(game, "world.chunks.complete", &variable, &error));
        CHECK(variable == (double)n_complete);
        /* Snapshots: refused before complete, equal to the terrain's cells after. */
        for (size_t i = 0; i < n; i++) {
            const WsChunkEvent *e = &events[i];
            bool is = false, built = false;
            size_t cells = 99;
            uint64_t version = 99;
            uint16_t h[4] = {7, 7, 7, 7};
            if (e->kind == WS_CHUNK_EVENT_BUILT) {
                EXPECT(WS_STATUS_OK, "", ws_game_is_complete(game, e->x, e->z, &is, &error));
                built = ws_game_terrain(game, e->x, e->z, 0, NULL, NULL, 0, &cells, NULL) == WS_STATUS_OK;
                if (is || !built) continue;
                EXPECT(WS_STATUS_NOT_COMPLETE, "is not complete",
                       ws_game_terrain_snapshot(game, e->x, e->z, 1, h, NULL, 4, &cells, &version, &error));
                CHECK(cells == (C + 2) * (C + 2) && version == 0 && h[0] == 7);
                /* Skin 0 needs only the chunk built. */
                EXPECT(WS_STATUS_OK, "",
                       ws_game_terrain_snapshot(game, e->x, e->z, 0, NULL, NULL, 0, &cells, &version, &error));
                CHECK(cells == C * C && version == 1);
                refused++;
            } else if (e->kind == WS_CHUNK_EVENT_COMPLETE && find_complete(e->x, e->z) >= 0) {
                CHECK(check_snapshot(game, e->x, e->z, 1) == 1);
                CHECK(check_snapshot(game, e->x, e->z, 3) == 1);
                snapshots++;
            }
        }
    }
    printf("drive: %zu told complete, %zu incomplete, %zu released while complete, %zu snapshots "
           "checked, %zu refused before complete, %zu complete at the end\n",
           told_complete, told_incomplete, released_complete, snapshots, refused, n_complete);
    CHECK(told_complete > 20);
    CHECK(told_incomplete > 0);
    CHECK(snapshots > 20);
    CHECK(refused > 10);
    CHECK(n_complete > 0);

    /* An edit: the chunk's version moves and its snapshot (and its neighbours') shows the cell. */
    {
        int64_t cx = complete[0].x, cz = complete[0].z;
        uint64_t before = check_snapshot(game, cx, cz, 2), after = 0;
        uint16_t heights[(C + 4) * (C + 4)] = {0};
        size_t cells = 0;
        char line[256];
        long long tick_now = 0;
        uint64_t tc = 0;
        EXPECT(WS_STATUS_OK, "", ws_game_tick_count(game, &tc, &error));
        tick_now = (long long)tc;
        /* The chunk's first cell (i = 0, j = 0): its south-west corner, 4 m cells. */
        snprintf(line, sizeof line,
                 "{\"tick\": %lld, \"do\": \"edit\", \"at\": {\"x\": %lld, \"z\": %lld}, \"height\": 4242}",
                 tick_now + 1, (long long)(cx * 32 + 1), (long long)(cz * 32 + 1));
        EXPECT(WS_STATUS_OK, "", ws_game_apply(game, line, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_tick(game, 1, &error));
        after = check_snapshot(game, cx, cz, 2);
        CHECK(after == before + 1);
        EXPECT(WS_STATUS_OK, "",
               ws_game_terrain_snapshot(game, cx, cz, 2, heights, NULL, sizeof heights / sizeof *heights,
                                        &cells, &after, &error));
        CHECK(heights[2 * (C + 4) + 2] == 4242);
        (void)drain(game, events);
    }

    /* The buffer contract and bad skins. */
    {
        int64_t cx = complete[0].x, cz = complete[0].z;
        uint16_t small[4] = {7, 7, 7, 7};
        uint8_t smallm[4] = {5, 5, 5, 5};
        size_t cells = 0;
        uint64_t version = 0;
        EXPECT(WS_STATUS_BUFFER_TOO_SMALL, "the buffers hold 4 cells; 100 are needed",
               ws_game_terrain_snapshot(game, cx, cz, 1, small, smallm, 4, &cells, &version, &error));
        CHECK(cells == 100 && small[0] == 7 && small[3] == 7 && smallm[0] == 5 && smallm[3] == 5);
        /* The count (and the version) only. */
        EXPECT(WS_STATUS_OK, "", ws_game_terrain_snapshot(game, cx, cz, 8, NULL, NULL, 0, &cells, &version, &error));
        CHECK(cells == (C + 16) * (C + 16) && version == 2);
        /* Materials only, for a splat map; skin 8 (at most 8, at most cellsPerChunk). */
        {
            static uint8_t m[MAX_SIDE * MAX_SIDE];
            EXPECT(WS_STATUS_OK, "",
                   ws_game_terrain_snapshot(game, cx, cz, 8, NULL, m, MAX_SIDE * MAX_SIDE, &cells, &version, &error));
        }
        cells = 99;
        EXPECT(WS_STATUS_OUT_OF_RANGE, "skin 9 is out of range",
               ws_game_terrain_snapshot(game, cx, cz, 9, small, NULL, 4, &cells, &version, &error));
        CHECK(cells == 0 && small[0] == 7);
        EXPECT(WS_STATUS_OUT_OF_RANGE, "skin 4294967295 is out of range",
               ws_game_terrain_snapshot(game, cx, cz, 0xffffffffu, small, NULL, 4, &cells, &version, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_cells is null",
               ws_game_terrain_snapshot(game, cx, cz, 1, small, NULL, 4, NULL, &version, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_version is null",
               ws_game_terrain_snapshot(game, cx, cz, 1, small, NULL, 4, &cells, NULL, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "heights and materials",
               ws_game_terrain_snapshot(game, cx, cz, 1, NULL, NULL, 4, &cells, &version, &error));
        /* Far away: not complete, not built. */
        EXPECT(WS_STATUS_NOT_COMPLETE, "chunk (-40, 40) is not complete",
               ws_game_terrain_snapshot(game, -40, 40, 1, small, NULL, 4, &cells, &version, &error));
        CHECK(cells == 100 && version == 0);
        EXPECT(WS_STATUS_NOT_COMPLETE, "chunk (-40, 40) is not built",
               ws_game_terrain_snapshot(game, -40, 40, 0, small, NULL, 4, &cells, &version, &error));
        CHECK(cells == 64);
        EXPECT(WS_STATUS_NOT_BUILT, "chunk (-40, 40) is not built",
               ws_game_terrain_version(game, -40, 40, &version, &error));
        CHECK(version == 0);
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_version is null", ws_game_terrain_version(game, cx, cz, NULL, &error));
        bool is = true;
        EXPECT(WS_STATUS_OK, "", ws_game_is_complete(game, -40, 40, &is, &error));
        CHECK(!is);
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_complete is null", ws_game_is_complete(game, cx, cz, NULL, &error));
    }
    EXPECT(WS_STATUS_OK, "", ws_game_free(game, &error));

    /* neighbours 0: the same drive tells nothing of completeness; is_complete still answers
     * (loaded and built) and a snapshot with skin 0 needs only the chunk built. */
    {
        WsGame plain = 0;
        size_t sevens = 0, checked = 0;
        EXPECT(WS_STATUS_OK, "", ws_game_new(SCENE_K0, ".", &plain, &error));
        for (int t = 1; t <= 30; t++) {
            EXPECT(WS_STATUS_OK, "", ws_game_move(plain, "hero", 16.0 + 6.0 * t, 0.0, 16.0, &error));
            EXPECT(WS_STATUS_OK, "", ws_game_tick(plain, 1, &error));
            size_t n = drain(plain, events);
            for (size_t i = 0; i < n; i++) {
                sevens += events[i].kind == WS_CHUNK_EVENT_COMPLETE || events[i].kind == WS_CHUNK_EVENT_INCOMPLETE;
                if (events[i].kind != WS_CHUNK_EVENT_BUILT) continue;
                size_t cells = 0;
                bool built = ws_game_terrain(plain, events[i].x, events[i].z, 0, NULL, NULL, 0, &cells, NULL) == WS_STATUS_OK;
                bool is = !built;
                EXPECT(WS_STATUS_OK, "", ws_game_is_complete(plain, events[i].x, events[i].z, &is, &error));
                CHECK(is == built);
                if (built) {
                    uint64_t version = 0;
                    EXPECT(WS_STATUS_OK, "",
                           ws_game_terrain_snapshot(plain, events[i].x, events[i].z, 0, NULL, NULL, 0, &cells, &version, &error));
                    CHECK(cells == 64 && version == 1);
                    checked++;
                }
            }
        }
        double variable = 0;
        CHECK(sevens == 0);
        CHECK(checked > 10);
        EXPECT(WS_STATUS_NO_SUCH_VARIABLE, "world.chunks.complete",
               ws_game_variable(plain, "world.chunks.complete", &variable, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_free(plain, &error));
    }

    /* No terrain, no streaming, freed handles. */
    {
        WsGame bare = 0, none = 0;
        size_t cells = 9;
        uint64_t version = 9;
        uint16_t h[1];
        bool is = true;
        EXPECT(WS_STATUS_OK, "",
               ws_game_new("{\"kits\": [{\"id\": \"world.ground\"}, {\"id\": \"world.streaming\"}]}", ".", &bare, &error));
        EXPECT(WS_STATUS_NO_TERRAIN, "world.terrain",
               ws_game_terrain_snapshot(bare, 0, 0, 1, h, NULL, 1, &cells, &version, &error));
        CHECK(cells == 0 && version == 0);
        EXPECT(WS_STATUS_NO_TERRAIN, "world.terrain", ws_game_terrain_version(bare, 0, 0, &version, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_is_complete(bare, 0, 0, &is, &error));
        CHECK(!is);
        EXPECT(WS_STATUS_OK, "", ws_game_free(bare, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_new("{\"kits\": [{\"id\": \"game.engine\"}]}", ".", &none, &error));
        EXPECT(WS_STATUS_NO_STREAMING, "world.streaming", ws_game_is_complete(none, 0, 0, &is, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_free(none, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_is_complete(game, 0, 0, &is, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle",
               ws_game_terrain_snapshot(game, 0, 0, 1, h, NULL, 1, &cells, &version, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_terrain_version(game, 0, 0, &version, &error));
    }

    printf("%s = %d, %s = %d, %s = %d\n", "WS_CHUNK_EVENT_COMPLETE", WS_CHUNK_EVENT_COMPLETE,
           "WS_CHUNK_EVENT_INCOMPLETE", WS_CHUNK_EVENT_INCOMPLETE, ws_status_name(19), (int)WS_STATUS_NOT_COMPLETE);
    if (failures) {
        fprintf(stderr, "complete_chunks: %d check(s) failed\n", failures);
        return 1;
    }
    printf("complete_chunks: every check passed\n");
    return 0;
}
