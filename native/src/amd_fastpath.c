/* driver.concurrent.logbuffer._fastpath: the client's per-message hot paths as a CPython extension.
 *
 * Everything else in native/ is reached through cffi, whose call costs more than a Python function call:
 * one offer through cffi spent more time crossing into C than appending, and a poll paid a Python loop per
 * fragment. These functions are called straight from Python (METH_FASTCALL) and, for poll, call the
 * fragment handler from C. They use the same memory-ordering rules as amd_term.c and amd_publication.c
 * (native/README.md): an acquire load of each frame length before its body is read. The only module that
 * imports this one is driver/concurrent/logbuffer/fastpath.py.
 *
 * This file is the module; its parts are the offers (amd_fastpath_offers.c), the polls and the message stream
 * (amd_fastpath_polls.c), and the int rewriting both use (amd_pyint.h). */
#include <time.h>
#include "amd_fastpath.h"

PyObject *amd_ready_stop = NULL;

/* wait_for_change(address, last, stop_address, timeout_ns, poll_ns) -> True when the int64 at address is no
 * longer ``last`` (acquire load) or the int32 at stop_address is nonzero, False after timeout_ns.
 * Checked every poll_ns WITHOUT the GIL: the client's conductor thread waits here for driver events, so a
 * Python thread spinning on offers or polls is not made to hand the GIL over at every idle wake-up. */
static PyObject *fast_wait_for_change(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 5)
    {
        PyErr_SetString(PyExc_TypeError, "wait_for_change(address, last, stop_address, timeout_ns, poll_ns)");
        return NULL;
    }
    const int64_t *value = (const int64_t *)PyLong_AsVoidPtr(args[0]);
    const long long last = PyLong_AsLongLong(args[1]);
    const int32_t *stop = (const int32_t *)PyLong_AsVoidPtr(args[2]);
    const long long timeout_ns = PyLong_AsLongLong(args[3]);
    const long long poll_ns = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred())
    {
        return NULL;
    }
    if (value == NULL || stop == NULL || poll_ns <= 0)
    {
        PyErr_SetString(PyExc_ValueError, "wait_for_change: null address or poll_ns <= 0");
        return NULL;
    }
    int changed = 0;
    Py_BEGIN_ALLOW_THREADS
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const long long deadline = (long long)now.tv_sec * 1000000000LL + now.tv_nsec + timeout_ns;
    const struct timespec pause = {(time_t)(poll_ns / 1000000000LL), (long)(poll_ns % 1000000000LL)};
    for (;;)
    {
        if (__atomic_load_n(value, __ATOMIC_ACQUIRE) != last || __atomic_load_n(stop, __ATOMIC_ACQUIRE) != 0)
        {
            changed = 1;
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((long long)now.tv_sec * 1000000000LL + now.tv_nsec >= deadline)
        {
            break;
        }
        nanosleep(&pause, NULL);
    }
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(changed);
}

static PyMethodDef methods[] = {
    {"wait_for_change", (PyCFunction)(void (*)(void))fast_wait_for_change, METH_FASTCALL,
     "Wait, without the GIL, until an int64 changes, a stop flag is set or a timeout passes."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpath", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastpath(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
    {
        return NULL;
    }
    /* REUSES_INTS: whether results are rewritten in place (the CPython versions whose int layout is known). */
    if (amd_fastpath_add_offers(m) < 0 || amd_fastpath_add_polls(m) < 0 ||
        PyModule_AddIntConstant(m, "REUSES_INTS", REUSE_INTS) < 0)
    {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
