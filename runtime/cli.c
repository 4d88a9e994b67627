/* SPDX-License-Identifier: MIT */
/* cli.c: the command line. Parses argv, checks what it can before Lua starts (missing files,
 * bad flags: usage errors, exit 2), and runs the job through the bridge (exit 0 or 1). */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bridge.h"
#include "out.h"
#include "weir.h"

/* One entry per command: its usage line(s) and its --help text (each line at most 80 columns;
 * tests/cli/usage.sh checks). `weir --help` prints the overview and every usage. */
enum {
    O_REPLAY = 1,
    O_CHECK_TRIGGERS = 2,
    O_PROGRESS = 4,
    O_STALL = 8,
    O_MEMORY = 16,
    O_JIT = 32,
    O_MANUAL = 64,
    O_ARGS = 128,
};

typedef struct command {
    const char *name;
    const char *usage;
    const char *help;
    int options; /* O_* bits: which options it takes (every command takes -p and --help) */
} command_t;

static const char RUN_USAGE[] =
    "usage: weir run JOB.lua [--parallelism N] [--replay FILE] [--check-triggers]\n"
    "                [--progress] [--stall-warning DURATION] [--max-memory SIZE]\n"
    "                [--jit-verbose] [-- ARGS...]\n";

static const char EXPLAIN_USAGE[] =
    "usage: weir explain JOB.lua [--parallelism N] [--replay FILE]\n";

static const char REPL_USAGE[] =
    "usage: weir repl [JOB.lua] [--manual | --replay FILE] [--parallelism N]\n"
    "                 [--check-triggers] [--stall-warning DURATION]\n"
    "                 [--max-memory SIZE] [--jit-verbose] [-- ARGS...]\n";

#define OPT_PARALLELISM \
    "  -p, --parallelism N\n" \
    "                   override the parallelism the script sets with weir.env{...}\n" \
    "                   (1 to 32768)\n"
#define OPT_REPLAY \
    "  --replay FILE    replace the job's single text source with a replay of FILE on\n" \
    "                   a virtual processing-time clock (format: docs/API.md, Replay)\n"
#define OPT_CHECK_TRIGGERS \
    "  --check-triggers warn (once per trigger) when a trigger registers an\n" \
    "                   event-time timer already behind the watermark, or leaves\n" \
    "                   state after clear()\n"
#define OPT_STALL \
    "  --stall-warning DURATION\n" \
    "                   warn once per stall when a window operator's watermark has\n" \
    "                   not moved for DURATION of processing time while records\n" \
    "                   arrive (default 30s; 0 turns it off)\n"
#define OPT_MEMORY \
    "  --max-memory SIZE\n" \
    "                   fail the job (close() runs, output is flushed, exit 1) when\n" \
    "                   the memory weir holds (its C state and the Lua heap) passes\n" \
    "                   SIZE: 512m, 2g, ...; overrides max_memory in weir.env{...}\n"
#define OPT_JIT \
    "  --jit-verbose    LuaJIT's trace log on stderr (jit.v): which loops compile,\n" \
    "                   and where and why a trace aborts\n"
#define OPT_ARGS "  -- ARGS...       everything after -- reaches the job as weir.args\n"
#define OPT_HELP "  -h, --help       print this help\n"

static const char RUN_HELP[] =
    "Runs the job until every source ends, or until SIGINT/SIGTERM: the sources stop,\n"
    "what is in flight drains, the sinks flush, exit 0. A second signal exits at once\n"
    "with status 1, writing out the output already made and naming the operator that\n"
    "ran.\n"
    "\n"
    "Options:\n" OPT_PARALLELISM OPT_REPLAY OPT_CHECK_TRIGGERS
    "  --progress       a status line on stderr at most once a second: records in and\n"
    "                   out, events/s, the lowest watermark and how far it is behind\n"
    "                   the clock, open windows, late drops, the memory weir holds\n" OPT_STALL
        OPT_MEMORY OPT_JIT OPT_ARGS OPT_HELP
    "\n"
    "While the job runs, kill -USR1 <pid> prints its full status on stderr: every\n"
    "operator subtask's input channels (watermark, idle or active), the valve output,\n"
    "and the pending windows with the watermark each waits for.\n"
    "\n"
    "The job's folder is on package.path (require finds modules next to the job) and\n"
    "weir.script_dir names it.\n";

static const char EXPLAIN_HELP[] =
    "Prints the job graph without running it: operators with their script lines,\n"
    "parallelism, partitioning (forward, rebalance, hash), chaining, and which window\n"
    "operator each window runs on.\n"
    "\n"
    "Options:\n" OPT_PARALLELISM OPT_REPLAY OPT_HELP;

static const char REPL_HELP[] =
    "The REPL: Lua with weir loaded; with JOB.lua, the job is built and :start runs\n"
    "it while you type. :help lists the REPL's commands. `weir` alone on a terminal\n"
    "starts it too; `weir repl < commands.txt` runs a session from a file.\n"
    "\n"
    "Options:\n"
    "  --manual         replace the job's single text source with the manual source\n"
    "                   (:push, :feed)\n" OPT_REPLAY OPT_PARALLELISM OPT_CHECK_TRIGGERS OPT_STALL
        OPT_MEMORY OPT_JIT OPT_ARGS OPT_HELP;

static const command_t COMMANDS[] = {
    {"run", RUN_USAGE, RUN_HELP,
     O_REPLAY | O_CHECK_TRIGGERS | O_PROGRESS | O_STALL | O_MEMORY | O_JIT | O_ARGS},
    {"explain", EXPLAIN_USAGE, EXPLAIN_HELP, O_REPLAY},
    {"repl", REPL_USAGE, REPL_HELP,
     O_REPLAY | O_CHECK_TRIGGERS | O_STALL | O_MEMORY | O_JIT | O_MANUAL | O_ARGS},
};
enum { N_COMMANDS = sizeof COMMANDS / sizeof COMMANDS[0] };

static const char HELP[] =
    "weir: a stream-processing runtime that runs Lua pipelines with Apache Flink's\n"
    "event-time model.\n"
    "\n"
    "Commands:\n"
    "  run JOB.lua      run the job until every source ends, or until SIGINT/SIGTERM\n"
    "  explain JOB.lua  print the job graph: operators, parallelism, partitioning,\n"
    "                   chaining\n"
    "  repl [JOB.lua]   the REPL: Lua with weir loaded, the job running while you\n"
    "                   type\n"
    "  help [COMMAND]   this help, or a command's (as weir COMMAND --help)\n"
    "\n"
    "  -V, --version    print the version\n"
    "  -h, --help       print this help\n"
    "\n"
    "Exit status: 0 success, 1 the job failed, 2 usage error.\n"
    "Errors go to stderr as \"weir: <where>: <what>\".\n"
    "\n";

static const char TAIL[] = "       weir help [COMMAND] | --help | --version\n";

static const command_t *find_command(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++) {
        if (strcmp(COMMANDS[i].name, name) == 0) {
            return &COMMANDS[i];
        }
    }
    return NULL;
}

/* Every command's usage, each "usage: " after the first written as spaces. */
static void put_usages(FILE *f)
{
    for (int i = 0; i < N_COMMANDS; i++) {
        const char *u = COMMANDS[i].usage;
        if (i > 0) {
            fputs("      ", f);
            u += 6; /* "usage:" -> aligned under the first */
        }
        fputs(u, f);
    }
    fputs(TAIL, f);
}

static int command_help(const command_t *c)
{
    fputs(c->usage, stdout);
    fputs("\n", stdout);
    fputs(c->help, stdout);
    return 0;
}

/* A usage error: the message, then the usage of cmd (every usage when cmd is NULL). */
static int usage_error(const command_t *cmd, const char *fmt, const char *arg)
{
    fputs("weir: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n", stderr);
    if (cmd) {
        fputs(cmd->usage, stderr);
        fprintf(stderr, "(weir %s --help describes the options)\n", cmd->name);
    } else {
        put_usages(stderr);
    }
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

static int check_readable(const command_t *cmd, const char *what, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "weir: %s %s: %s\n", what, path, strerror(errno));
        fputs(cmd->usage, stderr);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "weir: %s %s: is a directory\n", what, path);
        fputs(cmd->usage, stderr);
        return -1;
    }
    return 0;
}

/* Whether a ends in ".lua": what a job file is called. */
static int looks_like_job(const char *a)
{
    size_t n = strlen(a);
    return n > 4 && strcmp(a + n - 4, ".lua") == 0;
}

/* The option a (that cmd takes when its bit is in cmd->options), or a usage error. */
static int takes(const command_t *cmd, int bit, const char *a)
{
    if (cmd->options & bit) {
        return 1;
    }
    fprintf(stderr, "weir: %s: %s is not an option of weir %s\n", cmd->name, a, cmd->name);
    fputs(cmd->usage, stderr);
    return 0;
}

/* The absolute path of the folder holding script, in dir (PATH_MAX bytes); NULL when it cannot
 * be resolved (weir.script_dir is then nil). */
static const char *script_dir(const char *script, char *dir)
{
    char path[PATH_MAX];
    if (!realpath(script, path)) {
        return NULL;
    }
    char *slash = strrchr(path, '/');
    if (slash == path) {
        slash[1] = '\0'; /* a job in / */
    } else if (slash) {
        *slash = '\0';
    }
    memcpy(dir, path, strlen(path) + 1);
    return dir;
}

static int run_command(const command_t *cmd, int argc, char **argv)
{
    const char *mode = cmd->name;
    wr_bridge_job_t job = {.mode = mode, .stderr_tty = isatty(2), .interactive = isatty(0)};
    int repl = strcmp(mode, "repl") == 0;
    int i = 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return command_help(cmd); /* wherever it stands before "--" */
        }
    }
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            if (!takes(cmd, O_ARGS, a)) {
                return 2;
            }
            i++;
            break;
        } else if (strcmp(a, "--parallelism") == 0 || strcmp(a, "-p") == 0) {
            if (i + 1 >= argc || parse_positive(argv[i + 1], &job.parallelism) != 0) {
                return usage_error(cmd, "%s needs an integer from 1 to 32768", a);
            }
            i++;
        } else if (strncmp(a, "--parallelism=", 14) == 0) {
            if (parse_positive(a + 14, &job.parallelism) != 0) {
                return usage_error(cmd, "--parallelism needs an integer from 1 to 32768, got %s",
                                   a + 14);
            }
        } else if (strcmp(a, "--replay") == 0 || strncmp(a, "--replay=", 9) == 0) {
            if (!takes(cmd, O_REPLAY, "--replay")) {
                return 2;
            }
            if (a[8] == '=') {
                job.replay = a + 9;
            } else if (i + 1 >= argc) {
                return usage_error(cmd, "%s needs a FILE", a);
            } else {
                job.replay = argv[++i];
            }
        } else if (strcmp(a, "--check-triggers") == 0) {
            if (!takes(cmd, O_CHECK_TRIGGERS, a)) {
                return 2;
            }
            job.check_triggers = 1;
        } else if (strcmp(a, "--manual") == 0) {
            if (!takes(cmd, O_MANUAL, a)) {
                return 2;
            }
            job.manual = 1;
        } else if (strcmp(a, "--jit-verbose") == 0) {
            if (!takes(cmd, O_JIT, a)) {
                return 2;
            }
            job.jit_verbose = 1;
        } else if (strcmp(a, "--progress") == 0) {
            if (!takes(cmd, O_PROGRESS, a)) {
                return 2;
            }
            job.progress = 1;
        } else if (strcmp(a, "--stall-warning") == 0 || strncmp(a, "--stall-warning=", 16) == 0) {
            if (!takes(cmd, O_STALL, "--stall-warning")) {
                return 2;
            }
            if (a[15] == '=') {
                job.stall_warning = a + 16;
            } else if (i + 1 >= argc) {
                return usage_error(cmd, "%s needs a DURATION (e.g. 30s; 0 = off)", a);
            } else {
                job.stall_warning = argv[++i];
            }
        } else if (strcmp(a, "--max-memory") == 0 || strncmp(a, "--max-memory=", 13) == 0) {
            if (!takes(cmd, O_MEMORY, "--max-memory")) {
                return 2;
            }
            const char *size = a[12] == '=' ? a + 13 : i + 1 < argc ? argv[++i] : NULL;
            if (!size || weir_mem_parse_size(size) < 0) {
                return usage_error(cmd,
                                   "--max-memory needs a SIZE: bytes, or with k, m, g or t "
                                   "(e.g. 512m, 2g), got %s",
                                   size ? size : "nothing");
            }
            job.max_memory = size;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error(cmd, "unknown option %s", a);
        } else if (!job.script) {
            job.script = a;
        } else {
            return usage_error(cmd, "unexpected argument %s (job arguments go after --)", a);
        }
    }
    if (job.manual && job.replay) {
        return usage_error(cmd, "--manual and --replay both replace the text source: choose "
                                "one%s", "");
    }
    if (!job.script && !repl) {
        return usage_error(cmd, "%s: missing JOB.lua", mode);
    }
    if (job.script && check_readable(cmd, "job", job.script) != 0) {
        return 2;
    }
    if (job.replay && check_readable(cmd, "replay file", job.replay) != 0) {
        return 2;
    }
    job.argc = argc - i;
    job.argv = argv + i;
    char cwd[PATH_MAX];
    char dir[PATH_MAX];
    job.cwd = getcwd(cwd, sizeof cwd);
    job.script_dir = job.script ? script_dir(job.script, dir) : job.cwd;
    int status = wr_bridge_run(&job);
    wr_out_release();
    return status;
}

int wr_cli_main(int argc, char **argv)
{
    wr_out_init();
    if (argc < 2) {
        if (isatty(0) && isatty(1)) {
            return run_command(find_command("repl"), 0, argv + 1); /* `weir` on a terminal */
        }
        put_usages(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            const command_t *c = find_command(argv[2]);
            if (!c) {
                return usage_error(NULL, "help: unknown command %s", argv[2]);
            }
            return command_help(c);
        }
        fputs(HELP, stdout);
        put_usages(stdout);
        fputs("\nweir COMMAND --help describes a command's options.\n", stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0 ||
        strcmp(name, "version") == 0) {
        printf("weir %s\n", weir_version());
        return 0;
    }
    const command_t *cmd = find_command(name);
    if (cmd) {
        return run_command(cmd, argc - 2, argv + 2);
    }
    if (looks_like_job(name)) {
        fprintf(stderr, "weir: unknown command %s (to run the job: weir run %s)\n", name, name);
        put_usages(stderr);
        return 2;
    }
    if (name[0] == '-') {
        return usage_error(NULL, "unknown option %s (options go after the command, e.g. "
                                 "weir run JOB.lua --progress)", name);
    }
    return usage_error(NULL, "unknown command %s", name);
}
