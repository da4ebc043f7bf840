/* Vertical sections through the C ABI (docs/reference/engines.md#vertical-sections-in-c): a scene
 * with `shape: "disc"` and `vertical` whose hero climbs, dives and walks, its chunk events drained
 * as WsChunkEvent structs a few at a time. Every tick:
 *   - LOADED / UNLOADED name sections (x, y, z): a section is loaded only when it was not, and
 *     released only when it was; the rows they carry span above and below row 0;
 *   - WS_CHUNK_EVENT_COLUMN_LOADED (9) comes when a column's first section is loaded and
 *     WS_CHUNK_EVENT_COLUMN_UNLOADED (10) when its last is released (checked in emission order:
 *     at each column event the sections told so far agree), `level`, `hash` and `y` 0; at the end
 *     of the tick the columns told are exactly the columns of the sections told;
 *   - ws_game_is_loaded_section agrees with the events for every section told and for every
 *     section of a box around the hero that was not; ws_game_is_loaded(x, z) is row 0;
 *     world.chunks.loaded counts the sections.
 * After standing still the hero's own column holds exactly the rows within `vertical.radius` of
 * its row. Then a flat scene (no `vertical`): every record's y is 0, no column kind, only row 0
 * loaded. Then the record's layout and the refusals. Built and run by tests/capi_c.rs (under
 * valgrind in CI):
 *   vertical_sections
 * Exits 0 when every check holds, 1 naming those that failed. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world_streaming.h"

#define CHECK_FILE "vertical_sections.c"
#include "checks.h"

#define S 32.0       /* chunkSize */
#define H 16.0       /* vertical.height */
#define RV 2         /* vertical.radius */
#define BATCH 7      /* a small buffer: the drain is called again while it comes back full */
#define MAX_EVENTS 8192
#define MAX_SECTIONS 4096
#define MAX_COLUMNS 512

static const char *SCENE_VERTICAL =
    "{ \"kits\": [ { \"id\": \"world.ground\" },"
    "  { \"id\": \"world.streaming\", \"config\": { \"chunkSize\": 32, \"radius\": 2, \"shape\": \"disc\","
    "    \"vertical\": { \"radius\": 2, \"height\": 16 }, \"budgetMs\": 24 } } ],"
    "  \"entities\": [ { \"id\": \"hero\", \"tags\": [\"player\"], \"position\": { \"x\": 16, \"y\": 8, \"z\": 16 } } ] }";

static const char *SCENE_FLAT =
    "{ \"kits\": [ { \"id\": \"world.ground\" },"
    "  { \"id\": \"world.streaming\", \"config\": { \"chunkSize\": 32, \"radius\": 2, \"budgetMs\": 24 } } ],"
    "  \"entities\": [ { \"id\": \"hero\", \"tags\": [\"player\"], \"position\": { \"x\": 16, \"y\": 40, \"z\": 16 } } ] }";

/* The sections and columns the events told are loaded. */
static struct { int64_t x, y, z; } sections[MAX_SECTIONS];
static size_t n_sections = 0;
static struct { int64_t x, z; } columns[MAX_COLUMNS];
static size_t n_columns = 0;

static int find_section(int64_t x, int64_t y, int64_t z) {
    for (size_t i = 0; i < n_sections; i++)
        if (sections[i].x == x && sections[i].y == y && sections[i].z == z) return (int)i;
    return -1;
}

static size_t rows_of_column(int64_t x, int64_t z) {
    size_t n = 0;
    for (size_t i = 0; i < n_sections; i++) n += sections[i].x == x && sections[i].z == z;
    return n;
}

static int find_column(int64_t x, int64_t z) {
    for (size_t i = 0; i < n_columns; i++)
        if (columns[i].x == x && columns[i].z == z) return (int)i;
    return -1;
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

static int64_t floor_div(double v, double size) {
    double q = v / size;
    int64_t i = (int64_t)q;
    return (double)i > q ? i - 1 : i;
}

static bool loaded_section(WsGame game, int64_t x, int64_t y, int64_t z) {
    bool is = false;
    EXPECT(WS_STATUS_OK, "", ws_game_is_loaded_section(game, x, y, z, &is, &error));
    return is;
}

/* The hero's position at tick t: up to row 6, down to row -5, then east at row -5, then still. */
static void path(int t, double *x, double *y, double *z) {
    *x = 16.0;
    *z = 16.0;
    if (t <= 10) *y = 8.0;                              /* row 0 */
    else if (t <= 30) *y = 8.0 + 5.0 * (t - 10);        /* climbs to 108: row 6 */
    else if (t <= 60) *y = 108.0 - 6.0 * (t - 30);      /* dives to -72: row -5 */
    else if (t <= 80) { *y = -72.0; *x = 16.0 + 7.0 * (t - 60); } /* walks east 140 m */
    else { *y = -72.0; *x = 156.0; }                    /* stands */
}

int main(void) {
    printf("WS_CHUNK_EVENT_COLUMN_LOADED = %d, WS_CHUNK_EVENT_COLUMN_UNLOADED = %d, "
           "sizeof(WsChunkEvent) = %zu, offsetof(WsChunkEvent, y) = %zu\n",
           WS_CHUNK_EVENT_COLUMN_LOADED, WS_CHUNK_EVENT_COLUMN_UNLOADED, sizeof(WsChunkEvent),
           offsetof(WsChunkEvent, y));
    CHECK(WS_CHUNK_EVENT_COLUMN_LOADED == 9 && WS_CHUNK_EVENT_COLUMN_UNLOADED == 10);
    CHECK(sizeof(WsChunkEvent) == 40 && offsetof(WsChunkEvent, y) == 32);
    CHECK(offsetof(WsChunkEvent, x) == 8 && offsetof(WsChunkEvent, z) == 16 &&
          offsetof(WsChunkEvent, hash) == 24);

    WsGame game = 0;
    EXPECT(WS_STATUS_OK, "", ws_game_new(SCENE_VERTICAL, ".", &game, &error));
    static WsChunkEvent events[MAX_EVENTS];
    size_t told_loaded = 0, told_unloaded = 0, columns_loaded = 0, columns_unloaded = 0;
    int64_t min_y = 0, max_y = 0;
    for (int t = 1; t <= 100; t++) {
        double x, y, z;
        path(t, &x, &y, &z);
        EXPECT(WS_STATUS_OK, "", ws_game_move(game, "hero", x, y, z, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_tick(game, 1, &error));
        size_t n = drain(game, events);
        for (size_t i = 0; i < n; i++) {
            const WsChunkEvent *e = &events[i];
            CHECK(e->level == 0 && e->hash == 0);
            int at = find_section(e->x, e->y, e->z);
            int col = find_column(e->x, e->z);
            switch (e->kind) {
            case WS_CHUNK_EVENT_LOADED:
                CHECK(at < 0);
                if (at < 0 && n_sections < MAX_SECTIONS) {
                    sections[n_sections].x = e->x;
                    sections[n_sections].y = e->y;
                    sections[n_sections].z = e->z;
                    n_sections++;
                }
                if (e->y < min_y) min_y = e->y;
                if (e->y > max_y) max_y = e->y;
                told_loaded++;
                break;
            case WS_CHUNK_EVENT_UNLOADED:
                CHECK(at >= 0);
                if (at >= 0) sections[at] = sections[--n_sections];
                told_unloaded++;
                break;
            case WS_CHUNK_EVENT_COLUMN_LOADED:
                /* After its first section's event; told once. */
                CHECK(e->y == 0);
                CHECK(col < 0);
                CHECK(rows_of_column(e->x, e->z) > 0);
                if (col < 0 && n_columns < MAX_COLUMNS) {
                    columns[n_columns].x = e->x;
                    columns[n_columns].z = e->z;
                    n_columns++;
                }
                columns_loaded++;
                break;
            case WS_CHUNK_EVENT_COLUMN_UNLOADED:
                /* After its last section's event. */
                CHECK(e->y == 0);
                CHECK(col >= 0);
                CHECK(rows_of_column(e->x, e->z) == 0);
                if (col >= 0) columns[col] = columns[--n_columns];
                columns_unloaded++;
                break;
            default:
                fprintf(stderr, "tick %d: an unexpected kind %d\n", t, e->kind);
                failures++;
            }
        }
        /* The columns told are the columns of the sections told. */
        for (size_t i = 0; i < n_sections; i++) CHECK(find_column(sections[i].x, sections[i].z) >= 0);
        for (size_t i = 0; i < n_columns; i++) CHECK(rows_of_column(columns[i].x, columns[i].z) > 0);
        /* ws_game_is_loaded_section agrees with the events, in a box around the hero. */
        int64_t hx = floor_div(x, S), hy = floor_div(y, H), hz = floor_div(z, S);
        size_t in_box = 0;
        for (int64_t sz = hz - 4; sz <= hz + 4; sz++)
            for (int64_t sx = hx - 4; sx <= hx + 4; sx++) {
                for (int64_t sy = hy - RV - 3; sy <= hy + RV + 3; sy++) {
                    bool is = loaded_section(game, sx, sy, sz);
                    int told = find_section(sx, sy, sz) >= 0;
                    if (is != told) {
                        fprintf(stderr, "tick %d: section (%lld, %lld, %lld): is_loaded_section %d, the events say %d\n",
                                t, (long long)sx, (long long)sy, (long long)sz, (int)is, told);
                        failures++;
                    }
                    in_box += is;
                }
                bool row0 = false;
                EXPECT(WS_STATUS_OK, "", ws_game_is_loaded(game, sx, sz, &row0, &error));
                CHECK(row0 == (find_section(sx, 0, sz) >= 0));
            }
        for (size_t i = 0; i < n_sections; i++)
            CHECK(loaded_section(game, sections[i].x, sections[i].y, sections[i].z));
        double variable = -1;
        EXPECT(WS_STATUS_OK, "", ws_game_variable(game, "world.chunks.loaded", &variable, &error));
        CHECK(variable == (double)n_sections);
        CHECK(in_box <= n_sections);
    }
    /* Standing at row -5 in column (4, 0): its rows -7 ..= -3 are loaded and no other. */
    for (int64_t sy = -10; sy <= 2; sy++)
        CHECK(loaded_section(game, 4, sy, 0) == (sy >= -5 - RV && sy <= -5 + RV));
    printf("drive: %zu sections loaded, %zu released, %zu columns loaded, %zu released, rows %lld ..= %lld, "
           "%zu sections and %zu columns at the end\n",
           told_loaded, told_unloaded, columns_loaded, columns_unloaded, (long long)min_y,
           (long long)max_y, n_sections, n_columns);
    CHECK(told_loaded > 100 && told_unloaded > 50);
    CHECK(columns_loaded > 10 && columns_unloaded > 3);
    CHECK(min_y <= -5 - RV && max_y >= 6);
    CHECK(n_sections > n_columns && n_columns > 0);
    EXPECT(WS_STATUS_NULL_ARGUMENT, "out_loaded is null", ws_game_is_loaded_section(game, 0, 0, 0, NULL, &error));
    EXPECT(WS_STATUS_OK, "", ws_game_free(game, &error));
    bool is = true;
    EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_is_loaded_section(game, 0, 0, 0, &is, &error));

    /* A flat scene: y is always 0, no column kind, only row 0 (whatever the hero's height). */
    WsGame flat = 0;
    EXPECT(WS_STATUS_OK, "", ws_game_new(SCENE_FLAT, ".", &flat, &error));
    size_t flat_events = 0;
    for (int t = 1; t <= 30; t++) {
        EXPECT(WS_STATUS_OK, "", ws_game_move(flat, "hero", 16.0 + 9.0 * t, 40.0 + 10.0 * t, 16.0, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_tick(flat, 1, &error));
        size_t n = drain(flat, events);
        for (size_t i = 0; i < n; i++) {
            CHECK(events[i].y == 0);
            CHECK(events[i].kind == WS_CHUNK_EVENT_LOADED || events[i].kind == WS_CHUNK_EVENT_UNLOADED);
        }
        flat_events += n;
    }
    CHECK(flat_events > 30);
    for (int64_t sx = 4; sx <= 12; sx++) {
        bool row0 = false;
        EXPECT(WS_STATUS_OK, "", ws_game_is_loaded(flat, sx, 0, &row0, &error));
        CHECK(loaded_section(flat, sx, 0, 0) == row0);
        CHECK(!loaded_section(flat, sx, 1, 0) && !loaded_section(flat, sx, -1, 0));
    }
    printf("flat: %zu chunk events, every y 0, no column kind\n", flat_events);
    EXPECT(WS_STATUS_OK, "", ws_game_free(flat, &error));

    /* No streaming kit. */
    WsGame bare = 0;
    EXPECT(WS_STATUS_OK, "", ws_game_new("{ \"kits\": [ { \"id\": \"world.ground\" } ] }", ".", &bare, &error));
    EXPECT(WS_STATUS_NO_STREAMING, "world.streaming", ws_game_is_loaded_section(bare, 0, 0, 0, &is, &error));
    EXPECT(WS_STATUS_OK, "", ws_game_free(bare, &error));

    if (failures) {
        fprintf(stderr, "vertical_sections: %d check(s) failed\n", failures);
        return 1;
    }
    printf("vertical_sections: every check passed\n");
    return 0;
}
