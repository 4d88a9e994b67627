/* SPDX-License-Identifier: MIT */
/* lazy_fn.h: forwarding definitions for a library loaded on first use (rdkafka_lazy.c,
 * json_lazy.c). The including file defines `static void *symbol(const char *name)`, which
 * loads the library if needed and returns the named function or exits with a message. */
#ifndef WEIR_LAZY_FN_H
#define WEIR_LAZY_FN_H

/* One forwarding definition: ret name params, calling the library's with args; the function
 * is looked up once (the pointer is published with release/acquire: any thread may call). */
#define LAZY(ret, name, params, args)                                                            \
    ret name params                                                                            \
    {                                                                                          \
        static ret(*fn) params;                                                                \
        ret(*f) params = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);                               \
        if (f == NULL) {                                                                       \
            *(void **)&f = symbol(#name);                                                      \
            __atomic_store_n(&fn, f, __ATOMIC_RELEASE);                                        \
        }                                                                                      \
        return f args;                                                                         \
    }

/* The same for a function that returns nothing. */
#define LAZY_VOID(name, params, args)                                                            \
    void name params                                                                           \
    {                                                                                          \
        static void(*fn) params;                                                               \
        void(*f) params = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);                              \
        if (f == NULL) {                                                                       \
            *(void **)&f = symbol(#name);                                                      \
            __atomic_store_n(&fn, f, __ATOMIC_RELEASE);                                        \
        }                                                                                      \
        f args;                                                                                \
    }

#endif
