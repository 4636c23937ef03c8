#include "support/ref_parallel.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"

typedef struct {
    const mx_ref_shape *s;
    const mx_ref_config *cfg;
    const float *q, *k, *v;
    double *o, *lse;
    int next_group, groups;     /* the shared work counter (under lock) */
    pthread_mutex_t lock;
    mxattn_status st;           /* the first failure, and its message */
    char message[512];
} shared_work;

/* One group: batch b, KV head h, with its heads_q / heads_kv Q heads. */
static mxattn_status run_group(const shared_work *w, int g) {
    const mx_ref_shape *s = w->s;
    int per_kv = s->heads_q / s->heads_kv, b = g / s->heads_kv, h = g % s->heads_kv;
    mx_ref_shape one = *s;
    one.batch = 1;
    one.heads_q = per_kv;
    one.heads_kv = 1;
    size_t qd = (size_t)s->seq_q * s->head_dim, kd = (size_t)s->seq_k * s->head_dim;
    size_t q_head = (size_t)b * s->heads_q + (size_t)h * per_kv, kv_head = (size_t)b * s->heads_kv + h;
    const float *q = w->q + q_head * qd, *k = w->k + kv_head * kd, *v = w->v + kv_head * kd;
    double *o = w->o + q_head * qd, *lse = w->lse ? w->lse + q_head * (size_t)s->seq_q : NULL;
    return w->cfg ? mx_ref_pipeline_attention(&one, w->cfg, q, k, v, o, lse, NULL)
                  : mx_ref_attention(&one, q, k, v, o, lse);
}

static void *worker(void *arg) {
    shared_work *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        int g = w->st == MXATTN_OK && w->next_group < w->groups ? w->next_group++ : -1;
        pthread_mutex_unlock(&w->lock);
        if (g < 0) return NULL;
        mxattn_status st = run_group(w, g);
        if (st != MXATTN_OK) {
            pthread_mutex_lock(&w->lock);
            if (w->st == MXATTN_OK) {
                w->st = st;
                snprintf(w->message, sizeof w->message, "%s", mxattn_last_error());   /* thread-local */
            }
            pthread_mutex_unlock(&w->lock);
        }
    }
}

mxattn_status ref_attention_parallel(const mx_ref_shape *s, const mx_ref_config *cfg, const float *q, const float *k,
                                     const float *v, double *o, double *lse, int threads) {
    /* The whole call validates the shape (and a bad one fails as the serial call would). */
    mxattn_status st = mx_ref_shape_check(s);
    if (st != MXATTN_OK || !q || !k || !v || !o) {
        return cfg ? mx_ref_pipeline_attention(s, cfg, q, k, v, o, lse, NULL) : mx_ref_attention(s, q, k, v, o, lse);
    }
    shared_work w = {.s = s, .cfg = cfg, .q = q, .k = k, .v = v, .o = o, .lse = lse,
                     .groups = s->batch * s->heads_kv, .st = MXATTN_OK};
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads > w.groups) threads = w.groups;
    if (threads > 64) threads = 64;
    if (threads <= 1) {
        for (int g = 0; g < w.groups && st == MXATTN_OK; g++) st = run_group(&w, g);
        return st;
    }
    pthread_mutex_init(&w.lock, NULL);
    pthread_t ids[64];
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&ids[started], NULL, worker, &w) != 0) break;
    if (started == 0) worker(&w);   /* no thread could start: do it here */
    for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
    pthread_mutex_destroy(&w.lock);
    if (w.st != MXATTN_OK) return mx_fail(w.st, "%s", w.message);
    return MXATTN_OK;
}
