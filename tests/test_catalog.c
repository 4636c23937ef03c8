/* The families and kernel parameters come from the templates' one table
 * (mxattn_families, mxattn_params), not from a copy in C: a family added to
 * templates/space.lua is a family to the library at once, and the numerics
 * reference knows a recipe for each of the templates' families. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "mxattn.h"
#include "api/catalog.h"
#include "numerics/numerics.h"
#include "support/temp_dir.h"

static const mxattn_param *param(const char *name) {
    const mxattn_param *p = NULL;
    int n = 0;
    assert_int_equal(mxattn_params(&p, &n), MXATTN_OK);
    for (int i = 0; i < n; i++)
        if (!strcmp(p[i].name, name)) return &p[i];
    fail_msg("no parameter %s", name);
    return NULL;
}

static void test_families_are_the_family_parameter_s_values(void **state) {
    const char *const *names = NULL;
    int n = 0;
    assert_int_equal(mxattn_families(&names, &n), MXATTN_OK);
    assert_true(n >= 6);
    assert_string_equal(names[0], "f16");
    assert_null(names[n]);
    char joined[512] = "";
    for (int i = 0; i < n; i++) {
        strcat(joined, i ? "|" : "");
        strcat(joined, names[i]);
    }
    assert_string_equal(joined, param("family")->legal);
    assert_int_equal(mxattn_families(NULL, &n), MXATTN_ERROR_NULL_POINTER);
}

/* numerics sits below the templates and keeps its own recipe table: the two
 * lists must name the same families, in the same order. */
static void test_the_reference_has_a_recipe_for_each_family(void **state) {
    const char *const *names = NULL;
    int n = 0;
    assert_int_equal(mxattn_families(&names, &n), MXATTN_OK);
    assert_int_equal(mx_ref_family_count(), n);
    for (int i = 0; i < n; i++) {
        assert_string_equal(mx_ref_family_name(i), names[i]);
        mx_ref_config c;
        assert_int_equal(mx_ref_family_config(names[i], 0, 1, MXATTN_BF16, &c), MXATTN_OK);
    }
    assert_null(mx_ref_family_name(n));
}

static void test_params_say_role_legal_values_and_families(void **state) {
    const mxattn_param *p = NULL;
    int n = 0;
    assert_int_equal(mxattn_params(&p, &n), MXATTN_OK);
    assert_true(n > 10);
    for (int i = 0; i < n; i++) {
        assert_true(!strcmp(p[i].role, "shape") || !strcmp(p[i].role, "problem") || !strcmp(p[i].role, "knob"));
        assert_true(*p[i].legal);
        assert_true(*p[i].help);
    }
    const mxattn_param *hd = param("head_dim"), *bn = param("block_n"), *vt = param("v_terms"), *lse = param("lse");
    assert_true(hd->is_range && hd->min == 8 && hd->max == 256);
    assert_string_equal(hd->legal, "8..256");
    assert_string_equal(bn->role, "knob");
    assert_false(bn->is_range);
    assert_string_equal(vt->families, "int8-fp8");
    assert_string_equal(param("family")->families, "");
    assert_true(lse->is_bool);
    assert_string_equal(lse->default_value, "0");
}

static mxattn_problem problem(const char *family) {
    mxattn_problem p;
    mxattn_problem_init(&p, family, 64);
    p.seq_q = p.seq_k = 128;
    return p;
}

/* A family, and which family reads a parameter, are the templates' word. */
static void test_a_family_added_to_the_templates_is_one_to_the_library(void **state) {
    mxattn_problem p = problem("f16x");
    assert_int_equal(mxattn_problem_check(&p), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mxattn_last_error(), "unknown family 'f16x': one of f16, int8-f16, int8-fp8"));
    p = problem("f16");
    p.v_terms = 2;
    assert_int_equal(mxattn_problem_check(&p), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mxattn_last_error(), "only family int8-fp8 reads a second V term"));

    char dir[256], cmd[1024];
    assert_int_equal(temp_dir_make(dir, sizeof dir, "mxattn-catalog"), 0);
    snprintf(cmd, sizeof cmd, "cp -r '%s/templates/.' '%s/' && sed -i "
             "-e 's/\"nvfp4-int8qk\" }/\"nvfp4-int8qk\", \"f16x\" }/' "
             "-e 's/families = { \\[\"int8-fp8\"\\] = true }/families = { f16 = true, [\"int8-fp8\"] = true }/' "
             "'%s/space.lua' && grep -q f16x '%s/space.lua'", MXATTN_SOURCE_DIR, dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    setenv("MXATTN_TEMPLATE_DIR", dir, 1);
    mx_catalog_reset();
    const char *const *names = NULL;
    int n = 0;
    assert_int_equal(mxattn_families(&names, &n), MXATTN_OK);
    assert_string_equal(names[n - 1], "f16x");
    p = problem("f16x");
    assert_int_equal(mxattn_problem_check(&p), MXATTN_OK);
    p = problem("f16");
    p.v_terms = 2;
    assert_int_equal(mxattn_problem_check(&p), MXATTN_OK);
    unsetenv("MXATTN_TEMPLATE_DIR");
    mx_catalog_reset();
    temp_dir_remove(dir);
    p = problem("f16x");
    assert_int_equal(mxattn_problem_check(&p), MXATTN_ERROR_INVALID_VALUE);
}

/* Templates that cannot be read are a TEMPLATE error, and the next call
 * tries again rather than keeping the failure. */
static void test_a_failed_read_is_retried(void **state) {
    char dir[256];
    assert_int_equal(temp_dir_make(dir, sizeof dir, "mxattn-catalog-empty"), 0);
    setenv("MXATTN_TEMPLATE_DIR", dir, 1);
    mx_catalog_reset();
    const char *const *names = NULL;
    int n = 0;
    assert_int_equal(mxattn_families(&names, &n), MXATTN_ERROR_TEMPLATE);
    assert_null(names);
    unsetenv("MXATTN_TEMPLATE_DIR");
    assert_int_equal(mxattn_families(&names, &n), MXATTN_OK);
    assert_string_equal(names[0], "f16");
    temp_dir_remove(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families_are_the_family_parameter_s_values),
        cmocka_unit_test(test_the_reference_has_a_recipe_for_each_family),
        cmocka_unit_test(test_params_say_role_legal_values_and_families),
        cmocka_unit_test(test_a_family_added_to_the_templates_is_one_to_the_library),
        cmocka_unit_test(test_a_failed_read_is_retried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
