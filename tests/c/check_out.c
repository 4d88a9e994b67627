/* SPDX-License-Identifier: MIT */
/* check_out.c: standard output and write_text's directories (runtime/out.c). Tests that point
 * fd 1 elsewhere rely on Check's fork per test (the default), as out.c keeps process state. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_support.h"
#include "out.h"
#include "weir.h"

static char temp_dir[] = "/tmp/check_out.XXXXXX";

/* A fresh directory to work in; the test's process chdirs into it. */
static void enter_temp_dir(void)
{
    ck_assert_ptr_nonnull(mkdtemp(temp_dir));
    ck_assert_int_eq(chdir(temp_dir), 0);
}

/* Removes what the test made (names in order, deepest first), then the directory. */
static void leave_temp_dir(const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(remove(names[i]), 0);
    }
    ck_assert_int_eq(chdir("/"), 0);
    ck_assert_int_eq(rmdir(temp_dir), 0);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

START_TEST(test_mkdirs_creates_the_parents_and_accepts_an_existing_directory)
{
    enter_temp_dir();
    ck_assert_int_eq(weir_out_mkdirs("a/b/c"), 0);
    ck_assert(is_dir("a/b/c"));
    ck_assert_int_eq(weir_out_mkdirs("a/b/c"), 0);
    ck_assert_int_eq(weir_out_mkdirs("a/b/c/"), 0);
    const char *made[] = {"a/b/c", "a/b", "a"};
    leave_temp_dir(made, 3);
}
END_TEST

START_TEST(test_mkdirs_takes_a_name_starting_with_a_dash_as_a_name)
{
    enter_temp_dir();
    ck_assert_int_eq(weir_out_mkdirs("-p"), 0);
    ck_assert_int_eq(weir_out_mkdirs("--x/-y"), 0);
    ck_assert(is_dir("-p"));
    ck_assert(is_dir("--x/-y"));
    const char *made[] = {"-p", "--x/-y", "--x"};
    leave_temp_dir(made, 3);
}
END_TEST

START_TEST(test_mkdirs_through_a_file_is_not_a_directory)
{
    enter_temp_dir();
    FILE *f = fopen("file", "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(weir_out_mkdirs("file"), -ENOTDIR);
    ck_assert_int_eq(weir_out_mkdirs("file/sub"), -ENOTDIR);
    ck_assert_int_eq(weir_out_mkdirs(""), WEIR_EINVAL);
    const char *made[] = {"file"};
    leave_temp_dir(made, 1);
}
END_TEST

START_TEST(test_a_full_stdout_fails_and_the_error_sticks)
{
    int fd = open("/dev/full", O_WRONLY);
    if (fd < 0) {
        return; /* no /dev/full here */
    }
    wr_out_init();
    ck_assert_int_eq(dup2(fd, 1), 1);
    ck_assert_int_eq(weir_out_error(1), 0);
    ck_assert_int_eq(weir_out_write(1, "x\n", 2), 0); /* buffered */
    ck_assert_int_eq(weir_out_flush(), -ENOSPC);
    ck_assert_int_eq(weir_out_error(1), -ENOSPC);
    ck_assert_int_eq(weir_out_write(1, "y\n", 2), -ENOSPC);
    ck_assert_int_eq(weir_out_error(7), WEIR_EINVAL);
}
END_TEST

START_TEST(test_dump_writes_what_is_pending_with_write)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    wr_out_init();
    ck_assert_int_eq(dup2(p[1], 1), 1);
    ck_assert_int_eq(weir_out_write(1, "one\n", 4), 0);
    ck_assert_int_eq(weir_out_write(1, "two\n", 4), 0);
    ck_assert_uint_eq(wr_out_dump(100), 0);
    char buf[16] = {0};
    ck_assert_int_eq(read(p[0], buf, sizeof buf), 8);
    ck_assert_str_eq(buf, "one\ntwo\n");
    ck_assert_int_eq(fcntl(1, F_GETFL) & O_NONBLOCK, 0); /* the flags are back */
}
END_TEST

START_TEST(test_dump_gives_up_on_a_full_pipe_and_says_how_much_it_kept)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    wr_out_init();
    ck_assert_int_eq(dup2(p[1], 1), 1);
    int fl = fcntl(p[1], F_GETFL);
    fcntl(p[1], F_SETFL, fl | O_NONBLOCK);
    char fill[4096];
    memset(fill, 'f', sizeof fill);
    while (write(p[1], fill, sizeof fill) > 0) {
        /* until the pipe holds no more */
    }
    fcntl(p[1], F_SETFL, fl);
    ck_assert_int_eq(weir_out_write(1, "pending\n", 8), 0);
    ck_assert_uint_eq(wr_out_dump(50), 8);
    ck_assert_int_eq(fcntl(1, F_GETFL) & O_NONBLOCK, 0);
    /* the exit flushes stdio's copy of the pending bytes (weir's exit is _exit) */
    ck_assert_int_eq(dup2(open("/dev/null", O_WRONLY), 1), 1);
}
END_TEST

static Suite *out_suite(void)
{
    Suite *s = suite_create("out");
    const check_case_t cases[] = {
        {"mkdirs_creates_parents",
         test_mkdirs_creates_the_parents_and_accepts_an_existing_directory},
        {"mkdirs_dash_names", test_mkdirs_takes_a_name_starting_with_a_dash_as_a_name},
        {"mkdirs_through_a_file", test_mkdirs_through_a_file_is_not_a_directory},
        {"full_stdout_error_sticks", test_a_full_stdout_fails_and_the_error_sticks},
        {"dump_writes_pending", test_dump_writes_what_is_pending_with_write},
        {"dump_gives_up_on_full_pipe",
         test_dump_gives_up_on_a_full_pipe_and_says_how_much_it_kept},
    };
    add_cases(s, cases, sizeof cases / sizeof cases[0]);
    return s;
}

int main(void)
{
    return run_suite(out_suite());
}
