/* `mxattn info`: what this machine offers mxattn.  A missing driver, GPU or
 * NVRTC is part of the answer, not a failure: the command exits 0 and says
 * why, so it is the first thing to run when something else fails. */
#include "cli.h"
#include <string.h>
#include <sys/stat.h>

#define MAX_GPUS 64

/* Everything found, gathered before printing so both formats share it. */
typedef struct {
    char nvrtc_version[16], nvrtc_error[1024];
    int driver_version;                /* 0: no driver */
    char driver_error[1024];
    int gpu_count;
    mxattn_device_info gpus[MAX_GPUS];
    char gpu_error[1024];              /* why there is no GPU list */
    char db_path[4096], db_error[512];
    int db_exists;
} machine_info;

static void copy_error(char *out, size_t len) { snprintf(out, len, "%s", mxattn_last_error()); }

static void gather(machine_info *m) {
    memset(m, 0, sizeof *m);
    if (mxattn_nvrtc_version(m->nvrtc_version, sizeof m->nvrtc_version) != MXATTN_OK)
        copy_error(m->nvrtc_error, sizeof m->nvrtc_error);
    if (mxattn_driver_version(&m->driver_version) != MXATTN_OK)
        copy_error(m->driver_error, sizeof m->driver_error);
    int count = 0;
    if (mxattn_device_count(&count) != MXATTN_OK) {
        copy_error(m->gpu_error, sizeof m->gpu_error);
    } else {
        for (int i = 0; i < count && i < MAX_GPUS; i++) {
            if (mxattn_device_get_info(i, &m->gpus[m->gpu_count]) != MXATTN_OK) {
                copy_error(m->gpu_error, sizeof m->gpu_error);
                break;
            }
            m->gpu_count++;
        }
    }
    struct stat sb;
    if (mxattn_cache_default_path(m->db_path, sizeof m->db_path) != MXATTN_OK)
        copy_error(m->db_error, sizeof m->db_error);
    else
        m->db_exists = stat(m->db_path, &sb) == 0;
}

static void print_text(const machine_info *m) {
    printf("mxattn    %s\n", mxattn_version());
    if (*m->nvrtc_version) printf("nvrtc     %s\n", m->nvrtc_version);
    else printf("nvrtc     none: %s\n", m->nvrtc_error);
    if (m->driver_version)
        printf("driver    CUDA %d.%d\n", m->driver_version / 1000, m->driver_version % 1000 / 10);
    else printf("driver    none: %s\n", m->driver_error);
    for (int i = 0; i < m->gpu_count; i++) {
        const mxattn_device_info *d = &m->gpus[i];
        printf("gpu %-5d %s, %s (compute %d.%d), %d SMs, %.1f GiB, %d KiB shared memory per block "
               "(opt-in), %d MiB L2\n", d->ordinal, d->name, d->arch, d->cc_major, d->cc_minor,
               d->sm_count, (double)d->memory_bytes / (1 << 30), d->smem_per_block_optin / 1024,
               d->l2_bytes >> 20);
    }
    if (*m->gpu_error) printf("gpu       none: %s\n", m->gpu_error);
    if (*m->db_error) printf("database  none: %s\n", m->db_error);
    else printf("database  %s%s\n", m->db_path, m->db_exists ? "" : " (not created yet)");
}

/* A JSON string literal: quotes, backslashes and control characters escaped
 * (messages carry paths and dlerror() text). */
static void json_string(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p == '\n') fputs("\\n", stdout);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

/* "key": "value" or "key": null when value is empty. */
static void json_field(const char *key, const char *value, int last) {
    printf("  \"%s\": ", key);
    if (*value) json_string(value);
    else fputs("null", stdout);
    fputs(last ? "\n" : ",\n", stdout);
}

static void print_json(const machine_info *m) {
    char driver[32] = "";
    if (m->driver_version)
        snprintf(driver, sizeof driver, "%d.%d", m->driver_version / 1000, m->driver_version % 1000 / 10);
    printf("{\n");
    json_field("mxattn", mxattn_version(), 0);
    json_field("nvrtc", m->nvrtc_version, 0);
    json_field("nvrtc_error", m->nvrtc_error, 0);
    json_field("driver", driver, 0);
    json_field("driver_error", m->driver_error, 0);
    printf("  \"gpus\": [");
    for (int i = 0; i < m->gpu_count; i++) {
        const mxattn_device_info *d = &m->gpus[i];
        printf("%s\n    {\"ordinal\": %d, \"name\": ", i ? "," : "", d->ordinal);
        json_string(d->name);
        printf(", \"arch\": \"%s\", \"compute_capability\": \"%d.%d\", \"sm_count\": %d, "
               "\"memory_bytes\": %zu, \"smem_per_block_optin\": %d, \"smem_per_sm\": %d, "
               "\"regs_per_sm\": %d, \"l2_bytes\": %d}", d->arch, d->cc_major, d->cc_minor,
               d->sm_count, d->memory_bytes, d->smem_per_block_optin, d->smem_per_sm,
               d->regs_per_sm, d->l2_bytes);
    }
    printf("%s],\n", m->gpu_count ? "\n  " : "");
    json_field("gpu_error", m->gpu_error, 0);
    json_field("database", m->db_path, 0);
    printf("  \"database_exists\": %s,\n", m->db_exists ? "true" : "false");
    json_field("database_error", m->db_error, 1);
    printf("}\n");
}

static void usage(void) {
    printf("usage: mxattn info [--json]\n\n"
           "Shows the mxattn version, the NVRTC and CUDA driver versions, every GPU\n"
           "(name, arch, SMs, memory, shared memory) and the tuning database's path.\n"
           "A missing driver, GPU or NVRTC is reported with the reason; the exit\n"
           "status is 0 all the same.\n\n"
           "  --json   one JSON object instead of text\n");
}

int cmd_info(int argc, char **argv) {
    enum { OPT_JSON = 1 };
    static const cli_option options[] = {{"json", OPT_JSON, CLI_SWITCH}};
    int json = 0;
    cli_parser ps;
    cli_parser_init(&ps, "info", argc, argv, options, 1);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        if (id == CLI_HELP) { usage(); return 0; }
        if (id == CLI_ERROR) return 2;
        if (id == CLI_ARG) return cli_usage_error("info", "unexpected argument '%s'", ps.value);
        json = 1;
    }
    static machine_info m;  /* 64 device records: too large for the stack */
    gather(&m);
    if (json) print_json(&m);
    else print_text(&m);
    return 0;
}
