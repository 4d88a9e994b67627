// SPDX-License-Identifier: MIT
// json.cc: the JSON half of the fields module (fields.h), weir's one C++ file: the door to
// simdjson (its DOM API, error codes only: no exception leaves here). The line is copied into
// a buffer with simdjson's padding after it; the parser and both buffers are reused line after
// line, so a parse allocates only when a longer line or a bigger document comes. Invariant:
// every wr_json_* function of fields.h and the weir_json_* half of weir_ffi.h returns errors as
// values; the only exception simdjson may throw is std::bad_alloc, and weir's allocations
// abort before that (mem.h).
// weir.h (the FFI header) has no C++ guards of its own
extern "C" {
#include "weir.h"
}

#include <jansson.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <simdjson.h>
#include <string_view>

#include "fields.h"
extern "C" {
#include "mem.h"
}

static_assert(sizeof(weir_json_tok_t) == 24, "weir_json_tok_t is 24 bytes in Lua too");

struct wr_json {
    simdjson::dom::parser parser;
    char *buf = nullptr; // owned: the line and SIMDJSON_PADDING bytes
    size_t buf_cap = 0;
    weir_json_tok_t *tape = nullptr; // owned
    size_t tape_n = 0;
    size_t tape_cap = 0;
    char why[WR_FIELDS_WHY] = "";
};

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// The line, padded, in j->buf; then simdjson's document.
simdjson::error_code parse(wr_json_t *j, const char *line, size_t len, element *root)
{
    if (len + simdjson::SIMDJSON_PADDING > j->buf_cap) {
        j->buf_cap = len + simdjson::SIMDJSON_PADDING;
        j->buf = static_cast<char *>(wr_xrealloc(j->buf, j->buf_cap));
    }
    if (len > 0) {
        memcpy(j->buf, line, len);
    }
    memset(j->buf + len, 0, simdjson::SIMDJSON_PADDING);
    return j->parser.parse(j->buf, len, false).get(*root);
}

// Why simdjson rejected the line, in why: jansson's message (where, and what it expected) or,
// when jansson takes the line, simdjson's own.
void explain(char *why, size_t cap, const char *line, size_t len, simdjson::error_code code)
{
    json_error_t e;
    json_t *v = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (v == nullptr) {
        int col = e.position > 0 ? e.position : 1;
        snprintf(why, cap, "column %d: %s", col, e.text);
        return;
    }
    json_decref(v);
    if (code == simdjson::DEPTH_ERROR) {
        snprintf(why, cap, "column 1: nested deeper than %zu levels",
                 simdjson::DEFAULT_MAX_DEPTH);
    } else {
        snprintf(why, cap, "column 1: not valid JSON (%s)", simdjson::error_message(code));
    }
}

const char *what_is(element_type t)
{
    switch (t) {
    case element_type::ARRAY:
        return "an array";
    case element_type::OBJECT:
        return "an object";
    case element_type::STRING:
        return "a string";
    case element_type::BOOL:
        return "a boolean";
    case element_type::NULL_VALUE:
        return "null";
    default:
        return "a number";
    }
}

// A number as a double; false for one that is not finite as a double.
bool number_of(const element &v, double *out)
{
    switch (v.type()) {
    case element_type::INT64:
        *out = static_cast<double>(int64_t(v));
        return true;
    case element_type::UINT64:
        *out = static_cast<double>(uint64_t(v));
        return true;
    default:
        *out = double(v);
        return std::isfinite(*out);
    }
}

int fill(wr_json_t *j, weir_fields_t *f, const char *line, size_t len, char *rec)
{
    element root;
    simdjson::error_code code = parse(j, line, len, &root);
    if (code != simdjson::SUCCESS) {
        char why[WR_FIELDS_WHY];
        explain(why, sizeof why, line, len, code);
        return wr_fields_why(f, "%s", why);
    }
    if (root.type() != element_type::OBJECT) {
        return wr_fields_why(f, "column 1: expected an object, got %s", what_is(root.type()));
    }
    wr_fields_begin(f);
    int32_t hint = 0;
    for (simdjson::dom::key_value_pair kv : simdjson::dom::object(root)) {
        int32_t i = wr_fields_lookup(f, kv.key.data(), kv.key.size(), hint);
        if (i < 0) {
            continue;
        }
        hint = i + 1;
        const element &v = kv.value;
        int rc = 0;
        switch (v.type()) {
        case element_type::INT64:
        case element_type::UINT64:
        case element_type::DOUBLE: {
            double d = 0;
            rc = number_of(v, &d) ? wr_fields_put_number(f, i, d, rec)
                                  : wr_fields_put_other(f, i, "a number beyond a double");
            break;
        }
        case element_type::BOOL:
            rc = wr_fields_put_bool(f, i, bool(v) ? 1 : 0, rec);
            break;
        case element_type::STRING: {
            std::string_view s(v);
            rc = wr_fields_put_string(f, i, s.data(), s.size(), rec);
            break;
        }
        default:
            rc = wr_fields_put_other(f, i, what_is(v.type()));
            break;
        }
        if (rc != 0) {
            return -1;
        }
    }
    return wr_fields_end(f);
}

void push(wr_json_t *j, int32_t kind, int32_t n, double num, const char *str)
{
    if (j->tape_n == j->tape_cap) {
        j->tape_cap = j->tape_cap ? j->tape_cap * 2 : 64;
        j->tape = static_cast<weir_json_tok_t *>(
            wr_xreallocarray(j->tape, j->tape_cap, sizeof *j->tape));
    }
    j->tape[j->tape_n++] = weir_json_tok_t{ kind, n, num, str };
}

// len of a string or a count: the tape holds int32_t; a line is at most 2^31 - 1 bytes.
int32_t count32(size_t n)
{
    return static_cast<int32_t>(n);
}

// The tape of v, preorder; false (message in j->why) for a number not finite as a double.
bool tape_of(wr_json_t *j, const element &v)
{
    switch (v.type()) {
    case element_type::NULL_VALUE:
        push(j, WEIR_JSON_NULL, 0, 0, nullptr);
        return true;
    case element_type::BOOL:
        push(j, bool(v) ? WEIR_JSON_TRUE : WEIR_JSON_FALSE, 0, 0, nullptr);
        return true;
    case element_type::STRING: {
        std::string_view s(v);
        push(j, WEIR_JSON_STRING, count32(s.size()), 0, s.data());
        return true;
    }
    case element_type::ARRAY: {
        simdjson::dom::array a(v);
        push(j, WEIR_JSON_ARRAY, count32(a.size()), 0, nullptr);
        for (element e : a) {
            if (!tape_of(j, e)) {
                return false;
            }
        }
        return true;
    }
    case element_type::OBJECT: {
        simdjson::dom::object o(v);
        push(j, WEIR_JSON_OBJECT, count32(o.size()), 0, nullptr);
        for (simdjson::dom::key_value_pair kv : o) {
            push(j, WEIR_JSON_STRING, count32(kv.key.size()), 0, kv.key.data());
            if (!tape_of(j, kv.value)) {
                return false;
            }
        }
        return true;
    }
    default: {
        double d = 0;
        if (!number_of(v, &d)) {
            snprintf(j->why, sizeof j->why, "a number does not fit a double");
            return false;
        }
        push(j, WEIR_JSON_NUMBER, 0, d, nullptr);
        return true;
    }
    }
}

} // namespace

extern "C" {

wr_json_t *wr_json_new(void)
{
    void *p = wr_xmalloc(sizeof(wr_json_t));
    return new (p) wr_json_t();
}

void wr_json_free(wr_json_t *j)
{
    if (j == nullptr) {
        return;
    }
    wr_free(j->buf);
    wr_free(j->tape);
    j->~wr_json_t();
    wr_free(j);
}

int wr_json_fill(wr_json_t *j, weir_fields_t *f, const char *line, size_t len, void *out)
{
    return fill(j, f, line, len, static_cast<char *>(out));
}

weir_json_t *weir_json_new(void)
{
    return wr_json_new();
}

void weir_json_free(weir_json_t *j)
{
    wr_json_free(j);
}

int32_t weir_json_decode(weir_json_t *j, const char *line, int32_t len)
{
    if (j == nullptr || len < 0 || (line == nullptr && len > 0)) {
        return -1;
    }
    size_t n = static_cast<size_t>(len);
    element root;
    simdjson::error_code code = parse(j, line ? line : "", n, &root);
    j->tape_n = 0;
    if (code != simdjson::SUCCESS) {
        explain(j->why, sizeof j->why, line ? line : "", n, code);
        return -1;
    }
    if (!tape_of(j, root)) {
        return -1;
    }
    return count32(j->tape_n);
}

const weir_json_tok_t *weir_json_tape(const weir_json_t *j)
{
    return j ? j->tape : nullptr;
}

const char *weir_json_error(const weir_json_t *j)
{
    return j ? j->why : "";
}

} // extern "C"
