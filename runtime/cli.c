/* SPDX-License-Identifier: MIT */
/* cli.c: the command line. Parses argv, checks what it can before Lua starts (missing files,
 * bad flags: usage errors, exit 2), and runs the job through the bridge (exit 0 or 1). */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bridge.h"
#include "out.h"
#include "weir.h"

static const char USAGE[] =
    "usage: weir run JOB.lua [--parallelism N] [--replay FILE] [--check-triggers]\n"
    "                [--progress] [--stall-warning DURATION] [--max-memory SIZE]\n"
    "                [--jit-verbose] [--param NAME=VALUE]...\n"
    "                [--checkpoint-dir DIR [--checkpoint-interval DURATION]]\n"
    "                [--restore PATH] [--fresh] [--allow-non-restored-state] [-- ARGS...]\n"
    "       weir explain JOB.lua [--parallelism N] [--replay FILE] [--param NAME=VALUE]...\n"
    "       weir repl [JOB.lua] [--manual] [--parallelism N] [--param NAME=VALUE]...\n"
    "                [-- ARGS...]\n"
    "       weir sweep JOB.lua --replay FILE --param NAME=V1,V2,... [--param ...]\n"
    "                [--parallelism N] [-- ARGS...]\n"
    "       weir timeline JOB.lua [--replay FILE] -o FILE.svg [--data FILE]\n"
    "                [--parallelism N] [--param NAME=VALUE]... [-- ARGS...]\n"
    "       weir checkpoint list DIR | inspect PATH | verify PATH\n"
    "       weir --version | --help\n";

static const char HELP[] =
    "weir: a stream-processing runtime that runs Lua pipelines with Apache Flink's\n"
    "event-time model.\n"
    "\n"
    "Commands:\n"
    "  run JOB.lua      run the job until every source ends, or until SIGINT/SIGTERM\n"
    "                   (sources stop, what is in flight drains, sinks flush, exit 0;\n"
    "                   a second signal exits at once with status 1, writing out the\n"
    "                   output already made and naming the operator that ran)\n"
    "  explain JOB.lua  print the job graph: operators, parallelism, partitioning, chaining\n"
    "  checkpoint list DIR | inspect PATH | verify PATH\n"
    "                   the checkpoints in DIR; what one holds (sections, sources, sizes);\n"
    "                   check every checksum (exit 0 valid, 1 corrupt, naming the file and\n"
    "                   the section)\n"
    "  repl [JOB.lua]   the REPL: Lua with weir loaded, the job running while you type;\n"
    "                   :help lists its commands. --manual replaces the job's text source\n"
    "                   with the manual one (:push, :feed). `weir` alone on a terminal\n"
    "                   starts it too; `weir repl < commands.txt` runs a session from a file\n"
    "  sweep JOB.lua    what-if: run the job on the replay once per combination of the\n"
    "                   --param lists (each in a child process) and print a table: records\n"
    "                   in, windows fired, late fires, late records dropped, output lines\n"
    "                   and how many differ from the first setting, the processing time of\n"
    "                   each window's first output, and the differing lines\n"
    "  timeline JOB.lua run the job (its output goes to stdout as with run) and draw what\n"
    "                   happened as an SVG picture (-o FILE.svg): per key the records at\n"
    "                   their event time, the windows and their fires (on time, late,\n"
    "                   purged), the watermark over processing time, idle inputs;\n"
    "                   --data FILE writes the same as a Lua table (what sweep reads)\n"
    "\n"
    "Options for run and explain (sweep and timeline take all but --progress,\n"
    "--jit-verbose and --check-triggers):\n"
    "  --parallelism N  override the parallelism the script sets with weir.env{...}\n"
    "  --replay FILE    replace the job's single text source with a replay of FILE on a\n"
    "                   virtual processing-time clock (format: docs/API.md, Replay)\n"
    "  --check-triggers warn (once per trigger) when a trigger registers an event-time\n"
    "                   timer already behind the watermark, or leaves state after clear()\n"
    "  --progress       a status line on stderr at most once a second: records in and out,\n"
    "                   events/s, the lowest watermark and its lag, open windows, late drops,\n"
    "                   the memory weir holds\n"
    "  --stall-warning DURATION\n"
    "                   warn once per stall when a window operator's watermark has not moved\n"
    "                   for DURATION of processing time while records arrive (default 30s;\n"
    "                   0 turns it off)\n"
    "  --max-memory SIZE\n"
    "                   fail the job (close() runs, output is flushed, exit 1) when the memory\n"
    "                   weir holds (its C state and the Lua heap) passes SIZE: 512m, 2g, ...;\n"
    "                   overrides max_memory in weir.env{...}\n"
    "  --jit-verbose    LuaJIT's trace log on stderr (jit.v): which loops compile, and\n"
    "                   where and why a trace aborts (the performance check)\n"

    "  --param NAME=VALUE\n"
    "                   a job parameter, read with weir.param(NAME, default) (repeatable;\n"
    "                   also for explain, repl, timeline; sweep takes lists); one the job\n"
    "                   never reads is an error (in the REPL a warning)\n"
    "  --checkpoint-dir DIR\n"
    "                   take a checkpoint every --checkpoint-interval (default 10s) between\n"
    "                   batches into DIR (the last 3 kept; a LOCK keeps out a second weir);\n"
    "                   run again with the same DIR to restore the newest valid one. The\n"
    "                   first SIGINT/SIGTERM writes a savepoint and exits 0; a job that ends\n"
    "                   by end of input leaves a final checkpoint, and a rerun says so and\n"
    "                   exits 0 (docs/API.md, Checkpoints: what is covered so far)\n"
    "  --checkpoint-interval DURATION\n"
    "                   time between checkpoints (processing time; 0: after every batch)\n"
    "  --restore PATH   restore from this checkpoint or savepoint instead of DIR's newest\n"
    "  --fresh          start from the beginning even when DIR holds checkpoints\n"
    "  --allow-non-restored-state\n"
    "                   restore although the checkpoint holds state of operators the job\n"
    "                   no longer has (that state is dropped)\n"
    "  -- ARGS...       everything after -- reaches the job as weir.args\n"
    "\n"
    "  --version        print the version\n"
    "  --help           print this help\n"
    "\n"
    "While a job runs, kill -USR1 <pid> prints its full status on stderr: every operator\n"
    "subtask's input channels (watermark, idle or active), the valve output, and the\n"
    "pending windows with the watermark each waits for.\n"
    "\n"
    "Exit status: 0 success, 1 the job failed, 2 usage error.\n"
    "Errors go to stderr as \"weir: <where>: <what>\".\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("weir: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n", stderr);
    fputs(USAGE, stderr);
    return 2;
}

static int parse_positive(const char *s, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !end || *end || v < 1 || v > 32768) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int check_readable(const char *what, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "weir: %s %s: %s\n", what, path, strerror(errno));
        fputs(USAGE, stderr);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "weir: %s %s: is a directory\n", what, path);
        fputs(USAGE, stderr);
        return -1;
    }
    return 0;
}

/* --param NAME=VALUE: NAME is a Lua-style name (weir.param checks the value). */
static int check_param(const char *p)
{
    const char *eq = strchr(p, '=');
    if (!eq || eq == p || (p[0] >= '0' && p[0] <= '9')) {
        return -1;
    }
    for (const char *c = p; c < eq; c++) {
        if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9'))) {
            return -1;
        }
    }
    return 0;
}

static int run_command(const char *mode, int argc, char **argv)
{
    wr_bridge_job_t job = {.mode = mode, .stderr_tty = isatty(2), .interactive = isatty(0)};
    int repl = strcmp(mode, "repl") == 0;
    int timeline = strcmp(mode, "timeline") == 0;
    int sweep = strcmp(mode, "sweep") == 0;
    static const char *params[64];
    job.params = params;
    int i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "--param") == 0 || strncmp(a, "--param=", 8) == 0) {
            const char *p = a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : NULL;
            if (!p || check_param(p) != 0) {
                return usage_error(sweep ? "--param needs NAME=V1,V2,... (e.g. "
                                           "allowed_lateness=0,1s,5s), got %s"
                                         : "--param needs NAME=VALUE (e.g. out_of_orderness=2s), "
                                           "got %s",
                                   p ? p : "nothing");
            }
            if (job.nparams == (int)(sizeof params / sizeof params[0])) {
                return usage_error("at most 64 --param options%s", "");
            }
            params[job.nparams++] = p;
        } else if (timeline && (strcmp(a, "-o") == 0 || strcmp(a, "--data") == 0)) {
            if (i + 1 >= argc) {
                return usage_error(a[1] == 'o' ? "-o needs a FILE.svg%s" : "--data needs a FILE%s",
                                   "");
            }
            if (a[1] == 'o') {
                job.output = argv[++i];
            } else {
                job.data = argv[++i];
            }
        } else if (strcmp(a, "--parallelism") == 0 || strcmp(a, "-p") == 0) {
            if (i + 1 >= argc || parse_positive(argv[i + 1], &job.parallelism) != 0) {
                return usage_error("--parallelism needs an integer from 1 to 32768%s", "");
            }
            i++;
        } else if (strncmp(a, "--parallelism=", 14) == 0) {
            if (parse_positive(a + 14, &job.parallelism) != 0) {
                return usage_error("--parallelism needs an integer from 1 to 32768%s", "");
            }
        } else if (strcmp(a, "--replay") == 0) {
            if (i + 1 >= argc) {
                return usage_error("--replay needs a FILE%s", "");
            }
            job.replay = argv[++i];
        } else if (strncmp(a, "--replay=", 9) == 0) {
            job.replay = a + 9;
        } else if (strcmp(a, "--check-triggers") == 0) {
            job.check_triggers = 1;
        } else if (repl && strcmp(a, "--manual") == 0) {
            job.manual = 1;
        } else if (strcmp(a, "--jit-verbose") == 0) {
            job.jit_verbose = 1;
        } else if (strcmp(a, "--progress") == 0) {
            job.progress = 1;
        } else if (strcmp(a, "--stall-warning") == 0) {
            if (i + 1 >= argc) {
                return usage_error("--stall-warning needs a DURATION (e.g. 30s; 0 = off)%s", "");
            }
            job.stall_warning = argv[++i];
        } else if (strncmp(a, "--stall-warning=", 16) == 0) {
            job.stall_warning = a + 16;
        } else if (strcmp(a, "--max-memory") == 0 || strncmp(a, "--max-memory=", 13) == 0) {
            const char *size = a[12] == '=' ? a + 13 : i + 1 < argc ? argv[++i] : NULL;
            if (!size || weir_mem_parse_size(size) < 0) {
                return usage_error("--max-memory needs a SIZE: bytes, or with k, m, g or t "
                                   "(e.g. 512m, 2g), got %s",
                                   size ? size : "nothing");
            }
            job.max_memory = size;
        } else if (!repl && strcmp(a, "--checkpoint-dir") == 0) {
            if (i + 1 >= argc) {
                return usage_error("--checkpoint-dir needs a DIR%s", "");
            }
            job.checkpoint_dir = argv[++i];
        } else if (!repl && strcmp(a, "--checkpoint-interval") == 0) {
            if (i + 1 >= argc) {
                return usage_error("--checkpoint-interval needs a DURATION (e.g. 10s)%s", "");
            }
            job.checkpoint_interval = argv[++i];
        } else if (!repl && strcmp(a, "--restore") == 0) {
            if (i + 1 >= argc) {
                return usage_error("--restore needs a PATH (a checkpoint or savepoint)%s", "");
            }
            job.restore = argv[++i];
        } else if (!repl && strcmp(a, "--fresh") == 0) {
            job.fresh = 1;
        } else if (!repl && strcmp(a, "--allow-non-restored-state") == 0) {
            job.allow_non_restored_state = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option %s", a);
        } else if (!job.script) {
            job.script = a;
        } else {
            return usage_error("unexpected argument %s (job arguments go after --)", a);
        }
    }
    if (!job.script && !repl) {
        return usage_error("%s: missing JOB.lua", mode);
    }
    if (job.script && check_readable("job", job.script) != 0) {
        return 2;
    }
    if (job.replay && check_readable("replay file", job.replay) != 0) {
        return 2;
    }
    if (job.checkpoint_interval && !job.checkpoint_dir) {
        return usage_error("--checkpoint-interval needs --checkpoint-dir%s", "");
    }
    if (job.fresh && job.restore) {
        return usage_error("--fresh and --restore exclude each other%s", "");
    }
    if ((job.checkpoint_dir || job.restore || job.fresh || job.allow_non_restored_state)
        && strcmp(mode, "run") != 0) {
        return usage_error("%s: checkpoints are options of weir run", mode);
    }
    if ((sweep || timeline) && (job.progress || job.jit_verbose || job.check_triggers)) {
        return usage_error("%s takes none of --progress, --jit-verbose, --check-triggers", mode);
    }
    if (sweep && !job.replay) {
        return usage_error("sweep: needs --replay FILE (every setting replays the same input)%s",
                           "");
    }
    if (sweep && job.nparams == 0) {
        return usage_error("sweep: needs at least one --param NAME=V1,V2,...%s", "");
    }
    if (timeline && !job.output && !job.data) {
        return usage_error("timeline: needs -o FILE.svg (or --data FILE)%s", "");
    }
    if (strcmp(mode, "run") == 0 || repl || sweep || timeline) {
        job.argc = argc - i;
        job.argv = argv + i;
    } else if (i < argc) {
        return usage_error("%s takes no job arguments", mode);
    }
    int status = wr_bridge_run(&job);
    wr_out_release();
    return status;
}

/* weir checkpoint list DIR | inspect PATH | verify PATH: the work is weir.checkpoint_cli's. */
static int checkpoint_command(int argc, char **argv)
{
    static const char *const subs[] = {"list", "inspect", "verify"};
    int known = 0;
    for (size_t i = 0; argc >= 1 && i < sizeof subs / sizeof subs[0]; i++) {
        known |= strcmp(argv[0], subs[i]) == 0;
    }
    if (!known) {
        return usage_error("checkpoint: expected list DIR, inspect PATH or verify PATH%s", "");
    }
    if (argc != 2) {
        return usage_error("checkpoint %s: expected one PATH", argv[0]);
    }
    wr_bridge_job_t job = {.mode = "checkpoint", .argc = 2, .argv = argv};
    int status = wr_bridge_run(&job);
    wr_out_release();
    return status;
}

int wr_cli_main(int argc, char **argv)
{
    wr_out_init();
    if (argc < 2) {
        if (isatty(0) && isatty(1)) {
            return run_command("repl", 0, argv + 1); /* plain `weir` on a terminal */
        }
        fputs(USAGE, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(HELP, stdout);
        fputs("\n", stdout);
        fputs(USAGE, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("weir %s\n", weir_version());
        return 0;
    }
    if (strcmp(cmd, "run") == 0 || strcmp(cmd, "explain") == 0) {
        return run_command(cmd, argc - 2, argv + 2);
    }
    if (strcmp(cmd, "repl") == 0) {
        return run_command("repl", argc - 2, argv + 2);
    }
    if (strcmp(cmd, "checkpoint") == 0) {
        return checkpoint_command(argc - 2, argv + 2);
    }
    if (strcmp(cmd, "sweep") == 0 || strcmp(cmd, "timeline") == 0) {
        for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                fputs(HELP, stdout);
                fputs("\n", stdout);
                fputs(USAGE, stdout);
                return 0;
            }
        }
        return run_command(cmd, argc - 2, argv + 2);
    }
    return usage_error("unknown command %s", cmd);
}
