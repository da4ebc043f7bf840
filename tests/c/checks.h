/* The checks the C tests share (tests/capi_c.rs builds and runs them). Define CHECK_FILE, the
 * test's file name for its messages, before including this header:
 *   #define CHECK_FILE "misuse.c"
 *   #include "checks.h"
 * CHECK(cond) counts a condition that does not hold; EXPECT(expected, needle, call) checks that
 * `call` returns `expected` and, when that is not WS_STATUS_OK, a message containing `needle`
 * (the call's `&error` out-parameter is named `error`), prints the message and frees it. A test
 * exits 1 when `failures` is not 0. */
#ifndef WS_TESTS_CHECKS_H
#define WS_TESTS_CHECKS_H

#include <stdio.h>
#include <string.h>

#include "world_streaming.h"

static int failures = 0;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, CHECK_FILE ":%d: check failed: %s\n", __LINE__, #cond); \
            failures++;                                                             \
        }                                                                           \
    } while (0)

#define EXPECT(expected, needle, call)                             \
    do {                                                           \
        char *error = NULL;                                        \
        WsStatus status = (call);                                  \
        expect_(__LINE__, #call, status, expected, error, needle); \
    } while (0)

static void expect_(int line, const char *call, WsStatus status, WsStatus expected, char *error,
                    const char *needle) {
    if (status != expected) {
        fprintf(stderr, CHECK_FILE ":%d: %s: expected %s, got %s (%s)\n", line, call,
                ws_status_name((int32_t)expected), ws_status_name((int32_t)status),
                error ? error : "no message");
        failures++;
    } else if (expected != WS_STATUS_OK && (error == NULL || strstr(error, needle) == NULL)) {
        fprintf(stderr, CHECK_FILE ":%d: %s: the message \"%s\" does not contain \"%s\"\n", line,
                call, error ? error : "(null)", needle);
        failures++;
    } else if (expected == WS_STATUS_OK && error != NULL) {
        fprintf(stderr, CHECK_FILE ":%d: %s: a message on success\n", line, call);
        failures++;
    }
    if (error) printf("%-26s %s\n", ws_status_name((int32_t)status), error);
    CHECK(ws_string_free(error) == WS_STATUS_OK);
}

#endif
