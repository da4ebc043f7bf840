/* Bad input, null pointers, invalid UTF-8, freed, forged and foreign-thread handles, strings
 * freed twice: every one an error code with a message, never a crash. Built and run by
 * tests/capi_c.rs (under valgrind in CI, where a leak or a bad read fails the test):
 *   misuse DIR REPO      DIR: a scratch directory; REPO: the crate (for mods/keep_home.json)
 * Exits 0 when every check holds, 1 naming those that failed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world_streaming.h"

#define CHECK_FILE "misuse.c"
#include "checks.h"

static const char *SCENE =
    "{ \"kits\": [ { \"id\": \"world.ground\" },"
    "  { \"id\": \"world.streaming\", \"config\": { \"radius\": 1, \"budgetMs\": 2 } } ],"
    "  \"entities\": [ { \"id\": \"hero\", \"tags\": [\"player\"], \"position\": { \"x\": 8, \"z\": 8 } } ] }";

struct other_thread {
    WsGame game;
    WsStatus status;
    char *error;
};

static void *use_from_another_thread(void *arg) {
    struct other_thread *t = arg;
    t->status = ws_game_tick(t->game, 1, &t->error);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: misuse DIR REPO\n");
        return 2;
    }
    const char *dir = argv[1], *repo = argv[2];
    char path[4096];
    WsGame game = 0;

    /* Creating a game. */
    EXPECT(WS_STATUS_NULL_ARGUMENT, "scene_json is null", ws_game_new(NULL, ".", &game, &error));
    EXPECT(WS_STATUS_NULL_ARGUMENT, "base_dir is null", ws_game_new(SCENE, NULL, &game, &error));
    EXPECT(WS_STATUS_NULL_ARGUMENT, "out_game is null", ws_game_new(SCENE, ".", NULL, &error));
    EXPECT(WS_STATUS_INVALID_UTF8, "offset 2", ws_game_new("{ \xff\xfe }", ".", &game, &error));
    EXPECT(WS_STATUS_BAD_SCENE, "line 1", ws_game_new("{ not json", ".", &game, &error));
    EXPECT(WS_STATUS_BAD_SCENE, "kits[1].config.radius: expected an integer 0..=64, got -1",
           ws_game_new("{\"kits\": [{\"id\": \"world.ground\"}, {\"id\": \"world.streaming\", "
                       "\"config\": {\"radius\": -1}}]}",
                       ".", &game, &error));
    EXPECT(WS_STATUS_BAD_SCENE, "mods[0]",
           ws_game_new("{\"kits\": [{\"id\": \"world.ground\"}, {\"id\": \"world.streaming\"}], "
                       "\"mods\": [\"mods/keep_home.json\"]}",
                       "/nonexistent-dir", &game, &error));
    CHECK(game == 0);
    /* A failing call with a null out_error still answers its status. */
    CHECK(ws_game_new(NULL, NULL, NULL, NULL) == WS_STATUS_NULL_ARGUMENT);

    /* The same scene with a mod found through base_dir. */
    EXPECT(WS_STATUS_OK, "",
           ws_game_new("{\"kits\": [{\"id\": \"world.ground\"}, {\"id\": \"world.streaming\", "
                       "\"config\": {\"radius\": 1}}], \"mods\": [\"mods/keep_home.json\"], "
                       "\"entities\": [{\"id\": \"hero\", \"tags\": [\"player\"], "
                       "\"position\": {\"x\": 8, \"z\": 8}}]}",
                       repo, &game, &error));
    CHECK(game != 0);
    EXPECT(WS_STATUS_OK, "", ws_game_tick(game, 10, &error));
    EXPECT(WS_STATUS_OK, "",
           ws_game_apply(game, "{\"tick\": 11, \"do\": \"move\", \"entity\": \"hero\", \"to\": {\"x\": 900, \"z\": 8}}",
                         &error));
    EXPECT(WS_STATUS_OK, "", ws_game_tick(game, 3, &error));
    {
        char *state = NULL;
        EXPECT(WS_STATUS_OK, "", ws_game_state(game, &state, &error));
        CHECK(state && strstr(state, "\"mod\":\"keep_home\"") && strstr(state, "\"reason\":\"home\""));
        ws_string_free(state);
        char *events = NULL;
        EXPECT(WS_STATUS_OK, "", ws_game_drain_events(game, &events, &error));
        ws_string_free(events);
    }
    EXPECT(WS_STATUS_OK, "", ws_game_free(game, &error));

    /* Inputs. */
    EXPECT(WS_STATUS_OK, "", ws_game_new(SCENE, ".", &game, &error));
    EXPECT(WS_STATUS_NULL_ARGUMENT, "line is null", ws_game_apply(game, NULL, &error));
    EXPECT(WS_STATUS_INVALID_UTF8, "line is not valid UTF-8",
           ws_game_apply(game, "{\"tick\": 1, \"do\": \"leave\", \"x\": \"\xc3\x28\"}", &error));
    EXPECT(WS_STATUS_BAD_INPUT, "column", ws_game_apply(game, "not json", &error));
    EXPECT(WS_STATUS_BAD_INPUT, "unknown value \"fly\"", ws_game_apply(game, "{\"tick\": 1, \"do\": \"fly\"}", &error));
    EXPECT(WS_STATUS_BAD_INPUT, "the next tick to run is 1",
           ws_game_apply(game, "{\"tick\": 5, \"do\": \"leave\"}", &error));
    EXPECT(WS_STATUS_INPUT_FAILED, "ghost",
           ws_game_apply(game, "{\"tick\": 1, \"do\": \"despawn\", \"entity\": \"ghost\"}", &error));
    EXPECT(WS_STATUS_OUT_OF_RANGE, "10000000", ws_game_tick(game, UINT64_MAX, &error));
    EXPECT(WS_STATUS_OK, "", ws_game_tick(game, 1, &error));

    /* Buffers and queries. */
    {
        WsChunk one[1];
        size_t count = 0;
        EXPECT(WS_STATUS_BUFFER_TOO_SMALL, "2 are needed", ws_game_loaded(game, one, 1, &count, &error));
        CHECK(count == 2);
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_count is null", ws_game_loaded(game, one, 1, NULL, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out (with a capacity above 0)",
               ws_game_pending(game, NULL, 5, &count, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_pending(game, NULL, 0, &count, &error));
        CHECK(count == 7);
        double value = 0;
        EXPECT(WS_STATUS_NO_SUCH_VARIABLE, "no.such", ws_game_variable(game, "no.such", &value, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_value is null",
               ws_game_variable(game, "world.chunks.loaded", NULL, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_loaded is null", ws_game_is_loaded(game, 0, 0, NULL, &error));
        bool ready = true;
        EXPECT(WS_STATUS_NULL_ARGUMENT, "entity is null", ws_game_ready(game, NULL, &ready, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_ready is null", ws_game_ready(game, "hero", NULL, &error));
        EXPECT(WS_STATUS_INVALID_UTF8, "id is not valid UTF-8", ws_game_ticket_ready(game, "\xff", &ready, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_ticket_ready(game, "unknown", &ready, &error));
        CHECK(!ready);
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_json is null", ws_game_state(game, NULL, &error));
        EXPECT(WS_STATUS_NULL_ARGUMENT, "out_json is null", ws_game_drain_events(game, NULL, &error));
        char *log = NULL;
        EXPECT(WS_STATUS_OK, "", ws_game_drain_log(game, &log, &error));
        CHECK(log && strcmp(log, "[]") == 0);
        ws_string_free(log);
    }

    /* Saves and loads that fail leave the game as it was. */
    snprintf(path, sizeof path, "%s/no/such/dir/save.json", dir);
    EXPECT(WS_STATUS_SAVE_FAILED, "save.json", ws_game_save(game, path, &error));
    snprintf(path, sizeof path, "%s/missing.json", dir);
    EXPECT(WS_STATUS_LOAD_FAILED, "missing.json", ws_game_load(game, path, &error));
    /* Not a regular file: refused without reading (a device that never ends, a FIFO nobody writes). */
    EXPECT(WS_STATUS_LOAD_FAILED, "/dev/zero: expected a regular file, found a character device",
           ws_game_load(game, "/dev/zero", &error));
    EXPECT(WS_STATUS_LOAD_FAILED, "expected a regular file, found a directory", ws_game_load(game, dir, &error));
    snprintf(path, sizeof path, "%s/corrupt.json", dir);
    {
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
            fputs("{\"format\": \"world-streaming-save\", \"version\": 1, \"tick\": ", f);
            fclose(f);
        }
    }
    EXPECT(WS_STATUS_LOAD_FAILED, "corrupt.json", ws_game_load(game, path, &error));
    {
        uint64_t tick = 0;
        size_t count = 0;
        EXPECT(WS_STATUS_OK, "", ws_game_tick_count(game, &tick, &error));
        CHECK(tick == 1);
        EXPECT(WS_STATUS_OK, "", ws_game_loaded(game, NULL, 0, &count, &error));
        CHECK(count == 2);
    }

    /* A game is used on the thread that made it: elsewhere its handle is unknown. */
    {
        struct other_thread t = {game, WS_STATUS_OK, NULL};
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, use_from_another_thread, &t) == 0);
        CHECK(pthread_join(thread, NULL) == 0);
        CHECK(t.status == WS_STATUS_INVALID_HANDLE);
        CHECK(t.error && strstr(t.error, "another thread"));
        /* A string may be freed on any thread. */
        CHECK(ws_string_free(t.error) == WS_STATUS_OK);
    }

    /* A scene without world.streaming answers the streaming queries with an error. */
    {
        WsGame bare = 0;
        bool loaded = true;
        EXPECT(WS_STATUS_OK, "", ws_game_new("{\"kits\": [{\"id\": \"game.engine\"}]}", ".", &bare, &error));
        EXPECT(WS_STATUS_NO_STREAMING, "world.streaming", ws_game_is_loaded(bare, 0, 0, &loaded, &error));
        EXPECT(WS_STATUS_NO_STREAMING, "world.streaming", ws_game_ready(bare, "hero", &loaded, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_free(bare, &error));
    }

    /* Freed, zero and forged handles. */
    EXPECT(WS_STATUS_OK, "", ws_game_free(game, &error));
    {
        bool loaded = false;
        uint64_t tick = 0;
        size_t count = 0;
        double value = 0;
        char *json = NULL;
        EXPECT(WS_STATUS_INVALID_HANDLE, "was freed", ws_game_free(game, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_tick(game, 1, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_apply(game, "{\"tick\": 2, \"do\": \"leave\"}", &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_is_loaded(game, 0, 0, &loaded, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_ready(game, "hero", &loaded, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_ticket_ready(game, "t", &loaded, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_loaded(game, NULL, 0, &count, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_pending(game, NULL, 0, &count, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_variable(game, "world.chunks.loaded", &value, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_tick_count(game, &tick, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_state(game, &json, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_drain_events(game, &json, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_drain_log(game, &json, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_save(game, "x.json", &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle", ws_game_load(game, "x.json", &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle 0", ws_game_tick(0, 1, &error));
        EXPECT(WS_STATUS_INVALID_HANDLE, "handle 987654321", ws_game_tick(987654321u, 1, &error));
        CHECK(json == NULL);
    }

    /* Strings: null is fine, a pointer not handed out or freed twice is refused. */
    {
        char stack[] = "not from the library";
        char *error = NULL;
        CHECK(ws_string_free(NULL) == WS_STATUS_OK);
        CHECK(ws_string_free(stack) == WS_STATUS_UNKNOWN_STRING);
        CHECK(ws_game_tick(0, 1, &error) == WS_STATUS_INVALID_HANDLE);
        CHECK(ws_string_free(error) == WS_STATUS_OK);
        CHECK(ws_string_free(error) == WS_STATUS_UNKNOWN_STRING);
        CHECK(strcmp(ws_status_name(999), "WS_STATUS_UNKNOWN") == 0);
    }

    if (failures) {
        fprintf(stderr, "misuse: %d check(s) failed\n", failures);
        return 1;
    }
    printf("misuse: every check passed\n");
    return 0;
}
