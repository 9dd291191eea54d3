/*
 * nth-trace -- convert, merge and summarise nthlib binary traces.
 *
 *   nth-trace convert [-q] FILE.bin [-o OUT] OUT: .json, .json.gz, .prv,
 *                                            or no suffix: OUT.json, or
 *                                            OUT.json.gz past NTH_TRACE_JSON_MAX
 *                                            (default: PATH for the runtime's
 *                                            PATH.PID.bin, default_out.h)
 *   nth-trace merge [-q] A.bin B.bin ... -o OUT   several processes, one timeline
 *                                            (CLOCK_MONOTONIC of one boot)
 *   nth-trace stats FILE.bin...              per file: time per state per
 *                                            nano-thread and per VP, longest
 *                                            slices, CPUs from cpumgr (a
 *                                            cpumgr --trace file: time with k
 *                                            CPUs per application)
 *
 * -q: no "wrote" line (warnings and errors are still printed). The runtime's
 * fatal-signal path runs `nth-trace convert -q` and says the line itself.
 * --no-end-ok: a file without its end record is expected, no warning (nthrun
 * converting what its program left after _exit() or SIGKILL says that in
 * its own line).
 *
 * Exit status: 0 done; 1 done, but the input was truncated or damaged (the
 * warnings on stderr say what was skipped; the output is still complete and
 * every slice closed); 2 usage error; 3 an input cannot be read or is no
 * nthlib trace, or the output cannot be written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "config.h"   /* PACKAGE_NAME, PACKAGE_VERSION */
#include "trace_convert.h"
#include "input_kind.h"
#include "default_out.h"

static void report(const char *out, const char **in, int nin);

static void usage_to(FILE *f)
{
    fprintf(f, "usage: nth-trace convert [-q] FILE.bin [-o OUT.json|OUT.json.gz|OUT.prv|OUT]\n"
               "       nth-trace merge [-q] A.bin B.bin ... -o OUT.json.gz|OUT.json|OUT.prv|OUT\n"
               "       nth-trace stats FILE.bin [FILE.bin ...]\n"
               "       nth-trace --help | --version\n"
               "OUT without a suffix: OUT.json, or OUT.json.gz if the JSON passes\n"
               "NTH_TRACE_JSON_MAX bytes (default 256M). convert without -o: PATH for the\n"
               "runtime's PATH.PID.bin (NAME.json.gz for another NAME.bin); another process's\n"
               "trace already there is kept and PATH.PID.json (.json.gz, .prv) written instead.\n"
               "-q: no \"wrote\" line (warnings and errors are still printed).\n"
               "--no-end-ok: no warning for a file without its end record (its process left\n"
               "through _exit() or was killed, and the caller knows it).\n"
               "Exit status: 0 done; 1 done, input truncated or damaged (warnings say what was\n"
               "skipped); 2 usage error; 3 an input cannot be read or is no trace, or the\n"
               "output cannot be written.\n");
}

/* A usage error: the usage on stderr, exit status 2. */
static int usage(void)
{
    usage_to(stderr);
    return 2;
}

static int valid_out(const char *o)
{
    size_t n = strlen(o);
    return (n > 5 && !strcmp(o + n - 5, ".json")) || (n > 8 && !strcmp(o + n - 8, ".json.gz")) ||
           (n > 4 && !strcmp(o + n - 4, ".prv")) || nth_trace_name_auto(o);
}

static int run(int argc, char **argv, const char **in)
{
    const char *cmd = argv[1], *out = NULL;
    int nin = 0, quiet = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-q")) {
            quiet = 1;
        } else if (!strcmp(argv[i], "--no-end-ok")) {
            nth_tr_no_end_ok = 1;
        } else if (!strcmp(argv[i], "-o")) {
            if (++i == argc) return usage();
            out = argv[i];
        } else {
            in[nin++] = argv[i];
        }
    }
    if (!strcmp(cmd, "stats")) {
        /* Several files (the processes of a run, an application and the
         * cpumgr daemon's grants): one section each, in the order given,
         * headed by the file's name. */
        if (nin < 1 || out || quiet) return usage();
        unsigned w = 0;
        for (int i = 0; i < nin; i++) {
            struct nth_tr_file f;
            if (nth_trace_viewer_file(in[i], stderr))
                return 3;
            int rc = nth_tr_load(in[i], &f, stderr);
            if (rc) {
                if (rc != EINVAL)   /* EINVAL: nth_tr_load said why */
                    fprintf(stderr, "nth-trace: %s: %s\n", in[i], strerror(rc));
                return 3;
            }
            if (nin > 1)
                printf("%s== %s ==\n", i ? "\n" : "", in[i]);
            rc = nth_tr_write_stats(&f, stdout);
            w += f.warnings;
            nth_tr_free(&f);
            if (rc) {
                fprintf(stderr, "nth-trace: %s: %s\n", in[i], strerror(rc));
                return 3;
            }
        }
        return w ? 1 : 0;
    }
    char def[4096];
    if (!strcmp(cmd, "convert")) {
        if (nin != 1) return usage();
        if (!out) {
            int e = nth_trace_default_out(in[0], def, sizeof def, stderr);
            if (e == ENAMETOOLONG)
                return usage();
            if (e)
                return 3;
            out = def;
        }
    } else if (!strcmp(cmd, "merge")) {
        if (nin < 1 || !out) return usage();
    } else {
        return usage();
    }
    if (!valid_out(out)) {
        fprintf(stderr, "nth-trace: %s: unknown output format (accepted: .json, .json.gz, .prv, or no suffix: "
                        ".json, .json.gz past NTH_TRACE_JSON_MAX)\n", out);
        return 2;
    }
    /* An input that cannot be read is named here, before any output is
     * made: fopen(3) opens a directory for reading, so its read error came
     * from the converter, reported against the output. One file given twice
     * (a shell glob and a name, a.bin a.bin) is merged with itself, as two
     * processes (tests overlap a trace with itself so), but not silently:
     * by mistake it doubles every slice. */
    struct stat *seen = calloc((size_t)nin, sizeof *seen);
    if (!seen)
        return 3;
    for (int i = 0; i < nin; i++) {
        FILE *f = fopen(in[i], "rb");
        int e = f ? 0 : errno;
        if (f && fstat(fileno(f), &seen[i]))
            e = errno;
        else if (f && S_ISDIR(seen[i].st_mode))
            e = EISDIR;
        if (f)
            fclose(f);
        if (e) {
            fprintf(stderr, "nth-trace: %s: cannot read: %s\n", in[i], strerror(e));
            free(seen);
            return 3;
        }
        for (int j = 0; j < i; j++)
            if (seen[j].st_dev == seen[i].st_dev && seen[j].st_ino == seen[i].st_ino) {
                fprintf(stderr, "nth-trace: warning: %s and %s are the same file: merged twice, as two processes\n",
                        in[j], in[i]);
                break;
            }
        if (nth_trace_viewer_file(in[i], stderr)) {
            free(seen);
            return 3;
        }
    }
    free(seen);
    unsigned warnings = 0;
    const char *failed = NULL;
    char wrote[4096];
    int rc = nth_trace_convert_to(in, nin, out, stderr, &warnings, &failed, wrote, sizeof wrote);
    if (rc && rc != EINVAL && failed && failed != out)   /* EINVAL: an input is no trace, and the loader said why */
        fprintf(stderr, "nth-trace: %s: cannot read: %s\n", failed, strerror(rc));
    else if (rc && rc != EINVAL)
        fprintf(stderr, "nth-trace: cannot convert to %s: %s\n", out, strerror(rc));
    else if (!rc && !quiet)
        report(wrote, in, nin);
    return rc ? 3 : warnings ? 1 : 0;
}

/* "wrote OUT (N bytes from M records)": how big the trace came out, what a
 * user needs to judge whether a viewer will load it (Perfetto's UI holds a
 * JSON trace in browser memory). M counts the input files' 32-byte records
 * after their headers (a name with its text's records included): the
 * runtime's exit line and `stats` count the same; sizes that cannot be
 * read show as 0. */
static void report(const char *out, const char **in, int nin)
{
    struct stat st;
    long long bytes = stat(out, &st) ? 0 : (long long)st.st_size;
    unsigned long long recs = 0;
    for (int i = 0; i < nin; i++)
        if (!stat(in[i], &st) && st.st_size > (off_t)sizeof(struct nth_trace_file_header))
            recs += (unsigned long long)(st.st_size - (off_t)sizeof(struct nth_trace_file_header)) /
                    sizeof(struct nth_trace_rec);
    fprintf(stderr, "nth-trace: wrote %s (%lld bytes from %llu records)\n", out, bytes, recs);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage_to(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("nth-trace (" PACKAGE_NAME ") " PACKAGE_VERSION "\n");
            return 0;
        }
    if (argc >= 2 && strcmp(argv[1], "convert") && strcmp(argv[1], "stats") && strcmp(argv[1], "merge")) {
        fprintf(stderr, "nth-trace: unknown command '%s' (accepted: convert, stats, merge)\n", argv[1]);
        return usage();
    }
    if (argc < 3)
        return usage();
    const char **in = calloc((size_t)argc, sizeof *in);
    if (!in)
        return 3;
    int rc = run(argc, argv, in);
    free(in);
    return rc;
}
