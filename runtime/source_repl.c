/* SPDX-License-Identifier: MIT */
/* source_repl.c: the REPL's input, a source kind delivered alone (source.h,
 * wr_source_add_alone): the only file that includes libedit. Input becomes WEIR_EV_INPUT
 * events, at most one per poll (repl_fill), so Lua runs each line before the next one is read;
 * the poll asks for one only when no other source has anything ready.
 * - A terminal with line editing: libedit's readline-compatible callback interface, driven by
 *   a uv_poll_t on descriptor 0, with history and completion over the words Lua gave. After
 *   a line libedit leaves the terminal in cooked mode and reads nothing until its handler is
 *   installed again, which the next poll that waits does: keys typed meanwhile wait in the
 *   kernel. The prompt is on screen only while a poll waits or a key is being read; a poll
 *   that returns events clears that line first, so what Lua prints never lands on it.
 * - Anything else: lines split by lines.c, no prompt, no editing, no history. A pipe, tty or
 *   socket is read by linestream.c (paused while much is queued), a regular file on demand
 *   with the file source's read (wr_source_file_read); lines are cut, and overlong ones
 *   dropped and reported, by the source base (wr_source_next_line), as for every text source.
 * libedit keeps global state, so one REPL at a time edits (`editing`). Lua may close one
 * runtime's REPL and open another's on the same input (a bare runtime between jobs, then the
 * job's): plain input read ahead but not yet handed out is carried over (`carry`), so a piped
 * session loses no line at the switch. */
#include "source_repl.h"

#include <assert.h>
#include <editline/readline.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lines.h"
#include "linestream.h"
#include "mem.h"
#include "rt.h"
#include "signals.h"
#include "source.h"
#include "source_file.h"

enum {
    READ_CHUNK = 64 * 1024, /* bytes per read(2) of a regular file */
    HISTORY_MAX = 1000      /* lines kept in memory and in the history file */
};

typedef enum repl_mode {
    REPL_NONE,   /* not opened (prompt and words may be set already) */
    REPL_FILE,   /* plain lines from a regular file or device, read(2) on demand */
    REPL_STREAM, /* plain lines from a pipe, tty or socket, through libuv */
    REPL_EDIT    /* a terminal with libedit */
} repl_mode_t;

typedef struct wr_repl {
    wr_source_t base; /* base.ended: not reading (not open, EOF delivered, or closed) */
    repl_mode_t mode;
    int closed;          /* repl_close has run */
    char *prompt;        /* owned */
    char *words;         /* owned: NUL-separated, with a NUL after the last word */
    size_t words_len;
    size_t complete_pos; /* where the completion generator goes on in words */
    int complete_section; /* which section of words complete_pos is in (weir_repl_set_words) */
    int complete_at_start; /* the word being completed starts the line */
    int eof;             /* the input has ended: EOF read, Ctrl-D, hang-up */
    int eof_delivered;

    /* REPL_FILE, REPL_STREAM */
    int fd; /* REPL_FILE: our duplicate, closed by repl_close; else -1 */
    wr_lines_t lines;
    int lines_open;
    wr_linestream_t ls; /* REPL_STREAM */
    dev_t dev; /* what the input is, for `carry` */
    ino_t ino;

    /* REPL_EDIT */
    char *history; /* owned path, or NULL: history in memory only */
    uv_poll_t poll;
    int poll_open;
    int polling;
    uv_signal_t winch;
    int winch_open;
    int installed; /* libedit's handler is installed: raw terminal, a line being edited */
    int visible;   /* the prompt and that line are on screen */
    char *line;    /* complete and not yet handed out; malloc'd by libedit */
    char *given;   /* handed out by the last poll, freed when the next begins */
} wr_repl_t;

/* The REPL that libedit's callbacks (on_line, completion) belong to. */
static wr_repl_t *editing;

/* Plain input a closed REPL had read but not handed out, for the next REPL that opens the same
 * file (device and inode): descriptor 0 is one input for the whole process. An EOF need not be
 * carried: a pipe or file reports it again. */
static struct {
    char *bytes; /* owned; NULL: nothing carried (len > 0 otherwise) */
    size_t len;
    dev_t dev;
    ino_t ino;
} carry;

/* Characters that end a word for completion: not '.' or ':' (weir.windows.tu, env:fr). libedit
 * reads rl_basic_word_break_characters, GNU readline the completer one; both get this. */
static char word_breaks[] = " \t\n\"\\'`@$><=;|&{}()[],+-*/%^~#";

static const wr_source_ops_t repl_ops;

/* The runtime's REPL, made and registered by the first weir_repl_* call; not reading until
 * it is opened. */
static wr_repl_t *get_repl(weir_rt_t *rt)
{
    if (rt->alone == NULL) {
        wr_repl_t *r = wr_xcalloc(1, sizeof *r);
        r->base.ops = &repl_ops;
        r->base.kind = "repl";
        r->base.ended = 1;
        r->fd = -1;
        r->prompt = wr_xstrdup("");
        int rc = wr_source_add_alone(rt, &r->base, "repl");
        assert(rc == 0); /* rt->alone was free */
        (void)rc;
    }
    assert(rt->alone->ops == &repl_ops); /* the one kind delivered alone */
    return (wr_repl_t *)rt->alone;
}

/* Reading while open, not closed and its EOF event not delivered. */
static void update_live(wr_repl_t *r)
{
    r->base.ended = r->mode == REPL_NONE || r->closed || r->eof_delivered;
}

static void push_input(wr_repl_t *r, const char *ptr, size_t len, int32_t flags)
{
    weir_event_t *e = wr_source_push(r->base.rt, &r->base, WEIR_EV_INPUT);
    assert(e != NULL); /* the loop only asks with an empty batch */
    e->ptr = ptr;
    e->len = len > INT32_MAX ? INT32_MAX : (int32_t)len;
    e->flags = flags;
}

/* ---- plain lines ------------------------------------------------------------------------- */

/* A read error ends the input like EOF: the session ends, the job need not fail. */
static void on_stream(wr_linestream_t *ls, ssize_t n)
{
    wr_repl_t *r = ls->data;
    if (n > 0) {
        return;
    }
    if (n != UV_EOF) {
        fprintf(stderr, "weir: repl: reading input: %s\n", weir_strerror((int)n));
    }
    r->eof = 1;
}

/* fd (our duplicate) is a pipe, tty or socket: the handle takes it. */
static int open_stream(wr_repl_t *r, int fd, uv_handle_type type)
{
    int rc = wr_linestream_init(&r->ls, &r->base.rt->loop, fd, type, &r->lines, on_stream, r);
    if (rc == 0) {
        rc = wr_linestream_start(&r->ls);
    }
    if (rc < 0) {
        return wr_err_set(&r->base.rt->err, rc, "repl: input: %s", weir_strerror(rc));
    }
    r->mode = REPL_STREAM;
    return 0;
}

static int open_plain(wr_repl_t *r, int fd_in)
{
    int fd = fcntl(fd_in, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        int code = uv_translate_sys_error(errno);
        return wr_err_set(&r->base.rt->err, code, "repl: input: %s", weir_strerror(code));
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
        int code = S_ISDIR(st.st_mode) ? UV_EISDIR : uv_translate_sys_error(errno);
        close(fd);
        return wr_err_set(&r->base.rt->err, code, "repl: input: %s", weir_strerror(code));
    }
    wr_lines_init(&r->lines, NULL, 0);
    r->lines_open = 1;
    r->dev = st.st_dev;
    r->ino = st.st_ino;
    if (carry.bytes != NULL && carry.dev == st.st_dev && carry.ino == st.st_ino) {
        size_t got = 0;
        char *p = wr_lines_space(&r->lines, carry.len, &got);
        memcpy(p, carry.bytes, carry.len);
        wr_lines_commit(&r->lines, carry.len);
        wr_free(carry.bytes);
        carry.bytes = NULL;
    }
    uv_handle_type type = S_ISREG(st.st_mode) ? UV_FILE : uv_guess_handle(fd);
    if (type == UV_TTY || type == UV_NAMED_PIPE || type == UV_TCP) {
        return open_stream(r, fd, type);
    }
    r->fd = fd; /* a regular file or a device such as /dev/null */
    r->mode = REPL_FILE;
    return 0;
}

/* REPL_FILE: one read(2) into the buffer; 0 bytes or an error end the input. */
static void read_chunk(wr_repl_t *r)
{
    size_t n = 0;
    int rc = wr_source_file_read(r->fd, &r->lines, READ_CHUNK, 0, &n);
    if (rc < 0) {
        fprintf(stderr, "weir: repl: reading input: %s\n", weir_strerror(rc));
    }
    if (rc != 0 || n == 0) {
        r->eof = 1;
    }
}

/* Hands out the next plain line, if one is complete (or is the last, unterminated one). Only
 * one line per poll is pinned, and nothing is pinned when read_chunk needs room. */
static int take_plain(wr_repl_t *r)
{
    for (;;) {
        wr_line_t rec;
        int got = wr_source_next_line(&r->base, &r->lines, r->eof, &rec);
        if (got == WR_LINES_RECORD) {
            push_input(r, rec.ptr, rec.len, WEIR_INPUT_LINE);
            return 1;
        }
        if (got == WR_LINES_DROPPED) {
            continue;
        }
        if (r->eof || r->mode != REPL_FILE) {
            return 0;
        }
        read_chunk(r);
    }
}

/* ---- line editing ------------------------------------------------------------------------ */

/* The completion generator: the next word of r->words that starts with text, malloc'd (libedit
 * frees it with free(), so it is not counted: plain strdup, and NULL when even that fails),
 * or NULL when there are no more. */
static char *next_match(const char *text, int state)
{
    wr_repl_t *r = editing;
    if (r == NULL || r->words == NULL) {
        return NULL;
    }
    if (state == 0) {
        r->complete_pos = 0;
        r->complete_section = 0;
    }
    size_t tlen = strlen(text);
    while (r->complete_pos < r->words_len) {
        const char *w = r->words + r->complete_pos;
        size_t wlen = strlen(w); /* the copy ends with a NUL */
        r->complete_pos += wlen + 1;
        if (wlen == 0) {
            r->complete_section++; /* an empty word starts the next section */
            continue;
        }
        int fits = r->complete_section == 1 ||
                   (r->complete_section == 0) == (r->complete_at_start != 0);
        if (fits && wlen >= tlen && memcmp(w, text, tlen) == 0) {
            return strdup(w);
        }
    }
    return NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)end;
    int at_start = 1;
    for (int i = 0; i < start && rl_line_buffer != NULL && rl_line_buffer[i] != '\0'; i++) {
        if (rl_line_buffer[i] != ' ' && rl_line_buffer[i] != '\t') {
            at_start = 0;
            break;
        }
    }
    if (editing != NULL) {
        editing->complete_at_start = at_start;
    }
    rl_attempted_completion_over = 1; /* no file names when no word matches */
    return rl_completion_matches(text, next_match);
}

static void flush_terminal(void)
{
    fflush(rl_outstream != NULL ? rl_outstream : stdout);
}

static void stop_polling(wr_repl_t *r)
{
    if (r->polling) {
        uv_poll_stop(&r->poll);
        r->polling = 0;
    }
}

/* Writes the whole history, not append_history(1, ...): libedit 3.1-20221030 appends the last
 * two entries for n = 1. libedit's write_history would fopen the path, following a symbolic
 * link to rewrite and chmod its target, so it writes a new file made here (mkstemp: O_EXCL,
 * mode 0600, never through a link) that is then renamed over the history file; a rename
 * replaces a link planted since open_edit instead of writing through it, and a crash
 * mid-write leaves the old file whole. Best effort: a session never fails for it. */
static void save_history(const char *path)
{
    size_t n = strlen(path) + sizeof ".XXXXXX";
    char *tmp = wr_xmalloc(n);
    snprintf(tmp, n, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd >= 0) {
        close(fd);
        if (write_history(tmp) != 0 || rename(tmp, path) != 0) {
            unlink(tmp);
        }
    }
    wr_free(tmp);
}

/* libedit calls this with a complete line (malloc'd, no newline; the caller frees it) or NULL
 * for Ctrl-D on an empty line. It has left raw mode already and reads nothing more until the
 * handler is installed again: the terminal rests until the next poll waits. */
static void on_line(char *line)
{
    wr_repl_t *r = editing;
    if (r == NULL) {
        free(line);
        return;
    }
    r->installed = 0;
    r->visible = 0;
    stop_polling(r);
    if (line == NULL) {
        r->eof = 1;
        fputs("\n", rl_outstream); /* the shell's prompt goes on a line of its own */
        flush_terminal();
        return;
    }
    if (line[0] != '\0') {
        add_history(line);
        if (r->history != NULL) {
            save_history(r->history);
        }
    }
    free(r->line);
    r->line = line;
}

static void on_readable(uv_poll_t *p, int status, int events);

/* Puts the prompt and the line being edited on screen and reads keys. */
static void show(wr_repl_t *r)
{
    if (!r->installed) {
        /* a fresh line: libedit goes raw, clears its buffer and prints the prompt */
        rl_callback_handler_install(r->prompt, on_line);
        r->installed = 1;
    } else if (!r->visible) {
        /* redraws prompt and line from column 0, where repl_returning left the cursor */
        rl_forced_update_display();
    }
    r->visible = 1;
    if (!r->polling) {
        uv_poll_start(&r->poll, UV_READABLE | UV_DISCONNECT, on_readable);
        r->polling = 1;
    }
}

/* Leaves line editing for good (hang-up, close): cooked terminal, no more reads. */
static void stop_editing(wr_repl_t *r)
{
    if (r->installed && r->visible) {
        fputs("\n", rl_outstream);
    }
    rl_callback_handler_remove(); /* cooked mode again if it was raw; forgets on_line */
    flush_terminal();
    r->installed = 0;
    r->visible = 0;
    stop_polling(r);
}

/* Readable with nothing to read is a hang-up: the input has ended. */
static void on_readable(uv_poll_t *p, int status, int events)
{
    wr_repl_t *r = p->data;
    if (status < 0 || (events & UV_DISCONNECT) || !wr_source_unread_fd(0)) {
        stop_editing(r);
        r->eof = 1;
        return;
    }
    if (!r->visible) {
        show(r); /* a key while a returned batch had cleared the line */
    }
    rl_callback_read_char(); /* one key; a complete line calls on_line */
}

static void on_winch(uv_signal_t *s, int signo)
{
    (void)s;
    (void)signo;
    rl_resize_terminal();
}

/* 1 if history_path may be read and replaced: a regular file, or none yet (the first line
 * creates it). A symbolic link or anything else is left alone, and the session keeps its
 * history in memory, with one warning per process (each job and the bare runtime between jobs
 * open the REPL again). */
static int history_usable(const char *history_path)
{
    static int warned;
    struct stat st;
    if (lstat(history_path, &st) != 0 || S_ISREG(st.st_mode)) {
        return 1; /* missing, or unreadable: saving then fails quietly, as reading does */
    }
    if (!warned) {
        warned = 1;
        fprintf(stderr, "weir: repl: history file %s is %s: history is not saved\n",
                history_path, S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file");
    }
    return 0;
}

static int open_edit(wr_repl_t *r, const char *history_path)
{
    weir_rt_t *rt = r->base.rt;
    if (editing != NULL) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "repl: the terminal is in use by another REPL");
    }
    /* uv_poll_init makes fd 0 non-blocking. On a terminal that flag belongs to the open file
     * description shared with stdout, where it would make printing fail with EAGAIN; epoll
     * needs no such flag and libedit reads only once poll says so, so it is put back. */
    int flags = fcntl(0, F_GETFL);
    int rc = uv_poll_init(&rt->loop, &r->poll, 0);
    if (flags >= 0) {
        fcntl(0, F_SETFL, flags);
    }
    if (rc < 0) {
        return wr_err_set(&rt->err, rc, "repl: terminal: %s", weir_strerror(rc));
    }
    r->poll.data = r;
    r->poll_open = 1;
    /* libedit's own signal handlers would re-raise SIGINT to the whole process group: weir's
     * handler decides (signals.c), and a window size change reaches libedit from here. */
    uv_signal_init(&rt->loop, &r->winch);
    r->winch.data = r;
    r->winch_open = 1;
    uv_signal_start(&r->winch, on_winch, SIGWINCH);
    uv_unref((uv_handle_t *)&r->winch);
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    rl_readline_name = "weir"; /* for ~/.editrc */
    rl_instream = stdin;
    rl_outstream = stdout;
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = word_breaks;
    rl_completer_word_break_characters = word_breaks;
    using_history(); /* initializes libedit, once per process */
    stifle_history(HISTORY_MAX);
    if (history_path != NULL && history_path[0] != '\0' && history_usable(history_path)) {
        r->history = wr_xstrdup(history_path);
        clear_history(); /* an earlier REPL of this process wrote its lines to the file */
        read_history(r->history); /* a missing file is a first session */
    }
    r->mode = REPL_EDIT;
    editing = r;
    return 0;
}

/* ---- opening (source_repl.h) and the source hooks (rt.h) -------------------------------- */

int wr_source_repl_open_fd(weir_rt_t *rt, int fd, int interactive, const char *history_path)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (fd < 0) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "weir_repl_open: bad descriptor %d", fd);
    }
    wr_repl_t *r = get_repl(rt);
    if (r->mode != REPL_NONE || r->closed) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_repl_open: the REPL is open already");
    }
    int rc = interactive && fd == 0 && isatty(0) ? open_edit(r, history_path)
                                                 : open_plain(r, fd);
    if (rc < 0) {
        return rc;
    }
    update_live(r);
    wr_signals_sync(rt);
    return 0;
}

static wr_repl_t *repl_of(wr_source_t *s)
{
    return (wr_repl_t *)s;
}

/* Start of a poll: the line handed out by the previous poll is no longer referenced. */
static void repl_begin(wr_source_t *s)
{
    wr_repl_t *r = repl_of(s);
    free(r->given);
    r->given = NULL;
    if (r->lines_open) {
        wr_lines_release(&r->lines);
    }
    if (!r->eof && wr_linestream_resume(&r->ls) < 0) {
        r->eof = 1;
    }
}

/* Appends one INPUT event, a line or (once) EOF, if one is ready. A regular file is read
 * here, synchronously; streams and the terminal are read by uv_run. */
static void repl_fill(wr_source_t *s)
{
    wr_repl_t *r = repl_of(s);
    if (s->ended) {
        return;
    }
    if (r->mode == REPL_EDIT) {
        if (r->line != NULL) {
            r->given = r->line;
            r->line = NULL;
            push_input(r, r->given, strlen(r->given), WEIR_INPUT_LINE);
            return;
        }
    } else if (take_plain(r)) {
        return;
    }
    if (r->eof) {
        push_input(r, NULL, 0, WEIR_INPUT_EOF);
        r->eof_delivered = 1;
        update_live(r);
    }
}

/* Ctrl-C at the prompt: the line being edited is dropped, the next wait shows a fresh one,
 * and Lua gets an INPUT flagged INTERRUPT. */
static void repl_interrupt(wr_source_t *s)
{
    wr_repl_t *r = repl_of(s);
    if (r->mode == REPL_EDIT && !r->eof) {
        if (r->installed) {
            if (r->visible) {
                fputs("^C\n", rl_outstream); /* raw mode: the terminal did not echo it */
            }
            rl_callback_handler_remove(); /* the line is dropped; the next wait starts afresh */
            r->installed = 0;
            r->visible = 0;
            stop_polling(r);
        } else {
            fputs("\n", rl_outstream); /* cooked mode echoed ^C; the prompt goes below it */
        }
        flush_terminal();
    }
    push_input(r, NULL, 0, WEIR_INPUT_INTERRUPT);
}

/* The poll is about to wait in uv_run: show the prompt and read keys (line editing). */
static void repl_wait(wr_source_t *s)
{
    wr_repl_t *r = repl_of(s);
    if (!s->ended && r->mode == REPL_EDIT && !r->eof && r->line == NULL) {
        show(r);
        flush_terminal();
    }
}

/* The poll returns events or an error: clear the prompt line, so what Lua prints does not
 * land on it. */
static void repl_returning(wr_source_t *s)
{
    wr_repl_t *r = repl_of(s);
    if (r->mode == REPL_EDIT && r->visible) {
        fputs("\r\033[K", rl_outstream); /* column 0 of an empty line */
        flush_terminal();
        r->visible = 0;
    }
}

/* weir_rt_free: give the terminal back and uv_close the handles (before the loop runs out). */
static void repl_close(wr_source_t *s)
{
    wr_repl_t *r = repl_of(s);
    if (r->closed) {
        return;
    }
    r->closed = 1;
    update_live(r);
    if (r->mode == REPL_EDIT) {
        stop_editing(r);
        editing = NULL;
    }
    size_t left = r->lines_open ? wr_lines_pending(&r->lines) : 0;
    if (left > 0 && !r->lines.skipping) {
        wr_free(carry.bytes); /* one input is carried: the process's standard input */
        carry.bytes = wr_xmemdup(r->lines.buf + r->lines.head, left);
        carry.len = left;
        carry.dev = r->dev;
        carry.ino = r->ino;
    }
    if (r->poll_open) {
        r->poll_open = 0;
        uv_close((uv_handle_t *)&r->poll, NULL); /* repl_destroy frees r after the loop ran */
    }
    if (r->winch_open) {
        r->winch_open = 0;
        uv_close((uv_handle_t *)&r->winch, NULL);
    }
    wr_linestream_close(&r->ls);
    if (r->fd >= 0) {
        close(r->fd);
        r->fd = -1;
    }
}

/* weir_rt_free, after every close callback has run. */
static void repl_destroy(wr_source_t *s)
{
    wr_repl_t *r = repl_of(s);
    if (r->lines_open) {
        wr_lines_close(&r->lines);
    }
    wr_free(r->prompt);
    wr_free(r->words);
    wr_free(r->history);
    free(r->line);
    free(r->given);
    wr_free(r);
}

/* Not numbered, so weir_source_pending never asks, and never stopped: the STOP ends it. */
static const wr_source_ops_t repl_ops = {
    .begin = repl_begin,
    .fill = repl_fill,
    .close = repl_close,
    .destroy = repl_destroy,
    .wait = repl_wait,
    .returning = repl_returning,
    .interrupt = repl_interrupt,
};

/* ---- Lua's side (weir_ffi.h) ------------------------------------------------------------- */

int weir_repl_open(weir_rt_t *rt, int32_t interactive, const char *history_path)
{
    return wr_source_repl_open_fd(rt, 0, interactive, history_path);
}

/* Between polls, so Lua's debug hook can end a long command; outside REPL mode always 0. */
int32_t weir_repl_interrupted(weir_rt_t *rt)
{
    return wr_signals_take_command_interrupt(rt);
}

/* A Ctrl-C came while Lua ran, not taken yet: the REPL lets a job's code that runs in the
 * background (between keystrokes) finish before it decides to stop it. */
int32_t weir_repl_interrupt_pending(weir_rt_t *rt)
{
    return wr_signals_command_interrupt_pending(rt);
}

/* A stop signal came (SIGTERM, or SIGINT once the REPL reads no more): 1 while no poll has
 * seen it yet (Lua ran all the while: the count hook ends what runs), 2 once one has (the job
 * is stopping as any job does); the REPL ends either way. */
int32_t weir_repl_stop_asked(weir_rt_t *rt)
{
    if (rt == NULL || !wr_signals_stop_asked(rt)) {
        return 0;
    }
    return rt->stop_requested ? 2 : 1;
}

/* The prompt appears when a poll next waits for input; until then it is only kept. */
int weir_repl_prompt(weir_rt_t *rt, const char *prompt)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    wr_repl_t *r = get_repl(rt);
    wr_free(r->prompt);
    r->prompt = wr_xstrdup(prompt != NULL ? prompt : "");
    if (r->mode == REPL_EDIT && r->installed && !r->closed) {
        rl_set_prompt(r->prompt);
        if (r->visible) {
            fputs("\r\033[K", rl_outstream);
            rl_forced_update_display();
            flush_terminal();
        }
    }
    return 0;
}

int weir_repl_set_words(weir_rt_t *rt, const char *words, size_t len)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (words == NULL && len > 0) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "weir_repl_set_words: no words");
    }
    wr_repl_t *r = get_repl(rt);
    wr_free(r->words);
    r->words = wr_xmemdup(len > 0 ? words : "", len); /* adds the NUL after the last word */
    r->words_len = len;
    return 0;
}
