/* The CPython int rewriting of the fast path (native/README.md, "Ints rewritten in place"): the ints it hands
 * out are past CPython's cached small ints, so each would be a new allocation; while nothing but the fast path
 * holds the one it handed out last, its digits are rewritten with the next value instead. Only for the CPython
 * versions whose int layout is known (REUSE_INTS); elsewhere every int is new. Private to the extension. */
#ifndef AMD_PYINT_H
#define AMD_PYINT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Rewriting an int in place needs its layout, known for CPython 3.11 to 3.13 with the GIL. */
#if !defined(Py_LIMITED_API) && !defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#define REUSE_INTS 1
#define INT64_DIGITS ((63 + PyLong_SHIFT - 1) / PyLong_SHIFT)
#else
#define REUSE_INTS 0
#endif

#if REUSE_INTS
static inline Py_ssize_t int_digit_count(const PyLongObject *n)
{
#if PY_VERSION_HEX >= 0x030C0000
    return (Py_ssize_t)(n->long_value.lv_tag >> _PyLong_NON_SIZE_BITS);
#else
    return Py_SIZE(n); /* positive ints only here */
#endif
}

static inline Py_ssize_t digits_needed(uint64_t value)
{
    Py_ssize_t count = 0;
    for (; value != 0; value >>= PyLong_SHIFT)
    {
        ++count;
    }
    return count;
}

/* Writes a positive value into an int that has room for its digits. */
static inline void int_write(PyLongObject *n, uint64_t value)
{
#if PY_VERSION_HEX >= 0x030C0000
    digit *digits = n->long_value.ob_digit;
#else
    digit *digits = n->ob_digit;
#endif
    Py_ssize_t count = 0;
    for (; value != 0; value >>= PyLong_SHIFT)
    {
        digits[count++] = (digit)(value & PyLong_MASK);
    }
#if PY_VERSION_HEX >= 0x030C0000
    n->long_value.lv_tag = (uintptr_t)count << _PyLong_NON_SIZE_BITS; /* sign bits 0: positive */
#else
    Py_SET_SIZE(n, count);
#endif
}
#endif

/* A new reference to an int of `value` (>= 0) for the hot paths, which hand out positions and offsets past the
 * cached small ints: allocating one each time was a third of an offer's cost. *cache holds the one handed out
 * last; when nothing but the cache and `holder` (a slot the caller is about to overwrite with the result, or
 * NULL) refers to it, nothing can observe it change, so it is rewritten with the new value and handed out
 * again, as CPython's zip and enumerate reuse their result tuple. Otherwise a new int replaces it in *cache. */
static inline PyObject *reused_int(PyObject **cache, int64_t value, PyObject *const *holder)
{
#if REUSE_INTS
    if (value > 256) /* the small ints are shared singletons: never cached, never rewritten */
    {
        PyLongObject *n = (PyLongObject *)*cache;
        const Py_ssize_t others = holder != NULL && *holder == (PyObject *)n ? 2 : 1;
        if (n == NULL || Py_REFCNT(n) != others)
        {
            n = _PyLong_New(INT64_DIGITS);
            if (n == NULL)
            {
                return NULL;
            }
            Py_XSETREF(*cache, (PyObject *)n);
        }
        int_write(n, (uint64_t)value);
        Py_INCREF(n);
        return (PyObject *)n;
    }
#else
    (void)cache;
    (void)holder;
#endif
    return PyLong_FromLongLong(value);
}

#endif
