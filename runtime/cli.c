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
#include "kafka_mock.h"
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
    O_PARAM = 256,
    O_OUTPUT = 512, /* -o FILE.svg, --data FILE */
    O_CKPT = 1024,  /* --checkpoint-dir, --checkpoint-interval, --restore, --fresh, ... */
    O_GROUP = 2048, /* --group, --instance-id (scale-out, issue 19) */
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
    "                [--jit-verbose] [--param NAME=VALUE]...\n"
    "                [--checkpoint-dir DIR [--checkpoint-interval DURATION]\n"
    "                [--input-log]] [--restore PATH] [--fresh]\n"
    "                [--allow-non-restored-state] [--verify-checkpoints]\n"
    "                [--group NAME [--instance-id ID] [--checkpoint-interval D]]\n"
    "                [-- ARGS...]\n";

static const char EXPLAIN_USAGE[] =
    "usage: weir explain JOB.lua [--parallelism N] [--replay FILE]\n"
    "                    [--param NAME=VALUE]...\n";

static const char REPL_USAGE[] =
    "usage: weir repl [JOB.lua] [--manual | --replay FILE] [--parallelism N]\n"
    "                 [--check-triggers] [--stall-warning DURATION]\n"
    "                 [--max-memory SIZE] [--jit-verbose] [--param NAME=VALUE]...\n"
    "                 [-- ARGS...]\n";

static const char SWEEP_USAGE[] =
    "usage: weir sweep JOB.lua --replay FILE --param NAME=V1,V2,... [--param ...]\n"
    "                  [--parallelism N] [--stall-warning DURATION]\n"
    "                  [--max-memory SIZE] [-- ARGS...]\n";

static const char TIMELINE_USAGE[] =
    "usage: weir timeline JOB.lua [--replay FILE] -o FILE.svg [--data FILE]\n"
    "                     [--parallelism N] [--param NAME=VALUE]...\n"
    "                     [--stall-warning DURATION] [--max-memory SIZE] [-- ARGS...]\n";

static const char CHECKPOINT_USAGE[] =
    "usage: weir checkpoint list DIR | inspect PATH | verify PATH\n";

static const char KAFKA_MOCK_USAGE[] =
    "usage: weir kafka-mock [--brokers N] [--topic NAME:PARTITIONS]...\n";

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
#define OPT_PARAM \
    "  --param NAME=VALUE\n" \
    "                   a job parameter, read with weir.param(NAME, default)\n" \
    "                   (repeatable); one the job never reads is an error (in the\n" \
    "                   REPL a warning)\n"
#define OPT_CKPT \
    "  --checkpoint-dir DIR\n" \
    "                   take a checkpoint every --checkpoint-interval (default 10s)\n" \
    "                   between batches into DIR (the last 3 kept; a LOCK keeps out a\n" \
    "                   second weir); run again with the same DIR to restore the\n" \
    "                   newest valid one. The first SIGINT/SIGTERM then writes a\n" \
    "                   savepoint and exits 0; a job that ends by end of input\n" \
    "                   leaves a final checkpoint, and a rerun says so and exits 0\n" \
    "                   (docs/API.md, Checkpoints)\n" \
    "  --checkpoint-interval DURATION\n" \
    "                   time between checkpoints (processing time; 0: every batch)\n" \
    "  --restore PATH   restore from this checkpoint or savepoint instead of DIR's\n" \
    "                   newest\n" \
    "  --fresh          start from the beginning even when DIR holds checkpoints\n" \
    "  --allow-non-restored-state\n" \
    "                   restore although the checkpoint holds state of operators the\n" \
    "                   job no longer has (that state is dropped)\n" \
    "  --input-log      log what socket and stdin (pipe) sources read into\n" \
    "                   DIR/input-UID.log, so a restore replays what they had read\n" \
    "                   after the checkpoint instead of losing it\n" \
    "  --verify-checkpoints\n" \
    "                   after every batch: snapshot the job, encode, decode, throw\n" \
    "                   the operators' state away and restore it (checks that its\n" \
    "                   state and snapshot_state/restore_state survive a restore:\n" \
    "                   the output must not change; slow)\n"

#define OPT_GROUP \
    "  --group NAME     share the job with the weir processes run with the same NAME:\n" \
    "                   the Kafka source joins consumer group NAME (cooperative-\n" \
    "                   sticky) and reads the partitions the group assigns this\n" \
    "                   process; a partition's position, watermark generator and\n" \
    "                   keyed state move with it, snapshotted into the topic\n" \
    "                   NAME-state every --checkpoint-interval (docs/API.md,\n" \
    "                   Scale-out)\n" \
    "  --instance-id ID the member's group.instance.id (static membership: on a\n" \
    "                   broker with KIP-345 a restart within the session timeout\n" \
    "                   keeps its partitions); needs --group\n"

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
        OPT_MEMORY OPT_JIT OPT_PARAM OPT_CKPT OPT_GROUP OPT_ARGS OPT_HELP
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
    "Options:\n" OPT_PARALLELISM OPT_REPLAY OPT_PARAM OPT_HELP;

static const char REPL_HELP[] =
    "The REPL: Lua with weir loaded; with JOB.lua, the job is built and :start runs\n"
    "it while you type. :help lists the REPL's commands. `weir` alone on a terminal\n"
    "starts it too; `weir repl < commands.txt` runs a session from a file.\n"
    "\n"
    "Options:\n"
    "  --manual         replace the job's single text source with the manual source\n"
    "                   (:push, :feed)\n" OPT_REPLAY OPT_PARALLELISM OPT_CHECK_TRIGGERS OPT_STALL
        OPT_MEMORY OPT_JIT OPT_PARAM OPT_ARGS OPT_HELP;

static const char SWEEP_HELP[] =
    "What-if: runs the job on the replay once per combination of the --param lists\n"
    "(each in a child process) and prints a table: records in, windows fired, late\n"
    "fires, late records dropped, output lines and how many differ from the first\n"
    "setting, the processing time of each window's first output, and the differing\n"
    "lines (docs/API.md, Parameters and sweeps).\n"
    "\n"
    "Options:\n" OPT_REPLAY
    "  --param NAME=V1,V2,...\n"
    "                   the values of one parameter to try (repeatable: every\n"
    "                   combination runs; at most 100)\n" OPT_PARALLELISM OPT_STALL OPT_MEMORY
        OPT_ARGS OPT_HELP;

static const char TIMELINE_HELP[] =
    "Runs the job (its output goes to stdout as with run) and draws what happened as\n"
    "an SVG picture: per key the records at their event time, the windows and their\n"
    "fires (on time, late, purged), the watermark over processing time, idle inputs\n"
    "(docs/API.md, Timeline).\n"
    "\n"
    "Options:\n"
    "  -o FILE.svg      where the picture goes\n"
    "  --data FILE      write the same as a Lua table (what sweep reads)\n" OPT_REPLAY
        OPT_PARALLELISM OPT_PARAM OPT_STALL OPT_MEMORY OPT_ARGS OPT_HELP;

static const char CHECKPOINT_HELP[] =
    "  list DIR         the checkpoints and savepoints in DIR, newest last\n"
    "  inspect PATH     what one holds: sections, operators, sources, sizes\n"
    "  verify PATH      check every checksum: exit 0 valid, 1 corrupt, naming the\n"
    "                   file and the section\n"
    "(docs/API.md, Checkpoints)\n";

static const char KAFKA_MOCK_HELP[] =
    "Starts librdkafka's mock Kafka cluster on 127.0.0.1 (a real Kafka-protocol\n"
    "endpoint: kcat and any client can produce and consume), prints\n"
    "bootstrap.servers=HOST:PORT,... as its first line of stdout, and serves until\n"
    "SIGINT/SIGTERM (exit 0). Its data lives in memory only. Lines on stdin are\n"
    "commands, each answered with ok or error: ... on stdout: down ID and up ID set\n"
    "a broker down or up again, topic NAME:PARTITIONS creates a topic\n"
    "(docs/API.md, Kafka).\n"
    "\n"
    "Options:\n"
    "  --brokers N      how many brokers (1 to 16, default 1)\n"
    "  --topic NAME:PARTITIONS\n"
    "                   create topic NAME with PARTITIONS partitions (repeatable);\n"
    "                   a topic a client asks for that does not exist is created\n"
    "                   with 1 partition\n" OPT_HELP;

static const command_t COMMANDS[] = {
    {"run", RUN_USAGE, RUN_HELP,
     O_REPLAY | O_CHECK_TRIGGERS | O_PROGRESS | O_STALL | O_MEMORY | O_JIT | O_ARGS | O_PARAM
         | O_CKPT | O_GROUP},
    {"explain", EXPLAIN_USAGE, EXPLAIN_HELP, O_REPLAY | O_PARAM},
    {"repl", REPL_USAGE, REPL_HELP,
     O_REPLAY | O_CHECK_TRIGGERS | O_STALL | O_MEMORY | O_JIT | O_MANUAL | O_ARGS | O_PARAM},
    {"sweep", SWEEP_USAGE, SWEEP_HELP, O_REPLAY | O_STALL | O_MEMORY | O_ARGS | O_PARAM},
    {"timeline", TIMELINE_USAGE, TIMELINE_HELP,
     O_REPLAY | O_STALL | O_MEMORY | O_ARGS | O_PARAM | O_OUTPUT},
    {"checkpoint", CHECKPOINT_USAGE, CHECKPOINT_HELP, 0},
    {"kafka-mock", KAFKA_MOCK_USAGE, KAFKA_MOCK_HELP, 0},
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
    "  sweep JOB.lua    what-if: the job once per combination of --param lists, and\n"
    "                   a table of what each setting changed\n"
    "  timeline JOB.lua run the job and draw what happened as an SVG picture\n"
    "  checkpoint list DIR | inspect PATH | verify PATH\n"
    "                   the checkpoints in DIR; what one holds; check its checksums\n"
    "  kafka-mock       a mock Kafka cluster on 127.0.0.1 to try jobs against\n"
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
    int sweep = strcmp(mode, "sweep") == 0;
    int timeline = strcmp(mode, "timeline") == 0;
    static const char *params[64];
    job.params = params;
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
        } else if (strcmp(a, "--param") == 0 || strncmp(a, "--param=", 8) == 0) {
            if (!takes(cmd, O_PARAM, "--param")) {
                return 2;
            }
            const char *p = a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : NULL;
            if (!p || check_param(p) != 0) {
                return usage_error(cmd,
                                   sweep ? "--param needs NAME=V1,V2,... (e.g. "
                                           "allowed_lateness=0,1s,5s), got %s"
                                         : "--param needs NAME=VALUE (e.g. out_of_orderness=2s), "
                                           "got %s",
                                   p ? p : "nothing");
            }
            if (job.nparams == (int)(sizeof params / sizeof params[0])) {
                return usage_error(cmd, "at most 64 --param options%s", "");
            }
            params[job.nparams++] = p;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--data") == 0) {
            if (!takes(cmd, O_OUTPUT, a)) {
                return 2;
            }
            if (i + 1 >= argc) {
                return usage_error(cmd, a[1] == 'o' ? "%s needs a FILE.svg" : "%s needs a FILE", a);
            }
            if (a[1] == 'o') {
                job.output = argv[++i];
            } else {
                job.data = argv[++i];
            }
        } else if (strcmp(a, "--checkpoint-dir") == 0 || strcmp(a, "--checkpoint-interval") == 0
                   || strcmp(a, "--restore") == 0) {
            if (!takes(cmd, O_CKPT, a)) {
                return 2;
            }
            if (i + 1 >= argc) {
                return usage_error(cmd, a[2] == 'r' ? "%s needs a PATH (a checkpoint or savepoint)"
                                   : a[13] == 'd' ? "%s needs a DIR"
                                                  : "%s needs a DURATION (e.g. 10s)", a);
            }
            const char *v = argv[++i];
            if (a[2] == 'r') {
                job.restore = v;
            } else if (a[13] == 'd') {
                job.checkpoint_dir = v;
            } else {
                job.checkpoint_interval = v;
            }
        } else if (strcmp(a, "--group") == 0 || strcmp(a, "--instance-id") == 0) {
            if (!takes(cmd, O_GROUP, a)) {
                return 2;
            }
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                return usage_error(cmd, a[2] == 'g' ? "%s needs a NAME (the consumer group)"
                                                    : "%s needs an ID (group.instance.id)", a);
            }
            if (a[2] == 'g') {
                job.group = argv[++i];
            } else {
                job.instance_id = argv[++i];
            }
        } else if (strcmp(a, "--verify-checkpoints") == 0) {
            if (!takes(cmd, O_CKPT, a)) {
                return 2;
            }
            job.verify_checkpoints = 1;
        } else if (strcmp(a, "--fresh") == 0 || strcmp(a, "--allow-non-restored-state") == 0
                   || strcmp(a, "--input-log") == 0) {
            if (!takes(cmd, O_CKPT, a)) {
                return 2;
            }
            if (a[2] == 'f') {
                job.fresh = 1;
            } else if (a[2] == 'i') {
                job.input_log = 1;
            } else {
                job.allow_non_restored_state = 1;
            }
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
    if (job.checkpoint_interval && !job.checkpoint_dir && !job.group) {
        return usage_error(cmd, "--checkpoint-interval needs --checkpoint-dir or --group%s", "");
    }
    if (job.input_log && !job.checkpoint_dir) {
        return usage_error(cmd, "--input-log needs --checkpoint-dir (the logs are kept there)%s",
                           "");
    }
    if (job.instance_id && !job.group) {
        return usage_error(cmd, "--instance-id needs --group%s", "");
    }
    if (job.fresh && job.restore) {
        return usage_error(cmd, "--fresh and --restore exclude each other%s", "");
    }
    if (sweep && !job.replay) {
        return usage_error(cmd, "sweep: needs --replay FILE (every setting replays the same "
                                "input)%s", "");
    }
    if (sweep && job.nparams == 0) {
        return usage_error(cmd, "sweep: needs at least one --param NAME=V1,V2,...%s", "");
    }
    if (timeline && !job.output && !job.data) {
        return usage_error(cmd, "timeline: needs -o FILE.svg (or --data FILE)%s", "");
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

/* weir checkpoint list DIR | inspect PATH | verify PATH: the work is weir.checkpoint_cli's. */
static int checkpoint_command(const command_t *cmd, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return command_help(cmd);
        }
    }
    static const char *const subs[] = {"list", "inspect", "verify"};
    int known = 0;
    for (size_t i = 0; argc >= 1 && i < sizeof subs / sizeof subs[0]; i++) {
        known |= strcmp(argv[0], subs[i]) == 0;
    }
    if (!known) {
        return usage_error(cmd, "checkpoint: expected list DIR, inspect PATH or verify PATH%s",
                           "");
    }
    if (argc != 2) {
        return usage_error(cmd, "checkpoint %s: expected one PATH", argv[0]);
    }
    wr_bridge_job_t job = {.mode = "checkpoint", .argc = 2, .argv = argv};
    int status = wr_bridge_run(&job);
    wr_out_release();
    return status;
}

/* weir kafka-mock [--brokers N] [--topic NAME:PARTITIONS]...: the work is kafka_mock.c's. */
static int kafka_mock_command(const command_t *cmd, int argc, char **argv)
{
    wr_kafka_mock_opts_t o = {.brokers = 1};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            return command_help(cmd);
        } else if (strcmp(a, "--brokers") == 0) {
            if (i + 1 >= argc || parse_positive(argv[i + 1], &o.brokers) != 0 || o.brokers > 16) {
                return usage_error(cmd, "%s needs an integer from 1 to 16", a);
            }
            i++;
        } else if (strcmp(a, "--topic") == 0) {
            if (i + 1 >= argc || wr_kafka_mock_add_topic(&o, argv[i + 1]) != 0) {
                return usage_error(cmd, "--topic needs NAME:PARTITIONS (letters, digits, . _ -; "
                                        "1 to 10000 partitions; at most 64 topics), got %s",
                                   i + 1 < argc ? argv[i + 1] : "nothing");
            }
            i++;
        } else {
            return usage_error(cmd, "kafka-mock: unexpected argument %s", a);
        }
    }
    return wr_kafka_mock_serve(&o);
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
    if (cmd && strcmp(name, "checkpoint") == 0) {
        return checkpoint_command(cmd, argc - 2, argv + 2);
    }
    if (cmd && strcmp(name, "kafka-mock") == 0) {
        return kafka_mock_command(cmd, argc - 2, argv + 2);
    }
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
