/* Several real processes share one real SQLite file: writers store tuning
 * results and measurements while readers query, all starting at once on a
 * file that does not exist yet.  No row may be lost and no call may fail with
 * 'database is locked'.  Several threads of one process share one handle (the
 * tuner's compile pool does): no call may fail there either. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache.h"
#include "util/err.h"
#include "support/records.h"
#include "support/temp_dir.h"

#define WRITERS 6
#define ROWS_PER_WRITER 200
#define READERS 2

static char g_dir[64];
static char g_db[128];

static int make_dir(void **state) {
    (void)state;
    return temp_dir_make_db(g_dir, sizeof g_dir, "mxattn-concurrent", g_db, sizeof g_db, "shared/mxattn.db");
}

static int remove_dir(void **state) {
    (void)state;
    return temp_dir_remove(g_dir);
}

static mx_tune_key key_for(int writer, int row) {
    mx_tune_key k;
    tune_key_f16(&k, "NVIDIA H200");
    k.sm_count = 132;
    k.compute_capability = 90;
    k.driver_version = 12040;
    k.head_dim = 64 + writer;
    k.seq_bucket = row;
    return k;
}

/* Children report on stderr and by exit status; cmocka lives in the parent. */
static int child_fail(const char *who, int i, mxattn_status s) {
    fprintf(stderr, "%s at %d: %s: %s\n", who, i, mxattn_status_string(s), mx_error_message());
    return 1;
}

static int wait_for_start(int gate) {
    char byte;
    return read(gate, &byte, 1) == 0 ? 0 : -1; /* EOF: the parent closed the gate */
}

static int run_writer(int writer) {
    mx_cache *c;
    mxattn_status s = mx_cache_open(g_db, &c);
    if (s) return child_fail("writer open", writer, s);
    if (mx_cache_recovered(c)) { fprintf(stderr, "writer %d: %s\n", writer, mx_cache_recovered(c)); return 1; }
    for (int i = 0; i < ROWS_PER_WRITER; i++) {
        mx_tune_key key = key_for(writer, i);
        mx_tune_result r = {.median_ms = 1.0 + i, .tops = 100, .default_ms = 2.0 + i};
        snprintf(r.config, sizeof r.config, "block_m=64 writer=%d row=%d", writer, i);
        mx_measurement m = {.status = MX_MEASURE_OK, .median_ms = 1.0 + i, .spread = 0.01, .registers = 96};
        snprintf(m.config, sizeof m.config, "block_m=64 row=%d", i);
        if ((s = mx_cache_put_tune(c, &key, &r))) return child_fail("put_tune", i, s);
        if ((s = mx_cache_add_measurement(c, &key, &m))) return child_fail("add_measurement", i, s);
    }
    mx_cache_close(c);
    return 0;
}

/* Readers query while writers write; counts only ever grow. */
static int run_reader(int reader) {
    mx_cache *c;
    mxattn_status s = mx_cache_open(g_db, &c);
    if (s) return child_fail("reader open", reader, s);
    if (mx_cache_recovered(c)) { fprintf(stderr, "reader %d: %s\n", reader, mx_cache_recovered(c)); return 1; }
    long last = 0;
    for (int i = 0; i < 60; i++) {
        mx_cache_counts n;
        mx_tune_filter f;
        mx_tune_row *rows;
        int count;
        mx_tune_filter_init(&f);
        f.head_dim = 64 + (i % WRITERS);
        if ((s = mx_cache_count(c, &n))) return child_fail("count", i, s);
        if (n.tune_results < last) { fprintf(stderr, "reader saw rows vanish\n"); return 1; }
        last = n.tune_results;
        if ((s = mx_cache_query(c, &f, &rows, &count))) return child_fail("query", i, s);
        free(rows);
        usleep(2000);
    }
    mx_cache_close(c);
    return 0;
}

static pid_t spawn(const int gate[2], int (*body)(int), int arg) {
    pid_t pid = fork();
    if (pid == 0) {
        close(gate[1]); /* else the gate would never see EOF */
        if (wait_for_start(gate[0]) != 0) _exit(3);
        _exit(body(arg));
    }
    return pid;
}

static void test_writers_and_readers_lose_nothing(void **state) {
    (void)state;
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t pids[WRITERS + READERS];
    for (int w = 0; w < WRITERS; w++) pids[w] = spawn(gate, run_writer, w);
    for (int r = 0; r < READERS; r++) pids[WRITERS + r] = spawn(gate, run_reader, r);
    close(gate[1]); /* everyone starts together, on a file that does not exist yet */
    close(gate[0]);
    for (int i = 0; i < WRITERS + READERS; i++) {
        assert_true(pids[i] > 0);
        int status;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }

    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    mx_cache_counts n;
    assert_int_equal(mx_cache_count(c, &n), MXATTN_OK);
    assert_int_equal(n.tune_results, WRITERS * ROWS_PER_WRITER);
    assert_int_equal(n.measurements, WRITERS * ROWS_PER_WRITER);
    for (int w = 0; w < WRITERS; w++) {
        for (int i = 0; i < ROWS_PER_WRITER; i++) {
            mx_tune_key key = key_for(w, i);
            mx_tune_result got;
            char expect[64];
            assert_int_equal(mx_cache_get_tune(c, &key, &got), MXATTN_OK);
            snprintf(expect, sizeof expect, "block_m=64 writer=%d row=%d", w, i);
            assert_string_equal(got.config, expect);
        }
    }
    mx_cache_check_report report;
    assert_int_equal(mx_cache_check(c, &report), MXATTN_OK);
    assert_true(report.integrity_ok);
    mx_cache_close(c);
}

#define THREADS 4
#define KERNELS_PER_THREAD 100

typedef struct {
    mx_cache *cache;
    int thread, failures;
} thread_job;

/* Stores kernels and measurements through the shared handle, as the compile
 * pool and the measuring thread of one tuning run do. */
static void *run_thread(void *arg) {
    thread_job *job = arg;
    unsigned char cubin[64];
    for (int i = 0; i < KERNELS_PER_THREAD; i++) {
        mx_kernel_record rec;
        memset(&rec, 0, sizeof rec);
        snprintf(rec.key, sizeof rec.key, "%02x%062x", job->thread, i);
        strcpy(rec.arch, "sm_90a");
        strcpy(rec.kernel_names, "mxattn_f16");
        memset(cubin, job->thread * 31 + i, sizeof cubin);
        rec.cubin = cubin;
        rec.cubin_size = sizeof cubin;
        if (mx_cache_put_kernel(job->cache, &rec) != MXATTN_OK) job->failures++;
        mx_tune_key key = key_for(job->thread, 0);
        mx_measurement m;
        memset(&m, 0, sizeof m);
        snprintf(m.config, sizeof m.config, "block_m=64 thread=%d i=%d", job->thread, i);
        strcpy(m.status, MX_MEASURE_OK);
        m.median_ms = 1 + i;
        if (mx_cache_add_measurement(job->cache, &key, &m) != MXATTN_OK) job->failures++;
        mx_kernel_record got;
        if (mx_cache_get_kernel(job->cache, rec.key, "sm_90a", &got) != MXATTN_OK) job->failures++;
        else mx_kernel_record_release(&got);
    }
    return NULL;
}

static void test_threads_share_one_handle(void **state) {
    (void)state;
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    pthread_t threads[THREADS];
    thread_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (thread_job){.cache = c, .thread = t};
        assert_int_equal(pthread_create(&threads[t], NULL, run_thread, &jobs[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(threads[t], NULL), 0);
        assert_int_equal(jobs[t].failures, 0);
    }
    mx_cache_counts n;
    assert_int_equal(mx_cache_count(c, &n), MXATTN_OK);
    assert_int_equal(n.kernels, THREADS * KERNELS_PER_THREAD);
    assert_int_equal(n.measurements, THREADS * KERNELS_PER_THREAD);
    mx_cache_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_writers_and_readers_lose_nothing, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_threads_share_one_handle, make_dir, remove_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
