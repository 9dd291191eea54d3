/* Names that are not UTF-8 (Latin-1 bytes, a cut sequence) and that hold
 * quotes, backslashes and control characters, in every place a user names
 * something: nano-threads, a registered object, a registered state. For
 * utf8_names.sh. */
#include <nth.h>
#include <nth/trace.h>
#include <stdio.h>

static nth_mutex_t m;

static void *worker(void *name)
{
    nth_setname(nth_self(), (const char *)name);
    nth_mutex_lock(&m);
    nth_sleep_ns(1000000);
    nth_mutex_unlock(&m);
    return NULL;
}

int main(void)
{
    static const char *const names[] = { "bad\xff\xfeutf8", "quote\"back\\slash\nnewline", "\xe2\x82",
                                         "surrogate \xed\xa0\x80 overlong \xc0\xaf" };
    nth_t t[4];
    nth_mutex_init(&m, NULL);
    nth_trace_register_object(&m, "lock \"q\" \\ \t\x01 \xc3\xa9 \xff\xfe end");
    if (nth_trace_register_state(100, "state \xe9t\xe9 \"x\"") != 0) {
        fprintf(stderr, "names_demo: nth_trace_register_state failed\n");
        return 1;
    }
    for (int i = 0; i < 4; i++)
        nth_create(&t[i], NULL, worker, (void *)names[i]);
    nth_mutex_lock(&m);
    nth_sleep_ns(2000000);
    nth_mutex_unlock(&m);
    nth_trace_state_push(100);
    nth_sleep_ns(100000);
    nth_trace_state_pop();
    for (int i = 0; i < 4; i++)
        nth_join(t[i], NULL);
    return 0;
}
