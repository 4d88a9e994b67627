// SPDX-License-Identifier: MIT
// simdjson (libsimdjson-dev), its DOM API as runtime/json.cc uses it: one reused parser, the
// whole line validated, then the members looked up.
#include <cstring>
#include <simdjson.h>
#include <string_view>

#include "parsers.h"

static simdjson::dom::parser parser;

extern "C" int parse_simdjson(const char *p, size_t n, rec_t *r)
{
    simdjson::dom::element doc;
    if (parser.parse(p, n, false).get(doc) != simdjson::SUCCESS) { // the file buffer is padded
        return -1;
    }
    std::string_view u;
    double t = 0;
    if (doc["user"].get(u) != simdjson::SUCCESS || doc["ts"].get(t) != simdjson::SUCCESS) {
        return -1;
    }
    size_t m = u.size() < sizeof r->user - 1 ? u.size() : sizeof r->user - 1;
    memcpy(r->user, u.data(), m);
    r->user[m] = '\0';
    r->ts = t;
    return 0;
}
