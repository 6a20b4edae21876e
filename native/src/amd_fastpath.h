/* What the parts of driver.concurrent.logbuffer._fastpath share (amd_fastpath.c, the module; the offers in
 * amd_fastpath_offers.c; the polls and the message stream in amd_fastpath_polls.c): the already-finished
 * awaitable's steps, and attributes written straight into their __slots__ member. Private to the extension. */
#ifndef AMD_FASTPATH_H
#define AMD_FASTPATH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include "amd_pyint.h"

/* __await__ (and __iter__, __aiter__) of Done and MessageStream: the object itself. */
static inline PyObject *same_object(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

/* am_send of an awaitable that is already finished (Done, MessageStream): the value in *ready moves to the
 * caller and the slot is emptied; with no value there (awaited twice, or too early) RuntimeError(misuse). */
static inline PySendResult send_ready(PyObject **ready, const char *misuse, PyObject **result)
{
    if (*ready == NULL)
    {
        PyErr_SetString(PyExc_RuntimeError, misuse);
        *result = NULL;
        return PYGEN_ERROR;
    }
    *result = *ready; /* the reference moves to the caller */
    *ready = NULL;
    return PYGEN_RETURN;
}

/* The StopIteration that next_ready raises, kept for the next one (amd_fastpath.c): from CPython 3.12 an
 * ``await`` in a coroutine drives a C awaitable through __next__, not am_send, so each finished await is a raised
 * StopIteration, and making a new one (its args tuple, then PyErr_SetObject's chaining) cost an awaited offer or
 * message about 100 ns, four times the offer itself. While nothing but this slot holds it, it is raised again. */
extern PyObject *amd_ready_stop;

/* Lets go of the value the kept StopIteration still holds (the int or message last awaited), so that the int
 * rewriting (amd_pyint.h) finds that int held only by the fast path again. */
static inline void release_ready_stop(void)
{
    if (amd_ready_stop != NULL && Py_REFCNT(amd_ready_stop) == 1)
    {
        Py_CLEAR(((PyStopIterationObject *)amd_ready_stop)->value);
    }
}

/* __next__ of such an awaitable, for drivers that do not use am_send (a coroutine's await from 3.12): finish at
 * once with the value, raised as the kept StopIteration when no one else holds it, else a new one. */
static inline PyObject *next_ready(PyObject **ready, const char *misuse)
{
    PyObject *value = NULL;
    if (send_ready(ready, misuse, &value) == PYGEN_ERROR)
    {
        return NULL;
    }
    PyObject *stop = amd_ready_stop;
    if (stop == NULL || Py_REFCNT(stop) != 1)
    {
        stop = PyObject_CallNoArgs(PyExc_StopIteration);
        if (stop == NULL)
        {
            Py_DECREF(value);
            return NULL;
        }
        Py_XSETREF(amd_ready_stop, stop);
    }
    else
    {
        /* raised and caught before (next() from Python, say): no traceback or chaining carried over */
        PyBaseExceptionObject *base = (PyBaseExceptionObject *)stop;
        Py_CLEAR(base->traceback);
        Py_CLEAR(base->context);
        Py_CLEAR(base->cause);
    }
    Py_XSETREF(((PyStopIterationObject *)stop)->value, value);
    Py_INCREF(stop);
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(stop);
#else
    Py_INCREF(PyExc_StopIteration);
    PyErr_Restore(PyExc_StopIteration, stop, NULL);
#endif
    return NULL;
}

/* Where the attribute `name` of obj lives when its type keeps it in a __slots__ member: written straight there,
 * as the member's own setter would, instead of a setattr each time (for header.offset, a fifth of a polled
 * fragment's cost). NULL when it lives elsewhere (a subclass's property, say): then setattr. */
static inline PyObject **member_slot(PyObject *obj, PyObject *name)
{
    PyObject *descr = _PyType_Lookup(Py_TYPE(obj), name);
    if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type))
    {
        const PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY))
        {
            return (PyObject **)((char *)obj + member->offset);
        }
    }
    return NULL;
}

/* obj.name = value (a new reference, which this takes), through its slot when it has one. */
static inline int set_member(PyObject *obj, PyObject *name, PyObject *value)
{
    PyObject **slot = member_slot(obj, name);
    if (slot == NULL)
    {
        const int set = PyObject_SetAttr(obj, name, value);
        Py_DECREF(value);
        return set;
    }
    Py_XSETREF(*slot, value);
    return 0;
}

/* obj.name = an int of value (>= 0), reusing *cache's int (reused_int): into `slot` (member_slot(obj, name),
 * looked up once by a caller that sets the same attribute many times) or, when that is NULL, by setattr. */
static inline int set_int_at(PyObject *obj, PyObject *name, PyObject **slot, PyObject **cache, int64_t value)
{
    PyObject *n = reused_int(cache, value, slot);
    if (n == NULL)
    {
        return -1;
    }
    if (slot == NULL)
    {
        const int set = PyObject_SetAttr(obj, name, n);
        Py_DECREF(n);
        return set;
    }
    Py_XSETREF(*slot, n);
    return 0;
}

static inline int set_member_int(PyObject *obj, PyObject *name, PyObject **cache, int64_t value)
{
    return set_int_at(obj, name, member_slot(obj, name), cache, value);
}

/* Each part readies its types and adds them and its functions to the module: 0, or -1 with an exception set. */
int amd_fastpath_add_offers(PyObject *module);
int amd_fastpath_add_polls(PyObject *module);

#endif
