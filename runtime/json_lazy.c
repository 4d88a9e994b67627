/* SPDX-License-Identifier: MIT */
/* json_lazy.c: JSON (runtime/json.cc: simdjson, jansson), loaded on first use. json.cc is built
 * as a module of its own (weir_json.so), whose bytes are embedded here; weir is not linked
 * against simdjson, jansson or libstdc++. The first call of any JSON function below writes the
 * module into an anonymous file (memfd; a temporary file where that cannot be loaded) and
 * loads it with dlopen; every function forwards to the module's own. A job without JSON never
 * maps simdjson and libstdc++: their loading and relocations (and libstdc++'s start-up) were
 * about 2.4M instructions, ~1.2 ms of CPU, of every weir process. The module calls back into
 * weir (wr_fields_*, wr_x*): the binaries that embed this file export their symbols
 * (ENABLE_EXPORTS), and the module is linked -Bsymbolic, so its own calls between these names
 * stay inside it.
 * A JSON function of fields.h or weir_ffi.h must have its line below (the link fails with an
 * undefined reference otherwise). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fields.h"
#include "weir.h"
#include "lazy_fn.h"

#ifndef WEIR_JSON_MODULE
#error "WEIR_JSON_MODULE: the path of the built weir_json.so (CMakeLists.txt)"
#endif

__asm__(".pushsection .rodata\n"
        ".balign 64\n"
        ".globl wr_json_module_start\n"
        ".hidden wr_json_module_start\n"
        "wr_json_module_start:\n"
        ".incbin \"" WEIR_JSON_MODULE "\"\n"
        ".globl wr_json_module_end\n"
        ".hidden wr_json_module_end\n"
        "wr_json_module_end:\n"
        ".popsection\n");
extern const char wr_json_module_start[];
extern const char wr_json_module_end[];

/* Writes the embedded module to fd; 0, or -1 with errno. */
static int write_module(int fd)
{
    const char *p = wr_json_module_start;
    while (p < wr_json_module_end) {
        ssize_t n = write(fd, p, (size_t)(wr_json_module_end - p));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
    }
    return 0;
}

/* The module loaded from an anonymous file (memfd; MFD_EXEC where the kernel knows it, since a
 * kernel set to seal memfds non-executable by default would refuse to map it), or NULL. */
static void *load_memfd(void)
{
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
    int fd = memfd_create("weir_json.so", MFD_CLOEXEC | MFD_EXEC);
    if (fd < 0 && errno == EINVAL) {
        fd = memfd_create("weir_json.so", MFD_CLOEXEC); /* a kernel before 6.3 */
    }
    if (fd < 0) {
        return NULL;
    }
    void *h = NULL;
    if (write_module(fd) == 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    close(fd); /* the mapping keeps the file */
    return h;
}

/* The module loaded from a temporary file ($TMPDIR or /tmp, removed at once), or NULL: for a
 * system without /proc or where memfds cannot be mapped executable. */
static void *load_tmpfile(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/weir_json.XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        return NULL;
    }
    void *h = write_module(fd) == 0 ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    close(fd);
    unlink(path);
    return h;
}

/* The module's handle. It is part of weir's binary and needs only libraries weir's package
 * depends on, so a failure to load it ends the process, saying why. dlopen is reference
 * counted: a race loads it once. */
static void *module(void)
{
    static void *lib;
    void *h = __atomic_load_n(&lib, __ATOMIC_ACQUIRE);
    if (h != NULL) {
        return h;
    }
    h = load_memfd();
    if (h == NULL) {
        h = load_tmpfile();
    }
    if (h == NULL) {
        const char *why = dlerror(); /* NULL: no dlopen got as far (no file to load from) */
        fprintf(stderr, "weir: JSON support cannot be loaded (is libsimdjson installed?): %s\n",
                why ? why : strerror(errno));
        exit(1);
    }
    __atomic_store_n(&lib, h, __ATOMIC_RELEASE);
    return h;
}

static void *symbol(const char *name)
{
    void *f = dlsym(module(), name);
    if (f == NULL) {
        fprintf(stderr, "weir: the JSON module has no %s\n", name);
        exit(1);
    }
    return f;
}

LAZY(wr_json_t *, wr_json_new, (void), ())
LAZY(int, wr_json_fill,
     (wr_json_t * j, weir_fields_t *fields, const char *line, size_t len, void *out),
     (j, fields, line, len, out))
LAZY(weir_json_t *, weir_json_new, (void), ())
LAZY(int32_t, weir_json_decode, (weir_json_t * j, const char *line, int32_t len), (j, line, len))
LAZY(const weir_json_tok_t *, weir_json_tape, (const weir_json_t *j), (j))
LAZY(const char *, weir_json_error, (const weir_json_t *j), (j))

/* Freeing NULL (a fields reader without JSON, a failed new) does not load the module. */
void wr_json_free(wr_json_t *j)
{
    static void (*fn)(wr_json_t *);
    if (j == NULL) {
        return;
    }
    void (*f)(wr_json_t *) = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (f == NULL) {
        *(void **)&f = symbol("wr_json_free");
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    f(j);
}

void weir_json_free(weir_json_t *j)
{
    wr_json_free(j);
}
