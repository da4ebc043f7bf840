/* The seed's worked example (docs/reference/tick.md#the-worked-example) through the C ABI, with a
 * save and a reload into a fresh game. Built and run by tests/capi_c.rs (under valgrind in CI):
 *   seed_example DIR      DIR: a directory for the save file
 * Exits 0 when every number matches, 1 naming the first check that failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world_streaming.h"

static int failures = 0;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "seed_example.c:%d: check failed: %s\n", __LINE__, #cond); \
            failures++;                                                           \
        }                                                                         \
    } while (0)

static const char *SCENE =
    "{ \"kits\": [ { \"id\": \"game.engine\" }, { \"id\": \"world.ground\" },"
    "  { \"id\": \"world.streaming\", \"config\": { \"chunkSize\": 32, \"radius\": 1, \"budgetMs\": 2 } } ],"
    "  \"entities\": [ { \"id\": \"hero\", \"tags\": [\"player\"], \"position\": { \"x\": 8, \"z\": 8 } } ] }";

/* Reports a failed call; `error` is read here, after the call has set it (an argument `error`
 * next to the call's `&error` could be read before the call runs). */
static void report(WsStatus status, char **error, const char *what) {
    if (status != WS_STATUS_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, ws_status_name((int32_t)status),
                *error ? *error : "(no message)");
        failures++;
    }
    ws_string_free(*error);
    *error = NULL;
}

static size_t count_loaded(WsGame game) {
    size_t count = 0;
    char *error = NULL;
    report(ws_game_loaded(game, NULL, 0, &count, &error), &error, "ws_game_loaded (count)");
    return count;
}

static double variable(WsGame game, const char *name) {
    double value = -1;
    char *error = NULL;
    report(ws_game_variable(game, name, &value, &error), &error, name);
    return value;
}

static bool is_loaded(WsGame game, int64_t x, int64_t z) {
    bool loaded = false;
    char *error = NULL;
    report(ws_game_is_loaded(game, x, z, &loaded, &error), &error, "ws_game_is_loaded");
    return loaded;
}

static bool ready(WsGame game, const char *entity) {
    bool r = false;
    char *error = NULL;
    report(ws_game_ready(game, entity, &r, &error), &error, "ws_game_ready");
    return r;
}

static bool ticket_ready(WsGame game, const char *id) {
    bool r = false;
    char *error = NULL;
    report(ws_game_ticket_ready(game, id, &r, &error), &error, "ws_game_ticket_ready");
    return r;
}

static char *state_json(WsGame game) {
    char *json = NULL, *error = NULL;
    report(ws_game_state(game, &json, &error), &error, "ws_game_state");
    return json;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: seed_example DIR\n");
        return 2;
    }
    char save_path[4096];
    snprintf(save_path, sizeof save_path, "%s/seed.save.json", argv[1]);
    char *error = NULL;

    WsGame game = 0;
    report(ws_game_new(SCENE, ".", &game, &error), &error, "ws_game_new");
    CHECK(game != 0);

    /* Tick 1 loads (0,0) then (0,-1). */
    error = NULL;
    report(ws_game_tick(game, 1, &error), &error, "ws_game_tick 1");
    char *events = NULL;
    error = NULL;
    report(ws_game_drain_events(game, &events, &error), &error, "ws_game_drain_events");
    CHECK(events != NULL &&
          strcmp(events,
                 "[{\"tick\":1,\"event\":\"world.chunk.loaded\",\"data\":{\"x\":0,\"z\":0}},"
                 "{\"tick\":1,\"event\":\"world.chunk.loaded\",\"data\":{\"x\":0,\"z\":-1}}]") == 0);
    if (events) printf("tick 1 events: %s\n", events);
    ws_string_free(events);

    /* loaded() = [(0,-1), (0,0)] in row order; world.chunks.pending = 7. */
    WsChunk chunks[16];
    size_t count = 0;
    error = NULL;
    report(ws_game_loaded(game, chunks, 16, &count, &error), &error, "ws_game_loaded");
    CHECK(count == 2);
    CHECK(count == 2 && chunks[0].x == 0 && chunks[0].z == -1);
    CHECK(count == 2 && chunks[1].x == 0 && chunks[1].z == 0);
    CHECK(variable(game, "world.chunks.pending") == 7);
    error = NULL;
    report(ws_game_pending(game, chunks, 16, &count, &error), &error, "ws_game_pending");
    CHECK(count == 7);
    /* Readiness (docs/reference/streaming.md#readiness): the hero's square is not all loaded
     * yet. */
    CHECK(!ready(game, "hero"));

    /* Ticks 2-5 (with the seed's input at tick 5): 9 loaded, (1,1) is, (2,0) is not. */
    error = NULL;
    report(ws_game_tick(game, 3, &error), &error, "ws_game_tick 3");
    error = NULL;
    report(ws_game_apply(game, "{\"tick\": 5, \"do\": \"player.moved\", \"at\": {\"x\": 8, \"z\": 8}}",
                         &error),
           &error, "ws_game_apply");
    error = NULL;
    report(ws_game_tick(game, 1, &error), &error, "ws_game_tick 1");
    uint64_t tick = 0;
    error = NULL;
    report(ws_game_tick_count(game, &tick, &error), &error, "ws_game_tick_count");
    CHECK(tick == 5);
    CHECK(variable(game, "world.chunks.loaded") == 9);
    CHECK(count_loaded(game) == 9);
    CHECK(is_loaded(game, 1, 1));
    CHECK(!is_loaded(game, 2, 0));
    CHECK(ready(game, "hero"));
    CHECK(!ready(game, "nobody"));
    events = NULL;
    error = NULL;
    report(ws_game_drain_events(game, &events, &error), &error, "ws_game_drain_events");
    CHECK(events != NULL && strstr(events, "\"event\":\"player.moved\"") != NULL);
    ws_string_free(events);

    /* A save and a reload into a fresh game keeps the 9 chunks, and both continue alike. */
    error = NULL;
    report(ws_game_save(game, save_path, &error), &error, "ws_game_save");
    WsGame fresh = 0;
    error = NULL;
    report(ws_game_new(SCENE, ".", &fresh, &error), &error, "ws_game_new (fresh)");
    CHECK(fresh != game);
    error = NULL;
    report(ws_game_load(fresh, save_path, &error), &error, "ws_game_load");
    CHECK(count_loaded(fresh) == 9);
    CHECK(is_loaded(fresh, 1, 1));
    CHECK(!is_loaded(fresh, 2, 0));
    tick = 0;
    error = NULL;
    report(ws_game_tick_count(fresh, &tick, &error), &error, "ws_game_tick_count (fresh)");
    CHECK(tick == 5);
    char *before = state_json(game);
    char *after = state_json(fresh);
    CHECK(before && after && strcmp(before, after) == 0);
    if (after) printf("state after the reload: %s\n", after);
    ws_string_free(before);
    ws_string_free(after);
    error = NULL;
    report(ws_game_apply(game, "{\"tick\": 6, \"do\": \"move\", \"entity\": \"hero\", \"to\": {\"x\": 100, \"z\": 8}}",
                         &error),
           &error, "ws_game_apply (game)");
    error = NULL;
    report(ws_game_apply(fresh, "{\"tick\": 6, \"do\": \"move\", \"entity\": \"hero\", \"to\": {\"x\": 100, \"z\": 8}}",
                         &error),
           &error, "ws_game_apply (fresh)");
    error = NULL;
    report(ws_game_tick(game, 3, &error), &error, "ws_game_tick (game)");
    error = NULL;
    report(ws_game_tick(fresh, 3, &error), &error, "ws_game_tick (fresh)");
    char *a = NULL, *b = NULL;
    error = NULL;
    report(ws_game_drain_events(game, &a, &error), &error, "drain (game)");
    error = NULL;
    report(ws_game_drain_events(fresh, &b, &error), &error, "drain (fresh)");
    CHECK(a && b && strcmp(a, b) == 0 && strstr(a, "world.chunk.unloaded") != NULL);
    ws_string_free(a);
    ws_string_free(b);

    /* A preload ticket far away (docs/reference/streaming.md#readiness): not ready until its square
     * is loaded. */
    error = NULL;
    report(ws_game_apply(fresh, "{\"tick\": 9, \"do\": \"request\", \"id\": \"gate\", "
                                "\"at\": {\"x\": 1000, \"z\": 1000}, \"radius\": 1, \"ticks\": 20}",
                         &error),
           &error, "ws_game_apply (request)");
    CHECK(!ticket_ready(fresh, "gate"));
    /* Ready exactly when the 9 chunks of its square, (30..32, 30..32), are loaded. */
    int ticks = 0;
    bool all = false;
    while (!all && ticks < 20) {
        error = NULL;
        report(ws_game_tick(fresh, 1, &error), &error, "ws_game_tick (ticket)");
        ticks++;
        int square = 0;
        for (int64_t z = 30; z <= 32; z++)
            for (int64_t x = 30; x <= 32; x++) square += is_loaded(fresh, x, z);
        all = square == 9;
        CHECK(ticket_ready(fresh, "gate") == all);
    }
    CHECK(all && ticks > 1);
    CHECK(!ticket_ready(fresh, "no-such-ticket"));
    events = NULL;
    error = NULL;
    report(ws_game_drain_events(fresh, &events, &error), &error, "ws_game_drain_events (ticket)");
    CHECK(events != NULL && strstr(events, "{\"event\":\"world.ticket.ready\"") == NULL &&
          strstr(events, "\"event\":\"world.ticket.ready\",\"data\":{\"id\":\"gate\"}") != NULL);
    if (events) printf("ticket events: %.120s...\n", events);
    ws_string_free(events);

    error = NULL;
    report(ws_game_free(game, &error), &error, "ws_game_free");
    error = NULL;
    report(ws_game_free(fresh, &error), &error, "ws_game_free (fresh)");

    if (failures) {
        fprintf(stderr, "seed_example: %d check(s) failed\n", failures);
        return 1;
    }
    printf("seed_example: every check passed (library %s)\n", ws_version());
    return 0;
}
