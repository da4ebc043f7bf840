/* A scene's files given as text and saves as text through the C ABI
 * (docs/reference/engines.md#scene-files-as-text, docs/reference/engines.md#saves-as-text):
 * examples/scenes/town.json with the JSON mod mods/keep_home.json, run once from the disk
 * (ws_game_new) and once from text (ws_game_new_with_files), the same events tick by tick and the
 * same state; the refusals of files_json (a missing file, `../x`, an absolute path, a value that
 * is not a string, a NUL in a key); ws_game_save_text byte for byte ws_game_save's file, a round
 * trip through ws_game_load_text back to the same state, and bad saves refused with the game
 * unchanged. Built and run by tests/capi_c.rs (under valgrind in CI, where a leak or a bad read
 * fails the test):
 *   text_abi DIR REPO      DIR: a scratch directory; REPO: the crate
 * Exits 0 when every check holds, 1 naming those that failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world_streaming.h"

#define CHECK_FILE "text_abi.c"
#include "checks.h"

/* Whether the mod held an unload refused (its reason "home") in a state seen. */
static int refused = 0;

/* The whole file at `path` (NUL-terminated, malloc'd), or NULL. */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* Appends `text` to `out` (malloc'd, grown) as a JSON string. */
static char *append(char *out, const char *text, int quoted) {
    size_t len = out ? strlen(out) : 0;
    size_t need = len + strlen(text) * 6 + 3;
    out = realloc(out, need);
    char *p = out + len;
    if (quoted) *p++ = '"';
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (!quoted) {
            *p++ = (char)*c;
        } else if (*c == '"' || *c == '\\') {
            *p++ = '\\';
            *p++ = (char)*c;
        } else if (*c < 0x20) {
            p += sprintf(p, "\\u%04x", *c);
        } else {
            *p++ = (char)*c;
        }
    }
    if (quoted) *p++ = '"';
    *p = '\0';
    return out;
}

/* town.json with `"mods": [MOD]` added first. */
static char *with_mod(const char *town, const char *mod) {
    const char *brace = strchr(town, '{');
    char *out = append(NULL, "{ \"mods\": [", 0);
    out = append(out, mod, 1);
    out = append(out, "],", 0);
    return append(out, brace + 1, 0);
}

/* Runs a call that hands out a JSON string into `json`; the string, or NULL (counted as a
 * failure) when the call fails. */
#define HANDED_OUT(call, what)                                                             \
    do {                                                                                   \
        WsStatus status_ = (call);                                                         \
        if (status_ != WS_STATUS_OK) {                                                     \
            fprintf(stderr, "text_abi.c: %s failed: %s\n", what,                           \
                    ws_status_name((int32_t)status_));                                     \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

static char *state_of(WsGame game) {
    char *json = NULL;
    HANDED_OUT(ws_game_state(game, &json, NULL), "ws_game_state");
    return json;
}

static char *events_of(WsGame game) {
    char *json = NULL;
    HANDED_OUT(ws_game_drain_events(game, &json, NULL), "ws_game_drain_events");
    return json;
}

static char *save_text_of(WsGame game) {
    char *json = NULL;
    HANDED_OUT(ws_game_save_text(game, &json, NULL), "ws_game_save_text");
    return json;
}

/* The state and the events drained since the last call are the same in both games. */
static void same(WsGame a, WsGame b, int tick) {
    char *sa = state_of(a), *sb = state_of(b), *ea = events_of(a), *eb = events_of(b);
    if (!sa || !sb || strcmp(sa, sb) != 0 || !ea || !eb || strcmp(ea, eb) != 0) {
        fprintf(stderr, "text_abi.c: tick %d: the games differ\n  %s\n  %s\n  %s\n  %s\n", tick,
                sa, sb, ea, eb);
        failures++;
    }
    if (sa && strstr(sa, "\"home\"")) refused = 1;
    ws_string_free(sa);
    ws_string_free(sb);
    ws_string_free(ea);
    ws_string_free(eb);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: text_abi DIR REPO\n");
        return 2;
    }
    const char *dir = argv[1], *repo = argv[2];
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/scenes/town.json", repo);
    char *town = slurp(path);
    snprintf(path, sizeof path, "%s/examples/scenes/town.district.jsonl", repo);
    char *district = slurp(path);
    snprintf(path, sizeof path, "%s/mods/keep_home.json", repo);
    char *keep_home = slurp(path);
    if (!town || !district || !keep_home) {
        fprintf(stderr, "text_abi.c: cannot read the town scene's files under %s\n", repo);
        return 1;
    }

    /* The scene from its directory: the mod where the repository keeps it. */
    char *disk_scene = with_mod(town, "../../mods/keep_home.json");
    snprintf(path, sizeof path, "%s/examples/scenes", repo);
    WsGame disk = 0;
    EXPECT(WS_STATUS_OK, "", ws_game_new(disk_scene, path, &disk, &error));

    /* The same scene from text: the mod and the district file in files_json. */
    char *scene = with_mod(town, "mods/keep_home.json");
    char *files = append(NULL, "{", 0);
    files = append(files, "mods/keep_home.json", 1);
    files = append(files, ": ", 0);
    files = append(files, keep_home, 1);
    files = append(files, ", ", 0);
    files = append(files, "town.district.jsonl", 1);
    files = append(files, ": ", 0);
    files = append(files, district, 1);
    files = append(files, "}", 0);
    WsGame text = 0;
    EXPECT(WS_STATUS_OK, "", ws_game_new_with_files(scene, files, &text, &error));
    CHECK(text != 0 && text != disk);

    /* Tick by tick the same events and state; the hero walks away (the mod keeps chunk (0, 0)
     * loaded: its refusal is held in the state) and back. */
    for (int t = 1; t <= 12; t++) {
        double x = t >= 3 && t < 6 ? 300.0 : 16.0;
        EXPECT(WS_STATUS_OK, "", ws_game_move(disk, "hero", x, 0.0, 16.0, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_move(text, "hero", x, 0.0, 16.0, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_tick(disk, 1, &error));
        EXPECT(WS_STATUS_OK, "", ws_game_tick(text, 1, &error));
        same(disk, text, t);
    }
    CHECK(refused);

    /* Refusals of files_json, each BAD_SCENE naming the path or key. */
    WsGame bad = 0;
    EXPECT(WS_STATUS_BAD_SCENE, "mods/keep_home.json does not exist",
           ws_game_new_with_files(scene, "{}", &bad, &error));
    EXPECT(WS_STATUS_BAD_SCENE, "town.district.jsonl: No such file or directory",
           ws_game_new_with_files(scene, "{\"mods/keep_home.json\": \"{\\\"id\\\": \\\"k\\\"}\"}",
                                  &bad, &error));
    EXPECT(WS_STATUS_BAD_SCENE, "files: \"../x\": expected a path inside the scene's directory",
           ws_game_new_with_files(scene, "{\"../x\": \"\"}", &bad, &error));
    EXPECT(WS_STATUS_BAD_SCENE, "files: \"/etc/passwd\": expected a path relative",
           ws_game_new_with_files(scene, "{\"/etc/passwd\": \"\"}", &bad, &error));
    EXPECT(WS_STATUS_BAD_SCENE,
           "files: \"town.district.jsonl\": expected the file's text (a string), got 3",
           ws_game_new_with_files(scene, "{\"town.district.jsonl\": 3}", &bad, &error));
    EXPECT(WS_STATUS_BAD_SCENE, "files: \"a\\u0000b\": expected a file path, got one holding a NUL",
           ws_game_new_with_files(scene, "{\"a\\u0000b\": \"\"}", &bad, &error));
    EXPECT(WS_STATUS_BAD_SCENE, "files: expected an object",
           ws_game_new_with_files(scene, "[]", &bad, &error));
    EXPECT(WS_STATUS_BAD_SCENE, "files: line 1 column",
           ws_game_new_with_files(scene, "{", &bad, &error));
    char *outside = with_mod(town, "../mods/keep_home.json");
    EXPECT(WS_STATUS_BAD_SCENE, "mods[0]: ../mods/keep_home.json: expected a path inside",
           ws_game_new_with_files(outside, files, &bad, &error));
    free(outside);
    EXPECT(WS_STATUS_NULL_ARGUMENT, "files_json is null",
           ws_game_new_with_files(scene, NULL, &bad, &error));
    EXPECT(WS_STATUS_NULL_ARGUMENT, "out_game is null",
           ws_game_new_with_files(scene, files, NULL, &error));
    EXPECT(WS_STATUS_INVALID_UTF8, "files_json is not valid UTF-8",
           ws_game_new_with_files(scene, "{\"a\": \"\xff\"}", &bad, &error));
    CHECK(bad == 0);

    /* A save as text is ws_game_save's file, byte for byte. */
    char *saved = save_text_of(text);
    snprintf(path, sizeof path, "%s/town.save.json", dir);
    EXPECT(WS_STATUS_OK, "", ws_game_save(text, path, &error));
    char *file = slurp(path);
    CHECK(saved && file && strcmp(saved, file) == 0);
    free(file);
    char *at_save = state_of(text);

    /* A round trip: ticked on, loaded back, the state at the save. */
    EXPECT(WS_STATUS_OK, "", ws_game_move(text, "hero", 300.0, 0.0, 16.0, &error));
    EXPECT(WS_STATUS_OK, "", ws_game_tick(text, 5, &error));
    char *later = state_of(text);
    CHECK(later && at_save && strcmp(later, at_save) != 0);
    ws_string_free(later);
    ws_string_free(events_of(text));
    EXPECT(WS_STATUS_OK, "", ws_game_load_text(text, saved, &error));
    char *loaded = state_of(text);
    CHECK(loaded && at_save && strcmp(loaded, at_save) == 0);
    ws_string_free(loaded);
    ws_string_free(at_save);

    /* Bad saves: refused, the game unchanged (state, events, its own save). */
    char half[64];
    memcpy(half, saved, sizeof half - 1);
    half[sizeof half - 1] = '\0';
    const char *bad_saves[] = {"{", "[]", "{\"tick\": \"soon\"}", half};
    const char *words[] = {"load: save: line 1 column", "load: save: ", "load: save: ",
                           "load: save: line"};
    ws_string_free(events_of(text));
    for (size_t i = 0; i < sizeof bad_saves / sizeof *bad_saves; i++) {
        char *before = state_of(text), *save_before = save_text_of(text);
        EXPECT(WS_STATUS_LOAD_FAILED, words[i], ws_game_load_text(text, bad_saves[i], &error));
        char *after = state_of(text), *save_after = save_text_of(text), *events = events_of(text);
        CHECK(before && after && strcmp(before, after) == 0);
        CHECK(save_before && save_after && strcmp(save_before, save_after) == 0);
        CHECK(events && strcmp(events, "[]") == 0);
        ws_string_free(before);
        ws_string_free(after);
        ws_string_free(save_before);
        ws_string_free(save_after);
        ws_string_free(events);
    }
    /* The town's save into a game of another scene (no district kit): refused, that game
     * unchanged. */
    WsGame plain = 0;
    EXPECT(WS_STATUS_OK, "",
           ws_game_new_with_files("{\"kits\": [{\"id\": \"world.ground\"}, {\"id\": "
                                  "\"world.streaming\"}], \"entities\": []}",
                                  "{}", &plain, &error));
    char *plain_save = save_text_of(plain);
    EXPECT(WS_STATUS_LOAD_FAILED, "load: save: ", ws_game_load_text(plain, saved, &error));
    char *plain_after = save_text_of(plain);
    CHECK(plain_save && plain_after && strcmp(plain_save, plain_after) == 0);
    ws_string_free(plain_save);
    ws_string_free(plain_after);
    EXPECT(WS_STATUS_OK, "", ws_game_free(plain, &error));

    /* Null pointers and a freed handle. */
    EXPECT(WS_STATUS_NULL_ARGUMENT, "out_json is null", ws_game_save_text(text, NULL, &error));
    EXPECT(WS_STATUS_NULL_ARGUMENT, "json is null", ws_game_load_text(text, NULL, &error));
    EXPECT(WS_STATUS_OK, "", ws_game_free(text, &error));
    char *none = NULL;
    EXPECT(WS_STATUS_INVALID_HANDLE, "no live game", ws_game_save_text(text, &none, &error));
    CHECK(none == NULL);
    EXPECT(WS_STATUS_INVALID_HANDLE, "no live game", ws_game_load_text(text, saved, &error));
    EXPECT(WS_STATUS_OK, "", ws_game_free(disk, &error));

    ws_string_free(saved);
    free(files);
    free(scene);
    free(disk_scene);
    free(town);
    free(district);
    free(keep_home);
    if (failures) {
        fprintf(stderr, "text_abi: %d checks failed\n", failures);
        return 1;
    }
    printf("text_abi: every check passed\n");
    return 0;
}
