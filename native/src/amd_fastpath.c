/* driver.concurrent.logbuffer._fastpath: the client's per-message hot paths as a CPython extension.
 *
 * Everything else in native/ is reached through cffi, whose call costs more than a Python function call:
 * one offer through cffi spent more time crossing into C than appending, and a poll paid a Python loop per
 * fragment. These functions are called straight from Python (METH_FASTCALL) and, for poll, call the
 * fragment handler from C. They use the same memory-ordering rules as amd_term.c and amd_publication.c
 * (native/README.md): an acquire load of each frame length before its body is read. The only module that
 * imports this one is driver/concurrent/logbuffer/fastpath.py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "amd_publication.h"
#include "amd_term.h"

#define ALIGN_FRAME(length) (((int64_t)(length) + (AMD_FRAME_ALIGNMENT - 1)) & ~(int64_t)(AMD_FRAME_ALIGNMENT - 1))
#define OFFER_CLOSED (-4)
#define UNFRAGMENTED 0xC0 /* BEGIN | END */
/* For the bodies shared by the shared and exclusive entry points: inlined into each, the native offer they are
 * given is a direct call (left to itself GCC kept offer_many_with out of line, calling through the pointer). */
#define OFFER_INLINE static inline __attribute__((always_inline))

static PyObject *offset_name; /* "offset", interned */
/* BufferClaim's slots, interned */
static PyObject *claim_buffer_name, *claim_offset_name, *claim_length_name, *claim_address_name;

static inline int32_t frame_length_acquire(const uint8_t *term, int64_t offset)
{
    return __atomic_load_n((const int32_t *)(term + offset), __ATOMIC_ACQUIRE);
}

static inline int is_padding(const uint8_t *term, int64_t offset)
{
    return __atomic_load_n((const uint16_t *)(term + offset + AMD_TYPE_OFFSET), __ATOMIC_RELAXED) == AMD_HDR_TYPE_PAD;
}

/* The walk of poll, scan and messages (TermReader.read): from *offset, stepping over padding, to the next
 * committed frame (acquire load of its length) whose header is inside the term. Returns its length with
 * *offset at it, or 0 where the walk ends (nothing committed there, or the end of the term). */
static inline int32_t next_data_frame(const uint8_t *term, int64_t *offset, int64_t last_header)
{
    while (*offset <= last_header)
    {
        const int32_t frame_length = frame_length_acquire(term, *offset);
        if (frame_length <= 0)
        {
            return 0;
        }
        if (!is_padding(term, *offset))
        {
            return frame_length;
        }
        *offset += ALIGN_FRAME(frame_length);
    }
    return 0;
}

/* The native offer of a shared or an exclusive publication (native/include/amd_publication.h). */
typedef int64_t (*offer_fn)(void *publication, const uint8_t *src, int32_t length, int64_t reserved_value);

static int64_t shared_offer(void *publication, const uint8_t *src, int32_t length, int64_t reserved_value)
{
    return amd_publication_offer((const amd_publication_t *)publication, src, length, reserved_value);
}

static int64_t exclusive_offer(void *publication, const uint8_t *src, int32_t length, int64_t reserved_value)
{
    return amd_exclusive_publication_offer((amd_exclusive_publication_t *)publication, src, length, reserved_value);
}

/* One message: bytes without a copy of their object, any other contiguous buffer through the buffer protocol. */
OFFER_INLINE int64_t offer_one(offer_fn fn, void *p, PyObject *data, int64_t reserved_value, int *error)
{
    if (PyBytes_CheckExact(data))
    {
        const Py_ssize_t length = PyBytes_GET_SIZE(data);
        if (length > INT32_MAX)
        {
            return AMD_OFFER_MESSAGE_TOO_LONG;
        }
        return fn(p, (const uint8_t *)PyBytes_AS_STRING(data), (int32_t)length, reserved_value);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
    {
        *error = 1;
        return 0;
    }
    const int64_t result = view.len > INT32_MAX
        ? AMD_OFFER_MESSAGE_TOO_LONG
        : fn(p, (const uint8_t *)view.buf, (int32_t)view.len, reserved_value);
    PyBuffer_Release(&view);
    return result;
}

/* on_error(code, data) for an offer that failed with a code below MAX_POSITION_EXCEEDED: its result or NULL. */
static inline PyObject *call_on_error(PyObject *on_error, int64_t result, PyObject *data)
{
    PyObject *code = PyLong_FromLongLong(result);
    if (code == NULL)
    {
        return NULL;
    }
    PyObject *call_args[2] = {code, data};
    PyObject *value = PyObject_Vectorcall(on_error, call_args, 2, NULL);
    Py_DECREF(code);
    return value;
}

/* __await__ (and __iter__, __aiter__) of Done and MessageStream: the object itself. */
static PyObject *same_object(PyObject *self)
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

/* Done: an awaitable that is already finished with a value (the position of an offer_async that went at
 * once), so that ``await`` costs no coroutine. Awaiting it a second time is an error, as for a coroutine. */
typedef struct
{
    PyObject_HEAD
    PyObject *value;
} Done;

static void done_dealloc(Done *self)
{
    Py_XDECREF(self->value);
    PyObject_Free(self);
}

#define DONE_REUSED "cannot reuse an already awaited offer"

static PySendResult done_send(Done *self, PyObject *arg, PyObject **result)
{
    (void)arg;
    return send_ready(&self->value, DONE_REUSED, result);
}

static PyObject *done_iternext(Done *self)
{
    return next_ready(&self->value, DONE_REUSED);
}

static PyAsyncMethods done_async = {
    .am_await = same_object,
    .am_send = (sendfunc)done_send,
};

static PyTypeObject DoneType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "driver.concurrent.logbuffer._fastpath.Done",
    .tp_basicsize = sizeof(Done),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An awaitable already finished with a value.",
    .tp_dealloc = (destructor)done_dealloc,
    .tp_as_async = &done_async,
    .tp_iter = same_object,
    .tp_iternext = (iternextfunc)done_iternext,
};

/* offer_async(publication_address, closed_address, on_error, wait, data, **kwargs) -> awaitable position.
 * The offer once, as offer: when it goes, a Done holding the position; otherwise (any code, closed included)
 * wait(data, **kwargs), the caller's coroutine that waits out back pressure and raises on a closed publication. */

/* Where the attribute `name` of obj lives when its type keeps it in a __slots__ member: written straight there,
 * as the member's own setter would, instead of a setattr each time (for header.offset, a fifth of a polled
 * fragment's cost). NULL when it lives elsewhere (a subclass's property, say): then setattr. */
static PyObject **member_slot(PyObject *obj, PyObject *name)
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
static int set_member(PyObject *obj, PyObject *name, PyObject *value)
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

/* Offers: one publication's offer, offer_many, offer_async and try_claim as the methods of one object. Bound
 * to it they are builtin methods, which CPython's interpreter calls straight (no functools.partial between,
 * and the publication's addresses are read from the object, not converted from ints at each call). */
typedef struct
{
    PyObject_HEAD
    void *publication;     /* an amd_publication_t, or an amd_exclusive_publication_t for ExclusiveOffers */
    const int32_t *closed; /* nonzero once the publication is closed: every later offer returns CLOSED */
    PyObject *owner;       /* keeps the memory of both alive */
    PyObject *on_error;    /* on_error(code, data) for MESSAGE_TOO_LONG and TERM_ID_MISMATCH */
    PyObject *wait;        /* wait(data, **kwargs): offer_async's coroutine when the offer did not go at once */
    PyObject *terms;       /* the three term buffers, for the BufferClaim of a try_claim */
    PyObject *position;    /* the int the last offer returned, rewritten by the next one (reused_int) */
    Done *done;            /* the Done the last offer_async returned, reused the same way */
    PyObject *claim_ints[3]; /* the frame offset, length and address last set in a BufferClaim (reused_int) */
} Offers;

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

/* obj.name = an int of value (>= 0), reusing *cache's int (reused_int): into `slot` (member_slot(obj, name),
 * looked up once by a caller that sets the same attribute many times) or, when that is NULL, by setattr. */
static int set_int_at(PyObject *obj, PyObject *name, PyObject **slot, PyObject **cache, int64_t value)
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

static int set_member_int(PyObject *obj, PyObject *name, PyObject **cache, int64_t value)
{
    return set_int_at(obj, name, member_slot(obj, name), cache, value);
}

static PyObject *position_result(Offers *self, int64_t value)
{
    return reused_int(&self->position, value, NULL);
}

static int offers_init(Offers *self, PyObject *args, PyObject *kwargs)
{
    PyObject *owner, *publication, *closed, *on_error, *wait, *terms;
    static char *keywords[] = {"owner", "publication", "closed", "on_error", "wait", "terms", NULL};
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "OOOOOO!", keywords, &owner, &publication, &closed, &on_error, &wait, &PyTuple_Type, &terms))
    {
        return -1;
    }
    if (PyTuple_GET_SIZE(terms) != 3)
    {
        PyErr_SetString(PyExc_ValueError, "Offers needs the three term buffers");
        return -1;
    }
    void *p = PyLong_AsVoidPtr(publication);
    const int32_t *c = (const int32_t *)PyLong_AsVoidPtr(closed);
    if (p == NULL || c == NULL)
    {
        if (!PyErr_Occurred())
        {
            PyErr_SetString(PyExc_ValueError, "Offers needs the publication's and the closed flag's addresses");
        }
        return -1;
    }
    self->publication = p;
    self->closed = c;
    Py_INCREF(owner);
    Py_XSETREF(self->owner, owner);
    Py_INCREF(on_error);
    Py_XSETREF(self->on_error, on_error);
    Py_INCREF(wait);
    Py_XSETREF(self->wait, wait);
    Py_INCREF(terms);
    Py_XSETREF(self->terms, terms);
    return 0;
}

static int offers_traverse(Offers *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    Py_VISIT(self->on_error); /* the publication's bound method: a cycle back to this object */
    Py_VISIT(self->wait);
    Py_VISIT(self->terms);
    return 0;
}

static int offers_clear(Offers *self)
{
    Py_CLEAR(self->owner);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->wait);
    Py_CLEAR(self->terms);
    Py_CLEAR(self->position);
    Py_CLEAR(self->done);
    for (int i = 0; i < 3; ++i)
    {
        Py_CLEAR(self->claim_ints[i]);
    }
    return 0;
}

static void offers_dealloc(Offers *self)
{
    PyObject_GC_UnTrack(self);
    offers_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* offer(data, reserved_value=0) -> position or code; codes below MAX_POSITION_EXCEEDED go to on_error. */
OFFER_INLINE PyObject *offer_with(offer_fn fn, Offers *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2)
    {
        PyErr_SetString(PyExc_TypeError, "offer(data, reserved_value=0)");
        return NULL;
    }
    if (*self->closed != 0)
    {
        return PyLong_FromLong(OFFER_CLOSED);
    }
    int64_t reserved_value = 0;
    if (nargs == 2)
    {
        reserved_value = PyLong_AsLongLong(args[1]);
        if (reserved_value == -1 && PyErr_Occurred())
        {
            return NULL;
        }
    }
    int error = 0;
    const int64_t result = offer_one(fn, self->publication, args[0], reserved_value, &error);
    if (error)
    {
        return NULL;
    }
    if (result < AMD_OFFER_MAX_POSITION_EXCEEDED)
    {
        return call_on_error(self->on_error, result, args[0]);
    }
    return result > 0 ? position_result(self, result) : PyLong_FromLongLong(result);
}

/* Up to BLOCK messages of a shared publication's offer_many go with one reservation (amd_publication_offer_block). */
#define BLOCK 64

/* How many of items[0..count) from the front are bytes that fit one frame each (a block's messages), at most
 * BLOCK; their addresses and lengths go into sources and lengths. */
static inline int32_t gather_block(
    PyObject *const *items, Py_ssize_t count, int32_t max_payload_length, const uint8_t **sources, int32_t *lengths)
{
    int32_t n = 0;
    while (n < count && n < BLOCK && PyBytes_CheckExact(items[n]) && PyBytes_GET_SIZE(items[n]) <= max_payload_length)
    {
        sources[n] = (const uint8_t *)PyBytes_AS_STRING(items[n]);
        lengths[n] = (int32_t)PyBytes_GET_SIZE(items[n]);
        ++n;
    }
    return n;
}

/* offer_many(messages) -> count or code. Offers the messages of a list or tuple in order, retrying
 * ADMIN_ACTION (a rotation) at once; stops at the first that does not go. Returns how many went, or, when the
 * first did not, its code (<= 0). A shared publication (`blocks`) offers runs of bytes messages that fit a
 * frame as blocks with one reservation each; anything else goes one offer at a time. */
OFFER_INLINE PyObject *offer_many_with(offer_fn fn, int blocks, Offers *self, PyObject *messages)
{
    if (*self->closed != 0)
    {
        return PyLong_FromLong(OFFER_CLOSED);
    }
    PyObject *seq = PySequence_Fast(messages, "offer_many takes a sequence of messages");
    if (seq == NULL)
    {
        return NULL;
    }
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t sent = 0;
    int64_t result = 0;
    int error = 0;
    int retried = 0; /* one immediate retry of ADMIN_ACTION per message, as for a single offer */
    while (sent < count)
    {
        const uint8_t *sources[BLOCK];
        int32_t lengths[BLOCK];
        const amd_publication_t *p = (const amd_publication_t *)self->publication;
        const int32_t n =
            blocks ? gather_block(items + sent, count - sent, p->max_payload_length, sources, lengths) : 0;
        int32_t went = 1;
        if (n > 1)
        {
            result = amd_publication_offer_block(p, sources, lengths, n, &went);
        }
        else
        {
            result = offer_one(fn, self->publication, items[sent], 0, &error);
            if (error)
            {
                Py_DECREF(seq);
                return NULL;
            }
            went = result > 0;
        }
        if (went > 0)
        {
            sent += went;
            retried = 0;
        }
        else if (result == AMD_OFFER_ADMIN_ACTION && !retried)
        {
            retried = 1;
        }
        else
        {
            break;
        }
    }
    PyObject *value = sent == 0 && result < AMD_OFFER_MAX_POSITION_EXCEEDED
        ? call_on_error(self->on_error, result, items[0])
        : PyLong_FromLongLong(sent > 0 ? (int64_t)sent : result);
    Py_DECREF(seq);
    return value;
}

/* A Done holding the position of an offer_async that went: the one returned last when the caller has dropped
 * it (its value was taken by the await), else a new one. */
static PyObject *done_result(Offers *self, int64_t position)
{
    Done *done = self->done;
    if (done == NULL || Py_REFCNT(done) != 1 || done->value != NULL)
    {
        done = PyObject_New(Done, &DoneType);
        if (done == NULL)
        {
            return NULL;
        }
        done->value = NULL;
        Py_XSETREF(self->done, done);
    }
    done->value = position_result(self, position);
    if (done->value == NULL)
    {
        return NULL;
    }
    Py_INCREF(done);
    return (PyObject *)done;
}

/* offer_async(data, **kwargs) -> awaitable position. The offer once, as offer: when it goes, a Done holding
 * the position; otherwise (any code, closed included) wait(data, **kwargs), the caller's coroutine that waits
 * out back pressure and raises on a closed publication. */
OFFER_INLINE PyObject *offer_async_with(
    offer_fn fn, Offers *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs != 1)
    {
        PyErr_SetString(PyExc_TypeError, "offer_async(data, **kwargs)");
        return NULL;
    }
    if (*self->closed == 0)
    {
        int error = 0;
        const int64_t result = offer_one(fn, self->publication, args[0], 0, &error);
        if (error)
        {
            return NULL;
        }
        if (result > 0)
        {
            return done_result(self, result);
        }
        if (result < AMD_OFFER_MAX_POSITION_EXCEEDED)
        {
            PyObject *value = call_on_error(self->on_error, result, args[0]);
            if (value == NULL)
            {
                return NULL;
            }
            Py_DECREF(value);
        }
    }
    /* args[0] is the data, followed by the keyword values named by kwnames */
    return PyObject_Vectorcall(self->wait, args, 1, kwnames);
}

/* The native claim of a shared or an exclusive publication (native/include/amd_publication.h). */
typedef int64_t (*claim_fn)(void *publication, int32_t length, int32_t *frame_offset, int32_t *partition);

static int64_t shared_claim(void *publication, int32_t length, int32_t *frame_offset, int32_t *partition)
{
    return amd_publication_claim((const amd_publication_t *)publication, length, frame_offset, partition);
}

static int64_t exclusive_claim(void *publication, int32_t length, int32_t *frame_offset, int32_t *partition)
{
    return amd_exclusive_publication_claim((amd_exclusive_publication_t *)publication, length, frame_offset, partition);
}

/* try_claim(length, buffer_claim) -> new position or code. On success buffer_claim holds the frame (its
 * _buffer, _frame_offset and _frame_length set, as BufferClaim.wrap would) for the caller to fill and commit.
 * A negative length or one over the maximum payload raises ValueError, as the Python path does. */
OFFER_INLINE PyObject *try_claim_with(claim_fn fn, Offers *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
    {
        PyErr_SetString(PyExc_TypeError, "try_claim(length, buffer_claim)");
        return NULL;
    }
    const long length = PyLong_AsLong(args[0]);
    if (length == -1 && PyErr_Occurred())
    {
        return NULL;
    }
    const int32_t max_payload_length = ((const amd_publication_t *)self->publication)->max_payload_length;
    if (length < 0 || length > max_payload_length)
    {
        if (length < 0)
        {
            PyErr_Format(PyExc_ValueError, "cannot claim a negative length, length=%ld", length);
        }
        else
        {
            PyErr_Format(PyExc_ValueError, "claim of %ld bytes exceeds the max payload length %d", length,
                         (int)max_payload_length);
        }
        return NULL;
    }
    if (*self->closed != 0)
    {
        return PyLong_FromLong(OFFER_CLOSED);
    }
    int32_t frame_offset = 0, partition = 0;
    const int64_t result = fn(self->publication, (int32_t)length, &frame_offset, &partition);
    if (result < AMD_OFFER_MAX_POSITION_EXCEEDED)
    {
        return call_on_error(self->on_error, result, Py_None);
    }
    if (result <= 0)
    {
        return PyLong_FromLongLong(result);
    }
    /* As BufferClaim.wrap, plus the frame's address, which lets commit() store its length with one C call. */
    PyObject *claim = args[1];
    PyObject *term = PyTuple_GET_ITEM(self->terms, partition);
    const amd_publication_t *p = (const amd_publication_t *)self->publication;
    const uint8_t *frame = p->log + (int64_t)partition * p->term_length + frame_offset;
    Py_INCREF(term);
    if (set_member(claim, claim_buffer_name, term) < 0 ||
        set_member_int(claim, claim_offset_name, &self->claim_ints[0], frame_offset) < 0 ||
        set_member_int(claim, claim_length_name, &self->claim_ints[1], length + AMD_DATA_HEADER_LENGTH) < 0 ||
        set_member_int(claim, claim_address_name, &self->claim_ints[2], (int64_t)(uintptr_t)frame) < 0)
    {
        return NULL; /* a frame claimed but not handed over is unblocked by the driver after its timeout */
    }
    return position_result(self, result);
}

/* The methods of Offers (shared publication) and ExclusiveOffers: the same bodies, each inlined with its
 * publication's native offer so that the offer is a direct call. */
#define OFFERS_METHODS(prefix, fn, claim, blocks)                                                                      \
    static PyObject *prefix##_offer(Offers *self, PyObject *const *args, Py_ssize_t nargs)                             \
    {                                                                                                                  \
        return offer_with(fn, self, args, nargs);                                                                      \
    }                                                                                                                  \
    static PyObject *prefix##_offer_many(Offers *self, PyObject *messages)                                             \
    {                                                                                                                  \
        return offer_many_with(fn, blocks, self, messages);                                                            \
    }                                                                                                                  \
    static PyObject *prefix##_offer_async(Offers *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)         \
    {                                                                                                                  \
        return offer_async_with(fn, self, args, nargs, kw);                                                            \
    }                                                                                                                  \
    static PyObject *prefix##_try_claim(Offers *self, PyObject *const *args, Py_ssize_t nargs)                         \
    {                                                                                                                  \
        return try_claim_with(claim, self, args, nargs);                                                               \
    }                                                                                                                  \
    static PyMethodDef prefix##_methods[] = {                                                                          \
        {"offer", (PyCFunction)(void (*)(void))prefix##_offer, METH_FASTCALL,                                          \
         "offer(data, reserved_value=0) -> new position, or a code (<= 0)."},                                          \
        {"offer_many", (PyCFunction)prefix##_offer_many, METH_O,                                                       \
         "offer_many(messages) -> how many went, or the first one's code (<= 0)."},                                    \
        {"offer_async", (PyCFunction)(void (*)(void))prefix##_offer_async, METH_FASTCALL | METH_KEYWORDS,              \
         "offer_async(data, **kwargs) -> an awaitable position: done at once, or the caller's wait."},                 \
        {"try_claim", (PyCFunction)(void (*)(void))prefix##_try_claim, METH_FASTCALL,                                  \
         "try_claim(length, buffer_claim) -> new position, or a code (<= 0)."},                                        \
        {NULL, NULL, 0, NULL}};

OFFERS_METHODS(offers, shared_offer, shared_claim, 1)
OFFERS_METHODS(exclusive_offers, exclusive_offer, exclusive_claim, 0)

#define OFFERS_TYPE(type_name, name, methods_table, doc)                                                               \
    static PyTypeObject type_name = {                                                                                  \
        PyVarObject_HEAD_INIT(NULL, 0)                                                                                 \
        .tp_name = "driver.concurrent.logbuffer._fastpath." name,                                                      \
        .tp_basicsize = sizeof(Offers),                                                                                \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,                                                           \
        .tp_doc = doc,                                                                                                 \
        .tp_new = PyType_GenericNew,                                                                                   \
        .tp_init = (initproc)offers_init,                                                                              \
        .tp_traverse = (traverseproc)offers_traverse,                                                                  \
        .tp_clear = (inquiry)offers_clear,                                                                             \
        .tp_dealloc = (destructor)offers_dealloc,                                                                      \
        .tp_methods = methods_table,                                                                                   \
    };

OFFERS_TYPE(OffersType, "Offers", offers_methods,
            "Offers(owner, publication, closed, on_error, wait, terms): a shared publication's offers.")
OFFERS_TYPE(ExclusiveOffersType, "ExclusiveOffers", exclusive_offers_methods,
            "ExclusiveOffers(owner, publication, closed, on_error, wait, terms): an exclusive publication's offers.")

/* The ints poll hands its handler, reused while the handler keeps none of them (reused_int). */
static PyObject *poll_payload_offset, *poll_payload_length, *poll_frame_offset;

/* poll(handler, term_buffer, term_address, capacity, offset, fragment_limit, header, error_handler)
 *   -> (fragments read, new term offset)
 * As TermReader.read (docs/logbuffer.md section 6): from ``offset`` frames are walked while their length
 * (acquire) is positive and inside the term; padding is stepped over; each DATA frame goes to
 * handler(term_buffer, payload offset, payload length, header) with header.offset set to the frame's offset.
 * If the handler raises: with an error_handler (not None) it gets the exception and the frame counts as
 * consumed; without one the exception propagates (the caller then consumes nothing). */
static PyObject *fast_poll(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 8)
    {
        PyErr_SetString(
            PyExc_TypeError, "poll(handler, term_buffer, term_address, capacity, offset, limit, header, error_handler)");
        return NULL;
    }
    PyObject *handler = args[0];
    PyObject *term_buffer = args[1];
    const uint8_t *term = (const uint8_t *)PyLong_AsVoidPtr(args[2]);
    const long long capacity = PyLong_AsLongLong(args[3]);
    const long long start = PyLong_AsLongLong(args[4]);
    const long long limit = PyLong_AsLongLong(args[5]);
    PyObject *header = args[6];
    PyObject *error_handler = args[7];
    if (PyErr_Occurred())
    {
        return NULL;
    }
    PyObject **slot = member_slot(header, offset_name);
    int64_t offset = start;
    long long fragments = 0;
    const int64_t last_header = (int64_t)capacity - AMD_DATA_HEADER_LENGTH;
    while (fragments < limit)
    {
        const int32_t frame_length = next_data_frame(term, &offset, last_header);
        if (frame_length <= 0)
        {
            break;
        }
        const int64_t frame_offset = offset;
        offset += ALIGN_FRAME(frame_length);
        PyObject *payload_offset = reused_int(&poll_payload_offset, frame_offset + AMD_DATA_HEADER_LENGTH, NULL);
        PyObject *payload_length = reused_int(&poll_payload_length, frame_length - AMD_DATA_HEADER_LENGTH, NULL);
        if (payload_offset == NULL || payload_length == NULL ||
            set_int_at(header, offset_name, slot, &poll_frame_offset, frame_offset) < 0)
        {
            Py_XDECREF(payload_offset);
            Py_XDECREF(payload_length);
            return NULL;
        }
        PyObject *call_args[4] = {term_buffer, payload_offset, payload_length, header};
        PyObject *value = PyObject_Vectorcall(handler, call_args, 4, NULL);
        Py_DECREF(payload_offset);
        Py_DECREF(payload_length);
        if (value == NULL)
        {
            if (error_handler == Py_None || !PyErr_ExceptionMatches(PyExc_Exception))
            {
                return NULL;
            }
            PyObject *type, *exc, *traceback;
            PyErr_Fetch(&type, &exc, &traceback);
            PyErr_NormalizeException(&type, &exc, &traceback);
            if (traceback != NULL)
            {
                PyException_SetTraceback(exc, traceback);
            }
            Py_XDECREF(type);
            Py_XDECREF(traceback);
            PyObject *handled = PyObject_CallOneArg(error_handler, exc);
            Py_DECREF(exc);
            if (handled == NULL)
            {
                return NULL;
            }
            Py_DECREF(handled);
            return Py_BuildValue("(LL)", fragments, (long long)offset);
        }
        Py_DECREF(value);
        ++fragments;
    }
    if (offset > capacity)
    {
        offset = capacity; /* only a corrupt length can overrun; never report an offset past the term */
    }
    return Py_BuildValue("(LL)", fragments, (long long)offset);
}

/* scan(term_address, capacity, offset, offsets, lengths, flags) -> (fragments, new term offset)
 * The batch poll's walk: as poll, but each DATA frame's payload offset, payload length and flags byte go into
 * the caller's int32, int32 and uint8 arrays (as many as the shortest holds) instead of to a handler. */
static PyObject *fast_scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6)
    {
        PyErr_SetString(PyExc_TypeError, "scan(term_address, capacity, offset, offsets, lengths, flags)");
        return NULL;
    }
    const uint8_t *term = (const uint8_t *)PyLong_AsVoidPtr(args[0]);
    const long long capacity = PyLong_AsLongLong(args[1]);
    const long long start = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred())
    {
        return NULL;
    }
    Py_buffer offsets, lengths, flags;
    if (PyObject_GetBuffer(args[3], &offsets, PyBUF_WRITABLE) < 0)
    {
        return NULL;
    }
    if (PyObject_GetBuffer(args[4], &lengths, PyBUF_WRITABLE) < 0)
    {
        PyBuffer_Release(&offsets);
        return NULL;
    }
    if (PyObject_GetBuffer(args[5], &flags, PyBUF_WRITABLE) < 0)
    {
        PyBuffer_Release(&offsets);
        PyBuffer_Release(&lengths);
        return NULL;
    }
    Py_ssize_t max = offsets.len / 4;
    if (lengths.len / 4 < max)
    {
        max = lengths.len / 4;
    }
    if (flags.len < max)
    {
        max = flags.len;
    }
    int32_t *out_offsets = (int32_t *)offsets.buf;
    int32_t *out_lengths = (int32_t *)lengths.buf;
    uint8_t *out_flags = (uint8_t *)flags.buf;
    int64_t offset = start;
    Py_ssize_t count = 0;
    const int64_t last_header = (int64_t)capacity - AMD_DATA_HEADER_LENGTH;
    while (count < max)
    {
        const int32_t frame_length = next_data_frame(term, &offset, last_header);
        if (frame_length <= 0)
        {
            break;
        }
        out_offsets[count] = (int32_t)(offset + AMD_DATA_HEADER_LENGTH);
        out_lengths[count] = frame_length - AMD_DATA_HEADER_LENGTH;
        out_flags[count] = term[offset + AMD_FLAGS_OFFSET];
        offset += ALIGN_FRAME(frame_length);
        ++count;
    }
    if (offset > capacity)
    {
        offset = capacity;
    }
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&flags);
    return Py_BuildValue("(nL)", count, (long long)offset);
}

/* The last message left in `spare` (the caller's messages of an earlier poll, which it has let go), rewritten
 * as a new message: possible when nothing but `spare` refers to it, to its bytes (of the same length) or to its
 * position (an int of as many digits), so that nothing can observe the change; that saves the four objects a
 * message otherwise allocates. A new reference, or NULL (no error) when it cannot be rewritten. Either way
 * *spare_left counts it as taken (the caller drops what was taken from spare at the end). */
static PyObject *recycled_message(
    PyObject *spare, Py_ssize_t *spare_left, PyTypeObject *type, const uint8_t *payload, Py_ssize_t length,
    PyObject *session_id, PyObject *stream_id, int64_t position, int64_t reserved_value)
{
#if REUSE_INTS
    if (spare == NULL || *spare_left == 0)
    {
        return NULL;
    }
    PyObject *message = PyList_GET_ITEM(spare, --*spare_left);
    if (!Py_IS_TYPE(message, type) || Py_REFCNT(message) != 1 || Py_SIZE(message) != 5)
    {
        return NULL;
    }
    PyObject *data = PyTuple_GET_ITEM(message, 0);
    PyObject *old_position = PyTuple_GET_ITEM(message, 3);
    if (!PyBytes_CheckExact(data) || Py_REFCNT(data) != 1 || PyBytes_GET_SIZE(data) != length ||
        !PyLong_CheckExact(old_position) || Py_REFCNT(old_position) != 1 ||
        int_digit_count((PyLongObject *)old_position) != digits_needed((uint64_t)position) || position <= 256)
    {
        return NULL;
    }
    PyObject *reserved = PyLong_FromLongLong(reserved_value);
    if (reserved == NULL)
    {
        return NULL;
    }
    memcpy(PyBytes_AS_STRING(data), payload, (size_t)length);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    ((PyBytesObject *)data)->ob_shash = -1; /* the hash of the old contents, if one was taken */
#pragma GCC diagnostic pop
    int_write((PyLongObject *)old_position, (uint64_t)position);
    Py_INCREF(session_id);
    Py_SETREF(((PyTupleObject *)message)->ob_item[1], session_id);
    Py_INCREF(stream_id);
    Py_SETREF(((PyTupleObject *)message)->ob_item[2], stream_id);
    Py_SETREF(((PyTupleObject *)message)->ob_item[4], reserved);
    Py_INCREF(message);
    return message;
#else
    (void)spare, (void)spare_left, (void)type, (void)payload, (void)length, (void)session_id, (void)stream_id;
    (void)position, (void)reserved_value;
    return NULL;
#endif
}

/* A new message_type(data, session_id, stream_id, position, reserved_value), filled as tuple.__new__ would. */
static PyObject *new_message(
    PyTypeObject *type, const uint8_t *payload, Py_ssize_t length, PyObject *session_id, PyObject *stream_id,
    int64_t position, int64_t reserved_value)
{
    PyObject *data = PyBytes_FromStringAndSize((const char *)payload, length);
    PyObject *position_obj = PyLong_FromLongLong(position);
    PyObject *reserved = PyLong_FromLongLong(reserved_value);
    PyObject *message = type->tp_alloc(type, 5);
    if (data == NULL || position_obj == NULL || reserved == NULL || message == NULL)
    {
        Py_XDECREF(data);
        Py_XDECREF(position_obj);
        Py_XDECREF(reserved);
        Py_XDECREF(message);
        return NULL;
    }
    Py_INCREF(session_id);
    Py_INCREF(stream_id);
    PyTuple_SET_ITEM(message, 0, data);
    PyTuple_SET_ITEM(message, 1, session_id);
    PyTuple_SET_ITEM(message, 2, stream_id);
    PyTuple_SET_ITEM(message, 3, position_obj);
    PyTuple_SET_ITEM(message, 4, reserved);
    return message;
}

/* messages(message_type, term_address, capacity, offset, limit, term_begin_position, session_id, stream_id, out,
 *          spare=None) -> (messages, new term offset, stopped at a fragment)
 * The asyncio iterator's walk (driver/client/aio.py): as poll, but each whole DATA frame (BEGIN and END set)
 * becomes message_type(data bytes, session_id, stream_id, position after the frame, reserved value) appended to
 * the list ``out``, with no Python call. message_type is a tuple subclass without a __dict__ (a NamedTuple);
 * it is filled as tuple.__new__ would. A frame of a fragmented message ends the walk before it (third value 1)
 * so that the caller's assembler takes it. ``spare``, a list of messages of earlier polls that the caller has
 * let go, is taken from the end and rewritten where nothing else holds them (recycled_message); what was
 * taken is removed from it. */
static PyObject *fast_messages(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 9 || nargs > 10)
    {
        PyErr_SetString(PyExc_TypeError,
                        "messages(message_type, term_address, capacity, offset, limit, term_begin_position, "
                        "session_id, stream_id, out, spare=None)");
        return NULL;
    }
    if (!PyType_Check(args[0]) || !PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type) ||
        ((PyTypeObject *)args[0])->tp_dictoffset != 0)
    {
        PyErr_SetString(PyExc_TypeError, "messages: message_type must be a tuple subclass without a __dict__");
        return NULL;
    }
    PyTypeObject *message_type = (PyTypeObject *)args[0];
    const uint8_t *term = (const uint8_t *)PyLong_AsVoidPtr(args[1]);
    const long long capacity = PyLong_AsLongLong(args[2]);
    const long long start = PyLong_AsLongLong(args[3]);
    const long long limit = PyLong_AsLongLong(args[4]);
    const long long term_begin = PyLong_AsLongLong(args[5]);
    PyObject *session_id = args[6];
    PyObject *stream_id = args[7];
    PyObject *out = args[8];
    if (PyErr_Occurred())
    {
        return NULL;
    }
    PyObject *spare = nargs == 10 && args[9] != Py_None ? args[9] : NULL;
    if (!PyList_Check(out) || (spare != NULL && !PyList_Check(spare)))
    {
        PyErr_SetString(PyExc_TypeError, "messages: out and spare must be lists");
        return NULL;
    }
    Py_ssize_t spare_left = spare != NULL ? PyList_GET_SIZE(spare) : 0;
    const Py_ssize_t spare_count = spare_left;
    PyObject *result = NULL;
    int64_t offset = start;
    long long count = 0;
    int fragment = 0;
    const int64_t last_header = (int64_t)capacity - AMD_DATA_HEADER_LENGTH;
    while (count < limit)
    {
        const int32_t frame_length = next_data_frame(term, &offset, last_header);
        if (frame_length <= 0)
        {
            break;
        }
        const uint8_t flags = term[offset + AMD_FLAGS_OFFSET];
        if ((flags & UNFRAGMENTED) != UNFRAGMENTED)
        {
            fragment = 1;
            break;
        }
        const int64_t next = offset + ALIGN_FRAME(frame_length);
        int64_t reserved_value;
        memcpy(&reserved_value, term + offset + AMD_RESERVED_VALUE_OFFSET, sizeof reserved_value);
        const uint8_t *payload = term + offset + AMD_DATA_HEADER_LENGTH;
        const Py_ssize_t length = frame_length - AMD_DATA_HEADER_LENGTH;
        const int64_t position = term_begin + (next > capacity ? capacity : next);
        PyObject *message = recycled_message(
            spare, &spare_left, message_type, payload, length, session_id, stream_id, position, reserved_value);
        if (message == NULL)
        {
            if (PyErr_Occurred())
            {
                goto done;
            }
            message = new_message(message_type, payload, length, session_id, stream_id, position, reserved_value);
            if (message == NULL)
            {
                goto done;
            }
        }
        const int appended = PyList_Append(out, message);
        Py_DECREF(message);
        if (appended < 0)
        {
            goto done;
        }
        offset = next;
        ++count;
    }
    if (offset > capacity)
    {
        offset = capacity;
    }
    result = Py_BuildValue("(LLi)", count, (long long)offset, fragment);
done:
    if (spare != NULL && spare_left < spare_count && PyList_SetSlice(spare, spare_left, spare_count, NULL) < 0)
    {
        Py_CLEAR(result);
    }
    return result;
}

/* MessageStream(items, refill): the asyncio message iterator's per-message step in C (driver/client/aio.py).
 * ``async for`` over it takes items[next] while there are any, with no Python frame: __anext__ returns the
 * stream itself as an awaitable that is already done (am_send hands the message straight back). When the list
 * is used up, __anext__ returns refill(), a Python coroutine that waits for more, refills ``items``, sets
 * ``next`` past what it returns and returns the first message (or raises StopAsyncIteration). */
typedef struct
{
    PyObject_HEAD
    PyObject *items; /* a list */
    PyObject *refill;
    PyObject *ready; /* the message the pending await returns */
    Py_ssize_t next;
} MessageStream;

static int stream_traverse(MessageStream *self, visitproc visit, void *arg)
{
    Py_VISIT(self->items);
    Py_VISIT(self->refill);
    Py_VISIT(self->ready);
    return 0;
}

static int stream_clear(MessageStream *self)
{
    Py_CLEAR(self->items);
    Py_CLEAR(self->refill);
    Py_CLEAR(self->ready);
    return 0;
}

static void stream_dealloc(MessageStream *self)
{
    PyObject_GC_UnTrack(self);
    stream_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int stream_init(MessageStream *self, PyObject *args, PyObject *kwargs)
{
    PyObject *items, *refill;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)
    {
        PyErr_SetString(PyExc_TypeError, "MessageStream(items, refill) takes no keywords");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O!O:MessageStream", &PyList_Type, &items, &refill))
    {
        return -1;
    }
    Py_INCREF(items);
    Py_INCREF(refill);
    Py_XSETREF(self->items, items);
    Py_XSETREF(self->refill, refill);
    Py_CLEAR(self->ready);
    self->next = PyList_GET_SIZE(items);
    return 0;
}

static PyObject *stream_anext(MessageStream *self)
{
    if (self->items != NULL && self->next < PyList_GET_SIZE(self->items))
    {
        PyObject *item = PyList_GET_ITEM(self->items, self->next);
        ++self->next;
        Py_INCREF(item);
        Py_XSETREF(self->ready, item);
        Py_INCREF(self);
        return (PyObject *)self;
    }
    if (self->refill == NULL)
    {
        PyErr_SetString(PyExc_RuntimeError, "MessageStream not initialised");
        return NULL;
    }
    return PyObject_CallNoArgs(self->refill);
}

#define STREAM_NOT_READY "MessageStream awaited without __anext__"

static PySendResult stream_send(MessageStream *self, PyObject *arg, PyObject **result)
{
    (void)arg;
    return send_ready(&self->ready, STREAM_NOT_READY, result);
}

static PyObject *stream_iternext(MessageStream *self)
{
    return next_ready(&self->ready, STREAM_NOT_READY);
}

static PyMemberDef stream_members[] = {
    {"next", T_PYSSIZET, offsetof(MessageStream, next), 0, "Index in items of the next message to hand over."},
    {NULL, 0, 0, 0, NULL}};

static PyAsyncMethods stream_async = {
    .am_await = same_object,
    .am_aiter = same_object,
    .am_anext = (unaryfunc)stream_anext,
    .am_send = (sendfunc)stream_send,
};

static PyTypeObject MessageStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "driver.concurrent.logbuffer._fastpath.MessageStream",
    .tp_basicsize = sizeof(MessageStream),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An async iterator over a list that a refill coroutine tops up.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)stream_init,
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_traverse = (traverseproc)stream_traverse,
    .tp_clear = (inquiry)stream_clear,
    .tp_as_async = &stream_async,
    .tp_iter = same_object,
    .tp_iternext = (iternextfunc)stream_iternext,
    .tp_members = stream_members,
};

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

/* put_int32_release(address, value): a release store of an int32 (BufferClaim.commit of a fast-path claim). */
static PyObject *fast_put_int32_release(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2)
    {
        PyErr_SetString(PyExc_TypeError, "put_int32_release(address, value)");
        return NULL;
    }
    int32_t *address = (int32_t *)PyLong_AsVoidPtr(args[0]);
    const long value = PyLong_AsLong(args[1]);
    if (address == NULL || (value == -1 && PyErr_Occurred()))
    {
        if (!PyErr_Occurred())
        {
            PyErr_SetString(PyExc_ValueError, "put_int32_release: no address");
        }
        return NULL;
    }
    __atomic_store_n(address, (int32_t)value, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"poll", (PyCFunction)(void (*)(void))fast_poll, METH_FASTCALL, "TermReader.read with the handler called from C."},
    {"scan", (PyCFunction)(void (*)(void))fast_scan, METH_FASTCALL, "A batch poll's walk into arrays."},
    {"put_int32_release", (PyCFunction)(void (*)(void))fast_put_int32_release, METH_FASTCALL,
     "A release store of an int32 at an address."},
    {"wait_for_change", (PyCFunction)(void (*)(void))fast_wait_for_change, METH_FASTCALL,
     "Wait, without the GIL, until an int64 changes, a stop flag is set or a timeout passes."},
    {"messages", (PyCFunction)(void (*)(void))fast_messages, METH_FASTCALL, "Whole messages as tuples, no Python call."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpath", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastpath(void)
{
    offset_name = PyUnicode_InternFromString("offset");
    claim_buffer_name = PyUnicode_InternFromString("_buffer");
    claim_offset_name = PyUnicode_InternFromString("_frame_offset");
    claim_length_name = PyUnicode_InternFromString("_frame_length");
    claim_address_name = PyUnicode_InternFromString("_address");
    if (offset_name == NULL || claim_buffer_name == NULL || claim_offset_name == NULL || claim_length_name == NULL ||
        claim_address_name == NULL)
    {
        return NULL;
    }
    if (PyType_Ready(&DoneType) < 0 || PyType_Ready(&MessageStreamType) < 0 || PyType_Ready(&OffersType) < 0
        || PyType_Ready(&ExclusiveOffersType) < 0)
    {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
    {
        return NULL;
    }
    PyTypeObject *types[] = {&MessageStreamType, &OffersType, &ExclusiveOffersType};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); ++i)
    {
        if (PyModule_AddType(m, types[i]) < 0)
        {
            Py_DECREF(m);
            return NULL;
        }
    }
    /* Whether results are rewritten in place (the CPython versions whose int layout is known) or allocated. */
    if (PyModule_AddIntConstant(m, "REUSES_INTS", REUSE_INTS) < 0)
    {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
