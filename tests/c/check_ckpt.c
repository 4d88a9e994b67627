/* SPDX-License-Identifier: MIT */
/* check_ckpt.c: the checkpoint directory's file operations: the checksum's standard check
 * value, durable writes and their failures (ENOSPC from /dev/full), the commit by rename, the
 * writer's lock, listing, removal and truncation; the writer process (fork, its message back,
 * its exit by a signal, the lock and the job's signals left to the job). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check_support.h"
#include "ckpt.h"

/* A fresh empty directory under /tmp (or $TMPDIR) into dir. */
static void make_tmp(char *dir, size_t cap)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, cap, "%s/check_ckpt.XXXXXX", base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[4096];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return buf;
}

static void cleanup(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/LOCK", dir);
    unlink(path);
    ck_assert_int_eq(weir_ckpt_remove(dir), 0);
}

START_TEST(test_ckpt_crc32_has_the_standard_check_value)
{
    ck_assert_uint_eq(weir_ckpt_crc32(0, "123456789", 9), 0xcbf43926u);
    /* continuing over two parts gives the crc of the whole */
    uint32_t a = weir_ckpt_crc32(0, "1234", 4);
    ck_assert_uint_eq(weir_ckpt_crc32(a, "56789", 5), 0xcbf43926u);
    ck_assert_uint_eq(weir_ckpt_crc32(7, NULL, 0), 7);
}
END_TEST

START_TEST(test_ckpt_write_file_writes_every_byte_and_truncates_what_was_there)
{
    char dir[256], path[300];
    make_tmp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/a.state", dir);
    ck_assert_int_eq(weir_ckpt_write_file(path, "0123456789", 10), 0);
    ck_assert_int_eq(weir_ckpt_write_file(path, "abc", 3), 0);
    size_t n = 0;
    char *got = slurp(path, &n);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(memcmp(got, "abc", 3), 0);
    ck_assert_int_eq(weir_ckpt_write_file(path, NULL, 0), 0);
    slurp(path, &n);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(weir_ckpt_write_file(NULL, "x", 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_ckpt_write_file(path, NULL, 1), WEIR_EINVAL);
    cleanup(dir);
}
END_TEST

START_TEST(test_ckpt_write_file_reports_a_full_disk)
{
    /* /dev/full fails every write with ENOSPC: the real error, not a simulation */
    if (access("/dev/full", W_OK) != 0) {
        return;
    }
    ck_assert_int_eq(weir_ckpt_write_file("/dev/full", "x", 1), -ENOSPC);
    ck_assert_int_eq(weir_ckpt_write_file("/nonexistent-dir/x", "x", 1), -ENOENT);
}
END_TEST

START_TEST(test_ckpt_commit_renames_and_refuses_an_existing_name)
{
    char dir[256], tmp[300], fin[300], file[320];
    make_tmp(dir, sizeof dir);
    snprintf(tmp, sizeof tmp, "%s/.tmp-chk-1", dir);
    snprintf(fin, sizeof fin, "%s/chk-1", dir);
    ck_assert_int_eq(mkdir(tmp, 0777), 0);
    snprintf(file, sizeof file, "%s/MANIFEST", tmp);
    ck_assert_int_eq(weir_ckpt_write_file(file, "m", 1), 0);
    ck_assert_int_eq(weir_ckpt_commit(tmp, fin), 0);
    struct stat st;
    ck_assert_int_eq(stat(tmp, &st), -1);
    snprintf(file, sizeof file, "%s/MANIFEST", fin);
    ck_assert_int_eq(stat(file, &st), 0);
    ck_assert_int_eq(mkdir(tmp, 0777), 0);
    ck_assert_int_eq(weir_ckpt_commit(tmp, fin), -EEXIST); /* ids are never reused */
    ck_assert_int_eq(weir_ckpt_remove(tmp), 0);
    ck_assert_int_eq(weir_ckpt_commit(tmp, fin), -ENOENT);
    ck_assert_int_eq(weir_ckpt_remove(fin), 0);
    ck_assert_int_eq(weir_ckpt_remove(fin), 0); /* absent: nothing to do */
    cleanup(dir);
}
END_TEST

START_TEST(test_ckpt_lock_excludes_a_second_writer_until_unlocked)
{
    char dir[256];
    make_tmp(dir, sizeof dir);
    int fd = weir_ckpt_lock(dir);
    ck_assert_int_ge(fd, 0);
    /* a second open file description conflicts, in this process as in another */
    ck_assert_int_eq(weir_ckpt_lock(dir), -EAGAIN);
    ck_assert_int_eq(weir_ckpt_unlock(fd), 0);
    int again = weir_ckpt_lock(dir);
    ck_assert_int_ge(again, 0);
    ck_assert_int_eq(weir_ckpt_unlock(again), 0);
    ck_assert_int_eq(weir_ckpt_lock("/nonexistent-dir"), -ENOENT);
    ck_assert_int_eq(weir_ckpt_unlock(-1), WEIR_EINVAL);
    cleanup(dir);
}
END_TEST

START_TEST(test_ckpt_list_names_every_entry_and_says_what_it_needs)
{
    char dir[256], sub[300];
    make_tmp(dir, sizeof dir);
    ck_assert_int_eq(weir_ckpt_list(dir, NULL, 0), 0);
    snprintf(sub, sizeof sub, "%s/chk-00000001", dir);
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    snprintf(sub, sizeof sub, "%s/sp-00000002", dir);
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    int32_t need = weir_ckpt_list(dir, NULL, 0);
    ck_assert_int_eq(need, (int32_t)(strlen("chk-00000001") + strlen("sp-00000002") + 2));
    char small[4];
    ck_assert_int_eq(weir_ckpt_list(dir, small, sizeof small), need); /* too small: nothing */
    char out[64];
    ck_assert_int_eq(weir_ckpt_list(dir, out, sizeof out), need);
    int chk = 0, sp = 0;
    for (int32_t i = 0; i < need; i += (int32_t)strlen(out + i) + 1) {
        chk += strcmp(out + i, "chk-00000001") == 0;
        sp += strcmp(out + i, "sp-00000002") == 0;
    }
    ck_assert_int_eq(chk + sp, 2);
    ck_assert_int_eq(weir_ckpt_list("/nonexistent-dir", out, sizeof out), -ENOENT);
    ck_assert_int_eq(weir_ckpt_remove(sub), 0);
    snprintf(sub, sizeof sub, "%s/chk-00000001", dir);
    ck_assert_int_eq(weir_ckpt_remove(sub), 0);
    cleanup(dir);
}
END_TEST

START_TEST(test_ckpt_truncate_cuts_the_uncommitted_tail)
{
    char dir[256], path[300];
    make_tmp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    ck_assert_int_eq(weir_ckpt_write_file(path, "kept\nlost\n", 10), 0);
    ck_assert_int_eq(weir_ckpt_truncate(path, 5), 0);
    size_t n = 0;
    char *got = slurp(path, &n);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(memcmp(got, "kept\n", 5), 0);
    ck_assert_int_eq(weir_ckpt_truncate(path, -1), WEIR_EINVAL);
    ck_assert_int_eq(weir_ckpt_fsync_path(path), 0);
    ck_assert_int_eq(weir_ckpt_fsync_path(dir), 0);
    unlink(path);
    ck_assert_int_eq(weir_ckpt_truncate(path, 0), -ENOENT);
    cleanup(dir);
}
END_TEST

START_TEST(test_ckpt_writer_hands_its_message_back)
{
    int32_t fd = -1;
    int32_t pid = weir_ckpt_fork(-1, &fd);
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        raise(SIGTERM); /* the job's signals are not the writer's: it goes on */
        weir_ckpt_child_exit(fd, "done\0 42", 8);
    }
    char out[64];
    int32_t status = 99;
    ck_assert_int_eq(weir_ckpt_wait(pid, fd, 1, out, sizeof out, &status), 9);
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq(memcmp(out, "done\0 42", 8), 0);
    ck_assert_int_eq(weir_ckpt_wait(pid, fd, 1, NULL, 0, &status), WEIR_EINVAL);
}
END_TEST

START_TEST(test_ckpt_writer_cpu_time_is_reported)
{
    int32_t fd = -1;
    int32_t pid = weir_ckpt_fork(-1, &fd);
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* at least 30 ms of CPU, as the writer's own clock counts it */
        volatile double x = 0;
        while ((double)clock() < 0.03 * CLOCKS_PER_SEC) {
            x += 1;
        }
        weir_ckpt_child_exit(fd, "", 0);
    }
    char out[8];
    int32_t status = 99;
    ck_assert_int_eq(weir_ckpt_wait(pid, fd, 1, out, sizeof out, &status), 1);
    ck_assert_int_eq(status, 0);
    ck_assert_msg(weir_ckpt_writer_cpu_ms() >= 25.0, "the writer's CPU: %.1f ms",
                  weir_ckpt_writer_cpu_ms());
}
END_TEST

START_TEST(test_ckpt_writer_killed_leaves_no_message)
{
    int32_t fd = -1;
    int32_t pid = weir_ckpt_fork(-1, &fd);
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        kill(getpid(), SIGKILL);
        weir_ckpt_child_exit(fd, "never", 5);
    }
    char out[16];
    int32_t status = 0;
    ck_assert_int_eq(weir_ckpt_wait(pid, fd, 1, out, sizeof out, &status), 1);
    ck_assert_int_eq(status, -SIGKILL);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_ckpt_writer_runs_beside_the_job_without_its_lock)
{
    char dir[256];
    make_tmp(dir, sizeof dir);
    int lock = weir_ckpt_lock(dir);
    ck_assert_int_ge(lock, 0);
    int go[2], ready[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(ready), 0);
    int32_t fd = -1;
    int32_t pid = weir_ckpt_fork(lock, &fd);
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char c;
        close(go[1]);
        close(ready[0]);
        ssize_t w = write(ready[1], "r", 1); /* fork returned here: the lock is closed */
        ssize_t r = read(go[0], &c, 1);      /* until the job says so */
        weir_ckpt_child_exit(fd, r == 1 && w == 1 ? "ok" : "no", 2);
    }
    close(go[0]);
    close(ready[1]);
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    char out[16];
    int32_t status = 0;
    ck_assert_int_eq(weir_ckpt_wait(pid, fd, 0, out, sizeof out, &status), 0); /* it runs */
    /* the writer closed its copy of the lock: the job's unlock frees it while the writer runs */
    ck_assert_int_eq(weir_ckpt_unlock(lock), 0);
    int again = weir_ckpt_lock(dir);
    ck_assert_int_ge(again, 0);
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    close(go[1]);
    ck_assert_int_eq(weir_ckpt_wait(pid, fd, 1, out, sizeof out, &status), 3);
    ck_assert_str_eq(out, "ok");
    ck_assert_int_eq(weir_ckpt_unlock(again), 0);
    cleanup(dir);
}
END_TEST

static Suite *ckpt_suite(void)
{
    Suite *s = suite_create("ckpt");
    add_case(s, "crc32_has_the_standard_check_value",
             test_ckpt_crc32_has_the_standard_check_value);
    add_case(s, "write_file_writes_every_byte_and_truncates_what_was_there",
             test_ckpt_write_file_writes_every_byte_and_truncates_what_was_there);
    add_case(s, "write_file_reports_a_full_disk", test_ckpt_write_file_reports_a_full_disk);
    add_case(s, "commit_renames_and_refuses_an_existing_name",
             test_ckpt_commit_renames_and_refuses_an_existing_name);
    add_case(s, "lock_excludes_a_second_writer_until_unlocked",
             test_ckpt_lock_excludes_a_second_writer_until_unlocked);
    add_case(s, "list_names_every_entry_and_says_what_it_needs",
             test_ckpt_list_names_every_entry_and_says_what_it_needs);
    add_case(s, "truncate_cuts_the_uncommitted_tail", test_ckpt_truncate_cuts_the_uncommitted_tail);
    add_case(s, "writer_hands_its_message_back", test_ckpt_writer_hands_its_message_back);
    add_case(s, "writer_cpu_time_is_reported", test_ckpt_writer_cpu_time_is_reported);
    add_case(s, "writer_killed_leaves_no_message", test_ckpt_writer_killed_leaves_no_message);
    add_case(s, "writer_runs_beside_the_job_without_its_lock",
             test_ckpt_writer_runs_beside_the_job_without_its_lock);
    return s;
}

int main(void)
{
    return run_suite(ckpt_suite());
}
