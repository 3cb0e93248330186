#define _POSIX_C_SOURCE 200809L /* strdup */
/* omma stream --config FILE (stream_config.h). */
#include "cli/stream_config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_BYTES (1 << 20)
#ifdef OMMA_HAVE_JSONC
#include <json-c/json.h>

#define CONFIG_MAX_ITEMS 4096
#define MAX_DEPTH 16

/* One step of a key's path: an object key, or an array index (key NULL). */
typedef struct seg {
    const char *key;
    int index;
} seg;

typedef struct walk {
    const char *path, *text;
    size_t len;
    const cli_option *options;
    cli_config *out;
    seg at[MAX_DEPTH];
    int depth;
    char *err;
    size_t cap;
    int failed;
} walk;

/* ---- the light scan: from a path to its offset in the (valid) text ---- */

static size_t skip_ws(const char *t, size_t len, size_t i)
{
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

/* i at a '"': returns the offset after the closing quote. */
static size_t skip_string(const char *t, size_t len, size_t i)
{
    for (i++; i < len && t[i] != '"'; i++)
        if (t[i] == '\\')
            i++;
    return i < len ? i + 1 : len;
}

static size_t skip_value(const char *t, size_t len, size_t i)
{
    int depth = 0;
    for (; i < len; i++) {
        char c = t[i];
        if (c == '"') {
            i = skip_string(t, len, i) - 1;
            if (depth == 0)
                return i + 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return i; /* a scalar that ended with its container */
            if (--depth == 0)
                return i + 1;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
            return i;
        }
    }
    return len;
}

/* Whether the JSON string at [from, to) (inside its quotes) is key: plain
 * bytes and the simple escapes. */
static int same_key(const char *t, size_t from, size_t to, const char *key)
{
    size_t k = 0;
    for (size_t i = from; i < to; i++, k++) {
        char c = t[i];
        if (c == '\\' && i + 1 < to) {
            c = t[++i];
            c = c == 'n'   ? '\n'
                : c == 't' ? '\t'
                : c == 'r' ? '\r'
                : c == 'b' ? '\b'
                : c == 'f' ? '\f'
                           : c;
        }
        if (key[k] != c)
            return 0;
    }
    return key[k] == '\0';
}

/* The offset of the path's last key (or element), or of the deepest part
 * found. */
static size_t locate(const char *t, size_t len, const seg *path, int depth)
{
    size_t i = skip_ws(t, len, 0), found = i;
    for (int d = 0; d < depth; d++) {
        if (i >= len)
            return found;
        if (path[d].key) {
            if (t[i] != '{')
                return found;
            i = skip_ws(t, len, i + 1);
            int hit = 0;
            while (i < len && t[i] == '"') {
                size_t kf = i + 1, ke = skip_string(t, len, i);
                size_t v = skip_ws(t, len, skip_ws(t, len, ke) + 1);
                if (same_key(t, kf, ke - 1, path[d].key)) {
                    found = i;
                    i = v;
                    hit = 1;
                    break;
                }
                i = skip_ws(t, len, skip_value(t, len, v));
                if (i < len && t[i] == ',')
                    i = skip_ws(t, len, i + 1);
            }
            if (!hit)
                return found;
        } else {
            if (t[i] != '[')
                return found;
            i = skip_ws(t, len, i + 1);
            for (int k = 0; k < path[d].index && i < len && t[i] != ']'; k++) {
                i = skip_ws(t, len, skip_value(t, len, i));
                if (i < len && t[i] == ',')
                    i = skip_ws(t, len, i + 1);
            }
            if (i >= len || t[i] == ']')
                return found;
            found = i;
        }
    }
    return found;
}

static int line_of(const char *t, size_t len, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off && i < len; i++)
        line += t[i] == '\n';
    return line;
}

/* ---- items and errors ---- */

static void key_text(const walk *w, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int d = 0; d < w->depth && n + 1 < cap; d++) {
        int m = w->at[d].key ? snprintf(out + n, cap - n, "%s%s", d ? "." : "", w->at[d].key)
                             : snprintf(out + n, cap - n, "[%d]", w->at[d].index);
        if (m < 0)
            break;
        n += (size_t)m;
        if (n >= cap)
            n = cap - 1;
    }
    if (!out[0])
        snprintf(out, cap, "(the top level)");
}

static int here(const walk *w)
{
    return line_of(w->text, w->len, locate(w->text, w->len, w->at, w->depth));
}

static int fail(walk *w, const char *fmt, ...)
{
    if (w->failed)
        return 0;
    w->failed = 1;
    char key[CLI_CONFIG_KEY_MAX];
    key_text(w, key, sizeof key);
    int n = snprintf(w->err, w->cap, "%s:%d: key %s: ", w->path, here(w), key);
    if (n >= 0 && (size_t)n < w->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err + n, w->cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return 0;
}

static int push(walk *w, const char *key, int index)
{
    if (w->depth == MAX_DEPTH)
        return fail(w, "nested deeper than %d levels", MAX_DEPTH);
    w->at[w->depth++] = (seg){key, index};
    return 1;
}

static int add(walk *w, const cli_option *opt, const char *value)
{
    cli_config *c = w->out;
    if (c->n == CONFIG_MAX_ITEMS)
        return fail(w, "more than %d settings", CONFIG_MAX_ITEMS);
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 32;
        cli_config_item *more = realloc(c->items, (size_t)cap * sizeof *more);
        if (!more)
            return fail(w, "out of memory");
        c->items = more;
        c->cap = cap;
    }
    cli_config_item *it = &c->items[c->n];
    memset(it, 0, sizeof *it);
    it->option = opt;
    if (value && !(it->value = strdup(value)))
        return fail(w, "out of memory");
    key_text(w, it->key, sizeof it->key);
    it->line = here(w);
    c->n++;
    return 1;
}

static const cli_option *find_option(const cli_option *options, const char *name)
{
    for (const cli_option *o = options; o->name; o++)
        if (strncmp(o->name, "--", 2) == 0 && strcmp(o->name + 2, name) == 0)
            return o;
    return NULL;
}

/* A scalar as option text: strings as they are, numbers as written. */
static int scalar_text(json_object *v, char *out, size_t cap)
{
    switch (json_object_get_type(v)) {
    case json_type_string:
        snprintf(out, cap, "%s", json_object_get_string(v));
        return 1;
    case json_type_int:
        snprintf(out, cap, "%lld", (long long)json_object_get_int64(v));
        return 1;
    case json_type_double: {
        double d = json_object_get_double(v);
        if (!isfinite(d))
            return 0;
        snprintf(out, cap, "%.17g", d);
        return 1;
    }
    default:
        return 0;
    }
}

static const char *type_name(json_object *v)
{
    return json_type_to_name(json_object_get_type(v));
}

static int nearest_hint(walk *w, const char *name)
{
    const char *names[256];
    char buf[256][48];
    size_t n = 0;
    for (const cli_option *o = w->options; o->name && n < 256; o++)
        if (strncmp(o->name, "--", 2) == 0) {
            snprintf(buf[n], sizeof buf[n], "%s", o->name + 2);
            names[n] = buf[n];
            n++;
        }
    const char *near = cli_nearest(name, names, n);
    return fail(w,
                "no such setting%s%s%s (the keys are omma stream's options without their "
                "dashes, and the sections cameras, participants, regions, outputs, thresholds)",
                near ? ": did you mean \"" : "", near ? near : "", near ? "\"?" : "");
}

static int option_value(walk *w, const char *name, json_object *v);

/* An object under K: its keys are K's sub-options (K-KEY). */
static int sub_options(walk *w, const char *name, json_object *v)
{
    json_object_object_foreach(v, k, sub)
    {
        char full[128];
        if (snprintf(full, sizeof full, "%s-%s", name, k) >= (int)sizeof full)
            return push(w, k, 0) && fail(w, "key too long");
        if (!push(w, k, 0) || !option_value(w, full, sub))
            return 0;
        w->depth--;
    }
    return 1;
}

static int option_value(walk *w, const char *name, json_object *v)
{
    const cli_option *opt = find_option(w->options, name);
    if (json_object_get_type(v) == json_type_object)
        return sub_options(w, name, v);
    if (!opt)
        return nearest_hint(w, name);
    if (strcmp(name, "config") == 0)
        return fail(w, "a config file cannot name another");
    char text[4096];
    if (!opt->value) {
        if (json_object_get_type(v) != json_type_boolean)
            return fail(w, "%s is a switch: expected true or false, not %s", opt->name,
                        type_name(v));
        return json_object_get_boolean(v) ? add(w, opt, NULL) : 1;
    }
    if (json_object_get_type(v) == json_type_boolean) {
        if (!strstr(opt->value, "on|off"))
            return fail(w, "%s takes %s, not true or false", opt->name, opt->value);
        return add(w, opt, json_object_get_boolean(v) ? "on" : "off");
    }
    if (json_object_get_type(v) == json_type_array) {
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(v, i);
            if (!push(w, NULL, (int)i))
                return 0;
            if (!scalar_text(e, text, sizeof text))
                return fail(w, "%s takes %s: expected a string or a number, not %s", opt->name,
                            opt->value, type_name(e));
            if (!add(w, opt, text))
                return 0;
            w->depth--;
        }
        return 1;
    }
    if (!scalar_text(v, text, sizeof text))
        return fail(w, "%s takes %s: expected a string or a number, not %s", opt->name, opt->value,
                    type_name(v));
    return add(w, opt, text);
}

/* ---- sections ---- */

static int need(walk *w, json_object *v, json_type t, const char *what)
{
    if (json_object_get_type(v) != t)
        return fail(w, "expected %s, not %s", what, type_name(v));
    return 1;
}

static int cameras(walk *w, json_object *v)
{
    if (!need(w, v, json_type_array,
              "an array of cameras (sources, or objects with source, "
              "name, resolution, fps)"))
        return 0;
    size_t n = json_object_array_length(v);
    char names[8192] = "", fps[64] = "", res[64] = "";
    int named = 0, fps_at = -1, res_at = -1, names_at = -1;
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(v, i);
        if (!push(w, NULL, (int)i))
            return 0;
        const char *source = NULL, *name = NULL;
        char cam[32];
        snprintf(cam, sizeof cam, "cam%zu", i);
        if (json_object_get_type(c) == json_type_string) {
            source = json_object_get_string(c);
        } else if (!need(w, c, json_type_object, "a source or an object")) {
            return 0;
        } else {
            json_object_object_foreach(c, k, f)
            {
                if (!push(w, k, 0))
                    return 0;
                char text[64];
                if (!strcmp(k, "source") || !strcmp(k, "url") || !strcmp(k, "device")) {
                    if (!need(w, f, json_type_string, "a string"))
                        return 0;
                    source = json_object_get_string(f);
                } else if (!strcmp(k, "name")) {
                    if (!need(w, f, json_type_string, "a string"))
                        return 0;
                    name = json_object_get_string(f);
                    if (names_at < 0)
                        names_at = (int)i;
                    named = 1;
                } else if (!strcmp(k, "fps") || !strcmp(k, "resolution")) {
                    int is_fps = k[0] == 'f';
                    if (!scalar_text(f, text, sizeof text))
                        return fail(w, "expected %s", is_fps ? "a number" : "\"WxH\"");
                    char *have = is_fps ? fps : res;
                    int *at = is_fps ? &fps_at : &res_at;
                    if (*at >= 0 && strcmp(have, text) != 0)
                        return fail(w,
                                    "%s differs from cameras[%d]'s %s: omma stream has one --%s "
                                    "for all its cameras",
                                    text, *at, have, k);
                    snprintf(have, 64, "%s", text);
                    if (*at < 0) {
                        *at = (int)i;
                        if (!add(w, find_option(w->options, k), text))
                            return 0;
                    }
                } else {
                    return fail(w, "no such camera setting (source, url, device, name, "
                                   "resolution, fps)");
                }
                w->depth--;
            }
            if (!source)
                return fail(w, "the camera has no source (its file, URL, device or "
                               "synthetic)");
        }
        if (!add(w, NULL, source))
            return 0;
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", i ? "," : "", name ? name : cam);
        w->depth--;
    }
    if (named) {
        const cli_option *o = find_option(w->options, "lsl-name");
        if (!o)
            return fail(w, "camera names are not supported");
        if (!push(w, NULL, names_at) || !push(w, "name", 0) || !add(w, o, names))
            return 0;
        w->depth -= 2;
    }
    return 1;
}

/* [x, y, w, h] fractions, or {"pixels": [x, y, w, h]} -> "x,y,w,h[px]". */
static int region_text(walk *w, json_object *v, char *out, size_t cap)
{
    const char *unit = "";
    if (json_object_get_type(v) == json_type_object) {
        json_object *px = NULL;
        if (json_object_object_length(v) != 1 || !json_object_object_get_ex(v, "pixels", &px))
            return fail(w, "a region is [x, y, w, h] (fractions of the frame) or {\"pixels\": "
                           "[x, y, w, h]}");
        v = px;
        unit = "px";
    }
    if (json_object_get_type(v) != json_type_array || json_object_array_length(v) != 4)
        return fail(w, "a region is [x, y, w, h] (fractions of the frame) or {\"pixels\": [x, y, "
                       "w, h]}");
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        json_object *e = json_object_array_get_idx(v, (size_t)i);
        json_type t = json_object_get_type(e);
        if (t != json_type_int && t != json_type_double)
            return fail(w, "region value %d is %s, not a number", i + 1, type_name(e));
        n += (size_t)snprintf(out + n, cap - n, "%s%.9g", i ? "," : "", json_object_get_double(e));
        if (n >= cap)
            return fail(w, "region too long");
    }
    snprintf(out + n, cap - n, "%s", unit);
    return 1;
}

static int participants(walk *w, json_object *v, json_object *regions)
{
    if (!need(w, v, json_type_array,
              "an array of participants ({\"name\", \"camera\", "
              "\"region\"})"))
        return 0;
    const cli_option *o = find_option(w->options, "participant");
    size_t n = json_object_array_length(v);
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(v, i);
        if (!push(w, NULL, (int)i))
            return 0;
        char spec[512];
        if (json_object_get_type(p) == json_type_string) {
            const char *t = json_object_get_string(p);
            size_t nl = strcspn(t, "=");
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(nl < sizeof name ? nl : sizeof name - 1), t);
            json_object *r = NULL;
            char region[256] = "";
            if (regions && json_object_object_get_ex(regions, name, &r)) {
                seg saved[2] = {w->at[0], w->at[1]}; /* [participants][i] */
                w->depth = 0;
                if (!push(w, "regions", 0) || !push(w, name, 0))
                    return 0;
                if (strchr(t, ':'))
                    return fail(w, "participant %s has a region already (participants[%zu])", name,
                                i);
                if (!region_text(w, r, region, sizeof region))
                    return 0;
                w->at[0] = saved[0];
                w->at[1] = saved[1];
                w->depth = 2;
            }
            snprintf(spec, sizeof spec, "%s%s%s%s", t, region[0] && !t[nl] ? "=0" : "",
                     region[0] ? ":" : "", region);
        } else {
            if (!need(w, p, json_type_object, "a participant: {\"name\", \"camera\", \"region\"}"))
                return 0;
            const char *name = NULL;
            char camera[128] = "0", region[256] = "";
            json_object_object_foreach(p, k, f)
            {
                if (!push(w, k, 0))
                    return 0;
                if (!strcmp(k, "name")) {
                    if (!need(w, f, json_type_string, "a string"))
                        return 0;
                    name = json_object_get_string(f);
                } else if (!strcmp(k, "camera")) {
                    if (json_object_get_type(f) != json_type_string &&
                        json_object_get_type(f) != json_type_int)
                        return fail(w, "expected a camera's name or index, not %s", type_name(f));
                    scalar_text(f, camera, sizeof camera);
                } else if (!strcmp(k, "region")) {
                    if (!region_text(w, f, region, sizeof region))
                        return 0;
                } else {
                    return fail(w, "no such participant setting (name, camera, region)");
                }
                w->depth--;
            }
            if (!name || !name[0])
                return fail(w, "the participant has no name");
            json_object *r = NULL;
            if (regions && json_object_object_get_ex(regions, name, &r)) {
                seg saved[2] = {w->at[0], w->at[1]}; /* [participants][i] */
                w->depth = 0;
                if (!push(w, "regions", 0) || !push(w, name, 0))
                    return 0;
                if (region[0])
                    return fail(w, "participant %s has a region already (participants[%zu])", name,
                                i);
                if (!region_text(w, r, region, sizeof region))
                    return 0;
                w->at[0] = saved[0];
                w->at[1] = saved[1];
                w->depth = 2;
            }
            snprintf(spec, sizeof spec, "%s=%s%s%s", name, camera, region[0] ? ":" : "", region);
        }
        if (!o)
            return fail(w, "participants are not supported");
        if (!add(w, o, spec))
            return 0;
        w->depth--;
    }
    return 1;
}

static int top(walk *w, json_object *root)
{
    if (json_object_get_type(root) != json_type_object)
        return fail(w, "the file must hold one JSON object, not %s", type_name(root));
    json_object *regions = NULL, *parts = NULL;
    json_object_object_get_ex(root, "regions", &regions);
    json_object_object_get_ex(root, "participants", &parts);
    if (regions) {
        if (!push(w, "regions", 0) ||
            !need(w, regions, json_type_object, "an object: participant name -> region"))
            return 0;
        json_object_object_foreach(regions, name, r)
        {
            (void)r;
            int known = 0;
            for (size_t i = 0; parts && json_object_get_type(parts) == json_type_array &&
                               i < json_object_array_length(parts);
                 i++) {
                json_object *p = json_object_array_get_idx(parts, i), *nm = NULL;
                if (json_object_get_type(p) == json_type_string) { /* "NAME=..." */
                    const char *t = json_object_get_string(p);
                    size_t n = strcspn(t, "=");
                    known |= strlen(name) == n && strncmp(t, name, n) == 0;
                    continue;
                }
                known |= json_object_get_type(p) == json_type_object &&
                         json_object_object_get_ex(p, "name", &nm) &&
                         json_object_get_type(nm) == json_type_string &&
                         strcmp(json_object_get_string(nm), name) == 0;
            }
            if (!known)
                return push(w, name, 0) && fail(w, "no participant named %s in participants", name);
        }
        w->depth--;
    }
    json_object_object_foreach(root, key, v)
    {
        if (!push(w, key, 0))
            return 0;
        int ok = 1;
        if (!strcmp(key, "cameras"))
            ok = cameras(w, v);
        else if (!strcmp(key, "participants"))
            ok = participants(w, v, regions);
        else if (!strcmp(key, "regions"))
            ok = 1; /* with participants */
        else if (!strcmp(key, "outputs") || !strcmp(key, "thresholds")) {
            if (!need(w, v, json_type_object, "an object of settings"))
                return 0;
            json_object_object_foreach(v, k2, v2)
            {
                if (!ok || !push(w, k2, 0) || !(ok = option_value(w, k2, v2)))
                    return 0;
                w->depth--;
            }
        } else
            ok = option_value(w, key, v);
        if (!ok)
            return 0;
        w->depth--;
    }
    return 1;
}

int cli_config_parse(const char *path, const char *text, size_t len, const cli_option *options,
                     cli_config *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    err[0] = '\0';
    walk w = {.path = path,
              .text = text,
              .len = len,
              .options = options,
              .out = out,
              .err = err,
              .cap = cap};
    if (len > CONFIG_MAX_BYTES) {
        snprintf(err, cap, "%s:1: key (the top level): larger than %d bytes", path,
                 CONFIG_MAX_BYTES);
        return 0;
    }
    if (memchr(text, '\0', len)) {
        size_t off = (size_t)((const char *)memchr(text, '\0', len) - text);
        snprintf(err, cap, "%s:%d: key (none): a NUL byte in the text", path,
                 line_of(text, len, off));
        return 0;
    }
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        snprintf(err, cap, "%s: out of memory", path);
        return 0;
    }
    json_object *root = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error je = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    if (!root && je == json_tokener_continue)
        je = json_tokener_error_parse_eof;
    if (root && skip_ws(text, len, end) < len) {
        end = skip_ws(text, len, end);
        json_object_put(root);
        root = NULL;
        snprintf(err, cap, "%s:%d: key (none): text after the JSON object", path,
                 line_of(text, len, end));
    } else if (!root) {
        snprintf(err, cap, "%s:%d: key (none): not valid JSON: %s", path, line_of(text, len, end),
                 json_tokener_error_desc(je));
    }
    json_tokener_free(tok);
    if (!root)
        return 0;
    if (!(out->path = strdup(path))) {
        json_object_put(root);
        snprintf(err, cap, "%s: out of memory", path);
        return 0;
    }
    int ok = top(&w, root);
    json_object_put(root);
    if (!ok) {
        if (!err[0])
            snprintf(err, cap, "%s: invalid", path);
        cli_config_free(out);
    }
    return ok;
}

#else /* no json-c */

int cli_config_parse(const char *path, const char *text, size_t len, const cli_option *options,
                     cli_config *out, char *err, size_t cap)
{
    (void)text;
    (void)len;
    (void)options;
    memset(out, 0, sizeof *out);
    snprintf(err, cap,
             "%s: omma was built without json-c (libjson-c-dev): --config is not available", path);
    return 0;
}

#endif

int cli_config_load(const char *path, const cli_option *options, cli_config *out, char *err,
                    size_t cap)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "%s: cannot open it: %s", path, strerror(errno));
        return 0;
    }
    char *text = malloc(CONFIG_MAX_BYTES + 1);
    size_t len = text ? fread(text, 1, CONFIG_MAX_BYTES + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!text || bad) {
        free(text);
        snprintf(err, cap, "%s: %s", path, text ? "cannot read it" : "out of memory");
        return 0;
    }
    int ok = cli_config_parse(path, text, len, options, out, err, cap);
    free(text);
    return ok;
}

void cli_config_free(cli_config *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->items[i].value);
    free(c->items);
    free(c->path);
    memset(c, 0, sizeof *c);
}
