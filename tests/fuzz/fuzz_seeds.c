/* Writes the seed inputs of the fuzz targets into DIR/<target>/:
 *   problem/     problems in fuzz_common.h's encoding (fuzz_problem)
 *   candidates/  one problem a family, in the same encoding (fuzz_candidates: a
 *                call can take seconds, so its seeds are few)
 *   config/      a problem byte and a configuration: every candidate the
 *                library lists for a few problems, and near misses of them
 *   import/      an export made by the library (tuning rows, measurements,
 *                kernels), and the same file repacked in 512-byte pages so
 *                that a mutation is likelier to land in a row than in slack
 * tests/fuzz/run.sh writes them afresh before every run, with the library
 * being fuzzed, so that the export always has this build's schema;
 * tests/fuzz/corpus/ holds what this program wrote for problem/, candidates/
 * and config/, and is where an input that once broke something is kept. */
#include "fuzz_common.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cache/cache.h"
#include "support/records.h"

static char g_out[512];

static void write_seed(const char *sub, int n, const void *data, size_t size) {
    char path[640];
    snprintf(path, sizeof path, "%s/%s", g_out, sub);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) fz_fail("mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/seed-%03d", g_out, sub, n);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) fz_fail("cannot write %s", path);
}

/* The inverse of fz_problem. */
static size_t encode(const mxattn_problem *p, uint8_t sel, uint8_t *out) {
    size_t n = 0;
    out[n++] = sel;
    int32_t ints[] = { p->head_dim, p->batch, p->heads_q, p->heads_kv, p->seq_q, p->seq_k,
                       (int32_t)p->causal, (int32_t)p->dtype, (int32_t)p->out_dtype, (int32_t)p->layout };
    memcpy(out + n, ints, sizeof ints); n += sizeof ints;
    const mxattn_strides *s[] = { &p->q_strides, &p->k_strides, &p->v_strides, &p->o_strides };
    for (int i = 0; i < 4; i++) {
        int64_t v[3] = { s[i]->batch, s[i]->head, s[i]->seq };
        memcpy(out + n, v, sizeof v); n += sizeof v;
    }
    memcpy(out + n, &p->sm_scale, 4); n += 4;
    int32_t flags[] = { p->return_lse, p->direct_p, p->smooth_k, p->v_terms };
    memcpy(out + n, flags, sizeof flags); n += sizeof flags;
    return n;
}

static void problem_seeds(void) {
    int n = 0;
    uint8_t buf[FZ_PROBLEM_BYTES + 16];
    static const int dims[] = { 64, 128, 80, 256 };
    for (int fam = 0; fam < 6; fam++)
        for (int d = 0; d < 4; d++) {
            mxattn_problem p;
            mxattn_problem_init(&p, FZ_FAMILIES[fam], dims[d]);
            p.batch = 1 + d; p.heads_q = 8; p.heads_kv = d % 2 ? 2 : 8;
            p.seq_q = 1 + 300 * d; p.seq_k = 1000 + 17 * fam;
            p.causal = (mxattn_causal)((fam + d) % 3);
            p.dtype = p.out_dtype = (mxattn_dtype)(d % 2);
            p.layout = (mxattn_layout)(fam % 2);
            p.return_lse = d == 1;
            if (fam == 2 && d == 1) p.v_terms = 2;
            if (d == 2) p.sm_scale = 0.125f;
            if (d == 3) { /* padded explicit strides, BHND */
                p.layout = MXATTN_LAYOUT_BHND;
                mxattn_strides q = { (int64_t)p.heads_q * p.seq_q * 320, (int64_t)p.seq_q * 320, 320 };
                p.q_strides = p.o_strides = q;
            }
            size_t len = encode(&p, (uint8_t)fam, buf);
            write_seed("problem", n++, buf, len);
            if (d == 1) write_seed("candidates", fam, buf, len);
        }
}

static void config_seeds(mxattn_ctx *ctx) {
    int n = 0;
    uint8_t buf[1024];
    for (int fam = 0; fam < 6; fam++) {
        mxattn_problem p;
        mxattn_problem_init(&p, FZ_FAMILIES[fam], 128);
        p.batch = 2; p.heads_q = 8; p.heads_kv = 2; p.seq_q = 300; p.seq_k = 1000;
        char *configs[3] = { 0 };
        int count = 0;
        if (mxattn_candidates(ctx, &p, configs, 3, &count) != MXATTN_OK)
            fz_fail("mxattn_candidates(%s): %s", FZ_FAMILIES[fam], mxattn_last_error());
        for (int i = 0; i < 3 && i < count; i++) {
            /* The selector byte fuzz_config reads: this family at D=128. */
            buf[0] = (uint8_t)(fam + 6);
            size_t len = strlen(configs[i]);
            memcpy(buf + 1, configs[i], len);
            write_seed("config", n++, buf, 1 + len);
            mxattn_free(configs[i]);
        }
    }
    static const char *const near[] = { "block_m:64", "block_m = 64", "block_m64", "block_m=64 block_m=128",
                                        "block_m=abc", "variant=tensor", "v_terms=3", "block_m=64 junk" };
    for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
        buf[0] = 6;
        memcpy(buf + 1, near[i], strlen(near[i]));
        write_seed("config", n++, buf, 1 + strlen(near[i]));
    }
}

static void import_seed(void) {
    char dir[64] = "/tmp/mxattn-fuzz-seeds-XXXXXX", db[128], ex[128], path[640];
    if (!mkdtemp(dir)) fz_fail("mkdtemp");
    snprintf(db, sizeof db, "%s/src.db", dir);
    snprintf(ex, sizeof ex, "%s/export.mxdb", dir);
    mx_cache *c = NULL;
    if (mx_cache_open(db, &c) != MXATTN_OK) fz_fail("mx_cache_open: %s", mxattn_last_error());
    for (int i = 0; i < 3; i++) {
        mx_tune_key k;
        memset(&k, 0, sizeof k);
        snprintf(k.gpu_name, sizeof k.gpu_name, "NVIDIA H200");
        k.sm_count = 132; k.compute_capability = 90; k.driver_version = 12040; k.nvrtc_version = 12040;
        snprintf(k.mxattn_version, sizeof k.mxattn_version, "%s", mxattn_version());
        memset(k.template_hash, 'a', 64);
        snprintf(k.family, sizeof k.family, "%s", i == 2 ? "int8-fp8" : "f16");
        k.head_dim = i ? 128 : 64;
        snprintf(k.dtype, sizeof k.dtype, "bf16");
        snprintf(k.out_dtype, sizeof k.out_dtype, "bf16");
        snprintf(k.layout, sizeof k.layout, "bhnd");
        k.causal = i % 2; k.gqa = 4; k.seq_bucket = 4096; k.q_bucket = i ? 4096 : 1;
        mx_tune_result r = tune_result_of("block_m=128 block_n=64 warps=8 stages=2", 0.5 + i, 0.8 + i, 400);
        if (mx_cache_put_tune(c, &k, &r) != MXATTN_OK) fz_fail("put_tune: %s", mxattn_last_error());
        mx_measurement m = measurement_of(r.config, MX_MEASURE_OK, r.median_ms, 0.01, 128);
        if (mx_cache_add_measurement(c, &k, &m) != MXATTN_OK) fz_fail("add_measurement: %s", mxattn_last_error());
    }
    for (int i = 0; i < 2; i++) {
        static unsigned char blob[2][256];
        mx_kernel_record k = kernel_record_of(blob[i], sizeof blob[i], i);
        if (mx_cache_put_kernel(c, &k) != MXATTN_OK) fz_fail("put_kernel: %s", mxattn_last_error());
    }
    mx_sign_secret key;
    fz_signer(&key);
    if (mx_cache_export(c, ex, 1, &key) != MXATTN_OK) fz_fail("export: %s", mxattn_last_error());
    mx_cache_close(c);
    size_t len = 0;
    FILE *f = fopen(ex, "rb");
    if (!f) fz_fail("cannot read %s", ex);
    static uint8_t data[1 << 20];
    len = fread(data, 1, sizeof data, f);
    fclose(f);
    write_seed("import", 0, data, len);
    sqlite3 *repack = NULL;
    if (sqlite3_open_v2(ex, &repack, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_exec(repack, "PRAGMA journal_mode=DELETE; PRAGMA page_size=512; VACUUM;", NULL, NULL, NULL) != SQLITE_OK)
        fz_fail("repacking the export: %s", sqlite3_errmsg(repack));
    sqlite3_close(repack);
    if (!(f = fopen(ex, "rb"))) fz_fail("cannot read %s", ex);
    len = fread(data, 1, sizeof data, f);
    fclose(f);
    write_seed("import", 1, data, len);
    const char *const leftovers[] = { "src.db", "src.db-wal", "src.db-shm", "export.mxdb" };
    for (size_t i = 0; i < 4; i++) { snprintf(path, sizeof path, "%s/%s", dir, leftovers[i]); unlink(path); }
    rmdir(dir);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    snprintf(g_out, sizeof g_out, "%s", argv[1]);
    if (mkdir(g_out, 0755) != 0 && errno != EEXIST) fz_fail("mkdir %s", g_out);
    problem_seeds();
    config_seeds(fz_context());
    import_seed();
    mxattn_destroy(fz_context());
    return 0;
}
