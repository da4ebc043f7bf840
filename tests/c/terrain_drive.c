/* A drive across examples/scenes/terrain.json through the round-3 C functions
 * (docs/reference/engines.md#the-hot-path): the hero moved every tick with ws_game_move, the chunk
 * events drained as WsChunkEvent structs, and for every chunk built a mesh-sized height buffer
 * filled by ws_game_terrain whose FNV-1a 64 (docs/reference/terrain.md#chunk-content: the heights
 * as little-endian u16, then the materials) must be the built event's hash. Then entity data, and
 * the new functions' refusals. Built and run by tests/capi_c.rs (under valgrind in CI, where a leak
 * or a bad read fails the test):
 *   terrain_drive REPO      REPO: the crate (for examples/scenes/terrain.json)
 * Exits 0 when every check holds, 1 naming those that failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world_streaming.h"

#define CHECK_FILE "terrain_drive.c"
#include "checks.h"

/* FNV-1a 64 of a chunk's bytes, as docs/reference/terrain.md#chunk-content defines them: the
 * heights as little-endian u16, then the materials. */
static uint64_t chunk_hash(const uint16_t *heights, const uint8_t *materials, size_t cells) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < cells; i++) {
        uint8_t lo = (uint8_t)(heights[i] & 0xff), hi = (uint8_t)(heights[i] >> 8);
        h ^= lo;
        h *= 0x100000001b3ull;
        h ^= hi;
        h *= 0x100000001b3ull;
    }
    for (size_t i = 0; i < cells; i++) {
        h ^= materials[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        text = NULL;
    }
    if (text) text[n] = '\0';
    fclose(f);
    return text;
}

#define BATCH 8          /* a small buffer: the drain is called again while it comes back full */
#define MAX_EVENTS 4096  /* a tick's chunk events */

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: terrain_drive REPO\n");
        return 2;
    }
    char path[4200], scenes[4096];
    snprintf(scenes, sizeof scenes, "%s/examples/scenes", argv[1]);
    snprintf(path, sizeof path, "%s/terrain.json", scenes);
    char *scene = read_file(path);
    CHECK(scene != NULL);
    if (!scene) return 1;

    WsGame game = 0;
    EXPECT(WS_STATUS_OK, "", ws_game_new(scene, scenes, &game, &error));
    free(scene);

    static WsChunkEvent events[MAX_EVENTS];
    size_t loaded = 0, unloaded = 0, built = 0, checked = 0, released_before_read = 0;
    size_t cells_per_chunk = 0;
    uint16_t *heights = NULL;
    uint8_t *materials = NULL;
    for (int t = 1; t <= 60; t++) {
        /* East 12 m a tick, drifting north: the focus crosses a chunk every few ticks. */
        EXPECT(WS_STATUS_OK, "", ws_game_move(game, "hero", 16.0 + 12.0 * t, 1.5, 16.0 + 3.0 * t, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_tick(game, 1, &error));
        size_t n = 0, got = BATCH;
        while (got == BATCH && n + BATCH <= MAX_EVENTS) {
            got = 0;
            EXPECT(WS_STATUS_OK, "", ws_game_drain_chunk_events(game, events + n, BATCH, &got, &error));
            CHECK(got <= BATCH);
            n += got;
        }
        for (size_t i = 0; i < n; i++) {
            const WsChunkEvent *e = &events[i];
            CHECK(e->level == 0);
            if (e->kind == WS_CHUNK_EVENT_LOADED) loaded++;
            if (e->kind == WS_CHUNK_EVENT_UNLOADED) unloaded++;
            if (e->kind != WS_CHUNK_EVENT_BUILT) {
                CHECK(e->hash == 0);
                continue;
            }
            built++;
            /* Released later in the same tick: not built any more. */
            int released = 0;
            for (size_t k = i + 1; k < n; k++)
                if (events[k].kind == WS_CHUNK_EVENT_UNLOADED && events[k].x == e->x && events[k].z == e->z)
                    released = 1;
            size_t cells = 0;
            if (heights == NULL) {
                /* Ask the size once: a mesh of cellsPerChunk² vertices. */
                EXPECT(WS_STATUS_OK, "", ws_game_terrain(game, e->x, e->z, 0, NULL, NULL, 0, &cells, &error));
                cells_per_chunk = cells;
                heights = malloc(cells * sizeof *heights);
                materials = malloc(cells);
                if (!heights || !materials) return 1;
            }
            if (released) {
                EXPECT(WS_STATUS_NOT_BUILT, "is not built",
                       ws_game_terrain(game, e->x, e->z, 0, heights, materials, cells_per_chunk, &cells, &error));
                CHECK(cells == cells_per_chunk);
                released_before_read++;
                continue;
            }
            EXPECT(WS_STATUS_OK, "",
                   ws_game_terrain(game, e->x, e->z, 0, heights, materials, cells_per_chunk, &cells, &error));
            CHECK(cells == cells_per_chunk);
            if (chunk_hash(heights, materials, cells) != e->hash) {
                fprintf(stderr, "chunk (%lld, %lld): the cells hash to %016llx, the event says %016llx\n",
                        (long long)e->x, (long long)e->z,
                        (unsigned long long)chunk_hash(heights, materials, cells),
                        (unsigned long long)e->hash);
                failures++;
            }
            checked++;
        }
        /* What is left for the JSON drain holds no chunk event. */
        char *json = NULL;
        EXPECT(WS_STATUS_OK, "", ws_game_drain_events(game, &json, &error));
        CHECK(json && strstr(json, "world.chunk.loaded") == NULL && strstr(json, "world.terrain.built") == NULL);
        ws_string_free(json);
    }
    printf("drive: %zu loaded, %zu unloaded, %zu built, %zu checked against their hash, "
           "%zu released before the read, %zu cells a chunk\n",
           loaded, unloaded, built, checked, released_before_read, cells_per_chunk);
    CHECK(cells_per_chunk == 32 * 32);
    CHECK(checked > 40);
    CHECK(unloaded > 0);
    CHECK(built == checked + released_before_read);

    /* The buffer contract: too small writes nothing; the count always comes back. */
    {
        uint16_t small[4] = {7, 7, 7, 7};
        size_t cells = 0;
        int64_t x = 0, z = 0;
        bool at_home = false;
        EXPECT(WS_STATUS_OK, "", ws_game_is_loaded(game, 6, 6, &at_home, &error));
        x = 6, z = 6; /* the hero ended at (736, 196): chunk (23, 6); (6, 6) is long gone */
        EXPECT(WS_STATUS_NOT_BUILT, "chunk (6, 6) is not built",
               ws_game_terrain(game, x, z, 0, heights, materials, cells_per_chunk, &cells, &error));
        CHECK(!at_home && cells == cells_per_chunk);
        EXPECT(WS_STATUS_BUFFER_TOO_SMALL, "the buffers hold 4 cells; 1024 are needed",
               ws_game_terrain(game, 23, 6, 0, small, NULL, 4, &cells, &error));
        CHECK(cells == 1024 && small[0] == 7 && small[3] == 7);
        EXPECT(WS_STATUS_NOT_BUILT, "LOD block (1, 0) of level 1 is not built",
               ws_game_terrain(game, 1, 0, 1, heights, materials, cells_per_chunk, &cells, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_cells is null",
               ws_game_terrain(game, 23, 6, 0, heights, materials, cells_per_chunk, NULL, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "heights and materials",
               ws_game_terrain(game, 23, 6, 0, NULL, NULL, cells_per_chunk, &cells, &error));
        /* Heights only, for a collider. */
        EXPECT(WS_STATUS_OK, "", ws_game_terrain(game, 23, 6, 0, heights, NULL, cells_per_chunk, &cells, &error));
    }
    free(heights);
    free(materials);

    /* Entity data. */
    {
        char *json = NULL;
        EXPECT(WS_STATUS_OK, "", ws_game_entity_data(game, "hero", &json, &error));
        CHECK(json && strcmp(json, "null") == 0);
        ws_string_free(json);
        EXPECT(WS_STATUS_OK, "", ws_game_set_data(game, "hero", "{\"hp\": 12, \"name\": \"Ada\"}", &error));
        EXPECT(WS_STATUS_OK, "", ws_game_entity_data(game, "hero", &json, &error));
        CHECK(json && strcmp(json, "{\"hp\":12,\"name\":\"Ada\"}") == 0);
        ws_string_free(json);
        EXPECT(WS_STATUS_BAD_INPUT, "expected a JSON object", ws_game_set_data(game, "hero", "42", &error));
        EXPECT(WS_STATUS_BAD_INPUT, "not JSON", ws_game_set_data(game, "hero", "{", &error));
        EXPECT(WS_STATUS_INPUT_FAILED, "ghost", ws_game_set_data(game, "ghost", "{}", &error));
        EXPECT(WS_STATUS_NO_SUCH_ENTITY, "ghost", ws_game_entity_data(game, "ghost", &json, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "json is null", ws_game_set_data(game, "hero", NULL, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_json is null", ws_game_entity_data(game, "hero", NULL, &error));
        EXPECT(WS_STATUS_INVALID_UTF8, "entity is not valid UTF-8", ws_game_entity_data(game, "\xff", &json, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_set_data(game, "hero", "null", &error));
        EXPECT(WS_STATUS_OK, "", ws_game_entity_data(game, "hero", &json, &error));
        CHECK(json && strcmp(json, "null") == 0);
        ws_string_free(json);
    }

    /* Moves and drains that are refused. */
    {
        WsChunkEvent one[1];
        size_t count = 0;
        EXPECT(WS_STATUS_BAD_INPUT, "to.x: expected a finite number", ws_game_move(game, "hero", 0.0 / 0.0, 0, 0, &error));
        EXPECT(WS_STATUS_BAD_INPUT, "to.z: expected a finite number", ws_game_move(game, "hero", 0, 0, 1e300, &error));
        EXPECT(WS_STATUS_INPUT_FAILED, "ghost", ws_game_move(game, "ghost", 1, 0, 1, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "entity is null", ws_game_move(game, NULL, 1, 0, 1, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_count is null", ws_game_drain_chunk_events(game, one, 1, NULL, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out (with a capacity above 0)",
               ws_game_drain_chunk_events(game, NULL, 3, &count, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_drain_chunk_events(game, NULL, 0, &count, &error));
        CHECK(count == 0);
    }

    /* A scene without world.terrain. */
    {
        WsGame plain = 0;
        size_t cells = 99;
        uint16_t h[1];
        EXPECT(WS_STATUS_OK, "", ws_game_new("{\"kits\": [{\"id\": \"world.ground\"}, {\"id\": \"world.streaming\"}]}", ".", &plain, &error));
        EXPECT(WS_STATUS_NO_TERRAIN, "world.terrain", ws_game_terrain(plain, 0, 0, 0, h, NULL, 1, &cells, &error));
        CHECK(cells == 0);
        EXPECT(WS_STATUS_OK, "", ws_game_free(plain, &error));
    }

    /* Freed handles. */
    EXPECT(WS_STATUS_OK, "", ws_game_free(game, &error));
    {
        WsChunkEvent one[1];
        size_t count = 0;
        uint16_t h[1];
        char *json = NULL;
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_move(game, "hero", 1, 0, 1, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_drain_chunk_events(game, one, 1, &count, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_terrain(game, 0, 0, 0, h, NULL, 1, &count, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_set_data(game, "hero", "{}", &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_entity_data(game, "hero", &json, &error));
        CHECK(json == NULL);
    }

    if (failures) {
        fprintf(stderr, "terrain_drive: %d check(s) failed\n", failures);
        return 1;
    }
    printf("terrain_drive: every check passed\n");
    return 0;
}
