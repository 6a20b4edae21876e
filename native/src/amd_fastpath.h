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

/* __next__ of such an awaitable, for drivers that do not use am_send: finish at once with the value. */
static inline PyObject *next_ready(PyObject **ready, const char *misuse)
{
    PyObject *value = NULL;
    if (send_ready(ready, misuse, &value) == PYGEN_ERROR)
    {
        return NULL;
    }
    PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, value);
    Py_DECREF(value);
    if (stop != NULL)
    {
        PyErr_SetObject(PyExc_StopIteration, stop);
        Py_DECREF(stop);
    }
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
