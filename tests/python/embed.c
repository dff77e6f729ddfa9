/* A C program that embeds CPython and runs the script it is given: a rank whose
 * executable is not the interpreter, whose Python frames lie between its own C frames
 * (main > run_script > ... > <module> > ...). */
#include <Python.h>
#include <stdio.h>

static void run_script(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); exit(1); }
    PyRun_SimpleFileEx(f, path, 1);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: embed SCRIPT\n"); return 2; }
    Py_Initialize();
    run_script(argv[1]);
    Py_Finalize();
    return 0;
}
