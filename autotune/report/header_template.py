"""The C text of a tuned-config header, filled in by :func:`autotune.report.header.render_header`.

``str.format`` fields: ``kernel``, ``p`` (``autotune_<kernel>``, the prefix of every C name),
``P`` (``AUTOTUNE_<KERNEL>``, of every macro), the counts ``ndims``, ``nmacros``,
``nentries``, ``ndispatches``, ``max_shapes``, ``max_configs``, and the rendered pieces
``provenance``, ``dims_list``, ``dims_example``, ``dim_indices``, ``macro_indices``,
``dim_names``, ``macro_names``, ``default``, ``default_comment``, ``entries``, ``dispatches``,
``dispatch_shapes``, ``dispatch_configs``, ``dispatch_regrets`` and ``dispatch_nodes``. Literal braces of the C code
are doubled.
"""

__all__ = ["TEMPLATE"]

TEMPLATE = """\
/* Tuned configs of kernel {kernel}: written by `autotune export --header`; do not edit.
{provenance} *
 * const int *m = {p}_select(device_name, cc_major, cc_minor, dtype, dims, &rung);
 *   device_name: cudaDeviceProp.name; cc_major, cc_minor: its compute capability;
 *   dtype: "float32", "float64", ...; dims: long long[{P}_NUM_DIMS] ({dims_list});
 *   rung (may be NULL): AUTOTUNE_RUNG_EXACT, _DISPATCH, _SAME_ARCH or _DEFAULT.
 *   m: {P}_NUM_MACROS ints, m[{P}_MACRO_<NAME>] is macro NAME's value.
 * Ladder: this device model (same name and compute capability), exact shape, else its dispatch
 * (a few configs and the rule cross-validation kept, autotune/dispatch/: the k nearest tuned
 * shapes by log-distance over the dims, among the configs faster than the default by more than
 * the margin at each of them the least log regret there weighted 1/(distance + eps), none: the
 * default; or a decision tree over sums of the dims' logs; or the config of least regret at the
 * nearest tuned shape), or, for records
 * without a dispatch, the nearest shape; else another device of the same compute capability,
 * nearest shape; else the kernel's default. Only configs of the asked dtype are used.
 * Example: long long dims[{P}_NUM_DIMS] = {{{dims_example}}};
 */
#ifndef AUTOTUNE_TUNED_H_{kernel}
#define AUTOTUNE_TUNED_H_{kernel}

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef AUTOTUNE_RUNG_EXACT
#define AUTOTUNE_RUNG_EXACT 0
#define AUTOTUNE_RUNG_NEAREST_SHAPE 1
#define AUTOTUNE_RUNG_SAME_ARCH 2
#define AUTOTUNE_RUNG_DEFAULT 3
#endif
#ifndef AUTOTUNE_RUNG_DISPATCH
#define AUTOTUNE_RUNG_DISPATCH 1 /* the second rung: AUTOTUNE_RUNG_NEAREST_SHAPE is its former name */
#endif

#define {P}_NUM_DIMS {ndims}
#define {P}_NUM_MACROS {nmacros}
#define {P}_NUM_ENTRIES {nentries}
#define {P}_NUM_DISPATCHES {ndispatches}
#define {P}_DISPATCH_MAX_SHAPES {max_shapes}
#define {P}_DISPATCH_MAX_CONFIGS {max_configs}
{dim_indices}{macro_indices}
static const char *const {p}_dim_names[{P}_NUM_DIMS] = {{{dim_names}}};
static const char *const {p}_macro_names[{P}_NUM_MACROS] = {{{macro_names}}};

/* The kernel's default config: {default_comment} */
static const int {p}_default[{P}_NUM_MACROS] = {{{default}}};

typedef struct {{
    const char *device;      /* cudaDeviceProp.name */
    int cc_major, cc_minor;  /* compute capability */
    const char *dtype;
    long long dims[{P}_NUM_DIMS];
    int macros[{P}_NUM_MACROS];
}} {p}_entry;

static const {p}_entry {p}_entries[] = {{
{entries}}};

/* Log-distance of two shapes (dims below 1 count as 1). */
static inline double {p}_distance(const long long *a, const long long *b)
{{
    double sum = 0.0;
    int i;
    for (i = 0; i < {P}_NUM_DIMS; ++i) {{
        const double r = log((double)(a[i] < 1 ? 1 : a[i]) / (double)(b[i] < 1 ? 1 : b[i]));
        sum += r * r;
    }}
    return sqrt(sum);
}}

/* The nearest entry of dtype whose device is (same_device) or is not this model but has
   compute capability major.minor; NULL if none. */
static inline const {p}_entry *{p}_nearest(
    const char *device_name, int major, int minor, const char *dtype, const long long *dims, int same_device)
{{
    const {p}_entry *best = 0;
    double best_distance = 0.0;
    int i;
    for (i = 0; i < {P}_NUM_ENTRIES; ++i) {{
        const {p}_entry *e = &{p}_entries[i];
        const int model = strcmp(e->device, device_name) == 0 && e->cc_major == major && e->cc_minor == minor;
        double d;
        if (strcmp(e->dtype, dtype) != 0 || e->cc_major != major || e->cc_minor != minor || model != same_device)
            continue;
        d = {p}_distance(e->dims, dims);
        if (!best || d < best_distance - 1e-9) {{
            best = e;
            best_distance = d;
        }}
    }}
    return best;
}}

/* One device model's dispatch: its tuned shapes, configs (the first is the default) and the log
   regret of each config at each shape (row-major, shapes by configs). */
typedef struct {{
    const char *device;
    int cc_major, cc_minor;
    const char *dtype;
    int first_shape, num_shapes, first_config, num_configs, first_regret, k;
    double eps, margin_log;
    int kind, first_node; /* kind: 0 nearest neighbours (k), 1 decision tree (its nodes), 2 nearest shape */
}} {p}_dispatch;

/* A decision tree's node: a split goes left where sum coef[i] * log(dims[i]) <= threshold; a
   leaf (left < 0) answers config (an index into its dispatch's configs). */
typedef struct {{
    signed char coef[{P}_NUM_DIMS];
    double threshold;
    int left, right, config;
}} {p}_dispatch_node;

static const {p}_dispatch {p}_dispatches[] = {{
{dispatches}}};

static const long long {p}_dispatch_shapes[][{P}_NUM_DIMS] = {{
{dispatch_shapes}}};

static const int {p}_dispatch_configs[][{P}_NUM_MACROS] = {{
{dispatch_configs}}};

static const double {p}_dispatch_regrets[] = {{
{dispatch_regrets}}};

static const {p}_dispatch_node {p}_dispatch_nodes[] = {{
{dispatch_nodes}}};

/* Log-distance from the asked dims to a tuned shape (dims below 1 count as 1). */
static inline double {p}_log_distance(const long long *want, const long long *tuned)
{{
    double sum = 0.0;
    int i;
    for (i = 0; i < {P}_NUM_DIMS; ++i) {{
        const double r = log((double)(want[i] < 1 ? 1 : want[i]) / (double)(tuned[i] < 1 ? 1 : tuned[i]));
        sum += r * r;
    }}
    return sqrt(sum);
}}

/* The dispatch's config for dims: the rule of autotune/dispatch/, step for step. */
static inline const int *{p}_dispatch_pick(const {p}_dispatch *d, const long long *dims)
{{
    double distance[{P}_DISPATCH_MAX_SHAPES], score[{P}_DISPATCH_MAX_CONFIGS];
    int used[{P}_DISPATCH_MAX_SHAPES], near[{P}_DISPATCH_MAX_SHAPES], n = 0, s, c, r, best = 0;
    const double *regret = {p}_dispatch_regrets + d->first_regret;
    if (d->kind == 1) {{ /* the tree: the same sums of logs, in the same order, as Python */
        const {p}_dispatch_node *node = {p}_dispatch_nodes + d->first_node;
        while (node->left >= 0) {{
            double f = 0.0;
            for (c = 0; c < {P}_NUM_DIMS; ++c)
                if (node->coef[c])
                    f += node->coef[c] * log((double)(dims[c] < 1 ? 1 : dims[c]));
            node = {p}_dispatch_nodes + d->first_node + (f <= node->threshold ? node->left : node->right);
        }}
        return {p}_dispatch_configs[d->first_config + node->config];
    }}
    for (s = 0; s < d->num_shapes; ++s) {{
        distance[s] = {p}_log_distance(dims, {p}_dispatch_shapes[d->first_shape + s]);
        used[s] = 0;
    }}
    for (c = 0; c < d->num_configs; ++c)
        score[c] = 0.0;
    for (r = 0; r < d->k && r < d->num_shapes; ++r) {{
        int pick = -1;
        double w;
        for (s = 0; s < d->num_shapes; ++s)
            if (!used[s] && (pick < 0 || distance[s] < distance[pick] - 1e-9))
                pick = s;
        used[pick] = 1;
        near[n++] = pick;
        w = 1.0 / (distance[pick] + d->eps);
        for (c = 0; c < d->num_configs; ++c)
            score[c] += w * regret[pick * d->num_configs + c];
    }}
    if (d->kind == 2) {{ /* the nearest tuned shape's least regret, ties to the first config */
        for (c = 1; c < d->num_configs; ++c)
            if (regret[near[0] * d->num_configs + c] < regret[near[0] * d->num_configs + best] - 1e-12)
                best = c;
        return {p}_dispatch_configs[d->first_config + best];
    }}
    for (c = 1; c < d->num_configs; ++c) {{
        int beats = 1; /* faster than the default at every one of the nearest shapes, beyond the noise */
        for (r = 0; r < n; ++r)
            if (!(regret[near[r] * d->num_configs + c] < regret[near[r] * d->num_configs] - d->margin_log))
                beats = 0;
        if (beats && (best == 0 || score[c] < score[best] - 1e-12))
            best = c;
    }}
    return {p}_dispatch_configs[d->first_config + best];
}}

/* This device model's dispatch for dtype, NULL if none. */
static inline const {p}_dispatch *{p}_find_dispatch(const char *device_name, int major, int minor, const char *dtype)
{{
    int i;
    for (i = 0; i < {P}_NUM_DISPATCHES; ++i) {{
        const {p}_dispatch *d = &{p}_dispatches[i];
        if (d->num_shapes > 0 && strcmp(d->device, device_name) == 0 && d->cc_major == major && d->cc_minor == minor
            && strcmp(d->dtype, dtype) == 0)
            return d;
    }}
    return 0;
}}

/* The macros to use for dims of dtype on a device; see the opening comment. */
static inline const int *{p}_select(
    const char *device_name, int cc_major, int cc_minor, const char *dtype, const long long *dims, int *rung)
{{
    const {p}_entry *e = {p}_nearest(device_name, cc_major, cc_minor, dtype, dims, 1);
    const {p}_dispatch *d;
    int r = AUTOTUNE_RUNG_DISPATCH, i;
    if (e) {{
        for (i = 0; i < {P}_NUM_DIMS && e->dims[i] == (dims[i] < 1 ? 1 : dims[i]); ++i) {{
        }}
        if (i == {P}_NUM_DIMS) {{
            if (rung)
                *rung = AUTOTUNE_RUNG_EXACT;
            return e->macros;
        }}
    }}
    d = {p}_find_dispatch(device_name, cc_major, cc_minor, dtype);
    if (d) {{
        if (rung)
            *rung = AUTOTUNE_RUNG_DISPATCH;
        return {p}_dispatch_pick(d, dims);
    }}
    if (!e) {{
        e = {p}_nearest(device_name, cc_major, cc_minor, dtype, dims, 0);
        r = AUTOTUNE_RUNG_SAME_ARCH;
    }}
    if (rung)
        *rung = e ? r : AUTOTUNE_RUNG_DEFAULT;
    return e ? e->macros : {p}_default;
}}

/* Writes "-DNAME=value ..." for macros (NVRTC options); returns what snprintf returns. */
static inline int {p}_options(const int *macros, char *buffer, size_t size)
{{
    int used = 0, i;
    if (size > 0)
        buffer[0] = 0;
    for (i = 0; i < {P}_NUM_MACROS; ++i) {{
        const int n = snprintf(buffer + (used < (int)size ? used : (int)size),
                               used < (int)size ? size - (size_t)used : 0, "%s-D%s=%d", i ? " " : "",
                               {p}_macro_names[i], macros[i]);
        if (n < 0)
            return n;
        used += n;
    }}
    return used;
}}

#if defined(__CUDACC__) || defined(AUTOTUNE_CUDA_RUNTIME)
#include <cuda_runtime.h>
/* {p}_select for CUDA device ordinal `device` (its name and compute capability); the
   default config if the device cannot be queried. */
static inline const int *{p}_select_device(int device, const char *dtype, const long long *dims, int *rung)
{{
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {{
        if (rung)
            *rung = AUTOTUNE_RUNG_DEFAULT;
        return {p}_default;
    }}
    return {p}_select(prop.name, prop.major, prop.minor, dtype, dims, rung);
}}
#endif

#endif /* AUTOTUNE_TUNED_H_{kernel} */
"""
