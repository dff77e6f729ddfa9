/* Shared by the programs of this folder that compute: work_for(s) keeps a core busy for s
 * seconds of wall time (so that a phase lasts as long on a loaded machine). */
#include <time.h>

static volatile double sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void work_for(double seconds) {
    double end = now() + seconds;
    while (now() < end) sink = sink * 0.5 + 1.0;
}
